/*
 * test_admin.c - protocol v2's operator commands and options against the
 * real lockd: LIST, owner=, delay= (lock-delay, HELD delay=,
 * --max-lock-delay), FORCE (frees only its fence; the forced holder's RENEW
 * is a CONFLICT), CHECK, and WATCH (at once, on a change, on timeout, on
 * SHUTDOWN, with each cause=).  Every server listens on loopback, port 0.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

/* How late a deadline may fire on a loaded machine. */
#define LATE_MS 1500

/* The value of " key=" in line, -1 when absent. */
static long long
field(const char *line, const char *key)
{
	char want[32];
	const char *p;

	snprintf(want, sizeof(want), " %s=", key);
	if ((p = strstr(line, want)) == NULL)
		return -1;
	return strtoll(p + strlen(want), NULL, 10);
}

static void
test_admin_list_pages_in_name_order_through_the_daemon(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *w = harness_connect(s);

	(void)state;
	harness_send(c, "ACQUIRE svc/b owner=host-b:1 lease=10s\n"
	    "ACQUIRE svc/a lease=10s\nACQUIRE other lease=10s\n"
	    "ACQUIRE svc/c lease=10s\n");
	for (int i = 0; i < 4; i++)
		harness_expect_prefix(c, "GRANTED ");
	harness_send(w, "ACQUIRE svc/a wait=10s\n");
	harness_await_queue(c, "svc/a", 1);
	harness_send(c, "LIST prefix=svc/ limit=2\n");
	harness_expect_prefix(c, "LOCK svc/a held=1 fence=2 ");
	assert_int_equal(field(harness_expect_prefix(c, "LOCK svc/b "),
	    "queue"), 0);
	harness_expect_line(c, "END count=2 next=svc/b");
	harness_send(c, "LIST prefix=svc/ after=svc/b\nPING\n");
	harness_expect_prefix(c, "LOCK svc/c held=1 fence=4 ");
	harness_expect_line(c, "END count=1");
	harness_expect_line(c, "PONG");
	harness_send(c, "LIST\n");
	assert_int_equal(field(harness_expect_prefix(c, "LOCK other "),
	    "fence"), 3);
	assert_int_equal(field(harness_expect_prefix(c, "LOCK svc/a "),
	    "queue"), 1);
	assert_non_null(strstr(harness_expect_prefix(c, "LOCK svc/b "),
	    " owner=host-b:1"));
	harness_expect_prefix(c, "LOCK svc/c ");
	harness_expect_line(c, "END count=4");
	harness_send(c, "LIST limit=1001\nLIST x\n");
	harness_expect_error(c, "BADARG");
	harness_expect_error(c, "BADREQ");
}

/* owner= shows in STATUS and LIST and, like a running lock-delay,
 * survives kill -9. */
static void
test_admin_owner_and_lock_delay_survive_kill_9(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	const char *line;

	(void)state;
	harness_send(c, "ACQUIRE leader owner=10.0.0.5:8080 lease=1m\n"
	    "ACQUIRE gone lease=200 delay=1m\n");
	harness_expect_prefix(c, "GRANTED leader ");
	harness_expect_prefix(c, "GRANTED gone ");
	harness_sleep_ms(300);
	harness_send(c, "STATUS leader\nSTATUS gone\n");
	harness_expect_prefix(c, "STATUS leader held=1 ");
	line = harness_expect_prefix(c, "STATUS gone held=0 fence=0 ");
	assert_in_range(field(line, "delay"), 1, 60000);
	harness_server_kill(s);
	harness_server_restart(s);
	c = harness_connect(s);
	harness_send(c, "STATUS leader\nTRY gone\n");
	line = harness_expect_prefix(c, "STATUS leader held=1 fence=1 ");
	assert_non_null(strstr(line, " owner=10.0.0.5:8080"));
	line = harness_expect_prefix(c, "HELD gone delay=");
	assert_in_range(field(line, "delay"), 1, 60000 - 100);
}

/* A lease that expires owes its lock-delay: TRY says HELD delay=, an
 * ACQUIRE waits it out; RELEASE owes none; --max-lock-delay caps it. */
