/*
 * lease_holder.c - one lease held through liblockd's keep-alive, for
 * bench/failover-leases.py: the keep-alive thread (lockd_keepalive_start)
 * or the libuv keep-alive (lockd_uv_keepalive_start), whichever the first
 * argument names, over every endpoint given, so that a fail-over of the
 * cluster is the keep-alive's to ride out.
 *
 *   lease_holder keepalive|uv HOSTS NAME LEASE_MS SECONDS
 *
 * Acquires NAME (waiting at most 10 s), keeps it for SECONDS, releases it
 * and exits 0.  On stdout, one line each, with the wall-clock time in ms
 * (the bench compares it with its own clock): "granted fence=F t=T",
 * "renewed t=T" whenever the lease's deadline moved (looked at every
 * 10 ms), "released t=T".  A lost lease prints "lost t=T error=E why=..."
 * and exits 79, as lockctl does; anything else that fails exits 2.  Built
 * the way a user's program is, through lockd.pc.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lockd_uv.h>

#define HOLDER_EXIT_LOST 79
#define HOLDER_EXIT_ERROR 2
#define HOLDER_WAIT_MS 10000
#define HOLDER_LOOK_MS 10

static int64_t
holder_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
holder_say(const char *what)
{
	printf("%s t=%" PRId64 "\n", what, holder_wall_ms());
	fflush(stdout);
}

static void
holder_granted(const lockd_lease *lease)
{
	printf("granted fence=%" PRIu64 " t=%" PRId64 "\n", lease->fence,
	    holder_wall_ms());
	fflush(stdout);
}

static void
holder_lost(int err, const char *why)
{
	printf("lost t=%" PRId64 " error=%s why=%s\n", holder_wall_ms(),
	    lockd_strerror(err), why);
	fflush(stdout);
}

/* --- the keep-alive thread ------------------------------------------------ */

static int
holder_thread(const lockd_options *o, const char *name, int64_t lease_ms,
    int64_t seconds)
{
	lockd_context *c;
	lockd_keepalive *k;
	lockd_lease lease, now_lease;
	struct pollfd lost;
	int64_t end, seen;
	int rc;

	c = lockd_connect(o);
	if (c == NULL || c->err != 0) {
		fprintf(stderr, "connect: %s\n", c ? c->errstr : "no memory");
		return HOLDER_EXIT_ERROR;
	}
	rc = lockd_acquire(c, name, lease_ms, HOLDER_WAIT_MS,
	    LOCKD_ONCLOSE_KEEP, &lease);
	if (rc != LOCKD_OK) {
		fprintf(stderr, "acquire: %s\n", c->errstr);
		return HOLDER_EXIT_ERROR;
	}
	holder_granted(&lease);
	k = lockd_keepalive_start(o, &lease, NULL, NULL);
	if (k == NULL || lockd_keepalive_lost(k) != 0) {
		fprintf(stderr, "keep-alive: %s\n",
		    k ? lockd_keepalive_errstr(k) : "no memory");
		return HOLDER_EXIT_ERROR;
	}
	end = lockd_now_ms() + seconds * 1000;
	seen = lease.deadline_ms;
	lost.fd = lockd_keepalive_fd(k);
	lost.events = POLLIN;
	while (lockd_now_ms() < end) {
		lockd_keepalive_lease(k, &now_lease);
		if (now_lease.deadline_ms != seen) {
			seen = now_lease.deadline_ms;
			holder_say("renewed");
		}
		if (poll(&lost, 1, HOLDER_LOOK_MS) > 0) {
			holder_lost(lockd_keepalive_lost(k),
			    lockd_keepalive_errstr(k));
			lockd_keepalive_stop(k);
			return HOLDER_EXIT_LOST;
		}
	}
	lockd_keepalive_stop(k);
	if (lockd_release(c, &lease) != LOCKD_OK) {
		fprintf(stderr, "release: %s\n", c->errstr);
		return HOLDER_EXIT_ERROR;
	}
	holder_say("released");
	lockd_free(c);
	return 0;
}

/* --- the libuv keep-alive --------------------------------------------------- */

struct holder_uv {
	lockd_uv_client *client;
	lockd_uv_keepalive *keepalive;
	lockd_lease lease;
	uv_timer_t look;          /* every HOLDER_LOOK_MS: did it renew? */
	uv_timer_t done;          /* SECONDS after the grant */
	int64_t seen;
	int64_t seconds;
	int64_t lease_ms;
	int status;
};

static void
holder_uv_finish(struct holder_uv *h, int status)
{
	h->status = status;
	if (h->keepalive != NULL)
		lockd_uv_keepalive_stop(h->keepalive);
	h->keepalive = NULL;
	uv_close((uv_handle_t *)&h->look, NULL);
	uv_close((uv_handle_t *)&h->done, NULL);
	lockd_uv_close(h->client, NULL, NULL);
}

static void
holder_uv_on_lost(lockd_uv_keepalive *k, int err, const char *errstr,
    void *arg)
{
	(void)k;
	holder_lost(err, errstr);
	holder_uv_finish(arg, HOLDER_EXIT_LOST);
}

