/*
 * store_etcd.h - the etcd store (store_etcd.c): cluster mode's records,
 * in etcd under /lockd/<cluster>/, behind the seam of store.h.
 */
#ifndef LOCKD_STORE_ETCD_H
#define LOCKD_STORE_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/etcd.h"
#include "daemon/store.h"

/* etcd 3.4 takes at most 128 operations per transaction branch
 * (--max-txn-ops): the hwm key's put and 127 records. */
#define STORE_ETCD_TXN_RECORDS 127
/* Tries of one transaction that gets no answer (a replay is told apart). */
#define STORE_ETCD_ATTEMPTS 3
/* Records a page of the load reads. */
#define STORE_ETCD_PAGE 1000
#define STORE_ETCD_CLUSTER_MAX 64

/*
 * The store of the cluster named cluster (checked by
 * store_etcd_cluster_valid), over a client that stays open while it does.
 * Each request to etcd has timeout_ms.  On failure returns NULL and writes
 * why to err.
 */
struct store *store_etcd_open(struct etcd *etcd, const char *cluster,
    long timeout_ms, char *err, size_t err_len);

/*
 * Guards every commit from now on with the leader key's create revision
 * (leader.c calls it on winning): etcd then refuses a commit of this node
 * once another node holds the key.  0, the start, means "no leader key".
 */
void store_etcd_guard(struct store *store, int64_t create_revision);

/*
 * A standby store holds nothing for its node: load gives no record, get
 * finds none, commit fails.  A node that does not lead keeps its store so,
 * and its (empty) service over it, until it wins.
 */
void store_etcd_standby(struct store *store, bool standby);

/* Whether an outcome it cannot know stopped the store (store_etcd.c). */
bool store_etcd_broken(const struct store *store);
/* Whether etcd refused a batch because the leader key is another node's:
 * this node was deposed, whatever its lease says.  Cleared by
 * store_etcd_guard and store_etcd_heal. */
bool store_etcd_deposed(const struct store *store);
/*
 * Makes a broken store usable again, for a node that has given up its
 * leadership: once its leader key is gone no transaction of its term can
 * go in any more, so what etcd holds is final, and the next term starts
 * from it (the load).
 */
void store_etcd_heal(struct store *store);

/* 1 to STORE_ETCD_CLUSTER_MAX of [A-Za-z0-9._-]. */
bool store_etcd_cluster_valid(const char *cluster);
/* The cluster's key prefix, "/lockd/<cluster>/", and its length. */
size_t store_etcd_prefix(const char *cluster, char *out, size_t cap);

#endif
