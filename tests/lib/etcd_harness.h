/*
 * etcd_harness.h - real etcd members for the tests of cluster mode: a
 * cluster of 1 to ETCD_HARNESS_MEMBERS members of /usr/bin/etcd (Debian's
 * etcd-server; ETCD_BIN overrides) on free loopback ports, in a fresh
 * temporary directory, each its own child process, stopped and killed by
 * its own PID.  A member dies with the test process (PR_SET_PDEATHSIG).
 * Every wait is bounded.
 */
#ifndef LOCKD_TESTS_ETCD_HARNESS_H
#define LOCKD_TESTS_ETCD_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#define ETCD_HARNESS_MEMBERS 5
#define ETCD_HARNESS_START_MS 15000   /* a cluster that answers /health */
#define ETCD_HARNESS_TRIES 3          /* starts on fresh ports, at most */

struct etcd_member {
	pid_t pid;                /* 0 when not running */
	int client_port, peer_port;
	char client_url[64];
};

struct etcd_cluster {
	int n;
	char dir[64];             /* the temporary directory */
	struct etcd_member members[ETCD_HARNESS_MEMBERS];
	char urls[ETCD_HARNESS_MEMBERS * 64];  /* comma-separated client URLs */
	char host[64];            /* the members' IPv4 address: 127.0.0.1 */
};

/* Starts n members and waits until every one is healthy: 0, or -1 (all
 * that started are killed, and why is printed).  A start that fails is
 * tried again on fresh ports, ETCD_HARNESS_TRIES times in all. */
int etcd_cluster_start(struct etcd_cluster *c, int n);
/* The same on host, an IPv4 address of this machine other than loopback
 * (the partition test's, on a veth pair it made). */
int etcd_cluster_start_on(struct etcd_cluster *c, int n, const char *host);
/* POSTs body to path (etcd's JSON gateway, "/v3/kv/deleterange") of the
 * first running member: 0 when etcd answered 200, else -1.  The answer,
 * headers and all, goes to reply when it is not NULL. */
int etcd_cluster_post(const struct etcd_cluster *c, const char *path,
    const char *body, char *reply, size_t reply_len);
/* SIGKILL to member i alone, reaped. */
void etcd_member_kill(struct etcd_cluster *c, int i);
/* Starts member i again on its old ports and data. */
int etcd_member_restart(struct etcd_cluster *c, int i);
/* Kills every member and removes the directory. */
void etcd_cluster_stop(struct etcd_cluster *c);
/* Whether member i answers GET /health with "health":"true". */
bool etcd_member_healthy(const struct etcd_cluster *c, int i);

#endif
