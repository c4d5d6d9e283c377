/*
 * test_cluster_security.c - cluster mode over a secured etcd: one real
 * etcd member (tests/lib/etcd_harness.c) with TLS on its client URL,
 * --client-cert-auth, user/password auth on and tokens that expire after
 * 2 s, all on free loopback ports; lockd nodes (tests/lib/harness.c)
 * speak to it with https://, a client certificate and --etcd-user.
 *
 * Each lockd user has a role with readwrite on its cluster's prefix,
 * /lockd/<cluster>/, and nothing else: exactly what docs/security.md
 * says lockd needs.  A working cluster grants, renews, releases and fails
 * over; a token that expires under a leader is renewed without a failed
 * reply or a step-down; a wrong CA, a server name not in the
 * certificate, a missing client certificate, a wrong password, no user
 * and a role on another prefix are each refused with a clear log line
 * while lock commands get ERR UNAVAILABLE and nothing is granted; a wrong
 * password is retried at a bounded rate; SIGHUP brings a changed password
 * and a swapped CA file into use.  A test's own etcd shows a token renewed
 * at the member lockd turns to when its own dies (three members), and
 * --etcd-user against an etcd with auth off (one plain member).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/lib/cluster_harness.h"
#include "tests/lib/etcd_harness.h"
#include "tests/lib/harness.h"

#define TOKEN_TTL_S 2
#define RECOVER_MS 15000       /* bound on finding a leader */
#define REFUSAL_MS 4000        /* bound on a refused node's first ERR */

static struct etcd_cluster etcd;
static char password[5][128];  /* node-a .. node-c, limited, wrong */
enum { PW_A, PW_B, PW_C, PW_LIMITED, PW_WRONG };

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, 0600);
}

static int
group_setup(void **state)
{
	static const char *const users[] = { "node-a", "node-b", "node-c" };
	const struct etcd_cluster_options options = { true, true,
	    TOKEN_TTL_S, 0 };
	char secret[64], prefix[32];
	int i;

	(void)state;
	if (etcd_cluster_start_secure(&etcd, 1, &options) != 0)
		return -1;
	for (i = 0; i < 3; i++) {
		snprintf(secret, sizeof(secret), "secret of %s", users[i]);
		snprintf(prefix, sizeof(prefix), "/lockd/%c/", 'a' + i);
		snprintf(password[i], sizeof(password[i]), "%s/%s.pw",
		    etcd.dir, users[i]);
		/* With the newline an editor leaves: lockd drops it. */
		strcat(secret, "\n");
		if (write_file(password[i], secret) != 0)
			return -1;
		secret[strlen(secret) - 1] = '\0';
		if (etcd_cluster_add_user(&etcd, users[i], secret, prefix) != 0)
			return -1;
	}
	snprintf(password[PW_LIMITED], sizeof(password[0]), "%s/limited.pw",
	    etcd.dir);
	snprintf(password[PW_WRONG], sizeof(password[0]), "%s/wrong.pw",
	    etcd.dir);
	if (write_file(password[PW_LIMITED], "limited secret") != 0 ||
	    write_file(password[PW_WRONG], "not the secret of node-a\n") !=
	    0 ||
	    etcd_cluster_add_user(&etcd, "limited", "limited secret",
	    "/elsewhere/") != 0)
		return -1;
	return etcd_cluster_enable_auth(&etcd);
}

static int
group_teardown(void **state)
{
	(void)state;
	etcd_cluster_stop(&etcd);
	return 0;
}

/* ---- nodes ------------------------------------------------------------ */

/*
 * A lockd node of cluster over the secured etcd: CA file ca, the client
 * certificate when cert, the user and its password file (NULL: none).
 */
static struct harness_server *
node(const char *cluster, const char *ca, bool cert, const char *user,
    const char *password_file)
{
	struct harness_server *s = harness_server_new();

	if (cert)
		harness_server_start(s, "--etcd", etcd.urls, "--cluster",
		    cluster, "--log-level", "debug", "--etcd-ca", ca,
		    "--etcd-cert", etcd.client_cert, "--etcd-key",
		    etcd.client_key, "--etcd-user", user,
		    "--etcd-password-file", password_file, NULL);
	else
		harness_server_start(s, "--etcd", etcd.urls, "--cluster",
		    cluster, "--log-level", "debug", "--etcd-ca", ca,
		    "--etcd-user", user, "--etcd-password-file",
		    password_file, NULL);
	return s;
}

