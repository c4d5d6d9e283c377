#!/bin/sh
# check-deb.sh - the Debian packages, built by `make deb`, installed with
# dpkg -i on this machine, used, and purged again:
#   - make deb builds lockd, liblockd0, liblockd-dev, lockctl and
#     python3-lockd, lintian finds no error in them, and the symbols file
#     lists exactly what liblockd.so.0 exports;
#   - they install; the installed units pass systemd-analyze verify (and a
#     copy whose ExecStart names a missing program does not: the check can
#     fail); the config is a conffile;
#   - the installed /usr/bin/lockd serves a loopback port from a temporary
#     data directory; a program built only through the installed
#     `pkg-config --cflags --libs lockd` (examples/fenced_write.c) runs
#     against it on the installed liblockd.so.0, and so does a fully static
#     one built with docs/client.md's command (lockd-static.pc); the
#     installed lockctl takes and releases a lock; where systemd runs, the
#     unit starts and answers on 127.0.0.1:7420 too;
#   - the Python client: python3-lockd is what `import lockd` finds, and
#     the Python suite (all but the cluster files) passes against it; the
#     route client/python/README.md gives for a virtual environment
#     installs it offline, and plain pip is refused as the README says;
#   - dpkg --purge removes every file they brought, the lock store the
#     service keeps in /var/lib/lockd (made here as systemd would where
#     systemd does not run) and the enablement links: no path named
#     lockd*, liblockd* or lockctl* is left that was not there before.
# It installs into the live system, so it runs only as root and only where
# none of the five packages is installed (nor left as config-files): on a
# developer's machine that has them it skips, saying why, and touches
# nothing.  Two runs at once (two clones' make test) build side by side
# and take turns from the install to the purge (flock on a file in /tmp).
# Ends with the line "N passed, N failed".
#
# Usage: tests/packaging/check-deb.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
packages="lockd liblockd0 liblockd-dev lockctl python3-lockd"
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }
skip() {
	echo "skipped: $1"
	echo "deb: $passed passed, $failed failed, 1 skipped"
	exit 0
}

if [ "$(id -u)" -ne 0 ]; then
	skip "installing packages needs root (run make test as root, as CI does)"
fi

# Skips when any of the packages is on this machine (not by this test).
skip_if_present() {
	present=""
	names=""
	for p in $packages; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || s=""
		case "$s" in
		"" | not-installed) ;;
		*) present="$present $p ($s)"; names="$names $p" ;;
		esac
	done
	if [ -n "$present" ]; then
		skip "already on this machine:$present. This test installs and purges them, so it leaves a machine that has them alone; to run it, first: dpkg --purge$names"
	fi
}
# One run at a time on this machine from the install to the purge: the
# installed packages are the machine's.  Another run's turn is short (no
# build in it), so the wait is bounded by 10 minutes.  The first look is
# taken in turn too, so that another run's install is not taken for the
# machine's.
exec 9>/tmp/lockd-check-deb.lock
take_turn() {
	flock -w 600 9 && return 0
	bad "another check-deb.sh held /tmp/lockd-check-deb.lock for 10 minutes"
	echo "deb: $passed passed, $failed failed"
	exit 1
}
take_turn
skip_if_present
flock -u 9

tmp=$(mktemp -d)
pid=""
installed=0
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	# Whatever happened, the machine gets back what it had: none of them.
	# shellcheck disable=SC2086
	[ "$installed" = 1 ] && dpkg_retry --purge $packages >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# dpkg refuses at once while another dpkg or apt-get holds its lock (other
# work on the machine installing packages): wait for it, at most 5 min.
dpkg_retry() {
	n=0
	while :; do
		dpkg "$@" >"$tmp/dpkg.log" 2>&1 && return 0
		grep -q 'lock' "$tmp/dpkg.log" || { cat "$tmp/dpkg.log"; return 1; }
		n=$((n + 1))
		[ $n -ge 150 ] && { cat "$tmp/dpkg.log"; return 1; }
		sleep 2
	done
}

