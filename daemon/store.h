/*
 * store.h - the durable store as the service sees it: a map from lock name
 * to an opaque value (the record of a held lock), plus the fence high-water
 * mark, changed only by whole batches that commit atomically and durably.
 *
 * The daemon runs it on LMDB (store_lmdb.c); the simulator runs the same
 * service against an in-memory store that can fail and lose unsynced data.
 * Every call returns 0 or a negative error; store_error() says what failed.
 */
#ifndef LOCKD_STORE_H
#define LOCKD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_VALUE_MAX 64

/* One batch: puts and deletes in order, then the high-water mark. */
struct store_batch {
	char *ops;          /* encoded: op, name_len, value_len, name, value */
	size_t len, cap;
	size_t count;       /* operations */
	bool has_hwm;
	uint64_t hwm;
	/* The journal's checkpoint mark (store_journal.c): LMDB holds every
	 * record up to mark_seq; the next one starts at mark_off. */
	bool has_mark;
	bool mark_clean;    /* and nothing after it: a clean stop */
	uint64_t mark_seq, mark_off;
};

enum store_op { STORE_PUT = 1, STORE_DEL = 2 };

/* What a store reports of itself, for the metrics (all optional). */
struct store_stats {
	uint64_t checkpoints;         /* the journal's changes into LMDB */
	uint64_t checkpoint_failures;
	uint64_t direct_commits;      /* batches straight into LMDB (full) */
	uint64_t journal_bytes;       /* written since the last checkpoint */
	uint64_t journal_size;
};

struct store;
struct store_ops {
	/* Applies the batch atomically and durably (fsync'd) or not at all. */
	int (*commit)(struct store *store, const struct store_batch *batch);
	/* Copies the value of name into val (STORE_VALUE_MAX bytes); returns 1
	 * when found, 0 when absent, negative on error. */
	int (*get)(struct store *store, const char *name, size_t name_len,
	    void *val, size_t *val_len);
	/* Calls fn for every record, then sets *hwm.  fn returning non-zero
	 * stops the walk with that value. */
	int (*load)(struct store *store,
	    int (*fn)(void *ctx, const char *name, size_t name_len,
	        const void *val, size_t val_len),
	    void *ctx, uint64_t *hwm);
	void (*close)(struct store *store);
	/* Optional (may be NULL): sets *count to the number of records, so
	 * that the caller can make room before load().  A hint only. */
	int (*count)(struct store *store, size_t *count);
	/* Optional: fills in *stats.  Called between commits only. */
	void (*stats)(struct store *store, struct store_stats *stats);
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
/* The same with extra mdb_env_open flags: for the power-loss test's guard
 * (MDB_NOSYNC must fail it), never for lockd itself. */
struct store *store_lmdb_open_flags(const char *dir, size_t map_size,
    unsigned env_flags, char *err, size_t err_len);
/* The journal's mark as the last checkpoint left it: 1, or 0 when there
 * has been none (all 0). */
int store_lmdb_mark(struct store *store, uint64_t *seq, uint64_t *off,
    bool *clean);
/*
 * The smallest map that holds `records` records of name_len-byte names and
 * value_len-byte values whatever the order of the puts and deletes, with
 * pages of page_size bytes: leaves and branches at LMDB's least fill, the
 * fixed pages, and the copies a commit makes (see store_lmdb.c).
 */
uint64_t store_lmdb_map_needed(uint64_t records, size_t name_len,
    size_t value_len, size_t page_size);
/* Bytes of the map past LMDB's last page (free pages inside not counted),
 * and its page size. */
int store_lmdb_room(struct store *store, uint64_t *room, uint64_t *psize);

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
