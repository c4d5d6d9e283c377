/*
 * lockd_faulty.c - build/tests/lockd-faulty: the real lockd (daemon_run)
 * with the fault chosen by the environment variable LOCKD_FAULT, a
 * comma-separated list of:
 *
 *   before_commit:N   the process dies (_exit 137) at the Nth commit, before
 *                     it is written: nothing of that batch is durable
 *   after_commit:N    it dies right after the Nth commit, before the replies
 *                     that waited for it are written
 *   mid_reply:N       it dies the Nth time a loop pass has written the
 *                     replies of one connection and is about to write the
 *                     next one's: part of a pass's replies are out
 *   fail:N[:M]        commits N .. N+M-1 (M = 1 when absent) fail: lockd
 *                     answers ERR UNAVAILABLE and goes on
 *   nosync            LMDB opened with MDB_NOSYNC (power-loss guard)
 *   journal_nosync    the store's journal (lockd.wal) never fdatasync'd
 *                     (power-loss guard)
 *   map_unchecked     lockd starts whatever --max-held and --map-size,
 *                     so that a test can fill the map
 *   early_reply       replies leave before their commit (power-loss guard):
 *                     the store commit returns at once and the batch is
 *                     written some milliseconds later, after its replies
 *   rid_unstored      every lease record is stored without its rid (the
 *                     length byte zeroed): lockd runs on, but after a
 *                     restart a grant no longer knows its rid (guard of
 *                     the crash loop's Rid check)
 *   holder_delay_unstored  every record under a holder key (a
 *                     semaphore's or shared lock's holder) is stored
 *                     without its lock-delay and the name's: after a
 *                     restart such a holder ends with no delay (guard of
 *                     the crash loop's Delay check for several holders)
 *   holder_lease_short  every record under a holder key is stored with
 *                     half its lease taken off its expiry: after a
 *                     restart each such holder has less time left than it
 *                     was told (guard of the per-holder CHECK after a
 *                     restart)
 *   lmdb_nometasync   the experiment of docs/performance.md ("The journal
 *                     against MDB_NOMETASYNC"): no journal, LMDB alone
 *                     opened with MDB_NOMETASYNC, and batch N's replies
 *                     released when batch N+1's data flush has synced N's
 *                     meta page, or after mdb_env_sync when no batch is due
 *   lmdb_nometasync_nolag  the same store, replies released as soon as
 *                     the commit returns, the meta page unsynced
 *                     (power-loss guard of the experiment)
 *
 * Without LOCKD_FAULT it is lockd.  Every fault is reached through the
 * seams of daemon/daemon.h; nothing here changes what lockd does otherwise.
 * The guards exist only in this program, never in lockd.
 */
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/bytes.h"
#include "daemon/daemon.h"
#include "daemon/format.h"
#include "daemon/store.h"
#include "daemon/store_lmdb.h"

#define FAULT_EXIT 137           /* what a shell reports for kill -9 */
#define EARLY_REPLY_DELAY_MS 10  /* how long a batch waits after its reply */

struct faults {
	long before_commit;      /* 0: off */
	long after_commit;
	long mid_reply;
	long fail_from, fail_count;
	int nosync;
	int journal_nosync;
	int map_unchecked;
	int early_reply;
	int nometasync;          /* 1: with the lag; 2: without (guard) */
	int rid_unstored;
	int holder_delay_unstored;
	int holder_lease_short;
	long commits, committed, partial_passes;
};

static struct faults faults;

static void
die(const char *what, long n)
{
	char line[128];
	int len = snprintf(line, sizeof(line),
	    "lockd-faulty: injected crash: %s %ld\n", what, n);

	if (len > 0 && write(2, line, (size_t)len) < 0)
		_exit(FAULT_EXIT);
	_exit(FAULT_EXIT);
}

static int
before_commit(void *ctx)
{
	long n = ++faults.commits;

	(void)ctx;
	if (faults.before_commit == n)
		die("before_commit", n);
	if (faults.fail_from > 0 && n >= faults.fail_from &&
	    n < faults.fail_from + faults.fail_count)
		return -1;
	return 0;
}

static void
before_write(void *ctx, unsigned index)
{
	(void)ctx;
	if (index == 1 && ++faults.partial_passes == faults.mid_reply)
		die("mid_reply", faults.mid_reply);
}

/* ---- early_reply: a store whose commit returns before it writes -------
 *
 * The store's commit runs on libuv's thread pool: this one only keeps a
 * copy of the batch and says it is done, so the service releases the
 * batch's replies.  The copy is written EARLY_REPLY_DELAY_MS later by a
 * timer on the loop (started by the after_commit hook, on the loop), or
 * first thing by the next commit, whichever comes first; the mutex keeps
 * the two from writing at once and the batches in order.
 */

