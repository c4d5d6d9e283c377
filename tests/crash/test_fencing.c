/*
 * test_fencing.c - build/tests/crash_fencing: fencing tokens at work, in
 * the manner of Jepsen's lock-set test.  Client processes share one lock
 * on the real lockd and a guarded resource: a set of integers in a file
 * (each operation on it atomic under flock(2), as a storage service would
 * be).  Under the lock, a client reads the set, adds its next element and
 * writes the set back, forwarding its fence with both the read and the
 * write.  Meanwhile the test freezes clients inside that read-modify-write
 * with SIGSTOP, well past their lease, so that the lock moves on and the
 * frozen client, once thawed, writes what it read long ago.
 *
 * The resource can check fences: it then refuses a read or a write whose
 * fence is below the highest it has seen (the read counts too, or a thawed
 * writer could still slip in before the new holder's write).  An element
 * whose write was acknowledged but that is missing from the final set is a
 * lost update.  With the check on there must be none; with it off there
 * must be some - the proof that this test can fail.
 *
 * The same across kill -9, with every kind of holder (issue 17): clients
 * share a semaphore (limit=2) and a shared lock whose readers read the
 * resource and whose writer updates it, while lockd is killed and
 * restarted on its data again and again.  Every grant's fence must be
 * above every fence of its name told before it was asked, in any earlier
 * run too, and no acknowledged update may be lost.  Against a lockd that
 * replies before its commit, fences must be seen going back.
 *
 *   crash_fencing [--seconds N] [--seed S] [cmocka filter]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/crash/crashlib.h"
#include "tests/lib/rng.h"
#include "tests/crash/workload.h"
#include "tests/lib/harness.h"

#define CLIENTS 5
#define LEASE_MS 150
#define PAUSE_MIN_MS (2 * LEASE_MS)
#define PAUSE_MAX_MS (3 * LEASE_MS)
#define WORK_MAX_MS 12         /* between the read and the write */
#define ELEMENTS 65536         /* the set's universe */
#define DEFAULT_SECONDS 5
#define STOP_TIMEOUT_MS 5000

static struct crash_args args = { 0, 0, 0, DEFAULT_SECONDS, false };

/* The guarded resource, as stored in its file. */
struct resource {
	uint64_t max_fence;     /* the highest fence seen */
	uint64_t reads, writes, refused;
	uint8_t set[ELEMENTS / 8];
};

/* Counters the clients share with the test (MAP_SHARED). */
struct shared {
	volatile int stop;
	volatile int in_rmw[CLIENTS];    /* between its read and its write */
	uint64_t ops[CLIENTS];           /* read-modify-writes attempted */
	uint64_t acked[CLIENTS];         /* writes the resource accepted */
	uint64_t refused[CLIENTS];       /* reads or writes refused */
	uint64_t late[CLIENTS];          /* writes sent after the lease */
	uint64_t grants[CLIENTS];
	uint8_t acked_set[ELEMENTS / 8]; /* the elements acknowledged */
};

/* ---- the resource ------------------------------------------------------- */

enum { RES_READ, RES_WRITE };

/*
 * One operation on the resource, atomic under flock: a read copies the set
 * to set, a write replaces it with set.  Returns 0, or 1 when the fence is
 * refused (check on and fence below the highest seen).
 */
static int
resource_op(const char *path, int op, uint64_t fence, bool check,
    uint8_t *set)
{
	struct resource *r = malloc(sizeof(*r));
	int fd = open(path, O_RDWR | O_CLOEXEC), rc = 0;

	if (fd < 0 || r == NULL || flock(fd, LOCK_EX) != 0 ||
	    pread(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r))
		_exit(90);
	if (check && fence < r->max_fence) {
		r->refused++;
		rc = 1;
	} else {
		if (fence > r->max_fence)
			r->max_fence = fence;
		if (op == RES_READ) {
			r->reads++;
			memcpy(set, r->set, sizeof(r->set));
		} else {
			r->writes++;
			memcpy(r->set, set, sizeof(r->set));
		}
	}
	if (pwrite(fd, r, sizeof(*r), 0) != (ssize_t)sizeof(*r))
		_exit(91);
	close(fd);   /* drops the flock */
	free(r);
	return rc;
}

static void
resource_create(const char *path)
{
	struct resource *r = calloc(1, sizeof(*r));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_non_null(r);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, r, sizeof(*r)), sizeof(*r));
	close(fd);
	free(r);
}

static void
resource_load(const char *path, struct resource *r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, r, sizeof(*r), 0), sizeof(*r));
	close(fd);
}

/* ---- a client process ---------------------------------------------------- */

