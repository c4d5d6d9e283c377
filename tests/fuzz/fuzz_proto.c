/*
 * fuzz_proto.c - libFuzzer target for proto/: parses the input as a stream
 * of requests the way the daemon does, and as a stream of replies the way
 * liblockd does, and checks that every line it accepts survives a round trip
 * through the formatters unchanged.
 *
 * A broken invariant calls __builtin_trap() so libFuzzer keeps the input;
 * reads past the input are ASan's to catch (libFuzzer hands over a buffer of
 * exactly the input's size).  This file only drives proto: it may not open a
 * file or a socket, and allocates nothing of its own.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond) do {						\
	if (!(cond))							\
		__builtin_trap();					\
} while (0)

#define FUZZ_LINE_MAX 8192		/* any line the target formats */
#define FUZZ_STATS_MAX 64		/* STATS fields it round-trips */

static bool
fuzz_same_request(const struct proto_request *a,
    const struct proto_request *b)
{
	return a->command == b->command && a->name_len == b->name_len &&
	    (a->name_len == 0 ||
	    memcmp(a->name, b->name, a->name_len) == 0) &&
	    a->handle.fence == b->handle.fence &&
	    a->handle.secret == b->handle.secret &&
	    a->has_lease == b->has_lease && a->lease_ms == b->lease_ms &&
	    a->has_wait == b->has_wait && a->wait_ms == b->wait_ms &&
	    a->has_onclose == b->has_onclose && a->onclose == b->onclose &&
	    a->rid_len == b->rid_len &&
	    (a->rid_len == 0 || memcmp(a->rid, b->rid, a->rid_len) == 0);
}

/* True when [p, p + n) lies within [base, base + len). */
static bool
fuzz_within(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && n <= len && (size_t)(p - base) <= len - n;
}

/*
 * A parsed request formats to a canonical line that parses back to the same
 * request, and formatting that again gives the very same bytes.
 */
static void
fuzz_request_round_trip(const struct proto_request *req)
{
	static char line[FUZZ_LINE_MAX], again_line[FUZZ_LINE_MAX];
	struct proto_request again;
	struct proto_error err;
	size_t n, consumed, n_again;

	n = proto_format_request(line, sizeof(line), req);
	FUZZ_CHECK(n >= 2 && line[n - 2] == '\r' && line[n - 1] == '\n');
	FUZZ_CHECK(proto_parse_request(line, n, PROTO_LINE_MAX_DEFAULT, &again,
	    &consumed, &err) == PROTO_DONE);
	FUZZ_CHECK(consumed == n && err.code == PROTO_ERR_NONE);
	FUZZ_CHECK(fuzz_same_request(req, &again));
	n_again = proto_format_request(again_line, sizeof(again_line), &again);
	FUZZ_CHECK(n_again == n && memcmp(line, again_line, n) == 0);
}

/*
 * Plays a connection over the input: the parser first sees `step` bytes,
 * then `step` more each time it asks for more, and consumes and discards as
 * the daemon does.  Checks the contract of every result on the way.
 */
static void
fuzz_requests(const char *buf, size_t size, size_t max_line, size_t step)
{
	struct proto_request req, alone;
	struct proto_error err, alone_err;
	size_t pos = 0, avail = step < size ? step : size, consumed, len;
	size_t alone_consumed;
	enum proto_result r;
	bool discarding = false;

	for (;;) {
		len = avail - pos;
		if (discarding) {
			if (proto_discard_line(buf + pos, len, &consumed)) {
				FUZZ_CHECK(consumed >= 1 && consumed <= len &&
				    buf[pos + consumed - 1] == '\n');
				discarding = false;
				pos += consumed;
				continue;
			}
			FUZZ_CHECK(consumed == len);
			pos += consumed;
		} else {
			r = proto_parse_request(buf + pos, len, max_line, &req,
			    &consumed, &err);
			switch (r) {
			case PROTO_PARTIAL:
				FUZZ_CHECK(consumed == 0);
				FUZZ_CHECK(memchr(buf + pos, '\n', len) ==
				    NULL);
				FUZZ_CHECK(len <= max_line + 1);
				break;
			case PROTO_TOOLONG:
				FUZZ_CHECK(err.code == PROTO_ERR_TOOLONG &&
				    err.message != NULL);
				FUZZ_CHECK(consumed >= 1 && consumed <= len);
				discarding = buf[pos + consumed - 1] != '\n';
				FUZZ_CHECK(!discarding || consumed == len);
				pos += consumed;
				continue;
			case PROTO_DONE:
			case PROTO_EMPTY:
			case PROTO_BAD:
				FUZZ_CHECK(consumed >= 1 && consumed <= len &&
				    buf[pos + consumed - 1] == '\n');
				FUZZ_CHECK(memchr(buf + pos, '\n',
				    consumed - 1) == NULL);
				FUZZ_CHECK((r == PROTO_BAD) ==
				    (err.code != PROTO_ERR_NONE));
				FUZZ_CHECK(r != PROTO_BAD ||
				    ((err.code == PROTO_ERR_BADREQ ||
				    err.code == PROTO_ERR_BADARG) &&
				    err.message != NULL));
				/* The line alone parses the same. */
				FUZZ_CHECK(proto_parse_request(buf + pos,
				    consumed, max_line, &alone,
				    &alone_consumed, &alone_err) == r);
				FUZZ_CHECK(alone_consumed == consumed &&
				    alone_err.code == err.code &&
				    alone_err.message == err.message);
				if (r == PROTO_DONE) {
					FUZZ_CHECK(fuzz_same_request(&req,
					    &alone));
					FUZZ_CHECK(req.name_len == 0 ||
					    fuzz_within(req.name,
					    req.name_len, buf + pos,
					    consumed));
					FUZZ_CHECK((req.name_len == 0) ==
					    (req.command >= PROTO_CMD_PING &&
					    req.command != PROTO_CMD_AUTH));
					fuzz_request_round_trip(&req);
				}
				pos += consumed;
				continue;
			default:
				FUZZ_CHECK(false);
			}
		}
		if (avail == size)
			break;
		avail = size - avail > step ? avail + step : size;
	}
	FUZZ_CHECK(pos <= size);
}

