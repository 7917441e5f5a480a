/*
 * load.h -- what grpc_load's event loop (tests/tools/grpc_load.c) and its
 * two bindings (grpc.c: gRPC over h2c with libnghttp2; jsonrpc.c: JSON-RPC
 * over HTTP/1.1 keep-alive) share. The loop owns the sockets, the clock,
 * the timers, the IDs and the counters; a binding only turns a call into
 * bytes (start) and bytes into a verdict (input), so that the two rows of
 * bench/grpc.sh differ in framing and in nothing else.
 *
 * Invariants: one call in flight per connection (closed loop); a binding's
 * state lives from open (after the TCP connect) to close; every byte a
 * binding wants sent goes through load_out, and the loop sends it.
 */
#ifndef ONCE_TOOLS_GRPC_LOAD_H
#define ONCE_TOOLS_GRPC_LOAD_H

#include <stddef.h>
#include <stdint.h>

/* A call's verdict; PENDING while its answer is incomplete. */
enum { CALL_PENDING = -1, CALL_OK, CALL_STATUS, CALL_ANSWER, CALL_TRANSPORT };

/* One connection. The loop thread that owns it is the only one to touch
 * it; the binding reads id, idlen and n, sets closing, and keeps its own
 * state in bs. */
typedef struct lconn {
    struct loop *lp;
    int fd;                /* -1: not connected */
    int idx;               /* i in the IDs "<prefix>-<i>-<n>" */
    int state;             /* C_WAIT, C_CONNECTING, C_CALL, C_DONE (grpc_load.c) */
    int pollout;           /* EPOLLOUT is asked for (output waits) */
    int closing;           /* the server closes after this answer */
    long n;                /* the call in flight (or the last one) */
    int64_t t0;            /* when it started, ns, CLOCK_MONOTONIC */
    int64_t timer;         /* its deadline, or when to retry; 0: none */
    char id[96];           /* its taskId / messageId */
    size_t idlen;
    uint8_t *out;          /* bytes to send: [out_off, out_len) */
    size_t out_len, out_off, out_cap;
    void *bs;              /* the binding's state, open to close */
} lconn;

/* A binding: one per wire format, as siblings behind this table. */
typedef struct load_binding {
    const char *name;      /* "grpc", "jsonrpc": RESULT's mode */
    /* Once per run, before any connection: pre-build what does not change
     * per call. 0, or -1 after printing why. */
    int (*init)(void);
    /* A connection is up: make bs (and queue any preface). 0, or -1. */
    int (*open)(lconn *c);
    void (*close)(lconn *c);   /* free bs; c->bs may be NULL */
    /* Queue call c->n (id c->id). 0, or -1 with load_note saying why: the
     * connection is unusable. */
    int (*start)(lconn *c);
    /* Bytes from the server: CALL_PENDING until the answer is whole, then
     * its verdict (CALL_TRANSPORT: the connection is unusable), the first
     * error's description given to load_note. */
    int (*input)(lconn *c, const uint8_t *p, size_t n);
} load_binding;

extern const load_binding load_grpc, load_jsonrpc;

/* The run's settings, fixed before the first connection. */
extern const char *load_host;
extern int load_port, load_fresh;
extern long load_timeout_ms;

/* The first error of the run, for the SAMPLE line (any thread). */
__attribute__((format(printf, 1, 2))) void load_note(const char *fmt, ...);
/* Append n bytes to c's output. 0, or -1 when out of memory. */
int load_out(lconn *c, const void *p, size_t n);

#endif
