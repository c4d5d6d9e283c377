/*
 * ops.c - the operations core.h declares: ACQUIRE, TRY, RENEW, RELEASE,
 * FORCE, WATCH, STATUS, CHECK, a session's close, and the tick that
 * expires leases and waits.  Each checks its arguments, reclaims what has
 * expired, and hands the decision to holding (hold.c) and the rules.
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

/* ---- operations ------------------------------------------------------- */

/* ACQUIRE's and TRY's holder options, checked; false for a bad one
 * (*misfit says when it is mode=shared with a limit). */
static bool
hold_options_get(const struct core_table *table,
    const struct core_acquire_args *args, struct hold_options *opt,
    enum core_misfit *misfit)
{
	*misfit = CORE_MISFIT_NONE;
	if (args->delay_ms < 0 || args->label_len > CORE_OWNER_MAX ||
	    (args->label_len > 0 && args->label == NULL) ||
	    args->rid_len > CORE_RID_MAX ||
	    (args->rid_len > 0 && args->rid == NULL))
		return false;
	if (args->limit > CORE_LIMIT_MAX) {
		*misfit = CORE_MISFIT_LIMIT;
		return false;
	}
	if (args->shared && args->limit > 1) {
		*misfit = CORE_MISFIT_MODE;
		return false;
	}
	opt->limit = (uint16_t)(args->limit > 1 ? args->limit : 1);
	opt->shared = args->shared;
	opt->onclose_release = args->onclose_release;
	opt->delay_ms = args->delay_ms < table->config.max_lock_delay_ms ?
	    args->delay_ms : table->config.max_lock_delay_ms;
	opt->label_len = (uint8_t)args->label_len;
	opt->label = args->label;
	opt->rid_len = (uint8_t)args->rid_len;
	opt->rid = args->rid;
	opt->tags = NULL;
	return true;
}

/* Is there room for one more waiter or WATCH of this session?  Replies
 * LIMIT when not.  A pending WATCH counts as a waiter, except against its
 * group's (principal's) limit, which counts waiting ACQUIREs only. */
static bool
waiter_room(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, bool watch)
{
	if (table->config.max_waiters != 0 && table->stats.waiters +
	    table->stats.watches >= table->config.max_waiters) {
		core__reply_limit(table, session, tag, e, CORE_LIMIT_WAITERS);
		return false;
	}
	if (table->config.max_waiters_per_session != 0 &&
	    session->waiter_count >= table->config.max_waiters_per_session) {
		core__reply_limit(table, session, tag, e,
		    CORE_LIMIT_SESSION_WAITERS);
		return false;
	}
	if (!watch && session->group_waiters != NULL &&
	    session->group_max_waiters != 0 &&
	    *session->group_waiters >= session->group_max_waiters) {
		core__reply_limit(table, session, tag, e,
		    CORE_LIMIT_GROUP_WAITERS);
		return false;
	}
	return true;
}

/*
 * Queues a new waiter of session on e - an ACQUIRE on its queue, or a
 * WATCH on its watchers - counted where waiter_remove uncounts it, with
 * its wait_ms timer (none for CORE_WAIT_FOREVER); the caller fills in
 * what its request asks for.  Without memory: NOMEM is replied, NULL.
 */
static struct core_waiter *
waiter_add(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, bool watch, int64_t wait_ms,
    core_time now)
{
	struct core_waiter *w;

	/* The queue and the watchers' list are out of line: a plain lock
	 * that nobody waits for or watches pays nothing for them. */
	if (core__multi_get(table, e) == NULL ||
	    !core__heap_reserve(table, 1) ||
	    (w = table->config.realloc(NULL, sizeof(*w))) == NULL) {
		core__reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return NULL;
	}
	memset(w, 0, sizeof(*w));
	w->entry = e;
	w->session = session;
	w->tag = tag;
	w->watch = watch;
	w->enqueued_at = now;
	w->timer.slot = CORE__HEAP_OUT;
	w->timer.kind = TIMER_WAIT;
	link_append(watch ? &e->multi->watchers : &e->multi->queue,
	    &w->queue_link);
	link_append(&session->waiters, &w->session_link);
	session->waiter_count++;
	if (watch) {
		e->multi->watch_len++;
		table->stats.watches++;
	} else {
		e->multi->queue_len++;
		table->stats.waiters++;
		if (session->group_waiters != NULL)
			(*session->group_waiters)++;
	}
	if (wait_ms > 0)
		core__timer_set(table, &w->timer, now > CORE_NEVER - wait_ms ?
		    CORE_NEVER - 1 : now + wait_ms);
	return w;
}

