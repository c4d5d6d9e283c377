/*
 * proto.c - lockd wire protocol v1: the request parser, the reply parser, the
 * value parsers and every formatter that proto.h declares.
 *
 * Everything here is a pure function of its arguments.  It reads only
 * buf[0..len), writes only out[0..cap), allocates nothing and keeps no state
 * between calls, so the daemon and liblockd can share it and the tests can
 * run it against buffers that end at a guard page.  It may not include
 * anything from daemon/ or client/, touch a socket, a clock or a file, or call
 * anything that depends on the C locale (no ctype.h, strtol or printf): the
 * protocol is ASCII and must read the same under every locale.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/proto.h"

/* Options, as bits, so a command can list those it takes. */
#define PROTO_OPTION_LEASE	0x1u
#define PROTO_OPTION_WAIT	0x2u
#define PROTO_OPTION_ONCLOSE	0x4u
#define PROTO_OPTION_DELAY	0x8u
#define PROTO_OPTION_OWNER	0x10u
#define PROTO_OPTION_FENCE	0x20u
#define PROTO_OPTION_PREFIX	0x40u
#define PROTO_OPTION_AFTER	0x80u
#define PROTO_OPTION_LIMIT	0x100u
#define PROTO_OPTION_RID	0x200u
#define PROTO_OPTION_MODE	0x400u

/* What each command takes; the parser checks arity and options once, here. */
struct proto_command_info {
	const char *name;
	size_t arity;			/* positional arguments */
	unsigned options;		/* PROTO_OPTION_* bits it takes */
	bool fence_argument;		/* the second argument is a fence */
	const char *arity_message;
};

static const struct proto_command_info proto_commands[PROTO_CMD_COUNT] = {
	[PROTO_CMD_ACQUIRE] = { "ACQUIRE", 1,
	    PROTO_OPTION_LEASE | PROTO_OPTION_WAIT | PROTO_OPTION_ONCLOSE |
	    PROTO_OPTION_DELAY | PROTO_OPTION_OWNER | PROTO_OPTION_RID |
	    PROTO_OPTION_LIMIT | PROTO_OPTION_MODE, false,
	    "ACQUIRE takes 1 argument" },
	[PROTO_CMD_TRY] = { "TRY", 1,
	    PROTO_OPTION_LEASE | PROTO_OPTION_ONCLOSE | PROTO_OPTION_DELAY |
	    PROTO_OPTION_OWNER | PROTO_OPTION_RID | PROTO_OPTION_LIMIT |
	    PROTO_OPTION_MODE, false,
	    "TRY takes 1 argument" },
	[PROTO_CMD_RENEW] = { "RENEW", 2,
	    PROTO_OPTION_LEASE, false,
	    "RENEW takes 2 arguments" },
	[PROTO_CMD_RELEASE] = { "RELEASE", 2,
	    0, false,
	    "RELEASE takes 2 arguments" },
	[PROTO_CMD_STATUS] = { "STATUS", 1,
	    0, false,
	    "STATUS takes 1 argument" },
	[PROTO_CMD_PING] = { "PING", 0,
	    0, false,
	    "PING takes no arguments" },
	[PROTO_CMD_QUIT] = { "QUIT", 0,
	    0, false,
	    "QUIT takes no arguments" },
	[PROTO_CMD_HELP] = { "HELP", 0,
	    0, false,
	    "HELP takes no arguments" },
	[PROTO_CMD_STATS] = { "STATS", 0,
	    0, false,
	    "STATS takes no arguments" },
	[PROTO_CMD_FORCE] = { "FORCE", 2,
	    0, true,
	    "FORCE takes 2 arguments" },
	[PROTO_CMD_CHECK] = { "CHECK", 2,
	    0, true,
	    "CHECK takes 2 arguments" },
	[PROTO_CMD_WATCH] = { "WATCH", 1,
	    PROTO_OPTION_FENCE | PROTO_OPTION_WAIT, false,
	    "WATCH takes 1 argument" },
	[PROTO_CMD_LIST] = { "LIST", 0,
	    PROTO_OPTION_PREFIX | PROTO_OPTION_AFTER | PROTO_OPTION_LIMIT,
	    false,
	    "LIST takes no arguments, only options" },
	[PROTO_CMD_AUTH] = { "AUTH", 1,
	    0, false,
	    "AUTH takes 1 argument" },
};

static const char *const proto_error_names[PROTO_ERR_COUNT] = {
	[PROTO_ERR_NONE] = NULL,
	[PROTO_ERR_BADREQ] = "BADREQ",
	[PROTO_ERR_BADARG] = "BADARG",
	[PROTO_ERR_TOOLONG] = "TOOLONG",
	[PROTO_ERR_TIMEOUT] = "TIMEOUT",
	[PROTO_ERR_CONFLICT] = "CONFLICT",
	[PROTO_ERR_LIMIT] = "LIMIT",
	[PROTO_ERR_UNAVAILABLE] = "UNAVAILABLE",
	[PROTO_ERR_OVERFLOW] = "OVERFLOW",
	[PROTO_ERR_SHUTDOWN] = "SHUTDOWN",
	[PROTO_ERR_NOTLEADER] = "NOTLEADER",
	[PROTO_ERR_DENIED] = "DENIED",
};

/*
 * The sentences a refused line is answered with.  They are static so that
 * struct proto_error can point at them and outlive the input buffer.
 */
static const char proto_msg_toolong[] = "line is longer than the line limit";
static const char proto_msg_control[] =
    "line holds a NUL or other control byte";
static const char proto_msg_command[] = "unknown command";
static const char proto_msg_name[] =
    "name must be 1 to 255 bytes without spaces or control bytes";
static const char proto_msg_handle[] =
    "bad handle: it must be <fence>-<16 lowercase hex digits>";
static const char proto_msg_option[] = "unknown option";
static const char proto_msg_not_taken[] = "option not taken by this command";
static const char proto_msg_order[] = "arguments must come before options";
static const char proto_msg_twice[] = "option given twice";
static const char proto_msg_onclose[] = "onclose must be keep or release";
static const char proto_msg_reply[] = "not a well-formed reply";
static const char proto_msg_owner[] =
    "owner must be 1 to 64 bytes without spaces or control bytes";
static const char proto_msg_rid[] =
    "rid must be 1 to 64 bytes without spaces or control bytes";
static const char proto_msg_fence[] =
    "fence must be an integer from 1 to 2^63-1";
static const char proto_msg_watch_fence[] =
    "fence must be an integer from 0 to 2^63-1";
static const char proto_msg_prefix[] =
    "prefix must be 1 to 255 bytes without spaces or control bytes";
static const char proto_msg_after[] =
    "after must be a lock name of 1 to 255 bytes";
static const char proto_msg_limit[] =
    "limit must be an integer from 1 to 1000";
static const char proto_msg_holders_limit[] =
    "limit must be an integer from 1 to 65535";
static const char proto_msg_mode[] = "mode must be exclusive or shared";
static const char proto_msg_shared_limit[] =
    "mode=shared takes no limit but 1";

