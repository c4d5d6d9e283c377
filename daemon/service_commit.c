/*
 * service_commit.c - group commit: the changes of a loop pass go to the
 * store in one batch, and the replies that wait for it leave when it is
 * durable, or become ERR UNAVAILABLE when it fails and the locks it wrote
 * fall back to what the store holds.  Also the index of the names the batch
 * in flight writes, and the promises a GRANTED or RENEWED makes on the
 * batch now forming.  Like service.c: no sockets, no libuv, no threads of
 * its own (service_commit_write is what a caller may run on another one).
 *
 * A commit has three steps: service_commit_begin() collects the changes
 * into the batch, service_commit_write() writes it (and touches nothing but
 * the store and the batch), service_commit_end() releases the replies that
 * waited for it, or fails them and falls back to the store.  A store that
 * waits on the network (etcd) writes asynchronously instead, on the loop:
 * service_commit_write_start().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/takeover.h"
#include "daemon/format.h"
#include "daemon/log.h"
#include "daemon/service.h"
#include "daemon/service_int.h"

/* ---- its state -------------------------------------------------------- */

/* service_int.h */
void
service__commit_open(struct service *svc)
{
	memset(&svc->commit, 0, sizeof(svc->commit));
	svc->commit.batch_seq = 1;
	store_batch_init(&svc->commit.batch);
}

void
service__commit_close(struct service *svc)
{
	store_batch_free(&svc->commit.batch);
	free(svc->commit.inflight_names);
	svc->commit.inflight_names = NULL;
	svc->commit.inflight_cap = 0;
}

void
service__commit_stored_hwm(struct service *svc, uint64_t hwm)
{
	svc->commit.committed_hwm = hwm;
}

/* ---- the batch in flight ---------------------------------------------- */

/* Indexes the names the batch in flight writes (open addressing over
 * their offsets in the batch).  Without memory for it, every reply is
 * taken to rest on the batch: slower, never wrong. */
static void
inflight_index(struct service *svc)
{
	const struct store_batch *b = &svc->commit.batch;
	struct store_batch_op op;
	size_t cap = 16, pos = 0, at, i;

	svc->commit.inflight_indexed = true;
	svc->commit.inflight_all = false;
	while (cap < 2 * b->count)
		cap *= 2;
	if (cap > svc->commit.inflight_cap) {
		size_t *p = realloc(svc->commit.inflight_names,
		    cap * sizeof(*p));
		if (p == NULL) {
			svc->commit.inflight_all = true;
			return;
		}
		svc->commit.inflight_names = p;
		svc->commit.inflight_cap = cap;
	}
	svc->commit.inflight_mask = cap - 1;
	memset(svc->commit.inflight_names, 0, cap * sizeof(size_t));
	/* By name: a holder's key is its lock's. */
	for (at = pos; store_batch_next(b, &pos, &op); at = pos) {
		i = core_name_hash(svc->config.core.hash_key, op.name,
		    format_key_name_len(op.name, op.name_len)) &
		    svc->commit.inflight_mask;
		while (svc->commit.inflight_names[i] != 0)
			i = (i + 1) & svc->commit.inflight_mask;
		svc->commit.inflight_names[i] = at + 1;
	}
}

/* service_int.h */
uint64_t
service__inflight_depends(struct service *svc, const char *name, size_t len)
{
	struct store_batch_op op;
	size_t i, pos;

	if (svc->commit.inflight_seq == 0 || len == 0)
		return 0;
	if (!svc->commit.inflight_indexed)
		inflight_index(svc);
	if (svc->commit.inflight_all)
		return svc->commit.inflight_seq;
	i = core_name_hash(svc->config.core.hash_key, name, len) &
	    svc->commit.inflight_mask;
	for (; svc->commit.inflight_names[i] != 0;
	    i = (i + 1) & svc->commit.inflight_mask) {
		pos = svc->commit.inflight_names[i] - 1;
		if (store_batch_next(&svc->commit.batch, &pos, &op) &&
		    format_key_name_len(op.name, op.name_len) == len &&
		    memcmp(op.name, name, len) == 0)
			return svc->commit.inflight_seq;
	}
	return 0;
}

/* ---- promises --------------------------------------------------------- */