struct line_conn {
	int fd;
	char buf[1024];
	size_t len;
};

/* Reads one line (without its CRLF) within timeout_ms; NULL: none. */
static const char *
read_line(struct line_conn *c, int64_t timeout_ms, char *out, size_t cap)
{
	int64_t deadline = harness_now_ms() + timeout_ms;

	for (;;) {
		char *lf = memchr(c->buf, '\n', c->len);
		struct pollfd p = { c->fd, POLLIN, 0 };
		int64_t left;
		ssize_t n;

		if (lf != NULL) {
			size_t used = (size_t)(lf - c->buf) + 1;
			size_t keep = used > 1 && lf[-1] == '\r' ? used - 2 :
			    used - 1;
			if (keep >= cap)
				keep = cap - 1;
			memcpy(out, c->buf, keep);
			out[keep] = '\0';
			memmove(c->buf, c->buf + used, c->len - used);
			c->len -= used;
			return out;
		}
		left = deadline - harness_now_ms();
		if (left <= 0 || c->len == sizeof(c->buf))
			return NULL;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n <= 0)
			return NULL;
		c->len += (size_t)n;
	}
}

static void
send_all(struct line_conn *c, const char *text)
{
	size_t len = strlen(text);

	if (send(c->fd, text, len, MSG_NOSIGNAL) != (ssize_t)len)
		_exit(92);
}

/* A connection to lockd on loopback, or -1 (nobody listens). */
static int
dial(int port)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr,
	    sizeof(addr)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The life of client `me`: lock, read, think, write, unlock, until told
 * to stop.  Never returns. */
static void __attribute__((noreturn))
client(int me, int port, const char *path, bool check, struct shared *sh,
    uint64_t seed)
{
	static uint8_t set[ELEMENTS / 8];
	struct line_conn c = { -1, "", 0 };
	struct rng rng;
	uint32_t element = (uint32_t)me;
	char line[512];

	rng_seed(&rng, seed);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if ((c.fd = dial(port)) < 0)
		_exit(93);
	while (!sh->stop && element < ELEMENTS) {
		struct harness_grant g;
		int64_t granted;

		send_all(&c, "ACQUIRE fenced lease=150 wait=2000\n");
		if (read_line(&c, 3000, line, sizeof(line)) == NULL)
			_exit(94);
		if (!harness_parse_granted(line, &g))
			continue;   /* ERR TIMEOUT: try again */
		granted = harness_now_ms();
		sh->grants[me]++;
		sh->ops[me]++;
		if (resource_op(path, RES_READ, g.fence, check, set) == 0) {
			sh->in_rmw[me] = 1;
			harness_sleep_ms(rng_range(&rng, 1, WORK_MAX_MS));
			sh->in_rmw[me] = 0;
			set[element / 8] |= (uint8_t)(1u << (element % 8));
			if (harness_now_ms() - granted >= LEASE_MS)
				sh->late[me]++;
			if (resource_op(path, RES_WRITE, g.fence, check,
			    set) == 0) {
				sh->acked[me]++;
				sh->acked_set[element / 8] |=
				    (uint8_t)(1u << (element % 8));
				element += CLIENTS;
			} else {
				sh->refused[me]++;
			}
		} else {
			sh->refused[me]++;
		}
		snprintf(line, sizeof(line), "RELEASE fenced %s\n", g.handle);
		send_all(&c, line);
		if (read_line(&c, 3000, line, sizeof(line)) == NULL)
			_exit(95);
	}
	close(c.fd);
	_exit(0);
}

/* ---- the test ----------------------------------------------------------- */

struct fencing_result {
	uint64_t ops, acked, refused, late, grants, pauses, lost;
};

/* Acknowledged elements (acked_set) missing from the resource's set. */
static uint64_t
count_lost(const uint8_t *acked_set, const struct resource *r)
{
	uint64_t lost = 0;
	size_t i;

	for (i = 0; i < sizeof(r->set); i++)
		lost += (uint64_t)__builtin_popcount(acked_set[i] &
		    (uint8_t)~r->set[i]);
	return lost;
}

/* Waits for a client told to stop, STOP_TIMEOUT_MS at most (then kills
 * it); fails the test unless it ended well. */
static void
reap_client(pid_t pid, int me)
{
	int64_t until = harness_now_ms() + STOP_TIMEOUT_MS;
	int status = 0;

	kill(pid, SIGCONT);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (harness_now_ms() > until) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		harness_sleep_ms(2);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("client %d ended with status 0x%x", me, status);
}

/*
 * Runs the clients against the resource for `seconds`, freezing clients
 * in their read-modify-write; stop_when_lost ends it early at the first
 * lost update (the run that must lose some).
 */
