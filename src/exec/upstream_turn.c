/*
 * upstream_turn.c -- one turn of a once task run by the upstream agent.
 *
 * A turn sends the upstream message with a messageId derived from
 * (principal, once task ID, the client's messageId) and a contextId derived
 * from (principal, once contextId): one upstream context per once context.
 * A continuation goes to the stored upstream task with its contextId. When
 * the upstream's card says it streams, the send is SendStreamingMessage and
 * each event is mapped as it arrives (upstream_map.c: status updates,
 * artifact chunks appended, a Message); else SendMessage with
 * returnImmediately, so the answer names the upstream task at once. The
 * upstream task ID (the answer's, or the stream's first event's) is
 * checkpointed before anything else is written. Then, until the task is
 * interrupted or terminal, the turn follows it: by SubscribeToTask when the
 * upstream streams (a cut stream is opened again), by GetTask polled with
 * backoff when it does not or refuses to (a task already terminal). A
 * stream that breaks before it named the upstream task is a lost answer.
 *
 * A turn that runs again (takeover, a lost answer, an outage) reads the
 * checkpoint: a message already answered is followed, never re-sent; one
 * whose send was begun ("pending") is looked for by the rung the task
 * recorded (upstream.h) before any re-send. A canceled once task sends
 * CancelTask upstream (best effort, retried) before the turn returns; a
 * turn that only lost its lease (another replica follows the task now) or
 * a stopping onced leaves the upstream task alone.
 *
 * The derived IDs: once_derive_task_id(key = "once:gateway:<what>",
 * principal, ...): HMAC-SHA256 formatted as a UUID. The principal is in
 * every one, so two tenants' tasks never meet at the upstream. Rung 1's
 * upstream task ID is once_child_id(<derived task key>, 1), the delegation
 * rule's child of the once task.
 *
 * A slow upstream task does not hold a worker thread: the turn holds it
 * while something happens (a stream delivers events; polls find changes,
 * the first pauses short), and parks the turn (once_work_park) once the
 * upstream task goes quiet: a stream without an event for HOLD_MS is
 * closed, a poll pause that reaches PARK_FROM_MS is spent parked. A parked
 * turn runs again after its pause and looks with GetTask: nothing new parks
 * it again for longer (up to the poll ceiling), a change takes it back to
 * following (by SubscribeToTask when the upstream streams). A cancel while
 * parked runs the turn at once, canceled, and it sends CancelTask upstream
 * as any canceled turn does. Sleeps shorter than a park go through
 * once_work_sleep (a cancel wakes it, and stops an open stream once its
 * upstream task is known).
 */
#include <stdio.h>
#include <string.h>

#include "core/backoff.h"
#include "core/jcs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "engine/work_tree.h"
#include "exec/upstream.h"

#define POLL_FIRST_MS 100
#define LIST_PAGES_MAX 20
/* A pause this long or longer is spent parked, not on the worker. */
#define PARK_FROM_MS 400
/* A stream without an event this long is closed and the turn parked. */
#define HOLD_MS 1000

/* One turn; only its worker thread touches it. */
typedef struct turn {
    gw *g;
    once_work *w;
    const char *principal;
    json_t *cp;                   /* the checkpoint's "upstream" object (owned) */
    char mid[ONCE_UUID_LEN + 1];  /* the upstream messageId of this turn */
    gw_view view;
    int no_sub;                   /* SubscribeToTask was refused: poll GetTask */
} turn;

/* One streamed call of a turn (on the caller's stack): what its events did. */
typedef struct tap {
    turn *t;
    int named;                    /* the upstream task is known and checkpointed */
    int ended;                    /* an event ended the turn (or a write failed) */
    int events;
    int rc;                       /* with ended: the turn's result */
    int64_t last_ms;              /* monotonic: the stream opened or its last event */
    int quiet;                    /* closed after HOLD_MS without an event */
} tap;

