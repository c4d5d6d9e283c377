/*
 * world.h - private to the simulator (tests/sim/): the simulated world, the
 * service under test with its clients, clock and store, and the moves the
 * loop (sim.c) makes in it.  world.c implements them; neither may change
 * anything in daemon/ or core/.
 */
#ifndef LOCKD_TESTS_SIM_WORLD_H
#define LOCKD_TESTS_SIM_WORLD_H

#include <stdio.h>

#include "daemon/service.h"
#include "proto/proto.h"
#include "tests/lib/rng.h"
#include "tests/lib/store_mem.h"
#include "tests/sim/history.h"
#include "tests/sim/sim.h"

#define MAX_CLIENTS 8
#define MAX_NAMES 4
#define REQ_RING 32            /* requests a client keeps in flight, at most */
#define OWN_HANDLES 8
#define POOL_HANDLES 32        /* told handles anybody may replay */
#define OWN_RIDS 4             /* a client's recent rids, to repeat */
#define SIM_RID_MAX 12         /* "c<id>.<n>", its rids' longest */
#define SEEN_MAX 256           /* holders of one name the world tracks */
#define MONO_START 1000000     /* the boot clock never reads 0 */
#define WALL_BASE 1700000000000LL

struct sim_req {
	enum proto_command cmd;
	uint8_t name;
	bool has_lease, has_wait, has_onclose, onclose_release;
	int64_t lease, wait;
	bool has_delay;             /* ACQUIRE, TRY: delay= */
	int64_t delay;
	bool has_fence;             /* WATCH's fence=; FORCE's argument */
	uint64_t fence;
	uint64_t fence_at_exec;     /* WATCH: the live holder's then */
	int64_t eff;                /* the lease the service must grant */
	/* ACQUIRE, TRY: the lock kind, limit= (0: absent) and mode=; the
	 * ERR BADARG it must get (mode=shared with a limit), or may get
	 * (the name's limit, as it ran, is not its own). */
	uint16_t limit;
	bool has_mode, shared;
	bool misfit_must, misfit_may;
	int8_t rid_slot;            /* ACQUIRE, TRY: its client's rid, -1 */
	uint8_t rid_len;
	char rid[SIM_RID_MAX];
	/* Set when it ran: the live grant it repeats (fence 0: none), with
	 * the secret and the lease it has left, that it must be told. */
	uint64_t rid_fence, rid_secret;
	int64_t rid_left, rid_lease;
	bool rid_onclose;
	struct hist_kind rid_kind;  /* the kind of the grant it repeats */
	bool rid_misfit;            /* of another kind: ERR BADARG */
	struct proto_handle handle;
	uint32_t len;               /* bytes of its line */
	uint64_t seq;               /* when it executed */
	sim_time t;
	uint64_t pass;
	struct hist_op op;
};

struct own_handle {
	uint8_t name;
	struct proto_handle h;
};

struct client {
	struct service_conn conn;
	int id;
	bool connected;
	bool quit_sent;
	/* req[head..exec) executed, awaiting replies; req[exec..tail)
	 * queued in buf, the first `partial` bytes of req[exec] sent. */
	struct sim_req req[REQ_RING];
	uint32_t head, exec, tail;
	char *buf;
	size_t buf_len, buf_cap, partial;
	struct own_handle own[OWN_HANDLES];
	unsigned nown;
	int32_t *onclose;               /* told grants bound to this conn */
	unsigned nonclose, conclose;
	/* The rids of its recent ACQUIREs and TRYs; one that is not open
	 * (its request answered, or its connection gone) may be repeated,
	 * as a client that lost a reply does. */
	struct {
		char rid[SIM_RID_MAX];
		uint8_t len, name;
		uint16_t limit;   /* the kind it was sent with */
		bool shared;
		bool open;
		bool granted;     /* a grant with it was told */
		/* When its last request that could be granted ran: the
		 * arrival of a grant a repeat finds untold. */
		uint64_t exec_seq;
		sim_time exec_t;
	} rids[OWN_RIDS];
	unsigned nrids;
};

struct world;

/* The store the service sees: the in-memory store, or a broken one. */
struct sim_store {
	struct store base;
	struct world *w;
};

