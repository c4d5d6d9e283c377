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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "tests/client/harness.h"

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
	harness_temp_dir(work, sizeof(work));
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
lockctl_argv(const char **argv, const char *first, va_list ap)
{
	size_t n = 0;
	const char *arg;

	argv[n++] = harness_program("lockctl");
	argv[n++] = "-p";
	argv[n++] = harness_shared_port;
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
	lockctl_argv(argv, first, ap);
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
	lockctl_argv(argv, first, ap);
	va_end(ap);
	return harness_spawn((char *const *)argv, out_path, err_path);
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
held(const char *name, uint64_t *fence)
{
	unsigned long long f;
	int h;

	assert_int_equal(lockctl("status", name, NULL), 0);
	if (sscanf(out, "held=%d fence=%llu", &h, &f) != 2)
		fail_msg("not a status: '%s'", out);
	if (fence != NULL)
		*fence = f;
	return h == 1;
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
	    harness_shared.unix_path, "ping", NULL };

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
	assert_non_null(strstr(out, "run [-n | -w WAIT]"));

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
	assert_int_equal(lockctl("run", "-n", "-w", "1s", "a", "--", "true",
	    NULL), EXIT_USAGE);
	assert_int_equal(lockctl("run", "-E", "300", "a", "--", "true", NULL),
	    EXIT_USAGE);
	assert_int_equal(lockctl("run", "-x", "a", "--", "true", NULL),
	    EXIT_USAGE);
	/* A usage error never took the lock. */
	assert_false(held("a", NULL));
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
	assert_int_equal(lockctl("run", "-n", "ctl/run-busy", "--", "/bin/sh",
	    "-c", "echo ran", NULL), EXIT_BUSY);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "held"));
	assert_int_equal(lockctl("run", "-n", "-E", "42", "ctl/run-busy",
	    "--", "/bin/sh", "-c", "echo ran", NULL), 42);
	assert_int_equal(lockctl("run", "-w", "300ms", "ctl/run-busy", "--",
	    "/bin/sh", "-c", "echo ran", NULL), EXIT_WAIT_TIMEOUT);
	assert_string_equal(out, "");
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
	lockd_options o = { .port = harness_shared.port, .command_timeout_ms = 5000 };
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
	harness_server_pause(&harness_shared);
	stopped = harness_now_ms();
	gone_a = wait_gone(pa, 3000);
	gone_b = wait_gone(pb, 3000);
	assert_int_equal(harness_wait(a, RUN_TIMEOUT_MS), EXIT_LOST);
	assert_int_equal(harness_wait(b, RUN_TIMEOUT_MS), EXIT_LOST);
	harness_server_resume(&harness_shared);

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lockctl_ping_prints_pong),
		cmocka_unit_test(test_lockctl_acquire_renew_release_speak_shell),
		cmocka_unit_test(test_lockctl_try_and_acquire_on_a_held_lock),
		cmocka_unit_test(test_lockctl_unreachable_lockd_exits_69),
		cmocka_unit_test(test_lockctl_usage_errors_exit_64),
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
	};

	harness_begin();
	return cmocka_run_group_tests(tests, setup, teardown);
}
