/*
 * shadow.c - the model checker's system and its shadow (see shadow.h): the
 * seams handed to the core, the shadow's account of every reply, the
 * durable records and crashes, the clients' scripted ops, the agreement
 * of table and shadow, one step and the actions enabled after it.
 *
 * Nothing here may change core/: broken rules come from
 * tests/lib/broken_rules.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/model/shadow.h"

/* ---- the model's state ------------------------------------------------ */

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
	s->cov |= (uint64_t)1 << c;
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

uint64_t
model__mix64(uint64_t x)
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

	return model__mix64(((uint64_t)s->boot << 56) ^ (s->table.hwm + 1)) | 1;
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
	/* The status lives only during the call: keep a copy. */
	if (r->status != NULL) {
		l->status = *r->status;
		l->r.status = &l->status;
	}
	l->name = NOBODY;
	for (n = 0; r->name != NULL && n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == r->name_len &&
		    memcmp(s->sc->names[n], r->name, r->name_len) == 0)
			l->name = n;
	l->r.name = NULL;
}

int
model__client_of(const struct sys *s, const struct core_session *session)
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

void
model__sys_init(struct sys *s, const struct model_scenario *sc,
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
		s->sh[n].limit = 1;
	table_start(s);
}

void
model__sys_fini(struct sys *s)
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
	m->req_delay = 0;
	m->req_fence = 0;
	m->req_watch_any = false;
	m->req_holders = 0;
	m->req_rid = NULL;
	m->req_limit = 0;
	m->req_shared = false;
	m->queued = false;
	m->deadline = CORE_NEVER;
}

/* The holder of lock n with this fence, NULL for none. */
static struct shold *
shold_find(struct shadow *sh, uint64_t fence)
{
	int i;

	for (i = 0; i < sh->nheld; i++)
		if (sh->h[i].fence == fence && fence != 0)
			return &sh->h[i];
	return NULL;
}

static void
shold_remove(struct shadow *sh, const struct shold *h)
{
	int i = (int)(h - sh->h);

	memmove(&sh->h[i], &sh->h[i + 1], (size_t)(sh->nheld - i - 1) *
	    sizeof(sh->h[0]));
	sh->nheld--;
	memset(&sh->h[sh->nheld], 0, sizeof(sh->h[0]));
}

/* The newest holder (the largest fence), NULL when free. */
static const struct shold *
shold_newest(const struct shadow *sh)
{
	const struct shold *best = NULL;
	int i;

	for (i = 0; i < sh->nheld; i++)
		if (best == NULL || sh->h[i].fence > best->fence)
			best = &sh->h[i];
	return best;
}

/* Do the holders hold shared (all of them)? */
static bool
shadow_shared(const struct shadow *sh)
{
	int i;

	for (i = 0; i < sh->nheld; i++)
		if (!sh->h[i].shared)
			return false;
	return true;
}

/* The model's own admission rule (the spec's, not the core's): may a
 * request of this mode join the holders. */
static bool
shadow_admits(const struct shadow *sh, bool shared)
{
	if (sh->nheld == 0)
		return true;
	if (sh->limit > 1)
		return sh->nheld < sh->limit;
	return shared && shadow_shared(sh);
}

static bool
shadow_idle(const struct shadow *sh)
{
	return sh->nheld == 0 && sh->qlen == 0 && sh->delay_until == 0;
}

/* The live holder of lock n granted with m's rid, NULL for none: a
 * repeat of its request, byte for byte, while the lease lives. */
static struct shold *
rid_holder(struct sys *s, int n, const struct client *m)
{
	struct shadow *sh = &s->sh[n];
	int i;

	for (i = 0; m->req_rid != NULL && i < sh->nheld; i++)
		if (s->now < sh->h[i].expiry &&
		    sh->h[i].rid_len == strlen(m->req_rid) &&
		    memcmp(sh->h[i].rid, m->req_rid, sh->h[i].rid_len) == 0)
			return &sh->h[i];
	return NULL;
}

static bool
rid_holds(struct sys *s, int n, const struct client *m)
{
	return rid_holder(s, n, m) != NULL;
}

/* The GRANTED of a rid repeat: the live grant again, lease_ms what is
 * left of it, and nothing about the hold changed. */
static void
on_regranted(struct sys *s, const struct logged *l, struct client *m, int c)
{
	struct shadow *sh = &s->sh[l->name];
	struct shold *h = rid_holder(s, l->name, m);
	struct delivery *d;

	if (h == NULL) {
		violate(s, MODEL_RID_IDEMPOTENT, "%c's request (rid=%s) "
		    "got fence %llu as a repeat of a grant it did not have",
		    label(s, c), m->req_rid ? m->req_rid : "none",
		    (unsigned long long)l->r.fence);
		return;
	}
	if (!l->r.repeat || l->r.fence != h->fence ||
	    l->r.secret != h->secret) {
		violate(s, MODEL_RID_IDEMPOTENT, "%c's repeat of rid=%s got "
		    "fence %llu, not its live grant's fence %llu",
		    label(s, c), m->req_rid, (unsigned long long)l->r.fence,
		    (unsigned long long)h->fence);
		return;
	}
	if (l->r.lease_ms != h->expiry - s->now) {
		violate(s, MODEL_SHADOW_AGREEMENT, "a repeat's lease %lld, "
		    "%lld left", (long long)l->r.lease_ms,
		    (long long)(h->expiry - s->now));
		return;
	}
	cover(s, MODEL_COV_RID_REPEAT);
	if (sh->nheld > 1)
		cover(s, MODEL_COV_RID_AMONG_HOLDERS);
	if (!m->know[l->name].has_handle ||
	    m->know[l->name].handle.fence != h->fence)
		cover(s, MODEL_COV_RID_LOST_REPLY);
	/* The hold is the repeating client's now, and so is its binding
	 * (another client: the same one reconnected, in the scripts). */
	if (h->onclose && h->holder != c)
		cover(s, MODEL_COV_RID_REBOUND);
	h->holder = (uint8_t)c;
	d = &s->pending[s->npending++];
	d->client = (uint8_t)c;
	d->name = l->name;
	d->tag = m->req_tag;
	d->kind = CORE_REPLY_GRANTED;
	d->handle.fence = h->fence;
	d->handle.secret = h->secret;
	d->until = h->expiry;
	d->onclose = h->onclose;
	d->repeat = true;
	d->shared = h->shared;
	d->limit = sh->limit;
	request_done(m);
}

/* The newest holder's fence as WATCH compares it: 0 when free. */
static uint64_t
shadow_current(const struct shadow *sh)
{
	const struct shold *h = shold_newest(sh);

	return h != NULL ? h->fence : 0;
}

/* Has a queued WATCH's change come: the newest holder's fence differs
 * from the one watched, or, for a WATCH of the next change, the holders
 * are not the ones it found (one of several ended). */
static bool
shadow_watch_changed(const struct shadow *sh, const struct client *m)
{
	return m->req_fence != shadow_current(sh) ||
	    (m->req_watch_any && m->req_holders != sh->nheld);
}

