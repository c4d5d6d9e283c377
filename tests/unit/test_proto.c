/*
 * test_proto.c - unit tests of proto/: the request and reply parsers, the
 * value parsers and the formatters, checked against protocol-v1.md.
 *
 * Parsers are fed from exact-size heap copies (so ASan sees a read past the
 * end), from buffers whose last byte is the last readable byte before a
 * PROT_NONE guard page, and split at every byte the way a socket may deliver
 * them.  Each property checker returns what went wrong instead of asserting,
 * so that a deliberately broken parser or formatter can be run through it and
 * be required to fail.  This file tests proto only: it opens no socket and
 * starts no daemon.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/proto.h"

#define MAX_LINE PROTO_LINE_MAX_DEFAULT
#define HANDLE_41 "41-8c1f0e9b2a7d4c35"
#define SECRET_41 UINT64_C(0x8c1f0e9b2a7d4c35)
#define DAY_MS (24LL * 3600 * 1000)

/* Fails the test with the sentence a checker returned, if any. */
#define assert_check(expr) do {						\
	const char *why_ = (expr);					\
	if (why_ != NULL)						\
		fail_msg("%s", why_);					\
} while (0)

typedef enum proto_result (*request_parser)(const char *, size_t, size_t,
    struct proto_request *, size_t *, struct proto_error *);

/*
 * Helpers: printing bytes, copying them to exact buffers, and capturing a
 * parse so it can be compared after its buffer is gone.
 */

/* Shows bytes with escapes; rotates buffers so two may be shown at once. */
static const char *
show(const char *s, size_t len)
{
	static char buffers[4][256];
	static int next;
	char *out = buffers[next++ % 4];
	size_t i, n = 0;

	for (i = 0; i < len && n + 5 < sizeof(buffers[0]); i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, sizeof(buffers[0]) - n,
			    "\\x%02x", c);
	}
	out[n] = '\0';
	return out;
}

static char *
exact_copy(const char *s, size_t len)
{
	char *copy = malloc(len == 0 ? 1 : len);

	assert_non_null(copy);
	memcpy(copy, s, len);
	return copy;
}

/* A parse, kept with its name copied out and located by offset. */
struct outcome {
	enum proto_result result;
	size_t consumed;
	struct proto_request req;	/* req.name is cleared */
	size_t name_offset;		/* SIZE_MAX when there was no name */
	char name[PROTO_NAME_MAX + 1];
	enum proto_error_code code;
	const char *message;
};

/* Copies the bytes a request field points at out of the parsed buffer,
 * into one of a ring of static copies (an outcome is copied by value, so
 * they cannot live in it); the last few outcomes stay comparable. */
static const char *
keep_field(const char *field, size_t len, const char *buf, size_t buf_len)
{
	static char copies[48][PROTO_NAME_MAX + 1];
	static unsigned next;
	char *copy = copies[next++ % 48];

	if (field == NULL)
		return NULL;
	if (field < buf || len > PROTO_NAME_MAX ||
	    (size_t)(field - buf) + len > buf_len)
		fail_msg("a field points outside the input");
	memcpy(copy, field, len);
	return copy;
}

static struct outcome
parse_at(request_parser parse, const char *buf, size_t len, size_t max_line)
{
	struct outcome o;
	struct proto_error err = { PROTO_ERR_BADREQ, "not set" };

	memset(&o, 0, sizeof(o));
	o.result = parse(buf, len, max_line, &o.req, &o.consumed, &err);
	o.code = err.code;
	o.message = err.message;
	o.name_offset = SIZE_MAX;
	if (o.req.name != NULL) {
		if (o.req.name < buf || o.req.name_len > PROTO_NAME_MAX ||
		    (size_t)(o.req.name - buf) + o.req.name_len > len)
			fail_msg("name points outside the input");
		o.name_offset = (size_t)(o.req.name - buf);
		memcpy(o.name, o.req.name, o.req.name_len);
		o.req.name = NULL;
	}
	o.req.owner = keep_field(o.req.owner, o.req.owner_len, buf, len);
	o.req.rid = keep_field(o.req.rid, o.req.rid_len, buf, len);
	o.req.prefix = keep_field(o.req.prefix, o.req.prefix_len, buf, len);
	o.req.after = keep_field(o.req.after, o.req.after_len, buf, len);
	return o;
}

static struct outcome
parse_exact(request_parser parse, const char *s, size_t len, size_t max_line)
{
	char *copy = exact_copy(s, len);
	struct outcome o = parse_at(parse, copy, len, max_line);

	free(copy);
	return o;
}

static struct outcome
parse_line(const char *s)
{
	return parse_exact(proto_parse_request, s, strlen(s), MAX_LINE);
}

