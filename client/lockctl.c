/*
 * lockctl.c - lockd from the shell: one command per lockd request, and
 * `lockctl run`, which holds a lock while a command runs, in the manner of
 * flock(1), whose options and exit codes it takes where they mean the same.
 *
 * Results go to stdout as key=value words a script can eval, errors to
 * stderr, and the exit code says what happened (the table in lockctl.h,
 * also in lockctl(1)).  This file reads the command line, speaks to lockd
 * and, for `run`, takes the lock; lockctl_run.c then supervises the
 * command while the lease is renewed.  lockctl uses liblockd's public API
 * only.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "client/lockctl.h"
#include "client/lockd.h"
#include "client/schedule.h"


/* A bare number is seconds (as flock, timeout(1), sleep(1)), up to this
 * many digits before the point. */
#define SECONDS_DIGITS 9
/*
 * The shortest lease lockctl takes: run renews every third of the lease and
 * gives up on a reply a sixth of it late, and a script renews through a new
 * lockctl each time; below this, a renewal on a loaded machine (a process
 * start, a TLS connect) would not come in time.  0 still means lockd's
 * default lease.
 */
#define LEASE_MIN_MS 300
/* How much of a word lockctl repeats in an error message. */
#define SHOWN_MAX 40

static const char usage_text[] =
"usage: lockctl [-H HOST|URL] [-p PORT | -U SOCKET] [-t TIMEOUT] [TLS, TOKEN]\n"
"               COMMAND ...\n"
"\n"
"  acquire [-w WAIT] [-l LEASE] [-s] [-N LIMIT] [--owner LABEL] [--delay D]\n"
"          [--rid ID] NAME             wait for NAME (forever by default)\n"
"  try [-l LEASE] [-s] [-N LIMIT] [--owner LABEL] [--delay D] [--rid ID] NAME\n"
"                                      take NAME if free, never wait\n"
"  renew [-l LEASE] NAME HANDLE        extend a lease\n"
"  release NAME HANDLE                 give a lease back\n"
"  status NAME                         whether NAME is held, its fence, the\n"
"                                      lease left, the waiters, the holder's\n"
"                                      owner label, a semaphore's or shared\n"
"                                      lock's holders and any lock-delay left\n"
"                                      (diagnostics; never the holder)\n"
"  list [--json] [PREFIX]              the locks that exist, by name: owner,\n"
"                                      fence, ttl, queue, holders\n"
"  force NAME FENCE                    free a stuck holder with exactly FENCE\n"
"  watch NAME                          print each change of NAME's holder\n"
"                                      until interrupted\n"
"  leader NAME                         the owner label of NAME's holder\n"
"  nodes                               each -H node's role, the leader it\n"
"                                      knows and whether it reaches etcd\n"
"  ping                                check that lockd answers\n"
"  run [RUN OPTIONS] NAME [--] COMMAND [ARG...]\n"
"  run [RUN OPTIONS] NAME -c 'COMMAND LINE'\n"
"                                      hold NAME while COMMAND runs\n"
"\n"
"Run options, as flock(1)'s (they may also come before `run`):\n"
"  -n, --nonblock, --nb         fail at once if NAME is held\n"
"  -w, --wait, --timeout SECS   wait at most SECS seconds (0.5, or 1500ms, 5m;\n"
"                               forever: no limit, the default)\n"
"  -E, --conflict-exit-code N   exit N when busy or the wait ran out (default 1)\n"
"  -c, --command CMD            after NAME: run CMD with $SHELL -c\n"
"      --verbose                say why the lock could not be had\n"
"  -s, --shared                 a shared (read) lock: shared holders coexist\n"
"  -x, --exclusive              exclusive, the default (of -s and -x, the\n"
"                               last counts)\n"
"  -o, --close                  accepted and ignored (lockctl leaves no\n"
"                               descriptor to the command)\n"
"and lockctl's own:\n"
"  -N, --limit N                a semaphore: up to N (1-65535) holders at once\n"
"  -l, --lease LEASE            the lease, renewed while COMMAND runs\n"
"      --owner LABEL            the holder's public label (default host:pid)\n"
"      --delay D                lock-delay should the lease end badly\n"
"  -X, --distinct-exit-codes    a -w that ran out exits 75, not the -E code\n"
"\n"
"Connecting:\n"
"  -H lockd://HOST[:PORT]       plain TCP (as -H HOST -p PORT)\n"
"  -H lockds://HOST[:PORT]      TLS; the server's certificate must name HOST\n"
"  -H lockd:///PATH             a Unix socket (as -U PATH)\n"
"  -H HOST:PORT,HOST:PORT,...   a cluster's nodes (or URLs): the leader is\n"
"                               found and followed through a fail-over\n"
"      --tls                    TLS with -H HOST\n"
"      --ca FILE                trust this CA (PEM; default: the system's)\n"
"      --cert FILE --key FILE   a client certificate (PEM)\n"
"      --server-name NAME       the name the certificate must carry\n"
"      --token-file FILE        AUTH with the token on FILE's first line;\n"
"                               else $LOCKD_TOKEN, if set (never in argv)\n"
"\n"
"Durations: a bare number is seconds (10, 0.5), as with flock, timeout(1)\n"
"and sleep(1); or with a unit: 1500ms, 30s, 5m, 1h.  A lease is at least\n"
"300ms (0: lockd's default).  TIMEOUT bounds connecting and each reply\n"
"(default 10s).\n"
"Exit codes: 0 done, 1 busy (or run's -E code; force: not that fence;\n"
"leader: nobody holds it), 64 usage, 69 lockd unreachable (nodes: no\n"
"node leads), 70 refused\n"
"(a refused token too), 75 wait timed out (acquire; run -X), 79 lease lost;\n"
"run exits with COMMAND's status (128+N when killed by signal N).\n";

