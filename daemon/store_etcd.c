/*
 * store_etcd.c - the store of cluster mode: lockd's records in etcd, behind
 * the same seam as LMDB (store.h).  Under the cluster's prefix
 * /lockd/<cluster>/ it keeps
 *
 *   locks/<key>    the record of a hold under its key (a name, or a
 *                  holder's key: daemon/format.h), format.c's bytes,
 *                  unread here
 *   hwm            "hwm=<fence high-water mark> leader=<r> txn=<n>"
 *   leader         the leader's key (leader.c), whose create revision
 *                  guards every write
 *
 * A batch is one etcd transaction: compare the leader key's create
 * revision with this node's (a deposed leader's write fails) and the hwm
 * key's mod revision with the last one this store wrote or loaded; then
 * put hwm and each record.  The hwm value names the transaction, so a
 * retry after an unknown outcome (no answer, etcd's "request timed out")
 * tells a replay - the first try went in, and hwm now holds exactly what
 * this try would write - from a refusal.  etcd takes at most 128
 * operations per branch: a batch of more than 127 records after merging
 * per key is written in several transactions, the high-water mark with
 * the first, a name's keys in one where they fit (docs/design.md,
 * "Cluster mode: batches in etcd").  An outcome
 * this store cannot know - a transaction that may have gone in, or a batch
 * written in part - leaves the store broken: commit and get fail from then
 * on, and leadership (leader.c) stops leading and empties the service, so
 * that the next term starts from what etcd holds (store_etcd_heal).  A
 * batch refused because the leader key is another node's marks the store
 * deposed, and leadership stops leading the same way.
 *
 * It never parses a record: values are opaque bytes.  No sockets of its
 * own: etcd.c does the HTTP.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/etcd.h"
#include "daemon/format.h"
#include "daemon/store.h"
#include "daemon/store_etcd.h"

#define PREFIX_MAX (STORE_ETCD_CLUSTER_MAX + 16)
#define KEY_MAX (PREFIX_MAX + 8 + STORE_KEY_MAX)
#define HWM_VALUE_MAX 96

struct merged {
	enum store_op op;
	const char *name;
	size_t name_len;
	const void *val;
	size_t val_len;
	size_t order;            /* its place in the batch */
};

/* A batch being written, chunk by chunk. */
struct job {
	struct merged *ops;
	size_t n;                /* after merging */
	size_t chunk;            /* the next record: a chunk's first */
	uint64_t hwm;            /* the batch's high-water mark */
	int attempt;             /* of this chunk */
	bool uncertain;          /* an attempt of this chunk had no answer */
	char value[HWM_VALUE_MAX];  /* this chunk's hwm value */
	size_t value_len;
	void (*done)(void *ctx, int rc);
	void *ctx;
	bool active;
};

struct store_etcd {
	struct store base;       /* first: the service holds this pointer */
	struct etcd *etcd;
	char prefix[PREFIX_MAX];
	size_t prefix_len;
	long timeout_ms;
	int64_t guard;           /* the leader key's create revision */
	int64_t hwm_mod;         /* the hwm key's mod revision, as last seen */
	uint64_t hwm;            /* as last committed or loaded */
	uint64_t txns;           /* transactions this store has written */
	bool broken;             /* an outcome it cannot know */
	bool deposed;            /* a batch refused: the leader key moved */
	bool standby;            /* not the leader: holds nothing */
	struct job job;
};

/* ---- keys ------------------------------------------------------------- */

static size_t
key_of(const struct store_etcd *s, const char *what, const char *name,
    size_t name_len, char *key)
{
	size_t n = s->prefix_len, w = strlen(what);

	memcpy(key, s->prefix, n);
	memcpy(key + n, what, w + 1);   /* its NUL, overwritten by a name */
	n += w;
	if (name_len > 0)
		memcpy(key + n, name, name_len);
	return n + name_len;
}

static json_t *
key_json(const struct store_etcd *s, const char *what, const char *name,
    size_t name_len)
{
	char key[KEY_MAX];

	return etcd_bytes(key, key_of(s, what, name, name_len, key));
}

/* ---- merging ---------------------------------------------------------- */

static int
merged_order(const void *a, const void *b)
{
	const struct merged *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c != 0)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The length of a key's name: up to its NUL, if it has one (a holder's
 * key, daemon/format.h; the only place this store looks into a key). */
static size_t
name_part(const struct merged *m)
{
	return format_key_name_len(m->name, m->name_len);
}