/* ---------------------------------------------------------------------------
 * Derived IDs and the checkpoint.
 */

static int derive(const char *what, const char *principal, const char *a, const char *b,
                  char out[ONCE_UUID_LEN + 1])
{
    char key[64], in[2 * ONCE_ID_MAX + 2 * ONCE_DIGEST_HEX + 2];
    snprintf(key, sizeof key, "once:gateway:%s", what);
    if ((size_t)snprintf(in, sizeof in, "%s|%s", a, b ? b : "") >= sizeof in)
        return ONCE_ERANGE;
    return once_derive_task_id((const uint8_t *)key, strlen(key), principal, in, out);
}

/* The client's messageId, or the digest of a message without one (0.1). */
static int client_mid(const json_t *m, char out[ONCE_DIGEST_HEX + 1])
{
    const char *mid = json_string_value(json_object_get(m, "messageId"));
    if (mid != NULL && mid[0] != '\0') {
        snprintf(out, ONCE_DIGEST_HEX + 1, "%s", mid);
        return ONCE_OK;
    }
    uint8_t d[ONCE_SHA256_LEN];
    int rc = once__message_digest_json(m, d);
    if (rc == ONCE_OK)
        once_hex(d, sizeof d, out);
    return rc;
}

static const char *cp_str(const turn *t, const char *key)
{
    return json_string_value(json_object_get(t->cp, key));
}

static int cp_int(const turn *t, const char *key)
{
    return (int)json_integer_value(json_object_get(t->cp, key));
}

static int cp_set(turn *t, const char *key, json_t *v)
{
    return json_object_set_new(t->cp, key, v) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

static int cp_load(turn *t)
{
    const char *text = once_work_checkpoint(t->w);
    json_t *doc = NULL;
    if (text != NULL && once__json_loads(text, 0, &doc, NULL) == ONCE_ENOMEM)
        return ONCE_ENOMEM;
    json_t *up = json_object_get(doc, "upstream");
    t->cp = json_is_object(up) ? json_incref(up) : json_object();
    json_decref(doc);
    return t->cp != NULL ? ONCE_OK : ONCE_ENOMEM;
}

static int cp_store(turn *t)
{
    json_t *doc = json_pack("{s:O}", "upstream", t->cp);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (text == NULL)
        return ONCE_ENOMEM;
    int rc = once_work_checkpoint_set(t->w, text, once_work_step(t->w));
    once_free(text);
    return rc;
}

static int was_sent(const turn *t)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(t->cp, "sent"), i, m) {
        if (json_is_string(m) && strcmp(json_string_value(m), t->mid) == 0)
            return 1;
    }
    return 0;
}

/* The answer named the upstream task: remember it and that this message
 * reached it. */
static int mark_sent(turn *t, const char *task_id, const char *context_id)
{
    json_t *sent = json_object_get(t->cp, "sent");
    if (!json_is_array(sent) && cp_set(t, "sent", sent = json_array()) != ONCE_OK)
        return ONCE_ENOMEM;
    if (!was_sent(t) && json_array_append_new(sent, json_string(t->mid)) != 0)
        return ONCE_ENOMEM;
    json_object_del(t->cp, "pending");
    int rc = cp_set(t, "taskId", json_string(task_id));
    if (rc == ONCE_OK && context_id != NULL) {
        /* Rung 2 holds only if the upstream kept the contextId we chose. */
        const char *ours = cp_str(t, "contextId");
        if (cp_int(t, "rung") == 2 && ours != NULL && strcmp(ours, context_id) != 0)
            rc = cp_set(t, "rung", json_integer(4));
        if (rc == ONCE_OK)
            rc = cp_set(t, "contextId", json_string(context_id));
    }
    return rc;
}

