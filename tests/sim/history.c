/*
 * history.c - the history checker of the simulator (see history.h).
 *
 * Every grant the clients learnt of is a "fence" here, with the list of
 * everything that happened to its lease in execution order: RENEW and
 * RELEASE requests carrying its handle (from any connection), the close of
 * its connection when it is bound with onclose=release, crashes, restores
 * from the store after a failed commit, and the table dropping it.  A walk
 * over that list says, at any point, whether the lease is certainly held
 * (the told history leaves no doubt: granted or renewed, not expired, not
 * released, no lost reply that might have ended it) and whether it is
 * possibly held (some lost reply, or a crash that brought a released lease
 * back from the store, may have kept it alive).
 *
 *   StaleTokenRejection  a told RENEWED/RELEASED needs the lease possibly
 *                        held; a forged handle never succeeds
 *   HolderAccepted       a told CONFLICT/NOTHELD needs it not certainly held
 *   MutualExclusion      no told grant while another one that cannot
 *                        share the name with it is certainly held: an
 *                        exclusive holder shares it with nobody, readers
 *                        only with readers, a semaphore's permits only
 *                        with permits of the same limit
 *   HolderLimit          no told grant of a semaphore while `limit` other
 *                        told grants of its name are certainly held
 *   LeaseReclamationSafety  the table never drops a certainly held lease
 *   FencingMonotonic     per name, fences rise in the order of the grants
 *   FifoFairness         per name, fences rise in the order of arrival, and
 *                        no later arrival is granted while an earlier waiter
 *                        that timed out was still queued
 *   Durability           told grants and renewals are in the store when
 *                        told and still there at a crash
 *
 * A walk can only pass an event once its outcome is known; events whose
 * reply is still on its way (behind a waiting ACQUIRE on its connection)
 * hold the walk, and checks that need it wait in a deferred list.  Untold
 * grants are not leases anybody relies on and take part in nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/sim/history.h"

enum {
	EV_RENEW,
	EV_RELEASE,
	EV_CLOSE,
	EV_CRASH,
	EV_RESTORE,
	EV_DROP
};

struct event {
	uint64_t seq;
	sim_time t;
	int64_t lease;       /* RENEW */
	sim_time expiry;     /* CRASH, RESTORE: the store's */
	uint64_t batch;      /* DROP: the batch that makes it durable */
	uint8_t kind;
	uint8_t outcome;     /* RENEW, RELEASE: enum hist_outcome */
	bool store_has;      /* CRASH */
};

/* Where a lease stands after a prefix of its events. */
struct walk {
	bool certain, possible;
	sim_time c_exp, p_exp;
};

struct fence {
	uint64_t fence, secret;
	int name;
	bool observed;       /* seen in the table */
	bool told;           /* a client was told GRANTED */
	bool onclose;
	bool in_live;
	bool retired;        /* lost in a crash before its commit */
	uint64_t g_seq;      /* when granted */
	sim_time g;
	int64_t lease;       /* as told */
	uint64_t a_seq;      /* when its request arrived */
	uint64_t crash_stamp;
	struct hist_kind kind;   /* as told */
	bool overlap_reported;   /* its grant broke a holder rule */
	uint16_t held;           /* others certainly held at its grant */
	/* No later than this it is held by nobody, whatever its replies
	 * on their way say: its grant's or a RENEW's end, the latest. */
	sim_time max_end;
	struct event *ev;
	uint32_t nev, cap;
	uint32_t done;       /* events the walk has passed */
	struct walk w;
};

#define RING 64

struct by_grant { uint64_t seq, fence; };
struct by_arrival { uint64_t seq, fence; sim_time g; };
struct timeout { uint64_t seq; sim_time deadline; };

struct name_hist {
	struct by_grant *bg;
	size_t nbg, cbg;
	struct by_arrival *ba;
	size_t nba, cba;
	struct timeout tmo[RING];
	unsigned ntmo;
	int32_t recent[RING];
	unsigned nrecent;
};

struct pair { int32_t a, b; };
struct pending_drop { int32_t fence; uint32_t event; };

struct hist {
	struct sim_result *res;
	const struct sim_options *opt;
	FILE *out;
	unsigned printed;
	uint64_t seq;
	uint64_t crashes;
	int names;
	const char *const *name_text;
	struct name_hist nh[8];
	struct fence *f;
	size_t nf, cf;
	/* (fence, name) -> index + 1; 0 empty, -1 deleted */
	int32_t *map;
	size_t map_cap, map_used;
	int32_t *live;
	size_t nlive, clive;
	struct pair *deferred;   /* judge_holder(b, a) waiting */
	size_t ndeferred, cdeferred;
	struct pending_drop *drops;
	size_t ndrops, cdrops;
	uint64_t max_told;
};

static void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (q == NULL) {
		dprintf(STDERR_FILENO, "sim: out of memory\n");
		abort();
	}
	return q;
}

#define GROW(arr, n, cap) do { \
	if ((n) == (cap)) { \
		(cap) = (cap) ? 2 * (cap) : 16; \
		(arr) = xrealloc((arr), (cap) * sizeof(*(arr))); \
	} \
} while (0)

/* ---- reporting -------------------------------------------------------- */

