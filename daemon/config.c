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

/*
 * The one table of lockd's settings: each flag (and config-file key), what
 * its value is, where it goes, and its default.  defaults() sets every
 * default from here, and --help and --print-defaults print them from
 * here, so what lockd says its defaults are is what it uses; the docs and
 * systemd/lockd.conf are checked against --print-defaults
 * (tests/docs/check-docs.sh).  A string setting without a default (def_str
 * NULL) is off; its help says what that means.
 */
struct option {
	const char *key;
	const char *arg;      /* the value in --help: HOST:PORT, N, D... */
	enum kind kind;
	size_t offset;
	size_t size;          /* for strings */
	uint64_t def_num;     /* the default of every kind but K_STRING */
	const char *def_str;  /* K_STRING's default, or NULL: none */
	const char *help;
	const char *def_note; /* after the default in --help, or "" */
};

#define STR(f, def) K_STRING, offsetof(struct config, f), \
	sizeof(((struct config *)0)->f), 0, def
#define NUM(k, f, def) k, offsetof(struct config, f), 0, def, NULL

static const struct option options[] = {
	{ "listen", "HOST:PORT", STR(listen, CONFIG_DEFAULT_LISTEN),
	  "TCP address; port 0 picks a free one, \"none\" disables TCP", "" },
	{ "unix", "PATH", STR(unix_path, NULL),
	  "also listen on a Unix socket", "" },
	{ "unix-mode", "MODE", NUM(K_MODE, unix_mode,
	  CONFIG_DEFAULT_UNIX_MODE),
	  "the Unix socket's permissions, octal", "" },
	{ "data-dir", "DIR", STR(data_dir, CONFIG_DEFAULT_DATA_DIR),
	  "data directory", ", or $STATE_DIRECTORY when set" },
	{ "default-lease", "D", NUM(K_DURATION, default_lease_ms,
	  CONFIG_DEFAULT_LEASE_MS),
	  "lease when none is asked for", ", or --max-lease if shorter" },
	{ "max-lease", "D", NUM(K_DURATION, max_lease_ms,
	  CONFIG_DEFAULT_MAX_LEASE_MS),
	  "longest lease; longer ones are capped", "" },
	{ "max-lock-delay", "D", NUM(K_DURATION, max_lock_delay_ms,
	  CONFIG_DEFAULT_MAX_LOCK_DELAY_MS),
	  "longest lock-delay; longer ones are capped", "" },
	{ "max-connections", "N", NUM(K_U32, max_connections,
	  CONFIG_DEFAULT_MAX_CONNECTIONS),
	  "concurrent connections", "" },
	{ "max-line", "BYTES", NUM(K_SIZE, max_line, PROTO_LINE_MAX_DEFAULT),
	  "longest request line, 64 to 1048576", "" },
	{ "max-output", "BYTES", NUM(K_SIZE, max_output,
	  SERVICE_MAX_OUTPUT_DEFAULT),
	  "replies queued for a client that does not read, then it is cut "
	  "off", "" },
	{ "max-held", "N", NUM(K_U32, max_held, CONFIG_DEFAULT_MAX_HELD),
	  "held locks in all", "" },
	{ "max-waiters", "N", NUM(K_U32, max_waiters,
	  CONFIG_DEFAULT_MAX_WAITERS),
	  "waiting ACQUIREs in all", "" },
	{ "max-waiters-per-connection", "N", NUM(K_U32, max_conn_waiters,
	  CONFIG_DEFAULT_MAX_CONN_WAITERS),
	  "waiting ACQUIREs per connection", "" },
	{ "max-connections-per-principal", "N",
	  NUM(K_U32, max_principal_connections, 0),
	  "connections one principal may have", ": any" },
	{ "max-held-per-principal", "N", NUM(K_U32, max_principal_held, 0),
	  "locks one principal may hold", ": any" },
	{ "max-waiters-per-principal", "N", NUM(K_U32, max_principal_waiters,
	  0),
	  "waiting ACQUIREs of one principal", ": any" },
	{ "map-size", "BYTES", NUM(K_SIZE, map_size, CONFIG_DEFAULT_MAP_SIZE),
	  "LMDB map size, the most the store can hold; must fit --max-held",
	  "" },
	{ "journal-size", "BYTES", NUM(K_SIZE, journal_size,
	  STORE_JOURNAL_DEFAULT_SIZE),
	  "redo journal in front of LMDB, 65536 to 1073741824", "" },
	{ "metrics-listen", "HOST:PORT", STR(metrics_listen, NULL),
	  "serve Prometheus metrics at /metrics (default off)", "" },
	{ "config", "FILE", STR(config_file, NULL),
	  "read settings from FILE (same keys, key = value)", "" },
	{ "log-level", "LEVEL", NUM(K_LEVEL, log_level, LOG_INFO),
	  "error|warn|info|debug", "" },
	{ "etcd", "URLS", STR(etcd, NULL),
	  "cluster mode: etcd's client URLs, comma-separated "
	  "(default off: one node, LMDB)", "" },
	{ "cluster", "NAME", STR(cluster, CONFIG_DEFAULT_CLUSTER),
	  "cluster mode: the cluster's name in etcd", "" },
	{ "advertise", "HOST:PORT", STR(advertise, NULL),
	  "cluster mode: this node's address in NOTLEADER hints "
	  "(default the --listen address)", "" },
	{ "auth", "FILE", STR(auth_file, NULL),
	  "turn authentication on with FILE's rules "
	  "(docs/security.md; re-read on SIGHUP)", "" },
	{ "tls-cert", "FILE", STR(tls_cert, NULL),
	  "TLS on every TCP listener with this certificate "
	  "(PEM; re-read on SIGHUP)", "" },
	{ "tls-key", "FILE", STR(tls_key, NULL),
	  "the private key of --tls-cert (PEM)", "" },
	{ "tls-client-ca", "FILE", STR(tls_client_ca, NULL),
	  "require client certificates signed by this CA; "
	  "the CN is the principal", "" },
	{ "tls-handshake-timeout", "D", NUM(K_DURATION,
	  tls_handshake_timeout_ms, CONFIG_DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS),
	  "close a TLS client that has not finished its handshake", "" },
	{ "etcd-ca", "FILE", STR(etcd_ca, NULL),
	  "cluster mode: the CA of etcd's server certificates "
	  "(https:// URLs; default the system's CAs)", "" },
	{ "etcd-cert", "FILE", STR(etcd_cert, NULL),
	  "cluster mode: a client certificate for etcd (PEM; "
	  "re-read on SIGHUP, as --etcd-ca)", "" },
	{ "etcd-key", "FILE", STR(etcd_key, NULL),
	  "cluster mode: the private key of --etcd-cert (PEM)", "" },
	{ "etcd-user", "NAME", STR(etcd_user, NULL),
	  "cluster mode: authenticate to etcd as this user", "" },
	{ "etcd-password-file", "FILE", STR(etcd_password_file, NULL),
	  "cluster mode: the file with --etcd-user's password "
	  "(re-read on SIGHUP)", "" },
	{ "leader-lease", "D", NUM(K_DURATION, leader_lease_ms,
	  CONFIG_DEFAULT_LEADER_LEASE_MS),
	  "cluster mode: the leader's etcd lease, whole seconds "
	  "from 2s to 1h", "; docs/cluster.md" },
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

/*
 * The default of o as a user writes it, in the config file or after its
 * flag; false when it has none.  Durations take their largest whole unit.
 */
static bool
format_default(const struct option *o, char *buf, size_t len)
{
	static const struct { uint64_t ms; const char *unit; } units[] = {
		{ 3600000, "h" }, { 60000, "m" }, { 1000, "s" },
	};
	uint64_t v = o->def_num;
	size_t i;

	switch (o->kind) {
	case K_STRING:
		if (o->def_str == NULL)
			return false;
		snprintf(buf, len, "%s", o->def_str);
		return true;
	case K_DURATION:
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (v > 0 && v % units[i].ms == 0) {
				snprintf(buf, len, "%llu%s", (unsigned long long)
				    (v / units[i].ms), units[i].unit);
				return true;
			}
		snprintf(buf, len, v > 0 ? "%llums" : "%llu",
		    (unsigned long long)v);
		return true;
	case K_MODE:
		snprintf(buf, len, "%04llo", (unsigned long long)v);
		return true;
	case K_LEVEL:
		snprintf(buf, len, "%s", log_level_name((int)v));
		return true;
	default:
		snprintf(buf, len, "%llu", (unsigned long long)v);
		return true;
	}
}

static void
usage(void)
{
	char def[64];
	size_t i;

	printf("usage: lockd [--KEY VALUE | --KEY=VALUE]...\n"
	    "       lockd --help | --version | --print-defaults\n\n");
	for (i = 0; i < NOPTIONS; i++) {
		const struct option *o = &options[i];

		printf("  --%-27s %-10s %s", o->key, o->arg, o->help);
		if (format_default(o, def, sizeof(def)))
			printf(" (default %s%s)", def, o->def_note);
		printf("\n");
	}
	printf("  --%-27s %-10s %s\n", "print-defaults", "",
	    "print every default above as a config file, and exit");
	printf("\nDurations D: 1500 (ms), 1500ms, 30s, 5m, 1h.\n"
	    "The config file takes the same keys without the dashes.\n");
}

/* --print-defaults: "key = value" for each setting that has a default. */
static void
print_defaults(void)
{
	char def[64];
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (format_default(&options[i], def, sizeof(def)))
			printf("%s = %s\n", options[i].key, def);
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

/* Stores a number into o's field, as wide as its kind's. */
static void
set_number(struct config *cfg, const struct option *o, uint64_t v)
{
	char *field = (char *)cfg + o->offset;

	switch (o->kind) {
	case K_DURATION:
		*(int64_t *)(void *)field = (int64_t)v;
		break;
	case K_U32:
		*(uint32_t *)(void *)field = (uint32_t)v;
		break;
	case K_SIZE:
		*(size_t *)(void *)field = (size_t)v;
		break;
	case K_MODE:
		*(unsigned *)(void *)field = (unsigned)v;
		break;
	case K_LEVEL:
		*(int *)(void *)field = (int)v;
		break;
	default:
		break;
	}
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
		set_number(cfg, o, (uint64_t)ms);
		return 0;
	case K_U32:
	case K_SIZE:
		if (!parse_u64(value, o->kind == K_U32 ? UINT32_MAX :
		    SIZE_MAX / 2, &n)) {
			snprintf(err, err_len, "--%s: bad number '%s'",
			    o->key, value);
			return -1;
		}
		set_number(cfg, o, n);
		return 0;
	case K_MODE:
		if (!parse_octal(value, 0777, &n)) {
			snprintf(err, err_len, "--%s: bad mode '%s' (octal, "
			    "0 to 0777)", o->key, value);
			return -1;
		}
		set_number(cfg, o, n);
		return 0;
	case K_LEVEL:
		if ((level = log_level_parse(value)) < 0) {
			snprintf(err, err_len, "--%s: bad level '%s'", o->key,
			    value);
			return -1;
		}
		set_number(cfg, o, (uint64_t)level);
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

/* Every setting at its default, from the table. */
static void
defaults(struct config *cfg)
{
	const char *state = getenv("STATE_DIRECTORY");
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < NOPTIONS; i++) {
		const struct option *o = &options[i];

		if (o->kind != K_STRING)
			set_number(cfg, o, o->def_num);
		else if (o->def_str != NULL)
			snprintf((char *)cfg + o->offset, o->size, "%s",
			    o->def_str);
	}
	/* systemd may pass several directories separated by ':'. */
	if (state != NULL && *state != '\0')
		snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%.*s",
		    (int)strcspn(state, ":"), state);
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
		if (strcmp(arg, "--print-defaults") == 0) {
			if (!only_config)
				print_defaults();
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
	const struct option *o;
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
	/* Not given, or 0: the default, capped to --max-lease. */
	o = find_option("default-lease", 13);
	if (from.line[o - options] == 0 || cfg->default_lease_ms == 0) {
		cfg->default_lease_ms = (int64_t)o->def_num;
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
