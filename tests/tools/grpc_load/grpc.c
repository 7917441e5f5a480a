/*
 * grpc.c -- grpc_load's gRPC binding: /lf.a2a.v1.A2AService/SendMessage
 * over h2c (prior knowledge) with libnghttp2 driven from memory (the loop
 * reads and writes the socket; mem_recv and mem_send only frame), one
 * stream per call on a persistent connection. The checks are the blocking
 * client's (src/grpc/h2_client.c and the old grpc_load): :status 200, a
 * grpc-status trailer of 0, exactly one message, unpacked with protobuf-c,
 * a Task in TASK_STATE_COMPLETED with the sent id (fresh: any), and no
 * idempotent-replayed: true in the initial metadata.
 *
 * The header list is the same for every call and is built once (init),
 * handed to nghttp2 without copies; the request message is packed per call
 * from structs whose constant parts are set once per connection.
 */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "a2a.pb-c.h"
#include "grpc/h2.h"
#include "load.h"

#define PATH_SEND "/lf.a2a.v1.A2AService/SendMessage"
#define EXT_IDEM "urn:once:a2a:idempotency:v1"
#define MAX_MESSAGE ((size_t)64 << 20)   /* as src/grpc/h2_client.c */

static char authority[300], tmo[16];
static nghttp2_nv nv[9];
static size_t nnv;

/* One connection's session and the call in flight on it. Owned by the
 * connection's loop thread; the callbacks run inside mem_recv/mem_send. */
typedef struct gstate {
    lconn *c;
    nghttp2_session *ng;
    int32_t sid;              /* the call's stream; 0 between calls */
    int verdict;              /* CALL_PENDING until the stream closes */
    int http_status, has_status, grpc_status, replayed;
    char message[160];        /* grpc-message */
    uint8_t *rx;              /* DATA received, gRPC-framed */
    size_t rx_len, rx_cap;
    uint8_t req[256];         /* the framed request, and how much is sent */
    size_t req_len, req_off;
    Lf__A2a__V1__Part part;   /* the request's structs: only the IDs vary */
    Lf__A2a__V1__Part *parts[1];
    Lf__A2a__V1__Message msg;
    Lf__A2a__V1__SendMessageRequest send;
} gstate;

static nghttp2_nv mk(const char *name, const char *value)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

static int g_init(void)
{
    if ((size_t)snprintf(authority, sizeof authority, "%s:%d", load_host, load_port) >=
        sizeof authority) {
        fprintf(stderr, "grpc_load: host name too long\n");
        return -1;
    }
    once__grpc_timeout_format(load_timeout_ms, tmo, sizeof tmo);
    nv[nnv++] = mk(":method", "POST");
    nv[nnv++] = mk(":scheme", "http");
    nv[nnv++] = mk(":path", PATH_SEND);
    nv[nnv++] = mk(":authority", authority);
    nv[nnv++] = mk("content-type", "application/grpc");
    nv[nnv++] = mk("te", "trailers");
    nv[nnv++] = mk("grpc-timeout", tmo);
    nv[nnv++] = mk("a2a-version", "1.0");
    if (!load_fresh)
        nv[nnv++] = mk("a2a-extensions", EXT_IDEM);
    return 0;
}

static int eq(const uint8_t *a, size_t n, const char *b)
{
    return n == strlen(b) && memcmp(a, b, n) == 0;
}

static int digits(const uint8_t *v, size_t n)
{
    int x = 0;
    for (size_t i = 0; i < n && v[i] >= '0' && v[i] <= '9'; i++)
        x = x * 10 + (v[i] - '0');
    return x;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *v, size_t vlen, uint8_t flags, void *user)
{
    gstate *s = user;
    (void)ng, (void)flags;
    if (f->hd.stream_id != s->sid)
        return 0;
    if (eq(name, nlen, ":status")) {
        s->http_status = digits(v, vlen);
    } else if (eq(name, nlen, "grpc-status")) {
        s->grpc_status = digits(v, vlen);
        s->has_status = 1;
    } else if (eq(name, nlen, "grpc-message")) {
        snprintf(s->message, sizeof s->message, "%.*s", (int)vlen, (const char *)v);
    } else if (f->headers.cat == NGHTTP2_HCAT_RESPONSE && eq(name, nlen, "idempotent-replayed")) {
        s->replayed = vlen == 4 && strncasecmp((const char *)v, "true", 4) == 0;
    }
    return 0;
}

