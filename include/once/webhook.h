/*
 * webhook.h -- the receiving end of once push notifications (docs/design.md
 * section 6; docs/protocol.md, "Push notifications"), implemented by the
 * client library. It includes once/webhook_sig.h, so code written against
 * both halves needs only this header.
 *
 * What a delivery carries and how it is signed is in once/webhook_sig.h
 * (that half is onced's too; this header adds only the receiver).
 *
 * The receiver (once_webhook_*) verifies the signature and the
 * per-subscription notification token, records each event durably in a
 * SQLite processed-set keyed by (subscription, task_id, generation), where
 * the subscription is "<tag>/<config_id>" from the signed webhook-id,
 * BEFORE answering 2xx, and hands events to the application in generation
 * order per subscription and task, each
 * once: a duplicate (a retry whose first answer was lost, the same event
 * from another replica) is answered 2xx and dropped; an event that arrives
 * ahead of a missing one is held until the gap is filled (or skipped with
 * once_webhook_skip after the application fetched the task with GetTask).
 *
 * Thread-safe: a receiver may be called from many threads at once.
 */
#ifndef ONCE_WEBHOOK_H
#define ONCE_WEBHOOK_H

#include "once/once.h"
#include "once/webhook_sig.h"   /* signatures and the webhook-id */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * The receiver: verify, record durably, hand over once and in order.
 */
typedef struct once_webhook once_webhook;

/* One event as the application sees it; valid during the handler call. */
typedef struct once_webhook_event {
    const char *task_id;
    int64_t generation;
    const char *id;   /* webhook-id */
    const char *body; /* the StreamResponse JSON, NUL-terminated */
    size_t len;
    const char *subscription; /* "<tag>/<config_id>" */
} once_webhook_event;

/* ONCE_OK: handled (never offered again). Anything else: keep it; it is
 * offered again, still first of its task, on the next drain. An event is
 * marked handled right after the handler returns ONCE_OK; if the process
 * dies in between, that one event is offered again after a restart. */
typedef int (*once_webhook_handler)(void *arg, const once_webhook_event *ev);

typedef struct once_webhook_options {
    const char *state_path;     /* SQLite file of the processed-set (created) */
    const char *const *secrets; /* accepted signing secrets, >= 1 */
    size_t nsecrets;
    int64_t tolerance_s;          /* 0 = ONCE_WEBHOOK_TOLERANCE_S */
    const char *token;            /* the X-A2A-Notification-Token every accepted
                                   * delivery carries: the token given to this
                                   * receiver's push configs (required) */
    once_webhook_handler handler; /* NULL = events are only recorded */
    void *arg;
    const once_clock *clock; /* NULL = system (timestamp checks) */
} once_webhook_options;

/* Strings in o are copied. err (may be NULL) says why an open failed. */
ONCE_API int once_webhook_open(const once_webhook_options *o, once_webhook **out, char *err,
                               size_t errlen);
ONCE_API void once_webhook_close(once_webhook *w); /* NULL ok; no call may be running */

/* One delivery as the HTTP layer saw it (strings borrowed for the call;
 * header values NULL when absent). */
typedef struct once_webhook_request {
    const char *id;        /* webhook-id */
    const char *timestamp; /* webhook-timestamp */
    const char *signature; /* webhook-signature */
    const char *since;     /* once-push-since (must equal the id's since) */
    const char *token;     /* X-A2A-Notification-Token */
    const char *body;
    size_t len;
} once_webhook_request;

/* Verify and record one delivery. *status is the HTTP status to answer:
 *   ONCE_OK      204: recorded now, or a duplicate of one recorded or
 *                handled before (*duplicate, if non-NULL, says which);
 *   ONCE_EPARSE  400: malformed: a header missing, webhook-id not
 *                "<tag>/<config_id>/<since>/<task_id>.<generation>", the
 *                body not a JSON object, once-push-since present and not
 *                the id's since;
 *   ONCE_EINVAL  401: no signature matches, or the token is wrong;
 *   ONCE_ERANGE  401: webhook-timestamp outside the tolerance;
 *   ONCE_EIO     503: the processed-set could not be written (the sender
 *                retries).
 * Nothing is recorded unless ONCE_OK. why (may be NULL) receives a
 * one-line reason. */
ONCE_API int once_webhook_receive(once_webhook *w, const once_webhook_request *req, int *status,
                         int *duplicate, char *why, size_t whylen);

/* Hand every deliverable recorded event to the handler (one drain at a
 * time; concurrent calls wait). *handled = events handled by this call. */
ONCE_API int once_webhook_drain(once_webhook *w, size_t *handled);

/* The application learnt everything up to `generation` of task_id another
 * way (GetTask): stop waiting for those, on every subscription of task_id
 * this receiver has seen; held later events may go. */
ONCE_API int once_webhook_skip(once_webhook *w, const char *task_id, int64_t generation);

typedef struct once_webhook_stats {
    uint64_t received;   /* deliveries recorded */
    uint64_t duplicates; /* answered 2xx, already known */
    uint64_t rejected;   /* 4xx answers */
    uint64_t handled;    /* handler returned ONCE_OK */
    uint64_t pending;    /* recorded, not yet handled (now) */
} once_webhook_stats;
ONCE_API int once_webhook_get_stats(once_webhook *w, once_webhook_stats *out);

/* ---------------------------------------------------------------------------
 * An HTTP listener for a receiver (libmicrohttpd, one thread per
 * connection): POST on any path is a delivery; answers come from
 * once_webhook_receive; a drain thread hands events to the handler after
 * every recorded delivery (and every second, so a handler that failed is
 * retried).
 */
typedef struct once_webhook_server once_webhook_server;

/* Called before verification. Return 0 to proceed; 100..599 to answer
 * that status with nothing recorded; a negative value to drop the
 * connection without an answer. May sleep (slow receivers, tests). */
typedef int (*once_webhook_gate)(void *arg, const once_webhook_request *req);

typedef struct once_webhook_listen_options {
    const char *host;       /* NULL = "127.0.0.1" */
    int port;               /* 0 = any free port */
    size_t max_body;        /* 0 = 1 MiB; larger bodies get 413 */
    once_webhook_gate gate; /* NULL = none */
    void *gate_arg;
    /* HTTPS: both PEM files (a certificate chain, an unencrypted key) or
     * neither. A missing, unreadable or mismatched file fails
     * once_webhook_listen with err naming it. */
    const char *tls_cert_file;
    const char *tls_key_file;
} once_webhook_listen_options;

ONCE_API int once_webhook_listen(once_webhook *w, const once_webhook_listen_options *o,
                        once_webhook_server **out, char *err, size_t errlen);
ONCE_API int once_webhook_server_port(const once_webhook_server *s);
/* Stop listening, finish the drain in progress. NULL ok. Call before
 * once_webhook_close. */
ONCE_API void once_webhook_server_stop(once_webhook_server *s);

/* A ready-made handler: runs `/bin/sh -c <cmd>` (arg is the command string)
 * with the event body on stdin and ONCE_TASK_ID, ONCE_GENERATION,
 * ONCE_WEBHOOK_ID, ONCE_SUBSCRIPTION in the environment; exit status 0 =
 * handled. */
ONCE_API int once_webhook_exec_handler(void *cmd, const once_webhook_event *ev);

#ifdef __cplusplus
}
#endif
#endif /* ONCE_WEBHOOK_H */
