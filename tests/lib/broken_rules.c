/*
 * broken_rules.c - the broken lock rules of broken_rules.h, shared by the
 * model checker's and the simulator's guard tests.  Nothing here may be
 * linked into the daemon.
 */
#include <stddef.h>
#include <string.h>

#include "tests/lib/broken_rules.h"

/* The rules added with lock-delay, FORCE and WATCH, as the daemon runs
 * them, for every table that breaks something else. */
#define RULES_STD_REST \
	.delay_blocks = core_rule_delay_blocks, \
	.delay_end = core_rule_delay_end, \
	.force = core_rule_force, \
	.watch_fires = core_rule_watch_fires, \
	.rid_repeat = core_rule_rid_repeat, \
	.admits = core_rule_admits, \
	.restore_limit = core_rule_restore_limit, \
	.restore_refuses = core_rule_restore_refuses,

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

/* next_waiter_fifo is static in rules.c: reach it through the std table. */
static struct core_waiter *
next_waiter_std(struct core_entry *entry)
{
	return core_rules_std.next_waiter(entry);
}

/* ---- RELEASE ignoring the handle --------------------------------------- */

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

/* ---- a grant from the lock's own last fence ---------------------------- */

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

/* ---- the queue served from its tail, or never -------------------------- */

static struct core_waiter *
next_waiter_tail(struct core_entry *entry)
{
	struct core_link *queue = core_entry_queue(entry);

	if (queue == NULL || queue->prev == queue)
		return NULL;
	return waiter_of(queue->prev);
}

static struct core_waiter *
next_waiter_none(struct core_entry *entry)
{
	(void)entry;
	return NULL;
}

/* ---- expiry one millisecond early or late ------------------------------ */

/* The standard grant's steps after its decision: mint hwm + 1 and set the
 * lease, or refuse when the (broken) decision said the lock is not free. */
static enum core_status
grant_when(bool lock_is_free, struct core_lock *lock, uint64_t *hwm,
    core_time now, int64_t lease_ms, uint64_t secret)
{
	uint64_t fence;

	if (!lock_is_free)
		return CORE_ERR_CONFLICT;
	if (core_rule_fence_next(*hwm, &fence) != CORE_OK)
		return CORE_ERR_OVERFLOW;
	*hwm = fence;
	lock_set(lock, fence, now, lease_ms, secret);
	return CORE_OK;
}

/* The standard reclaim's step after its (broken) expiry test. */
static bool
reclaim_when(bool expired, struct core_lock *lock)
{
	if (!expired)
		return false;
	lock_clear(lock);
	return true;
}

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
	return grant_when(decide_early(lock, now), lock, hwm, now, lease_ms,
	    secret);
}

static bool
reclaim_early(struct core_lock *lock, core_time now)
{
	return reclaim_when(expired_early(lock, now), lock);
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
	return grant_when(decide_late(lock, now), lock, hwm, now, lease_ms,
	    secret);
}

static bool
reclaim_late(struct core_lock *lock, core_time now)
{
	return reclaim_when(expired_late(lock, now), lock);
}

/* ---- expired leases never freed ---------------------------------------- */

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

/* The std grant re-checks decide and would answer CONFLICT, hiding the
 * broken decide: this one trusts it. */
static enum core_status
grant_trusting_decide(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	return grant_when(true, lock, hwm, now, lease_ms, secret);
}

/* ---- renewals that ignore the handle, forget the lease or refuse ------- */

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

/* ---- lock-delay ignored ------------------------------------------------ */

static bool
delay_never_blocks(core_time delay_until, core_time now)
{
	(void)delay_until;
	(void)now;
	return false;
}

/* ---- FORCE freeing whoever holds --------------------------------------- */

static bool
force_any_fence(struct core_lock *lock, uint64_t fence)
{
	(void)fence;
	if (lock->fence == 0)
		return false;
	lock_clear(lock);
	return true;
}

