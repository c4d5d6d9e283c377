/*
 * test_store_etcd.c - the etcd store (daemon/store_etcd.c) against a real
 * etcd member started by the test (tests/lib/etcd_harness.c): commit and
 * load, per-name merging, batches over etcd's 127-record transaction, the
 * leader-key guard, a replay told apart from a refusal, a lost answer that
 * breaks the store, the paged load pinned to one revision, and the
 * asynchronous commit on the loop, whose transaction leaves before the
 * loop runs again.
 *
 * A small proxy on a thread of the test stands between the store and etcd
 * where an answer must be lost: it forwards each request and, while told
 * to, drops etcd's answer - so the transaction did go in.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/etcd.h"
#include "daemon/format.h"
#include "daemon/store.h"
#include "daemon/store_etcd.h"
#include "tests/lib/etcd_harness.h"

#define TIMEOUT_MS 3000L
#define KEY_BUF 512         /* a prefix and a 264-byte key */

static struct etcd_cluster cluster;
static int cluster_seq;

static int
group_setup(void **state)
{
	(void)state;
	return etcd_cluster_start(&cluster, 1);
}

static int
group_teardown(void **state)
{
	(void)state;
	etcd_cluster_stop(&cluster);
	return 0;
}

/* ---- the proxy -------------------------------------------------------- */

#define PROXY_KEEP 8

struct proxy {
	int listen_fd, port, etcd_port;
	/* The bodies of the first PROXY_KEEP transactions, when asked. */
	bool keep_txns;
	/* The answer goes back without its "Connection: close": the client
	 * keeps the connection, which the proxy then closes while it idles. */
	bool hide_close;
	char *txns[PROXY_KEEP];
	int ntxns;
	pthread_t thread;
	volatile int drop;          /* answers still to drop; -1: all */
	volatile int forwarded;     /* requests passed to etcd */
	volatile bool stop;
	char url[64];
};

static bool
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* One request from c, forwarded with "Connection: close"; the answer back
 * unless it is to be dropped. */
static void
proxy_one(struct proxy *p, int c)
{
	static char req[1 << 20], resp[1 << 20];
	size_t got = 0, want = 0, rgot = 0;
	struct sockaddr_in sin;
	char *end, *line;
	ssize_t n;
	int e;

	while (got < sizeof(req) - 1) {
		if ((n = read(c, req + got, sizeof(req) - 1 - got)) <= 0)
			return;
		got += (size_t)n;
		req[got] = '\0';
		if ((end = strstr(req, "\r\n\r\n")) == NULL)
			continue;
		if (want == 0) {
			char *cl = strcasestr(req, "Content-Length:");
			want = (size_t)(end + 4 - req) +
			    (cl != NULL ? strtoul(cl + 15, NULL, 10) : 0);
		}
		if (got >= want)
			break;
	}
	line = strstr(req, "\r\n");
	e = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)p->etcd_port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (line == NULL || connect(e, (struct sockaddr *)&sin,
	    sizeof(sin)) != 0) {
		close(e);
		return;
	}
	if (p->keep_txns && p->ntxns < PROXY_KEEP &&
	    strncmp(req, "POST /v3/kv/txn ", 16) == 0)
		p->txns[p->ntxns++] = strdup(end + 4);
	write_all(e, req, (size_t)(line + 2 - req));
	write_all(e, "Connection: close\r\n", 19);
	write_all(e, line + 2, got - (size_t)(line + 2 - req));
	p->forwarded++;
	while (rgot < sizeof(resp) &&
	    (n = read(e, resp + rgot, sizeof(resp) - rgot)) > 0)
		rgot += (size_t)n;
	close(e);
	if (p->drop != 0) {
		if (p->drop > 0)
			p->drop--;
		return;   /* etcd has done it; the client never hears so */
	}
	if (p->hide_close && (line = memmem(resp, rgot, "Connection: close\r\n",
	    19)) != NULL) {
		write_all(c, resp, (size_t)(line - resp));
		write_all(c, line + 19, rgot - (size_t)(line + 19 - resp));
		return;
	}
	write_all(c, resp, rgot);
}