/* How a duration was refused, so the reply can say which way. */
enum proto_duration_status {
	PROTO_DURATION_OK,
	PROTO_DURATION_NEGATIVE,
	PROTO_DURATION_MALFORMED,
	PROTO_DURATION_TOO_LONG
};

/* One option key: its spelling, its bit and its messages per failure. */
struct proto_option_info {
	const char *key;
	unsigned bit;
	const char *negative;
	const char *malformed;
	const char *too_long;
};

static const struct proto_option_info proto_options[] = {
	{ "lease", PROTO_OPTION_LEASE,
	    "lease must be a non-negative duration",
	    "lease must be digits with an optional unit ms, s, m or h",
	    "lease must be at most 365 days" },
	{ "wait", PROTO_OPTION_WAIT,
	    "wait must be a non-negative duration",
	    "wait must be digits with an optional unit ms, s, m or h",
	    "wait must be at most 365 days" },
	{ "onclose", PROTO_OPTION_ONCLOSE, NULL, NULL, NULL },
	{ "delay", PROTO_OPTION_DELAY,
	    "delay must be a non-negative duration",
	    "delay must be digits with an optional unit ms, s, m or h",
	    "delay must be at most 365 days" },
	{ "owner", PROTO_OPTION_OWNER, NULL, NULL, NULL },
	{ "fence", PROTO_OPTION_FENCE, NULL, NULL, NULL },
	{ "prefix", PROTO_OPTION_PREFIX, NULL, NULL, NULL },
	{ "after", PROTO_OPTION_AFTER, NULL, NULL, NULL },
	{ "limit", PROTO_OPTION_LIMIT, NULL, NULL, NULL },
	{ "rid", PROTO_OPTION_RID, NULL, NULL, NULL },
	{ "mode", PROTO_OPTION_MODE, NULL, NULL, NULL },
};
#define PROTO_OPTION_COUNT (sizeof(proto_options) / sizeof(proto_options[0]))

/* Reply fields, as bits, so a reply kind can list those it requires. */
#define PROTO_FIELD_FENCE	0x01u
#define PROTO_FIELD_HANDLE	0x02u
#define PROTO_FIELD_LEASE	0x04u
#define PROTO_FIELD_HELD	0x08u
#define PROTO_FIELD_TTL		0x10u
#define PROTO_FIELD_QUEUE	0x20u
#define PROTO_FIELD_OWNER	0x40u
#define PROTO_FIELD_DELAY	0x80u
#define PROTO_FIELD_CAUSE	0x100u
#define PROTO_FIELD_COUNT_	0x200u
#define PROTO_FIELD_NEXT	0x400u
#define PROTO_FIELD_HOLDERS	0x800u
#define PROTO_FIELD_LIMIT	0x1000u
#define PROTO_FIELD_MODE	0x2000u
/* What STATUS's lines may append (protocol v2). */
#define PROTO_FIELDS_STATUS_MORE (PROTO_FIELD_OWNER | PROTO_FIELD_DELAY | \
	PROTO_FIELD_HOLDERS | PROTO_FIELD_LIMIT | PROTO_FIELD_MODE)

static const struct {
	const char *key;
	unsigned bit;
} proto_fields[] = {
	{ "fence", PROTO_FIELD_FENCE },
	{ "handle", PROTO_FIELD_HANDLE },
	{ "lease", PROTO_FIELD_LEASE },
	{ "held", PROTO_FIELD_HELD },
	{ "ttl", PROTO_FIELD_TTL },
	{ "queue", PROTO_FIELD_QUEUE },
	{ "owner", PROTO_FIELD_OWNER },
	{ "delay", PROTO_FIELD_DELAY },
	{ "cause", PROTO_FIELD_CAUSE },
	{ "count", PROTO_FIELD_COUNT_ },
	{ "next", PROTO_FIELD_NEXT },
	{ "holders", PROTO_FIELD_HOLDERS },
	{ "limit", PROTO_FIELD_LIMIT },
	{ "mode", PROTO_FIELD_MODE },
};
#define PROTO_FIELD_COUNT (sizeof(proto_fields) / sizeof(proto_fields[0]))

/*
 * Every reply keyword, whether a lock name follows it, which fields it
 * requires and which it may carry besides.  A field a kind does not list
 * is an unknown one to that kind and is skipped, as the spec asks of
 * clients.
 */
static const struct proto_reply_info {
	const char *keyword;
	enum proto_reply_kind kind;
	bool has_name;
	unsigned fields;
	unsigned optional;
} proto_replies[] = {
	{ "GRANTED", PROTO_REPLY_GRANTED, true,
	    PROTO_FIELD_FENCE | PROTO_FIELD_HANDLE | PROTO_FIELD_LEASE, 0 },
	{ "RENEWED", PROTO_REPLY_RENEWED, true,
	    PROTO_FIELD_FENCE | PROTO_FIELD_LEASE, 0 },
	{ "RELEASED", PROTO_REPLY_RELEASED, true, 0, 0 },
	{ "NOTHELD", PROTO_REPLY_NOTHELD, true, 0, 0 },
	{ "HELD", PROTO_REPLY_HELD, true, 0, PROTO_FIELD_DELAY },
	{ "STATUS", PROTO_REPLY_STATUS, true, PROTO_FIELD_HELD |
	    PROTO_FIELD_FENCE | PROTO_FIELD_TTL | PROTO_FIELD_QUEUE,
	    PROTO_FIELDS_STATUS_MORE },
	{ "LOCK", PROTO_REPLY_LOCK, true, PROTO_FIELD_HELD |
	    PROTO_FIELD_FENCE | PROTO_FIELD_TTL | PROTO_FIELD_QUEUE,
	    PROTO_FIELDS_STATUS_MORE },
	{ "CHANGED", PROTO_REPLY_CHANGED, true, PROTO_FIELD_HELD |
	    PROTO_FIELD_FENCE | PROTO_FIELD_TTL | PROTO_FIELD_QUEUE,
	    PROTO_FIELDS_STATUS_MORE | PROTO_FIELD_CAUSE },
	{ "END", PROTO_REPLY_END, false, PROTO_FIELD_COUNT_,
	    PROTO_FIELD_NEXT },
	{ "CURRENT", PROTO_REPLY_CURRENT, true,
	    PROTO_FIELD_FENCE | PROTO_FIELD_TTL, 0 },
	{ "STALE", PROTO_REPLY_STALE, true, PROTO_FIELD_FENCE, 0 },
	{ "PONG", PROTO_REPLY_PONG, false, 0, 0 },
	{ "BYE", PROTO_REPLY_BYE, false, 0, 0 },
	{ "HELP", PROTO_REPLY_HELP, false, 0, 0 },
	{ "STATS", PROTO_REPLY_STATS, false, 0, 0 },
	{ "ERR", PROTO_REPLY_ERROR, false, 0, 0 },
	{ "AUTHED", PROTO_REPLY_AUTHED, true, 0, 0 },
};
#define PROTO_REPLY_KIND_COUNT \
    (sizeof(proto_replies) / sizeof(proto_replies[0]))

