/*
 * etcd_harness.c - real etcd members for the tests (etcd_harness.h).  It
 * speaks to etcd only to ask /health, over a plain socket, so that it
 * needs nothing of lockd's etcd client, which is what the tests test; a
 * secured cluster is asked through the curl command instead, and its
 * certificates are made by the openssl command.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
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

/*
 * Runs argv (argv[0] looked up in PATH) with stdout into out (cap bytes,
 * NUL-terminated; NULL: dropped) and stderr to /dev/null, for at most
 * timeout_ms: its exit status, or -1 (killed on timeout).
 */
static int
run_capture(char *const argv[], char *out, size_t cap, int timeout_ms)
{
	long long deadline = now_ms() + timeout_ms;
	char sink[512];
	size_t got = 0;
	int fds[2], status = -1;
	pid_t pid;

	if (pipe(fds) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(null, 2);
		close(fds[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		struct pollfd pfd = { fds[0], POLLIN, 0 };
		long long left = deadline - now_ms();
		ssize_t n;
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		if (out != NULL && got + 1 < cap)
			n = read(fds[0], out + got, cap - 1 - got);
		else
			n = read(fds[0], sink, sizeof(sink));
		if (n <= 0)
			break;
		if (out != NULL && got + 1 < cap)
			got += (size_t)n;
	}
	close(fds[0]);
	if (out != NULL && cap > 0)
		out[got] = '\0';
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		sleep_ms(5);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* curl's arguments for TLS to the cluster. */
static int
curl_tls_args(const struct etcd_cluster *c, char **argv, int i)
{
	if (!c->options.tls)
		return i;
	argv[i++] = "--cacert";
	argv[i++] = (char *)c->ca;
	argv[i++] = "--cert";
	argv[i++] = (char *)c->client_cert;
	argv[i++] = "--key";
	argv[i++] = (char *)c->client_key;
	return i;
}

static bool
member_healthy_tls(const struct etcd_cluster *c, int i)
{
	char url[96], out[1024];
	char *argv[16] = { "curl", "-s", "--max-time", "1" };
	int n = curl_tls_args(c, argv, 4);

	snprintf(url, sizeof(url), "%s/health", c->members[i].client_url);
	argv[n++] = url;
	argv[n] = NULL;
	return run_capture(argv, out, sizeof(out), 2000) == 0 &&
	    strstr(out, "\"health\":\"true\"") != NULL;
}

int
etcd_cluster_post(const struct etcd_cluster *c, const char *path,
    const char *body, char *out, size_t cap)
{
	char url[128], auth[300], text[8192];
	char *argv[24] = { "curl", "-s", "--max-time", "5", "-w",
	    "\n%{http_code}", "-H", "Content-Type: application/json" };
	char *code;
	int n = curl_tls_args(c, argv, 8);

	snprintf(url, sizeof(url), "%s%s", c->members[0].client_url, path);
	if (c->root_token[0] != '\0') {
		snprintf(auth, sizeof(auth), "Authorization: %s",
		    c->root_token);
		argv[n++] = "-H";
		argv[n++] = auth;
	}
	argv[n++] = "-d";
	argv[n++] = (char *)body;
	argv[n++] = url;
	argv[n] = NULL;
	if (run_capture(argv, text, sizeof(text), 6000) != 0)
		return 0;
	if ((code = strrchr(text, '\n')) == NULL)
		return 0;
	*code++ = '\0';
	if (out != NULL)
		snprintf(out, cap, "%s", text);
	return atoi(code);
}

/* base64 of a string, for etcd's keys. */
static void
base64(const char *in, char *out)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t len = strlen(in), i;

	for (i = 0; i < len; i += 3) {
		unsigned v = (unsigned)(unsigned char)in[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)(unsigned char)in[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)in[i + 2];
		*out++ = abc[(v >> 18) & 63];
		*out++ = abc[(v >> 12) & 63];
		*out++ = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		*out++ = i + 2 < len ? abc[v & 63] : '=';
	}
	*out = '\0';
}

/* One /v3/auth/ call that must answer 200. */
static int
auth_call(struct etcd_cluster *c, const char *path, const char *body,
    char *out, size_t cap)
{
	char reply[2048];
	int code = etcd_cluster_post(c, path, body, reply, sizeof(reply));

	if (out != NULL)
		snprintf(out, cap, "%s", reply);
	if (code == 200)
		return 0;
	fprintf(stderr, "etcd %s %s: HTTP %d %s\n", path, body, code, reply);
	return -1;
}

int
etcd_cluster_add_user(struct etcd_cluster *c, const char *user,
    const char *password, const char *prefix)
{
	char body[1024], key[256], end[256], last[128];
	size_t n = strlen(prefix);

	if (n == 0 || n >= sizeof(last))
		return -1;
	snprintf(last, sizeof(last), "%s", prefix);
	last[n - 1] = (char)(last[n - 1] + 1);
	base64(prefix, key);
	base64(last, end);
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", user);
	if (auth_call(c, "/v3/auth/role/add", body, NULL, 0) != 0)
		return -1;
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"perm\":{"
	    "\"permType\":\"READWRITE\",\"key\":\"%s\",\"range_end\":"
	    "\"%s\"}}", user, key, end);
	if (auth_call(c, "/v3/auth/role/grant", body, NULL, 0) != 0)
		return -1;
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"password\":"
	    "\"%s\"}", user, password);
	if (auth_call(c, "/v3/auth/user/add", body, NULL, 0) != 0)
		return -1;
	snprintf(body, sizeof(body), "{\"user\":\"%s\",\"role\":\"%s\"}",
	    user, user);
	return auth_call(c, "/v3/auth/user/grant", body, NULL, 0);
}

