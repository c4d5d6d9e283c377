/*
 * test_service.c - the service layer (daemon/service.c) against a simulated
 * clock and the in-memory store: group commit, reply ordering, failed
 * commits, recovery and its clock rules, limits, and the fault-injection
 * seams.  No sockets: connections are fed bytes and their output is read
 * (tests/lib/service_world.h).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/format.h"
#include "daemon/service.h"
#include "daemon/service_int.h"   /* the commit path's keys */
#include "tests/lib/service_world.h"

/* The shared world's calls, by this file's short names. */
static void
feed(struct service_world *w, int c, const char *text)
{
	service_world_feed(w, c, text);
}

static char *
take(struct service_world *w, int c)
{
	return service_world_take(w, c);
}

/* Feeds connection c a request granted at once, commits, and keeps the
 * GRANTED's handle in h. */
static void
grant_handle(struct service_world *w, int c, const char *request, char *h)
{
	feed(w, c, request);
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, c), h);
}

static void
test_service_granted_reply_waits_for_the_commit(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a\n");
	assert_string_equal(take(w, 0), "");
	assert_int_equal(w->store.commits, 0);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_int_equal(w->store.commits, 1);
	assert_non_null(store_mem_find(&w->store, "a"));
	assert_int_equal(w->store.hwm, 1);
	assert_string_equal(take(w, 0),
	    "GRANTED a fence=1 handle=1-0000000000001000 lease=30000\r\n");
	service_world_free(w);
}

static void
test_service_one_commit_serves_every_request_of_a_pass(void **state)
{
	struct service_world *w = service_world_new();
	char line[64];

	(void)state;
	service_world_open(w);
	for (int i = 0; i < 4; i++) {
		snprintf(line, sizeof(line), "ACQUIRE n%d\nRENEW n%d 1-00\n",
		    i, i);
		feed(w, i, line);
	}
	assert_int_equal(service_commit(&w->svc), 0);
	assert_int_equal(w->store.commits, 1);
	assert_int_equal(w->store.count, 4);
	for (int i = 0; i < 4; i++)
		assert_non_null(strstr(take(w, i), "GRANTED"));
	service_world_free(w);
}

static void
test_service_released_reply_does_not_wait_for_the_commit(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a\n", h);
	service_world_feedf(w, 0, "RELEASE a %s\nRELEASE a %s\n", h, h);
	assert_string_equal(take(w, 0), "RELEASED a\r\nNOTHELD a\r\n");
	assert_non_null(store_mem_find(&w->store, "a"));
	service_commit(&w->svc);
	assert_null(store_mem_find(&w->store, "a"));
	service_world_free(w);
}

static void
test_service_releases_ride_along_with_the_next_grant_or_wait_briefly(
    void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a\n");
	assert_int_equal(service_end_pass(&w->svc), 0);
	assert_int_equal(w->store.commits, 1);
	service_world_handle(take(w, 0), h);

	/* A release alone does not cost a commit at once... */
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	service_end_pass(&w->svc);
	assert_int_equal(w->store.commits, 1);
	assert_int_equal(service_next_deadline(&w->svc),
	    w->mono + SERVICE_LAZY_COMMIT_MS);
	/* ...it rides along with the next grant's commit... */
	feed(w, 0, "ACQUIRE b\n");
	service_end_pass(&w->svc);
	assert_int_equal(w->store.commits, 2);
	assert_null(store_mem_find(&w->store, "a"));
	assert_non_null(store_mem_find(&w->store, "b"));
	service_world_handle(take(w, 0), h);

	/* ...or is committed once it has waited long enough. */
	service_world_feedf(w, 0, "RELEASE b %s\n", h);
	service_end_pass(&w->svc);
	w->mono += SERVICE_LAZY_COMMIT_MS - 1;
	service_end_pass(&w->svc);
	assert_int_equal(w->store.commits, 2);
	w->mono += 1;
	service_end_pass(&w->svc);
	assert_int_equal(w->store.commits, 3);
	assert_null(store_mem_find(&w->store, "b"));
	assert_int_equal(service_next_deadline(&w->svc), CORE_NEVER);
	service_world_free(w);
}

static void
test_service_replies_keep_request_order_behind_a_waiting_acquire(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE x\n", h);

	feed(w, 1, "ACQUIRE x\nPING\nTRY y\n");
	service_commit(&w->svc);
	assert_string_equal(take(w, 1), "");
	/* The TRY ran at arrival although its reply waits. */
	feed(w, 0, "STATUS y\n");
	assert_string_equal(take(w, 0),
	    "STATUS y held=1 fence=2 ttl=30000 queue=0\r\n");

	service_world_feedf(w, 0, "RELEASE x %s\n", h);
	assert_string_equal(take(w, 0), "RELEASED x\r\n");
	assert_string_equal(take(w, 1), "");
	service_commit(&w->svc);
	assert_string_equal(take(w, 1),
	    "GRANTED x fence=3 handle=3-0000000000001002 lease=30000\r\n"
	    "PONG\r\n"
	    "GRANTED y fence=2 handle=2-0000000000001001 lease=30000\r\n");
	service_world_free(w);
}

