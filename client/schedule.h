/*
 * schedule.h - the renewal schedule every lockd client keeps (internal,
 * never installed): liblockd's keep-alive thread (keepalive.c), the libuv
 * keep-alive (uv.c) and `lockctl run` (lockctl_run.c) include it, and the
 * Python and Go clients keep the same numbers (client/python/lockd/_proto.py,
 * client/go/lease.go).
 *
 * As shares of the lease L last granted: a renewal goes out L/3 into it;
 * the lease counts as lost L/10 before it ends (lockctl stops its command
 * before that, docs/lockctl.1).  A renewal that did not succeed for a
 * reason that leaves the lease as it was (the node does not lead, cannot
 * reach etcd, broke or stopped) is tried again after 50 ms, the pause
 * doubling to at most 250 ms (and L/15, for short leases): during a
 * fail-over a client reaches the new leader within about that long of
 * its election, which is what lets a lease of 10 s or more outlive the
 * fail-over of a cluster at the default --leader-lease of 3 s.  A few
 * small requests a second per lease, only while renewals fail.
 */
#ifndef LOCKD_CLIENT_SCHEDULE_H
#define LOCKD_CLIENT_SCHEDULE_H

#include <stdint.h>

#define LOCKD__RENEW_DIVISOR 3
#define LOCKD__LOST_DIVISOR 10
#define LOCKD__RETRY_FIRST_MS 50
#define LOCKD__RETRY_MAX_MS 250
#define LOCKD__RETRY_DIVISOR 15
#define LOCKD__RETRY_MIN_MS 10

/* When the next renewal of a lease of lease_ms ending at deadline_ms goes
 * out. */
static inline int64_t
lockd__renew_at(int64_t deadline_ms, int64_t lease_ms)
{
	return deadline_ms - lease_ms + lease_ms / LOCKD__RENEW_DIVISOR;
}

/* When a lease ending at deadline_ms counts as lost. */
static inline int64_t
lockd__lost_at(int64_t deadline_ms, int64_t lease_ms)
{
	return deadline_ms - lease_ms / LOCKD__LOST_DIVISOR;
}

/*
 * The pause before the next try of a renewal that failed; *backoff is
 * the caller's, 0 after a renewal that succeeded.
 */
static inline int64_t
lockd__retry_after(int64_t lease_ms, int64_t *backoff)
{
	int64_t cap = lease_ms / LOCKD__RETRY_DIVISOR, pause;

	if (cap > LOCKD__RETRY_MAX_MS)
		cap = LOCKD__RETRY_MAX_MS;
	if (cap < LOCKD__RETRY_MIN_MS)
		cap = LOCKD__RETRY_MIN_MS;
	pause = *backoff > 0 ? *backoff : LOCKD__RETRY_FIRST_MS;
	if (pause > cap)
		pause = cap;
	*backoff = pause * 2 < cap ? pause * 2 : cap;
	return pause;
}

#endif
