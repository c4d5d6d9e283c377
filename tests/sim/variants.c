/*
 * variants.c - deliberately broken lock rules for the simulator's guard
 * tests: each is one mistake a lock service could plausibly make, and the
 * simulator must report it, or its checks are not worth their name.  They
 * live only here; the daemon has no way to select them.  The broken stores
 * and delivery paths are in sim.c, next to the code they replace.
 *
 * The table calls the composite rules (decide, grant, renew, release,
 * reclaim_if_expired, next_waiter), and the standard composites call the
 * standard primitives directly, so a broken primitive comes with the
 * composites rebuilt on top of it.
 */
#include <string.h>

#include "tests/sim/sim.h"

static void
lock_clear(struct core_lock *lock)
{
	memset(lock, 0, sizeof(*lock));
}

static void
lock_set(struct core_lock *lock, uint64_t fence, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	lock->fence = fence;
	lock->secret = secret;
	lock->lease_ms = lease_ms;
	lock->expiry = now + lease_ms;
}

static struct core_waiter *
waiter_of(struct core_link *l)
{
	return (struct core_waiter *)(void *)((char *)l -
	    offsetof(struct core_waiter, queue_link));
}

static struct core_waiter *
next_waiter_head(struct core_entry *entry)
{
	if (entry->queue.next == &entry->queue)
		return NULL;
	return waiter_of(entry->queue.next);
}

/* ---- RELEASE ignoring the handle -------------------------------------- */

static bool
release_ignoring_handle(struct core_lock *lock, struct core_handle h)
{
	(void)h;
	if (lock->fence == 0)
		return false;
	lock_clear(lock);
	return true;
}

/* ---- the holder recognised by its fence alone -------------------------- */

static bool
is_holder_by_fence(const struct core_lock *lock, struct core_handle h)
{
	return lock->fence != 0 && lock->fence == h.fence;
}

static enum core_status
renew_by_fence(struct core_lock *lock, struct core_handle h, core_time now,
    int64_t lease_ms)
{
	if (!is_holder_by_fence(lock, h))
		return CORE_ERR_CONFLICT;
	lock->lease_ms = lease_ms;
	lock->expiry = now + lease_ms;
	return CORE_OK;
}

static bool
release_by_fence(struct core_lock *lock, struct core_handle h)
{
	if (!is_holder_by_fence(lock, h))
		return false;
	lock_clear(lock);
	return true;
}

/* ---- a grant that does not mint a fresh fence -------------------------- */

static enum core_status
grant_reusing_fence(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	if (!core_rule_decide(lock, now))
		return CORE_ERR_CONFLICT;
	if (*hwm == 0)
		*hwm = 1;
	lock_set(lock, *hwm, now, lease_ms, secret);
	return CORE_OK;
}

/* ---- the queue served from its tail ----------------------------------- */

static struct core_waiter *
next_waiter_tail(struct core_entry *entry)
{
	if (entry->queue.prev == &entry->queue)
		return NULL;
	return waiter_of(entry->queue.prev);
}

/* ---- a queue that never moves ----------------------------------------- */

static struct core_waiter *
next_waiter_none(struct core_entry *entry)
{
	(void)entry;
	return NULL;
}

/* ---- expiry one millisecond early or late ------------------------------ */

static bool
expired_early(const struct core_lock *lock, core_time now)
{
	return lock->fence != 0 && now + 1 >= lock->expiry;
}

static bool
decide_early(const struct core_lock *lock, core_time now)
{
	return lock->fence == 0 || expired_early(lock, now);
}

