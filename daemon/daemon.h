/*
 * daemon.h - the daemon as a function, so that test programs can run the
 * real lockd with fault-injection seams: function pointers called at exact
 * points (before a commit, after it but before the replies, between the
 * replies of two connections in one pass), and the LMDB flags of the
 * power-loss guard.  The lockd binary passes no seams.
 */
#ifndef LOCKD_DAEMON_H
#define LOCKD_DAEMON_H

#include "daemon/server.h"
#include "daemon/service.h"

struct daemon_seams {
	struct service_hooks hooks;  /* commit fault points (service.h) */
	struct server_hooks server_hooks;  /* reply-writing point (server.h) */
	unsigned lmdb_flags;         /* extra mdb_env_open flags: guards only */
	bool journal_nosync;         /* no fdatasync of the journal: guards */
	bool map_unchecked;          /* no --max-held/--map-size check, so
	                              * that a test can fill the map */
	/* Opens the store instead of lockd's (LMDB behind the journal): the
	 * MDB_NOMETASYNC experiment of lockd-faulty only. */
	struct store *(*open_store)(const char *dir, size_t map_size,
	    char *err, size_t err_len);
	/* Called once lockd listens, before the loop runs. */
	void (*started)(struct server *srv, void *ctx);
	void *ctx;
};

/* Runs lockd with the command line of the spec; returns its exit status. */
int daemon_run(int argc, char **argv, const struct daemon_seams *seams);

#endif
