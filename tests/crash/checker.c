/*
 * checker.c - the crash tests' external checker (see checker.h).  It keeps
 * every told grant with the RENEW and RELEASE requests that carried its
 * handle, and judges each observation against them.  It never talks to
 * lockd and never reads a clock: every time comes from its caller.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tests/crash/checker.h"

static const char *const violation_names[CHK_VIOLATION_COUNT] = {
	[CHK_REWIND] = "rewind",
	[CHK_REISSUE] = "reissue",
	[CHK_OVERLAP] = "overlap",
	[CHK_FORGOTTEN] = "forgotten",
	[CHK_REFUSED] = "refused",
	[CHK_LENGTHENED] = "lengthened",
	[CHK_ONCLOSE] = "onclose",
	[CHK_OWNER] = "owner",
	[CHK_DELAY] = "delay",
	[CHK_RID] = "rid",
	[CHK_UNRECOVERABLE] = "unrecoverable",
};

#define MAX_REPORTS 40

const char *
chk_violation_name(enum chk_violation v)
{
	return v < CHK_VIOLATION_COUNT ? violation_names[v] : "?";
}

void
chk_init(struct chk *c, int names, const char *const *name_text, FILE *out,
    int64_t t0)
{
	memset(c, 0, sizeof(*c));
	c->names = names < CHK_MAX_NAMES ? names : CHK_MAX_NAMES;
	c->name_text = name_text;
	c->out = out;
	c->report_limit = MAX_REPORTS;
	c->t0 = t0;
}

void
chk_free(struct chk *c)
{
	size_t i;
	int n;

	for (i = 0; i < c->count; i++)
		free(c->grants[i].ev);
	free(c->grants);
	for (n = 0; n < CHK_MAX_NAMES; n++) {
		free(c->lists[n].idx);
		free(c->lists[n].top);
	}
	memset(c, 0, sizeof(*c));
}

static void __attribute__((format(printf, 3, 4)))
violation(struct chk *c, enum chk_violation v, const char *fmt, ...)
{
	va_list ap;

	c->stats.violations[v]++;
	if (c->out == NULL || c->reported++ >= c->report_limit)
		return;
	fprintf(c->out, "VIOLATION %s: ", violation_names[v]);
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fputc('\n', c->out);
	fflush(c->out);
}

/* Milliseconds since the start of the run, for the reports. */
static long long
rel(const struct chk *c, int64_t t)
{
	return t == CHK_NEVER ? -1 : (long long)(t - c->t0);
}

static const char *
name_of(const struct chk *c, int name)
{
	return c->name_text != NULL ? c->name_text[name] : "?";
}

static void *
grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	if ((q = realloc(p, n * size)) == NULL) {
		fprintf(stderr, "checker: out of memory\n");
		abort();
	}
	*cap = n;
	return q;
}

/* Prints the history of grant g under a violation report. */
static void
explain(const struct chk *c, const struct chk_grant *g)
{
	static const char *const outcomes[] = { "pending", "ok", "refused",
	    "unavailable", "unknown" };
	uint32_t i;

	if (c->out == NULL || c->reported > c->report_limit)
		return;
	fprintf(c->out, "    fence %llu: run %d, sent %lld, told %lld, lease "
	    "%lld%s", (unsigned long long)g->fence, g->cycle, rel(c, g->sent),
	    rel(c, g->recv), (long long)g->lease,
	    g->onclose ? ", onclose=release" : "");
	if (g->onclose && g->closed != CHK_NEVER)
		fprintf(c->out, ", closed %lld", rel(c, g->closed));
	fputc('\n', c->out);
	for (i = 0; i < g->nev; i++)
		fprintf(c->out, "      %s run %d sent %lld lease %lld: %s at "
		    "%lld\n", g->ev[i].kind == CHK_EV_RENEW ? "RENEW" :
		    "RELEASE", g->ev[i].cycle, rel(c, g->ev[i].sent),
		    (long long)g->ev[i].lease, outcomes[g->ev[i].outcome],
		    rel(c, g->ev[i].recv));
}

/* ---- the lease intervals --------------------------------------------- */

/* What a cut of a crash image knows: events sent before `cut`, and their
 * outcomes only when read at a journal position <= jpos (or in an earlier
 * run).  A NULL cut knows everything. */
struct cut {
	int cycle;
	uint64_t jpos;
	int64_t time;
};

static bool
told_by(const struct cut *cut, int cycle, uint64_t jpos)
{
	return cut == NULL || cycle < cut->cycle ||
	    (cycle == cut->cycle && jpos <= cut->jpos);
}

/*
 * Bounds on the expiry of g as an observation sees it that lockd made at
 * some instant in [lo, hi]: *sure, until when the lease is certainly held
 * (checker.h), and *latest, the latest instant it may run to (CHK_NEVER:
 * unbounded).  Requests sent after hi are not seen; one whose outcome was
 * read before lo is; any other may or may not have happened first.  With a
 * cut, an outcome counts only when it was told before the cut.
 */
