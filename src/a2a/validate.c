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
    int64_t secs;
    int32_t nanos;
    if (s == NULL || !once__rfc3339_parse(s, strlen(s), &secs, &nanos))
        return ONCE_EINVAL;
    *ms = secs * 1000 + nanos / 1000000;
    return ONCE_OK;
}
