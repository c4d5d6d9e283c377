/*
 * test_lockctl.c - the lockctl program against a real lockd: its output
 * and exit codes, and `lockctl run`: the environment it gives the command,
 * renewing across several lease lengths, killing the command before the
 * lease can end when lockd stops answering or refuses a renewal, forwarding
 * signals, propagating the command's status, and freeing the lock when
 * lockctl itself dies.
 *
 * Commands run through /bin/sh; each test uses its own lock names and a
 * temp dir for the files the commands leave behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "tests/lib/harness.h"

#define RUN_TIMEOUT_MS 10000
#define OUT_SIZE 4096

/* lockctl's documented exit codes. */
#define EXIT_BUSY 1
#define EXIT_USAGE 64
#define EXIT_UNREACHABLE 69
#define EXIT_WAIT_TIMEOUT 75
#define EXIT_LOST 79

static char work[HARNESS_PATH_MAX];   /* this run's files */

static int
setup(void **state)
{
	snprintf(work, sizeof(work), "%s", harness_tempdir());
	return harness_shared_setup(state);
}

static int
teardown(void **state)
{
	harness_remove_tree(work);
	return harness_shared_teardown(state);
}

/* A path in the work dir; rotating buffers, so a few may live at once. */
static const char *
path_of(const char *name)
{
	static char paths[8][HARNESS_PATH_MAX + 64];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", work, name);
	return p;
}

/*
 * Builds "lockctl -p PORT first args..." (NULL-ended) into argv, which must
 * hold 32 pointers.
 */
static void
lockctl_argv(const char **argv, const char *port, const char *first,
    va_list ap)
{
	size_t n = 0;
	const char *arg;

	argv[n++] = harness_program("lockctl");
	argv[n++] = "-p";
	argv[n++] = port;
	for (arg = first; arg != NULL && n < 31; arg = va_arg(ap, const char *))
		argv[n++] = arg;
	argv[n] = NULL;
}

static char out[OUT_SIZE], err[OUT_SIZE];

/* Runs lockctl with the given words; stdout and stderr land in out, err. */
static int
lockctl(const char *first, ...)
{
	const char *argv[32];
	va_list ap;

	va_start(ap, first);
	lockctl_argv(argv, harness_shared_port, first, ap);
	va_end(ap);
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err));
}

/* lockctl against another lockd, listening on port. */
static int
lockctl_at(const char *port, const char *first, ...)
{
	const char *argv[32];
	va_list ap;

	va_start(ap, first);
	lockctl_argv(argv, port, first, ap);
	va_end(ap);
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err));
}

/* Starts lockctl in the background; its output goes to files. */
static pid_t
spawn_lockctl(const char *out_path, const char *err_path, const char *first,
    ...)
{
	const char *argv[32];
	va_list ap;

	va_start(ap, first);
	lockctl_argv(argv, harness_shared_port, first, ap);
	va_end(ap);
	return harness_spawn((char *const *)argv, out_path, err_path);
}

static pid_t
spawn_lockctl_at(const char *port, const char *err_path, const char *first,
    ...)
{
	const char *argv[32];
	va_list ap;

	va_start(ap, first);
	lockctl_argv(argv, port, first, ap);
	va_end(ap);
	return harness_spawn((char *const *)argv, NULL, err_path);
}

struct grant {
	uint64_t fence;
	char handle[64];
	int64_t lease;
};

static void
parse_grant(const char *text, struct grant *g)
{
	char extra;

	memset(g, 0, sizeof(g[0]));
	if (sscanf(text, "fence=%" SCNu64 " handle=%63s lease=%" SCNd64 "%c",
	    &g->fence, g->handle, &g->lease, &extra) != 4 || extra != '\n')
		fail_msg("not a grant: '%s'", text);
}

static bool
held_at(const char *port, const char *name, uint64_t *fence, int64_t *ttl)
{
	unsigned long long f;
	long long t;
	int h;

	assert_int_equal(lockctl_at(port, "status", name, NULL), 0);
	if (sscanf(out, "held=%d fence=%llu ttl=%lld", &h, &f, &t) != 3)
		fail_msg("not a status: '%s'", out);
	if (fence != NULL)
		*fence = f;
	if (ttl != NULL)
		*ttl = t;
	return h == 1;
}

static bool
held(const char *name, uint64_t *fence)
{
	return held_at(harness_shared_port, name, fence, NULL);
}

static bool
wait_until_free(const char *name, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	do {
		if (!held(name, NULL))
			return true;
		harness_sleep_ms(20);
	} while (harness_now_ms() < deadline);
	return false;
}

/* The simple commands. */

static void
test_lockctl_ping_prints_pong(void **state)
{
	char unix_out[64];
	const char *argv[] = { harness_program("lockctl"), "-U",
	    harness_shared->unix_path, "ping", NULL };

	(void)state;
	assert_int_equal(lockctl("ping", NULL), 0);
	assert_string_equal(out, "pong\n");
	assert_string_equal(err, "");
	assert_int_equal(harness_run((char *const *)argv, RUN_TIMEOUT_MS,
	    unix_out, sizeof(unix_out), NULL, 0), 0);
	assert_string_equal(unix_out, "pong\n");
}

static void
test_lockctl_acquire_renew_release_speak_shell(void **state)
{
	struct grant g;
	uint64_t fence;

	(void)state;
	assert_int_equal(lockctl("acquire", "-l", "5s", "ctl/basic", NULL), 0);
	parse_grant(out, &g);
	assert_true(g.fence >= 1);
	assert_int_equal(g.lease, 5000);
	assert_true(held("ctl/basic", &fence));
	assert_int_equal(fence, g.fence);
	assert_int_equal(lockctl("renew", "-l", "8s", "ctl/basic", g.handle,
	    NULL), 0);
	{
		char expect[64];

		snprintf(expect, sizeof(expect), "fence=%" PRIu64
		    " lease=8000\n", g.fence);
		assert_string_equal(out, expect);
	}
	assert_int_equal(lockctl("release", "ctl/basic", g.handle, NULL), 0);
	assert_string_equal(out, "released\n");
	assert_false(held("ctl/basic", NULL));
	/* Releasing again is success too, and says so. */
	assert_int_equal(lockctl("release", "ctl/basic", g.handle, NULL), 0);
	assert_string_equal(out, "notheld\n");
	/* A renewal of a lost lease is "lease lost". */
	assert_int_equal(lockctl("renew", "ctl/basic", g.handle, NULL),
	    EXIT_LOST);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "CONFLICT"));
}

static void
test_lockctl_try_and_acquire_on_a_held_lock(void **state)
{
	struct grant g;

	(void)state;
	assert_int_equal(lockctl("try", "-l", "5s", "ctl/busy", NULL), 0);
	parse_grant(out, &g);
	assert_int_equal(lockctl("try", "ctl/busy", NULL), EXIT_BUSY);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "held"));
	assert_int_equal(lockctl("acquire", "-w", "0", "ctl/busy", NULL),
	    EXIT_WAIT_TIMEOUT);
	assert_int_equal(lockctl("acquire", "-w", "200ms", "ctl/busy", NULL),
	    EXIT_WAIT_TIMEOUT);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "TIMEOUT"));
	assert_int_equal(lockctl("release", "ctl/busy", g.handle, NULL), 0);
}

static void
test_lockctl_unreachable_lockd_exits_69(void **state)
{
	char port[16];
	const char *tcp[] = { harness_program("lockctl"), "-p", port, "ping",
	    NULL };
	const char *unix_socket[] = { harness_program("lockctl"), "-U",
	    "/nonexistent/sock", "status", "x", NULL };

	(void)state;
	snprintf(port, sizeof(port), "%d", harness_closed_port());
	assert_int_equal(harness_run((char *const *)tcp, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err)), EXIT_UNREACHABLE);
	assert_non_null(strstr(err, "cannot reach lockd"));
	assert_int_equal(harness_run((char *const *)unix_socket,
	    RUN_TIMEOUT_MS, NULL, 0, NULL, 0), EXIT_UNREACHABLE);
}

