/*
 * daemon.c - the daemon's life: settings, the store, recovery, the loop,
 * the stop.  main.c calls daemon_run() with no seams; test programs call it
 * with seams that inject faults at exact points (see daemon.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/etcd.h"
#include "daemon/format.h"
#include "daemon/leader.h"
#include "daemon/log.h"
#include "daemon/notify.h"
#include "daemon/server.h"
#include "daemon/service.h"
#include "daemon/store.h"
#include "daemon/store_etcd.h"
#include "proto/proto.h"

/* Handle secrets come from the kernel's random source, read in blocks so
 * a grant costs no system call. */
#define RANDOM_POOL_WORDS 512   /* 4 KiB: one getrandom() per 512 grants */
/* A page size for when sysconf cannot tell (it always can on Linux). */
#define FALLBACK_PAGE_SIZE 4096

struct random_pool {
	uint64_t words[RANDOM_POOL_WORDS];
	size_t left;
};

static uint64_t
random_secret(void *ctx)
{
	struct random_pool *pool = ctx;
	size_t got = 0;

	if (pool->left == 0) {
		while (got < sizeof(pool->words)) {
			ssize_t n = getrandom((char *)pool->words + got,
			    sizeof(pool->words) - got, 0);
			if (n < 0) {
				log_event(LOG_ERROR, "random_error",
				    "action=exit");
				abort();
			}
			got += (size_t)n;
		}
		pool->left = sizeof(pool->words) / sizeof(pool->words[0]);
	}
	return pool->words[--pool->left];
}

