/*
 * core.h - the lock semantics of lockd, pure and deterministic.
 *
 * Everything that decides safety lives behind this header: fences, grants,
 * expiry, renewal, release, FIFO queues and deadlines.  The core performs no
 * I/O, reads no clock and draws no random numbers of its own: time (`now`,
 * milliseconds on a clock that never steps) and secrets are passed in.  The
 * daemon, the model checker and the simulator all drive this same code.
 *
 * Two layers:
 *  - the rules: small functions over one struct core_lock that make each
 *    safety decision.  They are reached through a table of function pointers
 *    (struct core_rules) so the model checker can swap in broken variants
 *    and show that it catches them; the daemon always uses core_rules_std.
 *  - the table: lock name -> entry, each entry with its holder, its strict
 *    FIFO queue of waiters and its deadline in one heap shared by all locks.
 *    Operations report what the caller must do through a sink (replies to
 *    deliver, events to count) and by marking entries whose durable record
 *    changed; the caller commits those (core_table_changes) before it lets
 *    GRANTED or RENEWED replies out.
 */
#ifndef LOCKD_CORE_H
#define LOCKD_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int64_t core_time;               /* ms on a clock that never steps */
#define CORE_NEVER INT64_MAX             /* "no deadline" */
#define CORE_FENCE_MAX ((uint64_t)INT64_MAX)  /* 2^63 - 1, never exceeded */
#define CORE_NAME_MAX 255
#define CORE_WAIT_FOREVER (-1)           /* acquire without a wait limit */
#define CORE_OWNER_MAX 64                /* bytes of a holder's owner label */
#define CORE_RID_MAX 64                  /* bytes of a request id (rid=) */
#define CORE_LIMIT_MAX 65535             /* holders of one name (limit=) */

enum core_status {
	CORE_OK = 0,
	CORE_ERR_OVERFLOW,   /* the fence counter is exhausted */
	CORE_ERR_CONFLICT,   /* the handle is not the current holder's */
	CORE_ERR_BADARG,     /* negative lease or wait, bad name */
	CORE_ERR_LIMIT,      /* a configured limit was hit */
	CORE_ERR_NOMEM,      /* the allocator failed */
	CORE_ERR_KIND        /* the request's limit or mode does not fit the
	                      * name (limit= while not idle, mode=shared with
	                      * a limit, a rid repeat of another kind): the
	                      * reply is BADARG with core_reply.misfit set */
};

/* Why a request's kind does not fit (core_reply.misfit, with BADARG). */
enum core_misfit {
	CORE_MISFIT_NONE = 0,
	CORE_MISFIT_LIMIT,   /* another limit while the name is not idle, or
	                      * a rid repeat whose limit is not its grant's */
	CORE_MISFIT_MODE     /* mode=shared with a limit other than 1, or a
	                      * rid repeat whose mode is not its grant's */
};

/* The holder's proof: the fence of its grant and the secret minted with it. */
struct core_handle {
	uint64_t fence;
	uint64_t secret;
};

/* An intrusive doubly linked list; an empty list points at itself. */
struct core_link {
	struct core_link *prev, *next;
};

struct core_entry;

/*
 * A hold's (or a waiter's) optional parts: its owner label - public, never
 * proof of anything - the request id (rid=) it was granted with, whose
 * repeat while the lease lives gets this same grant back, its lock-delay,
 * and, for an entry's own holder bound by onclose=release, its place in
 * the session's list.  Out of line, allocated only when one of them was
 * asked for, and only as long as the parts it has, so that a plain lock
 * pays one pointer for all of them and a rid costs 3 bytes beside its
 * own.  Owned by the table: the rules never allocate or free, and read
 * only through the functions below.
 */
struct core_tags {
	uint8_t label_len;
	uint8_t rid_len;
	uint8_t parts;        /* CORE_TAGS_DELAY | CORE_TAGS_BOND */
	/* The label, then the rid, then the lock-delay (an int64_t in ms,
	 * unaligned, with CORE_TAGS_DELAY), then, at the next multiple of 8
	 * from the start of the tags, a struct core_bond (CORE_TAGS_BOND). */
	char bytes[];
};
#define CORE_TAGS_DELAY 0x01
#define CORE_TAGS_BOND  0x02

/* The entry's own holder's binding by onclose=release: the session it
 * is bound to and its place in that session's onclose list.  In the
 * hold's tags, so that an unbound plain lock pays nothing for it. */
struct core_bond {
	struct core_link onclose_link;   /* linked while owner is set */
	struct core_entry *entry;   /* whose own holder it is */
	struct core_session *owner; /* NULL: not bound (now) */
};

/*
 * The state of one lock's holder as the rules see it: everything that
 * belongs to one hold (its lease, its lock-delay, its tags) and nothing
 * that belongs to the name.  fence == 0 means free; then the other fields
 * are meaningless (and zero).
 */
