/*
 * validate.c -- parameter checks for A2A 1.0 requests: IDs, Parts, Messages,
 * historyLength, base64 and RFC 3339 timestamps.
 *
 * Invariant: a message that passes once__a2a_check_message() is safe to hand to
 * the engine as-is: every ID fits a store key and once_id_valid() holds
 * (so no space or newline can reach the digest lines), parts are well formed
 * and bounded. Every refusal names one field, the first one found in
 * document order, so a client fixing errors one at a time converges.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/base64.h"
#include "core/civil.h"
#include "core/json_depth.h"

int once__a2a_verr(a2a_verr *e, const char *field, const char *fmt, ...)
{
    if (e != NULL) {
        snprintf(e->field, sizeof e->field, "%s", field);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->why, sizeof e->why, fmt, ap);
        va_end(ap);
    }
    return ONCE_EINVAL;
}

int once__a2a_check_depth(const json_t *v, const char *field, a2a_verr *e)
{
    if (once__json_depth(v, ONCE_VALUE_MAX_DEPTH) > ONCE_VALUE_MAX_DEPTH)
        return once__a2a_verr(e, field, "%s nests deeper than %d levels (the limit on a value)",
                              field, ONCE_VALUE_MAX_DEPTH);
    return ONCE_OK;
}

int once__a2a_check_id(const json_t *v, const char *field, a2a_verr *e)
{
    if (!json_is_string(v))
        return once__a2a_verr(e, field, "%s must be a string", field);
    if (!once_id_valid(json_string_value(v)))
        return once__a2a_verr(e, field,
                          "%s must be 1..%d characters of [A-Za-z0-9._:-] starting with a letter "
                          "or digit",
                          field, ONCE_ID_MAX);
    return ONCE_OK;
}


static const char *const part_content[] = {"text", "raw", "url", "data"};

int once__a2a_check_part(const json_t *part, const char *field, a2a_verr *e)
{
    char f[sizeof e->field];
    if (!json_is_object(part))
        return once__a2a_verr(e, field, "%s must be an object", field);
    const char *content = NULL;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)part, key, v) {
        snprintf(f, sizeof f, "%s.%s", field, key);
        int is_content = 0;
        for (size_t i = 0; i < sizeof part_content / sizeof part_content[0]; i++) {
            if (strcmp(key, part_content[i]) == 0)
                is_content = 1;
        }
        if (is_content) {
            if (content != NULL)
                return once__a2a_verr(e, field,
                                  "%s must hold exactly one of text, raw, url, data (has %s and %s)",
                                  field, content, key);
            content = key;
            if (strcmp(key, "data") == 0) {
                if (once__a2a_check_depth(v, f, e) != ONCE_OK)
                    return ONCE_EINVAL;
                continue;
            }
            if (!json_is_string(v))
                return once__a2a_verr(e, f, "%s must be a string", f);
            if (strcmp(key, "raw") == 0 &&
                !once__base64_valid(json_string_value(v), json_string_length(v)))
                return once__a2a_verr(e, f, "%s must be base64", f);
            if (strcmp(key, "url") == 0 && json_string_length(v) == 0)
                return once__a2a_verr(e, f, "%s must not be empty", f);
        } else if (strcmp(key, "metadata") == 0) {
            if (!json_is_object(v))
                return once__a2a_verr(e, f, "%s must be an object", f);
            if (once__a2a_check_depth(v, f, e) != ONCE_OK)
                return ONCE_EINVAL;
        } else if (strcmp(key, "filename") == 0 || strcmp(key, "mediaType") == 0) {
            if (!json_is_string(v))
                return once__a2a_verr(e, f, "%s must be a string", f);
        } else {
            return once__a2a_verr(e, f, "unknown member %s in a Part", f);
        }
    }
    if (content == NULL)
        return once__a2a_verr(e, field, "%s must hold one of text, raw, url, data", field);
    return ONCE_OK;
}

static int check_string_array(const json_t *v, const char *field, int ids, a2a_verr *e)
{
    char f[sizeof e->field];
    if (!json_is_array(v))
        return once__a2a_verr(e, field, "%s must be an array", field);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (ids) {
            if (once__a2a_check_id(x, f, e) != ONCE_OK)
                return ONCE_EINVAL;
        } else if (!json_is_string(x)) {
            return once__a2a_verr(e, f, "%s must be a string", f);
        }
    }
    return ONCE_OK;
}

int once__a2a_check_message(const json_t *msg, const char *field, int legacy, size_t max_parts,
                        a2a_verr *e)
{
    char f[sizeof e->field];
    if (msg == NULL)
        return once__a2a_verr(e, field, "%s is required", field);
    if (!json_is_object(msg))
        return once__a2a_verr(e, field, "%s must be an object", field);

    snprintf(f, sizeof f, "%s.messageId", field);
    const json_t *mid = json_object_get(msg, "messageId");
    if (mid == NULL) {
        if (!legacy)
            return once__a2a_verr(e, f, "%s is required", f);
    } else if (json_is_string(mid) && json_string_length(mid) == 0) {
        return once__a2a_verr(e, f, "%s must not be empty", f);
    } else if (once__a2a_check_id(mid, f, e) != ONCE_OK) {
        return ONCE_EINVAL;
    }

    snprintf(f, sizeof f, "%s.role", field);
    const json_t *role = json_object_get(msg, "role");
    if (role == NULL)
        return once__a2a_verr(e, f, "%s is required", f);
    if (!json_is_string(role))
        return once__a2a_verr(e, f, "%s must be a string", f);
    const char *r = json_string_value(role);
    if (strcmp(r, "ROLE_USER") != 0 && !(legacy && strcmp(r, "user") == 0))
        return once__a2a_verr(e, f, "%s must be ROLE_USER (a client sends user messages)", f);

    snprintf(f, sizeof f, "%s.parts", field);
    const json_t *parts = json_object_get(msg, "parts");
    if (parts == NULL)
        return once__a2a_verr(e, f, "%s is required", f);
    if (!json_is_array(parts))
        return once__a2a_verr(e, f, "%s must be an array", f);
    if (json_array_size(parts) == 0)
        return once__a2a_verr(e, f, "%s must hold at least one part", f);
    if (json_array_size(parts) > max_parts)
        return once__a2a_verr(e, f, "%s holds %zu parts; at most %zu are accepted", f,
                          json_array_size(parts), max_parts);
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        snprintf(f, sizeof f, "%s.parts[%zu]", field, i);
        if (once__a2a_check_part(p, f, e) != ONCE_OK)
            return ONCE_EINVAL;
    }

    static const char *const idfields[] = {"taskId", "contextId"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *v = json_object_get(msg, idfields[k]);
        snprintf(f, sizeof f, "%s.%s", field, idfields[k]);
        if (v != NULL && once__a2a_check_id(v, f, e) != ONCE_OK)
            return ONCE_EINVAL;
    }
    const json_t *md = json_object_get(msg, "metadata");
    snprintf(f, sizeof f, "%s.metadata", field);
    if (md != NULL && !json_is_object(md))
        return once__a2a_verr(e, f, "%s must be an object", f);
    if (md != NULL && once__a2a_check_depth(md, f, e) != ONCE_OK)
        return ONCE_EINVAL;
    const json_t *ext = json_object_get(msg, "extensions");
    snprintf(f, sizeof f, "%s.extensions", field);
    if (ext != NULL && check_string_array(ext, f, 0, e) != ONCE_OK)
        return ONCE_EINVAL;
    const json_t *refs = json_object_get(msg, "referenceTaskIds");
    snprintf(f, sizeof f, "%s.referenceTaskIds", field);
    if (refs != NULL && check_string_array(refs, f, 1, e) != ONCE_OK)
        return ONCE_EINVAL;
    return ONCE_OK;
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
