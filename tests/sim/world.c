/*
 * world.c - the simulator's world (see world.h): the clock, the secrets and
 * the store handed to the service, watching its table, the clients'
 * requests, connections and replies, and the service's life and death.
 * This file may not change anything in daemon/ or core/; the broken
 * stores and delivery paths are here, next to the code they replace.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bytes.h"
#include "core/list.h"
#include "daemon/format.h"
#include "tests/sim/etcd_sim.h"
#include "tests/sim/world.h"

/* A bug of the simulator itself.  The daemon's log may be pointed at a sink
 * (see sim_run), so this writes to the descriptor. */
void
world_fatal(const char *what)
{
	dprintf(STDERR_FILENO, "sim: %s\n", what);
	abort();
}

uint64_t
world_random_below(struct world *w, uint64_t n)
{
	return rng_below(&w->rng, n);
}

bool
world_random_percent(struct world *w, unsigned pct)
{
	return world_random_below(w, 100) < pct;
}

void
world_trace(struct world *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->opt->trace)
		return;
	fprintf(w->out, "t=%lld ", (long long)w->now);
	va_start(ap, fmt);
	vfprintf(w->out, fmt, ap);
	va_end(ap);
	fputc('\n', w->out);
}

static void
digest(struct world *w, uint64_t v)
{
	w->res->digest = (w->res->digest ^ v) * 0x100000001b3ULL;
}

static void
digest_bytes(struct world *w, const char *p, size_t n)
{
	while (n-- > 0)
		digest(w, (unsigned char)*p++);
}

/* ---- clock, secrets, store -------------------------------------------- */

static core_time
sim_mono(void *ctx)
{
	struct world *w = ctx;

	return w->now - w->boot_off;
}

static int64_t
sim_wall(void *ctx)
{
	struct world *w = ctx;

	return w->now + WALL_BASE + w->wall_skew;
}

static uint64_t
sim_secret(void *ctx)
{
	struct world *w = ctx;

	return rng_next(&w->secrets);
}

static int
sim_before_commit(void *ctx)
{
	struct world *w = ctx;

	if (w->hook_failures > 0) {
		w->hook_failures--;
		world_trace(w, "commit fails (hook)");
		return -1;
	}
	return 0;
}

static int
sim_store_commit(struct store *base, const struct store_batch *batch)
{
	struct world *w = ((struct sim_store *)base)->w;
	struct store *mem = &w->mem.base;
	int rc;

	/* Cluster mode: a guarded transaction, which comes back here to
	 * write the data when its compares hold. */
	if (w->etcd != NULL && !w->etcd->in_txn)
		return etcd_sim_commit(w, batch);
	if (w->mem.fail_commits > 0)
		world_trace(w, "commit fails (store)");
	if (w->opt->variant == SIM_VARIANT_STORE_DROPS_BATCHES &&
	    w->mem.fail_commits == 0 && world_random_below(w, 4) == 0) {
		world_trace(w, "store drops the batch and claims success");
		return 0;
	}
	if (w->opt->variant == SIM_VARIANT_STORE_FORGETS_HWM) {
		struct store_batch copy = *batch;
		copy.has_hwm = false;
		rc = mem->ops->commit(mem, &copy);
	} else {
		rc = mem->ops->commit(mem, batch);
	}
	if (rc == 0 && w->opt->variant == SIM_VARIANT_RID_NOT_STORED) {
		size_t i;

		/* Every record as if its grant had no rid (format.h:
		 * the rid ends a version-3 record). */
		for (i = 0; i < w->mem.count; i++) {
			struct store_mem_entry *e = &w->mem.entries[i];

			if (e->val_len >= FORMAT_RECORD_FIXED &&
			    e->val[0] == FORMAT_RECORD_VERSION) {
				e->val_len -= e->val[89];
				e->val[89] = 0;
			}
		}
	}
	if (rc != 0)
		snprintf(base->error, sizeof(base->error), "%s", mem->error);
	return rc;
}

static int
sim_store_get(struct store *base, const char *name, size_t name_len,
    void *val, size_t *val_len)
{
	struct world *w = ((struct sim_store *)base)->w;
	int rc;

	if (w->etcd != NULL && !etcd_sim_get_ok(w)) {
		snprintf(base->error, sizeof(base->error), "the store is broken");
		return -1;
	}
	rc = w->mem.base.ops->get(&w->mem.base, name, name_len, val, val_len);
	if (rc < 0)
		snprintf(base->error, sizeof(base->error), "%s",
		    w->mem.base.error);
	return rc;
}

static int
sim_store_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	struct world *w = ((struct sim_store *)base)->w;
	int rc = w->mem.base.ops->load(&w->mem.base, fn, ctx, hwm);

	if (rc != 0)
		snprintf(base->error, sizeof(base->error), "%s",
		    w->mem.base.error);
	else if (w->etcd != NULL)
		etcd_sim_loaded(w, hwm);
	return rc;
}

static void
sim_store_close(struct store *base)
{
	(void)base;   /* the store outlives every incarnation */
}

static const struct store_ops sim_store_ops = {
	.commit = sim_store_commit,
	.get = sim_store_get,
	.load = sim_store_load,
	.close = sim_store_close,
};

struct record {
	uint64_t fence;
	int64_t lease;
	sim_time expiry;
	bool onclose;
	uint8_t rid_len;
	char rid[CORE_RID_MAX];
	bool other_boot;    /* written in another boot (cluster: term) */
};

/* Decodes a stored record (daemon/format.h); the wall-clock
 * expiry is global time plus WALL_BASE in every boot. */
static void
record_decode(const struct store_mem_entry *e, struct record *r)
{
	const unsigned char *p = e->val;

	if (e->val_len < FORMAT_RECORD_FIXED ||
	    e->val_len != FORMAT_RECORD_FIXED + (size_t)p[88] + p[89] ||
	    p[0] != FORMAT_RECORD_VERSION)
		world_fatal("the record format of daemon/format.h changed; "
		    "update tests/sim/world.c");
	r->onclose = (p[1] & 1) != 0;
	r->fence = bytes_get_le64(p + 8);
	r->lease = (int64_t)bytes_get_le64(p + 24);
	r->expiry = (int64_t)bytes_get_le64(p + 40) - WALL_BASE;
	r->rid_len = p[89] <= CORE_RID_MAX ? p[89] : 0;
	memcpy(r->rid, p + FORMAT_RECORD_FIXED + p[88], r->rid_len);
}

/* Is store entry e a key of name i: its own (*fence 0) or a holder's? */
static bool
store_key_is(const struct world *w, const struct store_mem_entry *e, int i,
    uint64_t *fence)
{
	size_t name_len;

	if ((e->name_len != w->name_len[i] && e->name_len !=
	    w->name_len[i] + FORMAT_HOLDER_SUFFIX) ||
	    memcmp(e->name, w->name_text[i], w->name_len[i]) != 0)
		return false;
	*fence = 0;
	return e->name_len == w->name_len[i] ||
	    (format_key_split(e->name, e->name_len, &name_len, fence) ==
	    FORMAT_KEY_HOLDER && name_len == w->name_len[i]);
}

/* The key of store entry e as (name, fence): its name's index and the
 * fence of its holder key, 0 for the name's own key; false when it is no
 * name of this world's. */
static bool
store_key_of(const struct world *w, const struct store_mem_entry *e,
    int *name, uint64_t *fence)
{
	int i;

	for (i = 0; i < w->nnames; i++)
		if (store_key_is(w, e, i, fence)) {
			*name = i;
			return true;
		}
	return false;
}

/* Decodes store entry e as the world's clock reads it. */
static void
store_decode(const struct world *w, const struct store_mem_entry *e,
    struct record *r)
{
	record_decode(e, r);
	r->other_boot = memcmp(e->val + 48, w->boot_id, 16) != 0;
	/* Cluster mode: the writer's wall clock. */
	if (w->etcd != NULL)
		r->expiry -= etcd_sim_wall_skew_of(w, e->val + 48);
}

/*
 * The store's held record of `name`: under its own key (fence 0: whatever
 * fence it holds), or the one of holder `fence` under either key.  A free
 * name in lock-delay has a record but no lease: as far as leases go, the
 * store has none.
 */
static bool
store_record(const struct world *w, int name, uint64_t fence,
    struct record *r)
{
	size_t i;

	for (i = 0; i < w->mem.count; i++) {
		const struct store_mem_entry *e = &w->mem.entries[i];
		uint64_t key_fence;

		if (!store_key_is(w, e, name, &key_fence) ||
		    (key_fence != 0 && key_fence != fence))
			continue;
		store_decode(w, e, r);
		if (r->fence != 0 && (fence == 0 || r->fence == fence))
			return true;
	}
	return false;
}

/* What the store holds for one name as the history sees it: its own key's
 * lease, else holder `fence`'s. */
static void
store_view_of(const struct world *w, int name, uint64_t fence,
    struct hist_store_view *v)
{
	struct record r;

	memset(v, 0, sizeof(*v));
	v->name = name;
	if (store_record(w, name, 0, &r) || store_record(w, name, fence, &r)) {
		v->has = true;
		v->fence = r.fence;
		v->expiry = r.expiry;
		v->asof = r.expiry - r.lease;
		v->onclose = r.onclose;
	}
}