/* The last 64 KiB of the node's log, for a failure's reader. */
static void
print_log(const struct harness_server *s)
{
	static char text[1 << 16];
	FILE *f = fopen(s->log_path, "r");
	size_t n;

	if (f == NULL)
		return;
	if (fseek(f, -(long)(sizeof(text) - 1), SEEK_END) != 0)
		rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	printf("# lockd's log, its last %zu bytes:\n%s\n", n, text);
}

/* What a node says to lock commands when etcd refused its credentials,
 * and when it got no answer from etcd (a TLS handshake that failed). */
#define ERR_REFUSED "ERR UNAVAILABLE etcd refused this node's credentials " \
	"(its log says why)"
#define ERR_UNREACHED "ERR UNAVAILABLE etcd cannot be reached"

/*
 * A node that etcd refuses: every ACQUIRE for REFUSAL_MS and more is
 * refused (never GRANTED), ERR UNAVAILABLE from the first answer on that
 * is not the start-up's, and the last one is err, word for word; it stays
 * a follower; its log says why (want).
 */
static void
expect_refused(struct harness_server *s, const char *err, const char *want)
{
	int64_t deadline = harness_now_ms() + REFUSAL_MS;
	struct harness_conn *c = harness_connect(s);
	const char *line;
	char copy[256];
	int unavailable = 0;

	while (harness_now_ms() < deadline && unavailable < 5) {
		harness_send(c, "ACQUIRE x wait=0\r\n");
		line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
		assert_non_null(line);
		snprintf(copy, sizeof(copy), "%s", line);
		if (strncmp(copy, "GRANTED", 7) == 0)
			fail_msg("granted over a refused etcd: %s", copy);
		if (strncmp(copy, "ERR UNAVAILABLE", 15) == 0)
			unavailable++;
		harness_sleep_ms(100);
	}
	if (unavailable < 5)
		fail_msg("no steady ERR UNAVAILABLE (%d), last \"%s\"",
		    unavailable, copy);
	assert_string_equal(copy, err);
	assert_int_equal(cluster_harness_role_of(s, NULL), 0);
	if (!harness_log_contains(s, "event=etcd_auth_error") ||
	    !harness_log_contains(s, want)) {
		print_log(s);
		fail_msg("the log has no etcd_auth_error with \"%s\"", want);
	}
}

/* How many times the node's log holds needle. */
static int
log_count(const struct harness_server *s, const char *needle)
{
	static char text[1 << 20];
	const char *p = text;
	int n = 0;

	if (!harness_read_file(s->log_path, text, sizeof(text)))
		return -1;
	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return n;
}

/* ---- the tests -------------------------------------------------------- */

static void
test_cluster_security_tls_and_auth_grant_renew_release_and_fail_over(
    void **state)
{
	struct harness_server *nodes[2];
	struct harness_conn *c;
	struct harness_grant g;
	const char *line;
	char handle[64];
	int leader, next;
	int64_t killed;

	(void)state;
	nodes[0] = node("a", etcd.ca, true, "node-a", password[PW_A]);
	nodes[1] = node("a", etcd.ca, true, "node-a", password[PW_A]);
	leader = cluster_harness_leader_of(nodes, 2, RECOVER_MS);
	assert_true(leader >= 0);
	c = harness_connect(nodes[leader]);
	harness_send(c, "ACQUIRE kept wait=0 lease=30s\r\n");
	line = harness_expect_prefix(c, "GRANTED kept fence=1 ");
	assert_true(harness_parse_granted(line, &g));
	snprintf(handle, sizeof(handle), "%s", g.handle);
	harness_send(c, "RENEW kept %s lease=30s\r\n", handle);
	harness_expect_prefix(c, "RENEWED kept ");
	harness_send(c, "ACQUIRE gone wait=0\r\n");
	line = harness_expect_prefix(c, "GRANTED gone fence=2 ");
	assert_true(harness_parse_granted(line, &g));
	harness_send(c, "RELEASE gone %s\r\n", g.handle);
	harness_expect_prefix(c, "RELEASED gone");

	harness_server_kill(nodes[leader]);
	killed = harness_now_ms();
	next = cluster_harness_leader_of(&nodes[1 - leader], 1, RECOVER_MS);
	assert_int_equal(next, 0);
	next = 1 - leader;
	printf("# fail-over over TLS and auth: %lld ms after kill -9\n",
	    (long long)(harness_now_ms() - killed));
	c = harness_connect(nodes[next]);
	harness_send(c, "STATUS kept\r\nRENEW kept %s lease=30s\r\n", handle);
	harness_expect_prefix(c, "STATUS kept held=1 fence=1 ");
	harness_expect_prefix(c, "RENEWED kept ");
	harness_send(c, "ACQUIRE after wait=0\r\n");
	harness_expect_prefix(c, "GRANTED after fence=3 ");
}

