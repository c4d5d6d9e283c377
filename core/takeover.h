/*
 * takeover.h - the take-over rule of cluster mode: what a new leader makes
 * of a record the old leader committed.  Pure: the caller passes now.
 */
#ifndef LOCKD_CORE_TAKEOVER_H
#define LOCKD_CORE_TAKEOVER_H

#include "core/core.h"

/*
 * Rewrites rec, loaded from the store by a new leader at now, as the new
 * leader must keep it.  Only durations cross machines, never clock
 * readings, so its expiry becomes now + its lease + leader_lease_ms:
 * the old leader served for at most leader_lease_ms after the new one
 * could have begun, and no lease it granted or renewed outlives its
 * last renewal by more than its lease, so none ends earlier than the old
 * leader would have ended it.  It may end later, by at most its lease
 * plus leader_lease_ms (the new leader cannot tell how much of it had
 * run): the price of reading no other machine's clock.  An
 * onclose=release lease becomes an ordinary one: its connection was to
 * the old leader, and is gone.
 * Fence, secret and lease are kept: every handle stays good.
 *
 * A running lock-delay (rec->delay_until set) is a clock reading too, and
 * how much of it is left is not known: it runs again from now for
 * max_delay_ms (--max-lock-delay, the longest any delay can be) plus
 * leader_lease_ms, so it never ends earlier than on the old leader.
 */
void core_takeover_record(struct core_record *rec, core_time now,
    int64_t leader_lease_ms, int64_t max_delay_ms);

#endif
