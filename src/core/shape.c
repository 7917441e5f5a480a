/*
 * shape.c -- the A2A 1.0 Message, Artifact and Part checks (shape.h), one
 * implementation for client requests and agent output alike; what differs
 * between the two (required members, role, ID rules, unknown members, the
 * part limit) is data in once__msg_rules, not a second validator.
 *
 * Invariant: the checks run in a fixed order and stop at the first problem,
 * so a peer fixing errors one at a time converges; member names a peer
 * wrote are quoted (quote.h) before they reach a reason.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "core/base64.h"
#include "core/json_depth.h"
#include "core/quote.h"
#include "core/shape.h"

int once__shape_fail(once__shape_err *e, const char *field, const char *fmt, ...)
{
    if (e != NULL) {
        once__strlcpy(e->field, field, sizeof e->field);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->why, sizeof e->why, fmt, ap);
        va_end(ap);
    }
    return ONCE_EINVAL;
}

int once__shape_depth(const json_t *v, const char *field, once__shape_err *e)
{
    if (v != NULL && once__json_depth(v, ONCE_VALUE_MAX_DEPTH) > ONCE_VALUE_MAX_DEPTH)
        return once__shape_fail(e, field, "%s nests deeper than %d levels (the limit on a value)",
                                field, ONCE_VALUE_MAX_DEPTH);
    return ONCE_OK;
}

int once__shape_id(const json_t *v, const char *field, once__shape_err *e)
{
    if (!json_is_string(v))
        return once__shape_fail(e, field, "%s must be a string", field);
    if (!once_id_valid(json_string_value(v)))
        return once__shape_fail(e, field,
                                "%s must be 1..%d characters of [A-Za-z0-9._:-] starting with a "
                                "letter or digit",
                                field, ONCE_ID_MAX);
    return ONCE_OK;
}

static int in_list(const char *key, const char *const *list)
{
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcmp(key, list[i]) == 0)
            return 1;
    return 0;
}

int once__shape_members(const json_t *obj, const char *const *allowed, const char *where,
                        once__shape_err *e)
{
    const char *key;
    json_t *v;
    char q[48], f[sizeof e->field];

    json_object_foreach((json_t *)obj, key, v) {
        (void)v;
        if (in_list(key, allowed))
            continue;
        once__quote(key, strlen(key), 40, q, sizeof q);
        snprintf(f, sizeof f, "%s.%s", where, q);
        if (strcmp(key, "kind") == 0)
            return once__shape_fail(e, f, "%s has \"kind\", which A2A 1.0 dropped (remove it)",
                                    where);
        return once__shape_fail(e, f, "%s has unknown member \"%s\"", where, q);
    }
    return ONCE_OK;
}

/*
 * Field names ("message.parts[0].text") are written only once a check has
 * failed: a message that is well formed is checked without printf.
 */

/* f = "where.key". */
static void member_name(char *f, size_t cap, const char *where, const char *key)
{
    snprintf(f, cap, "%s.%s", where, key);
}

/* f = "where[i]". */
static void element_name(char *f, size_t cap, const char *where, size_t i)
{
    snprintf(f, cap, "%s[%zu]", where, i);
}

/* v is a string (non-empty when nonempty; an ID when id). */
static int string_ok(const json_t *v, int nonempty, int id)
{
    return json_is_string(v) && (!nonempty || json_string_length(v) > 0) &&
           (!id || once_id_valid(json_string_value(v)));
}

/* obj.key, when present, is a string (non-empty when nonempty; an ID when
 * id). */
static int opt_string(const json_t *obj, const char *key, int nonempty, int id, const char *where,
                      once__shape_err *e)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL || string_ok(v, nonempty, id))
        return ONCE_OK;
    char f[sizeof e->field];
    member_name(f, sizeof f, where, key);
    if (!json_is_string(v))
        return once__shape_fail(e, f, "%s must be a string", f);
    if (nonempty && json_string_length(v) == 0)
        return once__shape_fail(e, f, "%s must not be empty", f);
    return once__shape_id(v, f, e);
}

/* obj.key, when present, is an object no deeper than a value may be. */
static int opt_object(const json_t *obj, const char *key, const char *where, once__shape_err *e)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL ||
        (json_is_object(v) && once__json_depth(v, ONCE_VALUE_MAX_DEPTH) <= ONCE_VALUE_MAX_DEPTH))
        return ONCE_OK;
    char f[sizeof e->field];
    member_name(f, sizeof f, where, key);
    if (!json_is_object(v))
        return once__shape_fail(e, f, "%s must be an object", f);
    return once__shape_depth(v, f, e);
}

