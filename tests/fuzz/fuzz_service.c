/*
 * fuzz_service.c - libFuzzer target for the request layer: the input is
 * decoded into a sequence of operations over a few simulated connections
 * (open, queue raw bytes or a well-formed request, feed a chunk, take some
 * output, close), a fake boot clock and wall clock (advance, step), deadline
 * ticks, loop-pass ends and commits, store and allocation failures, and
 * restarts (crash, clean stop, reboot) that recover from the in-memory
 * store.
 * It drives daemon/service.c exactly as server.c does and checks, after
 * every step:
 *
 *   - the lock table's books: entries, held leases, waiters and queue
 *     lengths agree with the counters; every held lease and every timed
 *     wait has its deadline in the heap; after a tick nothing due remains;
 *     no lock is free while someone waits; no lease ends later than the
 *     maximum lease from now; no fence above the high-water mark;
 *     holder sets (issue 17): the entry's own holder is alone, a limit-1
 *     name's others are all shared and a semaphore's none, never more than
 *     the limit, and nobody waits whom the holders would admit;
 *   - the replies: every byte a client reads is a reply line that
 *     proto_parse_reply accepts; replies come one per request, in request
 *     order (the target parses what it fed with the same parser, so it
 *     knows which request each reply answers) and of a kind that request
 *     may get; no reply without a request; no TIMEOUT before its wait;
 *   - what clients were told: a GRANTED fence is never told twice, is
 *     durable (not above the store's high-water mark) and is above every
 *     fence told for that name before the request arrived, in every mode
 *     (but for a rid repeat on a shared lock or a semaphore, which may
 *     first tell a grant that held beside newer told ones);
 *     the told grants of one name certainly running at once are never
 *     more than their limit, all of one limit, and an exclusive one runs
 *     beside none; a rid repeat gets its grant again (same handle, same
 *     kind), never a new grant beside a certainly running one of its rid;
 *     an ACQUIRE or TRY whose limit differs from a certainly running
 *     grant's gets ERR BADARG, and one that certainly fits never does;
 *     STATUS of a lock with told leases certainly running names the
 *     newest of them or a newer one, with holders= at least their count
 *     and their limit= and mode=shared; STATUS, LIST and WATCH's fields
 *     holders=, limit= and mode=shared agree with each other and held=;
 *   - at the end, with faults cleared and the clock run past every
 *     deadline: every request on an open connection has been answered, and
 *     the table and the store are empty again.
 *
 * "Certainly overlap": a grant is made between its request's execution (s)
 * and the moment its reply is read (d), so it certainly runs from d until
 * at least s + lease, unless a RELEASE or RENEW carrying its handle, or the
 * close of its onclose=release connection (also by a restart), happened
 * earlier - such an event bounds it by its own time, whatever its reply;
 * a reboot bounds every grant (the wall clock decides then).
 * Two told grants certainly overlap when max(d1, d2) < min(bound1, bound2).
 * Every check is sound: a failure is a bug of the service (or of this
 * file), never bad luck.
 *
 * The input: three configuration bytes (default and maximum lease, output
 * cap, line limit, server limits, a fence counter started near 2^63-1),
 * then operations, each a byte whose low four bits say what and whose high
 * bits pick one of FUZZ_CONNS connections, some followed by argument bytes
 * (tests/fuzz/make_service_seeds.py writes the seeds in this encoding):
 *   0 open  1 close (bit 6: half-close, as `printf ... | nc`)  2 queue raw
 *   bytes (length byte, then the bytes)  3 queue a well-formed request
 *   (command, name, options, handle - on ACQUIRE and TRY its limit=,
 *   mode= and rid=, see kind_options -, spelling)  4 commit if due
 *   5 feed n queued bytes as one read  6/7 advance the boot clock a little
 *   or a lot  8 tick  9 end the pass (service_end_pass, then the writes)
 *   10 commit now  11 faults: the store fails the next 1-3 commits, the
 *   before_commit seam fails, or the next core allocations fail  12 the
 *   client reads n bytes  13 step the wall clock (+-2 h)  14 restart:
 *   crash, or (bit 6) a clean stop; (bit 7) a reboot as well  15 a whole
 *   pass (tick, end, writes).
 * At the end every fault is cleared and the clock runs to every deadline.
 *
 * A broken check calls __builtin_trap() so libFuzzer keeps the input;
 * FUZZ_SERVICE_TRACE=1 prints what a single input does.  This file opens
 * no socket and no file but /dev/null, where the daemon's log goes while an
 * input runs.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/heap.h"
#include "core/list.h"
#include "daemon/auth.h"
#include "daemon/log.h"
#include "daemon/service.h"
#include "proto/proto.h"
#include "tests/lib/broken_rules.h"
#include "tests/lib/rng.h"
#include "tests/lib/store_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) do {						\
	if (!(cond))							\
		fuzz_fail(__LINE__);					\
} while (0)

static void fuzz_fail(int line) __attribute__((noreturn));

#define FUZZ_CONNS 4
#define FUZZ_NAMES 5
#define FUZZ_MONO_START 1000000     /* the boot clock never reads 0 */
#define FUZZ_WALL_BASE 1700000000000LL
#define FUZZ_DRAIN_ROUNDS 200000
#define FUZZ_RX_MAX (1 << 20)

/* A request as the target parsed it from what it fed. */
struct fuzz_req {
	int kind;                    /* enum proto_command, or FUZZ_BAD */
	enum proto_error_code bad;   /* FUZZ_BAD: the code it must get */
	char name[PROTO_NAME_MAX];
	size_t name_len;
	struct proto_handle handle;
	int64_t lease;               /* effective lease; -1: none asked */
	bool has_wait;
	int64_t wait;
	bool onclose;
	bool has_fence;              /* FORCE, CHECK; WATCH's fence= */
	uint64_t fence;
	char rid[PROTO_RID_MAX];     /* ACQUIRE, TRY: rid=; rid_len 0: none */
	size_t rid_len;
	bool shared;                 /* ACQUIRE, TRY: mode=shared */
	uint16_t limit;              /* ACQUIRE, TRY: limit=, 1 when absent */
	core_time t;                 /* executed at */
	uint64_t stamp;              /* order of execution */
	/* ACQUIRE, TRY: the told grants certainly running at t say that its
	 * kind does not fit the name (ERR BADARG certain), or cannot say
	 * (BADARG allowed); a live grant made with its rid (its repeat). */
	bool misfit_certain;
	bool misfit_possible;
	uint64_t rid_live_fence;
	/* STATUS: the told leases certainly running at t, if any: how many,
	 * of what kind, the newest of them and what its lease has left. */
	bool expect_held;
	uint32_t expect_count;
	bool expect_shared;
	uint16_t expect_limit;
	uint64_t expect_fence;
	int64_t expect_ttl_min;
	/* --auth: the permission check must refuse it (ERR DENIED, nothing
	 * changed); an AUTH whose token matched (AUTHED). */
	bool denied;
	bool authed;
	int principal;            /* --auth: whose request it was */
};
#define FUZZ_BAD PROTO_CMD_COUNT

struct fuzz_conn {
	struct service_conn sc;      /* the service's; stable address */
	bool open;
	uint32_t gen;                /* which opening of this slot */
	bool stopped;                /* QUIT parsed, or cut off: no more */
	int principal;               /* --auth: 0 nobody, else FUZZ_P_* */
	unsigned auth_failures;
	bool input_ended;            /* half-closed: waiters cancelled */
	/* Bytes queued by the client, not yet fed. */
	char *outbox;
	size_t ob_len, ob_cap;
	/* The target's own parse of what it fed. */
	char *mirror;
	size_t m_len, m_cap;
	bool discarding;
	struct fuzz_req *reqs;
	size_t nreq, head, req_cap;  /* reqs[head..nreq) await replies */
	/* Bytes the client has read, not yet a whole line. */
	char *rx;
	size_t rx_len, rx_cap;
	uint64_t lf_fed, bytes_fed, replies;
};

/* A grant a client was told of. */
struct fuzz_grant {
	char name[PROTO_NAME_MAX];
	size_t name_len;
	uint64_t fence, secret;
	core_time told;              /* d */
	uint64_t told_stamp;
	core_time bound;             /* certainly held until (exclusive) */
	bool onclose;
	int conn;
	uint32_t gen;
	uint64_t bind_stamp;         /* the request that bound it last */
	char rid[PROTO_RID_MAX];     /* the rid it was granted with */
	size_t rid_len;
	bool shared;                 /* its kind: mode=shared, */
	uint16_t limit;              /*   the name's limit (1: none) */
};

/* An ACQUIRE or TRY with a rid, executed. */
struct fuzz_rid_req {
	char name[PROTO_NAME_MAX];
	size_t name_len;
	char rid[PROTO_RID_MAX];
	size_t rid_len;
	uint64_t stamp;
	bool onclose;
	int conn;                    /* where it executed */
	uint32_t gen;
	bool closed;                 /* that connection closed, at: */
	core_time closed_at;
};

/* A RELEASE or RENEW executed, by handle. */
struct fuzz_handle_event {
	char name[PROTO_NAME_MAX];
	size_t name_len;
	struct proto_handle handle;
	core_time t;
	bool any_secret;     /* FORCE: the fence alone names the grant */
};

