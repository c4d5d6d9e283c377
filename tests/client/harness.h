/*
 * harness.h - what the client tests share: a real lockd started on a free
 * loopback port in a fresh temp directory, a scripted fake server for
 * replies lockd never sends, and running programs with bounded waits.
 *
 * Every process the harness starts is stopped by its own PID, and every
 * wait has a limit: a hung daemon or child fails a test, never the run.
 */
#ifndef LOCKD_TESTS_CLIENT_HARNESS_H
#define LOCKD_TESTS_CLIENT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HARNESS_PATH_MAX 512

struct harness_server {
	pid_t pid;                        /* 0 when not running */
	int port;                         /* kept across restarts */
	char dir[HARNESS_PATH_MAX];       /* temp dir: data/, lockd.log, sock */
	char unix_path[108];              /* dir/sock when started with_unix */
	bool with_unix;
	const char *const *extra_args;    /* more lockd flags, NULL-ended */
};

/*
 * Starts lockd: the first time on port 0 in a new temp dir, later on the
 * same port and data dir (a restart).  Returns 0 once lockd logged the
 * address it listens on, -1 (after killing it) when it did not in time.
 */
int harness_server_start(struct harness_server *s);
/*
 * A cmocka group fixture: one lockd for a whole test program (with a Unix
 * socket as well), its port also as a string for command lines.  The
 * teardown also stops every server and fake and removes every temp dir that
 * a failed test left behind.
 */
extern struct harness_server harness_shared;
extern char harness_shared_port[16];
int harness_shared_setup(void **state);
int harness_shared_teardown(void **state);

/* SIGCONT, SIGTERM, a bounded wait, then SIGKILL; the dir stays. */
void harness_server_stop(struct harness_server *s);
/* kill -9, as a crash would; the dir stays for a restart. */
void harness_server_kill(struct harness_server *s);
/* Stops the server and removes its temp dir. */
void harness_server_destroy(struct harness_server *s);
void harness_server_pause(struct harness_server *s);   /* SIGSTOP */
void harness_server_resume(struct harness_server *s);  /* SIGCONT */

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

/*
 * Call first in main(): arms a watchdog (a hang fails the program, not the
 * whole run) and runs only the tests matching $TEST_FILTER when set.
 */
void harness_begin(void);

/* The build directory's copy of a program: $(B)/lockd, $(B)/lockctl. */
const char *harness_program(const char *name);
int64_t harness_now_ms(void);
void harness_sleep_ms(int64_t ms);

/*
 * Runs argv (argv[0] a path) with stdout and stderr captured into out and
 * err (NUL-terminated, truncated to their size; either may be NULL) and
 * returns its exit status, 128+N when killed by signal N, or -1 when it
 * did not end within timeout_ms (it is killed then).
 */
int harness_run(char *const argv[], int64_t timeout_ms, char *out,
    size_t out_size, char *err, size_t err_size);
/* Starts argv with stdout/stderr to the given files (NULL: /dev/null). */
pid_t harness_spawn(char *const argv[], const char *out_path,
    const char *err_path);
/* Waits for pid: exit status as above, or -1 (not killed) on timeout. */
int harness_wait(pid_t pid, int64_t timeout_ms);
/* Waits until path exists and is not empty. */
bool harness_wait_for_file(const char *path, int64_t timeout_ms);
/* Reads a small file into buf (NUL-terminated); false if unreadable. */
bool harness_read_file(const char *path, char *buf, size_t size);
/* A new temp dir for a test's files; removed by harness_remove_tree(). */
void harness_temp_dir(char *dir, size_t size);
void harness_remove_tree(const char *dir);
/* A loopback port nobody listens on (bound, then closed). */
int harness_closed_port(void);

#endif
