/*
 * config.h - lockd's settings: the command line of the spec, plus an
 * optional config file with the same keys ("key = value" lines, '#'
 * comments, also after a value).  Every limit of the daemon is named
 * here; config.c's table of options is where each becomes a setting's
 * default, and what --help and --print-defaults print.
 */
#ifndef LOCKD_CONFIG_H
#define LOCKD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define LOCKD_VERSION "0.1.0"

#define CONFIG_DEFAULT_LISTEN "127.0.0.1:7420"
#define CONFIG_DEFAULT_LEASE_MS ((int64_t)30 * 1000)
#define CONFIG_DEFAULT_MAX_LEASE_MS ((int64_t)5 * 60 * 1000)
#define CONFIG_DEFAULT_MAX_LOCK_DELAY_MS ((int64_t)60 * 1000)
#define CONFIG_DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS ((int64_t)10 * 1000)
#define CONFIG_DEFAULT_DATA_DIR "./lockd-data"
#define CONFIG_DEFAULT_MAX_CONNECTIONS 10000
#define CONFIG_DEFAULT_MAX_HELD 1000000
#define CONFIG_DEFAULT_MAX_WAITERS 1000000
#define CONFIG_DEFAULT_MAX_CONN_WAITERS 1024
/* The map that --max-held holders of 264-byte keys need in the worst case
 * (store_lmdb_map_needed: about 5.5 GB for a million); only the pages
 * used take room on disk. */
#define CONFIG_DEFAULT_MAP_SIZE ((size_t)8 << 30)     /* 8 GiB */
#define CONFIG_DEFAULT_UNIX_MODE 0660
#define CONFIG_DEFAULT_CLUSTER "lockd"
/* --leader-lease: the TTL of the etcd lease behind the leader key.  etcd
 * counts leases in whole seconds and grants none under 2 s; longer than
 * an hour would leave a dead leader's locks out of service that long. */
#define CONFIG_DEFAULT_LEADER_LEASE_MS ((int64_t)3 * 1000)
#define CONFIG_LEADER_LEASE_MIN_MS ((int64_t)2 * 1000)
#define CONFIG_LEADER_LEASE_MAX_MS ((int64_t)3600 * 1000)
/* --max-line's bounds; its default is PROTO_LINE_MAX_DEFAULT, and
 * --max-output's SERVICE_MAX_OUTPUT_DEFAULT (the layers' own). */
#define CONFIG_MAX_LINE_MIN 64
#define CONFIG_MAX_LINE_MAX ((size_t)1 << 20)

struct config {
	char listen[300];          /* HOST:PORT, [V6]:PORT; "" = none */
	char unix_path[108];
	unsigned unix_mode;        /* permissions of unix_path, set after bind */
	bool listen_set;           /* listen given by a flag or the file */
	char data_dir[4096];
	char metrics_listen[300];
	char config_file[4096];
	int64_t default_lease_ms;
	int64_t max_lease_ms;
	int64_t max_lock_delay_ms;   /* --max-lock-delay, default 1m */
	uint32_t max_connections;
	size_t max_line;
	size_t max_output;
	uint32_t max_held;
	uint32_t max_waiters;
	uint32_t max_conn_waiters;
	/* --max-*-per-principal (quota.h); 0: no limit. */
	uint32_t max_principal_connections, max_principal_held;
	uint32_t max_principal_waiters;
	size_t map_size;
	size_t journal_size;
	int log_level;
	/* Cluster mode (docs/cluster.md): etcd's URLs, "" = single node. */
	char etcd[2048];
	char cluster[80];          /* default CONFIG_DEFAULT_CLUSTER */
	char advertise[300];       /* HOST:PORT; "" = the listen address */
	char auth_file[4096];      /* --auth: "" = authentication off */
	char tls_cert[4096];       /* --tls-cert, --tls-key: TLS on TCP */
	char tls_key[4096];
	char tls_client_ca[4096];  /* --tls-client-ca: client certs required */
	int64_t tls_handshake_timeout_ms;
	/* Cluster mode's connection to etcd (docs/security.md): TLS files
	 * for https:// URLs, and etcd's user with a file for the password. */
	char etcd_ca[4096], etcd_cert[4096], etcd_key[4096];
	char etcd_user[128];
	char etcd_password_file[4096];
	int64_t leader_lease_ms;   /* cluster mode: whole seconds, 2s to 1h */
};

enum config_result { CONFIG_OK, CONFIG_EXIT_OK, CONFIG_ERROR };

/*
 * Fills cfg from defaults, the config file (--config) and the arguments, in
 * that order.  --help and --version print and return CONFIG_EXIT_OK.  On a
 * bad flag or value returns CONFIG_ERROR with a one-line message in err.
 */
enum config_result config_load(struct config *cfg, int argc, char **argv,
    char *err, size_t err_len);

/* Splits "HOST:PORT" or "[V6]:PORT"; returns -1 when malformed. */
int config_split_hostport(const char *s, char *host, size_t host_len,
    int *port);

/* Resolves "HOST:PORT" (an IP literal or a name) to a socket address;
 * returns -1 with a message in err. */
int config_resolve(const char *hostport, struct sockaddr_storage *addr,
    socklen_t *len, char *err, size_t err_len);

#endif