static void *
proxy_run(void *arg)
{
	struct proxy *p = arg;

	while (!p->stop) {
		struct pollfd pfd = { p->listen_fd, POLLIN, 0 };
		int c;
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if ((c = accept(p->listen_fd, NULL, NULL)) < 0)
			continue;
		proxy_one(p, c);
		close(c);
	}
	return NULL;
}

static void
proxy_start(struct proxy *p, int drop)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	memset(p, 0, sizeof(*p));
	p->drop = drop;
	p->etcd_port = cluster.members[0].client_port;
	p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&sin,
	    sizeof(sin)), 0);
	assert_int_equal(listen(p->listen_fd, 16), 0);
	getsockname(p->listen_fd, (struct sockaddr *)&sin, &len);
	p->port = ntohs(sin.sin_port);
	snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
	assert_int_equal(pthread_create(&p->thread, NULL, proxy_run, p), 0);
}

static void
proxy_stop(struct proxy *p)
{
	p->stop = true;
	pthread_join(p->thread, NULL);
	close(p->listen_fd);
	while (p->ntxns > 0)
		free(p->txns[--p->ntxns]);
}

/* ---- helpers ---------------------------------------------------------- */

struct fixture {
	struct etcd *etcd;
	struct store *store;
	char cluster[32];
};

/* A store of a cluster of its own, so that the tests share no keys. */
static void
open_store(struct fixture *f, uv_loop_t *loop, const char *urls)
{
	char err[256];

	snprintf(f->cluster, sizeof(f->cluster), "t%d", ++cluster_seq);
	f->etcd = etcd_open(loop, urls, err, sizeof(err));
	assert_non_null(f->etcd);
	f->store = store_etcd_open(f->etcd, f->cluster, TIMEOUT_MS, err,
	    sizeof(err));
	assert_non_null(f->store);
}

/* The same cluster through another client (another node, or a retry). */
static void
reopen_store(struct fixture *f, const struct fixture *of, const char *urls)
{
	char err[256];

	f->etcd = etcd_open(NULL, urls, err, sizeof(err));
	assert_non_null(f->etcd);
	snprintf(f->cluster, sizeof(f->cluster), "%s", of->cluster);
	f->store = store_etcd_open(f->etcd, f->cluster, TIMEOUT_MS, err,
	    sizeof(err));
	assert_non_null(f->store);
}

static void
close_store(struct fixture *f)
{
	f->store->ops->close(f->store);
	etcd_close(f->etcd);
}

/* A raw request to etcd, bypassing the store. */
static json_t *
raw(const char *path, json_t *body)
{
	char err[512];
	struct etcd *etcd = etcd_open(NULL, cluster.urls, err, sizeof(err));
	json_t *reply;

	assert_non_null(etcd);
	assert_int_equal(etcd_request_sync(etcd, path, body, TIMEOUT_MS,
	    &reply, err, sizeof(err)), ETCD_OK);
	etcd_close(etcd);
	return reply;
}

/* Puts key (under the fixture's prefix) and returns its create revision. */
static int64_t
raw_put(const struct fixture *f, const char *what, const char *value)
{
	char key[256];
	json_t *reply;
	int64_t rev;

	snprintf(key, sizeof(key), "/lockd/%s/%s", f->cluster, what);
	json_decref(raw("/v3/kv/put", json_pack("{s:o,s:o}", "key",
	    etcd_bytes(key, strlen(key)), "value",
	    etcd_bytes(value, strlen(value)))));
	reply = raw("/v3/kv/range", json_pack("{s:o}", "key",
	    etcd_bytes(key, strlen(key))));
	rev = etcd_field_int(json_array_get(json_object_get(reply, "kvs"), 0),
	    "create_revision");
	json_decref(reply);
	return rev;
}