/*
 * A word from the command line as an error message shows it: whole when
 * short, else its first bytes and its length, so that a 100 KB argument
 * does not flood the terminal.
 */
static const char *
shown(const char *word)
{
	static char text[SHOWN_MAX + 64];
	size_t len = strlen(word);

	if (len <= SHOWN_MAX)
		return word;
	snprintf(text, sizeof(text), "%.*s... (%zu bytes)", SHOWN_MAX, word,
	    len);
	return text;
}

/* A usage error: one line saying why, one saying where to look. */
static int
usage(const char *why)
{
	if (why != NULL)
		fprintf(stderr, "lockctl: %s\n", why);
	fprintf(stderr, "usage: lockctl [-H HOST] [-p PORT | -U SOCKET] "
	    "[-t TIMEOUT] COMMAND ...  (lockctl -h for more)\n");
	return EXIT_USAGE;
}

/* Maps a failed call onto an exit code, after saying why on stderr. */
static int
fail(const char *what, const char *name, const lockd_context *c, int rc)
{
	fprintf(stderr, "lockctl: %s%s%s: %s\n", what, name ? " " : "",
	    name ? shown(name) : "", c->errstr[0] != '\0' ? c->errstr :
	    lockd_strerror(rc));
	switch (rc) {
	case LOCKD_ERR_IO:
	case LOCKD_ERR_EOF:
	case LOCKD_ERR_TIMEOUT:
	case LOCKD_ERR_SHUTDOWN:
	case LOCKD_ERR_NOTLEADER:   /* no node of the cluster leads */
		return EXIT_UNREACHABLE;
	case LOCKD_ERR_WAIT_TIMEOUT:
		return EXIT_WAIT_TIMEOUT;
	case LOCKD_ERR_CONFLICT:
		return EXIT_LOST;
	case LOCKD_ERR_INVALID:
		return EXIT_USAGE;
	default:
		return EXIT_FAILED;
	}
}

/*
 * A duration as lockctl reads every one of its options: a bare number is
 * seconds, with a decimal fraction ("10", "0.5", ".007"; a fraction finer
 * than a millisecond rounds up), as flock, timeout(1) and sleep(1) read
 * theirs; anything else is a lockd duration with its unit ("1500ms", "30s").
 */
static bool
parse_seconds(const char *s, int64_t *ms)
{
	int64_t whole = 0, frac = 0;
	int digits = 0, places = 0;
	const char *p = s;
	bool round_up = false;

	for (; *p >= '0' && *p <= '9'; p++, digits++)
		if (digits < SECONDS_DIGITS)
			whole = whole * 10 + (*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, places++) {
			if (places < 3)
				frac = frac * 10 + (*p - '0');
			else if (*p != '0')
				round_up = true;
		}
	if (*p == '\0' && (digits > 0 || places > 0)) {
		if (digits > SECONDS_DIGITS)
			return false;
		for (; places < 3; places++)
			frac *= 10;
		*ms = whole * 1000 + frac + (round_up ? 1 : 0);
		return true;
	}
	/* A unit is needed from here on: "1500" was seconds above. */
	if (*p == '\0' || *p == '.')
		return false;
	return lockd_parse_duration(s, ms) == LOCKD_OK;
}

static bool
parse_duration(const char *s, int64_t *ms, const char *what)
{
	if (parse_seconds(s, ms))
		return true;
	fprintf(stderr, "lockctl: bad %s '%s': a number of seconds (10, 0.5) "
	    "or a duration with its unit (1500ms, 30s, 5m, 1h)\n", what,
	    shown(s));
	return false;
}

/* -l: a duration, and one lockctl can keep (or 0, lockd's default). */
static bool
parse_lease(const char *s, int64_t *ms)
{
	if (!parse_duration(s, ms, "lease"))
		return false;
	if (*ms == 0 || *ms >= LEASE_MIN_MS)
		return true;
	fprintf(stderr, "lockctl: lease '%s' is %" PRId64 " ms, too short to "
	    "keep: give at least %dms (a bare number is seconds)\n", shown(s),
	    *ms, LEASE_MIN_MS);
	return false;
}

static bool
parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	/* s is an argv string, never NULL (the analyzer cannot see that). */
	v = strtol(s, &end, 10); /* NOLINT(clang-analyzer-core.NonNullParamChecker) */
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static lockd_context *
open_context(const lockd_options *options, int *code)
{
	lockd_context *c = lockd_connect(options);

	*code = EXIT_UNREACHABLE;
	if (c == NULL) {
		fprintf(stderr, "lockctl: out of memory\n");
		return NULL;
	}
	if (c->err != 0) {
		if (lockd_error_is_fatal(c->err)) {
			fprintf(stderr, "lockctl: cannot reach lockd: %s\n",
			    c->errstr);
		} else {
			/* Bad options, or reached but the token refused. */
			fprintf(stderr, "lockctl: %s\n", c->errstr);
			*code = c->err == LOCKD_ERR_INVALID ? EXIT_USAGE :
			    EXIT_FAILED;
		}
		lockd_free(c);
		return NULL;
	}
	/* A cluster: -t also bounds the search for the leader. */
	if (options->command_timeout_ms > 0 && ((options->url != NULL &&
	    strchr(options->url, ',') != NULL) || (options->host != NULL &&
	    strchr(options->host, ',') != NULL)))
		lockd_set_failover_timeout(c, options->command_timeout_ms);
	return c;
}