/* A hold ended in a way that owes its lock-delay, running to `until`. */
static void
delay_begin(struct sys *s, struct shadow *sh, const struct shold *h,
    core_time until)
{
	if (h->delay_ms > 0 && until > s->now && until > sh->delay_until)
		sh->delay_until = until;
}

/* Every touch of a name (an op on it, a tick, a restore) ends a lock-delay
 * that has run out. */
static void
delay_due(struct sys *s, int n)
{
	if (s->sh[n].delay_until != 0 && s->sh[n].delay_until <= s->now) {
		s->sh[n].delay_until = 0;
		s->delay_ended = true;
	}
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

/* Is h the handle of a live holder of lock n right now? */
static bool
handle_current(struct sys *s, int n, struct core_handle h)
{
	const struct shold *o = shold_find(&s->sh[n], h.fence);

	return o != NULL && o->secret == h.secret && s->now < o->expiry;
}

/* The reply must answer the client's pending request. */
static struct client *
answering(struct sys *s, const struct logged *l, int *cp)
{
	int c = model__client_of(s, l->r.session);
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
	struct shold *h;
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
	if (l->r.repeat || rid_holds(s, l->name, m)) {
		on_regranted(s, l, m, c);
		return;
	}
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
		else if (s->last_end < 0 && m->req_shared &&
		    !s->delay_ended)
			cover(s, MODEL_COV_WRITER_LEFT);
		if (m->req_shared && s->granted_shared)
			cover(s, MODEL_COV_SHARED_RUN);
	} else if (sh->qlen > 0) {
		violate(s, MODEL_FIFO_FAIRNESS, "%c granted %s at once past "
		    "%d waiter(s)", label(s, c), lock_name(s, l->name),
		    sh->qlen);
		return;
	} else if (shadow_idle(sh)) {
		sh->limit = m->req_limit;   /* the first request sets it */
	}
	if (sh->delay_until != 0 && s->now < sh->delay_until) {
		violate(s, MODEL_LOCK_DELAY, "%s granted to %c at %lld, in "
		    "the lock-delay that ends at %lld", lock_name(s, l->name),
		    label(s, c), (long long)s->now,
		    (long long)sh->delay_until);
		return;
	}
	if (m->queued && s->delay_ended)
		cover(s, MODEL_COV_DELAY_HANDOFF);
	if (sh->nheld > 0 && m->req_limit != sh->limit) {
		violate(s, MODEL_MUTUAL_EXCLUSION, "%s granted to %c (limit "
		    "%d) at %lld beside %d holder(s) of limit %d",
		    lock_name(s, l->name), label(s, c), m->req_limit,
		    (long long)s->now, sh->nheld, sh->limit);
		return;
	}
	if (sh->limit > 1 && sh->nheld >= sh->limit) {
		violate(s, MODEL_HOLDER_LIMIT, "%s granted to %c (fence %llu) "
		    "at %lld while %d hold it, its limit %d",
		    lock_name(s, l->name), label(s, c),
		    (unsigned long long)l->r.fence, (long long)s->now,
		    sh->nheld, sh->limit);
		return;
	}
	if (sh->limit <= 1 && sh->nheld > 0 &&
	    !(m->req_shared && shadow_shared(sh))) {
		violate(s, MODEL_MUTUAL_EXCLUSION, "%s granted %s to %c "
		    "(fence %llu) at %lld while fence %llu is held %s until "
		    "%lld", lock_name(s, l->name), m->req_shared ? "shared" :
		    "exclusive", label(s, c), (unsigned long long)l->r.fence,
		    (long long)s->now, (unsigned long long)sh->h[0].fence,
		    sh->h[0].shared ? "shared" : "exclusive",
		    (long long)sh->h[0].expiry);
		return;
	}
	if (l->r.lease_ms != m->req_lease || l->r.fence == 0 ||
	    sh->nheld >= MODEL_HOLDS) {
		violate(s, MODEL_SHADOW_AGREEMENT, "GRANTED lease %lld fence "
		    "%llu, asked %lld", (long long)l->r.lease_ms,
		    (unsigned long long)l->r.fence, (long long)m->req_lease);
		return;
	}
	if (!m->queued)
		cover(s, m->req_kind == MODEL_TRY ? MODEL_COV_TRY_GRANTED :
		    MODEL_COV_GRANT_AT_ONCE);
	if (m->req_shared)
		s->granted_shared = true;
	h = &sh->h[sh->nheld++];
	memset(h, 0, sizeof(*h));
	h->holder = (uint8_t)c;
	h->onclose = m->req_onclose;
	h->shared = m->req_shared;
	h->fence = l->r.fence;
	h->secret = l->r.secret;
	h->expiry = s->now + l->r.lease_ms;
	h->lease_ms = l->r.lease_ms;
	h->delay_ms = m->req_delay;
	if (m->req_rid != NULL) {
		h->rid_len = (uint8_t)strlen(m->req_rid);
		memcpy(h->rid, m->req_rid, h->rid_len);
		if (m->know[l->name].has_handle)
			cover(s, MODEL_COV_RID_NEW_GRANT);
	}
	if (s->falling_back)
		cover(s, MODEL_COV_FALLBACK_HANDOFF);
	d = &s->pending[s->npending++];
	d->client = (uint8_t)c;
	d->name = l->name;
	d->tag = m->req_tag;
	d->kind = CORE_REPLY_GRANTED;
	d->handle.fence = l->r.fence;
	d->handle.secret = l->r.secret;
	d->until = h->expiry;
	d->onclose = m->req_onclose;
	d->shared = m->req_shared;
	d->limit = sh->limit;
	request_done(m);
}

static void
on_renewed(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shold *h;
	struct delivery *d;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
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
	h = shold_find(&s->sh[l->name], m->req_handle.fence);
	if (l->r.lease_ms != m->req_lease || l->r.fence != h->fence) {
		violate(s, MODEL_SHADOW_AGREEMENT, "RENEWED lease %lld fence "
		    "%llu", (long long)l->r.lease_ms,
		    (unsigned long long)l->r.fence);
		return;
	}
	h->expiry = s->now + l->r.lease_ms;
	h->lease_ms = l->r.lease_ms;
	cover(s, MODEL_COV_RENEWED);
	d = &s->pending[s->npending++];
	d->client = (uint8_t)c;
	d->name = l->name;
	d->tag = m->req_tag;
	d->kind = CORE_REPLY_RENEWED;
	d->handle = m->req_handle;
	d->until = h->expiry;
	d->onclose = h->onclose;
	d->shared = h->shared;
	d->limit = s->sh[l->name].limit;
	request_done(m);
}

/*
 * The hold with this handle ended by its holder's act (RELEASE, or the
 * close of the connection it is bound to): a client that got the same
 * grant by repeating its rid - the same client, reconnected - holds it
 * no more either.  (Other ends, expiry and FORCE, end beliefs by time or
 * not at all, as for any client.)
 */
