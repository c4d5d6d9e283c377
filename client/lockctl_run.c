/*
 * lockctl_run.c - `lockctl run`'s supervisor: the command runs in a
 * process group of its own while the lease is renewed, and is stopped
 * before the lease could pass to anyone else.
 *
 * A single-threaded loop: one poll() waits on a self-pipe fed by the
 * signal handlers and, while a renewal is out, on the lockd socket.  The
 * lease is not bound to a connection (onclose=keep), so that a restart of
 * lockd, which closes every connection, leaves it held: a broken
 * connection is replaced and the renewal retried on the new one.  The
 * deadlines of stopping the command when the lease could be lost are
 * computed from the last renewal the server confirmed, so both signals
 * land before the lease could have been granted to anyone else.  A
 * watchdog process, forked before the command starts, stops the command's
 * process group if lockctl itself dies (SIGTERM, then SIGKILL by the time
 * lockctl published in a shared page), and only then releases the lease.
 * Everything here uses liblockd's public API only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "client/lockctl.h"
#include "client/lockd.h"
#include "client/schedule.h"

/*
 * run's schedule, as shares of the lease L granted: renew every L/3 and
 * after a failure retry as every client does (client/schedule.h), on a new
 * connection when the old one broke or a reply is L/6 late; SIGTERM a
 * grace of L/6 before SIGKILL, and SIGKILL a margin of L/10 before the
 * lease could end (the margin at which every client counts it lost).
 */
/* Cluster mode: NOTLEADERs in a row followed without waiting. */
#define FOLLOW_AT_ONCE 3
#define STALL_DIVISOR 6
#define GRACE_DIVISOR 6
#define MARGIN_DIVISOR LOCKD__LOST_DIVISOR
/* What the command leaves behind in its group gets this long after TERM. */
#define LEFTOVER_GRACE_MS 1000
/* How often the group is looked at while something of it is left. */
#define GROUP_POLL_MS 10

static int signal_pipe[2] = { -1, -1 };
static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void
on_signal(int sig)
{
	int saved = errno;
	unsigned char byte = (unsigned char)sig;

	if (write(signal_pipe[1], &byte, 1) < 0) {
		/* A full pipe already holds enough wake-ups. */
	}
	errno = saved;
}

