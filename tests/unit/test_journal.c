/*
 * test_journal.c - lockd's store, LMDB behind a redo journal
 * (daemon/store_journal.c), on real files in a fresh temporary directory.
 *
 * A crash is a child process that commits and then _exit()s without
 * closing the store (no checkpoint at close); the parent opens the
 * directory again and compares what the store loads, and what get()
 * answers, with a model of every acknowledged batch.  Covered: replay of
 * the records after the mark, checkpoints and laps of a small journal, a
 * torn last record, a record that failed and is written over, a journal
 * made anew at another size, a full LMDB map (puts refused, deletes taken,
 * nothing acknowledged lost), and the clean close that leaves nothing to
 * replay.
 */
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/format.h"
#include "daemon/store_lmdb.h"    /* the mark: white-box */

#define NAMES 300
#define MAP_BIG (1u << 20)

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/lockd-test-journal-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The model: what every acknowledged batch left, by name index. */
struct model {
	bool held[NAMES];
	unsigned char val[NAMES][STORE_VALUE_MAX];
	uint64_t hwm;
};

/* Nothing here asserts: children use it (see in_child). */
static struct store *
try_open(size_t journal_size, size_t map_size, char *err, size_t err_len)
{
	struct store_journal_config cfg = { map_size, journal_size, 0, false };

	return store_journal_open(dir, &cfg, err, err_len);
}

static struct store *
open_store(size_t journal_size, size_t map_size)
{
	char err[512];
	struct store *s = try_open(journal_size, map_size, err, sizeof(err));

	if (s == NULL)
		fail_msg("store_journal_open: %s", err);
	return s;
}

static void
name_of(int i, char *name, size_t len)
{
	snprintf(name, len, "lock/%03d", i);
}

/* A batch of n random operations, applied to the model once committed. */
static int
random_batch(struct store *s, struct model *m, unsigned *seed, int n)
{
	struct store_batch b;
	struct model next = *m;
	char name[32];
	int i, rc;

	store_batch_init(&b);
	for (i = 0; i < n; i++) {
		int k = (int)(rand_r(seed) % NAMES);
		name_of(k, name, sizeof(name));
		if (rand_r(seed) % 3 == 0) {
			store_batch_add(&b, STORE_DEL, name, strlen(name),
			    NULL, 0);
			next.held[k] = false;
		} else {
			memset(next.val[k], 0, STORE_VALUE_MAX);
			snprintf((char *)next.val[k], STORE_VALUE_MAX,
			    "v%u", rand_r(seed));
			store_batch_add(&b, STORE_PUT, name, strlen(name),
			    next.val[k], STORE_VALUE_MAX);
			next.held[k] = true;
		}
	}
	if (rand_r(seed) % 2) {
		b.has_hwm = true;
		b.hwm = next.hwm = m->hwm + 1 + rand_r(seed) % 5;
	}
	if ((rc = s->ops->commit(s, &b)) == 0)
		*m = next;
	store_batch_free(&b);
	return rc;
}

struct loaded {
	struct model m;
	const char *bad;    /* the first thing load() got wrong */
};

static int
collect(void *ctx, const char *name, size_t len, const void *val,
    size_t val_len)
{
	struct loaded *l = ctx;
	int k;

	if (len != 8 || val_len != STORE_VALUE_MAX) {
		l->bad = "load: a name or value of the wrong length";
		return 0;
	}
	k = atoi(name + 5);
	if (l->m.held[k])
		l->bad = "load: a name twice";
	l->m.held[k] = true;
	memcpy(l->m.val[k], val, val_len);
	return 0;
}

/* Where what the store loads and what get() says differ from the model;
 * NULL where nowhere.  It does not assert, so that children can use it. */
static const char *
mismatch(struct store *s, const struct model *m)
{
	static char why[128];
	struct loaded l;
	unsigned char val[STORE_VALUE_MAX];
	char name[32];
	size_t len;
	int i;

	memset(&l, 0, sizeof(l));
	if (s->ops->load(s, collect, &l, &l.m.hwm) != 0)
		return "load failed";
	if (l.bad != NULL)
		return l.bad;
	if (l.m.hwm != m->hwm)
		return "load: another hwm";
	for (i = 0; i < NAMES; i++) {
		name_of(i, name, sizeof(name));
		snprintf(why, sizeof(why), "%s: ", name);
		if (l.m.held[i] != m->held[i])
			return strcat(why, "load: held or not, wrongly");
		if (s->ops->get(s, name, strlen(name), val, &len) !=
		    (m->held[i] ? 1 : 0))
			return strcat(why, "get: found or not, wrongly");
		if (m->held[i] && (memcmp(l.m.val[i], m->val[i],
		    STORE_VALUE_MAX) != 0 ||
		    memcmp(val, m->val[i], STORE_VALUE_MAX) != 0))
			return strcat(why, "another value");
	}
	return NULL;
}