/* Every held record the store has, into w->views; returns how many. */
static size_t
store_views(struct world *w)
{
	size_t i, n = 0;

	for (i = 0; i < w->mem.count; i++) {
		const struct store_mem_entry *e = &w->mem.entries[i];
		struct hist_store_view *v = &w->views[n];
		uint64_t key_fence;
		struct record r;
		int name;

		if (!store_key_of(w, e, &name, &key_fence))
			continue;
		store_decode(w, e, &r);
		if (r.fence == 0)
			continue;
		if (n == sizeof(w->views) / sizeof(w->views[0]))
			world_fatal("more stored holders than the world tracks");
		memset(v, 0, sizeof(*v));
		v->name = name;
		v->has = true;
		v->fence = r.fence;
		v->expiry = r.expiry;
		v->asof = r.expiry - r.lease;
		v->onclose = r.onclose;
		n++;
	}
	return n;
}

/* ---- watching the table ----------------------------------------------- */

/* One holder of a name in the table: the entry's own or one beyond it. */
struct table_hold {
	const struct core_lock *lock;
	core_time granted_at;
	bool shared;
	bool onclose;
};

/* The holders of e (NULL: none), its own first. */
static unsigned
table_holds(const struct core_entry *e, struct table_hold *out)
{
	const struct core_holder *h;
	unsigned n = 0;

	if (e == NULL)
		return 0;
	if (e->lock.fence != 0)
		out[n++] = (struct table_hold){ &e->lock, e->granted_at,
		    false, core_entry_owner(e) != NULL };
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next) {
		if (n == SEEN_MAX)
			world_fatal("more holders than the world tracks");
		out[n++] = (struct table_hold){ &h->lock, h->granted_at,
		    h->shared, h->owner != NULL };
	}
	return n;
}

static const struct core_entry *
entry_of(const struct world *w, int name)
{
	return core_table_find(&w->svc->table, w->name_text[name],
	    w->name_len[name]);
}

/* The name's limit as the table has it (1: a mutex or read/write lock). */
static uint16_t
entry_limit_of(const struct core_entry *e)
{
	return e != NULL && e->multi != NULL ? e->multi->limit : 1;
}

/* RidIdempotent, durability: once the store has a holder's grant, it has
 * its rid, so that a restart keeps recognising the grant's repeats. */
static void
rid_stored(struct world *w, int name, const struct core_lock *l)
{
	struct record r;
	const char *rid;
	size_t rid_len = core_tags_rid(l->tags, &rid);

	if (!store_record(w, name, l->fence, &r) || r.fence != l->fence)
		return;
	hist_checked(w->hist);
	if (r.rid_len != rid_len || memcmp(r.rid, rid, r.rid_len) != 0)
		hist_violation(w->hist, SIM_RID_IDEMPOTENT,
		    "%s fence=%llu: the table's holder has rid=%.*s, the "
		    "store's rid=%.*s", w->name_text[name],
		    (unsigned long long)r.fence, (int)rid_len, rid,
		    (int)r.rid_len, r.rid);
}

static bool
holds_fence(const struct table_hold *th, unsigned n, uint64_t fence)
{
	unsigned k;

	for (k = 0; k < n; k++)
		if (th[k].lock->fence == fence)
			return true;
	return false;
}

static bool
seen_has(const struct world *w, int name, uint64_t fence)
{
	unsigned k;

	for (k = 0; k < w->nseen[name]; k++)
		if (w->seen[name][k].fence == fence)
			return true;
	return false;
}

/*
 * NoStarvation: a name out of lock-delay whose head waiter its holders
 * admit (as core_rule_admits says, counting every holder, expired or not:
 * only a reclaim frees one) is starving it.
 */
static void
check_head_waiter(struct world *w, int name, const struct core_entry *e,
    const struct table_hold *th, unsigned n)
{
	const struct core_waiter *head;
	struct core_holding held;
	unsigned k;

	if (core_entry_queue_len(e) == 0 || core_entry_delay_until(e) != 0)
		return;
	head = container_of(core_entry_queue_first(e), struct core_waiter,
	    queue_link);
	held.holders = n;
	held.shared = true;
	held.limit = entry_limit_of(e);
	for (k = 0; k < n; k++)
		held.shared = held.shared && th[k].shared;
	if (core_rule_admits(&held, head->shared))
		hist_violation(w->hist, SIM_NO_STARVATION,
		    "%s has %u holders (limit %u%s) at t=%lld and lets its "
		    "%s head waiter wait (%u waiters)", w->name_text[name], n,
		    (unsigned)held.limit, n > 0 && held.shared ? ", shared" :
		    "", (long long)w->now, head->shared ? "shared" :
		    "exclusive", core_entry_queue_len(e));
}

/*
 * After every service call: which fences each lock's holders have (a new
 * one is a grant; one gone was let go), and the table's own liveness
 * duties.
 */
static void
observe(struct world *w, bool after_tick)
{
	static struct table_hold th[SEEN_MAX];
	uint64_t seq = hist_next_seq(w->hist);
	core_time mono = w->now - w->boot_off;
	int i;

	for (i = 0; i < w->nnames; i++) {
		const struct core_entry *e = entry_of(w, i);
		unsigned n = table_holds(e, th), k;
		uint64_t newest = 0;

		for (k = 0; k < n; k++)
			if (th[k].lock->fence > newest)
				newest = th[k].lock->fence;
		if (w->opt->trace && newest != w->seen_fence[i])
			world_trace(w, "table: %s fence %llu -> %llu (%u "
			    "holders)", w->name_text[i],
			    (unsigned long long)w->seen_fence[i],
			    (unsigned long long)newest, n);
		/* LockDelay: a hold seen to end by expiry owes its delay
		 * from its expiry, and holds the whole name back.  (Judged
		 * only when the entry's last change is an expiry, the seen
		 * hold's lease has run out, and any delay the entry runs is
		 * this one or ends no earlier: another hold may have come
		 * and gone between two looks, or a failed commit may have
		 * put back an older one.) */
		for (k = 0; k < w->nseen[i]; k++) {
			const struct seen_hold *s = &w->seen[i][k];
			if (holds_fence(th, n, s->fence) || w->delay_skip[i] ||
			    e == NULL || e->cause != CORE_END_EXPIRED ||
			    s->expiry > w->now || s->delay <= 0 ||
			    (core_entry_delay_until(e) != 0 && core_entry_delay_until(e) +
			    w->boot_off != s->expiry + s->delay) ||
			    s->expiry + s->delay <= w->delay_until[i])
				continue;
			w->delay_until[i] = s->expiry + s->delay;
			if (n > 0)
				hist_cover(w->hist, SIM_COV_KIND_DELAY);
		}
		for (k = 0; k < n; k++) {
			const struct core_lock *l = th[k].lock;
			sim_time g = th[k].granted_at + w->boot_off;

			if (seen_has(w, i, l->fence))
				continue;
			hist_grant_seen(w->hist, i, l->fence, l->secret, seq,
			    g);
			hist_checked(w->hist);
			if (g < w->delay_until[i])
				hist_violation(w->hist, SIM_LOCK_DELAY,
				    "%s fence=%llu granted at t=%lld inside "
				    "a lock-delay running until t=%lld",
				    w->name_text[i],
				    (unsigned long long)l->fence,
				    (long long)g, (long long)w->delay_until[i]);
			else if (w->delay_until[i] != 0 &&
			    g >= w->delay_until[i])
				hist_cover(w->hist, SIM_COV_LOCK_DELAY);
		}
		for (k = 0; k < w->nseen[i]; k++)
			if (!holds_fence(th, n, w->seen[i][k].fence))
				hist_dropped(w->hist, i, w->seen[i][k].fence,
				    seq, w->now, w->svc->commit.batch_seq);
		for (k = 0; k < n; k++)
			w->seen[i][k] = (struct seen_hold){ th[k].lock->fence,
			    th[k].lock->expiry + w->boot_off,
			    core_tags_delay(th[k].lock->tags) };
		w->nseen[i] = n;
		w->seen_fence[i] = newest;
		w->seen_limit[i] = e != NULL ? entry_limit_of(e) : 0;
		w->delay_skip[i] = false;
		if (e == NULL)
			continue;
		for (k = 0; k < n; k++)
			rid_stored(w, i, th[k].lock);
		hist_checked(w->hist);
		check_head_waiter(w, i, e, th, n);
		for (k = 0; after_tick && k < n; k++)
			if (th[k].lock->expiry <= mono)
				hist_violation(w->hist,
				    SIM_LEASE_RECLAMATION_SAFETY,
				    "%s fence=%llu expired at t=%lld but was "
				    "still held after a tick at t=%lld",
				    w->name_text[i],
				    (unsigned long long)th[k].lock->fence,
				    (long long)(th[k].lock->expiry +
				    w->boot_off), (long long)w->now);
	}
}

/* True when the failed batch (still in svc->commit.batch) wrote name i (under
 * any of its keys). */
static bool
in_failed_batch(const struct world *w, int i)
{
	struct store_batch_op op;
	size_t pos = 0;

	while (store_batch_next(&w->svc->commit.batch, &pos, &op))
		if (format_key_name_len(op.name, op.name_len) ==
		    w->name_len[i] &&
		    memcmp(op.name, w->name_text[i], w->name_len[i]) == 0)
			return true;
	return false;
}

/* A held record the table gave back (after a recovery, or a failed commit
 * of its name): the history learns of it, with the expiry the table keeps
 * (a take-over gives a record of an earlier term the expiry of its own
 * clock). */