static void
bounds(const struct chk_grant *g, int64_t lo, int64_t hi,
    const struct cut *cut, int64_t *sure, int64_t *latest)
{
	int64_t s = g->sent + g->lease, l = g->recv + g->lease;
	uint32_t i;

	for (i = 0; i < g->nev; i++) {
		const struct chk_event *e = &g->ev[i];
		int outcome = e->outcome;
		bool certain;

		/* Times are whole milliseconds: an event in the same one as
		 * the observation may come before or after it. */
		if (e->sent > hi)
			break;   /* events are in the order they were sent */
		if (cut != NULL && outcome != CHK_PENDING &&
		    !told_by(cut, e->cycle, e->jpos))
			outcome = CHK_UNKNOWN;
		certain = outcome != CHK_PENDING && outcome != CHK_UNKNOWN &&
		    (cut != NULL || e->recv < lo);
		if (e->kind == CHK_EV_RELEASE) {
			if (e->sent < s)
				s = e->sent;
			continue;
		}
		if (outcome == CHK_OK && certain) {
			s = e->sent + e->lease;
			l = e->recv + e->lease;
		} else if (outcome == CHK_OK || outcome == CHK_UNKNOWN ||
		    outcome == CHK_PENDING) {
			/* Maybe renewed, maybe not. */
			if (e->sent + e->lease < s)
				s = e->sent + e->lease;
			if (outcome == CHK_PENDING || e->recv == CHK_NEVER ||
			    l == CHK_NEVER)
				l = CHK_NEVER;
			else if (e->recv + e->lease > l)
				l = e->recv + e->lease;
		}
	}
	if (g->onclose && g->closed < s)
		s = g->closed;
	*sure = s;
	*latest = l;
}

/* The instant until which the lease of g is certainly held, on all that
 * is known (cut NULL) or at a cut. */
static int64_t
sure_end(const struct chk_grant *g, const struct cut *cut)
{
	int64_t sure, latest;

	if (cut != NULL)
		bounds(g, cut->time, cut->time, cut, &sure, &latest);
	else
		bounds(g, CHK_NEVER, CHK_NEVER, NULL, &sure, &latest);
	return sure;
}

/* ---- grants ------------------------------------------------------------ */

/* The grant with the highest fence among the first k of list l. */
static const struct chk_grant *
top_of(const struct chk *c, const struct chk_list *l, size_t k)
{
	return k == 0 ? NULL : &c->grants[l->top[k - 1]];
}

int64_t
chk_granted(struct chk *c, int name, uint64_t fence, const char *handle,
    int64_t sent, int64_t recv, int64_t lease, bool onclose, uint64_t jpos)
{
	struct chk_list *l = &c->lists[name];
	const struct chk_grant *top;
	struct chk_grant *g;
	size_t k = l->n, index;

	c->stats.grants++;
	/* Grants read after this request was sent may have been granted
	 * before or after it: only a repeated fence is wrong among them. */
	while (k > 0 && c->grants[l->idx[k - 1]].recv >= sent) {
		const struct chk_grant *o = &c->grants[l->idx[k - 1]];
		if (o->fence == fence)
			violation(c, CHK_REISSUE, "%s: fence %llu told at %lld "
			    "and again at %lld", name_of(c, name),
			    (unsigned long long)fence, rel(c, o->recv),
			    rel(c, recv));
		k--;
	}
	/* Grants read before it was sent came first: a higher fence now. */
	if ((top = top_of(c, l, k)) != NULL && top->fence >= fence)
		violation(c, top->fence == fence ? CHK_REISSUE : CHK_REWIND,
		    "%s: fence %llu (requested at %lld, told at %lld) after "
		    "fence %llu was told at %lld (run %d)", name_of(c, name),
		    (unsigned long long)fence, rel(c, sent), rel(c, recv),
		    (unsigned long long)top->fence, rel(c, top->recv),
		    top->cycle);

	c->grants = grow(c->grants, &c->cap, c->count + 1, sizeof(*c->grants));
	index = c->count++;
	g = &c->grants[index];
	memset(g, 0, sizeof(*g));
	g->name = name;
	g->fence = fence;
	snprintf(g->handle, sizeof(g->handle), "%s", handle);
	g->sent = sent;
	g->recv = recv;
	g->lease = lease;
	g->onclose = onclose;
	g->closed = CHK_NEVER;
	g->cycle = c->cycle;
	g->jpos = jpos;

	{
		size_t cap = l->cap;
		l->idx = grow(l->idx, &cap, l->n + 1, sizeof(*l->idx));
		cap = l->cap;
		l->top = grow(l->top, &cap, l->n + 1, sizeof(*l->top));
		l->cap = cap;
	}
	l->idx[l->n] = index;
	l->top[l->n] = l->n > 0 && c->grants[l->top[l->n - 1]].fence > fence ?
	    l->top[l->n - 1] : index;
	l->n++;
	return (int64_t)index;
}

