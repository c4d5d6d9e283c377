/*
 * test_cluster_kinds.c - issue 17's lock kinds in cluster mode, against a
 * real etcd (tests/lib/etcd_harness.c) and two lockd nodes on free
 * loopback ports, each killed by its own PID.  A commit etcd refuses
 * cleanly while the leader keeps its key - here a transaction larger than
 * etcd's --max-request-bytes, which etcd answers "request is too large"
 * without writing anything - must leave every name it touched exactly as
 * etcd has it: a semaphore's and a shared lock's holders, each under its
 * own holder key (<name> NUL <fence>), with their leases as last
 * committed, none of the batch's new holders, and none of its releases.
 * STATUS, LIST and CHECK show that on the leader, and again on the other
 * node after the leader is killed and it takes over.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/cluster_harness.h"
#include "tests/lib/etcd_harness.h"
#include "tests/lib/harness.h"

#define NODES 2
#define LEADER_LEASE "2s"      /* etcd's least: short fail-overs */
#define LEADER_LEASE_MS 2000
#define RECOVER_MS 15000       /* bound on finding the new leader */
/* One grant's transaction (the hwm and one record, about 400 bytes on
 * the wire to etcd) goes in; a batch of several records with 64-byte
 * owners and rids does not. */
#define REQUEST_BYTES 1100
#define LEASE_MS 60000         /* outlives the test and its fail-over */
#define HOLDERS 3
#define BATCH 10             /* requests in the refused batch */
#define DELAY_HOLDERS 5        /* beside the holder with a delay */
#define DELAYED_LEASE_MS 2000   /* outlives the five grants beside it */
#define DELAY_MS 4000
#define CLOCK_SLACK_MS 5       /* lockd and the test round to whole ms */

static struct etcd_cluster etcd;
static struct harness_server *nodes[NODES];

static int
teardown(void **state)
{
	etcd_cluster_stop(&etcd);
	return harness_teardown(state);
}

/* One etcd member that refuses a transaction over REQUEST_BYTES, and
 * NODES lockd nodes; the index of the one that leads. */
static int
start_cluster(void)
{
	struct etcd_cluster_options opt = {
		.max_request_bytes = REQUEST_BYTES,
	};
	int leader, i;

	assert_int_equal(etcd_cluster_start_secure(&etcd, 1, &opt), 0);
	for (i = 0; i < NODES; i++) {
		nodes[i] = harness_server_new();
		harness_server_start(nodes[i], "--etcd", etcd.urls,
		    "--cluster", "k", "--leader-lease", LEADER_LEASE, NULL);
	}
	leader = cluster_harness_leader_of(nodes, NODES, RECOVER_MS);
	assert_true(leader >= 0);
	return leader;
}

/* SIGSTOP to s, and its taking effect (state T in /proc), awaited: a
 * request sent before would be read in a pass of its own. */
static void
pause_for_sure(struct harness_server *s)
{
	int64_t deadline = harness_now_ms() + 2000;
	char path[64], stat[256];

	harness_server_pause(s);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)s->pid);
	while (harness_now_ms() < deadline) {
		const char *state;

		if (harness_read_file(path, stat, sizeof(stat)) &&
		    (state = strrchr(stat, ')')) != NULL && state[1] == ' ' &&
		    state[2] == 'T')
			return;
		harness_sleep_ms(5);
	}
	fail_msg("lockd %d did not stop", (int)s->pid);
}

/*
 * CHECK name fence: CURRENT, with a ttl at most `most` ms.  A CHECK about
 * a lock the batch in flight writes rests on it, and a batch etcd refuses
 * turns it into ERR UNAVAILABLE, as it does a TRY (the lock-delay test's
 * loop counts those): asked again then, for up to a few seconds.
 */
