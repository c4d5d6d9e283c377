/*
 * states.c - the model checker's canonical state encoding and its set of
 * visited states; see states.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/model/states.h"

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

size_t
model__encode(const struct sys *s, uint8_t *buf)
{
	struct enc x = { buf, 0 };
	int c, n;
	size_t i;

	put8(&x, s->clock);
	put8(&x, s->crashes);
	put8(&x, s->boot);
	put8(&x, s->failures);
	put8(&x, s->failovers);
	put8(&x, s->batch_open);
	for (i = 0; s->batch_open && i < s->npending; i++) {
		put8(&x, s->pending[i].client);
		put8(&x, (uint8_t)s->pending[i].kind);
		put64(&x, s->pending[i].tag);
		put64(&x, s->pending[i].handle.fence);
	}
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
		put64(&x, (uint64_t)m->req_delay);
		put64(&x, m->req_fence);
		put8(&x, m->req_watch_any);
		put8(&x, m->req_holders);
		put8(&x, m->req_rid != NULL ? strlen(m->req_rid) + 1 : 0);
		if (m->req_rid != NULL)
			put(&x, m->req_rid, strlen(m->req_rid));
		put8(&x, m->req_limit);
		put8(&x, m->req_limit >> 8);
		put8(&x, m->req_shared);
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
			put8(&x, k->shared);
			put64(&x, k->limit);
		}
	}
	for (n = 0; n < s->sc->nnames; n++) {
		const struct shadow *sh = &s->sh[n];
		const struct core_entry *e = core_table_find(&s->table,
		    s->sc->names[n], strlen(s->sc->names[n]));
		const struct core_link *l;
		const struct core_holder *o;
		int k;

		put8(&x, sh->nheld);
		for (k = 0; k < sh->nheld; k++) {
			const struct shold *h = &sh->h[k];

			put8(&x, h->holder);
			put8(&x, h->onclose);
			put8(&x, h->shared);
			put64(&x, h->fence);
			put64(&x, h->secret);
			put64(&x, (uint64_t)h->expiry);
			put64(&x, (uint64_t)h->lease_ms);
			put64(&x, (uint64_t)h->delay_ms);
			put8(&x, h->rid_len);
			put(&x, h->rid, h->rid_len);
		}
		put64(&x, sh->limit);
		put64(&x, (uint64_t)sh->delay_until);
		put8(&x, sh->qlen);
		put(&x, sh->queue, sh->qlen);
		put64(&x, sh->max_delivered);

		/* The disk's keys in the order they sit in (which slot a
		 * key takes depends on it). */
		for (k = 0; k < MODEL_KEYS; k++) {
			const struct disk_record *d = &s->disk[n][k];

			put8(&x, d->present);
			if (!d->present)
				continue;
			put64(&x, d->key);
			put8(&x, d->holder);
			put64(&x, d->rec.fence);
			put64(&x, d->rec.secret);
			put64(&x, (uint64_t)d->rec.expiry);
			put64(&x, (uint64_t)d->rec.lease_ms);
			put8(&x, d->rec.onclose_release);
			put64(&x, (uint64_t)d->rec.delay_ms);
			put64(&x, (uint64_t)d->rec.delay_until);
			put64(&x, d->rec.limit);
			put8(&x, d->rec.shared);
			put8(&x, d->rec.rid_len);
			put(&x, d->rec.rid, d->rec.rid_len);
		}

		put8(&x, e != NULL);
		if (e == NULL)
			continue;
		put64(&x, e->lock.fence);
		put64(&x, e->lock.secret);
		put64(&x, (uint64_t)e->lock.expiry);
		put64(&x, (uint64_t)e->lock.lease_ms);
		put8(&x, core_entry_owner(e) ? model__client_of(s, core_entry_owner(e)) : NOBODY);
		put8(&x, e->timer.slot != UINT32_MAX);
		put64(&x, (uint64_t)e->timer.when);
		put64(&x, (uint64_t)core_tags_delay(e->lock.tags));
		put64(&x, (uint64_t)core_entry_delay_until(e));
		put8(&x, e->cause);
		put8(&x, e->flags);
		{
			const char *rid;
			size_t len = core_tags_rid(e->lock.tags, &rid);

			put8(&x, len);
			put(&x, rid, len);
		}
		/* The name's limit, not whether it has a core_multi: an
		 * empty multi (left by a waiter, a WATCH or a lock-delay) and
		 * none behave the same, and where the table keeps a field is
		 * no state of the model's. */
		put64(&x, e->multi != NULL ? e->multi->limit : 1);
		for (o = e->multi != NULL ? e->multi->holders : NULL;
		    o != NULL; o = o->next) {
			const char *rid;
			size_t len = core_tags_rid(o->lock.tags, &rid);

			put64(&x, o->lock.fence);
			put64(&x, o->lock.secret);
			put64(&x, (uint64_t)o->lock.expiry);
			put64(&x, (uint64_t)o->lock.lease_ms);
			put64(&x, (uint64_t)core_tags_delay(o->lock.tags));
			put8(&x, o->owner ? model__client_of(s, o->owner) :
			    NOBODY);
			put8(&x, o->shared);
			put8(&x, len);
			put(&x, rid, len);
		}
		put8(&x, 0xed);
		for (l = e->multi != NULL ? e->multi->watchers.next : NULL;
		    l != NULL && l != &e->multi->watchers; l = l->next) {
			const struct core_waiter *w = (const void *)
			    ((const char *)l -
			    offsetof(struct core_waiter, queue_link));

			put8(&x, model__client_of(s, w->session));
			put64(&x, w->tag);
			put64(&x, w->watch_fence);
			put8(&x, w->timer.slot != UINT32_MAX);
			put64(&x, (uint64_t)w->timer.when);
		}
		put8(&x, 0xef);
		for (l = core_entry_queue_first(e); l != core_entry_queue(e); l = l->next) {
			const struct core_waiter *w = (const void *)
			    ((const char *)l -
			    offsetof(struct core_waiter, queue_link));

			put8(&x, model__client_of(s, w->session));
			put64(&x, w->tag);
			put64(&x, (uint64_t)w->lease_ms);
			put8(&x, w->onclose_release);
			put64(&x, (uint64_t)core_tags_delay(w->tags));
			put8(&x, w->shared);
			{
				const char *rid;
				size_t len = core_tags_rid(w->tags, &rid);

				put8(&x, len);
				put(&x, rid, len);
			}
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
		else if (t->kind == 2) {
			const struct core_holder *o = (const void *)
			    ((const char *)t -
			    offsetof(struct core_holder, timer));

			put8(&x, 0x40 | name_index(s, o->entry));
			put64(&x, o->lock.fence);
		} else
			put8(&x, model__client_of(s, ((const struct core_waiter *)
			    (const void *)((const char *)t -
			    offsetof(struct core_waiter, timer)))->session));
	}
	/* So does the order of a session's onclose leases. */
	for (c = 0; c < s->sc->nclients; c++) {
		const struct core_link *l;

		for (l = s->sess[c].onclose.next; l != &s->sess[c].onclose;
		    l = l->next)
			put8(&x, name_index(s, ((const struct core_bond *)
			    (const void *)((const char *)l - offsetof(
			    struct core_bond, onclose_link)))->entry));
		put8(&x, 0xdd);
		for (l = s->sess[c].onclose_more.next;
		    l != &s->sess[c].onclose_more; l = l->next)
			put64(&x, ((const struct core_holder *)(const void *)
			    ((const char *)l - offsetof(struct core_holder,
			    onclose_link)))->lock.fence);
		put8(&x, 0xdc);
	}
	return x.len;
}

/* ---- the set of visited states ---------------------------------------- */

static uint64_t
hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return model__mix64(h);
}

void *
model__xrealloc(void *p, size_t size)
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
	uint32_t *slots = model__xrealloc(NULL, cap * sizeof(*slots));

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
size_t
model__visited_get(struct visited *v, const uint8_t *enc, size_t len, bool *added)
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
		v->nodes = model__xrealloc(v->nodes, v->capnodes * sizeof(*v->nodes));
	}
	while (v->arena_len + len > v->arena_cap) {
		v->arena_cap = v->arena_cap ? 2 * v->arena_cap : 1 << 22;
		v->arena = model__xrealloc(v->arena, v->arena_cap);
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

void
model__visited_free(struct visited *v)
{
	free(v->nodes);
	free(v->slots);
	free(v->arena);
	memset(v, 0, sizeof(*v));
}
