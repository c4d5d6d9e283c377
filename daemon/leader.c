/*
 * leader.c - leadership in cluster mode.  One key, /lockd/<cluster>/leader,
 * holds the leader's --advertise address, attached to an etcd lease that
 * the leader keeps alive.  A standby reads the key every LEADER_POLL_MS
 * and, when it is gone, campaigns: a lease, then a transaction that creates
 * the key only if nobody has it.  The winner's key's create revision
 * guards every commit of its store, so a deposed leader cannot write.
 *
 * The leader serves only until its lease could have expired in etcd,
 * counted from when it sent the last keep-alive etcd answered (etcd starts
 * the TTL when it gets the request, which is later), less a margin: at
 * that moment it closes every lock connection and stands by, whether or
 * not it has heard that it lost.  So two nodes never serve at once.
 *
 * On winning it reopens the service over what etcd holds, applying the
 * take-over rule (core/takeover.h) to every record; only then does it
 * answer.  Everything runs on the loop; the load blocks it (docs/cluster.md
 * says how to size the leader lease for that).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/leader.h"
#include "daemon/log.h"
#include "daemon/store_etcd.h"

static void on_tick(uv_timer_t *t);

static uint64_t
now_ms(void)
{
	return uv_hrtime() / 1000000;
}

static void
schedule(struct leader *l, uint64_t ms)
{
	if (!l->stopped)
		uv_timer_start(&l->tick, on_tick, ms, 0);
}

static json_t *
key_json(const struct leader *l)
{
	return etcd_bytes(l->key, l->key_len);
}

static void
set_leader_hint(struct leader *l, const json_t *kv)
{
	char leader[sizeof(service_cluster(&l->srv->svc)->leader)];
	size_t len = 0;

	if (kv == NULL || etcd_field_bytes(kv, "value", true, leader,
	    sizeof(leader) - 1, &len) != 0)
		len = 0;
	leader[len] = '\0';
	/*
	 * This node's own address in a key it does not hold: its previous
	 * process's (kill -9 and a quick restart), or its own lease that
	 * etcd renewed in full after losing its majority.  Nobody serves
	 * under it, and a client sent "here" would ask again and again: it
	 * names no leader.  The key goes when its lease runs out.
	 */
	if (len > 0 && strcmp(leader, l->advertise) == 0) {
		if (!l->own_stale_key)
			log_event(LOG_WARN, "stale_leader_key", "advertise=%s "
			    "action=\"wait for its lease to run out\"",
			    l->advertise);
		l->own_stale_key = true;
		leader[0] = '\0';
	} else {
		l->own_stale_key = false;
	}
	service_cluster_follow(&l->srv->svc, leader);
}

/* Gives a lease back to etcd, not waiting for the answer. */
static void
on_revoked(void *ctx, enum etcd_result result, json_t *reply,
    const char *error)
{
	(void)ctx;
	(void)result;
	(void)reply;
	(void)error;
}

static void
give_back(struct leader *l, int64_t id)
{
	char text[24];

	if (id == 0)
		return;
	snprintf(text, sizeof(text), "%" PRId64, id);
	etcd_request(l->etcd, "/v3/lease/revoke", json_pack("{s:s}", "ID",
	    text), LEADER_REQUEST_TIMEOUT_MS, on_revoked, l);
}

/* ---- the service's life across roles --------------------------------- */

/* Reopens the service over the store as it stands now (standby: empty). */
static int
reopen_service(struct leader *l, bool leading)
{
	struct service *svc = &l->srv->svc;
	struct service_recovery rec;
	struct service_config scfg = l->scfg;
	/* service_open starts from zero: what the daemon set on the service
	 * after opening it (--auth's rules, test seams) must come along, or
	 * a node that takes over serves without authentication. */
	const struct auth_rules *auth = svc->auth;
	struct service_hooks hooks = svc->hooks;
	int rc = 0;

	service_close(svc);
	store_etcd_standby(l->store, !leading);
	if (leading)
		scfg.takeover_lease_ms = l->lease_ms;
	if (service_open(svc, &scfg, l->store, &l->clock, &rec) != 0) {
		log_event(LOG_ERROR, "recovery_error", "error=\"%s\"",
		    svc->error);
		/* A service over nothing, so that the node still answers. */
		store_etcd_standby(l->store, true);
		if (service_open(svc, &l->scfg, l->store, &l->clock,
		    &rec) != 0) {
			log_event(LOG_ERROR, "recovery_error",
			    "error=\"%s\" action=exit", svc->error);
			abort();
		}
		rc = -1;
	} else if (leading) {
		log_event(LOG_INFO, "takeover", "leases=%llu held=%llu "
		    "made_ordinary=%llu delays_restarted=%llu fence_hwm=%llu "
		    "added_ms=%" PRId64 " msg=\"each lease loaded from etcd "
		    "now ends its own length plus added_ms from now\"",
		    (unsigned long long)rec.leases,
		    (unsigned long long)service_held_count(svc),
		    (unsigned long long)rec.made_ordinary,
		    (unsigned long long)rec.delays_restarted,
		    (unsigned long long)rec.hwm, l->lease_ms);
	}
	svc->auth = auth;
	svc->hooks = hooks;
	return rc;
}