/*
 * A GRANTED or RENEWED promises its lock's new state once its batch is
 * durable.  Until then, whatever else is said of that lock rests on the
 * promise (a shorter lease, say, that ends before the batch does), so it
 * waits for the same batch and fails with it.  The batch is noted in the
 * lock's entry; a promise is open while its batch is the one forming or
 * the one in flight and not yet durable (an older one has ended: durable,
 * or failed and rolled back).
 */
bool
service__promise_open(const struct service *svc, uint64_t batch)
{
	return batch > svc->commit.durable_seq &&
	    (batch == svc->commit.batch_seq ||
	    batch == svc->commit.inflight_seq ||
	    batch == svc->commit.unsynced_seq);
}

uint64_t
service__promise(struct service *svc, uint64_t *user)
{
	if (user != NULL)
		*user = svc->commit.batch_seq;
	svc->commit.commit_needed = true;
	return svc->commit.batch_seq;
}

/* ---- group commit ----------------------------------------------------- */

struct collect {
	struct service *svc;
	core_time now;
	int64_t wall;
	bool failed;
};

/*
 * Whether the delete of this lock is settled (store.h): no reply about it
 * waits for the batch now forming, which is so unless the lock has a
 * promise on it - a GRANTED or RENEWED of this batch, then a release or
 * an expiry in the same pass.  Then the promise's reply, and what rests
 * on it, fail with the batch and tell the holder that its last durable
 * lease stands, so the delete must not go in without the batch.
 */
static bool
delete_settled(const struct service *svc, const char *name, size_t len)
{
	const struct core_entry *e = core_table_find(&svc->table, name, len);

	return e != NULL && !service__promise_open(svc, e->user);
}

/* service_int.h */
int
service__batch_key(struct service *svc, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec, core_time now,
    int64_t wall)
{
	unsigned char val[FORMAT_RECORD_SIZE];
	char key[FORMAT_KEY_MAX];
	size_t key_len, n;
	int rc;

	if (name_len == 0 || name_len > CORE_NAME_MAX)
		return -1;
	key_len = format_key(name, name_len, key_fence, key);
	if (rec != NULL) {
		n = format_record_encode(rec, svc->clock.boot_id, now, wall,
		    val);
		return store_batch_add(&svc->commit.batch, STORE_PUT, key,
		    key_len, val, n);
	}
	rc = store_batch_add(&svc->commit.batch, STORE_DEL, key, key_len,
	    NULL, 0);
	if (rc == 0 && delete_settled(svc, name, name_len))
		store_batch_settle(&svc->commit.batch);
	return rc;
}

/* The core's record callback: one key of a lock, its name's own
 * (key_fence 0) or one holder's (<name> NUL <fence>, daemon/format.h). */
static void
collect_record(void *ctx, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec)
{
	struct collect *c = ctx;

	if (service__batch_key(c->svc, name, name_len, key_fence, rec, c->now,
	    c->wall) != 0)
		c->failed = true;
}

/* The live connection with this id, if any (a fall-back's rare path). */
static struct core_session *
session_of(struct service *svc, uint64_t id)
{
	struct core_link *l;

	for (l = svc->conns.next; id != 0 && l != &svc->conns; l = l->next) {
		struct service_conn *conn = container_of(l,
		    struct service_conn, all_link);
		if (conn->session.id == id)
			return &conn->session;
	}
	return NULL;
}

/*
 * Puts one name back as the store has it.  The table must never keep what
 * the store does not: a grant the store lacks would be handed to a rid
 * repeat undurable, and its fence minted again after a restart.  Putting
 * a name back may need memory (its entry, dropped as idle in the same
 * pass; its holders and their owner and rid), so a restore that runs out
 * of memory is tried again, and when it still fails lockd stops, as when
 * the store cannot be read: recovery starts over from the disk.
 */
#define FALL_BACK_TRIES 8

static void
restore_or_stop(struct service *svc, const char *name, size_t len,
    const struct core_record *recs, size_t n, core_time now)
{
	char shown[LOG_VALUE_MAX + 1];
	enum core_status st = CORE_ERR_NOMEM;
	int i;

	for (i = 0; i < FALL_BACK_TRIES && st == CORE_ERR_NOMEM; i++)
		st = core_table_restore_holders(&svc->table, name, len, recs,
		    n, now);
	if (st == CORE_OK)
		return;
	log_event(LOG_ERROR, "nomem", "op=fall_back name=%s action=exit",
	    log_value(shown, name, len));
	abort();
}

