/*
 * metrics.c - histograms and the Prometheus text exposition helpers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics.h"

static const double wait_bounds[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5,
    1, 5, 10, 30, 60, 300 };
static const double hold_bounds[] = { 0.01, 0.1, 0.5, 1, 5, 10, 30, 60,
    120, 300, 1800 };
static const double commit_bounds[] = { 0.0001, 0.00025, 0.0005, 0.001,
    0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1 };
static const double record_bounds[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256,
    512, 1024, 4096 };

const char *const metrics_limit_names[METRICS_LIMIT_COUNT] = {
	"connections", "held", "waiters", "connection_waiters", "output",
	"principal_connections", "principal_held", "principal_waiters"
};

/* The text of one scrape starts this large (most fit) and doubles. */
#define METRICS_TEXT_FIRST_CAP 8192

#define BOUNDS(h, b) do { \
	(h)->bounds = (b); \
	(h)->nbounds = sizeof(b) / sizeof((b)[0]); \
} while (0)

void
metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof(*m));
	BOUNDS(&m->acquire_wait, wait_bounds);
	BOUNDS(&m->hold, hold_bounds);
	BOUNDS(&m->commit_duration, commit_bounds);
	BOUNDS(&m->commit_records, record_bounds);
}

void
metrics_observe(struct metrics_histogram *h, double value)
{
	size_t i;

	for (i = 0; i < h->nbounds; i++)
		if (value <= h->bounds[i]) {
			h->counts[i]++;
			break;
		}
	h->count++;
	h->sum += value;
}

void
metrics_printf(struct metrics_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		n = vsnprintf(t->data ? t->data + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap * 2 : METRICS_TEXT_FIRST_CAP;
		while (cap - t->len <= (size_t)n)
			cap *= 2;
		char *p = realloc(t->data, cap);
		if (p == NULL) {
			t->failed = 1;
			return;
		}
		t->data = p;
		t->cap = cap;
	}
}

void
metrics_render_histogram(struct metrics_text *t, const char *name,
    const char *help, const struct metrics_histogram *h)
{
	uint64_t cumulative = 0;
	size_t i;

	metrics_printf(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help,
	    name);
	for (i = 0; i < h->nbounds; i++) {
		cumulative += h->counts[i];
		metrics_printf(t, "%s_bucket{le=\"%g\"} %llu\n", name,
		    h->bounds[i], (unsigned long long)cumulative);
	}
	metrics_printf(t, "%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)h->count);
	metrics_printf(t, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name,
	    (unsigned long long)h->count);
}
