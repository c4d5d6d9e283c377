/*
 * table_fixture.h - a lock table (core/table.c and the files beside it)
 * for the unit tests that drive it by hand (tests/unit/test_table.c,
 * test_holders.c): its
 * sessions, seams for allocation and secrets, a sink that keeps every
 * reply in order, and the changed records drained on demand.  Everything
 * here is plain memory and explicit time: no clock, no I/O.
 */
#ifndef LOCKD_TESTS_TABLE_FIXTURE_H
#define LOCKD_TESTS_TABLE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define TABLE_FIXTURE_SESSIONS 8
#define TABLE_FIXTURE_CHANGES 1024
/* The secret of the n-th grant f->secrets counts (from setup, or from
 * where a test set it back to 0). */
#define TABLE_FIXTURE_SECRET(n) (0x5ec0000000000000ULL + (uint64_t)(n))

/* One reply as the sink saw it, with its own copies of the name and the
 * status (r.name and r.status are NULL: read name and status). */
struct table_fixture_reply {
	struct core_reply r;
	char name[CORE_NAME_MAX + 1];
	struct core_lock_status status;
};

/* One record reported by core_table_changes. */
struct table_fixture_change {
	char name[CORE_NAME_MAX + 1];
	uint64_t key_fence;       /* 0: the record under <name> */
	bool present;
	struct core_record rec;
};

struct table_fixture {
	struct core_table table;
	struct core_config config;
	struct core_session s[TABLE_FIXTURE_SESSIONS];
	struct table_fixture_reply *got;
	size_t ngot, capgot;
	struct table_fixture_change changes[TABLE_FIXTURE_CHANGES];
	size_t nchanges;
	bool hwm_changed;
	uint64_t secrets;         /* grants so far: see TABLE_FIXTURE_SECRET */
};

/* Allocations left before the seam fails; negative means never fail.
 * Setup and teardown set it back to -1. */
extern long table_fixture_alloc_budget;
/* Allocations the seam has failed, ever. */
extern unsigned long table_fixture_alloc_failures;

/* cmocka setup and teardown: *state is a started struct table_fixture
 * with the default configuration, the seams and a fixed hash key. */
int table_fixture_setup(void **state);
int table_fixture_teardown(void **state);
/* The sink that records replies into f (for a table of the test's own). */
struct core_sink table_fixture_sink(struct table_fixture *f);
/* The table and the sessions anew from f->config, no replies; and their
 * end (the sessions disconnected, the table destroyed). */
void table_fixture_start(struct table_fixture *f);
void table_fixture_stop(struct table_fixture *f);
/* Starts over, with f->config as the test has changed it. */
void table_fixture_restart(struct table_fixture *f);
/* Drains the changed records into f->changes (and f->hwm_changed) and
 * returns their count. */
size_t table_fixture_drain(struct table_fixture *f);

#endif
