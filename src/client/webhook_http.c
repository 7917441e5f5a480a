/*
 * webhook_http.c -- an HTTP listener for a webhook receiver
 * (once_webhook_listen, include/once/webhook.h): libmicrohttpd with one
 * thread per connection, so a slow gate or a slow disk stalls only its own
 * sender; a drain thread hands recorded events to the application.
 *
 * A request is answered only after once_webhook_receive returned, that is
 * after the event is durably recorded (or refused). The drain thread is
 * woken after every recorded delivery and every second (so a handler that
 * failed is offered its event again).
 *
 * Hostile clients meet the guard of src/http/guard.c, as onced's do: a
 * deadline for each request's head and body, per-address and total
 * connection limits with room kept for new senders, a budget for the bodies
 * held at once, and a 400 for a head a proxy could frame differently.
 * Connection threads wait with poll(), not select(), so no descriptor
 * number is too large for them.
 */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/condwait.h"
#include "client/webhook_listen.h"
#include "core/errbuf.h"
#include "http/guard.h"
#include "http/tls.h"
#include "once/webhook.h"

#define DEFAULT_MAX_BODY ((size_t)1 << 20)
#define DRAIN_PERIOD_MS 1000

/* Set up by once_webhook_listen; afterwards mu guards stopping and wake. */
struct once_webhook_server {
    once_webhook *w;
    once_webhook_listen_options opt;
    struct MHD_Daemon *d;
    once__guard *guard;
    once__tls tls;             /* HTTPS: the PEM text MHD serves with */
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    int wake;
    pthread_t drainer;
    int drainer_started;
};

static void *drain_main(void *arg)
{
    once_webhook_server *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        if (!s->wake) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += DRAIN_PERIOD_MS / 1000;
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        }
        s->wake = 0;
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->mu);
        size_t n;
        (void)once_webhook_drain(s->w, &n);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* closing: the connection ends after this answer (a request whose framing
 * we do not trust leaves nothing to read after it). */
static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *text, int closing)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    if (text[0] != '\0')
        MHD_add_response_header(r, "Content-Type", "text/plain");
    if (closing)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The first call: headers are in, the body is not read yet. */