/* ---- WATCH firing at once, or never ------------------------------------ */

static bool
watch_fires_always(const struct core_watch_mark *watched, bool by_fence,
    const struct core_watch_mark *current)
{
	(void)watched;
	(void)by_fence;
	(void)current;
	return true;
}

static bool
watch_fires_never(const struct core_watch_mark *watched, bool by_fence,
    const struct core_watch_mark *current)
{
	(void)watched;
	(void)by_fence;
	(void)current;
	return false;
}

/* Main before issue 25: the newest holder's fence alone, so the end of an
 * older hold of several never answers a WATCH of the next change. */
static bool
watch_fires_on_fence_only(const struct core_watch_mark *watched,
    bool by_fence, const struct core_watch_mark *current)
{
	(void)by_fence;
	return watched->fence != current->fence;
}

/* ---- the tables ------------------------------------------------------- */

#define RULES_STD_BASE \
	.fence_next = core_rule_fence_next, \
	.lease_expired = core_rule_lease_expired, \
	.decide = core_rule_decide, \
	.grant = core_rule_grant, \
	.is_holder = core_rule_is_holder, \
	.renew = core_rule_renew, \
	.release = core_rule_release, \
	.reclaim_if_expired = core_rule_reclaim_if_expired, \
	.next_waiter = next_waiter_std, \
	.admits = core_rule_admits, \
	.restore_limit = core_rule_restore_limit, \
	.restore_refuses = core_rule_restore_refuses,

const struct core_rules broken_rules_delay_ignored = {
	RULES_STD_BASE
	.delay_blocks = delay_never_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = core_rule_watch_fires,
	.rid_repeat = core_rule_rid_repeat,
};

const struct core_rules broken_rules_force_any_fence = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = force_any_fence,
	.watch_fires = core_rule_watch_fires,
	.rid_repeat = core_rule_rid_repeat,
};

const struct core_rules broken_rules_watch_fires_early = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = watch_fires_always,
	.rid_repeat = core_rule_rid_repeat,
};

const struct core_rules broken_rules_watch_never_fires = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = watch_fires_never,
	.rid_repeat = core_rule_rid_repeat,
};

const struct core_rules broken_rules_watch_fence_only = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = watch_fires_on_fence_only,
	.rid_repeat = core_rule_rid_repeat,
};

const struct core_rules broken_rules_release_ignores_handle = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = release_ignoring_handle,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_holder_by_fence_only = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = is_holder_by_fence,
	.renew = renew_by_fence,
	.release = release_by_fence,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_grant_reuses_fence = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = grant_reusing_fence,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_grant_from_own_fence = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = grant_from_own_fence,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_queue_is_lifo = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_tail,
	RULES_STD_REST
};

const struct core_rules broken_rules_waiters_never_granted = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_none,
	RULES_STD_REST
};

const struct core_rules broken_rules_lease_ends_early = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_early,
	.decide = decide_early,
	.grant = grant_early,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_early,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_lease_ends_late = {
	.fence_next = core_rule_fence_next,
	.lease_expired = expired_late,
	.decide = decide_late,
	.grant = grant_late,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_late,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_never_reclaims = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = reclaim_never,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_grant_while_held = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = decide_always,
	.grant = grant_trusting_decide,
	.is_holder = core_rule_is_holder,
	.renew = core_rule_renew,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_renew_ignores_handle = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_ignoring_handle,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_renew_forgets_lease = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_forgetting_the_lease,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

const struct core_rules broken_rules_renew_refuses_holder = {
	.fence_next = core_rule_fence_next,
	.lease_expired = core_rule_lease_expired,
	.decide = core_rule_decide,
	.grant = core_rule_grant,
	.is_holder = core_rule_is_holder,
	.renew = renew_refusing,
	.release = core_rule_release,
	.reclaim_if_expired = core_rule_reclaim_if_expired,
	.next_waiter = next_waiter_std,
	RULES_STD_REST
};

/* ---- rid= ----------------------------------------------------------- */

/* A repeat is never recognised: the client's retry queues behind its own
 * grant (or TRY answers HELD to the holder of the grant it asks for). */
static bool
rid_never_repeats(const struct core_lock *lock, const char *rid,
    size_t rid_len)
{
	(void)lock;
	(void)rid;
	(void)rid_len;
	return false;
}

const struct core_rules broken_rules_rid_ignored = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = core_rule_watch_fires,
	.rid_repeat = rid_never_repeats,
};

