#!/bin/bash
# cron-tls.sh - the README's multi-machine cron example, run end to end:
# the crontab line is taken from README.md as it stands and run as cron
# would run it, against a lockd with --tls-cert and --auth on a free
# loopback port, with a CA, a server certificate for locks.internal and a
# token made here.  Only what cannot be the same on this machine is
# replaced: the host (locks.internal -> 127.0.0.1:PORT; the certificate
# still has to name locks.internal, through --server-name), the files
# under /etc/lockd/ and the job.
#
# Two "machines" start the line at once: one runs the job, the other
# skips silently (exit 1), as -n says; then a later run gets the lock
# with a higher fence.  A wrong token and a wrong CA are refused.
# Ends with the line "N passed, N failed".
#
# Usage: tests/docs/cron-tls.sh BUILD_DIR
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

line=$(grep -m1 '^\*/5 .* lockctl .*lockds://' "$top/README.md")
if [ -z "$line" ]; then
	echo "FAILED: no lockds:// crontab line in README.md"
	echo "0 passed, 1 failed"
	exit 1
fi
# Five time fields and the user, then the command, as cron runs it.
command=$(echo "$line" | cut -d' ' -f7-)

# ---- a CA, lockd's certificate for locks.internal, a token -------------
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=ca \
	2>/dev/null
openssl req -x509 $ec -keyout other.key -out other.pem -days 2 \
	-subj /CN=other 2>/dev/null
openssl req $ec -keyout server.key -out server.csr -subj /CN=locks.internal \
	2>/dev/null
printf 'subjectAltName=DNS:locks.internal\n' > ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	-out server.pem -days 2 -extfile ext 2>/dev/null
openssl rand -hex 32 > reports.token
chmod 600 reports.token
printf 'reports %s lock reports/\n' \
	"$(tr -d '\n' < reports.token | sha256sum | cut -d' ' -f1)" > auth

"$build/lockd" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
	--journal-size 65536 \
	--tls-cert server.pem --tls-key server.key --auth auth \
	2>"$tmp/lockd.log" &
pid=$!
port=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*event=listen addr=127.0.0.1:\([0-9]*\).*/\1/p' \
		"$tmp/lockd.log" | head -1)
	[ -n "$port" ] && break
	sleep 0.05
done
if [ -z "$port" ]; then
	echo "FAILED: lockd did not start"; cat "$tmp/lockd.log"
	echo "0 passed, 1 failed"
	exit 1
fi

# The job: notes its fence, then takes a while.
cat > build-reports <<'JOB'
#!/bin/sh
echo "$LOCKD_FENCE" >> "$JOBLOG"
sleep 1.5
JOB
chmod +x build-reports
export JOBLOG=$tmp/job.log

# The line with this machine's paths.
cmd=${command//lockds:\/\/locks.internal/lockds://127.0.0.1:$port --server-name locks.internal}
cmd=${cmd//\/etc\/lockd\//$tmp\/}
cmd=${cmd//\/usr\/local\/bin\/build-reports/$tmp\/build-reports}
cmd=${cmd//lockctl /$build/lockctl }
case "$cmd" in
*/etc/*|*locks.internal\ run*|*/usr/local/*)
	bad "could not adapt the README line: $cmd" ;;
esac

# Two machines at the same minute.
bash -c "$cmd" >a.out 2>a.err & a=$!
bash -c "$cmd" >b.out 2>b.err & b=$!
wait $a; ra=$?
wait $b; rb=$?
if { [ $ra = 0 ] && [ $rb = 1 ]; } || { [ $ra = 1 ] && [ $rb = 0 ]; }; then
	ok "two machines: one ran the job, the other skipped (exit 1)"
else
	bad "two machines exited $ra and $rb: $(cat a.err b.err)"
fi
if [ ! -s a.err ] && [ ! -s b.err ]; then
	ok "-n skipped silently"
else
	bad "stderr: $(cat a.err b.err)"
fi
if [ "$(wc -l < job.log)" = 1 ]; then
	ok "the job ran once"
else
	bad "the job ran $(wc -l < job.log) times"
fi

# The next run, after the first ended, gets the lock with a higher fence.
if bash -c "$cmd" >c.out 2>c.err && [ "$(wc -l < job.log)" = 2 ] &&
    [ "$(sed -n 2p job.log)" -gt "$(sed -n 1p job.log)" ]; then
	ok "the next run got a higher fence ($(tr '\n' ' ' < job.log))"
else
	bad "the next run: $(cat c.err), fences $(tr '\n' ' ' < job.log)"
fi

# A wrong token is refused (exit 70), a wrong CA unreachable (69).
echo "not-the-token" > wrong.token
wrong=${cmd//$tmp\/reports.token/$tmp\/wrong.token}
bash -c "$wrong" >/dev/null 2>d.err
rc=$?
if [ $rc = 70 ] && grep -q "AUTH refused" d.err; then
	ok "a wrong token is refused (70)"
else
	bad "a wrong token: exit $rc, $(cat d.err)"
fi
other=${cmd//$tmp\/ca.pem/$tmp\/other.pem}
bash -c "$other" >/dev/null 2>e.err
rc=$?
if [ $rc = 69 ] && grep -q "certificate" e.err; then
	ok "a server not signed by the CA is refused (69)"
else
	bad "a wrong CA: exit $rc, $(cat e.err)"
fi
if [ "$(wc -l < job.log)" = 2 ]; then
	ok "no refused run ran the job"
else
	bad "a refused run ran the job"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
