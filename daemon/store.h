/*
 * store.h - the durable store as the service sees it: a map from key (a
 * lock's name, or one holder's key: daemon/format.h) to an opaque value
 * (the record of a hold), plus the fence high-water mark, changed only by
 * whole batches.  Keys are opaque bytes of 1..STORE_KEY_MAX; the
 * parameters below called name are keys.
 *
 * struct store_ops below is the seam, and all of it: what every store
 * provides - LMDB alone (store_lmdb.c), lockd's redo journal in front of
 * LMDB (store_journal.c), the tests' in-memory store
 * (tests/lib/store_mem.c), etcd in cluster mode (store_etcd.c) - and
 * what the service calls, nothing more.  What only the journal needs of LMDB (its mark,
 * the map's room) stays behind that pair, in store_lmdb.h.  Every call
 * returns 0 or a negative error, and writes why to store->error.
 */
#ifndef LOCKD_STORE_H
#define LOCKD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_VALUE_MAX 224   /* FORMAT_RECORD_SIZE, daemon/format.h */
#define STORE_KEY_MAX 264     /* FORMAT_KEY_MAX: a name, or a holder key */

/* One batch: puts and deletes in order, then the high-water mark. */
struct store_batch {
	char *ops;          /* encoded: op, key_len, value_len, key, value
	                     * (daemon/format.h, the journal's operations) */
	size_t len, cap;
	size_t count;       /* operations */
	unsigned char *settled;  /* a bit per operation: a settled delete */
	size_t settled_cap;      /* bytes of settled */
	bool has_hwm;
	uint64_t hwm;
	bool holder_keys;   /* a key is a holder's (it has a NUL): the
	                     * journal's record then takes its new magic */
};

/* The values are on disk, in the journal's records (daemon/format.h). */
enum store_op { STORE_PUT = 1, STORE_DEL = 2 };

/* What a store reports of itself, for the metrics: the journal's figures,
 * zero for a store without one. */
struct store_stats {
	uint64_t checkpoints;         /* the journal's changes into LMDB */
	uint64_t checkpoint_failures;
	uint64_t direct_commits;      /* batches straight into LMDB (full) */
	uint64_t journal_bytes;       /* written since the last checkpoint */
	uint64_t journal_size;
};

/*
 * The contract, in one place: what the service (daemon/service.c) relies
 * on of any store.
 *
 * commit  Applies the batch - its puts and deletes in order, then its
 *         high-water mark - durably (on stable storage when it returns)
 *         and atomically (a crash at any point leaves all of it or none),
 *         and returns 0.  On failure it returns a negative error and has
 *         applied nothing of the batch, with one exception: it may have
 *         applied some of the deletes the batch marks settled
 *         (store_batch_settle), each one whole and durably; never a put,
 *         never a delete not so marked, never the high-water mark.  The
 *         journal does so when LMDB's map is full (store_journal.c,
 *         salvage_deletes), so that a full store makes room as leases
 *         end; LMDB alone and the in-memory store apply none.
 * get     The value stored under a name: 1 and the value, 0 when there is
 *         none.  The service needs it because of the exception above:
 *         after a failed commit it cannot know which settled deletes went
 *         in, so every lock the batch wrote falls back to what get() says
 *         (fall_back), and the replies that waited for the batch become
 *         ERR UNAVAILABLE.  A get that fails stops lockd (fail-stop).
 * load    Every record, then the high-water mark: where recovery starts.
 *         In key order (bytes compared as unsigned, a key before every
 *         longer key it begins): so a name's keys come together, the
 *         one recovery needs to restore a name at once (daemon/recovery.h).
 * close   Stops cleanly (the journal checkpoints) and frees the store.
 * stats   May be NULL: figures for the metrics, between commits only.
 * count   May be NULL: how many records load() will give, at most, so that
 *         the caller sizes its lock table once rather than growing it
 *         through a recovery of a million records.  A hint only.
 * commit_start  May be NULL: commit's asynchronous form, for a store that
 *         waits on the network (etcd) rather than on a disk.  It starts
 *         the commit and returns 0; done(ctx, rc) is called later, from
 *         the event loop, with what commit would have returned, under the
 *         same contract.  One at a time.  A start that fails returns a
 *         negative error, has applied nothing, and never calls done.
 *
 * A delete is settled when no reply about its lock waits for the batch
 * (service_commit.c, collect_record): every client concerned has already
 * been told that the lock ended - its RELEASED is out, its lease ran out
 * at the expiry it was told, its onclose connection is gone - so the
 * delete stands whether the batch commits or not.  A delete is not
 * settled when its lock has a promise on the batch (a GRANTED or RENEWED
 * of it, in this batch, then a release or an expiry): that reply, and
 * what rests on it, would become ERR UNAVAILABLE, which tells the holder
 * that its last durable lease stands.
 *
 * So after a failed commit every reply that waited for the batch is
 * ERR UNAVAILABLE ("nothing was granted or changed"), and each is true of
 * its own request.  A GRANTED or RENEWED of the batch, and what rested on
 * its promise, concern a lock whose delete was not settled: the lock falls
 * back to what the store held before the batch.  A reply made while the
 * batch was in flight, about a lock it wrote, asked for a change after
 * the batch's, undone with it whatever the store kept of the batch's
 * settled deletes.  A settled delete that went in leaves its lock
 * free, as its clients were told; one that did not brings back the
 * holder's last durable lease, which runs out as after a crash before the
 * commit (its RELEASED, already sent, only frees the lock later).
 * docs/design.md, "A failed commit", says more.
 */