/* What the store loads and what get() says are the model. */
static void
check(struct store *s, const struct model *m)
{
	const char *why = mismatch(s, m);

	if (why != NULL)
		fail_msg("the store is not the model: %s", why);
}

/*
 * Runs fn in a child, which then dies without closing what it opened: a
 * crash, with no checkpoint at close.  fn fills out (len bytes), which
 * comes back through a pipe, and returns 0 or the exit status that fails
 * the test.  Nothing in fn may assert: a failed assertion in the child
 * would go on with the rest of the tests there.
 */
static void
in_child(int (*fn)(void *ctx, void *out), void *ctx, void *out, size_t len)
{
	int fd[2], status, rc;
	size_t got;
	ssize_t n = 0;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	if ((pid = fork()) == 0) {
		close(fd[0]);
		if ((rc = fn(ctx, out)) != 0)
			_exit(rc);
		if (write(fd[1], out, len) != (ssize_t)len)
			_exit(100);
		_exit(0);   /* no close, no checkpoint */
	}
	close(fd[1]);
	/* More than a pipe's buffer (the model is NAMES values of
	 * STORE_VALUE_MAX bytes) comes in several reads. */
	for (got = 0; got < len; got += (size_t)n)
		if ((n = read(fd[0], (char *)out + got, len - got)) <= 0)
			break;
	assert_int_equal(got, len);
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

struct crash_args {
	size_t journal_size;
	unsigned seed;
	int batches, ops;
};

static int
random_batches(void *ctx, void *out)
{
	struct crash_args *a = ctx;
	struct model *m = out;
	char err[512];
	struct store *s = try_open(a->journal_size, MAP_BIG, err, sizeof(err));
	int i;

	if (s == NULL)
		return 2;
	for (i = 0; i < a->batches; i++)
		if (random_batch(s, m, &a->seed, 1 + (int)(a->seed % a->ops)))
			return 3;
	return 0;
}

/* In a child: open, commit `batches` random batches on top of *m, and
 * crash; *m becomes the model of what was acknowledged. */
static void
crash_run(size_t journal_size, struct model *m, unsigned seed, int batches,
    int ops)
{
	struct crash_args a = { journal_size, seed, batches, ops };

	in_child(random_batches, &a, m, sizeof(*m));
}

static off_t
file_size(const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void
test_journal_replays_what_a_crash_left(void **state)
{
	struct format_mark mark;
	struct store_lmdb *db;
	struct model m;
	struct store *s;

	(void)state;
	memset(&m, 0, sizeof(m));
	crash_run(STORE_JOURNAL_DEFAULT_SIZE, &m, 1, 200, 8);
	assert_int_equal(file_size("lockd.wal"), STORE_JOURNAL_DEFAULT_SIZE);
	s = open_store(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
	/* The clean close checkpointed: LMDB alone has it all now. */
	db = store_lmdb_open_flags(dir, MAP_BIG, 0, (char[256]){ 0 }, 256);
	assert_non_null(db);
	assert_int_equal(store_lmdb_read_mark(db, &mark), 1);
	assert_int_equal(mark.seq, 200);
	assert_true(mark.clean);
	s = store_lmdb_store(db);
	s->ops->close(s);
	s = open_store(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
}

/* 64 KiB: a checkpoint every 1 KiB, a lap every few dozen batches. */
static void
test_journal_small_journal_laps_and_loses_nothing(void **state)
{
	struct model m;
	struct store *s;
	int round;

	(void)state;
	memset(&m, 0, sizeof(m));
	for (round = 0; round < 6; round++) {
		crash_run(STORE_JOURNAL_MIN_SIZE, &m, 100 + (unsigned)round,
		    400, 20);
		s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
		check(s, &m);
		/* Half the rounds go on from a store that replayed. */
		if (round % 2 == 0) {
			unsigned seed = 7 + (unsigned)round;
			int i;
			for (i = 0; i < 100; i++)
				assert_int_equal(random_batch(s, &m, &seed,
				    5), 0);
			check(s, &m);
		}
		s->ops->close(s);
	}
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
}

static void
remove_journal(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/lockd.wal", dir);
	assert_int_equal(unlink(path), 0);
}

/*
 * A journal that is gone after a crash took commits with it that LMDB
 * lacks: lockd refuses to start rather than serve a past state.  After a
 * clean stop it holds nothing, and a new one is made.
 */
static void
test_journal_a_lost_journal_is_refused_unless_lockd_stopped_cleanly(
    void **state)
{
	struct store_journal_config cfg = { MAP_BIG,
	    STORE_JOURNAL_MIN_SIZE, 0, false };
	char err[512];
	struct model m;
	struct store *s;

	(void)state;
	memset(&m, 0, sizeof(m));
	crash_run(STORE_JOURNAL_MIN_SIZE, &m, 31, 30, 5);
	remove_journal();
	assert_null(store_journal_open(dir, &cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "lockd.wal is missing"));
	/* Put back (here: made again from a clean stop of the model). */
	memset(&m, 0, sizeof(m));
	teardown(NULL);
	assert_int_equal(setup(NULL), 0);
	crash_run(STORE_JOURNAL_MIN_SIZE, &m, 32, 30, 5);
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	s->ops->close(s);                 /* clean */
	remove_journal();
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
	/* And a crash after a clean start is a crash again: the mark said
	 * "clean" only until the first record. */
	crash_run(STORE_JOURNAL_MIN_SIZE, &m, 33, 5, 5);
	remove_journal();
	assert_null(store_journal_open(dir, &cfg, err, sizeof(err)));
}

/* Flips one byte of the record at off in the journal. */
static void
damage(off_t off)
{
	char path[128];
	unsigned char c;
	int fd;

	snprintf(path, sizeof(path), "%s/lockd.wal", dir);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void
test_journal_a_torn_last_record_ends_the_replay(void **state)
{
	struct model before, after;
	unsigned char buf[65536];
	struct store *s;
	char path[128];
	ssize_t n, i;
	int fd;

	(void)state;
	memset(&before, 0, sizeof(before));
	crash_run(STORE_JOURNAL_MIN_SIZE, &before, 3, 10, 4);
	/* One more batch in another life, so its record is the last. */
	after = before;
	crash_run(STORE_JOURNAL_MIN_SIZE, &after, 4, 1, 4);
	assert_memory_not_equal(&before, &after, sizeof(before));
	/* Its last written byte, which the CRC covers, goes bad. */
	snprintf(path, sizeof(path), "%s/lockd.wal", dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	for (i = n - 1; i > 0 && buf[i] == 0; i--)
		;
	assert_true(i > 0);
	damage(i);
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &before);
	/* The next record takes the torn one's place and number. */
	{
		unsigned seed = 8;
		assert_int_equal(random_batch(s, &before, &seed, 3), 0);
	}
	s->ops->close(s);
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &before);
	s->ops->close(s);
}

static void
test_journal_another_size_is_made_anew_and_keeps_the_records(void **state)
{
	struct model m;
	struct store *s;
	unsigned seed = 11;
	int i;

	(void)state;
	memset(&m, 0, sizeof(m));
	crash_run(STORE_JOURNAL_MIN_SIZE, &m, 9, 30, 10);
	s = open_store(2 * STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	assert_int_equal(file_size("lockd.wal"), 2 * STORE_JOURNAL_MIN_SIZE);
	check(s, &m);
	for (i = 0; i < 20; i++)
		assert_int_equal(random_batch(s, &m, &seed, 5), 0);
	s->ops->close(s);
	crash_run(2 * STORE_JOURNAL_MIN_SIZE, &m, 13, 50, 10);
	s = open_store(2 * STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
}

/* The descriptor this process has open on the journal. */
static int
journal_fd(void)
{
	char link[64], target[256], want[128];
	int fd;

	snprintf(want, sizeof(want), "%s/lockd.wal", dir);
	for (fd = 3; fd < 1024; fd++) {
		ssize_t n;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, want) == 0)
			return fd;
	}
	fail_msg("no descriptor on %s", want);
	return -1;
}

/*
 * A write that fails (here: the journal's descriptor pointed at /dev/full)
 * fails the batch and changes nothing the store reads back; the next batch
 * takes the failed record's number and place, and a crash after it replays
 * exactly what was acknowledged.
 */
/* The child of the test below: writes that fail, then writes that do. */
static int
failing_writes(void *ctx, void *out)
{
	struct model *m = out, before = *m;
	unsigned *seed = ctx;
	char err[512];
	struct store *s = try_open(STORE_JOURNAL_MIN_SIZE, MAP_BIG, err,
	    sizeof(err));
	int wal, full, saved, i;

	if (s == NULL)
		return 2;
	wal = journal_fd();
	saved = dup(wal);
	full = open("/dev/full", O_WRONLY);
	if (saved < 0 || full < 0 || dup2(full, wal) != wal)
		return 5;
	for (i = 0; i < 3; i++)
		if (random_batch(s, m, seed, 4) == 0)
			return 6;           /* acknowledged? */
	if (memcmp(m, &before, sizeof(*m)) != 0 ||
	    strstr(s->error, "journal write") == NULL)
		return 7;
	if (mismatch(s, m) != NULL)
		return 8;           /* reads show the old state */
	if (dup2(saved, wal) != wal)
		return 9;
	for (i = 0; i < 5; i++)
		if (random_batch(s, m, seed, 4) != 0)
			return 10;
	return 0;
}

static void
test_journal_a_failed_write_is_not_acknowledged_and_written_over(
    void **state)
{
	struct model m;
	struct store *s;
	unsigned seed = 21;

	(void)state;
	memset(&m, 0, sizeof(m));
	crash_run(STORE_JOURNAL_MIN_SIZE, &m, 17, 20, 6);
	in_child(failing_writes, &seed, &m, sizeof(m));
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	check(s, &m);
	s->ops->close(s);
}

/* In a child: fill a 64 KiB map until a put is refused; *out is how many
 * went in. */
static int
fill(void *ctx, void *out)
{
	unsigned char val[STORE_VALUE_MAX];
	struct store_batch b;
	char err[512], name[32];
	struct store *s = try_open(STORE_JOURNAL_MIN_SIZE, 64 * 1024, err,
	    sizeof(err));
	int *n = out;

	(void)ctx;
	if (s == NULL)
		return 2;
	memset(val, 'v', sizeof(val));
	store_batch_init(&b);
	for (*n = 0; *n < 20000; ++*n) {
		snprintf(name, sizeof(name), "full/%05d", *n);
		store_batch_reset(&b);
		store_batch_add(&b, STORE_PUT, name, strlen(name), val,
		    sizeof(val));
		if (s->ops->commit(s, &b) != 0)
			break;
	}
	/* Refused for want of room, and again without a delete. */
	if (strstr(s->error, "MDB_MAP_FULL") == NULL ||
	    s->ops->commit(s, &b) == 0)
		return 3;
	return 0;
}

static int
fill_until_full(void)
{
	int n = 0;

	in_child(fill, NULL, &n, sizeof(n));
	return n;
}

/*
 * LMDB's map fills at a checkpoint: from then on a batch with a put is
 * refused with MDB_MAP_FULL, one with deletes only is taken, nothing
 * acknowledged is lost across a crash, and once the deletes make room,
 * puts are taken again.
 */
static void
test_journal_a_full_map_refuses_puts_takes_deletes_loses_nothing(
    void **state)
{
	unsigned char val[STORE_VALUE_MAX], got[STORE_VALUE_MAX];
	int n = fill_until_full(), i;
	struct store_batch b;
	struct store *s;
	char name[32];
	size_t len;

	(void)state;
	assert_true(n > 10 && n < 20000);
	/* Everything acknowledged is there after the crash. */
	s = open_store(STORE_JOURNAL_MIN_SIZE, 64 * 1024);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "full/%05d", i);
		assert_int_equal(s->ops->get(s, name, strlen(name), got, &len),
		    1);
	}
	snprintf(name, sizeof(name), "full/%05d", n);
	assert_int_equal(s->ops->get(s, name, strlen(name), got, &len), 0);
	/* A batch with a put is refused whole, but for its settled deletes:
	 * releases whose replies are out already.  A delete not settled
	 * (a reply about its lock waited for the batch) is refused too. */
	memset(val, 'v', sizeof(val));
	store_batch_init(&b);
	store_batch_add(&b, STORE_DEL, "full/00000", 10, NULL, 0);
	store_batch_settle(&b);
	store_batch_add(&b, STORE_DEL, "full/00002", 10, NULL, 0);
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "new/%05d", i);
		store_batch_add(&b, STORE_PUT, name, strlen(name), val,
		    sizeof(val));
	}
	assert_true(s->ops->commit(s, &b) != 0);
	assert_non_null(strstr(s->error, "MDB_MAP_FULL"));
	assert_int_equal(s->ops->get(s, "full/00000", 10, got, &len), 0);
	assert_int_equal(s->ops->get(s, "full/00001", 10, got, &len), 1);
	assert_int_equal(s->ops->get(s, "full/00002", 10, got, &len), 1);
	assert_int_equal(s->ops->get(s, "new/00000", 9, got, &len), 0);
	/* Deletes alone are taken, and make room; then a put is. */
	for (i = 1; i < n; i++) {
		snprintf(name, sizeof(name), "full/%05d", i);
		store_batch_reset(&b);
		store_batch_add(&b, STORE_DEL, name, strlen(name), NULL, 0);
		assert_int_equal(s->ops->commit(s, &b), 0);
	}
	store_batch_reset(&b);
	store_batch_add(&b, STORE_PUT, "again", 5, val, sizeof(val));
	assert_int_equal(s->ops->commit(s, &b), 0);
	s->ops->close(s);
	s = open_store(STORE_JOURNAL_MIN_SIZE, 64 * 1024);
	assert_int_equal(s->ops->get(s, "again", 5, got, &len), 1);
	assert_int_equal(s->ops->get(s, "full/00000", 10, got, &len), 0);
	s->ops->close(s);
	store_batch_free(&b);
}

