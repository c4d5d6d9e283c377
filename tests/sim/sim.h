/*
 * sim.h - the deterministic simulator of lockd (tests/sim/).
 *
 * The simulator runs the daemon's own service layer (daemon/service.c, the
 * core and the protocol code, linked from the same libraries as lockd)
 * under simulated clients, a simulated clock and a simulated store that
 * fails commits and crashes.  One seeded PRNG drives every choice, so a run
 * is a pure function of its seed and options: `build/tests/sim --seed N`
 * replays it exactly.
 *
 * One seed in three (every seed with --cluster) runs in cluster mode
 * (etcd_sim.c): the store is a simulated etcd behind the guarded
 * transactions of daemon/store_etcd.c, failing as etcd fails, and the
 * service fails over between nodes with clocks of their own, as
 * daemon/leader.c makes it.
 *
 * After every step the run is checked against the property catalogue,
 * judged from what the clients were told (the history), with the service's
 * lock table and the store consulted only where the history cannot know
 * (see history.c).  Broken variants (variants.c, world.c and the shared
 * tests/lib/broken_rules.c) exist to show that every check can fail; the
 * daemon has no way to select them.
 */
#ifndef LOCKD_TESTS_SIM_H
#define LOCKD_TESTS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "daemon/store.h"

/* The properties the simulator checks, in the order of the catalogue. */
enum sim_property {
	SIM_FENCING_MONOTONIC,
	SIM_MUTUAL_EXCLUSION,
	SIM_STALE_TOKEN_REJECTION,
	SIM_LEASE_RECLAMATION_SAFETY,
	SIM_FIFO_FAIRNESS,
	SIM_NO_STARVATION,
	/* Every request gets exactly one reply, of a kind that answers it,
	 * in request order per connection. */
	SIM_REPLY_ORDER,
	/* GRANTED and RENEWED leave only once the store holds their state,
	 * and a crash forgets no told grant or renewal. */
	SIM_DURABILITY,
	/* The converse of StaleTokenRejection: the current holder's RENEW
	 * or RELEASE is not refused. */
	SIM_HOLDER_ACCEPTED,
	/* A name whose lease expired with delay=D is granted to nobody
	 * until D after that expiry. */
	SIM_LOCK_DELAY,
	/* A WATCH is answered once (ReplyOrder), CHANGED only when the
	 * holder's fence differs from the one watched, and at once when it
	 * already differs: never ERR TIMEOUT then. */
	SIM_WATCH_CHANGE,
	/* An ACQUIRE or TRY with the rid of the live holder's grant is told
	 * that grant again (its fence, its handle, the lease it has left)
	 * and nothing else; and that rid is durable with the grant: the
	 * store's record of the holder has the rid the table has. */
	SIM_RID_IDEMPOTENT,
	/* Lock kinds (limit=, mode=shared): never more live holders of a
	 * semaphore name than its limit. */
	SIM_HOLDER_LIMIT,
	SIM_PROPERTIES
};

