#!/usr/bin/env bash
# bench/mem.sh - bytes of resident memory per held plain lock, as make
# bench's scale figure measures it, for one build or several alternated in
# the same minutes (docs/performance.md, "Memory per held plain lock").
#
# For each run and each build in turn: a fresh lockd on a free loopback
# port in its own temp directory, pinned to CPU 0 (as bench/run.sh pins
# it), BENCH_LOCKS locks taken and kept by bench/loadgen on CPU 1 exactly
# as run.sh's scale step takes them (-w hold -c 8 -d 512 -l 1h), and the
# loadgen's line: VmRSS per lock, the anonymous part, and the file-backed
# RSS after (the pages of data.mdb that LMDB's map touched).  Then the
# medians per build, and build/bench/memsizes: the structures behind the
# anonymous bytes on this build.  Everything it starts is stopped by PID,
# also on exit; every run is bounded by timeout(1).
#
#   bench/mem.sh                              # build/lockd, 3 runs
#   bench/mem.sh /tmp/lockd-before build/lockd    # alternated
#   MEM_RUNS=5 BENCH_LOCKS=200000 MEM_LIMIT=16 bench/mem.sh
#   MEM_NAME_LEN=16 bench/mem.sh              # names held/00000000042
#
# MEM_RUNS (3) runs per build; BENCH_LOCKS (1000000) locks per run;
# MEM_LIMIT (1) with N above 1 holds N-permit semaphores instead (bytes
# per holder); MEM_NAME_LEN (unset: held/0 to held/999999, 11 bytes at
# most, as run.sh names them) pads every name with zeros to that many
# bytes; BENCH_MAP_SIZE (8 GiB) the lockd map, as in run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

LOADGEN=${LOADGEN:-build/bench/loadgen}
MEMSIZES=${MEMSIZES:-build/bench/memsizes}
MEM_RUNS=${MEM_RUNS:-3}
BENCH_LOCKS=${BENCH_LOCKS:-1000000}
MEM_LIMIT=${MEM_LIMIT:-1}
MEM_NAME_LEN=${MEM_NAME_LEN:-}
BENCH_MAP_SIZE=${BENCH_MAP_SIZE:-8589934592}
BUILDS=("$@")
[ ${#BUILDS[@]} -gt 0 ] || BUILDS=(build/lockd)

for bin in "$LOADGEN" "${BUILDS[@]}"; do
	[ -x "$bin" ] || { echo "mem: $bin is missing; run make bench-mem" >&2; exit 1; }
done
if [ "$(nproc)" -ge 2 ]; then
	SPIN=(taskset -c 0)
	CPIN=(taskset -c 1)
else
	SPIN=()
	CPIN=()
fi
WORK=$(mktemp -d "${BENCH_TMPDIR:-$(dirname "$LOADGEN")}/mem.XXXXXX")
PID=
cleanup() {
	local i
	if [ -n "$PID" ]; then
		kill -TERM "$PID" 2>/dev/null || true
		for ((i = 0; i < 150; i++)); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=
	fi
}
trap 'cleanup; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# run_one LOCKD: one fresh lockd, BENCH_LOCKS held; prints loadgen's line.
run_one() {
	local lockd=$1 dir port i line kind=() pad=()
	dir=$(mktemp -d "$WORK/run.XXXXXX")
	"${SPIN[@]}" "$lockd" --data-dir "$dir" --listen 127.0.0.1:0 \
	    --max-lease 1h --max-held $((BENCH_LOCKS + 1000)) \
	    --map-size "$BENCH_MAP_SIZE" 2>"$dir/log" &
	PID=$!
	for ((i = 0; i < 300; i++)); do
		grep -q 'listening on 127.0.0.1:' "$dir/log" && break
		kill -0 "$PID" 2>/dev/null || { cat "$dir/log" >&2; exit 1; }
		sleep 0.1
	done
	[ "$MEM_LIMIT" -gt 1 ] && kind=(-N "$MEM_LIMIT")
	[ -n "$MEM_NAME_LEN" ] && pad=(-z "$MEM_NAME_LEN")
	port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$dir/log" | tail -1 |
	    sed 's/.*://')
	[ -n "$port" ] || { echo "mem: $lockd did not listen" >&2; exit 1; }
	line=$(timeout -k 5 700 "${CPIN[@]}" "$LOADGEN" -x lockd -p "$port" \
	    -S "$PID" -L "scale=mem lockd=$lockd name_len=${MEM_NAME_LEN:-11}" \
	    -w hold "${kind[@]}" "${pad[@]}" \
	    -n "$BENCH_LOCKS" -c 8 -d 512 -l 1h -t 600 -P held)
	cleanup
	rm -rf "$dir"
	echo "$line"
}

# field LINE KEY: the value of KEY=... in LINE.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A BPL ABPL
for ((r = 1; r <= MEM_RUNS; r++)); do
	for b in "${BUILDS[@]}"; do
		line=$(run_one "$b")
		echo "$line"
		[ "$(field "$line" held)" = "$BENCH_LOCKS" ] ||
		    { echo "mem: $b held $(field "$line" held) of $BENCH_LOCKS" >&2; exit 1; }
		BPL[$b]+="$(field "$line" bytes_per_lock) "
		ABPL[$b]+="$(field "$line" anon_bytes_per_lock) "
	done
done
echo
per=lock
[ "$MEM_LIMIT" -gt 1 ] && per="holder ($MEM_LIMIT-permit semaphores)"
for b in "${BUILDS[@]}"; do
	echo "$b (names of ${MEM_NAME_LEN:-up to 11} bytes): median $(tr ' ' '\n' <<<"${BPL[$b]}" | grep . | median) bytes of VmRSS per $per ($(tr ' ' '\n' <<<"${ABPL[$b]}" | grep . | median) anonymous) over $MEM_RUNS runs of $BENCH_LOCKS: ${BPL[$b]}"
done
if [ -x "$MEMSIZES" ]; then
	# The longest name: "held/" and the digits of BENCH_LOCKS - 1.
	"$MEMSIZES" "${MEM_NAME_LEN:-$((${#BENCH_LOCKS} + 4))}" |
	    sed 's/^/structures of this tree: /'
fi