static void log_line(const turn *t, int level, const char *event, const char *what)
{
    once__logline l;
    if (!once__log_begin(&l, level, event))
        return;
    once__log_str(&l, "task", once_work_task_id(t->w));
    once__log_str(&l, "upstream", t->g->url);
    once__log_str(&l, "upstream_task", cp_str(t, "taskId"));
    once__log_int(&l, "rung", cp_int(t, "rung"));
    once__log_str(&l, "detail", what);
    once__log_end(&l);
}

/* ---------------------------------------------------------------------------
 * Calls.
 */

/* A request of this turn: its principal, and the extension at rung 1
 * (the upstream is another onced). */
static gw_req req_for(const turn *t, const char *method, const json_t *params)
{
    gw_req q = {.method = method,
                .params = params,
                .principal = t->principal,
                .extension = cp_int(t, "rung") == 1};
    return q;
}

static int call(turn *t, const char *method, json_t *params, gw_res *r)
{
    gw_req q = req_for(t, method, params);
    int rc = params ? once__gw_call(t->g, t->w, &q, r) : ONCE_ENOMEM;
    json_decref(params);
    return rc;
}

/* The turn was canceled, or lost its lease, or onced stops. Only a cancel
 * of the once task reaches the upstream task. */
static int on_cancel(turn *t)
{
    once_state s = ONCE_STATE_UNKNOWN;
    const char *id = cp_str(t, "taskId");
    if (id == NULL || once__work_stored_state(t->w, &s) != ONCE_OK || s != ONCE_STATE_CANCELED)
        return ONCE_ECANCELED;
    json_t *params = json_pack("{s:s}", "id", id);
    gw_req q = req_for(t, "CancelTask", params);
    q.despite_cancel = 1;
    gw_res r;
    int rc = params ? once__gw_call(t->g, t->w, &q, &r) : ONCE_ENOMEM;
    log_line(t, rc == ONCE_OK ? ONCE_LOG_INFO : ONCE_LOG_WARN, "gateway_cancel",
             rc == ONCE_OK ? "CancelTask sent upstream" : r.error);
    once__gw_res_clear(&r);
    json_decref(params);
    return ONCE_ECANCELED;
}

/* A call that did not answer: the turn's end, with the reason. */
static int call_failed(turn *t, int rc, const gw_res *r)
{
    if (rc == ONCE_ECANCELED)
        return on_cancel(t);
    if (rc == ONCE_ENOMEM)
        return rc;
    return once__gw_fail(t->w, "%s", r->error);
}

/* call_failed for a look-up: 1 when the turn ended with the task failed. */
static int ended(turn *t, int rc, const gw_res *r)
{
    rc = call_failed(t, rc, r);
    return rc == ONCE_OK ? 1 : rc;
}

/* The upstream task is known: checkpoint it before anything else. */
static int name_task(turn *t, const char *id, const char *context_id)
{
    int rc = mark_sent(t, id, context_id);
    return rc == ONCE_OK ? cp_store(t) : rc;
}

/* A write's result at the end of a turn: a fence moved by a cancel is
 * the cancel's business. */
static int finish(turn *t, int rc)
{
    return rc == ONCE_EFENCED && once_work_canceled(t->w) ? on_cancel(t) : rc;
}

/* ---------------------------------------------------------------------------
 * Streams: SendStreamingMessage and SubscribeToTask.
 */

/* One event of a stream: the first names the upstream task (checkpointed
 * before it is applied), each becomes the writes it implies. Never fails:
 * a failed write ends the stream with s->rc. */
