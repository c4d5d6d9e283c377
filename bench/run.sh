#!/usr/bin/env bash
# bench/run.sh - lockd side by side with Redis 7 (appendfsync always), etcd
# 3.4 and a no-op line server, in one run, on this machine.  `make bench`
# calls it after installing the peers and building; it may be run alone
# once build/lockd, build/bench/loadgen and build/bench/noop exist.
#
# It starts each server on a free loopback port in its own temp directory,
# pinned to one CPU (BENCH_SERVER_CPU, default 0), and drives it with
# bench/loadgen pinned to another (BENCH_CLIENT_CPU, default 1).  The
# workloads run interleaved - lockd, redis, etcd, noop, lockd, ... - for
# BENCH_ROUNDS rounds, each run BENCH_SECONDS long after a BENCH_WARMUP, so
# that the ratios come from the same minutes.  Then the scale figures:
# BENCH_LOCKS held locks in a fresh lockd (memory per lock, recovery time at
# restart) and BENCH_IDLE idle connections (memory per connection).  It
# prints a table of medians over the rounds, the ratios and the issue's
# targets, and keeps every raw line in BENCH_RESULTS.  Everything it starts
# is stopped by PID, also on exit; everything talks to loopback only; every
# run is bounded by loadgen's own limits and by timeout(1).
#
# The lock kinds (issue 17), lockd against Redis Lua scripts in each round:
# a semaphore of BENCH_SEM_LIMIT permits on one name with BENCH_SEM_CONNS
# connections, and BENCH_RW_READERS readers with BENCH_RW_WRITERS writers
# on one name; then bytes per holder of BENCH_SEM_LIMIT-permit semaphores
# beside the plain locks' bytes per lock.  Before the rounds, the overlap
# check is seen to fail against broken Redis scripts and the no-op server
# (which grants everything), and the Redis scripts are checked call by
# call.  An overlap in a real run fails the whole run.  A lockd without
# limit=/mode= is skipped, with a line saying so.  BENCH_ONLY=kinds runs
# only these (lockd, Redis and the no-op server; make bench-kinds);
# BENCH_KINDS=0 leaves them out.
#
#   BENCH_SECONDS=5 BENCH_ROUNDS=3 BENCH_WARMUP=0.5 bench/run.sh
#   BENCH_QUICK=1 bench/run.sh        # about a minute: 1 round, 1 s runs
#   BENCH_ONLY=kinds BENCH_QUICK=1 bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

LOCKD=${LOCKD:-build/lockd}
LOADGEN=${LOADGEN:-build/bench/loadgen}
NOOP=${NOOP:-build/bench/noop}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_SECONDS:=1}" "${BENCH_ROUNDS:=1}" "${BENCH_WARMUP:=0.2}"
	: "${BENCH_LOCKS:=100000}" "${BENCH_IDLE:=1000}"
	: "${BENCH_CONNS:=1 64}"
