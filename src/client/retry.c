/*
 * retry.c -- one call under the retry policy, and the JSON-RPC attempt.
 *
 * The loop: a call deposits into the agent's retry budget; each attempt gets
 * min(attempt timeout, time left before the deadline); a retryable failure
 * is followed by a full-jitter sleep, stretched to Retry-After when the
 * server asks for more. It stops at the first answer (result or refusal),
 * at a non-retryable error, or when the attempts, the deadline (a sleep that
 * would cross it is not started) or the budget run out.
 * Invariant: the body of every attempt of one call is byte-identical (the
 * caller builds it once), so the server can recognise a retry, whichever
 * of the agent's endpoints it reaches: an attempt that finds its endpoint
 * unreachable or unavailable hands the next one to the agent's next
 * endpoint (endpoints.c), under the same attempts, backoff and budget.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "client/client_int.h"
#include "core/jcs.h"
#include "core/v03.h"

/* The call stops short of an answer; the last failure stays in the text. */
static int exhausted(once_call_result *r, const char *reason, unsigned attempts)
{
    static const struct {
        const char *reason, *what;
    } whys[] = {{"DEADLINE_EXCEEDED", "the deadline passed"},
                {"ATTEMPTS_EXHAUSTED", "every attempt failed"},
                {"RETRY_BUDGET_EXHAUSTED", "the retry budget is exhausted"}};
    const char *what = "gave up";
    for (size_t i = 0; i < sizeof whys / sizeof whys[0]; i++)
        if (strcmp(whys[i].reason, reason) == 0)
            what = whys[i].what;
    r->outcome = ONCE_OUTCOME_EXHAUSTED;
    r->rpc_code = 0;
    once__strlcpy(r->reason, reason, sizeof r->reason);
    char last[600];
    once__strlcpy(last, r->error ? r->error : "no answer", sizeof last);
    once__result_set_error(r, "%s (%u attempt%s); last error: %s", what, attempts,
                           attempts == 1 ? "" : "s", last);
    return ONCE_ETIMEDOUT;
}

/* What an attempt's verdict, when it is final, makes of the whole call:
 * the outcome the caller reads and the call's return code. */
static const struct {
    once_outcome outcome;
    int rc;
} finals[] = {
    [ONCE__OK] = {ONCE_OUTCOME_OK, ONCE_OK},
    [ONCE__REFUSED] = {ONCE_OUTCOME_REFUSED, ONCE_OK},
    [ONCE__ERROR] = {ONCE_OUTCOME_ERROR, ONCE_EIO},
    [ONCE__INTERRUPTED] = {ONCE_OUTCOME_INTERRUPTED, ONCE_ECANCELED},
};

/* The URL in use answered: the agent's next call starts there, and r says
 * which one it was. */
static int answered(once_client *c, const once__agent *ag, once_call_result *r)
{
    once__agent_answered(c, ag);
    once_free(r->endpoint);
    r->endpoint = once_strdup(once__agent_url(ag));
    return r->endpoint != NULL ? ONCE_OK : ONCE_ENOMEM;
}

static int run(once_client *c, once__agent *ag, int64_t intent, once__attempt_fn fn, void *ctx,
               once_call_result *r)
{
    const once_retry_policy *p = &c->retry;
    const char *agent = ag->name;
    int64_t start = once__client_now(c);
    int64_t deadline = start + (p->deadline_ms > 0 ? p->deadline_ms : INT64_MAX / 4);
    unsigned max = p->max_attempts > 0 ? p->max_attempts : 1;
    int rc = once__outbox_budget(c->outbox, agent, 0, p, start, NULL, NULL);
    if (rc != ONCE_OK) {
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        return rc;
    }
    for (unsigned attempt = 0;;) {
        int64_t now = once__client_now(c);
        r->elapsed_ms = now - start;
        if (once__client_stopped(c)) {
            r->outcome = ONCE_OUTCOME_INTERRUPTED;
            return ONCE_ECANCELED;
        }
        if (now >= deadline)
            return exhausted(r, "DEADLINE_EXCEEDED", attempt);
        if (intent > 0 && (rc = once__outbox_attempt(c->outbox, intent, now)) != ONCE_OK) {
            once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
            return rc;
        }
        once__attempt a = {.timeout_ms = p->attempt_timeout_ms > 0 && p->attempt_timeout_ms < deadline - now
                                             ? p->attempt_timeout_ms
                                             : deadline - now,
                           .url = once__agent_url(ag),
                           .verdict = ONCE__ERROR,
                           .retry_after_ms = -1};
        r->attempts = ++attempt;
        rc = fn(c, ctx, &a, r);
        now = once__client_now(c);
        r->elapsed_ms = now - start;
        if (rc == ONCE_OK && a.answered)
            rc = answered(c, ag, r);
        if (rc != ONCE_OK)
            return rc;
        if (a.verdict != ONCE__RETRY) {
            r->outcome = finals[a.verdict].outcome;
            return finals[a.verdict].rc;
        }
        if (intent > 0 && r->error != NULL)
            once__outbox_error(c->outbox, intent, r->error, now);
        if (attempt >= max)
            return exhausted(r, "ATTEMPTS_EXHAUSTED", attempt);
        if (a.failover && ag->n > 1) {
            once__agent_next(ag);
            a.retry_after_ms = -1;   /* the failed endpoint's wish, not the next one's */
        }
        int64_t delay;
        if ((rc = once__backoff_delay(p, attempt - 1, c->rng, &delay)) != ONCE_OK)
            return rc;
        if (a.retry_after_ms > delay)
            delay = a.retry_after_ms;
        if (delay >= deadline - now) /* as a difference: delay may be huge */
            return exhausted(r, "DEADLINE_EXCEEDED", attempt);
        int allowed = 0;
        rc = once__outbox_budget(c->outbox, agent, 1, p, now, &allowed, NULL);
        if (rc != ONCE_OK) {
            once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
            return rc;
        }
        if (!allowed) {
            r->retries_denied = 1;
            return exhausted(r, "RETRY_BUDGET_EXHAUSTED", attempt);
        }
        if (once__client_sleep(c, delay) != ONCE_OK) {
            r->outcome = ONCE_OUTCOME_INTERRUPTED;
            r->elapsed_ms = once__client_now(c) - start;
            return ONCE_ECANCELED;
        }
    }
}