static void
grant_ended(struct sys *s, int n, uint64_t fence, uint64_t secret)
{
	int c;

	for (c = 0; c < s->sc->nclients; c++) {
		struct knowledge *k = &s->cl[c].know[n];

		if (k->has_handle && k->handle.fence == fence &&
		    k->handle.secret == secret)
			k->believes = false;
	}
}

static void
on_released(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	struct shold *h;
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
		    (unsigned long long)shadow_current(sh),
		    (unsigned long long)m->req_handle.fence,
		    (unsigned long long)m->req_handle.secret,
		    (long long)s->now);
		return;
	}
	h = shold_find(sh, m->req_handle.fence);
	/* RELEASED is not durable: the client hears it at once - and so
	 * does every incarnation of it that holds the grant through a rid
	 * repeat (the same handle: one grant, one holder). */
	if (h->holder == c)
		s->cl[c].know[l->name].believes = false;
	grant_ended(s, l->name, h->fence, h->secret);
	shold_remove(sh, h);
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

/* Would an ACQUIRE or TRY of m be granted at once: nobody waits, no
 * lock-delay, the holders admit it. */
static bool
grantable_now(const struct sys *s, int n, const struct client *m)
{
	const struct shadow *sh = &s->sh[n];

	return sh->qlen == 0 && sh->delay_until == 0 &&
	    shadow_admits(sh, m->req_shared);
}

static void
on_held(struct sys *s, const struct logged *l)
{
	struct client *m;
	const struct shadow *sh;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	if (m->req_kind != MODEL_TRY) {
		violate(s, MODEL_SHADOW_AGREEMENT, "HELD answers op %d",
		    m->req_kind);
		return;
	}
	if (rid_holds(s, l->name, m)) {
		violate(s, MODEL_RID_IDEMPOTENT, "%c's TRY with rid=%s, the "
		    "live holder's, answered HELD", label(s, c), m->req_rid);
		return;
	}
	if (grantable_now(s, l->name, m)) {
		violate(s, MODEL_SHADOW_AGREEMENT, "TRY of %s, which admits "
		    "it, answered HELD", lock_name(s, l->name));
		return;
	}
	if (sh->nheld == 0 && sh->qlen == 0)
		cover(s, MODEL_COV_DELAY_HELD_BACK);
	if (sh->limit > 1 && sh->nheld >= sh->limit)
		cover(s, MODEL_COV_SEMAPHORE_FULL);
	cover(s, MODEL_COV_TRY_HELD);
	request_done(m);
}

/* BADARG: only for a request whose limit is not the busy name's; for a
 * waiter, only when a fall-back gave the name another limit. */
static void
on_badarg(struct sys *s, const struct logged *l)
{
	struct client *m;
	struct shadow *sh;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	if ((m->req_kind != MODEL_ACQUIRE && m->req_kind != MODEL_TRY) ||
	    l->r.misfit != CORE_MISFIT_LIMIT || shadow_idle(sh) ||
	    m->req_limit == sh->limit || rid_holds(s, l->name, m)) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c's request (limit %d) "
		    "of %s (limit %d) answered BADARG", label(s, c),
		    m->req_limit, lock_name(s, l->name), sh->limit);
		return;
	}
	if (m->queued && !s->falling_back) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c, waiting for %s, "
		    "answered BADARG", label(s, c), lock_name(s, l->name));
		return;
	}
	if (m->queued) {
		queue_remove(sh, c);
		cover(s, MODEL_COV_FALLBACK_MISFIT);
	}
	cover(s, MODEL_COV_KIND_MISFIT);
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
	if (m->req_kind == MODEL_WATCH) {
		if (m->queued ? m->deadline > s->now :
		    (!m->req_watch_any &&
		    m->req_fence != shadow_current(sh))) {
			violate(s, MODEL_WATCH_ONCE, "%c's WATCH of %s timed "
			    "out at %lld (deadline %lld, fence %llu, watched "
			    "%llu)", label(s, c), lock_name(s, l->name),
			    (long long)s->now, (long long)m->deadline,
			    (unsigned long long)shadow_current(sh),
			    (unsigned long long)m->req_fence);
			return;
		}
		cover(s, MODEL_COV_WATCH_TIMEOUT);
		request_done(m);
		return;
	}
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
	} else if (grantable_now(s, l->name, m)) {
		violate(s, MODEL_SHADOW_AGREEMENT, "wait=0 on %s, which "
		    "admits it, answered TIMEOUT", lock_name(s, l->name));
		return;
	}
	m->left_tag = m->req_tag;
	request_done(m);
}

static void
on_lease_end(struct sys *s, const struct logged *l)
{
	struct shadow *sh = &s->sh[l->name];
	struct shold *h = l->name == NOBODY ? NULL :
	    shold_find(sh, l->r.fence);

	if (h == NULL) {
		violate(s, MODEL_SHADOW_AGREEMENT, "event %d for fence %llu "
		    "of %s, which is not its holder", (int)l->r.kind,
		    (unsigned long long)l->r.fence, lock_name(s, l->name));
		return;
	}
	if (l->r.kind == CORE_EVENT_RECLAIMED) {
		if (s->now < h->expiry) {
			violate(s, MODEL_LEASE_RECLAMATION_SAFETY, "fence %llu "
			    "of %s reclaimed at %lld, before its expiry %lld",
			    (unsigned long long)h->fence,
			    lock_name(s, l->name), (long long)s->now,
			    (long long)h->expiry);
			return;
		}
		if (s->restoring)
			cover(s, MODEL_COV_RESTORED_EXPIRED);
		else if (s->action == ACT_TICK && s->now == h->expiry)
			cover(s, MODEL_COV_RECLAIM_AT_EXPIRY);
		delay_begin(s, sh, h, h->expiry + h->delay_ms);
	} else {
		if (!h->onclose || (!s->restoring && !s->falling_back &&
		    (s->closing < 0 || h->holder != s->closing))) {
			violate(s, MODEL_SHADOW_AGREEMENT, "fence %llu of %s "
			    "released on close of a session that does not "
			    "hold it", (unsigned long long)h->fence,
			    lock_name(s, l->name));
			return;
		}
		cover(s, s->restoring ? MODEL_COV_RESTORED_ONCLOSE :
		    MODEL_COV_ONCLOSE_DISCONNECT);
		grant_ended(s, l->name, h->fence, h->secret);
		delay_begin(s, sh, h, s->now + h->delay_ms);
	}
	s->last_end = l->r.kind;
	shold_remove(sh, h);
}

/* FORCE's answers: FORCED only for the live holder with exactly that
 * fence, NOTHELD for anything else. */
