/*
 * uv_loop.c - the libuv client tests' loop and recording callbacks; see
 * uv_loop.h.  Nothing here starts a server or opens a socket itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tests/lib/harness.h"
#include "tests/lib/uv_loop.h"

uv_loop_t harness_uv_loop;
int harness_uv_callbacks;

void
harness_uv_on_reply(lockd_uv_client *client, int result,
    const lockd_reply *reply, void *arg)
{
	struct harness_uv_result *r = arg;

	(void)client;
	assert_non_null(reply);
	r->done = true;
	r->calls++;
	r->result = result;
	r->reply = *reply;
	r->order = harness_uv_callbacks++;
}

void
harness_uv_on_connect(lockd_uv_client *client, int result, void *arg)
{
	struct harness_uv_result *r = arg;

	(void)client;
	r->done = true;
	r->calls++;
	r->result = result;
}

void
harness_uv_on_closed(lockd_uv_client *client, void *arg)
{
	(void)client;
	*(bool *)arg = true;
}

int
harness_uv_shared_setup(void **state)
{
	assert_int_equal(uv_loop_init(&harness_uv_loop), 0);
	return harness_shared_setup(state);
}

int
harness_uv_shared_teardown(void **state)
{
	uv_run(&harness_uv_loop, UV_RUN_NOWAIT);
	/* Every handle of every client was closed and freed. */
	assert_int_equal(uv_loop_close(&harness_uv_loop), 0);
	return harness_shared_teardown(state);
}

static void
harness_uv_guard_tick(uv_timer_t *t)
{
	(void)t;
}

bool
harness_uv_run_until(const bool *flag, int64_t ms)
{
	uv_timer_t guard;
	int64_t end = harness_now_ms() + ms;

	uv_timer_init(&harness_uv_loop, &guard);
	uv_timer_start(&guard, harness_uv_guard_tick, 10, 10);
	while (!*flag && harness_now_ms() < end)
		uv_run(&harness_uv_loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&harness_uv_loop, UV_RUN_NOWAIT);
	return *flag;
}

void
harness_uv_run_for(int64_t ms)
{
	bool never = false;

	harness_uv_run_until(&never, ms);
}

lockd_uv_client *
harness_uv_connect(const lockd_options *o, int64_t timeout_ms)
{
	struct harness_uv_result r = { 0 };
	lockd_uv_client *c = lockd_uv_connect(&harness_uv_loop, o,
	    harness_uv_on_connect, &r);

	assert_non_null(c);
	assert_true(harness_uv_run_until(&r.done, timeout_ms));
	if (r.result != LOCKD_OK)
		fail_msg("connect: %s", lockd_uv_errstr(c));
	return c;
}

void
harness_uv_close(lockd_uv_client *c)
{
	bool closed = false;

	lockd_uv_close(c, harness_uv_on_closed, &closed);
	assert_true(harness_uv_run_until(&closed, HARNESS_UV_CLOSE_TIMEOUT_MS));
}
