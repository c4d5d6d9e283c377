/*
 * metrics.h - lockd's instruments and their Prometheus text rendering.
 * Counters and histograms are plain integers updated on the event loop's
 * thread; rendering reads them there too, so nothing needs a lock.
 */
#ifndef LOCKD_METRICS_H
#define LOCKD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_BUCKETS 16

/* A histogram with fixed upper bounds (in the metric's base unit). */
struct metrics_histogram {
	const double *bounds;
	size_t nbounds;
	uint64_t counts[METRICS_MAX_BUCKETS];  /* per bucket, not cumulative */
	uint64_t count;                        /* all observations (+Inf) */
	double sum;
};

void metrics_observe(struct metrics_histogram *h, double value);

enum metrics_limit {
	METRICS_LIMIT_CONNECTIONS,
	METRICS_LIMIT_HELD,
	METRICS_LIMIT_WAITERS,
	METRICS_LIMIT_CONNECTION_WAITERS,
	METRICS_LIMIT_OUTPUT,
	METRICS_LIMIT_PRINCIPAL_CONNECTIONS,
	METRICS_LIMIT_PRINCIPAL_HELD,
	METRICS_LIMIT_PRINCIPAL_WAITERS,
	METRICS_LIMIT_COUNT
};

struct metrics {
	struct metrics_histogram acquire_wait;    /* seconds queued */
	struct metrics_histogram hold;            /* seconds held */
	struct metrics_histogram commit_duration; /* seconds */
	struct metrics_histogram commit_records;  /* records per commit */
	uint64_t limit_hits[METRICS_LIMIT_COUNT];
	double start_time;                        /* seconds since the epoch */
};

void metrics_init(struct metrics *m);

/* Appends text to a growing buffer; returns -1 when allocation fails. */
struct metrics_text {
	char *data;
	size_t len, cap;
	int failed;
};
void metrics_printf(struct metrics_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void metrics_render_histogram(struct metrics_text *t, const char *name,
    const char *help, const struct metrics_histogram *h);

extern const char *const metrics_limit_names[METRICS_LIMIT_COUNT];

#endif