static bool
same_name(const struct merged *a, const struct merged *b)
{
	size_t n = name_part(a);

	return n == name_part(b) && memcmp(a->name, b->name, n) == 0;
}

/* A name's keys together (key order keeps them so), its deletes first. */
static int
deletes_first(const void *a, const void *b)
{
	const struct merged *x = a, *y = b;
	size_t nx = name_part(x), ny = name_part(y);
	int c = format_key_compare(x->name, nx, y->name, ny);

	if (c != 0)
		return c;
	if (x->op != y->op)
		return x->op == STORE_DEL ? -1 : 1;
	return format_key_compare(x->name, x->name_len, y->name, y->name_len);
}

/*
 * The batch's operations, one per key: the last one, which is what
 * applying them in order leaves (etcd refuses a key twice in one
 * transaction); then each name's keys together, deletes first (see
 * chunk_end).  -1 without memory.
 */
static int
merge(const struct store_batch *batch, struct job *job)
{
	struct store_batch_op op;
	size_t pos = 0, i, n = 0;

	job->n = 0;
	job->ops = calloc(batch->count > 0 ? batch->count : 1,
	    sizeof(*job->ops));
	if (job->ops == NULL)
		return -1;
	while (store_batch_next(batch, &pos, &op)) {
		struct merged *m = &job->ops[n];
		m->op = op.op;
		m->name = op.name;
		m->name_len = op.name_len;
		m->val = op.val;
		m->val_len = op.val_len;
		m->order = n++;
	}
	qsort(job->ops, n, sizeof(*job->ops), merged_order);
	for (i = 0; i < n; i++) {
		if (i + 1 < n && job->ops[i].name_len ==
		    job->ops[i + 1].name_len && memcmp(job->ops[i].name,
		    job->ops[i + 1].name, job->ops[i].name_len) == 0)
			continue;   /* a later one for the same name follows */
		job->ops[job->n++] = job->ops[i];
	}
	qsort(job->ops, job->n, sizeof(*job->ops), deletes_first);
	return 0;
}

/*
 * Where the chunk from job->chunk ends: after STORE_ETCD_TXN_RECORDS
 * keys, or before, so that a name's keys (its own and its holders') go in
 * one transaction and every name is either as before the batch or as
 * after it.  A name with more changed keys than a transaction takes is
 * split, its deletes first: a state between two of its transactions then
 * holds a subset of the keys it has after the batch, never more holders.
 */
static size_t
chunk_end(const struct job *job)
{
	size_t end = job->chunk + STORE_ETCD_TXN_RECORDS, cut;

	if (end >= job->n)
		return job->n;
	for (cut = end; cut > job->chunk &&
	    same_name(&job->ops[cut - 1], &job->ops[cut]); cut--)
		;
	return cut > job->chunk ? cut : end;
}

/* ---- one transaction -------------------------------------------------- */

/*
 * A transaction's JSON, written straight into one buffer: etcd's bytes
 * go as base64 and its numbers as digits, so nothing needs escaping, and
 * a batch costs no tree of jansson objects to build, dump and free.
 */
struct text {
	char *data;              /* NULL once out of memory */
	size_t len, cap;
};

static char *
text_room(struct text *t, size_t more)
{
	if (t->data != NULL && t->len + more + 1 > t->cap) {
		size_t cap = t->cap * 2 > t->len + more + 1 ? t->cap * 2 :
		    t->len + more + 1;
		char *p = realloc(t->data, cap);
		if (p == NULL)
			free(t->data);
		t->data = p;
		t->cap = cap;
	}
	return t->data != NULL ? t->data + t->len : NULL;
}

static void
text_add(struct text *t, const char *s)
{
	size_t n = strlen(s);
	char *at = text_room(t, n);

	if (at != NULL) {
		memcpy(at, s, n + 1);
		t->len += n;
	}
}

static void
text_bytes(struct text *t, const void *data, size_t len)
{
	char *at = text_room(t, ETCD_BASE64_LEN(len));

	if (at != NULL)
		t->len += etcd_base64(data, len, at);
}

/* "key":"<base64 of the key>" */
static void
text_key(struct text *t, const struct store_etcd *s, const char *what,
    const char *name, size_t name_len)
{
	char key[KEY_MAX];

	text_add(t, "\"key\":\"");
	text_bytes(t, key, key_of(s, what, name, name_len, key));
	text_add(t, "\"");
}

