/*
 * test_powerloss.c - build/tests/crash_powerloss: what a power failure
 * leaves.  kill -9 keeps the page cache, so it cannot tell a missing fsync;
 * here lockd runs under the LD_PRELOAD shim (powerloss_shim.c), which
 * journals every write and sync of its two data files - LMDB's data.mdb
 * and the store's redo journal lockd.wal - in one stream.  After the
 * workload has been told its grants, lockd is killed, and crash images are
 * built from the shim's journal (journal.h): the files as they were when
 * the run began, every write synced before the cut, and a random subset -
 * some torn at 512-byte sectors - of the writes after it, both files cut
 * at the same record.  Half the images are cut where lockd died, half at a
 * random record of the shim's journal, the clients' replies being placed
 * in it by its size when each was read.
 *
 * lockd runs with the smallest lockd.wal it takes (64 KiB): it checkpoints
 * into LMDB every KiB, and the journal goes round to its start within the
 * test (the figures count both), so that the images see LMDB and the
 * journal hand over to each other, and records overwritten in place.
 *
 * Each image is opened with the store lockd uses (store_journal_open:
 * LMDB, then the journal's records after its mark) in a child process, and
 * judged by the checker (checker.h): it opens; no told fence is above its
 * high-water mark; every grant and renewal told before the cut is in it,
 * unless released or certainly expired by then.  One image of each cut
 * where lockd died becomes the data directory of the next run: the real
 * lockd recovers from it, under the same checks as after a kill -9.
 *
 *   crash_powerloss [--cycles N] [--images N] [--seed S] [cmocka filter]
 *
 * Three guards must FAIL (lockd-faulty): LMDB with MDB_NOSYNC, so that a
 * checkpoint's pages and mark need not reach the disk while the journal
 * takes them as written and goes on over their records; a journal never
 * fdatasync'd; and lockd replying before its commit.
 *
 * With LOCKD_EXPERIMENT=nometasync in the environment it runs instead the
 * same test on the experiment of docs/performance.md ("The journal
 * against MDB_NOMETASYNC"): lockd-faulty with LMDB alone, MDB_NOMETASYNC
 * and replies a batch late (LOCKD_FAULT=lmdb_nometasync), the images
 * opened with LMDB alone; and its guards, which must FAIL: the same store
 * replying at once (lmdb_nometasync_nolag), and with MDB_NOSYNC.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/bytes.h"
#include "daemon/format.h"
#include "daemon/store.h"
#include "tests/crash/checker.h"
#include "tests/crash/crashlib.h"
#include "tests/crash/journal.h"
#include "tests/lib/rng.h"
#include "tests/crash/workload.h"
#include "tests/lib/harness.h"

#define NAMES 16
#define CLIENTS 32
/* A run's length.  Up to 500 ms rather than 600: the busier workload of
 * powerloss() commits more in 500 than the old one did in 600, and the
 * time saved pays for the two files' images and the fourth test. */
#define RUN_MIN_MS 100
#define RUN_MAX_MS 500
#define GUARD_CYCLES 20     /* at most: a guard stops at its first catch */
#define INSPECT_TIMEOUT_MS 10000
#define IMAGE_MAP_SIZE (1UL << 30)
/* lockd.wal: the smallest journal lockd takes, so that its 1/64 - a
 * checkpoint every KiB - and its laps come within a short run. */
#define JOURNAL_SIZE 65536
#define JOURNAL_SIZE_ARG "65536"
/*
 * The warm-up (see warm_up()): WARMUP_ROUNDS rounds of one RENEW of each
 * of WARMUP_NAMES names ("warmup/NN"), sent together.  A RENEW is an
 * operation of 3 + 9 + 64 bytes; a record adds a 32-byte header to the
 * operations of a batch, and lockd batches what arrives together (and
 * writes a name once a batch, hence the names).  A round is then one or
 * two records, 1.2 KiB, and with the TRYs and RELEASEs the warm-up ends
 * near 55 KiB, 7/8 of the journal.  Were every RENEW a record of its own,
 * it would write 76 KiB and end past the start: the laps would come a
 * run or two later.
 */
