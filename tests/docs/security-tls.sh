#!/bin/bash
# security-tls.sh - docs/security.md's "Setting up TLS and tokens, step by
# step", run in order as a reader would: every sh block of that section,
# as it stands, in one empty directory.  A block with a `lockd` command
# (setup A, then setup B) stops the lockd before it and starts its own on
# a free loopback port; every other block runs with bash -e and must
# succeed, its lockctl talking to the lockd of the block before.  Only
# what cannot be the same on this machine is replaced: the address
# (0.0.0.0:7420 -> 127.0.0.1:0; lockds://lockd.example.net ->
# 127.0.0.1:PORT, with --server-name lockd.example.net, which the
# certificate must still name), /etc/lockd/ and /var/lib/lockd.
#
# Then what the section says of the two setups is checked: setup A
# refuses the certificate-only principal (70); setup B refuses setup A's
# token-only client (69) with the words the section shows.
# Ends with the line "N passed, N failed".
#
# Usage: tests/docs/security-tls.sh BUILD_DIR [TOP]
# (TOP, the tree whose docs/security.md is run, defaults to this one.)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
top=$(cd "${2:-$here}" && pwd)
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
pid=""
stop_lockd() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		pid=""
	fi
}
cleanup() {
	if [ -n "$pid" ]; then
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/work" "$tmp/etc" "$tmp/blocks" "$tmp/bin"
cat > "$tmp/bin/lockctl" <<SH
#!/bin/sh
exec "$build/lockctl" "\$@"
SH
chmod +x "$tmp/bin/lockctl"

# ---- the section's blocks, in order: N.sh, and a line "N TAG LINE" -------
awk -v dir="$tmp/blocks" '
/^## / { in_section = ($0 ~ /^## Setting up TLS and tokens, step by step/) }
!in_section { next }
!inb && /^```/ { inb = 1; n++; tag = substr($0, 4); line = FNR
	body = sprintf("%s/%02d.sh", dir, n); printf "" > body; next }
inb && /^```/ { inb = 0; close(body); printf "%02d %s %d\n", n, tag, line; next }
inb { print > body }
' "$top/docs/security.md" > "$tmp/index"
if ! grep -q ' sh ' "$tmp/index"; then
	echo "FAILED: no sh block in docs/security.md's step-by-step section"
	echo "0 passed, 1 failed"
	exit 1
fi

# Backslash-continued lines joined, then this machine's paths.
adapt() {
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$1" |
	sed -e "s|/etc/lockd/|$tmp/etc/|g; s|/etc/lockd\\b|$tmp/etc|g" \
	    -e "s|/var/lib/lockd|$tmp/data|g" \
	    -e "s|0\\.0\\.0\\.0:7420|127.0.0.1:0|g" \
	    -e "s|lockds://lockd\\.example\\.net|lockds://127.0.0.1:$port --server-name lockd.example.net|g"
}

port=""
setups=0
while read -r n tag line; do
	[ "$tag" = sh ] || continue
	where="docs/security.md:$line"
	adapt "$tmp/blocks/$n.sh" > "$tmp/blocks/$n.run"
	if grep -q '^lockd ' "$tmp/blocks/$n.run"; then
		stop_lockd
		setups=$((setups + 1))
		# lockd in the background; anything else of the block before.
		sed -i "s|^lockd \\(.*\\)|\"$build/lockd\" \\1 2>\"$tmp/lockd.log\" \\& echo \$! > \"$tmp/lockd.pid\"|" \
		    "$tmp/blocks/$n.run"
		: > "$tmp/lockd.log"
		(cd "$tmp/work" && bash -e "$tmp/blocks/$n.run") \
		    >"$tmp/out" 2>&1
		pid=$(cat "$tmp/lockd.pid" 2>/dev/null)
		port=""
		for _ in $(seq 200); do
			port=$(sed -n 's/.*event=listen addr=127.0.0.1:\([0-9]*\).*/\1/p' \
			    "$tmp/lockd.log" | head -1)
			[ -n "$port" ] && break
			sleep 0.05
		done
		if [ -n "$port" ]; then
			ok "$where: lockd started as the section says (setup $setups)"
		else
			bad "$where: lockd did not start: $(cat "$tmp/out" "$tmp/lockd.log")"
			break
		fi
		continue
	fi
	if (cd "$tmp/work" && PATH=$tmp/bin:$PATH timeout 30 \
	    bash -e "$tmp/blocks/$n.run") >"$tmp/out" 2>&1; then
		ok "$where: ran${port:+ against lockd in setup $setups}"
	else
		bad "$where: failed:
$(sed 's/^/    /' "$tmp/out")"
	fi
done < "$tmp/index"
if [ "$setups" -ne 2 ]; then
	bad "the section starts lockd $setups times, not twice (setups A and B)"
fi

# ---- what the section says of each setup ----------------------------------
# Setup B is up: setup A's token-only client is refused, and told why.
words=$(grep -o 'the server requires a client certificate[^)]*)' \
    "$top/docs/security.md" | head -1)
lc() { (cd "$tmp/work" && "$build/lockctl" -H "lockds://127.0.0.1:$port" \
    --server-name lockd.example.net --ca ca.pem "$@"); }
if [ -n "$port" ]; then
	lc --token-file "$tmp/etc/cron.token" try cron/other >/dev/null \
	    2>"$tmp/err"
	rc=$?
	if [ $rc = 69 ] && [ -n "$words" ] && grep -qF "$words" "$tmp/err"; then
		ok "setup B refuses a token-only client (69) with the section's words"
	else
		bad "setup B, a token-only client: exit $rc, '$(cat "$tmp/err")'; the section says '$words'"
	fi
	# Setup A again: a certificate names no principal there.
	stop_lockd
	"$build/lockd" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
	    --tls-cert "$tmp/work/server.pem" --tls-key "$tmp/work/server.key" \
	    --auth "$tmp/etc/auth" 2>"$tmp/lockd.log" &
	pid=$!
	port=""
	for _ in $(seq 200); do
		port=$(sed -n 's/.*event=listen addr=127.0.0.1:\([0-9]*\).*/\1/p' \
		    "$tmp/lockd.log" | head -1)
		[ -n "$port" ] && break
		sleep 0.05
	done
	lc --cert backup.pem --key backup.key try backup/other >/dev/null \
	    2>"$tmp/err"
	rc=$?
	if [ $rc = 70 ] && grep -q DENIED "$tmp/err"; then
		ok "setup A refuses the certificate-only principal (70, DENIED)"
	else
		bad "setup A, backup's certificate: exit $rc, '$(cat "$tmp/err")'"
	fi
fi
stop_lockd

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
