/*
 * recovery.c - gathers a store's keys into names (see recovery.h).  Pure:
 * no I/O, no clock reads (the times come in the struct).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/format.h"
#include "daemon/log.h"
#include "daemon/recovery.h"

void
recovery_init(struct recovery *r)
{
	free(r->recs);
	free(r->walls);
	r->recs = NULL;
	r->walls = NULL;
	r->n = r->cap = r->holders = 0;
	r->other_boot = false;
	r->name_len = r->last_len = 0;
	r->error[0] = '\0';
}

void
recovery_free(struct recovery *r)
{
	free(r->recs);
	free(r->walls);
	r->recs = NULL;
	r->walls = NULL;
	r->n = r->cap = 0;
}

/* Hands on the name gathered so far, if any. */
static int
hand_on(struct recovery *r)
{
	struct recovery_name name;
	int rc;

	if (r->n == 0)
		return 0;
	name.name = r->name;
	name.name_len = r->name_len;
	name.recs = r->recs;
	name.n = r->n;
	name.holders = r->holders;
	name.other_boot = r->other_boot;
	name.walls = (const int64_t (*)[2])r->walls;
	rc = r->name_fn(r->ctx, &name);
	r->n = 0;
	r->holders = 0;
	r->other_boot = false;
	return rc;
}

/* Why a key or its record cannot be restored, with the key shown. */
static int
refuse(struct recovery *r, const char *key, size_t len, const char *why)
{
	char shown[LOG_VALUE_MAX + 1];
	size_t name_len = format_key_name_len(key, len), split;
	uint64_t fence;

	if (format_key_split(key, len, &split, &fence) == FORMAT_KEY_HOLDER)
		snprintf(r->error, sizeof(r->error), "%s: lock %.200s, "
		    "holder key of fence %" PRIu64, why,
		    log_value(shown, key, name_len), fence);
	else
		snprintf(r->error, sizeof(r->error), "%s: key %.200s (%zu "
		    "bytes)", why, log_value(shown, key, name_len), len);
	return -1;
}

int
recovery_key(void *ctx, const char *key, size_t key_len, const void *val,
    size_t val_len)
{
	struct recovery *r = ctx;
	enum format_key_kind kind;
	size_t name_len;
	uint64_t key_fence;
	int rc;

	kind = format_key_split(key, key_len, &name_len, &key_fence);
	if (kind == FORMAT_KEY_BAD)
		return refuse(r, key, key_len, "unreadable key");
	if (r->last_len > 0 && format_key_compare(r->last, r->last_len, key,
	    key_len) >= 0)
		return refuse(r, key, key_len, "the store's keys are out of "
		    "order (a store must load in key order)");
	memcpy(r->last, key, key_len);
	r->last_len = key_len;
	if (r->n > 0 && (name_len != r->name_len ||
	    memcmp(key, r->name, name_len) != 0)) {
		if ((rc = hand_on(r)) != 0)
			return rc;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4;
		struct core_record *p = realloc(r->recs, cap * sizeof(*p));
		int64_t (*w)[2];

		if (p == NULL)
			return refuse(r, key, key_len, "out of memory");
		r->recs = p;
		w = realloc(r->walls, cap * sizeof(*w));
		if (w == NULL)
			return refuse(r, key, key_len, "out of memory");
		r->walls = w;
		r->cap = cap;
	}
	if (!format_record_decode(val, val_len, r->boot_id, r->max_lease_ms,
	    r->now, r->wall_now, &r->recs[r->n]))
		return refuse(r, key, key_len, "unreadable record");
	if (!format_key_fits(key_fence, &r->recs[r->n]))
		return refuse(r, key, key_len, key_fence != 0 ?
		    "a holder key's record is not of that holder of a "
		    "semaphore or shared lock" : "a name's record is a "
		    "semaphore's or shared lock's holder");
	if (r->n == 0) {
		memcpy(r->name, key, name_len);
		r->name_len = name_len;
	}
	/* A name is of one kind at a time, and only a free one has a
	 * record in lock-delay: a record under the name (a plain hold, or a
	 * free name's delay) and holders under holder keys never stand
	 * together.  Its own key comes first, by key order. */
	if (key_fence != 0 && r->holders == 0 && r->n > 0)
		return refuse(r, key, key_len, r->recs[0].fence != 0 ?
		    "a plain hold and a semaphore's or shared lock's holders "
		    "on one name" : "a free name's lock-delay and holders of "
		    "it on one name");
	if (key_fence != 0)
		r->holders++;
	if (!format_record_of_boot(val, val_len, r->boot_id))
		r->other_boot = true;
	format_record_walls(val, val_len, r->walls[r->n]);
	r->n++;
	return 0;
}

int
recovery_finish(struct recovery *r)
{
	return hand_on(r);
}
