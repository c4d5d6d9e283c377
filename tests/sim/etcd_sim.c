/*
 * etcd_sim.c - cluster mode in the simulator (etcd_sim.h): a cluster of
 * lockd nodes, each with its own boot clock, boot id and wall clock, over
 * one simulated etcd, with the fail-overs a failing etcd causes.
 *
 * The store of the serving node is daemon/store_etcd.c's logic over the
 * world's in-memory data: a batch, merged per name, is one transaction
 * (or, split, several in order, the mark with the first) that goes in,
 * all of it, only while the leader key's create revision is this node's
 * and the hwm key's mod revision is the one it last wrote or loaded; it
 * puts the hwm key with a value naming the transaction, so that a retry
 * after no answer tells its own replay (the first try went in) from a
 * refusal.  A transaction is tried STORE_ETCD_ATTEMPTS times without an
 * answer; with none at all, refused by the leader-key compare, or a
 * split batch gone in in part, the store is lost and the leader steps
 * down (leader.c's store_lost).  Faults: a transaction that goes in but
 * whose answer is lost, one lost on its way, a split batch's later one
 * refused, etcd answering nothing for a while, the leader key moving to
 * another node without the leader hearing of it, and the leader's
 * process paused past its lease.
 *
 * Leadership is leader.c's: keep-alives every leader lease / 6, each
 * extending the deadline to when it was sent + the lease - a tenth of it
 * (etcd starts the lease later, when it gets the keep-alive), so the
 * leader stops serving before etcd could let its key go.  A standby wins
 * once the key is gone, and the world reopens the service on its clocks
 * with the take-over rule (service_config.takeover_lease_ms, which makes
 * service_open call core/takeover.c).  Only one service runs at a time:
 * the deposed leader serves until it steps down, and the new one opens
 * then, over what etcd held when it won - the same state, since the
 * guard refuses the deposed leader's writes - at the later time, which
 * only lengthens the leases it gives.
 *
 * The broken variants of cluster mode are here, each a path of this
 * model of the daemon: a take-over without the rule, one minting from the
 * high-water mark of the node's last term, a store that takes a failed
 * compare (HTTP 200 without "succeeded") or no answer for success, and
 * one that takes its own replay for another writer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/format.h"
#include "daemon/leader.h"
#include "daemon/store_etcd.h"
#include "tests/sim/etcd_sim.h"
#include "tests/sim/world.h"

#define BOOT_MAGIC 0xe7        /* boot_id[14] of a cluster node's boot */

static uint64_t
below(struct etcd_sim *e, uint64_t n)
{
	return rng_below(&e->rng, n);
}

static bool
percent(struct etcd_sim *e, unsigned pct)
{
	return below(e, 100) < pct;
}

static bool
cluster_variant(enum sim_variant v)
{
	return v >= SIM_VARIANT_TAKEOVER_KEEPS_EXPIRY &&
	    v <= SIM_VARIANT_REPLAY_UNDETECTED;
}

bool
etcd_sim_wanted(uint64_t seed, const struct sim_options *opt)
{
	struct rng r;

	if (opt->cluster || cluster_variant(opt->variant))
		return true;
	rng_seed(&r, seed ^ 0x657463642d73696dULL);
	return rng_below(&r, 3) == 0;
}

/* A new boot of node n: its boot clock starts over near zero. */
static void
new_boot(struct world *w, int n)
{
	struct etcd_sim *e = w->etcd;
	struct etcd_node *node = &e->node[n];
	int i;

	node->boot_off = w->now - 1000 - (sim_time)below(e, 10000000);
	for (i = 0; i < 16; i++)
		node->boot_id[i] = (uint8_t)rng_next(&e->rng);
	node->boot_id[14] = BOOT_MAGIC;
	node->boot_id[15] = (uint8_t)n;
}

/* The world's clocks become node n's. */
static void
use_node(struct world *w, int n)
{
	struct etcd_node *node = &w->etcd->node[n];

	w->boot_off = node->boot_off;
	memcpy(w->boot_id, node->boot_id, 16);
	memcpy(w->sclock.boot_id, node->boot_id, 16);
	w->wall_skew = node->wall_skew;
}

