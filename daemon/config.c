/*
 * config.c - parsing lockd's command line and config file.  Numbers take
 * digits only; durations take the protocol's forms (1500, 30s, 5m).
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/etcd.h"
#include "daemon/log.h"
#include "daemon/service.h"
#include "daemon/store.h"
#include "daemon/store_etcd.h"
#include "proto/proto.h"

enum kind { K_STRING, K_DURATION, K_U32, K_SIZE, K_LEVEL, K_MODE, K_NONE };

struct option {
	const char *key;
	enum kind kind;
	size_t offset;
	size_t size;          /* for strings */
	const char *help;
};

#define STR(f) K_STRING, offsetof(struct config, f), \
	sizeof(((struct config *)0)->f)
#define NUM(k, f) k, offsetof(struct config, f), 0

static const struct option options[] = {
	{ "listen", STR(listen),
	  "HOST:PORT  TCP address (default " CONFIG_DEFAULT_LISTEN
	  "; port 0 picks a free one; \"none\" disables TCP)" },
	{ "unix", STR(unix_path), "PATH       also listen on a Unix socket" },
	{ "unix-mode", NUM(K_MODE, unix_mode),
	  "MODE       the Unix socket's permissions, octal (default 0660)" },
	{ "data-dir", STR(data_dir),
	  "DIR        data directory (default $STATE_DIRECTORY, else "
	  CONFIG_DEFAULT_DATA_DIR ")" },
	{ "default-lease", NUM(K_DURATION, default_lease_ms),
	  "D          lease when none is asked for (default 30s)" },
	{ "max-lease", NUM(K_DURATION, max_lease_ms),
	  "D          longest lease; longer ones are capped (default 5m)" },
	{ "max-lock-delay", NUM(K_DURATION, max_lock_delay_ms),
	  "D          longest lock-delay; longer ones are capped (default 1m)" },
	{ "max-connections", NUM(K_U32, max_connections),
	  "N          concurrent connections (default 10000)" },
	{ "max-line", NUM(K_SIZE, max_line),
	  "BYTES      longest request line (default 4096)" },
	{ "max-output", NUM(K_SIZE, max_output),
	  "BYTES      replies queued for a client that does not read, then "
	  "it is cut off (default 1048576)" },
	{ "max-held", NUM(K_U32, max_held),
	  "N          held locks in all (default 1000000)" },
	{ "max-waiters", NUM(K_U32, max_waiters),
	  "N          waiting ACQUIREs in all (default 1000000)" },
	{ "max-waiters-per-connection", NUM(K_U32, max_conn_waiters),
	  "N          waiting ACQUIREs per connection (default 1024)" },
	{ "max-connections-per-principal",
	  NUM(K_U32, max_principal_connections),
	  "N          connections one principal may have (default 0: any)" },
	{ "max-held-per-principal", NUM(K_U32, max_principal_held),
	  "N          locks one principal may hold (default 0: any)" },
	{ "max-waiters-per-principal", NUM(K_U32, max_principal_waiters),
	  "N          waiting ACQUIREs of one principal (default 0: any)" },
	{ "map-size", NUM(K_SIZE, map_size),
	  "BYTES      LMDB map size, the most the store can hold; must fit "
	  "--max-held (default 4294967296)" },
	{ "journal-size", NUM(K_SIZE, journal_size),
	  "BYTES      redo journal in front of LMDB, 65536 to 1073741824 "
	  "(default 67108864)" },
	{ "metrics-listen", STR(metrics_listen),
	  "HOST:PORT  serve Prometheus metrics at /metrics (default off)" },
	{ "config", STR(config_file),
	  "FILE       read settings from FILE (same keys, key = value)" },
	{ "log-level", NUM(K_LEVEL, log_level),
	  "LEVEL      error|warn|info|debug (default info)" },
	{ "etcd", STR(etcd),
	  "URLS       cluster mode: etcd's client URLs, comma-separated "
	  "(default off: one node, LMDB)" },
	{ "cluster", STR(cluster),
	  "NAME       cluster mode: the cluster's name in etcd (default "
	  CONFIG_DEFAULT_CLUSTER ")" },
	{ "advertise", STR(advertise),
	  "HOST:PORT  cluster mode: this node's address in NOTLEADER hints "
	  "(default the --listen address)" },
	{ "auth", STR(auth_file),
	  "FILE       turn authentication on with FILE's rules "
	  "(docs/security.md; re-read on SIGHUP)" },
	{ "tls-cert", STR(tls_cert),
	  "FILE       TLS on every TCP listener with this certificate "
	  "(PEM; re-read on SIGHUP)" },
	{ "tls-key", STR(tls_key),
	  "FILE       the private key of --tls-cert (PEM)" },
	{ "tls-client-ca", STR(tls_client_ca),
	  "FILE       require client certificates signed by this CA; "
	  "the CN is the principal" },
	{ "tls-handshake-timeout", NUM(K_DURATION, tls_handshake_timeout_ms),
	  "D          close a TLS client that has not finished its handshake "
	  "(default 10s)" },
	{ "etcd-ca", STR(etcd_ca),
	  "FILE       cluster mode: the CA of etcd's server certificates "
	  "(https:// URLs; default the system's CAs)" },
	{ "etcd-cert", STR(etcd_cert),
	  "FILE       cluster mode: a client certificate for etcd (PEM; "
	  "re-read on SIGHUP, as --etcd-ca)" },
	{ "etcd-key", STR(etcd_key),
	  "FILE       cluster mode: the private key of --etcd-cert (PEM)" },
	{ "etcd-user", STR(etcd_user),
	  "NAME       cluster mode: authenticate to etcd as this user" },
	{ "etcd-password-file", STR(etcd_password_file),
	  "FILE       cluster mode: the file with --etcd-user's password "
	  "(re-read on SIGHUP)" },
	{ "leader-lease", NUM(K_DURATION, leader_lease_ms),
	  "D          cluster mode: the leader's etcd lease, whole seconds "
	  "from 2s to 1h (default 3s; docs/cluster.md)" },
};
#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/*
 * Where each setting came from, so that an error about a value read from
 * the config file names its file and line: line 0 is a default or a flag.
 */
