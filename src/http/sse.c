/*
 * sse.c -- Server-Sent Events over libmicrohttpd for SendStreamingMessage
 * and SubscribeToTask: text/event-stream responses fed from the store.
 *
 * Design. libmicrohttpd 0.9.75 runs our epoll threads with an internal
 * polling loop; a content-reader callback that returns 0 there is called
 * again at once (a busy loop) unless it suspends the connection first, and
 * a callback that blocks stalls every connection of its thread. So each
 * stream is two halves around one capped byte buffer:
 *   - the producer, a detached thread per stream, reads the task's events
 *     through the codec cursor (once__a2a_stream: store reads after the last
 *     generation it produced), appends whole SSE frames to the buffer, waits
 *     for the task to move (once__engine_wait_generation: local writes wake
 *     it, other replicas' writes are polled), and adds a ": ping" comment
 *     after ping_ms without bytes;
 *   - the reader, MHD's callback on its own thread, copies bytes out of the
 *     buffer; when the buffer is empty it suspends the connection (the only
 *     place libmicrohttpd allows that besides the access handler) and
 *     returns 0; the producer resumes it when it appends.
 * Suspend and resume happen under the stream's mutex and are recorded in
 * `suspended`, so a resume always follows its suspend (resuming a running
 * connection is undefined in libmicrohttpd).
 *
 * Bounded memory: the producer reads only while the buffer holds at most
 * cap/2 bytes, and sizes each read (in events) to the room left, so a slow
 * consumer costs at most about cap plus one event per stream; what it has
 * not taken stays in the store and is read again when it catches up. The
 * socket's kernel send buffer is fixed at the cap as well (autotuning would
 * let each slow stream park megabytes in the kernel). A consumer that stops
 * reading altogether is cut by MHD's idle timeout. Threads are bounded by
 * the stream slots (max_streams): the codec takes a slot before it opens a
 * stream and the cursor gives it back when the producer exits. A principal
 * holds at most its share of them (max_streams_per_principal), counted
 * here per principal under the hub's lock, so one tenant's subscriptions
 * cannot refuse every other tenant's stream. (A thread
 * per stream keeps waiting simple, one blocking wait each; glibc gives
 * such threads arenas of their own, whose freed memory stays resident:
 * MALLOC_ARENA_MAX bounds that on servers with many streams.)
 *
 * End of a stream: the cursor says when it produced the last frame (a
 * terminal or interrupted status, a Message); the producer then marks EOF,
 * and the reader answers END_OF_STREAM once the buffer is drained. A store
 * that keeps failing (5 s) ends it with a JSON-RPC error frame; the client
 * resumes by Last-Event-ID. A client that leaves while its stream waits
 * (its connection suspended) is seen by the producer: MHD watches no
 * suspended socket, and would learn it only when the next ping failed to
 * go out, up to --sse-ping later, holding the slot meanwhile. So the
 * producer's wait asks at every poll (about 50 ms) whether the socket
 * reports the peer's hang-up (POLLRDHUP; a half-close counts as leaving,
 * as it does for MHD), and if so ends the stream: EOF, the connection
 * resumed for MHD to close, the slot given back as the producer exits.
 *
 * Shutdown (once__sse_stop): producers see `stopping` within a second,
 * mark EOF, resume their connection and exit; the stop waits for all of
 * them, so no connection stays suspended when MHD_stop_daemon runs.
 */
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/grow.h"
#include "core/str.h"
#include "core/condwait.h"
#include "http/sse.h"
#include "once/once.h"

#define READ_BLOCK 4096          /* MHD's scratch size for callback content */
#define SLICE_MS 1000            /* producers re-check `stopping` this often */
#define MAX_BATCH 64             /* events per store read */
#define PRODUCER_STACK (512 * 1024)
#define PING_FRAME ": ping\n\n"
/* The last frame of a stream that ends because onced stops: a named event
 * without data (SSE clients dispatch no event without data, so a client
 * that knows nothing of it just sees the stream end) and a retry delay:
 * reconnect, with Last-Event-ID, to another replica. */
#define SHUTDOWN_FRAME ": onced is shutting down; resume with Last-Event-ID\n" \
                       "event: shutdown\nretry: 1000\n\n"
#define RETRY_FOR_MS 5000        /* a store failing this long ends the stream */
#define RETRY_PAUSE_MS 100

