/*
 * request.h - what liblockd's two transports share (internal, never
 * installed): formatting a request into a line together with what its reply
 * will need, turning the reply that comes back into a lockd_reply and a
 * result, and the queue of requests whose replies are still due.
 *
 * The blocking context (lockd.c) and the libuv client (uv.c) differ only in
 * how bytes move; everything here is pure: no socket, no clock (times are
 * passed in), no libuv.  Every name is lockd__*, kept out of liblockd's
 * exported symbols.  Functions that can fail write a sentence for humans
 * into errstr (LOCKD_ERRSTR_SIZE bytes) and return a negative LOCKD_ERR_*.
 */
#ifndef LOCKD_CLIENT_REQUEST_H
#define LOCKD_CLIENT_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/lockd.h"

#define LOCKD__REQUEST_MAX 640   /* the longest request: RENEW, 255-byte name */
/*
 * Requests sent whose replies have not arrived: at most this many, so that
 * the replies lockd holds for us stay far below its --max-output (it cuts
 * off a client that leaves more unread); 512 replies are ~170 kB at most.
 */
#define LOCKD__MAX_IN_FLIGHT 512

/* A request sent or buffered whose reply is still due. */
struct lockd__pending {
	lockd_command command;
	int64_t wait_ms;      /* ACQUIRE: LOCKD_WAIT_FOREVER or ms; else 0 */
	int64_t sent_ms;      /* lockd_now_ms() before the send; -1: not yet */
	uint64_t end;         /* stream offset just past the request */
	size_t name_len;
	char name[LOCKD_NAME_MAX + 1];
	char handle[LOCKD_HANDLE_SIZE];   /* RENEW: carried into the reply */
	uint64_t fence;                   /* RENEW: the handle's */
};

/* One formatted request line and its pending entry (end and sent_ms are
 * the transport's to fill). */
struct lockd__request {
	char line[LOCKD__REQUEST_MAX];
	size_t len;
	bool has_rid;        /* ACQUIRE or TRY with rid=: safe to repeat */
	struct lockd__pending pending;
};

/* rid= (protocol v2): 1 to this many bytes; the library's own are 32 hex
 * digits (128 random bits). */
#define LOCKD__RID_MAX 64

/*
 * Check the arguments and format the request into *r.  LOCKD_OK, or
 * LOCKD_ERR_INVALID with errstr saying why; *r is then unusable.
 */
int lockd__request_acquire(struct lockd__request *r, const char *name,
    int64_t lease_ms, int64_t wait_ms, int onclose, char *errstr);
int lockd__request_try(struct lockd__request *r, const char *name,
    int64_t lease_ms, int onclose, char *errstr);
int lockd__request_renew(struct lockd__request *r, const lockd_lease *lease,
    int64_t lease_ms, char *errstr);
int lockd__request_release(struct lockd__request *r,
    const lockd_lease *lease, char *errstr);
int lockd__request_status(struct lockd__request *r, const char *name,
    char *errstr);
int lockd__request_ping(struct lockd__request *r, char *errstr);
int lockd__request_stats(struct lockd__request *r, char *errstr);
/* Protocol v2: ACQUIRE or TRY with every option (o NULL: defaults). */
int lockd__request_acquire_ex(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, char *errstr);
/* The same with rid=<rid> (NULL: none; else 1 to LOCKD__RID_MAX bytes a
 * name may hold, or LOCKD_ERR_INVALID). */
int lockd__request_acquire_rid(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, const char *rid,
    char *errstr);
/* The same with limit= and mode= from *kind (NULL: a plain lock). */
int lockd__request_acquire_kind(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, const lockd_kind *kind,
    const char *rid, char *errstr);
int lockd__request_force(struct lockd__request *r, const char *name,
    uint64_t fence, char *errstr);
int lockd__request_check(struct lockd__request *r, const char *name,
    uint64_t fence, char *errstr);
/* fence < 0: none; wait_ms LOCKD_WAIT_FOREVER: none. */
int lockd__request_watch(struct lockd__request *r, const char *name,
    int64_t fence, int64_t wait_ms, char *errstr);
