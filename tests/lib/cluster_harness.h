/*
 * cluster_harness.h - a lockd cluster for the client fail-over tests
 * (tests/client/test_failover.c, test_uv_failover.c): a 3-member etcd
 * (etcd_harness.h) and up to CLUSTER_HARNESS_NODES lockd nodes
 * (harness.h), all on free loopback ports, each killed by its own PID;
 * the raw-protocol questions those tests ask the nodes (who leads, a
 * NOTLEADER hint, STATUS, STATS), bounded in time; a lockd with TLS; a
 * fake node that never leads; and a proxy that loses the first GRANTED it
 * sees.  The client under test
 * is the tests' own: nothing here uses liblockd.
 */
#ifndef LOCKD_TESTS_CLUSTER_HARNESS_H
#define LOCKD_TESTS_CLUSTER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/lib/etcd_harness.h"
#include "tests/lib/harness.h"

#define CLUSTER_HARNESS_NODES 3
#define CLUSTER_HARNESS_RECOVER_MS 15000  /* bound on finding a leader */

/* printf '%s' s3cret | sha256sum: alice's token, for --auth. */
#define CLUSTER_HARNESS_HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"

struct cluster_harness {
	struct etcd_cluster etcd;
	bool shared;              /* etcd is the group's: stop leaves it */
	char name[48];            /* the nodes' --cluster */
	struct harness_server *nodes[CLUSTER_HARNESS_NODES];  /* NULL: none */
	char endpoints[CLUSTER_HARNESS_NODES * 32];  /* "127.0.0.1:P0,..." */
	const char *token;        /* AUTH for raw connections; NULL: none */
};

/*
 * A cmocka group setup and teardown: one 3-member etcd for all the
 * group's tests, started once instead of once a test.  Each test's nodes
 * then run under a cluster name of their own (name and a number), so
 * the keys a test's killed nodes leave behind meet no later test.  For
 * tests that leave etcd's members alone (kill no member, restart none).
 */
int cluster_harness_group_setup(void **state);
int cluster_harness_group_teardown(void **state);

/*
 * Starts a 3-member etcd (or takes the group's) and n lockd nodes of the
 * cluster named name (--cluster); with auth (NULL: none), each node runs
 * --auth with that file's text.  Fills endpoints.  A failure fails the
 * test.
 */
void cluster_harness_start(struct cluster_harness *c, int n,
    const char *name, const char *auth);
/* For a teardown: resumes a paused node (none may outlive the test), stops
 * etcd and forgets the token.  The nodes go with harness_teardown. */
void cluster_harness_stop(struct cluster_harness *c);
/* kill -9 of node i, reaped, and marked gone; the time of the kill. */
int64_t cluster_harness_kill(struct cluster_harness *c, int i);

/* STATS' role of node s, asked with AUTH token first (NULL: none): 1
 * leader, 0 follower, -1 no answer or gone (s NULL or stopped).  The
 * integration tests, which keep their own nodes, ask this. */
int cluster_harness_role_of(struct harness_server *s, const char *token);
/* Which of nodes[0..n) leads (asked without AUTH), waited for up to
 * wait_ms; -1 if none. */
int cluster_harness_leader_of(struct harness_server **nodes, int n,
    int64_t wait_ms);
/* STATS' role at node i: 1 leader, 0 follower, -1 no answer or gone. */
int cluster_harness_role(struct cluster_harness *c, int i);
/* The node that leads, waited for up to CLUSTER_HARNESS_RECOVER_MS; -1 if
 * none. */
int cluster_harness_find_leader(struct cluster_harness *c);
/* A raw connection to node i, authenticated when c->token is set. */
struct harness_conn *cluster_harness_connect(struct cluster_harness *c,
    int i);
/* Waits (5 s at most) until follower's NOTLEADER names leader; fails the
 * test if it never does. */
void cluster_harness_await_hint(struct cluster_harness *c, int follower,
    int leader);
/* Node i's answer to STATUS name, or to STATS when name is NULL, into
 * buf ("(nothing)" when none came); returns buf. */
const char *cluster_harness_ask(struct cluster_harness *c, int i,
    const char *name, char *buf, size_t size);

/*
 * Forks a fake node on the listening socket lfd (harness_listen_loopback;
 * closed here) that never leads: it answers every line with "ERR
 * NOTLEADER leader=127.0.0.1:<leader> not me", in a process per
 * connection (an idle one holds none back), and appends a line to the
 * file counter for each answer.  Its PID, for the test to kill and reap
 * (its children die with it).
 */
pid_t cluster_harness_notleader_fake(int lfd, int leader,
    const char *counter);
/* The lines in the file at path, a fake's answers (0: none, no file). */
int cluster_harness_count_lines(const char *path);
/*
 * A lockd with TLS: a server certificate for 127.0.0.1 and localhost by a
 * fresh CA (harness_certs_make_server), whose path goes to ca.  In list,
 * the endpoints of the TLS fail-over tests: lockds:// to a closed port
 * under the address, then to that lockd under the name localhost.
 */
struct harness_server *cluster_harness_tls_node(char *list, size_t list_size,
    char *ca, size_t ca_size);
/*
 * Forks a proxy on the listening socket lfd (harness_listen_loopback;
 * closed here) in front of
 * lockd at 127.0.0.1:upstream_port that loses the reply to the first
 * GRANTED it sees: it closes both sides instead of passing it on.  Later
 * connections pass everything.  Its PID, for the test to kill and reap.
 */
pid_t cluster_harness_lossy_proxy(int lfd, int upstream_port);

#endif
