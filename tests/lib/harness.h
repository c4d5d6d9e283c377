/*
 * harness.h - the one process harness of the tests that run real programs
 * (the integration, client, abuse and crash tests): it starts the real
 * lockd as a child process on port 0 in a fresh temporary directory, speaks
 * the raw line protocol to it over TCP or a Unix socket, and stops, kills
 * and restarts it; it runs other programs (lockctl, the examples) with
 * bounded waits, and plays a scripted fake server for replies lockd never
 * sends.  Like beanstalkd's tests, nothing here links the daemon's code: the
 * server is LOCKD_BIN (the build directory's lockd when unset), and the
 * only project code used is proto/, to parse replies exactly as liblockd
 * does.
 *
 * No test may hang: every read and every wait for a process is bounded in
 * time, a watchdog ends a test that runs too long, and a started lockd dies
 * with the test process (PR_SET_PDEATHSIG).  Servers are stopped and killed
 * by their own PID only.  Everything a test starts, opens or creates is
 * registered and undone by harness_teardown(), also after a failed check.
 *
 * The helpers that check something are macros over functions taking the
 * caller's __FILE__ and __LINE__, so cmocka reports the line of the test,
 * not of the harness.
 */
#ifndef LOCKD_TESTS_HARNESS_H
#define LOCKD_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/proto.h"

/*
 * Time limits, in milliseconds.  Each is multiplied by harness_slow(): the
 * integer in HARNESS_SLOW (default 1), for a lockd that runs slowly, e.g.
 * under valgrind (make valgrind).
 */
int harness_slow(void);
#define HARNESS_START_TIMEOUT_MS (5000 * harness_slow())  /* "listening on" */
#define HARNESS_STOP_TIMEOUT_MS (5000 * harness_slow())   /* a stopped lockd */
#define HARNESS_REPLY_TIMEOUT_MS (3000 * harness_slow())  /* a reply due now */
#define HARNESS_TEST_TIMEOUT_S (40 * harness_slow())      /* the watchdog */
#define HARNESS_PROGRAM_TIMEOUT_S (120 * harness_slow())  /* harness_begin's */

/*
 * lockd and the tests both count whole milliseconds, so an interval measured
 * here may read up to this much shorter than the one lockd timed.  Lower
 * bounds allow exactly this and nothing more.
 */
#define HARNESS_CLOCK_SLACK_MS 2

#define HARNESS_MAX_FLAGS 32
#define HARNESS_LINE_MAX 65536         /* longest reply line kept */
#define HARNESS_PATH_MAX 512            /* a path the tests build */
#define HARNESS_DIR_MAX 64              /* a temporary directory */

/* One lockd, running or not, and its temporary directory. */
struct harness_server {
	pid_t pid;                  /* 0 when not running */
	int port;                   /* TCP port: chosen by the first start,
	                               kept by restarts */
	char dir[HARNESS_DIR_MAX];  /* the temporary directory */
	char data_dir[128];         /* dir/data, given as --data-dir */
	char log_path[128];         /* dir/lockd.log: its stdout and stderr */
	char unix_path[108];        /* dir/lockd.sock, free for --unix */
	char *flags[HARNESS_MAX_FLAGS];  /* extra flags, kept for restarts */
	int nflags;
	int exit_status;            /* raw wait status of the last run */
};

/* One client connection. */
struct harness_conn {
	int fd;                     /* -1 once closed */
	bool eof;                   /* the server closed it (or reset it) */
	bool crlf;                  /* the last line read ended in CRLF */
	size_t len;                 /* bytes buffered in buf */
	char buf[HARNESS_LINE_MAX * 2];
	char line[HARNESS_LINE_MAX + 1];  /* the last line read, no CRLF */
};

/* A parsed GRANTED reply. */
struct harness_grant {
	char name[PROTO_NAME_MAX + 1];
	uint64_t fence;
	char handle[64];            /* "<fence>-<16 hex>" as sent */
	int64_t lease_ms;
};

/* A parsed STATUS reply. */
struct harness_status {
	bool held;
	uint64_t fence;
	int64_t ttl_ms;
	uint64_t queue;
};

/* What a lockd run to completion did (see harness_run). */
struct harness_run_result {
	int exit_code;              /* -1: killed by a signal or timed out */
	bool timed_out;
	char out[8192];             /* its stdout, NUL-terminated */
	char err[8192];             /* its stderr, NUL-terminated */
};

/* ---- cmocka fixtures ---------------------------------------------------- */

