/*
 * names.c -- ProtoJSON field names: A2A 1.0 objects are ProtoJSON, whose
 * readers accept a field under its lowerCamelCase JSON name and under its
 * proto name (task_id, history_length, ...). The codec renames every proto
 * name in a request's params to its JSON name once, before any handler sees
 * them, so every method, every nested object and the request digest see one
 * spelling; no handler knows the other one exists.
 *
 * Invariants: free-form values (metadata: google.protobuf.Struct; a Part's
 * data: google.protobuf.Value) are the client's own JSON and are never
 * renamed; an object that holds one field under both names is refused
 * (which one would win is a guess, and the digest must not depend on it).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"

/* Members whose value is free-form JSON, kept as the client sent it. */
static int free_form(const char *key)
{
    return strcmp(key, "metadata") == 0 || strcmp(key, "data") == 0;
}

/* The JSON name of a proto name into out: each "_x" (x a lowercase letter)
 * becomes "X". 1 if key is a proto name that differs from its JSON name. */
static int json_name(const char *key, char *out, size_t cap)
{
    size_t n = 0;
    int renamed = 0;
    for (const char *p = key; *p != '\0'; p++) {
        if (n + 1 >= cap)
            return 0;
        if (*p == '_' && islower((unsigned char)p[1])) {
            out[n++] = (char)toupper((unsigned char)p[1]);
            p++;
            renamed = 1;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return renamed;
}

/* Where a value stands: a chain of members and elements up to params,
 * written out ("message.parts[0]") only for an error, so a request without
 * proto names is walked without printf. key NULL: element index of an
 * array. */
struct at {
    const struct at *up;
    const char *key;
    size_t index;
};

/* a as a path into out (cap bytes): "" for params, then ".key" ("key" at
 * the top) or "[i]" per step. Returns its length. */
static size_t at_path(const struct at *a, char *out, size_t cap)
{
    if (a == NULL) {
        out[0] = '\0';
        return 0;
    }
    size_t n = at_path(a->up, out, cap);
    if (a->key != NULL)
        snprintf(out + n, cap - n, "%s%s", n > 0 ? "." : "", a->key);
    else
        snprintf(out + n, cap - n, "[%zu]", a->index);
    return n + strlen(out + n);
}

static int rename_in(json_t *v, const struct at *at, a2a_verr *e);

/* Rename the proto-named members of object o (at at). */
static int rename_proto(json_t *o, const struct at *at, a2a_verr *e)
{
    json_t *proto = json_array();  /* the proto-named keys, renamed after the walk */
    if (proto == NULL)
        return ONCE_ENOMEM;
    const char *key;
    json_t *val;
    char camel[128], sub[sizeof e->field];
    int rc = ONCE_OK;
    json_object_foreach(o, key, val) {
        if (json_name(key, camel, sizeof camel) &&
            json_array_append_new(proto, json_string(key)) != 0) {
            rc = ONCE_ENOMEM;
            break;
        }
    }
    size_t i;
    json_t *k;
    json_array_foreach(proto, i, k) {
        if (rc != ONCE_OK)
            break;
        key = json_string_value(k);
        json_name(key, camel, sizeof camel);
        if (json_object_get(o, camel) != NULL) {
            struct at twice = {at, camel, 0};
            at_path(&twice, sub, sizeof sub);
            rc = once__a2a_verr(e, sub, "%s is given twice, as %s and as %s", camel, camel, key);
            break;
        }
        val = json_object_get(o, key);
        if (json_object_set(o, camel, val) != 0 || json_object_del(o, key) != 0)
            rc = ONCE_ENOMEM;
    }
    json_decref(proto);
    return rc;
}

/* Rename the proto-named members of object o (at at) and recurse. */
static int rename_members(json_t *o, const struct at *at, a2a_verr *e)
{
    const char *key;
    json_t *val;
    char camel[128];
    int proto = 0;
    json_object_foreach(o, key, val) {
        if (json_name(key, camel, sizeof camel)) {
            proto = 1;
            break;
        }
    }
    int rc = proto ? rename_proto(o, at, e) : ONCE_OK;
    json_object_foreach(o, key, val) {
        if (rc != ONCE_OK || free_form(key))
            continue;
        struct at sub = {at, key, 0};
        rc = rename_in(val, &sub, e);
    }
    return rc;
}

static int rename_in(json_t *v, const struct at *at, a2a_verr *e)
{
    if (json_is_object(v))
        return rename_members(v, at, e);
    if (!json_is_array(v))
        return ONCE_OK;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        struct at sub = {at, NULL, i};
        int rc = rename_in(x, &sub, e);
        if (rc != ONCE_OK)
            return rc;
    }
    return ONCE_OK;
}

int once__a2a_json_names(json_t *params, a2a_verr *e)
{
    return rename_in(params, NULL, e);
}
