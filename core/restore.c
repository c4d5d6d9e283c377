/*
 * restore.c - durability: the records of what changed since the last
 * drain (core_table_changes), and putting names back from records - after
 * a crash, at a take-over, and after a failed commit (the fall-back).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "core/core.h"
#include "core/heap.h"
#include "core/list.h"
#include "core/order.h"
#include "core/table_int.h"

/* ---- durability ------------------------------------------------------- */

/* The durable record of one hold of e (x), with the name's lock-delay. */
static void
record_fill(const struct core_entry *e, struct hold x,
    struct core_record *rec)
{
	const struct core_lock *lock = HOLD(x, lock);
	struct core_session *owner = core__hold_owner(x);
	const char *label, *rid;

	memset(rec, 0, sizeof(*rec));
	rec->delay_until = core_entry_delay_until(e);
	rec->fence = lock->fence;
	rec->secret = lock->secret;
	rec->expiry = lock->expiry;
	rec->lease_ms = lock->lease_ms;
	rec->delay_ms = core_tags_delay(lock->tags);
	rec->label_len = (uint8_t)core_tags_label(lock->tags, &label);
	memcpy(rec->label, label, rec->label_len);
	rec->rid_len = (uint8_t)core_tags_rid(lock->tags, &rid);
	memcpy(rec->rid, rid, rec->rid_len);
	rec->onclose_release = owner != NULL;
	rec->owner_id = owner != NULL ? owner->id : 0;
	/* The own holder keeps the record a single-holder table wrote. */
	if (x.h != NULL) {
		rec->limit = entry_limit(e);
		rec->shared = x.h->shared;
	}
}

/*
 * The records of one dirty entry, per key.  The key <name>: its own
 * holder, or - with no holder left at all - the name's lock-delay (fence
 * 0, with the limit when above 1), else a delete; a name with holders
 * beyond its own reports that delete only when the key holds a record.
 * Then every other holder whose record changed (granted, renewed,
 * rebound, or the name's lock-delay it carries moved) under its fence,
 * and a delete for each that ended.
 */
static size_t
entry_records(struct core_table *table, struct core_entry *e,
    void (*record)(void *ctx, const char *name, size_t name_len,
        uint64_t key_fence, const struct core_record *rec),
    void *ctx)
{
	struct core_holder *h, *next;
	struct core_record rec;
	bool own = e->lock.fence != 0;
	bool delay_only = !own && holders_count(e) == 0 && core_entry_delay_until(e) != 0;
	size_t n = 0;

	if (own || delay_only || !holder_set(e) ||
	    (e->flags & ENTRY_KEY0)) {
		if (own)
			record_fill(e, hold_own(e), &rec);
		else if (delay_only) {
			memset(&rec, 0, sizeof(rec));
			rec.delay_until = core_entry_delay_until(e);
			rec.limit = entry_limit(e) > 1 ? entry_limit(e) : 0;
		}
		if (record != NULL)
			record(ctx, e->name, e->name_len, 0,
			    own || delay_only ? &rec : NULL);
		if (own || delay_only)
			e->flags |= ENTRY_KEY0;
		else
			e->flags &= (uint8_t)~ENTRY_KEY0;
		n++;
	}
	if (e->multi == NULL)
		return n;
	for (h = e->multi->holders; h != NULL; h = h->next) {
		if (!h->dirty)
			continue;
		h->dirty = false;
		record_fill(e, hold_more(e, h), &rec);
		if (record != NULL)
			record(ctx, e->name, e->name_len, h->lock.fence, &rec);
		n++;
	}
	for (h = e->multi->ended; h != NULL; h = next) {
		next = h->next;
		if (record != NULL)
			record(ctx, e->name, e->name_len, h->ended_fence,
			    NULL);
		table->config.free(h);
		n++;
	}
	e->multi->ended = NULL;
	return n;
}

size_t
core_table_changes(struct core_table *table,
    void (*record)(void *ctx, const char *name, size_t name_len,
        uint64_t key_fence, const struct core_record *rec),
    void *ctx, bool *hwm_changed)
{
	struct core_entry *e = table->changed, *next;
	size_t n = 0;

	table->changed = NULL;
	for (; e != NULL; e = next) {
		next = e->changed_next;
		e->changed_next = NULL;
		if (e->flags & ENTRY_DIRTY)
			n += entry_records(table, e, record, ctx);
		else if (e->multi != NULL)
			core__holder_list_free(table, e->multi->ended);
		if (e->multi != NULL)
			e->multi->ended = NULL;
		e->flags &= ENTRY_KEY0;
		if (core__entry_idle(e))
			core__entry_drop(table, e);
	}
	if (hwm_changed != NULL)
		*hwm_changed = table->hwm_changed;
	table->hwm_changed = false;
	return n;
}

