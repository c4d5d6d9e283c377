#!/bin/sh
# check-install.sh - `make install DESTDIR=...` installs exactly the
# expected files; a program built only from the installed lockd.h and
# lockd.pc links (shared and static) and talks to a real lockd; `make
# uninstall` removes exactly what was installed, and the directories it
# made but for the common ones of /usr and /usr/local.  The config goes to
# $(PREFIX)/etc, or /etc for PREFIX=/usr, and its first line names where
# it went; an install into the live system (no DESTDIR) runs ldconfig, a
# staged one does not.  Ends with the line "N passed, N failed".
#
# Usage: tests/systemd/check-install.sh BUILD_DIR [CFLAGS...]
# (the CFLAGS of that build, e.g. the sanitizer flags, for the test program)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
shift
extra="$*"
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
pid=""
out=""
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
root=$tmp/root
prefix=/usr/local

cd "$top" || exit 1
# A stand-in for ldconfig that only says it ran.
cat > "$tmp/ldconfig" <<'SH'
#!/bin/sh
echo "ldconfig $*" >> "${0%/*}/ldconfig.calls"
SH
chmod +x "$tmp/ldconfig"

if make --no-print-directory -s install DESTDIR="$root" B="$build" \
    LDCONFIG="$tmp/ldconfig" >"$tmp/install.log" 2>&1; then
	ok "make install DESTDIR"
else
	bad "make install: $(tail -3 "$tmp/install.log")"
fi

expected="usr/local/bin/lockctl
usr/local/bin/lockd
usr/local/etc/lockd/lockd.conf
usr/local/include/lockd.h
usr/local/include/lockd_uv.h
usr/local/lib/liblockd.a
usr/local/lib/liblockd.so
usr/local/lib/liblockd.so.0
usr/local/lib/pkgconfig/lockd-static.pc
usr/local/lib/pkgconfig/lockd.pc
usr/local/lib/systemd/system/lockd.service
usr/local/lib/systemd/system/lockd.socket
usr/local/share/man/man1/lockctl.1
usr/local/share/man/man3/liblockd.3
usr/local/share/man/man8/lockd.8"
got=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
if [ "$got" = "$expected" ]; then
	ok "the installed files are exactly the expected ones"
else
	printf '%s\n' "$expected" > "$tmp/expected"
	printf '%s\n' "$got" > "$tmp/got"
	bad "installed files differ (- expected, + installed):
$(diff "$tmp/expected" "$tmp/got" | grep '^[<>]' | sed 's/^</-/; s/^>/+/')"
fi
if grep -q "ExecStart=$prefix/bin/lockd --config $prefix/etc/lockd/lockd.conf\$" \
    "$root$prefix/lib/systemd/system/lockd.service"; then
	ok "the installed unit runs the installed lockd with the installed config"
else
	bad "the installed unit does not run $prefix/bin/lockd --config $prefix/etc/lockd/lockd.conf"
fi
if [ -e "$tmp/ldconfig.calls" ]; then
	bad "a staged install (DESTDIR) ran ldconfig"
else
	ok "a staged install (DESTDIR) leaves ldconfig to the package"
fi

# The directories left in DIR after an uninstall, one a line, sorted.
dirs_left() {
	(cd "$1" && find . -mindepth 1 -type d | sed 's|^\./||' | sort)
}
# The installed config's first line names the file itself.
conf_names_itself() { # file path
	head -n 1 "$1" 2>/dev/null | grep -q "^# $2 - "
}
if conf_names_itself "$root$prefix/etc/lockd/lockd.conf" \
    "$prefix/etc/lockd/lockd.conf"; then
	ok "the installed config's header names $prefix/etc/lockd/lockd.conf"
else
	bad "the installed config's header does not name $prefix/etc/lockd/lockd.conf: $(head -n 2 "$root$prefix/etc/lockd/lockd.conf" 2>&1)"
fi

