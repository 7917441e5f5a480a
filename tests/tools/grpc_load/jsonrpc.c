/*
 * jsonrpc.c -- grpc_load's JSON-RPC binding: SendMessage as bench/send.lua
 * sends it (POST / over HTTP/1.1 keep-alive, its headers and body), and an
 * incremental parser for the answer (status line, Content-Length, body)
 * that keeps the checks the blocking client made: HTTP 200, no "error",
 * TASK_STATE_COMPLETED and "id":"<taskId>" (fresh: a "task") in the body,
 * no idempotent-replayed: true header.
 *
 * The request's head up to Content-Length is the same for every call and
 * is built once (init); per call only the body and its length are written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "load.h"

#define EXT_IDEM "urn:once:a2a:idempotency:v1"
#define BUF_MIN 16384
#define HEAD_MAX (1 << 20)   /* an answer's headers beyond this: not onced's */

static char head[512];        /* "POST / ... Content-Length: " */
static size_t head_len;

/* Where the answer in the buffer stands. Owned by the connection's loop. */
typedef struct jstate {
    char *buf;
    size_t cap, have;      /* bytes read and not consumed; buf[have] == '\0' */
    size_t scanned;        /* no blank line before here */
    size_t hlen;           /* 0: headers incomplete; else their length */
    size_t blen;           /* Content-Length */
    int status, replayed;
    char want[128];        /* "id":"<taskId>" */
} jstate;

static int j_init(void)
{
    int n = snprintf(head, sizeof head,
                     "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                     "A2A-Version: 1.0\r\n%sContent-Length: ",
                     load_host, load_port, load_fresh ? "" : "A2A-Extensions: " EXT_IDEM "\r\n");
    if (n < 0 || (size_t)n >= sizeof head) {
        fprintf(stderr, "grpc_load: host name too long\n");
        return -1;
    }
    head_len = (size_t)n;
    return 0;
}

static int j_open(lconn *c)
{
    jstate *s = calloc(1, sizeof *s);
    if (s == NULL || (s->buf = malloc(BUF_MIN + 1)) == NULL) {
        free(s);
        load_note("transport: out of memory");
        return -1;
    }
    s->cap = BUF_MIN;
    s->buf[0] = '\0';
    c->bs = s;
    return 0;
}

static void j_close(lconn *c)
{
    jstate *s = c->bs;
    if (s)
        free(s->buf);
    free(s);
    c->bs = NULL;
}

static int j_start(lconn *c)
{
    jstate *s = c->bs;
    char body[512], len[32];
    int bl = snprintf(body, sizeof body,
                      "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"SendMessage\",\"params\":"
                      "{\"message\":{\"messageId\":\"%s\",%s%s%s\"role\":\"ROLE_USER\","
                      "\"parts\":[{\"text\":\"hello\"}]}}}",
                      c->n, c->id, load_fresh ? "" : "\"taskId\":\"", load_fresh ? "" : c->id,
                      load_fresh ? "" : "\",");
    int ll = snprintf(len, sizeof len, "%d\r\n\r\n", bl);
    snprintf(s->want, sizeof s->want, "\"id\":\"%s\"", c->id);
    s->hlen = s->scanned = s->blen = 0;
    if (load_out(c, head, head_len) != 0 || load_out(c, len, (size_t)ll) != 0 ||
        load_out(c, body, (size_t)bl) != 0) {
        load_note("transport: out of memory");
        return -1;
    }
    return 0;
}

/* The headers are whole in [0, hlen): status, length, the flags. */
static int j_headers(lconn *c, jstate *s)
{
    char *h = s->buf, save = h[s->hlen - 2];
    h[s->hlen - 2] = '\0';   /* the header block, as one string */
    int ok = sscanf(h, "HTTP/1.%*d %d", &s->status) == 1;
    char *cl = strcasestr(h, "\r\ncontent-length:");
    c->closing = strcasestr(h, "\r\nconnection: close") != NULL;
    s->replayed = strcasestr(h, "\r\nidempotent-replayed: true") != NULL;
    if (cl)
        s->blen = strtoul(cl + 17, NULL, 10);
    h[s->hlen - 2] = save;
    if (!ok) {
        load_note("transport: not an HTTP/1.1 answer");
        return CALL_TRANSPORT;
    }
    if (cl == NULL) {
        load_note("transport: answer without Content-Length");
        return CALL_TRANSPORT;
    }
    return CALL_PENDING;
}

/* The body is whole in [hlen, hlen + blen): the verdict. */
static int j_verdict(lconn *c, jstate *s)
{
    char *b = s->buf + s->hlen, save = b[s->blen];
    b[s->blen] = '\0';
    int out = CALL_OK;
    if (s->status != 200 || strstr(b, "\"error\"")) {
        load_note("HTTP %d: %.300s", s->status, b);
        out = CALL_STATUS;
    } else if (!strstr(b, "TASK_STATE_COMPLETED") || (!load_fresh && !strstr(b, s->want)) ||
               (load_fresh && !strstr(b, "\"task\""))) {
        load_note("answer: %.300s", b);
        out = CALL_ANSWER;
    } else if (s->replayed) {
        load_note("answer: %s was a replay, not a new task", c->id);
        out = CALL_ANSWER;
    }
    b[s->blen] = save;
    size_t used = s->hlen + s->blen;
    memmove(s->buf, s->buf + used, s->have - used);
    s->have -= used;
    s->buf[s->have] = '\0';
    s->hlen = s->scanned = 0;
    return out;
}

static int j_input(lconn *c, const uint8_t *p, size_t n)
{
    jstate *s = c->bs;
    if (s->have + n > s->cap) {
        size_t nc = s->cap;
        while (nc < s->have + n)
            nc *= 2;
        char *nb = nc <= HEAD_MAX + s->blen ? realloc(s->buf, nc + 1) : NULL;
        if (nb == NULL) {
            load_note("transport: an answer over %zu bytes", nc / 2);
            return CALL_TRANSPORT;
        }
        s->buf = nb;
        s->cap = nc;
    }
    memcpy(s->buf + s->have, p, n);
    s->have += n;
    s->buf[s->have] = '\0';
    if (s->hlen == 0) {
        char *eoh = strstr(s->buf + s->scanned, "\r\n\r\n");
        if (eoh == NULL) {
            s->scanned = s->have > 3 ? s->have - 3 : 0;
            return CALL_PENDING;
        }
        s->hlen = (size_t)(eoh - s->buf) + 4;
        int r = j_headers(c, s);
        if (r != CALL_PENDING)
            return r;
    }
    return s->have < s->hlen + s->blen ? CALL_PENDING : j_verdict(c, s);
}

const load_binding load_jsonrpc = {
    .name = "jsonrpc",
    .init = j_init,
    .open = j_open,
    .close = j_close,
    .start = j_start,
    .input = j_input,
};