static void
print_lease(const lockd_lease *lease)
{
	printf("fence=%" PRIu64 " handle=%s lease=%" PRId64 "\n", lease->fence,
	    lease->handle, lease->lease_ms);
}

/*
 * The simple commands: main() parses their words, connects, and calls one
 * of these, which sends one request and prints the result.
 */

struct words {
	int64_t lease_ms;
	int64_t wait_ms;
	const char *name;
	const char *handle;      /* renew, release; force: the fence */
	const char *owner;       /* --owner; NULL: host:pid */
	const char *rid;         /* --rid; NULL: liblockd's own, if any */
	int64_t delay_ms;        /* --delay */
	bool json;               /* list --json */
	unsigned int limit;      /* -N; 0: one holder */
	bool shared;             /* -s */
	int nwords;              /* the words after the options */
};

/* The owner label lockctl gives when none is asked for: host:pid. */
static const char *
default_owner(void)
{
	static char label[LOCKD_OWNER_MAX + 1];
	char host[LOCKD_OWNER_MAX + 1];
	size_t i;

	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	/* A label holds no blank or control byte, and fits 64 bytes. */
	for (i = 0; host[i] != '\0'; i++)
		if ((unsigned char)host[i] <= ' ' || host[i] == 0x7f)
			host[i] = '-';
	snprintf(label, sizeof(label), "%.50s:%ld", host, (long)getpid());
	return label;
}

#define OPT_OWNER 257
#define OPT_DELAY 258
#define OPT_JSON 259
/* The fail-over work's own range of option codes: 0x1700-0x17ff. */
#define OPT_RID 0x1700

static const struct option word_options[] = {
	{ "owner", required_argument, NULL, OPT_OWNER },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "rid", required_argument, NULL, OPT_RID },
	{ "shared", no_argument, NULL, 's' },
	{ "limit", required_argument, NULL, 'N' },
	{ NULL, 0, NULL, 0 },
};

/* -N's value: a semaphore's limit, 1 to LOCKD_LIMIT_MAX. */
static bool
parse_limit(const char *s, unsigned int *limit)
{
	long n;

	if (!parse_int(s, 1, LOCKD_LIMIT_MAX, &n)) {
		fprintf(stderr, "lockctl: -N takes a limit 1-%d, not '%s'\n",
		    LOCKD_LIMIT_MAX, shown(s));
		return false;
	}
	*limit = (unsigned int)n;
	return true;
}

/* --owner's label: 1 to LOCKD_OWNER_MAX bytes, no blanks. */
static bool
owner_ok(const char *label)
{
	size_t len = strlen(label);

	if (len > 0 && len <= LOCKD_OWNER_MAX &&
	    strpbrk(label, " \t\r\n") == NULL)
		return true;
	fprintf(stderr, "lockctl: bad owner '%s' (1 to %d bytes, no blanks)\n",
	    shown(label), LOCKD_OWNER_MAX);
	return false;
}

/* -s with -N above 1 asks for what no lock is. */
static bool
kind_ok(bool shared, unsigned int limit)
{
	if (shared && limit > 1) {
		fprintf(stderr, "lockctl: -s takes no -N above 1 (a shared "
		    "lock has no limit)\n");
		return false;
	}
	return true;
}

/*
 * Parses "[-w WAIT] [-l LEASE] [NAME [HANDLE]]" as far as optstring allows;
 * nargs (0, 1 or 2) is how many words must follow the options.
 */
static bool
parse_words(int argc, char **argv, const char *optstring, int nargs,
    struct words *w)
{
	bool long_ok = strchr(optstring, 'O') != NULL;
	bool json_ok = strchr(optstring, 'j') != NULL;
	bool kind_opts = strchr(optstring, 'N') != NULL;
	int ch;

	memset(w, 0, sizeof(*w));
	w->wait_ms = LOCKD_WAIT_FOREVER;
	optind = 0;
	while ((ch = getopt_long(argc, argv, optstring, word_options,
	    NULL)) != -1) {
		switch (ch) {
		case OPT_OWNER:
			if (!long_ok || !owner_ok(optarg))
				return false;
			w->owner = optarg;
			break;
		case OPT_DELAY:
			if (!long_ok || !parse_duration(optarg, &w->delay_ms,
			    "delay"))
				return false;
			break;
		case OPT_JSON:
			if (!json_ok)
				return false;
			w->json = true;
			break;
		case OPT_RID:
			if (!long_ok)
				return false;
			w->rid = optarg;
			break;
		case 's':
			if (!kind_opts)
				return false;
			w->shared = true;
			break;
		case 'N':
			if (!kind_opts || !parse_limit(optarg, &w->limit))
				return false;
			break;
		case 'l':
			if (!parse_lease(optarg, &w->lease_ms))
				return false;
			break;
		case 'w':
			if (!parse_duration(optarg, &w->wait_ms, "wait"))
				return false;
			break;
		default:
			return false;
		}
	}
	if (!kind_ok(w->shared, w->limit))
		return false;
	/* nargs < 0: at most -nargs words (list's optional PREFIX). */
	if (nargs >= 0 ? argc - optind != nargs : argc - optind > -nargs)
		return false;
	w->nwords = argc - optind;
	if (w->nwords >= 1)
		w->name = argv[optind];
	if (w->nwords >= 2)
		w->handle = argv[optind + 1];
	return true;
}