struct origins {
	const char *file;
	int line[NOPTIONS];
};

static void
usage(void)
{
	size_t i;

	printf("usage: lockd [--KEY VALUE | --KEY=VALUE]...\n"
	    "       lockd --help | --version\n\n");
	for (i = 0; i < NOPTIONS; i++)
		printf("  --%-27s %s\n", options[i].key, options[i].help);
	printf("\nDurations D: 1500 (ms), 1500ms, 30s, 5m, 1h.\n"
	    "The config file takes the same keys without the dashes.\n");
}

static bool
parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

static bool
parse_octal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '7')
			return false;
		v = v * 8 + (uint64_t)(*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

static const struct option *
find_option(const char *key, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].key) == len &&
		    strncmp(options[i].key, key, len) == 0)
			return &options[i];
	return NULL;
}

static int
apply(struct config *cfg, const struct option *o, const char *value,
    char *err, size_t err_len)
{
	char *field = (char *)cfg + o->offset;
	int64_t ms;
	uint64_t n;
	int level;

	switch (o->kind) {
	case K_STRING:
		if (strlen(value) >= o->size) {
			snprintf(err, err_len, "--%s: value too long", o->key);
			return -1;
		}
		memcpy(field, value, strlen(value) + 1);
		return 0;
	case K_DURATION:
		if (!proto_parse_duration(value, strlen(value), &ms)) {
			snprintf(err, err_len, "--%s: bad duration '%s'",
			    o->key, value);
			return -1;
		}
		memcpy(field, &ms, sizeof(ms));
		return 0;
	case K_U32:
		if (!parse_u64(value, UINT32_MAX, &n)) {
			snprintf(err, err_len, "--%s: bad number '%s'",
			    o->key, value);
			return -1;
		}
		*(uint32_t *)(void *)field = (uint32_t)n;
		return 0;
	case K_SIZE:
		if (!parse_u64(value, SIZE_MAX / 2, &n)) {
			snprintf(err, err_len, "--%s: bad number '%s'",
			    o->key, value);
			return -1;
		}
		*(size_t *)(void *)field = (size_t)n;
		return 0;
	case K_MODE:
		if (!parse_octal(value, 0777, &n)) {
			snprintf(err, err_len, "--%s: bad mode '%s' (octal, "
			    "0 to 0777)", o->key, value);
			return -1;
		}
		*(unsigned *)(void *)field = (unsigned)n;
		return 0;
	case K_LEVEL:
		if ((level = log_level_parse(value)) < 0) {
			snprintf(err, err_len, "--%s: bad level '%s'", o->key,
			    value);
			return -1;
		}
		*(int *)(void *)field = level;
		return 0;
	default:
		return -1;
	}
}