/*
 * Two ways to use the harness.  Per test (the integration, abuse and crash
 * tests): harness_setup arms a watchdog of HARNESS_TEST_TIMEOUT_S and
 * harness_teardown closes every connection, kills every process the harness
 * started and removes every directory it made.  Per program (the client
 * tests): harness_begin() first in main(), and the group fixture
 * harness_shared_setup/teardown, which also undoes what a failed test left.
 */
int harness_setup(void **state);
int harness_teardown(void **state);
#define HARNESS_TEST(f) cmocka_unit_test_setup_teardown(f, harness_setup, \
	harness_teardown)

/*
 * For a test whose servers must run with a fault point: they run
 * lockd-faulty (the real lockd, built in tests/ beside lockd, see
 * LOCKD_REAL_BIN or LOCKD_BIN) with LOCKD_FAULT=fault - a test that fills
 * the map needs "map_unchecked", since lockd itself refuses to start with a
 * --map-size too small for --max-held.  harness_faulty_begin returns 0, or
 * -1 when lockd-faulty is not built; harness_faulty_end puts LOCKD_BIN
 * back and clears LOCKD_FAULT.  Call them from a fixture's setup and
 * teardown, around harness_setup and harness_teardown.
 */
int harness_faulty_begin(const char *fault);
void harness_faulty_end(void);

/*
 * Call first in main() of a program without per-test fixtures: arms a
 * watchdog of HARNESS_PROGRAM_TIMEOUT_S (a hang fails the program, not the
 * whole run) and runs only the tests matching $TEST_FILTER when set.
 */
void harness_begin(void);

/*
 * The group fixture: one lockd for a whole test program, with a Unix socket
 * (its unix_path) as well, and its port also as a string for command lines.
 * The teardown stops it and undoes everything else left behind.
 */
extern struct harness_server *harness_shared;
extern char harness_shared_port[16];
int harness_shared_setup(void **state);
int harness_shared_teardown(void **state);

/* ---- time --------------------------------------------------------------- */

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t harness_now_ms(void);
void harness_sleep_ms(int64_t ms);

/* ---- files and programs ------------------------------------------------- */

/*
 * A fresh temporary directory under $TMPDIR (else /tmp), removed at
 * teardown or by harness_remove_tree().
 */
const char *harness__tempdir(const char *file, int line);
#define harness_tempdir() harness__tempdir(__FILE__, __LINE__)
/* Removes dir and all below it, and forgets it if it is a temp dir. */
void harness_remove_tree(const char *dir);

/* Reads a small file into buf (NUL-terminated); false if unreadable. */
bool harness_read_file(const char *path, char *buf, size_t size);
/* Waits until path exists and is not empty. */
bool harness_wait_for_file(const char *path, int64_t timeout_ms);

/*
 * The build directory's copy of a program ("lockd", "lockctl",
 * "examples/x"), as an absolute path; $<NAME>_BIN overrides (LOCKD_BIN,
 * LOCKCTL_BIN, ...).
 */
const char *harness_program(const char *name);

/*
 * Starts argv (argv[0] a path) with stdout and stderr appended to the files
 * given (NULL: /dev/null) and stdin from /dev/null.  It dies with the test
 * program and is killed at teardown if still running.
 */
pid_t harness_spawn(char *const argv[], const char *out_path,
    const char *err_path);
/*
 * Waits for pid: its exit status, 128+N when killed by signal N, or -1 on
 * timeout (it is left running then, for the caller or teardown).
 */
int harness_wait(pid_t pid, int64_t timeout_ms);
/*
 * Runs argv to completion with stdout and stderr captured into out and err
 * (NUL-terminated, truncated to their size; either may be NULL) and returns
 * its status as harness_wait does; on timeout it is killed.
 */
int harness_run(char *const argv[], int64_t timeout_ms, char *out,
    size_t out_size, char *err, size_t err_size);

/* A loopback port nobody listens on (bound, then closed). */
int harness_closed_port(void);

/* ---- servers ------------------------------------------------------------ */

/* A server with its own temporary directory, not yet started. */
struct harness_server *harness__server_new(const char *file, int line);
#define harness_server_new() harness__server_new(__FILE__, __LINE__)

/*
 * Starts lockd with --listen 127.0.0.1:0 --data-dir s->data_dir and the
 * extra flags given (a NULL-terminated list of strings), and waits for it to
 * log the port it listens on.  Fails the test when it does not within
 * HARNESS_START_TIMEOUT_MS or exits instead.  Unless the flags include
 * --journal-size or --config, --journal-size 65536 comes first: the default
 * journal (64 MiB, zero-filled and synced at every start) is for tests
 * that set it themselves.
 */
void harness__server_start(const char *file, int line,
    struct harness_server *s, ...);
#define harness_server_start(...) \
	harness__server_start(__FILE__, __LINE__, __VA_ARGS__)