# The paths that could be the packages': before, and after the purge.
ours() {
	for d in /etc /lib/systemd /usr/bin /usr/include /usr/lib /usr/share/doc \
	    /usr/share/man /var/lib /run; do
		find "$d" \( -name 'lockd*' -o -name 'liblockd*' -o -name 'lockctl*' \) \
		    -print 2>/dev/null
	done | sort
}

cd "$top" || exit 1
start=$(date +%s)
if make --no-print-directory deb >"$tmp/make.log" 2>&1; then
	ok "make deb builds the packages ($(($(date +%s) - start)) s)"
else
	bad "make deb: $(tail -15 "$tmp/make.log")"
	echo "deb: $passed passed, $failed failed"
	exit 1
fi
debs=""
for p in $packages; do
	f=""
	for g in build/deb/"${p}"_*.deb; do [ -e "$g" ] && f=$g; done
	if [ -z "$f" ]; then
		bad "no build/deb/${p}_*.deb"
	else
		debs="$debs $f"
	fi
done

# lintian: errors fail; warnings are shown.
if lintian --version >/dev/null 2>&1; then
	lintian --allow-root build/deb/*.changes >"$tmp/lintian.log" 2>&1
	if grep -q '^E:' "$tmp/lintian.log"; then
		bad "lintian errors: $(grep '^E:' "$tmp/lintian.log")"
	else
		ok "lintian: no errors ($(grep -c '^W:' "$tmp/lintian.log") warnings)"
	fi
	grep '^W:' "$tmp/lintian.log" | sed 's/^/  lintian /'
else
	bad "lintian is not installed (tools/deps.sh test installs it)"
fi

# The symbols file is the library's ABI: every export, nothing else.
lib=$(find build/deb/src/debian/liblockd0 -name 'liblockd.so.0' | head -1)
nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' |
	grep -v '^LIBLOCKD_' | sort > "$tmp/exports"
sed -n 's/^ \([a-z_0-9]*\)@LIBLOCKD_0 .*/\1/p' debian/liblockd0.symbols |
	sort > "$tmp/symbols"
if [ -s "$tmp/exports" ] && cmp -s "$tmp/exports" "$tmp/symbols"; then
	ok "debian/liblockd0.symbols lists exactly liblockd.so.0's $(wc -l < "$tmp/exports") exports"
else
	bad "debian/liblockd0.symbols and liblockd.so.0 differ (< exported only, > listed only; add new names with the version they ship in):
$(diff "$tmp/exports" "$tmp/symbols" | grep '^[<>]')"
fi

# This run's turn, to the end (the lock is released when the shell exits).
take_turn
skip_if_present
ours > "$tmp/before"

# shellcheck disable=SC2086
if [ -n "$debs" ] && installed=1 && dpkg_retry -i $debs; then
	ok "dpkg -i installs $packages"
else
	bad "dpkg -i: $(tail -5 "$tmp/dpkg.log")"
	echo "deb: $passed passed, $failed failed"
	exit 1
fi
# The file lists, for the purge check.
for p in $packages; do
	dpkg -L "$p" >> "$tmp/files"
done

if dpkg-query -W -f='${Conffiles}\n' lockd | grep -q '^ /etc/lockd/lockd.conf '; then
	ok "/etc/lockd/lockd.conf is a conffile"
else
	bad "/etc/lockd/lockd.conf is not a conffile of lockd"
fi
# The conffile is the sample, whose header names /etc/lockd/lockd.conf and
# whose defaults tests/docs/check-docs.sh holds to lockd's.
if cmp -s systemd/lockd.conf /etc/lockd/lockd.conf &&
    head -n 1 /etc/lockd/lockd.conf | grep -q '^# /etc/lockd/lockd.conf - '; then
	ok "/etc/lockd/lockd.conf is systemd/lockd.conf, its header naming itself"
else
	bad "/etc/lockd/lockd.conf differs from systemd/lockd.conf: $(head -n 1 /etc/lockd/lockd.conf)"
