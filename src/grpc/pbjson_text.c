/*
 * pbjson_text.c -- ProtoJSON text straight to protobuf bytes
 * (once__pbjson_text_to_pb), for the answers onced sends over gRPC.
 *
 * The codec answers every binding with JSON text (a stored task is spliced
 * into it, never parsed). Turning that text into a jansson tree and the tree
 * into protobuf-c structs to pack cost a gRPC call more than the engine's
 * whole work on it (bench/README.md, "The gRPC binding"). This reads the
 * text once, left to right, guided by the descriptors, and writes the
 * wire format as it goes: no tree, no structs, one output buffer.
 *
 * It is a fast path, not a second authority. It accepts only what the tree
 * path (pbjson_to.c) accepts and encodes to the same message; anything
 * else -- a member the message has no field for, a field given twice, an
 * integer written as a real, "NaN", an Any, a Duration, a string escape it
 * would have to think about, text that is not JSON -- makes it give up
 * with ONCE_EUNSUPPORTED, and the caller takes the tree path, whose answer
 * (or whose error message) is then the one given. The fuzz target
 * fuzz/pbjson checks that whenever this path succeeds, the tree path
 * succeeds too and decodes to the same JSON.
 *
 * Fields go out in the order their members come in (the wire format does
 * not order fields; parsers take any order). Implicit-presence (proto3)
 * fields are left out at their zero value as protobuf-c leaves them out;
 * members of a oneof (and proto3 `optional` fields, which the build turns
 * into oneofs) always go out. A length-delimited value's length is written
 * after its body: one byte is reserved, and the body moved up the few
 * bytes more a longer length needs.
 */
#include "grpc/pbjson_int.h"

#include "core/base64.h"
#include "core/civil.h"
#include "core/json_depth.h"
#include "once/once.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/struct.pb-c.h"

#define GIVE_UP ONCE_EUNSUPPORTED

typedef struct {
    const char *p, *end;   /* the text not read yet */
    uint8_t *buf;          /* the bytes written */
    size_t len, cap;
    int depth;             /* JSON objects and arrays open (at most
                              ONCE_JSON_MAX_DEPTH, as the tree path checks) */
} tx;

/* --- the output ------------------------------------------------------------ */

static int room(tx *t, size_t n)
{
    if (t->cap - t->len >= n)
        return ONCE_OK;
    size_t cap = t->cap * 2 > t->len + n ? t->cap * 2 : t->len + n + 64;
    uint8_t *b = once_realloc(t->buf, cap);
    if (b == NULL)
        return ONCE_ENOMEM;
    t->buf = b;
    t->cap = cap;
    return ONCE_OK;
}

static size_t varint_at(uint8_t *o, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (uint8_t)v;
    return n;
}

static int varint(tx *t, uint64_t v)
{
    if (room(t, 10) != ONCE_OK)
        return ONCE_ENOMEM;
    t->len += varint_at(t->buf + t->len, v);
    return ONCE_OK;
}

static int fixed(tx *t, uint64_t v, int bytes)
{
    if (room(t, 8) != ONCE_OK)
        return ONCE_ENOMEM;
    for (int i = 0; i < bytes; i++)
        t->buf[t->len++] = (uint8_t)(v >> (8 * i));
    return ONCE_OK;
}

enum { WT_VARINT = 0, WT_64 = 1, WT_LEN = 2, WT_32 = 5 };

static int tag(tx *t, uint32_t id, int wt)
{
    return varint(t, (uint64_t)id << 3 | (uint64_t)wt);
}

/* A length-delimited value: open() reserves one byte for its length and
 * returns where the body starts; close() writes the length, moving the
 * body up if the length takes more than that byte. */
static int open_len(tx *t, size_t *at)
{
    if (room(t, 1) != ONCE_OK)
        return ONCE_ENOMEM;
    t->len++;
    *at = t->len;
    return ONCE_OK;
}