static void
raw_delete(const struct fixture *f, const char *what)
{
	char key[256];

	snprintf(key, sizeof(key), "/lockd/%s/%s", f->cluster, what);
	json_decref(raw("/v3/kv/deleterange", json_pack("{s:o}", "key",
	    etcd_bytes(key, strlen(key)))));
}

static void
add(struct store_batch *b, enum store_op op, const char *name,
    const char *val)
{
	assert_int_equal(store_batch_add(b, op, name, strlen(name), val,
	    val != NULL ? strlen(val) : 0), 0);
}

struct seen {
	int count;
	char last[300];
	char last_key[KEY_BUF];    /* the last key's bytes, NULs and all */
	size_t last_len;
	char values[8][2][80];     /* the first few: name, value */
	bool sorted;
	const struct fixture *f;   /* to write during the load */
};

static int
remember(void *ctx, const char *name, size_t len, const void *val,
    size_t val_len)
{
	struct seen *s = ctx;
	char shown[300];

	snprintf(shown, sizeof(shown), "%.*s", (int)len, name);
	if (s->count > 0 && format_key_compare(s->last_key, s->last_len, name,
	    len) >= 0)
		s->sorted = false;
	snprintf(s->last, sizeof(s->last), "%s", shown);
	memcpy(s->last_key, name, len);
	s->last_len = len;
	if (s->count < 8) {
		snprintf(s->values[s->count][0], 80, "%.70s", shown);
		snprintf(s->values[s->count][1], 80, "%.*s", (int)val_len,
		    (const char *)val);
	}
	if (s->f != NULL && s->count == 0)
		raw_put(s->f, "locks/zzz-written-during-the-load", "late");
	s->count++;
	return 0;
}

static struct seen
load(struct store *store, uint64_t *hwm)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	s.sorted = true;
	assert_int_equal(store->ops->load(store, remember, &s, hwm), 0);
	return s;
}

/* ---- the tests -------------------------------------------------------- */

static void
test_store_etcd_commit_then_load_gives_records_and_hwm(void **state)
{
	struct fixture f, g;
	struct store_batch b;
	unsigned char val[STORE_VALUE_MAX];
	uint64_t hwm = 0;
	size_t len;
	struct seen s;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	store_batch_init(&b);
	add(&b, STORE_PUT, "alpha", "A\x01");
	add(&b, STORE_PUT, "beta", "B");
	b.has_hwm = true;
	b.hwm = 42;
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	store_batch_reset(&b);
	add(&b, STORE_DEL, "alpha", NULL);
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	assert_int_equal(f.store->ops->get(f.store, "alpha", 5, val, &len), 0);
	assert_int_equal(f.store->ops->get(f.store, "beta", 4, val, &len), 1);
	assert_int_equal(len, 1);
	assert_memory_equal(val, "B", 1);

	/* Another node reads what this one wrote. */
	reopen_store(&g, &f, cluster.urls);
	s = load(g.store, &hwm);
	assert_int_equal(s.count, 1);
	assert_string_equal(s.values[0][0], "beta");
	assert_string_equal(s.values[0][1], "B");
	assert_int_equal(hwm, 42);
	store_batch_free(&b);
	close_store(&g);
	close_store(&f);
}

static void
test_store_etcd_merges_a_batch_per_name(void **state)
{
	struct fixture f;
	struct store_batch b;
	uint64_t hwm;
	struct seen s;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	store_batch_init(&b);
	/* etcd refuses a key twice in one transaction: only the last
	 * operation of each name goes. */
	add(&b, STORE_PUT, "a", "1");
	add(&b, STORE_PUT, "b", "1");
	add(&b, STORE_DEL, "a", NULL);
	add(&b, STORE_PUT, "a", "2");
	add(&b, STORE_DEL, "b", NULL);
	add(&b, STORE_PUT, "c", "3");
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	s = load(f.store, &hwm);
	assert_int_equal(s.count, 2);
	assert_string_equal(s.values[0][0], "a");
	assert_string_equal(s.values[0][1], "2");
	assert_string_equal(s.values[1][0], "c");
	store_batch_free(&b);
	close_store(&f);
}