struct store;
struct store_ops {
	int (*commit)(struct store *store, const struct store_batch *batch);
	/* val has room for STORE_VALUE_MAX bytes. */
	int (*get)(struct store *store, const char *name, size_t name_len,
	    void *val, size_t *val_len);
	/* fn returning non-zero stops the walk with that value. */
	int (*load)(struct store *store,
	    int (*fn)(void *ctx, const char *name, size_t name_len,
	        const void *val, size_t val_len),
	    void *ctx, uint64_t *hwm);
	void (*close)(struct store *store);
	int (*count)(struct store *store, size_t *count);
	void (*stats)(struct store *store, struct store_stats *stats);
	int (*commit_start)(struct store *store, const struct store_batch *batch,
	    void (*done)(void *ctx, int rc), void *ctx);
};

struct store {
	const struct store_ops *ops;
	char error[256];    /* the last failure, for logs */
};

/* Batch building; allocation failure returns -1 and leaves it unchanged. */
void store_batch_init(struct store_batch *batch);
void store_batch_reset(struct store_batch *batch);
void store_batch_free(struct store_batch *batch);
int store_batch_add(struct store_batch *batch, enum store_op op,
    const char *name, size_t name_len, const void *val, size_t val_len);
/*
 * Marks the operation just added, a delete, settled (the contract above).
 * Without memory for the mark it stays unmarked: a failed commit then
 * keeps it out, which is never wrong.
 */
void store_batch_settle(struct store_batch *batch);
/* Whether operation i (0 the first) is a delete marked settled. */
bool store_batch_settled(const struct store_batch *batch, size_t i);

/* Walks a batch: *pos starts at 0; returns false at the end. */
struct store_batch_op {
	enum store_op op;
	const char *name;
	size_t name_len;
	const void *val;
	size_t val_len;
};
bool store_batch_next(const struct store_batch *batch, size_t *pos,
    struct store_batch_op *op);

/*
 * Opens (creating if needed) the LMDB store in dir, taking an exclusive lock
 * on the directory so a second lockd refuses to start.  map_size is the
 * LMDB map size in bytes.  On failure returns NULL and writes why to err.
 */
struct store *store_lmdb_open(const char *dir, size_t map_size, char *err,
    size_t err_len);
/*
 * The smallest map that holds `records` records of name_len-byte names and
 * value_len-byte values whatever the order of the puts and deletes, with
 * pages of page_size bytes: leaves and branches at LMDB's least fill, the
 * fixed pages, and the copies a commit makes (see store_lmdb.c).
 */
uint64_t store_lmdb_map_needed(uint64_t records, size_t name_len,
    size_t value_len, size_t page_size);

/*
 * lockd's store: LMDB in dir behind a redo journal, dir/lockd.wal
 * (store_journal.c).  A commit is one record written in place and synced;
 * LMDB takes the journal's changes at checkpoints.  A journal of another
 * size than asked for is checkpointed and made anew.
 */
#define STORE_JOURNAL_DEFAULT_SIZE (64u << 20)
#define STORE_JOURNAL_MIN_SIZE (64u << 10)
#define STORE_JOURNAL_MAX_SIZE (1u << 30)
struct store_journal_config {
	size_t map_size;        /* LMDB map size */
	size_t journal_size;    /* bytes of dir/lockd.wal */
	unsigned lmdb_flags;    /* extra mdb_env_open flags: guards only */
	bool journal_nosync;    /* skip the journal's fdatasync: guards only */
};
struct store *store_journal_open(const char *dir,
    const struct store_journal_config *cfg, char *err, size_t err_len);

#endif