static int close_len(tx *t, size_t at)
{
    size_t n = t->len - at;
    uint8_t tmp[10];
    size_t k = varint_at(tmp, n);
    if (k > 1) {
        if (room(t, k - 1) != ONCE_OK)
            return ONCE_ENOMEM;
        memmove(t->buf + at + k - 1, t->buf + at, n);
        t->len += k - 1;
    }
    memcpy(t->buf + at - 1, tmp, k);
    return ONCE_OK;
}

/* --- the input ------------------------------------------------------------- */

static void ws(tx *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\n' || *t->p == '\t' || *t->p == '\r'))
        t->p++;
}

/* The next byte after white space, not taken (0 at the end). */
static char peek(tx *t)
{
    ws(t);
    return t->p < t->end ? *t->p : 0;
}

static int take(tx *t, char c)
{
    if (peek(t) != c)
        return GIVE_UP;
    t->p++;
    return ONCE_OK;
}

static int word(tx *t, const char *w, size_t n)
{
    if ((size_t)(t->end - t->p) < n || memcmp(t->p, w, n) != 0)
        return 0;
    t->p += n;
    return 1;
}

/* One UTF-8 sequence at p (its first byte >= 0x80), as jansson checks it:
 * no overlong form, no surrogate, nothing past U+10FFFF. Its length, or 0. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

/* A string at the cursor: *s, *n its text between the quotes as written,
 * *esc whether it holds an escape. Checked as jansson checks a string. */
static int string(tx *t, const char **s, size_t *n, int *esc)
{
    if (take(t, '"') != ONCE_OK)
        return GIVE_UP;
    const unsigned char *p = (const unsigned char *)t->p, *end = (const unsigned char *)t->end;
    *esc = 0;
    for (;;) {
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p >= end || *p < 0x20)
            return GIVE_UP;
        if (*p == '"')
            break;
        if (*p == '\\') {
            *esc = 1;
            if (p + 1 >= end)
                return GIVE_UP;
            p += p[1] == 'u' ? 6 : 2;   /* checked when unescaped */
            if (p > end)
                return GIVE_UP;
            continue;
        }
        size_t k = utf8_seq(p, end);
        if (k == 0)
            return GIVE_UP;
        p += k;
    }
    *s = t->p;
    *n = (size_t)((const char *)p - t->p);
    t->p = (const char *)p + 1;
    return ONCE_OK;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* s[0..n) (a string's text as written, escapes and all) appended
 * unescaped: never longer than written. A \u0000 gives up (a proto string
 * holds no NUL), as does a lone surrogate (jansson refuses it). */
static int unescape(tx *t, const char *s, size_t n)
{
    if (room(t, n) != ONCE_OK)
        return ONCE_ENOMEM;
    uint8_t *o = t->buf + t->len;
    const char *end = s + n;
    while (s < end) {
        if (*s != '\\') {
            *o++ = (uint8_t)*s++;
            continue;
        }
        char c = s[1];
        s += 2;
        switch (c) {
        case '"': case '\\': case '/':
            *o++ = (uint8_t)c;
            continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default:
            return GIVE_UP;
        }
        unsigned cp;
        if (!hex4(s, &cp) || cp == 0)
            return GIVE_UP;
        s += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return GIVE_UP;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (end - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(s + 2, &lo) || lo < 0xDC00 ||
                lo > 0xDFFF)
                return GIVE_UP;
            s += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp < 0x80) {
            *o++ = (uint8_t)cp;
        } else if (cp < 0x800) {
            *o++ = (uint8_t)(0xC0 | cp >> 6);
            *o++ = (uint8_t)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            *o++ = (uint8_t)(0xE0 | cp >> 12);
            *o++ = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (cp & 0x3F));
        } else {
            *o++ = (uint8_t)(0xF0 | cp >> 18);
            *o++ = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
            *o++ = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
            *o++ = (uint8_t)(0x80 | (cp & 0x3F));
        }
    }
    t->len = (size_t)(o - t->buf);
    return ONCE_OK;
}