# SYSCONFDIR follows PREFIX (GNU), except that PREFIX=/usr uses /etc (as
# in the Debian package, debian/rules).  Uninstalled, a prefix of lockd's
# own leaves no directory; /usr only the common ones.
for p in /opt/lockd:/opt/lockd/etc:opt /usr:/etc:usr; do
	pre=${p%%:*}
	etc=${p#*:}
	left_ok=${etc#*:}
	etc=${etc%%:*}
	stage=$tmp/stage$(echo "$pre" | tr / _)
	make --no-print-directory -s install DESTDIR="$stage" B="$build" \
	    PREFIX="$pre" LDCONFIG="$tmp/ldconfig" >"$tmp/stage.log" 2>&1
	confs=$(cd "$stage" 2>/dev/null && find . -name lockd.conf | sed 's|^\.||')
	if [ "$confs" = "$etc/lockd/lockd.conf" ] &&
	    grep -q "ExecStart=$pre/bin/lockd --config $etc/lockd/lockd.conf\$" \
	    "$stage$pre/lib/systemd/system/lockd.service"; then
		ok "PREFIX=$pre: the config is $etc/lockd/lockd.conf, and the unit says so"
	else
		bad "PREFIX=$pre: config at '$confs', expected $etc/lockd/lockd.conf; $(tail -2 "$tmp/stage.log")"
	fi
	if conf_names_itself "$stage$etc/lockd/lockd.conf" \
	    "$etc/lockd/lockd.conf"; then
		ok "PREFIX=$pre: the config's header names $etc/lockd/lockd.conf"
	else
		bad "PREFIX=$pre: the config's header does not name $etc/lockd/lockd.conf: $(head -n 2 "$stage$etc/lockd/lockd.conf" 2>&1)"
	fi
	make --no-print-directory -s uninstall DESTDIR="$stage" B="$build" \
	    PREFIX="$pre" >"$tmp/stage.log" 2>&1
	if [ "$pre" = /usr ]; then
		left_ok="etc
usr
usr/bin
usr/include
usr/lib
usr/share
usr/share/man"
	fi
	left=$(dirs_left "$stage")
	if [ "$left" = "$left_ok" ]; then
		ok "PREFIX=$pre: make uninstall leaves the directories it made only where the system has them ($(echo $left))"
	else
		bad "PREFIX=$pre: directories left after uninstall: $(echo $left) (expected $(echo $left_ok))"
	fi
done

# A program that knows lockd only through the installed files.
cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <lockd.h>

int
main(int argc, char **argv)
{
	lockd_options o;
	lockd_context *c;
	lockd_lease l;

	memset(&o, 0, sizeof(o));
	o.host = "127.0.0.1";
	o.port = argc > 1 ? atoi(argv[1]) : 7420;
	o.connect_timeout_ms = 2000;
	o.command_timeout_ms = 2000;
	c = lockd_connect(&o);
	if (c == NULL || c->err) {
		fprintf(stderr, "connect: %s\n", c ? c->errstr : "oom");
		return 1;
	}
	if (lockd_acquire(c, "installed/hello", 0, 1000, 0, &l) != 0) {
		fprintf(stderr, "acquire: %s\n", c->errstr);
		return 1;
	}
	printf("fence=%llu\n", (unsigned long long)l.fence);
	if (lockd_release(c, &l) != 0)
		return 1;
	lockd_free(c);
	return 0;
}
C
sed -i 's|#include <stdio.h>|#include <stdio.h>\n#include <stdlib.h>|' "$tmp/hello.c"
pcdir=$root$prefix/lib/pkgconfig
# The .pc names $prefix; point pkg-config at the staged copy.
pcflags="--define-variable=prefix=$root$prefix"
# shellcheck disable=SC2086
if cc $extra -o "$tmp/hello" "$tmp/hello.c" \
    $(PKG_CONFIG_PATH=$pcdir pkg-config $pcflags --cflags --libs lockd) \
    -Wl,-rpath,"$root$prefix/lib" 2>"$tmp/cc.log"; then
	ok "a program builds from the installed lockd.h and lockd.pc (shared)"
else
	bad "shared build: $(cat "$tmp/cc.log")"
fi
# shellcheck disable=SC2086
if cc $extra -o "$tmp/hello-static" "$tmp/hello.c" \
    $(PKG_CONFIG_PATH=$pcdir pkg-config $pcflags --static --cflags lockd) \
    "$root$prefix/lib/liblockd.a" \
    $(PKG_CONFIG_PATH=$pcdir pkg-config $pcflags --static --libs-only-l lockd | sed 's/-llockd//') \
    2>"$tmp/cc2.log"; then
	ok "a program builds from the installed static liblockd.a"
else
	bad "static build: $(cat "$tmp/cc2.log")"
fi

"$root$prefix/bin/lockd" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
	--journal-size 65536 \
	2>"$tmp/lockd.log" &
pid=$!
port=""
i=0
while [ $i -lt 100 ] && [ -z "$port" ]; do
	port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/lockd.log")
	[ -z "$port" ] && sleep 0.05
	i=$((i + 1))
done
if [ -n "$port" ] && out=$(timeout 10 "$tmp/hello" "$port") &&
    [ "$out" = "fence=1" ] && out=$(timeout 10 "$tmp/hello-static" "$port") &&
    [ "$out" = "fence=2" ]; then
	ok "the installed lockd serves programs built against the installed library"
else
	bad "talking to the installed lockd (port '$port'): $out"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""

make --no-print-directory -s uninstall DESTDIR="$root" B="$build" \
    >"$tmp/uninstall.log" 2>&1
left=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||')
if [ -z "$left" ]; then
	ok "make uninstall removes every installed file"
else
	bad "left after uninstall: $left"
fi
# /usr/local's common directories stay (Debian has them before any
# install); every other one install made goes.
left=$(dirs_left "$root")
common="usr
usr/local
usr/local/bin
usr/local/etc
usr/local/include
usr/local/lib
usr/local/share
usr/local/share/man"
if [ "$left" = "$common" ]; then
	ok "make uninstall removes the directories it made but /usr/local's common ones"
else
	bad "directories left after uninstall: $(echo $left) (expected $(echo $common))"
fi

# Into the live system (no DESTDIR; a prefix in the temporary directory):
# ldconfig runs, so a program linked against liblockd.so.0 can start.
live=$tmp/live
[ -e /etc/lockd/lockd.conf ] && had_etc=1 || had_etc=0
if make --no-print-directory -s install PREFIX="$live" B="$build" \
    LDCONFIG="$tmp/ldconfig" >"$tmp/live.log" 2>&1 &&
    grep -q '^ldconfig *$' "$tmp/ldconfig.calls" 2>/dev/null; then
	ok "make install without DESTDIR runs ldconfig"
else
	bad "make install without DESTDIR did not run ldconfig: $(cat "$tmp/ldconfig.calls" "$tmp/live.log" 2>/dev/null | tail -3)"
fi
if [ "$had_etc" = 0 ] && [ -e /etc/lockd/lockd.conf ]; then
	bad "make install PREFIX=$live wrote /etc/lockd/lockd.conf"
fi
make --no-print-directory -s uninstall PREFIX="$live" B="$build" \
    >/dev/null 2>&1
if [ -e "$live" ]; then
	bad "make uninstall PREFIX=$live left: $(dirs_left "$live" | tr '\n' ' ')"
else
	ok "make uninstall PREFIX=$live removes the prefix it made"
fi

echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
