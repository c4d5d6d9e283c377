/*
 * rules.c - the safety decisions of lockd, each a small pure function over
 * one lock's state.  Nothing here allocates, reads a clock or touches
 * anything but its arguments.  The lock table calls these through
 * core_rules_std; the model checker calls them through broken variants too.
 */
#include <string.h>

#include "core/core.h"

enum core_status
core_rule_fence_next(uint64_t last, uint64_t *next)
{
	if (last >= CORE_FENCE_MAX)
		return CORE_ERR_OVERFLOW;
	*next = last + 1;
	return CORE_OK;
}

bool
core_rule_lease_expired(const struct core_lock *lock, core_time now)
{
	return lock->fence != 0 && now >= lock->expiry;
}

bool
core_rule_decide(const struct core_lock *lock, core_time now)
{
	return lock->fence == 0 || core_rule_lease_expired(lock, now);
}

/*
 * now + lease without overflow: a lease is at most a year and the clock
 * starts near zero, but the model checker and the simulator probe the edges.
 */
static core_time
expiry_after(core_time now, int64_t lease_ms)
{
	if (lease_ms > 0 && now > CORE_NEVER - lease_ms)
		return CORE_NEVER - 1;
	return now + lease_ms;
}

enum core_status
core_rule_grant(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (!core_rule_decide(lock, now))
		return CORE_ERR_CONFLICT;
	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock->fence = fence;
	lock->secret = secret;
	lock->lease_ms = lease_ms;
	lock->expiry = expiry_after(now, lease_ms);
	return CORE_OK;
}

bool
core_rule_is_holder(const struct core_lock *lock, struct core_handle h)
{
	return lock->fence != 0 && lock->fence == h.fence &&
	    lock->secret == h.secret;
}

enum core_status
core_rule_renew(struct core_lock *lock, struct core_handle h, core_time now,
    int64_t lease_ms)
{
	if (!core_rule_is_holder(lock, h))
		return CORE_ERR_CONFLICT;
	lock->lease_ms = lease_ms;
	lock->expiry = expiry_after(now, lease_ms);
	return CORE_OK;
}

/* The whole hold goes: fence, secret, lease, lock-delay, owner. */
static void
lock_free(struct core_lock *lock)
{
	memset(lock, 0, sizeof(*lock));
}

bool
core_rule_release(struct core_lock *lock, struct core_handle h)
{
	if (!core_rule_is_holder(lock, h))
		return false;
	lock_free(lock);
	return true;
}

bool
core_rule_reclaim_if_expired(struct core_lock *lock, core_time now)
{
	if (!core_rule_lease_expired(lock, now))
		return false;
	lock_free(lock);
	return true;
}

bool
core_rule_delay_blocks(core_time delay_until, core_time now)
{
	return delay_until != 0 && now < delay_until;
}

/*
 * A RELEASE is the holder saying it is done, so it never delays; any other
 * end means the holder may still be at work.  An expiry delays from the
 * instant the lease ended, however late it was noticed (a restart after a
 * long stop owes no delay that has already run out).
 */
core_time
core_rule_delay_end(const struct core_lock *ended, enum core_end how,
    core_time now)
{
	int64_t delay_ms = core_tags_delay(ended->tags);
	core_time from;

	if (delay_ms <= 0 || how == CORE_END_RELEASED ||
	    how == CORE_END_GRANTED || how == CORE_END_NONE)
		return 0;
	from = how == CORE_END_EXPIRED ? ended->expiry : now;
	if (from > CORE_NEVER - 1 - delay_ms)
		return CORE_NEVER - 1;
	return from + delay_ms;
}

bool
core_rule_force(struct core_lock *lock, uint64_t fence)
{
	if (lock->fence == 0 || lock->fence != fence)
		return false;
	lock_free(lock);
	return true;
}

bool
core_rule_watch_fires(const struct core_watch_mark *watched, bool by_fence,
    const struct core_watch_mark *current)
{
	return watched->fence != current->fence ||
	    (!by_fence && watched->holders != current->holders);
}

/*
 * Only a live holder's rid is remembered: the rid goes with the hold (a
 * free lock has none), so a repeat after the lease ended is a new request.
 * The whole rid must match, not a prefix of it.
 */
bool
core_rule_rid_repeat(const struct core_lock *lock, const char *rid,
    size_t rid_len)
{
	const char *held;

	return lock->fence != 0 && rid_len > 0 &&
	    core_tags_rid(lock->tags, &held) == rid_len &&
	    memcmp(held, rid, rid_len) == 0;
}

/*
 * Who may join the holders.  Nobody holds: anyone.  A semaphore (limit
 * above 1): fewer than limit hold.  Limit 1: a shared request joins
 * shared holders; an exclusive one only an empty set.  The queue decides
 * who asks (its head, and only with nobody waiting ahead), so a shared
 * request never passes a waiting exclusive one.
 */
bool
core_rule_admits(const struct core_holding *held, bool shared)
{
	if (held->holders == 0)
		return true;
	if (held->limit > 1)
		return held->holders < held->limit;
	return shared && held->shared;
}

/*
 * The limit of a name restored after a failed commit.  Its waiters were
 * admitted in changes the store may never have got: with nobody holding
 * and no lock-delay running (no record, or only an ended lock-delay's)
 * the name is idle but for them, and keeps their limit; any other record
 * tells the limit, and the waiters that do not fit it are refused.
 */
uint16_t
core_rule_restore_limit(uint16_t stored, uint16_t queued, size_t nrecords,
    bool holds, bool delay_runs)
{
	(void)nrecords;
	if (queued != 0 && !holds && !delay_runs)
		return queued;
	return stored;
}

bool
core_rule_restore_refuses(uint16_t limit, uint16_t queued)
{
	return queued != 0 && limit != queued;
}

static struct core_waiter *
next_waiter_fifo(struct core_entry *entry)
{
	const struct core_link *queue = core_entry_queue(entry);

	if (queue == NULL || queue->next == queue)
		return NULL;
	return (struct core_waiter *)((char *)queue->next -
	    offsetof(struct core_waiter, queue_link));
}

const struct core_rules core_rules_std = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_fifo,
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = core_rule_watch_fires,
	.rid_repeat = core_rule_rid_repeat,
	.admits = core_rule_admits,
	.restore_limit = core_rule_restore_limit,
	.restore_refuses = core_rule_restore_refuses,
};
