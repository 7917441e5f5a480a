/*
 * sse.c -- Server-Sent Events over libmicrohttpd for SendStreamingMessage
 * and SubscribeToTask: text/event-stream responses fed from the store.
 *
 * Design. libmicrohttpd 0.9.75 runs our epoll threads with an internal
 * polling loop; a content-reader callback that returns 0 there is called
 * again at once (a busy loop) unless it suspends the connection first, and
 * a callback that blocks stalls every connection of its thread. So each
 * stream is two halves around one capped byte buffer:
 *   - the pump reads the task's events through the codec cursor
 *     (once__a2a_stream: store reads after the last generation it
 *     produced), appends whole SSE frames to the buffer, or a ": ping"
 *     comment after ping_ms without bytes, and returns: it never waits;
 *   - the reader, MHD's callback on its own thread, copies bytes out of the
 *     buffer; when the buffer is empty it suspends the connection (the only
 *     place libmicrohttpd allows that besides the access handler) and
 *     returns 0; whoever appends resumes it.
 * Suspend and resume happen under the stream's mutex and are recorded in
 * `suspended`, so a resume always follows its suspend (resuming a running
 * connection is undefined in libmicrohttpd).
 *
 * Threads do not grow with streams. A hub (one per server) runs
 * PUMP_WORKERS workers and one watcher:
 *   - a stream is due when something may have changed for it; due streams
 *     wait on the run queue (each at most once) and a worker pumps one at a
 *     time; a stream that produced bytes goes to the back of the queue, so
 *     a busy task cannot starve an idle one;
 *   - this replica's writes make a stream due at once: the stream watches
 *     its task (once__a2a_stream_watch -> once__engine_watch_add), and the
 *     engine calls it back, under its lock, from the writing thread;
 *   - other replicas' writes make it due too when the store's change feed
 *     tells of them (the same watch: engine/feed.c); a caught-up stream
 *     then sits in the watcher's timer heap until its ping only. Without
 *     a feed up (once__a2a_stream_poll_ms), they are found by polling: a
 *     caught-up stream sits there until the next poll tick (POLL_MS, one
 *     store read per stream per tick) or its ping, whichever comes first;
 *     ticks are aligned, so one wake-up of the watcher makes every idle
 *     stream due together. The feed going up or down calls every watch,
 *     so each stream reads once and parks by the new rule;
 *   - a client that hangs up is seen at once: the socket of every suspended
 *     connection is in the watcher's epoll set (EPOLLRDHUP, one shot), and
 *     the watcher marks the stream gone and due; the pump ends it and gives
 *     its slot back. A running connection is MHD's to watch: a failed send
 *     closes it and on_free makes the stream due.
 * A stream's scheduling `state` moves QUEUED -> RUNNING -> (QUEUED |
 * TIMED | ROOM | DONE) under the hub's lock; a wake-up that arrives while
 * it runs sets `again`, and the worker queues it once more instead of
 * parking it, so no wake-up is lost between a read that found nothing and
 * the parking.
 *
 * Bounded memory: the pump reads only while the buffer holds at most
 * cap/2 bytes, and sizes each read (in events) to the room left, so a slow
 * consumer costs at most about cap plus one event per stream; what it has
 * not taken stays in the store and is read again when it catches up. A
 * stream whose buffer is fuller parks in ROOM until the reader drains it
 * below cap/2. The buffer is freed whenever the reader empties it, so an
 * idle stream holds no buffer at all. The socket's kernel send buffer is
 * fixed at the cap as well (autotuning would let each slow stream park
 * megabytes in the kernel). A consumer that stops reading altogether is
 * cut by MHD's idle timeout. Streams are bounded by the stream slots
 * (max_streams): the codec takes a slot before it opens a stream and the
 * cursor gives it back when the stream ends. A principal holds at most its
 * share of them (max_streams_per_principal), counted here per principal
 * under the hub's lock, so one tenant's subscriptions cannot refuse every
 * other tenant's stream.
 *
 * End of a stream: the cursor says when it produced the last frame (a
 * terminal or interrupted status, a Message); the pump then marks EOF,
 * and the reader answers END_OF_STREAM once the buffer is drained. A store
 * that keeps failing (5 s) ends it with a JSON-RPC error frame; the client
 * resumes by Last-Event-ID. An ended stream leaves the hub's structures at
 * once (slot given back, `live` counted down); its memory is released by
 * the watcher at the top of its next round, after the epoll events it may
 * still hold for the stream's socket have been handled (the socket left
 * the epoll set before the connection was resumed, so no later round can
 * name it).
 *
 * Other transports (the gRPC binding) feed their streams from the same hub
 * through a sink (once__sse_attach): the pump hands each batch of whole
 * frames to the sink's put instead of the byte buffer, asks the sink how
 * much it holds unsent instead of the buffer's fill, and sends no pings
 * (HTTP/2 has its own); the transport says when it has room again
 * (once__sse_feed_room) and when its peer left (once__sse_feed_gone). The
 * frames are HTTP+JSON's, so the sink reads what an SSE client would:
 * data lines (a StreamResponse, or an AIP-193 error object), the shutdown
 * event.
 *
 * Shutdown (once__sse_stop): every stream is made due; the pump sees
 * `stopping`, queues the shutdown frame, marks EOF and resumes the
 * connection; the stop waits until no stream is live, then ends the
 * threads, so no connection stays suspended when MHD_stop_daemon runs.
 *
 * Locks, outermost first: the engine's (its watch callback), a stream's mu
 * (MHD's reader holds it), the hub's mu. Nothing is called on the engine
 * or the codec with either of ours held.
 */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/grow.h"
