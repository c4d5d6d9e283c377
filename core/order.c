/*
 * order.c - the name-ordered index of the lock table (see order.h).  Pure:
 * no allocation, no I/O; recursion depth is the tree's depth.
 */
#include <string.h>

#include "core/order.h"

int
core__order_compare(const char *a, size_t a_len, const char *b, size_t b_len)
{
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

	if (c != 0)
		return c;
	return a_len < b_len ? -1 : a_len > b_len ? 1 : 0;
}

static int
entry_compare(const struct core_entry *a, const struct core_entry *b)
{
	return core__order_compare(a->name, a->name_len, b->name, b->name_len);
}

/* Splits t into the entries ordered before e (*less) and after it. */
static void
split(struct core_entry *t, const struct core_entry *e,
    struct core_entry **less, struct core_entry **more)
{
	if (t == NULL) {
		*less = *more = NULL;
	} else if (entry_compare(t, e) < 0) {
		split(t->order_right, e, &t->order_right, more);
		*less = t;
	} else {
		split(t->order_left, e, less, &t->order_left);
		*more = t;
	}
}

/* Joins two trees, every name of `less` ordered before every one of
 * `more`. */
static struct core_entry *
merge(struct core_entry *less, struct core_entry *more)
{
	if (less == NULL)
		return more;
	if (more == NULL)
		return less;
	if (less->hash >= more->hash) {
		less->order_right = merge(less->order_right, more);
		return less;
	}
	more->order_left = merge(less, more->order_left);
	return more;
}

void
core__order_insert(struct core_entry **root, struct core_entry *e)
{
	struct core_entry **at = root;

	/* Down to where e's priority puts it, then split what is below. */
	while (*at != NULL && (*at)->hash > e->hash)
		at = entry_compare(e, *at) < 0 ? &(*at)->order_left :
		    &(*at)->order_right;
	split(*at, e, &e->order_left, &e->order_right);
	*at = e;
}

void
core__order_remove(struct core_entry **root, struct core_entry *e)
{
	struct core_entry **at = root;

	while (*at != e)
		at = entry_compare(e, *at) < 0 ? &(*at)->order_left :
		    &(*at)->order_right;
	*at = merge(e->order_left, e->order_right);
	e->order_left = e->order_right = NULL;
}

struct core_entry *
core__order_seek(struct core_entry *root, const char *key, size_t key_len,
    bool inclusive)
{
	struct core_entry *best = NULL;

	while (root != NULL) {
		int c = core__order_compare(root->name, root->name_len, key,
		    key_len);

		if (c > 0 || (c == 0 && inclusive)) {
			best = root;
			root = root->order_left;
		} else {
			root = root->order_right;
		}
	}
	return best;
}
