/*
 * certs.c - the TLS tests' certificates (certs.h), by the openssl command.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "tests/lib/certs.h"

#define OPENSSL_BIN "/usr/bin/openssl"
#define OPENSSL_TIMEOUT_MS 30000
#define EC "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

static void
openssl(const struct harness_certs *c, const char *args)
{
	char cmd[2048], out[512], err[2048];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	snprintf(cmd, sizeof(cmd), "cd %s && " OPENSSL_BIN " %s", c->dir,
	    args);
	if (harness_run(argv, OPENSSL_TIMEOUT_MS, out, sizeof(out), err,
	    sizeof(err)) != 0)
		fail_msg("openssl %s failed: %s", args, err);
}

void
harness_certs_write(const struct harness_certs *c, const char *file,
    const char *text)
{
	const char *p = harness_certs_path(c, file);
	FILE *f;

	if ((f = fopen(p, "w")) == NULL)
		fail_msg("cannot write %s", p);
	fputs(text, f);
	fclose(f);
}

void
harness_certs_make_cert(const struct harness_certs *c, const char *name,
    const char *cn, const char *ca, const char *ext, int days)
{
	char args[1024];

	harness_certs_write(c, "ext", ext);
	snprintf(args, sizeof(args), "req " EC " -keyout %s.key -out %s.csr "
	    "-subj /CN=%s", name, name, cn);
	openssl(c, args);
	snprintf(args, sizeof(args), "x509 -req -in %s.csr -CA %s.pem "
	    "-CAkey %s.key -CAcreateserial -out %s.pem -days %d "
	    "-extfile ext", name, ca, ca, name, days);
	openssl(c, args);
}

void
harness_certs_make_ca(const struct harness_certs *c, const char *name)
{
	char args[512];

	snprintf(args, sizeof(args), "req -x509 " EC " -keyout %s.key "
	    "-out %s.pem -days 2 -subj /CN=%s", name, name, name);
	openssl(c, args);
}

void
harness_certs_make(struct harness_certs *c)
{
	snprintf(c->dir, sizeof(c->dir), "%s", harness_tempdir());
	harness_certs_make_ca(c, "ca");
	harness_certs_make_ca(c, "otherca");
	harness_certs_make_cert(c, "server", "server", "ca",
	    HARNESS_CERTS_SERVER_EXT, 2);
	harness_certs_make_cert(c, "alice", "alice", "ca",
	    HARNESS_CERTS_CLIENT_EXT, 2);
	harness_certs_make_cert(c, "expired", "alice", "ca",
	    HARNESS_CERTS_CLIENT_EXT, -1);
	harness_certs_make_cert(c, "mallory", "alice", "otherca",
	    HARNESS_CERTS_CLIENT_EXT, 2);
}

void
harness_certs_make_server(struct harness_certs *c)
{
	snprintf(c->dir, sizeof(c->dir), "%s", harness_tempdir());
	harness_certs_make_ca(c, "ca");
	harness_certs_make_cert(c, "server", "server", "ca",
	    HARNESS_CERTS_SERVER_EXT, 2);
}

const char *
harness_certs_path(const struct harness_certs *c, const char *file)
{
	static char p[8][HARNESS_PATH_MAX];
	static int next;
	char *out = p[next++ % 8];

	snprintf(out, HARNESS_PATH_MAX, "%s/%s", c->dir, file);
	return out;
}