static enum core_status
grant_early(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (!decide_early(lock, now))
		return CORE_ERR_CONFLICT;
	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

static bool
reclaim_early(struct core_lock *lock, core_time now)
{
	if (!expired_early(lock, now))
		return false;
	lock_clear(lock);
	return true;
}

static bool
expired_late(const struct core_lock *lock, core_time now)
{
	return lock->fence != 0 && now > lock->expiry;
}

static bool
decide_late(const struct core_lock *lock, core_time now)
{
	return lock->fence == 0 || expired_late(lock, now);
}

static enum core_status
grant_late(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (!decide_late(lock, now))
		return CORE_ERR_CONFLICT;
	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

static bool
reclaim_late(struct core_lock *lock, core_time now)
{
	if (!expired_late(lock, now))
		return false;
	lock_clear(lock);
	return true;
}

/* ---- expired leases never freed --------------------------------------- */

static bool
reclaim_never(struct core_lock *lock, core_time now)
{
	(void)lock;
	(void)now;
	return false;
}

/* ---- a grant that does not look at the holder -------------------------- */

static bool
decide_always(const struct core_lock *lock, core_time now)
{
	(void)lock;
	(void)now;
	return true;
}

static enum core_status
grant_always(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

/* ---- a renewal that always refuses ------------------------------------ */

static enum core_status
renew_refusing(struct core_lock *lock, struct core_handle h, core_time now,
    int64_t lease_ms)
{
	(void)lock;
	(void)h;
	(void)now;
	(void)lease_ms;
	return CORE_ERR_CONFLICT;
}

/* ---- the table -------------------------------------------------------- */

static const struct core_rules rules_release_ignores_handle = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = release_ignoring_handle,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_renew_by_fence_only = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = is_holder_by_fence,
	.renew = renew_by_fence,
	.release = release_by_fence,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_grant_reuses_fence = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = grant_reusing_fence,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_queue_is_lifo = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_tail,
};

static const struct core_rules rules_waiters_never_granted = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_none,
};

static const struct core_rules rules_lease_ends_early = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_early,
	.decide = decide_early,
	.grant = grant_early,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_early,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_lease_ends_late = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_late,
	.decide = decide_late,
	.grant = grant_late,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_late,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_never_reclaims = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_never,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_grant_while_held = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = decide_always,
	.grant = grant_always,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_head,
};

static const struct core_rules rules_renew_refuses_holder = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_refusing,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_head,
};

const struct core_rules *
sim_variant_rules(enum sim_variant v)
{
	switch (v) {
	case SIM_VARIANT_RELEASE_IGNORES_HANDLE:
		return &rules_release_ignores_handle;
	case SIM_VARIANT_RENEW_BY_FENCE_ONLY:
		return &rules_renew_by_fence_only;
	case SIM_VARIANT_GRANT_REUSES_FENCE:
		return &rules_grant_reuses_fence;
	case SIM_VARIANT_QUEUE_IS_LIFO:
		return &rules_queue_is_lifo;
	case SIM_VARIANT_WAITERS_NEVER_GRANTED:
		return &rules_waiters_never_granted;
	case SIM_VARIANT_LEASE_ENDS_EARLY:
		return &rules_lease_ends_early;
	case SIM_VARIANT_LEASE_ENDS_LATE:
		return &rules_lease_ends_late;
	case SIM_VARIANT_NEVER_RECLAIMS:
		return &rules_never_reclaims;
	case SIM_VARIANT_GRANT_WHILE_HELD:
		return &rules_grant_while_held;
	case SIM_VARIANT_RENEW_REFUSES_HOLDER:
		return &rules_renew_refuses_holder;
	default:
		return NULL;
	}
}

const char *
sim_variant_name(enum sim_variant v)
{
	static const char *const names[SIM_VARIANTS] = {
		"none",
		"store-drops-batches",
		"store-forgets-hwm",
		"replies-before-commit",
		"transport-loses-reply",
		"release-ignores-handle",
		"renew-by-fence-only",
		"grant-reuses-fence",
		"queue-is-lifo",
		"waiters-never-granted",
		"lease-ends-early",
		"lease-ends-late",
		"never-reclaims",
		"grant-while-held",
		"renew-refuses-holder",
		"inflight-ungated",
	};

	return (unsigned)v < SIM_VARIANTS ? names[v] : "?";
}

bool
sim_variant_parse(const char *name, enum sim_variant *v)
{
	int i;

	for (i = 0; i < SIM_VARIANTS; i++)
		if (strcmp(name, sim_variant_name((enum sim_variant)i)) == 0) {
			*v = (enum sim_variant)i;
			return true;
		}
	return false;
}