static bool
same_message(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool
same_bytes(const char *a, size_t a_len, const char *b, size_t b_len)
{
	return a_len == b_len && (a_len == 0 || memcmp(a, b, a_len) == 0);
}

/* Field by field, names by their bytes. */
static bool
same_request(const struct proto_request *a, const char *a_name,
    const struct proto_request *b, const char *b_name)
{
	return a->command == b->command && a->name_len == b->name_len &&
	    (a->name_len == 0 || memcmp(a_name, b_name, a->name_len) == 0) &&
	    a->handle.fence == b->handle.fence &&
	    a->handle.secret == b->handle.secret &&
	    a->has_lease == b->has_lease && a->lease_ms == b->lease_ms &&
	    a->has_wait == b->has_wait && a->wait_ms == b->wait_ms &&
	    a->has_onclose == b->has_onclose && a->onclose == b->onclose &&
	    a->has_delay == b->has_delay && a->delay_ms == b->delay_ms &&
	    same_bytes(a->owner, a->owner_len, b->owner, b->owner_len) &&
	    same_bytes(a->rid, a->rid_len, b->rid, b->rid_len) &&
	    a->has_fence == b->has_fence && a->fence == b->fence &&
	    same_bytes(a->prefix, a->prefix_len, b->prefix, b->prefix_len) &&
	    same_bytes(a->after, a->after_len, b->after, b->after_len) &&
	    a->has_limit == b->has_limit && a->limit == b->limit &&
	    a->has_mode == b->has_mode && a->mode == b->mode;
}

static bool
same_outcome(const struct outcome *a, const struct outcome *b,
    bool compare_consumed)
{
	return a->result == b->result &&
	    (!compare_consumed || a->consumed == b->consumed) &&
	    a->code == b->code && same_message(a->message, b->message) &&
	    a->name_offset == b->name_offset &&
	    same_request(&a->req, a->name, &b->req, b->name);
}

/*
 * The requests every property below runs over.
 */

struct good_request {
	const char *line;
	enum proto_command command;
	const char *name;
	uint64_t fence;
	uint64_t secret;
	bool has_lease;
	int64_t lease_ms;
	bool has_wait;
	int64_t wait_ms;
	bool has_onclose;
	enum proto_onclose onclose;
};

static const struct good_request good_requests[] = {
	/* The spec's example session. */
	{ .line = "ACQUIRE inventory/sku-42 lease=30s wait=10s\r\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "inventory/sku-42",
	    .has_lease = true, .lease_ms = 30000,
	    .has_wait = true, .wait_ms = 10000 },
	{ .line = "STATUS inventory/sku-42\r\n",
	    .command = PROTO_CMD_STATUS, .name = "inventory/sku-42" },
	{ .line = "RENEW inventory/sku-42 " HANDLE_41 " lease=1m\r\n",
	    .command = PROTO_CMD_RENEW, .name = "inventory/sku-42",
	    .fence = 41, .secret = SECRET_41,
	    .has_lease = true, .lease_ms = 60000 },
	{ .line = "RELEASE inventory/sku-42 " HANDLE_41 "\r\n",
	    .command = PROTO_CMD_RELEASE, .name = "inventory/sku-42",
	    .fence = 41, .secret = SECRET_41 },
	/* Every command and option. */
	{ .line = "ACQUIRE a lease=1500 wait=0 onclose=release\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "a",
	    .has_lease = true, .lease_ms = 1500, .has_wait = true,
	    .has_onclose = true, .onclose = PROTO_ONCLOSE_RELEASE },
	{ .line = "ACQUIRE a onclose=keep wait=1500ms lease=2h\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "a",
	    .has_lease = true, .lease_ms = 2 * 3600 * 1000,
	    .has_wait = true, .wait_ms = 1500,
	    .has_onclose = true, .onclose = PROTO_ONCLOSE_KEEP },
	{ .line = "ACQUIRE leader/report-generator\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "leader/report-generator" },
	{ .line = "acquire\tb\t\tLEASE=5M  Wait=1H OnClose=KEEP\r\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "b",
	    .has_lease = true, .lease_ms = 5 * 60 * 1000,
	    .has_wait = true, .wait_ms = 3600 * 1000,
	    .has_onclose = true, .onclose = PROTO_ONCLOSE_KEEP },
	{ .line = "ACQUIRE c lease=8760h wait=31536000000MS\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "c",
	    .has_lease = true, .lease_ms = PROTO_DURATION_MAX_MS,
	    .has_wait = true, .wait_ms = PROTO_DURATION_MAX_MS },
	{ .line = "ACQUIRE d lease=525600m wait=31536000s\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "d",
	    .has_lease = true, .lease_ms = PROTO_DURATION_MAX_MS,
	    .has_wait = true, .wait_ms = PROTO_DURATION_MAX_MS },
	{ .line = "ACQUIRE e lease=007s onclose=Release\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "e",
	    .has_lease = true, .lease_ms = 7000,
	    .has_onclose = true, .onclose = PROTO_ONCLOSE_RELEASE },
	{ .line = "ACQUIRE caf\xc3\xa9/\xff\x80 lease=1s\n",
	    .command = PROTO_CMD_ACQUIRE, .name = "caf\xc3\xa9/\xff\x80",
	    .has_lease = true, .lease_ms = 1000 },
	{ .line = "TRY x lease=0\n",
	    .command = PROTO_CMD_TRY, .name = "x", .has_lease = true },
	{ .line = "TRY x onclose=release lease=2s\n",
	    .command = PROTO_CMD_TRY, .name = "x",
	    .has_lease = true, .lease_ms = 2000,
	    .has_onclose = true, .onclose = PROTO_ONCLOSE_RELEASE },
	{ .line = "Try y\n", .command = PROTO_CMD_TRY, .name = "y" },
	{ .line = "RENEW n 9223372036854775807-ffffffffffffffff\n",
	    .command = PROTO_CMD_RENEW, .name = "n",
	    .fence = INT64_MAX, .secret = UINT64_MAX },
	{ .line = "renew n 1-0000000000000000 LEASE=0ms\n",
	    .command = PROTO_CMD_RENEW, .name = "n", .fence = 1,
	    .has_lease = true },
	{ .line = "release r 1-0123456789abcdef\n",
	    .command = PROTO_CMD_RELEASE, .name = "r", .fence = 1,
	    .secret = UINT64_C(0x0123456789abcdef) },
	{ .line = "status s\n", .command = PROTO_CMD_STATUS, .name = "s" },
	{ .line = "PING\r\n", .command = PROTO_CMD_PING },
	{ .line = "ping\n", .command = PROTO_CMD_PING },
	{ .line = "  PING  \n", .command = PROTO_CMD_PING },
	{ .line = "QUIT\n", .command = PROTO_CMD_QUIT },
	{ .line = "qUiT\r\n", .command = PROTO_CMD_QUIT },
	{ .line = "HELP\n", .command = PROTO_CMD_HELP },
	{ .line = "STATS\r\n", .command = PROTO_CMD_STATS },
	{ .line = "\tStAtS\t\r\n", .command = PROTO_CMD_STATS },
};
#define GOOD_COUNT (sizeof(good_requests) / sizeof(good_requests[0]))

struct bad_request {
	const char *line;
	size_t len;			/* 0: strlen(line) */
	enum proto_result result;
	enum proto_error_code code;
	const char *message;		/* NULL: not checked */
};

/* 256 bytes of 0x80: one byte too long for a name. */
#define X16 "\x80\x80\x80\x80\x80\x80\x80\x80" \
	"\x80\x80\x80\x80\x80\x80\x80\x80"
#define X256 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16

#define BADREQ(l, m) { l, 0, PROTO_BAD, PROTO_ERR_BADREQ, m }
#define BADARG(l, m) { l, 0, PROTO_BAD, PROTO_ERR_BADARG, m }
#define BADREQ_N(l, m) { l, sizeof(l) - 1, PROTO_BAD, PROTO_ERR_BADREQ, m }
#define EMPTY(l) { l, 0, PROTO_EMPTY, PROTO_ERR_NONE, NULL }

#define M_CONTROL "line holds a NUL or other control byte"
#define M_HANDLE "bad handle: it must be <fence>-<16 lowercase hex digits>"
#define M_NAME "name must be 1 to 255 bytes without spaces or control bytes"
#define M_LEASE_FORM "lease must be digits with an optional unit ms, s, m or h"
#define M_LEASE_MAX "lease must be at most 365 days"
#define M_NOT_TAKEN "option not taken by this command"
#define M_RID "rid must be 1 to 64 bytes without spaces or control bytes"
#define M_HOLDERS_LIMIT "limit must be an integer from 1 to 65535"
#define M_MODE "mode must be exclusive or shared"
#define M_SHARED_LIMIT "mode=shared takes no limit but 1"

static const struct bad_request bad_requests[] = {
	/* Empty and blank lines are not errors, just nothing to answer. */
	EMPTY("\n"), EMPTY("\r\n"), EMPTY("   \t \r\n"), EMPTY("\t\n"),
	/* Unknown commands and wrong argument counts. */
	BADREQ("FOO x\n", "unknown command"),
	BADREQ("ACQUIREX a\n", "unknown command"),
	BADREQ("ACQ a\n", "unknown command"),
	BADREQ("lease=5\n", "unknown command"),
	BADREQ("ACQUIRE\n", "ACQUIRE takes 1 argument"),
	BADREQ("ACQUIRE a b\n", "ACQUIRE takes 1 argument"),
	BADREQ("ACQUIRE a b lease=5\n", "ACQUIRE takes 1 argument"),
	BADREQ("ACQUIRE a b\n", "ACQUIRE takes 1 argument"),
	BADREQ("ACQUIRE a lease=5 b\n", "arguments must come before options"),
	BADREQ("ACQUIRE a lease=5 s\n", "arguments must come before options"),
	BADREQ("ACQUIRE a lease= 5\n", "arguments must come before options"),
	BADREQ("TRY\n", "TRY takes 1 argument"),
	BADREQ("TRY a b\n", "TRY takes 1 argument"),
	BADREQ("RENEW a\n", "RENEW takes 2 arguments"),
	BADREQ("RENEW a " HANDLE_41 " x\n", "RENEW takes 2 arguments"),
	/* Arguments are known by position: here the handle's slot holds
	 * "lease=5" and the handle is one word too many. */
	BADREQ("RENEW a lease=5 " HANDLE_41 "\n", "RENEW takes 2 arguments"),
	BADARG("RENEW a lease=5\n",
	    "bad handle: it must be <fence>-<16 lowercase hex digits>"),
	BADREQ("RELEASE a\n", "RELEASE takes 2 arguments"),
	BADREQ("RELEASE\r\n", "RELEASE takes 2 arguments"),
	BADREQ("STATUS\n", "STATUS takes 1 argument"),
	BADREQ("STATUS a b\n", "STATUS takes 1 argument"),
	BADREQ("PING x\n", "PING takes no arguments"),
	BADREQ("QUIT now\n", "QUIT takes no arguments"),
	BADREQ("HELP me\n", "HELP takes no arguments"),
	BADREQ("STATS all\n", "STATS takes no arguments"),
	/* Options a command does not take, unknown or given twice. */
	BADARG("PING lease=5\n", M_NOT_TAKEN),
	BADARG("STATUS a lease=5\n", M_NOT_TAKEN),
	BADARG("RELEASE a " HANDLE_41 " lease=5\n", M_NOT_TAKEN),
	BADARG("TRY a wait=5\n", M_NOT_TAKEN),
	BADARG("RENEW a " HANDLE_41 " onclose=keep\n", M_NOT_TAKEN),
	BADARG("RENEW a " HANDLE_41 " wait=1\n", M_NOT_TAKEN),
	BADARG("ACQUIRE a color=red\n", "unknown option"),
	BADARG("ACQUIRE a =5\n", "unknown option"),
	BADARG("ACQUIRE a leases=5\n", "unknown option"),
	BADARG("ACQUIRE a lease\xc3\xa9=5\n", "unknown option"),
	BADARG("ACQUIRE a lease=5 lease=6\n", "option given twice"),
	BADARG("ACQUIRE a lease=5 LEASE=6\n", "option given twice"),
	BADARG("ACQUIRE a Wait=1 wAIT=1\n", "option given twice"),
	BADARG("ACQUIRE a onclose=keep OnClose=release\n",
	    "option given twice"),
	BADARG("RENEW a " HANDLE_41 " lease=1 Lease=1\n",
	    "option given twice"),
	/* Long lines: the parser keeps only the first words, so the shape
	 * and the control bytes of the words after them must still count,
	 * and so must the first refused option among many. */
	BADREQ("ACQUIRE a w=1 w=1 w=1 w=1 w=1 w=1 w=1 b\n",
	    "arguments must come before options"),
	BADREQ("PING a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 x\n",
	    "arguments must come before options"),
	BADREQ("ACQUIRE a lease=1 lease=1 lease=1 lease=1 lease=1 lease=1 "
	    "x\x01\n", M_CONTROL),
	BADARG("ACQUIRE a lease=1 wait=1 onclose=keep lease=2 wait=2 "
	    "onclose=release lease=3\n", "option given twice"),
	BADARG("ACQUIRE a lease=1 wait=2 onclose=keep x=1 y=2 z=3 t=4\n",
	    "unknown option"),
	/* Bad durations. */
	BADARG("TRY x lease=-5\n", "lease must be a non-negative duration"),
	BADARG("ACQUIRE x wait=-1s\n", "wait must be a non-negative duration"),
	BADARG("ACQUIRE x lease=-99999999999999999999\n",
	    "lease must be a non-negative duration"),
	BADARG("ACQUIRE x lease=99999999999999999999\n", M_LEASE_MAX),
	BADARG("ACQUIRE x lease=18446744073709551617\n", M_LEASE_MAX),
	BADARG("ACQUIRE x lease=31536000001\n", M_LEASE_MAX),
	BADARG("ACQUIRE x lease=527040m\n", M_LEASE_MAX),
	BADARG("ACQUIRE x lease=8784h\n", M_LEASE_MAX),
	BADARG("ACQUIRE x wait=99999999999999999999h\n",
	    "wait must be at most 365 days"),
	BADARG("ACQUIRE x lease=5d\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=5sec\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=5mss\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=+5\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=5.5s\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=s\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=0x10\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=--5\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=-\n", M_LEASE_FORM),
	BADARG("ACQUIRE x lease=5=5\n", M_LEASE_FORM),
	BADARG("ACQUIRE x wait=1e3\n",
	    "wait must be digits with an optional unit ms, s, m or h"),
	/* rid=: 1 to 64 bytes of a name, on ACQUIRE and TRY only. */
	BADARG("ACQUIRE x rid=\n", M_RID),
	BADARG("TRY x rid=" X16 X16 X16 X16 "z\n", M_RID),
	BADARG("ACQUIRE x rid=a rid=b\n", "option given twice"),
	BADARG("ACQUIRE x rid=a RID=a\n", "option given twice"),
	BADARG("RENEW a " HANDLE_41 " rid=a\n", M_NOT_TAKEN),
	BADARG("STATUS a rid=a\n", M_NOT_TAKEN),
	BADARG("WATCH a rid=a\n", M_NOT_TAKEN),
	/* limit= and mode= of ACQUIRE and TRY (issue 17). */
	BADARG("ACQUIRE x limit=0\n", M_HOLDERS_LIMIT),
	BADARG("TRY x limit=65536\n", M_HOLDERS_LIMIT),
	BADARG("ACQUIRE x limit=-1\n", M_HOLDERS_LIMIT),
	BADARG("ACQUIRE x limit=2 limit=2\n", "option given twice"),
	BADARG("ACQUIRE x mode=\n", M_MODE),
	BADARG("ACQUIRE x mode=read\n", M_MODE),
	BADARG("ACQUIRE x mode=shared limit=2\n", M_SHARED_LIMIT),
	BADARG("TRY x limit=65535 mode=SHARED\n", M_SHARED_LIMIT),
	BADARG("RENEW a " HANDLE_41 " mode=shared\n", M_NOT_TAKEN),
	BADARG("STATUS a limit=2\n", M_NOT_TAKEN),
	BADARG("LIST mode=shared\n", M_NOT_TAKEN),
	BADARG("ACQUIRE x onclose=never\n", "onclose must be keep or release"),
	BADARG("ACQUIRE x onclose=\n", "onclose must be keep or release"),
	BADARG("ACQUIRE x onclose=releasex\n",
	    "onclose must be keep or release"),
	/* Bad handles. */
	BADARG("RELEASE a 418c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 41-8c1f0e9b2a7d4c3\n", M_HANDLE),
	BADARG("RELEASE a 41-8c1f0e9b2a7d4c355\n", M_HANDLE),
	BADARG("RELEASE a 41-8C1F0E9B2A7D4C35\n", M_HANDLE),
	BADARG("RELEASE a 41-8c1f0e9b2a7d4c3g\n", M_HANDLE),
	BADARG("RELEASE a 0-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 041-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 9223372036854775808-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 18446744073709551617-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 99999999999999999999999-8c1f0e9b2a7d4c35\n",
	    M_HANDLE),
	BADARG("RELEASE a x1-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a +41-8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a -8c1f0e9b2a7d4c35\n", M_HANDLE),
	BADARG("RELEASE a 41--8c1f0e9b2a7d4c3\n", M_HANDLE),
	BADARG("RELEASE a 41-\n", M_HANDLE),
	BADARG("RENEW a 41_8c1f0e9b2a7d4c35 lease=1\n", M_HANDLE),
	/* Name checks come before the handle and the options. */
	BADARG("RENEW " X256 " x lease=zz\n", M_NAME),
	/* NUL and other control bytes anywhere in the line. */
	BADREQ_N("PING\0\n", M_CONTROL),
	BADREQ_N("\0\n", M_CONTROL),
	BADREQ_N("\0\r\n", M_CONTROL),
	BADREQ_N("ACQUIRE a\0b\n", M_CONTROL),
	BADREQ_N("ACQUIRE a\0\r\n", M_CONTROL),
	BADREQ("ACQUIRE a\x01\n", M_CONTROL),
	BADREQ("ACQUIRE a\x1f\n", M_CONTROL),
	BADREQ("ACQUIRE a\x7f\n", M_CONTROL),
	BADREQ("ACQUIRE a\x1b[31m\n", M_CONTROL),
	BADREQ("ACQUIRE a\vb\n", M_CONTROL),
	BADREQ("ACQUIRE a\fb\n", M_CONTROL),
	BADREQ("PING\r\r\n", M_CONTROL),
	BADREQ("PING\rX\n", M_CONTROL),
	BADREQ("\rPING\n", M_CONTROL),
	BADREQ("BOGUS \x7f lease=-1\n", M_CONTROL),
};
#define BAD_COUNT (sizeof(bad_requests) / sizeof(bad_requests[0]))

static size_t
bad_len(const struct bad_request *b)
{
	return b->len != 0 ? b->len : strlen(b->line);
}

/* The request a good_request describes, its name pointing at the case. */
static struct proto_request
expected_request(const struct good_request *g)
{
	struct proto_request req;

	memset(&req, 0, sizeof(req));
	req.command = g->command;
	req.name = g->name;
	req.name_len = g->name == NULL ? 0 : strlen(g->name);
	req.handle.fence = g->fence;
	req.handle.secret = g->secret;
	req.has_lease = g->has_lease;
	req.lease_ms = g->lease_ms;
	req.has_wait = g->has_wait;
	req.wait_ms = g->wait_ms;
	req.has_onclose = g->has_onclose;
	req.onclose = g->onclose;
	return req;
}

/*
 * A guard page: GUARD_ROOM readable bytes followed by a PROT_NONE page, so
 * input placed to end at the boundary faults on any read past its end.
 */
#define GUARD_ROOM (16 * 1024)

static char *guard_base;
static size_t guard_mapped;

static int
guard_setup(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t room = (GUARD_ROOM + page - 1) / page * page;
	void *map;

	(void)state;
	guard_mapped = room + page;
	map = mmap(NULL, guard_mapped, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	if (mprotect((char *)map + room, page, PROT_NONE) != 0)
		return -1;
	/* guard_base + GUARD_ROOM is the first byte of the guard page. */
	guard_base = (char *)map + room - GUARD_ROOM;
	return 0;
}

static int
guard_teardown(void **state)
{
	(void)state;
	if (guard_base != NULL) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t room = (GUARD_ROOM + page - 1) / page * page;

		munmap(guard_base + GUARD_ROOM - room, guard_mapped);
	}
	return 0;
}

/* Copies s so that its last byte is the last byte before the guard page. */
static char *
guard_place(const char *s, size_t len)
{
	char *p;

	assert_true(len <= GUARD_ROOM);
	p = guard_base + GUARD_ROOM - len;
	memcpy(p, s, len);
	return p;
}

/*
 * Property checkers.  Each returns NULL or a sentence saying what failed.
 */

static char why_buffer[1024];

static const char *why(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

static const char *
why(const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsnprintf(why_buffer, sizeof(why_buffer), format, ap);
	va_end(ap);
	return why_buffer;
}

/* Whether a line prefix of len bytes could still be within max_line. */
static bool
may_still_fit(const char *line, size_t len, size_t max_line)
{
	return len <= max_line ||
	    (len == max_line + 1 && line[max_line] == '\r');
}

/*
 * Feeds every prefix of one line: each must be PARTIAL (or TOOLONG once the
 * prefix cannot fit any more), and the whole line, alone or followed by more
 * input, must give one and the same result.
 */
static const char *
check_split(request_parser parse, const char *line, size_t len,
    size_t max_line)
{
	struct outcome whole, part, followed;
	char *more;
	size_t k;

	whole = parse_exact(parse, line, len, max_line);
	if (whole.result == PROTO_PARTIAL || whole.consumed != len)
		return why("\"%s\": the whole line is not consumed",
		    show(line, len));
	for (k = 0; k < len; k++) {
		part = parse_exact(parse, line, k, max_line);
		if (may_still_fit(line, k, max_line)) {
			if (part.result != PROTO_PARTIAL || part.consumed != 0)
				return why("\"%s\": its %zu-byte prefix is "
				    "not partial", show(line, len), k);
		} else if (part.result != PROTO_TOOLONG ||
		    part.consumed != k || part.code != PROTO_ERR_TOOLONG)
			return why("\"%s\": its overlong %zu-byte prefix is "
			    "not TOOLONG", show(line, len), k);
	}
	more = malloc(len + 6);
	assert_non_null(more);
	memcpy(more, line, len);
	memcpy(more + len, "PING\r\n", 6);
	followed = parse_exact(parse, more, len + 6, max_line);
	free(more);
	if (!same_outcome(&whole, &followed, true))
		return why("\"%s\": the result changes when input follows",
		    show(line, len));
	return NULL;
}

/*
 * Plays a connection: the loop sees the first split bytes of stream, then
 * all of it, and parses, consumes and discards as the daemon does.  Records
 * every non-partial outcome, names located from the start of the stream.
 */
static size_t
play_stream(request_parser parse, const char *stream, size_t total,
    size_t split, size_t max_line, struct outcome *events, size_t capacity,
    size_t *end)
{
	size_t pos = 0, avail = split, count = 0, consumed;
	bool discarding = false;
	struct outcome o;

	for (;;) {
		if (discarding) {
			if (proto_discard_line(stream + pos, avail - pos,
			    &consumed))
				discarding = false;
			pos += consumed;
			if (!discarding)
				continue;
		} else {
			o = parse_at(parse, stream + pos, avail - pos,
			    max_line);
			if (o.result != PROTO_PARTIAL) {
				if (o.name_offset != SIZE_MAX)
					o.name_offset += pos;
				if (count < capacity)
					events[count] = o;
				count++;
				pos += o.consumed;
				if (o.result == PROTO_TOOLONG &&
				    stream[pos - 1] != '\n')
					discarding = true;
				continue;
			}
		}
		if (avail == total)
			break;
		avail = total;
	}
	*end = pos;
	return count;
}

#define STREAM_EVENTS 512

/*
 * Splits stream at every byte and requires the very outcomes that parsing
 * it whole gives.  An overlong line may be cut before or after its LF, so
 * the bytes its TOOLONG covers are not compared, only its place in order.
 */
static const char *
check_stream(request_parser parse, const char *stream, size_t total,
    size_t max_line)
{
	static struct outcome whole[STREAM_EVENTS], split[STREAM_EVENTS];
	size_t n_whole, n_split, end, k, i;

	n_whole = play_stream(parse, stream, total, total, max_line, whole,
	    STREAM_EVENTS, &end);
	if (n_whole > STREAM_EVENTS)
		return why("stream too long for the checker");
	for (k = 0; k <= total; k++) {
		n_split = play_stream(parse, stream, total, k, max_line, split,
		    STREAM_EVENTS, &end);
		if (n_split != n_whole)
			return why("split at %zu: %zu outcomes, not %zu", k,
			    n_split, n_whole);
		for (i = 0; i < n_whole; i++) {
			if (!same_outcome(&whole[i], &split[i],
			    whole[i].result != PROTO_TOOLONG))
				return why("split at %zu: outcome %zu differs",
				    k, i);
		}
	}
	return NULL;
}

/*
 * Parses every prefix of line from a buffer that ends at the guard page,
 * with each parser and with proto_discard_line.  A read past the end
 * faults, and a name must point inside the input.
 */
static const char *
check_guard(const char *line, size_t len, size_t max_line)
{
	struct proto_request req;
	struct proto_reply reply;
	struct proto_error err;
	size_t k, consumed;
	char *p;

	for (k = 0; k <= len; k++) {
		p = guard_place(line, k);
		proto_parse_request(p, k, max_line, &req, &consumed, &err);
		if (consumed > k || (req.name != NULL &&
		    (req.name < p || req.name + req.name_len > p + k)))
			return why("\"%s\": request parse escapes its input",
			    show(line, k));
		proto_parse_reply(p, k, max_line, &reply, &consumed, &err);
		if (consumed > k || (reply.name != NULL &&
		    (reply.name < p || reply.name + reply.name_len > p + k)) ||
		    (reply.text != NULL && (reply.text < p ||
		    reply.text + reply.text_len > p + k)))
			return why("\"%s\": reply parse escapes its input",
			    show(line, k));
		proto_discard_line(p, k, &consumed);
		if (consumed > k)
			return why("\"%s\": discard escapes its input",
			    show(line, k));
	}
	return NULL;
}

typedef size_t (*request_formatter)(char *, size_t,
    const struct proto_request *);

/* Formats req, parses the line back and requires the same request. */
static const char *
check_round_trip(request_formatter format, const struct proto_request *req)
{
	char line[1024];
	struct outcome o;
	size_t n;

	n = format(line, sizeof(line), req);
	if (n == 0)
		return why("%s request does not format",
		    proto_command_name(req->command));
	o = parse_exact(proto_parse_request, line, n, MAX_LINE);
	if (o.result != PROTO_DONE || o.consumed != n)
		return why("\"%s\" does not parse back", show(line, n));
	if (!same_request(&o.req, o.name, req, req->name))
		return why("\"%s\" parses back to another request",
		    show(line, n));
	return NULL;
}

/*
 * Deliberately broken variants, which the checkers must catch.
 */

/* Takes the end of the buffer for the end of the line. */
static enum proto_result
broken_parse_end_is_line_end(const char *buf, size_t len, size_t max_line,
    struct proto_request *req, size_t *consumed, struct proto_error *err)
{
	static char copy[GUARD_ROOM + 1];
	enum proto_result r;

	if (len == 0 || len >= sizeof(copy) || memchr(buf, '\n', len) != NULL)
		return proto_parse_request(buf, len, max_line, req, consumed,
		    err);
	memcpy(copy, buf, len);
	copy[len] = '\n';
	r = proto_parse_request(copy, len + 1, max_line, req, consumed, err);
	if (*consumed == len + 1)
		*consumed = len;
	if (req->name != NULL)
		req->name = buf + (req->name - copy);
	return r;
}

/* Forgets the wait option. */
static size_t
broken_format_drops_wait(char *out, size_t cap,
    const struct proto_request *req)
{
	struct proto_request copy = *req;

	copy.has_wait = false;
	copy.wait_ms = 0;
	return proto_format_request(out, cap, &copy);
}

/*
 * Tests: requests.
 */

static void
test_proto_good_requests_parse_to_their_fields(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < GOOD_COUNT; i++) {
		const struct good_request *g = &good_requests[i];
		struct proto_request want = expected_request(g);
		struct outcome o = parse_line(g->line);

		if (o.result != PROTO_DONE || o.consumed != strlen(g->line) ||
		    o.code != PROTO_ERR_NONE || o.message != NULL)
			fail_msg("\"%s\" does not parse", show(g->line,
			    strlen(g->line)));
		if (!same_request(&o.req, o.name, &want, want.name))
			fail_msg("\"%s\" parses to other fields",
			    show(g->line, strlen(g->line)));
		if (g->name != NULL && memcmp(g->line + o.name_offset, g->name,
		    strlen(g->name)) != 0)
			fail_msg("\"%s\": name points elsewhere",
			    show(g->line, strlen(g->line)));
	}
}

static void
test_proto_acquire_with_all_options_parses(void **state)
{
	const char *line = "ACQUIRE jobs/nightly lease=45s wait=2m "
	    "onclose=release\r\n";
	struct proto_request req;
	struct proto_error err;
	size_t consumed;

	(void)state;
	assert_int_equal(proto_parse_request(line, strlen(line), MAX_LINE,
	    &req, &consumed, &err), PROTO_DONE);
	assert_int_equal(consumed, strlen(line));
	assert_int_equal(err.code, PROTO_ERR_NONE);
	assert_int_equal(req.command, PROTO_CMD_ACQUIRE);
	assert_ptr_equal(req.name, line + 8);
	assert_int_equal(req.name_len, strlen("jobs/nightly"));
	assert_true(req.has_lease);
	assert_int_equal(req.lease_ms, 45000);
	assert_true(req.has_wait);
	assert_int_equal(req.wait_ms, 120000);
	assert_true(req.has_onclose);
	assert_int_equal(req.onclose, PROTO_ONCLOSE_RELEASE);
	assert_int_equal(req.handle.fence, 0);
	assert_int_equal(req.handle.secret, 0);
}

static void
test_proto_commands_without_options_leave_option_fields_zero(void **state)
{
	static const char *const lines[] = { "PING\n", "QUIT\n", "HELP\n",
	    "STATS\n", "STATUS a\n", "RELEASE a " HANDLE_41 "\n" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct outcome o = parse_line(lines[i]);

		assert_int_equal(o.result, PROTO_DONE);
		assert_false(o.req.has_lease || o.req.has_wait ||
		    o.req.has_onclose);
		assert_int_equal(o.req.lease_ms, 0);
		assert_int_equal(o.req.wait_ms, 0);
		if (o.req.command >= PROTO_CMD_PING) {
			assert_int_equal(o.req.name_len, 0);
			assert_int_equal(o.name_offset, SIZE_MAX);
		}
	}
}

static void
test_proto_bad_requests_are_refused_with_their_code(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < BAD_COUNT; i++) {
		const struct bad_request *b = &bad_requests[i];
		struct outcome o = parse_exact(proto_parse_request, b->line,
		    bad_len(b), MAX_LINE);

		if (o.result != b->result || o.code != b->code ||
		    o.consumed != bad_len(b))
			fail_msg("\"%s\": result %d code %d consumed %zu",
			    show(b->line, bad_len(b)), o.result, o.code,
			    o.consumed);
		if (b->message != NULL && !same_message(o.message, b->message))
			fail_msg("\"%s\": message \"%s\"",
			    show(b->line, bad_len(b)),
			    o.message == NULL ? "(null)" : o.message);
		if (o.result == PROTO_BAD && (o.message == NULL ||
		    o.message[0] == '\0'))
			fail_msg("\"%s\": no message",
			    show(b->line, bad_len(b)));
		if (o.result == PROTO_BAD && (o.req.name_len != 0 ||
		    o.name_offset != SIZE_MAX))
			fail_msg("\"%s\": a refused request keeps fields",
			    show(b->line, bad_len(b)));
	}
}

static void
test_proto_negative_lease_has_the_spec_message(void **state)
{
	const char *line = "TRY inventory/sku-42 lease=-5\n";
	struct outcome o;
	char out[PROTO_REPLY_MAX];
	size_t n;

	(void)state;
	o = parse_line(line);
	assert_int_equal(o.result, PROTO_BAD);
	n = proto_format_error(out, sizeof(out), o.code, o.message);
	assert_int_equal(n, strlen("ERR BADARG lease must be a non-negative "
	    "duration\r\n"));
	assert_memory_equal(out, "ERR BADARG lease must be a non-negative "
	    "duration\r\n", n);
}

static void
test_proto_commands_and_keys_are_case_insensitive(void **state)
{
	static const char *const lines[] = {
		"acquire a LEASE=1S WAIT=2MS ONCLOSE=RELEASE\n",
		"Acquire a Lease=1s Wait=2ms OnClose=Release\n",
		"aCqUiRe a lEaSe=1000Ms wAiT=2mS oNcLoSe=rElEaSe\n",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct outcome o = parse_line(lines[i]);

		assert_int_equal(o.result, PROTO_DONE);
		assert_int_equal(o.req.command, PROTO_CMD_ACQUIRE);
		assert_int_equal(o.req.lease_ms, 1000);
		assert_int_equal(o.req.wait_ms, 2);
		assert_int_equal(o.req.onclose, PROTO_ONCLOSE_RELEASE);
	}
	for (i = 0; i < PROTO_CMD_COUNT; i++) {
		char line[32];
		size_t j, n = strlen(proto_command_name((enum proto_command)i));

		memcpy(line, proto_command_name((enum proto_command)i), n);
		for (j = 0; j < n; j++)
			line[j] = (char)(line[j] - 'A' + 'a');
		line[n] = '\0';
		if (i <= PROTO_CMD_STATUS ||
		    (i >= PROTO_CMD_FORCE && i <= PROTO_CMD_WATCH) || i == PROTO_CMD_AUTH)
			strcat(line, " x");
		if (i == PROTO_CMD_RENEW || i == PROTO_CMD_RELEASE)
			strcat(line, " " HANDLE_41);
		if (i == PROTO_CMD_FORCE || i == PROTO_CMD_CHECK)
			strcat(line, " 41");
		strcat(line, "\n");
		assert_int_equal(parse_line(line).result, PROTO_DONE);
		assert_int_equal(parse_line(line).req.command, i);
	}
}

static void
test_proto_tabs_and_runs_of_blanks_separate_words(void **state)
{
	struct outcome a = parse_line("RENEW x " HANDLE_41 " lease=5\n");
	struct outcome b = parse_line("RENEW\tx\t \t" HANDLE_41
	    "   \t lease=5 \t\n");
	struct outcome c = parse_line(" \t RENEW x " HANDLE_41
	    " lease=5\r\n");

	(void)state;
	assert_int_equal(a.result, PROTO_DONE);
	assert_int_equal(b.result, PROTO_DONE);
	assert_int_equal(c.result, PROTO_DONE);
	assert_true(same_request(&a.req, a.name, &b.req, b.name));
	assert_true(same_request(&a.req, a.name, &c.req, c.name));
}

static void
test_proto_crlf_and_lf_endings_parse_alike(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < GOOD_COUNT; i++) {
		char lf[256], crlf[256];
		size_t n = strlen(good_requests[i].line);
		struct outcome a, b;

		/* Strip the line end, then end it both ways. */
		memcpy(lf, good_requests[i].line, n);
		n--;
		if (n > 0 && lf[n - 1] == '\r')
			n--;
		memcpy(crlf, lf, n);
		lf[n] = '\n';
		crlf[n] = '\r';
		crlf[n + 1] = '\n';
		a = parse_exact(proto_parse_request, lf, n + 1, MAX_LINE);
		b = parse_exact(proto_parse_request, crlf, n + 2, MAX_LINE);
		assert_int_equal(a.result, PROTO_DONE);
		assert_int_equal(b.result, PROTO_DONE);
		assert_int_equal(a.consumed, n + 1);
		assert_int_equal(b.consumed, n + 2);
		assert_true(same_request(&a.req, a.name, &b.req, b.name));
	}
}