const char *
proto_error_name(enum proto_error_code code)
{
	if ((unsigned)code >= PROTO_ERR_COUNT)
		return NULL;
	return proto_error_names[code];
}

const char *
proto_command_name(enum proto_command command)
{
	if ((unsigned)command >= PROTO_CMD_COUNT)
		return NULL;
	return proto_commands[command].name;
}

/*
 * Byte classes.  These are ASCII by definition and deliberately not ctype.h,
 * whose answers change with the locale and are undefined for negative chars.
 */
static bool
proto_is_blank(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static bool
proto_is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool
proto_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static unsigned char
proto_ascii_lower(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (unsigned char)(c - 'A' + 'a');
	return c;
}

/* True when s[0..len) spells literal, ignoring ASCII case. */
static bool
proto_equal_nocase(const char *s, size_t len, const char *literal)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char a = (unsigned char)s[i];
		unsigned char b = (unsigned char)literal[i];

		/* Equal bytes need no folding: clients mostly send the
		 * spelling the spec shows. */
		if (b == '\0' ||
		    (a != b && proto_ascii_lower(a) != proto_ascii_lower(b)))
			return false;
	}
	return literal[len] == '\0';
}

/* True when s[0..len) spells literal exactly. */
static bool
proto_equal(const char *s, size_t len, const char *literal)
{
	return strlen(literal) == len && memcmp(s, literal, len) == 0;
}

/*
 * Finds the next word of line[*pos..n): words are separated by runs of
 * spaces or tabs.  Returns false, with *pos at n, when no word is left.
 */
static bool
proto_next_word(const char *line, size_t n, size_t *pos, const char **word,
    size_t *word_len)
{
	size_t i = *pos, start;

	while (i < n && proto_is_blank((unsigned char)line[i]))
		i++;
	if (i == n) {
		*pos = n;
		return false;
	}
	start = i;
	while (i < n && !proto_is_blank((unsigned char)line[i]))
		i++;
	*word = line + start;
	*word_len = i - start;
	*pos = i;
	return true;
}

/* Index of the first blank-free byte at or after pos (n when none). */
static size_t
proto_skip_blanks(const char *line, size_t n, size_t pos)
{
	while (pos < n && proto_is_blank((unsigned char)line[pos]))
		pos++;
	return pos;
}

/*
 * Reads decimal digits only (no sign, no blanks, at least one digit) whose
 * value is at most max.  Leading zeros are accepted: numbers in replies and
 * STATS are not secrets to be spelled one way.
 */
static bool
proto_parse_uint(const char *s, size_t len, uint64_t max, uint64_t *value)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		uint64_t digit;

		if (!proto_is_digit(c))
			return false;
		digit = c - '0';
		if (v > (max - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*value = v;
	return true;
}

/*
 * Finds the end of the first line of buf[0..len) and its length without the
 * line end.  Returns PROTO_DONE (a whole line within max_line), PROTO_PARTIAL
 * (no LF yet, and the line may still fit) or PROTO_TOOLONG.  Lines are
 * searched to their LF even past max_line so that an overlong line followed
 * by more requests in the same buffer is consumed exactly to its end.
 */
static enum proto_result
proto_frame_line(const char *buf, size_t len, size_t max_line,
    size_t *line_len, size_t *consumed)
{
	const char *lf = NULL;
	size_t end;

	if (len > 0)
		lf = memchr(buf, '\n', len);
	if (lf != NULL) {
		end = (size_t)(lf - buf);
		*consumed = end + 1;
		*line_len = end;
		if (end > 0 && buf[end - 1] == '\r')
			(*line_len)--;
		return *line_len > max_line ? PROTO_TOOLONG : PROTO_DONE;
	}
	/*
	 * Without an LF, max_line bytes may still be a whole line, and one more
	 * byte may be the CR that precedes its LF; anything longer cannot fit.
	 */
	if (len <= max_line ||
	    (len - max_line == 1 && buf[max_line] == '\r')) {
		*consumed = 0;
		*line_len = 0;
		return PROTO_PARTIAL;
	}
	*consumed = len;
	*line_len = 0;
	return PROTO_TOOLONG;
}

static void
proto_set_error(struct proto_error *err, enum proto_error_code code,
    const char *message)
{
	err->code = code;
	err->message = message;
}

static bool
proto_has_control(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (proto_is_control(c) && c != '\t')
			return true;
	}
	return false;
}

bool
proto_discard_line(const char *buf, size_t len, size_t *consumed)
{
	const char *lf = NULL;

	if (len > 0)
		lf = memchr(buf, '\n', len);
	if (lf == NULL) {
		*consumed = len;
		return false;
	}
	*consumed = (size_t)(lf - buf) + 1;
	return true;
}

/*
 * Value parsers.
 */

/*
 * Reads a duration and says how it failed, so that the reply can tell a
 * negative value (which the spec names) from a malformed or an oversized one.
 * The value is checked against the limit after every digit and before the
 * unit multiplies it, so no input can overflow.
 */
static enum proto_duration_status
proto_scan_duration(const char *s, size_t len, int64_t *ms)
{
	const uint64_t max = (uint64_t)PROTO_DURATION_MAX_MS;
	enum proto_duration_status status;
	uint64_t value = 0, unit = 0;
	bool negative = false, too_long = false;
	size_t i = 0, rest;

	/* A minus sign before a duration makes it a negative duration. */
	if (len > 0 && s[0] == '-') {
		negative = true;
		i = 1;
	}
	while (i < len && proto_is_digit((unsigned char)s[i])) {
		if (!too_long) {
			value = value * 10 + (uint64_t)(s[i] - '0');
			if (value > max)
				too_long = true;
		}
		i++;
	}
	rest = len - i;
	if (rest == 0 || proto_equal_nocase(s + i, rest, "ms"))
		unit = 1;
	else if (proto_equal_nocase(s + i, rest, "s"))
		unit = 1000;
	else if (proto_equal_nocase(s + i, rest, "m"))
		unit = (uint64_t)60 * 1000;
	else if (proto_equal_nocase(s + i, rest, "h"))
		unit = (uint64_t)3600 * 1000;
	if (i == (negative ? 1u : 0u) || unit == 0)
		status = PROTO_DURATION_MALFORMED;
	else if (negative)
		status = PROTO_DURATION_NEGATIVE;
	else if (too_long || value > max / unit)
		status = PROTO_DURATION_TOO_LONG;
	else {
		*ms = (int64_t)(value * unit);
		status = PROTO_DURATION_OK;
	}
	return status;
}

bool
proto_parse_duration(const char *s, size_t len, int64_t *ms)
{
	int64_t value;

	if (s == NULL || proto_scan_duration(s, len, &value) !=
	    PROTO_DURATION_OK)
		return false;
	*ms = value;
	return true;
}

/*
 * A handle is accepted only in its canonical spelling: the fence without
 * leading zeros (so "007-..." is refused even though 7 is a valid fence), a
 * dash, and exactly 16 lowercase hex digits.  One spelling per handle means a
 * handle compares equal as bytes wherever a client keeps it, and the holder's
 * proof cannot be smuggled past a log grep in another form.
 */
