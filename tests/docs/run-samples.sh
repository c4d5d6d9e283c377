#!/bin/bash
# run-samples.sh - every code sample in README.md and docs/*.md is built
# and run the way a reader would, against a lockd this script starts on a
# free loopback port (7420 in a sample becomes that port).  A fenced
# block's info string says what it is:
#
#   ```c        a whole program: compiled through the build tree's lockd.pc
#               (pkg-config, nothing else) with -Wall -Wextra -Werror, then
#               run; it must exit 0
#   ```sh       shell: run by bash -e in an empty directory, with lockd,
#               lockctl and nc on PATH (lockctl talks to the test's lockd)
#   ```python   a whole Python program: run by Debian's /usr/bin/python3
#               with the lockd package from client/python on its path, in
#               an empty directory; it must exit 0
#   ```go       a whole Go program (package main): built against the
#               module in client/go, offline, and run; it must exit 0
#   ```conf     a lockd config file: lockd must start with it
#   ```console  a session: "$ nc HOST PORT", then request and reply lines in
#               turn; each request is sent and its reply must match (numbers
#               and handles may differ; a handle the sample uses is mapped
#               to the one lockd gave)
#   ```text     not code: diagrams, synopses, output, crontab lines
#
# An HTML comment on the line before the fence changes that:
#   <!-- sample: fragment (why) -->  not a whole program or not runnable
#       here (it installs, or runs for hours): C is wrapped in main() and
#       compiled, shell is parsed (bash -n), Python is compiled, Go is
#       parsed (gofmt -e); none is run
#   <!-- sample: stub NAME... -->     the shell sample calls NAME, a
#       stand-in for the reader's own command: it becomes a no-op
# A block with no info string, or one not listed, fails: every block must
# say what it is; so does an indented (unfenced) code block.  systemd/lockd.conf is checked as a conf sample too.
# The Python and Go clients' pages, client/python/README.md and
# client/go/README.md, are read with the docs.
# Ends with the line "N passed, N failed".
#
# Usage: tests/docs/run-samples.sh BUILD_DIR [CFLAGS...]
# (the CFLAGS of that build, e.g. the sanitizer flags, for the C samples)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
shift
extra="$*"
passed=0
failed=0
texts=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
pid=""
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$top" || exit 1

# ---- the lockd the samples talk to -----------------------------------------
"$build/lockd" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
	--journal-size 65536 \
	2>"$tmp/lockd.log" &
pid=$!
port=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' \
	    "$tmp/lockd.log")
	[ -n "$port" ] && break
	sleep 0.05
done
if [ -z "$port" ]; then
	echo "FAILED: lockd did not start: $(cat "$tmp/lockd.log")"
	echo "samples: 0 passed, 1 failed"
	exit 1
fi

# lockctl on PATH talks to that lockd unless the sample says otherwise.
mkdir -p "$tmp/bin" "$tmp/stubs"
cat > "$tmp/bin/lockctl" <<SH
#!/bin/sh
exec "$build/lockctl" -p $port "\$@"
SH
ln -s "$build/lockd" "$tmp/bin/lockd"
chmod +x "$tmp/bin/lockctl"

# ---- extraction --------------------------------------------------------------
# One file per block, $tmp/s/N, and a line "N<TAB>FILE:LINE<TAB>TAG<TAB>MARK"
# in $tmp/index.
mkdir -p "$tmp/s"
awk -v dir="$tmp/s" '
FNR == 1 { inb = 0; prev = "" }
!inb && /^ *```/ {
	inb = 1; n++
	tag = $0; sub(/^ *```/, "", tag); sub(/[ \t].*$/, "", tag)
	mark = ""
	if (prev ~ /^<!-- sample:.*-->/) {
		mark = prev; sub(/^<!-- sample: */, "", mark)
		sub(/ *-->.*$/, "", mark)
	}
	body = sprintf("%s/%03d", dir, n)
	printf "" > body
	printf "%03d\t%s:%d\t%s\t%s\n", n, FILENAME, FNR, tag, mark
	next
}
inb && /^ *```/ { inb = 0; close(body); prev = ""; next }
inb { print > body; next }
{ prev = $0 }
' README.md docs/*.md client/python/README.md client/go/README.md \
    > "$tmp/index"
# Markdown's other code block, four spaces in after a blank line, would
# escape all this: it must be fenced.
awk '/^ *```/ { inb = !inb } !inb && blank && /^    [^ *+-]/ {
	printf "%s:%d\n", FILENAME, FNR } { blank = ($0 ~ /^ *$/) }' \
    README.md docs/*.md client/python/README.md client/go/README.md \
    > "$tmp/indented"