void
core_table_restore_hwm(struct core_table *table, uint64_t hwm)
{
	if (hwm > table->hwm)
		table->hwm = hwm;
}

/* Is this record the entry's own holder's (the key <name>): an exclusive
 * hold of a limit-1 name.  Fence 0 is a free name's lock-delay. */
static bool
record_is_own(const struct core_record *rec)
{
	return rec->fence != 0 && rec->limit <= 1 && !rec->shared;
}

/* Tags for a record's label, rid and lock-delay (lengths out of range:
 * none), with room for an onclose binding when it is the entry's own
 * holder's (`own`) and has one. */
static struct core_tags *
record_tags(struct core_table *table, const struct core_record *rec,
    bool own, bool *nomem)
{
	return core__tags_make(table, rec->label, rec->label_len <=
	    CORE_OWNER_MAX ? rec->label_len : 0, rec->rid,
	    rec->rid_len <= CORE_RID_MAX ? rec->rid_len : 0, rec->delay_ms,
	    own && rec->onclose_release, nomem);
}

/* The record of the restore's i-th: first, then more[0..nmore). */
static const struct core_record *
restore_rec(const struct core_record *first,
    const struct core_record *more, size_t i)
{
	return first != NULL ? (i == 0 ? first : &more[i - 1]) : &more[i];
}

/* Does some record of the restore belong to holder h (not the own)? */
static bool
restore_has(const struct core_record *first, const struct core_record *more,
    size_t n, const struct core_holder *h)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (!record_is_own(r) && r->fence == h->lock.fence &&
		    r->secret == h->lock.secret)
			return true;
	}
	return false;
}

/*
 * The holders beyond e's own set to the records that are theirs: one that
 * the table has with the same fence and secret keeps its binding (a
 * renewal rolled back) and takes the record's lease; the others go; a
 * record no holder has becomes one, from fresh[i] (made beforehand, so
 * that nothing here fails).  On return fresh[i] is the holder to release
 * once the whole name is restored (its connection is gone), else NULL.
 */
static void
restore_more(struct core_table *table, struct core_entry *e,
    const struct core_record *first, const struct core_record *more,
    size_t n, struct core_holder **fresh, core_time now)
{
	struct core_holder *h, **p;
	size_t i;

	if (e->multi == NULL)
		return;
	core__holder_list_free(table, e->multi->ended);
	e->multi->ended = NULL;
	p = &e->multi->holders;
	while ((h = *p) != NULL) {
		if (restore_has(first, more, n, h)) {
			p = &h->next;
			continue;
		}
		*p = h->next;
		core__unbind_owner(hold_more(e, h));
		core__timer_clear(table, &h->timer);
		table->stats.held--;
		e->multi->count--;
		table->more_holders--;
		core__tags_free(table, h->lock.tags);
		table->config.free(h);
	}
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);
		bool gone = false;

		if (r->fence == 0 || record_is_own(r))
			continue;
		core_table_restore_hwm(table, r->fence);
		for (h = e->multi->holders; h != NULL; h = h->next)
			if (h->lock.fence == r->fence &&
			    h->lock.secret == r->secret)
				break;
		if (h != NULL) {
			/* The same holder: its fresh twin is not needed. */
			core__tags_free(table, fresh[i]->lock.tags);
			table->config.free(fresh[i]);
		} else {
			h = fresh[i];
			h->next = e->multi->holders;
			e->multi->holders = h;
			e->multi->count++;
			table->more_holders++;
			table->stats.held++;
			h->lock.fence = r->fence;
			h->lock.secret = r->secret;
			h->shared = r->shared;
			h->granted_at = r->expiry - r->lease_ms < now ?
			    r->expiry - r->lease_ms : now;
			if (r->onclose_release && r->owner != NULL)
				core__bind_owner(hold_more(e, h), r->owner);
			else
				gone = r->onclose_release;
		}
		fresh[i] = gone ? h : NULL;
		h->dirty = false;   /* as the store has it */
		h->lock.expiry = r->expiry;
		h->lock.lease_ms = r->lease_ms;
		core__timer_set(table, &h->timer, h->lock.expiry);
	}
}