/* One ACQUIRE, RENEW and RELEASE of name, each answered with success. */
static void
cycle(struct harness_conn *c, const char *name, int round)
{
	struct harness_grant g;
	const char *line;
	char copy[256];

	harness_send(c, "ACQUIRE %s wait=0 lease=20s\r\n", name);
	line = harness_read_line(c, 12000);
	assert_non_null(line);
	snprintf(copy, sizeof(copy), "%s", line);
	if (!harness_parse_granted(copy, &g))
		fail_msg("round %d: %s", round, copy);
	harness_send(c, "RENEW %s %s\r\n", name, g.handle);
	line = harness_read_line(c, 12000);
	assert_non_null(line);
	if (strncmp(line, "RENEWED ", 8) != 0)
		fail_msg("round %d: %s", round, line);
	harness_send(c, "RELEASE %s %s\r\n", name, g.handle);
	line = harness_read_line(c, 12000);
	assert_non_null(line);
	if (strncmp(line, "RELEASED ", 9) != 0)
		fail_msg("round %d: %s", round, line);
}

/*
 * etcd 3.4's simple tokens expire TOKEN_TTL_S after their last use by a
 * request that etcd checks (a lease keep-alive is not one): a leader
 * left idle that long loses its token while it keeps its leader lease.
 * Its next commits must renew the token and succeed - every reply a
 * success, no step-down - and the log must show the renewal, or the test
 * proved nothing.
 */
static void
test_cluster_security_token_expiry_is_survived(void **state)
{
	struct harness_server *n[1];
	struct harness_conn *c;
	int round, i;

	(void)state;
	n[0] = node("b", etcd.ca, true, "node-b", password[PW_B]);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 3; i++)
			cycle(c, i % 2 ? "t1" : "t0", round);
		if (round < 2)
			harness_sleep_ms(TOKEN_TTL_S * 1000 + 1500);
	}
	printf("# %d token renewals\n",
	    log_count(n[0], "event=etcd_token_renew"));
	assert_true(log_count(n[0], "event=etcd_token_renew") >= 1);
	assert_int_equal(log_count(n[0], "event=step_down"), 0);
	assert_int_equal(cluster_harness_role_of(n[0], NULL), 1);
}

/* A test's own etcd: three secured members, or one plain. */
static struct etcd_cluster three;

static int
teardown_three(void **state)
{
	etcd_cluster_stop(&three);
	return harness_teardown(state);
}

/*
 * Three etcd members: the one lockd speaks to dies, and lockd turns to
 * the next.  Its token, busy at the first, has been idle at the next for
 * longer than the token TTL, so that member calls it invalid: lockd must
 * renew it there, and a leader must serve again with what was held.
 */
