/*
 * table.c - the lock table: name -> entry, each entry with its holder, its
 * strict FIFO queue and its deadline in the shared heap.  Still pure: no
 * I/O, no clock, no randomness of its own.  Every safety decision is
 * delegated to the rules (table->rules); this file only keeps the books -
 * queues, timers, sessions, counters, the list of changed entries - and
 * reports answers through the sink.
 *
 * An entry exists while it is held, has waiters, or was touched since the
 * last core_table_changes(); idle entries are dropped there, so a name costs
 * nothing when nobody uses it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "core/core.h"
#include "core/heap.h"
#include "core/list.h"
#include "core/order.h"

enum {
	TIMER_LEASE = 0,  /* sorts first at equal instants */
	TIMER_WAIT = 1,
	TIMER_HOLDER = 2  /* a core_holder's lease */
};

enum {
	ENTRY_LISTED = 1,  /* on table->changed */
	ENTRY_DIRTY = 2,   /* its durable record changed */
	ENTRY_RESTORED = 4,/* set from the store since the last drain */
	ENTRY_KEY0 = 8,    /* the key <name> holds a record (kept across
	                    * drains) */
	ENTRY_HANDON = 16  /* a waiter left: hand on once the session that
	                    * leaves has left every queue */
};

void
core_session_init(struct core_session *session, uint64_t id)
{
	session->id = id;
	link_init(&session->waiters);
	link_init(&session->onclose);
	link_init(&session->onclose_more);
	session->waiter_count = 0;
	session->group_waiters = NULL;
	session->group_max_waiters = 0;
}

/* ---- configuration ---------------------------------------------------- */

static uint64_t
secret_zero(void *ctx)
{
	(void)ctx;
	return 0;
}

void
core_config_defaults(struct core_config *config)
{
	memset(config, 0, sizeof(*config));
	config->default_lease_ms = (int64_t)30 * 1000;
	config->max_lease_ms = (int64_t)5 * 60 * 1000;
	config->max_lock_delay_ms = (int64_t)60 * 1000;
	config->secret = secret_zero;
	config->realloc = realloc;
	config->free = free;
}

enum core_status
core_lease_effective(const struct core_config *config, int64_t requested_ms,
    int64_t *effective_ms)
{
	if (requested_ms < 0)
		return CORE_ERR_BADARG;
	if (requested_ms == 0)
		requested_ms = config->default_lease_ms;
	if (requested_ms > config->max_lease_ms)
		requested_ms = config->max_lease_ms;
	*effective_ms = requested_ms;
	return CORE_OK;
}

/* ---- the name hash: SipHash-1-3, keyed so clients cannot aim collisions */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
} while (0)