static void
commit_many(struct fixture *f, int n, uint64_t hwm)
{
	struct store_batch b;
	char name[32];
	int i;

	store_batch_init(&b);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%05d", i);
		add(&b, STORE_PUT, name, "v");
	}
	b.has_hwm = true;
	b.hwm = hwm;
	assert_int_equal(f->store->ops->commit(f->store, &b), 0);
	store_batch_free(&b);
}

static void
test_store_etcd_splits_batches_over_127_records(void **state)
{
	static const int sizes[] = { 127, 128, 300 };
	uint64_t hwm;
	struct seen s;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fixture f;
		open_store(&f, NULL, cluster.urls);
		commit_many(&f, sizes[i], 1000 + i);
		s = load(f.store, &hwm);
		assert_int_equal(s.count, sizes[i]);
		assert_int_equal(hwm, 1000 + i);
		close_store(&f);
	}
}

/* A holder key (daemon/format.h) of name and fence, as a batch key. */
static size_t
holder_key(const char *name, uint64_t fence, char key[FORMAT_KEY_MAX])
{
	return format_key(name, strlen(name), fence, key);
}

/* Transaction t's operations: how many, how many of them are on keys of
 * name (its own and its holders'), and whether any key comes twice (etcd
 * would refuse that) or a put of name's keys before a delete of them. */
struct txn_seen {
	int ops, of_name, puts_of_name;
	bool twice, put_before_delete;
};

static struct txn_seen
txn_look(const char *body, const char *name)
{
	json_t *txn = json_loads(body, 0, NULL), *op;
	struct txn_seen t = { 0, 0, 0, false, false };
	char keys[200][KEY_BUF];
	size_t lens[200], i, j, n = strlen(name);

	assert_non_null(txn);
	json_array_foreach(json_object_get(txn, "success"), i, op) {
		json_t *put = json_object_get(op, "request_put");
		json_t *del = json_object_get(op, "request_delete_range");
		json_t *r = put != NULL ? put : del;
		char key[KEY_BUF], *k;
		size_t len;
		assert_non_null(r);
		assert_int_equal(etcd_field_bytes(r, "key", false, key,
		    sizeof(key), &len), 0);
		assert_true(t.ops < 200);
		for (j = 0; j < (size_t)t.ops; j++)
			if (lens[j] == len && memcmp(keys[j], key, len) == 0)
				t.twice = true;
		memcpy(keys[t.ops], key, len);
		lens[t.ops++] = len;
		if ((k = memmem(key, len, "/locks/", 7)) == NULL)
			continue;   /* hwm */
		k += 7;
		len -= (size_t)(k - key);
		if (len < n || memcmp(k, name, n) != 0 ||
		    (len > n && k[n] != '\0'))
			continue;
		t.of_name++;
		if (put != NULL)
			t.puts_of_name++;
		else if (t.puts_of_name > 0)
			t.put_before_delete = true;
	}
	json_decref(txn);
	return t;
}

/*
 * A batch with a name and several of its holder keys (264 bytes: the
 * longest name's) among 127-record transactions: each key once per
 * transaction after the per-key merge, and the name's keys all in one
 * transaction, where the plain cut at 127 would have split them.  A name
 * with more changed keys than one transaction takes is split, its
 * deletes first, so no state between has more holders than after.
 */
