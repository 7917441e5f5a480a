/*
 * validate.c -- parameter checks for A2A 1.0 requests: IDs, Messages,
 * historyLength and RFC 3339 timestamps.
 *
 * Invariant: a message that passes once__a2a_check_message() is safe to hand to
 * the engine as-is: every ID fits a store key and once_id_valid() holds
 * (so no space or newline can reach the digest lines), parts are well formed
 * and bounded. The Message and Part rules themselves are core/shape.c's,
 * shared with agent output; this file applies a client's rules and puts a
 * refusal in the codec's error shape.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/civil.h"
#include "core/shape.h"

int once__a2a_check_depth(const json_t *v, const char *field, a2a_verr *e)
{
    return once__shape_depth(v, field, e);
}

int once__a2a_check_id(const json_t *v, const char *field, a2a_verr *e)
{
    return once__shape_id(v, field, e);
}

int once__a2a_check_message(const json_t *msg, const char *field, int legacy, size_t max_parts,
                            a2a_verr *e)
{
    once__msg_rules r;
    once__msg_rules_client(&r, legacy, max_parts);
    return once__shape_message(msg, field, &r, e);
}

int once__a2a_check_history(const json_t *v, const char *field, int *out, a2a_verr *e)
{
    *out = -1;
    if (v == NULL || json_is_null(v))
        return ONCE_OK;
    if (!json_is_integer(v))
        return once__a2a_verr(e, field, "%s must be an integer", field);
    json_int_t n = json_integer_value(v);
    if (n < 0 || n > INT32_MAX)
        return once__a2a_verr(e, field, "%s must be between 0 and %d", field, INT32_MAX);
    *out = (int)n;
    return ONCE_OK;
}

/* --- RFC 3339 ---------------------------------------------------------------- */

int once__a2a_parse_time(const char *s, int64_t *ms)
{
    int Y, M, D, h, mi, sec;
    if (s == NULL || strlen(s) < 20)
        return ONCE_EINVAL;
    if (!once__fixed_digits(s, 4, &Y) || s[4] != '-' || !once__fixed_digits(s + 5, 2, &M) ||
        s[7] != '-' || !once__fixed_digits(s + 8, 2, &D) ||
        (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !once__fixed_digits(s + 11, 2, &h) ||
        s[13] != ':' || !once__fixed_digits(s + 14, 2, &mi) || s[16] != ':' ||
        !once__fixed_digits(s + 17, 2, &sec))
        return ONCE_EINVAL;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || mi > 59 || sec > 60)
        return ONCE_EINVAL;
    const char *p = s + 19;
    int frac_ms = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            return ONCE_EINVAL;
        for (; nd < 3; nd++)
            frac_ms *= 10;
    }
    int64_t off_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!once__fixed_digits(p + 1, 2, &oh) || p[3] != ':' ||
            !once__fixed_digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return ONCE_EINVAL;
        off_s = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return ONCE_EINVAL;
    }
    if (*p != '\0')
        return ONCE_EINVAL;
    int64_t secs =
        once__days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + (sec > 59 ? 59 : sec);
    *ms = (secs - off_s) * 1000 + frac_ms;
    return ONCE_OK;
}
