/*
 * lockctl.h - what lockctl's two files share: the exit codes, and `lockctl
 * run`'s supervisor (lockctl_run.c), which lockctl.c hands a held lease
 * and a command.  Internal to lockctl, never installed.
 */
#ifndef LOCKD_CLIENT_LOCKCTL_H
#define LOCKD_CLIENT_LOCKCTL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/lockd.h"

/* Exit codes; the command's own status otherwise. */
#define EXIT_BUSY 1             /* TRY, or run -n / -w (flock's code) */
#define EXIT_USAGE 64           /* bad command line (EX_USAGE) */
#define EXIT_UNREACHABLE 69     /* lockd cannot be reached (EX_UNAVAILABLE) */
#define EXIT_FAILED 70          /* lockd refused the request otherwise */
#define EXIT_WAIT_TIMEOUT 75    /* the wait for the lock ran out (EX_TEMPFAIL) */
#define EXIT_LOST 79            /* the lease was lost */

#define DEFAULT_TIMEOUT_MS 10000

/* One `lockctl run`: the lease held, the command and what became of it. */
struct run {
	const char *name;
	lockd_options options;    /* for every connection made */
	lockd_context *ctx;       /* NULL while none is up */
	lockd_lease lease;
	pid_t child;              /* the command; its pid is its group's */
	pid_t watchdog;           /* 0 once reaped */
	int watchdog_fd;          /* our end of its pipe; -1 once closed */
	/* Shared with the watchdog: by when the group must be dead should
	 * lockctl die now (lockd_now_ms()); NULL: at once. */
	_Atomic int64_t *kill_by;
	int status;
	bool exited;              /* the command itself ended */
	bool group_gone;          /* and nothing is left in its group */
	int64_t leftover_kill_at; /* 0 until what is left got SIGTERM */
	bool leftover_killed;
	bool renewing;            /* a RENEW is out */
	bool reconnect;           /* ctx broke, stalled or met a follower */
	int follows;              /* NOTLEADERs since the last renewal */
	int64_t backoff;          /* retry_interval's; 0 after a renewal */
	int64_t renew_sent;
	int64_t next_renew;
	bool lost;
	int64_t kill_at;
	bool killed;
	char why[LOCKD_ERRSTR_SIZE];  /* why the last renewal failed */
};

/*
 * Runs command (argv, NULL-terminated) in a process group of its own while
 * r's lease, held on r->ctx, is renewed; stops it before the lease could
 * pass to anyone else should it be lost (or lockctl die: a watchdog), and
 * releases the lease when it has ended.  r->name, options, ctx and lease
 * are set, watchdog_fd is -1 and the rest zero.  Returns lockctl's exit
 * code: the command's own status, 128 + its signal, EXIT_LOST or
 * EXIT_FAILED (it could not be started; the lease was released).
 */
int lockctl_run_command(struct run *r, char **command);

#endif
