#!/bin/sh
# bench/report.sh - the table of a bench/run.sh results file: for each
# workload, connection count and peer, the median over the rounds of the
# rate, the latency percentiles and the server CPU per cycle, the errors
# summed; then the ratios of lockd to each peer, the lock kinds (semaphore,
# readers-writer) against Redis with their checks, the scale figures, and
# the targets of the benchmark issue, met or not.  It reads only the file it is
# given, so an old run can be reported again:
#
#   bench/report.sh build/bench/results-20260101T000000Z.txt
set -eu
[ $# -eq 1 ] || { echo "usage: $0 RESULTS" >&2; exit 2; }

awk '
function median(list,    v, n, i, j, t) {
	n = split(list, v, " ")
	if (n == 0)
		return ""
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(key, field, value) {
	vals[key, field] = vals[key, field] " " value
}
function fmt(x) {
	if (x == "")
		return "-"
	if (x + 0 >= 100)
		return sprintf("%.0f", x)
	return sprintf("%.1f", x)
}
function ratio(a, b) {
	return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b)
}
function verdict(ok) { return ok ? "met" : "NOT met" }
# One target line: what it asks, the value measured, met or not.
function target(what, value, ok) {
	printf "- %s: %s (%s)\n", what, value, verdict(ok)
}
# The title and the head of a Markdown table.  cols: the column names, "|" between
# them; a name ending in ">" is a column of figures, aligned right.
function table_head(title, cols,    n, c, i, head, rule) {
	n = split(cols, c, "|")
	head = "|"
	rule = "|"
	for (i = 1; i <= n; i++)
		if (c[i] ~ />$/) {
			head = head " " substr(c[i], 1, length(c[i]) - 1) " |"
			rule = rule "---:|"
		} else {
			head = head " " c[i] " |"
			rule = rule "---|"
		}
	print title
	print ""
	print head
	print rule
}
function ms(us) { return us == "" ? "-" : fmt(us / 1000) }
/^# disk:/ {
	for (i = 1; i <= NF; i++) {
		eq = index($i, "=")
		if (eq > 0)
			disk[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
}
/^# lockd: limit=\/mode= not supported/ { kinds_unsupported = 1 }
/^#/ { next }
{
	delete kv
	for (i = 1; i <= NF; i++) {
		eq = index($i, "=")
		if (eq > 0)
			kv[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	if ("guard" in kv) {
		nguards++
		what = ""
		if (kv["violations"] != "")
			what = ", overlaps seen " kv["violations"]
		else if (kv["passed"] != "")
			what = ", script checks " kv["passed"] " passed, " kv["failed"] " failed"
		guard_line[nguards] = sprintf("%s on %s: exit %s, expected %s (%s)%s",
		    kv["guard"], kv["peer"], kv["rc"], kv["expect_rc"],
		    kv["caught"] == 1 ? "as expected" : "NOT as expected", what)
		next
	}
	if ("scale" in kv) {
		if (kv["skipped"] == 1) {
			scale_skipped = scale_skipped " " kv["scale"]
			next
		}
		if (kv["failed"] == 1) {
			scale_failed = scale_failed " " kv["scale"]
			next
		}
		if (kv["scale"] == "held") {
			held = kv["held"]; held_bpl = kv["bytes_per_lock"]
			held_abpl = kv["anon_bytes_per_lock"]; held_rate = kv["rate"]
			held_err = kv["errors"]; held_rss = kv["rss_after_kb"]
			held_names = kv["name_len"] != "" ? " of " kv["name_len"] "-byte names" : ""
		} else if (kv["scale"] == "holders") {
			hdr = kv["held"]; hdr_bph = kv["bytes_per_lock"]
			hdr_abph = kv["anon_bytes_per_lock"]; hdr_limit = kv["limit"]
			hdr_err = kv["errors"]; hdr_rate = kv["rate"]
		} else if (kv["scale"] == "recovery") {
			rec_ms = kv["recovery_ms"]; rec_log_ms = kv["recovery_log_ms"]
			rec_held = kv["held"]; rec_rss = kv["rss_after_recovery_kb"]
			rec_locks = kv["locks"]
		} else if (kv["scale"] == "idle") {
			idle[kv["server"]] = kv["bytes_per_conn"]
			idle_anon[kv["server"]] = kv["anon_bytes_per_conn"]
			idle_n[kv["server"]] = kv["ready"]
		}
		next
	}
	if (kv["round"] + 0 < 1)
		next
	key = kv["workload"] SUBSEP kv["conns"] SUBSEP kv["peer"]
	if (kv["workload"] == "sem" || kv["workload"] == "rw") {
		if (!(key in kseen)) {
			kseen[key] = 1
			korder[++nkkeys] = key
		}
	} else if (!(key in seen)) {
		seen[key] = 1
		order[++nkeys] = key
	}
	if (kv["skipped"] == 1) {
		skipped[key]++
		next
	}
	violations[key] += kv["violations"]
	handoffs[key] += kv["handoff_samples"]
	if (kv["failed"] == 1) {
		failed[key]++
		next
	}
	add(key, "rrate", kv["read_rate"])
	add(key, "wrate", kv["write_rate"])
	# A side with no cycles in a round has no p99 there (loadgen prints 0).
	if (kv["read_cycles"] + 0 > 0)
		add(key, "rp99", kv["read_p99_us"])
	if (kv["write_cycles"] + 0 > 0)
		add(key, "wp99", kv["write_p99_us"])
	add(key, "maxh", kv["max_holders"])
	add(key, "waitmax", kv["wait_max_us"])
	add(key, "rwaitmax", kv["read_wait_max_us"])
	add(key, "wwaitmax", kv["write_wait_max_us"])
	if (kv["cycles"] + 0 > 0)
		add(key, "retry", kv["retries"] / kv["cycles"])
	add(key, "rate", kv["rate"])
	add(key, "p50", kv["p50_us"])
	add(key, "p99", kv["p99_us"])
	add(key, "p999", kv["p999_us"])
	add(key, "cpu", kv["server_cpu_us_per_cycle"])
	if (kv["handoff_samples"] == "" || kv["handoff_samples"] + 0 > 0) {
		add(key, "gap50", kv["handoff_p50_us"])
		add(key, "gap99", kv["handoff_p99_us"])
	}
	errors[key] += kv["errors"]
	rounds[key]++
}
END {
	# The workloads and connection counts lockd ran, in order, for the
	# tables that set lockd against the others.
	for (k = 1; k <= nkeys; k++) {
		split(order[k], part, SUBSEP)
		if (part[3] == "lockd")
			lockd_rows[++nlockd] = part[1] SUBSEP part[2]
	}
	# The generic tables: absent with BENCH_ONLY=kinds.
	if (nkeys > 0) {
		print ""
		table_head("Medians over the rounds (rate: cycles/s; cycle = lock + unlock; handoff: hand-offs/s; try: refused tries/s)",
		    "workload|conns>|peer|rate/s>|p50 us>|p99 us>|p99.9 us>|server CPU us/cycle>|errors>|rounds>")
		for (k = 1; k <= nkeys; k++) {
			key = order[k]
			split(key, part, SUBSEP)
			for (f = 1; f <= 5; f++) {
				name = f == 1 ? "rate" : f == 2 ? "p50" : f == 3 ? "p99" : f == 4 ? "p999" : "cpu"
				med[key, name] = median(vals[key, name])
			}
			med[key, "gap50"] = median(vals[key, "gap50"])
			med[key, "gap99"] = median(vals[key, "gap99"])
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %d%s | %d |\n",
			    part[1], part[2], part[3], fmt(med[key, "rate"]),
			    fmt(med[key, "p50"]), fmt(med[key, "p99"]),
			    fmt(med[key, "p999"]), fmt(med[key, "cpu"]), errors[key],
			    failed[key] ? " (" failed[key] " failed)" : "", rounds[key]
		}
		print ""
		table_head("Hand-off: release-to-next-grant, from the holder sending its unlock to the next holder receiving its grant (medians)",
		    "conns>|peer|hand-offs/s>|gap p50 us>|gap p99 us>")
		for (k = 1; k <= nkeys; k++) {
			key = order[k]
			split(key, part, SUBSEP)
			if (part[1] != "handoff")
				continue
			printf "| %s | %s | %s | %s | %s |\n", part[2], part[3],
			    fmt(med[key, "rate"]), fmt(med[key, "gap50"]),
			    fmt(med[key, "gap99"])
		}
		print ""
		table_head("Ratios of median rates (lockd / peer)",
		    "workload|conns>|lockd/redis>|lockd/etcd>|lockd/noop>")
		for (k = 1; k <= nlockd; k++) {
			split(lockd_rows[k], part, SUBSEP)
			w = part[1]; c = part[2]
			printf "| %s | %s | %s | %s | %s |\n", w, c,
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "redis", "rate"]),
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "etcd", "rate"]),
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "noop", "rate"])
		}
	}
	if (nkkeys > 0 || nguards > 0) {
		print ""
		table_head("Lock kinds on one name against Redis Lua scripts (medians over the rounds; cycle = acquire + release; hand-offs: samples summed over the rounds; Redis retries a refused acquire at once)",
		    "workload|conns>|peer|cycles/s>|readers/s>|writers/s>|p50 us>|p99 us>|readers p99 us>|writers p99 us>|hand-offs>|hand-off p50 us>|hand-off p99 us>|retries/cycle>|most holders seen>|overlaps>|errors>|rounds>")
		for (k = 1; k <= nkkeys; k++) {
			key = korder[k]
			split(key, part, SUBSEP)
			if (skipped[key] && !rounds[key]) {
				printf "| %s | %s | %s | skipped |", part[1], part[2], part[3]
				for (f = 5; f <= 18; f++)
					printf " - |"
				printf "\n"
				continue
			}
			nf = split("rate p50 p99 gap50 gap99 rrate wrate rp99 wp99 maxh retry waitmax rwaitmax wwaitmax", fields, " ")
			for (f = 1; f <= nf; f++)
				med[key, fields[f]] = median(vals[key, fields[f]])
			rw = part[1] == "rw"
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %d | %d%s | %d |\n",
			    part[1], part[2], part[3], fmt(med[key, "rate"]),
			    rw ? fmt(med[key, "rrate"]) : "-", rw ? fmt(med[key, "wrate"]) : "-",
			    fmt(med[key, "p50"]), fmt(med[key, "p99"]),
			    rw ? fmt(med[key, "rp99"]) : "-",
			    rw && (med[key, "wrate"] + 0 > 0) ? fmt(med[key, "wp99"]) : "-",
			    handoffs[key], fmt(med[key, "gap50"]), fmt(med[key, "gap99"]),
			    med[key, "retry"] == "" ? "-" : sprintf("%.2f", med[key, "retry"]),
			    med[key, "maxh"] == "" ? "-" : med[key, "maxh"],
			    violations[key], errors[key],
			    failed[key] ? " (" failed[key] " failed)" : "", rounds[key]
		}
		print ""
		if (kinds_unsupported)
			print "lockd: limit=/mode= not supported by this build - skipped"
		# The ratios of every workload lockd ran (a build may take limit=
		# before mode=shared).
		measured = 0
		for (k = 1; k <= nkkeys; k++) {
			split(korder[k], part, SUBSEP)
			if (part[3] == "lockd" && rounds[korder[k]])
				measured++
		}
		if (measured > 0) {
			if (kinds_unsupported)
				print ""
			table_head("Ratios lockd / redis (rates: above 1 means lockd does more; latencies: below 1 means lockd is quicker)",
			    "workload|cycles/s>|readers/s>|writers/s>|p99>|hand-off p50>|hand-off p99>")
			for (k = 1; k <= nkkeys; k++) {
				key = korder[k]
				split(key, part, SUBSEP)
				if (part[3] != "lockd" || !rounds[key])
					continue
				w = part[1]; c = part[2]; rk = w SUBSEP c SUBSEP "redis"
				rw = w == "rw"
				wr = "-"
				if (rw && med[rk, "wrate"] + 0 == 0 && med[key, "wrate"] + 0 > 0)
					wr = "redis none"
				else if (rw)
					wr = ratio(med[key, "wrate"], med[rk, "wrate"])
				printf "| %s | %s | %s | %s | %s | %s | %s |\n", w,
				    ratio(med[key, "rate"], med[rk, "rate"]),
				    rw ? ratio(med[key, "rrate"], med[rk, "rrate"]) : "-",
				    wr,
				    ratio(med[key, "p99"], med[rk, "p99"]),
				    ratio(med[key, "gap50"], med[rk, "gap50"]),
				    ratio(med[key, "gap99"], med[rk, "gap99"])
			}
		}
		print ""
		table_head("The longest wait for a grant (medians over the rounds of the longest of each run, in ms; a request still waiting at the end counts with its wait so far)",
		    "workload|peer|longest wait>|longest of a reader>|longest of a writer>")
		for (k = 1; k <= nkkeys; k++) {
			key = korder[k]
			split(key, part, SUBSEP)
			if (!rounds[key])
				continue
			rw = part[1] == "rw"
			printf "| %s | %s | %s | %s | %s |\n", part[1], part[3],
			    ms(med[key, "waitmax"]), rw ? ms(med[key, "rwaitmax"]) : "-",
			    rw ? ms(med[key, "wwaitmax"]) : "-"
		}
		if (nguards > 0) {
			print ""
			print "The checks, before the rounds: the Redis scripts call by call, then the overlap check against servers broken for it (-B: Redis scripts that admit 17 of 16 permits, a writer that ignores readers; noop: grants everything)"
			print ""
			for (g = 1; g <= nguards; g++)
				print "- " guard_line[g]
		}
	}
	print ""
	print "Scale (lockd)"
	print ""
	if (held != "")
		printf "- %d held locks%s taken at %s/s (%d errors): %s bytes of VmRSS per held lock (%s bytes of it anonymous memory); VmRSS %s KiB\n",
		    held, held_names, fmt(held_rate), held_err, fmt(held_bpl), fmt(held_abpl), held_rss
	if (rec_ms != "")
		printf "- restart with %s held: listening again after %s ms (exec to \"listening on\"; %s ms between its start and listen log lines), recovered held=%s, VmRSS %s KiB\n",
		    rec_locks, rec_ms, rec_log_ms, rec_held, rec_rss
	for (p in idle)
		printf "- %s idle connections on %s: %s bytes of VmRSS per connection (%s anonymous)\n",
		    idle_n[p], p, fmt(idle[p]), fmt(idle_anon[p])
	if (hdr != "")
		printf "- %d holders of %s-permit semaphores taken at %s/s (%d errors): %s bytes of VmRSS per holder (%s bytes of it anonymous memory)\n",
		    hdr, hdr_limit, fmt(hdr_rate), hdr_err, fmt(hdr_bph), fmt(hdr_abph)
	if (scale_skipped != "")
		printf "- skipped (lockd: limit=/mode= not supported by this build):%s\n", scale_skipped
	if (scale_failed != "")
		printf "- FAILED scale runs:%s (see the raw lines)\n", scale_failed
	print ""
	if (nlockd > 0 && (med["cycle", 64, "alt", "rate"] != "" || med["cycle", 1, "alt", "rate"] != "")) {
		table_head("This build against another (alt: LOCKD_ALT, run beside it in every round; ratios of medians)",
		    "workload|conns>|lockd/alt rate>|lockd/noop>|alt/noop>|lockd/redis>|alt/redis>|lockd CPU us/cycle>|alt CPU us/cycle>")
		for (k = 1; k <= nlockd; k++) {
			split(lockd_rows[k], part, SUBSEP)
			w = part[1]; c = part[2]
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, c,
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "alt", "rate"]),
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "noop", "rate"]),
			    ratio(med[w, c, "alt", "rate"], med[w, c, "noop", "rate"]),
			    ratio(med[w, c, "lockd", "rate"], med[w, c, "redis", "rate"]),
			    ratio(med[w, c, "alt", "rate"], med[w, c, "redis", "rate"]),
			    fmt(med[w, c, "lockd", "cpu"]), fmt(med[w, c, "alt", "cpu"])
		}
		print ""
	}
	if (med["cycle", 64, "nometasync", "rate"] != "" || med["cycle", 1, "nometasync", "rate"] != "") {
		table_head("The journal against MDB_NOMETASYNC (nometasync: lockd-faulty, LMDB alone, replies a batch late)",
		    "workload|conns>|nometasync/lockd rate>|lockd p99 us>|nometasync p99 us>|lockd CPU us/cycle>|nometasync CPU us/cycle>")
		for (k = 1; k <= nlockd; k++) {
			split(lockd_rows[k], part, SUBSEP)
			w = part[1]; c = part[2]
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", w, c,
			    ratio(med[w, c, "nometasync", "rate"], med[w, c, "lockd", "rate"]),
			    fmt(med[w, c, "lockd", "p99"]), fmt(med[w, c, "nometasync", "p99"]),
			    fmt(med[w, c, "lockd", "cpu"]), fmt(med[w, c, "nometasync", "cpu"])
		}
		print ""
	}
	for (ti = 1; ti <= 2; ti++) {
	tp = ti == 1 ? "lockd" : "nometasync"
	r64 = med["cycle", 64, tp, "rate"]; r1 = med["cycle", 1, tp, "rate"]
	if (ti == 2 && r64 == "" && r1 == "")
		continue
	print "Targets of the benchmark issue (durable cycles, medians)" (ti == 2 ? ": nometasync" : "")
	print ""
	e64 = errors["cycle", 64, tp] + failed["cycle", 64, tp]
	if (r64 != "") {
		x = ratio(r64, med["cycle", 64, "redis", "rate"])
		target("64 conns, >= 2x redis", x, x + 0 >= 2)
		x = ratio(r64, med["cycle", 64, "etcd", "rate"])
		target("64 conns, >= 20x etcd", x, x + 0 >= 20)
		x = ratio(r64, med["cycle", 64, "noop", "rate"])
		target("64 conns, >= 0.85 of no-op", x, x + 0 >= 0.85)
		target("64 conns, zero errors", sprintf("%d", e64), e64 == 0)
		x = med["cycle", 64, tp, "cpu"]; y = med["cycle", 64, "noop", "cpu"]
		target("64 conns, server CPU per cycle <= 1.15x the no-op",
		    fmt(x) " vs " fmt(y) " us (" ratio(x, y) "x)",
		    y + 0 > 0 && x / y <= 1.15)
		x = med["cycle", 64, tp, "p99"]; y = med["cycle", 64, "redis", "p99"]
		target("64 conns, p99 <= redis p99", fmt(x) " vs " fmt(y) " us",
		    x + 0 <= y + 0)
	}
	if (r1 != "") {
		x = ratio(r1, med["cycle", 1, "redis", "rate"])
		target("1 conn, >= 1.2x redis", x, x + 0 >= 1.2)
	}
	if (ti == 2) {
		print ""
		continue
	}
	if (held_bpl != "")
		target("<= 200 bytes per held lock", fmt(held_bpl),
		    held_bpl + 0 <= 200)
	if (idle["lockd"] != "")
		target("<= 16 KiB per idle connection", fmt(idle["lockd"]) " bytes",
		    idle["lockd"] + 0 <= 16384)
	if (rec_ms != "")
		target("recovery of " rec_locks " held locks < 2 s", rec_ms " ms",
		    rec_ms + 0 < 2000)
	print ""
	}
	if (disk["lmdb_commit_us"] != "" && disk["append_sync_us"] != "") {
		print ""
		print "The floor the disk sets under a durable cycle (bench/flushcost.c, medians of 200)"
		print ""
		printf "- lockd: one journal record, a write in place and an fdatasync (one bare flush), %s us; at checkpoints, an LMDB commit: %s us for one record, %s us for 32; Redis: two appends with fdatasync, 2 x %s us\n",
		    disk["overwrite_sync_us"], disk["lmdb_commit_us"], disk["lmdb_commit_32_us"], disk["append_sync_us"]
		printf "- so, counting the disk alone, lockd can reach at most %s x the rate of Redis-always at one connection (both also pay two round trips per cycle; with a commit per batch in LMDB, as before the journal: %s x)\n",
		    ratio(2 * disk["append_sync_us"], disk["overwrite_sync_us"]), ratio(2 * disk["append_sync_us"], disk["lmdb_commit_us"])
		if (disk["lmdb_nometasync_us"] != "")
			printf "- LMDB with MDB_NOMETASYNC: a commit (data and an fdatasync, the meta page unsynced) %s us; with mdb_env_sync after it, %s us\n",
			    disk["lmdb_nometasync_us"], disk["lmdb_nometasync_sync_us"]
	}
}' "$1"