/* A string value as a length-delimited field body. */
static int put_string(tx *t, const char *s, size_t n, int esc)
{
    if (!esc) {
        int rc = varint(t, n);
        if (rc == ONCE_OK && (rc = room(t, n)) == ONCE_OK) {
            memcpy(t->buf + t->len, s, n);
            t->len += n;
        }
        return rc;
    }
    size_t at;
    int rc = open_len(t, &at);
    if (rc == ONCE_OK)
        rc = unescape(t, s, n);
    return rc == ONCE_OK ? close_len(t, at) : rc;
}

/* A number at the cursor, checked against JSON's grammar: *s, *n its
 * text, *integral whether it has neither fraction nor exponent. */
static int number(tx *t, const char **s, size_t *n, int *integral)
{
    ws(t);
    const char *p = t->p, *end = t->end;
    *s = p;
    *integral = 1;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return GIVE_UP;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        *integral = 0;
        if (++p >= end || *p < '0' || *p > '9')
            return GIVE_UP;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integral = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return GIVE_UP;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    *n = (size_t)(p - *s);
    t->p = p;
    return ONCE_OK;
}

/* An integer written plainly, as a number or a string of digits (what
 * ProtoJSON writes; anything else goes the tree's way): *neg, *mag,
 * within what jansson reads (a 64-bit signed integer). */
static int integer(tx *t, int *neg, uint64_t *mag)
{
    const char *s;
    size_t n;
    int integral, quoted = peek(t) == '"';
    if (quoted) {
        int esc;
        if (string(t, &s, &n, &esc) != ONCE_OK || esc)
            return GIVE_UP;
        integral = 1;
    } else if (number(t, &s, &n, &integral) != ONCE_OK) {
        return GIVE_UP;
    }
    *neg = n > 0 && s[0] == '-';
    size_t i = (size_t)*neg;
    if (!integral || i >= n || (n - i > 1 && s[i] == '0'))
        return GIVE_UP;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return GIVE_UP;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    /* jansson reads a number into a long long; a string is read whole */
    if (!quoted && v > (*neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        return GIVE_UP;
    *mag = v;
    return ONCE_OK;
}

static int real(tx *t, double *out)
{
    const char *s;
    size_t n;
    int integral;
    char tmp[64];
    if (number(t, &s, &n, &integral) != ONCE_OK || n >= sizeof tmp)
        return GIVE_UP;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    *out = strtod(tmp, NULL);
    if (integral) {
        if (fabs(*out) >= 9223372036854775808.0)
            return GIVE_UP;   /* jansson refuses an integer past 64 bits */
        if (*out == 0)
            *out = 0;         /* "-0" is jansson's integer 0, not -0.0 */
    }
    return isfinite(*out) ? ONCE_OK : GIVE_UP;
}

/* --- values by field type -------------------------------------------------------- */

static int message(tx *t, const ProtobufCMessageDescriptor *d);

static int wire_type(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return WT_32;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return WT_64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return WT_LEN;
    default:
        return WT_VARINT;
    }
}

/* A scalar (not string, bytes or message) read into its wire value *v;
 * *zero if it is its type's zero (which an implicit-presence field leaves
 * out). */
static int scalar(tx *t, const ProtobufCFieldDescriptor *f, uint64_t *v, int *zero)
{
    int neg;
    uint64_t mag;
    double d;
    int64_t s;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: {
        int wide = f->type == PROTOBUF_C_TYPE_INT64 || f->type == PROTOBUF_C_TYPE_SINT64 ||
                   f->type == PROTOBUF_C_TYPE_SFIXED64;
        uint64_t lim = wide ? (uint64_t)INT64_MAX : (uint64_t)INT32_MAX;
        if (integer(t, &neg, &mag) != ONCE_OK || mag > lim + (uint64_t)neg)
            return GIVE_UP;
        s = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        *zero = s == 0;
        if (f->type == PROTOBUF_C_TYPE_SINT32 || f->type == PROTOBUF_C_TYPE_SINT64)
            *v = ((uint64_t)s << 1) ^ (uint64_t)(s >> 63);
        else if (f->type == PROTOBUF_C_TYPE_SFIXED32)
            *v = (uint32_t)s;
        else
            *v = (uint64_t)s;   /* int32: sign-extended, as protobuf writes it */
        if (f->type == PROTOBUF_C_TYPE_SINT32)
            *v &= 0xFFFFFFFFu;
        return ONCE_OK;
    }
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        int wide = f->type == PROTOBUF_C_TYPE_UINT64 || f->type == PROTOBUF_C_TYPE_FIXED64;
        if (integer(t, &neg, &mag) != ONCE_OK || (neg && mag != 0) ||
            (!wide && mag > UINT32_MAX))
            return GIVE_UP;
        *v = mag;
        *zero = mag == 0;
        return ONCE_OK;
    }
    case PROTOBUF_C_TYPE_BOOL:
        ws(t);
        if (word(t, "true", 4))
            *v = 1;
        else if (word(t, "false", 5))
            *v = 0;
        else
            return GIVE_UP;
        *zero = *v == 0;
        return ONCE_OK;
    case PROTOBUF_C_TYPE_FLOAT: {
        if (real(t, &d) != ONCE_OK || fabs(d) > FLT_MAX)
            return GIVE_UP;
        float x = (float)d;
        uint32_t b;
        memcpy(&b, &x, 4);
        *v = b;
        *zero = x == 0;
        return ONCE_OK;
    }
    case PROTOBUF_C_TYPE_DOUBLE:
        if (real(t, &d) != ONCE_OK)
            return GIVE_UP;
        memcpy(v, &d, 8);
        *zero = d == 0;
        return ONCE_OK;
    case PROTOBUF_C_TYPE_ENUM: {
        if (peek(t) != '"') {
            if (integer(t, &neg, &mag) != ONCE_OK || mag > (uint64_t)INT32_MAX + (uint64_t)neg)
                return GIVE_UP;
            s = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        } else {
            const char *name;
            size_t n;
            int esc;
            char tmp[128];
            if (string(t, &name, &n, &esc) != ONCE_OK || esc || n >= sizeof tmp)
                return GIVE_UP;
            memcpy(tmp, name, n);
            tmp[n] = '\0';
            const ProtobufCEnumValue *ev =
                protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, tmp);
            if (ev == NULL)
                return GIVE_UP;
            s = ev->value;
        }
        *v = (uint64_t)s;
        *zero = s == 0;
        return ONCE_OK;
    }
    default:
        return GIVE_UP;
    }
}