/* harness_server_new() and harness_server_start() with the flags given. */
struct harness_server *harness__start(const char *file, int line, ...);
#define harness_start(...) harness__start(__FILE__, __LINE__, __VA_ARGS__)

/* Starts a stopped server again: same flags, data directory and port. */
void harness__server_restart(const char *file, int line,
    struct harness_server *s);
#define harness_server_restart(s) \
	harness__server_restart(__FILE__, __LINE__, (s))

/*
 * Sends SIGCONT (for a paused lockd) and SIGTERM, and waits at most timeout_ms for the exit.  Returns its exit
 * code, or -1 when it died by a signal or did not exit in time (it is then
 * killed).  *elapsed_ms, when not NULL, is the time the exit took.
 */
int harness_server_stop(struct harness_server *s, int64_t timeout_ms,
    int64_t *elapsed_ms);
/* The same with another signal (SIGINT). */
int harness_server_stop_signal(struct harness_server *s, int sig,
    int64_t timeout_ms, int64_t *elapsed_ms);

/* SIGKILL, and reaps it. */
void harness_server_kill(struct harness_server *s);
/* Stops the server, removes its directory and frees it (NULL: nothing). */
void harness_server_destroy(struct harness_server *s);
void harness_server_pause(struct harness_server *s);   /* SIGSTOP */
void harness_server_resume(struct harness_server *s);  /* SIGCONT */

/* True when the server's log holds needle. */
bool harness_log_contains(const struct harness_server *s, const char *needle);

/*
 * Runs lockd with exactly the arguments given (NULL-terminated; argv[0] is
 * supplied) to completion, at most timeout_ms, capturing stdout and stderr.
 * It runs in a fresh temporary directory, so a lockd that starts when it
 * should not makes its ./lockd-data there.
 */
void harness__run_lockd(const char *file, int line,
    struct harness_run_result *r, int64_t timeout_ms, ...);
#define harness_run_lockd(...) \
	harness__run_lockd(__FILE__, __LINE__, __VA_ARGS__)

/*
 * A fake server on a free loopback port, for one connection.  For each
 * request line it reads it answers with replies[i] verbatim (NULL: close
 * the connection instead); after the last it reads on, answering nothing,
 * until the client closes.  Every line received is appended to a file.
 */
struct harness_fake {
	pid_t pid;
	int port;
	char received[HARNESS_PATH_MAX];
};
int harness_fake_start(struct harness_fake *f, const char *const *replies,
    size_t count);
void harness_fake_stop(struct harness_fake *f);
/* A listening loopback TCP socket on a free port (*port), for a fake of
 * the test's own; -1 on failure. */
int harness_listen_loopback(int *port);

/* ---- connections -------------------------------------------------------- */

struct harness_conn *harness__connect(const char *file, int line,
    const struct harness_server *s);
#define harness_connect(s) harness__connect(__FILE__, __LINE__, (s))

struct harness_conn *harness__connect_unix(const char *file, int line,
    const char *path);
#define harness_connect_unix(p) harness__connect_unix(__FILE__, __LINE__, (p))

/*
 * Connects with the given receive buffer size set before the connection is
 * made (0: the system's), for a client that is meant not to read.
 */
struct harness_conn *harness__connect_rcvbuf(const char *file, int line,
    const struct harness_server *s, int rcvbuf);
#define harness_connect_rcvbuf(s, n) \
	harness__connect_rcvbuf(__FILE__, __LINE__, (s), (n))

/* Connects to an IPv4 address other than loopback: a lockd in a network
 * namespace the test made (test_cluster.c's partition test). */
struct harness_conn *harness__connect_to(const char *file, int line,
    const char *ip, int port);
#define harness_connect_to(ip, port) \
	harness__connect_to(__FILE__, __LINE__, (ip), (port))

/* Closes the client side now (teardown closes the rest). */
void harness_close(struct harness_conn *c);

/*
 * Closes c and gives its slot back: for probes asked in a loop, which
 * would otherwise use up a test's connections.  c and every line read
 * from it are gone afterwards.
 */
void harness_drop(struct harness_conn *c);

/* Sends data[0..len) in full or fails the test. */
void harness__send_bytes(const char *file, int line, struct harness_conn *c,
    const void *data, size_t len);
#define harness_send_bytes(c, d, n) \
	harness__send_bytes(__FILE__, __LINE__, (c), (d), (n))

