/*
 * lockctl.c - lockd from the shell: one command per lockd request, and
 * `lockctl run`, which holds a lock while a command runs, in the manner of
 * flock(1).
 *
 * Results go to stdout as key=value words a script can eval, errors to
 * stderr, and the exit code says what happened (the table below, also in
 * lockctl(1)).  lockctl uses liblockd's public API only.
 *
 * `run` is a single-threaded supervisor: one poll() loop waits on a
 * self-pipe fed by the signal handlers and, while a renewal is out, on the
 * lockd socket; the deadlines of renewing, and of killing the command when
 * the lease may be lost, are computed from the last renewal the server
 * confirmed, so both signals land before the lease could have been granted
 * to anyone else.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "client/lockd.h"

/* Exit codes; the command's own status otherwise. */
#define EXIT_BUSY 1             /* TRY or run -n: the lock is held */
#define EXIT_USAGE 64           /* bad command line (EX_USAGE) */
#define EXIT_UNREACHABLE 69     /* lockd cannot be reached (EX_UNAVAILABLE) */
#define EXIT_FAILED 70          /* lockd refused the request otherwise */
#define EXIT_WAIT_TIMEOUT 75    /* the wait for the lock ran out (EX_TEMPFAIL) */
#define EXIT_LOST 79            /* the lease was lost */

#define DEFAULT_TIMEOUT_MS 10000

/*
 * run's schedule, as shares of the lease L granted: renew every L/3; after
 * a failure retry every L/15; SIGTERM a grace of L/6 before SIGKILL, and
 * SIGKILL a margin of L/10 before the lease could end.
 */
#define RENEW_DIVISOR 3
#define RETRY_DIVISOR 15
#define GRACE_DIVISOR 6
#define MARGIN_DIVISOR 10

static const char usage_text[] =
"usage: lockctl [-H HOST] [-p PORT | -U SOCKET] [-t TIMEOUT] COMMAND ...\n"
"\n"
"  acquire [-w WAIT] [-l LEASE] NAME   wait for NAME (forever by default)\n"
"  try [-l LEASE] NAME                 take NAME if free, never wait\n"
"  renew [-l LEASE] NAME HANDLE        extend a lease\n"
"  release NAME HANDLE                 give a lease back\n"
"  status NAME                         show who holds NAME (diagnostics)\n"
"  ping                                check that lockd answers\n"
"  run [-n | -w WAIT] [-l LEASE] [-E CODE] NAME -- COMMAND [ARG...]\n"
"                                      hold NAME while COMMAND runs\n"
"\n"
"Durations: 1500 (ms), 1500ms, 30s, 5m, 1h.  TIMEOUT bounds connecting and\n"
"each reply (default 10s).  Exit codes: 0 done, 1 busy, 64 usage,\n"
"69 lockd unreachable, 70 refused, 75 wait timed out, 79 lease lost;\n"
"run exits with COMMAND's status (128+N when killed by signal N).\n";

/* A usage error: one line saying why, one saying where to look. */
static int
usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "lockctl: %s\n", why);
	fprintf(stderr, "usage: lockctl [-H HOST] [-p PORT | -U SOCKET] "
	    "[-t TIMEOUT] COMMAND ...  (lockctl -h for more)\n");
	return EXIT_USAGE;
}

/* Maps a failed call onto an exit code, after saying why on stderr. */
static int
fail(const char *what, const char *name, const lockd_context *c, int rc)
{
	fprintf(stderr, "lockctl: %s%s%s: %s\n", what, name ? " " : "",
	    name ? name : "", c->errstr[0] != '\0' ? c->errstr :
	    lockd_strerror(rc));
	switch (rc) {
	case LOCKD_ERR_IO:
	case LOCKD_ERR_EOF:
	case LOCKD_ERR_TIMEOUT:
	case LOCKD_ERR_SHUTDOWN:
		return EXIT_UNREACHABLE;
	case LOCKD_ERR_WAIT_TIMEOUT:
		return EXIT_WAIT_TIMEOUT;
	case LOCKD_ERR_CONFLICT:
		return EXIT_LOST;
	case LOCKD_ERR_INVALID:
		return EXIT_USAGE;
	default:
		return EXIT_FAILED;
	}
}

