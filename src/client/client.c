/*
 * client.c -- the once_client handle: configuration, time and sleep,
 * GetTask and CancelTask (idempotent reads and writes, retried by the
 * policy with no outbox row), and the outbox accessors.
 *
 * Every observed task state is written back to the outbox, so an
 * acknowledged intent becomes final whichever call first sees its task end,
 * through whichever of the agent's endpoints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/str.h"
#include "client/client_int.h"

static void real_sleep(void *ctx, int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int once_client_new(const once_client_config *cfg, once_client **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    once_client *c = once_calloc(1, sizeof *c);
    if (c == NULL)
        return ONCE_ENOMEM;
    c->retry = cfg->retry;
    if (c->retry.max_attempts == 0 && c->retry.attempt_timeout_ms == 0 && c->retry.deadline_ms == 0)
        once_retry_policy_default(&c->retry);
    c->id_kind = cfg->id_kind;
    c->clock = cfg->clock ? cfg->clock : once_clock_system();
    c->rng = cfg->rng ? cfg->rng : once_rng_system();
    c->interrupted = cfg->interrupted;
    c->sleep_ms = cfg->sleep_ms ? cfg->sleep_ms : real_sleep;
    c->sleep_ctx = cfg->sleep_ctx;
    c->hook = cfg->hook;
    c->hook_ctx = cfg->hook_ctx;
    c->tls.insecure = cfg->insecure;
    c->binding = cfg->binding;
    if ((cfg->token != NULL && (c->token = once_strdup(cfg->token)) == NULL) ||
        (cfg->cacert != NULL && (c->tls.cacert = once_strdup(cfg->cacert)) == NULL)) {
        once_client_free(c);
        return ONCE_ENOMEM;
    }
    int rc = once__outbox_open(cfg->outbox_path, &c->outbox, errbuf, errlen);
    if (rc != ONCE_OK) {
        once_client_free(c);
        return rc == ONCE_ENOMEM ? rc : ONCE_ESTORE;
    }
    *out = c;
    return ONCE_OK;
}

void once_client_free(once_client *c)
{
    if (c == NULL)
        return;
    once__outbox_close(c->outbox);
    once__agent_close(&c->prefer);
    once__grpc_pool_free(c->grpc);
    json_decref(c->endpoint_cards);
    once_free(c->token);
    once_free(c->tls.cacert);
    once_free(c);
}

const char *once_client_errmsg(const once_client *c)
{
    return c != NULL ? c->errmsg : "no client";
}

void once__client_seterr(once_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
}

int64_t once__client_now(const once_client *c)
{
    return once_now(c->clock);
}

int once__client_stopped(const once_client *c)
{
    return c->interrupted != NULL && *c->interrupted;
}

once__http_req once__client_get(const once_client *c, const char *url, int64_t timeout_ms)
{
    once__http_req q = {.method = "GET",
                        .url = url,
                        .token = c->token,
                        .tls = &c->tls,
                        .timeout_ms = timeout_ms,
                        .connect_timeout_ms = c->retry.connect_timeout_ms,
                        .interrupted = c->interrupted};
    return q;
}

int once__client_sleep(once_client *c, int64_t ms)
{
    if (c->sleep_ms != real_sleep) {
        /* A plugged-in sleep (a test clock) gets each delay whole. */
        if (ms > 0 && !once__client_stopped(c))
            c->sleep_ms(c->sleep_ctx, ms);
        return once__client_stopped(c) ? ONCE_ECANCELED : ONCE_OK;
    }
    /* Slices of at most 50 ms, so an interrupt is seen promptly even when
     * the signal handler was installed with SA_RESTART. */
    while (ms > 0) {
        if (once__client_stopped(c))
            return ONCE_ECANCELED;
        int64_t step = ms < 50 ? ms : 50;
        c->sleep_ms(c->sleep_ctx, step);
        ms -= step;
    }
    return once__client_stopped(c) ? ONCE_ECANCELED : ONCE_OK;
}

/* ---------------------------------------------------------------------------
 * GetTask, CancelTask.
 */
