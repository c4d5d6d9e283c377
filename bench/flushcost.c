/*
 * flushcost.c - what one durable write costs on this disk, by the way each
 * peer of the benchmark makes one: the floor under its durable cycle.
 *
 *   flushcost DIR [COUNT]
 *
 * prints one line of key=value, each the median of COUNT (200) runs, in
 * microseconds, all in DIR (which must be on the disk being measured):
 *
 *   lmdb_commit_us      one LMDB write transaction that puts one 64-byte
 *                       record, in LMDB's default synced mode, as lockd
 *                       commits: the dirty pages, an fdatasync, then the
 *                       meta page through an O_DSYNC descriptor
 *   lmdb_commit_32_us   the same with 32 records (a busy batch)
 *   lmdb_nometasync_us  one record, LMDB opened with MDB_NOMETASYNC: the
 *                       dirty pages and an fdatasync, the meta page
 *                       written unsynced (the experiment's commit when
 *                       the next batch follows and syncs that meta page)
 *   lmdb_nometasync_sync_us  the same and then mdb_env_sync(env, 1): the
 *                       experiment's cost of a batch that nothing follows
 *                       (docs/performance.md, "The journal against
 *                       MDB_NOMETASYNC")
 *   append_sync_us      a 100-byte append to a growing file and an
 *                       fdatasync, as Redis's appendfsync always does
 *   overwrite_sync_us   a 4 KiB write into an already written block and an
 *                       fdatasync: one device flush, nothing else (what
 *                       lockd's preallocated redo journal pays a batch)
 *
 * Bounded: COUNT runs of each, nothing else; the files are removed.
 */
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECORDS 32

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void
die(const char *what, const char *detail)
{
	fprintf(stderr, "flushcost: %s: %s\n", what, detail);
	exit(1);
}

/* One LMDB transaction of `records` puts per run, in env_flags's mode,
 * and an mdb_env_sync after each when `sync`. */
static double
lmdb_commits(const char *dir, int count, int records, unsigned env_flags,
    int sync)
{
	char path[4096], key[16];
	unsigned char val[64];
	double *t = calloc((size_t)count, sizeof(*t)), m;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	int i, r, rc;

	snprintf(path, sizeof(path), "%s/flushcost-lmdb", dir);
	mkdir(path, 0700);
	if (t == NULL || (rc = mdb_env_create(&env)) != 0 ||
	    (rc = mdb_env_set_mapsize(env, (size_t)64 << 20)) != 0 ||
	    (rc = mdb_env_open(env, path, env_flags, 0600)) != 0)
		die("lmdb", t == NULL ? "out of memory" : mdb_strerror(rc));
	memset(val, 0xa5, sizeof(val));
	for (i = 0; i < count; i++) {
		double t0 = now_us();
		if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0 ||
		    (rc = mdb_dbi_open(txn, NULL, 0, &dbi)) != 0)
			die("lmdb", mdb_strerror(rc));
		for (r = 0; r < records; r++) {
			MDB_val k, v;
			snprintf(key, sizeof(key), "lock/%03d",
			    (i * records + r) % 64);
			k.mv_data = key;
			k.mv_size = strlen(key);
			v.mv_data = val;
			v.mv_size = sizeof(val);
			if ((rc = mdb_put(txn, dbi, &k, &v, 0)) != 0)
				die("lmdb", mdb_strerror(rc));
		}
		if ((rc = mdb_txn_commit(txn)) != 0 ||
		    (sync && (rc = mdb_env_sync(env, 1)) != 0))
			die("lmdb", mdb_strerror(rc));
		t[i] = now_us() - t0;
	}
	mdb_env_close(env);
	snprintf(path, sizeof(path), "%s/flushcost-lmdb/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/flushcost-lmdb/lock.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/flushcost-lmdb", dir);
	rmdir(path);
	m = median(t, count);
	free(t);
	return m;
}

/* A write and an fdatasync per run: appended, or over written blocks. */
static double
file_syncs(const char *dir, int count, int append)
{
	char path[4096], buf[4096];
	double *t = calloc((size_t)count, sizeof(*t)), m;
	int fd, i;

	snprintf(path, sizeof(path), "%s/flushcost-file", dir);
	memset(buf, 'x', sizeof(buf));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | (append ? O_APPEND : 0),
	    0600);
	if (t == NULL || fd < 0)
		die("open", path);
	if (!append) {
		/* Written (not merely allocated) blocks: no metadata to
		 * commit when they are written again. */
		for (i = 0; i < 64; i++)
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				die("write", path);
		if (fsync(fd) != 0)
			die("fsync", path);
	}
	for (i = 0; i < count; i++) {
		double t0 = now_us();
		ssize_t n = append ? write(fd, buf, 100) :
		    pwrite(fd, buf, sizeof(buf), (off_t)(i % 64) * 4096);
		if (n < 0 || fdatasync(fd) != 0)
			die("write or fdatasync", path);
		t[i] = now_us() - t0;
	}
	close(fd);
	unlink(path);
	m = median(t, count);
	free(t);
	return m;
}

int
main(int argc, char **argv)
{
	int count = argc > 2 ? atoi(argv[2]) : 200;

	if (argc < 2 || count < 1 || count > 100000) {
		fprintf(stderr, "usage: flushcost DIR [COUNT]\n");
		return 64;
	}
	printf("lmdb_commit_us=%.0f lmdb_commit_32_us=%.0f "
	    "append_sync_us=%.0f overwrite_sync_us=%.0f ",
	    lmdb_commits(argv[1], count, 1, 0, 0),
	    lmdb_commits(argv[1], count, RECORDS, 0, 0),
	    file_syncs(argv[1], count, 1), file_syncs(argv[1], count, 0));
	printf("lmdb_nometasync_us=%.0f lmdb_nometasync_sync_us=%.0f\n",
	    lmdb_commits(argv[1], count, 1, MDB_NOMETASYNC, 0),
	    lmdb_commits(argv[1], count, 1, MDB_NOMETASYNC, 1));
	return 0;
}