/* ACQUIRE's and TRY's options from the words. */
static lockd_acquire_options
acquire_options(const struct words *w)
{
	lockd_acquire_options o;

	memset(&o, 0, sizeof(o));
	o.lease_ms = w->lease_ms;
	o.wait_ms = w->wait_ms;
	o.onclose = LOCKD_ONCLOSE_KEEP;
	o.owner = w->owner != NULL ? w->owner : default_owner();
	o.delay_ms = w->delay_ms;
	return o;
}

/* -s and -N as a lockd_kind. */
static lockd_kind
lock_kind(bool shared, unsigned int limit)
{
	lockd_kind k;

	memset(&k, 0, sizeof(k));
	k.size = sizeof(k);
	k.limit = limit;
	k.mode = shared ? LOCKD_MODE_SHARED : LOCKD_MODE_EXCLUSIVE;
	return k;
}

static int
cmd_acquire(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	lockd_acquire_options o = acquire_options(w);
	lockd_kind k = lock_kind(w->shared, w->limit);

	rc = lockd_acquire_kind(c, w->name, &o, &k, w->rid, &lease);
	if (rc != LOCKD_OK)
		return fail("acquire", w->name, c, rc);
	print_lease(&lease);
	return 0;
}

static int
cmd_try(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	lockd_acquire_options o = acquire_options(w);
	lockd_kind k = lock_kind(w->shared, w->limit);

	rc = lockd_try_kind(c, w->name, &o, &k, w->rid, &lease);
	if (rc == LOCKD_HELD) {
		fprintf(stderr, "lockctl: %s is held\n", w->name);
		return EXIT_BUSY;
	}
	if (rc != LOCKD_OK)
		return fail("try", w->name, c, rc);
	print_lease(&lease);
	return 0;
}

static int
cmd_renew(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	if (lockd_lease_init(&lease, w->name, w->handle) != LOCKD_OK)
		return usage("renew: bad name or handle");
	if ((rc = lockd_renew(c, &lease, w->lease_ms)) != LOCKD_OK)
		return fail("renew", w->name, c, rc);
	printf("fence=%" PRIu64 " lease=%" PRId64 "\n", lease.fence,
	    lease.lease_ms);
	return 0;
}

static int
cmd_release(lockd_context *c, const struct words *w)
{
	lockd_lease lease;
	int rc;

	if (lockd_lease_init(&lease, w->name, w->handle) != LOCKD_OK)
		return usage("release: bad name or handle");
	rc = lockd_release(c, &lease);
	if (rc != LOCKD_OK && rc != LOCKD_NOTHELD)
		return fail("release", w->name, c, rc);
	puts(rc == LOCKD_OK ? "released" : "notheld");
	return 0;
}

/*
 * STATUS's fields, then owner=, holders=, limit=, mode=shared, delay= and
 * (WATCH's) cause= when they apply, in the reply's order.
 */
static void
print_info(const lockd_lock_info *info, const lockd_lock_holders *holders)
{
	printf("held=%d fence=%" PRIu64 " ttl=%" PRId64 " queue=%" PRIu64,
	    info->held, info->fence, info->ttl_ms, info->queue);
	if (info->owner[0] != '\0')
		printf(" owner=%s", info->owner);
	if (holders->limit > 1 || holders->mode == LOCKD_MODE_SHARED)
		printf(" holders=%" PRIu64, holders->holders);
	if (holders->limit > 1)
		printf(" limit=%u", holders->limit);
	if (holders->mode == LOCKD_MODE_SHARED)
		fputs(" mode=shared", stdout);
	if (info->delay_ms > 0)
		printf(" delay=%" PRId64, info->delay_ms);
	if (info->cause[0] != '\0')
		printf(" cause=%s", info->cause);
	putchar('\n');
}

static int
cmd_status(lockd_context *c, const struct words *w)
{
	lockd_lock_info info;
	lockd_lock_holders holders = { .size = sizeof(holders) };
	int rc;

	if ((rc = lockd_status_holders(c, w->name, &info, &holders)) !=
	    LOCKD_OK)
		return fail("status", w->name, c, rc);
	print_info(&info, &holders);
	return 0;
}

/* The fence argument of force: 1 to 2^63-1. */
static bool
parse_fence(const char *s, uint64_t *fence)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' ||
	    v < 1 || v > (unsigned long long)INT64_MAX)
		return false;
	*fence = (uint64_t)v;
	return true;
}

static int
cmd_force(lockd_context *c, const struct words *w)
{
	uint64_t fence;
	int rc;

	if (!parse_fence(w->handle, &fence))
		return usage("force: FENCE must be 1 to 2^63-1");
	rc = lockd_force(c, w->name, fence);
	if (rc == LOCKD_NOTHELD) {
		fprintf(stderr, "lockctl: %s is not held with fence %" PRIu64
		    "; nothing changed\n", w->name, fence);
		puts("notheld");
		return EXIT_BUSY;
	}
	if (rc != LOCKD_OK)
		return fail("force", w->name, c, rc);
	puts("released");
	return 0;
}

static int
cmd_leader(lockd_context *c, const struct words *w)
{
	lockd_lock_info info;
	int rc;

	if ((rc = lockd_status_info(c, w->name, &info)) != LOCKD_OK)
		return fail("leader", w->name, c, rc);
	if (!info.held) {
		fprintf(stderr, "lockctl: nobody holds %s\n", w->name);
		return EXIT_BUSY;
	}
	/* Held with no label: an empty line, and still success. */
	puts(info.owner);
	return 0;
}