struct early_store {
	struct store base;       /* first: the service holds a struct store * */
	struct store *real;
	pthread_mutex_t mutex;
	struct store_batch pending;
	int has_pending;
	uv_timer_t timer;
};

static struct early_store early = { .mutex = PTHREAD_MUTEX_INITIALIZER };

static void
early_flush(void)
{
	pthread_mutex_lock(&early.mutex);
	if (early.has_pending) {
		early.has_pending = 0;
		if (early.real->ops->commit(early.real, &early.pending) != 0) {
			fprintf(stderr, "lockd-faulty: deferred commit "
			    "failed: %s\n", early.real->error);
			abort();
		}
	}
	pthread_mutex_unlock(&early.mutex);
}

static void
on_early_timer(uv_timer_t *t)
{
	(void)t;
	early_flush();
}

static int
early_commit(struct store *base, const struct store_batch *batch)
{
	struct store_batch_op op;
	size_t pos = 0;

	(void)base;
	early_flush();
	pthread_mutex_lock(&early.mutex);
	store_batch_reset(&early.pending);
	while (store_batch_next(batch, &pos, &op))
		if (store_batch_add(&early.pending, op.op, op.name,
		    op.name_len, op.val, op.val_len) != 0)
			abort();
	early.pending.has_hwm = batch->has_hwm;
	early.pending.hwm = batch->hwm;
	early.has_pending = 1;
	pthread_mutex_unlock(&early.mutex);
	return 0;   /* the service now releases the replies */
}

static int
early_get(struct store *base, const char *name, size_t name_len, void *val,
    size_t *val_len)
{
	(void)base;
	return early.real->ops->get(early.real, name, name_len, val, val_len);
}

static int
early_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	(void)base;
	return early.real->ops->load(early.real, fn, ctx, hwm);
}

static void
early_close(struct store *base)
{
	(void)base;
	early_flush();
}

static const struct store_ops early_ops = {
	.commit = early_commit,
	.get = early_get,
	.load = early_load,
	.close = early_close,
};

/* On the loop, once a commit is durable (for early_reply: handed over)
 * and before its replies go. */
static void
after_commit(void *ctx)
{
	long n = ++faults.committed;

	(void)ctx;
	if (faults.after_commit == n)
		die("after_commit", n);
	if (faults.early_reply && early.real != NULL)
		uv_timer_start(&early.timer, on_early_timer,
		    EARLY_REPLY_DELAY_MS, 0);
}

/* ---- rid_unstored, holder_*: records written wrong --------------------- */

/* The holder_* faults on one record of version 3 (format.h) under the
 * holder key `key`; a record under a name is left alone. */
static void
mangle_holder(const char *key, size_t key_len, unsigned char *val,
    size_t len)
{
	size_t name_len;
	uint64_t key_fence, lease;

	if (len < FORMAT_RECORD_FIXED || val[0] != 3 ||
	    format_key_split(key, key_len, &name_len, &key_fence) !=
	    FORMAT_KEY_HOLDER)
		return;
	if (faults.holder_delay_unstored)
		memset(val + 64, 0, 24);   /* its delay, the name's end */
	if (faults.holder_lease_short) {
		lease = bytes_get_le64(val + 24);
		bytes_put_le64(val + 32, bytes_get_le64(val + 32) - lease / 2);
		bytes_put_le64(val + 40, bytes_get_le64(val + 40) - lease / 2);
	}
}

static struct {
	struct store base;
	struct store *real;
	pthread_mutex_t mutex;
	struct store_batch copy;
} norid = { .mutex = PTHREAD_MUTEX_INITIALIZER };

static int
norid_commit(struct store *base, const struct store_batch *batch)
{
	struct store_batch_op op;
	unsigned char val[STORE_VALUE_MAX];
	size_t pos = 0;
	int rc;

	(void)base;
	pthread_mutex_lock(&norid.mutex);
	store_batch_reset(&norid.copy);
	while (store_batch_next(batch, &pos, &op)) {
		size_t len = op.val_len;

		memcpy(val, op.val, len);
		if (op.op == STORE_PUT)
			mangle_holder(op.name, op.name_len, val, len);
		/* Version 3 (format.h): the rid ends the record. */
		if (faults.rid_unstored && len >= FORMAT_RECORD_FIXED &&
		    val[0] == 3) {
			len -= val[89];
			val[89] = 0;
		}
		if (store_batch_add(&norid.copy, op.op, op.name, op.name_len,
		    val, len) != 0)
			abort();
	}
	norid.copy.has_hwm = batch->has_hwm;
	norid.copy.hwm = batch->hwm;
	rc = norid.real->ops->commit(norid.real, &norid.copy);
	if (rc != 0)
		snprintf(base->error, sizeof(base->error), "%s",
		    norid.real->error);
	pthread_mutex_unlock(&norid.mutex);
	return rc;
}

