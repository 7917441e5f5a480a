/*
 * push_int.h -- what the engine's push files share and nothing else sees:
 *   push.c          the config methods and the config <-> stored element map
 *   push_deliver.c  the delivery threads: claim, send in order, report
 *   push_http.c     one signed POST with libcurl, the connect-time guard
 *   push_net.c      the SSRF guard: blocked ranges, --push-allow, URL check
 *
 * A stored config element (one entry of once_record.push_json) is
 *   {"id", "since", "url", "token"?, "authentication"?: {"scheme",
 *    "credentials"?}, "traceparent"?}
 * "id" and "since" are the store's (store.h); "traceparent" is the W3C
 * trace context of the request that set the config (sent with every
 * delivery, never shown to clients); the rest is what the client gave,
 * minus "taskId" (the record's key) and "tenant".
 */
#ifndef ONCE_ENGINE_PUSH_INT_H
#define ONCE_ENGINE_PUSH_INT_H

#include <pthread.h>
#include <sys/socket.h>

#include "engine/engine_int.h"
#include "engine/push.h"

#define ONCE__PUSH_URL_MAX 2048
#define ONCE__PUSH_TOKEN_MAX 1024
#define ONCE__PUSH_SECRETS_MAX 8

/* One --push-allow entry. */
typedef struct once__cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int bits;
} once__cidr;

/*
 * The engine's push state. Everything but the counters, `kicks`, `running`
 * and the thread list is set before the delivery threads start and
 * read-only after; once__engine.push itself is published with __atomic
 * stores (setup, first use) and freed only after every thread that could
 * kick it stopped. mu guards kicks (bumped by once__push_kick, waited for on
 * cv); stats and `running` change only with __atomic builtins.
 */
struct once__push {
    once_push_options opt; /* defaults filled; the pointers below own copies */
    char **secrets;
    size_t nsecrets;
    once__cidr *allow;
    size_t nallow;
    char **resolve;
    size_t nresolve;
    int64_t lease_ms; /* a claim's lease: several timeouts long */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t kicks;

    pthread_t *threads;
    int nthreads;
    int running; /* __atomic: the threads exist (kicks may wake them) */
    once_push_stats stats;
};

#define ONCE__PUSH_STAT(p, field) __atomic_fetch_add(&(p)->stats.field, 1, __ATOMIC_RELAXED)

/* --- push_net.c ---------------------------------------------------------- */

/* "10.0.0.0/8", "::1/128", or a bare address (a /32 or /128). */
int once__cidr_parse(const char *s, once__cidr *out);
/* Why (family, addr) may not be a webhook target, or NULL when it may
 * (public, or covered by the allow-list). */
const char *once__addr_blocked(const once__cidr *allow, size_t nallow, int family,
                               const uint8_t *addr);
/* The same for a socket address; ONCE_EINVAL with a sentence in why. */
int once__push_sockaddr_check(const once__cidr *allow, size_t nallow, const struct sockaddr *sa,
                              char *why, size_t whylen);
/* Config-time URL check: absolute http(s), no userinfo, a host that is not
 * a blocked literal address or localhost. ONCE_EINVAL with why. */
int once__push_url_check(const char *url, const once__cidr *allow, size_t nallow, char *why,
                         size_t whylen);

/* --- push.c -------------------------------------------------------------- */

/* The push state, created with defaults on first use. NULL on ENOMEM. */
struct once__push *once__push_get(once__engine *e);
/* Check a shape-checked config and build its stored element with `since`.
 * ONCE_EINVAL: res->field (relative: "url", "authentication.scheme") and
 * res->detail say why. */
int once__push_elem_make(once__engine *e, const json_t *cfg, int64_t since, json_t **elem,
                         once_push_res *res);
/* The record's push_json with elem put in (a new reference is kept): an
 * existing element of the same id is replaced keeping its since (or taking
 * cur->generation when its delivery row is disabled), a new one takes
 * elem's since. ONCE_EINVAL when ONCE_PUSH_CONFIGS_MAX is reached. *out is
 * once_malloc'd text. */
int once__push_json_put(once__engine *e, const once_record *cur, json_t *elem, char **out,
                        once_push_res *res);

/* --- push_http.c --------------------------------------------------------- */

/* One attempt: what to send. */
typedef struct once__push_post {
    const char *url;
    const char *body;
    size_t len;
    const char *webhook_id;  /* once_webhook_id_format: signed, names the
                              * subscription, its since, task, generation */
    int64_t since;           /* once-push-since: a copy of the id's since */
    const char *token;       /* NULL = no X-A2A-Notification-Token */
    const char *auth_scheme; /* NULL = no Authorization */
    const char *auth_credentials;
    const char *traceparent; /* NULL = no traceparent header */
} once__push_post;

/* One attempt: what came back. */
typedef struct once__push_result {
    long status;            /* HTTP status, 0 when none was received */
    int64_t retry_after_ms; /* Retry-After capped at backoff_cap_ms; -1 when
                             * absent or malformed */
    int refused;            /* the SSRF guard refused every address */
    char error[256];        /* why it failed (empty on 2xx) */
} once__push_result;

/* A per-thread libcurl handle (keeps connections alive between POSTs). */
void *once__push_http_new(void);
void once__push_http_free(void *h);
/* POST once. ONCE_OK when the request ran (see r->status) or failed at the
 * transport (r->status 0, r->error set); ONCE_ENOMEM. */
int once__push_http_post(struct once__push *p, void *h, const once__push_post *req,
                         once__push_result *r);

#endif /* ONCE_ENGINE_PUSH_INT_H */
