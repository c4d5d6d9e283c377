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
#include "core/table_int.h"

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

struct core_tags *
core__tags_make(struct core_table *table, const char *label, size_t label_len,
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
		b->owner = NULL;
	}
	return t;
}

struct core_tags *
core__tags_bondable(struct core_table *table, struct core_tags *tags)
{
	const char *label, *rid;
	size_t label_len = core_tags_label(tags, &label);
	size_t rid_len = core_tags_rid(tags, &rid);
	struct core_tags *t;
	bool nomem;

	if (tags != NULL && (tags->parts & CORE_TAGS_BOND))
		return tags;
	t = core__tags_make(table, label, label_len, rid, rid_len,
	    core_tags_delay(tags), true, &nomem);
	if (t != NULL && tags != NULL)
		table->config.free(tags);
	return t;
}

void
core__tags_free(struct core_table *table, struct core_tags *t)
{
	if (t != NULL)
		table->config.free(t);
}

void
core__waiter_free(struct core_table *table, struct core_waiter *w)
{
	core__tags_free(table, w->tags);
	table->config.free(w);
}

void
core__holder_list_free(struct core_table *table, struct core_holder *h)
{
	struct core_holder *next;

	for (; h != NULL; h = next) {
		next = h->next;
		if (h->owner != NULL)
			link_remove(&h->onclose_link);
		core__tags_free(table, h->lock.tags);
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
	core__holder_list_free(table, e->multi->holders);
	core__holder_list_free(table, e->multi->ended);
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
			while (!queue_empty(e) || entry_watched(e)) {
				struct core_waiter *w = container_of(
				    !queue_empty(e) ? e->multi->queue.next :
				    e->multi->watchers.next,
				    struct core_waiter, queue_link);
				link_remove(&w->queue_link);
				link_remove(&w->session_link);
				w->session->waiter_count--;
				if (!w->watch &&
				    w->session->group_waiters != NULL)
					(*w->session->group_waiters)--;
				core__waiter_free(table, w);
			}
			if (core_entry_owner(e) != NULL)
				link_remove(&core_tags_bond(
				    e->lock.tags)->onclose_link);
			core__tags_free(table, e->lock.tags);
			multi_free(table, e);
			table->config.free(e);
		}
	}
	table->config.free(table->buckets);
	table->config.free(table->heap);
	memset(table, 0, sizeof(*table));
}

/* ---- heap room -------------------------------------------------------- */

bool
core__heap_reserve(struct core_table *table, size_t extra)
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

void
core__timer_set(struct core_table *table, struct core_timer *t, core_time when)
{
	t->when = when;
	if (t->slot == CORE__HEAP_OUT)
		core__heap_push(table->heap, &table->heap_len, t);
	else
		core__heap_update(table->heap, table->heap_len, t);
}

void
core__timer_clear(struct core_table *table, struct core_timer *t)
{
	core__heap_remove(table->heap, &table->heap_len, t);
}

/* ---- entries ---------------------------------------------------------- */

uint32_t
core__name_hash(const struct core_table *table, const char *name, size_t len)
{
	return (uint32_t)core_name_hash(table->config.hash_key, name, len);
}

struct core_entry **
core__bucket_at(const struct core_table *table, uint32_t hash)
{
	return &table->buckets[hash & (table->bucket_count - 1)];
}

static struct core_entry *
chain_find(const struct core_table *table, uint32_t hash, const char *name,
    size_t name_len)
{
	struct core_entry *e;

	for (e = *core__bucket_at(table, hash); e != NULL; e = e->hash_next)
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
	return chain_find(table, core__name_hash(table, name, name_len), name,
	    name_len);
}

struct core_entry *
core__entry_find(struct core_table *table, const char *name, size_t len)
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
	    !core__heap_reserve(table, locks - table->stats.locks))
		return CORE_ERR_NOMEM;
	return CORE_OK;
}

void
core__entry_touch(struct core_table *table, struct core_entry *e)
{
	if (e->flags & ENTRY_LISTED)
		return;
	e->flags |= ENTRY_LISTED;
	e->changed_next = table->changed;
	table->changed = e;
}

void
core__entry_dirty(struct core_table *table, struct core_entry *e)
{
	e->flags |= ENTRY_DIRTY;
	core__entry_touch(table, e);
}

struct core_entry *
core__entry_get_hashed(struct core_table *table, const char *name, size_t len,
    uint32_t hash)
{
	/* One hash serves the look-up and the insertion: the buckets do
	 * not move before the new entry is linked in. */
	struct core_entry *e, **bucket;

	if ((e = chain_find(table, hash, name, len)) != NULL)
		return e;
	if (!core__heap_reserve(table, 1))
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
	bucket = core__bucket_at(table, hash);
	e->hash_next = *bucket;
	*bucket = e;
	core__order_insert(&table->order_root, e);
	table->stats.locks++;
	/* A new entry is idle until used: list it so it is dropped if the
	 * operation that made it leaves it idle. */
	core__entry_touch(table, e);
	if (table->stats.locks > table->bucket_count)
		table_grow(table);
	return e;
}

struct core_entry *
core__entry_get(struct core_table *table, const char *name, size_t len)
{
	return core__entry_get_hashed(table, name, len,
	    core__name_hash(table, name, len));
}

bool
core__entry_idle(const struct core_entry *e)
{
	return e->lock.fence == 0 && queue_empty(e) &&
	    core_entry_delay_until(e) == 0 && !entry_watched(e) &&
	    (e->multi == NULL || (e->multi->holders == NULL &&
	    e->multi->ended == NULL));
}

void
core__entry_drop(struct core_table *table, struct core_entry *e)
{
	struct core_entry **p = core__bucket_at(table, e->hash);

	while (*p != e)
		p = &(*p)->hash_next;
	*p = e->hash_next;
	core__order_remove(&table->order_root, e);
	core__timer_clear(table, &e->timer);
	table->stats.locks--;
	multi_free(table, e);
	table->config.free(e);
}

/* ---- replies ---------------------------------------------------------- */

void
core__emit(struct core_table *table, enum core_reply_kind kind,
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

void
core__reply_simple(struct core_table *table, enum core_reply_kind kind,
    struct core_session *session, uint64_t tag, struct core_entry *e)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	core__emit(table, kind, session, tag, e, &r);
}

void
core__reply_limit(struct core_table *table, struct core_session *session,
    uint64_t tag, struct core_entry *e, enum core_limit_kind kind)
{
	struct core_reply r;

	memset(&r, 0, sizeof(r));
	r.limit = kind;
	table->stats.limit_hits++;
	core__emit(table, CORE_REPLY_LIMIT, session, tag, e, &r);
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
	core__status_fill(table, e, now, status);
	return status->held || status->queue > 0 || status->delay_ms > 0;
}