uint64_t
core_name_hash(const uint64_t key[2], const char *name, size_t len)
{
	const unsigned char *in = (const unsigned char *)name;
	uint64_t v0 = 0x736f6d6570736575ULL ^ key[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ key[0];
	uint64_t v3 = 0x7465646279746573ULL ^ key[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i, j;

	for (i = 0; i + 8 <= len; i += 8) {
		m = bytes_get_le64(in + i);
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (j = 0; i + j < len; j++)
		b |= (uint64_t)in[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- table life ------------------------------------------------------- */

#define INITIAL_BUCKETS 64

enum core_status
core_table_init(struct core_table *table, const struct core_config *config,
    const struct core_rules *rules, struct core_sink sink)
{
	memset(table, 0, sizeof(*table));
	table->config = *config;
	table->rules = rules;
	table->sink = sink;
	table->buckets = config->realloc(NULL,
	    INITIAL_BUCKETS * sizeof(*table->buckets));
	if (table->buckets == NULL)
		return CORE_ERR_NOMEM;
	memset(table->buckets, 0, INITIAL_BUCKETS * sizeof(*table->buckets));
	table->bucket_count = INITIAL_BUCKETS;
	/* Only a hint: without the room the table grows as it fills. */
	if (config->expected_locks > 0)
		(void)core_table_reserve(table, config->expected_locks);
	return CORE_OK;
}

/* Tags for a label and a rid (either may be empty), a lock-delay (0:
 * none) and, when `bound`, room for an entry's own holder's onclose
 * binding; or NULL: none of them asked for, or (*nomem set) no memory. */
static struct core_tags *
tags_make(struct core_table *table, const char *label, size_t label_len,
    const char *rid, size_t rid_len, int64_t delay_ms, bool bound,
    bool *nomem)
{
	bool delay = delay_ms > 0;
	size_t size = offsetof(struct core_tags, bytes) + label_len + rid_len +
	    (delay ? sizeof(delay_ms) : 0);
	struct core_tags *t;

	*nomem = false;
	if (label_len == 0 && rid_len == 0 && !delay && !bound)
		return NULL;
	if (bound)
		size = core_tags_bond_offset(label_len, rid_len, delay) +
		    sizeof(struct core_bond);
	t = table->config.realloc(NULL, size);
	if (t == NULL) {
		*nomem = true;
		return NULL;
	}
	t->label_len = (uint8_t)label_len;
	t->rid_len = (uint8_t)rid_len;
	t->parts = (uint8_t)((delay ? CORE_TAGS_DELAY : 0) |
	    (bound ? CORE_TAGS_BOND : 0));
	if (label_len > 0)
		memcpy(t->bytes, label, label_len);
	if (rid_len > 0)
		memcpy(t->bytes + label_len, rid, rid_len);
	if (delay)
		memcpy(t->bytes + label_len + rid_len, &delay_ms,
		    sizeof(delay_ms));
	if (bound) {
		struct core_bond *b = core_tags_bond(t);

		link_init(&b->onclose_link);
		b->entry = NULL;
	}
	return t;
}

/* tags (NULL: none) again, with room for a bond: the same when they have
 * it, else a copy that has, and tags freed; NULL without memory, tags
 * untouched. */
static struct core_tags *
tags_bondable(struct core_table *table, struct core_tags *tags)
{
	const char *label, *rid;
	size_t label_len = core_tags_label(tags, &label);
	size_t rid_len = core_tags_rid(tags, &rid);
	struct core_tags *t;
	bool nomem;

	if (tags != NULL && (tags->parts & CORE_TAGS_BOND))
		return tags;
	t = tags_make(table, label, label_len, rid, rid_len,
	    core_tags_delay(tags), true, &nomem);
	if (t != NULL && tags != NULL)
		table->config.free(tags);
	return t;
}

static void
tags_free(struct core_table *table, struct core_tags *t)
{
	if (t != NULL)
		table->config.free(t);
}

static void
waiter_free(struct core_table *table, struct core_waiter *w)
{
	tags_free(table, w->tags);
	table->config.free(w);
}

/* Does a WATCH wait on e? */
static bool
entry_watched(const struct core_entry *e)
{
	return e->multi != NULL && !link_empty(&e->multi->watchers);
}

static void
holder_list_free(struct core_table *table, struct core_holder *h)
{
	struct core_holder *next;

	for (; h != NULL; h = next) {
		next = h->next;
		if (h->owner != NULL)
			link_remove(&h->onclose_link);
		tags_free(table, h->lock.tags);
		table->config.free(h);
	}
}

/* Frees e's holders beyond its own and what it keeps for them, with no
 * book-keeping: for the end of the table and of an idle entry. */
static void
multi_free(struct core_table *table, struct core_entry *e)
{
	if (e->multi == NULL)
		return;
	holder_list_free(table, e->multi->holders);
	holder_list_free(table, e->multi->ended);
	table->config.free(e->multi);
	e->multi = NULL;
}

void
core_table_destroy(struct core_table *table)
{
	size_t i;

	for (i = 0; i < table->bucket_count; i++) {
		struct core_entry *e = table->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->hash_next;
			while (!link_empty(&e->queue) ||
			    entry_watched(e)) {
				struct core_waiter *w = container_of(
				    !link_empty(&e->queue) ? e->queue.next :
				    e->multi->watchers.next,
				    struct core_waiter, queue_link);
				link_remove(&w->queue_link);
				link_remove(&w->session_link);
				w->session->waiter_count--;
				if (!w->watch &&
				    w->session->group_waiters != NULL)
					(*w->session->group_waiters)--;
				waiter_free(table, w);
			}
			if (e->owner != NULL)
				link_remove(&core_tags_bond(
				    e->lock.tags)->onclose_link);
			tags_free(table, e->lock.tags);
			multi_free(table, e);
			table->config.free(e);
		}
	}
	table->config.free(table->buckets);
	table->config.free(table->heap);
	memset(table, 0, sizeof(*table));
}

/* ---- heap room -------------------------------------------------------- */

/* Every entry and waiter may carry a timer: keep room for all of them. */
static bool
heap_reserve(struct core_table *table, size_t extra)
{
	size_t need = table->stats.locks + table->stats.waiters +
	    table->stats.watches + table->more_holders + extra;
	size_t cap = table->heap_cap ? table->heap_cap : 64;
	struct core_timer **heap;

	if (need <= table->heap_cap)
		return true;
	while (cap < need)
		cap *= 2;
	heap = table->config.realloc(table->heap, cap * sizeof(*heap));
	if (heap == NULL)
		return false;
	table->heap = heap;
	table->heap_cap = cap;
	return true;
}

static void
timer_set(struct core_table *table, struct core_timer *t, core_time when)
{
	t->when = when;
	if (t->slot == CORE__HEAP_OUT)
		core__heap_push(table->heap, &table->heap_len, t);
	else
		core__heap_update(table->heap, table->heap_len, t);
}

static void
timer_clear(struct core_table *table, struct core_timer *t)
{
	core__heap_remove(table->heap, &table->heap_len, t);
}

/* ---- entries ---------------------------------------------------------- */

/*
 * Entries keep the low 32 bits of their name's hash, enough to pick a
 * bucket in any table that fits in memory: dropping an entry or growing
 * the table then does not hash the name again, and a chain is walked on
 * the hash before the name is compared.
 */
static uint32_t
name_hash(const struct core_table *table, const char *name, size_t len)
{
	return (uint32_t)core_name_hash(table->config.hash_key, name, len);
}

static struct core_entry **
bucket_at(const struct core_table *table, uint32_t hash)
{
	return &table->buckets[hash & (table->bucket_count - 1)];
}

static struct core_entry *
chain_find(const struct core_table *table, uint32_t hash, const char *name,
    size_t name_len)
{
	struct core_entry *e;

	for (e = *bucket_at(table, hash); e != NULL; e = e->hash_next)
		if (e->hash == hash && e->name_len == name_len &&
		    memcmp(e->name, name, name_len) == 0)
			return e;
	return NULL;
}

const struct core_entry *
core_table_find(const struct core_table *table, const char *name,
    size_t name_len)
{
	if (name_len == 0 || name_len > CORE_NAME_MAX)
		return NULL;
	return chain_find(table, name_hash(table, name, name_len), name,
	    name_len);
}

static struct core_entry *
entry_find(struct core_table *table, const char *name, size_t len)
{
	return (struct core_entry *)core_table_find(table, name, len);
}

/* Moves every entry to `count` buckets (a power of two); false, with the
 * table as it was, when the allocation fails. */
static bool
table_rehash(struct core_table *table, size_t count)
{
	struct core_entry **buckets;
	size_t i;

	buckets = table->config.realloc(NULL, count * sizeof(*buckets));
	if (buckets == NULL)
		return false;
	memset(buckets, 0, count * sizeof(*buckets));
	for (i = 0; i < table->bucket_count; i++) {
		struct core_entry *e = table->buckets[i], *next;
		for (; e != NULL; e = next) {
			next = e->hash_next;
			e->hash_next = buckets[e->hash & (count - 1)];
			buckets[e->hash & (count - 1)] = e;
		}
	}
	table->config.free(table->buckets);
	table->buckets = buckets;
	table->bucket_count = count;
	return true;
}

/* Doubles the buckets when the table is fuller than one entry a bucket; a
 * failed allocation only makes chains longer. */
static void
table_grow(struct core_table *table)
{
	table_rehash(table, table->bucket_count * 2);
}

enum core_status
core_table_reserve(struct core_table *table, size_t locks)
{
	size_t count = table->bucket_count;

	/* No more buckets than memory could ever be asked for. */
	if (locks > SIZE_MAX / 4 / sizeof(*table->buckets))
		return CORE_ERR_NOMEM;
	while (count < locks)
		count *= 2;
	if (count > table->bucket_count && !table_rehash(table, count))
		return CORE_ERR_NOMEM;
	if (locks > table->stats.locks &&
	    !heap_reserve(table, locks - table->stats.locks))
		return CORE_ERR_NOMEM;
	return CORE_OK;
}

/* Puts e on the changed list, where it stays (and is not dropped) until the
 * next core_table_changes(). */
static void
entry_touch(struct core_table *table, struct core_entry *e)
{
	if (e->flags & ENTRY_LISTED)
		return;
	e->flags |= ENTRY_LISTED;
	e->changed_next = table->changed;
	table->changed = e;
}

static void
entry_dirty(struct core_table *table, struct core_entry *e)
{
	e->flags |= ENTRY_DIRTY;
	entry_touch(table, e);
}

/* The entry of a name whose hash the caller has: found, or made. */
static struct core_entry *
entry_get_hashed(struct core_table *table, const char *name, size_t len,
    uint32_t hash)
{
	/* One hash serves the look-up and the insertion: the buckets do
	 * not move before the new entry is linked in. */
	struct core_entry *e, **bucket;

	if ((e = chain_find(table, hash, name, len)) != NULL)
		return e;
	if (!heap_reserve(table, 1))
		return NULL;
	/* The name ends the entry: no tail padding is allocated. */
	e = table->config.realloc(NULL, offsetof(struct core_entry, name) +
	    len);
	if (e == NULL)
		return NULL;
	memset(e, 0, offsetof(struct core_entry, name));
	memcpy(e->name, name, len);
	e->name_len = (uint8_t)len;
	e->hash = hash;
	e->timer.slot = CORE__HEAP_OUT;
	e->timer.kind = TIMER_LEASE;
	link_init(&e->queue);
	bucket = bucket_at(table, hash);
	e->hash_next = *bucket;
	*bucket = e;
	core__order_insert(&table->order_root, e);
	table->stats.locks++;
	/* A new entry is idle until used: list it so it is dropped if the
	 * operation that made it leaves it idle. */
	entry_touch(table, e);
	if (table->stats.locks > table->bucket_count)
		table_grow(table);
	return e;
}

static struct core_entry *
entry_get(struct core_table *table, const char *name, size_t len)
{
	return entry_get_hashed(table, name, len, name_hash(table, name, len));
}

static bool
entry_idle(const struct core_entry *e)
{
	return e->lock.fence == 0 && link_empty(&e->queue) &&
	    e->delay_until == 0 && !entry_watched(e) &&
	    (e->multi == NULL || (e->multi->holders == NULL &&
	    e->multi->ended == NULL));
}

static void
entry_drop(struct core_table *table, struct core_entry *e)
{
	struct core_entry **p = bucket_at(table, e->hash);

	while (*p != e)
		p = &(*p)->hash_next;
	*p = e->hash_next;
	core__order_remove(&table->order_root, e);
	timer_clear(table, &e->timer);
	table->stats.locks--;
	multi_free(table, e);
	table->config.free(e);
}

/* ---- replies ---------------------------------------------------------- */

static void
emit(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct core_entry *e,
    struct core_reply *r)
{
	r->kind = kind;
	r->session = session;
	r->tag = tag;
	if (e != NULL) {
		r->name = e->name;
		r->name_len = e->name_len;
		r->user = &e->user;
	}
	table->sink.reply(table->sink.ctx, r);
}

static void
reply_simple(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct core_entry *e)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	emit(table, kind, session, tag, e, &r);
}

static void
reply_limit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_limit_kind kind)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.limit = kind;
	table->stats.limit_hits++;
	emit(table, CORE_REPLY_LIMIT, session, tag, e, &r);
}

/* ---- holding ---------------------------------------------------------- */

/*
 * One holder of a name: the entry's own (h NULL) or one of its
 * core_holders.  The two keep the same fields under the same names, and
 * these reach them for either.
 */
struct hold {
	struct core_entry *e;
	struct core_holder *h;
};

#define HOLD(x, field) ((x).h != NULL ? &(x).h->field : &(x).e->field)

static struct hold
hold_own(struct core_entry *e)
{
	struct hold x = { e, NULL };

	return x;
}

static struct hold
hold_more(struct core_entry *e, struct core_holder *h)
{
	struct hold x = { e, h };

	return x;
}

static bool
hold_shared(struct hold x)
{
	return x.h != NULL && x.h->shared;
}

/* The list of x's session bindings: entries' own holders and the others
 * are kept apart, so that a link alone says which it is. */
static struct core_link *
onclose_list(struct core_session *s, struct hold x)
{
	return x.h != NULL ? &s->onclose_more : &s->onclose;
}

/* The link of x's session binding: a core_holder's own, or for the
 * entry's own holder the one in its tags' bond (`tags`: the hold's, which
 * a bound own holder always has). */
static struct core_link *
onclose_link_of(struct hold x, struct core_tags *tags)
{
	return x.h != NULL ? &x.h->onclose_link :
	    &core_tags_bond(tags)->onclose_link;
}

/* Unbinds x, whose tags are `tags`: for a hold the rules already freed,
 * the tags it had. */
static void
unbind_owner_tags(struct hold x, struct core_tags *tags)
{
	struct core_session **owner = HOLD(x, owner);

	if (*owner != NULL) {
		link_remove(onclose_link_of(x, tags));
		*owner = NULL;
	}
}

static void
unbind_owner(struct hold x)
{
	unbind_owner_tags(x, HOLD(x, lock)->tags);
}

/* Binds x to session.  The entry's own holder keeps the link in its
 * tags' bond: every path that may bind one makes it (tags_make's
 * `bound`, tags_bondable). */
static void
bind_owner(struct hold x, struct core_session *session)
{
	struct core_tags *tags = HOLD(x, lock)->tags;

	if (x.h == NULL) {
		if (core_tags_bond(tags) == NULL)
			return;   /* not reached: see above */
		core_tags_bond(tags)->entry = x.e;
	}
	*HOLD(x, owner) = session;
	link_append(onclose_list(session, x), onclose_link_of(x, tags));
}

/* Is e more than a plain mutex: a limit above 1, or holders beyond its
 * own (now, or ended since the last drain)?  A plain mutex that is only
 * watched has a core_multi too, and is not. */
static bool
holder_set(const struct core_entry *e)
{
	return e->multi != NULL && (e->multi->limit > 1 ||
	    e->multi->holders != NULL || e->multi->ended != NULL);
}

/* The name's limit: 1 for a plain mutex. */
static uint16_t
entry_limit(const struct core_entry *e)
{
	return e->multi != NULL ? e->multi->limit : 1;
}

/* e's multi, made on first need (limit 1): NULL without memory. */
static struct core_multi *
multi_get(struct core_table *table, struct core_entry *e)
{
	if (e->multi == NULL) {
		e->multi = table->config.realloc(NULL, sizeof(*e->multi));
		if (e->multi == NULL)
			return NULL;
		memset(e->multi, 0, sizeof(*e->multi));
		link_init(&e->multi->watchers);
		e->multi->limit = 1;
	}
	return e->multi;
}

/* The holders of e as the admission rule sees them at now: those the
 * rules do not find free or expired (decide). */
static void
holding_of(const struct core_table *table, const struct core_entry *e,
    core_time now, struct core_holding *held)
{
	const struct core_holder *h;

	held->holders = 0;
	held->shared = true;
	held->limit = entry_limit(e);
	if (!table->rules->decide(&e->lock, now)) {
		held->holders++;
		held->shared = false;
	}
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (!table->rules->decide(&h->lock, now)) {
			held->holders++;
			held->shared = held->shared && h->shared;
		}
}

/* Every holder of e, its own first. */
static size_t
holders_count(const struct core_entry *e)
{
	return (e->lock.fence != 0) + (e->multi != NULL ? e->multi->count : 0);
}

/* The newest holder (the largest fence), own or not; fence 0: none. */
static struct hold
hold_newest(struct core_entry *e)
{
	struct hold x = hold_own(e);
	struct core_holder *h;

	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (h->lock.fence > HOLD(x, lock)->fence)
			x = hold_more(e, h);
	return x;
}

static uint64_t
newest_fence(const struct core_entry *e)
{
	return HOLD(hold_newest((struct core_entry *)e), lock)->fence;
}

/* The holder with this fence, or e's own when none has it (the rules
 * then judge the handle against the own holder, free or not). */
static struct hold
hold_find(struct core_entry *e, uint64_t fence)
{
	struct core_holder *h;

	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (h->lock.fence == fence && fence != 0)
			return hold_more(e, h);
	return hold_own(e);
}

/* Sets the name's lock-delay (0: none), keeping the count of names in
 * one. */
static void
delay_set(struct core_table *table, struct core_entry *e, core_time until)
{
	struct core_holder *h;

	if (e->delay_until == 0 && until != 0)
		table->stats.delayed++;
	else if (e->delay_until != 0 && until == 0)
		table->stats.delayed--;
	/* Every holder's record carries the name's delay. */
	if (e->delay_until != until && e->multi != NULL)
		for (h = e->multi->holders; h != NULL; h = h->next)
			h->dirty = true;
	e->delay_until = until;
}

/* The hold x's record changed (and so its entry's). */
static void
hold_dirty(struct core_table *table, struct hold x)
{
	if (x.h != NULL)
		x.h->dirty = true;
	entry_dirty(table, x.e);
}

/* May a request (shared or not) join e's holders now: no lock-delay runs
 * and the holders admit it. */
static bool
admitted(const struct core_table *table, const struct core_entry *e,
    bool shared, core_time now)
{
	struct core_holding held;

	if (table->rules->delay_blocks(e->delay_until, now))
		return false;
	holding_of(table, e, now, &held);
	return table->rules->admits(&held, shared);
}

/*
 * Book-keeping after the rules freed a hold: `ended` is the hold as it
 * was, `how` the way it ended.  A lock-delay it owes starts here (a later
 * end never shortens one already running) and holds the whole name back,
 * whoever else still holds it; the entry's timer then waits for the delay
 * when its own holder is gone.  A holder beyond the entry's own moves to
 * the ended list, whose keys the next drain deletes.
 */
static void
holding_ended(struct core_table *table, struct hold x,
    const struct core_lock *ended, enum core_end how, core_time now)
{
	struct core_entry *e = x.e;
	core_time until = table->rules->delay_end(ended, how, now);

	/* The rules freed the lock; its tags are the table's to free, once
	 * the binding whose link they may hold is undone. */
	unbind_owner_tags(x, ended->tags);
	if (HOLD(x, lock)->tags != ended->tags)
		tags_free(table, ended->tags);
	timer_clear(table, HOLD(x, timer));
	table->stats.held--;
	e->cause = (uint8_t)how;
	if (x.h != NULL) {
		struct core_holder **p = &e->multi->holders;

		while (*p != x.h)
			p = &(*p)->next;
		*p = x.h->next;
		e->multi->count--;
		table->more_holders--;
		tags_free(table, x.h->lock.tags);
		memset(&x.h->lock, 0, sizeof(x.h->lock));
		x.h->ended_fence = ended->fence;   /* its key, to delete */
		x.h->next = e->multi->ended;
		e->multi->ended = x.h;
	}
	if (until > e->delay_until && table->rules->delay_blocks(until, now))
		delay_set(table, e, until);
	if (e->delay_until != 0 && e->lock.fence == 0)
		timer_set(table, &e->timer, e->delay_until);
	entry_dirty(table, e);
}

static bool name_idle(const struct core_entry *e);

/* What STATUS, LIST and WATCH show of e; reclaimed by the caller.  An idle
 * name shows no limit: the next request sets one. */
static void
status_fill(const struct core_table *table, const struct core_entry *e,
    core_time now, struct core_lock_status *status)
{
	struct hold x = hold_newest((struct core_entry *)e);
	const struct core_lock *lock = HOLD(x, lock);

	memset(status, 0, sizeof(*status));
	status->queue = e->queue_len;
	status->cause = (enum core_end)e->cause;
	status->limit = name_idle(e) ? 1 : entry_limit(e);
	if (table->rules->delay_blocks(e->delay_until, now))
		status->delay_ms = e->delay_until - now;
	if (lock->fence != 0) {
		const char *label;

		status->held = true;
		status->fence = lock->fence;
		status->ttl_ms = lock->expiry - now;
		status->label_len = (uint8_t)core_tags_label(lock->tags,
		    &label);
		memcpy(status->label, label, status->label_len);
		status->holders = (uint32_t)holders_count(e);
		status->shared = hold_shared(x);
	}
}

static void waiter_remove(struct core_table *table, struct core_waiter *w);

/* Answers a WATCH: CHANGED with the lock as it is now. */
static void
watch_answer(struct core_table *table, struct core_entry *e,
    struct core_session *session, uint64_t tag, core_time now)
{
	struct core_lock_status st;
	struct core_reply r;

	status_fill(table, e, now, &st);
	memset(&r, 0, sizeof(r));
	r.fence = st.fence;
	r.status = &st;
	emit(table, CORE_REPLY_CHANGED, session, tag, e, &r);
}

/* e's holders as WATCH compares them. */
static struct core_watch_mark
watch_mark(const struct core_entry *e)
{
	struct core_watch_mark m;

	m.fence = newest_fence(e);
	m.holders = (uint32_t)holders_count(e);
	return m;
}

/*
 * Answers, once each, the WATCHes of e that its holders now fire.  Called
 * after every grant and after every end of a hold that was not followed
 * by a grant, so a hand-off is reported after its grant.
 */
static void
watch_notify(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_link *l, *next;
	struct core_watch_mark current;

	if (!entry_watched(e))
		return;
	current = watch_mark(e);
	for (l = e->multi->watchers.next; l != &e->multi->watchers;
	    l = next) {
		struct core_waiter *w = container_of(l, struct core_waiter,
		    queue_link);
		struct core_session *session = w->session;
		uint64_t tag = w->tag;

		struct core_watch_mark watched = { w->watch_fence,
		    w->watch_holders };

		next = l->next;
		if (!table->rules->watch_fires(&watched, w->watch_by_fence,
		    &current))
			continue;
		waiter_remove(table, w);
		watch_answer(table, e, session, tag, now);
	}
}

/* What a new holder asked for, beside its lease. */
struct hold_options {
	bool onclose_release;
	int64_t delay_ms;        /* for its tags: the grant reads them */
	uint8_t label_len;
	const char *label;
	uint8_t rid_len;
	const char *rid;
	uint16_t limit;          /* 1..CORE_LIMIT_MAX */
	bool shared;
	/* The new hold's tags, made from label, rid and delay_ms, with a
	 * bond when own_bound (or a waiter's): the grant takes them over. */
	struct core_tags *tags;
};

/* Will the hold asked for be e's own, bound by onclose=release: then its
 * tags need room for the bond (grant_to makes it late if not). */
static bool
own_bound(const struct core_entry *e, const struct hold_options *opt)
{
	return opt->onclose_release && !opt->shared && opt->limit <= 1 &&
	    entry_limit(e) <= 1;
}

/* A new holder beyond e's own, linked in (newest first) but not yet
 * granted: NULL without memory. */
static struct core_holder *
holder_add(struct core_table *table, struct core_entry *e)
{
	struct core_holder *h;

	if (multi_get(table, e) == NULL || !heap_reserve(table, 1) ||
	    (h = table->config.realloc(NULL, sizeof(*h))) == NULL)
		return NULL;
	memset(h, 0, sizeof(*h));
	h->timer.slot = CORE__HEAP_OUT;
	h->timer.kind = TIMER_HOLDER;
	link_init(&h->onclose_link);
	h->entry = e;
	h->next = e->multi->holders;
	e->multi->holders = h;
	e->multi->count++;
	table->more_holders++;
	return h;
}

/* Unlinks and frees a holder that holds nothing (a grant that failed). */
static void
holder_drop(struct core_table *table, struct core_entry *e,
    struct core_holder *h)
{
	struct core_holder **p = &e->multi->holders;

	while (*p != h)
		p = &(*p)->next;
	*p = h->next;
	e->multi->count--;
	table->more_holders--;
	timer_clear(table, &h->timer);
	table->config.free(h);
}

/*
 * Makes a new holder through the rules' grant (the only place a fence is
 * minted) and reports GRANTED or OVERFLOW to (session, tag).  An
 * exclusive request on a name of limit 1 takes the entry's own place;
 * any other one a holder of its own.
 */
static enum core_status
grant_to(struct core_table *table, struct core_entry *e,
    struct core_session *session, uint64_t tag, int64_t lease_ms,
    const struct hold_options *opt, core_time enqueued_at, core_time now)
{
	bool onclose_release = opt->onclose_release;
	struct core_tags *tags = opt->tags;
	struct hold x = hold_own(e);
	bool was_held;
	uint64_t secret;
	enum core_status st;
	struct core_reply r;
	struct core_lock *lock;

	if (opt->shared || entry_limit(e) > 1) {
		struct core_holder *h = holder_add(table, e);

		if (h == NULL) {
			tags_free(table, opt->tags);
			reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
			return CORE_ERR_NOMEM;
		}
		h->shared = opt->shared;
		x = hold_more(e, h);
	} else if (onclose_release && session != NULL) {
		/* The binding's link lives in the tags' bond, which
		 * own_bound made them with; should a request have missed it,
		 * it is made here rather than the binding lost. */
		struct core_tags *t = tags_bondable(table, tags);

		if (t == NULL) {
			tags_free(table, tags);
			reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
			return CORE_ERR_NOMEM;
		}
		tags = t;
	}
	lock = HOLD(x, lock);
	was_held = lock->fence != 0;
	secret = table->config.secret(table->config.secret_ctx);
	st = table->rules->grant(lock, &table->hwm, now, lease_ms, secret);
	if (st != CORE_OK) {
		if (x.h != NULL)
			holder_drop(table, e, x.h);
		tags_free(table, tags);
		reply_simple(table, st == CORE_ERR_OVERFLOW ?
		    CORE_REPLY_OVERFLOW : CORE_REPLY_CONFLICT, session, tag, e);
		return st;
	}
	table->hwm_changed = true;
	if (was_held)
		unbind_owner(x);   /* only reachable through broken rules */
	else
		table->stats.held++;
	table->stats.granted++;
	*HOLD(x, granted_at) = now;
	e->cause = CORE_END_GRANTED;
	if (lock->tags != tags)   /* held before: broken rules */
		tags_free(table, lock->tags);
	lock->tags = tags;
	if (onclose_release && session != NULL)
		bind_owner(x, session);
	timer_set(table, HOLD(x, timer), lock->expiry);
	hold_dirty(table, x);

	memset(&r, 0, sizeof(r));
	r.fence = lock->fence;
	r.secret = lock->secret;
	r.lease_ms = lock->lease_ms;
	r.waited_ms = now - enqueued_at;
	emit(table, CORE_REPLY_GRANTED, session, tag, e, &r);
	watch_notify(table, e, now);
	return CORE_OK;
}

static void
waiter_remove(struct core_table *table, struct core_waiter *w)
{
	link_remove(&w->queue_link);
	link_remove(&w->session_link);
	timer_clear(table, &w->timer);
	if (w->watch) {
		w->entry->multi->watch_len--;
		table->stats.watches--;
	} else {
		w->entry->queue_len--;
		table->stats.waiters--;
	}
	w->session->waiter_count--;
	if (!w->watch && w->session->group_waiters != NULL)
		(*w->session->group_waiters)--;
	entry_touch(table, w->entry);
	waiter_free(table, w);
}

/* Answers TIMEOUT to a waiter whose wait has elapsed and removes it. */
static void
waiter_time_out(struct core_table *table, struct core_waiter *w)
{
	struct core_session *s = w->session;
	struct core_entry *e = w->entry;
	uint64_t tag = w->tag;
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.watch = w->watch;
	if (!w->watch)
		table->stats.timeouts++;
	waiter_remove(table, w);
	emit(table, CORE_REPLY_TIMEOUT, s, tag, e, &r);
}

/* Grants the head of e's queue while the holders admit it: the run of
 * shared waiters at the head together, the next semaphore permits (a
 * grant that overflows answers the waiter and tries the next one). */
static void reclaim(struct core_table *table, struct core_entry *e,
    core_time now);

/* Is a holder of e (beyond a plain mutex's own) expired but still on the
 * books? */
static bool
holders_expired(const struct core_table *table, const struct core_entry *e,
    core_time now)
{
	const struct core_holder *h;

	if (!holder_set(e))
		return false;
	if (table->rules->lease_expired(&e->lock, now))
		return true;
	for (h = e->multi->holders; h != NULL; h = h->next)
		if (table->rules->lease_expired(&h->lock, now))
			return true;
	return false;
}

static void
hand_off(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_waiter *w;
	struct core_holding held;

	/* Nobody is admitted beside a holder whose lease ran out but who
	 * is still on the books: reclaim ends it first, and hands on. */
	if (holders_expired(table, e, now)) {
		reclaim(table, e, now);
		return;
	}
	/* The holders as admission sees them, counted once and kept up to
	 * date grant by grant: a run of k readers costs O(k), not O(k^2). */
	holding_of(table, e, now, &held);
	while ((w = table->rules->next_waiter(e)) != NULL &&
	    !table->rules->delay_blocks(e->delay_until, now) &&
	    table->rules->admits(&held, w->shared)) {
		struct core_session *s = w->session;
		uint64_t tag = w->tag;
		int64_t lease = w->lease_ms;
		struct hold_options opt;
		core_time since = w->enqueued_at;
		bool shared = w->shared;

		/* The waiter is freed before the grant: keep what it asked,
		 * its tags handed over to the hold. */
		memset(&opt, 0, sizeof(opt));
		opt.onclose_release = w->onclose_release;
		opt.shared = w->shared;
		opt.limit = entry_limit(e);

		/* A wait that ended before now has timed out, whether or not
		 * core_tick has run since.  At the deadline's own instant the
		 * grant wins, as it does over a lease expiring then. */
		if (w->timer.slot != CORE__HEAP_OUT && w->timer.when < now) {
			waiter_time_out(table, w);
			continue;
		}
		opt.tags = w->tags;
		w->tags = NULL;
		waiter_remove(table, w);
		if (grant_to(table, e, s, tag, lease, &opt, since, now) !=
		    CORE_OK)
			continue;
		held.shared = held.holders == 0 ? shared :
		    held.shared && shared;
		held.holders++;
	}
	/* An end with nobody granted after it: report the free lock. */
	watch_notify(table, e, now);
}

/* A waiter left e's queue (its wait ran out, its connection closed): the
 * requests now at the head may be admitted - shared ones that waited
 * behind an exclusive one.  A plain mutex never has a free lock and
 * waiters, so for it this changes nothing. */
static void
queue_changed(struct core_table *table, struct core_entry *e, core_time now)
{
	/* Holders whose lease ran out go first, as they do before every
	 * operation: a grant is never made beside an expired holder that
	 * is still on the books. */
	if (holder_set(e) && !link_empty(&e->queue)) {
		reclaim(table, e, now);
		hand_off(table, e, now);
	}
}

static void
report_end(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct hold x,
    uint64_t fence, core_time now)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.fence = fence;
	r.held_ms = now - *HOLD(x, granted_at);
	emit(table, kind, session, tag, x.e, &r);
}

