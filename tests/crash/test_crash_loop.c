/*
 * test_crash_loop.c - build/tests/crash_loop: kill -9 the real lockd at
 * random moments under 32 concurrent clients, restart it on the same data
 * directory, again and again, and judge everything the clients were told
 * with the external checker (checker.h): no fence rewound or reissued, no
 * told grant or renewal forgotten while its lease certainly runs, no two
 * holders at once, no holder refused, no lease lengthened, no onclose
 * lease surviving a restart.  One run in four is lockd-faulty instead,
 * dying by itself at an exact point (before a commit, after it, between
 * the replies of a pass).
 *
 *   crash_loop [--cycles N] [--seed S] [cmocka filter]
 *
 * make test runs 40 cycles; make soak 1,000.  The guard runs lockd-faulty
 * with early_reply (replies leave before their commit) and requires the
 * checker to catch it; the checker's own tests feed it made-up histories
 * that break each rule in turn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/crash/checker.h"
#include "tests/crash/crashlib.h"
#include "tests/lib/rng.h"
#include "tests/crash/workload.h"
#include "tests/lib/harness.h"

#define NAMES 8
#define CLIENTS 32
#define CYCLE_MIN_MS 30
#define CYCLE_MAX_MS 700
#define GUARD_CYCLES 40   /* at most: it stops at the first catch */
#define LOG_MAX (4L << 20)

static struct crash_args args = { 0, 40, 0, 0, false };

static const char *const names[NAMES] = {
	"crash/0", "crash/1", "crash/2", "crash/3",
	"crash/4", "crash/5", "crash/6", "crash/7",
};

struct loop_result {
	long cycles, faulty, kills, injected, unexpected_deaths,
	    status_failures;
	struct wl_stats wl;
};

/* A fault for lockd-faulty: it dies by itself at an exact point. */
static void
pick_fault(struct rng *rng, char *out, size_t cap)
{
	static const char *const points[] = {
		"before_commit", "after_commit", "mid_reply",
	};
	const char *point = points[rng_below(rng, 3)];
	long n = point[0] == 'm' ? (long)rng_range(rng, 1, 3) :
	    (long)rng_range(rng, 1, 60);

	snprintf(out, cap, "%s:%ld", point, n);
}

/*
 * The loop: `cycles` runs of lockd, each killed (or dying) after a random
 * time under the workload.  always_fault: every run is lockd-faulty with
 * it; else random_faults makes one run in four die at a random point.
 */
static void
crash_loop(long cycles, uint64_t seed, const char *always_fault,
    bool random_faults, bool stop_on_violation, struct chk *chk,
    struct loop_result *res)
{
	struct harness_server *s = harness_server_new();
	struct wl_options o = {
		.clients = CLIENTS, .names = NAMES,
		.lease_min_ms = 50, .lease_max_ms = 500,
		.wait_max_ms = 400, .think_max_ms = 15,
		.onclose_percent = 20, .journal_fd = -1,
		.multi_names = 2,   /* crash/6 and crash/7: limit=3 */
		.shared_names = 1,  /* crash/5: mode=shared */
	};
	static struct wl w;
	struct rng rng;
	long cycle;

