/*
 * etcd_sim.h - private to the simulator (tests/sim/): cluster mode, its
 * etcd and its fail-overs, as daemon/store_etcd.c and daemon/leader.c
 * make them.  etcd_sim.c implements it; world.c calls it at a few hooks
 * and sim.c once a pass.  Like the rest of the simulator it may change
 * nothing in daemon/ or core/: the service under test is the daemon's.
 */
#ifndef LOCKD_TESTS_SIM_ETCD_H
#define LOCKD_TESTS_SIM_ETCD_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/store.h"
#include "tests/lib/rng.h"
#include "tests/sim/history.h"

#define ETCD_SIM_NODES 3
#define ETCD_SIM_HWM_VALUE_MAX 96

struct world;

/* One lockd node: its clocks and its etcd store's own state. */
struct etcd_node {
	sim_time boot_off;         /* its boot clock reads now - boot_off */
	uint8_t boot_id[16];
	int64_t wall_skew;         /* its wall clock: global + WALL_BASE + skew */
	/* store_etcd.c's struct store_etcd, as this node last left it. */
	int64_t guard;             /* the leader key's create revision */
	int64_t hwm_mod;           /* the hwm key's mod revision, as seen */
	uint64_t hwm;              /* as last committed or loaded */
	uint64_t txns;
	bool broken;               /* an outcome it cannot know */
	bool deposed;              /* a batch refused: the leader key moved */
	bool led;                  /* has led a term */
};

struct etcd_sim {
	struct rng rng;            /* every choice of cluster mode */
	int nnodes;
	int serving;               /* the node whose service is w->svc */
	int64_t leader_lease;      /* --leader-lease, ms */
	int64_t keepalive, margin; /* leader.h: lease / 6, lease / 10 */
	/* etcd's own state (the records and hwm value are the world's
	 * store_mem): the leader key and the hwm key's revisions. */
	int64_t revision;
	int key_node;              /* who holds the leader key; -1: none */
	int64_t key_rev;           /* its create revision */
	sim_time key_expiry;       /* when etcd's lease behind it ends */
	int64_t hwm_mod;
	char hwm_value[ETCD_SIM_HWM_VALUE_MAX];
	size_t hwm_value_len;
	/* Leadership of the serving node (leader.c), global time. */
	sim_time ka_next;          /* its next keep-alive */
	sim_time valid_until;      /* it serves until this (the deadline) */
	bool resumed;              /* paused past its lease, just resumed */
	/* Faults. */
	sim_time down_until;       /* etcd answers nothing until then */
	int lose_applied;          /* the next txns go in, answers lost */
	int lose_unapplied;        /* the next txns are lost on the way */
	bool refuse_later;         /* a split batch's later txn is refused */
	bool calm;                 /* no faults (the drain, clean stops) */
	bool in_txn;               /* applying a transaction to the data */
	unsigned fault_permille;
	size_t chunk;              /* records per transaction */
	struct etcd_node node[ETCD_SIM_NODES];
};

/* Whether seed's world runs in cluster mode (its own generator). */
bool etcd_sim_wanted(uint64_t seed, const struct sim_options *opt);
/* Cluster mode for w: nodes, clocks, etcd; node 0 leads first. */
void etcd_sim_init(struct world *w);
void etcd_sim_free(struct world *w);

/* ---- the store of the serving node (store_etcd.c) --------------------- */

/* A batch as one guarded transaction, retried on no answer. */
int etcd_sim_commit(struct world *w, const struct store_batch *batch);
/* get fails once the store is broken; load sets the node's revisions. */
bool etcd_sim_get_ok(struct world *w);
void etcd_sim_loaded(struct world *w, uint64_t *hwm);
/* The store broke or was deposed: leadership must step down (leader.c's
 * store_lost). */
bool etcd_sim_lost(const struct world *w);

/* ---- leadership (leader.c) -------------------------------------------- */

/* Once a pass, after the clock moved: faults, keep-alives, the deadline;
 * may step the leader down (world_failover). */
void etcd_sim_pass(struct world *w);
/* The serving node is gone (crashed, stopped or stepped down; revoked:
 * its lease given back): the next leader wins, the clock moves to its
 * win, and the world takes its clocks.  Then world_open_service. */
void etcd_sim_takeover(struct world *w, bool revoked);
/* After service_open on the new leader: it leads, with its deadline. */
void etcd_sim_opened(struct world *w);
/* The drain: etcd answers, the leader keeps its lease. */
void etcd_sim_calm(struct world *w);
/* The wall-clock skew of the node whose boot a record's boot id names
 * (a record's wall-clock expiry is on its writer's clock). */
int64_t etcd_sim_wall_skew_of(const struct world *w, const uint8_t *boot_id);

#endif
