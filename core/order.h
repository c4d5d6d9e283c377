/*
 * order.h - the lock table's second index: every entry by name, in
 * bytewise order, so that LIST walks a prefix (or resumes after a name)
 * without visiting the other locks.  Internal to core/ (core__ names).
 *
 * The index is a treap over the entries themselves (two pointers in each):
 * ordered by name, heap-ordered by the entry's keyed name hash.  That hash
 * is secret (SipHash under the table's key), so a client cannot choose
 * names that make the tree deep: its expected depth is O(log n) whatever
 * names arrive.  Nothing here allocates.
 */
#ifndef LOCKD_CORE_ORDER_H
#define LOCKD_CORE_ORDER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

/* Bytewise order of two names, as memcmp, the shorter first on a tie. */
int core__order_compare(const char *a, size_t a_len, const char *b,
    size_t b_len);

/* Links e (not yet in the tree; its name and hash set) into *root. */
void core__order_insert(struct core_entry **root, struct core_entry *e);

/* Unlinks e, which is in the tree under *root. */
void core__order_remove(struct core_entry **root, struct core_entry *e);

/* The entry with the smallest name above key (at or above it when
 * inclusive); NULL when there is none. */
struct core_entry *core__order_seek(struct core_entry *root, const char *key,
    size_t key_len, bool inclusive);

#endif