static int on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *d, size_t len,
                   void *user)
{
    gstate *s = user;
    (void)ng, (void)flags;
    if (id != s->sid)
        return 0;
    if (s->rx_len + len > s->rx_cap) {
        size_t nc = s->rx_cap ? s->rx_cap : 1024;
        while (nc < s->rx_len + len)
            nc *= 2;
        uint8_t *nb = nc <= MAX_MESSAGE + 5 ? realloc(s->rx, nc) : NULL;
        if (nb == NULL)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        s->rx = nb;
        s->rx_cap = nc;
    }
    memcpy(s->rx + s->rx_len, d, len);
    s->rx_len += len;
    return 0;
}

/* The one message of an OK answer: a completed Task with the sent id. */
static int check_message(gstate *s, const uint8_t *m, size_t len)
{
    const char *want = load_fresh ? NULL : s->c->id;
    Lf__A2a__V1__SendMessageResponse *r = lf__a2a__v1__send_message_response__unpack(NULL, len, m);
    if (r == NULL) {
        load_note("answer: response does not unpack (%zu bytes)", len);
        return CALL_ANSWER;
    }
    int out = CALL_ANSWER;
    if (r->payload_case != LF__A2A__V1__SEND_MESSAGE_RESPONSE__PAYLOAD_TASK)
        load_note("answer: payload case %d, not a task", (int)r->payload_case);
    else if (r->task->status == NULL ||
             r->task->status->state != LF__A2A__V1__TASK_STATE__TASK_STATE_COMPLETED)
        load_note("answer: task %s in state %d", r->task->id,
                  r->task->status ? (int)r->task->status->state : -1);
    else if (want ? strcmp(r->task->id, want) != 0 : r->task->id[0] == '\0')
        load_note("answer: task id %s, sent %s", r->task->id, want ? want : "none");
    else
        out = CALL_OK;
    lf__a2a__v1__send_message_response__free_unpacked(r, NULL);
    return out;
}

/* The stream ended (code: its RST_STREAM code, 0 when it ended cleanly).
 * The order of the checks is the blocking client's: a status first (HTTP's,
 * then gRPC's), then the message, then the replay mark. */
static int verdict(gstate *s, uint32_t code)
{
    if (s->http_status != 200 && code != NGHTTP2_REFUSED_STREAM) {
        load_note("HTTP %d: not a gRPC answer (grpc-status %d)", s->http_status,
                  s->has_status ? s->grpc_status : -1);
        return CALL_STATUS;
    }
    if (!s->has_status) {
        if (code == NGHTTP2_REFUSED_STREAM)
            load_note("grpc-status 14: stream refused");
        else
            load_note("grpc-status -: no gRPC status in the answer (HTTP %d, reset %u)",
                      s->http_status, code);
        return CALL_STATUS;
    }
    if (s->grpc_status != 0) {
        load_note("grpc-status %d: %s", s->grpc_status, s->message);
        return CALL_STATUS;
    }
    size_t off = 0, seen = 0;
    const uint8_t *one = NULL;
    uint32_t one_len = 0;
    while (s->rx_len - off >= 5) {
        uint32_t ml = once__grpc_prefix_len(s->rx + off);
        if ((s->rx[off] & 1) || s->rx_len - off - 5 < ml)
            break;
        one = s->rx + off + 5, one_len = ml;
        seen++;
        off += 5 + (size_t)ml;
    }
    if (off != s->rx_len) {
        load_note("grpc-status 13: malformed or truncated response message");
        return CALL_STATUS;
    }
    if (seen != 1) {
        load_note("answer: not exactly one message (%zu)", seen);
        return CALL_ANSWER;
    }
    int out = check_message(s, one, one_len);
    if (out == CALL_OK && s->replayed) {
        load_note("answer: %s was a replay, not a new task", s->c->id);
        out = CALL_ANSWER;
    }
    return out;
}

static int on_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    gstate *s = user;
    (void)ng;
    if (id == s->sid) {
        s->verdict = verdict(s, code);
        s->sid = 0;
    }
    return 0;
}