/* obj.key, when present, is an array of strings (of IDs when ids). */
static int opt_string_array(const json_t *obj, const char *key, int ids, const char *where,
                            once__shape_err *e)
{
    char f[sizeof e->field], g[sizeof e->field + 24];
    const json_t *v = json_object_get(obj, key), *x;
    size_t i;
    if (v == NULL)
        return ONCE_OK;
    if (!json_is_array(v)) {
        member_name(f, sizeof f, where, key);
        return once__shape_fail(e, f, "%s must be an array of strings", f);
    }
    json_array_foreach(v, i, x) {
        if (string_ok(x, 0, ids))
            continue;
        member_name(f, sizeof f, where, key);
        element_name(g, sizeof g, f, i);
        if (ids && once__shape_id(x, g, e) != ONCE_OK)
            return ONCE_EINVAL;
        return once__shape_fail(e, g, "%s must be a string", g);
    }
    return ONCE_OK;
}

static const char *const part_members[] = {"text",     "raw",       "url", "data", "metadata",
                                           "filename", "mediaType", NULL};
static const char *const part_kinds[] = {"text", "raw", "url", "data", NULL};

int once__shape_part(const json_t *part, const char *field, once__shape_err *e)
{
    char f[sizeof e->field];
    const json_t *v;
    int kinds = 0;

    if (!json_is_object(part))
        return once__shape_fail(e, field, "%s must be an object", field);
    if (once__shape_members(part, part_members, field, e) != ONCE_OK)
        return ONCE_EINVAL;
    for (size_t i = 0; part_kinds[i] != NULL; i++)
        kinds += json_object_get(part, part_kinds[i]) != NULL;
    if (kinds != 1)
        return once__shape_fail(e, field,
                                "%s must hold exactly one of text, raw, url, data (found %d)",
                                field, kinds);
    if ((v = json_object_get(part, "text")) != NULL && !json_is_string(v)) {
        member_name(f, sizeof f, field, "text");
        return once__shape_fail(e, f, "%s must be a string", f);
    }
    if ((v = json_object_get(part, "url")) != NULL &&
        (!json_is_string(v) || json_string_length(v) == 0)) {
        member_name(f, sizeof f, field, "url");
        return once__shape_fail(e, f, "%s must be a non-empty string", f);
    }
    if ((v = json_object_get(part, "raw")) != NULL &&
        (!json_is_string(v) || !once__base64_valid(json_string_value(v), json_string_length(v)))) {
        member_name(f, sizeof f, field, "raw");
        if (!json_is_string(v))
            return once__shape_fail(e, f, "%s must be a base64 string", f);
        return once__shape_fail(e, f, "%s is not valid base64", f);
    }
    if ((v = json_object_get(part, "data")) != NULL &&
        once__json_depth(v, ONCE_VALUE_MAX_DEPTH) > ONCE_VALUE_MAX_DEPTH) {
        member_name(f, sizeof f, field, "data");
        return once__shape_depth(v, f, e);
    }
    if (opt_object(part, "metadata", field, e) != ONCE_OK ||
        opt_string(part, "filename", 0, 0, field, e) != ONCE_OK ||
        opt_string(part, "mediaType", 0, 0, field, e) != ONCE_OK)
        return ONCE_EINVAL;
    return ONCE_OK;
}

/* obj.parts: present, a non-empty array of at most max parts (0: any
 * number), each a Part. */
static int check_parts(const json_t *obj, const char *where, size_t max, once__shape_err *e)
{
    char f[sizeof e->field], g[sizeof e->field + 24];
    const json_t *parts = json_object_get(obj, "parts"), *p;
    size_t i;

    if (!json_is_array(parts) || json_array_size(parts) == 0 ||
        (max > 0 && json_array_size(parts) > max)) {
        member_name(f, sizeof f, where, "parts");
        if (parts == NULL)
            return once__shape_fail(e, f, "%s has no parts", where);
        if (!json_is_array(parts) || json_array_size(parts) == 0)
            return once__shape_fail(e, f, "%s must be a non-empty array", f);
        return once__shape_fail(e, f, "%s holds %zu parts; at most %zu are accepted", f,
                                json_array_size(parts), max);
    }
    json_array_foreach(parts, i, p) {
        /* Checked once unnamed; only a part that fails is checked again
         * under its name, for the reason. */
        if (once__shape_part(p, "", NULL) == ONCE_OK)
            continue;
        member_name(f, sizeof f, where, "parts");
        element_name(g, sizeof g, f, i);
        return once__shape_part(p, g, e);
    }
    return ONCE_OK;
}