static void
restored(struct world *w, int i, const struct record *r, bool recovery,
    uint64_t seq)
{
	static struct table_hold th[SEEN_MAX];
	const struct core_entry *e = entry_of(w, i);
	unsigned n = table_holds(e, th), k;
	sim_time expiry = r->expiry;

	for (k = 0; k < n; k++)
		if (th[k].lock->fence == r->fence && w->etcd != NULL &&
		    (recovery || r->other_boot))
			expiry = th[k].lock->expiry + w->boot_off;
	if (recovery && w->etcd != NULL) {
		if (hist_told(w->hist, i, r->fence))
			hist_cover(w->hist, SIM_COV_TOLD_LEASE_TAKEN_OVER);
		if (r->onclose)
			hist_cover(w->hist, SIM_COV_ONCLOSE_MADE_ORDINARY);
	}
	hist_restored(w->hist, i, r->fence, expiry, seq, w->now);
	/* A stored lease that has run out meanwhile was let go again at
	 * once: no look at the table sees it go. */
	if (!recovery && !holds_fence(th, n, r->fence) &&
	    !seen_has(w, i, r->fence))
		hist_dropped(w->hist, i, r->fence, hist_next_seq(w->hist),
		    w->now, w->svc->commit.batch_seq);
}

/* A failed commit gave name i back another limit than its waiters were
 * queued under: each may be answered ERR BADARG now. */
static void
limit_changed(struct world *w, int i)
{
	int k;
	uint32_t j;

	for (k = 0; k < w->nclients; k++) {
		struct client *c = &w->clients[k];

		for (j = c->head; c->connected && j != c->exec; j++) {
			struct sim_req *r = &c->req[j % REQ_RING];
			if (r->cmd == PROTO_CMD_ACQUIRE && r->name == i)
				r->misfit_may = true;
		}
	}
}

/* After a recovery (every name) or a failed commit (the names of its
 * batch; others keep changes made while it was in flight) the table holds
 * what the store holds: leases may come back (a release that was not yet
 * durable). */
static void
restores(struct world *w, bool all)
{
	static struct table_hold th[SEEN_MAX];
	uint64_t seq = hist_next_seq(w->hist);
	int i;

	for (i = 0; i < w->nnames; i++) {
		unsigned n, k;
		size_t v, nv;

		if (all) {
			struct record r;

			n = table_holds(entry_of(w, i), th);
			for (k = 0; k < n; k++)
				if (store_record(w, i, th[k].lock->fence, &r) &&
				    r.fence == th[k].lock->fence)
					restored(w, i, &r, true, seq);
			continue;
		}
		if (!in_failed_batch(w, i))
			continue;
		world_trace(w, "fell back: %s table fence=%llu", w->name_text[i],
		    (unsigned long long)w->seen_fence[i]);
		if (w->seen_limit[i] != 0 &&
		    entry_limit_of(entry_of(w, i)) != w->seen_limit[i])
			limit_changed(w, i);
		/* Whatever the name went through since the batch began is
		 * undone: it is what the store says, and a stored lease that
		 * has run out meanwhile was let go again at once. */
		hist_undo_drops(w->hist, i);
		/* A lock-delay expected from a hold the store never had
		 * (its grant undone with the batch) is no longer owed. */
		w->delay_until[i] = 0;
		w->delay_skip[i] = true;
		nv = store_views(w);
		for (v = 0; v < nv; v++) {
			struct record r;

			if (w->views[v].name == i &&
			    store_record(w, i, w->views[v].fence, &r))
				restored(w, i, &r, false, seq);
		}
	}
}

/* The reply gate of the broken variant: every reply may leave at once. */
void
world_open_gate(struct world *w)
{
	if (w->opt->variant == SIM_VARIANT_REPLIES_BEFORE_COMMIT && w->up) {
		w->svc->commit.durable_seq = UINT64_MAX;
		w->svc->released_seq = UINT64_MAX;
	}
}

void
world_after_commit(struct world *w, int rc)
{
	if (rc != 0) {
		w->res->failed_commits++;
		hist_cover(w->hist, SIM_COV_COMMIT_FAILED);
		world_trace(w, "commit failed");
		restores(w, false);
	} else if (w->up) {
		hist_durable(w->hist, w->svc->commit.durable_seq);
	}
	observe(w, false);
	world_open_gate(w);
}

/* The broken variant: the batch in flight holds back no reply. */
static void
ungate(struct world *w)
{
	struct service *svc = w->svc;

	if (w->opt->variant != SIM_VARIANT_INFLIGHT_UNGATED)
		return;
	if (svc->commit.inflight_cap < 16) {
		size_t *p = realloc(svc->commit.inflight_names,
		    16 * sizeof(*p));
		if (p == NULL)
			world_fatal("out of memory");
		svc->commit.inflight_names = p;
		svc->commit.inflight_cap = 16;
	}
	memset(svc->commit.inflight_names, 0,
	    svc->commit.inflight_cap * sizeof(size_t));
	svc->commit.inflight_mask = svc->commit.inflight_cap - 1;
	svc->commit.inflight_indexed = true;
	svc->commit.inflight_all = false;
}

/* The thread pool writes the batch in flight. */
void
world_write_inflight(struct world *w)
{
	if (!service_commit_inflight(w->svc) || w->written)
		return;
	world_trace(w, "batch written");
	service_commit_write(w->svc);
	w->written = true;
}

/* The batch in flight ends: written first if it was not yet. */
static void
end_inflight(struct world *w)
{
	int rc;

	if (!service_commit_inflight(w->svc))
		return;
	world_write_inflight(w);
	if (w->etcd != NULL && etcd_sim_lost(w)) {
		world_failover(w, "the store is lost");
		return;
	}
	w->written = false;
	rc = service_commit_end(w->svc);
	world_trace(w, "batch ends%s", rc != 0 ? " in failure" : "");
	if (rc != 0 && w->served_in_flight)
		hist_cover(w->hist, SIM_COV_INFLIGHT_FAILED);
	w->served_in_flight = false;
	world_after_commit(w, rc);
}

/*
 * The end of a pass, as the server's commit_if_due: a batch in flight may
 * end now (or, in async runs, stay in flight); then a commit starts if one
 * is due, and in async runs may stay in flight too.
 */
void
world_end_pass(struct world *w)
{
	int rc;

	if (service_commit_inflight(w->svc)) {
		if (w->async && world_random_percent(w, 50)) {
			world_after_commit(w, 0);
			return;
		}
		end_inflight(w);
	}
	if (!service_commit_due(w->svc)) {
		world_after_commit(w, 0);
		return;
	}
	rc = service_commit_begin(w->svc);
	if (rc != 1) {
		world_after_commit(w, rc);
		return;
	}
	if (w->opt->trace) {
		struct store_batch_op op;
		char names[256];
		size_t pos = 0, n = 0;
		names[0] = '\0';
		while (store_batch_next(&w->svc->commit.batch, &pos, &op) &&
		    n + op.name_len + 8 < sizeof(names))
			n += (size_t)snprintf(names + n, sizeof(names) - n,
			    " %s%.*s", op.op == STORE_DEL ? "-" : "",
			    (int)op.name_len, op.name);
		world_trace(w, "batch %llu begins:%s%s",
		    (unsigned long long)w->svc->commit.inflight_seq, names,
		    w->svc->commit.batch.has_hwm ? " hwm" : "");
	}
	ungate(w);
	if (w->async && world_random_percent(w, 60)) {
		if (world_random_percent(w, 30))
			world_write_inflight(w);
		world_after_commit(w, 0);
		return;
	}
	end_inflight(w);
}

void
world_tick(struct world *w)
{
	core_time next;

	if (w->exact)
		hist_cover(w->hist, SIM_COV_EXACT_DEADLINE_TICK);
	world_trace(w, "tick%s", w->exact ? " (at a deadline)" : "");
	next = service_tick(w->svc);
	observe(w, true);
	hist_checked(w->hist);
	if (next <= w->now - w->boot_off)
		hist_violation(w->hist, SIM_LEASE_RECLAMATION_SAFETY,
		    "a tick at t=%lld left a deadline at t=%lld due",
		    (long long)w->now, (long long)(next + w->boot_off));
}

/* ---- requests --------------------------------------------------------- */

size_t
world_format_request(const struct world *w, const struct sim_req *r, char *out,
    size_t cap)
{
	struct proto_request q;
	size_t n;

	memset(&q, 0, sizeof(q));
	q.command = r->cmd;
	q.name = w->name_text[r->name];
	q.name_len = w->name_len[r->name];
	q.handle = r->handle;
	q.has_lease = r->has_lease;
	q.lease_ms = r->lease;
	q.has_wait = r->has_wait;
	q.wait_ms = r->wait;
	q.has_onclose = r->has_onclose;
	q.onclose = r->onclose_release ? PROTO_ONCLOSE_RELEASE :
	    PROTO_ONCLOSE_KEEP;
	q.has_delay = r->has_delay;
	q.delay_ms = r->delay;
	q.has_fence = r->has_fence;
	q.fence = r->fence;
	q.rid = r->rid;
	q.rid_len = r->rid_len;
	q.has_limit = r->limit > 0;
	q.limit = r->limit;
	q.has_mode = r->has_mode && !r->misfit_must;
	q.mode = r->shared ? PROTO_MODE_SHARED : PROTO_MODE_EXCLUSIVE;
	n = proto_format_request(out, cap, &q);
	if (n > 0 && r->misfit_must) {
		/* mode=shared with a limit, which the formatter refuses to
		 * write: added by hand, before the line's end. */
		static const char more[] = " mode=shared";
		size_t end = n - (n >= 2 && out[n - 2] == '\r' ? 2 : 1);

		if (n + sizeof(more) - 1 > cap)
			return 0;
		memmove(out + end + sizeof(more) - 1, out + end, n - end);
		memcpy(out + end, more, sizeof(more) - 1);
		n += sizeof(more) - 1;
	}
	return n;
}

static int64_t
effective_lease(const struct world *w, const struct sim_req *r)
{
	int64_t eff = 0;

	core_lease_effective(&w->config.core, r->has_lease ? r->lease : 0,
	    &eff);
	return eff;
}

