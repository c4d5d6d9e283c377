/*
 * store_journal.c - the daemon's store: LMDB behind a redo journal.
 *
 * A synced LMDB commit flushes the device twice (the data pages, then the
 * meta page) and changes the file's blocks and size as pages are
 * allocated.  Here a batch is instead one record appended to DIR/lockd.wal,
 * a file written once with zeros at its full size and from then on only
 * overwritten in place: one pwritev() and one fdatasync() per batch, with
 * no metadata for the file system to journal.  LMDB takes the journal's
 * changes at checkpoints - when the records since the last one reach
 * 1/64 of the file, when a record would not fit, at a clean close - in one
 * synced transaction that also stores the mark: the last sequence number
 * it includes and the offset where the next record starts.
 *
 * A record: a 32-byte header (magic, CRC32C, seq, hwm, length, flags),
 * then the batch's operations in store.c's encoding, byte by byte in
 * daemon/format.h.  Sequence numbers are
 * contiguous; records follow each other, and one that does not fit before
 * the end of the file starts at offset 0.  Recovery reads from the mark:
 * the record at the offset must carry the next sequence number and a good
 * CRC, else the one at offset 0 must (the writer wrapped), else the journal
 * ends there.  A torn record fails its CRC; a record of an earlier lap has
 * an older sequence number.  A record whose write or sync failed was not
 * acknowledged: its sequence number and offset are used again by the next
 * one, which overwrites it, so the journal never has a hole.
 *
 * The records since the last checkpoint are also kept in memory (their
 * operations, and an index from name to the latest operation on it), so
 * that get() and load() answer with the journal's view on top of LMDB's
 * (load() in key order, as LMDB's own walk: the journal's keys are sorted
 * into it) and a checkpoint writes each name once, whatever the number of
 * records.
 *
 * LMDB's map must still bound what is stored, and a batch that does not
 * fit must be refused whole, as LMDB alone refuses it.  The journal only
 * takes a batch while LMDB's free room at the end of its map is ample for
 * everything the journal holds (a page per name, twice over, and 64 KiB);
 * short of that, a batch goes straight into a checkpoint, one synced LMDB
 * transaction with the journal's changes, and fails with MDB_MAP_FULL if
 * it does not fit.  Near a full map lockd commits as it would on LMDB
 * alone; far from it, the estimate costs nothing.  A batch larger than
 * the whole journal takes the same way into LMDB, so that every batch
 * commits, whatever the journal's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "daemon/format.h"
#include "daemon/store_lmdb.h"

#define WAL_CHUNK (1u << 20)    /* zeros written at a time when creating */
/* The in-memory tail (the records since the mark) starts this big and
 * doubles; the name index keeps at most this many slots across a
 * checkpoint, a bigger one is freed and grows again when needed. */
#define TAIL_FIRST_CAP 65536
#define INDEX_KEEP_SLOTS 65536
/* LMDB room the journal leaves unclaimed beyond its estimate: the meta
 * keys and the branch pages a checkpoint may add. */
#define ROOM_SLACK 65536

struct wal_slot {
	uint32_t off1;      /* offset of the operation in tail, + 1; 0: empty */
	uint32_t hash;
};

struct store_journal {
	struct store base;      /* first: the service holds a struct store * */
	struct store_lmdb *lmdb;    /* for the mark and the map's room */
	struct store *db;       /* the same LMDB, through the seam */
	int fd;
	bool nosync;            /* guards only */
	uint64_t size;          /* of the file */
	uint64_t checkpoint_at; /* bytes since the mark that ask for one */
	uint64_t next_seq;      /* of the next record */
	uint64_t off;           /* where the next record goes */
	uint64_t used;          /* file bytes since the mark, wrap gap too */
	/* The operations of the records since the mark, in order. */
	unsigned char *tail;
	size_t tail_len, tail_cap;
	bool has_hwm;
	uint64_t hwm;
	/* name -> its latest operation in tail (open addressing). */
	struct wal_slot *slots;
	size_t nslots, nnames;
	uint64_t hash_key[2];
	bool clean;             /* LMDB's mark says: stopped cleanly */
	bool closing;           /* the next mark says so */
	uint64_t room;          /* LMDB's unused map, after the checkpoint */
	uint64_t psize;         /* LMDB's page size */
	struct store_batch ck;  /* a checkpoint's batch */
	struct store_stats stats;
	char path[4096];
};

