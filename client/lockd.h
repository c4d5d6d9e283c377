/*
 * lockd.h - liblockd, the C client library of lockd.
 *
 * Shaped like hiredis: a context made from an options struct carries the
 * connection, an error code and a sentence for humans.  A blocking call is
 * an append followed by a read of its reply, so pipelining comes free: append
 * several requests, then read their replies in order.  Requests are formatted
 * and replies parsed by lockd's own protocol module, the code the daemon
 * runs.
 *
 * Results.  Every call returns an int: LOCKD_OK (0) or another non-negative
 * LOCKD_* result on success, a negative LOCKD_ERR_* code on failure.  After
 * every call c->err holds what it returned when that was an error (0 after a
 * success) and c->errstr a sentence saying why.  The errors IO, EOF,
 * PROTOCOL and TIMEOUT are fatal: the connection is closed, the replies
 * still due are lost, and every later call fails with the same error until
 * lockd_reconnect() (with fail-over on, the next blocking call reconnects
 * by itself; see "Fail-over").  Server errors (BADREQ .. SHUTDOWN) and caller errors
 * (INVALID, OOM) leave the context usable.
 *
 * Threads.  A context belongs to one thread at a time, as in hiredis: never
 * call into the same context from two threads at once.  Distinct contexts are
 * independent; the library has no global state and installs no signal
 * handler (it writes with MSG_NOSIGNAL, so a closed peer never raises
 * SIGPIPE).  The keep-alive helper runs its own thread on its own
 * connection; see lockd_keepalive_start().
 *
 * Every public symbol starts with "lockd_"; internal ones with "lockd__".
 */
#ifndef LOCKD_H
#define LOCKD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKD_DEFAULT_HOST "127.0.0.1"
#define LOCKD_DEFAULT_PORT 7420
#define LOCKD_NAME_MAX 255          /* bytes in a lock name */
#define LOCKD_HANDLE_SIZE 40        /* a handle string with its NUL */
#define LOCKD_ERRSTR_SIZE 128
#define LOCKD_OWNER_MAX 64          /* bytes in an owner label */

/* For lockd_acquire's wait_ms: wait until granted, however long. */
#define LOCKD_WAIT_FOREVER (-1)

/* Successful results. */
#define LOCKD_OK 0
#define LOCKD_HELD 1       /* TRY: the lock is taken (or has waiters) */
#define LOCKD_NOTHELD 2    /* RELEASE: the handle was stale; a no-op */
#define LOCKD_AGAIN 3      /* lockd_poll_reply: no complete reply yet */
#define LOCKD_STALE 4      /* CHECK: the fence is not a live holder's */

/* Errors of the connection; fatal: the context is dead. */
#define LOCKD_ERR_IO (-1)          /* a socket call failed; see errstr */
#define LOCKD_ERR_EOF (-2)         /* the server closed the connection */
#define LOCKD_ERR_PROTOCOL (-3)    /* a reply that cannot be parsed or that
				      does not answer its request */
#define LOCKD_ERR_TIMEOUT (-4)     /* connect or command timeout (client) */
/* Errors of the caller; nothing was sent and the context is usable. */
#define LOCKD_ERR_OOM (-5)         /* out of memory */
#define LOCKD_ERR_INVALID (-6)     /* a bad argument (name, handle, duration)
				      or a call out of turn */
/* lockd_uv.h: the client was closed before the reply came; fatal. */
#define LOCKD_ERR_CLOSED (-7)
/* Errors answered by the server ("ERR <CODE> ..."); the context is usable. */
#define LOCKD_ERR_BADREQ (-10)
#define LOCKD_ERR_BADARG (-11)
#define LOCKD_ERR_TOOLONG (-12)
#define LOCKD_ERR_WAIT_TIMEOUT (-13)  /* ERR TIMEOUT: ACQUIRE's wait ran out */
#define LOCKD_ERR_CONFLICT (-14)      /* RENEW with a handle not the holder's */
#define LOCKD_ERR_LIMIT (-15)
#define LOCKD_ERR_UNAVAILABLE (-16)   /* the store failed; nothing changed */
#define LOCKD_ERR_OVERFLOW (-17)
#define LOCKD_ERR_SHUTDOWN (-18)      /* the server is stopping */
#define LOCKD_ERR_DENIED (-19)        /* --auth: no permission, or AUTH
					 refused (a bad token) */
