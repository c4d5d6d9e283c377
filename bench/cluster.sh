#!/usr/bin/env bash
# bench/cluster.sh - the cluster-mode benchmark (docs/performance.md,
# "Cluster mode").  On loopback, in one run: a 3-member etcd, 3 lockd nodes
# in cluster mode on it, and etcd's own lock API on the same etcd.
#
#   1. durable cycles (lock + unlock) at 1 and 64 connections, each on its
#      own name, and a hand-off on one contended name, lockd's leader and
#      etcd's lock API interleaved in every round;
#   2. the ceiling: guarded 64-record transactions, the shape lockd's
#      store writes, against the same etcd; and guarded 1-record ones,
#      the transaction of one ACQUIRE at one connection, whose p50 is the
#      floor of lockd's acquire p50 there;
#   3. fail-over: kill -9 of the leader lockd, then the time until one of
#      the other nodes answers an ACQUIRE with GRANTED; the killed node is
#      started again as a standby; BENCH_FAILOVERS kills.  Each line says
#      whether etcd elected a new leader meanwhile (etcd_term_changes),
#      which stretches a fail-over (docs/performance.md).
#
# Run by `make bench-cluster` (and `make bench`), which sets LOCKD and
# LOADGEN.  Knobs: BENCH_CLUSTER_SECONDS (3), BENCH_CLUSTER_ROUNDS (3),
# BENCH_CLUSTER_CONNS ("1 64"), BENCH_HANDOFF_CONNS (16), BENCH_FAILOVERS
# (20), BENCH_SERVER_CPU (0), BENCH_CLIENT_CPU (1), BENCH_QUICK=1 (1 round
# of 1 s, 3 kills), BENCH_CLUSTER_KEEP=1 (keep the work directory and its
# logs), LOCKD_ALT (another lockd build: one more node of it, leading a
# cluster of its own on the same etcd, is the peer "alt" in every round, to
# compare two builds in one run).  Everything it starts is stopped by PID.
set -euo pipefail

LOCKD=${LOCKD:?set LOCKD to build/lockd}
LOADGEN=${LOADGEN:?set LOADGEN to build/bench/loadgen}
if [ -n "${BENCH_QUICK:-}" ]; then
	: "${BENCH_CLUSTER_SECONDS:=1}" "${BENCH_CLUSTER_ROUNDS:=1}" "${BENCH_FAILOVERS:=3}"
fi
BENCH_CLUSTER_SECONDS=${BENCH_CLUSTER_SECONDS:-3}
BENCH_CLUSTER_ROUNDS=${BENCH_CLUSTER_ROUNDS:-3}
BENCH_CLUSTER_CONNS=${BENCH_CLUSTER_CONNS:-1 64}
BENCH_HANDOFF_CONNS=${BENCH_HANDOFF_CONNS:-16}
BENCH_FAILOVERS=${BENCH_FAILOVERS:-20}
BENCH_WARMUP=${BENCH_WARMUP:-0.5}
BENCH_SERVER_CPU=${BENCH_SERVER_CPU:-0}
BENCH_CLIENT_CPU=${BENCH_CLIENT_CPU:-1}
NODES=3
MEMBERS=3

for tool in etcd etcdctl taskset timeout; do
	command -v "$tool" >/dev/null || { echo "bench-cluster: $tool is missing (tools/deps.sh bench)" >&2; exit 1; }
done
for bin in "$LOCKD" "$LOADGEN"; do
	[ -x "$bin" ] || { echo "bench-cluster: $bin is missing" >&2; exit 1; }
done

resdir=$(dirname "$LOADGEN")
RESULTS=${BENCH_CLUSTER_RESULTS:-$resdir/cluster-$(date -u +%Y%m%dT%H%M%SZ).txt}
# etcd's WAL must be on a real disk (fsync on tmpfs is free): the build
# directory, next to the sources.
WORK=$(mktemp -d "${BENCH_TMPDIR:-$resdir}/cluster.XXXXXX")

if [ "$(nproc)" -ge 2 ]; then
	SPIN=(taskset -c "$BENCH_SERVER_CPU")
	CPIN=(taskset -c "$BENCH_CLIENT_CPU")
	pinning="servers on CPU $BENCH_SERVER_CPU, load generator on CPU $BENCH_CLIENT_CPU"
else
	SPIN=()
	CPIN=()
	pinning="none (one CPU)"
fi

