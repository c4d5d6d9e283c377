/*
 * fuzz_tls.c - libFuzzer target for TLS connections: a real TLS 1.3 (or
 * 1.2) handshake between two tls_pipes (proto/tls_pipe.c), a client as
 * liblockd's libuv client has and a server as the daemon's connections
 * have, then the input as the client's plaintext, encrypted and handed to
 * the server in pieces of fuzzed sizes, decrypted by tls_pipe_read into
 * service_conn_feed (with --auth on, so AUTH and ERR DENIED are on the
 * path), and the service's replies sent back through tls_pipe_write and
 * decrypted by the client.  It checks that the client
 * decrypts every byte the server sent and that those bytes are reply lines
 * proto_parse_reply accepts, and that the server hands on exactly the
 * client's plaintext; when the input asks for it, one ciphertext byte is
 * corrupted, and the server must never hand on an altered byte.
 *
 * The input: byte 0 picks the TLS version (bit 0), whether to corrupt
 * (bit 1), and where (the next byte); byte 1 seeds the piece sizes; the
 * rest is plaintext.  The key and certificate are made once, in memory;
 * nothing here opens a file or a socket but /dev/null for the log.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "daemon/log.h"
#include "daemon/service.h"
#include "daemon/tls.h"
#include "proto/proto.h"
#include "tests/lib/store_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define FUZZ_PLAIN_MAX 65536
#define FUZZ_HANDSHAKE_ROUNDS 16

static SSL_CTX *server_ctx, *client_ctx;
static FILE *null_log;
static struct auth_rules rules;
static core_time now_ms = 1000000;

static core_time
fuzz_mono(void *ctx)
{
	(void)ctx;
	return now_ms;
}

static int64_t
fuzz_wall(void *ctx)
{
	(void)ctx;
	return 1700000000000LL + now_ms;
}

static uint64_t
fuzz_secret(void *ctx)
{
	static uint64_t n = 0x9e3779b97f4a7c15ULL;

	(void)ctx;
	n = n * 6364136223846793005ULL + 1442695040888963407ULL;
	return n;
}

/* A self-signed P-256 certificate and its key, made once. */
static void
init_once(void)
{
	static const char text[] =
	    /* sha256("a"): the token "a" is p1, who may lock and read
	     * under "lock/". */
	    "p1 ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
	    " lock,read,admin lock/\n";
	EVP_PKEY *key;
	X509 *cert;

	if (server_ctx != NULL)
		return;
	/* The daemon logs to stderr; not while fuzzing. */
	if ((null_log = fopen("/dev/null", "w")) != NULL)
		stderr = null_log;
	key = EVP_EC_gen("P-256");
	cert = X509_new();
	FUZZ_CHECK(key != NULL && cert != NULL);
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600 * 24);
	X509_set_pubkey(cert, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN",
	    MBSTRING_ASC, (const unsigned char *)"lockd", -1, -1, 0);
	X509_set_issuer_name(cert, X509_get_subject_name(cert));
	FUZZ_CHECK(X509_sign(cert, key, EVP_sha256()) > 0);
	server_ctx = SSL_CTX_new(TLS_server_method());
	FUZZ_CHECK(server_ctx != NULL);
	SSL_CTX_set_min_proto_version(server_ctx, TLS1_2_VERSION);
	FUZZ_CHECK(SSL_CTX_use_certificate(server_ctx, cert) == 1);
	FUZZ_CHECK(SSL_CTX_use_PrivateKey(server_ctx, key) == 1);
	client_ctx = SSL_CTX_new(TLS_client_method());
	FUZZ_CHECK(client_ctx != NULL);
	/* The client trusts nothing: verification is not what is fuzzed. */
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
	FUZZ_CHECK(auth_rules_parse(&rules, text, strlen(text), NULL, 0) ==
	    0);
	X509_free(cert);
	EVP_PKEY_free(key);
}

/* Moves what the client wrote to the server, in pieces, stepping the
 * server's handshake after each; -1 when the server failed. */
static int
client_to_server(struct tls_pipe *client, struct tls_pipe *t,
    uint8_t *seed, int corrupt_at)
{
	char buf[4096];
	size_t n, off, piece;
	int rc = 0;

	while ((n = tls_pipe_take(client, buf, sizeof(buf))) > 0) {
		if (corrupt_at >= 0 && (size_t)corrupt_at < n)
			buf[corrupt_at] ^= 0x5a;
		corrupt_at = corrupt_at >= 0 ? corrupt_at - (int)n : -1;
		for (off = 0; off < n; off += piece) {
			*seed = (uint8_t)(*seed * 73 + 41);
			piece = 1 + *seed % 97;
			if (piece > n - off)
				piece = n - off;
			if (tls_pipe_put(t, buf + off, piece) < 0 ||
			    tls_pipe_handshake(t) < 0)
				rc = -1;
		}
	}
	return rc;
}

static void
server_to_client(struct tls_pipe *t, struct tls_pipe *client)
{
	char buf[4096];
	size_t n;

	while ((n = tls_pipe_take(t, buf, sizeof(buf))) > 0)
		FUZZ_CHECK(tls_pipe_put(client, buf, n) == 0);
}

