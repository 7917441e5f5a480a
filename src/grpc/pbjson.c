/*
 * pbjson.c -- what both directions of the ProtoJSON codec share: protobuf-c's
 * allocator on once_malloc, the facts descriptors leave implicit, the type
 * registry Any resolves against, and the wire check that runs before
 * protobuf-c unpacks anything.
 *
 * protobuf-c's unpacker trusts its input's shape more than a server may: it
 * recurses once per nested message with no limit and copies strings without
 * checking them. once__pbj_decode therefore walks the bytes first, with the
 * descriptor: every tag, length and wire type, every string valid UTF-8
 * without a NUL (ProtoJSON could not print it otherwise), nesting at most
 * ONCE_PBJSON_MAX_NESTING. Only bytes that pass reach protobuf-c.
 */
#include "grpc/pbjson_int.h"

#include "core/alloc_int.h"
#include "core/quote.h"
#include "once/once.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "a2a.pb-c.h"
#include "google/protobuf/any.pb-c.h"
#include "google/protobuf/duration.pb-c.h"
#include "google/protobuf/empty.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/error_info.pb-c.h"
#include "google/rpc/status.pb-c.h"

/* --- allocation ------------------------------------------------------------ */

static void *pb_alloc(void *data, size_t n)
{
    void *p = once_malloc(n != 0 ? n : 1);
    if (p == NULL && data != NULL)
        ((once__pbj_ctx *)data)->oom = 1;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    once_free(p);
}

static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

ProtobufCAllocator *once__pbjson_allocator(void)
{
    return &pb_allocator;
}

void once__pbj_allocator(once__pbj_ctx *c, ProtobufCAllocator *a)
{
    a->alloc = pb_alloc;
    a->free = pb_free;
    a->allocator_data = c;
}

/* --- errors and the JSON path ------------------------------------------------ */

size_t once__pbj_push(once__pbj_ctx *c, const char *fmt, ...)
{
    size_t at = c->plen;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->path + at, sizeof c->path - at, fmt, ap);
    va_end(ap);
    if (n > 0)
        c->plen = at + (size_t)n < sizeof c->path ? at + (size_t)n : sizeof c->path - 1;
    return at;
}

void once__pbj_pop(once__pbj_ctx *c, size_t at)
{
    c->plen = at;
    c->path[at] = '\0';
}

int once__pbj_fail(once__pbj_ctx *c, int code, const char *fmt, ...)
{
    int n = 0;
    if (c->plen > 0)
        n = snprintf(c->err, c->errlen, "%s: ", c->path);
    if (n < 0 || (size_t)n >= c->errlen)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

/* --- what descriptors leave implicit --------------------------------------------- */

once__pbj_wkt once__pbj_wkt_of(const ProtobufCMessageDescriptor *d)
{
    if (d == &google__protobuf__struct__descriptor)
        return ONCE_PBJ_STRUCT;
    if (d == &google__protobuf__value__descriptor)
        return ONCE_PBJ_VALUE;
    if (d == &google__protobuf__list_value__descriptor)
        return ONCE_PBJ_LIST;
    if (d == &google__protobuf__timestamp__descriptor)
        return ONCE_PBJ_TIMESTAMP;
    if (d == &google__protobuf__duration__descriptor)
        return ONCE_PBJ_DURATION;
    if (d == &google__protobuf__any__descriptor)
        return ONCE_PBJ_ANY;
    return ONCE_PBJ_PLAIN;
}

/* protoc's rule: an underscore is dropped and the letter after it raised;
 * upper also raises the first letter (map entries' type names). */
static void camel(const char *name, int upper, char *out, size_t cap)
{
    size_t o = 0;
    for (; *name != '\0' && o + 1 < cap; name++) {
        if (*name == '_') {
            upper = 1;
            continue;
        }
        out[o++] = upper && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
        upper = 0;
    }
    out[o] = '\0';
}

void once__pbj_json_name(const char *name, char *out, size_t cap)
{
    camel(name, 0, out, cap);
}

int once__pbj_is_map(const ProtobufCFieldDescriptor *f)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return 0;
    const ProtobufCMessageDescriptor *e = f->descriptor;
    if (e->n_fields != 2 || e->fields[0].id != 1 || e->fields[1].id != 2 ||
        strcmp(e->fields[0].name, "key") != 0 || strcmp(e->fields[1].name, "value") != 0)
        return 0;
    char want[128];
    camel(f->name, 1, want, sizeof want);
    size_t n = strlen(want);
    return strncmp(e->short_name, want, n) == 0 && strcmp(e->short_name + n, "Entry") == 0;
}

size_t once__pbj_elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM:
        return sizeof(int);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: /* 32-bit integers and float */
        return 4;
    }
}

/* --- the types Any can name ---------------------------------------------------- */

