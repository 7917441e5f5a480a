/*
 * h2_int.h -- the gRPC transport's own structures (internal to src/grpc):
 * the server, its loop threads, their connections and the calls on them.
 *
 * Ownership. A loop thread owns its connections (socket, TLS session,
 * nghttp2 session, output buffer, timers) and the loop-only fields of the
 * calls on them; nothing else reads them. The server's registry of all
 * connections (for the connection limits) is under once__h2.mu. A call's
 * answer (initial metadata, queued output, trailers, gone/finished) is
 * under the call's mutex: workers write it, the loop reads it when it is
 * woken (the loop's kick list, under kick_mu, then the eventfd). Lock
 * order: a call's mu, then its loop's kick_mu; the registry's mu is never
 * held with either.
 */
#ifndef ONCE_GRPC_H2_INT_H
#define ONCE_GRPC_H2_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/socket.h>

#ifdef ONCE_HAVE_TLS
#include <gnutls/gnutls.h>
#endif
#include <nghttp2/nghttp2.h>

#include "core/list.h"
#include "grpc/h2.h"
#include "once/once.h"

typedef struct once__h2_conn once__h2_conn;
typedef struct once__h2_loop once__h2_loop;

/* A request header, or a response header or trailer to send. */
typedef struct once__h2_kv {
    char *name, *value;
} once__h2_kv;

struct once__h2_call {
    once__link link;          /* first: the connection's open calls (loop) */
    atomic_int refs;
    once__h2 *srv;

    /* The request: written by the loop until on_call, read-only after. */
    char *path;
    once__h2_kv *md;
    size_t nmd, mdcap;
    uint8_t *rx;              /* framed request bytes; the message is rx+5 */
    size_t rx_len, rx_cap;
    char peer[64];
    int64_t deadline_ms;

    /* Loop-only while the stream is open. */
    once__h2_conn *conn;
    int32_t id;
    int64_t began_ms;
    size_t hdr_bytes;         /* header list size so far (RFC 9113 6.5.2) */
    char *method, *ctype, *encoding;
    int nmsgs;                /* prefixes seen */
    int rx_done;              /* no more request bytes wanted (on_call
                                 made, or answered with an error) */
    int handed;               /* on_call made */
    int submitted;            /* the response is with nghttp2 */
    int deferred;             /* the data provider said DEFERRED */

    /* The answer, under mu. */
    pthread_mutex_t mu;
    once__h2_loop *loop;      /* non-NULL while the stream is open */
    int kicked;               /* on the loop's kick list */
    int gone;                 /* no more answers taken */
    int finished;             /* trailers set */
    int gone_told;
    int want_room;            /* send said "wait": on_room below cap/2 */
    int http_status;          /* non-gRPC answer (415, 405): only :status */
    once__h2_kv *hdrs;        /* initial metadata */
    size_t nhdrs;
    int hdrs_set;
    uint8_t *out;             /* framed messages [out_off, out_len) */
    size_t out_off, out_len, out_cap;
    once__h2_kv *trl;         /* trailers */
    size_t ntrl;

    /* The handler's: set once (on_call), freed with the call. */
    void *data;
    void (*free_data)(void *data);
};

struct once__h2_conn {
    once__link link;          /* first: the loop's connections */
    once__h2_loop *loop;
    int fd;
    char peer[64];            /* "ip:port" */
    char ip[48];              /* the per-address key */
    struct gnutls_session_int *tls;   /* a gnutls_session_t; NULL: h2c */
    int ready;                /* handshake done, ALPN checked */
    nghttp2_session *ng;
    size_t preface_seen;      /* client preface bytes checked so far */
    int close_after_flush;    /* an HTTP/1.1 refusal is going out */
    int ev_out;               /* EPOLLOUT in the interest set */
    int again;                /* TLS holds decrypted bytes not yet read */
    uint8_t *out;             /* bytes for the socket [out_off, out_len) */
    size_t out_off, out_len, out_cap;
    size_t tls_try;           /* the size of a gnutls_record_send to repeat */
    int64_t accepted_ms, idle_since, data_mark, sock_mark;
    unsigned nstreams;
    once__list calls;         /* open streams' calls, oldest first */
    /* Floods: counters of the current window. */
    int64_t win_start;
    unsigned resets, control;
    size_t block_bytes;       /* decoded bytes of the header block coming in */
    int in_block;
    const char *abuse;        /* why it is being closed, for the log */
    int dead;                 /* closed; freed at the end of the loop's round */
    /* Registry, under srv->mu. */
    once__link rlink;
    int busy;                 /* has open streams */
    int64_t ridle_since;
    int shut;                 /* shutdown(2) by an eviction */
};

struct once__h2_loop {
    once__h2 *srv;
    pthread_t thread;
    int epfd, evfd;
    pthread_mutex_t kick_mu;
    once__h2_call **kicks;    /* under kick_mu; one reference each */
    size_t nkicks, kcap;
    once__list conns;         /* loop-only */
    once__list dead;          /* closed this round: an event of the same
                                 epoll batch may still name them */
    char tag_listen, tag_event;  /* epoll data for the two descriptors */
};