const char *
sim_property_name(enum sim_property p)
{
	static const char *const names[SIM_PROPERTIES] = {
		"FencingMonotonic",
		"MutualExclusion",
		"StaleTokenRejection",
		"LeaseReclamationSafety",
		"FifoFairness",
		"NoStarvation",
		"ReplyOrder",
		"Durability",
		"HolderAccepted",
		"LockDelay",
		"WatchChange",
		"RidIdempotent",
		"HolderLimit",
	};

	return (unsigned)p < SIM_PROPERTIES ? names[p] : "?";
}

const char *
sim_coverage_name(enum sim_coverage c)
{
	static const char *const names[SIM_COVERAGE] = {
		"grant at once",
		"grant after a wait",
		"grant told passes later",
		"renewed",
		"released",
		"stale renew refused",
		"stale release refused",
		"forged handle refused",
		"try held",
		"wait timeout",
		"disconnect while waiting",
		"onclose release",
		"tick at exactly a deadline",
		"partial line",
		"commit failed",
		"unavailable told",
		"release lost, lease back",
		"crash before commit",
		"crash before delivery",
		"crash at pass end",
		"told lease survived a crash",
		"untold fence lost and reminted",
		"clean restart",
		"shutdown told",
		"reboot",
		"served while a batch was written",
		"batch in flight failed",
		"crash while a batch was written",
		"lease let go, then restored",
		"force freed a holder",
		"force of another fence refused",
		"watch changed",
		"grant held back by lock-delay",
		"rid repeat told its grant",
		"rid repeat told a grant its client was not",
		"rid after its hold ended granted anew",
		"take-over",
		"told lease kept by a take-over",
		"onclose lease made ordinary by a take-over",
		"etcd retry found its own batch in (replay)",
		"etcd retry went in after a lost request",
		"etcd outcome unknown: step down",
		"batch split into several transactions",
		"split batch went in in part: step down",
		"batch refused by the leader-key compare",
		"stepped down at the serving deadline",
		"stepped down: keep-alive says the lease is gone",
		"lock command refused past the deadline",
		"semaphore grant",
		"semaphore grant with every other permit held",
		"shared grant",
		"shared grant beside another reader",
		"readers granted together in one step",
		"misfit kind refused (BADARG)",
		"rid repeat of a semaphore or shared grant",
		"told semaphore or shared holder survived a crash",
		"one holder's lock-delay while others held",
	};

	return (unsigned)c < SIM_COVERAGE ? names[c] : "?";
}

void
hist_checked(struct hist *h)
{
	h->res->checks++;
}

void
hist_cover(struct hist *h, enum sim_coverage c)
{
	h->res->coverage[c]++;
}

