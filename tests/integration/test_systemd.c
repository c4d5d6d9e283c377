/*
 * test_systemd.c - lockd as a systemd service: with NOTIFY_SOCKET set it
 * sends READY=1 only once it listens, and STOPPING=1 on SIGTERM; with a
 * listening socket passed as LISTEN_FDS/LISTEN_PID (socket activation) it
 * serves on that socket instead of binding its own, warns about the
 * configured addresses it ignores, and leaves a passed Unix socket's path
 * in place.  The notify socket is a datagram socket this test owns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/harness.h"

static const char *
lockd_bin(void)
{
	const char *b = getenv("LOCKD_BIN");

	return b != NULL ? b : "build/lockd";
}

/* A datagram socket at dir/notify; returns its fd. */
static int
notify_socket(const char *dir, char *path, size_t path_len)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(path, path_len, "%s/notify", dir);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return fd;
}

/* Waits at most ms for a datagram; returns it NUL-terminated or NULL. */
static const char *
receive(int fd, int ms)
{
	static char buf[1024];
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return NULL;
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

/* A listening TCP socket on 127.0.0.1, port 0; returns fd and port. */
static int
listener(int *port)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, 16), 0);
	getsockname(fd, (struct sockaddr *)&addr, &len);
	*port = ntohs(addr.sin_port);
	return fd;
}

static bool
can_connect(int port)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
	close(fd);
	return rc == 0;
}

/* A listening Unix socket at path; returns its fd. */
static int
unix_listener(const char *path)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(addr.sun_path));
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, 16), 0);
	return fd;
}

static bool
log_contains(const char *dir, const char *needle)
{
	char path[256], buf[16384];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/log", dir);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/*
 * Starts lockd with the given notify socket path (or NULL) and listening
 * fd to pass as fd 3 (or -1), logging to dir/log, with --listen and, when
 * not NULL, --unix.
 */
static pid_t
spawn_unix(const char *dir, const char *notify, int pass_fd,
    const char *listen, const char *unix_path)
{
	char data[256], logp[256];
	pid_t pid;

	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(logp, sizeof(logp), "%s/log", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int log = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0600);
		char pidbuf[32];

		/* Dies with the test, whatever happens to it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(log, 2);
		dup2(log, 1);
		if (notify != NULL)
			setenv("NOTIFY_SOCKET", notify, 1);
		if (pass_fd >= 0) {
			dup2(pass_fd, 3);
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
			setenv("LISTEN_PID", pidbuf, 1);
			setenv("LISTEN_FDS", "1", 1);
		}
		/* The smallest journal, as the harness's lockds have. */
		if (unix_path != NULL)
			execl(lockd_bin(), "lockd", "--data-dir", data,
			    "--journal-size", "65536", "--listen", listen,
			    "--unix", unix_path, (char *)NULL);
		else
			execl(lockd_bin(), "lockd", "--data-dir", data,
			    "--journal-size", "65536", "--listen", listen,
			    (char *)NULL);
		_exit(127);
	}
	return pid;
}

static pid_t
spawn(const char *dir, const char *notify, int pass_fd, const char *listen)
{
	return spawn_unix(dir, notify, pass_fd, listen, NULL);
}

static int
stop(pid_t pid)
{
	int status, i;

	kill(pid, SIGTERM);
	for (i = 0; i < 500 * harness_slow(); i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		harness_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static int
port_from_log(const char *dir)
{
	char path[256], buf[8192];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/log", dir);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strstr(buf, "listening on 127.0.0.1:");
	return p ? atoi(p + strlen("listening on 127.0.0.1:")) : -1;
}

static void
test_systemd_ready_is_sent_once_listening_and_stopping_on_sigterm(
    void **state)
{
	const char *dir = harness_tempdir(), *msg;
	char path[256];
	int fd = notify_socket(dir, path, sizeof(path)), port;
	pid_t pid = spawn(dir, path, -1, "127.0.0.1:0");

	(void)state;
	msg = receive(fd, 5000);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "READY=1"));
	assert_non_null(strstr(msg, "STATUS="));
	/* READY means it listens: the port is in the log and connectable. */
	port = port_from_log(dir);
	assert_true(port > 0);
	assert_true(can_connect(port));
	kill(pid, SIGTERM);
	msg = receive(fd, 5000);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "STOPPING=1"));
	assert_int_equal(stop(pid), 0);
	close(fd);
}

static void
test_systemd_socket_activation_serves_on_the_passed_socket(void **state)
{
	const char *dir = harness_tempdir(), *msg;
	char path[256];
	int port, lfd = listener(&port);
	int nfd = notify_socket(dir, path, sizeof(path));
	struct harness_server fake;
	struct harness_conn *c;
	pid_t pid;

	(void)state;
	/* --listen names a port nobody listens on: the passed socket wins. */
	pid = spawn(dir, path, lfd, "127.0.0.1:0");
	close(lfd);
	msg = receive(nfd, 5000);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "READY=1"));
	memset(&fake, 0, sizeof(fake));
	fake.port = port;
	c = harness_connect(&fake);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_send(c, "TRY activated\n");
	harness_expect_granted(c, "activated", NULL);
	harness_close(c);
	assert_int_equal(stop(pid), 0);
	close(nfd);
}