/* watch: WATCH after WATCH, each from the fence the last one saw. */
static int
cmd_watch(lockd_context *c, const struct words *w)
{
	lockd_lock_info info;
	lockd_lock_holders holders = { .size = sizeof(holders) };
	int rc;

	if ((rc = lockd_status_holders(c, w->name, &info, &holders)) !=
	    LOCKD_OK)
		return fail("watch", w->name, c, rc);
	print_info(&info, &holders);
	fflush(stdout);
	for (;;) {
		int64_t fence = (int64_t)info.fence;

		if ((rc = lockd_watch_holders(c, w->name, fence,
		    LOCKD_WAIT_FOREVER, &info, &holders)) != LOCKD_OK)
			return fail("watch", w->name, c, rc);
		print_info(&info, &holders);
		if (fflush(stdout) != 0)
			return EXIT_FAILED;
	}
}

/* list's printing: a table, or JSON objects, as the locks come. */
struct list_out {
	bool json;
	unsigned long count;
};

static void
json_string(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch >= 0x80)
			printf("\\u%04x", ch);  /* names are bytes, not UTF-8 */
		else
			putchar(ch);
	}
	putchar('"');
}

/* The HOLDERS column: "1", "2/3" for a semaphore, "2 shared". */
static void
format_holders(char *out, size_t size, const lockd_lock_holders *holders)
{
	if (holders->limit > 1)
		snprintf(out, size, "%" PRIu64 "/%u", holders->holders,
		    holders->limit);
	else
		snprintf(out, size, "%" PRIu64 "%s", holders->holders,
		    holders->mode == LOCKD_MODE_SHARED ? " shared" : "");
}

static int
list_one(void *arg, const lockd_lock_info *info,
    const lockd_lock_holders *holders)
{
	struct list_out *o = arg;
	char column[40];

	if (o->json) {
		fputs(o->count == 0 ? "[\n  " : ",\n  ", stdout);
		fputs("{\"name\": ", stdout);
		json_string(info->name);
		fputs(", \"owner\": ", stdout);
		if (info->owner[0] != '\0')
			json_string(info->owner);
		else
			fputs("null", stdout);
		printf(", \"held\": %s, \"fence\": %" PRIu64 ", \"ttl_ms\": "
		    "%" PRId64 ", \"queue\": %" PRIu64 ", \"delay_ms\": %"
		    PRId64 ", \"holders\": %" PRIu64 ", \"limit\": %u, "
		    "\"mode\": \"%s\"}", info->held ? "true" : "false",
		    info->fence, info->ttl_ms, info->queue, info->delay_ms,
		    holders->holders, holders->limit,
		    holders->mode == LOCKD_MODE_SHARED ? "shared" :
		    "exclusive");
	} else {
		if (o->count == 0)
			printf("%-32s %-24s %8s %8s %6s %s\n", "NAME",
			    "OWNER", "FENCE", "TTL", "QUEUE", "HOLDERS");
		format_holders(column, sizeof(column), holders);
		printf("%-32s %-24s %8" PRIu64 " %8" PRId64 " %6" PRIu64
		    " %s%s\n", info->name, info->owner[0] != '\0' ?
		    info->owner : "-", info->fence, info->ttl_ms, info->queue,
		    column, info->delay_ms > 0 ? "  (lock-delay)" : "");
	}
	o->count++;
	return 0;
}

/* list: page by page (LIST's limit) until END says no more follow. */
static int
cmd_list(lockd_context *c, const struct words *w)
{
	struct list_out o = { w->json, 0 };
	char after[LOCKD_NAME_MAX + 1] = "", next[LOCKD_NAME_MAX + 1];
	int rc;

	/* Each page is at most 1000 names; a table of a million is a
	 * thousand pages, each bounded by lockd's output cap. */
	for (;;) {
		rc = lockd_list_holders(c, w->name, after, 1000, list_one,
		    &o, next);
		if (rc != LOCKD_OK)
			return fail("list", w->name, c, rc);
		if (next[0] == '\0')
			break;
		memcpy(after, next, sizeof(after));
	}
	if (o.json)
		puts(o.count == 0 ? "[]" : "\n]");
	return 0;
}

static int
cmd_ping(lockd_context *c, const struct words *w)
{
	int rc;

	(void)w;
	if ((rc = lockd_ping(c)) != LOCKD_OK)
		return fail("ping", NULL, c, rc);
	puts("pong");
	return 0;
}

/*
 * The command line.  One option table serves the words before the command
 * and those after `run`, so that flock users may put run's options where
 * they like; run's options given to another command are a usage error.
 */

#define OPT_VERBOSE 256   /* 257..259: word_options above */
#define OPT_CA 270
#define OPT_CERT 271
#define OPT_KEY 272
#define OPT_SERVER_NAME 273
#define OPT_TOKEN_FILE 274
#define OPT_TLS 275

static const char short_options[] = "+H:p:U:t:hnw:E:l:xosuFXN:";

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "host", required_argument, NULL, 'H' },
	{ "port", required_argument, NULL, 'p' },
	{ "unix", required_argument, NULL, 'U' },
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nb", no_argument, NULL, 'n' },
	{ "wait", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'w' },  /* flock's, not -t */
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "lease", required_argument, NULL, 'l' },
	{ "exclusive", no_argument, NULL, 'x' },
	{ "close", no_argument, NULL, 'o' },
	{ "shared", no_argument, NULL, 's' },
	{ "limit", required_argument, NULL, 'N' },
	{ "unlock", no_argument, NULL, 'u' },
	{ "no-fork", no_argument, NULL, 'F' },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "distinct-exit-codes", no_argument, NULL, 'X' },
	{ "owner", required_argument, NULL, OPT_OWNER },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "tls", no_argument, NULL, OPT_TLS },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "server-name", required_argument, NULL, OPT_SERVER_NAME },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ NULL, 0, NULL, 0 },
};