#define WARMUP_NAMES 16
#define WARMUP_ROUNDS 44

static struct crash_args args = { 0, 10, 13, 0, false };
/* The MDB_NOMETASYNC experiment: no lockd.wal, images opened with LMDB
 * alone. */
static bool lmdb_alone;
#define LMDB_ALONE_FAULT "lmdb_nometasync"
#define NO_FILE 0xffffu   /* a file id the shim never gives */

static const char *const names[NAMES] = {
	"power/0", "power/1", "power/2", "power/3",
	"power/4", "power/5", "power/6", "power/7",
	"power/8", "power/9", "power/10", "power/11",
	"power/12", "power/13", "power/14", "power/15",
};

struct pl_result {
	long cycles, images, full_cuts, prefix_cuts, unrecoverable;
	uint64_t journal_records, durable_writes, volatile_kept,
	    volatile_dropped, torn;
	uint64_t data_syncs;       /* syncs of data.mdb: checkpoints */
	uint64_t wal_writes, wal_bytes, wal_laps;   /* lockd.wal */
	uint64_t wal_last;         /* offset of the last write to it */
	struct wl_stats wl;
};

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC, in ms: records keep expiries on the
 * boot clock, the checker's times are monotonic. */
static int64_t
boot_offset(void)
{
	struct timespec b, m;

	clock_gettime(CLOCK_BOOTTIME, &b);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return ((int64_t)b.tv_sec - m.tv_sec) * 1000 +
	    (b.tv_nsec - m.tv_nsec) / 1000000;
}

/*
 * The files of a data directory that the shim records and the images are
 * made of: LMDB's data file and the store's redo journal.  The others
 * (lock.mdb, lockd.lock) hold nothing a restart reads.
 */
static const char *const data_files[] = { "data.mdb", "lockd.wal" };
#define DATA_FILES (sizeof(data_files) / sizeof(data_files[0]))

static int
copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;
	int rc = 0;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (n < 0)
		rc = -1;
	close(in);
	if (close(out) != 0)
		rc = -1;
	return rc;
}

/* Copies the data files of directory `from` into `to`; one that `from`
 * lacks is removed from `to`. */
static int
copy_data(const char *from, const char *to)
{
	char src[512], dst[512];
	size_t i;

	for (i = 0; i < DATA_FILES; i++) {
		snprintf(src, sizeof(src), "%s/%s", from, data_files[i]);
		snprintf(dst, sizeof(dst), "%s/%s", to, data_files[i]);
		if (access(src, F_OK) != 0)
			unlink(dst);
		else if (copy_file(src, dst) != 0)
			return -1;
	}
	return 0;
}

/* Empties a data directory: the data files, LMDB's lock file, lockd's, and
 * a journal lockd may have left half made. */
static void
clear_dir(const char *dir)
{
	static const char *const files[] = { "data.mdb", "lockd.wal",
	    "lockd.wal.tmp", "lock.mdb", "lockd.lock" };
	char path[512];
	size_t i;

	mkdir(dir, 0700);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
}

/* ---- looking into an image ---------------------------------------------- */

/* The owner label and the rid of one record, for the Owner and Rid
 * checks. */
struct tags {
	uint8_t owner_len;
	char owner[64];
	uint8_t rid_len;
	char rid[64];
};

/* An image, key by key (daemon/format.h): each name's own record and
 * those under its holder keys. */
struct inspected {
	uint64_t hwm;
	struct chk_record rec[NAMES];
	struct tags tags[NAMES];                     /* the name's own */
	struct tags holder_tags[NAMES][CHK_MAX_HOLDERS];
	int bad;            /* records lockd could not read */
};

struct load_ctx {
	struct inspected *out;
	int64_t offset;
};