bool
proto_parse_handle(const char *s, size_t len, struct proto_handle *h)
{
	uint64_t fence = 0, secret = 0;
	size_t i = 0, j;

	if (s == NULL || len == 0 || s[0] < '1' || s[0] > '9')
		return false;
	while (i < len && proto_is_digit((unsigned char)s[i])) {
		uint64_t digit = (uint64_t)(s[i] - '0');

		if (fence > ((uint64_t)PROTO_FENCE_MAX - digit) / 10)
			return false;
		fence = fence * 10 + digit;
		i++;
	}
	if (i == len || s[i] != '-' || len - i - 1 != PROTO_SECRET_HEX)
		return false;
	for (j = i + 1; j < len; j++) {
		unsigned char c = (unsigned char)s[j];

		if (proto_is_digit(c))
			secret = secret << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			secret = secret << 4 | (uint64_t)(c - 'a' + 10);
		else
			return false;
	}
	h->fence = fence;
	h->secret = secret;
	return true;
}

/*
 * The spec allows any byte but whitespace and control bytes in a name, '='
 * included: a name is recognised by its position, not its form.
 */
bool
proto_valid_name(const char *s, size_t len)
{
	size_t i;

	if (s == NULL || len == 0 || len > PROTO_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == ' ' || proto_is_control(c))
			return false;
	}
	return true;
}

static bool
proto_valid_fence(uint64_t fence)
{
	return fence >= 1 && fence <= (uint64_t)PROTO_FENCE_MAX;
}

/*
 * Request parser.
 */

static enum proto_result
proto_refuse(struct proto_request *req, struct proto_error *err,
    enum proto_error_code code, const char *message)
{
	memset(req, 0, sizeof(*req));
	proto_set_error(err, code, message);
	return PROTO_BAD;
}

/*
 * Sets one option of req from its value.  Returns NULL or the sentence that
 * refuses the value.
 */
static const char *
proto_set_option(struct proto_request *req,
    const struct proto_option_info *option, const char *value,
    size_t value_len)
{
	int64_t ms = 0;

	if (option->bit == PROTO_OPTION_OWNER) {
		if (!proto_valid_name(value, value_len) ||
		    value_len > PROTO_OWNER_MAX)
			return proto_msg_owner;
		req->owner = value;
		req->owner_len = value_len;
		return NULL;
	}
	if (option->bit == PROTO_OPTION_RID) {
		if (!proto_valid_name(value, value_len) ||
		    value_len > PROTO_RID_MAX)
			return proto_msg_rid;
		req->rid = value;
		req->rid_len = value_len;
		return NULL;
	}
	if (option->bit == PROTO_OPTION_FENCE) {
		if (!proto_parse_uint(value, value_len,
		    (uint64_t)PROTO_FENCE_MAX, &req->fence))
			return proto_msg_watch_fence;
		req->has_fence = true;
		return NULL;
	}
	if (option->bit == PROTO_OPTION_PREFIX ||
	    option->bit == PROTO_OPTION_AFTER) {
		if (!proto_valid_name(value, value_len))
			return option->bit == PROTO_OPTION_PREFIX ?
			    proto_msg_prefix : proto_msg_after;
		if (option->bit == PROTO_OPTION_PREFIX) {
			req->prefix = value;
			req->prefix_len = value_len;
		} else {
			req->after = value;
			req->after_len = value_len;
		}
		return NULL;
	}
	if (option->bit == PROTO_OPTION_LIMIT) {
		/* LIST's page size, or the holders of an ACQUIRE's name. */
		bool list = req->command == PROTO_CMD_LIST;
		uint64_t limit;

		if (!proto_parse_uint(value, value_len, list ?
		    PROTO_LIST_LIMIT_MAX : PROTO_HOLDERS_LIMIT_MAX, &limit) ||
		    limit == 0)
			return list ? proto_msg_limit :
			    proto_msg_holders_limit;
		req->has_limit = true;
		req->limit = (uint32_t)limit;
		return NULL;
	}
	if (option->bit == PROTO_OPTION_MODE) {
		if (proto_equal_nocase(value, value_len, "exclusive"))
			req->mode = PROTO_MODE_EXCLUSIVE;
		else if (proto_equal_nocase(value, value_len, "shared"))
			req->mode = PROTO_MODE_SHARED;
		else
			return proto_msg_mode;
		req->has_mode = true;
		return NULL;
	}
	if (option->bit == PROTO_OPTION_ONCLOSE) {
		if (proto_equal_nocase(value, value_len, "keep"))
			req->onclose = PROTO_ONCLOSE_KEEP;
		else if (proto_equal_nocase(value, value_len, "release"))
			req->onclose = PROTO_ONCLOSE_RELEASE;
		else
			return proto_msg_onclose;
		req->has_onclose = true;
		return NULL;
	}
	switch (proto_scan_duration(value, value_len, &ms)) {
	case PROTO_DURATION_OK:
		break;
	case PROTO_DURATION_NEGATIVE:
		return option->negative;
	case PROTO_DURATION_TOO_LONG:
		return option->too_long;
	default:
		return option->malformed;
	}
	if (option->bit == PROTO_OPTION_LEASE) {
		req->has_lease = true;
		req->lease_ms = ms;
	} else if (option->bit == PROTO_OPTION_DELAY) {
		req->has_delay = true;
		req->delay_ms = ms;
	} else {
		req->has_wait = true;
		req->wait_ms = ms;
	}
	return NULL;
}

/*
 * The words of a request line that the value pass can reach: the command,
 * at most two arguments and then options.  Each option that is taken sets
 * one of PROTO_OPTION_COUNT bits, so by the option after those the pass
 * has refused the line (a repeat, an unknown option or one the command
 * does not take): it never reads past word 2 + PROTO_OPTION_COUNT + 1.
 */
#define PROTO_REQUEST_WORDS (1 + 2 + PROTO_OPTION_COUNT + 1)

struct proto_word {
	const char *s;
	size_t len;
	size_t eq;		/* offset of the first '=', len when none */
};

/* A request line split into words. */
struct proto_words {
	struct proto_word w[PROTO_REQUEST_WORDS];	/* the first ones */
	size_t count;		/* all the words of the line */
	size_t first_bare;	/* the first word past w[] without '=', or
				 * SIZE_MAX: all the shape pass needs of
				 * those */
};

/*
 * Splits line[0..n) into words separated by runs of blanks, as
 * proto_next_word does, in one pass that also refuses the line (returns
 * false) for a control byte other than a tab, as proto_has_control does.
 */