static void
random_lease(struct world *w, struct sim_req *r)
{
	int64_t max = w->config.core.max_lease_ms;
	unsigned p = (unsigned)world_random_below(w, 100);

	r->has_lease = p >= 20;
	if (p < 28)
		r->lease = 0;
	else if (p < 90)
		r->lease = 1 + (int64_t)world_random_below(w, (uint64_t)max);
	else
		r->lease = max + 1 + (int64_t)world_random_below(w, (uint64_t)max);
}

/* delay= on some ACQUIREs and TRYs: short enough that queues move. */
static void
random_delay(struct world *w, struct sim_req *r)
{
	if (!world_random_percent(w, 15))
		return;
	r->has_delay = true;
	r->delay = (int64_t)world_random_below(w,
	    (uint64_t)w->config.core.max_lease_ms / 2 + 1);
}

/*
 * rid= on some ACQUIREs and TRYs (drawn from a generator of their own, so
 * that the rest of a seed's requests stay what they were before rid=): a
 * new one, or the repeat of one of the
 * client's recent requests whose answer it has (or lost with its
 * connection), as a client retrying after a lost reply does - on the same
 * name, so that it may find its grant.
 */
static void
random_rid(struct world *w, struct client *c, struct sim_req *r)
{
	unsigned n = c->nrids < OWN_RIDS ? c->nrids : OWN_RIDS, slot;

	r->rid_slot = -1;
	if (rng_below(&w->rids, 100) >= 30)
		return;
	slot = n > 0 ? (unsigned)rng_below(&w->rids, n) : 0;
	if (n > 0 && !c->rids[slot].open && rng_below(&w->rids, 100) < 50) {
		r->name = c->rids[slot].name;
	} else {
		slot = c->nrids++ % OWN_RIDS;
		if (c->rids[slot].open)
			return;   /* still in flight: no rid this time */
		c->rids[slot].len = (uint8_t)snprintf(c->rids[slot].rid,
		    SIM_RID_MAX, "c%d.%u", c->id, c->nrids);
		c->rids[slot].name = r->name;
		c->rids[slot].granted = false;
		c->rids[slot].limit = 0;
	}
	c->rids[slot].open = true;
	r->rid_slot = (int8_t)slot;
	r->rid_len = c->rids[slot].len;
	memcpy(r->rid, c->rids[slot].rid, r->rid_len);
}

/* The limit a request asks for: limit=, absent counting as 1. */
static uint16_t
req_limit(const struct sim_req *r)
{
	return r->limit > 1 ? r->limit : 1;
}

/*
 * limit= and mode= on ACQUIREs and TRYs (from a generator of their own):
 * the name's kind, as a real user keeps it - a semaphore's limit, a
 * read/write lock's readers and writers - and now and then a misfit: the
 * wrong limit (absent counts as 1), or mode=shared with a limit, which
 * ERR BADARG answers.  A rid repeat mostly asks what it asked before.
 */
static void
random_kind(struct world *w, struct client *c, struct sim_req *r)
{
	unsigned p = (unsigned)rng_below(&w->kinds, 100);
	uint16_t limit = w->name_limit[r->name];

	r->limit = limit > 1 ? limit : 0;
	if (w->name_rw[r->name]) {
		r->shared = p < 55;
		r->has_mode = r->shared || p >= 85;
	} else if (limit == 1 && p >= 90) {
		r->limit = 1;   /* limit=1 said aloud: a mutex all the same */
	}
	if (r->rid_slot >= 0 && c->rids[r->rid_slot].limit > 0 &&
	    rng_below(&w->kinds, 100) < 90) {
		r->limit = c->rids[r->rid_slot].limit > 1 ?
		    c->rids[r->rid_slot].limit : 0;
		r->shared = c->rids[r->rid_slot].shared;
		r->has_mode = r->shared;
	} else if (rng_below(&w->kinds, 100) < 4) {
		p = (unsigned)rng_below(&w->kinds, 3);
		if (p == 0 && limit > 1) {
			r->shared = r->has_mode = true;
		} else if (p == 0) {
			r->limit = (uint16_t)(2 + rng_below(&w->kinds, 3));
		} else {
			r->limit = (uint16_t)rng_below(&w->kinds, 6);
			if (r->limit == 1)
				r->limit = 0;
			r->shared = r->shared && r->limit == 0;
			r->has_mode = r->shared;
		}
	}
	if (r->rid_slot >= 0) {
		c->rids[r->rid_slot].limit = req_limit(r);
		c->rids[r->rid_slot].shared = r->shared;
	}
	r->misfit_must = r->shared && req_limit(r) != 1;
}

static void
random_onclose(struct world *w, struct sim_req *r)
{
	unsigned p = (unsigned)world_random_below(w, 100);

	r->has_onclose = p >= 60;
	r->onclose_release = p >= 70;
}

/* A handle for RENEW or RELEASE: mostly the client's newest, sometimes an
 * older one of its own, one somebody else was told, or a forgery. */
static void
pick_handle(struct world *w, struct client *c, struct sim_req *r)
{
	unsigned p = (unsigned)world_random_below(w, 100);

	if (p < 80 && c->nown > 0) {
		unsigned n = c->nown < OWN_HANDLES ? c->nown : OWN_HANDLES;
		const struct own_handle *o = p < 70 ?
		    &c->own[(c->nown - 1) % OWN_HANDLES] :
		    &c->own[world_random_below(w, n)];
		r->name = o->name;
		r->handle = o->h;
	} else if (p < 90 && w->npool > 0) {
		unsigned n = w->npool < POOL_HANDLES ? w->npool : POOL_HANDLES;
		const struct own_handle *o = &w->pool[world_random_below(w, n)];
		r->name = o->name;
		r->handle = o->h;
	} else {
		/* A forgery: a real fence with a wrong secret, or a fence
		 * nobody was given. */
		r->name = (uint8_t)world_random_below(w, (uint64_t)w->nnames);
		if (w->npool > 0 && world_random_percent(w, 70)) {
			unsigned n = w->npool < POOL_HANDLES ? w->npool :
			    POOL_HANDLES;
			const struct own_handle *o = &w->pool[world_random_below(w, n)];
			r->name = o->name;
			r->handle.fence = o->h.fence;
			r->handle.secret = o->h.secret ^
			    (1 + world_random_below(w, UINT64_MAX - 1));
		} else {
			r->handle.fence = 1 + world_random_below(w, 64);
			r->handle.secret = rng_next(&w->rng);
		}
	}
	if (world_random_percent(w, 4))
		r->name = (uint8_t)world_random_below(w, (uint64_t)w->nnames);
}

void
world_queue_request(struct world *w, struct client *c, bool last)
{
	struct sim_req *r = &c->req[c->tail % REQ_RING];
	unsigned p = (unsigned)world_random_below(w, 1000);
	char line[PROTO_REPLY_MAX];
	size_t n;

	memset(r, 0, sizeof(*r));
	r->rid_slot = -1;
	r->name = (uint8_t)world_random_below(w, (uint64_t)w->nnames);
	if (p < 300) {
		r->cmd = PROTO_CMD_ACQUIRE;
		random_lease(w, r);
		p = (unsigned)world_random_below(w, 100);
		r->has_wait = p >= 30;
		r->wait = p < 50 ? 0 : 1 + (int64_t)world_random_below(w,
		    2 * (uint64_t)w->config.core.max_lease_ms);
		random_onclose(w, r);
		random_delay(w, r);
		random_rid(w, c, r);
		random_kind(w, c, r);
	} else if (p < 400) {
		r->cmd = PROTO_CMD_TRY;
		random_lease(w, r);
		random_onclose(w, r);
		random_delay(w, r);
		random_rid(w, c, r);
		random_kind(w, c, r);
	} else if (p < 600) {
		r->cmd = PROTO_CMD_RENEW;
		random_lease(w, r);
		pick_handle(w, c, r);
	} else if (p < 820) {
		r->cmd = PROTO_CMD_RELEASE;
		pick_handle(w, c, r);
	} else if (p < 900 &&
	    w->opt->variant != SIM_VARIANT_NEVER_RECLAIMS) {
		/* (With leases never reclaimed STATUS would report a
		 * negative ttl, which the service cannot format: it sends
		 * nothing at all, a reply missing for a reason the variant
		 * is not about.) */
		r->cmd = PROTO_CMD_STATUS;
	} else if (p < 925) {
		r->cmd = PROTO_CMD_PING;
	} else if (p < 940) {
		/* FORCE of a fence somebody was told (or a forgery's). */
		r->cmd = PROTO_CMD_FORCE;
		pick_handle(w, c, r);
		r->has_fence = true;
		r->fence = r->handle.fence;
	} else if (p < 960) {
		/* Always with a wait, so that NoStarvation's drain ends. */
		r->cmd = PROTO_CMD_WATCH;
		r->has_wait = true;
		r->wait = (int64_t)world_random_below(w,
		    (uint64_t)w->config.core.max_lease_ms + 1);
		if (world_random_percent(w, 70)) {
			r->has_fence = true;
			r->fence = world_random_percent(w, 80) ?
			    w->seen_fence[r->name] :
			    world_random_below(w, 4);
		}
	} else if (p < 970) {
		r->cmd = PROTO_CMD_STATS;
	} else if (p < 973 && last) {
		r->cmd = PROTO_CMD_QUIT;
		c->quit_sent = true;
	} else {
		r->cmd = PROTO_CMD_PING;
	}
	r->eff = effective_lease(w, r);
	n = world_format_request(w, r, line, sizeof(line));
	if (n == 0)
		world_fatal("cannot format a request");
	r->len = (uint32_t)n;
	if (c->buf_len + n > c->buf_cap) {
		c->buf_cap = c->buf_cap ? c->buf_cap * 2 : 1024;
		while (c->buf_cap < c->buf_len + n)
			c->buf_cap *= 2;
		if ((c->buf = realloc(c->buf, c->buf_cap)) == NULL)
			world_fatal("out of memory");
	}
	memcpy(c->buf + c->buf_len, line, n);
	c->buf_len += n;
	c->tail++;
}