/* Every operation starts here: every expired lease is freed and the lock
 * handed to the head of its queue. */
static void
reclaim(struct core_table *table, struct core_entry *e, core_time now)
{
	struct core_lock ended = e->lock;
	bool freed = false;
	struct core_holder *h, *next;

	if (now > table->seen_now)
		table->seen_now = now;
	if (table->rules->reclaim_if_expired(&e->lock, now)) {
		table->stats.reclaimed++;
		report_end(table, CORE_EVENT_RECLAIMED, NULL, 0, hold_own(e),
		    ended.fence, now);
		holding_ended(table, hold_own(e), &ended, CORE_END_EXPIRED,
		    now);
		freed = true;
	}
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = next) {
		next = h->next;
		ended = h->lock;
		if (!table->rules->reclaim_if_expired(&h->lock, now))
			continue;
		table->stats.reclaimed++;
		report_end(table, CORE_EVENT_RECLAIMED, NULL, 0,
		    hold_more(e, h), ended.fence, now);
		holding_ended(table, hold_more(e, h), &ended,
		    CORE_END_EXPIRED, now);
		freed = true;
	}
	if (freed)
		hand_off(table, e, now);
	/* A lock-delay that has run out ends, and the lock goes on. */
	if (e->delay_until != 0 &&
	    !table->rules->delay_blocks(e->delay_until, now)) {
		delay_set(table, e, 0);
		if (e->lock.fence == 0)
			timer_clear(table, &e->timer);
		entry_dirty(table, e);
		hand_off(table, e, now);
	}
}

