/*
 * variants.c - deliberately broken rules, each one mistake a lock service
 * could plausibly make, for the guard tests of the model checker: the
 * checker must catch every one of them with the property named beside it,
 * or the checker itself is broken.  They live only here; the daemon has no
 * way to select them.
 *
 * The table calls the composite rules (decide, grant, renew, release,
 * reclaim_if_expired, next_waiter); the std composites call the std
 * primitives directly.  So a broken primitive comes with the composites
 * rebuilt on top of it, or the table would never see the mistake.
 */
#include <string.h>

#include "tests/model/model.h"

static struct core_waiter *
waiter_of(struct core_link *l)
{
	return (struct core_waiter *)(void *)((char *)l -
	    offsetof(struct core_waiter, queue_link));
}

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

/* ---- release ignoring the handle -------------------------------------- */

static bool
release_ignoring_handle(struct core_lock *lock, struct core_handle h)
{
	(void)h;
	if (lock->fence == 0)
		return false;
	lock_clear(lock);
	return true;
}

/* ---- is_holder ignoring the secret ------------------------------------ */

static bool
is_holder_ignoring_secret(const struct core_lock *lock, struct core_handle h)
{
	return lock->fence != 0 && lock->fence == h.fence;
}

static enum core_status
renew_by_fence_only(struct core_lock *lock, struct core_handle h,
    core_time now, int64_t lease_ms)
{
	if (!is_holder_ignoring_secret(lock, h))
		return CORE_ERR_CONFLICT;
	lock->lease_ms = lease_ms;
	lock->expiry = now + lease_ms;
	return CORE_OK;
}

static bool
release_by_fence_only(struct core_lock *lock, struct core_handle h)
{
	if (!is_holder_ignoring_secret(lock, h))
		return false;
	lock_clear(lock);
	return true;
}

/* ---- grant without a fresh fence -------------------------------------- */

static enum core_status
grant_reusing_hwm(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	if (!core_rule_decide(lock, now))
		return CORE_ERR_CONFLICT;
	if (*hwm == 0)
		*hwm = 1;
	lock_set(lock, *hwm, now, lease_ms, secret);
	return CORE_OK;
}

/* ---- grant from the lock's own last fence ----------------------------- */

/* The lock's record is its counter, so a reclaim (which frees the record)
 * resets it. */
