/*
 * harness.c - the tests' process harness: child lockd processes and other
 * programs, a fake server, raw protocol connections, bounded waits.  See
 * harness.h for the contract.
 *
 * This file may start processes, open sockets and create files under /tmp;
 * it must not link or include anything of daemon/ (the daemon is tested
 * from the outside only) and must never wait without a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

#define MAX_SERVERS 16
#define MAX_CONNS 256
#define MAX_DIRS 32
#define MAX_WATCHED 64
#define LOG_READ_MAX (1 << 20)
/* Socket-level timeouts: a last line of defence under the poll() deadlines. */
#define SOCKET_TIMEOUT_S 5

static struct harness_server *servers[MAX_SERVERS];
static struct harness_conn *conns[MAX_CONNS];
static char dirs[MAX_DIRS][HARNESS_DIR_MAX];
/* The PIDs the watchdog and teardown kill: every process started here. */
static volatile pid_t watched[MAX_WATCHED];
static bool exit_hook_set;

/* ---- failing ------------------------------------------------------------ */

/* Reports where the test failed and why, then ends the test (cmocka's
 * _fail longjmps back into its runner). */
static void __attribute__((format(printf, 3, 4)))
failf(const char *file, int line, const char *fmt, ...)
{
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	print_error("%s:%d: %s\n", file, line, text);
	_fail(file, line);
}

/* Makes a line printable in a failure message. */
static const char *
shown(const char *s)
{
	static char out[600];
	size_t i, n = 0;

	if (s == NULL)
		return "(nothing: timeout or connection closed)";
	for (i = 0; s[i] != '\0' && n + 5 < sizeof(out); i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch >= 0x7f)
			n += (size_t)snprintf(out + n, sizeof(out) - n,
			    "\\x%02x", ch);
		else
			out[n++] = (char)ch;
	}
	if (s[i] != '\0')
		n += (size_t)snprintf(out + n, sizeof(out) - n, "...");
	out[n] = '\0';
	return out;
}

/* ---- time --------------------------------------------------------------- */

int
harness_slow(void)
{
	static int factor;
	const char *env;

	if (factor == 0) {
		env = getenv("HARNESS_SLOW");
		factor = env != NULL ? atoi(env) : 1;
		if (factor < 1 || factor > 100)
			factor = 1;
	}
	return factor;
}

int64_t
harness_now_ms(void)
{
	struct timespec ts;

	/* lockd's clock (libuv's) is CLOCK_MONOTONIC too. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
harness_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- processes ---------------------------------------------------------- */

const char *
harness_program(const char *name)
{
	static char paths[4][HARNESS_PATH_MAX];
	static int next;
	char self[HARNESS_PATH_MAX], *dir;
	const char *env_value;
	char *path = paths[next++ % 4];
	ssize_t n;
	size_t i;

	/* LOCKD_BIN, LOCKCTL_BIN, ... override; else the build directory,
	 * two levels above this program ($(B)/tests/x). */
	snprintf(self, sizeof(self), "%s_BIN", name);
	for (i = 0; self[i] != '\0'; i++)
		self[i] = (char)(self[i] >= 'a' && self[i] <= 'z' ?
		    self[i] - 'a' + 'A' : self[i] == '/' ? '_' : self[i]);
	if ((env_value = getenv(self)) != NULL && *env_value != '\0') {
		/* Absolute, since harness_run_lockd's child runs elsewhere. */
		if (realpath(env_value, path) == NULL)
			snprintf(path, HARNESS_PATH_MAX, "%s", env_value);
		return path;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		n = 0;
	self[n] = '\0';
	dir = dirname(dirname(self));
	snprintf(path, HARNESS_PATH_MAX, "%s/%s", dir, name);
	return path;
}

static void
watch(pid_t pid)
{
	int i;

	for (i = 0; i < MAX_WATCHED; i++)
		if (watched[i] == 0) {
			watched[i] = pid;
			return;
		}
}

static void
unwatch(pid_t pid)
{
	int i;

	for (i = 0; i < MAX_WATCHED; i++)
		if (watched[i] == pid)
			watched[i] = 0;
}

/* Waits at most timeout_ms for pid to exit; true and *status when it did. */
static bool
wait_bounded(pid_t pid, int64_t timeout_ms, int *status)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	pid_t r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (harness_now_ms() >= deadline)
			return false;
		harness_sleep_ms(2);
	}
}

/* SIGKILL to pid alone, then reap it (bounded: a killed process goes). */
static int
kill_and_reap(pid_t pid)
{
	int status = 0;

	kill(pid, SIGKILL);
	if (!wait_bounded(pid, HARNESS_STOP_TIMEOUT_MS, &status))
		status = -1;
	unwatch(pid);
	return status;
}

