/*
 * kinds.c - lockd_kind values and acquire options for the client tests;
 * see kinds.h.
 */
#include <string.h>

#include "tests/lib/kinds.h"

lockd_kind
harness_kind(unsigned int limit, int mode)
{
	lockd_kind k;

	memset(&k, 0, sizeof(k));
	k.size = sizeof(k);
	k.limit = limit;
	k.mode = mode;
	return k;
}

lockd_acquire_options
harness_wait_options(int64_t wait_ms, int onclose)
{
	lockd_acquire_options o;

	memset(&o, 0, sizeof(o));
	o.lease_ms = 10000;
	o.wait_ms = wait_ms;
	o.onclose = onclose;
	return o;
}