/* A fresh token of root's (the last one may have expired). */
static int
root_authenticate(struct etcd_cluster *c)
{
	char reply[2048], *t, *q;

	c->root_token[0] = '\0';
	if (auth_call(c, "/v3/auth/authenticate", "{\"name\":\"root\","
	    "\"password\":\"root-test\"}", reply, sizeof(reply)) != 0)
		return -1;
	if ((t = strstr(reply, "\"token\":\"")) == NULL ||
	    (q = strchr(t + 9, '"')) == NULL ||
	    (size_t)(q - t - 9) >= sizeof(c->root_token))
		return -1;
	memcpy(c->root_token, t + 9, (size_t)(q - t - 9));
	c->root_token[q - t - 9] = '\0';
	return 0;
}

int
etcd_cluster_enable_auth(struct etcd_cluster *c)
{
	if (auth_call(c, "/v3/auth/user/add", "{\"name\":\"root\","
	    "\"password\":\"root-test\"}", NULL, 0) != 0 ||
	    auth_call(c, "/v3/auth/user/grant", "{\"user\":\"root\","
	    "\"role\":\"root\"}", NULL, 0) != 0 ||
	    auth_call(c, "/v3/auth/enable", "{}", NULL, 0) != 0)
		return -1;
	return root_authenticate(c);
}

int
etcd_cluster_change_password(struct etcd_cluster *c, const char *user,
    const char *password)
{
	char body[512];

	if (root_authenticate(c) != 0)
		return -1;
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"password\":"
	    "\"%s\"}", user, password);
	return auth_call(c, "/v3/auth/user/changepw", body, NULL, 0);
}

/* Makes the certificates with the openssl command (EC keys: quick). */
static int
make_certificates(struct etcd_cluster *c)
{
	char key[96], csr[96], crt[96], ext[96], wrong_key[96], serial[96];
	char ca_key[96];
	FILE *f;
	int i;

	snprintf(c->ca, sizeof(c->ca), "%s/ca.crt", c->dir);
	snprintf(ca_key, sizeof(ca_key), "%s/ca.key", c->dir);
	snprintf(c->client_cert, sizeof(c->client_cert), "%s/client.crt",
	    c->dir);
	snprintf(c->client_key, sizeof(c->client_key), "%s/client.key",
	    c->dir);
	snprintf(c->wrong_ca, sizeof(c->wrong_ca), "%s/wrong-ca.crt", c->dir);
	snprintf(wrong_key, sizeof(wrong_key), "%s/wrong-ca.key", c->dir);
	snprintf(key, sizeof(key), "%s/server.key", c->dir);
	snprintf(csr, sizeof(csr), "%s/server.csr", c->dir);
	snprintf(crt, sizeof(crt), "%s/server.crt", c->dir);
	snprintf(ext, sizeof(ext), "%s/server.ext", c->dir);
	snprintf(serial, sizeof(serial), "%s/ca.srl", c->dir);
	if ((f = fopen(ext, "w")) == NULL)
		return -1;
	fprintf(f, "subjectAltName=IP:127.0.0.1\n"
	    "extendedKeyUsage=serverAuth,clientAuth\n");
	fclose(f);
	{
		char client_csr[96], client_ext[96];
		snprintf(client_csr, sizeof(client_csr), "%s/client.csr",
		    c->dir);
		snprintf(client_ext, sizeof(client_ext), "%s/client.ext",
		    c->dir);
		if ((f = fopen(client_ext, "w")) == NULL)
			return -1;
		fprintf(f, "extendedKeyUsage=clientAuth\n");
		fclose(f);
		char *steps[][20] = {
		    { "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
		      "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
		      ca_key, "-out", c->ca, "-days", "2", "-subj",
		      "/CN=lockd test etcd CA", NULL },
		    { "openssl", "req", "-newkey", "ec", "-pkeyopt",
		      "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
		      "-out", csr, "-subj", "/CN=etcd", NULL },
		    { "openssl", "x509", "-req", "-in", csr, "-CA", c->ca,
		      "-CAkey", ca_key, "-CAcreateserial", "-CAserial", serial,
		      "-out", crt, "-days", "2", "-extfile", ext, NULL },
		    /* No CN: etcd's gateway refuses a client CN. */
		    { "openssl", "req", "-newkey", "ec", "-pkeyopt",
		      "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
		      c->client_key, "-out", client_csr, "-subj", "/O=lockd",
		      NULL },
		    { "openssl", "x509", "-req", "-in", client_csr, "-CA",
		      c->ca, "-CAkey", ca_key, "-CAserial", serial, "-out",
		      c->client_cert, "-days", "2", "-extfile", client_ext,
		      NULL },
		    { "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
		      "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
		      wrong_key, "-out", c->wrong_ca, "-days", "2", "-subj",
		      "/CN=127.0.0.1", NULL },
		};
		for (i = 0; i < (int)(sizeof(steps) / sizeof(steps[0])); i++)
			if (run_capture(steps[i], NULL, 0, 10000) != 0) {
				fprintf(stderr, "openssl step %d failed\n", i);
				return -1;
			}
	}
	return 0;
}