fi
BENCH_SECONDS=${BENCH_SECONDS:-5}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
BENCH_WARMUP=${BENCH_WARMUP:-0.5}
BENCH_LOCKS=${BENCH_LOCKS:-1000000}
BENCH_IDLE=${BENCH_IDLE:-10000}
BENCH_CONNS=${BENCH_CONNS:-1 16 64 256}
BENCH_HANDOFF_CONNS=${BENCH_HANDOFF_CONNS:-16}
BENCH_TRY_CONNS=${BENCH_TRY_CONNS:-16}
BENCH_SERVER_CPU=${BENCH_SERVER_CPU:-0}
BENCH_CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
BENCH_NOTE=${BENCH_NOTE:-}
# lockd refuses a --max-held its map cannot hold at 255-byte names: 1,001,000
# held need about 5.5 GB.  The map is address space; the file grows as used.
BENCH_MAP_SIZE=${BENCH_MAP_SIZE:-8589934592}
BENCH_ONLY=${BENCH_ONLY:-}
BENCH_KINDS=${BENCH_KINDS:-1}
# The scale step's lock names: held/ and a zero-padded number, this many
# bytes (issue 30 states its memory target at 16; before it, names were
# held/0 to held/999999, 11 bytes at most).
BENCH_NAME_LEN=${BENCH_NAME_LEN:-16}
BENCH_SEM_CONNS=${BENCH_SEM_CONNS:-64}
BENCH_SEM_LIMIT=${BENCH_SEM_LIMIT:-16}
BENCH_RW_READERS=${BENCH_RW_READERS:-60}
BENCH_RW_WRITERS=${BENCH_RW_WRITERS:-4}
# How long a semaphore or rw holder holds, in ms; 0: to the end of the load
# generator's pass that read its grant.
BENCH_KINDS_HOLD_MS=${BENCH_KINDS_HOLD_MS:-0}
case $BENCH_ONLY in
'') ;;
kinds) BENCH_KINDS=1 ;;
*) echo "bench: BENCH_ONLY takes kinds, not $BENCH_ONLY" >&2; exit 2 ;;
esac
# LOCKD_NOMETASYNC=build/tests/lockd-faulty adds the peer "nometasync":
# lockd-faulty with LOCKD_FAULT=lmdb_nometasync, LMDB alone with
# MDB_NOMETASYNC and replies a batch late (docs/performance.md, "The
# journal against MDB_NOMETASYNC").  Never a mode of lockd.
LOCKD_NOMETASYNC=${LOCKD_NOMETASYNC:-}
# LOCKD_ALT=/path/to/another/lockd adds the peer "alt": another build of
# lockd (the one before a change, say), run beside this one in every round,
# so that before and after come from the same minutes.
LOCKD_ALT=${LOCKD_ALT:-}
ALT=()
[ -n "$LOCKD_NOMETASYNC" ] && ALT+=(nometasync)
[ -n "$LOCKD_ALT" ] && ALT+=(alt)
PEERS=(lockd "${ALT[@]}" redis etcd noop)
if [ "$BENCH_ONLY" = kinds ]; then
	PEERS=(lockd redis)
fi

for bin in "$LOCKD" "$LOADGEN" "$NOOP" ${LOCKD_ALT:+"$LOCKD_ALT"}; do
	[ -x "$bin" ] || { echo "bench: $bin is missing; run make bench" >&2; exit 1; }
done
for tool in redis-server etcd taskset timeout; do
	command -v "$tool" >/dev/null || { echo "bench: $tool is missing (tools/deps.sh bench)" >&2; exit 1; }
done

resdir=$(dirname "$LOADGEN")
BENCH_RESULTS=${BENCH_RESULTS:-$resdir/results-$(date -u +%Y%m%dT%H%M%SZ).txt}
# The servers' data must be on a real disk: fsync on tmpfs is free.  The
# build directory is next to the sources, so it is the default.
WORK=$(mktemp -d "${BENCH_TMPDIR:-$resdir}/run.XXXXXX")
fstype=$(stat -f -c %T "$WORK")
[ "$fstype" = tmpfs ] && echo "bench: warning: $WORK is on tmpfs, fsync costs nothing there" >&2

# Pinning needs two CPUs; with one, everything shares it (and says so).
if [ "$(nproc)" -ge 2 ]; then
	SPIN=(taskset -c "$BENCH_SERVER_CPU")
	CPIN=(taskset -c "$BENCH_CLIENT_CPU")
	pinning="servers on CPU $BENCH_SERVER_CPU, load generator on CPU $BENCH_CLIENT_CPU"
else
	SPIN=()
	CPIN=()
	pinning="none (one CPU)"
fi
# 10,000 idle connections need as many descriptors in lockd and in loadgen.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