static void
text_compare(struct text *t, const struct store_etcd *s)
{
	char num[128];   /* a compare's tail and a 64-bit number */

	text_add(t, "\"compare\":[");
#ifndef LOCKD_BROKEN_SKIP_LEADER_COMPARE
	/* (Left out only in build/broken/lockd-skip-leader-compare, broken
	 * on purpose for the Makefile's guards of test_cluster.c: a deposed
	 * leader's batch then goes in.) */
	text_add(t, "{");
	text_key(t, s, "leader", NULL, 0);
	snprintf(num, sizeof(num), ",\"target\":\"CREATE\",\"result\":"
	    "\"EQUAL\",\"create_revision\":\"%" PRId64 "\"},", s->guard);
	text_add(t, num);
#endif
	text_add(t, "{");
	text_key(t, s, "hwm", NULL, 0);
	snprintf(num, sizeof(num), ",\"target\":\"MOD\",\"result\":"
	    "\"EQUAL\",\"mod_revision\":\"%" PRId64 "\"}]", s->hwm_mod);
	text_add(t, num);
}

/*
 * The transaction of the job's current chunk, its hwm value set: compare
 * the leader key's create revision and the hwm key's mod revision; put
 * hwm and the records; else read both keys.  Malloc'd text, or NULL
 * without memory.
 */
static char *
chunk_txn(struct store_etcd *s, struct job *job)
{
	struct text t = { malloc(4096), 0, 4096 };
	size_t i, end = chunk_end(job);

	if (job->attempt == 0) {
		job->value_len = (size_t)snprintf(job->value,
		    sizeof(job->value), "hwm=%" PRIu64 " leader=%" PRId64
		    " txn=%" PRIu64, job->hwm, s->guard, ++s->txns);
	}
	text_add(&t, "{");
	text_compare(&t, s);
	text_add(&t, ",\"success\":[{\"request_put\":{");
	text_key(&t, s, "hwm", NULL, 0);
	text_add(&t, ",\"value\":\"");
	text_bytes(&t, job->value, job->value_len);
	text_add(&t, "\"}}");
	for (i = job->chunk; i < job->n && i < end; i++) {
		const struct merged *m = &job->ops[i];
		text_add(&t, m->op == STORE_PUT ? ",{\"request_put\":{" :
		    ",{\"request_delete_range\":{");
		text_key(&t, s, "locks/", m->name, m->name_len);
		if (m->op == STORE_PUT) {
			text_add(&t, ",\"value\":\"");
			text_bytes(&t, m->val, m->val_len);
			text_add(&t, "\"");
		}
		text_add(&t, "}}");
	}
	text_add(&t, "],\"failure\":[{\"request_range\":{");
	text_key(&t, s, "leader", NULL, 0);
	text_add(&t, "}},{\"request_range\":{");
	text_key(&t, s, "hwm", NULL, 0);
	text_add(&t, "}}]}");
	return t.data;
}

/* The first kv of the i-th response (a request_range's), or NULL. */
static json_t *
response_kv(json_t *reply, size_t i)
{
	json_t *r = json_array_get(json_object_get(reply, "responses"), i);

	return json_array_get(json_object_get(json_object_get(r,
	    "response_range"), "kvs"), 0);
}

enum answer { ANSWER_WRITTEN, ANSWER_AGAIN, ANSWER_FAILED };