static int on_event(void *ctx, const json_t *ev)
{
    tap *s = ctx;
    turn *t = s->t;
    s->events++;
    s->last_ms = once_monotonic_ms();
    const json_t *task = json_object_get(ev, "task"), *msg = json_object_get(ev, "message");
    const json_t *su = json_object_get(ev, "statusUpdate");
    const json_t *au = json_object_get(ev, "artifactUpdate");
    int rc = ONCE_OK;
    if (json_is_object(msg)) {
        if (s->named)
            return 0; /* a message inside the task's stream is not its state */
        s->ended = 1;
        s->rc = once__gw_reply(&t->view, t->w, msg);
        return 1;
    }
    const json_t *body = task ? task : su ? su : au;
    const char *id = json_string_value(json_object_get(body, task ? "id" : "taskId"));
    if (!s->named && id == NULL) {
        rc = once__gw_fail(t->w, "upstream %s: the stream's first event names no task", t->g->url);
        rc = rc == ONCE_OK ? 1 : rc;
    } else if (!s->named) {
        rc = name_task(t, id, json_string_value(json_object_get(body, "contextId")));
        s->named = rc == ONCE_OK;
    }
    if (rc == ONCE_OK && task != NULL)
        rc = once__gw_sync_task(&t->view, t->w, task);
    else if (rc == ONCE_OK && su != NULL)
        rc = once__gw_sync_status(&t->view, t->w, json_object_get(su, "status"), id);
    else if (rc == ONCE_OK && au != NULL)
        rc = once__gw_sync_chunk(&t->view, t->w, au);
    if (rc == ONCE_OK)
        return 0;
    s->ended = 1;
    s->rc = rc == 1 ? ONCE_OK : rc;
    return 1;
}

/* A stream stops when its turn is canceled, or after HOLD_MS without an
 * event (the turn parks), once the upstream task is known (before that,
 * its first event is still owed: the send may have made a task, which a
 * cancel must reach). */
static int stop_stream(void *ctx)
{
    tap *s = ctx;
    if (!s->named)
        return 0;
    if (once_work_canceled(s->t->w))
        return 1;
    s->quiet = once_monotonic_ms() - s->last_ms >= HOLD_MS;
    return s->quiet;
}

static gw_req stream_req(const turn *t, const char *method, const json_t *params, tap *s)
{
    s->last_ms = once_monotonic_ms();
    gw_req q = req_for(t, method, params);
    q.on_event = on_event;
    q.event_ctx = s;
    q.stop = stop_stream;
    return q;
}

/* Wait ms before the next look at the upstream task: parked when ms
 * reaches PARK_FROM_MS (the worker is let go; the turn runs again then),
 * else asleep on the worker. 1: parked, run() returns now; 0: look again;
 * 2: canceled. */
static int rest(turn *t, int64_t ms)
{
    if (ms >= PARK_FROM_MS && once_work_park(t->w, ms) == ONCE_OK)
        return 1;
    return once_work_sleep(t->w, ms) ? 2 : 0;
}

/* The pause after a look that changed nothing, from the last one: doubled,
 * up to the poll ceiling. A turn that runs again after a park starts from
 * PARK_FROM_MS doubled once per park in a row. */
static int64_t longer(const turn *t, int64_t delay)
{
    return delay * 2 > t->g->poll_max_ms ? t->g->poll_max_ms : delay * 2;
}

static int64_t after_parks(const turn *t)
{
    int64_t d = PARK_FROM_MS;
    for (int i = 1; i < once_work_parks(t->w) && d < t->g->poll_max_ms; i++)
        d *= 2;
    return d > t->g->poll_max_ms ? t->g->poll_max_ms : d;
}

/* Follow the upstream task by SubscribeToTask until the turn ends: its
 * first event is the task as it is, then each change. A stream that is
 * cut or closed early is opened again, after a pause that grows while
 * nothing arrives; one quiet for HOLD_MS parks the turn. 2 when the
 * upstream will not stream it (a terminal task, streaming refused): the
 * caller polls. */
