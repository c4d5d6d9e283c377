/*
 * store_lmdb.c - the durable store on LMDB.
 *
 * One environment in the data directory, opened with LMDB's default, fully
 * synced commit mode: mdb_txn_commit returns only after the data and the
 * meta page are on disk.  Never MDB_NOSYNC, MDB_NOMETASYNC or MDB_NOLOCK.
 * Two databases: "leases" (name -> record of a held lock) and "meta" (the
 * fence high-water mark, and the journal's mark), laid out in
 * daemon/format.h.  A file lock on DIR/lockd.lock keeps a second lockd
 * out of the directory.  Beside the seam of store.h, store_lmdb.h gives
 * the journal what only it needs: the mark, and the map's room.
 */
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bytes.h"
#include "daemon/format.h"
#include "daemon/store_lmdb.h"

struct store_lmdb {
	struct store base;    /* first: the service holds a struct store * */
	MDB_env *env;
	MDB_dbi leases;
	MDB_dbi meta;
	int lock_fd;
};

static const char hwm_key[] = FORMAT_META_HWM;
static const char mark_key[] = FORMAT_META_MARK;

static int
put_meta(struct store_lmdb *s, MDB_txn *txn, const char *key,
    const void *val, size_t len)
{
	MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };

	return mdb_put(txn, s->meta, &k, &v, 0);
}

static int
fail(struct store_lmdb *s, const char *what, int rc)
{
	snprintf(s->base.error, sizeof(s->base.error), "%s: %s", what,
	    mdb_strerror(rc));
	return rc < 0 ? rc : -rc;
}

/* The batch, and the journal's mark when there is one, in one synced
 * transaction. */
static int
commit(struct store_lmdb *s, const struct store_batch *batch,
    const struct format_mark *mark)
{
	struct store_batch_op op;
	const char *what = "mdb_cursor_open";
	unsigned char hwm[FORMAT_META_HWM_SIZE], marked[FORMAT_META_MARK_SIZE];
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	size_t pos = 0;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		return fail(s, "mdb_txn_begin", rc);
	/*
	 * One cursor for the whole batch.  mdb_put and mdb_del set up a
	 * cursor of their own on every call and search from the root; a
	 * cursor that stays where the last operation left it finds a name on
	 * the same leaf page without that descent.  The transaction closes
	 * it if we abort.
	 */
	if ((rc = mdb_cursor_open(txn, s->leases, &cur)) != 0)
		goto abort;
	while (store_batch_next(batch, &pos, &op)) {
		k.mv_data = (void *)op.name;
		k.mv_size = op.name_len;
		if (op.op == STORE_PUT) {
			what = "mdb_put";
			v.mv_data = (void *)op.val;
			v.mv_size = op.val_len;
			rc = mdb_cursor_put(cur, &k, &v, 0);
		} else {
			what = "mdb_del";
			rc = mdb_cursor_get(cur, &k, NULL, MDB_SET);
			if (rc == 0)
				rc = mdb_cursor_del(cur, 0);
			else if (rc == MDB_NOTFOUND)
				rc = 0;
		}
		if (rc != 0)
			goto abort;
	}
	mdb_cursor_close(cur);
	what = "mdb_put";
	if (batch->has_hwm) {
		bytes_put_le64(hwm, batch->hwm);
		if ((rc = put_meta(s, txn, hwm_key, hwm, sizeof(hwm))) != 0)
			goto abort;
	}
	if (mark != NULL) {
		format_mark_encode(mark, marked);
		if ((rc = put_meta(s, txn, mark_key, marked,
		    sizeof(marked))) != 0)
			goto abort;
	}
	/* mdb_txn_commit frees the transaction even when it fails. */
	if ((rc = mdb_txn_commit(txn)) != 0)
		return fail(s, "mdb_txn_commit", rc);
	return 0;
abort:
	mdb_txn_abort(txn);
	return fail(s, what, rc);
}

static int
lmdb_commit(struct store *base, const struct store_batch *batch)
{
	return commit((struct store_lmdb *)base, batch, NULL);
}

int
store_lmdb_commit_mark(struct store_lmdb *db, const struct store_batch *batch,
    const struct format_mark *mark)
{
	return commit(db, batch, mark);
}

static int
lmdb_get(struct store *base, const char *name, size_t name_len, void *val,
    size_t *val_len)
{
	struct store_lmdb *s = (struct store_lmdb *)base;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, found = 0;

	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)) != 0)
		return fail(s, "mdb_txn_begin", rc);
	k.mv_data = (void *)name;
	k.mv_size = name_len;
	rc = mdb_get(txn, s->leases, &k, &v);
	if (rc == 0 && v.mv_size <= STORE_VALUE_MAX) {
		memcpy(val, v.mv_data, v.mv_size);
		*val_len = v.mv_size;
		found = 1;
	} else if (rc != 0 && rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return fail(s, "mdb_get", rc);
	}
	mdb_txn_abort(txn);
	return found;
}

