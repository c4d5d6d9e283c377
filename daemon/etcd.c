/*
 * etcd.c - the client of etcd's v3 JSON gateway (etcd.h).  libcurl's
 * multi interface does the HTTP; libuv tells it when its sockets are ready
 * (a uv_poll_t per socket) and when its timeout is due (one uv_timer_t),
 * the way curl's own multi-uv example does.  JSON is jansson's, base64 is
 * OpenSSL's.  It knows nothing of locks: the etcd store and leadership
 * build their requests and read the replies.
 *
 * With etcd_secure it speaks TLS (curl's OpenSSL, the peer always
 * verified) and etcd's user/password auth: a token from
 * /v3/auth/authenticate in the Authorization header of every request.  A
 * request that needs a token while there is none waits in `waiting` for
 * the one authentication in flight; one that etcd refuses for its token
 * (expired: etcd 3.4's simple tokens end after --auth-token-ttl without
 * a request, each member counting from the last request it saw, so a
 * token busy at one member may have expired at the next one tried) is
 * sent once more with a fresh token.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "core/list.h"
#include "daemon/etcd.h"
#include "daemon/log.h"

/* The largest reply kept: a page of the load is a few hundred KB. */
#define ETCD_REPLY_MAX (64u << 20)
/* Connecting is quick on a network that works; a dead endpoint should not
 * use up the whole deadline before the next one is tried. */
#define ETCD_CONNECT_TIMEOUT_MS 1000L

struct buffer {
	char *data;
	size_t len, cap;
};

struct etcd {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	uv_timer_t drain_timer;   /* a transfer that ended in etcd_request */
	char urls[ETCD_URLS_MAX][ETCD_URL_MAX];
	int nurls;
	int current;              /* the endpoint requests go to */
	struct core_link requests;
	struct core_link sockets;
	int handles;              /* libuv handles not yet closed */
	bool closing;             /* off the loop: synchronous calls only */
	bool freeing;             /* freed once its handles are closed */
	/* TLS (etcd_secure): files, "" for none. */
	bool tls;
	char ca_file[4096], cert_file[4096], key_file[4096];
	/* etcd's auth: user "" = none. */
	char user[ETCD_USER_MAX];
	char password_file[4096];
	char password[ETCD_PASSWORD_MAX];
	char token[ETCD_TOKEN_MAX];   /* "" = none yet */
	uint64_t token_generation;    /* counts the tokens had */
	bool auth_off;                /* etcd said auth is not enabled */
	bool authenticating;          /* an authentication is in flight */
	uint64_t auth_failed_at;      /* ms (uv_hrtime) of the last failure */
	char auth_error[512];         /* "" = all is well */
	bool auth_refused;            /* ...and etcd answered it: a refusal */
	struct core_link waiting;     /* requests waiting for a token */
	uv_timer_t auth_timer;        /* the next authentication, held back */
	uv_signal_t sighup;           /* re-reads the password file */
	uint64_t reloaded_at;         /* ms (uv_hrtime) of the last SIGHUP */
	bool secured;                 /* auth_timer and sighup are open */
	bool answered;                /* etcd has answered a request */
};

struct request {
	struct core_link link;
	struct etcd *etcd;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	struct buffer reply;
	int url;                  /* the endpoint it went to */
	char path[64];
	long timeout_ms;
	bool is_auth;             /* the authentication itself */
	bool retried;             /* sent again once for its token */
	uint64_t token_generation;  /* of the token it was sent with */
	etcd_done_fn done;
	void *ctx;
	char curl_error[CURL_ERROR_SIZE];
};

/*
 * One of curl's sockets, from its first transfer to its close (curl tells
 * on_close_socket).  Between transfers it stays in the loop, polled for
 * what the last transfer wanted: a kept-alive connection's next request
 * then costs the loop no epoll_ctl at all.  An event on it while no
 * transfer has it (etcd closing an idle connection) stops the poll; curl
 * finds the connection dead when it next tries it.
 */
struct socket {
	uv_poll_t poll;           /* first: libuv hands back this pointer */
	struct core_link link;
	struct etcd *etcd;
	curl_socket_t fd;
	int events;               /* polled for: UV_READABLE, UV_WRITABLE */
	bool in_transfer;         /* curl has it (not CURL_POLL_REMOVE) */
};

static bool curl_ready;

/* ---- bytes and numbers ------------------------------------------------ */

size_t
etcd_base64(const void *data, size_t len, char *out)
{
	return (size_t)EVP_EncodeBlock((unsigned char *)out, data, (int)len);
}

json_t *
etcd_bytes(const void *data, size_t len)
{
	char *text = malloc(ETCD_BASE64_LEN(len) + 1);
	json_t *s;

	if (text == NULL)
		return NULL;
	etcd_base64(data, len, text);
	s = json_string(text);
	free(text);
	return s;
}

int
etcd_field_bytes(const json_t *obj, const char *field, bool empty_ok,
    void *buf, size_t cap, size_t *len)
{
	const char *text = json_string_value(json_object_get(obj, field));
	unsigned char *out;
	size_t n, pad = 0;
	int got;

	if (text == NULL) {
		*len = 0;
		return empty_ok ? 0 : -1;
	}
	n = strlen(text);
	if (n % 4 != 0)
		return -1;
	if (n > 0 && text[n - 1] == '=')
		pad++;
	if (n > 1 && text[n - 2] == '=')
		pad++;
	if (n / 4 * 3 - pad > cap)
		return -1;
	if ((out = malloc(n / 4 * 3 + 1)) == NULL)
		return -1;
	got = EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
	if (got < 0 || (size_t)got != n / 4 * 3) {
		free(out);
		return -1;
	}
	*len = (size_t)got - pad;
	memcpy(buf, out, *len);
	free(out);
	return 0;
}

