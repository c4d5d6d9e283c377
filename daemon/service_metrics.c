/*
 * service_metrics.c - every metric of lockd in the Prometheus text
 * exposition format: the core's counters and gauges, the service's
 * histograms, store and protocol counters.  Served at /metrics by http.c.
 */
#include "daemon/config.h"
#include "daemon/service.h"

static void
counter(struct metrics_text *t, const char *name, const char *help,
    uint64_t value)
{
	metrics_printf(t, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name,
	    help, name, name, (unsigned long long)value);
}

static void
gauge(struct metrics_text *t, const char *name, const char *help,
    uint64_t value)
{
	metrics_printf(t, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name,
	    help, name, name, (unsigned long long)value);
}

void
service_render_metrics(struct service *svc, struct metrics_text *t)
{
	const struct core_stats *c = &svc->table.stats;
	const struct metrics *m = &svc->metrics;
	struct service_counters n;
	int i;

	service_counters(svc, &n);

	metrics_printf(t, "# HELP lockd_lock_acquired_total Acquire attempts "
	    "by outcome: granted (ACQUIRE or TRY), timeout (wait elapsed or "
	    "wait=0 on a busy lock), unavailable (TRY answered HELD).\n"
	    "# TYPE lockd_lock_acquired_total counter\n"
	    "lockd_lock_acquired_total{outcome=\"granted\"} %llu\n"
	    "lockd_lock_acquired_total{outcome=\"timeout\"} %llu\n"
	    "lockd_lock_acquired_total{outcome=\"unavailable\"} %llu\n",
	    (unsigned long long)n.granted, (unsigned long long)n.timeouts,
	    (unsigned long long)n.unavailable);
	counter(t, "lockd_lock_released_total",
	    "Leases freed by RELEASE with the holder's handle.", n.released);
	counter(t, "lockd_lock_released_onclose_total",
	    "Leases freed because their onclose=release connection closed.",
	    n.released_onclose);
	counter(t, "lockd_lock_lease_reclaimed_total",
	    "Leases freed because they expired.", n.reclaimed);
	counter(t, "lockd_lock_renewed_total", "Successful renewals.",
	    n.renewed);
	counter(t, "lockd_lock_conflicts_total",
	    "RENEWs refused: the handle was not the current holder's.",
	    n.conflicts);
	counter(t, "lockd_lock_forced_total",
	    "Holders freed by FORCE with their exact fence.", n.forced);
	metrics_render_histogram(t, "lockd_lock_acquire_wait_seconds",
	    "Time a grant spent queued before it was granted.",
	    &m->acquire_wait);
	metrics_render_histogram(t, "lockd_lock_hold_seconds",
	    "Time from grant to release, onclose release or reclaim.",
	    &m->hold);

	gauge(t, "lockd_connections", "Open client connections.",
	    svc->stats.connections);
	gauge(t, "lockd_locks", "Lock entries in memory.", c->locks);
	gauge(t, "lockd_leases_held", "Leases currently held.", c->held);
	gauge(t, "lockd_waiters", "ACQUIREs waiting in a queue.", c->waiters);
	gauge(t, "lockd_lock_delayed",
	    "Lock names in lock-delay now: granted to nobody until it ends.",
	    n.delayed);
	gauge(t, "lockd_watches", "WATCHes waiting for a change.",
	    n.watches);
	gauge(t, "lockd_fence_high_water_mark",
	    "The largest fence ever minted.", svc->table.hwm);

	counter(t, "lockd_store_commits_total",
	    "Store write transactions committed.", svc->stats.commits);
	counter(t, "lockd_store_commit_failures_total",
	    "Store commits that failed (their requests got ERR UNAVAILABLE).",
	    svc->stats.commit_failures);
	metrics_render_histogram(t, "lockd_store_commit_duration_seconds",
	    "Time to commit one batch, fsync included.",
	    &m->commit_duration);
	counter(t, "lockd_store_checkpoints_total",
	    "Checkpoints: the journal's changes written into LMDB.",
	    svc->store_stats.checkpoints);
	counter(t, "lockd_store_checkpoint_failures_total",
	    "Checkpoints that failed (tried again; nothing is lost).",
	    svc->store_stats.checkpoint_failures);
	counter(t, "lockd_store_direct_commits_total",
	    "Batches committed straight into LMDB: the map near full, or "
	    "the batch larger than the journal.",
	    svc->store_stats.direct_commits);
	gauge(t, "lockd_store_journal_bytes",
	    "Journal bytes written since the last checkpoint.",
	    svc->store_stats.journal_bytes);
	gauge(t, "lockd_store_journal_size_bytes",
	    "Size of the journal file.", svc->store_stats.journal_size);
	metrics_render_histogram(t, "lockd_store_commit_records",
	    "Records (held-lock puts and deletes) per committed batch.",
	    &m->commit_records);

	metrics_printf(t, "# HELP lockd_limit_hits_total Requests or "
	    "connections refused by a limit.\n"
	    "# TYPE lockd_limit_hits_total counter\n");
	for (i = 0; i < METRICS_LIMIT_COUNT; i++)
		metrics_printf(t, "lockd_limit_hits_total{kind=\"%s\"} %llu\n",
		    metrics_limit_names[i],
		    (unsigned long long)m->limit_hits[i]);
	metrics_printf(t, "# HELP lockd_protocol_errors_total Error replies "
	    "by code.\n# TYPE lockd_protocol_errors_total counter\n");
	for (i = 1; i < PROTO_ERR_COUNT; i++)
		metrics_printf(t, "lockd_protocol_errors_total{code=\"%s\"} "
		    "%llu\n", proto_error_name((enum proto_error_code)i),
		    (unsigned long long)svc->stats.protocol_errors[i]);
	counter(t, "lockd_auth_failures_total",
	    "AUTH commands refused: no line holds the token's hash.",
	    svc->stats.auth_failures);
	counter(t, "lockd_auth_denied_total",
	    "Commands answered ERR DENIED (not authenticated, or no "
	    "permission for the name).", svc->stats.denied);
	counter(t, "lockd_tls_handshakes_total",
	    "TLS handshakes completed.", svc->stats.tls_handshakes);
	counter(t, "lockd_tls_handshake_failures_total",
	    "TLS handshakes that failed or timed out (the connection was "
	    "closed).", svc->stats.tls_failures);
	counter(t, "lockd_tls_handshake_timeouts_total",
	    "TLS handshakes not finished within --tls-handshake-timeout.",
	    svc->stats.tls_timeouts);
	counter(t, "lockd_requests_total", "Requests executed.",
	    svc->stats.requests);
	counter(t, "lockd_connections_total", "Connections accepted.",
	    svc->stats.connections_total);
	metrics_printf(t, "# HELP lockd_start_time_seconds Start time of the "
	    "process since the epoch.\n# TYPE lockd_start_time_seconds gauge\n"
	    "lockd_start_time_seconds %.3f\n", m->start_time);
	metrics_printf(t, "# HELP lockd_build_info The running version.\n"
	    "# TYPE lockd_build_info gauge\n"
	    "lockd_build_info{version=\"%s\"} 1\n", LOCKD_VERSION);
}