static core_time
clock_mono(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (core_time)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
clock_mono_ns(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
clock_wall(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The kernel's id of this boot: stored with each lease, so a restart
 * within the same boot can trust the boot clock. */
static void
read_boot_id(uint8_t id[16])
{
	char text[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	int i = 0, j;

	memset(id, 0, 16);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		/* Unknown boot: every record is then trusted only by its
		 * wall-clock expiry, capped at the maximum lease.  Should
		 * getrandom fail too, the id stays all zeros, never half
		 * written. */
		if (getrandom(id, 16, 0) != 16)
			memset(id, 0, 16);
		return;
	}
	for (j = 0; j < n && i < 32; j++) {
		int v = hexval(text[j]);
		if (v < 0)
			continue;
		id[i / 2] |= (uint8_t)(v << (i % 2 ? 0 : 4));
		i++;
	}
}

/*
 * --max-held holders, all with the longest keys, must fit in --map-size:
 * else the map fills first and clients get ERR UNAVAILABLE where the limit
 * promises ERR LIMIT.  store_lmdb_map_needed() is the bound.  --max-held
 * counts every holder of a semaphore or shared lock, each under a key of
 * its own: a 255-byte name, a NUL and its fence (FORMAT_KEY_MAX).
 */
static bool
map_too_small(const struct config *cfg, char *err, size_t err_len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t need = store_lmdb_map_needed(cfg->max_held, FORMAT_KEY_MAX,
	    STORE_VALUE_MAX, page > 0 ? (size_t)page : FALLBACK_PAGE_SIZE);

	if (cfg->map_size >= need)
		return false;
	snprintf(err, err_len, "--max-held %u needs --map-size %llu or more "
	    "(%zu given), for keys of %d bytes: raise --map-size or lower "
	    "--max-held", cfg->max_held, (unsigned long long)need,
	    cfg->map_size, FORMAT_KEY_MAX);
	return true;
}

/*
 * Cluster mode: the address NOTLEADER names for this node, --advertise or
 * else the address it listens on (with the port bound, for port 0).
 */
static void
advertise_of(const struct config *cfg, const struct server *srv, char *out,
    size_t cap)
{
	char host[256];
	int port;

	if (cfg->advertise[0] != '\0') {
		snprintf(out, cap, "%s", cfg->advertise);
		return;
	}
	if (config_split_hostport(cfg->listen, host, sizeof(host), &port) != 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	snprintf(out, cap, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d",
	    host, srv->port);
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
		log_event(LOG_WARN, "advertise", "addr=%s msg=\"listening on "
		    "every address: give --advertise, or NOTLEADER names "
		    "no reachable leader\"", out);
}

/* The service's configuration from lockd's: limits, leases, and the
 * secrets and hash key drawn from pool. */
static void
service_config_of(const struct config *cfg, struct random_pool *pool,
    struct service_config *scfg)
{
	service_config_defaults(scfg);
	scfg->core.default_lease_ms = cfg->default_lease_ms;
	scfg->core.max_lease_ms = cfg->max_lease_ms;
	scfg->core.max_lock_delay_ms = cfg->max_lock_delay_ms;
	scfg->core.max_held = cfg->max_held;
	scfg->core.max_waiters = cfg->max_waiters;
	scfg->core.max_waiters_per_session = cfg->max_conn_waiters;
	scfg->principal.connections = cfg->max_principal_connections;
	scfg->principal.held = cfg->max_principal_held;
	scfg->principal.waiters = cfg->max_principal_waiters;
	scfg->core.secret = random_secret;
	scfg->core.secret_ctx = pool;
	scfg->core.hash_key[0] = random_secret(pool);
	scfg->core.hash_key[1] = random_secret(pool);
	scfg->max_line = cfg->max_line;
	scfg->max_output = cfg->max_output;
}

/*
 * The store lockd serves from: on a single node the journal in front of
 * LMDB (or the seams' own), in cluster mode etcd, with *etcd its client
 * (standing by: leadership loads the state when it wins).  NULL after
 * saying why, with *status the exit code: 2 for etcd options that cannot
 * be used, 1 for a store that cannot be opened.
 */
static struct store *
open_store(const struct config *cfg, const struct daemon_seams *seams,
    uv_loop_t *loop, struct etcd **etcd, int *status)
{
	struct store_journal_config jcfg;
	struct store *store;
	char err[512];

	*etcd = NULL;
	*status = 2;
	if (cfg->etcd[0] != '\0') {
		struct etcd_security sec = { cfg->etcd_ca, cfg->etcd_cert,
		    cfg->etcd_key, cfg->etcd_user, cfg->etcd_password_file };

		if ((*etcd = etcd_open(loop, cfg->etcd, err, sizeof(err))) ==
		    NULL) {
			fprintf(stderr, "lockd: %s\n", err);
			return NULL;
		}
		if (etcd_secure(*etcd, &sec, err, sizeof(err)) != 0) {
			fprintf(stderr, "lockd: %s\n", err);
			return NULL;
		}
		store = store_etcd_open(*etcd, cfg->cluster,
		    LEADER_STORE_TIMEOUT_MS, err, sizeof(err));
		if (store != NULL)
			store_etcd_standby(store, true);
	} else if (seams != NULL && seams->open_store != NULL) {
		store = seams->open_store(cfg->data_dir, cfg->map_size, err,
		    sizeof(err));
	} else {
		memset(&jcfg, 0, sizeof(jcfg));
		jcfg.map_size = cfg->map_size;
		jcfg.journal_size = cfg->journal_size;
		if (seams != NULL) {
			jcfg.lmdb_flags = seams->lmdb_flags;
			jcfg.journal_nosync = seams->journal_nosync;
		}
		store = store_journal_open(cfg->data_dir, &jcfg, err,
		    sizeof(err));
	}
	if (store == NULL) {
		*status = 1;
		log_event(LOG_ERROR, "store_error", "error=\"%s\"", err);
		fprintf(stderr, "lockd: %s\n", err);
	}
	return store;
}

/* Tells systemd lockd is ready, and what it serves. */
static void
notify_ready(const struct config *cfg, struct service *svc,
    const struct service_recovery *rec, bool cluster)
{
	char ready[256];

	if (cluster)
		snprintf(ready, sizeof(ready), "READY=1\nSTATUS=cluster %s: "
		    "standing by until it leads", cfg->cluster);
	else
		snprintf(ready, sizeof(ready), "READY=1\nSTATUS=serving; "
		    "recovered %llu leases, %llu held, fence high-water mark "
		    "%llu", (unsigned long long)rec->leases,
		    (unsigned long long)service_held_count(svc),
		    (unsigned long long)rec->hwm);
	notify_send(ready);
}

/*
 * lockd: reads the configuration, opens the store, recovers, serves until
 * told to stop.  Each step that fails unwinds what the ones before it made,
 * through the one ladder at the end (as LMDB does it): 2 for a bad
 * configuration, 1 for a store, recovery or listener that fails, 0 after a
 * clean stop.
 */
int
daemon_run(int argc, char **argv, const struct daemon_seams *seams)
{
	static struct random_pool pool;
	static struct server srv;
	static struct leader leader;
	struct etcd *etcd = NULL;
	struct service_config scfg;
	struct service_recovery rec;
	struct service_clock clock;
	struct config cfg;
	struct store *store = NULL;
	char err[512];
	uv_loop_t *loop = uv_default_loop();
	int status = 2;

	switch (config_load(&cfg, argc, argv, err, sizeof(err))) {
	case CONFIG_EXIT_OK:
		return 0;
	case CONFIG_ERROR:
		fprintf(stderr, "lockd: %s\n", err);
		return 2;
	case CONFIG_OK:
		break;
	}
	if (cfg.etcd[0] == '\0' && (seams == NULL || !seams->map_unchecked) &&
	    map_too_small(&cfg, err, sizeof(err))) {
		fprintf(stderr, "lockd: %s\n", err);
		return 2;
	}
	if (cfg.auth_file[0] != '\0' && auth_rules_load(&srv.auth,
	    cfg.auth_file, err, sizeof(err)) != 0) {
		fprintf(stderr, "lockd: --auth %s\n", err);
		goto free_auth;
	}
	srv.cfg = &cfg;
	if (server_reload_tls(&srv, err, sizeof(err)) != 0) {
		fprintf(stderr, "lockd: %s\n", err);
		goto free_auth;
	}
	log_threshold = (enum log_level)cfg.log_level;
	/* A cluster node keeps nothing on disk: its store is etcd. */
	if (cfg.etcd[0] != '\0')
		log_event(LOG_INFO, "start", "version=%s pid=%d etcd=%s "
		    "cluster=%s", LOCKD_VERSION, (int)getpid(), cfg.etcd,
		    cfg.cluster);
	else
		log_event(LOG_INFO, "start", "version=%s pid=%d data_dir=%s",
		    LOCKD_VERSION, (int)getpid(), cfg.data_dir);
	if ((store = open_store(&cfg, seams, loop, &etcd, &status)) == NULL)
		goto close_etcd;
	if (etcd != NULL)
		service_cluster_enable(&srv.svc);
	status = 1;

	service_config_of(&cfg, &pool, &scfg);
	/* Room for every stored lease at once: recovery then never grows
	 * (and rehashes) the table.  Without a count it grows as it loads. */
	if (store->ops->count != NULL &&
	    store->ops->count(store, &scfg.core.expected_locks) != 0)
		scfg.core.expected_locks = 0;
	memset(&clock, 0, sizeof(clock));
	clock.mono = clock_mono;
	clock.wall = clock_wall;
	clock.mono_ns = clock_mono_ns;
	read_boot_id(clock.boot_id);

	if (service_open(&srv.svc, &scfg, store, &clock, &rec) != 0) {
		log_event(LOG_ERROR, "recovery_error", "error=\"%s\"",
		    srv.svc.error);
		fprintf(stderr, "lockd: recovery failed: %s\n", srv.svc.error);
		goto close_store;
	}
	/* A cluster node starts as a standby over nothing: what it loads
	 * when it wins is its takeover line (leader.c). */
	if (etcd == NULL)
		log_event(LOG_INFO, "recovered",
		    "leases=%llu expired=%llu onclose_released=%llu held=%llu "
		    "fence_hwm=%llu", (unsigned long long)rec.leases,
		    (unsigned long long)rec.expired,
		    (unsigned long long)rec.onclose,
		    (unsigned long long)service_held_count(&srv.svc),
		    (unsigned long long)rec.hwm);

	if (cfg.auth_file[0] != '\0')
		srv.svc.auth = &srv.auth;
	if (seams != NULL) {
		srv.svc.hooks = seams->hooks;
		srv.hooks = seams->server_hooks;
	}
	if (server_init(&srv, loop, &cfg) != 0) {
		fprintf(stderr, "lockd: cannot listen (see log)\n");
		goto close_service;
	}
	notify_ready(&cfg, &srv.svc, &rec, etcd != NULL);
	if (etcd != NULL) {
		char advertise[300];
		advertise_of(&cfg, &srv, advertise, sizeof(advertise));
		leader_start(&leader, &srv, store, etcd, &scfg, &clock,
		    cfg.cluster, advertise, cfg.leader_lease_ms);
	}
	if (seams != NULL && seams->started != NULL)
		seams->started(&srv, seams->ctx);
	server_run(&srv);
	service_commit(&srv.svc);
	status = 0;
close_service:
	service_close(&srv.svc);
close_store:
	store->ops->close(store);
close_etcd:
	etcd_close(etcd);
	/* etcd never served: its handles' close callbacks run now. */
	if (etcd != NULL && store == NULL)
		uv_run(loop, UV_RUN_NOWAIT);
	if (srv.tls != NULL)
		SSL_CTX_free(srv.tls);
	srv.tls = NULL;
free_auth:
	auth_rules_free(&srv.auth);
	/* After a failed server_init its handles are still open and this
	 * returns UV_EBUSY: lockd exits anyway. */
	uv_loop_close(loop);
	if (status == 0)
		log_event(LOG_INFO, "stop", "status=clean");
	return status;
}
