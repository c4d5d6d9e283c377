#!/bin/sh
# run-fuzz.sh - runs one libFuzzer target for a bounded time on a throwaway
# copy of its seed corpus (the checked-in seeds stay small) and prints one
# summary line with its executions and crashes.  A crash leaves its input in
# build-fuzz/crash-* and fails the run.
#
#   tests/fuzz/run-fuzz.sh NAME BINARY SEEDS SECONDS
#   tests/fuzz/run-fuzz.sh --guard NAME BINARY SEEDS SECONDS
#   tests/fuzz/run-fuzz.sh --replay NAME BINARY SEEDS
#
# --guard runs the target once per broken variant (FUZZ_SERVICE_VARIANT,
# see tests/fuzz/fuzz_service.c) and fails unless each one is caught
# within SECONDS; their inputs go to a temporary directory.
# --replay runs every input of SEEDS through the target once, with no
# mutation (-runs=0) and no time limit: make check's regression run of
# the corpus; a crash fails it as above.
set -u
guard=0
if [ "${1:-}" = "--guard" ]; then
	guard=1
	shift
fi
if [ "${1:-}" = "--replay" ]; then
	[ $# -eq 4 ] || { echo "usage: $0 --replay NAME BINARY SEEDS" >&2; exit 2; }
	name=$2 bin=$3 seeds=$4
	mkdir -p build-fuzz
	log=$(mktemp)
	"$bin" -runs=0 -artifact_prefix=build-fuzz/ "$seeds" >"$log" 2>&1
	rc=$?
	inputs=$(find "$seeds" -type f | wc -l)
	if [ $rc -ne 0 ]; then
		grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$log" >&2
		echo "fuzz $name: replayed $inputs inputs of $seeds, 1 crash (exit $rc)"
		echo "fuzz-replay $name: 0 passed, 1 failed"
		rm -f "$log"
		exit 1
	fi
	echo "fuzz $name: replayed $inputs inputs of $seeds, 0 crashes"
	echo "fuzz-replay $name: 1 passed, 0 failed"
	rm -f "$log"
	exit 0
fi
[ $# -eq 4 ] || { echo "usage: $0 [--guard] NAME BINARY SEEDS SECONDS" >&2; exit 2; }
name=$1 bin=$2 seeds=$3 secs=$4
mkdir -p build-fuzz

# run VARIANT ARTIFACT_PREFIX: sets rc, execs, log.
run() {
	corpus=$(mktemp -d)
	log=$(mktemp)
	cp "$seeds"/* "$corpus"/
	FUZZ_SERVICE_VARIANT=$1 "$bin" -max_total_time="$secs" \
	    -print_final_stats=1 -artifact_prefix="$2" "$corpus" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rm -rf "$corpus"
}

if [ $guard -eq 0 ]; then
	start=$(date +%s)
	run none build-fuzz/
	took=$(( $(date +%s) - start ))
	if [ $rc -ne 0 ]; then
		grep -E 'ERROR|SUMMARY|Test unit written|runtime error' "$log" >&2
		echo "fuzz $name: ${execs:-?} executions in ${took} s, 1 crash (exit $rc)"
		rm -f "$log"
		exit 1
	fi
	echo "fuzz $name: $execs executions in ${took} s, 0 crashes"
	rm -f "$log"
	exit 0
fi

passed=0
failed=0
for variant in lossy-store wall-clock-leases admits-over-limit \
    reader-beside-writer one-grant-at-a-time grant-keeps-counter \
    rid-any-holder; do
	tmp=$(mktemp -d)
	start=$(date +%s)
	run "$variant" "$tmp/"
	took=$(( $(date +%s) - start ))
	if [ $rc -ne 0 ] && grep -q 'deadly signal' "$log"; then
		echo "fuzz-guard $name/$variant: caught after ${execs:-?} executions, ${took} s"
		passed=$((passed + 1))
	else
		echo "fuzz-guard $name/$variant: NOT caught in ${execs:-?} executions (exit $rc)"
		failed=$((failed + 1))
	fi
	rm -rf "$tmp" "$log"
done
echo "fuzz-guard: $passed passed, $failed failed"
[ $failed -eq 0 ]
