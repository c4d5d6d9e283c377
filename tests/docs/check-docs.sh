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
#     table names no event the code never emits.
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

echo "docs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
