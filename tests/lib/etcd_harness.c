/*
 * etcd_harness.c - real etcd members for the tests (etcd_harness.h).  It
 * speaks to etcd only to ask /health, over a plain socket, so that it
 * needs nothing of lockd's etcd client, which is what the tests test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/etcd_harness.h"

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A loopback port nobody listens on now (bound, then closed). */
static int
free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* One HTTP/1.0 exchange with member i, its answer in buf: 0 or -1. */
static int
exchange(const struct etcd_cluster *c, int i, const char *ask, char *buf,
    size_t len)
{
	struct timeval tv = { 1, 0 };
	struct sockaddr_in sin;
	size_t got = 0, asked = strlen(ask);
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc = -1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)c->members[i].client_port);
	inet_pton(AF_INET, c->host[0] != '\0' ? c->host : "127.0.0.1",
	    &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(fd, ask, asked) == (ssize_t)asked) {
		while (got < len - 1 &&
		    (n = read(fd, buf + got, len - 1 - got)) > 0)
			got += (size_t)n;
		rc = 0;
	}
	buf[got] = '\0';
	close(fd);
	return rc;
}

bool
etcd_member_healthy(const struct etcd_cluster *c, int i)
{
	char buf[1024];

	return exchange(c, i, "GET /health HTTP/1.0\r\n\r\n", buf,
	    sizeof(buf)) == 0 && strstr(buf, "\"health\":\"true\"") != NULL;
}

int
etcd_cluster_post(const struct etcd_cluster *c, const char *path,
    const char *body, char *reply, size_t reply_len)
{
	char ask[1024], own[4096];
	char *buf = reply != NULL ? reply : own;
	size_t len = reply != NULL ? reply_len : sizeof(own);
	int i;

	snprintf(ask, sizeof(ask), "POST %s HTTP/1.0\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\n\r\n%s", path,
	    strlen(body), body);
	for (i = 0; i < c->n; i++)
		if (c->members[i].pid != 0)
			return exchange(c, i, ask, buf, len) == 0 &&
			    strncmp(buf, "HTTP/1.0 200", 12) == 0 ? 0 : -1;
	return -1;
}

static int
spawn_member(struct etcd_cluster *c, int i, const char *state)
{
	const char *bin = getenv("ETCD_BIN");
	struct etcd_member *m = &c->members[i];
	char name[16], data[128], client[96], peer[96], initial[1024], log[128];
	size_t used = 0;
	pid_t parent = getpid();
	int j;

	snprintf(name, sizeof(name), "m%d", i);
	snprintf(data, sizeof(data), "%s/%s", c->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", c->dir, name);
	snprintf(client, sizeof(client), "http://%s:%d", c->host,
	    m->client_port);
	snprintf(peer, sizeof(peer), "http://%s:%d", c->host, m->peer_port);
	initial[0] = '\0';
	for (j = 0; j < c->n; j++)
		used += (size_t)snprintf(initial + used, sizeof(initial) - used,
		    "%sm%d=http://%s:%d", j ? "," : "", j, c->host,
		    c->members[j].peer_port);
	{
		char *argv[] = { (char *)(bin != NULL ? bin : "/usr/bin/etcd"),
		    "--name", name, "--data-dir", data,
		    "--listen-client-urls", client,
		    "--advertise-client-urls", client,
		    "--listen-peer-urls", peer,
		    "--initial-advertise-peer-urls", peer,
		    "--initial-cluster", initial,
		    "--initial-cluster-state", (char *)state,
		    "--initial-cluster-token", c->dir,
		    "--log-outputs", "stderr", "--logger", "zap", NULL };
		fflush(stdout);
		fflush(stderr);
		m->pid = fork();
		if (m->pid < 0) {
			m->pid = 0;
			return -1;
		}
		if (m->pid == 0) {
			int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
			int in = open("/dev/null", O_RDONLY);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent || out < 0 || in < 0)
				_exit(126);
			dup2(in, 0);
			dup2(out, 1);
			dup2(out, 2);
			execv(argv[0], argv);
			_exit(127);
		}
	}
	return 0;
}