/* The broken variants of the guard tests (variants.c). */
enum sim_variant {
	SIM_VARIANT_NONE,
	/* Stores. */
	SIM_VARIANT_STORE_DROPS_BATCHES,   /* claims success, writes nothing */
	SIM_VARIANT_STORE_FORGETS_HWM,     /* never writes the high-water mark */
	/* The way out. */
	SIM_VARIANT_REPLIES_BEFORE_COMMIT, /* reply gate open, output first */
	SIM_VARIANT_TRANSPORT_LOSES_REPLY, /* a reply line is lost */
	/* Core rules (struct core_rules swapped in after service_open). */
	SIM_VARIANT_RELEASE_IGNORES_HANDLE,
	SIM_VARIANT_RENEW_BY_FENCE_ONLY,
	SIM_VARIANT_GRANT_REUSES_FENCE,
	SIM_VARIANT_QUEUE_IS_LIFO,
	SIM_VARIANT_WAITERS_NEVER_GRANTED,
	SIM_VARIANT_LEASE_ENDS_EARLY,      /* expired 1 ms before its expiry */
	SIM_VARIANT_LEASE_ENDS_LATE,       /* expired 1 ms after its expiry */
	SIM_VARIANT_NEVER_RECLAIMS,
	SIM_VARIANT_GRANT_WHILE_HELD,
	SIM_VARIANT_RENEW_REFUSES_HOLDER,
	SIM_VARIANT_INFLIGHT_UNGATED,      /* replies ignore the batch in flight */
	SIM_VARIANT_DELAY_IGNORED,         /* lock-delay never blocks */
	SIM_VARIANT_FORCE_ANY_FENCE,       /* FORCE frees whoever holds */
	SIM_VARIANT_WATCH_FIRES_EARLY,     /* WATCH fires on no change */
	SIM_VARIANT_WATCH_NEVER_FIRES,
	SIM_VARIANT_RID_IGNORED,           /* a rid repeat is a new request */
	SIM_VARIANT_RID_NOT_STORED,        /* the store drops the rid bytes */
	/* Cluster mode (etcd_sim.c; every seed runs in cluster mode). */
	SIM_VARIANT_TAKEOVER_KEEPS_EXPIRY, /* no take-over rule at the load */
	SIM_VARIANT_TAKEOVER_STALE_HWM,    /* mints from its last term's hwm */
	SIM_VARIANT_DEPOSED_ANSWERS,       /* a failed compare taken for success */
	SIM_VARIANT_TIMEOUT_TAKEN_AS_WRITTEN, /* no answer taken for success */
	SIM_VARIANT_REPLAY_UNDETECTED,     /* a replay taken for a refusal */
	/* Lock kinds: the holder-set rules of tests/lib/broken_rules.c. */
	SIM_VARIANT_ADMITS_OVER_LIMIT,     /* a semaphore admits limit + 1 */
	SIM_VARIANT_READER_BESIDE_WRITER,  /* a reader admitted beside anyone */
	SIM_VARIANT_READER_OVERTAKES_WRITER, /* a reader served before a writer */
	SIM_VARIANT_ONE_GRANT_AT_A_TIME,   /* the queue served only when free */
	SIM_VARIANT_GRANT_KEEPING_THE_COUNTER, /* a grant leaves the hwm */
	SIM_VARIANT_RID_ANY_HOLDER,        /* a rid repeat finds any rid's grant */
	SIM_VARIANTS
};

/*
 * Things the standard runs must make happen, or the simulator no longer
 * tests what it claims to.  test_sim requires each at least once.
 */
enum sim_coverage {
	SIM_COV_GRANT_AT_ONCE,
	SIM_COV_GRANT_AFTER_WAIT,
	SIM_COV_GRANT_TOLD_LATE,         /* behind a waiting reply, passes later */
	SIM_COV_RENEWED,
	SIM_COV_RELEASED,
	SIM_COV_STALE_RENEW_REFUSED,     /* a told handle, no longer current */
	SIM_COV_STALE_RELEASE_REFUSED,
	SIM_COV_FORGED_REFUSED,
	SIM_COV_TRY_HELD,
	SIM_COV_WAIT_TIMEOUT,
	SIM_COV_DISCONNECT_WHILE_WAITING,
	SIM_COV_ONCLOSE_RELEASE,
	SIM_COV_EXACT_DEADLINE_TICK,
	SIM_COV_PARTIAL_LINE,
	SIM_COV_COMMIT_FAILED,
	SIM_COV_UNAVAILABLE_TOLD,
	SIM_COV_RELEASE_RESURRECTED,     /* a release lost, the lease back */
	SIM_COV_CRASH_BEFORE_COMMIT,
	SIM_COV_CRASH_BEFORE_DELIVERY,
	SIM_COV_CRASH_AT_PASS_END,
	SIM_COV_LEASE_SURVIVED_CRASH,
	SIM_COV_FENCE_REMINTED,          /* an untold fence lost and reused */
	SIM_COV_CLEAN_RESTART,
	SIM_COV_SHUTDOWN_TOLD,
	SIM_COV_REBOOT,
	SIM_COV_SERVED_WHILE_WRITING,    /* requests ran with a batch in flight */
	SIM_COV_INFLIGHT_FAILED,         /* ... and that batch failed */
	SIM_COV_CRASH_WHILE_WRITING,
	SIM_COV_DROP_UNDONE,             /* a lease let go, then restored */
	SIM_COV_FORCED,                  /* FORCE freed a holder */
	SIM_COV_FORCE_REFUSED,           /* FORCE of another fence: NOTHELD */
	SIM_COV_WATCH_CHANGED,
	SIM_COV_LOCK_DELAY,              /* a grant held back by a delay */
	SIM_COV_RID_REPEAT,              /* a rid repeat told its grant */
	SIM_COV_RID_UNTOLD,              /* ... one its client was not told */
	SIM_COV_RID_REUSED,              /* a rid after its hold: a new one */
	/* Cluster mode (etcd_sim.c). */
	SIM_COV_TAKEOVER,                /* a standby took over */
	SIM_COV_TOLD_LEASE_TAKEN_OVER,   /* ... with a told lease live */
	SIM_COV_ONCLOSE_MADE_ORDINARY,   /* ... an onclose lease kept */
	SIM_COV_ETCD_REPLAY_DETECTED,    /* a retry found its own batch in */
	SIM_COV_ETCD_RETRY_WENT_IN,      /* a retry after a lost request */
	SIM_COV_ETCD_OUTCOME_UNKNOWN,    /* no answer at all: step down */
	SIM_COV_ETCD_SPLIT,              /* a batch in several transactions */
	SIM_COV_ETCD_SPLIT_BROKEN,       /* ... in part: step down */
	SIM_COV_DEPOSED_REFUSED,         /* the leader-key compare refused */
	SIM_COV_DEADLINE_STEP_DOWN,      /* stopped at its deadline */
	SIM_COV_KEEPALIVE_STEP_DOWN,     /* told its lease is gone */
	SIM_COV_NOTLEADER_TOLD,          /* a lock command past the deadline */
	/* Lock kinds (limit=, mode=shared). */
	SIM_COV_SEMAPHORE_GRANT,         /* a told grant with limit= */
	SIM_COV_SEMAPHORE_FULL,          /* ... with limit - 1 others held */
	SIM_COV_SHARED_GRANT,            /* a told grant with mode=shared */
	SIM_COV_SHARED_BESIDE_SHARED,    /* ... while another reader held */
	SIM_COV_SHARED_RUN,              /* readers granted in one step */
	SIM_COV_KIND_MISFIT,             /* ERR BADARG for a misfit kind */
	SIM_COV_KIND_RID_REPEAT,         /* a rid repeat of a kind's grant */
	SIM_COV_KIND_SURVIVED_CRASH,     /* a told holder key survived */
	SIM_COV_KIND_DELAY,              /* one holder's delay, others held */
	SIM_COVERAGE
};