/* A rid matches when one is a prefix of the other: the shorter length is
 * compared, so rid=ab is taken for a repeat of rid=a. */
static bool
rid_matching_a_prefix(const struct core_lock *lock, const char *rid,
    size_t rid_len)
{
	const char *held;
	size_t len = core_tags_rid(lock->tags, &held);
	size_t n = rid_len < len ? rid_len : len;

	return lock->fence != 0 && n > 0 && memcmp(held, rid, n) == 0;
}

const struct core_rules broken_rules_rid_prefix = {
	RULES_STD_BASE
	.delay_blocks = core_rule_delay_blocks,
	.delay_end = core_rule_delay_end,
	.force = core_rule_force,
	.watch_fires = core_rule_watch_fires,
	.rid_repeat = rid_matching_a_prefix,
};

/* ---- holder sets (limit=, mode=shared) --------------------------------- */

/* The standard table but for the six rules given. */
#define RULES_TABLE(admits_, next_waiter_, grant_, rid_repeat_, \
    restore_limit_, restore_refuses_) { \
	.fence_next = core_rule_fence_next, \
	.lease_expired = core_rule_lease_expired, \
	.decide = core_rule_decide, \
	.grant = (grant_), \
	.is_holder = core_rule_is_holder, \
	.renew = core_rule_renew, \
	.release = core_rule_release, \
	.reclaim_if_expired = core_rule_reclaim_if_expired, \
	.next_waiter = (next_waiter_), \
	.delay_blocks = core_rule_delay_blocks, \
	.delay_end = core_rule_delay_end, \
	.force = core_rule_force, \
	.watch_fires = core_rule_watch_fires, \
	.rid_repeat = (rid_repeat_), \
	.admits = (admits_), \
	.restore_limit = (restore_limit_), \
	.restore_refuses = (restore_refuses_), \
}

/* The standard table but for the four rules holder sets break, given. */
#define RULES_WITH(admits_, next_waiter_, grant_, rid_repeat_) \
	RULES_TABLE(admits_, next_waiter_, grant_, rid_repeat_, \
	    core_rule_restore_limit, core_rule_restore_refuses)

/* A semaphore admits one holder more than its limit (<= for <). */
static bool
admits_one_over_the_limit(const struct core_holding *held, bool shared)
{
	if (held->limit > 1)
		return held->holders <= held->limit;
	return core_rule_admits(held, shared);
}

const struct core_rules broken_rules_admits_over_limit = RULES_WITH(
    admits_one_over_the_limit, next_waiter_std, core_rule_grant,
    core_rule_rid_repeat);

/* A reader is admitted beside any holder, a writer too. */
static bool
admits_reader_beside_anyone(const struct core_holding *held, bool shared)
{
	return shared || core_rule_admits(held, shared);
}

const struct core_rules broken_rules_reader_beside_writer = RULES_WITH(
    admits_reader_beside_anyone, next_waiter_std, core_rule_grant,
    core_rule_rid_repeat);

/* While a writer waits at the head, the first reader behind it is served
 * instead (readers overtake a waiting writer, which then starves). */
static struct core_waiter *
next_waiter_reader_first(struct core_entry *entry)
{
	struct core_waiter *head = next_waiter_std(entry);
	struct core_link *l;

	if (head == NULL || head->shared)
		return head;
	for (l = core_entry_queue_first(entry); l != core_entry_queue(entry); l = l->next)
		if (waiter_of(l)->shared)
			return waiter_of(l);
	return head;
}

