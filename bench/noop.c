/*
 * noop.c - the ceiling of the benchmark: a line server with lockd's framing
 * and no lock at all.  One thread, epoll, non-blocking sockets.  It answers
 * ACQUIRE with a fixed GRANTED line (only the name echoed), RELEASE with
 * RELEASED, TRY with HELD and PING with PONG, at once: no table, no disk.
 * Whatever lockd spends beyond this on the same cycle is the lock's own
 * cost.  It may not do anything else: it keeps no state beyond each
 * connection's buffers.
 *
 *   noop [--listen 127.0.0.1:PORT] [--max-seconds S]
 *
 * Port 0 picks a free port; the bound address is logged on stderr as
 * "listening on HOST:PORT", as lockd does.  It stops on SIGTERM or SIGINT,
 * or by itself after --max-seconds (default 3600), so a forgotten one does
 * not run on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NOOP_LINE_MAX 4096      /* as lockd's default --max-line */
#define NOOP_IN_CAP (NOOP_LINE_MAX + 2)

struct noop_conn {
	int fd;
	bool want_out;
	size_t in_len, out_len, out_cap;
	char *out;
	char in[NOOP_IN_CAP];
};

static volatile sig_atomic_t noop_stop;

static void
noop_on_signal(int sig)
{
	(void)sig;
	noop_stop = 1;
}

static void
noop_die(const char *what)
{
	perror(what);
	exit(1);
}

static void
noop_append(struct noop_conn *c, const char *s, size_t len)
{
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 1024;
		char *nb;

		while (cap < c->out_len + len)
			cap *= 2;
		if ((nb = realloc(c->out, cap)) == NULL)
			noop_die("realloc");
		c->out = nb;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out_len += len;
}

/* Answers one request line (without its LF). */
static void
noop_answer(struct noop_conn *c, const char *line, size_t len)
{
	char reply[512];
	const char *cmd, *name;
	size_t cmd_len, name_len;
	int n;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	cmd = line;
	cmd_len = strcspn(cmd, " \t\n");
	if (cmd_len > len)
		cmd_len = len;
	if (cmd_len == 0)
		return;
	name = cmd + cmd_len;
	name += strspn(name, " \t");
	name_len = (size_t)(line + len - name);
	name_len = strcspn(name, " \t\n") < name_len ?
	    strcspn(name, " \t\n") : name_len;
	if (name_len > 255)
		name_len = 255;
	if (cmd_len == 7 && strncasecmp(cmd, "ACQUIRE", 7) == 0)
		n = snprintf(reply, sizeof(reply), "GRANTED %.*s fence=1 "
		    "handle=1-0123456789abcdef lease=60000\r\n", (int)name_len,
		    name);
	else if (cmd_len == 7 && strncasecmp(cmd, "RELEASE", 7) == 0)
		n = snprintf(reply, sizeof(reply), "RELEASED %.*s\r\n",
		    (int)name_len, name);
	else if (cmd_len == 3 && strncasecmp(cmd, "TRY", 3) == 0)
		n = snprintf(reply, sizeof(reply), "HELD %.*s\r\n",
		    (int)name_len, name);
	else if (cmd_len == 4 && strncasecmp(cmd, "PING", 4) == 0)
		n = snprintf(reply, sizeof(reply), "PONG\r\n");
	else
		n = snprintf(reply, sizeof(reply), "ERR BADREQ noop knows "
		    "ACQUIRE, RELEASE, TRY and PING\r\n");
	noop_append(c, reply, (size_t)n);
}

static void
noop_close(int ep, struct noop_conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	free(c);
}

static void
noop_arm(int ep, struct noop_conn *c, bool want_out)
{
	struct epoll_event ev;

	if (c->want_out == want_out)
		return;
	ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0);
	ev.data.ptr = c;
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_out = want_out;
}

/* Writes what it can; false when the connection is gone. */
static bool
noop_flush(int ep, struct noop_conn *c)
{
	size_t off = 0;

	while (off < c->out_len) {
		ssize_t n = send(c->fd, c->out + off, c->out_len - off,
		    MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return false;
		}
		off += (size_t)n;
	}
	memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off;
	noop_arm(ep, c, c->out_len > 0);
	return true;
}

/* Reads, answers every whole line; false when the connection is gone. */
static bool
noop_read(int ep, struct noop_conn *c)
{
	for (;;) {
		size_t pos = 0;
		char *lf;
		ssize_t r = read(c->fd, c->in + c->in_len,
		    sizeof(c->in) - c->in_len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0)
			return false;
		c->in_len += (size_t)r;
		while ((lf = memchr(c->in + pos, '\n', c->in_len - pos))
		    != NULL) {
			noop_answer(c, c->in + pos, (size_t)(lf - c->in) - pos);
			pos = (size_t)(lf - c->in) + 1;
		}
		if (pos == 0 && c->in_len == sizeof(c->in)) {
			/* An overlong line: answer, drop what we have. */
			noop_append(c, "ERR TOOLONG line too long\r\n", 27);
			pos = c->in_len;
		}
		memmove(c->in, c->in + pos, c->in_len - pos);
		c->in_len -= pos;
		if ((size_t)r < sizeof(c->in))
			break;
	}
	return noop_flush(ep, c);
}

int
main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	double max_seconds = 3600;
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	struct epoll_event ev, events[256];
	struct sigaction sa;
	char host[64], *colon;
	int lfd, ep, one = 1, i;
	time_t end;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
			listen_at = argv[++i];
		else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc)
			max_seconds = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: noop [--listen HOST:PORT] "
			    "[--max-seconds S]\n");
			return 2;
		}
	}
	snprintf(host, sizeof(host), "%s", listen_at);
	if ((colon = strrchr(host, ':')) == NULL) {
		fprintf(stderr, "noop: --listen wants HOST:PORT\n");
		return 2;
	}
	*colon = '\0';
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
		fprintf(stderr, "noop: bad address %s\n", host);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = noop_on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0)
		noop_die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(lfd, 1024) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0)
		noop_die("listen");
	inet_ntop(AF_INET, &addr.sin_addr, host, sizeof(host));
	fprintf(stderr, "noop: pid=%d listening on %s:%d\n", (int)getpid(),
	    host, ntohs(addr.sin_port));
	if ((ep = epoll_create1(0)) < 0)
		noop_die("epoll_create1");
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	end = time(NULL) + (time_t)max_seconds;

	while (!noop_stop && time(NULL) < end) {
		int n = epoll_wait(ep, events, 256, 1000);

		if (n < 0 && errno != EINTR)
			noop_die("epoll_wait");
		for (i = 0; i < n; i++) {
			struct noop_conn *c = events[i].data.ptr;

			if (c == NULL) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL,
				    SOCK_NONBLOCK)) >= 0) {
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY,
					    &one, sizeof(one));
					if ((c = calloc(1, sizeof(*c))) == NULL)
						noop_die("calloc");
					c->fd = fd;
					ev.events = EPOLLIN;
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			if ((events[i].events & EPOLLOUT) && !noop_flush(ep, c)) {
				noop_close(ep, c);
				continue;
			}
			if ((events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			    && !noop_read(ep, c))
				noop_close(ep, c);
		}
	}
	fprintf(stderr, "noop: stopped\n");
	return 0;
}