struct sim_options {
	uint64_t steps;             /* loop passes per run */
	enum sim_variant variant;
	bool trace;                 /* every step, to `out` */
	bool show_logs;             /* let the daemon's log lines through */
	unsigned max_reports;       /* violations printed per run */
	bool cluster;               /* every seed in cluster mode (else some) */
	FILE *out;                  /* where reports go; NULL: stdout */
};

#define SIM_STEPS_DEFAULT 1500

struct sim_result {
	uint64_t seed;
	uint64_t passes;
	uint64_t requests;          /* executed by the service */
	uint64_t replies;           /* delivered to clients */
	uint64_t grants;            /* GRANTED told */
	uint64_t renewals;          /* RENEWED told */
	uint64_t releases;          /* RELEASED told */
	uint64_t timeouts;
	uint64_t unavailable;
	uint64_t connections;
	uint64_t disconnects;
	uint64_t crashes;
	uint64_t clean_restarts;
	uint64_t failovers;         /* cluster mode: take-overs */
	uint64_t commits;           /* successful store commits */
	uint64_t failed_commits;
	uint64_t checks;            /* individual property evaluations */
	uint64_t violations;
	uint64_t by_property[SIM_PROPERTIES];
	uint64_t coverage[SIM_COVERAGE];
	uint64_t digest;            /* of everything the clients were told */
	enum sim_property first_property;
	char first_violation[512];
	char first_of[SIM_PROPERTIES][400];   /* per property */
};

void sim_options_defaults(struct sim_options *opt);

/* One run.  Returns the number of violations (0: every check held). */
uint64_t sim_run(uint64_t seed, const struct sim_options *opt,
    struct sim_result *res);

/* One line of figures for a run. */
void sim_print_result(FILE *out, const struct sim_result *r);
/* "<bin> --seed N [--steps S] [--variant V]": the command that replays a
 * run exactly. */
size_t sim_replay_command(char *out, size_t cap, const char *bin,
    uint64_t seed, const struct sim_options *opt);

const char *sim_property_name(enum sim_property p);
const char *sim_coverage_name(enum sim_coverage c);
const char *sim_variant_name(enum sim_variant v);
/* Returns false when name is not a variant. */
bool sim_variant_parse(const char *name, enum sim_variant *v);

/* ---- variants.c ------------------------------------------------------- */

/* The broken rules of a rules variant; NULL for the others. */
const struct core_rules *sim_variant_rules(enum sim_variant v);

#endif