void
chk_grant_options(struct chk *c, int64_t g, const char *owner,
    size_t owner_len, int64_t delay)
{
	struct chk_grant *gr;

	if (g < 0 || (size_t)g >= c->count)
		return;
	gr = &c->grants[g];
	gr->delay = delay;
	gr->owner_len = (uint8_t)(owner_len < sizeof(gr->owner) ? owner_len :
	    sizeof(gr->owner));
	if (gr->owner_len > 0)    /* owner may be NULL then */
		memcpy(gr->owner, owner, gr->owner_len);
}

/* How far back a told grant is looked for by its fence. */
#define OWNER_LOOKBACK 4096

void
chk_grant_rid(struct chk *c, int64_t g, const char *rid, size_t rid_len)
{
	struct chk_grant *gr;

	if (g < 0 || (size_t)g >= c->count)
		return;
	gr = &c->grants[g];
	gr->rid_len = (uint8_t)(rid_len < sizeof(gr->rid) ? rid_len :
	    sizeof(gr->rid));
	if (gr->rid_len > 0)
		memcpy(gr->rid, rid, gr->rid_len);
}

/* The told grant of `fence` on `name`, or -1. */
static int64_t
told_grant(const struct chk *c, int name, uint64_t fence)
{
	const struct chk_list *l = &c->lists[name];
	size_t k, seen;

	for (k = l->n, seen = 0; k > 0 && seen < OWNER_LOOKBACK; k--, seen++)
		if (c->grants[l->idx[k - 1]].fence == fence)
			return (int64_t)l->idx[k - 1];
	return -1;
}

void
chk_rid_seen(struct chk *c, int name, uint64_t fence, const char *rid,
    size_t rid_len)
{
	int64_t k = fence != 0 ? told_grant(c, name, fence) : -1;
	const struct chk_grant *g;

	if (k < 0)
		return;
	g = &c->grants[k];
	c->stats.rid_checks++;
	if (g->rid_len != rid_len || (rid_len > 0 &&
	    memcmp(g->rid, rid, rid_len) != 0))
		violation(c, CHK_RID, "%s: fence %llu (told at %lld with "
		    "rid=%.*s) stored with rid=%.*s", name_of(c, name),
		    (unsigned long long)fence, rel(c, g->recv),
		    (int)g->rid_len, g->rid, (int)rid_len, rid);
}

int64_t
chk_rid_live(const struct chk *c, int name, uint64_t fence, int64_t until)
{
	int64_t k = fence != 0 ? told_grant(c, name, fence) : -1;

	if (k < 0 || c->grants[k].rid_len == 0 ||
	    sure_end(&c->grants[k], NULL) <= until)
		return -1;
	return k;
}

void
chk_rid_repeat(struct chk *c, int64_t g, bool granted, uint64_t fence,
    const char *handle, const char *what)
{
	const struct chk_grant *gr;

	if (g < 0 || (size_t)g >= c->count)
		return;
	gr = &c->grants[g];
	c->stats.rid_checks++;
	if (!granted || fence != gr->fence || strcmp(handle, gr->handle) != 0)
		violation(c, CHK_RID, "%s: a repeat of rid=%.*s, whose grant "
		    "%s (told at %lld) is certainly held, was told %s",
		    name_of(c, gr->name), (int)gr->rid_len, gr->rid,
		    gr->handle, rel(c, gr->recv), granted ? handle : what);
}

void
chk_owner_seen(struct chk *c, int name, uint64_t fence, const char *owner,
    size_t owner_len)
{
	const struct chk_list *l = &c->lists[name];
	size_t k, seen;

	if (fence == 0)
		return;
	for (k = l->n, seen = 0; k > 0 && seen < OWNER_LOOKBACK; k--, seen++) {
		const struct chk_grant *g = &c->grants[l->idx[k - 1]];

		if (g->fence != fence)
			continue;
		if (g->owner_len != owner_len || (owner_len > 0 &&
		    memcmp(g->owner, owner, owner_len) != 0))
			violation(c, CHK_OWNER, "%s: fence %llu (told at %lld "
			    "with owner=%.*s) shown with owner=%.*s",
			    name_of(c, name), (unsigned long long)fence,
			    rel(c, g->recv), (int)g->owner_len, g->owner,
			    (int)owner_len, owner);
		return;
	}
}

struct chk_ref
chk_begin(struct chk *c, int64_t g, enum chk_event_kind kind, int64_t sent,
    int64_t lease)
{
	struct chk_ref ref = { -1, 0 };
	struct chk_grant *gr;
	struct chk_event *e;

	if (g < 0 || (size_t)g >= c->count)
		return ref;
	gr = &c->grants[g];
	{
		size_t cap = gr->cap;
		gr->ev = grow(gr->ev, &cap, gr->nev + 1, sizeof(*gr->ev));
		gr->cap = (uint32_t)cap;
	}
	e = &gr->ev[gr->nev];
	memset(e, 0, sizeof(*e));
	e->sent = sent;
	e->recv = CHK_NEVER;
	e->lease = lease;
	e->kind = (uint8_t)kind;
	e->outcome = CHK_PENDING;
	e->cycle = c->cycle;
	ref.grant = g;
	ref.event = gr->nev++;
	return ref;
}