static bool
proto_split_request(const char *line, size_t n, struct proto_words *words)
{
	size_t i = 0, start, eq, k;
	unsigned char c;

	words->count = 0;
	words->first_bare = SIZE_MAX;
	while (i < n) {
		c = (unsigned char)line[i];
		if (proto_is_blank(c)) {
			i++;
			continue;
		}
		if (proto_is_control(c))
			return false;
		/* A word runs to the next blank or control byte; every byte
		 * above the space but DEL belongs to it. */
		start = i;
		eq = SIZE_MAX;
		for (; i < n; i++) {
			c = (unsigned char)line[i];
			if (c <= ' ' || c == 0x7f)
				break;
			if (c == '=' && eq == SIZE_MAX)
				eq = i - start;
		}
		k = words->count++;
		if (k < PROTO_REQUEST_WORDS) {
			words->w[k].s = line + start;
			words->w[k].len = i - start;
			words->w[k].eq = eq == SIZE_MAX ? i - start : eq;
		} else if (eq == SIZE_MAX && words->first_bare == SIZE_MAX)
			words->first_bare = k;
	}
	return true;
}

/*
 * Parses one request line, line[0..n) without its line end, in two passes
 * over its words: first its shape (command, argument count, arguments before
 * options), which is BADREQ when wrong, then its values, which are BADARG
 * when wrong.  Doing the shape first means "ACQUIRE lease=5" is told it
 * lacks a name rather than anything about its lease.  The line is split
 * once; both passes read the words it kept.
 */
static enum proto_result
proto_parse_request_line(const char *line, size_t n,
    struct proto_request *req, struct proto_error *err)
{
	const struct proto_command_info *info = NULL;
	const struct proto_word *word;
	struct proto_words words;
	const char *message;
	size_t bare, last, i, j;
	unsigned seen = 0;
	int command;

	if (!proto_split_request(line, n, &words))
		return proto_refuse(req, err, PROTO_ERR_BADREQ,
		    proto_msg_control);
	if (words.count == 0)
		return PROTO_EMPTY;
	word = &words.w[0];
	for (command = 0; command < PROTO_CMD_COUNT; command++) {
		if (proto_equal_nocase(word->s, word->len,
		    proto_commands[command].name)) {
			info = &proto_commands[command];
			break;
		}
	}
	if (info == NULL)
		return proto_refuse(req, err, PROTO_ERR_BADREQ,
		    proto_msg_command);
	req->command = (enum proto_command)command;

	/* The first `arity` words are the positional arguments, whatever
	 * they hold (a name may contain '='); every word after them must be
	 * an option.  The first that is not is refused, as out of order when
	 * an option came before it. */
	bare = SIZE_MAX;
	for (i = 1 + info->arity; i < words.count && i < PROTO_REQUEST_WORDS;
	    i++) {
		if (words.w[i].eq == words.w[i].len) {
			bare = i;
			break;
		}
	}
	if (bare == SIZE_MAX)
		bare = words.first_bare;
	if (bare != SIZE_MAX)
		return proto_refuse(req, err, PROTO_ERR_BADREQ,
		    bare > 1 + info->arity ? proto_msg_order :
		    info->arity_message);
	if (words.count - 1 < info->arity)
		return proto_refuse(req, err, PROTO_ERR_BADREQ,
		    info->arity_message);

	last = words.count < PROTO_REQUEST_WORDS ? words.count :
	    PROTO_REQUEST_WORDS;
	for (i = 1; i < last; i++) {
		const struct proto_option_info *option = NULL;

		word = &words.w[i];
		if (i == 1 && info->arity >= 1) {
			/* A word holds no blank or control byte: only its
			 * length can make it an invalid name. */
			if (word->len > PROTO_NAME_MAX)
				return proto_refuse(req, err,
				    PROTO_ERR_BADARG, proto_msg_name);
			req->name = word->s;
			req->name_len = word->len;
			continue;
		}
		if (i == 2 && info->arity >= 2 && info->fence_argument) {
			if (!proto_parse_uint(word->s, word->len,
			    (uint64_t)PROTO_FENCE_MAX, &req->fence) ||
			    !proto_valid_fence(req->fence))
				return proto_refuse(req, err, PROTO_ERR_BADARG,
				    proto_msg_fence);
			req->has_fence = true;
			continue;
		}
		if (i == 2 && info->arity >= 2) {
			if (!proto_parse_handle(word->s, word->len,
			    &req->handle))
				return proto_refuse(req, err, PROTO_ERR_BADARG,
				    proto_msg_handle);
			continue;
		}
		for (j = 0; j < PROTO_OPTION_COUNT; j++) {
			if (proto_equal_nocase(word->s, word->eq,
			    proto_options[j].key)) {
				option = &proto_options[j];
				break;
			}
		}
		if (option == NULL)
			return proto_refuse(req, err, PROTO_ERR_BADARG,
			    proto_msg_option);
		if ((info->options & option->bit) == 0)
			return proto_refuse(req, err, PROTO_ERR_BADARG,
			    proto_msg_not_taken);
		if ((seen & option->bit) != 0)
			return proto_refuse(req, err, PROTO_ERR_BADARG,
			    proto_msg_twice);
		seen |= option->bit;
		message = proto_set_option(req, option,
		    word->s + word->eq + 1, word->len - word->eq - 1);
		if (message != NULL)
			return proto_refuse(req, err, PROTO_ERR_BADARG,
			    message);
	}
	/* A shared lock is a read/write lock: its limit is 1. */
	if (req->has_mode && req->mode == PROTO_MODE_SHARED &&
	    req->has_limit && req->limit != 1)
		return proto_refuse(req, err, PROTO_ERR_BADARG,
		    proto_msg_shared_limit);
	return PROTO_DONE;
}

/* Frames one line of buf for a parser: err is cleared, or says TOOLONG;
 * *n is the line's length without its end when the result is DONE. */
static enum proto_result
proto_frame(const char *buf, size_t len, size_t max_line, size_t *n,
    size_t *consumed, struct proto_error *err)
{
	enum proto_result result;

	proto_set_error(err, PROTO_ERR_NONE, NULL);
	result = proto_frame_line(buf, len, max_line, n, consumed);
	if (result == PROTO_TOOLONG)
		proto_set_error(err, PROTO_ERR_TOOLONG, proto_msg_toolong);
	return result;
}

enum proto_result
proto_parse_request(const char *buf, size_t len, size_t max_line,
    struct proto_request *req, size_t *consumed, struct proto_error *err)
{
	enum proto_result result;
	size_t n;

	memset(req, 0, sizeof(*req));
	result = proto_frame(buf, len, max_line, &n, consumed, err);
	if (result != PROTO_DONE)
		return result;
	return proto_parse_request_line(buf, n, req, err);
}

/*
 * Reply parser.
 */

static enum proto_result
proto_refuse_reply(struct proto_reply *reply, struct proto_error *err)
{
	memset(reply, 0, sizeof(*reply));
	proto_set_error(err, PROTO_ERR_BADREQ, proto_msg_reply);
	return PROTO_BAD;
}