static bool
parse_duration(const char *s, int64_t *ms, const char *what)
{
	if (lockd_parse_duration(s, ms) == LOCKD_OK)
		return true;
	fprintf(stderr, "lockctl: bad %s '%s'\n", what, s);
	return false;
}

static bool
parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	/* s is an argv string, never NULL (the analyzer cannot see that). */
	v = strtol(s, &end, 10); /* NOLINT(clang-analyzer-core.NonNullParamChecker) */
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static lockd_context *
open_context(const lockd_options *options)
{
	lockd_context *c = lockd_connect(options);

	if (c == NULL) {
		fprintf(stderr, "lockctl: out of memory\n");
		return NULL;
	}
	if (c->err != 0) {
		fprintf(stderr, "lockctl: cannot reach lockd: %s\n",
		    c->errstr);
		lockd_free(c);
		return NULL;
	}
	return c;
}

static void
print_lease(const lockd_lease *lease)
{
	printf("fence=%" PRIu64 " handle=%s lease=%" PRId64 "\n", lease->fence,
	    lease->handle, lease->lease_ms);
}

/*
 * The simple commands: main() parses their words, connects, and calls one
 * of these, which sends one request and prints the result.
 */

struct words {
	int64_t lease_ms;
	int64_t wait_ms;
	const char *name;
	const char *handle;
};

/*
 * Parses "[-w WAIT] [-l LEASE] [NAME [HANDLE]]" as far as optstring allows;
 * nargs (0, 1 or 2) is how many words must follow the options.
 */
static bool
parse_words(int argc, char **argv, const char *optstring, int nargs,
    struct words *w)
{
	int ch;

	memset(w, 0, sizeof(*w));
	w->wait_ms = LOCKD_WAIT_FOREVER;
	optind = 0;
	while ((ch = getopt(argc, argv, optstring)) != -1) {
		switch (ch) {
		case 'l':
			if (!parse_duration(optarg, &w->lease_ms, "lease"))
				return false;
			break;
		case 'w':
			if (!parse_duration(optarg, &w->wait_ms, "wait"))
				return false;
			break;
		default:
			return false;
		}
	}
	if (argc - optind != nargs)
		return false;
	if (nargs >= 1)
		w->name = argv[optind];
	if (nargs >= 2)
		w->handle = argv[optind + 1];
	return true;
}

static int
cmd_acquire(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	rc = lockd_acquire(c, w->name, w->lease_ms, w->wait_ms,
	    LOCKD_ONCLOSE_KEEP, &lease);
	if (rc != LOCKD_OK)
		return fail("acquire", w->name, c, rc);
	print_lease(&lease);
	return 0;
}

static int
cmd_try(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	rc = lockd_try(c, w->name, w->lease_ms, LOCKD_ONCLOSE_KEEP, &lease);
	if (rc == LOCKD_HELD) {
		fprintf(stderr, "lockctl: %s is held\n", w->name);
		return EXIT_BUSY;
	}
	if (rc != LOCKD_OK)
		return fail("try", w->name, c, rc);
	print_lease(&lease);
	return 0;
}

static int
cmd_renew(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	if (lockd_lease_init(&lease, w->name, w->handle) != LOCKD_OK)
		return usage("renew: bad name or handle");
	if ((rc = lockd_renew(c, &lease, w->lease_ms)) != LOCKD_OK)
		return fail("renew", w->name, c, rc);
	printf("fence=%" PRIu64 " lease=%" PRId64 "\n", lease.fence,
	    lease.lease_ms);
	return 0;
}

static int
cmd_release(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	if (lockd_lease_init(&lease, w->name, w->handle) != LOCKD_OK)
		return usage("release: bad name or handle");
	rc = lockd_release(c, &lease);
	if (rc != LOCKD_OK && rc != LOCKD_NOTHELD)
		return fail("release", w->name, c, rc);
	puts(rc == LOCKD_OK ? "released" : "notheld");
	return 0;
}

