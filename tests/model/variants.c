/*
 * variants.c - the model checker's guard variants: which broken rules
 * (tests/lib/broken_rules.c, shared with the simulator) or broken harness
 * the checker must catch, and with which property.  A variant it does not
 * catch means the checker itself is broken.
 */
#include <string.h>

#include "tests/lib/broken_rules.h"
#include "tests/model/model.h"

const struct model_variant model_variants[] = {
	{ "release_ignoring_handle",
	  "release frees the lock whatever handle it is given",
	  &broken_rules_release_ignores_handle, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "is_holder_ignoring_secret",
	  "the fence alone proves the holder (renew and release trust it)",
	  &broken_rules_holder_by_fence_only, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "grant_reusing_hwm",
	  "grant mints the high-water mark again instead of hwm + 1",
	  &broken_rules_grant_reuses_fence, MODEL_HARNESS_RIGHT,
	  MODEL_FENCING_MONOTONIC },
	{ "grant_from_own_fence",
	  "grant counts from the lock's own last fence, so a reclaim "
	  "resets the counter",
	  &broken_rules_grant_from_own_fence, MODEL_HARNESS_RIGHT,
	  MODEL_FENCING_MONOTONIC },
	{ "next_waiter_tail",
	  "the lock is handed to the newest waiter, not the oldest",
	  &broken_rules_queue_is_lifo, MODEL_HARNESS_RIGHT,
	  MODEL_FIFO_FAIRNESS },
	{ "lease_expired_late",
	  "a lease expires one instant late (now > expiry)",
	  &broken_rules_lease_ends_late, MODEL_HARNESS_RIGHT,
	  MODEL_LEASE_RECLAMATION_SAFETY },
	{ "lease_expired_early",
	  "a lease is reclaimed one instant early (now + 1 >= expiry)",
	  &broken_rules_lease_ends_early, MODEL_HARNESS_RIGHT,
	  MODEL_LEASE_RECLAMATION_SAFETY },
	{ "renew_ignoring_handle",
	  "renew extends the lease whatever handle it is given",
	  &broken_rules_renew_ignores_handle, MODEL_HARNESS_RIGHT,
	  MODEL_STALE_TOKEN_REJECTION },
	{ "decide_always_true",
	  "decide grants a held lock (with a grant that trusts decide)",
	  &broken_rules_grant_while_held, MODEL_HARNESS_RIGHT,
	  MODEL_MUTUAL_EXCLUSION },
	{ "next_waiter_none",
	  "a freed lock is never handed to its queue",
	  &broken_rules_waiters_never_granted, MODEL_HARNESS_RIGHT,
	  MODEL_NO_STARVATION },
	{ "renew_forgetting_the_lease",
	  "renew answers RENEWED but leaves the expiry where it was",
	  &broken_rules_renew_forgets_lease, MODEL_HARNESS_RIGHT,
	  MODEL_SHADOW_AGREEMENT },
	{ "failover_from_stale_hwm",
	  "after a fail-over the new leader mints fences from the "
	  "high-water mark it had, not the committed one",
	  &core_rules_std, MODEL_HARNESS_FAILOVER_STALE_HWM,
	  MODEL_FENCING_MONOTONIC },
	{ "delay_never_blocks",
	  "a lock in lock-delay is granted all the same",
	  &broken_rules_delay_ignored, MODEL_HARNESS_RIGHT,
	  MODEL_LOCK_DELAY },
	{ "force_any_fence",
	  "FORCE frees whoever holds, whatever fence it names",
	  &broken_rules_force_any_fence, MODEL_HARNESS_RIGHT,
	  MODEL_FORCE_EXACT_FENCE },
	{ "watch_fires_always",
	  "a WATCH is answered at once, before anything changed",
	  &broken_rules_watch_fires_early, MODEL_HARNESS_RIGHT,
	  MODEL_WATCH_ONCE },
	{ "watch_never_fires",
	  "a WATCH is never answered CHANGED, only timed out",
	  &broken_rules_watch_never_fires, MODEL_HARNESS_RIGHT,
	  MODEL_WATCH_ONCE },
	{ "watch_fence_only",
	  "a WATCH of the next change misses the end of an older hold of "
	  "several (it compares the newest holder's fence alone)",
	  &broken_rules_watch_fence_only, MODEL_HARNESS_RIGHT,
	  MODEL_WATCH_ONCE },
	{ "rid_never_repeats",
	  "a repeat of the live holder's rid is taken for a new request "
	  "(it queues behind its own grant, or TRY answers HELD)",
	  &broken_rules_rid_ignored, MODEL_HARNESS_RIGHT,
	  MODEL_RID_IDEMPOTENT },
	{ "rid_matching_a_prefix",
	  "a rid matches the holder's when one is a prefix of the other "
	  "(rid=ab gets the grant of rid=a)",
	  &broken_rules_rid_prefix, MODEL_HARNESS_RIGHT,
	  MODEL_RID_IDEMPOTENT },
	{ "admits_over_limit",
	  "a semaphore admits one holder more than its limit",
	  &broken_rules_admits_over_limit, MODEL_HARNESS_RIGHT,
	  MODEL_HOLDER_LIMIT },
	{ "reader_beside_writer",
	  "a shared request is admitted beside an exclusive holder",
	  &broken_rules_reader_beside_writer, MODEL_HARNESS_RIGHT,
	  MODEL_MUTUAL_EXCLUSION },
	{ "reader_overtakes_writer",
	  "a reader behind a waiting writer is served before it",
	  &broken_rules_reader_overtakes_writer, MODEL_HARNESS_RIGHT,
	  MODEL_FIFO_FAIRNESS },
	{ "one_grant_at_a_time",
	  "the queue is served only when nobody holds: no shared run, "
	  "no permit handed on while others hold",
	  &broken_rules_one_grant_at_a_time, MODEL_HARNESS_RIGHT,
	  MODEL_NO_STARVATION },
	{ "grant_keeping_the_counter",
	  "a grant mints hwm + 1 but leaves the counter, so the next "
	  "grant (a reader of the same run) gets the same fence",
	  &broken_rules_grant_keeps_counter, MODEL_HARNESS_RIGHT,
	  MODEL_FENCING_MONOTONIC },
	{ "rid_any_holder",
	  "a rid repeat gets the grant of any live holder that has a rid",
	  &broken_rules_rid_any_holder, MODEL_HARNESS_RIGHT,
	  MODEL_RID_IDEMPOTENT },
	{ "restore_limit_from_records",
	  "a failed commit's fall-back takes the limit from the records "
	  "alone (1 for none) and refuses no waiter: a limit=2 waiter "
	  "gets the lock as a mutex",
	  &broken_rules_restore_limit_from_records, MODEL_HARNESS_RIGHT,
	  MODEL_SHADOW_AGREEMENT },
	{ "restore_keeping_misfits",
	  "a failed commit's fall-back restores a permit but keeps the "
	  "plain waiters, one of them granted beside it",
	  &broken_rules_restore_keeps_misfits, MODEL_HARNESS_RIGHT,
	  MODEL_MUTUAL_EXCLUSION },
	{ "restore_ended_delay_refusing",
	  "a failed commit's fall-back takes the limit from an ended "
	  "lock-delay's record and refuses waiters that fit the idle name",
	  &broken_rules_restore_ended_delay_refuses, MODEL_HARNESS_RIGHT,
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