static void
test_service_failed_commit_answers_unavailable_and_grants_nothing(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	w->store.fail_commits = 1;
	feed(w, 0, "ACQUIRE a\nPING\n");
	assert_int_equal(service_commit(&w->svc), -1);
	assert_string_equal(take(w, 0),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n"
	    "PONG\r\n");
	assert_int_equal(w->store.count, 0);
	feed(w, 1, "STATUS a\n");
	assert_string_equal(take(w, 1),
	    "STATUS a held=0 fence=0 ttl=0 queue=0\r\n");
	/* Service goes on; the burnt fence is never reused. */
	feed(w, 1, "ACQUIRE a\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 1), "GRANTED a fence=2 "));
	assert_int_equal(w->svc.stats.commit_failures, 1);
	service_world_free(w);
}

/* The value of key in the STATS reply of connection c. */
static uint64_t
stat_of(struct service_world *w, int c, const char *key)
{
	char want[64];
	const char *line, *p;

	feed(w, c, "STATS\n");
	line = take(w, c);
	snprintf(want, sizeof(want), " %s=", key);
	p = strstr(line, want);
	assert_non_null(p);
	return strtoull(p + strlen(want), NULL, 10);
}

/*
 * STATS counts what clients were told: a grant, a renewal and a release
 * that failed with their batch were told ERR UNAVAILABLE, and are not
 * counted as granted, renewed or released; /metrics says the same.
 */
static void
test_service_stats_count_what_clients_were_told(void **state)
{
	struct service_world *w = service_world_new();
	struct metrics_text t = { NULL, 0, 0, 0 };
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a lease=10s\n", h);
	w->store.fail_commits = 1;
	feed(w, 1, "TRY b\n");
	service_world_feedf(w, 0, "RENEW a %s\n", h);
	assert_int_equal(service_commit(&w->svc), -1);
	assert_non_null(strstr(take(w, 1), "ERR UNAVAILABLE"));
	assert_non_null(strstr(take(w, 0), "ERR UNAVAILABLE"));
	assert_int_equal(stat_of(w, 2, "granted"), 1);
	assert_int_equal(stat_of(w, 2, "renewed"), 0);
	service_render_metrics(&w->svc, &t);
	assert_non_null(strstr(t.data,
	    "lockd_lock_acquired_total{outcome=\"granted\"} 1\n"));
	assert_non_null(strstr(t.data, "lockd_lock_renewed_total 0\n"));
	assert_non_null(strstr(t.data,
	    "lockd_protocol_errors_total{code=\"UNAVAILABLE\"} 2\n"));
	free(t.data);
	service_world_free(w);
}

static void
test_service_failed_commit_fails_a_grant_queued_behind_a_waiting_acquire(
    void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE x\n", h);
	/* conn 1 waits for x; its TRY y is granted at once, reply queued. */
	feed(w, 1, "ACQUIRE x\nTRY y\n");
	w->store.fail_commits = 1;
	assert_int_equal(service_commit(&w->svc), -1);
	/* Later batches commit; the failed grant must never be told. */
	service_world_feedf(w, 0, "RELEASE x %s\n", h);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 1),
	    "GRANTED x fence=3 handle=3-0000000000001002 lease=30000\r\n"
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	assert_null(store_mem_find(&w->store, "y"));
	service_world_free(w);
}

static void
test_service_failed_commit_of_a_renewal_keeps_the_durable_expiry(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a lease=10s\n", h);
	w->mono += 5000;
	w->store.fail_commits = 1;
	service_world_feedf(w, 0, "RENEW a %s lease=60s\n", h);
	service_commit(&w->svc);
	assert_non_null(strstr(take(w, 0), "ERR UNAVAILABLE"));
	feed(w, 0, "STATUS a\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=5000 queue=0\r\n");
	service_world_free(w);
}

static void
test_service_failed_commit_of_a_handoff_falls_back_to_the_durable_holder(
    void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a lease=10s\n", h);
	feed(w, 1, "ACQUIRE a\n");
	feed(w, 2, "ACQUIRE a\n");
	service_commit(&w->svc);

	w->store.fail_commits = 1;
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	assert_string_equal(take(w, 0), "RELEASED a\r\n");
	assert_int_equal(service_commit(&w->svc), -1);
	/* The hand-off to conn 1 was not durable: it is told so. */
	assert_non_null(strstr(take(w, 1), "ERR UNAVAILABLE"));
	/* On disk conn 0 still holds the lease: so it does in memory, until
	 * it expires; conn 2 keeps waiting. */
	feed(w, 3, "STATUS a\n");
	assert_string_equal(take(w, 3),
	    "STATUS a held=1 fence=1 ttl=10000 queue=1\r\n");
	w->mono += 10000;
	service_tick(&w->svc);
	service_commit(&w->svc);
	assert_non_null(strstr(take(w, 2), "GRANTED a fence=3 "));
	service_world_free(w);
}

