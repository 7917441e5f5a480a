/*
 * framing.c -- once__guard_framing (guard.h): refuse a request head that a
 * proxy in front of us could frame differently from libmicrohttpd.
 *
 * libmicrohttpd 0.9.75 (Debian 12) takes the first of several
 * Content-Length headers, keeps a space before a colon as part of the
 * header name (so "Content-Length : 5" is not a length at all), and cuts a
 * value at a NUL. Its "strict" levels do not cover these, so the access
 * handler checks the parsed head before the body is read.
 *
 * A NUL cannot be seen in the value MHD hands over (the C string ends
 * there), but the head is parsed in place: each value is followed, in MHD's
 * read buffer, by its line ending (CR LF or LF, overwritten with NULs) and
 * then the next header's name, and the whole head ends at method +
 * MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE. So anything else between a
 * value's end and the next line start is what followed a NUL, or a folded
 * line (whose text MHD moves elsewhere): both are refused. The bytes read
 * are within the head MHD holds for this request. One NUL right before a
 * bare LF cannot be told from a CR once overwritten; it hides nothing (the
 * value ends there for every reader).
 */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http/guard.h"

typedef struct scan {
    const char *why;          /* the first problem found, NULL so far */
    const char *prev_end;     /* end of the previous header's value */
    unsigned content_length;  /* how many Content-Length headers */
    unsigned transfer_encoding;
    int te_chunked;           /* the Transfer-Encoding value is "chunked" */
} scan;

/* RFC 9110 5.6.2 tchar. */
static int is_tchar(unsigned char ch)
{
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
        return 1;
    return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* A line ending of `min`..`max` bytes, all overwritten with NUL, between a
 * value's end and the start of what follows it. */
static int only_line_end(const char *end, uintptr_t next, size_t min, size_t max)
{
    uintptr_t a = (uintptr_t)end;
    if (next < a + min || next > a + max)
        return 0;
    for (size_t i = 0; i < next - a; i++)
        if (end[i] != '\0')
            return 0;
    return 1;
}

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    scan *s = cls;
    if (s->prev_end != NULL && !only_line_end(s->prev_end, (uintptr_t)key, 1, 2)) {
        s->why = "a NUL in a header value, or a folded header line";
        return MHD_NO;
    }
    s->prev_end = value + value_size;
    if (key_size == 0) {
        s->why = "an empty header name";
        return MHD_NO;
    }
    for (size_t i = 0; i < key_size; i++)
        if (!is_tchar((unsigned char)key[i])) {
            s->why = key[i] == ' ' || key[i] == '\t' ? "whitespace before a header's colon"
                                                     : "a header name that is not a token";
            return MHD_NO;
        }
    for (size_t i = 0; i < value_size; i++) {
        unsigned char ch = (unsigned char)value[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            s->why = "a control character in a header value";
            return MHD_NO;
        }
    }
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
        s->content_length++;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        s->transfer_encoding++;
        s->te_chunked = strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

const char *once__guard_framing(struct MHD_Connection *c, const char *method)
{
    scan s;
    memset(&s, 0, sizeof s);
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, each_header, &s);
    if (s.why != NULL)
        return s.why;
    if (s.prev_end != NULL) {
        /* The last value: its line ending, then the empty line's. */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (ci == NULL || !only_line_end(s.prev_end, (uintptr_t)method + ci->header_size, 2, 4))
            return "a NUL in a header value, or a folded header line";
    }
    if (s.content_length > 1)
        return "more than one Content-Length";
    if (s.transfer_encoding > 0 && s.content_length > 0)
        return "both Transfer-Encoding and Content-Length";
    if (s.transfer_encoding > 1 || (s.transfer_encoding == 1 && !s.te_chunked))
        return "a Transfer-Encoding other than chunked";
    return NULL;
}
