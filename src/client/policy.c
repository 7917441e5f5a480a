/*
 * policy.c -- the pure parts of the client's retry policy: full-jitter
 * exponential backoff and Retry-After parsing (both shared with push
 * delivery through core/backoff.c), the retry-budget token bucket, the
 * classification of an answer (retry, refusal, error) and the outbox state
 * machine.
 *
 * Invariants: a backoff delay never exceeds min(cap, base * 2^k) and never
 * overflows; the bucket never holds more than budget_burst nor less than 0
 * tokens, and a retry is allowed only by taking a whole token; a refusal
 * (the agent's structured verdict about the task) is never classified as
 * retryable unless the server itself marks it so.
 */
#include <string.h>

#include "client/client_int.h"
#include "core/backoff.h"

/* ---------------------------------------------------------------------------
 * Backoff: the policy's numbers handed to the shared helper (core/backoff.h).
 */
int64_t once__backoff_ceiling(const once_retry_policy *p, unsigned retry)
{
    return once__backoff_ceiling_ms(p->backoff_base_ms, retry, p->backoff_cap_ms);
}

int once__backoff_delay(const once_retry_policy *p, unsigned retry, const once_rng *rng,
                        int64_t *out_ms)
{
    return once__backoff_jitter_ms(p->backoff_base_ms, retry, p->backoff_cap_ms, rng, out_ms);
}

/* ---------------------------------------------------------------------------
 * Retry budget. Tokens are doubles; sums of 0.1 never land exactly on 1.0,
 * so a token counts as whole from 1 - EPS.
 */
#define BUCKET_EPS 1e-9

void once__bucket_init(once__bucket *b, const once_retry_policy *p, int64_t now_ms)
{
    b->tokens = p->budget_burst > 0 ? p->budget_burst : 0;
    b->updated_ms = now_ms;
}

void once__bucket_refill(once__bucket *b, const once_retry_policy *p, int64_t now_ms)
{
    double burst = p->budget_burst > 0 ? p->budget_burst : 0;
    if (now_ms > b->updated_ms && p->budget_refill_per_s > 0)
        b->tokens += p->budget_refill_per_s * (double)(now_ms - b->updated_ms) / 1000.0;
    /* A clock that went back must not mint tokens later: restart from now. */
    b->updated_ms = now_ms;
    if (b->tokens > burst)
        b->tokens = burst;
    if (b->tokens < 0)
        b->tokens = 0;
}

void once__bucket_deposit(once__bucket *b, const once_retry_policy *p, int64_t now_ms)
{
    once__bucket_refill(b, p, now_ms);
    if (p->budget_ratio > 0)
        b->tokens += p->budget_ratio;
    if (b->tokens > p->budget_burst)
        b->tokens = p->budget_burst > 0 ? p->budget_burst : 0;
}

int once__bucket_take(once__bucket *b, const once_retry_policy *p, int64_t now_ms)
{
    once__bucket_refill(b, p, now_ms);
    if (b->tokens < 1.0 - BUCKET_EPS)
        return 0;
    b->tokens -= 1.0;
    if (b->tokens < 0)
        b->tokens = 0;
    return 1;
}

/* ---------------------------------------------------------------------------
 * Retry-After. The client honours what the server asks for and lets the
 * call's deadline decide (a wait that would cross it ends the call), so the
 * cap here only keeps the arithmetic in range: it is the horizon retry.c
 * gives a call without a deadline.
 */
#define RETRY_AFTER_MAX_MS (INT64_MAX / 4)

int once__retry_after_parse(const char *v, int64_t now_ms, int64_t *out_ms)
{
    return once__retry_after_ms(v, now_ms, RETRY_AFTER_MAX_MS, out_ms);
}

/* ---------------------------------------------------------------------------
 * Classification of an answer.
 */
int once__is_refusal(int code, const char *reason)
{
    if (code == -32001 || code == -32002 || code == -32004)
        return 1;
    return reason != NULL && strcmp(reason, "MESSAGE_ID_REUSED") == 0;
}