	rng_seed(&rng, seed);
	memset(res, 0, sizeof(*res));
	wl_init(&w, &o, chk, names, seed * 31 + 7);
	for (cycle = 0; cycle < cycles; cycle++) {
		char fault[64] = "";
		int64_t t_kill, died;
		bool alive;

		chk->cycle = (int)cycle;
		if (always_fault != NULL)
			snprintf(fault, sizeof(fault), "%s", always_fault);
		else if (random_faults && rng_below(&rng, 4) == 0)
			pick_fault(&rng, fault, sizeof(fault));
		if (fault[0] != '\0') {
			crash_use_faulty(fault);
			res->faulty++;
		} else {
			crash_use_lockd();
		}
		crash_trim_log(s->log_path, LOG_MAX);
		if (cycle == 0)
			harness_server_start(s, NULL);
		else
			harness_server_restart(s);
		w.port = s->port;
		if (cycle > 0 && wl_check_status(&w, true) != 0)
			res->status_failures++;
		wl_reconnect(&w, s->port);
		wl_run(&w, harness_now_ms() + rng_range(&rng, CYCLE_MIN_MS,
		    CYCLE_MAX_MS));

		/* It was alive after t_kill, so it died after t_kill. */
		t_kill = harness_now_ms();
		alive = crash_alive(s->pid);
		harness_server_kill(s);
		if (alive)
			res->kills++;
		else if (fault[0] != '\0')
			res->injected++;
		else
			res->unexpected_deaths++;
		died = alive && t_kill > w.alive ? t_kill : w.alive;
		wl_crash(&w, died);
		res->cycles++;
		/* A guard stops at its first catch, the whole-history checks
		 * (Overlap, Delay) included: they are run after each cycle. */
		if (stop_on_violation && chk_violations(chk) == 0)
			chk_finish(chk);
		if (stop_on_violation && chk_violations(chk) > 0)
			break;
	}
	/* One more start: what the last crash left must hold too. */
	chk->cycle = (int)cycle;
	crash_use_lockd();
	harness_server_restart(s);
	w.port = s->port;
	if (wl_check_status(&w, true) != 0)
		res->status_failures++;
	harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
	chk_finish(chk);
	res->wl = w.stats;
	wl_close(&w);
}

static void
print_result(const char *label, uint64_t seed, const struct loop_result *r,
    const struct chk *chk)
{
	printf("%s: seed=%llu cycles=%ld (lockd-faulty runs: %ld; kill -9: "
	    "%ld, injected crashes: %ld, unexpected deaths: %ld) "
	    "requests=%llu replies=%llu "
	    "granted=%llu renewed=%llu released=%llu conflicts=%llu "
	    "notheld=%llu timeouts=%llu held=%llu unknown=%llu "
	    "unexpected=%llu writers=%llu\n", label, (unsigned long long)seed, r->cycles,
	    r->faulty, r->kills, r->injected, r->unexpected_deaths,
	    (unsigned long long)r->wl.requests,
	    (unsigned long long)r->wl.replies,
	    (unsigned long long)r->wl.granted,
	    (unsigned long long)r->wl.renewed,
	    (unsigned long long)r->wl.released,
	    (unsigned long long)r->wl.conflicts,
	    (unsigned long long)r->wl.notheld,
	    (unsigned long long)r->wl.timeouts,
	    (unsigned long long)r->wl.held,
	    (unsigned long long)r->wl.unknown,
	    (unsigned long long)r->wl.unexpected,
	    (unsigned long long)r->wl.writers);
	chk_print_stats(chk, stdout, "  ");
}

static void
test_crash_loop_kill_9_keeps_every_promise(void **state)
{
	static struct chk chk;
	struct loop_result r;

	(void)state;
	alarm((unsigned)(60 + args.cycles * 3));
	chk_init(&chk, NAMES, names, stdout, harness_now_ms());
	crash_loop(args.cycles, args.seed, NULL, true, false, &chk, &r);
	print_result("crash loop", args.seed, &r, &chk);
	if (chk_violations(&chk) != 0 || r.unexpected_deaths != 0 ||
	    r.status_failures != 0 || r.wl.unexpected != 0)
		fail_msg("crash loop failed; replay with --seed %llu --cycles "
		    "%ld", (unsigned long long)args.seed, args.cycles);
	assert_true(r.wl.granted > 0);
	/* rid repeats ran, in a run and after restarts, and were judged. */
	printf("  rid repeats told their grant: %llu\n",
	    (unsigned long long)r.wl.rid_repeats);
	assert_true(r.wl.rid_repeats > 0 && chk.stats.rid_checks > 0);
	chk_free(&chk);
}

