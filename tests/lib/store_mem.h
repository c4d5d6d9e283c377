/*
 * store_mem.h - an in-memory store for the unit tests and the simulator:
 * the seam of daemon/store.h (commit, get, load in key order, close; no
 * count, no stats), its batches all or nothing - a failed commit applies none of
 * its deletes either, as LMDB alone, unless told to keep its settled
 * deletes as the journal's full map does - with switches to make commits
 * and reads fail.  What a successful commit wrote
 * survives a simulated crash of the service (the store object outlives it).
 */
#ifndef LOCKD_TESTS_STORE_MEM_H
#define LOCKD_TESTS_STORE_MEM_H

#include "daemon/store.h"

struct store_mem_entry {
	char name[STORE_KEY_MAX];
	size_t name_len;
	unsigned char val[STORE_VALUE_MAX];
	size_t val_len;
};

struct store_mem {
	struct store base;
	struct store_mem_entry *entries;
	size_t count, cap;
	uint64_t hwm;
	/* Fault switches. */
	int fail_commits;        /* the next N commits fail */
	bool fail_reads;         /* get and load fail */
	bool salvage_settled;    /* a failed commit still applies the
	                          * batch's settled deletes (store.h) */
	/* Counters. */
	uint64_t commits, failed_commits;
};

void store_mem_init(struct store_mem *s);
void store_mem_free(struct store_mem *s);
/* The stored value of name, or NULL. */
const struct store_mem_entry *store_mem_find(const struct store_mem *s,
    const char *name);

#endif
