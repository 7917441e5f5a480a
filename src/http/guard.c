/*
 * guard.c -- request deadlines, room for new clients and the body budget of
 * a libmicrohttpd server (guard.h).
 *
 * Invariants, all under once__guard.mu:
 *   - a connection is in the waiting list iff it is waiting for a request
 *     and was not cut; the list is ordered by `since` (a connection enters
 *     at the tail with since = now, and the clock is monotonic), so the
 *     head is the first to reach its deadline and the oldest to evict;
 *   - `live` counts the connections not cut; `body_held` sums every
 *     connection's body bytes, `body_dying` those of cut connections, which
 *     MHD is about to free;
 *   - a record lives from MHD's STARTED to its CLOSED notification, and MHD
 *     closes the socket only after CLOSED: shutdown() under mu never hits a
 *     descriptor that was closed and reused.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/condwait.h"
#include "core/grow.h"
#include "core/list.h"
#include "core/str.h"
#include "core/log.h"
#include "http/guard.h"

/* At most one log line about cut connections this often. */
#define LOG_EVERY_MS 10000

/* One connection. g and fd are set at STARTED; the rest changes under
 * g->mu only, from the connection's MHD thread, the sweeper, or another
 * connection's thread that evicts it. */
typedef struct guard_conn {
    once__link wait; /* first: the waiting list's link is the connection */
    once__guard *g;
    MHD_socket fd;
    int64_t since;  /* monotonic ms: began waiting for its request */
    size_t body;    /* request body bytes held */
    int waiting;    /* in the list */
    int cut;        /* shut down; MHD will close it */
} guard_conn;

enum { CUT_DEADLINE, CUT_ROOM, CUT_MEMORY, CUT_KINDS };

/* lim, who, hard_cap and owner are set before the daemon starts;
 * everything else is guarded by mu. The sweeper sleeps on cv until the
 * head's deadline. */
struct once__guard {
    once_http_limits lim;
    void *owner;
    char who[32];
    unsigned hard_cap;             /* MHD's limit: live + closing ones */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    once__list waiting; /* guard_conns, the longest waiting first */
    unsigned live;
    size_t body_held, body_dying;
    unsigned long cuts[CUT_KINDS]; /* since the last log line */
    int64_t logged_at;
    int64_t sweep_at;              /* monotonic ms the sweeper sleeps until */
    int stopping;
    pthread_t sweeper;
    int sweeper_started;
};

/* The connection that has waited longest, or NULL. */
static guard_conn *head(const once__guard *g)
{
    return (guard_conn *)g->waiting.head; /* wait is the first member */
}

static void unlink_waiting(once__guard *g, guard_conn *r)
{
    if (!r->waiting)
        return;
    once__list_unlink(&g->waiting, &r->wait);
    r->waiting = 0;
}

static void append_waiting(once__guard *g, guard_conn *r)
{
    r->since = once_monotonic_ms();
    once__list_append(&g->waiting, &r->wait);
    r->waiting = 1;
    /* Wake the sweeper only when it would sleep past this deadline: it
     * wakes at least every second anyway, so with request timeouts of a
     * second or more a connection going back to waiting (once a request,
     * on every connection) costs no wake-up, which used to cost two
     * context switches a request. */
    if (r->since + g->lim.request_timeout_ms + 1 < g->sweep_at)
        pthread_cond_signal(&g->cv);
}

static void cut(once__guard *g, guard_conn *r, int why)
{
    unlink_waiting(g, r);
    if (r->cut)
        return;
    r->cut = 1;
    g->live--;
    g->body_dying += r->body;
    g->cuts[why]++;
    shutdown(r->fd, SHUT_RDWR);
}

static guard_conn *record_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

void once__guard_set_owner(once__guard *g, void *owner)
{
    g->owner = owner;
}

void *once__guard_owner(struct MHD_Connection *c)
{
    guard_conn *r = record_of(c);
    return r != NULL ? r->g->owner : NULL;
}