static int
load_one(void *ctx, const char *key, size_t key_len, const void *val,
    size_t val_len)
{
	struct load_ctx *l = ctx;
	const unsigned char *p = val;
	struct chk_record *r;
	struct tags *t;
	uint64_t key_fence, fence;
	size_t name_len;
	bool multi;
	int i;

	if (format_key_split(key, key_len, &name_len, &key_fence) ==
	    FORMAT_KEY_BAD) {
		l->out->bad++;
		return 0;
	}
	for (i = 0; i < NAMES; i++)
		if (strlen(names[i]) == name_len &&
		    memcmp(names[i], key, name_len) == 0)
			break;
	if (i == NAMES || val_len < FORMAT_RECORD_FIXED ||
	    val_len != FORMAT_RECORD_FIXED + (size_t)p[88] + p[89] ||
	    p[0] != FORMAT_RECORD_VERSION) {
		l->out->bad++;
		return 0;
	}
	fence = bytes_get_le64(p + 8);
	multi = bytes_get_le16(p + 90) > 1 || (p[1] & 2) != 0;
	r = &l->out->rec[i];
	if (key_fence != 0) {
		/* A holder's key: that holder's record, of a MULTI name. */
		if (fence != key_fence || !multi ||
		    r->nholders == CHK_MAX_HOLDERS) {
			l->out->bad++;
			return 0;
		}
		t = &l->out->holder_tags[i][r->nholders];
		r->holders[r->nholders].fence = fence;
		r->holders[r->nholders++].expiry =
		    (int64_t)bytes_get_le64(p + 32) - l->offset;
	} else {
		/* A free name in lock-delay (fence 0) holds no lease. */
		if (fence == 0)
			return 0;
		if (multi) {
			l->out->bad++;
			return 0;
		}
		t = &l->out->tags[i];
		r->present = true;
		r->fence = fence;
		r->expiry = (int64_t)bytes_get_le64(p + 32) - l->offset;
	}
	/* The owner label and the rid, for the Owner and Rid checks
	 * (format.h: lengths at 88 and 89, the bytes from 96 on). */
	t->owner_len = p[88] <= 64 ? p[88] : 64;
	memcpy(t->owner, p + 96, t->owner_len);
	t->rid_len = p[89] <= 64 ? p[89] : 64;
	memcpy(t->rid, p + 96 + p[88], t->rid_len);
	return 0;
}

/*
 * Opens the image in dir with lockd's store (LMDB behind lockd.wal) in a
 * child process - an image may crash whoever reads it - and reads every
 * record.  0, or -1 with why.
 */
static int
inspect(const char *dir, struct inspected *out, char *why, size_t why_len)
{
	int fds[2], status = 0;
	int64_t deadline;
	size_t got = 0;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	if (pipe(fds) != 0) {
		snprintf(why, why_len, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == 0) {
		struct load_ctx l = { out, boot_offset() };
		struct store_journal_config cfg = {
			.map_size = IMAGE_MAP_SIZE,
			.journal_size = JOURNAL_SIZE,
		};
		char err[512];
		struct store *s;

		/* Die of what the image does: not into cmocka's handlers,
		 * nor the harness's watchdog (it would kill the parent's
		 * lockd). */
		static const int sigs[] = { SIGBUS, SIGSEGV, SIGILL, SIGFPE,
		    SIGABRT, SIGALRM };
		size_t i;

		for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		close(fds[0]);
		alarm(INSPECT_TIMEOUT_MS / 1000);
		s = lmdb_alone ? store_lmdb_open(dir, IMAGE_MAP_SIZE, err,
		    sizeof(err)) : store_journal_open(dir, &cfg, err,
		    sizeof(err));
		if (s == NULL) {
			if (write(fds[1], err, strlen(err)) < 0)
				_exit(3);
			_exit(2);
		}
		if (s->ops->load(s, load_one, &l, &out->hwm) != 0) {
			if (write(fds[1], s->error, strlen(s->error)) < 0)
				_exit(3);
			_exit(2);
		}
		if (write(fds[1], out, sizeof(*out)) != (ssize_t)sizeof(*out))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		snprintf(why, why_len, "fork: %s", strerror(errno));
		return -1;
	}
	deadline = harness_now_ms() + INSPECT_TIMEOUT_MS;
	{
		char buf[sizeof(*out) + 512];
		for (;;) {
			struct pollfd p = { fds[0], POLLIN, 0 };
			int64_t left = deadline - harness_now_ms();
			ssize_t n;
			if (left <= 0 || got == sizeof(buf))
				break;
			if (poll(&p, 1, (int)left) <= 0)
				continue;
			if ((n = read(fds[0], buf + got, sizeof(buf) - got)) <= 0)
				break;
			got += (size_t)n;
		}
		close(fds[0]);
		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (harness_now_ms() > deadline) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				break;
			}
			harness_sleep_ms(1);
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		    got == sizeof(*out)) {
			memcpy(out, buf, sizeof(*out));
			if (out->bad > 0) {
				snprintf(why, why_len, "%d unreadable records",
				    out->bad);
				return -1;
			}
			return 0;
		}
		if (WIFSIGNALED(status))
			snprintf(why, why_len, "reading it died of signal %d",
			    WTERMSIG(status));
		else
			snprintf(why, why_len, "%.*s", (int)(got < 400 ? got :
			    400), buf);
		return -1;
	}
}

