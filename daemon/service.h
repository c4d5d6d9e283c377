/*
 * service.h - everything the daemon does except moving bytes: request
 * handling for each connection, reply ordering, group commit and recovery.
 *
 * The service runs against an abstract clock (struct service_clock) and an
 * abstract store (struct store), and never touches a socket: the server
 * hands it the bytes a connection received, and takes from it the bytes to
 * write.  That is what lets the simulator run this same code with a
 * simulated clock, simulated clients and a store that fails and crashes.
 *
 * The life of a loop pass:
 *   service_conn_feed()    parse and execute requests as they arrive;
 *                          replies are queued per connection in request order
 *   service_tick()         deadlines (lease expiries, wait limits)
 *   service_commit()       one write transaction for every change of the
 *                          pass; only then may GRANTED/RENEWED replies leave
 *                          (or _begin, _write on another thread, _end)
 *   service_next_ready()   the connections with bytes to write
 */
#ifndef LOCKD_SERVICE_H
#define LOCKD_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "daemon/auth.h"
#include "daemon/log.h"
#include "daemon/metrics.h"
#include "daemon/quota.h"
#include "daemon/store.h"
#include "proto/proto.h"

/* The clocks the service reads; the simulator supplies its own. */
struct service_clock {
	/* Milliseconds on a clock that wall-clock steps do not move and that
	 * keeps counting across a process restart within one boot
	 * (CLOCK_BOOTTIME). */
	core_time (*mono)(void *ctx);
	/* Milliseconds since the epoch (CLOCK_REALTIME). */
	int64_t (*wall)(void *ctx);
	/* Nanoseconds on the mono clock, for timing commits; may be NULL. */
	int64_t (*mono_ns)(void *ctx);
	void *ctx;
	/* Identifies the boot the mono clock belongs to. */
	uint8_t boot_id[16];
};

/* The output a client may leave unread before it is cut off (--max-output). */
#define SERVICE_MAX_OUTPUT_DEFAULT ((size_t)1 << 20)   /* 1 MiB */

struct service_config {
	struct core_config core;   /* leases, limits, secrets, hash key */
	size_t max_line;           /* bytes in a request line */
	size_t max_output;         /* bytes queued for one client, then cut */
	/* Cluster mode: a new leader's load applies the take-over rule
	 * (core/takeover.h) with this leader lease; 0 on a single node. */
	int64_t takeover_lease_ms;
	struct quota_limits principal;  /* --max-*-per-principal; 0: none */
};

/* Fault-injection seams for the tests: each, when set, is called at its
 * point of the commit and may fail it (return non-zero) or not return. */
struct service_hooks {
	int (*before_commit)(void *ctx);
	void (*after_commit)(void *ctx);  /* durable, replies not yet out */
	/*
	 * The MDB_NOMETASYNC experiment (docs/performance.md, "The journal
	 * against MDB_NOMETASYNC"), never set in lockd: when set, a commit
	 * makes its batch's data durable and the batch before it whole, so
	 * its own replies wait for the next commit or, when none is due,
	 * for this call, which makes the last commit durable.
	 */
	int (*sync)(void *ctx);
	void *ctx;
};

struct service_buf {
	char *data;
	size_t len, cap;
};

struct service_slot;

/* One client connection as the service sees it; embedded by the server. */
struct service_conn {
	struct core_session session;
	struct core_link all_link;      /* in service->conns */
	struct core_link ready_link;    /* in service->ready when it has output */
	struct core_link waiting_link;  /* in service->waiting: needs a commit */
	struct service_buf in;          /* a partial line carried over */
	size_t in_scanned;  /* in.data[0..in_scanned) holds no LF: the
			     * next read is searched from there on */
	struct service_buf out;         /* replies ready to be written */
	struct service_slot *slots_head, *slots_tail;  /* not yet writable */
	size_t slots_bytes;
	uint64_t next_seq;
	/* next_seq once the newest request has its reply: one executed
	 * without (a queued ACQUIRE, a WATCH) gets a slot to hold its place. */
	uint64_t answered_seq;
	bool discarding;    /* dropping the rest of an overlong line */
	bool input_ended;   /* the client will send nothing more */
	bool quit;          /* QUIT or the end of input: execute no more,
			     * close once every reply is written */
	bool overflow;      /* output cap exceeded: the server closes it */
	/* With --auth: who this connection is ("" = nobody yet), from AUTH,
	 * a client certificate or the Unix peer's uid; and its failed
	 * AUTHs (AUTH_MAX_FAILURES closes it). */
	char principal[AUTH_PRINCIPAL_MAX + 1];
	unsigned auth_failures;
	struct quota_entry *quota;  /* the principal's counts; NULL: nobody */
};