struct cli {
	lockd_options options;
	int64_t timeout_ms;       /* -t */
	bool help;
	/* run's */
	bool no_wait;
	bool has_wait;
	int64_t wait_ms;
	int64_t lease_ms;
	long conflict_code;
	bool distinct_codes;
	bool verbose;
	const char *owner;        /* --owner; NULL: host:pid */
	int64_t delay_ms;         /* --delay */
	bool shared;              /* -s */
	unsigned int limit;       /* -N; 0: one holder */
	int run_option;           /* the first run option seen, or 0 */
};

/*
 * Checks the connecting options against each other and takes the token
 * from $LOCKD_TOKEN when no --token-file is given.  0, or EXIT_USAGE
 * after saying why.
 */
static int
finish_options(struct cli *cli)
{
	const char *token = getenv("LOCKD_TOKEN");

	if (cli->options.unix_path != NULL &&
	    (cli->options.host != NULL || cli->options.port != 0))
		return usage("-U excludes -H and -p");
	if (cli->options.url != NULL &&
	    (cli->options.unix_path != NULL || cli->options.port != 0))
		return usage("-H URL excludes -U and -p");
	if (cli->options.token_file == NULL && token != NULL &&
	    token[0] != '\0')
		cli->options.token = token;
	return 0;
}

/* Reads options from argv[optind]; false (after saying why) on an error. */
static bool
parse_options(int argc, char **argv, struct cli *cli)
{
	long port;
	int ch;

	while ((ch = getopt_long(argc, argv, short_options, long_options,
	    NULL)) != -1) {
		switch (ch) {
		case 'H':
			/* A lockd:// or lockds:// URL, or a host. */
			if (strstr(optarg, "://") != NULL)
				cli->options.url = optarg;
			else
				cli->options.host = optarg;
			continue;
		case OPT_TLS:
			cli->options.tls = 1;
			continue;
		case OPT_CA:
			cli->options.tls_ca_file = optarg;
			continue;
		case OPT_CERT:
			cli->options.tls_cert_file = optarg;
			continue;
		case OPT_KEY:
			cli->options.tls_key_file = optarg;
			continue;
		case OPT_SERVER_NAME:
			cli->options.tls_server_name = optarg;
			continue;
		case OPT_TOKEN_FILE:
			cli->options.token_file = optarg;
			continue;
		case 'p':
			if (!parse_int(optarg, 1, 65535, &port)) {
				usage("-p takes a port 1-65535");
				return false;
			}
			cli->options.port = (int)port;
			continue;
		case 'U':
			cli->options.unix_path = optarg;
			continue;
		case 't':
			if (!parse_duration(optarg, &cli->timeout_ms,
			    "timeout"))
				return false;
			continue;
		case 'h':
			cli->help = true;
			continue;
		case 'u':
			usage("-u: give a lease back with lockctl release");
			return false;
		case 'F':
			usage("-F: lockctl must stay to renew the lease");
			return false;
		case '?':
		case ':':
			usage(NULL);
			return false;
		default:
			break;
		}
		/* The rest are run's. */
		if (cli->run_option == 0)
			cli->run_option = ch;
		switch (ch) {
		case 'n':
			cli->no_wait = true;
			break;
		case 'w':
			/* -w forever: the default, said out loud (leader
			 * election: run -w forever --owner ADDR NAME ...). */
			if (strcmp(optarg, "forever") == 0) {
				cli->has_wait = false;
				break;
			}
			if (!parse_duration(optarg, &cli->wait_ms, "wait"))
				return false;
			cli->has_wait = true;
			break;
		case 'E':
			if (!parse_int(optarg, 0, 255, &cli->conflict_code)) {
				usage("-E takes an exit code 0-255");
				return false;
			}
			break;
		case 'l':
			if (!parse_lease(optarg, &cli->lease_ms))
				return false;
			break;
		case 'X':
			cli->distinct_codes = true;
			break;
		case 's':
			cli->shared = true;
			break;
		case 'x':
			/* As flock(1): the last of -s and -x counts. */
			cli->shared = false;
			break;
		case 'N':
			if (!parse_limit(optarg, &cli->limit)) {
				usage(NULL);
				return false;
			}
			break;
		case OPT_VERBOSE:
			cli->verbose = true;
			break;
		case OPT_OWNER:
			if (!owner_ok(optarg))
				return false;
			cli->owner = optarg;
			break;
		case OPT_DELAY:
			if (!parse_duration(optarg, &cli->delay_ms, "delay"))
				return false;
			break;
		default:
			/* -o: what it asks for is always so. */
			break;
		}
	}
	if (!kind_ok(cli->shared, cli->limit)) {
		usage(NULL);
		return false;
	}
	return true;
}

/*
 * run.  The signal handlers only write the signal's number to a pipe; the
 * loop reads it back and acts, so nothing but write() runs in a handler.
 */

/* What run exits with when the lock could not be had: flock's codes. */
static int
not_had(const struct cli *cli, const char *name, int rc)
{
	if (cli->verbose)
		fprintf(stderr, "lockctl: %s is held%s\n", name,
		    rc == LOCKD_ERR_WAIT_TIMEOUT ? " (the wait ran out)" : "");
	if (rc == LOCKD_ERR_WAIT_TIMEOUT && cli->distinct_codes)
		return EXIT_WAIT_TIMEOUT;
	return (int)cli->conflict_code;
}

