/*
 * harness.c - starting lockd, a fake server and other programs for the
 * client tests, each with bounded waits; see harness.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "tests/client/harness.h"

#define START_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS 5000

#define WATCHDOG_SECONDS 120
#define MAX_LEFT 32

/*
 * What a test started or made and has not undone yet.  A failed check jumps
 * out of the test before its own clean-up, so the group teardown undoes
 * what is left here; children also die with this process (PDEATHSIG).
 */
static pid_t running[MAX_LEFT];
static char made[MAX_LEFT][HARNESS_PATH_MAX];

static void
remember_pid(pid_t pid)
{
	size_t i;

	for (i = 0; i < MAX_LEFT; i++)
		if (running[i] == 0) {
			running[i] = pid;
			return;
		}
}

static void
forget_pid(pid_t pid)
{
	size_t i;

	for (i = 0; i < MAX_LEFT; i++)
		if (running[i] == pid)
			running[i] = 0;
}

static void
remember_dir(const char *dir)
{
	size_t i;

	for (i = 0; i < MAX_LEFT; i++)
		if (made[i][0] == '\0') {
			snprintf(made[i], sizeof(made[i]), "%s", dir);
			return;
		}
}

static void
forget_dir(const char *dir)
{
	size_t i;

	for (i = 0; i < MAX_LEFT; i++)
		if (strcmp(made[i], dir) == 0)
			made[i][0] = '\0';
}

static void
cleanup_left(void)
{
	size_t i;

	for (i = 0; i < MAX_LEFT; i++) {
		if (running[i] > 0) {
			kill(running[i], SIGCONT);
			kill(running[i], SIGKILL);
			waitpid(running[i], NULL, 0);
			running[i] = 0;
		}
	}
	for (i = 0; i < MAX_LEFT; i++)
		if (made[i][0] != '\0')
			harness_remove_tree(made[i]);
}

void
harness_begin(void)
{
	const char *filter = getenv("TEST_FILTER");

	alarm(WATCHDOG_SECONDS);
	if (filter != NULL && *filter != '\0')
		cmocka_set_test_filter(filter);
}

int64_t
harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
harness_sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
	    .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

