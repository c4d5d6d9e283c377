/*
 * states.h - private to the model checker (tests/model/): the canonical
 * encoding of a state (everything that decides its future: the clock, the
 * shadow, the durable records, every client's knowledge and pending
 * request, and the table itself), and the set of states visited, keyed by
 * that encoding, which carries each state's count of complete schedules.
 */
#ifndef LOCKD_TESTS_MODEL_STATES_H
#define LOCKD_TESTS_MODEL_STATES_H

#include "tests/model/shadow.h"

#define ENCODING_MAX 2048

/* Writes the encoding of s into buf[ENCODING_MAX]; returns its length. */
size_t model__encode(const struct sys *s, uint8_t *buf);

/* One visited state: its encoding in the arena and, once explored, the
 * number of complete schedules from it. */
struct node {
	uint64_t hash;
	size_t off;
	uint32_t len;
	bool done;
	uint64_t paths;
};

/* An open-addressing hash set of nodes. */
struct visited {
	struct node *nodes;
	size_t nnodes, capnodes;
	uint32_t *slots;        /* index + 1 into nodes; 0 is empty */
	size_t capslots;
	uint8_t *arena;
	size_t arena_len, arena_cap;
};

/* Finds the state, or adds it; *added says which.  Returns its index. */
size_t model__visited_get(struct visited *v, const uint8_t *enc, size_t len,
    bool *added);
void model__visited_free(struct visited *v);

/* realloc, or the end of the run when memory is out. */
void *model__xrealloc(void *p, size_t size);

#endif
