/*
 * test_service_holders.c - issue 17's wire through the service layer
 * (daemon/service.c, daemon/service_commit.c): limit= and mode=shared on
 * ACQUIRE and TRY, the fields STATUS and LIST show of a holder set, the
 * BADARG cases, and durability - every holder of a semaphore and of a
 * shared lock written under its own key, restored after a crash, and put
 * back as the store has it after a failed commit.  No sockets: the shared
 * world of tests/lib/service_world.h over the in-memory store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/format.h"
#include "daemon/service.h"
#include "tests/lib/service_world.h"

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

/* The fence of a GRANTED line. */
static uint64_t
fence_of(const char *granted)
{
	const char *f = strstr(granted, "fence=");

	if (f == NULL) {
		fail_msg("not a grant: %s", granted);
		return 0;
	}
	return strtoull(f + 6, NULL, 10);
}

/* Does the store hold a record under the key (name, key_fence)? */
static bool
stored(const struct service_world *w, const char *name, uint64_t key_fence)
{
	char key[FORMAT_KEY_MAX];
	size_t len = format_key(name, strlen(name), key_fence, key), i;

	for (i = 0; i < w->store.count; i++)
		if (w->store.entries[i].name_len == len &&
		    memcmp(w->store.entries[i].name, key, len) == 0)
			return true;
	return false;
}

/* STATUS name on connection c, as one line without its CRLF. */
static const char *
status(struct service_world *w, int c, const char *name)
{
	static char line[512];
	char *out;
	size_t n;

	service_world_feedf(w, c, "STATUS %s\n", name);
	out = take(w, c);
	n = strcspn(out, "\r");
	snprintf(line, sizeof(line), "%.*s", (int)n, out);
	return line;
}

/*
 * A semaphore of 3 with 5 clients: three hold at once, each with its own
 * fence and handle, each under its own key; the other two wait in FIFO
 * order and take the permits as they come free; STATUS and LIST show
 * holders= and limit=.
 */
static void
test_holders_semaphore_of_three_with_five_clients(void **state)
{
	struct service_world *w = service_world_new();
	char h[5][64];
	uint64_t f[5];

	(void)state;
	service_world_open(w);
	for (int i = 0; i < 5; i++)
		service_world_feedf(w, i, "ACQUIRE s limit=3 lease=20s "
		    "owner=c%d\n", i);
	assert_int_equal(service_commit(&w->svc), 0);
	for (int i = 0; i < 3; i++) {
		char *out = take(w, i);

		service_world_handle(out, h[i]);
		f[i] = fence_of(out);
		assert_true(stored(w, "s", f[i]));
	}
	assert_true(f[0] == 1 && f[1] == 2 && f[2] == 3);
	assert_false(stored(w, "s", 0));   /* never under <name> */
	assert_string_equal(take(w, 3), "");
	assert_string_equal(take(w, 4), "");
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=3 "
	    "ttl=20000 queue=2 owner=c2 holders=3 limit=3");
	feed(w, 5, "LIST\n");
	assert_string_equal(take(w, 5), "LOCK s held=1 fence=3 ttl=20000 "
	    "queue=2 owner=c2 holders=3 limit=3\r\nEND count=1\r\n");
	/* Each holder is current for CHECK, not only the newest. */
	feed(w, 5, "CHECK s 1\nCHECK s 2\nCHECK s 4\n");
	assert_string_equal(take(w, 5), "CURRENT s fence=1 ttl=20000\r\n"
	    "CURRENT s fence=2 ttl=20000\r\nSTALE s fence=3\r\n");

	/* FIFO hand-off: c3 first, then c4. */
	service_world_feedf(w, 1, "RELEASE s %s\n", h[1]);
	assert_string_equal(take(w, 1), "RELEASED s\r\n");
	assert_int_equal(service_commit(&w->svc), 0);
	f[3] = fence_of(take(w, 3));
	assert_true(f[3] == 4);
	assert_string_equal(take(w, 4), "");
	assert_false(stored(w, "s", 2));
	assert_true(stored(w, "s", 4));
	service_world_feedf(w, 0, "RELEASE s %s\n", h[0]);
	take(w, 0);
	assert_int_equal(service_commit(&w->svc), 0);
	f[4] = fence_of(take(w, 4));
	assert_true(f[4] == 5);
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=5 "
	    "ttl=20000 queue=0 owner=c4 holders=3 limit=3");
	service_world_free(w);
}