static void
run_fencing(bool check, long seconds, uint64_t seed, bool stop_when_lost,
    struct fencing_result *res)
{
	struct harness_server *s = harness_start(NULL);
	const char *dir = harness_tempdir();
	struct shared *sh;
	static struct resource r;
	pid_t pids[CLIENTS];
	char path[256];
	struct rng rng;
	int64_t deadline;
	int i;

	rng_seed(&rng, seed);
	memset(res, 0, sizeof(*res));
	snprintf(path, sizeof(path), "%s/resource", dir);
	resource_create(path);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < CLIENTS; i++) {
		if ((pids[i] = fork()) == 0)
			client(i, s->port, path, check, sh, seed + 101 * (i + 1));
		assert_true(pids[i] > 0);
	}

	deadline = harness_now_ms() + seconds * 1000;
	while (harness_now_ms() < deadline) {
		int who = (int)rng_below(&rng, CLIENTS), k;

		harness_sleep_ms(rng_range(&rng, 30, 200));
		/* Freeze a client caught between its read and its write. */
		for (k = 0; k < CLIENTS && !sh->in_rmw[who]; k++)
			who = (who + 1) % CLIENTS;
		if (!sh->in_rmw[who])
			continue;
		kill(pids[who], SIGSTOP);
		res->pauses++;
		harness_sleep_ms(rng_range(&rng, PAUSE_MIN_MS, PAUSE_MAX_MS));
		kill(pids[who], SIGCONT);
		if (stop_when_lost) {
			resource_load(path, &r);
			if (count_lost(sh->acked_set, &r) > 0)
				break;
		}
	}

	sh->stop = 1;
	for (i = 0; i < CLIENTS; i++) {
		reap_client(pids[i], i);
		res->ops += sh->ops[i];
		res->acked += sh->acked[i];
		res->refused += sh->refused[i];
		res->late += sh->late[i];
		res->grants += sh->grants[i];
	}
	resource_load(path, &r);
	res->lost = count_lost(sh->acked_set, &r);
	munmap(sh, sizeof(*sh));
	harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
	printf("fencing (resource checks fences: %s): seed=%llu grants=%llu "
	    "operations=%llu acknowledged=%llu refused=%llu "
	    "late writes=%llu pauses=%llu lost updates=%llu\n",
	    check ? "on" : "off", (unsigned long long)seed,
	    (unsigned long long)res->grants, (unsigned long long)res->ops,
	    (unsigned long long)res->acked, (unsigned long long)res->refused,
	    (unsigned long long)res->late, (unsigned long long)res->pauses,
	    (unsigned long long)res->lost);
}

static void
test_fencing_resource_checking_fences_loses_no_update(void **state)
{
	struct fencing_result r;

	(void)state;
	alarm((unsigned)(30 + args.seconds));
	run_fencing(true, args.seconds, args.seed, false, &r);
	assert_true(r.acked > 0);
	/* The pauses did let the lock move on under a frozen holder... */
	assert_true(r.late > 0);
	assert_true(r.refused > 0);
	/* ...and the fences kept every acknowledged update. */
	assert_int_equal(r.lost, 0);
}

static void
test_fencing_resource_ignoring_fences_loses_updates(void **state)
{
	struct fencing_result r;

	(void)state;
	alarm((unsigned)(30 + 3 * args.seconds));
	run_fencing(false, 3 * args.seconds, args.seed + 1, true, &r);
	assert_true(r.acked > 0);
	assert_int_equal(r.refused, 0);
	if (r.lost == 0)
		fail_msg("no update was lost without the fence check: the "
		    "test cannot tell fencing from none");
}

/* ---- every kind of holder across kill -9 ------------------------------ */

#define KINDS_CLIENTS 6
#define KINDS_LEASE_MS 300
#define KINDS_GRANTS 65536      /* the log's room */
#define KILL_MIN_MS 100
#define KILL_MAX_MS 400
#define SHOWN_MAX 5             /* backward fences printed */

enum { KIND_SEMAPHORE, KIND_SHARED, KIND_NAMES };

static const char *const kind_names[KIND_NAMES] = {
	"fenced/sem", "fenced/rw",
};

/* Client `me`'s name, what its requests add, and whether it writes. */
static void
kind_role(int me, int *name, const char **extra, bool *writer)
{
	*name = me < 3 ? KIND_SEMAPHORE : KIND_SHARED;
	*extra = me < 3 ? " limit=2" : me < 5 ? " mode=shared" : "";
	*writer = me == 5;
}

struct kinds_grant {
	int name;
	uint64_t fence;
	int64_t sent, recv;   /* the ACQUIRE's sending, its reply's reading */
};