static enum core_status
grant_from_own_fence(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (!core_rule_decide(lock, now))
		return CORE_ERR_CONFLICT;
	if (core_rule_fence_next(lock->fence, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	if (fence > *hwm)
		*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

/* ---- next_waiter returning the tail ----------------------------------- */

static struct core_waiter *
next_waiter_tail(struct core_entry *entry)
{
	if (entry->queue.prev == &entry->queue)
		return NULL;
	return waiter_of(entry->queue.prev);
}

/* ---- next_waiter returning nobody ------------------------------------- */

static struct core_waiter *
next_waiter_none(struct core_entry *entry)
{
	(void)entry;
	return NULL;
}

/* ---- lease_expired one instant late (now > expiry) -------------------- */

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

/* ---- lease_expired one instant early (now + 1 >= expiry) -------------- */

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

/* ---- renew ignoring the handle ---------------------------------------- */

static enum core_status
renew_ignoring_handle(struct core_lock *lock, struct core_handle h,
    core_time now, int64_t lease_ms)
{
	(void)h;
	if (lock->fence == 0)
		return CORE_ERR_CONFLICT;
	lock->lease_ms = lease_ms;
	lock->expiry = now + lease_ms;
	return CORE_OK;
}

/* ---- renew that answers yes and forgets to extend --------------------- */

static enum core_status
renew_forgetting_the_lease(struct core_lock *lock, struct core_handle h,
    core_time now, int64_t lease_ms)
{
	(void)now;
	if (!core_rule_is_holder(lock, h))
		return CORE_ERR_CONFLICT;
	lock->lease_ms = lease_ms;
	return CORE_OK;
}

/* ---- decide that ignores the holder ----------------------------------- */

static bool
decide_always(const struct core_lock *lock, core_time now)
{
	(void)lock;
	(void)now;
	return true;
}

/* The std grant re-checks decide and would answer CONFLICT, hiding the
 * broken decide: this one trusts it. */
static enum core_status
grant_trusting_decide(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

/* ---- the table -------------------------------------------------------- */

/* next_waiter_fifo is static in rules.c: reach it through the std table. */
static struct core_waiter *
next_waiter_std(struct core_entry *entry)
{
	return core_rules_std.next_waiter(entry);
}

/* Each table is core_rules_std but for the broken rules it names. */
static const struct core_rules rules_release_ignoring_handle = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = release_ignoring_handle,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_is_holder_ignoring_secret = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = is_holder_ignoring_secret,
	.renew = renew_by_fence_only,
	.release = release_by_fence_only,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_grant_reusing_hwm = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = grant_reusing_hwm,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_grant_from_own_fence = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = grant_from_own_fence,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_next_waiter_tail = {
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

static const struct core_rules rules_next_waiter_none = {
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

static const struct core_rules rules_expiry_late = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_late,
	.decide = decide_late,
	.grant = grant_late,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_late,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_expiry_early = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_early,
	.decide = decide_early,
	.grant = grant_early,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_early,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_renew_ignoring_handle = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_ignoring_handle,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_renew_forgetting_the_lease = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_forgetting_the_lease,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

static const struct core_rules rules_decide_always = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = decide_always,
	.grant = grant_trusting_decide,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
};

const struct model_variant model_variants[] = {
	{ "release_ignoring_handle",
	  "release frees the lock whatever handle it is given",
	  &rules_release_ignoring_handle, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "is_holder_ignoring_secret",
	  "the fence alone proves the holder (renew and release trust it)",
	  &rules_is_holder_ignoring_secret, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "grant_reusing_hwm",
	  "grant mints the high-water mark again instead of hwm + 1",
	  &rules_grant_reusing_hwm, MODEL_HARNESS_RIGHT,
	  MODEL_FENCING_MONOTONIC },
	{ "grant_from_own_fence",
	  "grant counts from the lock's own last fence, so a reclaim "
	  "resets the counter",
	  &rules_grant_from_own_fence, MODEL_HARNESS_RIGHT,
	  MODEL_FENCING_MONOTONIC },
	{ "next_waiter_tail",
	  "the lock is handed to the newest waiter, not the oldest",
	  &rules_next_waiter_tail, MODEL_HARNESS_RIGHT,
	  MODEL_FIFO_FAIRNESS },
	{ "lease_expired_late",
	  "a lease expires one instant late (now > expiry)",
	  &rules_expiry_late, MODEL_HARNESS_RIGHT,
	  MODEL_LEASE_RECLAMATION_SAFETY },
	{ "lease_expired_early",
	  "a lease is reclaimed one instant early (now + 1 >= expiry)",
	  &rules_expiry_early, MODEL_HARNESS_RIGHT,
	  MODEL_LEASE_RECLAMATION_SAFETY },
	{ "renew_ignoring_handle",
	  "renew extends the lease whatever handle it is given",
	  &rules_renew_ignoring_handle, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "decide_always_true",
	  "decide grants a held lock (with a grant that trusts decide)",
	  &rules_decide_always, MODEL_HARNESS_RIGHT,
	  MODEL_MUTUAL_EXCLUSION },
	{ "next_waiter_none",
	  "a freed lock is never handed to its queue",
	  &rules_next_waiter_none, MODEL_HARNESS_RIGHT,
	  MODEL_NO_STARVATION },
	{ "renew_forgetting_the_lease",
	  "renew answers RENEWED but leaves the expiry where it was",
	  &rules_renew_forgetting_the_lease, MODEL_HARNESS_RIGHT,
	  MODEL_SHADOW_AGREEMENT },
	{ "store_forgetting_the_counter",
	  "the daemon's store never saves the high-water mark",
	  &core_rules_std, MODEL_HARNESS_FORGET_HWM,
	  MODEL_FENCING_MONOTONIC },
	{ "granted_before_commit",
	  "the daemon sends GRANTED and RENEWED before the commit",
	  &core_rules_std, MODEL_HARNESS_DELIVER_FIRST,
	  MODEL_MUTUAL_EXCLUSION },
};

const size_t model_nvariants = sizeof(model_variants) /
    sizeof(model_variants[0]);

const struct model_variant *
model_variant_find(const char *name)
{
	size_t i;

	for (i = 0; i < model_nvariants; i++)
		if (strcmp(model_variants[i].name, name) == 0)
			return &model_variants[i];
	return NULL;
}
