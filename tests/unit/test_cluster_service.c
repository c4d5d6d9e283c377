/*
 * test_cluster_service.c - what cluster mode changes in the service
 * (daemon/service.c), over the in-memory store and a clock the test moves:
 * a follower answers lock commands ERR NOTLEADER (with the leader when it
 * knows it) or ERR UNAVAILABLE without etcd, and PING and STATS itself;
 * STATS ends in role=, leader= and etcd=; a leader whose lease could have
 * run out serves nothing even before leadership has stepped it down; and a
 * new leader's load applies the take-over rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/service.h"
#include "tests/lib/service_world.h"

/* A cluster-mode service (tests/lib/service_world.h), open, on its own
 * boot id. */
static struct service_world *
world_new(void)
{
	struct service_world *w = service_world_new();

	memset(w->clock.boot_id, 0xcd, 16);
	service_cluster_enable(&w->svc);   /* kept by service_open */
	service_world_open(w);
	return w;
}

/* Feeds one line, commits, and returns what the connection was told. */
static const char *
ask(struct service_world *w, const char *line)
{
	service_world_feed(w, 0, line);
	assert_int_equal(service_commit(&w->svc), 0);
	return service_world_take(w, 0);
}

static void
test_cluster_service_follower_sends_lock_commands_to_the_leader(void **state)
{
	struct service_world *w = world_new();
	const char *r;

	(void)state;
	service_cluster_follow(&w->svc, "10.0.0.2:7420");
	assert_string_equal(ask(w, "ACQUIRE a\r\n"), "ERR NOTLEADER "
	    "leader=10.0.0.2:7420 this node does not serve locks\r\n");
	assert_string_equal(ask(w, "TRY a\r\n"), "ERR NOTLEADER "
	    "leader=10.0.0.2:7420 this node does not serve locks\r\n");
	assert_string_equal(ask(w, "STATUS a\r\n"), "ERR NOTLEADER "
	    "leader=10.0.0.2:7420 this node does not serve locks\r\n");
	assert_string_equal(ask(w, "PING\r\n"), "PONG\r\n");
	r = ask(w, "STATS\r\n");
	assert_non_null(strstr(r, " fence_hwm=0 "));
	/* The leader it knows and how etcd answers (lockctl nodes). */
	assert_non_null(strstr(r, " watches=0 role=follower "
	    "leader=10.0.0.2:7420 etcd=ok\r\n"));
	service_cluster_follow(&w->svc, NULL);
	assert_non_null(strstr(ask(w, "STATS\r\n"),
	    " role=follower etcd=ok\r\n"));
	assert_string_equal(ask(w, "RELEASE a 1-0000000000000001\r\n"),
	    "ERR NOTLEADER no leader is known\r\n");
	service_cluster_etcd(&w->svc, true, false);
	assert_string_equal(ask(w, "ACQUIRE a\r\n"),
	    "ERR UNAVAILABLE etcd cannot be reached\r\n");
	assert_non_null(strstr(ask(w, "STATS\r\n"),
	    " role=follower etcd=unreachable\r\n"));
	/* etcd answered, and refused the node's credentials: said so. */
	service_cluster_etcd(&w->svc, true, true);
	assert_string_equal(ask(w, "ACQUIRE a\r\n"), "ERR UNAVAILABLE etcd "
	    "refused this node's credentials (its log says why)\r\n");
	assert_non_null(strstr(ask(w, "STATS\r\n"),
	    " role=follower etcd=refused\r\n"));
	service_world_free(w);
}

static void
test_cluster_service_leader_past_its_lease_serves_nothing(void **state)
{
	struct service_world *w = world_new();
	const char *r;

	(void)state;
	service_cluster_lead(&w->svc, "10.0.0.1:7420");
	service_cluster_serve_until(&w->svc, w->mono + 1000);
	r = ask(w, "ACQUIRE a wait=0\r\n");
	assert_int_equal(strncmp(r, "GRANTED a fence=1 ", 18), 0);
	assert_non_null(strstr(ask(w, "STATS\r\n"),
	    " role=leader leader=10.0.0.1:7420 etcd=ok\r\n"));
	/* Its timer has not fired yet: the service checks on its own, and
	 * does not name itself. */
	service_world_advance(w, 1000);
	assert_string_equal(ask(w, "ACQUIRE b wait=0\r\n"),
	    "ERR NOTLEADER no leader is known\r\n");
	assert_string_equal(ask(w, "PING\r\n"), "PONG\r\n");
	service_world_free(w);
}