/* Stops serving: every lock connection closes (its clients go to the next
 * leader) and the service is emptied. */
static void
step_down(struct leader *l, const char *why)
{
	bool was = service_cluster(&l->srv->svc)->leading;

	uv_timer_stop(&l->deadline);
	service_cluster_follow(&l->srv->svc, NULL);
	l->state = LEADER_WATCHING;
	if (was) {
		l->losses++;
		log_event(LOG_WARN, "step_down", "role=follower reason=\"%s\"",
		    why);
		server_close_connections(l->srv);
		/* With a batch in flight the service is emptied when it
		 * ends (store_lost), not under it. */
		if (l->srv->committing)
			l->reset_pending = true;
		else
			reopen_service(l, false);
		server_kick(l->srv);
	}
	if (l->lease_id != 0 && !l->busy)
		give_back(l, l->lease_id);
	l->lease_id = 0;
	l->create_revision = 0;
}

static void
on_deadline(uv_timer_t *t)
{
	step_down(t->data, "the leader lease could expire");
}

static void
arm_deadline(struct leader *l)
{
	uint64_t now = now_ms(), left = l->valid_until > now ?
	    l->valid_until - now : 0;

#ifdef LOCKD_BROKEN_SERVE_PAST_LEASE
	/* Broken on purpose, only in build/broken/lockd-serve-past-lease
	 * (the Makefile's guards of test_cluster.c): no deadline at all. */
	(void)left;
	service_cluster_serve_until(&l->srv->svc, INT64_MAX / 2);
	return;
#endif

	uv_timer_start(&l->deadline, on_deadline, left, 0);
	/* The same moment on the service's clock, for its own check. */
	service_cluster_serve_until(&l->srv->svc,
	    l->clock.mono(l->clock.ctx) + (core_time)left);
}

/* The lease is good until sent_at + ttl: serve until a margin before. */
static void
extend(struct leader *l, uint64_t sent_at, int64_t ttl_s)
{
	l->valid_until = sent_at + (uint64_t)ttl_s * 1000 - l->margin_ms;
	arm_deadline(l);
}

static void
win(struct leader *l)
{
	if (l->srv->committing) {
		/* The last role's batch is still in flight: not yet. */
		step_down(l, "a batch of the last term is in flight");
		return;
	}
	l->state = LEADER_LEADING;
	server_close_connections(l->srv);
	store_etcd_guard(l->store, l->create_revision);
	if (reopen_service(l, true) != 0) {
		step_down(l, "cannot load the state from etcd");
		return;
	}
	if (now_ms() >= l->valid_until) {
		step_down(l, "the load took longer than the leader lease");
		return;
	}
	l->wins++;
	service_cluster_lead(&l->srv->svc, l->advertise);
	log_event(LOG_INFO, "leadership", "role=leader advertise=%s "
	    "revision=%" PRId64, l->advertise, l->create_revision);
	server_kick(l->srv);
}

/* ---- the requests ----------------------------------------------------- */

static void
unreachable(struct leader *l, bool yes, const char *error)
{
	if (yes && !service_cluster(&l->srv->svc)->etcd_unreachable)
		log_event(LOG_WARN, "etcd_unreachable", "error=\"%.200s\"",
		    error);
	/* etcd answered, and refused lockd's credentials or permissions:
	 * clients are told so, not that etcd is out of reach (the log's
	 * etcd_auth_error line has the details). */
	service_cluster_etcd(&l->srv->svc, yes, etcd_auth_refused(l->etcd));
}

