/*
 * checker.c - the exhaustive model checker.  It drives the production lock
 * table (core_table_* over a struct core_rules) through every interleaving
 * of a bounded scenario: scripted clients, clock steps, ticks and
 * crash-restarts.  After every step it checks the properties against its
 * own small account of the protocol (the "shadow": who holds each lock
 * until when, who waits in which order, what each client was told, what
 * the disk holds) and checks that the table agrees with that account.
 *
 * The core has no copy function, so a state is rebuilt by replaying its
 * action prefix on a fresh table.  States are merged by a canonical
 * encoding of everything that decides the future: the clock, the shadow,
 * the durable records, every client's knowledge and pending request, and
 * the table itself (holders, queues, timers, the heap's layout, sessions'
 * bindings).  The number of complete schedules is counted through the
 * merged state graph, so it is exact although each state is run once.
 *
 * Durability is modelled as the daemon must implement it: after every
 * action the model drains core_table_changes onto its "disk" and only then
 * delivers GRANTED and RENEWED; other replies go out at once.  A crash
 * destroys the table (waiters and sessions are gone) and recovers from the
 * disk.  It strikes between two actions, after an action's commit but
 * before its GRANTED and RENEWED go out, or before the commit, which loses
 * the action's changes too.
 *
 * Nothing here may change core/: broken rules come from variants.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/model/model.h"

#define NOBODY 0xff
#define MAX_DEPTH 64
#define MAX_LOG 64
#define MAX_ACTIONS (5 * MODEL_CLIENTS + 8)
#define ENCODING_MAX 2048

/* Actions: a client's next op (its index), or one of these. */
enum {
	ACT_CLOCK = 0x40,
	ACT_TICK = 0x41,
	ACT_CRASH = 0x42,
	ACT_UNSENT = 0x20, /* flag: the action, its commit, then a crash
			      before its replies go out */
	ACT_LOST = 0x80,   /* flag: the action, then a crash before commit */
	ACT_FAILED = 0x10, /* flag: the action, then its commit fails */
	ACT_FLAGS = ACT_UNSENT | ACT_LOST | ACT_FAILED
};

const char *
model_property_name(enum model_property p)
{
	static const char *const names[MODEL_PROPERTIES] = {
		"none",
		"FencingMonotonic",
		"MutualExclusion",
		"StaleTokenRejection",
		"LeaseReclamationSafety",
		"FifoFairness",
		"NoStarvation",
		"ShadowAgreement",
	};

	return (unsigned)p < MODEL_PROPERTIES ? names[p] : "?";
}

const char *
model_coverage_name(enum model_coverage c)
{
	static const char *const names[MODEL_COVERAGE] = {
		"grant at once",
		"hand-off on release",
		"hand-off on reclaim by tick",
		"hand-off on reclaim by an op",
		"hand-off on disconnect",
		"reclaim at exactly the expiry",
		"wait timeout",
		"renewed",
		"stale renew",
		"stale release",
		"forged renew",
		"forged release",
		"TRY granted",
		"TRY held",
		"waiter disconnect",
		"onclose holder disconnect",
		"crash",
		"crash before commit lost a reply",
		"crash after commit lost a reply",
		"failed commit answered UNAVAILABLE",
		"fall-back handed a lock on",
		"lease survived a restart",
		"onclose lease released by restart",
		"expired lease reclaimed by restart",
		"lost fence minted again",
	};

	return (unsigned)c < MODEL_COVERAGE ? names[c] : "?";
}

/* ---- the model's state ------------------------------------------------ */

/* What a client knows about one lock: its last handle and how long it
 * believes it holds the lock. */
struct knowledge {
	bool has_handle;
	struct core_handle handle;
	bool believes;
	core_time until;
	bool onclose;
};

struct client {
	uint8_t pc;               /* its next op */
	bool gone;                /* disconnected for good */
	bool queued;              /* in the shadow queue of req_name */
	uint64_t req_tag;         /* the request awaiting its reply; 0: none */
	uint8_t req_kind, req_name;
	struct core_handle req_handle;
	int64_t req_lease;        /* the effective lease */
	bool req_onclose;
	core_time deadline;       /* a queued finite wait ends here */
	uint64_t left_tag;        /* its last request that left the queue */
	struct knowledge know[MODEL_NAMES];
};

/* The checker's own account of one lock. */
struct shadow {
	bool held;
	uint8_t holder;           /* a client, or NOBODY */
	bool onclose;
	uint64_t fence, secret;
	core_time expiry;
	int64_t lease_ms;
	uint8_t qlen;
	uint8_t queue[MODEL_CLIENTS];
	uint64_t max_delivered;   /* the largest fence a client was given */
};

struct disk_record {
	bool present;
	uint8_t holder;           /* the model's note, not on the real disk */
	struct core_record rec;
};

/* A durable reply waiting for its commit. */
struct delivery {
	uint8_t client, name;
	uint64_t tag;
	enum core_reply_kind kind;
	struct core_handle handle;
	core_time until;
	bool onclose;
};

struct logged {
	struct core_reply r;
	uint8_t name;
};

struct sys {
	const struct model_scenario *sc;
	const struct core_rules *rules;
	enum model_harness harness;
	struct core_config config;
	struct core_table table;
	bool live;
	struct core_session sess[MODEL_CLIENTS];
	uint8_t clock;
	core_time now;
	uint8_t crashes, boot, failures;
	struct client cl[MODEL_CLIENTS];
	struct shadow sh[MODEL_NAMES];
	struct disk_record disk[MODEL_NAMES];
	uint64_t disk_hwm;

	/* Within one step. */
	struct logged log[MAX_LOG];
	size_t nlog;
	struct delivery pending[MAX_LOG];
	size_t npending;
	int acting;               /* the client whose op this step runs */
	int closing;              /* the client being disconnected */
	bool restoring;           /* recovery after a crash */
	bool falling_back;        /* core_table_restore after a failed commit */
	bool touched[MODEL_NAMES];
	bool stale_op;            /* the op carried a non-current handle */
	size_t records;           /* reported by the last drain */
	bool hwm_moved;
	uint8_t action;           /* the step's action, without ACT_FLAGS */
	int last_end;             /* the last lease end in the log, or -1 */
	uint32_t cov;             /* enum model_coverage bits of the step */
	uint64_t lost_fence;      /* the largest fence lost in a crash; not
				     part of the state, only for coverage */

	enum model_property violated;
	char why[256];
};