static enum MHD_Result first_call(struct MHD_Connection *c, const char *method, void **con_cls)
{
    const char *bad = once__guard_framing(c, method);
    if (bad != NULL) {
        char text[160];
        snprintf(text, sizeof text, "bad request framing: %s\n", bad);
        return answer(c, 400, text, 1);
    }
    if (strcmp(method, "POST") != 0)
        return answer(c, 405, "POST a webhook delivery\n", 0);
    once__body *b = once_calloc(1, sizeof *b);
    if (b == NULL)
        return MHD_NO;
    *con_cls = b;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    once_webhook_server *s = cls;
    (void)url;
    (void)version;
    once__body *b = *con_cls;
    if (b == NULL) {
        enum MHD_Result ret = first_call(c, method, con_cls);
        if (*con_cls == NULL) /* answered at once: the request is in */
            once__guard_busy(c);
        return ret;
    }
    if (*upload_size > 0) {
        size_t max = s->opt.max_body ? s->opt.max_body : DEFAULT_MAX_BODY;
        if (once__body_append(c, b, max, upload, *upload_size) != ONCE_OK)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    once__guard_busy(c);
    if (b->no_memory)
        return answer(c, 503, "too many deliveries in progress; retry\n", 0);
    if (b->too_large)
        return answer(c, 413, "body too large\n", 0);
    once_webhook_request req = {
        .id = header(c, "webhook-id"),
        .timestamp = header(c, "webhook-timestamp"),
        .signature = header(c, "webhook-signature"),
        .since = header(c, "once-push-since"),
        .token = header(c, "X-A2A-Notification-Token"),
        .body = b->data != NULL ? b->data : "",
        .len = b->len,
    };
    if (s->opt.gate != NULL) {
        int g = s->opt.gate(s->opt.gate_arg, &req);
        if (g < 0)
            return MHD_NO; /* drop the connection: the sender sees a reset */
        if (g >= 100 && g <= 599)
            return answer(c, g, "refused by the gate\n", 0);
    }
    char why[160];
    int status;
    if (once_webhook_receive(s->w, &req, &status, NULL, why, sizeof why) == ONCE_OK) {
        pthread_mutex_lock(&s->mu);
        s->wake = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        return answer(c, 204, "", 0);
    }
    char text[200];
    snprintf(text, sizeof text, "%s\n", why);
    return answer(c, status, text, 0);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    once__body *b = *con_cls;
    if (b != NULL) {
        once__body_free(c, b);
        once_free(b);
        *con_cls = NULL;
    }
    once__guard_idle(c);
}

void once_webhook_server_stop(once_webhook_server *s)
{
    if (s == NULL)
        return;
    if (s->d != NULL)
        MHD_stop_daemon(s->d);
    once__cond_raise(&s->mu, &s->cv, &s->stopping);
    if (s->drainer_started)
        pthread_join(s->drainer, NULL);
    once__guard_free(s->guard);
    once__tls_clear(&s->tls);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    once_free(s);
}

int once_webhook_server_port(const once_webhook_server *s)
{
    return s != NULL ? s->port : 0;
}

int once_webhook_listen(once_webhook *w, const once_webhook_listen_options *o,
                        once_webhook_server **out, char *err, size_t errlen)
{
    return once__webhook_listen_limited(w, o, NULL, out, err, errlen);
}

int once__webhook_listen_limited(once_webhook *w, const once_webhook_listen_options *o,
                                 const once_http_limits *limits, once_webhook_server **out,
                                 char *err, size_t errlen)
{
    err = once__errbuf(err, &errlen);
    if (w == NULL || out == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    static const once_webhook_listen_options none;
    if (o == NULL)
        o = &none;
    const char *host = o->host != NULL ? o->host : "127.0.0.1";
    if (o->port < 0 || o->port > 65535) {
        snprintf(err, errlen, "port must be 0..65535");
        return ONCE_EINVAL;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)o->port);
    } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)o->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, errlen, "listen address %s is not a numeric IPv4 or IPv6 address", host);
        return ONCE_EINVAL;
    }
    static const once_http_limits defaults = {ONCE_LISTEN_REQUEST_TIMEOUT_MS,
                                              ONCE_LISTEN_MAX_CONNECTIONS, ONCE_LISTEN_MAX_PER_IP,
                                              ONCE_LISTEN_MAX_BODY_MEMORY};
    once_http_limits lim = limits != NULL ? *limits : (once_http_limits){0};
    int rc = once__http_limits_resolve(&lim, &defaults, o->max_body ? o->max_body : DEFAULT_MAX_BODY,
                                      err, errlen);
    if (rc != ONCE_OK)
        return rc;
    once_webhook_server *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return ONCE_ENOMEM;
    s->w = w;
    s->opt = *o;
    s->opt.host = NULL; /* not kept */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->drainer, NULL, drain_main, s) != 0) {
        once_webhook_server_stop(s);
        return ONCE_ENOMEM;
    }
    s->drainer_started = 1;
    if ((rc = once__guard_new(&lim, "once: listen", &s->guard)) != ONCE_OK) {
        snprintf(err, errlen, "cannot start the connection guard: %s", once_strerror(rc));
        once_webhook_server_stop(s);
        return rc;
    }
    if ((o->tls_cert_file != NULL || o->tls_key_file != NULL) &&
        (rc = once__tls_load(o->tls_cert_file, o->tls_key_file, &s->tls, err, errlen)) !=
            ONCE_OK) {
        once_webhook_server_stop(s);
        return rc;
    }
    struct MHD_OptionItem guarded[4], https[4];
    once__guard_mhd_options(s->guard, guarded);
    flags |= once__tls_mhd(&s->tls, NULL, https);   /* TLS 1.2+, forward secrecy */
    s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_ARRAY,
                            guarded, MHD_OPTION_ARRAY, https, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)60, MHD_OPTION_END);
    if (s->d == NULL) {
        snprintf(err, errlen, "cannot listen on %s:%d (address in use or not available)", host,
                 o->port);
        once_webhook_server_stop(s);
        return ONCE_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? info->port : o->port;
    *out = s;
    return ONCE_OK;
}
