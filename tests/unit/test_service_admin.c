/*
 * test_service_admin.c - the operator's commands of the service (LIST, and
 * the counters behind lockd_lock_forced_total, lockd_lock_delayed and
 * lockd_watches), driven through service_conn_feed over a fake clock and
 * the in-memory store (tests/lib/service_world.h), as test_service.c
 * drives the rest.
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

/* A world already open, its connections' output capped at max_output
 * (0: the default). */
static struct service_world *
world_new(size_t max_output)
{
	struct service_world *w = service_world_new();

	if (max_output != 0)
		w->config.max_output = max_output;
	service_world_open(w);
	return w;
}

/* Feeds text to connection c and commits what it did. */
static void
feed(struct service_world *w, int c, const char *text)
{
	service_world_feed(w, c, text);
	assert_int_equal(service_commit(&w->svc), 0);
}

static char *
take(struct service_world *w, int c)
{
	return service_world_take(w, c);
}

/* LIST is in bytewise name order, whatever order the names came in,
 * shows STATUS's fields, and leaves out names with nothing but a WATCH. */
static void
test_service_list_shows_locks_in_bytewise_name_order(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "ACQUIRE b lease=10s owner=web-1\r\n"
	    "ACQUIRE B lease=10s\r\nACQUIRE a/x lease=10s\r\n"
	    "ACQUIRE a lease=10s\r\nACQUIRE \xc3\xa9 lease=10s\r\n");
	take(w, 0);
	feed(w, 1, "ACQUIRE a wait=5s\r\nWATCH only-watched wait=5s\r\n");
	feed(w, 0, "LIST\r\n");
	assert_string_equal(take(w, 0),
	    "LOCK B held=1 fence=2 ttl=10000 queue=0\r\n"
	    "LOCK a held=1 fence=4 ttl=10000 queue=1\r\n"
	    "LOCK a/x held=1 fence=3 ttl=10000 queue=0\r\n"
	    "LOCK b held=1 fence=1 ttl=10000 queue=0 owner=web-1\r\n"
	    "LOCK \xc3\xa9 held=1 fence=5 ttl=10000 queue=0\r\n"
	    "END count=5\r\n");
	service_world_free(w);
}

/* prefix= selects one run of the order, after= resumes it (exclusive),
 * limit= cuts it with next= naming where to resume. */
static void
test_service_list_pages_through_a_prefix_with_after_and_limit(void **state)
{
	struct service_world *w = world_new(0);
	char line[64];

	(void)state;
	for (int i = 0; i < 30; i++) {
		snprintf(line, sizeof(line), "ACQUIRE job/%02d lease=10s\r\n",
		    (i * 7) % 30);
		feed(w, 0, line);
	}
	feed(w, 0, "ACQUIRE jo lease=10s\r\nACQUIRE jobs lease=10s\r\n"
	    "ACQUIRE job0 lease=10s\r\n");
	take(w, 0);
	feed(w, 0, "LIST prefix=job/ limit=2\r\n");
	assert_string_equal(take(w, 0),
	    "LOCK job/00 held=1 fence=1 ttl=10000 queue=0\r\n"
	    "LOCK job/01 held=1 fence=14 ttl=10000 queue=0\r\n"
	    "END count=2 next=job/01\r\n");
	feed(w, 0, "LIST prefix=job/ after=job/27\r\n");
	assert_string_equal(take(w, 0),
	    "LOCK job/28 held=1 fence=5 ttl=10000 queue=0\r\n"
	    "LOCK job/29 held=1 fence=18 ttl=10000 queue=0\r\n"
	    "END count=2\r\n");
	/* after= below the prefix starts at the prefix; above, nothing. */
	feed(w, 0, "LIST prefix=job/2 after=a limit=1\r\n");
	assert_string_equal(take(w, 0),
	    "LOCK job/20 held=1 fence=21 ttl=10000 queue=0\r\n"
	    "END count=1 next=job/20\r\n");
	feed(w, 0, "LIST prefix=job/ after=job0\r\n");
	assert_string_equal(take(w, 0), "END count=0\r\n");
	/* Paging with next= visits each of the 30 once. */
	{
		char after[64] = "";
		int seen = 0, pages = 0;

		for (; pages < 40; pages++) {
			char *text, *next;

			snprintf(line, sizeof(line), "LIST prefix=job/ "
			    "limit=7%s%s\r\n", after[0] ? " after=" : "",
			    after);
			feed(w, 0, line);
			text = take(w, 0);
			for (char *p = text; (p = strstr(p, "LOCK ")); p++)
				seen++;
			if ((next = strstr(text, "next=")) == NULL)
				break;
			snprintf(after, sizeof(after), "%.*s",
			    (int)strcspn(next + 5, "\r"), next + 5);
		}
		assert_int_equal(seen, 30);
		assert_int_equal(pages, 4);
	}
	service_world_free(w);
}