while read -r where; do
	bad "$where: an indented code block: fence it with an info string"
done < "$tmp/indented"
n=$(($(wc -l < "$tmp/index") + 1))
cp systemd/lockd.conf "$tmp/s/$n"
printf '%s\tsystemd/lockd.conf:1\tconf\t\n' "$n" >> "$tmp/index"

with_port() { sed -E "s/(^|[^0-9])7420([^0-9]|$)/\\1$port\\2/g" "$1"; }
# Replies with their numbers and handles made alike.
normal() { sed -E 's/[0-9]+-[0-9a-f]{16}/H/g; s/[0-9]+/N/g'; }

run_c() {    # where body mark
	local src=$tmp/$1.c prog=$tmp/$1.bin log=$tmp/$1.log flags
	flags=$(PKG_CONFIG_PATH=$build/pkgconfig pkg-config --cflags --libs lockd)
	case $4 in
	fragment*)
		{ grep '^#include' "$3"
		  printf '#include <stdint.h>\n#include <stdio.h>\n'
		  printf '#include <stdlib.h>\n#include <string.h>\n'
		  printf 'int main(void);\nint\nmain(void)\n{\n'
		  grep -v '^#include' "$3"
		  printf 'return 0;\n}\n'; } > "$src"
		# shellcheck disable=SC2086
		if cc $extra -Wall -Wextra -Werror -c -o /dev/null "$src" \
		    $flags 2>"$log"; then
			ok "$2 C fragment compiles wrapped in main()"
		else
			bad "$2 C fragment does not compile:$(sed 's/^/    /' "$log")"
		fi
		return ;;
	esac
	with_port "$3" > "$src"
	# shellcheck disable=SC2086
	if ! cc $extra -Wall -Wextra -Werror -o "$prog" "$src" $flags \
	    2>"$log"; then
		bad "$2 C sample does not compile:
$(sed 's/^/    /' "$log")"
	elif ! timeout 20 "$prog" >"$log" 2>&1; then
		bad "$2 C sample compiled but failed against lockd:
$(sed 's/^/    /' "$log")"
	else
		ok "$2 C sample compiled through lockd.pc and ran against lockd"
	fi
}

