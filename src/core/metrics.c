/*
 * metrics.c -- histograms, the exposition text builder and the process-wide
 * metric tables (metrics.h).
 *
 * The tables are fixed arrays indexed by small enums, so recording never
 * allocates, hashes or locks; the label strings exist only on the scrape
 * side. A value outside a table's range (an unknown method, a status
 * outside 100..599) is counted in its "other" row.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/grow.h"
#include "core/metrics.h"
#include "once/once.h"

/* Seconds: 100 µs (a memory store's call) to 10 s (a store that hangs). */
const double once__hist_bounds[ONCE__HIST_N] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                1,      2.5,     5,      10};

void once__hist_observe(once__hist *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < ONCE__HIST_N && s > once__hist_bounds[i])
        i++;
    __atomic_fetch_add(&h->bucket[i], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->sum_ns, (uint64_t)ns, __ATOMIC_RELAXED);
}

/* --- the text builder ------------------------------------------------------ */

static int reserve(once__mtext *t, size_t more)
{
    if (t->oom)
        return 0;
    size_t cap = once__grow_size(t->cap, t->len + more + 1, 4096, (size_t)-1);
    if (once__grow_to(&t->buf, &t->cap, cap) != ONCE_OK)
        t->oom = 1;
    return !t->oom;
}