static void
test_service_recovery_resumes_the_holder_and_the_counter(void **state)
{
	struct service_world *w = service_world_new();
	struct service_recovery rec;
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a lease=10s\nACQUIRE b\n", h);
	service_world_close(w);

	w->mono += 4000;
	assert_int_equal(service_open(&w->svc, &w->config, &w->store.base,
	    &w->clock, &rec), 0);
	w->open = true;
	assert_int_equal(rec.leases, 2);
	assert_int_equal(rec.hwm, 2);
	for (int i = 0; i < 4; i++)
		service_conn_open(&w->svc, &w->conns[i]);
	service_world_feedf(w, 0, "STATUS a\nRENEW a %s lease=20s\n", h);
	service_commit(&w->svc);
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=6000 queue=0\r\n"
	    "RENEWED a fence=1 lease=20000\r\n");
	feed(w, 1, "ACQUIRE c\n");
	service_commit(&w->svc);
	assert_non_null(strstr(take(w, 1), "GRANTED c fence=3 "));
	service_world_free(w);
}

static void
test_service_recovery_reclaims_leases_that_ended_while_down(void **state)
{
	struct service_world *w = service_world_new();
	struct service_recovery rec;

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a lease=1s\nACQUIRE b lease=60s\n");
	service_commit(&w->svc);
	service_world_close(w);
	w->mono += 2000;
	assert_int_equal(service_open(&w->svc, &w->config, &w->store.base,
	    &w->clock, &rec), 0);
	w->open = true;
	assert_int_equal(rec.expired, 1);
	/* The reclaim was committed before serving. */
	assert_null(store_mem_find(&w->store, "a"));
	assert_non_null(store_mem_find(&w->store, "b"));
	assert_int_equal(w->svc.table.stats.held, 1);
	service_world_free(w);
}

static void
test_service_wall_clock_steps_do_not_move_a_lease_within_a_boot(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a lease=60s\n");
	service_commit(&w->svc);
	service_world_close(w);
	w->mono += 1000;
	w->wall += 3600 * 1000;   /* a step forward by an hour */
	service_world_open(w);
	feed(w, 0, "STATUS a\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=59000 queue=0\r\n");
	service_world_close(w);
	w->wall -= 2 * 3600 * 1000;   /* and back, past the start */
	service_world_open(w);
	feed(w, 0, "STATUS a\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=59000 queue=0\r\n");
	service_world_free(w);
}

static void
test_service_after_a_reboot_no_lease_outlives_the_maximum(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a lease=60s\nACQUIRE b lease=60s\n");
	service_commit(&w->svc);
	service_world_close(w);
	/* A reboot: new boot id, the boot clock starts again near zero, and
	 * the wall clock was stepped back by a day. */
	memset(w->clock.boot_id, 0xcd, 16);
	w->mono = 5000;
	w->wall -= 24 * 3600 * 1000;
	w->config.core.max_lease_ms = 20000;
	service_world_open(w);
	feed(w, 0, "STATUS a\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=20000 queue=0\r\n");
	service_world_close(w);
	/* Rebooted again with the wall clock right: 50 s of the lease had
	 * gone (by the wall clock) when it comes back. */
	memset(w->clock.boot_id, 0xef, 16);
	w->mono = 100;
	w->wall += 24 * 3600 * 1000 + 50000;
	w->config.core.max_lease_ms = 300000;
	service_world_open(w);
	feed(w, 0, "STATUS b\n");
	assert_string_equal(take(w, 0),
	    "STATUS b held=1 fence=2 ttl=10000 queue=0\r\n");
	service_world_free(w);
}

/*
 * A reboot restores a lease by the wall clock; after that the record must
 * name this boot, or a wall-clock step later in the boot and a restart
 * (kill -9) read it by the wall clock again and move its end: here it
 * would end at once, 30 minutes early.  Plain and shared holds alike,
 * and a free name's lock-delay.
 */