static void
test_proto_empty_and_blank_lines_are_empty(void **state)
{
	static const char *const lines[] = { "\n", "\r\n", " \n", "\t\r\n",
	    " \t  \t \n" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct outcome o = parse_line(lines[i]);

		assert_int_equal(o.result, PROTO_EMPTY);
		assert_int_equal(o.consumed, strlen(lines[i]));
		assert_int_equal(o.code, PROTO_ERR_NONE);
	}
	/* Nothing at all is not an empty line yet. */
	assert_int_equal(parse_exact(proto_parse_request, "", 0,
	    MAX_LINE).result, PROTO_PARTIAL);
	assert_int_equal(parse_line("\r").result, PROTO_PARTIAL);
	assert_int_equal(parse_line("   ").result, PROTO_PARTIAL);
}

static void
test_proto_pipelined_requests_parse_in_order(void **state)
{
	static const char stream[] = "ACQUIRE a\r\nPING\n\nSTATUS a\r\n"
	    "BOGUS\nRELEASE a " HANDLE_41 "\nQUIT\nPIN";
	static const struct {
		enum proto_result result;
		enum proto_command command;
		size_t consumed;
	} want[] = {
		{ PROTO_DONE, PROTO_CMD_ACQUIRE, 11 },
		{ PROTO_DONE, PROTO_CMD_PING, 5 },
		{ PROTO_EMPTY, 0, 1 },
		{ PROTO_DONE, PROTO_CMD_STATUS, 10 },
		{ PROTO_BAD, 0, 6 },
		{ PROTO_DONE, PROTO_CMD_RELEASE, 30 },
		{ PROTO_DONE, PROTO_CMD_QUIT, 5 },
		{ PROTO_PARTIAL, 0, 0 },
	};
	size_t pos = 0, i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct outcome o = parse_at(proto_parse_request, stream + pos,
		    sizeof(stream) - 1 - pos, MAX_LINE);

		assert_int_equal(o.result, want[i].result);
		assert_int_equal(o.consumed, want[i].consumed);
		if (o.result == PROTO_DONE)
			assert_int_equal(o.req.command, want[i].command);
		pos += o.consumed;
	}
	assert_int_equal(pos, sizeof(stream) - 1 - 3);
}