static int
norid_get(struct store *base, const char *name, size_t name_len, void *val,
    size_t *val_len)
{
	(void)base;
	return norid.real->ops->get(norid.real, name, name_len, val, val_len);
}

static int
norid_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	(void)base;
	return norid.real->ops->load(norid.real, fn, ctx, hwm);
}

static void
norid_close(struct store *base)
{
	(void)base;
}

static const struct store_ops norid_ops = {
	.commit = norid_commit,
	.get = norid_get,
	.load = norid_load,
	.close = norid_close,
};

static void
started(struct server *srv, void *ctx)
{
	(void)ctx;
	if (faults.rid_unstored || faults.holder_delay_unstored ||
	    faults.holder_lease_short) {
		norid.base.ops = &norid_ops;
		norid.real = srv->svc.store;
		store_batch_init(&norid.copy);
		srv->svc.store = &norid.base;
	}
	if (!faults.early_reply)
		return;
	early.base.ops = &early_ops;
	early.real = srv->svc.store;
	store_batch_init(&early.pending);
	uv_timer_init(srv->loop, &early.timer);
	uv_unref((uv_handle_t *)&early.timer);
	srv->svc.store = &early.base;
}

/* ---- lmdb_nometasync: LMDB alone, the meta page synced a batch late --- */

static struct store_lmdb *nometasync_db;

static struct store *
nometasync_open(const char *dir, size_t map_size, char *err, size_t err_len)
{
	unsigned flags = MDB_NOMETASYNC | (faults.nosync ? MDB_NOSYNC : 0);

	nometasync_db = store_lmdb_open_flags(dir, map_size, flags, err,
	    err_len);
	return nometasync_db != NULL ? store_lmdb_store(nometasync_db) : NULL;
}

static int
nometasync_sync(void *ctx)
{
	(void)ctx;
	return store_lmdb_sync(nometasync_db);
}

/* ---- LOCKD_FAULT ------------------------------------------------------ */

static int
parse_faults(const char *spec)
{
	char buf[256], *item, *save = NULL;

	if (snprintf(buf, sizeof(buf), "%s", spec) >= (int)sizeof(buf))
		return -1;
	for (item = strtok_r(buf, ",", &save); item != NULL;
	    item = strtok_r(NULL, ",", &save)) {
		long a = 0, b = 1;

		if (sscanf(item, "before_commit:%ld", &a) == 1 && a > 0)
			faults.before_commit = a;
		else if (sscanf(item, "after_commit:%ld", &a) == 1 && a > 0)
			faults.after_commit = a;
		else if (sscanf(item, "mid_reply:%ld", &a) == 1 && a > 0)
			faults.mid_reply = a;
		else if (sscanf(item, "fail:%ld:%ld", &a, &b) >= 1 && a > 0 &&
		    b > 0) {
			faults.fail_from = a;
			faults.fail_count = b;
		} else if (strcmp(item, "nosync") == 0)
			faults.nosync = 1;
		else if (strcmp(item, "journal_nosync") == 0)
			faults.journal_nosync = 1;
		else if (strcmp(item, "map_unchecked") == 0)
			faults.map_unchecked = 1;
		else if (strcmp(item, "early_reply") == 0)
			faults.early_reply = 1;
		else if (strcmp(item, "rid_unstored") == 0)
			faults.rid_unstored = 1;
		else if (strcmp(item, "holder_delay_unstored") == 0)
			faults.holder_delay_unstored = 1;
		else if (strcmp(item, "holder_lease_short") == 0)
			faults.holder_lease_short = 1;
		else if (strcmp(item, "lmdb_nometasync") == 0)
			faults.nometasync = 1;
		else if (strcmp(item, "lmdb_nometasync_nolag") == 0)
			faults.nometasync = 2;
		else
			return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct daemon_seams seams;
	const char *spec = getenv("LOCKD_FAULT");

	memset(&seams, 0, sizeof(seams));
	if (spec != NULL && *spec != '\0') {
		if (parse_faults(spec) != 0) {
			fprintf(stderr, "lockd-faulty: bad LOCKD_FAULT '%s'\n",
			    spec);
			return 2;
		}
		fprintf(stderr, "lockd-faulty: LOCKD_FAULT=%s\n", spec);
	}
	seams.hooks.before_commit = before_commit;
	seams.hooks.after_commit = after_commit;
	if (faults.mid_reply > 0)
		seams.server_hooks.before_write = before_write;
	seams.lmdb_flags = faults.nosync ? MDB_NOSYNC : 0;
	seams.journal_nosync = faults.journal_nosync != 0;
	seams.map_unchecked = faults.map_unchecked != 0;
	seams.started = started;
	if (faults.nometasync != 0)
		seams.open_store = nometasync_open;
	if (faults.nometasync == 1)
		seams.hooks.sync = nometasync_sync;
	return daemon_run(argc, argv, &seams);
}