bool
etcd_member_healthy(const struct etcd_cluster *c, int i)
{
	static const char ask[] = "GET /health HTTP/1.0\r\n\r\n";
	struct timeval tv = { 1, 0 };
	struct sockaddr_in sin;
	char buf[1024];
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = false;

	if (c->options.tls)
		return member_healthy_tls(c, i);
	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)c->members[i].client_port);
	inet_pton(AF_INET, c->host[0] != '\0' ? c->host : "127.0.0.1",
	    &sin.sin_addr);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(fd, ask, sizeof(ask) - 1) == (ssize_t)(sizeof(ask) - 1)) {
		while (got < sizeof(buf) - 1 &&
		    (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)n;
		buf[got] = '\0';
		ok = strstr(buf, "\"health\":\"true\"") != NULL;
	}
	close(fd);
	return ok;
}

static int
spawn_member(struct etcd_cluster *c, int i, const char *state)
{
	const char *bin = getenv("ETCD_BIN");
	struct etcd_member *m = &c->members[i];
	char name[16], data[128], client[96], peer[96], initial[1024], log[128];
	char crt[96], key[96], ttl[16], request_bytes[24];
	size_t used = 0;
	pid_t parent = getpid();
	int j;

	snprintf(name, sizeof(name), "m%d", i);
	snprintf(data, sizeof(data), "%s/%s", c->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", c->dir, name);
	snprintf(client, sizeof(client), "%s", m->client_url);
	snprintf(crt, sizeof(crt), "%s/server.crt", c->dir);
	snprintf(key, sizeof(key), "%s/server.key", c->dir);
	snprintf(ttl, sizeof(ttl), "%d", c->options.auth_token_ttl_s);
	snprintf(request_bytes, sizeof(request_bytes), "%ld",
	    c->options.max_request_bytes);
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
		    "--log-outputs", "stderr", "--logger", "zap",
		    /* The secured cluster's flags, or the list ends here. */
		    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
		    NULL, NULL, NULL, NULL, NULL };
		int k = 0;
		while (argv[k] != NULL)
			k++;
		if (c->options.tls) {
			argv[k++] = "--cert-file";
			argv[k++] = crt;
			argv[k++] = "--key-file";
			argv[k++] = key;
			argv[k++] = "--trusted-ca-file";
			argv[k++] = c->ca;
		}
		if (c->options.client_cert_auth)
			argv[k++] = "--client-cert-auth";
		if (c->options.auth_token_ttl_s > 0) {
			argv[k++] = "--auth-token-ttl";
			argv[k++] = ttl;
			/* bcrypt's least cost: quick authentications. */
			argv[k++] = "--bcrypt-cost";
			argv[k++] = "4";
		}
		if (c->options.max_request_bytes > 0) {
			argv[k++] = "--max-request-bytes";
			argv[k++] = request_bytes;
		}
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
	return etcd_cluster_start_on(c, n, "127.0.0.1", NULL);
}

int
etcd_cluster_start_secure(struct etcd_cluster *c, int n,
    const struct etcd_cluster_options *options)
{
	return etcd_cluster_start_on(c, n, "127.0.0.1", options);
}

static int
start_once(struct etcd_cluster *c, int n, const char *host,
    const struct etcd_cluster_options *options)
{
	const char *tmp = getenv("TMPDIR");
	size_t used = 0;
	int i;

	memset(c, 0, sizeof(*c));
	if (options != NULL)
		c->options = *options;
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
		    "%s://%s:%d", c->options.tls ? "https" : "http", host,
		    m->client_port);
		used += (size_t)snprintf(c->urls + used, sizeof(c->urls) - used,
		    "%s%s", i ? "," : "", m->client_url);
	}
	if (c->options.tls) {
		char *probe[] = { "curl", "--version", NULL };
		if (run_capture(probe, NULL, 0, 5000) != 0) {
			fprintf(stderr, "a secured etcd needs the curl command "
			    "(apt-get install curl)\n");
			goto fail;
		}
		if (make_certificates(c) != 0)
			goto fail;
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
etcd_cluster_start_on(struct etcd_cluster *c, int n, const char *host,
    const struct etcd_cluster_options *options)
{
	int attempt;

	for (attempt = 1; attempt <= ETCD_HARNESS_TRIES; attempt++) {
		if (start_once(c, n, host, options) == 0)
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