struct fuzz {
	const uint8_t *in;
	size_t len, pos;
	struct service svc;
	bool up;
	struct store_mem mem;
	struct service_config config;
	struct service_clock clock;
	core_time mono;              /* global time: never steps or restarts */
	core_time boot_shift;        /* the boot clock reads mono - boot_shift */
	int64_t wall_offset;
	struct rng secrets;
	int fail_allocs;             /* the next N core allocations fail */
	bool hook_fails;
	bool stopping;               /* a clean stop is answering SHUTDOWN */
	bool limits;                 /* any held/waiter limit configured */
	bool auth;                   /* --auth on, with fuzz_rules */
	bool near_overflow;
	uint64_t stamp;
	int variant;                 /* enum fuzz_variant */
	const struct store_ops *mem_ops;
	struct store_ops lossy_ops;
	struct fuzz_conn conns[FUZZ_CONNS];
	struct fuzz_grant *grants;
	size_t ngrants, grants_cap;
	struct fuzz_handle_event *events;
	size_t nevents, events_cap;
	struct fuzz_rid_req *rid_reqs;
	size_t nrid_reqs, rid_reqs_cap;
};

/*
 * Broken variants, chosen with FUZZ_SERVICE_VARIANT in the environment, so
 * that `make fuzz-guard` can show the checks catch what they are for:
 *   lossy-store        the store acknowledges a commit but keeps no lease
 *                      record (as without fsync): a restart forgets grants
 *   wall-clock-leases  the service's boot clock follows the wall clock, so
 *                      a wall-clock step moves every lease
 * and the lock table run on one of tests/lib/broken_rules.h's rule sets
 * for holder sets (issue 17):
 *   admits-over-limit     a semaphore admits one holder over its limit
 *   reader-beside-writer  a reader is admitted beside any holder
 *   one-grant-at-a-time   the queue is served only when nobody holds
 *   grant-keeps-counter   a grant leaves the fence counter: fences repeat
 *   rid-any-holder        a rid repeat finds any holder granted with a rid
 */
enum fuzz_variant {
	FUZZ_STANDARD,
	FUZZ_LOSSY_STORE,
	FUZZ_WALL_CLOCK_LEASES,
	FUZZ_BROKEN_RULES        /* fuzz_broken[] from here on */
};

static const struct {
	const char *name;
	const struct core_rules *rules;
} fuzz_broken[] = {
	{ "admits-over-limit", &broken_rules_admits_over_limit },
	{ "reader-beside-writer", &broken_rules_reader_beside_writer },
	{ "one-grant-at-a-time", &broken_rules_one_grant_at_a_time },
	{ "grant-keeps-counter", &broken_rules_grant_keeps_counter },
	{ "rid-any-holder", &broken_rules_rid_any_holder },
};

static struct fuzz fz;

/* FUZZ_SERVICE_TRACE=1 in the environment: each operation on stderr, to
 * read a crashing input's story (run the target on that one file). */
static FILE *trace_out;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
trace(const char *fmt, ...)
{
	va_list ap;

	if (trace_out == NULL)
		return;
	fprintf(trace_out, "t=%lld ", (long long)fz.mono);
	va_start(ap, fmt);
	vfprintf(trace_out, fmt, ap);
	va_end(ap);
	fputc('\n', trace_out);
}

/* A broken check: with FUZZ_SERVICE_TRACE, which one, then the trap. */
static void
fuzz_fail(int line)
{
	if (trace_out != NULL)
		fprintf(trace_out, "check failed: fuzz_service.c:%d\n", line);
	__builtin_trap();
}

/* ---- input ------------------------------------------------------------ */

static bool
more(void)
{
	return fz.pos < fz.len;
}

static uint8_t
byte(void)
{
	return fz.pos < fz.len ? fz.in[fz.pos++] : 0;
}

/* ---- small helpers ---------------------------------------------------- */

static void *
grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 16;

	if (need <= *cap)
		return p;
	while (c < need)
		c *= 2;
	p = realloc(p, c * elem);
	FUZZ_CHECK(p != NULL);
	*cap = c;
	return p;
}

static void
append(char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
	if (n == 0)
		return;
	*buf = grow(*buf, cap, *len + n, 1);
	memcpy(*buf + *len, data, n);
	*len += n;
}

static core_time
min_time(core_time a, core_time b)
{
	return a < b ? a : b;
}

static bool
same_name(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && memcmp(a, b, alen) == 0;
}

/* ---- the clocks, secrets and allocator the service runs on ------------ */

static core_time
fuzz_mono(void *ctx)
{
	(void)ctx;
	if (fz.variant == FUZZ_WALL_CLOCK_LEASES)
		return fz.mono - fz.boot_shift + fz.wall_offset;
	return fz.mono - fz.boot_shift;
}

/* Now on the service's clock (the boot clock), for its deadlines. */
static core_time
svc_now(void)
{
	return fuzz_mono(NULL);
}

/* FUZZ_LOSSY_STORE: commits only the deletes and the high-water mark. */
static int
lossy_commit(struct store *store, const struct store_batch *batch)
{
	struct store_batch kept;
	struct store_batch_op op;
	size_t pos = 0;
	int rc;

	store_batch_init(&kept);
	while (store_batch_next(batch, &pos, &op))
		if (op.op == STORE_DEL)
			FUZZ_CHECK(store_batch_add(&kept, op.op, op.name,
			    op.name_len, NULL, 0) == 0);
	kept.has_hwm = batch->has_hwm;
	kept.hwm = batch->hwm;
	rc = fz.mem_ops->commit(store, &kept);
	store_batch_free(&kept);
	return rc;
}

static int
variant_from_env(void)
{
	const char *v = getenv("FUZZ_SERVICE_VARIANT");

	if (v == NULL || *v == '\0' || strcmp(v, "none") == 0)
		return FUZZ_STANDARD;
	if (strcmp(v, "lossy-store") == 0)
		return FUZZ_LOSSY_STORE;
	if (strcmp(v, "wall-clock-leases") == 0)
		return FUZZ_WALL_CLOCK_LEASES;
	for (size_t i = 0; i < sizeof(fuzz_broken) / sizeof(fuzz_broken[0]);
	    i++)
		if (strcmp(v, fuzz_broken[i].name) == 0)
			return FUZZ_BROKEN_RULES + (int)i;
	fprintf(stderr, "fuzz_service: unknown FUZZ_SERVICE_VARIANT %s\n", v);
	abort();
}

static int64_t
fuzz_wall(void *ctx)
{
	(void)ctx;
	return FUZZ_WALL_BASE + fz.mono + fz.wall_offset;
}

static uint64_t
fuzz_secret(void *ctx)
{
	(void)ctx;
	return rng_next(&fz.secrets);
}

static void *
fuzz_realloc(void *p, size_t size)
{
	if (fz.fail_allocs > 0) {
		fz.fail_allocs--;
		return NULL;
	}
	return realloc(p, size);
}

static int
fuzz_before_commit(void *ctx)
{
	(void)ctx;
	return fz.hook_fails ? -1 : 0;
}

/* ---- what clients were told ------------------------------------------- */

/*
 * Was grant g's rid repeated on connection slot c (this opening)?  An
 * onclose=release hold follows the connection that repeated its rid last,
 * and replies may be read out of execution order, so the close of any
 * connection that sent g's name and rid may end it: assuming so only
 * bounds it earlier.
 */
static bool
rid_bound_to(const struct fuzz_grant *g, int c)
{
	size_t i;

	if (g->rid_len == 0)
		return false;
	for (i = 0; i < fz.nrid_reqs; i++) {
		const struct fuzz_rid_req *r = &fz.rid_reqs[i];
		if (r->conn == c && r->gen == fz.conns[c].gen &&
		    same_name(r->name, r->name_len, g->name, g->name_len) &&
		    r->rid_len == g->rid_len &&
		    memcmp(r->rid, g->rid, g->rid_len) == 0)
			return true;
	}
	return false;
}

/* A lease-ending event for every told grant it names: bound it. */
static void
handle_event(const char *name, size_t name_len, struct proto_handle h,
    core_time t, bool any_secret)
{
	struct fuzz_handle_event *e;
	size_t i;

	for (i = 0; i < fz.ngrants; i++) {
		struct fuzz_grant *g = &fz.grants[i];
		if (same_name(g->name, g->name_len, name, name_len) &&
		    g->fence == h.fence && (any_secret || g->secret == h.secret))
			g->bound = min_time(g->bound, t);
	}
	/* Kept for grants told later: a guessed handle counts as well. */
	fz.events = grow(fz.events, &fz.events_cap, fz.nevents + 1,
	    sizeof(*fz.events));
	e = &fz.events[fz.nevents++];
	memcpy(e->name, name, name_len);
	e->name_len = name_len;
	e->handle = h;
	e->t = t;
	e->any_secret = any_secret;
}

/* The onclose=release grants of connection slot c (this opening) end. */
static void
conn_closed_event(int c)
{
	size_t i;

	for (i = 0; i < fz.nrid_reqs; i++) {
		struct fuzz_rid_req *r = &fz.rid_reqs[i];
		if (!r->closed && r->conn == c && r->gen == fz.conns[c].gen) {
			r->closed = true;
			r->closed_at = fz.mono;
		}
	}
	for (i = 0; i < fz.ngrants; i++) {
		struct fuzz_grant *g = &fz.grants[i];
		if (g->onclose && ((g->conn == c &&
		    g->gen == fz.conns[c].gen) || rid_bound_to(g, c)))
			g->bound = min_time(g->bound, fz.mono);
	}
}

/* Is told grant g certainly running now. */
static bool
running(const struct fuzz_grant *g)
{
	return g->told <= fz.mono && g->bound > fz.mono;
}

/* The told grants of a name certainly running now (issue 17's holder
 * sets): how many, and the newest of them; they agree on their kind, or
 * told_granted has trapped. */
struct fuzz_running {
	uint32_t count;
	const struct fuzz_grant *newest;
};

static void
running_grants(const char *name, size_t name_len, struct fuzz_running *r)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < fz.ngrants; i++) {
		const struct fuzz_grant *g = &fz.grants[i];
		if (!same_name(g->name, g->name_len, name, name_len) ||
		    !running(g))
			continue;
		r->count++;
		if (r->newest == NULL || g->fence > r->newest->fence)
			r->newest = g;
	}
}