static void
test_store_etcd_keeps_a_names_holder_keys_in_one_transaction(void **state)
{
	char sem[CORE_NAME_MAX + 1], key[FORMAT_KEY_MAX], name[32];
	struct store_batch b;
	struct txn_seen t0, t1, t2;
	struct proxy p;
	struct fixture f;
	struct seen s;
	uint64_t hwm, fence;
	int i;

	(void)state;
	/* Sorts after n00119, before n00121: its keys are records 120..129
	 * of the merged batch, across the plain cut at 127. */
	memset(sem, 'h', CORE_NAME_MAX);
	memcpy(sem, "n00120", 6);
	sem[CORE_NAME_MAX] = '\0';
	proxy_start(&p, 0);
	p.keep_txns = true;
	open_store(&f, NULL, p.url);
	store_batch_init(&b);
	for (i = 0; i < 141; i++) {
		if (i == 120)
			continue;
		snprintf(name, sizeof(name), "n%05d", i);
		add(&b, STORE_PUT, name, "v");
	}
	for (fence = 191; fence <= 200; fence++) {
		size_t len = holder_key(sem, fence << 32, key);
		/* Twice: merged to the last. */
		assert_int_equal(store_batch_add(&b, STORE_PUT, key, len,
		    "old", 3), 0);
		assert_int_equal(store_batch_add(&b, STORE_PUT, key, len,
		    "new", 3), 0);
	}
	b.has_hwm = true;
	b.hwm = 77;
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	assert_int_equal(p.ntxns, 2);
	t0 = txn_look(p.txns[0], sem);
	t1 = txn_look(p.txns[1], sem);
	assert_false(t0.twice);
	assert_false(t1.twice);
	assert_int_equal(t0.of_name + t1.of_name, 10);
	assert_true(t0.of_name == 0 || t1.of_name == 0);
	assert_int_equal(t0.ops + t1.ops, 2 + 150);    /* hwm in each */
	assert_true(t0.ops <= 128 && t1.ops <= 128);
	/* Loaded back: every key once, in key order, the holders' 264
	 * bytes whole and right after the names before them. */
	s = load(f.store, &hwm);
	assert_int_equal(s.count, 150);
	assert_true(s.sorted);
	assert_int_equal(hwm, 77);

	/* 200 changed keys of one name: split, its deletes first (in key
	 * order they would come last). */
	store_batch_reset(&b);
	for (fence = 191; fence <= 200; fence++) {
		size_t len = holder_key(sem, fence << 32, key);
		assert_int_equal(store_batch_add(&b, STORE_DEL, key, len,
		    NULL, 0), 0);
	}
	for (fence = 1; fence <= 190; fence++) {
		size_t len = holder_key(sem, fence << 32, key);
		assert_int_equal(store_batch_add(&b, STORE_PUT, key, len,
		    "v", 1), 0);
	}
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	assert_int_equal(p.ntxns, 4);
	t1 = txn_look(p.txns[2], sem);
	t2 = txn_look(p.txns[3], sem);
	assert_int_equal(t1.of_name, 127);
	assert_int_equal(t2.of_name, 73);
	assert_int_equal(t1.of_name - t1.puts_of_name, 10);
	assert_false(t1.put_before_delete || t2.put_before_delete ||
	    t1.twice || t2.twice);
	s = load(f.store, &hwm);
	assert_int_equal(s.count, 140 + 190);
	assert_true(s.sorted);
	store_batch_free(&b);
	close_store(&f);
	proxy_stop(&p);
}

static void
test_store_etcd_load_pages_in_key_order_at_one_revision(void **state)
{
	struct fixture f;
	uint64_t hwm;
	struct seen s;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	commit_many(&f, 2500, 7);   /* three pages of 1,000 */
	memset(&s, 0, sizeof(s));
	s.sorted = true;
	s.f = &f;   /* writes locks/zzz... after the first record */
	assert_int_equal(f.store->ops->load(f.store, remember, &s, &hwm), 0);
	assert_int_equal(s.count, 2500);   /* not the record written since */
	assert_true(s.sorted);
	assert_string_equal(s.last, "n02499");
	close_store(&f);
}