static bool
name_ok(size_t len)
{
	return len >= 1 && len <= CORE_NAME_MAX;
}

static bool
held_limit_hit(const struct core_table *table, const struct core_entry *e,
    const struct hold_options *opt)
{
	/* A new holder, unless (broken rules only) it replaces the own. */
	bool replaces = !opt->shared && entry_limit(e) == 1 &&
	    e->lock.fence != 0;

	return !replaces && table->config.max_held != 0 &&
	    table->stats.held >= table->config.max_held;
}

/*
 * A repeat of the request a live holder was granted for (same rid): the
 * same grant again, with the lease it has left.  Nothing about the hold
 * changes, except that a hold bound by onclose=release follows the
 * session that repeated it: the one it was bound to is most likely a dead
 * connection not yet noticed, and releasing the lock when that is noticed
 * would take it from the client that now has the handle.
 */
static void
regrant(struct core_table *table, struct hold x,
    struct core_session *session, uint64_t tag, core_time now)
{
	struct core_session *owner = *HOLD(x, owner);
	const struct core_lock *lock = HOLD(x, lock);
	struct core_reply r;

	if (owner != NULL && session != NULL && owner != session) {
		unbind_owner(x);
		bind_owner(x, session);
		hold_dirty(table, x);
	}
	memset(&r, 0, sizeof(r));
	r.fence = lock->fence;
	r.secret = lock->secret;
	r.lease_ms = lock->expiry - now;
	r.repeat = true;
	emit(table, CORE_REPLY_GRANTED, session, tag, x.e, &r);
}

/* The live holder that rid's repeat finds (rules->rid_repeat), if any:
 * *found false when none. */
static struct hold
hold_with_rid(const struct core_table *table, struct core_entry *e,
    const struct hold_options *opt, bool *found)
{
	struct core_holder *h;

	*found = true;
	if (table->rules->rid_repeat(&e->lock, opt->rid, opt->rid_len))
		return hold_own(e);
	for (h = e->multi != NULL ? e->multi->holders : NULL; h != NULL;
	    h = h->next)
		if (table->rules->rid_repeat(&h->lock, opt->rid, opt->rid_len))
			return hold_more(e, h);
	*found = false;
	return hold_own(e);
}

/* Is the name idle, so that a request sets its limit: no holder, no
 * waiter, no lock-delay. */
static bool
name_idle(const struct core_entry *e)
{
	return holders_count(e) == 0 && link_empty(&e->queue) &&
	    e->delay_until == 0;
}

static void
reply_misfit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_misfit why)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.misfit = why;
	emit(table, CORE_REPLY_BADARG, session, tag, e, &r);
}

/*
 * Does the request's kind fit the name: a rid repeat must ask what its
 * grant was granted with, and any other request the name's limit - which
 * the first request of an idle name sets.  False: BADARG was replied.
 * NOMEM (*status) when the limit cannot be kept.
 */
static bool
kind_fits(struct core_table *table, struct core_session *session,
    struct core_entry *e, const struct hold_options *opt, uint64_t tag,
    struct hold *repeat, bool *is_repeat, enum core_status *status)
{
	*repeat = hold_with_rid(table, e, opt, is_repeat);
	if (*is_repeat) {
		if (hold_shared(*repeat) != opt->shared ||
		    entry_limit(e) != opt->limit) {
			reply_misfit(table, session, tag, e,
			    hold_shared(*repeat) != opt->shared ?
			    CORE_MISFIT_MODE : CORE_MISFIT_LIMIT);
			*status = CORE_ERR_KIND;
			return false;
		}
		return true;
	}
	if (name_idle(e)) {
		if (opt->limit > 1 || opt->shared) {
			if (multi_get(table, e) == NULL) {
				reply_simple(table, CORE_REPLY_NOMEM, session,
				    tag, e);
				*status = CORE_ERR_NOMEM;
				return false;
			}
		}
		if (e->multi != NULL)
			e->multi->limit = opt->limit;
		return true;
	}
	if (entry_limit(e) != opt->limit) {
		reply_misfit(table, session, tag, e, CORE_MISFIT_LIMIT);
		*status = CORE_ERR_KIND;
		return false;
	}
	return true;
}

/*
 * The start of ACQUIRE and TRY, their arguments checked: finds the entry
 * (expired leases reclaimed first), answers a rid repeat and a request of
 * the wrong kind, and grants at once when nobody waits and the holders
 * admit it.  Returns true when the request was answered, with *status its
 * outcome; else *ep is the entry, busy or with waiters.
 */