/* The fence of a told grant of req's name certainly running now that was
 * made with req's rid, 0 if none: req may only get that grant again. */
static uint64_t
rid_live_fence(const struct fuzz_req *req)
{
	size_t i;

	for (i = 0; req->rid_len > 0 && i < fz.ngrants; i++) {
		const struct fuzz_grant *g = &fz.grants[i];
		if (same_name(g->name, g->name_len, req->name,
		    req->name_len) && running(g) &&
		    g->rid_len == req->rid_len &&
		    memcmp(g->rid, req->rid, req->rid_len) == 0)
			return g->fence;
	}
	return 0;
}

static int64_t effective_lease(int64_t asked);

/*
 * Did an ACQUIRE or TRY with req's name and rid execute before req?  Then
 * req's GRANTED may repeat that request's grant before that one was read
 * (or after its connection closed unread): its lease is what the hold had
 * left at req->t, so req->t + lease is still the hold's end.  *onclose:
 * whether any of them asked for onclose=release (the hold then follows
 * the repeating connection; assuming so only ends it earlier).
 */
static bool
earlier_rid(const struct fuzz_req *req, bool *onclose)
{
	bool found = false;
	size_t i;

	*onclose = false;
	for (i = 0; i < fz.nrid_reqs; i++) {
		const struct fuzz_rid_req *r = &fz.rid_reqs[i];
		if (r->stamp < req->stamp && same_name(r->name, r->name_len,
		    req->name, req->name_len) && r->rid_len == req->rid_len &&
		    memcmp(r->rid, req->rid, r->rid_len) == 0) {
			found = true;
			*onclose = *onclose || r->onclose;
		}
	}
	return found;
}

static bool
earlier_rid_onclose(const struct fuzz_req *req)
{
	bool onclose;

	return req->rid_len > 0 && earlier_rid(req, &onclose) && onclose;
}

/* The lease a first told GRANTED may carry for req (see earlier_rid). */
static bool
granted_lease_ok(const struct fuzz_req *req, int64_t lease_ms)
{
	bool onclose;

	if (req->rid_len > 0 && earlier_rid(req, &onclose))
		return lease_ms > 0 &&
		    lease_ms <= fz.config.core.max_lease_ms;
	return lease_ms == effective_lease(req->lease);
}

static void
told_granted(int c, const struct fuzz_req *req,
    const struct proto_reply *rep)
{
	struct fuzz_grant *g;
	bool repeat_onclose;
	/* A rid repeat may be the first telling of a grant made before
	 * others were told: of a shared lock or a semaphore, it may have held
	 * beside them all along. */
	bool maybe_old = (req->shared || req->limit > 1) &&
	    req->rid_len > 0 && earlier_rid(req, &repeat_onclose);
	size_t i;

	FUZZ_CHECK(rep->handle.fence == rep->fence);
	FUZZ_CHECK(rep->fence >= 1 && rep->fence <= CORE_FENCE_MAX);
	/* Durable before it was told. */
	FUZZ_CHECK(rep->fence <= fz.mem.hwm);
	for (i = 0; i < fz.ngrants; i++) {
		const struct fuzz_grant *o = &fz.grants[i];
		/* Fences come from one counter: never told twice. */
		FUZZ_CHECK(o->fence != rep->fence);
		if (!same_name(o->name, o->name_len, rep->name,
		    rep->name_len))
			continue;
		/* Told before this request arrived: granted before it. */
		if (o->told_stamp < req->stamp && !maybe_old)
			FUZZ_CHECK(o->fence < rep->fence);
	}
	fz.grants = grow(fz.grants, &fz.grants_cap, fz.ngrants + 1,
	    sizeof(*fz.grants));
	g = &fz.grants[fz.ngrants];
	memset(g, 0, sizeof(*g));
	memcpy(g->name, rep->name, rep->name_len);
	g->name_len = rep->name_len;
	g->fence = rep->fence;
	g->secret = rep->handle.secret;
	g->told = fz.mono;
	g->told_stamp = ++fz.stamp;
	g->bound = req->t + rep->lease_ms;
	g->onclose = req->onclose || earlier_rid_onclose(req);
	g->conn = c;
	g->gen = fz.conns[c].gen;
	g->bind_stamp = req->stamp;
	g->rid_len = req->rid_len;
	memcpy(g->rid, req->rid, req->rid_len);
	g->shared = req->shared;
	g->limit = req->limit;
	/* The hold lived at req->t; a close since of a connection that sent
	 * its rid may have ended it (see rid_bound_to). */
	for (i = 0; g->onclose && g->rid_len > 0 && i < fz.nrid_reqs; i++) {
		const struct fuzz_rid_req *r = &fz.rid_reqs[i];
		if (r->closed && r->closed_at >= req->t &&
		    same_name(r->name, r->name_len, g->name, g->name_len) &&
		    r->rid_len == g->rid_len &&
		    memcmp(r->rid, g->rid, g->rid_len) == 0)
			g->bound = min_time(g->bound, r->closed_at);
	}
	for (i = 0; i < fz.nevents; i++) {
		const struct fuzz_handle_event *e = &fz.events[i];
		if (same_name(e->name, e->name_len, g->name, g->name_len) &&
		    e->handle.fence == g->fence &&
		    (e->any_secret || e->handle.secret == g->secret))
			g->bound = min_time(g->bound, e->t);
	}
	/* The holders clients were told of, now: never more than the limit;
	 * an exclusive one beside no other; all of one limit, which a name
	 * keeps until it is idle.  (Every other told grant was told by now,
	 * so two certainly overlap exactly when both certainly run now.) */
	if (running(g)) {
		uint32_t holders = 1;

		for (i = 0; i < fz.ngrants; i++) {
			const struct fuzz_grant *o = &fz.grants[i];
			if (!same_name(o->name, o->name_len, g->name,
			    g->name_len) || !running(o))
				continue;
			holders++;
			FUZZ_CHECK(o->limit == g->limit);
			FUZZ_CHECK(g->limit > 1 || (g->shared && o->shared));
		}
		FUZZ_CHECK(holders <= g->limit || g->shared);
	}
	fz.ngrants++;
}

/*
 * A GRANTED that repeats a grant told before: only to a request with the
 * rid that grant was made with, with its handle, and no longer a lease
 * than it was given.  An onclose=release grant is bound to the repeating
 * connection from then on.  False: not a repeat (a new grant).
 */
static bool
told_again(int c, const struct fuzz_req *req, const struct proto_reply *rep)
{
	size_t i;

	for (i = 0; i < fz.ngrants; i++) {
		struct fuzz_grant *o = &fz.grants[i];

		if (o->fence != rep->fence || !same_name(o->name, o->name_len,
		    rep->name, rep->name_len))
			continue;
		FUZZ_CHECK(req->rid_len > 0 && req->rid_len == o->rid_len &&
		    memcmp(req->rid, o->rid, o->rid_len) == 0);
		FUZZ_CHECK(rep->handle.secret == o->secret);
		/* A repeat of another kind is ERR BADARG, never the grant. */
		FUZZ_CHECK(req->shared == o->shared && req->limit == o->limit);
		FUZZ_CHECK(rep->lease_ms > 0 &&
		    rep->lease_ms <= fz.config.core.max_lease_ms);
		/* Bound to the connection that repeated it last (replies
		 * may be read out of execution order). */
		if (o->onclose && req->stamp > o->bind_stamp) {
			o->conn = c;
			o->gen = fz.conns[c].gen;
			o->bind_stamp = req->stamp;
		}
		return true;
	}
	return false;
}

/* The lease a GRANTED or RENEWED must carry for a request's lease. */
static int64_t
effective_lease(int64_t asked)
{
	int64_t l = asked <= 0 ? fz.config.core.default_lease_ms : asked;

	return l > fz.config.core.max_lease_ms ?
	    fz.config.core.max_lease_ms : l;
}

static bool
is_error(const struct proto_reply *rep, enum proto_error_code code)
{
	return rep->kind == PROTO_REPLY_ERROR && rep->error == code;
}

/* Errors any lock operation may get from the server's state. */
static bool
allowed_failure(const struct proto_reply *rep, bool may_limit)
{
	return is_error(rep, PROTO_ERR_UNAVAILABLE) ||
	    (may_limit && fz.limits && is_error(rep, PROTO_ERR_LIMIT)) ||
	    (fz.near_overflow && is_error(rep, PROTO_ERR_OVERFLOW));
}

/*
 * STATUS, LOCK and CHANGED: holders=, limit= and mode=shared agree with
 * each other and with held= (issue 17): holders= is shown when the limit
 * is above 1 or the lock is held shared, limit= when it is above 1.
 */
static void
check_kind_fields(const struct proto_reply *rep)
{
	if (!rep->held)
		FUZZ_CHECK(rep->holders == 0 && !rep->shared);
	if (rep->shared)
		FUZZ_CHECK(rep->holders >= 1 && rep->limit == 0);
	if (rep->limit != 0)
		FUZZ_CHECK(rep->limit >= 2 &&
		    rep->limit <= PROTO_HOLDERS_LIMIT_MAX &&
		    rep->holders <= rep->limit &&
		    (rep->holders >= 1) == rep->held);
	if (rep->limit == 0 && !rep->shared)
		FUZZ_CHECK(rep->holders == 0);
}

/* ACQUIRE and TRY: a reply that may answer a request whose kind (limit=,
 * mode=) certainly does not fit the name. */
