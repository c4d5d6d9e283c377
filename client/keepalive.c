/*
 * keepalive.c - liblockd's keep-alive helper: a thread that renews one
 * lease every third of the lease on a connection of its own, and tells the
 * caller as soon as the lease is lost or could run out.
 *
 * The thread never touches the caller's context: it makes its own from the
 * options it was given and reconnects it as needed.  It sleeps and waits for
 * replies in poll() on a wake pipe, so lockd_keepalive_stop() interrupts it
 * at once (a reconnect, bounded by the time the lease has left, is the one
 * wait it sits out).  What other threads read is an atomic result, an error
 * sentence written before that result is published, a pipe that becomes
 * readable, and a lease copy under a mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/lockd.h"
#include "client/schedule.h"

/* When neither the options nor the lease say how long a first try may take. */
#define LOCKD__KEEPALIVE_FIRST_DEFAULT_MS 30000

/* The strings of lockd_options (host, unix_path, url, the TLS files,
 * the server name, token and token_file). */
#define LOCKD__KEEPALIVE_STRINGS 9

struct lockd_keepalive {
	lockd_options options;     /* its strings are our own copies: */
	char *copies[LOCKD__KEEPALIVE_STRINGS];
	lockd_keepalive_fn *on_lost;
	void *arg;

	lockd_context *ctx;        /* the thread's alone once it runs */
	lockd_lease renewing;      /* the thread's working copy */

	pthread_mutex_t mutex;     /* guards published */
	lockd_lease published;

	atomic_int lost;           /* 0, or the error that lost the lease */
	char errstr[LOCKD_ERRSTR_SIZE];  /* written before lost is stored */
	int lost_pipe[2];          /* [0] turns readable once lost */
	int wake_pipe[2];          /* stop writes [1]; the thread polls [0] */
	pthread_t thread;
	bool running;
};

static void
lockd__close_pair(int fds[2])
{
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	fds[0] = fds[1] = -1;
}

/*
 * Records the loss and tells every way the caller may be listening: the
 * callback first, so that whoever sees the result or the pipe knows it has
 * run.
 */
static void
lockd__keepalive_lose(lockd_keepalive *k, int err, const char *why)
{
	char byte = 'x';

	snprintf(k->errstr, sizeof(k->errstr), "%s", why);
	if (k->on_lost != NULL)
		k->on_lost(k->arg, err, k->errstr);
	atomic_store(&k->lost, err);
	if (write(k->lost_pipe[1], &byte, 1) < 0) {
		/* The pipe is empty; a failure here cannot happen usefully. */
	}
}

/*
 * Waits until deadline or until stop is asked for (then returns true).
 * With fd >= 0 it also returns, false, as soon as fd is readable.
 */
