/*
 * service_world.c - the unit tests' service over a moved clock and the
 * in-memory store (service_world.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/lib/service_world.h"

static core_time
world_mono(void *ctx)
{
	return ((struct service_world *)ctx)->mono;
}

static int64_t
world_wall(void *ctx)
{
	return ((struct service_world *)ctx)->wall;
}

static uint64_t
counting_secret(void *ctx)
{
	uint64_t *n = ctx;

	return 0x1000 + (*n)++;
}

struct service_world *
service_world_new(void)
{
	struct service_world *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->mono = 1000000;
	w->wall = 1700000000000;
	w->clock.mono = world_mono;
	w->clock.wall = world_wall;
	w->clock.ctx = w;
	memset(w->clock.boot_id, 0xab, 16);
	store_mem_init(&w->store);
	service_config_defaults(&w->config);
	w->config.core.secret = counting_secret;
	w->config.core.secret_ctx = &w->secrets;
	return w;
}

void
service_world_open(struct service_world *w)
{
	assert_int_equal(service_open(&w->svc, &w->config, &w->store.base,
	    &w->clock, NULL), 0);
	for (int i = 0; i < SERVICE_WORLD_CONNS; i++)
		service_conn_open(&w->svc, &w->conns[i]);
	w->open = true;
}

void
service_world_close(struct service_world *w)
{
	service_close(&w->svc);
	w->open = false;
}

void
service_world_free(struct service_world *w)
{
	if (w->open)
		service_close(&w->svc);
	store_mem_free(&w->store);
	free(w);
}

void
service_world_advance(struct service_world *w, int64_t ms)
{
	w->mono += ms;
	w->wall += ms;
}

void
service_world_feed(struct service_world *w, int c, const char *text)
{
	service_conn_feed(&w->svc, &w->conns[c], text, strlen(text));
}

void
service_world_feedf(struct service_world *w, int c, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(line));
	service_world_feed(w, c, line);
}

char *
service_world_take(struct service_world *w, int c)
{
	static char buf[1 << 20];
	struct service_conn *conn = &w->conns[c];
	size_t n = conn->out.len < sizeof(buf) - 1 ? conn->out.len :
	    sizeof(buf) - 1;

	if (n > 0)
		memcpy(buf, conn->out.data, n);
	buf[n] = '\0';
	service_conn_written(conn, conn->out.len);
	return buf;
}

void
service_world_handle(const char *granted, char *out)
{
	const char *h = strstr(granted, "handle=");
	size_t n;

	if (h == NULL) {
		out[0] = '\0';
		fail_msg("not a grant: %s", granted);
		return;
	}
	h += 7;
	n = strcspn(h, " \r\n");
	memcpy(out, h, n);
	out[n] = '\0';
}