static int
fail(struct store_journal *s, int rc, const char *what, const char *why)
{
	snprintf(s->base.error, sizeof(s->base.error), "%s: %.200s", what,
	    why);
	return rc < 0 ? rc : -1;
}

/* ---- the index ---------------------------------------------------------- */

/* The operation at off in tail. */
static void
op_at(const struct store_journal *s, uint32_t off, struct store_batch_op *op)
{
	struct store_batch at = { .ops = (char *)s->tail + off,
	    .len = s->tail_len - off };
	size_t pos = 0;

	store_batch_next(&at, &pos, op);
}

/* The slot of name: its own, or the empty one where it would go. */
static struct wal_slot *
index_slot(const struct store_journal *s, const char *name, size_t len,
    uint32_t hash)
{
	size_t mask = s->nslots - 1, i = hash & mask;
	struct store_batch_op op;

	for (;; i = (i + 1) & mask) {
		struct wal_slot *slot = &s->slots[i];
		if (slot->off1 == 0)
			return slot;
		if (slot->hash != hash)
			continue;
		op_at(s, slot->off1 - 1, &op);
		if (op.name_len == len && memcmp(op.name, name, len) == 0)
			return slot;
	}
}

/* Room for n more names, so that indexing a written record cannot fail. */
static int
index_reserve(struct store_journal *s, size_t n)
{
	struct wal_slot *old = s->slots, *slots;
	size_t i, nslots = s->nslots ? s->nslots : 256, oldn = s->nslots;

	while ((s->nnames + n) * 2 > nslots)
		nslots *= 2;
	if (nslots == s->nslots)
		return 0;
	if ((slots = calloc(nslots, sizeof(*slots))) == NULL)
		return -1;
	s->slots = slots;
	s->nslots = nslots;
	for (i = 0; i < oldn; i++) {
		size_t j = old[i].hash & (nslots - 1);
		if (old[i].off1 == 0)
			continue;
		while (slots[j].off1 != 0)
			j = (j + 1) & (nslots - 1);
		slots[j] = old[i];
	}
	free(old);
	return 0;
}

static uint32_t
name_hash(const struct store_journal *s, const char *name, size_t len)
{
	return (uint32_t)core_name_hash(s->hash_key, name, len);
}

static const struct wal_slot *
index_find(const struct store_journal *s, const char *name, size_t len)
{
	const struct wal_slot *slot;

	if (s->nnames == 0)
		return NULL;
	slot = index_slot(s, name, len, name_hash(s, name, len));
	return slot->off1 != 0 ? slot : NULL;
}

/* Appends a record's operations to tail and indexes them: the caller has
 * reserved room for both. */
static void
tail_append(struct store_journal *s, const struct store_batch *b)
{
	struct store_batch_op op;
	size_t pos = 0, at, start = s->tail_len;

	if (b->len > 0)
		memcpy(s->tail + start, b->ops, b->len);
	s->tail_len += b->len;    /* before the index compares names there */
	for (at = start; store_batch_next(b, &pos, &op); at = start + pos) {
		uint32_t h = name_hash(s, op.name, op.name_len);
		struct wal_slot *slot = index_slot(s, op.name, op.name_len, h);
		if (slot->off1 == 0)
			s->nnames++;
		slot->off1 = (uint32_t)(at + 1);
		slot->hash = h;
	}
	if (b->has_hwm) {
		s->has_hwm = true;
		s->hwm = b->hwm;
	}
}

static int
tail_reserve(struct store_journal *s, const struct store_batch *b)
{
	if (s->tail_len + b->len > s->tail_cap) {
		size_t cap = s->tail_cap ? s->tail_cap : TAIL_FIRST_CAP;
		unsigned char *p;
		while (cap < s->tail_len + b->len)
			cap *= 2;
		if ((p = realloc(s->tail, cap)) == NULL)
			return -1;
		s->tail = p;
		s->tail_cap = cap;
	}
	return index_reserve(s, b->count);
}

