/*
 * wait.c -- following a task until it is terminal or interrupted
 * (once_client_follow, once_client_wait): over SSE when the agent's card
 * says it streams, by polling GetTask otherwise.
 *
 * The stream: SubscribeToTask (stream.c), resumed after a drop with
 * Last-Event-ID = the last generation reported, so what is reported is the
 * task's event list in order, nothing twice (an event at or below the last
 * generation is dropped, whatever the agent sends). A connection that fails
 * before a stream opens, or a stream cut before it delivered anything new,
 * is a failed attempt: full-jitter backoff, the retry budget, at most
 * max_attempts in a row (then the wait fails, or polls if the agent did
 * answer each time: it is up, it just will not stream now). A stream that delivered events (or outlived the
 * idle timer) resets the count and is resumed at once. A terminal state
 * ends the wait with the Task from GetTask; an interrupted one is checked
 * with GetTask first (the task may have moved on since). An agent that
 * answers without a stream, or closes one in good order with nothing new,
 * is polled from then on.
 *
 * Replicas: a connection that fails, or a stream that is cut, hands the
 * next connection to the agent's next endpoint (endpoints.c), resumed by
 * the same Last-Event-ID: replicas sharing a store number a task's events
 * alike. Each GetTask fails over the same way (retry.c).
 *
 * Polling: the interval doubles from 100 ms to 2 s while nothing changes
 * and drops back to 100 ms on every change; each interval is jittered in
 * [i/2, i] so many waiters do not poll in lockstep. Each poll is a call
 * under the retry policy, so a flaky link does not end the wait.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "client/client_int.h"
#include "core/generation.h"
#include "core/jcs.h"

#define POLL_MIN_MS 100
#define POLL_MAX_MS 2000

/* One wait, on the caller's stack; only its own thread touches it. */
typedef struct follow {
    once_client *c;
    const once_wait_spec *w;
    once_call_result *r;         /* the caller's, filled at the end */
    int64_t start;
    int64_t gen;                 /* the last generation reported; 0 = none known */
    once_state state;            /* the last state reported */
    int reported;                /* anything was reported (or given by the caller) */
    unsigned attempts;           /* connections and GetTask attempts */
    unsigned conn_events;        /* new events on the current connection */
    json_t *last;                /* the last streamed event's body */
    once__agent ag;              /* the agent's endpoints; the stream's is ag's in use */
} follow;

static void take(once_call_result *dst, once_call_result *src)
{
    once_call_result_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}

static int64_t task_generation(const char *json)
{
    json_t *t = NULL;
    (void)once__json_loads(json, 0, &t, NULL); /* 0 when it cannot be read */
    int64_t g = once__generation_of(t);
    json_decref(t);
    return g;
}

static void report(follow *f, int64_t gen, once_state st, const char *json, int streamed)
{
    const once_wait_spec *w = f->w;
    if (gen > f->gen)
        f->gen = gen;
    int changed = st != ONCE_STATE_UNKNOWN && (st != f->state || !f->reported);
    if (st != ONCE_STATE_UNKNOWN)
        f->state = st;
    f->reported = 1;
    if (changed && w->on_state != NULL)
        w->on_state(w->ctx, w->task_id, st, json);
    if (w->on_event != NULL) {
        once_wait_event ev = {.task_id = w->task_id, .generation = gen, .state = f->state,
                              .json = json, .streamed = streamed};
        w->on_event(w->ctx, &ev);
    }
}

/* A polled Task: report it when it is news. */
static void report_task(follow *f, const once_call_result *g)
{
    int64_t gen = task_generation(g->json);
    if (gen > 0 ? gen > f->gen : (!f->reported || g->state != f->state))
        report(f, gen, g->state, g->json, 0);
}

static int done_state(once_state s)
{
    return once_state_terminal(s) || once_state_interrupted(s);
}

/* One GetTask into g; its attempts are counted. */
static int get(follow *f, once_call_result *g)
{
    int rc = once_client_get(f->c, f->w->agent, f->w->task_id, g);
    f->attempts += g->attempts;
    return rc;
}

/* Close the result: counts and time. */
static int finish(follow *f, int rc)
{
    f->r->attempts = f->attempts;
    f->r->elapsed_ms = once__client_now(f->c) - f->start;
    once__strlcpy(f->r->task_id, f->w->task_id, sizeof f->r->task_id);
    if (f->r->state == ONCE_STATE_UNKNOWN && !f->r->is_message &&
        f->r->outcome != ONCE_OUTCOME_REFUSED && f->r->outcome != ONCE_OUTCOME_ERROR)
        f->r->state = f->state;
    return rc;
}