static void
test_store_etcd_commit_of_a_deposed_leader_changes_nothing(void **state)
{
	struct fixture f;
	struct store_batch b;
	unsigned char val[STORE_VALUE_MAX];
	size_t len;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	store_etcd_guard(f.store, raw_put(&f, "leader", "127.0.0.1:1"));
	store_batch_init(&b);
	add(&b, STORE_PUT, "x", "mine");
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	/* Another node's leader key: a new create revision. */
	raw_delete(&f, "leader");
	raw_put(&f, "leader", "127.0.0.1:2");
	store_batch_reset(&b);
	add(&b, STORE_PUT, "x", "deposed");
	add(&b, STORE_PUT, "y", "deposed");
	assert_int_equal(f.store->ops->commit(f.store, &b), -1);
	assert_non_null(strstr(f.store->error, "not the leader"));
	assert_false(store_etcd_broken(f.store));
	/* Leadership hears of it, and stops leading (leader.c). */
	assert_true(store_etcd_deposed(f.store));
	assert_int_equal(f.store->ops->get(f.store, "x", 1, val, &len), 1);
	assert_memory_equal(val, "mine", 4);
	assert_int_equal(f.store->ops->get(f.store, "y", 1, val, &len), 0);
	store_batch_free(&b);
	close_store(&f);
}

/*
 * Revisions of every width go into the transaction whole: a guard of 19
 * digits (a long-lived etcd's revisions grow without end) is compared,
 * and the commit is answered as deposed, not refused as bad JSON.
 */
static void
test_store_etcd_commit_compares_a_guard_of_19_digits(void **state)
{
	struct fixture f;
	struct store_batch b;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	raw_put(&f, "leader", "127.0.0.1:1");
	store_etcd_guard(f.store, INT64_MAX);
	store_batch_init(&b);
	add(&b, STORE_PUT, "x", "v");
	assert_int_equal(f.store->ops->commit(f.store, &b), -1);
	assert_non_null(strstr(f.store->error, "not the leader"));
	assert_true(store_etcd_deposed(f.store));
	store_batch_free(&b);
	close_store(&f);
}

static void
test_store_etcd_commit_over_a_moved_hwm_is_refused(void **state)
{
	struct fixture f;
	struct store_batch b;

	(void)state;
	open_store(&f, NULL, cluster.urls);
	store_batch_init(&b);
	add(&b, STORE_PUT, "x", "1");
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	raw_put(&f, "hwm", "hwm=99 leader=0 txn=1");
	assert_int_equal(f.store->ops->commit(f.store, &b), -1);
	assert_non_null(strstr(f.store->error, "high-water mark"));
	/* Every later batch would be refused the same way: the node must
	 * start over from etcd (leader.c steps down). */
	assert_non_null(strstr(f.store->error, "start over"));
	assert_true(store_etcd_broken(f.store));
	store_batch_free(&b);
	close_store(&f);
}

static void
test_store_etcd_replay_of_a_commit_that_went_in_succeeds(void **state)
{
	struct fixture f;
	struct store_batch b;
	struct proxy p;
	uint64_t hwm;
	struct seen s;

	(void)state;
	proxy_start(&p, 1);   /* the first answer is lost */
	open_store(&f, NULL, p.url);
	store_batch_init(&b);
	add(&b, STORE_PUT, "x", "once");
	b.has_hwm = true;
	b.hwm = 5;
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	assert_int_equal(p.forwarded, 2);   /* it went in, then the retry */
	assert_false(store_etcd_broken(f.store));
	/* And the store goes on: its compare knows the new revision. */
	store_batch_reset(&b);
	add(&b, STORE_PUT, "y", "next");
	assert_int_equal(f.store->ops->commit(f.store, &b), 0);
	s = load(f.store, &hwm);
	assert_int_equal(s.count, 2);
	assert_int_equal(hwm, 5);
	store_batch_free(&b);
	close_store(&f);
	proxy_stop(&p);
}

