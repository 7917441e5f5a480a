/*
 * policy.c -- the pure parts of the client's retry policy: full-jitter
 * exponential backoff, the retry-budget token bucket, Retry-After parsing,
 * the classification of an answer (retry, refusal, error) and the outbox
 * state machine.
 *
 * Invariants: a backoff delay never exceeds min(cap, base * 2^k) and never
 * overflows; the bucket never holds more than budget_burst nor less than 0
 * tokens, and a retry is allowed only by taking a whole token; a refusal
 * (the agent's structured verdict about the task) is never classified as
 * retryable unless the server itself marks it so.
 */
#include <string.h>

#include "client/client_int.h"

/* ---------------------------------------------------------------------------
 * Backoff.
 */
int64_t once__backoff_ceiling(const once_retry_policy *p, unsigned retry)
{
    int64_t base = p->backoff_base_ms > 0 ? p->backoff_base_ms : 0;
    int64_t cap = p->backoff_cap_ms > 0 ? p->backoff_cap_ms : 0;
    if (base >= cap)
        return cap;
    /* Double until the cap: at most 63 doublings before base >= cap. */
    int64_t v = base;
    for (unsigned i = 0; i < retry && v < cap; i++)
        v = v > cap / 2 ? cap : v * 2;
    return v < cap ? v : cap;
}

int once__backoff_delay(const once_retry_policy *p, unsigned retry, const once_rng *rng,
                        int64_t *out_ms)
{
    int64_t ceil = once__backoff_ceiling(p, retry);
    uint64_t u = 0;
    *out_ms = 0;
    if (ceil <= 0)
        return ONCE_OK;
    int rc = once_rng_uniform(rng, (uint64_t)ceil + 1, &u);
    if (rc != ONCE_OK)
        return rc;
    *out_ms = (int64_t)u;
    return ONCE_OK;
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
 * Retry-After (RFC 9110 section 10.2.3).
 */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    /* Howard Hinnant's algorithm: days since 1970-01-01, proleptic Gregorian. */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

/* "Sun, 06 Nov 1994 08:49:37 GMT": exactly 29 characters. */
static int imf_fixdate(const char *s, size_t n, int64_t *epoch_ms)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const char days[] = "MonTueWedThuFriSatSun";
    if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
        s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
        return 0;
    int dayok = 0;
    for (int i = 0; i < 7; i++)
        dayok |= memcmp(s, days + 3 * i, 3) == 0;
    int mon = 0;
    for (int i = 0; i < 12; i++)
        if (memcmp(s + 8, months + 3 * i, 3) == 0)
            mon = i + 1;
    int64_t d, y, hh, mm, ss;
    if (!dayok || mon == 0 || !digits(s + 5, 2, &d) || !digits(s + 12, 4, &y) ||
        !digits(s + 17, 2, &hh) || !digits(s + 20, 2, &mm) || !digits(s + 23, 2, &ss))
        return 0;
    if (d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60)
        return 0;
    int64_t t = days_from_civil(y, mon, d) * 86400 + hh * 3600 + mm * 60 + ss;
    *epoch_ms = t * 1000;
    return 1;
}

int once__retry_after_parse(const char *v, int64_t now_ms, int64_t *out_ms)
{
    if (v == NULL)
        return ONCE_EINVAL;
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
        n--;
    if (n == 0)
        return ONCE_EINVAL;
    int64_t secs;
    if (n <= 12 && digits(v, n, &secs)) {
        /* Up to 12 digits cannot overflow ms in int64. */
        *out_ms = secs * 1000;
        return ONCE_OK;
    }
    int64_t at;
    if (imf_fixdate(v, n, &at)) {
        *out_ms = at > now_ms ? at - now_ms : 0;
        return ONCE_OK;
    }
    return ONCE_EINVAL;
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
               to == ONCE_INTENT_FINAL || to == ONCE_INTENT_REFUSED;
    case ONCE_INTENT_ACKNOWLEDGED:
        return to == ONCE_INTENT_ACKNOWLEDGED || to == ONCE_INTENT_FINAL ||
               to == ONCE_INTENT_REFUSED;
    default:
        return 0;   /* final and refused are where an intent ends */
    }
}

static const char *const intent_names[] = {NULL, "pending", "acknowledged", "final", "refused"};

const char *once_intent_state_name(once_intent_state s)
{
    if (s >= ONCE_INTENT_PENDING && s <= ONCE_INTENT_REFUSED)
        return intent_names[s];
    return "unknown";
}

once_intent_state once__intent_state_parse(const char *s)
{
    for (int i = ONCE_INTENT_PENDING; i <= ONCE_INTENT_REFUSED; i++)
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
