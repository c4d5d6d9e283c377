/*
 * test_failover.c - liblockd and lockctl run against a real cluster: a
 * 3-member etcd and lockd nodes (tests/lib/cluster_harness.c), all on free
 * loopback ports, each killed by its own PID.  A client given every
 * endpoint and starting at a follower is sent to the leader; after kill -9
 * of the leader its next calls work on the new leader, a granted handle
 * still renews, an ACQUIRE in flight is repeated with its rid= and granted
 * once; an ACQUIRE whose reply was lost is repeated and finds its own
 * grant (never two grants for one call); lockctl run's command lives
 * through a fail-over when the lease allows it, and is stopped before the
 * lease ends when no leader comes back in time.  Besides the cluster: lists
 * of endpoints, and a NOTLEADER loop between two bad hints that ends with
 * a clear error within the fail-over time.
 */
#include <errno.h>
#include <pthread.h>
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
#include "tests/lib/cluster_harness.h"
#include "tests/lib/harness.h"

#define CONNECT_MS 2000

static struct cluster_harness cluster;

/* ---- the cluster (tests/lib/cluster_harness.c) ------------------------ */

static int
teardown(void **state)
{
	cluster_harness_stop(&cluster);
	return harness_teardown(state);
}

static lockd_context *
connect_list(const char *list)
{
	lockd_options o;
	lockd_context *c;

	memset(&o, 0, sizeof(o));
	o.host = list;
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = 5000;
	c = lockd_connect(&o);
	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect to %s: %s", list, c->errstr);
	return c;
}

/* ---- endpoint lists, no cluster ---------------------------------------- */

static void
test_failover_endpoint_lists_parse_and_skip_a_dead_endpoint(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	char list[128];
	static const char *const bad[] = {
		"127.0.0.1:7420,", ",a", "a:0,b", "a:70000", "a:x,b",
		"[::1,b", "a,,b",
	};
	size_t i;

	(void)state;
	s = harness_start(NULL);
	/* A closed port first: the next one is taken. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    harness_closed_port(), s->port);
	c = connect_list(list);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
	/* The same as URLs. */
	memset(&o, 0, sizeof(o));
	snprintf(list, sizeof(list), "lockd://127.0.0.1:%d,lockd://"
	    "127.0.0.1:%d", harness_closed_port(), s->port);
	o.url = list;
	c = lockd_connect(&o);
	assert_non_null(c);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
	/* One "host:port" is a list of one. */
	memset(&o, 0, sizeof(o));
	snprintf(list, sizeof(list), "127.0.0.1:%d", s->port);
	o.host = list;
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	lockd_free(c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&o, 0, sizeof(o));
		o.host = bad[i];
		c = lockd_connect(&o);
		assert_non_null(c);
		if (c->err != LOCKD_ERR_INVALID)
			fail_msg("\"%s\": %d (%s), not INVALID", bad[i],
			    c->err, c->errstr);
		lockd_free(c);
	}
	/* Nobody anywhere: one sentence for all. */
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    harness_closed_port(), harness_closed_port());
	memset(&o, 0, sizeof(o));
	o.host = list;
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "none of 2 endpoints"));
	lockd_free(c);
}

/*
 * Two fake nodes that never lead (cluster_harness_notleader_fake): each
 * answers every line with a NOTLEADER naming the other, forever,
 * connection after connection.
 */
static void
test_failover_notleader_loop_between_two_bad_hints_ends(void **state)
{
	const char *dir = harness_tempdir();
	char list[64], counter[2][256];
	int lfd[2], port[2], i, answered = 0, rc;
	pid_t pid[2];
	lockd_context *c;
	int64_t began, took;

	(void)state;
	for (i = 0; i < 2; i++)
		assert_true((lfd[i] = harness_listen_loopback(&port[i])) >= 0);
	for (i = 0; i < 2; i++) {
		snprintf(counter[i], sizeof(counter[i]), "%s/n%d", dir, i);
		pid[i] = cluster_harness_notleader_fake(lfd[i], port[1 - i],
		    counter[i]);
	}
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port[0],
	    port[1]);
	c = connect_list(list);
	assert_int_equal(lockd_set_failover_timeout(c, 1500), LOCKD_OK);
	began = harness_now_ms();
	rc = lockd_acquire(c, "loop", 5000, 0, LOCKD_ONCLOSE_KEEP, NULL);
	took = harness_now_ms() - began;
	printf("# NOTLEADER loop: %s after %lld ms: %s\n", lockd_strerror(rc),
	    (long long)took, c->errstr);
	assert_int_equal(rc, LOCKD_ERR_NOTLEADER);
	assert_int_equal(c->err, LOCKD_ERR_NOTLEADER);
	assert_non_null(strstr(c->errstr, "no leader answered in"));
	assert_true(took < 1500 + 1000);
	/* The fakes write their counts just after answering. */
	harness_sleep_ms(200);
	for (i = 0; i < 2; i++)
		answered += cluster_harness_count_lines(counter[i]);
	/* Both hints were followed, and the attempts were bounded. */
	printf("# %d NOTLEADER answers\n", answered);
	assert_true(answered >= 3);
	assert_true(answered <= LOCKD_FAILOVER_HOPS_MAX + 2);
	/* The context is usable still; with fail-over off, at once. */
	assert_int_equal(lockd_set_failover_timeout(c, 0), LOCKD_OK);
	assert_int_equal(lockd_status(c, "loop", NULL), LOCKD_ERR_NOTLEADER);
	assert_null(strstr(c->errstr, "no leader answered"));
	lockd_free(c);
	/* lockctl: -t bounds the search; no leader is exit 69. */
	{
		const char *argv[] = {
			harness_program("lockctl"), "-H", list, "-t", "1s",
			"status", "loop", NULL,
		};
		char err[512];

		began = harness_now_ms();
		rc = harness_run((char *const *)argv, 10000, NULL, 0, err,
		    sizeof(err));
		took = harness_now_ms() - began;
		printf("# lockctl: exit %d after %lld ms: %s", rc,
		    (long long)took, err);
		assert_int_equal(rc, 69);
		assert_non_null(strstr(err, "no leader answered"));
		assert_true(took < 1000 + 1500);
	}
	for (i = 0; i < 2; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
}

