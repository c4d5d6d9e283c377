/*
 * format.h - every byte lockd keeps on disk, in one place: the lease record
 * (the value stored under each held lock's name), the journal's records
 * (DIR/lockd.wal, daemon/store_journal.c) and LMDB's meta keys
 * (DIR/data.mdb, daemon/store_lmdb.c).  A change of any layout is made
 * here, with a new version, so that it is one visible place; the stores
 * and the service keep no offsets of their own.  Integers are
 * little-endian (core/bytes.h).  Pure: no I/O.
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
 * A plain lock has one record, under its name.  The holders beyond the
 * first of a semaphore or a shared lock (issue 17, not written yet) are
 * to have one record each, under "<name> NUL <fence, 8 bytes big-endian>":
 * never a name (names hold no NUL), distinct per holder, sorted after
 * their name in fence order.  Such keys reach 264 bytes, so they come
 * with a new journal magic (its operations' name length is one byte).
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
 * The journal, DIR/lockd.wal: records one after the other, each a 32-byte
 * header and then the batch's operations.
 *
 *    0  magic "LKWL" (0x4c574b4c), which is also the version: a new
 *       layout takes a new magic
 *    4  CRC32C of bytes 8..31 and then of the operations
 *    8  sequence number
 *   16  the fence high-water mark (0 without one)
 *   24  length of the operations, bytes
 *   28  flags: bit 0, the record sets the high-water mark
 *
 * The operations are daemon/store.c's batch encoding, one after the
 * other:
 *
 *    0  op: 1 put, 2 delete (enum store_op)
 *    1  name length, 1..255
 *    2  value length, 0..STORE_VALUE_MAX
 *    3  the name, then the value
 */
#define FORMAT_JOURNAL_MAGIC 0x4c574b4cu
#define FORMAT_JOURNAL_HEADER 32
#define FORMAT_JOURNAL_HAS_HWM 1u

struct format_journal_header {
	uint64_t seq;
	bool has_hwm;
	uint64_t hwm;
	uint32_t len;        /* of the operations */
};

/* Writes h's header for the len bytes of ops, CRC included. */
void format_journal_encode(const struct format_journal_header *h,
    const void *ops, unsigned char out[FORMAT_JOURNAL_HEADER]);
/* Reads a header; false when the magic is not there.  The CRC is checked
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