void
chk_end(struct chk *c, struct chk_ref ref, enum chk_outcome outcome,
    int64_t recv, uint64_t jpos)
{
	struct chk_grant *g;
	struct chk_event *e;
	int64_t end;
	uint32_t nev;

	if (ref.grant < 0)
		return;
	g = &c->grants[ref.grant];
	e = &g->ev[ref.event];
	e->outcome = (uint8_t)outcome;
	e->recv = recv;
	e->jpos = jpos;
	if (outcome == CHK_OK)
		e->kind == CHK_EV_RENEW ? c->stats.renewals++ :
		    c->stats.releases++;
	if (outcome != CHK_REFUSED_REPLY)
		return;
	/* Refused: judged on what happened to the lease before this. */
	nev = g->nev;
	g->nev = ref.event;
	end = sure_end(g, NULL);
	g->nev = nev;
	if (end > recv + CHK_SLACK_MS)
		violation(c, CHK_REFUSED, "%s: %s with the handle of fence %llu "
		    "refused at %lld (sent %lld) though its lease certainly "
		    "runs until %lld", name_of(c, g->name),
		    e->kind == CHK_EV_RENEW ? "RENEW" : "RELEASE",
		    (unsigned long long)g->fence, rel(c, recv), rel(c, e->sent),
		    rel(c, end));
	if (end > recv + CHK_SLACK_MS)
		explain(c, g);
}

void
chk_closed(struct chk *c, int64_t g, int64_t t)
{
	if (g >= 0 && (size_t)g < c->count && c->grants[g].onclose &&
	    t < c->grants[g].closed)
		c->grants[g].closed = t;
}

/* ---- observations ------------------------------------------------------ */

/*
 * The ttl an observation made between sent and recv shows for told grant
 * g, which it shows held: never past the latest expiry g can have
 * (Lengthened), never short of its certain end (Forgotten: a told grant
 * or renewal lost).  `what` names the observation in the reports.
 */
static void
judge_ttl(struct chk *c, const struct chk_grant *g, int64_t sent,
    int64_t recv, int64_t ttl, const char *what)
{
	int64_t end, latest;

	bounds(g, sent, recv, NULL, &end, &latest);
	if (latest != CHK_NEVER && ttl > latest - sent + CHK_SLACK_MS) {
		violation(c, CHK_LENGTHENED, "%s: %s at %lld shows ttl=%lld "
		    "for fence %llu, whose lease ends by %lld at the latest",
		    name_of(c, g->name), what, rel(c, recv), (long long)ttl,
		    (unsigned long long)g->fence, rel(c, latest));
		explain(c, g);
	}
	if (end > recv + CHK_SLACK_MS && ttl < end - recv - CHK_SLACK_MS) {
		violation(c, CHK_FORGOTTEN, "%s: %s at %lld shows ttl=%lld "
		    "for fence %llu, whose lease certainly runs until %lld: "
		    "a told grant or renewal was lost", name_of(c, g->name),
		    what, rel(c, recv), (long long)ttl,
		    (unsigned long long)g->fence, rel(c, end));
		explain(c, g);
	}
}

/* chk_status of a semaphore's or read lock's name (see there). */
static void
multi_status(struct chk *c, const struct chk_list *l, int name,
    int64_t sent, int64_t recv, bool held, uint64_t fence, int64_t ttl,
    bool after_restart)
{
	int64_t end, latest, shown;
	size_t i;

	/* The newest holder STATUS shows, when it is a told grant: its
	 * lease as any holder's (its fence and ttl are that holder's). */
	if (held && (shown = told_grant(c, name, fence)) >= 0) {
		const struct chk_grant *g = &c->grants[shown];

		if (g->onclose && after_restart) {
			violation(c, CHK_ONCLOSE, "%s: the onclose=release "
			    "holder of fence %llu is still held after a "
			    "restart", name_of(c, name),
			    (unsigned long long)fence);
			return;
		}
		judge_ttl(c, g, sent, recv, ttl, "STATUS");
	}

	for (i = 0; i < l->n; i++) {
		const struct chk_grant *g = &c->grants[l->idx[i]];

		/* Told before it was asked; an onclose lease ends with its
		 * connection, which a restart closes. */
		if (g->recv >= sent || (g->onclose && after_restart))
			continue;
		bounds(g, sent, recv, NULL, &end, &latest);
		if (end <= recv + CHK_SLACK_MS)
			continue;
		c->stats.durable_checks++;
		if (held && fence >= g->fence)
			continue;
		violation(c, CHK_FORGOTTEN, "%s: holder fence %llu (told at "
		    "%lld, lease %lld) certainly runs until %lld but STATUS "
		    "at %lld shows %s%s", name_of(c, name),
		    (unsigned long long)g->fence, rel(c, g->recv),
		    (long long)g->lease, rel(c, end), rel(c, recv),
		    held ? "an older newest fence" : "the lock free",
		    after_restart ? " after a restart" : "");
		explain(c, g);
		return;
	}
}