static void
test_cluster_service_new_leader_load_applies_the_takeover_rule(void **state)
{
	struct service_world *w = world_new();
	const char *r;

	(void)state;
	service_cluster_lead(&w->svc, "10.0.0.1:7420");
	service_cluster_serve_until(&w->svc, w->mono + 100000);
	r = ask(w, "ACQUIRE a wait=0 lease=10s\r\n");
	assert_int_equal(strncmp(r, "GRANTED a fence=1 ", 18), 0);
	r = ask(w, "ACQUIRE b wait=0 lease=10s onclose=release\r\n");
	assert_int_equal(strncmp(r, "GRANTED b fence=2 ", 18), 0);
	service_world_advance(w, 4000);
	/* Another node loads it, with a leader lease of 3 s. */
	service_world_close(w);
	w->config.takeover_lease_ms = 3000;
	service_world_open(w);
	assert_string_equal(ask(w, "STATUS a\r\n"),
	    "STATUS a held=1 fence=1 ttl=13000 queue=0\r\n");
	/* The onclose lease is an ordinary one now: still held. */
	assert_string_equal(ask(w, "STATUS b\r\n"),
	    "STATUS b held=1 fence=2 ttl=13000 queue=0\r\n");
	service_world_free(w);
}

/*
 * After a take-over, a failed commit falls back to what the store holds.
 * A record the last leader wrote (another boot) holds that node's clock
 * readings: read by this node's wall clock, 8 s ahead of the other's, the
 * lease would end 8 s before its holder's belief does.  It gets what the
 * take-over gave it at the load instead.
 */
static void
test_cluster_service_fall_back_after_a_takeover_keeps_the_takeover_expiry(
    void **state)
{
	struct service_world *w = world_new();
	char line[128];
	const char *r, *h;

	(void)state;
	service_cluster_lead(&w->svc, "10.0.0.1:7420");
	service_cluster_serve_until(&w->svc, w->mono + 100000);
	r = ask(w, "ACQUIRE a wait=0 lease=10s\r\n");
	assert_int_equal(strncmp(r, "GRANTED a fence=1 ", 18), 0);
	h = strstr(r, "handle=");
	assert_non_null(h);
	snprintf(line, sizeof(line), "RENEW a %.*s lease=1s\r\n",
	    (int)strcspn(h + 7, " \r"), h + 7);
	/* Another node, with a wall clock 8 s ahead, takes over. */
	service_world_close(w);
	memset(w->clock.boot_id, 0xab, 16);
	w->wall += 8000;
	w->config.takeover_lease_ms = 3000;
	service_world_open(w);
	service_cluster_lead(&w->svc, "10.0.0.1:7420");
	service_cluster_serve_until(&w->svc, w->mono + 100000);
	service_world_advance(w, 500);
	assert_string_equal(ask(w, "STATUS a\r\n"),
	    "STATUS a held=1 fence=1 ttl=12500 queue=0\r\n");
	/* Its holder renews, and the commit fails: nothing changed. */
	w->store.fail_commits = 1;
	service_world_feed(w, 0, line);
	assert_int_equal(service_commit(&w->svc), -1);
	assert_string_equal(service_world_take(w, 0), "ERR UNAVAILABLE store "
	    "failed; nothing was granted or changed\r\n");
	assert_string_equal(ask(w, "STATUS a\r\n"),
	    "STATUS a held=1 fence=1 ttl=12500 queue=0\r\n");
	service_world_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_cluster_service_follower_sends_lock_commands_to_the_leader),
		cmocka_unit_test(
		    test_cluster_service_leader_past_its_lease_serves_nothing),
		cmocka_unit_test(
		    test_cluster_service_new_leader_load_applies_the_takeover_rule),
		cmocka_unit_test(
		    test_cluster_service_fall_back_after_a_takeover_keeps_the_takeover_expiry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