/* Every record of name k in an image, for the Owner and Rid checks. */
static void
tags_seen(struct chk *chk, int k, const struct inspected *in)
{
	const struct chk_record *r = &in->rec[k];
	unsigned h;

	if (r->present) {
		chk_owner_seen(chk, k, r->fence, in->tags[k].owner,
		    in->tags[k].owner_len);
		chk_rid_seen(chk, k, r->fence, in->tags[k].rid,
		    in->tags[k].rid_len);
	}
	for (h = 0; h < r->nholders; h++) {
		const struct tags *t = &in->holder_tags[k][h];
		chk_owner_seen(chk, k, r->holders[h].fence, t->owner,
		    t->owner_len);
		chk_rid_seen(chk, k, r->holders[h].fence, t->rid, t->rid_len);
	}
}

/* ---- the runs ------------------------------------------------------------ */

static void
set_shim(const char *journal)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[1024];

	setenv("LD_PRELOAD", crash_sibling("powerloss_shim.so"), 1);
	setenv("LOCKD_PL_JOURNAL", journal, 1);
	/* An ASan lockd (SANITIZE=1) refuses a library loaded before its
	 * runtime unless told otherwise. */
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0",
	    asan != NULL ? asan : "", asan != NULL && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
}

static void
unset_shim(void)
{
	unsetenv("LD_PRELOAD");
	unsetenv("LOCKD_PL_JOURNAL");
}

/*
 * What the store did in one run, from the record stream: a sync of
 * data.mdb is an LMDB commit that reached the disk, which lockd makes only
 * at a checkpoint; a write to lockd.wal at an offset
 * below the one before it, in this run or the one before, went round to the
 * start of the file.  Across runs that may count a lap too many: when the
 * record that went round was the last of its run, unsynced, and left out
 * of the image, the next run writes its stead where the one before stood,
 * and goes round later again.
 */
static void
count_store_work(const struct pl_journal *j, unsigned data_id,
    unsigned wal_id, struct pl_result *res)
{
	size_t i;

	for (i = 0; i < j->count; i++) {
		const struct pl_op *op = &j->ops[i];

		if (op->file == data_id && op->kind == PL_SYNC)
			res->data_syncs++;
		if (op->file != wal_id || op->kind != PL_WRITE)
			continue;
		res->wal_writes++;
		res->wal_bytes += op->len;
		if (res->wal_writes > 1 && op->offset < res->wal_last)
			res->wal_laps++;
		res->wal_last = op->offset;
	}
}

/*
 * Builds in img_dir the crash image of every data file at the cut after
 * `nops` records: one instant across the files, as the stream is one.
 */
static void
build_image(const struct pl_journal *j, size_t nops, const int *ids,
    const char *base_dir, const char *img_dir, struct rng *rng,
    struct pl_result *res)
{
	char base[512], img[512];
	size_t f;