static void
test_store_etcd_unknown_outcome_breaks_the_store(void **state)
{
	struct fixture f;
	struct store_batch b;
	unsigned char val[STORE_VALUE_MAX];
	struct proxy p;
	size_t len;

	(void)state;
	proxy_start(&p, -1);   /* every answer is lost */
	open_store(&f, NULL, p.url);
	store_batch_init(&b);
	add(&b, STORE_PUT, "x", "maybe");
	assert_int_equal(f.store->ops->commit(f.store, &b), -1);
	assert_int_equal(p.forwarded, STORE_ETCD_ATTEMPTS);
	assert_true(store_etcd_broken(f.store));
	assert_non_null(strstr(f.store->error, "start over"));
	/* The service falls back through get: it must fail (fail-stop). */
	assert_int_equal(f.store->ops->get(f.store, "x", 1, val, &len), -1);
	store_batch_free(&b);
	close_store(&f);
	proxy_stop(&p);
}

struct async_done {
	bool called;
	int rc;
};

static void
on_committed(void *ctx, int rc)
{
	struct async_done *d = ctx;

	d->called = true;
	d->rc = rc;
}

static void
test_store_etcd_commit_start_runs_on_the_loop(void **state)
{
	uv_loop_t loop;
	struct fixture f;
	struct store_batch b;
	struct async_done d = { false, 1 };
	uint64_t hwm;
	struct seen s;
	char name[16];
	int i, passes;

	(void)state;
	uv_loop_init(&loop);
	open_store(&f, &loop, cluster.urls);
	store_batch_init(&b);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "a%03d", i);
		add(&b, STORE_PUT, name, "v");
	}
	b.has_hwm = true;
	b.hwm = 9;
	assert_int_equal(f.store->ops->commit_start(f.store, &b, on_committed,
	    &d), 0);
	assert_false(d.called);
	/* One at a time. */
	assert_int_equal(f.store->ops->commit_start(f.store, &b, on_committed,
	    &d), -1);
	for (passes = 0; !d.called && passes < 100000; passes++)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(d.called);
	assert_int_equal(d.rc, 0);
	s = load(f.store, &hwm);
	assert_int_equal(s.count, 300);
	assert_int_equal(hwm, 9);
	store_batch_free(&b);
	close_store(&f);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Does etcd hold the record of name in f's cluster?  A read of its own. */
static bool
raw_has_record(const struct fixture *f, const char *name)
{
	char key[256];
	json_t *reply;
	bool has;

	snprintf(key, sizeof(key), "/lockd/%s/locks/%s", f->cluster, name);
	reply = raw("/v3/kv/range", json_pack("{s:o}", "key",
	    etcd_bytes(key, strlen(key))));
	has = json_array_size(json_object_get(reply, "kvs")) == 1;
	json_decref(reply);
	return has;
}

/*
 * An idle leader's commit leaves at once: commit_start writes the
 * transaction on the kept-alive connection before it returns, not on a
 * later pass of the loop (curl's timer).  The loop does not run here
 * until etcd holds the record, so a commit that waited for it would
 * never get there: etcd is asked at most READS times, whatever the time
 * each read takes.
 */
#define READS 1000