/* Expired leases are reclaimed before listing; a name in lock-delay
 * exists (with delay=) though nobody holds it. */
static void
test_service_list_shows_lock_delay_and_no_expired_holder(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "ACQUIRE d lease=1s delay=5s\r\nACQUIRE e lease=1s\r\n");
	take(w, 0);
	service_world_advance(w, 2000);
	feed(w, 0, "LIST\r\n");
	assert_string_equal(take(w, 0),
	    "LOCK d held=0 fence=0 ttl=0 queue=0 delay=4000\r\n"
	    "END count=1\r\n");
	service_world_free(w);
}

/* Bad options are BADARG naming the option, a stray word BADREQ. */
static void
test_service_list_refuses_bad_options(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "LIST limit=0\r\nLIST limit=1001\r\nLIST limit=x\r\n"
	    "LIST prefix=\r\nLIST after=\r\nLIST prefix=a prefix=b\r\n"
	    "LIST a\r\nLIST lease=1s\r\n");
	assert_string_equal(take(w, 0),
	    "ERR BADARG limit must be an integer from 1 to 1000\r\n"
	    "ERR BADARG limit must be an integer from 1 to 1000\r\n"
	    "ERR BADARG limit must be an integer from 1 to 1000\r\n"
	    "ERR BADARG prefix must be 1 to 255 bytes without spaces or "
	    "control bytes\r\n"
	    "ERR BADARG after must be a lock name of 1 to 255 bytes\r\n"
	    "ERR BADARG option given twice\r\n"
	    "ERR BADREQ LIST takes no arguments, only options\r\n"
	    "ERR BADARG option not taken by this command\r\n");
	service_world_free(w);
}

/* A LIST never outgrows the connection's output cap: it ends early with
 * next= and the client pages on, instead of being cut off. */
static void
test_service_list_stops_early_within_the_output_cap(void **state)
{
	struct service_world *w = world_new(16384);
	char line[400], name[256];

	(void)state;
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "%03d%0240d", i, 0);
		snprintf(line, sizeof(line), "ACQUIRE %s lease=10s\r\n", name);
		feed(w, 0, line);
		take(w, 0);
	}
	feed(w, 0, "LIST limit=1000\r\n");
	{
		const char *text = take(w, 0);
		const char *end = strstr(text, "END count=");

		assert_false(w->conns[0].overflow);
		assert_non_null(end);
		assert_non_null(strstr(end, " next="));
		assert_true(strtoul(end + 10, NULL, 10) < 200);
		assert_true(strtoul(end + 10, NULL, 10) > 10);
	}
	feed(w, 0, "PING\r\n");
	assert_string_equal(take(w, 0), "PONG\r\n");
	service_world_free(w);
}

/* A LIST reply's names, space-separated, then its END line. */
static const char *
list_names(const char *text)
{
	static char out[4096];
	size_t len = 0, n;
	const char *p = text;

	out[0] = '\0';
	while (strncmp(p, "LOCK ", 5) == 0) {
		n = strcspn(p + 5, " ");
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%.*s ",
		    (int)n, p + 5);
		p = strstr(p, "\r\n") + 2;
	}
	snprintf(out + len, sizeof(out) - len, "%.*s", (int)strcspn(p, "\r"),
	    p);
	return out;
}

/* --auth's rules for the LIST tests: alice reads two runs of job/ and
 * x/, and may only lock job/b (not read it). */
