#!/bin/sh
# run-tests.sh - run each test program given, show its own output (cmocka's
# summary among it), and finish with one line "N passed, N failed" counting
# the programs.  Exits non-zero when any program failed.
set -u
passed=0
failed=0
failures=""
for t in "$@"; do
	echo "=== $t"
	# shellcheck disable=SC2086  # an entry may carry its arguments
	if $t; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures="$failures $t"
	fi
done
[ -n "$failures" ] && echo "failed programs:$failures"
echo "programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