/*
 * A guard: the crash loop against lockd-faulty with `fault`, stopped at
 * its first catch.  Returns the violations of kind v it found (v ==
 * CHK_VIOLATION_COUNT: of any kind).
 */
static uint64_t
run_guard(const char *fault, uint64_t seed, enum chk_violation v)
{
	static struct chk chk;
	struct loop_result r;
	char label[64];
	uint64_t found;

	alarm(60 + GUARD_CYCLES * 3);
	chk_init(&chk, NAMES, names, stdout, harness_now_ms());
	chk.report_limit = 2;   /* what it caught, in short */
	crash_loop(GUARD_CYCLES, seed, fault, false, true, &chk, &r);
	snprintf(label, sizeof(label), "crash loop guard (%s)", fault);
	print_result(label, seed, &r, &chk);
	found = v == CHK_VIOLATION_COUNT ? chk_violations(&chk) :
	    chk.stats.violations[v];
	chk_free(&chk);
	return found;
}

static void
test_crash_loop_catches_replies_sent_before_their_commit(void **state)
{
	(void)state;
	if (run_guard("early_reply", args.seed + 1, CHK_VIOLATION_COUNT) == 0)
		fail_msg("the checker did not catch a lockd that replies "
		    "before its commit");
}

/* A lockd whose records lose their rid: after a restart, a repeat of a
 * held grant's rid is a new request (ERR TIMEOUT behind itself). */
static void
test_crash_loop_catches_a_rid_not_stored(void **state)
{
	(void)state;
	if (run_guard("rid_unstored", args.seed + 2, CHK_RID) == 0)
		fail_msg("the checker did not catch a lockd that stores no "
		    "rid");
}

/*
 * A lockd that stores a semaphore's or shared lock's holders without
 * their lock-delay: after a restart such a holder ends by expiry and the
 * name is granted at once, inside the delay that holds back the whole
 * name (the Delay check for several holders).
 */
static void
test_crash_loop_catches_a_holder_delay_not_stored(void **state)
{
	(void)state;
	if (run_guard("holder_delay_unstored", args.seed + 3, CHK_DELAY) == 0)
		fail_msg("the checker did not catch a lockd that forgets the "
		    "lock-delay of a holder beyond the first");
}

/*
 * A lockd that stores each holder of a semaphore or shared lock with
 * half its lease gone: only after a restart does it show, in what CHECK
 * (and STATUS, for the newest) says of each holder's time left.
 */
static void
test_crash_loop_catches_holders_coming_back_short(void **state)
{
	(void)state;
	if (run_guard("holder_lease_short", args.seed + 4, CHK_FORGOTTEN) == 0)
		fail_msg("the checker did not catch holders that come back "
		    "after a restart with less time than they were told");
}

/* ---- the checker against made-up histories ----------------------------- */

static const char *const one[1] = { "x" };

/* A told grant of a semaphore's or shared lock's holder on name 0, with
 * the handle "<fence>-0"; its index. */
static int64_t
multi_granted(struct chk *c, uint64_t fence, int64_t sent, int64_t recv,
    int64_t lease, bool onclose)
{
	char handle[32];
	int64_t g;

	snprintf(handle, sizeof(handle), "%llu-0", (unsigned long long)fence);
	g = chk_granted(c, 0, fence, handle, sent, recv, lease, onclose, 0);
	chk_grant_multi(c, g);
	return g;
}

static void
test_checker_catches_a_rewound_fence(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_granted(&c, 0, 5, "5-0", 0, 1, 100, false, 0);
	chk_granted(&c, 0, 9, "9-0", 200, 201, 100, false, 0);
	assert_int_equal(chk_violations(&c), 0);
	chk_granted(&c, 0, 7, "7-0", 400, 401, 100, false, 0);
	assert_int_equal(c.stats.violations[CHK_REWIND], 1);
	chk_free(&c);
}

