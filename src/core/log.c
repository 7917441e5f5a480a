/*
 * log.c -- the structured log (log.h): settings, the per-thread context,
 * the line builder and its one write(2).
 *
 * Settings are globals written by once__log_setup, before other threads
 * exist in onced, but switched at run time by tests that capture the log
 * while threads write to it: they are read and written atomically (relaxed:
 * a line takes the settings of the moment it starts). The context is
 * thread-local, so reading and changing it needs no lock either.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/quote.h"
#include "core/str.h"
#include "core/log.h"

/* Off until a program asks for lines (onced does at start): a library
 * writes nothing to a descriptor it was not given. */
static int log_level = -1;
static int log_format = ONCE_LOG_TEXT;
static int log_fd = 2;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int once__log_level_parse(const char *s)
{
    for (int i = 0; s != NULL && i < 4; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

int once__log_format_parse(const char *s)
{
    if (s != NULL && strcmp(s, "text") == 0)
        return ONCE_LOG_TEXT;
    if (s != NULL && strcmp(s, "json") == 0)
        return ONCE_LOG_JSON;
    return -1;
}

void once__log_setup(int level, int format, int fd)
{
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
    __atomic_store_n(&log_format, format, __ATOMIC_RELAXED);
    __atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
}

int once__log_level(void)
{
    return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void once__log_set_level(int level)
{
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

int once__log_enabled(int level)
{
    return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

/* --- trace context ------------------------------------------------------------ */

static int hex_run(const char *s, size_t n, int *nonzero)
{
    *nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
        *nonzero |= c != '0';
    }
    return 1;
}

int once__traceparent_valid(const char *s)
{
    int nz;
    if (s == NULL || strlen(s) < ONCE_TRACEPARENT_LEN)
        return 0;
    if (!hex_run(s, 2, &nz) || strncmp(s, "ff", 2) == 0 || s[2] != '-' || s[35] != '-' ||
        s[52] != '-')
        return 0;
    if (!hex_run(s + 3, 32, &nz) || !nz || !hex_run(s + 36, 16, &nz) || !nz ||
        !hex_run(s + 53, 2, &nz))
        return 0;
    /* Version 00 is exactly 55 characters; a later version may append
     * fields after a '-' (W3C Trace Context, "versioning"). */
    if (strncmp(s, "00", 2) == 0)
        return s[ONCE_TRACEPARENT_LEN] == '\0';
    return s[ONCE_TRACEPARENT_LEN] == '\0' || s[ONCE_TRACEPARENT_LEN] == '-';
}

static __thread once__logctx tl_ctx;

once__logctx *once__log_ctx(void)
{
    return &tl_ctx;
}

void once__log_ctx_clear(void)
{
    memset(&tl_ctx, 0, sizeof tl_ctx);
}

void once__log_ctx_task(const char *task_id)
{
    if (task_id != NULL)
        once__strlcpy(tl_ctx.task_id, task_id, sizeof tl_ctx.task_id);
}

void once__log_ctx_method(const char *method)
{
    if (method != NULL)
        once__strlcpy(tl_ctx.method, method, sizeof tl_ctx.method);
}

void once__log_ctx_outcome(const char *outcome)
{
    if (outcome != NULL && tl_ctx.outcome[0] == '\0')
        once__strlcpy(tl_ctx.outcome, outcome, sizeof tl_ctx.outcome);
}

void once__log_ctx_traceparent(const char *traceparent)
{
    /* A later version's extra fields are left out: the first 55
     * characters are what every line carries. */
    size_t n = once__traceparent_valid(traceparent) ? ONCE_TRACEPARENT_LEN : 0;
    if (n > 0)
        memcpy(tl_ctx.traceparent, traceparent, n);
    tl_ctx.traceparent[n] = '\0';
}

/* --- the line ---------------------------------------------------------------------- */

/* Room always kept for the cut marker and the line's end: a field that
 * does not fit is left out whole (the line says cut), so a line is always
 * well formed. */
#define TAIL 16

static void put(once__logline *l, const char *s, size_t n)
{
    if (l->cut || l->len + n > sizeof l->buf - TAIL) {
        l->cut = 1;
        return;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void puts_(once__logline *l, const char *s)
{
    put(l, s, strlen(s));
}

/* Whether v[0..n) must be quoted in a text line: empty, or holding a
 * space, '"', '=', '\\' or anything once__visible_seq escapes. */
static int text_needs_quote(const unsigned char *v, size_t n)
{
    size_t take;
    char esc[ONCE_VISIBLE_ESC];
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i += take)
        if (v[i] == ' ' || v[i] == '"' || v[i] == '=' || v[i] == '\\' ||
            once__visible_seq(v + i, n - i, &take, esc) > 0)
            return 1;
    return 0;
}

/* A value as JSON string contents, or as text: bare when it is a plain
 * token, else in double quotes with \ and " escaped. Control characters
 * (C0, DEL, C1) become \u00XX and bytes that are not UTF-8 the text \xNN
 * (once__visible_seq) in both, so a value can never break the line, a
 * JSON line is valid UTF-8, and no control byte reaches the log. Past
 * `limit` (the line length the value may reach) the value is cut between
 * characters and the line marked cut; SIZE_MAX: it fits whole or put()
 * drops it. */
static void put_value(once__logline *l, const char *v, size_t n, size_t limit)
{
    const unsigned char *u = (const unsigned char *)v;
    int json = l->format == ONCE_LOG_JSON;
    int quote = json || text_needs_quote(u, n);
    size_t take;
    if (quote)
        put(l, "\"", 1);
    for (size_t i = 0; i < n && !l->cut; i += take) {
        char esc[2 * ONCE_VISIBLE_ESC];
        size_t k = once__visible_seq(u + i, n - i, &take, esc + 1);
        const char *piece = (const char *)u + i;
        if (u[i] == '"' || u[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)u[i];
            piece = esc;
            k = 2;
        } else if (k > 0 && json && esc[2] == 'x') {
            esc[0] = '\\';   /* the text \xNN, its backslash escaped */
            piece = esc;
            k++;
        } else if (k > 0) {
            piece = esc + 1;
        } else {
            k = take;
        }
        if (limit != SIZE_MAX && l->len + k > limit) {
            l->trunc = 1;
            break;
        }
        put(l, piece, k);
    }
    if (quote)
        put(l, "\"", 1);
}

static void put_key(once__logline *l, const char *key)
{
    if (l->format == ONCE_LOG_JSON) {
        put(l, ",\"", 2);
        puts_(l, key);
        put(l, "\":", 2);
    } else {
        put(l, " ", 1);
        puts_(l, key);
        put(l, "=", 1);
    }
}

int once__log_begin(once__logline *l, int level, const char *event)
{
    if (!once__log_enabled(level))
        return 0;
    l->len = 0;
    l->cut = 0;
    l->trunc = 0;
    l->has_task = 0;
    l->format = __atomic_load_n(&log_format, __ATOMIC_RELAXED);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t secs = tv.tv_sec;
    gmtime_r(&secs, &tm);
    char ts[96];
    snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(tv.tv_usec / 1000));
    const char *lv = level >= 0 && level < 4 ? level_names[level] : "info";
    if (l->format == ONCE_LOG_JSON) {
        puts_(l, "{\"ts\":\"");
        puts_(l, ts);
        puts_(l, "\",\"level\":\"");
        puts_(l, lv);
        puts_(l, "\",\"event\":");
        put_value(l, event, strlen(event), SIZE_MAX);
    } else {
        puts_(l, ts);
        put(l, " ", 1);
        puts_(l, lv);
        put(l, " ", 1);
        puts_(l, event);
    }
    return 1;
}

/* Undo a field that did not fit whole. */
static void field_done(once__logline *l, size_t start)
{
    if (l->cut)
        l->len = start;
}

void once__log_str(once__logline *l, const char *key, const char *value)
{
    if (value == NULL || l->cut)
        return;
    size_t start = l->len;
    if (strcmp(key, "task") == 0)
        l->has_task = 1;
    put_key(l, key);
    put_value(l, value, strlen(value), SIZE_MAX);
    field_done(l, start);
}

void once__log_text(once__logline *l, const char *key, const char *value, size_t n)
{
    if (value == NULL || l->cut)
        return;
    size_t start = l->len;
    put_key(l, key);
    put_value(l, value, n, sizeof l->buf - TAIL - ONCE__LOG_TEXT_ROOM - 1);
    field_done(l, start);
}

void once__log_note(int level, const char *event, const char *message)
{
    once__logline l;
    if (!once__log_begin(&l, level, event))
        return;
    once__log_text(&l, "message", message, strlen(message));
    once__log_end(&l);
}

void once__log_int(once__logline *l, const char *key, int64_t value)
{
    if (l->cut)
        return;
    size_t start = l->len;
    char v[24];
    snprintf(v, sizeof v, "%lld", (long long)value);
    put_key(l, key);
    puts_(l, v);
    field_done(l, start);
}

void once__log_end(once__logline *l)
{
    if (!l->has_task && tl_ctx.task_id[0] != '\0')
        once__log_str(l, "task", tl_ctx.task_id);
    if (tl_ctx.traceparent[0] != '\0')
        once__log_str(l, "traceparent", tl_ctx.traceparent);
    if (l->cut || l->trunc) {
        const char *mark = l->format == ONCE_LOG_JSON ? ",\"cut\":true" : " cut=true";
        memcpy(l->buf + l->len, mark, strlen(mark));   /* TAIL kept room for it */
        l->len += strlen(mark);
    }
    if (l->format == ONCE_LOG_JSON)
        l->buf[l->len++] = '}';
    l->buf[l->len++] = '\n';
    /* One write: a short write or EINTR is not retried, so two threads'
     * lines can never interleave (a lost log line is the lesser harm). */
    ssize_t n = write(__atomic_load_n(&log_fd, __ATOMIC_RELAXED), l->buf, l->len);
    (void)n;
}
