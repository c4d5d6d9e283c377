/*
 * format.h - every byte lockd keeps on disk, in one place: the lease record
 * (the value stored under each held lock's name, or each holder's key),
 * the store keys, the journal's records (DIR/lockd.wal,
 * daemon/store_journal.c) and LMDB's meta keys (DIR/data.mdb,
 * daemon/store_lmdb.c).  A change of any layout is made here, with a new
 * version, so that it is one visible place; the stores and the service
 * keep no offsets of their own.  Integers are little-endian
 * (core/bytes.h), but for a holder key's fence, big-endian so that it
 * sorts.  Pure: no I/O.
 */
#ifndef LOCKD_FORMAT_H
#define LOCKD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/*
 * The lease record, version 3: 96 bytes, then the owner label and the rid
 * as long as they are (96 to 224 bytes in all; a plain lock with neither
 * takes 96, less than version 2's 160).  Versions 2 (160 bytes) and 1
 * (64 bytes) are still read: version 2 as a record with no rid and a
 * plain (limit 1, exclusive) hold, version 1 also with no owner label and
 * no lock-delay.  Each record is one holder: version 3 carries everything
 * a holder of issue 17's lock kinds has (rid, mode, limit), so that
 * counting semaphores and shared locks need no further layout - only
 * more records per name (a plain lock keeps its one record under its
 * name, exactly as before).
 *
 *    0  version (3)
 *    1  flags: bit 0, onclose=release; bit 1, a shared (mode=shared) hold
 *    2  the id of the connection it is bound to, 48 bits (this process's;
 *       zero unless onclose=release)
 *    8  fence
 *   16  secret
 *   24  lease, ms
 *   32  expiry on the boot clock, ms
 *   40  expiry on the wall clock, ms since the epoch
 *   48  boot id, 16 bytes: the boot whose clock bytes 32..39 and
 *       72..79 are on
 * version 2 adds:
 *   64  the holder's lock-delay, ms
 *   72  the name's lock-delay ends, on the boot clock, ms (0: none)
 *   80  the same on the wall clock, ms since the epoch (0: none)
 *   88  owner label length L, 0..64
 *   89  7 bytes of zeros (version 2)
 *   96  owner label, 64 bytes, zero-padded (version 2)
 * version 3 instead:
 *   89  rid length R, 0..64
 *   90  the name's limit, 16 bits (0 or 1: a plain lock)
 *   92  4 bytes of zeros
 *   96  owner label, L bytes
 * 96+L  rid, R bytes; the record is 96 + L + R bytes, no more, no less
 *
 * A plain lock has one record, under its name; each holder of a
 * semaphore or a shared lock has one of its own, under a holder key (the
 * store keys, below).
 *
 * Fence 0 (no holder) is valid only from version 2 on with a lock-delay
 * running: a free name in lock-delay, whose record keeps the delay across
 * kill -9 and power loss.  A record of another version or size is
 * unreadable: recovery stops rather than guess (a newer lockd's data in
 * an older one).
 */
#define FORMAT_RECORD_VERSION 3
#define FORMAT_RECORD_FIXED 96     /* version 3 without label and rid */
#define FORMAT_RECORD_SIZE (FORMAT_RECORD_FIXED + CORE_OWNER_MAX + \
    CORE_RID_MAX)                  /* the longest, 224 */
#define FORMAT_RECORD_V2 2
#define FORMAT_RECORD_V2_SIZE 160
#define FORMAT_RECORD_V1 1
#define FORMAT_RECORD_V1_SIZE 64

/* Writes rec into out and returns its length (96..FORMAT_RECORD_SIZE). */
size_t format_record_encode(const struct core_record *rec,
    const uint8_t boot_id[16], core_time now, int64_t wall_now,
    unsigned char out[FORMAT_RECORD_SIZE]);
/*
 * Decodes a record into the core's terms; false when it is unreadable.
 * Within the boot that wrote it the boot-clock expiry stands, untouched by
 * wall-clock steps; after a reboot only the wall-clock expiry is known,
 * and no lease may then run longer than max_lease_ms from now.  A name's
 * lock-delay is read the same way, under the same cap.
 */
bool format_record_decode(const void *val, size_t len,
    const uint8_t boot_id[16], int64_t max_lease_ms, core_time now,
    int64_t wall_now, struct core_record *rec);
