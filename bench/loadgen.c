/*
 * loadgen.c - the benchmark's one load generator: many connections on one
 * thread (epoll), each running one request cycle at a time (a closed loop),
 * against lockd (its line protocol, parsed with proto/), Redis (RESP,
 * formatted and parsed with hiredis's redisFormatCommand and redisReader,
 * the lock done with two Lua scripts) or etcd (the v3 API through its gRPC
 * gateway: JSON over HTTP/1.1 keep-alive).  Every latency sample is kept and
 * sorted, so the percentiles are exact.  Every loop is bounded in count and
 * in time, and it talks only to the address it is given (loopback in every
 * use here).  It may not touch a server's files: what it knows of a server
 * comes from the wire and from /proc/PID (CPU time, resident memory).
 *
 *   loadgen -x lockd|redis|etcd -p PORT [-H 127.0.0.1] [-c CONNS]
 *           [-w cycle|handoff|try|hold|idle|sem|rw|scripts] [-t SECONDS]
 *           [-W WARMUP] [-n MAX_CYCLES] [-P PREFIX] [-S SERVER_PID]
 *           [-d DEPTH] [-l LEASE] [-L "key=value ..."]
 *           [-r RECORDS] [-A PORT,PORT,...] [-N LIMIT] [-R READERS]
 *           [-h HOLD_MS] [-z NAME_LEN] [-B] [-V]
 *   loadgen -F COUNT        print COUNT free loopback TCP ports
 *
 * Workloads (a "cycle" is what one latency sample measures):
 *   cycle    each connection locks its own name and unlocks it; a cycle is
 *            lock + unlock.
 *   handoff  every connection locks ONE shared name, holds it 0 ms and
 *            unlocks; a cycle is one hand-off (from the first lock attempt
 *            to the unlock's reply), and the release-to-next-grant gap is
 *            measured from an unlock's reply to the next grant's reply.
 *            Redis has no queue: a failed acquire is retried at once
 *            (counted in retries=), the way a spinning client would.
 *   try      connection 0 takes the lock and keeps it; the others try it in
 *            a loop; a cycle is one refused try.
 *   hold     -n locks on distinct names (here -n counts locks), pipelined
 *            -d deep per connection, with lease -l, kept held after the
 *            connections close (lockd only); with -S, the server's resident
 *            memory per held lock.  Names are PREFIX/N; with -z, N is
 *            zero-padded so that every name is NAME_LEN bytes
 *            (-P held -z 16: held/00000000042).
 *   idle     -c connections opened, each answered one PING, then left idle;
 *            with -S, the server's resident memory per connection.
 *   txn      (etcd only) each connection writes guarded transactions the
 *            shape lockd's cluster store writes (docs/design.md): compare a
 *            guard key's create revision and the connection's high-water
 *            key's mod revision, then put that key and -r records (64); a
 *            cycle is one transaction.  The ceiling of cluster mode.
 *   first    (lockd only) fail-over: one ACQUIRE at a time, on a fresh
 *            connection, to each port of -A in turn (10 ms apart) until
 *            one answers GRANTED, for at most -t seconds; prints when that
 *            reply came (CLOCK_REALTIME, first_granted_unix_us=) and from
 *            which port.
 *   sem      (lockd, redis) every connection takes a permit of ONE
 *            counting semaphore of -N permits (16), holds it -h ms (0:
 *            to the end of the loop's pass that read the grant) and
 *            gives it back; a cycle is acquire + release.  lockd:
 *            ACQUIRE name limit=N, RELEASE.  Redis: Redisson's expirable
 *            semaphore as two Lua scripts on a sorted set (below); a
 *            refused acquire is retried at once, as in handoff.
 *   rw       (lockd, redis) readers and writers on ONE name: the first -R
 *            connections (default: all but 4) read, the others write;
 *            holds as in sem; a cycle is acquire + release, counted per
 *            side.  lockd: ACQUIRE name mode=shared for a reader, plain
 *            ACQUIRE for a writer.  Redis: Redisson's read-write lock
 *            idea as Lua scripts on a hash (below); a refused acquire is
 *            retried at once.
 *   scripts  (redis only) not a load: the sem and rw scripts, one call at
 *            a time, against what they must answer (the limit, a writer
 *            alone, readers together, expiry frees a permit and a lock,
 *            fences increase); prints "N passed, N failed", exit status 1
 *            on a failure.  With -B it must fail.
 * The cycle, handoff, sem and rw workloads also report the acquire's own
 * latency (acq_p50_us, acq_p99_us: from the lock request leaving to its
 * grant).  sem and rw report the hand-off gap: from a release leaving that
 * made room (sem: any release; rw: the release that left no holder) to the
 * next grant received by a request sent before that release, each release
 * paired with at most one grant, in order; in rw, after a reader's release
 * only a writer's grant counts (kinds_granted says why).  They also report
 * the longest wait for a grant (wait_max_us; in rw per side), counting the
 * requests still waiting when the run ends: what no queue, or a queue that
 * lets readers pass a writer, costs the unlucky.
 *
 * sem and rw check the servers' answers from the clients' view: a hold
 * counts from its grant's arrival to its release leaving, which lies inside
 * the server's hold, so more than -N permits, or a writer beside anyone,
 * seen here is a real overlap (violations=; exit status 4).  -B swaps in
 * Redis scripts broken on purpose (the semaphore admits N+1; the writer
 * ignores readers), so that the check itself is seen to fail; -V ends such
 * a run at the first overlap, so that -t bounds only a check that fails
 * to catch one.  Against a
 * lockd that refuses limit= or mode= (ERR BADARG or BADREQ to one probing
 * TRY), the run prints unsupported=1 and exits with status 3.
 *
 * Prints one line of key=value results on stdout.  The exit status is 0
 * when the run completed (errors are counted in errors=), 1 on a fatal
 * error (connect or setup failed), 2 on bad usage, 3 when lockd does not
 * support the workload's options, 4 when the check saw an overlap.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "proto/proto.h"

/* Limits of the generator, in one place. */
#define LOADGEN_MAX_CONNS 20000          /* connections in one run */
#define LOADGEN_IN_CAP 16384             /* unparsed input per connection */
#define LOADGEN_SETUP_SECONDS 30.0       /* connect + per-connection setup */
#define LOADGEN_CONNECT_TIMEOUT_S 5      /* one connect() */
#define LOADGEN_IDLE_SETTLE_S 0.5        /* before reading RSS with idlers */
#define LOADGEN_REDIS_TTL_MS 60000       /* PX of the Redis lock key */
#define LOADGEN_ETCD_LEASE_TTL_S 60      /* TTL of each etcd connection's lease */
#define LOADGEN_DEFAULT_MAX_CYCLES 20000000L
#define LOADGEN_PROBE_TIMEOUT_S 5        /* the option probe's reply */
#define LOADGEN_RW_WRITERS 4             /* rw's writers without -R */
#define LOADGEN_LIMIT_MAX 65535          /* -N: the spec's largest limit */
#define LOADGEN_SCRIPTS_MAX 4            /* Redis scripts of one workload */
#define LOADGEN_VIOLATIONS_SHOWN 5       /* overlaps described on stderr */

enum server_kind { SERVER_LOCKD, SERVER_REDIS, SERVER_ETCD };
enum workload { W_CYCLE, W_HANDOFF, W_TRY, W_HOLD, W_IDLE, W_TXN, W_FIRST,
    W_SEM, W_RW, W_SCRIPTS };

/* What a connection waits for. */
enum step {
	ST_NONE,     /* nothing outstanding */
	ST_SETUP,    /* Redis SCRIPT LOADs, etcd lease grant */
	ST_PING,
	ST_ACQUIRE,  /* lockd ACQUIRE, Redis acquire script, etcd lock */
	ST_TRY,      /* lockd TRY, Redis acquire script, etcd txn */
	ST_RELEASE,  /* lockd RELEASE, Redis release script, etcd unlock */
	ST_TXN,      /* etcd: one guarded transaction of -r records */
	ST_HOLDING   /* holds the lock and sends nothing */
};

/* What a reply meant, whatever the protocol. */
enum outcome {
	OC_PARTIAL,   /* no complete reply buffered */
	OC_SETUP,
	OC_PONG,
	OC_GRANTED,
	OC_RELEASED,
	OC_HELD,      /* refused: lockd HELD, Redis nil, etcd txn not taken */
	OC_ERROR,     /* an error reply; the connection lives on */
	OC_FATAL      /* unparseable input: the connection is dropped */
};

struct conn {
	int fd;
	int id;
	bool dead;
	bool dirty;            /* on the flush list */
	bool want_out;         /* EPOLLOUT armed */
	enum step step;
	int setup_left;        /* setup replies still to come */
	int inflight;          /* hold: requests sent, not yet answered */
	double started;        /* this cycle's first request */
	char name[128];
	char token[160];       /* lockd handle, Redis token, etcd lock key */
	char lease[32];        /* etcd lease ID */
	char hwm_mod[24];      /* txn: the high-water key's mod revision */
	bool writer;           /* rw: this connection takes the exclusive side */
	double release_at;     /* sem, rw: when the hold ends */
	redisReader *reader;   /* Redis */
	size_t in_len;         /* lockd, etcd */
	char *out;
	size_t out_len, out_cap;
	char in[LOADGEN_IN_CAP];
};

/* Growable array of samples in seconds. */
struct samples {
	double *v;
	size_t n, cap, max;
};

static struct loadgen {
	enum server_kind server;
	enum workload workload;
	const char *host, *prefix, *label, *lease;
	int port, nconns, depth, server_pid, records;
	const char *first_ports;
	double seconds, warmup;
	long max_cycles;

	int ep;
	struct conn *conns;
	struct conn **dirty;
	int ndirty;

	/* The workload's Redis scripts (enum redis_script) and their
	 * digests, from SCRIPT LOAD. */
	const char *script[LOADGEN_SCRIPTS_MAX];
	int nscripts;
	char sha[LOADGEN_SCRIPTS_MAX][64];