#define LOCKD_ERR_NOTLEADER (-20)     /* cluster mode: this node does not
					 serve locks now (see fail-over) */

/* ACQUIRE's and TRY's onclose option. */
#define LOCKD_ONCLOSE_KEEP 0      /* the lease outlives the connection */
#define LOCKD_ONCLOSE_RELEASE 1   /* closing the connection releases it */

/*
 * Where and how to connect.  Zero it, then set what you need.
 *
 * url, when set, stands for host, port, unix_path and tls:
 * "lockd://HOST[:PORT]" (plain TCP), "lockds://HOST[:PORT]" (TLS) or
 * "lockd:///PATH" (a Unix socket); an IPv6 HOST goes in brackets, the
 * port defaults to LOCKD_DEFAULT_PORT.  A URL that does not parse makes
 * lockd_connect's context fail with LOCKD_ERR_INVALID.
 *
 * TLS (TCP only) is on with a lockds:// url, tls, or any tls_* file.  The
 * server's certificate must chain to tls_ca_file (NULL: the system's
 * CAs) and name tls_server_name (NULL: the host, a DNS name or an IP
 * address).  tls_cert_file and tls_key_file (PEM) present a client
 * certificate, for a lockd with --tls-client-ca.
 *
 * token, or else the first line of token_file (read at every connect, so
 * that a rotated file is picked up), is sent as AUTH right after every
 * connect.  A refused token leaves the connection open but nobody's:
 * c->err is LOCKD_ERR_DENIED, and each command is refused the same way.
 * Keep tokens out of argv, where ps shows them.
 *
 * A cluster: url and host may each name several lockd nodes, separated by
 * commas: "lockd://a:7420,lockd://b:7420" (every item a URL), or
 * "a:7420,b,[::1]:7421" (an item without a port takes port).  At most 16.
 * lockd_connect tries them in order until one accepts; see "Fail-over"
 * below for what the blocking calls then do.
 */
typedef struct lockd_options {
	const char *host;            /* NULL: LOCKD_DEFAULT_HOST */
	int port;                    /* 0: LOCKD_DEFAULT_PORT */
	const char *unix_path;       /* set: a Unix socket instead of TCP */
	int64_t connect_timeout_ms;  /* 0: no timeout of our own */
	int64_t command_timeout_ms;  /* 0: wait for replies forever */
	const char *url;             /* lockd://, lockds:// or lockd:/// */
	int tls;                     /* nonzero: TLS */
	const char *tls_ca_file;     /* PEM CAs to trust; NULL: the system's */
	const char *tls_cert_file;   /* PEM client certificate (chain) */
	const char *tls_key_file;    /* PEM key of tls_cert_file */
	const char *tls_server_name; /* name to verify; NULL: the host */
	const char *token;           /* AUTH with this at every connect */
	const char *token_file;      /* or with this file's first line */
} lockd_options;

struct lockd__state;

typedef struct lockd_context {
	int err;                          /* 0 or the last call's error */
	char errstr[LOCKD_ERRSTR_SIZE];   /* why, for humans */
	int fd;                           /* the socket; -1 when dead */
	struct lockd__state *state;       /* private */
} lockd_context;

/*
 * A granted lease.  deadline_ms is a time on lockd_now_ms()'s clock before
 * which the lease has certainly not ended: the moment the request that
 * granted or last renewed it was sent, plus the lease granted.  For an
 * ACQUIRE that waited, that moment is when the ACQUIRE was sent, so the
 * bound is conservative (renew to tighten it).
 */
typedef struct lockd_lease {
	char name[LOCKD_NAME_MAX + 1];
	uint64_t fence;
	char handle[LOCKD_HANDLE_SIZE];  /* "<fence>-<16 hex digits>" */
	int64_t lease_ms;                /* as granted or last renewed */
	int64_t deadline_ms;
} lockd_lease;

/* A STATUS reply: diagnostics only, never a basis for an acquire. */
typedef struct lockd_lock_status {
	int held;            /* 0 or 1 */
	uint64_t fence;      /* the holder's; 0 when free */
	int64_t ttl_ms;      /* left of the lease; 0 when free */
	uint64_t queue;      /* waiters */
} lockd_lock_status;