static int watch(turn *t)
{
    int64_t delay = POLL_FIRST_MS;
    for (;;) {
        tap s = {.t = t, .named = 1};
        json_t *params = json_pack("{s:s}", "id", cp_str(t, "taskId"));
        gw_req q = stream_req(t, "SubscribeToTask", params, &s);
        gw_res r = {.result = NULL};
        int rc = params ? once__gw_call(t->g, t->w, &q, &r) : ONCE_ENOMEM;
        json_decref(params);
        int streamed = r.streamed;
        once__gw_res_clear(&r);
        if (s.ended)
            return finish(t, s.rc);
        if (rc == ONCE_EIO || (rc == ONCE_OK && !streamed)) {
            log_line(t, ONCE_LOG_INFO, "gateway_poll", "SubscribeToTask refused: polling GetTask");
            return 2;
        }
        if (rc != ONCE_OK)
            return call_failed(t, rc, &r);
        if (s.quiet && !once_work_canceled(t->w))
            delay = PARK_FROM_MS;
        else
            delay = s.events > 0 ? POLL_FIRST_MS : longer(t, delay);
        int how = rest(t, delay);
        if (how != 0)
            return how == 1 ? ONCE_OK : on_cancel(t);
    }
}

/* ---------------------------------------------------------------------------
 * Following the upstream task.
 */

/* Until the turn ends or parks: a turn that runs again after a park (or
 * an upstream that does not stream) looks by GetTask; a look that finds a
 * change goes back to the stream when the upstream streams. */
static int follow(turn *t)
{
    int parked = once_work_parks(t->w) > 0;
    if (!parked && t->g->streaming && !t->no_sub) {
        int rc = watch(t);
        if (rc != 2)
            return rc;
        t->no_sub = 1;
    }
    int64_t delay = parked ? after_parks(t) : POLL_FIRST_MS;
    json_t *last = NULL;
    for (int looks = 0;; looks++) {
        gw_res r;
        int rc = call(t, "GetTask", json_pack("{s:s}", "id", cp_str(t, "taskId")), &r);
        if (rc != ONCE_OK) {
            json_decref(last);
            return call_failed(t, rc, &r);
        }
        int writes = t->view.writes;
        int changed = last != NULL && !json_equal(last, r.result);
        json_decref(last);
        last = r.result;
        rc = once__gw_sync_task(&t->view, t->w, last);
        if (rc != ONCE_OK) {
            json_decref(last);
            if (rc == ONCE_EFENCED && once_work_canceled(t->w))
                return on_cancel(t);
            return rc == 1 ? ONCE_OK : rc;
        }
        changed |= t->view.writes > writes;
        if (changed && t->g->streaming && !t->no_sub) {
            json_decref(last); /* at work again: follow its events */
            rc = watch(t);
            if (rc != 2)
                return rc;
            t->no_sub = 1;
            last = NULL;
        }
        delay = changed ? POLL_FIRST_MS : looks == 0 ? delay : longer(t, delay);
        int how = rest(t, delay);
        if (how != 0) {
            json_decref(last);
            return how == 1 ? ONCE_OK : on_cancel(t);
        }
    }
}

/* An answer to SendMessage: {task} or {message}. */
static int answered(turn *t, const json_t *result)
{
    const json_t *task = json_object_get(result, "task");
    const json_t *msg = json_object_get(result, "message");
    if (json_is_object(msg) && !json_is_object(task))
        return once__gw_reply(&t->view, t->w, msg);
    const char *id = json_string_value(json_object_get(task, "id"));
    if (id == NULL)
        return once__gw_fail(t->w, "upstream %s: SendMessage answered neither a Task with an id "
                                   "nor a Message", t->g->url);
    int rc = name_task(t, id, json_string_value(json_object_get(task, "contextId")));
    if (rc != ONCE_OK)
        return finish(t, rc);
    rc = once__gw_sync_task(&t->view, t->w, task);
    if (rc == 1)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    return follow(t);
}

/* ---------------------------------------------------------------------------
 * Sending.
 */

/* The message as the upstream gets it: the client's parts and metadata,
 * our messageId, our (or the upstream's) contextId, the upstream task. */
