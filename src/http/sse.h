/*
 * sse.h -- Server-Sent Events for the streaming A2A methods (internal to
 * src/http): one hub per server, whose few threads (a pool of pumps and a
 * watcher: sse.c) feed every open stream; threads do not grow with streams.
 */
#ifndef ONCE_HTTP_SSE_H
#define ONCE_HTTP_SSE_H

#include <microhttpd.h>

#include "a2a/a2a.h"

typedef struct once__sse once__sse;

/* max_streams >= 1, buffer_cap >= 1024 bytes, ping_ms >= 1. Starts the
 * hub's threads (ONCE_ENOMEM if it cannot). share: the
 * streams one principal may hold (0: no share; ONCE__SHARE_QUARTER: a
 * quarter of max_streams); past it its stream calls get 503
 * TOO_MANY_STREAMS while other principals still get slots. */
int once__sse_new(unsigned max_streams, int share, size_t buffer_cap, int64_t ping_ms,
                  once__sse **out);

/* The stream budget the codec takes a unit of for every stream it opens
 * (once__a2a_request.slots). Lives as long as the hub. */
once__a2a_stream_slots *once__sse_slots(once__sse *h);

/* Answer resp (a successful streaming call: resp->stream set) on conn, from
 * the MHD access handler: queue a text/event-stream response and start its
 * feed; decorate (NULL: none) adds the caller's headers (CORS) to the
 * response. The cursor is taken from resp in every case. ONCE_OK with
 * *ret = MHD's answer; ONCE_ECLOSED (stopping) or ONCE_ENOMEM: nothing
 * was queued and the caller answers with an error (the
 * send behind the stream is already applied; the client's retry replays). */
int once__sse_start(once__sse *h, struct MHD_Connection *conn, once__a2a_response *resp,
                    void (*decorate)(struct MHD_Response *), enum MHD_Result *ret);

/* Streams open now (a gauge for /metrics). */
/* Another transport's stream (the gRPC binding) fed by the hub: resp's
 * stream (taken, set NULL) is pumped as an SSE one, and each batch of whole
 * frames (HTTP+JSON's: "id:" and "data:" lines, the shutdown event; never
 * a ping) goes to sink->put. `last` is 1 on the final call (the frames then
 * end with the stream's last event, its error frame, or the shutdown
 * event; they may be none: the peer left). put and fill run on a hub
 * worker, one at a time per stream, and must not block; fill says how many
 * bytes the transport holds unsent: past half the hub's buffer cap the
 * pump waits until once__sse_feed_room. ONCE_OK with *out (the transport's
 * reference, dropped with once__sse_feed_release after the last put or
 * after once__sse_feed_gone), ONCE_ECLOSED (stopping) or ONCE_ENOMEM; on
 * failure the stream is freed and put is never called. */
typedef struct once__sse_sink {
    void (*put)(void *arg, const char *frames, size_t n, int last);
    size_t (*fill)(void *arg);
} once__sse_sink;
typedef struct once__sse_feed once__sse_feed;
int once__sse_attach(once__sse *h, once__a2a_response *resp, const once__sse_sink *sink,
                     void *arg, once__sse_feed **out);
/* The transport's unsent bytes fell below half the cap: pump again. */
void once__sse_feed_room(once__sse_feed *f);
/* The transport's peer left (reset, closed, deadline): end the stream; a
 * last put follows. */
void once__sse_feed_gone(once__sse_feed *f);
void once__sse_feed_release(once__sse_feed *f);   /* NULL ok */

unsigned once__sse_open(once__sse *h);

/* End every stream (each gets the shutdown frame and EOF after what it
 * already queued) and wait until every one has resumed its connection and
 * ended, then end the hub's threads. After this, once__sse_start refuses.
 * Call before MHD_stop_daemon. */
void once__sse_stop(once__sse *h);

/* Free the hub; after once__sse_stop and MHD_stop_daemon (or with no stream
 * ever started). NULL ok. */
void once__sse_free(once__sse *h);

#endif /* ONCE_HTTP_SSE_H */
