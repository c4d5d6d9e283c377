/*
 * test_kinds.c - issue 17's lock kinds on the wire, against the real
 * lockd over real sockets with its LMDB store and journal: a counting
 * semaphore (limit=) and a shared (read) lock (mode=shared), their fields
 * in STATUS and LIST, CHECK for any holder, and every holder back after a
 * kill -9 with its lease, owner and rid.  Behaviour seen on the wire
 * only; each test kills its own lockd by PID.
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

#include "tests/lib/harness.h"

/*
 * A semaphore of 2 shared by four connections: two hold at once with
 * distinct fences, the third waits and takes the first permit freed (FIFO),
 * TRY is HELD while anyone waits; readers share, a writer waits for them,
 * and a reader behind the waiting writer waits too.
 */
static void
test_kinds_semaphore_and_readers_over_sockets(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c[5];
	struct harness_grant g[4];

	(void)state;
	for (int i = 0; i < 5; i++)
		c[i] = harness_connect(s);
	harness_send(c[0], "ACQUIRE pool limit=2 owner=w0\n");
	harness_expect_granted(c[0], "pool", &g[0]);
	harness_send(c[1], "ACQUIRE pool limit=2 owner=w1\n");
	harness_expect_granted(c[1], "pool", &g[1]);
	assert_true(g[1].fence > g[0].fence);
	harness_send(c[2], "ACQUIRE pool limit=2 owner=w2\n");
	harness_expect_silence(c[2], 200);
	harness_send(c[3], "TRY pool limit=2\nACQUIRE pool limit=5 wait=0\n");
	harness_expect_line(c[3], "HELD pool");
	harness_expect_prefix(c[3], "ERR BADARG limit ");
	harness_send(c[4], "STATUS pool\n");
	harness_expect_fields(c[4], "STATUS pool held=1 ", (const char *const[]){
	    " queue=1 owner=w1 holders=2 limit=2", NULL });
	harness_send(c[4], "CHECK pool %llu\n",
	    (unsigned long long)g[0].fence);
	harness_expect_prefix(c[4], "CURRENT pool ");
	harness_send(c[0], "RELEASE pool %s\n", g[0].handle);
	harness_expect_line(c[0], "RELEASED pool");
	harness_expect_granted(c[2], "pool", &g[2]);
	assert_true(g[2].fence > g[1].fence);

	harness_send(c[0], "ACQUIRE doc mode=shared\n");
	harness_expect_granted(c[0], "doc", &g[0]);
	harness_send(c[3], "ACQUIRE doc mode=shared\n");
	harness_expect_granted(c[3], "doc", &g[3]);
	harness_send(c[4], "ACQUIRE doc\n");
	harness_expect_silence(c[4], 200);
	harness_send(c[1], "ACQUIRE doc mode=shared\n");
	harness_expect_silence(c[1], 200);
	harness_send(c[0], "RELEASE doc %s\n", g[0].handle);
	harness_expect_line(c[0], "RELEASED doc");
	harness_send(c[0], "LIST prefix=doc\n");
	harness_expect_prefix(c[0], "LOCK doc held=1 ");
	harness_expect_line(c[0], "END count=1");
	harness_send(c[3], "RELEASE doc %s\n", g[3].handle);
	harness_expect_line(c[3], "RELEASED doc");
	harness_expect_granted(c[4], "doc", &g[0]);
	harness_expect_silence(c[1], 100);
	harness_send(c[4], "RELEASE doc %s\n", g[0].handle);
	harness_expect_line(c[4], "RELEASED doc");
	harness_expect_granted(c[1], "doc", NULL);
}

/*
 * kill -9 with a semaphore's and a shared lock's holders: after the
 * restart every holder is there with its lease (less the time down), its
 * owner and its rid; CHECK finds each; a rid repeat gets its grant back.
 */
