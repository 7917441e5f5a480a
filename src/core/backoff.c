/*
 * backoff.c -- the backoff bound, its full jitter and Retry-After parsing
 * (backoff.h), one implementation for the client and push delivery so the
 * two cannot drift apart on overflow or caps.
 *
 * Invariants: every product and sum is checked against the cap before it
 * is formed, so inputs of any size saturate at the cap instead of
 * wrapping; dates are at most four-digit years, whose milliseconds fit in
 * int64 many times over.
 */
#include <string.h>

#include "core/backoff.h"
#include "core/civil.h"

int64_t once__backoff_ceiling_ms(int64_t base_ms, uint64_t attempt, int64_t cap_ms)
{
    int64_t base = base_ms > 0 ? base_ms : 0;
    int64_t cap = cap_ms > 0 ? cap_ms : 0;
    if (base >= cap)
        return cap;
    /* Doubling stops at the cap: at most 63 rounds before base >= cap. */
    int64_t v = base;
    for (uint64_t i = 0; i < attempt && v < cap; i++)
        v = v > cap / 2 ? cap : v * 2;
    return v;
}

int once__backoff_jitter_ms(int64_t base_ms, uint64_t attempt, int64_t cap_ms, const once_rng *rng,
                            int64_t *out_ms)
{
    int64_t ceil = once__backoff_ceiling_ms(base_ms, attempt, cap_ms);
    uint64_t u = 0;
    *out_ms = 0;
    if (ceil <= 0)
        return ONCE_OK;
    int rc = once_rng_uniform(rng, (uint64_t)ceil + 1, &u);
    if (rc != ONCE_OK)
        return rc;
    *out_ms = (int64_t)u;
    return ONCE_OK;
}

/* "Sun, 06 Nov 1994 08:49:37 GMT": exactly 29 characters. */
static int imf_fixdate(const char *s, size_t n, int64_t *epoch_ms)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const char days[] = "MonTueWedThuFriSatSun";
    if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
        s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
        return 0;
    int dayok = 0;
    for (int i = 0; i < 7; i++)
        dayok |= memcmp(s, days + 3 * i, 3) == 0;
    int mon = 0;
    for (int i = 0; i < 12; i++)
        if (memcmp(s + 8, months + 3 * i, 3) == 0)
            mon = i + 1;
    int d, y, hh, mm, ss;
    if (!dayok || mon == 0 || !once__fixed_digits(s + 5, 2, &d) ||
        !once__fixed_digits(s + 12, 4, &y) || !once__fixed_digits(s + 17, 2, &hh) ||
        !once__fixed_digits(s + 20, 2, &mm) || !once__fixed_digits(s + 23, 2, &ss))
        return 0;
    if (d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60)
        return 0;
    *epoch_ms = (once__days_from_civil(y, mon, d) * 86400 + hh * 3600 + mm * 60 + ss) * 1000;
    return 1;
}

int once__retry_after_ms(const char *v, int64_t now_ms, int64_t cap_ms, int64_t *out_ms)
{
    if (v == NULL)
        return ONCE_EINVAL;
    int64_t cap = cap_ms > 0 ? cap_ms : 0;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    if (n == 0)
        return ONCE_EINVAL;
    if (v[0] >= '0' && v[0] <= '9') {
        /* delta-seconds: once past the cap, further digits only add to an
         * answer that is already the cap. */
        int64_t ms = 0;
        for (size_t i = 0; i < n; i++) {
            if (v[i] < '0' || v[i] > '9')
                return ONCE_EINVAL;
            int64_t add = (v[i] - '0') * 1000;
            if (ms < cap)
                ms = ms > (cap - add) / 10 ? cap : ms * 10 + add;
        }
        *out_ms = ms < cap ? ms : cap;
        return ONCE_OK;
    }
    int64_t at;
    if (!imf_fixdate(v, n, &at))
        return ONCE_EINVAL;
    int64_t wait = at > now_ms ? at - now_ms : 0;
    *out_ms = wait < cap ? wait : cap;
    return ONCE_OK;
}
