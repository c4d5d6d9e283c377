/*
 * log.h - one line per notable event on stderr, in key=value form:
 *   ts=2026-12-02T15:04:05.123Z level=info event=listen addr=127.0.0.1:7420
 * so that journald keeps it whole and grep finds it.  Values that hold
 * spaces are quoted.
 */
#ifndef LOCKD_LOG_H
#define LOCKD_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern enum log_level log_threshold;

/* Parses "error|warn|info|debug"; returns -1 when unknown. */
int log_level_parse(const char *s);

/*
 * Logs `event` with the fields given by fmt, which must be key=value pairs
 * separated by spaces (printf-style).  Cheap when the level is filtered.
 */
void log_event(enum log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