/* The waiter in e's queue that asked with this rid, NULL for none. */
static struct core_waiter *
waiter_with_rid(struct core_entry *e, const char *rid, size_t rid_len)
{
	struct core_link *l;

	if (rid_len == 0 || e->multi == NULL)
		return NULL;
	for (l = e->multi->queue.next; l != &e->multi->queue; l = l->next) {
		struct core_waiter *w = container_of(l, struct core_waiter,
		    queue_link);
		const char *r;

		if (core_tags_rid(w->tags, &r) == rid_len &&
		    memcmp(r, rid, rid_len) == 0)
			return w;
	}
	return NULL;
}

/*
 * `fresh`, just queued at the tail, takes old's place in the queue (its
 * turn, from when old was queued), and old is answered SUPERSEDED and
 * removed: the same request never waits twice.
 */
static void
waiter_supersede(struct core_table *table, struct core_waiter *old,
    struct core_waiter *fresh)
{
	struct core_session *s = old->session;
	struct core_entry *e = old->entry;
	uint64_t tag = old->tag;

	link_remove(&fresh->queue_link);
	link_append(&old->queue_link, &fresh->queue_link);  /* before old */
	fresh->enqueued_at = old->enqueued_at;
	core__waiter_remove(table, old);
	core__reply_simple(table, CORE_REPLY_SUPERSEDED, s, tag, e);
}

enum core_status
core_acquire(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, const struct core_acquire_args *args,
    uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_waiter *w, *old;
	struct core_tags *tags;
	struct hold_options opt;
	enum core_status status;
	enum core_misfit misfit = CORE_MISFIT_NONE;
	int64_t lease;
	bool nomem;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, args->lease_ms, &lease) !=
	    CORE_OK || args->wait_ms < CORE_WAIT_FOREVER ||
	    !hold_options_get(table, args, &opt, &misfit)) {
		core__reply_misfit(table, session, tag, NULL, misfit);
		return misfit != CORE_MISFIT_NONE ? CORE_ERR_KIND :
		    CORE_ERR_BADARG;
	}
	if (core__take_if_free(table, session, name, name_len, lease, &opt, tag,
	    now, &e, &status))
		return status;
	if (args->wait_ms == 0) {
		table->stats.timeouts++;
		core__reply_simple(table, CORE_REPLY_TIMEOUT, session, tag, e);
		return CORE_OK;
	}
	/* A repeat of a waiting request takes its place: the waiter it
	 * replaces leaves room for it under every limit. */
	old = waiter_with_rid(e, opt.rid, opt.rid_len);
	if (old != NULL && old->shared != opt.shared) {
		/* Another mode is another request, not its retry: taking
		 * the waiter's turn, it could stand where it would be
		 * admitted. */
		core__reply_misfit(table, session, tag, e, CORE_MISFIT_MODE);
		return CORE_ERR_KIND;
	}
	if (old == NULL && !waiter_room(table, session, tag, e, false))
		return CORE_ERR_LIMIT;
	tags = core__tags_make(table, opt.label, opt.label_len, opt.rid,
	    opt.rid_len, opt.delay_ms, core__own_bound(e, &opt), &nomem);
	if (nomem) {
		core__reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return CORE_ERR_NOMEM;
	}
	if ((w = waiter_add(table, session, tag, e, false, args->wait_ms,
	    now)) == NULL) {
		core__tags_free(table, tags);
		return CORE_ERR_NOMEM;
	}
	w->tags = tags;
	if (old != NULL)
		waiter_supersede(table, old, w);
	w->lease_ms = lease;
	w->onclose_release = opt.onclose_release;
	w->shared = opt.shared;
	return CORE_OK;
}