static void
test_checker_catches_a_reissued_fence(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_granted(&c, 0, 5, "5-0", 0, 10, 100, false, 0);
	/* In flight together: either may be first, but not the same. */
	chk_granted(&c, 0, 5, "5-1", 5, 12, 100, false, 0);
	assert_int_equal(c.stats.violations[CHK_REISSUE], 1);
	chk_free(&c);
}

static void
test_checker_catches_overlapping_holders(void **state)
{
	struct chk c;
	struct chk_ref r;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_granted(&c, 0, 1, "1-0", 0, 1, 100, false, 0);
	/* After the first lease: fine. */
	chk_granted(&c, 0, 2, "2-0", 150, 160, 100, false, 0);
	/* Released first: fine. */
	a = chk_granted(&c, 0, 3, "3-0", 300, 301, 100, false, 0);
	r = chk_begin(&c, a, CHK_EV_RELEASE, 310, 0);
	chk_end(&c, r, CHK_OK, 311, 0);
	chk_granted(&c, 0, 4, "4-0", 315, 320, 100, false, 0);
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	/* Granted 10 ms into a 100 ms lease nobody released. */
	chk_granted(&c, 0, 5, "5-0", 420, 430, 100, false, 0);
	chk_granted(&c, 0, 6, "6-0", 440, 441, 100, false, 0);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_OVERLAP] >= 1);
	chk_free(&c);
}

/* A semaphore of 2: two holders at once are fine, a third told while
 * both are certainly held is one too many. */
static void
test_checker_catches_more_holders_than_the_limit(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_name_limit(&c, 0, 2);
	multi_granted(&c, 1, 0, 1, 100, false);
	multi_granted(&c, 2, 10, 11, 100, false);
	/* After the first lease ends: fine. */
	multi_granted(&c, 3, 150, 160, 100, false);
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	/* Fence 5 told while fences 3 and 4 certainly hold. */
	multi_granted(&c, 4, 170, 171, 100, false);
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	multi_granted(&c, 5, 175, 176, 100, false);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_OVERLAP] >= 1);
	chk_free(&c);
}

/* Grants made together (all in flight at once) are ordered by their
 * fences: the third of a semaphore of 2, told while the two lower
 * fences are certainly held, is one too many, though no reply came
 * before another's request. */
static void
test_checker_catches_more_holders_than_the_limit_by_fence(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_name_limit(&c, 0, 2);
	multi_granted(&c, 1, 0, 50, 100, false);
	multi_granted(&c, 2, 1, 50, 100, false);
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	multi_granted(&c, 3, 2, 50, 100, false);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_OVERLAP] >= 1);
	chk_free(&c);
}

/* A read lock: readers share, but a writer (not marked multi) excludes
 * every other holder - a reader told while it certainly holds, by time
 * or with a higher fence, overlaps it. */
static void
test_checker_catches_a_reader_beside_a_writer(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	multi_granted(&c, 1, 0, 1, 100, false);
	multi_granted(&c, 2, 2, 3, 100, false);   /* beside a reader */
	chk_granted(&c, 0, 3, "3-0", 200, 205, 100, false, 0);   /* writer */
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	/* In flight with the writer's request, but a higher fence. */
	multi_granted(&c, 4, 201, 206, 100, false);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_OVERLAP] >= 1);
	chk_free(&c);
}

/* One holder of several with delay= ends by expiry: the whole name is
 * held back from its latest end until its certain end plus the delay,
 * while the other holders keep holding. */