static json_t *upstream_message(const turn *t)
{
    const json_t *m = once__work_message_tree(t->w);
    json_t *u = json_pack("{s:s,s:s,s:O}", "messageId", t->mid, "role", "ROLE_USER", "parts",
                          json_object_get(m, "parts"));
    const json_t *md = json_object_get(m, "metadata");
    int bad = u == NULL;
    if (!bad && json_is_object(md))
        bad |= json_object_set(u, "metadata", (json_t *)md) != 0;
    if (!bad && cp_str(t, "taskId") != NULL)
        bad |= json_object_set_new(u, "taskId", json_string(cp_str(t, "taskId"))) != 0;
    if (!bad && cp_str(t, "contextId") != NULL)
        bad |= json_object_set_new(u, "contextId", json_string(cp_str(t, "contextId"))) != 0;
    if (bad) {
        json_decref(u);
        return NULL;
    }
    return u;
}

/* May a send whose upstream task is unknown be looked for by ListTasks?
 * Not at rung 1 (a minted ID is looked up directly); yes when the task's
 * first send found ListTasks (rung 2), and also when only this replica
 * finds it now: a replica whose probe at start failed stored rung 4 in
 * the tasks it sent, and a takeover must not inherit that. */
static int can_list(const turn *t)
{
    int rung = cp_int(t, "rung");
    return cp_str(t, "taskId") == NULL && rung != 1 && (rung == 2 || t->g->lists);
}

/* A send whose answer was lost may have reached the upstream: what the
 * re-send that follows relies on, counted by rung. */
static void note_resend(turn *t)
{
    int rung = cp_int(t, "rung");
    if (rung == 1) {
        once__metrics_gateway(ONCE__GW_RESENT_EXACT);
    } else if (cp_str(t, "taskId") == NULL && !can_list(t)) {
        once__metrics_gateway(ONCE__GW_UNVERIFIED);
        log_line(t, ONCE_LOG_WARN, "gateway_unverified_resend",
                 "re-sending a message the upstream may have received: without ListTasks "
                 "or its messageId dedup it may make a second upstream task");
    }
}

static int lookup(turn *t, json_t **found);
static int reattach(turn *t, json_t *found);

/* One send: SendStreamingMessage when the upstream streams (its events
 * mapped as they come, into s), else SendMessage with returnImmediately.
 * ONCE_EBUSY when the upstream may have acted and nothing named its task:
 * no answer, or a stream that broke before its first event. */
static int send_once(turn *t, const gw_req *q, tap *s, gw_res *r)
{
    *s = (tap){.t = t};
    int rc = once__gw_call(t->g, t->w, q, r);
    if (q->on_event == NULL || rc != ONCE_OK || s->named || s->ended)
        return rc;
    if (!r->streamed && r->result != NULL) {
        on_event(s, r->result); /* answered without a stream: one event */
        return ONCE_OK;
    }
    if (r->error[0] == '\0')
        snprintf(r->error, sizeof r->error,
                 "upstream %s: SendStreamingMessage: the stream ended "
                 "before it named a task",
                 t->g->url);
    return ONCE_EBUSY;
}

/* The send, until an answer: a failure after which the upstream may have
 * acted is followed by a look-up (the rung's) before the next attempt, so
 * a lost answer is re-attached, not sent again. */