static int put_scalar(tx *t, ProtobufCType type, uint64_t v)
{
    switch (wire_type(type)) {
    case WT_32:
        return fixed(t, v, 4);
    case WT_64:
        return fixed(t, v, 8);
    default:
        return varint(t, v);
    }
}

/* A google.protobuf.Value's body from any JSON value. */
static int value(tx *t)
{
    size_t at;
    int rc;
    char c = peek(t);
    if (c == 'n' || c == 't' || c == 'f') {
        uint64_t b = c == 't';
        if (!(word(t, "null", 4) || word(t, "true", 4) || word(t, "false", 5)))
            return GIVE_UP;
        return (rc = tag(t, c == 'n' ? 1 : 4, WT_VARINT)) == ONCE_OK ? varint(t, b) : rc;
    }
    if (c == '"') {
        const char *s;
        size_t n;
        int esc;
        if ((rc = string(t, &s, &n, &esc)) == ONCE_OK && (rc = tag(t, 3, WT_LEN)) == ONCE_OK)
            rc = put_string(t, s, n, esc);
        return rc;
    }
    if (c == '{' || c == '[') {
        const ProtobufCMessageDescriptor *d = c == '{' ? &google__protobuf__struct__descriptor
                                                       : &google__protobuf__list_value__descriptor;
        if ((rc = tag(t, c == '{' ? 5 : 6, WT_LEN)) == ONCE_OK && (rc = open_len(t, &at)) == ONCE_OK &&
            (rc = message(t, d)) == ONCE_OK)
            rc = close_len(t, at);
        return rc;
    }
    double d;
    uint64_t b;
    if (real(t, &d) != ONCE_OK)
        return GIVE_UP;
    memcpy(&b, &d, 8);
    return (rc = tag(t, 2, WT_64)) == ONCE_OK ? fixed(t, b, 8) : rc;
}

