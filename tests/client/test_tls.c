/*
 * test_tls.c - liblockd and lockctl against a real lockd with TLS and
 * --auth: lockds:// URLs, the CA file and the server name checked, a
 * client certificate, a token from the options, from a file (re-read at
 * every reconnect) and from $LOCKD_TOKEN, a refused token, pipelining
 * through TLS records, and the keep-alive helper over TLS.
 *
 * Certificates come from tests/lib/certs.c (the openssl command, in a
 * temp dir): a CA, a server certificate for 127.0.0.1 and localhost, a
 * client certificate, and another CA that signed nothing lockd trusts.
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

#include "client/lockd.h"
#include "client/lockd_uv.h"
#include "tests/lib/certs.h"
#include "tests/lib/harness.h"

#define RUN_TIMEOUT_MS 10000
/* printf '%s' s3cret | sha256sum, and likewise t0ken. */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define HASH_T0KEN \
	"b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"
/* Requests in one pipeline (under the 512 in flight), and a name long
 * enough that their replies fill several 16 KiB TLS records, the last
 * larger than the 4 KiB the client reads at least. */
#define PIPELINED 250

static char dir[HARNESS_PATH_MAX];

static int lockctl(char *out, char *err, const char *first, ...);

static const char *
file(const char *name)
{
	static char p[8][HARNESS_PATH_MAX + 64];
	static int next;
	char *out = p[next++ % 8];

	snprintf(out, sizeof(p[0]), "%s/%s", dir, name);
	return out;
}

static void
write_file(const char *name, const char *text)
{
	FILE *f = fopen(file(name), "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* tests/lib/certs.c's set: ca, otherca, server (127.0.0.1 and
 * localhost), alice (a client) and more; then the auth rules. */
static void
make_certs(void)
{
	struct harness_certs certs;

	harness_certs_make(&certs);
	snprintf(dir, sizeof(dir), "%s", certs.dir);
	write_file("auth", "ops " HASH_S3CRET " lock,read,admin ops/\n"
	    "app " HASH_T0KEN " lock,read app/\n"
	    "alice - lock,read alice/\n");
}

static struct harness_server *
start(bool client_ca)
{
	if (client_ca)
		return harness_start("--tls-cert", file("server.pem"),
		    "--tls-key", file("server.key"), "--tls-client-ca",
		    file("ca.pem"), "--auth", file("auth"), NULL);
	return harness_start("--tls-cert", file("server.pem"), "--tls-key",
	    file("server.key"), "--auth", file("auth"), NULL);
}

static void
url_of(const struct harness_server *s, const char *scheme, const char *host,
    char *url, size_t size)
{
	snprintf(url, size, "%s://%s:%d", scheme, host, s->port);
}

static lockd_options
tls_options(const char *url)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.url = url;
	o.tls_ca_file = file("ca.pem");
	o.connect_timeout_ms = RUN_TIMEOUT_MS;
	o.command_timeout_ms = RUN_TIMEOUT_MS;
	return o;
}

static void
test_client_tls_url_ca_and_token_take_a_lock(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	lockd_lease lease;
	lockd_lock_status st;
	char url[128];

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.token = "s3cret";
	c = lockd_connect(&o);
	assert_non_null(c);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_try(c, "ops/a", 0, LOCKD_ONCLOSE_KEEP, &lease),
	    LOCKD_OK);
	assert_int_equal(lockd_status(c, "ops/a", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	assert_int_equal(lockd_try(c, "app/a", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_ERR_DENIED);
	assert_false(lockd_error_is_fatal(c->err));
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	/* A reconnect authenticates again. */
	assert_int_equal(lockd_reconnect(c), LOCKD_OK);
	assert_int_equal(lockd_try(c, "ops/b", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_OK);
	lockd_free(c);

	/* The host name in the certificate works as well as the address. */
	url_of(s, "lockds", "localhost", url, sizeof(url));
	o = tls_options(url);
	o.token = "t0ken";
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_try(c, "app/x", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_OK);
	lockd_free(c);
}

static void
test_client_tls_refuses_a_server_it_cannot_verify(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	char url[128];

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.tls_ca_file = file("otherca.pem");
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "certificate"));
	lockd_free(c);
	o = tls_options(url);
	o.tls_server_name = "lockd.example.net";
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "hostname mismatch"));
	lockd_free(c);
	/* Plain lockd:// to a TLS port gets nowhere. */
	url_of(s, "lockd", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.tls_ca_file = NULL;
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	assert_true(lockd_error_is_fatal(lockd_ping(c)));
	lockd_free(c);
	/* A URL that does not parse. */
	o.url = "lockd//127.0.0.1";
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_INVALID);
	assert_int_equal(lockd_ping(c), LOCKD_ERR_INVALID);
	assert_non_null(strstr(c->errstr, "bad URL"));
	lockd_free(c);
}

