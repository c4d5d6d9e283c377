/*
 * variants.c - the simulator's guard variants by name.  The broken rules
 * are shared with the model checker (tests/lib/broken_rules.c); the broken
 * stores and delivery paths are in world.c, and cluster mode's broken
 * take-overs and etcd stores in etcd_sim.c, next to the code they replace.
 * The simulator must report every variant, or its checks are not worth
 * their name.
 */
#include <string.h>

#include "tests/lib/broken_rules.h"
#include "tests/sim/sim.h"

const struct core_rules *
sim_variant_rules(enum sim_variant v)
{
	switch (v) {
	case SIM_VARIANT_RELEASE_IGNORES_HANDLE:
		return &broken_rules_release_ignores_handle;
	case SIM_VARIANT_RENEW_BY_FENCE_ONLY:
		return &broken_rules_holder_by_fence_only;
	case SIM_VARIANT_GRANT_REUSES_FENCE:
		return &broken_rules_grant_reuses_fence;
	case SIM_VARIANT_QUEUE_IS_LIFO:
		return &broken_rules_queue_is_lifo;
	case SIM_VARIANT_WAITERS_NEVER_GRANTED:
		return &broken_rules_waiters_never_granted;
	case SIM_VARIANT_LEASE_ENDS_EARLY:
		return &broken_rules_lease_ends_early;
	case SIM_VARIANT_LEASE_ENDS_LATE:
		return &broken_rules_lease_ends_late;
	case SIM_VARIANT_NEVER_RECLAIMS:
		return &broken_rules_never_reclaims;
	case SIM_VARIANT_GRANT_WHILE_HELD:
		return &broken_rules_grant_while_held;
	case SIM_VARIANT_RENEW_REFUSES_HOLDER:
		return &broken_rules_renew_refuses_holder;
	case SIM_VARIANT_DELAY_IGNORED:
		return &broken_rules_delay_ignored;
	case SIM_VARIANT_FORCE_ANY_FENCE:
		return &broken_rules_force_any_fence;
	case SIM_VARIANT_WATCH_FIRES_EARLY:
		return &broken_rules_watch_fires_early;
	case SIM_VARIANT_WATCH_NEVER_FIRES:
		return &broken_rules_watch_never_fires;
	case SIM_VARIANT_RID_IGNORED:
		return &broken_rules_rid_ignored;
	case SIM_VARIANT_ADMITS_OVER_LIMIT:
		return &broken_rules_admits_over_limit;
	case SIM_VARIANT_READER_BESIDE_WRITER:
		return &broken_rules_reader_beside_writer;
	case SIM_VARIANT_READER_OVERTAKES_WRITER:
		return &broken_rules_reader_overtakes_writer;
	case SIM_VARIANT_ONE_GRANT_AT_A_TIME:
		return &broken_rules_one_grant_at_a_time;
	case SIM_VARIANT_GRANT_KEEPING_THE_COUNTER:
		return &broken_rules_grant_keeps_counter;
	case SIM_VARIANT_RID_ANY_HOLDER:
		return &broken_rules_rid_any_holder;
	default:
		return NULL;
	}
}

const char *
sim_variant_name(enum sim_variant v)
{
	static const char *const names[SIM_VARIANTS] = {
		"none",
		"store-drops-batches",
		"store-forgets-hwm",
		"replies-before-commit",
		"transport-loses-reply",
		"release-ignores-handle",
		"renew-by-fence-only",
		"grant-reuses-fence",
		"queue-is-lifo",
		"waiters-never-granted",
		"lease-ends-early",
		"lease-ends-late",
		"never-reclaims",
		"grant-while-held",
		"renew-refuses-holder",
		"inflight-ungated",
		"delay-ignored",
		"force-any-fence",
		"watch-fires-early",
		"watch-never-fires",
		"rid-ignored",
		"rid-not-stored",
		"takeover-keeps-expiry",
		"takeover-stale-hwm",
		"deposed-answers",
		"timeout-taken-as-written",
		"replay-undetected",
		"admits-over-limit",
		"reader-beside-writer",
		"reader-overtakes-writer",
		"one-grant-at-a-time",
		"grant-keeping-the-counter",
		"rid-any-holder",
	};

	return (unsigned)v < SIM_VARIANTS ? names[v] : "?";
}

bool
sim_variant_parse(const char *name, enum sim_variant *v)
{
	int i;

	for (i = 0; i < SIM_VARIANTS; i++)
		if (strcmp(name, sim_variant_name((enum sim_variant)i)) == 0) {
			*v = (enum sim_variant)i;
			return true;
		}
	return false;
}
