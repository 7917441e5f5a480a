/*
 * h2_session.c -- the nghttp2 side of a connection, on its loop thread:
 * requests read into calls (headers, one length-prefixed message), calls
 * handed to the handler, answers handed to nghttp2, and the per-connection
 * budgets that stop floods.
 *
 * A request becomes a call when its END_STREAM arrives with exactly one
 * message. Everything wrong before that is answered by the transport
 * without the handler: a method other than POST (405) or a content-type
 * that is not gRPC's (415, as gRPC's HTTP/2 doc asks), a bad path
 * (UNIMPLEMENTED), a bad grpc-timeout, a compressed message (UNIMPLEMENTED:
 * only identity here), a message over max_message (RESOURCE_EXHAUSTED), and
 * zero or several messages on a unary or server-streaming method: INTERNAL
 * both, as grpc-java's ServerCalls ("Half-closed without a request", "Too
 * many requests") and grpc-go answer.
 */
#include <string.h>
#include <stdio.h>
#include <strings.h>

#include "core/alloc_int.h"
#include "core/log.h"
#include "grpc/h2_int.h"

static once__h2_conn *conn_of(void *user)
{
    return user;
}

/* Answer an HTTP status without gRPC (loop thread). */
static void reply_http(once__h2_call *c, int status)
{
    pthread_mutex_lock(&c->mu);
    c->http_status = status;
    c->finished = 1;
    c->gone = 1;
    pthread_mutex_unlock(&c->mu);
    c->rx_done = 1;
    once__h2s_service(c);
}

/* Answer with a gRPC status from the transport (loop thread). */
static void reply_status(once__h2_call *c, int status, const char *message)
{
    c->rx_done = 1;
    if (once__h2_call_end(c, status, message, 1) && c->srv->h.on_gone)
        c->srv->h.on_gone(c->srv->h.ctx, c);
    once__h2s_service(c);
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    once__h2_conn *conn = conn_of(user);
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    once__h2_call *c = once__h2_call_new(conn->loop->srv, conn, f->hd.stream_id);
    if (c == NULL)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    c->began_ms = once_monotonic_ms();
    if (nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, c) != 0) {
        once__h2_call_unref(c);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    once__list_append(&conn->calls, &c->link);
    if (conn->nstreams++ == 0)
        once__h2_conn_busy(conn, 1);
    return 0;
}