void
chk_status(struct chk *c, int name, int64_t sent, int64_t recv, bool held,
    uint64_t fence, int64_t ttl, bool after_restart)
{
	const struct chk_list *l = &c->lists[name];
	const struct chk_grant *top;
	int64_t end, latest;
	size_t k = l->n;
	bool alive;

	c->stats.status_checks++;
	/* A semaphore's STATUS shows its newest live holder, which need
	 * not be the last told: each told holder still certainly held
	 * needs held=1 and a newest fence at least its own. */
	if (l->multi > 0) {
		multi_status(c, l, name, sent, recv, held, fence, ttl,
		    after_restart);
		return;
	}
	while (k > 0 && c->grants[l->idx[k - 1]].recv >= sent)
		k--;
	if ((top = top_of(c, l, k)) == NULL)
		return;
	if (held && fence < top->fence) {
		violation(c, CHK_REWIND, "%s: STATUS at %lld shows fence %llu "
		    "after fence %llu was told at %lld", name_of(c, name),
		    rel(c, recv), (unsigned long long)fence,
		    (unsigned long long)top->fence, rel(c, top->recv));
		return;
	}
	if (top->onclose && after_restart) {
		if (held && fence == top->fence)
			violation(c, CHK_ONCLOSE, "%s: the onclose=release lease "
			    "of fence %llu is still held after a restart",
			    name_of(c, name), (unsigned long long)fence);
		return;
	}
	bounds(top, sent, recv, NULL, &end, &latest);
	alive = end > recv + CHK_SLACK_MS;
	if (alive) {
		c->stats.durable_checks++;
		if (!held)
			violation(c, CHK_FORGOTTEN, "%s: fence %llu (told at "
			    "%lld, lease %lld) certainly runs until %lld but "
			    "STATUS at %lld shows the lock free%s",
			    name_of(c, name), (unsigned long long)top->fence,
			    rel(c, top->recv), (long long)top->lease,
			    rel(c, end), rel(c, recv),
			    after_restart ? " after a restart" : "");
		else if (fence > top->fence)
			violation(c, CHK_OVERLAP, "%s: STATUS at %lld shows fence "
			    "%llu while told fence %llu certainly runs until "
			    "%lld", name_of(c, name), rel(c, recv),
			    (unsigned long long)fence,
			    (unsigned long long)top->fence, rel(c, end));
		if (!held || fence > top->fence)
			explain(c, top);
	}
	if (held && fence == top->fence)
		judge_ttl(c, top, sent, recv, ttl, "STATUS");
}

void
chk_check(struct chk *c, int name, uint64_t fence, int64_t sent,
    int64_t recv, bool current, int64_t ttl, bool after_restart)
{
	int64_t k = fence != 0 ? told_grant(c, name, fence) : -1;
	const struct chk_grant *g;
	int64_t end, latest;

	if (k < 0)
		return;
	g = &c->grants[k];
	c->stats.holder_checks++;
	if (g->onclose && after_restart) {
		if (current)
			violation(c, CHK_ONCLOSE, "%s: CHECK at %lld finds the "
			    "onclose=release holder of fence %llu after a "
			    "restart", name_of(c, name), rel(c, recv),
			    (unsigned long long)fence);
		return;
	}
	if (current) {
		c->stats.holders_back += after_restart;
		judge_ttl(c, g, sent, recv, ttl, "CHECK");
		return;
	}
	bounds(g, sent, recv, NULL, &end, &latest);
	if (end > recv + CHK_SLACK_MS) {
		violation(c, CHK_FORGOTTEN, "%s: CHECK at %lld says fence %llu "
		    "(told at %lld) is stale, but it certainly runs until "
		    "%lld%s", name_of(c, name), rel(c, recv),
		    (unsigned long long)fence, rel(c, g->recv), rel(c, end),
		    after_restart ? " (after a restart)" : "");
		explain(c, g);
	}
}

bool
chk_maybe_held(const struct chk *c, int64_t g, int64_t at)
{
	int64_t sure, latest;

	if (g < 0 || (size_t)g >= c->count)
		return false;
	bounds(&c->grants[g], at, at, NULL, &sure, &latest);
	return latest == CHK_NEVER || latest + CHK_SLACK_MS > at;
}

/*
 * The holder keys of a name in an image: every multi grant among the
 * first k told, still certainly held at the cut, is there under its own
 * key, and runs at least as long as a told renewal says.  Each holder of
 * a semaphore or a shared lock is judged alone: one's release says
 * nothing of another's.
 */
