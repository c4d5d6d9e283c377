/*
 * checker.h - the external checker of the crash tests.  It sees lockd only
 * from the outside: the requests the test clients sent (and when), the
 * replies they read (and when), and the kills.  From that alone it judges
 * lockd's promises across crashes:
 *
 *   Rewind      per name, a grant requested after another was told carries
 *               a higher fence; STATUS and a crash image never show a fence
 *               below one already told
 *   Reissue     no fence is told twice for a name
 *   Overlap     no grant while another told lease on the name is certainly
 *               still held (see "certainly held" below); on a semaphore,
 *               no grant while `limit` others are, told before it was
 *               asked or holding lower fences (the fence counter orders
 *               grants, across restarts too); on a read lock, no writer
 *               beside any other holder, nor a reader beside a writer
 *   Forgotten   a told grant or renewal whose lease is certainly not over
 *               is still there after a restart (STATUS; CHECK of each
 *               holder of a semaphore or shared lock, with at least its
 *               certain time left) or in a crash image
 *   Refused     lockd never answers CONFLICT or NOTHELD to a holder whose
 *               lease is certainly not over
 *   Lengthened  after a restart STATUS (or CHECK of a holder) never shows a
 *               lease running past the latest expiry it could have been
 *               given (nor, as Forgotten, ending before the earliest)
 *   Onclose     an onclose=release lease does not survive a restart
 *               (STATUS, or CHECK of a holder)
 *   Owner       the owner label STATUS (or a crash image) shows with a told
 *               fence is the one that grant asked for
 *   Rid         a grant's rid= is durable with it: a repeat of the rid
 *               after a restart, while the lease is certainly held, is
 *               told that same grant (fence and handle) - every holder of
 *               a semaphore or shared lock, not only the newest - and a crash
 *               image's record of a told fence has that grant's rid
 *   Delay       no grant while a told lease's lock-delay certainly runs: a
 *               lease no RELEASE was sent for, and not onclose=release,
 *               ends by expiry, so its delay runs at least until its
 *               certain end plus the delay (kill -9 and power loss
 *               included: the delay is durable); on a name of several
 *               holders, one such holder holds back the whole name from
 *               the latest instant it can end, while the others keep
 *               holding
 *
 * "Certainly held until" (sure_end) is the lockd-side conservative interval
 * of a told grant: lockd granted it at some instant between the request's
 * sending and the reply's reading, so it runs at least until the request
 * was sent plus the lease; a told RENEWED sets it to that renewal's sending
 * plus its lease; a RENEW whose reply was lost may have set it so, or not
 * (the lower of the two counts); any RELEASE sent ends it at its sending,
 * whatever its reply (a release is not durable and a lost one only lets the
 * lease run out); an onclose=release lease ends when its connection closes
 * or lockd dies.  A release lost in a crash may bring a lease back until
 * its expiry; nothing here holds that against lockd.
 *
 * Times are CLOCK_MONOTONIC milliseconds of the test process; lockd counts
 * on CLOCK_BOOTTIME, which runs at the same rate, and both round down to
 * whole milliseconds, hence CHK_SLACK_MS.
 */
#ifndef LOCKD_TESTS_CRASH_CHECKER_H
#define LOCKD_TESTS_CRASH_CHECKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CHK_SLACK_MS 2
#define CHK_NEVER INT64_MAX
#define CHK_MAX_NAMES 16

enum chk_violation {
	CHK_REWIND,
	CHK_REISSUE,
	CHK_OVERLAP,
	CHK_FORGOTTEN,
	CHK_REFUSED,
	CHK_LENGTHENED,
	CHK_ONCLOSE,
	CHK_OWNER,
	CHK_DELAY,
	CHK_RID,
	CHK_UNRECOVERABLE,   /* a crash image LMDB or lockd cannot open */
	CHK_VIOLATION_COUNT
};

enum chk_outcome {
	CHK_PENDING,
	CHK_OK,             /* RENEWED, RELEASED */
	CHK_REFUSED_REPLY,  /* CONFLICT, NOTHELD */
	CHK_UNAVAILABLE,    /* the commit failed: nothing changed */
	CHK_UNKNOWN         /* the reply was lost with lockd */
};

