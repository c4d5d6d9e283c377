/*
 * broken_rules.h - deliberately broken lock rules, each one mistake a lock
 * service could plausibly make.  The model checker and the simulator both
 * run them in their guard tests: each must catch every variant it is given,
 * or its checks are not worth their name.  They live only under tests/; the
 * daemon has no way to select them.
 *
 * Each table is core_rules_std but for the mistake it names.  The table
 * calls the composite rules (decide, grant, renew, release,
 * reclaim_if_expired, next_waiter), and the standard composites call the
 * standard primitives directly, so a broken primitive comes with the
 * composites rebuilt on top of it, or the table would never see the mistake.
 */
#ifndef LOCKD_TESTS_BROKEN_RULES_H
#define LOCKD_TESTS_BROKEN_RULES_H

#include "core/core.h"

/* RELEASE frees the lock whatever handle it is given. */
extern const struct core_rules broken_rules_release_ignores_handle;
/* The fence alone proves the holder: renew and release trust it. */
extern const struct core_rules broken_rules_holder_by_fence_only;
/* A grant mints the high-water mark again instead of hwm + 1. */
extern const struct core_rules broken_rules_grant_reuses_fence;
/* A grant counts from the lock's own last fence, so a reclaim (which frees
 * the record) resets the counter. */
extern const struct core_rules broken_rules_grant_from_own_fence;
/* The queue is served from its tail: the newest waiter first. */
extern const struct core_rules broken_rules_queue_is_lifo;
/* A freed lock is never handed to its queue. */
extern const struct core_rules broken_rules_waiters_never_granted;
/* A lease ends one millisecond early (now + 1 >= expiry). */
extern const struct core_rules broken_rules_lease_ends_early;
/* A lease ends one millisecond late (now > expiry). */
extern const struct core_rules broken_rules_lease_ends_late;
/* Expired leases are never freed. */
extern const struct core_rules broken_rules_never_reclaims;
/* decide grants a held lock, with a grant that trusts decide (the standard
 * grant re-checks decide and would hide the mistake). */
extern const struct core_rules broken_rules_grant_while_held;
/* RENEW extends the lease whatever handle it is given. */
extern const struct core_rules broken_rules_renew_ignores_handle;
/* RENEW answers yes and leaves the expiry where it was. */
extern const struct core_rules broken_rules_renew_forgets_lease;
/* RENEW refuses even the holder. */
extern const struct core_rules broken_rules_renew_refuses_holder;
/* A lock in lock-delay is granted all the same. */
extern const struct core_rules broken_rules_delay_ignored;
/* FORCE frees whoever holds the lock, whatever fence it is given (a raw
 * delete, as etcd's and ZooKeeper's admin release are). */
extern const struct core_rules broken_rules_force_any_fence;
/* A WATCH fires at once, before anything changed. */
extern const struct core_rules broken_rules_watch_fires_early;
/* A WATCH never fires: only its wait ends it. */
extern const struct core_rules broken_rules_watch_never_fires;
/* A WATCH of the next change looks at the newest holder's fence alone,
 * so it misses the end of an older hold of several. */
extern const struct core_rules broken_rules_watch_fence_only;
/* rid=: a repeat never recognised (it queues behind its own grant). */
extern const struct core_rules broken_rules_rid_ignored;
/* rid=: one rid matches another that it is a prefix of. */
extern const struct core_rules broken_rules_rid_prefix;
/* Holder sets: a semaphore admits one holder more than its limit. */
extern const struct core_rules broken_rules_admits_over_limit;
/* A reader is admitted beside any holder, a writer too. */
extern const struct core_rules broken_rules_reader_beside_writer;
/* A reader behind a waiting writer is served first. */
extern const struct core_rules broken_rules_reader_overtakes_writer;
/* The queue is served only when nobody holds (no shared run, no second
 * permit handed on while others hold). */
extern const struct core_rules broken_rules_one_grant_at_a_time;
/* A grant mints hwm + 1 and leaves the counter: fences repeat. */
extern const struct core_rules broken_rules_grant_keeps_counter;
/* A rid repeat finds any live holder granted with a rid. */
extern const struct core_rules broken_rules_rid_any_holder;

/* A failed commit's fall-back: the records alone tell the limit and no
 * waiter is refused (a limit=2 waiter granted as a mutex). */
extern const struct core_rules broken_rules_restore_limit_from_records;
/* ... the limit is right but the misfit waiters stay (a plain request
 * granted beside a restored permit). */
extern const struct core_rules broken_rules_restore_keeps_misfits;
/* ... an ended lock-delay's record tells the limit too (waiters that fit
 * the idle name refused). */
extern const struct core_rules broken_rules_restore_ended_delay_refuses;

#endif