int64_t
etcd_field_int(const json_t *obj, const char *field)
{
	const json_t *v = json_object_get(obj, field);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

size_t
etcd_prefix_end(const char *prefix, size_t len, char *out)
{
	memcpy(out, prefix, len);
	/* A prefix ends in '/' or a letter here, never in 0xff. */
	out[len - 1] = (char)(out[len - 1] + 1);
	return len;
}

/* ---- requests --------------------------------------------------------- */

static size_t
on_data(char *data, size_t size, size_t n, void *userp)
{
	struct buffer *b = userp;
	size_t add = size * n;

	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;
		while (cap < b->len + add + 1)
			cap *= 2;
		if (cap > ETCD_REPLY_MAX || (p = realloc(b->data, cap)) == NULL)
			return 0;   /* curl ends the transfer: CURLE_WRITE_ERROR */
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

/* Sets up easy for one POST of body to url + path. */
static int
easy_setup(CURL *easy, const char *url, const char *path, const char *body,
    struct curl_slist *headers, struct buffer *reply, char *curl_error,
    long timeout_ms)
{
	char full[ETCD_URL_MAX + 64];

	snprintf(full, sizeof(full), "%s%s", url, path);
	if (curl_easy_setopt(easy, CURLOPT_URL, full) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data) !=
	    CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_WRITEDATA, reply) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_error) !=
	    CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms) !=
	    CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
	    timeout_ms < ETCD_CONNECT_TIMEOUT_MS ? timeout_ms :
	    ETCD_CONNECT_TIMEOUT_MS) != CURLE_OK)
		return -1;
	curl_error[0] = '\0';
	return 0;
}

static uint64_t now_ms(void);

/*
 * TLS for https:// endpoints: the peer and its name (or IP) are always
 * verified, against ca_file or else the system's CAs; the CA file is read
 * for every new connection (no cache), as curl reads the client
 * certificate and key, so a replaced file counts from the next connection.
 * After a SIGHUP no connection older than it is used again: the next
 * request connects anew, with the files as they are now.
 */
static int
easy_secure(const struct etcd *etcd, CURL *easy)
{
	if (!etcd->tls)
		return 0;
#if LIBCURL_VERSION_NUM >= 0x075000
	if (etcd->reloaded_at != 0) {
		/* curl counts a connection's age in whole seconds. */
		uint64_t since = (now_ms() - etcd->reloaded_at) / 1000;
		(void)curl_easy_setopt(easy, CURLOPT_MAXLIFETIME_CONN,
		    (long)(since > 0 ? since : 1));
		if (since == 0)
			(void)curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT,
			    1L);
	}
#endif
	if (curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_SSLVERSION,
	    (long)CURL_SSLVERSION_TLSv1_2) != CURLE_OK)
		return -1;
#if LIBCURL_VERSION_NUM >= 0x075700
	(void)curl_easy_setopt(easy, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	if (etcd->ca_file[0] != '\0' &&
	    curl_easy_setopt(easy, CURLOPT_CAINFO, etcd->ca_file) != CURLE_OK)
		return -1;
	if (etcd->cert_file[0] != '\0' &&
	    (curl_easy_setopt(easy, CURLOPT_SSLCERT, etcd->cert_file) !=
	    CURLE_OK ||
	    curl_easy_setopt(easy, CURLOPT_SSLKEY, etcd->key_file) !=
	    CURLE_OK))
		return -1;
	return 0;
}

/* Content-Type, and no "Expect: 100-continue", which curl would send for
 * a body over 1 KB and then wait a second for an answer etcd never gives. */
static struct curl_slist *
json_headers(void)
{
	struct curl_slist *h = curl_slist_append(NULL,
	    "Content-Type: application/json");
	struct curl_slist *h2;

	if (h == NULL)
		return NULL;
	if ((h2 = curl_slist_append(h, "Expect:")) == NULL) {
		curl_slist_free_all(h);
		return NULL;
	}
	return h2;
}

/* The same, and the token when there is one (etcd's gateway takes it bare
 * in Authorization, as its own clients send it in gRPC's metadata). */
static struct curl_slist *
request_headers(const char *token)
{
	char line[ETCD_TOKEN_MAX + 32];
	struct curl_slist *h = json_headers(), *h2;

	if (h == NULL || token == NULL || token[0] == '\0')
		return h;
	snprintf(line, sizeof(line), "Authorization: %s", token);
	if ((h2 = curl_slist_append(h, line)) == NULL) {
		curl_slist_free_all(h);
		return NULL;
	}
	return h2;
}

/*
 * What a finished transfer came to.  The gateway puts the reason of a
 * refusal in the body's "error" or "message".
 */
static enum etcd_result
classify(CURL *easy, CURLcode code, const char *curl_error,
    struct buffer *reply, json_t **parsed, char *err, size_t err_len)
{
	long http = 0;
	json_error_t jerr;
	json_t *body;
	const char *why;

	*parsed = NULL;
	if (code != CURLE_OK) {
		snprintf(err, err_len, "%s", curl_error[0] != '\0' ?
		    curl_error : curl_easy_strerror(code));
		return ETCD_UNKNOWN;
	}
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
	/* A stream's answer (lease keep-alive) may hold more than one
	 * object, a line each: the first is the one asked for. */
	body = reply->data != NULL ? json_loadb(reply->data, reply->len,
	    JSON_DISABLE_EOF_CHECK, &jerr) : NULL;
	if (http == 200 && json_is_object(body)) {
		*parsed = body;
		return ETCD_OK;
	}
	why = json_string_value(json_object_get(body, "error"));
	if (why == NULL)
		why = json_string_value(json_object_get(body, "message"));
	if (why == NULL && body == NULL && http != 200 &&
	    reply->data != NULL && reply->len > 0) {
		/* A plain-text refusal: its first line says why (etcd's
		 * gateway refuses a client certificate with a CommonName
		 * so). */
		int n = (int)strcspn(reply->data, "\r\n");
		snprintf(err, err_len, "HTTP %ld: %.*s", http, n < 200 ? n :
		    200, reply->data);
		return http >= 400 && http < 500 ? ETCD_REFUSED :
		    ETCD_UNKNOWN;
	}
	snprintf(err, err_len, "HTTP %ld: %s", http, why != NULL ? why :
	    http == 200 ? "reply is not a JSON object" : "no reason given");
	json_decref(body);
	return http >= 400 && http < 500 ? ETCD_REFUSED : ETCD_UNKNOWN;
}