typedef enum lockd_command {
	LOCKD_CMD_ACQUIRE,
	LOCKD_CMD_TRY,
	LOCKD_CMD_RENEW,
	LOCKD_CMD_RELEASE,
	LOCKD_CMD_STATUS,
	LOCKD_CMD_PING,
	LOCKD_CMD_FORCE,
	LOCKD_CMD_CHECK,
	LOCKD_CMD_WATCH,
	LOCKD_CMD_LIST,
	LOCKD_CMD_STATS
} lockd_command;

/*
 * What STATUS, LIST, WATCH and CHECK tell of one lock (protocol v2):
 * lockd_lock_status and more.  Public, never proof of holding.
 */
typedef struct lockd_lock_info {
	char name[LOCKD_NAME_MAX + 1];
	int held;                        /* 0 or 1 */
	uint64_t fence;                  /* the newest holder's; 0 when free */
	int64_t ttl_ms;                  /* left of that lease; 0 when free */
	uint64_t queue;                  /* waiters */
	char owner[LOCKD_OWNER_MAX + 1]; /* its owner= label; "" for none */
	int64_t delay_ms;                /* lock-delay left; 0 for none */
	char cause[16];                  /* WATCH: granted, released, expired,
	                                  * closed, forced or none; else "" */
} lockd_lock_info;

/* ACQUIRE's and TRY's options, protocol v2's included. */
typedef struct lockd_acquire_options {
	int64_t lease_ms;      /* 0: the server's default */
	int64_t wait_ms;       /* ACQUIRE: LOCKD_WAIT_FOREVER, 0 or ms */
	int onclose;           /* LOCKD_ONCLOSE_KEEP or _RELEASE */
	const char *owner;     /* owner= label, NULL or "": none */
	int64_t delay_ms;      /* lock-delay after a bad end; 0: none */
} lockd_acquire_options;

/*
 * Protocol v2's kinds of lock, for lockd_acquire_kind and lockd_try_kind.
 * Set size to sizeof(lockd_kind): the library reads only the fields that
 * size covers, so fields added later leave older callers' meaning alone.
 * limit 0 or 1 is a plain lock; 2 to 65535 a counting semaphore of that
 * many holders.  mode LOCKD_MODE_SHARED is a shared (read) lock: shared
 * holders coexist, an exclusive one excludes everyone; it takes no limit
 * above 1.
 */
#define LOCKD_MODE_EXCLUSIVE 0
#define LOCKD_MODE_SHARED 1
#define LOCKD_LIMIT_MAX 65535
typedef struct lockd_kind {
	size_t size;           /* sizeof(lockd_kind) */
	unsigned int limit;    /* 0 or 1: one holder; up to LOCKD_LIMIT_MAX */
	int mode;              /* LOCKD_MODE_EXCLUSIVE or LOCKD_MODE_SHARED */
} lockd_kind;

/*
 * What STATUS and LIST tell of a lock's holders (protocol v2), for
 * lockd_status_holders and lockd_list_holders.  Set size to
 * sizeof(lockd_lock_holders) before a call: the library writes only the
 * fields that size covers.  One that the library fills itself (the one
 * lockd_list_holders_fn gets) has the library's size: read a field only
 * when size covers it.
 *
 * holders counts the live holders: 0 when free, 1 for a held plain lock,
 * up to limit for a semaphore, any number for a shared lock.  limit is 1
 * unless the name is a semaphore (2 to LOCKD_LIMIT_MAX).  mode is
 * LOCKD_MODE_SHARED while the lock is held shared, LOCKD_MODE_EXCLUSIVE
 * otherwise (free, or held exclusively).  lockd_lock_info's fence and
 * ttl_ms are the newest holder's.
 */
typedef struct lockd_lock_holders {
	size_t size;           /* sizeof(lockd_lock_holders) */
	uint64_t holders;
	unsigned int limit;
	int mode;
} lockd_lock_holders;

/* One reply read with lockd_get_reply() or lockd_poll_reply().  Its size
 * and layout are part of the ABI: a STATUS's holders, limit and mode come
 * from lockd_get_reply_holders() instead. */
typedef struct lockd_reply {
	lockd_command command;      /* the request it answers */
	int result;                 /* what the blocking call returns */
	lockd_lease lease;          /* ACQUIRE, TRY, RENEW on success */
	lockd_lock_status status;   /* STATUS */
} lockd_reply;

