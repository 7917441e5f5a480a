/*
 * pbjson_to.c -- ProtoJSON to protobuf bytes (once__pbjson_to_pb): the JSON
 * is read into a message struct built with protobuf-c's allocator hooks,
 * which protobuf-c then packs (fields in number order, as every protobuf
 * writer does) and frees. A failure frees the partial struct the same way,
 * so every string, array and sub-message is owned by the struct the moment
 * it is stored: a repeated field's count only grows past an element once
 * that element is complete.
 *
 * Accepts what protobuf's json_format.ParseDict accepts, and refuses what it
 * refuses: unknown members, a field given twice (by both of its names) or
 * two members of one oneof, null inside a repeated field (unless the
 * elements are google.protobuf.Value).
 */
#include "grpc/pbjson_int.h"

#include "core/base64.h"
#include "core/civil.h"
#include "core/errbuf.h"
#include "core/json_depth.h"
#include "once/once.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"

#define MEMBER(m, off) ((char *)(m) + (off))

static int build(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const json_t *in,
                 ProtobufCMessage **out);

static int oom(once__pbj_ctx *c)
{
    return once__pbj_fail(c, ONCE_ENOMEM, "out of memory");
}

static const char *kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_NULL:
        return "null";
    default:
        return "a boolean";
    }
}

static int wrong(once__pbj_ctx *c, const char *want, const json_t *v)
{
    return once__pbj_fail(c, ONCE_EINVAL, "expected %s, not %s", want, kind(v));
}

/* --- numbers ---------------------------------------------------------------- */

/* An integral JSON value (a number, or a string holding one) as a double
 * or exactly: *neg, *mag. */
static int integral(once__pbj_ctx *c, const json_t *v, int *neg, uint64_t *mag)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        *neg = x < 0;
        *mag = x < 0 ? (uint64_t)(-(x + 1)) + 1 : (uint64_t)x;
        return ONCE_OK;
    }
    double d;
    if (json_is_real(v)) {
        d = json_real_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v), *p = s;
        if (*p == '-')
            p++;
        if (*p >= '0' && *p <= '9') {
            char *end;
            errno = 0;
            unsigned long long u = strtoull(p, &end, 10);
            if (*end == '\0') {
                if (errno == ERANGE)
                    return once__pbj_fail(c, ONCE_EINVAL, "integer out of range");
                *neg = s[0] == '-';
                *mag = u;
                return ONCE_OK;
            }
        }
        char *end;
        d = strtod(s, &end);
        if (*s == '\0' || *end != '\0' || s[0] == ' ')
            return once__pbj_fail(c, ONCE_EINVAL, "not an integer: \"%.40s\"", s);
    } else {
        return wrong(c, "an integer", v);
    }
    if (!isfinite(d) || d != floor(d))
        return once__pbj_fail(c, ONCE_EINVAL, "not an integer");
    if (fabs(d) >= 18446744073709551616.0)
        return once__pbj_fail(c, ONCE_EINVAL, "integer out of range");
    *neg = d < 0;
    *mag = (uint64_t)fabs(d);
    return ONCE_OK;
}

static int int_in(once__pbj_ctx *c, const json_t *v, int64_t lo, uint64_t hi, int64_t *s,
                  uint64_t *u)
{
    int neg = 0;   /* set by integral() when it succeeds; initialised for -O2's */
    uint64_t mag = 0; /* -Wmaybe-uninitialized, which cannot see that */
    int rc = integral(c, v, &neg, &mag);
    if (rc != ONCE_OK)
        return rc;
    if (neg && mag == 0)
        neg = 0;
    if (neg ? mag > (uint64_t)-(lo + 1) + 1 : mag > hi)
        return once__pbj_fail(c, ONCE_EINVAL, "integer out of range");
    if (neg)
        *s = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    else
        *s = (int64_t)mag;
    *u = mag;
    return ONCE_OK;
}

static int real_in(once__pbj_ctx *c, const json_t *v, int is_float, double *out)
{
    double d;
    if (json_is_number(v)) {
        d = json_number_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strcmp(s, "NaN") == 0) {
            d = NAN;
        } else if (strcmp(s, "Infinity") == 0) {
            d = INFINITY;
        } else if (strcmp(s, "-Infinity") == 0) {
            d = -INFINITY;
        } else {
            char *end;
            d = strtod(s, &end);
            if (*s == '\0' || *end != '\0' || !isfinite(d))
                return once__pbj_fail(c, ONCE_EINVAL, "not a number: \"%.40s\"", s);
        }
    } else {
        return wrong(c, "a number", v);
    }
    if (is_float && isfinite(d) && fabs(d) > FLT_MAX)
        return once__pbj_fail(c, ONCE_EINVAL, "out of range for a float");
    *out = d;
    return ONCE_OK;
}