struct feed_ctx {
	struct service *svc;
	struct service_conn *conn;
	const uint8_t *sent;         /* the client's plaintext */
	size_t sent_len, got;        /* and how much of it arrived */
};

static void
on_plain(void *ctx, const char *p, size_t n)
{
	struct feed_ctx *f = ctx;

	/* What the server decrypts is what the client sent, in order:
	 * never an altered byte, whatever was done to the records. */
	FUZZ_CHECK(n <= f->sent_len - f->got &&
	    memcmp(p, f->sent + f->got, n) == 0);
	f->got += n;

	if (!f->conn->quit && !f->conn->overflow)
		service_conn_feed(f->svc, f->conn, p, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char reply[FUZZ_PLAIN_MAX * 4];
	struct service_config cfg;
	struct service_clock clock;
	struct store_mem mem;
	struct service svc;
	struct service_conn conn;
	static char plain[16384];
	struct tls_pipe t, client;
	struct feed_ctx f;
	uint8_t seed;
	size_t len = 0, used, pos;
	int i, n, corrupt_at = -1, failed;

	if (size < 2)
		return 0;
	init_once();
	seed = data[1];
	if (data[0] & 2)
		corrupt_at = size > 2 ? data[2] : 0;

	/* The handshake, over memory. */
	FUZZ_CHECK(tls_pipe_init(&t, server_ctx, TLS_PIPE_SERVER) == 0);
	FUZZ_CHECK(tls_pipe_init(&client, client_ctx, TLS_PIPE_CLIENT) == 0);
	if (data[0] & 1)
		SSL_set_max_proto_version(client.ssl, TLS1_2_VERSION);
	for (i = 0; i < FUZZ_HANDSHAKE_ROUNDS && !t.ready; i++) {
		FUZZ_CHECK(tls_pipe_handshake(&client) >= 0);
		FUZZ_CHECK(client_to_server(&client, &t, &seed, -1) == 0);
		server_to_client(&t, &client);
	}
	FUZZ_CHECK(t.ready);
	FUZZ_CHECK(tls_pipe_handshake(&client) == 1);

	service_config_defaults(&cfg);
	cfg.core.secret = fuzz_secret;
	cfg.max_output = (size_t)1 << 20;
	memset(&clock, 0, sizeof(clock));
	clock.mono = fuzz_mono;
	clock.wall = fuzz_wall;
	memcpy(clock.boot_id, "fuzz-tls-boot-01", 16);
	store_mem_init(&mem);
	memset(&svc, 0, sizeof(svc));   /* svc.cluster outlives service_open */
	FUZZ_CHECK(service_open(&svc, &cfg, &mem.base, &clock, NULL) == 0);
	svc.auth = &rules;
	service_conn_open(&svc, &conn);
	f.svc = &svc;
	f.conn = &conn;
	f.sent = data + 2;
	f.sent_len = size - 2 > FUZZ_PLAIN_MAX ? FUZZ_PLAIN_MAX : size - 2;
	f.got = 0;

	/* The input, as the client's plaintext. */
	if (size > 2)
		FUZZ_CHECK(tls_pipe_write(&client, (const char *)data + 2,
		    f.sent_len) == 0);
	failed = client_to_server(&client, &t, &seed, corrupt_at);
	while (failed == 0 && (n = tls_pipe_read(&t, plain, sizeof(plain))) >
	    0)
		on_plain(&f, plain, (size_t)n);
	if (t.failed)
		failed = -1;
	/* Untouched, every byte arrives; altered, on_plain has checked
	 * that nothing altered did (a changed record fails, or waits for
	 * bytes that never come when its length was changed). */
	if (corrupt_at < 0)
		FUZZ_CHECK(failed == 0 && f.got == f.sent_len);
	service_end_pass(&svc);
	while (service_next_ready(&svc) != NULL)
		;
	if (failed == 0 && conn.out.len > 0) {
		FUZZ_CHECK(tls_pipe_write(&t, conn.out.data, conn.out.len) ==
		    0);
		service_conn_written(&conn, conn.out.len);
	}
	if (failed == 0) {
		tls_pipe_shutdown(&t);
		server_to_client(&t, &client);
		while (len < sizeof(reply) && (n = tls_pipe_read(&client,
		    reply + len, sizeof(reply) - len)) > 0)
			len += (size_t)n;
		/* The server's close_notify ends the client's reading. */
		FUZZ_CHECK(len == sizeof(reply) || (client.failed &&
		    client.ssl_error == SSL_ERROR_ZERO_RETURN));
		/* Every reply the client decrypts is a whole reply line. */
		for (pos = 0; pos < len; pos += used) {
			struct proto_reply r;
			struct proto_error err;
			FUZZ_CHECK(proto_parse_reply(reply + pos, len - pos,
			    sizeof(reply), &r, &used, &err) == PROTO_DONE);
		}
	}
	service_conn_close(&svc, &conn);
	service_close(&svc);
	store_mem_free(&mem);
	tls_pipe_free(&t);
	tls_pipe_free(&client);
	ERR_clear_error();
	return 0;
}