static void
on_force(struct sys *s, const struct logged *l)
{
	struct shadow *sh = &s->sh[l->name];
	struct shold *h;
	struct client *m;
	bool exact;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	if (m->req_kind != MODEL_FORCE) {
		violate(s, MODEL_SHADOW_AGREEMENT, "reply %d answers op %d",
		    (int)l->r.kind, m->req_kind);
		return;
	}
	h = shold_find(sh, m->req_fence);
	exact = h != NULL && s->now < h->expiry;
	if (l->r.kind == CORE_REPLY_NOTHELD) {
		if (exact) {
			violate(s, MODEL_SHADOW_AGREEMENT, "FORCE of the "
			    "holder's fence %llu of %s refused",
			    (unsigned long long)m->req_fence,
			    lock_name(s, l->name));
			return;
		}
		cover(s, MODEL_COV_FORCE_STALE);
		request_done(m);
		return;
	}
	if (!exact) {
		const struct shold *o = shold_newest(sh);

		violate(s, MODEL_FORCE_EXACT_FENCE, "FORCE of fence %llu "
		    "freed %s, held by fence %llu until %lld at %lld",
		    (unsigned long long)m->req_fence, lock_name(s, l->name),
		    (unsigned long long)(o != NULL ? o->fence : 0),
		    (long long)(o != NULL ? o->expiry : 0),
		    (long long)s->now);
		return;
	}
	/* The forced holder is told nothing: its fence is what keeps it
	 * out now, so it no longer counts as holding. */
	if (h->holder != NOBODY)
		s->cl[h->holder].know[l->name].believes = false;
	delay_begin(s, sh, h, s->now + h->delay_ms);
	shold_remove(sh, h);
	s->last_end = CORE_REPLY_FORCED;
	cover(s, MODEL_COV_FORCED);
	request_done(m);
}

/* A WATCH answered CHANGED: only once its change has come (at once only
 * for a fence= that is not the newest holder's), and reporting the newest
 * holder's fence. */
static void
on_changed(struct sys *s, const struct logged *l)
{
	struct shadow *sh = &s->sh[l->name];
	struct client *m;
	uint64_t watched;
	int c;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	if (m->req_kind != MODEL_WATCH) {
		violate(s, MODEL_SHADOW_AGREEMENT, "CHANGED answers op %d",
		    m->req_kind);
		return;
	}
	/* A WATCH of the next change watches what it found on arrival: it
	 * is never answered CHANGED at once. */
	watched = m->req_watch_any && !m->queued ? shadow_current(sh) :
	    m->req_fence;
	if (m->queued ? !shadow_watch_changed(sh, m) :
	    watched == shadow_current(sh)) {
		violate(s, MODEL_WATCH_ONCE, "%c's WATCH of %s answered at "
		    "%lld while fence %llu, the one it watches, is current",
		    label(s, c), lock_name(s, l->name), (long long)s->now,
		    (unsigned long long)watched);
		return;
	}
	if (l->r.fence != shadow_current(sh) || l->r.status == NULL ||
	    l->r.status->fence != l->r.fence) {
		violate(s, MODEL_SHADOW_AGREEMENT, "CHANGED reports fence "
		    "%llu, the model %llu", (unsigned long long)l->r.fence,
		    (unsigned long long)shadow_current(sh));
		return;
	}
	cover(s, MODEL_COV_WATCH_FIRED);
	request_done(m);
}

/*
 * A queued ACQUIRE whose rid the acting client's ACQUIRE repeats: the
 * repeat takes its place in the queue (its turn, the repeat's own wait),
 * and it is answered and gone - one rid never waits twice.
 */
