/*
 * log.h - one line per notable event on stderr, in key=value form:
 *   ts=2026-12-02T15:04:05.123Z level=info event=listen addr=127.0.0.1:7420
 * so that journald keeps it whole and grep finds it.  Values that hold
 * spaces are quoted.
 */
#ifndef LOCKD_LOG_H
#define LOCKD_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_threshold;

/* Parses "error|warn|info|debug"; returns -1 when unknown. */
int log_level_parse(const char *s);
/* The name of a level, as log_level_parse takes it. */
const char *log_level_name(int level);

/*
 * Logs `event` with the fields given by fmt, which must be key=value pairs
 * separated by spaces (printf-style).  Cheap when the level is filtered.
 */
void log_event(enum log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * A log line a client can provoke at will (a failed handshake, a failed
 * AUTH, a reclaimed lease) goes through a limit: at most LOG_LIMIT_LINES
 * of one kind per LOG_LIMIT_WINDOW_MS; the rest are counted, and the next
 * line written says how many were not (suppressed=N).
 */
#define LOG_LIMIT_LINES 10
#define LOG_LIMIT_WINDOW_MS 1000
struct log_limit {
	unsigned long long window_start;   /* ms, monotonic; 0: none yet */
	unsigned lines;                    /* written in this window */
	unsigned long long suppressed;     /* not written since the last */
};
void log_limited(struct log_limit *limit, enum log_level level,
    const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* True when events of this level are written. */
#define log_enabled(level) ((level) <= log_threshold)

/*
 * Renders a lock name (at most LOG_NAME_BYTES bytes, any byte but blanks
 * and controls) as a value no reader of the log can mistake: as it is when
 * every byte is printable ASCII other than '"', '\\' and '=', else in
 * double quotes with \" \\ and \xNN for every other byte.  Returns buf.
 */
#define LOG_NAME_BYTES 255
#define LOG_VALUE_MAX (4 * LOG_NAME_BYTES + 2)
const char *log_value(char buf[LOG_VALUE_MAX + 1], const char *s, size_t len);

#endif
