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

/* The life of client `me`: lock, read, think, write, unlock, until told
 * to stop.  Never returns. */
static void __attribute__((noreturn))
client(int me, int port, const char *path, bool check, struct shared *sh,
    uint64_t seed)
{
	static uint8_t set[ELEMENTS / 8];
	struct sockaddr_in addr;
	struct line_conn c = { -1, "", 0 };
	struct rng rng;
	uint32_t element = (uint32_t)me;
	char line[512];

	rng_seed(&rng, seed);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (c.fd < 0 || connect(c.fd, (struct sockaddr *)&addr,
	    sizeof(addr)) != 0)
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

static uint64_t
count_lost(const struct shared *sh, const struct resource *r)
{
	uint64_t lost = 0;
	size_t i;

	for (i = 0; i < sizeof(r->set); i++)
		lost += (uint64_t)__builtin_popcount(sh->acked_set[i] &
		    (uint8_t)~r->set[i]);
	return lost;
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
			if (count_lost(sh, &r) > 0)
				break;
		}
	}

	sh->stop = 1;
	for (i = 0; i < CLIENTS; i++) {
		int64_t until = harness_now_ms() + STOP_TIMEOUT_MS;
		int status = 0;

		kill(pids[i], SIGCONT);
		while (waitpid(pids[i], &status, WNOHANG) == 0) {
			if (harness_now_ms() > until) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				break;
			}
			harness_sleep_ms(2);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("client %d ended with status 0x%x", i, status);
		res->ops += sh->ops[i];
		res->acked += sh->acked[i];
		res->refused += sh->refused[i];
		res->late += sh->late[i];
		res->grants += sh->grants[i];
	}
	resource_load(path, &r);
	res->lost = count_lost(sh, &r);
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

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		HARNESS_TEST(
		    test_fencing_resource_checking_fences_loses_no_update),
		HARNESS_TEST(
		    test_fencing_resource_ignoring_fences_loses_updates),
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
