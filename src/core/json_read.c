/*
 * json_read.c -- the reader for plain JSON, the kind nearly every request
 * is: it builds, in one pass and without a token buffer, the tree that
 * jansson's json_loadb(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY) builds,
 * and declines any text it does not read exactly as jansson would.
 *
 * Plain means: objects, arrays, strings without a backslash or a control
 * character, integers of at most 18 digits (no fraction, no exponent, no
 * leading zero), true, false and null, between JSON white space, and no
 * duplicate member name. Anything else, including every malformed text,
 * is ONCE_EUNSUPPORTED: the caller parses it with jansson, which builds
 * the tree or says what is wrong, so error texts stay jansson's.
 *
 * jansson's lexer costs about as much as the rest of a request's decoding
 * put together: it reads a character at a time through a stream, copies
 * every token into a growing buffer and allocates every string twice.
 * The tree is built with jansson's own constructors, in the order its
 * parser calls them, so members keep the same order and a value reads
 * the same.
 *
 * A byte past ASCII may stand only in a string, in a well-formed UTF-8
 * sequence (checked as the string is scanned; the tree's strings are made
 * without jansson's second check); a NUL byte is a control character,
 * never plain.
 */
#include "core/jcs.h"
#include "core/json_depth.h"
#include "core/quote.h"

#include <stdint.h>
#include <string.h>

/* A read in progress: p walks the text up to end. */
typedef struct reader {
    const char *p;
    const char *end;
    int rc; /* ONCE_OK, or why the read stopped */
} reader;

/* Stop the read: the text is not plain (rc ONCE_EUNSUPPORTED) or memory ran
 * out (ONCE_ENOMEM). Always NULL, for the caller to return. */
static json_t *stop(reader *r, int rc)
{
    if (r->rc == ONCE_OK)
        r->rc = rc;
    return NULL;
}

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* The string whose opening quote r->p is at: *s and *len its bytes, r->p
 * past the closing quote. 0 if it is not plain, or not well-formed UTF-8
 * (jansson refuses that). */
static int plain_string(reader *r, const char **s, size_t *len)
{
    const char *q = r->p + 1;
    while (q < r->end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c >= 0x80) {
            size_t l = once__utf8_seq((const unsigned char *)q, (size_t)(r->end - q));
            if (l == 0)
                return 0;
            q += l;
            continue;
        }
        if (c == '\\' || c < 0x20)
            return 0;
        q++;
    }
    if (q == r->end)
        return 0;
    *s = r->p + 1;
    *len = (size_t)(q - *s);
    r->p = q + 1;
    return 1;
}

static json_t *read_value(reader *r, int depth);

static json_t *read_string(reader *r)
{
    const char *s;
    size_t len;
    if (!plain_string(r, &s, &len))
        return stop(r, ONCE_EUNSUPPORTED);
    json_t *v = json_stringn_nocheck(s, len);
    return v != NULL ? v : stop(r, ONCE_ENOMEM);
}

/* At most 18 digits always fit in an int64_t. */
#define PLAIN_DIGITS_MAX 18

static json_t *read_integer(reader *r)
{
    int negative = *r->p == '-';
    const char *d = r->p + negative, *q = d;
    int64_t v = 0;
    while (q < r->end && *q >= '0' && *q <= '9' && q - d < PLAIN_DIGITS_MAX)
        v = v * 10 + (*q++ - '0');
    size_t ndigits = (size_t)(q - d);
    if (ndigits == 0 || (*d == '0' && ndigits > 1) ||
        (q < r->end && (*q == '.' || *q == 'e' || *q == 'E' || (*q >= '0' && *q <= '9'))))
        return stop(r, ONCE_EUNSUPPORTED);
    r->p = q;
    json_t *j = json_integer(negative ? -v : v);
    return j != NULL ? j : stop(r, ONCE_ENOMEM);
}

