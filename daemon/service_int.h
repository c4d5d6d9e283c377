/*
 * service_int.h - what the files of the service share and nobody else may
 * see: reply ordering (service_reply.c: the slot, delivery, and what group
 * commit tells it), and the state, the in-flight index and the promises
 * of group commit (service_commit.c).  service.c, request handling, calls
 * both; group commit calls reply ordering; reply ordering calls neither.
 * The server, the simulator and the tests use service.h only.
 *
 * Internal non-static names carry a double underscore (service__), as
 * libuv's do.
 */
#ifndef LOCKD_SERVICE_INT_H
#define LOCKD_SERVICE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/service.h"

/*
 * What a reply told its client, as the counters counted it when it was
 * decided: the core's reply it answers (SERVICE_TOLD_OWN for one of the
 * service's own: PONG, STATUS, a refusal...) and, for an ERR line, its
 * code.  A reply that fails with its batch is taken back from the
 * counters by this, never by reading its text again.
 */
struct service_told {
	uint8_t kind;            /* enum core_reply_kind, or SERVICE_TOLD_OWN */
	uint8_t error;           /* enum proto_error_code; PROTO_ERR_NONE */
};
#define SERVICE_TOLD_OWN 0xff

/* A reply waiting for its turn, or for its batch to be committed. */
struct service_slot {
	struct service_slot *next;
	uint64_t seq;            /* the request's number on its connection */
	uint64_t batch;          /* must be durable first; 0: none */
	uint64_t depends;        /* the batch in flight it rests on; 0: none */
	bool resolved;           /* the text is there */
	struct service_told told;   /* what the text says, for the counters */
	uint32_t len;            /* LIST's reply may pass 64 KiB */
	uint32_t cap;
	char text[];             /* cap bytes */
};

/* What a GRANTED or RENEWED becomes when its commit fails; its slot is
 * made at least this long, and no longer, so that a client pipelining
 * thousands of grants is not charged PROTO_REPLY_MAX for each against its
 * output cap. */
#define UNAVAILABLE_TEXT "store failed; nothing was granted or changed"
#define UNAVAILABLE_LINE_LEN \
	(sizeof("ERR UNAVAILABLE " UNAVAILABLE_TEXT "\r\n") - 1)

/*
 * service_commit.c: group commit's state made ready for a service being
 * opened (nothing formed, nothing durable, the batch empty), and freed.
 * service__commit_stored_hwm tells it the high-water mark the store
 * holds, so that no commit writes it again until it changes.
 */
void service__commit_open(struct service *svc);
void service__commit_close(struct service *svc);
void service__commit_stored_hwm(struct service *svc, uint64_t hwm);

/* ---- service_reply.c: reply ordering --------------------------------- */

/* A buffer grown as needed (false without memory), and freed. */
bool service__buf_append(struct service_buf *b, const char *data,
    size_t len);
void service__buf_free(struct service_buf *b);
/* conn has output to write, or must close: service_next_ready gives it. */
void service__mark_ready(struct service *svc, struct service_conn *conn);
/*
 * Delivers the reply text of request seq on conn, which told what `told`
 * says.  `batch` is the batch that must be durable first, `depends` the
 * batch in flight that the reply rests on (0: none); the failure of
 * either makes it ERR UNAVAILABLE.
 */
void service__deliver(struct service *svc, struct service_conn *conn,
    uint64_t seq, uint64_t batch, uint64_t depends,
    struct service_told told, const char *text, size_t len);
/* A reply of the service's own (not the core's) for request seq. */
void service__answer(struct service *svc, struct service_conn *conn,
    uint64_t seq, uint64_t batch, uint64_t depends, const char *text,
    size_t len);
/* An ERR line, counted, answering a core's reply of kind `kind` or
 * (SERVICE_TOLD_OWN) one of the service's own checks. */
void service__error_line(struct service *svc, struct service_conn *conn,
    uint64_t seq, uint64_t batch, uint64_t depends, uint8_t kind,
    enum proto_error_code code, const char *text);
void service__answer_error(struct service *svc, struct service_conn *conn,
    uint64_t seq, uint64_t batch, uint64_t depends,
    enum proto_error_code code, const char *text);
/* Request seq was executed without a reply yet (a waiting ACQUIRE or
 * WATCH): a slot keeps its place in the reply order. */
void service__slot_reserve(struct service *svc, struct service_conn *conn,
    uint64_t seq);
/* Frees conn's slots (it closed). */
void service__slots_free(struct service_conn *conn);
/*
 * Group commit's word on the replies: every batch up to `durable` is
 * durable, so the replies that waited for them leave (service__release);
 * `batch` failed, so every reply waiting on it - its own GRANTED and
 * RENEWED, and what rests on it - becomes ERR UNAVAILABLE and is taken
 * back from the counters (service__fail_replies).
 */
void service__release(struct service *svc, uint64_t durable);
void service__fail_replies(struct service *svc, uint64_t batch);

/* ---- service_commit.c: group commit ---------------------------------- */

/* service_commit.c: the batch in flight when it writes this lock (any of
 * its keys: its own, its holders'), else 0: a reply about the lock must
 * not leave before that batch is durable. */
uint64_t service__inflight_depends(struct service *svc, const char *name,
    size_t len);

/*
 * service_commit.c: a GRANTED or RENEWED promises its lock's new state
 * once its batch is durable.  service__promise() notes the batch now
 * forming in the lock's entry (*user) and returns it;
 * service__promise_open() tells whether a batch so noted has not ended.
 */
uint64_t service__promise(struct service *svc, uint64_t *user);

/*
 * service_commit.c: one change the core reports, into the batch now
 * forming: the record of (name, key_fence) - the name's own key for
 * key_fence 0, else that holder's key (daemon/format.h) - or its delete
 * when rec is NULL, settled when no promise rests on it.  -1 without
 * memory.  What the core's per-key record callback (issue 17) calls.
 */
int service__batch_key(struct service *svc, const char *name,
    size_t name_len, uint64_t key_fence, const struct core_record *rec,
    core_time now, int64_t wall);
bool service__promise_open(const struct service *svc, uint64_t batch);

#endif