int64_t
etcd_sim_wall_skew_of(const struct world *w, const uint8_t *boot_id)
{
	if (boot_id[14] != BOOT_MAGIC || boot_id[15] >= w->etcd->nnodes)
		world_fatal("a record's boot id names no node");
	return w->etcd->node[boot_id[15]].wall_skew;
}

/* Node n creates the leader key at `at`. */
static void
key_won(struct world *w, int n, sim_time at)
{
	struct etcd_sim *e = w->etcd;

	e->key_node = n;
	e->key_rev = ++e->revision;
	e->key_expiry = at + e->leader_lease;
	world_trace(w, "etcd: node %d holds the leader key (revision %lld)", n,
	    (long long)e->key_rev);
}

void
etcd_sim_init(struct world *w)
{
	struct etcd_sim *e = calloc(1, sizeof(*e));
	int i;

	if (e == NULL)
		world_fatal("out of memory");
	w->etcd = e;
	rng_seed(&e->rng, w->seed ^ 0x6c65616465720000ULL);
	e->nnodes = 2 + (int)below(e, ETCD_SIM_NODES - 1);
	e->leader_lease = 2000 + 1000 * (int64_t)below(e, 3);
	e->keepalive = e->leader_lease / LEADER_KEEPALIVES_PER_LEASE;
	e->margin = e->leader_lease / LEADER_MARGIN_PER_LEASE;
	e->fault_permille = 5 + (unsigned)below(e, 20);
	e->chunk = percent(e, 50) ? STORE_ETCD_TXN_RECORDS :
	    1 + (size_t)below(e, 2);
	for (i = 0; i < e->nnodes; i++) {
		new_boot(w, i);
		e->node[i].wall_skew = (int64_t)below(e, 3001) - 1500;
	}
	e->key_node = -1;
	key_won(w, 0, w->now);
	e->serving = 0;
	e->node[0].guard = e->key_rev;
	e->node[0].led = true;
	e->calm = true;   /* until the first open is done */
	use_node(w, 0);
	w->config.takeover_lease_ms = e->leader_lease;
	world_trace(w, "cluster: %d nodes, leader lease %lld ms", e->nnodes,
	    (long long)e->leader_lease);
}

void
etcd_sim_free(struct world *w)
{
	free(w->etcd);
	w->etcd = NULL;
}

/* ---- the store (store_etcd.c) ----------------------------------------- */

enum txn_result { TXN_OK, TXN_COMPARE_FAILED, TXN_REFUSED, TXN_NO_ANSWER };

/* One transaction at etcd: the compares, then every put and delete and
 * the hwm key, or nothing.  *applied says whether it went in. */
static enum txn_result
txn(struct world *w, struct etcd_node *n, const struct store_batch *batch,
    uint64_t hwm, const char *value, size_t len, bool *applied)
{
	struct etcd_sim *e = w->etcd;
	struct store_batch copy = *batch;
	int rc;

	*applied = false;
	if (!e->calm && (w->now < e->down_until || e->lose_unapplied > 0)) {
		if (w->now >= e->down_until)
			e->lose_unapplied--;
		world_trace(w, "etcd: the transaction is lost on its way");
		return TXN_NO_ANSWER;
	}
	if (e->key_node < 0 || e->key_rev != n->guard ||
	    e->hwm_mod != n->hwm_mod)
		return TXN_COMPARE_FAILED;
	copy.has_hwm = true;
	copy.hwm = hwm;
	e->in_txn = true;
	rc = w->store.base.ops->commit(&w->store.base, &copy);
	e->in_txn = false;
	if (rc != 0)
		return TXN_REFUSED;
	e->hwm_mod = ++e->revision;
	memcpy(e->hwm_value, value, len);
	e->hwm_value_len = len;
	*applied = true;
	if (!e->calm && e->lose_applied > 0) {
		e->lose_applied--;
		world_trace(w, "etcd: the transaction went in, its answer is "
		    "lost");
		return TXN_NO_ANSWER;
	}
	return TXN_OK;
}