/*
 * etcd with --client-cert-auth drops a TLS 1.3 client without a
 * certificate after curl thinks the handshake done: curl then reports a
 * failed send or receive, or a socket gone.  Until etcd has answered
 * once, says what is likely.
 */
static void
tls_hint(struct etcd *etcd, CURLcode code, char *err, size_t err_len)
{
	size_t len;

	/* err is written only when the transfer failed. */
	if (code == CURLE_OK)
		etcd->answered = true;
	if (code == CURLE_OK || !etcd->tls || etcd->cert_file[0] != '\0' ||
	    etcd->answered)
		return;
	len = strlen(err);
	if (code == CURLE_SSL_CONNECT_ERROR || code == CURLE_SEND_ERROR ||
	    code == CURLE_RECV_ERROR || strstr(err, "getpeername") != NULL)
		snprintf(err + len, err_len - len, " (etcd dropped the TLS "
		    "connection: does it want a client certificate? "
		    "--etcd-cert, --etcd-key)");
}

static void
request_free(struct request *r)
{
	link_remove(&r->link);
	if (r->easy != NULL) {
		if (r->etcd->multi != NULL)
			curl_multi_remove_handle(r->etcd->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->headers);
	free(r->body);
	free(r->reply.data);
	free(r);
}

/* ---- etcd's auth ------------------------------------------------------ */

static uint64_t
now_ms(void)
{
	return uv_hrtime() / 1000000;
}

/* Does this client authenticate, and has it no token to send? */
static bool
needs_token(const struct etcd *etcd)
{
	return etcd->user[0] != '\0' && !etcd->auth_off &&
	    etcd->token[0] == '\0';
}

/*
 * A refusal that a fresh token mends: the token expired at the member
 * asked ("invalid auth token"), the auth store moved on under it
 * ("revision of auth store is old"), or none was sent while etcd wants
 * one ("user name is empty").  etcd checks all three before it proposes
 * anything, so the request did nothing and may go again.
 */
static bool
token_trouble(const char *error)
{
	return strstr(error, "invalid auth token") != NULL ||
	    strstr(error, "auth store is old") != NULL ||
	    strstr(error, "user name is empty") != NULL;
}

/* A refusal of the user itself: wrong password, or no permission. */
static bool
auth_trouble(const char *error)
{
	return strstr(error, "authentication failed") != NULL ||
	    strstr(error, "permission denied") != NULL ||
	    strstr(error, "etcdserver: user name not found") != NULL;
}

/* Logs a new trouble once, not each retry.  refused: etcd answered and
 * said no (else the authentication got no answer, a TLS failure say). */
static void
auth_failed(struct etcd *etcd, const char *why, bool refused)
{
	if (strcmp(etcd->auth_error, why) != 0)
		log_event(LOG_ERROR, "etcd_auth_error", "user=%s error=\"%s\"",
		    etcd->user, why);
	snprintf(etcd->auth_error, sizeof(etcd->auth_error), "%.500s", why);
	etcd->auth_refused = refused;
}

/* A request refused for the user's permissions. */
static void
auth_refused(struct etcd *etcd, const char *error)
{
	char why[600];

	snprintf(why, sizeof(why), "etcd refused user %s: %.200s%s",
	    etcd->user, error, strstr(error, "permission denied") != NULL ?
	    " (its role needs readwrite on the cluster's prefix, "
	    "/lockd/<cluster>/)" : "");
	auth_failed(etcd, why, true);
}

/* etcd has auth on, and this client has no user to give. */
static void
no_user(struct etcd *etcd, const char *error)
{
	char why[600];

	snprintf(why, sizeof(why), "etcd has authentication on: give "
	    "--etcd-user and --etcd-password-file (%.200s)", error);
	auth_failed(etcd, why, true);
}

static void
auth_ok(struct etcd *etcd)
{
	if (etcd->auth_error[0] != '\0')
		log_event(LOG_INFO, "etcd_auth_ok", "user=%s", etcd->user);
	etcd->auth_error[0] = '\0';
	etcd->auth_refused = false;
}

const char *
etcd_auth_error(const struct etcd *etcd)
{
	return etcd->auth_error[0] != '\0' ? etcd->auth_error : NULL;
}

bool
etcd_auth_refused(const struct etcd *etcd)
{
	return etcd->auth_error[0] != '\0' && etcd->auth_refused;
}

/*
 * The body of /v3/auth/authenticate's answer: keeps the token, or says
 * why not.  Returns 0, 1 when etcd has no auth on (no token then), or -1.
 */
static int
take_token(struct etcd *etcd, enum etcd_result result, json_t *reply,
    const char *error, char *why, size_t why_len)
{
	const char *token = json_string_value(json_object_get(reply,
	    "token"));
	size_t i, n;

	if (result == ETCD_REFUSED &&
	    strstr(error, "authentication is not enabled") != NULL) {
		if (!etcd->auth_off)
			log_event(LOG_WARN, "etcd_auth_off", "user=%s msg=\""
			    "etcd has authentication off: requests go without "
			    "a token\"", etcd->user);
		etcd->auth_off = true;
		return 1;
	}
	if (result != ETCD_OK) {
		snprintf(why, why_len, "etcd authentication as %s failed: "
		    "%.200s%s", etcd->user, error, strstr(error, "CommonName")
		    != NULL ? " (etcd's gateway takes client certificates "
		    "without a CN)" : "");
		return -1;
	}
	n = token != NULL ? strlen(token) : 0;
	for (i = 0; i < n; i++)
		if (token[i] <= ' ' || token[i] == 0x7f)
			break;
	if (n == 0 || n >= sizeof(etcd->token) || i < n) {
		snprintf(why, why_len, "etcd authentication as %s: no usable "
		    "token in the answer", etcd->user);
		return -1;
	}
	memcpy(etcd->token, token, n + 1);
	etcd->token_generation++;
	return 0;
}

static int request_send(struct request *r);
static void auth_start(struct etcd *etcd);
static int on_close_socket(void *clientp, curl_socket_t fd);
static void kick(struct etcd *etcd);

/* The body of /v3/auth/authenticate (the caller frees it), or NULL. */
static char *
credentials_json(const struct etcd *etcd)
{
	json_t *obj = json_pack("{s:s,s:s}", "name", etcd->user, "password",
	    etcd->password);
	char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;

	json_decref(obj);
	return text;
}

/*
 * Ends a request that never went out for want of a token.  Nothing was
 * done, yet it counts as ETCD_UNKNOWN, as does a request etcd refuses for
 * the user's credentials: a caller that met ETCD_REFUSED would read etcd
 * to see where it stands, and cannot with these credentials; with
 * ETCD_UNKNOWN the store gives up on the batch and the node starts over
 * from etcd once it can (store_etcd.c, leader.c).
 */
static void
request_refuse(struct request *r, const char *why)
{
	link_remove(&r->link);
	r->done(r->ctx, ETCD_UNKNOWN, NULL, why);
	request_free(r);
}

/* Every waiting request goes out now, or is refused with why. */
static void
release_waiting(struct etcd *etcd, const char *why)
{
	struct core_link list, *l, *next;

	/* Callbacks may add requests: they wait for the next turn. */
	link_init(&list);
	if (!link_empty(&etcd->waiting)) {
		list = etcd->waiting;
		list.next->prev = &list;
		list.prev->next = &list;
		link_init(&etcd->waiting);
	}
	while (!link_empty(&list) && !etcd->closing) {
		struct request *r = container_of(list.next, struct request,
		    link);
		link_remove(&r->link);
		if (why != NULL)
			request_refuse(r, why);
		else if (request_send(r) != 0)
			request_refuse(r, "cannot send the request to etcd");
	}
	for (l = list.next; l != &list; l = next) {
		next = l->next;
		request_free(container_of(l, struct request, link));
	}
}

static void
on_authenticated(void *ctx, enum etcd_result result, json_t *reply,
    const char *error)
{
	struct etcd *etcd = ctx;
	char why[300];

	etcd->authenticating = false;
	if (take_token(etcd, result, reply, error, why, sizeof(why)) < 0) {
		etcd->auth_failed_at = now_ms();
		auth_failed(etcd, why, result != ETCD_UNKNOWN);
		release_waiting(etcd, why);
		return;
	}
	release_waiting(etcd, NULL);
}

static void
on_auth_timer(uv_timer_t *t)
{
	auth_start(t->data);
}

/* One authentication at a time, at most one per ETCD_AUTH_RETRY_MS
 * after a failure. */
static void
auth_start(struct etcd *etcd)
{
	uint64_t now = now_ms(), next = etcd->auth_failed_at +
	    ETCD_AUTH_RETRY_MS;
	struct request *r;

	if (etcd->authenticating || etcd->closing)
		return;
	if (etcd->auth_failed_at != 0 && now < next) {
		uv_timer_start(&etcd->auth_timer, on_auth_timer, next - now, 0);
		return;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		release_waiting(etcd, "out of memory");
		return;
	}
	r->etcd = etcd;
	r->done = on_authenticated;
	r->ctx = etcd;
	r->is_auth = true;
	r->timeout_ms = ETCD_CONNECT_TIMEOUT_MS * 2;
	link_init(&r->link);
	snprintf(r->path, sizeof(r->path), "/v3/auth/authenticate");
	r->body = credentials_json(etcd);
	etcd->authenticating = true;
	log_event(LOG_DEBUG, "etcd_authenticate", "user=%s", etcd->user);
	if (r->body == NULL || request_send(r) != 0) {
		request_free(r);
		etcd->authenticating = false;
		etcd->auth_failed_at = now;
		release_waiting(etcd, "cannot send the authentication to etcd");
	}
}

/* ---- requests on the loop --------------------------------------------- */

/*
 * Sends r (again): to the current endpoint, with the current token - or
 * into `waiting` until there is one.  0, or -1 when it cannot go out.
 */
static int
request_send(struct request *r)
{
	struct etcd *etcd = r->etcd;

	if (!r->is_auth && needs_token(etcd)) {
		link_append(&etcd->waiting, &r->link);
		auth_start(etcd);
		return 0;
	}
	if (r->easy != NULL)
		curl_multi_remove_handle(etcd->multi, r->easy);
	else if ((r->easy = curl_easy_init()) == NULL)
		return -1;
	curl_slist_free_all(r->headers);
	r->headers = request_headers(r->is_auth || etcd->auth_off ? NULL :
	    etcd->token);
	r->token_generation = etcd->token_generation;
	r->reply.len = 0;
	r->url = etcd->current;
	if (r->headers == NULL ||
	    easy_setup(r->easy, etcd->urls[r->url], r->path, r->body,
	    r->headers, &r->reply, r->curl_error, r->timeout_ms) != 0 ||
	    easy_secure(etcd, r->easy) != 0 ||
	    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r) != CURLE_OK ||
	    curl_easy_setopt(r->easy, CURLOPT_CLOSESOCKETFUNCTION,
	    on_close_socket) != CURLE_OK ||
	    curl_easy_setopt(r->easy, CURLOPT_CLOSESOCKETDATA, etcd) !=
	    CURLE_OK)
		return -1;
	if (curl_multi_add_handle(etcd->multi, r->easy) != CURLM_OK) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		return -1;
	}
	link_append(&etcd->requests, &r->link);
	kick(etcd);
	return 0;
}