static void
test_service_a_lease_restored_after_a_reboot_is_rewritten_for_the_boot(
    void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a lease=60s\nACQUIRE rw mode=shared lease=60s\n"
	    "ACQUIRE d lease=1s delay=60s\n");
	service_world_advance(w, 1000);   /* d is free, in its lock-delay */
	service_tick(&w->svc);
	service_commit(&w->svc);
	service_world_close(w);
	memset(w->clock.boot_id, 0xcd, 16);   /* a reboot, 1 s later */
	w->mono = 5000;
	w->wall += 1000;
	service_world_open(w);
	feed(w, 0, "STATUS a\nSTATUS d\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=58000 queue=0\r\n"
	    "STATUS d held=0 fence=0 ttl=0 queue=0 delay=59000\r\n");
	service_world_advance(w, 1000);
	w->wall += 30 * 60 * 1000;   /* the wall clock steps on, then kill -9 */
	service_world_close(w);
	w->mono += 1000;
	w->wall += 1000;
	service_world_open(w);
	feed(w, 0, "STATUS a\nSTATUS rw\nSTATUS d\n");
	assert_string_equal(take(w, 0),
	    "STATUS a held=1 fence=1 ttl=56000 queue=0\r\n"
	    "STATUS rw held=1 fence=2 ttl=56000 queue=0 holders=1 "
	    "mode=shared\r\n"
	    "STATUS d held=0 fence=0 ttl=0 queue=0 delay=57000\r\n");
	service_world_free(w);
}

static void
test_service_onclose_leases_are_released_at_recovery(void **state)
{
	struct service_world *w = service_world_new();
	struct service_recovery rec;

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a onclose=release\nACQUIRE b\n");
	service_commit(&w->svc);
	service_world_close(w);
	assert_int_equal(service_open(&w->svc, &w->config, &w->store.base,
	    &w->clock, &rec), 0);
	w->open = true;
	assert_int_equal(rec.onclose, 1);
	assert_null(store_mem_find(&w->store, "a"));
	assert_non_null(store_mem_find(&w->store, "b"));
	service_world_free(w);
}

static void
test_service_onclose_lease_is_released_when_its_connection_closes(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a onclose=release\n");
	feed(w, 1, "ACQUIRE a\n");
	service_commit(&w->svc);
	assert_non_null(strstr(take(w, 0), "GRANTED a fence=1 "));
	service_conn_close(&w->svc, &w->conns[0]);
	service_commit(&w->svc);
	assert_non_null(strstr(take(w, 1), "GRANTED a fence=2 "));
	service_conn_open(&w->svc, &w->conns[0]);
	service_world_free(w);
}

static void
test_service_client_that_does_not_read_is_cut_off_at_the_output_cap(
    void **state)
{
	struct service_world *w = service_world_new();
	char *many = malloc(6 * 4000 + 1);

	(void)state;
	w->config.max_output = 8192;
	service_world_open(w);
	for (int i = 0; i < 4000; i++)
		memcpy(many + 6 * i, "PING \n", 6);
	many[6 * 4000] = '\0';
	feed(w, 0, many);
	assert_true(w->conns[0].overflow);
	assert_true(w->conns[0].out.len <= 8192 + 16);
	/* Everybody else is served as before. */
	feed(w, 1, "PING\n");
	assert_string_equal(take(w, 1), "PONG\r\n");
	assert_int_equal(w->svc.stats.output_overflows, 1);
	/* A limit hit in STATS as in /metrics. */
	assert_int_equal(stat_of(w, 2, "limit_hits"), 1);
	free(many);
	service_world_free(w);
}

static void
test_service_overlong_line_is_answered_and_the_connection_lives(void **state)
{
	struct service_world *w = service_world_new();
	char *line = malloc(5001), *out;

	(void)state;
	service_world_open(w);
	memset(line, 'x', 5000);
	line[5000] = '\0';
	/* In pieces, the end of the line in a later piece. */
	feed(w, 0, "ACQUIRE ");
	feed(w, 0, line);
	feed(w, 0, line);
	feed(w, 0, "\nPI");
	feed(w, 0, "NG\n");
	out = take(w, 0);
	assert_memory_equal(out, "ERR TOOLONG ", 12);
	assert_non_null(strstr(out, "\r\nPONG\r\n"));
	assert_null(strstr(out + 2, "ERR"));
	free(line);
	service_world_free(w);
}

static void
test_service_quit_answers_bye_and_reads_no_more(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "PING\nQUIT\nPING\n");
	assert_string_equal(take(w, 0), "PONG\r\nBYE\r\n");
	assert_true(w->conns[0].quit);
	service_world_free(w);
}

static int hook_calls;
static int hook_out_len;
static struct service_world *hook_world;

static int
fail_before_commit(void *ctx)
{
	(void)ctx;
	hook_calls++;
	return 1;
}

static void
look_after_commit(void *ctx)
{
	(void)ctx;
	hook_calls++;
	hook_out_len = (int)hook_world->conns[0].out.len;
}

static void
test_service_before_commit_seam_can_fail_the_commit(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	hook_calls = 0;
	w->svc.hooks.before_commit = fail_before_commit;
	feed(w, 0, "ACQUIRE a\n");
	assert_int_equal(service_commit(&w->svc), -1);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(w->store.commits, 0);
	assert_non_null(strstr(take(w, 0), "ERR UNAVAILABLE"));
	service_world_free(w);
}