/* Batches of BIG_OPS operations, 2/3 of them puts of 64-byte values:
 * about 110 KiB each, more than the whole 64 KiB journal. */
#define BIG_OPS 2000
/* A map so large that the journal would take such a batch, were it not
 * larger than the journal: ample() asks for two pages a name. */
#define MAP_AMPLE (64u << 20)

struct big_args {
	unsigned seed;
	uint64_t direct;    /* out: the store's direct commits */
};

/* Small batches around batches larger than the journal, then a crash. */
static int
big_batches(void *ctx, void *out)
{
	struct big_args *a = ctx;
	struct model *m = out;
	struct store_stats st;
	char err[512];
	struct store *s = try_open(STORE_JOURNAL_MIN_SIZE, MAP_AMPLE, err,
	    sizeof(err));
	int i;

	if (s == NULL)
		return 2;
	for (i = 0; i < 30; i++)
		if (random_batch(s, m, &a->seed,
		    i % 10 == 5 ? BIG_OPS : 1 + i % 7) != 0)
			return 3;
	s->ops->stats(s, &st);
	a->direct = st.direct_commits;
	return a->direct == 3 ? 0 : 4;
}

/*
 * A batch larger than the journal commits, whole, straight into LMDB (with
 * what the journal held before it), and the small ones around it go on
 * through the journal: nothing acknowledged is lost across a crash.
 */