/* --- one value ----------------------------------------------------------------- */

static int set_scalar(once__pbj_ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v,
                      void *dst)
{
    int64_t s;
    uint64_t u;
    double d;
    int rc;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if ((rc = int_in(c, v, INT32_MIN, INT32_MAX, &s, &u)) == ONCE_OK)
            *(int32_t *)dst = (int32_t)s;
        return rc;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((rc = int_in(c, v, 0, UINT32_MAX, &s, &u)) == ONCE_OK)
            *(uint32_t *)dst = (uint32_t)u;
        return rc;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if ((rc = int_in(c, v, INT64_MIN, INT64_MAX, &s, &u)) == ONCE_OK)
            *(int64_t *)dst = s;
        return rc;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if ((rc = int_in(c, v, 0, UINT64_MAX, &s, &u)) == ONCE_OK)
            *(uint64_t *)dst = u;
        return rc;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v))
            return wrong(c, "true or false", v);
        *(protobuf_c_boolean *)dst = json_is_true(v);
        return ONCE_OK;
    case PROTOBUF_C_TYPE_FLOAT:
        if ((rc = real_in(c, v, 1, &d)) == ONCE_OK)
            *(float *)dst = (float)d;
        return rc;
    case PROTOBUF_C_TYPE_DOUBLE:
        if ((rc = real_in(c, v, 0, &d)) == ONCE_OK)
            *(double *)dst = d;
        return rc;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *ed = f->descriptor;
        if (json_is_string(v)) {
            const ProtobufCEnumValue *ev =
                protobuf_c_enum_descriptor_get_value_by_name(ed, json_string_value(v));
            if (ev == NULL)
                return once__pbj_fail(c, ONCE_EINVAL, "not a %s: \"%.60s\"", ed->name,
                                      json_string_value(v));
            *(int *)dst = ev->value;
            return ONCE_OK;
        }
        if (!json_is_integer(v))
            return wrong(c, "an enum name or number", v);
        if ((rc = int_in(c, v, INT32_MIN, INT32_MAX, &s, &u)) == ONCE_OK)
            *(int *)dst = (int)s;
        return rc;
    }
    case PROTOBUF_C_TYPE_STRING: {
        if (!json_is_string(v))
            return wrong(c, "a string", v);
        size_t n = json_string_length(v);
        const char *s0 = json_string_value(v);
        if (memchr(s0, '\0', n) != NULL)
            return once__pbj_fail(c, ONCE_EINVAL, "a string with a NUL");
        char *cp = once_strndup(s0, n);
        if (cp == NULL)
            return oom(c);
        *(char **)dst = cp;
        return ONCE_OK;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        if (!json_is_string(v))
            return wrong(c, "a base64 string", v);
        const char *s0 = json_string_value(v);
        size_t n = json_string_length(v);
        long k = once__base64_decode(s0, n, NULL, 0);
        if (k < 0)
            return once__pbj_fail(c, ONCE_EINVAL, "not base64");
        uint8_t *b = once_malloc(k > 0 ? (size_t)k : 1);
        if (b == NULL)
            return oom(c);
        once__base64_decode(s0, n, b, (size_t)k);
        ProtobufCBinaryData *bd = dst;
        bd->data = b;
        bd->len = (size_t)k;
        return ONCE_OK;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        return build(c, f->descriptor, v, (ProtobufCMessage **)dst);
    default:
        return once__pbj_fail(c, ONCE_EINVAL, "unsupported field type");
    }
}

/* null reads as a google.protobuf.Value (null_value) wherever one is
 * expected; elsewhere it means "not set". */
static int is_value(const ProtobufCFieldDescriptor *f)
{
    return f->type == PROTOBUF_C_TYPE_MESSAGE && once__pbj_wkt_of(f->descriptor) == ONCE_PBJ_VALUE;
}

/* A map key from its JSON member name. */
static int set_key(once__pbj_ctx *c, const ProtobufCFieldDescriptor *kf, const char *key, void *dst)
{
    if (kf->type == PROTOBUF_C_TYPE_BOOL) {
        if (strcmp(key, "true") != 0 && strcmp(key, "false") != 0)
            return once__pbj_fail(c, ONCE_EINVAL, "map key \"%.40s\" is not a boolean", key);
        *(protobuf_c_boolean *)dst = key[0] == 't';
        return ONCE_OK;
    }
    json_t *k = json_string(key);
    if (k == NULL)
        return oom(c);
    int rc = set_scalar(c, kf, k, dst);
    json_decref(k);
    return rc;
}