/* Copies text into a NUL-terminated buffer for the formatters. */
static const char *
fuzz_string(char *out, size_t cap, const char *text, size_t len)
{
	FUZZ_CHECK(len < cap);
	memcpy(out, text, len);
	out[len] = '\0';
	return out;
}

static void
fuzz_parse_formatted(const char *line, size_t n, struct proto_reply *again)
{
	struct proto_error err;
	size_t consumed;

	FUZZ_CHECK(n >= 2 && line[n - 2] == '\r' && line[n - 1] == '\n');
	FUZZ_CHECK(proto_parse_reply(line, n, FUZZ_LINE_MAX, again, &consumed,
	    &err) == PROTO_DONE);
	FUZZ_CHECK(consumed == n);
}

/*
 * A STATS reply whose fields are all key=<uint64> formats back to one that
 * answers every lookup the same.
 */
static void
fuzz_stats_round_trip(const struct proto_reply *r)
{
	static char keys[FUZZ_STATS_MAX][PROTO_NAME_MAX + 1];
	static struct proto_stat stats[FUZZ_STATS_MAX];
	static char line[FUZZ_LINE_MAX];
	struct proto_reply again;
	const char *word = r->text, *end = r->text + r->text_len, *eq;
	size_t count = 0, n, key_len;
	uint64_t a, b;

	while (word < end) {
		const char *stop = word;

		while (stop < end && *stop != ' ' && *stop != '\t')
			stop++;
		if (stop > word) {
			eq = memchr(word, '=', (size_t)(stop - word));
			FUZZ_CHECK(eq != NULL && eq > word);
			key_len = (size_t)(eq - word);
			if (count == FUZZ_STATS_MAX ||
			    !proto_valid_name(word, key_len))
				return;
			fuzz_string(keys[count], sizeof(keys[count]), word,
			    key_len);
			if (!proto_stats_get(word, (size_t)(stop - word),
			    keys[count], &stats[count].value))
				return;
			stats[count].key = keys[count];
			count++;
		}
		word = stop + 1;
	}
	n = proto_format_stats(line, sizeof(line), stats, count);
	FUZZ_CHECK(n != 0);
	fuzz_parse_formatted(line, n, &again);
	FUZZ_CHECK(again.kind == PROTO_REPLY_STATS);
	for (n = 0; n < count; n++) {
		FUZZ_CHECK(proto_stats_get(r->text, r->text_len, keys[n], &a));
		FUZZ_CHECK(proto_stats_get(again.text, again.text_len, keys[n],
		    &b));
		FUZZ_CHECK(a == b);
	}
}