/* Every message type reachable from the roots: A2AService's requests and
 * responses, google.rpc's status and error details, the well-known types.
 * A depth-first walk per lookup (a few dozen types; lookups are rare). */
#define PBJ_MAX_TYPES 256

static int seen(const ProtobufCMessageDescriptor **v, size_t n, const ProtobufCMessageDescriptor *d)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] == d)
            return 1;
    }
    return 0;
}

static const ProtobufCMessageDescriptor *walk(const ProtobufCMessageDescriptor *d, const char *name,
                                              const ProtobufCMessageDescriptor **v, size_t *n)
{
    if (seen(v, *n, d) || *n == PBJ_MAX_TYPES)
        return NULL;
    v[(*n)++] = d;
    if (strcmp(d->name, name) == 0)
        return d;
    for (unsigned i = 0; i < d->n_fields; i++) {
        if (d->fields[i].type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const ProtobufCMessageDescriptor *r = walk(d->fields[i].descriptor, name, v, n);
        if (r != NULL)
            return r;
    }
    return NULL;
}

const ProtobufCMessageDescriptor *once__pbjson_type(const char *type_url)
{
    static const ProtobufCMessageDescriptor *const roots[] = {
        &google__rpc__status__descriptor,
        &google__rpc__error_info__descriptor,
        &google__rpc__retry_info__descriptor,
        &google__rpc__debug_info__descriptor,
        &google__rpc__quota_failure__descriptor,
        &google__rpc__precondition_failure__descriptor,
        &google__rpc__bad_request__descriptor,
        &google__rpc__request_info__descriptor,
        &google__rpc__resource_info__descriptor,
        &google__rpc__help__descriptor,
        &google__rpc__localized_message__descriptor,
        &google__protobuf__timestamp__descriptor,
        &google__protobuf__duration__descriptor,
        &google__protobuf__struct__descriptor,
        &google__protobuf__empty__descriptor,
        &google__protobuf__any__descriptor,
    };
    if (type_url == NULL)
        return NULL;
    const char *slash = strrchr(type_url, '/');
    const char *name = slash != NULL ? slash + 1 : type_url;
    const ProtobufCMessageDescriptor *v[PBJ_MAX_TYPES], *r;
    size_t n = 0;
    const ProtobufCServiceDescriptor *s = &lf__a2a__v1__a2_aservice__descriptor;
    for (unsigned i = 0; i < s->n_methods; i++) {
        if ((r = walk(s->methods[i].input, name, v, &n)) != NULL ||
            (r = walk(s->methods[i].output, name, v, &n)) != NULL)
            return r;
    }
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if ((r = walk(roots[i], name, v, &n)) != NULL)
            return r;
    }
    return NULL;
}

/* --- the wire check ---------------------------------------------------------------- */

static const uint8_t *varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; p < end && shift < 70; shift += 7) {
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return NULL;
        x |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *v = x;
            return p;
        }
    }
    return NULL;
}

static int wire_type(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return 2;
    default:
        return 0;
    }
}

static int text_ok(const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t k = *p == 0 ? 0 : once__utf8_seq(p, n);
        if (k == 0)
            return 0;
        p += k;
        n -= k;
    }
    return 1;
}

/* A packed run of scalars of wire type wt fills p[0..n) exactly. */
static int packed_ok(int wt, const uint8_t *p, size_t n)
{
    if (wt != 0)
        return n % (wt == 5 ? 4 : 8) == 0;
    const uint8_t *end = p + n;
    uint64_t v;
    while (p < end) {
        if ((p = varint(p, end, &v)) == NULL)
            return 0;
    }
    return 1;
}

