#!/bin/sh
# run.sh - the Go client's checks (client/go), run by make test against
# the lockd given: go vet, gofmt -l (must print nothing), and go test,
# whose FuzzParseReply runs its seeds.  Offline: the module has no
# dependency, and the toolchain is Debian's golang-go (no download, no
# proxy); the build cache lives in the build directory, beside LOCKD_BIN.
# Ends with "N passed, N failed", counting every test and subtest that go
# test -v reported.
#
# Usage: tests/go/run.sh LOCKD_BIN
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
LOCKD_BIN=${1:-$top/build/lockd}
export LOCKD_BIN
if ! command -v go >/dev/null 2>&1; then
	echo "go tests: no go (tools/deps.sh test installs golang-go)"
	echo "0 passed, 1 failed"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go_cache=$(cd "$(dirname "$LOCKD_BIN")" && pwd)/go
mkdir -p "$go_cache" || exit 1
. "$top/tools/go-env.sh"
export GOTMPDIR="$tmp"
cd "$top/client/go" || exit 1
passed=0
failed=0

if go vet ./... >"$tmp/vet" 2>&1; then
	echo "ok: go vet"
	passed=$((passed + 1))
else
	cat "$tmp/vet"
	echo "FAILED: go vet"
	failed=$((failed + 1))
fi
unformatted=$(gofmt -l .)
if [ -z "$unformatted" ]; then
	echo "ok: gofmt -l is empty"
	passed=$((passed + 1))
else
	echo "FAILED: gofmt -l lists: $unformatted"
	failed=$((failed + 1))
fi
timeout 300 go test -count=1 -v ./... >"$tmp/test" 2>&1
status=$?
grep -v -e '^=== ' "$tmp/test"
p=$(grep -c -E '^ *--- PASS' "$tmp/test")
f=$(grep -c -E '^ *--- FAIL' "$tmp/test")
passed=$((passed + p))
failed=$((failed + f))
# A build failure, a panic or a timeout reports no FAIL line of its own.
if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
	echo "FAILED: go test exited $status"
	failed=$((failed + 1))
fi
if [ "$p" -eq 0 ]; then
	echo "FAILED: go test ran no test"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
