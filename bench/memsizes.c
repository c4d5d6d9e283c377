/*
 * memsizes.c - where a held lock's bytes go, by structure: the sizes of
 * the core's per-lock structures on this build and the malloc chunks they
 * take for a given name length.  bench/mem.sh prints it beside the
 * measured bytes of RSS per lock (docs/performance.md, "Memory per held
 * plain lock").  Reads nothing but the core's header; no I/O beyond
 * stdout.
 *
 *   build/bench/memsizes [NAME_LEN]      # 11 by default: "held/999999"
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"

/* glibc's malloc chunk for a request of n bytes: n plus the 8-byte
 * header, rounded up to 16, and never less than 32. */
static size_t
chunk(size_t n)
{
	size_t c = (n + 8 + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

int
main(int argc, char **argv)
{
	long name_len = argc > 1 ? strtol(argv[1], NULL, 10) : 11;
	size_t entry;

	if (name_len < 1 || name_len > CORE_NAME_MAX) {
		fprintf(stderr, "memsizes: a name length is 1 to %d\n",
		    CORE_NAME_MAX);
		return 64;
	}
	entry = offsetof(struct core_entry, name) + (size_t)name_len;
	printf("memsizes name_len=%ld entry_bytes=%zu entry_chunk=%zu "
	    "entry_name_offset=%zu core_lock=%zu core_tags_header=%zu "
	    "core_bond=%zu core_holder=%zu holder_chunk=%zu core_multi=%zu "
	    "core_waiter=%zu waiter_chunk=%zu bucket=%zu heap_slot=%zu\n",
	    name_len, entry, chunk(entry), offsetof(struct core_entry, name),
	    sizeof(struct core_lock), offsetof(struct core_tags, bytes),
	    sizeof(struct core_bond), sizeof(struct core_holder),
	    chunk(sizeof(struct core_holder)), sizeof(struct core_multi),
	    sizeof(struct core_waiter), chunk(sizeof(struct core_waiter)),
	    sizeof(struct core_entry *), sizeof(struct core_timer *));
	return 0;
}