/* A GetTask/CancelTask call; rpc.result is set by its successful attempt. */
typedef struct task_call {
    once__rpc rpc;
} task_call;

static int task_attempt(once_client *c, void *ctx, once__attempt *a, once_call_result *r)
{
    task_call *t = ctx;
    return once__rpc_attempt(c, &t->rpc, a, r);
}

static int task_method(once_client *c, const char *agent, const char *method, const char *task_id,
                       once_call_result *r)
{
    memset(r, 0, sizeof *r);
    if (agent == NULL || task_id == NULL || !once_id_valid(task_id)) {
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "invalid task ID");
        return ONCE_EINVAL;
    }
    once__strlcpy(r->task_id, task_id, sizeof r->task_id);
    json_t *p = json_pack("{s:s}", "id", task_id);
    char *params = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (params == NULL)
        return ONCE_ENOMEM;
    once__agent ag;
    int rc = once__agent_open(c, agent, 0, &ag);
    if (rc != ONCE_OK) {
        once_free(params);
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "%s", c->errmsg);
        return rc;
    }
    task_call t = {.rpc = {.agent = ag.name, .method = method, .params = params}};
    rc = once__retry_run(c, &ag, 0, task_attempt, &t, r);
    once_free(params); /* json_dumps allocates through once_malloc */
    if (rc == ONCE_OK && r->outcome == ONCE_OUTCOME_OK) {
        rc = once__result_from_task(r, t.rpc.result);
        if (rc != ONCE_OK) {
            r->outcome = ONCE_OUTCOME_ERROR;
            once__result_set_error(r, "%s: the result is not a Task", method);
            rc = ONCE_EIO;
        }
    }
    json_decref(t.rpc.result);
    /* Whichever endpoint answered, the agent's intents learn it. */
    if (rc == ONCE_OK && r->state != ONCE_STATE_UNKNOWN)
        once__outbox_observe(c->outbox, ag.name, task_id, r->state, r->endpoint,
                             once__client_now(c));
    once__agent_close(&ag);
    return rc;
}

int once_client_get(once_client *c, const char *agent, const char *task_id, once_call_result *r)
{
    return task_method(c, agent, "GetTask", task_id, r);
}

int once_client_cancel(once_client *c, const char *agent, const char *task_id,
                       once_call_result *r)
{
    return task_method(c, agent, "CancelTask", task_id, r);
}

/* ---------------------------------------------------------------------------
 * The outbox, for callers.
 */
int once_client_outbox(once_client *c, once_intent_state state, once_intent_fn fn, void *ctx)
{
    int rc = once__outbox_list(c->outbox, state, fn, ctx);
    if (rc != ONCE_OK)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    return rc;
}

int once_client_intent(once_client *c, int64_t seq, once_intent_fn fn, void *ctx)
{
    once__intent_row row;
    int rc = once__outbox_load(c->outbox, seq, &row);
    if (rc == ONCE_OK)
        fn(ctx, &row.it);
    else if (rc != ONCE_ENOTFOUND)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    once__intent_row_clear(&row);
    return rc;
}

int once_client_agent_of(once_client *c, const char *task_id, char *out, size_t outlen)
{
    return once__outbox_agent_of(c->outbox, task_id, out, outlen);
}

int once_client_prune(once_client *c, int64_t age_ms, unsigned *removed)
{
    int rc = once__outbox_prune(c->outbox, once__client_now(c) - age_ms, removed);
    if (rc != ONCE_OK)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    return rc;
}

int once_client_abandon(once_client *c, const char *id, once_intent_fn fn, void *ctx,
                        unsigned *abandoned)
{
    unsigned n = 0;
    int rc = id != NULL && id[0] != '\0'
                 ? once__outbox_abandon(c->outbox, id, once__client_now(c), fn, ctx, &n)
                 : ONCE_EINVAL;
    if (abandoned != NULL)
        *abandoned = n;
    if (rc == ONCE_EINVAL)
        once__client_seterr(c, "abandon needs an ID");
    else if (rc != ONCE_OK)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    return rc;
}
