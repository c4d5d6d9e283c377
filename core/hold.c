/*
 * hold.c - holding: a name's holders (its own and a holder set's), the
 * owners' onclose bindings, lock-delay, waiters, grants and the hand-off
 * to the head of the queue, expiry, and WATCH's answers.  Every safety
 * decision is the rules' (table->rules); this file applies them and keeps
 * the books of who holds and who waits.
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

/* ---- holding ---------------------------------------------------------- */

static bool
hold_shared(struct hold x)
{
	return x.h != NULL && x.h->shared;
}

/* The list of x's session bindings: entries' own holders and the others
 * are kept apart, so that a link alone says which it is. */
static struct core_link *
onclose_list(struct core_session *s, struct hold x)
{
	return x.h != NULL ? &s->onclose_more : &s->onclose;
}

/* The link of x's session binding: a core_holder's own, or for the
 * entry's own holder the one in its tags' bond (`tags`: the hold's, which
 * a bound own holder always has). */
static struct core_link *
onclose_link_of(struct hold x, struct core_tags *tags)
{
	return x.h != NULL ? &x.h->onclose_link :
	    &core_tags_bond(tags)->onclose_link;
}

/* Unbinds x, whose tags are `tags`: for a hold the rules already freed,
 * the tags it had. */
static void
unbind_owner_tags(struct hold x, struct core_tags *tags)
{
	struct core_bond *bond = core_tags_bond(tags);
	struct core_session **owner = x.h != NULL ? &x.h->owner :
	    bond != NULL ? &bond->owner : NULL;

	if (owner != NULL && *owner != NULL) {
		link_remove(onclose_link_of(x, tags));
		*owner = NULL;
	}
}

void
core__unbind_owner(struct hold x)
{
	unbind_owner_tags(x, HOLD(x, lock)->tags);
}

void
core__bind_owner(struct hold x, struct core_session *session)
{
	struct core_tags *tags = HOLD(x, lock)->tags;

	if (x.h == NULL) {
		if (core_tags_bond(tags) == NULL)
			return;   /* not reached: see above */
		core_tags_bond(tags)->entry = x.e;
		core_tags_bond(tags)->owner = session;
	} else {
		x.h->owner = session;
	}
	link_append(onclose_list(session, x), onclose_link_of(x, tags));
}

struct core_multi *
core__multi_get(struct core_table *table, struct core_entry *e)
{
	if (e->multi == NULL) {
		e->multi = table->config.realloc(NULL, sizeof(*e->multi));
		if (e->multi == NULL)
			return NULL;
		memset(e->multi, 0, sizeof(*e->multi));
		link_init(&e->multi->queue);
		link_init(&e->multi->watchers);
		e->multi->limit = 1;
	}
	return e->multi;
}

/* The holders of e as the admission rule sees them at now: those the
 * rules do not find free or expired (decide). */
static void
holding_of(const struct core_table *table, const struct core_entry *e,
    core_time now, struct core_holding *held)
{
	const struct core_holder *h;

	held->holders = 0;
	held->shared = true;
	held->limit = entry_limit(e);
	if (!table->rules->decide(&e->lock, now)) {
		held->holders++;
		held->shared = false;
	}
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (!table->rules->decide(&h->lock, now)) {
			held->holders++;
			held->shared = held->shared && h->shared;
		}
}

/* The newest holder (the largest fence), own or not; fence 0: none. */
static struct hold
hold_newest(struct core_entry *e)
{
	struct hold x = hold_own(e);
	struct core_holder *h;

	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (h->lock.fence > HOLD(x, lock)->fence)
			x = hold_more(e, h);
	return x;
}

static uint64_t
newest_fence(const struct core_entry *e)
{
	return HOLD(hold_newest((struct core_entry *)e), lock)->fence;
}

struct hold
core__hold_find(struct core_entry *e, uint64_t fence)
{
	struct core_holder *h;

	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (h->lock.fence == fence && fence != 0)
			return hold_more(e, h);
	return hold_own(e);
}

