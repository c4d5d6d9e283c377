/*
 * test_sim.c - the simulator as a cmocka program for `make test`.
 *
 * The standard service runs seeds 1, 2, ... until SIM_TEST_REQUESTS
 * simulated requests (three million; LOCKD_SIM_REQUESTS overrides) with
 * crashes, clean restarts and failed commits, and must keep every property;
 * the same runs must reach every fault and path the simulator claims to
 * exercise; a seed must replay exactly; and each broken variant must be
 * caught by the property it breaks, or the simulator's checks are not worth
 * their name.  A failure prints its seed and the command that replays it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/sim/sim.h"

#define SIM_TEST_REQUESTS 3000000
#define GUARD_SEEDS 20
#define GUARD_STEPS 1000
#define FAILURES_SHOWN 10

/* The replay command names the command-line simulator, built next to this
 * program. */
static char sim_bin[512] = "build/tests/sim";

struct totals {
	uint64_t seeds, requests, grants, renewals, releases, timeouts;
	uint64_t crashes, restarts, failovers, failed_commits, commits, checks;
	uint64_t violations, failed_seeds;
	uint64_t by_property[SIM_PROPERTIES];
	uint64_t coverage[SIM_COVERAGE];
	double seconds;
};

static struct totals standard;
static bool standard_done;

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t
requests_wanted(void)
{
	const char *env = getenv("LOCKD_SIM_REQUESTS");

	if (env != NULL && *env >= '0' && *env <= '9')
		return strtoull(env, NULL, 10);
	return SIM_TEST_REQUESTS;
}

static void
report_failure(const struct sim_options *opt, const struct sim_result *res)
{
	char replay[600];

	sim_replay_command(replay, sizeof(replay), sim_bin, res->seed, opt);
	printf("FAILED seed=%llu %s\n  replay: %s\n",
	    (unsigned long long)res->seed, res->first_violation, replay);
}

/* The standard runs, once for the tests that judge them. */
static void
run_standard(void)
{
	struct sim_options opt;
	struct sim_result res;
	uint64_t want = requests_wanted(), seed;
	double t0 = now_seconds();
	int i;

	if (standard_done)
		return;
	standard_done = true;
	sim_options_defaults(&opt);
	for (seed = 1; standard.requests < want; seed++) {
		/* The violations of the first few failing seeds are shown. */
		opt.max_reports = standard.failed_seeds < FAILURES_SHOWN ?
		    2 : 0;
		sim_run(seed, &opt, &res);
		standard.seeds++;
		standard.requests += res.requests;
		standard.grants += res.grants;
		standard.renewals += res.renewals;
		standard.releases += res.releases;
		standard.timeouts += res.timeouts;
		standard.crashes += res.crashes;
		standard.restarts += res.clean_restarts;
		standard.failovers += res.failovers;
		standard.failed_commits += res.failed_commits;
		standard.commits += res.commits;
		standard.checks += res.checks;
		standard.violations += res.violations;
		for (i = 0; i < SIM_PROPERTIES; i++)
			standard.by_property[i] += res.by_property[i];
		for (i = 0; i < SIM_COVERAGE; i++)
			standard.coverage[i] += res.coverage[i];
		if (res.violations > 0 &&
		    standard.failed_seeds++ < FAILURES_SHOWN)
			report_failure(&opt, &res);
	}
	standard.seconds = now_seconds() - t0;
	printf("sim: %llu seeds, %llu requests, %llu grants, %llu renewals, "
	    "%llu releases, %llu timeouts, %llu crashes, %llu clean "
	    "restarts, %llu fail-overs, %llu commits, %llu failed commits, "
	    "%llu checks, "
	    "%llu violations in %llu seeds, %.1f s\n",
	    (unsigned long long)standard.seeds,
	    (unsigned long long)standard.requests,
	    (unsigned long long)standard.grants,
	    (unsigned long long)standard.renewals,
	    (unsigned long long)standard.releases,
	    (unsigned long long)standard.timeouts,
	    (unsigned long long)standard.crashes,
	    (unsigned long long)standard.restarts,
	    (unsigned long long)standard.failovers,
	    (unsigned long long)standard.commits,
	    (unsigned long long)standard.failed_commits,
	    (unsigned long long)standard.checks,
	    (unsigned long long)standard.violations,
	    (unsigned long long)standard.failed_seeds, standard.seconds);
	for (i = 0; i < SIM_PROPERTIES; i++)
		if (standard.by_property[i] > 0)
			printf("sim: %s violated %llu times\n",
			    sim_property_name((enum sim_property)i),
			    (unsigned long long)standard.by_property[i]);
}

