/*
 * test_lifecycle.c - integration tests of lockd as a process, the part of
 * protocol-v1.md headed "Running the daemon": a clean stop on SIGTERM or
 * SIGINT, one instance per data directory, bad flags, --help and
 * --version, the Unix socket listener and the config file.
 *
 * lockd runs here as a child process (tests/lib/harness.c), either as a
 * server or to completion with its output captured.  This file checks exit codes,
 * messages and behaviour on the wire only; it includes nothing of daemon/.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

/* How long a clean stop of idle, reading clients may take. */
#define PROMPT_STOP_MS 1500
/* How long a refusal to start may take. */
#define PROMPT_EXIT_MS (2000 * harness_slow())

static void
stop_answers_waiters_shutdown_and_exits_zero(int sig)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_conn *idle = harness_connect(s);
	int64_t elapsed;

	harness_try(holder, "stop", 10000, NULL);
	harness_send(waiter, "ACQUIRE stop\nPING\n");
	harness_await_queue(holder, "stop", 1);
	harness_send(idle, "PING\n");
	harness_expect_line(idle, "PONG");

	assert_int_equal(harness_server_stop_signal(s, sig,
	    HARNESS_STOP_TIMEOUT_MS, &elapsed), 0);
	if (elapsed > PROMPT_STOP_MS)
		fail_msg("lockd took %lld ms to stop", (long long)elapsed);
	/* The waiter is told, its later request still answered in order,
	 * then every connection closes. */
	harness_expect_error(waiter, "SHUTDOWN");
	harness_expect_line(waiter, "PONG");
	harness_expect_eof(waiter, HARNESS_REPLY_TIMEOUT_MS);
	harness_expect_eof(holder, HARNESS_REPLY_TIMEOUT_MS);
	harness_expect_eof(idle, HARNESS_REPLY_TIMEOUT_MS);
}

static void
test_lifecycle_sigterm_answers_waiters_shutdown_and_exits_zero(void **state)
{
	(void)state;
	stop_answers_waiters_shutdown_and_exits_zero(SIGTERM);
}

static void
test_lifecycle_sigint_stops_the_same_way(void **state)
{
	(void)state;
	stop_answers_waiters_shutdown_and_exits_zero(SIGINT);
}

/*
 * The last connection closes within the signal's own pass: a waiter behind
 * QUIT is answered SHUTDOWN, then BYE, and its connection closes at once,
 * before the stop has set anything else up.  lockd still exits 0.
 */
static void
test_lifecycle_stop_when_the_last_client_quit_behind_a_waiter(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);

	(void)state;
	/* A keep lease whose holder goes away: the waiter's connection is
	 * the only one left. */
	harness_try(holder, "r/x", 20000, NULL);
	harness_close(holder);
	harness_send(waiter, "ACQUIRE r/x\nQUIT\n");
	{
		struct harness_conn *probe = harness_connect(s);
		harness_await_queue(probe, "r/x", 1);
		harness_close(probe);
	}
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
	harness_expect_error(waiter, "SHUTDOWN");
	harness_expect_line(waiter, "BYE");
	harness_expect_eof(waiter, HARNESS_REPLY_TIMEOUT_MS);
}

/*
 * A lease that expired while lockd was down is reclaimed at the start, and
 * its log line tells the time it was held (at least its lease: the record
 * keeps its last grant or renewal) and names it so that no byte of the
 * name can pass for log syntax or reach a terminal raw.
 */
