/*
 * test_clients.c - hostile clients against the real lockd: thousands of
 * connections at once, the connection limit, slowloris (a byte at a time,
 * idle and half-open sockets, partial lines just under the line limit), a
 * client pipelining 100,000 requests and reading none, and seeded random
 * byte streams.  Throughout, a well-behaved client must be served promptly
 * and lockd must stay up.
 *
 * lockd runs on loopback, port 0, in a temporary directory, started and
 * killed (by its own PID) through the integration harness.  Every loop is
 * bounded in count and time.  Figures (counts, latencies, memory) are
 * printed with a "figure:" prefix for docs/reliability.md.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "proto/proto.h"
#include "tests/abuse/abuse.h"
#include "tests/lib/harness.h"

/* A well-behaved client's PING round trip while lockd is under abuse. */
#define PROMPT_MS 250

static int64_t
ping_ms(struct harness_conn *c)
{
	int64_t start = harness_now_ms();

	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	return harness_now_ms() - start;
}

/* Sends text on every open peer of the swarm; returns how many took it. */
static int
swarm_send_all(struct abuse_swarm *sw, const char *text)
{
	int i, ok = 0;

	for (i = 0; i < sw->n; i++) {
		struct abuse_peer *p = &sw->peers[i];
		if (p->fd >= 0 && abuse_peer_send(p, text, strlen(text),
		    HARNESS_REPLY_TIMEOUT_MS) == (ssize_t)strlen(text))
			ok++;
	}
	return ok;
}

/* ---- many connections ------------------------------------------------- */

static void
test_clients_four_thousand_connections_each_get_pong(void **state)
{
	int want = 4000 * abuse_scale();
	long limit = abuse_raise_fd_limit(want + 200);
	struct harness_server *s;
	struct harness_conn *ctl;
	struct abuse_swarm sw;
	int64_t start, took;
	int connected, answered, i;

	(void)state;
	if (limit < want + 200)
		fail_msg("RLIMIT_NOFILE is %ld; %d connections need more",
		    limit, want);
	s = harness_start("--max-connections", "20000", NULL);
	ctl = harness_connect(s);
	start = harness_now_ms();
	connected = abuse_swarm_open(&sw, s->port, want, 20000);
	assert_int_equal(connected, want);
	assert_int_equal(swarm_send_all(&sw, "PING\n"), want);
	answered = abuse_swarm_read(&sw, 1, 20000, NULL, NULL);
	took = harness_now_ms() - start;
	assert_int_equal(answered, want);
	for (i = 0; i < want; i++)
		if (strcmp(sw.peers[i].first, "PONG") != 0)
			fail_msg("connection %d got '%s'", i, sw.peers[i].first);
	/* lockd counts them all, and still answers the first one. */
	assert_int_equal(harness_stat(ctl, "connections"), (uint64_t)want + 1);
	assert_true(ping_ms(ctl) < PROMPT_MS);
	print_message("figure: %d concurrent connections each answered PONG "
	    "in %lld ms in all; lockd VmRSS %ld KiB\n", want, (long long)took,
	    abuse_proc_kib(s->pid, "VmRSS"));
	abuse_swarm_close(&sw);
	/* Their going is noticed: the count falls back. */
	start = harness_now_ms();
	while (harness_stat(ctl, "connections") != 1 &&
	    harness_now_ms() - start < HARNESS_REPLY_TIMEOUT_MS)
		harness_sleep_ms(20);
	assert_int_equal(harness_stat(ctl, "connections"), 1);
}