static char *
trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
	    end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/*
 * Cuts a comment off a config line: '#' at its start or after a space or
 * tab begins one, so "max-lease = 5m   # long jobs" is max-lease = 5m while
 * a '#' inside a value ("unix = /run/a#1") stays.
 */
static void
strip_comment(char *s)
{
	char *p;

	for (p = s; *p != '\0'; p++)
		if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
			*p = '\0';
			return;
		}
}

static int
load_file(struct config *cfg, const char *path, struct origins *from,
    char *err, size_t err_len)
{
	char line[4096 + 64], why[512];
	FILE *f = fopen(path, "r");
	int lineno = 0;

	if (f == NULL) {
		snprintf(err, err_len, "--config: cannot open %s: %s", path,
		    strerror(errno));
		return -1;
	}
	from->file = path;
	while (fgets(line, sizeof(line), f) != NULL) {
		const struct option *o;
		char *s, *sep, *key, *value;

		lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(err, err_len, "%s:%d: line too long (at most "
			    "%zu bytes)", path, lineno, sizeof(line) - 2);
			goto fail;
		}
		strip_comment(line);
		s = trim(line);
		if (*s == '\0')
			continue;
		sep = strpbrk(s, "= \t");
		if (sep == NULL) {
			snprintf(err, err_len, "%s:%d: expected key = value",
			    path, lineno);
			goto fail;
		}
		key = s;
		value = sep + 1;
		*sep = '\0';
		key = trim(key);
		value = trim(value);
		if (*value == '=')
			value = trim(value + 1);
		o = find_option(key, strlen(key));
		if (o == NULL || strcmp(key, "config") == 0) {
			snprintf(err, err_len, "%s:%d: unknown key '%s'", path,
			    lineno, key);
			goto fail;
		}
		if (apply(cfg, o, value, why, sizeof(why)) != 0) {
			/* apply() names the flag; here the key is what the
			 * reader wrote. */
			snprintf(err, err_len, "%s:%d: %s", path, lineno,
			    strncmp(why, "--", 2) == 0 ? why + 2 : why);
			goto fail;
		}
		from->line[o - options] = lineno;
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}

/*
 * How an error names a setting: "FILE:LINE: key" when its value came from
 * the config file, else "--key".  A setting named later in the message
 * (leading false) reads "key (FILE:LINE)".
 */
static const char *
name_of(const struct origins *from, const char *key, bool leading, char *buf,
    size_t len)
{
	const struct option *o = find_option(key, strlen(key));
	int line = o != NULL ? from->line[o - options] : 0;

	if (line > 0 && leading)
		snprintf(buf, len, "%s:%d: %s", from->file, line, key);
	else if (line > 0)
		snprintf(buf, len, "%s (%s:%d)", key, from->file, line);
	else
		snprintf(buf, len, "--%s", key);
	return buf;
}

int
config_split_hostport(const char *s, char *host, size_t host_len, int *port)
{
	const char *colon, *h = s;
	size_t hl;
	uint64_t p;

	colon = strrchr(s, ':');
	if (colon == NULL)
		return -1;
	hl = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hl < 2 || s[hl - 1] != ']')
			return -1;
		h = s + 1;
		hl -= 2;
	}
	if (hl == 0 || hl >= host_len || !parse_u64(colon + 1, 65535, &p))
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