/* Streams one principal holds (the slots' per-principal counts), on the
 * hub's `holders` while n > 0. */
typedef struct holder {
    struct holder *next;
    long n;
    char principal[ONCE_PRINCIPAL_MAX + 1];
} holder;

/* The hub. `slots` (but its atomic `used`), `cap`, `ping_ms` are fixed at
 * creation; `live`, `holders` and the `idle` signal are under mu;
 * `stopping` is set once under mu and read with __atomic loads anywhere. */
struct once__sse {
    pthread_mutex_t mu;
    pthread_cond_t idle;          /* signalled when a producer exits */
    int live;                     /* producer threads running */
    int stopping;
    holder *holders;
    once__a2a_stream_slots slots;
    size_t cap;
    int64_t ping_ms;
};

/*
 * One stream. `src` belongs to the producer thread alone. Everything else
 * is under mu: the buffer buf[off..len) (producer appends, reader takes),
 * `eof` (set by the producer: nothing more will be appended), `suspended`
 * (set by the reader when it suspends, cleared by whoever resumes),
 * `closed` (set when MHD released the response: the connection is gone)
 * and `refs` (the producer and the response each hold one; the last
 * release frees). The producer sleeps on `room`.
 */
typedef struct sse_conn {
    once__sse *hub;
    struct MHD_Connection *conn;
    once__a2a_stream *src;
    pthread_mutex_t mu;
    pthread_cond_t room;
    char *buf;
    size_t off, len, size;
    int eof, suspended, closed, refs;
} sse_conn;

static int stopping(const once__sse *h)
{
    return __atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE);
}


/* --- the buffer (caller holds s->mu) --------------------------------------- */

static int append(sse_conn *s, const char *p, size_t n)
{
    if (s->off > 0 && s->len + n > s->size) {
        memmove(s->buf, s->buf + s->off, s->len - s->off);
        s->len -= s->off;
        s->off = 0;
    }
    /* Past the cap only for one event larger than the cap itself. */
    size_t size = s->len + n > s->hub->cap ? s->len + n : s->hub->cap;
    if (s->len + n > s->size && once__grow_to(&s->buf, &s->size, size) != ONCE_OK)
        return ONCE_ENOMEM;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return ONCE_OK;
}

/* Let MHD call the reader again if it is waiting for bytes. */
static void wake(sse_conn *s)
{
    if (s->suspended) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    }
}

static void release(sse_conn *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    pthread_cond_destroy(&s->room);
    pthread_mutex_destroy(&s->mu);
    once_free(s->buf);
    once_free(s);
}