static int
install_handlers(void)
{
	struct sigaction sa;
	size_t i;

	if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		return -1;
	for (i = 0; i < sizeof(forwarded_signals) / sizeof(int); i++)
		if (sigaction(forwarded_signals[i], &sa, NULL) != 0)
			return -1;
	/* A watchdog that was killed must not take lockctl with it. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return -1;
	return 0;
}

static int64_t
grace_of(const struct run *r)
{
	return r->lease.lease_ms / GRACE_DIVISOR;
}

static int64_t
margin_of(const struct run *r)
{
	return r->lease.lease_ms / MARGIN_DIVISOR;
}

/* SIGTERM must go out by then unless a renewal succeeds first. */
static int64_t
term_deadline(const struct run *r)
{
	return r->lease.deadline_ms - grace_of(r) - margin_of(r);
}

/* The pause before the next try of a renewal (or release) that failed. */
static int64_t
retry_interval(struct run *r)
{
	return lockd__retry_after(r->lease.lease_ms, &r->backoff);
}

/*
 * True while a process of group pg is alive.  Members that nobody has
 * reaped yet are zombies, dead for our purpose: lockctl's orphans go to
 * whatever reaps them (init, a subreaper), and that may be slow or never.
 */
static bool
group_alive(pid_t pg)
{
#ifdef __linux__
	char path[64], stat[512], *paren, *end, state;
	struct dirent *e;
	DIR *d;
	FILE *f;
	long pgrp;
	bool alive = false;
	size_t n;
#endif

	if (kill(-pg, 0) != 0 && errno == ESRCH)
		return false;
#ifdef __linux__
	if ((d = opendir("/proc")) == NULL)
		return true;
	while (!alive && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/stat", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		n = fread(stat, 1, sizeof(stat) - 1, f);
		fclose(f);
		stat[n] = '\0';
		/* "pid (comm) state ppid pgrp ...": comm may hold anything. */
		if ((paren = strrchr(stat, ')')) == NULL || paren[1] != ' ' ||
		    paren[2] == '\0')
			continue;
		state = paren[2];
		errno = 0;
		(void)strtol(paren + 3, &end, 10);
		pgrp = strtol(end, &end, 10);
		if (errno == 0 && pgrp == (long)pg && state != 'Z' &&
		    state != 'X')
			alive = true;
	}
	closedir(d);
	return alive;
#else
	return true;
#endif
}

static void
signal_group(struct run *r, int sig)
{
	if (kill(-r->child, sig) != 0 && errno == ESRCH && !r->exited)
		kill(r->child, sig);
}

/* From now on the command must stop: SIGTERM now, SIGKILL in time. */
static void
lose(struct run *r, const char *why)
{
	int64_t now = lockd_now_ms(), last = r->lease.deadline_ms -
	    margin_of(r);

	r->lost = true;
	r->kill_at = now + grace_of(r) < last ? now + grace_of(r) : last;
	fprintf(stderr, "lockctl: lease on %s lost (%s); stopping the "
	    "command\n", r->name, why);
	signal_group(r, SIGTERM);
}

static void
drop_connection(struct run *r)
{
	lockd_free(r->ctx);
	r->ctx = NULL;
	r->renewing = false;
}

/*
 * A connection for the next request, made when none is up; connecting
 * and each reply are bounded by deadline as well as by -t.
 */
static bool
connect_until(struct run *r, int64_t deadline)
{
	lockd_options o = r->options;
	int64_t left = deadline - lockd_now_ms();

	if (left < 1)
		left = 1;
	if (r->ctx != NULL && (r->reconnect ||
	    lockd_error_is_fatal(r->ctx->err))) {
		/* The same context: it goes to the leader a NOTLEADER
		 * named, else on to the next endpoint. */
		r->reconnect = false;
		lockd_set_connect_timeout(r->ctx, o.connect_timeout_ms <= 0 ||
		    o.connect_timeout_ms > left ? left : o.connect_timeout_ms);
		if (lockd_reconnect(r->ctx) != LOCKD_OK) {
			snprintf(r->why, sizeof(r->why), "%s", r->ctx->errstr);
			return false;
		}
	}
	if (r->ctx == NULL) {
		if (o.connect_timeout_ms <= 0 || o.connect_timeout_ms > left)
			o.connect_timeout_ms = left;
		if ((r->ctx = lockd_connect(&o)) == NULL) {
			snprintf(r->why, sizeof(r->why), "out of memory");
			return false;
		}
		if (r->ctx->err != 0) {
			snprintf(r->why, sizeof(r->why), "%s", r->ctx->errstr);
			drop_connection(r);
			return false;
		}
	}
	if (r->options.command_timeout_ms > 0 &&
	    r->options.command_timeout_ms < left)
		left = r->options.command_timeout_ms;
	lockd_set_command_timeout(r->ctx, left);
	return true;
}

/*
 * A renewal failed and the lease still runs.  A broken connection is
 * replaced at once (lockd may be back already: a restart; or, in a
 * cluster, the next node knows the new leader); otherwise the next attempt
 * waits a retry interval.
 */
static void
retry_renewal(struct run *r, bool broken)
{
	snprintf(r->why, sizeof(r->why), "%s",
	    r->ctx != NULL ? r->ctx->errstr : r->why);
	if (broken && r->ctx != NULL) {
		r->renewing = false;
		r->reconnect = true;
		r->next_renew = lockd_now_ms();
		return;
	}
	r->renewing = false;
	r->next_renew = lockd_now_ms() + retry_interval(r);
}

static void
start_renewal(struct run *r)
{
	if (!connect_until(r, term_deadline(r))) {
		r->next_renew = lockd_now_ms() + retry_interval(r);
		return;
	}
	if (lockd_append_renew(r->ctx, &r->lease, r->lease.lease_ms) !=
	    LOCKD_OK || lockd_flush(r->ctx) != LOCKD_OK) {
		retry_renewal(r, true);
		return;
	}
	r->renewing = true;
	r->renew_sent = lockd_now_ms();
}

static void
on_renewal_reply(struct run *r)
{
	lockd_reply reply;
	int rc = lockd_poll_reply(r->ctx, &reply);

	if (rc == LOCKD_AGAIN)
		return;
	r->renewing = false;
	if (rc == LOCKD_OK) {
		r->lease.lease_ms = reply.lease.lease_ms;
		r->lease.deadline_ms = reply.lease.deadline_ms;
		r->next_renew = lockd__renew_at(r->lease.deadline_ms,
		    r->lease.lease_ms);
		r->why[0] = '\0';
		r->follows = 0;
		r->backoff = 0;
		return;
	}
	/*
	 * Nothing changed on the server (UNAVAILABLE, LIMIT), or this
	 * connection is done (it broke, or lockd is stopping): the lease is
	 * not bound to it and still runs, so renew it again, over a new
	 * connection if need be.  Anything else is a refusal: CONFLICT says
	 * the lease is not ours any more.
	 */
	if (rc == LOCKD_ERR_NOTLEADER) {
		/*
		 * Cluster mode: this node does not lead now.  The context
		 * knows the leader it named, or the next endpoint: go there
		 * at once the first times, then at the retry interval (the
		 * cluster may have no leader for a while).
		 */
		retry_renewal(r, false);
		r->reconnect = true;
		if (++r->follows <= FOLLOW_AT_ONCE)
			r->next_renew = lockd_now_ms();
	} else if (rc == LOCKD_ERR_UNAVAILABLE || rc == LOCKD_ERR_LIMIT)
		retry_renewal(r, false);
	else if (lockd_error_is_fatal(rc) || rc == LOCKD_ERR_SHUTDOWN)
		retry_renewal(r, true);
	else
		lose(r, r->ctx->errstr);
}

static void
reap(struct run *r)
{
	pid_t pid;
	int status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		if (pid == r->child) {
			r->status = status;
			r->exited = true;
		} else if (pid == r->watchdog) {
			r->watchdog = 0;
		}
	}
}