int
config_resolve(const char *hostport, struct sockaddr_storage *addr,
    socklen_t *len, char *err, size_t err_len)
{
	struct addrinfo hints, *res = NULL;
	char host[256], service[16];
	int port, rc;

	if (config_split_hostport(hostport, host, sizeof(host), &port) != 0) {
		snprintf(err, err_len, "bad address '%s' (HOST:PORT)",
		    hostport);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	snprintf(service, sizeof(service), "%d", port);
	if ((rc = getaddrinfo(host, service, &hints, &res)) != 0) {
		snprintf(err, err_len, "cannot resolve '%s': %s", host,
		    gai_strerror(rc));
		return -1;
	}
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/*
 * A listening address must be an IP address (or a name that resolves to
 * one) of this machine: try to bind it, so a bad one is reported as a bad
 * flag, at once, before the data directory is touched.
 */
static int
check_address(const char *name, const char *value, char *err, size_t err_len)
{
	struct sockaddr_storage addr;
	char why[300];
	socklen_t len;
	int fd, one = 1;

	if (config_resolve(value, &addr, &len, why, sizeof(why)) != 0) {
		snprintf(err, err_len, "%s: %s", name, why);
		return -1;
	}
	fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, len) != 0) {
		snprintf(err, err_len, "%s: cannot listen on '%s': %s", name,
		    value, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * True when systemd passed this process listening sockets ($LISTEN_PID is
 * ours, $LISTEN_FDS set).  They hold the addresses then, so a `listen`
 * equal to one of them cannot be bound, and need not be: server.c serves
 * the passed sockets and warns about a `listen` that is not among them.
 */
static bool
sockets_passed(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	uint64_t p, n;

	return pid != NULL && fds != NULL &&
	    parse_u64(pid, UINT32_MAX, &p) && p == (uint64_t)getpid() &&
	    parse_u64(fds, 64, &n) && n > 0;
}

static void
defaults(struct config *cfg)
{
	const char *state = getenv("STATE_DIRECTORY");

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "%s",
	    CONFIG_DEFAULT_LISTEN);
	snprintf(cfg->cluster, sizeof(cfg->cluster), "%s",
	    CONFIG_DEFAULT_CLUSTER);
	/* systemd may pass several directories separated by ':'. */
	if (state != NULL && *state != '\0')
		snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%.*s",
		    (int)strcspn(state, ":"), state);
	else
		snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s",
		    CONFIG_DEFAULT_DATA_DIR);
	cfg->default_lease_ms = 0;   /* not set: 30 s, capped to max-lease */
	cfg->max_lease_ms = (int64_t)5 * 60 * 1000;
	cfg->max_lock_delay_ms = (int64_t)60 * 1000;
	cfg->max_connections = CONFIG_DEFAULT_MAX_CONNECTIONS;
	cfg->max_line = PROTO_LINE_MAX_DEFAULT;
	cfg->max_output = SERVICE_MAX_OUTPUT_DEFAULT;
	cfg->max_held = CONFIG_DEFAULT_MAX_HELD;
	cfg->max_waiters = CONFIG_DEFAULT_MAX_WAITERS;
	cfg->max_conn_waiters = CONFIG_DEFAULT_MAX_CONN_WAITERS;
	cfg->map_size = CONFIG_DEFAULT_MAP_SIZE;
	cfg->journal_size = STORE_JOURNAL_DEFAULT_SIZE;
	cfg->unix_mode = CONFIG_DEFAULT_UNIX_MODE;
	cfg->log_level = LOG_INFO;
	cfg->tls_handshake_timeout_ms = (int64_t)10 * 1000;
	cfg->leader_lease_ms = CONFIG_DEFAULT_LEADER_LEASE_MS;
}

