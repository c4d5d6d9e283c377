/*
 * bytes.h - little-endian integers in byte buffers, whatever the machine:
 * the one pair of helpers for the whole tree (the hash of core/table.c,
 * the formats of daemon/format.h, the tests that read them).  Pure; it
 * lives in core/ so that every layer may include it.
 *
 * Spelled out byte by byte rather than in a loop: compilers merge this form
 * into one load or store (with a byte swap on a big-endian machine), and
 * the loop they leave as single-byte shifts and stores, on every record of
 * every commit and every name hashed.
 */
#ifndef LOCKD_CORE_BYTES_H
#define LOCKD_CORE_BYTES_H

#include <stdint.h>

static inline void
bytes_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline uint16_t
bytes_get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void
bytes_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline uint32_t
bytes_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* The 64-bit pair as two 32-bit halves: merged all the same (GCC -O2
 * makes each one 8-byte move). */
static inline void
bytes_put_le64(unsigned char *p, uint64_t v)
{
	bytes_put_le32(p, (uint32_t)v);
	bytes_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t
bytes_get_le64(const unsigned char *p)
{
	return (uint64_t)bytes_get_le32(p) |
	    (uint64_t)bytes_get_le32(p + 4) << 32;
}

#endif
