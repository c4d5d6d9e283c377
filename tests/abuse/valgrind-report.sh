#!/bin/sh
# valgrind-report.sh DIR - sums up the memcheck reports of `make valgrind`
# and fails when any run found an error or a definite or indirect leak.
# A lockd killed with SIGKILL (the kill -9 tests) writes no summary: it is
# counted apart, it cannot be judged.
set -u
dir=$1
runs=0 judged=0 killed=0 bad=0
for log in "$dir"/lockd.*.log; do
	[ -e "$log" ] || continue
	runs=$((runs + 1))
	if ! grep -q 'ERROR SUMMARY:' "$log"; then
		killed=$((killed + 1))
		continue
	fi
	judged=$((judged + 1))
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$log" | tr -d ,)
	definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d ,)
	indirect=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tr -d ,)
	if [ "${errors:-0}" != 0 ] || [ "${definite:-0}" != 0 ] || [ "${indirect:-0}" != 0 ]; then
		bad=$((bad + 1))
		echo "valgrind: $log: $errors errors, ${definite:-0} bytes definitely and ${indirect:-0} indirectly lost:"
		sed -n '/^==[0-9]*== [A-Z].*\(Invalid\|uninitialised\|Mismatched\|definitely\|indirectly\|Syscall\)/,/^==[0-9]*== $/p' "$log" | head -60
	fi
done
echo "valgrind: $runs lockd runs, $judged ran to their end under memcheck ($killed killed with SIGKILL, not judged): $((judged - bad)) passed, $bad failed"
[ "$runs" -gt 0 ] && [ "$bad" -eq 0 ]
