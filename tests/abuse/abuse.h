/*
 * abuse.h - helpers of the abuse tests (tests/abuse/test_*.c): thousands of
 * raw connections at once (the integration harness keeps at most 256), the
 * file descriptor limit, lockd's memory as /proc shows it, a seeded PRNG.
 * Like the harness, nothing here links or includes daemon/: lockd is
 * tested from the outside, through tests/lib/harness.h.
 *
 * Every wait is bounded; every socket opened here is registered and closed
 * by abuse_teardown(), also after a failed check.
 */
#ifndef LOCKD_TESTS_ABUSE_H
#define LOCKD_TESTS_ABUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/lib/rng.h"

/* cmocka fixture: the harness's teardown, after closing every swarm. */
int abuse_teardown(void **state);
#define ABUSE_TEST(f) cmocka_unit_test_setup_teardown(f, harness_setup, \
	abuse_teardown)

/* ABUSE_SCALE in the environment (default 1): `make soak-abuse` sets 4. */
int abuse_scale(void);

/* Raises the soft RLIMIT_NOFILE to want (at most the hard limit) for this
 * process and the lockd it starts; returns the soft limit now in force. */
long abuse_raise_fd_limit(long want);

/* A field of /proc/PID/status in KiB ("VmRSS", "RssAnon", "VmHWM");
 * -1 when unreadable. */
long abuse_proc_kib(pid_t pid, const char *field);

/* The size of a file in bytes, -1 when it does not exist. */
long long abuse_file_size(const char *path);

/* True when pid runs with AddressSanitizer (libasan in its maps): its
 * memory figures then say little (quarantine, shadow memory). */
bool abuse_runs_asan(pid_t pid);

/* True while pid is a live process (not a zombie). */
bool abuse_alive(pid_t pid);

/* The byte streams are a function of the seed alone: tests/lib/rng.h. */

/* ---- swarms: many raw connections ------------------------------------- */

#define ABUSE_PEER_BUF 1024

struct abuse_peer {
	int fd;                     /* -1: closed or never connected */
	bool eof;                   /* the server closed it (or reset it) */
	size_t len;                 /* bytes of an incomplete line in buf */
	char buf[ABUSE_PEER_BUF];
	uint32_t lines;             /* complete lines read */
	char first[128];            /* the first line, without its CRLF */
	char last[128];             /* the last line, without its CRLF */
};

struct abuse_swarm {
	int n;
	struct abuse_peer *peers;
};

/*
 * Opens n TCP connections to 127.0.0.1:port (non-blocking sockets; each
 * connect bounded by timeout_ms).  Returns how many connected; the others
 * have fd -1.  The swarm is registered for abuse_teardown().
 */
int abuse__swarm_open(const char *file, int line, struct abuse_swarm *sw,
    int port, int n, int64_t timeout_ms);
#define abuse_swarm_open(sw, port, n, ms) \
	abuse__swarm_open(__FILE__, __LINE__, (sw), (port), (n), (ms))

/* Sends len bytes on peer i within timeout_ms; returns the bytes sent or -1
 * when the connection broke. */
ssize_t abuse_peer_send(struct abuse_peer *p, const void *data, size_t len,
    int64_t timeout_ms);

/*
 * Reads from every open peer until each has read at least want_lines
 * lines or reached end of stream, or timeout_ms passes.  Lines are counted
 * and the first and last kept; each one is handed to check (when not NULL)
 * with the peer's index.  Returns the peers that reached want_lines.
 */
int abuse_swarm_read(struct abuse_swarm *sw, uint32_t want_lines,
    int64_t timeout_ms, void (*check)(void *ctx, int peer, const char *line,
        size_t len), void *ctx);

/* Waits until every open peer reached end of stream or timeout_ms passes;
 * returns how many did (their lines are read and counted on the way). */
int abuse_swarm_await_eof(struct abuse_swarm *sw, int64_t timeout_ms);

/* Closes every connection of the swarm and frees it. */
void abuse_swarm_close(struct abuse_swarm *sw);

#endif