static void
test_client_tls_bad_token_is_denied_and_token_file_is_reread(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	char url[128];

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.token = "s3creT";
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_DENIED);
	assert_non_null(strstr(c->errstr, "AUTH refused"));
	/* Open, but nobody's. */
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	assert_int_equal(lockd_try(c, "ops/a", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_ERR_DENIED);
	lockd_free(c);

	write_file("token", "t0ken\n");
	o = tls_options(url);
	o.token_file = file("token");
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_try(c, "app/t", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_OK);
	/* A rotated file is read at the next connect. */
	write_file("token", "s3cret\n");
	assert_int_equal(lockd_reconnect(c), LOCKD_OK);
	assert_int_equal(lockd_try(c, "ops/t", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_OK);
	lockd_free(c);
}

static void
test_client_tls_client_certificate_is_the_principal(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	char url[128];

	(void)state;
	make_certs();
	s = start(true);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.tls_cert_file = file("alice.pem");
	o.tls_key_file = file("alice.key");
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_try(c, "alice/x", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_OK);
	assert_int_equal(lockd_try(c, "ops/x", 0, LOCKD_ONCLOSE_KEEP, NULL),
	    LOCKD_ERR_DENIED);
	lockd_free(c);
	/* A key without its certificate is the caller's mistake. */
	o.tls_cert_file = NULL;
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_INVALID);
	lockd_free(c);
}

/*
 * Issue 25, item 6: a lockd with --tls-client-ca refuses a client that
 * shows no certificate (TLS 1.3: with an alert on the client's first
 * read, after its handshake); liblockd and lockctl say so, not "read:
 * Protocol error".  With a certificate from a CA lockd does not trust,
 * they say the certificate was refused.
 */
static void
test_client_tls_a_missing_client_certificate_is_named(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	char url[128], out[4096], err[4096];

	(void)state;
	make_certs();
	s = start(true);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.token = "s3cret";
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "requires a client certificate"));
	assert_non_null(strstr(c->errstr, "certificate required"));
	lockd_free(c);
	/* Without a token, the alert comes with the first reply. */
	o.token = NULL;
	c = lockd_connect(&o);
	assert_int_equal(lockd_ping(c), LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "requires a client certificate"));
	lockd_free(c);
	o.tls_cert_file = file("mallory.pem");
	o.tls_key_file = file("mallory.key");
	c = lockd_connect(&o);
	if (c->err == 0)
		assert_int_equal(lockd_ping(c), LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "refused the client certificate"));
	lockd_free(c);
	write_file("token", "s3cret\n");
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "--token-file", file("token"), "try", "ops/c", NULL), 69);
	assert_non_null(strstr(err, "requires a client certificate"));
	assert_null(strstr(err, "Protocol error"));
}

static void
test_client_tls_pipelined_replies_cross_record_boundaries(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	lockd_reply r;
	char url[128], name[256];
	int i;

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.token = "s3cret";
	c = lockd_connect(&o);
	assert_int_equal(c->err, 0);
	for (i = 0; i < PIPELINED; i++) {
		snprintf(name, sizeof(name), "ops/%0200d", i % 7);
		assert_int_equal(lockd_append_status(c, name), LOCKD_OK);
		assert_int_equal(lockd_append_ping(c), LOCKD_OK);
	}
	for (i = 0; i < 2 * PIPELINED; i++) {
		assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
		assert_int_equal(r.command, i % 2 == 0 ? LOCKD_CMD_STATUS :
		    LOCKD_CMD_PING);
	}
	assert_int_equal(lockd_pending(c), 0);
	lockd_free(c);
}