void once__guard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                               enum MHD_ConnectionNotificationCode toe)
{
    once__guard *g = cls;
    guard_conn *r = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (r == NULL)
            return;
        pthread_mutex_lock(&g->mu);
        unlink_waiting(g, r);
        if (r->cut)
            g->body_dying -= r->body;
        else
            g->live--;
        g->body_held -= r->body;
        pthread_mutex_unlock(&g->mu);
        once_free(r);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    r = once_calloc(1, sizeof *r);
    if (r == NULL || ci == NULL) {
        /* Unguarded, it could be held forever: close it now. */
        once_free(r);
        if (ci != NULL)
            shutdown(ci->connect_fd, SHUT_RDWR);
        return;
    }
    r->g = g;
    r->fd = ci->connect_fd;
    pthread_mutex_lock(&g->mu);
    append_waiting(g, r);
    g->live++;
    while (g->live > g->lim.max_connections && head(g) != r)
        cut(g, head(g), CUT_ROOM);
    pthread_mutex_unlock(&g->mu);
    *socket_context = r;
}

void once__guard_busy(struct MHD_Connection *c)
{
    guard_conn *r = record_of(c);
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->g->mu);
    unlink_waiting(r->g, r);
    pthread_mutex_unlock(&r->g->mu);
}

void once__guard_idle(struct MHD_Connection *c)
{
    guard_conn *r = record_of(c);
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->g->mu);
    if (!r->cut && !r->waiting)
        append_waiting(r->g, r);
    pthread_mutex_unlock(&r->g->mu);
}

/* The oldest waiting connection other than self that holds body bytes. */
static guard_conn *body_victim(once__guard *g, const guard_conn *self)
{
    for (once__link *l = g->waiting.head; l != NULL; l = l->next) {
        guard_conn *v = (guard_conn *)l;
        if (v != self && v->body > 0)
            return v;
    }
    return NULL;
}

/* The connection's body now holds `held` bytes. ONCE_EBUSY when growing
 * it would pass the budget and no other waiting body can be closed. */
