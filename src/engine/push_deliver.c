/*
 * push_deliver.c -- the delivery threads every replica runs (docs/design.md
 * section 6): claim a due delivery row with a lease, POST its events from
 * the outbox in generation order, report each outcome to the store.
 *
 *   2xx            delivered; the lease is renewed and the next generation
 *                  follows at once
 *   410 Gone       the config is disabled (nothing more is sent to it)
 *   anything else  (other status, timeout, reset, refused address) a retry
 *                  after a full-jitter backoff, uniform in
 *                  [0, min(cap, base * 2^attempts)], or Retry-After when the
 *                  receiver sent one and it is longer; either way at most
 *                  cap (backoff_cap_ms, the delivery's max backoff), so a
 *                  receiver cannot park its deliveries longer than that
 *                  (push_http.c caps the header when it parses it). Such
 *                  failures are transient however long they last: a
 *                  receiver that is overloaded or under attack must not
 *                  lose its events, so the config is never disabled for
 *                  them. From max_attempts failures on one event on,
 *                  lastError says how many failed; the retries go on with
 *                  the same capped backoff
 *
 * Only 410 is a permanent refusal. The webhook-id names the subscription
 * (docs/protocol.md, "The webhook trust model"): the principal's tag (an
 * HMAC of the principal under the store's secret, the same on every
 * replica), the config id, its since, the task and the generation, so all
 * a receiver keys its state by is signed.
 *
 * At-least-once: an event is acknowledged only after its 2xx, and the
 * acknowledgement is fenced by the lease, so a replica that stalled past its
 * lease (or died: kill -9) cannot move the row; another replica claims it
 * after the lease runs out and sends the unacknowledged event again with
 * the same webhook-id, which receivers dedup. One lease per (task, config)
 * row means one sender at a time, so per config the order is the event
 * order.
 *
 * Threads sleep up to poll_ms between claims; a write on this replica
 * (once__push_kick) wakes them at once, other replicas' writes are found by
 * the next poll.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "core/backoff.h"
#include "core/jcs.h"
#include "core/v03.h"
#include "engine/push_int.h"
#include "once/webhook_sig.h"

#define EVENTS_BATCH 16

void once__push_kick(once__engine *e)
{
    struct once__push *p = __atomic_load_n(&e->push, __ATOMIC_ACQUIRE);
    if (p == NULL || !__atomic_load_n(&p->running, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&p->mu);
    p->kicks++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Sleep up to ms or until kicked since `seen`; returns the kick count. */
static uint64_t idle(struct once__push *p, once__engine *e, uint64_t seen, int64_t ms)
{
    pthread_mutex_lock(&p->mu);
    if (p->kicks == seen && !once__stopping(e))
        once__cond_wait_ms(&p->cv, &p->mu, ms);
    seen = p->kicks;
    pthread_mutex_unlock(&p->mu);
    return seen;
}

/* Full jitter: uniform in [0, min(cap, base * 2^attempts)] (core/backoff.c,
 * which saturates at the cap however many attempts); Retry-After, already
 * capped at the same cap when parsed, is a floor. So no delay exceeds
 * backoff_cap_ms. */
static int64_t backoff(once__engine *e, struct once__push *p, int64_t attempts,
                       int64_t retry_after_ms)
{
    uint64_t k = attempts > 0 ? (uint64_t)attempts : 0;
    int64_t d;
    if (once__backoff_jitter_ms(p->opt.backoff_ms, k, p->opt.backoff_cap_ms, e->rng, &d) != ONCE_OK)
        d = once__backoff_ceiling_ms(p->opt.backoff_ms, k, p->opt.backoff_cap_ms);
    return retry_after_ms > d ? retry_after_ms : d;
}

static int ack(once__engine *e, const once_push_claim *c, once_push_outcome o, int64_t gen,
               int64_t lease_ms, int64_t next_at, const char *error)
{
    struct once__push *p = e->push;
    once_push_ack a = {.principal = c->principal,
                       .task_id = c->task_id,
                       .config_id = c->config_id,
                       .owner = e->replica_id,
                       .generation = gen,
                       .outcome = o,
                       .now = once__now(e),
                       .lease_ms = lease_ms,
                       .next_attempt_at = next_at,
                       .error = error};
    int rc = once__store_rc(e, once_store_push_ack(e->store, &a));
    if (rc == ONCE_EFENCED)
        ONCE__PUSH_STAT(p, fenced);
    return rc;
}