/* The fence of the name's newest live holder now (0: none; a lease that
 * has run out the command reclaims first). */
static uint64_t
live_fence(const struct world *w, int name)
{
	static struct table_hold th[SEEN_MAX];
	unsigned n = table_holds(entry_of(w, name), th), k;
	uint64_t newest = 0;

	for (k = 0; k < n; k++)
		if (th[k].lock->expiry > w->now - w->boot_off &&
		    th[k].lock->fence > newest)
			newest = th[k].lock->fence;
	return newest;
}

/*
 * FORCE <name> <fence> must act exactly as a RELEASE with the true handle
 * of the grant with that fence: it frees that holder if it is a live
 * one, and nothing else.  So the history judges it as one
 * (StaleTokenRejection, HolderAccepted, MutualExclusion...), with the
 * secret of the grant the fence names: a told one's, or the holder's
 * when that grant was never told.  A fence no grant had stays forged,
 * and must be refused.
 */
static void
force_begin(struct world *w, struct sim_req *r)
{
	static struct table_hold th[SEEN_MAX];
	unsigned n = table_holds(entry_of(w, r->name), th), k;
	uint64_t secret = r->handle.secret;
	unsigned i, np = w->npool < POOL_HANDLES ? w->npool : POOL_HANDLES;

	for (i = 0; i < np; i++)
		if (w->pool[i].name == r->name &&
		    w->pool[i].h.fence == r->fence)
			secret = w->pool[i].h.secret;
	for (k = 0; k < n; k++)
		if (th[k].lock->fence == r->fence)
			secret = th[k].lock->secret;
	r->op = hist_op_begin(w->hist, HIST_RELEASE, r->name, r->fence,
	    secret, 0, r->seq, r->t);
}

/*
 * An ACQUIRE or TRY with a rid: the live grant it repeats, if one of the
 * holders was granted with this rid - byte for byte, while its lease lives
 * (as it is when the command runs, after any reclaim).  A repeat of
 * another kind than its grant's (mode, or the name's limit) is a misfit.
 */
static void
rid_begin(struct world *w, struct sim_req *r)
{
	static struct table_hold th[SEEN_MAX];
	const struct core_entry *e = entry_of(w, r->name);
	unsigned n = table_holds(e, th), k;
	core_time mono = w->now - w->boot_off;

	r->rid_fence = 0;
	r->rid_misfit = false;
	for (k = 0; k < n; k++) {
		const struct core_lock *l = th[k].lock;
		const char *rid;

		if (l->expiry <= mono ||
		    core_tags_rid(l->tags, &rid) != r->rid_len ||
		    memcmp(rid, r->rid, r->rid_len) != 0)
			continue;
		if (th[k].shared != r->shared ||
		    entry_limit_of(e) != req_limit(r)) {
			r->rid_misfit = true;
			return;
		}
		r->rid_fence = l->fence;
		r->rid_secret = l->secret;
		r->rid_left = l->expiry - mono;
		r->rid_lease = l->lease_ms;
		r->rid_onclose = th[k].onclose;
		r->rid_kind = (struct hist_kind){ entry_limit_of(e),
		    th[k].shared };
		return;
	}
}

/* The request starts executing now: it gets its place in the history. */
static void
exec_begin(struct world *w, struct client *c, struct sim_req *r)
{
	r->seq = hist_next_seq(w->hist);
	r->t = w->now;
	r->pass = w->pass;
	w->res->requests++;
	if (r->cmd == PROTO_CMD_RENEW || r->cmd == PROTO_CMD_RELEASE)
		r->op = hist_op_begin(w->hist, r->cmd == PROTO_CMD_RENEW ?
		    HIST_RENEW : HIST_RELEASE, r->name, r->handle.fence,
		    r->handle.secret, r->eff, r->seq, r->t);
	if (r->cmd == PROTO_CMD_FORCE)
		force_begin(w, r);
	if (r->cmd == PROTO_CMD_WATCH)
		r->fence_at_exec = live_fence(w, r->name);
	if (r->rid_len > 0)
		rid_begin(w, r);
	if (r->cmd == PROTO_CMD_ACQUIRE || r->cmd == PROTO_CMD_TRY) {
		const struct core_entry *e = entry_of(w, r->name);

		r->misfit_may = e != NULL && entry_limit_of(e) != req_limit(r);
	}
	if (r->rid_slot >= 0 && r->rid_fence == 0) {
		c->rids[r->rid_slot].exec_seq = r->seq;
		c->rids[r->rid_slot].exec_t = r->t;
	}
	if (w->opt->trace) {
		char line[PROTO_REPLY_MAX];
		size_t n = world_format_request(w, r, line, sizeof(line));
		world_trace(w, "c%d > %.*s", c->id, (int)(n - 1), line);
	}
}

/* An ACQUIRE or TRY that asks another limit than its name's. */
static bool
odd_kind(const struct world *w, const struct sim_req *r)
{
	return (r->cmd == PROTO_CMD_ACQUIRE || r->cmd == PROTO_CMD_TRY) &&
	    req_limit(r) != w->name_limit[r->name];
}

/* Sends the first k queued bytes of c. */
void
world_client_feed(struct world *w, struct client *c, size_t k)
{
	uint32_t i = c->exec, done = 0;
	size_t off = c->partial, left = k;
	uint64_t before = c->conn.next_seq;

	/* A FORCE of a fence above an expired holder's could act on a grant
	 * its own reclaim makes and frees at once, which no look at the
	 * table can date: let the timer run first (the loop may run it
	 * before or after a read). */
	if (i != c->tail && c->req[i % REQ_RING].cmd == PROTO_CMD_FORCE &&
	    left >= c->req[i % REQ_RING].len - off) {
		static struct table_hold th[SEEN_MAX];
		const struct sim_req *r = &c->req[i % REQ_RING];
		unsigned n = table_holds(entry_of(w, r->name), th), h;

		for (h = 0; h < n; h++)
			if (th[h].lock->fence < r->fence &&
			    th[h].lock->expiry <= w->now - w->boot_off) {
				world_tick(w);
				break;
			}
	}
	while (i != c->tail && left >= c->req[i % REQ_RING].len - off) {
		const struct sim_req *r = &c->req[i % REQ_RING];

		/* FORCE, WATCH and a request with a rid are judged against
		 * the table as it is when they run: each starts a read of
		 * its own, so that nothing of the same read runs before it
		 * unseen. */
		if (done > 0 && (r->cmd == PROTO_CMD_FORCE ||
		    r->cmd == PROTO_CMD_WATCH || r->rid_len > 0 ||
		    odd_kind(w, r))) {
			k -= left;
			left = 0;
			break;
		}
		left -= r->len - off;
		off = 0;
		exec_begin(w, c, &c->req[i % REQ_RING]);
		i++;
		done++;
		/* A request of another limit than its name's may set the
		 * name's limit, and so decide the next one's ERR BADARG:
		 * nothing else runs in its read. */
		if (odd_kind(w, r) && i != c->tail) {
			k -= left;
			left = 0;
			break;
		}
	}
	if (done > 0 && service_commit_inflight(w->svc)) {
		w->served_in_flight = true;
		hist_cover(w->hist, SIM_COV_SERVED_WHILE_WRITING);
	}
	service_conn_feed(w->svc, &c->conn, c->buf, k);
	memmove(c->buf, c->buf + k, c->buf_len - k);
	c->buf_len -= k;
	c->exec = i;
	c->partial = i == c->tail ? 0 : off + left;
	if (c->partial > 0) {
		hist_cover(w->hist, SIM_COV_PARTIAL_LINE);
		world_trace(w, "c%d > (%zu bytes of a line)", c->id, c->partial);
	}
	hist_checked(w->hist);
	if (c->conn.next_seq - before != done)
		hist_violation(w->hist, SIM_REPLY_ORDER,
		    "client %d sent %u requests, the service took %llu",
		    c->id, done,
		    (unsigned long long)(c->conn.next_seq - before));
	observe(w, false);
}

/* ---- connections ------------------------------------------------------ */

void
world_client_connect(struct world *w, struct client *c)
{
	service_conn_open(w->svc, &c->conn);
	c->connected = true;
	c->quit_sent = false;
	c->head = c->exec = c->tail = 0;
	c->buf_len = c->partial = 0;
	c->nonclose = 0;
	w->res->connections++;
	world_trace(w, "c%d connects", c->id);
}

/* Its connection is gone: what it had in flight is lost to the history,
 * and its onclose leases end.  Returns true if an ACQUIRE was waiting. */
static bool
client_lost(struct world *w, struct client *c, uint64_t seq)
{
	bool waiting = false;
	uint32_t i;
	unsigned k;

	for (i = c->head; i != c->exec; i++) {
		struct sim_req *r = &c->req[i % REQ_RING];
		if (r->cmd == PROTO_CMD_RENEW || r->cmd == PROTO_CMD_RELEASE ||
		    r->cmd == PROTO_CMD_FORCE)
			hist_op_result(w->hist, r->op, HIST_UNKNOWN, r->t,
			    NULL);
		else if (r->cmd == PROTO_CMD_ACQUIRE)
			waiting = true;
	}
	for (k = 0; k < c->nonclose; k++)
		hist_closed(w->hist, c->onclose[k], seq, w->now);
	c->nonclose = 0;
	/* Requests never answered: their rids may be repeated now. */
	for (k = 0; k < OWN_RIDS; k++)
		c->rids[k].open = false;
	c->head = c->exec = c->tail = 0;
	c->buf_len = c->partial = 0;
	c->connected = false;
	return waiting;
}

