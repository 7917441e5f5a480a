/*
 * h2_call.c -- a gRPC call's two faces: the request the loop fills in before
 * on_call (read-only afterwards), and the answer workers queue from any
 * thread (under the call's mutex) for the loop to hand to nghttp2.
 *
 * Invariants: an answer is accepted only while the call is neither gone nor
 * finished; a call is on its loop's kick list at most once (`kicked`), with
 * a reference, and only while its stream is open (`loop` set); a finished
 * call's trailers leave after every queued byte.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc_int.h"
#include "core/base64.h"
#include "core/grow.h"
#include "grpc/h2_int.h"
#include "grpc/status.h"

once__h2_call *once__h2_call_new(once__h2 *srv, once__h2_conn *c, int32_t id)
{
    once__h2_call *call = once_calloc(1, sizeof *call);
    if (call == NULL)
        return NULL;
    atomic_init(&call->refs, 1);
    pthread_mutex_init(&call->mu, NULL);
    call->srv = srv;
    call->conn = c;
    call->id = id;
    call->loop = c->loop;
    snprintf(call->peer, sizeof call->peer, "%s", c->peer);
    return call;
}

int once__h2_reserve(uint8_t **buf, size_t *cap, size_t need)
{
    return once__grow_to((char **)buf, cap, once__grow_size(*cap, need, 256, (size_t)-1));
}

void once__h2_kv_free(once__h2_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        once_free(kv[i].name);
        once_free(kv[i].value);
    }
    once_free(kv);
}

void once__h2_call_ref(once__h2_call *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void once__h2_call_unref(once__h2_call *c)
{
    if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    if (c->free_data != NULL)
        c->free_data(c->data);
    once_free(c->path);
    once__h2_kv_free(c->md, c->nmd);
    once_free(c->rx);
    once_free(c->method);
    once_free(c->ctype);
    once_free(c->encoding);
    once__h2_kv_free(c->hdrs, c->nhdrs);
    once_free(c->out);
    once__h2_kv_free(c->trl, c->ntrl);
    pthread_mutex_destroy(&c->mu);
    once_free(c);
}

const char *once__h2_call_path(const once__h2_call *c)
{
    return c->path;
}

const char *once__h2_call_metadata(const once__h2_call *c, const char *key)
{
    for (size_t i = 0; i < c->nmd; i++)
        if (strcmp(c->md[i].name, key) == 0)
            return c->md[i].value;
    return NULL;
}

const uint8_t *once__h2_call_message(const once__h2_call *c, size_t *len)
{
    *len = c->rx_len >= 5 ? c->rx_len - 5 : 0;
    return c->rx_len >= 5 ? c->rx + 5 : (const uint8_t *)"";
}

const char *once__h2_call_peer(const once__h2_call *c)
{
    return c->peer;
}

int64_t once__h2_call_deadline_ms(const once__h2_call *c)
{
    return c->deadline_ms;
}

int once__h2_call_md_add(once__h2_call *call, const char *name, size_t nlen, const char *value,
                         size_t vlen)
{
    for (size_t i = 0; i < call->nmd; i++) {
        if (strlen(call->md[i].name) == nlen && memcmp(call->md[i].name, name, nlen) == 0) {
            size_t old = strlen(call->md[i].value);
            char *v = once_realloc(call->md[i].value, old + 1 + vlen + 1);
            if (v == NULL)
                return ONCE_ENOMEM;
            v[old] = ',';
            memcpy(v + old + 1, value, vlen);
            v[old + 1 + vlen] = '\0';
            call->md[i].value = v;
            return ONCE_OK;
        }
    }
    if (call->nmd == call->mdcap && once__grow(&call->md, &call->mdcap, sizeof *call->md, 8) != ONCE_OK)
        return ONCE_ENOMEM;
    char *n = once_strndup(name, nlen), *v = once_strndup(value, vlen);
    if (n == NULL || v == NULL) {
        once_free(n);
        once_free(v);
        return ONCE_ENOMEM;
    }
    call->md[call->nmd++] = (once__h2_kv){n, v};
    return ONCE_OK;
}

/* Put the call on its loop's kick list (mu held) so the loop hands the new
 * answer to nghttp2. */