/* The stored element of config id in the record, or NULL (also when memory
 * ran out: the row's lease then lapses and the delivery is tried again).
 * Parsed with the guard of core/jcs.h, so a parse short of memory
 * never yields a config with a character missing from its url. A new
 * reference. */
static json_t *find_config(const once_record *r, const char *id)
{
    json_t *a = NULL;
    if (r->push_json != NULL)
        (void)once__json_loads(r->push_json, 0, &a, NULL);
    size_t i;
    json_t *el, *found = NULL;
    json_array_foreach(a, i, el)
    {
        const char *eid = json_string_value(json_object_get(el, "id"));
        if (eid != NULL && strcmp(eid, id) == 0)
            found = json_incref(el);
    }
    json_decref(a);
    return found;
}

/* The 0.3 body of a stored 1.0 StreamResponse (once_malloc'd), or NULL. */
static char *v03_body(const char *payload)
{
    json_t *ev = NULL, *out = NULL;
    char *text = NULL;
    size_t len;
    if (once__json_loads(payload, 0, &ev, NULL) == ONCE_OK && (out = once__v03_event_out(ev)))
        (void)once__json_write(out, &text, &len);
    json_decref(ev);
    json_decref(out);
    return text;
}

/* One POST of event ev; the outcome reported. Returns 1 to go on with the
 * next generation, 0 to stop working on this row. */
static int attempt(once__engine *e, void *http, const once_push_claim *c, const json_t *cfg,
                   const once_event *ev, int64_t since, int64_t attempts)
{
    struct once__push *p = e->push;
    const json_t *auth = json_object_get(cfg, "authentication");
    once_webhook_id id = {.since = since, .generation = ev->generation};
    char wid[ONCE_WEBHOOK_ID_MAX + 1];
    once_webhook_principal_tag(e->secret, strlen(e->secret), c->principal, id.tag);
    once__strlcpy(id.config_id, c->config_id, sizeof id.config_id);
    once__strlcpy(id.task_id, c->task_id, sizeof id.task_id);
    if (once_webhook_id_format(&id, wid) != ONCE_OK)
        return 0; /* never: every part was checked when stored; the lease lapses */
    /* A config set over A2A 0.3: the 0.3 event the payload carries. */
    char *body03 = NULL;
    if (json_is_true(json_object_get(cfg, ONCE__PUSH_V03)) &&
        (body03 = v03_body(ev->payload)) == NULL)
        return 0; /* no memory: the lease lapses and the event is sent later */
    once__push_post q = {
        .url = json_string_value(json_object_get(cfg, "url")),
        .body = body03 != NULL ? body03 : ev->payload,
        .len = strlen(body03 != NULL ? body03 : ev->payload),
        .webhook_id = wid,
        .since = since,
        .token = json_string_value(json_object_get(cfg, "token")),
        .auth_scheme = json_string_value(json_object_get(auth, "scheme")),
        .auth_credentials = json_string_value(json_object_get(auth, "credentials")),
        .traceparent = json_string_value(json_object_get(cfg, "traceparent")),
    };
    once__push_result r;
    ONCE__PUSH_STAT(p, attempts);
    if (once__push_http_post(p, http, &q, &r) != ONCE_OK)
        snprintf(r.error, sizeof r.error, "out of memory before sending");
    once_free(body03);
    if (r.refused)
        ONCE__PUSH_STAT(p, refused);

    once__journal_delivery(e, c->principal, c->task_id, c->config_id, ev->generation, r.status,
                           r.status >= 200 && r.status <= 299 ? "delivered"
                           : r.status == 410                  ? "disabled"
                                                              : "retry");
    if (r.status >= 200 && r.status <= 299) {
        ONCE__PUSH_STAT(p, delivered);
        return ack(e, c, ONCE_PUSH_DELIVERED, ev->generation, p->lease_ms, 0, NULL) == ONCE_OK;
    }
    if (r.status == 410) {
        ONCE__PUSH_STAT(p, disabled);
        (void)ack(e, c, ONCE_PUSH_DISABLE, ev->generation, 0, 0,
                  "HTTP 410 Gone: the receiver asked for no more deliveries");
        return 0;
    }
    ONCE__PUSH_STAT(p, retried);
    once__log_push_failure(c->task_id, c->config_id, ev->generation, r.status, attempts + 1,
                           r.error);
    int64_t now = once__now(e), wait = backoff(e, p, attempts, r.retry_after_ms);
    const char *error = r.error;
    char why[sizeof r.error + 96];
    if (attempts + 1 >= p->opt.max_attempts) {
        /* Past the attempt count: say so, keep the event, keep retrying. */
        snprintf(why, sizeof why,
                 "%lld attempts failed, still retrying (backoff up to %lld ms): %s",
                 (long long)(attempts + 1), (long long)p->opt.backoff_cap_ms, r.error);
        error = why;
    }
    int64_t next = wait < INT64_MAX - now ? now + wait : INT64_MAX; /* any cap the options allow */
    (void)ack(e, c, ONCE_PUSH_RETRY, ev->generation, 0, next, error);
    return 0;
}

