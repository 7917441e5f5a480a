/*
 * clock.c -- the system, offset and manual clocks, the monotonic clock,
 * RFC 3339 formatting, and condition waits timed on the monotonic clock
 * (condwait.h).
 *
 * Invariant: all clocks report milliseconds since the Unix epoch (UTC); the
 * offset and manual clocks keep their mutable value in one int64 that is
 * only touched with __atomic builtins, so any thread may read or move them.
 */
#include "core/decimal.h"
#include "core/civil.h"
#include "core/condwait.h"
#include "once/once.h"

#include <time.h>

static int64_t timespec_ms(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0; /* CLOCK_REALTIME/MONOTONIC cannot fail on Linux */
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t system_now(const once_clock *c)
{
    (void)c;
    return timespec_ms(CLOCK_REALTIME);
}

static const once_clock system_clock = {system_now};

const once_clock *once_clock_system(void)
{
    return &system_clock;
}

int64_t once_monotonic_ms(void)
{
    return timespec_ms(CLOCK_MONOTONIC);
}

/* --- offset clock ------------------------------------------------------- */

static int64_t offset_now(const once_clock *c)
{
    const once_offset_clock *oc = (const once_offset_clock *)c;
    return timespec_ms(CLOCK_REALTIME) + __atomic_load_n(&oc->offset_ms, __ATOMIC_ACQUIRE);
}

void once_offset_clock_init(once_offset_clock *c, int64_t offset_ms)
{
    c->base.now_ms = offset_now;
    __atomic_store_n(&c->offset_ms, offset_ms, __ATOMIC_RELEASE);
}

void once_offset_clock_set(once_offset_clock *c, int64_t offset_ms)
{
    __atomic_store_n(&c->offset_ms, offset_ms, __ATOMIC_RELEASE);
}

int64_t once_offset_clock_get(const once_offset_clock *c)
{
    return __atomic_load_n(&c->offset_ms, __ATOMIC_ACQUIRE);
}

/* --- manual clock --------------------------------------------------------- */

static int64_t manual_now(const once_clock *c)
{
    const once_manual_clock *mc = (const once_manual_clock *)c;
    return __atomic_load_n(&mc->now, __ATOMIC_ACQUIRE);
}

void once_manual_clock_init(once_manual_clock *c, int64_t now_ms)
{
    c->base.now_ms = manual_now;
    __atomic_store_n(&c->now, now_ms, __ATOMIC_RELEASE);
}

void once_manual_clock_advance(once_manual_clock *c, int64_t delta_ms)
{
    __atomic_add_fetch(&c->now, delta_ms, __ATOMIC_ACQ_REL);
}

/* --- calendar (civil.h) ---------------------------------------------------- */

int64_t once__days_from_civil(int y, int m, int d)
{
    /* Howard Hinnant's days_from_civil algorithm, restated: March-based
     * years so the leap day ends a year, 400-year eras of 146097 days. */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int once__fixed_digits(const char *s, int n, int *out)
{
    int64_t v;
    if (n < 1 || n > 9 || !once__decimal(s, (size_t)n, &v))
        return 0;
    *out = (int)v;
    return 1;
}

int once__rfc3339_parse(const char *s, size_t n, int64_t *secs, int32_t *nanos)
{
    int Y, M, D, h, mi, sec;
    if (n < 20 || !once__fixed_digits(s, 4, &Y) || s[4] != '-' ||
        !once__fixed_digits(s + 5, 2, &M) || s[7] != '-' || !once__fixed_digits(s + 8, 2, &D) ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !once__fixed_digits(s + 11, 2, &h) ||
        s[13] != ':' || !once__fixed_digits(s + 14, 2, &mi) || s[16] != ':' ||
        !once__fixed_digits(s + 17, 2, &sec))
        return 0;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || mi > 59 || sec > 60)
        return 0;
    const char *p = s + 19, *end = s + n;
    int32_t frac = 0;
    if (p < end && *p == '.') {
        p++;
        int nd = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (nd < 9)
                frac = frac * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            return 0;
        for (; nd < 9; nd++)
            frac *= 10;
    }
    int64_t off_s = 0;
    if (p < end && (*p == 'Z' || *p == 'z')) {
        p++;
    } else if (end - p >= 6 && (*p == '+' || *p == '-')) {
        int oh, om;
        if (!once__fixed_digits(p + 1, 2, &oh) || p[3] != ':' ||
            !once__fixed_digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return 0;
        off_s = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return 0;
    }
    if (p != end)
        return 0;
    *secs = once__days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + (sec > 59 ? 59 : sec) -
            off_s;
    *nanos = frac;
    return 1;
}

/* --- formatting ----------------------------------------------------------- */

/* 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range that fits
 * the fixed 24-character form. Values outside are clamped. */
#define FMT_MIN_MS (-62167219200000LL)
#define FMT_MAX_MS (253402300799999LL)

/* Write v as exactly `width` decimal digits (v >= 0, fits). */
static void put_digits(char *p, int v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

void once_format_time(int64_t ms, char out[25])
{
    if (ms < FMT_MIN_MS)
        ms = FMT_MIN_MS;
    if (ms > FMT_MAX_MS)
        ms = FMT_MAX_MS;
    /* Floor division so times before 1970 keep a non-negative millisecond. */
    int64_t secs = ms / 1000;
    int64_t frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) { /* unreachable for the clamped range */
        tm.tm_year = -1900;
        tm.tm_mon = 0;
        tm.tm_mday = 1;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    }
    put_digits(out, tm.tm_year + 1900, 4);
    out[4] = '-';
    put_digits(out + 5, tm.tm_mon + 1, 2);
    out[7] = '-';
    put_digits(out + 8, tm.tm_mday, 2);
    out[10] = 'T';
    put_digits(out + 11, tm.tm_hour, 2);
    out[13] = ':';
    put_digits(out + 14, tm.tm_min, 2);
    out[16] = ':';
    put_digits(out + 17, tm.tm_sec, 2);
    out[19] = '.';
    put_digits(out + 20, (int)frac, 3);
    out[23] = 'Z';
    out[24] = '\0';
}

void once__cond_raise(pthread_mutex_t *mu, pthread_cond_t *cv, int *flag)
{
    pthread_mutex_lock(mu);
    *flag = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
}

void once__cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

int once__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return ONCE_ENOMEM;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? ONCE_OK : ONCE_ENOMEM;
}

int once__lock_init(pthread_mutex_t *mu, pthread_cond_t *cv)
{
    if (pthread_mutex_init(mu, NULL) != 0)
        return ONCE_ENOMEM;
    if (once__cond_init(cv) != ONCE_OK) {
        pthread_mutex_destroy(mu);
        return ONCE_ENOMEM;
    }
    return ONCE_OK;
}