enum core_status
core_try(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, const struct core_acquire_args *args,
    uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct hold_options opt;
	enum core_status status;
	enum core_misfit misfit = CORE_MISFIT_NONE;
	int64_t lease;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, args->lease_ms, &lease) !=
	    CORE_OK || !hold_options_get(table, args, &opt, &misfit)) {
		core__reply_misfit(table, session, tag, NULL, misfit);
		return misfit != CORE_MISFIT_NONE ? CORE_ERR_KIND :
		    CORE_ERR_BADARG;
	}
	if (core__take_if_free(table, session, name, name_len, lease, &opt, tag,
	    now, &e, &status))
		return status;
	{
		struct core_lock_status st;
		struct core_reply r;

		table->stats.unavailable++;
		core__status_fill(table, e, now, &st);
		memset(&r, 0, sizeof(r));
		r.status = &st;
		core__emit(table, CORE_REPLY_HELD, session, tag, e, &r);
	}
	return CORE_OK;
}

enum core_status
core_renew(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    int64_t lease_ms, uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_reply r;
	struct hold x = { NULL, NULL };
	int64_t lease;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, lease_ms, &lease) != CORE_OK) {
		core__reply_simple(table, CORE_REPLY_BADARG, session, tag,
		    NULL);
		return CORE_ERR_BADARG;
	}
	/* A lock not in memory is held by nobody: no entry is made for it. */
	if ((e = core__entry_find(table, name, name_len)) != NULL) {
		core__reclaim(table, e, now);
		x = core__hold_find(e, handle.fence);
	}
	if (e == NULL || table->rules->renew(HOLD(x, lock), handle, now,
	    lease) != CORE_OK) {
		table->stats.conflicts++;
		if (e == NULL) {
			/* Name the lock in the reply all the same. */
			memset(&r, 0, sizeof(r));
			r.name = name;
			r.name_len = name_len;
			core__emit(table, CORE_REPLY_CONFLICT, session, tag,
			    NULL, &r);
		} else
			core__reply_simple(table, CORE_REPLY_CONFLICT,
			    session, tag, e);
		return CORE_ERR_CONFLICT;
	}
	table->stats.renewed++;
	core__timer_set(table, HOLD(x, timer), HOLD(x, lock)->expiry);
	core__hold_dirty(table, x);
	memset(&r, 0, sizeof(r));
	r.fence = HOLD(x, lock)->fence;
	r.lease_ms = HOLD(x, lock)->lease_ms;
	core__emit(table, CORE_REPLY_RENEWED, session, tag, e, &r);
	return CORE_OK;
}

/*
 * RELEASE (how CORE_END_RELEASED: the holder's handle) and FORCE
 * (CORE_END_FORCED: an operator's fence, handle.secret unused) are one
 * operation but for the rule that decides and what is counted: the hold
 * the handle's fence names ends if the rule says so, its lock-delay
 * begins as `how` owes, and the lock goes on.  Otherwise NOTHELD, and
 * nothing changes.
 */
static enum core_status
end_hold(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    enum core_end how, uint64_t tag, core_time now)
{
	bool forced = how == CORE_END_FORCED;
	struct core_entry *e;
	struct core_reply r;
	struct core_lock ended;
	struct hold x = { NULL, NULL };

	if (!name_ok(name_len) || (forced && (handle.fence == 0 ||
	    handle.fence > CORE_FENCE_MAX))) {
		core__reply_simple(table, CORE_REPLY_BADARG, session, tag,
		    NULL);
		return CORE_ERR_BADARG;
	}
	if ((e = core__entry_find(table, name, name_len)) != NULL) {
		core__reclaim(table, e, now);
		x = core__hold_find(e, handle.fence);
		ended = *HOLD(x, lock);
	}
	if (e == NULL || !(forced ?
	    table->rules->force(HOLD(x, lock), handle.fence) :
	    table->rules->release(HOLD(x, lock), handle))) {
		memset(&r, 0, sizeof(r));
		r.name = name;
		r.name_len = name_len;
		core__emit(table, CORE_REPLY_NOTHELD, session, tag, e, &r);
		return CORE_OK;
	}
	if (forced)
		table->stats.forced++;
	else
		table->stats.released++;
	core__report_end(table, forced ? CORE_REPLY_FORCED :
	    CORE_REPLY_RELEASED, session, tag, x, ended.fence, now);
	core__holding_ended(table, x, &ended, how, now);
	core__hand_off(table, e, now);
	return CORE_OK;
}