static bool
misfit_reply(const struct proto_reply *rep)
{
	return is_error(rep, PROTO_ERR_BADARG) ||
	    allowed_failure(rep, true) ||
	    (fz.stopping && is_error(rep, PROTO_ERR_SHUTDOWN));
}

/* Checks one reply line against the request it answers. */
static bool fuzz_may(int principal, unsigned perm, const char *name,
    size_t len);

static void
check_reply(int c, const char *line, size_t n)
{
	struct fuzz_conn *fc = &fz.conns[c];
	struct proto_reply rep;
	struct proto_error err;
	struct fuzz_req *req;
	size_t used = 0;
	bool named;

	FUZZ_CHECK(proto_parse_reply(line, n, FUZZ_RX_MAX, &rep, &used,
	    &err) == PROTO_DONE);
	FUZZ_CHECK(used == n);
	FUZZ_CHECK(n >= 2 && line[n - 2] == '\r');
	/* One reply per request, in request order; a LIST's LOCK lines
	 * come before its END, which answers it. */
	FUZZ_CHECK(fc->head < fc->nreq);
	if (fc->reqs[fc->head].kind == PROTO_CMD_LIST &&
	    rep.kind == PROTO_REPLY_LOCK) {
		FUZZ_CHECK(rep.held || (rep.fence == 0 && rep.ttl_ms == 0));
		FUZZ_CHECK(rep.held || rep.queue > 0 || rep.delay_ms > 0);
		check_kind_fields(&rep);
		/* With --auth, only names the principal may read. */
		FUZZ_CHECK(!fz.auth || fuzz_may(fc->reqs[fc->head].principal,
		    AUTH_PERM_READ, rep.name, rep.name_len));
		return;
	}
	req = &fc->reqs[fc->head++];
	fc->replies++;
	trace("c%d reads %.*s", c, (int)(n - 2), line);
	FUZZ_CHECK(fc->replies <= fc->lf_fed + fc->bytes_fed /
	    (fz.config.max_line + 1));
	named = rep.kind <= PROTO_REPLY_STATUS;
	if (named && req->kind != FUZZ_BAD)
		FUZZ_CHECK(same_name(rep.name, rep.name_len, req->name,
		    req->name_len));
	if (req->denied) {
		/* Refused before it touched anything. */
		FUZZ_CHECK(is_error(&rep, PROTO_ERR_DENIED));
		return;
	}
	FUZZ_CHECK(!is_error(&rep, PROTO_ERR_DENIED));
	if (req->kind == PROTO_CMD_ACQUIRE || req->kind == PROTO_CMD_TRY) {
		/* A kind that does not fit the name: BADARG, and only when
		 * the oracle cannot say it fits. */
		FUZZ_CHECK(!req->misfit_certain || misfit_reply(&rep));
		FUZZ_CHECK(!is_error(&rep, PROTO_ERR_BADARG) ||
		    req->misfit_possible);
		if (is_error(&rep, PROTO_ERR_BADARG))
			return;
	}
	switch (req->kind) {
	case FUZZ_BAD:
		FUZZ_CHECK(is_error(&rep, req->bad));
		break;
	case PROTO_CMD_ACQUIRE:
		if (rep.kind == PROTO_REPLY_GRANTED && told_again(c, req,
		    &rep)) {
			/* A rid repeat: the grant told before. */
		} else if (rep.kind == PROTO_REPLY_GRANTED) {
			/* Never a second grant beside its rid's live one. */
			FUZZ_CHECK(req->rid_live_fence == 0);
			FUZZ_CHECK(granted_lease_ok(req, rep.lease_ms));
			told_granted(c, req, &rep);
		} else if (req->rid_len > 0 &&
		    is_error(&rep, PROTO_ERR_CONFLICT)) {
			/* An ACQUIRE with its rid took its place. */
		} else if (is_error(&rep, PROTO_ERR_TIMEOUT)) {
			/* Its wait ran out, or the input ended first. */
			FUZZ_CHECK(fc->input_ended || (req->has_wait &&
			    fz.mono >= req->t + req->wait));
		} else if (is_error(&rep, PROTO_ERR_SHUTDOWN)) {
			FUZZ_CHECK(fz.stopping);
		} else {
			FUZZ_CHECK(allowed_failure(&rep, true));
		}
		break;
	case PROTO_CMD_TRY:
		if (rep.kind == PROTO_REPLY_GRANTED && told_again(c, req,
		    &rep)) {
			/* A rid repeat: the grant told before. */
		} else if (rep.kind == PROTO_REPLY_GRANTED) {
			FUZZ_CHECK(req->rid_live_fence == 0);
			FUZZ_CHECK(granted_lease_ok(req, rep.lease_ms));
			told_granted(c, req, &rep);
		} else {
			FUZZ_CHECK(rep.kind == PROTO_REPLY_HELD ||
			    allowed_failure(&rep, true));
		}
		break;
	case PROTO_CMD_RENEW:
		if (rep.kind == PROTO_REPLY_RENEWED) {
			FUZZ_CHECK(rep.fence == req->handle.fence);
			FUZZ_CHECK(rep.lease_ms == effective_lease(req->lease));
		} else {
			FUZZ_CHECK(is_error(&rep, PROTO_ERR_CONFLICT) ||
			    is_error(&rep, PROTO_ERR_UNAVAILABLE));
		}
		break;
	case PROTO_CMD_RELEASE:
		/* UNAVAILABLE: it handed the lock on, and that grant's
		 * commit failed; the release was rolled back with it. */
		FUZZ_CHECK(rep.kind == PROTO_REPLY_RELEASED ||
		    rep.kind == PROTO_REPLY_NOTHELD ||
		    is_error(&rep, PROTO_ERR_UNAVAILABLE));
		break;
	case PROTO_CMD_STATUS:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_STATUS);
		FUZZ_CHECK(rep.held || (rep.fence == 0 && rep.ttl_ms == 0));
		FUZZ_CHECK(rep.ttl_ms >= 0 &&
		    rep.ttl_ms <= fz.config.core.max_lease_ms);
		check_kind_fields(&rep);
		if (req->expect_held) {
			/* fence and ttl are the newest holder's; an exclusive
			 * holder is the only one. */
			FUZZ_CHECK(rep.held && rep.fence >= req->expect_fence);
			FUZZ_CHECK(req->expect_shared || req->expect_limit > 1 ||
			    rep.fence == req->expect_fence);
			if (rep.fence == req->expect_fence)
				FUZZ_CHECK(rep.ttl_ms >= req->expect_ttl_min);
			FUZZ_CHECK(rep.shared == req->expect_shared);
			FUZZ_CHECK(rep.limit == (req->expect_limit > 1 ?
			    req->expect_limit : 0));
			FUZZ_CHECK(rep.holders >= req->expect_count ||
			    (!req->expect_shared && req->expect_limit == 1));
		}
		break;
	case PROTO_CMD_PING:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_PONG);
		break;
	case PROTO_CMD_QUIT:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_BYE);
		break;
	case PROTO_CMD_HELP:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_HELP);
		break;
	case PROTO_CMD_STATS:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_STATS);
		break;
	case PROTO_CMD_FORCE:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_RELEASED ||
		    rep.kind == PROTO_REPLY_NOTHELD ||
		    is_error(&rep, PROTO_ERR_UNAVAILABLE));
		break;
	case PROTO_CMD_CHECK:
		FUZZ_CHECK((rep.kind == PROTO_REPLY_CURRENT &&
		    rep.fence == req->fence) ||
		    (rep.kind == PROTO_REPLY_STALE && rep.fence != req->fence) ||
		    is_error(&rep, PROTO_ERR_UNAVAILABLE));
		break;
	case PROTO_CMD_WATCH:
		if (rep.kind == PROTO_REPLY_CHANGED) {
			/* Never for the fence watched. */
			FUZZ_CHECK(!req->has_fence || rep.fence != req->fence);
			check_kind_fields(&rep);
		} else if (is_error(&rep, PROTO_ERR_TIMEOUT)) {
			FUZZ_CHECK(fc->input_ended || (req->has_wait &&
			    fz.mono >= req->t + req->wait));
		} else if (is_error(&rep, PROTO_ERR_SHUTDOWN)) {
			FUZZ_CHECK(fz.stopping);
		} else {
			FUZZ_CHECK(allowed_failure(&rep, true));
		}
		break;
	case PROTO_CMD_LIST:
		FUZZ_CHECK(rep.kind == PROTO_REPLY_END ||
		    is_error(&rep, PROTO_ERR_UNAVAILABLE));
		break;
	case PROTO_CMD_AUTH:
		/* Without --auth, AUTH is unknown. */
		if (fz.auth)
			FUZZ_CHECK(req->authed &&
			    rep.kind == PROTO_REPLY_AUTHED);
		else
			FUZZ_CHECK(is_error(&rep, PROTO_ERR_BADREQ));
		break;
	default:
		FUZZ_CHECK(false);
	}
}

/* ---- --auth: the model of the permission check -------------------------- */

/*
 * The rules fuzz_service runs with when a configuration byte turns --auth
 * on: the tokens are two of fuzz_names, so that AUTH with a name is
 * sometimes right; p1 may do everything on "lock/", p2 lock and read on
 * "a" (which "a" itself starts with).  The model below says, from these
 * lines alone, what the service must answer.
 */
enum { FUZZ_P_NONE, FUZZ_P1, FUZZ_P2 };
/* sha256("a"), sha256("b"). */
static const char fuzz_auth_text[] =
    "p1 ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
    " lock,read,admin lock/\n"
    "p2 3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d"
    " lock,read a\n";
static struct auth_rules fuzz_rules;