static int is_value(const ProtobufCFieldDescriptor *f)
{
    return f->type == PROTOBUF_C_TYPE_MESSAGE && once__pbj_wkt_of(f->descriptor) == ONCE_PBJ_VALUE;
}

/* One value of field f (one element, for a repeated field), with its tag
 * unless packed; an implicit-presence field at its zero value is left
 * out. */
static int field_value(tx *t, const ProtobufCFieldDescriptor *f, int packed)
{
    int always = f->label != PROTOBUF_C_LABEL_NONE || (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF);
    int rc;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        size_t at;
        if ((rc = tag(t, f->id, WT_LEN)) == ONCE_OK && (rc = open_len(t, &at)) == ONCE_OK &&
            (rc = message(t, f->descriptor)) == ONCE_OK)
            rc = close_len(t, at);
        return rc;
    }
    if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES) {
        const char *s;
        size_t n;
        int esc;
        if (string(t, &s, &n, &esc) != ONCE_OK)
            return GIVE_UP;
        if (f->type == PROTOBUF_C_TYPE_STRING) {
            if (n == 0 && !always)
                return ONCE_OK;
            return (rc = tag(t, f->id, WT_LEN)) == ONCE_OK ? put_string(t, s, n, esc) : rc;
        }
        long k = esc ? -1 : once__base64_decode(s, n, NULL, 0);
        if (k < 0)
            return GIVE_UP;
        if (k == 0 && !always)
            return ONCE_OK;
        if ((rc = tag(t, f->id, WT_LEN)) != ONCE_OK || (rc = varint(t, (uint64_t)k)) != ONCE_OK ||
            (rc = room(t, (size_t)k)) != ONCE_OK)
            return rc;
        once__base64_decode(s, n, t->buf + t->len, (size_t)k);
        t->len += (size_t)k;
        return ONCE_OK;
    }
    uint64_t v;
    int zero;
    if (scalar(t, f, &v, &zero) != ONCE_OK)
        return GIVE_UP;
    if (zero && !always && !packed)
        return ONCE_OK;
    if (!packed && (rc = tag(t, f->id, wire_type(f->type))) != ONCE_OK)
        return rc;
    return put_scalar(t, f->type, v);
}

/* Into an object or an array: 0 when members or elements follow, 1 when
 * it is empty (and closed again), or GIVE_UP (not one; too deep). */
static int enter(tx *t, char open, char close)
{
    if (take(t, open) != ONCE_OK || ++t->depth > ONCE_JSON_MAX_DEPTH)
        return GIVE_UP;
    if (peek(t) != close)
        return 0;
    t->p++;
    t->depth--;
    return 1;
}

/* After a member or an element: 0 at a comma (more follow), 1 at the
 * closing bracket (the container is done: depth back down), or GIVE_UP. */
static int next(tx *t, char close)
{
    char c = peek(t);
    if (c == ',') {
        t->p++;
        return 0;
    }
    if (c != close)
        return GIVE_UP;
    t->p++;
    t->depth--;
    return 1;
}

/* null where field f takes a google.protobuf.Value: Value{null_value:
 * NULL_VALUE}, which a oneof member writes even at zero (08 00). Elsewhere
 * null in a map or a list is refused: the tree path says so. */
static int null_value(tx *t, const ProtobufCFieldDescriptor *f)
{
    static const uint8_t null_body[] = {2, 0x08, 0x00};
    int rc;
    if (!is_value(f) || !word(t, "null", 4))
        return GIVE_UP;
    if ((rc = tag(t, f->id, WT_LEN)) != ONCE_OK || (rc = room(t, sizeof null_body)) != ONCE_OK)
        return rc;
    memcpy(t->buf + t->len, null_body, sizeof null_body);
    t->len += sizeof null_body;
    return ONCE_OK;
}