enum chk_event_kind { CHK_EV_RENEW, CHK_EV_RELEASE };

/* A RENEW or RELEASE in flight: grant index and event index. */
struct chk_ref {
	int64_t grant;      /* -1: none */
	uint32_t event;
};

struct chk_event {
	int64_t sent;
	int64_t recv;       /* when the outcome became known */
	int64_t lease;      /* RENEW */
	uint64_t jpos;      /* journal bytes when the reply was read */
	int cycle;
	uint8_t kind;
	uint8_t outcome;
};

struct chk_grant {
	int name;
	uint64_t fence;
	char handle[40];
	int64_t sent, recv, lease;
	int64_t closed;     /* onclose: its connection closed or lockd died */
	bool onclose;
	int64_t delay;      /* delay= asked (as granted: below the cap) */
	uint8_t owner_len;  /* owner= asked; 0: none */
	char owner[64];
	uint8_t rid_len;    /* rid= asked; 0: none */
	char rid[64];
	int cycle;          /* the lockd run that told it */
	uint64_t jpos;      /* journal bytes when the reply was read */
	bool multi;         /* a semaphore's or shared lock's holder: its
	                     * record is under its own holder key */
	struct chk_event *ev;
	uint32_t nev, cap;
};

struct chk_stats {
	uint64_t grants;          /* told grants, every one checked */
	uint64_t renewals;        /* told RENEWED */
	uint64_t releases;        /* told RELEASED */
	uint64_t status_checks;   /* STATUS replies judged */
	uint64_t durable_checks;  /* a lease that had to be there, was looked for */
	uint64_t delay_checks;    /* grants judged against a running delay */
	uint64_t rid_checks;      /* rid repeats and image rids judged */
	uint64_t holder_checks;   /* CHECK replies judged (chk_check) */
	uint64_t holders_back;    /* ... of them CURRENT after a restart */
	uint64_t image_checks;    /* crash images judged */
	uint64_t violations[CHK_VIOLATION_COUNT];
};

/* One name's told grants in the order their replies were read, with the
 * highest fence of each prefix. */
struct chk_list {
	size_t *idx;        /* into chk.grants */
	size_t *top;        /* top[k]: the highest fence among idx[0..k] */
	size_t n, cap;
	size_t multi;       /* grants marked chk_grant_multi */
	unsigned limit;     /* a semaphore's (chk_name_limit); 0: unknown */
};

struct chk {
	int names;
	const char *const *name_text;
	struct chk_grant *grants;    /* in the order their replies were read */
	size_t count, cap;
	struct chk_list lists[CHK_MAX_NAMES];
	int cycle;
	int64_t t0;                  /* for the reports */
	FILE *out;                   /* violation reports; NULL: none */
	unsigned report_limit;       /* reports printed at most (40) */
	unsigned reported;
	struct chk_stats stats;
};

const char *chk_violation_name(enum chk_violation v);

void chk_init(struct chk *c, int names, const char *const *name_text,
    FILE *out, int64_t t0);
void chk_free(struct chk *c);

/* A told GRANTED: checks Rewind and Reissue at once; returns its index. */
int64_t chk_granted(struct chk *c, int name, uint64_t fence,
    const char *handle, int64_t sent, int64_t recv, int64_t lease,
    bool onclose, uint64_t jpos);

/* A RENEW or RELEASE with the handle of grant g was sent. */
struct chk_ref chk_begin(struct chk *c, int64_t g, enum chk_event_kind kind,
    int64_t sent, int64_t lease);
/* ... and its outcome became known at recv (Refused is checked here). */
void chk_end(struct chk *c, struct chk_ref ref, enum chk_outcome outcome,
    int64_t recv, uint64_t jpos);

/* Grant g was asked with owner= (owner_len 0: none) and delay=. */
void chk_grant_options(struct chk *c, int64_t g, const char *owner,
    size_t owner_len, int64_t delay);

/* STATUS, or a crash image, shows `fence` on `name` with this owner label
 * (owner_len 0: none): it must be the told grant's (Owner). */
void chk_owner_seen(struct chk *c, int name, uint64_t fence,
    const char *owner, size_t owner_len);

/* Grant g was asked with rid= (rid_len 0: none). */
void chk_grant_rid(struct chk *c, int64_t g, const char *rid,
    size_t rid_len);