static bool
fuzz_may(int principal, unsigned perm, const char *name, size_t len)
{
	if (principal == FUZZ_P1)
		return len == 0 ? true : len >= 5 &&
		    memcmp(name, "lock/", 5) == 0;
	if (principal == FUZZ_P2)   /* len 0: on some prefix */
		return perm != AUTH_PERM_ADMIN && (len == 0 ||
		    name[0] == 'a');
	return false;
}

/* What --auth must do with preq on fc, recorded in req. */
static void
judge(struct fuzz_conn *fc, const struct proto_request *preq,
    struct fuzz_req *req)
{
	unsigned perm = 0;

	req->principal = fc->principal;
	switch (preq->command) {
	case PROTO_CMD_AUTH:
		if (preq->name_len == 1 && (preq->name[0] == 'a' ||
		    preq->name[0] == 'b')) {
			fc->principal = preq->name[0] == 'a' ? FUZZ_P1 :
			    FUZZ_P2;
			req->authed = true;
		} else {
			req->denied = true;
			/* The third failure is answered, then the end. */
			if (++fc->auth_failures >= AUTH_MAX_FAILURES)
				fc->stopped = true;
		}
		return;
	case PROTO_CMD_ACQUIRE:
	case PROTO_CMD_TRY:
	case PROTO_CMD_RENEW:
	case PROTO_CMD_RELEASE:
		perm = AUTH_PERM_LOCK;
		break;
	case PROTO_CMD_STATUS:
	case PROTO_CMD_CHECK:
	case PROTO_CMD_WATCH:
	case PROTO_CMD_LIST:       /* no name: read on some prefix */
		perm = AUTH_PERM_READ;
		break;
	case PROTO_CMD_STATS:      /* no name: admin on some prefix */
	case PROTO_CMD_FORCE:
		perm = AUTH_PERM_ADMIN;
		break;
	default:
		return;
	}
	req->denied = !fuzz_may(fc->principal, perm, preq->name,
	    preq->name_len);
}

/* ---- the client's side of a connection -------------------------------- */

/* Logs an executed ACQUIRE or TRY with a rid (see told_granted). */
static void
rid_executed(int c, const struct fuzz_req *req)
{
	struct fuzz_rid_req *r;

	fz.rid_reqs = grow(fz.rid_reqs, &fz.rid_reqs_cap, fz.nrid_reqs + 1,
	    sizeof(*fz.rid_reqs));
	r = &fz.rid_reqs[fz.nrid_reqs++];
	memcpy(r->name, req->name, req->name_len);
	r->name_len = req->name_len;
	memcpy(r->rid, req->rid, req->rid_len);
	r->rid_len = req->rid_len;
	r->stamp = req->stamp;
	r->onclose = req->onclose;
	r->conn = c;
	r->gen = fz.conns[c].gen;
	r->closed = false;
}

/* Records a request the service executed now, with what it implies. */
static void
executed(int c, const struct proto_request *preq,
    const struct proto_error *err)
{
	struct fuzz_conn *fc = &fz.conns[c];
	struct fuzz_req *req;

	fc->reqs = grow(fc->reqs, &fc->req_cap, fc->nreq + 1,
	    sizeof(*fc->reqs));
	req = &fc->reqs[fc->nreq++];
	memset(req, 0, sizeof(*req));
	req->t = fz.mono;
	req->stamp = ++fz.stamp;
	trace("c%d executes request %zu: %s", c, fc->nreq,
	    preq != NULL ? proto_command_name(preq->command) : "(bad line)");
	if (preq == NULL) {
		req->kind = FUZZ_BAD;
		req->bad = err->code;
		return;
	}
	req->kind = (int)preq->command;
	if (preq->name_len > 0)
		memcpy(req->name, preq->name, preq->name_len);
	req->name_len = preq->name_len;
	req->handle = preq->handle;
	req->lease = preq->has_lease ? preq->lease_ms : -1;
	req->has_wait = preq->has_wait;
	req->wait = preq->wait_ms;
	req->onclose = preq->has_onclose &&
	    preq->onclose == PROTO_ONCLOSE_RELEASE;
	req->has_fence = preq->has_fence;
	req->fence = preq->fence;
	req->rid_len = preq->rid_len;
	req->shared = preq->has_mode && preq->mode == PROTO_MODE_SHARED;
	req->limit = (uint16_t)(preq->has_limit && preq->command !=
	    PROTO_CMD_LIST ? preq->limit : 1);
	if (preq->rid_len > 0) {
		memcpy(req->rid, preq->rid, preq->rid_len);
		rid_executed(c, req);
	}
	if (fz.auth)
		judge(fc, preq, req);
	switch (preq->command) {
	case PROTO_CMD_RELEASE:
	case PROTO_CMD_RENEW:
		/* Either may end (or shorten) the lease it names, whatever
		 * it is answered later. */
		handle_event(preq->name, preq->name_len, preq->handle,
		    fz.mono, false);
		break;
	case PROTO_CMD_FORCE: {
		/* It may end the grant with that fence, whatever secret. */
		struct proto_handle h = { preq->fence, 0 };
		handle_event(preq->name, preq->name_len, h, fz.mono, true);
		break;
	}
	case PROTO_CMD_ACQUIRE:
	case PROTO_CMD_TRY: {
		struct fuzz_running r;
		running_grants(preq->name, preq->name_len, &r);
		/* A name keeps its limit until it is idle; a rid repeat must
		 * ask its grant's (or its waiting request's) mode.  With no
		 * told grant running, the name may be busy all the same:
		 * BADARG may come. */
		req->misfit_certain = r.count > 0 &&
		    r.newest->limit != req->limit;
		req->misfit_possible = r.count == 0 || req->misfit_certain ||
		    req->rid_len > 0;
		req->rid_live_fence = rid_live_fence(req);
		trace("c%d: %.*s limit=%u%s: %u told holders running, "
		    "misfit %d/%d", c, (int)req->name_len, req->name,
		    (unsigned)req->limit, req->shared ? " shared" : "",
		    r.count, req->misfit_certain, req->misfit_possible);
		break;
	}
	case PROTO_CMD_STATUS: {
		struct fuzz_running r;
		running_grants(preq->name, preq->name_len, &r);
		if (r.count > 0) {
			req->expect_held = true;
			req->expect_count = r.count;
			req->expect_shared = r.newest->shared;
			req->expect_limit = r.newest->limit;
			req->expect_fence = r.newest->fence;
			req->expect_ttl_min = r.newest->bound - fz.mono;
		}
		break;
	}
	case PROTO_CMD_QUIT:
		fc->stopped = true;
		break;
	default:
		break;
	}
}

/*
 * Parses the bytes fed to conn c the way service_conn_feed does, so the
 * target knows every request the service executed and in which order.
 */
static void
mirror_feed(int c, const char *data, size_t n)
{
	struct fuzz_conn *fc = &fz.conns[c];
	size_t pos = 0, used, i;

	for (i = 0; i < n; i++)
		if (data[i] == '\n')
			fc->lf_fed++;
	fc->bytes_fed += n;
	append(&fc->mirror, &fc->m_len, &fc->m_cap, data, n);
	while (pos < fc->m_len && !fc->stopped) {
		struct proto_request req;
		struct proto_error err;
		const char *p = fc->mirror + pos;
		size_t len = fc->m_len - pos;

		if (fc->discarding) {
			if (proto_discard_line(p, len, &used))
				fc->discarding = false;
			pos += used;
			continue;
		}
		switch (proto_parse_request(p, len, fz.config.max_line, &req,
		    &used, &err)) {
		case PROTO_PARTIAL:
			goto out;
		case PROTO_EMPTY:
			break;
		case PROTO_DONE:
			executed(c, &req, NULL);
			break;
		case PROTO_TOOLONG:
			if (used == 0 || p[used - 1] != '\n')
				fc->discarding = true;
			executed(c, NULL, &err);
			break;
		case PROTO_BAD:
			executed(c, NULL, &err);
			break;
		}
		pos += used;
	}
out:
	if (fc->stopped)
		pos = fc->m_len;
	if (pos == 0)
		return;
	memmove(fc->mirror, fc->mirror + pos, fc->m_len - pos);
	fc->m_len -= pos;
}

static void
conn_open(int c)
{
	struct fuzz_conn *fc = &fz.conns[c];

	if (fc->open || !fz.up)
		return;
	fc->open = true;
	fc->gen++;
	fc->stopped = false;
	fc->principal = 0;
	fc->auth_failures = 0;
	fc->input_ended = false;
	fc->discarding = false;
	fc->ob_len = fc->m_len = fc->rx_len = 0;
	fc->nreq = fc->head = 0;
	fc->lf_fed = fc->bytes_fed = fc->replies = 0;
	trace("c%d opens", c);
	service_conn_open(&fz.svc, &fc->sc);
}

/* The connection goes: the client's end, or the server cutting it off. */
static void
conn_close(int c)
{
	struct fuzz_conn *fc = &fz.conns[c];

	if (!fc->open)
		return;
	trace("c%d closes", c);
	service_conn_close(&fz.svc, &fc->sc);
	conn_closed_event(c);
	fc->open = false;
}

/*
 * The client shut its sending side (printf ... | nc -N): as server.c does,
 * the service reads no more; every decided reply is still written, and a
 * waiting ACQUIRE leaves its queue, answered TIMEOUT.
 */
static void
conn_half_close(int c)
{
	struct fuzz_conn *fc = &fz.conns[c];

	if (!fc->open)
		return;
	trace("c%d half-closes", c);
	fc->input_ended = true;
	fc->stopped = true;
	service_conn_end_input(&fz.svc, &fc->sc);
}

