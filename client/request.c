/*
 * request.c - the part of liblockd both transports share: a request checked
 * and formatted with proto_format_request(), a reply parsed with
 * proto_parse_reply() and matched to the request it answers, and the queue
 * of requests whose replies are due.
 *
 * Pure, like proto/: no socket, no clock read, no allocation but the
 * queue's, no libuv.  The blocking context (lockd.c) and the libuv client
 * (uv.c) are only transports around it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/request.h"
#include "proto/proto.h"

#define LOCKD__REPLY_LINE_MAX PROTO_LINE_MAX_DEFAULT

__attribute__((format(printf, 3, 4)))
static int
lockd__error(char *errstr, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errstr, LOCKD_ERRSTR_SIZE, fmt, ap);
	va_end(ap);
	return code;
}

/* The server's error codes, in proto's order, as our results. */
static int
lockd__server_error(enum proto_error_code code)
{
	switch (code) {
	case PROTO_ERR_BADREQ: return LOCKD_ERR_BADREQ;
	case PROTO_ERR_BADARG: return LOCKD_ERR_BADARG;
	case PROTO_ERR_TOOLONG: return LOCKD_ERR_TOOLONG;
	case PROTO_ERR_TIMEOUT: return LOCKD_ERR_WAIT_TIMEOUT;
	case PROTO_ERR_CONFLICT: return LOCKD_ERR_CONFLICT;
	case PROTO_ERR_LIMIT: return LOCKD_ERR_LIMIT;
	case PROTO_ERR_UNAVAILABLE: return LOCKD_ERR_UNAVAILABLE;
	case PROTO_ERR_OVERFLOW: return LOCKD_ERR_OVERFLOW;
	case PROTO_ERR_SHUTDOWN: return LOCKD_ERR_SHUTDOWN;
	case PROTO_ERR_DENIED: return LOCKD_ERR_DENIED;
	case PROTO_ERR_NOTLEADER: return LOCKD_ERR_NOTLEADER;
	default: return LOCKD_ERR_PROTOCOL;
	}
}

/*
 * Formatting.  A request is checked completely before it is formatted, so a
 * refused one changes nothing in the transport.
 */

static int
lockd__begin(struct proto_request *req, enum proto_command command,
    const char *name, char *errstr)
{
	memset(req, 0, sizeof(*req));
	req->command = command;
	if (name != NULL) {
		if (!proto_valid_name(name, strlen(name)))
			return lockd__error(errstr, LOCKD_ERR_INVALID,
			    "invalid lock name (1 to %d bytes, no blanks or "
			    "control bytes)", LOCKD_NAME_MAX);
		req->name = name;
		req->name_len = strlen(name);
	}
	return LOCKD_OK;
}

/* The same for RENEW and RELEASE, which name a lease. */
static int
lockd__begin_lease(struct proto_request *req, enum proto_command command,
    const lockd_lease *lease, char *errstr)
{
	if (lease == NULL || strnlen(lease->name, sizeof(lease->name)) ==
	    sizeof(lease->name))
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "no lease given");
	if (lockd__begin(req, command, lease->name, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (!proto_parse_handle(lease->handle, strnlen(lease->handle,
	    sizeof(lease->handle)), &req->handle))
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "invalid handle");
	return LOCKD_OK;
}

static int
lockd__set_duration(const char *what, int64_t ms, bool *has, int64_t *out,
    char *errstr)
{
	if (ms < 0 || ms > PROTO_DURATION_MAX_MS)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "%s must be 0 to %lld ms", what,
		    (long long)PROTO_DURATION_MAX_MS);
	*has = true;
	*out = ms;
	return LOCKD_OK;
}

static int
lockd__set_onclose(struct proto_request *req, int onclose, char *errstr)
{
	if (onclose != LOCKD_ONCLOSE_KEEP && onclose != LOCKD_ONCLOSE_RELEASE)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "bad onclose value");
	/* keep is the server's default: say nothing. */
	if (onclose == LOCKD_ONCLOSE_RELEASE) {
		req->has_onclose = true;
		req->onclose = PROTO_ONCLOSE_RELEASE;
	}
	return LOCKD_OK;
}