fi
unit=/lib/systemd/system/lockd.service
if grep -q '^ExecStart=/usr/bin/lockd --config /etc/lockd/lockd.conf$' "$unit" &&
    grep -q '^DynamicUser=yes$' "$unit" && grep -q '^StateDirectory=lockd$' "$unit"; then
	ok "the unit runs /usr/bin/lockd with /etc/lockd/lockd.conf as a DynamicUser"
else
	bad "$unit: ExecStart, DynamicUser or StateDirectory is not as packaged"
fi
if out=$(systemd-analyze verify --man=no "$unit" /lib/systemd/system/lockd.socket 2>&1); then
	ok "systemd-analyze verify passes the installed units"
else
	bad "systemd-analyze verify: $out"
fi
sed 's|^ExecStart=/usr/bin/lockd|ExecStart=/usr/bin/lockd-missing|' "$unit" \
	> "$tmp/lockd.service"
if systemd-analyze verify --man=no "$tmp/lockd.service" >/dev/null 2>&1; then
	bad "systemd-analyze verify passes a unit whose program is missing: the check cannot fail"
else
	ok "systemd-analyze verify rejects a unit whose program is missing"
fi

# Packages are plain builds, even from make test SANITIZE=1.
if ldd /usr/bin/lockd /usr/lib/x86_64-linux-gnu/liblockd.so.0 | grep -q -E 'libasan|libubsan'; then
	bad "the packaged lockd or liblockd is built with the sanitizers"
else
	ok "the packaged lockd and liblockd are plain builds (no sanitizer)"
fi

# The installed lockd, on a free loopback port with its own data.
/usr/bin/lockd --listen 127.0.0.1:0 --data-dir "$tmp/data" --journal-size 65536 \
	2>"$tmp/lockd.log" &
pid=$!
port=""
i=0
while [ $i -lt 100 ] && [ -z "$port" ]; do
	port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/lockd.log")
	[ -z "$port" ] && sleep 0.05
	i=$((i + 1))
done
if [ -n "$port" ]; then
	ok "the installed /usr/bin/lockd listens on 127.0.0.1:$port"
else
	bad "the installed lockd did not start: $(tail -3 "$tmp/lockd.log")"
fi

# A user's program: the installed header and library, found by pkg-config
# alone (no PKG_CONFIG_PATH, no -I, no rpath).
# shellcheck disable=SC2046
if cc -Wall -Werror -o "$tmp/fenced_write" examples/fenced_write.c \
    $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs lockd) 2>"$tmp/cc.log"; then
	ok "examples/fenced_write.c builds with pkg-config --cflags --libs lockd ($(env -u PKG_CONFIG_PATH pkg-config --cflags --libs lockd | tr -s ' '))"
else
	bad "building against the installed lockd.pc: $(cat "$tmp/cc.log")"
fi
so=$(ldd "$tmp/fenced_write" 2>/dev/null | sed -n 's/.*liblockd.so.0 => \([^ ]*\).*/\1/p')
if [ "$so" = "/usr/lib/x86_64-linux-gnu/liblockd.so.0" ] ||
    [ "$so" = "/lib/x86_64-linux-gnu/liblockd.so.0" ]; then
	ok "it runs on the installed liblockd.so.0 ($so)"
else
	bad "it does not load the installed liblockd.so.0: '$so'"
fi
if [ -n "$port" ] && timeout 30 "$tmp/fenced_write" 127.0.0.1 "$port" >"$tmp/fw.log" 2>&1; then
	ok "fenced_write runs against the installed lockd"
else
	bad "fenced_write against the installed lockd: $(tail -5 "$tmp/fw.log")"
fi
# Fully static, exactly as docs/client.md says (cc -static, lockd-static.pc).
# shellcheck disable=SC2046
if cc -static -o "$tmp/fenced_write_static" examples/fenced_write.c \
    $(pkg-config --static --cflags --libs lockd-static) 2>"$tmp/cc2.log" &&
    ! ldd "$tmp/fenced_write_static" >/dev/null 2>&1 &&
    timeout 30 "$tmp/fenced_write_static" 127.0.0.1 "$port" >"$tmp/fw2.log" 2>&1; then
	ok "a fully static program (cc -static ... pkg-config --static --cflags --libs lockd-static) runs against it"