/* Feeds up to n bytes (0: all) of the outbox, as one read. */
static void
conn_feed(int c, size_t n)
{
	struct fuzz_conn *fc = &fz.conns[c];
	char *chunk;

	if (!fc->open || fc->ob_len == 0)
		return;
	if (n == 0 || n > fc->ob_len)
		n = fc->ob_len;
	/* Its own allocation, exactly n bytes: ASan sees any overread. */
	chunk = malloc(n);
	FUZZ_CHECK(chunk != NULL);
	memcpy(chunk, fc->outbox, n);
	memmove(fc->outbox, fc->outbox + n, fc->ob_len - n);
	fc->ob_len -= n;
	if (fc->sc.quit || fc->sc.overflow) {
		/* The server stopped reading. */
		free(chunk);
		return;
	}
	service_conn_feed(&fz.svc, &fc->sc, chunk, n);
	mirror_feed(c, chunk, n);
	free(chunk);
	if (fc->sc.overflow) {
		/* Cut off mid-read: what it executed is what counts. */
		FUZZ_CHECK(fc->nreq >= fc->sc.next_seq);
		fc->nreq = (size_t)fc->sc.next_seq;
		fc->stopped = true;
	} else {
		FUZZ_CHECK(fc->nreq == fc->sc.next_seq);
	}
}

/* The client reads n bytes (0: all) of what the server wrote. */
static void
conn_read(int c, size_t n)
{
	struct fuzz_conn *fc = &fz.conns[c];
	struct service_buf *out = &fc->sc.out;
	size_t pos = 0;
	char *lf;

	if (!fc->open)
		return;
	if (fc->sc.overflow) {
		/* server.c closes such a connection without writing. */
		conn_close(c);
		return;
	}
	if (n == 0 || n > out->len)
		n = out->len;
	if (n > 0) {
		append(&fc->rx, &fc->rx_len, &fc->rx_cap, out->data, n);
		service_conn_written(&fc->sc, n);
	}
	while (pos < fc->rx_len &&
	    (lf = memchr(fc->rx + pos, '\n', fc->rx_len - pos)) != NULL) {
		size_t len = (size_t)(lf - (fc->rx + pos)) + 1;
		check_reply(c, fc->rx + pos, len);
		pos += len;
	}
	if (pos > 0) {
		memmove(fc->rx, fc->rx + pos, fc->rx_len - pos);
		fc->rx_len -= pos;
	}
	FUZZ_CHECK(fc->rx_len < FUZZ_RX_MAX);
	if (fc->sc.quit && fc->sc.slots_head == NULL && out->len == 0) {
		FUZZ_CHECK(fc->rx_len == 0);
		conn_close(c);
	}
}

/* Every connection the service has output for takes all of it. */
static void
deliver_all(void)
{
	int c;

	while (service_next_ready(&fz.svc) != NULL)
		;
	for (c = 0; c < FUZZ_CONNS; c++)
		conn_read(c, 0);
}

/* ---- requests the input asks for -------------------------------------- */

static const char *const fuzz_names[FUZZ_NAMES] = {
	"a", "b", "lock/c", "\xc3\xa9t\xc3\xa9",
	/* 255 bytes: the longest name */
	"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
	"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
};

static const int64_t fuzz_leases[8] = {
	-1, 0, 1, 7, 60, 400, 5000, PROTO_DURATION_MAX_MS
};
static const int64_t fuzz_waits[8] = { -1, 0, 1, 15, 90, 700, 4000, -1 };

/* A handle: a told one, a forged variant of it, or made up. */
static struct proto_handle
pick_handle(uint8_t b)
{
	struct proto_handle h = { 1 + (uint64_t)(b % 7), 0x1234 };

	if (fz.ngrants > 0) {
		const struct fuzz_grant *g =
		    &fz.grants[fz.ngrants - 1 - (b >> 2) % fz.ngrants];
		h.fence = g->fence;
		h.secret = g->secret;
		if ((b & 3) == 1)
			h.secret ^= 1;          /* right fence, wrong secret */
		else if ((b & 3) == 2 && h.fence < CORE_FENCE_MAX)
			h.fence++;
	}
	return h;
}

/* ACQUIRE's and TRY's limit= (mostly 1 to 4, sometimes out of range),
 * by the low three bits of their handle byte (which they do not use). */
static const long fuzz_limits[8] = { -1, 1, 2, 3, 4, 2, 0, 65536 };
static const char *const fuzz_modes[4] = {
	NULL, "exclusive", "shared", "bogus"
};

/*
 * The kind of lock an ACQUIRE or TRY asks for (issue 17), from its handle
 * byte b, which 0 leaves a plain request: limit= (bits 0-2), mode=
 * (bits 3-4) and rid= (bits 5-6: none, two shared by every connection, or
 * this connection's own).  Writes the options into out and returns their
 * length.
 */
static int
kind_options(char *out, size_t cap, const char *sep, uint8_t b, int c)
{
	long limit = fuzz_limits[b & 7];
	const char *mode = fuzz_modes[(b >> 3) & 3];
	unsigned rid = (b >> 5) & 3;
	int n = 0;

	if (limit >= 0)
		n += snprintf(out + n, cap - (size_t)n, "%slimit=%ld", sep,
		    limit);
	if (mode != NULL)
		n += snprintf(out + n, cap - (size_t)n, "%smode=%s", sep,
		    mode);
	if (rid == 1 || rid == 2)
		n += snprintf(out + n, cap - (size_t)n, "%srid=r%u", sep, rid);
	else if (rid == 3)
		n += snprintf(out + n, cap - (size_t)n, "%srid=c%d", sep, c);
	return n;
}

/* Queues one well-formed request line, spelt in one of a few ways. */
static void
queue_request(int c)
{
	struct fuzz_conn *fc = &fz.conns[c];
	uint8_t cmd = byte(), nb = byte(), opt = byte(), hb = byte();
	uint8_t style = byte();
	struct proto_request req;
	char line[1024], handle[64];
	const char *sep = (style & 1) ? "\t" : " ";
	const char *name;
	int n;
	size_t i, hl;

	memset(&req, 0, sizeof(req));
	req.command = (enum proto_command)(cmd % PROTO_CMD_COUNT);
	name = fuzz_names[nb % FUZZ_NAMES];
	n = snprintf(line, sizeof(line), "%s", proto_command_name(req.command));
	if (style & 2)
		for (i = 0; line[i] != '\0'; i++)
			if (line[i] >= 'A' && line[i] <= 'Z')
				line[i] = (char)(line[i] - 'A' + 'a');
	switch (req.command) {
	case PROTO_CMD_ACQUIRE:
	case PROTO_CMD_TRY:
	case PROTO_CMD_STATUS:
	case PROTO_CMD_AUTH:
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s", sep,
		    name);
		break;
	case PROTO_CMD_RENEW:
	case PROTO_CMD_RELEASE:
		hl = proto_format_handle(handle, sizeof(handle) - 1,
		    pick_handle(hb));
		handle[hl] = '\0';
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s%s%s",
		    sep, name, sep, handle);
		break;
	case PROTO_CMD_FORCE:
	case PROTO_CMD_CHECK:
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s%s%llu",
		    sep, name, sep, (unsigned long long)pick_handle(hb).fence);
		break;
	case PROTO_CMD_WATCH: {
		/* Always with a wait, so the drain ends. */
		int64_t wait = fuzz_waits[(opt >> 3) & 7];
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    "%s%s%swait=%lld", sep, name, sep,
		    (long long)(wait < 0 ? 500 : wait));
		if (opt & 1)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%sfence=%llu", sep, (unsigned long long)
			    (hb & 0x80 ? 0 : pick_handle(hb).fence));
		break;
	}
	case PROTO_CMD_LIST:
		if (opt & 1)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%sprefix=%.*s", sep, 1 + (hb & 3), name);
		if (opt & 2)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%safter=%s", sep, fuzz_names[hb % FUZZ_NAMES]);
		if (opt & 4)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%slimit=%u", sep, 1 + (unsigned)(opt >> 4));
		break;
	default:
		break;
	}
	if (req.command == PROTO_CMD_ACQUIRE || req.command == PROTO_CMD_TRY ||
	    req.command == PROTO_CMD_RENEW) {
		int64_t lease = fuzz_leases[opt & 7];
		if (lease >= 0)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%slease=%lld%s", sep, (long long)lease,
			    (style & 4) ? "ms" : "");
	}
	if (req.command == PROTO_CMD_ACQUIRE) {
		int64_t wait = fuzz_waits[(opt >> 3) & 7];
		if (wait >= 0)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
			    "%sWAIT=%lld", sep, (long long)wait);
	}
	if ((req.command == PROTO_CMD_ACQUIRE ||
	    req.command == PROTO_CMD_TRY) && (opt & 0x40))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    "%sonclose=%s", sep, (opt & 0x80) ? "release" : "keep");
	if (req.command == PROTO_CMD_ACQUIRE || req.command == PROTO_CMD_TRY)
		n += kind_options(line + n, sizeof(line) - (size_t)n, sep, hb,
		    c);
	if ((req.command == PROTO_CMD_ACQUIRE ||
	    req.command == PROTO_CMD_TRY) && (style & 0x10))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    "%sdelay=%u%sowner=c%d", sep, (unsigned)(style >> 5) * 40,
		    sep, c);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "%s",
	    (style & 8) ? "\r\n" : "\n");
	append(&fc->outbox, &fc->ob_len, &fc->ob_cap, line, (size_t)n);
}

static void
queue_raw(int c)
{
	struct fuzz_conn *fc = &fz.conns[c];
	size_t n = byte(), avail = fz.len - fz.pos;

	if (n > avail)
		n = avail;
	append(&fc->outbox, &fc->ob_len, &fc->ob_cap, fz.in + fz.pos, n);
	fz.pos += n;
}

/* ---- the service's life ----------------------------------------------- */