#include "core/heap.h"
#include "core/str.h"
#include "core/condwait.h"
#include "http/reqlog.h"
#include "http/sse.h"
#include "once/once.h"

#define READ_BLOCK 1024          /* MHD's scratch size for callback content */
#define PUMP_WORKERS 4           /* threads that pump due streams */
#define POLL_MS 50               /* a caught-up stream reads the store this often */
#define EPOLL_BATCH 64
#define MAX_BATCH 64             /* events per store read */
#define BUF_FIRST 1024           /* a buffer's first size (grows up to the cap) */
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

typedef struct once__sse_feed sse_conn;

/* A stream's place in the hub (sse_conn.state, under the hub's mu). */
enum {
    S_QUEUED,   /* on the run queue */
    S_RUNNING,  /* a worker pumps it */
    S_TIMED,    /* caught up: in the timer heap until its poll, ping or retry */
    S_ROOM,     /* its buffer is full: waits for the reader to drain it */
    S_DONE      /* ended: on the reap list */
};

/* What a pump asks for next. */
enum { P_AGAIN, P_TIMED, P_ROOM, P_END };

/* The hub. `slots` (but its atomic `used`), `cap`, `ping_ms`, `epfd`,
 * `evfd` and the threads are fixed at creation; every other field is under
 * mu, and `stopping` (set once) is also read with __atomic loads. */
struct once__sse {
    pthread_mutex_t mu;
    pthread_cond_t idle;          /* `live` went down */
    pthread_cond_t work;          /* a stream was queued, or quit */
    int live;                     /* streams started and not ended */
    int stopping;
    int quit;                     /* the threads end */
    holder *holders;
    once__a2a_stream_slots slots;
    size_t cap;
    int64_t ping_ms;
    sse_conn *all;                /* every stream not yet reaped (anext/aprev) */
    sse_conn *qhead, *qtail;      /* the run queue (qnext) */
    sse_conn *reap;               /* ended, for the watcher to release (qnext) */
    once__heap heap;              /* S_TIMED streams, by when they are due (timer.key) */
    int watcher_asleep;
    int64_t watcher_wake;         /* while asleep: when it wakes by itself */
    int epfd, evfd;
    pthread_t workers[PUMP_WORKERS];
    int nworkers;
    pthread_t watcher;
    int watcher_started;
};