static void
test_journal_a_batch_larger_than_the_journal_commits(void **state)
{
	struct big_args a = { 42, 0 };
	struct store_batch b;
	struct store_stats st;
	struct model m;
	struct store *s;
	unsigned seed = 9;

	(void)state;
	memset(&m, 0, sizeof(m));
	in_child(big_batches, &a, &m, sizeof(m));
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_AMPLE);
	check(s, &m);
	/* And in this process: a big batch, then its stats. */
	assert_int_equal(random_batch(s, &m, &seed, BIG_OPS), 0);
	assert_int_equal(random_batch(s, &m, &seed, 3), 0);
	check(s, &m);
	s->ops->stats(s, &st);
	assert_int_equal(st.direct_commits, 1);
	assert_true(st.journal_bytes > 0);    /* the small one: journaled */
	/* The batch really was larger than the journal. */
	store_batch_init(&b);
	while (b.len <= STORE_JOURNAL_MIN_SIZE)
		store_batch_add(&b, STORE_PUT, "lock/000", 8, m.val[0],
		    STORE_VALUE_MAX);
	assert_true(b.count < BIG_OPS);
	store_batch_free(&b);
	s->ops->close(s);
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_AMPLE);
	check(s, &m);
	s->ops->close(s);
}

/* ---- keys of every kind: names and holder keys of up to 264 bytes ---- */

