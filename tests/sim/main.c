/*
 * main.c - build/tests/sim, the simulator's command line: run one seed,
 * a range of seeds, or seeds until a number of requests is reached, print
 * the figures, and on a violation the command that replays it.
 *
 *   sim                       seeds 1, 2, ... until 1,000,000 requests
 *   sim --seed N              seed N alone (a replay)
 *   sim --seed N --seeds K    seeds N .. N+K-1
 *   sim --requests R          seeds until R requests
 *   --steps S  loop passes per run     --variant V  a broken variant
 *   --trace    every step              --logs       the daemon's log lines
 *   --quiet    totals only             --cluster    every seed in cluster mode
 *                                      (else one in three, by the seed)
 *
 * Exits 0 when every check held, 1 on a violation, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/sim/sim.h"

static void
usage(FILE *f)
{
	int i;

	fprintf(f, "usage: sim [--seed N] [--seeds K] [--requests R] "
	    "[--steps S]\n           [--variant V] [--trace] [--logs] "
	    "[--quiet] [--cluster]\nvariants:");
	for (i = 0; i < SIM_VARIANTS; i++)
		fprintf(f, " %s", sim_variant_name((enum sim_variant)i));
	fprintf(f, "\n");
}

static bool
number(const char *s, uint64_t *v)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return false;
	*v = strtoull(s, &end, 10);
	return *end == '\0';
}

int
main(int argc, char **argv)
{
	struct sim_options opt;
	struct sim_result res;
	uint64_t first = 1, seeds = 0, requests = 0, seed;
	uint64_t total_req = 0, total_grants = 0, total_crashes = 0;
	uint64_t total_failed = 0, total_checks = 0, total_violations = 0;
	uint64_t total_failovers = 0;
	uint64_t runs = 0, failed_runs = 0;
	bool have_seed = false, quiet = false;
	struct timespec t0, t1;
	char replay[256];
	int i;

	sim_options_defaults(&opt);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool ok = true, takes_value = true;

		if (strcmp(a, "--seed") == 0) {
			ok = number(v, &first);
			have_seed = true;
		} else if (strcmp(a, "--seeds") == 0) {
			ok = number(v, &seeds) && seeds > 0;
		} else if (strcmp(a, "--requests") == 0) {
			ok = number(v, &requests) && requests > 0;
		} else if (strcmp(a, "--steps") == 0) {
			ok = number(v, &opt.steps);
		} else if (strcmp(a, "--variant") == 0) {
			ok = v != NULL && sim_variant_parse(v, &opt.variant);
		} else {
			takes_value = false;
			if (strcmp(a, "--trace") == 0)
				opt.trace = true;
			else if (strcmp(a, "--logs") == 0)
				opt.show_logs = true;
			else if (strcmp(a, "--quiet") == 0)
				quiet = true;
			else if (strcmp(a, "--cluster") == 0)
				opt.cluster = true;
			else if (strcmp(a, "--help") == 0 ||
			    strcmp(a, "-h") == 0) {
				usage(stdout);
				return 0;
			} else
				ok = false;
		}
		if (!ok) {
			fprintf(stderr, "sim: bad argument: %s%s%s\n", a,
			    takes_value && v != NULL ? " " : "",
			    takes_value && v != NULL ? v : "");
			usage(stderr);
			return 2;
		}
		if (takes_value)
			i++;
	}
	if (seeds == 0 && requests == 0) {
		if (have_seed)
			seeds = 1;
		else
			requests = 1000000;
	}
	if (quiet)
		opt.max_reports = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (seed = first;; seed++) {
		if (seeds != 0 && runs >= seeds)
			break;
		if (seeds == 0 && total_req >= requests)
			break;
		sim_run(seed, &opt, &res);
		runs++;
		total_req += res.requests;
		total_grants += res.grants;
		total_crashes += res.crashes + res.clean_restarts;
		total_failed += res.failed_commits;
		total_failovers += res.failovers;
		total_checks += res.checks;
		total_violations += res.violations;
		if (!quiet)
			sim_print_result(stdout, &res);
		if (res.violations > 0) {
			failed_runs++;
			sim_replay_command(replay, sizeof(replay), argv[0],
			    seed, &opt);
			printf("FAILED seed=%llu %s\n  replay: %s\n",
			    (unsigned long long)seed, res.first_violation,
			    replay);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("sim%s%s: %llu seeds, %llu requests, %llu grants, %llu "
	    "crashes and restarts, %llu fail-overs, %llu failed commits, "
	    "%llu checks, %llu "
	    "violations (%llu seeds failed), %.1f s\n",
	    opt.variant != SIM_VARIANT_NONE ? " --variant " : "",
	    opt.variant != SIM_VARIANT_NONE ? sim_variant_name(opt.variant) :
	    "", (unsigned long long)runs, (unsigned long long)total_req,
	    (unsigned long long)total_grants,
	    (unsigned long long)total_crashes,
	    (unsigned long long)total_failovers,
	    (unsigned long long)total_failed,
	    (unsigned long long)total_checks,
	    (unsigned long long)total_violations,
	    (unsigned long long)failed_runs,
	    (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return total_violations > 0 ? 1 : 0;
}