/* Replies decided and counted, then failed with their batch (the client
 * was told ERR UNAVAILABLE instead): taken back from the core's counts. */
struct service_untold {
	uint64_t granted, renewed, released, unavailable, timeouts, conflicts;
	uint64_t forced;
};

struct service_stats {
	struct service_untold untold;
	uint64_t connections;
	uint64_t connections_total;
	uint64_t requests;
	uint64_t commits;
	uint64_t commit_failures;
	uint64_t commit_records;
	uint64_t protocol_errors[PROTO_ERR_COUNT];
	uint64_t output_overflows;
	uint64_t auth_failures;     /* AUTHs refused */
	uint64_t denied;            /* commands answered ERR DENIED */
	uint64_t list_walked;       /* names LIST looked at: its cost */
	/* TLS, counted by the server: handshakes done, failed (timeouts
	 * included), timed out. */
	uint64_t tls_handshakes, tls_failures, tls_timeouts;
};

/*
 * Cluster mode, as leadership (leader.c) sets it through the
 * service_cluster_* calls below; all zero on a single node.  A node that
 * does not lead answers every lock command ERR NOTLEADER, naming the
 * leader when it knows it, or ERR UNAVAILABLE while it cannot reach etcd;
 * PING, HELP, QUIT and STATS work everywhere, and STATS says role=leader
 * or role=follower.
 */
struct service_cluster {
	bool enabled;
	bool leading;              /* serves locks... */
	core_time serving_until;   /* ...before this (the service's clock) */
	bool etcd_unreachable;     /* the last word from etcd was none */
	bool etcd_refused;         /* ...as etcd refused our credentials */
	char leader[300];          /* the leader's --advertise; "" unknown */
};

/*
 * Group commit's state (service_commit.c): the batches, the index of the
 * names the one in flight writes, and when a commit is due.  Only
 * service_commit.c reads or writes it; the rest of the service asks it
 * through service_commit_*() and service_int.h's service__*() calls.
 */
struct service_commit_state {
	struct store_batch batch;  /* the batch in flight, or the last one */
	uint64_t batch_seq;      /* the batch now forming */
	uint64_t durable_seq;    /* the last batch on disk */
	uint64_t inflight_seq;   /* the batch being written; 0: none */
	uint64_t unsynced_seq;   /* hooks.sync: written, not yet durable */
	bool syncing;            /* hooks.sync: a sync is in flight */
	int inflight_rc;         /* what its write returned */
	int64_t inflight_ns;     /* how long the store took; -1: not written */
	int64_t inflight_t0;     /* when an asynchronous write started */
	void (*written)(void *ctx);  /* service_commit_write_start's done */
	void *written_ctx;
	/* The names it writes, indexed on first need (inflight_depends). */
	size_t *inflight_names;
	size_t inflight_cap, inflight_mask;
	bool inflight_indexed, inflight_all;
	uint64_t committed_hwm;
	bool commit_needed;      /* a reply waits for batch_seq */
	core_time lazy_since;    /* unpromised changes pending since; 0: none */
};

struct service {
	struct service_config config;
	struct core_table table;
	struct store *store;
	struct service_clock clock;
	struct service_hooks hooks;
	struct service_cluster cluster;  /* kept across service_open */
	struct service_commit_state commit;   /* service_commit.c's */
	struct core_link conns;
	struct core_link ready;
	struct core_link waiting;
	/* Replies waiting for batches up to this one may leave: what group
	 * commit last told reply ordering (service__release). */
	uint64_t released_seq;
	struct service_stats stats;
	struct store_stats store_stats;  /* as of the last commit's end */
	struct metrics metrics;
	/* --auth's rules, owned by the server (reloaded on SIGHUP); NULL
	 * when authentication is off.  Kept across service_open. */
	const struct auth_rules *auth;
	/* Log lines a client can provoke at will, each kind limited
	 * (log.h): reclaimed leases, limit hits, failed AUTHs. */
	struct log_limit reclaim_log, limit_log, auth_log;
	struct quota quota;      /* per-principal counts and limits */
	char error[256];
	/* Recovery is done and locks are served (/readyz). */
	bool serving;
	/* When service_open loaded the store (the service's clock): a
	 * fall-back gives a record of an earlier term (cluster mode) what
	 * the take-over gave it then. */
	core_time loaded_at;
};

