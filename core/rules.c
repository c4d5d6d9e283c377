/*
 * rules.c - the safety decisions of lockd, each a small pure function over
 * one lock's state.  Nothing here allocates, reads a clock or touches
 * anything but its arguments.  The lock table calls these through
 * core_rules_std; the model checker calls them through broken variants too.
 */
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

static void
lock_free(struct core_lock *lock)
{
	lock->fence = 0;
	lock->secret = 0;
	lock->expiry = 0;
	lock->lease_ms = 0;
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

static struct core_waiter *
next_waiter_fifo(struct core_entry *entry)
{
	if (entry->queue.next == &entry->queue)
		return NULL;
	return (struct core_waiter *)((char *)entry->queue.next -
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
};
