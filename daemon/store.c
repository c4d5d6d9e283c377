/*
 * store.c - store batches: a flat, append-only encoding of the operations
 * one group commit applies (laid out in daemon/format.h: the journal
 * writes it as it is).  No I/O here.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/format.h"
#include "daemon/store.h"

_Static_assert(STORE_KEY_MAX == FORMAT_KEY_MAX, "a key is format.h's");
_Static_assert(STORE_VALUE_MAX == FORMAT_RECORD_SIZE,
    "a value is format.h's record");

void
store_batch_init(struct store_batch *batch)
{
	memset(batch, 0, sizeof(*batch));
}

void
store_batch_reset(struct store_batch *batch)
{
	batch->len = 0;
	batch->count = 0;
	batch->has_hwm = false;
	batch->hwm = 0;
	batch->holder_keys = false;
}

void
store_batch_free(struct store_batch *batch)
{
	free(batch->ops);
	free(batch->settled);
	store_batch_init(batch);
}

int
store_batch_add(struct store_batch *batch, enum store_op op, const char *name,
    size_t name_len, const void *val, size_t val_len)
{
	size_t need = 3 + name_len + val_len;
	char *p;

	if (name_len == 0 || name_len > STORE_KEY_MAX ||
	    val_len > STORE_VALUE_MAX)
		return -1;
	if (batch->len + need > batch->cap) {
		size_t cap = batch->cap ? batch->cap * 2 : 4096;
		while (cap < batch->len + need)
			cap *= 2;
		if ((p = realloc(batch->ops, cap)) == NULL)
			return -1;
		batch->ops = p;
		batch->cap = cap;
	}
	p = batch->ops + batch->len;
	/* A key of 256 bytes or more sets bit 7 of the op (format.h). */
	p[0] = (char)(unsigned char)(op | (name_len > 255 ?
	    FORMAT_JOURNAL_LONG_KEY : 0));
	p[1] = (char)(unsigned char)(name_len & 0xff);
	p[2] = (char)(unsigned char)val_len;
	memcpy(p + 3, name, name_len);
	if (val_len)
		memcpy(p + 3 + name_len, val, val_len);
	batch->len += need;
	if (memchr(name, '\0', name_len) != NULL)
		batch->holder_keys = true;
	/* Not settled, whatever an earlier use of the batch marked here. */
	if (batch->count / 8 < batch->settled_cap)
		batch->settled[batch->count / 8] &=
		    (unsigned char)~(1u << (batch->count % 8));
	batch->count++;
	return 0;
}

void
store_batch_settle(struct store_batch *batch)
{
	size_t i, cap;
	unsigned char *p;

	if (batch->count == 0)
		return;
	i = batch->count - 1;
	if (i / 8 >= batch->settled_cap) {
		cap = batch->settled_cap ? batch->settled_cap * 2 : 64;
		while (cap <= i / 8)
			cap *= 2;
		if ((p = realloc(batch->settled, cap)) == NULL)
			return;
		memset(p + batch->settled_cap, 0, cap - batch->settled_cap);
		batch->settled = p;
		batch->settled_cap = cap;
	}
	batch->settled[i / 8] |= (unsigned char)(1u << (i % 8));
}

bool
store_batch_settled(const struct store_batch *batch, size_t i)
{
	return i < batch->count && i / 8 < batch->settled_cap &&
	    (batch->settled[i / 8] >> (i % 8) & 1) != 0;
}

bool
store_batch_next(const struct store_batch *batch, size_t *pos,
    struct store_batch_op *op)
{
	const unsigned char *p;

	if (*pos >= batch->len)
		return false;
	p = (const unsigned char *)batch->ops + *pos;
	op->op = (enum store_op)(p[0] & ~FORMAT_JOURNAL_LONG_KEY);
	op->name_len = p[1] + (p[0] & FORMAT_JOURNAL_LONG_KEY ? 256u : 0u);
	op->val_len = p[2];
	op->name = (const char *)p + 3;
	op->val = p + 3 + op->name_len;
	*pos += 3 + op->name_len + op->val_len;
	return true;
}