/* Fills in the defaults (PROTO_LINE_MAX_DEFAULT, SERVICE_MAX_OUTPUT_DEFAULT). */
void service_config_defaults(struct service_config *config);

/*
 * Opens the service over an open store and recovers from it: loads the
 * high-water mark and the held leases, reclaims the ones that expired while
 * lockd was down and commits that.  Returns 0, or -1 with svc->error set.
 * recovered, when not NULL, receives counts for the startup log.
 */
struct service_recovery {
	uint64_t leases;         /* records found */
	uint64_t expired;        /* reclaimed at once */
	uint64_t onclose;        /* released: their connection is gone */
	uint64_t hwm;
	/* Cluster mode's take-over (core/takeover.h): onclose=release leases
	 * it made ordinary, and lock-delays it restarted in full. */
	uint64_t made_ordinary;
	uint64_t delays_restarted;
};
int service_open(struct service *svc, const struct service_config *config,
    struct store *store, const struct service_clock *clock,
    struct service_recovery *recovered);
/* Frees everything; the store stays open (the caller closes it). */
void service_close(struct service *svc);

void service_conn_open(struct service *svc, struct service_conn *conn);
/* The connection closed: its waiters leave, its onclose leases go. */
void service_conn_close(struct service *svc, struct service_conn *conn);

/*
 * The client's input ended (it shut its sending side, or closed: lockd
 * cannot tell which): nothing more is executed; what was decided is still
 * answered, and every waiting ACQUIRE leaves its queue, never granted, and
 * is answered ERR TIMEOUT.  The connection closes once every reply is out.
 */
void service_conn_end_input(struct service *svc, struct service_conn *conn);

/*
 * Sets who conn is (a client certificate's CN, "uid:<n>"), before its
 * first request; a principal that cannot be one leaves it nobody.
 * Returns 0, or -1 when the principal already has
 * --max-connections-per-principal connections (conn stays nobody; refuse
 * it with service_conn_refuse).
 */
int service_conn_set_principal(struct service *svc, struct service_conn *conn,
    const char *principal);

/*
 * Answers conn with one unsolicited "ERR <code> <text>" and closes it
 * once that is written (as after QUIT); nothing more is executed.
 */
void service_conn_refuse(struct service *svc, struct service_conn *conn,
    enum proto_error_code code, const char *text);

/*
 * With --auth: may the principal of conn do perm (AUTH_PERM_*) on
 * name[0..len)?  Always true when authentication is off.  The one check
 * of every command, and of each name a multi-line reply (LIST) shows.
 */
bool service_may(const struct service *svc, const struct service_conn *conn,
    unsigned perm, const char *name, size_t len);

/* Parses and executes every complete request in data[0..len). */
void service_conn_feed(struct service *svc, struct service_conn *conn,
    const char *data, size_t len);

/* The server wrote n bytes of conn->out. */
void service_conn_written(struct service_conn *conn, size_t n);

/* Runs the deadlines due now; returns the next one (CORE_NEVER: none). */
core_time service_tick(struct service *svc);

/*
 * Commits every state change made since the last commit in one store
 * transaction, then releases the replies that waited for it.  On failure
 * the affected replies become ERR UNAVAILABLE and the locks fall back to
 * what the store holds.  Returns 0 or -1.  Not while a batch is in flight.
 */
int service_commit(struct service *svc);

/*
 * The same commit in three steps, for a caller that writes on another
 * thread while the loop goes on serving:
 *   service_commit_begin()  on the loop: collects every change into the
 *       batch.  Returns 1 when the batch is in flight (write it, then end
 *       it), 0 when there was nothing to write or a batch is already in
 *       flight, -1 when it failed at once (ended already).
 *   service_commit_write()  on any thread: writes the batch to the store.
 *       It touches only the store and the batch; nothing else of the
 *       service may run concurrently with it but request handling, ticks
 *       and connection events on the loop.
 *   service_commit_end()    on the loop, after the write: releases the
 *       replies that waited (0), or fails them and falls back (-1).
 * While a batch is in flight, requests go on: their changes form the next
 * batch, and every reply about a lock the batch in flight writes waits for
 * it, and fails with it.
 */
int service_commit_begin(struct service *svc);
void service_commit_write(struct service *svc);
int service_commit_end(struct service *svc);
/*
 * service_commit_write's asynchronous form, for a store with commit_start
 * (store.h): on the loop, starts the write and returns 0; done(ctx) is
 * called on the loop once it has ended, and service_commit_end follows.
 * Returns 1 when the write is over already (a sync, an injected failure,
 * a store that could not start): call service_commit_end at once.
 */