/*
 * One stream. The pump's fields (src, watch, avg, last, failing) belong to
 * the worker that pumps it: one at a time, handed over under the hub's mu.
 * state, again, timer and the links are under the hub's mu. The
 * rest is under the stream's mu: the buffer buf[off..len) (pump appends,
 * reader takes), `eof` (nothing more will be appended), `suspended` (set by
 * the reader when it suspends, cleared by whoever resumes), `polled` (the
 * socket is in the epoll set: only while suspended), `closed` (MHD released
 * the response: the connection is gone), `gone` (the client hung up),
 * `want_room` (the pump waits for the buffer to drain) and `refs` (the hub
 * and the response each hold one; the last release frees). `fd` is the
 * connection's socket, used only while suspended (MHD neither uses nor
 * closes it then).
 */
struct once__sse_feed {
    once__sse *hub;
    const once__sse_sink *sink;   /* another transport's stream; NULL: MHD's */
    void *sink_arg;
    struct MHD_Connection *conn;
    int fd;
    once__a2a_stream *src;
    void *watch;
    size_t avg;                   /* running mean frame size: sizes the next read */
    int64_t last;                 /* monotonic ms of the last bytes queued */
    int64_t failing;              /* since when the store fails (0: it does not) */
    int state, again;
    int told;                     /* under the hub's mu: something may have changed
                                   * since its pump last read (a read is due) */
    once__heap_node timer;        /* key: when it is due (S_TIMED) */
    sse_conn *qnext, *anext, *aprev;
    pthread_mutex_t mu;
    char *buf;
    size_t off, len, size;
    int eof, suspended, polled, closed, gone, want_room, refs;
};

static int stopping(const once__sse *h)
{
    return __atomic_load_n(&h->stopping, __ATOMIC_ACQUIRE);
}

/* --- the timer heap (caller holds h->mu; core/heap.h) ----------------------- */

#define CONN_OF(node) ((sse_conn *)(void *)((char *)(node) - offsetof(sse_conn, timer)))

static int heap_add(once__sse *h, sse_conn *s)
{
    return once__heap_add(&h->heap, &s->timer);
}

static void heap_remove(once__sse *h, sse_conn *s)
{
    once__heap_remove(&h->heap, &s->timer);
}

/* --- scheduling (caller holds h->mu) ----------------------------------------- */

static void kick_watcher(once__sse *h)
{
    uint64_t one = 1;
    ssize_t n = write(h->evfd, &one, sizeof one);
    (void)n;   /* full (EAGAIN): a wake-up is pending anyway */
}

static void enqueue(once__sse *h, sse_conn *s)
{
    s->state = S_QUEUED;
    s->qnext = NULL;
    if (h->qtail != NULL)
        h->qtail->qnext = s;
    else
        h->qhead = s;
    h->qtail = s;
    pthread_cond_signal(&h->work);
}

/* Something may have changed for s: pump it soon. */
static void due_now(once__sse *h, sse_conn *s)
{
    s->told = 1;
    switch (s->state) {
    case S_RUNNING:
        s->again = 1;   /* its worker queues it again instead of parking it */
        break;
    case S_TIMED:
        heap_remove(h, s);
        enqueue(h, s);
        break;
    case S_ROOM:
        enqueue(h, s);
        break;
    default:            /* queued already, or ended */
        break;
    }
}

static void schedule(sse_conn *s)
{
    once__sse *h = s->hub;
    pthread_mutex_lock(&h->mu);
    due_now(h, s);
    pthread_mutex_unlock(&h->mu);
}

/* The engine's watch callback: this replica wrote to the stream's task. */
static void on_write(void *arg)
{
    schedule(arg);
}

/* --- the buffer and the socket (caller holds s->mu) --------------------------- */