static void
request_finish(struct request *r, CURLcode code)
{
	struct etcd *etcd = r->etcd;
	enum etcd_result result;
	char err[512] = "";
	json_t *reply;

	result = classify(r->easy, code, r->curl_error, &r->reply, &reply,
	    err, sizeof(err));
	tls_hint(etcd, code, err, sizeof(err));
	if (code != CURLE_OK && etcd->current == r->url)
		etcd->current = (etcd->current + 1) % etcd->nurls;
	/* Out of the lists before the callback, which may close the client. */
	link_remove(&r->link);
	link_init(&r->link);
	if (!r->is_auth && etcd->user[0] != '\0') {
		if (result == ETCD_REFUSED && token_trouble(err) &&
		    !r->retried) {
			/* Once, with a fresh token (unless another request
			 * has got one meanwhile). */
			r->retried = true;
			if (r->token_generation == etcd->token_generation) {
				etcd->token[0] = '\0';
				etcd->auth_off = false;
				log_event(LOG_INFO, "etcd_token_renew",
				    "user=%s reason=\"%.200s\"", etcd->user,
				    err);
			}
			if (request_send(r) == 0)
				return;
			result = ETCD_UNKNOWN;   /* as request_refuse says */
		} else if (result == ETCD_REFUSED && (auth_trouble(err) ||
		    token_trouble(err))) {
			auth_refused(etcd, err);
			result = ETCD_UNKNOWN;   /* as request_refuse says */
		} else if (result == ETCD_OK) {
			auth_ok(etcd);
		}
	} else if (!r->is_auth && result == ETCD_REFUSED &&
	    (auth_trouble(err) || token_trouble(err))) {
		no_user(etcd, err);
		result = ETCD_UNKNOWN;
	} else if (!r->is_auth && result == ETCD_OK) {
		auth_ok(etcd);
	}
	r->done(r->ctx, result, reply, err);
	json_decref(reply);
	request_free(r);
}