static void
test_lifecycle_reclaim_log_escapes_the_name_and_tells_the_hold(void **state)
{
	static char log[65536];
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	const char *line, *held;
	FILE *f;
	size_t n;

	(void)state;
	/* caf\xc3\xa9=x"q\y, as a client may name a lock. */
	harness_send(c, "TRY caf\xc3\xa9=x\"q\\y lease=300\n");
	harness_expect_prefix(c, "GRANTED ");
	harness_server_kill(s);
	harness_sleep_ms(500);
	harness_server_restart(s);
	f = fopen(s->log_path, "r");
	assert_non_null(f);
	n = fread(log, 1, sizeof(log) - 1, f);
	fclose(f);
	log[n] = '\0';
	line = strstr(log, "event=reclaim ");
	if (line == NULL)
		fail_msg("no reclaim logged at the restart");
	if (strncmp(strstr(line, "name="),
	    "name=\"caf\\xc3\\xa9=x\\\"q\\\\y\" ", 27) != 0)
		fail_msg("the name is not escaped: %.*s",
		    (int)strcspn(line, "\n"), line);
	held = strstr(line, "held_ms=");
	assert_non_null(held);
	if (atoll(held + 8) < 300)
		fail_msg("a lease of 300 ms reclaimed after a restart was "
		    "held %lld ms", atoll(held + 8));
}

static void
test_lifecycle_second_lockd_on_a_data_dir_refuses_to_start(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_run_result r;

	(void)state;
	harness_try(c, "mine", 10000, NULL);
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0",
	    "--data-dir", s->data_dir, NULL);
	if (r.timed_out)
		fail_msg("a second lockd started on %s", s->data_dir);
	assert_true(r.exit_code > 0);
	if (strstr(r.err, s->data_dir) == NULL)
		fail_msg("the refusal does not name the directory: '%s'",
		    r.err);
	/* The first one is undisturbed. */
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_send(c, "STATUS mine\n");
	harness_expect_prefix(c, "STATUS mine held=1 ");
}

static void
test_lifecycle_state_directory_is_the_default_data_dir(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_run_result r;

	(void)state;
	/* Shown by the refusal of a second lockd that was given no
	 * --data-dir, only systemd's STATE_DIRECTORY. */
	setenv("STATE_DIRECTORY", s->data_dir, 1);
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0", NULL);
	unsetenv("STATE_DIRECTORY");
	if (r.timed_out)
		fail_msg("lockd ignored STATE_DIRECTORY=%s", s->data_dir);
	assert_true(r.exit_code > 0);
	assert_non_null(strstr(r.err, s->data_dir));
}

struct bad_flags {
	const char *args[3];
	const char *named;       /* what the message must mention */
};

static void
test_lifecycle_bad_flag_exits_nonzero_with_one_line_naming_it(void **state)
{
	static const struct bad_flags bad[] = {
		{ { "--bogus", NULL, NULL }, "--bogus" },
		{ { "--bogus=1", NULL, NULL }, "--bogus" },
		{ { "stray", NULL, NULL }, "stray" },
		{ { "--max-lease", "abc", NULL }, "max-lease" },
		{ { "--max-lease", "-5s", NULL }, "max-lease" },
		{ { "--max-lease", "0", NULL }, "max-lease" },
		{ { "--default-lease", "10m", NULL }, "default-lease" },
		{ { "--default-lease", "1.5s", NULL }, "default-lease" },
		{ { "--max-connections", "lots", NULL }, "max-connections" },
		{ { "--max-line", "12x", NULL }, "max-line" },
		{ { "--log-level", "loud", NULL }, "log-level" },
		{ { "--listen", "nonsense", NULL }, "listen" },
		{ { "--max-line", NULL, NULL }, "max-line" },
		{ { "--config", "/nonexistent/lockd.conf", NULL }, "config" },
	};
	const char *dir = harness_tempdir();
	char data_dir[128];
	size_t i;

	(void)state;
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct harness_run_result r;
		const char *nl;

		/* A valid listener and data directory come first, so only the
		 * bad flag can make it fail. */
		harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0",
		    "--data-dir", data_dir, bad[i].args[0], bad[i].args[1],
		    bad[i].args[2]);
		if (r.timed_out)
			fail_msg("lockd %s %s: started instead of refusing",
			    bad[i].args[0], bad[i].args[1] ? bad[i].args[1] :
			    "");
		if (r.exit_code <= 0)
			fail_msg("lockd %s %s: exit code %d", bad[i].args[0],
			    bad[i].args[1] ? bad[i].args[1] : "", r.exit_code);
		nl = strchr(r.err, '\n');
		if (nl == NULL || nl[1] != '\0')
			fail_msg("lockd %s: not one line on stderr: '%s'",
			    bad[i].args[0], r.err);
		if (strstr(r.err, bad[i].named) == NULL)
			fail_msg("lockd %s: message does not name %s: '%s'",
			    bad[i].args[0], bad[i].named, r.err);
	}
}