static bool
take_if_free(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, int64_t lease,
    const struct hold_options *opt, uint64_t tag, core_time now,
    struct core_entry **ep, enum core_status *status)
{
	struct core_entry *e;
	struct hold repeat;
	bool is_repeat;

	if ((e = entry_get(table, name, name_len)) == NULL) {
		reply_simple(table, CORE_REPLY_NOMEM, session, tag, NULL);
		*status = CORE_ERR_NOMEM;
		return true;
	}
	reclaim(table, e, now);
	*ep = e;
	if (!kind_fits(table, session, e, opt, tag, &repeat, &is_repeat,
	    status))
		return true;
	if (is_repeat) {
		regrant(table, repeat, session, tag, now);
		*status = CORE_OK;
		return true;
	}
	if (!link_empty(&e->queue) || !admitted(table, e, opt->shared, now))
		return false;
	if (held_limit_hit(table, e, opt)) {
		reply_limit(table, session, tag, e, CORE_LIMIT_HELD);
		*status = CORE_ERR_LIMIT;
	} else {
		struct hold_options own = *opt;
		bool nomem;

		own.tags = tags_make(table, opt->label, opt->label_len,
		    opt->rid, opt->rid_len, opt->delay_ms,
		    own_bound(e, opt), &nomem);
		if (nomem) {
			reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
			*status = CORE_ERR_NOMEM;
			return true;
		}
		*status = grant_to(table, e, session, tag, lease, &own, now,
		    now);
	}
	return true;
}

/* ---- operations ------------------------------------------------------- */

/* ACQUIRE's and TRY's holder options, checked; false for a bad one
 * (*misfit says when it is mode=shared with a limit). */
static bool
hold_options_get(const struct core_table *table,
    const struct core_acquire_args *args, struct hold_options *opt,
    enum core_misfit *misfit)
{
	*misfit = CORE_MISFIT_NONE;
	if (args->delay_ms < 0 || args->label_len > CORE_OWNER_MAX ||
	    (args->label_len > 0 && args->label == NULL) ||
	    args->rid_len > CORE_RID_MAX ||
	    (args->rid_len > 0 && args->rid == NULL))
		return false;
	if (args->limit > CORE_LIMIT_MAX) {
		*misfit = CORE_MISFIT_LIMIT;
		return false;
	}
	if (args->shared && args->limit > 1) {
		*misfit = CORE_MISFIT_MODE;
		return false;
	}
	opt->limit = (uint16_t)(args->limit > 1 ? args->limit : 1);
	opt->shared = args->shared;
	opt->onclose_release = args->onclose_release;
	opt->delay_ms = args->delay_ms < table->config.max_lock_delay_ms ?
	    args->delay_ms : table->config.max_lock_delay_ms;
	opt->label_len = (uint8_t)args->label_len;
	opt->label = args->label;
	opt->rid_len = (uint8_t)args->rid_len;
	opt->rid = args->rid;
	opt->tags = NULL;
	return true;
}

/* Is there room for one more waiter or WATCH of this session?  Replies
 * LIMIT when not.  A pending WATCH counts as a waiter, except against its
 * group's (principal's) limit, which counts waiting ACQUIREs only. */
static bool
waiter_room(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, bool watch)
{
	if (table->config.max_waiters != 0 && table->stats.waiters +
	    table->stats.watches >= table->config.max_waiters) {
		reply_limit(table, session, tag, e, CORE_LIMIT_WAITERS);
		return false;
	}
	if (table->config.max_waiters_per_session != 0 &&
	    session->waiter_count >= table->config.max_waiters_per_session) {
		reply_limit(table, session, tag, e, CORE_LIMIT_SESSION_WAITERS);
		return false;
	}
	if (!watch && session->group_waiters != NULL &&
	    session->group_max_waiters != 0 &&
	    *session->group_waiters >= session->group_max_waiters) {
		reply_limit(table, session, tag, e, CORE_LIMIT_GROUP_WAITERS);
		return false;
	}
	return true;
}

/*
 * Queues a new waiter of session on e - an ACQUIRE on its queue, or a
 * WATCH on its watchers - counted where waiter_remove uncounts it, with
 * its wait_ms timer (none for CORE_WAIT_FOREVER); the caller fills in
 * what its request asks for.  Without memory: NOMEM is replied, NULL.
 */
static struct core_waiter *
waiter_add(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, bool watch, int64_t wait_ms,
    core_time now)
{
	struct core_waiter *w;

	if (!heap_reserve(table, 1) ||
	    (w = table->config.realloc(NULL, sizeof(*w))) == NULL) {
		reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return NULL;
	}
	memset(w, 0, sizeof(*w));
	w->entry = e;
	w->session = session;
	w->tag = tag;
	w->watch = watch;
	w->enqueued_at = now;
	w->timer.slot = CORE__HEAP_OUT;
	w->timer.kind = TIMER_WAIT;
	link_append(watch ? &e->multi->watchers : &e->queue, &w->queue_link);
	link_append(&session->waiters, &w->session_link);
	session->waiter_count++;
	if (watch) {
		e->multi->watch_len++;
		table->stats.watches++;
	} else {
		e->queue_len++;
		table->stats.waiters++;
		if (session->group_waiters != NULL)
			(*session->group_waiters)++;
	}
	if (wait_ms > 0)
		timer_set(table, &w->timer, now > CORE_NEVER - wait_ms ?
		    CORE_NEVER - 1 : now + wait_ms);
	return w;
}

/* The waiter in e's queue that asked with this rid, NULL for none. */
static struct core_waiter *
waiter_with_rid(struct core_entry *e, const char *rid, size_t rid_len)
{
	struct core_link *l;

	if (rid_len == 0)
		return NULL;
	for (l = e->queue.next; l != &e->queue; l = l->next) {
		struct core_waiter *w = container_of(l, struct core_waiter,
		    queue_link);
		const char *r;

		if (core_tags_rid(w->tags, &r) == rid_len &&
		    memcmp(r, rid, rid_len) == 0)
			return w;
	}
	return NULL;
}

/*
 * `fresh`, just queued at the tail, takes old's place in the queue (its
 * turn, from when old was queued), and old is answered SUPERSEDED and
 * removed: the same request never waits twice.
 */
static void
waiter_supersede(struct core_table *table, struct core_waiter *old,
    struct core_waiter *fresh)
{
	struct core_session *s = old->session;
	struct core_entry *e = old->entry;
	uint64_t tag = old->tag;

	link_remove(&fresh->queue_link);
	link_append(&old->queue_link, &fresh->queue_link);  /* before old */
	fresh->enqueued_at = old->enqueued_at;
	waiter_remove(table, old);
	reply_simple(table, CORE_REPLY_SUPERSEDED, s, tag, e);
}

enum core_status
core_acquire(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, const struct core_acquire_args *args,
    uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_waiter *w, *old;
	struct core_tags *tags;
	struct hold_options opt;
	enum core_status status;
	enum core_misfit misfit = CORE_MISFIT_NONE;
	int64_t lease;
	bool nomem;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, args->lease_ms, &lease) !=
	    CORE_OK || args->wait_ms < CORE_WAIT_FOREVER ||
	    !hold_options_get(table, args, &opt, &misfit)) {
		reply_misfit(table, session, tag, NULL, misfit);
		return misfit != CORE_MISFIT_NONE ? CORE_ERR_KIND :
		    CORE_ERR_BADARG;
	}
	if (take_if_free(table, session, name, name_len, lease, &opt, tag,
	    now, &e, &status))
		return status;
	if (args->wait_ms == 0) {
		table->stats.timeouts++;
		reply_simple(table, CORE_REPLY_TIMEOUT, session, tag, e);
		return CORE_OK;
	}
	/* A repeat of a waiting request takes its place: the waiter it
	 * replaces leaves room for it under every limit. */
	old = waiter_with_rid(e, opt.rid, opt.rid_len);
	if (old != NULL && old->shared != opt.shared) {
		/* Another mode is another request, not its retry: taking
		 * the waiter's turn, it could stand where it would be
		 * admitted. */
		reply_misfit(table, session, tag, e, CORE_MISFIT_MODE);
		return CORE_ERR_KIND;
	}
	if (old == NULL && !waiter_room(table, session, tag, e, false))
		return CORE_ERR_LIMIT;
	tags = tags_make(table, opt.label, opt.label_len, opt.rid, opt.rid_len,
	    opt.delay_ms, own_bound(e, &opt), &nomem);
	if (nomem) {
		reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return CORE_ERR_NOMEM;
	}
	if ((w = waiter_add(table, session, tag, e, false, args->wait_ms,
	    now)) == NULL) {
		tags_free(table, tags);
		return CORE_ERR_NOMEM;
	}
	w->tags = tags;
	if (old != NULL)
		waiter_supersede(table, old, w);
	w->lease_ms = lease;
	w->onclose_release = opt.onclose_release;
	w->shared = opt.shared;
	return CORE_OK;
}

enum core_status
core_try(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, const struct core_acquire_args *args,
    uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct hold_options opt;
	enum core_status status;
	enum core_misfit misfit = CORE_MISFIT_NONE;
	int64_t lease;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, args->lease_ms, &lease) !=
	    CORE_OK || !hold_options_get(table, args, &opt, &misfit)) {
		reply_misfit(table, session, tag, NULL, misfit);
		return misfit != CORE_MISFIT_NONE ? CORE_ERR_KIND :
		    CORE_ERR_BADARG;
	}
	if (take_if_free(table, session, name, name_len, lease, &opt, tag,
	    now, &e, &status))
		return status;
	{
		struct core_lock_status st;
		struct core_reply r;

		table->stats.unavailable++;
		status_fill(table, e, now, &st);
		memset(&r, 0, sizeof(r));
		r.status = &st;
		emit(table, CORE_REPLY_HELD, session, tag, e, &r);
	}
	return CORE_OK;
}