static void violate(struct sys *s, enum model_property p, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static void
violate(struct sys *s, enum model_property p, const char *fmt, ...)
{
	va_list ap;

	if (s->violated != MODEL_OK)
		return;
	s->violated = p;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

static void
cover(struct sys *s, enum model_coverage c)
{
	s->cov |= 1u << c;
}

static char
label(const struct sys *s, int c)
{
	return c >= 0 && c < s->sc->nclients ? s->sc->clients[c].label : '?';
}

static const char *
lock_name(const struct sys *s, int n)
{
	return n < s->sc->nnames ? s->sc->names[n] : "?";
}

/* ---- the seams handed to the core ------------------------------------- */

static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* Secrets are a function of the boot and the fence about to be minted, so
 * that equal states have equal secrets and the search can merge them. */
static uint64_t
model_secret(void *ctx)
{
	struct sys *s = ctx;

	return mix64(((uint64_t)s->boot << 56) ^ (s->table.hwm + 1)) | 1;
}

static void
model_sink(void *ctx, const struct core_reply *r)
{
	struct sys *s = ctx;
	struct logged *l;
	uint8_t n;

	if (s->nlog == MAX_LOG) {
		violate(s, MODEL_SHADOW_AGREEMENT, "more than %d replies in "
		    "one step", MAX_LOG);
		return;
	}
	l = &s->log[s->nlog++];
	l->r = *r;
	l->name = NOBODY;
	for (n = 0; r->name != NULL && n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == r->name_len &&
		    memcmp(s->sc->names[n], r->name, r->name_len) == 0)
			l->name = n;
	l->r.name = NULL;
}

static int
client_of(const struct sys *s, const struct core_session *session)
{
	int c;

	for (c = 0; c < s->sc->nclients; c++)
		if (session == &s->sess[c])
			return c;
	return -1;
}

static void
table_start(struct sys *s)
{
	struct core_sink sink = { model_sink, s };
	int c;

	if (core_table_init(&s->table, &s->config, s->rules, sink) != CORE_OK)
		abort();
	for (c = 0; c < s->sc->nclients; c++)
		core_session_init(&s->sess[c], (uint64_t)c);
	s->live = true;
}

static void
sys_init(struct sys *s, const struct model_scenario *sc,
    const struct core_rules *rules, enum model_harness harness)
{
	int c, n;

	memset(s, 0, sizeof(*s));
	s->sc = sc;
	s->rules = rules;
	s->harness = harness;
	core_config_defaults(&s->config);
	s->config.secret = model_secret;
	s->config.secret_ctx = s;
	s->config.hash_key[0] = 0x6c6f636b64ULL;
	s->config.hash_key[1] = 0x6d6f64656cULL;
	s->now = sc->times[0];
	for (c = 0; c < MODEL_CLIENTS; c++)
		s->cl[c].deadline = CORE_NEVER;
	for (n = 0; n < MODEL_NAMES; n++)
		s->sh[n].holder = NOBODY;
	table_start(s);
}

static void
sys_fini(struct sys *s)
{
	if (s->live)
		core_table_destroy(&s->table);
	s->live = false;
}

/* ---- the shadow ------------------------------------------------------- */

static void
request_done(struct client *m)
{
	m->req_tag = 0;
	m->req_kind = 0;
	m->req_name = 0;
	memset(&m->req_handle, 0, sizeof(m->req_handle));
	m->req_lease = 0;
	m->req_onclose = false;
	m->queued = false;
	m->deadline = CORE_NEVER;
}

static void
shadow_free(struct shadow *sh)
{
	sh->held = false;
	sh->holder = NOBODY;
	sh->onclose = false;
	sh->fence = sh->secret = 0;
	sh->expiry = 0;
	sh->lease_ms = 0;
}

static void
queue_remove(struct shadow *sh, int c)
{
	int i, j;

	for (i = j = 0; i < sh->qlen; i++)
		if (sh->queue[i] != c)
			sh->queue[j++] = sh->queue[i];
	sh->qlen = (uint8_t)j;
}

/* Is h the live holder's handle of lock n right now? */
static bool
handle_current(const struct sys *s, int n, struct core_handle h)
{
	const struct shadow *sh = &s->sh[n];

	return sh->held && sh->fence == h.fence && sh->secret == h.secret &&
	    s->now < sh->expiry;
}

/* The reply must answer the client's pending request. */
static struct client *
answering(struct sys *s, const struct logged *l, int *cp)
{
	int c = client_of(s, l->r.session);
	struct client *m;

	*cp = c;
	if (c < 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "reply %d to no client",
		    (int)l->r.kind);
		return NULL;
	}
	m = &s->cl[c];
	if (m->req_tag == 0 || m->req_tag != l->r.tag || l->name !=
	    m->req_name) {
		if (l->r.kind == CORE_REPLY_GRANTED && m->left_tag != 0 &&
		    l->r.tag == m->left_tag)
			violate(s, MODEL_FIFO_FAIRNESS, "%c granted %s after "
			    "it left the queue", label(s, c),
			    lock_name(s, l->name));
		else
			violate(s, MODEL_SHADOW_AGREEMENT, "reply %d to %c "
			    "answers no pending request", (int)l->r.kind,
			    label(s, c));
		return NULL;
	}
	return m;
}

static void
on_granted(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	struct delivery *d;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	if (m->req_kind != MODEL_ACQUIRE && m->req_kind != MODEL_TRY) {
		violate(s, MODEL_SHADOW_AGREEMENT, "GRANTED answers %c's "
		    "op %d", label(s, c), m->req_kind);
		return;
	}
	sh = &s->sh[l->name];
	if (m->queued) {
		if (m->deadline < s->now) {
			violate(s, MODEL_FIFO_FAIRNESS, "%c granted %s at %lld, "
			    "after its wait ended at %lld", label(s, c),
			    lock_name(s, l->name), (long long)s->now,
			    (long long)m->deadline);
			return;
		}
		if (sh->qlen == 0 || sh->queue[0] != c) {
			violate(s, MODEL_FIFO_FAIRNESS, "%s handed to %c "
			    "while %c waits ahead of it", lock_name(s,
			    l->name), label(s, c), label(s, sh->queue[0]));
			return;
		}
		queue_remove(sh, c);
		if (s->last_end == CORE_REPLY_RELEASED)
			cover(s, MODEL_COV_HANDOFF_ON_RELEASE);
		else if (s->last_end == CORE_EVENT_RELEASED_ONCLOSE)
			cover(s, MODEL_COV_HANDOFF_ON_DISCONNECT);
		else if (s->last_end == CORE_EVENT_RECLAIMED)
			cover(s, s->action == ACT_TICK ?
			    MODEL_COV_HANDOFF_ON_TICK : MODEL_COV_HANDOFF_ON_OP);
	} else if (sh->qlen > 0) {
		violate(s, MODEL_FIFO_FAIRNESS, "%c granted %s at once past "
		    "%d waiter(s)", label(s, c), lock_name(s, l->name),
		    sh->qlen);
		return;
	}
	if (sh->held) {
		violate(s, MODEL_MUTUAL_EXCLUSION, "%s granted to %c (fence "
		    "%llu) at %lld while fence %llu is held until %lld",
		    lock_name(s, l->name), label(s, c),
		    (unsigned long long)l->r.fence, (long long)s->now,
		    (unsigned long long)sh->fence, (long long)sh->expiry);
		return;
	}
	if (l->r.lease_ms != m->req_lease || l->r.fence == 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "GRANTED lease %lld fence "
		    "%llu, asked %lld", (long long)l->r.lease_ms,
		    (unsigned long long)l->r.fence, (long long)m->req_lease);
		return;
	}
	if (!m->queued)
		cover(s, m->req_kind == MODEL_TRY ? MODEL_COV_TRY_GRANTED :
		    MODEL_COV_GRANT_AT_ONCE);
	sh->held = true;
	sh->holder = (uint8_t)c;
	sh->onclose = m->req_onclose;
	sh->fence = l->r.fence;
	sh->secret = l->r.secret;
	sh->expiry = s->now + l->r.lease_ms;
	sh->lease_ms = l->r.lease_ms;
	if (s->falling_back)
		cover(s, MODEL_COV_FALLBACK_HANDOFF);
	d = &s->pending[s->npending++];
	d->client = (uint8_t)c;
	d->name = l->name;
	d->tag = m->req_tag;
	d->kind = CORE_REPLY_GRANTED;
	d->handle.fence = l->r.fence;
	d->handle.secret = l->r.secret;
	d->until = sh->expiry;
	d->onclose = m->req_onclose;
	request_done(m);
}