/* The fences of one name's keys a fall-back reads, and what it found. */
struct fall_name {
	const char *name;            /* in the failed batch */
	size_t len;
	uint64_t *fences;            /* holder keys to read; 0: <name> */
	size_t n, cap;
	uint64_t *held;              /* the table's holders before */
	size_t nheld, held_cap;
	struct core_record *recs;    /* what the store has */
	size_t nrecs, recs_cap;
};

static void
fall_nomem(const char *name, size_t len)
{
	char shown[LOG_VALUE_MAX + 1];

	log_event(LOG_ERROR, "nomem", "op=fall_back name=%s action=exit",
	    log_value(shown, name, len));
	abort();
}

static void
fall_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x,
    const struct fall_name *f)
{
	if (*n == *cap) {
		size_t cap2 = *cap == 0 ? 8 : *cap * 2;
		uint64_t *p = realloc(*v, cap2 * sizeof(*p));

		if (p == NULL)
			fall_nomem(f->name, f->len);
		*v = p;
		*cap = cap2;
	}
	(*v)[(*n)++] = x;
}

static int
fence_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Is `fence` a live holder's of e (its own, or one beyond it)? */
static bool
entry_holds(const struct core_entry *e, uint64_t fence)
{
	const struct core_holder *h;

	if (e == NULL || fence == 0)
		return false;
	if (e->lock.fence == fence)
		return true;
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (h->lock.fence == fence)
			return true;
	return false;
}

/*
 * Reads the record of one key of f's name into f->recs, if the store has
 * one.  A store that cannot be read, or a record that does not belong
 * under its key, leaves no safe state to serve from: lockd stops.
 */
static void
fall_read(struct service *svc, struct fall_name *f, uint64_t key_fence,
    core_time now, int64_t wall)
{
	unsigned char val[STORE_VALUE_MAX];
	char key[FORMAT_KEY_MAX];
	char shown[LOG_VALUE_MAX + 1];
	struct core_record rec;
	size_t key_len, len = 0;
	int rc;

	key_len = format_key(f->name, f->len, key_fence, key);
	rc = svc->store->ops->get(svc->store, key, key_len, val, &len);
	if (rc < 0) {
		log_event(LOG_ERROR, "store_error",
		    "op=get error=\"%s\" action=exit", svc->store->error);
		abort();
	}
	if (rc != 1)
		return;
	if (!format_record_decode(val, len, svc->clock.boot_id,
	    svc->config.core.max_lease_ms, now, wall, &rec) ||
	    !format_key_fits(key_fence, &rec)) {
		log_event(LOG_ERROR, "store_corrupt", "name=%s action=exit",
		    log_value(shown, f->name, f->len));
		abort();
	}
	/* Cluster mode: a record of an earlier term (another node's, never
	 * rewritten since this leader took over) holds another clock's
	 * readings, which mean nothing here; decoded by this node's wall
	 * clock, its lease could end earlier than the old leader would have
	 * ended it.  It gets what the take-over gave it at the load, no
	 * more: a lease that has run out since stays out. */
	if (svc->config.takeover_lease_ms > 0 &&
	    !format_record_of_boot(val, len, svc->clock.boot_id))
		core_takeover_record(&rec, svc->loaded_at,
		    svc->config.takeover_lease_ms,
		    svc->config.core.max_lock_delay_ms);
	if (rec.onclose_release)
		rec.owner = session_of(svc, rec.owner_id);
	if (f->nrecs == f->recs_cap) {
		size_t cap2 = f->recs_cap == 0 ? 4 : f->recs_cap * 2;
		struct core_record *p = realloc(f->recs, cap2 * sizeof(*p));

		if (p == NULL)
			fall_nomem(f->name, f->len);
		f->recs = p;
		f->recs_cap = cap2;
	}
	f->recs[f->nrecs++] = rec;
}