/* A map: a JSON object whose members become NameEntry{key = 1, value = 2}
 * messages. Only string keys are read here. */
static int map(tx *t, const ProtobufCFieldDescriptor *f)
{
    const ProtobufCMessageDescriptor *e = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &e->fields[0], *vf = &e->fields[1];
    int rc = kf->type == PROTOBUF_C_TYPE_STRING ? enter(t, '{', '}') : GIVE_UP;
    if (rc != 0)
        return rc < 0 ? rc : ONCE_OK;
    for (;;) {
        const char *k;
        size_t kn, at;
        int esc;
        if (string(t, &k, &kn, &esc) != ONCE_OK || take(t, ':') != ONCE_OK)
            return GIVE_UP;
        if ((rc = tag(t, f->id, WT_LEN)) != ONCE_OK || (rc = open_len(t, &at)) != ONCE_OK)
            return rc;
        if (kn > 0 && ((rc = tag(t, kf->id, WT_LEN)) != ONCE_OK ||
                       (rc = put_string(t, k, kn, esc)) != ONCE_OK))
            return rc;
        rc = peek(t) == 'n' ? null_value(t, vf) : field_value(t, vf, 0);
        if (rc != ONCE_OK || (rc = close_len(t, at)) != ONCE_OK)
            return rc;
        if ((rc = next(t, '}')) != 0)
            return rc < 0 ? rc : ONCE_OK;
    }
}

/* A repeated field's JSON array; a scalar one packed when the descriptor
 * says so. null elements only where they read as a Value. */
static int repeated(tx *t, const ProtobufCFieldDescriptor *f)
{
    if (once__pbj_is_map(f))
        return map(t, f);
    int rc = enter(t, '[', ']');
    if (rc != 0)
        return rc < 0 ? rc : ONCE_OK;   /* [] is no field at all */
    int packed = (f->flags & PROTOBUF_C_FIELD_FLAG_PACKED) && wire_type(f->type) != WT_LEN;
    size_t at = 0;
    if (packed && ((rc = tag(t, f->id, WT_LEN)) != ONCE_OK || (rc = open_len(t, &at)) != ONCE_OK))
        return rc;
    for (;;) {
        rc = peek(t) == 'n' ? null_value(t, f) : field_value(t, f, packed);
        if (rc != ONCE_OK)
            return rc;
        if ((rc = next(t, ']')) != 0)
            return rc < 0 ? rc : packed ? close_len(t, at) : ONCE_OK;
    }
}

/* --- messages ------------------------------------------------------------------------ */

/* key[0..n) names field f by its JSON (lowerCamelCase) or its proto name. */
static int names(const ProtobufCFieldDescriptor *f, const char *key, size_t n)
{
    const char *p = f->name;
    size_t i = 0;
    int upper = 0, exact = 1;
    for (; *p != '\0'; p++) {
        if (*p == '_') {
            upper = 1;
            exact = 0;
            continue;
        }
        char c = upper && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        upper = 0;
        if (i >= n || key[i] != c)
            break;
        i++;
    }
    if (*p == '\0' && i == n)
        return 1;
    return !exact ? strlen(f->name) == n && memcmp(f->name, key, n) == 0 : 0;
}

static int timestamp(tx *t)
{
    const char *s;
    size_t n;
    int esc, rc;
    int64_t secs;
    int32_t nanos;
    if (string(t, &s, &n, &esc) != ONCE_OK || esc || !once__rfc3339_parse(s, n, &secs, &nanos) ||
        secs < -62135596800LL || secs > 253402300799LL)
        return GIVE_UP;
    if (secs != 0 && ((rc = tag(t, 1, WT_VARINT)) != ONCE_OK || (rc = varint(t, (uint64_t)secs)) != ONCE_OK))
        return rc;
    if (nanos != 0 && ((rc = tag(t, 2, WT_VARINT)) != ONCE_OK ||
                       (rc = varint(t, (uint64_t)(int64_t)nanos)) != ONCE_OK))
        return rc;
    return ONCE_OK;
}