static int scan(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n,
                int depth)
{
    if (depth > ONCE_PBJSON_MAX_NESTING)
        return once__pbj_fail(c, ONCE_EPARSE, "messages nested deeper than %d",
                              ONCE_PBJSON_MAX_NESTING);
    const uint8_t *end = p + n;
    while (p < end) {
        uint64_t key, v;
        if ((p = varint(p, end, &key)) == NULL)
            return once__pbj_fail(c, ONCE_EPARSE, "%s: truncated field key", d->name);
        uint64_t num = key >> 3;
        int wt = (int)(key & 7);
        if (num == 0 || num > 536870911)
            return once__pbj_fail(c, ONCE_EPARSE, "%s: field number %llu", d->name,
                                  (unsigned long long)num);
        const uint8_t *val = p;
        size_t vlen = 0;
        switch (wt) {
        case 0:
            p = varint(p, end, &v);
            break;
        case 1:
        case 5:
            vlen = wt == 1 ? 8 : 4;
            p = (size_t)(end - p) >= vlen ? p + vlen : NULL;
            break;
        case 2:
            if ((p = varint(p, end, &v)) != NULL && v <= (uint64_t)(end - p)) {
                val = p;
                vlen = (size_t)v;
                p += vlen;
            } else {
                p = NULL;
            }
            break;
        default:
            return once__pbj_fail(c, ONCE_EPARSE, "%s: field %llu: wire type %d not supported",
                                  d->name, (unsigned long long)num, wt);
        }
        if (p == NULL)
            return once__pbj_fail(c, ONCE_EPARSE, "%s: field %llu: truncated", d->name,
                                  (unsigned long long)num);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)num);
        if (f == NULL)
            continue; /* unknown: skipped, as every reader does */
        int want = wire_type(f->type);
        if (wt != want) {
            if (!(wt == 2 && want != 2 && f->label == PROTOBUF_C_LABEL_REPEATED))
                return once__pbj_fail(c, ONCE_EPARSE, "%s.%s: wrong wire type %d", d->name,
                                      f->name, wt);
            if (!packed_ok(want, val, vlen))
                return once__pbj_fail(c, ONCE_EPARSE, "%s.%s: bad packed values", d->name,
                                      f->name);
            continue;
        }
        if (f->type == PROTOBUF_C_TYPE_STRING && !text_ok(val, vlen))
            return once__pbj_fail(c, ONCE_EPARSE, "%s.%s: not UTF-8 text without NUL", d->name,
                                  f->name);
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            int rc = scan(c, f->descriptor, val, vlen, depth + 1);
            if (rc != ONCE_OK)
                return rc;
        }
    }
    return ONCE_OK;
}

int once__pbj_decode(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
                     size_t len, ProtobufCMessage **m)
{
    if (len > ONCE_PBJSON_MAX_LEN)
        return once__pbj_fail(c, ONCE_EPARSE, "%s: %zu bytes, more than %u", d->name, len,
                              ONCE_PBJSON_MAX_LEN);
    if (buf == NULL) /* an empty bytes field: no data, no length */
        buf = (const uint8_t *)"";
    int rc = scan(c, d, buf, len, c->depth);
    if (rc != ONCE_OK)
        return rc;
    ProtobufCAllocator a;
    once__pbj_allocator(c, &a);
    c->oom = 0;
    *m = protobuf_c_message_unpack(d, &a, len, buf);
    if (*m != NULL)
        return ONCE_OK;
    if (c->oom)
        return once__pbj_fail(c, ONCE_ENOMEM, "out of memory");
    return once__pbj_fail(c, ONCE_EPARSE, "%s: not a valid message", d->name);
}

int once__pbj_pack(once__pbj_ctx *c, const ProtobufCMessage *m, uint8_t **out, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = once_malloc(n != 0 ? n : 1);
    if (b == NULL)
        return once__pbj_fail(c, ONCE_ENOMEM, "out of memory");
    *len = protobuf_c_message_pack(m, b);
    *out = b;
    return ONCE_OK;
}

/* --- Timestamp and Duration ---------------------------------------------------------- */

/* 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z; +-10,000 years. */
#define TS_MIN (-62135596800LL)
#define TS_MAX 253402300799LL
#define DUR_MAX 315576000000LL

int once__pbj_time_text(once__pbj_ctx *c, int64_t secs, int32_t nanos, int duration, char *out,
                        size_t cap)
{
    if (nanos < (duration ? -999999999 : 0) || nanos > 999999999)
        return once__pbj_fail(c, ONCE_EPARSE, "nanos %d out of range", nanos);
    char frac[16] = "";
    int32_t an = nanos < 0 ? -nanos : nanos;
    if (an != 0) {
        if (an % 1000000 == 0)
            snprintf(frac, sizeof frac, ".%03d", an / 1000000);
        else if (an % 1000 == 0)
            snprintf(frac, sizeof frac, ".%06d", an / 1000);
        else
            snprintf(frac, sizeof frac, ".%09d", an);
    }
    if (duration) {
        if (secs < -DUR_MAX || secs > DUR_MAX || (secs > 0 && nanos < 0) ||
            (secs < 0 && nanos > 0))
            return once__pbj_fail(c, ONCE_EPARSE, "duration out of range");
        uint64_t as = secs < 0 ? (uint64_t)-secs : (uint64_t)secs;
        snprintf(out, cap, "%s%llu%ss", secs < 0 || nanos < 0 ? "-" : "",
                 (unsigned long long)as, frac);
        return ONCE_OK;
    }
    if (secs < TS_MIN || secs > TS_MAX)
        return once__pbj_fail(c, ONCE_EPARSE, "timestamp out of range");
    char day[25];
    once_format_time(secs * 1000, day); /* YYYY-MM-DDTHH:MM:SS.mmmZ */
    snprintf(out, cap, "%.19s%sZ", day, frac);
    return ONCE_OK;
}