/* Frees what restore_prepare made and restore_more did not use. */
static void
restore_unprepare(struct core_table *table, struct core_holder **fresh,
    size_t n)
{
	size_t i;

	for (i = 0; fresh != NULL && i < n; i++)
		if (fresh[i] != NULL) {
			core__tags_free(table, fresh[i]->lock.tags);
			table->config.free(fresh[i]);
		}
	table->config.free(fresh);
}

/* A holder (with its tags) for every record beyond the own, before
 * anything changes: false without memory, having made nothing. */
static bool
restore_prepare(struct core_table *table, struct core_entry *e,
    const struct core_record *first, const struct core_record *more,
    size_t n, struct core_holder ***freshp)
{
	struct core_holder **fresh;
	bool any = false, nomem = false;
	size_t i;

	*freshp = NULL;
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		any = any || (r->fence != 0 && !record_is_own(r)) ||
		    r->limit > 1;
	}
	if (!any)
		return true;
	if (core__multi_get(table, e) == NULL || !core__heap_reserve(table, n))
		return false;
	fresh = table->config.realloc(NULL, n * sizeof(*fresh));
	if (fresh == NULL)
		return false;
	memset(fresh, 0, n * sizeof(*fresh));
	for (i = 0; i < n && !nomem; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (r->fence == 0 || record_is_own(r))
			continue;
		fresh[i] = table->config.realloc(NULL, sizeof(*fresh[i]));
		if (fresh[i] == NULL) {
			nomem = true;
			break;
		}
		memset(fresh[i], 0, sizeof(*fresh[i]));
		fresh[i]->timer.slot = CORE__HEAP_OUT;
		fresh[i]->timer.kind = TIMER_HOLDER;
		link_init(&fresh[i]->onclose_link);
		fresh[i]->entry = e;
		fresh[i]->lock.tags = record_tags(table, r, false, &nomem);
	}
	if (nomem) {
		restore_unprepare(table, fresh, n);
		return false;
	}
	*freshp = fresh;
	return true;
}

/*
 * The waiters of a name whose limit a restore changed were queued while,
 * in a change the store never got, the name was idle and took another
 * limit: restored with holders of the old limit, it was never idle for
 * them, so their kind does not fit it.  Each is answered BADARG (a limit
 * misfit), as it would have been on arriving, and leaves the queue -
 * never granted under a limit it did not ask for (a writer as one permit
 * beside a reader).
 */
static void
refuse_waiters(struct core_table *table, struct core_entry *e)
{
	while (!queue_empty(e)) {
		struct core_waiter *w = container_of(e->multi->queue.next,
		    struct core_waiter, queue_link);
		struct core_session *s = w->session;
		uint64_t tag = w->tag;

		core__waiter_remove(table, w);
		core__reply_misfit(table, s, tag, e, CORE_MISFIT_LIMIT);
	}
}

/* What a name's records say it comes back to, read and made ready (all
 * that needs memory) before anything of the entry changes. */
struct restore_plan {
	const struct core_record *own;   /* the key <name>'s; NULL: none */
	core_time delay_until;           /* the name's lock-delay; 0: none */
	uint16_t limit;                  /* the limit it takes */
	uint16_t queued;                 /* its waiters' limit; 0: none */
	struct core_tags *tags;          /* a new own holder's; NULL: none */
	struct core_holder **fresh;      /* restore_prepare's */
};

/*
 * The first step of a restore: reads the records `first` (NULL: none)
 * and more (n in all) of e into *plan, and makes what the second needs.
 * CORE_ERR_NOMEM leaves e and the table as they were.
 */