/*
 * An address that parses as HOST:PORT but is no IP address is as bad a
 * value as any: one line naming --listen, before anything is opened.
 */
static void
test_lifecycle_unusable_listen_address_exits_with_one_line_naming_it(
    void **state)
{
	const char *dir = harness_tempdir();
	struct harness_run_result r;
	char data_dir[128];
	const char *nl;

	(void)state;
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "999.1.1.1:0",
	    "--data-dir", data_dir, NULL);
	assert_false(r.timed_out);
	assert_true(r.exit_code > 0);
	nl = strchr(r.err, '\n');
	if (nl == NULL || nl[1] != '\0' || strstr(r.err, "--listen") == NULL)
		fail_msg("--listen 999.1.1.1:0: expected one line naming "
		    "--listen on stderr, got:\n%s", r.err);
}

static void
test_lifecycle_help_and_version_exit_zero(void **state)
{
	struct harness_run_result r;

	(void)state;
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--help", NULL);
	assert_false(r.timed_out);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.out, "--listen"));
	assert_non_null(strstr(r.out, "--data-dir"));
	assert_non_null(strstr(r.out, "--max-lease"));

	harness_run_lockd(&r, PROMPT_EXIT_MS, "--version", NULL);
	assert_false(r.timed_out);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(strncmp(r.out, "lockd ", 6), 0);
}

static void
test_lifecycle_unix_socket_serves_the_same_locks(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_conn *u, *t;
	struct harness_grant g;

	(void)state;
	harness_server_start(s, "--unix", s->unix_path, NULL);
	u = harness_connect_unix(s->unix_path);
	t = harness_connect(s);
	harness_send(u, "PING\n");
	harness_expect_line(u, "PONG");
	harness_try(u, "over-unix", 10000, &g);
	harness_send(t, "STATUS over-unix\n");
	harness_expect_prefix(t, "STATUS over-unix held=1 ");
	harness_send(t, "RELEASE over-unix %s\n", g.handle);
	harness_expect_line(t, "RELEASED over-unix");
}

/* Writes text to dir/name; returns the path. */
static const char *
write_config(const char *dir, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/lockd.conf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void
test_lifecycle_config_file_is_honoured(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_conn *c;
	struct harness_grant g;
	const char *path = write_config(s->dir,
	    "# lockd test settings\n"
	    "\n"
	    "max-lease = 2s\n"
	    "default-lease=1500\n");

	(void)state;
	harness_server_start(s, "--config", path, NULL);
	c = harness_connect(s);
	harness_send(c, "ACQUIRE conf-a lease=10s\n");
	harness_expect_granted(c, "conf-a", &g);
	assert_int_equal(g.lease_ms, 2000);
	harness_send(c, "ACQUIRE conf-b\n");
	harness_expect_granted(c, "conf-b", &g);
	assert_int_equal(g.lease_ms, 1500);
}

/*
 * The spec caps a lease above the maximum; the default lease (30 s unless
 * set) is a lease like any other, so a maximum below it caps it rather than
 * making lockd refuse to start.
 */
static void
test_lifecycle_max_lease_below_the_default_caps_the_default(
    void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_server *t;
	struct harness_conn *c;
	struct harness_grant g;
	const char *path = write_config(s->dir, "max-lease = 2s\n");

	(void)state;
	harness_server_start(s, "--config", path, NULL);
	c = harness_connect(s);
	harness_send(c, "ACQUIRE alone-a lease=10s\n");
	harness_expect_granted(c, "alone-a", &g);
	assert_int_equal(g.lease_ms, 2000);
	harness_send(c, "ACQUIRE alone-b\n");
	harness_expect_granted(c, "alone-b", &g);
	assert_int_equal(g.lease_ms, 2000);

	t = harness_start("--max-lease", "2s", NULL);
	c = harness_connect(t);
	harness_send(c, "ACQUIRE alone-c\n");
	harness_expect_granted(c, "alone-c", &g);
	assert_int_equal(g.lease_ms, 2000);
}

static void
test_lifecycle_config_file_with_an_unknown_key_is_refused(void **state)
{
	const char *dir = harness_tempdir();
	const char *path = write_config(dir,
	    "default-lease = 2s\nno-such-key = 1\n");
	struct harness_run_result r;
	char data_dir[128];
	const char *nl;

	(void)state;
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0",
	    "--data-dir", data_dir, "--config", path, NULL);
	if (r.timed_out)
		fail_msg("lockd started with an unknown config key");
	assert_true(r.exit_code > 0);
	nl = strchr(r.err, '\n');
	if (nl == NULL || nl[1] != '\0' || strstr(r.err, "no-such-key") == NULL)
		fail_msg("expected one line naming no-such-key, got '%s'",
		    r.err);
}