/*
 * Puts one name of the failed batch back as the store has it, under all
 * its keys.  The store reads single keys, not a name's range, so the keys
 * read are every key the name may have there: <name>; the holder keys the
 * batch wrote (a grant it put, an end it deleted); and those of the
 * holders the table has now or ended since the batch was formed (whose
 * deletes the next batch would have made).  A holder key in the store
 * that is none of these was written by an earlier batch and never ended
 * since, so the table holds it: there is no other.
 */
static void
fall_back_name(struct service *svc, struct fall_name *f, core_time now,
    int64_t wall)
{
	const struct core_entry *e;
	const struct core_multi *m;
	const struct core_holder *h;
	size_t i;

	e = core_table_find(&svc->table, f->name, f->len);
	m = e != NULL ? e->multi : NULL;
	if (e != NULL && e->lock.fence != 0)
		fall_push(&f->held, &f->nheld, &f->held_cap, e->lock.fence,
		    f);
	for (h = m != NULL ? m->holders : NULL; h != NULL; h = h->next) {
		fall_push(&f->fences, &f->n, &f->cap, h->lock.fence, f);
		fall_push(&f->held, &f->nheld, &f->held_cap, h->lock.fence,
		    f);
	}
	for (h = m != NULL ? m->ended : NULL; h != NULL; h = h->next)
		fall_push(&f->fences, &f->n, &f->cap, h->ended_fence, f);
	fall_push(&f->fences, &f->n, &f->cap, 0, f);
	if (f->fences != NULL)   /* never NULL here: <name> was pushed */
		qsort(f->fences, f->n, sizeof(*f->fences), fence_cmp);
	f->nrecs = 0;
	for (i = 0; i < f->n; i++)
		if (i == 0 || f->fences[i] != f->fences[i - 1])
			fall_read(svc, f, f->fences[i], now, wall);
	restore_or_stop(svc, f->name, f->len, f->recs, f->nrecs, now);
	/* A grant the store does not have is gone, without an event: its
	 * principal no longer holds it. */
	e = core_table_find(&svc->table, f->name, f->len);
	for (i = 0; i < f->nheld; i++)
		if (!entry_holds(e, f->held[i]))
			quota_ungrant(&svc->quota, f->held[i]);
	f->n = 0;
	f->nheld = 0;
}

/*
 * After a failed commit: every lock the batch wrote falls back to what the
 * store holds, whatever happened to it since (what did rests on the batch
 * and has failed with it).  A store that cannot even be read leaves no
 * safe state to serve from, so lockd stops; recovery starts over from the
 * disk.  The core reports a name's keys together (core_table_changes, one
 * entry at a time), so the batch's keys of one name are consecutive; a
 * name restored twice between drains keeps its first restore anyway.
 */
static void
fall_back(struct service *svc, const struct store_batch *batch, core_time now,
    int64_t wall)
{
	struct fall_name f;
	struct store_batch_op op;
	size_t pos = 0;

	memset(&f, 0, sizeof(f));
	while (store_batch_next(batch, &pos, &op)) {
		char shown[LOG_VALUE_MAX + 1];
		uint64_t key_fence;
		size_t name_len;

		if (format_key_split(op.name, op.name_len, &name_len,
		    &key_fence) == FORMAT_KEY_BAD) {
			log_event(LOG_ERROR, "store_error", "op=fall_back "
			    "name=%s error=\"a key of no lock\" action=exit",
			    log_value(shown, op.name, op.name_len));
			abort();
		}
		if (f.name != NULL && (name_len != f.len ||
		    memcmp(op.name, f.name, name_len) != 0))
			fall_back_name(svc, &f, now, wall);
		f.name = op.name;
		f.len = name_len;
		if (key_fence != 0)
			fall_push(&f.fences, &f.n, &f.cap, key_fence, &f);
	}
	if (f.name != NULL)
		fall_back_name(svc, &f, now, wall);
	free(f.fences);
	free(f.held);
	free(f.recs);
}

static int64_t
precise_now(const struct service *svc)
{
	if (svc->clock.mono_ns != NULL)
		return svc->clock.mono_ns(svc->clock.ctx);
	return svc->clock.mono(svc->clock.ctx) * 1000000;
}

bool
service_commit_pending(const struct service *svc)
{
	return svc->commit.commit_needed || svc->table.changed != NULL ||
	    svc->table.hwm != svc->commit.committed_hwm;
}