static bool
lockd__keepalive_wait(lockd_keepalive *k, int fd, int64_t deadline)
{
	struct pollfd p[2] = {
		{ .fd = k->wake_pipe[0], .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	int64_t left;
	int n;

	for (;;) {
		left = deadline - lockd_now_ms();
		if (left <= 0)
			return false;
		n = poll(p, fd >= 0 ? 2 : 1, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno != EINTR)
			return false;
		if (n > 0 && p[0].revents != 0)
			return true;
		if (n > 0 && fd >= 0 && p[1].revents != 0)
			return false;
	}
}

/*
 * One renewal attempt, over by deadline.  Returns its result, or
 * LOCKD_AGAIN when stop was asked for meanwhile.  A context that failed or
 * that still owes a reply is dropped and made anew on the next attempt.
 */
static int
lockd__keepalive_renew(lockd_keepalive *k, int64_t deadline)
{
	lockd_options options = k->options;
	lockd_reply reply;
	int64_t left = deadline - lockd_now_ms();
	int rc;

	if (left <= 0)
		return LOCKD_ERR_TIMEOUT;
	if (k->ctx != NULL && (k->ctx->err != 0 || lockd_pending(k->ctx) > 0)) {
		/* The same context: it knows which lockd a NOTLEADER named
		 * (cluster mode), and reconnects there first. */
		lockd_set_connect_timeout(k->ctx, options.connect_timeout_ms <=
		    0 || options.connect_timeout_ms > left ? left :
		    options.connect_timeout_ms);
		if ((rc = lockd_reconnect(k->ctx)) != LOCKD_OK)
			return rc;
	}
	if (k->ctx == NULL) {
		if (options.connect_timeout_ms <= 0 ||
		    options.connect_timeout_ms > left)
			options.connect_timeout_ms = left;
		if ((k->ctx = lockd_connect(&options)) == NULL)
			return LOCKD_ERR_OOM;
		if (k->ctx->err != 0)
			return k->ctx->err;
	}
	left = deadline - lockd_now_ms();
	if (left <= 0)
		return LOCKD_ERR_TIMEOUT;
	lockd_set_command_timeout(k->ctx, left);
	if ((rc = lockd_append_renew(k->ctx, &k->renewing,
	    k->renewing.lease_ms)) != LOCKD_OK ||
	    (rc = lockd_flush(k->ctx)) != LOCKD_OK)
		return rc;
	for (;;) {
		rc = lockd_poll_reply(k->ctx, &reply);
		if (rc != LOCKD_AGAIN)
			break;
		if (lockd__keepalive_wait(k, k->ctx->fd, deadline))
			return LOCKD_AGAIN;
		if (lockd_now_ms() >= deadline) {
			snprintf(k->ctx->errstr, sizeof(k->ctx->errstr),
			    "no reply to a renewal in time");
			return LOCKD_ERR_TIMEOUT;
		}
	}
	if (rc == LOCKD_OK) {
		k->renewing.lease_ms = reply.lease.lease_ms;
		k->renewing.deadline_ms = reply.lease.deadline_ms;
	}
	return rc;
}

/* A renewal the server answered with anything but these is refused. */
static bool
lockd__keepalive_retryable(int rc)
{
	return lockd_error_is_fatal(rc) || rc == LOCKD_ERR_UNAVAILABLE ||
	    rc == LOCKD_ERR_LIMIT || rc == LOCKD_ERR_SHUTDOWN ||
	    rc == LOCKD_ERR_OOM || rc == LOCKD_ERR_NOTLEADER;
}

static void
lockd__keepalive_publish(lockd_keepalive *k)
{
	pthread_mutex_lock(&k->mutex);
	k->published = k->renewing;
	pthread_mutex_unlock(&k->mutex);
}

static void *
lockd__keepalive_main(void *arg)
{
	lockd_keepalive *k = arg;
	lockd_lease *lease = &k->renewing;
	char why[LOCKD_ERRSTR_SIZE] = "";
	int64_t next, lost_at, backoff = 0;
	int rc, last = 0;

	next = lockd__renew_at(lease->deadline_ms, lease->lease_ms);
	for (;;) {
		lost_at = lockd__lost_at(lease->deadline_ms, lease->lease_ms);
		if (next > lost_at)
			next = lost_at;
		if (lockd__keepalive_wait(k, -1, next))
			break;
		if (lockd_now_ms() >= lost_at) {
			if (last == 0)
				lockd__keepalive_lose(k, LOCKD_ERR_TIMEOUT,
				    "the lease could end before a renewal");
			else
				lockd__keepalive_lose(k, last, why);
			break;
		}
		rc = lockd__keepalive_renew(k, lost_at);
		if (rc == LOCKD_AGAIN)
			break;
		if (rc == LOCKD_OK) {
			lockd__keepalive_publish(k);
			last = 0;
			backoff = 0;
			next = lockd__renew_at(lease->deadline_ms,
			    lease->lease_ms);
			continue;
		}
		snprintf(why, sizeof(why), "renewal failed: %.100s",
		    k->ctx != NULL ? k->ctx->errstr : "out of memory");
		if (!lockd__keepalive_retryable(rc)) {
			lockd__keepalive_lose(k, rc, why);
			break;
		}
		/* Retry while another attempt could still succeed in time. */
		last = rc;
		next = lockd_now_ms() + lockd__retry_after(lease->lease_ms,
		    &backoff);
		if (next >= lost_at) {
			lockd__keepalive_lose(k, rc, why);
			break;
		}
	}
	return NULL;
}

static int
lockd__pipe(int fds[2])
{
	return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}

static void
lockd__keepalive_free(lockd_keepalive *k)
{
	size_t i;

	lockd_free(k->ctx);
	lockd__close_pair(k->lost_pipe);
	lockd__close_pair(k->wake_pipe);
	pthread_mutex_destroy(&k->mutex);
	for (i = 0; i < LOCKD__KEEPALIVE_STRINGS; i++) {
		if (k->copies[i] != NULL)
			memset(k->copies[i], 0, strlen(k->copies[i]));
		free(k->copies[i]);
	}
	free(k);
}

/* Copies the options' strings: the caller's may go away. */
static bool
lockd__keepalive_copy(struct lockd_keepalive *k)
{
	lockd_options *o = &k->options;
	const char **field[LOCKD__KEEPALIVE_STRINGS] = {
		&o->host, &o->unix_path, &o->url, &o->tls_ca_file,
		&o->tls_cert_file, &o->tls_key_file, &o->tls_server_name,
		&o->token, &o->token_file
	};
	size_t i;

	for (i = 0; i < LOCKD__KEEPALIVE_STRINGS; i++) {
		if (*field[i] == NULL)
			continue;
		if ((k->copies[i] = strdup(*field[i])) == NULL)
			return false;
		*field[i] = k->copies[i];
	}
	return true;
}

lockd_keepalive *
lockd_keepalive_start(const lockd_options *options, const lockd_lease *lease,
    lockd_keepalive_fn *on_lost, void *arg)
{
	static const lockd_options defaults;
	lockd_keepalive *k;
	int64_t first, deadline, next, backoff = 0;
	int rc;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->lost_pipe[0] = k->lost_pipe[1] = -1;
	k->wake_pipe[0] = k->wake_pipe[1] = -1;
	pthread_mutex_init(&k->mutex, NULL);
	atomic_init(&k->lost, 0);
	k->options = options != NULL ? *options : defaults;
	if (!lockd__keepalive_copy(k)) {
		lockd__keepalive_free(k);
		return NULL;
	}
	k->on_lost = on_lost;
	k->arg = arg;

	if (lockd__pipe(k->lost_pipe) != 0 || lockd__pipe(k->wake_pipe) != 0) {
		snprintf(k->errstr, sizeof(k->errstr), "pipe: %s",
		    strerror(errno));
		atomic_store(&k->lost, LOCKD_ERR_IO);
		return k;
	}
	if (lease == NULL) {
		snprintf(k->errstr, sizeof(k->errstr), "no lease given");
		atomic_store(&k->lost, LOCKD_ERR_INVALID);
		return k;
	}
	k->renewing = *lease;

	/* The first renewal, here, gives the schedule a base we have seen.
	 * It is retried as a later one is: with a cluster's endpoints, the
	 * first may be a follower whose NOTLEADER names the leader. */
	first = k->options.command_timeout_ms > 0 ?
	    k->options.command_timeout_ms : lease->lease_ms > 0 ?
	    lease->lease_ms : LOCKD__KEEPALIVE_FIRST_DEFAULT_MS;
	deadline = lockd_now_ms() + first;
	while ((rc = lockd__keepalive_renew(k, deadline)) != LOCKD_OK &&
	    lockd__keepalive_retryable(rc)) {
		next = lockd_now_ms() + lockd__retry_after(lease->lease_ms,
		    &backoff);
		if (next >= deadline)
			break;
		lockd__keepalive_wait(k, -1, next);
	}
	if (rc != LOCKD_OK) {
		snprintf(k->errstr, sizeof(k->errstr), "%s",
		    k->ctx != NULL ? k->ctx->errstr : "out of memory");
		atomic_store(&k->lost, rc);
		return k;
	}
	k->published = k->renewing;
	if ((rc = pthread_create(&k->thread, NULL, lockd__keepalive_main, k))
	    != 0) {
		snprintf(k->errstr, sizeof(k->errstr), "pthread_create: %s",
		    strerror(rc));
		atomic_store(&k->lost, LOCKD_ERR_OOM);
		return k;
	}
	k->running = true;
	return k;
}

int
lockd_keepalive_lost(lockd_keepalive *k)
{
	return atomic_load(&k->lost);
}

const char *
lockd_keepalive_errstr(lockd_keepalive *k)
{
	return atomic_load(&k->lost) != 0 ? k->errstr : "";
}

int
lockd_keepalive_fd(const lockd_keepalive *k)
{
	return k->lost_pipe[0];
}

void
lockd_keepalive_lease(lockd_keepalive *k, lockd_lease *lease)
{
	pthread_mutex_lock(&k->mutex);
	*lease = k->published;
	pthread_mutex_unlock(&k->mutex);
}

int
lockd_keepalive_stop(lockd_keepalive *k)
{
	char byte = 's';
	int lost;

	if (k == NULL)
		return LOCKD_OK;
	if (k->running) {
		if (write(k->wake_pipe[1], &byte, 1) < 0) {
			/* Full already means a wake-up is pending. */
		}
		pthread_join(k->thread, NULL);
	}
	lost = atomic_load(&k->lost);
	lockd__keepalive_free(k);
	return lost;
}
