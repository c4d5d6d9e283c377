/*
 * proto.h - lockd wire protocol v1: every keyword, field, error code and
 * limit of ../shared/spec/protocol-v1.md lives here, in one header.
 *
 * The parser and the formatters are pure: they read and write only the
 * caller's buffers, allocate nothing, keep no state between calls and never
 * touch a socket, a clock or a file.  Parsed strings point into the caller's
 * buffer and are valid as long as that buffer is.  The daemon parses requests
 * and formats replies with this code; liblockd formats requests and parses
 * replies with the very same code.
 */
#ifndef LOCKD_PROTO_H
#define LOCKD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits of the protocol itself (server limits live in the daemon). */
#define PROTO_NAME_MAX 255                     /* bytes in a lock name */
#define PROTO_LINE_MAX_DEFAULT 4096            /* bytes in a request line */
#define PROTO_DURATION_MAX_MS (365LL * 24 * 3600 * 1000)
#define PROTO_FENCE_MAX INT64_MAX              /* 2^63 - 1 */
#define PROTO_SECRET_HEX 16                    /* hex digits in a handle */
#define PROTO_REPLY_MAX 512                    /* any reply but STATS/HELP */

/* Error codes, as the spec names them. */
enum proto_error_code {
	PROTO_ERR_NONE = 0,
	PROTO_ERR_BADREQ,
	PROTO_ERR_BADARG,
	PROTO_ERR_TOOLONG,
	PROTO_ERR_TIMEOUT,
	PROTO_ERR_CONFLICT,
	PROTO_ERR_LIMIT,
	PROTO_ERR_UNAVAILABLE,
	PROTO_ERR_OVERFLOW,
	PROTO_ERR_SHUTDOWN,
	PROTO_ERR_NOTLEADER,      /* protocol v2, cluster mode */
	PROTO_ERR_DENIED,       /* v2: authentication refuses this */
	PROTO_ERR_COUNT
};

/* "BADREQ", "BADARG", ...; NULL for PROTO_ERR_NONE or out of range. */
const char *proto_error_name(enum proto_error_code code);

enum proto_command {
	PROTO_CMD_ACQUIRE,
	PROTO_CMD_TRY,
	PROTO_CMD_RENEW,
	PROTO_CMD_RELEASE,
	PROTO_CMD_STATUS,
	PROTO_CMD_PING,
	PROTO_CMD_QUIT,
	PROTO_CMD_HELP,
	PROTO_CMD_STATS,
	PROTO_CMD_FORCE,         /* FORCE <name> <fence> */
	PROTO_CMD_CHECK,         /* CHECK <name> <fence> */
	PROTO_CMD_WATCH,         /* WATCH <name> [fence=] [wait=] */
	PROTO_CMD_LIST,          /* LIST [prefix=] [after=] [limit=] */
	PROTO_CMD_AUTH,         /* v2: AUTH <token>; the token is req->name */
	PROTO_CMD_COUNT
};

/* "ACQUIRE", "TRY", ... (upper case); NULL when out of range. */
const char *proto_command_name(enum proto_command command);

enum proto_onclose {
	PROTO_ONCLOSE_KEEP = 0,
	PROTO_ONCLOSE_RELEASE
};

/* mode= of ACQUIRE and TRY. */
enum proto_mode {
	PROTO_MODE_EXCLUSIVE = 0,
	PROTO_MODE_SHARED
};

/* A handle is "<fence>-<16 lowercase hex digits>". */
struct proto_handle {
	uint64_t fence;  /* 1 .. PROTO_FENCE_MAX */
	uint64_t secret;
};

/*
 * One parsed request.  Fields a command does not take are zero.  Durations
 * are in milliseconds, already range-checked (0 .. PROTO_DURATION_MAX_MS).
 */
struct proto_request {
	enum proto_command command;
	const char *name;        /* into the caller's buffer; not terminated */
	size_t name_len;         /* 0 for commands without a name */
	struct proto_handle handle;  /* RENEW, RELEASE */
	bool has_lease;
	int64_t lease_ms;
	bool has_wait;
	int64_t wait_ms;
	bool has_onclose;
	enum proto_onclose onclose;
	bool has_delay;          /* delay=, ACQUIRE and TRY */
	int64_t delay_ms;
	const char *owner;       /* owner=, into the caller's buffer */
	size_t owner_len;        /* 0: none */
	const char *rid;         /* rid=, ACQUIRE and TRY; caller's buffer */
	size_t rid_len;          /* 0: none */
	bool has_fence;          /* FORCE's and CHECK's argument, WATCH's fence= */
	uint64_t fence;
	const char *prefix;      /* LIST's prefix=, into the caller's buffer */
	size_t prefix_len;       /* 0: none */
	const char *after;       /* LIST's after= */
	size_t after_len;        /* 0: none */
	bool has_limit;          /* LIST's limit=; ACQUIRE's and TRY's */
	uint32_t limit;
	bool has_mode;           /* mode=, ACQUIRE and TRY */
	enum proto_mode mode;
};