static void
image_holders(struct chk *c, const struct cut *cut, int name, size_t k,
    const struct chk_record *r)
{
	const struct chk_list *l = &c->lists[name];
	size_t i;
	unsigned h;

	for (i = 0; i < k; i++) {
		const struct chk_grant *g = &c->grants[l->idx[i]];
		int64_t end;

		if (!g->multi ||
		    (end = sure_end(g, cut)) <= cut->time + CHK_SLACK_MS)
			continue;
		c->stats.durable_checks++;
		for (h = 0; h < r->nholders && h < CHK_MAX_HOLDERS; h++)
			if (r->holders[h].fence == g->fence)
				break;
		if (h == r->nholders || h == CHK_MAX_HOLDERS)
			violation(c, CHK_FORGOTTEN, "%s: image (run %d, cut "
			    "at %lld) lacks the holder key of fence %llu "
			    "(told at %lld), certainly held until %lld",
			    name_of(c, name), cut->cycle, rel(c, cut->time),
			    (unsigned long long)g->fence, rel(c, g->recv),
			    rel(c, end));
		else if (r->holders[h].expiry < end - CHK_SLACK_MS)
			violation(c, CHK_FORGOTTEN, "%s: image (run %d, cut "
			    "at %lld) ends holder fence %llu at %lld, but a "
			    "told renewal runs until %lld", name_of(c, name),
			    cut->cycle, rel(c, cut->time),
			    (unsigned long long)g->fence,
			    rel(c, r->holders[h].expiry), rel(c, end));
	}
}

void
chk_grant_multi(struct chk *c, int64_t g)
{
	struct chk_grant *grant = &c->grants[g];

	if (!grant->multi)
		c->lists[grant->name].multi++;
	grant->multi = true;
}

void
chk_name_limit(struct chk *c, int name, unsigned limit)
{
	c->lists[name].limit = limit;
}

uint64_t
chk_image(struct chk *c, int cycle, uint64_t jpos, int64_t cut_time,
    const struct chk_record *records, uint64_t hwm)
{
	struct cut cut = { cycle, jpos, cut_time };
	uint64_t before = chk_violations(c);
	int name;

	c->stats.image_checks++;
	for (name = 0; name < c->names; name++) {
		const struct chk_list *l = &c->lists[name];
		const struct chk_record *r = &records[name];
		const struct chk_grant *top;
		size_t k = l->n;
		int64_t end;

		/* The told grants of this run come last, in journal order. */
		while (k > 0 && !told_by(&cut, c->grants[l->idx[k - 1]].cycle,
		    c->grants[l->idx[k - 1]].jpos))
			k--;
		if ((top = top_of(c, l, k)) == NULL)
			continue;
		if (top->fence > hwm)
			violation(c, CHK_REWIND, "%s: image (run %d, cut at "
			    "%lld) has high-water mark %llu below told fence "
			    "%llu", name_of(c, name), cycle, rel(c, cut_time),
			    (unsigned long long)hwm,
			    (unsigned long long)top->fence);
		if (l->multi > 0)
			image_holders(c, &cut, name, k, r);
		if (top->multi)
			continue;   /* the name's own key: plain holds only */
		if (r->present && r->fence < top->fence) {
			violation(c, CHK_FORGOTTEN, "%s: image (run %d, cut at "
			    "%lld) holds fence %llu, older than told fence %llu",
			    name_of(c, name), cycle, rel(c, cut_time),
			    (unsigned long long)r->fence,
			    (unsigned long long)top->fence);
			continue;
		}
		end = sure_end(top, &cut);
		if (end <= cut_time + CHK_SLACK_MS)
			continue;
		c->stats.durable_checks++;
		if (!r->present)
			violation(c, CHK_FORGOTTEN, "%s: image (run %d, cut at "
			    "%lld) lacks fence %llu (told at %lld), certainly "
			    "held until %lld", name_of(c, name), cycle,
			    rel(c, cut_time), (unsigned long long)top->fence,
			    rel(c, top->recv), rel(c, end));
		else if (r->fence == top->fence &&
		    r->expiry < end - CHK_SLACK_MS)
			violation(c, CHK_FORGOTTEN, "%s: image (run %d, cut at "
			    "%lld) ends fence %llu at %lld, but a told renewal "
			    "runs until %lld", name_of(c, name), cycle,
			    rel(c, cut_time), (unsigned long long)r->fence,
			    rel(c, r->expiry), rel(c, end));
	}
	return chk_violations(c) - before;
}

void
chk_unrecoverable(struct chk *c, const char *why)
{
	violation(c, CHK_UNRECOVERABLE, "%s", why);
}

/* ---- the whole history ------------------------------------------------- */

static const struct chk *sort_ctx;

static int
by_fence(const void *a, const void *b)
{
	uint64_t fa = sort_ctx->grants[*(const size_t *)a].fence;
	uint64_t fb = sort_ctx->grants[*(const size_t *)b].fence;

	return fa < fb ? -1 : fa > fb;
}

/* Until when g's lock-delay certainly blocks new grants: 0 when it has
 * none, or may have ended by a RELEASE (which owes none) or a close. */
static int64_t
blocked_end(const struct chk_grant *g)
{
	uint32_t i;

	if (g->delay <= 0 || g->onclose)
		return 0;
	for (i = 0; i < g->nev; i++)
		if (g->ev[i].kind == CHK_EV_RELEASE)
			return 0;
	return sure_end(g, NULL) + g->delay;
}