static enum core_status
restore_plan(struct core_table *table, struct core_entry *e,
    const struct core_record *first, const struct core_record *more,
    size_t n, core_time now, struct restore_plan *plan)
{
	const struct core_record *rec = NULL;
	bool nomem = false, holds = false;
	size_t i;

	memset(plan, 0, sizeof(*plan));
	plan->limit = 1;
	/* The limit its waiters fit; 0: nobody waits. */
	plan->queued = queue_empty(e) ? 0 : entry_limit(e);
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (record_is_own(r) || (r->fence == 0 && rec == NULL))
			rec = r;
		if (r->delay_until > plan->delay_until)
			plan->delay_until = r->delay_until;
		if (r->limit > plan->limit)
			plan->limit = r->limit;
		holds = holds || r->fence != 0;
	}
	plan->own = rec;
	/* A free name whose stored lock-delay is over is idle but for the
	 * waiters the table has: they keep the limit they queued under. */
	plan->limit = table->rules->restore_limit(plan->limit, plan->queued,
	    n, holds, plan->delay_until > now);
	/* Another holder's tags, made before anything changes. */
	if (rec != NULL && rec->fence != 0 && !(e->lock.fence == rec->fence &&
	    e->lock.secret == rec->secret))
		plan->tags = record_tags(table, rec, true, &nomem);
	if (nomem)
		return CORE_ERR_NOMEM;
	/* A lock-delay, running or owed by the own holder, is kept in the
	 * name's multi (core.h): made before anything changes. */
	if ((plan->delay_until != 0 || core_tags_delay(plan->tags) > 0) &&
	    core__multi_get(table, e) == NULL) {
		core__tags_free(table, plan->tags);
		return CORE_ERR_NOMEM;
	}
	if (!restore_prepare(table, e, first, more, n, &plan->fresh)) {
		core__tags_free(table, plan->tags);
		return CORE_ERR_NOMEM;
	}
	return CORE_OK;
}

/*
 * The second step, for e's own holder: puts back what the key <name>
 * says (rec; NULL or fence 0: nobody), with tags made for a new holder.
 * Returns true when that holder's connection is gone and it was released
 * as the close would have (and its lock handed on).
 */
static bool
restore_own(struct core_table *table, struct core_entry *e,
    const struct core_record *rec, struct core_tags *tags, core_time now)
{
	if (rec == NULL || rec->fence == 0) {
		if (e->lock.fence != 0) {
			core__unbind_owner(hold_own(e));
			table->stats.held--;
			core__tags_free(table, e->lock.tags);
			memset(&e->lock, 0, sizeof(e->lock));
		}
		core__timer_clear(table, &e->timer);
		if (core_entry_delay_until(e) != 0)
			core__timer_set(table, &e->timer, core_entry_delay_until(e));
		return false;
	}
	core_table_restore_hwm(table, rec->fence);
	if (e->lock.fence == rec->fence && e->lock.secret == rec->secret) {
		/* The same holder (a renewal rolled back): keep its binding.
		 * Its lock-delay is its grant's, as is the record's. */
		e->lock.expiry = rec->expiry;
		e->lock.lease_ms = rec->lease_ms;
		core__timer_set(table, &e->timer, e->lock.expiry);
		return false;
	}
	if (e->lock.fence != 0)
		core__unbind_owner(hold_own(e));
	else
		table->stats.held++;
	e->lock.fence = rec->fence;
	e->lock.secret = rec->secret;
	e->lock.expiry = rec->expiry;
	e->lock.lease_ms = rec->lease_ms;
	core__tags_free(table, e->lock.tags);
	e->lock.tags = tags;
	/* The record keeps no grant time; its last grant or renewal is the
	 * closest it tells, and no later than now. */
	e->granted_at = rec->expiry - rec->lease_ms < now ?
	    rec->expiry - rec->lease_ms : now;
	core__timer_set(table, &e->timer, e->lock.expiry);
	if (rec->onclose_release && rec->owner != NULL) {
		/* Its connection is still there: bound again. */
		core__bind_owner(hold_own(e), rec->owner);
	} else if (rec->onclose_release) {
		/* Its connection is gone: release it as its close would
		 * have, and make that durable. */
		core__release_onclose(table, hold_own(e), now);
		return true;
	}
	return false;
}

/*
 * Restores one name from its records: `first` (NULL: none) and
 * more[0..nmore).  The own holder's record is handled exactly as a
 * single-holder table did (restore_own); the others by restore_more.
 */
