#!/bin/sh
# check-nspawn.sh - the Debian packages under a real systemd: a Debian 12
# root booted by systemd-nspawn with systemd as PID 1 and its own network
# namespace (so the shipped config's 127.0.0.1:7420 is the container's),
# driven the way an operator does, through apt, systemctl and journalctl:
#   - apt installs lockd, lockctl and python3-lockd; lockd.service is
#     enabled and started, and active only after lockd said READY=1 (its
#     listening line comes before systemd's "Started"); it runs as a
#     DynamicUser with its store in /var/lib/private/lockd;
#   - lockctl, a raw socket and the Python client use the shipped
#     config's address; a held lock's fence survives `systemctl restart`
#     and `systemctl kill -s SIGKILL` (Restart= brings lockd back), and the
#     next grant is higher;
#   - stop is clean and quick with a holder and a waiter connected (the
#     waiter gets ERR SHUTDOWN); journalctl -u lockd shows its key=value
#     lines; `systemctl reload lockd` keeps it serving;
#   - a broken /etc/lockd/lockd.conf makes `systemctl restart` fail with
#     the reason in the journal and no restart loop; fixing it recovers;
#   - socket activation as docs/operations.md gives it (enable the socket,
#     stop the service, start both in one call); lockd starts on a
#     connection; a
#     reboot with both enabled starts both; a reinstall (upgrade) keeps
#     the socket listening and restarts lockd;
#   - systemd-analyze security rates the live unit 1.0 or lower;
#   - apt purge removes the units (none left loaded, not even the socket),
#     the config and the store.
# The root is built once per machine (debootstrap, about 2 minutes) into
# /var/cache/lockd-tests/bookworm-root, with the packages' dependencies in
# it, atomically (a temporary directory renamed); each run boots an
# overlay of it and throws the overlay away.  Where nspawn cannot run (not
# root, no systemd-nspawn, a boot that never reaches "running") it skips
# with one line saying which checks would have run.
# Ends with the line "N passed, N failed".
#
# Usage: tests/systemd/check-nspawn.sh [DEB_DIR]
# DEB_DIR holds lockd_*.deb, lockctl_*.deb and python3-lockd_*.deb (a
# deliberately broken set shows the checks failing); without it the
# packages are build/deb's, rebuilt by `make deb` when older than a file
# of the tree.  LOCKD_TEST_ROOT overrides the cached root's path.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${LOCKD_TEST_ROOT:-/var/cache/lockd-tests/bookworm-root}
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }
checks="install and enable, READY=1, DynamicUser and state, locks through
lockctl and a raw socket, fences across restart and SIGKILL, a clean stop
with a waiter, the journal, reload, a broken config, socket activation,
a reboot with both units, an upgrade under socket activation, systemd-analyze
security, apt purge"
skip() {
	echo "skipped: $1; would have run: $(echo "$checks" | tr '\n' ' ')"
	echo "systemd: $passed passed, $failed failed, 1 skipped"
	exit 0
}
finish() {
	echo "systemd: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

[ "$(id -u)" -eq 0 ] || skip "systemd-nspawn needs root"
command -v systemd-nspawn >/dev/null 2>&1 ||
	skip "no systemd-nspawn (tools/deps.sh test installs systemd-container)"
command -v debootstrap >/dev/null 2>&1 || [ -d "$cache" ] ||
	skip "no debootstrap to build the root (tools/deps.sh test installs it)"

tmp=$(mktemp -d /var/tmp/lockd-nspawn.XXXXXX)
nspawn=""
cpid=""
helpers=""
cleanup() {
	for p in $helpers; do kill "$p" 2>/dev/null; done
	stop_container
	umount "$tmp/root" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the packages -----------------------------------------------------------
cd "$top" || exit 1
debs=${1:-}
if [ -z "$debs" ]; then
	debs=build/deb
	newest=""
	for f in build/deb/lockd_*.deb; do [ -e "$f" ] && newest=$f; done
	# A file of the tree newer than the packages makes them stale.
	stale=yes
	if [ -n "$newest" ] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		stale=$(git ls-files -z --cached --others --exclude-standard |
		    xargs -0 -r sh -c 'find "$@" -maxdepth 0 -newer "'"$newest"'" 2>/dev/null' sh |
		    head -1)
	fi
	if [ -n "$stale" ]; then
		start=$(date +%s)
		if make --no-print-directory deb >"$tmp/make.log" 2>&1; then
			ok "make deb builds the packages ($(($(date +%s) - start)) s)"
		else
			bad "make deb: $(tail -15 "$tmp/make.log")"
			finish
		fi
	fi
fi
debs=$(cd "$debs" && pwd)
for p in lockd lockctl python3-lockd; do
	set -- "$debs/${p}"_*.deb
	[ -e "$1" ] || { bad "no ${p}_*.deb in $debs"; finish; }
done

# ---- the root: built once, atomically ---------------------------------------
# What the root must hold so that apt needs no network: systemd, and the
# packages' dependencies (their first alternatives, without versions).
wanted=$({
	echo systemd
	echo dbus
	for f in "$debs"/lockd_*.deb "$debs"/lockctl_*.deb \
	    "$debs"/python3-lockd_*.deb; do
		dpkg-deb -f "$f" Depends
	done | tr ',' '\n'
} | sed 's/|.*//; s/(.*//; s/:any//; s/ //g' | grep -v '^$' | sort -u)
mkdir -p "$(dirname "$cache")"
exec 9>"$(dirname "$cache")/.lock"
flock -w 900 9 || { bad "the root's lock $(dirname "$cache")/.lock was held for 15 minutes"; finish; }
missing=""
for p in $wanted; do
	dpkg-query --admindir="$cache/var/lib/dpkg" -W -f='${Status}' "$p" \
	    2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	# The mirror apt uses here.
	mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' \
	    /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
	[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(http[^ ]*\) bookworm .*/\1/p' \
	    /etc/apt/sources.list 2>/dev/null | head -1)
	mirror=${mirror:-http://deb.debian.org/debian}
	new=$(mktemp -d "$cache.tmp.XXXXXX")
	start=$(date +%s)
	# shellcheck disable=SC2086
	include=$(echo $wanted | tr ' ' ',')
	if debootstrap --variant=minbase --include="$include" bookworm "$new" \
	    "$mirror" >"$tmp/debootstrap.log" 2>&1; then
		[ -d "$cache" ] && mv "$cache" "$cache.old.$$"
		mv "$new" "$cache"
		rm -rf "$cache.old.$$"
		ok "built the root $cache from $mirror in $(($(date +%s) - start)) s ($(du -sh "$cache" | cut -f1); for:$missing)"
	else
		rm -rf "$new"
		flock -u 9
		skip "debootstrap could not build the root from $mirror: $(tail -1 "$tmp/debootstrap.log")"
	fi
fi
flock -u 9

# ---- the container ----------------------------------------------------------
# An overlay over the cached root (a copy where overlayfs is missing); the
# packages are bound read-only at /debs.
mkdir -p "$tmp/upper" "$tmp/work" "$tmp/root"
if ! mount -t overlay overlay -o "lowerdir=$cache,upperdir=$tmp/upper,workdir=$tmp/work" \
    "$tmp/root" 2>/dev/null; then
	cp -a --reflink=auto "$cache/." "$tmp/root/"
fi
machine=test-lockd-$$   # not lockd*: check-deb.sh looks for leftovers so named

boot() {
	SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 setsid systemd-nspawn --quiet \
	    --register=no --keep-unit --private-network -M "$machine" \
	    -D "$tmp/root" --bind-ro="$debs:/debs" --boot \
	    >>"$tmp/console.log" 2>&1 </dev/null &
	nspawn=$!
	cpid=""
	i=0
	while [ $i -lt 300 ]; do
		kill -0 "$nspawn" 2>/dev/null || return 1
		cpid=$(ps --ppid "$nspawn" -o pid= | tr -d ' ' | head -1)
		if [ -n "$cpid" ]; then
			case $(in_ct systemctl is-system-running 2>/dev/null) in
			running | degraded) return 0 ;;
			esac
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
stop_container() {
	[ -n "$nspawn" ] || return 0
	kill -TERM "$nspawn" 2>/dev/null
	i=0
	while kill -0 "$nspawn" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL "$nspawn" 2>/dev/null
	wait "$nspawn" 2>/dev/null
	nspawn=""
}
# A command inside the container, with its PATH and no pager or colours.
in_ct() {
	nsenter -t "$cpid" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	    LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 \
	    DEBIAN_FRONTEND=noninteractive "$@"
}
sh_ct() { in_ct /bin/sh -c "$1"; }
# One request and its one-line reply over a raw TCP connection (bash).
raw() {
	in_ct timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/7420 || exit 1
	    printf "%s\n" "$1" >&3; read -r line <&3; echo "$line"' raw "$1"
}
show() { in_ct systemctl show -p "$2" --value "$1"; }
# Waits up to $2 tenths of a second for `sh_ct "$1"` to succeed.
wait_ct() {
	i=0
	while [ $i -lt "$2" ]; do
		sh_ct "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
field() { echo "$2" | sed -n "s/.*$1=\\([^ ]*\\).*/\\1/p"; }

start=$(date +%s)
if ! boot; then
	skip "systemd-nspawn could not boot $cache to running: $(tail -3 "$tmp/console.log" | tr '\n' ' ')"
fi
ok "systemd-nspawn booted $cache (systemd $(in_ct systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p') as PID 1) in $(($(date +%s) - start)) s"

# ---- install, enable, start -------------------------------------------------
if sh_ct 'timeout 150 apt-get install -y -q /debs/lockd_*.deb \
    /debs/lockctl_*.deb /debs/python3-lockd_*.deb' >"$tmp/apt.log" 2>&1; then
	ok "apt-get install ./lockd ./lockctl ./python3-lockd (no network: the root has their dependencies)"
else
	bad "apt-get install: $(tail -5 "$tmp/apt.log")"
	finish
fi
en=$(in_ct systemctl is-enabled lockd.service lockd.socket | tr '\n' ' ')
act=$(in_ct systemctl is-active lockd.service | tr -d '\n')
if [ "$en" = "enabled disabled " ] && [ "$act" = active ]; then
	ok "lockd.service is enabled and active, lockd.socket is disabled (opt-in)"
else
	bad "after install: is-enabled service, socket: $en; is-active: $act
$(in_ct journalctl -u lockd --no-pager -n 8 -o cat)"
fi
# Active only after READY=1: Type=notify, lockd's STATUS= text arrived
# over the notify socket, and lockd listened before systemd said Started.
journal=$(in_ct journalctl -u lockd --no-pager -o cat)
order=$(echo "$journal" | grep -n -E 'event=listen |Started lockd' | cut -d: -f2- |
    sed 's/.*event=listen .*/listen/; s/.*Started lockd.*/started/' | head -2 | tr '\n' ' ')
stext=$(show lockd StatusText)
if [ "$(show lockd Type)" = notify ] && [ "$order" = "listen started " ] &&
    case $stext in serving*) true ;; *) false ;; esac; then
	ok "active only after READY=1: lockd listened before systemd's Started ($stext)"
else
	bad "READY=1: Type=$(show lockd Type), order in the journal '$order', StatusText '$stext'"
fi
# A DynamicUser: a uid from systemd's dynamic range, no passwd entry, and
# the store in /var/lib/private/lockd behind the link /var/lib/lockd.
mainpid=$(show lockd MainPID)
uid=$(sh_ct "sed -n 's/^Uid:[[:space:]]*\\([0-9]*\\).*/\\1/p' /proc/$mainpid/status")
state=$(sh_ct 'readlink /var/lib/lockd; stat -c "%u %a" /var/lib/private/lockd; ls /var/lib/private/lockd' 2>&1 | tr '\n' ' ')
if [ -n "$uid" ] && [ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] &&
    ! sh_ct 'grep -q "^lockd:" /etc/passwd' &&
    [ "$(show lockd DynamicUser)" = yes ] &&
    echo "$state" | grep -q "^private/lockd $uid 700 .*data.mdb"; then
	ok "lockd runs as a dynamic user (uid $uid, not in /etc/passwd), its store in /var/lib/private/lockd (/var/lib/lockd -> $state)"
else
	bad "dynamic user and state: MainPID $mainpid uid '$uid', DynamicUser=$(show lockd DynamicUser), /var/lib/lockd: $state"
fi

# ---- locks through the shipped config's address -----------------------------
got=$(in_ct timeout 10 lockctl acquire -l 5m sysd/held 2>&1)
fence1=$(field fence "$got")
handle=$(field handle "$got")
st=$(raw "STATUS sysd/held")
py=$(in_ct timeout 10 python3 -c 'import lockd
c = lockd.Client("127.0.0.1", 7420, connect_timeout=2, command_timeout=2)
print(c.status("sysd/held").fence)' 2>&1)
if [ -n "$fence1" ] && [ -n "$handle" ] &&
    echo "$st" | grep -q "^STATUS sysd/held held=1 fence=$fence1 "; then
	if [ "$py" = "$fence1" ]; then
		ok "lockctl, a raw socket and python3-lockd reach 127.0.0.1:7420 (fence=$fence1; $st)"
	else
		bad "python3-lockd against the service: $py"
	fi
else
	bad "locks through 127.0.0.1:7420: lockctl '$got', raw '$st'"
fi

in_ct systemctl restart lockd
pid2=$(show lockd MainPID)
st=$(raw "STATUS sysd/held")
if [ "$pid2" != "$mainpid" ] && echo "$st" | grep -q "held=1 fence=$fence1 "; then
	ok "the held lock survives systemctl restart (pid $mainpid -> $pid2; $st)"
else
	bad "after systemctl restart (pid $mainpid -> $pid2): $st"
fi
restarts=$(show lockd NRestarts)
in_ct systemctl kill -s SIGKILL lockd
# Restart=on-failure, RestartSec=1s: a new main process within seconds.
wait_ct "[ \"\$(systemctl show -p MainPID --value lockd)\" != $pid2 ] &&
    [ \"\$(systemctl show -p MainPID --value lockd)\" != 0 ] &&
    systemctl -q is-active lockd" 150
pid3=$(show lockd MainPID)
st=$(raw "STATUS sysd/held")
if [ "$(show lockd NRestarts)" -gt "$restarts" ] && [ "$pid3" != "$pid2" ] &&
    echo "$st" | grep -q "held=1 fence=$fence1 "; then
	ok "after systemctl kill -s SIGKILL, Restart= brings lockd back (pid $pid3) with the lock held ($st)"
else
	bad "after SIGKILL: NRestarts $(show lockd NRestarts), pid $pid2 -> $pid3, $st"
fi
rel=$(in_ct timeout 10 lockctl release sysd/held "$handle" 2>&1)
got=$(in_ct timeout 10 lockctl acquire -l 5m sysd/held 2>&1)
fence2=$(field fence "$got")
if [ "$rel" = released ] && [ -n "$fence2" ] && [ "$fence2" -gt "$fence1" ]; then
	ok "the next grant is higher: fence $fence1 -> $fence2"
else
	bad "release '$rel', next grant '$got' (fence before: $fence1)"
fi

# ---- stop with clients connected, the journal, reload -----------------------
# A holder and a waiter, each on its own connection, kept open.
in_ct bash -c 'exec 3<>/dev/tcp/127.0.0.1/7420 || exit 1
    printf "ACQUIRE sysd/q lease=60s\n" >&3; read -r l <&3; echo "$l" >/tmp/holder
    read -r l <&3; echo "$l" >>/tmp/holder' >/dev/null 2>&1 &
helpers="$helpers $!"
wait_ct 'grep -q GRANTED /tmp/holder' 50
in_ct bash -c 'exec 3<>/dev/tcp/127.0.0.1/7420 || exit 1
    printf "ACQUIRE sysd/q lease=60s wait=60s\n" >&3; read -r l <&3; echo "$l" >/tmp/waiter' \
    >/dev/null 2>&1 &
helpers="$helpers $!"
wait_ct 'lockctl status sysd/q | grep -q "queue=1"' 50
queued=$(in_ct timeout 5 lockctl status sysd/q 2>&1)
t0=$(date +%s%N)
in_ct timeout 20 systemctl stop lockd
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
wait_ct 'test -s /tmp/waiter' 30
waiter=$(sh_ct 'cat /tmp/waiter' 2>&1)
result=$(show lockd Result)
if echo "$queued" | grep -q 'queue=1' && [ "$ms" -lt 5000 ] &&
    [ "$result" = success ] && [ "$(show lockd ExecMainStatus)" = 0 ] &&
    echo "$waiter" | grep -q '^ERR SHUTDOWN'; then
	ok "systemctl stop with a holder and a queued waiter: clean (exit 0) in $ms ms; the waiter got '$waiter'"
else
	bad "stop: $ms ms, Result=$result, exit $(show lockd ExecMainStatus), queued '$queued', waiter '$waiter'"
fi
journal=$(in_ct journalctl -u lockd --no-pager -o cat)
kv=""
for e in start recovered listen stopping stop; do
	echo "$journal" | grep -q "^ts=[0-9T:.-]*Z level=[a-z]* event=$e\( \|$\)" ||
	    kv="$kv $e"
done
if [ -z "$kv" ]; then
	ok "journalctl -u lockd shows lockd's key=value lines (start, recovered, listen, stopping, stop)"
else
	bad "journalctl -u lockd lacks the key=value lines of:$kv
$(echo "$journal" | tail -5)"
fi

in_ct systemctl start lockd
pid4=$(show lockd MainPID)
if out=$(in_ct timeout 20 systemctl reload lockd 2>&1) &&
    [ "$(show lockd MainPID)" = "$pid4" ] &&
    in_ct systemctl -q is-active lockd &&
    in_ct timeout 5 lockctl ping 2>&1 | grep -q pong; then
	ok "systemctl reload lockd: SIGHUP, the same process (pid $pid4) serves on"
else
	bad "systemctl reload lockd: '$out' $(in_ct systemctl status lockd --no-pager 2>&1 | grep -E 'Process|Active' | tr -s ' ')"
fi

# ---- a broken config --------------------------------------------------------
# The starts above count towards the start limit (5 in 10 s) as an
# operator's would not: begin this part with a fresh count, so that what
# it sees is lockd's own restarts.
in_ct systemctl reset-failed lockd
sh_ct 'cp /etc/lockd/lockd.conf /tmp/lockd.conf.good
    echo "max-lease = forever" >> /etc/lockd/lockd.conf'
restarts=$(show lockd NRestarts)
if in_ct timeout 30 systemctl restart lockd >/dev/null 2>&1; then
	bad "systemctl restart with a broken lockd.conf succeeded"
else
	# A restart loop would show within RestartSec=1s: give it 2.5 s.
	sleep 2.5
	reason=$(in_ct journalctl -u lockd --no-pager -o cat -n 20 | grep -m1 'lockd:.*max-lease')
	now=$(in_ct systemctl is-active lockd)
	if [ -n "$reason" ] && [ "$now" = failed ] &&
	    [ "$(show lockd NRestarts)" = "$restarts" ] &&
	    [ "$(show lockd ExecMainStatus)" = 2 ]; then
		ok "a broken lockd.conf: systemctl restart fails, exit 2, no restart loop; the journal says '$reason'"
	else
		bad "a broken lockd.conf: state '$now', NRestarts $restarts -> $(show lockd NRestarts), exit $(show lockd ExecMainStatus), reason '$reason'"
	fi
fi
sh_ct 'cp /tmp/lockd.conf.good /etc/lockd/lockd.conf'
if in_ct timeout 30 systemctl start lockd && in_ct timeout 5 lockctl ping 2>&1 | grep -q pong; then
	ok "fixing lockd.conf: systemctl start lockd serves again"
else
	bad "after fixing lockd.conf: $(in_ct systemctl status lockd --no-pager 2>&1 | tail -3)"
fi

# ---- security ---------------------------------------------------------------
sec=$(in_ct systemd-analyze security --no-pager lockd.service 2>&1 |
    sed -n 's/.*Overall exposure level for lockd.service: \([0-9.]*\).*/\1/p')
if [ -n "$sec" ] && [ "$(echo "$sec <= 1.0" | awk '{ print ($1 <= $3) }')" = 1 ]; then
	ok "systemd-analyze security rates the running lockd.service $sec (at most 1.0)"
else
	bad "systemd-analyze security: exposure '$sec'"
fi

# ---- socket activation, as docs/operations.md gives it ----------------------
pid5=$(show lockd MainPID)
if in_ct systemctl enable -q lockd.socket >"$tmp/sock.log" 2>&1 &&
    in_ct timeout 30 systemctl stop lockd.service >>"$tmp/sock.log" 2>&1 &&
    in_ct timeout 30 systemctl start lockd.socket lockd.service >>"$tmp/sock.log" 2>&1 &&
    [ "$(in_ct systemctl is-active lockd.socket lockd.service | tr '\n' ' ')" = "active active " ] &&
    [ "$(show lockd MainPID)" != "$pid5" ] &&
    in_ct timeout 5 lockctl ping 2>&1 | grep -q pong; then
	ok "systemctl enable lockd.socket; stop lockd.service; start lockd.socket lockd.service: both active, lockd serves"
else
	bad "socket activation as documented: $(cat "$tmp/sock.log") $(in_ct systemctl status lockd.socket --no-pager 2>&1 | grep -E 'Active|refusing')"
fi
in_ct systemctl stop lockd.service 2>/dev/null
st=$(raw "STATUS sysd/held")
if in_ct systemctl -q is-active lockd.service && echo "$st" | grep -q "held=1 fence=$fence2 "; then
	ok "with lockd stopped, a connection to the socket starts it ($st)"
else
	bad "socket activation on a connection: service $(in_ct systemctl is-active lockd.service), '$st'"
fi
if in_ct journalctl -u lockd --no-pager -o cat -n 30 | grep -q 'event=listen_ignored'; then
	bad "lockd logged listen_ignored under the shipped socket and config"
else
	ok "the shipped socket and config agree (no listen_ignored)"
fi

# A reboot with both enabled: the socket first, lockd on it.
stop_container
start=$(date +%s)
if boot; then
	states=$(in_ct systemctl is-active lockd.socket lockd.service | tr '\n' ' ')
	failedu=$(in_ct systemctl list-units --failed --no-legend --plain 'lockd*' 2>&1)
	st=$(raw "STATUS sysd/held")
	if [ "$states" = "active active " ] && [ -z "$failedu" ] &&
	    echo "$st" | grep -q "held=1 fence=$fence2 "; then
		ok "a reboot ($(($(date +%s) - start)) s) with service and socket enabled starts both, none failed ($st)"
	else
		bad "after a reboot: socket, service: $states; failed: $failedu; $(in_ct journalctl -b -u lockd.socket --no-pager -o cat | tail -3)"
	fi
else
	bad "the container did not boot again: $(tail -3 "$tmp/console.log")"
	finish
fi

# An upgrade (the same packages again): the socket listens on, lockd
# restarts on it.
sock_since=$(show lockd.socket ActiveEnterTimestampMonotonic)
pid6=$(show lockd MainPID)
if sh_ct 'timeout 150 apt-get install -y -q --reinstall /debs/lockd_*.deb' \
    >"$tmp/apt.log" 2>&1; then
	states=$(in_ct systemctl is-active lockd.socket lockd.service | tr '\n' ' ')
	st=$(raw "STATUS sysd/held")
	if [ "$states" = "active active " ] &&
	    [ "$(show lockd.socket ActiveEnterTimestampMonotonic)" = "$sock_since" ] &&
	    [ "$(show lockd MainPID)" != "$pid6" ] &&
	    echo "$st" | grep -q "held=1 fence=$fence2 "; then
		ok "an upgrade (apt-get install --reinstall) restarts lockd and the socket listens on throughout ($st)"
	else
		bad "after an upgrade: socket, service: $states; socket active since $sock_since -> $(show lockd.socket ActiveEnterTimestampMonotonic); pid $pid6 -> $(show lockd MainPID); $st"
	fi
else
	bad "apt-get install --reinstall: $(tail -5 "$tmp/apt.log")"
fi

# ---- purge ------------------------------------------------------------------
if in_ct timeout 150 apt-get purge -y -q lockd lockctl python3-lockd \
    >"$tmp/apt.log" 2>&1; then
	units=$(in_ct systemctl list-units --all --no-legend --plain 'lockd*' 2>&1)
	left=$(sh_ct 'ls -d /etc/lockd /var/lib/lockd /var/lib/private/lockd \
	    /lib/systemd/system/lockd* /etc/systemd/system/*/lockd* \
	    /usr/bin/lockd /usr/lib/python3/dist-packages/lockd 2>/dev/null')
	conn=$(raw "PING" 2>/dev/null)
	if [ -z "$units" ] && [ -z "$left" ] && [ -z "$conn" ]; then
		ok "apt purge (socket in use) removes units, config and store; no unit is left loaded, 7420 is closed"
	else
		bad "after apt purge: units '$units'; files '$left'; 7420 answers '$conn'"
	fi
else
	bad "apt-get purge: $(tail -5 "$tmp/apt.log")"
fi

finish