static void
overlap(struct chk *c, const struct chk_grant *g, int64_t g_end,
    const struct chk_grant *h, const char *why)
{
	violation(c, CHK_OVERLAP, "%s: fence %llu told at %lld (requested "
	    "%lld) while fence %llu (told at %lld) is certainly held until "
	    "%lld (%s)", name_of(c, h->name), (unsigned long long)h->fence,
	    rel(c, h->recv), rel(c, h->sent), (unsigned long long)g->fence,
	    rel(c, g->recv), rel(c, g_end), why);
	explain(c, g);
	explain(c, h);
}

/* A semaphore's grants: none told while `limit` others, told before it
 * was asked, are certainly held (end: each grant's certain end). */
static void
over_limit(struct chk *c, const struct chk_list *l, const int64_t *end)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		const struct chk_grant *h = &c->grants[l->idx[i]];
		size_t held = 0, last = 0;

		for (j = 0; j < i; j++)
			if (c->grants[l->idx[j]].recv < h->sent &&
			    end[j] > h->recv + CHK_SLACK_MS) {
				held++;
				last = j;
			}
		if (held >= l->limit)
			overlap(c, &c->grants[l->idx[last]], end[last], h,
			    "past the semaphore's limit");
	}
}

/*
 * A semaphore's grants in fence order: the counter orders the grants, so
 * when one was made every lower fence certainly held after it was told
 * was held with it - fewer than `limit` of them.  This catches what the
 * order of the replies cannot: grants made in one pass, or across a
 * restart, whose requests were all in flight together.  keys: the
 * name's grants by fence; end: each one's certain end, in that order.
 */
static void
over_limit_by_fence(struct chk *c, const struct chk_list *l,
    const size_t *keys, const int64_t *end)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		const struct chk_grant *h = &c->grants[keys[i]];
		size_t held = 0, last = 0;

		for (j = 0; j < i; j++)
			if (end[j] > h->recv + CHK_SLACK_MS) {
				held++;
				last = j;
			}
		if (held >= l->limit)
			overlap(c, &c->grants[keys[last]], end[last], h,
			    "lower fences past the semaphore's limit");
	}
}

/*
 * A read lock's grants: readers (chk_grant_multi) share, a writer
 * excludes every other holder.  A grant told while a conflicting one -
 * either of the two a writer - is certainly held, that one told before
 * this was asked or holding a lower fence (so granted first), is an
 * overlap.  end: each grant's certain end, in the list's order.
 */
static void
rw_overlap(struct chk *c, const struct chk_list *l, const int64_t *end)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		const struct chk_grant *h = &c->grants[l->idx[i]];

		for (j = 0; j < l->n; j++) {
			const struct chk_grant *g = &c->grants[l->idx[j]];

			if (j == i || (g->multi && h->multi) ||
			    (g->recv >= h->sent && g->fence >= h->fence) ||
			    end[j] <= h->recv + CHK_SLACK_MS)
				continue;
			overlap(c, g, end[j], h, h->multi ?
			    "a reader beside a writer" :
			    "a writer beside another holder");
			break;
		}
	}
}

/*
 * Lock-delay on a name of several holders: one that could only end by
 * expiry, with delay=, holds back the whole name from the latest instant
 * it can end until its certain end plus its delay.  The other holders
 * keep holding, so only time tells a grant made in the delay: one asked
 * after that latest end and told before the delay certainly ran out.
 */
static void
multi_delay(struct chk *c, const struct chk_list *l)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		const struct chk_grant *g = &c->grants[l->idx[i]];
		int64_t sure, latest, until;

		if (blocked_end(g) == 0)
			continue;
		bounds(g, CHK_NEVER, CHK_NEVER, NULL, &sure, &latest);
		if (latest == CHK_NEVER)
			continue;
		until = sure + g->delay;
		for (j = 0; j < l->n; j++) {
			const struct chk_grant *h = &c->grants[l->idx[j]];

			if (j == i || h->sent < latest + CHK_SLACK_MS)
				continue;
			c->stats.delay_checks++;
			if (h->recv + CHK_SLACK_MS >= until)
				continue;
			violation(c, CHK_DELAY, "%s: fence %llu told at %lld "
			    "(requested %lld) inside the lock-delay of holder "
			    "fence %llu (delay=%lld), which ended by %lld and "
			    "holds the name back until %lld at least",
			    name_of(c, h->name), (unsigned long long)h->fence,
			    rel(c, h->recv), rel(c, h->sent),
			    (unsigned long long)g->fence, (long long)g->delay,
			    rel(c, latest), rel(c, until));
			explain(c, g);
		}
	}
}