static void
on_renewed(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	struct delivery *d;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	s->stale_op = !handle_current(s, l->name, m->req_handle);
	if (m->req_kind != MODEL_RENEW && m->req_kind != MODEL_FORGE_RENEW) {
		violate(s, MODEL_SHADOW_AGREEMENT, "RENEWED answers op %d",
		    m->req_kind);
		return;
	}
	if (s->stale_op) {
		violate(s, MODEL_STALE_TOKEN_REJECTION, "%c renewed %s with "
		    "the stale handle %llu-%llx at %lld", label(s, c),
		    lock_name(s, l->name),
		    (unsigned long long)m->req_handle.fence,
		    (unsigned long long)m->req_handle.secret,
		    (long long)s->now);
		return;
	}
	if (l->r.lease_ms != m->req_lease || l->r.fence != sh->fence) {
		violate(s, MODEL_SHADOW_AGREEMENT, "RENEWED lease %lld fence "
		    "%llu", (long long)l->r.lease_ms,
		    (unsigned long long)l->r.fence);
		return;
	}
	sh->expiry = s->now + l->r.lease_ms;
	sh->lease_ms = l->r.lease_ms;
	cover(s, MODEL_COV_RENEWED);
	d = &s->pending[s->npending++];
	d->client = (uint8_t)c;
	d->name = l->name;
	d->tag = m->req_tag;
	d->kind = CORE_REPLY_RENEWED;
	d->handle = m->req_handle;
	d->until = sh->expiry;
	d->onclose = sh->onclose;
	request_done(m);
}

static void
on_released(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	s->stale_op = !handle_current(s, l->name, m->req_handle);
	if (m->req_kind != MODEL_RELEASE &&
	    m->req_kind != MODEL_FORGE_RELEASE) {
		violate(s, MODEL_SHADOW_AGREEMENT, "RELEASED answers op %d",
		    m->req_kind);
		return;
	}
	if (s->stale_op) {
		violate(s, MODEL_STALE_TOKEN_REJECTION, "%c released %s "
		    "(held by fence %llu) with the stale handle %llu-%llx at "
		    "%lld", label(s, c), lock_name(s, l->name),
		    (unsigned long long)sh->fence,
		    (unsigned long long)m->req_handle.fence,
		    (unsigned long long)m->req_handle.secret,
		    (long long)s->now);
		return;
	}
	/* RELEASED is not durable: the client hears it at once. */
	if (sh->holder == c)
		s->cl[c].know[l->name].believes = false;
	shadow_free(sh);
	s->last_end = CORE_REPLY_RELEASED;
	request_done(m);
}

/* NOTHELD or CONFLICT: right only for a stale handle. */
static void
on_refused(struct sys *s, const struct logged *l, enum model_op_kind k1,
    enum model_op_kind k2)
{
	struct client *m;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	if (m->req_kind != k1 && m->req_kind != k2) {
		violate(s, MODEL_SHADOW_AGREEMENT, "reply %d answers op %d",
		    (int)l->r.kind, m->req_kind);
		return;
	}
	if (handle_current(s, l->name, m->req_handle)) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c's current handle of "
		    "%s refused (%d)", label(s, c), lock_name(s, l->name),
		    (int)l->r.kind);
		return;
	}
	s->stale_op = true;
	cover(s, m->req_kind == MODEL_RENEW ? MODEL_COV_STALE_RENEW :
	    m->req_kind == MODEL_RELEASE ? MODEL_COV_STALE_RELEASE :
	    m->req_kind == MODEL_FORGE_RENEW ? MODEL_COV_FORGED_RENEW :
	    MODEL_COV_FORGED_RELEASE);
	request_done(m);
}

static void
on_held(struct sys *s, const struct logged *l)
{
	struct client *m;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	if (m->req_kind != MODEL_TRY) {
		violate(s, MODEL_SHADOW_AGREEMENT, "HELD answers op %d",
		    m->req_kind);
		return;
	}
	if (!s->sh[l->name].held && s->sh[l->name].qlen == 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "TRY of the free %s "
		    "answered HELD", lock_name(s, l->name));
		return;
	}
	cover(s, MODEL_COV_TRY_HELD);
	request_done(m);
}

static void
on_timeout(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	if (m->req_kind != MODEL_ACQUIRE) {
		violate(s, MODEL_SHADOW_AGREEMENT, "TIMEOUT answers op %d",
		    m->req_kind);
		return;
	}
	if (m->queued) {
		if (m->deadline > s->now) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%c timed out at "
			    "%lld before its deadline %lld", label(s, c),
			    (long long)s->now, (long long)m->deadline);
			return;
		}
		queue_remove(sh, c);
		cover(s, MODEL_COV_WAIT_TIMEOUT);
	} else if (!sh->held && sh->qlen == 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "wait=0 on the free %s "
		    "answered TIMEOUT", lock_name(s, l->name));
		return;
	}
	m->left_tag = m->req_tag;
	request_done(m);
}

static void
on_lease_end(struct sys *s, const struct logged *l)
{
	struct shadow *sh = &s->sh[l->name];

	if (l->name == NOBODY || !sh->held || sh->fence != l->r.fence) {
		violate(s, MODEL_SHADOW_AGREEMENT, "event %d for fence %llu "
		    "of %s, which is not its holder", (int)l->r.kind,
		    (unsigned long long)l->r.fence, lock_name(s, l->name));
		return;
	}
	if (l->r.kind == CORE_EVENT_RECLAIMED) {
		if (s->now < sh->expiry) {
			violate(s, MODEL_LEASE_RECLAMATION_SAFETY, "fence %llu "
			    "of %s reclaimed at %lld, before its expiry %lld",
			    (unsigned long long)sh->fence,
			    lock_name(s, l->name), (long long)s->now,
			    (long long)sh->expiry);
			return;
		}
		if (s->restoring)
			cover(s, MODEL_COV_RESTORED_EXPIRED);
		else if (s->action == ACT_TICK && s->now == sh->expiry)
			cover(s, MODEL_COV_RECLAIM_AT_EXPIRY);
	} else {
		if (!sh->onclose || (!s->restoring && !s->falling_back &&
		    (s->closing < 0 || sh->holder != s->closing))) {
			violate(s, MODEL_SHADOW_AGREEMENT, "fence %llu of %s "
			    "released on close of a session that does not "
			    "hold it", (unsigned long long)sh->fence,
			    lock_name(s, l->name));
			return;
		}
		cover(s, s->restoring ? MODEL_COV_RESTORED_ONCLOSE :
		    MODEL_COV_ONCLOSE_DISCONNECT);
	}
	s->last_end = l->r.kind;
	shadow_free(sh);
}

