/*
 * heap.h - internal to core/: the deadline heap used by the lock table.
 */
#ifndef LOCKD_CORE_HEAP_H
#define LOCKD_CORE_HEAP_H

#include "core/core.h"

#define CORE__HEAP_OUT UINT32_MAX

/* Adds t; the caller guarantees room for one more pointer. */
void core__heap_push(struct core_timer **heap, size_t *len,
    struct core_timer *t);
/* Removes t if it is in the heap; a no-op otherwise. */
void core__heap_remove(struct core_timer **heap, size_t *len,
    struct core_timer *t);
/* Restores order after t->when changed; t must be in the heap. */
void core__heap_update(struct core_timer **heap, size_t len,
    struct core_timer *t);

#endif