static void
test_client_tls_keepalive_renews_over_tls(void **state)
{
	struct harness_server *s;
	lockd_options o;
	lockd_context *c;
	lockd_keepalive *k;
	lockd_lease lease;
	lockd_lock_status st;
	char url[128];

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	o = tls_options(url);
	o.token = "s3cret";
	c = lockd_connect(&o);
	assert_int_equal(lockd_try(c, "ops/k", 300, LOCKD_ONCLOSE_KEEP,
	    &lease), LOCKD_OK);
	k = lockd_keepalive_start(&o, &lease, NULL, NULL);
	assert_non_null(k);
	harness_sleep_ms(900);
	assert_int_equal(lockd_keepalive_lost(k), 0);
	assert_int_equal(lockd_status(c, "ops/k", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.fence, lease.fence);
	lockd_keepalive_stop(k);
	lockd_free(c);
}

static int
lockctl(char *out, char *err, const char *first, ...)
{
	const char *argv[32];
	const char *arg;
	va_list ap;
	size_t n = 0;

	argv[n++] = harness_program("lockctl");
	va_start(ap, first);
	for (arg = first; arg != NULL && n < 31; arg = va_arg(ap,
	    const char *))
		argv[n++] = arg;
	va_end(ap);
	argv[n] = NULL;
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, out, 4096,
	    err, 4096);
}

static void
test_client_tls_lockctl_takes_url_ca_and_token_from_env_or_file(
    void **state)
{
	struct harness_server *s;
	char url[128], out[4096], err[4096];

	(void)state;
	make_certs();
	s = start(false);
	url_of(s, "lockds", "127.0.0.1", url, sizeof(url));
	setenv("LOCKD_TOKEN", "s3cret", 1);
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "try", "ops/l", NULL), 0);
	assert_non_null(strstr(out, "fence=1 handle="));
	setenv("LOCKD_TOKEN", "wrong", 1);
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "ping", NULL), 70);
	assert_non_null(strstr(err, "AUTH refused"));
	unsetenv("LOCKD_TOKEN");
	/* --token-file wins over nothing, and the token never is argv. */
	write_file("token", "t0ken\n");
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "--token-file", file("token"), "try", "app/l", NULL), 0);
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "try", "app/m", NULL), 70);
	assert_non_null(strstr(err, "DENIED"));
	/* A CA that did not sign the server: unreachable, and why. */
	assert_int_equal(lockctl(out, err, "-H", url, "--ca",
	    file("otherca.pem"), "ping", NULL), 69);
	assert_non_null(strstr(err, "certificate"));
	assert_int_equal(lockctl(out, err, "-H", "lockdz://x", "ping", NULL),
	    64);
	assert_int_equal(lockctl(out, err, "-H", url, "-p", "1", "ping",
	    NULL), 64);
	/* run holds the lock over TLS while the command runs. */
	write_file("token", "s3cret\n");
	assert_int_equal(lockctl(out, err, "-H", url, "--ca", file("ca.pem"),
	    "--token-file", file("token"), "run", "-l", "300ms", "ops/run",
	    "--", "/bin/sh", "-c", "sleep 0.5; echo ran", NULL), 0);
	assert_non_null(strstr(out, "ran"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_client_tls_url_ca_and_token_take_a_lock),
		HARNESS_TEST(test_client_tls_refuses_a_server_it_cannot_verify),
		HARNESS_TEST(
		    test_client_tls_bad_token_is_denied_and_token_file_is_reread),
		HARNESS_TEST(
		    test_client_tls_client_certificate_is_the_principal),
		HARNESS_TEST(
		    test_client_tls_a_missing_client_certificate_is_named),
		HARNESS_TEST(
		    test_client_tls_pipelined_replies_cross_record_boundaries),
		HARNESS_TEST(test_client_tls_keepalive_renews_over_tls),
		HARNESS_TEST(
		    test_client_tls_lockctl_takes_url_ca_and_token_from_env_or_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
