#!/bin/sh
# check-units.sh - the systemd units pass `systemd-analyze verify`, the
# service's exposure score is 1.0 or lower, and a weakened copy of the unit
# is caught by the same check (so the check can fail).  The service does
# not pull lockd.socket in: socket activation is opt-in, so `listen` and
# `unix` in lockd.conf are what a plain `systemctl start lockd` serves.  Ends with the line
# "N passed, N failed".  Skips, with its reason, where systemd-analyze is
# absent.
#
# Usage: tests/systemd/check-units.sh LOCKD_BIN
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
lockd=${1:-$top/build/lockd}
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAILED: $1"; failed=$((failed + 1)); }

# Needs no systemd: a plain grep of the unit.
if grep -Eq '^(Wants|Requires|Requisite|BindsTo|Upholds|Sockets)=.*lockd\.socket' \
    "$top/systemd/lockd.service"; then
	bad "lockd.service pulls in lockd.socket: lockd.conf's listen would be ignored"
else
	ok "lockd.service does not pull in lockd.socket"
fi

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "skipped: systemd-analyze is not installed"
	echo "units: $passed passed, $failed failed, 3 skipped"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Verify the units as installed, pointing at the binary just built.
sed "s|/usr/local/bin/lockd|$lockd|" "$top/systemd/lockd.service" \
	> "$tmp/lockd.service"
cp "$top/systemd/lockd.socket" "$tmp/lockd.socket"

if out=$(systemd-analyze verify --man=no "$tmp/lockd.service" \
    "$tmp/lockd.socket" 2>&1) && [ -z "$out" ]; then
	ok "systemd-analyze verify lockd.service lockd.socket"
else
	bad "systemd-analyze verify: $out"
fi

score=$(systemd-analyze security --offline=true --no-pager \
	"$tmp/lockd.service" 2>/dev/null | sed -n 's/.*Overall exposure level for lockd.service: \([0-9.]*\).*/\1/p')
# --threshold is the exposure times ten: 10 means 1.0.
if systemd-analyze security --offline=true --threshold=10 --no-pager \
    "$tmp/lockd.service" >/dev/null 2>&1; then
	ok "exposure $score is at most 1.0"
else
	bad "exposure $score is above 1.0"
fi

# The guard: the same unit without its sandboxing must fail the check.
grep -v -E '^(Protect|Private|Restrict|SystemCall|Capability|NoNewPriv|MemoryDeny|LockPersonality|IPAddress|DevicePolicy|DeviceAllow|RemoveIPC|UMask)' \
	"$tmp/lockd.service" > "$tmp/weak.service"
if systemd-analyze security --offline=true --threshold=10 --no-pager \
    "$tmp/weak.service" >/dev/null 2>&1; then
	bad "a unit without sandboxing passed the exposure check"
else
	ok "a unit without sandboxing fails the exposure check"
fi

echo "units: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