static int
lockd__set_lease(struct proto_request *req, int64_t lease_ms, char *errstr)
{
	/* 0 asks for the server's default, said by leaving the option out. */
	if (lease_ms == 0)
		return LOCKD_OK;
	return lockd__set_duration("lease", lease_ms, &req->has_lease,
	    &req->lease_ms, errstr);
}

/* Formats req into r with what its reply will need. */
static int
lockd__finish(struct lockd__request *r, const struct proto_request *req,
    const char *handle, char *errstr)
{
	struct lockd__pending *p = &r->pending;

	r->len = proto_format_request(r->line, sizeof(r->line), req);
	if (r->len == 0)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "request cannot be formatted");
	r->has_rid = req->rid_len > 0;
	memset(p, 0, sizeof(*p));
	/* req was filled by the caller's request function (the analyzer
	 * cannot follow it there). */
	switch (req->command) { /* NOLINT(clang-analyzer-core.uninitialized.Branch) */
	case PROTO_CMD_FORCE:
		p->command = LOCKD_CMD_FORCE;
		break;
	case PROTO_CMD_CHECK:
		p->command = LOCKD_CMD_CHECK;
		break;
	case PROTO_CMD_WATCH:
		p->command = LOCKD_CMD_WATCH;
		break;
	case PROTO_CMD_LIST:
		p->command = LOCKD_CMD_LIST;
		break;
	case PROTO_CMD_STATS:
		p->command = LOCKD_CMD_STATS;
		break;
	default:
		/* The v1 commands share their order. */
		p->command = (lockd_command)req->command;
		break;
	}
	p->wait_ms = 0;
	if (req->command == PROTO_CMD_ACQUIRE ||
	    req->command == PROTO_CMD_WATCH)
		p->wait_ms = req->has_wait ? req->wait_ms : LOCKD_WAIT_FOREVER;
	p->sent_ms = -1;
	p->name_len = req->name_len;
	if (req->name_len > 0)
		memcpy(p->name, req->name, req->name_len);
	if (handle != NULL)
		snprintf(p->handle, sizeof(p->handle), "%s", handle);
	p->fence = req->command == PROTO_CMD_FORCE ||
	    req->command == PROTO_CMD_CHECK ? req->fence : req->handle.fence;
	return LOCKD_OK;
}