void
hist_violation(struct hist *h, enum sim_property p, const char *fmt, ...)
{
	char text[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (h->res->violations == 0) {
		h->res->first_property = p;
		snprintf(h->res->first_violation,
		    sizeof(h->res->first_violation), "%s: %s",
		    sim_property_name(p), text);
	}
	if (h->res->by_property[p] == 0)
		snprintf(h->res->first_of[p], sizeof(h->res->first_of[p]),
		    "%s", text);
	h->res->violations++;
	h->res->by_property[p]++;
	if (h->printed < h->opt->max_reports || h->opt->trace) {
		h->printed++;
		fprintf(h->out, "VIOLATION seed=%llu %s: %s\n",
		    (unsigned long long)h->res->seed, sim_property_name(p),
		    text);
	}
}

static const char *
name_of(const struct hist *h, int name)
{
	return h->name_text[name];
}

/* ---- the fence map ---------------------------------------------------- */

static uint64_t
map_key(int name, uint64_t fence)
{
	return fence * 8 + (uint64_t)name;
}

static size_t
map_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static int32_t
fence_find(const struct hist *h, int name, uint64_t fence)
{
	uint64_t key = map_key(name, fence);
	size_t i;

	if (h->map_cap == 0)
		return -1;
	for (i = map_slot(key, h->map_cap);; i = (i + 1) & (h->map_cap - 1)) {
		int32_t v = h->map[i];
		if (v == 0)
			return -1;
		if (v > 0 && map_key(h->f[v - 1].name, h->f[v - 1].fence) ==
		    key)
			return v - 1;
	}
}

static void map_insert(struct hist *h, int32_t idx);

static void
map_grow(struct hist *h)
{
	int32_t *old = h->map;
	size_t cap = h->map_cap, i;

	h->map_cap = cap ? cap * 2 : 1024;
	h->map = xrealloc(NULL, h->map_cap * sizeof(*h->map));
	memset(h->map, 0, h->map_cap * sizeof(*h->map));
	h->map_used = 0;
	for (i = 0; i < cap; i++)
		if (old[i] > 0)
			map_insert(h, old[i] - 1);
	free(old);
}

static void
map_insert(struct hist *h, int32_t idx)
{
	uint64_t key = map_key(h->f[idx].name, h->f[idx].fence);
	size_t i;

	if (2 * (h->map_used + 1) > h->map_cap)
		map_grow(h);
	for (i = map_slot(key, h->map_cap); h->map[i] > 0;
	    i = (i + 1) & (h->map_cap - 1))
		;
	if (h->map[i] == 0)
		h->map_used++;
	h->map[i] = idx + 1;
}

static void
map_delete(struct hist *h, int32_t idx)
{
	uint64_t key = map_key(h->f[idx].name, h->f[idx].fence);
	size_t i;

	for (i = map_slot(key, h->map_cap); h->map[i] != 0;
	    i = (i + 1) & (h->map_cap - 1))
		if (h->map[i] == idx + 1) {
			h->map[i] = -1;
			return;
		}
}

static int32_t
fence_new(struct hist *h, int name, uint64_t fence, uint64_t secret)
{
	struct fence *f;

	GROW(h->f, h->nf, h->cf);
	f = &h->f[h->nf];
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->fence = fence;
	f->secret = secret;
	map_insert(h, (int32_t)h->nf);
	return (int32_t)h->nf++;
}

static uint32_t
event_add(struct fence *f, uint8_t kind, uint64_t seq, sim_time t)
{
	struct event *e;

	GROW(f->ev, f->nev, f->cap);
	e = &f->ev[f->nev];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->seq = seq;
	e->t = t;
	e->outcome = HIST_OK;
	return f->nev++;
}

static void
live_add(struct hist *h, int32_t idx)
{
	if (h->f[idx].in_live || !h->f[idx].told)
		return;
	h->f[idx].in_live = true;
	GROW(h->live, h->nlive, h->clive);
	h->live[h->nlive++] = idx;
}

/* ---- the walk --------------------------------------------------------- */

static void
walk_init(const struct fence *f, struct walk *w)
{
	w->certain = w->possible = true;
	w->c_exp = w->p_exp = f->g + f->lease;
}

static void
walk_time(struct walk *w, sim_time t)
{
	if (w->certain && t >= w->c_exp)
		w->certain = false;
	if (w->possible && t >= w->p_exp)
		w->possible = false;
}

static sim_time
tmin(sim_time a, sim_time b)
{
	return a < b ? a : b;
}

static sim_time
tmax(sim_time a, sim_time b)
{
	return a > b ? a : b;
}

static const char *
outcome_text(const struct event *e)
{
	if (e->kind == EV_RENEW)
		return e->outcome == HIST_OK ? "RENEWED" : "CONFLICT";
	return e->outcome == HIST_OK ? "RELEASED" : "NOTHELD";
}

/* StaleTokenRejection and HolderAccepted for a told RENEW or RELEASE. */
static void
judge_handle_op(struct hist *h, const struct fence *f, const struct walk *w,
    const struct event *e)
{
	const char *cmd = e->kind == EV_RENEW ? "RENEW" : "RELEASE";

	if (e->outcome == HIST_OK) {
		hist_checked(h);
		if (!w->possible)
			hist_violation(h, SIM_STALE_TOKEN_REJECTION,
			    "%s %s fence=%llu at t=%lld told %s, but that "
			    "lease had ended (granted t=%lld, over by "
			    "t=%lld)", cmd, name_of(h, f->name),
			    (unsigned long long)f->fence, (long long)e->t,
			    outcome_text(e), (long long)f->g,
			    (long long)w->p_exp);
	} else if (e->outcome == HIST_REFUSED) {
		hist_checked(h);
		if (w->certain)
			hist_violation(h, SIM_HOLDER_ACCEPTED,
			    "%s %s fence=%llu at t=%lld told %s, but the "
			    "lease is held until t=%lld", cmd,
			    name_of(h, f->name), (unsigned long long)f->fence,
			    (long long)e->t, outcome_text(e),
			    (long long)w->c_exp);
		else
			hist_cover(h, e->kind == EV_RENEW ?
			    SIM_COV_STALE_RENEW_REFUSED :
			    SIM_COV_STALE_RELEASE_REFUSED);
	}
}

/*
 * Passes one event.  With `report` it judges it too (the incremental walk);
 * without, it only computes (the walks of the deferred checks).
 */
static void
walk_event(struct hist *h, const struct fence *f, struct walk *w,
    const struct event *e, bool report)
{
	walk_time(w, e->t);
	switch (e->kind) {
	case EV_RENEW:
	case EV_RELEASE:
		if (report)
			judge_handle_op(h, f, w, e);
		if (e->kind == EV_RENEW) {
			switch (e->outcome) {
			case HIST_OK:
				w->certain = w->possible = true;
				w->c_exp = w->p_exp = e->t + e->lease;
				break;
			case HIST_REFUSED:
				w->certain = w->possible = false;
				break;
			case HIST_UNKNOWN:
				/* It may have moved the expiry either way. */
				if (w->possible)
					w->p_exp = tmax(w->p_exp,
					    e->t + e->lease);
				if (w->certain)
					w->c_exp = tmin(w->c_exp,
					    e->t + e->lease);
				break;
			default:
				break;   /* UNAVAILABLE: nothing changed */
			}
		} else {
			switch (e->outcome) {
			case HIST_OK:
			case HIST_REFUSED:
				w->certain = w->possible = false;
				break;
			case HIST_UNKNOWN:
				w->certain = false;
				break;
			default:
				break;
			}
		}
		break;
	case EV_CLOSE:
		if (report && w->certain)
			hist_cover(h, SIM_COV_ONCLOSE_RELEASE);
		w->certain = w->possible = false;
		break;
	case EV_CRASH:
		if (report && w->certain) {
			hist_checked(h);
			if (!e->store_has)
				hist_violation(h, SIM_DURABILITY,
				    "crash at t=%lld forgot the told lease "
				    "%s fence=%llu (held until t=%lld)",
				    (long long)e->t, name_of(h, f->name),
				    (unsigned long long)f->fence,
				    (long long)w->c_exp);
			else if (e->expiry < w->c_exp)
				hist_violation(h, SIM_DURABILITY,
				    "crash at t=%lld cut the told lease %s "
				    "fence=%llu short: stored until t=%lld, "
				    "told until t=%lld", (long long)e->t,
				    name_of(h, f->name),
				    (unsigned long long)f->fence,
				    (long long)e->expiry, (long long)w->c_exp);
			else
				hist_cover(h, SIM_COV_LEASE_SURVIVED_CRASH);
		}
		if (e->store_has && !f->onclose) {
			w->possible = true;
			w->p_exp = e->expiry;
			if (w->certain)
				w->c_exp = tmin(w->c_exp, e->expiry);
		} else {
			w->certain = w->possible = false;
		}
		break;
	case EV_RESTORE:
		if (report && w->certain) {
			hist_checked(h);
			if (e->expiry < w->c_exp)
				hist_violation(h, SIM_DURABILITY,
				    "the store gave back %s fence=%llu until "
				    "t=%lld, but it was told held until "
				    "t=%lld", name_of(h, f->name),
				    (unsigned long long)f->fence,
				    (long long)e->expiry, (long long)w->c_exp);
		}
		if (report && !w->possible && e->expiry > e->t)
			hist_cover(h, SIM_COV_RELEASE_RESURRECTED);
		w->possible = true;
		w->p_exp = e->expiry;
		if (w->certain)
			w->c_exp = tmin(w->c_exp, e->expiry);
		break;
	case EV_DROP:
		if (e->outcome == HIST_UNAVAILABLE)
			break;   /* undone before it was durable */
		if (report) {
			hist_checked(h);
			if (w->certain)
				hist_violation(h,
				    SIM_LEASE_RECLAMATION_SAFETY,
				    "the lease %s fence=%llu was taken away "
				    "at t=%lld, but it was told held until "
				    "t=%lld and never released",
				    name_of(h, f->name),
				    (unsigned long long)f->fence,
				    (long long)e->t, (long long)w->c_exp);
		}
		w->certain = w->possible = false;
		break;
	}
}

/* Passes every event whose outcome is known, judging each. */
static void
fence_advance(struct hist *h, int32_t idx)
{
	struct fence *f = &h->f[idx];

	if (!f->told)
		return;
	while (f->done < f->nev && f->ev[f->done].outcome != HIST_PENDING) {
		walk_event(h, f, &f->w, &f->ev[f->done], true);
		f->done++;
	}
}

enum { NO, YES, UNKNOWN };

/* Is the lease of f certainly held at (seq, t)? */
static int
certain_at(struct hist *h, const struct fence *f, uint64_t seq, sim_time t)
{
	struct walk w;
	uint32_t i;

	if (!f->told)
		return NO;
	walk_init(f, &w);
	for (i = 0; i < f->nev && f->ev[i].seq < seq; i++) {
		if (f->ev[i].outcome == HIST_PENDING)
			return UNKNOWN;
		walk_event(h, f, &w, &f->ev[i], false);
	}
	walk_time(&w, t);
	return w.certain ? YES : NO;
}

/* May told grants a and b of one name hold it at once (as many of them as
 * the limit allows): two readers, or two permits of one semaphore. */
static bool
kinds_coexist(const struct fence *a, const struct fence *b)
{
	if (a->kind.limit > 1 || b->kind.limit > 1)
		return a->kind.limit == b->kind.limit && !a->kind.shared &&
		    !b->kind.shared;
	return a->kind.shared && b->kind.shared;
}

static const char *
kind_text(const struct fence *f)
{
	return f->kind.limit > 1 ? "permit" : f->kind.shared ? "reader" :
	    "exclusive holder";
}

/*
 * MutualExclusion and HolderLimit at the grant of ib, for one other told
 * grant ia of its name granted no later: if ia is certainly held then, it
 * must be allowed beside ib, and it takes one of ib's limit.  Returns
 * UNKNOWN when a reply that decides it is still on its way.
 */
static int
judge_holder(struct hist *h, int32_t ib, int32_t ia)
{
	struct fence *b = &h->f[ib], *a = &h->f[ia];
	int r;

	if (b->overlap_reported)
		return NO;
	if (a->g_seq == b->g_seq && !kinds_coexist(a, b)) {
		if (a->overlap_reported)
			return NO;
		hist_checked(h);
		hist_violation(h, SIM_MUTUAL_EXCLUSION,
		    "%s granted twice in one step: fences %llu and %llu at "
		    "t=%lld", name_of(h, b->name),
		    (unsigned long long)a->fence,
		    (unsigned long long)b->fence, (long long)b->g);
		a->overlap_reported = b->overlap_reported = true;
		return YES;
	}
	if (b->g >= a->max_end)
		return NO;
	r = certain_at(h, a, b->g_seq, b->g);
	if (r != YES)
		return r;
	hist_checked(h);
	if (!kinds_coexist(a, b)) {
		hist_violation(h, SIM_MUTUAL_EXCLUSION,
		    "%s fence=%llu (%s) granted at t=%lld while fence=%llu "
		    "(%s, granted t=%lld) was still held", name_of(h, b->name),
		    (unsigned long long)b->fence, kind_text(b),
		    (long long)b->g, (unsigned long long)a->fence,
		    kind_text(a), (long long)a->g);
		b->overlap_reported = true;
		return YES;
	}
	b->held++;
	if (b->kind.limit > 1 && b->held >= b->kind.limit) {
		hist_violation(h, SIM_HOLDER_LIMIT,
		    "%s fence=%llu granted at t=%lld while %u other permits "
		    "of its limit=%u were still held (the latest fence=%llu, "
		    "granted t=%lld)", name_of(h, b->name),
		    (unsigned long long)b->fence, (long long)b->g,
		    (unsigned)b->held, (unsigned)b->kind.limit,
		    (unsigned long long)a->fence, (long long)a->g);
		b->overlap_reported = true;
	} else if (b->kind.limit > 1 && b->held + 1 == b->kind.limit) {
		hist_cover(h, SIM_COV_SEMAPHORE_FULL);
	} else if (b->kind.shared) {
		hist_cover(h, SIM_COV_SHARED_BESIDE_SHARED);
	}
	return YES;
}

/* Waits for judge_holder(b, a) to be decidable. */
static void
defer(struct hist *h, int32_t b, int32_t a)
{
	GROW(h->deferred, h->ndeferred, h->cdeferred);
	h->deferred[h->ndeferred].a = a;
	h->deferred[h->ndeferred].b = b;
	h->ndeferred++;
}

void
hist_settle(struct hist *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->ndeferred; i++)
		if (judge_holder(h, h->deferred[i].b, h->deferred[i].a) ==
		    UNKNOWN)
			h->deferred[n++] = h->deferred[i];
	h->ndeferred = n;
}

