/*
 * etcd.c - the client of etcd's v3 JSON gateway (etcd.h).  libcurl's
 * multi interface does the HTTP; libuv tells it when its sockets are ready
 * (a uv_poll_t per socket) and when its timeout is due (one uv_timer_t),
 * the way curl's own multi-uv example does.  JSON is jansson's, base64 is
 * OpenSSL's.  It knows nothing of locks: the etcd store and leadership
 * build their requests and read the replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "core/list.h"
#include "daemon/etcd.h"

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
	char urls[ETCD_URLS_MAX][ETCD_URL_MAX];
	int nurls;
	int current;              /* the endpoint requests go to */
	struct core_link requests;
	struct core_link sockets;
	int handles;              /* libuv handles not yet closed */
	bool closing;             /* off the loop: synchronous calls only */
	bool freeing;             /* freed once its handles are closed */
};

struct request {
	struct core_link link;
	struct etcd *etcd;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	struct buffer reply;
	int url;                  /* the endpoint it went to */
	etcd_done_fn done;
	void *ctx;
	char curl_error[CURL_ERROR_SIZE];
};

struct socket {
	uv_poll_t poll;           /* first: libuv hands back this pointer */
	struct core_link link;
	struct etcd *etcd;
	curl_socket_t fd;
};

static bool curl_ready;

/* ---- bytes and numbers ------------------------------------------------ */

json_t *
etcd_bytes(const void *data, size_t len)
{
	char *text = malloc(4 * ((len + 2) / 3) + 1);
	json_t *s;

	if (text == NULL)
		return NULL;
	EVP_EncodeBlock((unsigned char *)text, data, (int)len);
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
	snprintf(err, err_len, "HTTP %ld: %s", http, why != NULL ? why :
	    http == 200 ? "reply is not a JSON object" : "no reason given");
	json_decref(body);
	return http >= 400 && http < 500 ? ETCD_REFUSED : ETCD_UNKNOWN;
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

static void
request_finish(struct request *r, CURLcode code)
{
	struct etcd *etcd = r->etcd;
	enum etcd_result result;
	char err[512];
	json_t *reply;

	result = classify(r->easy, code, r->curl_error, &r->reply, &reply,
	    err, sizeof(err));
	if (code != CURLE_OK && etcd->current == r->url)
		etcd->current = (etcd->current + 1) % etcd->nurls;
	/* Out of the lists before the callback, which may close the client. */
	link_remove(&r->link);
	link_init(&r->link);
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
	struct request *r = calloc(1, sizeof(*r));

	if (r == NULL || etcd->loop == NULL || etcd->closing) {
		free(r);
		json_decref(body);
		return -1;
	}
	r->etcd = etcd;
	r->done = done;
	r->ctx = ctx;
	r->url = etcd->current;
	link_init(&r->link);
	r->body = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (r->body == NULL || (r->headers = json_headers()) == NULL ||
	    (r->easy = curl_easy_init()) == NULL ||
	    easy_setup(r->easy, etcd->urls[r->url], path, r->body,
	    r->headers, &r->reply, r->curl_error, timeout_ms) != 0 ||
	    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r) != CURLE_OK) {
		request_free(r);
		return -1;
	}
	if (curl_multi_add_handle(etcd->multi, r->easy) != CURLM_OK) {
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		request_free(r);
		return -1;
	}
	link_append(&etcd->requests, &r->link);
	return 0;
}

enum etcd_result
etcd_request_sync(struct etcd *etcd, const char *path, json_t *body,
    long timeout_ms, json_t **reply, char *err, size_t err_len)
{
	enum etcd_result result = ETCD_UNKNOWN;
	char curl_error[CURL_ERROR_SIZE];
	struct curl_slist *headers = json_headers();
	char *text = json_dumps(body, JSON_COMPACT);
	CURL *easy = curl_easy_init();
	int tries;

	json_decref(body);
	*reply = NULL;
	snprintf(err, err_len, "out of memory");
	for (tries = 0; text != NULL && headers != NULL && easy != NULL &&
	    tries < etcd->nurls; tries++) {
		struct buffer buf = { NULL, 0, 0 };
		int url = etcd->current;
		CURLcode code;

		if (easy_setup(easy, etcd->urls[url], path, text, headers,
		    &buf, curl_error, timeout_ms) != 0)
			break;
		code = curl_easy_perform(easy);
		result = classify(easy, code, curl_error, &buf, reply, err,
		    err_len);
		free(buf.data);
		if (code == CURLE_OK)
			break;
		if (etcd->current == url)
			etcd->current = (etcd->current + 1) % etcd->nurls;
	}
	curl_easy_cleanup(easy);
	curl_slist_free_all(headers);
	free(text);
	return result;
}

/* ---- libuv drives curl ------------------------------------------------ */

static void
handle_closed(uv_handle_t *h)
{
	struct etcd *etcd = h->data;

	if (h->type == UV_POLL)
		free(h);
	if (--etcd->handles == 0 && etcd->freeing)
		free(etcd);
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

	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(etcd->multi, s->fd, flags, &running);
	drain(etcd);
}

static int
on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
    void *socketp)
{
	struct etcd *etcd = userp;
	struct socket *s = socketp;
	int events = 0;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s != NULL) {
			socket_close(s);
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
		curl_multi_assign(etcd->multi, fd, s);
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	/* The handle's data is the client (handle_closed); on_poll finds the
	 * socket from the handle itself. */
	return uv_poll_start(&s->poll, events, on_poll) == 0 ? 0 : -1;
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

/* ---- the client ------------------------------------------------------- */

static int
parse_urls(struct etcd *etcd, const char *urls, char *err, size_t err_len)
{
	const char *p = urls;

	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= ETCD_URL_MAX ||
		    etcd->nurls == ETCD_URLS_MAX ||
		    (strncmp(p, "http://", 7) != 0 &&
		    strncmp(p, "https://", 8) != 0)) {
			snprintf(err, err_len, "--etcd: \"%.*s\" is not an "
			    "http:// or https:// URL (at most %d of them, "
			    "comma-separated)", (int)(n < 200 ? n : 200), p,
			    ETCD_URLS_MAX);
			return -1;
		}
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
	if (etcd->nurls == 0) {
		snprintf(err, err_len, "--etcd: no URL given");
		return -1;
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
	etcd->timer.data = etcd;
	etcd->handles = 1;
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
	uv_close((uv_handle_t *)&etcd->timer, handle_closed);
}

void
etcd_close(struct etcd *etcd)
{
	if (etcd == NULL || etcd->freeing)
		return;
	etcd_detach(etcd);
	etcd->freeing = true;
	if (etcd->handles == 0)
		free(etcd);
}
