/*
 * test_protocol.c - integration tests of the wire protocol's framing and
 * forms against a real lockd: overlong lines, pipelining (executed on
 * arrival, answered in order), every malformed request form and its error
 * code, empty lines, CRLF, case, QUIT, HELP and STATS.
 *
 * A malformed request must cost the client one ERR line and nothing else:
 * each one here is followed on the same connection by a request that must
 * still be answered.  This file tests what is seen on the wire only; it
 * includes nothing of daemon/ or core/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

#define LINE_LIMIT 4096   /* the spec's default line limit */

/* Fills buf with `prefix` padded by `pad` up to len bytes, then "\n". */
static size_t
padded_line(char *buf, const char *prefix, char pad, size_t len)
{
	size_t n = strlen(prefix);

	memcpy(buf, prefix, n);
	memset(buf + n, pad, len - n);
	buf[len] = '\n';
	return len + 1;
}

static void
test_protocol_overlong_line_is_refused_and_the_connection_lives_on(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	static char line[5001];
	size_t n = padded_line(line, "STATUS ", 'x', 5000);

	(void)state;
	harness_send_bytes(c, line, n);
	harness_expect_error(c, "TOOLONG");
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
}

static void
test_protocol_overlong_line_in_chunks_is_refused_once(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	static char chunk[2000];
	int i;

	(void)state;
	/* 8 KiB of one line, arriving over several reads.  Were the server
	 * to parse the tail as a fresh line, "PING" would come back as PONG
	 * twice or "xxxx..." as ERR BADREQ. */
	harness_send(c, "ACQUIRE ");
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 4; i++) {
		harness_send_bytes(c, chunk, sizeof(chunk));
		harness_sleep_ms(30);
	}
	harness_send(c, " PING\nPING\n");
	harness_expect_error(c, "TOOLONG");
	harness_expect_line(c, "PONG");
	harness_expect_silence(c, 100);
}