struct core_lock {
	uint64_t fence;       /* the holder's fence */
	uint64_t secret;      /* the holder's secret */
	core_time expiry;     /* the lease ends at this instant (exclusive) */
	int64_t lease_ms;     /* the length last granted or renewed */
	/* Owner label, rid, lock-delay and onclose binding; NULL: none of
	 * them (core_tags_delay gives the lock-delay). */
	struct core_tags *tags;
};

/* The lock-delay of a hold with tags (NULL: none), 0 when none. */
static inline int64_t
core_tags_delay(const struct core_tags *tags)
{
	int64_t delay_ms = 0;

	if (tags != NULL && (tags->parts & CORE_TAGS_DELAY))
		memcpy(&delay_ms, tags->bytes + tags->label_len +
		    tags->rid_len, sizeof(delay_ms));
	return delay_ms;
}

/* Where the bond of tags with a delay or not (`delay`) and these lengths
 * starts, from the start of the tags; the size of such tags with a bond
 * is that plus sizeof(struct core_bond). */
static inline size_t
core_tags_bond_offset(size_t label_len, size_t rid_len, bool delay)
{
	size_t end = offsetof(struct core_tags, bytes) + label_len + rid_len +
	    (delay ? sizeof(int64_t) : 0);

	return (end + 7) & ~(size_t)7;
}

/* The bond of tags that have one (CORE_TAGS_BOND), else NULL. */
static inline struct core_bond *
core_tags_bond(struct core_tags *tags)
{
	if (tags == NULL || !(tags->parts & CORE_TAGS_BOND))
		return NULL;
	return (struct core_bond *)(void *)((char *)tags +
	    core_tags_bond_offset(tags->label_len, tags->rid_len,
	    tags->parts & CORE_TAGS_DELAY));
}

/* The owner label of tags (NULL: none) and its length, 0 when none. */
static inline size_t
core_tags_label(const struct core_tags *tags, const char **label)
{
	*label = tags != NULL ? tags->bytes : "";
	return tags != NULL ? tags->label_len : 0;
}

/* The rid of tags (NULL: none) and its length, 0 when none. */
static inline size_t
core_tags_rid(const struct core_tags *tags, const char **rid)
{
	*rid = tags != NULL ? tags->bytes + tags->label_len : "";
	return tags != NULL ? tags->rid_len : 0;
}

/* How a hold ended, for lock-delay and for WATCH's cause=. */
enum core_end {
	CORE_END_NONE = 0,    /* no change seen since start */
	CORE_END_GRANTED,     /* not an end: a hold started */
	CORE_END_RELEASED,    /* RELEASE: never a lock-delay */
	CORE_END_EXPIRED,
	CORE_END_CLOSED,      /* onclose=release */
	CORE_END_FORCED       /* FORCE */
};

/* ---- the rules -------------------------------------------------------- */

/*
 * A name's holders as the admission rule sees them: a lock is a set of
 * holders with a mode and a limit.  limit 1 is a mutex or a read/write
 * lock (one exclusive holder, or any number of shared ones); above 1, a
 * counting semaphore of that many exclusive holders.
 */
struct core_holding {
	uint32_t holders;     /* live holders (decide() false for each) */
	bool shared;          /* they hold shared (all of them; none held) */
	uint16_t limit;       /* the name's limit, 1..CORE_LIMIT_MAX */
};

/*
 * Each rule is a pure function.  `hwm` is the fence high-water mark: the
 * largest fence ever minted, shared by every name, so that fences stay
 * strictly increasing per name while a freed lock keeps no record.
 */
struct core_entry;
struct core_waiter;

/* A lock's holders as WATCH compares them.  A grant always mints a fence
 * larger than every holder's, so the newest fence and the count together
 * change whenever the set does: a grant changes the first, the end of a
 * hold not followed by a grant the second. */
struct core_watch_mark {
	uint64_t fence;               /* the newest holder's; 0: free */
	uint32_t holders;
};