static void
test_clients_connections_beyond_the_maximum_get_err_limit(void **state)
{
	int max = 500 * abuse_scale(), extra = 300 * abuse_scale();
	char max_text[16];
	struct harness_server *s;
	struct abuse_swarm sw;
	int connected, i, refused = 0, pong = 0;

	(void)state;
	abuse_raise_fd_limit(max + extra + 200);
	snprintf(max_text, sizeof(max_text), "%d", max);
	s = harness_start("--max-connections", max_text, NULL);
	connected = abuse_swarm_open(&sw, s->port, max + extra, 20000);
	assert_int_equal(connected, max + extra);
	/* The refused ones are told at once and closed; wait for that. */
	abuse_swarm_read(&sw, 1, 1000, NULL, NULL);
	for (i = 0; i < sw.n; i++) {
		struct abuse_peer *p = &sw.peers[i];
		if (p->lines == 0)
			continue;
		if (strcmp(p->first, "ERR LIMIT too many connections") != 0)
			fail_msg("connection %d got '%s' before any request",
			    i, p->first);
		refused++;
	}
	assert_int_equal(refused, extra);
	assert_int_equal(abuse_swarm_await_eof(&sw, HARNESS_REPLY_TIMEOUT_MS),
	    extra);
	/* Exactly the admitted ones are served. */
	for (i = 0; i < sw.n; i++) {
		struct abuse_peer *p = &sw.peers[i];
		if (p->lines == 0 && abuse_peer_send(p, "PING\n", 5,
		    HARNESS_REPLY_TIMEOUT_MS) != 5)
			fail_msg("admitted connection %d cannot send", i);
	}
	abuse_swarm_read(&sw, 1, 10000, NULL, NULL);
	for (i = 0; i < sw.n; i++)
		if (strcmp(sw.peers[i].first, "PONG") == 0)
			pong++;
	assert_int_equal(pong, max);
	assert_true(harness_log_contains(s, "kind=connections"));
	print_message("figure: --max-connections %d: %d admitted and served, "
	    "%d refused with ERR LIMIT and closed\n", max, pong, refused);
}

/* ---- slowloris -------------------------------------------------------- */

static void
test_clients_slowloris_does_not_delay_a_normal_client(void **state)
{
	int idle_n = 1000 * abuse_scale(), partial_n = 500 * abuse_scale();
	int slow_n = 100, halfopen_n = 100;
	struct abuse_swarm idle, partial, slow, halfopen;
	struct harness_server *s;
	struct harness_conn *ctl;
	static char big[4100];
	char line[128];
	int64_t worst = 0, t;
	long rss0, rss1;
	size_t len, k;
	int i, granted = 0;

	(void)state;
	abuse_raise_fd_limit(idle_n + partial_n + slow_n + halfopen_n + 200);
	s = harness_start("--max-connections", "20000", NULL);
	ctl = harness_connect(s);
	rss0 = abuse_proc_kib(s->pid, "VmRSS");

	/* Idle sockets that never send a byte. */
	assert_int_equal(abuse_swarm_open(&idle, s->port, idle_n, 20000),
	    idle_n);
	/* Sockets holding a partial line just under the line limit. */
	memset(big, 'x', sizeof(big));
	memcpy(big, "STATUS ", 7);
	assert_int_equal(abuse_swarm_open(&partial, s->port, partial_n, 20000),
	    partial_n);
	for (i = 0; i < partial_n; i++)
		assert_int_equal(abuse_peer_send(&partial.peers[i], big, 4090,
		    HARNESS_REPLY_TIMEOUT_MS), 4090);
	/* Half-open: a partial line, then the write side shut. */
	assert_int_equal(abuse_swarm_open(&halfopen, s->port, halfopen_n,
	    20000), halfopen_n);
	for (i = 0; i < halfopen_n; i++) {
		assert_int_equal(abuse_peer_send(&halfopen.peers[i], "ACQ", 3,
		    HARNESS_REPLY_TIMEOUT_MS), 3);
		shutdown(halfopen.peers[i].fd, SHUT_WR);
	}
	/* A byte at a time: each slow client acquires its own lock. */
	assert_int_equal(abuse_swarm_open(&slow, s->port, slow_n, 20000),
	    slow_n);
	for (k = 0;; k++) {
		bool more = false;
		for (i = 0; i < slow_n; i++) {
			len = (size_t)snprintf(line, sizeof(line),
			    "ACQUIRE slow/%d lease=20s wait=2s\n", i);
			if (k < len) {
				assert_int_equal(abuse_peer_send(
				    &slow.peers[i], line + k, 1,
				    HARNESS_REPLY_TIMEOUT_MS), 1);
				more = true;
			}
		}
		if (!more)
			break;
		t = ping_ms(ctl);
		worst = t > worst ? t : worst;
		harness_sleep_ms(20);
	}
	assert_int_equal(abuse_swarm_read(&slow, 1, 10000, NULL, NULL), slow_n);
	for (i = 0; i < slow_n; i++) {
		char want[64];
		snprintf(want, sizeof(want), "GRANTED slow/%d ", i);
		if (strncmp(slow.peers[i].first, want, strlen(want)) == 0)
			granted++;
	}
	assert_int_equal(granted, slow_n);
	/* lockd saw the half-open sockets' end and closed them. */
	assert_int_equal(abuse_swarm_await_eof(&halfopen,
	    HARNESS_REPLY_TIMEOUT_MS), halfopen_n);
	rss1 = abuse_proc_kib(s->pid, "VmRSS");
	assert_true(worst < PROMPT_MS);
	assert_int_equal(harness_stat(ctl, "connections"),
	    (uint64_t)(1 + idle_n + partial_n + slow_n));
	/* Partial lines cost their bytes, not more. */
	assert_true(rss1 - rss0 < 64 * 1024);
	/* The partial lines, finished, are answered: TOOLONG or STATUS. */
	for (i = 0; i < partial_n; i++)
		assert_int_equal(abuse_peer_send(&partial.peers[i], "\n", 1,
		    HARNESS_REPLY_TIMEOUT_MS), 1);
	assert_int_equal(abuse_swarm_read(&partial, 1, 10000, NULL, NULL),
	    partial_n);
	for (i = 0; i < partial_n; i++)
		if (strncmp(partial.peers[i].first, "ERR BADARG", 10) != 0)
			fail_msg("partial line %d: got '%s'", i,
			    partial.peers[i].first);
	print_message("figure: slowloris: %d idle, %d holding a 4090-byte "
	    "partial line, %d half-open, %d sending a byte every 20 ms: "
	    "worst PING of a normal client %lld ms; lockd VmRSS %ld -> %ld "
	    "KiB\n", idle_n, partial_n, halfopen_n, slow_n, (long long)worst,
	    rss0, rss1);
}

