/*
 * log.c - the daemon's event log: timestamped key=value lines on stderr.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/log.h"

enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int
log_level_parse(const char *s)
{
	int i;

	for (i = 0; i <= LOG_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *
log_level_name(int level)
{
	return level >= LOG_ERROR && level <= LOG_DEBUG ? level_names[level] :
	    "?";
}

/* One line; suppressed, when not 0, is appended as suppressed=N. */
static void log_line(enum log_level level, const char *event,
    uint64_t suppressed, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void
log_line(enum log_level level, const char *event, uint64_t suppressed,
    const char *fmt, va_list ap)
{
	char line[2048], stamp[32];
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s event=%s",
	    stamp, ts.tv_nsec / 1000000, level_names[level], event);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	if (fmt != NULL && fmt[0] != '\0') {
		line[n++] = ' ';
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	}
	/* One write per line, so lines from a crash stay whole. */
	if (suppressed > 0)
		fprintf(stderr, "%s suppressed=%llu\n", line,
		    (unsigned long long)suppressed);
	else
		fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

void
log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	va_list ap;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	log_line(level, event, 0, fmt, ap);
	va_end(ap);
}

void
log_limited(struct log_limit *limit, enum log_level level, const char *event,
    const char *fmt, ...)
{
	struct timespec ts;
	unsigned long long now;
	va_list ap;

	if (level > log_threshold)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (unsigned long long)ts.tv_sec * 1000 +
	    (unsigned long long)ts.tv_nsec / 1000000;
	if (limit->window_start == 0 ||
	    now - limit->window_start >= LOG_LIMIT_WINDOW_MS) {
		limit->window_start = now;
		limit->lines = 0;
	}
	if (limit->lines >= LOG_LIMIT_LINES) {
		limit->suppressed++;
		return;
	}
	limit->lines++;
	va_start(ap, fmt);
	log_line(level, event, limit->suppressed, fmt, ap);
	va_end(ap);
	limit->suppressed = 0;
}

const char *
log_value(char buf[LOG_VALUE_MAX + 1], const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	bool plain = len > 0;
	size_t i, n = 0;

	if (len > LOG_NAME_BYTES)
		len = LOG_NAME_BYTES;
	for (i = 0; i < len && plain; i++) {
		unsigned char c = (unsigned char)s[i];
		plain = c > 0x20 && c < 0x7f && c != '"' && c != '\\' &&
		    c != '=';
	}
	if (plain) {
		memcpy(buf, s, len);
		buf[len] = '\0';
		return buf;
	}
	buf[n++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c > 0x20 && c < 0x7f) {
			buf[n++] = (char)c;
		} else {
			buf[n++] = '\\';
			buf[n++] = 'x';
			buf[n++] = hex[c >> 4];
			buf[n++] = hex[c & 15];
		}
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}
