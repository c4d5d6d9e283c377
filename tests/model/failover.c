/*
 * failover.c - the model checker's fail-over (cluster mode): what a new
 * leader makes of the committed state.  Every record goes through the
 * production take-over rule (core/takeover.c), so the checker explores
 * that rule between every pair of client actions; the table is then
 * rebuilt from it like a restart (shadow.c, restart), the clients keeping
 * what they were told.  The broken harness MODEL_HARNESS_FAILOVER_STALE_HWM
 * mints from the high-water mark the new leader had before it loaded,
 * which FencingMonotonic must catch.
 */
#include "core/takeover.h"
#include "tests/model/shadow.h"

void
model__takeover_disk(struct sys *s)
{
	int n, k;

	/* Per key: every holder's record and a free name's delay. */
	for (n = 0; n < s->sc->nnames; n++)
		for (k = 0; k < MODEL_KEYS; k++)
			if (s->disk[n][k].present)
				core_takeover_record(&s->disk[n][k].rec,
				    s->now, MODEL_LEADER_LEASE,
				    s->config.max_lock_delay_ms);
}

uint64_t
model__takeover_hwm(const struct sys *s)
{
	return (s->harness & MODEL_HARNESS_FAILOVER_STALE_HWM) ? 0 :
	    s->disk_hwm;
}