static void
expect_current(struct harness_conn *c, const char *name, uint64_t fence,
    int64_t most)
{
	int64_t deadline = harness_now_ms() + 5000;
	const char *line, *ttl;
	char head[128];

	snprintf(head, sizeof(head), "CURRENT %s fence=%llu ttl=", name,
	    (unsigned long long)fence);
	for (;;) {
		harness_send(c, "CHECK %s %llu\n", name,
		    (unsigned long long)fence);
		line = harness_read_line(c, 5000);
		assert_non_null(line);
		if (strncmp(line, "ERR UNAVAILABLE", 15) != 0 ||
		    harness_now_ms() > deadline)
			break;
		harness_sleep_ms(50);
	}
	if (strncmp(line, head, strlen(head)) != 0)
		fail_msg("expected a line starting '%s', got '%s'", head,
		    line);
	ttl = line + strlen(head);
	if (atoll(ttl) <= 0 || atoll(ttl) > most)
		fail_msg("holder %s/%llu: %s (ttl at most %lld wanted)", name,
		    (unsigned long long)fence, line, (long long)most);
}

/*
 * What the leader must show for the two names after the refused batch,
 * and the other node after it takes over: the HOLDERS holders of each,
 * the newest's fence, g[1]'s and r[1]'s leases not lengthened by the
 * refused RENEW, and no trace of the name the batch made.
 */
static void
expect_as_committed(struct harness_conn *c, const struct harness_grant *g,
    const struct harness_grant *r, int64_t most)
{
	char fence[48];
	int i;

	snprintf(fence, sizeof(fence), " fence=%llu ",
	    (unsigned long long)g[HOLDERS - 1].fence);
	harness_send(c, "STATUS pool\n");
	harness_expect_fields(c, "STATUS pool held=1 ", (const char *const[]){
	    fence, " holders=3 limit=4", NULL });
	snprintf(fence, sizeof(fence), " fence=%llu ",
	    (unsigned long long)r[HOLDERS - 1].fence);
	harness_send(c, "STATUS rw\n");
	harness_expect_fields(c, "STATUS rw held=1 ", (const char *const[]){
	    fence, " holders=3 mode=shared", NULL });
	harness_send(c, "STATUS fresh\n");
	harness_expect_prefix(c, "STATUS fresh held=0 fence=0 ");
	for (i = 0; i < HOLDERS; i++) {
		expect_current(c, "pool", g[i].fence, most);
		expect_current(c, "rw", r[i].fence, most);
	}
	/* The newest fences the refused batch minted were never told;
	 * whatever they were, no holder above the last told one lives. */
	harness_send(c, "CHECK pool %llu\n",
	    (unsigned long long)g[HOLDERS - 1].fence + 1);
	harness_expect_prefix(c, "STALE pool ");
	harness_send(c, "LIST\n");
	harness_expect_fields(c, "LOCK pool held=1 ", (const char *const[]){
	    " holders=3 limit=4", NULL });
	harness_expect_fields(c, "LOCK rw held=1 ", (const char *const[]){
	    " holders=3 mode=shared", NULL });
	harness_expect_line(c, "END count=2");
}

/*
 * A semaphore (limit=4) and a shared lock, three holders each, committed
 * one grant at a time.  Then one batch etcd refuses: a release, a renew
 * and two new holders of each name, and a new name with two holders.
 * Every reply of the batch is UNAVAILABLE; the leader keeps leading, and
 * puts back exactly the holders etcd has.  The handles still renew (only
 * the told ones), and after a kill -9 of the leader the other node shows
 * the same holders.
 */