static void
test_admin_lock_delay_blocks_grants_until_it_ends(void **state)
{
	struct harness_server *s = harness_start("--max-lock-delay", "700ms",
	    NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	const char *line;
	int64_t start;

	(void)state;
	harness_send(c, "ACQUIRE d lease=100 delay=1h\n");
	harness_expect_granted(c, "d", &g);
	harness_sleep_ms(200);
	harness_send(c, "TRY d\n");
	line = harness_expect_prefix(c, "HELD d delay=");
	assert_in_range(field(line, "delay"), 1, 700);
	start = harness_now_ms();
	harness_send(c, "ACQUIRE d wait=10s\n");
	harness_expect_granted_within(c, "d", 700 + LATE_MS, &g);
	assert_true(harness_now_ms() - start >= 400 - HARNESS_CLOCK_SLACK_MS);
	harness_send(c, "RELEASE d %s\nTRY d delay=5s\n", g.handle);
	harness_expect_line(c, "RELEASED d");
	harness_expect_granted(c, "d", NULL);
	harness_send(c, "ACQUIRE e delay=-1\nACQUIRE e delay=x\n");
	assert_non_null(strstr(harness_expect_error(c, "BADARG"), "delay"));
	assert_non_null(strstr(harness_expect_error(c, "BADARG"), "delay"));
}

/* FORCE frees only the holder with that fence; its RENEW then gets
 * CONFLICT and the next waiter is granted. */
static void
test_admin_force_frees_only_that_fence(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *waiter = harness_connect(s);
	struct harness_conn *admin = harness_connect(s);
	struct harness_grant held, next;

	(void)state;
	harness_try(holder, "stuck", 60000, &held);
	harness_send(waiter, "ACQUIRE stuck wait=10s\n");
	harness_await_queue(admin, "stuck", 1);
	harness_send(admin, "FORCE stuck %llu\n",
	    (unsigned long long)held.fence + 1);
	harness_expect_line(admin, "NOTHELD stuck");
	harness_expect_silence(waiter, 50);
	harness_send(admin, "FORCE stuck %llu\n",
	    (unsigned long long)held.fence);
	harness_expect_line(admin, "RELEASED stuck");
	harness_expect_granted(waiter, "stuck", &next);
	assert_true(next.fence > held.fence);
	harness_send(holder, "RENEW stuck %s\n", held.handle);
	harness_expect_error(holder, "CONFLICT");
	/* The old fence again cannot free the new holder. */
	harness_send(admin, "FORCE stuck %llu\nFORCE stuck 0\n"
	    "FORCE stuck 9223372036854775808\n",
	    (unsigned long long)held.fence);
	harness_expect_line(admin, "NOTHELD stuck");
	harness_expect_error(admin, "BADARG");
	harness_expect_error(admin, "BADARG");
	harness_send(admin, "CHECK stuck %llu\n",
	    (unsigned long long)next.fence);
	harness_expect_prefix(admin, "CURRENT stuck ");
	harness_send(admin, "STATS\n");
	harness_expect_prefix(admin, "STATS ");
}

static void
test_admin_check_answers_current_or_stale(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	char want[64];
	const char *line;

	(void)state;
	harness_send(c, "CHECK free 1\n");
	harness_expect_line(c, "STALE free fence=0");
	harness_try(c, "res", 10000, &g);
	harness_send(c, "CHECK res %llu\n", (unsigned long long)g.fence);
	snprintf(want, sizeof(want), "CURRENT res fence=%llu ttl=",
	    (unsigned long long)g.fence);
	line = harness_expect_prefix(c, want);
	assert_in_range(field(line, "ttl"), 1, 10000);
	harness_send(c, "CHECK res %llu\n", (unsigned long long)g.fence + 7);
	snprintf(want, sizeof(want), "STALE res fence=%llu",
	    (unsigned long long)g.fence);
	harness_expect_line(c, want);
	harness_send(c, "CHECK res\nCHECK res 1 2\nCHECK res x\n");
	harness_expect_error(c, "BADREQ");
	harness_expect_error(c, "BADREQ");
	harness_expect_error(c, "BADARG");
}

/* WATCH: at once when the fence already differs, on the next change with
 * each cause=, ERR TIMEOUT when wait= runs out, and nothing for a RENEW. */
static void
test_admin_watch_answers_once_with_its_cause(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *w = harness_connect(s);
	struct harness_conn *closer = harness_connect(s);
	struct harness_grant g;
	int64_t start;

	(void)state;
	harness_send(w, "WATCH x fence=5\n");
	harness_expect_line(w, "CHANGED x held=0 fence=0 ttl=0 queue=0 "
	    "cause=none");
	start = harness_now_ms();
	harness_send(w, "WATCH x wait=200\n");
	harness_expect_error(w, "TIMEOUT");
	assert_true(harness_now_ms() - start >= 200 - HARNESS_CLOCK_SLACK_MS);
	harness_send(w, "WATCH x wait=0\n");
	harness_expect_error(w, "TIMEOUT");

	harness_send(w, "WATCH x\n");
	harness_expect_silence(w, 50);
	harness_try(c, "x", 10000, &g);
	assert_int_equal(field(harness_expect_prefix(w, "CHANGED x held=1 "),
	    "fence"), (long long)g.fence);

	harness_send(w, "WATCH x fence=%llu\n", (unsigned long long)g.fence);
	harness_send(c, "RENEW x %s\n", g.handle);
	harness_expect_prefix(c, "RENEWED x ");
	harness_expect_silence(w, 50);
	harness_send(c, "RELEASE x %s\n", g.handle);
	harness_expect_line(c, "RELEASED x");
	harness_expect_line(w, "CHANGED x held=0 fence=0 ttl=0 queue=0 "
	    "cause=released");

	harness_send(w, "WATCH x\n");
	harness_expect_silence(w, 20);
	harness_send(c, "TRY x lease=100\n");
	harness_expect_granted(c, "x", &g);
	harness_expect_prefix(w, "CHANGED x held=1 ");
	harness_send(w, "WATCH x fence=%llu\n", (unsigned long long)g.fence);
	assert_non_null(strstr(harness_expect_prefix(w, "CHANGED x held=0 "),
	    " cause=expired"));

	harness_send(closer, "ACQUIRE x onclose=release\n");
	harness_expect_granted(closer, "x", &g);
	harness_send(w, "WATCH x fence=%llu\n", (unsigned long long)g.fence);
	harness_expect_silence(w, 20);
	harness_close(closer);
	assert_non_null(strstr(harness_expect_prefix(w, "CHANGED x held=0 "),
	    " cause=closed"));

	harness_try(c, "x", 10000, &g);
	harness_send(w, "WATCH x fence=%llu\n", (unsigned long long)g.fence);
	harness_expect_silence(w, 20);
	harness_send(c, "FORCE x %llu\n", (unsigned long long)g.fence);
	harness_expect_line(c, "RELEASED x");
	assert_non_null(strstr(harness_expect_prefix(w, "CHANGED x held=0 "),
	    " cause=forced"));
	harness_send(w, "WATCH x fence=x\nWATCH x wait=-1\n");
	harness_expect_error(w, "BADARG");
	harness_expect_error(w, "BADARG");
}

/* A pending WATCH is told SHUTDOWN when lockd stops. */
static void
test_admin_pending_watch_gets_shutdown(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *w = harness_connect(s);
	struct harness_conn *c = harness_connect(s);

	(void)state;
	harness_send(w, "WATCH quiet\nPING\n");
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_expect_silence(w, 50);
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    NULL), 0);
	harness_expect_error(w, "SHUTDOWN");
	harness_expect_line(w, "PONG");
	harness_expect_eof(w, HARNESS_REPLY_TIMEOUT_MS);
}