static int set_repeated(once__pbj_ctx *c, const ProtobufCFieldDescriptor *f, ProtobufCMessage *m,
                        const json_t *v)
{
    int is_map = once__pbj_is_map(f);
    if (is_map ? !json_is_object(v) : !json_is_array(v))
        return wrong(c, is_map ? "an object" : "an array", v);
    size_t n = is_map ? json_object_size(v) : json_array_size(v);
    size_t esz = once__pbj_elem_size(f->type);
    size_t *count = (size_t *)MEMBER(m, f->quantifier_offset);
    char **arr = (char **)MEMBER(m, f->offset);
    if (n == 0)
        return ONCE_OK;
    if ((*arr = once_calloc(n, esz)) == NULL)
        return oom(c);
    if (is_map) {
        const ProtobufCMessageDescriptor *ed = f->descriptor;
        const char *key;
        const json_t *val;
        json_object_foreach((json_t *)v, key, val) {
            ProtobufCMessage *e = once_calloc(1, ed->sizeof_message);
            if (e == NULL)
                return oom(c);
            protobuf_c_message_init(ed, e);
            ((ProtobufCMessage **)*arr)[(*count)++] = e;
            size_t at = once__pbj_push(c, ".%s", key);
            int rc = set_key(c, &ed->fields[0], key, MEMBER(e, ed->fields[0].offset));
            if (rc == ONCE_OK && json_is_null(val) && !is_value(&ed->fields[1]))
                rc = once__pbj_fail(c, ONCE_EINVAL, "null is not a map value");
            if (rc == ONCE_OK)
                rc = set_scalar(c, &ed->fields[1], val, MEMBER(e, ed->fields[1].offset));
            if (rc != ONCE_OK)
                return rc;
            once__pbj_pop(c, at);
        }
        return ONCE_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *el = json_array_get(v, i);
        size_t at = once__pbj_push(c, "[%zu]", i);
        if (json_is_null(el) && !is_value(f))
            return once__pbj_fail(c, ONCE_EINVAL, "null in a repeated field");
        int rc = set_scalar(c, f, el, *arr + i * esz);
        if (rc != ONCE_OK)
            return rc;
        (*count)++;
        once__pbj_pop(c, at);
    }
    return ONCE_OK;
}

/* --- messages ------------------------------------------------------------------------ */

static const ProtobufCFieldDescriptor *find(const ProtobufCMessageDescriptor *d, const char *key)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
    if (f != NULL)
        return f;
    for (unsigned i = 0; i < d->n_fields; i++) {
        char jn[128];
        once__pbj_json_name(d->fields[i].name, jn, sizeof jn);
        if (strcmp(jn, key) == 0)
            return &d->fields[i];
    }
    return NULL;
}

static int set_field(once__pbj_ctx *c, const ProtobufCFieldDescriptor *f, ProtobufCMessage *m,
                     const json_t *v)
{
    if (json_is_null(v) && !(is_value(f) && f->label != PROTOBUF_C_LABEL_REPEATED))
        return ONCE_OK;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return set_repeated(c, f, m, v);
    uint32_t *oneof = NULL;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        oneof = (uint32_t *)MEMBER(m, f->quantifier_offset);
        if (*oneof != 0)
            return once__pbj_fail(c, ONCE_EINVAL, "a second member of a oneof");
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
            *(void **)MEMBER(m, f->offset) = NULL;
        else if (f->type == PROTOBUF_C_TYPE_BYTES)
            memset(MEMBER(m, f->offset), 0, sizeof(ProtobufCBinaryData));
    }
    int rc = set_scalar(c, f, v, MEMBER(m, f->offset));
    if (rc != ONCE_OK)
        return rc;
    if (oneof != NULL)
        *oneof = f->id;
    else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
             f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
        *(protobuf_c_boolean *)MEMBER(m, f->quantifier_offset) = 1;
    return ONCE_OK;
}

/* The members of an object onto d's fields; "@type" is skipped for Any's
 * embedded form. */