	clear_dir(img_dir);
	for (f = 0; f < DATA_FILES; f++) {
		struct pl_image_stats st;

		snprintf(base, sizeof(base), "%s/%s", base_dir, data_files[f]);
		snprintf(img, sizeof(img), "%s/%s", img_dir, data_files[f]);
		if (pl_image_build(j, nops, (unsigned)ids[f], base, img, rng,
		    &st) != 0)
			fail_msg("cannot build an image in %s: %s", img,
			    strerror(errno));
		res->durable_writes += st.durable;
		res->volatile_kept += st.volatile_kept;
		res->volatile_dropped += st.volatile_dropped;
		res->torn += st.torn;
	}
}

/*
 * The lockd that makes the first base (see powerloss()) also moves
 * lockd.wal's writer well into the file, with RENEWs of a name of its own,
 * released at the end (an image holding it would count as an unreadable
 * record): the journal then goes round to its start in the first runs
 * instead of after 64 KiB of the workload, which the short runs (the
 * guards, make test) would barely reach.  Pipelined, as one at a time
 * would take a round trip and a sync each.
 */
static void
warm_up(struct harness_server *s)
{
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g[WARMUP_NAMES];
	char name[WARMUP_NAMES][16];
	int i, k;

	for (k = 0; k < WARMUP_NAMES; k++) {
		snprintf(name[k], sizeof(name[k]), "warmup/%02d", k);
		harness_try(c, name[k], 60000, &g[k]);
	}
	for (i = 0; i < WARMUP_ROUNDS; i++) {
		for (k = 0; k < WARMUP_NAMES; k++)
			harness_send(c, "RENEW %s %s lease=60000\n", name[k],
			    g[k].handle);
		for (k = 0; k < WARMUP_NAMES; k++)
			harness_expect_prefix(c, "RENEWED ");
	}
	for (k = 0; k < WARMUP_NAMES; k++)
		harness_send(c, "RELEASE %s %s\n", name[k], g[k].handle);
	for (k = 0; k < WARMUP_NAMES; k++)
		harness_expect_prefix(c, "RELEASED ");
	harness_close(c);
}

/*
 * `cycles` runs of lockd (lockd-faulty with `fault` when not NULL) under the
 * shim, each followed by `images` crash images; stop_on_violation ends it
 * at the first run that found one (the guards).
 */