static void
test_cluster_kinds_refused_commit_puts_back_every_holder(void **state)
{
	struct harness_grant g[HOLDERS], r[HOLDERS], extra;
	struct harness_conn *c, *b[BATCH];
	char label[64], batch[BATCH][256];
	int leader, other, i;

	(void)state;
	leader = start_cluster();
	other = 1 - leader;
	c = harness_connect(nodes[leader]);
	for (i = 0; i < HOLDERS; i++) {
		harness_send(c, "ACQUIRE pool limit=4 lease=%d owner=p%d "
		    "rid=p%d\n", LEASE_MS, i, i);
		harness_expect_granted(c, "pool", &g[i]);
		harness_send(c, "ACQUIRE rw mode=shared lease=%d owner=r%d "
		    "rid=r%d\n", LEASE_MS, i, i);
		harness_expect_granted(c, "rw", &r[i]);
	}

	/* Each request on its own connection, all sent while the leader is
	 * stopped: one loop pass reads them all, so they form one batch,
	 * too large for etcd. */
	memset(label, 'x', 63);
	label[63] = '\0';
	snprintf(batch[0], sizeof(batch[0]), "RELEASE pool %s\n",
	    g[0].handle);
	snprintf(batch[1], sizeof(batch[1]), "RENEW pool %s lease=%d\n",
	    g[1].handle, 2 * LEASE_MS);
	snprintf(batch[2], sizeof(batch[2]), "RELEASE rw %s\n", r[0].handle);
	snprintf(batch[3], sizeof(batch[3]), "RENEW rw %s lease=%d\n",
	    r[1].handle, 2 * LEASE_MS);
	for (i = 4; i < BATCH; i++)
		snprintf(batch[i], sizeof(batch[i]), "ACQUIRE %s wait=0 "
		    "owner=%c%s rid=%c%s\n", i < 6 ? "pool limit=4" : i < 8 ?
		    "rw mode=shared" : "fresh limit=2", 'a' + i, label,
		    'a' + i, label);
	/* Each connection answered once: lockd has accepted them all. */
	for (i = 0; i < BATCH; i++) {
		b[i] = harness_connect(nodes[leader]);
		harness_send(b[i], "STATUS pool\n");
		harness_expect_prefix(b[i], "STATUS pool held=1 ");
	}
	pause_for_sure(nodes[leader]);
	for (i = 0; i < BATCH; i++)
		harness_send(b[i], "%s", batch[i]);
	harness_server_resume(nodes[leader]);
	/* A release is answered at once (it is not durable: one lost
	 * only lets the lease run out); the rest rests on the batch. */
	harness_expect_line(b[0], "RELEASED pool");
	harness_expect_line(b[2], "RELEASED rw");
	for (i = 0; i < BATCH; i++)
		if (i != 0 && i != 2)
			harness_expect_error(b[i], "UNAVAILABLE");
	assert_true(harness_log_contains(nodes[leader], "request is too "
	    "large"));
	assert_int_equal(cluster_harness_role_of(nodes[leader], NULL), 1);

	expect_as_committed(c, g, r, LEASE_MS);
	/* A rid of the refused batch names no grant: a new request. */
	harness_send(c, "TRY pool limit=4 lease=%d rid=a%.63s\n", LEASE_MS,
	    label);
	harness_expect_granted(c, "pool", &extra);
	assert_true(extra.fence > g[HOLDERS - 1].fence);
	assert_int_equal(extra.lease_ms, LEASE_MS);
	harness_send(c, "RELEASE pool %s\n", extra.handle);
	harness_expect_line(c, "RELEASED pool");
	/* The told handles renew.  RENEWED is told once its batch is in
	 * etcd, and that batch holds the release before it too (a release
	 * alone is committed lazily). */
	harness_send(c, "RENEW pool %s lease=%d\nRENEW rw %s lease=%d\n",
	    g[0].handle, LEASE_MS, r[0].handle, LEASE_MS);
	harness_expect_prefix(c, "RENEWED pool ");
	harness_expect_prefix(c, "RENEWED rw ");
	harness_close(c);

	harness_server_kill(nodes[leader]);
	assert_int_equal(cluster_harness_leader_of(nodes, NODES, RECOVER_MS),
	    other);
	c = harness_connect(nodes[other]);
	/* The take-over adds the leader lease to every lease. */
	expect_as_committed(c, g, r, LEASE_MS + LEADER_LEASE_MS);
	harness_close(c);
}