const char *
harness_program(const char *name)
{
	static char paths[4][HARNESS_PATH_MAX];
	static int next;
	char self[HARNESS_PATH_MAX], *env_name, *dir;
	char *path = paths[next++ % 4];
	ssize_t n;
	size_t i;

	/* LOCKD_BIN, LOCKCTL_BIN, ... override; else $(B)/tests/.. */
	snprintf(self, sizeof(self), "%s_BIN", name);
	for (i = 0; self[i] != '\0'; i++)
		self[i] = (char)(self[i] >= 'a' && self[i] <= 'z' ?
		    self[i] - 'a' + 'A' : self[i] == '/' ? '_' : self[i]);
	if ((env_name = getenv(self)) != NULL && *env_name != '\0') {
		snprintf(path, HARNESS_PATH_MAX, "%s", env_name);
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

void
harness_temp_dir(char *dir, size_t size)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, size, "%s/lockd-client-test.XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	remember_dir(dir);
}

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

void
harness_remove_tree(const char *dir)
{
	char copy[HARNESS_PATH_MAX];

	if (dir[0] == '\0')
		return;
	snprintf(copy, sizeof(copy), "%s", dir);
	nftw(copy, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	forget_dir(copy);
}

bool
harness_read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (size > 0)
		buf[0] = '\0';
	if (f == NULL)
		return false;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return true;
}

bool
harness_wait_for_file(const char *path, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	struct stat st;

	do {
		if (stat(path, &st) == 0 && st.st_size > 0)
			return true;
		harness_sleep_ms(5);
	} while (harness_now_ms() < deadline);
	return false;
}

static void
redirect(const char *path, int fd)
{
	int f = open(path != NULL ? path : "/dev/null",
	    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (f < 0 || dup2(f, fd) < 0)
		_exit(125);
	close(f);
}

pid_t
harness_spawn(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* Nothing a test starts outlives the test program. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		redirect(out_path, STDOUT_FILENO);
		redirect(err_path, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int
harness_wait(pid_t pid, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	int status;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return WIFSIGNALED(status) ? 128 + WTERMSIG(status) :
			    WEXITSTATUS(status);
		if (r < 0 && errno != EINTR)
			return -1;
		if (harness_now_ms() >= deadline)
			return -1;
		harness_sleep_ms(2);
	}
}

int
harness_run(char *const argv[], int64_t timeout_ms, char *out,
    size_t out_size, char *err, size_t err_size)
{
	char dir[HARNESS_PATH_MAX], out_path[HARNESS_PATH_MAX + 8],
	    err_path[HARNESS_PATH_MAX + 8];
	pid_t pid;
	int rc;

	harness_temp_dir(dir, sizeof(dir));
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	snprintf(err_path, sizeof(err_path), "%s/err", dir);
	pid = harness_spawn(argv, out_path, err_path);
	rc = harness_wait(pid, timeout_ms);
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
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

/* Finds "listening on 127.0.0.1:PORT" in lockd's log. */
static int
find_port(const char *log_path)
{
	char log[16384], *at;
	int port;

	if (!harness_read_file(log_path, log, sizeof(log)))
		return 0;
	at = strstr(log, "listening on 127.0.0.1:");
	if (at == NULL || sscanf(at, "listening on 127.0.0.1:%d", &port) != 1)
		return 0;
	return port;
}

int
harness_server_start(struct harness_server *s)
{
	char data[HARNESS_PATH_MAX + 8], log[HARNESS_PATH_MAX + 16],
	    listen_at[64];
	const char *argv[64];
	int64_t deadline;
	size_t n = 0, i;

	if (s->dir[0] == '\0')
		harness_temp_dir(s->dir, sizeof(s->dir));
	snprintf(data, sizeof(data), "%s/data", s->dir);
	snprintf(log, sizeof(log), "%s/lockd.log", s->dir);
	mkdir(data, 0700);
	unlink(log);
	snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", s->port);
	argv[n++] = harness_program("lockd");
	argv[n++] = "--listen";
	argv[n++] = listen_at;
	argv[n++] = "--data-dir";
	argv[n++] = data;
	if (s->with_unix) {
		snprintf(s->unix_path, sizeof(s->unix_path), "%.90s/sock",
		    s->dir);
		argv[n++] = "--unix";
		argv[n++] = s->unix_path;
	}
	for (i = 0; s->extra_args != NULL && s->extra_args[i] != NULL &&
	    n < 62; i++)
		argv[n++] = s->extra_args[i];
	argv[n] = NULL;

	s->pid = harness_spawn((char *const *)argv, NULL, log);
	remember_pid(s->pid);
	deadline = harness_now_ms() + START_TIMEOUT_MS;
	while (harness_now_ms() < deadline) {
		int port = find_port(log);

		if (port > 0) {
			s->port = port;
			return 0;
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			forget_pid(s->pid);
			s->pid = 0;
			return -1;
		}
		harness_sleep_ms(5);
	}
	harness_server_stop(s);
	return -1;
}

struct harness_server harness_shared = { .with_unix = true };
char harness_shared_port[16];

int
harness_shared_setup(void **state)
{
	(void)state;
	if (harness_server_start(&harness_shared) != 0)
		return -1;
	snprintf(harness_shared_port, sizeof(harness_shared_port), "%d",
	    harness_shared.port);
	return 0;
}

int
harness_shared_teardown(void **state)
{
	(void)state;
	harness_server_destroy(&harness_shared);
	cleanup_left();
	return 0;
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

void
harness_server_stop(struct harness_server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGCONT);
	kill(s->pid, SIGTERM);
	if (harness_wait(s->pid, STOP_TIMEOUT_MS) < 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	forget_pid(s->pid);
	s->pid = 0;
}

void
harness_server_kill(struct harness_server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	forget_pid(s->pid);
	s->pid = 0;
}

void
harness_server_destroy(struct harness_server *s)
{
	harness_server_stop(s);
	harness_remove_tree(s->dir);
	s->dir[0] = '\0';
}

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
harness_fake_start(struct harness_fake *f, const char *const *replies,
    size_t count)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char dir[HARNESS_PATH_MAX];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 4) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
		return -1;
	f->port = ntohs(sin.sin_port);
	harness_temp_dir(dir, sizeof(dir));
	snprintf(f->received, sizeof(f->received), "%.480s/received", dir);
	f->pid = fork();
	if (f->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fake_serve(fd, f->received, replies, count);
	}
	close(fd);
	if (f->pid > 0)
		remember_pid(f->pid);
	return f->pid > 0 ? 0 : -1;
}

void
harness_fake_stop(struct harness_fake *f)
{
	char dir[HARNESS_PATH_MAX];

	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		forget_pid(f->pid);
		f->pid = 0;
	}
	snprintf(dir, sizeof(dir), "%s", f->received);
	harness_remove_tree(dirname(dir));
}
