/*
 * test_liblockd.c - liblockd against a real lockd on a free loopback port
 * (every call, pipelining, timeouts on a stopped server, reconnecting after
 * a restart, the keep-alive helper) and against a scripted fake server for
 * the replies lockd never sends (every server error code, garbled and
 * mismatched replies, an early close) and to see the bytes put on the wire.
 *
 * Lock names are unique per test, so tests share one daemon; a test that
 * stops or restarts a daemon uses its own.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
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
#include <sys/socket.h>

#include <cmocka.h>

#include "client/lockd.h"
#include "tests/lib/harness.h"
#include "tests/lib/kinds.h"

#define TIMEOUT_MS 5000

static lockd_options
options_for(int port, int64_t command_timeout_ms)
{
	lockd_options o;

	memset(&o, 0, sizeof(o));
	o.port = port;
	o.connect_timeout_ms = TIMEOUT_MS;
	o.command_timeout_ms = command_timeout_ms;
	return o;
}

/* A context on the shared server; the test fails if it cannot connect. */
static lockd_context *
connect_to(int port, int64_t command_timeout_ms)
{
	lockd_options o = options_for(port, command_timeout_ms);
	lockd_context *c = lockd_connect(&o);

	assert_non_null(c);
	if (c->err != 0)
		fail_msg("connect to port %d: %s", port, c->errstr);
	return c;
}

static lockd_context *
connect_shared(void)
{
	return connect_to(harness_shared->port, TIMEOUT_MS);
}

static bool
is_handle_of(const char *handle, uint64_t fence)
{
	char prefix[32];
	size_t n, i;

	n = (size_t)snprintf(prefix, sizeof(prefix), "%llu-",
	    (unsigned long long)fence);
	if (strncmp(handle, prefix, n) != 0 || strlen(handle) != n + 16)
		return false;
	for (i = n; handle[i] != '\0'; i++)
		if (!((handle[i] >= '0' && handle[i] <= '9') ||
		    (handle[i] >= 'a' && handle[i] <= 'f')))
			return false;
	return true;
}

/* ---- protocol v2's calls ---------------------------------------------- */

struct seen {
	char names[8][LOCKD_NAME_MAX + 1];
	char owners[8][LOCKD_OWNER_MAX + 1];
	int n;
};

static int
collect(void *arg, const lockd_lock_info *info)
{
	struct seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", info->name);
		snprintf(s->owners[s->n], sizeof(s->owners[0]), "%s",
		    info->owner);
	}
	s->n++;
	return 0;
}

/* lockd_acquire_ex with owner and delay, lockd_status_info, lockd_check,
 * lockd_force, lockd_watch and lockd_list (paged with next). */
static void
test_liblockd_v2_calls(void **state)
{
	lockd_context *c = connect_shared(), *w = connect_shared();
	lockd_acquire_options o = { 10000, 0, LOCKD_ONCLOSE_KEEP, "lib-1",
	    300 };
	lockd_lease a, b;
	lockd_lock_info info;
	struct seen seen;
	char next[LOCKD_NAME_MAX + 1];

	(void)state;
	assert_int_equal(lockd_acquire_ex(c, "v2/a", &o, &a), LOCKD_OK);
	o.owner = NULL;
	assert_int_equal(lockd_try_ex(c, "v2/b", &o, &b), LOCKD_OK);
	assert_int_equal(lockd_try_ex(c, "v2/a", &o, NULL), LOCKD_HELD);
	assert_int_equal(lockd_status_info(c, "v2/a", &info), LOCKD_OK);
	assert_int_equal(info.held, 1);
	assert_int_equal(info.fence, a.fence);
	assert_string_equal(info.owner, "lib-1");
	assert_string_equal(info.name, "v2/a");

	assert_int_equal(lockd_check(c, "v2/a", a.fence, &info), LOCKD_OK);
	assert_int_equal(info.fence, a.fence);
	assert_true(info.ttl_ms > 0);
	assert_int_equal(lockd_check(c, "v2/a", a.fence + 100, &info),
	    LOCKD_STALE);
	assert_int_equal(info.fence, a.fence);
	assert_int_equal(lockd_check(c, "v2/free", 1, &info), LOCKD_STALE);
	assert_int_equal(info.fence, 0);

	/* A page of one, then the rest. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(lockd_list(c, "v2/", NULL, 1, collect, &seen, next),
	    LOCKD_OK);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.names[0], "v2/a");
	assert_string_equal(next, "v2/a");
	assert_int_equal(lockd_list(c, "v2/", next, 0, collect, &seen, next),
	    LOCKD_OK);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.names[1], "v2/b");
	assert_string_equal(seen.owners[1], "");
	assert_string_equal(next, "");
	/* The context is in step after a multi-line reply. */
	assert_int_equal(lockd_ping(c), LOCKD_OK);

	/* WATCH at once (fence differs), then a timeout. */
	assert_int_equal(lockd_watch(w, "v2/a", 0, 1000, &info), LOCKD_OK);
	assert_int_equal(info.fence, a.fence);
	assert_int_equal(lockd_watch(w, "v2/a", (int64_t)a.fence, 50, &info),
	    LOCKD_ERR_WAIT_TIMEOUT);

	/* FORCE: another fence changes nothing; the holder's frees it and
	 * its lock-delay starts. */
	assert_int_equal(lockd_force(c, "v2/a", a.fence + 1), LOCKD_NOTHELD);
	assert_int_equal(lockd_force(c, "v2/a", a.fence), LOCKD_OK);
	assert_int_equal(lockd_watch(w, "v2/a", (int64_t)a.fence, 1000,
	    &info), LOCKD_OK);
	assert_string_equal(info.cause, "forced");
	assert_true(info.delay_ms > 0 && info.delay_ms <= 300);
	assert_int_equal(lockd_renew(c, &a, 0), LOCKD_ERR_CONFLICT);

	assert_int_equal(lockd_force(c, "v2/a", 0), LOCKD_ERR_INVALID);
	o.owner = "has space";
	assert_int_equal(lockd_try_ex(c, "v2/c", &o, NULL), LOCKD_ERR_INVALID);
	lockd_free(c);
	lockd_free(w);
}

/* Connecting. */

static void
test_liblockd_ping_answers(void **state)
{
	lockd_context *c = connect_shared();

	(void)state;
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	assert_int_equal(c->err, 0);
	assert_string_equal(c->errstr, "");
	assert_true(c->fd >= 0);
	lockd_free(c);
}

static void
test_liblockd_connect_over_a_unix_socket(void **state)
{
	lockd_options o;
	lockd_context *c;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.unix_path = harness_shared->unix_path;
	o.command_timeout_ms = TIMEOUT_MS;
	c = lockd_connect(&o);
	assert_non_null(c);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
}

static void
test_liblockd_connect_to_a_closed_port_fails_with_io(void **state)
{
	lockd_options o = options_for(harness_closed_port(), TIMEOUT_MS);
	lockd_context *c = lockd_connect(&o);

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	assert_non_null(strstr(c->errstr, "refused"));
	assert_int_equal(c->fd, -1);
	/* Dead: every call answers the same error at once. */
	assert_int_equal(lockd_ping(c), LOCKD_ERR_IO);
	assert_int_equal(lockd_append_ping(c), LOCKD_ERR_IO);
	assert_true(lockd_error_is_fatal(c->err));
	lockd_free(c);

	memset(&o, 0, sizeof(o));
	o.unix_path = "/nonexistent/lockd.sock";
	c = lockd_connect(&o);
	assert_int_equal(c->err, LOCKD_ERR_IO);
	lockd_free(c);
}

static void
test_liblockd_connect_timeout_is_kept(void **state)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int listener, fillers[4], i;
	lockd_options o;
	lockd_context *c;
	int64_t start, took;

	(void)state;
	/* A listener that never accepts, its backlog full: SYNs are lost. */
	listener = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(listener, (struct sockaddr *)&sin, sizeof(sin)),
	    0);
	assert_int_equal(listen(listener, 0), 0);
	getsockname(listener, (struct sockaddr *)&sin, &len);
	for (i = 0; i < 4; i++) {
		fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(fillers[i], (struct sockaddr *)&sin, sizeof(sin));
	}
	harness_sleep_ms(100);

	o = options_for(ntohs(sin.sin_port), TIMEOUT_MS);
	o.connect_timeout_ms = 300;
	start = harness_now_ms();
	c = lockd_connect(&o);
	took = harness_now_ms() - start;
	assert_int_equal(c->err, LOCKD_ERR_TIMEOUT);
	assert_in_range(took, 250, 2000);
	lockd_free(c);
	for (i = 0; i < 4; i++)
		close(fillers[i]);
	close(listener);
}

