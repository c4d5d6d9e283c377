/*
 * journal.h - the write journal of the power-loss test: the format the
 * LD_PRELOAD shim (powerloss_shim.c) appends to while lockd runs, and the
 * reader and image builder (journal.c) that turn it into crash images.
 *
 * The shim records, for the data files of the data directory only (base
 * names listed in LOCKD_PL_MATCH, default "data.mdb,lockd.wal"), every
 * write with its file offset and bytes, every truncation, and every sync,
 * all files in one stream.  A write through a descriptor opened with
 * O_DSYNC or O_SYNC is durable when it returns, so it is recorded as such.
 * Records are appended in the order the calls returned, each in one
 * write(2), after the call itself: a record that is not in the journal did
 * not complete before the power failed.  A kill can tear the last record;
 * the reader drops it.
 *
 * A crash image is: the files as they were when the journal began (the
 * base), then, in order, every write that is durable at the cut - synced
 * by a later fdatasync/fsync of its file, or written through an O_DSYNC
 * descriptor - and a seeded random subset of the others, some of them torn
 * at 512-byte sectors.  That is what a disk may hold after a power failure:
 * all that was synced, and any part of what was not.  The cut is one
 * record of the one stream, so the images of all the files are of the same
 * instant: build each with the same `nops`.
 *
 * Names are not modelled: the base is the files the run began with, so a
 * recorded name that is renamed onto or away, or removed, during the run
 * (PL_REPLACE) makes its images meaningless, and the test refuses such a
 * run.
 */
#ifndef LOCKD_TESTS_CRASH_JOURNAL_H
#define LOCKD_TESTS_CRASH_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/rng.h"

#define PL_MAGIC 0x4c504b4cu      /* "LKPL" */
#define PL_SECTOR 512
#define PL_MAX_FILES 8

enum pl_kind {
	PL_WRITE = 1,       /* len bytes at offset follow the header */
	PL_SYNC = 2,        /* fdatasync/fsync of file returned 0 */
	PL_TRUNCATE = 3,    /* the file was cut or extended to offset */
	PL_OPEN = 4,        /* file id `file` is the file named by the data */
	PL_REPLACE = 5      /* the name in the data was renamed onto or
	                     * away, or unlinked (`file` is 0, meaningless) */
};

#define PL_FLAG_DSYNC 1u  /* PL_WRITE: durable on return */

struct pl_header {
	uint32_t magic;
	uint16_t kind;
	uint16_t file;      /* file id, 0 .. PL_MAX_FILES-1 */
	uint64_t offset;
	uint64_t len;       /* bytes following the header */
	int64_t t_ns;       /* CLOCK_MONOTONIC when the call returned */
	uint32_t flags;
	uint32_t reserved;
};

/* One parsed record. */
struct pl_op {
	enum pl_kind kind;
	unsigned file;
	uint64_t offset;
	uint64_t len;
	const unsigned char *data;   /* PL_WRITE: into the journal's buffer */
	int64_t t_ms;                /* CLOCK_MONOTONIC, milliseconds */
	bool dsync;
	uint64_t end;                /* journal bytes up to this record's end */
};

struct pl_journal {
	unsigned char *buf;
	size_t size;
	struct pl_op *ops;
	size_t count;
	char names[PL_MAX_FILES][64];   /* base names of the files, by id */
};

/* Reads and parses a journal; a torn last record is dropped.  0 or -1. */
int pl_journal_load(const char *path, struct pl_journal *j);
void pl_journal_free(struct pl_journal *j);

/* What an image holds, for the report. */
struct pl_image_stats {
	size_t durable;      /* writes that had to be kept */
	size_t volatile_kept;
	size_t volatile_dropped;
	size_t torn;
};

/*
 * Builds the crash image of file `file` at the cut after the first `nops`
 * records: reads base_path (absent: an empty file), applies the records as
 * above with choices drawn from *rng, and writes out_path.  0 or -1.
 */
int pl_image_build(const struct pl_journal *j, size_t nops, unsigned file,
    const char *base_path, const char *out_path, struct rng *rng,
    struct pl_image_stats *stats);

/* The id of the file whose base name is `name`, or -1. */
int pl_journal_file(const struct pl_journal *j, const char *name);

#endif