	/* sem and rw: the limit, the readers, and the clients' view. */
	int limit, readers;
	bool broken, stop_on_overlap;
	long held_now, readers_now, writers_now, max_held, max_readers;
	long violations;
	long cycles_read, cycles_write;
	double wait_max[2];    /* longest acquire, [0] readers or permits,
	                        * [1] writers: granted, or still waiting */
	struct samples lat_read, lat_write;
	double *released;      /* releases not yet paired with a grant */
	bool *released_writer; /* rw: that release was a writer's */
	int released_head, released_len, released_cap;
	double hold;           /* -h, seconds */
	int name_len;          /* -z: hold's names padded to this length */
	struct conn **holders; /* by release_at: the hold is the same for all */
	int holders_head, holders_len;

	/* Progress. */
	bool measuring;
	double measure_start, deadline;
	long cycles, errors, retries, ready, dead;
	long next_name, held, sent;
	double last_release, last_grant;
	struct samples lat, gap, acq;
	uint64_t rng;
	int errors_shown;
} lg;

static const char redis_acquire_lua[] =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('INCR', KEYS[2]) end return false";
static const char redis_release_lua[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('DEL', KEYS[1]) end return 0";

/*
 * The semaphore, the way Redisson's expirable semaphore keeps its permits:
 * a sorted set of the holders' tokens scored by their expiry (ms, the
 * server's clock).  An acquire drops the expired permits, and takes one if
 * fewer than the limit remain, with a fence from an INCR counter, as the
 * lock's script.  KEYS: set, fence counter; ARGV: token, limit, lease ms.  A
 * release removes its token (0 when it had expired).
 */
#define REDIS_NOW_LUA \
    "local t = redis.call('TIME') " \
    "local now = t[1] * 1000 + math.floor(t[2] / 1000) "
static const char redis_sem_acquire_lua[] = REDIS_NOW_LUA
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) "
    "if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then "
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1]) "
    "return redis.call('INCR', KEYS[2]) end return false";
/* -B: admits one permit more than the limit. */
static const char redis_sem_acquire_broken_lua[] = REDIS_NOW_LUA
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) "
    "if redis.call('ZCARD', KEYS[1]) <= tonumber(ARGV[2]) then "
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1]) "
    "return redis.call('INCR', KEYS[2]) end return false";
static const char redis_sem_release_lua[] =
    "return redis.call('ZREM', KEYS[1], ARGV[1])";

/*
 * The read-write lock, after Redisson's RReadWriteLock: a hash holding the
 * mode ("read" or "write") and one field per holder, its token, whose value
 * is its expiry (ms, the server's clock); the key lives as long as its
 * longest hold.  A reader is let in unless a live writer holds: a waiting
 * writer does not stop new readers (Redisson's read lock does not look
 * for one either).  A writer needs no live holder at all.  KEYS: hash,
 * fence counter; ARGV: token, lease ms.  A release deletes its field, and
 * the hash when no holder is left.
 */
#define REDIS_RW_LIVE_LUA \
    "local h = redis.call('HGETALL', KEYS[1]) " \
    "for i = 1, #h, 2 do " \
    "if h[i] ~= 'mode' and tonumber(h[i + 1]) > now then " \
    "return false end end "
#define REDIS_RW_TAKE_LUA(mode) \
    "redis.call('HSET', KEYS[1], 'mode', '" mode "', ARGV[1], " \
    "now + tonumber(ARGV[2])) " \
    "if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then " \
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end " \
    "return redis.call('INCR', KEYS[2])"
static const char redis_rw_read_lua[] = REDIS_NOW_LUA
    "if redis.call('HGET', KEYS[1], 'mode') == 'write' then "
    REDIS_RW_LIVE_LUA
    "redis.call('DEL', KEYS[1]) end "
    REDIS_RW_TAKE_LUA("read");
static const char redis_rw_write_lua[] = REDIS_NOW_LUA
    "if redis.call('EXISTS', KEYS[1]) == 1 then "
    REDIS_RW_LIVE_LUA
    "redis.call('DEL', KEYS[1]) end "
    REDIS_RW_TAKE_LUA("write");
/* -B: the writer looks for a live writer only, and ignores the readers. */
static const char redis_rw_write_broken_lua[] = REDIS_NOW_LUA
    "if redis.call('HGET', KEYS[1], 'mode') == 'write' then "
    REDIS_RW_LIVE_LUA
    "redis.call('DEL', KEYS[1]) end "
    REDIS_RW_TAKE_LUA("write");
static const char redis_rw_release_lua[] =
    "if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end "
    "if redis.call('HLEN', KEYS[1]) <= 1 then redis.call('DEL', KEYS[1]) end "
    "return 1";

/* Which script is which in lg.script and lg.sha. */
enum redis_script {
	RS_ACQUIRE,        /* the lock, the semaphore, rw's writer */
	RS_RELEASE,
	RS_ACQUIRE_SHARED  /* rw's reader */
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

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
    noreturn));

static void
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "loadgen: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

/* Shows the first few error replies, so a broken run explains itself. */
static void
show_error(const struct conn *c, const char *text, size_t len)
{
	if (lg.errors_shown++ >= 5)
		return;
	fprintf(stderr, "loadgen: connection %d: error reply: %.*s\n", c->id,
	    (int)(len > 300 ? 300 : len), text);
}

static uint64_t
rng_next(void)
{
	/* xorshift64*: tokens need to be distinct, not secret. */
	lg.rng ^= lg.rng >> 12;
	lg.rng ^= lg.rng << 25;
	lg.rng ^= lg.rng >> 27;
	return lg.rng * 2685821657736338717ULL;
}

static void
samples_push(struct samples *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 65536;
		double *nv;

		if (cap > s->max)
			cap = s->max;
		if (s->n == cap)
			return;
		if ((nv = realloc(s->v, cap * sizeof(*nv))) == NULL)
			die("realloc");
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Sorts the samples for percentile_us; none (a NULL array) is sorted. */
static void
samples_sort(struct samples *s)
{
	if (s->n > 0)
		qsort(s->v, s->n, sizeof(double), cmp_double);
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double
percentile_us(const struct samples *s, double p)
{
	size_t rank;

	if (s->n == 0)
		return 0;
	rank = (size_t)((double)s->n * p);
	if ((double)rank < (double)s->n * p)
		rank++;
	if (rank < 1)
		rank = 1;
	if (rank > s->n)
		rank = s->n;
	return s->v[rank - 1] * 1e6;
}

static double
mean_us(const struct samples *s)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		sum += s->v[i];
	return s->n ? sum / (double)s->n * 1e6 : 0;
}

/* --- /proc of the server ------------------------------------------------ */

/* utime + stime of the whole process (every thread), in seconds. */
static double
proc_cpu_s(int pid)
{
	char path[64], buf[4096], *p;
	unsigned long utime, stime;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* Fields after the command name, which may hold spaces: state is 3. */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &utime, &stime) != 2)
		return 0;
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

struct rss { long vm_kb, anon_kb, file_kb; };

static struct rss
proc_rss(int pid)
{
	struct rss r = { 0, 0, 0 };
	char path[64], line[256];
	FILE *f;

	if (pid <= 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL)
		return r;
	while (fgets(line, sizeof(line), f) != NULL) {
		sscanf(line, "VmRSS: %ld", &r.vm_kb);
		sscanf(line, "RssAnon: %ld", &r.anon_kb);
		sscanf(line, "RssFile: %ld", &r.file_kb);
	}
	fclose(f);
	return r;
}

static double
self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* --- output ------------------------------------------------------------- */