/* Walks argv; with only_config set, applies --config alone. */
static enum config_result
parse_args(struct config *cfg, int argc, char **argv, bool only_config,
    struct origins *from, char *err, size_t err_len)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		const struct option *o;
		size_t klen;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			if (!only_config)
				usage();
			return CONFIG_EXIT_OK;
		}
		if (strcmp(arg, "--version") == 0) {
			if (!only_config)
				printf("lockd %s\n", LOCKD_VERSION);
			return CONFIG_EXIT_OK;
		}
		if (strncmp(arg, "--", 2) != 0) {
			snprintf(err, err_len, "unexpected argument '%s'", arg);
			return CONFIG_ERROR;
		}
		eq = strchr(arg + 2, '=');
		klen = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		if ((o = find_option(arg + 2, klen)) == NULL) {
			snprintf(err, err_len, "unknown flag '%.*s'",
			    (int)(klen + 2), arg);
			return CONFIG_ERROR;
		}
		if (eq != NULL) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			snprintf(err, err_len, "--%s needs a value", o->key);
			return CONFIG_ERROR;
		}
		if (only_config != (strcmp(o->key, "config") == 0))
			continue;
		if (apply(cfg, o, value, err, err_len) != 0)
			return CONFIG_ERROR;
		from->line[o - options] = -1;
	}
	return CONFIG_OK;
}

/* The flags of the connection to etcd go with --etcd and with each other. */
static int
check_etcd_security(const struct config *cfg, char *err, size_t err_len)
{
	bool tls = false;

	if (cfg->etcd[0] == '\0') {
		if (cfg->etcd_ca[0] != '\0' || cfg->etcd_cert[0] != '\0' ||
		    cfg->etcd_key[0] != '\0' || cfg->etcd_user[0] != '\0' ||
		    cfg->etcd_password_file[0] != '\0') {
			snprintf(err, err_len, "--etcd-ca, --etcd-cert, "
			    "--etcd-key, --etcd-user and --etcd-password-file "
			    "need --etcd");
			return -1;
		}
		return 0;
	}
	if (etcd_urls_check(cfg->etcd, &tls, err, err_len) != 0)
		return -1;
	if (!tls && (cfg->etcd_ca[0] != '\0' || cfg->etcd_cert[0] != '\0')) {
		snprintf(err, err_len, "--etcd-ca and --etcd-cert need "
		    "https:// URLs in --etcd");
		return -1;
	}
	if ((cfg->etcd_cert[0] != '\0') != (cfg->etcd_key[0] != '\0')) {
		snprintf(err, err_len, "--etcd-cert and --etcd-key go "
		    "together");
		return -1;
	}
	if ((cfg->etcd_user[0] != '\0') !=
	    (cfg->etcd_password_file[0] != '\0')) {
		snprintf(err, err_len, "--etcd-user and --etcd-password-file "
		    "go together (the password is never given on the command "
		    "line)");
		return -1;
	}
	return 0;
}