static void kick_locked(once__h2_call *c)
{
    if (c->kicked || c->loop == NULL)
        return;
    once__h2_loop *l = c->loop;
    int first = 0;
    pthread_mutex_lock(&l->kick_mu);
    if (l->nkicks < l->kcap || once__grow(&l->kicks, &l->kcap, sizeof *l->kicks, 16) == ONCE_OK) {
        once__h2_call_ref(c);
        first = l->nkicks == 0;
        l->kicks[l->nkicks++] = c;
        c->kicked = 1;
    }
    pthread_mutex_unlock(&l->kick_mu);
    /* Only the kick that found the list empty wakes the loop: the list is
     * emptied only by the loop's drain, which reads the eventfd before it
     * takes the list, so a kick behind another is on a list that a wake-up
     * already promised to take (a batch that lands many calls of one loop
     * costs one write, not one each). */
    if (first) {
        uint64_t one = 1;
        ssize_t w = write(l->evfd, &one, sizeof one);
        (void)w;   /* EAGAIN: the counter is already non-zero, the loop wakes */
    }
}

/* Copy kv[0..n) pairs (flat, name then value). */
static int kv_copy(const char *const *kv, size_t n, once__h2_kv **out)
{
    once__h2_kv *v = once_calloc(n ? n : 1, sizeof *v);
    if (v == NULL)
        return ONCE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        v[i].name = once_strdup(kv[2 * i]);
        v[i].value = once_strdup(kv[2 * i + 1]);
        if (v[i].name == NULL || v[i].value == NULL) {
            once__h2_kv_free(v, i + 1);
            return ONCE_ENOMEM;
        }
    }
    *out = v;
    return ONCE_OK;
}

/* A metadata name a handler may send: lowercase token characters, not a
 * pseudo-header and not one the transport writes itself. */
static int name_ok(const char *s)
{
    if (*s == '\0' || strcmp(s, "content-type") == 0 || strncmp(s, "grpc-", 5) == 0)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
              *s == '.'))
            return 0;
    return 1;
}

static int value_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

int once__h2_call_headers(once__h2_call *c, const char *const *kv, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!name_ok(kv[2 * i]) || !value_ok(kv[2 * i + 1]))
            return ONCE_EINVAL;
    once__h2_kv *v;
    if (kv_copy(kv, n, &v) != ONCE_OK)
        return ONCE_ENOMEM;
    pthread_mutex_lock(&c->mu);
    int rc = ONCE_OK;
    if (c->gone || c->finished)
        rc = ONCE_ECLOSED;
    else if (c->hdrs_set || c->out_len > 0)
        rc = ONCE_EINVAL;
    if (rc == ONCE_OK) {
        c->hdrs = v;
        c->nhdrs = n;
        c->hdrs_set = 1;
        kick_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc != ONCE_OK)
        once__h2_kv_free(v, n);
    return rc;
}

void once__h2_call_set_data(once__h2_call *c, void *data, void (*free_data)(void *data))
{
    c->data = data;
    c->free_data = free_data;
}

void *once__h2_call_data(const once__h2_call *c)
{
    return c->data;
}

size_t once__h2_call_pending(once__h2_call *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->gone || c->loop == NULL ? 0 : c->out_len - c->out_off;
    pthread_mutex_unlock(&c->mu);
    return n;
}