static void
test_sim_standard_service_keeps_every_property_over_many_seeds(void **state)
{
	(void)state;
	run_standard();
	assert_true(standard.requests >= requests_wanted());
	assert_true(standard.crashes > 0);
	assert_true(standard.failovers > 0);
	assert_true(standard.failed_commits > 0);
	assert_int_equal(standard.violations, 0);
}

static void
test_sim_standard_runs_reach_every_fault_and_path(void **state)
{
	bool all = true;
	int i;

	(void)state;
	run_standard();
	printf("sim: coverage:");
	for (i = 0; i < SIM_COVERAGE; i++)
		printf("%s %s %llu", i > 0 ? "," : "",
		    sim_coverage_name((enum sim_coverage)i),
		    (unsigned long long)standard.coverage[i]);
	printf("\n");
	for (i = 0; i < SIM_COVERAGE; i++)
		if (standard.coverage[i] == 0) {
			printf("sim: never happened: %s\n",
			    sim_coverage_name((enum sim_coverage)i));
			all = false;
		}
	assert_true(all);
}

/* The same seed twice: the same trace, byte for byte. */
static void
test_sim_replays_a_seed_exactly(void **state)
{
	struct sim_options opt;
	struct sim_result a, b;
	char *text[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		FILE *f = open_memstream(&text[i], &len[i]);
		assert_non_null(f);
		sim_options_defaults(&opt);
		opt.steps = 300;
		opt.trace = true;
		opt.out = f;
		sim_run(7, &opt, i == 0 ? &a : &b);
		fclose(f);
	}
	assert_true(len[0] > 1000);
	assert_int_equal(len[0], len[1]);
	assert_memory_equal(text[0], text[1], len[0]);
	assert_true(a.digest == b.digest);
	assert_int_equal(a.requests, b.requests);
	assert_int_equal(a.checks, b.checks);
	free(text[0]);
	free(text[1]);

	/* And another seed is another run. */
	sim_options_defaults(&opt);
	opt.steps = 300;
	sim_run(8, &opt, &b);
	assert_true(a.digest != b.digest);
}

/*
 * Runs a broken variant over a few seeds until one reports more violations
 * of an expected property than the standard service does with the same
 * seed (which should be none; counting them keeps the guard honest should
 * the service itself have a bug).
 */
static void
guard(enum sim_variant v, unsigned expected)
{
	struct sim_options opt, std;
	bool cluster = v >= SIM_VARIANT_TAKEOVER_KEEPS_EXPIRY &&
	    v <= SIM_VARIANT_REPLAY_UNDETECTED;
	struct sim_result res, base;
	char replay[600];
	uint64_t seed;
	int p;

	sim_options_defaults(&opt);
	opt.variant = v;
	opt.steps = GUARD_STEPS;
	opt.max_reports = 0;
	opt.cluster = cluster;   /* its seeds run in cluster mode anyway */
	std = opt;
	std.variant = SIM_VARIANT_NONE;
	for (seed = 1; seed <= GUARD_SEEDS; seed++) {
		sim_run(seed, &opt, &res);
		sim_run(seed, &std, &base);
		for (p = 0; p < SIM_PROPERTIES; p++) {
			if ((expected & (1u << p)) == 0 ||
			    res.by_property[p] <= base.by_property[p])
				continue;
			sim_replay_command(replay, sizeof(replay), sim_bin,
			    seed, &opt);
			printf("sim: %s caught by %s at seed %llu (%llu "
			    "violations)\n  %s\n  replay: %s\n",
			    sim_variant_name(v),
			    sim_property_name((enum sim_property)p),
			    (unsigned long long)seed,
			    (unsigned long long)res.by_property[p],
			    res.first_of[p], replay);
			return;
		}
	}
	fail_msg("the variant %s went unnoticed over %d seeds",
	    sim_variant_name(v), GUARD_SEEDS);
}