void
core__delay_set(struct core_table *table, struct core_entry *e, core_time until)
{
	struct core_holder *h;

	core_time was = core_entry_delay_until(e);

	if (was == until)
		return;
	/* The delay lives in the name's multi, which a hold with a
	 * lock-delay (the only kind that starts one) was granted or
	 * restored with: made here only if some path missed it. */
	if (core__multi_get(table, e) == NULL)
		return;
	if (was == 0)
		table->stats.delayed++;
	else if (until == 0)
		table->stats.delayed--;
	/* Every holder's record carries the name's delay. */
	for (h = e->multi->holders; h != NULL; h = h->next)
		h->dirty = true;
	e->multi->delay_until = until;
}

void
core__hold_dirty(struct core_table *table, struct hold x)
{
	if (x.h != NULL)
		x.h->dirty = true;
	core__entry_dirty(table, x.e);
}

/* May a request (shared or not) join e's holders now: no lock-delay runs
 * and the holders admit it. */
static bool
admitted(const struct core_table *table, const struct core_entry *e,
    bool shared, core_time now)
{
	struct core_holding held;

	if (table->rules->delay_blocks(core_entry_delay_until(e), now))
		return false;
	holding_of(table, e, now, &held);
	return table->rules->admits(&held, shared);
}

void
core__holding_ended(struct core_table *table, struct hold x,
    const struct core_lock *ended, enum core_end how, core_time now)
{
	struct core_entry *e = x.e;
	core_time until = table->rules->delay_end(ended, how, now);

	/* The rules freed the lock; its tags are the table's to free, once
	 * the binding whose link they may hold is undone. */
	unbind_owner_tags(x, ended->tags);
	if (HOLD(x, lock)->tags != ended->tags)
		core__tags_free(table, ended->tags);
	core__timer_clear(table, HOLD(x, timer));
	table->stats.held--;
	e->cause = (uint8_t)how;
	if (x.h != NULL) {
		struct core_holder **p = &e->multi->holders;

		while (*p != x.h)
			p = &(*p)->next;
		*p = x.h->next;
		e->multi->count--;
		table->more_holders--;
		core__tags_free(table, x.h->lock.tags);
		memset(&x.h->lock, 0, sizeof(x.h->lock));
		x.h->ended_fence = ended->fence;   /* its key, to delete */
		x.h->next = e->multi->ended;
		e->multi->ended = x.h;
	}
	if (until > core_entry_delay_until(e) && table->rules->delay_blocks(until, now))
		core__delay_set(table, e, until);
	if (core_entry_delay_until(e) != 0 && e->lock.fence == 0)
		core__timer_set(table, &e->timer, core_entry_delay_until(e));
	core__entry_dirty(table, e);
}

static bool name_idle(const struct core_entry *e);

void
core__status_fill(const struct core_table *table, const struct core_entry *e,
    core_time now, struct core_lock_status *status)
{
	struct hold x = hold_newest((struct core_entry *)e);
	const struct core_lock *lock = HOLD(x, lock);

	memset(status, 0, sizeof(*status));
	status->queue = core_entry_queue_len(e);
	status->cause = (enum core_end)e->cause;
	status->limit = name_idle(e) ? 1 : entry_limit(e);
	if (table->rules->delay_blocks(core_entry_delay_until(e), now))
		status->delay_ms = core_entry_delay_until(e) - now;
	if (lock->fence != 0) {
		const char *label;

		status->held = true;
		status->fence = lock->fence;
		status->ttl_ms = lock->expiry - now;
		status->label_len = (uint8_t)core_tags_label(lock->tags,
		    &label);
		memcpy(status->label, label, status->label_len);
		status->holders = (uint32_t)holders_count(e);
		status->shared = hold_shared(x);
	}
}


void
core__watch_answer(struct core_table *table, struct core_entry *e,
    struct core_session *session, uint64_t tag, core_time now)
{
	struct core_lock_status st;
	struct core_reply r;

	core__status_fill(table, e, now, &st);
	memset(&r, 0, sizeof(r));
	r.fence = st.fence;
	r.status = &st;
	core__emit(table, CORE_REPLY_CHANGED, session, tag, e, &r);
}

struct core_watch_mark
core__watch_mark(const struct core_entry *e)
{
	struct core_watch_mark m;

	m.fence = newest_fence(e);
	m.holders = (uint32_t)holders_count(e);
	return m;
}