static void
arm(struct conn *c, bool want_out)
{
	struct epoll_event ev;

	if (c->want_out == want_out)
		return;
	ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0);
	ev.data.ptr = c;
	if (epoll_ctl(lg.ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
		die("epoll_ctl");
	c->want_out = want_out;
}

static void
conn_kill(struct conn *c, const char *why)
{
	if (c->dead)
		return;
	fprintf(stderr, "loadgen: connection %d: %s\n", c->id, why);
	epoll_ctl(lg.ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->dead = true;
	c->out_len = 0;
	lg.dead++;
	lg.errors++;
}

/* Queues bytes; they leave in flush_all(), once per pass of the loop. */
static void
conn_send(struct conn *c, const char *data, size_t len)
{
	if (c->dead)
		return;
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 1024;
		char *nb;

		while (cap < c->out_len + len)
			cap *= 2;
		if ((nb = realloc(c->out, cap)) == NULL)
			die("realloc");
		c->out = nb;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	if (!c->dirty) {
		c->dirty = true;
		lg.dirty[lg.ndirty++] = c;
	}
}

static void
conn_flush(struct conn *c)
{
	size_t off = 0;

	while (off < c->out_len && !c->dead) {
		ssize_t n = send(c->fd, c->out + off, c->out_len - off,
		    MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_kill(c, strerror(errno));
			return;
		}
		off += (size_t)n;
	}
	if (c->dead)
		return;
	memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off;
	arm(c, c->out_len > 0);
}

static void
flush_all(void)
{
	int i;

	for (i = 0; i < lg.ndirty; i++) {
		lg.dirty[i]->dirty = false;
		conn_flush(lg.dirty[i]);
	}
	lg.ndirty = 0;
}

/* --- lockd -------------------------------------------------------------- */

static void conn_printf(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
conn_printf(struct conn *c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		fail("request too long on connection %d", c->id);
	conn_send(c, line, (size_t)n);
}

static void
lockd_acquire(struct conn *c)
{
	if (lg.workload == W_RW && !c->writer)
		conn_printf(c, "ACQUIRE %s mode=shared lease=%s\n", c->name,
		    lg.lease);
	else if (lg.limit > 1)
		conn_printf(c, "ACQUIRE %s limit=%d lease=%s\n", c->name,
		    lg.limit, lg.lease);
	else
		conn_printf(c, "ACQUIRE %s lease=%s\n", c->name, lg.lease);
}

static void
lockd_try(struct conn *c)
{
	conn_printf(c, "TRY %s lease=%s\n", c->name, lg.lease);
}

static void
lockd_release(struct conn *c)
{
	conn_printf(c, "RELEASE %s %s\n", c->name, c->token);
}

static void
lockd_ping(struct conn *c)
{
	conn_send(c, "PING\n", 5);
}

static enum outcome
lockd_next(struct conn *c, size_t *pos)
{
	struct proto_reply rep;
	struct proto_error err;
	enum proto_result pr;
	size_t used, n;

	pr = proto_parse_reply(c->in + *pos, c->in_len - *pos, LOADGEN_IN_CAP,
	    &rep, &used, &err);
	if (pr == PROTO_PARTIAL)
		return OC_PARTIAL;
	if (pr != PROTO_DONE) {
		show_error(c, c->in + *pos, c->in_len - *pos);
		return OC_FATAL;
	}
	*pos += used;
	switch (rep.kind) {
	case PROTO_REPLY_GRANTED:
		n = proto_format_handle(c->token, sizeof(c->token) - 1,
		    rep.handle);
		c->token[n] = '\0';
		return OC_GRANTED;
	case PROTO_REPLY_RELEASED:
		return OC_RELEASED;
	case PROTO_REPLY_HELD:
		return OC_HELD;
	case PROTO_REPLY_PONG:
		return OC_PONG;
	default:
		show_error(c, c->in + *pos - used, used);
		return OC_ERROR;
	}
}

/* --- Redis -------------------------------------------------------------- */

static void
redis_command(struct conn *c, int argc, const char **argv)
{
	char *cmd;
	int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

	if (len < 0)
		die("redisFormatCommandArgv");
	conn_send(c, cmd, (size_t)len);
	redisFreeCommand(cmd);
}

static void
redis_setup(struct conn *c)
{
	int i;

	for (i = 0; i < lg.nscripts; i++) {
		const char *argv[3] = { "SCRIPT", "LOAD", lg.script[i] };

		redis_command(c, 3, argv);
	}
	c->setup_left = lg.nscripts;
}

/* The workload's scripts, in enum redis_script's order. */
static void
redis_choose_scripts(void)
{
	if (lg.workload == W_SEM) {
		lg.script[RS_ACQUIRE] = lg.broken ?
		    redis_sem_acquire_broken_lua : redis_sem_acquire_lua;
		lg.script[RS_RELEASE] = redis_sem_release_lua;
		lg.nscripts = 2;
	} else if (lg.workload == W_RW) {
		lg.script[RS_ACQUIRE] = lg.broken ?
		    redis_rw_write_broken_lua : redis_rw_write_lua;
		lg.script[RS_RELEASE] = redis_rw_release_lua;
		lg.script[RS_ACQUIRE_SHARED] = redis_rw_read_lua;
		lg.nscripts = 3;
	} else {
		lg.script[RS_ACQUIRE] = redis_acquire_lua;
		lg.script[RS_RELEASE] = redis_release_lua;
		lg.nscripts = 2;
	}
}

static void
redis_acquire(struct conn *c)
{
	char fence_key[160], ttl[32], limit[16];
	const char *argv[8];
	int argc = 0;

	snprintf(c->token, sizeof(c->token), "%016" PRIx64 "%016" PRIx64,
	    rng_next(), rng_next());
	snprintf(fence_key, sizeof(fence_key), "%s#fence", c->name);
	snprintf(ttl, sizeof(ttl), "%d", LOADGEN_REDIS_TTL_MS);
	snprintf(limit, sizeof(limit), "%d", lg.limit);
	argv[argc++] = "EVALSHA";
	argv[argc++] = lg.workload == W_RW && !c->writer ?
	    lg.sha[RS_ACQUIRE_SHARED] : lg.sha[RS_ACQUIRE];
	argv[argc++] = "2";
	argv[argc++] = c->name;
	argv[argc++] = fence_key;
	argv[argc++] = c->token;
	if (lg.workload == W_SEM)
		argv[argc++] = limit;
	argv[argc++] = ttl;
	redis_command(c, argc, argv);
}

static void
redis_release(struct conn *c)
{
	const char *argv[5] = { "EVALSHA", lg.sha[RS_RELEASE], "1", c->name,
	    c->token };

	redis_command(c, 5, argv);
}

static void
redis_ping(struct conn *c)
{
	const char *argv[1] = { "PING" };

	redis_command(c, 1, argv);
}

static enum outcome
redis_next(struct conn *c)
{
	redisReply *r = NULL;
	enum outcome oc;

	if (redisReaderGetReply(c->reader, (void **)&r) != REDIS_OK) {
		show_error(c, c->reader->errstr, strlen(c->reader->errstr));
		return OC_FATAL;
	}
	if (r == NULL)
		return OC_PARTIAL;
	if (r->type == REDIS_REPLY_ERROR) {
		show_error(c, r->str, r->len);
		oc = OC_ERROR;
	} else if (c->step == ST_SETUP) {
		char *sha = lg.sha[lg.nscripts - c->setup_left];

		if (r->type != REDIS_REPLY_STRING || r->len >= 64) {
			oc = OC_ERROR;
		} else {
			memcpy(sha, r->str, r->len);
			sha[r->len] = '\0';
			oc = OC_SETUP;
		}
	} else if (c->step == ST_PING) {
		oc = r->type == REDIS_REPLY_STATUS ? OC_PONG : OC_ERROR;
	} else if (c->step == ST_RELEASE) {
		oc = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ?
		    OC_RELEASED : OC_ERROR;
	} else if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
		oc = OC_GRANTED;  /* the fence */
	} else if (r->type == REDIS_REPLY_NIL) {
		oc = OC_HELD;
	} else {
		oc = OC_ERROR;
	}
	freeReplyObject(r);
	return oc;
}

/* --- etcd --------------------------------------------------------------- */

static size_t
base64(char *out, const char *in, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = (const unsigned char *)in;
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		out[o++] = tab[s[i] >> 2];
		out[o++] = tab[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
		out[o++] = tab[((s[i + 1] & 15) << 2) | (s[i + 2] >> 6)];
		out[o++] = tab[s[i + 2] & 63];
	}
	if (i < len) {
		out[o++] = tab[s[i] >> 2];
		if (i + 1 < len) {
			out[o++] = tab[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
			out[o++] = tab[(s[i + 1] & 15) << 2];
		} else {
			out[o++] = tab[(s[i] & 3) << 4];
			out[o++] = '=';
		}
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static void
etcd_post(struct conn *c, const char *path, const char *body)
{
	char req[1024];
	int n = snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\n"
	    "Host: %s:%d\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s", path, lg.host, lg.port,
	    strlen(body), body);

	if (n < 0 || (size_t)n >= sizeof(req))
		fail("etcd request too long for %s", path);
	conn_send(c, req, (size_t)n);
}

static void
etcd_setup(struct conn *c)
{
	char body[64];

	snprintf(body, sizeof(body), "{\"TTL\":%d}", LOADGEN_ETCD_LEASE_TTL_S);
	etcd_post(c, "/v3/lease/grant", body);
	c->setup_left = 1;
}

static void
etcd_acquire(struct conn *c)
{
	char name64[200], body[400];

	base64(name64, c->name, strlen(c->name));
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"lease\":\"%s\"}",
	    name64, c->lease);
	etcd_post(c, "/v3/lock/lock", body);
}

/*
 * etcd's lock API has no try.  A try-lock on etcd's KV API is a transaction:
 * if the key was never created, put it with our lease.  A failed try still
 * goes through raft (the transaction has a write branch).
 */
static void
etcd_try(struct conn *c)
{
	char key64[200], body[700];

	base64(key64, c->name, strlen(c->name));
	snprintf(body, sizeof(body), "{\"compare\":[{\"target\":\"CREATE\","
	    "\"result\":\"EQUAL\",\"key\":\"%s\",\"create_revision\":\"0\"}],"
	    "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"\","
	    "\"lease\":\"%s\"}}]}", key64, key64, c->lease);
	etcd_post(c, "/v3/kv/txn", body);
}

static void
etcd_release(struct conn *c)
{
	char body[300];

	snprintf(body, sizeof(body), "{\"key\":\"%s\"}", c->token);
	etcd_post(c, "/v3/lock/unlock", body);
}

/*
 * One transaction the shape of lockd's cluster store's (store_etcd.c): if
 * the guard key's create revision and the high-water key's mod revision are
 * what the writer last saw, put the high-water key and the records.  The
 * guard key is never created (its create revision compares as 0): the
 * compare costs the same.  Each record is a 160-byte value, the size of
 * lockd's record (daemon/format.h).
 */
#define LOADGEN_TXN_VALUE 160

static void
etcd_txn(struct conn *c)
{
	char key[200], key64[280], val[LOADGEN_TXN_VALUE], val64[220];
	char head[256], hwm64[280], guard64[280];
	size_t cap = (size_t)lg.records * 600 + 1024, len = 0;
	char *body = malloc(cap);
	int i, n;

	if (body == NULL)
		die("malloc");
	memset(val, 'v', sizeof(val));
	base64(val64, val, sizeof(val));
	snprintf(key, sizeof(key), "%s/leader", lg.prefix);
	base64(guard64, key, strlen(key));
	snprintf(key, sizeof(key), "%s/%d/hwm", lg.prefix, c->id);
	base64(hwm64, key, strlen(key));
	len += (size_t)snprintf(body + len, cap - len, "{\"compare\":["
	    "{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	    "\"create_revision\":\"0\"},"
	    "{\"key\":\"%s\",\"target\":\"MOD\",\"result\":\"EQUAL\","
	    "\"mod_revision\":\"%s\"}],\"success\":["
	    "{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}",
	    guard64, hwm64, c->hwm_mod, hwm64, val64);
	for (i = 0; i < lg.records; i++) {
		snprintf(key, sizeof(key), "%s/%d/locks/%d", lg.prefix, c->id,
		    i);
		base64(key64, key, strlen(key));
		len += (size_t)snprintf(body + len, cap - len,
		    ",{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}",
		    key64, val64);
	}
	len += (size_t)snprintf(body + len, cap - len, "],\"failure\":["
	    "{\"request_range\":{\"key\":\"%s\"}}]}", hwm64);
	if (len >= cap)
		fail("transaction too long");
	n = snprintf(head, sizeof(head), "POST /v3/kv/txn HTTP/1.1\r\n"
	    "Host: %s:%d\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n", lg.host, lg.port, len);
	conn_send(c, head, (size_t)n);
	conn_send(c, body, len);
	free(body);
}

/* Finds "field": in a JSON body and returns what follows it, or NULL. */
static const char *
json_find(const char *body, size_t len, const char *field)
{
	char pat[64];
	size_t plen = (size_t)snprintf(pat, sizeof(pat), "\"%s\":", field);
	const char *p = memmem(body, len, pat, plen);

	return p ? p + plen : NULL;
}

/* Copies a string or number field (quotes dropped); false when absent. */
static bool
json_scalar(const char *body, size_t len, const char *field, char *out,
    size_t cap)
{
	const char *p = json_find(body, len, field), *end = body + len;
	size_t n = 0;

	if (p == NULL)
		return false;
	if (p < end && *p == '"')
		p++;
	while (p < end && *p != '"' && *p != ',' && *p != '}' && n + 1 < cap)
		out[n++] = *p++;
	out[n] = '\0';
	return n > 0;
}

/*
 * Parses one HTTP/1.1 response: Content-Length or chunked body.  Returns
 * bytes consumed, 0 when incomplete, -1 when malformed.  A chunked body is
 * decoded into scratch.
 */
static long
http_response(const char *buf, size_t len, int *status, const char **body,
    size_t *body_len, char *scratch, size_t scratch_cap)
{
	const char *hend = memmem(buf, len, "\r\n\r\n", 4), *p, *end;
	size_t hlen, clen = 0, o = 0;
	bool chunked = false, has_len = false;

	if (hend == NULL)
		return len > LOADGEN_IN_CAP / 2 ? -1 : 0;
	hlen = (size_t)(hend - buf) + 4;
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0)
		return -1;
	*status = atoi(buf + 9);
	for (p = memchr(buf, '\n', hlen); p != NULL && p + 1 < hend;
	    p = memchr(p + 1, '\n', (size_t)(hend - p - 1))) {
		const char *h = p + 1;

		if (strncasecmp(h, "Content-Length:", 15) == 0) {
			clen = strtoul(h + 15, NULL, 10);
			has_len = true;
		} else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0 &&
		    strncasecmp(h + 18 + strspn(h + 18, " "), "chunked", 7)
		    == 0) {
			chunked = true;
		}
	}
	if (!chunked) {
		if (!has_len)
			return -1;
		if (len < hlen + clen)
			return 0;
		*body = buf + hlen;
		*body_len = clen;
		return (long)(hlen + clen);
	}
	p = buf + hlen;
	end = buf + len;
	for (;;) {
		const char *crlf = memmem(p, (size_t)(end - p), "\r\n", 2);
		size_t n;

		if (crlf == NULL)
			return 0;
		n = strtoul(p, NULL, 16);
		p = crlf + 2;
		if (n == 0) {
			/* No trailers from the gateway: the final CRLF. */
			if (end - p < 2)
				return 0;
			*body = scratch;
			*body_len = o;
			return (long)(p + 2 - buf);
		}
		if ((size_t)(end - p) < n + 2)
			return 0;
		if (o + n > scratch_cap)
			return -1;
		memcpy(scratch + o, p, n);
		o += n;
		p += n + 2;
	}
}

static enum outcome
etcd_next(struct conn *c, size_t *pos)
{
	static char scratch[LOADGEN_IN_CAP];
	const char *body = NULL;
	size_t body_len = 0;
	int status = 0;
	long used;

	used = http_response(c->in + *pos, c->in_len - *pos, &status, &body,
	    &body_len, scratch, sizeof(scratch));
	if (used == 0)
		return OC_PARTIAL;
	if (used < 0) {
		show_error(c, c->in + *pos, c->in_len - *pos);
		return OC_FATAL;
	}
	*pos += (size_t)used;
	if (status != 200 || json_find(body, body_len, "error") != NULL) {
		show_error(c, body, body_len);
		return OC_ERROR;
	}
	switch (c->step) {
	case ST_SETUP:
		return json_scalar(body, body_len, "ID", c->lease,
		    sizeof(c->lease)) ? OC_SETUP : OC_ERROR;
	case ST_ACQUIRE:
		return json_scalar(body, body_len, "key", c->token,
		    sizeof(c->token)) ? OC_GRANTED : OC_ERROR;
	case ST_TRY:
		return memmem(body, body_len, "\"succeeded\":true", 16) ?
		    OC_GRANTED : OC_HELD;
	case ST_TXN:
		/* The header's revision comes first: the new mod revision. */
		if (memmem(body, body_len, "\"succeeded\":true", 16) == NULL) {
			/* Refused: the failure branch read the key, whose
			 * mod revision the next try compares. */
			if (!json_scalar(body, body_len, "mod_revision",
			    c->hwm_mod, sizeof(c->hwm_mod)))
				strcpy(c->hwm_mod, "0");
			show_error(c, body, body_len);
			return OC_ERROR;
		}
		if (!json_scalar(body, body_len, "revision", c->hwm_mod,
		    sizeof(c->hwm_mod)))
			return OC_ERROR;
		return OC_GRANTED;
	case ST_RELEASE:
		return OC_RELEASED;
	default:
		return OC_ERROR;
	}
}

/* --- the protocol table ------------------------------------------------- */

static void
send_setup(struct conn *c)
{
	c->step = ST_SETUP;
	if (lg.server == SERVER_REDIS)
		redis_setup(c);
	else if (lg.server == SERVER_ETCD)
		etcd_setup(c);
}

static void
send_acquire(struct conn *c)
{
	c->step = ST_ACQUIRE;
	if (lg.server == SERVER_LOCKD)
		lockd_acquire(c);
	else if (lg.server == SERVER_REDIS)
		redis_acquire(c);
	else
		etcd_acquire(c);
}

static void
send_try(struct conn *c)
{
	c->step = ST_TRY;
	if (lg.server == SERVER_LOCKD)
		lockd_try(c);
	else if (lg.server == SERVER_REDIS)
		redis_acquire(c);
	else
		etcd_try(c);
}

static void
send_release(struct conn *c)
{
	c->step = ST_RELEASE;
	if (lg.server == SERVER_LOCKD)
		lockd_release(c);
	else if (lg.server == SERVER_REDIS)
		redis_release(c);
	else
		etcd_release(c);
}

static void
send_ping(struct conn *c)
{
	c->step = ST_PING;
	if (lg.server == SERVER_LOCKD)
		lockd_ping(c);
	else
		redis_ping(c);
}

/* --- the workloads ------------------------------------------------------ */

static void
record(struct samples *s, double t, double v)
{
	if (lg.measuring && t >= lg.measure_start)
		samples_push(s, v);
}

static void
start_cycle(struct conn *c, double t)
{
	c->started = t;
	if (lg.workload == W_TXN) {
		c->step = ST_TXN;
		etcd_txn(c);
	} else if (lg.workload == W_TRY)
		send_try(c);
	else
		send_acquire(c);
}

/*
 * The TRY storm's holder takes the lock the way its tryers test it: lockd
 * and Redis with the ordinary acquire, etcd with the same transaction.
 */
static void
start_holder(struct conn *c, double t)
{
	c->started = t;
	if (lg.server == SERVER_ETCD)
		send_try(c);
	else
		send_acquire(c);
}

static void
holder_granted(struct conn *c, enum outcome oc, double t)
{
	int i;

	if (oc != OC_GRANTED)
		fail("the holder of the TRY storm's lock was refused on %s",
		    lg.host);
	c->step = ST_HOLDING;
	for (i = 1; i < lg.nconns; i++)
		start_cycle(&lg.conns[i], t);
}

/*
 * With -N above 1, each name is a semaphore of that many permits and gets
 * that many holders in a row (the name is formatted per request, so one
 * connection's pipeline may span two names).
 */
static void
hold_next(struct conn *c)
{
	while (c->inflight < lg.depth && lg.sent < lg.max_cycles) {
		int digits = lg.name_len - (int)strlen(lg.prefix) - 1;

		snprintf(c->name, sizeof(c->name), "%s/%0*ld", lg.prefix,
		    digits > 0 ? digits : 1, lg.next_name++ / lg.limit);
		send_acquire(c);
		c->inflight++;
		lg.sent++;
	}
}

/* --- sem and rw: the clients' view of the holders ----------------------- */

static void
violation(const struct conn *c, const char *what)
{
	if (lg.violations++ < LOADGEN_VIOLATIONS_SHOWN)
		fprintf(stderr, "loadgen: overlap: connection %d (%s) was "
		    "granted while %s (holders then: %ld, of them readers %ld, "
		    "writers %ld)\n", c->id, lg.workload == W_SEM ? "a permit" :
		    c->writer ? "a writer" : "a reader", what, lg.held_now,
		    lg.readers_now, lg.writers_now);
}

/* Remembers a release that made room, for the next grant to pair with. */
static void
released_push(double t, bool writer)
{
	if (lg.released_len == lg.released_cap) {
		/* Full: the oldest is forgotten (never paired). */
		lg.released_head = (lg.released_head + 1) % lg.released_cap;
		lg.released_len--;
	}
	lg.released[(lg.released_head + lg.released_len) % lg.released_cap] = t;
	lg.released_writer[(lg.released_head + lg.released_len) %
	    lg.released_cap] = writer;
	lg.released_len++;
}

static bool
released_pop(double *t, bool *writer)
{
	if (lg.released_len == 0)
		return false;
	*t = lg.released[lg.released_head];
	*writer = lg.released_writer[lg.released_head];
	lg.released_head = (lg.released_head + 1) % lg.released_cap;
	lg.released_len--;
	return true;
}

/*
 * A grant arrived: the holders it joins must admit it.  A hold counts from
 * here to its release leaving (kinds_released), inside the server's own
 * hold, so an overlap seen here happened on the server.
 */
static void
kinds_granted(struct conn *c, double t)
{
	double released;
	bool by_writer;

	if (lg.workload == W_SEM) {
		if (lg.held_now >= lg.limit)
			violation(c, "every permit was held");
	} else if (c->writer) {
		if (lg.readers_now > 0 || lg.writers_now > 0)
			violation(c, "others held");
		lg.writers_now++;
	} else {
		if (lg.writers_now > 0)
			violation(c, "a writer held");
		lg.readers_now++;
	}
	lg.held_now++;
	c->release_at = t + lg.hold;
	lg.holders[(lg.holders_head + lg.holders_len++) % lg.nconns] = c;
	if (lg.held_now > lg.max_held)
		lg.max_held = lg.held_now;
	if (lg.readers_now > lg.max_readers)
		lg.max_readers = lg.readers_now;
	/*
	 * A hand-off: this request was waiting when the room was made.  In rw,
	 * after the last reader's release, only a writer's grant is one: a
	 * reader's may have been sent before that release arrived (others
	 * still held on the server), and ends the lock's free moment.  While
	 * a writer holds, nobody is granted, so any grant read after its
	 * release is one.
	 */
	if (released_pop(&released, &by_writer) && released > c->started &&
	    (lg.workload == W_SEM || by_writer || c->writer))
		record(&lg.gap, t, t - released);
}

static void
kinds_released(struct conn *c, double t)
{
	send_release(c);
	lg.held_now--;
	if (lg.workload == W_RW) {
		if (c->writer)
			lg.writers_now--;
		else
			lg.readers_now--;
	}
	/* sem: every release frees a permit; rw: the last one frees the
	 * lock. */
	if (lg.workload == W_SEM || lg.held_now == 0)
		released_push(t, c->writer);
}

/*
 * Ends the holds that are due, oldest first, after a pass of the loop has
 * handled what it read: with -h 0 a hold lasts to the end of the pass that
 * granted it, so the grants that arrived together overlap.
 */
static void
kinds_release_due(void)
{
	double t = now_s();

	while (lg.holders_len > 0) {
		struct conn *c = lg.holders[lg.holders_head];

		if (c->release_at > t)
			break;
		lg.holders_head = (lg.holders_head + 1) % lg.nconns;
		lg.holders_len--;
		if (!c->dead)
			kinds_released(c, t);
	}
}

/* Whatever the protocol, a reply moves the workload's state machine. */
static void
on_outcome(struct conn *c, enum outcome oc, double t)
{
	if (oc == OC_ERROR)
		lg.errors++;
	switch (c->step) {
	case ST_SETUP:
		if (oc != OC_SETUP)
			fail("setup failed on %s", lg.host);
		if (--c->setup_left == 0) {
			c->step = ST_NONE;
			lg.ready++;
		}
		return;
	case ST_PING:
		if (oc != OC_PONG)
			fail("PING failed on %s", lg.host);
		c->step = ST_NONE;
		lg.ready++;
		return;
	case ST_ACQUIRE:
		if (lg.workload == W_TRY) {
			holder_granted(c, oc, t);
			return;
		}
		if (lg.workload == W_HOLD) {
			c->inflight--;
			if (oc == OC_GRANTED)
				lg.held++;
			hold_next(c);
			return;
		}
		if (oc == OC_HELD) {
			/* Redis: no queue, so spin. */
			lg.retries++;
			send_acquire(c);
			return;
		}
		if (oc != OC_GRANTED) {
			start_cycle(c, t);
			return;
		}
		record(&lg.acq, t, t - c->started);
		if (lg.measuring && t >= lg.measure_start &&
		    t - c->started > lg.wait_max[c->writer])
			lg.wait_max[c->writer] = t - c->started;
		if (lg.workload == W_SEM || lg.workload == W_RW) {
			kinds_granted(c, t);
			return;
		}
		if (lg.workload == W_HANDOFF) {
			/* From the previous holder's RELEASE leaving. */
			if (lg.last_release > lg.last_grant)
				record(&lg.gap, t, t - lg.last_release);
			lg.last_grant = t;
			lg.last_release = now_s();
		}
		send_release(c);
		return;
	case ST_TRY:
		if (c->id == 0) {
			holder_granted(c, oc, t);
			return;
		}
		if (oc == OC_HELD) {
			if (lg.measuring && t >= lg.measure_start) {
				samples_push(&lg.lat, t - c->started);
				lg.cycles++;
			}
			start_cycle(c, t);
		} else if (oc == OC_GRANTED) {
			/* Should not happen: the holder keeps the lock. */
			lg.errors++;
			c->step = ST_HOLDING;
		} else {
			start_cycle(c, t);
		}
		return;
	case ST_TXN:
		if (oc == OC_GRANTED && lg.measuring &&
		    t >= lg.measure_start) {
			samples_push(&lg.lat, t - c->started);
			lg.cycles++;
		}
		start_cycle(c, t);
		return;
	case ST_RELEASE:
		if (oc == OC_RELEASED) {
			if (lg.measuring && t >= lg.measure_start) {
				samples_push(&lg.lat, t - c->started);
				lg.cycles++;
				if (lg.workload == W_RW && c->writer) {
					samples_push(&lg.lat_write,
					    t - c->started);
					lg.cycles_write++;
				} else if (lg.workload == W_RW) {
					samples_push(&lg.lat_read,
					    t - c->started);
					lg.cycles_read++;
				}
			}
		}
		start_cycle(c, t);
		return;
	default:
		lg.errors++;
		return;
	}
}

static void
on_readable(struct conn *c)
{
	char buf[65536];
	size_t pos = 0;
	ssize_t r;
	double t;

	if (lg.server == SERVER_REDIS)
		r = read(c->fd, buf, sizeof(buf));
	else
		r = read(c->fd, c->in + c->in_len, LOADGEN_IN_CAP - c->in_len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_kill(c, r == 0 ? "closed by the server" :
		    strerror(errno));
		return;
	}
	t = now_s();
	if (lg.server == SERVER_REDIS &&
	    redisReaderFeed(c->reader, buf, (size_t)r) != REDIS_OK) {
		conn_kill(c, "redisReaderFeed failed");
		return;
	}
	if (lg.server != SERVER_REDIS)
		c->in_len += (size_t)r;
	while (!c->dead) {
		enum outcome oc;

		if (lg.server == SERVER_LOCKD)
			oc = lockd_next(c, &pos);
		else if (lg.server == SERVER_REDIS)
			oc = redis_next(c);
		else
			oc = etcd_next(c, &pos);
		if (oc == OC_PARTIAL)
			break;
		if (oc == OC_FATAL) {
			conn_kill(c, "unparseable reply");
			return;
		}
		on_outcome(c, oc, t);
	}
	if (lg.server != SERVER_REDIS) {
		memmove(c->in, c->in + pos, c->in_len - pos);
		c->in_len -= pos;
		if (c->in_len == LOADGEN_IN_CAP)
			conn_kill(c, "reply too long");
	}
}

/* One pass of the loop: wait at most until `until`, handle, flush. */
static void
poll_once(double until)
{
	struct epoll_event events[256];
	double left = until - now_s();
	int i, n, ms;

	if (lg.holders_len > 0 &&
	    lg.holders[lg.holders_head]->release_at - now_s() < left)
		left = lg.holders[lg.holders_head]->release_at - now_s();
	ms = left <= 0 ? 0 : left > 0.1 ? 100 : (int)(left * 1000) + 1;
	flush_all();
	n = epoll_wait(lg.ep, events, 256, ms);
	if (n < 0 && errno != EINTR)
		die("epoll_wait");
	for (i = 0; i < n; i++) {
		struct conn *c = events[i].data.ptr;

		if (c->dead)
			continue;
		if (events[i].events & EPOLLOUT)
			conn_flush(c);
		if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
			on_readable(c);
	}
	kinds_release_due();
	flush_all();
}

/* --- connections -------------------------------------------------------- */

static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void
open_conns(void)
{
	struct sockaddr_in addr;
	struct timeval tv = { LOADGEN_CONNECT_TIMEOUT_S, 0 }, zero = { 0, 0 };
	int i;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)lg.port);
	if (inet_pton(AF_INET, lg.host, &addr.sin_addr) != 1)
		fail("bad address %s", lg.host);
	for (i = 0; i < lg.nconns; i++) {
		struct conn *c = &lg.conns[i];
		struct epoll_event ev;
		int one = 1;

		c->id = i;
		strcpy(c->hwm_mod, "0");
		if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
			die("socket");
		/* A blocking connect, bounded by SO_SNDTIMEO. */
		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
			die("connect");
		setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &zero, sizeof(zero));
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fcntl(c->fd, F_SETFL, O_NONBLOCK) != 0)
			die("fcntl");
		if (lg.server == SERVER_REDIS &&
		    (c->reader = redisReaderCreate()) == NULL)
			die("redisReaderCreate");
		c->writer = lg.workload == W_RW && i >= lg.readers;
		if (lg.workload == W_HANDOFF || lg.workload == W_TRY ||
		    lg.workload == W_SEM || lg.workload == W_RW)
			snprintf(c->name, sizeof(c->name), "%s/hot",
			    lg.prefix);
		else
			snprintf(c->name, sizeof(c->name), "%s/%d", lg.prefix,
			    i);
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(lg.ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
			die("epoll_ctl");
	}
}