/* A crash image holds `fence` on `name` with this rid (rid_len 0: none):
 * it must be the told grant's (Rid). */
void chk_rid_seen(struct chk *c, int name, uint64_t fence, const char *rid,
    size_t rid_len);

/* The told grant of `fence` on `name` that was asked with a rid and is
 * certainly held until `until`, or -1: one whose rid a test may repeat
 * without starting a new grant. */
int64_t chk_rid_live(const struct chk *c, int name, uint64_t fence,
    int64_t until);

/* A repeat of grant g's rid, sent while g was certainly held, was told
 * GRANTED with (fence, handle) (granted false: something else, `what`):
 * it must be g again (Rid). */
void chk_rid_repeat(struct chk *c, int64_t g, bool granted, uint64_t fence,
    const char *handle, const char *what);

/* The onclose=release connection of grant g closed (or lockd died) at t. */
void chk_closed(struct chk *c, int64_t g, int64_t t);

/*
 * A STATUS of `name` sent at sent and read at recv.  after_restart: no
 * connection of the earlier runs is open any more.
 */
void chk_status(struct chk *c, int name, int64_t sent, int64_t recv,
    bool held, uint64_t fence, int64_t ttl, bool after_restart);

/*
 * A CHECK of told fence `fence` on `name`, sent at sent and read at recv:
 * CURRENT with ttl (current true) or STALE.  Judged for that holder
 * alone, whatever the others do: certainly held, it must be CURRENT
 * with at least its certain time left (Forgotten); CURRENT, never with
 * more than its latest expiry allows (Lengthened); after a restart an
 * onclose=release holder must be STALE (Onclose).
 */
void chk_check(struct chk *c, int name, uint64_t fence, int64_t sent,
    int64_t recv, bool current, int64_t ttl, bool after_restart);

/* Whether grant g may still be held at `at` (its lease is not certainly
 * over): a holder worth a CHECK. */
bool chk_maybe_held(const struct chk *c, int64_t g, int64_t at);

/* Grant g holds a semaphore's permit or a shared lock (limit > 1 or
 * mode=shared): a crash image keeps it under its own holder key,
 * "<name> NUL <fence>" (daemon/format.h), beside the name's others.  On a
 * name of no limit (chk_name_limit) that has such grants, a read lock,
 * the grants not marked so are its writers. */
void chk_grant_multi(struct chk *c, int64_t g);

/* The name is a semaphore of `limit` holders: chk_finish reports a grant
 * told while `limit` others, told before it was asked, were certainly
 * held (never more than limit holders). */
void chk_name_limit(struct chk *c, int name, unsigned limit);

#define CHK_MAX_HOLDERS 16

/* One holder key's record in a crash image. */
struct chk_holder {
	uint64_t fence;
	int64_t expiry;     /* on the test's clock */
};

/* What a crash image holds for one name, key by key: the record under
 * the name (a plain hold), and those under its holder keys. */
struct chk_record {
	bool present;       /* the name's own key holds a lease */
	uint64_t fence;
	int64_t expiry;     /* on the test's clock */
	unsigned nholders;  /* at most CHK_MAX_HOLDERS */
	struct chk_holder holders[CHK_MAX_HOLDERS];
};

/*
 * Judges a crash image cut at journal position jpos and time cut (the last
 * record's time) of lockd run `cycle`: every grant told before the cut
 * (an earlier run, or read at a journal position <= jpos) must be in it,
 * and its high-water mark must not be below a told fence.  Per key: a
 * plain grant under its name (the newest told one, as a plain lock has
 * one holder), each multi grant (chk_grant_multi) certainly still held
 * under its own holder key.  Returns the violations found.
 */
uint64_t chk_image(struct chk *c, int cycle, uint64_t jpos, int64_t cut,
    const struct chk_record *records, uint64_t hwm);

/* A crash image that LMDB (or lockd) could not open: why. */
void chk_unrecoverable(struct chk *c, const char *why);

/* The whole-history checks (Overlap); call once at the end. */
void chk_finish(struct chk *c);

uint64_t chk_violations(const struct chk *c);
void chk_print_stats(const struct chk *c, FILE *out, const char *prefix);

#endif
