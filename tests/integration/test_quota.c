/*
 * test_quota.c - integration tests of the per-principal limits
 * (--max-held-per-principal, --max-waiters-per-principal,
 * --max-connections-per-principal) through the real daemon: one principal
 * fills its share and is answered ERR LIMIT naming the limit, and another
 * principal still gets locks.
 *
 * Principals come from tokens (AUTH) and from the Unix socket's peer uid;
 * the auth file holds hashes computed once with sha256sum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

/* printf '%s' s3cret | sha256sum, and likewise t0ken. */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define HASH_T0KEN \
	"b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"

/* Attempts, 20 ms apart, while lockd notices that a connection closed. */
#define CLOSE_SEEN_TRIES 100

static struct harness_server *
start_quota(const char *flag, const char *value)
{
	struct harness_server *s = harness_server_new();
	char path[HARNESS_PATH_MAX], text[512];
	FILE *f;

	snprintf(text, sizeof(text),
	    "alice " HASH_S3CRET " lock,read app/\n"
	    "bob " HASH_T0KEN " lock,read,admin app/\n"
	    "uid:%u - lock app/\n", (unsigned)getuid());
	snprintf(path, sizeof(path), "%s/auth", s->dir);
	if ((f = fopen(path, "w")) == NULL)
		fail_msg("cannot write %s", path);
	fputs(text, f);
	fclose(f);
	harness_server_start(s, "--auth", path, "--unix", s->unix_path,
	    flag, value, NULL);
	return s;
}

static struct harness_conn *
connect_as(struct harness_server *s, const char *token, const char *who)
{
	struct harness_conn *c = harness_connect(s);
	char want[64];

	snprintf(want, sizeof(want), "AUTHED %s", who);
	harness_send(c, "AUTH %s\n", token);
	harness_expect_line(c, want);
	return c;
}

static void
expect_limit(struct harness_conn *c, const char *text)
{
	const char *line = harness_expect_error(c, "LIMIT");

	if (strstr(line, text) == NULL)
		fail_msg("'%s' does not say '%s'", line, text);
}

static void
test_quota_held_locks_are_counted_per_principal(void **state)
{
	struct harness_server *s = start_quota("--max-held-per-principal",
	    "2");
	struct harness_conn *a = connect_as(s, "s3cret", "alice");
	struct harness_conn *b = connect_as(s, "t0ken", "bob");
	struct harness_conn *a2 = connect_as(s, "s3cret", "alice");
	struct harness_grant g1, g2, g;

	(void)state;
	harness_try(a, "app/1", 0, &g1);
	harness_try(a2, "app/2", 0, &g2);
	/* alice's share is full on every one of her connections... */
	harness_send(a, "TRY app/3\n");
	expect_limit(a, "held locks for this principal");
	harness_send(a2, "ACQUIRE app/3 wait=0\n");
	expect_limit(a2, "held locks for this principal");
	/* ...and the refused requests took nothing. */
	harness_send(b, "STATUS app/3\n");
	harness_expect_prefix(b, "STATUS app/3 held=0");
	/* bob still gets locks. */
	harness_try(b, "app/3", 0, &g);
	harness_try(b, "app/4", 0, &g);
	/* A release gives alice room again. */
	harness_send(a, "RELEASE app/1 %s\n", g1.handle);
	harness_expect_line(a, "RELEASED app/1");
	harness_try(a, "app/5", 0, &g);
	harness_send(a, "TRY app/6\n");
	expect_limit(a, "held locks for this principal");
}

/* Each holder of a semaphore or a shared lock counts on its own (issue
 * 17): two permits of one name fill a share of 2. */
static void
test_quota_each_holder_of_a_name_counts(void **state)
{
	struct harness_server *s = start_quota("--max-held-per-principal",
	    "2");
	struct harness_conn *a = connect_as(s, "s3cret", "alice");
	struct harness_conn *b = connect_as(s, "t0ken", "bob");
	struct harness_grant g1, g;

	(void)state;
	harness_send(a, "ACQUIRE app/sem limit=5\n");
	harness_expect_granted(a, "app/sem", &g1);
	harness_send(a, "TRY app/sem limit=5\n");
	harness_expect_granted(a, "app/sem", &g);
	harness_send(a, "TRY app/sem limit=5\n");
	expect_limit(a, "held locks for this principal");
	harness_send(a, "ACQUIRE app/rd mode=shared wait=0\n");
	expect_limit(a, "held locks for this principal");
	harness_send(b, "TRY app/sem limit=5\nTRY app/rd mode=shared\n");
	harness_expect_granted(b, "app/sem", &g);
	harness_expect_granted(b, "app/rd", &g);
	harness_send(a, "RELEASE app/sem %s\n", g1.handle);
	harness_expect_line(a, "RELEASED app/sem");
	harness_send(a, "TRY app/rd mode=shared\n");
	harness_expect_granted(a, "app/rd", &g);
}

static void
test_quota_expired_and_onclose_leases_give_the_share_back(void **state)
{
	struct harness_server *s = start_quota("--max-held-per-principal",
	    "1");
	struct harness_conn *a = connect_as(s, "s3cret", "alice");
	struct harness_conn *a2;
	struct harness_grant g;
	int i;

	(void)state;
	harness_send(a, "ACQUIRE app/short lease=200ms\n");
	harness_expect_granted(a, "app/short", &g);
	harness_send(a, "TRY app/other\n");
	expect_limit(a, "held locks");
	harness_sleep_ms(300);
	/* The lease was reclaimed: the share is free again. */
	harness_try(a, "app/other", 0, &g);
	harness_send(a, "RELEASE app/other %s\n", g.handle);
	harness_expect_line(a, "RELEASED app/other");

	harness_send(a, "ACQUIRE app/c onclose=release\n");
	harness_expect_granted(a, "app/c", &g);
	harness_close(a);
	a2 = connect_as(s, "s3cret", "alice");
	for (i = 0; i < CLOSE_SEEN_TRIES; i++) {
		const char *line;
		harness_send(a2, "TRY app/d\n");
		line = harness_read_line(a2, HARNESS_REPLY_TIMEOUT_MS);
		assert_non_null(line);
		if (strncmp(line, "GRANTED app/d ", 14) == 0)
			break;
		assert_true(strncmp(line, "ERR LIMIT", 9) == 0);
		harness_sleep_ms(20);
	}
	assert_true(i < CLOSE_SEEN_TRIES);
}