declare -a EPID EPORT PPORT NPID NPORT
APID=
APORT=
PEERS=(lockd etcd)
[ -n "${LOCKD_ALT:-}" ] && PEERS=(lockd alt etcd)
cleanup() {
	local pid
	for pid in "${NPID[@]}" "${EPID[@]}" $APID; do
		if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
	done
	for pid in "${NPID[@]}" "${EPID[@]}" $APID; do
		if [ -n "$pid" ]; then wait "$pid" 2>/dev/null || true; fi
	done
	if [ -n "${BENCH_CLUSTER_KEEP:-}" ]; then
		echo "bench-cluster: kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_log FILE PATTERN SECONDS PID: true once FILE holds PATTERN.
wait_log() {
	local file=$1 pattern=$2 pid=$4 end
	end=$(( ${EPOCHREALTIME/./} / 1000 + $3 * 1000 ))
	while (( ${EPOCHREALTIME/./} / 1000 < end )); do
		grep -q -- "$pattern" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	echo "bench-cluster: no '$pattern' in $file:" >&2
	tail -5 "$file" >&2
	return 1
}

mapfile -t ports < <("$LOADGEN" -F $((2 * MEMBERS + NODES + 1)))
APORT=${ports[2 * MEMBERS + NODES]}
initial=
for ((i = 0; i < MEMBERS; i++)); do
	EPORT[i]=${ports[2 * i]}
	PPORT[i]=${ports[2 * i + 1]}
	initial+="${initial:+,}m$i=http://127.0.0.1:${PPORT[i]}"
done
for ((i = 0; i < NODES; i++)); do
	NPORT[i]=${ports[2 * MEMBERS + i]}
done
urls=
for ((i = 0; i < MEMBERS; i++)); do
	urls+="${urls:+,}http://127.0.0.1:${EPORT[i]}"
done

# etcd, three members: durable by default (the WAL is fsync'd per batch).
for ((i = 0; i < MEMBERS; i++)); do
	"${SPIN[@]}" etcd --name "m$i" --data-dir "$WORK/m$i" \
	    --listen-client-urls "http://127.0.0.1:${EPORT[i]}" \
	    --advertise-client-urls "http://127.0.0.1:${EPORT[i]}" \
	    --listen-peer-urls "http://127.0.0.1:${PPORT[i]}" \
	    --initial-advertise-peer-urls "http://127.0.0.1:${PPORT[i]}" \
	    --initial-cluster "$initial" --initial-cluster-state new \
	    --initial-cluster-token "$WORK" \
	    --logger zap --log-outputs stderr >"$WORK/m$i.log" 2>&1 &
	EPID[i]=$!
done
for ((i = 0; i < MEMBERS; i++)); do
	wait_log "$WORK/m$i.log" "serving client traffic" 30 "${EPID[i]}"
done
for ((i = 0; i < 300; i++)); do
	cat "$WORK"/m*.log | grep -q "became leader" && break
	sleep 0.05
done

# start_node I: lockd node I in cluster mode on its own fixed port, with a
# log of its own for each life (n<I>.<life>.log).
declare -A LIFE
start_node() {
	local i=$1 log
	LIFE[$i]=$(( ${LIFE[$i]:-0} + 1 ))
	log=$WORK/n$i.${LIFE[$i]}.log
	mkdir -p "$WORK/n$i"
	"${SPIN[@]}" "$LOCKD" --data-dir "$WORK/n$i" \
	    --listen "127.0.0.1:${NPORT[i]}" --advertise "127.0.0.1:${NPORT[i]}" \
	    --etcd "$urls" --cluster bench 2>"$log" &
	NPID[i]=$!
	wait_log "$log" "listening on 127.0.0.1:${NPORT[i]}" 30 "${NPID[i]}"
}

# first_granted PORTS PREFIX: the line of loadgen's fail-over workload.
first_granted() {
	timeout -k 5 40 "${CPIN[@]}" "$LOADGEN" -x lockd -p "${1%%,*}" -A "$1" \
	    -w first -t 30 -l 10s -P "$2"
}

# etcd_term: the highest raft term etcd's members report (a change of
# etcd's leader raises it), or "?" when none answers.
etcd_term() {
	local t
	t=$(ETCDCTL_API=3 timeout -k 1 5 etcdctl --endpoints="$urls" \
	    --command-timeout=2s endpoint status -w json 2>/dev/null |
	    grep -o '"raft_term":[0-9]*' | cut -d: -f2 | sort -n | tail -1) || true
	echo "${t:-?}"
}

# leader_index LINE: which node answered GRANTED.
leader_index() {
	local port i
	port=$(grep -o ' port=[0-9]*' <<<"$1" | cut -d= -f2)
	for ((i = 0; i < NODES; i++)); do
		[ "${NPORT[i]}" = "$port" ] && { echo "$i"; return 0; }
	done
	return 1
}

for ((i = 0; i < NODES; i++)); do
	start_node "$i"
done
if [ -n "${LOCKD_ALT:-}" ]; then
	mkdir -p "$WORK/alt"
	"${SPIN[@]}" "$LOCKD_ALT" --data-dir "$WORK/alt" \
	    --listen "127.0.0.1:$APORT" --advertise "127.0.0.1:$APORT" \
	    --etcd "$urls" --cluster alt 2>"$WORK/alt.log" &
	APID=$!
	wait_log "$WORK/alt.log" "listening on 127.0.0.1:$APORT" 30 "$APID"
	first_granted "$APORT" warm/alt >/dev/null
fi
all_ports=$(IFS=,; echo "${NPORT[*]}")
line=$(first_granted "$all_ports" warm/leader)
leader=$(leader_index "$line")

{
	echo "# lockd cluster bench $(date -u +%Y-%m-%dT%H:%M:%SZ) ${BENCH_NOTE:-}"
	echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r); disk: $WORK on $(stat -f -c %T "$WORK")"
	echo "# pinning: $pinning; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	[ -n "${LOCKD_ALT:-}" ] && echo "# alt: $LOCKD_ALT, one node, cluster \"alt\" on the same etcd"
	echo "# lockd $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+dirty'); etcd $(etcd --version | awk '/etcd Version/ { print $3 }'), $MEMBERS members; $NODES lockd nodes"
	echo "# rounds=$BENCH_CLUSTER_ROUNDS seconds=$BENCH_CLUSTER_SECONDS warmup=$BENCH_WARMUP conns=\"$BENCH_CLUSTER_CONNS\" handoff_conns=$BENCH_HANDOFF_CONNS failovers=$BENCH_FAILOVERS"
	echo "# etcd lock API: one lease per connection (granted once, TTL 60 s), lock + unlock on it; lockd and etcd both through etcd member m0's client port"
} >"$RESULTS"
cat "$RESULTS" >&2