/*
 * Readers run together; a writer waits for them; a reader behind the
 * waiting writer queues (no barging), and is granted after the writer.
 */
static void
test_holders_readers_together_writer_first_in_line(void **state)
{
	struct service_world *w = service_world_new();
	char r0[64], r1[64], wr[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE rw mode=shared\n");
	feed(w, 1, "TRY rw mode=shared\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 0), r0);
	service_world_handle(take(w, 1), r1);
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=2 "
	    "ttl=30000 queue=0 holders=2 mode=shared");
	feed(w, 2, "ACQUIRE rw\n");
	feed(w, 3, "ACQUIRE rw mode=shared\n");
	feed(w, 4, "TRY rw mode=shared\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 2), "");
	assert_string_equal(take(w, 3), "");
	assert_string_equal(take(w, 4), "HELD rw\r\n");
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=2 "
	    "ttl=30000 queue=2 holders=2 mode=shared");
	service_world_feedf(w, 0, "RELEASE rw %s\n", r0);
	service_world_feedf(w, 1, "RELEASE rw %s\n", r1);
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 2), wr);
	assert_string_equal(take(w, 3), "");
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=3 "
	    "ttl=30000 queue=1");
	service_world_feedf(w, 2, "RELEASE rw %s\n", wr);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_true(fence_of(take(w, 3)) == 4);
	service_world_free(w);
}

#define LIMIT_MISFIT "ERR BADARG limit differs from the lock's, set until " \
    "it is idle again, or from this rid's request\r\n"
#define MODE_MISFIT "ERR BADARG mode differs from this rid's request, or " \
    "is shared with a limit\r\n"

/*
 * A waiting writer that times out leaves the readers behind it at the
 * head: they are granted at once, beside the readers that hold.  WATCH's
 * CHANGED shows the holder fields too.
 */
static void
test_holders_readers_behind_a_writer_that_leaves(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE rw mode=shared lease=10s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	take(w, 0);
	feed(w, 1, "ACQUIRE rw wait=1s\n");
	feed(w, 2, "ACQUIRE rw mode=shared wait=5s\n");
	feed(w, 3, "WATCH rw fence=1 wait=5s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 2), "");
	w->mono += 1000;
	w->wall += 1000;
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 1),
	    "ERR TIMEOUT lock not acquired within wait\r\n");
	assert_true(fence_of(take(w, 2)) == 2);
	assert_string_equal(take(w, 3), "CHANGED rw held=1 fence=2 "
	    "ttl=30000 queue=0 holders=2 mode=shared cause=granted\r\n");
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=2 "
	    "ttl=30000 queue=0 holders=2 mode=shared");
	service_world_free(w);
}