/*
 * A node that names itself in NOTLEADER leader= (lockd never does since
 * issue 25, but an older one did, for seconds) is not asked again: the
 * client goes on to the next endpoint, here a lockd that serves.  Before,
 * liblockd followed the hint back to the same node until its fail-over
 * time ran out; lockctl, whose keep-alive and run share the rule, too.
 */
static void
test_failover_a_node_naming_itself_is_not_asked_again(void **state)
{
	struct harness_server *s = harness_start(NULL);
	const char *dir = harness_tempdir();
	char list[64], counter[256], out[256];
	int lfd, port, rc, answered;
	lockd_context *c;
	lockd_lease lease;
	pid_t pid;

	(void)state;
	assert_true((lfd = harness_listen_loopback(&port)) >= 0);
	snprintf(counter, sizeof(counter), "%s/self", dir);
	pid = cluster_harness_notleader_fake(lfd, port, counter);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port,
	    s->port);
	c = connect_list(list);
	assert_int_equal(lockd_set_failover_timeout(c, 1500), LOCKD_OK);
	rc = lockd_acquire(c, "self", 5000, 0, LOCKD_ONCLOSE_KEEP, &lease);
	if (rc != LOCKD_OK)
		fail_msg("acquire: %s: %s", lockd_strerror(rc), c->errstr);
	lockd_free(c);
	{
		const char *argv[] = {
			harness_program("lockctl"), "-H", list, "-t", "1000",
			"status", "self", NULL,
		};

		rc = harness_run((char *const *)argv, 10000, out, sizeof(out),
		    NULL, 0);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, "held=1"));
	}
	harness_sleep_ms(200);
	answered = cluster_harness_count_lines(counter);
	printf("# the self-naming node answered %d times\n", answered);
	assert_true(answered <= 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * lockd_keepalive_start renews once before it returns.  Given every
 * endpoint of a cluster whose first is a follower, that renewal must go
 * where the follower's NOTLEADER points, as every later one does; before,
 * it was one attempt on the first endpoint, and the helper never started
 * ("NOTLEADER" from lockd_keepalive_lost) unless the first endpoint led
 * (bench/failover-leases.py met it after the first fail-over).
 */
static void
test_failover_keepalive_starting_at_a_follower_renews_at_the_leader(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	const char *dir = harness_tempdir();
	char list[64], counter[256];
	int lfd, port;
	lockd_keepalive *k;
	lockd_options o;
	lockd_context *c;
	lockd_lease lease, renewed;
	pid_t pid;

	(void)state;
	assert_true((lfd = harness_listen_loopback(&port)) >= 0);
	snprintf(counter, sizeof(counter), "%s/follower", dir);
	pid = cluster_harness_notleader_fake(lfd, s->port, counter);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port,
	    s->port);
	c = connect_list(list);
	assert_int_equal(lockd_acquire(c, "kept-alive", 6000, 0,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_OK);
	memset(&o, 0, sizeof(o));
	o.host = list;
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = 5000;
	k = lockd_keepalive_start(&o, &lease, NULL, NULL);
	assert_non_null(k);
	if (lockd_keepalive_lost(k) != 0)
		fail_msg("the keep-alive did not start: %s",
		    lockd_keepalive_errstr(k));
	lockd_keepalive_lease(k, &renewed);
	assert_true(renewed.deadline_ms > lease.deadline_ms);
	assert_int_equal(lockd_keepalive_stop(k), 0);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- the cluster -------------------------------------------------------- */

static void
test_failover_client_starting_at_a_follower_is_redirected(void **state)
{
	char list[96], status[256];
	lockd_context *c;
	lockd_lease lease;
	int leader, follower;

	struct harness_conn *raw;
	lockd_options o;

	(void)state;
	/* With --auth: the token goes along to the leader (AUTH again). */
	cluster_harness_start(&cluster, 2, "f", "alice "
	    CLUSTER_HARNESS_HASH_S3CRET " lock,read,admin app/\n");
	cluster.token = "s3cret";
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	follower = 1 - leader;
	cluster_harness_await_hint(&cluster, follower, leader);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d",
	    cluster.nodes[follower]->port, cluster.nodes[leader]->port);
	memset(&o, 0, sizeof(o));
	o.host = list;
	o.token = "s3cret";
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = 5000;
	c = lockd_connect(&o);
	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect: %s", c->errstr);
	if (lockd_acquire(c, "app/redirected", 10000, 0, LOCKD_ONCLOSE_KEEP,
	    &lease) != LOCKD_OK)
		fail_msg("acquire: %s", c->errstr);
	assert_int_equal(lease.fence, 1);
	assert_int_equal(lockd_renew(c, &lease, 10000), LOCKD_OK);
	cluster_harness_ask(&cluster, leader, "app/redirected", status,
	    sizeof(status));
	if (strncmp(status, "STATUS app/redirected held=1 fence=1 ", 37) != 0)
		fail_msg("the leader says \"%s\"", status);
	/* The leader keeps --auth: nobody unauthenticated locks there. */
	raw = harness_connect(cluster.nodes[leader]);
	harness_send(raw, "ACQUIRE app/other wait=0\r\n");
	harness_expect_line(raw, "ERR DENIED not authenticated");
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
}

static void
test_failover_kill_of_the_leader_moves_the_client_on(void **state)
{
	lockd_context *c, *other;
	lockd_lease held, next, alive;
	lockd_keepalive *k;
	lockd_options o;
	char status[256], want[64];
	int leader, renewed_at;
	int64_t killed, took;

	(void)state;
	cluster_harness_start(&cluster, 3, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	c = connect_list(cluster.endpoints);
	assert_int_equal(lockd_acquire(c, "kept", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, &held), LOCKD_OK);
	/* And one the keep-alive helper renews, every 4 s. */
	memset(&o, 0, sizeof(o));
	o.host = cluster.endpoints;
	o.connect_timeout_ms = CONNECT_MS;
	assert_int_equal(lockd_acquire(c, "kept-alive", 12000, 0,
	    LOCKD_ONCLOSE_KEEP, &alive), LOCKD_OK);
	k = lockd_keepalive_start(&o, &alive, NULL, NULL);
	assert_non_null(k);
	assert_int_equal(lockd_keepalive_lost(k), 0);
	/* Its next renewal comes half a second after the kill, when no
	 * node leads: it must follow NOTLEADER until one does. */
	harness_sleep_ms(3500);

	killed = cluster_harness_kill(&cluster, leader);
	/* The next call finds the new leader by itself. */
	assert_int_equal(lockd_renew(c, &held, 20000), LOCKD_OK);
	took = harness_now_ms() - killed;
	printf("# kill -9 of the leader to a RENEWED from the new one: "
	    "%lld ms\n", (long long)took);
	for (renewed_at = 0; renewed_at < CLUSTER_HARNESS_NODES; renewed_at++)
		if (cluster_harness_role(&cluster, renewed_at) == 1)
			break;
	assert_true(renewed_at < CLUSTER_HARNESS_NODES && renewed_at != leader);
	snprintf(want, sizeof(want), "STATUS kept held=1 fence=%llu ",
	    (unsigned long long)held.fence);
	cluster_harness_ask(&cluster, renewed_at, "kept", status,
	    sizeof(status));
	if (strncmp(status, want, strlen(want)) != 0)
		fail_msg("the new leader says \"%s\"", status);
	/* Other calls go on, and the held lock is not granted again. */
	assert_int_equal(lockd_acquire(c, "after", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &next), LOCKD_OK);
	assert_true(next.fence > held.fence);
	other = connect_list(cluster.endpoints);
	assert_int_equal(lockd_try(other, "kept", 5000, LOCKD_ONCLOSE_KEEP,
	    NULL), LOCKD_HELD);
	assert_int_equal(lockd_release(c, &held), LOCKD_OK);
	/* A repeated RELEASE is harmless. */
	assert_int_equal(lockd_release(c, &held), LOCKD_NOTHELD);
	/* The helper renewed on the new leader, past the kill. */
	while (harness_now_ms() < killed + 6000)
		harness_sleep_ms(100);
	if (lockd_keepalive_lost(k) != 0)
		fail_msg("the keep-alive lost its lease: %s",
		    lockd_keepalive_errstr(k));
	lockd_keepalive_lease(k, &alive);
	assert_true(alive.deadline_ms - alive.lease_ms > killed);
	assert_int_equal(lockd_keepalive_stop(k), 0);
	lockd_free(other);
	lockd_free(c);
}

/*
 * A leader that hangs (SIGSTOP) closes nothing: the client's command
 * timeout ends the attempt, and the call moves on to the other nodes, one
 * of which takes over within the leader lease.
 */
static void
test_failover_paused_leader_is_left_by_timeout(void **state)
{
	lockd_context *c;
	lockd_lease held;
	int leader;
	int64_t paused, took;

	(void)state;
	cluster_harness_start(&cluster, 3, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	c = connect_list(cluster.endpoints);
	assert_int_equal(lockd_set_command_timeout(c, 1500), LOCKD_OK);
	assert_int_equal(lockd_acquire(c, "paused", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, &held), LOCKD_OK);
	harness_server_pause(cluster.nodes[leader]);
	paused = harness_now_ms();
	if (lockd_renew(c, &held, 20000) != LOCKD_OK)
		fail_msg("renew: %s", c->errstr);
	took = harness_now_ms() - paused;
	printf("# SIGSTOP of the leader to a RENEWED from the new one: "
	    "%lld ms\n", (long long)took);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	harness_server_resume(cluster.nodes[leader]);
	lockd_free(c);
}

/*
 * A blocking ACQUIRE and a WATCH, both without a wait limit or a command
 * timeout, wait at a leader that is then paused (SIGSTOP) and stays so:
 * its kernel keeps their connections open and says nothing.  Each call
 * must notice that the node no longer answers (its probe gets no PONG),
 * move to the new leader and be answered there: the ACQUIRE granted once
 * the holder's lease ends, the WATCH told of that grant.  Before the
 * probe, both waited for ever.
 */
struct forever {
	lockd_context *c;
	bool watch;
	uint64_t fence;           /* WATCH: the holder's */
	int rc;
	lockd_lease lease;
	lockd_lock_info info;
	volatile int done;
};

static void *
forever_main(void *arg)
{
	struct forever *f = arg;

	if (f->watch)
		f->rc = lockd_watch(f->c, "frozen", (int64_t)f->fence,
		    LOCKD_WAIT_FOREVER, &f->info);
	else
		f->rc = lockd_acquire(f->c, "frozen", 20000,
		    LOCKD_WAIT_FOREVER, LOCKD_ONCLOSE_KEEP, &f->lease);
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
test_failover_waits_without_a_limit_leave_a_paused_leader(void **state)
{
	lockd_context *holder;
	lockd_lease held;
	struct forever f[2];
	pthread_t thread[2];
	char status[256], stats[1024];
	int leader, i, left;
	int64_t paused, deadline;

	(void)state;
	cluster_harness_start(&cluster, 3, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	holder = connect_list(cluster.endpoints);
	assert_int_equal(lockd_acquire(holder, "frozen", 6000, 0,
	    LOCKD_ONCLOSE_KEEP, &held), LOCKD_OK);
	lockd_free(holder);             /* the lease stays (onclose=keep) */
	memset(f, 0, sizeof(f));
	for (i = 0; i < 2; i++) {
		f[i].c = connect_list(cluster.endpoints);
		assert_int_equal(lockd_set_command_timeout(f[i].c, 0),
		    LOCKD_OK);
		f[i].watch = i == 1;
		f[i].fence = held.fence;
		assert_int_equal(pthread_create(&thread[i], NULL, forever_main,
		    &f[i]), 0);
	}
	/* Both wait at the leader (bounded: 5 s). */
	for (i = 0; i < 50; i++) {
		cluster_harness_ask(&cluster, leader, "frozen", status,
		    sizeof(status));
		cluster_harness_ask(&cluster, leader, NULL, stats,
		    sizeof(stats));
		if (strstr(status, " queue=1") != NULL &&
		    strstr(stats, " watches=1 ") != NULL)
			break;
		harness_sleep_ms(100);
	}
	if (i == 50)
		fail_msg("not waiting at the leader: %s; %s", status, stats);

	harness_server_pause(cluster.nodes[leader]);
	paused = harness_now_ms();
	deadline = paused + 30000;
	while (harness_now_ms() < deadline &&
	    (__atomic_load_n(&f[0].done, __ATOMIC_ACQUIRE) == 0 ||
	    __atomic_load_n(&f[1].done, __ATOMIC_ACQUIRE) == 0))
		harness_sleep_ms(100);
	left = !__atomic_load_n(&f[0].done, __ATOMIC_ACQUIRE) +
	    !__atomic_load_n(&f[1].done, __ATOMIC_ACQUIRE);
	printf("# SIGSTOP of the leader to both waits answered: %lld ms "
	    "(%d still waiting)\n", (long long)(harness_now_ms() - paused),
	    left);
	/* Set the calls free (the resumed leader closes them), then judge. */
	harness_server_resume(cluster.nodes[leader]);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(thread[i], NULL), 0);
	if (left > 0)
		fail_msg("%d call(s) still waited 30 s after the leader was "
		    "paused", left);
	if (f[0].rc != LOCKD_OK)
		fail_msg("acquire: %s (%s)", lockd_strerror(f[0].rc),
		    f[0].c->errstr);
	if (f[1].rc != LOCKD_OK)
		fail_msg("watch: %s (%s)", lockd_strerror(f[1].rc),
		    f[1].c->errstr);
	assert_true(f[0].lease.fence > held.fence);
	assert_int_equal(f[1].info.fence, f[0].lease.fence);
	for (i = 0; i < 2; i++)
		lockd_free(f[i].c);
}

/*
 * An ACQUIRE whose connection breaks while it waits (the leader is killed):
 * the caller is answered once - its own grant from the new leader, never a
 * second grant and never a second place in the queue.
 */
struct waiter {
	lockd_context *c;
	int rc;
	lockd_lease lease;
	int64_t done_at;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->rc = lockd_acquire(w->c, "queued", 20000, 15000,
	    LOCKD_ONCLOSE_KEEP, &w->lease);
	w->done_at = harness_now_ms();
	return NULL;
}

static void
test_failover_acquire_in_flight_is_answered_once(void **state)
{
	lockd_context *holder;
	lockd_lease held;
	struct harness_conn *queue;
	struct waiter w;
	pthread_t thread;
	char status[256], want[80];
	int leader, now_leader;

	(void)state;
	cluster_harness_start(&cluster, 3, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	holder = connect_list(cluster.endpoints);
	assert_int_equal(lockd_acquire(holder, "queued", 20000, 0,
	    LOCKD_ONCLOSE_KEEP, &held), LOCKD_OK);
	memset(&w, 0, sizeof(w));
	w.c = connect_list(cluster.endpoints);
	assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
	queue = harness_connect(cluster.nodes[leader]);
	harness_await_queue(queue, "queued", 1);    /* it waits there now */
	harness_close(queue);

	cluster_harness_kill(&cluster, leader);
	/* The holder lets go on the new leader: the waiter's turn. */
	assert_int_equal(lockd_release(holder, &held), LOCKD_OK);
	assert_int_equal(pthread_join(thread, NULL), 0);
	printf("# the ACQUIRE in flight: %s (%s)\n", lockd_strerror(w.rc),
	    w.c->errstr);
	now_leader = cluster_harness_find_leader(&cluster);
	assert_true(now_leader >= 0);
	cluster_harness_ask(&cluster, now_leader, "queued", status,
	    sizeof(status));
	/* Sent again with its rid on the new leader: granted once, behind
	 * the holder, and nothing left in the queue. */
	assert_int_equal(w.rc, LOCKD_OK);
	assert_true(w.lease.fence > held.fence);
	snprintf(want, sizeof(want), "STATUS queued held=1 fence=%llu ttl=",
	    (unsigned long long)w.lease.fence);
	if (strncmp(status, want, strlen(want)) != 0 ||
	    strstr(status, " queue=0") == NULL)
		fail_msg("the new leader says \"%s\"", status);
	assert_int_equal(lockd_release(w.c, &w.lease), LOCKD_OK);
	lockd_free(w.c);
	lockd_free(holder);
}

/*
 * A context to lockd s through a proxy that loses the first GRANTED it
 * sees (cluster_harness_lossy_proxy): list, its one endpoint, is the
 * caller's, and *proxy the proxy's PID.  One endpoint: fail-over is on
 * when asked for, and it is.
 */
static lockd_context *
connect_lossy(struct harness_server *s, char *list, size_t size,
    pid_t *proxy)
{
	lockd_context *c;
	int lfd, port;

	assert_true((lfd = harness_listen_loopback(&port)) >= 0);
	*proxy = cluster_harness_lossy_proxy(lfd, s->port);
	snprintf(list, size, "127.0.0.1:%d", port);
	c = connect_list(list);
	assert_int_equal(lockd_set_failover_timeout(c, 3000), LOCKD_OK);
	return c;
}

static void
test_failover_acquire_whose_reply_was_lost_finds_its_grant(void **state)
{
	struct harness_server *s;
	struct harness_conn *direct;
	lockd_context *c;
	lockd_lease lease;
	char list[32];
	const char *line;
	int rc;
	pid_t pid;

	(void)state;
	s = harness_start(NULL);
	c = connect_lossy(s, list, sizeof(list), &pid);
	rc = lockd_acquire(c, "lost", 20000, 2000, LOCKD_ONCLOSE_KEEP, &lease);
	printf("# ACQUIRE whose GRANTED was lost: %s %s\n", lockd_strerror(rc),
	    rc == LOCKD_OK ? lease.handle : c->errstr);
	assert_int_equal(rc, LOCKD_OK);
	/* Its own grant: the first and only one, nobody waits. */
	assert_int_equal(lease.fence, 1);
	direct = harness_connect(s);
	harness_send(direct, "STATUS lost\r\n");
	line = harness_expect_prefix(direct, "STATUS lost held=1 fence=1 ");
	assert_non_null(strstr(line, " queue=0"));
	assert_int_equal(lockd_renew(c, &lease, 20000), LOCKD_OK);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * The same with a semaphore: the repeat carries its rid and its limit, so
 * it finds its own grant (another limit would be ERR BADARG), and one
 * permit is taken, not two.
 */
static void
test_failover_semaphore_acquire_whose_reply_was_lost_finds_its_grant(
    void **state)
{
	struct harness_server *s;
	struct harness_conn *direct;
	lockd_acquire_options ao;
	lockd_kind kind;
	lockd_context *c;
	lockd_lease lease;
	char list[32];
	const char *line;
	int rc;
	pid_t pid;

	(void)state;
	s = harness_start(NULL);
	c = connect_lossy(s, list, sizeof(list), &pid);
	memset(&ao, 0, sizeof(ao));
	ao.lease_ms = 20000;
	ao.wait_ms = 2000;
	memset(&kind, 0, sizeof(kind));
	kind.size = sizeof(kind);
	kind.limit = 2;
	rc = lockd_acquire_kind(c, "lost-sem", &ao, &kind, NULL, &lease);
	printf("# semaphore ACQUIRE whose GRANTED was lost: %s %s\n",
	    lockd_strerror(rc), rc == LOCKD_OK ? lease.handle : c->errstr);
	assert_int_equal(rc, LOCKD_OK);
	assert_int_equal(lease.fence, 1);
	direct = harness_connect(s);
	harness_send(direct, "STATUS lost-sem\r\n");
	line = harness_expect_prefix(direct, "STATUS lost-sem held=1 fence=1 ");
	printf("# %s\n", line);
	assert_non_null(strstr(line, " queue=0"));
	assert_non_null(strstr(line, " holders=1"));
	assert_non_null(strstr(line, " limit=2"));
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* lockctl acquire --rid: the same rid again is the same grant. */
static void
test_failover_lockctl_acquire_with_a_rid_repeats_its_grant(void **state)
{
	struct harness_server *s;
	char port[16], out[2][256], err[256];
	int i, rc;

	(void)state;
	s = harness_start(NULL);
	snprintf(port, sizeof(port), "%d", s->port);
	for (i = 0; i < 2; i++) {
		const char *argv[] = {
			harness_program("lockctl"), "-p", port, "acquire",
			"-w", "1", "--rid", "job-42", "r", NULL,
		};

		rc = harness_run((char *const *)argv, 10000, out[i],
		    sizeof(out[i]), err, sizeof(err));
		if (rc != 0)
			fail_msg("lockctl acquire --rid: exit %d: %s", rc, err);
	}
	/* "fence=1 handle=1-... lease=...": the same fence and handle. */
	assert_int_equal(strncmp(out[0], "fence=1 handle=", 15), 0);
	assert_non_null(strstr(out[0], " lease="));
	assert_int_equal(strncmp(out[0], out[1],
	    (size_t)(strstr(out[0], " lease=") - out[0])), 0);
	{
		const char *argv[] = {
			harness_program("lockctl"), "-p", port, "try", "--rid",
			"job-43", "r", NULL,
		};

		assert_int_equal(harness_run((char *const *)argv, 10000, NULL,
		    0, NULL, 0), 1);
	}
}

/*
 * TLS over a list of URLs: each endpoint is verified under its own name
 * (an IP address, then localhost), and a restart of lockd is followed by
 * a new handshake.
 */
static void
test_failover_tls_endpoints_each_verify_their_own_name(void **state)
{
	char ca[HARNESS_PATH_MAX], list[256];
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	lockd_lease lease;

	(void)state;
	s = cluster_harness_tls_node(list, sizeof(list), ca, sizeof(ca));
	memset(&o, 0, sizeof(o));
	o.url = list;
	o.tls_ca_file = ca;
	o.connect_timeout_ms = CONNECT_MS;
	o.command_timeout_ms = 5000;
	c = lockd_connect(&o);
	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect %s: %s", list, c->errstr);
	assert_int_equal(lockd_acquire(c, "tls", 20000, 0, LOCKD_ONCLOSE_KEEP,
	    &lease), LOCKD_OK);
	/* lockd restarts: the next call connects and shakes hands anew. */
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
	harness_server_restart(s);
	if (lockd_renew(c, &lease, 20000) != LOCKD_OK)
		fail_msg("renew after a restart: %s", c->errstr);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
}

/* ---- lockctl run -------------------------------------------------------- */

static pid_t
spawn_run(const char *lease, const char *name, const char *script,
    const char *err_path)
{
	const char *argv[] = {
		harness_program("lockctl"), "-H", cluster.endpoints, "-t",
		"1s",
		"run", "-l", lease, name, "-c", script, NULL,
	};

	return harness_spawn((char *const *)argv, NULL, err_path);
}

static void
show_file(const char *path)
{
	char text[4096];

	if (harness_read_file(path, text, sizeof(text)))
		printf("# %s:\n%s", path, text);
}

/* The lock's ttl at node (-1: not held or no answer). */
static int64_t
ttl_at(struct harness_conn *c, const char *name)
{
	const char *line, *ttl;

	harness_send(c, "STATUS %s\r\n", name);
	line = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
	if (line == NULL || strstr(line, " held=1 ") == NULL ||
	    (ttl = strstr(line, " ttl=")) == NULL)
		return -1;
	return atoll(ttl + 5);
}

/*
 * Two nodes, the leader first in -H.  The leader is killed half a second
 * before run's next renewal is due: that renewal meets the broken
 * connection, then the other node while it does not lead yet (a take-over
 * needs the leader lease, 3 s), and must follow it until it leads.  A
 * 15 s lease leaves 6.5 s from the kill before run must stop the command.
 */
static void
test_failover_run_keeps_its_command_through_a_fail_over(void **state)
{
	const char *dir = harness_tempdir();
	char err[256], done[256], script[512];
	struct harness_conn *c;
	int leader, status, i;
	int64_t ttl = -1, killed;
	pid_t pid;

	(void)state;
	cluster_harness_start(&cluster, 2, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	snprintf(cluster.endpoints, sizeof(cluster.endpoints),
	    "127.0.0.1:%d,127.0.0.1:%d",
	    cluster.nodes[leader]->port, cluster.nodes[1 - leader]->port);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(done, sizeof(done), "%s/done", dir);
	snprintf(script, sizeof(script), "sleep 10; echo ok > %s", done);
	pid = spawn_run("15s", "job", script, err);
	assert_true(pid > 0);
	/* Just renewed (granted): the next renewal is 5 s later. */
	c = harness_connect(cluster.nodes[leader]);
	for (i = 0; i < 200 && (ttl = ttl_at(c, "job")) < 14800; i++)
		harness_sleep_ms(10);
	assert_true(ttl >= 14800);
	harness_sleep_ms(5000 - (15000 - ttl) - 500);
	killed = cluster_harness_kill(&cluster, leader);
	status = harness_wait(pid, 20000);
	show_file(err);
	printf("# run's command ended %lld ms after the kill\n",
	    (long long)(harness_now_ms() - killed));
	assert_int_equal(status, 0);
	assert_true(harness_wait_for_file(done, 100));
}

/*
 * No leader for longer than the lease: the command is stopped, and lockctl
 * has exited, before the lease the old leader had could end - counted from
 * a STATUS sent just before the kill, whose ttl bounds that lease's end
 * from below.
 */
static void
test_failover_run_stops_its_command_when_no_leader_comes_back(void **state)
{
	const char *dir = harness_tempdir();
	char err[256], line[256], *ttl;
	struct harness_conn *c;
	int leader, other, status, i;
	int64_t sent, ends, exited;
	pid_t pid;

	(void)state;
	cluster_harness_start(&cluster, 2, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	other = 1 - leader;
	snprintf(err, sizeof(err), "%s/err", dir);
	pid = spawn_run("4s", "stops", "sleep 30", err);
	assert_true(pid > 0);
	c = harness_connect(cluster.nodes[leader]);
	for (i = 0; i < 100; i++) {
		harness_send(c, "STATUS stops\r\n");
		snprintf(line, sizeof(line), "%s", harness_read_line(c,
		    HARNESS_REPLY_TIMEOUT_MS));
		if (strncmp(line, "STATUS stops held=1 ", 20) == 0)
			break;
		harness_sleep_ms(50);
	}
	assert_true(i < 100);
	harness_sleep_ms(1000);
	sent = harness_now_ms();
	harness_send(c, "STATUS stops\r\n");
	snprintf(line, sizeof(line), "%s", harness_read_line(c,
	    HARNESS_REPLY_TIMEOUT_MS));
	harness_server_pause(cluster.nodes[other]);
	cluster_harness_kill(&cluster, leader);
	assert_non_null(ttl = strstr(line, " ttl="));
	ends = sent + atoll(ttl + 5);
	status = harness_wait(pid, 10000);
	exited = harness_now_ms();
	show_file(err);
	printf("# lockctl exited %lld ms before the lease could end\n",
	    (long long)(ends - exited));
	assert_int_equal(status, 79);
	assert_true(exited < ends);
	harness_server_resume(cluster.nodes[other]);
}

/* lockctl nodes against the cluster: its exit code, output into out. */
static int
lockctl_nodes(char *out, size_t size)
{
	const char *argv[] = {
		harness_program("lockctl"), "-H", cluster.endpoints, "-t",
		"2s", "nodes", NULL,
	};
	char err[1024];

	return harness_run((char *const *)argv, 20000, out, size, err,
	    sizeof(err));
}

/* The line of out for node i, or fails the test. */
static const char *
node_line_of(const char *out, int i, char *line, size_t size)
{
	char want[64];
	const char *p, *end;

	snprintf(want, sizeof(want), "endpoint=127.0.0.1:%d ",
	    cluster.nodes[i] != NULL ? cluster.nodes[i]->port : 0);
	if ((p = strstr(out, want)) == NULL)
		fail_msg("no line for node %d in \"%s\"", i, out);
	end = strchr(p, '\n');
	snprintf(line, size, "%.*s", (int)(end != NULL ? end - p :
	    (ptrdiff_t)strlen(p)), p);
	return line;
}

/*
 * Issue 25, item 9: lockctl nodes shows each node's role, the leader it
 * knows and whether it reaches etcd, on a real 3-node cluster over a real
 * etcd; a node that is down says so; with etcd gone no node leads, and
 * lockctl exits 69.
 */
static void
test_failover_lockctl_nodes_shows_roles_leader_and_etcd(void **state)
{
	char out[2048], line[256], want[128];
	int leader, i, rc = -1, port[CLUSTER_HARNESS_NODES];
	int64_t deadline;

	(void)state;
	cluster_harness_start(&cluster, 3, "f", NULL);
	leader = cluster_harness_find_leader(&cluster);
	assert_true(leader >= 0);
	for (i = 0; i < CLUSTER_HARNESS_NODES; i++) {
		port[i] = cluster.nodes[i]->port;
		if (i != leader)
			cluster_harness_await_hint(&cluster, i, leader);
	}
	assert_int_equal(lockctl_nodes(out, sizeof(out)), 0);
	printf("# %s", out);
	for (i = 0; i < CLUSTER_HARNESS_NODES; i++) {
		snprintf(want, sizeof(want), "endpoint=127.0.0.1:%d role=%s "
		    "leader=127.0.0.1:%d etcd=ok", port[i], i == leader ?
		    "leader" : "follower", port[leader]);
		assert_string_equal(node_line_of(out, i, line, sizeof(line)),
		    want);
	}
	/* A follower gone: down, and the cluster still has a leader. */
	i = (leader + 1) % CLUSTER_HARNESS_NODES;
	snprintf(want, sizeof(want), "endpoint=127.0.0.1:%d role=down",
	    port[i]);
	(void)node_line_of(out, i, line, sizeof(line));
	cluster_harness_kill(&cluster, i);
	assert_int_equal(lockctl_nodes(out, sizeof(out)), 0);
	assert_non_null(strstr(out, want));
	/* etcd gone: the leader's lease runs out, nobody leads. */
	for (i = 0; i < 3; i++)
		etcd_member_kill(&cluster.etcd, i);
	deadline = harness_now_ms() + CLUSTER_HARNESS_RECOVER_MS;
	while (harness_now_ms() < deadline &&
	    (rc = lockctl_nodes(out, sizeof(out))) == 0)
		harness_sleep_ms(200);
	printf("# %s", out);
	assert_int_equal(rc, 69);
	assert_null(strstr(out, "role=leader"));
	assert_non_null(strstr(out, "etcd=unreachable"));
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_failover_endpoint_lists_parse_and_skip_a_dead_endpoint),
		HARNESS_TEST(
		    test_failover_notleader_loop_between_two_bad_hints_ends),
		HARNESS_TEST(
		    test_failover_a_node_naming_itself_is_not_asked_again),
		HARNESS_TEST(
		    test_failover_acquire_whose_reply_was_lost_finds_its_grant),
		HARNESS_TEST(
		    test_failover_lockctl_acquire_with_a_rid_repeats_its_grant),
		HARNESS_TEST(
		    test_failover_keepalive_starting_at_a_follower_renews_at_the_leader),
		cmocka_unit_test(
		    test_failover_semaphore_acquire_whose_reply_was_lost_finds_its_grant),
		HARNESS_TEST(
		    test_failover_tls_endpoints_each_verify_their_own_name),
		cmocka_unit_test_setup_teardown(
		    test_failover_client_starting_at_a_follower_is_redirected,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_kill_of_the_leader_moves_the_client_on,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_acquire_in_flight_is_answered_once,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_paused_leader_is_left_by_timeout,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_waits_without_a_limit_leave_a_paused_leader,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_run_keeps_its_command_through_a_fail_over,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_run_stops_its_command_when_no_leader_comes_back,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_failover_lockctl_nodes_shows_roles_leader_and_etcd,
		    harness_setup, teardown),
	};

	const char *filter = getenv("TEST_FILTER");

	if (filter != NULL && *filter != '\0')
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests(tests, cluster_harness_group_setup,
	    cluster_harness_group_teardown);
}