static void
test_service_after_commit_seam_runs_before_any_grant_is_written(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	hook_calls = 0;
	hook_world = w;
	hook_out_len = -1;
	w->svc.hooks.after_commit = look_after_commit;
	feed(w, 0, "ACQUIRE a\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(w->store.commits, 1);
	assert_int_equal(hook_out_len, 0);
	assert_non_null(strstr(take(w, 0), "GRANTED"));
	service_world_free(w);
}

static void
test_service_shutdown_answers_every_waiter(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a\n");
	feed(w, 1, "ACQUIRE a\nPING\n");
	service_commit(&w->svc);
	take(w, 0);
	service_shutdown(&w->svc);
	service_commit(&w->svc);
	assert_string_equal(take(w, 1),
	    "ERR SHUTDOWN server is stopping\r\nPONG\r\n");
	service_world_free(w);
}

/* ---- a batch in flight ------------------------------------------------ */

static void
test_service_requests_go_on_while_a_batch_is_in_flight(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a\n", h);
	feed(w, 1, "ACQUIRE b\n");
	assert_int_equal(service_commit_begin(&w->svc), 1);
	assert_true(service_commit_inflight(&w->svc));
	/* Not a lock of the batch: answered at once, or in the next one. */
	service_world_feedf(w, 0, "RELEASE a %s\nSTATUS a\nACQUIRE c\n", h);
	assert_string_equal(take(w, 0),
	    "RELEASED a\r\nSTATUS a held=0 fence=0 ttl=0 queue=0\r\n");
	assert_false(service_commit_due(&w->svc));   /* one at a time */
	/* A lock of the batch: every reply about it waits for the batch. */
	feed(w, 2, "STATUS b\nPING\n");
	assert_string_equal(take(w, 2), "");
	service_commit_write(&w->svc);
	assert_int_equal(service_commit_end(&w->svc), 0);
	assert_non_null(strstr(take(w, 1), "GRANTED b fence=2 "));
	assert_string_equal(take(w, 2), "STATUS b held=1 fence=2 ttl=30000 "
	    "queue=0\r\nPONG\r\n");
	assert_string_equal(take(w, 0), "");
	assert_true(service_commit_due(&w->svc));
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 0), "GRANTED c fence=3 "));
	service_world_free(w);
}

static void
test_service_failed_batch_in_flight_fails_what_rests_on_it(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a\n", h);
	/* The release of a is in the batch; it fails while c1 takes a and
	 * c2 takes b, which the batch does not write. */
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	assert_string_equal(take(w, 0), "RELEASED a\r\n");
	w->store.fail_commits = 1;
	assert_int_equal(service_commit_begin(&w->svc), 1);
	feed(w, 1, "ACQUIRE a wait=0\n");
	feed(w, 2, "ACQUIRE b\n");
	service_commit_write(&w->svc);
	assert_int_equal(service_commit_end(&w->svc), -1);
	assert_string_equal(take(w, 1),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	/* a is back with its holder, as the store has it. */
	feed(w, 3, "STATUS a\n");
	assert_string_equal(take(w, 3),
	    "STATUS a held=1 fence=1 ttl=30000 queue=0\r\n");
	/* b's grant did not rest on the failed batch: it commits next. */
	assert_string_equal(take(w, 2), "");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 2), "GRANTED b fence=3 "));
	service_world_free(w);
}

/*
 * c0 holds a (handle h, lease 1000).  While a batch for another lock is
 * in flight, a shorter lease of a is promised; it runs out before its own
 * batch is durable, and the RELEASE that then finds the lease gone rests
 * on the promise.  The batch with a's delete is the next one.
 */
static void
promise_a_lease_that_runs_out(struct service_world *w, const char *h)
{
	feed(w, 1, "ACQUIRE b\n");
	assert_int_equal(service_commit_begin(&w->svc), 1);
	service_world_feedf(w, 0, "RENEW a %s lease=10\n", h);
	w->mono += 20;
	service_tick(&w->svc);
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	service_commit_write(&w->svc);
	assert_int_equal(service_commit_end(&w->svc), 0);
}

/* That batch fails: the RENEW and the RELEASE both fail, and the lease
 * is as told. */