static int guard_body(struct MHD_Connection *c, size_t held)
{
    guard_conn *r = record_of(c);
    if (r == NULL)
        return held > 0 ? ONCE_EBUSY : ONCE_OK;
    once__guard *g = r->g;
    int rc = ONCE_OK;
    pthread_mutex_lock(&g->mu);
    if (held > r->body) {
        size_t grow = held - r->body;
        while (rc == ONCE_OK && g->body_held - g->body_dying + grow > g->lim.max_body_memory) {
            guard_conn *v = r->cut ? NULL : body_victim(g, r);
            if (v == NULL)
                rc = ONCE_EBUSY;
            else
                cut(g, v, CUT_MEMORY);
        }
        if (rc == ONCE_OK) {
            g->body_held += grow;
            if (r->cut)
                g->body_dying += grow;
            r->body = held;
        }
    } else {
        size_t drop = r->body - held;
        g->body_held -= drop;
        if (r->cut)
            g->body_dying -= drop;
        r->body = held;
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void once__body_free(struct MHD_Connection *c, once__body *b)
{
    once_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    guard_body(c, 0);
}

int once__body_append(struct MHD_Connection *c, once__body *b, size_t max, const char *data,
                      size_t n)
{
    if (b->too_large || b->no_memory)
        return ONCE_OK;
    if (b->len + n > max) {
        b->too_large = 1;
        once__body_free(c, b);
        return ONCE_OK;
    }
    /* The first block is as large as the first bytes: a body nearly always
     * arrives whole, and a small block comes from malloc's free lists where
     * a 4 KiB one made it sweep them first (bench/README.md, "Single steps
     * the code's comments cite"). */
    size_t cap = once__grow_size(b->cap, b->len + n + 1, b->len + n + 1, max + 1);
    if (cap > b->cap && guard_body(c, cap) != ONCE_OK) {
        b->no_memory = 1;
        once__body_free(c, b);
        return ONCE_OK;
    }
    if (once__grow_to(&b->data, &b->cap, cap) != ONCE_OK)
        return ONCE_ENOMEM;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return ONCE_OK;
}

static void log_cuts(once__guard *g, int64_t now)
{
    unsigned long *n = g->cuts;
    if (n[CUT_DEADLINE] + n[CUT_ROOM] + n[CUT_MEMORY] == 0 || now - g->logged_at < LOG_EVERY_MS)
        return;
    once__logline l;
    if (!once__log_enabled(ONCE_LOG_ERROR)) {   /* the program keeps no log (once listen) */
        fprintf(stderr,
                "%s: closed %lu connection(s) past the request timeout, %lu to make room for "
                "new clients, %lu to stay within the request body memory\n",
                g->who, n[CUT_DEADLINE], n[CUT_ROOM], n[CUT_MEMORY]);
    } else if (once__log_begin(&l, ONCE_LOG_WARN, "connections_closed")) {
        once__log_int(&l, "past_request_timeout", (int64_t)n[CUT_DEADLINE]);
        once__log_int(&l, "for_room", (int64_t)n[CUT_ROOM]);
        once__log_int(&l, "for_body_memory", (int64_t)n[CUT_MEMORY]);
        once__log_end(&l);
    }
    memset(g->cuts, 0, sizeof g->cuts);
    g->logged_at = now;
}

static void *sweep_main(void *arg)
{
    once__guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        int64_t now = once_monotonic_ms();
        guard_conn *h;
        while ((h = head(g)) != NULL && now - h->since > g->lim.request_timeout_ms)
            cut(g, h, CUT_DEADLINE);
        log_cuts(g, now);
        /* Until the head's deadline, or the next log line, or a second. */
        int64_t wake = now + 1000;
        if (h != NULL && h->since + g->lim.request_timeout_ms + 1 < wake)
            wake = h->since + g->lim.request_timeout_ms + 1;
        g->sweep_at = wake;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000),
                              .tv_nsec = (long)(wake % 1000) * 1000000L};
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int once__guard_new(const once_http_limits *lim, const char *who, once__guard **out)
{
    *out = NULL;
    if (lim->request_timeout_ms <= 0 || lim->max_connections == 0 || lim->max_per_ip == 0 ||
        lim->max_body_memory == 0)
        return ONCE_EINVAL;
    once__guard *g = once_calloc(1, sizeof *g);
    if (g == NULL)
        return ONCE_ENOMEM;
    g->lim = *lim;
    once__strlcpy(g->who, who, sizeof g->who);
    /* Past max_connections the oldest waiting connection is cut at once,
     * but MHD counts it until its thread has reaped it, and MHD refuses
     * every new client while the count is at its limit. Half as many more
     * (at least 16) lets new clients in while a burst's cut connections
     * wait to be reaped, which on a starved machine takes a while
     * (e2e/test_hostile_http's crowd cuts a quarter of the limit at once). */
    unsigned closing = lim->max_connections / 2;
    g->hard_cap = lim->max_connections + (closing > 16 ? closing : 16);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* once_monotonic_ms's clock */
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    if (pthread_create(&g->sweeper, NULL, sweep_main, g) != 0) {
        once__guard_free(g);
        return ONCE_ERROR;
    }
    g->sweeper_started = 1;
    *out = g;
    return ONCE_OK;
}

void once__guard_free(once__guard *g)
{
    if (g == NULL)
        return;
    once__cond_raise(&g->mu, &g->cv, &g->stopping);
    if (g->sweeper_started)
        pthread_join(g->sweeper, NULL);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    once_free(g);
}

void once__guard_mhd_options(once__guard *g, struct MHD_OptionItem *opts)
{
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)g->hard_cap, NULL};
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                      (intptr_t)g->lim.max_per_ip, NULL};
    opts[2] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION,
                                      (intptr_t)once__guard_on_connection, g};
    opts[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
}

int once__http_limits_resolve(once_http_limits *l, const once_http_limits *defaults,
                             size_t max_body, char *err, size_t errlen)
{
    if (l->request_timeout_ms == 0)
        l->request_timeout_ms = defaults->request_timeout_ms;
    if (l->max_connections == 0)
        l->max_connections = defaults->max_connections;
    if (l->max_per_ip == 0) /* never more than the whole */
        l->max_per_ip = defaults->max_per_ip < l->max_connections ? defaults->max_per_ip
                                                                   : l->max_connections;
    if (l->max_body_memory == 0) /* always room for one largest body */
        l->max_body_memory = defaults->max_body_memory > max_body ? defaults->max_body_memory
                                                                  : max_body + 1;
    if (l->request_timeout_ms < 1000) {
        snprintf(err, errlen, "--request-timeout must be at least 1s");
        return ONCE_EINVAL;
    }
    if (l->max_per_ip > l->max_connections) {
        snprintf(err, errlen, "--max-connections-per-ip (%u) is above --max-connections (%u)",
                 l->max_per_ip, l->max_connections);
        return ONCE_EINVAL;
    }
    if (l->max_body_memory <= max_body) {
        snprintf(err, errlen, "--max-body-memory must be larger than the largest body (%zu)",
                 max_body);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}
