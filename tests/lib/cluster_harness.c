/*
 * cluster_harness.c - a lockd cluster on a real etcd for the client
 * fail-over tests (cluster_harness.h).  It speaks raw protocol through
 * harness.h only, never through the clients those tests test.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "tests/lib/certs.h"
#include "tests/lib/cluster_harness.h"

/* The group's etcd, when cluster_harness_group_setup started one. */
static struct etcd_cluster group_etcd;
static bool group_etcd_running;
static int group_clusters;         /* names handed out on it */

int
cluster_harness_group_setup(void **state)
{
	(void)state;
	if (etcd_cluster_start(&group_etcd, 3) != 0)
		return -1;
	group_etcd_running = true;
	return 0;
}

int
cluster_harness_group_teardown(void **state)
{
	(void)state;
	if (group_etcd_running)
		etcd_cluster_stop(&group_etcd);
	group_etcd_running = false;
	return 0;
}

void
cluster_harness_start(struct cluster_harness *c, int n, const char *name,
    const char *auth)
{
	char path[HARNESS_PATH_MAX];
	size_t len = 0;
	FILE *f;
	int i;

	assert_true(n >= 1 && n <= CLUSTER_HARNESS_NODES);
	memset(c->nodes, 0, sizeof(c->nodes));
	c->shared = group_etcd_running;
	if (c->shared) {
		c->etcd = group_etcd;
		snprintf(c->name, sizeof(c->name), "%s%d", name,
		    ++group_clusters);
	} else {
		assert_int_equal(etcd_cluster_start(&c->etcd, 3), 0);
		snprintf(c->name, sizeof(c->name), "%s", name);
	}
	name = c->name;
	c->endpoints[0] = '\0';
	for (i = 0; i < n; i++) {
		c->nodes[i] = harness_server_new();
		if (auth != NULL) {
			snprintf(path, sizeof(path), "%s/auth",
			    c->nodes[i]->dir);
			assert_non_null(f = fopen(path, "w"));
			fputs(auth, f);
			fclose(f);
			harness_server_start(c->nodes[i], "--etcd",
			    c->etcd.urls, "--cluster", name, "--auth", path,
			    NULL);
		} else {
			harness_server_start(c->nodes[i], "--etcd",
			    c->etcd.urls, "--cluster", name, NULL);
		}
		len += (size_t)snprintf(c->endpoints + len,
		    sizeof(c->endpoints) - len, "%s127.0.0.1:%d",
		    i > 0 ? "," : "", c->nodes[i]->port);
	}
}

void
cluster_harness_stop(struct cluster_harness *c)
{
	int i;

	c->token = NULL;
	/* A paused node must not outlive its teardown. */
	for (i = 0; i < CLUSTER_HARNESS_NODES; i++)
		if (c->nodes[i] != NULL && c->nodes[i]->pid > 0)
			kill(c->nodes[i]->pid, SIGCONT);
	if (!c->shared)
		etcd_cluster_stop(&c->etcd);
}

int64_t
cluster_harness_kill(struct cluster_harness *c, int i)
{
	int64_t killed;

	harness_server_kill(c->nodes[i]);
	killed = harness_now_ms();
	c->nodes[i]->pid = 0;
	return killed;
}

int
cluster_harness_role_of(struct harness_server *s, const char *token)
{
	struct harness_conn *conn;
	const char *line;
	int role = -1;

	if (s == NULL || s->pid == 0)
		return -1;
	conn = harness_connect(s);
	if (token != NULL) {
		harness_send(conn, "AUTH %s\r\n", token);
		if ((line = harness_read_line(conn, 2000)) == NULL ||
		    strncmp(line, "AUTHED ", 7) != 0) {
			harness_drop(conn);
			return -1;
		}
	}
	if (harness_try_send(conn, "STATS\r\n", 7, 1000) == 7 &&
	    (line = harness_read_line(conn, 2000)) != NULL) {
		if (strstr(line, " role=leader") != NULL)
			role = 1;
		else if (strstr(line, " role=follower") != NULL)
			role = 0;
	}
	harness_drop(conn);
	return role;
}

int
cluster_harness_leader_of(struct harness_server **nodes, int n,
    int64_t wait_ms)
{
	int64_t deadline = harness_now_ms() + wait_ms;
	int i;

	while (harness_now_ms() < deadline) {
		for (i = 0; i < n; i++)
			if (cluster_harness_role_of(nodes[i], NULL) == 1)
				return i;
		harness_sleep_ms(100);
	}
	return -1;
}

int
cluster_harness_role(struct cluster_harness *c, int i)
{
	return cluster_harness_role_of(c->nodes[i], c->token);
}

int
cluster_harness_find_leader(struct cluster_harness *c)
{
	int64_t deadline = harness_now_ms() + CLUSTER_HARNESS_RECOVER_MS;
	int i;

	while (harness_now_ms() < deadline) {
		for (i = 0; i < CLUSTER_HARNESS_NODES; i++)
			if (cluster_harness_role(c, i) == 1)
				return i;
		harness_sleep_ms(100);
	}
	return -1;
}