/* Every finished transfer, once curl has moved. */
static void
drain(struct etcd *etcd)
{
	CURLMsg *msg;
	int left;

	while (!etcd->closing &&
	    (msg = curl_multi_info_read(etcd->multi, &left)) != NULL) {
		struct request *r;
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
		    (char **)&r);
		request_finish(r, msg->data.result);
	}
}

int
etcd_request(struct etcd *etcd, const char *path, json_t *body,
    long timeout_ms, etcd_done_fn done, void *ctx)
{
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	return etcd_request_text(etcd, path, text, timeout_ms, done, ctx);
}

int
etcd_request_text(struct etcd *etcd, const char *path, char *body,
    long timeout_ms, etcd_done_fn done, void *ctx)
{
	struct request *r = body != NULL ? calloc(1, sizeof(*r)) : NULL;

	if (r == NULL || etcd->loop == NULL || etcd->closing ||
	    strlen(path) >= sizeof(r->path)) {
		free(r);
		free(body);
		return -1;
	}
	r->etcd = etcd;
	r->done = done;
	r->ctx = ctx;
	r->timeout_ms = timeout_ms;
	link_init(&r->link);
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->body = body;
	if (request_send(r) != 0) {
		request_free(r);
		return -1;
	}
	return 0;
}

/* ---- blocking requests ------------------------------------------------- */

/* One POST to the current endpoint, with the token unless bare. */
static enum etcd_result
sync_once(struct etcd *etcd, CURL *easy, const char *path, const char *text,
    bool bare, long timeout_ms, json_t **reply, CURLcode *code, char *err,
    size_t err_len)
{
	char curl_error[CURL_ERROR_SIZE];
	struct curl_slist *headers = request_headers(bare || etcd->auth_off ?
	    NULL : etcd->token);
	struct buffer buf = { NULL, 0, 0 };
	enum etcd_result result = ETCD_UNKNOWN;
	int url = etcd->current;

	*code = CURLE_FAILED_INIT;
	snprintf(err, err_len, "out of memory");
	curl_easy_reset(easy);
	if (headers != NULL && easy_setup(easy, etcd->urls[url], path, text,
	    headers, &buf, curl_error, timeout_ms) == 0 &&
	    easy_secure(etcd, easy) == 0) {
		*code = curl_easy_perform(easy);
		result = classify(easy, *code, curl_error, &buf, reply, err,
		    err_len);
		tls_hint(etcd, *code, err, err_len);
	}
	free(buf.data);
	curl_slist_free_all(headers);
	if (*code != CURLE_OK && etcd->current == url)
		etcd->current = (etcd->current + 1) % etcd->nurls;
	return result;
}