else
	bad "cc -static with lockd-static.pc: $(grep -v -e 'warning: Using' -e 'in function' "$tmp/cc2.log" | tail -5; tail -5 "$tmp/fw2.log" 2>/dev/null)"
fi

# The installed lockctl.
got=$(timeout 10 /usr/bin/lockctl -p "$port" acquire -l 30s deb/check 2>&1)
handle=$(echo "$got" | sed -n 's/.*handle=\([^ ]*\).*/\1/p')
st=$(timeout 10 /usr/bin/lockctl -p "$port" status deb/check 2>&1)
rel=$(timeout 10 /usr/bin/lockctl -p "$port" release deb/check "$handle" 2>&1)
# shellcheck disable=SC2016  # the command's shell expands it
ran=$(timeout 10 /usr/bin/lockctl -p "$port" run -w 5s deb/check -- \
	sh -c 'echo "fence=$LOCKD_FENCE"' 2>&1)
if [ -n "$handle" ] && echo "$st" | grep -q 'held=1' && [ "$rel" = released ] &&
    echo "$ran" | grep -q '^fence=[0-9]'; then
	ok "the installed lockctl acquires, shows, releases and runs under a lock ($got; $ran)"
else
	bad "lockctl: acquire '$got' status '$st' release '$rel' run '$ran'"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""

# The Python client as a Debian user gets it.  The tests run from a copy
# without the tree's lockd/ beside them (conftest.py puts its parent
# first on sys.path), so `import lockd` can only find the package's.
py=/usr/bin/python3
mkdir -p "$tmp/py" && cp -r client/python/tests "$tmp/py/tests"
where=$(cd "$tmp/py" && "$py" -c 'import lockd; print(lockd.__file__)' 2>&1)
if [ "$where" = /usr/lib/python3/dist-packages/lockd/__init__.py ]; then
	ok "python3-lockd: import lockd finds $where"
else
	bad "python3-lockd: import lockd gives '$where'"
fi
# The cluster files need etcd and minutes; one test needs lockd-faulty,
# which make test builds (elsewhere it is left out, and said so); the pip
# test is the source tree's (the venv route below is checked here).
deselect="--deselect tests/test_sync.py::test_the_package_installs_with_pip"
faulty=$top/build/tests/lockd-faulty
if [ ! -x "$faulty" ]; then
	deselect="$deselect --deselect tests/test_sync.py::test_err_unavailable_from_a_failing_store"
	echo "note: no $faulty: its one Python test is left out"
fi
# shellcheck disable=SC2086
(cd "$tmp/py" && PYTHONDONTWRITEBYTECODE=1 LOCKD_BIN=/usr/bin/lockd \
    LOCKD_FAULTY_BIN=$faulty timeout 300 "$py" -m pytest -q \
    -p no:cacheprovider --ignore tests/test_failover.py \
    --ignore tests/test_tls_auth_cluster.py $deselect tests) \
    >"$tmp/pytest.log" 2>&1
status=$?
summary=$(tail -n 1 "$tmp/pytest.log")
passed_py=$(echo "$summary" | sed -n 's/^=* *\([0-9][0-9]*\) passed.*/\1/p')
if [ "$status" -eq 0 ] && [ "${passed_py:-0}" -ge 60 ]; then
	ok "the Python suite passes against python3-lockd and /usr/bin/lockd ($summary)"
else
	bad "the Python suite against python3-lockd (exit $status): $(tail -15 "$tmp/pytest.log")"
