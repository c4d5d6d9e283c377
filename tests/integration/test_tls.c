/*
 * test_tls.c - integration tests of --tls-cert, --tls-key and
 * --tls-client-ca: real handshakes against real certificates that each
 * test makes with the openssl command (a CA, a server certificate, client
 * certificates, an expired one and one from another CA).  A plain client
 * on the TLS port is closed without a reply; a wrong CA, an expired
 * certificate, a missing one and TLS 1.1 are refused; a client
 * certificate's CN is the principal; a stalled handshake is closed after
 * --tls-handshake-timeout; SIGHUP loads a new certificate for new
 * connections while open ones go on.
 *
 * The test's TLS client is OpenSSL over a blocking socket with a receive
 * timeout; it includes nothing of daemon/.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
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
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "tests/lib/certs.h"
#include "tests/lib/harness.h"

/* The certificates are tests/lib/certs.c's; the short names read better
 * in the tests below. */
#define certs harness_certs
#define SERVER_EXT HARNESS_CERTS_SERVER_EXT
#define CLIENT_EXT HARNESS_CERTS_CLIENT_EXT

static void
make_certs(struct certs *c)
{
	harness_certs_make(c);
}

static void
make_cert(const struct certs *c, const char *name, const char *cn,
    const char *ca, const char *ext, int days)
{
	harness_certs_make_cert(c, name, cn, ca, ext, days);
}

static void
write_text(const struct certs *c, const char *file, const char *text)
{
	harness_certs_write(c, file, text);
}

static const char *
path(const struct certs *c, const char *file)
{
	return harness_certs_path(c, file);
}

/* ---- a blocking TLS client ---------------------------------------------- */

struct tls_client {
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
	char line[1024];
};