/*
 * Answers, once each, the WATCHes of e that its holders now fire.  Called
 * after every grant and after every end of a hold that was not followed
 * by a grant, so a hand-off is reported after its grant.
 */
static void
watch_notify(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_link *l, *next;
	struct core_watch_mark current;

	if (!entry_watched(e))
		return;
	current = core__watch_mark(e);
	for (l = e->multi->watchers.next; l != &e->multi->watchers;
	    l = next) {
		struct core_waiter *w = container_of(l, struct core_waiter,
		    queue_link);
		struct core_session *session = w->session;
		uint64_t tag = w->tag;

		struct core_watch_mark watched = { w->watch_fence,
		    w->watch_holders };

		next = l->next;
		if (!table->rules->watch_fires(&watched, w->watch_by_fence,
		    &current))
			continue;
		core__waiter_remove(table, w);
		core__watch_answer(table, e, session, tag, now);
	}
}

bool
core__own_bound(const struct core_entry *e, const struct hold_options *opt)
{
	return opt->onclose_release && !opt->shared && opt->limit <= 1 &&
	    entry_limit(e) <= 1;
}

/* A new holder beyond e's own, linked in (newest first) but not yet
 * granted: NULL without memory. */
static struct core_holder *
holder_add(struct core_table *table, struct core_entry *e)
{
	struct core_holder *h;

	if (core__multi_get(table, e) == NULL ||
	    !core__heap_reserve(table, 1) ||
	    (h = table->config.realloc(NULL, sizeof(*h))) == NULL)
		return NULL;
	memset(h, 0, sizeof(*h));
	h->timer.slot = CORE__HEAP_OUT;
	h->timer.kind = TIMER_HOLDER;
	link_init(&h->onclose_link);
	h->entry = e;
	h->next = e->multi->holders;
	e->multi->holders = h;
	e->multi->count++;
	table->more_holders++;
	return h;
}

/* Unlinks and frees a holder that holds nothing (a grant that failed). */
static void
holder_drop(struct core_table *table, struct core_entry *e,
    struct core_holder *h)
{
	struct core_holder **p = &e->multi->holders;

	while (*p != h)
		p = &(*p)->next;
	*p = h->next;
	e->multi->count--;
	table->more_holders--;
	core__timer_clear(table, &h->timer);
	table->config.free(h);
}

/*
 * Makes a new holder through the rules' grant (the only place a fence is
 * minted) and reports GRANTED or OVERFLOW to (session, tag).  An
 * exclusive request on a name of limit 1 takes the entry's own place;
 * any other one a holder of its own.
 */
static enum core_status
grant_to(struct core_table *table, struct core_entry *e,
    struct core_session *session, uint64_t tag, int64_t lease_ms,
    const struct hold_options *opt, core_time enqueued_at, core_time now)
{
	bool onclose_release = opt->onclose_release;
	struct core_tags *tags = opt->tags;
	struct hold x = hold_own(e);
	bool was_held;
	uint64_t secret;
	enum core_status st;

	/* The lock-delay this hold may start is the name's, kept in its
	 * multi: made now, while NOMEM can still be the answer. */
	if (core_tags_delay(tags) > 0 && core__multi_get(table, e) == NULL) {
		core__tags_free(table, tags);
		core__reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return CORE_ERR_NOMEM;
	}
	struct core_reply r;
	struct core_lock *lock;

	if (opt->shared || entry_limit(e) > 1) {
		struct core_holder *h = holder_add(table, e);

		if (h == NULL) {
			core__tags_free(table, opt->tags);
			core__reply_simple(table, CORE_REPLY_NOMEM, session,
			    tag, e);
			return CORE_ERR_NOMEM;
		}
		h->shared = opt->shared;
		x = hold_more(e, h);
	} else if (onclose_release && session != NULL) {
		/* The binding's link lives in the tags' bond, which
		 * own_bound made them with; should a request have missed it,
		 * it is made here rather than the binding lost. */
		struct core_tags *t = core__tags_bondable(table, tags);

		if (t == NULL) {
			core__tags_free(table, tags);
			core__reply_simple(table, CORE_REPLY_NOMEM, session,
			    tag, e);
			return CORE_ERR_NOMEM;
		}
		tags = t;
	}
	lock = HOLD(x, lock);
	was_held = lock->fence != 0;
	secret = table->config.secret(table->config.secret_ctx);
	st = table->rules->grant(lock, &table->hwm, now, lease_ms, secret);
	if (st != CORE_OK) {
		if (x.h != NULL)
			holder_drop(table, e, x.h);
		core__tags_free(table, tags);
		core__reply_simple(table, st == CORE_ERR_OVERFLOW ?
		    CORE_REPLY_OVERFLOW : CORE_REPLY_CONFLICT, session, tag, e);
		return st;
	}
	table->hwm_changed = true;
	if (was_held)
		core__unbind_owner(x);   /* only through broken rules */
	else
		table->stats.held++;
	table->stats.granted++;
	*HOLD(x, granted_at) = now;
	e->cause = CORE_END_GRANTED;
	if (lock->tags != tags)   /* held before: broken rules */
		core__tags_free(table, lock->tags);
	lock->tags = tags;
	if (onclose_release && session != NULL)
		core__bind_owner(x, session);
	core__timer_set(table, HOLD(x, timer), lock->expiry);
	core__hold_dirty(table, x);

	memset(&r, 0, sizeof(r));
	r.fence = lock->fence;
	r.secret = lock->secret;
	r.lease_ms = lock->lease_ms;
	r.waited_ms = now - enqueued_at;
	core__emit(table, CORE_REPLY_GRANTED, session, tag, e, &r);
	watch_notify(table, e, now);
	return CORE_OK;
}

