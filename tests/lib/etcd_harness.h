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

/*
 * A secured cluster (etcd_cluster_start_secure): TLS on the client URLs
 * with certificates the harness makes with the openssl command in the
 * cluster's directory, etcd's --client-cert-auth, and a short token TTL
 * for tests of etcd's user/password auth (etcd_cluster_add_user, then
 * etcd_cluster_enable_auth).  The peer URLs stay plain loopback HTTP.
 */
struct etcd_cluster_options {
	bool tls;                 /* https:// client URLs */
	bool client_cert_auth;    /* etcd wants a client certificate */
	int auth_token_ttl_s;     /* > 0: --auth-token-ttl */
	long max_request_bytes;   /* > 0: --max-request-bytes, so that a
	                           * larger transaction is refused cleanly */
};

struct etcd_cluster {
	int n;
	char dir[64];             /* the temporary directory */
	struct etcd_member members[ETCD_HARNESS_MEMBERS];
	char urls[ETCD_HARNESS_MEMBERS * 64];  /* comma-separated client URLs */
	struct etcd_cluster_options options;
	/* With options.tls, in dir: the CA of the server certificate (IP
	 * SAN 127.0.0.1), a client certificate without a CN (etcd's gateway
	 * refuses one with a CN) and its key, and a CA that signed neither. */
	char ca[96], client_cert[96], client_key[96], wrong_ca[96];
	char root_token[256];     /* after etcd_cluster_enable_auth */
	char host[64];            /* the members' IPv4 address: 127.0.0.1 */
};

/* Starts n members and waits until every one is healthy: 0, or -1 (all
 * that started are killed, and why is printed).  A start that fails is
 * tried again on fresh ports, ETCD_HARNESS_TRIES times in all. */
int etcd_cluster_start(struct etcd_cluster *c, int n);
/* The same on host, an IPv4 address of this machine other than loopback
 * (the partition test's, on a veth pair it made), with options (NULL:
 * none). */
int etcd_cluster_start_on(struct etcd_cluster *c, int n, const char *host,
    const struct etcd_cluster_options *options);
/* SIGKILL to member i alone, reaped. */
void etcd_member_kill(struct etcd_cluster *c, int i);
/* Starts member i again on its old ports and data. */
int etcd_member_restart(struct etcd_cluster *c, int i);
/* Kills every member and removes the directory. */
void etcd_cluster_stop(struct etcd_cluster *c);
/* Whether member i answers GET /health with "health":"true". */
bool etcd_member_healthy(const struct etcd_cluster *c, int i);

/* etcd_cluster_start with options (NULL: none). */
int etcd_cluster_start_secure(struct etcd_cluster *c, int n,
    const struct etcd_cluster_options *options);
/*
 * POSTs the JSON body to member 0's path through the curl command (so the
 * harness needs none of lockd's etcd client), with the root token once
 * auth is on.  Returns the HTTP status (0: no answer); the body in out.
 */
int etcd_cluster_post(const struct etcd_cluster *c, const char *path,
    const char *body, char *out, size_t cap);
/* A user with its own role, readwrite on every key under prefix
 * (through the gateway's /v3/auth/...).  0 or -1 (printed). */
int etcd_cluster_add_user(struct etcd_cluster *c, const char *user,
    const char *password, const char *prefix);
/* Adds root (root role) and turns auth on; keeps root's token. */
int etcd_cluster_enable_auth(struct etcd_cluster *c);
/* As root: a new password for user (etcd drops its tokens). */
int etcd_cluster_change_password(struct etcd_cluster *c, const char *user,
    const char *password);

#endif