struct core_rules {
	/* *next = last + 1; CORE_ERR_OVERFLOW (and *next untouched) when last
	 * is already CORE_FENCE_MAX. */
	enum core_status (*fence_next)(uint64_t last, uint64_t *next);
	/* Held and now >= expiry.  A free lock is never expired. */
	bool (*lease_expired)(const struct core_lock *lock, core_time now);
	/* May the lock be granted now: free, or held with an expired lease. */
	bool (*decide)(const struct core_lock *lock, core_time now);
	/* The only place a fence is minted: requires decide(); sets the lock to
	 * a new holder with fence hwm+1 and the given secret, lease and expiry
	 * now + lease_ms, and advances *hwm.  CORE_ERR_OVERFLOW changes
	 * nothing. */
	enum core_status (*grant)(struct core_lock *lock, uint64_t *hwm,
	    core_time now, int64_t lease_ms, uint64_t secret);
	/* Held, and both the fence and the secret of h match. */
	bool (*is_holder)(const struct core_lock *lock, struct core_handle h);
	/* Extends the lease to now + lease_ms iff h is the current holder;
	 * CORE_ERR_CONFLICT otherwise. */
	enum core_status (*renew)(struct core_lock *lock, struct core_handle h,
	    core_time now, int64_t lease_ms);
	/* Frees the lock iff h is the current holder and returns true; a stale
	 * handle is a no-op that returns false. */
	bool (*release)(struct core_lock *lock, struct core_handle h);
	/* Frees the lock iff its lease has expired (returns true); the fence
	 * counter is not touched. */
	bool (*reclaim_if_expired)(struct core_lock *lock, core_time now);
	/* The waiter a free lock is handed to: the head of the FIFO queue. */
	struct core_waiter *(*next_waiter)(struct core_entry *entry);
	/* Does a lock-delay running until delay_until (0: none) forbid a
	 * grant at now. */
	bool (*delay_blocks)(core_time delay_until, core_time now);
	/* The instant the lock-delay of a hold that just ended (`ended`,
	 * as it was before it was freed) ends, 0 for none: RELEASE never
	 * delays; an expiry delays from its expiry, onclose and FORCE from
	 * now. */
	core_time (*delay_end)(const struct core_lock *ended,
	    enum core_end how, core_time now);
	/* FORCE: frees the lock iff it is held with exactly this fence
	 * (returns true); any other fence is a no-op that returns false. */
	bool (*force)(struct core_lock *lock, uint64_t fence);
	/* Does a WATCH fire: `watched` is the holders it waits to see change
	 * (by_fence: only the newest holder's fence, as given with fence=),
	 * `current` the holders now. */
	bool (*watch_fires)(const struct core_watch_mark *watched,
	    bool by_fence, const struct core_watch_mark *current);
	/* Is a request with this rid (rid_len 0: none) a repeat of the one
	 * the live holder was granted for: then it gets that grant back and
	 * nothing changes.  Never true without a rid, nor for a free lock. */
	bool (*rid_repeat)(const struct core_lock *lock, const char *rid,
	    size_t rid_len);
	/* May a request (shared or exclusive) join the holders now: nobody
	 * holds; or, limit 1, it and every holder are shared; or, limit above
	 * 1, fewer than limit hold.  Lock-delay and the queue are the
	 * table's (delay_blocks, next_waiter): a request is asked only when
	 * nobody waits ahead of it. */
	bool (*admits)(const struct core_holding *held, bool shared);
	/* A restore (a failed commit's fall-back): the limit a name takes.
	 * `stored` is the largest limit its records name (1 for none),
	 * `queued` the one its waiters were admitted under (0: nobody
	 * waits), `nrecords` how many records it has, `holds` whether one
	 * names a holder and `delay_runs` whether a stored lock-delay still
	 * runs.  Nobody holding and no lock-delay running: the waiters keep
	 * theirs; otherwise the records tell it. */
	uint16_t (*restore_limit)(uint16_t stored, uint16_t queued,
	    size_t nrecords, bool holds, bool delay_runs);
	/* Are the waiters admitted under `queued` answered BADARG when the
	 * restore gave the name `limit`: whenever the two differ. */
	bool (*restore_refuses)(uint16_t limit, uint16_t queued);
};

/* The rules the daemon runs. */
extern const struct core_rules core_rules_std;

enum core_status core_rule_fence_next(uint64_t last, uint64_t *next);
bool core_rule_lease_expired(const struct core_lock *lock, core_time now);
bool core_rule_decide(const struct core_lock *lock, core_time now);
enum core_status core_rule_grant(struct core_lock *lock, uint64_t *hwm,
    core_time now, int64_t lease_ms, uint64_t secret);
bool core_rule_is_holder(const struct core_lock *lock, struct core_handle h);
enum core_status core_rule_renew(struct core_lock *lock, struct core_handle h,
    core_time now, int64_t lease_ms);
bool core_rule_release(struct core_lock *lock, struct core_handle h);
bool core_rule_reclaim_if_expired(struct core_lock *lock, core_time now);
bool core_rule_delay_blocks(core_time delay_until, core_time now);
core_time core_rule_delay_end(const struct core_lock *ended,
    enum core_end how, core_time now);
bool core_rule_force(struct core_lock *lock, uint64_t fence);
bool core_rule_watch_fires(const struct core_watch_mark *watched,
    bool by_fence, const struct core_watch_mark *current);
bool core_rule_rid_repeat(const struct core_lock *lock, const char *rid,
    size_t rid_len);
bool core_rule_admits(const struct core_holding *held, bool shared);
uint16_t core_rule_restore_limit(uint16_t stored, uint16_t queued,
    size_t nrecords, bool holds, bool delay_runs);
bool core_rule_restore_refuses(uint16_t limit, uint16_t queued);

/* ---- configuration ---------------------------------------------------- */

