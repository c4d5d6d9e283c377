/*
 * table_int.h - what the lock table's files share, and nothing outside
 * them includes: core/table.c (the table itself: entries, their names and
 * memory, the deadlines' heap room, replies, listing), core/hold.c
 * (holding: holders and holder sets, owners' bindings, waiters, grants,
 * hand-off, expiry, WATCH), core/ops.c (the operations core.h declares)
 * and core/restore.c (durability: the records of what changed, and the
 * restore after a crash, a take-over or a failed commit).  Pure, as the
 * rest of core/.  Internal non-static names carry core__.
 */
#ifndef LOCKD_CORE_TABLE_INT_H
#define LOCKD_CORE_TABLE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "core/list.h"

enum {
	TIMER_LEASE = 0,  /* sorts first at equal instants */
	TIMER_WAIT = 1,
	TIMER_HOLDER = 2  /* a core_holder's lease */
};

enum {
	ENTRY_LISTED = 1,  /* on table->changed */
	ENTRY_DIRTY = 2,   /* its durable record changed */
	ENTRY_RESTORED = 4,/* set from the store since the last drain */
	ENTRY_KEY0 = 8,    /* the key <name> holds a record (kept across
	                    * drains) */
	ENTRY_HANDON = 16  /* a waiter left: hand on once the session that
	                    * leaves has left every queue */
};

/*
 * One holder of a name: the entry's own (h NULL) or one of its
 * core_holders.  The two keep the same fields under the same names, and
 * these reach them for either.
 */
struct hold {
	struct core_entry *e;
	struct core_holder *h;
};

#define HOLD(x, field) ((x).h != NULL ? &(x).h->field : &(x).e->field)

/* The session x is bound to by onclose=release; NULL: none.  (The own
 * holder keeps it in its tags' bond, a core_holder in itself.) */
static inline struct core_session *
core__hold_owner(struct hold x)
{
	return x.h != NULL ? x.h->owner : core_entry_owner(x.e);
}

/* What a new holder asked for, beside its lease. */
struct hold_options {
	bool onclose_release;
	int64_t delay_ms;        /* for its tags: the grant reads them */
	uint8_t label_len;
	const char *label;
	uint8_t rid_len;
	const char *rid;
	uint16_t limit;          /* 1..CORE_LIMIT_MAX */
	bool shared;
	/* The new hold's tags, made from label, rid and delay_ms, with a
	 * bond when own_bound (or a waiter's): the grant takes them over. */
	struct core_tags *tags;
};

static inline struct hold
hold_own(struct core_entry *e)
{
	struct hold x = { e, NULL };

	return x;
}

static inline struct hold
hold_more(struct core_entry *e, struct core_holder *h)
{
	struct hold x = { e, h };

	return x;
}

/* Is e more than a plain mutex: a limit above 1, or holders beyond its
 * own (now, or ended since the last drain)?  A plain mutex that has been
 * waited for or watched has a core_multi too, and is not. */
static inline bool
holder_set(const struct core_entry *e)
{
	return e->multi != NULL && (e->multi->limit > 1 ||
	    e->multi->holders != NULL || e->multi->ended != NULL);
}

/* The name's limit: 1 for a plain mutex. */
static inline uint16_t
entry_limit(const struct core_entry *e)
{
	return e->multi != NULL ? e->multi->limit : 1;
}

/* Every holder of e, its own first. */
static inline size_t
holders_count(const struct core_entry *e)
{
	return (e->lock.fence != 0) + (e->multi != NULL ? e->multi->count : 0);
}

static inline bool
name_ok(size_t len)
{
	return len >= 1 && len <= CORE_NAME_MAX;
}

/* Does no ACQUIRE wait for e? */
static inline bool
queue_empty(const struct core_entry *e)
{
	return e->multi == NULL || link_empty(&e->multi->queue);
}

/* Does a WATCH wait on e? */
static inline bool
entry_watched(const struct core_entry *e)
{
	return e->multi != NULL && !link_empty(&e->multi->watchers);
}

/* ---- table.c ----------------------------------------------------------- */

struct core_entry **core__bucket_at(const struct core_table *table,
    uint32_t hash);

void core__emit(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct core_entry *e,
    struct core_reply *r);

void core__entry_dirty(struct core_table *table, struct core_entry *e);

void core__entry_drop(struct core_table *table, struct core_entry *e);

struct core_entry *core__entry_find(struct core_table *table, const char *name,
    size_t len);

struct core_entry *core__entry_get(struct core_table *table, const char *name,
    size_t len);

/* The entry of a name whose hash the caller has: found, or made. */
struct core_entry *core__entry_get_hashed(struct core_table *table,
    const char *name, size_t len, uint32_t hash);

bool core__entry_idle(const struct core_entry *e);

/* Puts e on the changed list, where it stays (and is not dropped) until the
 * next core_table_changes(). */
void core__entry_touch(struct core_table *table, struct core_entry *e);

/* Every entry and waiter may carry a timer: keep room for all of them. */
bool core__heap_reserve(struct core_table *table, size_t extra);

void core__holder_list_free(struct core_table *table, struct core_holder *h);