static void
test_proto_every_request_split_at_every_byte_is_partial_until_lf(
    void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < GOOD_COUNT; i++) {
		const char *line = good_requests[i].line;

		assert_check(check_split(proto_parse_request, line,
		    strlen(line), MAX_LINE));
		assert_check(check_split(proto_parse_request, line,
		    strlen(line), 16));
	}
	for (i = 0; i < BAD_COUNT; i++) {
		assert_check(check_split(proto_parse_request,
		    bad_requests[i].line, bad_len(&bad_requests[i]),
		    MAX_LINE));
		assert_check(check_split(proto_parse_request,
		    bad_requests[i].line, bad_len(&bad_requests[i]), 16));
	}
}

/* Every good and bad request and a few overlong lines, back to back. */
static size_t
build_stream(char *stream, size_t cap)
{
	size_t n = 0, i, len;

	for (i = 0; i < GOOD_COUNT + BAD_COUNT; i++) {
		const char *line = i < GOOD_COUNT ? good_requests[i].line :
		    bad_requests[i - GOOD_COUNT].line;

		len = i < GOOD_COUNT ? strlen(line) :
		    bad_len(&bad_requests[i - GOOD_COUNT]);
		assert_true(n + len + 80 <= cap);
		memcpy(stream + n, line, len);
		n += len;
		if (i % 16 == 0) {
			memset(stream + n, 'x', 70);
			n += 70;
			stream[n++] = '\n';
		}
	}
	return n;
}

static void
test_proto_a_stream_split_at_every_byte_parses_as_a_whole(void **state)
{
	static char stream[16384];
	size_t n = build_stream(stream, sizeof(stream));

	(void)state;
	assert_check(check_stream(proto_parse_request, stream, n, MAX_LINE));
	assert_check(check_stream(proto_parse_request, stream, n, 40));
}

static void
test_proto_split_checkers_catch_a_parser_that_ends_lines_early(void **state)
{
	static char stream[16384];
	size_t n = build_stream(stream, sizeof(stream));

	(void)state;
	assert_non_null(check_split(broken_parse_end_is_line_end, "PING\n", 5,
	    MAX_LINE));
	assert_non_null(check_stream(broken_parse_end_is_line_end, stream, n,
	    MAX_LINE));
}

static void
test_proto_requests_ending_at_a_guard_page_are_read_safely(void **state)
{
	static char stream[16384];
	size_t i, n;

	(void)state;
	for (i = 0; i < GOOD_COUNT; i++) {
		const char *line = good_requests[i].line;

		assert_check(check_guard(line, strlen(line), MAX_LINE));
		assert_check(check_guard(line, strlen(line), 8));
	}
	for (i = 0; i < BAD_COUNT; i++) {
		assert_check(check_guard(bad_requests[i].line,
		    bad_len(&bad_requests[i]), MAX_LINE));
		assert_check(check_guard(bad_requests[i].line,
		    bad_len(&bad_requests[i]), 8));
	}
	/* Without their LF too, where the parser must stop at len. */
	for (i = 0; i < GOOD_COUNT; i++) {
		const char *line = good_requests[i].line;
		size_t len = strlen(line) - 1;
		struct proto_request req;
		struct proto_error err;
		size_t consumed;
		char *p = guard_place(line, len);

		assert_int_equal(proto_parse_request(p, len, MAX_LINE, &req,
		    &consumed, &err), PROTO_PARTIAL);
	}
	/* A whole pipelined stream, and an overlong line with no LF. */
	n = build_stream(stream, sizeof(stream));
	assert_check(check_guard(stream, n > 2048 ? 2048 : n, MAX_LINE));
	memset(stream, 'A', 9000);
	assert_check(check_guard(stream, 9000, MAX_LINE));
}

static void
test_proto_guard_page_catches_a_read_past_the_end(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A deliberately broken reader that looks one byte too far. */
		volatile const char *p = guard_place("PING\n", 5);
		volatile char c;

		/* cmocka catches SIGSEGV; the child must die of it instead. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		(void)freopen("/dev/null", "w", stderr);
		c = p[5];
		(void)c;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
test_proto_line_of_exactly_max_line_bytes_parses(void **state)
{
	static char line[MAX_LINE + 2];
	struct outcome o;

	(void)state;
	memcpy(line, "PING", 4);
	memset(line + 4, ' ', MAX_LINE - 4);
	line[MAX_LINE] = '\r';
	line[MAX_LINE + 1] = '\n';
	/* Up to and including the CR it may still fit. */
	assert_int_equal(parse_exact(proto_parse_request, line, MAX_LINE,
	    MAX_LINE).result, PROTO_PARTIAL);
	assert_int_equal(parse_exact(proto_parse_request, line, MAX_LINE + 1,
	    MAX_LINE).result, PROTO_PARTIAL);
	o = parse_exact(proto_parse_request, line, MAX_LINE + 2, MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.consumed, MAX_LINE + 2);
	assert_int_equal(o.req.command, PROTO_CMD_PING);
	/* The same line ended by LF alone. */
	line[MAX_LINE] = '\n';
	o = parse_exact(proto_parse_request, line, MAX_LINE + 1, MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.consumed, MAX_LINE + 1);
}

static void
test_proto_overlong_line_with_its_lf_is_toolong_and_consumed(void **state)
{
	static char buf[MAX_LINE + 16];
	size_t len;
	struct outcome o;

	(void)state;
	memcpy(buf, "PING", 4);
	memset(buf + 4, ' ', MAX_LINE + 1 - 4);
	memcpy(buf + MAX_LINE + 1, "\r\nQUIT\r\n", 8);
	len = MAX_LINE + 9;
	o = parse_exact(proto_parse_request, buf, len, MAX_LINE);
	assert_int_equal(o.result, PROTO_TOOLONG);
	assert_int_equal(o.code, PROTO_ERR_TOOLONG);
	assert_non_null(o.message);
	assert_int_equal(o.consumed, MAX_LINE + 3);
	o = parse_exact(proto_parse_request, buf + MAX_LINE + 3,
	    len - MAX_LINE - 3, MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.command, PROTO_CMD_QUIT);
	/* A small limit counts the same way, CR excluded. */
	assert_int_equal(parse_exact(proto_parse_request, "PING \r\n", 7,
	    5).result, PROTO_DONE);
	assert_int_equal(parse_exact(proto_parse_request, "PING  \r\n", 8,
	    5).result, PROTO_TOOLONG);
	assert_int_equal(parse_exact(proto_parse_request, "PING  \r\n", 8,
	    5).consumed, 8);
}

static void
test_proto_overlong_line_without_lf_is_toolong_then_discarded(void **state)
{
	static char buf[MAX_LINE + 64];
	size_t consumed, pos;
	struct outcome o;

	(void)state;
	memset(buf, 'x', sizeof(buf));
	/* MAX_LINE + 1 bytes whose last is no CR cannot fit any more. */
	o = parse_exact(proto_parse_request, buf, MAX_LINE + 1, MAX_LINE);
	assert_int_equal(o.result, PROTO_TOOLONG);
	assert_int_equal(o.code, PROTO_ERR_TOOLONG);
	assert_int_equal(o.consumed, MAX_LINE + 1);
	o = parse_exact(proto_parse_request, buf, MAX_LINE + 2, MAX_LINE);
	assert_int_equal(o.result, PROTO_TOOLONG);
	assert_int_equal(o.consumed, MAX_LINE + 2);
	/* The rest arrives with more input behind it. */
	memcpy(buf, "yyy\r\nPING\r\n", 11);
	assert_false(proto_discard_line(buf, 3, &consumed));
	assert_int_equal(consumed, 3);
	assert_true(proto_discard_line(buf, 11, &consumed));
	assert_int_equal(consumed, 5);
	pos = consumed;
	o = parse_exact(proto_parse_request, buf + pos, 11 - pos, MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.command, PROTO_CMD_PING);
	assert_false(proto_discard_line(NULL, 0, &consumed));
	assert_int_equal(consumed, 0);
	assert_true(proto_discard_line("\n", 1, &consumed));
	assert_int_equal(consumed, 1);
}

static void
test_proto_names_of_1_to_255_bytes_parse_and_longer_are_badarg(void **state)
{
	char line[300];
	struct outcome o;

	(void)state;
	memcpy(line, "STATUS ", 7);
	memset(line + 7, 'n', 255);
	memcpy(line + 7 + 255, "\n", 1);
	o = parse_exact(proto_parse_request, line, 7 + 255 + 1, MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.name_len, 255);
	memset(line + 7, 'n', 256);
	memcpy(line + 7 + 256, "\n", 1);
	o = parse_exact(proto_parse_request, line, 7 + 256 + 1, MAX_LINE);
	assert_int_equal(o.result, PROTO_BAD);
	assert_int_equal(o.code, PROTO_ERR_BADARG);
	assert_string_equal(o.message, M_NAME);
}

static void
test_proto_bytes_above_0x7f_are_allowed_in_names(void **state)
{
	static const char line[] = "ACQUIRE \x80\xff\xc3\xa9\xe2\x80\x83 "
	    "lease=1\n";
	struct outcome o;

	(void)state;
	o = parse_exact(proto_parse_request, line, sizeof(line) - 1,
	    MAX_LINE);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.name_len, 7);
	assert_memory_equal(o.name, "\x80\xff\xc3\xa9\xe2\x80\x83", 7);
}

/*
 * Tests: value parsers.
 */

static void
test_proto_durations_parse_in_every_unit(void **state)
{
	static const struct {
		const char *text;
		int64_t ms;
	} good[] = {
		{ "0", 0 }, { "0ms", 0 }, { "00", 0 }, { "1500", 1500 },
		{ "1500ms", 1500 }, { "1500MS", 1500 }, { "1500mS", 1500 },
		{ "30s", 30000 }, { "30S", 30000 }, { "5m", 300000 },
		{ "5M", 300000 }, { "1h", 3600000 }, { "1H", 3600000 },
		{ "31536000000", PROTO_DURATION_MAX_MS },
		{ "31536000s", PROTO_DURATION_MAX_MS },
		{ "525600m", PROTO_DURATION_MAX_MS },
		{ "8760h", PROTO_DURATION_MAX_MS },
		{ "000000000000000000000000001s", 1000 },
	};
	size_t i;
	int64_t ms;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -1;
		if (!proto_parse_duration(good[i].text, strlen(good[i].text),
		    &ms))
			fail_msg("\"%s\" is refused", good[i].text);
		assert_int_equal(ms, good[i].ms);
	}
}