struct core_config {
	int64_t default_lease_ms;   /* lease 0 means this (30 s) */
	int64_t max_lease_ms;       /* longer leases are capped to this (5 min) */
	int64_t max_lock_delay_ms;  /* longer delays are capped to this (1 min) */
	uint32_t max_held;          /* held locks in all; 0 = unlimited */
	uint32_t max_waiters;       /* waiters in all; 0 = unlimited */
	uint32_t max_waiters_per_session;  /* 0 = unlimited */
	/* Room core_table_init makes at once for this many locks (buckets
	 * and heap slots), so that loading them never grows the table: a
	 * hint, 0 = start small. */
	size_t expected_locks;
	uint64_t hash_key[2];       /* secret key for the name hash */
	/* The source of handle secrets; called once per grant. */
	uint64_t (*secret)(void *ctx);
	void *secret_ctx;
	/* Allocation seam: realloc(p, 0) is never called; free is. */
	void *(*realloc)(void *p, size_t size);
	void (*free)(void *p);
};

/* Fills in the defaults above (30 s, 5 min, 1 min, no limits, libc
 * allocator). */
void core_config_defaults(struct core_config *config);

/*
 * The lease actually granted for a requested length: 0 means the default,
 * anything above the maximum is capped.  Negative is CORE_ERR_BADARG.
 */
enum core_status core_lease_effective(const struct core_config *config,
    int64_t requested_ms, int64_t *effective_ms);

/* ---- sessions, replies, events ---------------------------------------- */

/*
 * One client as the core sees it (a connection in the daemon).  The caller
 * embeds it, calls core_session_init, and must call core_disconnect before
 * it goes away.
 */
struct core_session {
	uint64_t id;                 /* the caller's, for its own use */
	struct core_link waiters;    /* its waiters, in no particular order */
	/* The entries whose own holder it binds with onclose=release,
	 * linked through the bond in each holder's tags (core_bond). */
	struct core_link onclose;
	struct core_link onclose_more;  /* holders beyond an entry's own */
	uint32_t waiter_count;
	/* Waiters counted with other sessions' (one principal's, say), and
	 * capped at group_max_waiters (0: no cap); NULL: in no group. */
	uint32_t *group_waiters;
	uint32_t group_max_waiters;
};

void core_session_init(struct core_session *session, uint64_t id);

enum core_reply_kind {
	CORE_REPLY_GRANTED,     /* durable: wait for the commit */
	CORE_REPLY_RENEWED,     /* durable: wait for the commit */
	CORE_REPLY_RELEASED,
	CORE_REPLY_NOTHELD,
	CORE_REPLY_HELD,
	CORE_REPLY_TIMEOUT,     /* ACQUIRE's wait elapsed */
	CORE_REPLY_CONFLICT,    /* RENEW with a stale handle */
	CORE_REPLY_OVERFLOW,
	CORE_REPLY_LIMIT,
	CORE_REPLY_NOMEM,
	CORE_REPLY_BADARG,
	CORE_REPLY_SHUTDOWN,    /* the waiter was cancelled by a clean stop */
	CORE_REPLY_FORCED,      /* FORCE freed the holder: durable */
	CORE_REPLY_CHANGED,     /* a WATCH fired; status says what it saw */
	CORE_REPLY_SUPERSEDED,  /* a waiter replaced by its rid's repeat */
	/* Events with no request behind them (session and tag are 0): */
	CORE_EVENT_RECLAIMED,   /* an expired lease was freed */
	CORE_EVENT_RELEASED_ONCLOSE  /* a connection's close released a lease */
};

enum core_limit_kind {
	CORE_LIMIT_NONE = 0,
	CORE_LIMIT_HELD,
	CORE_LIMIT_WAITERS,
	CORE_LIMIT_SESSION_WAITERS,
	CORE_LIMIT_GROUP_WAITERS
};

/*
 * What an operation tells its caller.  `tag` is the caller's own request id,
 * handed in with the request; a waiter's reply carries the tag of the
 * ACQUIRE that queued it.  name points at the entry's copy, valid until the
 * next call to core_table_changes.
 */
struct core_reply {
	enum core_reply_kind kind;
	struct core_session *session;
	uint64_t tag;
	const char *name;
	size_t name_len;
	uint64_t fence;             /* GRANTED, RENEWED, RECLAIMED, RELEASED* */
	uint64_t secret;            /* GRANTED */
	int64_t lease_ms;           /* GRANTED, RENEWED */
	int64_t waited_ms;          /* GRANTED: time in the queue */
	int64_t held_ms;            /* RELEASED*, RECLAIMED: grant to end */
	enum core_limit_kind limit; /* LIMIT */
	uint64_t *user;             /* the lock's core_entry.user; NULL: none */
	/* CHANGED, and HELD: the lock as the WATCH saw it fire, or as TRY
	 * found it; valid during the call. */
	const struct core_lock_status *status;
	bool watch;                 /* TIMEOUT: of a WATCH, not an ACQUIRE */
	bool repeat;                /* GRANTED: a rid repeat of a live grant,
	                             * made durable before, not a new one */
	enum core_misfit misfit;    /* BADARG: why the kind does not fit */
};

struct core_sink {
	void (*reply)(void *ctx, const struct core_reply *reply);
	void *ctx;
};

/* ---- the lock table --------------------------------------------------- */