static int fill(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, ProtobufCMessage *m,
                const json_t *in, int skip_type)
{
    if (!json_is_object(in))
        return wrong(c, "an object", in);
    uint64_t got[8] = {0};
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)in, key, v) {
        if (skip_type && strcmp(key, "@type") == 0)
            continue;
        const ProtobufCFieldDescriptor *f = find(d, key);
        if (f == NULL && c->lenient)
            continue;
        size_t at = once__pbj_push(c, c->plen > 0 ? ".%s" : "%s", key);
        if (f == NULL)
            return once__pbj_fail(c, ONCE_EINVAL, "unknown field of %s", d->name);
        size_t idx = (size_t)(f - d->fields);
        if (idx < 512) {
            if (got[idx / 64] & (1ull << (idx % 64)))
                return once__pbj_fail(c, ONCE_EINVAL, "%s given twice", f->name);
            got[idx / 64] |= 1ull << (idx % 64);
        }
        int rc = set_field(c, f, m, v);
        if (rc != ONCE_OK)
            return rc;
        once__pbj_pop(c, at);
    }
    return ONCE_OK;
}

static int value_fill(once__pbj_ctx *c, Google__Protobuf__Value *v, const json_t *in)
{
    int rc = ONCE_OK;
    switch (json_typeof(in)) {
    case JSON_NULL:
        v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_NULL_VALUE;
        v->null_value = GOOGLE__PROTOBUF__NULL_VALUE__NULL_VALUE;
        return ONCE_OK;
    case JSON_TRUE:
    case JSON_FALSE:
        v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE;
        v->bool_value = json_is_true(in);
        return ONCE_OK;
    case JSON_INTEGER:
    case JSON_REAL:
        v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE;
        v->number_value = json_number_value(in);
        return ONCE_OK;
    case JSON_STRING:
        if ((v->string_value = once_strndup(json_string_value(in), json_string_length(in))) ==
            NULL)
            return oom(c);
        v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE;
        return ONCE_OK;
    case JSON_OBJECT:
        v->struct_value = NULL;
        rc = build(c, &google__protobuf__struct__descriptor, in,
                   (ProtobufCMessage **)&v->struct_value);
        if (rc == ONCE_OK)
            v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE;
        return rc;
    default:
        v->list_value = NULL;
        rc = build(c, &google__protobuf__list_value__descriptor, in,
                   (ProtobufCMessage **)&v->list_value);
        if (rc == ONCE_OK)
            v->kind_case = GOOGLE__PROTOBUF__VALUE__KIND_LIST_VALUE;
        return rc;
    }
}

static int time_fill(once__pbj_ctx *c, ProtobufCMessage *m, const json_t *in, int duration)
{
    if (!json_is_string(in))
        return wrong(c, duration ? "a duration string" : "an RFC 3339 timestamp", in);
    const char *s = json_string_value(in);
    size_t n = json_string_length(in);
    int64_t secs;
    int32_t nanos;
    char buf[48];
    if (!duration) {
        if (!once__rfc3339_parse(s, n, &secs, &nanos))
            return once__pbj_fail(c, ONCE_EINVAL, "not an RFC 3339 timestamp");
        Google__Protobuf__Timestamp *t = (Google__Protobuf__Timestamp *)m;
        t->seconds = secs;
        t->nanos = nanos;
    } else {
        /* [-]seconds[.fraction]s */
        const char *p = s, *end = s + n;
        int neg = p < end && *p == '-';
        p += neg;
        uint64_t whole = 0;
        int nd = 0;
        for (; p < end && *p >= '0' && *p <= '9' && nd < 13; p++, nd++)
            whole = whole * 10 + (uint64_t)(*p - '0');
        int32_t frac = 0;
        int fd = 0;
        if (p < end && *p == '.') {
            for (p++; p < end && *p >= '0' && *p <= '9' && fd < 9; p++, fd++)
                frac = frac * 10 + (*p - '0');
            if (fd == 0)
                nd = 0;
            for (int k = fd; k < 9; k++)
                frac *= 10;
        }
        if (nd == 0 || p + 1 != end || *p != 's')
            return once__pbj_fail(c, ONCE_EINVAL, "not a duration (\"1.5s\")");
        secs = neg ? -(int64_t)whole : (int64_t)whole;
        nanos = neg ? -frac : frac;
        Google__Protobuf__Duration *t = (Google__Protobuf__Duration *)m;
        t->seconds = secs;
        t->nanos = nanos;
    }
    char ignore[1];
    once__pbj_ctx probe = {.err = ignore, .errlen = sizeof ignore};
    if (once__pbj_time_text(&probe, secs, nanos, duration, buf, sizeof buf) != ONCE_OK)
        return once__pbj_fail(c, ONCE_EINVAL, "%s out of range", duration ? "duration" : "timestamp");
    return ONCE_OK;
}

