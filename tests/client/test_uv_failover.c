/*
 * test_uv_failover.c - the libuv client's fail-over (lockd_uv.h) against a
 * real cluster: a 3-member etcd and 3 lockd nodes
 * (tests/lib/cluster_harness.c), all on free loopback ports, each killed by
 * its own PID.  Lists of endpoints are parsed as liblockd's blocking context
 * parses them and a dead endpoint is skipped; a client starting at a
 * follower is sent on to the leader (AUTH again there); a NOTLEADER that
 * names an address the caller did not configure is never followed, and a
 * NOTLEADER loop ends within the fail-over time; kill -9 of the leader while
 * an ACQUIRE waits and a RENEW is in flight: both are answered once by the
 * new leader (the ACQUIRE with its own rid: one grant, nothing left queued)
 * and a kept-alive lease lives on; with no leader left, the keep-alive
 * reports the loss before the lease could end; an ACQUIRE whose GRANTED was
 * lost is sent again with its rid and finds its grant; nodes that hang end a
 * call within the fail-over time (the blocking context's too); a list of
 * lockds:// URLs verifies each node under its own name, and a restart of
 * lockd is a new connection with a new handshake.
 *
 * Everything runs on one uv loop in this thread (the client's rule);
 * run_until() bounds every wait.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "client/lockd_uv.h"
#include "tests/lib/cluster_harness.h"
#include "tests/lib/harness.h"

#define NODES CLUSTER_HARNESS_NODES
#define CONNECT_MS 2000
#define COMMAND_MS 5000

static struct cluster_harness cluster;
static uv_loop_t loop;

/* ---- the loop ------------------------------------------------------------ */

struct result {
	bool done;
	int calls;
	int result;
	lockd_reply reply;
	char errstr[LOCKD_ERRSTR_SIZE];
	int64_t at;
};

static void
on_reply(lockd_uv_client *client, int result, const lockd_reply *reply,
    void *arg)
{
	struct result *r = arg;

	r->done = true;
	r->calls++;
	r->result = result;
	r->reply = *reply;
	r->at = harness_now_ms();
	snprintf(r->errstr, sizeof(r->errstr), "%s", lockd_uv_errstr(client));
}

static void
on_connect(lockd_uv_client *client, int result, void *arg)
{
	struct result *r = arg;

	r->done = true;
	r->calls++;
	r->result = result;
	snprintf(r->errstr, sizeof(r->errstr), "%s", lockd_uv_errstr(client));
}

static void
on_lost(lockd_uv_keepalive *k, int err, const char *errstr, void *arg)
{
	struct result *r = arg;

	(void)k;
	r->done = true;
	r->calls++;
	r->result = err;
	r->at = harness_now_ms();
	snprintf(r->errstr, sizeof(r->errstr), "%s", errstr);
}

static void
on_closed(lockd_uv_client *client, void *arg)
{
	(void)client;
	*(bool *)arg = true;
}

static void
guard_tick(uv_timer_t *t)
{
	(void)t;
}

/* Runs the loop until *flag is true or ms pass; the flag's value. */
static bool
run_until(const bool *flag, int64_t ms)
{
	uv_timer_t guard;
	int64_t end = harness_now_ms() + ms;

	uv_timer_init(&loop, &guard);
	uv_timer_start(&guard, guard_tick, 10, 10);
	while (!*flag && harness_now_ms() < end)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	return *flag;
}

static void
run_for(int64_t ms)
{
	bool never = false;

	run_until(&never, ms);
}

/* Starts connecting with options; does not wait. */
static lockd_uv_client *
open_uv(const lockd_options *o, struct result *r)
{
	lockd_uv_client *c;

	memset(r, 0, sizeof(*r));
	c = lockd_uv_connect(&loop, o, on_connect, r);
	assert_non_null(c);
	return c;
}

static lockd_options
list_options(const char *list)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.host = list;
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = COMMAND_MS;
	return o;
}