void once__mtext_printf(once__mtext *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(t, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void once__mtext_family(once__mtext *t, const char *name, const char *type, const char *help)
{
    once__mtext_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void once__mtext_sample(once__mtext *t, const char *name, const char *labels, uint64_t value)
{
    if (labels != NULL && labels[0] != '\0')
        once__mtext_printf(t, "%s{%s} %llu\n", name, labels, (unsigned long long)value);
    else
        once__mtext_printf(t, "%s %llu\n", name, (unsigned long long)value);
}

/* %.15g: the digits a double holds for sure, without a tail of binary
 * noise (0.1, not 0.10000000000000001). */
void once__mtext_sample_f(once__mtext *t, const char *name, const char *labels, double value)
{
    if (labels != NULL && labels[0] != '\0')
        once__mtext_printf(t, "%s{%s} %.15g\n", name, labels, value);
    else
        once__mtext_printf(t, "%s %.15g\n", name, value);
}

void once__mlabel(char *buf, size_t n, const char *name, const char *value)
{
    size_t len = strnlen(buf, n);
    int w = snprintf(buf + len, n - len, "%s%s=\"", len > 0 ? "," : "", name);
    if (w < 0 || (size_t)w >= n - len)
        goto drop;
    size_t at = len + (size_t)w;
    for (const char *c = value; *c != '\0'; c++) {
        const char *esc = *c == '\\' ? "\\\\" : *c == '"' ? "\\\"" : *c == '\n' ? "\\n" : NULL;
        size_t need = esc != NULL ? 2 : 1;
        if (at + need + 2 > n) /* room for it, the closing quote and the NUL */
            goto drop;
        if (esc != NULL)
            memcpy(buf + at, esc, 2);
        else
            buf[at] = *c;
        at += need;
    }
    if (at + 2 > n)
        goto drop;
    buf[at++] = '"';
    buf[at] = '\0';
    return;
drop:
    buf[len] = '\0';
}

void once__mtext_hist(once__mtext *t, const char *name, const char *labels, const once__hist *h)
{
    const char *sep = labels != NULL && labels[0] != '\0' ? "," : "";
    const char *l = labels != NULL ? labels : "";
    uint64_t cum = 0;
    for (size_t i = 0; i <= ONCE__HIST_N; i++) {
        cum += __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
        if (i < ONCE__HIST_N)
            once__mtext_printf(t, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, l, sep,
                               once__hist_bounds[i], (unsigned long long)cum);
        else
            once__mtext_printf(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, l, sep,
                               (unsigned long long)cum);
    }
    double sum = (double)__atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED) / 1e9;
    if (l[0] != '\0') {
        once__mtext_printf(t, "%s_sum{%s} %.9f\n", name, l, sum);
        once__mtext_printf(t, "%s_count{%s} %llu\n", name, l, (unsigned long long)cum);
    } else {
        once__mtext_printf(t, "%s_sum %.9f\n%s_count %llu\n", name, sum, name,
                           (unsigned long long)cum);
    }
}

void once__mtext_free(once__mtext *t)
{
    once_free(t->buf);
    memset(t, 0, sizeof *t);
}

/* --- the store table ----------------------------------------------------------- */

static const char *const backend_names[] = {"memory", "sqlite",   "postgres",
                                            "redis",  "dynamodb", "other"};
#define NBACKENDS (sizeof backend_names / sizeof backend_names[0])

static const char *const store_op_names[ONCE__SOP_N] = {
    "create", "load",   "update", "events", "expired_leases", "sweep",    "purge",
    "list",   "meta",   "renew",  "push_claim", "push_ack",   "push_rows", "generations"};

static once__hist store_hist[NBACKENDS][ONCE__SOP_N];

/* The scheme's row; "postgresql" shares "postgres". Compares the first
 * letter only where it decides: this runs on every store call. */
static size_t backend_index(const char *scheme)
{
    switch (scheme != NULL ? scheme[0] : '\0') {
    case 'm':
        return 0;
    case 's':
        return 1;
    case 'p':
        return 2;
    case 'r':
        return 3;
    case 'd':
        return 4;
    default:
        return NBACKENDS - 1;
    }
}

int64_t once__metrics_start(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void once__metrics_store(const char *scheme, once__store_op op, int64_t t0)
{
    if ((unsigned)op >= ONCE__SOP_N)
        return;
    once__hist_observe(&store_hist[backend_index(scheme)][op], once__metrics_start() - t0);
}

/* --- the HTTP table -------------------------------------------------------------- */

static const char *const method_names[] = {"GET", "HEAD", "POST", "other"};
#define NMETHODS (sizeof method_names / sizeof method_names[0])
#define STATUS_MIN 100
#define STATUS_N 500 /* 100..599 */

static uint64_t http_count[NMETHODS][STATUS_N];

void once__metrics_http(const char *method, int status)
{
    size_t m = NMETHODS - 1;
    for (size_t i = 0; method != NULL && i + 1 < NMETHODS; i++)
        if (strcmp(method, method_names[i]) == 0)
            m = i;
    if (status < STATUS_MIN || status >= STATUS_MIN + STATUS_N)
        status = 500; /* cannot happen with libmicrohttpd's codes */
    __atomic_fetch_add(&http_count[m][status - STATUS_MIN], 1, __ATOMIC_RELAXED);
}

uint64_t once__metrics_http_total(void)
{
    uint64_t n = 0;
    for (size_t m = 0; m < NMETHODS; m++)
        for (size_t i = 0; i < STATUS_N; i++)
            n += __atomic_load_n(&http_count[m][i], __ATOMIC_RELAXED);
    return n;
}

/* --- the gateway's counters --------------------------------------------------------- */

static uint64_t gw_count[ONCE__GW_N];
static int gw_on;

void once__metrics_gateway_on(void)
{
    __atomic_store_n(&gw_on, 1, __ATOMIC_RELAXED);
}

void once__metrics_gateway(once__gw_stat s)
{
    if ((unsigned)s < ONCE__GW_N)
        __atomic_fetch_add(&gw_count[s], 1, __ATOMIC_RELAXED);
}

/* One row per counter; a row without help is another sample (its labels)
 * of the family of the row above it. */
static void write_gateway(once__mtext *t)
{
    static const struct {
        const char *name, *labels, *help;
    } fams[ONCE__GW_N] = {
        [ONCE__GW_REATTACHED] = {"once_gateway_reattached_total", NULL,
                                 "Re-run turns (takeover, lost answer) that found their upstream "
                                 "task again instead of sending."},
        [ONCE__GW_RESENT_EXACT] = {"once_gateway_replayed_resends_total", NULL,
                                   "Re-sends to an upstream that replays them (it declares the "
                                   "idempotency extension: rung 1)."},
        [ONCE__GW_UNVERIFIED] = {"once_gateway_unverified_resends_total", NULL,
                                 "Re-sends of a message whose first send may have reached the "
                                 "upstream, which could not be checked (no ListTasks, or the "
                                 "upstream ignored our contextId): each may have made a second "
                                 "upstream task unless the upstream dedups messageId."},
        [ONCE__GW_RETRIES] = {"once_gateway_upstream_retries_total", NULL,
                              "Upstream calls retried after a transport failure, a timeout or "
                              "HTTP 429/502/503/504."},
        [ONCE__GW_CARD_UNCHANGED] = {"once_gateway_card_refreshes_total", "result=\"unchanged\"",
                                     "Re-reads of the upstream's card (--upstream-card-refresh) "
                                     "by result: unchanged (304, or the same card), changed (the "
                                     "card served follows it), failed (no answer, 5xx, or no "
                                     "card that could be served)."},
        [ONCE__GW_CARD_CHANGED] = {"once_gateway_card_refreshes_total", "result=\"changed\"",
                                   NULL},
        [ONCE__GW_CARD_FAILED] = {"once_gateway_card_refreshes_total", "result=\"failed\"",
                                  NULL},
    };
    if (!__atomic_load_n(&gw_on, __ATOMIC_RELAXED))
        return;
    for (size_t i = 0; i < ONCE__GW_N; i++) {
        if (fams[i].help != NULL) {
            char help[512];
            snprintf(help, sizeof help, "%s Process-local: starts at 0 when the process starts.",
                     fams[i].help);
            once__mtext_family(t, fams[i].name, "counter", help);
        }
        once__mtext_sample(t, fams[i].name, fams[i].labels,
                           __atomic_load_n(&gw_count[i], __ATOMIC_RELAXED));
    }
}

/* --- configuration reloads (SIGHUP) ---------------------------------------------- */

static uint64_t reloads[2];       /* [0] every piece taken, [1] one or more kept */
static int64_t reload_ok_at;      /* unix seconds of the last full success; 0 = none */
static int reload_last_failed;

void once__metrics_reload(int ok)
{
    __atomic_fetch_add(&reloads[!ok], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&reload_last_failed, !ok, __ATOMIC_RELAXED);
    if (ok)
        __atomic_store_n(&reload_ok_at, (int64_t)time(NULL), __ATOMIC_RELAXED);
}

static void write_reloads(once__mtext *t)
{
    once__mtext_family(t, "once_config_reloads_total", "counter",
                       "Configuration reloads (SIGHUP) by result: ok (every file read again "
                       "was taken), failed (one or more kept the old one; the log says why). "
                       "Process-local: starts at 0 when the process starts.");
    once__mtext_sample(t, "once_config_reloads_total", "result=\"ok\"",
                       __atomic_load_n(&reloads[0], __ATOMIC_RELAXED));
    once__mtext_sample(t, "once_config_reloads_total", "result=\"failed\"",
                       __atomic_load_n(&reloads[1], __ATOMIC_RELAXED));
    once__mtext_family(t, "once_config_last_reload_successful", "gauge",
                       "0 when the last reload kept an old file (the configuration on disk "
                       "is not the one served), else 1.");
    once__mtext_sample(t, "once_config_last_reload_successful", NULL,
                       !__atomic_load_n(&reload_last_failed, __ATOMIC_RELAXED));
    once__mtext_family(t, "once_config_last_reload_success_timestamp_seconds", "gauge",
                       "Unix time of the last reload that took every file; 0 = none since "
                       "the process started.");
    once__mtext_sample(t, "once_config_last_reload_success_timestamp_seconds", NULL,
                       (uint64_t)__atomic_load_n(&reload_ok_at, __ATOMIC_RELAXED));
}

/* --- exposition ----------------------------------------------------------------------- */

void once__metrics_write_process(once__mtext *t, const char *replica)
{
    once__mtext_family(t, "once_build_info", "gauge",
                       "Always 1; the version label is this onced's version, the replica label "
                       "its replica id (--replica-id: the name its leases carry).");
    /* Room for a replica id of ONCE_OWNER_MAX (64) bytes, each escaped. */
    char bl[256] = "";
    once__mlabel(bl, sizeof bl, "version", once_version());
    if (replica != NULL)
        once__mlabel(bl, sizeof bl, "replica", replica);
    once__mtext_sample(t, "once_build_info", bl, 1);

    char l[64];

    once__mtext_family(t, "once_http_requests_total", "counter",
                       "HTTP responses by request method and status code (health, metrics "
                       "and the agent card included). Process-local: starts at 0 when the "
                       "process starts.");
    for (size_t m = 0; m < NMETHODS; m++) {
        for (int s = 0; s < STATUS_N; s++) {
            uint64_t v = __atomic_load_n(&http_count[m][s], __ATOMIC_RELAXED);
            if (v == 0)
                continue;
            snprintf(l, sizeof l, "method=\"%s\",status=\"%d\"", method_names[m], s + STATUS_MIN);
            once__mtext_sample(t, "once_http_requests_total", l, v);
        }
    }

    write_gateway(t);
    write_reloads(t);

    once__mtext_family(t, "once_store_operation_duration_seconds", "histogram",
                       "Time of one store call, by backend and operation (retries inside "
                       "the backend included). Process-local: starts empty when the process "
                       "starts.");
    for (size_t b = 0; b < NBACKENDS; b++) {
        for (size_t op = 0; op < ONCE__SOP_N; op++) {
            const once__hist *h = &store_hist[b][op];
            uint64_t any = 0;
            for (size_t i = 0; i <= ONCE__HIST_N; i++)
                any |= __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
            if (any == 0)
                continue;
            char hl[96];
            snprintf(hl, sizeof hl, "backend=\"%s\",operation=\"%s\"", backend_names[b],
                     store_op_names[op]);
            once__mtext_hist(t, "once_store_operation_duration_seconds", hl, h);
        }
    }

    once__metrics_write_os(t);
}