static void
on_answer(void *ctx, enum etcd_result result, json_t *reply, const char *error)
{
	struct leader *l = ctx;
	json_t *kv;

	l->busy = false;
	if (l->stopped)
		return;
	if (l->state != l->asked) {
		/* The answer to a request of a state left meanwhile (a
		 * keep-alive as the deadline stepped us down): moot. */
		schedule(l, 0);
		return;
	}
	/* Refused for its credentials is as good as unreachable: lock
	 * commands get ERR UNAVAILABLE, not a hunt for a leader. */
	unreachable(l, (result == ETCD_UNKNOWN ||
	    etcd_auth_error(l->etcd) != NULL) &&
	    l->state != LEADER_LEADING, error);
	switch (l->state) {
	case LEADER_WATCHING:
		if (result != ETCD_OK)
			break;
		kv = json_array_get(json_object_get(reply, "kvs"), 0);
		set_leader_hint(l, kv);
		if (kv == NULL) {
			l->state = LEADER_GRANTING;
			schedule(l, 0);
			return;
		}
		break;
	case LEADER_GRANTING:
		if (result != ETCD_OK ||
		    (l->lease_id = etcd_field_int(reply, "ID")) == 0) {
			l->state = LEADER_WATCHING;
			break;
		}
		/* Its TTL runs from no earlier than this request's send. */
		l->valid_until = l->sent_at + (uint64_t)etcd_field_int(reply,
		    "TTL") * 1000 - l->margin_ms;
		l->state = LEADER_CAMPAIGNING;
		schedule(l, 0);
		return;
	case LEADER_CAMPAIGNING:
		if (result == ETCD_OK && json_is_true(json_object_get(reply,
		    "succeeded"))) {
			l->create_revision = etcd_field_int(json_object_get(
			    reply, "header"), "revision");
			arm_deadline(l);
			win(l);
			if (l->state == LEADER_LEADING) {
				schedule(l, l->keepalive_ms);
				return;
			}
			break;
		}
		if (result == ETCD_OK)   /* another node has the key */
			set_leader_hint(l, json_array_get(json_object_get(
			    json_object_get(json_array_get(json_object_get(
			    reply, "responses"), 0), "response_range"), "kvs"),
			    0));
		give_back(l, l->lease_id);
		l->lease_id = 0;
		l->state = LEADER_WATCHING;
		break;
	case LEADER_LEADING: {
		json_t *r = json_object_get(reply, "result");
		if (result != ETCD_OK) {
			/* No answer: the deadline stands; try again soon. */
			schedule(l, l->keepalive_ms / 2);
			return;
		}
		if (etcd_field_int(r, "TTL") <= 0) {
			step_down(l, "etcd says the leader lease is gone");
			break;
		}
		extend(l, l->sent_at, etcd_field_int(r, "TTL"));
		schedule(l, l->keepalive_ms);
		return;
	}
	}
	schedule(l, LEADER_POLL_MS);
}

static void
on_tick(uv_timer_t *t)
{
	struct leader *l = t->data;
	char id[24], ttl[24];
	json_t *body = NULL;
	const char *path = NULL;

	if (l->busy || l->stopped)
		return;
	snprintf(id, sizeof(id), "%" PRId64, l->lease_id);
	snprintf(ttl, sizeof(ttl), "%" PRId64, l->lease_ms / 1000);
	switch (l->state) {
	case LEADER_WATCHING:
		path = "/v3/kv/range";
		body = json_pack("{s:o}", "key", key_json(l));
		break;
	case LEADER_GRANTING:
		path = "/v3/lease/grant";
		body = json_pack("{s:s}", "TTL", ttl);
		break;
	case LEADER_CAMPAIGNING:
		path = "/v3/kv/txn";
		body = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:o,s:s}}],"
		    "s:[{s:{s:o}}]}",
		    "compare", "key", key_json(l), "target", "CREATE",
		    "result", "EQUAL", "create_revision", "0",
		    "success", "request_put", "key", key_json(l), "value",
		    etcd_bytes(l->advertise, strlen(l->advertise)),
		    "lease", id,
		    "failure", "request_range", "key", key_json(l));
		break;
	case LEADER_LEADING:
		path = "/v3/lease/keepalive";
		body = json_pack("{s:s}", "ID", id);
		break;
	}
	l->sent_at = now_ms();
	l->asked = l->state;
	if (etcd_request(l->etcd, path, body, LEADER_REQUEST_TIMEOUT_MS,
	    on_answer, l) != 0) {
		schedule(l, LEADER_POLL_MS);
		return;
	}
	l->busy = true;
}