/* What the spec calls ERR BADARG for limit= and mode=, each with text. */
static void
test_holders_badarg_cases(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE a limit=0\nACQUIRE a limit=65536\n"
	    "TRY a limit=x\nACQUIRE a mode=read\n"
	    "ACQUIRE a mode=shared limit=2\nTRY a limit=3 mode=shared\n"
	    "RENEW a 1-0000000000000000 limit=2\nLIST limit=1001\n");
	assert_string_equal(take(w, 0),
	    "ERR BADARG limit must be an integer from 1 to 65535\r\n"
	    "ERR BADARG limit must be an integer from 1 to 65535\r\n"
	    "ERR BADARG limit must be an integer from 1 to 65535\r\n"
	    "ERR BADARG mode must be exclusive or shared\r\n"
	    "ERR BADARG mode=shared takes no limit but 1\r\n"
	    "ERR BADARG mode=shared takes no limit but 1\r\n"
	    "ERR BADARG option not taken by this command\r\n"
	    "ERR BADARG limit must be an integer from 1 to 1000\r\n");
	/* Another limit while the name is busy (absent counts as 1). */
	feed(w, 0, "ACQUIRE s limit=2 rid=x1\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 0), "GRANTED s fence=1 "));
	feed(w, 1, "ACQUIRE s limit=3\nTRY s\nACQUIRE s mode=shared\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 1), LIMIT_MISFIT LIMIT_MISFIT
	    LIMIT_MISFIT);
	/* A rid repeat of another kind is BADARG; of the same, the grant. */
	feed(w, 2, "ACQUIRE s limit=3 rid=x1\n");
	feed(w, 3, "ACQUIRE rw mode=shared rid=q\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 3), "GRANTED rw fence=2 "));
	feed(w, 3, "ACQUIRE rw rid=q\nTRY rw mode=exclusive rid=q\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 2), LIMIT_MISFIT);
	assert_string_equal(take(w, 3), MODE_MISFIT MODE_MISFIT);
	feed(w, 2, "ACQUIRE s limit=2 mode=exclusive rid=x1\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 2), "GRANTED s fence=1 "));
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=1 "
	    "ttl=30000 queue=0 holders=1 limit=2");
	service_world_free(w);
}

/* --max-held counts every holder, not every name. */
static void
test_holders_max_held_counts_each_holder(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	w->config.core.max_held = 2;
	service_world_open(w);
	feed(w, 0, "ACQUIRE s limit=3\n");
	feed(w, 1, "ACQUIRE s limit=3\n");
	feed(w, 2, "ACQUIRE s limit=3 wait=0\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_non_null(strstr(take(w, 0), "GRANTED"));
	assert_non_null(strstr(take(w, 1), "GRANTED"));
	assert_non_null(strstr(take(w, 2), "ERR LIMIT"));
	service_world_free(w);
}

/*
 * kill -9 and a restart: every holder of a semaphore and of a shared lock
 * comes back with its lease, its owner and its rid (a repeat gets the
 * same grant back), and the fence counter goes on above them all.
 */
static void
test_holders_survive_a_restart(void **state)
{
	struct service_world *w = service_world_new();
	struct service_recovery rec;
	char hs[3][64], hr[2][64], again[64];

	(void)state;
	service_world_open(w);
	for (int i = 0; i < 3; i++)
		service_world_feedf(w, i, "ACQUIRE s limit=4 lease=%ds "
		    "owner=o%d rid=r%d\n", 10 + i, i, i);
	feed(w, 3, "ACQUIRE rw mode=shared lease=15s owner=ra rid=q0\n");
	feed(w, 4, "ACQUIRE rw mode=shared lease=25s onclose=release\n");
	assert_int_equal(service_commit(&w->svc), 0);
	for (int i = 0; i < 3; i++)
		service_world_handle(take(w, i), hs[i]);
	service_world_handle(take(w, 3), hr[0]);
	service_world_handle(take(w, 4), hr[1]);
	service_world_close(w);

	w->mono += 4000;
	assert_int_equal(service_open(&w->svc, &w->config, &w->store.base,
	    &w->clock, &rec), 0);
	w->open = true;
	for (int i = 0; i < SERVICE_WORLD_CONNS; i++)
		service_conn_open(&w->svc, &w->conns[i]);
	assert_int_equal(rec.leases, 5);
	assert_int_equal(rec.hwm, 5);
	/* The onclose reader's connection is gone: released at the load. */
	assert_int_equal(service_commit(&w->svc), 0);
	assert_false(stored(w, "rw", 5));
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=3 "
	    "ttl=8000 queue=0 owner=o2 holders=3 limit=4");
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=4 "
	    "ttl=11000 queue=0 owner=ra holders=1 mode=shared");
	feed(w, 5, "CHECK s 1\nCHECK s 2\n");
	assert_string_equal(take(w, 5), "CURRENT s fence=1 ttl=6000\r\n"
	    "CURRENT s fence=2 ttl=7000\r\n");
	/* The rids came back with their grants. */
	feed(w, 6, "ACQUIRE s limit=4 rid=r1\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 6), again);
	assert_string_equal(again, hs[1]);
	feed(w, 6, "ACQUIRE rw mode=shared rid=q0\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 6), again);
	assert_string_equal(again, hr[0]);
	/* Each holder renews and releases with its own handle. */
	service_world_feedf(w, 0, "RENEW s %s lease=30s\n", hs[0]);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 0), "RENEWED s fence=1 lease=30000\r\n");
	feed(w, 7, "ACQUIRE s limit=4\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_true(fence_of(take(w, 7)) == 6);
	service_world_free(w);
}

/*
 * A semaphore whose holder expired with a lock-delay: the name keeps its
 * limit through the delay, across a restart too (its delay record under
 * <name> carries it), so a request with the same limit waits or is HELD
 * rather than being told another limit.
 */
static void
test_holders_semaphore_in_lock_delay_keeps_its_limit(void **state)
{
	struct service_world *w = service_world_new();

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE s limit=3 lease=200 delay=2s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	take(w, 0);
	w->mono += 400;
	w->wall += 400;
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_true(stored(w, "s", 0) && !stored(w, "s", 1));
	assert_string_equal(status(w, 5, "s"), "STATUS s held=0 fence=0 "
	    "ttl=0 queue=0 holders=0 limit=3 delay=1800");
	service_world_close(w);
	service_world_open(w);
	assert_string_equal(status(w, 5, "s"), "STATUS s held=0 fence=0 "
	    "ttl=0 queue=0 holders=0 limit=3 delay=1800");
	feed(w, 1, "TRY s limit=3\n");
	assert_string_equal(take(w, 1), "HELD s delay=1800\r\n");
	service_world_free(w);
}

/*
 * An idle name has no limit: once a semaphore's last holder is gone and
 * no lock-delay runs, STATUS shows neither holders= nor limit=, as for any
 * free name (the next request sets the limit anew).
 */
static void
test_holders_idle_semaphore_shows_no_limit(void **state)
{
	struct service_world *w = service_world_new();
	char h0[64], h1[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE s limit=3 lease=10s\n");
	feed(w, 1, "ACQUIRE s limit=3 lease=10s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 0), h0);
	service_world_handle(take(w, 1), h1);
	service_world_feedf(w, 0, "RELEASE s %s\n", h0);
	assert_int_equal(service_commit(&w->svc), 0);
	take(w, 0);
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=2 "
	    "ttl=10000 queue=0 holders=1 limit=3");
	/* Asked in the same pipeline as the release, before its commit. */
	service_world_feedf(w, 1, "RELEASE s %s\nSTATUS s\n", h1);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(take(w, 1), "RELEASED s\r\nSTATUS s held=0 "
	    "fence=0 ttl=0 queue=0\r\n");
	assert_string_equal(status(w, 5, "s"), "STATUS s held=0 fence=0 "
	    "ttl=0 queue=0");
	/* The same once a lock-delay has run out. */
	feed(w, 2, "ACQUIRE d limit=2 lease=200 delay=1s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	take(w, 2);
	w->mono += 400;
	w->wall += 400;
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(status(w, 5, "d"), "STATUS d held=0 fence=0 "
	    "ttl=0 queue=0 holders=0 limit=2 delay=800");
	w->mono += 800;
	w->wall += 800;
	service_tick(&w->svc);
	assert_int_equal(service_commit(&w->svc), 0);
	assert_string_equal(status(w, 5, "d"), "STATUS d held=0 fence=0 "
	    "ttl=0 queue=0");
	feed(w, 3, "TRY d\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_true(fence_of(take(w, 3)) == 4);
	service_world_free(w);
}

/*
 * A failed commit of a semaphore grant: the grant is told UNAVAILABLE,
 * and the name falls back to the holders the store has; the burnt fence
 * is never minted again.
 */
static void
test_holders_failed_commit_of_a_semaphore_grant(void **state)
{
	struct service_world *w = service_world_new();
	char h0[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE s limit=3 lease=10s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 0), h0);
	w->store.fail_commits = 1;
	feed(w, 1, "ACQUIRE s limit=3\n");
	assert_int_equal(service_commit(&w->svc), -1);
	assert_string_equal(take(w, 1),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	assert_string_equal(status(w, 5, "s"), "STATUS s held=1 fence=1 "
	    "ttl=10000 queue=0 holders=1 limit=3");
	feed(w, 5, "CHECK s 2\n");
	assert_string_equal(take(w, 5), "STALE s fence=1\r\n");
	assert_false(stored(w, "s", 2));
	feed(w, 1, "ACQUIRE s limit=3\n");
	assert_int_equal(service_commit(&w->svc), 0);
	assert_true(fence_of(take(w, 1)) == 3);
	assert_true(stored(w, "s", 1) && stored(w, "s", 3));
	service_world_free(w);
}

/*
 * A failed commit of a shared release that handed the lock to a writer:
 * the writer is told UNAVAILABLE, and both readers hold again, as the
 * store has them.
 */
static void
test_holders_failed_commit_of_a_shared_release(void **state)
{
	struct service_world *w = service_world_new();
	char r0[64], r1[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE rw mode=shared lease=10s\n");
	feed(w, 1, "ACQUIRE rw mode=shared lease=10s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 0), r0);
	service_world_handle(take(w, 1), r1);
	feed(w, 2, "ACQUIRE rw\n");
	assert_int_equal(service_commit(&w->svc), 0);

	w->store.fail_commits = 1;
	service_world_feedf(w, 0, "RELEASE rw %s\n", r0);
	service_world_feedf(w, 1, "RELEASE rw %s\n", r1);
	assert_string_equal(take(w, 0), "RELEASED rw\r\n");
	assert_int_equal(service_commit(&w->svc), -1);
	assert_non_null(strstr(take(w, 2), "ERR UNAVAILABLE"));
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=2 "
	    "ttl=10000 queue=0 holders=2 mode=shared");
	assert_true(stored(w, "rw", 1) && stored(w, "rw", 2));
	/* What the table holds is what a restart finds. */
	service_world_close(w);
	service_world_open(w);
	assert_string_equal(status(w, 5, "rw"), "STATUS rw held=1 fence=2 "
	    "ttl=10000 queue=0 holders=2 mode=shared");
	service_world_free(w);
}

/*
 * A holder that ends while a batch of its name is in flight, and the
 * batch fails: the store still has that holder's record, so the table
 * must hold it again too - else its key would outlive it on disk and
 * bring it back at the next restart.  The fall-back reads the keys of the
 * holders that ended since the batch was formed as well.
 */
static void
test_holders_failed_batch_in_flight_keeps_an_ended_holder(void **state)
{
	struct service_world *w = service_world_new();
	char h0[64];

	(void)state;
	service_world_open(w);
	feed(w, 0, "ACQUIRE s limit=3 lease=10s\n");
	feed(w, 1, "ACQUIRE s limit=3 lease=10s\n");
	assert_int_equal(service_commit(&w->svc), 0);
	service_world_handle(take(w, 0), h0);
	take(w, 1);
	w->store.fail_commits = 1;
	feed(w, 2, "ACQUIRE s limit=3\n");
	assert_int_equal(service_commit_begin(&w->svc), 1);
	service_world_feedf(w, 0, "RELEASE s %s\n", h0);
	service_commit_write(&w->svc);
	assert_int_equal(service_commit_end(&w->svc), -1);
	assert_non_null(strstr(take(w, 2), "ERR UNAVAILABLE"));
	/* The release rested on the failed batch: it failed with it. */
	assert_string_equal(take(w, 0),
	    "ERR UNAVAILABLE store failed; nothing was granted or changed\r\n");
	assert_int_equal(service_commit(&w->svc), 0);
	feed(w, 5, "CHECK s 1\nCHECK s 2\nCHECK s 3\n");
	assert_string_equal(take(w, 5), "CURRENT s fence=1 ttl=10000\r\n"
	    "CURRENT s fence=2 ttl=10000\r\nSTALE s fence=2\r\n");
	assert_true(stored(w, "s", 1) && stored(w, "s", 2));
	assert_false(stored(w, "s", 3));
	service_world_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_holders_semaphore_of_three_with_five_clients),
		cmocka_unit_test(
		    test_holders_readers_together_writer_first_in_line),
		cmocka_unit_test(
		    test_holders_readers_behind_a_writer_that_leaves),
		cmocka_unit_test(test_holders_badarg_cases),
		cmocka_unit_test(test_holders_max_held_counts_each_holder),
		cmocka_unit_test(test_holders_survive_a_restart),
		cmocka_unit_test(
		    test_holders_semaphore_in_lock_delay_keeps_its_limit),
		cmocka_unit_test(test_holders_idle_semaphore_shows_no_limit),
		cmocka_unit_test(
		    test_holders_failed_commit_of_a_semaphore_grant),
		cmocka_unit_test(test_holders_failed_commit_of_a_shared_release),
		cmocka_unit_test(
		    test_holders_failed_batch_in_flight_keeps_an_ended_holder),
	};

	return cmocka_run_group_tests_name("service_holders", tests, NULL,
	    NULL);
}