/*
 * True when a readable record was written in the boot boot_id names, so
 * that its clock readings are this boot's; false for another boot's (in
 * cluster mode: another node's, or an earlier term's after a reboot).
 */
bool format_record_of_boot(const void *val, size_t len,
    const uint8_t boot_id[16]);
/*
 * The wall-clock readings of a readable record: walls[0] the end of its
 * lease, walls[1] the end of its name's lock-delay (0: none, and always 0
 * in a version 1 record).
 */
void format_record_walls(const void *val, size_t len, int64_t walls[2]);
/*
 * A record read from another boot, written again for this one: as
 * format_record_encode, with rec's boot-clock readings and boot_id, but
 * with the wall-clock readings the record had (format_record_walls).  A
 * restart later in this boot reads the boot clock, untouched by wall-clock
 * steps; a reboot after it reads the lease's end as the boot that granted
 * it set it, not as this boot's wall clock (or its max_lease_ms cap at
 * the load) moved it.
 */
size_t format_record_rebase(const struct core_record *rec,
    const uint8_t boot_id[16], const int64_t walls[2],
    unsigned char out[FORMAT_RECORD_SIZE]);

/*
 * The store keys.  Every store maps keys to records; a key is one of:
 *
 *   <name>                       a plain lock's record (limit 1,
 *                                exclusive), or a free name's in
 *                                lock-delay (fence 0), of either kind
 *   <name> NUL <fence, 8 bytes   one holder's record of a MULTI name
 *    big-endian>                 (limit > 1, or held shared): never
 *                                under <name>
 *
 * A name holds no NUL, so a key with one is a holder key, and one without
 * is a name.  Big-endian, so that byte order is fence order; and since NUL
 * sorts before every other byte, "<name>" < "<name> NUL <fence>" <
 * "<name>x" for every x: in key order (LMDB's, etcd's) a name's keys come
 * together, its own first, then its holders by fence.  A holder key is
 * 1 + 9 to CORE_NAME_MAX + 9 = 264 bytes.
 *
 * A key that is neither is unreadable, and so is a record under a key it
 * does not fit (format_key_fits): recovery stops rather than guess.
 */
#define FORMAT_HOLDER_SUFFIX 9          /* NUL and the fence */
#define FORMAT_KEY_MAX (CORE_NAME_MAX + FORMAT_HOLDER_SUFFIX)   /* 264 */

/*
 * The key of (name, key_fence), as the core reports a change: the name
 * itself for key_fence 0, else the holder key of that fence.  name_len is
 * 1..CORE_NAME_MAX.  Returns the key's length.
 */
size_t format_key(const char *name, size_t name_len, uint64_t key_fence,
    char out[FORMAT_KEY_MAX]);

/* Key order, LMDB's and etcd's: bytes compared as unsigned, and a key
 * before every longer key it begins.  <0, 0, >0 as memcmp. */
int format_key_compare(const void *a, size_t a_len, const void *b,
    size_t b_len);

enum format_key_kind {
	FORMAT_KEY_NAME,      /* <name>; *key_fence is 0 */
	FORMAT_KEY_HOLDER,    /* <name> NUL <fence>; the fence is not 0 */
	FORMAT_KEY_BAD        /* neither: unreadable */
};
/*
 * Splits a key into its name (the first *name_len bytes of key) and its
 * fence.  A key is bad when it is empty or longer than FORMAT_KEY_MAX, when
 * its name is longer than CORE_NAME_MAX, or when it has a NUL that is not
 * followed by exactly 8 bytes of a fence other than 0.
 */
enum format_key_kind format_key_split(const void *key, size_t len,
    size_t *name_len, uint64_t *key_fence);

/* The length of a key's name: up to its NUL, if it has one (a holder
 * key), else the whole key.  No check: format_key_split checks. */
size_t format_key_name_len(const void *key, size_t len);

/*
 * Whether a decoded record may stand under a key of key_fence: under a
 * name (0), a plain hold or a free name in lock-delay; under a holder
 * key, a hold of that very fence of a MULTI name (limit > 1, or shared).
 */
bool format_key_fits(uint64_t key_fence, const struct core_record *rec);