enum core_status
core_renew(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    int64_t lease_ms, uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_reply r;
	struct hold x = { NULL, NULL };
	int64_t lease;

	if (!name_ok(name_len) ||
	    core_lease_effective(&table->config, lease_ms, &lease) != CORE_OK) {
		reply_simple(table, CORE_REPLY_BADARG, session, tag, NULL);
		return CORE_ERR_BADARG;
	}
	/* A lock not in memory is held by nobody: no entry is made for it. */
	if ((e = entry_find(table, name, name_len)) != NULL) {
		reclaim(table, e, now);
		x = hold_find(e, handle.fence);
	}
	if (e == NULL || table->rules->renew(HOLD(x, lock), handle, now,
	    lease) != CORE_OK) {
		table->stats.conflicts++;
		if (e == NULL) {
			/* Name the lock in the reply all the same. */
			memset(&r, 0, sizeof(r));
			r.name = name;
			r.name_len = name_len;
			emit(table, CORE_REPLY_CONFLICT, session, tag, NULL, &r);
		} else
			reply_simple(table, CORE_REPLY_CONFLICT, session, tag,
			    e);
		return CORE_ERR_CONFLICT;
	}
	table->stats.renewed++;
	timer_set(table, HOLD(x, timer), HOLD(x, lock)->expiry);
	hold_dirty(table, x);
	memset(&r, 0, sizeof(r));
	r.fence = HOLD(x, lock)->fence;
	r.lease_ms = HOLD(x, lock)->lease_ms;
	emit(table, CORE_REPLY_RENEWED, session, tag, e, &r);
	return CORE_OK;
}

/*
 * RELEASE (how CORE_END_RELEASED: the holder's handle) and FORCE
 * (CORE_END_FORCED: an operator's fence, handle.secret unused) are one
 * operation but for the rule that decides and what is counted: the hold
 * the handle's fence names ends if the rule says so, its lock-delay
 * begins as `how` owes, and the lock goes on.  Otherwise NOTHELD, and
 * nothing changes.
 */
static enum core_status
end_hold(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    enum core_end how, uint64_t tag, core_time now)
{
	bool forced = how == CORE_END_FORCED;
	struct core_entry *e;
	struct core_reply r;
	struct core_lock ended;
	struct hold x = { NULL, NULL };

	if (!name_ok(name_len) || (forced && (handle.fence == 0 ||
	    handle.fence > CORE_FENCE_MAX))) {
		reply_simple(table, CORE_REPLY_BADARG, session, tag, NULL);
		return CORE_ERR_BADARG;
	}
	if ((e = entry_find(table, name, name_len)) != NULL) {
		reclaim(table, e, now);
		x = hold_find(e, handle.fence);
		ended = *HOLD(x, lock);
	}
	if (e == NULL || !(forced ?
	    table->rules->force(HOLD(x, lock), handle.fence) :
	    table->rules->release(HOLD(x, lock), handle))) {
		memset(&r, 0, sizeof(r));
		r.name = name;
		r.name_len = name_len;
		emit(table, CORE_REPLY_NOTHELD, session, tag, e, &r);
		return CORE_OK;
	}
	if (forced)
		table->stats.forced++;
	else
		table->stats.released++;
	report_end(table, forced ? CORE_REPLY_FORCED : CORE_REPLY_RELEASED,
	    session, tag, x, ended.fence, now);
	holding_ended(table, x, &ended, how, now);
	hand_off(table, e, now);
	return CORE_OK;
}

enum core_status
core_release(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, struct core_handle handle,
    uint64_t tag, core_time now)
{
	return end_hold(table, session, name, name_len, handle,
	    CORE_END_RELEASED, tag, now);
}

enum core_status
core_force(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, uint64_t fence, uint64_t tag,
    core_time now)
{
	struct core_handle handle = { fence, 0 };

	return end_hold(table, session, name, name_len, handle,
	    CORE_END_FORCED, tag, now);
}

enum core_status
core_watch(struct core_table *table, struct core_session *session,
    const char *name, size_t name_len, bool has_fence, uint64_t fence,
    int64_t wait_ms, uint64_t tag, core_time now)
{
	struct core_entry *e;
	struct core_waiter *w;
	struct core_watch_mark watched, current;

	if (!name_ok(name_len) || wait_ms < CORE_WAIT_FOREVER ||
	    (has_fence && fence > CORE_FENCE_MAX)) {
		reply_simple(table, CORE_REPLY_BADARG, session, tag, NULL);
		return CORE_ERR_BADARG;
	}
	if ((e = entry_get(table, name, name_len)) == NULL) {
		reply_simple(table, CORE_REPLY_NOMEM, session, tag, NULL);
		return CORE_ERR_NOMEM;
	}
	reclaim(table, e, now);
	/* Without fence=, the holders it found are the ones it watches. */
	current = watch_mark(e);
	watched = current;
	if (has_fence)
		watched.fence = fence;
	/* Fires at once when the state already differs. */
	if (table->rules->watch_fires(&watched, has_fence, &current)) {
		watch_answer(table, e, session, tag, now);
		return CORE_OK;
	}
	if (wait_ms == 0) {
		struct core_reply r;

		memset(&r, 0, sizeof(r));
		r.watch = true;
		emit(table, CORE_REPLY_TIMEOUT, session, tag, e, &r);
		return CORE_OK;
	}
	if (!waiter_room(table, session, tag, e, true))
		return CORE_ERR_LIMIT;
	/* The watchers' list is out of line: an unwatched lock pays
	 * nothing for it. */
	if (multi_get(table, e) == NULL) {
		reply_simple(table, CORE_REPLY_NOMEM, session, tag, e);
		return CORE_ERR_NOMEM;
	}
	if ((w = waiter_add(table, session, tag, e, true, wait_ms, now)) ==
	    NULL)
		return CORE_ERR_NOMEM;
	w->watch_by_fence = has_fence;
	w->watch_fence = watched.fence;
	w->watch_holders = watched.holders;
	return CORE_OK;
}

void
core_status(struct core_table *table, const char *name, size_t name_len,
    core_time now, struct core_lock_status *status)
{
	struct core_entry *e = entry_find(table, name, name_len);

	memset(status, 0, sizeof(*status));
	if (e == NULL)
		return;
	reclaim(table, e, now);
	status_fill(table, e, now, status);
}

bool
core_check(struct core_table *table, const char *name, size_t name_len,
    uint64_t fence, core_time now, int64_t *ttl_ms)
{
	struct core_entry *e = entry_find(table, name, name_len);
	struct hold x;

	*ttl_ms = 0;
	if (e == NULL || fence == 0)
		return false;
	reclaim(table, e, now);
	x = hold_find(e, fence);
	if (HOLD(x, lock)->fence != fence)
		return false;
	*ttl_ms = HOLD(x, lock)->expiry - now;
	return true;
}

/* Releases a lease because its onclose session went away. */
static void
release_onclose(struct core_table *table, struct hold x, core_time now)
{
	struct core_lock *lock = HOLD(x, lock);
	struct core_handle h = { lock->fence, lock->secret };
	struct core_lock ended = *lock;

	if (!table->rules->release(lock, h)) {
		unbind_owner(x);
		return;
	}
	table->stats.released_onclose++;
	report_end(table, CORE_EVENT_RELEASED_ONCLOSE, NULL, 0, x, h.fence,
	    now);
	holding_ended(table, x, &ended, CORE_END_CLOSED, now);
	hand_off(table, x.e, now);
}

/*
 * After a session left every queue it was in (marked ENTRY_HANDON on the
 * way; every such entry is on the changed list): each of those names is
 * handed on to the requests now at its head, if the holders admit them.
 * Not earlier, or a waiter of the leaving session could be granted.
 */
static void
queues_changed(struct core_table *table, core_time now)
{
	struct core_entry *e;

	for (e = table->changed; e != NULL; e = e->changed_next)
		if (e->flags & ENTRY_HANDON) {
			e->flags &= (uint8_t)~ENTRY_HANDON;
			queue_changed(table, e, now);
		}
}

void
core_disconnect(struct core_table *table, struct core_session *session,
    core_time now)
{
	while (!link_empty(&session->waiters)) {
		struct core_waiter *w = container_of(session->waiters.next,
		    struct core_waiter, session_link);
		struct core_entry *e = w->entry;
		bool queued = !w->watch;

		waiter_remove(table, w);
		if (queued && holder_set(e))
			e->flags |= ENTRY_HANDON;
	}
	queues_changed(table, now);
	while (!link_empty(&session->onclose)) {
		struct core_entry *e = container_of(session->onclose.next,
		    struct core_bond, onclose_link)->entry;
		/* An expired lease is reclaimed (and reported) as such. */
		reclaim(table, e, now);
		if (e->owner == session)
			release_onclose(table, hold_own(e), now);
	}
	while (!link_empty(&session->onclose_more)) {
		struct core_holder *h = container_of(session->onclose_more.next,
		    struct core_holder, onclose_link);
		struct core_entry *e = h->entry;

		/* An expired lease is reclaimed (and unbound) as such; a
		 * reclaimed holder stays allocated until the next drain. */
		reclaim(table, e, now);
		if (h->owner == session)
			release_onclose(table, hold_more(e, h), now);
	}
}

void
core_cancel_waiters(struct core_table *table, struct core_session *session,
    enum core_reply_kind kind)
{
	while (!link_empty(&session->waiters)) {
		struct core_waiter *w = container_of(session->waiters.next,
		    struct core_waiter, session_link);
		uint64_t tag = w->tag;
		struct core_entry *e = w->entry;
		bool queued = !w->watch;

		if (kind == CORE_REPLY_TIMEOUT)
			waiter_time_out(table, w);   /* counted as one */
		else {
			waiter_remove(table, w);
			reply_simple(table, kind, session, tag, e);
		}
		/* On a clean stop nobody is granted any more. */
		if (queued && kind != CORE_REPLY_SHUTDOWN && holder_set(e))
			e->flags |= ENTRY_HANDON;
	}
	queues_changed(table, table->seen_now);
}

core_time
core_next_deadline(const struct core_table *table)
{
	return table->heap_len ? table->heap[0]->when : CORE_NEVER;
}

core_time
core_tick(struct core_table *table, core_time now)
{
	while (table->heap_len > 0 && table->heap[0]->when <= now) {
		struct core_timer *t = table->heap[0];

		timer_clear(table, t);
		if (t->kind == TIMER_LEASE) {
			reclaim(table, container_of(t, struct core_entry,
			    timer), now);
		} else if (t->kind == TIMER_HOLDER) {
			reclaim(table, container_of(t, struct core_holder,
			    timer)->entry, now);
		} else {
			struct core_waiter *w = container_of(t,
			    struct core_waiter, timer);
			struct core_entry *e = w->entry;
			bool queued = !w->watch;

			waiter_time_out(table, w);
			if (queued)
				queue_changed(table, e, now);
		}
	}
	return core_next_deadline(table);
}

