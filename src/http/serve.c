/*
 * serve.c -- once__serve_start / once_server_stop (serve.h): wire store ->
 * engine -> codec -> HTTP, and take them down in the reverse order.
 *
 * Invariants: the HTTP server is started last and stopped before anything
 * is freed, so no call reaches a codec or an engine that is not (or no
 * longer) there; the engine is stopped (not freed) before HTTP so blocked
 * calls end at once, and freed before the codec because a running turn
 * never calls the codec, but a blocked SendMessage in the codec does call
 * the engine.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "engine/inspect.h"
#include "http/serve.h"

#define URL_MAX 600

/* Written by once__serve_start, read-only afterwards, freed by
 * once_server_stop; no locking. */
struct once_server {
    once__engine *engine;
    once__a2a *codec;
    once_http *http;
    char url[URL_MAX];
};

once__engine *once__server_engine(const once_server *s) { return s->engine; }
void once_server_drain(once_server *s) { once__http_drain(s->http); }
void once_server_unready(once_server *s) { once__http_unready(s->http); }
long once__server_calls(const once_server *s) { return once__http_calls(s->http); }
const char *once_server_url(const once_server *s) { return s->url; }
int once_server_port(const once_server *s) { return once__http_port(s->http); }

void once_server_stop(once_server *s)
{
    once__server_stop(s, NULL);
}

void once__server_stop(once_server *s, once__engine_stats *last)
{
    if (s == NULL)
        return;
    /* Refuse new calls, then stop the engine first: blocked sends answer
     * with the task as it stands and streams see it close, so the HTTP
     * stop below waits for nothing that could take long. Calls that still
     * reach the stopped engine get ONCE_ECLOSED (503 SHUTTING_DOWN). */
    once__http_drain(s->http);
    once__engine_stop(s->engine);   /* turns stopped, leases released */
    once__http_stop(s->http);       /* no call runs after this */
    if (last != NULL)
        once__engine_get_stats(s->engine, last);
    once__engine_free(s->engine);
    once__a2a_free(s->codec);
    once_free(s);
}