static const char list_rules[] =
    "alice - read job/a\n"
    "alice - read job/c/\n"
    "alice - lock job/b\n"
    "alice - read,lock x/\n"
    "alice - read job/c/deep/\n"
    "bob - read job/\n";

static void
world_auth(struct service_world *w, struct auth_rules *rules, const char *principal)
{
	char err[128];

	assert_int_equal(auth_rules_parse(rules, list_rules,
	    strlen(list_rules), err, sizeof(err)), 0);
	w->svc.auth = rules;
	snprintf(w->conns[0].principal, sizeof(w->conns[0].principal), "%s",
	    principal);
}

/* With --auth, LIST shows what the principal may read and nothing else,
 * and prefix=, after= and limit= page through exactly that: every
 * readable name once, in order, next= naming where to resume. */
static void
test_service_list_under_auth_pages_exactly_through_what_it_may_read(
    void **state)
{
	static const char *const names[] = { "job/c/2", "job/a1", "job/b1",
	    "job/b2", "job/c3", "x/1", "job/c/1", "job/a2", "job/d", "y/1",
	    "job/b3", "job/c/deep/1", "job/ab" };
	struct service_world *w = world_new(0);
	struct auth_rules rules;
	char line[128], after[64] = "", all[1024] = "";
	int pages;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(line, sizeof(line), "ACQUIRE %s lease=10s\r\n",
		    names[i]);
		feed(w, 1, line);
	}
	take(w, 1);
	world_auth(w, &rules, "alice");
	feed(w, 0, "LIST\r\n");
	assert_string_equal(list_names(take(w, 0)), "job/a1 job/a2 job/ab "
	    "job/c/1 job/c/2 job/c/deep/1 x/1 END count=7");
	feed(w, 0, "LIST prefix=job/ limit=2\r\n");
	assert_string_equal(list_names(take(w, 0)),
	    "job/a1 job/a2 END count=2 next=job/a2");
	feed(w, 0, "LIST prefix=job/ limit=2 after=job/a2\r\n");
	assert_string_equal(list_names(take(w, 0)),
	    "job/ab job/c/1 END count=2 next=job/c/1");
	feed(w, 0, "LIST prefix=job/ limit=2 after=job/c/1\r\n");
	/* Nothing readable follows: no next=. */
	assert_string_equal(list_names(take(w, 0)),
	    "job/c/2 job/c/deep/1 END count=2");
	feed(w, 0, "LIST prefix=job/ limit=2 after=job/c/deep/1\r\n");
	assert_string_equal(list_names(take(w, 0)), "END count=0");
	/* A prefix inside a readable run, one across none, after= in the
	 * unreadable middle. */
	feed(w, 0, "LIST prefix=job/c/1\r\n");
	assert_string_equal(list_names(take(w, 0)), "job/c/1 END count=1");
	feed(w, 0, "LIST prefix=job/b\r\n");
	assert_string_equal(list_names(take(w, 0)), "END count=0");
	feed(w, 0, "LIST after=job/b\r\n");
	assert_string_equal(list_names(take(w, 0)),
	    "job/c/1 job/c/2 job/c/deep/1 x/1 END count=4");
	/* One name a page: the same seven, each once. */
	for (pages = 0; pages < 20; pages++) {
		const char *got, *next;

		snprintf(line, sizeof(line), "LIST limit=1%s%s\r\n",
		    after[0] ? " after=" : "", after);
		feed(w, 0, line);
		got = list_names(take(w, 0));
		if (strncmp(got, "END", 3) != 0)
			snprintf(all + strlen(all), sizeof(all) - strlen(all),
			    "%.*s ", (int)strcspn(got, " "), got);
		if ((next = strstr(got, "next=")) == NULL)
			break;
		snprintf(after, sizeof(after), "%s", next + 5);
	}
	assert_string_equal(all, "job/a1 job/a2 job/ab job/c/1 job/c/2 "
	    "job/c/deep/1 x/1 ");
	/* bob reads all of job/ and nothing else. */
	snprintf(w->conns[0].principal, sizeof(w->conns[0].principal), "bob");
	feed(w, 0, "LIST limit=3 after=job/b3\r\n");
	assert_string_equal(list_names(take(w, 0)),
	    "job/c/1 job/c/2 job/c/deep/1 END count=3 next=job/c/deep/1");
	w->svc.auth = NULL;
	auth_rules_free(&rules);
	service_world_free(w);
}