/* Runs per-connection setup (or a PING) on every connection, bounded. */
static void
setup_conns(bool ping)
{
	double until = now_s() + LOADGEN_SETUP_SECONDS;
	int i;

	for (i = 0; i < lg.nconns; i++) {
		if (ping)
			send_ping(&lg.conns[i]);
		else if (lg.server != SERVER_LOCKD)
			send_setup(&lg.conns[i]);
		else
			lg.ready++;
	}
	while (lg.ready + lg.dead < lg.nconns && now_s() < until)
		poll_once(until);
	if (lg.ready < lg.nconns) {
		fprintf(stderr, "loadgen: %ld of %d connections ready\n",
		    lg.ready, lg.nconns);
		exit(1);
	}
}

static void
close_conns(void)
{
	int i;

	for (i = 0; i < lg.nconns; i++) {
		if (!lg.conns[i].dead)
			close(lg.conns[i].fd);
		if (lg.conns[i].reader != NULL)
			redisReaderFree(lg.conns[i].reader);
		free(lg.conns[i].out);
	}
}

static const char *
server_name(void)
{
	return lg.server == SERVER_LOCKD ? "lockd" :
	    lg.server == SERVER_REDIS ? "redis" : "etcd";
}

static const char *
workload_name(void)
{
	static const char *const names[] = { "cycle", "handoff", "try",
	    "hold", "idle", "txn", "first", "sem", "rw", "scripts" };

	return names[lg.workload];
}