# stats PORT: the commits and records of a lockd node's STATS line.
stats() {
	local fd line=
	exec {fd}<>"/dev/tcp/127.0.0.1/$1" || return 0
	printf 'STATS\n' >&"$fd"
	read -r -t 2 line <&"$fd" || true
	exec {fd}>&-
	echo "$(grep -o ' commits=[0-9]*' <<<"$line" | cut -d= -f2) $(grep -o ' commit_records=[0-9]*' <<<"$line" | cut -d= -f2)"
}

# run PEER LABEL ARGS...: one bounded loadgen run; its line goes to RESULTS.
run() {
	local peer=$1 label=$2 line rc=0 limit proto port pid c0='' r0='' c1='' r1=''
	shift 2
	case $peer in
	lockd) proto=lockd; port=${NPORT[leader]}; pid=${NPID[leader]} ;;
	alt) proto=lockd; port=$APORT; pid=$APID ;;
	*) proto=etcd; port=${EPORT[0]}; pid=${EPID[0]} ;;
	esac
	limit=$(awk -v s="$BENCH_CLUSTER_SECONDS" -v w="$BENCH_WARMUP" 'BEGIN { print int(s + w + 60) }')
	[ "$proto" = lockd ] && read -r c0 r0 <<<"$(stats "$port")"
	line=$(timeout -k 5 "$limit" "${CPIN[@]}" "$LOADGEN" -x "$proto" \
	    -p "$port" -S "$pid" -L "$label peer=$peer" -t "$BENCH_CLUSTER_SECONDS" \
	    -W "$BENCH_WARMUP" "$@" 2>>"$WORK/loadgen.err") || rc=$?
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		line="$label peer=$peer failed=1 rc=$rc errors=1 $*"
		echo "bench-cluster: loadgen failed (rc $rc) on $peer: $*" >&2
		tail -3 "$WORK/loadgen.err" >&2 || true
	elif [ "$proto" = lockd ]; then
		# The leader's commits over the run (warm-up included).
		read -r c1 r1 <<<"$(stats "$port")"
		[ -n "$c1" ] && [ -n "${c0:-}" ] && [ "$c1" -gt "$c0" ] &&
		    line+=" commits=$((c1 - c0)) commit_records=$((r1 - r0)) records_per_commit=$(( (r1 - r0) / (c1 - c0) ))"
	fi
	echo "$line" >>"$RESULTS"
	echo "$line" >&2
}