static int send(turn *t)
{
    int rc = cp_set(t, "pending", json_string(t->mid));
    if (rc == ONCE_OK)
        rc = cp_store(t);
    if (rc != ONCE_OK)
        return finish(t, rc);
    json_t *msg = upstream_message(t);
    json_t *params = msg == NULL       ? NULL
                     : t->g->streaming ? json_pack("{s:o}", "message", msg)
                                       : json_pack("{s:o,s:{s:b}}", "message", msg, "configuration",
                                                   "returnImmediately", 1);
    if (params == NULL)
        return ONCE_ENOMEM;
    tap s;
    gw_req q = t->g->streaming ? stream_req(t, "SendStreamingMessage", params, &s)
                               : req_for(t, "SendMessage", params);
    q.once_only = 1;
    gw_res r;
    for (unsigned n = 1;; n++) {
        rc = send_once(t, &q, &s, &r);
        if (rc != ONCE_EBUSY || n >= t->g->retry.max_attempts)
            break;
        int64_t delay = 0;
        once__backoff_jitter_ms(t->g->retry.backoff_base_ms, n - 1, t->g->retry.backoff_cap_ms,
                                once_rng_system(), &delay);
        once__metrics_gateway(ONCE__GW_RETRIES);
        if (once_work_sleep(t->w, delay)) {
            json_decref(params);
            return on_cancel(t);
        }
        json_t *found = NULL;
        rc = lookup(t, &found);
        if (rc != ONCE_OK || found != NULL) {
            json_decref(params);
            return rc == 1 ? ONCE_OK : rc != ONCE_OK ? rc : reattach(t, found);
        }
        note_resend(t);
    }
    json_decref(params);
    if (rc != ONCE_OK)
        return call_failed(t, rc, &r);
    if (q.on_event == NULL) {
        rc = answered(t, r.result);
        once__gw_res_clear(&r);
        return rc;
    }
    once__gw_res_clear(&r);
    if (s.ended)
        return finish(t, s.rc);
    if (once_work_canceled(t->w))
        return on_cancel(t);
    if (s.quiet) { /* the task works on quietly: park */
        int how = rest(t, PARK_FROM_MS);
        if (how != 0)
            return how == 1 ? ONCE_OK : on_cancel(t);
    }
    return follow(t); /* cut or closed early */
}

/* First turn of a task: the rung, the contextId and (rung 1) the upstream
 * task ID this task will have. */
static int first_send(turn *t)
{
    char ctx[ONCE_UUID_LEN + 1], key[ONCE_UUID_LEN + 1], child[ONCE_ID_MAX + 1];
    const char *cid = once_work_context_id(t->w);
    int rung = t->g->ext ? 1 : t->g->lists ? 2 : 4;
    int rc = derive("context", t->principal, cid ? cid : once_work_task_id(t->w), NULL, ctx);
    if (rc == ONCE_OK)
        rc = cp_set(t, "rung", json_integer(rung));
    if (rc == ONCE_OK)
        rc = cp_set(t, "contextId", json_string(ctx));
    if (rc == ONCE_OK && rung == 1) {
        rc = derive("task", t->principal, once_work_task_id(t->w), NULL, key);
        if (rc == ONCE_OK)
            rc = once_child_id(key, 1, child);
        if (rc == ONCE_OK)
            rc = cp_set(t, "taskId", json_string(child));
    }
    return rc == ONCE_OK ? send(t) : rc;
}

/* The upstream task whose history holds our messageId, by ListTasks on
 * our contextId (rung 2); NULL when there is none. */
static int find_listed(turn *t, json_t **found)
{
    *found = NULL;
    char token[512] = "";
    for (int page = 0; page < LIST_PAGES_MAX; page++) {
        json_t *params = json_pack("{s:s,s:i}", "contextId", cp_str(t, "contextId"), "pageSize",
                                   100);
        if (params != NULL && token[0] != '\0')
            json_object_set_new(params, "pageToken", json_string(token));
        gw_res r;
        int rc = call(t, "ListTasks", params, &r);
        if (rc != ONCE_OK)
            return ended(t, rc, &r);
        size_t i, k;
        json_t *task, *m;
        json_array_foreach(json_object_get(r.result, "tasks"), i, task) {
            json_array_foreach(json_object_get(task, "history"), k, m) {
                const char *id = json_string_value(json_object_get(m, "messageId"));
                if (*found == NULL && id != NULL && strcmp(id, t->mid) == 0)
                    *found = json_incref(task);
            }
        }
        const char *next = json_string_value(json_object_get(r.result, "nextPageToken"));
        snprintf(token, sizeof token, "%s", next ? next : "");
        once__gw_res_clear(&r);
        if (*found != NULL || token[0] == '\0')
            return ONCE_OK;
    }
    return ONCE_OK;
}

