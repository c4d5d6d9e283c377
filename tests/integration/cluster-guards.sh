#!/bin/sh
# cluster-guards.sh - the guards of the cluster checkers: each scenario of
# integ_cluster (test_cluster.c) that must catch a deliberately broken
# lockd is run against that build ($B/broken/lockd-VARIANT, made by the
# Makefile with a LOCKD_BROKEN_* switch the shipped build never has) and must
# fail, by its own check.  The same scenarios pass against $B/lockd in
# integ_cluster's own run in make test.
# Usage: tests/integration/cluster-guards.sh BUILD_DIR
set -u
b=${1:?usage: $0 BUILD_DIR}
passed=0
failed=0
log=$(mktemp "${TMPDIR:-/tmp}/lockd-guard-XXXXXX")
trap 'rm -f "$log"' EXIT

# guard VARIANT SCENARIO WHAT: the scenario (a part of a test's name) must
# run alone and fail against lockd-VARIANT, by the check that prints WHAT
# (not, say, for want of root or of etcd).
guard() {
	bin=$b/broken/lockd-$1
	if [ ! -x "$bin" ]; then
		echo "FAIL guard $1: $bin is missing (make $bin)"
		failed=$((failed + 1))
		return
	fi
	LOCKD_BIN=$bin "$b/tests/integ_cluster" "$2" >"$log" 2>&1
	rc=$?
	why=$(grep -m1 -- "$3" "$log")
	if [ "$rc" -ne 0 ] && grep -q '^\[==========\] 1 test(s) run' "$log" &&
	    grep -q '^\[  FAILED  \] 1 test(s)' "$log" &&
	    grep -q -- "$3" "$log"; then
		echo "ok   guard $1: $2 caught it: $why"
		passed=$((passed + 1))
	else
		echo "FAIL guard $1: $2 did not catch it (exit $rc):"
		sed 's/^/    /' "$log"
		failed=$((failed + 1))
	fi
}

guard skip-leader-compare leader_whose_key_is_gone "committed a grant"
guard keep-expiry takeover_on_another_clock "two believers"
# Not the pause: there, a keep-alive answer waiting in the socket as the
# process resumes ("the lease is gone") may close the connections before
# the STATUS is read, so the pause catches this build only most times.
guard serve-past-lease leader_cut_off "past its leader lease"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
