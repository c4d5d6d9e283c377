/*
 * test_etcd_security.c - the pure parts of lockd's secured connection to
 * etcd (daemon/etcd.c): reading the password file (etcd_password_read)
 * and checking --etcd's URL schemes (etcd_urls_check), and the settings
 * they stop in config_load.  No etcd runs here: test_cluster_security
 * covers the rest against a real one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"
#include "daemon/etcd.h"

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/lockd-etcdsec-XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	char path[128];
	static const char *const names[] = { "pw", "long", "none" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

/* Writes len bytes to dir/name; returns the path (static). */
static const char *
file_of(const char *name, const char *data, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

static int
read_password(const char *data, size_t len, char *out, size_t cap,
    char *err, size_t err_len)
{
	return etcd_password_read(file_of("pw", data, len), out, cap, err,
	    err_len);
}

static void
test_etcd_password_read_drops_one_trailing_newline(void **state)
{
	char out[ETCD_PASSWORD_MAX], err[256];

	(void)state;
	assert_int_equal(read_password("s3cret\n", 7, out, sizeof(out), err,
	    sizeof(err)), 0);
	assert_string_equal(out, "s3cret");
	assert_int_equal(read_password("s3cret\r\n", 8, out, sizeof(out),
	    err, sizeof(err)), 0);
	assert_string_equal(out, "s3cret");
	/* Without a newline (systemd's credentials, printf '%s'). */
	assert_int_equal(read_password("s3cret", 6, out, sizeof(out), err,
	    sizeof(err)), 0);
	assert_string_equal(out, "s3cret");
	/* Blanks are the password's own. */
	assert_int_equal(read_password(" a b \n", 6, out, sizeof(out), err,
	    sizeof(err)), 0);
	assert_string_equal(out, " a b ");
}

static void
test_etcd_password_read_refuses_an_empty_file(void **state)
{
	char out[ETCD_PASSWORD_MAX], err[256];

	(void)state;
	assert_int_equal(read_password("", 0, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "is empty"));
	assert_int_equal(read_password("\n", 1, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "is empty"));
}

static void
test_etcd_password_read_refuses_more_than_one_line(void **state)
{
	char out[ETCD_PASSWORD_MAX], err[256];

	(void)state;
	assert_int_equal(read_password("a\nb\n", 4, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "more than one line"));
	assert_int_equal(read_password("a\n\n", 3, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_int_equal(read_password("a\0b", 3, out, sizeof(out), err,
	    sizeof(err)), -1);
}

static void
test_etcd_password_read_refuses_a_too_long_file(void **state)
{
	char data[ETCD_PASSWORD_MAX + 10], out[ETCD_PASSWORD_MAX], err[256];

	(void)state;
	memset(data, 'x', sizeof(data));
	assert_int_equal(read_password(data, ETCD_PASSWORD_MAX - 1, out,
	    sizeof(out), err, sizeof(err)), 0);
	assert_int_equal(strlen(out), ETCD_PASSWORD_MAX - 1);
	assert_int_equal(read_password(data, ETCD_PASSWORD_MAX, out,
	    sizeof(out), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than"));
	assert_int_equal(read_password(data, sizeof(data), out, sizeof(out),
	    err, sizeof(err)), -1);
}

static void
test_etcd_password_read_refuses_an_unreadable_file(void **state)
{
	char out[ETCD_PASSWORD_MAX], err[256], path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(etcd_password_read(path, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read"));
	assert_non_null(strstr(err, path));
	/* A directory reads as an error too. */
	assert_int_equal(etcd_password_read(dir, out, sizeof(out), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read"));
}

static void
test_etcd_urls_check_takes_one_scheme(void **state)
{
	char err[256];
	bool tls = true;

	(void)state;
	assert_int_equal(etcd_urls_check("http://a:2379,http://b:2379", &tls,
	    err, sizeof(err)), 0);
	assert_false(tls);
	assert_int_equal(etcd_urls_check("https://a:2379,https://b:2379/",
	    &tls, err, sizeof(err)), 0);
	assert_true(tls);
	assert_int_equal(etcd_urls_check("https://a:2379,http://b:2379",
	    &tls, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "a mix of http:// and https://"));
	assert_int_equal(etcd_urls_check("http://a:2379,https://b:2379",
	    &tls, err, sizeof(err)), -1);
}

static void
test_etcd_urls_check_refuses_what_is_not_a_url(void **state)
{
	char err[256];
	bool tls;

	(void)state;
	assert_int_equal(etcd_urls_check("", &tls, err, sizeof(err)), -1);
	assert_int_equal(etcd_urls_check("a:2379", &tls, err, sizeof(err)),
	    -1);
	assert_int_equal(etcd_urls_check("https://", &tls, err, sizeof(err)),
	    -1);
	assert_int_equal(etcd_urls_check("ftp://a", &tls, err, sizeof(err)),
	    -1);
	assert_int_equal(etcd_urls_check("http://a,,http://b", &tls, err,
	    sizeof(err)), -1);
	assert_int_equal(etcd_urls_check("HTTPS://a", &tls, err,
	    sizeof(err)), -1);
}

/*
 * config_load over "lockd --listen none --unix P" and the arguments given
 * (NULL-terminated).  Without --listen none, config_load would bind the
 * default 127.0.0.1:7420 to check it, and fail where a lockd serves there.
 */
static enum config_result
load(char *err, size_t err_len, ...)
{
	static struct config cfg;
	char *argv[32] = { "lockd", "--listen", "none", "--unix",
	    "/nonexistent/lockd.sock" };
	int argc = 5;
	va_list ap;

	va_start(ap, err_len);
	while (argc < 31 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	return config_load(&cfg, argc, argv, err, err_len);
}

static void
test_etcd_security_settings_go_together(void **state)
{
	char err[512];

	(void)state;
	assert_int_equal(load(err, sizeof(err), "--etcd", "https://a:1",
	    "--etcd-ca", "ca.crt", "--etcd-cert", "c.crt", "--etcd-key",
	    "c.key", "--etcd-user", "u", "--etcd-password-file", "pw", NULL),
	    CONFIG_OK);
	assert_int_equal(load(err, sizeof(err), "--etcd", "http://a:1",
	    "--etcd-ca", "ca.crt", NULL), CONFIG_ERROR);
	assert_non_null(strstr(err, "need https://"));
	assert_int_equal(load(err, sizeof(err), "--etcd", "https://a:1",
	    "--etcd-cert", "c.crt", NULL), CONFIG_ERROR);
	assert_non_null(strstr(err, "--etcd-cert and --etcd-key"));
	assert_int_equal(load(err, sizeof(err), "--etcd", "https://a:1",
	    "--etcd-user", "u", NULL), CONFIG_ERROR);
	assert_non_null(strstr(err, "--etcd-password-file"));
	assert_int_equal(load(err, sizeof(err), "--etcd-user", "u",
	    "--etcd-password-file", "pw", NULL), CONFIG_ERROR);
	assert_non_null(strstr(err, "need --etcd"));
	assert_int_equal(load(err, sizeof(err), "--etcd",
	    "https://a:1,http://b:1", NULL), CONFIG_ERROR);
	assert_non_null(strstr(err, "a mix"));
	/* No flag takes the password itself. */
	assert_int_equal(load(err, sizeof(err), "--etcd", "https://a:1",
	    "--etcd-password", "x", NULL), CONFIG_ERROR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_etcd_password_read_drops_one_trailing_newline),
		cmocka_unit_test(test_etcd_password_read_refuses_an_empty_file),
		cmocka_unit_test(
		    test_etcd_password_read_refuses_more_than_one_line),
		cmocka_unit_test(
		    test_etcd_password_read_refuses_a_too_long_file),
		cmocka_unit_test(
		    test_etcd_password_read_refuses_an_unreadable_file),
		cmocka_unit_test(test_etcd_urls_check_takes_one_scheme),
		cmocka_unit_test(test_etcd_urls_check_refuses_what_is_not_a_url),
		cmocka_unit_test(test_etcd_security_settings_go_together),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
