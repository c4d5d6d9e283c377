/*
 * sim.c - the deterministic simulator: the daemon's service layer
 * (daemon/service.c over the core and the protocol code) driven by
 * simulated clients, a simulated clock and a simulated store, every choice
 * drawn from one seeded PRNG.  No sockets, no threads, no real time: a run
 * is a pure function of (seed, options).
 *
 * A loop pass does what one pass of the real server's loop does:
 *   the clock moves (by a random amount, or exactly to the next deadline),
 *   clients connect, pipeline requests (sometimes cut mid-line) and
 *   disconnect, deadlines run (service_tick), the pass ends (a commit
 *   starts when one is due, sometimes an extra service_commit), and every
 *   reply is delivered: parsed with proto_parse_reply and taken off the
 *   output with service_conn_written.  Delivery takes no time.
 * In async runs (most seeds) a commit is what the server's thread pool
 * makes of it: service_commit_begin at the end of a pass, the store's write
 * at some later moment, service_commit_end at the end of this pass or a
 * later one, with requests, ticks, disconnects and crashes in between.
 * Faults: the store fails commits (store_mem.fail_commits, and the
 * before_commit hook); the service crashes before its commit, after it but
 * before the replies, while a batch is being written, or at the end of a
 * pass (service_close without a
 * commit; only what the store committed survives), stops cleanly, and is
 * opened again from the same store, sometimes after a reboot.
 *
 * After every service call the history checker (history.c) is told what
 * happened; the table and the store are looked at only to learn what the
 * history cannot know: when a grant was made, when the table let a lease
 * go, and what a commit made durable.
 *
 * This file is the loop and the runs; the world it moves, with its clients,
 * clock and store, is world.c.  Neither may change anything in daemon/ or
 * core/; the broken variants are in world.c and variants.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim/etcd_sim.h"
#include "tests/sim/world.h"

#define MAX_OUTSTANDING 12     /* sent but unanswered, before it stops */
#define DRAIN_ROUNDS 100000

/* ---- the loop --------------------------------------------------------- */

static void
advance_clock(struct world *w)
{
	unsigned r = (unsigned)world_random_below(w, 100);
	core_time d;

	w->exact = false;
	if (r < 30)
		return;
	if (r < 55) {
		w->now += 1 + (sim_time)world_random_below(w, 20);
		return;
	}
	if (r < 68) {
		w->now += 21 + (sim_time)world_random_below(w, 300);
		return;
	}
	if (r < 73) {
		w->now += (sim_time)world_random_below(w,
		    (uint64_t)w->config.core.max_lease_ms + 1);
		return;
	}
	d = service_next_deadline(w->svc);
	if (d == CORE_NEVER) {
		w->now += 1 + (sim_time)world_random_below(w, 50);
		return;
	}
	d += w->boot_off;
	if (d <= w->now) {
		w->exact = d == w->now;
		return;
	}
	if (r < 92) {
		w->now = d;
		w->exact = true;
	} else if (r < 96) {
		w->now = d - 1;
	} else {
		w->now = d + 1;
	}
}

static void
client_act(struct world *w, struct client *c)
{
	unsigned r;

	if (!c->connected) {
		if (world_random_percent(w, 30))
			world_client_connect(w, c);
		return;
	}
	r = (unsigned)world_random_below(w, 1000);
	if (r < 15) {
		world_client_disconnect(w, c, "disconnects");
		return;
	}
	if (r < 600 && !c->quit_sent) {
		unsigned n = 1 + (unsigned)world_random_below(w, 3), k;
		if (world_random_percent(w, 10))
			n = 1 + (unsigned)world_random_below(w, 6);
		for (k = 0; k < n && !c->quit_sent &&
		    c->tail - c->head < MAX_OUTSTANDING; k++)
			world_queue_request(w, c, k + 1 == n);
	}
	if (c->buf_len > 0 && world_random_percent(w, 85)) {
		size_t k = c->buf_len;
		if (world_random_percent(w, 10))
			k = 1 + (size_t)world_random_below(w, c->buf_len);
		world_client_feed(w, c, k);
	}
}

static void
inject_faults(struct world *w)
{
	if (world_random_below(w, 1000) < w->fail_permille) {
		w->mem.fail_commits += 1 + (int)world_random_below(w, 3);
		world_trace(w, "the store will fail %d commits",
		    w->mem.fail_commits);
	}
	if (world_random_below(w, 3000) < w->fail_permille)
		w->hook_failures += 1 + (int)world_random_below(w, 2);
}

enum { CRASH_NONE, CRASH_BEFORE_COMMIT, CRASH_BEFORE_DELIVERY,
    CRASH_AT_END };

static void
pass(struct world *w)
{
	unsigned crash_at = CRASH_NONE, start;
	int k;

	w->pass++;
	w->res->passes++;
	advance_clock(w);
	inject_faults(w);
	if (w->etcd != NULL)
		etcd_sim_pass(w);
	if (world_random_below(w, 1000) < w->crash_permille)
		crash_at = 1 + (unsigned)world_random_below(w, 3);
	world_open_gate(w);
	start = (unsigned)world_random_below(w, (uint64_t)w->nclients);
	for (k = 0; k < w->nclients; k++) {
		struct client *c = &w->clients[(start + (unsigned)k) %
		    (unsigned)w->nclients];
		if (!c->connected || world_random_percent(w, 45))
			client_act(w, c);
		if (w->async && world_random_percent(w, 10))
			world_write_inflight(w);
		/* A recovery that failed (a store a broken variant filled
		 * with what cannot be loaded) ends the run. */
		if (w->broken)
			return;
	}
	if (world_random_percent(w, w->exact ? 90 : 50))
		world_tick(w);
	if (w->opt->variant == SIM_VARIANT_REPLIES_BEFORE_COMMIT)
		world_deliver(w);
	if (crash_at == CRASH_BEFORE_COMMIT) {
		world_crash(w, SIM_COV_CRASH_BEFORE_COMMIT);
		return;
	}
	world_end_pass(w);
	if (w->broken)
		return;
	if (!service_commit_inflight(w->svc) && world_random_percent(w, 8))
		world_commit_now(w);
	if (w->broken)
		return;
	if (crash_at == CRASH_BEFORE_DELIVERY) {
		world_crash(w, SIM_COV_CRASH_BEFORE_DELIVERY);
		return;
	}
	world_deliver(w);
	hist_settle(w->hist);
	if (crash_at == CRASH_AT_END)
		world_crash(w, SIM_COV_CRASH_AT_PASS_END);
	else if (world_random_below(w, 1000) < w->restart_permille)
		world_clean_restart(w);
}