int lockd__request_list(struct lockd__request *r, const char *prefix,
    const char *after, int limit, char *errstr);

/* A fresh rid for one call: 32 hex digits of the kernel's randomness
 * (128 bits) and a NUL into rid; false when none could be had.  (In
 * lockd.c: it reads the kernel, which nothing else here does.) */
bool lockd__rid_new(char *rid);

/* Whether r carries a rid= (an ACQUIRE or TRY safe to repeat). */
bool lockd__request_has_rid(const struct lockd__request *r);

/* What a STATUS-like reply line tells: the public info and its holders
 * (holders.size is sizeof(lockd_lock_holders)). */
struct lockd__info {
	lockd_lock_info lock;
	lockd_lock_holders holders;
	char stats[LOCKD_STATS_MAX];   /* STATS: its words, NUL-terminated */
};

/*
 * A caller's lockd_lock_holders must have a size that covers holders, the
 * first field after it: LOCKD_OK, or LOCKD_ERR_INVALID with errstr saying
 * why.  lockd__holders_copy then copies the fields of *src that dst->size
 * covers into *dst.
 */
int lockd__holders_check(const lockd_lock_holders *h, char *errstr);
void lockd__holders_copy(lockd_lock_holders *dst,
    const lockd_lock_holders *src);

/* A LIST reply line that is not its last: lockd__reply_take returns it
 * (consumed, with *info filled) and the request stays due. */
#define LOCKD__MORE 100

/*
 * Parses the first reply in buf[0..len) as the answer to p and fills *r.
 * Returns LOCKD_AGAIN when no whole reply is there yet; LOCKD_ERR_PROTOCOL
 * when it is garbled or does not answer p (by kind, lock name or fence);
 * otherwise the result the blocking call returns (a server error is one of
 * them) with *consumed set to the reply's length.
 */
int lockd__reply_take(const char *buf, size_t len,
    const struct lockd__pending *p, lockd_reply *r, size_t *consumed,
    char *errstr);
/* The same, also filling *info (NULL: not wanted) with what the v2
 * replies (STATUS's new fields, LOCK, CHANGED, CURRENT, STALE, END's
 * next= in info->lock.name) carry. */
int lockd__reply_take_info(const char *buf, size_t len,
    const struct lockd__pending *p, lockd_reply *r, struct lockd__info *info,
    size_t *consumed, char *errstr);

/*
 * When the reply to p must have come (-1: never), now being the time: only
 * p's own wait can hold it back, since replies come in request order, so it
 * is due by its send time plus its wait, and the command timeout counts
 * from then (or from now, if later).
 */
int64_t lockd__reply_deadline(const struct lockd__pending *p,
    int64_t command_timeout_ms, int64_t now);

/*
 * The queue of replies due, in request order.  Items are `size` bytes and
 * each starts with a struct lockd__pending; a transport may put more after
 * it (the libuv client keeps the callback there).
 */
struct lockd__queue {
	char *items;
	size_t size;          /* bytes per item */
	size_t first, count, cap;
};

void lockd__queue_init(struct lockd__queue *q, size_t size);
void lockd__queue_free(struct lockd__queue *q);
/* Appends a zeroed item; NULL when out of memory (nothing changed). */
void *lockd__queue_push(struct lockd__queue *q);
/* The i-th item from the head (i < count). */
void *lockd__queue_at(const struct lockd__queue *q, size_t i);
void lockd__queue_pop(struct lockd__queue *q);
void lockd__queue_clear(struct lockd__queue *q);

/*
 * The stream offset up to which requests may go out when `answered` of the
 * queued ones (from the head) have their replies in, `appended` being the
 * offset past the last one: at most LOCKD__MAX_IN_FLIGHT ahead.
 */
uint64_t lockd__send_limit(const struct lockd__queue *q, size_t answered,
    uint64_t appended);

#endif /* LOCKD_CLIENT_REQUEST_H */
