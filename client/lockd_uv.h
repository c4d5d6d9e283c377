/*
 * lockd_uv.h - liblockd's non-blocking client, on the caller's libuv loop.
 *
 * The same requests, replies and results as lockd.h's blocking context
 * (the code that formats requests and matches replies is shared), moved by
 * libuv instead of poll(): a TCP or Unix stream on the caller's loop (TLS
 * through OpenSSL memory BIOs on that stream), host names resolved with
 * uv_getaddrinfo (numeric addresses directly), the connect and command
 * timeouts on a uv timer.  Every call returns at once;
 * its result comes to a callback, on the loop's thread.
 *
 * libuv's rules apply.  A call that fails returns a negative LOCKD_ERR_*
 * and never calls its callback; one that succeeds calls it exactly once.
 * Memory is freed only in close callbacks: lockd_uv_close() ends a client
 * and its close callback is the last thing it does.  Everything here runs
 * on the loop's thread only.
 *
 * Pipelining is the normal case: issue any number of requests; they go out
 * on one connection (at most 512 unanswered at a time, as lockd.h's) and
 * their callbacks come in request order.  A connection error (IO, EOF,
 * PROTOCOL, TIMEOUT) kills the client: every request still due gets that
 * error in its callback, in order, and later calls fail with it; close the
 * client and connect a new one.  With several endpoints the client fails
 * over instead (see "Fail-over" below).  lockd_uv_close() with requests due gives
 * each LOCKD_ERR_CLOSED.
 *
 * Keep-alive: lockd_uv_keepalive_start() renews a lease every third of its
 * length on the loop's timers, over a connection of its own (one per
 * client, shared by all its keep-alives, made again whenever it breaks, so
 * that a restart of lockd does not lose leases taken with
 * LOCKD_ONCLOSE_KEEP), and reports a loss by the blocking helper's rules.
 *
 * Programs that include this header use libuv themselves: lockd.pc
 * requires libuv, so `pkg-config --cflags --libs lockd` brings it along.
 */
#ifndef LOCKD_UV_H
#define LOCKD_UV_H

#include <uv.h>

#include "lockd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lockd_uv_client lockd_uv_client;
typedef struct lockd_uv_keepalive lockd_uv_keepalive;

/* result: LOCKD_OK, or the error that killed the client. */
typedef void lockd_uv_connect_cb(lockd_uv_client *client, int result,
    void *arg);
/*
 * result is what the blocking call would return.  reply is never NULL:
 * reply->lease is filled for a granted ACQUIRE or TRY and a RENEW,
 * reply->status for a STATUS; lockd_uv_errstr(client) says why on an error.
 * The reply is valid during the callback only.
 */
typedef void lockd_uv_reply_cb(lockd_uv_client *client, int result,
    const lockd_reply *reply, void *arg);
/*
 * lockd_uv_status_holders's callback: info and holders (never NULL, valid
 * during the callback only) say what STATUS said, as lockd_status_holders
 * fills them; zero (holders->limit 1) when result is an error.
 */
typedef void lockd_uv_status_cb(lockd_uv_client *client, int result,
    const lockd_lock_info *info, const lockd_lock_holders *holders,
    void *arg);
typedef void lockd_uv_close_cb(lockd_uv_client *client, void *arg);
/* Called once when a kept-alive lease is lost; see below. */
typedef void lockd_uv_lost_cb(lockd_uv_keepalive *keepalive, int err,
    const char *errstr, void *arg);

/*
 * Starts connecting on loop with options (NULL: all defaults; the same
 * struct as lockd_connect's, copied) and returns the client at once;
 * cb (may be NULL) is called when the connection is made or has failed.
 * Requests may be issued before that: they are sent once connected, or
 * fail with the connection's error.  NULL: out of memory, or options
 * lockd_connect would refuse with LOCKD_ERR_INVALID (a bad port or URL,
 * a CA, certificate or key file that does not load); lockd_connect with
 * the same options says why.  A client whose connection failed must
 * still be closed.
 *
 * The options are lockd_connect's, URLs, TLS and tokens included, and
 * keep no pointer into the caller's strings.  With TLS, the handshake runs
 * on the loop through OpenSSL memory BIOs (the loop never waits for it)
 * and verifies the server's certificate and name as lockd_connect does;
 * with a token (or token_file, read at every connect, this client's
 * keep-alive connection's too), AUTH is sent before any request.  Until
 * AUTH is answered the client is connecting: connect_timeout_ms bounds
 * the TCP connect, the handshake and AUTH together, and requests wait.
 * A handshake that fails, or a refused AUTH, kills the client with
 * LOCKD_ERR_IO ("TLS with HOST:PORT: certificate: ...") or the server's
 * error (LOCKD_ERR_DENIED for a bad token), given to cb and to every
 * request due.  A server that wants a client certificate and gets none
 * ends the connection after the client's side of a TLS 1.3 handshake is
 * done: the first request gets LOCKD_ERR_IO or LOCKD_ERR_EOF.
 */