void
world_client_disconnect(struct world *w, struct client *c, const char *why)
{
	uint64_t seq = hist_next_seq(w->hist);

	world_trace(w, "c%d %s", c->id, why);
	if (client_lost(w, c, seq))
		hist_cover(w->hist, SIM_COV_DISCONNECT_WHILE_WAITING);
	service_conn_close(w->svc, &c->conn);
	w->res->disconnects++;
	observe(w, false);
}

static void
own_add(struct world *w, struct client *c, int name, struct proto_handle h)
{
	struct own_handle o = { (uint8_t)name, h };

	c->own[c->nown++ % OWN_HANDLES] = o;
	w->pool[w->npool++ % POOL_HANDLES] = o;
}

/* ---- replies ---------------------------------------------------------- */

static bool
names_match(const struct world *w, const struct sim_req *r,
    const struct proto_reply *rep)
{
	return rep->name_len == w->name_len[r->name] &&
	    memcmp(rep->name, w->name_text[r->name], rep->name_len) == 0;
}

static void
bad_reply(struct world *w, struct client *c, const struct sim_req *r,
    const char *line, size_t len)
{
	char req[PROTO_REPLY_MAX];
	size_t n = world_format_request(w, r, req, sizeof(req));

	hist_violation(w->hist, SIM_REPLY_ORDER,
	    "client %d: \"%.*s\" (t=%lld) answered \"%.*s\"", c->id,
	    (int)(n > 0 ? n - 1 : 0), req, (long long)r->t,
	    (int)(len > 1 ? len - 2 : 0), line);
}

static bool
is_error(const struct proto_reply *rep, enum proto_error_code code)
{
	return rep->kind == PROTO_REPLY_ERROR && rep->error == code;
}

/* Cluster mode: a leader past its deadline refuses every lock command
 * (it changes nothing). */
static bool
not_leader(struct world *w, const struct proto_reply *rep)
{
	if (w->etcd == NULL || !is_error(rep, PROTO_ERR_NOTLEADER))
		return false;
	hist_cover(w->hist, SIM_COV_NOTLEADER_TOLD);
	return true;
}

/* The told grant idx is bound to c's connection by onclose=release. */
static void
onclose_add(struct client *c, int32_t idx)
{
	if (c->nonclose == c->conclose) {
		c->conclose = c->conclose ? 2 * c->conclose : 32;
		c->onclose = realloc(c->onclose,
		    c->conclose * sizeof(*c->onclose));
		if (c->onclose == NULL)
			world_fatal("out of memory");
	}
	c->onclose[c->nonclose++] = idx;
}

/*
 * The reply to a repeat of a live grant's rid: that grant, no other (and
 * no new one: the history is not told of a grant), or UNAVAILABLE when
 * the commit it waited for failed.
 */
static void
reply_to_repeat(struct world *w, struct client *c, struct sim_req *r,
    const struct proto_reply *rep, const char *line, size_t len)
{
	struct proto_handle h = { r->rid_fence, r->rid_secret };

	hist_checked(w->hist);
	if (is_error(rep, PROTO_ERR_UNAVAILABLE) || not_leader(w, rep)) {
		w->res->unavailable++;
		return;
	}
	if (rep->kind != PROTO_REPLY_GRANTED || !names_match(w, r, rep) ||
	    rep->handle.fence != h.fence || rep->handle.secret != h.secret ||
	    rep->lease_ms != r->rid_left) {
		hist_violation(w->hist, SIM_RID_IDEMPOTENT,
		    "client %d: a repeat of rid=%.*s (t=%lld), whose grant "
		    "fence=%llu had %lld ms left, answered \"%.*s\"", c->id,
		    (int)r->rid_len, r->rid, (long long)r->t,
		    (unsigned long long)h.fence, (long long)r->rid_left,
		    (int)(len > 1 ? len - 2 : 0), line);
		return;
	}
	hist_cover(w->hist, SIM_COV_RID_REPEAT);
	if (r->rid_kind.limit > 1 || r->rid_kind.shared)
		hist_cover(w->hist, SIM_COV_KIND_RID_REPEAT);
	if (!hist_told(w->hist, r->name, h.fence) && r->rid_slot >= 0) {
		/* Its GRANTED was lost (with its connection, or in a
		 * crash): the client learns of the grant now, as a reply to
		 * the request that got it. */
		struct hist_store_view stored;
		uint64_t aseq = c->rids[r->rid_slot].exec_seq, seen_seq;
		sim_time at = c->rids[r->rid_slot].exec_t, seen_t;
		int32_t idx;

		hist_cover(w->hist, SIM_COV_RID_UNTOLD);
		/* A request with this rid that ran later without finding the
		 * grant (its lease had run out, on a leader whose reclaim
		 * never became durable, so that a take-over gave it back)
		 * is not the one that got it: no later than its sighting. */
		if (hist_seen(w->hist, r->name, h.fence, &seen_seq, &seen_t) &&
		    seen_seq < aseq) {
			aseq = seen_seq;
			at = seen_t;
		}
		store_view_of(w, r->name, h.fence, &stored);
		idx = hist_granted(w->hist, r->name, h.fence, h.secret,
		    r->rid_lease, r->rid_onclose, r->rid_kind, aseq, at,
		    &stored, w->mem.hwm);
		if (idx < 0)
			return;
		own_add(w, c, r->name, h);
		if (r->rid_onclose)
			onclose_add(c, idx);
	}
}

static void
reply_to_grant(struct world *w, struct client *c, struct sim_req *r,
    const struct proto_reply *rep, const char *line, size_t len)
{
	if (r->rid_fence != 0) {
		reply_to_repeat(w, c, r, rep, line, len);
		return;
	}
	if (r->rid_misfit) {
		/* A repeat of a live grant's rid of another kind: refused,
		 * and never a grant; or UNAVAILABLE, when the grant it
		 * found was in a batch that failed. */
		hist_checked(w->hist);
		if (is_error(rep, PROTO_ERR_BADARG))
			hist_cover(w->hist, SIM_COV_KIND_MISFIT);
		else if (is_error(rep, PROTO_ERR_UNAVAILABLE))
			w->res->unavailable++;
		else if (!not_leader(w, rep))
			hist_violation(w->hist, SIM_RID_IDEMPOTENT,
			    "client %d: a repeat of rid=%.*s (t=%lld) of "
			    "another kind than its live grant answered "
			    "\"%.*s\"", c->id, (int)r->rid_len, r->rid,
			    (long long)r->t, (int)(len > 1 ? len - 2 : 0),
			    line);
		return;
	}
	if (is_error(rep, PROTO_ERR_BADARG) &&
	    (r->misfit_must || r->misfit_may)) {
		hist_cover(w->hist, SIM_COV_KIND_MISFIT);
		return;
	}
	if (rep->kind == PROTO_REPLY_GRANTED) {
		struct hist_store_view stored;
		struct hist_kind kind = { req_limit(r), r->shared };
		int32_t idx;

		/* A rid that no live holder was granted with gets a new
		 * grant, never another request's. */
		if (r->rid_len > 0 && (rep->lease_ms != r->eff ||
		    hist_told(w->hist, r->name, rep->handle.fence))) {
			hist_checked(w->hist);
			hist_violation(w->hist, SIM_RID_IDEMPOTENT,
			    "client %d: rid=%.*s (t=%lld), which no live "
			    "holder was granted with, answered \"%.*s\"",
			    c->id, (int)r->rid_len, r->rid, (long long)r->t,
			    (int)(len > 1 ? len - 2 : 0), line);
			return;
		}
		if (!names_match(w, r, rep) || rep->lease_ms != r->eff ||
		    rep->handle.fence != rep->fence || r->misfit_must) {
			bad_reply(w, c, r, line, len);
			return;
		}
		w->res->grants++;
		if (r->pass < w->pass)
			hist_cover(w->hist, SIM_COV_GRANT_TOLD_LATE);
		if (r->rid_slot >= 0) {
			/* Told a grant before, which has ended since. */
			if (c->rids[r->rid_slot].granted)
				hist_cover(w->hist, SIM_COV_RID_REUSED);
			c->rids[r->rid_slot].granted = true;
		}
		store_view_of(w, r->name, rep->handle.fence, &stored);
		idx = hist_granted(w->hist, r->name, rep->handle.fence,
		    rep->handle.secret, rep->lease_ms, r->onclose_release,
		    kind, r->seq, r->t, &stored, w->mem.hwm);
		if (idx < 0)
			return;
		own_add(w, c, r->name, rep->handle);
		/* Every one: its close must end each of them. */
		if (r->onclose_release)
			onclose_add(c, idx);
		return;
	}
	if (r->cmd == PROTO_CMD_TRY && rep->kind == PROTO_REPLY_HELD &&
	    names_match(w, r, rep)) {
		hist_cover(w->hist, SIM_COV_TRY_HELD);
		return;
	}
	if (r->cmd == PROTO_CMD_ACQUIRE && is_error(rep, PROTO_ERR_TIMEOUT)) {
		w->res->timeouts++;
		if (!r->has_wait || w->now < r->t + r->wait) {
			bad_reply(w, c, r, line, len);
			return;
		}
		if (r->wait > 0) {
			hist_cover(w->hist, SIM_COV_WAIT_TIMEOUT);
			hist_timeout(w->hist, r->name, r->seq, r->t + r->wait);
		}
		return;
	}
	if (is_error(rep, PROTO_ERR_UNAVAILABLE)) {
		w->res->unavailable++;
		hist_cover(w->hist, SIM_COV_UNAVAILABLE_TOLD);
		return;
	}
	if (not_leader(w, rep))
		return;
	if (r->cmd == PROTO_CMD_ACQUIRE && is_error(rep, PROTO_ERR_SHUTDOWN)) {
		hist_cover(w->hist, SIM_COV_SHUTDOWN_TOLD);
		return;
	}
	if (is_error(rep, PROTO_ERR_LIMIT) || is_error(rep, PROTO_ERR_OVERFLOW))
		return;
	bad_reply(w, c, r, line, len);
}