/* Reads one field value of a reply into reply; false when it is malformed. */
static bool
proto_set_field(struct proto_reply *reply, unsigned field, const char *value,
    size_t value_len)
{
	uint64_t v;

	switch (field) {
	case PROTO_FIELD_FENCE:
		if (!proto_parse_uint(value, value_len,
		    (uint64_t)PROTO_FENCE_MAX, &v))
			return false;
		/* Only a lock's state may show fence 0: it is free. */
		if (v == 0 && reply->kind != PROTO_REPLY_STATUS &&
		    reply->kind != PROTO_REPLY_LOCK &&
		    reply->kind != PROTO_REPLY_CHANGED &&
		    reply->kind != PROTO_REPLY_STALE)
			return false;
		reply->fence = v;
		return true;
	case PROTO_FIELD_HANDLE:
		return proto_parse_handle(value, value_len, &reply->handle);
	case PROTO_FIELD_LEASE:
	case PROTO_FIELD_TTL:
		if (!proto_parse_uint(value, value_len, (uint64_t)INT64_MAX,
		    &v))
			return false;
		if (field == PROTO_FIELD_LEASE)
			reply->lease_ms = (int64_t)v;
		else
			reply->ttl_ms = (int64_t)v;
		return true;
	case PROTO_FIELD_HELD:
		if (proto_equal(value, value_len, "0"))
			reply->held = false;
		else if (proto_equal(value, value_len, "1"))
			reply->held = true;
		else
			return false;
		return true;
	case PROTO_FIELD_QUEUE:
		return proto_parse_uint(value, value_len, UINT64_MAX,
		    &reply->queue);
	case PROTO_FIELD_DELAY:
		if (!proto_parse_uint(value, value_len, (uint64_t)INT64_MAX,
		    &v))
			return false;
		reply->delay_ms = (int64_t)v;
		return true;
	case PROTO_FIELD_COUNT_:
		return proto_parse_uint(value, value_len, UINT64_MAX,
		    &reply->count);
	case PROTO_FIELD_HOLDERS:
		return proto_parse_uint(value, value_len, UINT64_MAX,
		    &reply->holders);
	case PROTO_FIELD_LIMIT:
		if (!proto_parse_uint(value, value_len,
		    PROTO_HOLDERS_LIMIT_MAX, &v) || v == 0)
			return false;
		reply->limit = (uint32_t)v;
		return true;
	case PROTO_FIELD_MODE:
		/* Only mode=shared is sent; another mode is none of ours. */
		reply->shared = proto_equal(value, value_len, "shared");
		return value_len > 0;
	case PROTO_FIELD_OWNER:
	case PROTO_FIELD_NEXT:
		if (!proto_valid_name(value, value_len))
			return false;
		if (field == PROTO_FIELD_OWNER) {
			reply->owner = value;
			reply->owner_len = value_len;
		} else {
			reply->next = value;
			reply->next_len = value_len;
		}
		return true;
	case PROTO_FIELD_CAUSE:
		if (value_len == 0)
			return false;
		reply->cause = value;
		reply->cause_len = value_len;
		return true;
	default:
		return false;
	}
}

/*
 * Reads the key=value fields of line[pos..n) that info names, each at most
 * once, and skips fields it does not know.  A word that is not key=value is
 * malformed.  Returns false when a field is malformed or one is missing.
 */
static bool
proto_parse_fields(const struct proto_reply_info *info, const char *line,
    size_t n, size_t pos, struct proto_reply *reply)
{
	const char *word, *eq;
	size_t word_len, key_len, i;
	unsigned seen = 0;

	while (proto_next_word(line, n, &pos, &word, &word_len)) {
		eq = memchr(word, '=', word_len);
		if (eq == NULL || eq == word)
			return false;
		key_len = (size_t)(eq - word);
		for (i = 0; i < PROTO_FIELD_COUNT; i++) {
			if (proto_equal(word, key_len, proto_fields[i].key))
				break;
		}
		if (i == PROTO_FIELD_COUNT ||
		    ((info->fields | info->optional) &
		    proto_fields[i].bit) == 0)
			continue;
		if ((seen & proto_fields[i].bit) != 0)
			return false;
		seen |= proto_fields[i].bit;
		if (!proto_set_field(reply, proto_fields[i].bit, eq + 1,
		    word_len - key_len - 1))
			return false;
	}
	if ((seen & info->fields) != info->fields)
		return false;
	/* A grant's fence is the one its handle carries; anything else lies. */
	if (info->kind == PROTO_REPLY_GRANTED &&
	    reply->fence != reply->handle.fence)
		return false;
	return true;
}

/*
 * Parses one reply line, line[0..n) without its line end.  Keywords, codes
 * and field keys are matched exactly: the server writes them in one case.
 */
static enum proto_result
proto_parse_reply_line(const char *line, size_t n, struct proto_reply *reply,
    struct proto_error *err)
{
	const struct proto_reply_info *info = NULL;
	const char *word, *eq;
	size_t word_len, pos = 0, i;
	int code;

	if (proto_has_control(line, n) ||
	    !proto_next_word(line, n, &pos, &word, &word_len))
		return proto_refuse_reply(reply, err);
	for (i = 0; i < PROTO_REPLY_KIND_COUNT; i++) {
		if (proto_equal(word, word_len, proto_replies[i].keyword)) {
			info = &proto_replies[i];
			break;
		}
	}
	if (info == NULL)
		return proto_refuse_reply(reply, err);
	reply->kind = info->kind;

	switch (info->kind) {
	case PROTO_REPLY_ERROR:
		if (!proto_next_word(line, n, &pos, &word, &word_len))
			return proto_refuse_reply(reply, err);
		for (code = PROTO_ERR_NONE + 1; code < PROTO_ERR_COUNT;
		    code++) {
			if (proto_equal(word, word_len,
			    proto_error_names[code]))
				break;
		}
		if (code == PROTO_ERR_COUNT)
			return proto_refuse_reply(reply, err);
		reply->error = (enum proto_error_code)code;
		/* FALLTHROUGH */
	case PROTO_REPLY_HELP:
	case PROTO_REPLY_STATS:
		pos = proto_skip_blanks(line, n, pos);
		reply->text = line + pos;
		reply->text_len = n - pos;
		if (info->kind != PROTO_REPLY_STATS)
			return PROTO_DONE;
		/* Every STATS word is key=value with a key. */
		while (proto_next_word(line, n, &pos, &word, &word_len)) {
			eq = memchr(word, '=', word_len);
			if (eq == NULL || eq == word)
				return proto_refuse_reply(reply, err);
		}
		return PROTO_DONE;
	default:
		break;
	}
	if (info->has_name) {
		if (!proto_next_word(line, n, &pos, &word, &word_len) ||
		    !proto_valid_name(word, word_len))
			return proto_refuse_reply(reply, err);
		reply->name = word;
		reply->name_len = word_len;
	}
	if (!proto_parse_fields(info, line, n, pos, reply))
		return proto_refuse_reply(reply, err);
	return PROTO_DONE;
}

enum proto_result
proto_parse_reply(const char *buf, size_t len, size_t max_line,
    struct proto_reply *reply, size_t *consumed, struct proto_error *err)
{
	enum proto_result result;
	size_t n;

	memset(reply, 0, sizeof(*reply));
	result = proto_frame(buf, len, max_line, &n, consumed, err);
	if (result != PROTO_DONE)
		return result;
	return proto_parse_reply_line(buf, n, reply, err);
}

