/*
 * rng.c - the tests' seeded generator; see rng.h.  xoshiro256** (Blackman
 * and Vigna), its state filled by splitmix64 from the seed.
 */
#include "tests/lib/rng.h"

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
rng_seed(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t
rng_below(struct rng *r, uint64_t n)
{
	return n == 0 ? 0 : rng_next(r) % n;
}

int64_t
rng_range(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)rng_below(r, (uint64_t)(hi - lo + 1));
}
