/*
 * rng.h - the seeded generator of the crash tests (splitmix64): every
 * random choice of a run comes from it, so a seed names a run.
 */
#ifndef LOCKD_TESTS_CRASH_RNG_H
#define LOCKD_TESTS_CRASH_RNG_H

#include <stdint.h>

static inline uint64_t
rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t
rng_below(uint64_t *state, uint64_t n)
{
	return rng_next(state) % n;
}

/* Uniform in [lo, hi]. */
static inline int64_t
rng_range(uint64_t *state, int64_t lo, int64_t hi)
{
	return lo + (int64_t)rng_below(state, (uint64_t)(hi - lo + 1));
}

#endif