static void
fail_the_promise(struct service_world *w)
{
	w->store.fail_commits = 1;
	assert_int_equal(service_commit(&w->svc), -1);
	assert_string_equal(take(w, 0),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n"
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	feed(w, 2, "STATUS a\n");
	assert_string_equal(take(w, 2),
	    "STATUS a held=1 fence=1 ttl=980 queue=0\r\n");
}

static void
test_service_reply_after_an_open_promise_fails_with_it(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a lease=1000\n", h);
	promise_a_lease_that_runs_out(w, h);
	fail_the_promise(w);
	service_world_free(w);
}

/*
 * The same with a store that keeps a failed batch's settled deletes (the
 * journal on a full map, store.h): a's delete is not settled - the RENEW
 * promised a, and is answered ERR UNAVAILABLE, so the holder's last
 * durable lease must stand - while c's, whose RELEASED is out, is settled
 * and stays done.
 */
static void
test_service_failed_commit_keeps_no_delete_a_promise_rests_on(void **state)
{
	struct service_world *w = service_world_new();
	char h[64], hc[64];

	(void)state;
	service_world_open(w);
	w->store.salvage_settled = true;
	grant_handle(w, 0, "ACQUIRE a lease=1000\n", h);
	grant_handle(w, 3, "ACQUIRE c\n", hc);
	promise_a_lease_that_runs_out(w, h);
	service_world_feedf(w, 3, "RELEASE c %s\n", hc);
	assert_string_equal(take(w, 3), "RELEASED c\r\n");
	fail_the_promise(w);
	assert_non_null(store_mem_find(&w->store, "a"));
	assert_null(store_mem_find(&w->store, "c"));
	feed(w, 2, "STATUS c\n");
	assert_string_equal(take(w, 2),
	    "STATUS c held=0 fence=0 ttl=0 queue=0\r\n");
	service_world_free(w);
}

/* The same with a release: a RENEW and a RELEASE pipelined in one pass
 * both fail with their batch, and the lease stands as it was. */
static void
test_service_failed_commit_keeps_no_release_a_promise_rests_on(void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	w->store.salvage_settled = true;
	grant_handle(w, 0, "ACQUIRE a lease=1000\n", h);
	service_world_feedf(w, 0, "RENEW a %s lease=5000\nRELEASE a %s\n",
	    h, h);
	w->store.fail_commits = 1;
	assert_int_equal(service_commit(&w->svc), -1);
	assert_string_equal(take(w, 0),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n"
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	feed(w, 2, "STATUS a\n");
	assert_string_equal(take(w, 2),
	    "STATUS a held=1 fence=1 ttl=1000 queue=0\r\n");
	assert_non_null(store_mem_find(&w->store, "a"));
	service_world_free(w);
}

static void
test_service_fall_back_binds_an_onclose_lease_to_its_live_connection(
    void **state)
{
	struct service_world *w = service_world_new();
	char h[64];

	(void)state;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a onclose=release\n", h);
	/* Released and taken by c1 in a batch that fails: a is c0's again,
	 * still bound to c0, whose close then releases it. */
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	feed(w, 1, "ACQUIRE a\n");
	w->store.fail_commits = 1;
	assert_int_equal(service_commit(&w->svc), -1);
	feed(w, 2, "STATUS a\n");
	assert_string_equal(take(w, 2),
	    "STATUS a held=1 fence=1 ttl=30000 queue=0\r\n");
	service_conn_close(&w->svc, &w->conns[0]);
	feed(w, 2, "STATUS a\n");
	assert_string_equal(take(w, 2),
	    "STATUS a held=0 fence=0 ttl=0 queue=0\r\n");
	service_conn_open(&w->svc, &w->conns[0]);
	service_world_free(w);
}

/* The core's allocator, failing the next `failing` calls (-1: all). */
static int failing;

static void *
failing_realloc(void *p, size_t size)
{
	if (failing != 0) {
		if (failing > 0)
			failing--;
		return NULL;
	}
	return realloc(p, size);
}

/*
 * c0 holds a (owner and rid: out of line), releases it, and c1 takes it
 * with rid=r1 in a batch that fails while the core's allocator fails the
 * next `fails` calls: the fall-back must still put c0's hold back.
 */
static struct service_world *
fall_back_without_memory(int fails)
{
	struct service_world *w = service_world_new();
	char h[64];

	w->config.core.realloc = failing_realloc;
	service_world_open(w);
	grant_handle(w, 0, "ACQUIRE a owner=c0 rid=r0\n", h);
	service_world_feedf(w, 0, "RELEASE a %s\n", h);
	feed(w, 1, "ACQUIRE a rid=r1\n");
	w->store.fail_commits = 1;
	failing = fails;
	assert_int_equal(service_commit(&w->svc), -1);
	failing = 0;
	return w;
}

static void
test_service_fall_back_retries_a_restore_without_memory(void **state)
{
	struct service_world *w = fall_back_without_memory(3);

	(void)state;
	take(w, 0);
	assert_string_equal(take(w, 1),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	/* c0's durable hold is back, with its owner; c1's grant, never
	 * durable, is gone: a repeat of its rid is no repeat. */
	feed(w, 2, "STATUS a\n");
	assert_string_equal(take(w, 2),
	    "STATUS a held=1 fence=1 ttl=30000 queue=0 owner=c0\r\n");
	feed(w, 2, "TRY a rid=r1\n");
	assert_string_equal(take(w, 2), "HELD a\r\n");
	feed(w, 2, "TRY a rid=r0\n");
	assert_string_equal(take(w, 2),
	    "GRANTED a fence=1 handle=1-0000000000001000 lease=30000\r\n");
	service_world_free(w);
}

/* When memory does not come back, lockd stops rather than serve a table
 * the store disagrees with. */
static void
test_service_fall_back_stops_when_memory_stays_out(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		(void)fall_back_without_memory(-1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* Feeds text to connection c one byte at a time; after each byte but the
 * last, the service must hold the partial line and resume its search for
 * the line end at the byte just fed, not from the line's start. */
static void
feed_bytewise(struct service_world *w, int c, const char *text)
{
	struct service_conn *conn = &w->conns[c];
	size_t i, n = strlen(text), held = conn->in.len;

	for (i = 0; i < n; i++) {
		service_conn_feed(&w->svc, conn, text + i, 1);
		if (i + 1 == n)
			break;
		assert_int_equal(conn->in.len, held + i + 1);
		assert_int_equal(conn->in_scanned, conn->in.len);
		assert_int_equal(conn->out.len, 0);
	}
}

static void
test_service_line_fed_a_byte_at_a_time_is_searched_once(void **state)
{
	struct service_world *w = service_world_new();
	char line[300], *out;

	(void)state;
	service_world_open(w);
	memset(line, 0, sizeof(line));
	memcpy(line, "STATUS ", 7);
	memset(line + 7, 'n', 255);
	strcat(line, "\r\n");
	feed_bytewise(w, 0, line);
	assert_int_equal(w->conns[0].in.len, 0);
	assert_int_equal(w->conns[0].in_scanned, 0);
	out = take(w, 0);
	assert_memory_equal(out, "STATUS nnn", 10);
	assert_null(strstr(out, "ERR"));
	/* Two lines, the second partial, in one read: the search resumes
	 * after what the first read left. */
	feed(w, 0, "PING\r\nPI");
	assert_int_equal(w->conns[0].in.len, 2);
	assert_int_equal(w->conns[0].in_scanned, 2);
	assert_string_equal(take(w, 0), "PONG\r\n");
	feed_bytewise(w, 0, "NG\r\n");
	assert_string_equal(take(w, 0), "PONG\r\n");
	service_world_free(w);
}

/* The bytewise feed's shortcut (no LF, within max_line: still partial)
 * keeps the parser's bounds: max_line bytes and a CR are a line; one more
 * byte is too long. */
static void
test_service_line_fed_a_byte_at_a_time_keeps_the_line_limit(void **state)
{
	struct service_world *w = service_world_new();
	char line[80];

	(void)state;
	w->config.max_line = 64;
	service_world_open(w);
	memset(line, 0, sizeof(line));
	memcpy(line, "STATUS ", 7);
	memset(line + 7, 'n', 64 - 7);
	strcat(line, "\r\n");
	feed_bytewise(w, 0, line);
	assert_memory_equal(take(w, 0), "STATUS nnn", 10);
	line[64] = 'n';     /* 65 bytes before the CR: too long */
	line[65] = '\0';
	feed_bytewise(w, 1, line);
	assert_memory_equal(take(w, 1), "ERR TOOLONG ", 12);
	feed(w, 1, "\r\nPING\r\n");
	assert_string_equal(take(w, 1), "PONG\r\n");
	service_world_free(w);
}

/*
 * The commit path's map from what the core reports - (name, key_fence,
 * record) - to the store's key: the name for key_fence 0, the holder key
 * "<name> NUL <fence BE>" otherwise (daemon/format.h), with the record's
 * bytes under it; and a batch in flight that writes any key of a lock
 * holds back the replies about that lock.
 */
static void
test_service_batch_key_maps_a_holder_to_its_key(void **state)
{
	struct service_world *w = service_world_new();
	struct core_record sem = { .fence = 5, .secret = 1, .lease_ms = 9000,
	    .expiry = 1009000, .limit = 3 }, plain = { .fence = 6,
	    .secret = 2, .lease_ms = 9000, .expiry = 1009000 }, back;
	struct store_batch_op op;
	size_t pos = 0;

	(void)state;
	service_world_open(w);
	store_batch_reset(&w->svc.commit.batch);
	assert_int_equal(service__batch_key(&w->svc, "sem", 3, 5, &sem,
	    w->mono, w->wall), 0);
	assert_int_equal(service__batch_key(&w->svc, "lock", 4, 0, &plain,
	    w->mono, w->wall), 0);
	assert_int_equal(service__batch_key(&w->svc, "sem", 3, 0x0102, NULL,
	    w->mono, w->wall), 0);
	assert_int_equal(service__batch_key(&w->svc, "", 0, 5, &sem,
	    w->mono, w->wall), -1);
	assert_true(store_batch_next(&w->svc.commit.batch, &pos, &op));
	assert_true(op.op == STORE_PUT && op.name_len == 12);
	assert_memory_equal(op.name, "sem\0\0\0\0\0\0\0\0\x05", 12);
	assert_true(format_record_decode(op.val, op.val_len,
	    w->clock.boot_id, 300000, w->mono, w->wall, &back));
	assert_true(back.fence == 5 && back.limit == 3 && back.secret == 1);
	assert_true(store_batch_next(&w->svc.commit.batch, &pos, &op));
	assert_true(op.op == STORE_PUT && op.name_len == 4 &&
	    memcmp(op.name, "lock", 4) == 0);
	assert_true(store_batch_next(&w->svc.commit.batch, &pos, &op));
	assert_true(op.op == STORE_DEL && op.name_len == 12 &&
	    op.val_len == 0);
	assert_memory_equal(op.name, "sem\0\0\0\0\0\0\0\x01\x02", 12);
	assert_false(store_batch_next(&w->svc.commit.batch, &pos, &op));
	/* In flight, it holds back replies about "sem" (by its holders'
	 * keys) and "lock", not about "se" or "sem2". */
	w->svc.commit.inflight_seq = 77;
	w->svc.commit.inflight_indexed = false;
	assert_int_equal(service__inflight_depends(&w->svc, "sem", 3), 77);
	assert_int_equal(service__inflight_depends(&w->svc, "lock", 4), 77);
	assert_int_equal(service__inflight_depends(&w->svc, "se", 2), 0);
	assert_int_equal(service__inflight_depends(&w->svc, "sem2", 4), 0);
	w->svc.commit.inflight_seq = 0;
	store_batch_reset(&w->svc.commit.batch);
	service_world_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_granted_reply_waits_for_the_commit),
		cmocka_unit_test(test_service_line_fed_a_byte_at_a_time_is_searched_once),
		cmocka_unit_test(test_service_line_fed_a_byte_at_a_time_keeps_the_line_limit),
		cmocka_unit_test(test_service_one_commit_serves_every_request_of_a_pass),
		cmocka_unit_test(test_service_released_reply_does_not_wait_for_the_commit),
		cmocka_unit_test(test_service_releases_ride_along_with_the_next_grant_or_wait_briefly),
		cmocka_unit_test(test_service_replies_keep_request_order_behind_a_waiting_acquire),
		cmocka_unit_test(test_service_failed_commit_answers_unavailable_and_grants_nothing),
		cmocka_unit_test(test_service_failed_commit_fails_a_grant_queued_behind_a_waiting_acquire),
		cmocka_unit_test(test_service_stats_count_what_clients_were_told),
		cmocka_unit_test(test_service_failed_commit_of_a_renewal_keeps_the_durable_expiry),
		cmocka_unit_test(test_service_failed_commit_of_a_handoff_falls_back_to_the_durable_holder),
		cmocka_unit_test(test_service_recovery_resumes_the_holder_and_the_counter),
		cmocka_unit_test(test_service_recovery_reclaims_leases_that_ended_while_down),
		cmocka_unit_test(test_service_wall_clock_steps_do_not_move_a_lease_within_a_boot),
		cmocka_unit_test(test_service_after_a_reboot_no_lease_outlives_the_maximum),
		cmocka_unit_test(test_service_a_lease_restored_after_a_reboot_is_rewritten_for_the_boot),
		cmocka_unit_test(test_service_onclose_leases_are_released_at_recovery),
		cmocka_unit_test(test_service_onclose_lease_is_released_when_its_connection_closes),
		cmocka_unit_test(test_service_client_that_does_not_read_is_cut_off_at_the_output_cap),
		cmocka_unit_test(test_service_overlong_line_is_answered_and_the_connection_lives),
		cmocka_unit_test(test_service_quit_answers_bye_and_reads_no_more),
		cmocka_unit_test(test_service_before_commit_seam_can_fail_the_commit),
		cmocka_unit_test(test_service_after_commit_seam_runs_before_any_grant_is_written),
		cmocka_unit_test(test_service_shutdown_answers_every_waiter),
		cmocka_unit_test(
		    test_service_requests_go_on_while_a_batch_is_in_flight),
		cmocka_unit_test(
		    test_service_failed_batch_in_flight_fails_what_rests_on_it),
		cmocka_unit_test(
		    test_service_reply_after_an_open_promise_fails_with_it),
		cmocka_unit_test(
		    test_service_failed_commit_keeps_no_delete_a_promise_rests_on),
		cmocka_unit_test(
		    test_service_failed_commit_keeps_no_release_a_promise_rests_on),
		cmocka_unit_test(
		    test_service_fall_back_binds_an_onclose_lease_to_its_live_connection),
		cmocka_unit_test(
		    test_service_fall_back_retries_a_restore_without_memory),
		cmocka_unit_test(
		    test_service_fall_back_stops_when_memory_stays_out),
		cmocka_unit_test(test_service_batch_key_maps_a_holder_to_its_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