#define BIT(p) (1u << (p))

static void
test_sim_catches_a_store_that_loses_commits(void **state)
{
	(void)state;
	guard(SIM_VARIANT_STORE_DROPS_BATCHES, BIT(SIM_DURABILITY));
}

static void
test_sim_catches_a_store_that_forgets_the_high_water_mark(void **state)
{
	(void)state;
	guard(SIM_VARIANT_STORE_FORGETS_HWM, BIT(SIM_FENCING_MONOTONIC));
}

static void
test_sim_catches_replies_sent_before_the_commit(void **state)
{
	(void)state;
	guard(SIM_VARIANT_REPLIES_BEFORE_COMMIT, BIT(SIM_DURABILITY));
}

static void
test_sim_catches_a_lost_reply(void **state)
{
	(void)state;
	guard(SIM_VARIANT_TRANSPORT_LOSES_REPLY, BIT(SIM_REPLY_ORDER));
}

static void
test_sim_catches_release_ignoring_the_handle(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RELEASE_IGNORES_HANDLE,
	    BIT(SIM_STALE_TOKEN_REJECTION));
}

static void
test_sim_catches_renew_checking_only_the_fence(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RENEW_BY_FENCE_ONLY,
	    BIT(SIM_STALE_TOKEN_REJECTION));
}

static void
test_sim_catches_a_grant_reusing_a_fence(void **state)
{
	(void)state;
	guard(SIM_VARIANT_GRANT_REUSES_FENCE, BIT(SIM_FENCING_MONOTONIC));
}

static void
test_sim_catches_a_queue_served_from_its_tail(void **state)
{
	(void)state;
	guard(SIM_VARIANT_QUEUE_IS_LIFO, BIT(SIM_FIFO_FAIRNESS));
}

static void
test_sim_catches_waiters_never_granted(void **state)
{
	(void)state;
	guard(SIM_VARIANT_WAITERS_NEVER_GRANTED, BIT(SIM_NO_STARVATION));
}

static void
test_sim_catches_a_lease_ending_a_millisecond_early(void **state)
{
	(void)state;
	guard(SIM_VARIANT_LEASE_ENDS_EARLY,
	    BIT(SIM_LEASE_RECLAMATION_SAFETY) | BIT(SIM_MUTUAL_EXCLUSION));
}

static void
test_sim_catches_a_lease_ending_a_millisecond_late(void **state)
{
	(void)state;
	guard(SIM_VARIANT_LEASE_ENDS_LATE, BIT(SIM_LEASE_RECLAMATION_SAFETY));
}

static void
test_sim_catches_expired_leases_never_reclaimed(void **state)
{
	(void)state;
	guard(SIM_VARIANT_NEVER_RECLAIMS, BIT(SIM_LEASE_RECLAMATION_SAFETY));
}

static void
test_sim_catches_a_grant_while_the_lock_is_held(void **state)
{
	(void)state;
	guard(SIM_VARIANT_GRANT_WHILE_HELD, BIT(SIM_MUTUAL_EXCLUSION));
}

static void
test_sim_catches_renew_refusing_the_holder(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RENEW_REFUSES_HOLDER, BIT(SIM_HOLDER_ACCEPTED));
}

static void
test_sim_catches_replies_that_ignore_the_batch_in_flight(void **state)
{
	(void)state;
	guard(SIM_VARIANT_INFLIGHT_UNGATED,
	    BIT(SIM_MUTUAL_EXCLUSION) | BIT(SIM_DURABILITY));
}

static void
test_sim_catches_lock_delay_ignored(void **state)
{
	(void)state;
	guard(SIM_VARIANT_DELAY_IGNORED, BIT(SIM_LOCK_DELAY));
}

/* FORCE is judged as a RELEASE with the true handle of the fence it
 * names: freeing another holder breaks what a stale release would. */
static void
test_sim_catches_force_freeing_any_fence(void **state)
{
	(void)state;
	guard(SIM_VARIANT_FORCE_ANY_FENCE, BIT(SIM_STALE_TOKEN_REJECTION) |
	    BIT(SIM_MUTUAL_EXCLUSION) | BIT(SIM_LEASE_RECLAMATION_SAFETY));
}

