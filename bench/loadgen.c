/*
 * loadgen.c - closed-loop load generator for lockd: many connections on one
 * thread (epoll), each running one request cycle at a time, with exact
 * latency percentiles (every sample kept and sorted).  Bounded in cycles
 * and in time; talks only to the address it is given (loopback in every
 * use here).
 *
 *   loadgen -p PORT [-H 127.0.0.1] [-c CONNS] [-t SECONDS] [-n MAX_CYCLES]
 *           [-w cycle|handoff|try] [-P PREFIX]
 *
 * Workloads:
 *   cycle    each connection: ACQUIRE its own name, RELEASE it
 *   handoff  every connection: ACQUIRE one shared name, RELEASE it
 *   try      one connection holds a name; the others TRY it in a loop
 * Prints one line of key=value results.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/proto.h"

enum workload { W_CYCLE, W_HANDOFF, W_TRY };
enum phase { PH_ACQUIRE, PH_RELEASE, PH_TRY, PH_HOLD };

struct conn {
	int fd;
	int id;
	enum phase phase;
	char name[64];
	char handle[64];
	char in[4096];
	size_t in_len;
	double started;      /* this cycle's first send */
	double released_at;  /* handoff: when our release was answered */
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void
send_line(struct conn *c, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = write(c->fd, line + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		off += (size_t)n;
	}
}