/*
 * A holder with delay= ends by expiry beside five others whose records,
 * with 64-byte owners and rids, all carry the name's delay: the batch
 * that starts the delay rewrites them all, and etcd refuses it, again at
 * each retry, for as long as the delay runs.  The name must stay held
 * back all that time - every TRY HELD (or UNAVAILABLE, when its reply
 * rested on a refused batch), however the table falls back -
 * while the others keep holding; once the delay is over the name is
 * granted again.
 */
static void
test_cluster_kinds_refused_commit_keeps_a_holders_lock_delay(void **state)
{
	struct harness_grant delayed, g[DELAY_HOLDERS], fresh;
	struct harness_conn *c;
	char label[64];
	int64_t sent, until, deadline;
	uint64_t tries = 0, held = 0, unavailable = 0, failures;
	const char *line;
	int leader, i;

	(void)state;
	leader = start_cluster();
	c = harness_connect(nodes[leader]);
	memset(label, 'y', 63);
	label[63] = '\0';
	sent = harness_now_ms();
	harness_send(c, "ACQUIRE pool limit=8 lease=%d delay=%d owner=d\n",
	    DELAYED_LEASE_MS, DELAY_MS);
	harness_expect_granted(c, "pool", &delayed);
	for (i = 0; i < DELAY_HOLDERS; i++) {
		harness_send(c, "ACQUIRE pool limit=8 lease=%d owner=%d%s "
		    "rid=%d%s\n", LEASE_MS, i, label, i, label);
		harness_expect_granted(c, "pool", &g[i]);
	}
	/* Certainly held back from the latest end of the delayed holder's
	 * lease until its earliest end plus its delay. */
	until = sent + DELAYED_LEASE_MS + DELAY_MS;
	harness_sleep_ms(delayed.lease_ms + 200);
	while (harness_now_ms() + CLOCK_SLACK_MS < until) {
		harness_send(c, "TRY pool limit=8\n");
		line = harness_read_line(c, 5000);
		assert_non_null(line);
		/* HELD; or UNAVAILABLE, when the reply rested on the batch
		 * in flight that etcd refused: never GRANTED. */
		if (strncmp(line, "HELD pool", 9) == 0)
			held++;
		else if (strncmp(line, "ERR UNAVAILABLE", 15) == 0)
			unavailable++;
		else if (harness_now_ms() + CLOCK_SLACK_MS < until)
			fail_msg("inside the lock-delay (until %lld ms from "
			    "now): %s", (long long)(until - harness_now_ms()),
			    line);
		tries++;
		harness_sleep_ms(100);
	}
	assert_true(tries > 0);
	assert_true(harness_log_contains(nodes[leader], "request is too "
	    "large"));
	failures = harness_stat(c, "commit_failures");
	printf("lock-delay held through %llu refused commits: %llu TRYs, "
	    "%llu HELD, %llu UNAVAILABLE\n", (unsigned long long)failures,
	    (unsigned long long)tries, (unsigned long long)held,
	    (unsigned long long)unavailable);
	assert_true(failures > 0 && held > 0);
	for (i = 0; i < DELAY_HOLDERS; i++)
		expect_current(c, "pool", g[i].fence, LEASE_MS);
	/* Over: the name is granted again (the refused batch went small
	 * once no delay rewrites the other holders). */
	deadline = harness_now_ms() + 10000;
	for (;;) {
		harness_send(c, "TRY pool limit=8 lease=%d\n", LEASE_MS);
		line = harness_read_line(c, 5000);
		assert_non_null(line);
		if (harness_parse_granted(line, &fresh))
			break;
		if (harness_now_ms() > deadline)
			fail_msg("the name was never granted after its delay: "
			    "%s", line);
		harness_sleep_ms(100);
	}
	assert_true(fresh.fence > g[DELAY_HOLDERS - 1].fence);
	harness_send(c, "CHECK pool %llu\n",
	    (unsigned long long)delayed.fence);
	harness_expect_prefix(c, "STALE pool ");
	for (i = 0; i < DELAY_HOLDERS; i++)
		expect_current(c, "pool", g[i].fence, LEASE_MS);
	harness_close(c);
}