static int
wait_healthy(struct etcd_cluster *c, int i)
{
	long long deadline = now_ms() + ETCD_HARNESS_START_MS;
	int status;

	while (now_ms() < deadline) {
		if (waitpid(c->members[i].pid, &status, WNOHANG) ==
		    c->members[i].pid) {
			fprintf(stderr, "etcd member %d exited (status %d); "
			    "see %s/m%d.log\n", i, status, c->dir, i);
			c->members[i].pid = 0;
			return -1;
		}
		if (etcd_member_healthy(c, i))
			return 0;
		sleep_ms(50);
	}
	fprintf(stderr, "etcd member %d not healthy after %d ms\n", i,
	    ETCD_HARNESS_START_MS);
	return -1;
}

int
etcd_cluster_start(struct etcd_cluster *c, int n)
{
	return etcd_cluster_start_on(c, n, "127.0.0.1");
}

static int
start_once(struct etcd_cluster *c, int n, const char *host)
{
	const char *tmp = getenv("TMPDIR");
	size_t used = 0;
	int i;

	memset(c, 0, sizeof(*c));
	if (n < 1 || n > ETCD_HARNESS_MEMBERS)
		return -1;
	c->n = n;
	snprintf(c->host, sizeof(c->host), "%s", host);
	snprintf(c->dir, sizeof(c->dir), "%.40s/lockd-etcd-XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(c->dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct etcd_member *m = &c->members[i];
		m->client_port = free_port();
		m->peer_port = free_port();
		snprintf(m->client_url, sizeof(m->client_url),
		    "http://%s:%d", host, m->client_port);
		used += (size_t)snprintf(c->urls + used, sizeof(c->urls) - used,
		    "%s%s", i ? "," : "", m->client_url);
	}
	for (i = 0; i < n; i++)
		if (spawn_member(c, i, "new") != 0)
			goto fail;
	for (i = 0; i < n; i++)
		if (wait_healthy(c, i) != 0)
			goto fail;
	return 0;
fail:
	etcd_cluster_stop(c);
	return -1;
}

/*
 * free_port's port is free when it looks, not when etcd binds it: a
 * program beside this one (other tests on the machine) may take it in
 * between, and the member exits.  So a cluster that does not start is
 * started again on other ports, a bounded number of times.
 */
int
etcd_cluster_start_on(struct etcd_cluster *c, int n, const char *host)
{
	int attempt;

	for (attempt = 1; attempt <= ETCD_HARNESS_TRIES; attempt++) {
		if (start_once(c, n, host) == 0)
			return 0;
		if (attempt < ETCD_HARNESS_TRIES)
			fprintf(stderr, "etcd did not start (try %d of %d): "
			    "again, on other ports\n", attempt,
			    ETCD_HARNESS_TRIES);
	}
	return -1;
}

void
etcd_member_kill(struct etcd_cluster *c, int i)
{
	struct etcd_member *m = &c->members[i];
	long long deadline = now_ms() + 5000;
	int status;

	if (m->pid == 0)
		return;
	kill(m->pid, SIGKILL);
	while (waitpid(m->pid, &status, WNOHANG) == 0 && now_ms() < deadline)
		sleep_ms(5);
	m->pid = 0;
}

int
etcd_member_restart(struct etcd_cluster *c, int i)
{
	if (c->members[i].pid != 0)
		return 0;
	if (spawn_member(c, i, "existing") != 0)
		return -1;
	return 0;
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
etcd_cluster_stop(struct etcd_cluster *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		etcd_member_kill(c, i);
	if (c->dir[0] != '\0' && getenv("ETCD_HARNESS_KEEP") == NULL)
		nftw(c->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	c->dir[0] = '\0';
}