/*
 * Connecting.  lockd_connect() returns NULL only when out of memory; check
 * c->err otherwise, as with hiredis (a NULL options pointer means all
 * defaults).  lockd_reconnect() closes the connection, drops any replies
 * still due and buffered requests, and connects again with the same options;
 * leases survive it unless they were taken with LOCKD_ONCLOSE_RELEASE.
 * lockd_free() closes and frees; NULL is fine.  With several endpoints,
 * lockd_reconnect() goes to the leader the last ERR NOTLEADER named, else
 * to the endpoint after the one it was connected to, and on around the
 * list.
 */
lockd_context *lockd_connect(const lockd_options *options);
int lockd_reconnect(lockd_context *c);
void lockd_free(lockd_context *c);
/* Changes the command timeout for later calls (0: none). */
int lockd_set_command_timeout(lockd_context *c, int64_t timeout_ms);
/* Changes the connect timeout (per endpoint) of later connects (0: none). */
int lockd_set_connect_timeout(lockd_context *c, int64_t timeout_ms);

/*
 * Fail-over.  With several endpoints, a blocking call (lockd_acquire ..
 * lockd_list, not the pipelined ones) that meets a node which does not
 * lead (ERR NOTLEADER) or a connection that broke reconnects and sends the
 * request again, for at most the fail-over time: LOCKD_FAILOVER_DEFAULT_MS
 * with several endpoints, 0 (off) with one; lockd_set_failover_timeout
 * changes it (0: off).  A NOTLEADER reply's leader=<host:port> is followed
 * when it is one of the configured endpoints, spelled the same (no name is
 * resolved; any other leader is never connected to); without a usable
 * hint the next endpoint is tried.  Each endpoint is tried once at once;
 * after that every attempt waits, from 50 ms doubling to 250 ms, and at
 * most LOCKD_FAILOVER_HOPS_MAX attempts are made.  Then the call returns
 * the last error (LOCKD_ERR_NOTLEADER, or IO/EOF/TIMEOUT) with a sentence
 * saying so.  A new connection sends AUTH again when a token is set.
 *
 * A node that stops without closing anything (SIGSTOP, a frozen VM) is
 * noticed too: a blocking call that has heard nothing from its node for
 * 3 s checks on it over a connection of its own (PING, with TLS and AUTH
 * as configured); with no reply in 2 s the call fails over as if its
 * connection had broken.  So an ACQUIRE or WATCH that waits without a
 * limit or a command timeout does not wait for ever at a paused leader.
 *
 * Which requests are sent again: every one after ERR NOTLEADER (the node
 * did nothing with it); after a broken connection RENEW, RELEASE, STATUS,
 * PING, FORCE, CHECK, WATCH and LIST, which are safe to repeat (a RENEW of
 * a lease that was lost meanwhile gets LOCKD_ERR_CONFLICT; a repeated
 * RELEASE or FORCE answers LOCKD_NOTHELD when the first one had done it;
 * a repeated WATCH without a fence waits for the next change after the
 * repeat), and
 * ACQUIRE and TRY, which carry a rid= (protocol v2): the library makes a
 * fresh one for each call when fail-over is on and the caller gave none
 * (lockd_acquire_rid), so that the repeat finds its own grant instead of
 * queueing behind it.  A repeated ACQUIRE waits its wait_ms anew.  A dead
 * context (a fatal error earlier) reconnects at the next blocking call.
 * The fail-over time counts from the first failure (or from the end of an
 * attempt that ran longer, such as an ACQUIRE that waited).  The lease's
 * deadline_ms counts from the attempt that was answered.
 */
#define LOCKD_FAILOVER_DEFAULT_MS 10000
#define LOCKD_FAILOVER_HOPS_MAX 64
int lockd_set_failover_timeout(lockd_context *c, int64_t timeout_ms);

/*
 * Blocking calls.  Each sends one request and reads its reply; they refuse
 * (LOCKD_ERR_INVALID) while pipelined replies are still due.
 *
 * The command timeout bounds how long a call waits for a reply beyond what
 * the request may legitimately take: an ACQUIRE may wait for wait_ms first,
 * so its reply is given wait_ms plus the command timeout, and one that waits
 * forever has no timeout at all.  A timeout kills the context, since the
 * reply may still come and the stream would be out of step.
 *
 * lease_ms 0 means the server's default lease (a longer one than the
 * server's maximum is capped: look at lease->lease_ms).  wait_ms is
 * LOCKD_WAIT_FOREVER, 0 (fail at once with LOCKD_ERR_WAIT_TIMEOUT when the
 * lock is not free) or a positive number of milliseconds.
 */