/*
 * NoStarvation: the clients fall silent, the clock runs to every deadline
 * in turn, and once nothing is left to happen every request must have its
 * answer.
 */
static void
drain(struct world *w)
{
	int i, round;

	world_trace(w, "drain");
	w->draining = true;
	w->async = false;
	w->mem.fail_commits = 0;
	w->hook_failures = 0;
	if (w->etcd != NULL)
		etcd_sim_calm(w);
	for (i = 0; i < w->nclients; i++) {
		struct client *c = &w->clients[i];
		/* A FORCE or WATCH starts a read of its own: several. */
		for (round = 0; round < REQ_RING && c->connected &&
		    c->buf_len > 0; round++)
			world_client_feed(w, c, c->buf_len);
	}
	for (round = 0; round < DRAIN_ROUNDS; round++) {
		core_time d;
		world_end_pass(w);
		world_deliver(w);
		hist_settle(w->hist);
		d = service_next_deadline(w->svc);
		if (d == CORE_NEVER)
			break;
		if (d + w->boot_off > w->now)
			w->now = d + w->boot_off;
		w->exact = true;
		world_tick(w);
	}
	world_commit_now(w);
	world_deliver(w);
	hist_settle(w->hist);
	for (i = 0; i < w->nclients; i++) {
		struct client *c = &w->clients[i];
		uint32_t k;
		if (!c->connected)
			continue;
		for (k = c->head; k != c->exec; k++) {
			const struct sim_req *r = &c->req[k % REQ_RING];
			char req[PROTO_REPLY_MAX];
			size_t n = world_format_request(w, r, req, sizeof(req));
			hist_checked(w->hist);
			hist_violation(w->hist, SIM_NO_STARVATION,
			    "client %d: \"%.*s\" (t=%lld) was never answered",
			    c->id, (int)(n > 0 ? n - 1 : 0), req,
			    (long long)r->t);
		}
	}
}

/* ---- runs ------------------------------------------------------------- */

void
sim_options_defaults(struct sim_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->steps = SIM_STEPS_DEFAULT;
	opt->max_reports = 5;
}

/* The daemon logs every failed commit at level error; a run makes
 * thousands.  They go to a sink unless asked for. */
static FILE *
log_sink(void)
{
	static FILE *sink;

	if (sink == NULL)
		sink = fopen("/dev/null", "w");
	return sink;
}

uint64_t
sim_run(uint64_t seed, const struct sim_options *opt, struct sim_result *res)
{
	struct world *w = calloc(1, sizeof(*w));
	FILE *saved = stderr;
	uint64_t step;

	if (w == NULL)
		world_fatal("out of memory");
	memset(res, 0, sizeof(*res));
	res->seed = seed;
	res->digest = 0xcbf29ce484222325ULL;
	if (!opt->show_logs && log_sink() != NULL)
		stderr = log_sink();
	world_init(w, seed, opt, res);
	world_open_service(w);
	for (step = 0; step < opt->steps && !w->broken; step++)
		pass(w);
	if (!w->broken)
		drain(w);
	world_free(w);
	free(w);
	stderr = saved;
	return res->violations;
}

size_t
sim_replay_command(char *out, size_t cap, const char *bin, uint64_t seed,
    const struct sim_options *opt)
{
	int n = snprintf(out, cap, "%s --seed %llu", bin,
	    (unsigned long long)seed);

	if (n >= 0 && (size_t)n < cap && opt->steps != SIM_STEPS_DEFAULT)
		n += snprintf(out + n, cap - (size_t)n, " --steps %llu",
		    (unsigned long long)opt->steps);
	if (n >= 0 && (size_t)n < cap && opt->cluster)
		n += snprintf(out + n, cap - (size_t)n, " --cluster");
	if (n >= 0 && (size_t)n < cap && opt->variant != SIM_VARIANT_NONE)
		n += snprintf(out + n, cap - (size_t)n, " --variant %s",
		    sim_variant_name(opt->variant));
	return n < 0 ? 0 : (size_t)n;
}

void
sim_print_result(FILE *out, const struct sim_result *r)
{
	fprintf(out, "seed=%llu requests=%llu grants=%llu crashes=%llu "
	    "restarts=%llu failovers=%llu failed_commits=%llu checks=%llu "
	    "violations=%llu\n",
	    (unsigned long long)r->seed, (unsigned long long)r->requests,
	    (unsigned long long)r->grants, (unsigned long long)r->crashes,
	    (unsigned long long)r->clean_restarts,
	    (unsigned long long)r->failovers,
	    (unsigned long long)r->failed_commits,
	    (unsigned long long)r->checks,
	    (unsigned long long)r->violations);
}