struct core_timer {
	core_time when;
	uint32_t slot;               /* index in the heap; UINT32_MAX if out */
	uint8_t kind;                /* lease expiry or wait deadline */
};

/*
 * A lock is a set of holders.  The first - the only one a plain mutex ever
 * has - lives in its core_entry (lock, granted_at, timer, owner): it is
 * the holder of an exclusive grant on a name whose limit is 1, the one
 * durable under the key <name>.  Every other holder (shared, or of a
 * semaphore) is a core_holder, allocated only for a name that has them,
 * durable under <name> NUL <fence>.
 */
struct core_holder {
	struct core_lock lock;
	core_time granted_at;
	struct core_timer timer;     /* its lease expiry */
	struct core_link onclose_link;  /* in owner->onclose_more */
	struct core_session *owner;  /* bound by onclose=release */
	struct core_entry *entry;
	struct core_holder *next;    /* the entry's next holder */
	bool shared;
	bool dirty;                  /* its record changed since the drain */
	/* Once it ended (on core_multi.ended, its lock all zero, so that
	 * no rule takes it for a holder): the fence of its key. */
	uint64_t ended_fence;
};

/* What a name beyond a plain mutex that nobody waits for has: allocated
 * when a request with a limit, mode=shared or a lock-delay comes, an
 * ACQUIRE waits or a WATCH does, and freed with the entry. */
struct core_multi {
	struct core_holder *holders;  /* beyond the entry's own, newest first */
	/* Holders that ended since the last core_table_changes: reported as
	 * deletes of their keys, then freed. */
	struct core_holder *ended;
	struct core_link queue;       /* waiters, head first */
	struct core_link watchers;    /* pending WATCHes, oldest first */
	/* The name's lock-delay runs until this instant (0: none).  It is
	 * the name's, not a holder's: a delay blocks new grants of the
	 * whole name, whoever still holds it.  Only a hold with a
	 * lock-delay starts one, and its name has a multi from its grant. */
	core_time delay_until;
	uint32_t queue_len;
	uint32_t watch_len;
	uint32_t count;               /* in holders */
	uint16_t limit;               /* the name's, set while it is idle */
};

struct core_entry {
	struct core_entry *hash_next;
	struct core_lock lock;
	core_time granted_at;
	struct core_timer timer;     /* the lease expiry while held */
	/* The session bound by onclose=release is in lock.tags' bond
	 * (core_entry_owner), which a bound hold always has. */
	struct core_entry *changed_next;  /* on the table's changed list */
	/* The name-ordered index (core/order.h), for LIST. */
	struct core_entry *order_left, *order_right;
	uint64_t user;               /* the caller's; zeroed when made and when
	                              * restored, otherwise never touched */
	/* Holders beyond the first, the limit, the waiters, pending
	 * WATCHes, the lock-delay; NULL: a plain mutex (limit 1) that
	 * nobody has waited for or watched, without a lock-delay. */
	struct core_multi *multi;
	uint32_t hash;               /* low bits of core_name_hash(name) */
	uint8_t cause;               /* enum core_end: the last change seen */
	uint8_t flags;
	uint8_t name_len;            /* 1..255 */
	char name[];
};

/*
 * e's queue of waiters, head first, or NULL: nobody has waited for e yet
 * (the queue is in e's core_multi, made by the first waiter, so that a
 * plain lock that nobody waits for pays nothing for it).
 */
static inline struct core_link *
core_entry_queue(const struct core_entry *e)
{
	return e->multi != NULL ? &e->multi->queue : NULL;
}

/* The session e's own holder is bound to by onclose=release; NULL:
 * none. */
static inline struct core_session *
core_entry_owner(const struct core_entry *e)
{
	const struct core_bond *bond = core_tags_bond(e->lock.tags);

	return bond != NULL ? bond->owner : NULL;
}

/* The end of e's lock-delay (0: none). */
static inline core_time
core_entry_delay_until(const struct core_entry *e)
{
	return e->multi != NULL ? e->multi->delay_until : 0;
}

/* Where a walk of e's queue starts: its head waiter's link, the queue
 * itself when empty, NULL when there is none.  The walk ends at
 * core_entry_queue(e). */
static inline struct core_link *
core_entry_queue_first(const struct core_entry *e)
{
	return e->multi != NULL ? e->multi->queue.next : NULL;
}

/* The number of waiters in e's queue. */
static inline uint32_t
core_entry_queue_len(const struct core_entry *e)
{
	return e->multi != NULL ? e->multi->queue_len : 0;
}