static int interrupted(follow *f)
{
    f->r->outcome = ONCE_OUTCOME_INTERRUPTED;
    return finish(f, ONCE_ECANCELED);
}

static int wait_timeout(follow *f)
{
    f->r->outcome = ONCE_OUTCOME_EXHAUSTED;
    f->r->state = f->state;
    snprintf(f->r->reason, sizeof f->r->reason, "WAIT_TIMEOUT");
    once__result_set_error(f->r, "the task is still %s", once_state_name(f->state));
    return finish(f, ONCE_ETIMEDOUT);
}

static int timed_out(const follow *f)
{
    return f->w->timeout_ms > 0 && once__client_now(f->c) - f->start >= f->w->timeout_ms;
}

/* ---------------------------------------------------------------------------
 * Polling.
 */
static int follow_poll(follow *f, int sleep_first)
{
    once_client *c = f->c;
    int64_t interval = POLL_MIN_MS;
    for (int first = 1;; first = 0) {
        if (!(first && sleep_first == 0)) {
            if (timed_out(f))
                return wait_timeout(f);
            uint64_t u = 0;
            int rc = once_rng_uniform(c->rng, (uint64_t)(interval / 2) + 1, &u);
            if (rc != ONCE_OK)
                return finish(f, rc);
            int64_t delay = interval / 2 + (int64_t)u;
            int64_t left = f->w->timeout_ms > 0
                               ? f->start + f->w->timeout_ms - once__client_now(c)
                               : INT64_MAX;
            if (delay > left)
                delay = left > 0 ? left : 0;
            if (once__client_sleep(c, delay) != ONCE_OK)
                return interrupted(f);
            interval = interval * 2 > POLL_MAX_MS ? POLL_MAX_MS : interval * 2;
        }
        once_call_result g;
        int rc = get(f, &g);
        if (rc != ONCE_OK || g.outcome != ONCE_OUTCOME_OK) {
            take(f->r, &g);
            return finish(f, rc);
        }
        once_state before = f->state;
        int64_t gen_before = f->gen;
        report_task(f, &g);
        if (f->state != before || f->gen != gen_before)
            interval = POLL_MIN_MS;
        int done = done_state(g.state);
        take(f->r, &g);
        if (done)
            return finish(f, ONCE_OK);
    }
}

/* ---------------------------------------------------------------------------
 * Streaming.
 */

/* Does the card at this endpoint say capabilities.streaming? -1 when it
 * cannot be read, 0 when it says no or cannot be parsed. */
static int card_streams(once_client *c, const char *endpoint)
{
    once__http_resp h;
    json_t *card = NULL;
    int rc = once__card_fetch(c, endpoint, c->retry.attempt_timeout_ms, &card, &h);
    once__http_resp_clear(&h);
    if (rc == ONCE_EIO || rc == ONCE_ENOTFOUND || rc == ONCE_EINVAL)
        return -1;
    /* Unparseable, or unread for want of memory: poll instead. */
    int yes = json_is_true(json_object_get(json_object_get(card, "capabilities"), "streaming"));
    json_decref(card);
    return yes;
}

/* Does the agent stream? Its endpoints are asked in turn until one's card
 * is read (that one is then in use). Anything unreadable means no: polling
 * works with every agent. */
static int agent_streams(once_client *c, once__agent *ag)
{
    for (size_t i = 0; i < ag->n && !once__client_stopped(c); i++) {
        int yes = card_streams(c, once__agent_url(ag));
        if (yes >= 0)
            return yes;
        once__agent_next(ag);
    }
    return 0;
}