static int append(sse_conn *s, const char *p, size_t n)
{
    if (s->off > 0 && s->len + n > s->size) {
        memmove(s->buf, s->buf + s->off, s->len - s->off);
        s->len -= s->off;
        s->off = 0;
    }
    /* Doubling up to the cap; past it only for one event larger than the
     * cap itself. */
    size_t size = once__grow_size(s->size, s->len + n, BUF_FIRST, s->hub->cap);
    if (once__grow_to(&s->buf, &s->size, size) != ONCE_OK)
        return ONCE_ENOMEM;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return ONCE_OK;
}

/* Put the suspended connection's socket in the watcher's epoll set, for
 * the peer's hang-up. Best effort: without it a hang-up is seen when the
 * next ping fails to go out. */
static void poll_socket(sse_conn *s)
{
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.ptr = s};
    int op = s->polled ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (s->fd >= 0 && epoll_ctl(s->hub->epfd, op, s->fd, &ev) == 0)
        s->polled = 1;
}

/* Let MHD call the reader again if it is waiting for bytes. The socket
 * leaves the epoll set first: once resumed, MHD may close it. */
static void wake(sse_conn *s)
{
    if (!s->suspended)
        return;
    s->suspended = 0;
    if (s->polled) {
        (void)epoll_ctl(s->hub->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->polled = 0;
    }
    MHD_resume_connection(s->conn);
}

/* 1 if the peer hung up (or half-closed: that counts as leaving, as it
 * does for MHD) or the socket failed. */
static int peer_left(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void release(sse_conn *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
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
        if (s->off == s->len) {   /* drained: an idle stream holds no buffer */
            once_free(s->buf);
            s->buf = NULL;
            s->off = s->len = s->size = 0;
        }
        if (s->want_room && s->len - s->off <= s->hub->cap / 2) {
            s->want_room = 0;
            schedule(s);
        }
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->eof) {
        pthread_mutex_unlock(&s->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    MHD_suspend_connection(s->conn);
    s->suspended = 1;
    poll_socket(s);
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
    pthread_mutex_unlock(&s->mu);
    schedule(s);   /* ends it now: the slot comes back */
    release(s);
}

/* --- the pump (a worker) ------------------------------------------------------ */

/* Queue text (may be NULL) and, if last, the end of the stream. */
static void push(sse_conn *s, const char *text, size_t n, int last)
{
    if (s->sink != NULL) {   /* the transport takes it; nothing after the end */
        pthread_mutex_lock(&s->mu);
        int ended = s->eof;
        s->eof |= last;
        pthread_mutex_unlock(&s->mu);
        if (!ended)
            s->sink->put(s->sink_arg, text, n, last);
        return;
    }
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

/* A store that cannot answer right now (ESTORE / EBUSY) is retried for a
 * while before the stream ends with an error frame: a busy moment should
 * not cost every client a reconnect. 1 with *due set: try again then. */
static int retry_at(sse_conn *s, int rc, int64_t now, int64_t *due)
{
    if (rc != ONCE_ESTORE && rc != ONCE_EBUSY)
        return 0;
    if (s->failing == 0)
        s->failing = now;
    if (now - s->failing >= RETRY_FOR_MS)
        return 0;
    *due = now + RETRY_PAUSE_MS;
    return 1;
}

/* When a caught-up stream is due again: its ping, or the next poll tick
 * first while it must poll (no watch, or one not told of other replicas'
 * writes). */
static int64_t idle_due(const sse_conn *s, int64_t now)
{
    int64_t ping = s->last + s->hub->ping_ms;
    if (once__a2a_stream_poll_ms(s->src, s->watch, POLL_MS) == 0)
        return ping;
    int64_t tick = (now / POLL_MS + 1) * POLL_MS;
    return ping < tick ? ping : tick;
}

/* The stream's room: its buffer's fill, or (size_t)-1 when it must end
 * (*why: 1 closed or gone, 2 stopping). A fill past cap/2 asks the reader
 * for room. */
static size_t room(sse_conn *s, int *why)
{
    size_t held = s->sink != NULL ? s->sink->fill(s->sink_arg) : 0;
    pthread_mutex_lock(&s->mu);
    size_t fill = s->sink != NULL ? held : s->len - s->off;
    *why = s->closed || s->gone ? 1 : stopping(s->hub) ? 2 : 0;
    if (*why == 0 && fill > s->hub->cap / 2)
        s->want_room = 1;
    pthread_mutex_unlock(&s->mu);
    return *why ? (size_t)-1 : fill;
}

/* The ping after ping_ms without bytes, unless bytes wait to go out. */
static void ping(sse_conn *s, int64_t now)
{
    s->last = now;
    if (s->sink != NULL)
        return;   /* HTTP/2 keeps its connections alive itself */
    pthread_mutex_lock(&s->mu);
    if (s->len == s->off && append(s, PING_FRAME, sizeof PING_FRAME - 1) == ONCE_OK)
        wake(s);
    pthread_mutex_unlock(&s->mu);
}

/* Pump s once: read what the cursor has (as much as the buffer has room
 * for), or ping; never waits. A stream nothing was told of since its last
 * read, that is told of every write (once__a2a_stream_poll_ms 0), is due
 * only for its ping: it pings without a read, so an idle stream costs the
 * store nothing. Returns what s needs next (P_TIMED: *due). */
static int pump(sse_conn *s, int told, int64_t *due)
{
    once__sse *h = s->hub;
    int why;
    size_t fill = room(s, &why);
    if (why != 0) {
        /* Stopping: the shutdown frame, unless the client is gone. A
         * client that left gets EOF: resumed, MHD closes it. */
        if (why == 2)
            push(s, SHUTDOWN_FRAME, sizeof SHUTDOWN_FRAME - 1, 1);
        else
            push(s, NULL, 0, 1);
        return P_END;
    }
    if (fill > h->cap / 2)
        return P_ROOM;
    size_t max = (h->cap - fill) / s->avg;
    max = max < 1 ? 1 : max > MAX_BATCH ? MAX_BATCH : max;
    char *t = NULL;
    size_t n = 0;
    int done = 0;
    int rc = ONCE_OK;
    if (told || s->failing || once__a2a_stream_poll_ms(s->src, s->watch, POLL_MS) > 0)
        rc = once__a2a_stream_read(s->src, max, &t, &n, &done);
    int64_t now = once_monotonic_ms();
    if (n > 0) {
        push(s, t, n, done);
        s->avg = (s->avg + n / frames(t, n) + 1) / 2;
        s->last = now;
    }
    once_free(t);
    if (done) {
        push(s, NULL, 0, 1);
        return P_END;
    }
    if (rc == ONCE_ECLOSED) {   /* the engine is going away */
        push(s, SHUTDOWN_FRAME, sizeof SHUTDOWN_FRAME - 1, 1);
        return P_END;
    }
    if (rc != ONCE_OK) {
        if (retry_at(s, rc, now, due))
            return P_TIMED;
        push_error(s, rc);
        return P_END;
    }
    s->failing = 0;
    if (n > 0)
        return P_AGAIN;
    if (now >= s->last + h->ping_ms)
        ping(s, now);
    *due = idle_due(s, now);
    return P_TIMED;
}

/* Caller holds h->mu: s ended; out of the hub's lists, onto the reap list. */
static void retire(once__sse *h, sse_conn *s)
{
    s->state = S_DONE;
    if (s->aprev != NULL)
        s->aprev->anext = s->anext;
    else
        h->all = s->anext;
    if (s->anext != NULL)
        s->anext->aprev = s->aprev;
    s->qnext = h->reap;
    if (h->reap == NULL)
        kick_watcher(h);
    h->reap = s;
    h->live--;
    pthread_cond_broadcast(&h->idle);
}

/* Caller holds h->mu: put s where its pump's answer says. */
static void park(once__sse *h, sse_conn *s, int next, int64_t due)
{
    if (next == P_END) {
        retire(h, s);
    } else if (next == P_AGAIN || s->again) {
        s->told = 1;   /* more to read, or told while it ran */
        enqueue(h, s);
    } else if (next == P_ROOM) {
        s->state = S_ROOM;
    } else {
        s->state = S_TIMED;
        s->timer.key = due;
        if (heap_add(h, s) != ONCE_OK) {
            enqueue(h, s);   /* no memory for the heap: poll at once */
            return;
        }
        if (h->watcher_asleep && due < h->watcher_wake) {
            h->watcher_wake = due;
            kick_watcher(h);
        }
    }
}

/* The end of a stream, outside every lock: no more local wake-ups, the
 * slot given back. */
static void finish(sse_conn *s)
{
    once__a2a_stream_unwatch(s->src, s->watch);
    s->watch = NULL;
    once__a2a_stream_free(s->src);
    s->src = NULL;
}

static void *worker_main(void *arg)
{
    once__sse *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (h->qhead == NULL && !h->quit)
            pthread_cond_wait(&h->work, &h->mu);
        if (h->qhead == NULL)
            break;   /* quit */
        sse_conn *s = h->qhead;
        h->qhead = s->qnext;
        if (h->qhead == NULL)
            h->qtail = NULL;
        s->state = S_RUNNING;
        s->again = 0;
        int told = s->told;
        s->told = 0;
        pthread_mutex_unlock(&h->mu);

        int64_t due = 0;
        int next = pump(s, told, &due);
        if (next == P_END)
            finish(s);

        pthread_mutex_lock(&h->mu);
        park(h, s, next, due);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* --- the watcher ---------------------------------------------------------------- */

/* An epoll event for s's socket: if the connection is still suspended and
 * its peer left, end the stream; else (a stale event) watch again. */
static void on_socket(sse_conn *s)
{
    pthread_mutex_lock(&s->mu);
    int left = s->suspended && peer_left(s->fd);
    if (left)
        s->gone = 1;
    else if (s->suspended)
        poll_socket(s);
    pthread_mutex_unlock(&s->mu);
    if (left)
        schedule(s);
}

/* Caller holds h->mu: queue every timed stream that is due by now; how
 * long until the next one (-1: none). */
static int take_due(once__sse *h, int64_t now)
{
    once__heap_node *top;
    while ((top = once__heap_top(&h->heap)) != NULL && top->key <= now) {
        sse_conn *s = CONN_OF(top);
        heap_remove(h, s);
        enqueue(h, s);
    }
    if (top == NULL)
        return -1;
    int64_t left = top->key - now;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static void reap(sse_conn *list)
{
    while (list != NULL) {
        sse_conn *s = list;
        list = s->qnext;
        release(s);   /* the hub's reference */
    }
}

static void *watcher_main(void *arg)
{
    once__sse *h = arg;
    struct epoll_event ev[EPOLL_BATCH];
    for (;;) {
        /* The events of the last round are handled: what ended since can
         * be released (its socket left the set before it ended). */
        pthread_mutex_lock(&h->mu);
        sse_conn *dead = h->reap;
        h->reap = NULL;
        int quit = h->quit;
        int64_t now = once_monotonic_ms();
        int timeout = take_due(h, now);
        h->watcher_asleep = 1;
        h->watcher_wake = timeout < 0 ? INT64_MAX : now + timeout;
        pthread_mutex_unlock(&h->mu);
        reap(dead);
        if (quit)
            return NULL;

        int n = epoll_wait(h->epfd, ev, EPOLL_BATCH, timeout);
        pthread_mutex_lock(&h->mu);
        h->watcher_asleep = 0;
        pthread_mutex_unlock(&h->mu);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == NULL) {
                uint64_t v;
                ssize_t r = read(h->evfd, &v, sizeof v);
                (void)r;
            } else {
                on_socket(ev[i].data.ptr);
            }
        }
    }
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

/* End the threads (after every stream ended) and join them. */
static void threads_stop(once__sse *h)
{
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    pthread_cond_broadcast(&h->work);
    kick_watcher(h);
    pthread_mutex_unlock(&h->mu);
    for (int i = 0; i < h->nworkers; i++)
        pthread_join(h->workers[i], NULL);
    h->nworkers = 0;
    if (h->watcher_started)
        pthread_join(h->watcher, NULL);
    h->watcher_started = 0;
}

static int threads_start(once__sse *h)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    h->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->epfd < 0 || h->evfd < 0 || epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->evfd, &ev) != 0)
        return ONCE_ENOMEM;
    if (pthread_create(&h->watcher, NULL, watcher_main, h) != 0)
        return ONCE_ENOMEM;
    h->watcher_started = 1;
    for (; h->nworkers < PUMP_WORKERS; h->nworkers++) {
        if (pthread_create(&h->workers[h->nworkers], NULL, worker_main, h) != 0)
            return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

int once__sse_new(unsigned max_streams, int share, size_t buffer_cap, int64_t ping_ms,
                  once__sse **out)
{
    *out = NULL;
    if (max_streams == 0 || buffer_cap < 1024 || ping_ms < 1)
        return ONCE_EINVAL;
    once__sse *h = once_calloc(1, sizeof *h);
    if (h == NULL)
        return ONCE_ENOMEM;
    h->epfd = h->evfd = -1;
    if (once__lock_init(&h->mu, &h->idle) != ONCE_OK) {
        once_free(h);
        return ONCE_ENOMEM;
    }
    if (pthread_cond_init(&h->work, NULL) != 0) {
        pthread_cond_destroy(&h->idle);
        pthread_mutex_destroy(&h->mu);
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
    int rc = threads_start(h);
    if (rc != ONCE_OK) {
        once__sse_free(h);
        return rc;
    }
    *out = h;
    return ONCE_OK;
}

once__a2a_stream_slots *once__sse_slots(once__sse *h)
{
    return &h->slots;
}

/* The connection's socket, or -1. */
static int socket_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci != NULL ? ci->connect_fd : -1;
}

/* The kernel's send buffer counts too: left to autotuning, a stream to a
 * client that does not read parks up to tcp_wmem[2] (4 MiB) per socket.
 * Fixing it at the buffer cap keeps each slow stream at about twice the
 * cap in all, and makes the pump wait instead. Best effort. */
static void cap_send_buffer(const once__sse *h, int fd)
{
    if (fd < 0)
        return;
    int size = h->cap > (size_t)(1 << 30) ? 1 << 30 : (int)h->cap;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
}

static sse_conn *conn_new(once__sse *h, struct MHD_Connection *conn, once__a2a_stream *src)
{
    sse_conn *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        once_free(s);
        return NULL;
    }
    s->hub = h;
    s->conn = conn;
    s->fd = conn != NULL ? socket_of(conn) : -1;
    s->src = src;
    s->avg = h->cap / 4;
    s->told = 1;   /* its first pump reads */
    s->last = once_monotonic_ms();
    s->refs = 2;
    return s;
}

/* Caller holds h->mu: a new stream joins the hub, due at once. */
static void join(once__sse *h, sse_conn *s)
{
    s->anext = h->all;
    if (h->all != NULL)
        h->all->aprev = s;
    h->all = s;
    enqueue(h, s);
}

/* A stream's slot, taken before its connection exists so that a stop waits
 * for it: 0 when the hub is stopping. */
static int slot_take(once__sse *h)
{
    pthread_mutex_lock(&h->mu);
    int ok = !h->stopping;
    if (ok)
        h->live++;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* The slot of a stream that never opened, back. */
static void slot_give(once__sse *h)
{
    pthread_mutex_lock(&h->mu);
    h->live--;
    pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
}

int once__sse_start(once__sse *h, struct MHD_Connection *conn, once__a2a_response *resp,
                    void (*decorate)(struct MHD_Response *), enum MHD_Result *ret)
{
    once__a2a_stream *src = resp->stream;
    resp->stream = NULL;
    *ret = MHD_NO;
    if (!slot_take(h)) {
        once__a2a_stream_free(src);
        return ONCE_ECLOSED;
    }

    struct MHD_Response *res = NULL;
    sse_conn *s = conn_new(h, conn, src);
    if (s != NULL)
        res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, READ_BLOCK, reader, s,
                                                on_free);
    if (res == NULL) {
        once__a2a_stream_free(src);        /* the stream never opened: slot back */
        if (s != NULL) {
            pthread_mutex_destroy(&s->mu);
            once_free(s);
        }
        slot_give(h);
        return ONCE_ENOMEM;
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
    cap_send_buffer(h, s->fd);
    /* Watch before the first read, so no local write falls between. No
     * watch (no memory, the engine stopping): the stream polls, and a
     * stopping engine ends it at its first read. */
    (void)once__a2a_stream_watch(src, on_write, s, &s->watch);
    pthread_mutex_lock(&h->mu);
    join(h, s);
    pthread_mutex_unlock(&h->mu);
    /* If queueing fails the response dies here, on_free marks the stream
     * closed and its pump ends it. */
    *ret = once__http_queue(conn, MHD_HTTP_OK, res);
    MHD_destroy_response(res);
    return ONCE_OK;
}

int once__sse_attach(once__sse *h, once__a2a_response *resp, const once__sse_sink *sink,
                     void *arg, once__sse_feed **out)
{
    once__a2a_stream *src = resp->stream;
    resp->stream = NULL;
    *out = NULL;
    if (!slot_take(h)) {
        once__a2a_stream_free(src);
        return ONCE_ECLOSED;
    }
    sse_conn *s = conn_new(h, NULL, src);
    if (s == NULL) {
        once__a2a_stream_free(src);   /* the stream never opened: slot back */
        slot_give(h);
        return ONCE_ENOMEM;
    }
    s->sink = sink;
    s->sink_arg = arg;
    (void)once__a2a_stream_watch(src, on_write, s, &s->watch);   /* as once__sse_start */
    pthread_mutex_lock(&h->mu);
    join(h, s);
    pthread_mutex_unlock(&h->mu);
    *out = s;
    return ONCE_OK;
}

void once__sse_feed_room(once__sse_feed *s)
{
    pthread_mutex_lock(&s->mu);
    int wanted = s->want_room;
    s->want_room = 0;
    pthread_mutex_unlock(&s->mu);
    if (wanted)
        schedule(s);
}

void once__sse_feed_gone(once__sse_feed *s)
{
    pthread_mutex_lock(&s->mu);
    s->gone = 1;
    pthread_mutex_unlock(&s->mu);
    schedule(s);
}

void once__sse_feed_release(once__sse_feed *s)
{
    if (s != NULL)
        release(s);
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
    for (sse_conn *s = h->all; s != NULL; s = s->anext)
        due_now(h, s);
    while (h->live > 0)
        pthread_cond_wait(&h->idle, &h->mu);
    pthread_mutex_unlock(&h->mu);
    threads_stop(h);
}

void once__sse_free(once__sse *h)
{
    if (h == NULL)
        return;
    threads_stop(h);   /* none left after once__sse_stop */
    while (h->holders != NULL) {   /* none once every stream ended */
        holder *x = h->holders;
        h->holders = x->next;
        once_free(x);
    }
    if (h->epfd >= 0)
        close(h->epfd);
    if (h->evfd >= 0)
        close(h->evfd);
    once__heap_clear(&h->heap);
    pthread_cond_destroy(&h->work);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    once_free(h);
}