const struct core_rules broken_rules_reader_overtakes_writer = RULES_WITH(
    core_rule_admits, next_waiter_reader_first, core_rule_grant,
    core_rule_rid_repeat);

/* The queue is served only when nobody holds: the run of readers at the
 * head is not granted together, nor a free permit while others hold. */
static struct core_waiter *
next_waiter_only_when_free(struct core_entry *entry)
{
	if (entry->lock.fence != 0 ||
	    (entry->multi != NULL && entry->multi->count > 0))
		return NULL;
	return next_waiter_std(entry);
}

const struct core_rules broken_rules_one_grant_at_a_time = RULES_WITH(
    core_rule_admits, next_waiter_only_when_free, core_rule_grant,
    core_rule_rid_repeat);

/* Each grant mints hwm + 1 but leaves the counter where it was: the
 * grants of one run (or any two in a row) share a fence. */
static enum core_status
grant_not_advancing(struct core_lock *lock, uint64_t *hwm, core_time now,
    int64_t lease_ms, uint64_t secret)
{
	uint64_t kept = *hwm;
	enum core_status st = core_rule_grant(lock, hwm, now, lease_ms,
	    secret);

	*hwm = kept;
	return st;
}

const struct core_rules broken_rules_grant_keeps_counter = RULES_WITH(
    core_rule_admits, next_waiter_std, grant_not_advancing,
    core_rule_rid_repeat);

/* A rid repeat finds any live holder that was granted with some rid,
 * not the one with this rid. */
static bool
rid_any_holder(const struct core_lock *lock, const char *rid, size_t rid_len)
{
	const char *held;

	(void)rid;
	return lock->fence != 0 && rid_len > 0 &&
	    core_tags_rid(lock->tags, &held) > 0;
}

const struct core_rules broken_rules_rid_any_holder = RULES_WITH(
    core_rule_admits, next_waiter_std, core_rule_grant, rid_any_holder);

/* ---- a failed commit's fall-back (core_table_restore) ------------------ */

/* The standard table but for the two restore rules, given. */
#define RULES_RESTORING(restore_limit_, restore_refuses_) \
	RULES_TABLE(core_rule_admits, next_waiter_std, core_rule_grant, \
	    core_rule_rid_repeat, restore_limit_, restore_refuses_)

/* Session 24's first defect: the records alone tell the limit (1 for
 * none), and the waiters are never refused, so a limit=2 waiter is
 * handed the lock as a mutex. */
static uint16_t
restore_limit_from_records(uint16_t stored, uint16_t queued,
    size_t nrecords, bool holds, bool delay_runs)
{
	(void)queued;
	(void)nrecords;
	(void)holds;
	(void)delay_runs;
	return stored;
}

static bool
restore_refuses_nobody(uint16_t limit, uint16_t queued)
{
	(void)limit;
	(void)queued;
	return false;
}

const struct core_rules broken_rules_restore_limit_from_records =
    RULES_RESTORING(restore_limit_from_records, restore_refuses_nobody);

/* Session 24's second defect: the limit is right, but the waiters
 * admitted under another one stay and are granted under it. */
const struct core_rules broken_rules_restore_keeps_misfits =
    RULES_RESTORING(core_rule_restore_limit, restore_refuses_nobody);

/* The over-refusal: any record, an ended lock-delay's too, tells the
 * limit, so waiters that fit the idle name are refused. */
static uint16_t
restore_limit_any_record(uint16_t stored, uint16_t queued, size_t nrecords,
    bool holds, bool delay_runs)
{
	if (nrecords == 0 && queued != 0)
		return queued;
	(void)holds;
	(void)delay_runs;
	return stored;
}

const struct core_rules broken_rules_restore_ended_delay_refuses =
    RULES_RESTORING(restore_limit_any_record, core_rule_restore_refuses);
