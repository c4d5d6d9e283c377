/*
 * model.h - internal to tests/model/: the exhaustive model checker that
 * drives the production lock table (core_table_*) through every
 * interleaving of small scenarios and checks the safety and liveness
 * properties of docs/design-core.md after every step.
 *
 * A scenario is a handful of scripted clients, a few clock instants and a
 * crash budget; the checker explores every order of their actions by depth
 * first search, rebuilding each state by replaying its action prefix on a
 * fresh table, and merges states with equal canonical encodings.  The rules
 * under test are a struct core_rules: core_rules_std, or one of the broken
 * rule sets of tests/lib/broken_rules.c (named in variants.c), which exist
 * only under tests/ and never in core/.
 */
#ifndef LOCKD_TESTS_MODEL_H
#define LOCKD_TESTS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define MODEL_CLIENTS 6
#define MODEL_NAMES 2
#define MODEL_OPS 4
#define MODEL_TIMES 6

/* The properties, in the order the catalogue lists them. */
enum model_property {
	MODEL_OK = 0,
	MODEL_FENCING_MONOTONIC,
	MODEL_MUTUAL_EXCLUSION,
	MODEL_STALE_TOKEN_REJECTION,
	MODEL_LEASE_RECLAMATION_SAFETY,
	MODEL_FIFO_FAIRNESS,
	MODEL_NO_STARVATION,
	MODEL_LOCK_DELAY,          /* nobody is granted a name in lock-delay */
	MODEL_FORCE_EXACT_FENCE,   /* FORCE frees only the holder it names */
	MODEL_WATCH_ONCE,          /* answered once, not before the change,
				      not after the step that makes it */
	MODEL_RID_IDEMPOTENT,      /* a repeat of the live holder's rid gets
				      that grant back and changes nothing;
				      any other request is no repeat */
	MODEL_HOLDER_LIMIT,        /* never more than limit holders */
	/* Not a property of the service but of the model: the table, its
	 * replies and the durable records agree with the checker's own
	 * account of the protocol. */
	MODEL_SHADOW_AGREEMENT,
	MODEL_PROPERTIES
};

const char *model_property_name(enum model_property p);

/*
 * Things that must happen somewhere in the standard run, or the scenarios
 * no longer test what docs/design-core.md says they do.
 */
enum model_coverage {
	MODEL_COV_GRANT_AT_ONCE,
	MODEL_COV_HANDOFF_ON_RELEASE,
	MODEL_COV_HANDOFF_ON_TICK,       /* reclaimed by core_tick, handed on */
	MODEL_COV_HANDOFF_ON_OP,         /* reclaimed by an op, handed on */
	MODEL_COV_HANDOFF_ON_DISCONNECT,
	MODEL_COV_RECLAIM_AT_EXPIRY,     /* by a tick at exactly the expiry */
	MODEL_COV_WAIT_TIMEOUT,
	MODEL_COV_RENEWED,
	MODEL_COV_STALE_RENEW,           /* the holder's own, too late */
	MODEL_COV_STALE_RELEASE,
	MODEL_COV_FORGED_RENEW,
	MODEL_COV_FORGED_RELEASE,
	MODEL_COV_TRY_GRANTED,
	MODEL_COV_TRY_HELD,
	MODEL_COV_WAITER_DISCONNECT,
	MODEL_COV_ONCLOSE_DISCONNECT,
	MODEL_COV_CRASH,
	MODEL_COV_CRASH_BEFORE_COMMIT,   /* a GRANTED or RENEWED was lost */
	MODEL_COV_CRASH_BEFORE_REPLY,    /* ... after its commit */
	MODEL_COV_COMMIT_FAILED,         /* a reply became UNAVAILABLE */
	MODEL_COV_FALLBACK_HANDOFF,      /* the fall-back handed a lock on */
	MODEL_COV_RESTORED_HOLDER,       /* a lease survived a restart */
	MODEL_COV_RESTORED_ONCLOSE,      /* released by the restart */
	MODEL_COV_RESTORED_EXPIRED,      /* reclaimed by the restart */
	MODEL_COV_FENCE_REMINTED,        /* a lost fence minted again */
	MODEL_COV_DELAY_HELD_BACK,       /* a TRY or waiter met a delay */
	MODEL_COV_DELAY_HANDOFF,         /* a delay ended, a waiter granted */
	MODEL_COV_DELAY_RESTORED,        /* a free name's delay survived */
	MODEL_COV_FORCED,
	MODEL_COV_FORCE_STALE,           /* FORCE of a fence no longer held */
	MODEL_COV_WATCH_FIRED,
	MODEL_COV_WATCH_TIMEOUT,
	MODEL_COV_RID_REPEAT,            /* a rid repeat got its grant */
	MODEL_COV_RID_LOST_REPLY,        /* ... whose GRANTED a crash lost */
	MODEL_COV_RID_NEW_GRANT,         /* a rid after its hold: new grant */
	MODEL_COV_RID_REBOUND,           /* a repeat took an onclose binding */
	MODEL_COV_RID_SUPERSEDED,        /* a repeat took a waiter's place */
	MODEL_COV_SHARED_RUN,            /* two readers granted in one step */
	MODEL_COV_READER_BEHIND_WRITER,  /* a reader queued behind a writer
	                                    while readers held */
	MODEL_COV_WRITER_LEFT,           /* a writer left the queue and the
	                                    readers behind it were granted */
	MODEL_COV_SEMAPHORE_FULL,        /* a permit request met the limit */
	MODEL_COV_RID_AMONG_HOLDERS,     /* a rid repeat with several holders */
	MODEL_COV_KIND_MISFIT,           /* another limit answered BADARG */
	MODEL_COV_FALLBACK_MISFIT,       /* a fall-back refused a waiter */
	MODEL_COV_FALLBACK_KEPT_LIMIT,   /* ... kept its waiters' limit
	                                    over the records' */
	MODEL_COVERAGE
};
/* A step's coverage is a bit set (struct sys's cov). */
_Static_assert(MODEL_COVERAGE <= 64, "coverage bits fit in 64");

