/*
 * test_auth.c - integration tests of --auth on the wire: AUTH and AUTHED,
 * ERR DENIED for every command with and without its permission on names
 * inside and outside the prefix (and that a denied command changed
 * nothing), a token with one byte changed, AUTH guessing bounded per
 * connection, the Unix socket's peer uid as principal, STATS needing
 * admin, and SIGHUP with a broken file and with a good one.
 *
 * It includes nothing of daemon/: the auth file holds hashes computed
 * once with sha256sum.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

/* printf '%s' s3cret | sha256sum, and likewise t0ken. */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define HASH_T0KEN \
	"b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"

static void
write_auth(const struct harness_server *s, const char *text, char *path,
    size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/auth", s->dir);
	if ((f = fopen(path, "w")) == NULL)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

static struct harness_server *
start_with_auth(const char *text)
{
	struct harness_server *s = harness_server_new();
	char path[HARNESS_PATH_MAX];

	write_auth(s, text, path, sizeof(path));
	harness_server_start(s, "--auth", path, "--unix", s->unix_path, NULL);
	return s;
}

static const char rules[] =
    "alice " HASH_S3CRET " lock app/\n"
    "alice - read app/\n"
    "alice - read pub/\n"
    "bob " HASH_T0KEN " admin,read ops/\n";

static void
test_auth_unauthenticated_may_only_ping_help_quit_and_auth(void **state)
{
	struct harness_server *s = start_with_auth(rules);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *a = harness_connect(s);
	struct harness_status st;
	struct harness_grant g;

	(void)state;
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_send(c, "HELP\n");
	harness_expect_prefix(c, "HELP commands:");
	harness_send(c, "ACQUIRE app/x\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "TRY app/x\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "RENEW app/x 1-0000000000000000\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "RELEASE app/x 1-0000000000000000\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "STATUS app/x\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "STATS\n");
	harness_expect_error(c, "DENIED");
	/* A malformed line is still told what is wrong with it. */
	harness_send(c, "ACQUIRE\n");
	harness_expect_error(c, "BADREQ");
	harness_send(c, "ACQUIRE app/x lease=-1\n");
	harness_expect_error(c, "BADARG");

	/* Nothing of that changed anything: the name is free. */
	harness_send(a, "AUTH s3cret\n");
	harness_expect_line(a, "AUTHED alice");
	harness_try(a, "app/x", 0, &g);
	assert_int_equal(g.fence, 1);
	harness_status(a, "app/x", &st);
	assert_true(st.held);
	harness_send(c, "QUIT\n");
	harness_expect_line(c, "BYE");
}

static void
test_auth_every_command_is_judged_by_its_permission_and_prefix(void **state)
{
	struct harness_server *s = start_with_auth(rules);
	struct harness_conn *a = harness_connect(s);
	struct harness_conn *b = harness_connect(s);
	struct harness_status st;
	struct harness_grant g;
	char line[128];

	(void)state;
	harness_send(a, "AUTH s3cret\n");
	harness_expect_line(a, "AUTHED alice");
	harness_send(b, "AUTH t0ken\n");
	harness_expect_line(b, "AUTHED bob");

	/* alice: lock and read on app/, read only on pub/. */
	harness_send(a, "ACQUIRE app/a\n");
	harness_expect_granted(a, "app/a", &g);
	snprintf(line, sizeof(line), "RENEW app/a %s\n", g.handle);
	harness_send(a, "%s", line);
	harness_expect_prefix(a, "RENEWED app/a");
	harness_status(a, "app/a", &st);
	assert_true(st.held);
	harness_status(a, "pub/a", &st);
	assert_false(st.held);
	harness_send(a, "ACQUIRE pub/a\n");
	harness_expect_error(a, "DENIED");
	harness_send(a, "TRY pub/a\n");
	harness_expect_error(a, "DENIED");
	harness_send(a, "ACQUIRE ops/a\n");
	harness_expect_error(a, "DENIED");
	harness_send(a, "STATUS ops/a\n");
	harness_expect_error(a, "DENIED");
	/* A prefix is bytes: "ap" is not inside "app/". */
	harness_send(a, "TRY ap\n");
	harness_expect_error(a, "DENIED");
	harness_send(a, "STATS\n");
	harness_expect_error(a, "DENIED");

	/* bob: admin and read on ops/, no lock anywhere.  His RELEASE of
	 * alice's lock with her own handle is denied and changes nothing. */
	harness_send(b, "STATS\n");
	harness_expect_prefix(b, "STATS ");
	snprintf(line, sizeof(line), "RELEASE app/a %s\n", g.handle);
	harness_send(b, "%s", line);
	harness_expect_error(b, "DENIED");
	harness_send(b, "STATUS app/a\n");
	harness_expect_error(b, "DENIED");
	harness_status(a, "app/a", &st);
	assert_true(st.held);
	assert_int_equal(st.fence, g.fence);
	harness_send(b, "TRY ops/a\n");
	harness_expect_error(b, "DENIED");
	harness_status(b, "ops/a", &st);
	assert_false(st.held);

	harness_send(a, "%s", line);
	harness_expect_line(a, "RELEASED app/a");
}

static void
test_auth_changed_byte_fails_and_guessing_closes_the_connection(
    void **state)
{
	struct harness_server *s = start_with_auth(rules);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *d = harness_connect(s);
	struct harness_grant g;

	(void)state;
	harness_send(c, "AUTH s3creT\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "AUTH s3cre\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "TRY app/x\n");
	harness_expect_error(c, "DENIED");
	/* The third failure is answered, then the connection closes. */
	harness_send(c, "AUTH s3cret1\n");
	harness_expect_error(c, "DENIED");
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);

	/* A failed AUTH leaves an authenticated connection as it was. */
	harness_send(d, "AUTH s3cret\n");
	harness_expect_line(d, "AUTHED alice");
	harness_send(d, "AUTH nope\n");
	harness_expect_error(d, "DENIED");
	harness_try(d, "app/x", 0, &g);
	/* And AUTH switches it to another principal. */
	harness_send(d, "AUTH t0ken\n");
	harness_expect_line(d, "AUTHED bob");
	harness_send(d, "TRY app/y\n");
	harness_expect_error(d, "DENIED");
}

static void
test_auth_unix_peer_is_its_uid(void **state)
{
	struct harness_server *s = harness_server_new();
	struct harness_conn *u, *t;
	char text[512], path[HARNESS_PATH_MAX];
	struct harness_grant g;

	(void)state;
	snprintf(text, sizeof(text), "uid:%u - lock,read app/\n"
	    "alice " HASH_S3CRET " lock own/\n", (unsigned)getuid());
	write_auth(s, text, path, sizeof(path));
	harness_server_start(s, "--auth", path, "--unix", s->unix_path, NULL);

	u = harness_connect_unix(s->unix_path);
	harness_try(u, "app/u", 0, &g);
	harness_send(u, "TRY own/u\n");
	harness_expect_error(u, "DENIED");
	/* AUTH switches a uid connection to the token's principal. */
	harness_send(u, "AUTH s3cret\n");
	harness_expect_line(u, "AUTHED alice");
	harness_try(u, "own/u", 0, &g);
	harness_send(u, "TRY app/v\n");
	harness_expect_error(u, "DENIED");

	/* TCP gets no uid. */
	t = harness_connect(s);
	harness_send(t, "TRY app/w\n");
	harness_expect_error(t, "DENIED");
}

static void
test_auth_is_badreq_when_authentication_is_off(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;

	(void)state;
	harness_send(c, "AUTH s3cret\n");
	harness_expect_error(c, "BADREQ");
	harness_try(c, "any/x", 0, &g);
}

static void
wait_for_log(const struct harness_server *s, const char *needle)
{
	int64_t deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;

	while (!harness_log_contains(s, needle)) {
		if (harness_now_ms() >= deadline)
			fail_msg("the log never said %s", needle);
		harness_sleep_ms(10);
	}
}

static void
test_auth_sighup_keeps_old_rules_on_a_broken_file_and_takes_a_good_one(
    void **state)
{
	struct harness_server *s = start_with_auth(rules);
	struct harness_conn *a = harness_connect(s);
	struct harness_conn *b;
	char path[HARNESS_PATH_MAX];
	struct harness_grant g;

	(void)state;
	harness_send(a, "AUTH s3cret\n");
	harness_expect_line(a, "AUTHED alice");

	/* One bad line anywhere: all of the old rules stay. */
	write_auth(s, "alice " HASH_S3CRET " lock other/\n"
	    "bob nothex admin ops/\n", path, sizeof(path));
	kill(s->pid, SIGHUP);
	wait_for_log(s, "event=auth_reload_error");
	assert_true(harness_log_contains(s, "line 2"));
	harness_try(a, "app/1", 0, &g);
	harness_send(a, "TRY other/1\n");
	harness_expect_error(a, "DENIED");

	/* A good file: the same connection is judged by it from its next
	 * command on, and bob's token is gone (his line takes no token).
	 * The log says what was loaded: 3 lines of 2 principals. */
	write_auth(s, "alice " HASH_S3CRET " lock other/\n"
	    "alice " HASH_S3CRET " read app/\n"
	    "bob - lock ops/\n", path, sizeof(path));
	kill(s->pid, SIGHUP);
	wait_for_log(s, "event=auth_reloaded");
	if (!harness_log_contains(s, " rules=3 principals=2"))
		fail_msg("auth_reloaded does not say rules=3 principals=2 "
		    "(%s)", s->log_path);
	harness_try(a, "other/1", 0, &g);
	harness_send(a, "TRY app/2\n");
	harness_expect_error(a, "DENIED");
	b = harness_connect(s);
	harness_send(b, "AUTH t0ken\n");
	harness_expect_error(b, "DENIED");
	harness_send(b, "PING\n");
	harness_expect_line(b, "PONG");
}

static void
test_auth_bad_file_at_start_exits_naming_the_line(void **state)
{
	struct harness_run_result r;
	char path[HARNESS_PATH_MAX + 8], dir[HARNESS_PATH_MAX];
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s", harness_tempdir());
	snprintf(path, sizeof(path), "%s/auth", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("alice - lock app/\nalice - lock,write app/\n", f);
	fclose(f);
	harness_run_lockd(&r, HARNESS_STOP_TIMEOUT_MS, "--listen",
	    "127.0.0.1:0", "--data-dir", dir, "--auth", path, NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "line 2: permissions"));
}

/*
 * A client can fail AUTH at will: the log writes at most LOG_LIMIT_LINES
 * of those lines a second and counts the rest, so that every failure is
 * accounted for in lines written plus suppressed=N.
 */
static void
test_auth_failures_flood_the_log_no_faster_than_its_limit(void **state)
{
	struct harness_server *s = start_with_auth(rules);
	static char log[1 << 20];
	struct harness_conn *c;
	unsigned long long suppressed = 0, n;
	const char *p;
	int i, lines = 0;

	(void)state;
	for (i = 0; i < 30; i++) {
		c = harness_connect(s);
		harness_send(c, "AUTH bad%d\n", i);
		harness_expect_error(c, "DENIED");
		harness_close(c);
	}
	harness_sleep_ms(1100);   /* the next window */
	c = harness_connect(s);
	harness_send(c, "AUTH last\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");

	assert_true(harness_read_file(s->log_path, log, sizeof(log)));
	for (p = log; (p = strstr(p, "event=auth_failed")) != NULL; p++) {
		const char *eol = strchr(p, '\n'), *sup = strstr(p,
		    "suppressed=");

		lines++;
		if (sup != NULL && (eol == NULL || sup < eol) &&
		    sscanf(sup, "suppressed=%llu", &n) == 1)
			suppressed += n;
	}
	if (lines >= 31 || lines + suppressed != 31)
		fail_msg("%d auth_failed lines and %llu suppressed for 31 "
		    "failures", lines, suppressed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_auth_unauthenticated_may_only_ping_help_quit_and_auth),
		HARNESS_TEST(
		    test_auth_every_command_is_judged_by_its_permission_and_prefix),
		HARNESS_TEST(
		    test_auth_changed_byte_fails_and_guessing_closes_the_connection),
		HARNESS_TEST(test_auth_unix_peer_is_its_uid),
		HARNESS_TEST(test_auth_is_badreq_when_authentication_is_off),
		HARNESS_TEST(
		    test_auth_sighup_keeps_old_rules_on_a_broken_file_and_takes_a_good_one),
		HARNESS_TEST(test_auth_bad_file_at_start_exits_naming_the_line),
		HARNESS_TEST(
		    test_auth_failures_flood_the_log_no_faster_than_its_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