void once__server_log_limits(const once_server *s, once__logline *l)
{
    const once__engine_config *e = once__engine_cfg(s->engine);
    const once_http_config *h = once__http_cfg(s->http);
    const struct {
        const char *key;
        int64_t value;
    } f[] = {
        {"lease_ms", e->lease_ms},
        {"retention_ms", e->retention_ms},
        {"tombstone_ms", e->tombstone_ms},
        {"turn_workers", e->workers},
        {"max_queue", e->max_queue},
        {"max_queue_per_principal", e->max_queue_per_principal},
        {"max_task_size", e->max_task_bytes},
        {"max_wait_ms", e->max_wait_ms},
        {"max_waits", e->max_waits},
        {"max_waits_per_principal", e->max_waits_per_principal},
        {"threads", h->threads},
        {"workers", h->workers},
        {"max_body", (int64_t)h->max_body},
        {"max_body_memory", (int64_t)h->limits.max_body_memory},
        {"max_streams", h->max_streams},
        {"max_streams_per_principal",
         once__share_of(h->max_streams_per_principal, (long)h->max_streams)},
        {"max_connections", h->limits.max_connections},
        {"max_connections_per_ip", h->limits.max_per_ip},
        {"request_timeout_ms", h->limits.request_timeout_ms},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        once__log_int(l, f[i].key, f[i].value);
}

const once_http_config *once__server_http_cfg(const once_server *s)
{
    return once__http_cfg(s->http);
}

int once__server_tls_reload(once_server *s, char sha256[2 * ONCE_SHA256_LEN + 1], char *err,
                            size_t errlen)
{
    return once__http_tls_reload(s->http, sha256, err, errlen);
}

int once__server_card_set(once_server *s, const json_t *members)
{
    char *card;
    size_t len;
    int rc = once__a2a_card_with(s->codec, members, &card, &len);
    return rc != ONCE_OK ? rc : once__http_card_set(s->http, card, len);
}

static int ops_ready(void *ctx)
{
    return once__engine_ping(ctx);
}

static void ops_metrics(void *ctx, struct once__mtext *t)
{
    once__engine_metrics(ctx, t);
}

static int inspect_timeline(void *ctx, const char *principal, const char *task_id, json_t **out)
{
    return once__engine_inspect(ctx, principal, task_id, out);
}

static int inspect_part(void *ctx, const char *principal, const char *task_id,
                        const char *artifact_id, size_t index, json_t **out)
{
    return once__engine_inspect_part(ctx, principal, task_id, artifact_id, index, out);
}

/* The card URL, and the path of it that serves JSON-RPC besides "/". */
static int card_url(const once_serve_config *cfg, char *url, char *path, char *err,
                    size_t errlen)
{
    const char *host = cfg->http.host;
    const char *scheme = cfg->http.tls_cert_file != NULL ? "https" : "http";
    if (cfg->a2a.url != NULL) {
        if (strlen(cfg->a2a.url) >= URL_MAX) {
            snprintf(err, errlen, "the public URL is longer than %d bytes", URL_MAX - 1);
            return ONCE_EINVAL;
        }
        snprintf(url, URL_MAX, "%s", cfg->a2a.url);
    } else if (cfg->http.port == 0) {
        snprintf(err, errlen, "port 0 needs an explicit card URL (a2a.url)");
        return ONCE_EINVAL;
    } else if (strchr(host, ':') != NULL) {
        snprintf(url, URL_MAX, "%s://[%s]:%d/", scheme, host, cfg->http.port);
    } else {
        snprintf(url, URL_MAX, "%s://%s:%d/", scheme, host, cfg->http.port);
    }
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    snprintf(path, URL_MAX, "%s", p ? p : "/");
    path[strcspn(path, "?#")] = '\0';
    return ONCE_OK;
}

/* The gRPC interface's target for the card, "host:port": the public URL's
 * host when there is one (the listen address may be a wildcard), else the
 * gRPC listen address. */
static int grpc_target(const once_serve_config *cfg, const char *url, char *out, char *err,
                       size_t errlen)
{
    if (cfg->http.grpc_port == 0) {
        snprintf(err, errlen, "--grpc-listen needs a port from 1 to 65535");
        return ONCE_EINVAL;
    }
    char host[256];
    snprintf(host, sizeof host, "%.255s", cfg->http.grpc_host);
    const char *p = cfg->a2a.url != NULL ? strstr(url, "://") : NULL;
    if (p != NULL) {
        p += 3;
        size_t n = p[0] == '[' ? strcspn(p, "]") + 1 : strcspn(p, ":/?#");
        snprintf(host, sizeof host, "%.*s", (int)(n < 255 ? n : 255), p);
    }
    int v6 = strchr(host, ':') != NULL && host[0] != '[';
    snprintf(out, URL_MAX, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", cfg->http.grpc_port);
    return ONCE_OK;
}

int once__serve_start(const once_serve_config *cfg, once_server **out, char *err, size_t errlen)
{
    char rpc_path[URL_MAX];
    int rc;

    *out = NULL;
    if (errlen > 0)
        err[0] = '\0';
    if (cfg == NULL || cfg->engine.store == NULL || cfg->http.host == NULL) {
        snprintf(err, errlen, "missing configuration (a store and a listen address)");
        return ONCE_EINVAL;
    }
    once_server *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return ONCE_ENOMEM;
    if ((rc = card_url(cfg, s->url, rpc_path, err, errlen)) != ONCE_OK)
        goto fail;

    rc = once__engine_new(&cfg->engine, &s->engine, err, errlen);
    if (rc == ONCE_OK)
        rc = once__engine_push_setup(s->engine, &cfg->push, err, errlen);
    if (rc == ONCE_OK)
        rc = once__engine_start(s->engine);
    if (rc != ONCE_OK) {
        char why[256];
        once__strlcpy(why, errlen > 0 && err[0] ? err : "cannot start", sizeof why);
        snprintf(err, errlen, "engine: %s (%s)", why, once_strerror(rc));
        goto fail;
    }

    once__a2a_config ac = cfg->a2a;
    once__a2a_backend_engine(s->engine, &ac.backend);
    ac.url = s->url;
    char grpc_url[URL_MAX];
    if (cfg->http.grpc_host != NULL) {
        if ((rc = grpc_target(cfg, s->url, grpc_url, err, errlen)) != ONCE_OK)
            goto fail;
        ac.grpc_url = grpc_url;
    }
    ac.retention_ms = once__engine_retention_ms(s->engine);
    ac.tombstone_ms = once__engine_tombstone_ms(s->engine);
    ac.auth = cfg->http.tokens != NULL;
    if ((rc = once__a2a_new(&ac, &s->codec)) != ONCE_OK) {
        snprintf(err, errlen, "codec: %s", once_strerror(rc));
        goto fail;
    }

    once_http_config hc = cfg->http;
    hc.codec = s->codec;
    hc.ops.ctx = s->engine;
    hc.ops.ready = ops_ready;
    hc.ops.metrics = ops_metrics;
    hc.ops.replica = once__engine_replica_id(s->engine);
    hc.inspect.ctx = s->engine;
    hc.inspect.timeline = inspect_timeline;
    hc.inspect.part = inspect_part;
    if (hc.rpc_path == NULL)
        hc.rpc_path = rpc_path;
    hc.public_url = cfg->a2a.url;
    if (!hc.inline_calls)
        hc.inline_first = once__engine_holds(s->engine);
    if ((rc = once__http_start(&hc, &s->http, err, errlen)) != ONCE_OK)
        goto fail;
    *out = s;
    return ONCE_OK;
fail:
    once_server_stop(s);
    return rc;
}

/* server.h: the embedder's options laid over the same configuration onced
 * builds from its flags; everything not named there keeps its default. */
int once_server_start(const once_server_options *o, once_server **out, char *err, size_t errlen)
{
    char host[256];
    int port = 0;
    *out = NULL;
    if (o == NULL || o->listen == NULL ||
        once__parse_listen(o->listen, host, sizeof host, &port) != ONCE_OK || port == 0) {
        snprintf(err, errlen, "listen: expected HOST:PORT with a port from 1 to 65535, got %s",
                 o && o->listen ? o->listen : "nothing");
        return ONCE_EINVAL;
    }
    once_serve_config sc;
    memset(&sc, 0, sizeof sc);
    sc.engine.store = o->store;
    sc.engine.executor = o->executor;
    sc.engine.lease_ms = o->lease_ms;
    sc.engine.retention_ms = o->retention_ms;
    sc.engine.tombstone_ms = o->tombstone_ms;
    sc.engine.workers = (int)o->turn_workers;
    sc.a2a.url = o->public_url;
    sc.a2a.name = o->name;
    sc.a2a.description = o->description;
    sc.a2a.skill_id = o->skill_id;
    sc.a2a.skill_description = o->skill_description;
    sc.http.host = host;
    sc.http.port = port;
    sc.http.tls_cert_file = o->tls_cert_file;
    sc.http.tls_key_file = o->tls_key_file;
    sc.http.tls_priority = o->tls_priority;
    return once__serve_start(&sc, out, err, errlen);
}