static int
tcp_connect(int port)
{
	struct sockaddr_in a;
	struct timeval tv = { HARNESS_REPLY_TIMEOUT_MS / 1000, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		fail_msg("cannot connect to port %d", port);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * Connects and handshakes, trusting ca, with cert/key when not NULL and
 * at most max_version (0: any).  Returns true with *t ready, or false
 * (t cleaned up) when the handshake, or the first read, failed.
 */
static bool
tls_open(struct tls_client *t, int port, const char *ca, const char *cert,
    const char *key, int max_version)
{
	memset(t, 0, sizeof(*t));
	t->ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(t->ctx);
	if (max_version != 0) {
		SSL_CTX_set_min_proto_version(t->ctx, 0);
		SSL_CTX_set_max_proto_version(t->ctx, max_version);
		SSL_CTX_set_security_level(t->ctx, 0);
	}
	assert_int_equal(SSL_CTX_load_verify_locations(t->ctx, ca, NULL), 1);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	if (cert != NULL) {
		assert_int_equal(SSL_CTX_use_certificate_file(t->ctx, cert,
		    SSL_FILETYPE_PEM), 1);
		assert_int_equal(SSL_CTX_use_PrivateKey_file(t->ctx, key,
		    SSL_FILETYPE_PEM), 1);
	}
	t->fd = tcp_connect(port);
	t->ssl = SSL_new(t->ctx);
	SSL_set_fd(t->ssl, t->fd);
	SSL_set1_host(t->ssl, "127.0.0.1");
	if (SSL_connect(t->ssl) != 1) {
		ERR_clear_error();
		SSL_free(t->ssl);
		SSL_CTX_free(t->ctx);
		close(t->fd);
		memset(t, 0, sizeof(*t));
		t->fd = -1;
		return false;
	}
	return true;
}

static void
tls_close(struct tls_client *t)
{
	if (t->ssl != NULL)
		SSL_free(t->ssl);
	if (t->ctx != NULL)
		SSL_CTX_free(t->ctx);
	if (t->fd >= 0)
		close(t->fd);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

/* Sends line and reads one reply line (without CRLF); NULL when the
 * connection failed or closed instead. */
static const char *
tls_ask(struct tls_client *t, const char *line)
{
	size_t n = 0;
	char ch;

	if (SSL_write(t->ssl, line, (int)strlen(line)) <= 0) {
		ERR_clear_error();
		return NULL;
	}
	while (n + 1 < sizeof(t->line)) {
		if (SSL_read(t->ssl, &ch, 1) != 1) {
			ERR_clear_error();
			return NULL;
		}
		if (ch == '\n')
			break;
		if (ch != '\r')
			t->line[n++] = ch;
	}
	t->line[n] = '\0';
	return t->line;
}

static void
expect_reply(struct tls_client *t, const char *line, const char *prefix)
{
	const char *got = tls_ask(t, line);

	if (got == NULL || strncmp(got, prefix, strlen(prefix)) != 0)
		fail_msg("%s: expected '%s...', got '%s'", line, prefix,
		    got ? got : "(closed)");
}

/* Moves what OpenSSL wrote to the socket, all in one send(). */
static void
send_pending(BIO *out, int fd)
{
	char buf[16384];
	int n = BIO_read(out, buf, sizeof(buf));

	if (n > 0 && send(fd, buf, (size_t)n, 0) != n)
		fail_msg("send failed");
}

/*
 * A handshake whose last flight leaves in the same packet as the first
 * request (what a client with its own buffering does): the server must
 * know the certificate's principal before it reads that request.
 * Returns the reply to line.
 */
static const char *
eager_first_reply(int port, const char *ca, const char *cert,
    const char *key, const char *line)
{
	static char reply[1024];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	SSL *ssl;
	char buf[16384];
	int fd = tcp_connect(port), rc, tries;
	ssize_t n;
	size_t len = 0;

	assert_int_equal(SSL_CTX_load_verify_locations(ctx, ca, NULL), 1);
	assert_int_equal(SSL_CTX_use_certificate_file(ctx, cert,
	    SSL_FILETYPE_PEM), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(ctx, key,
	    SSL_FILETYPE_PEM), 1);
	ssl = SSL_new(ctx);
	BIO_set_mem_eof_return(in, -1);
	SSL_set_bio(ssl, in, out);
	SSL_set_connect_state(ssl);
	for (tries = 0; (rc = SSL_connect(ssl)) != 1; tries++) {
		if (tries > 20 || SSL_get_error(ssl, rc) != SSL_ERROR_WANT_READ)
			fail_msg("handshake failed");
		send_pending(out, fd);
		if ((n = recv(fd, buf, sizeof(buf), 0)) <= 0)
			fail_msg("closed during the handshake");
		BIO_write(in, buf, (int)n);
	}
	assert_int_equal(SSL_write(ssl, line, (int)strlen(line)),
	    (int)strlen(line));
	send_pending(out, fd);   /* Finished and the request together */
	for (tries = 0; tries < 20 && len == 0; tries++) {
		if ((n = recv(fd, buf, sizeof(buf), 0)) <= 0)
			break;
		BIO_write(in, buf, (int)n);
		while ((rc = SSL_read(ssl, reply + len,
		    (int)(sizeof(reply) - 1 - len))) > 0)
			len += (size_t)rc;
		send_pending(out, fd);
	}
	reply[len] = '\0';
	reply[strcspn(reply, "\r\n")] = '\0';
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return reply;
}

/* True when a client with this certificate cannot get a command
 * through: the handshake fails, or the server closes before replying
 * (TLS 1.3 reports a refused client certificate after the handshake). */
static bool
refused(int port, const char *ca, const char *cert, const char *key,
    int max_version)
{
	struct tls_client t;
	bool no;

	if (!tls_open(&t, port, ca, cert, key, max_version))
		return true;
	no = tls_ask(&t, "PING\n") == NULL;
	tls_close(&t);
	return no;
}

static struct harness_server *
start_tls(const struct certs *c, const char *extra1, const char *extra2,
    const char *extra3, const char *extra4)
{
	return harness_start("--tls-cert", path(c, "server.pem"),
	    "--tls-key", path(c, "server.key"), extra1, extra2, extra3,
	    extra4, NULL);
}

/* ---- tests -------------------------------------------------------------- */

static void
test_tls_client_talks_and_plain_client_is_closed_without_reply(
    void **state)
{
	struct certs c;
	struct harness_server *s;
	struct harness_conn *plain;
	struct tls_client t;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, NULL, NULL, NULL, NULL);
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"), NULL, NULL, 0));
	expect_reply(&t, "PING\n", "PONG");
	expect_reply(&t, "TRY tls/a\n", "GRANTED tls/a fence=1");
	expect_reply(&t, "STATUS tls/a\n", "STATUS tls/a held=1");

	plain = harness_connect(s);
	harness_send(plain, "PING\n");
	harness_expect_eof(plain, HARNESS_REPLY_TIMEOUT_MS);
	assert_true(harness_log_contains(s, "event=tls_handshake_failed"));

	/* The TLS client was not disturbed. */
	expect_reply(&t, "PING\n", "PONG");
	expect_reply(&t, "QUIT\n", "BYE");
	tls_close(&t);
}

static void
test_tls_wrong_ca_and_old_versions_are_refused(void **state)
{
	struct certs c;
	struct harness_server *s;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, NULL, NULL, NULL, NULL);
	/* A client that trusts another CA does not accept the server. */
	assert_true(refused(s->port, path(&c, "otherca.pem"), NULL, NULL, 0));
	/* TLS 1.1 is not offered. */
	assert_true(refused(s->port, path(&c, "ca.pem"), NULL, NULL,
	    TLS1_1_VERSION));
	/* TLS 1.2 and 1.3 both work. */
	assert_false(refused(s->port, path(&c, "ca.pem"), NULL, NULL,
	    TLS1_2_VERSION));
	assert_false(refused(s->port, path(&c, "ca.pem"), NULL, NULL, 0));
}

static void
test_tls_client_ca_refuses_missing_expired_and_foreign_certificates(
    void **state)
{
	struct certs c;
	struct harness_server *s;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, "--tls-client-ca", path(&c, "ca.pem"), NULL, NULL);
	assert_true(refused(s->port, path(&c, "ca.pem"), NULL, NULL, 0));
	assert_true(refused(s->port, path(&c, "ca.pem"),
	    path(&c, "expired.pem"), path(&c, "expired.key"), 0));
	assert_true(refused(s->port, path(&c, "ca.pem"),
	    path(&c, "mallory.pem"), path(&c, "mallory.key"), 0));
	assert_true(refused(s->port, path(&c, "ca.pem"),
	    path(&c, "expired.pem"), path(&c, "expired.key"),
	    TLS1_2_VERSION));
	assert_false(refused(s->port, path(&c, "ca.pem"),
	    path(&c, "alice.pem"), path(&c, "alice.key"), 0));
}