/* FORCE ends alice's hold as an expiry would: her share is free again. */
static void
test_quota_a_forced_lease_gives_the_share_back(void **state)
{
	struct harness_server *s = start_quota("--max-held-per-principal",
	    "1");
	struct harness_conn *a = connect_as(s, "s3cret", "alice");
	struct harness_conn *b = connect_as(s, "t0ken", "bob");
	struct harness_grant g;

	(void)state;
	harness_try(a, "app/stuck", 0, &g);
	harness_send(a, "TRY app/other\n");
	expect_limit(a, "held locks");
	harness_send(b, "FORCE app/stuck %llu\n", (unsigned long long)g.fence);
	harness_expect_line(b, "RELEASED app/stuck");
	harness_try(a, "app/other", 0, &g);
}

static void
test_quota_waiters_are_counted_per_principal(void **state)
{
	struct harness_server *s = start_quota("--max-waiters-per-principal",
	    "1");
	struct harness_conn *holder = connect_as(s, "t0ken", "bob");
	struct harness_conn *a1 = connect_as(s, "s3cret", "alice");
	struct harness_conn *a2 = connect_as(s, "s3cret", "alice");
	struct harness_conn *b = connect_as(s, "t0ken", "bob");
	struct harness_grant g, free_grant;

	(void)state;
	harness_try(holder, "app/x", 0, &g);
	harness_send(a1, "ACQUIRE app/x wait=5s\n");   /* alice's one waiter */
	harness_send(a2, "PING\n");    /* a1's ACQUIRE is in by now */
	harness_expect_line(a2, "PONG");
	harness_send(a1, "PING\n");
	harness_send(a2, "ACQUIRE app/x wait=5s\n");
	expect_limit(a2, "waiters for this principal");
	/* A WATCH is not an ACQUIRE waiting: alice may still watch. */
	harness_send(a2, "WATCH app/x wait=100ms\n");
	harness_expect_error(a2, "TIMEOUT");
	/* An ACQUIRE alice can have at once is not a waiter. */
	harness_try(a2, "app/free", 0, &free_grant);
	/* bob may still wait. */
	harness_send(b, "ACQUIRE app/x wait=200ms\n");
	harness_expect_error(b, "TIMEOUT");
	/* The lock goes to alice's waiter; then she may wait again. */
	harness_send(holder, "RELEASE app/x %s\n", g.handle);
	harness_expect_line(holder, "RELEASED app/x");
	harness_expect_granted(a1, "app/x", &g);
	harness_expect_line(a1, "PONG");
	harness_send(a2, "ACQUIRE app/x wait=100ms\n");
	harness_expect_error(a2, "TIMEOUT");
}

static void
test_quota_connections_are_counted_per_principal(void **state)
{
	struct harness_server *s = start_quota(
	    "--max-connections-per-principal", "2");
	struct harness_conn *a1 = connect_as(s, "s3cret", "alice");
	struct harness_conn *a2 = connect_as(s, "s3cret", "alice");
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *u1, *u2, *u3;
	struct harness_grant g;
	const char *line;
	int i;

	(void)state;
	(void)a2;
	harness_send(c, "AUTH s3cret\n");
	expect_limit(c, "connections for this principal");
	/* The refused AUTH left c as it was: nobody, but open. */
	harness_send(c, "TRY app/c\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "AUTH t0ken\n");
	harness_expect_line(c, "AUTHED bob");
	harness_try(c, "app/c", 0, &g);
	/* Once one of alice's connections is gone, she may have another. */
	harness_close(a1);
	c = harness_connect(s);
	for (i = 0; i < CLOSE_SEEN_TRIES; i++) {
		harness_send(c, "AUTH s3cret\n");
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		assert_non_null(line);
		if (strcmp(line, "AUTHED alice") == 0)
			break;
		assert_true(strncmp(line, "ERR LIMIT", 9) == 0);
		harness_sleep_ms(20);
	}
	assert_true(i < CLOSE_SEEN_TRIES);

	/* The Unix socket's uid is a principal from the start: the third
	 * connection is answered and closed. */
	u1 = harness_connect_unix(s->unix_path);
	u2 = harness_connect_unix(s->unix_path);
	harness_try(u1, "app/u1", 0, &g);
	harness_try(u2, "app/u2", 0, &g);
	u3 = harness_connect_unix(s->unix_path);
	expect_limit(u3, "connections for this principal");
	harness_expect_eof(u3, HARNESS_REPLY_TIMEOUT_MS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_quota_held_locks_are_counted_per_principal),
		HARNESS_TEST(test_quota_each_holder_of_a_name_counts),
		HARNESS_TEST(
		    test_quota_expired_and_onclose_leases_give_the_share_back),
		HARNESS_TEST(test_quota_a_forced_lease_gives_the_share_back),
		HARNESS_TEST(test_quota_waiters_are_counted_per_principal),
		HARNESS_TEST(test_quota_connections_are_counted_per_principal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
