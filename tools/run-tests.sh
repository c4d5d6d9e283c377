#!/bin/bash
# run-tests.sh - run the test programs given, up to N at a time, and show
# each one's own output (cmocka's summary among it) whole when it ends, so
# that outputs never interleave; then the slowest programs with their
# seconds, the failed ones, and last one line "programs: N passed, N
# failed" counting the programs.  Exits non-zero when any program failed.
#
# Usage: tools/run-tests.sh [-j N] ENTRY...
#   ENTRY   a program and its arguments, as one word ("prog --flag x");
#           "serial:ENTRY" runs it alone, after the others have ended and
#           with nothing beside it: what measures time or load (fencing
#           pauses, fail-over timing, the abuse programs) goes there.
#   -j N    how many run at once (default: $TEST_JOBS, else 3).  Every
#           program picks its own ports and temporary directories, so any
#           two can run side by side.
# Needs bash 5.1 or later (wait -n -p).
set -u
jobs=${TEST_JOBS:-3}
if [ "${1:-}" = -j ]; then
	jobs=$2
	shift 2
fi
case "$jobs" in '' | *[!0-9]* | 0) echo "run-tests.sh: -j needs a count" >&2; exit 2 ;; esac

outdir=$(mktemp -d "${TMPDIR:-/tmp}/run-tests.XXXXXX") || exit 2
trap 'rm -rf "$outdir"' EXIT

passed=0
failed=0
failures=""
declare -A entry_of=() start_of=() out_of=()
times_list=""   # "seconds entry" lines, for the slowest table
n=0

now() { date +%s.%N; }

start() {
	local t=$1 out
	n=$((n + 1))
	out="$outdir/$n.out"
	# shellcheck disable=SC2086  # an entry may carry its arguments
	$t >"$out" 2>&1 </dev/null &
	entry_of[$!]=$t
	start_of[$!]=$(now)
	out_of[$!]=$out
}

# Waits for one running program to end and prints its output whole.
reap() {
	local pid status secs t
	wait -n -p pid
	status=$?
	t=${entry_of[$pid]}
	secs=$(echo "$(now) ${start_of[$pid]}" | awk '{ printf "%.1f", $1 - $2 }')
	echo "=== $t ($secs s)"
	cat "${out_of[$pid]}"
	rm -f "${out_of[$pid]}"
	if [ "$status" -eq 0 ]; then
		passed=$((passed + 1))
	else
		echo "=== FAILED (exit $status): $t"
		failed=$((failed + 1))
		failures="$failures $t"
	fi
	times_list="$times_list$secs $t
"
	unset "entry_of[$pid]" "start_of[$pid]" "out_of[$pid]"
}

began=$(now)
serial=()
for t in "$@"; do
	case "$t" in
	serial:*) serial+=("${t#serial:}"); continue ;;
	esac
	while [ "${#entry_of[@]}" -ge "$jobs" ]; do reap; done
	start "$t"
done
while [ "${#entry_of[@]}" -gt 0 ]; do reap; done
for t in ${serial[@]+"${serial[@]}"}; do
	start "$t"
	reap
done

echo "=== slowest programs (seconds, wall clock):"
printf '%s' "$times_list" | sort -rn | head -12 |
	awk '{ s = $1; $1 = ""; printf "%8.1f %s\n", s, substr($0, 2) }'
# The CPU time of the programs ended and waited for: cutime and cstime,
# fields 16 and 17 of /proc/PID/stat, in clock ticks (the name in field 2
# has no space: it is bash).
cpu=$(awk -v hz="$(getconf CLK_TCK)" \
	'{ printf "user %.1f s, system %.1f s", $16 / hz, $17 / hz }' /proc/$$/stat)
echo "=== took $(echo "$(now) $began" | awk '{ printf "%.0f", $1 - $2 }') s" \
	"on the wall clock; CPU time: $cpu"
[ -n "$failures" ] && echo "failed programs:$failures"
echo "programs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