#define KEYED_NAMES 4
#define KEYED_FENCES 5
#define KEYED (KEYED_NAMES * (1 + KEYED_FENCES))

/* The model of a keyed run: key i's value, when present. */
struct keyed {
	bool held[KEYED];
	unsigned char val[KEYED][FORMAT_RECORD_FIXED];
};

/* Key i: a name, or one of its holders' keys (daemon/format.h). */
static size_t
keyed_key(int i, char key[FORMAT_KEY_MAX])
{
	static const uint64_t fences[KEYED_FENCES] = { 1, 2, 256,
	    1ULL << 40, CORE_FENCE_MAX };
	char name[CORE_NAME_MAX];
	size_t len;
	int k = i / (1 + KEYED_FENCES), f = i % (1 + KEYED_FENCES);

	switch (k) {
	case 0:
		len = 1;
		memcpy(name, "a", 1);
		break;
	case 1:
		len = 2;
		memcpy(name, "ab", 2);
		break;
	case 2:   /* the longest name: its holder keys are 264 bytes */
		len = CORE_NAME_MAX;
		memset(name, 'm', len);
		break;
	default:
		len = 2;
		memcpy(name, "a\x01", 2);
		break;
	}
	return format_key(name, len, f == 0 ? 0 : fences[f - 1], key);
}