#define PROTO_LIST_LIMIT_MAX 1000              /* LIST's largest limit= */
#define PROTO_LIST_LIMIT_DEFAULT 100           /* LIST without limit= */
#define PROTO_HOLDERS_LIMIT_MAX 65535          /* ACQUIRE's, TRY's limit= */

#define PROTO_OWNER_MAX 64                     /* bytes in an owner label */
#define PROTO_RID_MAX 64                       /* bytes in a request id */

enum proto_result {
	PROTO_DONE,     /* a request (or reply) parsed; *consumed covers its line */
	PROTO_EMPTY,    /* an empty line was consumed; nothing to answer */
	PROTO_PARTIAL,  /* no complete line yet; *consumed is 0 */
	PROTO_BAD,      /* a malformed line was consumed; *err says why */
	PROTO_TOOLONG   /* the line exceeds max_line; see proto_parse_request */
};

/* Why a line was refused: a code and a static human-readable sentence. */
struct proto_error {
	enum proto_error_code code;
	const char *message;
};

/*
 * Parses the first line of buf[0..len).  A line is at most max_line bytes
 * before its LF (a CR right before the LF is dropped and not counted).
 *
 * PROTO_DONE: *req is filled and *consumed is the line's length with its LF.
 * PROTO_EMPTY: an empty (or all-blank) line; *consumed covers it.
 * PROTO_PARTIAL: no LF yet and at most max_line bytes seen (plus one CR
 *   that may precede the LF); *consumed = 0.
 * PROTO_BAD: *err is set (BADREQ or BADARG); *consumed covers the line.
 * PROTO_TOOLONG: *err is TOOLONG.  If the LF was seen, *consumed covers the
 *   whole line.  If not, *consumed = len and the caller must drop input with
 *   proto_discard_line() until it reports the end of that line.
 */
enum proto_result proto_parse_request(const char *buf, size_t len,
    size_t max_line, struct proto_request *req, size_t *consumed,
    struct proto_error *err);

/*
 * Drops the rest of an overlong line: sets *consumed to the bytes up to and
 * including the first LF and returns true, or to len and returns false when
 * buf holds no LF.
 */
bool proto_discard_line(const char *buf, size_t len, size_t *consumed);

/*
 * Value parsers, exposed for the command line and the config file.  Each
 * takes exactly the bytes given (no sign, no spaces, digits only) and returns
 * false on anything else.  A handle must be canonical: no leading zeros in
 * its fence.  A name may hold '=' (the spec allows any byte but whitespace
 * and control bytes): requests place arguments by position, so the first
 * word after the command is the name whatever it holds.
 */
bool proto_parse_duration(const char *s, size_t len, int64_t *ms);
bool proto_parse_handle(const char *s, size_t len, struct proto_handle *h);
bool proto_valid_name(const char *s, size_t len);

/*
 * Formatters.  Each writes one complete line ending in CRLF to out (at most
 * cap bytes, never more) and returns its length, or 0 when cap is too small
 * or an argument cannot be carried by the protocol (a bad name, a fence out
 * of range, a negative duration, a control byte in an error text); nothing
 * useful is written then.  Nothing is NUL-terminated.  PROTO_REPLY_MAX always
 * suffices for replies other than STATS (and ERR with a long text).
 */
/* The handle alone, "<fence>-<16 hex>", without CRLF. */
size_t proto_format_handle(char *out, size_t cap, struct proto_handle h);
size_t proto_format_granted(char *out, size_t cap, const char *name,
    size_t name_len, struct proto_handle h, int64_t lease_ms);
size_t proto_format_renewed(char *out, size_t cap, const char *name,
    size_t name_len, uint64_t fence, int64_t lease_ms);
size_t proto_format_released(char *out, size_t cap, const char *name,
    size_t name_len);
size_t proto_format_notheld(char *out, size_t cap, const char *name,
    size_t name_len);
size_t proto_format_held(char *out, size_t cap, const char *name,
    size_t name_len);
size_t proto_format_status(char *out, size_t cap, const char *name,
    size_t name_len, bool held, uint64_t fence, int64_t ttl_ms,
    uint64_t queue);