/* Did a continuation (the upstream task known) reach it? Its history says. */
static int find_in_task(turn *t, json_t **found)
{
    *found = NULL;
    gw_res r;
    int rc = call(t, "GetTask", json_pack("{s:s}", "id", cp_str(t, "taskId")), &r);
    if (rc == ONCE_EIO && r.code == -32001)
        return ONCE_OK; /* rung 1: never registered there */
    if (rc != ONCE_OK)
        return ended(t, rc, &r);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(r.result, "history"), i, m) {
        const char *id = json_string_value(json_object_get(m, "messageId"));
        if (*found == NULL && id != NULL && strcmp(id, t->mid) == 0)
            *found = json_incref(r.result);
    }
    once__gw_res_clear(&r);
    return ONCE_OK;
}

/* Look for what an earlier send of this message made: in the upstream
 * task's history when it is known, else by ListTasks (rung 2). *found is
 * the upstream Task, or NULL (nothing found, or a rung that cannot look);
 * 1 when the turn ended (a failed look-up fails the task). */
static int lookup(turn *t, json_t **found)
{
    *found = NULL;
    if (cp_str(t, "taskId") != NULL && cp_int(t, "rung") != 1)
        return find_in_task(t, found);
    if (can_list(t))
        return find_listed(t, found);
    return ONCE_OK;
}

/* Follow the upstream task an earlier send made (found: a reference the
 * call takes). */
static int reattach(turn *t, json_t *found)
{
    once__metrics_gateway(ONCE__GW_REATTACHED);
    log_line(t, ONCE_LOG_INFO, "gateway_reattach", "found the upstream task of this send");
    json_t *result = json_pack("{s:o}", "task", found);
    int rc = result ? answered(t, result) : ONCE_ENOMEM;
    json_decref(result);
    return rc;
}

/* The send of this message was begun and its answer is not stored: find
 * what it made before sending again. */
static int recover(turn *t)
{
    json_t *found = NULL;
    int rc = lookup(t, &found);
    if (rc == 1)
        return ONCE_OK; /* the turn ended (failed with the call's reason) */
    if (rc != ONCE_OK)
        return rc;
    if (found != NULL)
        return reattach(t, found);
    note_resend(t);
    return send(t);
}

static int drive(turn *t)
{
    if (once_work_canceled(t->w))
        return on_cancel(t); /* a parked turn canceled: its last run */
    if (cp_str(t, "taskId") != NULL && was_sent(t)) {
        if (once_work_resumed(t->w) && once_work_parks(t->w) == 0)
            once__metrics_gateway(ONCE__GW_REATTACHED);
        return follow(t);
    }
    const char *pending = cp_str(t, "pending");
    if (pending != NULL && strcmp(pending, t->mid) == 0)
        return recover(t);
    if (cp_int(t, "rung") == 0)
        return first_send(t);
    return send(t);
}

int once__gw_run(const once_executor *ex, once_work *w)
{
    turn t = {.g = ex->ctx, .w = w, .principal = once_work_principal(w)};
    char cmid[ONCE_DIGEST_HEX + 1];
    int rc = client_mid(once__work_message_tree(w), cmid);
    if (rc == ONCE_OK)
        rc = derive("message", t.principal, once_work_task_id(w), cmid, t.mid);
    if (rc == ONCE_OK)
        rc = cp_load(&t);
    if (rc == ONCE_OK)
        rc = once__gw_view_init(&t.view, w, t.g->url);
    if (rc == ONCE_OK)
        rc = drive(&t);
    once__gw_view_clear(&t.view);
    json_decref(t.cp);
    return rc;
}