static void
test_proto_bad_durations_are_refused(void **state)
{
	static const char *const bad[] = {
		"", "-5", "-0", "+5", " 5", "5 ", "5 s", "5\ts",
		"99999999999999999999", "18446744073709551616",
		"31536000001", "31536001s", "525601m", "8761h", "366d", "5d",
		"ms", "s", "5mss", "5sm", "5.0", "5,0", "0x5", "1e3",
		"\xef\xbc\x95", "5\xc2\xa0", "five", "5 ms", "--5", "-",
	};
	size_t i;
	int64_t ms = 77;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (proto_parse_duration(bad[i], strlen(bad[i]), &ms))
			fail_msg("\"%s\" is accepted", show(bad[i],
			    strlen(bad[i])));
	}
	assert_false(proto_parse_duration("5\0", 2, &ms));
	assert_false(proto_parse_duration(NULL, 0, &ms));
	/* Only the bytes given count. */
	assert_true(proto_parse_duration("5sXYZ", 2, &ms));
	assert_int_equal(ms, 5000);
	assert_false(proto_parse_duration("5sXYZ", 0, &ms));
	assert_int_equal(ms, 5000);
}

static void
test_proto_handles_parse_only_in_canonical_form(void **state)
{
	static const char *const bad[] = {
		"", "-", "41", "41-", "418c1f0e9b2a7d4c35",
		"41-8c1f0e9b2a7d4c3", "41-8c1f0e9b2a7d4c355",
		"41-8C1F0E9B2A7D4C35", "41-8c1f0e9b2a7d4c3G",
		"0-8c1f0e9b2a7d4c35", "00-8c1f0e9b2a7d4c35",
		"041-8c1f0e9b2a7d4c35", "+41-8c1f0e9b2a7d4c35",
		"-41-8c1f0e9b2a7d4c35", " 41-8c1f0e9b2a7d4c35",
		"41 -8c1f0e9b2a7d4c35", "41-8c1f0e9b2a7d4c35 ",
		"9223372036854775808-8c1f0e9b2a7d4c35",
		"18446744073709551615-8c1f0e9b2a7d4c35",
		"18446744073709551616-8c1f0e9b2a7d4c35",
		"99999999999999999999999999-8c1f0e9b2a7d4c35",
		"x1-8c1f0e9b2a7d4c35", "4x1-8c1f0e9b2a7d4c35",
		"41_8c1f0e9b2a7d4c35", "41--8c1f0e9b2a7d4c3",
		"41-0x1f0e9b2a7d4c35", "41-8c1f0e9b2a7d4c3\xff",
	};
	struct proto_handle h = { 5, 6 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (proto_parse_handle(bad[i], strlen(bad[i]), &h))
			fail_msg("\"%s\" is accepted", show(bad[i],
			    strlen(bad[i])));
	}
	assert_int_equal(h.fence, 5);
	assert_int_equal(h.secret, 6);
	assert_false(proto_parse_handle(NULL, 0, &h));
	assert_true(proto_parse_handle(HANDLE_41, strlen(HANDLE_41), &h));
	assert_int_equal(h.fence, 41);
	assert_int_equal(h.secret, SECRET_41);
	assert_true(proto_parse_handle("1-0000000000000000", 18, &h));
	assert_int_equal(h.fence, 1);
	assert_int_equal(h.secret, 0);
	assert_true(proto_parse_handle("9223372036854775807-ffffffffffffffff",
	    36, &h));
	assert_int_equal(h.fence, (uint64_t)INT64_MAX);
	assert_int_equal(h.secret, UINT64_MAX);
}

static void
test_proto_format_handle_round_trips_byte_for_byte(void **state)
{
	static const char *const handles[] = { HANDLE_41,
	    "1-0000000000000000", "9223372036854775807-ffffffffffffffff",
	    "1000-00000000000000a0" };
	struct proto_handle h;
	char out[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
		assert_true(proto_parse_handle(handles[i], strlen(handles[i]),
		    &h));
		n = proto_format_handle(out, sizeof(out), h);
		assert_int_equal(n, strlen(handles[i]));
		assert_memory_equal(out, handles[i], n);
	}
	h.fence = 0;
	assert_int_equal(proto_format_handle(out, sizeof(out), h), 0);
	h.fence = (uint64_t)INT64_MAX + 1;
	assert_int_equal(proto_format_handle(out, sizeof(out), h), 0);
}

static void
test_proto_valid_name_follows_the_spec(void **state)
{
	char name[300];

	(void)state;
	memset(name, 'a', sizeof(name));
	assert_true(proto_valid_name("a", 1));
	assert_true(proto_valid_name("inventory/sku-42", 16));
	assert_true(proto_valid_name("\x80\xff", 2));
	assert_true(proto_valid_name(name, 255));
	assert_false(proto_valid_name(name, 256));
	assert_false(proto_valid_name(name, 0));
	assert_false(proto_valid_name(NULL, 0));
	assert_false(proto_valid_name("a b", 3));
	assert_false(proto_valid_name("a\tb", 3));
	assert_false(proto_valid_name("a\nb", 3));
	assert_false(proto_valid_name("a\rb", 3));
	assert_false(proto_valid_name("a\0b", 3));
	assert_false(proto_valid_name("a\x7f", 2));
	assert_false(proto_valid_name("a\x1f", 2));
	/* A name is known by its position, so it may hold '='. */
	assert_true(proto_valid_name("a=b", 3));
}

static void
test_proto_error_and_command_names_match_the_spec(void **state)
{
	static const char *const codes[] = { NULL, "BADREQ", "BADARG",
	    "TOOLONG", "TIMEOUT", "CONFLICT", "LIMIT", "UNAVAILABLE",
	    "OVERFLOW", "SHUTDOWN", "NOTLEADER", "DENIED" };
	static const char *const commands[] = { "ACQUIRE", "TRY", "RENEW",
	    "RELEASE", "STATUS", "PING", "QUIT", "HELP", "STATS", "FORCE",
	    "CHECK", "WATCH", "LIST", "AUTH" };
	int i;

	(void)state;
	assert_int_equal(PROTO_ERR_COUNT, 12);
	assert_int_equal(PROTO_CMD_COUNT, 14);
	assert_null(proto_error_name(PROTO_ERR_NONE));
	for (i = 1; i < PROTO_ERR_COUNT; i++)
		assert_string_equal(proto_error_name(
		    (enum proto_error_code)i), codes[i]);
	assert_null(proto_error_name(PROTO_ERR_COUNT));
	assert_null(proto_error_name((enum proto_error_code)-1));
	for (i = 0; i < PROTO_CMD_COUNT; i++)
		assert_string_equal(proto_command_name((enum proto_command)i),
		    commands[i]);
	assert_null(proto_command_name(PROTO_CMD_COUNT));
	assert_null(proto_command_name((enum proto_command)-1));
}

/*
 * Tests: formatters.
 */

static char long_name[PROTO_NAME_MAX];

static const char *
long_name_init(void)
{
	memset(long_name, 'z', sizeof(long_name));
	return long_name;
}

static const struct proto_handle handle_41 = { 41, SECRET_41 };
static const struct proto_handle handle_max = { INT64_MAX, UINT64_MAX };

static size_t
fmt_granted(char *o, size_t c)
{
	return proto_format_granted(o, c, "inventory/sku-42", 16, handle_41,
	    30000);
}

static size_t
fmt_granted_max(char *o, size_t c)
{
	return proto_format_granted(o, c, long_name_init(), PROTO_NAME_MAX,
	    handle_max, INT64_MAX);
}

static size_t
fmt_status(char *o, size_t c)
{
	return proto_format_status(o, c, "inventory/sku-42", 16, true, 41,
	    27412, 0);
}

static size_t
fmt_status_free(char *o, size_t c)
{
	return proto_format_status(o, c, "q", 1, false, 0, 0, 3);
}

static size_t
fmt_status_max(char *o, size_t c)
{
	return proto_format_status(o, c, long_name_init(), PROTO_NAME_MAX,
	    true, INT64_MAX, INT64_MAX, UINT64_MAX);
}

static size_t
fmt_renewed(char *o, size_t c)
{
	return proto_format_renewed(o, c, "inventory/sku-42", 16, 41, 60000);
}

static size_t
fmt_released(char *o, size_t c)
{
	return proto_format_released(o, c, "inventory/sku-42", 16);
}

static size_t
fmt_notheld(char *o, size_t c)
{
	return proto_format_notheld(o, c, "inventory/sku-42", 16);
}

static size_t
fmt_held(char *o, size_t c)
{
	return proto_format_held(o, c, "inventory/sku-42", 16);
}

static size_t
fmt_pong(char *o, size_t c)
{
	return proto_format_pong(o, c);
}

static size_t
fmt_bye(char *o, size_t c)
{
	return proto_format_bye(o, c);
}

static size_t
fmt_help(char *o, size_t c)
{
	return proto_format_help(o, c);
}

static size_t
fmt_error(char *o, size_t c)
{
	return proto_format_error(o, c, PROTO_ERR_BADARG,
	    "lease must be a non-negative duration");
}

static size_t
fmt_error_without_text(char *o, size_t c)
{
	return proto_format_error(o, c, PROTO_ERR_SHUTDOWN, NULL);
}

static const struct proto_stat spec_stats[] = {
	{ "connections", 3 }, { "locks", 10 }, { "held", 2 },
	{ "waiters", 1 }, { "granted", 100 }, { "timeouts", 4 },
	{ "released", 90 }, { "reclaimed", 6 },
	{ "max", UINT64_MAX },
};

static size_t
fmt_stats(char *o, size_t c)
{
	return proto_format_stats(o, c, spec_stats,
	    sizeof(spec_stats) / sizeof(spec_stats[0]));
}

static size_t
fmt_stats_none(char *o, size_t c)
{
	return proto_format_stats(o, c, NULL, 0);
}

static size_t
fmt_handle(char *o, size_t c)
{
	return proto_format_handle(o, c, handle_41);
}

static size_t
fmt_request_acquire(char *o, size_t c)
{
	struct proto_request req;

	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_ACQUIRE;
	req.name = "inventory/sku-42";
	req.name_len = 16;
	req.has_lease = true;
	req.lease_ms = 30000;
	req.has_wait = true;
	req.wait_ms = 10000;
	req.has_onclose = true;
	req.onclose = PROTO_ONCLOSE_RELEASE;
	return proto_format_request(o, c, &req);
}

static size_t
fmt_request_renew(char *o, size_t c)
{
	struct proto_request req;

	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_RENEW;
	req.name = "inventory/sku-42";
	req.name_len = 16;
	req.handle = handle_41;
	req.has_lease = true;
	req.lease_ms = 60000;
	return proto_format_request(o, c, &req);
}

static size_t
fmt_request_stats(char *o, size_t c)
{
	struct proto_request req;

	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_STATS;
	return proto_format_request(o, c, &req);
}

static const struct format_case {
	size_t (*format)(char *, size_t);
	const char *expected;		/* NULL: built by the test */
} format_cases[] = {
	{ fmt_granted, "GRANTED inventory/sku-42 fence=41 "
	    "handle=41-8c1f0e9b2a7d4c35 lease=30000\r\n" },
	{ fmt_status, "STATUS inventory/sku-42 held=1 fence=41 ttl=27412 "
	    "queue=0\r\n" },
	{ fmt_renewed, "RENEWED inventory/sku-42 fence=41 lease=60000\r\n" },
	{ fmt_released, "RELEASED inventory/sku-42\r\n" },
	{ fmt_notheld, "NOTHELD inventory/sku-42\r\n" },
	{ fmt_error, "ERR BADARG lease must be a non-negative duration\r\n" },
	{ fmt_held, "HELD inventory/sku-42\r\n" },
	{ fmt_status_free, "STATUS q held=0 fence=0 ttl=0 queue=3\r\n" },
	{ fmt_pong, "PONG\r\n" },
	{ fmt_bye, "BYE\r\n" },
	{ fmt_help, "HELP commands: ACQUIRE TRY RENEW RELEASE STATUS PING "
	    "QUIT HELP STATS FORCE CHECK WATCH LIST AUTH\r\n" },
	{ fmt_error_without_text, "ERR SHUTDOWN\r\n" },
	{ fmt_stats, "STATS connections=3 locks=10 held=2 waiters=1 "
	    "granted=100 timeouts=4 released=90 reclaimed=6 "
	    "max=18446744073709551615\r\n" },
	{ fmt_stats_none, "STATS\r\n" },
	{ fmt_handle, HANDLE_41 },
	{ fmt_request_acquire, "ACQUIRE inventory/sku-42 lease=30000 "
	    "wait=10000 onclose=release\r\n" },
	{ fmt_request_renew, "RENEW inventory/sku-42 " HANDLE_41
	    " lease=60000\r\n" },
	{ fmt_request_stats, "STATS\r\n" },
	{ fmt_granted_max, NULL },
	{ fmt_status_max, NULL },
};
#define FORMAT_COUNT (sizeof(format_cases) / sizeof(format_cases[0]))

static void
test_proto_formatters_write_the_spec_example_lines(void **state)
{
	char out[PROTO_REPLY_MAX];
	size_t i, n;

	(void)state;
	for (i = 0; i < FORMAT_COUNT; i++) {
		if (format_cases[i].expected == NULL)
			continue;
		n = format_cases[i].format(out, sizeof(out));
		if (n != strlen(format_cases[i].expected) ||
		    memcmp(out, format_cases[i].expected, n) != 0)
			fail_msg("wrote \"%s\", not \"%s\"", show(out, n),
			    format_cases[i].expected);
	}
}