/* ---- life ------------------------------------------------------------- */

struct hist *
hist_new(struct sim_result *res, const struct sim_options *opt, int names,
    const char *const *name_text, FILE *out)
{
	struct hist *h = xrealloc(NULL, sizeof(*h));

	memset(h, 0, sizeof(*h));
	h->res = res;
	h->opt = opt;
	h->out = out;
	h->names = names;
	h->name_text = name_text;
	return h;
}

void
hist_free(struct hist *h)
{
	size_t i;
	int n;

	for (i = 0; i < h->nf; i++)
		free(h->f[i].ev);
	for (n = 0; n < h->names; n++) {
		free(h->nh[n].bg);
		free(h->nh[n].ba);
	}
	free(h->f);
	free(h->map);
	free(h->live);
	free(h->deferred);
	free(h->drops);
	free(h);
}

uint64_t
hist_next_seq(struct hist *h)
{
	return ++h->seq;
}

uint64_t
hist_max_told_fence(const struct hist *h)
{
	return h->max_told;
}

/* ---- observations ----------------------------------------------------- */

void
hist_grant_seen(struct hist *h, int name, uint64_t fence, uint64_t secret,
    uint64_t seq, sim_time g)
{
	int32_t idx = fence_find(h, name, fence);

	if (idx >= 0) {
		struct fence *f = &h->f[idx];
		if (!f->observed && !f->told) {
			f->observed = true;
			f->g = g;
			f->g_seq = seq;
		}
		return;
	}
	idx = fence_new(h, name, fence, secret);
	h->f[idx].observed = true;
	h->f[idx].g = g;
	h->f[idx].g_seq = seq;
}

