/*
 * json.c -- the bounded JSON reader and the compact writer the codec uses.
 *
 * The reader checks, before jansson parses anything, that the text is valid
 * UTF-8, holds no NUL byte and nests at most ONCE_JSON_MAX_DEPTH deep:
 * jansson's own depth limit is a compile-time 2048, far past what a request
 * needs, and a deep document costs stack in every recursive walk after it
 * (JCS, the digest, the engine). Duplicate keys are refused because the
 * digest of an ambiguous message would depend on which duplicate won.
 * Plain text (most requests) is read by once__json_read_plain, which
 * makes the same checks as it reads; the rest is checked, then read by
 * jansson: the same tree either way.
 */
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/jcs.h"

/* Length of the UTF-8 sequence starting at p (n bytes left), or 0 when it is
 * not a valid, shortest-form encoding of a scalar value (RFC 3629). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;   /* overlong */
        else if (c == 0xED)
            hi = 0x9F;   /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;   /* overlong */
        else if (c == 0xF4)
            hi = 0x8F;   /* past U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    }
    return len;
}

/* One pass over the text: UTF-8, NUL and nesting depth. */
static int prescan(const char *buf, size_t n, char *why, size_t whylen)
{
    const unsigned char *p = (const unsigned char *)buf;
    int in_string = 0, escaped = 0;
    size_t depth = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == 0) {
            snprintf(why, whylen, "NUL byte at offset %zu", i);
            return ONCE_EPARSE;
        }
        if (c >= 0x80) {
            size_t l = utf8_seq(p + i, n - i);
            if (l == 0) {
                snprintf(why, whylen, "invalid UTF-8 at offset %zu", i);
                return ONCE_EPARSE;
            }
            i += l;
            escaped = 0;
            continue;
        }
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > ONCE_JSON_MAX_DEPTH) {
                snprintf(why, whylen, "JSON nested deeper than %d levels", ONCE_JSON_MAX_DEPTH);
                return ONCE_ERANGE;
            }
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
        i++;
    }
    return ONCE_OK;
}

void once__a2a_utf8_clean(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in), o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq((const unsigned char *)in + i, n - i);
        size_t take = len ? len : 1;
        if (o + (len ? len : 1) >= cap)
            break;
        if (len == 0) {
            out[o++] = '?';
        } else {
            memcpy(out + o, in + i, len);
            o += len;
        }
        i += take;
    }
    out[o] = '\0';
}

int once__a2a_utf8_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = s[i] != '\0' ? utf8_seq((const unsigned char *)s + i, n - i) : 0;
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

int once__a2a_json_parse(const char *buf, size_t n, json_t **out, char *why, size_t whylen)
{
    char scratch[8];
    if (why == NULL) {
        why = scratch;
        whylen = sizeof scratch;
    }
    if (whylen > 0)
        why[0] = '\0';
    *out = NULL;
    if (buf == NULL) {
        snprintf(why, whylen, "empty body");
        return ONCE_EPARSE;
    }
    json_t *v;
    json_error_t jerr;
    /* Plain text passes every check of prescan() as it is read. */
    int rc = once__json_read_plain(buf, n, &v);
    if (rc == ONCE_EUNSUPPORTED) {
        /* Not plain: checked, then jansson reads it or says why not. */
        rc = prescan(buf, n, why, whylen);
        if (rc != ONCE_OK)
            return rc;
        rc = once__json_loadb(buf, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &v, &jerr);
    }
    if (rc == ONCE_EPARSE)
        snprintf(why, whylen, "%s at line %d column %d", jerr.text, jerr.line, jerr.column);
    else if (rc == ONCE_ENOMEM)
        snprintf(why, whylen, "out of memory");
    else
        *out = v;
    return rc;
}

int once__a2a_json_dump(const json_t *v, char **out, size_t *len)
{
    return once__json_write(v, out, len);
}