/* service_commit (force) or service_end_pass. */
static void
commit_now(bool force)
{
	uint64_t commits = fz.mem.commits, failed = fz.mem.failed_commits;
	int rc = force ? service_commit(&fz.svc) : service_end_pass(&fz.svc);

	if (fz.mem.commits != commits || fz.mem.failed_commits != failed ||
	    rc != 0)
		trace("commit %s (store: %zu records, hwm %llu)",
		    rc == 0 ? "ok" : "FAILED", fz.mem.count,
		    (unsigned long long)fz.mem.hwm);
}

static void
service_up(void)
{
	struct service_recovery rec;
	int c;

	for (c = 0; c < FUZZ_CONNS; c++)
		FUZZ_CHECK(!fz.conns[c].open);
	if (service_open(&fz.svc, &fz.config, &fz.mem.base, &fz.clock,
	    &rec) != 0) {
		/* A failed recovery commit: lockd would exit and be
		 * restarted; the store must still be good. */
		fz.mem.fail_commits = 0;
		fz.fail_allocs = 0;
		fz.hook_fails = false;
		FUZZ_CHECK(service_open(&fz.svc, &fz.config, &fz.mem.base,
		    &fz.clock, &rec) == 0);
	}
	fz.svc.hooks.before_commit = fuzz_before_commit;
	if (fz.variant >= FUZZ_BROKEN_RULES)
		fz.svc.table.rules =
		    fuzz_broken[fz.variant - FUZZ_BROKEN_RULES].rules;
	fz.svc.auth = fz.auth ? &fuzz_rules : NULL;
	fz.up = true;
	fz.stopping = false;
	/* Recovery commits what it changed. */
	FUZZ_CHECK(!service_commit_pending(&fz.svc));
	FUZZ_CHECK(fz.svc.table.hwm == fz.mem.hwm);
}

/*
 * kill -9 (crash) or SIGTERM (clean) and start again on the same store;
 * a reboot also restarts the boot clock under a new boot id, so recovery
 * goes by the stored wall-clock expiries.
 */
static void
restart(bool clean, bool reboot)
{
	int c;

	trace("restart (%s)", clean ? "clean" : "crash");
	if (clean) {
		fz.stopping = true;
		service_shutdown(&fz.svc);
		commit_now(true);
		deliver_all();
	}
	for (c = 0; c < FUZZ_CONNS; c++) {
		if (fz.conns[c].open)
			conn_closed_event(c);
		fz.conns[c].open = false;
	}
	/* Every onclose lease is released by the recovery. */
	for (size_t i = 0; i < fz.ngrants; i++)
		if (fz.grants[i].onclose)
			fz.grants[i].bound = min_time(fz.grants[i].bound,
			    fz.mono);
	service_close(&fz.svc);
	fz.up = false;
	if (reboot) {
		trace("reboot");
		fz.boot_shift = fz.mono - FUZZ_MONO_START;
		fz.clock.boot_id[0]++;
		/* Across a reboot only the wall clock tells the expiries, and a
		 * wall-clock step may shorten them: no told lease is certain. */
		for (size_t i = 0; i < fz.ngrants; i++)
			fz.grants[i].bound = min_time(fz.grants[i].bound,
			    fz.mono);
	}
	service_up();
}

/* ---- invariants ------------------------------------------------------- */

static size_t
list_length(const struct core_link *head)
{
	const struct core_link *l;
	size_t n = 0;

	for (l = head->next; l != head; l = l->next)
		n++;
	return n;
}

/* One holder's lease: its deadline in the heap, within the maximum. */
static void
check_holder(const struct core_lock *lock, const struct core_timer *timer,
    bool after_tick)
{
	FUZZ_CHECK(lock->fence != 0 && lock->fence <= fz.svc.table.hwm);
	FUZZ_CHECK(timer->slot != CORE__HEAP_OUT &&
	    timer->when == lock->expiry);
	FUZZ_CHECK(!after_tick || lock->expiry > svc_now());
	/* No lease outlives the maximum from now. */
	FUZZ_CHECK(lock->expiry - svc_now() <= fz.config.core.max_lease_ms);
	FUZZ_CHECK(lock->lease_ms > 0 &&
	    lock->lease_ms <= fz.config.core.max_lease_ms);
}

/*
 * The holders of e beyond its own (issue 17), as the spec allows them:
 * the entry's own holder is alone (an exclusive holder of a limit-1 name);
 * a limit-1 name's others are all shared, a semaphore's none, and never
 * more than its limit; a name that could admit its queue's head has none
 * waiting (no lock-delay, and fewer than limit hold, or shared holders
 * and a shared head: the shared run is granted together).  Returns how
 * many.
 */
static uint32_t
check_holders(const struct core_entry *e, bool after_tick)
{
	const struct core_multi *m = e->multi;
	const struct core_holder *h, *o;
	const struct core_waiter *head;
	uint32_t n = 0;

	for (h = m->holders; h != NULL; h = h->next) {
		n++;
		FUZZ_CHECK(h->entry == e);
		FUZZ_CHECK(h->shared == (m->limit == 1));
		check_holder(&h->lock, &h->timer, after_tick);
		for (o = h->next; o != NULL; o = o->next)
			FUZZ_CHECK(o->lock.fence != h->lock.fence);
	}
	FUZZ_CHECK(n == m->count);
	FUZZ_CHECK(m->limit >= 1);
	FUZZ_CHECK(n == 0 || e->lock.fence == 0);
	FUZZ_CHECK(n <= m->limit || m->limit == 1);
	if (n == 0 || core_entry_delay_until(e) != 0 || core_entry_queue_len(e) == 0)
		return n;
	head = container_of(core_entry_queue_first(e), struct core_waiter,
	    queue_link);
	FUZZ_CHECK(m->limit == 1 ? !head->shared : n >= m->limit);
	return n;
}

/* The table's books, after any complete step. */
static void
check_table(bool after_tick)
{
	const struct core_table *t = &fz.svc.table;
	uint64_t locks = 0, held = 0, waiters = 0, timers = 0, sessions = 0;
	uint64_t watches = 0;
	size_t b, i;
	int c;

	for (b = 0; b < t->bucket_count; b++) {
		const struct core_entry *e;
		for (e = t->buckets[b]; e != NULL; e = e->hash_next) {
			const struct core_link *l;
			locks++;
			FUZZ_CHECK(e->name_len >= 1);
			FUZZ_CHECK(e->lock.fence <= t->hwm);
			FUZZ_CHECK(core_entry_queue(e) == NULL ?
			    core_entry_queue_len(e) == 0 :
			    list_length(core_entry_queue(e)) ==
			    core_entry_queue_len(e));
			waiters += core_entry_queue_len(e);
			if (e->lock.fence != 0) {
				held++;
				timers++;
				check_holder(&e->lock, &e->timer, after_tick);
			}
			if (e->multi != NULL) {
				uint32_t n = check_holders(e, after_tick);
				held += n;
				timers += n;
			}
			if (e->lock.fence != 0) {
				/* Held: checked by check_holder. */
			} else if (core_entry_delay_until(e) != 0) {
				/* In lock-delay (free, or held by others):
				 * waiters wait for its end, which the
				 * entry's timer waits for. */
				timers++;
				FUZZ_CHECK(e->timer.slot != CORE__HEAP_OUT &&
				    e->timer.when == core_entry_delay_until(e));
				FUZZ_CHECK(!after_tick ||
				    core_entry_delay_until(e) > svc_now());
				FUZZ_CHECK(core_entry_owner(e) == NULL);
			} else if (e->multi != NULL && e->multi->count > 0) {
				/* Held by others: see check_holders. */
				FUZZ_CHECK(e->timer.slot == CORE__HEAP_OUT);
				FUZZ_CHECK(core_entry_owner(e) == NULL);
			} else {
				/* NoStarvation: nobody waits for a free lock. */
				FUZZ_CHECK(core_entry_queue_len(e) == 0);
				FUZZ_CHECK(e->timer.slot == CORE__HEAP_OUT);
				FUZZ_CHECK(core_entry_owner(e) == NULL);
			}
			/* WATCHes live in the entry's core_multi (issue 17),
			 * with the holders beyond the entry's own. */
			if (e->multi != NULL) {
				const struct core_link *ws =
				    &e->multi->watchers;

				watches += e->multi->watch_len;
				FUZZ_CHECK(list_length(ws) ==
				    e->multi->watch_len);
				for (l = ws->next; l != ws; l = l->next) {
					const struct core_waiter *w =
					    container_of(l,
					    struct core_waiter, queue_link);
					FUZZ_CHECK(w->entry == e && w->watch);
					if (w->timer.slot != CORE__HEAP_OUT)
						timers++;
				}
			}
			for (l = core_entry_queue_first(e); l != core_entry_queue(e); l = l->next) {
				const struct core_waiter *w = container_of(l,
				    struct core_waiter, queue_link);
				FUZZ_CHECK(w->entry == e);
				if (w->timer.slot != CORE__HEAP_OUT) {
					timers++;
					FUZZ_CHECK(!after_tick ||
					    w->timer.when > svc_now());
				}
			}
		}
	}
	FUZZ_CHECK(locks == t->stats.locks);
	FUZZ_CHECK(held == t->stats.held);
	/* Per-principal counts: every grant counted is a lease held now. */
	for (b = 0, i = 0; b < t->bucket_count; b++) {
		const struct core_entry *e;
		for (e = t->buckets[b]; e != NULL; e = e->hash_next) {
			const struct core_holder *h;
			if (quota_holder(&fz.svc.quota, e->lock.fence) != NULL)
				i++;
			for (h = e->multi != NULL ? e->multi->holders : NULL;
			    h != NULL; h = h->next)
				if (quota_holder(&fz.svc.quota,
				    h->lock.fence) != NULL)
					i++;
		}
	}
	FUZZ_CHECK(i == fz.svc.quota.grants);
	FUZZ_CHECK(waiters == t->stats.waiters);
	FUZZ_CHECK(timers == t->heap_len);
	for (i = 0; i < t->heap_len; i++)
		FUZZ_CHECK(t->heap[i]->slot == i &&
		    (i == 0 || t->heap[(i - 1) / 2]->when <= t->heap[i]->when));
	for (c = 0; c < FUZZ_CONNS; c++) {
		const struct fuzz_conn *fc = &fz.conns[c];
		if (!fc->open)
			continue;
		FUZZ_CHECK(list_length(&fc->sc.session.waiters) ==
		    fc->sc.session.waiter_count);
		sessions += fc->sc.session.waiter_count;
	}
	FUZZ_CHECK(watches == t->stats.watches);
	/* A pending WATCH counts against its session like a waiter. */
	FUZZ_CHECK(sessions == waiters + watches);
	FUZZ_CHECK(fz.svc.stats.connections == list_length(&fz.svc.conns));
	FUZZ_CHECK(fz.svc.commit.committed_hwm == fz.mem.hwm);
	FUZZ_CHECK(t->hwm >= fz.mem.hwm);
}