/*
 * A read lock with two readers, a writer waiting, and a reader waiting
 * behind the writer (writers do not starve).  Both readers release in
 * one batch with three large grants of another name: the writer is
 * granted in that batch, which etcd refuses.  The writer is told
 * UNAVAILABLE (it waits no more), the readers are back as etcd has them,
 * and the reader that waited now stands at the head of the queue beside
 * shared holders: it must be granted, not left waiting for them to end.
 */
static void
test_cluster_kinds_refused_commit_serves_the_queue_it_leaves(void **state)
{
	struct harness_grant r[2], late;
	struct harness_conn *c, *writer, *reader, *b[BATCH];
	char label[64];
	int leader, i, n = 0;

	(void)state;
	leader = start_cluster();
	c = harness_connect(nodes[leader]);
	memset(label, 'z', 63);
	label[63] = '\0';
	for (i = 0; i < 2; i++) {
		harness_send(c, "ACQUIRE rw mode=shared lease=%d\n", LEASE_MS);
		harness_expect_granted(c, "rw", &r[i]);
	}
	writer = harness_connect(nodes[leader]);
	harness_send(writer, "ACQUIRE rw lease=%d wait=30000 owner=w%s\n",
	    LEASE_MS, label);
	harness_await_queue(c, "rw", 1);
	reader = harness_connect(nodes[leader]);
	harness_send(reader, "ACQUIRE rw mode=shared lease=%d wait=30000\n",
	    LEASE_MS);
	harness_await_queue(c, "rw", 2);

	for (i = 0; i < 5; i++) {
		b[i] = harness_connect(nodes[leader]);
		harness_send(b[i], "STATUS rw\n");
		harness_expect_prefix(b[i], "STATUS rw held=1 ");
	}
	pause_for_sure(nodes[leader]);
	harness_send(b[n++], "RELEASE rw %s\n", r[0].handle);
	harness_send(b[n++], "RELEASE rw %s\n", r[1].handle);
	for (i = 0; i < 3; i++)
		harness_send(b[n++], "ACQUIRE filler limit=8 wait=0 owner=%d%s "
		    "rid=%d%s\n", i, label, i, label);
	harness_server_resume(nodes[leader]);
	harness_expect_line(b[0], "RELEASED rw");
	harness_expect_line(b[1], "RELEASED rw");
	for (i = 2; i < n; i++)
		harness_expect_error(b[i], "UNAVAILABLE");
	harness_expect_error(writer, "UNAVAILABLE");
	assert_true(harness_log_contains(nodes[leader], "request is too "
	    "large"));

	harness_expect_granted_within(reader, "rw", 5000, &late);
	assert_true(late.fence > r[1].fence);
	harness_send(c, "STATUS rw\n");
	harness_expect_fields(c, "STATUS rw held=1 ", (const char *const[]){
	    " queue=0 ", " holders=3 mode=shared", NULL });
	harness_send(c, "STATUS filler\n");
	harness_expect_prefix(c, "STATUS filler held=0 ");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_cluster_kinds_refused_commit_puts_back_every_holder,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_cluster_kinds_refused_commit_keeps_a_holders_lock_delay,
		    harness_setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_cluster_kinds_refused_commit_serves_the_queue_it_leaves,
		    harness_setup, teardown),
	};

	if (argc > 1) {
		char pattern[256];
		snprintf(pattern, sizeof(pattern), "*%s*", argv[1]);
		cmocka_set_test_filter(pattern);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