static void
test_kinds_every_holder_survives_kill_9(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g[5], again;

	(void)state;
	for (int i = 0; i < 3; i++) {
		harness_send(c, "ACQUIRE sem limit=3 lease=60s owner=o%d "
		    "rid=r%d\n", i, i);
		harness_expect_granted(c, "sem", &g[i]);
	}
	harness_send(c, "ACQUIRE rd mode=shared lease=60s owner=ra rid=q0\n");
	harness_expect_granted(c, "rd", &g[3]);
	harness_send(c, "ACQUIRE rd mode=shared lease=60s rid=q1\n");
	harness_expect_granted(c, "rd", &g[4]);

	harness_server_kill(s);
	harness_server_restart(s);
	c = harness_connect(s);
	harness_send(c, "LIST\n");
	harness_expect_fields(c, "LOCK rd held=1 ", (const char *const[]){
	    " queue=0 holders=2 mode=shared", NULL });
	harness_expect_fields(c, "LOCK sem held=1 ", (const char *const[]){
	    " queue=0 owner=o2 holders=3 limit=3", NULL });
	harness_expect_line(c, "END count=2");
	for (int i = 0; i < 5; i++) {
		harness_send(c, "CHECK %s %llu\n", i < 3 ? "sem" : "rd",
		    (unsigned long long)g[i].fence);
		harness_expect_prefix(c, "CURRENT ");
	}
	harness_send(c, "ACQUIRE sem limit=3 rid=r1\n");
	harness_expect_granted(c, "sem", &again);
	assert_string_equal(again.handle, g[1].handle);
	assert_true(again.lease_ms > 0 && again.lease_ms <= 60000);
	harness_send(c, "ACQUIRE rd mode=shared rid=q1\n");
	harness_expect_granted(c, "rd", &again);
	assert_string_equal(again.handle, g[4].handle);
	harness_send(c, "ACQUIRE rd rid=q1\n");
	harness_expect_prefix(c, "ERR BADARG mode ");
	/* Each handle renews and releases its own hold. */
	harness_send(c, "RENEW sem %s\nRELEASE sem %s\n", g[0].handle,
	    g[2].handle);
	harness_expect_prefix(c, "RENEWED sem fence=");
	harness_expect_line(c, "RELEASED sem");
	harness_send(c, "ACQUIRE sem limit=3 wait=0\n");
	harness_expect_granted(c, "sem", &again);
	assert_true(again.fence > g[4].fence);
}

/*
 * A WATCH without a fence answers the end of any hold: the older of two
 * permits, or of two readers, released while the newer one lives on
 * (issue 25: it timed out, so a program waiting for a free permit never
 * heard of it).  With fence= the newest holder's fence alone counts.
 */
static void
test_kinds_watch_hears_an_older_holder_leave(void **state)
{
	static const char *const how[] = { "limit=2", "mode=shared" };
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *w = harness_connect(s);
	struct harness_conn *f = harness_connect(s);

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct harness_grant g[2];
		char name[8], line[96];

		snprintf(name, sizeof(name), "w/%d", i);
		harness_send(c, "ACQUIRE %s %s lease=5s\n", name, how[i]);
		harness_expect_granted(c, name, &g[0]);
		harness_send(c, "ACQUIRE %s %s lease=5s owner=s2\n", name,
		    how[i]);
		harness_expect_granted(c, name, &g[1]);
		harness_send(w, "WATCH %s wait=3s\n", name);
		harness_send(f, "WATCH %s fence=%llu wait=500ms\n", name,
		    (unsigned long long)g[1].fence);
		harness_expect_silence(w, 100);
		harness_send(c, "RELEASE %s %s\n", name, g[0].handle);
		snprintf(line, sizeof(line), "RELEASED %s", name);
		harness_expect_line(c, line);
		snprintf(line, sizeof(line), "CHANGED %s held=1 fence=%llu ",
		    name, (unsigned long long)g[1].fence);
		harness_expect_fields(w, line, (const char *const[]){
		    " owner=s2 holders=1 ", " cause=released", NULL });
		harness_expect_line(f, "ERR TIMEOUT no change within wait");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_kinds_semaphore_and_readers_over_sockets),
		HARNESS_TEST(test_kinds_every_holder_survives_kill_9),
		HARNESS_TEST(test_kinds_watch_hears_an_older_holder_leave),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