bool
service_commit_owed(const struct service *svc)
{
	return service_commit_pending(svc) || svc->commit.unsynced_seq != 0;
}

bool
service_commit_inflight(const struct service *svc)
{
	return svc->commit.inflight_seq != 0 || svc->commit.syncing;
}

/*
 * hooks.sync (the MDB_NOMETASYNC experiment): a commit returns with its
 * batch's data on disk and its root (LMDB's meta page) written but not
 * synced; the next commit's data flush syncs that root too.  So batch N's
 * replies go out when batch N+1 is written, or, when no batch is due, after
 * a sync of its own: a sync is "begun" like a batch, runs on the same
 * thread, and ends by making every ended batch durable.
 */
static bool
sync_now(const struct service *svc)
{
	return svc->hooks.sync != NULL && svc->commit.unsynced_seq != 0 &&
	    !svc->commit.commit_needed;
}

int
service_commit_begin(struct service *svc)
{
	struct collect c = { svc, svc->clock.mono(svc->clock.ctx),
	    svc->clock.wall(svc->clock.ctx), false };

	if (svc->commit.inflight_seq != 0 || svc->commit.syncing)
		return 0;
	if (sync_now(svc)) {
		svc->commit.syncing = true;
		svc->commit.inflight_rc = 0;
		svc->commit.inflight_ns = -1;
		return 1;
	}
	if (!service_commit_pending(svc))
		return 0;
	store_batch_reset(&svc->commit.batch);
	svc->commit.lazy_since = 0;
	core_table_changes(&svc->table, collect_record, &c, NULL);
	if (svc->table.hwm != svc->commit.committed_hwm) {
		svc->commit.batch.has_hwm = true;
		svc->commit.batch.hwm = svc->table.hwm;
	}
	svc->commit.inflight_seq = svc->commit.batch_seq++;
	svc->commit.inflight_indexed = false;
	svc->commit.commit_needed = false;
	svc->commit.inflight_rc = 0;
	svc->commit.inflight_ns = -1;
	if (svc->commit.batch.count == 0 && !svc->commit.batch.has_hwm)
		return service_commit_end(svc);   /* only idle entries went */
	if (c.failed) {
		snprintf(svc->store->error, sizeof(svc->store->error),
		    "out of memory building the batch");
		svc->commit.inflight_rc = -1;
		return service_commit_end(svc);
	}
	return 1;
}

void
service_commit_write(struct service *svc)
{
	int64_t t0;

	if (svc->commit.syncing) {
		svc->commit.inflight_rc = svc->hooks.sync(svc->hooks.ctx);
		return;
	}
	if (svc->hooks.before_commit != NULL &&
	    svc->hooks.before_commit(svc->hooks.ctx) != 0) {
		snprintf(svc->store->error, sizeof(svc->store->error),
		    "injected failure");
		svc->commit.inflight_rc = -1;
		return;
	}
	t0 = precise_now(svc);
	svc->commit.inflight_rc = svc->store->ops->commit(svc->store,
	    &svc->commit.batch);
	svc->commit.inflight_ns = precise_now(svc) - t0;
}

static void
write_ended(void *ctx, int rc)
{
	struct service *svc = ctx;

	svc->commit.inflight_rc = rc;
	svc->commit.inflight_ns = precise_now(svc) - svc->commit.inflight_t0;
	svc->commit.written(svc->commit.written_ctx);
}

bool
service_commit_is_async(const struct service *svc)
{
	return svc->store->ops->commit_start != NULL;
}

int
service_commit_write_start(struct service *svc, void (*done)(void *ctx),
    void *ctx)
{
	if (svc->commit.syncing || !service_commit_is_async(svc)) {
		service_commit_write(svc);
		return 1;
	}
	if (svc->hooks.before_commit != NULL &&
	    svc->hooks.before_commit(svc->hooks.ctx) != 0) {
		snprintf(svc->store->error, sizeof(svc->store->error),
		    "injected failure");
		svc->commit.inflight_rc = -1;
		return 1;
	}
	svc->commit.written = done;
	svc->commit.written_ctx = ctx;
	svc->commit.inflight_t0 = precise_now(svc);
	if (svc->store->ops->commit_start(svc->store, &svc->commit.batch,
	    write_ended, svc) != 0) {
		svc->commit.inflight_rc = -1;
		return 1;
	}
	return 0;
}