static void
test_store_etcd_commit_start_sends_before_the_loop_runs(void **state)
{
	uv_loop_t loop;
	struct fixture f;
	struct store_batch b;
	struct async_done d = { false, 1 };
	int passes, reads;

	(void)state;
	uv_loop_init(&loop);
	open_store(&f, &loop, cluster.urls);
	store_batch_init(&b);
	/* The first commit opens the connection (a connect waits for the
	 * loop); the second finds it kept alive. */
	add(&b, STORE_PUT, "first", "v");
	assert_int_equal(f.store->ops->commit_start(f.store, &b, on_committed,
	    &d), 0);
	for (passes = 0; !d.called && passes < 100000; passes++)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(d.called);
	assert_int_equal(d.rc, 0);

	store_batch_reset(&b);
	add(&b, STORE_PUT, "second", "v");
	d.called = false;
	assert_int_equal(f.store->ops->commit_start(f.store, &b, on_committed,
	    &d), 0);
	for (reads = 0; reads < READS && !raw_has_record(&f, "second");
	    reads++)
		usleep(10000);
	assert_true(reads < READS);
	assert_false(d.called);   /* its answer is the loop's to take */
	for (passes = 0; !d.called && passes < 100000; passes++)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(d.called);
	assert_int_equal(d.rc, 0);
	store_batch_free(&b);
	close_store(&f);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Is a poll handle (curl's socket) active on the loop? */
static void
find_active_poll(uv_handle_t *h, void *arg)
{
	if (h->type == UV_POLL && uv_is_active(h))
		*(bool *)arg = true;
}

static bool
polling(uv_loop_t *loop)
{
	bool found = false;

	uv_walk(loop, find_active_poll, &found);
	return found;
}

/*
 * A kept-alive connection stays in the loop between requests; when etcd
 * (here the proxy) closes it while it idles, the loop stops polling it -
 * a closed socket is readable for ever, and would wake the loop at every
 * pass - and the next commit goes out on a new connection.  Bounded by
 * passes of the loop, not by time.
 */
static void
test_store_etcd_commit_after_etcd_closed_an_idle_connection(void **state)
{
	uv_loop_t loop;
	struct fixture f;
	struct store_batch b;
	struct async_done d;
	struct proxy p;
	int i, passes;

	(void)state;
	proxy_start(&p, 0);
	p.hide_close = true;
	uv_loop_init(&loop);
	open_store(&f, &loop, p.url);
	store_batch_init(&b);
	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%d", i);
		store_batch_reset(&b);
		add(&b, STORE_PUT, name, "v");
		d.called = false;
		assert_int_equal(f.store->ops->commit_start(f.store, &b,
		    on_committed, &d), 0);
		for (passes = 0; !d.called && passes < 100000; passes++)
			uv_run(&loop, UV_RUN_ONCE);
		assert_true(d.called);
		assert_int_equal(d.rc, 0);
		/* The proxy hangs up; the loop hears it and lets go. */
		for (passes = 0; polling(&loop) && passes < 1000; passes++) {
			uv_run(&loop, UV_RUN_NOWAIT);
			usleep(1000);
		}
		assert_false(polling(&loop));
	}
	assert_int_equal(p.forwarded, 3);
	assert_true(raw_has_record(&f, "n2"));
	store_batch_free(&b);
	close_store(&f);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	proxy_stop(&p);
}

static void
test_store_etcd_refuses_a_bad_cluster_name(void **state)
{
	char err[256];

	(void)state;
	assert_null(store_etcd_open(NULL, "a/b", TIMEOUT_MS, err,
	    sizeof(err)));
	assert_non_null(strstr(err, "--cluster"));
	assert_null(store_etcd_open(NULL, "", TIMEOUT_MS, err, sizeof(err)));
	assert_true(store_etcd_cluster_valid("lockd-prod_1.eu"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_store_etcd_commit_then_load_gives_records_and_hwm),
		cmocka_unit_test(test_store_etcd_merges_a_batch_per_name),
		cmocka_unit_test(
		    test_store_etcd_splits_batches_over_127_records),
		cmocka_unit_test(
		    test_store_etcd_keeps_a_names_holder_keys_in_one_transaction),
		cmocka_unit_test(
		    test_store_etcd_load_pages_in_key_order_at_one_revision),
		cmocka_unit_test(
		    test_store_etcd_commit_of_a_deposed_leader_changes_nothing),
		cmocka_unit_test(
		    test_store_etcd_commit_compares_a_guard_of_19_digits),
		cmocka_unit_test(
		    test_store_etcd_commit_over_a_moved_hwm_is_refused),
		cmocka_unit_test(
		    test_store_etcd_replay_of_a_commit_that_went_in_succeeds),
		cmocka_unit_test(
		    test_store_etcd_unknown_outcome_breaks_the_store),
		cmocka_unit_test(test_store_etcd_commit_start_runs_on_the_loop),
		cmocka_unit_test(
		    test_store_etcd_commit_start_sends_before_the_loop_runs),
		cmocka_unit_test(
		    test_store_etcd_commit_after_etcd_closed_an_idle_connection),
		cmocka_unit_test(test_store_etcd_refuses_a_bad_cluster_name),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
