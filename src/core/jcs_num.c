/*
 * jcs_num.c -- JCS number serialisation: ECMAScript Number::toString(d).
 *
 * RFC 8785 section 3.2.2.3 serialises every number as ECMAScript would:
 * the shortest decimal digit string s that reads back as the same double
 * (the closest such string when several have that length, the even one on an
 * exact tie), then laid out by the decimal exponent: plain integers below
 * 1e21, plain fractions down to 1e-6, exponent form ("1e+21", "1e-7")
 * otherwise.
 *
 * Digits come from the C library, which converts exactly: for each precision
 * p = 1..17, "%.*e" gives the p-digit decimal closest to d; if it does not
 * read back as d, the p-digit decimal on the other side of d is tried too
 * (the two bracket d, so nothing else of length p can read back as d). That
 * second try matters only when d is a power of two, whose rounding interval
 * is narrower below than above. 17 digits always round-trip.
 *
 * Locale: the decimal point printed by "%e" depends on LC_NUMERIC, so it is
 * skipped when reading digits back, and round-trip checks feed strtod an
 * integer mantissa with an exponent ("12345e-7"), which has no decimal point
 * to misread.
 */
#include "core/jcs.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIGITS 17

/* A positive decimal: value = 0.d[0]d[1]...d[n-1] x 10^(exp10 + 1), i.e.
 * d[0] is the digit for 10^exp10. Digits are ASCII, not NUL-terminated. */
struct decimal {
    char d[MAX_DIGITS];
    int n;
    int exp10;
};

/* The double nearest to dec (strtod rounds correctly). */
static double decimal_value(const struct decimal *dec)
{
    char text[MAX_DIGITS + 16];
    memcpy(text, dec->d, (size_t)dec->n);
    snprintf(text + dec->n, sizeof text - (size_t)dec->n, "e%d", dec->exp10 - (dec->n - 1));
    return strtod(text, NULL);
}

/* The p-digit decimal closest to v (v > 0, finite). */
static void closest_decimal(double v, int p, struct decimal *dec)
{
    char text[64];
    snprintf(text, sizeof text, "%.*e", p - 1, v);
    const char *c = text;
    dec->n = 0;
    while (dec->n < p && *c != '\0') {
        if (*c >= '0' && *c <= '9')
            dec->d[dec->n++] = *c;
        c++;
    }
    const char *e = strchr(c, 'e');
    dec->exp10 = e ? (int)strtol(e + 1, NULL, 10) : 0;
}

/* Step dec by one unit in its last digit, up (dir > 0) or down, keeping n
 * digits: 9.99e4 + 1 unit = 1.00e5 and 1.00e5 - 1 unit = 9.99e4 (not the
 * coarser 0.99e5, which is not the neighbour). */
static void step_decimal(struct decimal *dec, int dir)
{
    int i = dec->n - 1;
    if (dir > 0) {
        while (i >= 0 && dec->d[i] == '9')
            dec->d[i--] = '0';
        if (i >= 0) {
            dec->d[i]++;
        } else {
            dec->d[0] = '1';
            dec->exp10++;
        }
    } else {
        while (i >= 0 && dec->d[i] == '0')
            dec->d[i--] = '9';
        /* The leading digit is never 0, so i >= 0 here. */
        dec->d[i]--;
        if (dec->d[0] == '0') {
            memset(dec->d, '9', (size_t)dec->n);
            dec->exp10--;
        }
    }
}

/* Shortest digits that read back as v (v > 0, finite); trailing zeros
 * removed. */
static void shortest_decimal(double v, struct decimal *dec)
{
    for (int p = 1; p <= MAX_DIGITS; p++) {
        closest_decimal(v, p, dec);
        double back = decimal_value(dec);
        if (back == v)
            break;
        if (p == MAX_DIGITS)
            break; /* unreachable: 17 significant digits always round-trip */
        struct decimal other = *dec;
        step_decimal(&other, back < v ? 1 : -1);
        if (decimal_value(&other) == v) {
            *dec = other;
            break;
        }
    }
    while (dec->n > 1 && dec->d[dec->n - 1] == '0')
        dec->n--;
}

/* Append n bytes of src, or c repeated n times, at buf[*len]. The caller has
 * sized buf for the worst case (ONCE__JCS_NUM_MAX). */
static void put(char *buf, size_t *len, const char *src, size_t n)
{
    memcpy(buf + *len, src, n);
    *len += n;
}

static void put_rep(char *buf, size_t *len, char c, size_t n)
{
    memset(buf + *len, c, n);
    *len += n;
}

int once__jcs_number(double d, char buf[ONCE__JCS_NUM_MAX])
{
    if (!isfinite(d))
        return ONCE_EINVAL;
    if (d == 0) { /* also -0 */
        buf[0] = '0';
        buf[1] = '\0';
        return 1;
    }
    size_t len = 0;
    if (d < 0) {
        buf[len++] = '-';
        d = -d;
    }
    /* Integers below 2^53 are exact and no shorter decimal lies within half
     * a unit of them, so their digits are their own: skip the search. */
    if (d < 9007199254740992.0 && d == floor(d)) {
        int w = snprintf(buf + len, ONCE__JCS_NUM_MAX - len, "%" PRId64, (int64_t)d);
        return (int)len + w;
    }

    struct decimal dec;
    shortest_decimal(d, &dec);
    int k = dec.n;
    int n = dec.exp10 + 1; /* value = 0.digits x 10^n */

    if (k <= n && n <= 21) {
        put(buf, &len, dec.d, (size_t)k);
        put_rep(buf, &len, '0', (size_t)(n - k));
    } else if (0 < n && n <= 21) {
        put(buf, &len, dec.d, (size_t)n);
        put(buf, &len, ".", 1);
        put(buf, &len, dec.d + n, (size_t)(k - n));
    } else if (-6 < n && n <= 0) {
        put(buf, &len, "0.", 2);
        put_rep(buf, &len, '0', (size_t)-n);
        put(buf, &len, dec.d, (size_t)k);
    } else {
        put(buf, &len, dec.d, 1);
        if (k > 1) {
            put(buf, &len, ".", 1);
            put(buf, &len, dec.d + 1, (size_t)(k - 1));
        }
        int e = n - 1;
        int w = snprintf(buf + len, ONCE__JCS_NUM_MAX - len, "e%c%d", e < 0 ? '-' : '+',
                         e < 0 ? -e : e);
        len += (size_t)w;
    }
    buf[len] = '\0';
    return (int)len;
}