int lockd_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose, lockd_lease *lease);
/* Never queues: LOCKD_OK with *lease filled, or LOCKD_HELD. */
int lockd_try(lockd_context *c, const char *name, int64_t lease_ms,
    int onclose, lockd_lease *lease);
/*
 * Extends the lease to now + lease_ms (0: the server's default; pass
 * lease->lease_ms to keep its length) and updates *lease.
 * LOCKD_ERR_CONFLICT: the lease is not ours any more.
 */
int lockd_renew(lockd_context *c, lockd_lease *lease, int64_t lease_ms);
/* LOCKD_OK when released, LOCKD_NOTHELD when the handle was stale. */
int lockd_release(lockd_context *c, const lockd_lease *lease);
int lockd_status(lockd_context *c, const char *name,
    lockd_lock_status *status);
int lockd_ping(lockd_context *c);
/*
 * STATS: lockd's counters, the words of its reply ("key=value ..."),
 * NUL-terminated into out (size bytes; LOCKD_STATS_MAX holds any).  In
 * cluster mode they end with role=leader|follower, leader=<host:port>
 * when the node knows one, and etcd=ok|unreachable|refused.  STATS is
 * answered by every node of a cluster; with --auth it needs admin.
 */
#define LOCKD_STATS_MAX 1024
int lockd_stats(lockd_context *c, char *out, size_t size);

/*
 * Protocol v2.  lockd_acquire_ex and lockd_try_ex take every option
 * (options NULL: all defaults, waiting forever).  lockd_status_info is
 * lockd_status with the owner label and the lock-delay left.
 *
 * lockd_force frees the holder whose fence is exactly `fence` (LOCKD_OK),
 * or changes nothing (LOCKD_NOTHELD): an operator's release of a stuck
 * holder that can never free a newer one.
 *
 * lockd_check asks whether `fence` is a live holder's: LOCKD_OK (info,
 * when given, has its fence and ttl) or LOCKD_STALE (info->fence is the
 * newest holder's, 0 when free).
 *
 * lockd_watch waits until the newest holder's fence differs from `fence`
 * (fence < 0: until the next change of holders), at most wait_ms
 * (LOCKD_WAIT_FOREVER: no limit): LOCKD_OK with *info, or
 * LOCKD_ERR_WAIT_TIMEOUT.  It blocks the context: use one of its own.
 *
 * lockd_list calls fn for each lock that exists, in bytewise name order,
 * whose name starts with prefix (NULL or "": any) and comes after `after`
 * (NULL or "": from the start), at most limit (0: the server's default,
 * 100; at most 1000).  next (LOCKD_NAME_MAX + 1 bytes, may be NULL) gets
 * the name to pass as `after` for the rest, "" when nothing is left.
 * Returns LOCKD_OK or an error; fn returning non-zero stops nothing on
 * the wire but no more calls are made.
 */
int lockd_acquire_ex(lockd_context *c, const char *name,
    const lockd_acquire_options *options, lockd_lease *lease);
int lockd_try_ex(lockd_context *c, const char *name,
    const lockd_acquire_options *options, lockd_lease *lease);
/*
 * lockd_acquire_ex and lockd_try_ex with rid=<rid> (1 to 64 bytes a name
 * may hold): if the lock's live holder was granted with this rid, the
 * reply is that grant again and nothing changes.  Use a fresh rid for each
 * acquisition and repeat it only to retry that one (after a crash of your
 * own, say).  The library makes one of its own for every ACQUIRE and TRY
 * when fail-over is on (see "Fail-over").
 */
int lockd_acquire_rid(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const char *rid, lockd_lease *lease);
int lockd_try_rid(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const char *rid, lockd_lease *lease);
/*
 * lockd_acquire_rid and lockd_try_rid with the kind of lock too (kind
 * NULL: a plain lock; see lockd_kind).  rid may be NULL: the library then
 * makes one of its own when fail-over is on, as lockd_acquire_ex does, and
 * a repeat after fail-over carries the same rid, limit and mode.  Every
 * request on a name must agree on its limit while it has holders or
 * waiters (LOCKD_ERR_BADARG otherwise); releasing, renewing and checking a
 * semaphore's or shared lock's grant are the usual calls with its lease.
 */