/* After a checkpoint: empty, and no bigger than a quiet journal needs. */
static void
tail_clear(struct store_journal *s)
{
	s->tail_len = 0;
	s->nnames = 0;
	s->has_hwm = false;
	if (s->tail_cap > 4 * s->checkpoint_at) {
		free(s->tail);
		s->tail = NULL;
		s->tail_cap = 0;
	}
	if (s->nslots > INDEX_KEEP_SLOTS) {
		free(s->slots);
		s->slots = NULL;
		s->nslots = 0;
	} else if (s->slots != NULL) {
		memset(s->slots, 0, s->nslots * sizeof(*s->slots));
	}
	if (s->ck.cap > 4 * s->checkpoint_at)
		store_batch_free(&s->ck);
}

/* ---- checkpoints -------------------------------------------------------- */

/* s->ck := every name the journal changed, once, and its hwm. */
static int
changes(struct store_journal *s)
{
	struct store_batch_op op;
	size_t i;

	store_batch_reset(&s->ck);
	for (i = 0; i < s->nslots; i++) {
		if (s->slots[i].off1 == 0)
			continue;
		op_at(s, s->slots[i].off1 - 1, &op);
		if (store_batch_add(&s->ck, op.op, op.name, op.name_len,
		    op.val, op.val_len) != 0)
			return -1;
	}
	s->ck.has_hwm = s->has_hwm;
	s->ck.hwm = s->hwm;
	return 0;
}

/*
 * Writes every name the journal changed, once, its hwm and the mark, in
 * one synced LMDB transaction; then the journal's space is free again.
 * With extra, that batch goes into the same transaction instead of into
 * the journal, taking the next sequence number.
 */
static int
checkpoint(struct store_journal *s, const struct store_batch *extra)
{
	struct store_batch_op op;
	struct format_mark mark;
	size_t pos;
	int rc;

	if (s->used == 0 && extra == NULL && s->clean == s->closing)
		return 0;         /* nothing since the mark */
	if (changes(s) != 0)
		return fail(s, -1, "checkpoint", "out of memory");
	for (pos = 0; extra != NULL && store_batch_next(extra, &pos, &op); )
		if (store_batch_add(&s->ck, op.op, op.name, op.name_len,
		    op.val, op.val_len) != 0)
			return fail(s, -1, "checkpoint", "out of memory");
	if (extra != NULL && extra->has_hwm) {
		s->ck.has_hwm = true;
		s->ck.hwm = extra->hwm;
	}
	mark.seq = s->next_seq - (extra == NULL);
	mark.off = s->off;
	mark.clean = s->closing && extra == NULL;
	if ((rc = store_lmdb_commit_mark(s->lmdb, &s->ck, &mark)) != 0) {
		s->stats.checkpoint_failures++;
		return fail(s, rc, "checkpoint", s->db->error);
	}
	if (extra != NULL) {
		s->next_seq++;
		s->stats.direct_commits++;
	} else {
		s->stats.checkpoints++;
	}
	s->clean = mark.clean;
	s->used = 0;
	tail_clear(s);
	(void)store_lmdb_room(s->lmdb, &s->room, &s->psize);
	return 0;
}

/* Is LMDB's room ample for the journal's names and b's, should the next
 * checkpoint write each on a page of its own? */
static bool
ample(const struct store_journal *s, const struct store_batch *b)
{
	uint64_t need = (s->nnames + b->count) * 2 * s->psize +
	    2 * (s->tail_len + b->len) + ROOM_SLACK;

	return need <= s->room;
}

/* ---- the store ---------------------------------------------------------- */

/* Where a record of len bytes goes, or -1 when the journal has no room. */
static int64_t
place(const struct store_journal *s, uint64_t len, uint64_t *used)
{
	if (s->off + len <= s->size && s->used + len <= s->size) {
		*used = s->used + len;
		return (int64_t)s->off;
	}
	if (s->used + (s->size - s->off) + len <= s->size) {
		*used = s->used + (s->size - s->off) + len;
		return 0;
	}
	return -1;
}

/*
 * A batch LMDB refused, with the journal empty: its settled deletes still
 * go in, alone and a few names a transaction - the one exception to "all
 * or nothing" that store.h's contract allows, and the commit still fails.
 * They are releases whose RELEASED is out, leases that ran out as their
 * holders were told, leases of closed onclose connections: no reply about
 * them waits for the batch, so nothing the service then says contradicts
 * them, and the service falls back every name of the batch to what get()
 * then says.  Without it a full map could not drain while clients keep
 * acquiring: every batch would hold a put, fail, and bring its deletes
 * back.  Small transactions, because on a full map LMDB may lack the
 * pages to copy every leaf one large delete touches.
 */