static int set_str(char **dst, const uint8_t *v, size_t n)
{
    once_free(*dst);
    *dst = once_strndup((const char *)v, n);
    return *dst ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
    once__h2_conn *conn = conn_of(user);
    once__h2_call *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    /* Every decoded header of the block counts, the stream's or not:
     * nghttp2 calls no on_begin_frame for CONTINUATION frames, and stops
     * calling this once a callback refused the block, so the block is
     * bounded here and never refused before its end. */
    size_t max = conn->loop->srv->cfg.max_header_list;
    conn->block_bytes += nlen + vlen + 32;
    if (conn->block_bytes > 2 * max) {
        if (conn->abuse == NULL) {
            conn->abuse = "header block too large";
            nghttp2_session_terminate_session(ng, NGHTTP2_ENHANCE_YOUR_CALM);
        }
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (c == NULL || c->handed || c->rx_done)
        return 0;
    c->hdr_bytes += nlen + vlen + 32;
    if (c->hdr_bytes > max)
        return 0;   /* kept out; answered 431 at the block's end */
    if (f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;   /* request trailers: nothing a call reads */
    if (nlen > 0 && name[0] == ':') {
        if (nlen == 7 && memcmp(name, ":method", 7) == 0)
            return set_str(&c->method, value, vlen);
        if (nlen == 5 && memcmp(name, ":path", 5) == 0)
            return set_str(&c->path, value, vlen);
        return 0;
    }
    if (nlen == 12 && memcmp(name, "content-type", 12) == 0 && set_str(&c->ctype, value, vlen))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (nlen == 13 && memcmp(name, "grpc-encoding", 13) == 0 &&
        set_str(&c->encoding, value, vlen))
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return once__h2_call_md_add(c, (const char *)name, nlen, (const char *)value, vlen) == ONCE_OK
               ? 0
               : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

/* "/<service>/<method>": both parts non-empty, no further '/'. */
static int path_ok(const char *p)
{
    if (p == NULL || p[0] != '/')
        return 0;
    const char *slash = strchr(p + 1, '/');
    return slash != NULL && slash > p + 1 && slash[1] != '\0' && strchr(slash + 1, '/') == NULL;
}

/* The request's head is in: check it (loop thread). */
static void head_done(once__h2_call *c)
{
    if (c->hdr_bytes > c->srv->cfg.max_header_list) {
        reply_http(c, 431);
        return;
    }
    if (c->method == NULL || strcmp(c->method, "POST") != 0) {
        reply_http(c, 405);
        return;
    }
    if (c->ctype == NULL || (strcasecmp(c->ctype, "application/grpc") != 0 &&
                             strcasecmp(c->ctype, "application/grpc+proto") != 0)) {
        reply_http(c, 415);
        return;
    }
    if (!path_ok(c->path)) {
        reply_status(c, ONCE_GRPC_UNIMPLEMENTED, "malformed method path");
        return;
    }
    const char *t = once__h2_call_metadata(c, "grpc-timeout");
    if (t != NULL) {
        int64_t ms = once__grpc_timeout_parse(t);
        if (ms < 0) {
            reply_status(c, ONCE_GRPC_INTERNAL, "malformed grpc-timeout");
            return;
        }
        c->deadline_ms = c->began_ms + ms;
    }
}

/* The request ended (END_STREAM): hand it over, or say why not. */
static void request_done(once__h2_call *c)
{
    if (c->rx_done)
        return;
    if (c->nmsgs == 0 || c->rx_len < 5) {
        reply_status(c, ONCE_GRPC_INTERNAL, "missing request message");
        return;
    }
    if (c->rx_len != 5 + (size_t)once__grpc_prefix_len(c->rx)) {
        reply_status(c, ONCE_GRPC_INTERNAL, "truncated request message");
        return;
    }
    c->rx_done = 1;
    c->handed = 1;
    pthread_mutex_lock(&c->mu);
    c->handed = 1;
    pthread_mutex_unlock(&c->mu);
    c->srv->h.on_call(c->srv->h.ctx, c);
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user)
{
    once__h2_call *c = nghttp2_session_get_stream_user_data(ng, id);
    if (c == NULL || c->rx_done)
        return 0;
    size_t max = c->srv->cfg.max_message;
    while (len > 0 && !c->rx_done) {
        /* The prefix of the message that begins here, then its bytes. */
        size_t want;
        if (c->rx_len < 5) {
            want = 5 - c->rx_len;
        } else {
            uint32_t ml = once__grpc_prefix_len(c->rx);
            want = 5 + (size_t)ml - c->rx_len;
            if (want == 0) {   /* a second message begins */
                reply_status(c, ONCE_GRPC_INTERNAL, "too many request messages");
                return 0;
            }
        }
        size_t n = len < want ? len : want;
        if (once__h2_reserve(&c->rx, &c->rx_cap, c->rx_len + n) != ONCE_OK)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        memcpy(c->rx + c->rx_len, data, n);
        c->rx_len += n;
        data += n;
        len -= n;
        if (c->rx_len == 5) {
            c->nmsgs++;
            uint32_t ml = once__grpc_prefix_len(c->rx);
            if (c->rx[0] & 1) {
                /* Only identity here: a compressed message, whatever its
                 * grpc-encoding says, is one we cannot read. */
                reply_status(c, ONCE_GRPC_UNIMPLEMENTED,
                             c->encoding ? "grpc-encoding not supported (identity only)"
                                         : "compressed message without grpc-encoding");
                return 0;
            }
            if (ml > max) {
                reply_status(c, ONCE_GRPC_RESOURCE_EXHAUSTED, "request message too large");
                return 0;
            }
        }
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    once__h2_conn *conn = conn_of(user);
    if (f->hd.type == NGHTTP2_HEADERS) {   /* the whole block is in */
        conn->block_bytes = 0;
        conn->in_block = 0;
    }
    if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
        return 0;
    once__h2_call *c = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (c == NULL)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
        head_done(c);
    if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
        request_done(c);
    return 0;
}

static int on_begin_frame(nghttp2_session *ng, const nghttp2_frame_hd *hd, void *user)
{
    once__h2_conn *conn = conn_of(user);
    if (hd->type == NGHTTP2_HEADERS) {
        /* A new block (nghttp2 names no CONTINUATION here). */
        conn->in_block = !(hd->flags & NGHTTP2_FLAG_END_HEADERS);
        conn->block_bytes = 0;
    }
    once__h2s_flood(conn, hd, once_monotonic_ms());
    return 0;
}

int once__h2s_flood(once__h2_conn *c, const nghttp2_frame_hd *hd, int64_t now)
{
    const once__h2_config *cfg = &c->loop->srv->cfg;
    if (now - c->win_start >= cfg->flood_window_ms) {
        c->win_start = now;
        c->resets = c->control = 0;
    }
    int ack = hd->flags & NGHTTP2_FLAG_ACK;
    if (hd->type == NGHTTP2_RST_STREAM)
        c->resets++;
    else if ((hd->type == NGHTTP2_SETTINGS || hd->type == NGHTTP2_PING) && !ack)
        c->control++;
    else if (hd->type == NGHTTP2_PRIORITY)
        c->control++;
    else if (hd->type == NGHTTP2_DATA && hd->length == 0 && !(hd->flags & NGHTTP2_FLAG_END_STREAM))
        c->control++;   /* empty DATA carries nothing but work */
    const char *why = c->resets > cfg->max_resets      ? "rapid reset"
                      : c->control > cfg->max_control ? "control frame flood"
                                                      : NULL;
    if (why == NULL || c->abuse != NULL)
        return why != NULL;
    c->abuse = why;
    nghttp2_session_terminate_session(c->ng, NGHTTP2_ENHANCE_YOUR_CALM);
    return 1;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    once__h2_conn *conn = conn_of(user);
    once__h2_call *c = nghttp2_session_get_stream_user_data(ng, id);
    if (c == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(ng, id, NULL);
    once__list_unlink(&conn->calls, &c->link);
    if (--conn->nstreams == 0)
        once__h2_conn_busy(conn, 0);
    if (once__h2_call_detach(c) && c->srv->h.on_gone)
        c->srv->h.on_gone(c->srv->h.ctx, c);
    once__h2_call_unref(c);
    return 0;
}

void once__h2s_detach_all(once__h2_conn *conn)
{
    while (conn->calls.head) {
        once__h2_call *c = (once__h2_call *)conn->calls.head;
        once__list_unlink(&conn->calls, &c->link);
        if (conn->ng)
            nghttp2_session_set_stream_user_data(conn->ng, c->id, NULL);
        if (once__h2_call_detach(c) && c->srv->h.on_gone)
            c->srv->h.on_gone(c->srv->h.ctx, c);
        once__h2_call_unref(c);
    }
    conn->nstreams = 0;
}

static ssize_t provide(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *user)
{
    once__h2_call *c = src->ptr;
    once__h2_conn *conn = conn_of(user);
    int room = 0;
    ssize_t n = once__h2_call_take(c, buf, len, flags, &room);
    if (n > 0)
        conn->data_mark = once_monotonic_ms();
    if (room && c->srv->h.on_room)
        c->srv->h.on_room(c->srv->h.ctx, c);
    return n;
}

void once__h2s_service(once__h2_call *c)
{
    once__h2_conn *conn = c->conn;
    if (conn == NULL || conn->ng == NULL)
        return;
    nghttp2_nv nv[64];
    pthread_mutex_lock(&c->mu);
    int has_out = c->out_len > c->out_off;
    if (c->loop == NULL) {
        /* the stream closed meanwhile */
    } else if (!c->submitted && c->http_status) {
        char st[8];
        snprintf(st, sizeof st, "%d", c->http_status);
        nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)st, 7, strlen(st), 0};
        nghttp2_submit_response(conn->ng, c->id, nv, 1, NULL);
        c->submitted = 1;
    } else if (!c->submitted && (c->hdrs_set || has_out || c->finished)) {
        size_t k = 0;
        nv[k++] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0};
        nv[k++] = (nghttp2_nv){(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, 0};
        nv[k++] = (nghttp2_nv){(uint8_t *)"grpc-accept-encoding", (uint8_t *)"identity", 20, 8, 0};
        k += once__h2_nv(nv + k, 64 - k, c->hdrs, c->nhdrs);
        if (c->finished && !c->hdrs_set && !has_out) {   /* Trailers-Only */
            k += once__h2_nv(nv + k, 64 - k, c->trl, c->ntrl);
            nghttp2_submit_response(conn->ng, c->id, nv, k, NULL);
        } else {
            nghttp2_data_provider dp = {.source.ptr = c, .read_callback = provide};
            nghttp2_submit_response(conn->ng, c->id, nv, k, &dp);
        }
        c->submitted = 1;
    } else if (c->submitted && c->deferred && (has_out || c->finished)) {
        c->deferred = 0;
        nghttp2_session_resume_data(conn->ng, c->id);
    }
    pthread_mutex_unlock(&c->mu);
}

int once__h2s_pending(once__h2_conn *conn)
{
    for (once__link *l = conn->calls.head; l; l = l->next) {
        once__h2_call *c = (once__h2_call *)l;
        pthread_mutex_lock(&c->mu);
        int p = c->submitted && c->out_len > c->out_off;
        pthread_mutex_unlock(&c->mu);
        if (p)
            return 1;
    }
    return 0;
}

void once__h2s_sweep(once__h2_conn *conn, int64_t now)
{
    const once__h2_config *cfg = &conn->loop->srv->cfg;
    for (once__link *l = conn->calls.head, *next; l; l = next) {
        once__h2_call *c = (once__h2_call *)l;
        next = l->next;
        if (!c->rx_done && now - c->began_ms >= cfg->request_timeout_ms) {
            if (conn->in_block) {   /* headers without end: only a close stops them */
                conn->abuse = "request timeout inside a header block";
                nghttp2_session_terminate_session(conn->ng, NGHTTP2_ENHANCE_YOUR_CALM);
                return;
            }
            c->rx_done = 1;
            nghttp2_submit_rst_stream(conn->ng, NGHTTP2_FLAG_NONE, c->id, NGHTTP2_CANCEL);
            continue;
        }
        if (c->deadline_ms != 0 && now >= c->deadline_ms) {
            pthread_mutex_lock(&c->mu);
            int done = c->finished || c->gone;
            pthread_mutex_unlock(&c->mu);
            if (!done)
                reply_status(c, ONCE_GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
        }
    }
}

int once__h2s_callbacks(nghttp2_session_callbacks **out)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return ONCE_ENOMEM;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cb, on_begin_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    *out = cb;
    return ONCE_OK;
}

int once__h2s_open(once__h2_conn *c)
{
    once__h2 *s = c->loop->srv;
    if (nghttp2_session_server_new2(&c->ng, s->cbs, c, s->opt) != 0)
        return ONCE_ENOMEM;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->cfg.max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)s->cfg.max_header_list},
    };
    if (nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, 2) != 0)
        return ONCE_ENOMEM;
    return ONCE_OK;
}