/*
 * A '#' after whitespace starts a comment anywhere on a line, as in the
 * sample lockd.conf's style; a '#' inside a value stays part of it.
 */
static void
test_lifecycle_config_file_takes_trailing_comments(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_conn *c;
	struct harness_grant g;
	char sock[160], text[512];
	const char *path;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/s#1", s->dir);
	snprintf(text, sizeof(text),
	    "max-lease = 2s   # short, for the test\n"
	    "default-lease=1500\t# in ms\n"
	    "unix = %s # a '#' inside a value stays\n", sock);
	path = write_config(s->dir, text);
	harness_server_start(s, "--config", path, NULL);
	c = harness_connect(s);
	harness_send(c, "ACQUIRE conf-a lease=10s\n");
	harness_expect_granted(c, "conf-a", &g);
	assert_int_equal(g.lease_ms, 2000);
	harness_send(c, "ACQUIRE conf-b\n");
	harness_expect_granted(c, "conf-b", &g);
	assert_int_equal(g.lease_ms, 1500);
	c = harness_connect_unix(sock);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
}

/* Every error about a value from the config file names FILE:LINE. */
static void
test_lifecycle_config_file_errors_name_file_and_line(void **state)
{
	static const struct {
		const char *text;
		const char *where;
	} bad[] = {
		{ "# x\nmax-lease = 5x\n", ":2: max-lease" },
		{ "\n\nmax-lease=1s\ndefault-lease 2s # too long\n",
		  ":4: default-lease" },
		{ "max-line = 12\n", ":1: max-line" },
		{ "journal-size = 1024\n", ":1: journal-size" },
		{ "metrics-listen = 999.1.1.1:0\n", ":1: metrics-listen" },
		{ "unix-mode = 0999\n", ":1: unix-mode" },
		{ "log-level = info\nlisten\n", ":2: expected key = value" },
	};
	const char *dir = harness_tempdir(), *path, *nl;
	struct harness_run_result r;
	char data_dir[128], want[300];
	size_t i;

	(void)state;
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = write_config(dir, bad[i].text);
		harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "127.0.0.1:0",
		    "--data-dir", data_dir, "--config", path, NULL);
		if (r.timed_out)
			fail_msg("lockd started with config '%s'", bad[i].text);
		assert_int_equal(r.exit_code, 2);
		snprintf(want, sizeof(want), "%s%s", path, bad[i].where);
		nl = strchr(r.err, '\n');
		if (nl == NULL || nl[1] != '\0' || strstr(r.err, want) == NULL)
			fail_msg("config '%s': expected one line with '%s', "
			    "got '%s'", bad[i].text, want, r.err);
	}
}

/* --data-dir a/b/c makes every missing level, like mkdir -p; the last
 * one, which holds the handle secrets, 0700. */
