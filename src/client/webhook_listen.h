/*
 * webhook_listen.h -- the webhook receiver's HTTP listener with its limits
 * against hostile clients (internal API for apps/once.c; the listener is
 * src/client/webhook_http.c, the limits src/http/guard.c).
 *
 * A receiver faces fewer, better-known senders (onced replicas, a few
 * delivery threads each) than onced faces clients, and runs a thread per
 * connection, so its defaults are smaller than onced's.
 */
#ifndef ONCE_CLIENT_WEBHOOK_LISTEN_H
#define ONCE_CLIENT_WEBHOOK_LISTEN_H

#include "http/http.h"
#include "once/webhook.h"

#define ONCE_LISTEN_REQUEST_TIMEOUT_MS 30000
#define ONCE_LISTEN_MAX_CONNECTIONS 256
#define ONCE_LISTEN_MAX_PER_IP 64
#define ONCE_LISTEN_MAX_BODY_MEMORY ((size_t)32 << 20)

/* once_webhook_listen under the given limits; NULL or zero fields: the
 * defaults above. */
int once__webhook_listen_limited(once_webhook *w, const once_webhook_listen_options *o,
                                 const once_http_limits *limits, once_webhook_server **out,
                                 char *err, size_t errlen);

#endif /* ONCE_CLIENT_WEBHOOK_LISTEN_H */