/*
 * The walk that follows reads every page of the file, in the B-tree's
 * order, which is not the file's.  On a cold cache, reading faults each
 * page in at random; asked for at once, the kernel reads the file in
 * large sequential requests while the walk starts.  Only a hint.
 */
static void
file_willneed(struct store_lmdb *s)
{
	MDB_envinfo info;
	MDB_stat st;
	mdb_filehandle_t fd;

	if (mdb_env_info(s->env, &info) != 0 ||
	    mdb_env_stat(s->env, &st) != 0 || mdb_env_get_fd(s->env, &fd) != 0)
		return;
	(void)posix_fadvise(fd, 0,
	    (off_t)((info.me_last_pgno + 1) * (size_t)st.ms_psize),
	    POSIX_FADV_WILLNEED);
}

static int
lmdb_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	struct store_lmdb *s = (struct store_lmdb *)base;
	MDB_cursor *cur;
	MDB_txn *txn;
	MDB_val k, v;
	int rc, stop = 0;

	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)) != 0)
		return fail(s, "mdb_txn_begin", rc);
	*hwm = 0;
	k.mv_data = (void *)hwm_key;
	k.mv_size = sizeof(hwm_key) - 1;
	rc = mdb_get(txn, s->meta, &k, &v);
	if (rc == 0 && v.mv_size == FORMAT_META_HWM_SIZE)
		*hwm = bytes_get_le64(v.mv_data);
	else if (rc != 0 && rc != MDB_NOTFOUND)
		goto abort;
	if ((rc = mdb_cursor_open(txn, s->leases, &cur)) != 0)
		goto abort;
	file_willneed(s);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && !stop;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		stop = fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	if (stop)
		return stop;
	return rc == MDB_NOTFOUND ? 0 : fail(s, "mdb_cursor_get", rc);
abort:
	mdb_txn_abort(txn);
	return fail(s, "load", rc);
}

int
store_lmdb_read_mark(struct store_lmdb *s, struct format_mark *mark)
{
	MDB_val k = { sizeof(mark_key) - 1, (void *)mark_key }, v;
	MDB_txn *txn;
	int rc;

	memset(mark, 0, sizeof(*mark));
	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)) != 0)
		return fail(s, "mdb_txn_begin", rc);
	rc = mdb_get(txn, s->meta, &k, &v);
	if (rc == 0)    /* a value of another size reads as no mark yet */
		(void)format_mark_decode(v.mv_data, v.mv_size, mark);
	mdb_txn_abort(txn);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return fail(s, "mdb_get", rc);
	return rc == 0;
}

int
store_lmdb_sync(struct store_lmdb *s)
{
	int rc = mdb_env_sync(s->env, 1);

	return rc == 0 ? 0 : fail(s, "mdb_env_sync", rc);
}

int
store_lmdb_room(struct store_lmdb *s, uint64_t *room, uint64_t *psize)
{
	MDB_envinfo info;
	MDB_stat st;
	int rc;

	if ((rc = mdb_env_info(s->env, &info)) != 0 ||
	    (rc = mdb_env_stat(s->env, &st)) != 0)
		return fail(s, "mdb_env_info", rc);
	*psize = st.ms_psize;
	*room = info.me_mapsize - (info.me_last_pgno + 1) * (size_t)st.ms_psize;
	return 0;
}

/*
 * LMDB's page layout (mdb.c), for store_lmdb_map_needed: a page has a
 * 16-byte header; a leaf node is an 8-byte header, the key and the data,
 * rounded up to even, and a 2-byte slot in the page's index; a branch node
 * the same without the data.  A page that a delete leaves less than 25%
 * full (FILL_THRESHOLD) is merged with a neighbour or given one of its
 * nodes, so a page other than a root keeps at least a quarter of its room
 * in nodes - and no more, in the worst order of puts and deletes.
 */
#define LMDB_PAGE_HEADER 16
#define LMDB_NODE_HEADER 8
#define LMDB_INDEX_SLOT 2
#define LMDB_FIXED_PAGES 16   /* 2 meta; 3 copies of 3 databases' roots */

/* The fewest nodes of node_size bytes a non-root page keeps. */
static uint64_t
fewest_nodes(size_t page_size, size_t node_size, uint64_t at_least)
{
	uint64_t quarter = (page_size - LMDB_PAGE_HEADER + 3) / 4;
	uint64_t n = (quarter + node_size - 1) / node_size;

	return n < at_least ? at_least : n;
}

/*
 * Leaves: when there are two or more, none is a root and each keeps its
 * fewest nodes, so there are at most records / (fewest a leaf), or one.
 * Branches likewise, a level at a time, each node naming a page below.
 * A commit copies every page it touches and frees the old one, which LMDB
 * reuses only once no snapshot can see it: the pages the last commit
 * freed are not yet free for the next, so the map holds up to three trees
 * at once (live, freed by the last commit, copied by this one), and the
 * free list that names the freed pages, 8 bytes each.
 */
