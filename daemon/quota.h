/*
 * quota.h - per-principal limits: how many connections, held locks and
 * waiters each principal has, so that one client cannot fill a global
 * limit (--max-held, --max-waiters, --max-connections) for everyone.
 *
 * A principal's counts live while it has a connection or a held lock.  A
 * held lock is remembered by its fence (unique to each grant) until it is
 * released, reclaimed or released on close; leases recovered from the
 * store at startup belong to nobody and are not counted.  Nothing here
 * does I/O; the service calls it at its dispatch point and from the core's
 * replies.
 */
#ifndef LOCKD_QUOTA_H
#define LOCKD_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/auth.h"

/* Each 0: no limit. */
struct quota_limits {
	uint32_t connections;
	uint32_t held;
	uint32_t waiters;
};

struct quota_entry {
	char principal[AUTH_PRINCIPAL_MAX + 1];
	uint32_t connections;
	uint32_t held;
	uint32_t waiters;      /* kept by the core (core_session.group_waiters) */
	struct quota_entry *next;   /* in its hash bucket */
};

struct quota_grant;

struct quota {
	struct quota_limits limits;
	struct quota_entry **bucket;    /* principals, chained */
	size_t bucket_count;            /* a power of two */
	size_t entries;
	struct quota_grant *grant;      /* fences held, open addressing */
	size_t grant_cap, grants;       /* grant_cap: 0 or a power of two */
};

void quota_init(struct quota *q, const struct quota_limits *limits);
void quota_free(struct quota *q);

/* principal's entry, made when absent; NULL when memory runs out. */
struct quota_entry *quota_get(struct quota *q, const char *principal);

/* Frees e when nothing counts on it any more. */
void quota_put(struct quota *q, struct quota_entry *e);

/* A grant with this fence was made to e's principal; -1: out of memory
 * (the grant is then not counted). */
int quota_grant(struct quota *q, struct quota_entry *e, uint64_t fence);

/* The grant with this fence ended; a fence not counted is ignored. */
void quota_ungrant(struct quota *q, uint64_t fence);

/* The principal a counted grant belongs to; NULL: not counted. */
struct quota_entry *quota_holder(const struct quota *q, uint64_t fence);

#endif