run_sh() {   # where body mark
	local work=$tmp/$1.work log=$tmp/$1.log name
	case $4 in
	fragment*)
		if bash -n "$3" 2>"$log"; then
			ok "$2 shell fragment parses, not run ${4#fragment }"
		else
			bad "$2 shell fragment does not parse: $(cat "$log")"
		fi
		return ;;
	stub\ *)
		for name in ${4#stub }; do
			printf '#!/bin/sh\nexit 0\n' > "$tmp/stubs/$name"
			chmod +x "$tmp/stubs/$name"
		done ;;
	esac
	mkdir -p "$work"
	with_port "$3" > "$tmp/$1.sh"
	if (cd "$work" && PATH=$tmp/stubs:$tmp/bin:$PATH timeout 30 \
	    bash -e "$tmp/$1.sh") >"$log" 2>&1; then
		ok "$2 shell sample ran"
	else
		bad "$2 shell sample failed:
$(sed 's/^/    /' "$log")"
	fi
	rm -f "$tmp"/stubs/*
}

run_python() { # where body mark
	local work=$tmp/$1.work log=$tmp/$1.log
	case $4 in
	fragment*)
		if /usr/bin/python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' \
		    "$3" 2>"$log"; then
			ok "$2 Python fragment compiles, not run ${4#fragment }"
		else
			bad "$2 Python fragment does not compile: $(cat "$log")"
		fi
		return ;;
	esac
	mkdir -p "$work"
	with_port "$3" > "$tmp/$1.py"
	if (cd "$work" && PYTHONPATH=$top/client/python PYTHONDONTWRITEBYTECODE=1 \
	    timeout 30 /usr/bin/python3 "$tmp/$1.py") >"$log" 2>&1; then
		ok "$2 Python sample ran against lockd"
	else
		bad "$2 Python sample failed:
$(sed 's/^/    /' "$log")"
	fi
}

run_go() {   # where body mark
	local work=$tmp/$1.go log=$tmp/$1.log
	case $4 in
	fragment*)
		if gofmt -e "$3" >/dev/null 2>"$log"; then
			ok "$2 Go fragment parses, not run ${4#fragment }"
		else
			bad "$2 Go fragment does not parse: $(cat "$log")"
		fi
		return ;;
	esac
	mkdir -p "$work"
	with_port "$3" > "$work/main.go"
	printf 'module sample\n\ngo 1.19\n\nrequire lockd.dev/lockd v0.0.0\n\nreplace lockd.dev/lockd => %s/client/go\n' \
	    "$top" > "$work/go.mod"
	# Offline, with Debian's toolchain and the cache tests/go/run.sh uses.
	if (cd "$work" && go_cache="$build/go" && . "$top/tools/go-env.sh" &&
	    timeout 120 go run .) >"$log" 2>&1; then
		ok "$2 Go sample built and ran against lockd"
	else
		bad "$2 Go sample failed:
$(sed 's/^/    /' "$log")"
	fi
}

run_conf() { # where body
	local log=$tmp/$1.log p i
	"$build/lockd" --config "$3" --listen 127.0.0.1:0 \
	    --data-dir "$tmp/$1.data" 2>"$log" &
	p=$!
	for i in $(seq 100); do
		grep -q "listening on" "$log" && break
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if grep -q "listening on" "$log"; then
		ok "$2 config is accepted by lockd"
	else
		bad "$2 config: lockd did not start:
$(sed 's/^/    /' "$log")"
	fi
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
}

run_console() { # where body
	local first req want got mapped="" doc real i=0 why=""
	first=$(head -n 1 "$3")
	case $first in
	'$ nc '*) ;;
	*) bad "$2 console sample: only '\$ nc HOST PORT' sessions are run, this one starts '$first'"
	   return ;;
	esac
	coproc NC { exec nc 127.0.0.1 "$port"; }
	while IFS= read -r req && IFS= read -r want; do
		i=$((i + 1))
		[ -n "$mapped" ] && req=${req//$doc/$real}
		printf '%s\n' "$req" >&"${NC[1]}"
		if ! IFS= read -r -t 5 got <&"${NC[0]}"; then
			why="no reply to '$req'"
			break
		fi
		got=${got%$'\r'}
		if [ "$(printf '%s' "$want" | normal)" != \
		    "$(printf '%s' "$got" | normal)" ]; then
			why="'$req': lockd said '$got', the sample says '$want'"
			break
		fi
		if printf '%s' "$want" | grep -q -E '[0-9]+-[0-9a-f]{16}'; then
			doc=$(printf '%s' "$want" | grep -o -E '[0-9]+-[0-9a-f]{16}')
			real=$(printf '%s' "$got" | grep -o -E '[0-9]+-[0-9a-f]{16}')
			mapped=1
		fi
	done < <(tail -n +2 "$3")
	kill "$NC_PID" 2>/dev/null
	wait "$NC_PID" 2>/dev/null
	if [ -n "$why" ]; then
		bad "$2 session: $why"
	elif [ "$i" -eq 0 ]; then
		bad "$2 session has no request"
	else
		ok "$2 session: $i requests answered as the sample shows"
	fi
}

while IFS=$'\t' read -r n where tag mark; do
	body=$tmp/s/$n
	case $tag in
	c) run_c "$n" "$where" "$body" "$mark" ;;
	sh) run_sh "$n" "$where" "$body" "$mark" ;;
	python) run_python "$n" "$where" "$body" "$mark" ;;
	go) run_go "$n" "$where" "$body" "$mark" ;;
	conf) run_conf "$n" "$where" "$body" ;;
	console) run_console "$n" "$where" "$body" ;;
	text) texts=$((texts + 1)) ;;
	'') bad "$where: a fenced block without an info string: say what it is (c, sh, python, go, conf, console or text)" ;;
	*) bad "$where: unknown info string '$tag' (c, sh, python, go, conf, console or text)" ;;
	esac
done < "$tmp/index"

kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""
echo "($texts text blocks are not code and not run)"
echo "samples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