static void
finishing(void *ctx)
{
	leader_stop(ctx);
}

/*
 * As an asynchronous commit ends, before the service hears of it.  A batch
 * whose outcome the store cannot know (store_etcd.c): the service cannot
 * fall back to what etcd holds, since the batch may still go in.  It can
 * once this node's leader key is gone, so it stops leading - its lease
 * given back, or run out - and empties the service; the next term, its
 * own or another node's, loads what etcd holds then.  The same emptying
 * ends a batch that was in flight as the node stepped down, and a batch
 * etcd refused because another node holds the leader key: this node was
 * deposed while its lease lived on, and must not go on believing it leads.
 */
static bool
store_lost(void *ctx)
{
	struct leader *l = ctx;
	bool broken = store_etcd_broken(l->store);
	bool deposed = store_etcd_deposed(l->store);

	if (!broken && !deposed && !l->reset_pending)
		return false;
	/* Its replies would go to connections closed already. */
	l->reset_pending = false;
	if (broken || deposed) {
		log_event(LOG_ERROR, "store_error", "op=commit error=\"%s\" "
		    "action=step_down", l->store->error);
		store_etcd_heal(l->store);
	}
	if (service_cluster(&l->srv->svc)->leading) {
		step_down(l, deposed ? "another node holds the leader key" :
		    "it must start over from what etcd holds");
	} else {
		server_close_connections(l->srv);
		reopen_service(l, false);
		server_kick(l->srv);
	}
	return true;
}

int
leader_start(struct leader *l, struct server *srv, struct store *store,
    struct etcd *etcd, const struct service_config *scfg,
    const struct service_clock *clock, const char *cluster,
    const char *advertise, int64_t lease_ms)
{
	memset(l, 0, sizeof(*l));
	l->lease_ms = lease_ms;
	l->keepalive_ms = (uint64_t)lease_ms / LEADER_KEEPALIVES_PER_LEASE;
	l->margin_ms = (uint64_t)lease_ms / LEADER_MARGIN_PER_LEASE;
	l->srv = srv;
	l->store = store;
	l->etcd = etcd;
	l->scfg = *scfg;
	l->clock = *clock;
	l->key_len = store_etcd_prefix(cluster, l->key, sizeof(l->key));
	l->key_len += (size_t)snprintf(l->key + l->key_len,
	    sizeof(l->key) - l->key_len, "leader");
	snprintf(l->advertise, sizeof(l->advertise), "%s", advertise);
	uv_timer_init(srv->loop, &l->tick);
	uv_timer_init(srv->loop, &l->deadline);
	l->tick.data = l->deadline.data = l;
	srv->finishing = finishing;
	srv->store_lost = store_lost;
	srv->finishing_ctx = l;
	log_event(LOG_INFO, "cluster", "cluster=%s advertise=%s role=follower "
	    "leader_lease_ms=%" PRId64, cluster, advertise, lease_ms);
	schedule(l, 0);
	return 0;
}

void
leader_stop(struct leader *l)
{
	char id[24], err[256];
	json_t *reply = NULL;

	if (l->stopped)
		return;
	l->stopped = true;
	uv_timer_stop(&l->tick);
	uv_timer_stop(&l->deadline);
	uv_close((uv_handle_t *)&l->tick, NULL);
	uv_close((uv_handle_t *)&l->deadline, NULL);
	service_cluster_follow(&l->srv->svc, NULL);
	etcd_detach(l->etcd);
	if (l->lease_id != 0) {
		/* The key goes with its lease: a standby takes over now
		 * rather than when the lease would have run out. */
		snprintf(id, sizeof(id), "%" PRId64, l->lease_id);
		etcd_request_sync(l->etcd, "/v3/lease/revoke",
		    json_pack("{s:s}", "ID", id), LEADER_REQUEST_TIMEOUT_MS,
		    &reply, err, sizeof(err));
		json_decref(reply);
	}
}