/* ---- listing ---------------------------------------------------------- */

static bool
has_prefix(const struct core_entry *e, const char *prefix, size_t len)
{
	return e->name_len >= len && memcmp(e->name, prefix, len) == 0;
}

const struct core_entry *
core_list_first(const struct core_table *table, const char *prefix,
    size_t prefix_len, const char *after, size_t after_len)
{
	const struct core_entry *e;

	/* The names with a prefix are one run of the order, starting at
	 * the prefix itself: seek past whichever of it and `after` comes
	 * later. */
	if (after_len > 0 && core__order_compare(after, after_len, prefix,
	    prefix_len) >= 0)
		e = core__order_seek(table->order_root, after, after_len,
		    false);
	else
		e = core__order_seek(table->order_root, prefix, prefix_len,
		    true);
	return e != NULL && has_prefix(e, prefix, prefix_len) ? e : NULL;
}

const struct core_entry *
core_list_next(const struct core_table *table, const struct core_entry *e,
    const char *prefix, size_t prefix_len)
{
	e = core__order_seek(table->order_root, e->name, e->name_len, false);
	return e != NULL && has_prefix(e, prefix, prefix_len) ? e : NULL;
}

bool
core_list_status(const struct core_table *table, const struct core_entry *e,
    core_time now, struct core_lock_status *status)
{
	status_fill(table, e, now, status);
	return status->held || status->queue > 0 || status->delay_ms > 0;
}

/* ---- durability ------------------------------------------------------- */

/* The durable record of one hold of e (x), with the name's lock-delay. */
static void
record_fill(const struct core_entry *e, struct hold x,
    struct core_record *rec)
{
	const struct core_lock *lock = HOLD(x, lock);
	struct core_session *owner = *HOLD(x, owner);
	const char *label, *rid;

	memset(rec, 0, sizeof(*rec));
	rec->delay_until = e->delay_until;
	rec->fence = lock->fence;
	rec->secret = lock->secret;
	rec->expiry = lock->expiry;
	rec->lease_ms = lock->lease_ms;
	rec->delay_ms = core_tags_delay(lock->tags);
	rec->label_len = (uint8_t)core_tags_label(lock->tags, &label);
	memcpy(rec->label, label, rec->label_len);
	rec->rid_len = (uint8_t)core_tags_rid(lock->tags, &rid);
	memcpy(rec->rid, rid, rec->rid_len);
	rec->onclose_release = owner != NULL;
	rec->owner_id = owner != NULL ? owner->id : 0;
	/* The own holder keeps the record a single-holder table wrote. */
	if (x.h != NULL) {
		rec->limit = entry_limit(e);
		rec->shared = x.h->shared;
	}
}

/*
 * The records of one dirty entry, per key.  The key <name>: its own
 * holder, or - with no holder left at all - the name's lock-delay (fence
 * 0, with the limit when above 1), else a delete; a name with holders
 * beyond its own reports that delete only when the key holds a record.
 * Then every other holder whose record changed (granted, renewed,
 * rebound, or the name's lock-delay it carries moved) under its fence,
 * and a delete for each that ended.
 */
static size_t
entry_records(struct core_table *table, struct core_entry *e,
    void (*record)(void *ctx, const char *name, size_t name_len,
        uint64_t key_fence, const struct core_record *rec),
    void *ctx)
{
	struct core_holder *h, *next;
	struct core_record rec;
	bool own = e->lock.fence != 0;
	bool delay_only = !own && holders_count(e) == 0 && e->delay_until != 0;
	size_t n = 0;

	if (own || delay_only || !holder_set(e) ||
	    (e->flags & ENTRY_KEY0)) {
		if (own)
			record_fill(e, hold_own(e), &rec);
		else if (delay_only) {
			memset(&rec, 0, sizeof(rec));
			rec.delay_until = e->delay_until;
			rec.limit = entry_limit(e) > 1 ? entry_limit(e) : 0;
		}
		if (record != NULL)
			record(ctx, e->name, e->name_len, 0,
			    own || delay_only ? &rec : NULL);
		if (own || delay_only)
			e->flags |= ENTRY_KEY0;
		else
			e->flags &= (uint8_t)~ENTRY_KEY0;
		n++;
	}
	if (e->multi == NULL)
		return n;
	for (h = e->multi->holders; h != NULL; h = h->next) {
		if (!h->dirty)
			continue;
		h->dirty = false;
		record_fill(e, hold_more(e, h), &rec);
		if (record != NULL)
			record(ctx, e->name, e->name_len, h->lock.fence, &rec);
		n++;
	}
	for (h = e->multi->ended; h != NULL; h = next) {
		next = h->next;
		if (record != NULL)
			record(ctx, e->name, e->name_len, h->ended_fence,
			    NULL);
		table->config.free(h);
		n++;
	}
	e->multi->ended = NULL;
	return n;
}

size_t
core_table_changes(struct core_table *table,
    void (*record)(void *ctx, const char *name, size_t name_len,
        uint64_t key_fence, const struct core_record *rec),
    void *ctx, bool *hwm_changed)
{
	struct core_entry *e = table->changed, *next;
	size_t n = 0;

	table->changed = NULL;
	for (; e != NULL; e = next) {
		next = e->changed_next;
		e->changed_next = NULL;
		if (e->flags & ENTRY_DIRTY)
			n += entry_records(table, e, record, ctx);
		else if (e->multi != NULL)
			holder_list_free(table, e->multi->ended);
		if (e->multi != NULL)
			e->multi->ended = NULL;
		e->flags &= ENTRY_KEY0;
		if (entry_idle(e))
			entry_drop(table, e);
	}
	if (hwm_changed != NULL)
		*hwm_changed = table->hwm_changed;
	table->hwm_changed = false;
	return n;
}

void
core_table_restore_hwm(struct core_table *table, uint64_t hwm)
{
	if (hwm > table->hwm)
		table->hwm = hwm;
}

/* Is this record the entry's own holder's (the key <name>): an exclusive
 * hold of a limit-1 name.  Fence 0 is a free name's lock-delay. */
static bool
record_is_own(const struct core_record *rec)
{
	return rec->fence != 0 && rec->limit <= 1 && !rec->shared;
}

/* Tags for a record's label, rid and lock-delay (lengths out of range:
 * none), with room for an onclose binding when it is the entry's own
 * holder's (`own`) and has one. */
static struct core_tags *
record_tags(struct core_table *table, const struct core_record *rec,
    bool own, bool *nomem)
{
	return tags_make(table, rec->label, rec->label_len <=
	    CORE_OWNER_MAX ? rec->label_len : 0, rec->rid,
	    rec->rid_len <= CORE_RID_MAX ? rec->rid_len : 0, rec->delay_ms,
	    own && rec->onclose_release, nomem);
}

/* The record of the restore's i-th: first, then more[0..nmore). */
static const struct core_record *
restore_rec(const struct core_record *first,
    const struct core_record *more, size_t i)
{
	return first != NULL ? (i == 0 ? first : &more[i - 1]) : &more[i];
}

/* Does some record of the restore belong to holder h (not the own)? */
static bool
restore_has(const struct core_record *first, const struct core_record *more,
    size_t n, const struct core_holder *h)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (!record_is_own(r) && r->fence == h->lock.fence &&
		    r->secret == h->lock.secret)
			return true;
	}
	return false;
}

/*
 * The holders beyond e's own set to the records that are theirs: one that
 * the table has with the same fence and secret keeps its binding (a
 * renewal rolled back) and takes the record's lease; the others go; a
 * record no holder has becomes one, from fresh[i] (made beforehand, so
 * that nothing here fails).  On return fresh[i] is the holder to release
 * once the whole name is restored (its connection is gone), else NULL.
 */
static void
restore_more(struct core_table *table, struct core_entry *e,
    const struct core_record *first, const struct core_record *more,
    size_t n, struct core_holder **fresh, core_time now)
{
	struct core_holder *h, **p;
	size_t i;

	if (e->multi == NULL)
		return;
	holder_list_free(table, e->multi->ended);
	e->multi->ended = NULL;
	p = &e->multi->holders;
	while ((h = *p) != NULL) {
		if (restore_has(first, more, n, h)) {
			p = &h->next;
			continue;
		}
		*p = h->next;
		unbind_owner(hold_more(e, h));
		timer_clear(table, &h->timer);
		table->stats.held--;
		e->multi->count--;
		table->more_holders--;
		tags_free(table, h->lock.tags);
		table->config.free(h);
	}
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);
		bool gone = false;

		if (r->fence == 0 || record_is_own(r))
			continue;
		core_table_restore_hwm(table, r->fence);
		for (h = e->multi->holders; h != NULL; h = h->next)
			if (h->lock.fence == r->fence &&
			    h->lock.secret == r->secret)
				break;
		if (h != NULL) {
			/* The same holder: its fresh twin is not needed. */
			tags_free(table, fresh[i]->lock.tags);
			table->config.free(fresh[i]);
		} else {
			h = fresh[i];
			h->next = e->multi->holders;
			e->multi->holders = h;
			e->multi->count++;
			table->more_holders++;
			table->stats.held++;
			h->lock.fence = r->fence;
			h->lock.secret = r->secret;
			h->shared = r->shared;
			h->granted_at = r->expiry - r->lease_ms < now ?
			    r->expiry - r->lease_ms : now;
			if (r->onclose_release && r->owner != NULL)
				bind_owner(hold_more(e, h), r->owner);
			else
				gone = r->onclose_release;
		}
		fresh[i] = gone ? h : NULL;
		h->dirty = false;   /* as the store has it */
		h->lock.expiry = r->expiry;
		h->lock.lease_ms = r->lease_ms;
		timer_set(table, &h->timer, h->lock.expiry);
	}
}

/* Frees what restore_prepare made and restore_more did not use. */
static void
restore_unprepare(struct core_table *table, struct core_holder **fresh,
    size_t n)
{
	size_t i;

	for (i = 0; fresh != NULL && i < n; i++)
		if (fresh[i] != NULL) {
			tags_free(table, fresh[i]->lock.tags);
			table->config.free(fresh[i]);
		}
	table->config.free(fresh);
}

/* A holder (with its tags) for every record beyond the own, before
 * anything changes: false without memory, having made nothing. */