declare -A PID PORT LOG
KINDS_SKIP_SAID=0      # the "not supported" line, said once
KINDS_BAD=()           # overlaps seen, guards not caught
cleanup() {
	local name pid
	for name in "${!PID[@]}"; do
		pid=${PID[$name]}
		kill -TERM "$pid" 2>/dev/null || true
	done
	for name in "${!PID[@]}"; do
		stop_wait "${PID[$name]}"
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop_wait PID: waits up to 15 s for a process we signalled, then kills it.
stop_wait() {
	local pid=$1 i
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# stop NAME: stops one server by its PID.
stop() {
	local pid=${PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	stop_wait "$pid"
	unset "PID[$1]"
}

# wait_log FILE PATTERN SECONDS [PID]: true once FILE holds PATTERN; false
# after SECONDS, or at once when PID has exited.
wait_log() {
	local file=$1 pattern=$2 pid=${4:-} end
	end=$(( ${EPOCHREALTIME/./} / 1000 + $3 * 1000 ))
	while (( ${EPOCHREALTIME/./} / 1000 < end )); do
		grep -q -- "$pattern" "$file" 2>/dev/null && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.02
	done
	echo "bench: no '$pattern' in $file:" >&2
	tail -5 "$file" >&2
	return 1
}

# pressure: how much others wanted the CPUs and the disk over the last
# minute (Linux PSI), to tell a quiet machine from a busy one.
pressure() {
	local r
	for r in cpu io; do
		printf '%s_some_avg60=%s ' "$r" "$(awk '/^some/ { sub("avg60=", "", $3); print $3 }' "/proc/pressure/$r" 2>/dev/null || echo '?')"
	done
}

# flush_cost: the mean time of a 4 KiB O_DSYNC write in the work directory,
# the price of one device flush, which every durable cycle pays.
flush_cost() {
	local t0 t1
	t0=${EPOCHREALTIME/./}
	dd if=/dev/zero of="$WORK/flush.probe" bs=4k count=200 oflag=dsync status=none
	t1=${EPOCHREALTIME/./}
	rm -f "$WORK/flush.probe"
	printf 'dsync_write_us=%d ' $(( (t1 - t0) / 200 ))
	# And what one durable write costs each peer's way (bench/flushcost.c).
	if [ -n "${FLUSHCOST:-}" ]; then "$FLUSHCOST" "$WORK" 200; else echo; fi
}

free_ports() { "$LOADGEN" -F "$1" | paste -sd ' '; }

# start_lockd NAME DATADIR [FLAGS...]: lockd on port 0; its log names the port.
start_lockd() {
	local name=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	LOG[$name]=$WORK/$name.log
	"${SPIN[@]}" "${LOCKD_BIN:-$LOCKD}" --data-dir "$dir" --listen 127.0.0.1:0 "$@" \
	    2>>"${LOG[$name]}" &
	PID[$name]=$!
	wait_log "${LOG[$name]}" "listening on 127.0.0.1:" 30 "${PID[$name]}"
	PORT[$name]=$(grep -o 'listening on 127.0.0.1:[0-9]*' "${LOG[$name]}" |
	    tail -1 | sed 's/.*://')
}

start_noop() {
	LOG[noop]=$WORK/noop.log
	"${SPIN[@]}" "$NOOP" --listen 127.0.0.1:0 --max-seconds 7200 \
	    2>"${LOG[noop]}" &
	PID[noop]=$!
	wait_log "${LOG[noop]}" "listening on 127.0.0.1:" 10 "${PID[noop]}"
	PORT[noop]=$(grep -o 'listening on 127.0.0.1:[0-9]*' "${LOG[noop]}" |
	    sed 's/.*://')
}

# Redis as durable as lockd: every write fsync'd before its reply.
start_redis() {
	local port
	port=$(free_ports 1)
	mkdir -p "$WORK/redis"
	LOG[redis]=$WORK/redis.log
	"${SPIN[@]}" redis-server --port "$port" --bind 127.0.0.1 \
	    --dir "$WORK/redis" --appendonly yes --appendfsync always \
	    --save '' --daemonize no --maxclients $((BENCH_IDLE + 100)) \
	    >"${LOG[redis]}" 2>&1 &
	PID[redis]=$!
	PORT[redis]=$port
	wait_log "${LOG[redis]}" "Ready to accept connections" 30 "${PID[redis]}"
}

# etcd, single node; durable by default (the WAL is fsync'd per batch).
start_etcd() {
	local ports client peer
	ports=$(free_ports 2)
	read -r client peer <<<"$ports"
	mkdir -p "$WORK/etcd"
	LOG[etcd]=$WORK/etcd.log
	"${SPIN[@]}" etcd --name bench --data-dir "$WORK/etcd/data" \
	    --listen-client-urls "http://127.0.0.1:$client" \
	    --advertise-client-urls "http://127.0.0.1:$client" \
	    --listen-peer-urls "http://127.0.0.1:$peer" \
	    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
	    --initial-cluster "bench=http://127.0.0.1:$peer" \
	    --logger zap --log-outputs stderr >"${LOG[etcd]}" 2>&1 &
	PID[etcd]=$!
	PORT[etcd]=$client
	wait_log "${LOG[etcd]}" "serving client traffic" 30 "${PID[etcd]}"
	wait_log "${LOG[etcd]}" "became leader" 30 "${PID[etcd]}"
}

# proto_of PEER: the protocol loadgen speaks to it (noop, and the scale
# instances of lockd, speak lockd's).
proto_of() { case $1 in redis|etcd) echo "$1" ;; *) echo lockd ;; esac; }

# loadgen PEER LABEL ARGS...: one bounded run; its line goes to the results.
loadgen() {
	local peer=$1 label=$2 line rc=0 limit
	shift 2
	limit=$(awk -v s="$BENCH_SECONDS" -v w="$BENCH_WARMUP" 'BEGIN { print int(s + w + 90) }')
	line=$(timeout -k 5 "$limit" "${CPIN[@]}" "$LOADGEN" -x "$(proto_of "$peer")" \
	    -p "${PORT[$peer]}" -S "${PID[$peer]}" -L "$label peer=$peer" "$@" \
	    2>>"$WORK/loadgen.err") || rc=$?
	if [ $rc -eq 3 ] && [ -n "$line" ]; then
		# lockd refused limit= or mode=: not built yet.
		line="$line skipped=1"
		if [ $KINDS_SKIP_SAID = 0 ]; then
			echo "lockd: limit=/mode= not supported by this build - skipped" >&2
			echo "# lockd: limit=/mode= not supported by this build - skipped" >>"$BENCH_RESULTS"
			KINDS_SKIP_SAID=1
		fi
	elif [ $rc -eq 4 ] && [ -n "$line" ]; then
		line="$line failed=1 rc=$rc"
		KINDS_BAD+=("$peer let holders overlap: $label $*")
		echo "bench: $peer let holders overlap (loadgen exit 4): $*" >&2
		tail -5 "$WORK/loadgen.err" >&2 || true
	elif [ $rc -ne 0 ] || [ -z "$line" ]; then
		line="$label peer=$peer failed=1 rc=$rc errors=1 $*"
		echo "bench: loadgen failed (rc $rc) on $peer: $*" >&2
		tail -3 "$WORK/loadgen.err" >&2 || true
	fi
	echo "$line" >>"$BENCH_RESULTS"
	echo "$line" >&2
}

# guard PEER NAME EXPECTED_RC ARGS...: a run that must end with EXPECTED_RC
# (4: the overlap check caught a broken server; 1: the script check failed;
# 0: it passed); its line goes to the results with caught=0|1.
guard() {
	local peer=$1 name=$2 want=$3 line rc=0
	shift 3
	line=$(timeout -k 5 60 "${CPIN[@]}" "$LOADGEN" -x "$(proto_of "$peer")" \
	    -p "${PORT[$peer]}" -L "guard=$name peer=$peer" "$@" \
	    2>>"$WORK/guard.err") || rc=$?
	[ -n "$line" ] || line="guard=$name peer=$peer"
	line="$line expect_rc=$want rc=$rc caught=$([ $rc = "$want" ] && echo 1 || echo 0)"
	echo "$line" >>"$BENCH_RESULTS"
	echo "$line" >&2
	if [ $rc != "$want" ]; then
		KINDS_BAD+=("guard $name on $peer ended with $rc, not $want")
		tail -5 "$WORK/guard.err" >&2 || true
	fi
}

# The lock kinds' checks, before the rounds: each must be seen to fail on a
# server broken for it, and the Redis scripts must answer right.  An overlap
# run ends at its first overlap (-V), within 10 s if none comes.
kinds_guards() {
	guard redis scripts 0 -w scripts -P guard/scripts
	guard redis scripts-broken 1 -w scripts -B -P guard/scripts-broken
	guard redis sem-broken 4 -w sem -B -c "$BENCH_SEM_CONNS" \
	    -N "$BENCH_SEM_LIMIT" -t 10 -V -P guard/sem
	guard redis rw-broken 4 -w rw -B -c $((BENCH_RW_READERS + BENCH_RW_WRITERS)) \
	    -R "$BENCH_RW_READERS" -t 10 -V -P guard/rw
	guard noop sem-noop 4 -w sem -c "$BENCH_SEM_CONNS" \
	    -N "$BENCH_SEM_LIMIT" -t 10 -V -P guard/sem
	guard noop rw-noop 4 -w rw -c $((BENCH_RW_READERS + BENCH_RW_WRITERS)) \
	    -R "$BENCH_RW_READERS" -t 10 -V -P guard/rw
}

# kinds_round ROUND: the semaphore, then the readers-writer mix, on lockd
# and Redis in turn.
kinds_round() {
	local round=$1 peer
	for peer in lockd redis; do
		loadgen "$peer" "round=$round" -w sem -c "$BENCH_SEM_CONNS" \
		    -N "$BENCH_SEM_LIMIT" -h "$BENCH_KINDS_HOLD_MS" \
		    -t "$BENCH_SECONDS" -W "$BENCH_WARMUP" -P "r$round/s"
	done
	for peer in lockd redis; do
		loadgen "$peer" "round=$round" -w rw \
		    -c $((BENCH_RW_READERS + BENCH_RW_WRITERS)) -R "$BENCH_RW_READERS" \
		    -h "$BENCH_KINDS_HOLD_MS" -t "$BENCH_SECONDS" -W "$BENCH_WARMUP" \
		    -P "r$round/rw"
	done
}

{
	echo "# lockd bench $(date -u +%Y-%m-%dT%H:%M:%SZ) ${BENCH_NOTE}"
	echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo) GiB, kernel $(uname -r)"
	echo "# disk: $WORK on $fstype ($(df --output=source "$WORK" | tail -1)); $(flush_cost)"
	echo "# pinning: $pinning; load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(pressure)"
	echo "# lockd $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+dirty'); $(redis-server --version | cut -d' ' -f1-3); etcd $(etcd --version | awk '/etcd Version/ { print $3 }')"
	[ -z "$LOCKD_ALT" ] || echo "# alt: $LOCKD_ALT ($(stat -c %y "$LOCKD_ALT" | cut -d. -f1))"
	echo "# rounds=$BENCH_ROUNDS seconds=$BENCH_SECONDS warmup=$BENCH_WARMUP conns=\"$BENCH_CONNS\" handoff_conns=$BENCH_HANDOFF_CONNS try_conns=$BENCH_TRY_CONNS"
	if [ "$BENCH_KINDS" = 1 ]; then
		echo "# kinds${BENCH_ONLY:+ only}: sem_conns=$BENCH_SEM_CONNS sem_limit=$BENCH_SEM_LIMIT rw_readers=$BENCH_RW_READERS rw_writers=$BENCH_RW_WRITERS hold_ms=$BENCH_KINDS_HOLD_MS"
	fi
} >"$BENCH_RESULTS"
cat "$BENCH_RESULTS" >&2