static void
test_tls_client_certificate_cn_is_the_principal(void **state)
{
	struct certs c;
	struct harness_server *s;
	struct tls_client t;

	(void)state;
	make_certs(&c);
	/* sha256("s3cret"): bob's token. */
	write_text(&c, "auth", "alice - lock,read app/\n"
	    "bob 1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
	    " lock bob/\n");
	s = start_tls(&c, "--tls-client-ca", path(&c, "ca.pem"), "--auth",
	    path(&c, "auth"));
	assert_true(strncmp(eager_first_reply(s->port, path(&c, "ca.pem"),
	    path(&c, "alice.pem"), path(&c, "alice.key"), "TRY app/first\n"),
	    "GRANTED app/first fence=1 ", 26) == 0);
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"),
	    path(&c, "alice.pem"), path(&c, "alice.key"), 0));
	/* The very first line after the handshake is already alice's. */
	expect_reply(&t, "TRY app/x\n", "GRANTED app/x");
	expect_reply(&t, "TRY bob/x\n", "ERR DENIED");
	expect_reply(&t, "STATS\n", "ERR DENIED");
	expect_reply(&t, "AUTH s3cret\n", "AUTHED bob");
	expect_reply(&t, "TRY bob/x\n", "GRANTED bob/x");
	expect_reply(&t, "TRY app/y\n", "ERR DENIED");
	tls_close(&t);
}

static void
test_tls_stalled_handshake_is_closed_after_the_timeout(void **state)
{
	struct certs c;
	struct harness_server *s;
	struct harness_conn *stall;
	struct tls_client t;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, "--tls-handshake-timeout", "200ms", NULL, NULL);
	stall = harness_connect(s);
	/* A ClientHello's first bytes, then nothing. */
	harness_send_bytes(stall, "\x16\x03\x01", 3);
	harness_expect_eof(stall, HARNESS_REPLY_TIMEOUT_MS);
	assert_true(harness_log_contains(s, "event=tls_handshake_timeout"));
	/* A finished handshake is not timed. */
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"), NULL, NULL, 0));
	harness_sleep_ms(400);
	expect_reply(&t, "PING\n", "PONG");
	tls_close(&t);
}

static void
test_tls_sighup_loads_a_new_certificate_for_new_connections(void **state)
{
	struct certs c;
	struct harness_server *s;
	struct tls_client old, fresh;
	int64_t deadline;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, NULL, NULL, NULL, NULL);
	assert_true(tls_open(&old, s->port, path(&c, "ca.pem"), NULL, NULL,
	    0));

	/* A broken key: the old certificate stays. */
	write_text(&c, "server.key", "not a key\n");
	kill(s->pid, SIGHUP);
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (!harness_log_contains(s, "event=tls_reload_error") &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_true(harness_log_contains(s, "event=tls_reload_error"));
	assert_false(refused(s->port, path(&c, "ca.pem"), NULL, NULL, 0));

	/* The server's certificate now comes from the other CA. */
	make_cert(&c, "server", "server", "otherca", SERVER_EXT, 2);
	kill(s->pid, SIGHUP);
	deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	while (!harness_log_contains(s, "event=tls_reloaded") &&
	    harness_now_ms() < deadline)
		harness_sleep_ms(10);
	assert_true(harness_log_contains(s, "event=tls_reloaded"));
	/* It names what it loaded. */
	assert_true(harness_log_contains(s, "/server.key client_ca=none"));
	assert_true(tls_open(&fresh, s->port, path(&c, "otherca.pem"), NULL,
	    NULL, 0));
	expect_reply(&fresh, "PING\n", "PONG");
	assert_true(refused(s->port, path(&c, "ca.pem"), NULL, NULL, 0));
	/* The connection made before goes on with its session. */
	expect_reply(&old, "PING\n", "PONG");
	tls_close(&fresh);
	tls_close(&old);
}