void
core__waiter_remove(struct core_table *table, struct core_waiter *w)
{
	link_remove(&w->queue_link);
	link_remove(&w->session_link);
	core__timer_clear(table, &w->timer);
	if (w->watch) {
		w->entry->multi->watch_len--;
		table->stats.watches--;
	} else {
		w->entry->multi->queue_len--;
		table->stats.waiters--;
	}
	w->session->waiter_count--;
	if (!w->watch && w->session->group_waiters != NULL)
		(*w->session->group_waiters)--;
	core__entry_touch(table, w->entry);
	core__waiter_free(table, w);
}

void
core__waiter_time_out(struct core_table *table, struct core_waiter *w)
{
	struct core_session *s = w->session;
	struct core_entry *e = w->entry;
	uint64_t tag = w->tag;
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.watch = w->watch;
	if (!w->watch)
		table->stats.timeouts++;
	core__waiter_remove(table, w);
	core__emit(table, CORE_REPLY_TIMEOUT, s, tag, e, &r);
}

/* Grants the head of e's queue while the holders admit it: the run of
 * shared waiters at the head together, the next semaphore permits (a
 * grant that overflows answers the waiter and tries the next one). */

/* Is a holder of e (beyond a plain mutex's own) expired but still on the
 * books? */
static bool
holders_expired(const struct core_table *table, const struct core_entry *e,
    core_time now)
{
	const struct core_holder *h;

	if (!holder_set(e))
		return false;
	if (table->rules->lease_expired(&e->lock, now))
		return true;
	for (h = e->multi->holders; h != NULL; h = h->next)
		if (table->rules->lease_expired(&h->lock, now))
			return true;
	return false;
}

void
core__hand_off(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_waiter *w;
	struct core_holding held;

	/* Nobody is admitted beside a holder whose lease ran out but who
	 * is still on the books: reclaim ends it first, and hands on. */
	if (holders_expired(table, e, now)) {
		core__reclaim(table, e, now);
		return;
	}
	/* The holders as admission sees them, counted once and kept up to
	 * date grant by grant: a run of k readers costs O(k), not O(k^2). */
	holding_of(table, e, now, &held);
	while ((w = table->rules->next_waiter(e)) != NULL &&
	    !table->rules->delay_blocks(core_entry_delay_until(e), now) &&
	    table->rules->admits(&held, w->shared)) {
		struct core_session *s = w->session;
		uint64_t tag = w->tag;
		int64_t lease = w->lease_ms;
		struct hold_options opt;
		core_time since = w->enqueued_at;
		bool shared = w->shared;

		/* The waiter is freed before the grant: keep what it asked,
		 * its tags handed over to the hold. */
		memset(&opt, 0, sizeof(opt));
		opt.onclose_release = w->onclose_release;
		opt.shared = w->shared;
		opt.limit = entry_limit(e);

		/* A wait that ended before now has timed out, whether or not
		 * core_tick has run since.  At the deadline's own instant the
		 * grant wins, as it does over a lease expiring then. */
		if (w->timer.slot != CORE__HEAP_OUT && w->timer.when < now) {
			core__waiter_time_out(table, w);
			continue;
		}
		opt.tags = w->tags;
		w->tags = NULL;
		core__waiter_remove(table, w);
		if (grant_to(table, e, s, tag, lease, &opt, since, now) !=
		    CORE_OK)
			continue;
		held.shared = held.holders == 0 ? shared :
		    held.shared && shared;
		held.holders++;
	}
	/* An end with nobody granted after it: report the free lock. */
	watch_notify(table, e, now);
}