/* Checks and applies the step's replies in the order the core made them. */
static void
process_log(struct sys *s)
{
	size_t i;

	for (i = 0; i < s->nlog && s->violated == MODEL_OK; i++) {
		const struct logged *l = &s->log[i];

		switch (l->r.kind) {
		case CORE_REPLY_GRANTED:
			on_granted(s, l);
			break;
		case CORE_REPLY_RENEWED:
			on_renewed(s, l);
			break;
		case CORE_REPLY_RELEASED:
			on_released(s, l);
			break;
		case CORE_REPLY_NOTHELD:
			on_refused(s, l, MODEL_RELEASE, MODEL_FORGE_RELEASE);
			break;
		case CORE_REPLY_CONFLICT:
			on_refused(s, l, MODEL_RENEW, MODEL_FORGE_RENEW);
			break;
		case CORE_REPLY_HELD:
			on_held(s, l);
			break;
		case CORE_REPLY_TIMEOUT:
			on_timeout(s, l);
			break;
		case CORE_EVENT_RECLAIMED:
		case CORE_EVENT_RELEASED_ONCLOSE:
			on_lease_end(s, l);
			break;
		default:
			violate(s, MODEL_SHADOW_AGREEMENT, "unexpected reply "
			    "%d", (int)l->r.kind);
			break;
		}
	}
}

/* ---- durability ------------------------------------------------------- */

static void
on_record(void *ctx, const char *name, size_t name_len,
    const struct core_record *rec)
{
	struct sys *s = ctx;
	struct disk_record *d;
	uint8_t n;

	for (n = 0; n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == name_len &&
		    memcmp(s->sc->names[n], name, name_len) == 0)
			break;
	if (n == s->sc->nnames) {
		violate(s, MODEL_SHADOW_AGREEMENT, "a record for no lock");
		return;
	}
	d = &s->disk[n];
	memset(d, 0, sizeof(*d));
	d->holder = NOBODY;
	if (rec != NULL) {
		d->present = true;
		d->rec = *rec;
		if (s->sh[n].held && s->sh[n].fence == rec->fence)
			d->holder = s->sh[n].holder;
	}
}

/* Delivers a durable reply after its commit. */
static void
deliver(struct sys *s, const struct delivery *d)
{
	struct shadow *sh = &s->sh[d->name];
	struct knowledge *k = &s->cl[d->client].know[d->name];
	int c;

	if (d->kind == CORE_REPLY_GRANTED) {
		if (d->handle.fence <= sh->max_delivered) {
			violate(s, MODEL_FENCING_MONOTONIC, "%c was given "
			    "fence %llu for %s after fence %llu",
			    label(s, d->client),
			    (unsigned long long)d->handle.fence,
			    lock_name(s, d->name),
			    (unsigned long long)sh->max_delivered);
			return;
		}
		sh->max_delivered = d->handle.fence;
		if (d->handle.fence <= s->lost_fence)
			cover(s, MODEL_COV_FENCE_REMINTED);
	}
	for (c = 0; c < s->sc->nclients; c++) {
		const struct knowledge *o = &s->cl[c].know[d->name];

		if (c != d->client && o->believes && o->until > s->now) {
			violate(s, MODEL_MUTUAL_EXCLUSION, "%c holds %s from "
			    "%lld (fence %llu) while %c holds it until %lld "
			    "(fence %llu)", label(s, d->client),
			    lock_name(s, d->name), (long long)s->now,
			    (unsigned long long)d->handle.fence, label(s, c),
			    (long long)o->until,
			    (unsigned long long)o->handle.fence);
			return;
		}
	}
	k->has_handle = true;
	k->handle = d->handle;
	k->believes = true;
	k->until = d->until;
	k->onclose = d->onclose;
}

static void
deliver_pending(struct sys *s)
{
	size_t i;

	for (i = 0; i < s->npending && s->violated == MODEL_OK; i++)
		deliver(s, &s->pending[i]);
	s->npending = 0;
}

/* Commits the step's changes to the disk, then (unless the daemon dies
 * first) lets its durable replies out. */
static void
commit(struct sys *s, bool send)
{
	s->hwm_moved = false;
	s->records = core_table_changes(&s->table, on_record, s,
	    &s->hwm_moved);
	if (s->hwm_moved && !(s->harness & MODEL_HARNESS_FORGET_HWM))
		s->disk_hwm = s->table.hwm;
	if (send)
		deliver_pending(s);
}

/* The shadow of lock n falls back to what the disk holds. */
static void
shadow_from_disk(struct sys *s, int n)
{
	struct shadow *sh = &s->sh[n];
	const struct disk_record *d = &s->disk[n];

	shadow_free(sh);
	if (d->present) {
		sh->held = true;
		sh->holder = d->holder;
		sh->onclose = d->rec.onclose_release;
		sh->fence = d->rec.fence;
		sh->secret = d->rec.secret;
		sh->expiry = d->rec.expiry;
		sh->lease_ms = d->rec.lease_ms;
	}
}

static void
on_touched(void *ctx, const char *name, size_t name_len,
    const struct core_record *rec)
{
	struct sys *s = ctx;
	int n;

	(void)rec;
	for (n = 0; n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == name_len &&
		    memcmp(s->sc->names[n], name, name_len) == 0)
			s->touched[n] = true;
}

/*
 * The commit of the step's batch failed.  As the daemon does: its GRANTED
 * and RENEWED become UNAVAILABLE, every lock it touched falls back to the
 * disk, and the retry commits whatever the fall-back did (a lock that fell
 * back to free goes to its head waiter).
 */
static void
fail_commit(struct sys *s)
{
	size_t i;
	int n;

	memset(s->touched, 0, sizeof(s->touched));
	core_table_changes(&s->table, on_touched, s, NULL);
	for (i = 0; i < s->npending; i++) {
		cover(s, MODEL_COV_COMMIT_FAILED);
		/* Answered: a later GRANTED for it would be a second one. */
		s->cl[s->pending[i].client].left_tag = s->pending[i].tag;
	}
	s->npending = 0;
	s->failures++;
	s->nlog = 0;
	s->falling_back = true;
	for (n = 0; n < s->sc->nnames; n++)
		if (s->touched[n])
			shadow_from_disk(s, n);
	for (n = 0; n < s->sc->nnames; n++)
		if (s->touched[n])
			core_table_restore(&s->table, s->sc->names[n],
			    strlen(s->sc->names[n]), s->disk[n].present ?
			    &s->disk[n].rec : NULL, s->now);
	process_log(s);
	s->falling_back = false;
	if (s->violated == MODEL_OK)
		commit(s, true);
}

/* The connection of every client closes; the daemon restarts from disk.
 * Replies not yet sent are lost, and with them, when `committed` is false,
 * the changes they report. */
static void
crash(struct sys *s, bool committed)
{
	int c, n;

	core_table_destroy(&s->table);
	s->live = false;
	cover(s, MODEL_COV_CRASH);
	for (c = 0; c < (int)s->npending; c++) {
		cover(s, committed ? MODEL_COV_CRASH_BEFORE_REPLY :
		    MODEL_COV_CRASH_BEFORE_COMMIT);
		if (!committed && s->pending[c].kind == CORE_REPLY_GRANTED &&
		    s->pending[c].handle.fence > s->lost_fence)
			s->lost_fence = s->pending[c].handle.fence;
	}
	s->npending = 0;
	s->nlog = 0;
	for (c = 0; c < s->sc->nclients; c++) {
		struct client *m = &s->cl[c];

		if (m->req_tag != 0 && m->queued)
			m->left_tag = m->req_tag;
		request_done(m);
		/* A lease bound to the connection is gone with it. */
		for (n = 0; n < s->sc->nnames; n++)
			if (m->know[n].onclose)
				m->know[n].believes = false;
	}
	for (n = 0; n < s->sc->nnames; n++) {
		s->sh[n].qlen = 0;
		shadow_from_disk(s, n);
	}
	s->crashes++;
	s->boot++;

	table_start(s);
	core_table_restore_hwm(&s->table, s->disk_hwm);
	s->restoring = true;
	for (n = 0; n < s->sc->nnames; n++)
		if (s->disk[n].present)
			core_table_restore(&s->table, s->sc->names[n],
			    strlen(s->sc->names[n]), &s->disk[n].rec, s->now);
	process_log(s);
	s->restoring = false;
	for (n = 0; n < s->sc->nnames; n++)
		if (s->sh[n].held)
			cover(s, MODEL_COV_RESTORED_HOLDER);
	if (s->violated == MODEL_OK)
		commit(s, true);
}