/*
 * A lease the table let go is judged once the batch that records it is
 * durable: until then a failed commit may give it back (a shorter renewal
 * that ran out while it was being written, say, and then failed), and the
 * lease was never gone for anybody who could be told.
 */
void
hist_dropped(struct hist *h, int name, uint64_t fence, uint64_t seq,
    sim_time t, uint64_t batch)
{
	int32_t idx = fence_find(h, name, fence);
	uint32_t e;

	if (idx < 0)
		return;
	e = event_add(&h->f[idx], EV_DROP, seq, t);
	h->f[idx].ev[e].outcome = HIST_PENDING;
	h->f[idx].ev[e].batch = batch;
	GROW(h->drops, h->ndrops, h->cdrops);
	h->drops[h->ndrops].fence = idx;
	h->drops[h->ndrops].event = e;
	h->ndrops++;
}

/* Settles the pending drops: those durable by now (batch <= durable, when
 * `undo` is false), or those of `fence` (-1: all; -2 - n: of name n)
 * undone. */
static void
drops_settle(struct hist *h, uint64_t durable, bool undo, int32_t fence)
{
	size_t i, n = 0;

	for (i = 0; i < h->ndrops; i++) {
		struct pending_drop d = h->drops[i];
		struct event *e = &h->f[d.fence].ev[d.event];
		if (undo && (fence == -1 || d.fence == fence ||
		    (fence <= -2 && h->f[d.fence].name == -2 - fence))) {
			e->outcome = HIST_UNAVAILABLE;
			hist_cover(h, SIM_COV_DROP_UNDONE);
		} else if (!undo && e->batch <= durable) {
			e->outcome = HIST_OK;
		} else {
			h->drops[n++] = d;
			continue;
		}
		fence_advance(h, d.fence);
	}
	h->ndrops = n;
}