static void
print_head(void)
{
	if (lg.label != NULL && lg.label[0] != '\0')
		printf("%s ", lg.label);
	printf("server=%s workload=%s conns=%d", server_name(), workload_name(),
	    lg.nconns);
}

/* --- the runs ----------------------------------------------------------- */

static int
run_closed_loop(void)
{
	double t0, t_end, elapsed, cpu0 = 0, cpu1, self0 = 0, self1;
	bool snapped = false;
	int i;

	setup_conns(false);
	t0 = now_s();
	lg.measure_start = t0 + lg.warmup;
	lg.deadline = lg.measure_start + lg.seconds;
	lg.measuring = true;
	if (lg.warmup <= 0) {
		cpu0 = proc_cpu_s(lg.server_pid);
		self0 = self_cpu_s();
		snapped = true;
	}
	if (lg.workload == W_TRY) {
		/* Connection 0 takes the lock first and keeps it. */
		start_holder(&lg.conns[0], t0);
	} else {
		for (i = 0; i < lg.nconns; i++)
			start_cycle(&lg.conns[i], t0);
	}
	/* The warm-up's samples and CPU time are not counted. */
	while (lg.cycles < lg.max_cycles && lg.dead < lg.nconns &&
	    !(lg.stop_on_overlap && lg.violations > 0)) {
		double t = now_s();

		if (t >= lg.deadline)
			break;
		if (!snapped && t >= lg.measure_start) {
			cpu0 = proc_cpu_s(lg.server_pid);
			self0 = self_cpu_s();
			snapped = true;
		}
		poll_once(snapped ? lg.deadline : lg.measure_start);
	}
	t_end = now_s();
	/* A waiter never granted waits longest of all: count it too. */
	for (i = 0; i < lg.nconns; i++)
		if (!lg.conns[i].dead && lg.conns[i].step == ST_ACQUIRE &&
		    t_end - lg.conns[i].started > lg.wait_max[lg.conns[i].writer])
			lg.wait_max[lg.conns[i].writer] =
			    t_end - lg.conns[i].started;
	cpu1 = proc_cpu_s(lg.server_pid);
	self1 = self_cpu_s();
	elapsed = t_end - lg.measure_start;
	samples_sort(&lg.lat);
	print_head();
	printf(" cycles=%ld seconds=%.3f rate=%.1f errors=%ld retries=%ld "
	    "p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f "
	    "mean_us=%.1f", lg.cycles, elapsed,
	    elapsed > 0 ? (double)lg.cycles / elapsed : 0, lg.errors,
	    lg.retries, percentile_us(&lg.lat, 0.50),
	    percentile_us(&lg.lat, 0.90), percentile_us(&lg.lat, 0.99),
	    percentile_us(&lg.lat, 0.999), percentile_us(&lg.lat, 1.0),
	    mean_us(&lg.lat));
	if (lg.workload == W_CYCLE || lg.workload == W_HANDOFF ||
	    lg.workload == W_SEM || lg.workload == W_RW) {
		samples_sort(&lg.acq);
		printf(" acq_p50_us=%.1f acq_p99_us=%.1f acq_p999_us=%.1f",
		    percentile_us(&lg.acq, 0.50), percentile_us(&lg.acq, 0.99),
		    percentile_us(&lg.acq, 0.999));
	}
	if (lg.workload == W_TXN)
		printf(" records_per_txn=%d records_rate=%.1f", lg.records,
		    elapsed > 0 ? (double)lg.cycles * lg.records / elapsed : 0);
	if (lg.workload == W_RW) {
		samples_sort(&lg.lat_read);
		samples_sort(&lg.lat_write);
		printf(" readers=%d writers=%d read_cycles=%ld read_rate=%.1f "
		    "read_p50_us=%.1f read_p99_us=%.1f write_cycles=%ld "
		    "write_rate=%.1f write_p50_us=%.1f write_p99_us=%.1f",
		    lg.readers, lg.nconns - lg.readers, lg.cycles_read,
		    elapsed > 0 ? (double)lg.cycles_read / elapsed : 0,
		    percentile_us(&lg.lat_read, 0.50),
		    percentile_us(&lg.lat_read, 0.99), lg.cycles_write,
		    elapsed > 0 ? (double)lg.cycles_write / elapsed : 0,
		    percentile_us(&lg.lat_write, 0.50),
		    percentile_us(&lg.lat_write, 0.99));
	}
	if (lg.workload == W_SEM)
		printf(" wait_max_us=%.1f", lg.wait_max[0] * 1e6);
	if (lg.workload == W_RW)
		printf(" wait_max_us=%.1f read_wait_max_us=%.1f "
		    "write_wait_max_us=%.1f",
		    (lg.wait_max[0] > lg.wait_max[1] ? lg.wait_max[0] :
		    lg.wait_max[1]) * 1e6, lg.wait_max[0] * 1e6,
		    lg.wait_max[1] * 1e6);
	if (lg.workload == W_SEM || lg.workload == W_RW)
		printf(" limit=%d max_holders=%ld max_readers=%ld "
		    "violations=%ld%s", lg.workload == W_SEM ? lg.limit : 1,
		    lg.max_held, lg.max_readers, lg.violations,
		    lg.broken ? " broken=1" : "");
	if (lg.workload == W_HANDOFF || lg.workload == W_SEM ||
	    lg.workload == W_RW) {
		samples_sort(&lg.gap);
		printf(" handoff_samples=%zu handoff_p50_us=%.1f "
		    "handoff_p99_us=%.1f handoff_p999_us=%.1f", lg.gap.n,
		    percentile_us(&lg.gap, 0.50), percentile_us(&lg.gap, 0.99),
		    percentile_us(&lg.gap, 0.999));
	}
	if (lg.server_pid > 0)
		printf(" server_cpu_us_per_cycle=%.2f",
		    lg.cycles ? (cpu1 - cpu0) * 1e6 / (double)lg.cycles : 0);
	printf(" client_cpu_us_per_cycle=%.2f\n",
	    lg.cycles ? (self1 - self0) * 1e6 / (double)lg.cycles : 0);
	return lg.violations > 0 ? 4 : 0;
}