fi
# A virtual environment, offline, as client/python/README.md says.
cp -r client/python "$tmp/pysrc" && rm -rf "$tmp/pysrc/build" "$tmp/pysrc"/*.egg-info
if "$py" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 &&
    "$tmp/venv/bin/pip" install -q --no-index --no-build-isolation \
    "$tmp/pysrc" >>"$tmp/venv.log" 2>&1 &&
    where=$(cd / && "$tmp/venv/bin/python" -c 'import lockd; print(lockd.__file__)') &&
    case $where in "$tmp/venv/"*) true ;; *) false ;; esac; then
	ok "pip install --no-index --no-build-isolation in a --system-site-packages venv works offline"
else
	bad "the venv route: $(tail -5 "$tmp/venv.log") ${where:-}"
fi
if "$py" -m pip install --dry-run "$tmp/pysrc" >"$tmp/pip.log" 2>&1; then
	bad "plain pip install client/python was not refused (the README says it is)"
elif grep -q externally-managed-environment "$tmp/pip.log"; then
	ok "plain pip install client/python is refused: externally-managed-environment"
else
	bad "plain pip install client/python failed otherwise: $(tail -3 "$tmp/pip.log")"
fi

# The unit itself, where systemd is the init (not in a container without it).
state=$(systemctl is-system-running 2>/dev/null)
# The packaged config listens on 127.0.0.1:7420; a lockd of the user's
# (make run) may serve there already, and the unit could not start.
if ss -Htln 'sport = :7420' 2>/dev/null | grep -q .; then
	state="port-7420-taken"
fi
case "$state" in
port-7420-taken)
	echo "note: 127.0.0.1:7420 is taken (a lockd of make run?): the units" \
	    "were verified and the daemon started directly, not the unit"
	;;
running | degraded)
	if systemctl start lockd.service && systemctl is-active -q lockd.service &&
	    timeout 10 /usr/bin/lockctl ping | grep -q pong; then
		ok "systemctl start lockd.service: it answers on 127.0.0.1:7420"
	else
		bad "lockd.service: $(systemctl status lockd.service --no-pager 2>&1 | tail -5)"
	fi
	systemctl stop lockd.service
	;;
*)
	echo "note: systemd is not running here (is-system-running: '$state'):" \
	    "the units were verified, the daemon started directly, not the unit"
	;;
esac

# The store the service leaves, so that the purge must remove it: where
# systemd ran the unit above it is there; elsewhere it is made as the
# unit's StateDirectory= with DynamicUser=yes makes it (a directory in
# /var/lib/private, and the link /var/lib/lockd), with a real store in it.
made_private=0
if [ ! -e /var/lib/lockd ]; then
	[ -d /var/lib/private ] || { mkdir -m 0700 /var/lib/private && made_private=1; }
	/usr/bin/lockd --listen 127.0.0.1:0 --data-dir /var/lib/private/lockd \
		--journal-size 65536 \
		2>"$tmp/state.log" &
	pid=$!
	i=0
	while [ $i -lt 100 ] && ! grep -q 'listening on' "$tmp/state.log"; do
		sleep 0.05
		i=$((i + 1))
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=""
	ln -s private/lockd /var/lib/lockd
fi
if [ -e /var/lib/lockd/data.mdb ]; then
	ok "a store is in /var/lib/lockd (-> $(readlink /var/lib/lockd)) for the purge to remove"
else
	bad "no store in /var/lib/lockd before the purge: $(tail -3 "$tmp/state.log" 2>/dev/null)"
fi

# shellcheck disable=SC2086
if dpkg_retry --purge $packages; then
	installed=0
	ok "dpkg --purge removes $packages"
else
	bad "dpkg --purge: $(tail -5 "$tmp/dpkg.log")"
fi
left=""
while read -r f; do
	# Directories dpkg lists that were there before (/usr/bin, and /lib,
	# a link to usr/lib) stay; new ones are the `ours` check's.
	[ -d "$f" ] && continue
	{ [ -e "$f" ] || [ -L "$f" ]; } && left="$left $f"
done < "$tmp/files"
# New paths are what the purge left; one that went away meanwhile was
# another program's (say another test's lockd socket in /run), not ours.
ours > "$tmp/after"
new=$(comm -13 "$tmp/before" "$tmp/after" | tr '\n' ' ')
if [ -z "$left" ] && [ -z "$new" ]; then
	ok "nothing of the packages is left ($(grep -vc '^$' "$tmp/files") paths were installed)"
else
	bad "left after the purge:$left $new"
fi

# /var/lib/private is systemd's and the purge leaves it; this test made it.
[ "$made_private" = 1 ] && rmdir /var/lib/private

echo "deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