static void
test_cluster_security_etcd_member_loss_renews_the_token_elsewhere(
    void **state)
{
	const struct etcd_cluster_options options = { true, true,
	    TOKEN_TTL_S, 0 };
	struct harness_server *n[1] = { harness_server_new() };
	struct harness_conn *c;
	char pw[128];
	int64_t killed, busy;
	bool granted;

	(void)state;
	assert_int_equal(etcd_cluster_start_secure(&three, 3, &options), 0);
	snprintf(pw, sizeof(pw), "%s/node.pw", three.dir);
	assert_int_equal(write_file(pw, "three secret\n"), 0);
	assert_int_equal(etcd_cluster_add_user(&three, "node", "three secret",
	    "/lockd/t/"), 0);
	assert_int_equal(etcd_cluster_enable_auth(&three), 0);
	harness_server_start(n[0], "--etcd", three.urls, "--cluster", "t",
	    "--etcd-ca", three.ca, "--etcd-cert", three.client_cert,
	    "--etcd-key", three.client_key, "--etcd-user", "node",
	    "--etcd-password-file", pw, NULL);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	harness_send(c, "ACQUIRE kept wait=0 lease=60s\r\n");
	harness_expect_prefix(c, "GRANTED kept fence=1 ");
	/* Busy at member 0 only, for longer than the TTL and its 1 s tick:
	 * the token stays good there and runs out at the others. */
	busy = harness_now_ms() + TOKEN_TTL_S * 1000 + 1500;
	while (harness_now_ms() < busy)
		cycle(c, "busy", 0);
	harness_close(c);
	assert_int_equal(log_count(n[0], "event=etcd_token_renew"), 0);
	etcd_member_kill(&three, 0);
	killed = harness_now_ms();
	/* The commit may meet etcd electing a new leader of its own, and
	 * lockd may step down for it: ask until granted, within bounds.
	 * One ask may wait 12 s for a commit etcd holds through its own
	 * election (7 s, then 503), so the bound leaves room for a second
	 * ask: a loaded run once spent all of 15 s in the first.  An ask
	 * cut off by the step-down may still have been granted (the new
	 * term finds it in etcd), so every ask carries one rid: a repeat
	 * gets that grant rather than wait 30 s behind it. */
	granted = false;
	while (!granted && harness_now_ms() < killed + 2 * RECOVER_MS) {
		const char *ask = "ACQUIRE next wait=0 rid=member-loss\r\n";
		const char *line = NULL;

		assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS),
		    0);
		c = harness_connect(n[0]);
		if (harness_try_send(c, ask, strlen(ask), 1000) ==
		    (ssize_t)strlen(ask) && (line = harness_read_line(c,
		    12000)) != NULL)
			granted = strncmp(line, "GRANTED next ", 13) == 0;
		printf("# %lld ms after the kill: %s\n",
		    (long long)(harness_now_ms() - killed),
		    line != NULL ? line : "(no answer)");
		harness_drop(c);
		if (!granted)
			harness_sleep_ms(200);
	}
	if (!granted)
		print_log(n[0]);
	assert_true(granted);
	c = harness_connect(n[0]);
	harness_send(c, "STATUS kept\r\n");
	harness_expect_prefix(c, "STATUS kept held=1 fence=1 ");
	printf("# serving again %lld ms after its etcd member died; %d "
	    "token renewals\n", (long long)(harness_now_ms() - killed),
	    log_count(n[0], "event=etcd_token_renew"));
	assert_true(log_count(n[0], "event=etcd_token_renew") >= 1);
}

/*
 * --etcd-user against an etcd with auth off (plain, another one): lockd
 * warns and goes on without a token, rather than refuse to serve.
 */
static void
test_cluster_security_user_against_an_etcd_without_auth(void **state)
{
	struct harness_server *n[1] = { harness_server_new() };
	struct harness_conn *c;

	(void)state;
	assert_int_equal(etcd_cluster_start(&three, 1), 0);
	harness_server_start(n[0], "--etcd", three.urls, "--etcd-user",
	    "node-a", "--etcd-password-file", password[PW_A], NULL);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	harness_send(c, "ACQUIRE a wait=0\r\n");
	harness_expect_prefix(c, "GRANTED a fence=1 ");
	assert_int_equal(log_count(n[0], "event=etcd_auth_off"), 1);
}

static void
test_cluster_security_wrong_ca_is_refused(void **state)
{
	(void)state;
	expect_refused(node("c", etcd.wrong_ca, true, "node-c",
	    password[PW_C]), ERR_UNREACHED, "SSL certificate problem");
}

/*
 * The server certificate names 127.0.0.1 alone: the same member reached
 * as localhost must be refused, for its name.
 */
