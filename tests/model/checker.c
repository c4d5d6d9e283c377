/*
 * checker.c - the exhaustive model checker.  It drives the production lock
 * table (core_table_* over a struct core_rules) through every interleaving
 * of a bounded scenario: scripted clients, clock steps, ticks and
 * crash-restarts.  After every step it checks the properties against its
 * own small account of the protocol (the "shadow": who holds each lock
 * until when, who waits in which order, what each client was told, what
 * the disk holds) and checks that the table agrees with that account.
 *
 * The core has no copy function, so a state is rebuilt by replaying its
 * action prefix on a fresh table.  States are merged by a canonical
 * encoding of everything that decides the future: the clock, the shadow,
 * the durable records, every client's knowledge and pending request, and
 * the table itself (holders, queues, timers, the heap's layout, sessions'
 * bindings).  The number of complete schedules is counted through the
 * merged state graph, so it is exact although each state is run once.
 *
 * Durability is modelled as the daemon must implement it: after every
 * action the model drains core_table_changes onto its "disk" and only then
 * delivers GRANTED and RENEWED; other replies go out at once.  A crash
 * destroys the table (waiters and sessions are gone) and recovers from the
 * disk.  It strikes between two actions, after an action's commit but
 * before its GRANTED and RENEWED go out, or before the commit, which loses
 * the action's changes too.
 *
 * This file is the search; shadow.c holds the system and its shadow,
 * states.c the encoding and the visited set.  Nothing here may change
 * core/: broken rules come from tests/lib/broken_rules.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/model/states.h"

#define MAX_DEPTH 64

const char *
model_property_name(enum model_property p)
{
	static const char *const names[MODEL_PROPERTIES] = {
		"none",
		"FencingMonotonic",
		"MutualExclusion",
		"StaleTokenRejection",
		"LeaseReclamationSafety",
		"FifoFairness",
		"NoStarvation",
		"LockDelay",
		"ForceExactFence",
		"WatchOnce",
		"RidIdempotent",
		"HolderLimit",
		"ShadowAgreement",
	};

	return (unsigned)p < MODEL_PROPERTIES ? names[p] : "?";
}

const char *
model_coverage_name(enum model_coverage c)
{
	static const char *const names[MODEL_COVERAGE] = {
		"grant at once",
		"hand-off on release",
		"hand-off on reclaim by tick",
		"hand-off on reclaim by an op",
		"hand-off on disconnect",
		"reclaim at exactly the expiry",
		"wait timeout",
		"renewed",
		"stale renew",
		"stale release",
		"forged renew",
		"forged release",
		"TRY granted",
		"TRY held",
		"waiter disconnect",
		"onclose holder disconnect",
		"crash",
		"crash before commit lost a reply",
		"crash after commit lost a reply",
		"failed commit answered UNAVAILABLE",
		"fall-back handed a lock on",
		"lease survived a restart",
		"onclose lease released by restart",
		"expired lease reclaimed by restart",
		"lost fence minted again",
		"a TRY or waiter held back by a delay",
		"a delay ended and a waiter granted",
		"a free name's delay survived a restart",
		"FORCE freed its holder",
		"FORCE of a stale fence refused",
		"WATCH answered CHANGED",
		"WATCH timed out",
		"a rid repeat got its grant back",
		"a rid repeat found a grant whose reply a crash lost",
		"a rid after its hold ended got a new grant",
		"a rid repeat took over an onclose binding",
		"a rid repeat took a waiter's place",
		"two readers granted in one step",
		"a reader queued behind a writer",
		"a writer left, readers behind granted",
		"a permit request met the limit",
		"a rid repeat among several holders",
		"another limit answered BADARG",
		"a fall-back refused a misfit waiter",
		"a fall-back kept its waiters' limit",
	};

	return (unsigned)c < MODEL_COVERAGE ? names[c] : "?";
}

/* ---- the search ------------------------------------------------------- */

struct explorer {
	const struct model_scenario *sc;
	const struct core_rules *rules;
	enum model_harness harness;
	enum model_property stop_at;
	bool stop;
	struct visited seen;
	uint8_t prefix[MAX_DEPTH];
	struct model_result *res;
	struct sys sys;
};