/* What a principal may not read costs LIST nothing: it looks only at the
 * names in the runs the principal may read, however many others lie
 * under the prefix it asked for (counted, not timed). */
static void
test_service_list_under_auth_walks_no_unreadable_name(void **state)
{
	struct service_world *w = world_new(0);
	struct auth_rules rules;
	char line[64];
	uint64_t walked;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		snprintf(line, sizeof(line), "ACQUIRE job/b%04d lease=10s\r\n",
		    i);
		feed(w, 1, line);
		take(w, 1);
	}
	feed(w, 1, "ACQUIRE job/a1 lease=10s\r\nACQUIRE x/1 lease=10s\r\n"
	    "ACQUIRE job/c/1 lease=10s\r\n");
	take(w, 1);
	world_auth(w, &rules, "alice");
	walked = w->svc.stats.list_walked;
	feed(w, 0, "LIST\r\n");
	assert_string_equal(list_names(take(w, 0)),
	    "job/a1 job/c/1 x/1 END count=3");
	assert_int_equal(w->svc.stats.list_walked - walked, 3);
	walked = w->svc.stats.list_walked;
	feed(w, 0, "LIST prefix=job/b\r\nLIST after=job/a1 limit=1\r\n");
	assert_string_equal(take(w, 0), "END count=0\r\n"
	    "LOCK job/c/1 held=1 fence=2003 ttl=10000 queue=0\r\n"
	    "END count=1 next=job/c/1\r\n");
	/* job/c/1, then x/1 to learn there is more. */
	assert_int_equal(w->svc.stats.list_walked - walked, 2);
	w->svc.auth = NULL;
	auth_rules_free(&rules);
	service_world_free(w);
}

/* LIST's lines are one reply: a LIST behind a waiting ACQUIRE waits in
 * its slot whole, and comes out after the ACQUIRE's answer. */
static void
test_service_list_behind_a_waiting_acquire_keeps_its_place(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "ACQUIRE q lease=1s\r\n");
	take(w, 0);
	feed(w, 1, "ACQUIRE q wait=5s lease=10s\r\nLIST\r\n");
	assert_string_equal(take(w, 1), "");
	service_world_advance(w, 1000);
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 1),
	    "GRANTED q fence=2 handle=2-0000000000001001 lease=10000\r\n"
	    "LOCK q held=1 fence=1 ttl=1000 queue=1\r\n"
	    "END count=1\r\n");
	service_world_free(w);
}

/* A holder's owner label and a name's running lock-delay are restored
 * from the store after a restart (the label once came back from the
 * wrong field of the record, and lockd crashed recovering it). */
static void
test_service_owner_and_lock_delay_are_recovered(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "ACQUIRE held lease=10s owner=host-a:42\r\n"
	    "ACQUIRE ended lease=1s delay=30s owner=host-b:7\r\n");
	take(w, 0);
	service_world_advance(w, 1000);
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_close(w);
	service_world_open(w);
	service_world_advance(w, 1000);
	feed(w, 0, "STATUS held\r\nSTATUS ended\r\nTRY ended\r\n");
	assert_string_equal(take(w, 0),
	    "STATUS held held=1 fence=1 ttl=8000 queue=0 owner=host-a:42\r\n"
	    "STATUS ended held=0 fence=0 ttl=0 queue=0 delay=29000\r\n"
	    "HELD ended delay=29000\r\n");
	service_world_free(w);
}

/* The value of " key=" in a STATS line. */
static unsigned long long
stat_of(struct service_world *w, const char *key)
{
	char want[64];
	const char *line, *p;

	feed(w, 1, "STATS\r\n");
	line = take(w, 1);
	snprintf(want, sizeof(want), " %s=", key);
	p = strstr(line, want);
	assert_non_null(p);
	return strtoull(p + strlen(want), NULL, 10);
}