static void
test_tls_bad_files_at_start_exit_naming_the_flag(void **state)
{
	struct harness_run_result r;
	struct certs c;

	(void)state;
	make_certs(&c);
	harness_run_lockd(&r, HARNESS_STOP_TIMEOUT_MS, "--listen",
	    "127.0.0.1:0", "--data-dir", path(&c, "data"), "--tls-cert",
	    path(&c, "server.pem"), "--tls-key", path(&c, "alice.key"), NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "--tls-key"));
	harness_run_lockd(&r, HARNESS_STOP_TIMEOUT_MS, "--listen",
	    "127.0.0.1:0", "--data-dir", path(&c, "data"), "--tls-cert",
	    path(&c, "server.pem"), NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "--tls-cert and --tls-key"));
}

static void
test_tls_client_over_max_connections_is_closed_without_plain_text(
    void **state)
{
	struct certs c;
	struct harness_server *s;
	struct harness_conn *raw;
	struct tls_client t, late;

	(void)state;
	make_certs(&c);
	s = start_tls(&c, "--max-connections", "1", NULL, NULL);
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"), NULL, NULL, 0));
	expect_reply(&t, "PING\n", "PONG");
	/* One over the limit: no "ERR LIMIT" in plain text, which a TLS
	 * client would take for a broken record, just the end. */
	raw = harness_connect(s);
	harness_send_bytes(raw, "\x16\x03\x01", 3);
	harness_expect_eof(raw, HARNESS_REPLY_TIMEOUT_MS);
	assert_false(tls_open(&late, s->port, path(&c, "ca.pem"), NULL, NULL,
	    0));
	assert_true(harness_log_contains(s, "kind=connections"));
	expect_reply(&t, "PING\n", "PONG");
	tls_close(&t);
}

static void
test_tls_certificate_cannot_claim_a_unix_uid_principal(void **state)
{
	struct certs c;
	struct harness_server *s;
	struct tls_client t;
	char text[256], cn[32];

	(void)state;
	make_certs(&c);
	snprintf(cn, sizeof(cn), "uid:%u", (unsigned)getuid());
	make_cert(&c, "uidcert", cn, "ca", CLIENT_EXT, 2);
	snprintf(text, sizeof(text), "%s - lock,read app/\n"
	    "alice - lock,read app/\n", cn);
	write_text(&c, "auth", text);
	s = start_tls(&c, "--tls-client-ca", path(&c, "ca.pem"), "--auth",
	    path(&c, "auth"));
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"),
	    path(&c, "uidcert.pem"), path(&c, "uidcert.key"), 0));
	expect_reply(&t, "TRY app/x\n", "ERR DENIED");
	assert_null(tls_ask(&t, "PING\n"));    /* and closed */
	tls_close(&t);
	assert_true(harness_log_contains(s, "event=tls_bad_cn"));
	/* Nothing was taken, and a proper CN still works. */
	assert_true(tls_open(&t, s->port, path(&c, "ca.pem"),
	    path(&c, "alice.pem"), path(&c, "alice.key"), 0));
	expect_reply(&t, "TRY app/x\n", "GRANTED app/x fence=1 ");
	tls_close(&t);
}

/* The metrics port, from the log line "metrics=127.0.0.1:PORT". */
static int
metrics_port(const struct harness_server *s)
{
	char buf[8192];
	const char *p;

	assert_true(harness_read_file(s->log_path, buf, sizeof(buf)));
	p = strstr(buf, "metrics=127.0.0.1:");
	assert_non_null(p);
	return atoi(p + strlen("metrics=127.0.0.1:"));
}

/* GET /metrics over TLS with header (may be ""): the status code, or 0
 * when the handshake or the response failed.  body gets its start. */