static uint64_t
add_paths(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Rebuilds the state after prefix[0..len) on a fresh table. */
static void
replay(struct explorer *x, unsigned len)
{
	unsigned i;

	model__sys_fini(&x->sys);
	model__sys_init(&x->sys, x->sc, x->rules, x->harness);
	x->res->executions++;
	for (i = 0; i < len && x->sys.violated == MODEL_OK; i++)
		model__step(&x->sys, x->prefix[i]);
}

/* Writes the schedule prefix[0..len) as words, replaying it on a scratch
 * system so that each op is named by the script position it really ran. */
static void
describe(const struct explorer *x, unsigned len, bool ran_out, char *buf,
    size_t size)
{
	const struct model_scenario *sc = x->sc;
	struct sys *s = model__xrealloc(NULL, sizeof(*s));
	size_t at = 0;
	unsigned i;

	model__sys_init(s, sc, x->rules, x->harness);
	buf[0] = '\0';
	for (i = 0; i < len && at < size; i++) {
		uint8_t a = x->prefix[i], base = a & (uint8_t)~ACT_FLAGS;
		char word[48];

		if (base == ACT_CLOCK)
			snprintf(word, sizeof(word), "t=%lld",
			    (long long)sc->times[s->clock + 1]);
		else if (base == ACT_TICK)
			snprintf(word, sizeof(word), "tick");
		else if (base == ACT_CRASH)
			snprintf(word, sizeof(word), "crash");
		else if (base == ACT_FAILOVER)
			snprintf(word, sizeof(word), "failover");
		else
			snprintf(word, sizeof(word), "%c.%s",
			    sc->clients[base].label,
			    model__op_word(sc->clients[base].ops[s->cl[base].pc].kind));
		at += (size_t)snprintf(buf + at, size - at, "%s%s%s",
		    i ? " " : "", word, a & ACT_LOST ?
		    "+crash-before-commit" : a & ACT_UNSENT ?
		    "+crash-before-reply" : a & ACT_FAILED ?
		    "+commit-fails" : a & ACT_BATCHED ?
		    "+batched" : "");
		model__step(s, a);
	}
	if (ran_out && at < size)
		snprintf(buf + at, size - at, " | run out the clock");
	model__sys_fini(s);
	free(s);
}

static void
record(struct explorer *x, unsigned len, bool ran_out)
{
	struct model_result *r = x->res;
	enum model_property p = x->sys.violated;

	if (r->found_after[p] == 0) {
		r->found_after[p] = r->executions;
		describe(x, len, ran_out, r->trace[p], sizeof(r->trace[p]));
		snprintf(r->message[p], sizeof(r->message[p]), "%s",
		    x->sys.why);
	}
	if (r->first == MODEL_OK)
		r->first = p;
	if (p == x->stop_at)
		x->stop = true;
}

/* Explores from the state after prefix[0..depth), which x->sys holds. */
static uint64_t
explore(struct explorer *x, unsigned depth)
{
	uint8_t acts[MAX_ACTIONS];
	static uint8_t enc[ENCODING_MAX];
	size_t nacts = model__enabled(&x->sys, acts), i;
	uint64_t paths = 0;
	int c;

	if (depth > x->res->depth)
		x->res->depth = depth;
	if (nacts == 0) {
		model__run_out_the_clock(&x->sys);
		if (x->sys.violated != MODEL_OK)
			record(x, depth, true);
		return 1;
	}
	if (depth + 1 >= MAX_DEPTH) {
		fprintf(stderr, "model_check: schedules longer than %d\n",
		    MAX_DEPTH);
		abort();
	}
	for (i = 0; i < nacts && !x->stop; i++) {
		size_t len, idx;
		bool added;

		x->prefix[depth] = acts[i];
		if (i > 0)
			replay(x, depth);
		model__step(&x->sys, acts[i]);
		x->res->transitions++;
		for (c = 0; c < MODEL_COVERAGE; c++)
			if (x->sys.cov & ((uint64_t)1 << c))
				x->res->covered[c]++;
		if (x->sys.violated != MODEL_OK) {
			record(x, depth + 1, false);
			paths = add_paths(paths, 1);
			continue;
		}
		len = model__encode(&x->sys, enc);
		idx = model__visited_get(&x->seen, enc, len, &added);
		if (!added) {
			if (!x->seen.nodes[idx].done) {
				fprintf(stderr, "model_check: a cycle in the "
				    "state graph of %s\n", x->sc->name);
				abort();
			}
			paths = add_paths(paths, x->seen.nodes[idx].paths);
			continue;
		}
		x->res->states++;
		{
			uint64_t sub = explore(x, depth + 1);

			x->seen.nodes[idx].done = true;
			x->seen.nodes[idx].paths = sub;
			paths = add_paths(paths, sub);
		}
	}
	return paths;
}

void
model_explore(const struct model_scenario *sc, const struct core_rules *rules,
    enum model_harness harness, enum model_property stop_at,
    struct model_result *result)
{
	struct explorer *x = calloc(1, sizeof(*x));
	struct timespec t0, t1;
	static uint8_t enc[ENCODING_MAX];
	size_t len, idx;
	bool added;

	if (x == NULL)
		abort();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(result, 0, sizeof(*result));
	x->sc = sc;
	x->rules = rules;
	x->harness = harness;
	x->stop_at = stop_at;
	x->res = result;

	replay(x, 0);
	len = model__encode(&x->sys, enc);
	idx = model__visited_get(&x->seen, enc, len, &added);
	result->states = 1;
	result->schedules = explore(x, 0);
	if (!x->stop)
		x->seen.nodes[idx].done = true;

	model__sys_fini(&x->sys);
	model__visited_free(&x->seen);
	free(x);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	result->seconds = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}