static int
run_hold(void)
{
	struct rss before = proc_rss(lg.server_pid), after;
	double t0, elapsed, cpu0, cpu1;
	int i;

	if (lg.server != SERVER_LOCKD)
		fail("the hold workload speaks lockd only");
	setup_conns(false);
	t0 = now_s();
	cpu0 = proc_cpu_s(lg.server_pid);
	lg.deadline = t0 + lg.seconds;
	for (i = 0; i < lg.nconns; i++)
		hold_next(&lg.conns[i]);
	while (lg.held + lg.errors < lg.max_cycles && lg.dead < lg.nconns &&
	    now_s() < lg.deadline)
		poll_once(lg.deadline);
	elapsed = now_s() - t0;
	cpu1 = proc_cpu_s(lg.server_pid);
	after = proc_rss(lg.server_pid);
	print_head();
	printf(" held=%ld seconds=%.3f rate=%.1f errors=%ld",
	    lg.held, elapsed, (double)lg.held / elapsed, lg.errors);
	if (lg.limit > 1)
		printf(" limit=%d holders_per_name=%d", lg.limit, lg.limit);
	if (lg.server_pid > 0)
		printf(" server_cpu_us_per_lock=%.2f rss_before_kb=%ld "
		    "rss_after_kb=%ld anon_before_kb=%ld anon_after_kb=%ld "
		    "file_after_kb=%ld bytes_per_lock=%.1f "
		    "anon_bytes_per_lock=%.1f",
		    lg.held ? (cpu1 - cpu0) * 1e6 / (double)lg.held : 0,
		    before.vm_kb, after.vm_kb, before.anon_kb, after.anon_kb,
		    after.file_kb,
		    lg.held ? (double)(after.vm_kb - before.vm_kb) * 1024 /
		    (double)lg.held : 0,
		    lg.held ? (double)(after.anon_kb - before.anon_kb) * 1024 /
		    (double)lg.held : 0);
	printf("\n");
	return lg.held == lg.max_cycles ? 0 : 1;
}

static int
run_idle(void)
{
	struct rss before = proc_rss(lg.server_pid), after;
	double t0 = now_s(), settle;

	if (lg.server == SERVER_ETCD)
		fail("the idle workload speaks lockd and redis, not etcd");
	open_conns();
	setup_conns(true);
	settle = now_s() + LOADGEN_IDLE_SETTLE_S;
	while (now_s() < settle)
		poll_once(settle);
	after = proc_rss(lg.server_pid);
	print_head();
	printf(" ready=%ld seconds=%.3f errors=%ld", lg.ready, now_s() - t0,
	    lg.errors);
	if (lg.server_pid > 0)
		printf(" rss_before_kb=%ld rss_after_kb=%ld "
		    "bytes_per_conn=%.1f anon_bytes_per_conn=%.1f",
		    before.vm_kb, after.vm_kb,
		    (double)(after.vm_kb - before.vm_kb) * 1024 / lg.nconns,
		    (double)(after.anon_kb - before.anon_kb) * 1024 /
		    lg.nconns);
	printf("\n");
	return lg.errors ? 1 : 0;
}

/* Reads one reply line on a blocking socket; false on timeout or close. */
static bool
probe_line(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t r;

	while (got < cap - 1 && memchr(buf, '\n', got) == NULL) {
		if ((r = read(fd, buf + got, cap - 1 - got)) <= 0)
			return false;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return memchr(buf, '\n', got) != NULL;
}

/*
 * Does this lockd take the workload's options?  One TRY with them on a name
 * of its own, on a connection of its own, released at once if granted.  A
 * build without them answers ERR BADARG (an option it does not know) or
 * ERR BADREQ (the spec's answer for what is not built yet).  Anything else
 * is fatal: the bench should not run against a server it does not follow.
 * HELD means the options were understood (bench/noop.c answers every TRY
 * so); there is nothing to release then.
 */
static bool
lockd_supports_options(void)
{
	struct timeval tv = { LOADGEN_PROBE_TIMEOUT_S, 0 };
	struct sockaddr_in a;
	struct proto_reply rep;
	struct proto_error err;
	char req[512], buf[1024], handle[64];
	size_t used, n;
	int fd, len;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)lg.port);
	if (inet_pton(AF_INET, lg.host, &a.sin_addr) != 1)
		fail("bad address %s", lg.host);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (lg.workload == W_RW)
		len = snprintf(req, sizeof(req), "TRY %s/probe mode=shared "
		    "lease=10s\n", lg.prefix);
	else
		len = snprintf(req, sizeof(req), "TRY %s/probe limit=%d "
		    "lease=10s\n", lg.prefix, lg.limit);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		die("connect");
	if (write(fd, req, (size_t)len) != len || !probe_line(fd, buf,
	    sizeof(buf)))
		fail("no reply to the probe %.*s", len - 1, req);
	if (proto_parse_reply(buf, strlen(buf), sizeof(buf), &rep, &used,
	    &err) != PROTO_DONE)
		fail("bad reply to the probe: %s", buf);
	if (rep.kind == PROTO_REPLY_ERROR && (rep.error == PROTO_ERR_BADARG ||
	    rep.error == PROTO_ERR_BADREQ)) {
		close(fd);
		fprintf(stderr, "loadgen: %.*s -> %s", len - 1, req, buf);
		return false;
	}
	if (rep.kind == PROTO_REPLY_HELD) {
		close(fd);
		return true;
	}
	if (rep.kind != PROTO_REPLY_GRANTED)
		fail("unexpected reply to the probe %.*s: %s", len - 1, req,
		    buf);
	n = proto_format_handle(handle, sizeof(handle) - 1, rep.handle);
	handle[n] = '\0';
	len = snprintf(req, sizeof(req), "RELEASE %s/probe %s\n", lg.prefix,
	    handle);
	if (write(fd, req, (size_t)len) != len || !probe_line(fd, buf,
	    sizeof(buf)) || strncmp(buf, "RELEASED ", 9) != 0)
		fail("the probe's lock was not released");
	close(fd);
	return true;
}