int lockd_acquire_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_lease *lease);
int lockd_try_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid, lockd_lease *lease);
int lockd_status_info(lockd_context *c, const char *name,
    lockd_lock_info *info);
int lockd_force(lockd_context *c, const char *name, uint64_t fence);
int lockd_check(lockd_context *c, const char *name, uint64_t fence,
    lockd_lock_info *info);
int lockd_watch(lockd_context *c, const char *name, int64_t fence,
    int64_t wait_ms, lockd_lock_info *info);
typedef int lockd_list_fn(void *arg, const lockd_lock_info *info);
int lockd_list(lockd_context *c, const char *prefix, const char *after,
    int limit, lockd_list_fn *fn, void *arg, char *next);
/*
 * lockd_status_info, lockd_watch and lockd_list with the holders too (see
 * lockd_lock_holders): a semaphore's holders and limit, a shared lock's
 * readers.  holders may be NULL; its size must be set, else
 * LOCKD_ERR_INVALID and nothing is sent.
 */
int lockd_status_holders(lockd_context *c, const char *name,
    lockd_lock_info *info, lockd_lock_holders *holders);
int lockd_watch_holders(lockd_context *c, const char *name, int64_t fence,
    int64_t wait_ms, lockd_lock_info *info, lockd_lock_holders *holders);
typedef int lockd_list_holders_fn(void *arg, const lockd_lock_info *info,
    const lockd_lock_holders *holders);
int lockd_list_holders(lockd_context *c, const char *prefix,
    const char *after, int limit, lockd_list_holders_fn *fn, void *arg,
    char *next);

/*
 * Pipelining.  lockd_append_*() check their arguments and buffer a request
 * without sending it; lockd_get_reply() sends what is buffered and reads the
 * next reply due, in request order, with the command timeout extended for a
 * waiting ACQUIRE as above.  A reply that does not answer its request (by
 * kind or lock name) is a protocol error.  lockd_pending() counts the replies
 * still due.
 *
 * Any number of requests may be appended.  They go out at most 512 ahead of
 * the replies received (lockd cuts off a client that leaves too many replies
 * unread), so sending a long pipeline also reads replies into the context,
 * and waits for them when the window is full: behind an ACQUIRE that waits
 * forever, that may be until the grant.
 */
int lockd_append_acquire(lockd_context *c, const char *name, int64_t lease_ms,
    int64_t wait_ms, int onclose);
int lockd_append_try(lockd_context *c, const char *name, int64_t lease_ms,
    int onclose);
int lockd_append_renew(lockd_context *c, const lockd_lease *lease,
    int64_t lease_ms);
int lockd_append_release(lockd_context *c, const lockd_lease *lease);
int lockd_append_status(lockd_context *c, const char *name);
int lockd_append_ping(lockd_context *c);
int lockd_get_reply(lockd_context *c, lockd_reply *reply);
int lockd_pending(const lockd_context *c);

/*
 * Pipelining every kind of lock (protocol v2).  lockd_append_acquire_kind
 * and lockd_append_try_kind buffer what lockd_acquire_kind and
 * lockd_try_kind send, checked the same way (a bad name, option, kind or
 * rid: LOCKD_ERR_INVALID and nothing buffered); the grant comes back in
 * reply.lease.  rid NULL sends none: a pipeline is not repeated after a
 * broken connection, so the library makes none of its own.
 *
 * lockd_get_reply_holders and lockd_poll_reply_holders are lockd_get_reply
 * and lockd_poll_reply that also write a STATUS reply's holders, limit and
 * mode (see lockd_lock_holders) to *holders, beside the reply they belong
 * to.  Why not a lockd_append_status that takes the struct to fill: the
 * library would keep the caller's pointer until the reply is read, and a
 * struct on the stack of a function that has returned, or one reused for
 * two STATUS requests, would be written after it is gone, or twice.
 * Here nothing the caller passed at append time is kept, and the holders
 * come back in the same call as the reply they describe.  holders may be
 * NULL; else its size must be set, checked before any reply is read
 * (LOCKD_ERR_INVALID, and the reply stays due).  Every field its size
 * covers is written on every call: a successful STATUS gives the lock's;
 * anything else (another command's reply, an error, LOCKD_AGAIN) zeroes
 * them, and limit 0, which no STATUS gives, says so.
 */
int lockd_append_acquire_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid);
int lockd_append_try_kind(lockd_context *c, const char *name,
    const lockd_acquire_options *options, const lockd_kind *kind,
    const char *rid);