struct keyed_args {
	unsigned seed;
	int batches, ops;
	bool clean;          /* close the store: a checkpoint into LMDB */
	bool names_only;     /* no holder keys: what an older lockd wrote */
};

static int
keyed_batches(void *ctx, void *out)
{
	struct keyed_args *a = ctx;
	struct keyed *m = out, next;
	char err[512], key[FORMAT_KEY_MAX];
	struct store *s = try_open(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG, err,
	    sizeof(err));
	struct store_batch b;
	int i, j;

	if (s == NULL)
		return 2;
	store_batch_init(&b);
	for (i = 0; i < a->batches; i++) {
		next = *m;
		store_batch_reset(&b);
		for (j = 0; j < a->ops; j++) {
			int k = (int)(rand_r(&a->seed) % KEYED);
			size_t len;
			if (a->names_only)
				k -= k % (1 + KEYED_FENCES);
			len = keyed_key(k, key);
			if (rand_r(&a->seed) % 3 == 0) {
				store_batch_add(&b, STORE_DEL, key, len,
				    NULL, 0);
				next.held[k] = false;
				continue;
			}
			memset(next.val[k], 0, sizeof(next.val[k]));
			snprintf((char *)next.val[k], sizeof(next.val[k]),
			    "v%u", rand_r(&a->seed));
			store_batch_add(&b, STORE_PUT, key, len, next.val[k],
			    sizeof(next.val[k]));
			next.held[k] = true;
		}
		if (b.count != (size_t)a->ops || s->ops->commit(s, &b) != 0)
			return 3;
		*m = next;
	}
	store_batch_free(&b);
	if (a->clean)
		s->ops->close(s);
	return 0;
}

struct keyed_loaded {
	struct keyed m;
	char last[FORMAT_KEY_MAX];
	size_t last_len, count;
	const char *bad;
};

static int
keyed_collect(void *ctx, const char *key, size_t len, const void *val,
    size_t val_len)
{
	struct keyed_loaded *l = ctx;
	char want[FORMAT_KEY_MAX];
	int i;

	if (l->count++ > 0 && format_key_compare(l->last, l->last_len, key,
	    len) >= 0)
		l->bad = "load: a key out of key order (or twice)";
	memcpy(l->last, key, len);
	l->last_len = len;
	for (i = 0; i < KEYED; i++)
		if (keyed_key(i, want) == len && memcmp(want, key, len) == 0)
			break;
	if (i == KEYED || val_len != FORMAT_RECORD_FIXED) {
		l->bad = "load: a key or value not written";
		return 0;
	}
	l->m.held[i] = true;
	memcpy(l->m.val[i], val, val_len);
	return 0;
}

/* What the store loads, in key order, and get() says are the model. */
static void
keyed_check(struct store *s, const struct keyed *m)
{
	struct keyed_loaded l;
	unsigned char val[STORE_VALUE_MAX];
	char key[FORMAT_KEY_MAX];
	uint64_t hwm;
	size_t len, vlen;
	int i;

	memset(&l, 0, sizeof(l));
	assert_int_equal(s->ops->load(s, keyed_collect, &l, &hwm), 0);
	if (l.bad != NULL)
		fail_msg("%s", l.bad);
	for (i = 0; i < KEYED; i++) {
		len = keyed_key(i, key);
		if (l.m.held[i] != m->held[i])
			fail_msg("key %d (%zu bytes): loaded %d, want %d", i,
			    len, l.m.held[i], m->held[i]);
		assert_int_equal(s->ops->get(s, key, len, val, &vlen),
		    m->held[i] ? 1 : 0);
		if (m->held[i]) {
			assert_memory_equal(l.m.val[i], m->val[i],
			    FORMAT_RECORD_FIXED);
			assert_memory_equal(val, m->val[i],
			    FORMAT_RECORD_FIXED);
		}
	}
}