static void
salvage_deletes(struct store_journal *s, const struct store_batch *b)
{
	struct store_batch_op op;
	size_t pos = 0, i;

	store_batch_reset(&s->ck);
	for (i = 0; store_batch_next(b, &pos, &op); i++) {
		if (op.op != STORE_DEL || !store_batch_settled(b, i))
			continue;
		if (store_batch_add(&s->ck, op.op, op.name, op.name_len, NULL,
		    0) != 0)
			return;
		if (s->ck.count == 4) {
			if (s->db->ops->commit(s->db, &s->ck) != 0)
				return;
			store_batch_reset(&s->ck);
		}
	}
	if (s->ck.count > 0)
		(void)s->db->ops->commit(s->db, &s->ck);
}

/*
 * A batch straight into LMDB: the journal is emptied into it first, then
 * the batch goes in one synced transaction of its own, all or nothing, as
 * the store's contract asks.  For a batch near a full map, and for one
 * larger than the journal: a batch's size is bounded by nothing a client
 * controls (many connections, each pipelining), so the journal cannot
 * bound it either.
 */
static int
commit_direct(struct store_journal *s, const struct store_batch *b)
{
	int rc;

	if ((rc = checkpoint(s, NULL)) != 0)
		return rc;
	if ((rc = checkpoint(s, b)) != 0)
		salvage_deletes(s, b);
	return rc;
}

static int
journal_commit(struct store *base, const struct store_batch *b)
{
	struct store_journal *s = (struct store_journal *)base;
	struct format_journal_header h = { s->next_seq, b->has_hwm, b->hwm,
	    (uint32_t)b->len, b->holder_keys };
	unsigned char hdr[FORMAT_JOURNAL_HEADER];
	struct iovec iov[2];
	uint64_t len = FORMAT_JOURNAL_HEADER + b->len, used;
	int64_t at;
	ssize_t n;
	int rc;

	if (s->used >= s->checkpoint_at)
		(void)checkpoint(s, NULL);   /* a failure is tried again later */
	if (!ample(s, b))
		return commit_direct(s, b);    /* near a full map */
	if ((at = place(s, len, &used)) < 0) {
		if ((rc = checkpoint(s, NULL)) != 0)
			return rc;
		if ((at = place(s, len, &used)) < 0)
			return commit_direct(s, b);    /* larger than it */
	}
	if (tail_reserve(s, b) != 0)
		return fail(s, -1, "journal", "out of memory");

	format_journal_encode(&h, b->ops, hdr);
	iov[0].iov_base = hdr;
	iov[0].iov_len = FORMAT_JOURNAL_HEADER;
	iov[1].iov_base = b->ops;
	iov[1].iov_len = b->len;
	n = pwritev(s->fd, iov, b->len > 0 ? 2 : 1, (off_t)at);
	if (n != (ssize_t)len)
		return fail(s, -1, "journal write",
		    n < 0 ? strerror(errno) : "short write");
	if (!s->nosync && fdatasync(s->fd) != 0)
		return fail(s, -1, "journal fdatasync", strerror(errno));

	tail_append(s, b);
	s->next_seq++;
	s->off = (uint64_t)at + len;
	s->used = used;
	return 0;
}

static int
journal_get(struct store *base, const char *name, size_t name_len,
    void *val, size_t *val_len)
{
	struct store_journal *s = (struct store_journal *)base;
	const struct wal_slot *slot = index_find(s, name, name_len);
	struct store_batch_op op;
	int rc;

	if (slot == NULL) {
		rc = s->db->ops->get(s->db, name, name_len, val, val_len);
		if (rc < 0)
			memcpy(s->base.error, s->db->error,
			    sizeof(s->base.error));
		return rc;
	}
	op_at(s, slot->off1 - 1, &op);
	if (op.op != STORE_PUT)
		return 0;
	memcpy(val, op.val, op.val_len);
	*val_len = op.val_len;
	return 1;
}