int
lockd__request_acquire(struct lockd__request *r, const char *name,
    int64_t lease_ms, int64_t wait_ms, int onclose, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_ACQUIRE, name, errstr) != LOCKD_OK ||
	    lockd__set_lease(&req, lease_ms, errstr) != LOCKD_OK ||
	    lockd__set_onclose(&req, onclose, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (wait_ms != LOCKD_WAIT_FOREVER && lockd__set_duration("wait",
	    wait_ms, &req.has_wait, &req.wait_ms, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_try(struct lockd__request *r, const char *name,
    int64_t lease_ms, int onclose, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_TRY, name, errstr) != LOCKD_OK ||
	    lockd__set_lease(&req, lease_ms, errstr) != LOCKD_OK ||
	    lockd__set_onclose(&req, onclose, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_renew(struct lockd__request *r, const lockd_lease *lease,
    int64_t lease_ms, char *errstr)
{
	struct proto_request req;

	if (lockd__begin_lease(&req, PROTO_CMD_RENEW, lease, errstr) !=
	    LOCKD_OK || lockd__set_lease(&req, lease_ms, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, lease->handle, errstr);
}

int
lockd__request_release(struct lockd__request *r, const lockd_lease *lease,
    char *errstr)
{
	struct proto_request req;

	if (lockd__begin_lease(&req, PROTO_CMD_RELEASE, lease, errstr) !=
	    LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, lease->handle, errstr);
}

int
lockd__request_status(struct lockd__request *r, const char *name,
    char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_STATUS, name, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_ping(struct lockd__request *r, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_PING, NULL, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_stats(struct lockd__request *r, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_STATS, NULL, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_acquire_ex(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, char *errstr)
{
	return lockd__request_acquire_rid(r, try_only, name, o, NULL, errstr);
}

int
lockd__request_acquire_rid(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, const char *rid,
    char *errstr)
{
	return lockd__request_acquire_kind(r, try_only, name, o, NULL, rid,
	    errstr);
}

/*
 * limit= and mode= from *kind into *req.  Only the fields that kind->size
 * covers are read, so a caller built against an older lockd_kind works.
 */
static int
lockd__set_kind(struct proto_request *req, const lockd_kind *kind,
    char *errstr)
{
	uint32_t limit = 0;
	int mode = LOCKD_MODE_EXCLUSIVE;

	if (kind == NULL)
		return LOCKD_OK;
	if (kind->size < offsetof(lockd_kind, limit) + sizeof(kind->limit))
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "lockd_kind: size not set (sizeof(lockd_kind))");
	limit = kind->limit;
	if (kind->size >= offsetof(lockd_kind, mode) + sizeof(kind->mode))
		mode = kind->mode;
	if (limit > PROTO_HOLDERS_LIMIT_MAX)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "limit must be 1 to %d", PROTO_HOLDERS_LIMIT_MAX);
	if (mode != LOCKD_MODE_EXCLUSIVE && mode != LOCKD_MODE_SHARED)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "mode must be LOCKD_MODE_EXCLUSIVE or _SHARED");
	if (mode == LOCKD_MODE_SHARED && limit > 1)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "a shared lock has no limit above 1");
	/* limit 0 or 1 and exclusive: a plain lock, said as on the wire
	 * by leaving both out. */
	if (limit > 1) {
		req->has_limit = true;
		req->limit = limit;
	}
	if (mode == LOCKD_MODE_SHARED) {
		req->has_mode = true;
		req->mode = PROTO_MODE_SHARED;
	}
	return LOCKD_OK;
}

int
lockd__request_acquire_kind(struct lockd__request *r, bool try_only,
    const char *name, const lockd_acquire_options *o, const lockd_kind *kind,
    const char *rid, char *errstr)
{
	lockd_acquire_options none = { 0, LOCKD_WAIT_FOREVER,
	    LOCKD_ONCLOSE_KEEP, NULL, 0 };
	struct proto_request req;

	if (o == NULL)
		o = &none;
	if (lockd__begin(&req, try_only ? PROTO_CMD_TRY : PROTO_CMD_ACQUIRE,
	    name, errstr) != LOCKD_OK ||
	    lockd__set_lease(&req, o->lease_ms, errstr) != LOCKD_OK ||
	    lockd__set_onclose(&req, o->onclose, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (!try_only && o->wait_ms != LOCKD_WAIT_FOREVER &&
	    lockd__set_duration("wait", o->wait_ms, &req.has_wait,
	    &req.wait_ms, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (o->delay_ms != 0 && lockd__set_duration("delay", o->delay_ms,
	    &req.has_delay, &req.delay_ms, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (o->owner != NULL && o->owner[0] != '\0') {
		size_t len = strlen(o->owner);

		if (len > LOCKD_OWNER_MAX || !proto_valid_name(o->owner, len))
			return lockd__error(errstr, LOCKD_ERR_INVALID,
			    "invalid owner label (1 to %d bytes, no blanks "
			    "or control bytes)", LOCKD_OWNER_MAX);
		req.owner = o->owner;
		req.owner_len = len;
	}
	if (rid != NULL) {
		size_t len = strlen(rid);

		if (len == 0 || len > LOCKD__RID_MAX ||
		    !proto_valid_name(rid, len))
			return lockd__error(errstr, LOCKD_ERR_INVALID,
			    "invalid rid (1 to %d bytes, no blanks or control "
			    "bytes)", LOCKD__RID_MAX);
		req.rid = rid;
		req.rid_len = len;
	}
	if (lockd__set_kind(&req, kind, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

/* FORCE and CHECK: a name and a fence. */
static int
lockd__request_fence(struct lockd__request *r, enum proto_command command,
    const char *name, uint64_t fence, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, command, name, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (fence < 1 || fence > (uint64_t)PROTO_FENCE_MAX)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "fence must be 1 to 2^63-1");
	req.has_fence = true;
	req.fence = fence;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_force(struct lockd__request *r, const char *name,
    uint64_t fence, char *errstr)
{
	return lockd__request_fence(r, PROTO_CMD_FORCE, name, fence, errstr);
}

int
lockd__request_check(struct lockd__request *r, const char *name,
    uint64_t fence, char *errstr)
{
	return lockd__request_fence(r, PROTO_CMD_CHECK, name, fence, errstr);
}

int
lockd__request_watch(struct lockd__request *r, const char *name,
    int64_t fence, int64_t wait_ms, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_WATCH, name, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (fence >= 0) {
		req.has_fence = true;
		req.fence = (uint64_t)fence;
	}
	if (wait_ms != LOCKD_WAIT_FOREVER && lockd__set_duration("wait",
	    wait_ms, &req.has_wait, &req.wait_ms, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	return lockd__finish(r, &req, NULL, errstr);
}

int
lockd__request_list(struct lockd__request *r, const char *prefix,
    const char *after, int limit, char *errstr)
{
	struct proto_request req;

	if (lockd__begin(&req, PROTO_CMD_LIST, NULL, errstr) != LOCKD_OK)
		return LOCKD_ERR_INVALID;
	if (prefix != NULL && prefix[0] != '\0') {
		if (!proto_valid_name(prefix, strlen(prefix)))
			return lockd__error(errstr, LOCKD_ERR_INVALID,
			    "invalid prefix");
		req.prefix = prefix;
		req.prefix_len = strlen(prefix);
	}
	if (after != NULL && after[0] != '\0') {
		if (!proto_valid_name(after, strlen(after)))
			return lockd__error(errstr, LOCKD_ERR_INVALID,
			    "invalid lock name after");
		req.after = after;
		req.after_len = strlen(after);
	}
	if (limit < 0 || limit > PROTO_LIST_LIMIT_MAX)
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "limit must be 1 to %d", PROTO_LIST_LIMIT_MAX);
	if (limit > 0) {
		req.has_limit = true;
		req.limit = (uint32_t)limit;
	}
	return lockd__finish(r, &req, NULL, errstr);
}

/*
 * Replies.
 */

/* Copies a proto name into a NUL-terminated field. */
static void
lockd__copy_name(char *dst, const char *src, size_t len)
{
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* What a STATUS-like reply line tells of its lock, into *info.  The
 * holders fields are implied when absent: a plain lock's. */
static void
lockd__fill_info(const struct proto_reply *pr, struct lockd__info *info)
{
	lockd_lock_info *lock = &info->lock;

	memset(info, 0, sizeof(*info));
	if (pr->name != NULL)
		lockd__copy_name(lock->name, pr->name, pr->name_len);
	lock->held = pr->held ? 1 : 0;
	lock->fence = pr->fence;
	lock->ttl_ms = pr->ttl_ms;
	lock->queue = pr->queue;
	if (pr->owner != NULL && pr->owner_len <= LOCKD_OWNER_MAX)
		lockd__copy_name(lock->owner, pr->owner, pr->owner_len);
	lock->delay_ms = pr->delay_ms;
	if (pr->cause != NULL && pr->cause_len < sizeof(lock->cause))
		lockd__copy_name(lock->cause, pr->cause, pr->cause_len);
	info->holders.size = sizeof(info->holders);
	info->holders.holders = pr->holders != 0 ? pr->holders :
	    (pr->held ? 1 : 0);
	info->holders.limit = pr->limit != 0 ? pr->limit : 1;
	info->holders.mode = pr->shared ? LOCKD_MODE_SHARED :
	    LOCKD_MODE_EXCLUSIVE;
}

int
lockd__holders_check(const lockd_lock_holders *h, char *errstr)
{
	if (h->size < offsetof(lockd_lock_holders, holders) +
	    sizeof(h->holders))
		return lockd__error(errstr, LOCKD_ERR_INVALID,
		    "lockd_lock_holders: set size to its sizeof");
	return LOCKD_OK;
}

void
lockd__holders_copy(lockd_lock_holders *dst, const lockd_lock_holders *src)
{
	size_t size = dst->size;

	dst->holders = src->holders;
	if (size >= offsetof(lockd_lock_holders, limit) + sizeof(dst->limit))
		dst->limit = src->limit;
	if (size >= offsetof(lockd_lock_holders, mode) + sizeof(dst->mode))
		dst->mode = src->mode;
}

/*
 * Turns the parsed reply into the result for p; a reply that is not one of
 * the answers p can get is a protocol error (the stream is out of step).
 */
static int
lockd__interpret(const struct lockd__pending *p,
    const struct proto_reply *pr, lockd_reply *r, struct lockd__info *info,
    char *errstr)
{
	struct lockd__info scratch;

	if (info == NULL)
		info = &scratch;
	if (pr->kind == PROTO_REPLY_ERROR)
		return lockd__error(errstr, lockd__server_error(pr->error),
		    "%s: %.*s", proto_error_name(pr->error),
		    (int)(pr->text_len > 100 ? 100 : pr->text_len), pr->text);
	if (p->command == LOCKD_CMD_LIST) {
		if (pr->kind == PROTO_REPLY_LOCK) {
			lockd__fill_info(pr, info);
			return LOCKD__MORE;
		}
		if (pr->kind != PROTO_REPLY_END)
			return lockd__error(errstr, LOCKD_ERR_PROTOCOL,
			    "reply does not answer the request");
		memset(info, 0, sizeof(*info));
		if (pr->next != NULL)
			lockd__copy_name(info->lock.name, pr->next,
			    pr->next_len);
		info->lock.queue = pr->count;
		return LOCKD_OK;
	}
	if (p->command != LOCKD_CMD_PING && p->command != LOCKD_CMD_STATS &&
	    (pr->name_len != p->name_len ||
	    memcmp(pr->name, p->name, p->name_len) != 0))
		return lockd__error(errstr, LOCKD_ERR_PROTOCOL,
		    "reply for another lock name");

	switch (p->command) {
	case LOCKD_CMD_TRY:
		if (pr->kind == PROTO_REPLY_HELD)
			return LOCKD_HELD;
		/* FALLTHROUGH */
	case LOCKD_CMD_ACQUIRE:
		if (pr->kind != PROTO_REPLY_GRANTED)
			break;
		lockd__copy_name(r->lease.name, pr->name, pr->name_len);
		r->lease.fence = pr->handle.fence;
		proto_format_handle(r->lease.handle,
		    sizeof(r->lease.handle) - 1, pr->handle);
		r->lease.lease_ms = pr->lease_ms;
		r->lease.deadline_ms = p->sent_ms + pr->lease_ms;
		return LOCKD_OK;
	case LOCKD_CMD_RENEW:
		if (pr->kind != PROTO_REPLY_RENEWED)
			break;
		lockd__copy_name(r->lease.name, pr->name, pr->name_len);
		snprintf(r->lease.handle, sizeof(r->lease.handle), "%s",
		    p->handle);
		r->lease.fence = pr->fence;
		if (pr->fence != p->fence)
			return lockd__error(errstr, LOCKD_ERR_PROTOCOL,
			    "renewed with another fence");
		r->lease.lease_ms = pr->lease_ms;
		r->lease.deadline_ms = p->sent_ms + pr->lease_ms;
		return LOCKD_OK;
	case LOCKD_CMD_RELEASE:
		if (pr->kind == PROTO_REPLY_RELEASED)
			return LOCKD_OK;
		if (pr->kind == PROTO_REPLY_NOTHELD)
			return LOCKD_NOTHELD;
		break;
	case LOCKD_CMD_STATUS:
		if (pr->kind != PROTO_REPLY_STATUS)
			break;
		r->status.held = pr->held ? 1 : 0;
		r->status.fence = pr->fence;
		r->status.ttl_ms = pr->ttl_ms;
		r->status.queue = pr->queue;
		lockd__fill_info(pr, info);
		return LOCKD_OK;
	case LOCKD_CMD_FORCE:
		if (pr->kind == PROTO_REPLY_RELEASED)
			return LOCKD_OK;
		if (pr->kind == PROTO_REPLY_NOTHELD)
			return LOCKD_NOTHELD;
		break;
	case LOCKD_CMD_CHECK:
		if (pr->kind != PROTO_REPLY_CURRENT &&
		    pr->kind != PROTO_REPLY_STALE)
			break;
		lockd__fill_info(pr, info);
		info->lock.held = pr->kind == PROTO_REPLY_CURRENT ||
		    pr->fence != 0;
		return pr->kind == PROTO_REPLY_CURRENT ? LOCKD_OK : LOCKD_STALE;
	case LOCKD_CMD_WATCH:
		if (pr->kind != PROTO_REPLY_CHANGED)
			break;
		lockd__fill_info(pr, info);
		return LOCKD_OK;
	case LOCKD_CMD_LIST:
		break;
	case LOCKD_CMD_PING:
		if (pr->kind == PROTO_REPLY_PONG)
			return LOCKD_OK;
		break;
	case LOCKD_CMD_STATS:
		if (pr->kind != PROTO_REPLY_STATS)
			break;
		snprintf(info->stats, sizeof(info->stats), "%.*s",
		    (int)pr->text_len, pr->text);
		return LOCKD_OK;
	}
	return lockd__error(errstr, LOCKD_ERR_PROTOCOL,
	    "reply does not answer the request");
}

int
lockd__reply_take(const char *buf, size_t len,
    const struct lockd__pending *p, lockd_reply *r, size_t *consumed,
    char *errstr)
{
	return lockd__reply_take_info(buf, len, p, r, NULL, consumed, errstr);
}

int
lockd__reply_take_info(const char *buf, size_t len,
    const struct lockd__pending *p, lockd_reply *r, struct lockd__info *info,
    size_t *consumed, char *errstr)
{
	struct proto_reply pr;
	struct proto_error perr;
	enum proto_result res;
	int result;

	*consumed = 0;
	res = proto_parse_reply(buf, len, LOCKD__REPLY_LINE_MAX, &pr,
	    consumed, &perr);
	if (res == PROTO_PARTIAL) {
		*consumed = 0;
		return LOCKD_AGAIN;
	}
	if (res != PROTO_DONE)
		return lockd__error(errstr, LOCKD_ERR_PROTOCOL,
		    "malformed reply");
	memset(r, 0, sizeof(*r));
	r->command = p->command;
	r->result = result = lockd__interpret(p, &pr, r, info, errstr);
	return result;
}

int64_t
lockd__reply_deadline(const struct lockd__pending *p,
    int64_t command_timeout_ms, int64_t now)
{
	int64_t start = now;

	if (command_timeout_ms <= 0 || p->wait_ms == LOCKD_WAIT_FOREVER)
		return -1;
	if (p->sent_ms >= 0 && p->sent_ms + p->wait_ms > start)
		start = p->sent_ms + p->wait_ms;
	return start + command_timeout_ms;
}

/*
 * The queue: an array used from `first`, compacted to the front when it
 * runs out at the end and doubled when it is full.
 */

void
lockd__queue_init(struct lockd__queue *q, size_t size)
{
	memset(q, 0, sizeof(*q));
	q->size = size;
}

void
lockd__queue_free(struct lockd__queue *q)
{
	free(q->items);
	q->items = NULL;
	q->first = q->count = q->cap = 0;
}

void *
lockd__queue_push(struct lockd__queue *q)
{
	char *items, *item;
	size_t cap;

	if (q->first + q->count >= q->cap && q->first > 0) {
		memmove(q->items, q->items + q->first * q->size,
		    q->count * q->size);
		q->first = 0;
	}
	if (q->count >= q->cap) {
		cap = q->cap == 0 ? 8 : q->cap * 2;
		if ((items = realloc(q->items, cap * q->size)) == NULL)
			return NULL;
		q->items = items;
		q->cap = cap;
	}
	item = q->items + (q->first + q->count++) * q->size;
	memset(item, 0, q->size);
	return item;
}

void *
lockd__queue_at(const struct lockd__queue *q, size_t i)
{
	return q->items + (q->first + i) * q->size;
}

void
lockd__queue_pop(struct lockd__queue *q)
{
	q->first++;
	q->count--;
	if (q->count == 0)
		q->first = 0;
}

void
lockd__queue_clear(struct lockd__queue *q)
{
	q->first = q->count = 0;
}

uint64_t
lockd__send_limit(const struct lockd__queue *q, size_t answered,
    uint64_t appended)
{
	size_t last = answered + LOCKD__MAX_IN_FLIGHT;
	const struct lockd__pending *p;

	if (last >= q->count)
		return appended;
	p = lockd__queue_at(q, last - 1);
	return p->end;
}

/*
 * The one place that knows whether a request carries protocol v2's rid=,
 * which makes a repeated ACQUIRE or TRY find its own grant.
 */
bool
lockd__request_has_rid(const struct lockd__request *r)
{
	return r->has_rid;
}