static void
test_checker_catches_a_grant_inside_a_holders_lock_delay(void **state)
{
	struct chk c;
	struct chk_ref r;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_name_limit(&c, 0, 4);
	a = multi_granted(&c, 1, 0, 1, 100, false);
	chk_grant_options(&c, a, "", 0, 200);
	a = multi_granted(&c, 2, 5, 6, 1000, false);
	/* Beside fence 1 while it holds: fine. */
	a = multi_granted(&c, 3, 50, 51, 1000, false);
	/* Released, with a delay: none owed. */
	a = multi_granted(&c, 4, 60, 61, 100, false);
	chk_grant_options(&c, a, "", 0, 900);
	r = chk_begin(&c, a, CHK_EV_RELEASE, 70, 0);
	chk_end(&c, r, CHK_OK, 71, 0);
	a = multi_granted(&c, 5, 400, 401, 100, false);
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	/* Fence 1 ended by 101; its delay runs until 300 at least. */
	a = multi_granted(&c, 6, 150, 160, 100, false);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_DELAY] >= 1);
	assert_int_equal(c.stats.violations[CHK_OVERLAP], 0);
	chk_free(&c);
}

/* After a restart, each holder of a semaphore or shared lock is asked
 * for by CHECK: one certainly held must be CURRENT with its time left,
 * never more than it can have; an onclose=release one must be gone.
 * STATUS's newest holder is judged by its ttl the same way. */
static void
test_checker_catches_a_holder_check_that_forgot(void **state)
{
	struct chk c;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	a = multi_granted(&c, 1, 0, 1, 1000, false);
	a = multi_granted(&c, 2, 0, 1, 1000, true);
	chk_closed(&c, a, 20);
	c.cycle = 1;
	chk_check(&c, 0, 1, 50, 51, true, 950, true);
	chk_check(&c, 0, 2, 50, 51, false, 0, true);
	chk_check(&c, 0, 9, 50, 51, false, 0, true);   /* not a told fence */
	chk_status(&c, 0, 50, 51, true, 1, 950, true);
	assert_int_equal(chk_violations(&c), 0);
	chk_check(&c, 0, 1, 60, 61, false, 0, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 1);
	chk_check(&c, 0, 1, 60, 61, true, 400, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 2);
	chk_status(&c, 0, 60, 61, true, 1, 400, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 3);
	chk_check(&c, 0, 1, 60, 61, true, 5000, true);
	assert_int_equal(c.stats.violations[CHK_LENGTHENED], 1);
	chk_check(&c, 0, 2, 60, 61, true, 900, true);
	assert_int_equal(c.stats.violations[CHK_ONCLOSE], 1);
	chk_free(&c);
}

/* A semaphore's STATUS: held=1 with a newest fence at least that of
 * every holder certainly held; the lock free, or an older newest fence,
 * forgets one. */
static void
test_checker_catches_a_status_that_forgot_a_holder(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_name_limit(&c, 0, 3);
	multi_granted(&c, 1, 0, 1, 100, false);
	multi_granted(&c, 2, 2, 3, 100, false);
	chk_status(&c, 0, 10, 11, true, 2, 90, false);
	chk_status(&c, 0, 200, 201, false, 0, 0, true);   /* both over */
	assert_int_equal(chk_violations(&c), 0);
	chk_status(&c, 0, 20, 21, true, 1, 80, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 1);
	chk_status(&c, 0, 30, 31, false, 0, 0, false);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 2);
	chk_free(&c);
}

/* A lease with delay= that nobody released ends by expiry: no grant
 * before its certain end plus the delay; after a RELEASE, none owed. */