static void
test_cluster_security_server_name_is_checked(void **state)
{
	struct harness_server *s = harness_server_new();
	char url[96];

	(void)state;
	snprintf(url, sizeof(url), "https://localhost:%d",
	    etcd.members[0].client_port);
	harness_server_start(s, "--etcd", url, "--cluster", "c",
	    "--etcd-ca", etcd.ca, "--etcd-cert", etcd.client_cert,
	    "--etcd-key", etcd.client_key, "--etcd-user", "node-c",
	    "--etcd-password-file", password[PW_C], NULL);
	expect_refused(s, ERR_UNREACHED, "certificate subject name");
}

static void
test_cluster_security_client_certificate_is_required(void **state)
{
	(void)state;
	/* etcd drops the connection; curl's words for it vary, lockd's
	 * hint does not. */
	expect_refused(node("c", etcd.ca, false, "node-c", password[PW_C]),
	    ERR_UNREACHED, "does it want a client certificate?");
}

static void
test_cluster_security_wrong_password_is_refused_at_a_bounded_rate(
    void **state)
{
	struct harness_server *s;
	int64_t started = harness_now_ms();
	int tries;

	(void)state;

	s = node("a", etcd.ca, true, "node-a", password[PW_WRONG]);
	expect_refused(s, ERR_REFUSED, "authentication failed");
	harness_sleep_ms(2500);
	/* At most one authentication a second (ETCD_AUTH_RETRY_MS), and
	 * retried: not given up.  A busy loop would make hundreds. */
	tries = log_count(s, "event=etcd_authenticate");
	printf("# %d authentications with a wrong password in %lld ms\n",
	    tries, (long long)(harness_now_ms() - started));
	assert_true(tries >= 2);
	assert_true(tries <= (harness_now_ms() - started) / 1000 + 2);
	/* Said once, not once per try. */
	assert_int_equal(log_count(s, "event=etcd_auth_error"), 1);
	/* A clean stop; under ASan (make test SANITIZE=1) also no leak of
	 * the failed authentications (LeakSanitizer's exit status). */
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
}

static void
test_cluster_security_no_user_is_refused(void **state)
{
	struct harness_server *s = harness_server_new();

	(void)state;
	harness_server_start(s, "--etcd", etcd.urls, "--cluster", "c",
	    "--etcd-ca", etcd.ca, "--etcd-cert", etcd.client_cert,
	    "--etcd-key", etcd.client_key, NULL);
	expect_refused(s, ERR_REFUSED, "give --etcd-user and --etcd-password-file");
}

static void
test_cluster_security_role_on_another_prefix_is_refused(void **state)
{
	(void)state;
	expect_refused(node("d", etcd.ca, true, "limited",
	    password[PW_LIMITED]), ERR_REFUSED, "permission denied (its role needs "
	    "readwrite on the cluster's prefix");
}

/*
 * The leader's password is changed in etcd (which drops its token): its
 * next commit cannot authenticate.  It must grant nothing, step down
 * rather than stop (before this was handled it aborted on the read after
 * the refused commit), and answer ERR UNAVAILABLE; with the new password
 * in its file and a SIGHUP it leads again with nothing lost.  Runs last:
 * node-c's password stays changed.
 */
