/*
 * kinds.h - issue 17's kinds of lock as the client tests ask for them
 * (test_liblockd.c, test_uv_kinds.c): a lockd_kind filled the way a
 * careful caller fills it, and the acquire options those tests share.
 * Nothing here talks to a server.
 */
#ifndef LOCKD_TESTS_KINDS_H
#define LOCKD_TESTS_KINDS_H

#include "client/lockd.h"

/* A lockd_kind of this limit and mode, its size set. */
lockd_kind harness_kind(unsigned int limit, int mode);

/* ACQUIRE's and TRY's options for these tests: a 10 s lease, wait_ms
 * (0: not at all) and onclose. */
lockd_acquire_options harness_wait_options(int64_t wait_ms, int onclose);

#endif /* LOCKD_TESTS_KINDS_H */