struct once__h2 {
    once__h2_config cfg;      /* resolved; read-only after start */
    char *host, *priority;
    once__h2_handler h;
    int lfd, port;
    struct gnutls_certificate_credentials_st *cred;   /* TLS (h2_tls.c) */
    struct gnutls_priority_st *prio;
    nghttp2_session_callbacks *cbs;
    nghttp2_option *opt;
    once__h2_loop *loops;
    unsigned nloops;
    atomic_int stopping;
    atomic_uint next_loop;
    pthread_mutex_t mu;       /* the registry */
    once__list reg;           /* every connection, oldest first (rlink) */
    unsigned nlive;           /* registered and not shut */
};

#define ONCE__H2_CONN_OF_RLINK(l) ((once__h2_conn *)((char *)(l) - offsetof(once__h2_conn, rlink)))

/* h2_tls.c: the listener's TLS, GnuTLS's types named by their struct
 * tags (a build without TLS has no GnuTLS headers). init: the server's
 * credentials and priority string (ONCE_OK; ONCE_EINVAL, ONCE_ENOMEM, and
 * ONCE_EUNSUPPORTED without TLS, err saying why); free: theirs (NULL ok).
 * Per connection (loop thread): setup a session on c's socket (0, -1);
 * handshake 1 done with h2 negotiated, 0 again (*want_write: GnuTLS waits
 * to write), -1 failed; recv and send as h2.c's raw_recv and raw_send;
 * end frees the session. */
int once__h2_tls_init(once__h2 *s, char *err, size_t errlen);
void once__h2_tls_free(once__h2 *s);
int once__h2_tls_setup(once__h2 *s, once__h2_conn *c);
int once__h2_tls_handshake(once__h2_conn *c, int *want_write);
ssize_t once__h2_tls_recv(once__h2_conn *c, uint8_t *buf, size_t n);
ssize_t once__h2_tls_send(once__h2_conn *c, const uint8_t *buf, size_t n);
void once__h2_tls_end(once__h2_conn *c);

/* h2_session.c: the nghttp2 side of a connection (loop thread). */
int once__h2s_callbacks(nghttp2_session_callbacks **out);
/* A new server session for c, its SETTINGS queued. ONCE_OK or ONCE_ENOMEM. */
int once__h2s_open(once__h2_conn *c);
/* Hand the call's answer to nghttp2 (submit or resume). */
void once__h2s_service(once__h2_call *call);
/* Timers for the calls of c at now: request timeouts and deadlines. */
void once__h2s_sweep(once__h2_conn *c, int64_t now);
/* 1 when a call of c has output queued that nghttp2 has not taken. */
int once__h2s_pending(once__h2_conn *c);
/* The calls of c end with their connection: each told on_gone as due. */
void once__h2s_detach_all(once__h2_conn *c);
/* Count a frame against c's flood budgets; 0, or 1 when past one (the
 * session is then being terminated with ENHANCE_YOUR_CALM). */
int once__h2s_flood(once__h2_conn *c, const nghttp2_frame_hd *hd, int64_t now);

/* h2_call.c */
once__h2_call *once__h2_call_new(once__h2 *srv, once__h2_conn *c, int32_t id);
/* Detach from the closed stream (loop thread): 1 when the handler is to be
 * told on_gone. */
int once__h2_call_detach(once__h2_call *call);
/* The transport's own finish (loop thread): like once__h2_call_finish, and
 * gone; queued output dropped when drop. 1 when the handler is to be told
 * on_gone. */
int once__h2_call_end(once__h2_call *call, int status, const char *message, int drop);
/* Append a metadata entry (repeated names joined with ","). */
int once__h2_call_md_add(once__h2_call *call, const char *name, size_t nlen, const char *value,
                         size_t vlen);
/* Take up to len queued bytes into buf (the data provider). */
ssize_t once__h2_call_take(once__h2_call *call, uint8_t *buf, size_t len, uint32_t *flags,
                           int *room);
void once__h2_kv_free(once__h2_kv *kv, size_t n);
/* Grow the byte buffer (*buf, *cap) to hold need bytes (doubling). */
int once__h2_reserve(uint8_t **buf, size_t *cap, size_t need);
/* nghttp2's view of kv[0..n) after the given leading pairs, into nv (cap
 * entries); returns the count. */
size_t once__h2_nv(nghttp2_nv *nv, size_t cap, const once__h2_kv *kv, size_t n);

/* h2.c: flush c's output (loop thread); -1 when the connection must close. */
int once__h2_conn_flush(once__h2_conn *c);
/* Registry: c has open streams or not (loop thread). */
void once__h2_conn_busy(once__h2_conn *c, int busy);
/* Log why c is being closed (warn). */
void once__h2_conn_log(once__h2_conn *c, const char *why);

#endif /* ONCE_GRPC_H2_INT_H */