static void
test_cluster_security_password_changed_then_reloaded_on_sighup(
    void **state)
{
	struct harness_server *n[1];
	struct harness_conn *c;
	const char *line;
	char copy[256];
	int64_t deadline;
	int unavailable = 0;

	(void)state;
	n[0] = node("c", etcd.ca, true, "node-c", password[PW_C]);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	harness_send(c, "ACQUIRE kept wait=0 lease=60s\r\n");
	harness_expect_prefix(c, "GRANTED kept fence=1 ");

	assert_int_equal(etcd_cluster_change_password(&etcd, "node-c",
	    "the new secret of node-c"), 0);
	deadline = harness_now_ms() + 10000;
	while (harness_now_ms() < deadline && unavailable < 3) {
		if (c->eof) {
			harness_close(c);
			c = harness_connect(n[0]);
		}
		if (harness_try_send(c, "ACQUIRE other wait=0\r\n", 22,
		    1000) != 22 || (line = harness_read_line(c, 8000)) ==
		    NULL)
			continue;   /* closed as it stepped down */
		snprintf(copy, sizeof(copy), "%s", line);
		if (strncmp(copy, "GRANTED", 7) == 0)
			fail_msg("granted with a password etcd no longer "
			    "takes: %s", copy);
		if (strncmp(copy, "ERR UNAVAILABLE", 15) == 0 &&
		    cluster_harness_role_of(n[0], NULL) == 0)
			unavailable++;
		harness_sleep_ms(100);
	}
	if (harness_wait(n[0]->pid, 0) >= 0) {
		print_log(n[0]);
		fail_msg("lockd exited when etcd refused its password");
	}
	assert_int_equal(unavailable, 3);
	assert_string_equal(copy, ERR_REFUSED);
	assert_true(harness_log_contains(n[0], "authentication failed"));

	assert_int_equal(write_file(password[PW_C],
	    "the new secret of node-c\n"), 0);
	kill(n[0]->pid, SIGHUP);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	assert_true(harness_log_contains(n[0],
	    "event=etcd_password_reloaded user=node-c changed=yes"));
	c = harness_connect(n[0]);
	harness_send(c, "STATUS kept\r\nACQUIRE other wait=0\r\n");
	harness_expect_prefix(c, "STATUS kept held=1 fence=1 ");
	harness_expect_prefix(c, "GRANTED other fence=2 ");
	/* A SIGHUP that finds the same password says so too. */
	kill(n[0]->pid, SIGHUP);
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (!harness_log_contains(n[0], "event=etcd_password_reloaded "
	    "user=node-c changed=no") && harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_true(harness_log_contains(n[0], "event=etcd_password_reloaded "
	    "user=node-c changed=no"));
	assert_int_equal(harness_server_stop(n[0], HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
}

/* Copies the file from to to (renamed into place, as an operator
 * would). */
static void
copy_file(const char *from, const char *to)
{
	static char text[16384];
	char tmp[HARNESS_PATH_MAX];

	assert_true(harness_read_file(from, text, sizeof(text)));
	snprintf(tmp, sizeof(tmp), "%s.new", to);
	assert_int_equal(write_file(tmp, text), 0);
	assert_int_equal(rename(tmp, to), 0);
}

/*
 * The CA file is replaced, then SIGHUP: lockd's next connections to
 * etcd check etcd against the new file, though the ones it had still
 * worked.  A wrong CA so swapped in takes the node off etcd (it steps
 * down; ERR UNAVAILABLE; the log names the certificate problem); the
 * right one back and another SIGHUP, and it leads again.
 */
static void
test_cluster_security_sighup_reconnects_with_the_new_ca_file(void **state)
{
	char *dir = (char *)harness_tempdir();
	struct harness_server *n[1];
	struct harness_conn *c;
	char ca[HARNESS_PATH_MAX];
	const char *line;
	int64_t deadline;
	int unavailable = 0;

	(void)state;
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	copy_file(etcd.ca, ca);
	n[0] = node("b", ca, true, "node-b", password[PW_B]);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	harness_send(c, "ACQUIRE rotated wait=0 lease=60s\r\n");
	harness_expect_prefix(c, "GRANTED rotated ");
	harness_close(c);

	copy_file(etcd.wrong_ca, ca);
	kill(n[0]->pid, SIGHUP);
	deadline = harness_now_ms() + 8000;
	while (!harness_log_contains(n[0], "event=etcd_tls_reloaded ca=") &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_true(harness_log_contains(n[0], "event=etcd_tls_reloaded ca="));
	while (harness_now_ms() < deadline && unavailable < 3) {
		c = harness_connect(n[0]);
		if (harness_try_send(c, "ACQUIRE other wait=0\r\n", 22,
		    1000) == 22 && (line = harness_read_line(c, 8000)) !=
		    NULL) {
			if (strncmp(line, "GRANTED", 7) == 0)
				fail_msg("granted over a connection the new "
				    "CA file refuses");
			if (strncmp(line, "ERR UNAVAILABLE", 15) == 0)
				unavailable++;
		}
		harness_drop(c);
		harness_sleep_ms(200);
	}
	if (unavailable < 3) {
		print_log(n[0]);
		fail_msg("still served after SIGHUP with a wrong CA file");
	}
	assert_true(harness_log_contains(n[0], "SSL certificate problem"));

	copy_file(etcd.ca, ca);
	kill(n[0]->pid, SIGHUP);
	assert_int_equal(cluster_harness_leader_of(n, 1, RECOVER_MS), 0);
	c = harness_connect(n[0]);
	harness_send(c, "STATUS rotated\r\n");
	harness_expect_prefix(c, "STATUS rotated held=1 ");
}

static void
test_cluster_security_bad_settings_stop_the_start(void **state)
{
	struct harness_run_result r;
	char *dir = (char *)harness_tempdir();
	char empty[HARNESS_PATH_MAX], missing[HARNESS_PATH_MAX];

	(void)state;
	snprintf(empty, sizeof(empty), "%s/empty.pw", dir);
	snprintf(missing, sizeof(missing), "%s/missing.pw", dir);
	assert_int_equal(write_file(empty, "\n"), 0);
	harness_run_lockd(&r, 5000, "--listen", "127.0.0.1:0", "--etcd",
	    etcd.urls, "--etcd-user", "node-a", "--etcd-password-file", empty,
	    NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "lockd: --etcd-password-file: "));
	assert_non_null(strstr(r.err, "is empty"));
	harness_run_lockd(&r, 5000, "--listen", "127.0.0.1:0", "--etcd",
	    etcd.urls, "--etcd-user", "node-a", "--etcd-password-file",
	    missing, NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "cannot read"));
	harness_run_lockd(&r, 5000, "--listen", "127.0.0.1:0", "--etcd",
	    "https://127.0.0.1:1,http://127.0.0.1:2", NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "a mix of http:// and https://"));
	harness_run_lockd(&r, 5000, "--listen", "127.0.0.1:0", "--etcd",
	    etcd.urls, "--etcd-user", "node-a", NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "go together"));
}