int64_t once__h2_call_send(once__h2_call *c, const uint8_t *msg, size_t len)
{
    if (len > 0xffffffffu)
        return ONCE_ERANGE;
    pthread_mutex_lock(&c->mu);
    int64_t rc;
    if (c->gone || c->finished) {
        rc = ONCE_ECLOSED;
    } else {
        size_t used = c->out_len - c->out_off;
        if (c->out_off > 0 && used <= c->out_off) {   /* slide down: cheap now */
            memmove(c->out, c->out + c->out_off, used);
            c->out_len = used;
            c->out_off = 0;
        }
        size_t need = c->out_len + 5 + len;
        if (once__h2_reserve(&c->out, &c->out_cap, need) != ONCE_OK) {
            rc = ONCE_ENOMEM;
        } else {
            uint8_t *p = c->out + c->out_len;
            once__grpc_prefix_put(p, (uint32_t)len);
            if (len > 0)
                memcpy(p + 5, msg, len);
            c->out_len = need;
            rc = (int64_t)(c->out_len - c->out_off);
            if ((size_t)rc >= c->srv->cfg.stream_buffer)
                c->want_room = 1;
            kick_locked(c);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* The trailers for status and message (details: base64 already), mu held. */
static int trailers_locked(once__h2_call *c, int status, const char *message, char *details64)
{
    char st[16];
    snprintf(st, sizeof st, "%d", status);
    once__h2_kv *t = once_calloc(3, sizeof *t);
    if (t == NULL)
        return ONCE_ENOMEM;
    size_t n = 0;
    t[n].name = once_strdup("grpc-status");
    t[n++].value = once_strdup(st);
    if (message != NULL && *message) {
        t[n].name = once_strdup("grpc-message");
        t[n++].value = once__grpc_message_encode(message);
    }
    if (details64 != NULL) {
        t[n].name = once_strdup("grpc-status-details-bin");
        t[n++].value = details64;
    }
    for (size_t i = 0; i < n; i++)
        if (t[i].name == NULL || t[i].value == NULL) {
            if (details64 != NULL && t[n - 1].value == details64)
                t[n - 1].value = NULL;   /* the caller frees it */
            once__h2_kv_free(t, n);
            return ONCE_ENOMEM;
        }
    c->trl = t;
    c->ntrl = n;
    c->finished = 1;
    return ONCE_OK;
}

int once__h2_call_finish(once__h2_call *c, int grpc_status, const char *message,
                         const uint8_t *details_bin, size_t details_len)
{
    if (grpc_status < 0 || grpc_status > 16)
        return ONCE_EINVAL;
    char *d64 = NULL;
    if (details_len > 0) {
        d64 = once_malloc(once__base64_len(details_len, 0) + 1);
        if (d64 == NULL)
            return ONCE_ENOMEM;
        /* The URL-safe alphabet unpadded is what gRPC's -bin values allow
         * (decoders accept both alphabets); standard unpadded is what most
         * implementations send. */
        once__base64_encode(details_bin, details_len, d64, 0);
        size_t l = strlen(d64);
        while (l > 0 && d64[l - 1] == '=')
            d64[--l] = '\0';
    }
    pthread_mutex_lock(&c->mu);
    int rc = ONCE_OK;
    if (c->gone || c->finished)
        rc = ONCE_ECLOSED;
    else
        rc = trailers_locked(c, grpc_status, message, d64);
    if (rc == ONCE_OK)
        kick_locked(c);
    pthread_mutex_unlock(&c->mu);
    if (rc != ONCE_OK)
        once_free(d64);
    return rc;
}

int once__h2_call_end(once__h2_call *c, int status, const char *message, int drop)
{
    pthread_mutex_lock(&c->mu);
    int tell = 0;
    if (!c->finished && !c->gone) {
        if (drop)
            c->out_off = c->out_len;
        if (trailers_locked(c, status, message, NULL) != ONCE_OK)
            c->http_status = 500;   /* no memory for trailers: a bare 500 */
        tell = c->handed && !c->gone_told;
        c->gone_told |= tell;
    }
    c->gone = 1;
    pthread_mutex_unlock(&c->mu);
    return tell;
}

int once__h2_call_detach(once__h2_call *c)
{
    pthread_mutex_lock(&c->mu);
    int tell = c->handed && !c->finished && !c->gone_told;
    c->gone_told |= tell;
    c->gone = 1;
    c->loop = NULL;
    pthread_mutex_unlock(&c->mu);
    c->conn = NULL;
    return tell;
}

ssize_t once__h2_call_take(once__h2_call *c, uint8_t *buf, size_t len, uint32_t *flags, int *room)
{
    pthread_mutex_lock(&c->mu);
    size_t have = c->out_len - c->out_off, n = have < len ? have : len;
    if (n > 0) {
        memcpy(buf, c->out + c->out_off, n);
        c->out_off += n;
        have -= n;
    }
    if (have == 0) {
        c->out_off = c->out_len = 0;
        if (c->out_cap > 4 * c->srv->cfg.stream_buffer) {   /* a burst: give it back */
            once_free(c->out);
            c->out = NULL;
            c->out_cap = 0;
        }
    }
    if (c->want_room && have < c->srv->cfg.stream_buffer / 2) {
        c->want_room = 0;
        *room = !c->gone && !c->finished;
    }
    ssize_t rc = (ssize_t)n;
    if (have == 0 && c->finished) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv nv[4];
        size_t k = once__h2_nv(nv, 4, c->trl, c->ntrl);
        if (nghttp2_submit_trailer(c->conn->ng, c->id, nv, k) != 0)
            rc = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    } else if (n == 0) {
        c->deferred = 1;
        rc = NGHTTP2_ERR_DEFERRED;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

size_t once__h2_nv(nghttp2_nv *nv, size_t cap, const once__h2_kv *kv, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++, k++)
        nv[k] = (nghttp2_nv){(uint8_t *)kv[i].name, (uint8_t *)kv[i].value, strlen(kv[i].name),
                             strlen(kv[i].value), NGHTTP2_NV_FLAG_NONE};
    return k;
}