/* Gets a token, blocking; 0, or -1 with why in err. */
static int
sync_authenticate(struct etcd *etcd, CURL *easy, long timeout_ms, char *err,
    size_t err_len)
{
	char *text;
	json_t *reply = NULL;
	enum etcd_result result;
	CURLcode code;
	char error[512];
	int rc;

	if (etcd->auth_failed_at != 0 &&
	    now_ms() < etcd->auth_failed_at + ETCD_AUTH_RETRY_MS) {
		snprintf(err, err_len, "%s", etcd->auth_error[0] != '\0' ?
		    etcd->auth_error : "etcd authentication failed just now");
		return -1;
	}
	text = credentials_json(etcd);
	log_event(LOG_DEBUG, "etcd_authenticate", "user=%s", etcd->user);
	if (text == NULL) {
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	result = sync_once(etcd, easy, "/v3/auth/authenticate", text, true,
	    timeout_ms, &reply, &code, error, sizeof(error));
	free(text);
	rc = take_token(etcd, result, reply, error, err, err_len);
	json_decref(reply);
	if (rc < 0) {
		etcd->auth_failed_at = now_ms();
		auth_failed(etcd, err, result != ETCD_UNKNOWN);
		return -1;
	}
	return 0;
}

enum etcd_result
etcd_request_sync(struct etcd *etcd, const char *path, json_t *body,
    long timeout_ms, json_t **reply, char *err, size_t err_len)
{
	char *text = json_dumps(body, JSON_COMPACT);

	json_decref(body);
	return etcd_request_sync_text(etcd, path, text, timeout_ms, reply,
	    err, err_len);
}

enum etcd_result
etcd_request_sync_text(struct etcd *etcd, const char *path, char *text,
    long timeout_ms, json_t **reply, char *err, size_t err_len)
{
	enum etcd_result result = ETCD_UNKNOWN;
	CURL *easy = curl_easy_init();
	bool retried = false;
	int tries;

	*reply = NULL;
	snprintf(err, err_len, "out of memory");
	for (tries = 0; text != NULL && easy != NULL &&
	    tries < etcd->nurls; tries++) {
		uint64_t generation = etcd->token_generation;
		CURLcode code;

		if (needs_token(etcd) && sync_authenticate(etcd, easy,
		    timeout_ms, err, err_len) != 0) {
			result = ETCD_UNKNOWN;   /* as request_refuse says */
			break;
		}
		result = sync_once(etcd, easy, path, text, false, timeout_ms,
		    reply, &code, err, err_len);
		if (etcd->user[0] != '\0' && result == ETCD_REFUSED &&
		    token_trouble(err) && !retried) {
			/* Nothing was done: again, with a fresh token. */
			retried = true;
			if (generation == etcd->token_generation) {
				etcd->token[0] = '\0';
				etcd->auth_off = false;
			}
			tries--;
			continue;
		}
		if (etcd->user[0] != '\0' && result == ETCD_REFUSED &&
		    (auth_trouble(err) || token_trouble(err))) {
			auth_refused(etcd, err);
			result = ETCD_UNKNOWN;
			break;
		} else if (result == ETCD_REFUSED && (auth_trouble(err) ||
		    token_trouble(err))) {
			no_user(etcd, err);
			result = ETCD_UNKNOWN;
			break;
		} else if (result == ETCD_OK)
			auth_ok(etcd);
		if (code == CURLE_OK)
			break;
	}
	curl_easy_cleanup(easy);
	free(text);
	return result;
}

/* ---- libuv drives curl ------------------------------------------------ */

/* The secrets do not outlive the client in freed memory. */
static void
client_free(struct etcd *etcd)
{
	explicit_bzero(etcd->password, sizeof(etcd->password));
	explicit_bzero(etcd->token, sizeof(etcd->token));
	free(etcd);
}

static void
handle_closed(uv_handle_t *h)
{
	struct etcd *etcd = h->data;

	if (h->type == UV_POLL)
		free(h);
	if (--etcd->handles == 0 && etcd->freeing)
		client_free(etcd);
}

static void
socket_close(struct socket *s)
{
	link_remove(&s->link);
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, handle_closed);
}

static void
on_poll(uv_poll_t *poll, int status, int events)
{
	struct socket *s = (struct socket *)poll;
	struct etcd *etcd = s->etcd;
	int flags = 0, running;

	if (!s->in_transfer) {
		/* An idle connection spoke (etcd closed it, say): polling it
		 * on would wake the loop for nothing. */
		uv_poll_stop(&s->poll);
		s->events = 0;
		return;
	}
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(etcd->multi, s->fd, flags, &running);
	drain(etcd);
}

static struct socket *
socket_find(struct etcd *etcd, curl_socket_t fd)
{
	struct core_link *l;

	for (l = etcd->sockets.next; l != &etcd->sockets; l = l->next) {
		struct socket *s = container_of(l, struct socket, link);
		if (s->fd == fd)
			return s;
	}
	return NULL;
}

static int
on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
	struct etcd *etcd = userp;
	struct socket *s = socketp;
	int events = 0;

	(void)easy;
	if (s == NULL)
		s = socket_find(etcd, fd);
	if (what == CURL_POLL_REMOVE) {
		if (s != NULL) {
			/* Kept for the connection's next transfer, but not
			 * polled for writing: an idle socket is writable. */
			s->in_transfer = false;
			if (s->events & UV_WRITABLE) {
				uv_poll_stop(&s->poll);
				s->events = 0;
			}
			curl_multi_assign(etcd->multi, fd, NULL);
		}
		return 0;
	}
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return -1;
		if (uv_poll_init_socket(etcd->loop, &s->poll, fd) != 0) {
			free(s);
			return -1;
		}
		s->poll.data = etcd;
		s->etcd = etcd;
		s->fd = fd;
		etcd->handles++;
		link_append(&etcd->sockets, &s->link);
	}
	curl_multi_assign(etcd->multi, fd, s);
	s->in_transfer = true;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	if (events == s->events)
		return 0;   /* as the last transfer left it */
	s->events = events;
	/* The handle's data is the client (handle_closed); on_poll finds the
	 * socket from the handle itself. */
	return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
}

/*
 * curl closes one of its sockets: its poll goes first, while the fd is
 * still curl's (a closed fd's number may be a lock connection's next).
 */
static int
on_close_socket(void *clientp, curl_socket_t fd)
{
	struct etcd *etcd = clientp;
	struct socket *s = socket_find(etcd, fd);

	if (s != NULL)
		socket_close(s);
	return close(fd);
}

static void
on_timer(uv_timer_t *timer)
{
	struct etcd *etcd = timer->data;
	int running;

	curl_multi_socket_action(etcd->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running);
	drain(etcd);
}

static int
on_timeout(CURLM *multi, long ms, void *userp)
{
	struct etcd *etcd = userp;

	(void)multi;
	if (ms < 0)
		uv_timer_stop(&etcd->timer);
	else
		uv_timer_start(&etcd->timer, on_timer, (uint64_t)ms, 0);
	return 0;
}

