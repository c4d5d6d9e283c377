/*
 * store_mem.c - the in-memory store of the tests (see store_mem.h).
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/format.h"
#include "tests/lib/store_mem.h"

static struct store_mem_entry *
find(struct store_mem *s, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < s->count; i++)
		if (s->entries[i].name_len == len &&
		    memcmp(s->entries[i].name, name, len) == 0)
			return &s->entries[i];
	return NULL;
}

const struct store_mem_entry *
store_mem_find(const struct store_mem *s, const char *name)
{
	return find((struct store_mem *)s, name, strlen(name));
}

static void
entry_delete(struct store_mem *s, const char *name, size_t len)
{
	struct store_mem_entry *e = find(s, name, len);

	if (e != NULL)
		*e = s->entries[--s->count];
}

/* A failed commit's settled deletes, as the journal salvages them. */
static void
salvage(struct store_mem *s, const struct store_batch *batch)
{
	struct store_batch_op op;
	size_t pos = 0, i;

	for (i = 0; store_batch_next(batch, &pos, &op); i++)
		if (op.op == STORE_DEL && store_batch_settled(batch, i))
			entry_delete(s, op.name, op.name_len);
}

static int
mem_commit(struct store *base, const struct store_batch *batch)
{
	struct store_mem *s = (struct store_mem *)base;
	struct store_batch_op op;
	size_t pos = 0;

	if (s->fail_commits > 0) {
		s->fail_commits--;
		s->failed_commits++;
		if (s->salvage_settled)
			salvage(s, batch);
		strcpy(s->base.error, "injected commit failure");
		return -1;
	}
	/* Make room first so the batch cannot half-apply. */
	if (s->count + batch->count > s->cap) {
		size_t cap = s->cap ? s->cap : 16;
		struct store_mem_entry *e;
		while (cap < s->count + batch->count)
			cap *= 2;
		if ((e = realloc(s->entries, cap * sizeof(*e))) == NULL) {
			strcpy(s->base.error, "out of memory");
			return -1;
		}
		s->entries = e;
		s->cap = cap;
	}
	while (store_batch_next(batch, &pos, &op)) {
		struct store_mem_entry *e;
		if (op.op == STORE_DEL) {
			entry_delete(s, op.name, op.name_len);
			continue;
		}
		e = find(s, op.name, op.name_len);
		if (e == NULL) {
			e = &s->entries[s->count++];
			memcpy(e->name, op.name, op.name_len);
			e->name_len = op.name_len;
		}
		memcpy(e->val, op.val, op.val_len);
		e->val_len = op.val_len;
	}
	if (batch->has_hwm)
		s->hwm = batch->hwm;
	s->commits++;
	return 0;
}

static int
mem_get(struct store *base, const char *name, size_t name_len, void *val,
    size_t *val_len)
{
	struct store_mem *s = (struct store_mem *)base;
	struct store_mem_entry *e;

	if (s->fail_reads) {
		strcpy(s->base.error, "injected read failure");
		return -1;
	}
	if ((e = find(s, name, name_len)) == NULL)
		return 0;
	memcpy(val, e->val, e->val_len);
	*val_len = e->val_len;
	return 1;
}

static int
key_order(const void *a, const void *b)
{
	const struct store_mem_entry *x = a, *y = b;

	return format_key_compare(x->name, x->name_len, y->name, y->name_len);
}

static int
mem_load(struct store *base,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	struct store_mem *s = (struct store_mem *)base;
	size_t i;
	int rc;

	if (s->fail_reads) {
		strcpy(s->base.error, "injected read failure");
		return -1;
	}
	/* In key order, as the seam asks: the entries sorted in place (their
	 * order means nothing else). */
	if (s->count > 1)
		qsort(s->entries, s->count, sizeof(*s->entries), key_order);
	for (i = 0; i < s->count; i++)
		if ((rc = fn(ctx, s->entries[i].name, s->entries[i].name_len,
		    s->entries[i].val, s->entries[i].val_len)) != 0)
			return rc;
	*hwm = s->hwm;
	return 0;
}

static void
mem_close(struct store *base)
{
	(void)base;   /* the test owns the memory: it outlives a "crash" */
}

static const struct store_ops mem_ops = {
	.commit = mem_commit,
	.get = mem_get,
	.load = mem_load,
	.close = mem_close,
};

void
store_mem_init(struct store_mem *s)
{
	memset(s, 0, sizeof(*s));
	s->base.ops = &mem_ops;
}

void
store_mem_free(struct store_mem *s)
{
	free(s->entries);
	memset(s, 0, sizeof(*s));
}
