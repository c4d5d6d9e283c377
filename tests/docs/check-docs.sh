#!/bin/sh
# check-docs.sh - the documentation cannot drift from the code:
#   - every repository file a document names (README.md, docs/*.md, the
#     man pages, systemd/*) exists, and every relative Markdown link
#     resolves: docs must stand alone, with nothing pointing outside;
#   - every flag `lockd --help` prints is in lockd.8's SYNOPSIS and OPTIONS
#     and in docs/operations.md, and every flag lockd.8 names is one lockd
#     knows;
#   - every log event daemon/*.c emits (log_event(LEVEL, "name", ...)) is a
#     row of the log table in docs/operations.md, at its level, and the
#     table names no event the code never emits;
#   - every default lockd.8's OPTIONS, docs/operations.md's flag table and
#     systemd/lockd.conf (commented or not) show is the one `lockd
#     --print-defaults` prints from daemon/config.c's table, each flag has
#     one row, and the map's bytes per lock they quote are lockd's own;
#     and lockd starts with every default in lockd.conf uncommented.
# Ends with the line "N passed, N failed".
#
# Usage: tests/docs/check-docs.sh LOCKD_BIN [TOP]
# (TOP, the tree to check, defaults to this one: pointing it at an older
# tree shows the checks failing there.)
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
lockd=${1:-$here/build/lockd}
top=${2:-$here}
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$top" || exit 1

# Roff as plain text: \- is -, font escapes go.
plain() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(em/--/g' "$1"
}

# ---- references ----------------------------------------------------------
docs="README.md $(ls docs/*.md docs/*.[1-8] systemd/* 2>/dev/null)"
: > "$tmp/missing"
for f in $docs; do
	plain "$f" > "$tmp/text"
	# Paths from the top of the repository, as the docs write them: not
	# part of a longer path (/usr/local/lib/systemd/...), a URL or a
	# variable.
	grep -o -E '(^|[^A-Za-z0-9_./$~:-])(README\.md|Makefile|(core|proto|daemon|client|tests|docs|examples|systemd|tools|bench|shared|spec)/[][A-Za-z0-9_./*-]*)' \
	    "$tmp/text" | sed -E 's/^[^A-Za-z]//; s/^([^[]*)]+$/\1/; s/[.]+$//' | sort -u |
	while read -r p; do
		# A glob must match something; anything else must exist.
		# shellcheck disable=SC2086
		set -- $p
		[ -e "$1" ] || echo "$f: $p" >> "$tmp/missing"
	done
	# Relative Markdown links, from the linking file's folder.
	case $f in *.md) ;; *) continue ;; esac
	grep -o -E '\]\([^)#]+' "$f" | sed 's/^](//' | sort -u |
	while read -r link; do
		case $link in
		http://*|https://*|mailto:*) continue ;;
		esac
		[ -e "$(dirname "$f")/$link" ] ||
		    echo "$f: link $link" >> "$tmp/missing"
	done
done
if [ -s "$tmp/missing" ]; then
	bad "documents name files that are not in the repository:
$(sed 's/^/    /' "$tmp/missing")"
else
	ok "every file the documents name exists ($(echo "$docs" | wc -w) documents)"
fi
# shellcheck disable=SC2086  # one word per document
if grep -n -E '\.\./shared|shared/spec' $docs > "$tmp/outside"; then
	bad "documents point outside the repository:
$(sed 's/^/    /' "$tmp/outside")"
else
	ok "no document points outside the repository"
fi

# ---- lockd's flags -------------------------------------------------------
if ! "$lockd" --help > "$tmp/help" 2>&1; then
	bad "$lockd --help failed"
fi
grep -o -E -- '--[a-z][a-z-]*' "$tmp/help" | sort -u > "$tmp/flags"
plain docs/lockd.8 > "$tmp/man"
sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$tmp/man" > "$tmp/synopsis"
# OPTIONS: the line after each .TP is the option's heading.
sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$tmp/man" |
    awk 'tp { print; tp = 0 } /^\.TP/ { tp = 1 }' > "$tmp/headings"
: > "$tmp/flagerr"
while read -r flag; do
	grep -q -- "$flag\\b" "$tmp/synopsis" ||
	    echo "$flag is not in lockd.8's SYNOPSIS" >> "$tmp/flagerr"
	grep -q -- "$flag\\b" "$tmp/headings" ||
	    echo "$flag has no entry in lockd.8's OPTIONS" >> "$tmp/flagerr"
	grep -q -- "$flag\\b" docs/operations.md ||
	    echo "$flag is not in docs/operations.md" >> "$tmp/flagerr"
done < "$tmp/flags"
grep -o -E -- '--[a-z][a-z-]*' "$tmp/man" | sort -u |
while read -r flag; do
	grep -q -x -- "$flag" "$tmp/flags" ||
	    echo "lockd.8 names $flag, which lockd --help does not know" \
	    >> "$tmp/flagerr"