static void
test_checker_catches_a_grant_inside_a_lock_delay(void **state)
{
	struct chk c;
	struct chk_ref r;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	a = chk_granted(&c, 0, 1, "1-0", 0, 1, 100, false, 0);
	chk_grant_options(&c, a, "", 0, 200);
	/* Released: no delay owed. */
	a = chk_granted(&c, 0, 2, "2-0", 400, 401, 100, false, 0);
	chk_grant_options(&c, a, "", 0, 200);
	r = chk_begin(&c, a, CHK_EV_RELEASE, 410, 0);
	chk_end(&c, r, CHK_OK, 411, 0);
	chk_granted(&c, 0, 3, "3-0", 415, 420, 100, false, 0);
	/* After 1's expiry plus its delay (300): fine. */
	chk_finish(&c);
	assert_int_equal(chk_violations(&c), 0);
	/* 4 expires at 1100; 5 granted at 1150, inside its delay. */
	a = chk_granted(&c, 0, 4, "4-0", 1000, 1001, 100, false, 0);
	chk_grant_options(&c, a, "", 0, 200);
	chk_granted(&c, 0, 5, "5-0", 1140, 1150, 100, false, 0);
	chk_finish(&c);
	assert_true(c.stats.violations[CHK_DELAY] >= 1);
	assert_int_equal(c.stats.violations[CHK_OVERLAP], 0);
	chk_free(&c);
}

/* The owner label shown with a told fence is that grant's. */
static void
test_checker_catches_a_wrong_owner_label(void **state)
{
	struct chk c;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	a = chk_granted(&c, 0, 7, "7-0", 0, 1, 1000, false, 0);
	chk_grant_options(&c, a, "w3", 2, 0);
	chk_owner_seen(&c, 0, 7, "w3", 2);
	chk_owner_seen(&c, 0, 8, "w9", 2);    /* not a told fence */
	assert_int_equal(chk_violations(&c), 0);
	chk_owner_seen(&c, 0, 7, "w4", 2);
	chk_owner_seen(&c, 0, 7, "", 0);
	assert_int_equal(c.stats.violations[CHK_OWNER], 2);
	chk_free(&c);
}

/* A rid: an image's record of a told fence carries that grant's rid, and
 * a repeat while the lease is certainly held is told that grant. */
static void
test_checker_catches_a_wrong_rid(void **state)
{
	struct chk c;
	int64_t a;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	a = chk_granted(&c, 0, 7, "7-0", 0, 1, 1000, false, 0);
	chk_grant_rid(&c, a, "w3.1", 4);
	chk_rid_seen(&c, 0, 7, "w3.1", 4);
	chk_rid_seen(&c, 0, 8, "w9.9", 4);    /* not a told fence */
	assert_int_equal(chk_rid_live(&c, 0, 7, 500), a);
	assert_int_equal(chk_rid_live(&c, 0, 7, 1000), -1);  /* not sure */
	chk_rid_repeat(&c, a, true, 7, "7-0", NULL);
	assert_int_equal(chk_violations(&c), 0);
	chk_rid_seen(&c, 0, 7, "w3.2", 4);
	chk_rid_seen(&c, 0, 7, "", 0);
	assert_int_equal(c.stats.violations[CHK_RID], 2);
	chk_rid_repeat(&c, a, true, 9, "9-0", NULL);      /* a new grant */
	chk_rid_repeat(&c, a, true, 7, "7-1", NULL);      /* another handle */
	chk_rid_repeat(&c, a, false, 0, "", "ERR TIMEOUT"); /* queued */
	assert_int_equal(c.stats.violations[CHK_RID], 5);
	chk_free(&c);
}

static void
test_checker_catches_a_forgotten_grant_after_a_restart(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 2, names, NULL, 0);
	chk_granted(&c, 0, 1, "1-0", 0, 1, 1000, false, 0);
	chk_granted(&c, 1, 2, "2-0", 0, 1, 30, false, 0);
	c.cycle = 1;
	chk_status(&c, 0, 50, 51, true, 1, 950, true);
	chk_status(&c, 1, 50, 51, false, 0, 0, true);   /* expired: fine */
	assert_int_equal(chk_violations(&c), 0);
	chk_status(&c, 0, 60, 61, false, 0, 0, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 1);
	chk_free(&c);
}