int lockd_get_reply_holders(lockd_context *c, lockd_reply *reply,
    lockd_lock_holders *holders);

/*
 * For an event loop: lockd_flush() sends the buffered requests (blocking at
 * most the command timeout); lockd_poll_reply() then reads what the socket
 * holds without blocking and returns LOCKD_AGAIN while no whole reply has
 * come, or the reply's result as lockd_get_reply() does.  Call it until it
 * returns LOCKD_AGAIN before waiting for c->fd to turn readable: replies
 * that came while lockd_flush() wrote (it reads them, so that the server
 * never holds too many unread) wait in the context, not on the socket.  The
 * caller keeps the time.
 */
int lockd_flush(lockd_context *c);
int lockd_poll_reply(lockd_context *c, lockd_reply *reply);
int lockd_poll_reply_holders(lockd_context *c, lockd_reply *reply,
    lockd_lock_holders *holders);

/*
 * Fills *lease from a name and a handle string, e.g. ones a script kept, so
 * that it can be renewed or released.  lease_ms and deadline_ms are 0.
 */
int lockd_lease_init(lockd_lease *lease, const char *name, const char *handle);

/*
 * The keep-alive helper renews a lease in the background, every third of
 * the lease, from its own thread on its own connection (made from options,
 * so the caller's context is never touched from another thread).
 *
 * lockd_keepalive_start() connects and renews once before it returns, so
 * that its schedule starts from a renewal it has seen (retried as a later
 * renewal is, within the command timeout: with a cluster's endpoints it
 * follows a NOTLEADER to the leader).  It returns NULL only when out of
 * memory; check lockd_keepalive_lost(): when that first step failed it is
 * the error and no thread runs.
 *
 * The lease is reported lost as soon as a renewal is refused (CONFLICT or
 * any other answer but UNAVAILABLE and LIMIT, which are retried) or the
 * lease could end before another renewal can succeed: attempts that fail
 * for transport reasons are retried (reconnecting as needed) until a tenth of
 * the lease before its deadline_ms, and then it is lost.  Then on_lost (when
 * not NULL) is called once, from the keep-alive thread, with arg, the error
 * and a sentence; once it has returned, lockd_keepalive_lost() returns the
 * error and lockd_keepalive_fd() is readable.  on_lost must be quick and may
 * not call lockd_keepalive_stop() on its own helper; it is the place to set
 * a flag or to write to a pipe, not to use the caller's context.
 *
 * lockd_keepalive_lost(), _errstr(), _fd() and _lease() may be called from
 * any thread.  lockd_keepalive_stop() stops renewing, joins the thread,
 * frees the helper and returns lockd_keepalive_lost() as it was then; it does
 * not release the lease: release it on the caller's own context.
 */
typedef struct lockd_keepalive lockd_keepalive;
typedef void lockd_keepalive_fn(void *arg, int err, const char *errstr);

lockd_keepalive *lockd_keepalive_start(const lockd_options *options,
    const lockd_lease *lease, lockd_keepalive_fn *on_lost, void *arg);
int lockd_keepalive_lost(lockd_keepalive *k);
const char *lockd_keepalive_errstr(lockd_keepalive *k);
int lockd_keepalive_fd(const lockd_keepalive *k);
/* Copies the lease as last renewed (its deadline_ms moves on). */
void lockd_keepalive_lease(lockd_keepalive *k, lockd_lease *lease);
int lockd_keepalive_stop(lockd_keepalive *k);

/* Utilities. */
/* "OK", "HELD", "NOTHELD", "AGAIN", "IO", ..., "SHUTDOWN"; "?" otherwise. */
const char *lockd_strerror(int code);
/* True for IO, EOF, PROTOCOL, TIMEOUT (and lockd_uv's CLOSED): the context
 * is dead. */
int lockd_error_is_fatal(int code);
/*
 * Milliseconds on the clock the library keeps deadlines on: one that no
 * wall-clock step moves and that runs on through a suspend (CLOCK_BOOTTIME
 * on Linux), so it never runs slower than the server's lease clock.
 */
int64_t lockd_now_ms(void);
/* Parses a protocol duration ("1500", "1500ms", "30s", "5m", "1h"). */
int lockd_parse_duration(const char *s, int64_t *ms);

#ifdef __cplusplus
}
#endif

#endif /* LOCKD_H */