static void
start(struct conn *c, enum workload w)
{
	char line[256];

	c->started = now_s();
	if (w == W_TRY && c->id != 0) {
		c->phase = PH_TRY;
		snprintf(line, sizeof(line), "TRY %s\n", c->name);
	} else {
		c->phase = PH_ACQUIRE;
		snprintf(line, sizeof(line), "ACQUIRE %s lease=60s\n", c->name);
	}
	send_line(c, line);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *prefix = "bench";
	int port = 0, nconns = 1, opt, ep, i, errors = 0;
	double seconds = 5, deadline, t0, elapsed;
	long max_cycles = 1000000, cycles = 0, handoffs = 0;
	enum workload w = W_CYCLE;
	struct epoll_event ev, events[256];
	struct sockaddr_in addr;
	struct conn *conns;
	double *lat, *gap;
	long ngap = 0;

	while ((opt = getopt(argc, argv, "H:p:c:t:n:w:P:")) != -1) {
		switch (opt) {
		case 'H': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': nconns = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'n': max_cycles = atol(optarg); break;
		case 'P': prefix = optarg; break;
		case 'w':
			w = strcmp(optarg, "handoff") == 0 ? W_HANDOFF :
			    strcmp(optarg, "try") == 0 ? W_TRY : W_CYCLE;
			break;
		default:
			fprintf(stderr, "usage: loadgen -p PORT [-H host] "
			    "[-c conns] [-t seconds] [-n max_cycles] "
			    "[-w cycle|handoff|try] [-P prefix]\n");
			return 2;
		}
	}
	if (port <= 0 || nconns <= 0 || max_cycles <= 0 || seconds <= 0) {
		fprintf(stderr, "loadgen: need -p PORT and positive bounds\n");
		return 2;
	}
	conns = calloc((size_t)nconns, sizeof(*conns));
	lat = malloc((size_t)max_cycles * sizeof(*lat));
	gap = malloc((size_t)max_cycles * sizeof(*gap));
	if (conns == NULL || lat == NULL || gap == NULL)
		die("malloc");
	if ((ep = epoll_create1(0)) < 0)
		die("epoll_create1");
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
		die("inet_pton");
	for (i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];
		int one = 1;

		c->id = i;
		if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
			die("socket");
		if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
			die("connect");
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (w == W_CYCLE)
			snprintf(c->name, sizeof(c->name), "%s/%d", prefix, i);
		else
			snprintf(c->name, sizeof(c->name), "%s/hot", prefix);
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
			die("epoll_ctl");
	}
	t0 = now_s();
	deadline = t0 + seconds;
	if (w == W_TRY) {
		/* Connection 0 takes the lock first and keeps it. */
		start(&conns[0], w);
	} else {
		for (i = 0; i < nconns; i++)
			start(&conns[i], w);
	}

	while (cycles < max_cycles && now_s() < deadline) {
		int n = epoll_wait(ep, events, 256, 100);

		for (i = 0; i < n && cycles < max_cycles; i++) {
			struct conn *c = events[i].data.ptr;
			ssize_t r = read(c->fd, c->in + c->in_len,
			    sizeof(c->in) - c->in_len);
			size_t pos = 0, used;

			if (r <= 0) {
				fprintf(stderr, "loadgen: connection %d "
				    "closed\n", c->id);
				return 1;
			}
			c->in_len += (size_t)r;
			for (;;) {
				struct proto_reply rep;
				struct proto_error err;
				enum proto_result pr;
				char line[256];
				double t = now_s();

				pr = proto_parse_reply(c->in + pos,
				    c->in_len - pos, sizeof(c->in), &rep,
				    &used, &err);
				if (pr == PROTO_PARTIAL)
					break;
				pos += used;
				if (pr != PROTO_DONE) {
					errors++;
					continue;
				}
				if (rep.kind == PROTO_REPLY_GRANTED) {
					proto_format_handle(c->handle,
					    sizeof(c->handle), rep.handle);
					c->handle[strcspn(c->handle, "\r\n")] =
					    '\0';
					if (w == W_TRY && c->id == 0) {
						c->phase = PH_HOLD;
						for (int j = 1; j < nconns; j++)
							start(&conns[j], w);
						continue;
					}
					if (w == W_HANDOFF && ngap < max_cycles &&
					    conns[0].released_at > 0) {
						/* release-to-next-grant */
						double last = 0;
						for (int j = 0; j < nconns; j++)
							if (conns[j].released_at >
							    last)
								last = conns[j].
								    released_at;
						gap[ngap++] = t - last;
					}
					c->phase = PH_RELEASE;
					snprintf(line, sizeof(line),
					    "RELEASE %s %s\n", c->name,
					    c->handle);
					send_line(c, line);
				} else if (rep.kind == PROTO_REPLY_RELEASED ||
				    rep.kind == PROTO_REPLY_HELD) {
					c->released_at = t;
					lat[cycles++] = t - c->started;
					if (w == W_HANDOFF)
						handoffs++;
					start(c, w);
				} else {
					errors++;
					start(c, w);
				}
			}
			memmove(c->in, c->in + pos, c->in_len - pos);
			c->in_len -= pos;
		}
	}
	elapsed = now_s() - t0;
	qsort(lat, (size_t)cycles, sizeof(*lat), cmp_double);
#define PCT(p) (cycles ? lat[(long)((double)(cycles - 1) * (p))] * 1e6 : 0)
	printf("workload=%s conns=%d cycles=%ld seconds=%.3f rate=%.1f "
	    "errors=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f "
	    "max_us=%.0f",
	    w == W_CYCLE ? "cycle" : w == W_HANDOFF ? "handoff" : "try",
	    nconns, cycles, elapsed, (double)cycles / elapsed, errors,
	    PCT(0.50), PCT(0.90), PCT(0.99), PCT(0.999),
	    cycles ? lat[cycles - 1] * 1e6 : 0);
	if (w == W_HANDOFF && ngap > 0) {
		qsort(gap, (size_t)ngap, sizeof(*gap), cmp_double);
		printf(" handoff_p50_us=%.0f handoff_p99_us=%.0f",
		    gap[ngap / 2] * 1e6, gap[(long)((double)(ngap - 1) * 0.99)] * 1e6);
	}
	printf("\n");
	for (i = 0; i < nconns; i++)
		close(conns[i].fd);
	free(conns);
	free(lat);
	free(gap);
	return errors ? 1 : 0;
}