/* ---- client ops ------------------------------------------------------- */

static void
run_op(struct sys *s, int c)
{
	struct client *m = &s->cl[c];
	const struct model_op *op = &s->sc->clients[c].ops[m->pc];
	const char *name = s->sc->names[op->name];
	size_t len = strlen(name);
	struct shadow *sh = &s->sh[op->name];
	struct core_acquire_args args;
	uint64_t tag = ((uint64_t)(c + 1) << 8) | m->pc;
	int64_t lease = 0;
	int n;

	m->pc++;
	s->acting = c;
	if (op->kind != MODEL_DISCONNECT) {
		m->req_tag = tag;
		m->req_kind = (uint8_t)op->kind;
		m->req_name = op->name;
		if (core_lease_effective(&s->config, op->lease_ms, &lease) !=
		    CORE_OK)
			lease = 0;
		m->req_lease = lease;
		m->req_onclose = op->onclose;
	}
	switch (op->kind) {
	case MODEL_ACQUIRE:
		args.lease_ms = op->lease_ms;
		args.wait_ms = op->wait_ms;
		args.onclose_release = op->onclose;
		core_acquire(&s->table, &s->sess[c], name, len, &args, tag,
		    s->now);
		break;
	case MODEL_TRY:
		core_try(&s->table, &s->sess[c], name, len, op->lease_ms,
		    op->onclose, tag, s->now);
		break;
	case MODEL_RENEW:
	case MODEL_RELEASE:
		m->req_handle = m->know[op->name].handle;
		if (op->kind == MODEL_RENEW)
			core_renew(&s->table, &s->sess[c], name, len,
			    m->req_handle, op->lease_ms, tag, s->now);
		else
			core_release(&s->table, &s->sess[c], name, len,
			    m->req_handle, tag, s->now);
		break;
	case MODEL_FORGE_RENEW:
	case MODEL_FORGE_RELEASE:
		/* STATUS shows anyone the fence; the secret is a guess. */
		m->req_handle.fence = sh->held ? sh->fence :
		    sh->max_delivered ? sh->max_delivered : 1;
		m->req_handle.secret = sh->secret ^ 0xf0f0f0f0f0f0f0f0ULL;
		if (op->kind == MODEL_FORGE_RENEW)
			core_renew(&s->table, &s->sess[c], name, len,
			    m->req_handle, op->lease_ms, tag, s->now);
		else
			core_release(&s->table, &s->sess[c], name, len,
			    m->req_handle, tag, s->now);
		break;
	case MODEL_DISCONNECT:
		/* Its waiter leaves without a reply; its onclose leases go. */
		if (m->req_tag != 0 && m->queued) {
			queue_remove(&s->sh[m->req_name], c);
			m->left_tag = m->req_tag;
			cover(s, MODEL_COV_WAITER_DISCONNECT);
		}
		request_done(m);
		m->gone = true;
		m->pc = s->sc->clients[c].nops;
		for (n = 0; n < s->sc->nnames; n++)
			if (m->know[n].onclose)
				m->know[n].believes = false;
		s->closing = c;
		core_disconnect(&s->table, &s->sess[c], s->now);
		break;
	}
}

/* After the replies: an ACQUIRE still pending has joined the queue. */
static void
settle_op(struct sys *s)
{
	struct client *m;
	const struct model_op *op;

	if (s->acting < 0 || s->violated != MODEL_OK)
		return;
	m = &s->cl[s->acting];
	if (m->req_tag == 0 || m->queued)
		return;
	op = &s->sc->clients[s->acting].ops[m->pc - 1];
	if (op->kind != MODEL_ACQUIRE) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c's op %d was not "
		    "answered", label(s, s->acting), (int)op->kind);
		return;
	}
	if (op->wait_ms == 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c's wait=0 was queued",
		    label(s, s->acting));
		return;
	}
	m->queued = true;
	m->deadline = op->wait_ms > 0 ? s->now + op->wait_ms : CORE_NEVER;
	s->sh[op->name].queue[s->sh[op->name].qlen++] = (uint8_t)s->acting;
}

/* Ops that cannot run (a renew with no handle ever received) are skipped,
 * so that every schedule ends with every script done. */
static void
skip_dead_ops(struct sys *s)
{
	int c;

	for (c = 0; c < s->sc->nclients; c++) {
		struct client *m = &s->cl[c];
		const struct model_client *mc = &s->sc->clients[c];

		while (!m->gone && m->req_tag == 0 && m->pc < mc->nops &&
		    (mc->ops[m->pc].kind == MODEL_RENEW ||
		    mc->ops[m->pc].kind == MODEL_RELEASE) &&
		    !m->know[mc->ops[m->pc].name].has_handle)
			m->pc++;
	}
}

/* ---- agreement -------------------------------------------------------- */

/* Does the table's view of lock n agree with the shadow? */
static bool
table_agrees(struct sys *s, int n, char *why, size_t whylen)
{
	const char *name = s->sc->names[n];
	const struct core_entry *e = core_table_find(&s->table, name,
	    strlen(name));
	const struct shadow *sh = &s->sh[n];
	const struct core_link *l;
	int i = 0;

	if (!sh->held) {
		if (e != NULL && e->lock.fence != 0) {
			snprintf(why, whylen, "%s: the table holds fence %llu, "
			    "the model says free", name,
			    (unsigned long long)e->lock.fence);
			return false;
		}
		if (e != NULL && e->timer.slot != UINT32_MAX) {
			snprintf(why, whylen, "%s: a free lock has a lease "
			    "timer", name);
			return false;
		}
	} else {
		if (e == NULL || e->lock.fence != sh->fence ||
		    e->lock.secret != sh->secret ||
		    e->lock.expiry != sh->expiry) {
			snprintf(why, whylen, "%s: the table holds fence %llu "
			    "until %lld, the model fence %llu until %lld",
			    name, e ? (unsigned long long)e->lock.fence : 0,
			    e ? (long long)e->lock.expiry : 0,
			    (unsigned long long)sh->fence,
			    (long long)sh->expiry);
			return false;
		}
		if (e->owner != (sh->onclose && sh->holder != NOBODY ?
		    &s->sess[sh->holder] : NULL)) {
			snprintf(why, whylen, "%s: bound to the wrong session",
			    name);
			return false;
		}
		if (e->timer.slot == UINT32_MAX ||
		    e->timer.when != sh->expiry) {
			snprintf(why, whylen, "%s: the lease timer is not at "
			    "the expiry", name);
			return false;
		}
	}
	if (e == NULL) {
		if (sh->qlen != 0) {
			snprintf(why, whylen, "%s: the table has no queue, the "
			    "model %d waiters", name, sh->qlen);
			return false;
		}
		return true;
	}
	for (l = e->queue.next; l != &e->queue; l = l->next, i++) {
		const struct core_waiter *w = (const void *)((const char *)l -
		    offsetof(struct core_waiter, queue_link));
		int c = client_of(s, w->session);
		const struct client *m = c >= 0 ? &s->cl[c] : NULL;

		if (i >= sh->qlen || c != sh->queue[i] || !m->queued ||
		    w->tag != m->req_tag) {
			snprintf(why, whylen, "%s: waiter %d of the table is "
			    "not the model's", name, i);
			return false;
		}
		if (m->deadline == CORE_NEVER ?
		    w->timer.slot != UINT32_MAX :
		    (w->timer.slot == UINT32_MAX ||
		    w->timer.when != m->deadline)) {
			snprintf(why, whylen, "%s: %c's wait timer is wrong",
			    name, label(s, c));
			return false;
		}
	}
	if (i != sh->qlen || i != (int)e->queue_len) {
		snprintf(why, whylen, "%s: the table has %d waiters, the "
		    "model %d", name, i, sh->qlen);
		return false;
	}
	return true;
}

