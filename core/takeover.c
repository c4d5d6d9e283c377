/*
 * takeover.c - the take-over rule of cluster mode (takeover.h).  Pure, like
 * the rest of core/: no clock read, no I/O; the model checker's fail-over
 * and the daemon's load after winning leadership both call it.
 */
#include "core/takeover.h"

void
core_takeover_record(struct core_record *rec, core_time now,
    int64_t leader_lease_ms, int64_t max_delay_ms)
{
	if (rec->delay_until != 0)
		rec->delay_until = now + max_delay_ms + leader_lease_ms;
	if (rec->fence == 0)
		return;   /* a free name in lock-delay: no lease */
#ifndef LOCKD_BROKEN_KEEP_EXPIRY
	rec->expiry = now + rec->lease_ms + leader_lease_ms;
#else
	/* Broken on purpose, only in build/broken/lockd-keep-expiry (the
	 * Makefile's guards of test_cluster.c): the old leader's clock
	 * reading kept as if it were this node's. */
#endif
	rec->onclose_release = false;
	rec->owner_id = 0;
	rec->owner = NULL;
}