size_t proto_format_pong(char *out, size_t cap);
size_t proto_format_bye(char *out, size_t cap);
size_t proto_format_help(char *out, size_t cap);
/* "AUTHED <principal>"; the principal is a word like a name. */
size_t proto_format_authed(char *out, size_t cap, const char *principal,
    size_t principal_len);
/* "ERR <CODE> <text>"; text must hold no CR or LF (NULL or "": no text). */
size_t proto_format_error(char *out, size_t cap, enum proto_error_code code,
    const char *text);

/* One key=value field of a STATS reply. */
struct proto_stat {
	const char *key;
	uint64_t value;
};
size_t proto_format_stats(char *out, size_t cap, const struct proto_stat *stats,
    size_t count);

/*
 * Formats a request as a client would send it (canonical spelling: upper-case
 * command, durations in ms, options in the order fence (WATCH), lease, wait,
 * onclose, delay, owner, rid, prefix, after, limit, mode, each only when set: its
 * has_ flag, or a non-zero length for owner, rid, prefix and after).  FORCE and CHECK
 * take their fence (req->fence) as the second argument.  Returns the length or 0 when cap is too
 * small or the request holds anything the parser would refuse (an invalid
 * name or handle, a duration out of range, an option its command does not
 * take).  Name and handle are ignored for commands that take none.
 */
size_t proto_format_request(char *out, size_t cap,
    const struct proto_request *req);

enum proto_reply_kind {
	PROTO_REPLY_GRANTED,
	PROTO_REPLY_RENEWED,
	PROTO_REPLY_RELEASED,
	PROTO_REPLY_NOTHELD,
	PROTO_REPLY_HELD,
	PROTO_REPLY_STATUS,
	PROTO_REPLY_PONG,
	PROTO_REPLY_BYE,
	PROTO_REPLY_HELP,
	PROTO_REPLY_STATS,
	PROTO_REPLY_ERROR,
	PROTO_REPLY_LOCK,          /* one line of a LIST reply */
	PROTO_REPLY_END,           /* LIST's last line */
	PROTO_REPLY_CHANGED,       /* WATCH */
	PROTO_REPLY_CURRENT,       /* CHECK: the fence is a live holder's */
	PROTO_REPLY_STALE,         /* CHECK: it is not */
	PROTO_REPLY_AUTHED        /* v2: AUTHED <principal>, in name */
};

/*
 * One parsed reply.  Unknown trailing fields are ignored, as the spec asks
 * of clients.  Strings point into the caller's buffer.
 */
struct proto_reply {
	enum proto_reply_kind kind;
	const char *name;          /* every kind with a lock name */
	size_t name_len;
	struct proto_handle handle;  /* GRANTED */
	uint64_t fence;            /* GRANTED, RENEWED, STATUS and its kin,
	                            * CURRENT, STALE */
	int64_t lease_ms;          /* GRANTED, RENEWED */
	bool held;                 /* STATUS, LOCK, CHANGED */
	int64_t ttl_ms;            /* STATUS, LOCK, CHANGED, CURRENT */
	uint64_t queue;            /* STATUS, LOCK, CHANGED */
	const char *owner;         /* STATUS, LOCK, CHANGED: NULL when absent */
	size_t owner_len;
	int64_t delay_ms;          /* lock-delay left; 0 when absent */
	uint64_t holders;          /* STATUS and its kin: holders=, 0 when
	                            * absent */
	uint32_t limit;            /* limit=, 0 when absent (a limit of 1) */
	bool shared;               /* mode=shared */
	const char *cause;         /* CHANGED: the word after cause= */
	size_t cause_len;
	uint64_t count;            /* END */
	const char *next;          /* END: NULL when no more follow */
	size_t next_len;
	enum proto_error_code error;  /* ERROR */
	const char *text;          /* ERROR: the free text; HELP, STATS: the */
	size_t text_len;           /*   rest of the line after the keyword */
};

/*
 * Parses the first reply line of buf[0..len) (ending in CRLF or LF).
 * Returns PROTO_DONE, PROTO_PARTIAL, PROTO_BAD (err->code BADREQ: not a
 * well-formed reply) or PROTO_TOOLONG (no line end within max_line).
 */
enum proto_result proto_parse_reply(const char *buf, size_t len,
    size_t max_line, struct proto_reply *reply, size_t *consumed,
    struct proto_error *err);

/*
 * Looks up a numeric field "key=value" in a STATS reply's text.  Returns
 * false when absent or not a number.
 */
bool proto_stats_get(const char *text, size_t text_len, const char *key,
    uint64_t *value);

#endif /* LOCKD_PROTO_H */
