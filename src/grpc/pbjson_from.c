/*
 * pbjson_from.c -- protobuf bytes to ProtoJSON (once__pbjson_from_pb): the
 * bytes are checked and unpacked (pbjson.c), then the message struct is
 * walked with its descriptor. Printing follows protobuf's json_format with
 * default options, the reference the tests hold it to: implicit-presence
 * fields at their default are left out, explicit presence (oneof members,
 * proto3 optional, messages) prints whatever is set.
 *
 * One freedom taken: a google.protobuf.Value number that is a whole number
 * within 2^53 prints as a JSON integer (1, not 1.0), as the other bindings'
 * JSON carries it, so the digest of a request does not depend on the
 * binding it came over.
 */
#include "grpc/pbjson_int.h"

#include "core/base64.h"
#include "core/errbuf.h"
#include "core/json_depth.h"
#include "once/once.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"

static int msg_json(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const ProtobufCMessage *m,
                    json_t **out);

#define MEMBER(m, off) ((const char *)(m) + (off))

static int oom(once__pbj_ctx *c)
{
    return once__pbj_fail(c, ONCE_ENOMEM, "out of memory");
}

static int put(once__pbj_ctx *c, json_t *v, json_t **out)
{
    if (v == NULL)
        return oom(c);
    *out = v;
    return ONCE_OK;
}

/* ProtoJSON's numbers: NaN and the infinities as strings; a float as the
 * shortest decimal that reads back to the same float. */
static int float_json(once__pbj_ctx *c, double v, int is_float, json_t **out)
{
    if (isnan(v))
        return put(c, json_string("NaN"), out);
    if (isinf(v))
        return put(c, json_string(v > 0 ? "Infinity" : "-Infinity"), out);
    if (is_float) {
        char buf[32];
        for (int prec = 6; prec <= 9; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtof(buf, NULL) == (float)v)
                break;
        }
        v = strtod(buf, NULL);
    }
    return put(c, json_real(v), out);
}

static int scalar_json(once__pbj_ctx *c, const ProtobufCFieldDescriptor *f, const void *p,
                       json_t **out)
{
    char num[32];
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return put(c, json_integer(*(const int32_t *)p), out);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return put(c, json_integer(*(const uint32_t *)p), out);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(num, sizeof num, "%lld", (long long)*(const int64_t *)p);
        return put(c, json_string(num), out);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(num, sizeof num, "%llu", (unsigned long long)*(const uint64_t *)p);
        return put(c, json_string(num), out);
    case PROTOBUF_C_TYPE_BOOL:
        return put(c, json_boolean(*(const protobuf_c_boolean *)p), out);
    case PROTOBUF_C_TYPE_FLOAT:
        return float_json(c, *(const float *)p, 1, out);
    case PROTOBUF_C_TYPE_DOUBLE:
        return float_json(c, *(const double *)p, 0, out);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        return put(c, ev != NULL ? json_string(ev->name) : json_integer(v), out);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return put(c, json_string(s != NULL ? s : ""), out);
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        size_t n = once__base64_len(b->len, 0);
        char *s = once_malloc(n + 1);
        if (s == NULL)
            return oom(c);
        once__base64_encode(b->data, b->len, s, 0);
        json_t *j = json_stringn(s, n);
        once_free(s);
        return put(c, j, out);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        if (sub == NULL) /* an unset oneof message member cannot be selected */
            return put(c, json_object(), out);
        return msg_json(c, f->descriptor, sub, out);
    }
    default:
        return once__pbj_fail(c, ONCE_EPARSE, "%s: unsupported field type", f->name);
    }
}

/* A map key as ProtoJSON writes it: always a string. */
static int key_text(once__pbj_ctx *c, const ProtobufCFieldDescriptor *kf, const void *p, char *buf,
                    size_t cap, const char **key)
{
    if (kf->type == PROTOBUF_C_TYPE_STRING) {
        const char *s = *(char *const *)p;
        *key = s != NULL ? s : "";
        return ONCE_OK;
    }
    json_t *k;
    int rc = scalar_json(c, kf, p, &k);
    if (rc != ONCE_OK)
        return rc;
    if (json_is_string(k))
        snprintf(buf, cap, "%s", json_string_value(k));
    else if (json_is_integer(k))
        snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(k));
    else
        snprintf(buf, cap, "%s", json_is_true(k) ? "true" : "false");
    json_decref(k);
    *key = buf;
    return ONCE_OK;
}

/* One field, set, as its JSON value: an array, an object for a map, or the
 * value itself. */