void
core__queue_changed(struct core_table *table, struct core_entry *e,
    core_time now)
{
	/* Holders whose lease ran out go first, as they do before every
	 * operation: a grant is never made beside an expired holder that
	 * is still on the books. */
	if (holder_set(e) && !queue_empty(e)) {
		core__reclaim(table, e, now);
		core__hand_off(table, e, now);
	}
}

void
core__report_end(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct hold x,
    uint64_t fence, core_time now)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.fence = fence;
	r.held_ms = now - *HOLD(x, granted_at);
	core__emit(table, kind, session, tag, x.e, &r);
}

void
core__reclaim(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_lock ended = e->lock;
	bool freed = false;
	struct core_holder *h, *next;

	if (now > table->seen_now)
		table->seen_now = now;
	if (table->rules->reclaim_if_expired(&e->lock, now)) {
		table->stats.reclaimed++;
		core__report_end(table, CORE_EVENT_RECLAIMED, NULL, 0,
		    hold_own(e), ended.fence, now);
		core__holding_ended(table, hold_own(e), &ended,
		    CORE_END_EXPIRED, now);
		freed = true;
	}
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = next) {
		next = h->next;
		ended = h->lock;
		if (!table->rules->reclaim_if_expired(&h->lock, now))
			continue;
		table->stats.reclaimed++;
		core__report_end(table, CORE_EVENT_RECLAIMED, NULL, 0,
		    hold_more(e, h), ended.fence, now);
		core__holding_ended(table, hold_more(e, h), &ended,
		    CORE_END_EXPIRED, now);
		freed = true;
	}
	if (freed)
		core__hand_off(table, e, now);
	/* A lock-delay that has run out ends, and the lock goes on. */
	if (core_entry_delay_until(e) != 0 &&
	    !table->rules->delay_blocks(core_entry_delay_until(e), now)) {
		core__delay_set(table, e, 0);
		if (e->lock.fence == 0)
			core__timer_clear(table, &e->timer);
		core__entry_dirty(table, e);
		core__hand_off(table, e, now);
	}
}

static bool
held_limit_hit(const struct core_table *table, const struct core_entry *e,
    const struct hold_options *opt)
{
	/* A new holder, unless (broken rules only) it replaces the own. */
	bool replaces = !opt->shared && entry_limit(e) == 1 &&
	    e->lock.fence != 0;

	return !replaces && table->config.max_held != 0 &&
	    table->stats.held >= table->config.max_held;
}

/*
 * A repeat of the request a live holder was granted for (same rid): the
 * same grant again, with the lease it has left.  Nothing about the hold
 * changes, except that a hold bound by onclose=release follows the
 * session that repeated it: the one it was bound to is most likely a dead
 * connection not yet noticed, and releasing the lock when that is noticed
 * would take it from the client that now has the handle.
 */
static void
regrant(struct core_table *table, struct hold x,
    struct core_session *session, uint64_t tag, core_time now)
{
	struct core_session *owner = core__hold_owner(x);
	const struct core_lock *lock = HOLD(x, lock);
	struct core_reply r;

	if (owner != NULL && session != NULL && owner != session) {
		core__unbind_owner(x);
		core__bind_owner(x, session);
		core__hold_dirty(table, x);
	}
	memset(&r, 0, sizeof(r));
	r.fence = lock->fence;
	r.secret = lock->secret;
	r.lease_ms = lock->expiry - now;
	r.repeat = true;
	core__emit(table, CORE_REPLY_GRANTED, session, tag, x.e, &r);
}