static const char *const message_members[] = {"messageId", "role",      "parts",
                                              "metadata",  "contextId", "taskId",
                                              "referenceTaskIds", "extensions", NULL};

static int check_role(const json_t *m, const char *where, const once__msg_rules *r,
                      once__shape_err *e)
{
    char f[sizeof e->field];
    const json_t *role = json_object_get(m, "role");
    if (role == NULL && !r->need_role)
        return ONCE_OK;
    const char *v = json_string_value(role);
    if (v != NULL &&
        (strcmp(v, r->role) == 0 || (r->alt_role != NULL && strcmp(v, r->alt_role) == 0)))
        return ONCE_OK;
    member_name(f, sizeof f, where, "role");
    if (role == NULL)
        return once__shape_fail(e, f, "%s is required", f);
    return once__shape_fail(e, f, "%s must be \"%s\"%s", f, r->role,
                            r->need_role ? "" : " (or left out)");
}

void once__msg_rules_client(once__msg_rules *r, int legacy, size_t max_parts)
{
    memset(r, 0, sizeof *r);
    r->role = "ROLE_USER";
    r->alt_role = legacy ? "user" : NULL;
    r->need_role = 1;
    r->need_id = !legacy;
    r->ids = 1;
    r->max_parts = max_parts;
}

int once__shape_message(const json_t *m, const char *field, const once__msg_rules *r,
                        once__shape_err *e)
{
    char f[sizeof e->field];

    if (m == NULL)
        return once__shape_fail(e, field, "%s is required", field);
    if (!json_is_object(m))
        return once__shape_fail(e, field, "%s must be an object (an A2A Message)", field);
    if (r->strict && once__shape_members(m, message_members, field, e) != ONCE_OK)
        return ONCE_EINVAL;
    if (r->need_id && json_object_get(m, "messageId") == NULL) {
        member_name(f, sizeof f, field, "messageId");
        return once__shape_fail(e, f, "%s is required", f);
    }
    if (opt_string(m, "messageId", 1, r->ids, field, e) != ONCE_OK ||
        check_role(m, field, r, e) != ONCE_OK || check_parts(m, field, r->max_parts, e) != ONCE_OK ||
        opt_string(m, "taskId", 1, r->ids, field, e) != ONCE_OK ||
        opt_string(m, "contextId", 1, r->ids, field, e) != ONCE_OK ||
        opt_object(m, "metadata", field, e) != ONCE_OK ||
        opt_string_array(m, "extensions", 0, field, e) != ONCE_OK ||
        opt_string_array(m, "referenceTaskIds", r->ids, field, e) != ONCE_OK)
        return ONCE_EINVAL;
    return ONCE_OK;
}

static const once__msg_rules agent_rules = {"ROLE_AGENT", NULL, 0, 0, 0, 1, 0};

int once__shape_agent_message(const json_t *m, const char *where, once__shape_err *e)
{
    return once__shape_message(m, where, &agent_rules, e);
}

static const char *const artifact_members[] = {"artifactId", "name",     "description",
                                               "parts",      "metadata", "extensions", NULL};

int once__shape_artifact(const json_t *a, const char *where, once__shape_err *e)
{
    if (!json_is_object(a))
        return once__shape_fail(e, where, "%s must be an object (an A2A Artifact)", where);
    if (once__shape_members(a, artifact_members, where, e) != ONCE_OK ||
        opt_string(a, "artifactId", 1, 0, where, e) != ONCE_OK ||
        opt_string(a, "name", 0, 0, where, e) != ONCE_OK ||
        opt_string(a, "description", 0, 0, where, e) != ONCE_OK ||
        opt_object(a, "metadata", where, e) != ONCE_OK ||
        opt_string_array(a, "extensions", 0, where, e) != ONCE_OK)
        return ONCE_EINVAL;
    return check_parts(a, where, 0, e);
}

static int reason(int rc, const once__shape_err *e, char *why, size_t whylen)
{
    if (rc != ONCE_OK && why != NULL && whylen > 0)
        snprintf(why, whylen, "%s", e->why);
    return rc;
}

int once__agent_message_check(const json_t *m, char *why, size_t whylen)
{
    once__shape_err e;
    return reason(once__shape_agent_message(m, "message", &e), &e, why, whylen);
}

int once__agent_artifact_check(const json_t *a, char *why, size_t whylen)
{
    once__shape_err e;
    return reason(once__shape_artifact(a, "artifact", &e), &e, why, whylen);
}