/* What the clients share with the test (MAP_SHARED). */
struct kinds_shared {
	volatile int stop;
	uint64_t count;                  /* grants logged (atomic) */
	struct kinds_grant grants[KINDS_GRANTS];
	uint64_t acked, refused;         /* the writer's */
	uint8_t acked_set[ELEMENTS / 8];
};

static bool
send_line(struct line_conn *c, const char *text)
{
	size_t len = strlen(text);

	return send(c->fd, text, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/*
 * The life of kinds client `me`: acquire its name (with a rid, as a
 * client that may lose its reply does), log the grant, use the resource
 * under its fence - the writer adds an element, a reader reads - and
 * release; a connection lost with lockd is dialled again.  Never returns.
 */
static void __attribute__((noreturn))
kinds_client(int me, int port, const char *path, struct kinds_shared *sh,
    uint64_t seed)
{
	static uint8_t set[ELEMENTS / 8];
	struct line_conn c = { -1, "", 0 };
	uint32_t element = (uint32_t)me;
	const char *extra;
	unsigned rid = 0;
	struct rng rng;
	char line[512];
	bool writer;
	int name;

	rng_seed(&rng, seed);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	kind_role(me, &name, &extra, &writer);
	while (!sh->stop && element < ELEMENTS) {
		struct harness_grant g;
		int64_t sent;
		uint64_t at;

		if (c.fd < 0 && (c.fd = dial(port)) < 0) {
			harness_sleep_ms(10);
			continue;
		}
		c.len = 0;
		snprintf(line, sizeof(line), "ACQUIRE %s lease=%d wait=1000%s "
		    "rid=k%d.%u\n", kind_names[name], KINDS_LEASE_MS, extra, me,
		    ++rid);
		sent = harness_now_ms();
		if (!send_line(&c, line) ||
		    read_line(&c, 3000, line, sizeof(line)) == NULL) {
			close(c.fd);   /* lockd died: dial the next one */
			c.fd = -1;
			continue;
		}
		if (!harness_parse_granted(line, &g))
			continue;   /* ERR TIMEOUT or UNAVAILABLE: again */
		at = __atomic_fetch_add(&sh->count, 1, __ATOMIC_SEQ_CST);
		if (at < KINDS_GRANTS)
			sh->grants[at] = (struct kinds_grant){ name, g.fence,
			    sent, harness_now_ms() };
		if (writer && resource_op(path, RES_READ, g.fence, true,
		    set) == 0) {
			set[element / 8] |= (uint8_t)(1u << (element % 8));
			if (resource_op(path, RES_WRITE, g.fence, true,
			    set) == 0) {
				sh->acked++;
				sh->acked_set[element / 8] |=
				    (uint8_t)(1u << (element % 8));
				element += KINDS_CLIENTS;
			} else {
				sh->refused++;
			}
		} else if (name == KIND_SHARED && !writer) {
			resource_op(path, RES_READ, g.fence, true, set);
		}
		harness_sleep_ms(rng_range(&rng, 1, WORK_MAX_MS));
		snprintf(line, sizeof(line), "RELEASE %s %s\n",
		    kind_names[name], g.handle);
		if (!send_line(&c, line) ||
		    read_line(&c, 3000, line, sizeof(line)) == NULL) {
			close(c.fd);
			c.fd = -1;
		}
	}
	if (c.fd >= 0)
		close(c.fd);
	_exit(0);
}

/*
 * Fences that went back: a grant whose fence is not above that of every
 * grant of its name told before it was asked (in any run of lockd).
 * Printed, up to SHOWN_MAX; returns how many.
 */
static uint64_t
kinds_backward(const struct kinds_shared *sh, uint64_t n, bool show)
{
	uint64_t bad = 0, i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			const struct kinds_grant *a = &sh->grants[j];
			const struct kinds_grant *b = &sh->grants[i];

			if (a->name != b->name || a->recv >= b->sent ||
			    a->fence < b->fence)
				continue;
			if (show && bad < SHOWN_MAX)
				printf("fence went back on %s: %llu told at "
				    "%lld, then %llu asked at %lld\n",
				    kind_names[a->name],
				    (unsigned long long)a->fence,
				    (long long)a->recv,
				    (unsigned long long)b->fence,
				    (long long)b->sent);
			bad++;
		}
	return bad;
}

struct kinds_result {
	uint64_t grants[KIND_NAMES], kills, acked, refused, lost, backward;
};

/*
 * The kinds clients against lockd (fault: lockd-faulty with it, NULL:
 * the real one), killed with SIGKILL every KILL_MIN_MS to KILL_MAX_MS
 * and restarted on its data, for `seconds`; stop_when_backward ends it
 * at the first fence that went back.
 */
static void
run_kinds(long seconds, uint64_t seed, const char *fault,
    bool stop_when_backward, struct kinds_result *res)
{
	struct harness_server *s = harness_server_new();
	const char *dir = harness_tempdir();
	struct kinds_shared *sh;
	static struct resource r;
	pid_t pids[KINDS_CLIENTS];
	char path[256];
	struct rng rng;
	int64_t deadline;
	uint64_t n, i;
	int k;

	rng_seed(&rng, seed);
	memset(res, 0, sizeof(*res));
	snprintf(path, sizeof(path), "%s/resource", dir);
	resource_create(path);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	if (fault != NULL)
		crash_use_faulty(fault);
	else
		crash_use_lockd();
	harness_server_start(s, NULL);
	fflush(stdout);
	fflush(stderr);
	for (k = 0; k < KINDS_CLIENTS; k++) {
		if ((pids[k] = fork()) == 0)
			kinds_client(k, s->port, path, sh, seed + 7 * (k + 1));
		assert_true(pids[k] > 0);
	}

	deadline = harness_now_ms() + seconds * 1000;
	while (harness_now_ms() < deadline) {
		harness_sleep_ms(rng_range(&rng, KILL_MIN_MS, KILL_MAX_MS));
		harness_server_kill(s);
		res->kills++;
		harness_server_restart(s);
		n = __atomic_load_n(&sh->count, __ATOMIC_SEQ_CST);
		if (stop_when_backward && kinds_backward(sh, n < KINDS_GRANTS ?
		    n : KINDS_GRANTS, false) > 0)
			break;
	}

	sh->stop = 1;
	for (k = 0; k < KINDS_CLIENTS; k++)
		reap_client(pids[k], k);
	n = sh->count < KINDS_GRANTS ? sh->count : KINDS_GRANTS;
	for (i = 0; i < n; i++)
		res->grants[sh->grants[i].name]++;
	res->backward = kinds_backward(sh, n, true);
	res->acked = sh->acked;
	res->refused = sh->refused;
	resource_load(path, &r);
	res->lost = count_lost(sh->acked_set, &r);
	munmap(sh, sizeof(*sh));
	harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
	crash_use_lockd();
	printf("fencing, every kind across kill -9 (%s): seed=%llu kills=%llu "
	    "semaphore grants=%llu shared-lock grants=%llu writes "
	    "acknowledged=%llu refused=%llu lost updates=%llu fences gone "
	    "back=%llu\n", fault != NULL ? fault : "lockd",
	    (unsigned long long)seed, (unsigned long long)res->kills,
	    (unsigned long long)res->grants[KIND_SEMAPHORE],
	    (unsigned long long)res->grants[KIND_SHARED],
	    (unsigned long long)res->acked, (unsigned long long)res->refused,
	    (unsigned long long)res->lost, (unsigned long long)res->backward);
}

static void
test_fencing_every_holder_fence_rises_across_kill_9(void **state)
{
	struct kinds_result r;

	(void)state;
	alarm((unsigned)(30 + 2 * args.seconds));
	run_kinds(args.seconds, args.seed + 2, NULL, false, &r);
	assert_true(r.kills > 0);
	assert_true(r.grants[KIND_SEMAPHORE] > 0 && r.grants[KIND_SHARED] > 0);
	assert_true(r.acked > 0);
	assert_int_equal(r.backward, 0);
	assert_int_equal(r.lost, 0);
}

/* A lockd whose replies leave before their commit: a grant told just
 * before a kill is lost, and its fence is told again after the restart. */
static void
test_fencing_catches_fences_going_back_with_early_replies(void **state)
{
	struct kinds_result r;

	(void)state;
	alarm((unsigned)(30 + 6 * args.seconds));
	run_kinds(3 * args.seconds, args.seed + 3, "early_reply", true, &r);
	if (r.backward == 0)
		fail_msg("no fence went back against a lockd that replies "
		    "before its commit: the test cannot tell");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_fencing_resource_checking_fences_loses_no_update),
		HARNESS_TEST(
		    test_fencing_resource_ignoring_fences_loses_updates),
		HARNESS_TEST(
		    test_fencing_every_holder_fence_rises_across_kill_9),
		HARNESS_TEST(
		    test_fencing_catches_fences_going_back_with_early_replies),
	};

	crash_init(argv[0]);
	crash_parse_args(&argc, argv, &args);
	if (args.seconds <= 0)
		args.seconds = DEFAULT_SECONDS;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests_name("crash_fencing", tests, NULL, NULL);
}