/* One key the journal changed, for the load's merge in key order. */
struct load_key {
	const char *key;
	size_t len;
	uint32_t off;       /* of its latest operation in tail */
};

struct load_ctx {
	struct store_journal *s;
	int (*fn)(void *ctx, const char *name, size_t name_len,
	    const void *val, size_t val_len);
	void *ctx;
	struct load_key *keys;   /* the journal's, in key order */
	size_t n, next;
};

static int
load_key_order(const void *a, const void *b)
{
	const struct load_key *x = a, *y = b;

	return format_key_compare(x->key, x->len, y->key, y->len);
}

/* Hands on the journal's keys before key (all of them with key NULL),
 * the ones still there: a put's value. */
static int
load_journal_before(struct load_ctx *l, const char *key, size_t len)
{
	struct store_batch_op op;
	int rc;

	for (; l->next < l->n; l->next++) {
		const struct load_key *k = &l->keys[l->next];
		if (key != NULL &&
		    format_key_compare(k->key, k->len, key, len) >= 0)
			break;
		op_at(l->s, k->off, &op);
		if (op.op == STORE_PUT &&
		    (rc = l->fn(l->ctx, op.name, op.name_len, op.val,
		    op.val_len)) != 0)
			return rc;
	}
	return 0;
}

/* LMDB's records, but for those the journal changed since, merged in
 * key order with the journal's own. */
static int
load_merged(void *ctx, const char *name, size_t name_len, const void *val,
    size_t val_len)
{
	struct load_ctx *l = ctx;
	int rc;

	if ((rc = load_journal_before(l, name, name_len)) != 0)
		return rc;
	if (index_find(l->s, name, name_len) != NULL)
		return 0;   /* the journal's comes in its place */
	return l->fn(l->ctx, name, name_len, val, val_len);
}

/*
 * In key order, as the seam asks (store.h): LMDB's walk is, and the keys
 * the journal changed since its mark - at most the index's names, sorted
 * here once - go in between.  A key in both is the journal's.
 */
static int
journal_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	struct store_journal *s = (struct store_journal *)base;
	struct load_ctx l = { s, fn, ctx, NULL, 0, 0 };
	struct store_batch_op op;
	size_t i;
	int rc;

	if (s->nnames > 0 &&
	    (l.keys = calloc(s->nnames, sizeof(*l.keys))) == NULL)
		return fail(s, -1, "load", "out of memory");
	for (i = 0; i < s->nslots && l.n < s->nnames; i++) {
		if (s->slots[i].off1 == 0)
			continue;
		op_at(s, s->slots[i].off1 - 1, &op);
		l.keys[l.n].key = op.name;
		l.keys[l.n].len = op.name_len;
		l.keys[l.n++].off = s->slots[i].off1 - 1;
	}
	if (l.n > 1)
		qsort(l.keys, l.n, sizeof(*l.keys), load_key_order);
	if ((rc = s->db->ops->load(s->db, load_merged, &l, hwm)) != 0) {
		memcpy(s->base.error, s->db->error, sizeof(s->base.error));
		free(l.keys);
		return rc;
	}
	rc = load_journal_before(&l, NULL, 0);
	free(l.keys);
	if (rc != 0)
		return rc;
	if (s->has_hwm && s->hwm > *hwm)
		*hwm = s->hwm;
	return 0;
}

static int
journal_count(struct store *base, size_t *count)
{
	struct store_journal *s = (struct store_journal *)base;
	int rc;

	if (s->db->ops->count == NULL)
		return -1;
	if ((rc = s->db->ops->count(s->db, count)) != 0)
		return rc;
	*count += s->nnames;    /* at most: a hint */
	return 0;
}

static void
journal_stats(struct store *base, struct store_stats *stats)
{
	struct store_journal *s = (struct store_journal *)base;

	*stats = s->stats;
	stats->journal_bytes = s->used;
	stats->journal_size = s->size;
}

static void
journal_close(struct store *base)
{
	struct store_journal *s = (struct store_journal *)base;

	s->closing = true;     /* the mark will say: nothing after it */
	(void)checkpoint(s, NULL);   /* what fails stays in the journal */
	close(s->fd);
	s->db->ops->close(s->db);
	free(s->tail);
	free(s->slots);
	store_batch_free(&s->ck);
	free(s);
}