static void
test_checker_catches_a_forgotten_renewal(void **state)
{
	struct chk c;
	struct chk_ref r;
	int64_t g;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	g = chk_granted(&c, 0, 1, "1-0", 0, 1, 100, false, 0);
	r = chk_begin(&c, g, CHK_EV_RENEW, 50, 1000);
	chk_end(&c, r, CHK_OK, 51, 0);
	/* The renewal runs until 1050; STATUS says 100 - 60 = 40 left. */
	chk_status(&c, 0, 60, 61, true, 1, 40, true);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 1);
	chk_free(&c);
}

static void
test_checker_catches_a_refused_holder(void **state)
{
	struct chk c;
	struct chk_ref r;
	int64_t g;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	g = chk_granted(&c, 0, 1, "1-0", 0, 1, 100, false, 0);
	r = chk_begin(&c, g, CHK_EV_RENEW, 150, 100);   /* expired: fine */
	chk_end(&c, r, CHK_REFUSED_REPLY, 151, 0);
	assert_int_equal(chk_violations(&c), 0);
	g = chk_granted(&c, 0, 2, "2-0", 200, 201, 100, false, 0);
	r = chk_begin(&c, g, CHK_EV_RELEASE, 250, 0);
	chk_end(&c, r, CHK_REFUSED_REPLY, 251, 0);
	assert_int_equal(c.stats.violations[CHK_REFUSED], 1);
	chk_free(&c);
}

static void
test_checker_catches_a_lengthened_lease(void **state)
{
	struct chk c;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	chk_granted(&c, 0, 1, "1-0", 0, 1, 100, false, 0);
	chk_status(&c, 0, 10, 11, true, 1, 90, true);
	assert_int_equal(chk_violations(&c), 0);
	chk_status(&c, 0, 20, 21, true, 1, 500, true);
	assert_int_equal(c.stats.violations[CHK_LENGTHENED], 1);
	chk_free(&c);
}

static void
test_checker_catches_an_onclose_lease_surviving_a_restart(void **state)
{
	struct chk c;
	int64_t g;

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	g = chk_granted(&c, 0, 1, "1-0", 0, 1, 1000, true, 0);
	chk_closed(&c, g, 20);
	chk_status(&c, 0, 30, 31, true, 1, 960, true);
	assert_int_equal(c.stats.violations[CHK_ONCLOSE], 1);
	chk_free(&c);
}

static void
test_checker_catches_a_crash_image_that_forgot(void **state)
{
	struct chk c;
	struct chk_record rec[1] = { { .present = true, .fence = 1,
	    .expiry = 1000 } };

	(void)state;
	chk_init(&c, 1, one, NULL, 0);
	c.cycle = 0;
	chk_granted(&c, 0, 1, "1-0", 0, 1, 1000, false, 100);
	/* A grant read at journal position 200 is after a cut at 150. */
	chk_granted(&c, 0, 2, "2-0", 0, 5, 1000, false, 200);
	assert_int_equal(chk_image(&c, 0, 150, 3, rec, 1), 0);
	rec[0].present = false;
	assert_int_equal(chk_image(&c, 0, 150, 3, rec, 1), 1);
	rec[0].present = true;
	assert_int_equal(chk_image(&c, 0, 150, 3, rec, 0), 1);
	assert_int_equal(c.stats.violations[CHK_REWIND], 1);
	/* The whole journal: fence 2 must be there. */
	assert_int_equal(chk_image(&c, 0, UINT64_MAX, 6, rec, 2), 1);
	chk_free(&c);
}

/*
 * Per key: holders of a semaphore or a shared lock are each under their
 * own holder key in an image; each one certainly still held must be
 * there, whatever the others do, and the name's own key is not looked
 * at for them.
 */