static bool
restore_prepare(struct core_table *table, struct core_entry *e,
    const struct core_record *first, const struct core_record *more,
    size_t n, struct core_holder ***freshp)
{
	struct core_holder **fresh;
	bool any = false, nomem = false;
	size_t i;

	*freshp = NULL;
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		any = any || (r->fence != 0 && !record_is_own(r)) ||
		    r->limit > 1;
	}
	if (!any)
		return true;
	if (multi_get(table, e) == NULL || !heap_reserve(table, n))
		return false;
	fresh = table->config.realloc(NULL, n * sizeof(*fresh));
	if (fresh == NULL)
		return false;
	memset(fresh, 0, n * sizeof(*fresh));
	for (i = 0; i < n && !nomem; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (r->fence == 0 || record_is_own(r))
			continue;
		fresh[i] = table->config.realloc(NULL, sizeof(*fresh[i]));
		if (fresh[i] == NULL) {
			nomem = true;
			break;
		}
		memset(fresh[i], 0, sizeof(*fresh[i]));
		fresh[i]->timer.slot = CORE__HEAP_OUT;
		fresh[i]->timer.kind = TIMER_HOLDER;
		link_init(&fresh[i]->onclose_link);
		fresh[i]->entry = e;
		fresh[i]->lock.tags = record_tags(table, r, false, &nomem);
	}
	if (nomem) {
		restore_unprepare(table, fresh, n);
		return false;
	}
	*freshp = fresh;
	return true;
}

/*
 * The waiters of a name whose limit a restore changed were queued while,
 * in a change the store never got, the name was idle and took another
 * limit: restored with holders of the old limit, it was never idle for
 * them, so their kind does not fit it.  Each is answered BADARG (a limit
 * misfit), as it would have been on arriving, and leaves the queue -
 * never granted under a limit it did not ask for (a writer as one permit
 * beside a reader).
 */
static void
refuse_waiters(struct core_table *table, struct core_entry *e)
{
	while (!link_empty(&e->queue)) {
		struct core_waiter *w = container_of(e->queue.next,
		    struct core_waiter, queue_link);
		struct core_session *s = w->session;
		uint64_t tag = w->tag;

		waiter_remove(table, w);
		reply_misfit(table, s, tag, e, CORE_MISFIT_LIMIT);
	}
}

/*
 * Restores one name from its records: `first` (NULL: none) and
 * more[0..nmore).  The own holder's record is handled exactly as a
 * single-holder table did; the others by restore_more.
 */
static enum core_status
restore_hashed(struct core_table *table, const char *name, size_t name_len,
    uint32_t hash, const struct core_record *first,
    const struct core_record *more, size_t nmore, core_time now)
{
	struct core_entry *e;
	struct core_tags *tags = NULL;
	struct core_holder **fresh = NULL;
	const struct core_record *rec = NULL;
	core_time delay_until = 0;
	uint16_t limit = 1, queued;
	size_t i, n = (first != NULL) + nmore;
	bool nomem = false, released = false, holds = false;

	if (n > CORE_LIMIT_MAX)
		return CORE_ERR_BADARG;
	if ((e = entry_get_hashed(table, name, name_len, hash)) == NULL)
		return CORE_ERR_NOMEM;
	/* The limit its waiters fit; 0: nobody waits. */
	queued = link_empty(&e->queue) ? 0 : entry_limit(e);
	/* Once per name between two drains: a second restore would undo
	 * what the first handed on (a grant already answered). */
	if (e->flags & ENTRY_RESTORED)
		return CORE_OK;
	for (i = 0; i < n; i++) {
		const struct core_record *r = restore_rec(first, more, i);

		if (record_is_own(r) || (r->fence == 0 && rec == NULL))
			rec = r;
		if (r->delay_until > delay_until)
			delay_until = r->delay_until;
		if (r->limit > limit)
			limit = r->limit;
		holds = holds || r->fence != 0;
	}
	/* A free name whose stored lock-delay is over is idle but for the
	 * waiters the table has: they keep the limit they queued under. */
	limit = table->rules->restore_limit(limit, queued, n, holds,
	    delay_until > now);
	/* Another holder's tags, made before anything changes. */
	if (rec != NULL && rec->fence != 0 && !(e->lock.fence == rec->fence &&
	    e->lock.secret == rec->secret))
		tags = record_tags(table, rec, true, &nomem);
	if (nomem)
		return CORE_ERR_NOMEM;
	if (!restore_prepare(table, e, first, more, n, &fresh)) {
		tags_free(table, tags);
		return CORE_ERR_NOMEM;
	}
	e->flags &= (uint8_t)~(ENTRY_DIRTY | ENTRY_KEY0);
	e->flags |= ENTRY_RESTORED;
	if (rec != NULL)
		e->flags |= ENTRY_KEY0;
	e->user = 0;   /* what the caller noted of its state is gone */
	/* Listed without being dirty, so that an entry restored to free with
	 * nobody waiting is dropped by the next core_table_changes. */
	entry_touch(table, e);
	if (e->multi != NULL)
		e->multi->limit = limit;
	if (table->rules->restore_refuses(entry_limit(e), queued))
		refuse_waiters(table, e);
	/* The name's lock-delay, whoever holds it. */
	delay_set(table, e, delay_until);
	restore_more(table, e, first, more, n, fresh, now);
	if (rec == NULL || rec->fence == 0) {
		if (e->lock.fence != 0) {
			unbind_owner(hold_own(e));
			table->stats.held--;
			tags_free(table, e->lock.tags);
			memset(&e->lock, 0, sizeof(e->lock));
		}
		timer_clear(table, &e->timer);
		if (e->delay_until != 0)
			timer_set(table, &e->timer, e->delay_until);
	} else {
		core_table_restore_hwm(table, rec->fence);
		if (e->lock.fence == rec->fence &&
		    e->lock.secret == rec->secret) {
			/* The same holder (a renewal rolled back): keep its
			 * binding. */
			e->lock.expiry = rec->expiry;
			e->lock.lease_ms = rec->lease_ms;
			/* Its lock-delay is its grant's, as is the record's. */
		} else {
			if (e->lock.fence != 0)
				unbind_owner(hold_own(e));
			else
				table->stats.held++;
			e->lock.fence = rec->fence;
			e->lock.secret = rec->secret;
			e->lock.expiry = rec->expiry;
			e->lock.lease_ms = rec->lease_ms;
			tags_free(table, e->lock.tags);
			e->lock.tags = tags;
			/* The record keeps no grant time; its last grant or
			 * renewal is the closest it tells, and no later than
			 * now. */
			e->granted_at = rec->expiry - rec->lease_ms < now ?
			    rec->expiry - rec->lease_ms : now;
			if (rec->onclose_release && rec->owner != NULL) {
				/* Its connection is still there: bound
				 * again. */
				bind_owner(hold_own(e), rec->owner);
			} else if (rec->onclose_release) {
				/* Its connection is gone: release it as its
				 * close would have, and make that durable. */
				timer_set(table, &e->timer, e->lock.expiry);
				release_onclose(table, hold_own(e), now);
				released = true;
			}
		}
		if (!released)
			timer_set(table, &e->timer, e->lock.expiry);
	}
	/* Holders whose connection is gone go as their close would have. */
	for (i = 0; fresh != NULL && i < n; i++)
		if (fresh[i] != NULL) {
			release_onclose(table, hold_more(e, fresh[i]), now);
			fresh[i] = NULL;
		}
	restore_unprepare(table, fresh, n);
	if (released)
		return CORE_OK;
	if (holder_set(e)) {
		/* Expired holders go before anyone is admitted beside
		 * them; then the queue's head as the rest admit it. */
		reclaim(table, e, now);
		hand_off(table, e, now);
		return CORE_OK;
	}
	if (holders_count(e) == 0)
		hand_off(table, e, now);
	reclaim(table, e, now);
	return CORE_OK;
}

enum core_status
core_table_restore(struct core_table *table, const char *name,
    size_t name_len, const struct core_record *rec, core_time now)
{
	if (!name_ok(name_len))
		return CORE_ERR_BADARG;
	return restore_hashed(table, name, name_len,
	    name_hash(table, name, name_len), rec, NULL, 0, now);
}

enum core_status
core_table_restore_holders(struct core_table *table, const char *name,
    size_t name_len, const struct core_record *recs, size_t n,
    core_time now)
{
	if (!name_ok(name_len) || (n > 0 && recs == NULL))
		return CORE_ERR_BADARG;
	return restore_hashed(table, name, name_len,
	    name_hash(table, name, name_len), NULL, recs, n, now);
}

/* A hint to the processor, which changes nothing else. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

#define RESTORE_AHEAD ((size_t)8)   /* restores between two steps */
#define RESTORE_RING (2 * RESTORE_AHEAD)

/*
 * Each restore misses the cache twice, on its bucket and on the first entry
 * of its chain, both at random in a table too large for the cache.  Done
 * one by one the misses queue up; here they overlap, in a pipeline over the
 * records: record i is hashed and its bucket prefetched, RESTORE_AHEAD
 * restores later its chain's first entry is prefetched, and as many again
 * later it is restored.  The restores themselves run in order, exactly as
 * core_table_restore would run them; only the prefetches run ahead, and
 * they change nothing (a bucket gone stale because the table grew is only
 * a wasted hint).
 */
enum core_status
core_table_restore_batch(struct core_table *table,
    const struct core_restore *items, size_t n, core_time now, size_t *done)
{
	uint32_t hash[RESTORE_RING];   /* record i's at i % RESTORE_RING */
	const struct core_restore *it;
	enum core_status st;
	size_t i, j;

	for (i = 0; i < n + RESTORE_RING; i++) {
		if (i >= RESTORE_RING) {
			j = i - RESTORE_RING;
			it = &items[j];
			st = !name_ok(it->name_len) ? CORE_ERR_BADARG :
			    restore_hashed(table, it->name, it->name_len,
			    hash[j % RESTORE_RING], &it->rec, it->more,
			    it->nmore, now);
			if (st != CORE_OK) {
				*done = j;
				return st;
			}
		}
		j = i - RESTORE_AHEAD;
		if (i >= RESTORE_AHEAD && j < n && name_ok(items[j].name_len))
			PREFETCH(*bucket_at(table, hash[j % RESTORE_RING]));
		if (i < n && name_ok(items[i].name_len)) {
			hash[i % RESTORE_RING] = name_hash(table,
			    items[i].name, items[i].name_len);
			PREFETCH(bucket_at(table, hash[i % RESTORE_RING]));
		}
	}
	*done = n;
	return CORE_OK;
}