uint64_t
store_lmdb_map_needed(uint64_t records, size_t name_len, size_t value_len,
    size_t page_size)
{
	size_t leaf = (LMDB_NODE_HEADER + name_len + value_len + 1) / 2 * 2 +
	    LMDB_INDEX_SLOT;
	size_t branch = (LMDB_NODE_HEADER + name_len + 1) / 2 * 2 +
	    LMDB_INDEX_SLOT;
	uint64_t per_leaf = fewest_nodes(page_size, leaf, 1);
	uint64_t per_branch = fewest_nodes(page_size, branch, 2);
	uint64_t level = records > per_leaf ? records / per_leaf : 1;
	uint64_t tree = level, pages;

	while (level > 1) {
		level = level > per_branch ? level / per_branch : 1;
		tree += level;
	}
	pages = 3 * tree;
	pages += (pages * 8 + page_size - 1) / page_size + LMDB_FIXED_PAGES;
	return pages * page_size;
}

static int
lmdb_count(struct store *base, size_t *count)
{
	struct store_lmdb *s = (struct store_lmdb *)base;
	MDB_txn *txn;
	MDB_stat st;
	int rc;

	if ((rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn)) != 0)
		return fail(s, "mdb_txn_begin", rc);
	rc = mdb_stat(txn, s->leases, &st);
	mdb_txn_abort(txn);
	if (rc != 0)
		return fail(s, "mdb_stat", rc);
	*count = st.ms_entries;
	return 0;
}

static void
lmdb_close(struct store *base)
{
	struct store_lmdb *s = (struct store_lmdb *)base;

	mdb_env_close(s->env);
	close(s->lock_fd);   /* drops the directory lock */
	free(s);
}

static const struct store_ops lmdb_ops = {
	.commit = lmdb_commit,
	.get = lmdb_get,
	.load = lmdb_load,
	.close = lmdb_close,
	.count = lmdb_count,
};

struct store *
store_lmdb_open(const char *dir, size_t map_size, char *err, size_t err_len)
{
	struct store_lmdb *s = store_lmdb_open_flags(dir, map_size, 0, err,
	    err_len);

	return s != NULL ? &s->base : NULL;
}

struct store *
store_lmdb_store(struct store_lmdb *db)
{
	return &db->base;
}

/*
 * mkdir -p: the missing parents with the umask's mode, the data directory
 * itself 0700 (it holds the handle secrets).
 */
static int
make_dirs(const char *dir)
{
	char path[4096];
	size_t i, len = strlen(dir);

	if (len == 0 || len >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (i = 1; i < len; i++) {
		if (path[i] != '/' || path[i - 1] == '/')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST)
			return -1;
		path[i] = '/';
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

struct store_lmdb *
store_lmdb_open_flags(const char *dir, size_t map_size, unsigned env_flags,
    char *err, size_t err_len)
{
	struct store_lmdb *s;
	char path[4096];
	MDB_txn *txn;
	int rc, dead;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->base.ops = &lmdb_ops;
	if (make_dirs(dir) != 0) {
		snprintf(err, err_len, "cannot create data directory %s: %s",
		    dir, strerror(errno));
		goto free;
	}
	snprintf(path, sizeof(path), "%s/lockd.lock", dir);
	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		snprintf(err, err_len, "cannot open %s: %s", path,
		    strerror(errno));
		goto free;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		snprintf(err, err_len, errno == EWOULDBLOCK ?
		    "data directory %s is in use by another lockd" :
		    "cannot lock data directory %s", dir);
		goto close_lock;
	}
	if ((rc = mdb_env_create(&s->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(s->env, 2)) != 0 ||
	    (rc = mdb_env_set_mapsize(s->env, map_size)) != 0) {
		snprintf(err, err_len, "lmdb: %s", mdb_strerror(rc));
		goto close_env;
	}
	if ((rc = mdb_env_open(s->env, dir, env_flags, 0600)) != 0) {
		snprintf(err, err_len, "cannot open store in %s: %s", dir,
		    mdb_strerror(rc));
		goto close_env;
	}
	/* Clear reader slots left by a crashed process. */
	mdb_reader_check(s->env, &dead);
	if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0)
		goto lmdb_fail;
	if ((rc = mdb_dbi_open(txn, FORMAT_LMDB_LEASES, MDB_CREATE, &s->leases)) != 0 ||
	    (rc = mdb_dbi_open(txn, FORMAT_LMDB_META, MDB_CREATE, &s->meta)) != 0) {
		mdb_txn_abort(txn);
		goto lmdb_fail;
	}
	if ((rc = mdb_txn_commit(txn)) != 0)
		goto lmdb_fail;
	return s;
lmdb_fail:
	snprintf(err, err_len, "cannot open store in %s: %s", dir,
	    mdb_strerror(rc));
close_env:
	if (s->env != NULL)
		mdb_env_close(s->env);
close_lock:
	close(s->lock_fd);
free:
	free(s);
	return NULL;
}