static void
on_superseded(struct sys *s, const struct logged *l)
{
	struct client *m, *r;
	struct shadow *sh;
	const struct model_op *op;
	int c, i;

	if ((m = answering(s, l, &c)) == NULL)
		return;
	sh = &s->sh[l->name];
	r = s->acting >= 0 ? &s->cl[s->acting] : NULL;
	if (!m->queued || m->req_kind != MODEL_ACQUIRE || m->req_rid == NULL ||
	    r == NULL || r == m || r->req_kind != MODEL_ACQUIRE ||
	    r->req_rid == NULL || strcmp(r->req_rid, m->req_rid) != 0 ||
	    r->req_name != m->req_name) {
		violate(s, MODEL_RID_IDEMPOTENT, "%c's request superseded, "
		    "but not by a repeat of its rid", label(s, c));
		return;
	}
	for (i = 0; i < sh->qlen && sh->queue[i] != c; i++)
		;
	if (i == sh->qlen) {
		violate(s, MODEL_SHADOW_AGREEMENT, "%c superseded, not "
		    "queued", label(s, c));
		return;
	}
	sh->queue[i] = (uint8_t)s->acting;
	op = &s->sc->clients[s->acting].ops[r->pc - 1];
	r->queued = true;
	r->deadline = op->wait_ms > 0 ? s->now + op->wait_ms : CORE_NEVER;
	m->left_tag = m->req_tag;
	request_done(m);
	cover(s, MODEL_COV_RID_SUPERSEDED);
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
			if (model__client_of(s, l->r.session) >= 0 &&
			    s->cl[model__client_of(s, l->r.session)].req_kind ==
			    MODEL_FORCE)
				on_force(s, l);
			else
				on_refused(s, l, MODEL_RELEASE,
				    MODEL_FORGE_RELEASE);
			break;
		case CORE_REPLY_FORCED:
			on_force(s, l);
			break;
		case CORE_REPLY_CHANGED:
			on_changed(s, l);
			break;
		case CORE_REPLY_SUPERSEDED:
			on_superseded(s, l);
			break;
		case CORE_REPLY_CONFLICT:
			on_refused(s, l, MODEL_RENEW, MODEL_FORGE_RENEW);
			break;
		case CORE_REPLY_HELD:
			on_held(s, l);
			break;
		case CORE_REPLY_BADARG:
			on_badarg(s, l);
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

static int
name_of(const struct sys *s, const char *name, size_t name_len)
{
	int n;

	for (n = 0; n < s->sc->nnames; n++)
		if (strlen(s->sc->names[n]) == name_len &&
		    memcmp(s->sc->names[n], name, name_len) == 0)
			return n;
	return -1;
}

/* The disk's record of lock n under key, NULL for none. */
static struct disk_record *
disk_find(struct sys *s, int n, uint64_t key)
{
	int k;

	for (k = 0; k < MODEL_KEYS; k++)
		if (s->disk[n][k].present && s->disk[n][k].key == key)
			return &s->disk[n][k];
	return NULL;
}

static void
on_record(void *ctx, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec)
{
	struct sys *s = ctx;
	struct disk_record *d;
	const struct shold *h;
	int n = name_of(s, name, name_len), k;

	if (n < 0) {
		violate(s, MODEL_SHADOW_AGREEMENT, "a record for no lock");
		return;
	}
	if ((d = disk_find(s, n, key_fence)) == NULL) {
		if (rec == NULL)
			return;   /* the delete of a key not written */
		for (k = 0; k < MODEL_KEYS && s->disk[n][k].present; k++)
			;
		if (k == MODEL_KEYS) {
			violate(s, MODEL_SHADOW_AGREEMENT, "more keys of %s "
			    "than holders", name);
			return;
		}
		d = &s->disk[n][k];
	}
	memset(d, 0, sizeof(*d));
	d->holder = NOBODY;
	if (rec != NULL) {
		d->present = true;
		d->key = key_fence;
		d->rec = *rec;
		if ((h = shold_find(&s->sh[n], rec->fence)) != NULL)
			d->holder = h->holder;
	}
}

/* Delivers a durable reply after its commit. */
static void
deliver(struct sys *s, const struct delivery *d)
{
	struct shadow *sh = &s->sh[d->name];
	struct knowledge *k = &s->cl[d->client].know[d->name];
	int c, believers = 0;

	if (d->kind == CORE_REPLY_GRANTED && d->repeat) {
		/* The grant again: no new fence, so none to compare. */
		if (shold_find(sh, d->handle.fence) == NULL) {
			violate(s, MODEL_RID_IDEMPOTENT, "%c was given the "
			    "repeat of fence %llu for %s, no longer held",
			    label(s, d->client),
			    (unsigned long long)d->handle.fence,
			    lock_name(s, d->name));
			return;
		}
	} else if (d->kind == CORE_REPLY_GRANTED) {
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
	/* What the clients believe: an exclusive holder alone, shared
	 * holders together, and never more than the limit. */
	for (c = 0; c < s->sc->nclients; c++) {
		struct knowledge *o = &s->cl[c].know[d->name];

		/* A repeat's grant is the one another incarnation of its
		 * client may still believe it holds: the same, not two, and
		 * the repeating one holds it from now on. */
		if (d->repeat && o->handle.fence == d->handle.fence &&
		    o->handle.secret == d->handle.secret) {
			if (c != d->client)
				o->believes = false;
			continue;
		}
		if (c == d->client || !o->believes || o->until <= s->now)
			continue;
		believers++;
		if (d->limit > 1 && believers + 1 > d->limit) {
			violate(s, MODEL_HOLDER_LIMIT, "%c holds %s from %lld "
			    "(fence %llu) while %d others hold it, limit %d",
			    label(s, d->client), lock_name(s, d->name),
			    (long long)s->now,
			    (unsigned long long)d->handle.fence, believers,
			    d->limit);
			return;
		}
		if (d->limit <= 1 && !(d->shared && o->shared)) {
			violate(s, MODEL_MUTUAL_EXCLUSION, "%c holds %s from "
			    "%lld (fence %llu%s) while %c holds it until %lld "
			    "(fence %llu%s)", label(s, d->client),
			    lock_name(s, d->name), (long long)s->now,
			    (unsigned long long)d->handle.fence,
			    d->shared ? ", shared" : "", label(s, c),
			    (long long)o->until,
			    (unsigned long long)o->handle.fence,
			    o->shared ? ", shared" : "");
			return;
		}
	}
	k->has_handle = true;
	k->handle = d->handle;
	k->believes = true;
	k->until = d->until;
	k->onclose = d->onclose;
	k->shared = d->shared;
	k->limit = d->limit;
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

/* The records of lock n on the disk, into recs[MODEL_KEYS]. */
static size_t
disk_records(const struct sys *s, int n, struct core_record *recs)
{
	size_t k, i = 0;

	for (k = 0; k < MODEL_KEYS; k++)
		if (s->disk[n][k].present)
			recs[i++] = s->disk[n][k].rec;
	return i;
}

/* The shadow of lock n falls back to what the disk holds. */
static void
shadow_from_disk(struct sys *s, int n)
{
	struct shadow *sh = &s->sh[n];
	uint16_t queued = sh->qlen > 0 ? sh->limit : 0;
	int k;

	sh->nheld = 0;
	memset(sh->h, 0, sizeof(sh->h));
	sh->delay_until = 0;
	sh->limit = 1;
	for (k = 0; k < MODEL_KEYS; k++) {
		const struct disk_record *d = &s->disk[n][k];
		struct shold *h;

		if (!d->present)
			continue;
		if (d->rec.delay_until > sh->delay_until)
			sh->delay_until = d->rec.delay_until;
		if (d->rec.limit > sh->limit)
			sh->limit = d->rec.limit;
		if (d->rec.fence == 0)
			continue;
		h = &sh->h[sh->nheld++];
		h->delay_ms = d->rec.delay_ms;
		h->holder = d->holder;
		h->onclose = d->rec.onclose_release;
		h->shared = d->rec.shared;
		h->fence = d->rec.fence;
		h->secret = d->rec.secret;
		h->expiry = d->rec.expiry;
		h->lease_ms = d->rec.lease_ms;
		h->rid_len = d->rec.rid_len <= sizeof(h->rid) ?
		    d->rec.rid_len : 0;
		memcpy(h->rid, d->rec.rid, h->rid_len);
	}
	/* In grant order, as the shadow keeps them. */
	for (k = 1; k < sh->nheld; k++) {
		struct shold t = sh->h[k];
		int j = k;

		while (j > 0 && sh->h[j - 1].fence > t.fence) {
			sh->h[j] = sh->h[j - 1];
			j--;
		}
		sh->h[j] = t;
	}
	/* Nobody holds and no lock-delay runs: the name is idle but for
	 * its waiters, and keeps the limit they were admitted under. */
	if (queued != 0 && sh->nheld == 0 && sh->delay_until <= s->now) {
		if (sh->limit != queued)
			cover(s, MODEL_COV_FALLBACK_KEPT_LIMIT);
		sh->limit = queued;
	}
}

/* After a fall-back: a waiter admitted under another limit than the one
 * the name came back with is owed its BADARG, as on arrival. */
static void
misfits_refused(struct sys *s, int n)
{
	const struct shadow *sh = &s->sh[n];
	int i;

	for (i = 0; i < sh->qlen && s->violated == MODEL_OK; i++)
		if (s->cl[sh->queue[i]].req_limit != sh->limit)
			violate(s, MODEL_SHADOW_AGREEMENT, "%c waits for %s "
			    "under limit %d, restored with limit %d: it is "
			    "owed BADARG", label(s, sh->queue[i]),
			    lock_name(s, n), s->cl[sh->queue[i]].req_limit,
			    sh->limit);
}

/* Lock n restored from what the disk holds, as recovery does it. */
static void
restore_from_disk(struct sys *s, int n)
{
	struct core_record recs[MODEL_KEYS];
	size_t k = disk_records(s, n, recs);

	core_table_restore_holders(&s->table, s->sc->names[n],
	    strlen(s->sc->names[n]), recs, k, s->now);
}

static void
on_touched(void *ctx, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec)
{
	struct sys *s = ctx;
	int n = name_of(s, name, name_len);

	(void)key_fence;
	(void)rec;
	if (n >= 0)
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
		if (s->touched[n]) {
			shadow_from_disk(s, n);
			delay_due(s, n);
		}
	for (n = 0; n < s->sc->nnames; n++)
		if (s->touched[n])
			restore_from_disk(s, n);
	process_log(s);
	s->falling_back = false;
	for (n = 0; n < s->sc->nnames; n++)
		if (s->touched[n])
			misfits_refused(s, n);
	if (s->violated == MODEL_OK)
		commit(s, true);
}

/* The connection of every client closes; the daemon restarts from disk.
 * Replies not yet sent are lost, and with them, when `committed` is false,
 * the changes they report.  A fail-over (cluster mode) is the same, but
 * another node takes over the committed state by the take-over rule. */
static void
restart(struct sys *s, bool committed, bool failover)
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
	if (failover)
		model__takeover_disk(s);
	for (n = 0; n < s->sc->nnames; n++) {
		s->sh[n].qlen = 0;
		shadow_from_disk(s, n);
		if (s->sh[n].delay_until > s->now && s->sh[n].nheld == 0)
			cover(s, MODEL_COV_DELAY_RESTORED);
		delay_due(s, n);
	}
	if (failover)
		s->failovers++;
	else
		s->crashes++;
	s->boot++;

	table_start(s);
	core_table_restore_hwm(&s->table, failover ?
	    model__takeover_hwm(s) : s->disk_hwm);
	s->restoring = true;
	for (n = 0; n < s->sc->nnames; n++) {
		struct core_record recs[MODEL_KEYS];

		if (disk_records(s, n, recs) > 0)
			restore_from_disk(s, n);
	}
	process_log(s);
	s->restoring = false;
	for (n = 0; n < s->sc->nnames; n++)
		if (s->sh[n].nheld > 0)
			cover(s, MODEL_COV_RESTORED_HOLDER);
	if (s->violated == MODEL_OK)
		commit(s, true);
}

static void
crash(struct sys *s, bool committed)
{
	restart(s, committed, false);
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
		m->req_delay = op->delay_ms;
		m->req_fence = op->fence;
		m->req_watch_any = op->kind == MODEL_WATCH &&
		    op->fence == MODEL_WATCH_ANY;
		m->req_rid = op->kind == MODEL_ACQUIRE ||
		    op->kind == MODEL_TRY ? op->rid : NULL;
		m->req_limit = op->limit > 1 ? op->limit : 1;
		m->req_shared = op->shared;
	}
	/* The op's implicit reclaim ends a lock-delay that ran out. */
	if (op->kind != MODEL_DISCONNECT)
		delay_due(s, op->name);
	switch (op->kind) {
	case MODEL_ACQUIRE:
	case MODEL_TRY:
		/* The same arguments; a TRY never waits. */
		memset(&args, 0, sizeof(args));
		args.lease_ms = op->lease_ms;
		if (op->kind == MODEL_ACQUIRE)
			args.wait_ms = op->wait_ms;
		args.onclose_release = op->onclose;
		args.delay_ms = op->delay_ms;
		args.rid = op->rid;
		args.rid_len = op->rid != NULL ? strlen(op->rid) : 0;
		args.limit = op->limit;
		args.shared = op->shared;
		if (op->kind == MODEL_ACQUIRE)
			core_acquire(&s->table, &s->sess[c], name, len, &args,
			    tag, s->now);
		else
			core_try(&s->table, &s->sess[c], name, len, &args,
			    tag, s->now);
		break;
	case MODEL_FORCE:
		core_force(&s->table, &s->sess[c], name, len, op->fence, tag,
		    s->now);
		break;
	case MODEL_WATCH:
		core_watch(&s->table, &s->sess[c], name, len,
		    op->fence != MODEL_WATCH_ANY, op->fence, op->wait_ms, tag,
		    s->now);
		break;
	case MODEL_RENEW:
	case MODEL_RELEASE:
	case MODEL_FORGE_RENEW:
	case MODEL_FORGE_RELEASE:
		if (op->kind == MODEL_RENEW || op->kind == MODEL_RELEASE) {
			m->req_handle = m->know[op->name].handle;
		} else {
			/* STATUS shows anyone the fence; the secret is a
			 * guess. */
			m->req_handle.fence = sh->nheld > 0 ?
			    shadow_current(sh) : sh->max_delivered ?
			    sh->max_delivered : 1;
			m->req_handle.secret = (sh->nheld > 0 ?
			    shold_newest(sh)->secret : 0) ^
			    0xf0f0f0f0f0f0f0f0ULL;
		}
		if (op->kind == MODEL_RENEW || op->kind == MODEL_FORGE_RENEW)
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
	int i;

	if (s->acting < 0 || s->violated != MODEL_OK)
		return;
	m = &s->cl[s->acting];
	if (m->req_tag == 0 || m->queued)
		return;
	op = &s->sc->clients[s->acting].ops[m->pc - 1];
	if (op->kind == MODEL_WATCH && op->wait_ms != 0) {
		m->queued = true;
		m->deadline = op->wait_ms > 0 ? s->now + op->wait_ms :
		    CORE_NEVER;
		if (m->req_watch_any) {
			m->req_fence = shadow_current(&s->sh[op->name]);
			m->req_holders = s->sh[op->name].nheld;
		}
		return;
	}
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
	if (rid_holds(s, op->name, m)) {
		violate(s, MODEL_RID_IDEMPOTENT, "%c's ACQUIRE with rid=%s "
		    "queued behind its own live grant (fence %llu)",
		    label(s, s->acting), m->req_rid,
		    (unsigned long long)rid_holder(s, op->name, m)->fence);
		return;
	}
	for (i = 0; m->req_rid != NULL && i < s->sh[op->name].qlen; i++) {
		const struct client *o = &s->cl[s->sh[op->name].queue[i]];

		if (o->req_rid != NULL && strcmp(o->req_rid, m->req_rid) == 0) {
			violate(s, MODEL_RID_IDEMPOTENT, "rid=%s waits twice "
			    "for %s (%c and %c)", m->req_rid,
			    lock_name(s, op->name),
			    label(s, s->sh[op->name].queue[i]),
			    label(s, s->acting));
			return;
		}
	}
	m->queued = true;
	m->deadline = op->wait_ms > 0 ? s->now + op->wait_ms : CORE_NEVER;
	if (s->sh[op->name].nheld == 0 && s->sh[op->name].qlen == 0)
		cover(s, MODEL_COV_DELAY_HELD_BACK);
	if (m->req_shared && s->sh[op->name].nheld > 0 &&
	    shadow_shared(&s->sh[op->name]) && s->sh[op->name].qlen > 0)
		cover(s, MODEL_COV_READER_BEHIND_WRITER);
	if (s->sh[op->name].limit > 1 &&
	    s->sh[op->name].nheld >= s->sh[op->name].limit)
		cover(s, MODEL_COV_SEMAPHORE_FULL);
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

/* The clients whose WATCH of lock n is pending. */
static int
watching(const struct sys *s, int n)
{
	int c, k = 0;

	for (c = 0; c < s->sc->nclients; c++)
		if (s->cl[c].req_tag != 0 && s->cl[c].queued &&
		    s->cl[c].req_kind == MODEL_WATCH && s->cl[c].req_name == n)
			k++;
	return k;
}

/* Does the table's holder of lock n with h's fence agree with h? */
static bool
hold_agrees(struct sys *s, const struct core_entry *e, const struct shold *h,
    char *why, size_t whylen)
{
	const char *name = e->name;
	const struct core_lock *lock = NULL;
	const struct core_timer *timer = NULL;
	const struct core_session *owner = NULL;
	const struct core_holder *o;
	const char *rid;
	size_t rid_len;
	bool shared = false;

	if (e->lock.fence == h->fence) {
		lock = &e->lock;
		timer = &e->timer;
		owner = core_entry_owner(e);
	}
	for (o = e->multi != NULL ? e->multi->holders : NULL; o != NULL &&
	    lock == NULL; o = o->next)
		if (o->lock.fence == h->fence) {
			lock = &o->lock;
			timer = &o->timer;
			owner = o->owner;
			shared = o->shared;
		}
	if (lock == NULL || lock->secret != h->secret ||
	    lock->expiry != h->expiry || shared != h->shared) {
		snprintf(why, whylen, "%.*s: the model's holder fence %llu "
		    "until %lld is not the table's (%s)", (int)e->name_len,
		    name, (unsigned long long)h->fence, (long long)h->expiry,
		    lock == NULL ? "missing" : "differs");
		return false;
	}
	rid_len = core_tags_rid(lock->tags, &rid);
	if (rid_len != h->rid_len || memcmp(rid, h->rid, h->rid_len) != 0) {
		snprintf(why, whylen, "%.*s: the table's holder has rid=%.*s, "
		    "the model's rid=%.*s", (int)e->name_len, name,
		    (int)rid_len, rid, (int)h->rid_len, h->rid);
		return false;
	}
	if (owner != (h->onclose && h->holder != NOBODY ?
	    &s->sess[h->holder] : NULL)) {
		snprintf(why, whylen, "%.*s: fence %llu bound to the wrong "
		    "session", (int)e->name_len, name,
		    (unsigned long long)h->fence);
		return false;
	}
	if (timer->slot == UINT32_MAX || timer->when != h->expiry) {
		snprintf(why, whylen, "%.*s: the lease timer of fence %llu is "
		    "not at its expiry", (int)e->name_len, name,
		    (unsigned long long)h->fence);
		return false;
	}
	return true;
}

/* Does the table's view of lock n agree with the shadow? */
static bool
table_agrees(struct sys *s, int n, char *why, size_t whylen)
{
	const char *name = s->sc->names[n];
	const struct core_entry *e = core_table_find(&s->table, name,
	    strlen(name));
	const struct shadow *sh = &s->sh[n];
	const struct core_link *l;
	size_t held = e == NULL ? 0 : (e->lock.fence != 0) +
	    (e->multi != NULL ? e->multi->count : 0);
	int i = 0;

	if (held != sh->nheld) {
		snprintf(why, whylen, "%s: the table has %zu holders, the "
		    "model %d", name, held, sh->nheld);
		return false;
	}
	for (i = 0; i < sh->nheld; i++)
		if (!hold_agrees(s, e, &sh->h[i], why, whylen))
			return false;
	i = 0;
	if (e != NULL && e->lock.fence == 0 && (sh->delay_until == 0 ?
	    e->timer.slot != UINT32_MAX :
	    (e->timer.slot == UINT32_MAX ||
	    e->timer.when != sh->delay_until))) {
		snprintf(why, whylen, "%s: a free lock's timer is not at its "
		    "lock-delay's end", name);
		return false;
	}
	if (e != NULL && sh->nheld > 0) {
		struct core_lock_status st;

		core_list_status(&s->table, e, s->now, &st);
		if (st.limit != sh->limit || st.holders != sh->nheld ||
		    st.fence != shadow_current(sh) ||
		    st.shared != (sh->nheld > 0 && shadow_shared(sh))) {
			snprintf(why, whylen, "%s: STATUS says %u holders, "
			    "limit %u, fence %llu%s; the model %d, %d, %llu",
			    name, st.holders, st.limit,
			    (unsigned long long)st.fence, st.shared ?
			    ", shared" : "", sh->nheld, sh->limit,
			    (unsigned long long)shadow_current(sh));
			return false;
		}
	}
	if ((e != NULL ? core_entry_delay_until(e) : 0) != sh->delay_until) {
		snprintf(why, whylen, "%s: the table's lock-delay ends at "
		    "%lld, the model's at %lld", name,
		    e ? (long long)core_entry_delay_until(e) : 0LL,
		    (long long)sh->delay_until);
		return false;
	}
	if (e == NULL) {
		if (sh->qlen != 0) {
			snprintf(why, whylen, "%s: the table has no queue, the "
			    "model %d waiters", name, sh->qlen);
			return false;
		}
		return true;
	}
	for (l = core_entry_queue_first(e); l != core_entry_queue(e); l = l->next, i++) {
		const struct core_waiter *w = (const void *)((const char *)l -
		    offsetof(struct core_waiter, queue_link));
		int c = model__client_of(s, w->session);
		const struct client *m = c >= 0 ? &s->cl[c] : NULL;

		if (i >= sh->qlen || c != sh->queue[i] || !m->queued ||
		    w->tag != m->req_tag || w->shared != m->req_shared) {
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
	if (i != sh->qlen || i != (int)core_entry_queue_len(e)) {
		snprintf(why, whylen, "%s: the table has %d waiters, the "
		    "model %d", name, i, sh->qlen);
		return false;
	}
	if ((int)(e->multi != NULL ? e->multi->watch_len : 0) !=
	    watching(s, n)) {
		snprintf(why, whylen, "%s: the table has %u WATCHes, the "
		    "model %d", name, e->multi != NULL ?
		    e->multi->watch_len : 0, watching(s, n));
		return false;
	}
	return true;
}

/* Does the disk hold exactly the committed state of lock n: a record per
 * holder under its key (<name> for an exclusive hold of a limit-1 name),
 * each with the name's lock-delay, and a free name's delay under <name>. */
static bool
disk_agrees(struct sys *s, int n)
{
	const struct shadow *sh = &s->sh[n];
	int i, k, present = 0;

	for (k = 0; k < MODEL_KEYS; k++) {
		const struct disk_record *d = &s->disk[n][k];

		if (!d->present)
			continue;
		present++;
		if (d->rec.delay_until != sh->delay_until)
			return false;
		if (d->rec.fence == 0 && (d->key != 0 || sh->nheld != 0))
			return false;
	}
	if (present != sh->nheld + (sh->nheld == 0 && sh->delay_until != 0))
		return false;
	for (i = 0; i < sh->nheld; i++) {
		const struct shold *h = &sh->h[i];
		const struct disk_record *d = disk_find(s, n,
		    sh->limit <= 1 && !h->shared ? 0 : h->fence);

		if (d == NULL || d->rec.fence != h->fence ||
		    d->rec.secret != h->secret ||
		    d->rec.expiry != h->expiry ||
		    d->rec.lease_ms != h->lease_ms ||
		    d->rec.delay_ms != h->delay_ms ||
		    d->rec.shared != h->shared ||
		    d->rec.onclose_release != h->onclose)
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
		const char *name = s->sc->names[n];
		const struct core_entry *e;

		if (!table_agrees(s, n, why, sizeof(why))) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s", why);
			return;
		}
		/* Within a batch nothing is drained or written yet. */
		if (s->batch_open)
			continue;
		e = core_table_find(&s->table, name, strlen(name));
		if ((e != NULL) != (sh->nheld > 0 || sh->qlen > 0 ||
		    sh->delay_until != 0 || watching(s, n) > 0)) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s: idle entry kept "
			    "or busy entry missing", name);
			return;
		}
		if (!disk_agrees(s, n)) {
			violate(s, MODEL_SHADOW_AGREEMENT, "%s: the disk "
			    "disagrees with the committed state", name);
			return;
		}
	}
	/* The durability of the counter is not checked here: that is
	 * FencingMonotonic's business, on every grant, across crashes. */
}

/* ---- one step --------------------------------------------------------- */

void
model__step(struct sys *s, uint8_t action)
{
	uint8_t base = action & (uint8_t)~ACT_FLAGS;
	bool lost = (action & ACT_LOST) != 0;
	bool unsent = (action & ACT_UNSENT) != 0;
	bool failed = (action & ACT_FAILED) != 0;
	bool batched = (action & ACT_BATCHED) != 0;
	int n, op_name = -1;

	if (!batched && !(action & ACT_FAILED))
		s->batch_open = 0;

	s->nlog = 0;
	if (!s->batch_open)   /* else the batch's first replies wait */
		s->npending = 0;
	s->acting = -1;
	s->closing = -1;
	s->stale_op = false;
	s->records = 0;
	s->hwm_moved = false;
	s->action = base;
	s->last_end = -1;
	s->delay_ended = false;
	s->granted_shared = false;
	s->cov = 0;

	switch (base) {
	case ACT_CLOCK:
		s->clock++;
		s->now = s->sc->times[s->clock];
		return;
	case ACT_CRASH:
		crash(s, true);
		break;
	case ACT_FAILOVER:
		restart(s, true, true);
		break;
	case ACT_TICK:
		for (n = 0; n < s->sc->nnames; n++)
			delay_due(s, n);
		core_tick(&s->table, s->now);
		break;
	default:
		op_name = s->sc->clients[base].ops[s->cl[base].pc].name;
		run_op(s, base);
		break;
	}
	if (base != ACT_CRASH && base != ACT_FAILOVER) {
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
		else if (failed) {
			s->batch_open = 0;
			fail_commit(s);
		} else if (batched)
			s->batch_open++;
		else {
			commit(s, !unsent);
			/* (Its reclaim may end a lock-delay, which makes
			 * no reply but changes the record.) */
			if (s->stale_op && s->nlog == 1 && !s->delay_ended &&
			    s->violated == MODEL_OK &&
			    (s->records != 0 || s->hwm_moved))
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
		for (n = 0; n < s->sc->nnames; n++) {
			int i;

			for (i = 0; i < s->sh[n].nheld; i++) {
				const struct shold *h = &s->sh[n].h[i];

				if (h->expiry > s->now)
					continue;
				violate(s, MODEL_LEASE_RECLAMATION_SAFETY, "the "
				    "tick at %lld left fence %llu of %s, "
				    "expired at %lld", (long long)s->now,
				    (unsigned long long)h->fence,
				    s->sc->names[n], (long long)h->expiry);
				return;
			}
		}
	/* WatchOnce, the late half: the step that changed the holder
	 * answered every WATCH that change fires. */
	for (n = 0; n < MODEL_CLIENTS && n < s->sc->nclients; n++) {
		const struct client *m = &s->cl[n];

		if (m->req_tag != 0 && m->queued &&
		    m->req_kind == MODEL_WATCH &&
		    shadow_watch_changed(&s->sh[m->req_name], m)) {
			violate(s, MODEL_WATCH_ONCE, "%c's WATCH of %s (fence "
			    "%llu, %u holders) still waits at %lld after "
			    "fence %llu, %u holders came",
			    label(s, n), s->sc->names[m->req_name],
			    (unsigned long long)m->req_fence,
			    m->req_holders, (long long)s->now,
			    (unsigned long long)
			    shadow_current(&s->sh[m->req_name]),
			    s->sh[m->req_name].nheld);
			return;
		}
	}
	/* NoStarvation, the immediate half: the head of a queue does not
	 * wait for a lock out of its lock-delay whose holders admit it (a
	 * free one, shared holders for a reader, a free permit). */
	for (n = 0; n < s->sc->nnames; n++)
		if (s->sh[n].qlen > 0 && s->sh[n].delay_until == 0 &&
		    shadow_admits(&s->sh[n],
		    s->cl[s->sh[n].queue[0]].req_shared)) {
			violate(s, MODEL_NO_STARVATION, "%c waits for %s, "
			    "whose %d holder(s) admit it",
			    label(s, s->sh[n].queue[0]), s->sc->names[n],
			    s->sh[n].nheld);
			return;
		}
	check_agreement(s);
	skip_dead_ops(s);
}

/* The end of a schedule: time runs past every deadline, ticking at each;
 * then every waiter must have been granted, timed out or gone. */
void
model__run_out_the_clock(struct sys *s)
{
	int i, c;

	/* A batch nothing else could join fails alone. */
	if (s->batch_open) {
		s->batch_open = 0;
		s->nlog = 0;
		s->acting = -1;
		s->closing = -1;
		fail_commit(s);
	}
	for (i = 0; i < 64 && s->violated == MODEL_OK; i++) {
		core_time d = core_next_deadline(&s->table);

		if (d == CORE_NEVER)
			break;
		if (d > s->now)
			s->now = d;
		model__step(s, ACT_TICK);
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

size_t
model__enabled(const struct sys *s, uint8_t *acts)
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
	if (s->batch_open) {
		/* The batch goes on, or ends in its failed commit; the
		 * clock stands still within one turn of the loop. */
		if (core_next_deadline(&s->table) <= s->now)
			acts[n++] = ACT_TICK;
		plain = n;
		for (i = 0; i < plain; i++) {
			if (s->batch_open + 1 < s->sc->batch)
				acts[n++] = acts[i] | ACT_BATCHED;
			acts[i] |= ACT_FAILED;
		}
		return n;
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
	if (plain > 0 && s->failovers < s->sc->failovers)
		acts[n++] = ACT_FAILOVER;
	if (s->failures < s->sc->commit_failures)
		for (i = 0; i < plain; i++)
			if (acts[i] != ACT_CLOCK)
				acts[n++] = acts[i] | ACT_FAILED;
	if (s->failures < s->sc->commit_failures && s->sc->batch > 1)
		for (i = 0; i < plain; i++)
			if (acts[i] != ACT_CLOCK)
				acts[n++] = acts[i] | ACT_BATCHED;
	return n;
}

const char *
model__op_word(enum model_op_kind k)
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
	case MODEL_FORCE:
		return "force";
	case MODEL_WATCH:
		return "watch";
	}
	return "?";
}
