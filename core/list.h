/*
 * list.h - the intrusive doubly linked list used by the core and the
 * daemon: an empty list (or an unlinked node) points at itself, so removal
 * never needs to know the head.
 */
#ifndef LOCKD_CORE_LIST_H
#define LOCKD_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

#define container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

static inline void
link_init(struct core_link *l)
{
	l->prev = l->next = l;
}

static inline bool
link_empty(const struct core_link *l)
{
	return l->next == l;
}

static inline void
link_append(struct core_link *head, struct core_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void
link_remove(struct core_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

#endif