/* Everything the table, the disk and the shadow must agree on after a
 * committed step. */
static void
check_agreement(struct sys *s)
{
	char why[200];
	int n;

	for (n = 0; n < s->sc->nnames && s->violated == MODEL_OK; n++) {
		const struct shadow *sh = &s->sh[n];
		const struct disk_record *d = &s->disk[n];
		const char *name = s->sc->names[n];
		const struct core_entry *e;

		if (!table_agrees(s, n, why, sizeof(why))) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s", why);
			return;
		}
		e = core_table_find(&s->table, name, strlen(name));
		if ((e != NULL) != (sh->held || sh->qlen > 0)) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s: idle entry kept "
			    "or busy entry missing", name);
			return;
		}
		if (d->present != sh->held || (d->present &&
		    (d->rec.fence != sh->fence ||
		    d->rec.secret != sh->secret ||
		    d->rec.expiry != sh->expiry ||
		    d->rec.lease_ms != sh->lease_ms ||
		    d->rec.onclose_release != sh->onclose))) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s: the disk "
			    "disagrees with the committed state", name);
			return;
		}
	}
	/* The durability of the counter is not checked here: that is
	 * FencingMonotonic's business, on every grant, across crashes. */
}

/* ---- one step --------------------------------------------------------- */

static void
step(struct sys *s, uint8_t action)
{
	uint8_t base = action & (uint8_t)~ACT_FLAGS;
	bool lost = (action & ACT_LOST) != 0;
	bool unsent = (action & ACT_UNSENT) != 0;
	bool failed = (action & ACT_FAILED) != 0;
	int n, op_name = -1;

	s->nlog = 0;
	s->npending = 0;
	s->acting = -1;
	s->closing = -1;
	s->stale_op = false;
	s->records = 0;
	s->hwm_moved = false;
	s->action = base;
	s->last_end = -1;
	s->cov = 0;

	switch (base) {
	case ACT_CLOCK:
		s->clock++;
		s->now = s->sc->times[s->clock];
		return;
	case ACT_CRASH:
		crash(s, true);
		break;
	case ACT_TICK:
		core_tick(&s->table, s->now);
		break;
	default:
		op_name = s->sc->clients[base].ops[s->cl[base].pc].name;
		run_op(s, base);
		break;
	}
	if (base != ACT_CRASH) {
		process_log(s);
		settle_op(s);
		if (s->violated != MODEL_OK)
			return;
		/* A stale handle changes nothing but what the implicit
		 * reclaim does, and the shadow has that. */
		if (s->stale_op) {
			char why[200];

			if (!table_agrees(s, op_name, why, sizeof(why))) {
				violate(s, MODEL_STALE_TOKEN_REJECTION, "a stale "
				    "handle changed the lock: %s", why);
				return;
			}
		}
		if (s->harness & MODEL_HARNESS_DELIVER_FIRST)
			deliver_pending(s);
		if (s->violated != MODEL_OK)
			return;
		if (lost)
			crash(s, false);
		else if (failed)
			fail_commit(s);
		else {
			commit(s, !unsent);
			if (s->stale_op && s->nlog == 1 && s->violated ==
			    MODEL_OK && (s->records != 0 || s->hwm_moved))
				violate(s, MODEL_STALE_TOKEN_REJECTION, "a stale "
				    "handle produced durable changes");
			if (unsent && s->violated == MODEL_OK)
				crash(s, true);
		}
	}
	if (s->violated != MODEL_OK)
		return;

	/* LeaseReclamationSafety, the liveness half: a tick at or after the
	 * expiry leaves no expired lease behind. */
	if (base == ACT_TICK && !lost && !unsent)
		for (n = 0; n < s->sc->nnames; n++)
			if (s->sh[n].held && s->sh[n].expiry <= s->now) {
				violate(s, MODEL_LEASE_RECLAMATION_SAFETY, "the "
				    "tick at %lld left fence %llu of %s, "
				    "expired at %lld", (long long)s->now,
				    (unsigned long long)s->sh[n].fence,
				    s->sc->names[n],
				    (long long)s->sh[n].expiry);
				return;
			}
	/* NoStarvation, the immediate half: nobody waits for a free lock. */
	for (n = 0; n < s->sc->nnames; n++)
		if (!s->sh[n].held && s->sh[n].qlen > 0) {
			violate(s, MODEL_NO_STARVATION, "%c waits for %s, "
			    "which is free", label(s, s->sh[n].queue[0]),
			    s->sc->names[n]);
			return;
		}
	check_agreement(s);
	skip_dead_ops(s);
}

/* The end of a schedule: time runs past every deadline, ticking at each;
 * then every waiter must have been granted, timed out or gone. */
static void
run_out_the_clock(struct sys *s)
{
	int i, c;

	for (i = 0; i < 64 && s->violated == MODEL_OK; i++) {
		core_time d = core_next_deadline(&s->table);

		if (d == CORE_NEVER)
			break;
		if (d > s->now)
			s->now = d;
		step(s, ACT_TICK);
	}
	if (s->violated != MODEL_OK)
		return;
	if (core_next_deadline(&s->table) != CORE_NEVER) {
		violate(s, MODEL_NO_STARVATION, "deadlines keep coming after "
		    "64 ticks");
		return;
	}
	for (c = 0; c < s->sc->nclients; c++)
		if (s->cl[c].req_tag != 0) {
			violate(s, MODEL_NO_STARVATION, "%c still waits for %s "
			    "after every deadline passed", label(s, c),
			    s->sc->names[s->cl[c].req_name]);
			return;
		}
}

/* ---- enabled actions -------------------------------------------------- */

static size_t
enabled(const struct sys *s, uint8_t *acts)
{
	size_t n = 0, plain, i;
	int c;

	for (c = 0; c < s->sc->nclients; c++) {
		const struct client *m = &s->cl[c];
		const struct model_client *mc = &s->sc->clients[c];

		if (!m->gone && m->pc < mc->nops && (m->req_tag == 0 ||
		    mc->ops[m->pc].kind == MODEL_DISCONNECT))
			acts[n++] = (uint8_t)c;
	}
	if (s->clock + 1 < s->sc->ntimes)
		acts[n++] = ACT_CLOCK;
	if (core_next_deadline(&s->table) <= s->now)
		acts[n++] = ACT_TICK;
	plain = n;
	if (plain > 0 && s->crashes < s->sc->crashes) {
		acts[n++] = ACT_CRASH;
		for (i = 0; i < plain; i++)
			if (acts[i] != ACT_CLOCK) {
				acts[n++] = acts[i] | ACT_LOST;
				acts[n++] = acts[i] | ACT_UNSENT;
			}
	}
	if (s->failures < s->sc->commit_failures)
		for (i = 0; i < plain; i++)
			if (acts[i] != ACT_CLOCK)
				acts[n++] = acts[i] | ACT_FAILED;
	return n;
}

