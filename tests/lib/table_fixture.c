/*
 * table_fixture.c - a lock table driven by hand for the unit tests
 * (table_fixture.h).  It keeps what the table reports and nothing else:
 * every expectation stays in the tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/table_fixture.h"

long table_fixture_alloc_budget = -1;
unsigned long table_fixture_alloc_failures;

static void *
seam_realloc(void *p, size_t size)
{
	/* core.h promises never to ask for zero bytes. */
	assert_true(size != 0);
	if (table_fixture_alloc_budget == 0) {
		table_fixture_alloc_failures++;
		return NULL;
	}
	if (table_fixture_alloc_budget > 0)
		table_fixture_alloc_budget--;
	return realloc(p, size);
}

static uint64_t
seam_secret(void *ctx)
{
	struct table_fixture *f = ctx;

	return TABLE_FIXTURE_SECRET(++f->secrets);
}

static void
sink_record(void *ctx, const struct core_reply *r)
{
	struct table_fixture *f = ctx;
	struct table_fixture_reply *g;

	if (f->ngot == f->capgot) {
		f->capgot = f->capgot ? 2 * f->capgot : 256;
		f->got = realloc(f->got, f->capgot * sizeof(*f->got));
		assert_non_null(f->got);
	}
	g = &f->got[f->ngot++];
	memset(g, 0, sizeof(*g));
	g->r = *r;
	if (r->name != NULL) {
		assert_true(r->name_len <= CORE_NAME_MAX);
		memcpy(g->name, r->name, r->name_len);
	}
	if (r->status != NULL)
		g->status = *r->status;
	g->r.name = NULL;
	g->r.status = NULL;
}

static void
change_record(void *ctx, const char *name, size_t name_len,
    uint64_t key_fence, const struct core_record *rec)
{
	struct table_fixture *f = ctx;
	struct table_fixture_change *c;

	assert_true(f->nchanges < TABLE_FIXTURE_CHANGES);
	c = &f->changes[f->nchanges++];
	memset(c, 0, sizeof(*c));
	memcpy(c->name, name, name_len);
	c->key_fence = key_fence;
	c->present = rec != NULL;
	if (rec != NULL)
		c->rec = *rec;
}

struct core_sink
table_fixture_sink(struct table_fixture *f)
{
	struct core_sink sink = { sink_record, f };

	return sink;
}

void
table_fixture_start(struct table_fixture *f)
{
	size_t i;

	assert_int_equal(core_table_init(&f->table, &f->config,
	    &core_rules_std, table_fixture_sink(f)), CORE_OK);
	for (i = 0; i < TABLE_FIXTURE_SESSIONS; i++)
		core_session_init(&f->s[i], i + 1);
	f->ngot = 0;
}

void
table_fixture_stop(struct table_fixture *f)
{
	size_t i;

	for (i = 0; i < TABLE_FIXTURE_SESSIONS; i++)
		core_disconnect(&f->table, &f->s[i], 0);
	core_table_destroy(&f->table);
}

int
table_fixture_setup(void **state)
{
	struct table_fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	table_fixture_alloc_budget = -1;
	core_config_defaults(&f->config);
	f->config.secret = seam_secret;
	f->config.secret_ctx = f;
	f->config.realloc = seam_realloc;
	f->config.hash_key[0] = 0x0123456789abcdefULL;
	f->config.hash_key[1] = 0xfedcba9876543210ULL;
	table_fixture_start(f);
	*state = f;
	return 0;
}

int
table_fixture_teardown(void **state)
{
	struct table_fixture *f = *state;

	table_fixture_alloc_budget = -1;
	table_fixture_stop(f);
	free(f->got);
	free(f);
	return 0;
}

void
table_fixture_restart(struct table_fixture *f)
{
	table_fixture_stop(f);
	table_fixture_start(f);
}

size_t
table_fixture_drain(struct table_fixture *f)
{
	size_t n;

	f->nchanges = 0;
	n = core_table_changes(&f->table, change_record, f, &f->hwm_changed);
	assert_int_equal(n, f->nchanges);
	return n;
}