static void
drain_signals(struct run *r)
{
	unsigned char buf[64];
	ssize_t n, i;

	while ((n = read(signal_pipe[0], buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i++) {
			if (buf[i] == SIGCHLD)
				reap(r);
			else if (!r->group_gone)
				signal_group(r, buf[i]);
		}
	}
}

/*
 * Once the command has ended, nothing it started may run on unprotected:
 * what is left in its group gets SIGTERM, then SIGKILL after a short grace,
 * while the lease is still renewed.
 */
static void
sweep_group(struct run *r, int64_t now)
{
	int64_t grace = grace_of(r) < LEFTOVER_GRACE_MS ? grace_of(r) :
	    LEFTOVER_GRACE_MS;

	if (!group_alive(r->child)) {
		r->group_gone = true;
		return;
	}
	if (r->leftover_kill_at == 0) {
		signal_group(r, SIGCONT);
		signal_group(r, SIGTERM);
		r->leftover_kill_at = now + grace;
	} else if (!r->leftover_killed && now >= r->leftover_kill_at) {
		signal_group(r, SIGKILL);
		r->leftover_killed = true;
	}
}

/* Milliseconds from now until at, for poll(), at least 0. */
static int
until(int64_t at, int64_t now)
{
	if (at <= now)
		return 0;
	return at - now > 60000 ? 60000 : (int)(at - now);
}

static int
sooner(int timeout, int64_t at, int64_t now)
{
	int t = until(at, now);

	return timeout < 0 || t < timeout ? t : timeout;
}

/*
 * Tells the watchdog how long the group may take to stop should lockctl
 * die now: what lockctl's own rule allows, SIGKILL a margin before the
 * lease could end (or at the SIGKILL already due once the lease is lost).
 * Published after every turn of the loop; a value one turn old is never
 * later than the rule, since the deadline only moves on with a renewal.
 */
static void
tell_watchdog(struct run *r)
{
	if (r->kill_by != NULL)
		atomic_store(r->kill_by, r->lost ? r->kill_at :
		    r->lease.deadline_ms - margin_of(r));
}

/* The loop: renew, forward signals, stop the command if the lease goes. */
static void
supervise(struct run *r)
{
	struct pollfd p[2];
	int64_t now;
	int timeout, nfds;

	r->next_renew = lockd__renew_at(r->lease.deadline_ms,
	    r->lease.lease_ms);
	for (;;) {
		tell_watchdog(r);
		now = lockd_now_ms();
		if (!r->lost && now >= term_deadline(r)) {
			char why[LOCKD_ERRSTR_SIZE + 64];

			snprintf(why, sizeof(why), "no renewal succeeded in "
			    "time%s%.*s", r->why[0] != '\0' ? ": " : "",
			    LOCKD_ERRSTR_SIZE, r->why);
			lose(r, why);
		}
		if (!r->lost && r->renewing &&
		    now - r->renew_sent >= r->lease.lease_ms / STALL_DIVISOR) {
			snprintf(r->ctx->errstr, sizeof(r->ctx->errstr),
			    "no reply to a renewal");
			retry_renewal(r, true);
		}
		if (!r->lost && !r->renewing && now >= r->next_renew)
			start_renewal(r);
		/* The reply may be buffered already (flushing reads too). */
		if (!r->lost && r->renewing)
			on_renewal_reply(r);
		if (r->lost && !r->killed && now >= r->kill_at) {
			signal_group(r, SIGKILL);
			r->killed = true;
		}
		if (r->exited && !r->group_gone)
			sweep_group(r, now);
		if (r->group_gone)
			return;
		/* A group that SIGKILL cannot end outlives the lease anyway. */
		if (r->exited && r->lost && r->killed &&
		    now >= r->lease.deadline_ms)
			return;

		timeout = -1;
		if (!r->lost) {
			timeout = sooner(timeout, term_deadline(r), now);
			if (r->renewing)
				timeout = sooner(timeout, r->renew_sent +
				    r->lease.lease_ms / STALL_DIVISOR, now);
			else
				timeout = sooner(timeout, r->next_renew, now);
		} else if (!r->killed) {
			timeout = sooner(timeout, r->kill_at, now);
		}
		if (r->exited)
			timeout = sooner(timeout, now + GROUP_POLL_MS, now);
		p[0].fd = signal_pipe[0];
		p[0].events = POLLIN;
		nfds = 1;
		if (r->renewing && !r->lost) {
			p[1].fd = r->ctx->fd;
			p[1].events = POLLIN;
			nfds = 2;
		}
		if (poll(p, (nfds_t)nfds, timeout) < 0 && errno != EINTR) {
			/* Cannot wait: lose safely rather than spin. */
			if (!r->lost)
				lose(r, strerror(errno));
			continue;
		}
		if (p[0].revents != 0)
			drain_signals(r);
		if (nfds == 2 && p[1].revents != 0 && !r->lost && r->renewing)
			on_renewal_reply(r);
	}
}

/*
 * The watchdog, forked once the command's group exists: it waits on a pipe
 * that only lockctl can write.  A byte means lockctl saw to the group
 * itself; end-of-file means lockctl died, and then the group is stopped as
 * lockctl stops it when the lease is lost: SIGTERM, so that the job's
 * traps run, and SIGKILL after a grace of a sixth of the lease or at the
 * time lockctl last published, whichever comes first (at once when that
 * has passed).  Once nothing of the group is left the lease is released
 * (the lease is not bound to lockctl's connection, so until then nobody
 * else can have it).
 */
static void
watchdog_main(struct run *r, int fd)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
	    SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	sigset_t none;
	lockd_context *c;
	int64_t now, give_up, kill_at;
	size_t i;
	ssize_t n;
	char byte;
	int null_fd;

	for (i = 0; i < sizeof(ignored) / sizeof(int); i++)
		signal(ignored[i], SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Hold nothing a reader of lockctl's output would wait on. */
	if ((null_fd = open("/dev/null", O_RDWR)) >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
		dup2(null_fd, STDERR_FILENO);
		if (null_fd > STDERR_FILENO)
			close(null_fd);
	}
	close(signal_pipe[0]);
	close(signal_pipe[1]);
	if (r->ctx != NULL && r->ctx->fd >= 0)
		close(r->ctx->fd);

	do
		n = read(fd, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		_exit(0);
	/* lockctl's last renewal was before now, so the lease ends by then. */
	now = lockd_now_ms();
	give_up = now + r->lease.lease_ms;
	kill_at = r->kill_by != NULL ? atomic_load(r->kill_by) : now;
	if (kill_at > now + grace_of(r))
		kill_at = now + grace_of(r);
	if (kill_at > now) {
		kill(-r->child, SIGCONT);
		kill(-r->child, SIGTERM);
		while (group_alive(r->child) && lockd_now_ms() < kill_at)
			poll(NULL, 0, GROUP_POLL_MS);
	}
	do {
		kill(-r->child, SIGKILL);
		poll(NULL, 0, GROUP_POLL_MS);
	} while (group_alive(r->child) && lockd_now_ms() < give_up);
	if (group_alive(r->child))
		_exit(1);
	c = lockd_connect(&r->options);
	if (c != NULL && c->err == 0)
		lockd_release(c, &r->lease);
	_exit(0);
}

/*
 * In the child: its own process group, the lease in its environment, and
 * exec only once lockctl says go (by then the watchdog watches the group).
 */
static void
exec_command(const struct run *r, char **command, const sigset_t *mask,
    int go)
{
	char fence[32], byte;
	size_t i;
	ssize_t n;

	setpgid(0, 0);
#ifdef __linux__
	/* Should lockctl die before the watchdog runs, die too. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);   /* an ignored signal stays so over exec */
	for (i = 0; i < sizeof(forwarded_signals) / sizeof(int); i++)
		signal(forwarded_signals[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	do
		n = read(go, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(126);
	close(go);
#ifdef __linux__
	/* From here the watchdog sees to it, with a SIGTERM first. */
	prctl(PR_SET_PDEATHSIG, 0);
#endif
	snprintf(fence, sizeof(fence), "%" PRIu64, r->lease.fence);
	if (setenv("LOCKD_NAME", r->lease.name, 1) != 0 ||
	    setenv("LOCKD_FENCE", fence, 1) != 0 ||
	    setenv("LOCKD_HANDLE", r->lease.handle, 1) != 0) {
		perror("lockctl: setenv");
		_exit(126);
	}
	execvp(command[0], command);
	fprintf(stderr, "lockctl: %s: %s\n", command[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int
start_command(struct run *r, char **command)
{
	sigset_t block, old;
	int go[2], watch[2];
	char byte = 'g';
	void *shared;

	if (install_handlers() != 0 || pipe2(go, O_CLOEXEC) != 0) {
		perror("lockctl: signals");
		return -1;
	}
	/* No handler may run in a child before it resets them. */
	sigfillset(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	r->child = fork();
	if (r->child == 0) {
		close(go[1]);
		exec_command(r, command, &old, go[0]);
	}
	close(go[0]);
	if (r->child < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(go[1]);
		perror("lockctl: fork");
		return -1;
	}
	setpgid(r->child, r->child);
	r->watchdog_fd = -1;
	/* Without the page the watchdog cannot know the time left: it
	 * kills at once. */
	shared = mmap(NULL, sizeof(*r->kill_by), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared != MAP_FAILED) {
		r->kill_by = shared;
		tell_watchdog(r);
	}
	if (pipe2(watch, O_CLOEXEC) == 0) {
		r->watchdog = fork();
		if (r->watchdog == 0) {
			close(watch[1]);
			close(go[1]);
			watchdog_main(r, watch[0]);
		}
		close(watch[0]);
		if (r->watchdog > 0)
			r->watchdog_fd = watch[1];
		else
			close(watch[1]);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r->watchdog_fd < 0) {
		/* Unguarded, the command never starts: it reads end-of-file. */
		perror("lockctl: watchdog");
		close(go[1]);
		waitpid(r->child, NULL, 0);
		return -1;
	}
	if (write(go[1], &byte, 1) != 1) {
		/* The child died already; waitpid tells how. */
	}
	close(go[1]);
	return 0;
}

/*
 * The command's group is gone, or lockctl gives up on it: tell the
 * watchdog, which kills the group unless told it is gone.
 */
static void
stop_watchdog(struct run *r)
{
	char byte = 'd';

	if (r->watchdog_fd >= 0) {
		if (r->group_gone && write(r->watchdog_fd, &byte, 1) != 1) {
			/* Then it sees end-of-file and kills an empty group. */
		}
		close(r->watchdog_fd);
		r->watchdog_fd = -1;
	}
	if (r->watchdog > 0 && r->group_gone)
		waitpid(r->watchdog, NULL, 0);
}

/*
 * After the command: give the lock back, over a new connection if the old
 * one broke (lockd restarted), until -t runs out; should that fail, the
 * lease simply runs out.
 */
static void
release_lease(struct run *r)
{
	int64_t give_up = lockd_now_ms() + (r->options.command_timeout_ms > 0 ?
	    r->options.command_timeout_ms : DEFAULT_TIMEOUT_MS);
	lockd_reply reply;
	int64_t pause;
	int rc = LOCKD_ERR_IO;

	for (;;) {
		if (connect_until(r, give_up)) {
			rc = LOCKD_OK;
			while (lockd_pending(r->ctx) > 0 &&
			    !lockd_error_is_fatal(rc))
				rc = lockd_get_reply(r->ctx, &reply);
			if (!lockd_error_is_fatal(rc))
				rc = lockd_release(r->ctx, &r->lease);
			snprintf(r->why, sizeof(r->why), "%s", r->ctx->errstr);
		}
		if (rc == LOCKD_OK || rc == LOCKD_NOTHELD)
			return;
		if (r->ctx != NULL && (lockd_error_is_fatal(rc) ||
		    rc == LOCKD_ERR_SHUTDOWN))
			drop_connection(r);
		pause = retry_interval(r);
		if (!(r->ctx == NULL || rc == LOCKD_ERR_UNAVAILABLE) ||
		    lockd_now_ms() + pause >= give_up)
			break;
		poll(NULL, 0, (int)pause);
	}
	fprintf(stderr, "lockctl: release %s: %s; it is held until its lease "
	    "runs out\n", r->name, r->why);
}

int
lockctl_run_command(struct run *r, char **command)
{
	if (start_command(r, command) != 0) {
		lockd_release(r->ctx, &r->lease);
		return EXIT_FAILED;
	}
	supervise(r);
	stop_watchdog(r);
	if (r->lost)
		return EXIT_LOST;
	release_lease(r);
	if (WIFSIGNALED(r->status))
		return 128 + WTERMSIG(r->status);
	return WEXITSTATUS(r->status);
}
