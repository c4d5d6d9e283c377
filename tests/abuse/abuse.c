/*
 * abuse.c - helpers of the abuse tests; see abuse.h.  May open sockets and
 * read /proc; must not include anything of daemon/ and never waits without
 * a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/abuse/abuse.h"
#include "tests/lib/harness.h"

#define MAX_SWARMS 16
#define CONNECT_WAVE 256   /* connects in flight at once */

/* The peers of every open swarm (the swarm structs may live on a test's
 * stack, gone by teardown). */
static struct {
	struct abuse_peer *peers;
	int n;
} swarms[MAX_SWARMS];

int
abuse_scale(void)
{
	const char *env = getenv("ABUSE_SCALE");
	int scale = env != NULL ? atoi(env) : 1;

	return scale >= 1 && scale <= 64 ? scale : 1;
}

long
abuse_raise_fd_limit(long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	if (rl.rlim_cur == RLIM_INFINITY || (long)rl.rlim_cur >= want)
		return rl.rlim_cur == RLIM_INFINITY ? want : (long)rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
	    (long)rl.rlim_max >= want ? (rlim_t)want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	return (long)rl.rlim_cur;
}

long
abuse_proc_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			kib = strtol(line + flen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

long long
abuse_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

bool
abuse_runs_asan(pid_t pid)
{
	char path[64], line[512];
	bool asan = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (!asan && fgets(line, sizeof(line), f) != NULL)
		asan = strstr(line, "libasan") != NULL;
	fclose(f);
	return asan;
}

bool
abuse_alive(pid_t pid)
{
	char path[64], line[256];
	bool alive = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "State:", 6) == 0) {
			alive = strchr(line, 'Z') == NULL &&
			    strchr(line, 'X') == NULL;
			break;
		}
	fclose(f);
	return alive;
}

/* ---- swarms ----------------------------------------------------------- */

static void
close_peers(struct abuse_peer *peers, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (peers[i].fd >= 0)
			close(peers[i].fd);
	free(peers);
}

static void
swarm_register(struct abuse_swarm *sw)
{
	int i;

	for (i = 0; i < MAX_SWARMS; i++)
		if (swarms[i].peers == NULL) {
			swarms[i].peers = sw->peers;
			swarms[i].n = sw->n;
			return;
		}
}

/* Starts a non-blocking connect; returns the socket or -1. */
static int
connect_start(int port)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits for the connects of peers [from, to) to finish; a connect that
 * failed or is still in flight at the deadline leaves its peer closed. */
static void
connect_finish(struct abuse_swarm *sw, int from, int to, int64_t deadline)
{
	int count = to - from, i;
	struct pollfd *pfd = calloc((size_t)count, sizeof(*pfd));
	bool *pending = calloc((size_t)count, sizeof(*pending));
	int left = 0;

	if (pfd == NULL || pending == NULL)
		goto out;
	for (i = 0; i < count; i++)
		if (sw->peers[from + i].fd >= 0) {
			pending[i] = true;
			left++;
		}
	while (left > 0 && harness_now_ms() < deadline) {
		int64_t wait = deadline - harness_now_ms();

		for (i = 0; i < count; i++) {
			pfd[i].fd = pending[i] ? sw->peers[from + i].fd : -1;
			pfd[i].events = POLLOUT;
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)count, (int)(wait > 0 ? wait : 0)) <= 0)
			continue;
		for (i = 0; i < count; i++) {
			struct abuse_peer *p = &sw->peers[from + i];
			socklen_t len = sizeof(int);
			int err = 0;

			if (!pending[i] || pfd[i].revents == 0)
				continue;
			pending[i] = false;
			left--;
			getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			if (err != 0) {
				close(p->fd);
				p->fd = -1;
			}
		}
	}
out:
	for (i = 0; i < count; i++)
		if (pending == NULL || pending[i]) {
			if (sw->peers[from + i].fd >= 0)
				close(sw->peers[from + i].fd);
			sw->peers[from + i].fd = -1;
		}
	free(pfd);
	free(pending);
}

int
abuse__swarm_open(const char *file, int line, struct abuse_swarm *sw,
    int port, int n, int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	int i, from, connected = 0;

	memset(sw, 0, sizeof(*sw));
	if ((sw->peers = calloc((size_t)n, sizeof(*sw->peers))) == NULL) {
		print_error("%s:%d: out of memory\n", file, line);
		_fail(file, line);
		return 0;
	}
	sw->n = n;
	for (i = 0; i < n; i++)
		sw->peers[i].fd = -1;
	swarm_register(sw);
	for (from = 0; from < n; from += CONNECT_WAVE) {
		int to = from + CONNECT_WAVE < n ? from + CONNECT_WAVE : n;
		for (i = from; i < to; i++)
			sw->peers[i].fd = connect_start(port);
		connect_finish(sw, from, to, deadline);
	}
	for (i = 0; i < n; i++)
		if (sw->peers[i].fd >= 0)
			connected++;
	return connected;
}