/* What etcd's answer to the current chunk means; why in the error. */
static enum answer
chunk_answer(struct store_etcd *s, struct job *job, enum etcd_result result,
    json_t *reply, const char *error)
{
	char value[HWM_VALUE_MAX];
	json_t *leader, *hwm;
	size_t len;

	if (result == ETCD_UNKNOWN) {
		job->uncertain = true;
		if (++job->attempt < STORE_ETCD_ATTEMPTS)
			return ANSWER_AGAIN;
		snprintf(s->base.error, sizeof(s->base.error), "etcd: %.200s",
		    error);
		return ANSWER_FAILED;
	}
	if (result == ETCD_REFUSED) {
		snprintf(s->base.error, sizeof(s->base.error),
		    "etcd refused the batch: %.200s", error);
		return ANSWER_FAILED;
	}
	if (json_is_true(json_object_get(reply, "succeeded"))) {
		s->hwm_mod = etcd_field_int(json_object_get(reply, "header"),
		    "revision");
		return ANSWER_WRITTEN;
	}
	/* A failed compare (etcd leaves "succeeded" out): a replay of a try
	 * that went in, a deposed leader, or another writer. */
	hwm = response_kv(reply, 1);
	if (hwm != NULL && etcd_field_bytes(hwm, "value", true, value,
	    sizeof(value), &len) == 0 && len == job->value_len &&
	    memcmp(value, job->value, len) == 0) {
		s->hwm_mod = etcd_field_int(hwm, "mod_revision");
		return ANSWER_WRITTEN;
	}
	leader = response_kv(reply, 0);
	if (etcd_field_int(leader, "create_revision") != s->guard) {
		/* Deposed, whatever its lease says: no batch of this term
		 * can go in, so the node must stop leading (leader.c). */
		s->deposed = true;
		snprintf(s->base.error, sizeof(s->base.error), "not the "
		    "leader: the leader key's create revision is %" PRId64
		    ", this node's %" PRId64,
		    etcd_field_int(leader, "create_revision"), s->guard);
	} else {
		/* Another writer of the hwm key (an operator's etcdctl put,
		 * say): every later batch would be refused the same way, so
		 * this node must start over from what etcd holds now. */
		s->broken = true;
		snprintf(s->base.error, sizeof(s->base.error), "the "
		    "high-water mark key changed under this node (mod "
		    "revision %" PRId64 ", expected %" PRId64 "); this node "
		    "must start over from etcd",
		    etcd_field_int(hwm, "mod_revision"), s->hwm_mod);
	}
	return ANSWER_FAILED;
}

/*
 * After a chunk's answer: 1 to send the next (or the same) chunk, or 0
 * with the batch's result in *rc.
 */
static int
job_step(struct store_etcd *s, struct job *job, enum answer a, int *rc)
{
	switch (a) {
	case ANSWER_AGAIN:
		return 1;
	case ANSWER_WRITTEN:
		job->chunk = chunk_end(job);
		job->attempt = 0;
		job->uncertain = false;
		if (job->chunk < job->n)
			return 1;
		s->hwm = job->hwm;
		*rc = 0;
		return 0;
	case ANSWER_FAILED:
		break;
	}
	/* Nothing of the batch went in only when its first transaction was
	 * answered, each time, and refused. */
	if (job->chunk > 0 || job->uncertain) {
		size_t len = strlen(s->base.error);
		s->broken = true;
		snprintf(s->base.error + len, sizeof(s->base.error) - len,
		    "; %s: this node must start over from etcd",
		    job->chunk > 0 ? "the batch went in in part" :
		    "the batch may have gone in");
	}
	*rc = -1;
	return 0;
}

static int
job_begin(struct store_etcd *s, const struct store_batch *batch,
    struct job *job)
{
	if (s->broken)
		return -1;   /* the error says why already */
	if (s->standby) {
		snprintf(s->base.error, sizeof(s->base.error),
		    "this node is not the leader");
		return -1;
	}
	memset(job, 0, sizeof(*job));
	if (merge(batch, job) != 0) {
		snprintf(s->base.error, sizeof(s->base.error),
		    "out of memory merging the batch");
		return -1;
	}
	job->hwm = batch->has_hwm && batch->hwm > s->hwm ? batch->hwm : s->hwm;
	return 0;
}

static void
job_end(struct job *job)
{
	free(job->ops);
	job->ops = NULL;
	job->active = false;
}

/* ---- the seam --------------------------------------------------------- */

static int
etcd_commit(struct store *store, const struct store_batch *batch)
{
	struct store_etcd *s = (struct store_etcd *)store;
	struct job job;
	int rc = -1;

	if (job_begin(s, batch, &job) != 0)
		return -1;
	for (;;) {
		char error[512];
		json_t *reply = NULL;
		enum etcd_result result = etcd_request_sync_text(s->etcd,
		    "/v3/kv/txn", chunk_txn(s, &job), s->timeout_ms, &reply,
		    error, sizeof(error));
		enum answer a = chunk_answer(s, &job, result, reply, error);

		json_decref(reply);
		if (job_step(s, &job, a, &rc) == 0)
			break;
	}
	job_end(&job);
	return rc;
}

static void on_chunk(void *ctx, enum etcd_result result, json_t *reply,
    const char *error);

static int
send_chunk(struct store_etcd *s)
{
	return etcd_request_text(s->etcd, "/v3/kv/txn", chunk_txn(s, &s->job),
	    s->timeout_ms, on_chunk, s);
}