/* Sends the formatted text as it is: the caller writes the "\n". */
void harness__send(const char *file, int line, struct harness_conn *c,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define harness_send(c, ...) harness__send(__FILE__, __LINE__, (c), __VA_ARGS__)

/*
 * Tries to send len bytes within timeout_ms; returns the bytes sent, or -1
 * with errno set when the connection broke.  Never fails the test.
 */
ssize_t harness_try_send(struct harness_conn *c, const void *data,
    size_t len, int64_t timeout_ms);

/*
 * Reads one reply line within timeout_ms.  Returns it without its line end
 * (valid until the next read), or NULL on timeout, end of stream or error.
 */
const char *harness_read_line(struct harness_conn *c, int64_t timeout_ms);

/* Reads one line and requires it to be exactly `want` (ending in CRLF). */
void harness__expect_line(const char *file, int line, struct harness_conn *c,
    const char *want);
#define harness_expect_line(c, w) \
	harness__expect_line(__FILE__, __LINE__, (c), (w))

/* Reads one line, requires it to start with prefix; returns it. */
const char *harness__expect_prefix(const char *file, int line,
    struct harness_conn *c, const char *prefix);
#define harness_expect_prefix(c, p) \
	harness__expect_prefix(__FILE__, __LINE__, (c), (p))

/* Reads one line, requires it to start with head and to hold each of
 * the fields (a NULL-ended array; a compound literal may be given as it
 * is, commas and all) somewhere; returns it. */
const char *harness__expect_fields(const char *file, int line,
    struct harness_conn *c, const char *head, const char *const *fields);
#define harness_expect_fields(c, head, ...) \
	harness__expect_fields(__FILE__, __LINE__, (c), (head), (__VA_ARGS__))

/* Reads one line and requires "ERR <code>" (then a space or the end). */
const char *harness__expect_error(const char *file, int line,
    struct harness_conn *c, const char *code);
#define harness_expect_error(c, code) \
	harness__expect_error(__FILE__, __LINE__, (c), (code))

/*
 * Reads one line within timeout_ms and requires a GRANTED for name, parsed
 * into *g (g may be NULL).
 */
void harness__expect_granted(const char *file, int line,
    struct harness_conn *c, const char *name, int64_t timeout_ms,
    struct harness_grant *g);
#define harness_expect_granted(c, name, g) harness__expect_granted(__FILE__, \
	__LINE__, (c), (name), HARNESS_REPLY_TIMEOUT_MS, (g))
#define harness_expect_granted_within(c, name, ms, g) \
	harness__expect_granted(__FILE__, __LINE__, (c), (name), (ms), (g))

/* Requires that no byte arrives for ms milliseconds. */
void harness__expect_silence(const char *file, int line,
    struct harness_conn *c, int64_t ms);
#define harness_expect_silence(c, ms) \
	harness__expect_silence(__FILE__, __LINE__, (c), (ms))

/* Requires the server to close the connection within timeout_ms, with no
 * further reply line before it. */
void harness__expect_eof(const char *file, int line, struct harness_conn *c,
    int64_t timeout_ms);
#define harness_expect_eof(c, ms) \
	harness__expect_eof(__FILE__, __LINE__, (c), (ms))

/* ---- commands ----------------------------------------------------------- */

/* Sends "TRY name lease=lease_ms" and requires a GRANTED. */
void harness__try(const char *file, int line, struct harness_conn *c,
    const char *name, int64_t lease_ms, struct harness_grant *g);
#define harness_try(c, name, ms, g) \
	harness__try(__FILE__, __LINE__, (c), (name), (ms), (g))

/* Sends "STATUS name" and parses the reply. */
void harness__status(const char *file, int line, struct harness_conn *c,
    const char *name, struct harness_status *st);
#define harness_status(c, name, st) \
	harness__status(__FILE__, __LINE__, (c), (name), (st))

/* STATUS until queue reaches `queue` (waiters are queued asynchronously
 * from the sender's point of view); fails after HARNESS_REPLY_TIMEOUT_MS. */
void harness__await_queue(const char *file, int line, struct harness_conn *c,
    const char *name, uint64_t queue);
#define harness_await_queue(c, name, q) \
	harness__await_queue(__FILE__, __LINE__, (c), (name), (q))

/* Sends "STATS" and returns the value of key; fails when it is absent. */
uint64_t harness__stat(const char *file, int line, struct harness_conn *c,
    const char *key);
#define harness_stat(c, key) harness__stat(__FILE__, __LINE__, (c), (key))

/* ---- parsing ------------------------------------------------------------ */

/*
 * Parses "GRANTED name fence=N handle=H lease=L" (without its line end)
 * with proto_parse_reply, the parser liblockd uses.  Returns false when the
 * line is anything else.
 */
bool harness_parse_granted(const char *line, struct harness_grant *g);
bool harness_parse_status(const char *line, struct harness_status *st);

#endif /* LOCKD_TESTS_HARNESS_H */