/* --- the reader (MHD's thread) --------------------------------------------- */

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
    sse_conn *s = cls;
    (void)pos;
    pthread_mutex_lock(&s->mu);
    size_t have = s->len - s->off;
    if (have > 0) {
        size_t n = have < max ? have : max;
        memcpy(out, s->buf + s->off, n);
        s->off += n;
        if (s->off == s->len) {
            s->off = s->len = 0;
            if (s->size > s->hub->cap) { /* an oversized event went out */
                once_free(s->buf);
                s->buf = NULL;
                s->size = 0;
            }
        }
        pthread_cond_signal(&s->room);
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->eof) {
        pthread_mutex_unlock(&s->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    MHD_suspend_connection(s->conn);
    s->suspended = 1;
    pthread_cond_signal(&s->room);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* MHD released the response: the connection is done (sent, cut or timed
 * out). It is never suspended here: suspended connections are not closed,
 * and the hub resumes every one before the daemon stops. */
static void on_free(void *cls)
{
    sse_conn *s = cls;
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    s->suspended = 0;
    pthread_cond_signal(&s->room);
    pthread_mutex_unlock(&s->mu);
    release(s);
}

/* --- the client leaving -------------------------------------------------------- */

/* The producer's stop hook (once__wait_stop): 1 once the stream is closed
 * or its client hung up. The socket is looked at only while the connection
 * is suspended, under s->mu: MHD then neither uses nor closes it, so the
 * descriptor is still this connection's. */
static int client_gone(void *arg)
{
    sse_conn *s = arg;
    pthread_mutex_lock(&s->mu);
    int gone = s->closed;
    if (!gone && s->suspended) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(s->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct pollfd p = {.fd = ci != NULL ? ci->connect_fd : -1, .events = POLLRDHUP};
        gone = ci != NULL && poll(&p, 1, 0) == 1 &&
               (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    }
    pthread_mutex_unlock(&s->mu);
    return gone;
}

/* --- the producer ----------------------------------------------------------- */

/* Queue text (may be NULL) and, if last, the end of the stream. */
static void push(sse_conn *s, const char *text, size_t n, int last)
{
    pthread_mutex_lock(&s->mu);
    if (n > 0 && append(s, text, n) != ONCE_OK)
        last = 1;   /* no memory: end here; the client resumes by Last-Event-ID */
    if (last)
        s->eof = 1;
    wake(s);
    pthread_mutex_unlock(&s->mu);
}

static void push_error(sse_conn *s, int rc)
{
    char *t = NULL;
    size_t n = 0;
    (void)once__a2a_stream_error(s->src, rc, &t, &n);
    push(s, t, n, 1);
    once_free(t);
}

/* How many frames t[0..n) holds (each ends in a blank line; JSON data
 * lines hold no raw line break). At least 1. */
static size_t frames(const char *t, size_t n)
{
    size_t k = 0;
    for (const char *p = t; (p = memchr(p, '\n', (size_t)(t + n - p))) != NULL && p + 1 < t + n;
         p++) {
        if (p[1] == '\n')
            k++;
    }
    return k > 0 ? k : 1;
}

/* Wait until the buffer holds at most cap/2 bytes. Returns the bytes it
 * holds, or (size_t)-1 when the stream must end (closed or stopping). */
static size_t wait_room(sse_conn *s)
{
    once__sse *h = s->hub;
    pthread_mutex_lock(&s->mu);
    while (!s->closed && !stopping(h) && s->len - s->off > h->cap / 2)
        once__cond_wait_ms(&s->room, &s->mu, SLICE_MS);
    size_t fill = (s->closed || stopping(h)) ? (size_t)-1 : s->len - s->off;
    pthread_mutex_unlock(&s->mu);
    return fill;
}

/* Sleep up to ms, unless the stream closes or the hub stops. */
static void pause_ms(sse_conn *s, int64_t ms)
{
    pthread_mutex_lock(&s->mu);
    if (!s->closed && !stopping(s->hub))
        once__cond_wait_ms(&s->room, &s->mu, ms);
    pthread_mutex_unlock(&s->mu);
}

/* A store that cannot answer right now (ESTORE / EBUSY) is retried for a
 * while before the stream ends with an error frame: a busy moment should
 * not cost every client a reconnect. *since is when the failures began. */
static int keep_trying(sse_conn *s, int rc, int64_t *since)
{
    if (rc != ONCE_ESTORE && rc != ONCE_EBUSY)
        return 0;
    int64_t now = once_monotonic_ms();
    if (*since == 0)
        *since = now;
    if (now - *since >= RETRY_FOR_MS)
        return 0;
    pause_ms(s, RETRY_PAUSE_MS);
    return 1;
}

/* End the stream: EOF after what is queued, and the shutdown frame first
 * when onced is stopping (not when the client went away). */
static void end_stream(sse_conn *s)
{
    pthread_mutex_lock(&s->mu);
    int closed = s->closed;
    pthread_mutex_unlock(&s->mu);
    if (!closed)
        push(s, SHUTDOWN_FRAME, sizeof SHUTDOWN_FRAME - 1, 1);
    else
        push(s, NULL, 0, 1);
}

/* One stream's life; returns when it ended. */
static void produce(sse_conn *s)
{
    once__sse *h = s->hub;
    size_t avg = h->cap / 4;   /* running mean frame size: sizes the next read */
    int64_t last = once_monotonic_ms();
    int64_t failing = 0;
    for (;;) {
        size_t fill = wait_room(s);
        if (fill == (size_t)-1) {
            end_stream(s);
            return;
        }
        size_t max = (h->cap - fill) / avg;
        max = max < 1 ? 1 : max > MAX_BATCH ? MAX_BATCH : max;
        char *t = NULL;
        size_t n = 0;
        int done = 0;
        int rc = once__a2a_stream_read(s->src, max, &t, &n, &done);
        if (n > 0) {
            push(s, t, n, done);
            avg = (avg + n / frames(t, n) + 1) / 2;
            last = once_monotonic_ms();
        }
        once_free(t);
        if (done) {
            push(s, NULL, 0, 1);
            return;
        }
        if (rc != ONCE_OK) {
            if (keep_trying(s, rc, &failing))
                continue;
            push_error(s, rc);
            return;
        }
        failing = 0;
        if (n > 0)
            continue;
        /* Caught up: wait for the task to move, a ping keeping the
         * connection (and any proxy) alive meanwhile. */
        int64_t now = once_monotonic_ms();
        if (now >= last + h->ping_ms) {
            pthread_mutex_lock(&s->mu);
            if (s->len == s->off && append(s, PING_FRAME, sizeof PING_FRAME - 1) == ONCE_OK)
                wake(s);
            pthread_mutex_unlock(&s->mu);
            last = now;
            continue;
        }
        int64_t slice = last + h->ping_ms - now;
        once__wait_stop stop = {client_gone, s};
        rc = once__a2a_stream_wait(s->src, slice < SLICE_MS ? slice : SLICE_MS, &stop);
        if (rc == ONCE_ECLOSED) {
            end_stream(s);   /* the engine is going away */
            return;
        }
        if (rc == ONCE_ECANCELED) {
            push(s, NULL, 0, 1);   /* the client left: resumed, MHD closes it */
            return;
        }
        if (rc != ONCE_OK && rc != ONCE_ETIMEDOUT) {
            if (keep_trying(s, rc, &failing))
                continue;
            push_error(s, rc);
            return;
        }
        pthread_mutex_lock(&s->mu);
        int closed = s->closed;
        pthread_mutex_unlock(&s->mu);
        if (closed)
            return;
    }
}

static void *producer_main(void *arg)
{
    sse_conn *s = arg;
    once__sse *h = s->hub;
    produce(s);
    once__a2a_stream_free(s->src);   /* gives the stream slot back */
    s->src = NULL;
    release(s);
    pthread_mutex_lock(&h->mu);
    h->live--;
    pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* --- per-principal shares (the slots' hooks) -------------------------------- */

static once__sse *hub_of(once__a2a_stream_slots *s)
{
    return (once__sse *)(void *)((char *)s - offsetof(once__sse, slots));
}

/* Caller holds h->mu. The link that holds principal's count (or the end). */
static holder **holder_at(once__sse *h, const char *principal)
{
    holder **pp = &h->holders;
    while (*pp != NULL && strcmp((*pp)->principal, principal) != 0)
        pp = &(*pp)->next;
    return pp;
}

static int share_take(once__a2a_stream_slots *s, const char *principal)
{
    once__sse *h = hub_of(s);
    pthread_mutex_lock(&h->mu);
    holder **pp = holder_at(h, principal);
    if (*pp == NULL && (*pp = once_calloc(1, sizeof **pp)) != NULL)
        once__strlcpy((*pp)->principal, principal, sizeof (*pp)->principal);
    /* A new holder starts at 0 < share; no memory for one: refused (503,
     * retryable) rather than uncounted. */
    int ok = *pp != NULL && (*pp)->n < s->share;
    if (ok)
        (*pp)->n++;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

static void share_give(once__a2a_stream_slots *s, const char *principal)
{
    once__sse *h = hub_of(s);
    pthread_mutex_lock(&h->mu);
    holder **pp = holder_at(h, principal);
    holder *x = *pp;
    if (x != NULL && --x->n <= 0) {
        *pp = x->next;
        once_free(x);
    }
    pthread_mutex_unlock(&h->mu);
}

/* --- the hub ----------------------------------------------------------------- */

int once__sse_new(unsigned max_streams, int share, size_t buffer_cap, int64_t ping_ms,
                  once__sse **out)
{
    *out = NULL;
    if (max_streams == 0 || buffer_cap < 1024 || ping_ms < 1)
        return ONCE_EINVAL;
    once__sse *h = once_calloc(1, sizeof *h);
    if (h == NULL)
        return ONCE_ENOMEM;
    if (once__lock_init(&h->mu, &h->idle) != ONCE_OK) {
        once_free(h);
        return ONCE_ENOMEM;
    }
    h->slots.max = (long)max_streams;
    h->slots.share = once__share_of(share, (long)max_streams);
    if (h->slots.share < h->slots.max) {
        h->slots.share_take = share_take;
        h->slots.share_give = share_give;
    }
    h->cap = buffer_cap;
    h->ping_ms = ping_ms;
    *out = h;
    return ONCE_OK;
}

once__a2a_stream_slots *once__sse_slots(once__sse *h)
{
    return &h->slots;
}

/* The kernel's send buffer counts too: left to autotuning, a stream to a
 * client that does not read parks up to tcp_wmem[2] (4 MiB) per socket.
 * Fixing it at the buffer cap keeps each slow stream at about twice the
 * cap in all, and makes the producer wait instead. Best effort. */
static void cap_send_buffer(const once__sse *h, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci == NULL)
        return;
    int size = h->cap > (size_t)(1 << 30) ? 1 << 30 : (int)h->cap;
    (void)setsockopt(ci->connect_fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

static int spawn(sse_conn *s)
{
    pthread_attr_t a;
    if (pthread_attr_init(&a) != 0)
        return ONCE_EBUSY;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, PRODUCER_STACK);
    pthread_t t;
    int rc = pthread_create(&t, &a, producer_main, s);
    pthread_attr_destroy(&a);
    return rc == 0 ? ONCE_OK : ONCE_EBUSY;
}

static sse_conn *conn_new(once__sse *h, struct MHD_Connection *conn, once__a2a_stream *src)
{
    sse_conn *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (once__lock_init(&s->mu, &s->room) != ONCE_OK) {
        once_free(s);
        return NULL;
    }
    s->hub = h;
    s->conn = conn;
    s->src = src;
    s->refs = 2;
    return s;
}

int once__sse_start(once__sse *h, struct MHD_Connection *conn, once__a2a_response *resp,
                    void (*decorate)(struct MHD_Response *), enum MHD_Result *ret)
{
    once__a2a_stream *src = resp->stream;
    resp->stream = NULL;
    *ret = MHD_NO;
    pthread_mutex_lock(&h->mu);
    int closing = h->stopping;
    if (!closing)
        h->live++;
    pthread_mutex_unlock(&h->mu);
    if (closing) {
        once__a2a_stream_free(src);
        return ONCE_ECLOSED;
    }

    int rc = ONCE_ENOMEM;
    struct MHD_Response *res = NULL;
    sse_conn *s = conn_new(h, conn, src);
    if (s != NULL)
        res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK, reader, s,
                                                on_free);
    if (res != NULL)
        rc = spawn(s);
    if (rc != ONCE_OK) {
        once__a2a_stream_free(src);        /* the stream never opened: slot back */
        if (res != NULL)
            MHD_destroy_response(res);    /* on_free: the response's reference */
        else if (s != NULL)
            release(s);
        if (s != NULL)
            release(s);                   /* the producer's reference */
        pthread_mutex_lock(&h->mu);
        h->live--;
        pthread_cond_broadcast(&h->idle);
        pthread_mutex_unlock(&h->mu);
        return rc;
    }
    MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(res, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(res, "X-Accel-Buffering", "no");
    if (resp->replayed)
        MHD_add_response_header(res, "Idempotent-Replayed", "true");
    if (resp->extension)
        MHD_add_response_header(res, "A2A-Extensions", ONCE_A2A_EXTENSION_URI);
    if (decorate != NULL)
        decorate(res);
    cap_send_buffer(h, conn);
    /* If queueing fails the response dies here, on_free marks the stream
     * closed and the producer ends by itself. */
    *ret = MHD_queue_response(conn, MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    return ONCE_OK;
}

unsigned once__sse_open(once__sse *h)
{
    pthread_mutex_lock(&h->mu);
    int n = h->live;
    pthread_mutex_unlock(&h->mu);
    return n > 0 ? (unsigned)n : 0;
}

void once__sse_stop(once__sse *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    __atomic_store_n(&h->stopping, 1, __ATOMIC_RELEASE);
    while (h->live > 0)
        once__cond_wait_ms(&h->idle, &h->mu, SLICE_MS);
    pthread_mutex_unlock(&h->mu);
}

void once__sse_free(once__sse *h)
{
    if (h == NULL)
        return;
    while (h->holders != NULL) {   /* none once every stream ended */
        holder *x = h->holders;
        h->holders = x->next;
        once_free(x);
    }
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    once_free(h);
}