/* A parsed reply formats back to a line that parses to the same fields. */
static void
fuzz_reply_round_trip(const struct proto_reply *r)
{
	static char line[FUZZ_LINE_MAX], text[FUZZ_LINE_MAX];
	struct proto_reply again;
	size_t n = 0;

	switch (r->kind) {
	case PROTO_REPLY_GRANTED:
		n = proto_format_granted(line, sizeof(line), r->name,
		    r->name_len, r->handle, r->lease_ms);
		break;
	case PROTO_REPLY_RENEWED:
		n = proto_format_renewed(line, sizeof(line), r->name,
		    r->name_len, r->fence, r->lease_ms);
		break;
	case PROTO_REPLY_RELEASED:
		n = proto_format_released(line, sizeof(line), r->name,
		    r->name_len);
		break;
	case PROTO_REPLY_NOTHELD:
		n = proto_format_notheld(line, sizeof(line), r->name,
		    r->name_len);
		break;
	case PROTO_REPLY_HELD:
		n = proto_format_held(line, sizeof(line), r->name, r->name_len);
		break;
	case PROTO_REPLY_STATUS:
		n = proto_format_status(line, sizeof(line), r->name,
		    r->name_len, r->held, r->fence, r->ttl_ms, r->queue);
		break;
	case PROTO_REPLY_PONG:
		n = proto_format_pong(line, sizeof(line));
		break;
	case PROTO_REPLY_BYE:
		n = proto_format_bye(line, sizeof(line));
		break;
	case PROTO_REPLY_HELP:
		n = proto_format_help(line, sizeof(line));
		break;
	case PROTO_REPLY_ERROR:
		n = proto_format_error(line, sizeof(line), r->error,
		    fuzz_string(text, sizeof(text), r->text, r->text_len));
		break;
	case PROTO_REPLY_STATS:
		fuzz_stats_round_trip(r);
		return;
	case PROTO_REPLY_AUTHED:
		n = proto_format_authed(line, sizeof(line), r->name,
		    r->name_len);
		break;
	case PROTO_REPLY_LOCK:
	case PROTO_REPLY_END:
	case PROTO_REPLY_CHANGED:
	case PROTO_REPLY_CURRENT:
	case PROTO_REPLY_STALE:
		/* The operator's replies: lockd formats them as STATUS
		 * lines (test_proto's round trips); parsing them without a
		 * crash or a read out of the input is what is checked. */
		return;
	default:
		FUZZ_CHECK(false);
	}
	FUZZ_CHECK(n != 0);
	fuzz_parse_formatted(line, n, &again);
	FUZZ_CHECK(again.kind == r->kind);
	FUZZ_CHECK(again.name_len == r->name_len && (r->name_len == 0 ||
	    memcmp(again.name, r->name, r->name_len) == 0));
	FUZZ_CHECK(again.handle.fence == r->handle.fence &&
	    again.handle.secret == r->handle.secret);
	FUZZ_CHECK(again.fence == r->fence && again.lease_ms == r->lease_ms);
	FUZZ_CHECK(again.held == r->held && again.ttl_ms == r->ttl_ms &&
	    again.queue == r->queue);
	FUZZ_CHECK(again.error == r->error);
	if (r->kind == PROTO_REPLY_ERROR)
		FUZZ_CHECK(again.text_len == r->text_len &&
		    (r->text_len == 0 ||
		    memcmp(again.text, r->text, r->text_len) == 0));
}

/* Parses the input as a stream of replies, as a client reads them. */
static void
fuzz_replies(const char *buf, size_t size, size_t max_line)
{
	struct proto_reply reply;
	struct proto_error err;
	size_t pos = 0, consumed, len;
	enum proto_result r;

	while (pos < size) {
		len = size - pos;
		r = proto_parse_reply(buf + pos, len, max_line, &reply,
		    &consumed, &err);
		if (r == PROTO_PARTIAL) {
			FUZZ_CHECK(consumed == 0);
			return;
		}
		FUZZ_CHECK(r == PROTO_DONE || r == PROTO_BAD ||
		    r == PROTO_TOOLONG);
		FUZZ_CHECK(consumed >= 1 && consumed <= len);
		FUZZ_CHECK(r != PROTO_BAD || err.code == PROTO_ERR_BADREQ);
		FUZZ_CHECK(r != PROTO_TOOLONG || err.code == PROTO_ERR_TOOLONG);
		if (r == PROTO_DONE) {
			FUZZ_CHECK(reply.name == NULL || fuzz_within(reply.name,
			    reply.name_len, buf + pos, consumed));
			FUZZ_CHECK(reply.text == NULL || fuzz_within(reply.text,
			    reply.text_len, buf + pos, consumed));
			fuzz_reply_round_trip(&reply);
		}
		pos += consumed;
	}
}

/* The value parsers on the whole input, with their own round trips. */
static void
fuzz_values(const char *buf, size_t size)
{
	static char out[64];
	struct proto_handle h;
	int64_t ms;
	uint64_t v;
	size_t n;

	if (proto_parse_duration(buf, size, &ms))
		FUZZ_CHECK(ms >= 0 && ms <= PROTO_DURATION_MAX_MS);
	if (proto_parse_handle(buf, size, &h)) {
		/* Handles are canonical: formatting gives the input back. */
		n = proto_format_handle(out, sizeof(out), h);
		FUZZ_CHECK(n == size && memcmp(out, buf, size) == 0);
	}
	if (proto_valid_name(buf, size))
		FUZZ_CHECK(size >= 1 && size <= PROTO_NAME_MAX &&
		    memchr(buf, ' ', size) == NULL);
	(void)proto_stats_get(buf, size, "locks", &v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t small_line, step;

	if (size == 0)
		return 0;
	/* Once as the daemon reads with its default limit, all at once. */
	fuzz_requests(buf, size, PROTO_LINE_MAX_DEFAULT, size);
	/* Again with a small limit, in small reads, both chosen by input. */
	small_line = 1 + data[0] % 48;
	step = 1 + data[size - 1] % 16;
	fuzz_requests(buf, size, small_line, step);
	fuzz_replies(buf, size, PROTO_LINE_MAX_DEFAULT);
	fuzz_replies(buf, size, small_line);
	fuzz_values(buf, size);
	return 0;
}