int once__retry_run(once_client *c, once__agent *ag, int64_t intent, once__attempt_fn fn,
                    void *ctx, once_call_result *r)
{
    c->errmsg[0] = '\0';
    int rc = run(c, ag, intent, fn, ctx, r);
    if (rc != ONCE_OK && r->outcome == ONCE_OUTCOME_OK) {
        /* A hard failure (outbox, memory) ended the call: never report it
         * as an answer. */
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "%s", c->errmsg[0] ? c->errmsg : once_strerror(rc));
    }
    return rc;
}

/* params (JSON text) converted by fn, as JSON text (once_malloc'd), or NULL. */
static char *params03(const char *params, json_t *(*fn)(const json_t *))
{
    json_t *p = NULL, *out = NULL;
    char *text = NULL;
    size_t len;
    if (once__json_loadb(params, strlen(params), 0, &p, NULL) == ONCE_OK && (out = fn(p)))
        (void)once__json_write(out, &text, &len);
    json_decref(p);
    json_decref(out);
    return text;
}

int once__rpc_attempt(once_client *c, once__rpc *q, once__attempt *a, once_call_result *r)
{
    /* An A2A 0.3 agent (its card says so): the same call under 0.3's
     * method name and shapes (card.c). */
    const once__v03_call *m03 =
        once__agent_v03(c, q->agent, a->url) ? once__v03_call_of(q->method) : NULL;
    const char *method = m03 != NULL ? m03->v03 : q->method;
    char *conv = m03 != NULL && m03->params_out ? params03(q->params, m03->params_out) : NULL;
    if (m03 != NULL && m03->params_out && conv == NULL)
        return ONCE_ENOMEM;
    const char *params = conv != NULL ? conv : q->params;
    /* The envelope's id is constant: the server's dedup looks at the
     * message, and a constant id keeps every attempt's body identical. */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"";
    size_t plen = strlen(params), mlen = strlen(method);
    size_t n = sizeof head - 1 + mlen + 12 + plen + 2;
    char *body = once_malloc(n);
    if (body == NULL) {
        once_free(conv);
        return ONCE_ENOMEM;
    }
    int blen = snprintf(body, n, "%s%s\",\"params\":%s}", head, method, params);
    once_free(conv);
    if (blen < 0 || (size_t)blen >= n) {
        once_free(body);
        return ONCE_ERROR;
    }
    once__http_req hq = {.method = "POST",
                         .url = a->url,
                         .body = body,
                         .len = (size_t)blen,
                         .token = c->token,
                         .tls = &c->tls,
                         .extension = q->extension,
                         .v03 = m03 != NULL,
                         .timeout_ms = a->timeout_ms,
                         .connect_timeout_ms = c->retry.connect_timeout_ms,
                         .interrupted = c->interrupted};
    once__http_resp hr;
    int rc = once__a2a_do(c, q->agent, &hq, &hr);
    once_free(body);
    r->rpc_code = 0;
    r->reason[0] = '\0';
    r->http_status = (int)hr.status;
    r->replayed = hr.replayed;
    if (rc == ONCE_ENOMEM) {
        once__http_resp_clear(&hr);
        return rc;
    }
    if (rc != ONCE_OK) {
        a->verdict = once__http_failure_verdict(&hr);
        a->failover = a->verdict == ONCE__RETRY;
        once__result_set_error(r, "%s: %s%s", a->url, hr.timed_out ? "timeout: " : "", hr.error);
        once__http_resp_clear(&hr);
        return ONCE_OK;
    }
    q->answered = 1;
    /* A gateway's or a draining replica's 5xx is its endpoint's trouble,
     * not the agent's answer: another replica may take the call. */
    a->failover = hr.status == 502 || hr.status == 503 || hr.status == 504;
    a->answered = !a->failover;
    if (hr.retry_after[0] != '\0') {
        int64_t ms;
        if (once__retry_after_parse(hr.retry_after, once__client_now(c), &ms) == ONCE_OK)
            a->retry_after_ms = ms;
    }
    json_t *doc = NULL;
    if (hr.body != NULL && once__json_loadb(hr.body, hr.len, 0, &doc, NULL) == ONCE_ENOMEM) {
        /* An answer this client could not read is no verdict on the call. */
        once__http_resp_clear(&hr);
        return ONCE_ENOMEM;
    }
    a->verdict = once__classify(hr.status, doc);
    const json_t *err = json_object_get(doc, "error");
    if (json_is_object(err)) {
        once__result_from_error(r, err);
    } else if (a->verdict == ONCE__OK) {
        json_decref(q->result);
        const json_t *res = json_object_get(doc, "result");
        q->result = m03 != NULL ? m03->result_in(res) : json_incref((json_t *)res);
        if (q->result == NULL && res != NULL) {
            json_decref(doc);
            once__http_resp_clear(&hr);
            return ONCE_ENOMEM;
        }
    } else {
        once__result_set_error(r, "HTTP %ld%s", hr.status,
                               doc == NULL && hr.len > 0 ? " (body is not JSON)" : "");
    }
    json_decref(doc);
    once__http_resp_clear(&hr);
    return ONCE_OK;
}