static void
test_sim_catches_a_watch_firing_on_no_change(void **state)
{
	(void)state;
	guard(SIM_VARIANT_WATCH_FIRES_EARLY, BIT(SIM_WATCH_CHANGE));
}

static void
test_sim_catches_a_watch_that_never_fires(void **state)
{
	(void)state;
	guard(SIM_VARIANT_WATCH_NEVER_FIRES, BIT(SIM_WATCH_CHANGE));
}

/* A repeat of a live grant's rid taken for a new request: it queues
 * behind its own grant, or TRY answers HELD. */
static void
test_sim_catches_a_rid_repeat_taken_for_a_new_request(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RID_IGNORED, BIT(SIM_RID_IDEMPOTENT));
}

/* A store that keeps the grant but not its rid: after a restart the
 * grant's repeats would no longer be recognised. */
static void
test_sim_catches_a_rid_the_store_does_not_keep(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RID_NOT_STORED, BIT(SIM_RID_IDEMPOTENT));
}

/* ---- cluster mode (etcd_sim.c): fail-overs with a failing etcd ------- */

/* A new leader that loads without the take-over rule, as a single node
 * restarts: each record's expiry read by its own wall clock, another
 * machine's, so a lease can end before its holder's belief does. */
static void
test_sim_catches_a_takeover_keeping_the_old_expiries(void **state)
{
	(void)state;
	guard(SIM_VARIANT_TAKEOVER_KEEPS_EXPIRY, BIT(SIM_DURABILITY) |
	    BIT(SIM_LEASE_RECLAMATION_SAFETY) | BIT(SIM_MUTUAL_EXCLUSION));
}

/* A new leader minting from the high-water mark of its own last term
 * instead of the one it loads: fences go back. */
static void
test_sim_catches_a_takeover_minting_from_a_stale_high_water_mark(
    void **state)
{
	(void)state;
	guard(SIM_VARIANT_TAKEOVER_STALE_HWM, BIT(SIM_FENCING_MONOTONIC));
}

/* A deposed leader that takes etcd's failed compare (HTTP 200 without
 * "succeeded") for success, and answers GRANTED and RENEWED. */
static void
test_sim_catches_a_deposed_leader_answering_after_a_refused_compare(
    void **state)
{
	(void)state;
	guard(SIM_VARIANT_DEPOSED_ANSWERS, BIT(SIM_DURABILITY) |
	    BIT(SIM_MUTUAL_EXCLUSION));
}

/* A store that takes a transaction without an answer for written. */
static void
test_sim_catches_a_timed_out_write_taken_for_written(void **state)
{
	(void)state;
	guard(SIM_VARIANT_TIMEOUT_TAKEN_AS_WRITTEN, BIT(SIM_DURABILITY) |
	    BIT(SIM_FENCING_MONOTONIC));
}

/* A store that does not recognise its own replay: a batch that went in,
 * its answer lost, is failed with ERR UNAVAILABLE ("nothing changed")
 * while etcd holds it - a RENEW that shortened a lease, say. */
static void
test_sim_catches_a_replayed_batch_taken_for_a_refusal(void **state)
{
	(void)state;
	guard(SIM_VARIANT_REPLAY_UNDETECTED, BIT(SIM_DURABILITY) |
	    BIT(SIM_LEASE_RECLAMATION_SAFETY) | BIT(SIM_MUTUAL_EXCLUSION) |
	    BIT(SIM_STALE_TOKEN_REJECTION));
}

/* ---- lock kinds: the holder-set rules of tests/lib/broken_rules.c ---- */

static void
test_sim_catches_a_semaphore_admitting_one_over_its_limit(void **state)
{
	(void)state;
	guard(SIM_VARIANT_ADMITS_OVER_LIMIT, BIT(SIM_HOLDER_LIMIT));
}

static void
test_sim_catches_a_reader_admitted_beside_a_writer(void **state)
{
	(void)state;
	guard(SIM_VARIANT_READER_BESIDE_WRITER, BIT(SIM_MUTUAL_EXCLUSION));
}

static void
test_sim_catches_a_reader_overtaking_a_waiting_writer(void **state)
{
	(void)state;
	guard(SIM_VARIANT_READER_OVERTAKES_WRITER, BIT(SIM_FIFO_FAIRNESS));
}