struct core_waiter {
	struct core_link queue_link;    /* in its entry's queue */
	struct core_link session_link;  /* in its session's list */
	struct core_entry *entry;
	struct core_session *session;
	struct core_timer timer;        /* the wait deadline, if any */
	uint64_t tag;
	int64_t lease_ms;               /* effective lease to grant */
	core_time enqueued_at;
	bool onclose_release;
	/* The ACQUIRE's options for its holder: its owner label, rid and
	 * lock-delay in its tags (NULL: none of them). */
	struct core_tags *tags;
	bool shared;                    /* mode=shared */
	/* A WATCH rather than an ACQUIRE: on its entry's watchers list, it
	 * fires when the holders are no longer the ones it found, newest
	 * fence watch_fence and watch_holders of them (watch_by_fence: when
	 * the newest holder's fence is no longer watch_fence).  Kept apart,
	 * not as a core_watch_mark, so they fill the padding. */
	bool watch;
	bool watch_by_fence;
	uint32_t watch_holders;
	uint64_t watch_fence;
};

struct core_stats {
	uint64_t locks;        /* entries in memory */
	uint64_t held;         /* held leases */
	uint64_t waiters;
	uint64_t granted;      /* grants (fences minted) */
	uint64_t timeouts;     /* ACQUIREs answered TIMEOUT (incl. wait=0) */
	uint64_t unavailable;  /* TRYs answered HELD */
	uint64_t released;     /* real releases, by RELEASE */
	uint64_t released_onclose;  /* releases by a closing onclose session */
	uint64_t reclaimed;    /* expired leases freed */
	uint64_t renewed;
	uint64_t conflicts;
	uint64_t limit_hits;
	uint64_t forced;       /* holders freed by FORCE */
	uint64_t delayed;      /* names in lock-delay now */
	uint64_t watches;      /* pending WATCHes */
};

struct core_table {
	struct core_config config;
	const struct core_rules *rules;
	struct core_sink sink;
	uint64_t hwm;                /* largest fence ever minted */
	bool hwm_changed;            /* since the last core_table_changes */
	struct core_entry **buckets;
	size_t bucket_count;         /* a power of two */
	struct core_timer **heap;
	size_t heap_len, heap_cap;
	struct core_entry *changed;  /* entries touched since last drain */
	struct core_entry *order_root;  /* every entry, by name (LIST) */
	uint64_t more_holders;       /* core_holders, each with a timer */
	core_time seen_now;          /* the latest now an operation gave */
	struct core_stats stats;
};

/* Initialises an empty table; CORE_ERR_NOMEM when allocation fails. */
enum core_status core_table_init(struct core_table *table,
    const struct core_config *config, const struct core_rules *rules,
    struct core_sink sink);
/* Frees every entry and waiter without reporting anything. */
void core_table_destroy(struct core_table *table);
/*
 * Makes room for `locks` locks in all - buckets enough that the table does
 * not grow (and rehash every entry) before it holds them, and heap slots
 * for their timers - so that recovery of a known number of records
 * allocates nothing but the entries.  Never shrinks anything.
 * CORE_ERR_NOMEM leaves the table whole, as it would grow without it.
 */
enum core_status core_table_reserve(struct core_table *table, size_t locks);

struct core_acquire_args {
	int64_t lease_ms;        /* 0 = default; capped; negative = BADARG */
	int64_t wait_ms;         /* CORE_WAIT_FOREVER, 0 = fail at once, > 0 */
	bool onclose_release;
	int64_t delay_ms;        /* lock-delay; capped; negative = BADARG */
	const char *label;       /* the owner label, label_len bytes; 0: none */
	size_t label_len;        /* at most CORE_OWNER_MAX, else BADARG */
	const char *rid;         /* the request id, rid_len bytes; 0: none */
	size_t rid_len;          /* at most CORE_RID_MAX, else BADARG */
	uint32_t limit;          /* 0 or 1: a mutex; up to CORE_LIMIT_MAX */
	bool shared;             /* mode=shared (limit must be 0 or 1) */
};

/*
 * Every operation first reclaims the named lock's lease if it has expired
 * (handing the lock to its queue's head), then acts.
 *
 * ACQUIRE and TRY with a rid: when the live holder was granted with the
 * same rid (rules->rid_repeat), the answer is that grant again - GRANTED
 * with its fence and secret, lease_ms the time it has left - and nothing
 * changes but one thing: a hold bound by onclose=release is bound to the
 * repeating session from then on (the one that got the grant before is
 * presumed gone; that is why the client repeats).  An ACQUIRE whose rid
 * equals a waiter's in the name's queue takes that waiter's place (its
 * turn, with the new request's options and session), and the old waiter
 * is answered CORE_REPLY_SUPERSEDED: one rid never waits twice.  A TRY
 * never queues and leaves such a waiter alone.  Each reports its
 * answer through the sink, now or later (a queued ACQUIRE), exactly once per
 * request, with the request's tag.  The return value repeats the immediate
 * outcome for the caller's convenience.
 */
enum core_status core_acquire(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    const struct core_acquire_args *args, uint64_t tag, core_time now);
/* TRY: GRANTED when free (or expired), out of lock-delay and nobody
 * waits, else HELD.  args->wait_ms is ignored. */
enum core_status core_try(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    const struct core_acquire_args *args, uint64_t tag, core_time now);
enum core_status core_renew(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    struct core_handle handle, int64_t lease_ms, uint64_t tag,
    core_time now);