static void
test_protocol_line_of_exactly_the_limit_is_accepted(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_server *small = harness_start("--max-line", "100", NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *d = harness_connect(small);
	static char line[LINE_LIMIT + 3];
	size_t n;

	(void)state;
	/* 4096 bytes before the LF: fine.  The CR before the LF does not
	 * count.  4097 bytes: too long. */
	n = padded_line(line, "PING", ' ', LINE_LIMIT);
	harness_send_bytes(c, line, n);
	harness_expect_line(c, "PONG");
	n = padded_line(line, "PING", ' ', LINE_LIMIT);
	line[n - 1] = '\r';
	line[n++] = '\n';
	harness_send_bytes(c, line, n);
	harness_expect_line(c, "PONG");
	n = padded_line(line, "PING", ' ', LINE_LIMIT + 1);
	harness_send_bytes(c, line, n);
	harness_expect_error(c, "TOOLONG");
	/* The same 4096 bytes and CR, the LF only in a later read. */
	n = padded_line(line, "PING", ' ', LINE_LIMIT);
	line[n - 1] = '\r';
	harness_send_bytes(c, line, n);
	harness_expect_silence(c, 50);
	harness_send(c, "\n");
	harness_expect_line(c, "PONG");

	/* --max-line moves the limit. */
	n = padded_line(line, "PING", ' ', 100);
	harness_send_bytes(d, line, n);
	harness_expect_line(d, "PONG");
	n = padded_line(line, "PING", ' ', 101);
	harness_send_bytes(d, line, n);
	harness_expect_error(d, "TOOLONG");
	harness_send(d, "PING\n");
	harness_expect_line(d, "PONG");
}

/* Polls STATUS until name is held (pipelined requests run on arrival, but
 * the test cannot see the arrival). */
static void
await_held(struct harness_conn *c, const char *name)
{
	int64_t deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	struct harness_status st;

	do {
		harness_status(c, name, &st);
		if (st.held)
			return;
		harness_sleep_ms(5);
	} while (harness_now_ms() < deadline);
	fail_msg("%s was never held", name);
}

static void
test_protocol_pipelined_requests_run_on_arrival_and_answer_in_order(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *piper = harness_connect(s);
	struct harness_conn *watcher = harness_connect(s);
	struct harness_grant x0, x, y;
	struct harness_status st;
	const char *line;

	(void)state;
	harness_try(holder, "pipe/x", 10000, &x0);
	harness_send(piper, "ACQUIRE pipe/x lease=10000\n"
	    "TRY pipe/y lease=10000\nPING\nSTATUS pipe/x\nSTATS\nHELP\n");

	/* Executed on arrival: y is already held by the pipeliner... */
	await_held(watcher, "pipe/y");
	harness_status(watcher, "pipe/x", &st);
	assert_int_equal(st.queue, 1);
	assert_int_equal(st.fence, x0.fence);
	/* ...but every reply waits behind the ACQUIRE. */
	harness_expect_silence(piper, 200);

	harness_send(holder, "RELEASE pipe/x %s\n", x0.handle);
	harness_expect_line(holder, "RELEASED pipe/x");
	harness_expect_granted(piper, "pipe/x", &x);
	assert_true(x.fence > x0.fence);
	harness_expect_granted(piper, "pipe/y", &y);
	harness_expect_line(piper, "PONG");
	/* STATUS ran before the grant: it saw the old holder and one waiter. */
	line = harness_expect_prefix(piper, "STATUS pipe/x ");
	assert_true(harness_parse_status(line, &st));
	assert_true(st.held);
	assert_int_equal(st.fence, x0.fence);
	assert_int_equal(st.queue, 1);
	/* So did STATS: x and y held, one waiter. */
	line = harness_expect_prefix(piper, "STATS ");
	assert_non_null(strstr(line, " held=2"));
	assert_non_null(strstr(line, " waiters=1"));
	harness_expect_prefix(piper, "HELP");
	harness_expect_silence(piper, 50);

	/* The grant to y, made before x's, is real. */
	harness_send(watcher, "RELEASE pipe/y %s\n", y.handle);
	harness_expect_line(watcher, "RELEASED pipe/y");
}

static void
test_protocol_queued_timeout_runs_on_time_and_answers_in_order(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *piper = harness_connect(s);
	struct harness_grant a, b;
	struct harness_status st;
	int64_t start, deadline;

	(void)state;
	harness_try(holder, "order/a", 10000, &a);
	harness_try(holder, "order/b", 10000, &b);
	start = harness_now_ms();
	harness_send(piper, "ACQUIRE order/a\nACQUIRE order/b wait=200\n");
	harness_await_queue(holder, "order/b", 1);
	/* The second wait runs from its arrival, not from its turn to be
	 * answered: it leaves the queue after 200 ms... */
	deadline = start + 200 + 1500;
	do {
		harness_sleep_ms(20);
		harness_status(holder, "order/b", &st);
	} while (st.queue != 0 && harness_now_ms() < deadline);
	assert_int_equal(st.queue, 0);
	assert_true(harness_now_ms() - start >= 200 - HARNESS_CLOCK_SLACK_MS);
	/* ...but its ERR TIMEOUT waits behind the first ACQUIRE. */
	harness_expect_silence(piper, 50);
	harness_send(holder, "RELEASE order/a %s\n", a.handle);
	harness_expect_line(holder, "RELEASED order/a");
	harness_expect_granted(piper, "order/a", NULL);
	harness_expect_error(piper, "TIMEOUT");
}

#define MANY 500

static void
test_protocol_hundreds_of_pipelined_requests_are_answered_in_order(
    void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	static char batch[MANY * 64];
	struct harness_grant g;
	size_t n = 0;
	int i;
	char name[32], want[64];

	(void)state;
	/* Grants (which wait for commits) interleaved with replies that
	 * need none; one write. */
	for (i = 0; i < MANY; i++)
		n += (size_t)snprintf(batch + n, sizeof(batch) - n,
		    "TRY many/%d lease=60000\nSTATUS many/%d\nPING\n", i, i);
	harness_send_bytes(c, batch, n);
	for (i = 0; i < MANY; i++) {
		snprintf(name, sizeof(name), "many/%d", i);
		harness_expect_granted(c, name, &g);
		snprintf(want, sizeof(want),
		    "STATUS many/%d held=1 fence=%llu ", i,
		    (unsigned long long)g.fence);
		harness_expect_prefix(c, want);
		harness_expect_line(c, "PONG");
	}
}

static void
test_protocol_half_closed_client_gets_every_reply(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *watcher = harness_connect(s);
	static char batch[20000 * 5 + 64];
	size_t n = 0;
	int i;

	(void)state;
	/* Like "printf ... | socat - TCP:...": requests, then EOF. */
	for (i = 0; i < 20000; i++, n += 5)
		memcpy(batch + n, "PING\n", 5);
	n += (size_t)snprintf(batch + n, sizeof(batch) - n,
	    "TRY half lease=60000\n");
	harness_send_bytes(c, batch, n);
	shutdown(c->fd, SHUT_WR);
	for (i = 0; i < 20000; i++) {
		const char *line = harness_read_line(c,
		    HARNESS_REPLY_TIMEOUT_MS);
		if (line == NULL || strcmp(line, "PONG") != 0)
			fail_msg("reply %d of 20000 PINGs after a half-close: "
			    "'%s'", i, line ? line : "(nothing)");
	}
	harness_expect_granted(c, "half", NULL);
	harness_send(watcher, "STATUS half\n");
	harness_expect_prefix(watcher, "STATUS half held=1 ");
}

/*
 * "ACQUIRE name\nQUIT\n", then the client closes: lockd has stopped
 * executing its requests after QUIT, but reads on, so it sees the close
 * and the waiter leaves the queue, never to be granted.  Twenty such
 * clients leave no waiter and no connection behind.
 */
static void
test_protocol_waiter_behind_quit_leaves_when_its_client_closes(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *quitters[20];
	struct harness_grant g;
	struct harness_status st;
	int i;

	(void)state;
	harness_try(holder, "r/x", 20000, &g);
	for (i = 0; i < 20; i++) {
		quitters[i] = harness_connect(s);
		harness_send(quitters[i], "ACQUIRE r/x\nQUIT\n");
	}
	harness_await_queue(holder, "r/x", 20);
	for (i = 0; i < 20; i++)
		harness_close(quitters[i]);
	harness_await_queue(holder, "r/x", 0);
	assert_int_equal(harness_stat(holder, "waiters"), 0);
	assert_int_equal(harness_stat(holder, "connections"), 1);
	harness_send(holder, "RELEASE r/x %s\n", g.handle);
	harness_expect_line(holder, "RELEASED r/x");
	harness_status(holder, "r/x", &st);
	assert_int_equal(st.held, 0);
}

/*
 * QUIT behind a waiting ACQUIRE on a connection that stays open: the
 * waiter keeps its place, its reply comes, then BYE, then the close.
 */
static void
test_protocol_quit_behind_a_waiter_answers_it_first(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;

	(void)state;
	harness_try(holder, "q", 20000, &g);
	harness_send(c, "ACQUIRE q lease=5000\nQUIT\n");
	harness_await_queue(holder, "q", 1);
	harness_send(holder, "RELEASE q %s\n", g.handle);
	harness_expect_line(holder, "RELEASED q");
	harness_expect_granted(c, "q", NULL);
	harness_expect_line(c, "BYE");
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
}

/*
 * A half-close (nc -N, printf ... | socat) while an ACQUIRE waits: lockd
 * cannot tell it from a client gone, so the waiter leaves the queue and is
 * never granted; the client is told so with ERR TIMEOUT at once, gets
 * every other reply in order, and then the connection closes.
 */
static void
test_protocol_half_close_cancels_a_waiter_with_timeout(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *holder = harness_connect(s);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;
	struct harness_status st;
	const char *line;
	int64_t t0;

	(void)state;
	harness_try(holder, "busy", 20000, &g);
	harness_send(c, "PING\nACQUIRE busy wait=5s\nPING\n");
	harness_await_queue(holder, "busy", 1);
	t0 = harness_now_ms();
	shutdown(c->fd, SHUT_WR);
	harness_expect_line(c, "PONG");
	line = harness_expect_error(c, "TIMEOUT");
	if (strstr(line, "input ended") == NULL)
		fail_msg("the TIMEOUT does not say why: '%s'", line);
	if (harness_now_ms() - t0 >= 5000)
		fail_msg("the TIMEOUT came with the wait's end, not the input's");
	harness_expect_line(c, "PONG");
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
	harness_await_queue(holder, "busy", 0);
	assert_int_equal(harness_stat(holder, "timeouts"), 1);
	harness_send(holder, "RELEASE busy %s\n", g.handle);
	harness_expect_line(holder, "RELEASED busy");
	harness_status(holder, "busy", &st);
	assert_int_equal(st.held, 0);
}

struct bad_request {
	const char *text;
	size_t len;              /* 0: strlen(text) */
	const char *code;
};

static void
send_bad(struct harness_conn *c, const struct bad_request *b)
{
	const char *got;

	/* Followed in the same write by a PING that must still be answered:
	 * one bad line, one reply, the connection lives on. */
	harness_send_bytes(c, b->text, b->len ? b->len : strlen(b->text));
	harness_send(c, "PING\n");
	got = harness_read_line(c, HARNESS_REPLY_TIMEOUT_MS);
	if (got == NULL || strncmp(got, "ERR ", 4) != 0 ||
	    strncmp(got + 4, b->code, strlen(b->code)) != 0 ||
	    (got[4 + strlen(b->code)] != ' ' &&
	    got[4 + strlen(b->code)] != '\0'))
		fail_msg("request '%.*s' (%zu bytes): expected ERR %s, "
		    "got '%s'",
		    (int)strcspn(b->text, "\n"), b->text,
		    b->len ? b->len : strlen(b->text), b->code,
		    got ? got : "(nothing)");
	harness_expect_line(c, "PONG");
}

static void
test_protocol_malformed_requests_are_answered_with_their_code(
    void **state)
{
	static const struct bad_request bad[] = {
		/* BADREQ: unknown command, wrong number of arguments. */
		{ "FOO\n", 0, "BADREQ" },
		{ "ACQUIREX a\n", 0, "BADREQ" },
		{ "ACQUIRE\n", 0, "BADREQ" },
		{ "ACQUIRE a b\n", 0, "BADREQ" },
		{ "TRY\n", 0, "BADREQ" },
		{ "RENEW a\n", 0, "BADREQ" },
		{ "RELEASE a\n", 0, "BADREQ" },
		{ "RELEASE a 1-0123456789abcdef extra\n", 0, "BADREQ" },
		{ "STATUS\n", 0, "BADREQ" },
		{ "STATUS a b\n", 0, "BADREQ" },
		{ "PING extra\n", 0, "BADREQ" },
		{ "STATS now\n", 0, "BADREQ" },
		{ "QUIT now\n", 0, "BADREQ" },
		{ "HELP me\n", 0, "BADREQ" },
		/* BADARG: durations. */
		{ "ACQUIRE a lease=abc\n", 0, "BADARG" },
		{ "ACQUIRE a lease=-5\n", 0, "BADARG" },
		{ "TRY a lease=-5\n", 0, "BADARG" },
		{ "ACQUIRE a wait=-1\n", 0, "BADARG" },
		{ "ACQUIRE a lease=+5\n", 0, "BADARG" },
		{ "ACQUIRE a lease=5x\n", 0, "BADARG" },
		{ "ACQUIRE a lease=5d\n", 0, "BADARG" },
		{ "ACQUIRE a lease=\n", 0, "BADARG" },
		{ "ACQUIRE a lease=s\n", 0, "BADARG" },
		{ "ACQUIRE a wait=1.5s\n", 0, "BADARG" },
		{ "ACQUIRE a wait=8761h\n", 0, "BADARG" },
		{ "ACQUIRE a lease=99999999999999999999999\n", 0, "BADARG" },
		/* BADARG: handles. */
		{ "RENEW a 12\n", 0, "BADARG" },
		{ "RENEW a 1-ABCDEF0123456789\n", 0, "BADARG" },
		{ "RENEW a 1-0123456789abcde\n", 0, "BADARG" },
		{ "RENEW a 1-0123456789abcdef0\n", 0, "BADARG" },
		{ "RENEW a 1-0123456789abcdeg\n", 0, "BADARG" },
		{ "RENEW a -0123456789abcdef\n", 0, "BADARG" },
		{ "RELEASE a 0-0123456789abcdef\n", 0, "BADARG" },
		{ "RELEASE a 9223372036854775808-0123456789abcdef\n", 0,
		  "BADARG" },
		{ "RELEASE a x-0123456789abcdef\n", 0, "BADARG" },
		{ "RELEASE a 1_0123456789abcdef\n", 0, "BADARG" },
		/* BADARG: options. */
		{ "ACQUIRE a lease=1s lease=2s\n", 0, "BADARG" },
		{ "ACQUIRE a LEASE=1s lease=1s\n", 0, "BADARG" },
		{ "ACQUIRE a wait=1 onclose=keep wait=1\n", 0, "BADARG" },
		{ "ACQUIRE a onclose=keep onclose=keep\n", 0, "BADARG" },
		{ "ACQUIRE a color=red\n", 0, "BADARG" },
		{ "ACQUIRE a onclose=maybe\n", 0, "BADARG" },
		{ "TRY a wait=1s\n", 0, "BADARG" },
		{ "STATUS a lease=1\n", 0, "BADARG" },
		{ "RELEASE a 1-0123456789abcdef lease=1\n", 0, "BADARG" },
		/* BADREQ: control bytes anywhere in the line. */
		{ "STATUS a\001b\n", 0, "BADREQ" },
		{ "STATUS a\177\n", 0, "BADREQ" },
		{ "PI\000NG\n", 6, "BADREQ" },
		{ "STATUS a\rb\n", 0, "BADREQ" },
		{ "\033[A\n", 0, "BADREQ" },
	};
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	static char name[300];
	struct bad_request long_name;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		send_bad(c, &bad[i]);

	/* A name of 256 bytes is refused; 255 is fine. */
	padded_line(name, "STATUS ", 'n', 7 + 256);
	long_name.text = name;
	long_name.len = 7 + 256 + 1;
	long_name.code = "BADARG";
	send_bad(c, &long_name);
	name[7 + 255] = '\0';
	harness_send(c, "%s\n", name);
	harness_expect_prefix(c, "STATUS n");

	/* None of them did anything. */
	harness_send(c, "STATUS a\n");
	harness_expect_line(c, "STATUS a held=0 fence=0 ttl=0 queue=0");
	assert_int_equal(harness_stat(c, "granted"), 0);
}

static void
test_protocol_names_may_hold_any_byte_but_blanks_and_controls(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;

	(void)state;
	/* UTF-8, raw high bytes and punctuation are all name bytes. */
	harness_send(c, "TRY caf\xc3\xa9/\xff\xfe:[x]#1 lease=1000\n");
	harness_expect_granted(c, "caf\xc3\xa9/\xff\xfe:[x]#1", &g);
	harness_send(c, "STATUS caf\xc3\xa9/\xff\xfe:[x]#1\n");
	harness_expect_prefix(c, "STATUS caf\xc3\xa9/\xff\xfe:[x]#1 held=1 ");
	/* Names are bytes: case matters. */
	harness_send(c, "STATUS CAF\xc3\xa9/\xff\xfe:[x]#1\n");
	harness_expect_prefix(c, "STATUS CAF\xc3\xa9/\xff\xfe:[x]#1 held=0 ");
}

static void
test_protocol_empty_lines_get_no_reply(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);

	(void)state;
	harness_send(c, "\n\r\n   \n\t \r\n");
	harness_expect_silence(c, 100);
	harness_send(c, "\nPING\n\n");
	harness_expect_line(c, "PONG");
	harness_expect_silence(c, 100);
}