/* run, once its command line is read and lockd is connected. */
static int
run_locked(struct run *r, const struct cli *cli, char **command)
{
	lockd_context *c = r->ctx;
	int64_t asked = lockd_now_ms();
	int rc;

	/*
	 * onclose=keep: a restart of lockd closes every connection, and the
	 * lease must outlive that.  The watchdog sees to a lockctl that dies.
	 */
	lockd_acquire_options o;
	lockd_kind k = lock_kind(cli->shared, cli->limit);

	memset(&o, 0, sizeof(o));
	o.lease_ms = cli->lease_ms;
	o.wait_ms = cli->has_wait ? cli->wait_ms : LOCKD_WAIT_FOREVER;
	o.onclose = LOCKD_ONCLOSE_KEEP;
	o.owner = cli->owner != NULL ? cli->owner : default_owner();
	o.delay_ms = cli->delay_ms;
	if (cli->no_wait || (cli->has_wait && cli->wait_ms == 0))
		rc = lockd_try_kind(c, r->name, &o, &k, NULL, &r->lease);
	else
		rc = lockd_acquire_kind(c, r->name, &o, &k, NULL, &r->lease);
	if (rc == LOCKD_HELD || rc == LOCKD_ERR_WAIT_TIMEOUT)
		return not_had(cli, r->name, rc);
	if (rc != LOCKD_OK)
		return fail("acquire", r->name, c, rc);
	if (cli->verbose)
		fprintf(stderr, "lockctl: got %s (fence %" PRIu64 ") after "
		    "%.3f s\n", r->name, r->lease.fence,
		    (double)(lockd_now_ms() - asked) / 1000);
	/*
	 * A grant after a long wait is dated from the ACQUIRE, so little may
	 * seem left of it: renew before the command starts, to date it anew.
	 */
	if (r->lease.deadline_ms - lockd_now_ms() <
	    r->lease.lease_ms * 2 / LOCKD__RENEW_DIVISOR &&
	    (rc = lockd_renew(c, &r->lease, r->lease.lease_ms)) != LOCKD_OK)
		return fail("renew", r->name, c, rc);

	return lockctl_run_command(r, command);
}

static int
cmd_run(struct cli *cli, int argc, char **argv)
{
	struct run r;
	char *shell_command[4];
	char **command;
	int rc;

	optind = 0;
	if (!parse_options(argc, argv, cli))
		return EXIT_USAGE;
	if (cli->help) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc - optind < 2)
		return usage("run: NAME and COMMAND needed");
	memset(&r, 0, sizeof(r));
	r.name = argv[optind++];
	if (strcmp(argv[optind], "-c") == 0 ||
	    strcmp(argv[optind], "--command") == 0) {
		/* flock's -c: exactly one command line, for the shell. */
		if (argc - optind != 2)
			return usage("run: -c takes exactly one command line");
		shell_command[0] = getenv("SHELL");
		if (shell_command[0] == NULL || shell_command[0][0] == '\0')
			shell_command[0] = "/bin/sh";
		shell_command[1] = "-c";
		shell_command[2] = argv[optind + 1];
		shell_command[3] = NULL;
		command = shell_command;
	} else {
		if (strcmp(argv[optind], "--") == 0)
			optind++;
		if (optind >= argc)
			return usage("run: COMMAND needed");
		command = argv + optind;
	}
	if ((rc = finish_options(cli)) != 0)
		return rc;
	cli->options.connect_timeout_ms = cli->timeout_ms;
	cli->options.command_timeout_ms = cli->timeout_ms;
	r.options = cli->options;
	r.watchdog_fd = -1;
	if ((r.ctx = open_context(&r.options, &rc)) == NULL)
		return rc;
	rc = run_locked(&r, cli, command);
	lockd_free(r.ctx);
	return rc;
}

/*
 * nodes: STATS of each endpoint given (-H's list, or the one node), one
 * line each: endpoint=, role= (leader, follower, single for a lockd not in
 * cluster mode, down when it cannot be reached, unknown when STATS was
 * refused), and in cluster mode the leader it knows and how etcd answers
 * it.  Exits 0 when a node leads (or a single node answers), 69 when
 * none does (as a NOTLEADER everywhere would), 70 when none was seen to
 * lead and some refused STATS.
 */

/* The value of key= among STATS's words, into out ("" when absent). */
static void
stats_word(const char *stats, const char *key, char *out, size_t size)
{
	size_t klen = strlen(key), len;
	const char *p = stats;

	out[0] = '\0';
	while ((p = strstr(p, key)) != NULL) {
		if ((p == stats || p[-1] == ' ') && p[klen] == '=') {
			p += klen + 1;
			len = strcspn(p, " \r\n");
			snprintf(out, size, "%.*s", (int)len, p);
			return;
		}
		p += klen;
	}
}

/* One node's line; true when it leads (or is a single lockd). */
static bool
node_line(const lockd_options *o, const char *endpoint, bool *refused)
{
	char stats[LOCKD_STATS_MAX], role[32], leader[300], etcd[32];
	lockd_context *c = lockd_connect(o);
	int rc = c == NULL ? LOCKD_ERR_OOM : c->err;

	if (rc == 0)
		rc = lockd_stats(c, stats, sizeof(stats));
	if (rc != LOCKD_OK) {
		fprintf(stderr, "lockctl: %s: %s\n", endpoint, c == NULL ?
		    "out of memory" : c->errstr);
		printf("endpoint=%s role=%s\n", endpoint,
		    lockd_error_is_fatal(rc) || rc == LOCKD_ERR_SHUTDOWN ?
		    "down" : "unknown");
		if (rc == LOCKD_ERR_DENIED)
			*refused = true;
		lockd_free(c);
		return false;
	}
	lockd_free(c);
	stats_word(stats, "role", role, sizeof(role));
	if (role[0] == '\0') {
		printf("endpoint=%s role=single\n", endpoint);
		return true;
	}
	stats_word(stats, "leader", leader, sizeof(leader));
	stats_word(stats, "etcd", etcd, sizeof(etcd));
	printf("endpoint=%s role=%s leader=%s etcd=%s\n", endpoint, role,
	    leader[0] != '\0' ? leader : "none", etcd[0] != '\0' ? etcd :
	    "unknown");
	return strcmp(role, "leader") == 0;
}