static int
cmd_status(lockd_context *c, const struct words *w)
{
	lockd_lock_status st;
	int rc;

	if ((rc = lockd_status(c, w->name, &st)) != LOCKD_OK)
		return fail("status", w->name, c, rc);
	printf("held=%d fence=%" PRIu64 " ttl=%" PRId64 " queue=%" PRIu64
	    "\n", st.held, st.fence, st.ttl_ms, st.queue);
	return 0;
}

static int
cmd_ping(lockd_context *c, const struct words *w)
{
	int rc;

	(void)w;
	if ((rc = lockd_ping(c)) != LOCKD_OK)
		return fail("ping", NULL, c, rc);
	puts("pong");
	return 0;
}

/*
 * run.  The signal handlers only write the signal's number to a pipe; the
 * loop reads it back and acts, so nothing but write() runs in a handler.
 */

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
	return 0;
}

struct run {
	const char *name;
	lockd_context *ctx;
	lockd_lease lease;
	pid_t child;              /* also its process group */
	int status;
	bool exited;
	bool renewing;            /* a RENEW is out */
	int64_t next_renew;
	bool lost;
	int64_t kill_at;
	bool killed;
};

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

static void
signal_group(struct run *r, int sig)
{
	if (kill(-r->child, sig) != 0 && errno == ESRCH)
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
start_renewal(struct run *r)
{
	if (lockd_append_renew(r->ctx, &r->lease, r->lease.lease_ms) !=
	    LOCKD_OK || lockd_flush(r->ctx) != LOCKD_OK) {
		lose(r, r->ctx->errstr);
		return;
	}
	r->renewing = true;
}

static void
on_renewal_reply(struct run *r)
{
	lockd_reply reply;
	int64_t retry;
	int rc = lockd_poll_reply(r->ctx, &reply);

	if (rc == LOCKD_AGAIN)
		return;
	r->renewing = false;
	if (rc == LOCKD_OK) {
		r->lease.lease_ms = reply.lease.lease_ms;
		r->lease.deadline_ms = reply.lease.deadline_ms;
		r->next_renew = r->lease.deadline_ms - r->lease.lease_ms +
		    r->lease.lease_ms / RENEW_DIVISOR;
		return;
	}
	if (rc == LOCKD_ERR_UNAVAILABLE || rc == LOCKD_ERR_LIMIT) {
		/* Nothing changed on the server; the lease still runs. */
		retry = r->lease.lease_ms / RETRY_DIVISOR;
		r->next_renew = lockd_now_ms() + (retry > 10 ? retry : 10);
		return;
	}
	/*
	 * Anything else ends the lease: a refusal says so, and a broken
	 * connection released it (it was taken with onclose=release).
	 */
	lose(r, r->ctx->errstr);
}

static void
reap(struct run *r)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(r->child, &status, WNOHANG)) > 0 ||
	    (pid < 0 && errno == EINTR)) {
		if (pid == r->child) {
			r->status = status;
			r->exited = true;
			return;
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
			else if (!r->exited)
				signal_group(r, buf[i]);
		}
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

/* The loop: renew, forward signals, stop the command if the lease goes. */
static void
supervise(struct run *r)
{
	struct pollfd p[2];
	int64_t now;
	int timeout, nfds;

	r->next_renew = r->lease.deadline_ms - r->lease.lease_ms +
	    r->lease.lease_ms / RENEW_DIVISOR;
	for (;;) {
		now = lockd_now_ms();
		if (!r->lost && now >= term_deadline(r))
			lose(r, "no renewal succeeded in time");
		if (!r->lost && !r->renewing && now >= r->next_renew)
			start_renewal(r);
		/* The reply may be buffered already (flushing reads too). */
		if (!r->lost && r->renewing)
			on_renewal_reply(r);
		if (r->lost && !r->killed && now >= r->kill_at) {
			signal_group(r, SIGKILL);
			r->killed = true;
		}
		if (r->exited)
			return;

		timeout = -1;
		if (!r->lost) {
			timeout = until(term_deadline(r), now);
			if (!r->renewing && until(r->next_renew, now) < timeout)
				timeout = until(r->next_renew, now);
		} else if (!r->killed) {
			timeout = until(r->kill_at, now);
		}
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
		if (nfds == 2 && p[1].revents != 0 && !r->lost)
			on_renewal_reply(r);
	}
}

/* In the child: its own process group, the lease in its environment. */
static void
exec_command(const struct run *r, char **command, const sigset_t *mask)
{
	char fence[32];
	size_t i;

	setpgid(0, 0);
#ifdef __linux__
	/* lockd releases the lock when lockctl dies; so must the command. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	signal(SIGCHLD, SIG_DFL);
	for (i = 0; i < sizeof(forwarded_signals) / sizeof(int); i++)
		signal(forwarded_signals[i], SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
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

	if (install_handlers() != 0) {
		perror("lockctl: signals");
		return -1;
	}
	/* No handler may run in the child before it resets them. */
	sigfillset(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	r->child = fork();
	if (r->child == 0)
		exec_command(r, command, &old);
	if (r->child > 0)
		setpgid(r->child, r->child);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (r->child < 0) {
		perror("lockctl: fork");
		return -1;
	}
	return 0;
}

/* After the command: read what is due, then give the lock back. */
static void
release_lease(struct run *r)
{
	lockd_reply reply;
	int rc = LOCKD_OK;

	while (lockd_pending(r->ctx) > 0 && rc >= 0)
		rc = lockd_get_reply(r->ctx, &reply);
	if (rc >= 0)
		rc = lockd_release(r->ctx, &r->lease);
	if (rc < 0)
		fprintf(stderr, "lockctl: release %s: %s\n", r->name,
		    r->ctx->errstr);
}

/* run, once its command line is read and lockd is connected. */
static int
run_locked(struct run *r, bool no_wait, int64_t lease_ms, int64_t wait_ms,
    int busy_code, char **command)
{
	lockd_context *c = r->ctx;
	int rc;

	/* Bound to this connection: if lockctl dies, lockd frees the lock. */
	if (no_wait)
		rc = lockd_try(c, r->name, lease_ms, LOCKD_ONCLOSE_RELEASE,
		    &r->lease);
	else
		rc = lockd_acquire(c, r->name, lease_ms, wait_ms,
		    LOCKD_ONCLOSE_RELEASE, &r->lease);
	if (rc == LOCKD_HELD) {
		fprintf(stderr, "lockctl: %s is held\n", r->name);
		return busy_code;
	}
	if (rc != LOCKD_OK)
		return fail("acquire", r->name, c, rc);
	/*
	 * A grant after a long wait is dated from the ACQUIRE, so little may
	 * seem left of it: renew before the command starts, to date it anew.
	 */
	if (r->lease.deadline_ms - lockd_now_ms() <
	    r->lease.lease_ms * 2 / RENEW_DIVISOR &&
	    (rc = lockd_renew(c, &r->lease, r->lease.lease_ms)) != LOCKD_OK)
		return fail("renew", r->name, c, rc);

	if (start_command(r, command) != 0) {
		lockd_release(c, &r->lease);
		return EXIT_FAILED;
	}
	supervise(r);
	if (r->lost) {
		/* Nothing of the command may outlive the lease. */
		signal_group(r, SIGKILL);
		return EXIT_LOST;
	}
	release_lease(r);
	if (WIFSIGNALED(r->status))
		return 128 + WTERMSIG(r->status);
	return WEXITSTATUS(r->status);
}

static int
cmd_run(const lockd_options *options, int argc, char **argv)
{
	struct run r;
	lockd_context *c;
	int64_t lease_ms = 0, wait_ms = LOCKD_WAIT_FOREVER;
	long busy_code = EXIT_BUSY;
	bool no_wait = false, has_wait = false;
	char **command;
	int ch, rc;

	optind = 0;
	while ((ch = getopt(argc, argv, "+nw:l:E:")) != -1) {
		switch (ch) {
		case 'n':
			no_wait = true;
			break;
		case 'w':
			has_wait = true;
			if (!parse_duration(optarg, &wait_ms, "wait"))
				return EXIT_USAGE;
			break;
		case 'l':
			if (!parse_duration(optarg, &lease_ms, "lease"))
				return EXIT_USAGE;
			break;
		case 'E':
			if (!parse_int(optarg, 0, 255, &busy_code))
				return usage("-E takes an exit code 0-255");
			break;
		default:
			return usage(NULL);
		}
	}
	if (no_wait && has_wait)
		return usage("run: -n and -w exclude each other");
	if (argc - optind < 2)
		return usage("run: NAME and COMMAND needed");
	memset(&r, 0, sizeof(r));
	r.name = argv[optind++];
	if (strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc)
		return usage("run: COMMAND needed");
	command = argv + optind;
	if ((c = open_context(options)) == NULL)
		return EXIT_UNREACHABLE;
	r.ctx = c;
	rc = run_locked(&r, no_wait, lease_ms, wait_ms, (int)busy_code,
	    command);
	lockd_free(c);
	return rc;
}

struct command {
	const char *name;
	const char *optstring;
	int nargs;
	const char *synopsis;
	int (*run)(lockd_context *c, const struct words *w);
};

static const struct command commands[] = {
	{ "acquire", "+w:l:", 1, "acquire [-w WAIT] [-l LEASE] NAME",
	  cmd_acquire },
	{ "try", "+l:", 1, "try [-l LEASE] NAME", cmd_try },
	{ "renew", "+l:", 2, "renew [-l LEASE] NAME HANDLE", cmd_renew },
	{ "release", "+", 2, "release NAME HANDLE", cmd_release },
	{ "status", "+", 1, "status NAME", cmd_status },
	{ "ping", "+", 0, "ping", cmd_ping },
};

int
main(int argc, char **argv)
{
	lockd_options options;
	const struct command *cmd = NULL;
	struct words w;
	lockd_context *c;
	int64_t timeout = DEFAULT_TIMEOUT_MS;
	long port;
	size_t i;
	int ch, rc;

	memset(&options, 0, sizeof(options));
	while ((ch = getopt(argc, argv, "+H:p:U:t:h")) != -1) {
		switch (ch) {
		case 'H':
			options.host = optarg;
			break;
		case 'p':
			if (!parse_int(optarg, 1, 65535, &port))
				return usage("-p takes a port 1-65535");
			options.port = (int)port;
			break;
		case 'U':
			options.unix_path = optarg;
			break;
		case 't':
			if (!parse_duration(optarg, &timeout, "timeout"))
				return EXIT_USAGE;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return usage(NULL);
		}
	}
	if (options.unix_path != NULL &&
	    (options.host != NULL || options.port != 0))
		return usage("-U excludes -H and -p");
	if (optind >= argc)
		return usage("no command given");
	options.connect_timeout_ms = timeout;
	options.command_timeout_ms = timeout;
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "run") == 0)
		return cmd_run(&options, argc, argv);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			cmd = &commands[i];
	if (cmd == NULL) {
		fprintf(stderr, "lockctl: unknown command '%s'\n", argv[0]);
		return usage(NULL);
	}
	if (!parse_words(argc, argv, cmd->optstring, cmd->nargs, &w)) {
		fprintf(stderr, "lockctl: usage: lockctl [...] %s\n",
		    cmd->synopsis);
		return EXIT_USAGE;
	}
	if ((c = open_context(&options)) == NULL)
		return EXIT_UNREACHABLE;
	rc = cmd->run(c, &w);
	lockd_free(c);
	if (fflush(stdout) != 0 && rc == 0)
		rc = EXIT_FAILED;
	return rc;
}
