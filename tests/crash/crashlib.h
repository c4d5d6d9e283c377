/*
 * crashlib.h - small helpers shared by the crash test programs: which lockd
 * the integration harness starts next (the real one, or lockd-faulty with a
 * fault), where the test binaries live, run options, process state.
 * The harness (tests/lib/harness.h) starts, kills and restarts the
 * servers; these helpers only choose what it runs.
 */
#ifndef LOCKD_TESTS_CRASH_CRASHLIB_H
#define LOCKD_TESTS_CRASH_CRASHLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Takes LOCKD_BIN (build/lockd when unset) and, from the directory of
 * this program, lockd-faulty and the shim, and copies the three to a
 * private directory that the run uses from then on (removed at exit): a
 * rebuild of build/ during a long run cannot break it.  Call first in
 * main(). */
void crash_init(const char *argv0);

/* The next harness start runs the real lockd. */
void crash_use_lockd(void);
/* The next harness start runs lockd-faulty with LOCKD_FAULT=fault. */
void crash_use_faulty(const char *fault);
/* Path of lockd-faulty or the shim (in the private copy). */
const char *crash_sibling(const char *name);

/* True when pid is alive and not a zombie (it has not exited). */
bool crash_alive(pid_t pid);

/* Empties a server log that grew past `max` bytes (a long run restarts
 * lockd a thousand times on the same log). */
void crash_trim_log(const char *path, long max);

/*
 * Parses "--seed N", "--cycles N", "--images N" and "--seconds N" from
 * argv, removing
 * them; a value not given keeps the default.  The seed defaults to a
 * fresh one, printed by the tests so that a run can be repeated.
 */
struct crash_args {
	uint64_t seed;
	long cycles;
	long images;
	long seconds;
	bool seed_given;
};
void crash_parse_args(int *argc, char **argv, struct crash_args *args);

#endif