static void
test_proto_replies_with_longest_fields_fit_in_reply_max(void **state)
{
	char out[PROTO_REPLY_MAX];
	char want[PROTO_REPLY_MAX];
	size_t n;

	(void)state;
	n = fmt_granted_max(out, sizeof(out));
	assert_int_not_equal(n, 0);
	snprintf(want, sizeof(want), "GRANTED %.255s fence=9223372036854775807 "
	    "handle=9223372036854775807-ffffffffffffffff "
	    "lease=9223372036854775807\r\n", long_name_init());
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, n);
	n = fmt_status_max(out, sizeof(out));
	snprintf(want, sizeof(want), "STATUS %.255s held=1 "
	    "fence=9223372036854775807 ttl=9223372036854775807 "
	    "queue=18446744073709551615\r\n", long_name_init());
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, n);
}

/*
 * Every cap below the line's length returns 0 and leaves every byte from
 * cap on untouched; the exact length and any larger cap write the line.
 */
static const char *
check_caps(size_t (*format)(char *, size_t))
{
	static unsigned char out[PROTO_REPLY_MAX + 64];
	static unsigned char want[PROTO_REPLY_MAX + 64];
	size_t full, cap, n, i;

	full = format((char *)want, PROTO_REPLY_MAX);
	if (full == 0)
		return why("the line does not fit in PROTO_REPLY_MAX");
	for (cap = 0; cap <= full + 32; cap++) {
		memset(out, 0xa5, sizeof(out));
		n = format((char *)out, cap);
		if (cap < full && n != 0)
			return why("cap %zu of %zu returns %zu", cap, full, n);
		if (cap >= full && (n != full || memcmp(out, want, n) != 0))
			return why("cap %zu of %zu writes another line", cap,
			    full);
		for (i = cap < full ? cap : full; i < sizeof(out); i++) {
			if (out[i] != 0xa5)
				return why("cap %zu of %zu: byte %zu written",
				    cap, full, i);
		}
	}
	if (format(NULL, 0) != 0)
		return why("a NULL buffer of 0 bytes does not return 0");
	return NULL;
}

/* Writes one byte past its cap when the line does not fit. */
static size_t
broken_format_overflows(char *out, size_t cap)
{
	size_t n = proto_format_pong(out, cap);

	if (n == 0 && out != NULL)
		out[cap] = 'X';
	return n;
}

static void
test_proto_formatters_return_zero_when_cap_is_too_small(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < FORMAT_COUNT; i++)
		assert_check(check_caps(format_cases[i].format));
	/* The checker itself must catch a formatter that overflows. */
	assert_non_null(check_caps(broken_format_overflows));
}

static void
test_proto_formatters_refuse_what_the_protocol_cannot_carry(void **state)
{
	char out[PROTO_REPLY_MAX];
	struct proto_handle h0 = { 0, 1 }, hbig = { (uint64_t)INT64_MAX + 1,
	    1 };
	struct proto_stat bad_stats[][1] = { { { "a b", 1 } },
	    { { NULL, 1 } }, { { "", 1 } }, { { "a=b", 1 } },
	    { { "a\n", 1 } } };
	size_t i, cap = sizeof(out);

	(void)state;
	assert_int_equal(proto_format_granted(out, cap, "a b", 3, handle_41,
	    1), 0);
	assert_int_equal(proto_format_granted(out, cap, "", 0, handle_41, 1),
	    0);
	assert_int_equal(proto_format_granted(out, cap, NULL, 0, handle_41,
	    1), 0);
	assert_int_equal(proto_format_granted(out, cap, "a\r\nPONG", 7,
	    handle_41, 1), 0);
	assert_int_equal(proto_format_granted(out, cap, long_name_init(),
	    PROTO_NAME_MAX + 1, handle_41, 1), 0);
	assert_int_equal(proto_format_granted(out, cap, "a", 1, h0, 1), 0);
	assert_int_equal(proto_format_granted(out, cap, "a", 1, hbig, 1), 0);
	assert_int_equal(proto_format_granted(out, cap, "a", 1, handle_41,
	    -1), 0);
	assert_int_equal(proto_format_renewed(out, cap, "a", 1, 0, 1), 0);
	assert_int_equal(proto_format_renewed(out, cap, "a", 1, 1, -1), 0);
	assert_int_equal(proto_format_renewed(out, cap, "a\n", 2, 1, 1), 0);
	assert_int_equal(proto_format_released(out, cap, "a\tb", 3), 0);
	assert_int_equal(proto_format_notheld(out, cap, "", 0), 0);
	assert_int_equal(proto_format_held(out, cap, "\x7f", 1), 0);
	assert_int_equal(proto_format_status(out, cap, "a", 1, false,
	    (uint64_t)INT64_MAX + 1, 0, 0), 0);
	assert_int_equal(proto_format_status(out, cap, "a", 1, false, 0, -1,
	    0), 0);
	assert_int_equal(proto_format_error(out, cap, PROTO_ERR_NONE, "x"),
	    0);
	assert_int_equal(proto_format_error(out, cap, PROTO_ERR_COUNT, "x"),
	    0);
	assert_int_equal(proto_format_error(out, cap, PROTO_ERR_LIMIT,
	    "x\r\nGRANTED"), 0);
	assert_int_equal(proto_format_error(out, cap, PROTO_ERR_LIMIT,
	    "x\ny"), 0);
	for (i = 0; i < sizeof(bad_stats) / sizeof(bad_stats[0]); i++)
		assert_int_equal(proto_format_stats(out, cap, bad_stats[i], 1),
		    0);
	assert_int_equal(proto_format_stats(out, cap, NULL, 1), 0);
}

/*
 * Tests: format_request and round trips.
 */

static void
test_proto_format_request_round_trips_every_good_request(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < GOOD_COUNT; i++) {
		struct proto_request want = expected_request(&good_requests[i]);

		assert_check(check_round_trip(proto_format_request, &want));
	}
}

/* The option bits (lease 1, wait 2, onclose 4) each command takes. */
static unsigned
options_taken(enum proto_command command)
{
	switch (command) {
	case PROTO_CMD_ACQUIRE:
		return 7;
	case PROTO_CMD_TRY:
		return 5;
	case PROTO_CMD_RENEW:
		return 1;
	default:
		return 0;
	}
}

static void
test_proto_format_request_round_trips_every_combination(void **state)
{
	static const char *const names[] = { "a", "inventory/sku-42",
	    "\x80\xff" };
	static const int64_t durations[] = { 0, 1, 999,
	    PROTO_DURATION_MAX_MS };
	static const struct proto_handle handles[] = { { 1, 0 },
	    { 41, SECRET_41 }, { INT64_MAX, UINT64_MAX } };
	struct proto_request req;
	char out[PROTO_REPLY_MAX];
	unsigned command, mask, v;

	(void)state;
	/* The v1 commands and options, and AUTH; the operator's commands
	 * are in test_proto_format_request_round_trips_v2_commands. */
	for (command = 0; command < PROTO_CMD_COUNT; command++) {
		if (command > PROTO_CMD_STATS && command != PROTO_CMD_AUTH)
			continue;
		for (mask = 0; mask < 8; mask++) {
			for (v = 0; v < 12; v++) {
				bool named = command <= PROTO_CMD_STATUS ||
				    command == PROTO_CMD_AUTH;

				memset(&req, 0, sizeof(req));
				req.command = (enum proto_command)command;
				if (named && v % 4 == 3) {
					req.name = long_name_init();
					req.name_len = PROTO_NAME_MAX;
				} else if (named) {
					req.name = names[v % 4];
					req.name_len = strlen(req.name);
				}
				if (command == PROTO_CMD_RENEW ||
				    command == PROTO_CMD_RELEASE)
					req.handle = handles[v % 3];
				req.has_lease = (mask & 1) != 0;
				if (req.has_lease)
					req.lease_ms = durations[v % 4];
				req.has_wait = (mask & 2) != 0;
				if (req.has_wait)
					req.wait_ms = durations[(v + 1) % 4];
				req.has_onclose = (mask & 4) != 0;
				if (req.has_onclose && v % 2 == 1)
					req.onclose = PROTO_ONCLOSE_RELEASE;
				if ((mask & ~options_taken(req.command)) == 0)
					assert_check(check_round_trip(
					    proto_format_request, &req));
				else
					assert_int_equal(proto_format_request(
					    out, sizeof(out), &req), 0);
			}
		}
	}
}

/* rid= on ACQUIRE and TRY: any name bytes, '=' too, 1 to 64 of them. */
static void
test_proto_rid_parses_on_acquire_and_try(void **state)
{
	struct outcome o;
	char line[128];

	(void)state;
	o = parse_line("ACQUIRE a lease=1s rid=c7/req=42 wait=0\n");
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.rid_len, 9);
	assert_memory_equal(o.req.rid, "c7/req=42", 9);
	assert_true(o.req.has_lease && o.req.has_wait);
	o = parse_line("try b RID=\xc3\xa9\n");
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.command, PROTO_CMD_TRY);
	assert_int_equal(o.req.rid_len, 2);
	/* 64 bytes is the most. */
	snprintf(line, sizeof(line), "ACQUIRE a rid=%s\n",
	    "0123456789012345678901234567890123456789012345678901234567890123");
	o = parse_line(line);
	assert_int_equal(o.result, PROTO_DONE);
	assert_int_equal(o.req.rid_len, 64);
	o = parse_line("ACQUIRE a\n");
	assert_int_equal(o.req.rid_len, 0);
}

/* limit= (1 to 65535) and mode= on ACQUIRE and TRY; they format back in
 * canonical order. */
static void
test_proto_limit_and_mode_parse_on_acquire_and_try(void **state)
{
	struct outcome o;
	char out[PROTO_REPLY_MAX];
	size_t n;

	(void)state;
	o = parse_line("ACQUIRE s limit=65535 wait=0\n");
	assert_int_equal(o.result, PROTO_DONE);
	assert_true(o.req.has_limit && o.req.limit == 65535);
	assert_false(o.req.has_mode);
	o = parse_line("TRY rw Mode=Shared limit=1\n");
	assert_int_equal(o.result, PROTO_DONE);
	assert_true(o.req.has_mode && o.req.mode == PROTO_MODE_SHARED);
	o.req.name = "rw";   /* the outcome's copy moved with it */
	n = proto_format_request(out, sizeof(out), &o.req);
	assert_int_equal(n, strlen("TRY rw limit=1 mode=shared\r\n"));
	assert_memory_equal(out, "TRY rw limit=1 mode=shared\r\n", n);
	o = parse_line("ACQUIRE a mode=exclusive\n");
	assert_true(o.req.has_mode && o.req.mode == PROTO_MODE_EXCLUSIVE);
	/* LIST keeps its own range. */
	o = parse_line("LIST limit=2000\n");
	assert_int_equal(o.result, PROTO_BAD);
	o.req.command = PROTO_CMD_ACQUIRE;
	o.req.name = "a";
	o.req.name_len = 1;
	o.req.has_limit = true;
	o.req.limit = 3;
	o.req.has_mode = true;
	o.req.mode = PROTO_MODE_SHARED;
	assert_int_equal(proto_format_request(out, sizeof(out), &o.req), 0);
}

/* Protocol v2's commands and options format and parse back, each option
 * only on the commands that take it. */
static void
test_proto_format_request_round_trips_v2_commands(void **state)
{
	static const uint64_t fences[] = { 1, 41, (uint64_t)INT64_MAX };
	struct proto_request req;
	char out[PROTO_REPLY_MAX];
	unsigned v, mask;

	(void)state;
	for (v = 0; v < 3; v++) {
		for (mask = 0; mask < 16; mask++) {
			/* ACQUIRE and TRY: delay= and owner=. */
			memset(&req, 0, sizeof(req));
			req.command = v == 1 ? PROTO_CMD_TRY : PROTO_CMD_ACQUIRE;
			req.name = "svc/leader";
			req.name_len = 10;
			req.has_delay = (mask & 1) != 0;
			if (req.has_delay)
				req.delay_ms = (int64_t)fences[v] %
				    PROTO_DURATION_MAX_MS;
			if (mask & 2) {
				req.owner = v == 2 ? long_name_init() : "host:42";
				req.owner_len = v == 2 ? PROTO_OWNER_MAX : 7;
			}
			req.has_lease = (mask & 4) != 0;
			req.lease_ms = req.has_lease ? 500 : 0;
			if (mask & 8) {
				req.rid = v == 2 ? long_name_init() :
				    "c7/req=42";
				req.rid_len = v == 2 ? PROTO_RID_MAX : 9;
			}
			assert_check(check_round_trip(proto_format_request,
			    &req));
			/* WATCH: fence= (0 too) and wait=. */
			memset(&req, 0, sizeof(req));
			req.command = PROTO_CMD_WATCH;
			req.name = "w";
			req.name_len = 1;
			req.has_fence = (mask & 1) != 0;
			req.fence = !req.has_fence || mask & 2 ? 0 : fences[v];
			req.has_wait = (mask & 4) != 0;
			req.wait_ms = req.has_wait ? 250 : 0;
			assert_check(check_round_trip(proto_format_request,
			    &req));
			/* FORCE and CHECK: the fence is the argument. */
			memset(&req, 0, sizeof(req));
			req.command = mask & 1 ? PROTO_CMD_FORCE :
			    PROTO_CMD_CHECK;
			req.name = "stuck";
			req.name_len = 5;
			req.has_fence = true;
			req.fence = fences[v];
			assert_check(check_round_trip(proto_format_request,
			    &req));
			req.fence = 0;
			assert_int_equal(proto_format_request(out,
			    sizeof(out), &req), 0);
			/* LIST: prefix=, after=, limit=. */
			memset(&req, 0, sizeof(req));
			req.command = PROTO_CMD_LIST;
			if (mask & 1) {
				req.prefix = "svc/";
				req.prefix_len = 4;
			}
			if (mask & 2) {
				req.after = "svc/b";
				req.after_len = 5;
			}
			req.has_limit = (mask & 4) != 0;
			if (req.has_limit)
				req.limit = v == 0 ? 1 : v == 1 ? 100 :
				    PROTO_LIST_LIMIT_MAX;
			assert_check(check_round_trip(proto_format_request,
			    &req));
		}
	}
	/* What the parser refuses is not formatted. */
	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_LIST;
	req.has_limit = true;
	req.limit = PROTO_LIST_LIMIT_MAX + 1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.limit = 0;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.has_limit = false;
	req.has_delay = true;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_ACQUIRE;
	req.name = "a";
	req.name_len = 1;
	req.owner = "a b";
	req.owner_len = 3;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.owner_len = 0;
	req.rid = "a\tb";
	req.rid_len = 3;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.rid = long_name_init();
	req.rid_len = PROTO_RID_MAX + 1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.rid_len = 0;
	req.has_fence = true;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	/* A rid is taken by ACQUIRE and TRY only. */
	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_STATUS;
	req.name = "a";
	req.name_len = 1;
	req.rid = "r";
	req.rid_len = 1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
}