/*
 * Names and holder keys up to 264 bytes go through the journal and its
 * replay after a kill -9 (the child's _exit), through a checkpoint into
 * LMDB, and load in key order with LMDB's and the journal's keys merged:
 * a name's holder keys right after it, every key once.
 */
static void
test_journal_holder_keys_survive_a_crash_and_load_in_key_order(void **state)
{
	struct keyed_args a = { 5, 40, 6, false, false };
	struct keyed m;
	struct store *s;
	int round;

	(void)state;
	memset(&m, 0, sizeof(m));
	for (round = 0; round < 6; round++) {
		/* A clean stop leaves it all in LMDB; a crash, in the
		 * journal, on top of what LMDB has (each check here closes
		 * cleanly after it). */
		a.clean = round % 3 == 0;
		in_child(keyed_batches, &a, &m, sizeof(m));
		a.seed += 100;
		s = open_store(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG);
		keyed_check(s, &m);
		s->ops->close(s);
	}
	s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
	keyed_check(s, &m);
	s->ops->close(s);
}

/* What the child of a kill -9 run tells, before and after each commit. */
struct keyed_note {
	char what;           /* 'i': about to commit this; 'a': committed */
	struct keyed m;
};

/*
 * In a child: commits keyed batches on top of *m for ever, noting each
 * one's state before its commit and after it, until the parent kills it.
 */
static void
keyed_forever(int fd, struct keyed m, unsigned seed)
{
	char err[512], key[FORMAT_KEY_MAX];
	struct store *s = try_open(STORE_JOURNAL_MIN_SIZE, MAP_BIG, err,
	    sizeof(err));
	struct keyed_note note;
	struct store_batch b;
	int j;

	if (s == NULL)
		_exit(2);
	store_batch_init(&b);
	for (;;) {
		note.m = m;
		store_batch_reset(&b);
		for (j = 0; j < 1 + (int)(seed % 9); j++) {
			int k = (int)(rand_r(&seed) % KEYED);
			size_t len = keyed_key(k, key);
			if (rand_r(&seed) % 3 == 0) {
				store_batch_add(&b, STORE_DEL, key, len,
				    NULL, 0);
				note.m.held[k] = false;
				continue;
			}
			memset(note.m.val[k], 0, sizeof(note.m.val[k]));
			snprintf((char *)note.m.val[k], sizeof(note.m.val[k]),
			    "v%u", rand_r(&seed));
			store_batch_add(&b, STORE_PUT, key, len,
			    note.m.val[k], sizeof(note.m.val[k]));
			note.m.held[k] = true;
		}
		note.what = 'i';
		if (write(fd, &note, sizeof(note)) != (ssize_t)sizeof(note))
			_exit(3);
		if (s->ops->commit(s, &b) != 0)
			_exit(4);
		m = note.m;
		note.what = 'a';
		if (write(fd, &note, sizeof(note)) != (ssize_t)sizeof(note))
			_exit(3);
	}
}

static bool
keyed_equal(const struct keyed *a, const struct keyed *b)
{
	int i;

	for (i = 0; i < KEYED; i++)
		if (a->held[i] != b->held[i] || (a->held[i] &&
		    memcmp(a->val[i], b->val[i], sizeof(a->val[i])) != 0))
			return false;
	return true;
}

/*
 * A real kill -9 at a random moment - between commits, in a write, in a
 * sync, in a checkpoint of the smallest journal - of a child writing
 * names and 264-byte holder keys: the store it leaves is the last
 * acknowledged state, or the one whose commit was under way.
 */
static void
test_journal_kill_9_mid_commit_keeps_every_acknowledged_key(void **state)
{
	struct keyed m, acked, intent;
	struct keyed_loaded l;
	struct keyed_note note;
	struct store *s;
	unsigned seed = 77;
	int round, fd[2], status, notes;
	uint64_t hwm;
	pid_t pid;

	(void)state;
	assert_true(sizeof(note) <= 4096);   /* one atomic pipe write */
	memset(&m, 0, sizeof(m));
	for (round = 0; round < 8; round++) {
		assert_int_equal(pipe(fd), 0);
		if ((pid = fork()) == 0) {
			close(fd[0]);
			keyed_forever(fd[1], m, seed + (unsigned)round);
		}
		close(fd[1]);
		usleep(5000 + (useconds_t)(rand_r(&seed) % 40000));
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		acked = intent = m;
		notes = 0;
		while (read(fd[0], &note, sizeof(note)) ==
		    (ssize_t)sizeof(note)) {
			if (note.what == 'a')
				acked = note.m;
			else
				intent = note.m;
			notes++;
		}
		close(fd[0]);
		s = open_store(STORE_JOURNAL_MIN_SIZE, MAP_BIG);
		memset(&l, 0, sizeof(l));
		assert_int_equal(s->ops->load(s, keyed_collect, &l, &hwm), 0);
		if (l.bad != NULL)
			fail_msg("round %d: %s", round, l.bad);
		if (keyed_equal(&l.m, &acked))
			m = acked;
		else if (keyed_equal(&l.m, &intent))
			m = intent;    /* its commit went in, unacknowledged */
		else
			fail_msg("round %d (%d notes): the store is neither "
			    "the last acknowledged state nor the next", round,
			    notes);
		keyed_check(s, &m);
		s->ops->close(s);   /* the next child goes on from here */
	}
}