/* The whole HTTP response of the metrics listener to request. */
static char *
http_get(const struct harness_server *s, const char *request)
{
	static char resp[1 << 18];
	struct sockaddr_in addr;
	struct timeval tv = { 3, 0 };
	char log[8192];
	const char *p;
	size_t got = 0;
	ssize_t n;
	int fd;

	assert_true(harness_read_file(s->log_path, log, sizeof(log)));
	assert_non_null(p = strstr(log, "metrics=127.0.0.1:"));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(p + 18));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)),
	    0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)!write(fd, request, strlen(request));
	while (got < sizeof(resp) - 1 &&
	    (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	resp[got] = '\0';
	return resp;
}

/* /healthz and /readyz answer 200 on the metrics listener of a lockd that
 * has recovered; the new counters and gauges are in /metrics. */
static void
test_admin_health_checks_and_new_metrics(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	const char *r;

	(void)state;
	r = http_get(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_memory_equal(r, "HTTP/1.1 200 OK\r\n", 17);
	assert_non_null(strstr(r, "\r\n\r\nok\n"));
	r = http_get(s, "GET /readyz HTTP/1.0\r\n\r\n");
	assert_memory_equal(r, "HTTP/1.1 200 OK\r\n", 17);
	assert_non_null(strstr(r, "\r\n\r\nready\n"));
	r = http_get(s, "HEAD /readyz?verbose HTTP/1.1\r\n\r\n");
	assert_memory_equal(r, "HTTP/1.1 200 OK\r\n", 17);
	assert_non_null(strstr(r, "Content-Length: 0\r\n"));
	r = http_get(s, "GET /readyzz HTTP/1.1\r\n\r\n");
	assert_memory_equal(r, "HTTP/1.1 404 ", 13);

	harness_try(c, "m", 10000, &g);
	harness_send(c, "FORCE m %llu\nWATCH m fence=0 wait=0\n",
	    (unsigned long long)g.fence);
	harness_expect_line(c, "RELEASED m");
	harness_expect_error(c, "TIMEOUT");
	harness_send(c, "ACQUIRE n lease=100 delay=1m\n");
	harness_expect_granted(c, "n", NULL);
	harness_sleep_ms(300);
	harness_send(c, "STATUS n\n");
	harness_expect_prefix(c, "STATUS n held=0 ");
	r = http_get(s, "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "\nlockd_lock_forced_total 1\n"));
	assert_non_null(strstr(r, "\nlockd_lock_delayed 1\n"));
	assert_non_null(strstr(r, "\nlockd_watches 0\n"));
	assert_int_equal(harness_stat(c, "forced"), 1);
	assert_int_equal(harness_stat(c, "delayed"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_admin_list_pages_in_name_order_through_the_daemon),
		HARNESS_TEST(test_admin_owner_and_lock_delay_survive_kill_9),
		HARNESS_TEST(test_admin_lock_delay_blocks_grants_until_it_ends),
		HARNESS_TEST(test_admin_force_frees_only_that_fence),
		HARNESS_TEST(test_admin_check_answers_current_or_stale),
		HARNESS_TEST(test_admin_watch_answers_once_with_its_cause),
		HARNESS_TEST(test_admin_pending_watch_gets_shutdown),
		HARNESS_TEST(test_admin_health_checks_and_new_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
