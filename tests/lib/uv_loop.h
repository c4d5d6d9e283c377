/*
 * uv_loop.h - the loop the libuv client's tests (test_uv.c, test_uv_tls.c)
 * run lockd_uv.h's clients on, and the callbacks that record what each
 * request got.  One loop per test program, initialised by its setup.
 *
 * No test may hang: harness_uv_run_until() runs the loop until a flag is
 * set or a time limit passes (a 10 ms guard timer wakes it), and every
 * helper here that waits is bounded by it.
 */
#ifndef LOCKD_TESTS_UV_LOOP_H
#define LOCKD_TESTS_UV_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "client/lockd_uv.h"

/* The bound on harness_uv_close's wait for a close callback. */
#define HARNESS_UV_CLOSE_TIMEOUT_MS 10000

extern uv_loop_t harness_uv_loop;
/* Request callbacks so far (harness_uv_on_reply's), for their order. */
extern int harness_uv_callbacks;

/* One finished request (or connect), as its callback saw it. */
struct harness_uv_result {
	bool done;
	int calls;
	int result;
	lockd_reply reply;
	int order;            /* the how-many-th request callback it was */
};

/* lockd_uv_reply_cb into the struct harness_uv_result at arg. */
void harness_uv_on_reply(lockd_uv_client *client, int result,
    const lockd_reply *reply, void *arg);
/* lockd_uv_connect_cb into the struct harness_uv_result at arg. */
void harness_uv_on_connect(lockd_uv_client *client, int result, void *arg);
/* lockd_uv_close_cb: sets the bool at arg. */
void harness_uv_on_closed(lockd_uv_client *client, void *arg);

/*
 * cmocka group setup and teardown for a program whose tests share one
 * lockd (harness_shared_setup): the loop is initialised first, and at the
 * end every handle of every client must have been closed and freed.
 */
int harness_uv_shared_setup(void **state);
int harness_uv_shared_teardown(void **state);

/* A client connected on the loop with options o, once its connect callback
 * has come (the test fails if it does not in timeout_ms, or fails). */
lockd_uv_client *harness_uv_connect(const lockd_options *o,
    int64_t timeout_ms);

/* Runs the loop until *flag is true or ms pass; the flag's value. */
bool harness_uv_run_until(const bool *flag, int64_t ms);
/* Runs the loop for ms, whatever happens. */
void harness_uv_run_for(int64_t ms);
/* Closes c and runs the loop until its close callback has come (the test
 * fails if it does not within HARNESS_UV_CLOSE_TIMEOUT_MS). */
void harness_uv_close(lockd_uv_client *c);

#endif /* LOCKD_TESTS_UV_LOOP_H */