void
hist_undo_drops(struct hist *h, int name)
{
	drops_settle(h, 0, true, -2 - name);
}

void
hist_durable(struct hist *h, uint64_t durable)
{
	drops_settle(h, durable, false, -1);
}

void
hist_restored(struct hist *h, int name, uint64_t fence, sim_time expiry,
    uint64_t seq, sim_time t)
{
	int32_t idx = fence_find(h, name, fence);
	uint32_t e;

	if (idx < 0)
		return;
	drops_settle(h, 0, true, idx);
	e = event_add(&h->f[idx], EV_RESTORE, seq, t);
	h->f[idx].ev[e].expiry = expiry;
	live_add(h, idx);
	fence_advance(h, idx);
}

/* The store's record of f: the one under its name's key, else its own
 * holder key's; NULL when it has neither. */
static const struct hist_store_view *
view_of(const struct fence *f, const struct hist_store_view *view,
    size_t nview)
{
	const struct hist_store_view *name_key = NULL;
	size_t i;

	for (i = 0; i < nview; i++)
		if (view[i].name == f->name && view[i].has) {
			if (view[i].fence == f->fence)
				return &view[i];
			name_key = &view[i];
		}
	return name_key;
}

static void
crash_event(struct hist *h, int32_t idx, uint64_t seq, sim_time t,
    const struct hist_store_view *v)
{
	struct fence *f = &h->f[idx];
	uint32_t e;

	f->crash_stamp = h->crashes;
	e = event_add(f, EV_CRASH, seq, t);
	f->ev[e].store_has = v != NULL && v->has && v->fence == f->fence;
	f->ev[e].expiry = v != NULL ? v->expiry : 0;
	if (f->ev[e].store_has && f->told && (f->kind.limit > 1 ||
	    f->kind.shared))
		hist_cover(h, SIM_COV_KIND_SURVIVED_CRASH);
	fence_advance(h, idx);
}

void
hist_crash(struct hist *h, uint64_t seq, sim_time t,
    const struct hist_store_view *view, size_t nview, uint64_t store_hwm)
{
	size_t i, n;

	h->crashes++;
	/* What the store holds now decides; drops not yet durable are not. */
	drops_settle(h, 0, true, -1);
	/* The store's records first: a lease it holds comes back. */
	for (i = 0; i < nview; i++) {
		int32_t idx;
		if (!view[i].has ||
		    (idx = fence_find(h, view[i].name, view[i].fence)) < 0)
			continue;
		crash_event(h, idx, seq, t, &view[i]);
		live_add(h, idx);
	}
	for (i = 0; i < h->nlive; i++) {
		int32_t idx = h->live[i];
		if (h->f[idx].crash_stamp != h->crashes)
			crash_event(h, idx, seq, t,
			    view_of(&h->f[idx], view, nview));
	}
	/* Leases that can no longer be held leave the live list. */
	for (i = n = 0; i < h->nlive; i++) {
		struct fence *f = &h->f[h->live[i]];
		if (f->done < f->nev || f->w.certain || f->w.possible)
			h->live[n++] = h->live[i];
		else
			f->in_live = false;
	}
	h->nlive = n;
	hist_checked(h);
	if (h->max_told > store_hwm)
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "crash at t=%lld: fence %llu was told, but the store's "
		    "high-water mark is %llu", (long long)t,
		    (unsigned long long)h->max_told,
		    (unsigned long long)store_hwm);
	/* Fences minted after the last commit were never told: the next
	 * incarnation mints them again, as new grants. */
	for (i = 0; i < h->nf; i++) {
		struct fence *f = &h->f[i];
		if (f->fence > store_hwm && !f->told && !f->retired) {
			f->retired = true;
			map_delete(h, (int32_t)i);
			hist_cover(h, SIM_COV_FENCE_REMINTED);
		}
	}
	hist_settle(h);
}

/* ---- requests --------------------------------------------------------- */

struct hist_op
hist_op_begin(struct hist *h, enum hist_op_kind kind, int name,
    uint64_t fence, uint64_t secret, int64_t lease, uint64_t seq, sim_time t)
{
	struct hist_op op = { -1, 0, (uint8_t)kind };
	int32_t idx = fence_find(h, name, fence);
	struct fence *f;

	/* Forged.  A grant nobody was told of (yet) has a secret nobody
	 * knows, but a FORCE carries the holder's (force_begin in world.c):
	 * its event counts once the grant is told - its GRANTED may be on
	 * its way still - and never if it is not. */
	if (idx < 0 || h->f[idx].secret != secret)
		return op;
	f = &h->f[idx];
	op.fence = idx;
	op.event = event_add(f, kind == HIST_RENEW ? EV_RENEW : EV_RELEASE,
	    seq, t);
	f->ev[op.event].lease = lease;
	f->ev[op.event].outcome = HIST_PENDING;
	if (kind == HIST_RENEW)
		f->max_end = tmax(f->max_end, t + lease);
	return op;
}

