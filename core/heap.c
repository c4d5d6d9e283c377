/*
 * heap.c - the binary min-heap of deadlines shared by every lock: lease
 * expiries and waiters' wait limits.  O(log n) insert, remove and update;
 * the earliest deadline is at slot 0, so one timer in the daemon serves
 * them all.  The heap stores pointers to timers embedded in their owners and
 * keeps each timer's slot up to date.  It never allocates: the table
 * reserves room before it creates anything that carries a timer.
 */
#include "core/heap.h"

static bool
timer_before(const struct core_timer *a, const struct core_timer *b)
{
	if (a->when != b->when)
		return a->when < b->when;
	/* Lease expiries first: an expiry and a wait limit at the same
	 * instant hand the lock on before the waiter gives up. */
	return a->kind < b->kind;
}

static void
place(struct core_timer **heap, size_t slot, struct core_timer *t)
{
	heap[slot] = t;
	t->slot = (uint32_t)slot;
}

static void
sift_up(struct core_timer **heap, size_t slot)
{
	struct core_timer *t = heap[slot];

	while (slot > 0) {
		size_t parent = (slot - 1) / 2;
		if (!timer_before(t, heap[parent]))
			break;
		place(heap, slot, heap[parent]);
		slot = parent;
	}
	place(heap, slot, t);
}

static void
sift_down(struct core_timer **heap, size_t len, size_t slot)
{
	struct core_timer *t = heap[slot];

	for (;;) {
		size_t child = 2 * slot + 1;
		if (child >= len)
			break;
		if (child + 1 < len && timer_before(heap[child + 1], heap[child]))
			child++;
		if (!timer_before(heap[child], t))
			break;
		place(heap, slot, heap[child]);
		slot = child;
	}
	place(heap, slot, t);
}

void
core__heap_push(struct core_timer **heap, size_t *len, struct core_timer *t)
{
	place(heap, *len, t);
	(*len)++;
	sift_up(heap, *len - 1);
}

void
core__heap_remove(struct core_timer **heap, size_t *len, struct core_timer *t)
{
	size_t slot = t->slot;
	struct core_timer *last;

	if (slot == CORE__HEAP_OUT)
		return;
	t->slot = CORE__HEAP_OUT;
	(*len)--;
	if (slot == *len)
		return;
	last = heap[*len];
	place(heap, slot, last);
	if (slot > 0 && timer_before(last, heap[(slot - 1) / 2]))
		sift_up(heap, slot);
	else
		sift_down(heap, *len, slot);
}

void
core__heap_update(struct core_timer **heap, size_t len, struct core_timer *t)
{
	size_t slot = t->slot;

	if (slot > 0 && timer_before(t, heap[(slot - 1) / 2]))
		sift_up(heap, slot);
	else
		sift_down(heap, len, slot);
}
