/*
 * service_world.h - a service (daemon/service.c) for the unit tests, with
 * no sockets and no loop: a clock the test moves, the in-memory store
 * (tests/lib/store_mem.h), and connections that are fed bytes and whose
 * output is read back.  The store outlives the service, so a test can
 * close the service (a crash: memory gone, what was committed stays) and
 * open it again over the same store.
 */
#ifndef LOCKD_TESTS_SERVICE_WORLD_H
#define LOCKD_TESTS_SERVICE_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/service.h"
#include "tests/lib/store_mem.h"

#define SERVICE_WORLD_CONNS 8

struct service_world {
	core_time mono;          /* the service's monotonic clock, ms */
	int64_t wall;            /* its wall clock, Unix ms */
	struct service_clock clock;
	struct store_mem store;
	struct service_config config;   /* service_open's, changeable first */
	struct service svc;
	struct service_conn conns[SERVICE_WORLD_CONNS];
	uint64_t secrets;        /* the core's secrets, counted: 0x1000 on */
	bool open;
};

/* A world with the default configuration, not open yet (the test may
 * change w->config first); mono at 1,000,000, wall at 1.7e12. */
struct service_world *service_world_new(void);
/* Opens the service over the store, and every connection. */
void service_world_open(struct service_world *w);
/* The process dies: the service is closed, the store stays. */
void service_world_close(struct service_world *w);
void service_world_free(struct service_world *w);
/* Moves both clocks on by ms. */
void service_world_advance(struct service_world *w, int64_t ms);
/* Feeds text to connection c (no commit). */
void service_world_feed(struct service_world *w, int c, const char *text);
/* service_world_feed of a formatted request (a handle from a reply). */
void service_world_feedf(struct service_world *w, int c, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
/* Everything written to connection c so far, as a string (in a static
 * buffer of 1 MiB, valid until the next call), marked as written. */
char *service_world_take(struct service_world *w, int c);
/* The handle of a GRANTED line into out (64 bytes); fails the test, naming
 * the line, when it is no grant. */
void service_world_handle(const char *granted, char *out);

#endif
