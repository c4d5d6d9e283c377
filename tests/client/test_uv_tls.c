/*
 * test_uv_tls.c - the libuv client (lockd_uv.h) against a real lockd with
 * --tls-cert, --tls-key, --tls-client-ca and --auth: lockds:// and
 * lockd:// URLs, the CA and the server's name checked, a token from the
 * options and from a file, a refused token, a client certificate as the
 * principal, pipelining and the keep-alive over TLS, and a server that
 * stalls the handshake (or AUTH), timed out while the loop's other timers
 * fire.
 *
 * Certificates come from tests/lib/certs.c (the openssl command).  Every
 * loop is bounded: harness_uv_run_until() (tests/lib/uv_loop.c) runs the
 * loop until a flag is set or a time limit passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "client/lockd_uv.h"
#include "tests/lib/certs.h"
#include "tests/lib/harness.h"
#include "tests/lib/uv_loop.h"

#define TIMEOUT_MS 10000
/* printf '%s' s3cret | sha256sum, and likewise t0ken. */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define HASH_T0KEN \
	"b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"
/* Requests in one pipeline, with names long enough that the replies
 * fill several 16 KiB TLS records. */
#define PIPELINED 200
/* The stalled handshake's connect timeout, and the ticks of a 10 ms
 * timer that must come while it waits (the loop never blocks). */
#define STALL_TIMEOUT_MS 500
#define STALL_TICKS 5

static struct harness_certs certs;

/* Issues one request through call's result and runs it to its reply. */
#define RUN(r, call) do {                                               \
	memset(&(r), 0, sizeof(r));                                     \
	assert_int_equal((call), LOCKD_OK);                             \
	assert_true(harness_uv_run_until(&(r).done, TIMEOUT_MS));       \
} while (0)

static struct harness_server *
start_lockd(bool client_ca)
{
	harness_certs_make(&certs);
	harness_certs_write(&certs, "auth",
	    "ops " HASH_S3CRET " lock,read,admin ops/\n"
	    "app " HASH_T0KEN " lock,read app/\n"
	    "alice - lock,read alice/\n");
	if (client_ca)
		return harness_start("--tls-cert",
		    harness_certs_path(&certs, "server.pem"), "--tls-key",
		    harness_certs_path(&certs, "server.key"),
		    "--tls-client-ca", harness_certs_path(&certs, "ca.pem"),
		    "--auth", harness_certs_path(&certs, "auth"), NULL);
	return harness_start("--tls-cert",
	    harness_certs_path(&certs, "server.pem"), "--tls-key",
	    harness_certs_path(&certs, "server.key"), "--auth",
	    harness_certs_path(&certs, "auth"), NULL);
}

static lockd_options
tls_options(const char *url)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.url = url;
	o.tls_ca_file = harness_certs_path(&certs, "ca.pem");
	o.connect_timeout_ms = TIMEOUT_MS;
	o.command_timeout_ms = TIMEOUT_MS;
	return o;
}

/* Connects with o; the connect callback's result, the client in *out. */
static int
connect_with(const lockd_options *o, lockd_uv_client **out)
{
	struct harness_uv_result r = { 0 };

	*out = lockd_uv_connect(&harness_uv_loop, o, harness_uv_on_connect, &r);
	assert_non_null(*out);
	assert_true(harness_uv_run_until(&r.done, TIMEOUT_MS));
	assert_int_equal(r.calls, 1);
	return r.result;
}