/* The new reply lines parse into their fields; a missing required field
 * or a malformed optional one is refused. */
static void
test_proto_v2_replies_parse_into_their_fields(void **state)
{
	struct proto_reply r;
	struct proto_error err;
	size_t used;
	static const char *const bad[] = {
		"LOCK a held=1 fence=2 ttl=3\r\n",
		"END next=b\r\n",
		"CURRENT a fence=0 ttl=1\r\n",
		"STALE a\r\n",
		"CHANGED a held=0 fence=0 ttl=0 queue=0 owner=\r\n",
		"HELD a delay=x\r\n",
	};
#define PARSE(text) proto_parse_reply(text, strlen(text), 4096, &r, &used, \
	&err)

	(void)state;
	assert_int_equal(PARSE("LOCK a/b held=1 fence=7 ttl=900 queue=2 "
	    "owner=h:1 delay=5 x=y\r\n"), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_LOCK);
	assert_memory_equal(r.name, "a/b", 3);
	assert_true(r.held);
	assert_int_equal(r.fence, 7);
	assert_int_equal(r.ttl_ms, 900);
	assert_int_equal(r.queue, 2);
	assert_int_equal(r.owner_len, 3);
	assert_memory_equal(r.owner, "h:1", 3);
	assert_int_equal(r.delay_ms, 5);
	assert_int_equal(PARSE("END count=3 next=a/b\r\n"), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_END);
	assert_int_equal(r.count, 3);
	assert_memory_equal(r.next, "a/b", 3);
	assert_int_equal(PARSE("END count=0\r\n"), PROTO_DONE);
	assert_null(r.next);
	assert_int_equal(PARSE("CHANGED a held=0 fence=0 ttl=0 queue=0 "
	    "delay=40 cause=forced\r\n"), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_CHANGED);
	assert_int_equal(r.delay_ms, 40);
	assert_null(r.owner);
	assert_memory_equal(r.cause, "forced", 6);
	assert_int_equal(PARSE("CURRENT a fence=4 ttl=10\r\n"), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_CURRENT);
	assert_int_equal(r.fence, 4);
	assert_int_equal(PARSE("STALE a fence=0\r\n"), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_STALE);
	assert_int_equal(PARSE("HELD a delay=12\r\n"), PROTO_DONE);
	assert_int_equal(r.delay_ms, 12);
	assert_int_equal(PARSE("STATUS a held=1 fence=1 ttl=1 queue=0 "
	    "owner=me\r\n"), PROTO_DONE);
	assert_memory_equal(r.owner, "me", 2);
	assert_int_equal(r.holders, 0);
	assert_int_equal(r.limit, 0);
	assert_false(r.shared);
	/* A semaphore's and a read lock's fields (issue 17). */
	assert_int_equal(PARSE("STATUS s held=1 fence=5 ttl=9 queue=2 "
	    "owner=ci-2 holders=3 limit=3 delay=7\r\n"), PROTO_DONE);
	assert_int_equal(r.holders, 3);
	assert_int_equal(r.limit, 3);
	assert_false(r.shared);
	assert_int_equal(r.delay_ms, 7);
	assert_int_equal(PARSE("LOCK rw held=1 fence=4 ttl=9 queue=0 "
	    "holders=2 mode=shared\r\n"), PROTO_DONE);
	assert_int_equal(r.holders, 2);
	assert_true(r.shared);
	assert_int_equal(PARSE("STATUS s held=1 fence=5 ttl=9 queue=0 "
	    "limit=0\r\n"), PROTO_BAD);
	assert_int_equal(PARSE("STATUS s held=1 fence=5 ttl=9 queue=0 "
	    "holders=x\r\n"), PROTO_BAD);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(PARSE(bad[i]), PROTO_BAD);
#undef PARSE
}

static void
test_proto_round_trip_checker_catches_a_formatter_that_drops_wait(
    void **state)
{
	struct proto_request req = expected_request(&good_requests[0]);

	(void)state;
	assert_null(check_round_trip(proto_format_request, &req));
	assert_non_null(check_round_trip(broken_format_drops_wait, &req));
}

static void
test_proto_format_request_refuses_what_the_parser_would_refuse(void **state)
{
	struct proto_request req;
	char out[PROTO_REPLY_MAX];

	(void)state;
	memset(&req, 0, sizeof(req));
	req.command = PROTO_CMD_ACQUIRE;
	req.name = "a b";
	req.name_len = 3;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.name = NULL;
	req.name_len = 0;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.name = "a";
	req.name_len = 1;
	assert_int_not_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.has_lease = true;
	req.lease_ms = -1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.lease_ms = PROTO_DURATION_MAX_MS + 1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.lease_ms = 5;
	req.has_wait = true;
	req.wait_ms = -1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.wait_ms = 0;
	req.has_onclose = true;
	req.onclose = (enum proto_onclose)7;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.onclose = PROTO_ONCLOSE_KEEP;
	assert_int_not_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.command = PROTO_CMD_TRY;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.command = PROTO_CMD_RENEW;
	req.has_wait = req.has_onclose = false;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.handle = handle_41;
	assert_int_not_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.handle.fence = (uint64_t)INT64_MAX + 1;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	req.command = PROTO_CMD_COUNT;
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 0);
	assert_int_equal(proto_format_request(out, sizeof(out), NULL), 0);
	/* Commands without a name ignore name and handle. */
	req.command = PROTO_CMD_PING;
	req.has_lease = false;
	req.name = "a b";
	assert_int_equal(proto_format_request(out, sizeof(out), &req), 6);
	assert_memory_equal(out, "PING\r\n", 6);
}

/*
 * Tests: the reply parser.
 */

static enum proto_result
reply_of(const char *s, size_t max_line, struct proto_reply *reply,
    size_t *consumed)
{
	struct proto_error err;
	enum proto_result r;
	size_t len = strlen(s);
	char *exact = exact_copy(s, len);

	/* The exact copy lets ASan see overreads; s outlives it. */
	r = proto_parse_reply(exact, len, max_line, reply, consumed, &err);
	if (reply->name != NULL)
		reply->name = s + (reply->name - exact);
	if (reply->text != NULL)
		reply->text = s + (reply->text - exact);
	free(exact);
	if (r == PROTO_BAD)
		assert_int_equal(err.code, PROTO_ERR_BADREQ);
	if (r == PROTO_TOOLONG)
		assert_int_equal(err.code, PROTO_ERR_TOOLONG);
	return r;
}

