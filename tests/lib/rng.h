/*
 * rng.h - the one seeded generator of the tests (xoshiro256**, seeded
 * through splitmix64): the simulator, the crash tests and the abuse tests
 * draw every random choice of a run from it, so a seed names a run.
 */
#ifndef LOCKD_TESTS_RNG_H
#define LOCKD_TESTS_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n) (modulo bias aside); 0 when n is 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Uniform in [lo, hi]; lo <= hi. */
int64_t rng_range(struct rng *r, int64_t lo, int64_t hi);

#endif