/* ---- the run ---------------------------------------------------------- */

static const int64_t fuzz_default_leases[4] = { 30000, 50, 300, 2000 };
static const int64_t fuzz_max_extra[4] = { 270000, 0, 100, 3000 };
static const size_t fuzz_max_outputs[4] = { 1 << 20, 4096, 1024, 700 };
static const size_t fuzz_max_lines[4] = { 4096, 64, 200, 1000 };

static void
configure(void)
{
	uint8_t b0 = byte(), b1 = byte(), b2 = byte();

	service_config_defaults(&fz.config);
	fz.config.core.default_lease_ms = fuzz_default_leases[b0 & 3];
	fz.config.core.max_lease_ms = fz.config.core.default_lease_ms +
	    fuzz_max_extra[(b0 >> 2) & 3];
	fz.config.max_output = fuzz_max_outputs[(b0 >> 4) & 3];
	fz.config.max_line = fuzz_max_lines[(b0 >> 6) & 3];
	fz.config.core.max_held = (b1 & 3) == 1 ? 2 : 0;
	fz.config.core.max_waiters = ((b1 >> 2) & 3) == 1 ? 3 : 0;
	fz.config.core.max_waiters_per_session = ((b1 >> 4) & 3) == 1 ? 2 : 0;
	fz.limits = fz.config.core.max_held != 0 ||
	    fz.config.core.max_waiters != 0 ||
	    fz.config.core.max_waiters_per_session != 0;
	fz.auth = ((b1 >> 6) & 3) == 1;
	if (fz.auth && fuzz_rules.count == 0)   /* parsed once, kept */
		FUZZ_CHECK(auth_rules_parse(&fuzz_rules, fuzz_auth_text,
		    strlen(fuzz_auth_text), NULL, 0) == 0);
	fz.config.core.hash_key[0] = 0x0706050403020100ULL;
	fz.config.core.hash_key[1] = 0x0f0e0d0c0b0a0908ULL ^ b1;
	fz.config.core.secret = fuzz_secret;
	fz.config.core.secret_ctx = NULL;
	fz.config.core.realloc = fuzz_realloc;
	fz.config.core.free = free;
	/* Sometimes start a few fences short of 2^63-1. */
	fz.near_overflow = (b2 & 7) == 7;
	if (fz.near_overflow)
		fz.mem.hwm = CORE_FENCE_MAX - (b2 >> 3) % 8;
	rng_seed(&fz.secrets, b2);
	if (fz.variant == FUZZ_LOSSY_STORE) {
		fz.mem_ops = fz.mem.base.ops;
		fz.lossy_ops = *fz.mem_ops;
		fz.lossy_ops.commit = lossy_commit;
		fz.mem.base.ops = &fz.lossy_ops;
	}

	memset(&fz.clock, 0, sizeof(fz.clock));
	fz.clock.mono = fuzz_mono;
	fz.clock.wall = fuzz_wall;
	fz.clock.ctx = NULL;
	memcpy(fz.clock.boot_id, "fuzz-boot-id-016", 16);
	fz.mono = FUZZ_MONO_START;
}

/* The end of a loop pass as server.c runs it: end_pass, then writes. */
static void
end_of_pass(bool force_commit)
{
	commit_now(force_commit);
	deliver_all();
}

static void
step(void)
{
	uint8_t op = byte();
	int c = (op >> 4) % FUZZ_CONNS;
	bool ticked = false;

	trace("op %u conn %d", op & 15, c);
	switch (op & 15) {
	case 0:
		conn_open(c);
		break;
	case 1:
		if (op & 0x40)
			conn_half_close(c);
		else
			conn_close(c);
		break;
	case 2:
		queue_raw(c);
		break;
	case 3:
		queue_request(c);
		break;
	case 4:
		/* server.c's commit_if_due, without the pass's writes. */
		if (service_commit_due(&fz.svc))
			commit_now(true);
		break;
	case 5:
		conn_feed(c, byte());
		break;
	case 6:
		fz.mono += byte();
		break;
	case 7:
		fz.mono += (core_time)byte() * 64;
		break;
	case 8:
		service_tick(&fz.svc);
		ticked = true;
		break;
	case 9:
		end_of_pass(false);
		break;
	case 10:
		end_of_pass(true);
		break;
	case 11: {
		uint8_t b = byte();
		if (b & 1)
			fz.mem.fail_commits = 1 + (b >> 1) % 3;
		else if (b & 2)
			fz.hook_fails = !fz.hook_fails;
		else
			fz.fail_allocs = (b >> 2) % 4;
		break;
	}
	case 12:
		conn_read(c, byte());
		break;
	case 13:
		/* A wall-clock step: must move no lease. */
		fz.wall_offset += ((int64_t)byte() - 128) * 60000;
		break;
	case 14:
		restart((op & 0x40) != 0, (op & 0x80) != 0);
		break;
	case 15:
		/* A whole pass: the timer fires, the pass ends. */
		service_tick(&fz.svc);
		end_of_pass(false);
		break;
	}
	check_table(ticked);
}

/* Faults off, everything sent, the clock run past every deadline. */
static void
drain(void)
{
	int c, round;

	fz.mem.fail_commits = 0;
	fz.hook_fails = false;
	fz.fail_allocs = 0;
	for (c = 0; c < FUZZ_CONNS; c++)
		conn_feed(c, 0);
	for (round = 0; round < FUZZ_DRAIN_ROUNDS; round++) {
		core_time next;

		service_tick(&fz.svc);
		end_of_pass(false);
		check_table(true);
		next = service_next_deadline(&fz.svc);
		if (next == CORE_NEVER && !service_commit_pending(&fz.svc))
			break;
		if (next != CORE_NEVER && next > svc_now())
			fz.mono += next - svc_now();
		else if (next == CORE_NEVER)
			fz.mono += SERVICE_LAZY_COMMIT_MS;
	}
	FUZZ_CHECK(round < FUZZ_DRAIN_ROUNDS);
	trace("drained after %d rounds: %llu locks, %zu records", round,
	    (unsigned long long)fz.svc.table.stats.locks, fz.mem.count);
	for (size_t i = 0; i < fz.mem.count; i++)
		trace("record %.*s", (int)fz.mem.entries[i].name_len,
		    fz.mem.entries[i].name);
	/* Every request on a connection still open was answered. */
	for (c = 0; c < FUZZ_CONNS; c++) {
		const struct fuzz_conn *fc = &fz.conns[c];
		if (!fc->open)
			continue;
		FUZZ_CHECK(fc->head == fc->nreq);
		FUZZ_CHECK(fc->sc.slots_head == NULL && fc->sc.out.len == 0);
	}
	/* Every lease ran out and that is on disk: nothing is left. */
	FUZZ_CHECK(fz.svc.table.stats.locks == 0);
	FUZZ_CHECK(fz.svc.table.stats.held == 0);
	FUZZ_CHECK(fz.svc.table.stats.waiters == 0);
	FUZZ_CHECK(fz.mem.hwm == fz.svc.table.hwm);
	/* A failed commit puts the batch's locks back as the store has
	 * them; a restore that runs out of memory is tried again (at most
	 * 3 injected failures in a row), so nothing stays behind. */
	FUZZ_CHECK(fz.mem.count == 0);
}

static void
teardown(void)
{
	int c;

	for (c = 0; c < FUZZ_CONNS; c++) {
		struct fuzz_conn *fc = &fz.conns[c];
		if (fc->open && fz.up)
			conn_close(c);
		free(fc->outbox);
		free(fc->mirror);
		free(fc->reqs);
		free(fc->rx);
	}
	if (fz.up)
		service_close(&fz.svc);
	store_mem_free(&fz.mem);
	free(fz.grants);
	free(fz.events);
	free(fz.rid_reqs);
	memset(&fz, 0, sizeof(fz));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null_log;
	static int variant = -1;
	FILE *saved = stderr;
	int steps = 0;

	if (null_log == NULL)
		null_log = fopen("/dev/null", "w");
	trace_out = getenv("FUZZ_SERVICE_TRACE") != NULL ? saved : NULL;
	if (null_log != NULL)
		stderr = null_log;   /* the daemon logs every failed commit */
	memset(&fz, 0, sizeof(fz));
	if (variant < 0)
		variant = variant_from_env();
	fz.variant = variant;
	fz.in = data;
	fz.len = size;
	store_mem_init(&fz.mem);
	configure();
	service_up();
	while (more() && steps++ < 4096)
		step();
	drain();
	teardown();
	stderr = saved;
	return 0;
}
