/*
 * log.c - the daemon's event log: timestamped key=value lines on stderr.
 */
#include <stdarg.h>
#include <stdbool.h>
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

void
log_event(enum log_level level, const char *event, const char *fmt, ...)
{
	char line[2048], stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level > log_threshold)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s event=%s",
	    stamp, ts.tv_nsec / 1000000, level_names[level], event);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	if (fmt != NULL && fmt[0] != '\0') {
		line[n++] = ' ';
		va_start(ap, fmt);
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	/* One write per line, so lines from a crash stay whole. */
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
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