enum core_status
core_release(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    uint64_t tag, core_time now)
{
	return end_hold(table, session, name, name_len, handle,
	    CORE_END_RELEASED, tag, now);
}

enum core_status
core_force(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, uint64_t fence, uint64_t tag,
    core_time now)
{
	struct core_handle handle = { fence, 0 };

	return end_hold(table, session, name, name_len, handle,
	    CORE_END_FORCED, tag, now);
}

enum core_status
core_watch(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, bool has_fence, uint64_t fence,
    int64_t wait_ms, uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_waiter *w;
	struct core_watch_mark watched, current;

	if (!name_ok(name_len) || wait_ms < CORE_WAIT_FOREVER ||
	    (has_fence && fence > CORE_FENCE_MAX)) {
		core__reply_simple(table, CORE_REPLY_BADARG, session, tag,
		    NULL);
		return CORE_ERR_BADARG;
	}
	if ((e = core__entry_get(table, name, name_len)) == NULL) {
		core__reply_simple(table, CORE_REPLY_NOMEM, session, tag, NULL);
		return CORE_ERR_NOMEM;
	}
	core__reclaim(table, e, now);
	/* Without fence=, the holders it found are the ones it watches. */
	current = core__watch_mark(e);
	watched = current;
	if (has_fence)
		watched.fence = fence;
	/* Fires at once when the state already differs. */
	if (table->rules->watch_fires(&watched, has_fence, &current)) {
		core__watch_answer(table, e, session, tag, now);
		return CORE_OK;
	}
	if (wait_ms == 0) {
		struct core_reply r;

		memset(&r, 0, sizeof(r));
		r.watch = true;
		core__emit(table, CORE_REPLY_TIMEOUT, session, tag, e, &r);
		return CORE_OK;
	}
	if (!waiter_room(table, session, tag, e, true))
		return CORE_ERR_LIMIT;
	if ((w = waiter_add(table, session, tag, e, true, wait_ms, now)) ==
	    NULL)
		return CORE_ERR_NOMEM;
	w->watch_by_fence = has_fence;
	w->watch_fence = watched.fence;
	w->watch_holders = watched.holders;
	return CORE_OK;
}

void
core_status(struct core_table *table, const char *name, size_t name_len,
    core_time now, struct core_lock_status *status)
{
	struct core_entry *e = core__entry_find(table, name, name_len);

	memset(status, 0, sizeof(*status));
	if (e == NULL)
		return;
	core__reclaim(table, e, now);
	core__status_fill(table, e, now, status);
}

bool
core_check(struct core_table *table, const char *name, size_t name_len,
    uint64_t fence, core_time now, int64_t *ttl_ms)
{
	struct core_entry *e = core__entry_find(table, name, name_len);
	struct hold x;

	*ttl_ms = 0;
	if (e == NULL || fence == 0)
		return false;
	core__reclaim(table, e, now);
	x = core__hold_find(e, fence);
	if (HOLD(x, lock)->fence != fence)
		return false;
	*ttl_ms = HOLD(x, lock)->expiry - now;
	return true;
}