static void
test_lifecycle_data_dir_is_made_with_its_parents(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_conn *c;
	struct stat st;
	char deep[200];

	(void)state;
	snprintf(deep, sizeof(deep), "%s/a/b/c", s->data_dir);
	harness_server_start(s, "--data-dir", deep, NULL);
	c = harness_connect(s);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	assert_int_equal(stat(deep, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
}

static unsigned
socket_mode(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	return (unsigned)(st.st_mode & 07777);
}

/* The Unix socket's mode is 0660 unless --unix-mode says otherwise,
 * whatever the umask. */
static void
test_lifecycle_unix_socket_mode_is_set(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_server *t = harness_server_new();
	struct harness_conn *c;

	(void)state;
	harness_server_start(s, "--unix", s->unix_path, NULL);
	assert_int_equal(socket_mode(s->unix_path), 0660);
	harness_server_start(t, "--unix", t->unix_path, "--unix-mode",
	    "0606", NULL);
	assert_int_equal(socket_mode(t->unix_path), 0606);
	c = harness_connect_unix(t->unix_path);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
}

/*
 * A stale socket left by a killed lockd is replaced, but a live one
 * (another lockd on another data directory, or systemd's socket unit) is
 * never taken over: the second lockd refuses to start and the first keeps
 * serving on its path.
 */
static void
test_lifecycle_a_live_unix_socket_is_not_taken_over(void **state)
{
	struct harness_server *s = harness_server_new();
	const char *dir = harness_tempdir();
	struct harness_run_result r;
	struct harness_conn *c;
	char data_dir[128];

	(void)state;
	harness_server_start(s, "--unix", s->unix_path, NULL);
	snprintf(data_dir, sizeof(data_dir), "%s/data", dir);
	harness_run_lockd(&r, PROMPT_EXIT_MS, "--listen", "none", "--unix",
	    s->unix_path, "--data-dir", data_dir, NULL);
	if (r.timed_out)
		fail_msg("a second lockd started on a live socket's path");
	assert_int_not_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err, "cannot listen"));
	c = harness_connect_unix(s->unix_path);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");

	/* Killed, it leaves the socket file behind: the next run takes it. */
	harness_server_kill(s);
	assert_int_equal(socket_mode(s->unix_path), 0660);
	harness_server_restart(s);
	c = harness_connect_unix(s->unix_path);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_lifecycle_sigterm_answers_waiters_shutdown_and_exits_zero),
		HARNESS_TEST(test_lifecycle_sigint_stops_the_same_way),
		HARNESS_TEST(
		    test_lifecycle_stop_when_the_last_client_quit_behind_a_waiter),
		HARNESS_TEST(
		    test_lifecycle_reclaim_log_escapes_the_name_and_tells_the_hold),
		HARNESS_TEST(
		    test_lifecycle_second_lockd_on_a_data_dir_refuses_to_start),
		HARNESS_TEST(
		    test_lifecycle_state_directory_is_the_default_data_dir),
		HARNESS_TEST(
		    test_lifecycle_bad_flag_exits_nonzero_with_one_line_naming_it),
		HARNESS_TEST(
		    test_lifecycle_unusable_listen_address_exits_with_one_line_naming_it),
		HARNESS_TEST(test_lifecycle_help_and_version_exit_zero),
		HARNESS_TEST(test_lifecycle_unix_socket_serves_the_same_locks),
		HARNESS_TEST(test_lifecycle_config_file_is_honoured),
		HARNESS_TEST(
		    test_lifecycle_max_lease_below_the_default_caps_the_default),
		HARNESS_TEST(
		    test_lifecycle_config_file_with_an_unknown_key_is_refused),
		HARNESS_TEST(test_lifecycle_config_file_takes_trailing_comments),
		HARNESS_TEST(
		    test_lifecycle_config_file_errors_name_file_and_line),
		HARNESS_TEST(test_lifecycle_data_dir_is_made_with_its_parents),
		HARNESS_TEST(test_lifecycle_unix_socket_mode_is_set),
		HARNESS_TEST(
		    test_lifecycle_a_live_unix_socket_is_not_taken_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