/* true, false or null: the literal word, and jansson's singleton. */
static json_t *read_word(reader *r)
{
    static const struct {
        const char *word;
        size_t len;
    } words[] = {{"true", 4}, {"false", 5}, {"null", 4}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        if ((size_t)(r->end - r->p) >= words[i].len &&
            memcmp(r->p, words[i].word, words[i].len) == 0) {
            r->p += words[i].len;
            return i == 0 ? json_true() : i == 1 ? json_false() : json_null();
        }
    }
    return stop(r, ONCE_EUNSUPPORTED);
}

/* After a member or an element: 1 past a ',' (another follows), 0 past the
 * closing bracket, -1 for anything else. */
static int next_item(reader *r, char close)
{
    skip_space(r);
    if (r->p < r->end && *r->p == ',') {
        r->p++;
        return 1;
    }
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
    }
    return -1;
}

/* One member of obj ("name": value, from r->p): 0, or -1 (the read
 * stopped). */
static int read_member(reader *r, int depth, json_t *obj)
{
    const char *key;
    size_t klen;
    skip_space(r);
    if (r->p == r->end || *r->p != '"' || !plain_string(r, &key, &klen))
        return -1;
    skip_space(r);
    if (r->p == r->end || *r->p != ':')
        return -1;
    r->p++;
    json_t *v = read_value(r, depth);
    if (v == NULL)
        return -1;
    size_t had = json_object_size(obj);
    if (json_object_setn_new_nocheck(obj, key, klen, v) != 0) {
        stop(r, ONCE_ENOMEM);
        return -1;
    }
    /* A name seen before replaced its value instead of adding one: a
     * duplicate, jansson's to refuse (JSON_REJECT_DUPLICATES). One hash
     * lookup a member, not two. */
    return json_object_size(obj) > had ? 0 : -1;
}

/* One element of arr: 0, or -1 (the read stopped). */
static int read_element(reader *r, int depth, json_t *arr)
{
    json_t *v = read_value(r, depth);
    if (v == NULL)
        return -1;
    if (json_array_append_new(arr, v) != 0) {
        stop(r, ONCE_ENOMEM);
        return -1;
    }
    return 0;
}

/* The object or array c (a new one, NULL if it could not be made) whose
 * opening bracket r->p is at, read up to its closing one: c, or NULL (c
 * released). */
static json_t *read_items(reader *r, int depth, json_t *c, char close)
{
    if (c == NULL)
        return stop(r, ONCE_ENOMEM);
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return c;
    }
    for (;;) {
        int rc = close == '}' ? read_member(r, depth, c) : read_element(r, depth, c);
        int more = rc == 0 ? next_item(r, close) : -1;
        if (more == 0)
            return c;
        if (more < 0)
            break;
    }
    json_decref(c);
    return stop(r, ONCE_EUNSUPPORTED);
}

/* depth: the arrays and objects around the value. */
static json_t *read_value(reader *r, int depth)
{
    skip_space(r);
    if (r->p == r->end)
        return stop(r, ONCE_EUNSUPPORTED);
    switch (*r->p) {
    case '{':
    case '[':
        /* Deeper text is the caller's to refuse; never recurse past it. */
        if (depth >= ONCE_JSON_MAX_DEPTH)
            return stop(r, ONCE_EUNSUPPORTED);
        return *r->p == '{' ? read_items(r, depth + 1, json_object(), '}')
                            : read_items(r, depth + 1, json_array(), ']');
    case '"':
        return read_string(r);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        return read_integer(r);
    default:
        return read_word(r);
    }
}

int once__json_read_plain(const char *buf, size_t n, json_t **out)
{
    *out = NULL;
    if (buf == NULL)
        return ONCE_EUNSUPPORTED;
    reader r = {buf, buf + n, ONCE_OK};
    json_t *v = read_value(&r, 0);
    skip_space(&r);
    if (v != NULL && r.p != r.end) {
        json_decref(v);
        v = stop(&r, ONCE_EUNSUPPORTED);
    }
    if (v == NULL)
        return r.rc != ONCE_OK ? r.rc : ONCE_ENOMEM;
    *out = v;
    return ONCE_OK;
}