enum core_status core_release(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    struct core_handle handle, uint64_t tag, core_time now);

/* What STATUS, LIST and WATCH show of one lock. */
struct core_lock_status {
	bool held;
	uint64_t fence;
	int64_t ttl_ms;
	uint32_t queue;
	int64_t delay_ms;            /* lock-delay left; 0: none */
	enum core_end cause;         /* the last change seen of the name */
	uint32_t holders;            /* live holders */
	uint16_t limit;              /* the name's limit (1: a mutex) */
	bool shared;                 /* held shared */
	uint8_t label_len;           /* the newest holder's label, if any */
	char label[CORE_OWNER_MAX];
};
/*
 * FORCE: if the lock's live holder has exactly `fence`, its hold ends as
 * if it had expired now (its lock-delay applies, the lock goes to the next
 * waiter): CORE_REPLY_FORCED, durable like a grant.  Otherwise NOTHELD,
 * and nothing changes.
 */
enum core_status core_force(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    uint64_t fence, uint64_t tag, core_time now);

/*
 * WATCH: answers CHANGED once, when the newest live holder's fence (0 when
 * free) is not `fence` - at once if it already is not - or, without
 * has_fence, at the next grant or end of a hold.  wait_ms as ACQUIRE's
 * (TIMEOUT when it runs out; 0 answers at once either way).  A pending
 * WATCH counts against the waiter limits and leaves with its session like
 * a waiter.
 */
enum core_status core_watch(struct core_table *table,
    struct core_session *session, const char *name, size_t name_len,
    bool has_fence, uint64_t fence, int64_t wait_ms, uint64_t tag,
    core_time now);

/* STATUS: diagnostics only.  Reclaims an expired lease first, like every
 * operation, so it may report events and grants through the sink.  With
 * several holders, fence, ttl and label are the newest holder's (the
 * largest fence); holders, limit and shared describe the set. */
void core_status(struct core_table *table, const char *name,
    size_t name_len, core_time now, struct core_lock_status *status);

/* CHECK: does a live holder of the name - any of them, not only the
 * newest - have exactly this fence?  Then *ttl_ms is what its lease has
 * left.  Reclaims first, like STATUS. */
bool core_check(struct core_table *table, const char *name, size_t name_len,
    uint64_t fence, core_time now, int64_t *ttl_ms);

/*
 * The session's connection closed: its waiters leave their queues without a
 * reply, and the leases it holds with onclose=release are released (each
 * lock handed on at once).
 */
void core_disconnect(struct core_table *table, struct core_session *session,
    core_time now);

/*
 * Answers every waiter of the session with `kind` (CORE_REPLY_SHUTDOWN on a
 * clean stop, CORE_REPLY_TIMEOUT when the client's input ended, counted
 * with the timeouts, CORE_REPLY_NOMEM...) and removes them.
 */
void core_cancel_waiters(struct core_table *table,
    struct core_session *session, enum core_reply_kind kind);

/*
 * Reclaims every lease that has expired by `now` and hands each lock on,
 * times out every waiter whose wait has elapsed, and returns the earliest
 * deadline still pending (CORE_NEVER if none): the one timer the caller
 * needs.
 */
core_time core_tick(struct core_table *table, core_time now);

/* The earliest pending deadline without doing anything. */
core_time core_next_deadline(const struct core_table *table);

/* ---- listing ---------------------------------------------------------- */

/*
 * LIST walks the entries in bytewise name order through an index kept
 * beside the hash (core/order.h), so a prefix or a resumed listing costs
 * the depth of a tree plus the entries shown, not a scan of every lock.
 *
 * core_list_first: the first entry whose name starts with prefix (any
 * when prefix_len is 0) and is above `after` (none when after_len is 0).
 * core_list_next: the one after e under the same prefix.  NULL: no more.
 * Both read only; entries they return may not be locks that exist (see
 * core_list_status).  Call core_tick first so no expired lease is shown.
 */
const struct core_entry *core_list_first(const struct core_table *table,
    const char *prefix, size_t prefix_len, const char *after,
    size_t after_len);
const struct core_entry *core_list_next(const struct core_table *table,
    const struct core_entry *e, const char *prefix, size_t prefix_len);

/*
 * What LIST shows of e at now (as STATUS would), without changing
 * anything.  False when e is not a lock that exists - neither held, nor
 * waited for, nor in lock-delay (a name with only a pending WATCH, or an
 * idle entry not yet dropped) - and LIST must skip it.
 */
bool core_list_status(const struct core_table *table,
    const struct core_entry *e, core_time now,
    struct core_lock_status *status);

/* ---- durability ------------------------------------------------------- */

/*
 * The durable record of one held lock, or of a free one in lock-delay
 * (fence 0, delay_until set).  Any other lock has no record; the
 * high-water mark is stored on its own.
 */
