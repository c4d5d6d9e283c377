#!/bin/sh
# check-report.sh - bench/report.sh prints, for each results file here
# (results-NAME.txt, made up to take every branch of the report: every
# peer with failed rounds and nometasync; the lock kinds alone, with lockd
# failed or not supporting them; scale lines skipped and failed; no disk
# line), exactly the tables in report-NAME.expected.  The figures mean
# nothing; the layout is what is checked.  Ends with "N passed, N failed".
#
# Usage: tests/bench/check-report.sh [REPORT]
# (REPORT defaults to bench/report.sh: pointing it at an older or a
# broken one shows the check failing.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
report=${1:-$here/../../bench/report.sh}
passed=0
failed=0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for results in "$here"/results-*.txt; do
	name=$(basename "$results" .txt)
	name=${name#results-}
	if sh "$report" "$results" >"$tmp/out" 2>&1 &&
	    cmp -s "$tmp/out" "$here/report-$name.expected"; then
		echo "ok: $name"
		passed=$((passed + 1))
	else
		echo "FAILED: $name:"
		diff "$here/report-$name.expected" "$tmp/out" | head -20
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
