#!/bin/sh
# go-vs-c.sh - the Go client beside liblockd, in the same run, against one
# lockd on a free loopback port (killed by its PID at the end): STATUS
# requests one at a time and pipelined, requests/s and client CPU time.
# Noisy on a shared machine: compare the lines of one run, not runs.
#
# Usage: bench/go-vs-c.sh [BUILD_DIR] [N] [DEPTH]   (after make build/liblockd.a)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
n=${2:-20000}
depth=${3:-64}
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# Built here, not by make: a measuring tool, not part of the product.
cc -O2 -I"$top" -o "$tmp/liblockd_loop" "$top/bench/liblockd_loop.c" \
    "$build/liblockd.a" -luv -lssl -lcrypto -lpthread
(cd "$top/client/go" && go_cache="$build/go" && . "$top/tools/go-env.sh" &&
    go build -o "$tmp/lockd-gobench" ./cmd/lockd-gobench)

"$build/lockd" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
    --journal-size 65536 2>"$tmp/lockd.log" &
pid=$!
port=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' \
	    "$tmp/lockd.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$tmp/lockd.log"; exit 1; }

"$tmp/liblockd_loop" 127.0.0.1 "$port" "$n" "$depth"
"$tmp/lockd-gobench" -a "127.0.0.1:$port" -n "$n" -d "$depth"
"$tmp/liblockd_loop" 127.0.0.1 "$port" "$n" "$depth"
"$tmp/lockd-gobench" -a "127.0.0.1:$port" -n "$n" -d "$depth"