static enum core_status
restore_hashed(struct core_table *table, const char *name, size_t name_len,
    uint32_t hash, const struct core_record *first,
    const struct core_record *more, size_t nmore, core_time now)
{
	struct core_entry *e;
	struct restore_plan plan;
	size_t i, n = (first != NULL) + nmore;
	bool released;

	if (n > CORE_LIMIT_MAX)
		return CORE_ERR_BADARG;
	if ((e = core__entry_get_hashed(table, name, name_len, hash)) == NULL)
		return CORE_ERR_NOMEM;
	/* Once per name between two drains: a second restore would undo
	 * what the first handed on (a grant already answered). */
	if (e->flags & ENTRY_RESTORED)
		return CORE_OK;
	if (restore_plan(table, e, first, more, n, now, &plan) != CORE_OK)
		return CORE_ERR_NOMEM;
	e->flags &= (uint8_t)~(ENTRY_DIRTY | ENTRY_KEY0);
	e->flags |= ENTRY_RESTORED;
	if (plan.own != NULL)
		e->flags |= ENTRY_KEY0;
	e->user = 0;   /* what the caller noted of its state is gone */
	/* Listed without being dirty, so that an entry restored to free with
	 * nobody waiting is dropped by the next core_table_changes. */
	core__entry_touch(table, e);
	if (e->multi != NULL)
		e->multi->limit = plan.limit;
	if (table->rules->restore_refuses(entry_limit(e), plan.queued))
		refuse_waiters(table, e);
	/* The name's lock-delay, whoever holds it. */
	core__delay_set(table, e, plan.delay_until);
	restore_more(table, e, first, more, n, plan.fresh, now);
	released = restore_own(table, e, plan.own, plan.tags, now);
	/* Holders whose connection is gone go as their close would have. */
	for (i = 0; plan.fresh != NULL && i < n; i++)
		if (plan.fresh[i] != NULL) {
			core__release_onclose(table,
			    hold_more(e, plan.fresh[i]), now);
			plan.fresh[i] = NULL;
		}
	restore_unprepare(table, plan.fresh, n);
	if (released)
		return CORE_OK;
	if (holder_set(e)) {
		/* Expired holders go before anyone is admitted beside
		 * them; then the queue's head as the rest admit it. */
		core__reclaim(table, e, now);
		core__hand_off(table, e, now);
		return CORE_OK;
	}
	if (holders_count(e) == 0)
		core__hand_off(table, e, now);
	core__reclaim(table, e, now);
	return CORE_OK;
}

enum core_status
core_table_restore(struct core_table *table, const char *name,
    size_t name_len, const struct core_record *rec, core_time now)
{
	if (!name_ok(name_len))
		return CORE_ERR_BADARG;
	return restore_hashed(table, name, name_len,
	    core__name_hash(table, name, name_len), rec, NULL, 0, now);
}

enum core_status
core_table_restore_holders(struct core_table *table, const char *name,
    size_t name_len, const struct core_record *recs, size_t n,
    core_time now)
{
	if (!name_ok(name_len) || (n > 0 && recs == NULL))
		return CORE_ERR_BADARG;
	return restore_hashed(table, name, name_len,
	    core__name_hash(table, name, name_len), NULL, recs, n, now);
}

/* A hint to the processor, which changes nothing else. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

#define RESTORE_AHEAD ((size_t)8)   /* restores between two steps */
#define RESTORE_RING (2 * RESTORE_AHEAD)

/*
 * Each restore misses the cache twice, on its bucket and on the first entry
 * of its chain, both at random in a table too large for the cache.  Done
 * one by one the misses queue up; here they overlap, in a pipeline over the
 * records: record i is hashed and its bucket prefetched, RESTORE_AHEAD
 * restores later its chain's first entry is prefetched, and as many again
 * later it is restored.  The restores themselves run in order, exactly as
 * core_table_restore would run them; only the prefetches run ahead, and
 * they change nothing (a bucket gone stale because the table grew is only
 * a wasted hint).
 */
enum core_status
core_table_restore_batch(struct core_table *table,
    const struct core_restore *items, size_t n, core_time now, size_t *done)
{
	uint32_t hash[RESTORE_RING];   /* record i's at i % RESTORE_RING */
	const struct core_restore *it;
	enum core_status st;
	size_t i, j;

	for (i = 0; i < n + RESTORE_RING; i++) {
		if (i >= RESTORE_RING) {
			j = i - RESTORE_RING;
			it = &items[j];
			st = !name_ok(it->name_len) ? CORE_ERR_BADARG :
			    restore_hashed(table, it->name, it->name_len,
			    hash[j % RESTORE_RING], &it->rec, it->more,
			    it->nmore, now);
			if (st != CORE_OK) {
				*done = j;
				return st;
			}
		}
		j = i - RESTORE_AHEAD;
		if (i >= RESTORE_AHEAD && j < n && name_ok(items[j].name_len))
			PREFETCH(*core__bucket_at(table,
			    hash[j % RESTORE_RING]));
		if (i < n && name_ok(items[i].name_len)) {
			hash[i % RESTORE_RING] = core__name_hash(table,
			    items[i].name, items[i].name_len);
			PREFETCH(core__bucket_at(table,
			    hash[i % RESTORE_RING]));
		}
	}
	*done = n;
	return CORE_OK;
}