/* ---- a client that never reads ---------------------------------------- */

static void
test_clients_pipelining_100000_requests_unread_is_cut_off_alone(void **state)
{
	int requests = 100000 * abuse_scale();
	struct harness_server *s = harness_start(NULL);
	/* A small receive window, so replies pile up in lockd, not here. */
	struct harness_conn *flood = harness_connect_rcvbuf(s, 4096);
	struct harness_conn *other = harness_connect(s);
	struct harness_grant g;
	size_t size = (size_t)requests * 5, off = 0;
	char *text = malloc(size);
	int64_t worst = 0, t, start, deadline;
	ssize_t n;
	bool cut = false;
	long rss0, rss_peak = 0, rss1;
	int i;

	(void)state;
	assert_non_null(text);
	for (i = 0; i < requests; i++)
		memcpy(text + (size_t)i * 5, "HELP\n", 5);
	harness_try(other, "pipe/held", 60000, &g);
	rss0 = abuse_proc_kib(s->pid, "VmRSS");
	start = harness_now_ms();
	deadline = start + 20000;
	while (off < size && harness_now_ms() < deadline) {
		size_t chunk = size - off < 65536 ? size - off : 65536;
		long rss;

		n = harness_try_send(flood, text + off, chunk, 100);
		if (n < 0) {
			if (errno != EPIPE && errno != ECONNRESET)
				fail_msg("flood: unexpected error %s",
				    strerror(errno));
			cut = true;
			break;
		}
		off += (size_t)n;
		t = ping_ms(other);
		worst = t > worst ? t : worst;
		rss = abuse_proc_kib(s->pid, "VmRSS");
		rss_peak = rss > rss_peak ? rss : rss_peak;
	}
	free(text);
	/* Sent in full (the kernel took it) or refused: lockd cut it off. */
	if (!cut)
		harness_expect_eof(flood, 10000);
	assert_true(harness_log_contains(s, "kind=output"));
	/* Everybody else noticed nothing: served, and their lock kept. */
	assert_true(worst < PROMPT_MS);
	harness_send(other, "RENEW pipe/held %s lease=60000\n", g.handle);
	harness_expect_prefix(other, "RENEWED pipe/held ");
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (harness_stat(other, "connections") != 1 &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_int_equal(harness_stat(other, "connections"), 1);
	rss1 = abuse_proc_kib(s->pid, "VmRSS");
	print_message("figure: a client pipelining %d HELP requests without "
	    "reading was cut off after %zu bytes sent, %lld ms; worst PING of "
	    "another client %lld ms; lockd VmRSS %ld -> peak %ld -> %ld KiB\n",
	    requests, off, (long long)(harness_now_ms() - start),
	    (long long)worst, rss0, rss_peak, rss1);
}

/* ---- random byte streams ---------------------------------------------- */

struct random_stats {
	uint64_t replies;
	uint64_t errors[PROTO_ERR_COUNT];
	uint64_t other;
	int bad_peer;
	char bad_line[200];
};

/* Every line lockd writes must be a reply line liblockd can parse. */
static void
check_random_reply(void *ctx, int peer, const char *line, size_t len)
{
	struct random_stats *st = ctx;
	struct proto_reply r;
	struct proto_error err;
	size_t used = 0;

	st->replies++;
	if (proto_parse_reply(line, len, 1 << 16, &r, &used, &err) !=
	    PROTO_DONE || used != len || len < 2 || line[len - 2] != '\r') {
		if (st->bad_peer < 0) {
			st->bad_peer = peer;
			snprintf(st->bad_line, sizeof(st->bad_line), "%.*s",
			    (int)(len < 150 ? len : 150), line);
		}
		return;
	}
	if (r.kind == PROTO_REPLY_ERROR)
		st->errors[r.error]++;
	else
		st->other++;
}

/* ACQUIRE comes only with a short wait (below): one that waits for ever
 * would hold back every later reply of its connection. */
static const char *const random_words[] = {
	"TRY", "RENEW", "RELEASE", "STATUS", "PING", "HELP",
	"STATS", "try", "renew", "release", "status", "ping",
	"lease=", "wait=", "onclose=", "release", "keep", "lease=-1",
	"wait=0", "lease=5s", "wait=10ms", "lease=99999999999999999999",
	"1-0123456789abcdef", "18446744073709551616-00", "rnd/a", "rnd/b",
	"=", "==", "lease=1h", "onclose=maybe", "wait=2x",
};

/* One chunk of hostile bytes: words, junk, control bytes, long lines. */
static size_t
random_chunk(struct rng *r, char *out, size_t cap)
{
	size_t n = 0;

	while (n + 64 < cap) {
		switch (rng_below(r, 10)) {
		case 0:
		case 1:
		case 2:
		case 3: {
			const char *w = random_words[rng_below(r,
			    sizeof(random_words) / sizeof(random_words[0]))];
			size_t l = strlen(w);
			memcpy(out + n, w, l);
			n += l;
			out[n++] = rng_below(r, 4) ? ' ' : '\t';
			break;
		}
		case 4:
		case 5: {
			/* Raw bytes, any value. */
			size_t k, l = 1 + rng_below(r, 24);
			for (k = 0; k < l; k++)
				out[n++] = (char)rng_next(r);
			break;
		}
		case 6:
		case 7:
			out[n++] = '\n';
			break;
		case 8:
			memcpy(out + n, "\r\n", 2);
			n += 2;
			break;
		case 9:
			if (rng_below(r, 3) == 0) {
				n += (size_t)snprintf(out + n, 48,
				    "ACQUIRE rnd/%c wait=%dms ",
				    (char)('a' + rng_below(r, 3)),
				    (int)rng_below(r, 20));
			} else if (rng_below(r, 8) == 0 &&
			    n + 5000 < cap) {
				/* Past the line limit. */
				memset(out + n, 'L', 5000);
				n += 5000;
			} else {
				out[n++] = (char)('a' + rng_below(r, 26));
			}
			break;
		}
	}
	return n;
}

static void
test_clients_random_byte_streams_get_errors_and_lockd_serves_on(void **state)
{
	int peers = 32, per_peer = 256 * 1024 * abuse_scale(), i, round;
	uint64_t seed = 20261202;
	struct harness_server *s;
	struct harness_conn *ctl, *fresh;
	struct random_stats st;
	struct abuse_swarm sw;
	struct rng *rng;
	static char chunk[32768];
	size_t *sent;
	int64_t worst = 0, t, start = harness_now_ms();
	uint64_t total = 0;
	bool busy;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.bad_peer = -1;
	s = harness_start(NULL);
	ctl = harness_connect(s);
	assert_int_equal(abuse_swarm_open(&sw, s->port, peers, 10000), peers);
	rng = calloc((size_t)peers, sizeof(*rng));
	sent = calloc((size_t)peers, sizeof(*sent));
	assert_non_null(rng);
	assert_non_null(sent);
	for (i = 0; i < peers; i++)
		rng_seed(&rng[i], seed + (uint64_t)i);
	/* Round-robin chunks; replies are drained as they come so a peer is
	 * cut off only for what it did itself. */
	for (round = 0, busy = true; busy && round < 100000; round++) {
		busy = false;
		for (i = 0; i < peers; i++) {
			struct abuse_peer *p = &sw.peers[i];
			size_t n;
			ssize_t w;

			if (p->fd < 0 || p->eof || sent[i] >= (size_t)per_peer)
				continue;
			n = random_chunk(&rng[i], chunk, sizeof(chunk));
			w = abuse_peer_send(p, chunk, n, 200);
			if (w > 0) {
				sent[i] += (size_t)w;
				total += (uint64_t)w;
			}
			if (w < 0)
				p->eof = true;   /* closed by lockd: QUIT-free
						  * streams end by the cap */
			busy = true;
		}
		abuse_swarm_read(&sw, UINT32_MAX, 5, check_random_reply, &st);
		if (round % 16 == 0) {
			t = ping_ms(ctl);
			worst = t > worst ? t : worst;
		}
		if (harness_now_ms() - start > 20000)
			break;
	}
	abuse_swarm_read(&sw, UINT32_MAX, 500, check_random_reply, &st);
	free(rng);
	free(sent);
	if (st.bad_peer >= 0)
		fail_msg("peer %d read a line that is no reply: '%s'",
		    st.bad_peer, st.bad_line);
	assert_true(abuse_alive(s->pid));
	assert_true(st.errors[PROTO_ERR_BADREQ] > 0);
	assert_true(st.errors[PROTO_ERR_BADARG] > 0);
	assert_true(st.errors[PROTO_ERR_TOOLONG] > 0);
	/* Longer floods (make soak-abuse) leave MBs in the kernel's socket
	 * buffers.  Without a read budget lockd parsed all a connection had
	 * (libuv reads up to 32 x 64 KiB) before the pass ended and the
	 * PING's reply went out: 330 ms to 1 s at ABUSE_SCALE=4.  With
	 * server.c's READ_BUDGET (64 KiB per connection and pass) it took
	 * 44-62 ms there, so the soak holds it to PROMPT_MS too. */
	if (worst >= PROMPT_MS)
		fail_msg("a PING took %lld ms among the random streams",
		    (long long)worst);
	/* Served on, old connection and new. */
	assert_true(ping_ms(ctl) < PROMPT_MS);
	fresh = harness_connect(s);
	harness_try(fresh, "after/random", 1000, NULL);
	assert_false(harness_log_contains(s, "level=error"));
	{
		char codes[256];
		size_t n = 0;
		int code;

		codes[0] = '\0';
		for (code = 1; code < PROTO_ERR_COUNT; code++)
			if (st.errors[code] > 0)
				n += (size_t)snprintf(codes + n,
				    sizeof(codes) - n, "%s%llu %s",
				    n > 0 ? ", " : "",
				    (unsigned long long)st.errors[code],
				    proto_error_name((enum proto_error_code)
				    code));
		print_message("figure: random streams (seed %llu): %d "
		    "connections, %llu bytes, %llu replies, all parsed: %s, "
		    "%llu successes; worst PING meanwhile %lld ms\n",
		    (unsigned long long)seed, peers,
		    (unsigned long long)total,
		    (unsigned long long)st.replies, codes,
		    (unsigned long long)st.other, (long long)worst);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		ABUSE_TEST(test_clients_four_thousand_connections_each_get_pong),
		ABUSE_TEST(
		    test_clients_connections_beyond_the_maximum_get_err_limit),
		ABUSE_TEST(test_clients_slowloris_does_not_delay_a_normal_client),
		ABUSE_TEST(
		    test_clients_pipelining_100000_requests_unread_is_cut_off_alone),
		ABUSE_TEST(
		    test_clients_random_byte_streams_get_errors_and_lockd_serves_on),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