/* The first google.rpc.ErrorInfo in error.data, or NULL. */
static const json_t *error_info(const json_t *err)
{
    const json_t *data = json_object_get(err, "data");
    size_t i;
    const json_t *d;
    if (json_is_object(data))
        return data;
    json_array_foreach(data, i, d)
    {
        const char *t = json_string_value(json_object_get(d, "@type"));
        if (t != NULL && strstr(t, "google.rpc.ErrorInfo") != NULL)
            return d;
    }
    return NULL;
}

once__verdict once__classify(long http_status, const json_t *body)
{
    if (http_status == 0)
        return ONCE__RETRY;
    if (http_status == 429 || http_status == 502 || http_status == 503 || http_status == 504)
        return ONCE__RETRY;
    if (!json_is_object(body))
        return ONCE__ERROR;
    const json_t *err = json_object_get(body, "error");
    if (json_is_object(err)) {
        const json_t *info = error_info(err);
        const char *reason = json_string_value(json_object_get(info, "reason"));
        const json_t *retryable = json_object_get(json_object_get(info, "metadata"), "retryable");
        if ((reason != NULL && strcmp(reason, "STORE_UNAVAILABLE") == 0) || json_is_true(retryable) ||
            (json_is_string(retryable) && strcmp(json_string_value(retryable), "true") == 0))
            return ONCE__RETRY;
        int code = (int)json_integer_value(json_object_get(err, "code"));
        return once__is_refusal(code, reason) ? ONCE__REFUSED : ONCE__ERROR;
    }
    if (http_status == 200 && json_object_get(body, "result") != NULL)
        return ONCE__OK;
    return ONCE__ERROR;
}

/* ---------------------------------------------------------------------------
 * The outbox state machine.
 */
int once__intent_transition_ok(once_intent_state from, once_intent_state to)
{
    switch (from) {
    case ONCE_INTENT_PENDING:
        return to == ONCE_INTENT_PENDING || to == ONCE_INTENT_ACKNOWLEDGED ||
               to == ONCE_INTENT_FINAL || to == ONCE_INTENT_REFUSED || to == ONCE_INTENT_ABANDONED;
    case ONCE_INTENT_ACKNOWLEDGED:
        return to == ONCE_INTENT_ACKNOWLEDGED || to == ONCE_INTENT_FINAL ||
               to == ONCE_INTENT_REFUSED || to == ONCE_INTENT_ABANDONED;
    default:
        return 0;   /* final, refused and abandoned are where an intent ends */
    }
}

static const char *const intent_names[] = {NULL,      "pending", "acknowledged", "final",
                                           "refused", "abandoned"};

const char *once_intent_state_name(once_intent_state s)
{
    if (s >= ONCE_INTENT_PENDING && s <= ONCE_INTENT_LAST)
        return intent_names[s];
    return "unknown";
}

once_intent_state once__intent_state_parse(const char *s)
{
    for (int i = ONCE_INTENT_PENDING; i <= ONCE_INTENT_LAST; i++)
        if (s != NULL && strcmp(s, intent_names[i]) == 0)
            return (once_intent_state)i;
    return (once_intent_state)0;
}

const char *once_outcome_name(once_outcome o)
{
    static const char *const names[] = {"ok", "refused", "exhausted", "error", "interrupted"};
    if ((unsigned)o < sizeof names / sizeof names[0])
        return names[o];
    return "unknown";
}

void once_retry_policy_default(once_retry_policy *p)
{
    p->max_attempts = 5;
    p->attempt_timeout_ms = 10000;
    p->connect_timeout_ms = 2000;
    p->deadline_ms = 60000;
    p->backoff_base_ms = 200;
    p->backoff_cap_ms = 10000;
    p->budget_ratio = 0.1;
    p->budget_burst = 10;
    p->budget_refill_per_s = 0.1;
}
