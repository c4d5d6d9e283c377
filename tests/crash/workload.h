/*
 * workload.h - the clients of the crash tests: a bounded number of raw
 * protocol connections driven from one poll loop, each with at most one
 * request outstanding, mixing ACQUIRE (with and without a wait), TRY,
 * RENEW, RELEASE (also with stale handles), STATUS and connection closes on
 * a small set of names with short leases.  Every request and every reply is
 * fed to the checker (checker.h) with the times it was sent and read.
 *
 * lockd may die under it at any moment: a connection that ends is left
 * broken until wl_crash() settles what was in flight as unknown, and
 * wl_reconnect() connects the clients to the next lockd.  Keep leases
 * survive a crash: their clients go on renewing and releasing them.
 * Every choice comes from the seed; every wait is bounded.
 */
#ifndef LOCKD_TESTS_CRASH_WORKLOAD_H
#define LOCKD_TESTS_CRASH_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/crash/checker.h"
#include "tests/lib/rng.h"

#define WL_MAX_CLIENTS 128

struct wl_options {
	int clients;             /* <= WL_MAX_CLIENTS */
	int names;               /* <= CHK_MAX_NAMES */
	int64_t lease_min_ms, lease_max_ms;
	int64_t wait_max_ms;     /* ACQUIRE wait=; 1 in 10 waits for ever */
	int64_t think_max_ms;    /* pause between requests of a free client */
	int onclose_percent;     /* grants asked with onclose=release */
	int journal_fd;          /* power loss: its size is read with each
	                          * reply; -1: none */
	/* The last multi_names names are semaphores of WL_LIMIT_TEXT
	 * holders (issue 17): every ACQUIRE and TRY of them says limit=,
	 * and each holder is judged under its own key (chk_grant_multi). */
	int multi_names;
	/* And the shared_names names before those are read locks: three
	 * requests in four of them say mode=shared (each such holder under
	 * its key), the rest are a writer's (exclusive, under the name). */
	int shared_names;
};

#define WL_LIMIT_TEXT "3"   /* a semaphore name's limit= */

enum wl_request {
	WL_NONE,
	WL_ACQUIRE,
	WL_TRY,
	WL_RENEW,
	WL_RELEASE,
	WL_STATUS
};

struct wl_client {
	int fd;                  /* -1: not connected */
	bool broken;             /* the connection ended under us */
	char in[4096];
	size_t in_len;
	enum wl_request req;     /* the request outstanding */
	int req_name;
	int64_t req_sent, req_lease;
	bool req_onclose;
	int64_t req_delay;       /* ACQUIRE, TRY: delay=; 0: none */
	bool req_owner;          /* ACQUIRE, TRY: owner=w<index> */
	char req_rid[24];        /* ACQUIRE, TRY: rid=; "" for none */
	int64_t req_repeats;     /* ACQUIRE: the held grant whose rid it
	                          * repeats; -1: none */
	bool req_repeat_sure;    /* ... certainly held when it was sent */
	bool req_exclusive;      /* ACQUIRE, TRY: no limit= or mode=shared
	                          * (a plain name's, or a read lock's writer) */
	unsigned rids;           /* rids made, for the next one's name */
	struct chk_ref req_ref;  /* RENEW, RELEASE */
	int64_t holding;         /* the grant this client holds; -1: none */
	int64_t last_grant;      /* for a RELEASE with a stale handle */
	int64_t next_at;         /* when to send the next request */
};

struct wl_stats {
	uint64_t requests, replies;
	uint64_t granted, held, timeouts, renewed, conflicts, released,
	    notheld, unavailable, statuses, closes, unknown;
	uint64_t unexpected;     /* a reply no request of ours should get */
	uint64_t rid_repeats;    /* repeats told their own grant */
	uint64_t writers;        /* grants to a read lock's writers */
};

struct wl {
	struct wl_options opt;
	struct chk *chk;
	const char *const *names;
	int port;
	struct rng rng;
	struct rng rid_rng;      /* rid= choices, apart so that the rest of
	                          * a seed's run stays what it was */
	int64_t alive;           /* lockd certainly ran at this instant */
	struct wl_client c[WL_MAX_CLIENTS];
	struct wl_stats stats;
};

void wl_init(struct wl *w, const struct wl_options *opt, struct chk *chk,
    const char *const *names, uint64_t seed);

/* Connects every client that is not connected; returns how many are. */
int wl_reconnect(struct wl *w, int port);

/*
 * Runs the clients until `until` (harness_now_ms()) or until every
 * connection has ended, whichever comes first.
 */
void wl_run(struct wl *w, int64_t until);

/*
 * lockd died, at `died` at the earliest: settles every request in flight as
 * unknown, ends the onclose=release leases at `died`, closes every
 * connection.
 */
void wl_crash(struct wl *w, int64_t died);

/*
 * Sends STATUS for every name on a connection of its own and feeds the
 * replies to the checker (after_restart: see chk_status).  0, or -1 when
 * lockd did not answer.
 */
int wl_check_status(struct wl *w, bool after_restart);

/* Closes everything (a clean end of the test). */
void wl_close(struct wl *w);

#endif
