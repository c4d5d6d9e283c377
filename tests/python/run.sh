#!/bin/sh
# run.sh - the Python client's tests (client/python/tests), run by make test
# with Debian's python3 and python3-pytest against the lockd given.
# pytest's last line is its summary ("N passed in ..."); a run that passes
# fewer tests than expected fails, so a broken collection (pytest's exit 5,
# "no tests ran") or a lost test file cannot pass unnoticed.
#
# Usage: tests/python/run.sh LOCKD_BIN
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
LOCKD_BIN=${1:-$top/build/lockd}
export LOCKD_BIN
# Debian's interpreter, whatever python3 comes first on PATH (pyenv).
python=/usr/bin/python3
min_passed=135

cd "$top/client/python" || exit 1
out=$(mktemp)
# pytest's own temporary directories under one of this run's, not the
# shared /tmp/pytest-of-USER, whose old entries another run removes.
base=$(mktemp -d)
trap 'rm -rf "$out" "$base"' EXIT
# No cache directory and no bytecode left in the tree.
PYTHONDONTWRITEBYTECODE=1 timeout 600 "$python" -m pytest -q \
    -p no:cacheprovider --basetemp="$base/pytest" tests >"$out" 2>&1
status=$?
cat "$out"
passed=$(tail -n 1 "$out" | sed -n 's/^=* *\([0-9][0-9]*\) passed.*/\1/p')
if [ "$status" -eq 5 ]; then
	echo "python tests: pytest collected no tests (exit 5)"
	exit 1
elif [ "$status" -ne 0 ]; then
	exit "$status"
elif [ -z "$passed" ] || [ "$passed" -lt "$min_passed" ]; then
	echo "python tests: ${passed:-no} tests passed, expected at least $min_passed"
	exit 1
fi