static int
scrape(int port, const struct certs *c, const char *cert, const char *key,
    const char *header, char *body, size_t body_size)
{
	struct tls_client t;
	char req[512], resp[65536];
	size_t len = 0;
	int n, code = 0;
	const char *b;

	if (!tls_open(&t, port, path(c, "ca.pem"), cert, key, 0))
		return 0;
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nHost: x\r\n"
	    "%s\r\n", header);
	if (SSL_write(t.ssl, req, (int)strlen(req)) > 0) {
		while (len + 1 < sizeof(resp) && (n = SSL_read(t.ssl,
		    resp + len, (int)(sizeof(resp) - 1 - len))) > 0)
			len += (size_t)n;
	}
	ERR_clear_error();
	resp[len] = '\0';
	tls_close(&t);
	if (sscanf(resp, "HTTP/1.1 %d", &code) != 1)
		return 0;
	b = strstr(resp, "\r\n\r\n");
	snprintf(body, body_size, "%s", b != NULL ? b + 4 : "");
	return code;
}

static void
test_tls_metrics_speak_tls_and_want_an_admin_principal(void **state)
{
	struct certs c;
	struct harness_server *s;
	static const char plain[] = "GET /metrics HTTP/1.1\r\n\r\n";
	char body[4096];
	ssize_t n;
	int port, fd;

	(void)state;
	make_certs(&c);
	make_cert(&c, "scraper", "scraper", "ca", CLIENT_EXT, 2);
	/* sha256("s3cret") for ops, sha256("t0ken") for app. */
	write_text(&c, "auth", "ops "
	    "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
	    " admin ops/\n"
	    "app "
	    "b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"
	    " lock,read app/\n"
	    "scraper - admin ops/\n"
	    "alice - lock app/\n");
	s = harness_start("--tls-cert", path(&c, "server.pem"), "--tls-key",
	    path(&c, "server.key"), "--tls-client-ca", path(&c, "ca.pem"),
	    "--auth", path(&c, "auth"), "--metrics-listen", "127.0.0.1:0",
	    NULL);
	port = metrics_port(s);
	/* alice's certificate gets her through TLS, but she may not STATS. */
	assert_int_equal(scrape(port, &c, path(&c, "alice.pem"),
	    path(&c, "alice.key"), "", body, sizeof(body)), 401);
	assert_non_null(strstr(body, "admin"));
	assert_int_equal(scrape(port, &c, path(&c, "alice.pem"),
	    path(&c, "alice.key"), "Authorization: Bearer t0ken\r\n", body,
	    sizeof(body)), 401);
	assert_int_equal(scrape(port, &c, path(&c, "alice.pem"),
	    path(&c, "alice.key"), "Authorization: Bearer s3creT\r\n", body,
	    sizeof(body)), 401);
	assert_int_equal(scrape(port, &c, path(&c, "alice.pem"),
	    path(&c, "alice.key"), "authorization: bearer s3cret\r\n", body,
	    sizeof(body)), 200);
	assert_non_null(strstr(body, "# HELP lockd_"));
	/* A certificate whose principal has admin needs no token. */
	assert_int_equal(scrape(port, &c, path(&c, "scraper.pem"),
	    path(&c, "scraper.key"), "", body, sizeof(body)), 200);
	/* No client certificate: no handshake, as on the lock port. */
	assert_int_equal(scrape(port, &c, NULL, NULL,
	    "Authorization: Bearer s3cret\r\n", body, sizeof(body)), 0);
	/* Plain HTTP gets no HTTP answer (at most a TLS alert). */
	fd = tcp_connect(port);
	assert_int_equal(send(fd, plain, strlen(plain), 0),
	    (ssize_t)strlen(plain));
	n = recv(fd, body, sizeof(body) - 1, 0);
	assert_true(n <= 0 || strncmp(body, "HTTP", 4) != 0);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_tls_client_talks_and_plain_client_is_closed_without_reply),
		HARNESS_TEST(test_tls_wrong_ca_and_old_versions_are_refused),
		HARNESS_TEST(
		    test_tls_client_ca_refuses_missing_expired_and_foreign_certificates),
		HARNESS_TEST(test_tls_client_certificate_cn_is_the_principal),
		HARNESS_TEST(
		    test_tls_stalled_handshake_is_closed_after_the_timeout),
		HARNESS_TEST(
		    test_tls_sighup_loads_a_new_certificate_for_new_connections),
		HARNESS_TEST(test_tls_bad_files_at_start_exit_naming_the_flag),
		HARNESS_TEST(
		    test_tls_client_over_max_connections_is_closed_without_plain_text),
		HARNESS_TEST(
		    test_tls_certificate_cannot_claim_a_unix_uid_principal),
		HARNESS_TEST(
		    test_tls_metrics_speak_tls_and_want_an_admin_principal),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
