/*
 * sse.c -- an incremental text/event-stream parser for the client (the
 * WHATWG "server-sent events" format), fed with whatever chunks the
 * transport hands over.
 *
 * Lines end in LF, CRLF or CR, possibly split across chunks. A blank line
 * dispatches the event gathered so far: its data lines joined with LF, and
 * its `id` when that was a decimal number (once's ids are generations; an
 * id of any other form is ignored). Comment lines (":" first) and the
 * fields `event` and `retry` are ignored. An event without data is not
 * dispatched. Invariant: a line and an event's data never grow beyond
 * p->max bytes, so a hostile stream costs bounded memory.
 */
#include <string.h>

#include "core/decimal.h"
#include "core/grow.h"
#include "client/client_int.h"

void once__sse_init(once__sse *p, size_t max, once__sse_event_fn fn, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->max = max;
    p->fn = fn;
    p->ctx = ctx;
}

void once__sse_clear(once__sse *p)
{
    if (p == NULL)
        return;
    once_free(p->line);
    once_free(p->data);
    p->line = p->data = NULL;
    p->len = p->cap = p->dlen = p->dcap = 0;
    p->has_id = 0;
}

/* Append n bytes to *buf (len, cap), keeping a NUL after them. */
static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n, size_t max)
{
    if (*len + n > max)
        return ONCE_ERANGE;
    return once__text_append(buf, len, cap, 256, s, n);
}

/* One complete line (without its terminator). */
static int line(once__sse *p, const char *s, size_t n)
{
    if (n == 0) {
        int rc = ONCE_OK;
        if (p->dlen > 0 || p->have_data)
            rc = p->fn(p->ctx, p->has_id, p->id, p->data ? p->data : "", p->dlen);
        p->dlen = 0;
        if (p->data != NULL)
            p->data[0] = '\0';
        p->have_data = 0;
        p->has_id = 0;
        return rc;
    }
    if (s[0] == ':')
        return ONCE_OK;
    const char *colon = memchr(s, ':', n);
    size_t flen = colon ? (size_t)(colon - s) : n;
    const char *v = colon ? colon + 1 : s + n;
    size_t vlen = (size_t)(s + n - v);
    if (vlen > 0 && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        int rc;
        if (p->have_data && (rc = append(&p->data, &p->dlen, &p->dcap, "\n", 1, p->max)) != ONCE_OK)
            return rc;
        p->have_data = 1;
        return append(&p->data, &p->dlen, &p->dcap, v, vlen, p->max);
    }
    if (flen == 2 && memcmp(s, "id", 2) == 0)
        p->has_id = once__decimal(v, vlen, &p->id);
    return ONCE_OK;
}

int once__sse_feed(once__sse *p, const char *buf, size_t len)
{
    size_t i = 0;
    if (p->cr && len > 0 && buf[0] == '\n')
        i = 1;   /* the LF of a CRLF split across chunks */
    p->cr = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && buf[j] != '\n' && buf[j] != '\r')
            j++;
        if (j == len) {   /* a partial line: keep it for the next chunk */
            return append(&p->line, &p->len, &p->cap, buf + i, j - i, p->max);
        }
        int rc;
        if (p->len > 0) {
            if ((rc = append(&p->line, &p->len, &p->cap, buf + i, j - i, p->max)) != ONCE_OK)
                return rc;
            rc = line(p, p->line, p->len);
            p->len = 0;
        } else {
            rc = line(p, buf + i, j - i);
        }
        if (rc != ONCE_OK)
            return rc;
        if (buf[j] == '\r') {
            if (j + 1 < len && buf[j + 1] == '\n')
                j++;
            else if (j + 1 == len)
                p->cr = 1;
        }
        i = j + 1;
    }
    return ONCE_OK;
}