static int on_stream_event(void *ctx, int64_t gen, const json_t *result, once__end *end)
{
    follow *f = ctx;
    if (json_is_object(json_object_get(result, "message"))) {
        /* A direct Message: the answer, nothing more will follow. */
        once_call_result_clear(f->r);
        if (once__result_from_send(f->r, result) != ONCE_OK)
            return ONCE_ENOMEM;
        f->r->outcome = ONCE_OUTCOME_OK;
        *end = ONCE__END_MESSAGE;
        return ONCE_OK;
    }
    const char *kind = json_object_get(result, "task")           ? "task"
                       : json_object_get(result, "statusUpdate") ? "statusUpdate"
                                                                 : "artifactUpdate";
    const json_t *body = json_object_get(result, kind);
    if (gen > 0 && gen <= f->gen)
        return ONCE_OK;   /* reported already */
    const char *st = json_string_value(json_object_get(json_object_get(body, "status"), "state"));
    once_state s = st ? once_state_parse(st) : f->state;
    /* An agent without generations starts every subscription with the Task
     * as it is: not news when its state is the one reported last. */
    if (gen == 0 && strcmp(kind, "task") == 0 && f->reported && s == f->state)
        return ONCE_OK;
    char *text = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text == NULL)
        return ONCE_ENOMEM;
    report(f, gen, s, text, 1);
    once_free(text); /* json_dumps allocates through once_malloc */
    json_decref(f->last);
    f->last = json_deep_copy(body);
    f->conn_events++;
    if (once_state_terminal(s))
        *end = ONCE__END_TERMINAL;
    else if (once_state_interrupted(s))
        *end = ONCE__END_INTERRUPTED;
    return ONCE_OK;
}

/* The stream showed a terminal state: the result is the Task as GetTask
 * has it (artifacts and all); if that fails, what the stream showed. */