static const char *
op_word(enum model_op_kind k)
{
	switch (k) {
	case MODEL_ACQUIRE:
		return "acquire";
	case MODEL_TRY:
		return "try";
	case MODEL_RENEW:
		return "renew";
	case MODEL_RELEASE:
		return "release";
	case MODEL_FORGE_RENEW:
		return "forge-renew";
	case MODEL_FORGE_RELEASE:
		return "forge-release";
	case MODEL_DISCONNECT:
		return "disconnect";
	}
	return "?";
}

/* ---- the canonical encoding ------------------------------------------- */

struct enc {
	uint8_t *p;
	size_t len;
};

static void
put(struct enc *x, const void *v, size_t len)
{
	if (x->len + len > ENCODING_MAX)
		abort();
	memcpy(x->p + x->len, v, len);
	x->len += len;
}

static void
put8(struct enc *x, uint64_t v)
{
	uint8_t b = (uint8_t)v;

	put(x, &b, 1);
}

static void
put64(struct enc *x, uint64_t v)
{
	put(x, &v, sizeof(v));
}

static int
name_index(const struct sys *s, const struct core_entry *e)
{
	int n;

	for (n = 0; n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == e->name_len &&
		    memcmp(s->sc->names[n], e->name, e->name_len) == 0)
			return n;
	return NOBODY;
}

static size_t
encode(const struct sys *s, uint8_t *buf)
{
	struct enc x = { buf, 0 };
	int c, n;
	size_t i;

	put8(&x, s->clock);
	put8(&x, s->crashes);
	put8(&x, s->boot);
	put8(&x, s->failures);
	put64(&x, (uint64_t)s->now);
	for (c = 0; c < s->sc->nclients; c++) {
		const struct client *m = &s->cl[c];

		put8(&x, m->pc);
		put8(&x, m->gone);
		put8(&x, m->queued);
		put64(&x, m->req_tag);
		put8(&x, m->req_kind);
		put8(&x, m->req_name);
		put64(&x, m->req_handle.fence);
		put64(&x, m->req_handle.secret);
		put64(&x, (uint64_t)m->req_lease);
		put8(&x, m->req_onclose);
		put64(&x, (uint64_t)m->deadline);
		put64(&x, m->left_tag);
		for (n = 0; n < s->sc->nnames; n++) {
			const struct knowledge *k = &m->know[n];
			/* A belief that has run out is no belief. */
			bool live = k->believes && k->until > s->now;

			put8(&x, k->has_handle);
			put64(&x, k->handle.fence);
			put64(&x, k->handle.secret);
			put8(&x, live);
			put64(&x, live ? (uint64_t)k->until : 0);
			put8(&x, k->onclose);
		}
	}
	for (n = 0; n < s->sc->nnames; n++) {
		const struct shadow *sh = &s->sh[n];
		const struct disk_record *d = &s->disk[n];
		const struct core_entry *e = core_table_find(&s->table,
		    s->sc->names[n], strlen(s->sc->names[n]));
		const struct core_link *l;

		put8(&x, sh->held);
		put8(&x, sh->holder);
		put8(&x, sh->onclose);
		put64(&x, sh->fence);
		put64(&x, sh->secret);
		put64(&x, (uint64_t)sh->expiry);
		put64(&x, (uint64_t)sh->lease_ms);
		put8(&x, sh->qlen);
		put(&x, sh->queue, sh->qlen);
		put64(&x, sh->max_delivered);

		put8(&x, d->present);
		put8(&x, d->holder);
		put64(&x, d->rec.fence);
		put64(&x, d->rec.secret);
		put64(&x, (uint64_t)d->rec.expiry);
		put64(&x, (uint64_t)d->rec.lease_ms);
		put8(&x, d->rec.onclose_release);

		put8(&x, e != NULL);
		if (e == NULL)
			continue;
		put64(&x, e->lock.fence);
		put64(&x, e->lock.secret);
		put64(&x, (uint64_t)e->lock.expiry);
		put64(&x, (uint64_t)e->lock.lease_ms);
		put8(&x, e->owner ? client_of(s, e->owner) : NOBODY);
		put8(&x, e->timer.slot != UINT32_MAX);
		put64(&x, (uint64_t)e->timer.when);
		for (l = e->queue.next; l != &e->queue; l = l->next) {
			const struct core_waiter *w = (const void *)
			    ((const char *)l -
			    offsetof(struct core_waiter, queue_link));

			put8(&x, client_of(s, w->session));
			put64(&x, w->tag);
			put64(&x, (uint64_t)w->lease_ms);
			put8(&x, w->onclose_release);
			put8(&x, w->timer.slot != UINT32_MAX);
			put64(&x, (uint64_t)w->timer.when);
		}
		put8(&x, 0xee);
	}
	put64(&x, s->disk_hwm);
	put64(&x, s->table.hwm);
	/* The heap's layout decides the order of equal deadlines. */
	for (i = 0; i < s->table.heap_len; i++) {
		const struct core_timer *t = s->table.heap[i];

		if (t->kind == 0)
			put8(&x, 0x80 | name_index(s, (const void *)
			    ((const char *)t -
			    offsetof(struct core_entry, timer))));
		else
			put8(&x, client_of(s, ((const struct core_waiter *)
			    (const void *)((const char *)t -
			    offsetof(struct core_waiter, timer)))->session));
	}
	/* So does the order of a session's onclose leases. */
	for (c = 0; c < s->sc->nclients; c++) {
		const struct core_link *l;

		for (l = s->sess[c].onclose.next; l != &s->sess[c].onclose;
		    l = l->next)
			put8(&x, name_index(s, (const void *)((const char *)l -
			    offsetof(struct core_entry, onclose_link))));
		put8(&x, 0xdd);
	}
	return x.len;
}

/* ---- the set of visited states ---------------------------------------- */

struct node {
	uint64_t hash;
	size_t off;
	uint32_t len;
	bool done;
	uint64_t paths;
};

struct visited {
	struct node *nodes;
	size_t nnodes, capnodes;
	uint32_t *slots;        /* index + 1 into nodes; 0 is empty */
	size_t capslots;
	uint8_t *arena;
	size_t arena_len, arena_cap;
};

static uint64_t
hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return mix64(h);
}

static void *
xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size);

	if (q == NULL) {
		fprintf(stderr, "model_check: out of memory\n");
		abort();
	}
	return q;
}

static void
visited_grow(struct visited *v)
{
	size_t cap = v->capslots ? 2 * v->capslots : 1 << 16, i;
	uint32_t *slots = xrealloc(NULL, cap * sizeof(*slots));

	memset(slots, 0, cap * sizeof(*slots));
	for (i = 0; i < v->nnodes; i++) {
		size_t j = v->nodes[i].hash & (cap - 1);

		while (slots[j] != 0)
			j = (j + 1) & (cap - 1);
		slots[j] = (uint32_t)(i + 1);
	}
	free(v->slots);
	v->slots = slots;
	v->capslots = cap;
}