/*
 * A password over plain http:// beyond loopback is warned of; over
 * loopback it is not.  (192.0.2.1 is TEST-NET-1: nothing answers.)
 */
static void
test_cluster_security_password_in_clear_is_warned_of(void **state)
{
	struct harness_server *far = harness_server_new();
	struct harness_server *near = harness_server_new();
	char url[64];

	(void)state;
	harness_server_start(far, "--etcd", "http://192.0.2.1:2379",
	    "--etcd-user", "node-a", "--etcd-password-file", password[PW_A],
	    NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d",
	    harness_closed_port());
	harness_server_start(near, "--etcd", url, "--etcd-user", "node-a",
	    "--etcd-password-file", password[PW_A], NULL);
	assert_true(harness_log_contains(far, "event=etcd_auth_plain "
	    "url=http://192.0.2.1:2379"));
	assert_false(harness_log_contains(near, "event=etcd_auth_plain"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_cluster_security_bad_settings_stop_the_start),
		HARNESS_TEST(
		    test_cluster_security_password_in_clear_is_warned_of),
		HARNESS_TEST(
		    test_cluster_security_tls_and_auth_grant_renew_release_and_fail_over),
		HARNESS_TEST(test_cluster_security_token_expiry_is_survived),
		cmocka_unit_test_setup_teardown(
		    test_cluster_security_etcd_member_loss_renews_the_token_elsewhere,
		    harness_setup, teardown_three),
		cmocka_unit_test_setup_teardown(
		    test_cluster_security_user_against_an_etcd_without_auth,
		    harness_setup, teardown_three),
		HARNESS_TEST(test_cluster_security_wrong_ca_is_refused),
		HARNESS_TEST(test_cluster_security_server_name_is_checked),
		HARNESS_TEST(
		    test_cluster_security_client_certificate_is_required),
		HARNESS_TEST(
		    test_cluster_security_wrong_password_is_refused_at_a_bounded_rate),
		HARNESS_TEST(test_cluster_security_no_user_is_refused),
		HARNESS_TEST(
		    test_cluster_security_role_on_another_prefix_is_refused),
		HARNESS_TEST(
		    test_cluster_security_sighup_reconnects_with_the_new_ca_file),
		HARNESS_TEST(
		    test_cluster_security_password_changed_then_reloaded_on_sighup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