done
if [ -s "$tmp/flagerr" ]; then
	bad "lockd's flags and its documentation differ:
$(sed 's/^/    /' "$tmp/flagerr")"
else
	ok "the $(wc -l < "$tmp/flags") flags of lockd --help are in lockd.8 (SYNOPSIS, OPTIONS) and docs/operations.md, and lockd.8 names no other"
fi

# ---- log events ----------------------------------------------------------
# Calls may span lines; the event name must be a literal, or the check
# could not see it.
cat daemon/*.c | tr '\n\t' '  ' > "$tmp/code"
# log_limited (rate-limited lines) takes its limit first.
calls=$(grep -o -E 'log_(event|limited) *\(' "$tmp/code" | wc -l)
literals='log_event *\( *LOG_[A-Z]+, *"[a-z_]+"|log_limited *\( *[^,()]+, *LOG_[A-Z]+, *"[a-z_]+"'
grep -o -E "$literals" "$tmp/code" |
    sed -E 's/.*LOG_([A-Z]+), *"([a-z_]+)"/\2 \1/' |
    tr '[:upper:]' '[:lower:]' | sort -u > "$tmp/events"
literal=$(grep -o -E "$literals" "$tmp/code" | wc -l)
# The table: "| `a`, `b` | level | when |" rows under "## Logs".
sed -n '/^## Logs/,/^## [^L]/p' docs/operations.md |
    grep -E '^\| `' | while IFS='|' read -r _ names level _; do
	level=$(echo "$level" | tr -d ' ')
	# shellcheck disable=SC2016  # backquotes, not an expansion
	echo "$names" | grep -o '`[a-z_]*`' | tr -d '`' |
	    sed "s/\$/ $level/"
done | sort -u > "$tmp/table"
: > "$tmp/logerr"
# Two fewer calls than matches: log.c defines log_event( and log_limited(.
[ "$literal" -eq $((calls - 2)) ] ||
    echo "$((calls - 2 - literal)) log_event or log_limited call(s) do not name their event as LOG_X, \"literal\"" >> "$tmp/logerr"
while read -r name level; do
	if ! grep -q "^$name " "$tmp/table"; then
		echo "event $name ($level) is not in the log table" >> "$tmp/logerr"
	elif ! grep -q -x "$name $level" "$tmp/table"; then
		echo "event $name is logged at $level, the table says $(grep "^$name " "$tmp/table" | cut -d' ' -f2)" >> "$tmp/logerr"
	fi
done < "$tmp/events"
cut -d' ' -f1 "$tmp/table" | while read -r name; do
	grep -q "^$name " "$tmp/events" ||
	    echo "the log table names $name, which the code never logs" >> "$tmp/logerr"
done
if [ -s "$tmp/logerr" ]; then
	bad "the log table in docs/operations.md and the code differ:
$(sed 's/^/    /' "$tmp/logerr")"
else
	ok "the $(cut -d' ' -f1 "$tmp/events" | sort -u | wc -l) log events of daemon/*.c are the log table of docs/operations.md, at their levels"
fi

# ---- defaults ------------------------------------------------------------
# The one list of defaults is lockd's: --print-defaults prints the table
# in daemon/config.c that lockd takes them from.
if ! "$lockd" --print-defaults > "$tmp/defaults" 2>&1 ||
    ! grep -q '^map-size = ' "$tmp/defaults"; then
	bad "$lockd --print-defaults failed: $(head -3 "$tmp/defaults")"
fi
default_of() { sed -n "s/^$1 = //p" "$tmp/defaults"; }
# The first word after "default" (as in "(default 30s)", "Default lockd"),
# without quotes and the punctuation that ends a phrase.
first_default() {
	grep -o -i -E '(^|[ (])default[: ]+[^ ]+' | head -n 1 |
	    sed -E 's/^[ (]?[Dd]efault[: ]+//; s/[`"(]//g; s/[),;:.]+$//'
}
: > "$tmp/deferr"
# lockd.8: each OPTIONS entry as one line, "--flag<TAB>its text", roff
# requests and quotes dropped.
sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$tmp/man" | awk '
	/^\.(TP|SH)/ { if (flag != "") print flag "\t" text
		flag = ""; text = ""; head = /^\.TP/; next }
	head { match($0, /--[a-z][a-z-]*/)
		flag = substr($0, RSTART, RLENGTH); head = 0; next }
	{ line = $0; sub(/^\.[A-Za-z]+ */, "", line); gsub(/"/, "", line)
		text = text " " line }
	END { if (flag != "") print flag "\t" text }' > "$tmp/entries"
# operations.md's flag table: "--flag<TAB>its default cell".
sed -n '/^| flag | default | meaning |/,/^$/p' docs/operations.md |
    awk -F'|' 'NR > 2 { match($2, /--[a-z][a-z-]*/)
	print substr($2, RSTART, RLENGTH) "\t" $3 }' > "$tmp/rows"
