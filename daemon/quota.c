/*
 * quota.c - per-principal counts and the fences each principal holds
 * (quota.h).  No I/O and no clock: the service asks and tells.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/quota.h"

/* A fence held and the principal it was granted to; fence 0: empty. */
struct quota_grant {
	uint64_t fence;
	struct quota_entry *entry;
};

#define QUOTA_FIRST_BUCKETS 16
#define QUOTA_FIRST_GRANTS 64

void
quota_init(struct quota *q, const struct quota_limits *limits)
{
	memset(q, 0, sizeof(*q));
	if (limits != NULL)
		q->limits = *limits;
}

void
quota_free(struct quota *q)
{
	size_t i;

	for (i = 0; i < q->bucket_count; i++) {
		struct quota_entry *e = q->bucket[i], *next;
		for (; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(q->bucket);
	free(q->grant);
	memset(q, 0, sizeof(*q));
}

/* FNV-1a: principals come from the auth file, certificates and uids. */
static size_t
principal_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static int
buckets_grow(struct quota *q)
{
	size_t count = q->bucket_count ? q->bucket_count * 2 :
	    QUOTA_FIRST_BUCKETS, i;
	struct quota_entry **b = calloc(count, sizeof(*b));

	if (b == NULL)
		return -1;
	for (i = 0; i < q->bucket_count; i++) {
		struct quota_entry *e = q->bucket[i], *next;
		for (; e != NULL; e = next) {
			size_t at = principal_hash(e->principal) & (count - 1);
			next = e->next;
			e->next = b[at];
			b[at] = e;
		}
	}
	free(q->bucket);
	q->bucket = b;
	q->bucket_count = count;
	return 0;
}

struct quota_entry *
quota_get(struct quota *q, const char *principal)
{
	struct quota_entry *e;
	size_t len = strlen(principal), at;

	if (len > AUTH_PRINCIPAL_MAX)
		return NULL;
	if (q->bucket_count != 0) {
		at = principal_hash(principal) & (q->bucket_count - 1);
		for (e = q->bucket[at]; e != NULL; e = e->next)
			if (strcmp(e->principal, principal) == 0)
				return e;
	}
	if (q->entries >= q->bucket_count && buckets_grow(q) != 0)
		return NULL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	memcpy(e->principal, principal, len + 1);
	at = principal_hash(principal) & (q->bucket_count - 1);
	e->next = q->bucket[at];
	q->bucket[at] = e;
	q->entries++;
	return e;
}

void
quota_put(struct quota *q, struct quota_entry *e)
{
	struct quota_entry **p;

	if (e == NULL || e->connections != 0 || e->held != 0 ||
	    e->waiters != 0)
		return;
	p = &q->bucket[principal_hash(e->principal) & (q->bucket_count - 1)];
	for (; *p != NULL; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			q->entries--;
			free(e);
			return;
		}
	}
}

/* Fibonacci hashing spreads the sequential fences over the table. */
static size_t
grant_slot(const struct quota *q, uint64_t fence)
{
	return (size_t)((fence * 11400714819323198485ull) >> 17) &
	    (q->grant_cap - 1);
}

static void
grant_put(struct quota *q, uint64_t fence, struct quota_entry *e)
{
	size_t i = grant_slot(q, fence);

	while (q->grant[i].fence != 0 && q->grant[i].fence != fence)
		i = (i + 1) & (q->grant_cap - 1);
	if (q->grant[i].fence == 0)
		q->grants++;
	else
		q->grant[i].entry->held--;
	q->grant[i].fence = fence;
	q->grant[i].entry = e;
}

static int
grants_grow(struct quota *q)
{
	struct quota_grant *old = q->grant;
	size_t old_cap = q->grant_cap, i;

	q->grant_cap = old_cap ? old_cap * 2 : QUOTA_FIRST_GRANTS;
	if ((q->grant = calloc(q->grant_cap, sizeof(*q->grant))) == NULL) {
		q->grant = old;
		q->grant_cap = old_cap;
		return -1;
	}
	q->grants = 0;
	for (i = 0; i < old_cap; i++)
		if (old[i].fence != 0)
			grant_put(q, old[i].fence, old[i].entry);
	free(old);
	return 0;
}

int
quota_grant(struct quota *q, struct quota_entry *e, uint64_t fence)
{
	if (fence == 0 || e == NULL)
		return 0;
	/* At most half full, so that probes stay short. */
	if ((q->grants + 1) * 2 > q->grant_cap && grants_grow(q) != 0)
		return -1;
	e->held++;
	grant_put(q, fence, e);
	return 0;
}

struct quota_entry *
quota_holder(const struct quota *q, uint64_t fence)
{
	size_t i;

	if (fence == 0 || q->grant_cap == 0)
		return NULL;
	for (i = grant_slot(q, fence); q->grant[i].fence != 0;
	    i = (i + 1) & (q->grant_cap - 1))
		if (q->grant[i].fence == fence)
			return q->grant[i].entry;
	return NULL;
}

void
quota_ungrant(struct quota *q, uint64_t fence)
{
	struct quota_entry *e;
	size_t i, j, k;

	if (fence == 0 || q->grant_cap == 0)
		return;
	i = grant_slot(q, fence);
	while (q->grant[i].fence != fence) {
		if (q->grant[i].fence == 0)
			return;
		i = (i + 1) & (q->grant_cap - 1);
	}
	e = q->grant[i].entry;
	/* Backward-shift deletion keeps every probe chain whole. */
	for (j = i;;) {
		j = (j + 1) & (q->grant_cap - 1);
		if (q->grant[j].fence == 0)
			break;
		k = grant_slot(q, q->grant[j].fence);
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			q->grant[i] = q->grant[j];
			i = j;
		}
	}
	q->grant[i].fence = 0;
	q->grant[i].entry = NULL;
	q->grants--;
	e->held--;
	quota_put(q, e);
}
