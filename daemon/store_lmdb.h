/*
 * store_lmdb.h - what the journal (store_journal.c) needs of the LMDB store
 * (store_lmdb.c) beyond the seam of store.h: a checkpoint commits the
 * journal's mark in the same transaction as its batch, recovery reads the
 * mark back, and the journal watches the room left in LMDB's map.  No
 * other store has these, so they stay behind this pair: include it from
 * store_lmdb.c and store_journal.c (and the pair's own tests, and
 * lockd-faulty's MDB_NOMETASYNC experiment) only.
 */
#ifndef LOCKD_STORE_LMDB_H
#define LOCKD_STORE_LMDB_H

#include "daemon/format.h"
#include "daemon/store.h"

struct store_lmdb;

/* store_lmdb_open() with extra mdb_env_open flags: for the power-loss
 * test's guard (MDB_NOSYNC must fail it), never for lockd itself. */
struct store_lmdb *store_lmdb_open_flags(const char *dir, size_t map_size,
    unsigned env_flags, char *err, size_t err_len);
/* The same LMDB store through the seam: commit without a mark, get,
 * load, count, close. */
struct store *store_lmdb_store(struct store_lmdb *db);
/* The seam's commit, with the journal's mark in the same transaction. */
int store_lmdb_commit_mark(struct store_lmdb *db,
    const struct store_batch *batch, const struct format_mark *mark);
/* The mark as the last checkpoint left it: 1, or 0 when there has been
 * none (all zero). */
int store_lmdb_read_mark(struct store_lmdb *db, struct format_mark *mark);
/* mdb_env_sync(env, 1): with MDB_NOMETASYNC, makes the last commit
 * durable (lockd-faulty's MDB_NOMETASYNC experiment only). */
int store_lmdb_sync(struct store_lmdb *db);
/* Bytes of the map past LMDB's last page (free pages inside not counted),
 * and its page size. */
int store_lmdb_room(struct store_lmdb *db, uint64_t *room, uint64_t *psize);

#endif