bool
proto_stats_get(const char *text, size_t text_len, const char *key,
    uint64_t *value)
{
	const char *word, *eq;
	size_t word_len, pos = 0;

	if (text == NULL || key == NULL)
		return false;
	while (proto_next_word(text, text_len, &pos, &word, &word_len)) {
		eq = memchr(word, '=', word_len);
		if (eq == NULL || !proto_equal(word, (size_t)(eq - word), key))
			continue;
		return proto_parse_uint(eq + 1, word_len - (size_t)(eq - word)
		    - 1, UINT64_MAX, value);
	}
	return false;
}

/*
 * Formatters.  A writer appends within cap and remembers running out, so
 * each formatter reads as the line it writes and checks the fit once.
 */

struct proto_writer {
	char *out;
	size_t cap;
	size_t len;
	bool full;
};

static void
proto_put(struct proto_writer *w, const char *s, size_t n)
{
	if (w->full || n > w->cap - w->len) {
		w->full = true;
		return;
	}
	if (n == 0)
		return;
	memcpy(w->out + w->len, s, n);
	w->len += n;
}

static void
proto_put_string(struct proto_writer *w, const char *s)
{
	proto_put(w, s, strlen(s));
}

static void
proto_put_uint(struct proto_writer *w, uint64_t v)
{
	char digits[20];
	size_t i = sizeof(digits);

	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	proto_put(w, digits + i, sizeof(digits) - i);
}

static void
proto_put_handle(struct proto_writer *w, struct proto_handle h)
{
	static const char hex[] = "0123456789abcdef";
	char secret[PROTO_SECRET_HEX];
	int i;

	proto_put_uint(w, h.fence);
	proto_put(w, "-", 1);
	for (i = PROTO_SECRET_HEX - 1; i >= 0; i--) {
		secret[i] = hex[h.secret & 0xf];
		h.secret >>= 4;
	}
	proto_put(w, secret, sizeof(secret));
}

/* Ends the line; returns its length, or 0 when it did not fit. */
static size_t
proto_finish_line(struct proto_writer *w)
{
	proto_put(w, "\r\n", 2);
	return w->full ? 0 : w->len;
}

/* A writer over out[0..cap); a NULL out is treated as no room at all. */
static struct proto_writer
proto_writer_init(char *out, size_t cap)
{
	struct proto_writer w;

	w.out = out;
	w.cap = out == NULL ? 0 : cap;
	w.len = 0;
	w.full = false;
	return w;
}

size_t
proto_format_handle(char *out, size_t cap, struct proto_handle h)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_fence(h.fence))
		return 0;
	proto_put_handle(&w, h);
	return w.full ? 0 : w.len;
}

/* Writes "<keyword> <name>", the start of every reply about a lock. */
static void
proto_put_keyword_name(struct proto_writer *w, const char *keyword,
    const char *name, size_t name_len)
{
	proto_put_string(w, keyword);
	proto_put(w, " ", 1);
	proto_put(w, name, name_len);
}

size_t
proto_format_granted(char *out, size_t cap, const char *name,
    size_t name_len, struct proto_handle h, int64_t lease_ms)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_name(name, name_len) || !proto_valid_fence(h.fence) ||
	    lease_ms < 0)
		return 0;
	proto_put_keyword_name(&w, "GRANTED", name, name_len);
	proto_put_string(&w, " fence=");
	proto_put_uint(&w, h.fence);
	proto_put_string(&w, " handle=");
	proto_put_handle(&w, h);
	proto_put_string(&w, " lease=");
	proto_put_uint(&w, (uint64_t)lease_ms);
	return proto_finish_line(&w);
}

size_t
proto_format_renewed(char *out, size_t cap, const char *name,
    size_t name_len, uint64_t fence, int64_t lease_ms)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_name(name, name_len) || !proto_valid_fence(fence) ||
	    lease_ms < 0)
		return 0;
	proto_put_keyword_name(&w, "RENEWED", name, name_len);
	proto_put_string(&w, " fence=");
	proto_put_uint(&w, fence);
	proto_put_string(&w, " lease=");
	proto_put_uint(&w, (uint64_t)lease_ms);
	return proto_finish_line(&w);
}

/* RELEASED, NOTHELD and HELD are a keyword and a name. */
static size_t
proto_format_name_reply(char *out, size_t cap, const char *keyword,
    const char *name, size_t name_len)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_name(name, name_len))
		return 0;
	proto_put_keyword_name(&w, keyword, name, name_len);
	return proto_finish_line(&w);
}

size_t
proto_format_released(char *out, size_t cap, const char *name,
    size_t name_len)
{
	return proto_format_name_reply(out, cap, "RELEASED", name, name_len);
}

size_t
proto_format_notheld(char *out, size_t cap, const char *name,
    size_t name_len)
{
	return proto_format_name_reply(out, cap, "NOTHELD", name, name_len);
}

size_t
proto_format_held(char *out, size_t cap, const char *name, size_t name_len)
{
	return proto_format_name_reply(out, cap, "HELD", name, name_len);
}

size_t
proto_format_status(char *out, size_t cap, const char *name,
    size_t name_len, bool held, uint64_t fence, int64_t ttl_ms,
    uint64_t queue)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_name(name, name_len) ||
	    fence > (uint64_t)PROTO_FENCE_MAX || ttl_ms < 0)
		return 0;
	proto_put_keyword_name(&w, "STATUS", name, name_len);
	proto_put_string(&w, held ? " held=1" : " held=0");
	proto_put_string(&w, " fence=");
	proto_put_uint(&w, fence);
	proto_put_string(&w, " ttl=");
	proto_put_uint(&w, (uint64_t)ttl_ms);
	proto_put_string(&w, " queue=");
	proto_put_uint(&w, queue);
	return proto_finish_line(&w);
}

size_t
proto_format_pong(char *out, size_t cap)
{
	struct proto_writer w = proto_writer_init(out, cap);

	proto_put_string(&w, "PONG");
	return proto_finish_line(&w);
}

size_t
proto_format_bye(char *out, size_t cap)
{
	struct proto_writer w = proto_writer_init(out, cap);

	proto_put_string(&w, "BYE");
	return proto_finish_line(&w);
}

/* The list comes from the command table, so a new command cannot be missed. */
size_t
proto_format_help(char *out, size_t cap)
{
	struct proto_writer w = proto_writer_init(out, cap);
	int command;

	proto_put_string(&w, "HELP commands:");
	for (command = 0; command < PROTO_CMD_COUNT; command++) {
		proto_put(&w, " ", 1);
		proto_put_string(&w, proto_commands[command].name);
	}
	return proto_finish_line(&w);
}

size_t
proto_format_authed(char *out, size_t cap, const char *principal,
    size_t principal_len)
{
	struct proto_writer w = proto_writer_init(out, cap);

	if (!proto_valid_name(principal, principal_len))
		return 0;
	proto_put_string(&w, "AUTHED ");
	proto_put(&w, principal, principal_len);
	return proto_finish_line(&w);
}

/*
 * An empty or NULL text writes "ERR <CODE>" alone.  A text holding a control
 * byte other than a tab would break the line, so it is refused.
 */