int
service_commit_end(struct service *svc)
{
	uint64_t batch = svc->commit.inflight_seq;
	bool written;

	if (svc->commit.syncing) {
		svc->commit.syncing = false;
		if (svc->commit.inflight_rc != 0) {
			/* The last batch is in LMDB and its replies wait; it
			 * can be neither undone nor known durable: stop,
			 * recovery starts over from the disk. */
			log_event(LOG_ERROR, "store_error",
			    "op=sync error=\"%s\" action=exit",
			    svc->store->error);
			abort();
		}
		svc->commit.unsynced_seq = 0;
		svc->commit.durable_seq = svc->commit.batch_seq - 1;
		goto release;
	}
	if (batch == 0)
		return 0;
	svc->commit.inflight_seq = 0;
	if (svc->store->ops->stats != NULL)
		svc->store->ops->stats(svc->store, &svc->store_stats);
	if (svc->commit.inflight_ns >= 0)
		metrics_observe(&svc->metrics.commit_duration,
		    (double)svc->commit.inflight_ns / 1e9);
	if (svc->commit.inflight_rc != 0) {
		svc->stats.commit_failures++;
		log_event(LOG_ERROR, "store_error",
		    "op=commit records=%zu error=\"%s\"",
		    svc->commit.batch.count, svc->store->error);
		service__fail_replies(svc, batch);
		fall_back(svc, &svc->commit.batch,
		    svc->clock.mono(svc->clock.ctx),
		    svc->clock.wall(svc->clock.ctx));
		return -1;
	}
	if (svc->commit.batch.count > 0 || svc->commit.batch.has_hwm) {
		svc->stats.commits++;
		svc->stats.commit_records += svc->commit.batch.count;
		metrics_observe(&svc->metrics.commit_records,
		    (double)svc->commit.batch.count);
	}
	if (svc->commit.batch.has_hwm)
		svc->commit.committed_hwm = svc->commit.batch.hwm;
	written = svc->commit.batch.count > 0 || svc->commit.batch.has_hwm;
	if (svc->hooks.sync != NULL && written) {
		/* Its flush synced them. */
		svc->commit.durable_seq = batch - 1;
		svc->commit.unsynced_seq = batch;
	} else if (svc->hooks.sync == NULL || svc->commit.unsynced_seq == 0) {
		svc->commit.durable_seq = batch;
	}   /* else an empty batch: its replies wait for the sync */
	if (svc->hooks.after_commit != NULL)
		svc->hooks.after_commit(svc->hooks.ctx);
release:
	service__release(svc, svc->commit.durable_seq);
	return 0;
}

int
service_commit(struct service *svc)
{
	int rc, round;

	/* With hooks.sync: a sync, the batch, its sync - all of it durable. */
	for (round = 0; round < 3; round++) {
		if ((rc = service_commit_begin(svc)) != 1)
			return rc;
		service_commit_write(svc);
		if ((rc = service_commit_end(svc)) != 0 ||
		    svc->hooks.sync == NULL)
			return rc;
	}
	return 0;
}

bool
service_commit_due(struct service *svc)
{
	core_time now;

	if (svc->commit.inflight_seq != 0 || svc->commit.syncing)
		return false;   /* the next batch forms meanwhile */
	if (svc->commit.commit_needed || sync_now(svc))
		return true;
	if (!service_commit_pending(svc))
		return false;
	now = svc->clock.mono(svc->clock.ctx);
	if (svc->commit.lazy_since == 0) {
		svc->commit.lazy_since = now;
		return false;
	}
	return now - svc->commit.lazy_since >= SERVICE_LAZY_COMMIT_MS;
}

int
service_end_pass(struct service *svc)
{
	return service_commit_due(svc) ? service_commit(svc) : 0;
}

core_time
service_next_deadline(const struct service *svc)
{
	core_time next = core_next_deadline(&svc->table);

	if (svc->commit.lazy_since != 0 &&
	    svc->commit.lazy_since + SERVICE_LAZY_COMMIT_MS < next)
		next = svc->commit.lazy_since + SERVICE_LAZY_COMMIT_MS;
	return next;
}