# A second of warm-up each, not counted.
for peer in "${PEERS[@]}"; do
	run "$peer" "round=0" -w cycle -c 16 -P "warm/$peer" >/dev/null 2>&1
done

for ((round = 1; round <= BENCH_CLUSTER_ROUNDS; round++)); do
	for n in $BENCH_CLUSTER_CONNS; do
		for peer in "${PEERS[@]}"; do
			run "$peer" "round=$round" -w cycle -c "$n" -P "r$round/c$n"
		done
		# The floor of one connection's acquire, in the same minutes:
		# one ACQUIRE's transaction (a record and hwm), one at a time.
		if [ "$n" = 1 ]; then
			run txn1 "round=$round" -w txn -c 1 -r 1 -P "/ceiling1/r$round"
		fi
	done
	for peer in "${PEERS[@]}"; do
		run "$peer" "round=$round" -w handoff -c "$BENCH_HANDOFF_CONNS" -P "r$round/h"
	done
	run txn "round=$round" -w txn -c 1 -r 64 -P "/ceiling/r$round"
done

# Fail-over: kill -9 the leader, time the first GRANTED from another node.
for ((k = 1; k <= BENCH_FAILOVERS; k++)); do
	others=
	for ((i = 0; i < NODES; i++)); do
		[ "$i" = "$leader" ] || others+="${others:+,}${NPORT[i]}"
	done
	term0=$(etcd_term)
	t0=${EPOCHREALTIME/./}
	kill -KILL "${NPID[leader]}"
	wait "${NPID[leader]}" 2>/dev/null || true
	line=$(first_granted "$others" "fo$k") || true
	term1=$(etcd_term)
	t1=$(grep -o 'first_granted_unix_us=[0-9]*' <<<"$line" | cut -d= -f2)
	old=$leader
	if [ -z "$t1" ] || [ "$t1" = 0 ] || ! leader=$(leader_index "$line"); then
		line="failover=$k failed=1 errors=1"
		echo "$line" >>"$RESULTS"
		echo "$line" >&2
		break
	fi
	# etcd_term_changes: how often etcd elected a new leader during this
	# kill (its new leader gives every lease its full TTL again: see
	# docs/performance.md, "Fail-over outliers").
	changes='?'
	if [ "$term0" != '?' ] && [ "$term1" != '?' ]; then
		changes=$((term1 - term0))
	fi
	line="failover=$k killed=n$old new=n$leader failover_ms=$(( (t1 - t0) / 1000 )) etcd_term_changes=$changes"
	echo "$line" >>"$RESULTS"
	echo "$line" >&2
	start_node "$old"   # again, as a standby
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS"