void
chk_finish(struct chk *c)
{
	int name;

	for (name = 0; name < c->names; name++) {
		const struct chk_list *l = &c->lists[name];
		int64_t *end, *pmax, max_end = 0;
		size_t *arg, *keys, i, best;

		if (l->n < 2)
			continue;
		end = calloc(l->n, sizeof(*end));
		pmax = calloc(l->n, sizeof(*pmax));
		arg = calloc(l->n, sizeof(*arg));
		keys = calloc(l->n, sizeof(*keys));
		if (end == NULL || pmax == NULL || arg == NULL || keys == NULL)
			abort();
		for (i = 0; i < l->n; i++)
			end[i] = sure_end(&c->grants[l->idx[i]], NULL);
		/* A semaphore's holders overlap up to its limit, a shared
		 * lock's without one; the mutex and lock-delay reasoning
		 * below is a single holder's. */
		if (l->multi > 0) {
			if (l->limit > 0) {
				over_limit(c, l, end);
				for (i = 0; i < l->n; i++)
					keys[i] = l->idx[i];
				sort_ctx = c;
				qsort(keys, l->n, sizeof(*keys), by_fence);
				for (i = 0; i < l->n; i++)
					pmax[i] = sure_end(&c->grants[keys[i]],
					    NULL);
				over_limit_by_fence(c, l, keys, pmax);
			} else {
				rw_overlap(c, l, end);
			}
			multi_delay(c, l);
			free(end);
			free(pmax);
			free(arg);
			free(keys);
			continue;
		}

		/* Granted earlier by time: read before the other was sent. */
		for (i = 0, best = 0; i < l->n; i++) {
			if (end[i] > end[best])
				best = i;
			pmax[i] = end[best];
			arg[i] = best;
		}
		for (i = 0; i < l->n; i++) {
			const struct chk_grant *h = &c->grants[l->idx[i]];
			size_t lo = 0, hi = i;   /* first with recv >= sent */
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (c->grants[l->idx[mid]].recv < h->sent)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > 0 && pmax[lo - 1] > h->recv + CHK_SLACK_MS)
				overlap(c, &c->grants[l->idx[arg[lo - 1]]],
				    pmax[lo - 1], h, "told before it was asked");
		}

		/* Granted earlier by fence: the fence counter orders grants. */
		for (i = 0; i < l->n; i++)
			keys[i] = l->idx[i];
		sort_ctx = c;
		qsort(keys, l->n, sizeof(*keys), by_fence);
		for (i = 0, best = keys[0]; i < l->n; i++) {
			const struct chk_grant *h = &c->grants[keys[i]];
			int64_t e = sure_end(h, NULL);

			if (i > 0 && max_end > h->recv + CHK_SLACK_MS &&
			    c->grants[best].fence < h->fence)
				overlap(c, &c->grants[best], max_end, h,
				    "lower fence");
			if (i == 0 || e > max_end) {
				max_end = e;
				best = keys[i];
			}
		}
		/* Lock-delay: after a lease that could only end by expiry,
		 * no later fence before its certain end plus its delay. */
		for (i = 0, best = keys[0], max_end = 0; i < l->n; i++) {
			const struct chk_grant *h = &c->grants[keys[i]];
			int64_t e = blocked_end(h);

			c->stats.delay_checks += max_end > 0;
			if (i > 0 && max_end > h->recv + CHK_SLACK_MS &&
			    c->grants[best].fence < h->fence) {
				violation(c, CHK_DELAY, "%s: fence %llu told at "
				    "%lld (requested %lld) inside the lock-delay "
				    "of fence %llu (delay=%lld), which runs until "
				    "%lld at least", name_of(c, h->name),
				    (unsigned long long)h->fence,
				    rel(c, h->recv), rel(c, h->sent),
				    (unsigned long long)c->grants[best].fence,
				    (long long)c->grants[best].delay,
				    rel(c, max_end));
				explain(c, &c->grants[best]);
			}
			if (e > max_end) {
				max_end = e;
				best = keys[i];
			}
		}
		free(end);
		free(pmax);
		free(arg);
		free(keys);
	}
}

uint64_t
chk_violations(const struct chk *c)
{
	uint64_t n = 0;
	int v;

	for (v = 0; v < CHK_VIOLATION_COUNT; v++)
		n += c->stats.violations[v];
	return n;
}

void
chk_print_stats(const struct chk *c, FILE *out, const char *prefix)
{
	int v;

	fprintf(out, "%sgrants checked=%llu renewals=%llu releases=%llu "
	    "status checks=%llu durability checks=%llu delay checks=%llu "
	    "rid checks=%llu holder checks=%llu (back after a restart: "
	    "%llu) images=%llu violations=%llu", prefix,
	    (unsigned long long)c->stats.grants,
	    (unsigned long long)c->stats.renewals,
	    (unsigned long long)c->stats.releases,
	    (unsigned long long)c->stats.status_checks,
	    (unsigned long long)c->stats.durable_checks,
	    (unsigned long long)c->stats.delay_checks,
	    (unsigned long long)c->stats.rid_checks,
	    (unsigned long long)c->stats.holder_checks,
	    (unsigned long long)c->stats.holders_back,
	    (unsigned long long)c->stats.image_checks,
	    (unsigned long long)chk_violations(c));
	for (v = 0; v < CHK_VIOLATION_COUNT; v++)
		if (c->stats.violations[v] > 0)
			fprintf(out, " %s=%llu", violation_names[v],
			    (unsigned long long)c->stats.violations[v]);
	fputc('\n', out);
	fflush(out);
}