void
core__release_onclose(struct core_table *table, struct hold x, core_time now)
{
	struct core_lock *lock = HOLD(x, lock);
	struct core_handle h = { lock->fence, lock->secret };
	struct core_lock ended = *lock;

	if (!table->rules->release(lock, h)) {
		core__unbind_owner(x);
		return;
	}
	table->stats.released_onclose++;
	core__report_end(table, CORE_EVENT_RELEASED_ONCLOSE, NULL, 0, x,
	    h.fence, now);
	core__holding_ended(table, x, &ended, CORE_END_CLOSED, now);
	core__hand_off(table, x.e, now);
}

/*
 * After a session left every queue it was in (marked ENTRY_HANDON on the
 * way; every such entry is on the changed list): each of those names is
 * handed on to the requests now at its head, if the holders admit them.
 * Not earlier, or a waiter of the leaving session could be granted.
 */
static void
queues_changed(struct core_table *table, core_time now)
{
	struct core_entry *e;

	for (e = table->changed; e != NULL; e = e->changed_next)
		if (e->flags & ENTRY_HANDON) {
			e->flags &= (uint8_t)~ENTRY_HANDON;
			core__queue_changed(table, e, now);
		}
}

void
core_disconnect(struct core_table *table, struct core_session *session,
    core_time now)
{
	while (!link_empty(&session->waiters)) {
		struct core_waiter *w = container_of(session->waiters.next,
		    struct core_waiter, session_link);
		struct core_entry *e = w->entry;
		bool queued = !w->watch;

		core__waiter_remove(table, w);
		if (queued && holder_set(e))
			e->flags |= ENTRY_HANDON;
	}
	queues_changed(table, now);
	while (!link_empty(&session->onclose)) {
		struct core_entry *e = container_of(session->onclose.next,
		    struct core_bond, onclose_link)->entry;
		/* An expired lease is reclaimed (and reported) as such. */
		core__reclaim(table, e, now);
		if (core_entry_owner(e) == session)
			core__release_onclose(table, hold_own(e), now);
	}
	while (!link_empty(&session->onclose_more)) {
		struct core_holder *h = container_of(session->onclose_more.next,
		    struct core_holder, onclose_link);
		struct core_entry *e = h->entry;

		/* An expired lease is reclaimed (and unbound) as such; a
		 * reclaimed holder stays allocated until the next drain. */
		core__reclaim(table, e, now);
		if (h->owner == session)
			core__release_onclose(table, hold_more(e, h), now);
	}
}

void
core_cancel_waiters(struct core_table *table, struct core_session *session,
    enum core_reply_kind kind)
{
	while (!link_empty(&session->waiters)) {
		struct core_waiter *w = container_of(session->waiters.next,
		    struct core_waiter, session_link);
		uint64_t tag = w->tag;
		struct core_entry *e = w->entry;
		bool queued = !w->watch;

		if (kind == CORE_REPLY_TIMEOUT)
			core__waiter_time_out(table, w);   /* counted as one */
		else {
			core__waiter_remove(table, w);
			core__reply_simple(table, kind, session, tag, e);
		}
		/* On a clean stop nobody is granted any more. */
		if (queued && kind != CORE_REPLY_SHUTDOWN && holder_set(e))
			e->flags |= ENTRY_HANDON;
	}
	queues_changed(table, table->seen_now);
}

core_time
core_next_deadline(const struct core_table *table)
{
	return table->heap_len ? table->heap[0]->when : CORE_NEVER;
}

core_time
core_tick(struct core_table *table, core_time now)
{
	while (table->heap_len > 0 && table->heap[0]->when <= now) {
		struct core_timer *t = table->heap[0];

		core__timer_clear(table, t);
		if (t->kind == TIMER_LEASE) {
			core__reclaim(table, container_of(t, struct core_entry,
			    timer), now);
		} else if (t->kind == TIMER_HOLDER) {
			core__reclaim(table, container_of(t, struct core_holder,
			    timer)->entry, now);
		} else {
			struct core_waiter *w = container_of(t,
			    struct core_waiter, timer);
			struct core_entry *e = w->entry;
			bool queued = !w->watch;

			core__waiter_time_out(table, w);
			if (queued)
				core__queue_changed(table, e, now);
		}
	}
	return core_next_deadline(table);
}