static void
on_chunk(void *ctx, enum etcd_result result, json_t *reply, const char *error)
{
	struct store_etcd *s = ctx;
	struct job *job = &s->job;
	enum answer a = chunk_answer(s, job, result, reply, error);
	int rc;

	if (job_step(s, job, a, &rc) == 1) {
		if (send_chunk(s) == 0)
			return;
		/* Could not even start: the chunk is not in flight now. */
		snprintf(s->base.error, sizeof(s->base.error),
		    "cannot start a request to etcd");
		if (job_step(s, job, ANSWER_FAILED, &rc) == 1)
			rc = -1;
	}
	job_end(job);
	job->done(job->ctx, rc);
}

static int
etcd_commit_start(struct store *store, const struct store_batch *batch,
    void (*done)(void *ctx, int rc), void *ctx)
{
	struct store_etcd *s = (struct store_etcd *)store;

	if (s->job.active) {
		snprintf(s->base.error, sizeof(s->base.error),
		    "a batch is in flight already");
		return -1;
	}
	if (job_begin(s, batch, &s->job) != 0)
		return -1;
	s->job.done = done;
	s->job.ctx = ctx;
	s->job.active = true;
	if (send_chunk(s) != 0) {
		job_end(&s->job);
		snprintf(s->base.error, sizeof(s->base.error),
		    "cannot start a request to etcd");
		return -1;
	}
	return 0;
}

/* A range read of one key, or of a page of the records. */
static enum etcd_result
range(struct store_etcd *s, json_t *body, json_t **reply)
{
	char error[512];
	enum etcd_result r = etcd_request_sync(s->etcd, "/v3/kv/range", body,
	    s->timeout_ms, reply, error, sizeof(error));

	if (r != ETCD_OK)
		snprintf(s->base.error, sizeof(s->base.error), "etcd: %.200s",
		    error);
	return r;
}

static int
etcd_get(struct store *store, const char *name, size_t name_len, void *val,
    size_t *val_len)
{
	struct store_etcd *s = (struct store_etcd *)store;
	json_t *reply, *kv;
	int rc;

	if (s->broken)
		return -1;
	if (s->standby)
		return 0;
	if (range(s, json_pack("{s:o}", "key", key_json(s, "locks/", name,
	    name_len)), &reply) != ETCD_OK)
		return -1;
	kv = json_array_get(json_object_get(reply, "kvs"), 0);
	rc = kv == NULL ? 0 : etcd_field_bytes(kv, "value", true, val,
	    STORE_VALUE_MAX, val_len) == 0 ? 1 : -1;
	if (rc < 0)
		snprintf(s->base.error, sizeof(s->base.error),
		    "etcd: a record's value is not %d bytes of base64 or "
		    "fewer", STORE_VALUE_MAX);
	json_decref(reply);
	return rc;
}

/* The hwm key's figures, from its kv (absent: nothing written yet). */
static int
read_hwm(struct store_etcd *s, json_t *kv)
{
	char value[HWM_VALUE_MAX + 1], *end;
	size_t len;

	s->hwm = 0;
	s->hwm_mod = 0;
	if (kv == NULL)
		return 0;
	if (etcd_field_bytes(kv, "value", true, value, HWM_VALUE_MAX,
	    &len) != 0)
		goto bad;
	value[len] = '\0';
	if (strncmp(value, "hwm=", 4) != 0 || value[4] < '0' ||
	    value[4] > '9')
		goto bad;
	errno = 0;
	s->hwm = strtoull(value + 4, &end, 10);
	if (errno != 0 || (*end != ' ' && *end != '\0'))
		goto bad;
	s->hwm_mod = etcd_field_int(kv, "mod_revision");
	return 0;
bad:
	snprintf(s->base.error, sizeof(s->base.error),
	    "etcd: the high-water mark key holds no \"hwm=<n>\"");
	return -1;
}

/*
 * Pages of STORE_ETCD_PAGE records in key order (no sort: etcd 3.4 reads a
 * sorted range whole, whatever the limit), every page read at the first
 * page's revision, so the load is one consistent state.
 */
