/*
 * metrics.h -- process-wide counters and histograms, and the Prometheus text
 * exposition format (version 0.0.4) they are read out in (internal to
 * libonce; onced serves it at GET /metrics, src/http/ops.c).
 *
 * Every counter is a uint64_t changed only with __atomic builtins, relaxed:
 * recording a value is one or two atomic adds, never a lock, so the request
 * and store paths never wait for each other or for a scrape. A scrape reads
 * each value on its own, so values of one scrape may be a few increments
 * apart; each one is monotonic.
 *
 * Counters are process-local: they start at zero when the process starts
 * and survive nothing. The HELP text of every family says so.
 */
#ifndef ONCE_CORE_METRICS_H
#define ONCE_CORE_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Latency histogram: bucket[i] counts observations <= once__hist_bounds[i]
 * seconds and > the bound before it; bucket[ONCE__HIST_N] the rest (+Inf).
 * sum_ns is the total in nanoseconds. Zero-initialised = empty. */
#define ONCE__HIST_N 16
extern const double once__hist_bounds[ONCE__HIST_N];

typedef struct once__hist {
    uint64_t bucket[ONCE__HIST_N + 1];
    uint64_t sum_ns;
} once__hist;

void once__hist_observe(once__hist *h, int64_t ns);

/* A growing exposition text. Once an allocation fails, `oom` is set and
 * every later append is dropped; the caller checks it once at the end. */
typedef struct once__mtext {
    char *buf;       /* once_malloc'd, NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
} once__mtext;

void once__mtext_printf(once__mtext *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "# HELP name help\n# TYPE name type\n". */
void once__mtext_family(once__mtext *t, const char *name, const char *type, const char *help);
/* One sample: name{labels} value (labels: the text between the braces,
 * already escaped, or NULL / "" for none). */
void once__mtext_sample(once__mtext *t, const char *name, const char *labels, uint64_t value);
/* The same with a value that is not a whole number (seconds). */
void once__mtext_sample_f(once__mtext *t, const char *name, const char *labels, double value);
/* Append `name="value"` to the label text in buf[0..n), value escaped as
 * the format wants (backslash, double quote, newline); a label that does
 * not fit is left out whole. */
void once__mlabel(char *buf, size_t n, const char *name, const char *value);
/* A histogram's _bucket (cumulative, le in seconds), _sum and _count lines
 * for one label set. */
void once__mtext_hist(once__mtext *t, const char *name, const char *labels, const once__hist *h);
void once__mtext_free(once__mtext *t);

/* ---------------------------------------------------------------------------
 * Process-wide tables.
 */

/* Store operations, by backend (the URL scheme of the store) and slot. */
typedef enum once__store_op {
    ONCE__SOP_CREATE, ONCE__SOP_LOAD, ONCE__SOP_UPDATE, ONCE__SOP_EVENTS,
    ONCE__SOP_EXPIRED_LEASES, ONCE__SOP_SWEEP, ONCE__SOP_PURGE, ONCE__SOP_LIST,
    ONCE__SOP_META, ONCE__SOP_RENEW, ONCE__SOP_PUSH_CLAIM, ONCE__SOP_PUSH_ACK,
    ONCE__SOP_PUSH_ROWS, ONCE__SOP_GENERATIONS, ONCE__SOP_N
} once__store_op;

/* A monotonic timestamp in nanoseconds, to pass back to once__metrics_store. */
int64_t once__metrics_start(void);
/* One store call of `op` on the backend with this scheme that began at t0. */
void once__metrics_store(const char *scheme, once__store_op op, int64_t t0);

/* One HTTP response with this status to a request with this method. */
void once__metrics_http(const char *method, int status);
/* HTTP responses so far, every method and status (onced's shutdown line). */
uint64_t once__metrics_http_total(void);

/* The gateway executor's counters (src/exec/upstream*.c), shown only in a
 * process that built one (once__metrics_gateway_on). */
typedef enum once__gw_stat {
    ONCE__GW_REATTACHED,         /* a re-run turn found its upstream task again */
    ONCE__GW_RESENT_EXACT,       /* a re-send the upstream replays (rung 1) */
    ONCE__GW_UNVERIFIED,         /* a re-send nothing could verify (rungs 3 and 4) */
    ONCE__GW_RETRIES,            /* upstream calls retried after a failure */
    ONCE__GW_CARD_UNCHANGED,     /* a card refresh: 304, or the same card */
    ONCE__GW_CARD_CHANGED,       /* a card refresh that took another card */
    ONCE__GW_CARD_FAILED,        /* a card refresh without a card taken */
    ONCE__GW_N
} once__gw_stat;
void once__metrics_gateway_on(void);
void once__metrics_gateway(once__gw_stat s);

/* One configuration reload (SIGHUP): ok = every file was taken. */
void once__metrics_reload(int ok);

/* The process-wide families: the build info (with a replica label when
 * replica is not NULL), the HTTP counter, the gateway's counters, the
 * configuration reloads, the store histogram, and the process_* families (once__metrics_write_os). */
void once__metrics_write_process(once__mtext *t, const char *replica);

/* The standard process_* families every Prometheus client exports (CPU
 * time, resident and virtual memory, open and allowed descriptors, start
 * time), read from /proc/self (procstat.c). Where /proc cannot be read,
 * the families it feeds are left out, as the Go and Python clients do. */
void once__metrics_write_os(once__mtext *t);

#endif /* ONCE_CORE_METRICS_H */
