/*
 * test_cluster_auth.c - --auth holds in cluster mode: a node that becomes
 * the leader reopens its service over etcd's state, and its rules must
 * come through that.  One real etcd member (tests/lib/etcd_harness.c) and
 * one lockd node with --etcd and --auth, which becomes the leader; then
 * an unauthenticated lock command is refused, AUTH names the principal,
 * and the principal's prefix is kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/etcd_harness.h"
#include "tests/lib/harness.h"

/* printf '%s' s3cret | sha256sum */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define LEADER_WAIT_MS 15000

static struct etcd_cluster etcd;

/* Whether s says it leads, asked after AUTH (which a leader that lost
 * its rules answers ERR BADREQ: STATS is then open to all). */
static bool
leads(struct harness_server *s)
{
	struct harness_conn *c = harness_connect(s);
	const char *line;

	harness_send(c, "AUTH s3cret\r\n");
	if (harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS) == NULL)
		return false;
	harness_send(c, "STATS\r\n");
	line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
	return line != NULL && strstr(line, " role=leader") != NULL;
}

static void
test_cluster_auth_the_leader_keeps_its_rules(void **state)
{
	struct harness_server *s;
	struct harness_conn *c;
	char rules[HARNESS_PATH_MAX];
	int64_t end;
	FILE *f;

	(void)state;
	assert_int_equal(etcd_cluster_start(&etcd, 1), 0);
	snprintf(rules, sizeof(rules), "%s/auth", harness_tempdir());
	assert_non_null(f = fopen(rules, "w"));
	fputs("ops " HASH_S3CRET " lock,read,admin ops/\n", f);
	fclose(f);
	s = harness_start("--etcd", etcd.urls, "--cluster", "auth", "--auth",
	    rules, NULL);
	end = harness_now_ms() + LEADER_WAIT_MS;
	while (!leads(s) && harness_now_ms() < end)
		harness_sleep_ms(50);
	assert_true(leads(s));
	c = harness_connect(s);
	harness_send(c, "TRY ops/x\r\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "AUTH s3cret\r\n");
	harness_expect_line(c, "AUTHED ops");
	harness_send(c, "TRY app/x\r\n");
	harness_expect_error(c, "DENIED");
	harness_send(c, "TRY ops/x\r\n");
	harness_expect_prefix(c, "GRANTED ops/x ");
}

static int
teardown(void **state)
{
	etcd_cluster_stop(&etcd);
	return harness_teardown(state);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_cluster_auth_the_leader_keeps_its_rules,
		    harness_setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