static int field_json(once__pbj_ctx *c, const ProtobufCFieldDescriptor *f,
                      const ProtobufCMessage *m, json_t **out)
{
    const char *mem = MEMBER(m, f->offset);
    if (f->label != PROTOBUF_C_LABEL_REPEATED)
        return scalar_json(c, f, mem, out);
    size_t n = *(const size_t *)MEMBER(m, f->quantifier_offset);
    const char *arr = *(char *const *)mem;
    int is_map = once__pbj_is_map(f);
    json_t *all = is_map ? json_object() : json_array();
    if (all == NULL)
        return oom(c);
    size_t esz = once__pbj_elem_size(f->type);
    for (size_t i = 0; i < n; i++) {
        json_t *v;
        int rc;
        if (is_map) {
            const ProtobufCMessage *e = ((ProtobufCMessage *const *)arr)[i];
            const ProtobufCMessageDescriptor *ed = f->descriptor;
            char kbuf[32];
            const char *key;
            rc = key_text(c, &ed->fields[0], MEMBER(e, ed->fields[0].offset), kbuf, sizeof kbuf,
                          &key);
            if (rc == ONCE_OK)
                rc = scalar_json(c, &ed->fields[1], MEMBER(e, ed->fields[1].offset), &v);
            if (rc == ONCE_OK && json_object_set_new(all, key, v) != 0)
                rc = oom(c);
        } else {
            rc = scalar_json(c, f, arr + i * esz, &v);
            if (rc == ONCE_OK && json_array_append_new(all, v) != 0)
                rc = oom(c);
        }
        if (rc != ONCE_OK) {
            json_decref(all);
            return rc;
        }
    }
    *out = all;
    return ONCE_OK;
}

/* Whether ProtoJSON prints the field: explicit presence when it has it,
 * else anything but the default. */
static int present(const ProtobufCFieldDescriptor *f, const ProtobufCMessage *m)
{
    const char *mem = MEMBER(m, f->offset);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)MEMBER(m, f->quantifier_offset) == f->id;
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return *(const size_t *)MEMBER(m, f->quantifier_offset) != 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(ProtobufCMessage *const *)mem != NULL;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)mem;
        return s != NULL && (f->label == PROTOBUF_C_LABEL_OPTIONAL || s[0] != '\0');
    }
    default:
        break;
    }
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0)
        return *(const protobuf_c_boolean *)MEMBER(m, f->quantifier_offset);
    switch (f->type) {
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)mem)->len != 0;
    case PROTOBUF_C_TYPE_FLOAT:
        return *(const float *)mem != 0 || signbit(*(const float *)mem);
    case PROTOBUF_C_TYPE_DOUBLE:
        return *(const double *)mem != 0 || signbit(*(const double *)mem);
    default: {
        size_t n = once__pbj_elem_size(f->type);
        for (size_t i = 0; i < n; i++) {
            if (mem[i] != 0)
                return 1;
        }
        return 0;
    }
    }
}

static int plain_json(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d,
                      const ProtobufCMessage *m, json_t *obj)
{
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!present(f, m))
            continue;
        char name[128];
        json_t *v;
        once__pbj_json_name(f->name, name, sizeof name);
        int rc = field_json(c, f, m, &v);
        if (rc != ONCE_OK)
            return rc;
        if (json_object_set_new(obj, name, v) != 0)
            return oom(c);
    }
    return ONCE_OK;
}

static int value_json(once__pbj_ctx *c, const Google__Protobuf__Value *v, json_t **out);

static int struct_json(once__pbj_ctx *c, const Google__Protobuf__Struct *s, json_t **out)
{
    json_t *o = json_object();
    if (o == NULL)
        return oom(c);
    for (size_t i = 0; s != NULL && i < s->n_fields; i++) {
        json_t *v;
        int rc = value_json(c, s->fields[i]->value, &v);
        if (rc == ONCE_OK && json_object_set_new(o, s->fields[i]->key, v) != 0)
            rc = oom(c);
        if (rc != ONCE_OK) {
            json_decref(o);
            return rc;
        }
    }
    *out = o;
    return ONCE_OK;
}

static int list_json(once__pbj_ctx *c, const Google__Protobuf__ListValue *l, json_t **out)
{
    json_t *a = json_array();
    if (a == NULL)
        return oom(c);
    for (size_t i = 0; l != NULL && i < l->n_values; i++) {
        json_t *v;
        int rc = value_json(c, l->values[i], &v);
        if (rc == ONCE_OK && json_array_append_new(a, v) != 0)
            rc = oom(c);
        if (rc != ONCE_OK) {
            json_decref(a);
            return rc;
        }
    }
    *out = a;
    return ONCE_OK;
}

static int value_json(once__pbj_ctx *c, const Google__Protobuf__Value *v, json_t **out)
{
    if (v == NULL)
        return put(c, json_null(), out);
    if (++c->depth > ONCE_PBJSON_MAX_NESTING)
        return once__pbj_fail(c, ONCE_EPARSE, "values nested deeper than %d",
                              ONCE_PBJSON_MAX_NESTING);
    int rc;
    switch (v->kind_case) {
    case GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE: {
        double x = v->number_value;
        if (!isfinite(x))
            rc = once__pbj_fail(c, ONCE_EPARSE, "Value.number_value is not finite");
        else if (x == floor(x) && fabs(x) <= 9007199254740992.0)
            rc = put(c, json_integer((json_int_t)x), out);
        else
            rc = put(c, json_real(x), out);
        break;
    }
    case GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE:
        rc = put(c, json_string(v->string_value != NULL ? v->string_value : ""), out);
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE:
        rc = put(c, json_boolean(v->bool_value), out);
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE:
        rc = struct_json(c, v->struct_value, out);
        break;
    case GOOGLE__PROTOBUF__VALUE__KIND_LIST_VALUE:
        rc = list_json(c, v->list_value, out);
        break;
    default: /* null_value, or nothing set: null either way */
        rc = put(c, json_null(), out);
        break;
    }
    c->depth--;
    return rc;
}