/*
 * The journal, DIR/lockd.wal: records one after the other, each a 32-byte
 * header and then the batch's operations.
 *
 *    0  magic "LKW2" (0x32574b4c) or "LKWL" (0x4c574b4c), which is
 *       also the version: a new layout takes a new magic (below)
 *    4  CRC32C of bytes 8..31 and then of the operations
 *    8  sequence number
 *   16  the fence high-water mark (0 without one)
 *   24  length of the operations, bytes
 *   28  flags: bit 0, the record sets the high-water mark
 *
 * The operations are daemon/store.c's batch encoding, one after the
 * other:
 *
 *    0  op: 1 put, 2 delete (enum store_op); bit 7, the key is 256
 *       bytes or longer: its length is 256 + byte 1
 *    1  key length, 1..255 (bit 7 of byte 0 clear), else 0..8
 *    2  value length, 0..STORE_VALUE_MAX
 *    3  the key, then the value
 *
 * "LKWL", the magic before holder keys, is the same layout with no holder
 * key (so no key past 255 bytes, and bit 7 never set).  A record takes
 * "LKW2" only when one of its keys is a holder's, "LKWL" otherwise: a
 * journal without semaphores or shared locks in it is one a lockd before
 * holder keys still replays whole, after a crash too (a lockd stops its
 * replay at a magic it does not know, as at the journal's end, so a
 * record of "LKW2" would drop it and every record after it).  Both
 * replay here.  A key up to 255 bytes is the same 3 + key + value bytes
 * under either magic: a plain lock's record costs what it did.
 */
#define FORMAT_JOURNAL_MAGIC 0x32574b4cu        /* "LKW2": holder keys */
#define FORMAT_JOURNAL_MAGIC_V1 0x4c574b4cu     /* "LKWL": none */
#define FORMAT_JOURNAL_LONG_KEY 0x80u           /* in an operation's byte 0 */
#define FORMAT_JOURNAL_HEADER 32
#define FORMAT_JOURNAL_HAS_HWM 1u

struct format_journal_header {
	uint64_t seq;
	bool has_hwm;
	uint64_t hwm;
	uint32_t len;        /* of the operations */
	bool holder_keys;    /* a holder's key among them: "LKW2" */
};

/* Writes h's header for the len bytes of ops, CRC included. */
void format_journal_encode(const struct format_journal_header *h,
    const void *ops, unsigned char out[FORMAT_JOURNAL_HEADER]);
/* Reads a header; false when neither magic is there.  The CRC is checked
 * apart, once the operations are read. */
bool format_journal_decode(const unsigned char in[FORMAT_JOURNAL_HEADER],
    struct format_journal_header *h);
/* Whether the header's CRC covers it and the len bytes of ops. */
bool format_journal_check(const unsigned char in[FORMAT_JOURNAL_HEADER],
    const void *ops, size_t len);

/* CRC32C (Castagnoli, reflected, as in iSCSI and ext4): crc is 0 to begin,
 * or the CRC of the bytes before, to go on. */
uint32_t format_crc32c(uint32_t crc, const void *data, size_t len);

/*
 * LMDB, DIR/data.mdb: two databases, "leases" (name -> lease record) and
 * "meta", whose keys are:
 *
 *   "hwm"  8 bytes: the fence high-water mark
 *   "wal"  24 bytes, the journal's mark as its last checkpoint left it:
 *            0  the last sequence number LMDB holds
 *            8  the offset in lockd.wal where the next record starts
 *           16  flags: bit 0, a clean stop (nothing after the mark)
 *
 * Version 1 has no version key: a new layout adds one.
 */
#define FORMAT_LMDB_LEASES "leases"
#define FORMAT_LMDB_META "meta"
#define FORMAT_META_HWM "hwm"
#define FORMAT_META_HWM_SIZE 8
#define FORMAT_META_MARK "wal"
#define FORMAT_META_MARK_SIZE 24

struct format_mark {
	uint64_t seq;        /* LMDB holds every record up to this one */
	uint64_t off;        /* where the next record starts */
	bool clean;          /* and there is none: a clean stop */
};

void format_mark_encode(const struct format_mark *mark,
    unsigned char out[FORMAT_META_MARK_SIZE]);
/* False, and an all-zero mark, when the value is not a mark. */
bool format_mark_decode(const void *val, size_t len,
    struct format_mark *mark);

#endif