struct world {
	uint64_t seed;
	const struct sim_options *opt;
	struct sim_result *res;
	FILE *out;
	struct rng rng;          /* every choice */
	struct rng secrets;      /* handle secrets, a stream of their own */
	struct rng rids;         /* rid= choices, a stream of their own */
	struct rng kinds;        /* limit= and mode= choices, another */
	sim_time now;            /* global time; mono = now - boot_off */
	sim_time boot_off;
	uint8_t boot_id[16];
	struct service_clock sclock;
	struct service_config config;
	struct store_mem mem;
	struct sim_store store;
	struct service *svc;
	bool up;
	bool broken;             /* the service could not be opened */
	bool exact;              /* the clock sits on a deadline */
	bool draining;
	bool async;              /* a batch may stay in flight over passes */
	bool written;            /* the batch in flight is in the store */
	bool served_in_flight;   /* requests ran while it was in flight */
	uint64_t pass;
	struct hist *hist;
	int nclients, nnames;
	struct client clients[MAX_CLIENTS];
	char name_buf[MAX_NAMES][16];
	size_t name_len[MAX_NAMES];
	const char *name_text[MAX_NAMES];
	/* Each name's kind: its limit (1: a mutex or, rw, a read/write
	 * lock whose clients also ask mode=shared). */
	uint16_t name_limit[MAX_NAMES];
	bool name_rw[MAX_NAMES];
	/* The newest holder's fence seen in the table, and every seen
	 * holder with its lease end and lock-delay (global time, ms); and
	 * the instant before which an expiry's delay forbids a grant. */
	uint64_t seen_fence[MAX_NAMES];
	struct seen_hold {
		uint64_t fence;
		sim_time expiry;
		int64_t delay;
	} seen[MAX_NAMES][SEEN_MAX];
	unsigned nseen[MAX_NAMES];
	uint16_t seen_limit[MAX_NAMES];   /* the entry's; 0: no entry */
	sim_time delay_until[MAX_NAMES];
	/* A failed commit put the name back as the store had it: the next
	 * look sees the undone hold go, which is no expiry of its own. */
	bool delay_skip[MAX_NAMES];
	/* What the store holds, every held record under its key. */
	struct hist_store_view views[MAX_NAMES * SEEN_MAX];
	struct own_handle pool[POOL_HANDLES];
	unsigned npool;
	int hook_failures;
	unsigned crash_permille, restart_permille, fail_permille;
	/* Cluster mode (etcd_sim.c), NULL on a single node; the serving
	 * node's wall clock reads global time + WALL_BASE + wall_skew. */
	struct etcd_sim *etcd;
	int64_t wall_skew;
};

/* The world of one seed: its clients, names, rates, clock and store. */
void world_init(struct world *w, uint64_t seed, const struct sim_options *opt,
    struct sim_result *res);
void world_free(struct world *w);
/* A bug of the simulator itself: says what and aborts. */
void world_fatal(const char *what) __attribute__((noreturn));
/* Every choice of a run, from the seed's generator. */
uint64_t world_random_below(struct world *w, uint64_t n);
bool world_random_percent(struct world *w, unsigned pct);
/* A line of --trace output. */
void world_trace(struct world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void world_after_commit(struct world *w, int rc);
/* SIGTERM: waiters are told SHUTDOWN, the rest is committed and written,
 * every connection closes, and the process starts again. */
void world_clean_restart(struct world *w);
void world_client_connect(struct world *w, struct client *c);
void world_client_disconnect(struct world *w, struct client *c,
    const char *why);
/* Sends the first k queued bytes of c. */
void world_client_feed(struct world *w, struct client *c, size_t k);
/* The process dies: nothing it did not commit survives. */
void world_crash(struct world *w, enum sim_coverage where);
/* Hands every connection its output, as the server's write would. */
void world_deliver(struct world *w);
void world_tick(struct world *w);
/*
 * The end of a pass, as the server's commit_if_due: a batch in flight may
 * end now (or, in async runs, stay in flight); then a commit starts if one
 * is due, and in async runs may stay in flight too.
 */
void world_end_pass(struct world *w);
size_t world_format_request(const struct world *w, const struct sim_req *r,
    char *out, size_t cap);
/* The reply gate of the broken variant: every reply may leave at once. */
void world_open_gate(struct world *w);
void world_open_service(struct world *w);
void world_queue_request(struct world *w, struct client *c, bool last);
/* The thread pool writes the batch in flight. */
void world_write_inflight(struct world *w);
/* Cluster mode: the leader steps down and the next one takes over. */
void world_failover(struct world *w, const char *why);
/* A whole commit now; in cluster mode a lost store steps down first. */
void world_commit_now(struct world *w);

#endif