/* The blocking calls. */

static void
test_liblockd_acquire_status_renew_release_round_trip(void **state)
{
	lockd_context *c = connect_shared();
	lockd_lease lease;
	lockd_lock_status st;
	int64_t before, after;
	uint64_t fence;

	(void)state;
	before = lockd_now_ms();
	assert_int_equal(lockd_acquire(c, "round/trip", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_OK);
	after = lockd_now_ms();
	assert_string_equal(lease.name, "round/trip");
	assert_true(lease.fence >= 1);
	assert_true(is_handle_of(lease.handle, lease.fence));
	assert_int_equal(lease.lease_ms, 5000);
	assert_in_range(lease.deadline_ms, before + 5000, after + 5000);
	fence = lease.fence;

	assert_int_equal(lockd_status(c, "round/trip", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.fence, fence);
	assert_in_range(st.ttl_ms, 1, 5000);
	assert_int_equal(st.queue, 0);

	before = lockd_now_ms();
	assert_int_equal(lockd_renew(c, &lease, 10000), LOCKD_OK);
	assert_int_equal(lease.fence, fence);
	assert_int_equal(lease.lease_ms, 10000);
	assert_true(lease.deadline_ms >= before + 10000);

	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	assert_int_equal(lockd_status(c, "round/trip", &st), LOCKD_OK);
	assert_int_equal(st.held, 0);
	assert_int_equal(st.fence, 0);
	assert_int_equal(st.ttl_ms, 0);
	/* A stale handle is a harmless no-op, told apart. */
	assert_int_equal(lockd_release(c, &lease), LOCKD_NOTHELD);
	assert_int_equal(c->err, 0);

	/* The server caps a long lease and says so. */
	assert_int_equal(lockd_acquire(c, "round/trip", 3600000, 0,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_OK);
	assert_int_equal(lease.lease_ms, 300000);
	assert_true(lease.fence > fence);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	/* Lease 0 is the server's default. */
	assert_int_equal(lockd_try(c, "round/trip", 0, LOCKD_ONCLOSE_KEEP,
	    &lease), LOCKD_OK);
	assert_int_equal(lease.lease_ms, 30000);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
}

static void
test_liblockd_try_tells_held_apart_from_errors(void **state)
{
	lockd_context *a = connect_shared(), *b = connect_shared();
	lockd_lease la, lb;

	(void)state;
	assert_int_equal(lockd_try(a, "try/held", 5000, LOCKD_ONCLOSE_KEEP,
	    &la), LOCKD_OK);
	memset(&lb, 0, sizeof(lb));
	assert_int_equal(lockd_try(b, "try/held", 5000, LOCKD_ONCLOSE_KEEP,
	    &lb), LOCKD_HELD);
	assert_int_equal(b->err, 0);
	assert_int_equal(lb.fence, 0);
	assert_int_equal(lockd_release(a, &la), LOCKD_OK);
	assert_int_equal(lockd_try(b, "try/held", 5000, LOCKD_ONCLOSE_KEEP,
	    &lb), LOCKD_OK);
	assert_true(lb.fence > la.fence);
	assert_int_equal(lockd_release(b, &lb), LOCKD_OK);
	lockd_free(a);
	lockd_free(b);
}

static void
test_liblockd_acquire_with_wait_zero_fails_at_once(void **state)
{
	lockd_context *a = connect_shared(), *b = connect_shared();
	lockd_lease la, lb;
	int64_t start;

	(void)state;
	assert_int_equal(lockd_acquire(a, "wait/zero", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &la), LOCKD_OK);
	start = harness_now_ms();
	assert_int_equal(lockd_acquire(b, "wait/zero", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &lb), LOCKD_ERR_WAIT_TIMEOUT);
	assert_true(harness_now_ms() - start < 1000);
	assert_int_equal(b->err, LOCKD_ERR_WAIT_TIMEOUT);
	assert_non_null(strstr(b->errstr, "TIMEOUT"));
	assert_false(lockd_error_is_fatal(b->err));
	/* A server error leaves the context usable. */
	assert_int_equal(lockd_ping(b), LOCKD_OK);
	assert_int_equal(b->err, 0);
	assert_int_equal(lockd_release(a, &la), LOCKD_OK);
	lockd_free(a);
	lockd_free(b);
}

struct delayed_release {
	lockd_context *c;
	lockd_lease lease;
	int64_t delay_ms;
	int rc;
};

/* Releases on its own context, from its own thread, after a delay. */
static void *
release_later(void *arg)
{
	struct delayed_release *d = arg;

	harness_sleep_ms(d->delay_ms);
	d->rc = lockd_release(d->c, &d->lease);
	return NULL;
}

static void
test_liblockd_acquire_wait_extends_the_command_timeout(void **state)
{
	struct delayed_release d = { .delay_ms = 600 };
	lockd_context *b = connect_to(harness_shared->port, 200);
	lockd_lease lb;
	pthread_t thread;
	int64_t start, took;

	(void)state;
	d.c = connect_shared();
	assert_int_equal(lockd_acquire(d.c, "wait/long", 10000, 0,
	    LOCKD_ONCLOSE_KEEP, &d.lease), LOCKD_OK);

	/* wait=700 is answered after 700 ms, well past the 200 ms timeout. */
	start = harness_now_ms();
	assert_int_equal(lockd_acquire(b, "wait/long", 5000, 700,
	    LOCKD_ONCLOSE_KEEP, &lb), LOCKD_ERR_WAIT_TIMEOUT);
	took = harness_now_ms() - start;
	assert_in_range(took, 650, 3000);
	assert_int_equal(lockd_ping(b), LOCKD_OK);

	/* Waiting forever is never cut short by the command timeout. */
	assert_int_equal(pthread_create(&thread, NULL, release_later, &d), 0);
	start = harness_now_ms();
	assert_int_equal(lockd_acquire(b, "wait/long", 5000,
	    LOCKD_WAIT_FOREVER, LOCKD_ONCLOSE_KEEP, &lb), LOCKD_OK);
	took = harness_now_ms() - start;
	pthread_join(thread, NULL);
	assert_int_equal(d.rc, LOCKD_OK);
	assert_in_range(took, 500, 3000);
	assert_true(lb.fence > d.lease.fence);
	/* Dated from the ACQUIRE: conservative after a wait. */
	assert_true(lb.deadline_ms <= start + 5000 + 50);
	assert_int_equal(lockd_release(b, &lb), LOCKD_OK);
	lockd_free(d.c);
	lockd_free(b);
}

static void
test_liblockd_onclose_release_frees_the_lock_with_the_connection(void **state)
{
	lockd_context *a = connect_shared(), *b = connect_shared();
	lockd_lease la, lk;
	lockd_lock_status st;
	int64_t deadline;

	(void)state;
	assert_int_equal(lockd_acquire(a, "onclose/release", 10000, 0,
	    LOCKD_ONCLOSE_RELEASE, &la), LOCKD_OK);
	assert_int_equal(lockd_try(a, "onclose/keep", 10000,
	    LOCKD_ONCLOSE_KEEP, &lk), LOCKD_OK);
	lockd_free(a);
	deadline = harness_now_ms() + 2000;
	do {
		assert_int_equal(lockd_status(b, "onclose/release", &st),
		    LOCKD_OK);
	} while (st.held && harness_now_ms() < deadline);
	assert_int_equal(st.held, 0);
	assert_int_equal(lockd_status(b, "onclose/keep", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	assert_int_equal(lockd_release(b, &lk), LOCKD_OK);
	lockd_free(b);
}

static void
test_liblockd_renew_with_a_stale_handle_conflicts(void **state)
{
	lockd_context *c = connect_shared();
	lockd_lease lease;

	(void)state;
	assert_int_equal(lockd_acquire(c, "renew/stale", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_OK);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	assert_int_equal(lockd_renew(c, &lease, 5000), LOCKD_ERR_CONFLICT);
	assert_int_equal(c->err, LOCKD_ERR_CONFLICT);
	assert_non_null(strstr(c->errstr, "CONFLICT"));
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
}

static void
test_liblockd_bad_arguments_are_refused_before_sending(void **state)
{
	lockd_context *c = connect_shared();
	lockd_lease lease;
	lockd_reply reply;
	char longname[300];

	(void)state;
	memset(longname, 'n', 256);
	longname[256] = '\0';
	assert_int_equal(lockd_acquire(c, "", 0, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_acquire(c, NULL, 0, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_acquire(c, "a b", 0, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_acquire(c, "tab\there", 0, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_try(c, longname, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_status(c, longname, NULL), LOCKD_ERR_INVALID);
	longname[255] = '\0';
	assert_int_equal(lockd_try(c, longname, 1000, 0, &lease), LOCKD_OK);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);

	assert_int_equal(lockd_acquire(c, "bad/args", -1, 0, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_acquire(c, "bad/args", 0, -2, 0, &lease),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_acquire(c, "bad/args", 0, 0, 7, &lease),
	    LOCKD_ERR_INVALID);
	assert_non_null(strstr(c->errstr, "onclose"));
	assert_int_equal(lockd_lease_init(&lease, "bad/args", "41-XYZ"),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_lease_init(&lease, "bad/args", "abc"),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_lease_init(&lease, "bad args",
	    "1-0123456789abcdef"), LOCKD_ERR_INVALID);
	memset(&lease, 0, sizeof(lease));
	strcpy(lease.name, "bad/args");
	strcpy(lease.handle, "0-0123456789abcdef");
	assert_int_equal(lockd_renew(c, &lease, 0), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_release(c, NULL), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_set_command_timeout(c, -1), LOCKD_ERR_INVALID);
	/* No reply is due: reading one is a mistake, not a hang. */
	assert_int_equal(lockd_get_reply(c, &reply), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_poll_reply(c, &reply), LOCKD_ERR_INVALID);

	/* Nothing was sent and the context is alive. */
	assert_int_equal(lockd_pending(c), 0);
	assert_false(lockd_error_is_fatal(c->err));
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
}

static void
test_liblockd_lease_init_makes_a_renewable_lease(void **state)
{
	lockd_context *c = connect_shared();
	lockd_lease granted, rebuilt;

	(void)state;
	assert_int_equal(lockd_acquire(c, "lease/init", 5000, 0,
	    LOCKD_ONCLOSE_KEEP, &granted), LOCKD_OK);
	assert_int_equal(lockd_lease_init(&rebuilt, granted.name,
	    granted.handle), LOCKD_OK);
	assert_int_equal(rebuilt.fence, granted.fence);
	assert_string_equal(rebuilt.handle, granted.handle);
	assert_int_equal(lockd_renew(c, &rebuilt, 4000), LOCKD_OK);
	assert_int_equal(rebuilt.lease_ms, 4000);
	assert_int_equal(lockd_release(c, &rebuilt), LOCKD_OK);
	lockd_free(c);
}

/* Pipelining. */

static void
test_liblockd_pipelined_replies_come_in_request_order(void **state)
{
	lockd_context *c = connect_shared();
	lockd_reply r;
	lockd_lease lease;

	(void)state;
	assert_int_equal(lockd_append_acquire(c, "pipe/a", 5000, 0, 0),
	    LOCKD_OK);
	assert_int_equal(lockd_append_try(c, "pipe/a", 5000, 0), LOCKD_OK);
	assert_int_equal(lockd_append_status(c, "pipe/a"), LOCKD_OK);
	assert_int_equal(lockd_append_ping(c), LOCKD_OK);
	assert_int_equal(lockd_append_try(c, "pipe/b", 5000, 0), LOCKD_OK);
	assert_int_equal(lockd_pending(c), 5);
	/* A blocking call would read someone else's reply: refused. */
	assert_int_equal(lockd_ping(c), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_pending(c), 5);

	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_ACQUIRE);
	assert_int_equal(r.result, LOCKD_OK);
	assert_string_equal(r.lease.name, "pipe/a");
	lease = r.lease;
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_HELD);
	assert_int_equal(r.command, LOCKD_CMD_TRY);
	assert_int_equal(r.result, LOCKD_HELD);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_STATUS);
	assert_int_equal(r.status.held, 1);
	assert_int_equal(r.status.fence, lease.fence);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_PING);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_TRY);
	assert_string_equal(r.lease.name, "pipe/b");
	assert_int_equal(lockd_pending(c), 0);

	/* Renew, release twice, and an error in the middle of a batch. */
	assert_int_equal(lockd_append_renew(c, &lease, 7000), LOCKD_OK);
	assert_int_equal(lockd_append_acquire(c, "pipe/a", 5000, 0, 0),
	    LOCKD_OK);
	assert_int_equal(lockd_append_release(c, &lease), LOCKD_OK);
	assert_int_equal(lockd_append_release(c, &lease), LOCKD_OK);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_RENEW);
	assert_int_equal(r.lease.lease_ms, 7000);
	assert_int_equal(r.lease.fence, lease.fence);
	assert_string_equal(r.lease.handle, lease.handle);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(r.result, LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_RELEASE);
	assert_int_equal(lockd_get_reply(c, &r), LOCKD_NOTHELD);
	assert_int_equal(lockd_pending(c), 0);
	lockd_free(c);
}

static void
test_liblockd_a_waiting_acquire_holds_back_later_replies(void **state)
{
	lockd_context *a = connect_shared(), *b = connect_shared();
	lockd_lease la;
	lockd_reply r;
	int64_t deadline;
	int rc;

	(void)state;
	assert_int_equal(lockd_acquire(a, "pipe/wait", 5000, 0, 0, &la),
	    LOCKD_OK);
	assert_int_equal(lockd_append_acquire(b, "pipe/wait", 5000,
	    LOCKD_WAIT_FOREVER, 0), LOCKD_OK);
	assert_int_equal(lockd_append_ping(b), LOCKD_OK);
	assert_int_equal(lockd_flush(b), LOCKD_OK);
	harness_sleep_ms(150);
	/* The PONG is due after the grant, which has not happened. */
	assert_int_equal(lockd_poll_reply(b, &r), LOCKD_AGAIN);
	assert_int_equal(lockd_pending(b), 2);
	assert_int_equal(lockd_release(a, &la), LOCKD_OK);

	/* An event loop's way: poll the fd, then take what came. */
	deadline = harness_now_ms() + TIMEOUT_MS;
	do {
		struct pollfd p = { .fd = b->fd, .events = POLLIN };

		poll(&p, 1, 100);
		rc = lockd_poll_reply(b, &r);
	} while (rc == LOCKD_AGAIN && harness_now_ms() < deadline);
	assert_int_equal(rc, LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_ACQUIRE);
	assert_true(r.lease.fence > la.fence);
	assert_int_equal(lockd_get_reply(b, &r), LOCKD_OK);
	assert_int_equal(r.command, LOCKD_CMD_PING);
	lockd_free(a);
	lockd_free(b);
}

static void
test_liblockd_a_long_pipeline_does_not_deadlock(void **state)
{
	/* lockd cuts off a client that leaves this much of its replies
	 * unread, so the library must read while it writes. */
	struct harness_server *s;
	lockd_context *c;
	lockd_reply r;
	int i, n = 20000;

	(void)state;
	s = harness_start("--max-output", "65536", NULL);
	c = connect_to(s->port, TIMEOUT_MS);
	/* ~1 MB of requests, ~1.5 MB of replies. */
	for (i = 0; i < n; i++)
		assert_int_equal(lockd_append_status(c,
		    "pipe/long-name-to-make-the-replies-longer"), LOCKD_OK);
	for (i = 0; i < n; i++) {
		assert_int_equal(lockd_get_reply(c, &r), LOCKD_OK);
		assert_int_equal(r.command, LOCKD_CMD_STATUS);
	}
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
	harness_server_destroy(s);
}

/* Timeouts and restarts, each on a daemon of its own. */

static void
test_liblockd_command_timeout_on_a_stopped_server_kills_the_context(
    void **state)
{
	struct harness_server *s;
	lockd_context *c, *waiter;
	lockd_lease lease;
	int64_t start, took;

	(void)state;
	s = harness_start(NULL);
	c = connect_to(s->port, 300);
	waiter = connect_to(s->port, 300);
	assert_int_equal(lockd_ping(c), LOCKD_OK);

	harness_server_pause(s);
	start = harness_now_ms();
	assert_int_equal(lockd_ping(c), LOCKD_ERR_TIMEOUT);
	took = harness_now_ms() - start;
	assert_in_range(took, 280, 2000);
	assert_true(lockd_error_is_fatal(c->err));
	assert_int_equal(c->fd, -1);
	/* Dead at once from now on: the stream is out of step. */
	start = harness_now_ms();
	assert_int_equal(lockd_ping(c), LOCKD_ERR_TIMEOUT);
	assert_true(harness_now_ms() - start < 100);

	/* An ACQUIRE gets its wait on top of the command timeout. */
	start = harness_now_ms();
	assert_int_equal(lockd_acquire(waiter, "stopped", 5000, 400, 0,
	    &lease), LOCKD_ERR_TIMEOUT);
	took = harness_now_ms() - start;
	assert_in_range(took, 650, 3000);

	harness_server_resume(s);
	assert_int_equal(lockd_reconnect(c), LOCKD_OK);
	assert_int_equal(c->err, 0);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
	lockd_free(waiter);
	harness_server_destroy(s);
}

static void
test_liblockd_reconnect_after_a_server_restart(void **state)
{
	struct harness_server *s;
	struct harness_conn *hc;
	lockd_context *c, *holder, *waiter;
	lockd_lease lease, other;
	lockd_lock_status st;
	lockd_reply r;
	int rc;

	(void)state;
	s = harness_start(NULL);
	c = connect_to(s->port, TIMEOUT_MS);
	holder = connect_to(s->port, TIMEOUT_MS);
	waiter = connect_to(s->port, TIMEOUT_MS);
	assert_int_equal(lockd_acquire(c, "restart/kept", 30000, 0,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_OK);
	assert_int_equal(lockd_acquire(holder, "restart/queue", 30000, 0,
	    LOCKD_ONCLOSE_KEEP, &other), LOCKD_OK);
	assert_int_equal(lockd_append_acquire(waiter, "restart/queue", 5000,
	    LOCKD_WAIT_FOREVER, 0), LOCKD_OK);
	assert_int_equal(lockd_flush(waiter), LOCKD_OK);
	hc = harness_connect(s);
	harness_await_queue(hc, "restart/queue", 1);
	harness_close(hc);

	/* A clean stop answers waiters ERR SHUTDOWN, then closes. */
	harness_server_stop(s, HARNESS_STOP_TIMEOUT_MS, NULL);
	assert_int_equal(lockd_get_reply(waiter, &r), LOCKD_ERR_SHUTDOWN);
	assert_false(lockd_error_is_fatal(waiter->err));
	/* Closed: EOF, or IO when our write drew a reset first. */
	rc = lockd_ping(waiter);
	assert_true(rc == LOCKD_ERR_EOF || rc == LOCKD_ERR_IO);
	rc = lockd_ping(c);
	assert_true(rc == LOCKD_ERR_EOF || rc == LOCKD_ERR_IO);
	assert_true(lockd_error_is_fatal(c->err));

	harness_server_restart(s);
	assert_int_equal(lockd_reconnect(c), LOCKD_OK);
	/* The lease outlived the restart: same fence, still renewable. */
	assert_int_equal(lockd_status(c, "restart/kept", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.fence, lease.fence);
	assert_int_equal(lockd_renew(c, &lease, 30000), LOCKD_OK);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	assert_int_equal(lockd_acquire(c, "restart/kept", 5000, 0, 0, &other),
	    LOCKD_OK);
	assert_true(other.fence > lease.fence);
	lockd_free(c);
	lockd_free(holder);
	lockd_free(waiter);
	harness_server_destroy(s);
}

static void
test_liblockd_server_limits_and_long_lines_are_reported(void **state)
{
	struct harness_server *s;
	lockd_context *a, *b;
	lockd_lease la;
	lockd_reply r;
	char name[200];

	(void)state;
	s = harness_start("--max-line", "64", "--max-waiters-per-connection",
	    "1", NULL);
	a = connect_to(s->port, TIMEOUT_MS);
	b = connect_to(s->port, TIMEOUT_MS);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(lockd_status(a, name, NULL), LOCKD_ERR_TOOLONG);
	assert_non_null(strstr(a->errstr, "TOOLONG"));
	assert_int_equal(lockd_ping(a), LOCKD_OK);

	assert_int_equal(lockd_acquire(a, "limit", 5000, 0, 0, &la),
	    LOCKD_OK);
	assert_int_equal(lockd_append_acquire(b, "limit", 5000,
	    LOCKD_WAIT_FOREVER, 0), LOCKD_OK);
	assert_int_equal(lockd_append_acquire(b, "limit", 5000,
	    LOCKD_WAIT_FOREVER, 0), LOCKD_OK);
	assert_int_equal(lockd_flush(b), LOCKD_OK);
	harness_sleep_ms(100);
	assert_int_equal(lockd_release(a, &la), LOCKD_OK);
	assert_int_equal(lockd_get_reply(b, &r), LOCKD_OK);
	assert_int_equal(lockd_get_reply(b, &r), LOCKD_ERR_LIMIT);
	assert_int_equal(b->err, LOCKD_ERR_LIMIT);
	assert_int_equal(lockd_ping(b), LOCKD_OK);
	lockd_free(a);
	lockd_free(b);
	harness_server_destroy(s);
}

/* Against the fake server. */

static lockd_context *
connect_fake(struct harness_fake *f, const char *const *replies, size_t n,
    int64_t command_timeout_ms)
{
	assert_int_equal(harness_fake_start(f, replies, n), 0);
	return connect_to(f->port, command_timeout_ms);
}

static void
test_liblockd_every_server_error_maps_to_its_code(void **state)
{
	static const char *const replies[] = {
		"ERR BADREQ unknown command\r\n",
		"ERR BADARG bad duration\r\n",
		"ERR TOOLONG line too long\r\n",
		"ERR TIMEOUT lock not acquired within wait\r\n",
		"ERR CONFLICT not the holder\r\n",
		"ERR LIMIT too many waiters\r\n",
		"ERR UNAVAILABLE store failed\r\n",
		"ERR OVERFLOW fence exhausted\r\n",
		"ERR SHUTDOWN stopping\r\n",
		"ERR BADREQ\n",
	};
	static const int codes[] = {
		LOCKD_ERR_BADREQ, LOCKD_ERR_BADARG, LOCKD_ERR_TOOLONG,
		LOCKD_ERR_WAIT_TIMEOUT, LOCKD_ERR_CONFLICT, LOCKD_ERR_LIMIT,
		LOCKD_ERR_UNAVAILABLE, LOCKD_ERR_OVERFLOW, LOCKD_ERR_SHUTDOWN,
		LOCKD_ERR_BADREQ,
	};
	struct harness_fake f;
	lockd_context *c = connect_fake(&f, replies, 10, TIMEOUT_MS);
	size_t i;

	(void)state;
	for (i = 0; i < 10; i++) {
		char code[16];

		assert_int_equal(lockd_ping(c), codes[i]);
		assert_int_equal(c->err, codes[i]);
		assert_false(lockd_error_is_fatal(c->err));
		/* errstr carries the server's code and text. */
		assert_int_equal(sscanf(replies[i], "ERR %15s", code), 1);
		assert_int_equal(strncmp(c->errstr, code, strlen(code)), 0);
	}
	assert_non_null(strstr(replies[0], "unknown command"));
	lockd_free(c);
	harness_fake_stop(&f);
}

/* Runs one request against a fake that answers reply; returns the result. */
static int
against_fake(const char *reply, int (*call)(lockd_context *),
    int64_t command_timeout_ms, lockd_context **dead)
{
	const char *replies[1] = { reply };
	struct harness_fake f;
	lockd_context *c = connect_fake(&f, replies, 1, command_timeout_ms);
	int rc = call(c);

	harness_fake_stop(&f);
	if (dead != NULL)
		*dead = c;
	else
		lockd_free(c);
	return rc;
}

static int
call_ping(lockd_context *c)
{
	return lockd_ping(c);
}

static int
call_acquire(lockd_context *c)
{
	lockd_lease lease;

	return lockd_acquire(c, "x", 0, 0, 0, &lease);
}

static int
call_try(lockd_context *c)
{
	lockd_lease lease;

	return lockd_try(c, "x", 0, 0, &lease);
}

static int
call_renew(lockd_context *c)
{
	lockd_lease lease;

	lockd_lease_init(&lease, "x", "1-0123456789abcdef");
	return lockd_renew(c, &lease, 0);
}

static int
call_release(lockd_context *c)
{
	lockd_lease lease;

	lockd_lease_init(&lease, "x", "1-0123456789abcdef");
	return lockd_release(c, &lease);
}

static int
call_status(lockd_context *c)
{
	return lockd_status(c, "x", NULL);
}

static void
test_liblockd_garbled_or_mismatched_replies_are_protocol_errors(
    void **state)
{
	static const char granted_other[] =
	    "GRANTED y fence=1 handle=1-0123456789abcdef lease=5\r\n";
	char huge[6000];
	lockd_context *c;

	(void)state;
	assert_int_equal(against_fake("HELLO\r\n", call_ping, TIMEOUT_MS,
	    &c), LOCKD_ERR_PROTOCOL);
	assert_int_equal(c->fd, -1);
	assert_int_equal(lockd_ping(c), LOCKD_ERR_PROTOCOL);
	lockd_free(c);
	/* Well-formed replies that answer another request. */
	assert_int_equal(against_fake("PONG\r\n", call_acquire, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake(granted_other, call_acquire, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("HELD x\r\n", call_acquire, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("RELEASED x\r\n", call_try, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("RENEWED x fence=2 lease=5\r\n",
	    call_renew, TIMEOUT_MS, NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("PONG\r\n", call_release, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("HELD x\r\n", call_status, TIMEOUT_MS,
	    NULL), LOCKD_ERR_PROTOCOL);
	assert_int_equal(against_fake("GRANTED x fence=1\r\n", call_acquire,
	    TIMEOUT_MS, NULL), LOCKD_ERR_PROTOCOL);
	/* The same replies, rightly placed, are fine (the checks can pass). */
	assert_int_equal(against_fake("HELD x\r\n", call_try, TIMEOUT_MS,
	    NULL), LOCKD_HELD);
	assert_int_equal(against_fake("RENEWED x fence=1 lease=5 new=1\r\n",
	    call_renew, TIMEOUT_MS, NULL), LOCKD_OK);
	assert_int_equal(against_fake("RELEASED x\r\n", call_release,
	    TIMEOUT_MS, NULL), LOCKD_OK);
	/* A line with no end within the reply limit. */
	memset(huge, 'P', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_int_equal(against_fake(huge, call_ping, TIMEOUT_MS, NULL),
	    LOCKD_ERR_PROTOCOL);
}

static void
test_liblockd_a_server_closing_is_eof_and_silence_a_timeout(void **state)
{
	int64_t start;

	(void)state;
	assert_int_equal(against_fake(NULL, call_ping, TIMEOUT_MS, NULL),
	    LOCKD_ERR_EOF);
	start = harness_now_ms();
	assert_int_equal(against_fake("", call_ping, 300, NULL),
	    LOCKD_ERR_TIMEOUT);
	assert_in_range(harness_now_ms() - start, 280, 3000);
	/* Half a reply, then silence. */
	assert_int_equal(against_fake("PO", call_ping, 300, NULL),
	    LOCKD_ERR_TIMEOUT);
}

static void
test_liblockd_requests_on_the_wire_are_canonical(void **state)
{
	static const char *const replies[] = {
		"ERR TIMEOUT x\r\n", "ERR TIMEOUT x\r\n", "HELD a\r\n",
		"HELD a\r\n", "RENEWED a fence=41 lease=2000\r\n",
		"NOTHELD a\r\n", "STATUS a held=0 fence=0 ttl=0 queue=0\r\n",
		"PONG\r\n",
	};
	static const char expected[] =
	    "ACQUIRE a lease=1500 wait=0 onclose=release\n"
	    "ACQUIRE a\n"
	    "TRY a\n"
	    "TRY a lease=60000 onclose=release\n"
	    "RENEW a 41-8c1f0e9b2a7d4c35 lease=2000\n"
	    "RELEASE a 41-8c1f0e9b2a7d4c35\n"
	    "STATUS a\n"
	    "PING\n";
	struct harness_fake f;
	lockd_context *c = connect_fake(&f, replies, 8, TIMEOUT_MS);
	lockd_lease lease;
	char got[1024];

	(void)state;
	assert_int_equal(lockd_acquire(c, "a", 1500, 0, LOCKD_ONCLOSE_RELEASE,
	    &lease), LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(lockd_acquire(c, "a", 0, LOCKD_WAIT_FOREVER,
	    LOCKD_ONCLOSE_KEEP, &lease), LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(lockd_try(c, "a", 0, LOCKD_ONCLOSE_KEEP, &lease),
	    LOCKD_HELD);
	assert_int_equal(lockd_try(c, "a", 60000, LOCKD_ONCLOSE_RELEASE,
	    &lease), LOCKD_HELD);
	assert_int_equal(lockd_lease_init(&lease, "a", "41-8c1f0e9b2a7d4c35"),
	    LOCKD_OK);
	assert_int_equal(lockd_renew(c, &lease, 2000), LOCKD_OK);
	assert_int_equal(lease.lease_ms, 2000);
	assert_int_equal(lockd_release(c, &lease), LOCKD_NOTHELD);
	assert_int_equal(lockd_status(c, "a", NULL), LOCKD_OK);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
	/* The fake logs a line before it answers the next one. */
	assert_true(harness_read_file(f.received, got, sizeof(got)));
	assert_string_equal(got, expected);
	harness_fake_stop(&f);
}

/* limit= and mode= on the wire: only when they say something. */
static void
test_liblockd_kinds_on_the_wire(void **state)
{
	static const char *const replies[] = {
		"HELD a\r\n", "HELD a\r\n", "HELD a\r\n",
		"ERR TIMEOUT x\r\n", "HELD a\r\n",
	};
	static const char expected[] =
	    "TRY a limit=2\n"
	    "TRY a mode=shared\n"
	    "TRY a\n"
	    "ACQUIRE a wait=0 rid=r-1 limit=65535\n"
	    "TRY a rid=r-2 mode=shared\n";
	struct harness_fake f;
	lockd_context *c = connect_fake(&f, replies, 5, TIMEOUT_MS);
	lockd_acquire_options now;
	lockd_kind k;
	lockd_lease lease;
	char got[1024];

	(void)state;
	memset(&now, 0, sizeof(now));
	k = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_try_kind(c, "a", &now, &k, NULL, &lease),
	    LOCKD_HELD);
	k = harness_kind(0, LOCKD_MODE_SHARED);
	assert_int_equal(lockd_try_kind(c, "a", &now, &k, NULL, &lease),
	    LOCKD_HELD);
	k = harness_kind(1, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_try_kind(c, "a", &now, &k, NULL, &lease),
	    LOCKD_HELD);
	k = harness_kind(LOCKD_LIMIT_MAX, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_acquire_kind(c, "a", &now, &k, "r-1", &lease),
	    LOCKD_ERR_WAIT_TIMEOUT);
	k = harness_kind(1, LOCKD_MODE_SHARED);
	assert_int_equal(lockd_try_kind(c, "a", &now, &k, "r-2", &lease),
	    LOCKD_HELD);
	lockd_free(c);
	assert_true(harness_read_file(f.received, got, sizeof(got)));
	assert_string_equal(got, expected);
	harness_fake_stop(&f);
}

/* The keep-alive helper. */

struct loss {
	pthread_mutex_t mutex;
	int calls;
	int err;
	int64_t at;
	char errstr[LOCKD_ERRSTR_SIZE];
};

static void
on_lost(void *arg, int err, const char *errstr)
{
	struct loss *l = arg;

	pthread_mutex_lock(&l->mutex);
	l->calls++;
	l->err = err;
	l->at = lockd_now_ms();
	snprintf(l->errstr, sizeof(l->errstr), "%s", errstr);
	pthread_mutex_unlock(&l->mutex);
}

static bool
fd_readable_within(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1;
}

static void
test_liblockd_keepalive_renews_in_the_background(void **state)
{
	lockd_options o = options_for(harness_shared->port, TIMEOUT_MS);
	lockd_context *c = connect_shared();
	struct loss loss = { .mutex = PTHREAD_MUTEX_INITIALIZER };
	lockd_keepalive *k;
	lockd_lease lease, now;
	lockd_lock_status st;
	int i;

	(void)state;
	assert_int_equal(lockd_acquire(c, "keepalive/renews", 300, 0, 0,
	    &lease), LOCKD_OK);
	k = lockd_keepalive_start(&o, &lease, on_lost, &loss);
	assert_non_null(k);
	assert_int_equal(lockd_keepalive_lost(k), 0);
	assert_string_equal(lockd_keepalive_errstr(k), "");
	/* Four leases long; the holder keeps checking it still holds. */
	for (i = 0; i < 12; i++) {
		harness_sleep_ms(100);
		assert_int_equal(lockd_status(c, "keepalive/renews", &st),
		    LOCKD_OK);
		assert_int_equal(st.held, 1);
		assert_int_equal(st.fence, lease.fence);
	}
	assert_int_equal(lockd_keepalive_lost(k), 0);
	assert_false(fd_readable_within(lockd_keepalive_fd(k), 0));
	lockd_keepalive_lease(k, &now);
	assert_int_equal(now.fence, lease.fence);
	assert_string_equal(now.handle, lease.handle);
	assert_true(now.deadline_ms > lease.deadline_ms + 700);
	assert_int_equal(lockd_keepalive_stop(k), 0);
	assert_int_equal(loss.calls, 0);
	/* Still ours when the helper stops: the release finds it held. */
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	lockd_free(c);
}

static void
test_liblockd_keepalive_reports_a_refused_renewal(void **state)
{
	lockd_options o = options_for(harness_shared->port, TIMEOUT_MS);
	lockd_context *c = connect_shared();
	struct loss loss = { .mutex = PTHREAD_MUTEX_INITIALIZER };
	lockd_keepalive *k;
	lockd_lease lease;
	int64_t released;

	(void)state;
	assert_int_equal(lockd_acquire(c, "keepalive/refused", 600, 0, 0,
	    &lease), LOCKD_OK);
	k = lockd_keepalive_start(&o, &lease, on_lost, &loss);
	assert_int_equal(lockd_keepalive_lost(k), 0);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	released = lockd_now_ms();
	/* The next renewal, at most a third of the lease on, is refused. */
	assert_true(fd_readable_within(lockd_keepalive_fd(k), 2000));
	assert_int_equal(lockd_keepalive_lost(k), LOCKD_ERR_CONFLICT);
	assert_non_null(strstr(lockd_keepalive_errstr(k), "CONFLICT"));
	pthread_mutex_lock(&loss.mutex);
	assert_int_equal(loss.calls, 1);
	assert_int_equal(loss.err, LOCKD_ERR_CONFLICT);
	assert_true(loss.at - released <= 300);
	pthread_mutex_unlock(&loss.mutex);
	assert_int_equal(lockd_keepalive_stop(k), LOCKD_ERR_CONFLICT);
	assert_int_equal(loss.calls, 1);
	lockd_free(c);
}

static void
test_liblockd_keepalive_reports_loss_before_a_stopped_server_lets_it_end(
    void **state)
{
	struct harness_server *s;
	struct loss loss = { .mutex = PTHREAD_MUTEX_INITIALIZER };
	lockd_options o;
	lockd_context *c;
	lockd_keepalive *k;
	lockd_lease lease, last;
	int64_t stopped;

	(void)state;
	s = harness_start(NULL);
	o = options_for(s->port, TIMEOUT_MS);
	c = connect_to(s->port, TIMEOUT_MS);
	assert_int_equal(lockd_acquire(c, "keepalive/stopped", 600, 0, 0,
	    &lease), LOCKD_OK);
	k = lockd_keepalive_start(&o, &lease, on_lost, &loss);
	assert_int_equal(lockd_keepalive_lost(k), 0);
	harness_sleep_ms(450);
	harness_server_pause(s);
	stopped = lockd_now_ms();
	assert_true(fd_readable_within(lockd_keepalive_fd(k), 3000));
	assert_int_equal(lockd_keepalive_lost(k), LOCKD_ERR_TIMEOUT);
	lockd_keepalive_lease(k, &last);
	pthread_mutex_lock(&loss.mutex);
	assert_int_equal(loss.calls, 1);
	/* Told before the lease could end, about a tenth of it before... */
	assert_true(loss.at <= last.deadline_ms - 30);
	/* ...and not long before: the last renewal's lease was used. */
	assert_true(loss.at >= stopped);
	assert_true(loss.at >= last.deadline_ms - 600);
	pthread_mutex_unlock(&loss.mutex);
	assert_int_equal(lockd_keepalive_stop(k), LOCKD_ERR_TIMEOUT);
	harness_server_resume(s);
	lockd_free(c);
	harness_server_destroy(s);
}

static void
test_liblockd_keepalive_start_fails_for_a_lost_lease(void **state)
{
	lockd_options o = options_for(harness_shared->port, TIMEOUT_MS);
	lockd_context *c = connect_shared();
	struct loss loss = { .mutex = PTHREAD_MUTEX_INITIALIZER };
	lockd_keepalive *k;
	lockd_lease lease;

	(void)state;
	assert_int_equal(lockd_acquire(c, "keepalive/gone", 5000, 0, 0,
	    &lease), LOCKD_OK);
	assert_int_equal(lockd_release(c, &lease), LOCKD_OK);
	k = lockd_keepalive_start(&o, &lease, on_lost, &loss);
	assert_non_null(k);
	assert_int_equal(lockd_keepalive_lost(k), LOCKD_ERR_CONFLICT);
	assert_true(fd_readable_within(lockd_keepalive_fd(k), 0) == false);
	assert_int_equal(lockd_keepalive_stop(k), LOCKD_ERR_CONFLICT);
	assert_int_equal(loss.calls, 0);

	o.port = harness_closed_port();
	k = lockd_keepalive_start(&o, &lease, on_lost, &loss);
	assert_int_equal(lockd_keepalive_lost(k), LOCKD_ERR_IO);
	assert_non_null(strstr(lockd_keepalive_errstr(k), "refused"));
	assert_int_equal(lockd_keepalive_stop(k), LOCKD_ERR_IO);
	lockd_free(c);
}

/* Utilities. */

static void
test_liblockd_codes_have_names_and_classes(void **state)
{
	static const struct { int code; const char *name; bool fatal; }
	    table[] = {
		{ LOCKD_OK, "OK", false }, { LOCKD_HELD, "HELD", false },
		{ LOCKD_NOTHELD, "NOTHELD", false },
		{ LOCKD_AGAIN, "AGAIN", false },
		{ LOCKD_ERR_IO, "IO", true }, { LOCKD_ERR_EOF, "EOF", true },
		{ LOCKD_ERR_PROTOCOL, "PROTOCOL", true },
		{ LOCKD_ERR_TIMEOUT, "TIMEOUT", true },
		{ LOCKD_ERR_OOM, "OOM", false },
		{ LOCKD_ERR_INVALID, "INVALID", false },
		{ LOCKD_ERR_BADREQ, "BADREQ", false },
		{ LOCKD_ERR_BADARG, "BADARG", false },
		{ LOCKD_ERR_TOOLONG, "TOOLONG", false },
		{ LOCKD_ERR_WAIT_TIMEOUT, "WAIT_TIMEOUT", false },
		{ LOCKD_ERR_CONFLICT, "CONFLICT", false },
		{ LOCKD_ERR_LIMIT, "LIMIT", false },
		{ LOCKD_ERR_UNAVAILABLE, "UNAVAILABLE", false },
		{ LOCKD_ERR_OVERFLOW, "OVERFLOW", false },
		{ LOCKD_ERR_SHUTDOWN, "SHUTDOWN", false },
	};
	size_t i;
	int64_t ms;

	(void)state;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		assert_string_equal(lockd_strerror(table[i].code),
		    table[i].name);
		assert_int_equal(lockd_error_is_fatal(table[i].code) != 0,
		    table[i].fatal);
	}
	assert_string_equal(lockd_strerror(-99), "?");
	assert_int_equal(lockd_parse_duration("30s", &ms), LOCKD_OK);
	assert_int_equal(ms, 30000);
	assert_int_equal(lockd_parse_duration("1500", &ms), LOCKD_OK);
	assert_int_equal(ms, 1500);
	assert_int_equal(lockd_parse_duration("-5", &ms), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_parse_duration("5x", &ms), LOCKD_ERR_INVALID);
	assert_int_equal(lockd_parse_duration(NULL, &ms), LOCKD_ERR_INVALID);
	ms = lockd_now_ms();
	harness_sleep_ms(20);
	assert_in_range(lockd_now_ms() - ms, 19, 1000);
}

/* ---- issue 17's kinds of lock: lockd_acquire_kind, lockd_try_kind ---- */

static lockd_acquire_options
wait_for(int64_t wait_ms)
{
	return harness_wait_options(wait_ms, LOCKD_ONCLOSE_KEEP);
}

/* A semaphore of 2 and three callers, each on its own connection. */
static void
test_liblockd_a_semaphore_of_two_lets_two_of_three_hold(void **state)
{
	lockd_context *c[3] = { connect_shared(), connect_shared(),
	    connect_shared() };
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_acquire_options now = wait_for(0), soon = wait_for(200);
	lockd_lease l[3];
	lockd_lock_status st;
	int i;

	(void)state;
	assert_int_equal(lockd_try_kind(c[0], "kind/sem", &now, &two, NULL,
	    &l[0]), LOCKD_OK);
	assert_int_equal(lockd_acquire_kind(c[1], "kind/sem", &soon, &two,
	    NULL, &l[1]), LOCKD_OK);
	assert_true(l[1].fence > l[0].fence);
	assert_int_equal(lockd_status(c[2], "kind/sem", &st), LOCKD_OK);
	assert_int_equal(st.held, 1);
	/* The third waits in vain, is busy, or asks another limit. */
	assert_int_equal(lockd_try_kind(c[2], "kind/sem", &now, &two, NULL,
	    &l[2]), LOCKD_HELD);
	assert_int_equal(lockd_acquire_kind(c[2], "kind/sem", &soon, &two,
	    NULL, &l[2]), LOCKD_ERR_WAIT_TIMEOUT);
	assert_int_equal(lockd_try_kind(c[2], "kind/sem", &now, NULL, NULL,
	    &l[2]), LOCKD_ERR_BADARG);
	/* One permit back: the third has it, with a fence of its own. */
	assert_int_equal(lockd_release(c[0], &l[0]), LOCKD_OK);
	assert_int_equal(lockd_acquire_kind(c[2], "kind/sem", &soon, &two,
	    NULL, &l[2]), LOCKD_OK);
	assert_true(l[2].fence > l[1].fence);
	/* Each permit renews and releases on its own handle. */
	assert_int_equal(lockd_renew(c[1], &l[1], 5000), LOCKD_OK);
	assert_int_equal(lockd_release(c[1], &l[1]), LOCKD_OK);
	assert_int_equal(lockd_release(c[2], &l[2]), LOCKD_OK);
	assert_int_equal(lockd_release(c[2], &l[2]), LOCKD_NOTHELD);
	for (i = 0; i < 3; i++)
		lockd_free(c[i]);
}

/* A repeated rid returns its own grant, limit and all, never a second. */
static void
test_liblockd_kind_with_a_rid_is_granted_once(void **state)
{
	lockd_context *c = connect_shared();
	lockd_kind two = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	lockd_kind three = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	lockd_acquire_options now = wait_for(0);
	lockd_lease a, b;

	(void)state;
	assert_int_equal(lockd_acquire_kind(c, "kind/rid", &now, &two,
	    "kind-rid-1", &a), LOCKD_OK);
	assert_int_equal(lockd_acquire_kind(c, "kind/rid", &now, &two,
	    "kind-rid-1", &b), LOCKD_OK);
	assert_true(b.fence == a.fence);
	assert_string_equal(b.handle, a.handle);
	assert_int_equal(lockd_try_kind(c, "kind/rid", &now, &three,
	    "kind-rid-1", &b), LOCKD_ERR_BADARG);
	/* The second permit is still free: one grant was made, not two. */
	assert_int_equal(lockd_try_kind(c, "kind/rid", &now, &two,
	    "kind-rid-2", &b), LOCKD_OK);
	assert_true(b.fence > a.fence);
	assert_int_equal(lockd_release(c, &a), LOCKD_OK);
	assert_int_equal(lockd_release(c, &b), LOCKD_OK);
	lockd_free(c);
}

struct writer {
	lockd_context *c;
	lockd_lease lease;
	int rc;
};

/* An exclusive ACQUIRE that waits up to 5 s, from its own thread. */
static void *
write_lock(void *arg)
{
	struct writer *w = arg;
	lockd_acquire_options o = wait_for(5000);
	lockd_kind excl = harness_kind(1, LOCKD_MODE_EXCLUSIVE);

	w->rc = lockd_acquire_kind(w->c, "kind/rw", &o, &excl, NULL,
	    &w->lease);
	return NULL;
}

/* Readers share; a waiting writer holds back later readers (FIFO). */
static void
test_liblockd_shared_readers_queue_behind_a_waiting_writer(void **state)
{
	lockd_context *r1 = connect_shared(), *r2 = connect_shared();
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_acquire_options now = wait_for(0), soon = wait_for(200);
	struct writer w = { .c = connect_shared(), .rc = 1 };
	lockd_lease a, b;
	lockd_lock_status st;
	pthread_t thread;
	int i;

	(void)state;
	assert_int_equal(lockd_try_kind(r1, "kind/rw", &now, &shared, NULL,
	    &a), LOCKD_OK);
	assert_int_equal(lockd_try_kind(r2, "kind/rw", &now, &shared, NULL,
	    &b), LOCKD_OK);
	assert_int_equal(lockd_release(r2, &b), LOCKD_OK);
	assert_int_equal(pthread_create(&thread, NULL, write_lock, &w), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(lockd_status(r2, "kind/rw", &st), LOCKD_OK);
		if (st.queue == 1)
			break;
		harness_sleep_ms(10);
	}
	assert_int_equal(st.queue, 1);
	/* A reader now queues behind the writer instead of joining r1. */
	assert_int_equal(lockd_try_kind(r2, "kind/rw", &now, &shared, NULL,
	    &b), LOCKD_HELD);
	assert_int_equal(lockd_acquire_kind(r2, "kind/rw", &soon, &shared,
	    NULL, &b), LOCKD_ERR_WAIT_TIMEOUT);
	/* The last reader leaves: the writer has it, with a newer fence. */
	assert_int_equal(lockd_release(r1, &a), LOCKD_OK);
	pthread_join(thread, NULL);
	assert_int_equal(w.rc, LOCKD_OK);
	assert_true(w.lease.fence > a.fence);
	assert_int_equal(lockd_try_kind(r2, "kind/rw", &now, &shared, NULL,
	    &b), LOCKD_HELD);
	assert_int_equal(lockd_release(w.c, &w.lease), LOCKD_OK);
	assert_int_equal(lockd_try_kind(r2, "kind/rw", &now, &shared, NULL,
	    &b), LOCKD_OK);
	assert_true(b.fence > w.lease.fence);
	assert_int_equal(lockd_release(r2, &b), LOCKD_OK);
	lockd_free(r1);
	lockd_free(r2);
	lockd_free(w.c);
}

/* A kind the wire cannot carry is refused before anything is sent. */
static void
test_liblockd_bad_kinds_are_refused_before_sending(void **state)
{
	lockd_context *c = connect_shared();
	lockd_acquire_options now = wait_for(0);
	lockd_kind k;
	lockd_lease l;

	(void)state;
	k = harness_kind(LOCKD_LIMIT_MAX + 1, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(lockd_try_kind(c, "kind/bad", &now, &k, NULL, &l),
	    LOCKD_ERR_INVALID);
	k = harness_kind(2, LOCKD_MODE_SHARED);
	assert_int_equal(lockd_try_kind(c, "kind/bad", &now, &k, NULL, &l),
	    LOCKD_ERR_INVALID);
	k = harness_kind(1, 7);
	assert_int_equal(lockd_acquire_kind(c, "kind/bad", &now, &k, NULL,
	    &l), LOCKD_ERR_INVALID);
	k = harness_kind(2, LOCKD_MODE_EXCLUSIVE);
	k.size = 0;
	assert_int_equal(lockd_try_kind(c, "kind/bad", &now, &k, NULL, &l),
	    LOCKD_ERR_INVALID);
	/* An older caller's shorter struct: limit read, mode not. */
	k = harness_kind(LOCKD_LIMIT_MAX, LOCKD_MODE_SHARED);
	k.size = offsetof(lockd_kind, mode);
	assert_int_equal(lockd_try_kind(c, "kind/bad", &now, &k, NULL, &l),
	    LOCKD_OK);
	assert_int_equal(lockd_release(c, &l), LOCKD_OK);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	lockd_free(c);
}

/* ---- the holders STATUS and LIST tell ---------------------------------- */

struct kinds_seen {
	char names[4][LOCKD_NAME_MAX + 1];
	lockd_lock_holders holders[4];
	int n;
};

static int
collect_holders(void *arg, const lockd_lock_info *info,
    const lockd_lock_holders *holders)
{
	struct kinds_seen *s = arg;

	assert_true(holders->size >= sizeof(lockd_lock_holders));
	if (s->n < 4) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", info->name);
		s->holders[s->n] = *holders;
	}
	s->n++;
	return 0;
}

/* A lockd_lock_holders filled with a marker, its size set. */
static lockd_lock_holders
holders_blank(void)
{
	lockd_lock_holders h;

	memset(&h, 0x5a, sizeof(h));
	h.size = sizeof(h);
	return h;
}

/* lockd_status_holders and lockd_list_holders: a semaphore's holders and
 * limit, a shared lock's readers, a plain lock's one holder. */
static void
test_liblockd_status_and_list_tell_holders_limit_and_mode(void **state)
{
	lockd_context *c = connect_shared();
	lockd_kind three = harness_kind(3, LOCKD_MODE_EXCLUSIVE);
	lockd_kind shared = harness_kind(0, LOCKD_MODE_SHARED);
	lockd_acquire_options now = wait_for(0);
	lockd_lock_holders h;
	lockd_lock_info info;
	struct kinds_seen seen;
	char next[LOCKD_NAME_MAX + 1];
	lockd_lease l[6];

	(void)state;
	assert_int_equal(lockd_try_kind(c, "holders/a-sem", &now, &three,
	    NULL, &l[0]), LOCKD_OK);
	assert_int_equal(lockd_try_kind(c, "holders/a-sem", &now, &three,
	    NULL, &l[1]), LOCKD_OK);
	assert_int_equal(lockd_try_kind(c, "holders/b-rw", &now, &shared,
	    NULL, &l[2]), LOCKD_OK);
	assert_int_equal(lockd_try_kind(c, "holders/b-rw", &now, &shared,
	    NULL, &l[3]), LOCKD_OK);
	assert_int_equal(lockd_try_kind(c, "holders/b-rw", &now, &shared,
	    NULL, &l[4]), LOCKD_OK);
	assert_int_equal(lockd_try_kind(c, "holders/c-plain", &now, NULL,
	    NULL, &l[5]), LOCKD_OK);

	h = holders_blank();
	assert_int_equal(lockd_status_holders(c, "holders/a-sem", &info, &h),
	    LOCKD_OK);
	assert_int_equal(info.held, 1);
	assert_int_equal(info.fence, l[1].fence);  /* the newest holder's */
	assert_int_equal(h.holders, 2);
	assert_int_equal(h.limit, 3);
	assert_int_equal(h.mode, LOCKD_MODE_EXCLUSIVE);
	h = holders_blank();
	assert_int_equal(lockd_status_holders(c, "holders/b-rw", &info, &h),
	    LOCKD_OK);
	assert_int_equal(info.fence, l[4].fence);
	assert_int_equal(h.holders, 3);
	assert_int_equal(h.limit, 1);
	assert_int_equal(h.mode, LOCKD_MODE_SHARED);
	h = holders_blank();
	assert_int_equal(lockd_status_holders(c, "holders/c-plain", &info,
	    &h), LOCKD_OK);
	assert_int_equal(h.holders, 1);
	assert_int_equal(h.limit, 1);
	assert_int_equal(h.mode, LOCKD_MODE_EXCLUSIVE);
	h = holders_blank();
	assert_int_equal(lockd_status_holders(c, "holders/free", NULL, &h),
	    LOCKD_OK);
	assert_int_equal(h.holders, 0);
	assert_int_equal(h.limit, 1);
	assert_int_equal(h.mode, LOCKD_MODE_EXCLUSIVE);

	/* LIST says the same, line by line. */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(lockd_list_holders(c, "holders/", NULL, 0,
	    collect_holders, &seen, next), LOCKD_OK);
	assert_int_equal(seen.n, 3);
	assert_string_equal(seen.names[0], "holders/a-sem");
	assert_int_equal(seen.holders[0].holders, 2);
	assert_int_equal(seen.holders[0].limit, 3);
	assert_int_equal(seen.holders[0].mode, LOCKD_MODE_EXCLUSIVE);
	assert_int_equal(seen.holders[1].holders, 3);
	assert_int_equal(seen.holders[1].limit, 1);
	assert_int_equal(seen.holders[1].mode, LOCKD_MODE_SHARED);
	assert_int_equal(seen.holders[2].holders, 1);
	assert_int_equal(seen.holders[2].mode, LOCKD_MODE_EXCLUSIVE);
	assert_string_equal(next, "");
	/* WATCH says it too: the newest fence is not the first permit's. */
	h = holders_blank();
	assert_int_equal(lockd_watch_holders(c, "holders/a-sem",
	    (int64_t)l[0].fence, 0, &info, &h), LOCKD_OK);
	assert_int_equal(info.fence, l[1].fence);
	assert_int_equal(h.holders, 2);
	assert_int_equal(h.limit, 3);
	h.size = 0;
	assert_int_equal(lockd_watch_holders(c, "holders/a-sem",
	    (int64_t)l[0].fence, 0, &info, &h), LOCKD_ERR_INVALID);

	/* An older caller's shorter struct: holders written, no further. */
	h = holders_blank();
	h.size = offsetof(lockd_lock_holders, limit);
	assert_int_equal(lockd_status_holders(c, "holders/a-sem", NULL, &h),
	    LOCKD_OK);
	assert_int_equal(h.holders, 2);
	assert_int_equal(h.limit, 0x5a5a5a5au);
	/* A size that covers not even holders is refused unsent. */
	h.size = 0;
	assert_int_equal(lockd_status_holders(c, "holders/a-sem", &info, &h),
	    LOCKD_ERR_INVALID);
	assert_int_equal(lockd_ping(c), LOCKD_OK);
	for (int i = 0; i < 6; i++)
		assert_int_equal(lockd_release(c, &l[i]), LOCKD_OK);
	lockd_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_liblockd_ping_answers),
		cmocka_unit_test(test_liblockd_v2_calls),
		cmocka_unit_test(
		    test_liblockd_status_and_list_tell_holders_limit_and_mode),
		cmocka_unit_test(test_liblockd_connect_over_a_unix_socket),
		cmocka_unit_test(
		    test_liblockd_connect_to_a_closed_port_fails_with_io),
		cmocka_unit_test(test_liblockd_connect_timeout_is_kept),
		cmocka_unit_test(
		    test_liblockd_acquire_status_renew_release_round_trip),
		cmocka_unit_test(test_liblockd_try_tells_held_apart_from_errors),
		cmocka_unit_test(
		    test_liblockd_acquire_with_wait_zero_fails_at_once),
		cmocka_unit_test(
		    test_liblockd_acquire_wait_extends_the_command_timeout),
		cmocka_unit_test(
		    test_liblockd_onclose_release_frees_the_lock_with_the_connection),
		cmocka_unit_test(
		    test_liblockd_renew_with_a_stale_handle_conflicts),
		cmocka_unit_test(
		    test_liblockd_bad_arguments_are_refused_before_sending),
		cmocka_unit_test(
		    test_liblockd_lease_init_makes_a_renewable_lease),
		cmocka_unit_test(
		    test_liblockd_pipelined_replies_come_in_request_order),
		cmocka_unit_test(
		    test_liblockd_a_waiting_acquire_holds_back_later_replies),
		cmocka_unit_test(test_liblockd_a_long_pipeline_does_not_deadlock),
		cmocka_unit_test(
		    test_liblockd_command_timeout_on_a_stopped_server_kills_the_context),
		cmocka_unit_test(test_liblockd_reconnect_after_a_server_restart),
		cmocka_unit_test(
		    test_liblockd_server_limits_and_long_lines_are_reported),
		cmocka_unit_test(
		    test_liblockd_every_server_error_maps_to_its_code),
		cmocka_unit_test(
		    test_liblockd_garbled_or_mismatched_replies_are_protocol_errors),
		cmocka_unit_test(
		    test_liblockd_a_server_closing_is_eof_and_silence_a_timeout),
		cmocka_unit_test(test_liblockd_requests_on_the_wire_are_canonical),
		cmocka_unit_test(test_liblockd_keepalive_renews_in_the_background),
		cmocka_unit_test(test_liblockd_keepalive_reports_a_refused_renewal),
		cmocka_unit_test(
		    test_liblockd_keepalive_reports_loss_before_a_stopped_server_lets_it_end),
		cmocka_unit_test(
		    test_liblockd_keepalive_start_fails_for_a_lost_lease),
		cmocka_unit_test(test_liblockd_codes_have_names_and_classes),
		cmocka_unit_test(
		    test_liblockd_a_semaphore_of_two_lets_two_of_three_hold),
		cmocka_unit_test(test_liblockd_kind_with_a_rid_is_granted_once),
		cmocka_unit_test(
		    test_liblockd_shared_readers_queue_behind_a_waiting_writer),
		cmocka_unit_test(
		    test_liblockd_bad_kinds_are_refused_before_sending),
		cmocka_unit_test(test_liblockd_kinds_on_the_wire),
	};

	harness_begin();
	return cmocka_run_group_tests(tests, harness_shared_setup,
	    harness_shared_teardown);
}