static void
powerloss(long cycles, long images, uint64_t seed, const char *fault,
    bool stop_on_violation, struct chk *chk, struct pl_result *res)
{
	struct harness_server *s = harness_server_new();
	/* 16 names and leases of 50 to 500 ms: the holders act about twice
	 * as often as with 8 names and leases to 1 s, and lockd writes some
	 * 20 KiB of lockd.wal a second, so the default run goes round it. */
	struct wl_options o = {
		.clients = CLIENTS, .names = NAMES,
		.lease_min_ms = 50, .lease_max_ms = 500,
		.wait_max_ms = 300, .think_max_ms = 10,
		.onclose_percent = 15, .journal_fd = -1,
		.multi_names = 4,   /* power/12 to power/15: limit=3 */
		.shared_names = 2,  /* power/10, power/11: mode=shared */
	};
	static struct wl w;
	char journal[256], base[256], cand[256], img_dir[256], chosen[256];
	struct rng rng;
	long cycle;

	rng_seed(&rng, seed);
	memset(res, 0, sizeof(*res));
	lmdb_alone = fault != NULL &&
	    strncmp(fault, LMDB_ALONE_FAULT, strlen(LMDB_ALONE_FAULT)) == 0;
	snprintf(journal, sizeof(journal), "%s/journal", s->dir);
	snprintf(base, sizeof(base), "%s/base", s->dir);
	snprintf(cand, sizeof(cand), "%s/candidate", s->dir);
	snprintf(chosen, sizeof(chosen), "%s/chosen", s->dir);
	snprintf(img_dir, sizeof(img_dir), "%s/image", s->dir);
	clear_dir(base);
	clear_dir(cand);
	clear_dir(chosen);
	wl_init(&w, &o, chk, names, seed * 17 + 3);

	/*
	 * The base of the first run.  An image is the files a run began with
	 * plus its recorded writes, and lockd makes lockd.wal at its first
	 * start under another name (lockd.wal.tmp, zeroed, synced, renamed
	 * into place), which no image can follow (journal.h).  So the files
	 * are made before any recorded run: one lockd, not recorded, starts
	 * on the empty directory and stops cleanly, and what it leaves - both
	 * files, synced - is the base of run 0, as an image of the run before
	 * is the base of every later one.  The creation itself is not judged
	 * here.
	 */
	crash_use_lockd();
	harness_server_start(s, "--journal-size", JOURNAL_SIZE_ARG, NULL);
	warm_up(s);
	if (harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL) != 0)
		fail_msg("lockd did not stop cleanly after making its files");
	if (copy_data(s->data_dir, base) != 0)
		fail_msg("cannot copy %s: %s", s->data_dir, strerror(errno));

	for (cycle = 0; cycle < cycles; cycle++) {
		struct pl_journal j;
		int64_t t_kill, died;
		bool alive, next = false;
		int jfd, ids[DATA_FILES];
		size_t f, i;
		long m;

		chk->cycle = (int)cycle;
		unlink(journal);
		if ((jfd = open(journal, O_RDONLY | O_CREAT | O_CLOEXEC,
		    0600)) < 0)
			fail_msg("journal: %s", strerror(errno));
		w.opt.journal_fd = jfd;
		if (fault != NULL)
			crash_use_faulty(fault);
		else
			crash_use_lockd();
		set_shim(journal);
		harness_server_restart(s);
		unset_shim();
		w.port = s->port;
		/* The recovery of the image the last run left. */
		if (cycle > 0 && wl_check_status(&w, true) != 0)
			chk_unrecoverable(chk, "lockd recovered from an image "
			    "but does not answer STATUS");
		wl_reconnect(&w, s->port);
		wl_run(&w, harness_now_ms() + rng_range(&rng, RUN_MIN_MS, RUN_MAX_MS));
		t_kill = harness_now_ms();
		alive = crash_alive(s->pid);
		harness_server_kill(s);
		died = alive && t_kill > w.alive ? t_kill : w.alive;
		wl_crash(&w, died);
		w.opt.journal_fd = -1;
		close(jfd);
		res->cycles++;

		if (pl_journal_load(journal, &j) != 0)
			fail_msg("cannot read the journal %s", journal);
		res->journal_records += j.count;
		/* lockd opens both files when it starts: a run without the
		 * open of one was not recorded whole, and its images would
		 * lack that file's writes. */
		for (f = 0; f < DATA_FILES; f++)
			if ((ids[f] = pl_journal_file(&j, data_files[f])) < 0 &&
			    lmdb_alone && f > 0)
				ids[f] = NO_FILE;   /* no lockd.wal */
			else if (ids[f] < 0)
				fail_msg("the shim journaled nothing of %s "
				    "(is %s preloaded?)", data_files[f],
				    crash_sibling("powerloss_shim.so"));
		for (i = 0; i < j.count; i++)
			if (j.ops[i].kind == PL_REPLACE)
				fail_msg("run %ld: lockd renamed or removed "
				    "%.*s: the images of this run would "
				    "start from the wrong file",
				    cycle, (int)j.ops[i].len,
				    (const char *)j.ops[i].data);
		count_store_work(&j, (unsigned)ids[0], (unsigned)ids[1], res);
		for (m = 0; m < images; m++) {
			bool full = m % 2 == 0;
			size_t nops = full ? j.count :
			    (size_t)rng_range(&rng, 1, (int64_t)j.count);
			uint64_t jpos = full ? UINT64_MAX : j.ops[nops - 1].end;
			int64_t cut = j.ops[nops - 1].t_ms;
			struct inspected in;
			uint64_t found;
			char why[512], text[700];

			build_image(&j, nops, ids, base, img_dir, &rng, res);
			res->images++;
			full ? res->full_cuts++ : res->prefix_cuts++;
			/* Opening an image may change it (a replay ends in a
			 * checkpoint): the next run starts from the copy. */
			if (full && copy_data(img_dir, cand) != 0)
				fail_msg("cannot copy %s", img_dir);
			if (inspect(img_dir, &in, why, sizeof(why)) != 0) {
				res->unrecoverable++;
				snprintf(text, sizeof(text), "image (run %ld, %s "
				    "cut after %zu of %zu records) does not "
				    "open: %s", cycle, full ? "full" : "prefix",
				    nops, j.count, why);
				chk_unrecoverable(chk, text);
				continue;
			}
			found = chk_image(chk, (int)cycle, jpos, cut, in.rec,
			    in.hwm);
			for (int k = 0; k < NAMES; k++)
				tags_seen(chk, k, &in);
			/* The first good image of where lockd died is what
			 * the next run starts from. */
			if (full && found == 0 && !next) {
				if (copy_data(cand, chosen) != 0)
					fail_msg("cannot copy %s", cand);
				next = true;
			}
		}
		pl_journal_free(&j);
		if (stop_on_violation && chk_violations(chk) > 0)
			break;
		if (!next)
			fail_msg("run %ld left no image lockd can start from",
			    cycle);
		clear_dir(s->data_dir);
		if (copy_data(chosen, s->data_dir) != 0 ||
		    copy_data(chosen, base) != 0)
			fail_msg("cannot copy %s", chosen);
	}
	if (!stop_on_violation || chk_violations(chk) == 0) {
		/* The real lockd, no shim, on what the last failure left. */
		chk->cycle = (int)cycle;
		crash_use_lockd();
		harness_server_restart(s);
		w.port = s->port;
		if (wl_check_status(&w, true) != 0)
			chk_unrecoverable(chk, "lockd does not answer STATUS "
			    "after the last power failure");
		harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
	}
	chk_finish(chk);
	res->wl = w.stats;
	wl_close(&w);
	unlink(journal);
}