const char *model_coverage_name(enum model_coverage c);

/* What a scripted client does next. */
enum model_op_kind {
	MODEL_ACQUIRE,        /* lease, wait, onclose */
	MODEL_TRY,            /* lease, onclose */
	MODEL_RENEW,          /* with its own last handle for the name */
	MODEL_RELEASE,        /* with its own last handle for the name */
	MODEL_FORGE_RENEW,    /* the holder's fence, a wrong secret */
	MODEL_FORGE_RELEASE,  /* the holder's fence, a wrong secret */
	MODEL_DISCONNECT,     /* core_disconnect; the client is gone */
	MODEL_FORCE,          /* FORCE with the op's fence */
	MODEL_WATCH           /* WATCH of the op's fence (or any change), wait */
};

/* MODEL_WATCH without fence=: the next change. */
#define MODEL_WATCH_ANY UINT64_MAX

struct model_op {
	enum model_op_kind kind;
	uint8_t name;         /* index in the scenario's names */
	int64_t lease_ms;
	int64_t wait_ms;      /* CORE_WAIT_FOREVER, 0 or > 0 */
	bool onclose;
	int64_t delay_ms;     /* ACQUIRE's lock-delay */
	uint64_t fence;       /* FORCE's and WATCH's */
	const char *rid;      /* ACQUIRE's and TRY's rid=; NULL: none */
	uint16_t limit;       /* ACQUIRE's and TRY's limit=; 0: none */
	bool shared;          /* ACQUIRE's and TRY's mode=shared */
};

struct model_client {
	char label;           /* 'A', 'B'... in traces */
	uint8_t nops;
	struct model_op ops[MODEL_OPS];
};

struct model_scenario {
	const char *name;
	const char *summary;
	uint8_t nnames;
	const char *names[MODEL_NAMES];
	uint8_t nclients;
	struct model_client clients[MODEL_CLIENTS];
	/* The clock starts at times[0] and steps through the rest. */
	uint8_t ntimes;
	core_time times[MODEL_TIMES];
	/* Crash-restarts allowed per schedule: between actions, after an
	 * action's commit but before its replies, or before its commit. */
	uint8_t crashes;
	/* Failed commits allowed per schedule: the batch is not written, the
	 * locks it touched fall back to the disk (core_table_restore), its
	 * GRANTED and RENEWED become UNAVAILABLE, and the retry commits what
	 * the fall-back did. */
	uint8_t commit_failures;
	/* The most actions a failed commit's batch may hold (0, 1: one),
	 * as one turn of the daemon's loop batches several: an action's
	 * changes and replies wait for the next one's commit, and the
	 * batch's last commit fails with all of them, so the fall-back
	 * meets grants and waiters the store never saw. */
	uint8_t batch;
	/* Fail-overs allowed per schedule (cluster mode, failover.c): every
	 * connection closes and a new leader rebuilds the table from the
	 * committed state by the take-over rule (core/takeover.h), while
	 * the clients keep what they were told. */
	uint8_t failovers;
};

extern const struct model_scenario model_scenarios[];
extern const size_t model_nscenarios;

/*
 * Mistakes in how a daemon would use the core rather than in the core:
 * the model plays the daemon's part (commit, then deliver), and these make
 * it play it wrong.
 */
enum model_harness {
	MODEL_HARNESS_RIGHT = 0,
	MODEL_HARNESS_FORGET_HWM = 1,         /* the store never saves it */
	MODEL_HARNESS_DELIVER_FIRST = 2,      /* GRANTED before the commit */
	MODEL_HARNESS_FAILOVER_STALE_HWM = 4  /* a new leader mints from the
	                                         high-water mark it started
	                                         with, not the committed one */
};

/* The leader lease of the fail-over action, in the scenarios' time. */
#define MODEL_LEADER_LEASE 5

/* A deliberately broken table of rules, or a broken harness, and the
 * property that must catch it. */
struct model_variant {
	const char *name;
	const char *what;
	const struct core_rules *rules;
	enum model_harness harness;
	enum model_property expected;
};

extern const struct model_variant model_variants[];
extern const size_t model_nvariants;
const struct model_variant *model_variant_find(const char *name);

/* What one exploration found. */
struct model_result {
	uint64_t states;        /* distinct states */
	uint64_t schedules;     /* complete action sequences covered */
	uint64_t executions;    /* action sequences actually replayed */
	uint64_t transitions;   /* edges of the state graph */
	unsigned depth;         /* longest schedule */
	double seconds;
	/* The first violation of each property, if any. */
	uint64_t found_after[MODEL_PROPERTIES];   /* executions so far */
	char trace[MODEL_PROPERTIES][512];
	char message[MODEL_PROPERTIES][256];
	enum model_property first;                 /* the first found */
	uint64_t covered[MODEL_COVERAGE];          /* transitions with it */
};

/*
 * Explores every schedule of the scenario under the rules.  Violating
 * schedules are cut where they fail; the search stops early once `stop_at`
 * has been violated (MODEL_OK: never stop early).
 */
void model_explore(const struct model_scenario *scenario,
    const struct core_rules *rules, enum model_harness harness,
    enum model_property stop_at, struct model_result *result);

#endif /* LOCKD_TESTS_MODEL_H */