/*
 * One transaction of a batch, tried again while it gets no answer (store
 * etcd.c's chunk_answer and job_step).  `later`: an earlier transaction
 * of the batch went in.  Returns 0 when it is in; -1 with the store's
 * error set, and the store broken when something of the batch may be in.
 */
static int
chunk_commit(struct world *w, struct etcd_node *n,
    const struct store_batch *part, uint64_t hwm, bool later)
{
	struct etcd_sim *e = w->etcd;
	char *error = w->store.base.error;
	size_t cap = sizeof(w->store.base.error);
	char value[ETCD_SIM_HWM_VALUE_MAX];
	bool uncertain = false, applied;
	enum sim_variant v = w->opt->variant;
	size_t len;
	int attempt;

	len = (size_t)snprintf(value, sizeof(value), "hwm=%llu leader=%lld "
	    "txn=%llu", (unsigned long long)hwm, (long long)n->guard,
	    (unsigned long long)++n->txns);
	for (attempt = 0; attempt < STORE_ETCD_ATTEMPTS; attempt++) {
		if (later && e->refuse_later && !e->calm) {
			/* An HTTP 4xx: this transaction applies nothing. */
			e->refuse_later = false;
			snprintf(error, cap, "etcd refused the batch");
			goto failed;
		}
		switch (txn(w, n, part, hwm, value, len, &applied)) {
		case TXN_NO_ANSWER:
			if (v == SIM_VARIANT_TIMEOUT_TAKEN_AS_WRITTEN)
				return 0;
			uncertain = true;
			continue;
		case TXN_OK:
			if (uncertain)
				hist_cover(w->hist, SIM_COV_ETCD_RETRY_WENT_IN);
			n->hwm_mod = e->hwm_mod;
			return 0;
		case TXN_REFUSED:
			snprintf(error, cap, "etcd refused the batch");
			goto failed;
		case TXN_COMPARE_FAILED:
			break;
		}
		/* A failed compare: etcd's failure branch shows the leader
		 * key and the hwm key. */
		if (v == SIM_VARIANT_DEPOSED_ANSWERS) {
			world_trace(w, "etcd: a failed compare taken for success");
			return 0;
		}
		if (v != SIM_VARIANT_REPLAY_UNDETECTED &&
		    e->hwm_value_len == len &&
		    memcmp(e->hwm_value, value, len) == 0) {
			world_trace(w, "etcd: the retry finds its own batch in");
			hist_cover(w->hist, SIM_COV_ETCD_REPLAY_DETECTED);
			n->hwm_mod = e->hwm_mod;
			return 0;
		}
		if (e->key_node < 0 || e->key_rev != n->guard) {
			n->deposed = true;
			hist_cover(w->hist, SIM_COV_DEPOSED_REFUSED);
			snprintf(error, cap, "not the leader: the leader key's "
			    "create revision is %lld, this node's %lld",
			    (long long)(e->key_node < 0 ? 0 : e->key_rev),
			    (long long)n->guard);
		} else if (v == SIM_VARIANT_REPLAY_UNDETECTED && !later) {
			/* Taken for another writer's change: nothing of this
			 * batch went in, and the next one compares anew. */
			n->hwm_mod = e->hwm_mod;
			snprintf(error, cap, "the hwm key changed");
			return -1;
		} else {
			snprintf(error, cap, "the high-water mark key changed "
			    "under this node");
		}
		goto failed;
	}
	snprintf(error, cap, "etcd: request timed out");
failed:
	if (uncertain || later) {
		size_t used = strlen(error);
		n->broken = true;
		hist_cover(w->hist, later ? SIM_COV_ETCD_SPLIT_BROKEN :
		    SIM_COV_ETCD_OUTCOME_UNKNOWN);
		snprintf(error + used, cap - used, "; %s: this node must start "
		    "over from etcd", later ? "the batch went in in part" :
		    "the batch may have gone in");
	}
	world_trace(w, "etcd: %s", error);
	return -1;
}