/*
 * Forks and execs argv; its stdout and stderr go to out_path and err_path
 * (appending), its stdin is /dev/null, its directory cwd (NULL: ours).
 * The child dies with us.
 */
static pid_t
spawn(char *const argv[], const char *out_path, const char *err_path,
    const char *cwd)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid != 0)
		return pid;
	{
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		static const char msg[] = "harness: cannot exec\n";

		if (in < 0 || out < 0 || err < 0)
			_exit(126);
		if (cwd != NULL && chdir(cwd) != 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(err, 2);
		execv(argv[0], argv);
		if (write(2, msg, sizeof(msg) - 1) < 0)
			_exit(127);
		_exit(127);
	}
}

/* Reads at most cap-1 bytes of path from offset, NUL-terminated. */
static size_t
read_file(const char *path, off_t offset, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	size_t n = 0;
	ssize_t r;

	buf[0] = '\0';
	if (fd < 0)
		return 0;
	if (lseek(fd, offset, SEEK_SET) == offset) {
		while (n + 1 < cap &&
		    (r = read(fd, buf + n, cap - 1 - n)) > 0)
			n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return n;
}

static off_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

bool
harness_read_file(const char *path, char *buf, size_t size)
{
	if (size == 0 || access(path, R_OK) != 0) {
		if (size > 0)
			buf[0] = '\0';
		return false;
	}
	read_file(path, 0, buf, size);
	return true;
}

bool
harness_wait_for_file(const char *path, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	do {
		if (file_size(path) > 0)
			return true;
		harness_sleep_ms(5);
	} while (harness_now_ms() < deadline);
	return false;
}

pid_t
harness_spawn(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t pid = spawn(argv, out_path != NULL ? out_path : "/dev/null",
	    err_path != NULL ? err_path : "/dev/null", NULL);

	if (pid > 0)
		watch(pid);
	return pid;
}

/* A wait status as harness_wait reports it. */
static int
status_code(int status)
{
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
	    WEXITSTATUS(status);
}

int
harness_wait(pid_t pid, int64_t timeout_ms)
{
	int status;

	if (!wait_bounded(pid, timeout_ms, &status))
		return -1;
	unwatch(pid);
	return status_code(status);
}

/*
 * Runs argv in cwd to completion within timeout_ms, its output to out_path
 * and err_path; true and *status when it ended, false when it was killed.
 */
static bool
run_to_end(char *const argv[], const char *cwd, const char *out_path,
    const char *err_path, int64_t timeout_ms, int *status)
{
	pid_t pid = spawn(argv, out_path, err_path, cwd);

	if (pid < 0)
		return false;
	watch(pid);
	if (wait_bounded(pid, timeout_ms, status)) {
		unwatch(pid);
		return true;
	}
	kill_and_reap(pid);
	return false;
}

int
harness_run(char *const argv[], int64_t timeout_ms, char *out,
    size_t out_size, char *err, size_t err_size)
{
	char dir[HARNESS_PATH_MAX], out_path[HARNESS_PATH_MAX + 8],
	    err_path[HARNESS_PATH_MAX + 8];
	int status = 0, rc;

	snprintf(dir, sizeof(dir), "%s", harness_tempdir());
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	rc = run_to_end(argv, NULL, out_path, err_path, timeout_ms, &status) ?
	    status_code(status) : -1;
	if (out != NULL)
		harness_read_file(out_path, out, out_size);
	if (err != NULL)
		harness_read_file(err_path, err, err_size);
	harness_remove_tree(dir);
	return rc;
}

int
harness_closed_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
		abort();
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

/* ---- directories -------------------------------------------------------- */

static int
remove_entry(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void
remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void
harness_remove_tree(const char *dir)
{
	char copy[HARNESS_PATH_MAX];
	int i;

	if (dir == NULL || dir[0] == '\0')
		return;
	/* dir may be a slot of dirs[] itself. */
	snprintf(copy, sizeof(copy), "%s", dir);
	remove_tree(copy);
	for (i = 0; i < MAX_DIRS; i++)
		if (strcmp(dirs[i], copy) == 0)
			dirs[i][0] = '\0';
}

const char *
harness__tempdir(const char *file, int line)
{
	const char *tmp = getenv("TMPDIR");
	int i;

	for (i = 0; i < MAX_DIRS; i++) {
		if (dirs[i][0] != '\0')
			continue;
		snprintf(dirs[i], sizeof(dirs[i]), "%.40s/lockd-test-XXXXXX",
		    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
		if (mkdtemp(dirs[i]) == NULL) {
			dirs[i][0] = '\0';
			failf(file, line, "mkdtemp: %s", strerror(errno));
			return "/nonexistent";
		}
		return dirs[i];
	}
	failf(file, line, "too many temporary directories in one test");
	return "/nonexistent";
}

/* ---- cleanup ------------------------------------------------------------ */

static void
cleanup_all(void)
{
	int i, j;

	for (i = 0; i < MAX_CONNS; i++) {
		if (conns[i] == NULL)
			continue;
		if (conns[i]->fd >= 0)
			close(conns[i]->fd);
		free(conns[i]);
		conns[i] = NULL;
	}
	for (i = 0; i < MAX_SERVERS; i++) {
		struct harness_server *s = servers[i];
		if (s == NULL)
			continue;
		/* HARNESS_STOP_GENTLY (make valgrind): SIGTERM first, so a
		 * lockd under memcheck exits by itself and reports. */
		if (s->pid > 0 && getenv("HARNESS_STOP_GENTLY") != NULL)
			harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
		if (s->pid > 0)
			kill_and_reap(s->pid);
		for (j = 0; j < s->nflags; j++)
			free(s->flags[j]);
		free(s);
		servers[i] = NULL;
	}
	for (i = 0; i < MAX_WATCHED; i++)
		if (watched[i] != 0)
			kill_and_reap(watched[i]);
	for (i = 0; i < MAX_DIRS; i++) {
		if (dirs[i][0] == '\0')
			continue;
		remove_tree(dirs[i]);
		dirs[i][0] = '\0';
	}
}

static void
on_watchdog(int sig)
{
	static const char msg[] =
	    "\nharness: watchdog: test ran too long; killing its lockd\n";
	int i;

	(void)sig;
	for (i = 0; i < MAX_WATCHED; i++)
		if (watched[i] > 0) {
			kill(watched[i], SIGCONT);
			kill(watched[i], SIGKILL);
		}
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	/* Only async-signal-safe calls here: rm(1) removes the directories. */
	for (i = 0; i < MAX_DIRS; i++) {
		pid_t pid;

		if (dirs[i][0] == '\0' || (pid = fork()) < 0)
			continue;
		if (pid == 0) {
			execl("/bin/rm", "rm", "-rf", dirs[i], (char *)NULL);
			_exit(127);
		}
		waitpid(pid, NULL, 0);
	}
	_exit(3);
}

/* Arms the watchdog for seconds; the first call also sets the exit hook. */
static void
arm(unsigned seconds)
{
	struct sigaction sa;

	if (!exit_hook_set) {
		atexit(cleanup_all);
		signal(SIGPIPE, SIG_IGN);
		exit_hook_set = true;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

int
harness_setup(void **state)
{
	(void)state;
	arm((unsigned)HARNESS_TEST_TIMEOUT_S);
	return 0;
}

int
harness_teardown(void **state)
{
	(void)state;
	alarm(0);
	cleanup_all();
	return 0;
}

void
harness_begin(void)
{
	const char *filter = getenv("TEST_FILTER");

	arm((unsigned)HARNESS_PROGRAM_TIMEOUT_S);
	if (filter != NULL && *filter != '\0')
		cmocka_set_test_filter(filter);
}

struct harness_server *harness_shared;
char harness_shared_port[16];

int
harness_shared_setup(void **state)
{
	struct harness_server *s = harness_server_new();

	(void)state;
	harness_server_start(s, "--unix", s->unix_path, NULL);
	harness_shared = s;
	snprintf(harness_shared_port, sizeof(harness_shared_port), "%d",
	    s->port);
	return 0;
}

int
harness_shared_teardown(void **state)
{
	(void)state;
	harness_server_destroy(harness_shared);
	harness_shared = NULL;
	cleanup_all();
	return 0;
}

/* ---- servers ------------------------------------------------------------ */

struct harness_server *
harness__server_new(const char *file, int line)
{
	struct harness_server *s;
	const char *dir;
	int i;

	for (i = 0; i < MAX_SERVERS && servers[i] != NULL; i++)
		;
	if (i == MAX_SERVERS) {
		failf(file, line, "too many servers in one test");
		return NULL;
	}
	dir = harness__tempdir(file, line);
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		failf(file, line, "out of memory");
		return NULL;
	}
	servers[i] = s;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->data_dir, sizeof(s->data_dir), "%s/data", dir);
	snprintf(s->log_path, sizeof(s->log_path), "%s/lockd.log", dir);
	snprintf(s->unix_path, sizeof(s->unix_path), "%s/lockd.sock", dir);
	return s;
}

/* True when s's saved flags name the option flag. */
static bool
has_flag(const struct harness_server *s, const char *flag)
{
	int i;

	for (i = 0; i < s->nflags; i++)
		if (strcmp(s->flags[i], flag) == 0)
			return true;
	return false;
}

/* Starts s with its saved flags and waits for its port. */
static void
launch(const char *file, int line, struct harness_server *s)
{
	char *argv[HARNESS_MAX_FLAGS + 8];
	static char log[LOG_READ_MAX];
	char unix_needle[200], metrics_needle[64], listen_at[32];
	int64_t deadline;
	off_t offset;
	int argc = 0, i, status;
	pid_t pid;

	if (s->pid > 0) {
		failf(file, line, "lockd is already running (pid %d)",
		    (int)s->pid);
		return;
	}
	/* Port 0 the first time; a restart keeps the port, so that a client
	 * reconnects as it would to a real restarted daemon. */
	snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", s->port);
	argv[argc++] = (char *)harness_program("lockd");
	argv[argc++] = (char *)"--listen";
	argv[argc++] = listen_at;
	argv[argc++] = (char *)"--data-dir";
	argv[argc++] = s->data_dir;
	/* The smallest journal, unless the test sets one (or a config file
	 * may): the default's 64 MiB are zero-filled and synced at every
	 * start, and no test here is about its size. */
	if (!has_flag(s, "--journal-size") && !has_flag(s, "--config")) {
		argv[argc++] = (char *)"--journal-size";
		argv[argc++] = (char *)"65536";
	}
	for (i = 0; i < s->nflags; i++)
		argv[argc++] = s->flags[i];
	argv[argc] = NULL;

	/* A restart appends to the same log: look past what is there. */
	offset = file_size(s->log_path);
	if ((pid = spawn(argv, s->log_path, s->log_path, NULL)) < 0) {
		failf(file, line, "fork: %s", strerror(errno));
		return;
	}
	s->pid = pid;
	watch(pid);
	/* lockd logs its TCP listener first: a --unix socket or a metrics
	 * listener asked for is waited for too, so no test races them. */
	unix_needle[0] = metrics_needle[0] = '\0';
	for (i = 0; i + 1 < s->nflags; i++) {
		if (strcmp(s->flags[i], "--unix") == 0)
			snprintf(unix_needle, sizeof(unix_needle),
			    "listening on %s", s->flags[i + 1]);
		if (strcmp(s->flags[i], "--metrics-listen") == 0)
			snprintf(metrics_needle, sizeof(metrics_needle),
			    "event=listen metrics=");
	}
	deadline = harness_now_ms() + HARNESS_START_TIMEOUT_MS;
	for (;;) {
		const char *at;

		read_file(s->log_path, offset, log, sizeof(log));
		if ((at = strstr(log, "listening on 127.0.0.1:")) != NULL &&
		    (unix_needle[0] == '\0' || strstr(log, unix_needle)) &&
		    (metrics_needle[0] == '\0' ||
		    strstr(log, metrics_needle))) {
			s->port = atoi(at + strlen("listening on 127.0.0.1:"));
			if (s->port > 0)
				return;
		}
		if (waitpid(pid, &status, WNOHANG) == pid) {
			s->pid = 0;
			s->exit_status = status;
			unwatch(pid);
			failf(file, line, "lockd (%s) exited with status %d "
			    "before listening; its log:\n%s", argv[0],
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, log);
			return;
		}
		if (harness_now_ms() >= deadline) {
			kill_and_reap(pid);
			s->pid = 0;
			failf(file, line, "lockd logged no 'listening on' "
			    "within %d ms; its log:\n%s",
			    HARNESS_START_TIMEOUT_MS, log);
			return;
		}
		harness_sleep_ms(5);
	}
}

static void
start_va(const char *file, int line, struct harness_server *s, va_list ap)
{
	const char *flag;

	while ((flag = va_arg(ap, const char *)) != NULL) {
		if (s->nflags == HARNESS_MAX_FLAGS) {
			failf(file, line, "too many flags");
			return;
		}
		s->flags[s->nflags++] = strdup(flag);
	}
	launch(file, line, s);
}

void
harness__server_start(const char *file, int line, struct harness_server *s,
    ...)
{
	va_list ap;

	va_start(ap, s);
	start_va(file, line, s, ap);
	va_end(ap);
}

struct harness_server *
harness__start(const char *file, int line, ...)
{
	struct harness_server *s = harness__server_new(file, line);
	va_list ap;

	va_start(ap, line);
	start_va(file, line, s, ap);
	va_end(ap);
	return s;
}

void
harness__server_restart(const char *file, int line, struct harness_server *s)
{
	launch(file, line, s);
}

int
harness_server_stop(struct harness_server *s, int64_t timeout_ms,
    int64_t *elapsed_ms)
{
	return harness_server_stop_signal(s, SIGTERM, timeout_ms, elapsed_ms);
}

int
harness_server_stop_signal(struct harness_server *s, int sig,
    int64_t timeout_ms, int64_t *elapsed_ms)
{
	int64_t start = harness_now_ms();
	int status = 0;
	pid_t pid = s->pid;

	if (pid <= 0)
		return -1;
	kill(pid, SIGCONT);
	kill(pid, sig);
	if (!wait_bounded(pid, timeout_ms, &status)) {
		status = kill_and_reap(pid);
		s->pid = 0;
		s->exit_status = status;
		if (elapsed_ms != NULL)
			*elapsed_ms = harness_now_ms() - start;
		return -1;
	}
	if (elapsed_ms != NULL)
		*elapsed_ms = harness_now_ms() - start;
	unwatch(pid);
	s->pid = 0;
	s->exit_status = status;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void
harness_server_kill(struct harness_server *s)
{
	if (s->pid <= 0)
		return;
	s->exit_status = kill_and_reap(s->pid);
	s->pid = 0;
}

void
harness_server_destroy(struct harness_server *s)
{
	int i;

	if (s == NULL)
		return;
	if (s->pid > 0 &&
	    harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL) < 0)
		harness_server_kill(s);
	harness_remove_tree(s->dir);
	for (i = 0; i < s->nflags; i++)
		free(s->flags[i]);
	for (i = 0; i < MAX_SERVERS; i++)
		if (servers[i] == s)
			servers[i] = NULL;
	free(s);
}

void
harness_server_pause(struct harness_server *s)
{
	if (s->pid > 0)
		kill(s->pid, SIGSTOP);
}

void
harness_server_resume(struct harness_server *s)
{
	if (s->pid > 0)
		kill(s->pid, SIGCONT);
}

bool
harness_log_contains(const struct harness_server *s, const char *needle)
{
	static char log[LOG_READ_MAX];

	read_file(s->log_path, 0, log, sizeof(log));
	return strstr(log, needle) != NULL;
}

void
harness__run_lockd(const char *file, int line, struct harness_run_result *r,
    int64_t timeout_ms, ...)
{
	char *argv[HARNESS_MAX_FLAGS + 2], out_path[HARNESS_PATH_MAX + 8],
	    err_path[HARNESS_PATH_MAX + 8];
	const char *dir = harness__tempdir(file, line), *arg;
	int argc = 0, status = 0;
	va_list ap;

	memset(r, 0, sizeof(*r));
	argv[argc++] = (char *)harness_program("lockd");
	va_start(ap, timeout_ms);
	while ((arg = va_arg(ap, const char *)) != NULL &&
	    argc < HARNESS_MAX_FLAGS + 1)
		argv[argc++] = (char *)arg;
	va_end(ap);
	argv[argc] = NULL;
	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	if (run_to_end(argv, dir, out_path, err_path, timeout_ms, &status)) {
		r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	} else {
		r->timed_out = true;
		r->exit_code = -1;
	}
	read_file(out_path, 0, r->out, sizeof(r->out));
	read_file(err_path, 0, r->err, sizeof(r->err));
}

/* ---- the fake server ---------------------------------------------------- */

/* The fake server's child: one connection, the script, then silence. */
static void
fake_serve(int listener, const char *received, const char *const *replies,
    size_t count)
{
	char line[8192];
	size_t len = 0, i = 0;
	FILE *log = fopen(received, "w");
	int fd = accept(listener, NULL, NULL);
	ssize_t n;

	close(listener);
	if (fd < 0 || log == NULL)
		_exit(1);
	for (;;) {
		char *lf = memchr(line, '\n', len);

		if (lf == NULL) {
			if (len == sizeof(line))
				len = 0;
			n = read(fd, line + len, sizeof(line) - len);
			if (n <= 0)
				_exit(0);
			len += (size_t)n;
			continue;
		}
		/* Logged without the line end, CR LF or LF alike. */
		fprintf(log, "%.*s\n", (int)(lf - line - (lf > line &&
		    lf[-1] == '\r')), line);
		fflush(log);
		len -= (size_t)(lf + 1 - line);
		memmove(line, lf + 1, len);
		if (i < count) {
			const char *reply = replies[i++];

			if (reply == NULL) {
				close(fd);
				_exit(0);
			}
			if (write(fd, reply, strlen(reply)) < 0)
				_exit(1);
		}
	}
}

int
harness_listen_loopback(int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

int
harness_fake_start(struct harness_fake *f, const char *const *replies,
    size_t count)
{
	int fd = harness_listen_loopback(&f->port);

	if (fd < 0)
		return -1;
	snprintf(f->received, sizeof(f->received), "%.200s/received",
	    harness_tempdir());
	fflush(stdout);
	fflush(stderr);
	f->pid = fork();
	if (f->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fake_serve(fd, f->received, replies, count);
	}
	close(fd);
	if (f->pid > 0)
		watch(f->pid);
	return f->pid > 0 ? 0 : -1;
}

void
harness_fake_stop(struct harness_fake *f)
{
	char dir[HARNESS_PATH_MAX];

	if (f->pid > 0) {
		kill_and_reap(f->pid);
		f->pid = 0;
	}
	snprintf(dir, sizeof(dir), "%s", f->received);
	harness_remove_tree(dirname(dir));
}

/* ---- connections -------------------------------------------------------- */

static struct harness_conn *
conn_new(const char *file, int line, int fd)
{
	struct harness_conn *c;
	struct timeval tv = { SOCKET_TIMEOUT_S, 0 };
	int i;

	for (i = 0; i < MAX_CONNS && conns[i] != NULL; i++)
		;
	if (i == MAX_CONNS || (c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		failf(file, line, "too many connections in one test");
		return NULL;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c->fd = fd;
	conns[i] = c;
	return c;
}

struct harness_conn *
harness__connect_rcvbuf(const char *file, int line,
    const struct harness_server *s, int rcvbuf)
{
	struct sockaddr_in addr;
	int fd, one = 1;

	if (s == NULL || s->port <= 0) {
		failf(file, line, "connect: the server is not running");
		return NULL;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		failf(file, line, "socket: %s", strerror(errno));
		return NULL;
	}
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)s->port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		failf(file, line, "connect to 127.0.0.1:%d: %s", s->port,
		    strerror(errno));
		close(fd);
		return NULL;
	}
	return conn_new(file, line, fd);
}

struct harness_conn *
harness__connect_to(const char *file, int line, const char *ip, int port)
{
	struct sockaddr_in addr;
	int fd, one = 1;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
		failf(file, line, "connect: bad address %s", ip);
		return NULL;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		failf(file, line, "socket: %s", strerror(errno));
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		failf(file, line, "connect to %s:%d: %s", ip, port,
		    strerror(errno));
		close(fd);
		return NULL;
	}
	return conn_new(file, line, fd);
}

struct harness_conn *
harness__connect(const char *file, int line, const struct harness_server *s)
{
	return harness__connect_rcvbuf(file, line, s, 0);
}

struct harness_conn *
harness__connect_unix(const char *file, int line, const char *path)
{
	struct sockaddr_un addr;
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		failf(file, line, "socket: %s", strerror(errno));
		return NULL;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		failf(file, line, "connect to %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return conn_new(file, line, fd);
}

void
harness_close(struct harness_conn *c)
{
	if (c != NULL && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void
harness_drop(struct harness_conn *c)
{
	int i;

	for (i = 0; i < MAX_CONNS; i++)
		if (conns[i] == c && c != NULL) {
			harness_close(c);
			free(c);
			conns[i] = NULL;
			return;
		}
}

ssize_t
harness_try_send(struct harness_conn *c, const void *data, size_t len,
    int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	const char *p = data;
	size_t sent = 0;

	while (sent < len) {
		struct pollfd pfd = { c->fd, POLLOUT, 0 };
		int64_t left = deadline - harness_now_ms();
		ssize_t n;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		n = send(c->fd, p + sent, len - sent,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		sent += (size_t)n;
	}
	return (ssize_t)sent;
}

void
harness__send_bytes(const char *file, int line, struct harness_conn *c,
    const void *data, size_t len)
{
	ssize_t n = harness_try_send(c, data, len, HARNESS_REPLY_TIMEOUT_MS);

	if (n < 0 || (size_t)n != len)
		failf(file, line, "send of %zu bytes failed: %s", len,
		    n < 0 ? strerror(errno) : "timed out");
}

void
harness__send(const char *file, int line, struct harness_conn *c,
    const char *fmt, ...)
{
	char text[HARNESS_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text)) {
		failf(file, line, "request too long for harness_send");
		return;
	}
	harness__send_bytes(file, line, c, text, (size_t)n);
}

const char *
harness_read_line(struct harness_conn *c, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	for (;;) {
		char *lf = memchr(c->buf, '\n', c->len);
		struct pollfd pfd;
		int64_t left;
		ssize_t n;

		if (lf != NULL) {
			size_t used = (size_t)(lf - c->buf) + 1;
			size_t keep = used - 1;

			c->crlf = keep > 0 && c->buf[keep - 1] == '\r';
			if (c->crlf)
				keep--;
			if (keep > HARNESS_LINE_MAX)
				keep = HARNESS_LINE_MAX;
			memcpy(c->line, c->buf, keep);
			c->line[keep] = '\0';
			memmove(c->buf, c->buf + used, c->len - used);
			c->len -= used;
			return c->line;
		}
		if (c->eof || c->fd < 0 || c->len == sizeof(c->buf))
			return NULL;
		left = deadline - harness_now_ms();
		if (left <= 0)
			return NULL;
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;   /* timeout or EINTR: the loop re-checks */
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len,
		    MSG_DONTWAIT);
		if (n > 0)
			c->len += (size_t)n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->eof = true;
	}
}

/* Reads a line or fails; checks the CRLF every reply must end in. */
static const char *
read_reply(const char *file, int line, struct harness_conn *c,
    int64_t timeout_ms, const char *wanted)
{
	const char *got = harness_read_line(c, timeout_ms);

	if (got == NULL) {
		failf(file, line, "expected %s within %lld ms, got %s", wanted,
		    (long long)timeout_ms, c->eof ?
		    "the connection closed" : "nothing");
		return NULL;
	}
	if (!c->crlf) {
		failf(file, line, "reply '%s' does not end in CRLF",
		    shown(got));
		return NULL;
	}
	return got;
}

void
harness__expect_line(const char *file, int line, struct harness_conn *c,
    const char *want)
{
	char wanted[600];
	const char *got;

	snprintf(wanted, sizeof(wanted), "'%s'", want);
	got = read_reply(file, line, c, HARNESS_REPLY_TIMEOUT_MS, wanted);
	if (got != NULL && strcmp(got, want) != 0)
		failf(file, line, "expected '%s', got '%s'", want, shown(got));
}

const char *
harness__expect_prefix(const char *file, int line, struct harness_conn *c,
    const char *prefix)
{
	char wanted[600];
	const char *got;

	snprintf(wanted, sizeof(wanted), "a line starting '%s'", prefix);
	got = read_reply(file, line, c, HARNESS_REPLY_TIMEOUT_MS, wanted);
	if (got != NULL && strncmp(got, prefix, strlen(prefix)) != 0)
		failf(file, line, "expected a line starting '%s', got '%s'",
		    prefix, shown(got));
	return got;
}

const char *
harness__expect_fields(const char *file, int line, struct harness_conn *c,
    const char *head, const char *const *fields)
{
	const char *got = harness__expect_prefix(file, line, c, head);

	for (; got != NULL && *fields != NULL; fields++)
		if (strstr(got, *fields) == NULL)
			failf(file, line, "no '%s' in '%s'", *fields,
			    shown(got));
	return got;
}

const char *
harness__expect_error(const char *file, int line, struct harness_conn *c,
    const char *code)
{
	char prefix[64];
	const char *got;
	size_t n;

	n = (size_t)snprintf(prefix, sizeof(prefix), "ERR %s", code);
	got = harness__expect_prefix(file, line, c, prefix);
	if (got != NULL && got[n] != '\0' && got[n] != ' ')
		failf(file, line, "expected 'ERR %s ...', got '%s'", code,
		    shown(got));
	return got;
}

void
harness__expect_granted(const char *file, int line, struct harness_conn *c,
    const char *name, int64_t timeout_ms, struct harness_grant *g)
{
	struct harness_grant scratch;
	char wanted[300];
	const char *got;

	if (g == NULL)
		g = &scratch;
	snprintf(wanted, sizeof(wanted), "GRANTED %.255s", name);
	if ((got = read_reply(file, line, c, timeout_ms, wanted)) == NULL)
		return;
	if (!harness_parse_granted(got, g)) {
		failf(file, line, "expected GRANTED %s, got '%s'", name,
		    shown(got));
		return;
	}
	if (strcmp(g->name, name) != 0)
		failf(file, line, "GRANTED for '%s', expected '%s'", g->name,
		    name);
}

void
harness__expect_silence(const char *file, int line, struct harness_conn *c,
    int64_t ms)
{
	int64_t deadline = harness_now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { c->fd, POLLIN, 0 };
		int64_t left = deadline - harness_now_ms();
		ssize_t n;

		if (c->len > 0) {
			c->buf[c->len < sizeof(c->buf) ? c->len :
			    sizeof(c->buf) - 1] = '\0';
			failf(file, line, "expected silence, got '%s'",
			    shown(c->buf));
			return;
		}
		if (left <= 0)
			return;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = recv(c->fd, c->buf, sizeof(c->buf) - 1, MSG_DONTWAIT);
		if (n > 0) {
			c->len = (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			c->eof = true;
			failf(file, line, "expected silence, but the "
			    "connection closed");
			return;
		}
	}
}

void
harness__expect_eof(const char *file, int line, struct harness_conn *c,
    int64_t timeout_ms)
{
	const char *got = harness_read_line(c, timeout_ms);

	if (got != NULL)
		failf(file, line, "expected the connection to close, got '%s'",
		    shown(got));
	else if (!c->eof)
		failf(file, line, "the connection is still open after %lld ms",
		    (long long)timeout_ms);
}

/* ---- commands ----------------------------------------------------------- */

void
harness__try(const char *file, int line, struct harness_conn *c,
    const char *name, int64_t lease_ms, struct harness_grant *g)
{
	harness__send(file, line, c, "TRY %s lease=%lld\n", name,
	    (long long)lease_ms);
	harness__expect_granted(file, line, c, name, HARNESS_REPLY_TIMEOUT_MS,
	    g);
}

void
harness__status(const char *file, int line, struct harness_conn *c,
    const char *name, struct harness_status *st)
{
	const char *got;

	harness__send(file, line, c, "STATUS %s\n", name);
	got = harness__expect_prefix(file, line, c, "STATUS ");
	if (got != NULL && !harness_parse_status(got, st))
		failf(file, line, "malformed STATUS reply '%s'", shown(got));
}

void
harness__await_queue(const char *file, int line, struct harness_conn *c,
    const char *name, uint64_t queue)
{
	int64_t deadline = harness_now_ms() + HARNESS_REPLY_TIMEOUT_MS;
	struct harness_status st;

	for (;;) {
		harness__status(file, line, c, name, &st);
		if (st.queue == queue)
			return;
		if (harness_now_ms() >= deadline) {
			failf(file, line,
			    "STATUS %s: queue=%llu, expected %llu", name,
			    (unsigned long long)st.queue,
			    (unsigned long long)queue);
			return;
		}
		harness_sleep_ms(5);
	}
}

uint64_t
harness__stat(const char *file, int line, struct harness_conn *c,
    const char *key)
{
	struct proto_reply reply;
	struct proto_error err;
	char buf[HARNESS_LINE_MAX + 3];
	const char *got;
	uint64_t value = 0;
	size_t n, used;

	harness__send(file, line, c, "STATS\n");
	if ((got = harness__expect_prefix(file, line, c, "STATS ")) == NULL)
		return 0;
	n = (size_t)snprintf(buf, sizeof(buf), "%s\r\n", got);
	if (proto_parse_reply(buf, n, sizeof(buf), &reply, &used, &err) !=
	    PROTO_DONE || reply.kind != PROTO_REPLY_STATS) {
		failf(file, line, "malformed STATS reply '%s'", shown(got));
		return 0;
	}
	if (!proto_stats_get(reply.text, reply.text_len, key, &value))
		failf(file, line, "STATS has no numeric '%s=': '%s'", key,
		    shown(got));
	return value;
}

/* ---- parsing ------------------------------------------------------------ */

/* Runs proto_parse_reply over line + CRLF. */
static bool
parse_reply(const char *line, char *buf, size_t cap, struct proto_reply *r)
{
	struct proto_error err;
	size_t n, used;
	int len = snprintf(buf, cap, "%s\r\n", line);

	if (len < 0 || (size_t)len >= cap)
		return false;
	n = (size_t)len;
	return proto_parse_reply(buf, n, cap, r, &used, &err) == PROTO_DONE &&
	    used == n;
}

bool
harness_parse_granted(const char *line, struct harness_grant *g)
{
	char buf[1024];
	struct proto_reply r;
	size_t n;

	if (!parse_reply(line, buf, sizeof(buf), &r) ||
	    r.kind != PROTO_REPLY_GRANTED || r.name_len > PROTO_NAME_MAX)
		return false;
	memset(g, 0, sizeof(*g));
	memcpy(g->name, r.name, r.name_len);
	g->name[r.name_len] = '\0';
	g->fence = r.fence;
	g->lease_ms = r.lease_ms;
	n = proto_format_handle(g->handle, sizeof(g->handle) - 1, r.handle);
	if (n == 0)
		return false;
	g->handle[n] = '\0';
	/* The handle must carry the grant's fence, and be sent canonically. */
	return r.handle.fence == r.fence && strstr(line, g->handle) != NULL;
}

bool
harness_parse_status(const char *line, struct harness_status *st)
{
	char buf[1024];
	struct proto_reply r;

	if (!parse_reply(line, buf, sizeof(buf), &r) ||
	    r.kind != PROTO_REPLY_STATUS)
		return false;
	st->held = r.held;
	st->fence = r.fence;
	st->ttl_ms = r.ttl_ms;
	st->queue = r.queue;
	return true;
}

/* ---- lockd-faulty --------------------------------------------------------- */

static char faulty_saved_bin[4096];

int
harness_faulty_begin(const char *fault)
{
	const char *bin = getenv("LOCKD_REAL_BIN"), *was = getenv("LOCKD_BIN");
	char path[4096 + 32], *slash;

	snprintf(faulty_saved_bin, sizeof(faulty_saved_bin), "%s",
	    was != NULL ? was : "");
	if (bin == NULL || *bin == '\0')
		bin = was != NULL && *was != '\0' ? was : "build/lockd";
	snprintf(path, sizeof(path), "%s", bin);
	slash = strrchr(path, '/');
	snprintf(slash != NULL ? slash + 1 : path, 32, "tests/lockd-faulty");
	if (access(path, X_OK) != 0) {
		fprintf(stderr, "%s: not built (make %s)\n", path, path);
		return -1;
	}
	setenv("LOCKD_BIN", path, 1);
	setenv("LOCKD_FAULT", fault, 1);
	return 0;
}

void
harness_faulty_end(void)
{
	unsetenv("LOCKD_FAULT");
	if (faulty_saved_bin[0] != '\0')
		setenv("LOCKD_BIN", faulty_saved_bin, 1);
	else
		unsetenv("LOCKD_BIN");
}