/*
 * Entries keep the low 32 bits of their name's hash, enough to pick a
 * bucket in any table that fits in memory: dropping an entry or growing
 * the table then does not hash the name again, and a chain is walked on
 * the hash before the name is compared.
 */
uint32_t core__name_hash(const struct core_table *table, const char *name,
    size_t len);

void core__reply_limit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_limit_kind kind);

void core__reply_simple(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct core_entry *e);

/* tags (NULL: none) again, with room for a bond: the same when they have
 * it, else a copy that has, and tags freed; NULL without memory, tags
 * untouched. */
struct core_tags *core__tags_bondable(struct core_table *table,
    struct core_tags *tags);

void core__tags_free(struct core_table *table, struct core_tags *t);

/* Tags for a label and a rid (either may be empty), a lock-delay (0:
 * none) and, when `bound`, room for an entry's own holder's onclose
 * binding; or NULL: none of them asked for, or (*nomem set) no memory. */
struct core_tags *core__tags_make(struct core_table *table, const char *label,
    size_t label_len, const char *rid, size_t rid_len, int64_t delay_ms,
    bool bound, bool *nomem);

void core__timer_clear(struct core_table *table, struct core_timer *t);

void core__timer_set(struct core_table *table, struct core_timer *t,
    core_time when);

void core__waiter_free(struct core_table *table, struct core_waiter *w);

/* ---- hold.c ------------------------------------------------------------ */

/* Binds x to session.  The entry's own holder keeps the link in its
 * tags' bond: every path that may bind one makes it (tags_make's
 * `bound`, tags_bondable). */
void core__bind_owner(struct hold x, struct core_session *session);

/* Sets the name's lock-delay (0: none), keeping the count of names in
 * one. */
void core__delay_set(struct core_table *table, struct core_entry *e,
    core_time until);

void core__hand_off(struct core_table *table, struct core_entry *e,
    core_time now);

/* The hold x's record changed (and so its entry's). */
void core__hold_dirty(struct core_table *table, struct hold x);

/* The holder with this fence, or e's own when none has it (the rules
 * then judge the handle against the own holder, free or not). */
struct hold core__hold_find(struct core_entry *e, uint64_t fence);

/*
 * Book-keeping after the rules freed a hold: `ended` is the hold as it
 * was, `how` the way it ended.  A lock-delay it owes starts here (a later
 * end never shortens one already running) and holds the whole name back,
 * whoever else still holds it; the entry's timer then waits for the delay
 * when its own holder is gone.  A holder beyond the entry's own moves to
 * the ended list, whose keys the next drain deletes.
 */
void core__holding_ended(struct core_table *table, struct hold x,
    const struct core_lock *ended, enum core_end how, core_time now);

/* e's multi, made on first need (limit 1, nobody waiting): NULL without
 * memory. */
struct core_multi *core__multi_get(struct core_table *table,
    struct core_entry *e);

/* Will the hold asked for be e's own, bound by onclose=release: then its
 * tags need room for the bond (grant_to makes it late if not). */
bool core__own_bound(const struct core_entry *e,
    const struct hold_options *opt);

/* A waiter left e's queue (its wait ran out, its connection closed): the
 * requests now at the head may be admitted - shared ones that waited
 * behind an exclusive one.  A plain mutex never has a free lock and
 * waiters, so for it this changes nothing. */
void core__queue_changed(struct core_table *table, struct core_entry *e,
    core_time now);

/* Every operation starts here: every expired lease is freed and the lock
 * handed to the head of its queue. */
void core__reclaim(struct core_table *table, struct core_entry *e,
    core_time now);

void core__reply_misfit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_misfit why);

void core__report_end(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct hold x, uint64_t fence,
    core_time now);

/* What STATUS, LIST and WATCH show of e; reclaimed by the caller.  An idle
 * name shows no limit: the next request sets one. */
void core__status_fill(const struct core_table *table,
    const struct core_entry *e, core_time now, struct core_lock_status *status);

/*
 * The start of ACQUIRE and TRY, their arguments checked: finds the entry
 * (expired leases reclaimed first), answers a rid repeat and a request of
 * the wrong kind, and grants at once when nobody waits and the holders
 * admit it.  Returns true when the request was answered, with *status its
 * outcome; else *ep is the entry, busy or with waiters.
 */
bool core__take_if_free(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, int64_t lease,
    const struct hold_options *opt, uint64_t tag, core_time now,
    struct core_entry **ep, enum core_status *status);

void core__unbind_owner(struct hold x);

void core__waiter_remove(struct core_table *table, struct core_waiter *w);

/* Answers TIMEOUT to a waiter whose wait has elapsed and removes it. */
void core__waiter_time_out(struct core_table *table, struct core_waiter *w);

/* Answers a WATCH: CHANGED with the lock as it is now. */
void core__watch_answer(struct core_table *table, struct core_entry *e,
    struct core_session *session, uint64_t tag, core_time now);

/* e's holders as WATCH compares them. */
struct core_watch_mark core__watch_mark(const struct core_entry *e);

/* ---- ops.c ------------------------------------------------------------- */

/* Releases a lease because its onclose session went away. */
void core__release_onclose(struct core_table *table, struct hold x,
    core_time now);

#endif