static void
on_drain(uv_timer_t *timer)
{
	drain(timer->data);
}

/*
 * Lets curl start the request just added, now: on a kept-alive connection
 * it is written before etcd_request returns.  Left to curl's timer (0 ms)
 * it would leave on the loop's next pass, behind everything else this
 * pass does (the replies the service writes, a commit's transaction
 * among them).  A transfer that ends in here (a connection refused at
 * once) is finished on the next pass: a callback never runs inside
 * etcd_request.
 */
static void
kick(struct etcd *etcd)
{
	struct core_link *l;
	int running = 0, added = 0;

	curl_multi_socket_action(etcd->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running);
	for (l = etcd->requests.next; l != &etcd->requests; l = l->next)
		added++;
	if (running < added)
		uv_timer_start(&etcd->drain_timer, on_drain, 0, 0);
}

/* ---- the client ------------------------------------------------------- */

int
etcd_urls_check(const char *urls, bool *tls, char *err, size_t err_len)
{
	const char *p = urls;
	int n_urls = 0, n_tls = 0;

	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		bool https = strncmp(p, "https://", 8) == 0;
		if (n == 0 || n >= ETCD_URL_MAX || n_urls == ETCD_URLS_MAX ||
		    (strncmp(p, "http://", 7) != 0 && !https) ||
		    n == (https ? 8u : 7u)) {
			snprintf(err, err_len, "--etcd: \"%.*s\" is not an "
			    "http:// or https:// URL (at most %d of them, "
			    "comma-separated)", (int)(n < 200 ? n : 200), p,
			    ETCD_URLS_MAX);
			return -1;
		}
		n_urls++;
		n_tls += https;
		p += n;
		if (*p == ',')
			p++;
	}
	if (n_urls == 0) {
		snprintf(err, err_len, "--etcd: no URL given");
		return -1;
	}
	if (n_tls != 0 && n_tls != n_urls) {
		snprintf(err, err_len, "--etcd: a mix of http:// and https:// "
		    "URLs: give every member the same scheme");
		return -1;
	}
	*tls = n_tls != 0;
	return 0;
}

static int
parse_urls(struct etcd *etcd, const char *urls, char *err, size_t err_len)
{
	const char *p = urls;

	if (etcd_urls_check(urls, &etcd->tls, err, err_len) != 0)
		return -1;
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		memcpy(etcd->urls[etcd->nurls], p, n);
		/* "http://h:2379/" and "http://h:2379" are one endpoint. */
		while (n > 0 && etcd->urls[etcd->nurls][n - 1] == '/')
			n--;
		etcd->urls[etcd->nurls++][n] = '\0';
		p += n;
		while (*p == '/')
			p++;
		if (*p == ',')
			p++;
	}
	return 0;
}

int
etcd_password_read(const char *path, char *out, size_t cap, char *err,
    size_t err_len)
{
	char buf[ETCD_PASSWORD_MAX + 3];
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, err_len, "cannot read %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (len < sizeof(buf) &&
	    (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, err_len, "cannot read %s: %s", path,
			    strerror(errno));
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len == 0) {
		snprintf(err, err_len, "%s is empty: it must hold the "
		    "password", path);
		return -1;
	}
	if (len >= cap || len > ETCD_PASSWORD_MAX) {
		snprintf(err, err_len, "%s holds more than %d bytes", path,
		    ETCD_PASSWORD_MAX);
		return -1;
	}
	if (memchr(buf, '\0', len) != NULL || memchr(buf, '\n', len) !=
	    NULL || memchr(buf, '\r', len) != NULL) {
		snprintf(err, err_len, "%s holds more than one line (or a NUL "
		    "byte): it must hold the password alone", path);
		return -1;
	}
	memcpy(out, buf, len);
	out[len] = '\0';
	return 0;
}

