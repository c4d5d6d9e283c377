/*
 * test_metrics.c - the Prometheus endpoint (--metrics-listen) of the real
 * lockd: known traffic (grants, timeouts, HELD, a reclaim, releases, an
 * onclose release, protocol errors) must show as exact counter values and
 * histogram counts, in STATS too; promtool must accept the exposition; and
 * bad HTTP gets 404/400 without disturbing the lock service.
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

/* The metrics port, from the log line "metrics=127.0.0.1:PORT". */
static int
metrics_port(const struct harness_server *s)
{
	char buf[8192];
	FILE *f = fopen(s->log_path, "r");
	size_t n;
	const char *p;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strstr(buf, "metrics=127.0.0.1:");
	assert_non_null(p);
	return atoi(p + strlen("metrics=127.0.0.1:"));
}

/* A connection to the metrics port on loopback. */
static int
metrics_connect(int port)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof(addr)),
	    0);
	return fd;
}

/* Sends raw bytes to the metrics port and returns the whole response
 * (until the server closes), at most 3 s. */
static char *
http_raw(int port, const char *request, size_t len)
{
	static char resp[1 << 18];
	struct timeval tv = { 3, 0 };
	size_t got = 0;
	ssize_t n;
	int fd = metrics_connect(port);

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (len > 0)
		(void)!write(fd, request, len);
	while (got < sizeof(resp) - 1 &&
	    (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	resp[got] = '\0';
	return resp;
}

static char *
http_get(int port, const char *path)
{
	char req[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	return http_raw(port, req, strlen(req));
}

/* The value of the sample line that starts with `series` followed by a
 * space, e.g. `lockd_waiters` or `lockd_x{le="0.5"}`. */
static double
sample(const char *body, const char *series)
{
	const char *p = body;
	size_t n = strlen(series);

	while ((p = strstr(p, series)) != NULL) {
		if ((p == body || p[-1] == '\n') && p[n] == ' ')
			return atof(p + n + 1);
		p += n;
	}
	fail_msg("no sample %s", series);
	return -1;
}

static void
test_metrics_count_known_traffic_exactly(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", "--journal-size", "65536", NULL);
	struct harness_conn *a = harness_connect(s), *b = harness_connect(s);
	struct harness_conn *c = harness_connect(s), *d = harness_connect(s);
	struct harness_grant g;
	const char *body;
	int port = metrics_port(s), i;

	(void)state;
	harness_try(a, "m1", 300, NULL);              /* granted 1 */
	harness_send(b, "TRY m1\n");
	harness_expect_line(b, "HELD m1");            /* unavailable 1 */
	harness_send(b, "ACQUIRE m1 wait=0\n");
	harness_expect_error(b, "TIMEOUT");           /* timeout 1 */
	harness_send(b, "ACQUIRE m1 wait=50\n");
	harness_expect_error(b, "TIMEOUT");           /* timeout 2 */
	harness_send(c, "ACQUIRE m1\n");              /* waits for the reclaim */
	harness_expect_granted_within(c, "m1", 3000, &g);  /* granted 2 */
	harness_send(c, "RELEASE m1 %s\n", g.handle);
	harness_expect_line(c, "RELEASED m1");        /* released 1 */
	harness_send(d, "TRY m2 onclose=release\n");
	harness_expect_granted(d, "m2", NULL);        /* granted 3 */
	harness_close(d);                             /* onclose release 1 */
	harness_send(b, "BOGUS\n");
	harness_expect_error(b, "BADREQ");
	/* The close is processed by the time a later request is answered. */
	harness_send(b, "STATUS m2\n");
	harness_expect_line(b, "STATUS m2 held=0 fence=0 ttl=0 queue=0");

	body = http_get(port, "/metrics");
	assert_non_null(strstr(body, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(body, "Content-Type: text/plain; version=0.0.4"));
	assert_true(sample(body,
	    "lockd_lock_acquired_total{outcome=\"granted\"}") == 3);
	assert_true(sample(body,
	    "lockd_lock_acquired_total{outcome=\"timeout\"}") == 2);
	assert_true(sample(body,
	    "lockd_lock_acquired_total{outcome=\"unavailable\"}") == 1);
	assert_true(sample(body, "lockd_lock_released_total") == 1);
	assert_true(sample(body, "lockd_lock_released_onclose_total") == 1);
	assert_true(sample(body, "lockd_lock_lease_reclaimed_total") == 1);
	/* Three grants waited: two not at all, one for the reclaim (~0.3 s). */
	assert_true(sample(body, "lockd_lock_acquire_wait_seconds_count") == 3);
	assert_true(sample(body,
	    "lockd_lock_acquire_wait_seconds_bucket{le=\"0.1\"}") == 2);
	assert_true(sample(body,
	    "lockd_lock_acquire_wait_seconds_bucket{le=\"5\"}") == 3);
	/* Three leases ended: a reclaim, a release, an onclose release. */
	assert_true(sample(body, "lockd_lock_hold_seconds_count") == 3);
	assert_true(sample(body, "lockd_leases_held") == 0);
	assert_true(sample(body, "lockd_waiters") == 0);
	assert_true(sample(body, "lockd_connections") == 3);
	assert_true(sample(body,
	    "lockd_protocol_errors_total{code=\"BADREQ\"}") == 1);
	assert_true(sample(body,
	    "lockd_protocol_errors_total{code=\"TIMEOUT\"}") == 2);
	assert_true(sample(body, "lockd_store_commits_total") >= 1);
	assert_true(sample(body, "lockd_store_commit_duration_seconds_count") ==
	    sample(body, "lockd_store_commits_total"));
	assert_true(sample(body, "lockd_store_commit_failures_total") == 0);
	assert_true(sample(body, "lockd_fence_high_water_mark") == 3);

	/* STATS reports the same counters. */
	assert_int_equal(harness_stat(b, "granted"), 3);
	assert_int_equal(harness_stat(b, "timeouts"), 2);
	assert_int_equal(harness_stat(b, "unavailable"), 1);
	assert_int_equal(harness_stat(b, "released"), 1);
	assert_int_equal(harness_stat(b, "released_onclose"), 1);
	assert_int_equal(harness_stat(b, "reclaimed"), 1);

	/* A journal of 64 KiB checkpoints after each KiB of it: 40 grants
	 * of over 100 bytes each make two at least. */
	assert_true(sample(body, "lockd_store_journal_size_bytes") == 65536);
	assert_true(sample(body, "lockd_store_checkpoint_failures_total") == 0);
	assert_true(sample(body, "lockd_store_direct_commits_total") == 0);
	for (i = 0; i < 40; i++) {
		harness_try(a, "churn", 60000, &g);
		harness_send(a, "RELEASE churn %s\n", g.handle);
		harness_expect_line(a, "RELEASED churn");
	}
	body = http_get(port, "/metrics");
	assert_true(sample(body, "lockd_store_checkpoints_total") >= 2);
	assert_true(sample(body, "lockd_store_journal_bytes") < 2048);
}

static void
test_metrics_exposition_passes_promtool(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", NULL);
	struct harness_conn *a = harness_connect(s);
	char path[256], cmd[512];
	const char *body, *text;
	FILE *f;
	int rc;

	(void)state;
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		/* make test installs it (Debian package prometheus). */
		fail_msg("promtool not found: install the prometheus package");
	}
	harness_try(a, "p1", 1000, NULL);
	body = http_get(metrics_port(s), "/metrics");
	text = strstr(body, "\r\n\r\n");
	assert_non_null(text);
	snprintf(path, sizeof(path), "%s/metrics.txt", harness_tempdir());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text + 4, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	rc = system(cmd);
	assert_int_equal(rc, 0);
}

static void
test_metrics_bad_http_is_refused_and_the_lock_service_goes_on(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", NULL);
	struct harness_conn *a = harness_connect(s);
	int port = metrics_port(s);
	char *big;
	const char *resp;

	(void)state;
	resp = http_get(port, "/other");
	assert_non_null(strstr(resp, "HTTP/1.1 404 "));
	resp = http_raw(port, "garbage\r\n\r\n", 11);
	assert_non_null(strstr(resp, "HTTP/1.1 400 "));
	resp = http_raw(port, "POST /metrics HTTP/1.1\r\n\r\n", 26);
	assert_non_null(strstr(resp, "HTTP/1.1 405 "));
	big = malloc(20000);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	memset(big + 26, 'a', 20000 - 26);
	resp = http_raw(port, big, 20000);
	assert_non_null(strstr(resp, "HTTP/1.1 400 "));
	free(big);
	/* The lock service on the same loop did not notice. */
	harness_send(a, "PING\n");
	harness_expect_line(a, "PONG");
	harness_try(a, "still-fine", 1000, NULL);
}

/* A connection to the metrics port that sends `bytes` and nothing more. */
static int
metrics_idle_conn(int port, const char *bytes)
{
	int fd = metrics_connect(port);

	if (bytes[0] != '\0')
		assert_int_equal(write(fd, bytes, strlen(bytes)),
		    (ssize_t)strlen(bytes));
	return fd;
}

/* Requires the server to close fd within HARNESS_REPLY_TIMEOUT_MS. */
static void
expect_closed(int fd)
{
	struct timeval tv = { HARNESS_REPLY_TIMEOUT_MS / 1000, 0 };
	char buf[256];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (read(fd, buf, sizeof(buf)) < 0)
		fail_msg("a metrics connection was not closed by the stop");
	close(fd);
}

/*
 * A metrics connection that has sent nothing, or half a request line (a
 * scrape starting, a health checker, a port scan), does not hold up a stop:
 * lockd closes it with everything else.
 */
static void
test_metrics_stop_does_not_wait_for_an_idle_metrics_connection(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", NULL);
	int port = metrics_port(s);
	int idle = metrics_idle_conn(port, "");
	int half = metrics_idle_conn(port, "GET /metr");
	int64_t elapsed;

	(void)state;
	/* Both accepted before the signal. */
	assert_non_null(strstr(http_get(port, "/metrics"), "HTTP/1.1 200 "));
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    &elapsed), 0);
	if (elapsed > 1500)
		fail_msg("lockd took %lld ms to stop beside two idle metrics "
		    "connections", (long long)elapsed);
	expect_closed(idle);
	expect_closed(half);
}

/*
 * A lock client that does not take its last replies is cut off when the
 * stop's grace ends; metrics connections on the same loop are no lock
 * connections, and closing the one must not mistake the other.
 */
static void
test_metrics_stop_cuts_off_a_stuck_client_beside_metrics(void **state)
{
	struct harness_server *s = harness_start("--metrics-listen",
	    "127.0.0.1:0", NULL);
	struct harness_conn *stuck = harness_connect_rcvbuf(s, 4096);
	int port = metrics_port(s);
	int idle = metrics_idle_conn(port, "GET /");
	static char chunk[5 * 6000];
	int64_t elapsed;
	size_t i;

	(void)state;
	/* Some 600 KB of replies, under the output cap, that it never
	 * reads. */
	for (i = 0; i + 5 <= sizeof(chunk); i += 5)
		memcpy(chunk + i, "HELP\n", 5);
	harness_send_bytes(stuck, chunk, sizeof(chunk));
	harness_send(stuck, "PING\n");
	harness_sleep_ms(200);
	assert_int_equal(harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS,
	    &elapsed), 0);
	expect_closed(idle);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_metrics_count_known_traffic_exactly),
		HARNESS_TEST(test_metrics_exposition_passes_promtool),
		HARNESS_TEST(test_metrics_bad_http_is_refused_and_the_lock_service_goes_on),
		HARNESS_TEST(
		    test_metrics_stop_does_not_wait_for_an_idle_metrics_connection),
		HARNESS_TEST(test_metrics_stop_cuts_off_a_stuck_client_beside_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