static void
test_checker_catches_a_crash_image_that_forgot_a_holder(void **state)
{
	struct chk c;
	struct chk_record rec[1];
	int64_t g1, g2;

	(void)state;
	memset(rec, 0, sizeof(rec));
	chk_init(&c, 1, one, NULL, 0);
	c.cycle = 0;
	g1 = chk_granted(&c, 0, 1, "1-0", 0, 1, 1000, false, 100);
	g2 = chk_granted(&c, 0, 2, "2-0", 2, 3, 1000, false, 110);
	chk_grant_multi(&c, g1);
	chk_grant_multi(&c, g2);
	rec[0].nholders = 2;
	rec[0].holders[0].fence = 1;
	rec[0].holders[0].expiry = 1000;
	rec[0].holders[1].fence = 2;
	rec[0].holders[1].expiry = 1002;
	assert_int_equal(chk_image(&c, 0, 150, 5, rec, 2), 0);
	/* The older holder is still held: it must be there too (a plain
	 * lock's newer grant would have ended it). */
	rec[0].holders[0] = rec[0].holders[1];
	rec[0].nholders = 1;
	assert_int_equal(chk_image(&c, 0, 150, 5, rec, 2), 1);
	assert_int_equal(c.stats.violations[CHK_FORGOTTEN], 1);
	/* There, but ending before the lease it was told. */
	rec[0].nholders = 2;
	rec[0].holders[1].fence = 1;
	rec[0].holders[1].expiry = 500;
	assert_int_equal(chk_image(&c, 0, 150, 5, rec, 2), 1);
	/* A holder released before the cut need not be there. */
	{
		struct chk_ref ref = chk_begin(&c, g1, CHK_EV_RELEASE, 4, 0);
		chk_end(&c, ref, CHK_OK, 5, 120);
	}
	rec[0].nholders = 1;
	rec[0].holders[0].fence = 2;
	rec[0].holders[0].expiry = 1002;
	assert_int_equal(chk_image(&c, 0, 150, 6, rec, 2), 0);
	chk_free(&c);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker_catches_a_rewound_fence),
		cmocka_unit_test(test_checker_catches_a_reissued_fence),
		cmocka_unit_test(test_checker_catches_overlapping_holders),
		cmocka_unit_test(
		    test_checker_catches_more_holders_than_the_limit),
		cmocka_unit_test(
		    test_checker_catches_more_holders_than_the_limit_by_fence),
		cmocka_unit_test(
		    test_checker_catches_a_status_that_forgot_a_holder),
		cmocka_unit_test(test_checker_catches_a_reader_beside_a_writer),
		cmocka_unit_test(
		    test_checker_catches_a_grant_inside_a_holders_lock_delay),
		cmocka_unit_test(
		    test_checker_catches_a_holder_check_that_forgot),
		cmocka_unit_test(
		    test_checker_catches_a_grant_inside_a_lock_delay),
		cmocka_unit_test(test_checker_catches_a_wrong_owner_label),
		cmocka_unit_test(test_checker_catches_a_wrong_rid),
		cmocka_unit_test(test_crash_loop_catches_a_rid_not_stored),
		cmocka_unit_test(
		    test_crash_loop_catches_a_holder_delay_not_stored),
		cmocka_unit_test(
		    test_crash_loop_catches_holders_coming_back_short),
		cmocka_unit_test(
		    test_checker_catches_a_forgotten_grant_after_a_restart),
		cmocka_unit_test(test_checker_catches_a_forgotten_renewal),
		cmocka_unit_test(test_checker_catches_a_refused_holder),
		cmocka_unit_test(test_checker_catches_a_lengthened_lease),
		cmocka_unit_test(
		    test_checker_catches_an_onclose_lease_surviving_a_restart),
		cmocka_unit_test(test_checker_catches_a_crash_image_that_forgot),
		cmocka_unit_test(
		    test_checker_catches_a_crash_image_that_forgot_a_holder),
		HARNESS_TEST(test_crash_loop_kill_9_keeps_every_promise),
		HARNESS_TEST(
		    test_crash_loop_catches_replies_sent_before_their_commit),
	};

	crash_init(argv[0]);
	crash_parse_args(&argc, argv, &args);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests_name("crash_loop", tests, NULL, NULL);
}
