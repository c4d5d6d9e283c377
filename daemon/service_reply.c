/*
 * service_reply.c - reply ordering: what a connection is told, in the
 * order it asked.  A reply that can go at once is appended to the
 * connection's output; one that cannot - an ACQUIRE or WATCH still
 * waiting, a GRANTED or RENEWED whose state is not yet durable, a reply
 * about a lock the batch in flight writes, or anything behind those -
 * waits in a slot that names the batches it waits for.  Group commit
 * (service_commit.c) says when batches are durable (service__release) or
 * failed (service__fail_replies); this file asks it nothing.  No sockets:
 * the server takes the output (service_next_ready, service_conn_written).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "daemon/log.h"
#include "daemon/service.h"
#include "daemon/service_int.h"

/* ---- buffers ---------------------------------------------------------- */

/* A connection's buffers start this small and double as they fill. */
#define BUF_FIRST_CAP 512
/* An output buffer grown past this is freed once written out, so that one
 * burst of replies does not pin its memory for the connection's life. */
#define OUT_KEEP_CAP 65536

bool
service__buf_append(struct service_buf *b, const char *data, size_t len)
{
	if (len == 0)
		return true;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : BUF_FIRST_CAP;
		char *p;
		while (cap < b->len + len)
			cap *= 2;
		if ((p = realloc(b->data, cap)) == NULL)
			return false;
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return true;
}