/* Whether a record's operations hold a holder's key (one with a NUL). */
static bool
ops_have_holder_key(const unsigned char *ops, size_t len)
{
	struct store_batch b;
	struct store_batch_op op;
	size_t pos = 0;

	store_batch_init(&b);
	b.ops = (char *)ops;
	b.len = len;
	while (store_batch_next(&b, &pos, &op))
		if (memchr(op.name, '\0', op.name_len) != NULL)
			return true;
	return false;
}

/*
 * A record takes the new magic, "LKW2", only when it holds a holder's
 * key; one without takes the old one, "LKWL", which a lockd before holder
 * keys replays - so a journal of plain locks stays one it can read after
 * a crash.  Records of both magics, one after the other, replay here; a
 * magic nobody knows ends the journal.
 */
static void
test_journal_takes_the_new_magic_only_for_holder_keys(void **state)
{
	struct keyed_args a = { 9, 12, 4, false, true };
	unsigned char hdr[FORMAT_JOURNAL_HEADER], ops[4096];
	struct format_journal_header h;
	char path[128];
	struct keyed m;
	struct store *s;
	off_t off = 0;
	int fd, old = 0, new = 0;

	(void)state;
	memset(&m, 0, sizeof(m));
	in_child(keyed_batches, &a, &m, sizeof(m));    /* names only */
	a.names_only = false;
	a.seed = 10;
	in_child(keyed_batches, &a, &m, sizeof(m));    /* and holders */
	snprintf(path, sizeof(path), "%s/lockd.wal", dir);
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	while (pread(fd, hdr, sizeof(hdr), off) == (ssize_t)sizeof(hdr) &&
	    format_journal_decode(hdr, &h) && h.len > 0) {
		assert_true(h.len <= sizeof(ops));
		assert_int_equal(pread(fd, ops, h.len,
		    off + FORMAT_JOURNAL_HEADER), h.len);
		if (ops_have_holder_key(ops, h.len)) {
			assert_memory_equal(hdr, "LKW2", 4);
			new++;
		} else {
			assert_memory_equal(hdr, "LKWL", 4);
			old++;
		}
		off += FORMAT_JOURNAL_HEADER + h.len;
	}
	close(fd);
	assert_int_equal(old + new, 24);
	assert_true(old >= 12 && new > 0);
	s = open_store(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG);
	keyed_check(s, &m);
	s->ops->close(s);

	/* Nothing replays an unknown magic: the journal ends there. */
	memset(&m, 0, sizeof(m));
	teardown(NULL);
	assert_int_equal(setup(NULL), 0);
	in_child(keyed_batches, &a, &m, sizeof(m));
	snprintf(path, sizeof(path), "%s/lockd.wal", dir);   /* a new dir */
	assert_true((fd = open(path, O_RDWR)) >= 0);
	assert_int_equal(pwrite(fd, "LKW3", 4, 0), 4);
	close(fd);
	s = open_store(STORE_JOURNAL_DEFAULT_SIZE, MAP_BIG);
	memset(&m, 0, sizeof(m));
	keyed_check(s, &m);
	s->ops->close(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_journal_replays_what_a_crash_left, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_small_journal_laps_and_loses_nothing, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_a_torn_last_record_ends_the_replay, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_a_failed_write_is_not_acknowledged_and_written_over,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_a_lost_journal_is_refused_unless_lockd_stopped_cleanly,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_another_size_is_made_anew_and_keeps_the_records,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_a_full_map_refuses_puts_takes_deletes_loses_nothing,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_a_batch_larger_than_the_journal_commits,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_holder_keys_survive_a_crash_and_load_in_key_order,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_takes_the_new_magic_only_for_holder_keys,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_journal_kill_9_mid_commit_keeps_every_acknowledged_key,
		    setup, teardown),
	};

	return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