static ssize_t provide(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *user)
{
    gstate *s = user;
    (void)ng, (void)id, (void)src;
    size_t n = s->req_len - s->req_off < len ? s->req_len - s->req_off : len;
    memcpy(buf, s->req + s->req_off, n);
    s->req_off += n;
    if (s->req_off == s->req_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Everything nghttp2 wants to send, into c's output. */
static int pump(gstate *s)
{
    for (;;) {
        const uint8_t *d;
        ssize_t n = nghttp2_session_mem_send(s->ng, &d);
        if (n < 0) {
            load_note("transport: nghttp2: %s", nghttp2_strerror((int)n));
            return -1;
        }
        if (n == 0)
            return 0;
        if (load_out(s->c, d, (size_t)n) != 0) {
            load_note("transport: out of memory");
            return -1;
        }
    }
}

static void g_close(lconn *c)
{
    gstate *s = c->bs;
    if (s) {
        nghttp2_session_del(s->ng);
        free(s->rx);
    }
    free(s);
    c->bs = NULL;
}

static int g_open(lconn *c)
{
    gstate *s = calloc(1, sizeof *s);
    nghttp2_session_callbacks *cb = NULL;
    if (s == NULL || nghttp2_session_callbacks_new(&cb) != 0) {
        free(s);
        load_note("transport: out of memory");
        return -1;
    }
    s->c = c;
    c->bs = s;
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    int rc = nghttp2_session_client_new(&s->ng, cb, s);
    nghttp2_session_callbacks_del(cb);
    if (rc != 0 || nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, NULL, 0) != 0) {
        load_note("transport: nghttp2 session: %s", nghttp2_strerror(rc));
        return -1;
    }
    lf__a2a__v1__part__init(&s->part);
    s->part.content_case = LF__A2A__V1__PART__CONTENT_TEXT;
    s->part.text = (char *)"hello";
    s->parts[0] = &s->part;
    lf__a2a__v1__message__init(&s->msg);
    s->msg.role = LF__A2A__V1__ROLE__ROLE_USER;
    s->msg.n_parts = 1;
    s->msg.parts = s->parts;
    lf__a2a__v1__send_message_request__init(&s->send);
    s->send.message = &s->msg;
    return pump(s);
}

static int g_start(lconn *c)
{
    gstate *s = c->bs;
    if (!nghttp2_session_want_read(s->ng)) {
        load_note("transport: the HTTP/2 session ended (GOAWAY or a protocol error)");
        return -1;
    }
    s->msg.message_id = c->id;
    if (!load_fresh)
        s->msg.task_id = c->id;
    size_t len = lf__a2a__v1__send_message_request__get_packed_size(&s->send);
    if (len + 5 > sizeof s->req) {
        load_note("transport: request too large (%zu bytes)", len);
        return -1;
    }
    once__grpc_prefix_put(s->req, (uint32_t)len);
    lf__a2a__v1__send_message_request__pack(&s->send, s->req + 5);
    s->req_len = len + 5;
    s->req_off = 0;
    s->rx_len = 0;
    s->verdict = CALL_PENDING;
    s->http_status = s->has_status = s->grpc_status = s->replayed = 0;
    s->message[0] = '\0';
    nghttp2_data_provider dp = {.read_callback = provide};
    s->sid = nghttp2_submit_request(s->ng, NULL, nv, nnv, &dp, NULL);
    if (s->sid < 0) {
        load_note("transport: nghttp2: %s", nghttp2_strerror(s->sid));
        s->sid = 0;
        return -1;
    }
    return pump(s);
}

static int g_input(lconn *c, const uint8_t *p, size_t n)
{
    gstate *s = c->bs;
    ssize_t r = nghttp2_session_mem_recv(s->ng, p, n);
    if (r < 0) {
        load_note("transport: nghttp2: %s", nghttp2_strerror((int)r));
        return CALL_TRANSPORT;
    }
    if (pump(s) != 0)
        return CALL_TRANSPORT;
    if (s->verdict == CALL_PENDING && !nghttp2_session_want_read(s->ng)) {
        load_note("transport: the HTTP/2 session ended (GOAWAY or a protocol error)");
        return CALL_TRANSPORT;
    }
    return s->verdict;
}

const load_binding load_grpc = {
    .name = "grpc",
    .init = g_init,
    .open = g_open,
    .close = g_close,
    .start = g_start,
    .input = g_input,
};