void
service__buf_free(struct service_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- reply delivery --------------------------------------------------- */

void
service__mark_ready(struct service *svc, struct service_conn *conn)
{
	if (link_empty(&conn->ready_link))
		link_append(&svc->ready, &conn->ready_link);
}

static void
check_output_cap(struct service *svc, struct service_conn *conn)
{
	if (conn->overflow ||
	    conn->out.len + conn->slots_bytes <= svc->config.max_output)
		return;
	conn->overflow = true;
	svc->stats.output_overflows++;
	svc->metrics.limit_hits[METRICS_LIMIT_OUTPUT]++;
	log_limited(&svc->limit_log, LOG_WARN, "limit",
	    "kind=output conn=%llu bytes=%zu",
	    (unsigned long long)conn->session.id,
	    conn->out.len + conn->slots_bytes);
	service__mark_ready(svc, conn);
}

static bool
slot_ready(const struct service *svc, const struct service_slot *s)
{
	return s->resolved && s->batch <= svc->released_seq &&
	    s->depends <= svc->released_seq;
}

static void
advance(struct service *svc, struct service_conn *conn)
{
	struct service_slot *s;
	bool moved = false;

	while ((s = conn->slots_head) != NULL && slot_ready(svc, s)) {
		if (!conn->overflow && !service__buf_append(&conn->out,
		    s->text, s->len))
			conn->overflow = true;
		conn->slots_head = s->next;
		if (conn->slots_head == NULL)
			conn->slots_tail = NULL;
		conn->slots_bytes -= sizeof(*s) + s->cap;
		free(s);
		moved = true;
	}
	if (s != NULL && s->resolved) {
		if (link_empty(&conn->waiting_link))
			link_append(&svc->waiting, &conn->waiting_link);
	} else if (!link_empty(&conn->waiting_link)) {
		link_remove(&conn->waiting_link);
	}
	if (moved || conn->overflow)
		service__mark_ready(svc, conn);
}

/* A slot for request seq whose reply will take at most cap bytes. */
static struct service_slot *
slot_add(struct service *svc, struct service_conn *conn, uint64_t seq,
    size_t cap)
{
	struct service_slot *s = malloc(sizeof(*s) + cap);

	if (s == NULL) {
		/* Without a slot the reply order cannot be kept: give up on
		 * this client rather than answer out of order. */
		conn->overflow = true;
		service__mark_ready(svc, conn);
		return NULL;
	}
	s->next = NULL;
	s->seq = seq;
	s->batch = 0;
	s->depends = 0;
	s->resolved = false;
	s->told.kind = SERVICE_TOLD_OWN;
	s->told.error = PROTO_ERR_NONE;
	s->len = 0;
	s->cap = (uint32_t)cap;
	if (conn->slots_tail != NULL)
		conn->slots_tail->next = s;
	else
		conn->slots_head = s;
	conn->slots_tail = s;
	conn->slots_bytes += sizeof(*s) + cap;
	check_output_cap(svc, conn);
	return s;
}

/* service_int.h */
void
service__slot_reserve(struct service *svc, struct service_conn *conn,
    uint64_t seq)
{
	slot_add(svc, conn, seq, PROTO_REPLY_MAX);
}

/*
 * Delivers the reply text of request `seq` on conn, which told what
 * `told` says.  `batch` is the batch that must be durable first,
 * `depends` the batch in flight that the reply rests on (0: none); the
 * failure of either makes it ERR UNAVAILABLE.
 */
void
service__deliver(struct service *svc, struct service_conn *conn,
    uint64_t seq,
    uint64_t batch, uint64_t depends, struct service_told told,
    const char *text, size_t len)
{
	struct service_slot *s;
	bool gated = batch != 0 || depends != 0;

	if (seq == conn->next_seq)
		conn->answered_seq = seq;
	if (conn->overflow)
		return;
	if (conn->slots_head == NULL && !gated) {
		/* The common case: nothing ahead of it, nothing to wait for. */
		if (!service__buf_append(&conn->out, text, len))
			conn->overflow = true;
		service__mark_ready(svc, conn);
		check_output_cap(svc, conn);
		return;
	}
	for (s = conn->slots_head; s != NULL; s = s->next)
		if (s->seq == seq)
			break;
	/* A reply that waits for a commit may yet become ERR UNAVAILABLE. */
	if (s == NULL && (s = slot_add(svc, conn, seq,
	    gated && len < UNAVAILABLE_LINE_LEN ? UNAVAILABLE_LINE_LEN :
	    len)) == NULL)
		return;
	if (len > s->cap) {
		/* Only a waiting ACQUIRE's slot exists before its reply,
		 * and its replies all fit PROTO_REPLY_MAX. */
		conn->overflow = true;
		service__mark_ready(svc, conn);
		return;
	}
	memcpy(s->text, text, len);
	s->len = (uint32_t)len;
	s->batch = batch;
	s->depends = depends;
	s->resolved = true;
	s->told = told;
	advance(svc, conn);
}

/* A reply of the service's own (not the core's) for request seq. */
void
service__answer(struct service *svc, struct service_conn *conn,
    uint64_t seq,
    uint64_t batch, uint64_t depends, const char *text, size_t len)
{
	struct service_told own = { SERVICE_TOLD_OWN, PROTO_ERR_NONE };

	service__deliver(svc, conn, seq, batch, depends, own, text, len);
}

/* An ERR line, counted, answering a core's reply of kind `kind` or
 * (SERVICE_TOLD_OWN) the service's own check. */
void
service__error_line(struct service *svc, struct service_conn *conn,
    uint64_t seq,
    uint64_t batch, uint64_t depends, uint8_t kind,
    enum proto_error_code code, const char *text)
{
	struct service_told told = { kind, (uint8_t)code };
	char line[PROTO_REPLY_MAX];
	size_t n = proto_format_error(line, sizeof(line), code, text);

	svc->stats.protocol_errors[code]++;
	service__deliver(svc, conn, seq, batch, depends, told, line, n);
}

void
service__answer_error(struct service *svc, struct service_conn *conn,
    uint64_t seq,
    uint64_t batch, uint64_t depends, enum proto_error_code code,
    const char *text)
{
	service__error_line(svc, conn, seq, batch, depends, SERVICE_TOLD_OWN,
	    code, text);
}

/* ---- failed batches -------------------------------------------------- */

/* A reply that was counted when it was decided will not be sent: its
 * count is taken back, so that the counters count what clients were told. */
static void
untell(struct service *svc, struct service_told told)
{
	struct service_untold *u = &svc->stats.untold;

	if (told.error != PROTO_ERR_NONE) {
		svc->stats.protocol_errors[told.error]--;
		if (told.error == PROTO_ERR_TIMEOUT)
			u->timeouts++;
		else if (told.error == PROTO_ERR_CONFLICT)
			u->conflicts++;
		return;
	}
	switch (told.kind) {
	case CORE_REPLY_GRANTED:
		u->granted++;
		break;
	case CORE_REPLY_RENEWED:
		u->renewed++;
		break;
	case CORE_REPLY_RELEASED:
		u->released++;
		break;
	case CORE_REPLY_FORCED:     /* its RELEASED counted a forced hold */
		u->forced++;
		break;
	case CORE_REPLY_HELD:
		u->unavailable++;
		break;
	default:
		break;
	}
}

/*
 * Turns every reply waiting on `batch` - its own GRANTED and RENEWED, and
 * what rests on it - into UNAVAILABLE.  Every connection is looked at: such
 * a reply may sit behind a waiting ACQUIRE, on a connection that is not on
 * the waiting list.
 */
void
service__fail_replies(struct service *svc, uint64_t batch)
{
	struct core_link *l, *next;

	for (l = svc->conns.next; l != &svc->conns; l = next) {
		struct service_conn *conn = container_of(l,
		    struct service_conn, all_link);
		struct service_slot *s;
		bool failed = false;

		next = l->next;
		for (s = conn->slots_head; s != NULL; s = s->next) {
			if (!s->resolved ||
			    (s->batch != batch && s->depends != batch))
				continue;
			untell(svc, s->told);
			s->len = (uint32_t)proto_format_error(s->text,
			    s->cap, PROTO_ERR_UNAVAILABLE, UNAVAILABLE_TEXT);
			s->told.kind = SERVICE_TOLD_OWN;
			s->told.error = PROTO_ERR_UNAVAILABLE;
			s->batch = 0;
			s->depends = 0;
			svc->stats.protocol_errors[PROTO_ERR_UNAVAILABLE]++;
			failed = true;
		}
		if (failed)
			advance(svc, conn);
	}
}

/* service_int.h */
void
service__release(struct service *svc, uint64_t durable)
{
	struct core_link *l, *next;

	svc->released_seq = durable;
	for (l = svc->waiting.next; l != &svc->waiting; l = next) {
		next = l->next;
		advance(svc, container_of(l, struct service_conn,
		    waiting_link));
	}
}

void
service__slots_free(struct service_conn *conn)
{
	struct service_slot *s, *next;

	for (s = conn->slots_head; s != NULL; s = next) {
		next = s->next;
		free(s);
	}
	conn->slots_head = conn->slots_tail = NULL;
}

/* ---- the server's side ----------------------------------------------- */

void
service_conn_written(struct service_conn *conn, size_t n)
{
	if (n == 0)
		return;
	if (n < conn->out.len)
		memmove(conn->out.data, conn->out.data + n, conn->out.len - n);
	conn->out.len -= n;
	if (conn->out.len == 0 && conn->out.cap > OUT_KEEP_CAP)
		service__buf_free(&conn->out);
}

struct service_conn *
service_next_ready(struct service *svc)
{
	struct service_conn *conn;

	if (link_empty(&svc->ready))
		return NULL;
	conn = container_of(svc->ready.next, struct service_conn, ready_link);
	link_remove(&conn->ready_link);
	return conn;
}