/* Work one claimed row: send from c->generation on while 2xx keeps coming
 * and the lease holds. */
static void work_row(once__engine *e, void *http, const once_push_claim *c)
{
    once_record rec;
    if (once_store_load(e->store, c->principal, c->task_id, &rec, NULL) != ONCE_OK)
        return; /* gone: its row went with it; a store error: the lease lapses */
    json_t *cfg = find_config(&rec, c->config_id);
    once_record_clear(&rec);
    if (cfg == NULL)
        return; /* deleted since the claim: so is the row */
    int64_t since = (int64_t)json_integer_value(json_object_get(cfg, "since"));
    int64_t gen = c->generation, attempts = c->attempts;
    int go = 1;
    while (go && !once__stopping(e)) {
        once_event_list l;
        if (once_store_events(e->store, c->principal, c->task_id, gen - 1, EVENTS_BATCH, &l) !=
            ONCE_OK) {
            once_event_list_clear(&l);
            break; /* the lease lapses; someone retries */
        }
        if (l.n == 0) {
            once_event_list_clear(&l);
            (void)ack(e, c, ONCE_PUSH_RELEASE, 0, 0, 0, NULL); /* caught up */
            break;
        }
        for (size_t i = 0; go && i < l.n && !once__stopping(e); i++) {
            if (l.v[i].generation != gen) {
                go = 0; /* a gap in the outbox: never expected; the check reports it */
                break;
            }
            go = attempt(e, http, c, cfg, &l.v[i], since, attempts);
            attempts = 0;
            gen++;
        }
        once_event_list_clear(&l);
    }
    if (go && once__stopping(e))
        (void)ack(e, c, ONCE_PUSH_RELEASE, 0, 0, 0, NULL);
    json_decref(cfg);
}

static void *deliver_main(void *arg)
{
    once__engine *e = arg;
    struct once__push *p = e->push;
    void *http = once__push_http_new();
    uint64_t seen = 0;
    while (!once__stopping(e)) {
        once_push_claim_list l;
        int rc = http != NULL ? once_store_push_claim(e->store, e->replica_id, once__now(e),
                                                      p->lease_ms, 1, &l)
                              : ONCE_ENOMEM;
        if (rc != ONCE_OK || l.n == 0) {
            once__store_rc(e, rc);
            once_push_claim_list_clear(&l);
            seen = idle(p, e, seen, p->opt.poll_ms);
            if (http == NULL)
                http = once__push_http_new();
            continue;
        }
        work_row(e, http, &l.v[0]);
        once_push_claim_list_clear(&l);
    }
    once__push_http_free(http);
    return NULL;
}

int once__push_start(once__engine *e)
{
    if (!once__engine_push_supported(e))
        return ONCE_OK;
    struct once__push *p = once__push_get(e);
    if (p == NULL)
        return ONCE_ENOMEM;
    pthread_t *t = once_calloc((size_t)p->opt.threads, sizeof *t);
    if (t == NULL)
        return ONCE_ENOMEM;
    pthread_mutex_lock(&e->mu);
    p->threads = t; /* from now on setup refuses, kicks wake threads */
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < p->opt.threads; i++) {
        if (pthread_create(&t[i], NULL, deliver_main, e) != 0)
            return ONCE_ENOMEM; /* the ones started are joined by stop */
        p->nthreads = i + 1;
    }
    __atomic_store_n(&p->running, 1, __ATOMIC_RELEASE);
    return ONCE_OK;
}

void once__push_stop(once__engine *e)
{
    struct once__push *p = e->push;
    if (p != NULL) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv); /* `stopping` is already set */
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->nthreads; i++)
            pthread_join(p->threads[i], NULL);
        p->nthreads = 0;
    }
    /* The state (and its counters) stays until once__engine_free: a
     * stopped engine's counters are still read by /metrics. */
}