static void
reply_to_handle_op(struct world *w, struct client *c, struct sim_req *r,
    const struct proto_reply *rep, const char *line, size_t len)
{
	struct hist_store_view stored;
	enum hist_outcome out;

	if (r->cmd == PROTO_CMD_RENEW && rep->kind == PROTO_REPLY_RENEWED &&
	    names_match(w, r, rep) && rep->fence == r->handle.fence &&
	    rep->lease_ms == r->eff) {
		out = HIST_OK;
		w->res->renewals++;
		hist_cover(w->hist, SIM_COV_RENEWED);
	} else if (r->cmd == PROTO_CMD_RENEW &&
	    is_error(rep, PROTO_ERR_CONFLICT)) {
		out = HIST_REFUSED;
	} else if (is_error(rep, PROTO_ERR_UNAVAILABLE) || not_leader(w, rep)) {
		/* Its commit, or the batch in flight it rested on, failed;
		 * or a leader past its deadline refused it. */
		out = HIST_UNAVAILABLE;
		w->res->unavailable++;
		hist_cover(w->hist, SIM_COV_UNAVAILABLE_TOLD);
	} else if (r->cmd == PROTO_CMD_RELEASE &&
	    rep->kind == PROTO_REPLY_RELEASED && names_match(w, r, rep)) {
		out = HIST_OK;
		w->res->releases++;
		hist_cover(w->hist, SIM_COV_RELEASED);
	} else if (r->cmd == PROTO_CMD_RELEASE &&
	    rep->kind == PROTO_REPLY_NOTHELD && names_match(w, r, rep)) {
		out = HIST_REFUSED;
	} else if (r->cmd == PROTO_CMD_FORCE &&
	    rep->kind == PROTO_REPLY_RELEASED && names_match(w, r, rep)) {
		out = HIST_OK;
		hist_cover(w->hist, SIM_COV_FORCED);
	} else if (r->cmd == PROTO_CMD_FORCE &&
	    rep->kind == PROTO_REPLY_NOTHELD && names_match(w, r, rep)) {
		out = HIST_REFUSED;
		hist_cover(w->hist, SIM_COV_FORCE_REFUSED);
	} else {
		bad_reply(w, c, r, line, len);
		out = HIST_UNKNOWN;
	}
	store_view_of(w, r->name, r->handle.fence, &stored);
	hist_op_result(w->hist, r->op, out, r->t, &stored);
}

/*
 * WATCH: CHANGED only when the fence differs from the one watched (or, with
 * none watched, for its name), TIMEOUT only after its wait and never when
 * the fence already differed as it arrived.
 */
static void
reply_to_watch(struct world *w, struct client *c, struct sim_req *r,
    const struct proto_reply *rep, const char *line, size_t len)
{
	char req[PROTO_REPLY_MAX];
	size_t n = world_format_request(w, r, req, sizeof(req));

	hist_checked(w->hist);
	if (rep->kind == PROTO_REPLY_CHANGED && names_match(w, r, rep)) {
		hist_cover(w->hist, SIM_COV_WATCH_CHANGED);
		if (r->has_fence && rep->fence == r->fence)
			hist_violation(w->hist, SIM_WATCH_CHANGE,
			    "client %d: \"%.*s\" (t=%lld) answered \"%.*s\": "
			    "no change", c->id, (int)(n > 0 ? n - 1 : 0), req,
			    (long long)r->t, (int)(len > 1 ? len - 2 : 0),
			    line);
		return;
	}
	if (is_error(rep, PROTO_ERR_TIMEOUT)) {
		if (w->now < r->t + r->wait)
			bad_reply(w, c, r, line, len);
		else if (r->has_fence && r->fence_at_exec != r->fence)
			hist_violation(w->hist, SIM_WATCH_CHANGE,
			    "client %d: \"%.*s\" (t=%lld) timed out though "
			    "fence=%llu was live as it arrived", c->id,
			    (int)(n > 0 ? n - 1 : 0), req, (long long)r->t,
			    (unsigned long long)r->fence_at_exec);
		return;
	}
	if (is_error(rep, PROTO_ERR_UNAVAILABLE) || not_leader(w, rep)) {
		w->res->unavailable++;
		return;
	}
	if (is_error(rep, PROTO_ERR_SHUTDOWN) || is_error(rep, PROTO_ERR_LIMIT))
		return;
	bad_reply(w, c, r, line, len);
}

static void
client_reply(struct world *w, struct client *c,
    const struct proto_reply *rep, const char *line, size_t len)
{
	struct sim_req *r;
	bool ok;

	w->res->replies++;
	digest(w, (uint64_t)c->id);
	digest(w, (uint64_t)w->now);
	digest_bytes(w, line, len);
	world_trace(w, "c%d < %.*s", c->id, (int)(len > 1 ? len - 2 : 0), line);
	hist_checked(w->hist);
	if (c->head == c->exec) {
		hist_violation(w->hist, SIM_REPLY_ORDER,
		    "client %d got \"%.*s\" with no request outstanding",
		    c->id, (int)(len > 1 ? len - 2 : 0), line);
		return;
	}
	r = &c->req[c->head++ % REQ_RING];
	if (r->rid_slot >= 0)
		c->rids[r->rid_slot].open = false;
	switch (r->cmd) {
	case PROTO_CMD_ACQUIRE:
	case PROTO_CMD_TRY:
		reply_to_grant(w, c, r, rep, line, len);
		return;
	case PROTO_CMD_RENEW:
	case PROTO_CMD_RELEASE:
	case PROTO_CMD_FORCE:
		reply_to_handle_op(w, c, r, rep, line, len);
		return;
	case PROTO_CMD_WATCH:
		reply_to_watch(w, c, r, rep, line, len);
		return;
	case PROTO_CMD_STATUS:
		ok = (rep->kind == PROTO_REPLY_STATUS &&
		    names_match(w, r, rep)) ||
		    is_error(rep, PROTO_ERR_UNAVAILABLE) || not_leader(w, rep);
		break;
	case PROTO_CMD_PING:
		ok = rep->kind == PROTO_REPLY_PONG;
		break;
	case PROTO_CMD_STATS:
		ok = rep->kind == PROTO_REPLY_STATS ||
		    is_error(rep, PROTO_ERR_LIMIT);
		break;
	case PROTO_CMD_QUIT:
		ok = rep->kind == PROTO_REPLY_BYE;
		break;
	default:
		ok = false;
		break;
	}
	if (!ok)
		bad_reply(w, c, r, line, len);
}

/* Hands every connection its output, as the server's write would. */
void
world_deliver(struct world *w)
{
	struct service_conn *sc;

	while ((sc = service_next_ready(w->svc)) != NULL) {
		struct client *c = container_of(sc, struct client, conn);
		size_t pos = 0;

		while (pos < sc->out.len) {
			struct proto_reply rep;
			struct proto_error err;
			size_t used = 0;
			enum proto_result pr = proto_parse_reply(
			    sc->out.data + pos, sc->out.len - pos, 1 << 16,
			    &rep, &used, &err);
			if (pr != PROTO_DONE) {
				hist_violation(w->hist, SIM_REPLY_ORDER,
				    "client %d: output that is not a reply "
				    "line (%zu bytes)", c->id,
				    sc->out.len - pos);
				pos = sc->out.len;
				break;
			}
			if (w->opt->variant ==
			    SIM_VARIANT_TRANSPORT_LOSES_REPLY &&
			    world_random_below(w, 500) == 0)
				world_trace(w, "c%d loses \"%.*s\"", c->id,
				    (int)(used - 2), sc->out.data + pos);
			else
				client_reply(w, c, &rep, sc->out.data + pos,
				    used);
			pos += used;
		}
		service_conn_written(sc, pos);
		if (sc->overflow) {
			hist_violation(w->hist, SIM_REPLY_ORDER,
			    "client %d was cut off at the output cap", c->id);
			world_client_disconnect(w, c, "cut off");
		} else if (sc->quit && sc->slots_head == NULL) {
			world_client_disconnect(w, c, "closed after QUIT");
		}
	}
}

/* ---- life and death of the service ------------------------------------ */

void
world_open_service(struct world *w)
{
	struct service_recovery rec;
	const struct core_rules *rules;

	/* The recovery commit must go through: a failed open leaves the
	 * daemon down, which the simulator does not model. */
	w->mem.fail_commits = 0;
	w->hook_failures = 0;
	if (service_open(w->svc, &w->config, &w->store.base, &w->sclock,
	    &rec) != 0) {
		hist_violation(w->hist, SIM_DURABILITY,
		    "recovery failed at t=%lld: %s", (long long)w->now,
		    w->svc->error);
		w->broken = true;
		return;
	}
	w->up = true;
	if (w->etcd != NULL)
		etcd_sim_opened(w);
	if ((rules = sim_variant_rules(w->opt->variant)) != NULL)
		w->svc->table.rules = rules;
	w->svc->hooks.before_commit = sim_before_commit;
	w->svc->hooks.ctx = w;
	world_trace(w, "open: %llu leases, %llu expired, %llu onclose, hwm %llu",
	    (unsigned long long)rec.leases, (unsigned long long)rec.expired,
	    (unsigned long long)rec.onclose, (unsigned long long)rec.hwm);
	restores(w, true);
	observe(w, false);
	world_open_gate(w);
	hist_checked(w->hist);
	if (w->svc->table.hwm < hist_max_told_fence(w->hist))
		hist_violation(w->hist, SIM_FENCING_MONOTONIC,
		    "recovered with fence high-water mark %llu after fence "
		    "%llu was told", (unsigned long long)w->svc->table.hwm,
		    (unsigned long long)hist_max_told_fence(w->hist));
}

