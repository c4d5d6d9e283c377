#!/bin/bash
# run-tests.sh - run the test programs given, up to N at a time, and show
# each one's own output (cmocka's summary among it) whole when it ends, so
# that outputs never interleave; then the slowest programs with their
# seconds, the failed ones, and last one line "programs: N passed, N
# failed" counting the programs.  Exits non-zero when any program failed.
#
# Usage: tools/run-tests.sh [-j N] [-t FILE] ENTRY...
#   ENTRY   a program and its arguments, as one word ("prog --flag x");
#           "serial:ENTRY" runs it alone, after the others have ended and
#           with nothing beside it: what measures time or load (fencing
#           pauses, fail-over timing, the abuse programs) goes there.
#   -j N    how many run at once (default 1: one after another, as make
#           soak, make abuse and make valgrind run theirs).  Every program
#           picks its own ports and temporary directories, so any two can
#           run side by side.
#   -t FILE each program's seconds of the last run ("SECONDS<TAB>ENTRY"
#           lines; made when missing): the others start longest first,
#           those it does not know before them, in the order given.
# Needs bash 5.1 or later (wait -n -p).
set -u
jobs=1
times_file=""
while :; do
	case "${1:-}" in
	-j) jobs=$2; shift 2 ;;
	-t) times_file=$2; shift 2 ;;
	*) break ;;
	esac
done
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
	last_secs[$t]=$secs
	unset "entry_of[$pid]" "start_of[$pid]" "out_of[$pid]"
}

# The entries to run beside each other: longest first by times_file.
declare -A last_secs=()
if [ -n "$times_file" ] && [ -r "$times_file" ]; then
	while IFS=$'\t' read -r secs t; do
		last_secs[$t]=$secs
	done < "$times_file"
fi
pool=()
serial=()
for t in "$@"; do
	case "$t" in
	serial:*) serial+=("${t#serial:}") ;;
	*) pool+=("$t") ;;
	esac
done
ordered=()
for t in ${pool[@]+"${pool[@]}"}; do
	[ -z "${last_secs[$t]:-}" ] && ordered+=("$t")
done
while IFS=$'\t' read -r _ t; do
	[ -n "$t" ] && ordered+=("$t")
done < <(for t in ${pool[@]+"${pool[@]}"}; do
	[ -n "${last_secs[$t]:-}" ] && printf '%s\t%s\n' "${last_secs[$t]}" "$t"
done | sort -t "$(printf '\t')" -k1,1rn)

began=$(now)
for t in ${ordered[@]+"${ordered[@]}"}; do
	while [ "${#entry_of[@]}" -ge "$jobs" ]; do reap; done
	start "$t"
done
while [ "${#entry_of[@]}" -gt 0 ]; do reap; done
for t in ${serial[@]+"${serial[@]}"}; do
	start "$t"
	reap
done

if [ -n "$times_file" ]; then
	for t in "${!last_secs[@]}"; do
		printf '%s\t%s\n' "${last_secs[$t]}" "$t"
	done > "$times_file.new" && mv "$times_file.new" "$times_file"
fi

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
