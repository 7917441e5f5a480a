/*
 * log.h -- onced's structured log (internal to libonce): one line per event,
 * as text ("2026-12-03T10:53:14.123Z info request method=SendMessage ...")
 * or as one JSON object per line, on one file descriptor (stderr).
 *
 * Threads never wait for each other here: a line is formatted into the
 * caller's buffer and leaves in a single write(2), which the kernel keeps
 * whole for lines up to PIPE_BUF on a pipe and for any file opened with
 * O_APPEND. There is no lock. A line longer than ONCE__LOG_LINE is cut
 * (and says so).
 *
 * Each thread has a log context: the W3C trace context of the request it
 * serves (or of the turn it runs) and what the request line will report.
 * Every line a thread writes carries its task and traceparent, so every
 * line about a task names it.
 */
#ifndef ONCE_CORE_LOG_H
#define ONCE_CORE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "once/once.h"

enum { ONCE_LOG_ERROR = 0, ONCE_LOG_WARN = 1, ONCE_LOG_INFO = 2, ONCE_LOG_DEBUG = 3 };
enum { ONCE_LOG_TEXT = 0, ONCE_LOG_JSON = 1 };

/* "error".."debug" / "text", "json" -> the enum, or -1. */
int once__log_level_parse(const char *s);
int once__log_format_parse(const char *s);

/* Set before any thread logs (onced's main): lines at or below level, in
 * this format, to fd. Until it is called nothing is logged. */
void once__log_setup(int level, int format, int fd);
int once__log_enabled(int level);
/* The level in force, and a new one (SIGHUP's --log-level-file): any
 * thread; lines already begun are written whole. */
int once__log_level(void);
void once__log_set_level(int level);

/* A version-00 traceparent is exactly this long: 00-<32>-<16>-<2>. */
#define ONCE_TRACEPARENT_LEN 55

/* 1 if s is a valid W3C traceparent (version 00, or a later version's
 * first 55 characters followed by '-'); ids not all zero, lowercase hex. */
int once__traceparent_valid(const char *s);

/* This thread's context. Fields are empty strings when unknown. */
typedef struct once__logctx {
    char traceparent[ONCE_TRACEPARENT_LEN + 1];
    char task_id[ONCE_ID_MAX + 1];
    char method[48];     /* the JSON-RPC method being served */
    char outcome[48];    /* what the request line reports */
} once__logctx;

once__logctx *once__log_ctx(void);
/* Empty the context (a request or turn begins or ends). */
void once__log_ctx_clear(void);
/* Set one field of the context (NULL = leave it). An outcome already set
 * is kept: the first verdict is the one that decided. */
void once__log_ctx_task(const char *task_id);
void once__log_ctx_method(const char *method);
void once__log_ctx_outcome(const char *outcome);
void once__log_ctx_traceparent(const char *traceparent);   /* NULL or invalid: cleared */

/* One line under construction, on the caller's stack. */
#define ONCE__LOG_LINE 2048
typedef struct once__logline {
    char buf[ONCE__LOG_LINE];
    size_t len;
    int format;
    int cut;     /* a field was left out: nothing more is added */
    int trunc;   /* a text value was cut short (once__log_text) */
    int has_task;
} once__logline;

/* Begin a line: time, level, event ("request", "takeover", ...). 1, or 0
 * when level is not logged: nothing is begun and the caller adds nothing. */
int once__log_begin(once__logline *l, int level, const char *event);
void once__log_str(once__logline *l, const char *key, const char *value);  /* NULL: skipped */
void once__log_int(once__logline *l, const char *key, int64_t value);
/* Text a peer supplied (an agent's log or stderr line): value[0..n), any
 * bytes (NUL, control characters, invalid UTF-8 are escaped like every
 * value). Cut short to fit, leaving ONCE__LOG_TEXT_ROOM for the fields
 * after it (the task, the traceparent), instead of being left out. */
#define ONCE__LOG_TEXT_ROOM 192
void once__log_text(once__logline *l, const char *key, const char *value, size_t n);
/* One line: event, with message as its "message" field. */
void once__log_note(int level, const char *event, const char *message);
/* Add the thread's task (unless a "task" field was given) and
 * traceparent, end the line and write it. */
void once__log_end(once__logline *l);

#endif /* ONCE_CORE_LOG_H */