start_lockd lockd "$WORK/lockd"
if [ -n "$LOCKD_NOMETASYNC" ]; then
	LOCKD_FAULT=lmdb_nometasync LOCKD_BIN=$LOCKD_NOMETASYNC \
	    start_lockd nometasync "$WORK/nometasync"
fi
if [ -n "$LOCKD_ALT" ]; then
	LOCKD_BIN=$LOCKD_ALT start_lockd alt "$WORK/alt"
fi
start_redis
[ "$BENCH_ONLY" = kinds ] || start_etcd
start_noop
echo "bench: lockd :${PORT[lockd]} redis :${PORT[redis]} etcd :${PORT[etcd]:-} noop :${PORT[noop]}" >&2
if [ "$BENCH_KINDS" = 1 ]; then
	kinds_guards
fi

# One short warm-up run per server, not counted.
for peer in "${PEERS[@]}"; do
	loadgen "$peer" "round=0" -w cycle -c 16 -t 1 -P "warm/$peer" >/dev/null 2>&1
done

# order ROUND PEER...: the peers in the order a round drives them, reversed
# in even rounds and rotated by the round, so that no peer always runs
# first or just before another (lockd before alt, say).
order() {
	local r=$1 i n
	shift
	local -a p=("$@") q=()
	n=${#p[@]}
	for ((i = 0; i < n; i++)); do
		if ((r % 2 == 0)); then q+=("${p[n - 1 - i]}"); else q+=("${p[i]}"); fi
	done
	for ((i = 0; i < n; i++)); do echo "${q[(i + r - 1) % n]}"; done
}

# The rounds: each workload on every peer in turn, so the peers share the
# machine's moods alike.
for ((round = 1; round <= BENCH_ROUNDS; round++)); do
	mapfile -t ORDER < <(order "$round" "${PEERS[@]}")
	mapfile -t HANDOFF_ORDER < <(order "$round" lockd "${ALT[@]}" redis etcd)
	if [ "$BENCH_KINDS" = 1 ]; then
		kinds_round "$round"
	fi
	if [ "$BENCH_ONLY" = kinds ]; then
		continue
	fi
	for n in $BENCH_CONNS; do
		for peer in "${ORDER[@]}"; do
			loadgen "$peer" "round=$round" -w cycle -c "$n" \
			    -t "$BENCH_SECONDS" -W "$BENCH_WARMUP" \
			    -P "r$round/c$n"
		done
	done
	for peer in "${HANDOFF_ORDER[@]}"; do   # no-op: no hand-off
		loadgen "$peer" "round=$round" -w handoff -c "$BENCH_HANDOFF_CONNS" \
		    -t "$BENCH_SECONDS" -W "$BENCH_WARMUP" -P "r$round/h"
	done
	for peer in "${ORDER[@]}"; do
		loadgen "$peer" "round=$round" -w try -c "$BENCH_TRY_CONNS" \
		    -t "$BENCH_SECONDS" -W "$BENCH_WARMUP" -P "r$round/t"
	done
done
for peer in "${PEERS[@]}"; do
	echo "# $peer cpu_s=$(awk '{ print ($14 + $15) / 100 }' "/proc/${PID[$peer]}/stat") rss_kb=$(awk '/VmRSS/ { print $2 }' "/proc/${PID[$peer]}/status")" >>"$BENCH_RESULTS"
done
stop etcd
stop noop
stop nometasync
stop alt

# --- scale ------------------------------------------------------------------
# Held locks: a fresh lockd, BENCH_LOCKS locks of BENCH_NAME_LEN-byte names
# taken and kept (lease 1 h, so that they are all still held when it
# restarts), resident memory before and after; then a clean stop and a
# restart, timed until it listens again.
start_lockd scale "$WORK/scale" --max-lease 1h --max-held $((BENCH_LOCKS + 1000)) \
    --map-size "$BENCH_MAP_SIZE"
loadgen scale "scale=held name_len=$BENCH_NAME_LEN" -w hold -z "$BENCH_NAME_LEN" \
    -n "$BENCH_LOCKS" -c 8 -d 512 -l 1h -t 600 -P held
sleep 1
echo "# scale rss_settled_kb=$(awk '/VmRSS/ { print $2 }' "/proc/${PID[scale]}/status") data_mdb_bytes=$(stat -c %s "$WORK/scale/data.mdb" 2>/dev/null || echo 0)" >>"$BENCH_RESULTS"
if [ "$BENCH_ONLY" = kinds ]; then
	stop scale
else
	t_stop=$(date +%s%N)
	stop scale
	t_start=$(date +%s%N)
	: >"$WORK/scale.log"
	start_lockd scale "$WORK/scale" --max-lease 1h --max-held $((BENCH_LOCKS + 1000)) \
	    --map-size "$BENCH_MAP_SIZE"
	t_listen=$(date +%s%N)
	recovered=$(grep -o 'event=recovered.*' "$WORK/scale.log" | tail -1)
	log_ms=$(awk '
		function ms(ts) { split(substr(ts, 12, 12), a, ":"); return (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 }
		/event=start / { s = ms(substr($1, 4)) }
		/event=listen / && !l { l = ms(substr($1, 4)) }
		END { printf "%d", l - s }' "$WORK/scale.log")
	rss_rec=$(awk '/VmRSS/ { print $2 }' "/proc/${PID[scale]}/status")
	anon_rec=$(awk '/RssAnon/ { print $2 }' "/proc/${PID[scale]}/status")
	line="scale=recovery peer=lockd locks=$BENCH_LOCKS stop_ms=$(( (t_start - t_stop) / 1000000 )) recovery_ms=$(( (t_listen - t_start) / 1000000 )) recovery_log_ms=$log_ms rss_after_recovery_kb=$rss_rec anon_after_recovery_kb=$anon_rec ${recovered#event=}"
	echo "$line" >>"$BENCH_RESULTS"
	echo "$line" >&2
	stop scale
fi

# Holders (issue 17): a fresh lockd, BENCH_LOCKS holders of semaphores of
# BENCH_SEM_LIMIT permits (BENCH_LOCKS / BENCH_SEM_LIMIT names), kept, as
# above: resident memory per holder, beside the plain lock's above.
if [ "$BENCH_KINDS" = 1 ]; then
	start_lockd holders "$WORK/holders" --max-lease 1h \
	    --max-held $((BENCH_LOCKS + 1000)) --map-size "$BENCH_MAP_SIZE"
	loadgen holders "scale=holders" -w hold -N "$BENCH_SEM_LIMIT" \
	    -n "$BENCH_LOCKS" -c 8 -d 512 -l 1h -t 600 -P holders
	stop holders
fi

# Idle connections: a fresh lockd (and the running Redis, for comparison),
# BENCH_IDLE connections that each answered one PING, resident memory
# before and after.
if [ "$BENCH_ONLY" != kinds ]; then
	start_lockd idle "$WORK/idle" --max-connections $((BENCH_IDLE + 100))
	loadgen idle "scale=idle" -w idle -c "$BENCH_IDLE" -t 60
	stop idle
	loadgen redis "scale=idle" -w idle -c "$BENCH_IDLE" -t 60
fi
stop redis
stop lockd
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg); $(pressure)" >>"$BENCH_RESULTS"

bench/report.sh "$BENCH_RESULTS" | tee -a "$BENCH_RESULTS"
echo "bench: raw lines and the table in $BENCH_RESULTS" >&2
if [ ${#KINDS_BAD[@]} -gt 0 ]; then
	printf 'bench: FAILED: %s\n' "${KINDS_BAD[@]}" >&2
	exit 1
fi