static void
test_lockctl_usage_errors_exit_64(void **state)
{
	const char *no_command[] = { harness_program("lockctl"), NULL };
	const char *both[] = { harness_program("lockctl"), "-U", "/x", "-p",
	    "1", "ping", NULL };
	const char *bad_port[] = { harness_program("lockctl"), "-p", "0",
	    "ping", NULL };
	const char *help[] = { harness_program("lockctl"), "-h", NULL };

	(void)state;
	assert_int_equal(harness_run((char *const *)no_command,
	    RUN_TIMEOUT_MS, NULL, 0, err, sizeof(err)), EXIT_USAGE);
	assert_non_null(strstr(err, "usage"));
	assert_int_equal(harness_run((char *const *)both, RUN_TIMEOUT_MS,
	    NULL, 0, NULL, 0), EXIT_USAGE);
	assert_int_equal(harness_run((char *const *)bad_port, RUN_TIMEOUT_MS,
	    NULL, 0, NULL, 0), EXIT_USAGE);
	assert_int_equal(harness_run((char *const *)help, RUN_TIMEOUT_MS,
	    out, sizeof(out), NULL, 0), 0);
	assert_non_null(strstr(out, "run [RUN OPTIONS] NAME"));

	assert_int_equal(lockctl("frobnicate", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("acquire", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("acquire", "a", "b", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("acquire", "-l", "5x", "a", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("acquire", "-w", "-1", "a", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("acquire", "a b", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("renew", "a", "not-a-handle", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("release", "a", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("ping", "extra", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "a", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "a", "--", NULL), EXIT_USAGE);
	/* -s and -N (issue 17): bad values, and -s where it means nothing. */
	assert_int_equal(lockctl("run", "-s", "-N", "2", "a", "--", "true",
	    NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "-N", "0", "a", "--", "true", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("-N", "65536", "run", "a", "--", "true",
	    NULL), EXIT_USAGE);
	assert_int_equal(lockctl("try", "-N", "2x", "a", NULL), EXIT_USAGE);
	assert_non_null(strstr(err, "-N takes a limit 1-65535"));
	assert_int_equal(lockctl("acquire", "--limit", "-3", "a", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("try", "--shared", "-N", "3", "a", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("status", "-s", "a", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("renew", "-N", "2", "a", "1-0123456789abcdef",
	    NULL), EXIT_USAGE);
	assert_int_equal(lockctl("-s", "status", "a", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "-F", "a", "--", "true", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("run", "-w", "abc", "a", "--", "true", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("run", "a", "-c", "true", "extra", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("-n", "status", "a", NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "-E", "300", "a", "--", "true", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("run", "-q", "a", "--", "true", NULL),
	    EXIT_USAGE);
	/* A usage error never took the lock. */
	assert_false(held("a", NULL));
}

/*
 * Issue 25, item 8: a bare number is seconds in every option, as flock,
 * timeout(1) and sleep(1) read theirs; a lease lockctl cannot keep is
 * refused before anything is sent.
 */
static void
test_lockctl_a_bare_number_is_seconds_in_every_option(void **state)
{
	struct grant g;

	(void)state;
	assert_int_equal(lockctl("acquire", "-l", "2", "ctl/secs", NULL), 0);
	parse_grant(out, &g);
	assert_int_equal(g.lease, 2000);
	assert_int_equal(lockctl("renew", "-l", "1.5", "ctl/secs", g.handle,
	    NULL), 0);
	assert_non_null(strstr(out, " lease=1500\n"));
	assert_int_equal(lockctl("release", "ctl/secs", g.handle, NULL), 0);
	/* The report's own command: a 2 s lease, and the command's status. */
	assert_int_equal(lockctl("run", "-l", "2", "ctl/secs", "--", "true",
	    NULL), 0);
	assert_string_equal(err, "");
	assert_int_equal(lockctl("-t", "2", "try", "--delay", "1", "-l",
	    "1m", "ctl/secs", NULL), 0);
	parse_grant(out, &g);
	assert_int_equal(lockctl("release", "ctl/secs", g.handle, NULL), 0);
	/* Too short to keep: refused with why, and nothing is taken. */
	assert_int_equal(lockctl("run", "-l", "2ms", "ctl/short", "--",
	    "true", NULL), EXIT_USAGE);
	assert_non_null(strstr(err, "too short"));
	assert_non_null(strstr(err, "300ms"));
	assert_int_equal(lockctl("acquire", "-l", "0.1", "ctl/short", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("try", "-l", "299ms", "ctl/short", NULL),
	    EXIT_USAGE);
	assert_false(held("ctl/short", NULL));
	/* 0 is still lockd's default lease. */
	assert_int_equal(lockctl("try", "-l", "0", "ctl/short", NULL), 0);
	parse_grant(out, &g);
	assert_int_equal(g.lease, 30000);
	assert_int_equal(lockctl("release", "ctl/short", g.handle, NULL), 0);
	assert_int_equal(lockctl("-t", "1x", "ping", NULL), EXIT_USAGE);
	assert_non_null(strstr(err, "a number of seconds"));
}

/*
 * Issue 25, item 14: an error repeats at most the first bytes of a long
 * word, and says how long it was.
 */
static void
test_lockctl_errors_cut_a_long_name(void **state)
{
	static char name[100 * 1024 + 1];
	const char *words[] = { "try", "status", "--owner" };
	size_t i;

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		int rc = i < 2 ? lockctl(words[i], name, NULL) :
		    lockctl("try", "--owner", name, "ctl/x", NULL);

		assert_int_equal(rc, EXIT_USAGE);
		assert_true(strlen(err) < 400);
		assert_non_null(strstr(err, "(102400 bytes)"));
	}
	assert_int_equal(lockctl("-l", name, "run", "x", "--", "true", NULL),
	    EXIT_USAGE);
	assert_true(strlen(err) < 300);
	assert_int_equal(lockctl(name, NULL), EXIT_USAGE);
	assert_true(strlen(err) < 300);
	assert_non_null(strstr(err, "(102400 bytes)"));
}

/*
 * Issue 25, item 9: lockctl nodes on a single lockd (not a cluster): it
 * answers, so it serves its locks; an endpoint that does not answer is
 * down, and with none up nobody leads (69).
 */
static void
test_lockctl_nodes_on_a_single_lockd(void **state)
{
	char want[96], port[16], list[64];
	const char *argv[] = { harness_program("lockctl"), "-H", list,
	    "nodes", NULL };

	(void)state;
	assert_int_equal(lockctl("nodes", NULL), 0);
	snprintf(want, sizeof(want), "endpoint=127.0.0.1:%s role=single\n",
	    harness_shared_port);
	assert_string_equal(out, want);
	snprintf(port, sizeof(port), "%d", harness_closed_port());
	snprintf(list, sizeof(list), "127.0.0.1:%s,127.0.0.1:%s",
	    harness_shared_port, port);
	assert_int_equal(harness_run((char *const *)argv, RUN_TIMEOUT_MS,
	    out, sizeof(out), err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "endpoint=127.0.0.1:%s role=down\n",
	    port);
	assert_non_null(strstr(out, want));
	snprintf(list, sizeof(list), "127.0.0.1:%s", port);
	assert_int_equal(harness_run((char *const *)argv, RUN_TIMEOUT_MS,
	    out, sizeof(out), err, sizeof(err)), EXIT_UNREACHABLE);
	assert_non_null(strstr(err, "no node leads"));
	assert_int_equal(lockctl("nodes", "extra", NULL), EXIT_USAGE);
}

/* lockctl run. */

static void
test_lockctl_run_gives_the_command_its_lease(void **state)
{
	char name[64], handle[64], fence_text[32];
	unsigned long long fence;

	(void)state;
	assert_int_equal(lockctl("run", "ctl/env", "--", "/bin/sh", "-c",
	    "echo \"$LOCKD_NAME $LOCKD_FENCE $LOCKD_HANDLE\"", NULL), 0);
	assert_int_equal(sscanf(out, "%63s %31s %63s", name, fence_text,
	    handle), 3);
	assert_string_equal(name, "ctl/env");
	fence = strtoull(fence_text, NULL, 10);
	assert_true(fence >= 1);
	snprintf(fence_text, sizeof(fence_text), "%llu-", fence);
	assert_int_equal(strncmp(handle, fence_text, strlen(fence_text)), 0);
	assert_int_equal(strlen(handle), strlen(fence_text) + 16);
	/* Released when the command ended: the lock is free at once. */
	assert_false(held("ctl/env", NULL));
	/* And the handle is no longer good. */
	assert_int_equal(lockctl("release", "ctl/env", handle, NULL), 0);
	assert_string_equal(out, "notheld\n");
}

static void
test_lockctl_run_exits_with_the_command_status(void **state)
{
	(void)state;
	assert_int_equal(lockctl("run", "ctl/status", "--", "/bin/sh", "-c",
	    "exit 0", NULL), 0);
	assert_int_equal(lockctl("run", "ctl/status", "--", "/bin/sh", "-c",
	    "exit 3", NULL), 3);
	assert_int_equal(lockctl("run", "ctl/status", "--", "/bin/sh", "-c",
	    "kill -USR1 $$", NULL), 128 + SIGUSR1);
	assert_int_equal(lockctl("run", "ctl/status", "--",
	    "/nonexistent/command", NULL), 127);
	assert_non_null(strstr(err, "/nonexistent/command"));
	/* "--" may be left out. */
	assert_int_equal(lockctl("run", "ctl/status", "/bin/sh", "-c",
	    "exit 4", NULL), 4);
	assert_false(held("ctl/status", NULL));
}

static void
test_lockctl_run_on_a_busy_lock_exits_busy_or_the_e_code(void **state)
{
	struct grant g;

	(void)state;
	assert_int_equal(lockctl("acquire", "-l", "10s", "ctl/run-busy",
	    NULL), 0);
	parse_grant(out, &g);
	/* Silent, as flock is: cron mails nothing for an overlap. */
	assert_int_equal(lockctl("run", "-n", "ctl/run-busy", "--", "/bin/sh",
	    "-c", "echo ran", NULL), EXIT_BUSY);
	assert_string_equal(out, "");
	assert_string_equal(err, "");
	assert_int_equal(lockctl("run", "-n", "--verbose", "ctl/run-busy",
	    "--", "/bin/sh", "-c", "echo ran", NULL), EXIT_BUSY);
	assert_non_null(strstr(err, "held"));
	assert_int_equal(lockctl("run", "-n", "-E", "42", "ctl/run-busy",
	    "--", "/bin/sh", "-c", "echo ran", NULL), 42);
	/* A wait that runs out is busy too, and -E covers it (flock). */
	assert_int_equal(lockctl("run", "-w", "300ms", "ctl/run-busy", "--",
	    "/bin/sh", "-c", "echo ran", NULL), EXIT_BUSY);
	assert_string_equal(out, "");
	assert_string_equal(err, "");
	assert_int_equal(lockctl("run", "-w", "0.2", "-E", "0",
	    "ctl/run-busy", "--", "/bin/sh", "-c", "echo ran", NULL), 0);
	assert_string_equal(out, "");
	/* lockctl's own code for it, on request. */
	assert_int_equal(lockctl("run", "-X", "-w", "0.2", "ctl/run-busy",
	    "--", "/bin/sh", "-c", "echo ran", NULL), EXIT_WAIT_TIMEOUT);
	assert_int_equal(lockctl("release", "ctl/run-busy", g.handle, NULL),
	    0);
	assert_int_equal(lockctl("run", "-n", "ctl/run-busy", "--", "/bin/sh",
	    "-c", "echo ran", NULL), 0);
	assert_string_equal(out, "ran\n");
}

static void
test_lockctl_run_waits_for_the_lock_then_runs(void **state)
{
	struct grant g;
	uint64_t fence;

	(void)state;
	/* Held by a lease that lapses in half a second. */
	assert_int_equal(lockctl("acquire", "-l", "500ms", "ctl/run-wait",
	    NULL), 0);
	parse_grant(out, &g);
	/* A 600 ms lease granted after a ~500 ms wait is renewed first. */
	assert_int_equal(lockctl("run", "-l", "600ms", "ctl/run-wait", "--",
	    "/bin/sh", "-c", "sleep 1; echo $LOCKD_FENCE", NULL), 0);
	fence = strtoull(out, NULL, 10);
	assert_true(fence > g.fence);
	assert_string_equal(err, "");
}

static void
test_lockctl_run_keeps_the_lock_across_several_lease_lengths(void **state)
{
	static const int64_t leases[] = { 300, 600, 1000 };
	static const char *const names[] = { "ctl/len-300", "ctl/len-600",
	    "ctl/len-1000" };
	lockd_options o = { .port = harness_shared->port, .command_timeout_ms = 5000 };
	lockd_context *c = lockd_connect(&o);
	lockd_lock_status st;
	uint64_t fences[3] = { 0 };
	int64_t start, seen[3] = { 0 }, elapsed;
	char lease[3][16], script[3][32];
	pid_t pids[3];
	int i;

	(void)state;
	assert_int_equal(c->err, 0);
	start = harness_now_ms();
	for (i = 0; i < 3; i++) {
		/* Each command runs three times its lease. */
		snprintf(lease[i], sizeof(lease[i]), "%lldms",
		    (long long)leases[i]);
		snprintf(script[i], sizeof(script[i]), "sleep %.1f",
		    3 * (double)leases[i] / 1000);
		pids[i] = spawn_lockctl(NULL, NULL, "run", "-l", lease[i],
		    names[i], "--", "/bin/sh", "-c", script[i], NULL);
	}
	/* The same grant holds throughout, seen well past two leases. */
	while ((elapsed = harness_now_ms() - start) < 3 * 1000 - 200) {
		for (i = 0; i < 3; i++) {
			if (elapsed > 3 * leases[i] - 150)
				continue;
			assert_int_equal(lockd_status(c, names[i], &st),
			    LOCKD_OK);
			if (fences[i] == 0 && st.held)
				fences[i] = st.fence;
			if (fences[i] == 0)
				continue;
			assert_int_equal(st.held, 1);
			assert_int_equal(st.fence, fences[i]);
			seen[i] = elapsed;
		}
		harness_sleep_ms(20);
	}
	for (i = 0; i < 3; i++) {
		assert_true(seen[i] > 2 * leases[i] + leases[i] / 3);
		assert_int_equal(harness_wait(pids[i], RUN_TIMEOUT_MS), 0);
		assert_int_equal(lockd_status(c, names[i], &st), LOCKD_OK);
		assert_int_equal(st.held, 0);
	}
	lockd_free(c);
}

/* True once pid has ended: gone, or a zombie its reaper has not seen to. */
static bool
ended(pid_t pid)
{
	char path[64], stat[256], *paren;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!harness_read_file(path, stat, sizeof(stat)))
		return true;
	paren = strrchr(stat, ')');
	return paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
}

/* Waits until pid has ended; returns when (or -1 after timeout_ms). */
static int64_t
wait_gone(pid_t pid, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	while (harness_now_ms() < deadline) {
		if (ended(pid))
			return harness_now_ms();
		harness_sleep_ms(1);
	}
	return -1;
}

static pid_t
read_pid(const char *path)
{
	char text[32];

	assert_true(harness_wait_for_file(path, RUN_TIMEOUT_MS));
	harness_sleep_ms(10);
	assert_true(harness_read_file(path, text, sizeof(text)));
	return (pid_t)atol(text);
}

static void
test_lockctl_run_kills_the_command_before_the_lease_can_end(void **state)
{
	char polite[256], stubborn[256];
	pid_t a, b, pa, pb;
	int64_t stopped, gone_a, gone_b;
	char text[64];

	(void)state;
	/* One command ends on SIGTERM; the other shrugs it off. */
	snprintf(polite, sizeof(polite), "echo $$ > %s; exec sleep 30",
	    path_of("polite.pid"));
	snprintf(stubborn, sizeof(stubborn), "trap 'echo term >> %s' TERM; "
	    "echo $$ > %s; while :; do sleep 0.02; done",
	    path_of("stubborn.term"), path_of("stubborn.pid"));
	a = spawn_lockctl(NULL, path_of("polite.err"), "run", "-l", "1s",
	    "ctl/kill-polite", "--", "/bin/sh", "-c", polite, NULL);
	b = spawn_lockctl(NULL, path_of("stubborn.err"), "run", "-l", "1s",
	    "ctl/kill-stubborn", "--", "/bin/sh", "-c", stubborn, NULL);
	pa = read_pid(path_of("polite.pid"));
	pb = read_pid(path_of("stubborn.pid"));
	harness_sleep_ms(500);

	/*
	 * The last renewal lockd answered was sent before it stopped, so
	 * every lease ends by stopped + 1 s at the latest.
	 */
	harness_server_pause(harness_shared);
	stopped = harness_now_ms();
	gone_a = wait_gone(pa, 3000);
	gone_b = wait_gone(pb, 3000);
	assert_int_equal(harness_wait(a, RUN_TIMEOUT_MS), EXIT_LOST);
	assert_int_equal(harness_wait(b, RUN_TIMEOUT_MS), EXIT_LOST);
	harness_server_resume(harness_shared);

	assert_true(gone_a > 0 && gone_b > 0);
	assert_true(gone_a < stopped + 1000);
	assert_true(gone_b < stopped + 1000);
	/* Not killed before renewals could have failed for a while. */
	assert_true(gone_a > stopped + 200);
	/* The stubborn one got SIGTERM first, then needed SIGKILL. */
	assert_true(harness_read_file(path_of("stubborn.term"), text,
	    sizeof(text)));
	assert_non_null(strstr(text, "term"));
	assert_true(gone_b >= gone_a);
	assert_true(harness_read_file(path_of("stubborn.err"), text,
	    sizeof(text)));
	assert_non_null(strstr(text, "lost"));
	/* lockd, back, frees both: onclose=release, or the lease ran out. */
	assert_true(wait_until_free("ctl/kill-polite", 3000));
	assert_true(wait_until_free("ctl/kill-stubborn", 3000));
}

static void
test_lockctl_run_kills_the_command_when_a_renewal_is_refused(void **state)
{
	char script[256], handle[64];
	pid_t pid, child;
	int64_t released, gone;

	(void)state;
	snprintf(script, sizeof(script), "echo $$ > %s; echo $LOCKD_HANDLE "
	    "> %s; exec sleep 30", path_of("refused.pid"),
	    path_of("refused.handle"));
	pid = spawn_lockctl(NULL, NULL, "run", "-l", "900ms", "ctl/refused",
	    "--", "/bin/sh", "-c", script, NULL);
	child = read_pid(path_of("refused.pid"));
	assert_true(harness_wait_for_file(path_of("refused.handle"),
	    RUN_TIMEOUT_MS));
	harness_sleep_ms(20);
	assert_true(harness_read_file(path_of("refused.handle"), handle,
	    sizeof(handle)));
	handle[strcspn(handle, "\n")] = '\0';
	/* Someone releases it behind lockctl's back. */
	assert_int_equal(lockctl("release", "ctl/refused", handle, NULL), 0);
	assert_string_equal(out, "released\n");
	released = harness_now_ms();
	gone = wait_gone(child, 3000);
	assert_true(gone > 0);
	/* At the next renewal, a third of the lease on at most. */
	if (gone - released >= 600)
		fail_msg("killed %lld ms after the release",
		    (long long)(gone - released));
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), EXIT_LOST);
}

static void
forwards(int sig, int expected_status)
{
	char script[256], text[64];
	pid_t pid;

	unlink(path_of("fwd.ready"));
	unlink(path_of("fwd.got"));
	snprintf(script, sizeof(script), "trap 'echo got > %s; exit %d' %s; "
	    "echo ready > %s; while :; do sleep 0.02; done",
	    path_of("fwd.got"), expected_status, sig == SIGINT ? "INT" : "TERM",
	    path_of("fwd.ready"));
	pid = spawn_lockctl(NULL, NULL, "run", "ctl/forward", "--", "/bin/sh",
	    "-c", script, NULL);
	assert_true(harness_wait_for_file(path_of("fwd.ready"),
	    RUN_TIMEOUT_MS));
	kill(pid, sig);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), expected_status);
	assert_true(harness_read_file(path_of("fwd.got"), text, sizeof(text)));
	assert_string_equal(text, "got\n");
	assert_false(held("ctl/forward", NULL));
}

static void
test_lockctl_run_forwards_sigterm_and_sigint(void **state)
{
	(void)state;
	forwards(SIGTERM, 5);
	forwards(SIGINT, 6);
}

static void
test_lockctl_run_dying_frees_the_lock_and_stops_the_command(void **state)
{
	char script[256];
	pid_t pid, child;

	(void)state;
	snprintf(script, sizeof(script), "echo $$ > %s; exec sleep 30",
	    path_of("orphan.pid"));
	pid = spawn_lockctl(NULL, NULL, "run", "-l", "30s", "ctl/orphan",
	    "--", "/bin/sh", "-c", script, NULL);
	child = read_pid(path_of("orphan.pid"));
	assert_true(held("ctl/orphan", NULL));
	kill(pid, SIGKILL);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), 128 + SIGKILL);
	/* The lease was bound to lockctl's connection; the command to it. */
	assert_true(wait_until_free("ctl/orphan", 2000));
	assert_true(wait_gone(child, 2000) > 0);
}

/*
 * Issue 25, item 7: a lockctl that dies stops its job as a lost lease
 * does, SIGTERM first, so that the job's trap runs, and SIGKILL after a
 * grace (a sixth of the lease, 1 s here) for a job that ignores it; the
 * lock passes on only once the job is gone, before the lease could end.
 */
static void
test_lockctl_run_dying_terms_the_job_before_killing_it(void **state)
{
	char polite[256], stubborn[256];
	pid_t a, b, pa, pb;
	int64_t killed, gone_b;
	char text[64];

	(void)state;
	snprintf(polite, sizeof(polite), "echo $$ > %s; trap 'echo term > %s; "
	    "exit 3' TERM; while :; do sleep 0.05; done",
	    path_of("dying-polite.pid"), path_of("dying-polite.term"));
	snprintf(stubborn, sizeof(stubborn), "trap '' TERM; echo $$ > %s; "
	    "while :; do sleep 0.05; done", path_of("dying-stubborn.pid"));
	a = spawn_lockctl(NULL, NULL, "run", "-l", "6s", "ctl/dying-polite",
	    "--", "/bin/sh", "-c", polite, NULL);
	b = spawn_lockctl(NULL, NULL, "run", "-l", "6s", "ctl/dying-stubborn",
	    "--", "/bin/sh", "-c", stubborn, NULL);
	pa = read_pid(path_of("dying-polite.pid"));
	pb = read_pid(path_of("dying-stubborn.pid"));
	killed = harness_now_ms();
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	assert_int_equal(harness_wait(a, RUN_TIMEOUT_MS), 128 + SIGKILL);
	assert_int_equal(harness_wait(b, RUN_TIMEOUT_MS), 128 + SIGKILL);
	/* The polite job's trap ran, and it ended at once. */
	assert_true(wait_gone(pa, 2000) > 0);
	assert_true(harness_wait_for_file(path_of("dying-polite.term"), 2000));
	assert_true(harness_read_file(path_of("dying-polite.term"), text,
	    sizeof(text)));
	assert_string_equal(text, "term\n");
	assert_true(wait_until_free("ctl/dying-polite", 2000));
	/* The stubborn one: SIGKILL after the grace, well inside the lease. */
	gone_b = wait_gone(pb, 5000);
	assert_true(gone_b > 0);
	assert_in_range(gone_b - killed, 900, 3000);
	assert_true(wait_until_free("ctl/dying-stubborn", 2000));
	assert_true(harness_now_ms() - killed < 6000 - 600);
}

/* ---- protocol v2's commands ------------------------------------------ */

/* try and acquire with -N (a semaphore) and -s (a shared lock). */
static void
test_lockctl_limit_and_shared_on_try_and_acquire(void **state)
{
	struct grant a, b;

	(void)state;
	assert_int_equal(lockctl("try", "-N", "2", "ctl/sem", NULL), 0);
	parse_grant(out, &a);
	assert_int_equal(lockctl("acquire", "--limit", "2", "-w", "1s",
	    "ctl/sem", NULL), 0);
	parse_grant(out, &b);
	assert_true(b.fence > a.fence);
	/* Two hold: a third is busy, waits in vain, or is refused for
	 * asking another limit of a name in use. */
	assert_int_equal(lockctl("try", "-N", "2", "ctl/sem", NULL),
	    EXIT_BUSY);
	assert_int_equal(lockctl("acquire", "-N", "2", "-w", "200ms",
	    "ctl/sem", NULL), EXIT_WAIT_TIMEOUT);
	assert_int_equal(lockctl("try", "ctl/sem", NULL), 70);
	assert_non_null(strstr(err, "BADARG"));
	assert_int_equal(lockctl("status", "ctl/sem", NULL), 0);
	assert_non_null(strstr(out, "held=1 "));
	/* One gives back its permit: the next may have it. */
	assert_int_equal(lockctl("release", "ctl/sem", a.handle, NULL), 0);
	assert_int_equal(lockctl("try", "-N", "2", "ctl/sem", NULL), 0);

	/* Readers share; a writer waits for them all. */
	assert_int_equal(lockctl("try", "-s", "ctl/rw", NULL), 0);
	parse_grant(out, &a);
	assert_int_equal(lockctl("acquire", "--shared", "-w", "1s", "ctl/rw",
	    NULL), 0);
	parse_grant(out, &b);
	assert_int_equal(lockctl("try", "ctl/rw", NULL), EXIT_BUSY);
	assert_int_equal(lockctl("acquire", "-w", "200ms", "ctl/rw", NULL),
	    EXIT_WAIT_TIMEOUT);
	assert_int_equal(lockctl("release", "ctl/rw", a.handle, NULL), 0);
	assert_int_equal(lockctl("release", "ctl/rw", b.handle, NULL), 0);
	assert_int_equal(lockctl("try", "ctl/rw", NULL), 0);
	parse_grant(out, &a);
	/* Held exclusively: no reader gets in. */
	assert_int_equal(lockctl("try", "-s", "ctl/rw", NULL), EXIT_BUSY);
	assert_int_equal(lockctl("release", "ctl/rw", a.handle, NULL), 0);
}

/* A job that marks that it runs, then waits (at most 10 s) for go
 * (harness_wait_for_file waits for a file with something in it). */
static void
job_script(char *script, size_t size, const char *mark, const char *go)
{
	snprintf(script, size, "echo $$ > %s; i=0; while [ ! -e %s ] && "
	    "[ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done",
	    path_of(mark), path_of(go));
}

static void
touch(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("go\n", f);
	assert_int_equal(fclose(f), 0);
}

/* run -N 2: two jobs run at once, a third waits (or with -n is busy). */
static void
test_lockctl_run_with_a_limit_runs_that_many_at_once(void **state)
{
	char one[512], two[512], three[512];
	struct harness_conn *c;
	pid_t p1, p2, p3;

	(void)state;
	job_script(one, sizeof(one), "job1", "go-sem");
	job_script(two, sizeof(two), "job2", "go-sem");
	job_script(three, sizeof(three), "job3", "go-sem");
	p1 = spawn_lockctl(NULL, NULL, "run", "-N", "2", "ctl/run-sem", "-c",
	    one, NULL);
	p2 = spawn_lockctl(NULL, NULL, "-N", "2", "run", "ctl/run-sem", "-c",
	    two, NULL);
	assert_true(harness_wait_for_file(path_of("job1"), RUN_TIMEOUT_MS));
	assert_true(harness_wait_for_file(path_of("job2"), RUN_TIMEOUT_MS));
	/* Both run now; a third is busy at once with -n. */
	assert_int_equal(lockctl("run", "-n", "-N", "2", "ctl/run-sem", "-c",
	    three, NULL), EXIT_BUSY);
	assert_false(harness_wait_for_file(path_of("job3"), 1));
	/* Without -n it waits until one of the two is done. */
	p3 = spawn_lockctl(NULL, NULL, "run", "-N", "2", "ctl/run-sem", "-c",
	    three, NULL);
	c = harness_connect(harness_shared);
	harness_await_queue(c, "ctl/run-sem", 1);
	harness_close(c);
	assert_false(harness_wait_for_file(path_of("job3"), 1));
	touch(path_of("go-sem"));
	assert_int_equal(harness_wait(p1, RUN_TIMEOUT_MS), 0);
	assert_int_equal(harness_wait(p2, RUN_TIMEOUT_MS), 0);
	assert_int_equal(harness_wait(p3, RUN_TIMEOUT_MS), 0);
	assert_true(harness_wait_for_file(path_of("job3"), 1));
	assert_true(wait_until_free("ctl/run-sem", 2000));
}

/* run -s: readers run together; a writer's run -n is busy meanwhile. */
static void
test_lockctl_run_shared_runs_readers_together(void **state)
{
	char one[512], two[512];
	pid_t p1, p2;

	(void)state;
	job_script(one, sizeof(one), "reader1", "go-rw");
	job_script(two, sizeof(two), "reader2", "go-rw");
	p1 = spawn_lockctl(NULL, NULL, "run", "-s", "ctl/run-rw", "-c", one,
	    NULL);
	p2 = spawn_lockctl(NULL, NULL, "run", "--shared", "ctl/run-rw", "-c",
	    two, NULL);
	assert_true(harness_wait_for_file(path_of("reader1"),
	    RUN_TIMEOUT_MS));
	assert_true(harness_wait_for_file(path_of("reader2"),
	    RUN_TIMEOUT_MS));
	assert_int_equal(lockctl("run", "-n", "ctl/run-rw", "--", "true",
	    NULL), EXIT_BUSY);
	/* -x after -s: the last counts, as with flock. */
	assert_int_equal(lockctl("run", "-n", "-s", "-x", "ctl/run-rw", "--",
	    "true", NULL), EXIT_BUSY);
	assert_int_equal(lockctl("run", "-n", "-s", "ctl/run-rw", "--",
	    "true", NULL), 0);
	touch(path_of("go-rw"));
	assert_int_equal(harness_wait(p1, RUN_TIMEOUT_MS), 0);
	assert_int_equal(harness_wait(p2, RUN_TIMEOUT_MS), 0);
	assert_true(wait_until_free("ctl/run-rw", 2000));
}

/* The value of " key=" (or "key=" at the start) in out, "" when absent. */
static const char *
out_field(const char *key)
{
	static char value[128];
	char want[32];
	const char *p;

	snprintf(want, sizeof(want), "%s=", key);
	for (p = out; (p = strstr(p, want)) != NULL; p++)
		if (p == out || p[-1] == ' ')
			break;
	value[0] = '\0';
	if (p != NULL)
		snprintf(value, sizeof(value), "%.*s",
		    (int)strcspn(p + strlen(want), " \n"), p + strlen(want));
	return value;
}

/* --owner and --delay on acquire and try; owner defaults to host:pid;
 * leader prints the holder's label. */
static void
test_lockctl_owner_and_delay_on_acquire_and_try(void **state)
{
	char host[128], want[160];

	(void)state;
	/*
	 * Every wait here only has to be long enough, never short enough:
	 * a lockctl run may take hundreds of milliseconds (sanitized, on a
	 * loaded machine), so the owner is read on a lease that outlasts
	 * any number of runs, and the lock-delay is long enough that the
	 * runs after the short lease's end all fall inside it.
	 */
	assert_int_equal(lockctl("acquire", "--owner", "web-1", "-l", "60s",
	    "ctl/owner", NULL), 0);
	assert_int_equal(lockctl("status", "ctl/owner", NULL), 0);
	assert_string_equal(out_field("owner"), "web-1");
	assert_int_equal(lockctl("leader", "ctl/owner", NULL), 0);
	assert_string_equal(out, "web-1\n");
	/* A lease that runs out: the lock-delay holds the name. */
	assert_int_equal(lockctl("acquire", "--owner", "web-2", "--delay",
	    "60s", "-l", "300ms", "ctl/owned", NULL), 0);
	harness_sleep_ms(400);
	assert_int_equal(lockctl("status", "ctl/owned", NULL), 0);
	assert_string_equal(out_field("held"), "0");
	assert_in_range(atoll(out_field("delay")), 1, 60000);
	assert_int_equal(lockctl("try", "ctl/owned", NULL), EXIT_BUSY);
	assert_int_equal(lockctl("leader", "ctl/owned", NULL), EXIT_BUSY);
	assert_non_null(strstr(err, "nobody holds ctl/owned"));

	/* No --owner: host:pid of the lockctl that asked. */
	assert_int_equal(lockctl("try", "ctl/default-owner", NULL), 0);
	assert_int_equal(lockctl("leader", "ctl/default-owner", NULL), 0);
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	host[sizeof(host) - 1] = '\0';
	snprintf(want, sizeof(want), "%.50s:", host);
	assert_memory_equal(out, want, strlen(want));
	assert_true(atol(out + strlen(want)) > 0);

	assert_int_equal(lockctl("try", "--owner", "a b", "ctl/x", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("acquire", "--delay", "-1", "ctl/x", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("status", "--owner", "x", "ctl/x", NULL),
	    EXIT_USAGE);
}

/* list [PREFIX]: a table in name order, or JSON. */
static void
test_lockctl_list_shows_a_table_and_json(void **state)
{
	const char *a, *b, *c;

	(void)state;
	assert_int_equal(lockctl("try", "--owner", "w-2", "ctl/list/b",
	    NULL), 0);
	assert_int_equal(lockctl("try", "--owner", "w-1", "ctl/list/a",
	    NULL), 0);
	assert_int_equal(lockctl("try", "ctl/listx", NULL), 0);
	assert_int_equal(lockctl("list", "ctl/list/", NULL), 0);
	assert_memory_equal(out, "NAME ", 5);
	a = strstr(out, "\nctl/list/a ");
	b = strstr(out, "\nctl/list/b ");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_non_null(strstr(a, " w-1 "));
	assert_null(strstr(out, "ctl/listx"));
	assert_int_equal(lockctl("list", "--json", "ctl/list/", NULL), 0);
	assert_memory_equal(out, "[\n", 2);
	c = strstr(out, "{\"name\": \"ctl/list/a\", \"owner\": \"w-1\", "
	    "\"held\": true, \"fence\": ");
	assert_non_null(c);
	assert_non_null(strstr(out, "\"name\": \"ctl/list/b\""));
	assert_int_equal(lockctl("list", "--json", "ctl/none/", NULL), 0);
	assert_string_equal(out, "[]\n");
	assert_int_equal(lockctl("list", "a", "b", NULL), EXIT_USAGE);
}

/* status and list show a semaphore's holders and limit, a shared lock's
 * readers, as STATUS's reply orders them. */
static void
test_lockctl_status_and_list_show_holders_limit_and_mode(void **state)
{
	const char *sem, *rw, *plain;

	(void)state;
	assert_int_equal(lockctl("try", "-N", "3", "ctl/kinds/sem", NULL), 0);
	assert_int_equal(lockctl("try", "-N", "3", "ctl/kinds/sem", NULL), 0);
	assert_int_equal(lockctl("try", "-s", "ctl/kinds/rw", NULL), 0);
	assert_int_equal(lockctl("try", "-s", "ctl/kinds/rw", NULL), 0);
	assert_int_equal(lockctl("try", "ctl/kinds/x", NULL), 0);
	assert_int_equal(lockctl("status", "ctl/kinds/sem", NULL), 0);
	assert_non_null(strstr(out, " holders=2 limit=3\n"));
	assert_int_equal(lockctl("status", "ctl/kinds/rw", NULL), 0);
	assert_non_null(strstr(out, " holders=2 mode=shared\n"));
	assert_int_equal(lockctl("status", "ctl/kinds/x", NULL), 0);
	assert_null(strstr(out, "holders="));
	assert_null(strstr(out, "mode="));

	assert_int_equal(lockctl("list", "ctl/kinds/", NULL), 0);
	assert_non_null(strstr(out, " HOLDERS\n"));
	sem = strstr(out, "\nctl/kinds/sem ");
	rw = strstr(out, "\nctl/kinds/rw ");
	plain = strstr(out, "\nctl/kinds/x ");
	assert_non_null(sem);
	assert_non_null(rw);
	assert_non_null(plain);
	assert_memory_equal(strchr(sem + 1, '\n') - 4, " 2/3", 4);
	assert_memory_equal(strchr(rw + 1, '\n') - 9, " 2 shared", 9);
	assert_memory_equal(strchr(plain + 1, '\n') - 2, " 1", 2);

	assert_int_equal(lockctl("list", "--json", "ctl/kinds/", NULL), 0);
	assert_non_null(strstr(out, "\"holders\": 2, \"limit\": 3, "
	    "\"mode\": \"exclusive\"}"));
	assert_non_null(strstr(out, "\"holders\": 2, \"limit\": 1, "
	    "\"mode\": \"shared\"}"));
	assert_non_null(strstr(out, "\"holders\": 1, \"limit\": 1, "
	    "\"mode\": \"exclusive\"}"));
}

/* Reads path into text (size bytes) until it holds needle (NULL: a whole
 * line), for at most HARNESS_REPLY_TIMEOUT_MS; a watch's output grows. */
static void
read_until(const char *path, char *text, size_t size, const char *needle)
{
	int64_t deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;

	do {
		harness_sleep_ms(20);
		text[0] = '\0';
		harness_read_file(path, text, size);
	} while ((needle != NULL ? strstr(text, needle) :
	    strchr(text, '\n')) == NULL && harness_now_ms() < deadline);
}

/* watch shows a shared lock's readers as they come. */
static void
test_lockctl_watch_shows_holders_of_a_shared_lock(void **state)
{
	const char *watch_out = path_of("watch-kinds.out");
	char text[OUT_SIZE];
	pid_t pid;

	(void)state;
	assert_int_equal(lockctl("try", "-s", "ctl/kinds/watched", NULL), 0);
	pid = spawn_lockctl(watch_out, NULL, "watch", "ctl/kinds/watched",
	    NULL);
	assert_true(pid > 0);
	read_until(watch_out, text, sizeof(text), NULL);
	assert_non_null(strstr(text, " holders=1 mode=shared\n"));
	assert_int_equal(lockctl("try", "-s", "ctl/kinds/watched", NULL), 0);
	read_until(watch_out, text, sizeof(text), "cause=granted");
	kill(pid, SIGTERM);
	harness_wait(pid, HARNESS_STOP_TIMEOUT_MS);
	assert_non_null(strstr(text, " holders=2 mode=shared cause=granted\n"));
}

/* force NAME FENCE frees only the holder with that fence. */
static void
test_lockctl_force_frees_only_that_fence(void **state)
{
	struct grant g;
	char fence[32], other[32];

	(void)state;
	assert_int_equal(lockctl("try", "-l", "1m", "ctl/stuck", NULL), 0);
	parse_grant(out, &g);
	snprintf(fence, sizeof(fence), "%" PRIu64, g.fence);
	snprintf(other, sizeof(other), "%" PRIu64, g.fence + 1);
	assert_int_equal(lockctl("force", "ctl/stuck", other, NULL),
	    EXIT_BUSY);
	assert_string_equal(out, "notheld\n");
	assert_true(held("ctl/stuck", NULL));
	assert_int_equal(lockctl("force", "ctl/stuck", fence, NULL), 0);
	assert_string_equal(out, "released\n");
	assert_false(held("ctl/stuck", NULL));
	/* Its holder's renewal is refused: the lease is lost. */
	assert_int_equal(lockctl("renew", "ctl/stuck", g.handle, NULL),
	    EXIT_LOST);
	assert_int_equal(lockctl("force", "ctl/stuck", "0", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("force", "ctl/stuck", NULL), EXIT_USAGE);
}

/* watch NAME prints the state, then a line per change, until killed. */
static void
test_lockctl_watch_prints_each_change(void **state)
{
	const char *watch_out = path_of("watch.out");
	char text[OUT_SIZE];
	struct grant g;
	pid_t pid;

	(void)state;
	pid = spawn_lockctl(watch_out, NULL, "watch", "ctl/watched", NULL);
	assert_true(pid > 0);
	read_until(watch_out, text, sizeof(text), NULL);
	assert_string_equal(text, "held=0 fence=0 ttl=0 queue=0\n");
	assert_int_equal(lockctl("try", "--owner", "w", "ctl/watched", NULL),
	    0);
	parse_grant(out, &g);
	assert_int_equal(lockctl("release", "ctl/watched", g.handle, NULL),
	    0);
	read_until(watch_out, text, sizeof(text), "cause=released");
	kill(pid, SIGTERM);
	harness_wait(pid, HARNESS_STOP_TIMEOUT_MS);
	assert_non_null(strstr(text, " owner=w cause=granted\n"));
	assert_non_null(strstr(text, "held=0 fence=0 ttl=0 queue=0 "
	    "cause=released\n"));
}

/* Leader election: run -w forever --owner ADDR; leader names it. */
static void
test_lockctl_run_with_owner_elects_a_leader(void **state)
{
	int64_t deadline;
	pid_t pid;

	(void)state;
	const char *started = path_of("leader.started");
	char script[HARNESS_PATH_MAX + 64];

	/* The command marks that it runs: only then is lockctl's SIGTERM
	 * handling in place (as in the signal tests above). */
	snprintf(script, sizeof(script), "echo started > %s && exec sleep 30",
	    started);
	pid = spawn_lockctl(NULL, path_of("leader.err"), "run", "-w",
	    "forever", "--owner", "10.0.0.7:8080", "ctl/leader", "--", "sh",
	    "-c", script, NULL);
	assert_true(pid > 0);
	if (!harness_wait_for_file(started, HARNESS_REPLY_TIMEOUT_MS)) {
		char text[OUT_SIZE] = "";

		harness_read_file(path_of("leader.err"), text, sizeof(text));
		fail_msg("the command did not start: %s", text);
	}
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (lockctl("leader", "ctl/leader", NULL) != 0 &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(20);
	assert_string_equal(out, "10.0.0.7:8080\n");
	kill(pid, SIGTERM);
	harness_wait(pid, HARNESS_STOP_TIMEOUT_MS);
	assert_true(wait_until_free("ctl/leader", HARNESS_REPLY_TIMEOUT_MS));
}

static void
test_lockctl_help_goes_to_stdout_and_exits_0(void **state)
{
	static const char *const words[][3] = {
		{ "--help", NULL, NULL }, { "-h", NULL, NULL },
		{ "run", "--help", NULL },
	};
	const char *argv[5];
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		argv[0] = harness_program("lockctl");
		for (j = 0; j < 2 && words[i][j] != NULL; j++)
			argv[j + 1] = words[i][j];
		argv[j + 1] = NULL;
		assert_int_equal(harness_run((char *const *)argv,
		    RUN_TIMEOUT_MS, out, sizeof(out), err, sizeof(err)), 0);
		assert_non_null(strstr(out, "usage: lockctl"));
		assert_non_null(strstr(out, "--nonblock"));
		assert_string_equal(err, "");
		/* STATUS never tells who holds a lock; the help must not say so. */
		assert_null(strstr(out, "who holds"));
	}
}

/*
 * lockctl run against flock(1) itself: the same options on a busy lock
 * (a lockd lock held by another lease, a file lock held by another flock)
 * give the same exit codes and the same silence.
 */
struct flock_case {
	const char *options[4];     /* before NAME / the file */
	const char *command[3];     /* after it */
	int expect;
};

static int
run_flock(const char *flock_path, const char *file,
    const struct flock_case *fc, char *o, char *e)
{
	const char *argv[12];
	size_t n = 0, i;

	argv[n++] = flock_path;
	for (i = 0; i < 4 && fc->options[i] != NULL; i++)
		argv[n++] = fc->options[i];
	argv[n++] = file;
	for (i = 0; i < 3 && fc->command[i] != NULL; i++)
		argv[n++] = fc->command[i];
	argv[n] = NULL;
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, o, OUT_SIZE,
	    e, OUT_SIZE);
}

static int
run_lockctl_as_flock(const char *name, const struct flock_case *fc)
{
	const char *argv[14];
	size_t n = 0, i;

	argv[n++] = harness_program("lockctl");
	argv[n++] = "-p";
	argv[n++] = harness_shared_port;
	argv[n++] = "run";
	for (i = 0; i < 4 && fc->options[i] != NULL; i++)
		argv[n++] = fc->options[i];
	argv[n++] = name;
	for (i = 0; i < 3 && fc->command[i] != NULL; i++)
		argv[n++] = fc->command[i];
	argv[n] = NULL;
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err));
}

static void
test_lockctl_run_takes_flocks_options_and_exit_codes(void **state)
{
	static const struct flock_case busy[] = {
		{ { "-n" }, { "true" }, 1 },
		{ { "--nonblock" }, { "true" }, 1 },
		{ { "--nb" }, { "true" }, 1 },
		{ { "-n", "-E", "0" }, { "true" }, 0 },
		{ { "-n", "--conflict-exit-code", "9" }, { "true" }, 9 },
		{ { "-w", "0.2" }, { "true" }, 1 },
		{ { "--wait", ".2" }, { "true" }, 1 },
		{ { "--timeout", "0.2", "-E", "7" }, { "true" }, 7 },
		{ { "-w", "0" }, { "true" }, 1 },
		{ { "-n", "-w", "1" }, { "true" }, 1 },
		{ { "-x", "-o", "-n" }, { "true" }, 1 },
		{ { "-n", "-E", "300" }, { "true" }, EXIT_USAGE },
		{ { "-w", "abc" }, { "true" }, EXIT_USAGE },
		{ { "--bogus" }, { "true" }, EXIT_USAGE },
		{ { "-n" }, { "-c", "true", "extra" }, EXIT_USAGE },
	};
	static const struct flock_case free_lock[] = {
		{ { NULL }, { "-c", "echo \"$0\"; exit 3" }, 3 },
		{ { "-n" }, { "--command", "echo ok" }, 0 },
		{ { "-w", "1" }, { "sh", "-c", "exit 4" }, 4 },
	};
	const char *flock_path = "/usr/bin/flock";
	const char *hold[] = { flock_path, path_of("flock.lock"), "sleep",
	    "30", NULL };
	char fo[OUT_SIZE], fe[OUT_SIZE];
	const char *before_run[] = { harness_program("lockctl"), "-n", "-E",
	    "5", "-p", harness_shared_port, "run", "ctl/flock", "true", NULL };
	struct grant g;
	pid_t holder;
	size_t i;
	int64_t start;

	(void)state;
	if (access(flock_path, X_OK) != 0)
		skip();
	setenv("SHELL", "/bin/sh", 1);
	/* Both locks free: the command's own status, -c through $SHELL. */
	for (i = 0; i < sizeof(free_lock) / sizeof(free_lock[0]); i++) {
		assert_int_equal(run_flock(flock_path, path_of("flock.lock"),
		    &free_lock[i], fo, fe), free_lock[i].expect);
		assert_int_equal(run_lockctl_as_flock("ctl/flock",
		    &free_lock[i]), free_lock[i].expect);
		assert_string_equal(out, fo);
	}
	/* Both busy. */
	holder = harness_spawn((char *const *)hold, NULL, NULL);
	start = harness_now_ms();
	while (run_flock(flock_path, path_of("flock.lock"), &busy[0], fo,
	    fe) != 1 && harness_now_ms() - start < RUN_TIMEOUT_MS)
		harness_sleep_ms(10);
	assert_int_equal(lockctl("acquire", "-l", "20s", "ctl/flock", NULL),
	    0);
	parse_grant(out, &g);
	for (i = 0; i < sizeof(busy) / sizeof(busy[0]); i++) {
		int flock_rc = run_flock(flock_path, path_of("flock.lock"),
		    &busy[i], fo, fe);
		int lockctl_rc = run_lockctl_as_flock("ctl/flock", &busy[i]);

		if (flock_rc != busy[i].expect || lockctl_rc != busy[i].expect)
			fail_msg("case %zu (%s %s): flock %d, lockctl %d, "
			    "expected %d", i, busy[i].options[0],
			    busy[i].options[1] != NULL ? busy[i].options[1] :
			    "", flock_rc, lockctl_rc, busy[i].expect);
		/* Silent where flock is (usage errors say why). */
		if (busy[i].expect != EXIT_USAGE) {
			assert_string_equal(fe, "");
			assert_string_equal(err, "");
		}
		assert_string_equal(out, "");
	}
	/* Run's options may come before `run` as well. */
	assert_int_equal(harness_run((char *const *)before_run,
	    RUN_TIMEOUT_MS, out, sizeof(out), err, sizeof(err)), 5);
	kill(holder, SIGKILL);
	harness_wait(holder, RUN_TIMEOUT_MS);
	assert_int_equal(lockctl("release", "ctl/flock", g.handle, NULL), 0);
}

/*
 * lockd restarts under a running `lockctl run`: with a clean stop, or a
 * kill -9, and a start on the same data dir (an upgrade is the same).  The
 * lease is not bound to the connection lockd closed; lockctl renews it
 * over a new one, and the job runs on, alone, to its own end.
 */
static struct harness_server *restarting;

static void
restart_under_a_job(const char *name, bool crash)
{
	char port[16], script[512], text[64];
	uint64_t fence, fence_now;
	pid_t pid;

	harness_server_destroy(restarting);   /* one a failed test left */
	restarting = harness_start(NULL);
	snprintf(port, sizeof(port), "%d", restarting->port);
	unlink(path_of("restart.fence"));
	snprintf(script, sizeof(script), "echo $LOCKD_FENCE > %s; sleep 3; "
	    "exit 7", path_of("restart.fence"));
	pid = spawn_lockctl_at(port, path_of("restart.err"), "run", "-l",
	    "3s", name, "--", "/bin/sh", "-c", script, NULL);
	assert_true(harness_wait_for_file(path_of("restart.fence"),
	    RUN_TIMEOUT_MS));
	harness_sleep_ms(20);
	assert_true(harness_read_file(path_of("restart.fence"), text,
	    sizeof(text)));
	fence = strtoull(text, NULL, 10);
	harness_sleep_ms(300);
	if (crash) {
		harness_server_kill(restarting);
		harness_sleep_ms(500);
	} else {
		harness_server_stop(restarting, HARNESS_STOP_TIMEOUT_MS, NULL);
	}
	harness_server_restart(restarting);
	/* Still the job's: another client's TRY finds it held. */
	assert_int_equal(lockctl_at(port, "try", "-l", "10s", name, NULL),
	    EXIT_BUSY);
	assert_true(held_at(port, name, &fence_now, NULL));
	assert_int_equal(fence_now, fence);
	/* The job was not stopped: it ends with its own status... */
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), 7);
	assert_true(harness_read_file(path_of("restart.err"), text,
	    sizeof(text)));
	assert_null(strstr(text, "lost"));
	/* ...and lockctl released the lock then. */
	assert_false(held_at(port, name, NULL, NULL));
	harness_server_destroy(restarting);
	restarting = NULL;
}

static void
test_lockctl_run_survives_a_clean_restart_of_lockd(void **state)
{
	(void)state;
	restart_under_a_job("ctl/restart-clean", false);
}

static void
test_lockctl_run_survives_kill_9_and_restart_of_lockd(void **state)
{
	(void)state;
	restart_under_a_job("ctl/restart-crash", true);
}

static void
test_lockctl_run_kills_the_job_before_the_lease_ends_when_lockd_stays_down(
    void **state)
{
	char port[16], script[256];
	uint64_t fence = 0;
	int64_t gone, ttl = 0, lease_end;
	pid_t pid, child;

	(void)state;
	harness_server_destroy(restarting);
	restarting = harness_start(NULL);
	snprintf(port, sizeof(port), "%d", restarting->port);
	snprintf(script, sizeof(script), "echo $$ > %s; exec sleep 30",
	    path_of("down.pid"));
	pid = spawn_lockctl_at(port, path_of("down.err"), "run", "-l", "3s",
	    "ctl/down", "--", "/bin/sh", "-c", script, NULL);
	child = read_pid(path_of("down.pid"));
	harness_sleep_ms(300);
	harness_server_stop(restarting, HARNESS_STOP_TIMEOUT_MS, NULL);
	gone = wait_gone(child, 5000);
	assert_true(gone > 0);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), EXIT_LOST);
	/*
	 * lockd keeps the lease's expiry across a restart: started again
	 * now, it shows when the lease ends, and the job died before that.
	 */
	harness_server_restart(restarting);
	assert_true(held_at(port, "ctl/down", &fence, &ttl));
	lease_end = harness_now_ms() + ttl;
	if (gone >= lease_end)
		fail_msg("the job died %lld ms after its lease ended",
		    (long long)(gone - lease_end));
	harness_server_destroy(restarting);
	restarting = NULL;
}

static int64_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Kills a writer a failed test left behind, by the pid it wrote down. */
static void
kill_writer(const char *pid_path)
{
	char text[32];

	if (harness_read_file(pid_path, text, sizeof(text)) && atol(text) > 1)
		kill((pid_t)atol(text), SIGKILL);
}

static void
test_lockctl_run_killed_takes_the_whole_job_with_it(void **state)
{
	char script[512];
	lockd_options o = { .port = harness_shared->port,
	    .command_timeout_ms = 5000 };
	lockd_context *c = lockd_connect(&o);
	lockd_lease lease;
	const char *w = path_of("grandchild.w"), *gpid =
	    path_of("grandchild.pid");
	int64_t at_grant;
	pid_t pid;

	(void)state;
	assert_int_equal(c->err, 0);
	/* The job: the command's child does the writing. */
	snprintf(script, sizeof(script), "sh -c \"echo \\$\\$ > %s; while :; "
	    "do date >> %s; sleep 0.05; done\"; true", gpid, w);
	pid = spawn_lockctl(NULL, NULL, "run", "-l", "5s", "ctl/grandchild",
	    "--", "/bin/sh", "-c", script, NULL);
	assert_true(harness_wait_for_file(w, RUN_TIMEOUT_MS));
	assert_true(harness_wait_for_file(gpid, RUN_TIMEOUT_MS));
	kill(pid, SIGKILL);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), 128 + SIGKILL);
	/* A waiter gets the lock only once nothing writes any more. */
	assert_int_equal(lockd_acquire(c, "ctl/grandchild", 5000, 8000,
	    LOCKD_ONCLOSE_RELEASE, &lease), LOCKD_OK);
	at_grant = file_size(w);
	harness_sleep_ms(300);
	if (file_size(w) != at_grant) {
		kill_writer(gpid);
		fail_msg("the grandchild wrote on after the lock passed on");
	}
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
}

static void
test_lockctl_run_stops_what_the_job_left_behind_before_releasing(
    void **state)
{
	char script[512];
	const char *w = path_of("leftover.w"), *gpid =
	    path_of("leftover.pid");
	int64_t at_exit;
	pid_t pid;

	(void)state;
	/* The command ends at once; what it started shrugs off SIGTERM. */
	snprintf(script, sizeof(script), "sh -c \"echo \\$\\$ > %s; trap '' "
	    "TERM; while :; do date >> %s; sleep 0.05; done\" & "
	    "while [ ! -s %s ]; do sleep 0.01; done; exit 3", gpid, w, w);
	pid = spawn_lockctl(NULL, NULL, "run", "-l", "5s", "ctl/leftover",
	    "--", "/bin/sh", "-c", script, NULL);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), 3);
	at_exit = file_size(w);
	assert_false(held("ctl/leftover", NULL));
	harness_sleep_ms(300);
	if (file_size(w) != at_exit) {
		kill_writer(gpid);
		fail_msg("the job's child wrote on after lockctl released");
	}
}

static void
test_lockctl_run_outlives_its_watchdog(void **state)
{
	char script[256], path[64], children[256], *word, *save = NULL;
	pid_t pid, child, watchdog = 0;

	(void)state;
	snprintf(script, sizeof(script), "echo $$ > %s; sleep 0.5",
	    path_of("watched.pid"));
	pid = spawn_lockctl(NULL, NULL, "run", "ctl/watchdog", "--",
	    "/bin/sh", "-c", script, NULL);
	child = read_pid(path_of("watched.pid"));
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if (!harness_read_file(path, children, sizeof(children)))
		skip();
	for (word = strtok_r(children, " \n", &save); word != NULL;
	    word = strtok_r(NULL, " \n", &save))
		if (atol(word) != child)
			watchdog = (pid_t)atol(word);
	assert_true(watchdog > 0);
	/* Someone kills the watchdog: lockctl runs the job to its end. */
	kill(watchdog, SIGKILL);
	assert_int_equal(harness_wait(pid, RUN_TIMEOUT_MS), 0);
	assert_false(held("ctl/watchdog", NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lockctl_ping_prints_pong),
		cmocka_unit_test(test_lockctl_acquire_renew_release_speak_shell),
		cmocka_unit_test(test_lockctl_try_and_acquire_on_a_held_lock),
		cmocka_unit_test(test_lockctl_unreachable_lockd_exits_69),
		cmocka_unit_test(test_lockctl_usage_errors_exit_64),
		cmocka_unit_test(
		    test_lockctl_a_bare_number_is_seconds_in_every_option),
		cmocka_unit_test(test_lockctl_errors_cut_a_long_name),
		cmocka_unit_test(test_lockctl_nodes_on_a_single_lockd),
		cmocka_unit_test(test_lockctl_run_gives_the_command_its_lease),
		cmocka_unit_test(test_lockctl_run_exits_with_the_command_status),
		cmocka_unit_test(
		    test_lockctl_run_on_a_busy_lock_exits_busy_or_the_e_code),
		cmocka_unit_test(test_lockctl_run_waits_for_the_lock_then_runs),
		cmocka_unit_test(
		    test_lockctl_run_keeps_the_lock_across_several_lease_lengths),
		cmocka_unit_test(
		    test_lockctl_run_kills_the_command_before_the_lease_can_end),
		cmocka_unit_test(
		    test_lockctl_run_kills_the_command_when_a_renewal_is_refused),
		cmocka_unit_test(test_lockctl_run_forwards_sigterm_and_sigint),
		cmocka_unit_test(
		    test_lockctl_run_dying_frees_the_lock_and_stops_the_command),
		cmocka_unit_test(test_lockctl_help_goes_to_stdout_and_exits_0),
		cmocka_unit_test(
		    test_lockctl_owner_and_delay_on_acquire_and_try),
		cmocka_unit_test(test_lockctl_list_shows_a_table_and_json),
		cmocka_unit_test(
		    test_lockctl_status_and_list_show_holders_limit_and_mode),
		cmocka_unit_test(
		    test_lockctl_watch_shows_holders_of_a_shared_lock),
		cmocka_unit_test(test_lockctl_force_frees_only_that_fence),
		cmocka_unit_test(test_lockctl_watch_prints_each_change),
		cmocka_unit_test(test_lockctl_run_with_owner_elects_a_leader),
		cmocka_unit_test(
		    test_lockctl_run_takes_flocks_options_and_exit_codes),
		cmocka_unit_test(
		    test_lockctl_run_survives_a_clean_restart_of_lockd),
		cmocka_unit_test(
		    test_lockctl_run_survives_kill_9_and_restart_of_lockd),
		cmocka_unit_test(
		    test_lockctl_run_kills_the_job_before_the_lease_ends_when_lockd_stays_down),
		cmocka_unit_test(
		    test_lockctl_run_killed_takes_the_whole_job_with_it),
		cmocka_unit_test(
		    test_lockctl_run_stops_what_the_job_left_behind_before_releasing),
		cmocka_unit_test(test_lockctl_run_outlives_its_watchdog),
		cmocka_unit_test(
		    test_lockctl_run_dying_terms_the_job_before_killing_it),
		cmocka_unit_test(
		    test_lockctl_limit_and_shared_on_try_and_acquire),
		cmocka_unit_test(
		    test_lockctl_run_with_a_limit_runs_that_many_at_once),
		cmocka_unit_test(test_lockctl_run_shared_runs_readers_together),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, setup, teardown);
}
