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
 */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "once/webhook.h"

#define DEFAULT_MAX_BODY ((size_t)1 << 20)
#define DRAIN_PERIOD_MS 1000

/* Set up by once_webhook_listen; afterwards mu guards stopping and wake. */
struct once_webhook_server {
    once_webhook *w;
    once_webhook_listen_options opt;
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    int wake;
    pthread_t drainer;
    int drainer_started;
};

/* One request's body, owned by its connection thread. */
typedef struct body_buf {
    char *data;
    size_t len, cap;
    int too_large;
} body_buf;

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

static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    if (text[0] != '\0')
        MHD_add_response_header(r, "Content-Type", "text/plain");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    once_webhook_server *s = cls;
    (void)url;
    (void)version;
    if (strcmp(method, "POST") != 0)
        return answer(c, 405, "POST a webhook delivery\n");
    body_buf *b = *con_cls;
    if (b == NULL) {
        b = once_calloc(1, sizeof *b);
        if (b == NULL)
            return MHD_NO;
        *con_cls = b;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t max = s->opt.max_body ? s->opt.max_body : DEFAULT_MAX_BODY;
        if (!b->too_large && b->len + *upload_size <= max) {
            if (b->len + *upload_size + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + *upload_size + 1)
                    cap *= 2;
                char *d = once_realloc(b->data, cap);
                if (d == NULL)
                    return MHD_NO;
                b->data = d;
                b->cap = cap;
            }
            memcpy(b->data + b->len, upload, *upload_size);
            b->len += *upload_size;
            b->data[b->len] = '\0';
        } else {
            b->too_large = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (b->too_large)
        return answer(c, 413, "body too large\n");
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
            return answer(c, g, "refused by the gate\n");
    }
    char why[160];
    int status;
    if (once_webhook_receive(s->w, &req, &status, NULL, why, sizeof why) == ONCE_OK) {
        pthread_mutex_lock(&s->mu);
        s->wake = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        return answer(c, 204, "");
    }
    char text[200];
    snprintf(text, sizeof text, "%s\n", why);
    return answer(c, status, text);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    body_buf *b = *con_cls;
    if (b != NULL) {
        once_free(b->data);
        once_free(b);
        *con_cls = NULL;
    }
}

void once_webhook_server_stop(once_webhook_server *s)
{
    if (s == NULL)
        return;
    if (s->d != NULL)
        MHD_stop_daemon(s->d);
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->drainer_started)
        pthread_join(s->drainer, NULL);
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
    char dummy[1];
    if (err == NULL) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (errlen)
        err[0] = '\0';
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
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD;
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
    s->d =
        MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                         (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
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