/* store_etcd.c's deletes_first: a name's keys (its own and its holders')
 * together, in name order, its deletes first. */
static bool
op_before(const struct store_batch_op *a, const struct store_batch_op *b)
{
	int c = format_key_compare(a->name,
	    format_key_name_len(a->name, a->name_len), b->name,
	    format_key_name_len(b->name, b->name_len));

	if (c != 0)
		return c < 0;
	if (a->op != b->op)
		return a->op == STORE_DEL;
	return format_key_compare(a->name, a->name_len, b->name,
	    b->name_len) < 0;
}

/*
 * The batch's operations, one per key (the last: etcd refuses a key twice
 * in one transaction), in op_before's order; returns how many.
 */
static size_t
merge(const struct store_batch *batch, struct store_batch_op *ops)
{
	struct store_batch_op op;
	size_t pos = 0, n = 0, i, j;

	while (store_batch_next(batch, &pos, &op)) {
		for (i = 0; i < n; i++)
			if (ops[i].name_len == op.name_len &&
			    memcmp(ops[i].name, op.name, op.name_len) == 0)
				break;
		ops[i] = op;
		if (i == n)
			n++;
	}
	for (i = 1; i < n; i++) {
		op = ops[i];
		for (j = i; j > 0 && op_before(&op, &ops[j - 1]); j--)
			ops[j] = ops[j - 1];
		ops[j] = op;
	}
	return n;
}

static bool
same_name(const struct store_batch_op *a, const struct store_batch_op *b)
{
	size_t n = format_key_name_len(a->name, a->name_len);

	return n == format_key_name_len(b->name, b->name_len) &&
	    memcmp(a->name, b->name, n) == 0;
}

/* store_etcd.c's chunk_end: the part from `first` ends after `chunk`
 * keys, or before, at a name's end; a name with more keys than that is
 * split, its deletes first. */
static size_t
chunk_end(const struct store_batch_op *ops, size_t nops, size_t first,
    size_t chunk)
{
	size_t end = first + chunk, cut;

	if (end >= nops)
		return nops;
	for (cut = end; cut > first && same_name(&ops[cut - 1], &ops[cut]);
	    cut--)
		;
	return cut > first ? cut : end;
}

/*
 * A batch: one transaction of at most e->chunk records after merging, or
 * several, in order, each guarded and each putting the hwm key with the
 * batch's mark - so the mark goes in with the first.  A part ends at a
 * name's end, and a name with more keys than a part takes is split, its
 * deletes first, as store_etcd.c's chunk_end does.  (The daemon splits
 * at STORE_ETCD_TXN_RECORDS, 127; a seed has at most 4 names, so half the
 * seeds split at 1 or 2 to reach that path.)
 */
int
etcd_sim_commit(struct world *w, const struct store_batch *batch)
{
	struct etcd_sim *e = w->etcd;
	struct etcd_node *n = &e->node[e->serving];
	struct store_batch_op *ops;
	uint64_t hwm;
	size_t nops, first, end, i;
	int rc = 0;

	if (n->broken) {
		snprintf(w->store.base.error, sizeof(w->store.base.error),
		    "the store is broken");
		return -1;
	}
	hwm = batch->has_hwm && batch->hwm > n->hwm ? batch->hwm : n->hwm;
	if ((ops = calloc(batch->count + 1, sizeof(*ops))) == NULL)
		world_fatal("out of memory");
	nops = merge(batch, ops);
	for (first = 0; rc == 0; first = end) {
		struct store_batch part;

		end = chunk_end(ops, nops, first, e->chunk);
		store_batch_init(&part);
		for (i = first; i < end; i++)
			if (store_batch_add(&part, ops[i].op, ops[i].name,
			    ops[i].name_len, ops[i].val, ops[i].val_len) != 0)
				world_fatal("out of memory");
		part.has_hwm = true;
		part.hwm = hwm;
		rc = chunk_commit(w, n, &part, hwm, first > 0);
		store_batch_free(&part);
		if (end >= nops)
			break;
		if (rc == 0 && first == 0)
			hist_cover(w->hist, SIM_COV_ETCD_SPLIT);
	}
	free(ops);
	if (rc == 0)
		n->hwm = hwm;
	return rc;
}