static bool
given(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/* SIGHUP: the TLS files for the next connection, the password file again;
 * a new password drops the token. */
static void
on_sighup(uv_signal_t *sig, int signum)
{
	struct etcd *etcd = sig->data;
	char password[ETCD_PASSWORD_MAX], err[600];
	bool changed;

	(void)signum;
	/* New connections from now on: they read the CA, certificate and
	 * key files again (easy_secure). */
	etcd->reloaded_at = now_ms();
	if (etcd->tls)
		log_event(LOG_INFO, "etcd_tls_reloaded", "ca=%s cert=%s "
		    "msg=\"the next connection to etcd reads them again\"",
		    given(etcd->ca_file) ? etcd->ca_file : "system",
		    given(etcd->cert_file) ? etcd->cert_file : "none");
	if (etcd->password_file[0] == '\0')
		return;
	if (etcd_password_read(etcd->password_file, password,
	    sizeof(password), err, sizeof(err)) != 0) {
		log_event(LOG_ERROR, "etcd_password_reload_error", "error=\"%s\""
		    " msg=\"kept the old password\"", err);
		return;
	}
	changed = strcmp(password, etcd->password) != 0;
	log_event(LOG_INFO, "etcd_password_reloaded", "user=%s changed=%s",
	    etcd->user, changed ? "yes" : "no");
	if (changed) {
		memcpy(etcd->password, password, sizeof(password));
		etcd->token[0] = '\0';
		etcd->auth_failed_at = 0;
		if (!link_empty(&etcd->waiting)) {
			uv_timer_stop(&etcd->auth_timer);
			auth_start(etcd);
		}
	}
	explicit_bzero(password, sizeof(password));
}

/* Does the URL name this machine (127.0.0.0/8, ::1, localhost)? */
static bool
url_is_loopback(const char *url)
{
	const char *host = strstr(url, "://");

	host = host != NULL ? host + 3 : url;
	return strncmp(host, "127.", 4) == 0 ||
	    strncmp(host, "[::1]", 5) == 0 ||
	    strncmp(host, "localhost", 9) == 0;
}

int
etcd_secure(struct etcd *etcd, const struct etcd_security *sec, char *err,
    size_t err_len)
{
	int i;

	if ((given(sec->ca_file) || given(sec->cert_file)) && !etcd->tls) {
		snprintf(err, err_len, "--etcd-ca and --etcd-cert need "
		    "https:// URLs in --etcd");
		return -1;
	}
	if (given(sec->cert_file) != given(sec->key_file)) {
		snprintf(err, err_len, "--etcd-cert and --etcd-key go "
		    "together");
		return -1;
	}
	if (given(sec->user) != given(sec->password_file)) {
		snprintf(err, err_len, "--etcd-user and --etcd-password-file "
		    "go together");
		return -1;
	}
	snprintf(etcd->ca_file, sizeof(etcd->ca_file), "%s",
	    given(sec->ca_file) ? sec->ca_file : "");
	snprintf(etcd->cert_file, sizeof(etcd->cert_file), "%s",
	    given(sec->cert_file) ? sec->cert_file : "");
	snprintf(etcd->key_file, sizeof(etcd->key_file), "%s",
	    given(sec->key_file) ? sec->key_file : "");
	if (given(sec->user)) {
		char why[600];
		if (strlen(sec->user) >= sizeof(etcd->user)) {
			snprintf(err, err_len, "--etcd-user: longer than %d "
			    "bytes", ETCD_USER_MAX - 1);
			return -1;
		}
		if (etcd_password_read(sec->password_file, etcd->password,
		    sizeof(etcd->password), why, sizeof(why)) != 0) {
			snprintf(err, err_len, "--etcd-password-file: %s",
			    why);
			return -1;
		}
		snprintf(etcd->user, sizeof(etcd->user), "%s", sec->user);
		snprintf(etcd->password_file, sizeof(etcd->password_file),
		    "%s", sec->password_file);
		for (i = 0; i < etcd->nurls && !etcd->tls; i++)
			if (!url_is_loopback(etcd->urls[i])) {
				log_event(LOG_WARN, "etcd_auth_plain", "url=%s "
				    "msg=\"the etcd password and token cross "
				    "the network in clear: use https://\"",
				    etcd->urls[i]);
				break;
			}
	}
	if (etcd->loop != NULL && !etcd->secured) {
		uv_timer_init(etcd->loop, &etcd->auth_timer);
		uv_signal_init(etcd->loop, &etcd->sighup);
		etcd->auth_timer.data = etcd->sighup.data = etcd;
		uv_signal_start(&etcd->sighup, on_sighup, SIGHUP);
		uv_unref((uv_handle_t *)&etcd->sighup);
		etcd->handles += 2;
		etcd->secured = true;
	}
	return 0;
}

struct etcd *
etcd_open(uv_loop_t *loop, const char *urls, char *err, size_t err_len)
{
	struct etcd *etcd = calloc(1, sizeof(*etcd));

	if (etcd == NULL) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	if (parse_urls(etcd, urls, err, err_len) != 0) {
		free(etcd);
		return NULL;
	}
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			snprintf(err, err_len, "curl_global_init failed");
			free(etcd);
			return NULL;
		}
		curl_ready = true;
	}
	link_init(&etcd->requests);
	link_init(&etcd->sockets);
	link_init(&etcd->waiting);
	etcd->loop = loop;
	if (loop == NULL)
		return etcd;
	if ((etcd->multi = curl_multi_init()) == NULL) {
		snprintf(err, err_len, "curl_multi_init failed");
		free(etcd);
		return NULL;
	}
	curl_multi_setopt(etcd->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(etcd->multi, CURLMOPT_SOCKETDATA, etcd);
	curl_multi_setopt(etcd->multi, CURLMOPT_TIMERFUNCTION, on_timeout);
	curl_multi_setopt(etcd->multi, CURLMOPT_TIMERDATA, etcd);
	uv_timer_init(loop, &etcd->timer);
	uv_timer_init(loop, &etcd->drain_timer);
	etcd->timer.data = etcd->drain_timer.data = etcd;
	etcd->handles = 2;
	return etcd;
}

void
etcd_detach(struct etcd *etcd)
{
	struct core_link *l, *next;

	if (etcd->closing)
		return;
	etcd->closing = true;
	for (l = etcd->requests.next; l != &etcd->requests; l = next) {
		next = l->next;
		request_free(container_of(l, struct request, link));
	}
	for (l = etcd->waiting.next; l != &etcd->waiting; l = next) {
		next = l->next;
		request_free(container_of(l, struct request, link));
	}
	if (etcd->secured) {
		uv_timer_stop(&etcd->auth_timer);
		uv_signal_stop(&etcd->sighup);
		uv_close((uv_handle_t *)&etcd->auth_timer, handle_closed);
		uv_close((uv_handle_t *)&etcd->sighup, handle_closed);
		etcd->secured = false;
	}
	if (etcd->multi == NULL)
		return;
	/* Sockets curl still caches are closed here, not through on_socket. */
	curl_multi_setopt(etcd->multi, CURLMOPT_SOCKETFUNCTION, NULL);
	curl_multi_setopt(etcd->multi, CURLMOPT_TIMERFUNCTION, NULL);
	for (l = etcd->sockets.next; l != &etcd->sockets; l = next) {
		next = l->next;
		socket_close(container_of(l, struct socket, link));
	}
	curl_multi_cleanup(etcd->multi);
	etcd->multi = NULL;
	uv_timer_stop(&etcd->timer);
	uv_timer_stop(&etcd->drain_timer);
	uv_close((uv_handle_t *)&etcd->timer, handle_closed);
	uv_close((uv_handle_t *)&etcd->drain_timer, handle_closed);
}

void
etcd_close(struct etcd *etcd)
{
	if (etcd == NULL || etcd->freeing)
		return;
	etcd_detach(etcd);
	etcd->freeing = true;
	if (etcd->handles == 0)
		client_free(etcd);
}