static void
test_protocol_crlf_tabs_and_any_case_are_accepted(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_grant g;

	(void)state;
	harness_send(c, "PING\r\n");
	harness_expect_line(c, "PONG");
	harness_send(c, "ping\n");
	harness_expect_line(c, "PONG");
	harness_send(c, "Status case\r\n");
	harness_expect_line(c, "STATUS case held=0 fence=0 ttl=0 queue=0");
	harness_send(c, "\tSTATUS \t  case\t\n");
	harness_expect_line(c, "STATUS case held=0 fence=0 ttl=0 queue=0");
	harness_send(c, "tRy case OnClose=release Lease=1500\r\n");
	harness_expect_granted(c, "case", &g);
	assert_int_equal(g.lease_ms, 1500);
	harness_send(c, "release\tcase\t%s\r\n", g.handle);
	harness_expect_line(c, "RELEASED case");
}

static void
test_protocol_quit_says_bye_and_closes(void **state)
{
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	struct harness_conn *d = harness_connect(s);

	(void)state;
	/* Nothing after QUIT is executed. */
	harness_send(c, "QUIT\nTRY after-quit\n");
	harness_expect_line(c, "BYE");
	harness_expect_eof(c, HARNESS_REPLY_TIMEOUT_MS);
	harness_send(d, "STATUS after-quit\n");
	harness_expect_line(d,
	    "STATUS after-quit held=0 fence=0 ttl=0 queue=0");
}