# The tables: medians over the rounds.
awk '
function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	if (n == 0)
		return "-"
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^round=[1-9]/ {
	delete f
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		f[kv[1]] = kv[2]
	}
	if (f["peer"] == "txn") {
		txn = txn " " f["rate"]; rec = rec " " f["records_rate"]
		tp99 = tp99 " " f["p99_us"]; terr += f["errors"]
		next
	}
	if (f["peer"] == "txn1") {
		txn1 = txn1 " " f["rate"]; t1p50 = t1p50 " " f["p50_us"]
		t1err += f["errors"]
		next
	}
	k = f["workload"] "|" f["conns"] "|" f["peer"]
	if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
	rate[k] = rate[k] " " f["rate"]
	acq50[k] = acq50[k] " " f["acq_p50_us"]
	acq99[k] = acq99[k] " " f["acq_p99_us"]
	p99[k] = p99[k] " " f["p99_us"]
	cpu[k] = cpu[k] " " f["server_cpu_us_per_cycle"]
	if ("records_per_commit" in f)
		rpc[k] = rpc[k] " " f["records_per_commit"]
	err[k] += f["errors"]
}
/^failover=/ {
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "failover_ms") { fo = fo " " kv[2]; nfo++; if (kv[2] + 0 > fomax) fomax = kv[2] + 0; ms = kv[2] + 0 }
		if (kv[1] == "failed") fofail++
		if (kv[1] == "etcd_term_changes" && kv[2] != "?" && kv[2] + 0 > 0) { foetcd++; if (ms > foetcdmax) foetcdmax = ms }
	}
}
END {
	print ""
	print "Cluster mode: medians over the rounds (rate: cycles/s; cycle = lock + unlock; handoff: hand-offs/s)"
	print ""
	print "| workload | conns | peer | rate/s | acquire p50 us | acquire p99 us | cycle p99 us | server CPU us/cycle | records/commit | errors |"
	print "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, w, "|")
		m[k] = median(rate[k])
		printf "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %s | %s | %d |\n", w[1], w[2], (w[3] == "lockd" ? "lockd cluster" : w[3] == "alt" ? "alt (LOCKD_ALT)" : "etcd lock API"), m[k], median(acq50[k]), median(acq99[k]), median(p99[k]), median(cpu[k]), median(rpc[k]), err[k]
	}
	print ""
	print "Ratios of median rates (lockd cluster / etcd lock API)"
	print ""
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, w, "|")
		if (w[3] != "lockd" && w[3] != "alt") continue
		e = w[1] "|" w[2] "|etcd"
		if (m[e] > 0)
			printf "- %s, %s conns%s: %.2f\n", w[1], w[2], (w[3] == "alt" ? ", alt" : ""), m[k] / m[e]
	}
	print ""
	if (txn != "")
		printf "Ceiling: guarded 64-record transactions, one at a time: %.0f txn/s, %.0f records/s (p99 %.0f us, %d errors)\n", median(txn), median(rec), median(tp99), terr
	if (txn1 != "")
		printf "Ceiling at one connection: guarded 1-record transactions (one ACQUIRE'"'"'s), one at a time: %.0f txn/s, p50 %.0f us (%d errors)\n", median(txn1), median(t1p50), t1err
	if (nfo > 0)
		printf "Fail-over (kill -9 of the leader to the first GRANTED from the new one): %d kills, p50 %d ms, max %d ms%s\n", nfo, median(fo), fomax, (fofail ? ", " fofail " failed" : "")
	if (foetcd > 0)
		printf "  of which %d saw etcd elect a new leader (slowest of those %d ms): etcd then renews every lease, the old leader key as well\n", foetcd, foetcdmax
	print ""
	print "Targets of issue 15"
	print ""
	k = "cycle|64|lockd"; e = "cycle|64|etcd"
	if (m[e] > 0)
		printf "- 64 conns, >= 4x the etcd lock API: %.2f (%s)\n", m[k] / m[e], (m[k] / m[e] >= 4 ? "met" : "NOT met")
	a = median(acq99[k])
	printf "- 64 conns, acquire p99 < 40 ms: %.1f ms (%s)\n", a / 1000, (a + 0 < 40000 ? "met" : "NOT met")
	if (nfo > 0)
		printf "- fail-over <= leader lease (3 s) + 1 s: max %d ms (%s)\n", fomax, ((fomax <= 4000 && !fofail) ? "met" : "NOT met")
	print ""
	print "Targets of issue 30"
	print ""
	k = "cycle|1|lockd"; t = median(t1p50)
	if ((k in seen) && t > 0)
		printf "- 1 conn, acquire p50 <= 1.1x a 1-record transaction'"'"'s p50: %.0f / %.0f us = %.2f (%s)\n", median(acq50[k]), t, median(acq50[k]) / t, (median(acq50[k]) <= 1.1 * t ? "met" : "NOT met")
	if ((k in seen) && t > 0 && ("cycle|1|alt" in seen))
		printf "  alt: %.0f / %.0f us = %.2f\n", median(acq50["cycle|1|alt"]), t, median(acq50["cycle|1|alt"]) / t
	k = "cycle|64|lockd"; e = "cycle|64|etcd"
	if (m[e] > 0)
		printf "- 64 conns, >= 6x the etcd lock API: %.2f (%s)\n", m[k] / m[e], (m[k] / m[e] >= 6 ? "met" : "NOT met")
	if (m[e] > 0 && ("cycle|64|alt" in seen))
		printf "  alt: %.2f\n", m["cycle|64|alt"] / m[e]
}' "$RESULTS" | tee -a "$RESULTS"
echo "bench-cluster: raw lines and the tables in $RESULTS" >&2