static void
test_proto_parse_reply_reads_every_success_kind(void **state)
{
	struct proto_reply r;
	size_t consumed;
	const char *line;

	(void)state;
	line = "GRANTED inventory/sku-42 fence=41 handle=" HANDLE_41
	    " lease=30000\r\n";
	assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(consumed, strlen(line));
	assert_int_equal(r.kind, PROTO_REPLY_GRANTED);
	assert_int_equal(r.name_len, 16);
	assert_memory_equal(r.name, "inventory/sku-42", 16);
	assert_int_equal(r.fence, 41);
	assert_int_equal(r.handle.fence, 41);
	assert_int_equal(r.handle.secret, SECRET_41);
	assert_int_equal(r.lease_ms, 30000);

	line = "RENEWED inventory/sku-42 fence=41 lease=60000\n";
	assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_RENEWED);
	assert_int_equal(r.fence, 41);
	assert_int_equal(r.lease_ms, 60000);

	assert_int_equal(reply_of("RELEASED a\r\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_RELEASED);
	assert_memory_equal(r.name, "a", 1);
	assert_int_equal(reply_of("NOTHELD a\r\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_NOTHELD);
	assert_int_equal(reply_of("HELD \xff\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_HELD);
	assert_int_equal(r.name_len, 1);

	line = "STATUS inventory/sku-42 held=1 fence=41 ttl=27412 queue=0\r\n";
	assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_STATUS);
	assert_true(r.held);
	assert_int_equal(r.fence, 41);
	assert_int_equal(r.ttl_ms, 27412);
	assert_int_equal(r.queue, 0);
	line = "STATUS q held=0 fence=0 ttl=0 queue=18446744073709551615\n";
	assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_false(r.held);
	assert_int_equal(r.queue, UINT64_MAX);

	assert_int_equal(reply_of("PONG\r\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_PONG);
	assert_null(r.name);
	assert_int_equal(reply_of("BYE\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_BYE);

	line = "HELP commands: ACQUIRE TRY RENEW RELEASE STATUS PING QUIT "
	    "HELP STATS\r\n";
	assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_HELP);
	assert_int_equal(r.text_len, strlen(line) - 5 - 2);
	assert_memory_equal(r.text, "commands: ACQUIRE", 17);
}

static void
test_proto_parse_reply_reads_err_lines_with_every_code(void **state)
{
	struct proto_reply r;
	size_t consumed;
	char line[128];
	int code;

	(void)state;
	for (code = 1; code < PROTO_ERR_COUNT; code++) {
		snprintf(line, sizeof(line), "ERR %s what  went\twrong \r\n",
		    proto_error_name((enum proto_error_code)code));
		assert_int_equal(reply_of(line, MAX_LINE, &r, &consumed),
		    PROTO_DONE);
		assert_int_equal(r.kind, PROTO_REPLY_ERROR);
		assert_int_equal(r.error, code);
		assert_int_equal(r.text_len, strlen("what  went\twrong "));
		assert_memory_equal(r.text, "what  went\twrong ", r.text_len);
	}
	assert_int_equal(reply_of("ERR TIMEOUT\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(r.error, PROTO_ERR_TIMEOUT);
	assert_int_equal(r.text_len, 0);
	assert_int_equal(reply_of("ERR BADARG lease must be a non-negative "
	    "duration\r\n", MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(r.error, PROTO_ERR_BADARG);
	assert_int_equal(r.text_len, strlen("lease must be a non-negative "
	    "duration"));
	assert_int_equal(reply_of("ERR\n", MAX_LINE, &r, &consumed),
	    PROTO_BAD);
	assert_int_equal(reply_of("ERR NOPE x\n", MAX_LINE, &r, &consumed),
	    PROTO_BAD);
	assert_int_equal(reply_of("ERR badreq x\n", MAX_LINE, &r, &consumed),
	    PROTO_BAD);
}

static void
test_proto_parse_reply_ignores_unknown_trailing_fields(void **state)
{
	struct proto_reply r;
	size_t consumed;

	(void)state;
	assert_int_equal(reply_of("GRANTED a fence=7 handle=7-0000000000000001"
	    " lease=5 region=eu ttl=9 empty= x=y=z\r\n", MAX_LINE, &r,
	    &consumed), PROTO_DONE);
	assert_int_equal(r.fence, 7);
	assert_int_equal(r.lease_ms, 5);
	assert_int_equal(r.ttl_ms, 0);
	assert_int_equal(reply_of("STATUS a held=0 fence=0 ttl=0 queue=0 "
	    "waiters=3 held_since=12\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(reply_of("RENEWED a fence=1 lease=2 next=3\n",
	    MAX_LINE, &r, &consumed), PROTO_DONE);
	assert_int_equal(reply_of("RELEASED a by=me\n", MAX_LINE, &r,
	    &consumed), PROTO_DONE);
	assert_int_equal(reply_of("PONG server=lockd\r\n", MAX_LINE, &r,
	    &consumed), PROTO_DONE);
	assert_int_equal(reply_of("BYE\tin=5s\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	/* Known fields are found in any order. */
	assert_int_equal(reply_of("RENEWED a lease=2 fence=1\n", MAX_LINE, &r,
	    &consumed), PROTO_DONE);
	assert_int_equal(r.fence, 1);
	assert_int_equal(r.lease_ms, 2);
}

static void
test_proto_parse_reply_refuses_malformed_replies(void **state)
{
	static const char *const bad[] = {
		"\n", "\r\n", "  \n", "WHAT a\n", "pong\n", "Granted a\n",
		"GRANTED a fence=1 lease=5\n",
		"GRANTED a handle=1-0000000000000001 lease=5\n",
		"GRANTED a fence=1 handle=1-0000000000000001\n",
		"GRANTED fence=1 handle=1-0000000000000001 lease=5\n",
		"GRANTED a fence=2 handle=1-0000000000000001 lease=5\n",
		"GRANTED a fence=0 handle=0-0000000000000001 lease=5\n",
		"GRANTED a fence=1 handle=1-000000000000000G lease=5\n",
		"GRANTED a fence=1 handle=1-0000000000000001 lease=-5\n",
		"GRANTED a fence=1 handle=1-0000000000000001 lease=5s\n",
		"GRANTED a fence=1 fence=1 handle=1-0000000000000001 lease=5\n",
		"GRANTED a fence=1 handle=1-0000000000000001 lease=5 junk\n",
		"GRANTED\n",
		"RENEWED a fence=1\n", "RENEWED a lease=1\n",
		"RENEWED a fence=0 lease=1\n",
		"RENEWED a fence=9223372036854775808 lease=1\n",
		"RENEWED a fence=1 lease=9223372036854775808\n",
		"RENEWED a fence= lease=1\n",
		"RELEASED\n", "RELEASED a b\n", "NOTHELD a\x01\n",
		"HELD a b=c d\n",
		"STATUS a held=1 fence=1 ttl=5\n",
		"STATUS a held=2 fence=1 ttl=5 queue=0\n",
		"STATUS a held=01 fence=1 ttl=5 queue=0\n",
		"STATUS a held=1 fence=1 ttl=5 queue=18446744073709551616\n",
		"STATUS a held=1 fence=x ttl=5 queue=0\n",
		"PONG x\n", "BYE x\n",
		"STATS a\n", "STATS =1\n", "STATS a=1 b\n",
		"ERR\n", "ERR NONE x\n", "ERR X\n", "PONG\r\r\n", "PONG\x7f\n",
	};
	struct proto_reply r;
	size_t consumed, i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (reply_of(bad[i], MAX_LINE, &r, &consumed) != PROTO_BAD)
			fail_msg("\"%s\" is not refused",
			    show(bad[i], strlen(bad[i])));
		assert_int_equal(consumed, strlen(bad[i]));
	}
	/* A NUL needs an explicit length. */
	{
		struct proto_error err;

		assert_int_equal(proto_parse_reply("PONG\0\r\n", 7, MAX_LINE,
		    &r, &consumed, &err), PROTO_BAD);
		assert_int_equal(consumed, 7);
		assert_int_equal(err.code, PROTO_ERR_BADREQ);
	}
}

static void
test_proto_parse_reply_waits_for_the_line_end_and_limits_it(void **state)
{
	struct proto_reply r;
	size_t consumed;
	char line[64];

	(void)state;
	assert_int_equal(reply_of("", MAX_LINE, &r, &consumed), PROTO_PARTIAL);
	assert_int_equal(reply_of("PONG", MAX_LINE, &r, &consumed),
	    PROTO_PARTIAL);
	assert_int_equal(consumed, 0);
	assert_int_equal(reply_of("PONG\r", MAX_LINE, &r, &consumed),
	    PROTO_PARTIAL);
	assert_int_equal(reply_of("PONG\r\nBYE\r\n", MAX_LINE, &r, &consumed),
	    PROTO_DONE);
	assert_int_equal(consumed, 6);
	assert_int_equal(reply_of("STATS a=1 b=2", 8, &r, &consumed),
	    PROTO_TOOLONG);
	assert_int_equal(consumed, strlen("STATS a=1 b=2"));
	assert_int_equal(reply_of("STATS a=1 b=2\r\nPONG\r\n", 8, &r,
	    &consumed), PROTO_TOOLONG);
	assert_int_equal(consumed, strlen("STATS a=1 b=2\r\n"));
	snprintf(line, sizeof(line), "PONG\r\n");
	assert_int_equal(reply_of(line, 4, &r, &consumed), PROTO_DONE);
}

static void
test_proto_every_reply_split_at_every_byte_is_partial_until_lf(
    void **state)
{
	size_t i, k, consumed, full_consumed;
	struct proto_reply r, whole;
	struct proto_error err;
	enum proto_result full;
	char out[PROTO_REPLY_MAX];

	(void)state;
	for (i = 0; i < FORMAT_COUNT; i++) {
		size_t n = format_cases[i].format(out, sizeof(out));
		char *p;

		if (format_cases[i].format == fmt_handle ||
		    format_cases[i].format == fmt_request_acquire ||
		    format_cases[i].format == fmt_request_renew)
			continue;
		full = proto_parse_reply(out, n, MAX_LINE, &whole,
		    &full_consumed, &err);
		if (full != PROTO_DONE || full_consumed != n)
			fail_msg("\"%s\" does not parse", show(out, n));
		for (k = 0; k < n; k++) {
			p = guard_place(out, k);
			assert_int_equal(proto_parse_reply(p, k, MAX_LINE, &r,
			    &consumed, &err), PROTO_PARTIAL);
			assert_int_equal(consumed, 0);
		}
		p = guard_place(out, n);
		assert_int_equal(proto_parse_reply(p, n, MAX_LINE, &r,
		    &consumed, &err), PROTO_DONE);
		assert_int_equal(r.kind, whole.kind);
		assert_int_equal(r.fence, whole.fence);
		assert_int_equal(r.lease_ms, whole.lease_ms);
		assert_int_equal(r.text_len, whole.text_len);
		assert_int_equal(r.name_len, whole.name_len);
	}
}

static void
test_proto_formatted_replies_parse_back_to_their_fields(void **state)
{
	char out[PROTO_REPLY_MAX];
	struct proto_reply r;
	struct proto_error err;
	size_t n, consumed;
	uint64_t v;

	(void)state;
	n = fmt_granted_max(out, sizeof(out));
	assert_int_equal(proto_parse_reply(out, n, MAX_LINE, &r, &consumed,
	    &err), PROTO_DONE);
	assert_int_equal(r.name_len, PROTO_NAME_MAX);
	assert_int_equal(r.fence, (uint64_t)INT64_MAX);
	assert_int_equal(r.handle.secret, UINT64_MAX);
	assert_int_equal(r.lease_ms, INT64_MAX);
	n = fmt_status_max(out, sizeof(out));
	assert_int_equal(proto_parse_reply(out, n, MAX_LINE, &r, &consumed,
	    &err), PROTO_DONE);
	assert_int_equal(r.ttl_ms, INT64_MAX);
	assert_int_equal(r.queue, UINT64_MAX);
	n = fmt_stats(out, sizeof(out));
	assert_int_equal(proto_parse_reply(out, n, MAX_LINE, &r, &consumed,
	    &err), PROTO_DONE);
	assert_int_equal(r.kind, PROTO_REPLY_STATS);
	assert_true(proto_stats_get(r.text, r.text_len, "reclaimed", &v));
	assert_int_equal(v, 6);
	assert_true(proto_stats_get(r.text, r.text_len, "max", &v));
	assert_int_equal(v, UINT64_MAX);
	n = fmt_error_without_text(out, sizeof(out));
	assert_int_equal(proto_parse_reply(out, n, MAX_LINE, &r, &consumed,
	    &err), PROTO_DONE);
	assert_int_equal(r.error, PROTO_ERR_SHUTDOWN);
	assert_int_equal(r.text_len, 0);
}

static void
test_proto_stats_get_finds_numeric_fields(void **state)
{
	static const char text[] = "connections=3 locks=10 held=2 waiters=1 "
	    "granted=100 timeouts=4 released=90 reclaimed=6 big="
	    "18446744073709551615 huge=18446744073709551616 name=x "
	    "empty= neg=-1";
	static const struct {
		const char *key;
		uint64_t value;
	} want[] = {
		{ "connections", 3 }, { "locks", 10 }, { "held", 2 },
		{ "waiters", 1 }, { "granted", 100 }, { "timeouts", 4 },
		{ "released", 90 }, { "reclaimed", 6 }, { "big", UINT64_MAX },
	};
	uint64_t v;
	size_t i, len = sizeof(text) - 1;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		v = 0;
		assert_true(proto_stats_get(text, len, want[i].key, &v));
		assert_int_equal(v, want[i].value);
	}
	assert_false(proto_stats_get(text, len, "lock", &v));
	assert_false(proto_stats_get(text, len, "ocks", &v));
	assert_false(proto_stats_get(text, len, "LOCKS", &v));
	assert_false(proto_stats_get(text, len, "huge", &v));
	assert_false(proto_stats_get(text, len, "name", &v));
	assert_false(proto_stats_get(text, len, "empty", &v));
	assert_false(proto_stats_get(text, len, "neg", &v));
	assert_false(proto_stats_get(text, len, "", &v));
	assert_false(proto_stats_get(text, len, NULL, &v));
	assert_false(proto_stats_get(NULL, 0, "locks", &v));
	/* Only text_len bytes count. */
	assert_false(proto_stats_get(text, 10, "locks", &v));
	assert_true(proto_stats_get("a=12", 3, "a", &v));
	assert_int_equal(v, 1);
	/* A whole STATS line works as well as its text. */
	assert_true(proto_stats_get("STATS\ta=5\r", 9, "a", &v));
	assert_int_equal(v, 5);
}

static const struct CMUnitTest proto_tests[] = {
	cmocka_unit_test(test_proto_good_requests_parse_to_their_fields),
	cmocka_unit_test(test_proto_acquire_with_all_options_parses),
	cmocka_unit_test(
	    test_proto_commands_without_options_leave_option_fields_zero),
	cmocka_unit_test(test_proto_bad_requests_are_refused_with_their_code),
	cmocka_unit_test(test_proto_negative_lease_has_the_spec_message),
	cmocka_unit_test(test_proto_commands_and_keys_are_case_insensitive),
	cmocka_unit_test(test_proto_tabs_and_runs_of_blanks_separate_words),
	cmocka_unit_test(test_proto_crlf_and_lf_endings_parse_alike),
	cmocka_unit_test(test_proto_empty_and_blank_lines_are_empty),
	cmocka_unit_test(test_proto_pipelined_requests_parse_in_order),
	cmocka_unit_test(
	    test_proto_every_request_split_at_every_byte_is_partial_until_lf),
	cmocka_unit_test(
	    test_proto_a_stream_split_at_every_byte_parses_as_a_whole),
	cmocka_unit_test(
	    test_proto_split_checkers_catch_a_parser_that_ends_lines_early),
	cmocka_unit_test(
	    test_proto_requests_ending_at_a_guard_page_are_read_safely),
	cmocka_unit_test(test_proto_guard_page_catches_a_read_past_the_end),
	cmocka_unit_test(test_proto_line_of_exactly_max_line_bytes_parses),
	cmocka_unit_test(
	    test_proto_overlong_line_with_its_lf_is_toolong_and_consumed),
	cmocka_unit_test(
	    test_proto_overlong_line_without_lf_is_toolong_then_discarded),
	cmocka_unit_test(
	    test_proto_names_of_1_to_255_bytes_parse_and_longer_are_badarg),
	cmocka_unit_test(test_proto_bytes_above_0x7f_are_allowed_in_names),
	cmocka_unit_test(test_proto_durations_parse_in_every_unit),
	cmocka_unit_test(test_proto_bad_durations_are_refused),
	cmocka_unit_test(test_proto_handles_parse_only_in_canonical_form),
	cmocka_unit_test(test_proto_format_handle_round_trips_byte_for_byte),
	cmocka_unit_test(test_proto_valid_name_follows_the_spec),
	cmocka_unit_test(test_proto_error_and_command_names_match_the_spec),
	cmocka_unit_test(test_proto_formatters_write_the_spec_example_lines),
	cmocka_unit_test(
	    test_proto_replies_with_longest_fields_fit_in_reply_max),
	cmocka_unit_test(
	    test_proto_formatters_return_zero_when_cap_is_too_small),
	cmocka_unit_test(
	    test_proto_formatters_refuse_what_the_protocol_cannot_carry),
	cmocka_unit_test(
	    test_proto_format_request_round_trips_every_good_request),
	cmocka_unit_test(
	    test_proto_format_request_round_trips_every_combination),
	cmocka_unit_test(test_proto_format_request_round_trips_v2_commands),
	cmocka_unit_test(test_proto_rid_parses_on_acquire_and_try),
	cmocka_unit_test(test_proto_limit_and_mode_parse_on_acquire_and_try),
	cmocka_unit_test(test_proto_v2_replies_parse_into_their_fields),
	cmocka_unit_test(
	    test_proto_round_trip_checker_catches_a_formatter_that_drops_wait),
	cmocka_unit_test(
	    test_proto_format_request_refuses_what_the_parser_would_refuse),
	cmocka_unit_test(test_proto_parse_reply_reads_every_success_kind),
	cmocka_unit_test(
	    test_proto_parse_reply_reads_err_lines_with_every_code),
	cmocka_unit_test(
	    test_proto_parse_reply_ignores_unknown_trailing_fields),
	cmocka_unit_test(test_proto_parse_reply_refuses_malformed_replies),
	cmocka_unit_test(
	    test_proto_parse_reply_waits_for_the_line_end_and_limits_it),
	cmocka_unit_test(
	    test_proto_every_reply_split_at_every_byte_is_partial_until_lf),
	cmocka_unit_test(
	    test_proto_formatted_replies_parse_back_to_their_fields),
	cmocka_unit_test(test_proto_stats_get_finds_numeric_fields),
};

int
main(void)
{
	return cmocka_run_group_tests(proto_tests, guard_setup, guard_teardown);
}