size_t
proto_format_error(char *out, size_t cap, enum proto_error_code code,
    const char *text)
{
	struct proto_writer w = proto_writer_init(out, cap);
	const char *code_name = proto_error_name(code);
	size_t text_len = text == NULL ? 0 : strlen(text);

	if (code_name == NULL || proto_has_control(text, text_len))
		return 0;
	proto_put_string(&w, "ERR ");
	proto_put_string(&w, code_name);
	if (text_len > 0) {
		proto_put(&w, " ", 1);
		proto_put(&w, text, text_len);
	}
	return proto_finish_line(&w);
}

/* A STATS key is a word without '=' that a client can look up. */
static bool
proto_valid_stat_key(const char *key)
{
	return key != NULL && key[0] != '\0' &&
	    proto_valid_name(key, strlen(key)) && strchr(key, '=') == NULL;
}

size_t
proto_format_stats(char *out, size_t cap, const struct proto_stat *stats,
    size_t count)
{
	struct proto_writer w = proto_writer_init(out, cap);
	size_t i;

	if (stats == NULL && count > 0)
		return 0;
	proto_put_string(&w, "STATS");
	for (i = 0; i < count; i++) {
		if (!proto_valid_stat_key(stats[i].key))
			return 0;
		proto_put(&w, " ", 1);
		proto_put_string(&w, stats[i].key);
		proto_put(&w, "=", 1);
		proto_put_uint(&w, stats[i].value);
	}
	return proto_finish_line(&w);
}

/*
 * Refuses (returns 0 for) any request the parser would refuse, so that a
 * client cannot put a line on the wire that the server must answer with
 * BADARG: a bad name or handle, a duration out of range, an option the
 * command does not take.  Name and handle are ignored for commands that take
 * none.
 */
size_t
proto_format_request(char *out, size_t cap, const struct proto_request *req)
{
	struct proto_writer w = proto_writer_init(out, cap);
	const struct proto_command_info *info;

	if (req == NULL || (unsigned)req->command >= PROTO_CMD_COUNT)
		return 0;
	info = &proto_commands[req->command];
	if (info->arity >= 1 && !proto_valid_name(req->name, req->name_len))
		return 0;
	if (info->arity >= 2 && !proto_valid_fence(info->fence_argument ?
	    req->fence : req->handle.fence))
		return 0;
	if (req->has_lease && ((info->options & PROTO_OPTION_LEASE) == 0 ||
	    req->lease_ms < 0 || req->lease_ms > PROTO_DURATION_MAX_MS))
		return 0;
	if (req->has_wait && ((info->options & PROTO_OPTION_WAIT) == 0 ||
	    req->wait_ms < 0 || req->wait_ms > PROTO_DURATION_MAX_MS))
		return 0;
	if (req->has_onclose && ((info->options & PROTO_OPTION_ONCLOSE) == 0 ||
	    (req->onclose != PROTO_ONCLOSE_KEEP &&
	    req->onclose != PROTO_ONCLOSE_RELEASE)))
		return 0;
	if (req->has_delay && ((info->options & PROTO_OPTION_DELAY) == 0 ||
	    req->delay_ms < 0 || req->delay_ms > PROTO_DURATION_MAX_MS))
		return 0;
	if (req->owner_len > 0 && ((info->options & PROTO_OPTION_OWNER) == 0 ||
	    req->owner_len > PROTO_OWNER_MAX ||
	    !proto_valid_name(req->owner, req->owner_len)))
		return 0;
	if (req->rid_len > 0 && ((info->options & PROTO_OPTION_RID) == 0 ||
	    req->rid_len > PROTO_RID_MAX ||
	    !proto_valid_name(req->rid, req->rid_len)))
		return 0;
	/* WATCH's fence= is an option; FORCE's and CHECK's an argument. */
	if (req->has_fence && !info->fence_argument &&
	    ((info->options & PROTO_OPTION_FENCE) == 0 ||
	    req->fence > (uint64_t)PROTO_FENCE_MAX))
		return 0;
	if (req->prefix_len > 0 && ((info->options & PROTO_OPTION_PREFIX) == 0 ||
	    !proto_valid_name(req->prefix, req->prefix_len)))
		return 0;
	if (req->after_len > 0 && ((info->options & PROTO_OPTION_AFTER) == 0 ||
	    !proto_valid_name(req->after, req->after_len)))
		return 0;
	if (req->has_limit && ((info->options & PROTO_OPTION_LIMIT) == 0 ||
	    req->limit < 1 || req->limit > (req->command == PROTO_CMD_LIST ?
	    PROTO_LIST_LIMIT_MAX : PROTO_HOLDERS_LIMIT_MAX)))
		return 0;
	if (req->has_mode && ((info->options & PROTO_OPTION_MODE) == 0 ||
	    (req->mode != PROTO_MODE_EXCLUSIVE &&
	    req->mode != PROTO_MODE_SHARED) ||
	    (req->mode == PROTO_MODE_SHARED && req->has_limit &&
	    req->limit != 1)))
		return 0;

	proto_put_string(&w, info->name);
	if (info->arity >= 1) {
		proto_put(&w, " ", 1);
		proto_put(&w, req->name, req->name_len);
	}
	if (info->arity >= 2 && info->fence_argument) {
		proto_put(&w, " ", 1);
		proto_put_uint(&w, req->fence);
	} else if (info->arity >= 2) {
		proto_put(&w, " ", 1);
		proto_put_handle(&w, req->handle);
	}
	if (req->has_fence && !info->fence_argument) {
		proto_put_string(&w, " fence=");
		proto_put_uint(&w, req->fence);
	}
	if (req->has_lease) {
		proto_put_string(&w, " lease=");
		proto_put_uint(&w, (uint64_t)req->lease_ms);
	}
	if (req->has_wait) {
		proto_put_string(&w, " wait=");
		proto_put_uint(&w, (uint64_t)req->wait_ms);
	}
	if (req->has_onclose)
		proto_put_string(&w, req->onclose == PROTO_ONCLOSE_RELEASE ?
		    " onclose=release" : " onclose=keep");
	if (req->has_delay) {
		proto_put_string(&w, " delay=");
		proto_put_uint(&w, (uint64_t)req->delay_ms);
	}
	if (req->owner_len > 0) {
		proto_put_string(&w, " owner=");
		proto_put(&w, req->owner, req->owner_len);
	}
	if (req->rid_len > 0) {
		proto_put_string(&w, " rid=");
		proto_put(&w, req->rid, req->rid_len);
	}
	if (req->prefix_len > 0) {
		proto_put_string(&w, " prefix=");
		proto_put(&w, req->prefix, req->prefix_len);
	}
	if (req->after_len > 0) {
		proto_put_string(&w, " after=");
		proto_put(&w, req->after, req->after_len);
	}
	if (req->has_limit) {
		proto_put_string(&w, " limit=");
		proto_put_uint(&w, req->limit);
	}
	if (req->has_mode)
		proto_put_string(&w, req->mode == PROTO_MODE_SHARED ?
		    " mode=shared" : " mode=exclusive");
	return proto_finish_line(&w);
}
