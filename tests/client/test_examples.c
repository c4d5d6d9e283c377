/*
 * test_examples.c - runs the programs in examples/, built through
 * pkg-config against liblockd.so as a user's program would be, against a
 * real lockd, and checks that each tells the story it is there to tell.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

#define RUN_TIMEOUT_MS 15000

static char out[8192], err[4096];

static int
run_example(const char *name, const char *extra)
{
	char program[64];
	const char *argv[] = { NULL, "127.0.0.1", harness_shared_port, extra, NULL };

	snprintf(program, sizeof(program), "examples/%s", name);
	argv[0] = harness_program(program);
	return harness_run((char *const *)argv, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err));
}

static void
test_examples_fenced_write_rejects_the_stale_writer(void **state)
{
	(void)state;
	assert_int_equal(run_example("fenced_write", NULL), 0);
	assert_non_null(strstr(out, "store: wrote \"B's write\""));
	assert_non_null(strstr(out, "REJECTED \"A's stale write\""));
	assert_non_null(strstr(out, "CONFLICT"));
	assert_string_equal(err, "");
}

static void
test_examples_singleton_runs_once_at_a_time(void **state)
{
	char first_out[256], path[HARNESS_PATH_MAX], dir[HARNESS_PATH_MAX];
	const char *argv[] = { harness_program("examples/singleton"),
	    "127.0.0.1", harness_shared_port, "2", NULL };
	pid_t first;

	(void)state;
	snprintf(dir, sizeof(dir), "%s", harness_tempdir());
	snprintf(path, sizeof(path), "%.400s/out", dir);
	/* Two seconds of work on a one-second lease: renewed meanwhile. */
	first = harness_spawn((char *const *)argv, path, NULL);
	assert_true(harness_wait_for_file(path, RUN_TIMEOUT_MS));
	assert_int_equal(run_example("singleton", "1"), 0);
	assert_string_equal(out, "skipped: another instance is running\n");
	assert_int_equal(harness_wait(first, RUN_TIMEOUT_MS), 0);
	assert_true(harness_read_file(path, first_out, sizeof(first_out)));
	assert_non_null(strstr(first_out, "running with fence"));
	assert_non_null(strstr(first_out, "done\n"));
	harness_remove_tree(dir);
	/* Free again: the next run works. */
	assert_int_equal(run_example("singleton", "0"), 0);
	assert_non_null(strstr(out, "done\n"));
}

static void
test_examples_fifo_queue_grants_in_order_with_rising_fences(void **state)
{
	(void)state;
	assert_int_equal(run_example("fifo_queue", "6"), 0);
	assert_non_null(strstr(out, "child 5 granted fence"));
	assert_non_null(strstr(out, "FIFO order and increasing fences: ok"));
}

static void
test_examples_uv_locks_keeps_many_locks_on_a_libuv_loop(void **state)
{
	/* 200 locks on a 1 s lease for 2 s: renewed twice on the loop. */
	const char *argv[] = { harness_program("examples/uv_locks"),
	    "127.0.0.1", harness_shared_port, "200", "2", NULL };

	(void)state;

	assert_int_equal(harness_run((char *const *)argv, RUN_TIMEOUT_MS, out,
	    sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "held 200 locks, 0 busy\n"
	    "kept 200 locks for 2 s, 0 lost\nreleased 200\n");
	assert_string_equal(err, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_examples_fenced_write_rejects_the_stale_writer),
		cmocka_unit_test(test_examples_singleton_runs_once_at_a_time),
		cmocka_unit_test(
		    test_examples_fifo_queue_grants_in_order_with_rising_fences),
		cmocka_unit_test(
		    test_examples_uv_locks_keeps_many_locks_on_a_libuv_loop),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, harness_shared_setup,
	    harness_shared_teardown);
}