struct harness_conn *
cluster_harness_connect(struct cluster_harness *c, int i)
{
	struct harness_conn *conn = harness_connect(c->nodes[i]);

	if (c->token != NULL) {
		harness_send(conn, "AUTH %s\r\n", c->token);
		harness_expect_prefix(conn, "AUTHED ");
	}
	return conn;
}

void
cluster_harness_await_hint(struct cluster_harness *c, int follower,
    int leader)
{
	struct harness_conn *conn = cluster_harness_connect(c, follower);
	const char *line = NULL;
	char want[64];
	int i;

	snprintf(want, sizeof(want), "ERR NOTLEADER leader=127.0.0.1:%d ",
	    c->nodes[leader]->port);
	for (i = 0; i < 100; i++) {
		harness_send(conn, "STATUS app/x\r\n");
		line = harness_read_line(conn, HARNESS_REPLY_TIMEOUT_MS);
		if (line != NULL && strncmp(line, want, strlen(want)) == 0)
			break;
		harness_sleep_ms(50);
	}
	harness_close(conn);
	if (i == 100)
		fail_msg("node %d never named the leader: \"%s\"", follower,
		    line != NULL ? line : "(nothing)");
}

const char *
cluster_harness_ask(struct cluster_harness *c, int i, const char *name,
    char *buf, size_t size)
{
	struct harness_conn *conn = cluster_harness_connect(c, i);
	const char *line;

	if (name != NULL)
		harness_send(conn, "STATUS %s\r\n", name);
	else
		harness_send(conn, "STATS\r\n");
	line = harness_read_line(conn, HARNESS_REPLY_TIMEOUT_MS);
	snprintf(buf, size, "%s", line != NULL ? line : "(nothing)");
	harness_close(conn);
	return buf;
}

static void
notleader_serve(int lfd, int leader, const char *counter)
{
	char buf[1024], reply[128];
	int fd, len;
	ssize_t n, i;
	FILE *f;

	len = snprintf(reply, sizeof(reply), "ERR NOTLEADER leader="
	    "127.0.0.1:%d not me\r\n", leader);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) < 0)
			_exit(1);
		if (fork() != 0) {
			close(fd);
			continue;
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(lfd);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (i = 0; i < n; i++)
				if (buf[i] == '\n') {
					if (write(fd, reply, (size_t)len) !=
					    len)
						break;
					if ((f = fopen(counter, "a")) != NULL) {
						fputs("x\n", f);
						fclose(f);
					}
				}
		_exit(0);
	}
}

pid_t
cluster_harness_notleader_fake(int lfd, int leader, const char *counter)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		notleader_serve(lfd, leader, counter);
		_exit(0);
	}
	assert_true(pid > 0);
	close(lfd);
	return pid;
}

int
cluster_harness_count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int ch, n = 0;

	if (f == NULL)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		if (ch == '\n')
			n++;
	fclose(f);
	return n;
}

struct harness_server *
cluster_harness_tls_node(char *list, size_t list_size, char *ca,
    size_t ca_size)
{
	struct harness_certs certs;
	struct harness_server *s;

	harness_certs_make_server(&certs);
	snprintf(ca, ca_size, "%s", harness_certs_path(&certs, "ca.pem"));
	s = harness_start("--tls-cert", harness_certs_path(&certs,
	    "server.pem"), "--tls-key", harness_certs_path(&certs,
	    "server.key"), NULL);
	snprintf(list, list_size, "lockds://127.0.0.1:%d,lockds://"
	    "localhost:%d", harness_closed_port(), s->port);
	return s;
}

static void
lossy_proxy_serve(int lfd, int upstream_port)
{
	struct sockaddr_in sin;
	struct pollfd p[2];
	char buf[4096];
	bool dropped = false;
	int client, server;
	ssize_t n;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)upstream_port);
	for (;;) {
		if ((client = accept(lfd, NULL, NULL)) < 0)
			_exit(1);
		server = socket(AF_INET, SOCK_STREAM, 0);
		if (server < 0 || connect(server, (struct sockaddr *)&sin,
		    sizeof(sin)) != 0)
			_exit(1);
		p[0].fd = client;
		p[1].fd = server;
		p[0].events = p[1].events = POLLIN;
		for (;;) {
			if (poll(p, 2, -1) < 0)
				_exit(1);
			if (p[0].revents != 0) {
				n = read(client, buf, sizeof(buf));
				if (n <= 0 || write(server, buf, (size_t)n) !=
				    n)
					break;
			}
			if (p[1].revents != 0) {
				n = read(server, buf, sizeof(buf));
				if (n <= 0)
					break;
				if (!dropped && strncmp(buf, "GRANTED ", 8) ==
				    0) {
					dropped = true;
					break;
				}
				if (write(client, buf, (size_t)n) != n)
					break;
			}
		}
		close(client);
		close(server);
	}
}

pid_t
cluster_harness_lossy_proxy(int lfd, int upstream_port)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		lossy_proxy_serve(lfd, upstream_port);
		_exit(0);
	}
	assert_true(pid > 0);
	close(lfd);
	return pid;
}