void
hist_op_result(struct hist *h, struct hist_op op, enum hist_outcome outcome,
    sim_time t_exec, const struct hist_store_view *stored)
{
	struct fence *f;

	if (op.fence < 0) {
		if (outcome == HIST_OK) {
			hist_checked(h);
			hist_violation(h, SIM_STALE_TOKEN_REJECTION,
			    "%s at t=%lld with a forged handle told %s",
			    op.kind == HIST_RENEW ? "RENEW" : "RELEASE",
			    (long long)t_exec, op.kind == HIST_RENEW ?
			    "RENEWED" : "RELEASED");
		} else if (outcome == HIST_REFUSED) {
			hist_checked(h);
			hist_cover(h, SIM_COV_FORGED_REFUSED);
		}
		return;
	}
	f = &h->f[op.fence];
	f->ev[op.event].outcome = (uint8_t)outcome;
	if (outcome == HIST_OK && op.kind == HIST_RENEW && stored != NULL) {
		/* The store holds the renewal, or a later end of the lease
		 * that rode in the same batch. */
		hist_checked(h);
		if (stored->has && stored->fence == f->fence &&
		    stored->asof < t_exec)
			hist_violation(h, SIM_DURABILITY,
			    "RENEWED %s fence=%llu (executed t=%lld) told "
			    "while the store holds its state of t=%lld",
			    name_of(h, f->name),
			    (unsigned long long)f->fence, (long long)t_exec,
			    (long long)stored->asof);
		else if (stored->has && stored->fence < f->fence)
			hist_violation(h, SIM_DURABILITY,
			    "RENEWED %s fence=%llu told while the store holds "
			    "fence=%llu", name_of(h, f->name),
			    (unsigned long long)f->fence,
			    (unsigned long long)stored->fence);
	}
	fence_advance(h, op.fence);
}

static void
check_fencing(struct hist *h, struct name_hist *nh, const struct fence *f)
{
	size_t i;

	/* Insert by grant order; fences must rise along it. */
	GROW(nh->bg, nh->nbg, nh->cbg);
	/* (Grants of one step - a run of readers, the permits a tick
	 * frees - are minted in fence order.) */
	for (i = nh->nbg; i > 0 && (nh->bg[i - 1].seq > f->g_seq ||
	    (nh->bg[i - 1].seq == f->g_seq && nh->bg[i - 1].fence > f->fence));
	    i--)
		nh->bg[i] = nh->bg[i - 1];
	nh->bg[i].seq = f->g_seq;
	nh->bg[i].fence = f->fence;
	nh->nbg++;
	hist_checked(h);
	if (i > 0 && nh->bg[i - 1].fence >= f->fence)
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "%s granted fence=%llu at t=%lld after fence=%llu",
		    name_of(h, f->name), (unsigned long long)f->fence,
		    (long long)f->g, (unsigned long long)nh->bg[i - 1].fence);
	else if (i + 1 < nh->nbg && nh->bg[i + 1].fence <= f->fence)
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "%s granted fence=%llu at t=%lld before fence=%llu",
		    name_of(h, f->name), (unsigned long long)f->fence,
		    (long long)f->g, (unsigned long long)nh->bg[i + 1].fence);
}

static void
check_fifo(struct hist *h, struct name_hist *nh, const struct fence *f)
{
	size_t i;
	unsigned k, n;

	/* Insert by arrival; fences must rise along it as well. */
	GROW(nh->ba, nh->nba, nh->cba);
	for (i = nh->nba; i > 0 && nh->ba[i - 1].seq > f->a_seq; i--)
		nh->ba[i] = nh->ba[i - 1];
	nh->ba[i].seq = f->a_seq;
	nh->ba[i].fence = f->fence;
	nh->ba[i].g = f->g;
	nh->nba++;
	hist_checked(h);
	if (i > 0 && nh->ba[i - 1].fence >= f->fence)
		hist_violation(h, SIM_FIFO_FAIRNESS,
		    "%s: a request that arrived later was granted first "
		    "(fence=%llu before fence=%llu)", name_of(h, f->name),
		    (unsigned long long)f->fence,
		    (unsigned long long)nh->ba[i - 1].fence);
	else if (i + 1 < nh->nba && nh->ba[i + 1].fence <= f->fence)
		hist_violation(h, SIM_FIFO_FAIRNESS,
		    "%s: a request that arrived earlier was granted later "
		    "(fence=%llu after fence=%llu)", name_of(h, f->name),
		    (unsigned long long)f->fence,
		    (unsigned long long)nh->ba[i + 1].fence);
	/* No grant to a later arrival while an earlier waiter that timed
	 * out was still in the queue. */
	n = nh->ntmo < RING ? nh->ntmo : RING;
	for (k = 0; k < n; k++) {
		const struct timeout *t = &nh->tmo[k];
		if (t->seq < f->a_seq) {
			hist_checked(h);
			if (f->g < t->deadline)
				hist_violation(h, SIM_FIFO_FAIRNESS,
				    "%s fence=%llu granted at t=%lld to a "
				    "later arrival while an earlier waiter "
				    "was queued until t=%lld",
				    name_of(h, f->name),
				    (unsigned long long)f->fence,
				    (long long)f->g, (long long)t->deadline);
		}
	}
}

