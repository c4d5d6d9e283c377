/*
 * certs.h - certificates for the TLS tests, made with the openssl command
 * in a fresh temporary directory (the harness removes it): a CA, a server
 * certificate for 127.0.0.1 and localhost, client certificates, an expired
 * one and one from a CA that lockd does not trust.  Every failure ends the
 * test with openssl's own message.
 */
#ifndef LOCKD_TESTS_CERTS_H
#define LOCKD_TESTS_CERTS_H

#include "tests/lib/harness.h"

/* The extensions of a server and of a client certificate. */
#define HARNESS_CERTS_SERVER_EXT "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
#define HARNESS_CERTS_CLIENT_EXT "extendedKeyUsage=clientAuth\n"

struct harness_certs {
	char dir[HARNESS_DIR_MAX];
};

/*
 * In a new temporary directory: ca.pem/.key and otherca.pem/.key (CAs),
 * server (by ca, CN server), alice (a client by ca, CN alice), expired (CN
 * alice by ca, ended yesterday) and mallory (CN alice by otherca).
 */
void harness_certs_make(struct harness_certs *c);
/* In a new temporary directory: ca.pem/.key and server.pem/.key (by ca,
 * CN server) alone. */
void harness_certs_make_server(struct harness_certs *c);
/* A self-signed CA NAME.pem and NAME.key. */
void harness_certs_make_ca(const struct harness_certs *c, const char *name);
/* NAME.pem and NAME.key for cn, signed by ca, valid for days (-1:
 * expired), with the extensions ext (one per line). */
void harness_certs_make_cert(const struct harness_certs *c, const char *name,
    const char *cn, const char *ca, const char *ext, int days);
/* Writes text to file in the directory. */
void harness_certs_write(const struct harness_certs *c, const char *file,
    const char *text);
/* The path of file in the directory (one of 8 rotating buffers). */
const char *harness_certs_path(const struct harness_certs *c,
    const char *file);

#endif