bool
etcd_sim_get_ok(struct world *w)
{
	return !w->etcd->node[w->etcd->serving].broken;
}

void
etcd_sim_loaded(struct world *w, uint64_t *hwm)
{
	struct etcd_sim *e = w->etcd;
	struct etcd_node *n = &e->node[e->serving];
	uint64_t stale = n->hwm;

	n->hwm_mod = e->hwm_mod;
	n->hwm = *hwm;
	if (w->opt->variant == SIM_VARIANT_TAKEOVER_STALE_HWM) {
		/* The mark this node had before it loaded: its last term's. */
		n->hwm = stale;
		*hwm = stale;
	}
}

bool
etcd_sim_lost(const struct world *w)
{
	const struct etcd_node *n = &w->etcd->node[w->etcd->serving];

	return n->broken || n->deposed;
}

/* ---- leadership (leader.c) -------------------------------------------- */

static void
set_deadline(struct world *w)
{
	service_cluster_serve_until(w->svc,
	    w->etcd->valid_until - w->boot_off);
}

/* Another node holds the leader key from `at` on. */
static void
key_to_another(struct world *w, sim_time at)
{
	struct etcd_sim *e = w->etcd;
	int n = (e->serving + 1 + (int)below(e, (uint64_t)e->nnodes - 1)) %
	    e->nnodes;

	key_won(w, n, at);
}

static void
faults(struct world *w)
{
	struct etcd_sim *e = w->etcd;
	sim_time pause;

	if (below(e, 1000) >= e->fault_permille)
		return;
	switch (below(e, 10)) {
	case 0:
	case 1:
	case 2:
		e->lose_applied += 1 + (int)below(e, 2);
		break;
	case 3:
	case 4:
		e->lose_unapplied += 1 + (int)below(e, 2);
		break;
	case 5:
		e->lose_unapplied += STORE_ETCD_ATTEMPTS;
		/* And a split batch's next later transaction is refused. */
		e->refuse_later = true;
		break;
	case 6:
		e->down_until = w->now + 1 + (sim_time)below(e,
		    2 * (uint64_t)e->leader_lease);
		world_trace(w, "etcd answers nothing until t=%lld",
		    (long long)e->down_until);
		break;
	case 7:
		/* Its lease lost in etcd (revoked, or its key deleted by
		 * hand) without the leader hearing of it: a standby wins. */
		if (e->key_node == e->serving) {
			world_trace(w, "etcd: node %d's key goes", e->serving);
			key_to_another(w, w->now + 1 + (sim_time)below(e,
			    LEADER_POLL_MS));
		}
		break;
	default:
		/* SIGSTOP past the lease: no keep-alive is sent, etcd lets
		 * the key go, a standby wins; then SIGCONT. */
		pause = e->leader_lease + (sim_time)below(e,
		    (uint64_t)e->leader_lease);
		world_trace(w, "node %d pauses for %lld ms", e->serving,
		    (long long)pause);
		w->now += pause;
		if (e->key_node == e->serving && e->key_expiry <= w->now)
			key_to_another(w, e->key_expiry + 1 +
			    (sim_time)below(e, LEADER_POLL_MS));
		e->ka_next = w->now;
		/* Sometimes the loop reads before its deadline timer runs:
		 * the service must refuse by itself. */
		e->resumed = percent(e, 50);
		break;
	}
}