static int
cmd_nodes(const struct cli *cli, int argc)
{
	const char *all = cli->options.url != NULL ? cli->options.url :
	    cli->options.host;
	char item[300];
	const char *p, *comma;
	lockd_options o;
	bool led = false, refused = false;
	size_t len;

	if (argc != 1)
		return usage("nodes takes no words: give the nodes with -H");
	o = cli->options;
	if (all == NULL || cli->options.unix_path != NULL) {
		/* One node: -U, or the default host and -p's port. */
		if (cli->options.unix_path == NULL)
			snprintf(item, sizeof(item), "%s:%d",
			    LOCKD_DEFAULT_HOST, cli->options.port > 0 ?
			    cli->options.port : LOCKD_DEFAULT_PORT);
		led = node_line(&o, cli->options.unix_path != NULL ?
		    cli->options.unix_path : item, &refused);
	} else {
		for (p = all; ; p = comma + 1) {
			comma = strchr(p, ',');
			len = comma != NULL ? (size_t)(comma - p) : strlen(p);
			if (len == 0 || len >= sizeof(item))
				return usage("nodes: a bad -H list");
			memcpy(item, p, len);
			item[len] = '\0';
			if (cli->options.url != NULL)
				o.url = item;
			else
				o.host = item;
			if (node_line(&o, item, &refused))
				led = true;
			if (comma == NULL)
				break;
		}
	}
	if (led)
		return 0;
	fprintf(stderr, "lockctl: no node leads%s\n", refused ?
	    " that lockctl could see (STATS was refused)" : "");
	return refused ? EXIT_FAILED : EXIT_UNREACHABLE;
}

struct command {
	const char *name;
	const char *optstring;
	int nargs;
	const char *synopsis;
	int (*run)(lockd_context *c, const struct words *w);
};

static const struct command commands[] = {
	{ "acquire", "+w:l:OsN:", 1, "acquire [-w WAIT] [-l LEASE] [-s] "
	  "[-N LIMIT] [--owner LABEL] [--delay D] [--rid ID] NAME",
	  cmd_acquire },
	{ "try", "+l:OsN:", 1, "try [-l LEASE] [-s] [-N LIMIT] "
	  "[--owner LABEL] [--delay D] [--rid ID] NAME", cmd_try },
	{ "renew", "+l:", 2, "renew [-l LEASE] NAME HANDLE", cmd_renew },
	{ "release", "+", 2, "release NAME HANDLE", cmd_release },
	{ "status", "+", 1, "status NAME", cmd_status },
	{ "list", "+j", -1, "list [--json] [PREFIX]", cmd_list },
	{ "force", "+", 2, "force NAME FENCE", cmd_force },
	{ "watch", "+", 1, "watch NAME", cmd_watch },
	{ "leader", "+", 1, "leader NAME", cmd_leader },
	{ "ping", "+", 0, "ping", cmd_ping },
};

int
main(int argc, char **argv)
{
	struct cli cli;
	const struct command *cmd = NULL;
	struct words w;
	lockd_context *c;
	size_t i;
	int rc;

	memset(&cli, 0, sizeof(cli));
	cli.timeout_ms = DEFAULT_TIMEOUT_MS;
	cli.conflict_code = EXIT_BUSY;
	if (!parse_options(argc, argv, &cli))
		return EXIT_USAGE;
	if (cli.help) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (optind >= argc)
		return usage("no command given");
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "run") == 0)
		return cmd_run(&cli, argc, argv);
	if (cli.run_option != 0) {
		fprintf(stderr, "lockctl: -%c before the command is for run "
		    "only\n", cli.run_option < 128 ? cli.run_option : '-');
		return usage(NULL);
	}
	if ((rc = finish_options(&cli)) != 0)
		return rc;
	cli.options.connect_timeout_ms = cli.timeout_ms;
	cli.options.command_timeout_ms = cli.timeout_ms;
	if (strcmp(argv[0], "nodes") == 0) {
		rc = cmd_nodes(&cli, argc);
		if (fflush(stdout) != 0 && rc == 0)
			rc = EXIT_FAILED;
		return rc;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[0], commands[i].name) == 0)
			cmd = &commands[i];
	if (cmd == NULL) {
		fprintf(stderr, "lockctl: unknown command '%s'\n",
		    shown(argv[0]));
		return usage(NULL);
	}
	if (!parse_words(argc, argv, cmd->optstring, cmd->nargs, &w)) {
		fprintf(stderr, "lockctl: usage: lockctl [...] %s\n",
		    cmd->synopsis);
		return EXIT_USAGE;
	}
	if ((c = open_context(&cli.options, &rc)) == NULL)
		return rc;
	rc = cmd->run(c, &w);
	lockd_free(c);
	if (fflush(stdout) != 0 && rc == 0)
		rc = EXIT_FAILED;
	return rc;
}
