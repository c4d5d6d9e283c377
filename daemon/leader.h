/*
 * leader.h - leadership in cluster mode (leader.c): which node of the
 * cluster serves locks, through a lease-backed key in etcd.
 */
#ifndef LOCKD_LEADER_H
#define LOCKD_LEADER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "daemon/etcd.h"
#include "daemon/server.h"
#include "daemon/service.h"

/*
 * The leader lease (--leader-lease, config.h): the TTL of the etcd lease
 * behind the leader key, whole seconds (etcd's unit; 2 is its least).  A
 * node that stops being heard from loses the key this long after its
 * last keep-alive, and a standby takes over then.  The take-over rule
 * adds it to every lease a new leader loads (core/takeover.h).
 * docs/cluster.md says how to size it.  The rest scales with it:
 */
/* the leader renews the lease six times a lease (500 ms at 3 s)... */
#define LEADER_KEEPALIVES_PER_LEASE 6
/* ...and stops serving a tenth of the lease before it could expire,
 * counted from when it sent the last keep-alive that etcd answered: room
 * for a clock that runs up to 10% slower than etcd's. */
#define LEADER_MARGIN_PER_LEASE 10
/* A standby looks at the leader key this often. */
#define LEADER_POLL_MS 250
/* The deadline of each of leadership's requests to etcd. */
#define LEADER_REQUEST_TIMEOUT_MS 1000L
/* The deadline of each of the store's requests (a commit may try 3). */
#define LEADER_STORE_TIMEOUT_MS 2000L

enum leader_state {
	LEADER_WATCHING,    /* a standby: is there a leader? */
	LEADER_GRANTING,    /* campaigning: asking etcd for a lease */
	LEADER_CAMPAIGNING, /* campaigning: creating the leader key */
	LEADER_LEADING,     /* serving; keeping the lease alive */
};

struct leader {
	uv_timer_t tick;            /* the next request */
	uv_timer_t deadline;        /* stop serving when it fires */
	struct server *srv;
	struct store *store;
	struct etcd *etcd;
	struct service_config scfg;
	struct service_clock clock;
	int64_t lease_ms;           /* --leader-lease */
	uint64_t keepalive_ms;      /* lease_ms / LEADER_KEEPALIVES_PER_LEASE */
	uint64_t margin_ms;         /* lease_ms / LEADER_MARGIN_PER_LEASE */
	char key[128];              /* /lockd/<cluster>/leader */
	size_t key_len;
	char advertise[300];
	enum leader_state state;
	bool busy;                  /* a request of ours is in flight... */
	enum leader_state asked;    /* ...sent in this state */
	bool stopped;
	bool reset_pending;         /* stepped down with a batch in flight */
	bool own_stale_key;         /* the key names us; we do not hold it */
	int64_t lease_id;
	int64_t create_revision;    /* of our leader key */
	uint64_t sent_at;           /* ms: the request in flight was sent */
	uint64_t valid_until;       /* ms: serve no later than this */
	uint64_t wins, losses;
};

/*
 * Starts watching and campaigning.  The service (srv->svc) must be open
 * over store, a standby store (store_etcd_standby) for now; on winning,
 * leadership reopens it over what etcd holds, by scfg and clock, with the
 * take-over rule.  lease_ms is the leader lease, whole seconds of at
 * least 2 (config.c checks).  Returns 0 or -1 (logged).
 */
int leader_start(struct leader *l, struct server *srv, struct store *store,
    struct etcd *etcd, const struct service_config *scfg,
    const struct service_clock *clock, const char *cluster,
    const char *advertise, int64_t lease_ms);

/* Stops: gives the leader key up when it holds it (so a standby takes
 * over at once), closes its timers.  Called as the server finishes. */
void leader_stop(struct leader *l);

#endif