/* The live holder that rid's repeat finds (rules->rid_repeat), if any:
 * *found false when none. */
static struct hold
hold_with_rid(const struct core_table *table, struct core_entry *e,
    const struct hold_options *opt, bool *found)
{
	struct core_holder *h;

	*found = true;
	if (table->rules->rid_repeat(&e->lock, opt->rid, opt->rid_len))
		return hold_own(e);
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (table->rules->rid_repeat(&h->lock, opt->rid, opt->rid_len))
			return hold_more(e, h);
	*found = false;
	return hold_own(e);
}

/* Is the name idle, so that a request sets its limit: no holder, no
 * waiter, no lock-delay. */
static bool
name_idle(const struct core_entry *e)
{
	return holders_count(e) == 0 && queue_empty(e) &&
	    core_entry_delay_until(e) == 0;
}

void
core__reply_misfit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_misfit why)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.misfit = why;
	core__emit(table, CORE_REPLY_BADARG, session, tag, e, &r);
}

/*
 * Does the request's kind fit the name: a rid repeat must ask what its
 * grant was granted with, and any other request the name's limit - which
 * the first request of an idle name sets.  False: BADARG was replied.
 * NOMEM (*status) when the limit cannot be kept.
 */
static bool
kind_fits(struct core_table *table, struct core_session *session,
    struct core_entry *e, const struct hold_options *opt, uint64_t tag,
    struct hold *repeat, bool *is_repeat, enum core_status *status)
{
	*repeat = hold_with_rid(table, e, opt, is_repeat);
	if (*is_repeat) {
		if (hold_shared(*repeat) != opt->shared ||
		    entry_limit(e) != opt->limit) {
			core__reply_misfit(table, session, tag, e,
			    hold_shared(*repeat) != opt->shared ?
			    CORE_MISFIT_MODE : CORE_MISFIT_LIMIT);
			*status = CORE_ERR_KIND;
			return false;
		}
		return true;
	}
	if (name_idle(e)) {
		if (opt->limit > 1 || opt->shared) {
			if (core__multi_get(table, e) == NULL) {
				core__reply_simple(table, CORE_REPLY_NOMEM,
				    session, tag, e);
				*status = CORE_ERR_NOMEM;
				return false;
			}
		}
		if (e->multi != NULL)
			e->multi->limit = opt->limit;
		return true;
	}
	if (entry_limit(e) != opt->limit) {
		core__reply_misfit(table, session, tag, e, CORE_MISFIT_LIMIT);
		*status = CORE_ERR_KIND;
		return false;
	}
	return true;
}

bool
core__take_if_free(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, int64_t lease,
    const struct hold_options *opt, uint64_t tag, core_time now,
    struct core_entry **ep, enum core_status *status)
{
	struct core_entry *e;
	struct hold repeat;
	bool is_repeat;

	if ((e = core__entry_get(table, name, name_len)) == NULL) {
		core__reply_simple(table, CORE_REPLY_NOMEM, session, tag, NULL);
		*status = CORE_ERR_NOMEM;
		return true;
	}
	core__reclaim(table, e, now);
	*ep = e;
	if (!kind_fits(table, session, e, opt, tag, &repeat, &is_repeat,
	    status))
		return true;
	if (is_repeat) {
		regrant(table, repeat, session, tag, now);
		*status = CORE_OK;
		return true;
	}
	if (!queue_empty(e) || !admitted(table, e, opt->shared, now))
		return false;
	if (held_limit_hit(table, e, opt)) {
		core__reply_limit(table, session, tag, e, CORE_LIMIT_HELD);
		*status = CORE_ERR_LIMIT;
	} else {
		struct hold_options own = *opt;
		bool nomem;

		own.tags = core__tags_make(table, opt->label, opt->label_len,
		    opt->rid, opt->rid_len, opt->delay_ms,
		    core__own_bound(e, opt), &nomem);
		if (nomem) {
			core__reply_simple(table, CORE_REPLY_NOMEM, session,
			    tag, e);
			*status = CORE_ERR_NOMEM;
			return true;
		}
		*status = grant_to(table, e, session, tag, lease, &own, now,
		    now);
	}
	return true;
}