static void
test_sim_catches_a_queue_served_one_grant_at_a_time(void **state)
{
	(void)state;
	guard(SIM_VARIANT_ONE_GRANT_AT_A_TIME, BIT(SIM_NO_STARVATION));
}

static void
test_sim_catches_a_grant_keeping_the_fence_counter(void **state)
{
	(void)state;
	guard(SIM_VARIANT_GRANT_KEEPING_THE_COUNTER,
	    BIT(SIM_FENCING_MONOTONIC));
}

static void
test_sim_catches_a_rid_repeat_finding_any_holder(void **state)
{
	(void)state;
	guard(SIM_VARIANT_RID_ANY_HOLDER, BIT(SIM_RID_IDEMPOTENT));
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_sim_standard_service_keeps_every_property_over_many_seeds),
		cmocka_unit_test(
		    test_sim_standard_runs_reach_every_fault_and_path),
		cmocka_unit_test(test_sim_replays_a_seed_exactly),
		cmocka_unit_test(test_sim_catches_a_store_that_loses_commits),
		cmocka_unit_test(
		    test_sim_catches_a_store_that_forgets_the_high_water_mark),
		cmocka_unit_test(
		    test_sim_catches_replies_sent_before_the_commit),
		cmocka_unit_test(test_sim_catches_a_lost_reply),
		cmocka_unit_test(test_sim_catches_release_ignoring_the_handle),
		cmocka_unit_test(
		    test_sim_catches_renew_checking_only_the_fence),
		cmocka_unit_test(test_sim_catches_a_grant_reusing_a_fence),
		cmocka_unit_test(test_sim_catches_a_queue_served_from_its_tail),
		cmocka_unit_test(test_sim_catches_waiters_never_granted),
		cmocka_unit_test(
		    test_sim_catches_a_lease_ending_a_millisecond_early),
		cmocka_unit_test(
		    test_sim_catches_a_lease_ending_a_millisecond_late),
		cmocka_unit_test(
		    test_sim_catches_expired_leases_never_reclaimed),
		cmocka_unit_test(
		    test_sim_catches_a_grant_while_the_lock_is_held),
		cmocka_unit_test(test_sim_catches_renew_refusing_the_holder),
		cmocka_unit_test(
		    test_sim_catches_replies_that_ignore_the_batch_in_flight),
		cmocka_unit_test(test_sim_catches_lock_delay_ignored),
		cmocka_unit_test(test_sim_catches_force_freeing_any_fence),
		cmocka_unit_test(test_sim_catches_a_watch_firing_on_no_change),
		cmocka_unit_test(test_sim_catches_a_watch_that_never_fires),
		cmocka_unit_test(
		    test_sim_catches_a_rid_repeat_taken_for_a_new_request),
		cmocka_unit_test(test_sim_catches_a_rid_the_store_does_not_keep),
		cmocka_unit_test(
		    test_sim_catches_a_takeover_keeping_the_old_expiries),
		cmocka_unit_test(
		    test_sim_catches_a_takeover_minting_from_a_stale_high_water_mark),
		cmocka_unit_test(
		    test_sim_catches_a_deposed_leader_answering_after_a_refused_compare),
		cmocka_unit_test(
		    test_sim_catches_a_timed_out_write_taken_for_written),
		cmocka_unit_test(
		    test_sim_catches_a_replayed_batch_taken_for_a_refusal),
		cmocka_unit_test(
		    test_sim_catches_a_semaphore_admitting_one_over_its_limit),
		cmocka_unit_test(
		    test_sim_catches_a_reader_admitted_beside_a_writer),
		cmocka_unit_test(
		    test_sim_catches_a_reader_overtaking_a_waiting_writer),
		cmocka_unit_test(
		    test_sim_catches_a_queue_served_one_grant_at_a_time),
		cmocka_unit_test(
		    test_sim_catches_a_grant_keeping_the_fence_counter),
		cmocka_unit_test(
		    test_sim_catches_a_rid_repeat_finding_any_holder),
	};
	const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;

	if (slash != NULL)
		snprintf(sim_bin, sizeof(sim_bin), "%.*s/sim",
		    (int)(slash - argv[0]), argv[0]);
	/* Figures first, cmocka's own lines after. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