static void
print_result(const char *label, uint64_t seed, const struct pl_result *r,
    const struct chk *chk)
{
	printf("%s: seed=%llu runs=%ld images=%ld (at the death: %ld, at a "
	    "random journal record: %ld) unrecoverable=%ld journal "
	    "records=%llu writes kept as synced=%llu unsynced kept=%llu "
	    "dropped=%llu torn=%llu granted=%llu renewed=%llu "
	    "released=%llu\n", label, (unsigned long long)seed, r->cycles,
	    r->images, r->full_cuts, r->prefix_cuts, r->unrecoverable,
	    (unsigned long long)r->journal_records,
	    (unsigned long long)r->durable_writes,
	    (unsigned long long)r->volatile_kept,
	    (unsigned long long)r->volatile_dropped,
	    (unsigned long long)r->torn,
	    (unsigned long long)r->wl.granted,
	    (unsigned long long)r->wl.renewed,
	    (unsigned long long)r->wl.released);
	printf("  store: data.mdb syncs (checkpoints)=%llu lockd.wal "
	    "records=%llu bytes=%llu laps=%llu\n",
	    (unsigned long long)r->data_syncs,
	    (unsigned long long)r->wal_writes,
	    (unsigned long long)r->wal_bytes,
	    (unsigned long long)r->wal_laps);
	chk_print_stats(chk, stdout, "  ");
	printf("  rewinds=%llu forgotten=%llu\n",
	    (unsigned long long)chk->stats.violations[CHK_REWIND],
	    (unsigned long long)chk->stats.violations[CHK_FORGOTTEN]);
}

static void
test_powerloss_images_keep_every_told_grant(void **state)
{
	static struct chk chk;
	struct pl_result r;

	(void)state;
	alarm((unsigned)(60 + args.cycles * (5 + args.images / 2)));
	chk_init(&chk, NAMES, names, stdout, harness_now_ms());
	powerloss(args.cycles, args.images, args.seed, NULL, false, &chk, &r);
	print_result("power loss", args.seed, &r, &chk);
	if (chk_violations(&chk) != 0 || r.wl.unexpected != 0)
		fail_msg("power loss failed; replay with --seed %llu --cycles "
		    "%ld --images %ld", (unsigned long long)args.seed,
		    args.cycles, args.images);
	assert_true(r.images > 0);
	assert_true(chk.stats.durable_checks > 0);
	chk_free(&chk);
}