static int
etcd_load(struct store *store,
    int (*fn)(void *ctx, const char *name, size_t name_len, const void *val,
        size_t val_len),
    void *ctx, uint64_t *hwm)
{
	struct store_etcd *s = (struct store_etcd *)store;
	char from[KEY_MAX + 1], end[KEY_MAX];
	size_t from_len, end_len, skip = s->prefix_len + 6;
	int64_t revision = 0;
	json_t *reply;
	bool more = true;
	int rc;

	if (s->standby) {
		*hwm = 0;
		return 0;
	}
	from_len = key_of(s, "locks/", NULL, 0, from);
	end_len = etcd_prefix_end(from, from_len, end);
	while (more) {
		json_t *kvs, *kv;
		char rev[24];
		size_t i;

		snprintf(rev, sizeof(rev), "%" PRId64, revision);
		if (range(s, json_pack("{s:o,s:o,s:i,s:s}", "key",
		    etcd_bytes(from, from_len), "range_end",
		    etcd_bytes(end, end_len), "limit", STORE_ETCD_PAGE,
		    "revision", rev), &reply) != ETCD_OK)
			return -1;
		if (revision == 0)
			revision = etcd_field_int(json_object_get(reply,
			    "header"), "revision");
		more = json_is_true(json_object_get(reply, "more"));
		kvs = json_object_get(reply, "kvs");
		json_array_foreach(kvs, i, kv) {
			char key[KEY_MAX + 1], val[STORE_VALUE_MAX];
			size_t key_len, val_len;
			if (etcd_field_bytes(kv, "key", false, key, KEY_MAX,
			    &key_len) != 0 || key_len <= skip ||
			    etcd_field_bytes(kv, "value", true, val,
			    sizeof(val), &val_len) != 0) {
				snprintf(s->base.error, sizeof(s->base.error),
				    "etcd: a key or value under %s is not "
				    "what lockd writes", s->prefix);
				json_decref(reply);
				return -1;
			}
			if ((rc = fn(ctx, key + skip, key_len - skip, val,
			    val_len)) != 0) {
				json_decref(reply);
				return rc;
			}
			/* The next page starts just after this key. */
			memcpy(from, key, key_len);
			from[key_len] = '\0';
			from_len = key_len + 1;
		}
		if (json_array_size(kvs) == 0)
			more = false;
		json_decref(reply);
	}
	{
		char rev[24];

		snprintf(rev, sizeof(rev), "%" PRId64, revision);
		if (range(s, json_pack("{s:o,s:s}", "key", key_json(s, "hwm",
		    NULL, 0), "revision", rev), &reply) != ETCD_OK)
			return -1;
		rc = read_hwm(s, json_array_get(json_object_get(reply, "kvs"),
		    0));
		json_decref(reply);
		if (rc != 0)
			return -1;
	}
	*hwm = s->hwm;
	return 0;
}

static void
etcd_store_close(struct store *store)
{
	struct store_etcd *s = (struct store_etcd *)store;

	free(s->job.ops);
	free(s);
}

static const struct store_ops etcd_ops = {
	.commit = etcd_commit,
	.get = etcd_get,
	.load = etcd_load,
	.close = etcd_store_close,
	.commit_start = etcd_commit_start,
};

bool
store_etcd_cluster_valid(const char *cluster)
{
	size_t n = strlen(cluster), i;

	if (n == 0 || n > STORE_ETCD_CLUSTER_MAX)
		return false;
	for (i = 0; i < n; i++) {
		char c = cluster[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.'))
			return false;
	}
	return true;
}

size_t
store_etcd_prefix(const char *cluster, char *out, size_t cap)
{
	return (size_t)snprintf(out, cap, "/lockd/%s/", cluster);
}

struct store *
store_etcd_open(struct etcd *etcd, const char *cluster, long timeout_ms,
    char *err, size_t err_len)
{
	struct store_etcd *s;

	if (!store_etcd_cluster_valid(cluster)) {
		snprintf(err, err_len, "--cluster: \"%.80s\" is not 1 to %d "
		    "letters, digits, '-', '_' or '.'", cluster,
		    STORE_ETCD_CLUSTER_MAX);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->base.ops = &etcd_ops;
	s->etcd = etcd;
	s->timeout_ms = timeout_ms;
	s->prefix_len = store_etcd_prefix(cluster, s->prefix,
	    sizeof(s->prefix));
	return &s->base;
}

void
store_etcd_guard(struct store *store, int64_t create_revision)
{
	((struct store_etcd *)store)->guard = create_revision;
	((struct store_etcd *)store)->deposed = false;
}

void
store_etcd_standby(struct store *store, bool standby)
{
	((struct store_etcd *)store)->standby = standby;
}

void
store_etcd_heal(struct store *store)
{
	((struct store_etcd *)store)->broken = false;
	((struct store_etcd *)store)->deposed = false;
}

bool
store_etcd_broken(const struct store *store)
{
	return ((const struct store_etcd *)store)->broken;
}

bool
store_etcd_deposed(const struct store *store)
{
	return ((const struct store_etcd *)store)->deposed;
}
