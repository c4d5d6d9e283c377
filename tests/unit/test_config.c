/*
 * test_config.c - lockd's settings (daemon/config.c) where a test of the
 * running daemon would be slow: --leader-lease, which etcd takes in whole
 * seconds of at least 2, from a flag and from the config file; the
 * defaults as --print-defaults writes them, read back; --default-lease
 * when not given.
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

#include "daemon/config.h"

static struct config cfg;
static char err[512];

/* config_load over "lockd --listen none --unix P" and the extra flags. */
static enum config_result
load(const char *a, const char *b)
{
	char *argv[8] = { "lockd", "--listen", "none", "--unix",
	    "/nonexistent/lockd.sock", NULL, NULL, NULL };
	int argc = 5;

	if (a != NULL)
		argv[argc++] = (char *)a;
	if (b != NULL)
		argv[argc++] = (char *)b;
	err[0] = '\0';
	return config_load(&cfg, argc, argv, err, sizeof(err));
}

static void
test_config_leader_lease_defaults_to_three_seconds(void **state)
{
	(void)state;
	assert_int_equal(load(NULL, NULL), CONFIG_OK);
	assert_int_equal(cfg.leader_lease_ms, 3000);
}

static void
test_config_leader_lease_takes_whole_seconds_from_two(void **state)
{
	(void)state;
	assert_int_equal(load("--leader-lease", "2s"), CONFIG_OK);
	assert_int_equal(cfg.leader_lease_ms, 2000);
	assert_int_equal(load("--leader-lease=10000", NULL), CONFIG_OK);
	assert_int_equal(cfg.leader_lease_ms, 10000);
	assert_int_equal(load("--leader-lease", "1h"), CONFIG_OK);
	assert_int_equal(cfg.leader_lease_ms, 3600 * 1000);
}

static void
test_config_leader_lease_refuses_what_etcd_cannot_keep(void **state)
{
	static const char *const bad[] = { "1s", "1999ms", "2500ms", "0",
	    "3601s", "2h" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(load("--leader-lease", bad[i]), CONFIG_ERROR);
		if (strstr(err, "--leader-lease must be whole seconds from 2s "
		    "to 1h") == NULL)
			fail_msg("--leader-lease %s: \"%s\"", bad[i], err);
	}
	assert_int_equal(load("--leader-lease", "soon"), CONFIG_ERROR);
	assert_string_equal(err, "--leader-lease: bad duration 'soon'");
}

static void
test_config_leader_lease_from_the_file_names_its_line(void **state)
{
	char path[] = "/tmp/lockd-config-XXXXXX";
	int fd = mkstemp(path);
	char arg[64];
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "# a node\nleader-lease = 5s\n");
	fclose(f);
	snprintf(arg, sizeof(arg), "--config=%s", path);
	assert_int_equal(load(arg, NULL), CONFIG_OK);
	assert_int_equal(cfg.leader_lease_ms, 5000);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "leader-lease = 1500ms\n");
	fclose(f);
	assert_int_equal(load(arg, NULL), CONFIG_ERROR);
	unlink(path);
	if (strstr(err, ":1: leader-lease must be whole seconds") == NULL)
		fail_msg("from the file: \"%s\"", err);
}

/*
 * What --print-defaults writes is a config file that sets every setting to
 * what lockd uses when none is given: each default is printed from the
 * table in a form its own parser reads back to the same value.
 */
static void
test_config_print_defaults_reads_back_as_the_defaults(void **state)
{
	char path[] = "/tmp/lockd-defaults-XXXXXX", arg[64];
	struct config plain;
	enum config_result r;
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO);

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	fflush(stdout);
	assert_true(dup2(fd, STDOUT_FILENO) >= 0);
	r = load("--print-defaults", NULL);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	assert_int_equal(r, CONFIG_EXIT_OK);
	assert_int_equal(load(NULL, NULL), CONFIG_OK);
	memcpy(&plain, &cfg, sizeof(plain));
	snprintf(arg, sizeof(arg), "--config=%s", path);
	r = load(arg, NULL);
	unlink(path);
	if (r != CONFIG_OK)
		fail_msg("--print-defaults as --config: %s", err);
	assert_string_equal(cfg.config_file, path);
	memcpy(cfg.config_file, plain.config_file, sizeof(cfg.config_file));
	assert_memory_equal(&cfg, &plain, sizeof(cfg));
	assert_int_equal(plain.map_size, (size_t)8 << 30);
	assert_int_equal(plain.default_lease_ms, 30000);
}

/* Not given (or 0), --default-lease is 30 s capped to --max-lease; given,
 * it must fit under it. */
static void
test_config_default_lease_not_given_is_capped_to_max_lease(void **state)
{
	(void)state;
	assert_int_equal(load("--max-lease", "10s"), CONFIG_OK);
	assert_int_equal(cfg.default_lease_ms, 10000);
	assert_int_equal(load("--default-lease", "0"), CONFIG_OK);
	assert_int_equal(cfg.default_lease_ms, 30000);
	assert_int_equal(load("--default-lease", "1m"), CONFIG_OK);
	assert_int_equal(cfg.default_lease_ms, 60000);
	assert_int_equal(load("--default-lease", "6m"), CONFIG_ERROR);
	assert_string_equal(err, "--default-lease must be at most --max-lease");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_config_leader_lease_defaults_to_three_seconds),
		cmocka_unit_test(
		    test_config_leader_lease_takes_whole_seconds_from_two),
		cmocka_unit_test(
		    test_config_leader_lease_refuses_what_etcd_cannot_keep),
		cmocka_unit_test(
		    test_config_leader_lease_from_the_file_names_its_line),
		cmocka_unit_test(
		    test_config_print_defaults_reads_back_as_the_defaults),
		cmocka_unit_test(
		    test_config_default_lease_not_given_is_capped_to_max_lease),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