int32_t
hist_granted(struct hist *h, int name, uint64_t fence, uint64_t secret,
    int64_t lease, bool onclose, struct hist_kind kind, uint64_t arrival_seq,
    sim_time arrival, const struct hist_store_view *stored,
    uint64_t store_hwm)
{
	struct name_hist *nh = &h->nh[name];
	int32_t idx = fence_find(h, name, fence);
	struct fence *f;
	unsigned k, n;

	if (idx < 0) {
		/* Never seen in the table: granted within the step it
		 * arrived in, or the table is lying. */
		idx = fence_new(h, name, fence, secret);
		h->f[idx].g = arrival;
		h->f[idx].g_seq = arrival_seq;
	}
	f = &h->f[idx];
	hist_checked(h);
	if (f->told) {
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "%s fence=%llu granted twice", name_of(h, name),
		    (unsigned long long)fence);
		return -1;
	}
	if (f->secret != secret) {
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "%s fence=%llu minted twice in one incarnation",
		    name_of(h, name), (unsigned long long)fence);
		return -1;
	}
	f->told = true;
	f->lease = lease;
	f->onclose = onclose;
	f->kind = kind;
	f->max_end = tmax(f->max_end, f->g + lease);
	if (kind.limit > 1)
		hist_cover(h, SIM_COV_SEMAPHORE_GRANT);
	if (kind.shared)
		hist_cover(h, SIM_COV_SHARED_GRANT);
	f->a_seq = arrival_seq;
	if (f->g_seq < arrival_seq) {
		/* Seen in the table before its request arrived: the fence
		 * was minted for somebody else. */
		hist_violation(h, SIM_FENCING_MONOTONIC,
		    "%s fence=%llu was held before its request arrived",
		    name_of(h, name), (unsigned long long)fence);
		f->g_seq = arrival_seq;
		f->g = arrival;
	}
	if (fence > h->max_told)
		h->max_told = fence;
	hist_cover(h, f->g > arrival ? SIM_COV_GRANT_AFTER_WAIT :
	    SIM_COV_GRANT_AT_ONCE);

	/* The store has the grant: its fence is below the stored high-water
	 * mark, and the name's record is this grant or a later state (a
	 * lease that ran out before the commit may be gone already). */
	hist_checked(h);
	if (store_hwm < fence)
		hist_violation(h, SIM_DURABILITY,
		    "GRANTED %s fence=%llu told with the stored high-water "
		    "mark at %llu", name_of(h, name),
		    (unsigned long long)fence, (unsigned long long)store_hwm);
	else if (stored->has && stored->fence < fence)
		hist_violation(h, SIM_DURABILITY,
		    "GRANTED %s fence=%llu told while the store holds "
		    "fence=%llu", name_of(h, name), (unsigned long long)fence,
		    (unsigned long long)stored->fence);

	check_fencing(h, nh, f);
	check_fifo(h, nh, f);

	walk_init(f, &f->w);
	/* The holder rules at its grant, and again at every grant of its
	 * name told before it that it may have been held beside. */
	n = nh->nrecent < RING ? nh->nrecent : RING;
	for (k = 0; k < n; k++) {
		int32_t o = nh->recent[k];
		if (h->f[o].g_seq == f->g_seq && h->f[o].kind.shared &&
		    kind.shared)
			hist_cover(h, SIM_COV_SHARED_RUN);
		if (h->f[o].g_seq <= f->g_seq &&
		    judge_holder(h, idx, o) == UNKNOWN)
			defer(h, idx, o);
		if (h->f[o].g_seq >= f->g_seq &&
		    judge_holder(h, o, idx) == UNKNOWN)
			defer(h, o, idx);
	}
	nh->recent[nh->nrecent++ % RING] = idx;
	live_add(h, idx);
	fence_advance(h, idx);
	return idx;
}

bool
hist_told(const struct hist *h, int name, uint64_t fence)
{
	int32_t idx = fence_find(h, name, fence);

	return idx >= 0 && h->f[idx].told;
}

bool
hist_seen(const struct hist *h, int name, uint64_t fence, uint64_t *seq,
    sim_time *t)
{
	int32_t idx = fence_find(h, name, fence);

	if (idx < 0 || !h->f[idx].observed)
		return false;
	*seq = h->f[idx].g_seq;
	*t = h->f[idx].g;
	return true;
}

void
hist_timeout(struct hist *h, int name, uint64_t arrival_seq,
    sim_time deadline)
{
	struct name_hist *nh = &h->nh[name];
	size_t i;
	unsigned seen = 0;

	for (i = nh->nba; i > 0 && seen < RING; i--, seen++) {
		const struct by_arrival *a = &nh->ba[i - 1];
		if (a->seq <= arrival_seq)
			break;
		hist_checked(h);
		if (a->g < deadline)
			hist_violation(h, SIM_FIFO_FAIRNESS,
			    "%s fence=%llu granted at t=%lld to a later "
			    "arrival while an earlier waiter was queued "
			    "until t=%lld", name_of(h, name),
			    (unsigned long long)a->fence, (long long)a->g,
			    (long long)deadline);
	}
	nh->tmo[nh->ntmo++ % RING] = (struct timeout){ arrival_seq, deadline };
}

void
hist_closed(struct hist *h, int32_t idx, uint64_t seq, sim_time t)
{
	if (idx < 0 || (size_t)idx >= h->nf)
		return;
	event_add(&h->f[idx], EV_CLOSE, seq, t);
	fence_advance(h, idx);
}