void
etcd_sim_pass(struct world *w)
{
	struct etcd_sim *e = w->etcd;
	int round;

	if (!w->up || e->calm)
		return;
	if (e->resumed) {
		/* The pass after the one its loop read in: timers run. */
		e->resumed = false;
	} else {
		faults(w);
		if (e->resumed)
			return;
	}
	for (round = 0; round < 256 && e->ka_next <= w->now; round++) {
		sim_time at = e->ka_next;

		if (at >= e->valid_until)
			break;   /* the deadline comes first */
		if (at < e->down_until) {
			e->ka_next = at + e->keepalive / 2;
			continue;
		}
		if (e->key_node != e->serving) {
			/* etcd answers without a TTL: the lease is gone. */
			hist_cover(w->hist, SIM_COV_KEEPALIVE_STEP_DOWN);
			world_failover(w, "etcd says the leader lease is gone");
			return;
		}
		e->key_expiry = at + (sim_time)below(e, 20) + e->leader_lease;
		e->valid_until = at + e->leader_lease - e->margin;
		e->ka_next = at + e->keepalive;
	}
	set_deadline(w);
	if (w->now >= e->valid_until) {
		hist_cover(w->hist, SIM_COV_DEADLINE_STEP_DOWN);
		world_failover(w, "the leader lease could expire");
	}
}

void
etcd_sim_takeover(struct world *w, bool revoked)
{
	struct etcd_sim *e = w->etcd;
	int old = e->serving, next;
	sim_time at = w->now;

	/* store_lost: the store heals; the next term loads what etcd has. */
	e->node[old].broken = false;
	e->node[old].deposed = false;
	e->resumed = false;
	if (e->key_node == old) {
		/* Its key goes at once when its lease was given back (and
		 * etcd heard it), or when the lease runs out. */
		sim_time free_at = revoked && w->now >= e->down_until ?
		    w->now : e->key_expiry;
		if (free_at < e->down_until)
			free_at = e->down_until;   /* nobody can campaign */
		next = (int)below(e, (uint64_t)e->nnodes);
		key_won(w, next, (free_at > w->now ? free_at : w->now) + 1 +
		    (sim_time)below(e, LEADER_POLL_MS));
		at = e->key_expiry - e->leader_lease;
	} else {
		/* Another node won while this one still served. */
		next = e->key_node;
		if (e->key_expiry - e->leader_lease > at)
			at = e->key_expiry - e->leader_lease;
	}
	if (at > w->now)
		w->now = at;
	if (next == old && percent(e, 20)) {
		new_boot(w, next);
		world_trace(w, "node %d rebooted", next);
	}
	e->serving = next;
	e->node[next].guard = e->key_rev;
	e->node[next].deposed = false;
	e->node[next].broken = false;
	e->node[next].led = true;
	e->calm = true;   /* the load and its recovery commit */
	use_node(w, next);
	w->config.takeover_lease_ms =
	    w->opt->variant == SIM_VARIANT_TAKEOVER_KEEPS_EXPIRY ? 0 :
	    e->leader_lease;
	w->res->failovers++;
	hist_cover(w->hist, SIM_COV_TAKEOVER);
	world_trace(w, "node %d takes over", next);
}

void
etcd_sim_opened(struct world *w)
{
	struct etcd_sim *e = w->etcd;
	char self[32];

	snprintf(self, sizeof(self), "node%d:7420", e->serving);
	service_cluster_enable(w->svc);
	service_cluster_lead(w->svc, self);
	service_cluster_etcd(w->svc, false, false);
	/* Its lease was granted as it campaigned, just now. */
	e->valid_until = w->now + e->leader_lease - e->margin;
	e->ka_next = w->now + e->keepalive;
	set_deadline(w);
	e->calm = false;
	if (w->draining)
		etcd_sim_calm(w);
}

void
etcd_sim_calm(struct world *w)
{
	struct etcd_sim *e = w->etcd;

	e->calm = true;
	e->down_until = 0;
	e->lose_applied = e->lose_unapplied = 0;
	if (w->up && e->key_node != e->serving) {
		/* Deposed without knowing: its next keep-alive tells it. */
		hist_cover(w->hist, SIM_COV_KEEPALIVE_STEP_DOWN);
		world_failover(w, "etcd says the leader lease is gone");
		return;   /* the new leader is calm (etcd_sim_opened) */
	}
	e->valid_until = INT64_MAX / 4;
	set_deadline(w);
}