static int end_terminal(follow *f)
{
    once_call_result g;
    int rc = get(f, &g);
    if (rc == ONCE_OK && g.outcome == ONCE_OUTCOME_OK) {
        report_task(f, &g);
        take(f->r, &g);
        return finish(f, ONCE_OK);
    }
    once_call_result_clear(&g);
    once_call_result_clear(f->r);
    f->r->outcome = ONCE_OUTCOME_OK;
    f->r->state = f->state;
    f->r->json = f->last ? json_dumps(f->last, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    once__outbox_observe(f->c->outbox, f->ag.name, f->w->task_id, f->state,
                         once__agent_url(&f->ag), once__client_now(f->c));
    return finish(f, ONCE_OK);
}

/* The stream showed input-required / auth-required. *done = 1 when GetTask
 * agrees (the task did not move on meanwhile); else the stream resumes. */
static int end_interrupted(follow *f, int *done)
{
    once_call_result g;
    int rc = get(f, &g);
    *done = 1;
    if (rc != ONCE_OK || g.outcome != ONCE_OUTCOME_OK) {
        take(f->r, &g);
        return finish(f, rc);
    }
    int64_t gen = task_generation(g.json);
    if (gen > f->gen || !done_state(g.state)) {
        /* It moved on: the stream, resumed, tells what happened since. */
        once_call_result_clear(&g);
        *done = 0;
        return ONCE_OK;
    }
    report_task(f, &g);
    take(f->r, &g);
    return finish(f, ONCE_OK);
}

static int exhausted(follow *f, const char *reason, const char *what, const char *last)
{
    f->r->outcome = ONCE_OUTCOME_EXHAUSTED;
    once__strlcpy(f->r->reason, reason, sizeof f->r->reason);
    once__result_set_error(f->r, "%s; last error: %s", what, last);
    return finish(f, ONCE_ETIMEDOUT);
}

static int follow_stream(follow *f)
{
    once_client *c = f->c;
    const once_retry_policy *p = &c->retry;
    unsigned max = p->max_attempts > 0 ? p->max_attempts : 1;
    unsigned failures = 0;
    int rc = once__outbox_budget(c->outbox, f->ag.name, 0, p, once__client_now(c), NULL, NULL);
    if (rc != ONCE_OK) {
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        return finish(f, rc);
    }
    for (;;) {
        if (once__client_stopped(c))
            return interrupted(f);
        int64_t left = 0;
        if (f->w->timeout_ms > 0) {
            left = f->start + f->w->timeout_ms - once__client_now(c);
            if (left <= 0)
                return wait_timeout(f);
        }
        f->conn_events = 0;
        once__stream_out out;
        rc = once__stream_subscribe(c, f->ag.name, once__agent_url(&f->ag), f->w->task_id, f->gen,
                                    left, on_stream_event, f, &out);
        f->attempts++;
        if (rc != ONCE_OK) {
            f->r->outcome = ONCE_OUTCOME_ERROR;
            once__result_set_error(f->r, "%s", once_strerror(rc));
            return finish(f, rc);
        }
        if (out.conn == ONCE__CONN_INTERRUPTED)
            return interrupted(f);
        if (out.conn == ONCE__CONN_UNSUPPORTED)
            return follow_poll(f, 0);
        if (out.conn == ONCE__CONN_STREAM) {
            once__agent_answered(c, &f->ag);
            if (out.end == ONCE__END_TERMINAL)
                return end_terminal(f);
            if (out.end == ONCE__END_MESSAGE)
                return finish(f, ONCE_OK);
            if (out.end == ONCE__END_INTERRUPTED) {
                int done;
                rc = end_interrupted(f, &done);
                if (done)
                    return rc;
                failures = 0;
                continue;
            }
            if (out.timed_out || timed_out(f))
                return wait_timeout(f);
            if (f->conn_events > 0 || out.idle) {
                failures = 0;   /* progress: resume at once */
                if (!out.clean)
                    once__agent_next(&f->ag);   /* cut: its replica may be going away */
                continue;
            }
            if (out.clean && out.end == ONCE__END_OPEN)
                return follow_poll(f, 0);   /* it will not stream this task */
        } else if (timed_out(f)) {
            return wait_timeout(f);
        }
        /* A failed attempt: nothing new came of it. An agent that keeps
         * answering but will not stream (503: too many streams) is polled;
         * one that cannot be reached has failed the wait. */
        if (++failures >= max) {
            if (out.http_status != 0)
                return follow_poll(f, 0);
            return exhausted(f, "ATTEMPTS_EXHAUSTED", "the stream failed on every attempt",
                             out.error);
        }
        int64_t delay;
        if ((rc = once__backoff_delay(p, failures - 1, c->rng, &delay)) != ONCE_OK)
            return finish(f, rc);
        if (f->ag.n > 1)
            once__agent_next(&f->ag);   /* the failed endpoint's Retry-After is its own */
        else if (out.retry_after_ms > delay)
            delay = out.retry_after_ms;
        int64_t now = once__client_now(c);
        if (f->w->timeout_ms > 0 && now + delay > f->start + f->w->timeout_ms)
            delay = f->start + f->w->timeout_ms - now;
        int allowed = 0;
        rc = once__outbox_budget(c->outbox, f->ag.name, 1, p, now, &allowed, NULL);
        if (rc != ONCE_OK) {
            once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
            return finish(f, rc);
        }
        if (!allowed) {
            f->r->retries_denied = 1;
            return exhausted(f, "RETRY_BUDGET_EXHAUSTED", "the retry budget is exhausted",
                             out.error);
        }
        if (once__client_sleep(c, delay) != ONCE_OK)
            return interrupted(f);
    }
}

/* ---------------------------------------------------------------------------
 * The entry points.
 */
int once_client_follow(once_client *c, const once_wait_spec *w, once_call_result *r)
{
    memset(r, 0, sizeof *r);
    if (w->agent == NULL || w->task_id == NULL || !once_id_valid(w->task_id)) {
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "invalid agent or task ID");
        return ONCE_EINVAL;
    }
    follow f = {.c = c, .w = w, .r = r, .start = once__client_now(c)};
    int rc = once__agent_open(c, w->agent, 0, &f.ag);
    if (rc != ONCE_OK) {
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "%s", c->errmsg);
        return rc;
    }
    if (w->after_generation > 0) {
        f.gen = w->after_generation;
        f.state = w->state;
        f.reported = 1;
    } else {
        once_call_result g;
        rc = get(&f, &g);
        int done = rc != ONCE_OK || g.outcome != ONCE_OUTCOME_OK;
        if (!done)
            report_task(&f, &g);
        done = done || done_state(g.state);
        take(r, &g);
        if (done) {
            once__agent_close(&f.ag);
            return finish(&f, rc);
        }
    }
    if (!w->poll && agent_streams(c, &f.ag))
        rc = follow_stream(&f);
    else
        rc = follow_poll(&f, w->after_generation <= 0);
    json_decref(f.last);
    once__agent_close(&f.ag);
    return rc;
}

int once_client_wait(once_client *c, const char *agent, const char *task_id, int64_t timeout_ms,
                     once_state_fn on_state, void *ctx, once_call_result *r)
{
    once_wait_spec w = {.agent = agent, .task_id = task_id, .timeout_ms = timeout_ms,
                        .on_state = on_state, .ctx = ctx};
    return once_client_follow(c, &w, r);
}