ssize_t
abuse_peer_send(struct abuse_peer *p, const void *data, size_t len,
    int64_t timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	const char *d = data;
	size_t sent = 0;

	if (p->fd < 0)
		return -1;
	while (sent < len) {
		ssize_t n = send(p->fd, d + sent, len - sent,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (harness_now_ms() >= deadline)
			break;
		{
			struct pollfd q = { p->fd, POLLOUT, 0 };
			poll(&q, 1, 10);
		}
	}
	return (ssize_t)sent;
}

static void
keep_line(char *dst, size_t cap, const char *line, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, line, len);
	dst[len] = '\0';
}

/* Reads what peer i has; returns false when it reached end of stream. */
static bool
peer_pump(struct abuse_swarm *sw, int i, void (*check)(void *, int,
    const char *, size_t), void *ctx)
{
	struct abuse_peer *p = &sw->peers[i];

	for (;;) {
		ssize_t n;
		char *lf;

		if (p->len == sizeof(p->buf)) {
			/* A line longer than any reply: keep counting. */
			p->len = 0;
		}
		n = recv(p->fd, p->buf + p->len, sizeof(p->buf) - p->len,
		    MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			p->eof = true;
			return false;
		}
		if (n < 0)
			return true;
		p->len += (size_t)n;
		while ((lf = memchr(p->buf, '\n', p->len)) != NULL) {
			size_t used = (size_t)(lf - p->buf) + 1;
			size_t keep = used - 1;

			if (keep > 0 && p->buf[keep - 1] == '\r')
				keep--;
			if (p->lines == 0)
				keep_line(p->first, sizeof(p->first), p->buf,
				    keep);
			keep_line(p->last, sizeof(p->last), p->buf, keep);
			p->lines++;
			if (check != NULL)
				check(ctx, i, p->buf, used);
			memmove(p->buf, p->buf + used, p->len - used);
			p->len -= used;
		}
	}
}

int
abuse_swarm_read(struct abuse_swarm *sw, uint32_t want_lines,
    int64_t timeout_ms, void (*check)(void *ctx, int peer, const char *line,
        size_t len), void *ctx)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	struct pollfd *pfd = calloc((size_t)sw->n, sizeof(*pfd));
	int i, done = 0;

	if (pfd == NULL)
		return 0;
	for (;;) {
		int waiting = 0;
		int64_t left;

		done = 0;
		for (i = 0; i < sw->n; i++) {
			struct abuse_peer *p = &sw->peers[i];
			pfd[i].fd = -1;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
			if (p->lines >= want_lines) {
				done++;
				continue;
			}
			if (p->fd < 0 || p->eof)
				continue;
			pfd[i].fd = p->fd;
			waiting++;
		}
		left = deadline - harness_now_ms();
		if (waiting == 0 || left <= 0)
			break;
		if (poll(pfd, (nfds_t)sw->n, (int)left) <= 0)
			continue;
		for (i = 0; i < sw->n; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents != 0)
				peer_pump(sw, i, check, ctx);
	}
	free(pfd);
	return done;
}

int
abuse_swarm_await_eof(struct abuse_swarm *sw, int64_t timeout_ms)
{
	int i, eof = 0;

	abuse_swarm_read(sw, UINT32_MAX, timeout_ms, NULL, NULL);
	for (i = 0; i < sw->n; i++)
		if (sw->peers[i].fd >= 0 && sw->peers[i].eof)
			eof++;
	return eof;
}

void
abuse_swarm_close(struct abuse_swarm *sw)
{
	int i;

	for (i = 0; i < MAX_SWARMS; i++)
		if (sw->peers != NULL && swarms[i].peers == sw->peers)
			swarms[i].peers = NULL;
	if (sw->peers != NULL)
		close_peers(sw->peers, sw->n);
	memset(sw, 0, sizeof(*sw));
}

int
abuse_teardown(void **state)
{
	int i;

	for (i = 0; i < MAX_SWARMS; i++)
		if (swarms[i].peers != NULL) {
			close_peers(swarms[i].peers, swarms[i].n);
			swarms[i].peers = NULL;
		}
	return harness_teardown(state);
}