int service_commit_write_start(struct service *svc, void (*done)(void *ctx),
    void *ctx);
/* Does the service's store write asynchronously on the loop (etcd):
 * then service_commit_write_start, else service_commit_write on a worker
 * thread. */
bool service_commit_is_async(const struct service *svc);
bool service_commit_inflight(const struct service *svc);

/* True when changes wait for a commit (e.g. after a failed one). */
bool service_commit_pending(const struct service *svc);

/* True when changes wait for a commit, or (hooks.sync) the last commit
 * for its sync: what a stopping server must still do. */
bool service_commit_owed(const struct service *svc);

/* True when the end of this pass should commit: a GRANTED or RENEWED
 * waits, or unpromised changes have waited long enough (below); with
 * hooks.sync, also when the last commit waits for its sync and no batch
 * is due (service_commit_begin then syncs). */
bool service_commit_due(struct service *svc);

/*
 * The end of a loop pass: commits when a GRANTED or RENEWED reply waits
 * for it, or when changes that promise nothing to anybody (releases,
 * reclaims) have waited SERVICE_LAZY_COMMIT_MS - they then ride along with
 * the next grant's commit instead of costing an fsync of their own.
 * Returns what service_commit returns, or 0 when it did not commit.
 */
#define SERVICE_LAZY_COMMIT_MS 50
int service_end_pass(struct service *svc);

/* The next instant the service must run: a core deadline or a lazy
 * commit; CORE_NEVER when none. */
core_time service_next_deadline(const struct service *svc);

/* Pops a connection whose output grew (or that must close); NULL: none. */
struct service_conn *service_next_ready(struct service *svc);

/*
 * The connections the service knows, for the server's stop: the first one
 * (NULL: none), and each in turn - fn may close the connection it is
 * given, not another one.
 */
struct service_conn *service_first_conn(struct service *svc);
void service_for_each_conn(struct service *svc,
    void (*fn)(struct service_conn *conn, void *ctx), void *ctx);

/* The server refused a connection with an ERR line: counted with the
 * protocol errors, and with the limit hits when at_limit (too many
 * connections, not a stop). */
void service_count_refused_connection(struct service *svc, bool at_limit);

/*
 * Cluster mode: leadership (leader.c) tells the service its role through
 * these, and reads it back through service_cluster(); a single node never
 * calls them.  service_cluster_enable marks the service a cluster node
 * (kept across service_open); service_cluster_lead makes it serve as the
 * leader whose --advertise address is self, until the time that
 * service_cluster_serve_until set last (the service's clock: a leader
 * whose lease could have run out serves nothing, even before its timer
 * fires); service_cluster_follow makes it a node that does not serve,
 * naming `leader` in NOTLEADER (NULL or "": none known); and
 * service_cluster_etcd says whether etcd was out of reach at the last
 * word, and whether that was etcd refusing this node's credentials.
 */
void service_cluster_enable(struct service *svc);
void service_cluster_lead(struct service *svc, const char *self);
void service_cluster_serve_until(struct service *svc, core_time until);
void service_cluster_follow(struct service *svc, const char *leader);
void service_cluster_etcd(struct service *svc, bool unreachable,
    bool refused);
const struct service_cluster *service_cluster(const struct service *svc);

/* Whether this lockd serves locks now - recovery done - for /readyz. */
bool service_ready(const struct service *svc);

/* The locks held now (for the startup log and READY status). */
uint64_t service_held_count(const struct service *svc);

/* Clean stop: every waiter is answered ERR SHUTDOWN. */
void service_shutdown(struct service *svc);

/* Renders every metric in the Prometheus text format (service_metrics.c). */
void service_render_metrics(struct service *svc, struct metrics_text *t);

/*
 * The lock counters as clients were told them, the one source of STATS and
 * /metrics: the core's counts less the replies that failed with their
 * batch; limit hits of every kind, connections and output included.
 */
struct service_counters {
	uint64_t granted, timeouts, released, reclaimed, unavailable, renewed,
	    conflicts, released_onclose, limit_hits;
	uint64_t forced;       /* holders freed by FORCE */
	uint64_t delayed;      /* names in lock-delay now (a gauge) */
	uint64_t watches;      /* WATCHes pending now (a gauge) */
};
void service_counters(const struct service *svc, struct service_counters *out);

/* Writes the STATS key=value pairs into stats[]; returns how many. */
size_t service_stats(struct service *svc, struct proto_stat *stats,
    size_t cap);

#endif