/*
 * One ACQUIRE on a fresh connection to 127.0.0.1:port; true when GRANTED.
 * A node that does not answer within 2 s (a leader still loading, say) is
 * given up for this attempt.
 */
static bool
first_try(int port, long attempt)
{
	struct timeval tv = { 2, 0 };
	struct sockaddr_in a;
	char req[256], buf[512];
	size_t got = 0;
	ssize_t r;
	bool granted = false;
	int fd, n;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, lg.host, &a.sin_addr) != 1)
		fail("bad address %s", lg.host);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = snprintf(req, sizeof(req), "ACQUIRE %s/%ld lease=%s\n", lg.prefix,
	    attempt, lg.lease);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, req, (size_t)n) == n) {
		while (got < sizeof(buf) - 1 && memchr(buf, '\n', got) == NULL &&
		    (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
			got += (size_t)r;
		granted = got >= 8 && memcmp(buf, "GRANTED ", 8) == 0;
	}
	close(fd);
	return granted;
}

/* --- scripts: the Redis scripts checked call by call --------------------- */

#define SCRIPTS_TTL_SHORT_MS 200    /* a lease the check lets expire */
#define SCRIPTS_EXPIRY_WAIT_US 400000

static struct scripts_check {
	redisContext *rc;
	int passed, failed;
	long long last_fence;
} sc;

/*
 * One script call; returns the fence (> 0) for a grant, 0 for a refusal
 * (nil, or a release's 0), 1 for a release's 1.  Dies on an error reply.
 */
static long long
scripts_call(const char *script, const char *key, const char *token,
    int limit, int ttl_ms)
{
	char fence_key[160], ttl[32], lim[16];
	const char *argv[8];
	redisReply *r;
	long long v;
	int argc = 0;

	snprintf(fence_key, sizeof(fence_key), "%s#fence", key);
	snprintf(ttl, sizeof(ttl), "%d", ttl_ms);
	snprintf(lim, sizeof(lim), "%d", limit);
	argv[argc++] = "EVAL";
	argv[argc++] = script;
	if (ttl_ms == 0) {      /* a release: KEYS[1], ARGV[1] */
		argv[argc++] = "1";
		argv[argc++] = key;
		argv[argc++] = token;
	} else {
		argv[argc++] = "2";
		argv[argc++] = key;
		argv[argc++] = fence_key;
		argv[argc++] = token;
		if (limit > 0)
			argv[argc++] = lim;
		argv[argc++] = ttl;
	}
	r = redisCommandArgv(sc.rc, argc, argv, NULL);
	if (r == NULL)
		fail("redis: %s", sc.rc->errstr);
	if (r->type == REDIS_REPLY_ERROR)
		fail("redis: %s", r->str);
	v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	freeReplyObject(r);
	return v;
}

static void
scripts_expect(bool ok, const char *what)
{
	if (ok) {
		sc.passed++;
	} else {
		sc.failed++;
		fprintf(stderr, "loadgen: scripts: FAILED: %s\n", what);
	}
}

/* A grant must come with a fence above every earlier one of the check. */
static void
scripts_expect_grant(long long fence, const char *what)
{
	scripts_expect(fence > sc.last_fence, what);
	if (fence > sc.last_fence)
		sc.last_fence = fence;
}

static long long
scripts_exists(const char *key)
{
	redisReply *r = redisCommand(sc.rc, "EXISTS %s", key);
	long long v;

	if (r == NULL || r->type != REDIS_REPLY_INTEGER)
		fail("redis: EXISTS failed");
	v = r->integer;
	freeReplyObject(r);
	return v;
}

static void
scripts_sem(const char *sem_acquire)
{
	const char *rel = redis_sem_release_lua;
	char key[128], key2[128], tok[16];
	int i;

	snprintf(key, sizeof(key), "%s/sem", lg.prefix);
	snprintf(key2, sizeof(key2), "%s/sem-expiry", lg.prefix);
	sc.last_fence = 0;
	for (i = 1; i <= 3; i++) {
		snprintf(tok, sizeof(tok), "t%d", i);
		scripts_expect_grant(scripts_call(sem_acquire, key, tok, 3,
		    LOADGEN_REDIS_TTL_MS), "sem: a free permit is granted");
	}
	scripts_expect(scripts_call(sem_acquire, key, "t4", 3,
	    LOADGEN_REDIS_TTL_MS) == 0, "sem: a 4th permit of 3 is refused");
	scripts_expect(scripts_call(rel, key, "t2", 0, 0) == 1,
	    "sem: a holder's release removes its permit");
	scripts_expect(scripts_call(rel, key, "t2", 0, 0) == 0,
	    "sem: a second release of a permit finds nothing");
	scripts_expect_grant(scripts_call(sem_acquire, key, "t4", 3,
	    LOADGEN_REDIS_TTL_MS), "sem: the released permit is granted");
	scripts_expect(scripts_call(sem_acquire, key, "t5", 3,
	    LOADGEN_REDIS_TTL_MS) == 0, "sem: then the semaphore is full");

	/* Expiry: three short permits, a refusal, then room after they end. */
	sc.last_fence = 0;
	for (i = 1; i <= 3; i++) {
		snprintf(tok, sizeof(tok), "e%d", i);
		scripts_expect_grant(scripts_call(sem_acquire, key2, tok, 3,
		    SCRIPTS_TTL_SHORT_MS), "sem: a short permit is granted");
	}
	scripts_expect(scripts_call(sem_acquire, key2, "e4", 3,
	    LOADGEN_REDIS_TTL_MS) == 0, "sem: full before the expiry");
	usleep(SCRIPTS_EXPIRY_WAIT_US);
	scripts_expect_grant(scripts_call(sem_acquire, key2, "e4", 3,
	    LOADGEN_REDIS_TTL_MS), "sem: an expired permit is free again");
	scripts_expect_grant(scripts_call(sem_acquire, key2, "e5", 3,
	    LOADGEN_REDIS_TTL_MS), "sem: every expired permit is free again");
	scripts_expect(scripts_call(rel, key2, "e1", 0, 0) == 0,
	    "sem: an expired holder's release finds nothing");
}

static void
scripts_rw(const char *write_acquire)
{
	const char *rd = redis_rw_read_lua, *rel = redis_rw_release_lua;
	const char *wr = write_acquire;
	long ttl = LOADGEN_REDIS_TTL_MS;
	char key[128], key2[128], key3[128];

	snprintf(key, sizeof(key), "%s/rw", lg.prefix);
	snprintf(key2, sizeof(key2), "%s/rw-wexpiry", lg.prefix);
	snprintf(key3, sizeof(key3), "%s/rw-rexpiry", lg.prefix);
	sc.last_fence = 0;
	scripts_expect_grant(scripts_call(rd, key, "r1", 0, (int)ttl),
	    "rw: a reader takes a free lock");
	scripts_expect_grant(scripts_call(rd, key, "r2", 0, (int)ttl),
	    "rw: a second reader joins the first");
	scripts_expect(scripts_call(wr, key, "w1", 0, (int)ttl) == 0,
	    "rw: a writer is refused beside two readers");
	scripts_expect(scripts_call(rel, key, "r1", 0, 0) == 1,
	    "rw: a reader's release finds its hold");
	scripts_expect(scripts_call(wr, key, "w1", 0, (int)ttl) == 0,
	    "rw: a writer is refused beside one reader");
	scripts_expect(scripts_call(rel, key, "r2", 0, 0) == 1,
	    "rw: the last reader's release finds its hold");
	scripts_expect(scripts_exists(key) == 0,
	    "rw: the lock's hash is gone with its last holder");
	scripts_expect_grant(scripts_call(wr, key, "w1", 0, (int)ttl),
	    "rw: a writer takes a free lock");
	scripts_expect(scripts_call(rd, key, "r3", 0, (int)ttl) == 0,
	    "rw: a reader is refused beside a writer");
	scripts_expect(scripts_call(wr, key, "w2", 0, (int)ttl) == 0,
	    "rw: a writer is refused beside a writer");
	scripts_expect(scripts_call(rel, key, "w1", 0, 0) == 1,
	    "rw: the writer's release finds its hold");
	scripts_expect_grant(scripts_call(rd, key, "r3", 0, (int)ttl),
	    "rw: a reader takes the lock the writer left");

	/* Expiry of a writer, then of a reader. */
	sc.last_fence = 0;
	scripts_expect_grant(scripts_call(wr, key2, "w3", 0,
	    SCRIPTS_TTL_SHORT_MS), "rw: a short writer takes a free lock");
	scripts_expect(scripts_call(rd, key2, "r4", 0, (int)ttl) == 0,
	    "rw: a reader is refused before the writer expires");
	sc.last_fence = 0;
	scripts_expect_grant(scripts_call(rd, key3, "r5", 0,
	    SCRIPTS_TTL_SHORT_MS), "rw: a short reader takes a free lock");
	scripts_expect(scripts_call(wr, key3, "w4", 0, (int)ttl) == 0,
	    "rw: a writer is refused before the reader expires");
	usleep(SCRIPTS_EXPIRY_WAIT_US);
	scripts_expect(scripts_call(rd, key2, "r4", 0, (int)ttl) > 0,
	    "rw: a reader is granted once the writer expired");
	scripts_expect(scripts_call(wr, key3, "w4", 0, (int)ttl) > 0,
	    "rw: a writer is granted once the reader expired");
}

/* The scripts workload: exit status 1 when a call answered wrongly. */
static int
run_scripts(void)
{
	struct timeval tv = { LOADGEN_CONNECT_TIMEOUT_S, 0 };

	if (lg.server != SERVER_REDIS)
		fail("the scripts workload speaks redis only");
	sc.rc = redisConnectWithTimeout(lg.host, lg.port, tv);
	if (sc.rc == NULL || sc.rc->err)
		fail("redis: cannot connect to %s:%d", lg.host, lg.port);
	redisSetTimeout(sc.rc, tv);
	scripts_sem(lg.broken ? redis_sem_acquire_broken_lua :
	    redis_sem_acquire_lua);
	scripts_rw(lg.broken ? redis_rw_write_broken_lua : redis_rw_write_lua);
	redisFree(sc.rc);
	print_head();
	printf(" passed=%d failed=%d%s\n", sc.passed, sc.failed,
	    lg.broken ? " broken=1" : "");
	fprintf(stderr, "loadgen: scripts: %d passed, %d failed\n", sc.passed,
	    sc.failed);
	return sc.failed > 0 ? 1 : 0;
}

/* The fail-over workload: the first GRANTED from any port of -A. */
static int
run_first(void)
{
	int ports[16], nports = 0, i;
	const char *p = lg.first_ports;
	double deadline = now_s() + lg.seconds;
	long attempts = 0;
	struct timespec pause = { 0, 10 * 1000000L }, wall;

	while (p != NULL && *p != '\0' && nports < 16) {
		ports[nports++] = atoi(p);
		p = strchr(p, ',');
		if (p != NULL)
			p++;
	}
	if (nports == 0 || lg.server != SERVER_LOCKD)
		fail("the first workload speaks lockd, to the ports of -A");
	while (now_s() < deadline) {
		for (i = 0; i < nports; i++) {
			if (!first_try(ports[i], ++attempts))
				continue;
			clock_gettime(CLOCK_REALTIME, &wall);
			print_head();
			printf(" first_granted_unix_us=%lld port=%d "
			    "attempts=%ld\n", (long long)wall.tv_sec * 1000000 +
			    wall.tv_nsec / 1000, ports[i], attempts);
			return 0;
		}
		nanosleep(&pause, NULL);
	}
	print_head();
	printf(" first_granted_unix_us=0 attempts=%ld errors=1\n", attempts);
	return 1;
}

/* Prints free loopback ports: bound together, so they are distinct. */
static int
free_ports(int count)
{
	int fds[64], i;

	if (count < 1 || count > 64)
		fail("-F takes a count from 1 to 64");
	for (i = 0; i < count; i++) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);

		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
		    bind(fds[i], (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    getsockname(fds[i], (struct sockaddr *)&a, &len) != 0)
			die("free port");
		printf("%d\n", ntohs(a.sin_port));
	}
	for (i = 0; i < count; i++)
		close(fds[i]);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: loadgen -x lockd|redis|etcd -p PORT [-H 127.0.0.1] "
	    "[-c CONNS]\n"
	    "               [-w cycle|handoff|try|hold|idle] [-t SECONDS] "
	    "[-W WARMUP]\n"
	    "               [-n MAX_CYCLES] [-P PREFIX] [-S SERVER_PID] "
	    "[-d DEPTH]\n"
	    "               [-l LEASE] [-L \"key=value ...\"] [-r RECORDS] "
	    "[-A PORT,...]\n"
	    "               [-w sem|rw|scripts] [-N LIMIT] [-R READERS] [-h HOLD_MS] "
	    "[-z NAME_LEN]\n               [-B] [-V]\n"
	    "       loadgen -F COUNT\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	uint64_t seed = 0;
	int opt, rc;

	lg.host = "127.0.0.1";
	lg.prefix = "bench";
	lg.lease = "60s";
	lg.nconns = 1;
	lg.depth = 256;
	lg.records = 64;
	lg.seconds = 5;
	lg.max_cycles = LOADGEN_DEFAULT_MAX_CYCLES;
	lg.readers = -1;
	while ((opt = getopt(argc, argv,
	    "x:H:p:c:t:W:n:w:P:S:d:l:L:F:r:A:N:R:Bh:Vz:")) != -1) {
		switch (opt) {
		case 'x':
			if (strcmp(optarg, "lockd") == 0)
				lg.server = SERVER_LOCKD;
			else if (strcmp(optarg, "redis") == 0)
				lg.server = SERVER_REDIS;
			else if (strcmp(optarg, "etcd") == 0)
				lg.server = SERVER_ETCD;
			else
				usage();
			break;
		case 'w':
			if (strcmp(optarg, "cycle") == 0)
				lg.workload = W_CYCLE;
			else if (strcmp(optarg, "handoff") == 0)
				lg.workload = W_HANDOFF;
			else if (strcmp(optarg, "try") == 0)
				lg.workload = W_TRY;
			else if (strcmp(optarg, "hold") == 0)
				lg.workload = W_HOLD;
			else if (strcmp(optarg, "idle") == 0)
				lg.workload = W_IDLE;
			else if (strcmp(optarg, "txn") == 0)
				lg.workload = W_TXN;
			else if (strcmp(optarg, "first") == 0)
				lg.workload = W_FIRST;
			else if (strcmp(optarg, "sem") == 0)
				lg.workload = W_SEM;
			else if (strcmp(optarg, "rw") == 0)
				lg.workload = W_RW;
			else if (strcmp(optarg, "scripts") == 0)
				lg.workload = W_SCRIPTS;
			else
				usage();
			break;
		case 'H': lg.host = optarg; break;
		case 'p': lg.port = atoi(optarg); break;
		case 'c': lg.nconns = atoi(optarg); break;
		case 't': lg.seconds = atof(optarg); break;
		case 'W': lg.warmup = atof(optarg); break;
		case 'n': lg.max_cycles = atol(optarg); break;
		case 'P': lg.prefix = optarg; break;
		case 'S': lg.server_pid = atoi(optarg); break;
		case 'd': lg.depth = atoi(optarg); break;
		case 'l': lg.lease = optarg; break;
		case 'L': lg.label = optarg; break;
		case 'F': return free_ports(atoi(optarg));
		case 'r': lg.records = atoi(optarg); break;
		case 'A': lg.first_ports = optarg; break;
		case 'N': lg.limit = atoi(optarg); break;
		case 'R': lg.readers = atoi(optarg); break;
		case 'B': lg.broken = true; break;
		case 'V': lg.stop_on_overlap = true; break;
		case 'h': lg.hold = atof(optarg) / 1000; break;
		case 'z': lg.name_len = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind != argc || lg.port <= 0 || lg.port > 65535 ||
	    lg.nconns <= 0 || lg.nconns > LOADGEN_MAX_CONNS ||
	    lg.max_cycles <= 0 || lg.seconds <= 0 || lg.seconds > 3600 ||
	    lg.warmup < 0 || lg.warmup > 600 || lg.depth <= 0 ||
	    lg.records < 1 || lg.records > 127 || lg.hold < 0 || lg.hold > 60 ||
	    lg.name_len < 0 || lg.name_len >= (int)sizeof(((struct conn *)0)->name))
		usage();
	if (lg.limit == 0)
		lg.limit = lg.workload == W_SEM ? 16 : 1;
	if (lg.readers < 0)
		lg.readers = lg.nconns > LOADGEN_RW_WRITERS ?
		    lg.nconns - LOADGEN_RW_WRITERS : 1;
	if (lg.limit < 1 || lg.limit > LOADGEN_LIMIT_MAX ||
	    (lg.limit > 1 && lg.workload != W_SEM && lg.workload != W_HOLD))
		usage();
	if (lg.workload == W_FIRST)
		return run_first();
	if (lg.workload == W_SCRIPTS)
		return run_scripts();
	if ((lg.workload == W_SEM || lg.workload == W_RW) &&
	    lg.server == SERVER_ETCD)
		fail("the sem and rw workloads speak lockd and redis");
	if (lg.workload == W_RW && (lg.readers < 1 || lg.readers >= lg.nconns))
		fail("rw needs at least one reader and one writer (-R, -c)");
	if (lg.broken && lg.server != SERVER_REDIS)
		fail("-B breaks the Redis scripts; there is nothing to break "
		    "on %s", server_name());
	if (lg.server == SERVER_LOCKD && (lg.workload == W_SEM ||
	    lg.workload == W_RW || lg.limit > 1) &&
	    !lockd_supports_options()) {
		print_head();
		printf(" unsupported=1\n");
		return 3;
	}
	redis_choose_scripts();
	if (lg.workload == W_TXN && lg.server != SERVER_ETCD)
		fail("the txn workload speaks etcd only");
	if (lg.workload == W_TRY && lg.nconns < 2)
		fail("the TRY storm needs -c 2 or more");
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)now_s() * 1000003;
	lg.rng = seed | 1;
	lg.lat.max = (size_t)lg.max_cycles;
	lg.gap.max = (size_t)lg.max_cycles;
	lg.acq.max = (size_t)lg.max_cycles;
	lg.lat_read.max = (size_t)lg.max_cycles;
	lg.lat_write.max = (size_t)lg.max_cycles;
	lg.released_cap = 2 * lg.nconns;
	lg.released = calloc((size_t)lg.released_cap, sizeof(*lg.released));
	lg.released_writer = calloc((size_t)lg.released_cap,
	    sizeof(*lg.released_writer));
	lg.holders = calloc((size_t)lg.nconns, sizeof(*lg.holders));
	if (lg.released == NULL || lg.released_writer == NULL ||
	    lg.holders == NULL)
		die("calloc");
	raise_nofile();
	lg.conns = calloc((size_t)lg.nconns, sizeof(*lg.conns));
	lg.dirty = calloc((size_t)lg.nconns, sizeof(*lg.dirty));
	if (lg.conns == NULL || lg.dirty == NULL)
		die("calloc");
	if ((lg.ep = epoll_create1(0)) < 0)
		die("epoll_create1");
	if (lg.workload == W_IDLE) {
		rc = run_idle();
	} else {
		open_conns();
		rc = lg.workload == W_HOLD ? run_hold() : run_closed_loop();
	}
	fflush(stdout);
	close_conns();
	close(lg.ep);
	free(lg.conns);
	free(lg.dirty);
	free(lg.lat.v);
	free(lg.gap.v);
	free(lg.acq.v);
	free(lg.lat_read.v);
	free(lg.lat_write.v);
	free(lg.released);
	free(lg.released_writer);
	free(lg.holders);
	return rc;
}