/* The process comes back, perhaps after a while, perhaps after a reboot;
 * in cluster mode the next leader takes over (revoked: the last one gave
 * its lease back). */
static void
restart(struct world *w, bool revoked)
{
	int i;

	/* The holds the last incarnation was seen with are gone, none of
	 * them by an expiry in the new table: the first look owes no
	 * lock-delay for them (a stored holder that recovery reclaims may
	 * start one the core keeps, which the next grant is judged by). */
	for (i = 0; i < w->nnames; i++)
		w->delay_skip[i] = true;
	if (w->etcd != NULL) {
		etcd_sim_takeover(w, revoked);
		memset(w->delay_until, 0, sizeof(w->delay_until));
		world_open_service(w);
		return;
	}
	if (world_random_percent(w, 50))
		w->now += (sim_time)world_random_below(w,
		    2 * (uint64_t)w->config.core.max_lease_ms + 1);
	if (world_random_percent(w, 10)) {
		for (i = 0; i < 16; i++)
			w->boot_id[i] = (uint8_t)rng_next(&w->rng);
		memcpy(w->sclock.boot_id, w->boot_id, 16);
		/* The boot clock starts over near zero. */
		w->boot_off = w->now - 5000 - (sim_time)world_random_below(w, 5000);
		hist_cover(w->hist, SIM_COV_REBOOT);
		world_trace(w, "reboot");
	}
	/* The expected lock-delays rested on holds a crash may have taken
	 * back (the restarted table has what the store kept): start over. */
	memset(w->delay_until, 0, sizeof(w->delay_until));
	world_open_service(w);
}

/* The service is gone: nothing it did not commit survives, and the next
 * incarnation starts from the store. */
static void
go_down(struct world *w, bool revoked)
{
	uint64_t seq = hist_next_seq(w->hist);
	size_t nv;
	int i;

	w->written = false;
	w->served_in_flight = false;
	for (i = 0; i < w->nclients; i++)
		if (w->clients[i].connected)
			client_lost(w, &w->clients[i], seq);
	nv = store_views(w);
	hist_crash(w->hist, hist_next_seq(w->hist), w->now, w->views, nv,
	    w->mem.hwm);
	service_close(w->svc);
	w->up = false;
	restart(w, revoked);
}

/* The process dies: nothing it did not commit survives. */
void
world_crash(struct world *w, enum sim_coverage where)
{
	world_trace(w, "crash (%s)", sim_coverage_name(where));
	hist_cover(w->hist, where);
	if (service_commit_inflight(w->svc)) {
		/* The write may have finished just before the end. */
		hist_cover(w->hist, SIM_COV_CRASH_WHILE_WRITING);
		if (world_random_percent(w, 50))
			world_write_inflight(w);
	}
	w->res->crashes++;
	go_down(w, false);
}

/* Cluster mode: the leader steps down (leader.c's step_down): its lock
 * connections close, a batch in flight still goes to etcd (the store
 * decides its fate), the service is emptied, and the next leader takes
 * over from what etcd holds. */
void
world_failover(struct world *w, const char *why)
{
	world_trace(w, "step down: %s", why);
	world_write_inflight(w);
	go_down(w, true);
}

/* An extra commit, whole, now (service_commit).  In cluster mode the
 * loss of the store is heard before the service hears the outcome, as
 * leader.c's store_lost is. */
void
world_commit_now(struct world *w)
{
	int rc;

	if (w->etcd == NULL) {
		world_after_commit(w, service_commit(w->svc));
		return;
	}
	rc = service_commit_begin(w->svc);
	if (rc == 1) {
		world_write_inflight(w);
		if (etcd_sim_lost(w)) {
			world_failover(w, "the store is lost");
			return;
		}
		w->written = false;
		rc = service_commit_end(w->svc);
	}
	world_after_commit(w, rc);
}

/* SIGTERM: waiters are told SHUTDOWN, the rest is committed and written,
 * every connection closes, and the process starts again. */
void
world_clean_restart(struct world *w)
{
	size_t nv;
	int i;

	if (w->etcd != NULL) {
		/* Leadership hears first of a store lost by the batch in
		 * flight, or of its key gone: it steps down. */
		world_write_inflight(w);
		if (etcd_sim_lost(w)) {
			world_failover(w, "the store is lost");
			return;
		}
		if (w->etcd->key_node != w->etcd->serving) {
			world_failover(w, "etcd says the leader lease is gone");
			return;
		}
		/* Its last commits get answers: a synchronous commit that
		 * went in in part would end in the fall-back's fail-stop
		 * (the daemon's stop commits asynchronously, store_lost
		 * first, which the simulator's clean stop does not). */
		w->etcd->calm = true;
		w->mem.fail_commits = 0;
	}
	world_trace(w, "clean stop");
	w->res->clean_restarts++;
	hist_cover(w->hist, SIM_COV_CLEAN_RESTART);
	end_inflight(w);
	service_shutdown(w->svc);
	observe(w, false);
	world_after_commit(w, service_commit(w->svc));
	world_deliver(w);
	for (i = 0; i < w->nclients; i++)
		if (w->clients[i].connected)
			world_client_disconnect(w, &w->clients[i], "closed by stop");
	world_after_commit(w, service_commit(w->svc));
	nv = store_views(w);
	hist_crash(w->hist, hist_next_seq(w->hist), w->now, w->views, nv,
	    w->mem.hwm);
	service_close(w->svc);
	w->up = false;
	restart(w, true);
}

/* ---- the world's beginning and end ------------------------------------ */

void
world_init(struct world *w, uint64_t seed, const struct sim_options *opt,
    struct sim_result *res)
{
	int i;

	w->seed = seed;
	w->opt = opt;
	w->res = res;
	w->out = opt->out != NULL ? opt->out : stdout;
	rng_seed(&w->rng, seed);
	rng_seed(&w->secrets, seed ^ 0x5ec7e75ec7e7ULL);
	rng_seed(&w->rids, seed ^ 0x0052494452494400ULL);
	rng_seed(&w->kinds, seed ^ 0x4b494e44534b494eULL);
	w->nclients = 2 + (int)world_random_below(w, MAX_CLIENTS - 1);
	w->nnames = 1 + (int)world_random_below(w, MAX_NAMES);
	for (i = 0; i < w->nnames; i++) {
		snprintf(w->name_buf[i], sizeof(w->name_buf[i]), "lock/%d", i);
		w->name_text[i] = w->name_buf[i];
		w->name_len[i] = strlen(w->name_buf[i]);
		/* Its kind: a mutex, a semaphore of 2 to 4 permits, or a
		 * read/write lock. */
		switch (rng_below(&w->kinds, 10)) {
		case 0: case 1: case 2: case 3:
			w->name_limit[i] = 1;
			break;
		case 4: case 5: case 6:
			w->name_limit[i] = (uint16_t)(2 + rng_below(&w->kinds,
			    3));
			break;
		default:
			w->name_limit[i] = 1;
			w->name_rw[i] = true;
			break;
		}
	}
	for (i = 0; i < w->nclients; i++)
		w->clients[i].id = i;
	w->crash_permille = 2 + (unsigned)world_random_below(w, 6);
	w->restart_permille = 1 + (unsigned)world_random_below(w, 2);
	w->fail_permille = 5 + (unsigned)world_random_below(w, 25);
	w->async = world_random_percent(w, 75);

	service_config_defaults(&w->config);
	w->config.core.default_lease_ms = 50 + (int64_t)world_random_below(w, 500);
	w->config.core.max_lease_ms = w->config.core.default_lease_ms +
	    (int64_t)world_random_below(w, 2500);
	w->config.core.hash_key[0] = rng_next(&w->rng);
	w->config.core.hash_key[1] = rng_next(&w->rng);
	w->config.core.secret = sim_secret;
	w->config.core.secret_ctx = w;

	w->now = MONO_START;
	w->boot_off = 0;
	for (i = 0; i < 16; i++)
		w->boot_id[i] = (uint8_t)rng_next(&w->rng);
	w->sclock.mono = sim_mono;
	w->sclock.wall = sim_wall;
	w->sclock.mono_ns = NULL;
	w->sclock.ctx = w;
	memcpy(w->sclock.boot_id, w->boot_id, 16);

	store_mem_init(&w->mem);
	w->store.base.ops = &sim_store_ops;
	w->store.w = w;
	if ((w->svc = calloc(1, sizeof(*w->svc))) == NULL)
		world_fatal("out of memory");
	w->hist = hist_new(res, opt, w->nnames, w->name_text, w->out);
	world_trace(w, "seed %llu: %d clients, %d names, lease %lld ms (max %lld)",
	    (unsigned long long)seed, w->nclients, w->nnames,
	    (long long)w->config.core.default_lease_ms,
	    (long long)w->config.core.max_lease_ms);
	if (etcd_sim_wanted(seed, opt))
		etcd_sim_init(w);
}

void
world_free(struct world *w)
{
	int i;

	if (w->up)
		service_close(w->svc);
	w->res->commits = w->mem.commits;
	for (i = 0; i < w->nclients; i++) {
		free(w->clients[i].buf);
		free(w->clients[i].onclose);
	}
	store_mem_free(&w->mem);
	hist_free(w->hist);
	etcd_sim_free(w);
	free(w->svc);
}