static int time_json(once__pbj_ctx *c, int64_t secs, int32_t nanos, int duration, json_t **out)
{
    char buf[48];
    int rc = once__pbj_time_text(c, secs, nanos, duration, buf, sizeof buf);
    return rc != ONCE_OK ? rc : put(c, json_string(buf), out);
}

/* {"@type": url, ...the message's members} or, for a well-known type with
 * a JSON form of its own, {"@type": url, "value": that form}. */
static int any_json(once__pbj_ctx *c, const Google__Protobuf__Any *a, json_t **out)
{
    if ((a->type_url == NULL || a->type_url[0] == '\0') && a->value.len == 0)
        return put(c, json_object(), out);
    const ProtobufCMessageDescriptor *d = once__pbjson_type(a->type_url);
    if (d == NULL)
        return once__pbj_fail(c, ONCE_EPARSE, "Any: unknown type %.200s",
                              a->type_url != NULL ? a->type_url : "");
    ProtobufCMessage *m;
    int rc = once__pbj_decode(c, d, a->value.data, a->value.len, &m);
    if (rc != ONCE_OK)
        return rc;
    json_t *o = json_object(), *v = NULL;
    if (o == NULL || json_object_set_new(o, "@type", json_string(a->type_url)) != 0) {
        rc = oom(c);
    } else if (once__pbj_wkt_of(d) != ONCE_PBJ_PLAIN) {
        rc = msg_json(c, d, m, &v);
        if (rc == ONCE_OK && json_object_set_new(o, "value", v) != 0)
            rc = oom(c);
    } else {
        rc = plain_json(c, d, m, o);
    }
    protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
    if (rc != ONCE_OK) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return ONCE_OK;
}

static int msg_json(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const ProtobufCMessage *m,
                    json_t **out)
{
    if (++c->depth > ONCE_PBJSON_MAX_NESTING)
        return once__pbj_fail(c, ONCE_EPARSE, "messages nested deeper than %d",
                              ONCE_PBJSON_MAX_NESTING);
    int rc;
    switch (once__pbj_wkt_of(d)) {
    case ONCE_PBJ_STRUCT:
        rc = struct_json(c, (const Google__Protobuf__Struct *)m, out);
        break;
    case ONCE_PBJ_VALUE:
        rc = value_json(c, (const Google__Protobuf__Value *)m, out);
        break;
    case ONCE_PBJ_LIST:
        rc = list_json(c, (const Google__Protobuf__ListValue *)m, out);
        break;
    case ONCE_PBJ_TIMESTAMP: {
        const Google__Protobuf__Timestamp *t = (const Google__Protobuf__Timestamp *)m;
        rc = time_json(c, t->seconds, t->nanos, 0, out);
        break;
    }
    case ONCE_PBJ_DURATION: {
        const Google__Protobuf__Duration *t = (const Google__Protobuf__Duration *)m;
        rc = time_json(c, t->seconds, t->nanos, 1, out);
        break;
    }
    case ONCE_PBJ_ANY:
        rc = any_json(c, (const Google__Protobuf__Any *)m, out);
        break;
    default: {
        json_t *o = json_object();
        if (o == NULL) {
            rc = oom(c);
            break;
        }
        rc = plain_json(c, d, m, o);
        if (rc != ONCE_OK)
            json_decref(o);
        else
            *out = o;
        break;
    }
    }
    c->depth--;
    return rc;
}

int once__pbjson_from_pb(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                         json_t **out, char *err, size_t errlen)
{
    once__pbj_ctx c = {0};
    c.err = once__errbuf(err, &errlen);
    c.errlen = errlen;
    *out = NULL;
    ProtobufCMessage *m;
    int rc = once__pbj_decode(&c, d, buf, len, &m);
    if (rc != ONCE_OK)
        return rc;
    json_t *j = NULL;
    rc = msg_json(&c, d, m, &j);
    protobuf_c_message_free_unpacked(m, once__pbjson_allocator());
    if (rc == ONCE_OK && once__json_depth(j, ONCE_JSON_MAX_DEPTH) > ONCE_JSON_MAX_DEPTH)
        rc = once__pbj_fail(&c, ONCE_EPARSE, "JSON nested deeper than %d", ONCE_JSON_MAX_DEPTH);
    if (rc != ONCE_OK) {
        json_decref(j);
        return rc;
    }
    *out = j;
    return ONCE_OK;
}