lockd_uv_client *lockd_uv_connect(uv_loop_t *loop,
    const lockd_options *options, lockd_uv_connect_cb *cb, void *arg);

/*
 * Requests: the blocking calls' arguments, a callback and its argument.
 * LOCKD_OK when issued; LOCKD_ERR_INVALID (bad argument), LOCKD_ERR_OOM,
 * or the client's fatal error, and then cb is not called.  Results as in
 * lockd.h: LOCKD_HELD for a TRY that found the lock taken, LOCKD_NOTHELD
 * for a RELEASE with a stale handle, LOCKD_ERR_WAIT_TIMEOUT for an ACQUIRE
 * whose wait ran out, LOCKD_ERR_CONFLICT for a RENEW of a lease that is not
 * ours.  The command timeout bounds a reply as in lockd.h (a waiting
 * ACQUIRE gets its wait on top; one waiting forever is not timed).
 */
int lockd_uv_acquire(lockd_uv_client *client, const char *name,
    int64_t lease_ms, int64_t wait_ms, int onclose, lockd_uv_reply_cb *cb,
    void *arg);
int lockd_uv_try(lockd_uv_client *client, const char *name, int64_t lease_ms,
    int onclose, lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_renew(lockd_uv_client *client, const lockd_lease *lease,
    int64_t lease_ms, lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_release(lockd_uv_client *client, const lockd_lease *lease,
    lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_status(lockd_uv_client *client, const char *name,
    lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_ping(lockd_uv_client *client, lockd_uv_reply_cb *cb, void *arg);
/*
 * STATUS with everything lockd_status_holders tells (the owner, the
 * lock-delay, a semaphore's or shared lock's holders, limit and mode),
 * to a callback of its own; in request order with the others.
 */
int lockd_uv_status_holders(lockd_uv_client *client, const char *name,
    lockd_uv_status_cb *cb, void *arg);
/*
 * ACQUIRE and TRY with every option (lockd_acquire_ex's; NULL: defaults,
 * an ACQUIRE waiting forever) and rid=<rid> (protocol v2; 1 to 64 bytes a
 * name may hold): a repeat of a rid the lock's live holder was granted
 * with is answered with that grant again.  rid NULL: none, or the
 * library's own when fail-over is on (see "Fail-over").
 */
int lockd_uv_acquire_ex(lockd_uv_client *client, const char *name,
    const lockd_acquire_options *options, const char *rid,
    lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_try_ex(lockd_uv_client *client, const char *name,
    const lockd_acquire_options *options, const char *rid,
    lockd_uv_reply_cb *cb, void *arg);
/*
 * lockd_uv_acquire_ex and lockd_uv_try_ex with the kind of lock too (kind
 * NULL: a plain lock), as lockd_acquire_kind takes it: a sized lockd_kind
 * (set its size; only the fields it covers are read) whose limit makes a
 * counting semaphore and whose mode LOCKD_MODE_SHARED a shared (read)
 * lock.  A kind the wire cannot carry is LOCKD_ERR_INVALID, unsent; a
 * limit or mode the name's holders and waiters disagree with is the
 * server's LOCKD_ERR_BADARG.  Sent again after a fail-over, the request
 * keeps its rid, limit and mode.
 */
int lockd_uv_acquire_kind(lockd_uv_client *client, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_uv_reply_cb *cb, void *arg);
int lockd_uv_try_kind(lockd_uv_client *client, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_uv_reply_cb *cb, void *arg);

/*
 * Fail-over (cluster mode), as lockd.h's blocking calls do it, on the
 * loop.  The options' host or url may name several endpoints,
 * comma-separated ("a:7420,b:7420", "lockds://a,lockds://b"; at most 16).
 * Connecting tries each in turn, each within the connect timeout.  With
 * fail-over on (the default with several endpoints, for
 * LOCKD_FAILOVER_DEFAULT_MS; off with one), a connection that breaks or
 * times out, and a reply of ERR NOTLEADER, do not end the client: it
 * connects again (TLS and AUTH as at first) and sends every request still
 * due once more, in order; their callbacks come once, with the answer of
 * the node that served them.  The next connection goes to the leader a
 * NOTLEADER named when that is one of the configured endpoints, spelled
 * the same (no name is resolved: a leader= of any other address is never
 * connected to), else to the next endpoint.  Each endpoint is tried once
 * at once, then every attempt waits, 50 ms doubling to 250 ms; a search
 * ends at the first reply a node serves, or after the fail-over time
 * (counted from its first failure) or LOCKD_FAILOVER_HOPS_MAX attempts:
 * then the client dies of the last error (LOCKD_ERR_NOTLEADER, IO, EOF
 * or TIMEOUT), errstr "no leader answered in N attempts over M ms; ...",
 * and its next request starts a new search (as a dead blocking context
 * reconnects at its next call; the connect callback is not called
 * again).  A refused AUTH ends it at once, and the client stays dead.
 *
 * Repeating is safe: RENEW, RELEASE, STATUS and PING may be repeated (a
 * RENEW of a lease lost meanwhile gets LOCKD_ERR_CONFLICT, a repeated
 * RELEASE LOCKD_NOTHELD), and with fail-over on every ACQUIRE and TRY
 * carries a rid= (the library's own, 128 random bits, unless
 * lockd_uv_acquire_ex was given one), so that a grant made but never
 * answered is found again instead of queued behind.  A repeated ACQUIRE
 * waits its wait anew; a lease's deadline_ms counts from the send that
 * was answered.  The keep-alive connection fails over the same way.
 *
 * lockd_uv_set_failover_timeout sets the fail-over time (0: off), while
 * no request is due (else LOCKD_ERR_INVALID): requests issued with it off
 * keep no copy to send again.
 */
int lockd_uv_set_failover_timeout(lockd_uv_client *client,
    int64_t timeout_ms);

/* Replies still due. */
int lockd_uv_pending(const lockd_uv_client *client);
/* 0, or the fatal error the client died of. */
int lockd_uv_err(const lockd_uv_client *client);
/* A sentence about the last error the client returned or reported. */
const char *lockd_uv_errstr(const lockd_uv_client *client);

/*
 * Closes the connection, calls every outstanding request's callback with
 * LOCKD_ERR_CLOSED (in order, before this returns), stops and frees every
 * keep-alive started on the client (without calling their lost callbacks:
 * their pointers are invalid from here on), and frees the client once
 * libuv has closed its handles; cb (may be NULL) is called then, from the
 * loop, and is the last use of the client.  Leases are not released:
 * those taken with LOCKD_ONCLOSE_KEEP run on until they end.
 */
void lockd_uv_close(lockd_uv_client *client, lockd_uv_close_cb *cb,
    void *arg);

/*
 * Keep-alive.  Renews lease (as a granted or renewed lease came to a
 * callback, or from lockd_lease_init: then the first renewal is at once)
 * every third of its length, keeping its length, over the client's
 * keep-alive connection: a second connection made from the same options,
 * so that renewals never queue behind the caller's own requests (an
 * ACQUIRE waiting forever) and so that a broken caller's connection does
 * not stop them.  That connection is made again whenever it breaks, and
 * fails over with the client's endpoints (see "Fail-over").
 *
 * Loss, as lockd_keepalive_start's: a renewal refused (CONFLICT, or any
 * answer but UNAVAILABLE, LIMIT, SHUTDOWN and NOTLEADER, which are retried
 * like a broken connection after 50 ms, the pause doubling to at most
 * 250 ms or a fifteenth of the lease), or no renewal
 * succeeded by a tenth of the lease before the lease could end.  Then
 * lost_cb is called once with the error and a sentence, and renewing
 * stops.
 *
 * NULL: out of memory, a bad lease, or a client that is closing.
 * lockd_uv_keepalive_stop() stops renewing and frees it (call it after a
 * loss too, also from lost_cb); it does not release the lease.
 */
lockd_uv_keepalive *lockd_uv_keepalive_start(lockd_uv_client *client,
    const lockd_lease *lease, lockd_uv_lost_cb *lost_cb, void *arg);
/* The lease as last renewed (its deadline_ms moves on). */
void lockd_uv_keepalive_lease(const lockd_uv_keepalive *keepalive,
    lockd_lease *lease);
/* 0, or the error that lost the lease. */
int lockd_uv_keepalive_lost(const lockd_uv_keepalive *keepalive);
void lockd_uv_keepalive_stop(lockd_uv_keepalive *keepalive);

#ifdef __cplusplus
}
#endif

#endif /* LOCKD_UV_H */