/* Finds the state, or adds it; *added says which. */
static size_t
visited_get(struct visited *v, const uint8_t *enc, size_t len, bool *added)
{
	uint64_t h = hash_bytes(enc, len);
	size_t j;
	struct node *nd;

	if (2 * (v->nnodes + 1) > v->capslots)
		visited_grow(v);
	for (j = h & (v->capslots - 1); v->slots[j] != 0;
	    j = (j + 1) & (v->capslots - 1)) {
		nd = &v->nodes[v->slots[j] - 1];
		if (nd->hash == h && nd->len == len &&
		    memcmp(v->arena + nd->off, enc, len) == 0) {
			*added = false;
			return v->slots[j] - 1;
		}
	}
	if (v->nnodes == v->capnodes) {
		v->capnodes = v->capnodes ? 2 * v->capnodes : 1 << 14;
		v->nodes = xrealloc(v->nodes, v->capnodes * sizeof(*v->nodes));
	}
	while (v->arena_len + len > v->arena_cap) {
		v->arena_cap = v->arena_cap ? 2 * v->arena_cap : 1 << 22;
		v->arena = xrealloc(v->arena, v->arena_cap);
	}
	memcpy(v->arena + v->arena_len, enc, len);
	nd = &v->nodes[v->nnodes];
	nd->hash = h;
	nd->off = v->arena_len;
	nd->len = (uint32_t)len;
	nd->done = false;
	nd->paths = 0;
	v->arena_len += len;
	v->slots[j] = (uint32_t)(++v->nnodes);
	*added = true;
	return v->nnodes - 1;
}

static void
visited_free(struct visited *v)
{
	free(v->nodes);
	free(v->slots);
	free(v->arena);
	memset(v, 0, sizeof(*v));
}

/* ---- the search ------------------------------------------------------- */

struct explorer {
	const struct model_scenario *sc;
	const struct core_rules *rules;
	enum model_harness harness;
	enum model_property stop_at;
	bool stop;
	struct visited seen;
	uint8_t prefix[MAX_DEPTH];
	struct model_result *res;
	struct sys sys;
};

static uint64_t
add_paths(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Rebuilds the state after prefix[0..len) on a fresh table. */
static void
replay(struct explorer *x, unsigned len)
{
	unsigned i;

	sys_fini(&x->sys);
	sys_init(&x->sys, x->sc, x->rules, x->harness);
	x->res->executions++;
	for (i = 0; i < len && x->sys.violated == MODEL_OK; i++)
		step(&x->sys, x->prefix[i]);
}

/* Writes the schedule prefix[0..len) as words, replaying it on a scratch
 * system so that each op is named by the script position it really ran. */
static void
describe(const struct explorer *x, unsigned len, bool ran_out, char *buf,
    size_t size)
{
	const struct model_scenario *sc = x->sc;
	struct sys *s = xrealloc(NULL, sizeof(*s));
	size_t at = 0;
	unsigned i;

	sys_init(s, sc, x->rules, x->harness);
	buf[0] = '\0';
	for (i = 0; i < len && at < size; i++) {
		uint8_t a = x->prefix[i], base = a & (uint8_t)~ACT_FLAGS;
		char word[48];

		if (base == ACT_CLOCK)
			snprintf(word, sizeof(word), "t=%lld",
			    (long long)sc->times[s->clock + 1]);
		else if (base == ACT_TICK)
			snprintf(word, sizeof(word), "tick");
		else if (base == ACT_CRASH)
			snprintf(word, sizeof(word), "crash");
		else
			snprintf(word, sizeof(word), "%c.%s",
			    sc->clients[base].label,
			    op_word(sc->clients[base].ops[s->cl[base].pc].kind));
		at += (size_t)snprintf(buf + at, size - at, "%s%s%s",
		    i ? " " : "", word, a & ACT_LOST ?
		    "+crash-before-commit" : a & ACT_UNSENT ?
		    "+crash-before-reply" : a & ACT_FAILED ?
		    "+commit-fails" : "");
		step(s, a);
	}
	if (ran_out && at < size)
		snprintf(buf + at, size - at, " | run out the clock");
	sys_fini(s);
	free(s);
}

static void
record(struct explorer *x, unsigned len, bool ran_out)
{
	struct model_result *r = x->res;
	enum model_property p = x->sys.violated;

	if (r->found_after[p] == 0) {
		r->found_after[p] = r->executions;
		describe(x, len, ran_out, r->trace[p], sizeof(r->trace[p]));
		snprintf(r->message[p], sizeof(r->message[p]), "%s",
		    x->sys.why);
	}
	if (r->first == MODEL_OK)
		r->first = p;
	if (p == x->stop_at)
		x->stop = true;
}

/* Explores from the state after prefix[0..depth), which x->sys holds. */
static uint64_t
explore(struct explorer *x, unsigned depth)
{
	uint8_t acts[MAX_ACTIONS];
	static uint8_t enc[ENCODING_MAX];
	size_t nacts = enabled(&x->sys, acts), i;
	uint64_t paths = 0;
	int c;

	if (depth > x->res->depth)
		x->res->depth = depth;
	if (nacts == 0) {
		run_out_the_clock(&x->sys);
		if (x->sys.violated != MODEL_OK)
			record(x, depth, true);
		return 1;
	}
	if (depth + 1 >= MAX_DEPTH) {
		fprintf(stderr, "model_check: schedules longer than %d\n",
		    MAX_DEPTH);
		abort();
	}
	for (i = 0; i < nacts && !x->stop; i++) {
		size_t len, idx;
		bool added;

		x->prefix[depth] = acts[i];
		if (i > 0)
			replay(x, depth);
		step(&x->sys, acts[i]);
		x->res->transitions++;
		for (c = 0; c < MODEL_COVERAGE; c++)
			if (x->sys.cov & (1u << c))
				x->res->covered[c]++;
		if (x->sys.violated != MODEL_OK) {
			record(x, depth + 1, false);
			paths = add_paths(paths, 1);
			continue;
		}
		len = encode(&x->sys, enc);
		idx = visited_get(&x->seen, enc, len, &added);
		if (!added) {
			if (!x->seen.nodes[idx].done) {
				fprintf(stderr, "model_check: a cycle in the "
				    "state graph of %s\n", x->sc->name);
				abort();
			}
			paths = add_paths(paths, x->seen.nodes[idx].paths);
			continue;
		}
		x->res->states++;
		{
			uint64_t sub = explore(x, depth + 1);

			x->seen.nodes[idx].done = true;
			x->seen.nodes[idx].paths = sub;
			paths = add_paths(paths, sub);
		}
	}
	return paths;
}

void
model_explore(const struct model_scenario *sc, const struct core_rules *rules,
    enum model_harness harness, enum model_property stop_at,
    struct model_result *result)
{
	struct explorer *x = calloc(1, sizeof(*x));
	struct timespec t0, t1;
	static uint8_t enc[ENCODING_MAX];
	size_t len, idx;
	bool added;

	if (x == NULL)
		abort();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(result, 0, sizeof(*result));
	x->sc = sc;
	x->rules = rules;
	x->harness = harness;
	x->stop_at = stop_at;
	x->res = result;

	replay(x, 0);
	len = encode(&x->sys, enc);
	idx = visited_get(&x->seen, enc, len, &added);
	result->states = 1;
	result->schedules = explore(x, 0);
	if (!x->stop)
		x->seen.nodes[idx].done = true;

	sys_fini(&x->sys);
	visited_free(&x->seen);
	free(x);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	result->seconds = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}