static void
guard(const char *fault, uint64_t seed)
{
	static struct chk chk;
	struct pl_result r;
	char label[64];

	alarm(60 + GUARD_CYCLES * 10);
	chk_init(&chk, NAMES, names, stdout, harness_now_ms());
	chk.report_limit = 2;   /* what it caught, in short */
	powerloss(GUARD_CYCLES, args.images, seed, fault, true, &chk, &r);
	snprintf(label, sizeof(label), "power loss guard (%s)", fault);
	print_result(label, seed, &r, &chk);
	if (chk_violations(&chk) == 0)
		fail_msg("the power-loss test did not catch lockd-faulty %s",
		    fault);
	chk_free(&chk);
}

static void
test_powerloss_catches_lmdb_without_fsync(void **state)
{
	(void)state;
	guard("nosync", args.seed + 1);
}

static void
test_powerloss_catches_replies_sent_before_their_commit(void **state)
{
	(void)state;
	guard("early_reply", args.seed + 2);
}

static void
test_powerloss_catches_journal_without_fdatasync(void **state)
{
	(void)state;
	guard("journal_nosync", args.seed + 3);
}

/* ---- the MDB_NOMETASYNC experiment (LOCKD_EXPERIMENT=nometasync) ------ */

static void
test_nometasync_images_keep_every_told_grant(void **state)
{
	static struct chk chk;
	struct pl_result r;

	(void)state;
	alarm((unsigned)(60 + args.cycles * (5 + args.images / 2)));
	chk_init(&chk, NAMES, names, stdout, harness_now_ms());
	powerloss(args.cycles, args.images, args.seed, LMDB_ALONE_FAULT,
	    false, &chk, &r);
	print_result("power loss (" LMDB_ALONE_FAULT ")", args.seed, &r,
	    &chk);
	if (chk_violations(&chk) != 0 || r.wl.unexpected != 0)
		fail_msg("power loss failed; replay with LOCKD_EXPERIMENT="
		    "nometasync --seed %llu --cycles %ld --images %ld",
		    (unsigned long long)args.seed, args.cycles, args.images);
	assert_true(r.images > 0);
	assert_true(chk.stats.durable_checks > 0);
	chk_free(&chk);
}

static void
test_nometasync_catches_replies_before_the_meta_sync(void **state)
{
	(void)state;
	guard(LMDB_ALONE_FAULT "_nolag", args.seed + 4);
}

static void
test_nometasync_catches_lmdb_without_fsync(void **state)
{
	(void)state;
	guard(LMDB_ALONE_FAULT ",nosync", args.seed + 5);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_powerloss_images_keep_every_told_grant),
		HARNESS_TEST(test_powerloss_catches_lmdb_without_fsync),
		HARNESS_TEST(
		    test_powerloss_catches_replies_sent_before_their_commit),
		HARNESS_TEST(test_powerloss_catches_journal_without_fdatasync),
	};
	const struct CMUnitTest experiment[] = {
		HARNESS_TEST(test_nometasync_images_keep_every_told_grant),
		HARNESS_TEST(
		    test_nometasync_catches_replies_before_the_meta_sync),
		HARNESS_TEST(test_nometasync_catches_lmdb_without_fsync),
	};
	const char *which = getenv("LOCKD_EXPERIMENT");

	crash_init(argv[0]);
	crash_parse_args(&argc, argv, &args);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (which != NULL && strcmp(which, "nometasync") == 0)
		return cmocka_run_group_tests_name("crash_powerloss_nometasync",
		    experiment, NULL, NULL);
	return cmocka_run_group_tests_name("crash_powerloss", tests, NULL,
	    NULL);
}