/*
 * With sockets passed, the socket unit owns the addresses: lockd says in
 * its log which configured ones it does not serve, and at its stop leaves
 * the passed Unix socket's path alone (it is systemd's, which keeps
 * listening on it for the next start).
 */
static void
test_systemd_passed_sockets_override_configured_ones_with_a_warning(
    void **state)
{
	const char *dir = harness_tempdir(), *msg;
	char path[256], sock[256], other[256];
	int nfd = notify_socket(dir, path, sizeof(path)), lfd;
	struct harness_conn *c;
	struct stat st;
	pid_t pid;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/passed.sock", dir);
	snprintf(other, sizeof(other), "%s/other.sock", dir);
	lfd = unix_listener(sock);
	/* --unix names the passed socket (served), --listen another
	 * address (not served). */
	pid = spawn_unix(dir, path, lfd, "127.0.0.1:0", sock);
	msg = receive(nfd, 5000);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "READY=1"));
	assert_true(log_contains(dir, "level=warn event=listen_ignored "
	    "addr=127.0.0.1:0 "));
	assert_false(log_contains(dir, "event=listen_ignored unix="));
	assert_false(log_contains(dir, "listening on 127.0.0.1:"));
	c = harness_connect_unix(sock);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_close(c);
	assert_int_equal(stop(pid), 0);
	assert_int_equal(stat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));

	/* A --unix that is not the passed socket is not made, and said. */
	pid = spawn_unix(dir, path, lfd, "127.0.0.1:0", other);
	close(lfd);
	/* The first run's STOPPING=1 may still be queued. */
	for (int i = 0; i < 3; i++)
		if ((msg = receive(nfd, 5000)) == NULL ||
		    strstr(msg, "READY=1") != NULL)
			break;
	assert_non_null(msg);
	assert_non_null(strstr(msg, "READY=1"));
	assert_true(log_contains(dir, "level=warn event=listen_ignored "
	    "unix="));
	assert_int_not_equal(access(other, F_OK), 0);
	assert_int_equal(stop(pid), 0);
	assert_int_equal(stat(sock, &st), 0);
	close(nfd);
}

/*
 * A configured listen equal to the passed socket's address is served, not
 * ignored: lockd starts (it does not try to bind the address systemd
 * holds) and says nothing.
 */
static void
test_systemd_listen_equal_to_the_passed_socket_is_served(void **state)
{
	const char *dir = harness_tempdir(), *msg;
	char path[256], addr[64];
	int port, lfd = listener(&port);
	int nfd = notify_socket(dir, path, sizeof(path));
	struct harness_server fake;
	struct harness_conn *c;
	pid_t pid;

	(void)state;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	pid = spawn(dir, path, lfd, addr);
	close(lfd);
	msg = receive(nfd, 5000);
	if (msg == NULL || strstr(msg, "READY=1") == NULL)
		fail_msg("lockd did not start with --listen %s passed", addr);
	memset(&fake, 0, sizeof(fake));
	fake.port = port;
	c = harness_connect(&fake);
	harness_send(c, "PING\n");
	harness_expect_line(c, "PONG");
	harness_close(c);
	assert_false(log_contains(dir, "listen_ignored"));
	assert_int_equal(stop(pid), 0);
	close(nfd);
}

/* Without passed sockets nothing is overridden and nothing is said. */
static void
test_systemd_no_warning_without_passed_sockets(void **state)
{
	const char *dir = harness_tempdir();
	char sock[256];
	pid_t pid;
	int i;

	(void)state;
	snprintf(sock, sizeof(sock), "%s/own.sock", dir);
	pid = spawn_unix(dir, NULL, -1, "127.0.0.1:0", sock);
	for (i = 0; i < 500 && port_from_log(dir) <= 0; i++)
		harness_sleep_ms(10);
	assert_true(port_from_log(dir) > 0);
	assert_false(log_contains(dir, "listen_ignored"));
	assert_int_equal(stop(pid), 0);
	/* Its own socket it removes. */
	assert_int_not_equal(access(sock, F_OK), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_systemd_ready_is_sent_once_listening_and_stopping_on_sigterm),
		HARNESS_TEST(test_systemd_socket_activation_serves_on_the_passed_socket),
		HARNESS_TEST(
		    test_systemd_passed_sockets_override_configured_ones_with_a_warning),
		HARNESS_TEST(test_systemd_no_warning_without_passed_sockets),
		HARNESS_TEST(
		    test_systemd_listen_equal_to_the_passed_socket_is_served),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