static void
holder_uv_on_look(uv_timer_t *t)
{
	struct holder_uv *h = t->data;
	lockd_lease now_lease;

	lockd_uv_keepalive_lease(h->keepalive, &now_lease);
	if (now_lease.deadline_ms != h->seen) {
		h->seen = now_lease.deadline_ms;
		holder_say("renewed");
	}
}

static void
holder_uv_on_released(lockd_uv_client *c, int result, const lockd_reply *reply,
    void *arg)
{
	struct holder_uv *h = arg;

	(void)reply;
	if (result != LOCKD_OK) {
		fprintf(stderr, "release: %s\n", lockd_uv_errstr(c));
		h->status = HOLDER_EXIT_ERROR;
	} else {
		holder_say("released");
	}
	lockd_uv_close(c, NULL, NULL);
}

static void
holder_uv_on_done(uv_timer_t *t)
{
	struct holder_uv *h = t->data;

	lockd_uv_keepalive_stop(h->keepalive);
	h->keepalive = NULL;
	uv_close((uv_handle_t *)&h->look, NULL);
	uv_close((uv_handle_t *)&h->done, NULL);
	if (lockd_uv_release(h->client, &h->lease, holder_uv_on_released,
	    h) != LOCKD_OK) {
		fprintf(stderr, "release: %s\n", lockd_uv_errstr(h->client));
		h->status = HOLDER_EXIT_ERROR;
		lockd_uv_close(h->client, NULL, NULL);
	}
}

static void
holder_uv_on_granted(lockd_uv_client *c, int result, const lockd_reply *reply,
    void *arg)
{
	struct holder_uv *h = arg;

	if (result != LOCKD_OK) {
		fprintf(stderr, "acquire: %s\n", lockd_uv_errstr(c));
		h->status = HOLDER_EXIT_ERROR;
		uv_close((uv_handle_t *)&h->look, NULL);
		uv_close((uv_handle_t *)&h->done, NULL);
		lockd_uv_close(c, NULL, NULL);
		return;
	}
	h->lease = reply->lease;
	h->seen = h->lease.deadline_ms;
	holder_granted(&h->lease);
	h->keepalive = lockd_uv_keepalive_start(c, &h->lease,
	    holder_uv_on_lost, h);
	if (h->keepalive == NULL) {
		fprintf(stderr, "keep-alive: could not start\n");
		holder_uv_finish(h, HOLDER_EXIT_ERROR);
		return;
	}
	uv_timer_start(&h->look, holder_uv_on_look, HOLDER_LOOK_MS,
	    HOLDER_LOOK_MS);
	uv_timer_start(&h->done, holder_uv_on_done, (uint64_t)h->seconds * 1000,
	    0);
}

static int
holder_uv(const lockd_options *o, const char *name, int64_t lease_ms,
    int64_t seconds)
{
	uv_loop_t *loop = uv_default_loop();
	struct holder_uv h;

	memset(&h, 0, sizeof(h));
	h.seconds = seconds;
	h.lease_ms = lease_ms;
	uv_timer_init(loop, &h.look);
	uv_timer_init(loop, &h.done);
	h.look.data = &h;
	h.done.data = &h;
	h.client = lockd_uv_connect(loop, o, NULL, NULL);
	if (h.client == NULL) {
		fprintf(stderr, "connect: bad options\n");
		return HOLDER_EXIT_ERROR;
	}
	if (lockd_uv_acquire(h.client, name, lease_ms, HOLDER_WAIT_MS,
	    LOCKD_ONCLOSE_KEEP, holder_uv_on_granted, &h) != LOCKD_OK) {
		fprintf(stderr, "acquire: %s\n", lockd_uv_errstr(h.client));
		return HOLDER_EXIT_ERROR;
	}
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return h.status;
}

int
main(int argc, char **argv)
{
	lockd_options o = { 0 };
	int64_t lease_ms, seconds;

	if (argc != 6 || (strcmp(argv[1], "keepalive") != 0 &&
	    strcmp(argv[1], "uv") != 0)) {
		fprintf(stderr, "usage: lease_holder keepalive|uv HOSTS NAME "
		    "LEASE_MS SECONDS\n");
		return HOLDER_EXIT_ERROR;
	}
	o.host = argv[2];
	o.connect_timeout_ms = 1000;
	o.command_timeout_ms = 5000;
	lease_ms = strtoll(argv[4], NULL, 10);
	seconds = strtoll(argv[5], NULL, 10);
	if (lease_ms <= 0 || seconds <= 0) {
		fprintf(stderr, "lease_holder: LEASE_MS and SECONDS are "
		    "positive numbers\n");
		return HOLDER_EXIT_ERROR;
	}
	if (strcmp(argv[1], "keepalive") == 0)
		return holder_thread(&o, argv[3], lease_ms, seconds);
	return holder_uv(&o, argv[3], lease_ms, seconds);
}