/* A client connected to list (several endpoints: fail-over on). */
static lockd_uv_client *
connect_list(const char *list)
{
	lockd_options o = list_options(list);
	struct result r;
	lockd_uv_client *c = open_uv(&o, &r);

	assert_true(run_until(&r.done, CLUSTER_HARNESS_RECOVER_MS));
	if (r.result != LOCKD_OK)
		fail_msg("connect to %s: %s", list, r.errstr);
	return c;
}

static void
close_uv(lockd_uv_client *c)
{
	bool closed = false;

	lockd_uv_close(c, on_closed, &closed);
	assert_true(run_until(&closed, COMMAND_MS));
}

/* Issues nothing more: waits for r, bounded. */
static void
wait_reply(struct result *r, int64_t ms, const char *what)
{
	if (!run_until(&r->done, ms))
		fail_msg("%s: no callback in %lld ms", what, (long long)ms);
	if (r->calls != 1)
		fail_msg("%s: %d callbacks", what, r->calls);
}

/* ---- the cluster (tests/lib/cluster_harness.c) ------------------------ */

static int
teardown(void **state)
{
	cluster_harness_stop(&cluster);
	return harness_teardown(state);
}

/* ---- endpoint lists, no cluster ---------------------------------------- */

static void
test_uv_failover_endpoint_lists_parse_and_skip_a_dead_endpoint(void **state)
{
	struct harness_server *s;
	struct result r, ping;
	lockd_options o;
	lockd_uv_client *c;
	char list[1024];
	static const char *const bad[] = {
		"127.0.0.1:7420,", ",a", "a:0,b", "a:70000", "a:x,b",
		"[::1,b", "a,,b",
	};
	size_t i, len;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	s = harness_start(NULL);
	/* A closed port first: the next one is taken. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    harness_closed_port(), s->port);
	c = connect_list(list);
	memset(&ping, 0, sizeof(ping));
	assert_int_equal(lockd_uv_ping(c, on_reply, &ping), LOCKD_OK);
	wait_reply(&ping, COMMAND_MS, "ping");
	assert_int_equal(ping.result, LOCKD_OK);
	close_uv(c);
	/* The same as URLs. */
	memset(&o, 0, sizeof(o));
	snprintf(list, sizeof(list), "lockd://127.0.0.1:%d,lockd://"
	    "127.0.0.1:%d", harness_closed_port(), s->port);
	o.url = list;
	c = open_uv(&o, &r);
	assert_true(run_until(&r.done, COMMAND_MS));
	if (r.result != LOCKD_OK)
		fail_msg("connect to %s: %s", list, r.errstr);
	close_uv(c);
	/* Lists the blocking context refuses are refused here too. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&o, 0, sizeof(o));
		o.host = bad[i];
		if (lockd_uv_connect(&loop, &o, NULL, NULL) != NULL)
			fail_msg("\"%s\" was taken", bad[i]);
	}
	/* At most 16 endpoints. */
	for (i = 0, len = 0; i < 17; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len,
		    "%s127.0.0.1:%d", i > 0 ? "," : "", s->port);
	o = list_options(list);
	assert_null(lockd_uv_connect(&loop, &o, NULL, NULL));
	/* Nobody anywhere: one sentence for all, to the callback. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    harness_closed_port(), harness_closed_port());
	o = list_options(list);
	assert_int_equal(lockd_uv_set_failover_timeout(NULL, 0),
	    LOCKD_ERR_INVALID);
	c = open_uv(&o, &r);
	/* Fail-over off: each endpoint once. */
	assert_int_equal(lockd_uv_set_failover_timeout(c, 0), LOCKD_OK);
	assert_true(run_until(&r.done, COMMAND_MS));
	printf("# nobody: %s\n", r.errstr);
	assert_int_equal(r.result, LOCKD_ERR_IO);
	assert_non_null(strstr(r.errstr, "none of 2 endpoints"));
	close_uv(c);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * Two fakes that never lead: the first names a third address nobody
 * configured (a listener of the test's own, which must never see a
 * connection), the second names the first (configured: followed).  The
 * client goes round them and gives up within the fail-over time.
 */
static void
test_uv_failover_notleader_to_an_unconfigured_address_is_not_followed(
    void **state)
{
	const char *dir = harness_tempdir();
	char list[64], counter[2][256];
	int lfd[2], port[2], trap_fd, trap_port, i, answered[2] = { 0, 0 };
	struct pollfd trap;
	struct result r, st;
	lockd_uv_client *c;
	pid_t pid[2];
	int64_t began, took;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_true((trap_fd = harness_listen_loopback(&trap_port)) >= 0);
	for (i = 0; i < 2; i++) {
		assert_true((lfd[i] = harness_listen_loopback(&port[i])) >= 0);
		snprintf(counter[i], sizeof(counter[i]), "%s/n%d", dir, i);
	}
	pid[0] = cluster_harness_notleader_fake(lfd[0], trap_port, counter[0]);
	pid[1] = cluster_harness_notleader_fake(lfd[1], port[0], counter[1]);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port[0],
	    port[1]);
	c = connect_list(list);
	assert_int_equal(lockd_uv_set_failover_timeout(c, 1500), LOCKD_OK);
	memset(&r, 0, sizeof(r));
	began = harness_now_ms();
	assert_int_equal(lockd_uv_acquire(c, "loop", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 1500 + 3000, "acquire");
	took = r.at - began;
	printf("# NOTLEADER loop: %s after %lld ms: %s\n",
	    lockd_strerror(r.result), (long long)took, r.errstr);
	assert_int_equal(r.result, LOCKD_ERR_NOTLEADER);
	assert_non_null(strstr(r.errstr, "no leader answered in"));
	assert_true(took < 1500 + 1000);
	/* The client died of it. */
	assert_int_equal(lockd_uv_err(c), LOCKD_ERR_NOTLEADER);
	harness_sleep_ms(200);   /* the fakes count just after answering */
	for (i = 0; i < 2; i++)
		answered[i] = cluster_harness_count_lines(counter[i]);
	printf("# NOTLEADER answers: %d and %d\n", answered[0], answered[1]);
	/* Both were asked, the configured hint followed, and bounded. */
	assert_true(answered[0] >= 2 && answered[1] >= 1);
	assert_true(answered[0] + answered[1] <= LOCKD_FAILOVER_HOPS_MAX + 2);
	/* The address from the wire that nobody configured: never. */
	trap.fd = trap_fd;
	trap.events = POLLIN;
	assert_int_equal(poll(&trap, 1, 0), 0);
	/* Its next request is a new search, which ends the same way. */
	memset(&st, 0, sizeof(st));
	assert_int_equal(lockd_uv_status(c, "loop", on_reply, &st), LOCKD_OK);
	wait_reply(&st, 1500 + 3000, "status");
	assert_int_equal(st.result, LOCKD_ERR_NOTLEADER);
	assert_int_equal(poll(&trap, 1, 0), 0);
	close(trap_fd);
	close_uv(c);
	for (i = 0; i < 2; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * A client whose search found no node (its one lockd stopped) died of
 * it; with fail-over on, its next request searches again and is served
 * once lockd is back, as a dead blocking context reconnects at its next
 * call.  The connect callback came once, at the start.
 */
static void
test_uv_failover_a_client_that_gave_up_searches_again_at_its_next_request(
    void **state)
{
	struct harness_server *s;
	struct result r;
	lockd_uv_client *c;
	char list[64];

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	s = harness_start(NULL);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    harness_closed_port(), s->port);
	c = connect_list(list);
	assert_int_equal(lockd_uv_set_failover_timeout(c, 500), LOCKD_OK);
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_ping(c, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 5000, "ping, lockd stopped");
	printf("# lockd stopped: %s: %s\n", lockd_strerror(r.result),
	    r.errstr);
	assert_true(lockd_error_is_fatal(r.result));
	assert_non_null(strstr(r.errstr, "no leader answered in"));
	assert_int_equal(lockd_uv_err(c), r.result);
	harness_server_restart(s);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_ping(c, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 5000, "ping, lockd back");
	if (r.result != LOCKD_OK)
		fail_msg("ping after the restart: %s", r.errstr);
	assert_int_equal(lockd_uv_err(c), 0);
	close_uv(c);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * Nodes that accept and never answer (a hung lockd): each attempt ends by
 * the command timeout, longer here than the fail-over time, and such a
 * stall is no healthy wait that would start the search anew: the call
 * ends within the fail-over time and one more attempt.  The blocking
 * context too.
 */
static void
test_uv_failover_stalled_endpoints_end_within_the_failover_time(void **state)
{
	int lfd[2], port[2], i;
	struct result conn, r;
	lockd_uv_client *c;
	lockd_context *b;
	lockd_options o;
	char list[64];
	int64_t began, took;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	for (i = 0; i < 2; i++)
		assert_true((lfd[i] = harness_listen_loopback(&port[i])) >= 0);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port[0],
	    port[1]);
	o = list_options(list);
	o.command_timeout_ms = 1000;
	c = open_uv(&o, &conn);
	assert_int_equal(lockd_uv_set_failover_timeout(c, 500), LOCKD_OK);
	memset(&r, 0, sizeof(r));
	began = harness_now_ms();
	assert_int_equal(lockd_uv_ping(c, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 8000, "ping");
	took = r.at - began;
	printf("# libuv, stalled nodes: %s after %lld ms: %s\n",
	    lockd_strerror(r.result), (long long)took, r.errstr);
	assert_int_equal(r.result, LOCKD_ERR_TIMEOUT);
	assert_non_null(strstr(r.errstr, "no leader answered in"));
	assert_true(took < 500 + 2 * 1000 + 1000);
	close_uv(c);
	b = lockd_connect(&o);
	assert_non_null(b);
	assert_int_equal(b->err, 0);
	assert_int_equal(lockd_set_failover_timeout(b, 500), LOCKD_OK);
	began = harness_now_ms();
	assert_int_equal(lockd_ping(b), LOCKD_ERR_TIMEOUT);
	took = harness_now_ms() - began;
	printf("# blocking, stalled nodes: after %lld ms: %s\n",
	    (long long)took, b->errstr);
	assert_non_null(strstr(b->errstr, "no leader answered in"));
	assert_true(took < 500 + 2 * 1000 + 1000);
	lockd_free(b);
	for (i = 0; i < 2; i++)
		close(lfd[i]);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * A keep-alive told NOTLEADER (one endpoint: a node that does not lead
 * now) retries, as lockd_keepalive_start does, and reports the loss only
 * when the lease could end: an election may be on.  A 3 s lease.
 */
static void
test_uv_failover_keepalive_retries_notleader_until_the_lease_could_end(
    void **state)
{
	const char *dir = harness_tempdir();
	char counter[256], list[32];
	struct result conn, lost;
	lockd_uv_keepalive *k;
	lockd_uv_client *c;
	lockd_options o;
	lockd_lease lease;
	int lfd, port, answers = 0;
	int64_t began;
	pid_t pid;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_true((lfd = harness_listen_loopback(&port)) >= 0);
	snprintf(counter, sizeof(counter), "%s/n", dir);
	pid = cluster_harness_notleader_fake(lfd, harness_closed_port(),
	    counter);
	snprintf(list, sizeof(list), "127.0.0.1:%d", port);
	o = list_options(list);
	c = open_uv(&o, &conn);
	assert_int_equal(lockd_lease_init(&lease, "kept",
	    "7-0123456789abcdef"), LOCKD_OK);
	began = harness_now_ms();
	lease.lease_ms = 3000;
	lease.deadline_ms = began + 3000;
	memset(&lost, 0, sizeof(lost));
	assert_non_null(k = lockd_uv_keepalive_start(c, &lease, on_lost,
	    &lost));
	assert_true(run_until(&lost.done, 5000));
	answers = cluster_harness_count_lines(counter);
	printf("# lost %lld ms in, after %d NOTLEADER answers: %s\n",
	    (long long)(lost.at - began), answers, lost.errstr);
	assert_int_equal(lost.result, LOCKD_ERR_NOTLEADER);
	/* Not at the first NOTLEADER (a third in): when the next retry (a
	 * fifteenth of the lease on) would come after a tenth was left. */
	assert_true(lost.at - began >= 3000 - 300 - 200 - 50);
	assert_true(lost.at < began + 3000);
	assert_true(answers >= 2);
	lockd_uv_keepalive_stop(k);
	close_uv(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* lockd_uv_acquire_ex with a rid: the same rid is the same grant; a GRANTED
 * lost on the way is found again by the library's own rid. */
static void
test_uv_failover_acquire_whose_reply_was_lost_finds_its_grant(void **state)
{
	struct harness_server *s;
	struct harness_conn *direct;
	lockd_acquire_options ao = { 20000, 2000, LOCKD_ONCLOSE_KEEP, NULL,
	    0 };
	struct result conn, r, again, rel;
	lockd_uv_client *c;
	lockd_options o;
	char list[32];
	const char *line;
	int lfd, port;
	pid_t pid;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	s = harness_start(NULL);
	assert_true((lfd = harness_listen_loopback(&port)) >= 0);
	pid = cluster_harness_lossy_proxy(lfd, s->port);
	snprintf(list, sizeof(list), "127.0.0.1:%d", port);
	o = list_options(list);
	c = open_uv(&o, &conn);
	/* One endpoint: fail-over is on when asked for. */
	assert_int_equal(lockd_uv_set_failover_timeout(c, 3000), LOCKD_OK);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(c, "lost", 20000, 2000,
	    LOCKD_ONCLOSE_KEEP, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 10000, "acquire");
	printf("# ACQUIRE whose GRANTED was lost: %s %s\n",
	    lockd_strerror(r.result), r.result == LOCKD_OK ?
	    r.reply.lease.handle : r.errstr);
	assert_int_equal(r.result, LOCKD_OK);
	/* Its own grant: the first and only one, nobody waits. */
	assert_int_equal(r.reply.lease.fence, 1);
	direct = harness_connect(s);
	harness_send(direct, "STATUS lost\r\n");
	line = harness_expect_prefix(direct, "STATUS lost held=1 fence=1 ");
	assert_non_null(strstr(line, " queue=0"));
	/* A rid of the caller's: asked twice, granted once. */
	memset(&r, 0, sizeof(r));
	memset(&again, 0, sizeof(again));
	assert_int_equal(lockd_uv_acquire_ex(c, "mine", &ao, "job-7",
	    on_reply, &r), LOCKD_OK);
	assert_int_equal(lockd_uv_acquire_ex(c, "mine", &ao, "job-7",
	    on_reply, &again), LOCKD_OK);
	wait_reply(&again, 10000, "acquire again");
	assert_int_equal(r.result, LOCKD_OK);
	assert_int_equal(again.result, LOCKD_OK);
	assert_string_equal(r.reply.lease.handle, again.reply.lease.handle);
	assert_int_equal(lockd_uv_acquire_ex(c, "mine", &ao, "", on_reply,
	    &again), LOCKD_ERR_INVALID);
	memset(&rel, 0, sizeof(rel));
	assert_int_equal(lockd_uv_try_ex(c, "mine", &ao, "job-8", on_reply,
	    &rel), LOCKD_OK);
	wait_reply(&rel, COMMAND_MS, "try");
	assert_int_equal(rel.result, LOCKD_HELD);
	close_uv(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * TLS over a list of URLs: each endpoint is verified under its own name
 * (an IP address, then localhost), and a restart of lockd is followed by
 * a new connection and a new handshake, on the loop.
 */
static void
test_uv_failover_tls_endpoints_each_verify_their_own_name(void **state)
{
	char ca[HARNESS_PATH_MAX], list[256];
	struct result conn, r, renew, rel;
	struct harness_server *s;
	lockd_uv_client *c;
	lockd_options o;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	s = cluster_harness_tls_node(list, sizeof(list), ca, sizeof(ca));
	memset(&o, 0, sizeof(o));
	o.url = list;
	o.tls_ca_file = ca;
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = COMMAND_MS;
	c = open_uv(&o, &conn);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(c, "tls", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 10000, "acquire");
	if (r.result != LOCKD_OK)
		fail_msg("acquire over %s: %s", list, r.errstr);
	assert_int_equal(conn.result, LOCKD_OK);
	/* lockd restarts: the next request connects and shakes hands anew. */
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
	harness_server_restart(s);
	memset(&renew, 0, sizeof(renew));
	assert_int_equal(lockd_uv_renew(c, &r.reply.lease, 20000, on_reply,
	    &renew), LOCKD_OK);
	wait_reply(&renew, 10000, "renew");
	if (renew.result != LOCKD_OK)
		fail_msg("renew after a restart: %s", renew.errstr);
	memset(&rel, 0, sizeof(rel));
	assert_int_equal(lockd_uv_release(c, &r.reply.lease, on_reply, &rel),
	    LOCKD_OK);
	wait_reply(&rel, COMMAND_MS, "release");
	assert_int_equal(rel.result, LOCKD_OK);
	close_uv(c);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the cluster -------------------------------------------------------- */

static void
test_uv_failover_client_starting_at_a_follower_is_redirected(void **state)
{
	struct result conn, r, renew, rel;
	char list[128], status[256];
	lockd_uv_client *c;
	lockd_options o;
	int leader, follower;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	/* With --auth: the token goes along to the leader (AUTH again). */
	cluster_harness_start(&cluster, NODES, "uvf", "alice "
	    CLUSTER_HARNESS_HASH_S3CRET " lock,read,admin app/\n");
	cluster.token = "s3cret";
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	follower = (leader + 1) % NODES;
	cluster_harness_await_hint(&cluster, follower, leader);
	/* The follower first, the leader last. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
	    cluster.nodes[follower]->port,
	    cluster.nodes[(leader + 2) % NODES]->port,
	    cluster.nodes[leader]->port);
	o = list_options(list);
	o.token = "s3cret";
	c = open_uv(&o, &conn);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(c, "app/redirected", 10000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 10000, "acquire");
	if (r.result != LOCKD_OK)
		fail_msg("acquire: %s", r.errstr);
	assert_true(conn.done && conn.calls == 1 && conn.result == LOCKD_OK);
	assert_int_equal(r.reply.lease.fence, 1);
	memset(&renew, 0, sizeof(renew));
	assert_int_equal(lockd_uv_renew(c, &r.reply.lease, 10000, on_reply,
	    &renew), LOCKD_OK);
	wait_reply(&renew, COMMAND_MS, "renew");
	assert_int_equal(renew.result, LOCKD_OK);
	cluster_harness_ask(&cluster, leader, "app/redirected", status,
	    sizeof(status));
	if (strncmp(status, "STATUS app/redirected held=1 fence=1 ", 37) != 0)
		fail_msg("the leader says \"%s\"", status);
	memset(&rel, 0, sizeof(rel));
	assert_int_equal(lockd_uv_release(c, &r.reply.lease, on_reply, &rel),
	    LOCKD_OK);
	wait_reply(&rel, COMMAND_MS, "release");
	assert_int_equal(rel.result, LOCKD_OK);
	close_uv(c);
	/* Given the followers only, the leader they name is never connected
	 * to: the ACQUIRE ends with NOTLEADER, and the leader holds nothing
	 * for it. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    cluster.nodes[follower]->port,
	    cluster.nodes[(leader + 2) % NODES]->port);
	o = list_options(list);
	o.token = "s3cret";
	c = open_uv(&o, &conn);
	assert_int_equal(lockd_uv_set_failover_timeout(c, 1000), LOCKD_OK);
	memset(&r, 0, sizeof(r));
	assert_int_equal(lockd_uv_acquire(c, "app/unconfigured", 10000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &r), LOCKD_OK);
	wait_reply(&r, 5000, "acquire at the followers");
	printf("# followers only: %s: %s\n", lockd_strerror(r.result),
	    r.errstr);
	assert_int_equal(r.result, LOCKD_ERR_NOTLEADER);
	assert_non_null(strstr(r.errstr, "no leader answered in"));
	cluster_harness_ask(&cluster, leader, "app/unconfigured", status,
	    sizeof(status));
	if (strstr(status, "STATUS app/unconfigured held=0 ") != status)
		fail_msg("the leader says \"%s\"", status);
	close_uv(c);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * kill -9 of the leader while an ACQUIRE waits in its queue and a RENEW
 * is on the wire, and a keep-alive runs: each is answered once, by the new
 * leader.
 */
static void
test_uv_failover_kill_of_the_leader_during_acquire_and_renew(void **state)
{
	struct result got, held, waiter, renew, rel, lost, alive;
	char status[256], want[80];
	lockd_uv_client *c, *w;
	lockd_uv_keepalive *k;
	lockd_lease kept;
	int leader, now_leader;
	int64_t killed;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	cluster_harness_start(&cluster, NODES, "uvf", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	c = connect_list(cluster.endpoints);
	w = connect_list(cluster.endpoints);
	memset(&got, 0, sizeof(got));
	memset(&held, 0, sizeof(held));
	memset(&alive, 0, sizeof(alive));
	assert_int_equal(lockd_uv_acquire(c, "kept", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &got), LOCKD_OK);
	assert_int_equal(lockd_uv_acquire(c, "queued", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &held), LOCKD_OK);
	assert_int_equal(lockd_uv_acquire(c, "kept-alive", 12000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &alive), LOCKD_OK);
	wait_reply(&alive, COMMAND_MS, "acquire kept-alive");
	assert_int_equal(got.result, LOCKD_OK);
	assert_int_equal(held.result, LOCKD_OK);
	assert_int_equal(alive.result, LOCKD_OK);
	/* Renewed every 4 s on the keep-alive's own connection: a lease
	 * long enough to outlast a fail-over (about 3.5 s) from any point
	 * between two renewals. */
	memset(&lost, 0, sizeof(lost));
	k = lockd_uv_keepalive_start(c, &alive.reply.lease, on_lost, &lost);
	assert_non_null(k);
	/* w waits for "queued" (with a rid of the library's own). */
	memset(&waiter, 0, sizeof(waiter));
	assert_int_equal(lockd_uv_acquire(w, "queued", 20000, 15000,
	    LOCKD_ONCLOSE_KEEP, on_reply, &waiter), LOCKD_OK);
	run_for(1500);
	assert_false(waiter.done);

	/* A RENEW goes out, and the leader dies under it. */
	kept = got.reply.lease;
	memset(&renew, 0, sizeof(renew));
	assert_int_equal(lockd_uv_renew(c, &kept, 20000, on_reply, &renew),
	    LOCKD_OK);
	killed = cluster_harness_kill(&cluster, leader);
	wait_reply(&renew, CLUSTER_HARNESS_RECOVER_MS, "renew");
	printf("# kill -9 of the leader to a RENEWED from the new one: "
	    "%lld ms\n", (long long)(renew.at - killed));
	if (renew.result != LOCKD_OK)
		fail_msg("renew: %s", renew.errstr);
	assert_int_equal(renew.reply.lease.fence, kept.fence);
	/* The holder lets go on the new leader: the waiter's turn. */
	memset(&rel, 0, sizeof(rel));
	assert_int_equal(lockd_uv_release(c, &held.reply.lease, on_reply,
	    &rel), LOCKD_OK);
	wait_reply(&rel, CLUSTER_HARNESS_RECOVER_MS, "release");
	assert_int_equal(rel.result, LOCKD_OK);
	wait_reply(&waiter, CLUSTER_HARNESS_RECOVER_MS, "the waiting acquire");
	printf("# the ACQUIRE in flight: %s (%s)\n",
	    lockd_strerror(waiter.result), waiter.errstr);
	assert_int_equal(waiter.result, LOCKD_OK);
	assert_true(waiter.reply.lease.fence > held.reply.lease.fence);
	now_leader = cluster_harness_find_leader(&cluster);
	assert_true(now_leader >= 0 && now_leader != leader);
	/* Granted once, and nothing left in the queue. */
	cluster_harness_ask(&cluster, now_leader, "queued", status,
	    sizeof(status));
	snprintf(want, sizeof(want), "STATUS queued held=1 fence=%llu ttl=",
	    (unsigned long long)waiter.reply.lease.fence);
	if (strncmp(status, want, strlen(want)) != 0 ||
	    strstr(status, " queue=0") == NULL)
		fail_msg("the new leader says \"%s\"", status);
	snprintf(want, sizeof(want), "STATUS kept held=1 fence=%llu ",
	    (unsigned long long)kept.fence);
	cluster_harness_ask(&cluster, now_leader, "kept", status,
	    sizeof(status));
	if (strncmp(status, want, strlen(want)) != 0)
		fail_msg("the new leader says \"%s\"", status);
	/* The keep-alive renewed on the new leader, past the kill. */
	while (harness_now_ms() < killed + 7000 && !lost.done)
		run_for(100);
	if (lost.done)
		fail_msg("the keep-alive lost its lease: %s", lost.errstr);
	lockd_uv_keepalive_lease(k, &kept);
	assert_true(kept.deadline_ms - kept.lease_ms > killed);
	lockd_uv_keepalive_stop(k);
	close_uv(w);
	close_uv(c);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/*
 * No leader comes back (the leader killed, the others paused): the
 * keep-alive reports the loss before the lease could end.
 */
static void
test_uv_failover_keepalive_reports_a_loss_when_no_leader_comes_back(
    void **state)
{
	struct result got, lost;
	lockd_uv_client *c;
	lockd_uv_keepalive *k;
	int leader, i;
	int64_t killed, ends;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	cluster_harness_start(&cluster, NODES, "uvf", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	c = connect_list(cluster.endpoints);
	memset(&got, 0, sizeof(got));
	assert_int_equal(lockd_uv_acquire(c, "doomed", 4000, 0,
	    LOCKD_ONCLOSE_KEEP, on_reply, &got), LOCKD_OK);
	wait_reply(&got, COMMAND_MS, "acquire");
	assert_int_equal(got.result, LOCKD_OK);
	memset(&lost, 0, sizeof(lost));
	k = lockd_uv_keepalive_start(c, &got.reply.lease, on_lost, &lost);
	assert_non_null(k);
	run_for(1500);          /* one renewal on the leader */
	assert_false(lost.done);
	for (i = 0; i < NODES; i++)
		if (i != leader)
			harness_server_pause(cluster.nodes[i]);
	killed = cluster_harness_kill(&cluster, leader);
	lockd_uv_keepalive_lease(k, &got.reply.lease);
	ends = got.reply.lease.deadline_ms;
	assert_true(run_until(&lost.done, 10000));
	printf("# the loss came %lld ms after the kill, %lld ms before the "
	    "lease could end: %s\n", (long long)(lost.at - killed),
	    (long long)(ends - lost.at), lost.errstr);
	assert_int_equal(lost.calls, 1);
	assert_true(lost.at < ends);
	assert_int_not_equal(lockd_uv_keepalive_lost(k), 0);
	lockd_uv_keepalive_stop(k);
	close_uv(c);
	for (i = 0; i < NODES; i++)
		if (i != leader)
			harness_server_resume(cluster.nodes[i]);
	uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_uv_failover_endpoint_lists_parse_and_skip_a_dead_endpoint),
		HARNESS_TEST(
		    test_uv_failover_notleader_to_an_unconfigured_address_is_not_followed),
		HARNESS_TEST(
		    test_uv_failover_stalled_endpoints_end_within_the_failover_time),
		HARNESS_TEST(
		    test_uv_failover_a_client_that_gave_up_searches_again_at_its_next_request),
		HARNESS_TEST(
		    test_uv_failover_keepalive_retries_notleader_until_the_lease_could_end),
		HARNESS_TEST(
		    test_uv_failover_acquire_whose_reply_was_lost_finds_its_grant),
		HARNESS_TEST(
		    test_uv_failover_tls_endpoints_each_verify_their_own_name),
		cmocka_unit_test_setup_teardown(
		    test_uv_failover_client_starting_at_a_follower_is_redirected,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_uv_failover_kill_of_the_leader_during_acquire_and_renew,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_uv_failover_keepalive_reports_a_loss_when_no_leader_comes_back,
		    harness_setup, teardown),
	};
	const char *filter = getenv("TEST_FILTER");

	if (filter != NULL && *filter != '\0')
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, cluster_harness_group_setup,
	    cluster_harness_group_teardown);
}