static const struct store_ops journal_ops = {
	.commit = journal_commit,
	.get = journal_get,
	.load = journal_load,
	.close = journal_close,
	.count = journal_count,
	.stats = journal_stats,
};

/* ---- opening ------------------------------------------------------------ */

static int
fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/*
 * Writes a new journal of zeros at its full size, synced, and renames it
 * into place: written blocks, so that overwriting them later changes no
 * metadata (a file made with fallocate() or a hole would, at the first
 * write of every block).
 */
static int
create(const char *dir, const char *path, uint64_t size, char *err,
    size_t err_len)
{
	char tmp[4160];
	unsigned char *zero = calloc(1, WAL_CHUNK);
	uint64_t done;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (zero == NULL) {
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	for (done = 0; done < size; ) {
		size_t n = size - done < WAL_CHUNK ? size - done : WAL_CHUNK;
		ssize_t w = pwrite(fd, zero, n, (off_t)done);
		if (w <= 0)
			goto fail;
		done += (uint64_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0 || fsync_dir(dir) != 0)
		goto fail;
	free(zero);
	return 0;
fail:
	snprintf(err, err_len, "cannot create the journal %s: %s", path,
	    strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(zero);
	return -1;
}

/* Reads the record at off if it is the one with seq; its operations go to
 * b (b->ops then points into buf).  Returns its length, or 0. */
static uint64_t
read_record(struct store_journal *s, uint64_t off, uint64_t seq,
    unsigned char **buf, size_t *cap, struct store_batch *b)
{
	unsigned char hdr[FORMAT_JOURNAL_HEADER];
	struct format_journal_header h;
	uint32_t len;

	if (off + FORMAT_JOURNAL_HEADER > s->size ||
	    pread(s->fd, hdr, FORMAT_JOURNAL_HEADER, (off_t)off) !=
	    FORMAT_JOURNAL_HEADER || !format_journal_decode(hdr, &h) ||
	    h.seq != seq)
		return 0;
	len = h.len;
	if (len > s->size - off - FORMAT_JOURNAL_HEADER)
		return 0;
	if (len > *cap) {
		unsigned char *p = realloc(*buf, len);
		if (p == NULL)
			return 0;
		*buf = p;
		*cap = len;
	}
	if (len > 0 && pread(s->fd, *buf, len,
	    (off_t)(off + FORMAT_JOURNAL_HEADER)) != (ssize_t)len)
		return 0;
	if (!format_journal_check(hdr, *buf, len))
		return 0;
	store_batch_init(b);
	b->ops = (char *)*buf;
	b->len = b->cap = len;
	b->has_hwm = h.has_hwm;
	b->hwm = h.hwm;
	return FORMAT_JOURNAL_HEADER + len;
}

/* Replays the records after the mark into memory; the next one goes
 * after the last. */
static int
replay(struct store_journal *s, uint64_t mark_seq, uint64_t mark_off,
    char *err, size_t err_len)
{
	unsigned char *buf = NULL;
	size_t cap = 0, pos;
	struct store_batch b;
	struct store_batch_op op;
	uint64_t at = mark_off < s->size ? mark_off : 0, len;

	s->next_seq = mark_seq + 1;
	s->off = at;
	s->used = 0;
	for (;;) {
		uint64_t gap = 0;
		if ((len = read_record(s, at, s->next_seq, &buf, &cap, &b)) == 0
		    && at != 0) {
			gap = s->size - at;
			at = 0;
			len = read_record(s, at, s->next_seq, &buf, &cap, &b);
		}
		if (len == 0 || s->used + gap + len > s->size)
			break;
		for (b.count = 0, pos = 0; store_batch_next(&b, &pos, &op); )
			b.count++;
		if (tail_reserve(s, &b) != 0) {
			snprintf(err, err_len, "out of memory replaying %s",
			    s->path);
			free(buf);
			return -1;
		}
		tail_append(s, &b);
		s->used += gap + len;
		s->next_seq++;
		at += len;
		s->off = at;
	}
	free(buf);
	return 0;
}

struct store *
store_journal_open(const char *dir, const struct store_journal_config *cfg,
    char *err, size_t err_len)
{
	struct store_journal *s;
	struct format_mark mark;
	struct stat st;
	int marked;

	/* The index keeps 32-bit offsets into the journal's operations. */
	if (cfg->journal_size < STORE_JOURNAL_MIN_SIZE ||
	    cfg->journal_size > STORE_JOURNAL_MAX_SIZE) {
		snprintf(err, err_len, "the journal must be %u to %u bytes",
		    STORE_JOURNAL_MIN_SIZE, STORE_JOURNAL_MAX_SIZE);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->base.ops = &journal_ops;
	s->fd = -1;
	s->nosync = cfg->journal_nosync;
	store_batch_init(&s->ck);
	if (getrandom(s->hash_key, sizeof(s->hash_key), 0) !=
	    (ssize_t)sizeof(s->hash_key))
		s->hash_key[0] = (uint64_t)getpid();   /* index only */
	s->lmdb = store_lmdb_open_flags(dir, cfg->map_size, cfg->lmdb_flags,
	    err, err_len);
	if (s->lmdb == NULL)
		goto free;
	s->db = store_lmdb_store(s->lmdb);
	marked = store_lmdb_read_mark(s->lmdb, &mark);
	s->clean = mark.clean;
	if (marked < 0) {
		snprintf(err, err_len, "cannot read the journal mark: %s",
		    s->db->error);
		goto close;
	}
	snprintf(s->path, sizeof(s->path), "%s/lockd.wal", dir);
	/*
	 * No journal: a new directory, or one of a lockd before the journal,
	 * or one stopped cleanly - or one whose journal was lost, with the
	 * commits since the last checkpoint, which must not be served as if
	 * nothing were missing.
	 */
	if (stat(s->path, &st) != 0) {
		if (marked && !s->clean) {
			snprintf(err, err_len, "%s is missing, and lockd did "
			    "not stop cleanly: it holds commits that data.mdb "
			    "lacks.  Put it back, or start from an empty "
			    "directory", s->path);
			goto close;
		}
		if (create(dir, s->path, cfg->journal_size, err, err_len) != 0)
			goto close;
		s->clean = true;    /* empty; the mark is written below */
	}
	if ((s->fd = open(s->path, O_RDWR | O_CLOEXEC)) < 0 ||
	    fstat(s->fd, &st) != 0) {
		snprintf(err, err_len, "cannot open %s: %s", s->path,
		    strerror(errno));
		goto close;
	}
	s->size = (uint64_t)st.st_size;
	s->checkpoint_at = s->size / 64;
	if (s->size < STORE_JOURNAL_MIN_SIZE) {
		snprintf(err, err_len, "%s is too short (%llu bytes)", s->path,
		    (unsigned long long)s->size);
		goto close;
	}
	if (replay(s, mark.seq, mark.off, err, err_len) != 0 ||
	    store_lmdb_room(s->lmdb, &s->room, &s->psize) != 0)
		goto close;
	/*
	 * Another size asked for: LMDB takes what the old journal holds
	 * (if it cannot, the old one stays), then a new one replaces it.
	 * The mark's offset may lie beyond the new end or on its zeros;
	 * either way recovery then looks at offset 0, where the next record
	 * goes.
	 */
	if (s->size != cfg->journal_size && checkpoint(s, NULL) == 0) {
		close(s->fd);
		s->fd = -1;
		if (create(dir, s->path, cfg->journal_size, err, err_len) != 0)
			goto close;
		if ((s->fd = open(s->path, O_RDWR | O_CLOEXEC)) < 0) {
			snprintf(err, err_len, "cannot open %s: %s", s->path,
			    strerror(errno));
			goto close;
		}
		s->size = cfg->journal_size;
		s->checkpoint_at = s->size / 64;
		s->off = 0;
		s->used = 0;
	}
	/* From the first record on, the mark must not say "clean" (and a
	 * new journal's mark must exist, for the check above). */
	if (s->clean && checkpoint(s, NULL) != 0) {
		snprintf(err, err_len, "cannot write the journal mark: %s",
		    s->base.error);
		goto close;
	}
	return &s->base;
close:
	if (s->fd >= 0)
		close(s->fd);
	s->db->ops->close(s->db);
free:
	free(s->tail);
	free(s->slots);
	free(s);
	return NULL;
}