struct core_record {
	uint64_t fence;
	uint64_t secret;
	core_time expiry;
	int64_t lease_ms;
	int64_t delay_ms;           /* the holder's lock-delay */
	core_time delay_until;      /* the name's lock-delay; 0: none */
	uint8_t label_len;
	char label[CORE_OWNER_MAX];
	uint8_t rid_len;            /* the grant's rid; 0: none */
	char rid[CORE_RID_MAX];
	/* The holder's kind (durable since record version 3, for issue 17's
	 * holder sets): limit 0 or 1 is a plain lock; shared, a read hold.
	 * The entry's own holder (key <name>) is written with 0 and false,
	 * as before holder sets; a holder under <name> NUL <fence> with its
	 * name's limit and its mode; a free name's delay record (fence 0)
	 * with the limit when it is above 1. */
	uint16_t limit;
	bool shared;
	bool onclose_release;
	/* With onclose_release: the id of the session it is bound to, as
	 * reported; and, for a restore, that session when the caller knows it
	 * is still connected (NULL: it is gone). */
	uint64_t owner_id;
	struct core_session *owner;
};

/*
 * Reports every change to durable state since the last call, per KEY: for
 * each lock touched, the record of each of its keys that changed (or
 * NULL: delete that key), and then the high-water mark when it moved
 * (*hwm_changed).  key_fence 0 is the key <name>: the entry's own holder
 * (an exclusive hold of a name with limit 1, as a plain mutex has), or a
 * free name's lock-delay (fence 0), exactly as before holder sets.  Any
 * other key_fence is the key <name> NUL <key_fence, 8 bytes big-endian>:
 * one shared or semaphore holder, whose record has limit and shared set.
 * A name's two kinds of key never both hold a record after one commit:
 * the own holder excludes every other one, and a free name's delay record
 * is written only when no holder is left.  After the callbacks the
 * entries that are idle (free, nobody waiting) are dropped.  Returns the
 * number of records reported.  The caller commits all of it atomically
 * before it delivers the GRANTED and RENEWED replies made before this
 * call.
 */
size_t core_table_changes(struct core_table *table,
    void (*record)(void *ctx, const char *name, size_t name_len,
        uint64_t key_fence, const struct core_record *rec),
    void *ctx, bool *hwm_changed);

/*
 * Sets a lock to what durable storage says (rec, or free when rec is NULL)
 * without marking it changed: used by recovery, and after a failed commit to
 * fall back to the durable truth.  A held record whose fence is above the
 * high-water mark raises it.  A lock restored to free with waiters is handed
 * to its head at once (through the sink).  A lease restored with
 * onclose_release set is bound again to rec->owner, its session, when the
 * caller gives it (after a failed commit the connection may well be there),
 * and stays bound when it is the holder the table already has; with no
 * session to bind to it is released at once, as the close of its connection
 * would have done, and the release is marked for the next commit.  A name
 * is restored once between two calls of core_table_changes: a second
 * restore keeps the first (and whatever it handed on), so a caller may
 * restore a name listed twice.
 */
enum core_status core_table_restore(struct core_table *table,
    const char *name, size_t name_len, const struct core_record *rec,
    core_time now);

/*
 * Sets a whole name to what durable storage holds under all its keys:
 * recs[0..n) are its records (n == 0: free), each under <name> (an
 * exclusive holder of a limit-1 name, or fence 0: a free name in
 * lock-delay) or under <name> NUL <its fence> (limit above 1 or shared).
 * Otherwise as core_table_restore, which is the case n <= 1 of it: holders
 * the table already has with the same fence and secret keep their session
 * bindings; the others go; what the records add is restored; an
 * onclose_release holder with no session is released at once.  BADARG
 * for a bad name or more than CORE_LIMIT_MAX records.
 */
enum core_status core_table_restore_holders(struct core_table *table,
    const char *name, size_t name_len, const struct core_record *recs,
    size_t n, core_time now);

/* One record for core_table_restore_batch: rec.fence == 0 means free.
 * more/nmore: further records of the same name (holder keys), restored
 * with it as by core_table_restore_holders; NULL/0 for a plain lock. */
struct core_restore {
	const char *name;
	size_t name_len;
	struct core_record rec;
	const struct core_record *more;
	size_t nmore;
};

/*
 * core_table_restore of items[0..n), in order, with the same outcome (the
 * same table, replies and statuses), but quicker over many records: the
 * cache misses of a batch overlap instead of queueing.  Stops at the first
 * error and returns it; *done is the number restored before it (so
 * items[*done] failed), n when all were.
 */
enum core_status core_table_restore_batch(struct core_table *table,
    const struct core_restore *items, size_t n, core_time now, size_t *done);

/* Recovery: the durable high-water mark (never lowers the table's). */
void core_table_restore_hwm(struct core_table *table, uint64_t hwm);

/* The table's keyed name hash (SipHash-1-3 under config.hash_key), for
 * callers that index names the way the table does. */
uint64_t core_name_hash(const uint64_t key[2], const char *name, size_t len);

/* Looks a lock up without touching it; NULL when not in memory. */
const struct core_entry *core_table_find(const struct core_table *table,
    const char *name, size_t name_len);

#endif /* LOCKD_CORE_H */