static int any_fill(once__pbj_ctx *c, Google__Protobuf__Any *a, const json_t *in)
{
    if (!json_is_object(in))
        return wrong(c, "an object", in);
    if (json_object_size(in) == 0)
        return ONCE_OK;
    const json_t *t = json_object_get(in, "@type");
    if (!json_is_string(t))
        return once__pbj_fail(c, ONCE_EINVAL, "Any without \"@type\"");
    const ProtobufCMessageDescriptor *d = once__pbjson_type(json_string_value(t));
    if (d == NULL)
        return once__pbj_fail(c, ONCE_EINVAL, "Any: unknown type %.200s", json_string_value(t));
    ProtobufCMessage *m = NULL;
    int rc;
    if (once__pbj_wkt_of(d) != ONCE_PBJ_PLAIN) {
        const json_t *v = json_object_get(in, "value");
        if (v == NULL || json_object_size(in) != 2)
            return once__pbj_fail(c, ONCE_EINVAL, "Any of %s takes exactly \"@type\" and \"value\"",
                                  d->name);
        size_t at = once__pbj_push(c, ".value");
        rc = build(c, d, v, &m);
        if (rc == ONCE_OK)
            once__pbj_pop(c, at);
    } else {
        if ((m = once_calloc(1, d->sizeof_message)) == NULL)
            return oom(c);
        protobuf_c_message_init(d, m);
        rc = fill(c, d, m, in, 1);
    }
    if (rc == ONCE_OK && (a->type_url = once_strdup(json_string_value(t))) == NULL)
        rc = oom(c);
    if (rc == ONCE_OK)
        rc = once__pbj_pack(c, m, &a->value.data, &a->value.len);
    protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
    return rc;
}

static int build(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const json_t *in,
                 ProtobufCMessage **out)
{
    ProtobufCMessage *m = once_calloc(1, d->sizeof_message);
    if (m == NULL)
        return oom(c);
    protobuf_c_message_init(d, m);
    int rc;
    switch (once__pbj_wkt_of(d)) {
    case ONCE_PBJ_STRUCT:
        rc = json_is_object(in) ? set_repeated(c, &d->fields[0], m, in) : wrong(c, "an object", in);
        break;
    case ONCE_PBJ_LIST:
        rc = json_is_array(in) ? set_repeated(c, &d->fields[0], m, in) : wrong(c, "an array", in);
        break;
    case ONCE_PBJ_VALUE:
        rc = value_fill(c, (Google__Protobuf__Value *)m, in);
        break;
    case ONCE_PBJ_TIMESTAMP:
        rc = time_fill(c, m, in, 0);
        break;
    case ONCE_PBJ_DURATION:
        rc = time_fill(c, m, in, 1);
        break;
    case ONCE_PBJ_ANY:
        rc = any_fill(c, (Google__Protobuf__Any *)m, in);
        break;
    default:
        rc = fill(c, d, m, in, 0);
        break;
    }
    if (rc != ONCE_OK) {
        protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
        return rc;
    }
    *out = m;
    return ONCE_OK;
}

static int to_pb(const ProtobufCMessageDescriptor *d, const json_t *in, int lenient,
                 uint8_t **out, size_t *len, char *err, size_t errlen)
{
    once__pbj_ctx c = {0};
    c.lenient = lenient;
    c.err = once__errbuf(err, &errlen);
    c.errlen = errlen;
    *out = NULL;
    *len = 0;
    if (in == NULL)
        return once__pbj_fail(&c, ONCE_EINVAL, "no JSON");
    if (once__json_depth(in, ONCE_JSON_MAX_DEPTH) > ONCE_JSON_MAX_DEPTH)
        return once__pbj_fail(&c, ONCE_EINVAL, "JSON nested deeper than %d", ONCE_JSON_MAX_DEPTH);
    ProtobufCMessage *m;
    int rc = build(&c, d, in, &m);
    if (rc != ONCE_OK)
        return rc;
    rc = once__pbj_pack(&c, m, out, len);
    protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
    return rc;
}

int once__pbjson_to_pb(const ProtobufCMessageDescriptor *d, const json_t *in, uint8_t **out,
                       size_t *len, char *err, size_t errlen)
{
    return to_pb(d, in, 0, out, len, err, errlen);
}

int once__pbjson_answer_to_pb(const ProtobufCMessageDescriptor *d, const json_t *in,
                              uint8_t **out, size_t *len, char *err, size_t errlen)
{
    return to_pb(d, in, 1, out, len, err, errlen);
}