static void
test_uv_tls_takes_renews_and_releases_over_tls_with_a_token(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r, pipe[PIPELINED];
	lockd_uv_client *c;
	lockd_options o;
	lockd_lease lease;
	char url[128], token[16], name[PIPELINED][256];
	int i;

	(void)state;
	s = start_lockd(false);
	snprintf(url, sizeof(url), "lockds://localhost:%d", s->port);
	o = tls_options(url);
	/* The client keeps no pointer into the options. */
	snprintf(token, sizeof(token), "s3cret");
	o.token = token;
	c = lockd_uv_connect(&harness_uv_loop, &o, harness_uv_on_connect, &r);
	memset(token, 'x', sizeof(token) - 1);
	memset(&r, 0, sizeof(r));
	assert_non_null(c);
	/* Issued before the handshake: sent once AUTH is answered. */
	memset(&pipe[0], 0, sizeof(pipe[0]));
	assert_int_equal(lockd_uv_acquire(c, "ops/a", 2000, 0,
	    LOCKD_ONCLOSE_KEEP, harness_uv_on_reply, &pipe[0]), LOCKD_OK);
	assert_true(harness_uv_run_until(&pipe[0].done, TIMEOUT_MS));
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.result, LOCKD_OK);
	assert_int_equal(pipe[0].result, LOCKD_OK);
	lease = pipe[0].reply.lease;
	RUN(r, lockd_uv_renew(c, &lease, 3000, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	assert_int_equal(r.reply.lease.lease_ms, 3000);
	RUN(r, lockd_uv_status(c, "ops/a", harness_uv_on_reply, &r));
	assert_int_equal(r.reply.status.held, 1);
	assert_int_equal(r.reply.status.fence, lease.fence);
	RUN(r, lockd_uv_release(c, &lease, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	RUN(r, lockd_uv_status(c, "ops/a", harness_uv_on_reply, &r));
	assert_int_equal(r.reply.status.held, 0);
	/* A pipeline whose replies cross TLS records. */
	memset(pipe, 0, sizeof(pipe));
	for (i = 0; i < PIPELINED; i++) {
		snprintf(name[i], sizeof(name[i]), "ops/%0200d", i);
		assert_int_equal(lockd_uv_try(c, name[i], 0,
		    LOCKD_ONCLOSE_RELEASE, harness_uv_on_reply, &pipe[i]),
		    LOCKD_OK);
	}
	assert_true(harness_uv_run_until(&pipe[PIPELINED - 1].done,
	    TIMEOUT_MS));
	for (i = 0; i < PIPELINED; i++) {
		assert_int_equal(pipe[i].result, LOCKD_OK);
		assert_string_equal(pipe[i].reply.lease.name, name[i]);
	}
	/* Outside the token's prefix: refused, the client lives on. */
	RUN(r, lockd_uv_try(c, "app/a", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_DENIED);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	harness_uv_close(c);
	/* 127.0.0.1 is in the certificate too, as an IP address. */
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.token = "s3cret";
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	harness_uv_close(c);
}

static void
test_uv_tls_refuses_a_server_it_cannot_verify(void **state)
{
	struct harness_server *s, *plain;
	struct harness_uv_result r;
	lockd_uv_client *c;
	lockd_options o;
	char url[128];

	(void)state;
	s = start_lockd(false);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.token = "s3cret";
	o.tls_ca_file = harness_certs_path(&certs, "otherca.pem");
	c = lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL);
	assert_non_null(c);
	/* A request issued meanwhile gets the same error. */
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_IO);
	assert_int_equal(lockd_uv_err(c), LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c), "certificate"));
	assert_int_equal(lockd_uv_ping(c, harness_uv_on_reply, &r),
	    LOCKD_ERR_IO);
	harness_uv_close(c);
	/* The right CA, the wrong name. */
	o = tls_options(url);
	o.tls_server_name = "lockd.example.net";
	assert_int_equal(connect_with(&o, &c), LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c), "hostname mismatch"));
	harness_uv_close(c);
	/* Plain lockd:// to the TLS port gets no answer but an end. */
	snprintf(url, sizeof(url), "lockd://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.tls_ca_file = NULL;
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_true(lockd_error_is_fatal(r.result));
	harness_uv_close(c);
	/* lockds:// to a plain lockd: its answer to the ClientHello is no
	 * TLS record. */
	plain = harness_start(NULL);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", plain->port);
	o = tls_options(url);
	assert_int_equal(connect_with(&o, &c), LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c), "TLS with"));
	harness_uv_close(c);
	/* What lockd_connect refuses, lockd_uv_connect refuses. */
	o = tls_options("lockds:///tmp/lockd.sock");
	assert_null(lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL));
	o = tls_options(url);
	o.tls_ca_file = harness_certs_path(&certs, "no-such.pem");
	assert_null(lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL));
	o = tls_options(url);
	o.tls_key_file = harness_certs_path(&certs, "alice.key");
	assert_null(lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL));
}