/* An object's members onto d's fields (its body: no tag, no length). */
static int plain(tx *t, const ProtobufCMessageDescriptor *d)
{
    uint64_t got[8] = {0};
    unsigned oneofs[8];
    size_t n_oneofs = 0;
    int rc = d->n_fields <= 512 ? enter(t, '{', '}') : GIVE_UP;
    if (rc != 0)
        return rc < 0 ? rc : ONCE_OK;
    for (;;) {
        const char *k;
        size_t kn;
        int esc;
        if (string(t, &k, &kn, &esc) != ONCE_OK || esc || take(t, ':') != ONCE_OK)
            return GIVE_UP;
        const ProtobufCFieldDescriptor *f = NULL;
        for (unsigned i = 0; i < d->n_fields && f == NULL; i++)
            if (names(&d->fields[i], k, kn))
                f = &d->fields[i];
        if (f == NULL)
            return GIVE_UP;   /* refused, or left out: the tree path knows which */
        size_t idx = (size_t)(f - d->fields);
        if (got[idx / 64] & (1ull << (idx % 64)))
            return GIVE_UP;
        got[idx / 64] |= 1ull << (idx % 64);
        int null = peek(t) == 'n';
        if (null && !(is_value(f) && f->label != PROTOBUF_C_LABEL_REPEATED)) {
            if (!word(t, "null", 4))
                return GIVE_UP;   /* null: not set */
        } else {
            if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                for (size_t i = 0; i < n_oneofs; i++)
                    if (oneofs[i] == f->quantifier_offset)
                        return GIVE_UP;   /* a second member of one oneof */
                if (n_oneofs == sizeof oneofs / sizeof oneofs[0])
                    return GIVE_UP;
                oneofs[n_oneofs++] = f->quantifier_offset;
            }
            rc = f->label == PROTOBUF_C_LABEL_REPEATED ? repeated(t, f) : field_value(t, f, 0);
            if (rc != ONCE_OK)
                return rc;
        }
        if ((rc = next(t, '}')) != 0)
            return rc < 0 ? rc : ONCE_OK;
    }
}

/* The body of a message of type d from the JSON value at the cursor. */
static int message(tx *t, const ProtobufCMessageDescriptor *d)
{
    int rc;
    switch (once__pbj_wkt_of(d)) {
    case ONCE_PBJ_PLAIN:
        rc = plain(t, d);
        break;
    case ONCE_PBJ_STRUCT:
        rc = map(t, &d->fields[0]);
        break;
    case ONCE_PBJ_LIST:
        rc = repeated(t, &d->fields[0]);
        break;
    case ONCE_PBJ_VALUE:
        rc = value(t);
        break;
    case ONCE_PBJ_TIMESTAMP:
        rc = timestamp(t);
        break;
    default:   /* Duration, Any: the tree path */
        rc = GIVE_UP;
        break;
    }
    return rc;
}

int once__pbjson_text_to_pb(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                            uint8_t **out, size_t *outlen)
{
    tx t = {.p = text, .end = text + len};
    *out = NULL;
    *outlen = 0;
    if (len > ONCE_PBJSON_MAX_LEN || once__pbj_wkt_of(d) != ONCE_PBJ_PLAIN)
        return GIVE_UP;
    t.cap = len + 16;
    if ((t.buf = once_malloc(t.cap)) == NULL)
        return ONCE_ENOMEM;
    int rc = message(&t, d);
    ws(&t);
    if (rc == ONCE_OK && t.p != t.end)
        rc = GIVE_UP;   /* more after the object (a NUL too) */
    if (rc != ONCE_OK) {
        once_free(t.buf);
        return rc;
    }
    *out = t.buf;
    *outlen = t.len;
    return ONCE_OK;
}
