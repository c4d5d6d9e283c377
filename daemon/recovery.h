/*
 * recovery.h - from a store's load to the lock table: the keys a store
 * hands on one by one (store.h's load, in key order) become one call per
 * name with all of that name's records, read and checked against their
 * keys (daemon/format.h).  The service restores each name at once from
 * there (daemon/service.c, service_open).  Pure: no I/O, no clock reads.
 *
 * A name's keys come together because every store loads in key order, and
 * in key order "<name>" < "<name> NUL <fence>" < "<name>x" (format.h).  So
 * one name is gathered at a time, however many holders it has, and a key
 * that comes after a greater one is a store's fault, reported as such
 * rather than restored twice.
 */
#ifndef LOCKD_RECOVERY_H
#define LOCKD_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "daemon/format.h"

/* One name, as recovery hands it on. */
struct recovery_name {
	const char *name;
	size_t name_len;
	/* Its records in key order: either the one under the name (a plain
	 * hold, or a free name's lock-delay), or its holders' by fence, one
	 * under each holder key - never both.  The callee may change them
	 * (the take-over rule) and keeps nothing past its return. */
	struct core_record *recs;
	size_t n;                /* 1 or more */
	size_t holders;          /* 0 (n is 1), or n: under holder keys */
	/* Some record was written in another boot (or, in cluster mode, by
	 * another node): its times were read from the wall clock, and its
	 * stored boot-clock readings mean nothing in this boot. */
	bool other_boot;
	/* Each record's wall-clock readings (format_record_walls), for its
	 * rewrite under this boot (format_record_rebase). */
	const int64_t (*walls)[2];
};

struct recovery {
	/* How records are read (format_record_decode). */
	const uint8_t *boot_id;
	int64_t max_lease_ms;
	core_time now;
	int64_t wall_now;
	/* Called once per name; non-zero stops the load with that value. */
	int (*name_fn)(void *ctx, struct recovery_name *name);
	void *ctx;
	/* The name being gathered, and the last key seen. */
	char name[CORE_NAME_MAX];
	size_t name_len;
	char last[FORMAT_KEY_MAX];
	size_t last_len;
	struct core_record *recs;
	int64_t (*walls)[2];     /* beside recs */
	size_t n, cap, holders;
	bool other_boot;
	char error[256];         /* why it stopped, when it did */
};

/* Ready to gather; name_fn and the decoding parameters set by the caller
 * (in r before or after: this clears only the gathering state). */
void recovery_init(struct recovery *r);
/*
 * The store's load callback (ctx: the struct recovery): reads the record,
 * checks it against its key, and hands the name before on once this key
 * is another name's.  -1, with why in r->error, for a key or record that
 * is unreadable or out of order, or without memory.
 */
int recovery_key(void *ctx, const char *key, size_t key_len,
    const void *val, size_t val_len);
/* After the load: hands on the last name.  0, or what name_fn said. */
int recovery_finish(struct recovery *r);
void recovery_free(struct recovery *r);

#endif