/*
 * Issue 25, item 6: with --tls-client-ca, a client without a certificate
 * is refused by an alert after its TLS 1.3 handshake; the error says so.
 */
static void
test_uv_tls_a_missing_client_certificate_is_named(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r;
	lockd_uv_client *c;
	lockd_options o;
	char url[128];

	(void)state;
	s = start_lockd(true);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.token = "s3cret";
	c = lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL);
	assert_non_null(c);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c),
	    "requires a client certificate"));
	harness_uv_close(c);
	o.token = NULL;
	c = lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_uv_errstr(c),
	    "requires a client certificate"));
	harness_uv_close(c);
}

static void
test_uv_tls_a_wrong_token_gets_denied(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r, early;
	lockd_uv_client *c;
	lockd_options o;
	char url[128];

	(void)state;
	s = start_lockd(false);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.token = "s3creT";
	memset(&r, 0, sizeof(r));
	memset(&early, 0, sizeof(early));
	c = lockd_uv_connect(&harness_uv_loop, &o, harness_uv_on_connect, &r);
	assert_non_null(c);
	assert_int_equal(lockd_uv_try(c, "ops/a", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &early), LOCKD_OK);
	assert_true(harness_uv_run_until(&early.done, TIMEOUT_MS));
	assert_int_equal(r.result, LOCKD_ERR_DENIED);
	assert_int_equal(early.result, LOCKD_ERR_DENIED);
	assert_int_equal(lockd_uv_err(c), LOCKD_ERR_DENIED);
	assert_non_null(strstr(lockd_uv_errstr(c), "AUTH refused"));
	harness_uv_close(c);
	/* A token from a file: app's, which may not touch ops/. */
	harness_certs_write(&certs, "token", "t0ken\n");
	o = tls_options(url);
	o.token_file = harness_certs_path(&certs, "token");
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	RUN(r, lockd_uv_try(c, "app/a", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	RUN(r, lockd_uv_try(c, "ops/a", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_DENIED);
	harness_uv_close(c);
	/* A token file that cannot be read fails the connect. */
	o.token_file = harness_certs_path(&certs, "no-such-token");
	assert_int_equal(connect_with(&o, &c), LOCKD_ERR_INVALID);
	assert_non_null(strstr(lockd_uv_errstr(c), "token file"));
	harness_uv_close(c);
}

static void
test_uv_tls_plain_lockd_url_sends_auth_in_the_clear(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r;
	lockd_uv_client *c;
	lockd_options o;
	char url[128];

	(void)state;
	harness_certs_make(&certs);
	harness_certs_write(&certs, "auth",
	    "app " HASH_T0KEN " lock,read app/\n");
	s = harness_start("--auth", harness_certs_path(&certs, "auth"),
	    NULL);
	snprintf(url, sizeof(url), "lockd://127.0.0.1:%d", s->port);
	memset(&o, 0, sizeof(o));
	o.url = url;
	o.connect_timeout_ms = TIMEOUT_MS;
	o.token = "t0ken";
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	RUN(r, lockd_uv_try(c, "app/a", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	harness_uv_close(c);
	o.token = "t0keN";
	assert_int_equal(connect_with(&o, &c), LOCKD_ERR_DENIED);
	harness_uv_close(c);
}

static void
test_uv_tls_a_client_certificate_is_the_principal(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r;
	lockd_uv_client *c;
	lockd_options o;
	char url[128];

	(void)state;
	s = start_lockd(true);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	o.tls_cert_file = harness_certs_path(&certs, "alice.pem");
	o.tls_key_file = harness_certs_path(&certs, "alice.key");
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	RUN(r, lockd_uv_try(c, "alice/x", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	RUN(r, lockd_uv_try(c, "ops/x", 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_ERR_DENIED);
	harness_uv_close(c);
	/* No certificate, or one from a CA lockd does not trust: the
	 * server ends the handshake (in TLS 1.3 after the client's side
	 * is done, so the first request sees it). */
	o.tls_cert_file = NULL;
	o.tls_key_file = NULL;
	c = lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_true(lockd_error_is_fatal(r.result));
	harness_uv_close(c);
	o.tls_cert_file = harness_certs_path(&certs, "mallory.pem");
	o.tls_key_file = harness_certs_path(&certs, "mallory.key");
	c = lockd_uv_connect(&harness_uv_loop, &o, NULL, NULL);
	RUN(r, lockd_uv_ping(c, harness_uv_on_reply, &r));
	assert_true(lockd_error_is_fatal(r.result));
	harness_uv_close(c);
}

static void
on_lost(lockd_uv_keepalive *k, int err, const char *errstr, void *arg)
{
	(void)k;
	(void)errstr;
	*(int *)arg = err;
}

static void
test_uv_tls_keepalive_renews_over_tls(void **state)
{
	struct harness_server *s;
	struct harness_uv_result r;
	lockd_uv_client *c;
	lockd_uv_keepalive *k;
	lockd_options o;
	lockd_lease lease;
	char url[128], token[16];
	bool never = false;
	int lost = 0;

	(void)state;
	s = start_lockd(false);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d", s->port);
	o = tls_options(url);
	snprintf(token, sizeof(token), "s3cret");
	o.token = token;
	assert_int_equal(connect_with(&o, &c), LOCKD_OK);
	/* The keep-alive connects later, from the client's own copy. */
	memset(token, 'x', sizeof(token) - 1);
	RUN(r, lockd_uv_acquire(c, "ops/kept", 600, 0, LOCKD_ONCLOSE_KEEP,
	    harness_uv_on_reply, &r));
	assert_int_equal(r.result, LOCKD_OK);
	lease = r.reply.lease;
	k = lockd_uv_keepalive_start(c, &lease, on_lost, &lost);
	assert_non_null(k);
	/* Three lease lengths: the lease lives only if renewed. */
	harness_uv_run_until(&never, 1800);
	assert_int_equal(lost, 0);
	assert_int_equal(lockd_uv_keepalive_lost(k), 0);
	RUN(r, lockd_uv_status(c, "ops/kept", harness_uv_on_reply, &r));
	assert_int_equal(r.reply.status.held, 1);
	assert_int_equal(r.reply.status.fence, lease.fence);
	lockd_uv_keepalive_stop(k);
	harness_uv_close(c);
}

/* ---- a server that stalls the handshake ---------------------------------- */

struct stall {
	int listener;
	int conn;              /* the client's connection, once accepted */
	unsigned char first;   /* its first byte: 0x16, a TLS handshake */
	bool connect_done;
	int ticks;             /* while the client was connecting */
	lockd_uv_client *client;
};

static void
stall_tick(uv_timer_t *t)
{
	struct stall *st = t->data;
	unsigned char b;

	if (st->connect_done)
		return;
	st->ticks++;
	if (st->conn < 0)
		st->conn = accept(st->listener, NULL, NULL);
	if (st->conn >= 0 && st->first == 0 &&
	    recv(st->conn, &b, 1, MSG_DONTWAIT) == 1)
		st->first = b;
}

static void
stall_connected(lockd_uv_client *client, int result, void *arg)
{
	struct stall *st = arg;

	(void)client;
	(void)result;
	st->connect_done = true;
}

static void
test_uv_tls_a_stalled_handshake_times_out_and_the_loop_runs_on(
    void **state)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct stall st = { .conn = -1 };
	uv_timer_t tick;
	lockd_options o;
	char url[128];

	(void)state;
	harness_certs_make(&certs);
	/* A listener that accepts (from the tick) and never answers. */
	st.listener = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(st.listener >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(st.listener, (struct sockaddr *)&a,
	    sizeof(a)), 0);
	assert_int_equal(listen(st.listener, 4), 0);
	assert_int_equal(getsockname(st.listener, (struct sockaddr *)&a,
	    &len), 0);
	fcntl(st.listener, F_SETFL, O_NONBLOCK);
	snprintf(url, sizeof(url), "lockds://127.0.0.1:%d",
	    ntohs(a.sin_port));
	o = tls_options(url);
	o.connect_timeout_ms = STALL_TIMEOUT_MS;
	uv_timer_init(&harness_uv_loop, &tick);
	tick.data = &st;
	uv_timer_start(&tick, stall_tick, 10, 10);
	st.client = lockd_uv_connect(&harness_uv_loop, &o, stall_connected,
	    &st);
	assert_non_null(st.client);
	assert_true(harness_uv_run_until(&st.connect_done, TIMEOUT_MS));
	uv_close((uv_handle_t *)&tick, NULL);
	assert_int_equal(lockd_uv_err(st.client), LOCKD_ERR_TIMEOUT);
	assert_non_null(strstr(lockd_uv_errstr(st.client), "TLS with"));
	/* The ClientHello went out, and the loop kept running after. */
	assert_int_equal(st.first, 0x16);
	assert_true(st.ticks >= STALL_TICKS);
	harness_uv_close(st.client);
	if (st.conn >= 0)
		close(st.conn);
	/* Plain, with a token: AUTH goes out, no reply comes. */
	snprintf(url, sizeof(url), "lockd://127.0.0.1:%d",
	    ntohs(a.sin_port));
	memset(&o, 0, sizeof(o));
	o.url = url;
	o.token = "s3cret";
	o.connect_timeout_ms = STALL_TIMEOUT_MS;
	st.conn = -1;
	st.first = 0;
	st.connect_done = false;
	uv_timer_init(&harness_uv_loop, &tick);
	tick.data = &st;
	uv_timer_start(&tick, stall_tick, 10, 10);
	st.client = lockd_uv_connect(&harness_uv_loop, &o, stall_connected,
	    &st);
	assert_true(harness_uv_run_until(&st.connect_done, TIMEOUT_MS));
	uv_close((uv_handle_t *)&tick, NULL);
	assert_int_equal(lockd_uv_err(st.client), LOCKD_ERR_TIMEOUT);
	assert_non_null(strstr(lockd_uv_errstr(st.client), "AUTH with"));
	assert_int_equal(st.first, 'A');
	harness_uv_close(st.client);
	if (st.conn >= 0)
		close(st.conn);
	close(st.listener);
}

static int
setup(void **state)
{
	(void)state;
	return uv_loop_init(&harness_uv_loop);
}

static int
teardown(void **state)
{
	(void)state;
	uv_run(&harness_uv_loop, UV_RUN_NOWAIT);
	return uv_loop_close(&harness_uv_loop) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_uv_tls_takes_renews_and_releases_over_tls_with_a_token),
		HARNESS_TEST(test_uv_tls_refuses_a_server_it_cannot_verify),
		HARNESS_TEST(test_uv_tls_a_missing_client_certificate_is_named),
		HARNESS_TEST(test_uv_tls_a_wrong_token_gets_denied),
		HARNESS_TEST(test_uv_tls_plain_lockd_url_sends_auth_in_the_clear),
		HARNESS_TEST(test_uv_tls_a_client_certificate_is_the_principal),
		HARNESS_TEST(test_uv_tls_keepalive_renews_over_tls),
		HARNESS_TEST(test_uv_tls_a_stalled_handshake_times_out_and_the_loop_runs_on),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