enum config_result
config_load(struct config *cfg, int argc, char **argv, char *err,
    size_t err_len)
{
	struct origins from;
	enum config_result r;
	char name[4200], other[4200];

	memset(&from, 0, sizeof(from));
	defaults(cfg);
	if ((r = parse_args(cfg, argc, argv, true, &from, err, err_len)) !=
	    CONFIG_OK)
		return r == CONFIG_EXIT_OK ?
		    parse_args(cfg, argc, argv, false, &from, err, err_len) : r;
	if (cfg->config_file[0] != '\0' &&
	    load_file(cfg, cfg->config_file, &from, err, err_len) != 0)
		return CONFIG_ERROR;
	if ((r = parse_args(cfg, argc, argv, false, &from, err, err_len)) !=
	    CONFIG_OK)
		return r;
	cfg->listen_set = from.line[find_option("listen", 6) - options] != 0;
	if (cfg->max_lease_ms <= 0) {
		snprintf(err, err_len, "%s must be positive",
		    name_of(&from, "max-lease", true, name, sizeof(name)));
		return CONFIG_ERROR;
	}
	if (cfg->default_lease_ms == 0) {
		cfg->default_lease_ms = CONFIG_DEFAULT_LEASE_MS;
		if (cfg->default_lease_ms > cfg->max_lease_ms)
			cfg->default_lease_ms = cfg->max_lease_ms;
	} else if (cfg->default_lease_ms > cfg->max_lease_ms) {
		snprintf(err, err_len, "%s must be at most %s",
		    name_of(&from, "default-lease", true, name, sizeof(name)),
		    name_of(&from, "max-lease", false, other, sizeof(other)));
		return CONFIG_ERROR;
	}
	if (cfg->max_line < CONFIG_MAX_LINE_MIN ||
	    cfg->max_line > CONFIG_MAX_LINE_MAX) {
		snprintf(err, err_len, "%s must be %d to %zu",
		    name_of(&from, "max-line", true, name, sizeof(name)),
		    CONFIG_MAX_LINE_MIN, CONFIG_MAX_LINE_MAX);
		return CONFIG_ERROR;
	}
	if (cfg->journal_size < STORE_JOURNAL_MIN_SIZE ||
	    cfg->journal_size > STORE_JOURNAL_MAX_SIZE) {
		snprintf(err, err_len, "%s must be 65536 to 1073741824",
		    name_of(&from, "journal-size", true, name, sizeof(name)));
		return CONFIG_ERROR;
	}
	if (strcmp(cfg->listen, "none") == 0)
		cfg->listen[0] = '\0';
	if (cfg->listen[0] != '\0' && !sockets_passed() &&
	    check_address(name_of(&from, "listen", true, name, sizeof(name)),
	    cfg->listen, err, err_len) != 0)
		return CONFIG_ERROR;
	if (cfg->metrics_listen[0] != '\0' &&
	    check_address(name_of(&from, "metrics-listen", true, name,
	    sizeof(name)), cfg->metrics_listen, err, err_len) != 0)
		return CONFIG_ERROR;
	if (cfg->etcd[0] != '\0' && !store_etcd_cluster_valid(cfg->cluster)) {
		snprintf(err, err_len, "%s must be 1 to %d letters, digits, "
		    "'-', '_' or '.'", name_of(&from, "cluster", true, name,
		    sizeof(name)), STORE_ETCD_CLUSTER_MAX);
		return CONFIG_ERROR;
	}
	if (cfg->advertise[0] != '\0') {
		char host[256];
		int port;
		if (config_split_hostport(cfg->advertise, host, sizeof(host),
		    &port) != 0 || host[0] == '\0' || port <= 0) {
			snprintf(err, err_len, "%s must be HOST:PORT with a "
			    "port of 1 to 65535", name_of(&from, "advertise",
			    true, name, sizeof(name)));
			return CONFIG_ERROR;
		}
	}
	if ((cfg->tls_cert[0] != '\0') != (cfg->tls_key[0] != '\0')) {
		snprintf(err, err_len, "--tls-cert and --tls-key go together");
		return CONFIG_ERROR;
	}
	if (cfg->tls_client_ca[0] != '\0' && cfg->tls_cert[0] == '\0') {
		snprintf(err, err_len, "--tls-client-ca needs --tls-cert and "
		    "--tls-key");
		return CONFIG_ERROR;
	}
	if (cfg->tls_handshake_timeout_ms <= 0) {
		snprintf(err, err_len, "%s must be positive",
		    name_of(&from, "tls-handshake-timeout", true, name,
		    sizeof(name)));
		return CONFIG_ERROR;
	}
	if (check_etcd_security(cfg, err, err_len) != 0)
		return CONFIG_ERROR;
	/* etcd's leases are whole seconds: refused, not rounded, so that
	 * the lease a node keeps is the one its operator wrote. */
	if (cfg->leader_lease_ms < CONFIG_LEADER_LEASE_MIN_MS ||
	    cfg->leader_lease_ms > CONFIG_LEADER_LEASE_MAX_MS ||
	    cfg->leader_lease_ms % 1000 != 0) {
		snprintf(err, err_len, "%s must be whole seconds from 2s to "
		    "1h (etcd's leases are whole seconds, at least 2)",
		    name_of(&from, "leader-lease", true, name, sizeof(name)));
		return CONFIG_ERROR;
	}
	if (cfg->listen[0] == '\0' && cfg->unix_path[0] == '\0') {
		snprintf(err, err_len, "nothing to listen on");
		return CONFIG_ERROR;
	}
	return CONFIG_OK;
}