static void
test_protocol_help_names_every_command(void **state)
{
	static const char *const commands[] = { "ACQUIRE", "TRY", "RENEW",
	    "RELEASE", "STATUS", "PING", "QUIT", "HELP", "STATS" };
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *c = harness_connect(s);
	const char *line;
	size_t i;

	(void)state;
	harness_send(c, "HELP\n");
	line = harness_expect_prefix(c, "HELP");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const char *at = line;
		size_t n = strlen(commands[i]);
		bool found = false;

		/* As a whole word. */
		while (!found && (at = strstr(at, commands[i])) != NULL) {
			found = (at == line || at[-1] == ' ' ||
			    at[-1] == ':' || at[-1] == ',') &&
			    (at[n] == '\0' || at[n] == ' ' || at[n] == ',');
			at += n;
		}
		if (!found)
			fail_msg("HELP does not name %s: '%s'", commands[i],
			    line);
	}
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
}

static void
test_protocol_stats_has_every_field_and_counts(void **state)
{
	static const char *const keys[] = { "connections", "locks", "held",
	    "waiters", "granted", "timeouts", "released", "reclaimed" };
	struct harness_server *s = harness_start(NULL);
	struct harness_conn *a = harness_connect(s);
	struct harness_conn *b = harness_connect(s);
	struct harness_grant g;
	uint64_t before[8];
	int64_t deadline;
	size_t i;

	(void)state;
	for (i = 0; i < 8; i++)
		before[i] = harness_stat(a, keys[i]);
	assert_int_equal(before[0], 2);   /* a and b */
	assert_int_equal(before[2], 0);
	assert_int_equal(before[4], 0);

	harness_try(a, "st/one", 10000, &g);            /* granted */
	harness_send(b, "ACQUIRE st/one wait=0\n");     /* a timeout */
	harness_expect_error(b, "TIMEOUT");
	harness_send(b, "ACQUIRE st/one\n");            /* a waiter */
	harness_await_queue(a, "st/one", 1);
	assert_int_equal(harness_stat(a, "waiters"), 1);
	assert_int_equal(harness_stat(a, "held"), 1);
	assert_true(harness_stat(a, "locks") >= 1);
	harness_send(a, "RELEASE st/one %s\n", g.handle); /* released */
	harness_expect_line(a, "RELEASED st/one");
	harness_expect_granted(b, "st/one", NULL);      /* granted */
	harness_try(a, "st/two", 100, NULL);            /* granted, reclaimed */

	deadline = harness_now_ms() + 100 + 1500;
	while (harness_stat(a, "reclaimed") == before[7] &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(20);
	assert_int_equal(harness_stat(a, "reclaimed"), before[7] + 1);
	assert_int_equal(harness_stat(a, "granted"), before[4] + 3);
	assert_int_equal(harness_stat(a, "timeouts"), before[5] + 1);
	assert_int_equal(harness_stat(a, "released"), before[6] + 1);
	assert_int_equal(harness_stat(a, "waiters"), 0);
	assert_int_equal(harness_stat(a, "held"), 1);
	harness_close(b);
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (harness_stat(a, "connections") != 1 &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(5);
	assert_int_equal(harness_stat(a, "connections"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_protocol_overlong_line_is_refused_and_the_connection_lives_on),
		HARNESS_TEST(
		    test_protocol_overlong_line_in_chunks_is_refused_once),
		HARNESS_TEST(
		    test_protocol_line_of_exactly_the_limit_is_accepted),
		HARNESS_TEST(
		    test_protocol_pipelined_requests_run_on_arrival_and_answer_in_order),
		HARNESS_TEST(
		    test_protocol_queued_timeout_runs_on_time_and_answers_in_order),
		HARNESS_TEST(
		    test_protocol_hundreds_of_pipelined_requests_are_answered_in_order),
		HARNESS_TEST(test_protocol_half_closed_client_gets_every_reply),
		HARNESS_TEST(
		    test_protocol_waiter_behind_quit_leaves_when_its_client_closes),
		HARNESS_TEST(test_protocol_quit_behind_a_waiter_answers_it_first),
		HARNESS_TEST(test_protocol_half_close_cancels_a_waiter_with_timeout),
		HARNESS_TEST(
		    test_protocol_malformed_requests_are_answered_with_their_code),
		HARNESS_TEST(
		    test_protocol_names_may_hold_any_byte_but_blanks_and_controls),
		HARNESS_TEST(test_protocol_empty_lines_get_no_reply),
		HARNESS_TEST(test_protocol_crlf_tabs_and_any_case_are_accepted),
		HARNESS_TEST(test_protocol_quit_says_bye_and_closes),
		HARNESS_TEST(test_protocol_help_names_every_command),
		HARNESS_TEST(test_protocol_stats_has_every_field_and_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