cut -f1 "$tmp/rows" | sort | uniq -d | while read -r flag; do
	echo "docs/operations.md's flag table has $flag more than once" >> "$tmp/deferr"
done
while IFS=' ' read -r key _ value; do
	man=$(grep "^--$key	" "$tmp/entries" | cut -f2 | first_default)
	[ "$man" = "$value" ] ||
	    echo "lockd.8 gives --$key's default as '$man', lockd as '$value'" >> "$tmp/deferr"
	row=$(grep "^--$key	" "$tmp/rows" | head -n 1 | cut -f2 |
	    sed -E 's/^ *//; s/`//g; s/ .*//; s/[,;]$//')
	[ "$row" = "$value" ] ||
	    echo "docs/operations.md gives --$key's default as '$row', lockd as '$value'" >> "$tmp/deferr"
done < "$tmp/defaults"
# lockd.conf: every "key = value" line, commented or not, of a key with a
# default.  data-dir is the exception: the file shows systemd's
# ($STATE_DIRECTORY), which is what lockd uses under its unit.
grep -n -E '^#? ?[a-z][a-z-]* = [^ ]+$' systemd/lockd.conf |
    sed -E 's/^([0-9]+):#? ?/\1 /' | while read -r line key _ value; do
	want=$(default_of "$key")
	[ -n "$want" ] && [ "$key" != data-dir ] && [ "$want" != "$value" ] &&
	    echo "systemd/lockd.conf:$line: $key = $value, lockd's default is $want" >> "$tmp/deferr"
done
# What the map needs per lock, as lockd's own refusal says it.
need=$("$lockd" --listen 127.0.0.1:0 --data-dir "$tmp/none" --map-size 1 \
    --max-held 1000000 2>&1 | sed -n 's/.*needs --map-size \([0-9]*\) .*/\1/p')
if [ -z "$need" ]; then
	echo "lockd --map-size 1 --max-held 1000000 did not say what it needs" >> "$tmp/deferr"
else
	per=$(awk -v n="$need" 'BEGIN { printf "%.1f", n / 1000000 / 1000 }')
	for f in docs/lockd.8 docs/operations.md systemd/lockd.conf; do
		plain "$f" | tr '\n' ' ' |
		    grep -o -E 'about [0-9.]+ KB (a|per) lock' | sort -u |
		while read -r _ kb _; do
			[ "$kb" = "$per" ] ||
			    echo "$f: about $kb KB a lock; lockd needs $need bytes for 1000000 ($per KB)" >> "$tmp/deferr"
		done
		plain "$f" | tr '\n' ' ' |
		    grep -o -E '[0-9][0-9,]{8,} bytes for (the default )?1,?000,?000' |
		while read -r bytes _; do
			[ "$(echo "$bytes" | tr -d ,)" = "$need" ] ||
			    echo "$f: $bytes bytes for 1000000 locks; lockd needs $need" >> "$tmp/deferr"
		done
	done
fi
if [ -s "$tmp/deferr" ]; then
	bad "the documented defaults and lockd's differ:
$(sed 's/^/    /' "$tmp/deferr")"
else
	ok "the $(wc -l < "$tmp/defaults") defaults of lockd --print-defaults are those of lockd.8, docs/operations.md (one row a flag) and systemd/lockd.conf, and the map's $need bytes for 1000000 locks are theirs"
fi

# The sample config with every default it shows uncommented: lockd starts
# (on a free port and a temporary directory: flags override the file).
sed -n 's/^# \([a-z][a-z-]*\) = .*/\1/p' systemd/lockd.conf | while read -r key; do
	[ -n "$(default_of "$key")" ] && echo "$key"
done > "$tmp/commented"
cp systemd/lockd.conf "$tmp/all.conf"
: > "$tmp/all.log"
while read -r key; do
	sed -i "s/^# $key = /$key = /" "$tmp/all.conf"
done < "$tmp/commented"
"$lockd" --config "$tmp/all.conf" --listen 127.0.0.1:0 \
    --data-dir "$tmp/all.data" 2>"$tmp/all.log" &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "listening on" "$tmp/all.log" &&
    kill -0 "$pid" 2>/dev/null; do
	sleep 0.05
	i=$((i + 1))
done
if grep -q "listening on" "$tmp/all.log"; then
	ok "lockd starts with systemd/lockd.conf's $(wc -l < "$tmp/commented") commented defaults uncommented"
else
	bad "lockd does not start with systemd/lockd.conf's defaults uncommented ($(tr '\n' ' ' < "$tmp/commented")):
$(sed 's/^/    /' "$tmp/all.log")"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

echo "docs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