/* Requires /metrics to show `line` exactly, on a line of its own. */
static void
assert_metric(struct service_world *w, const char *line)
{
	struct metrics_text t = { NULL, 0, 0, false };
	char want[128];

	service_render_metrics(&w->svc, &t);
	assert_false(t.failed);
	snprintf(want, sizeof(want), "\n%s\n", line);
	if (strstr(t.data, want) == NULL)
		fail_msg("/metrics lacks \"%s\"", line);
	free(t.data);
}

/* FORCE, lock-delay and WATCH are counted once, from service_counters,
 * for STATS and /metrics alike; the gauges fall back when they end. */
static void
test_service_forced_delayed_and_watches_are_counted(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	assert_true(service_ready(&w->svc));
	feed(w, 0, "ACQUIRE f lease=10s delay=2s\r\nWATCH f fence=1\r\n"
	    "WATCH g\r\n");
	take(w, 0);
	assert_int_equal(stat_of(w, "watches"), 2);
	assert_metric(w, "lockd_watches 2");
	feed(w, 1, "FORCE f 2\r\nFORCE f 1\r\n");
	assert_string_equal(take(w, 1), "NOTHELD f\r\nRELEASED f\r\n");
	assert_int_equal(stat_of(w, "forced"), 1);
	assert_int_equal(stat_of(w, "delayed"), 1);
	assert_int_equal(stat_of(w, "watches"), 1);
	assert_metric(w, "lockd_lock_forced_total 1");
	assert_metric(w, "lockd_lock_delayed 1");
	service_world_advance(w, 2000);
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_int_equal(stat_of(w, "delayed"), 0);
	assert_metric(w, "lockd_lock_delayed 0");
	/* Released by its own WATCH's answer when g is granted. */
	feed(w, 1, "TRY g\r\n");
	assert_int_equal(stat_of(w, "watches"), 0);
	assert_metric(w, "lockd_watches 0");
	assert_metric(w, "lockd_lock_forced_total 1");
	service_shutdown(&w->svc);
	assert_false(service_ready(&w->svc));
	service_world_free(w);
}

/* A FORCE whose commit fails is told ERR UNAVAILABLE: it is counted
 * neither as forced nor as released, and the holder keeps its lock. */
static void
test_service_failed_force_is_not_counted(void **state)
{
	struct service_world *w = world_new(0);

	(void)state;
	feed(w, 0, "ACQUIRE f lease=10s\r\n");
	take(w, 0);
	w->store.fail_commits = 1;
	service_conn_feed(&w->svc, &w->conns[0], "FORCE f 1\r\n", 11);
	assert_int_not_equal(service_commit(&w->svc), 0);
	assert_memory_equal(take(w, 0), "ERR UNAVAILABLE ", 16);
	assert_int_equal(stat_of(w, "forced"), 0);
	assert_int_equal(stat_of(w, "released"), 0);
	assert_metric(w, "lockd_lock_forced_total 0");
	feed(w, 0, "STATUS f\r\n");
	assert_memory_equal(take(w, 0), "STATUS f held=1 fence=1 ", 24);
	service_world_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_service_list_shows_locks_in_bytewise_name_order),
		cmocka_unit_test(
		    test_service_list_pages_through_a_prefix_with_after_and_limit),
		cmocka_unit_test(
		    test_service_list_shows_lock_delay_and_no_expired_holder),
		cmocka_unit_test(test_service_list_refuses_bad_options),
		cmocka_unit_test(
		    test_service_list_stops_early_within_the_output_cap),
		cmocka_unit_test(
		    test_service_list_behind_a_waiting_acquire_keeps_its_place),
		cmocka_unit_test(
		    test_service_list_under_auth_pages_exactly_through_what_it_may_read),
		cmocka_unit_test(
		    test_service_list_under_auth_walks_no_unreadable_name),
		cmocka_unit_test(
		    test_service_owner_and_lock_delay_are_recovered),
		cmocka_unit_test(
		    test_service_forced_delayed_and_watches_are_counted),
		cmocka_unit_test(test_service_failed_force_is_not_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
