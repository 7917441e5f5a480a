/*
 * send.c -- first messages and continuations through the outbox.
 *
 * A send mints its ID, writes the intent, and only then touches the
 * network. The first message's messageId is its task ID: with the
 * idempotency extension the server registers message.taskId, without it
 * (plain A2A 1.0) no taskId is sent and a server that dedups by messageId
 * derives one ID from it on every retry. Which of the two applies is fixed
 * per intent the first time the agent's card is read (cached per agent in
 * the outbox) and never changes afterwards, so every resend is the same.
 *
 * Answers move the intent: a result -> acknowledged (or final when the task
 * is already terminal, or the agent answered with a Message); a refusal, or
 * a request the server can never accept -> refused. Exhaustion and other
 * errors leave it pending for recovery.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "client/client_int.h"
#include "core/jcs.h"

/* One delivery of one intent, on the caller's stack: prepare() fills ext
 * and params on the first attempt that gets that far; the attempts reuse
 * them unchanged. */
typedef struct send_call {
    once__rpc rpc;
    const once__intent_row *row;
    int user_id;                 /* the caller chose the task ID */
    int ext;                     /* -1 until known */
    char *params;                /* the body's params, built once (json_dumps: once_free) */
    int64_t seq;
} send_call;

/* Does the agent's card declare the extension? RETRY when it cannot be read
 * for a transport reason; a missing or unparseable card means plain. */
static int card_mode(once_client *c, send_call *s, once__attempt *a, once_call_result *r, int *ext)
{
    const char *agent = s->row->agent;
    int64_t now = once__client_now(c);
    int v03 = 0;
    if (once__outbox_mode_get(c->outbox, agent, now - ONCE__CARD_TTL_MS, ext, &v03) == ONCE_OK)
        return ONCE_OK;
    once__http_resp h;
    json_t *card = NULL;
    int rc = once__card_fetch(c, a->url, a->timeout_ms, &card, &h);
    if (rc == ONCE_EINVAL) {
        a->verdict = ONCE__ERROR;
        once__result_set_error(r, "not an http(s) URL: %s", a->url);
        return rc;
    }
    if (rc == ONCE_ENOMEM) {
        /* Unread is not "no extension": nothing may be remembered from it. */
        once__http_resp_clear(&h);
        return rc;
    }
    r->http_status = (int)h.status;
    if (rc == ONCE_EIO || h.status == 429 || h.status >= 500) {
        a->verdict = rc == ONCE_EIO ? once__http_failure_verdict(&h) : ONCE__RETRY;
        a->failover = a->verdict == ONCE__RETRY && h.status != 429;
        once__result_set_error(r, "%s: agent card: %s%s", a->url, h.timed_out ? "timeout: " : "",
                               rc == ONCE_EIO ? h.error : "server error");
        if (h.retry_after[0] != '\0') {
            int64_t ms;
            if (once__retry_after_parse(h.retry_after, now, &ms) == ONCE_OK)
                a->retry_after_ms = ms;
        }
        once__http_resp_clear(&h);
        return ONCE_EIO;
    }
    /* A card that is missing or unparseable says: plain. */
    rc = once__card_remember(c, agent, a->url, card, ext, &v03);
    json_decref(card);
    once__http_resp_clear(&h);
    return rc == ONCE_ENOMEM ? rc : ONCE_OK;
}

/* Fix the mode (once per intent) and build the params. */
static int prepare(once_client *c, send_call *s, once__attempt *a, once_call_result *r)
{
    const once__intent_row *row = s->row;
    int cont = strcmp(row->kind, "continue") == 0;
    int ext = 0;
    if (row->mode != NULL) {
        ext = strcmp(row->mode, "ext") == 0;
    } else if (!cont) {
        int rc = card_mode(c, s, a, r, &ext);
        if (rc != ONCE_OK)
            return rc;
    }
    int rc = once__outbox_set_mode(c->outbox, s->seq, ext, once__client_now(c), &ext);
    if (rc != ONCE_OK) {
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        return rc;
    }
    s->ext = ext;
    if (!cont && !ext && !s->user_id)
        r->task_id[0] = '\0';   /* the agent will name the task */
    if (!cont && !ext && s->user_id) {
        a->verdict = ONCE__ERROR;
        snprintf(r->reason, sizeof r->reason, "EXTENSION_UNSUPPORTED");
        once__result_set_error(r, "the agent's card does not declare %s: it cannot take a "
                                  "client-chosen task ID",
                               ONCE_IDEMPOTENCY_EXTENSION);
        return ONCE_EINVAL;
    }
    json_t *msg;
    rc = once__json_object(row->message, &msg);
    if (rc != ONCE_OK)
        return rc == ONCE_EPARSE ? ONCE_ECORRUPT : rc;
    /* Without its taskId the message would register a different task. */
    if (!cont && ext && row->task_id != NULL &&
        json_object_set_new(msg, "taskId", json_string(row->task_id)) != 0) {
        json_decref(msg);
        return ONCE_ENOMEM;
    }
    json_t *push = NULL;
    if (row->push != NULL && (rc = once__json_object(row->push, &push)) != ONCE_OK) {
        json_decref(msg);
        return rc == ONCE_EPARSE ? ONCE_ECORRUPT : rc;
    }
    /* The config rides with the message that registers the task (or the
     * continuation it accepts), so it sees every event from then on. */
    json_t *params = json_pack("{s:o,s:{s:b,s:o*}}", "message", msg, "configuration",
                               "returnImmediately", 1, "taskPushNotificationConfig", push);
    s->params = params ? json_dumps(params, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(params);
    return s->params ? ONCE_OK : ONCE_ENOMEM;
}

static int send_attempt(once_client *c, void *ctx, once__attempt *a, once_call_result *r)
{
    send_call *s = ctx;
    if (s->params == NULL) {
        int rc = prepare(c, s, a, r);
        if (rc == ONCE_EIO || rc == ONCE_EINVAL)
            return ONCE_OK;   /* a verdict is set: the loop decides */
        if (rc != ONCE_OK)
            return rc;
    }
    s->rpc.agent = s->row->agent;
    s->rpc.method = "SendMessage";
    s->rpc.params = s->params;
    s->rpc.extension = s->ext && strcmp(s->row->kind, "send") == 0;
    s->rpc.answered = 0;
    int rc = once__rpc_attempt(c, &s->rpc, a, r);
    if (rc == ONCE_OK && s->rpc.answered && c->hook != NULL)
        c->hook(c->hook_ctx, ONCE_POINT_AFTER_SEND);
    return rc;
}

/* A request the server can never accept, whatever the retries. */
static int hopeless(const once_call_result *r)
{
    return r->rpc_code == -32700 || r->rpc_code == -32600 || r->rpc_code == -32602 ||
           strcmp(r->reason, "EXTENSION_UNSUPPORTED") == 0;
}

/* Deliver the intent at row (pending), through any of its agent's
 * endpoints, and record the answer. */
static int deliver(once_client *c, const once__intent_row *row, int user_id, once_call_result *r)
{
    send_call s = {.row = row, .user_id = user_id, .ext = -1, .seq = row->it.seq};
    r->intent = row->it.seq;
    if (row->task_id != NULL && r->task_id[0] == '\0')
        once__strlcpy(r->task_id, row->task_id, sizeof r->task_id);
    once__agent ag;
    int rc = once__agent_open(c, row->agent, 0, &ag);
    if (rc != ONCE_OK) {
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "%s", c->errmsg);
        return rc;
    }
    rc = once__retry_run(c, &ag, row->it.seq, send_attempt, &s, r);
    once__agent_close(&ag);
    once_free(s.params); /* json_dumps allocates through once_malloc */
    int64_t now = once__client_now(c);
    int orc = ONCE_OK;
    if (rc == ONCE_OK && r->outcome == ONCE_OUTCOME_OK) {
        if (once__result_from_send(r, s.rpc.result) != ONCE_OK) {
            r->outcome = ONCE_OUTCOME_ERROR;
            once__result_set_error(r, "SendMessage: the result is neither a Task nor a Message");
            rc = ONCE_EIO;
        } else {
            orc = once__outbox_ack(c->outbox, row->it.seq, r->task_id[0] ? r->task_id : NULL,
                                   r->state, r->is_message, r->endpoint, now);
        }
    } else if (rc == ONCE_OK && r->outcome == ONCE_OUTCOME_REFUSED) {
        orc = once__outbox_refuse(c->outbox, row->it.seq, r->reason[0] ? r->reason : NULL,
                                  r->state, r->endpoint, now);
    } else if (r->outcome == ONCE_OUTCOME_ERROR && hopeless(r)) {
        orc = once__outbox_refuse(c->outbox, row->it.seq, r->reason[0] ? r->reason : "INVALID",
                                  ONCE_STATE_UNKNOWN, r->endpoint, now);
    } else if (r->error != NULL) {
        once__outbox_error(c->outbox, row->it.seq, r->error, now);
    }
    json_decref(s.rpc.result);
    if (orc != ONCE_OK && orc != ONCE_EILLEGAL) {
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        return orc;
    }
    return rc;
}

int once__client_deliver(once_client *c, const once__intent_row *row, once_call_result *r)
{
    memset(r, 0, sizeof *r);
    return deliver(c, row, 0, r);
}

/* Write an intent and deliver it. agent: the URLs the caller named, stored
 * as the agent's endpoints; the intent keeps the agent's name. */
static int add_and_deliver(once_client *c, const char *kind, const char *agent, const char *task_id,
                           const char *message_id, json_t *msg, const char *push, int user_id,
                           once_call_result *r)
{
    c->errmsg[0] = '\0';
    once__agent ag;
    int rc = once__agent_open(c, agent, 1, &ag);
    char *text = rc == ONCE_OK ? json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    int64_t seq = 0;
    if (rc == ONCE_OK && text == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__outbox_add(c->outbox, kind, ag.name, task_id, message_id, text, push,
                              once__client_now(c), &seq);
    once_free(text); /* json_dumps allocates through once_malloc */
    once__agent_close(&ag);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        if (c->errmsg[0] == '\0')
            once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "%s", c->errmsg);
        return rc;
    }
    r->intent = seq;
    if (c->hook != NULL)
        c->hook(c->hook_ctx, ONCE_POINT_AFTER_OUTBOX);
    once__intent_row row;
    rc = once__outbox_load(c->outbox, seq, &row);
    if (rc == ONCE_OK)
        rc = deliver(c, &row, user_id, r);
    once__intent_row_clear(&row);
    return rc;
}

static int mint(once_client *c, char out[ONCE_ID_MAX + 1])
{
    if (c->id_kind == ONCE_ID_UUID4)
        return once_uuid4(c->rng, out);
    return once_ulid(c->clock, c->rng, out);
}

static int build_message(const char *message_id, const char *task_id, const char *parts_json,
                         const char *metadata_json, once_call_result *r, json_t **out)
{
    json_t *parts = NULL, *md = NULL;
    if (once__json_loads(parts_json ? parts_json : "", 0, &parts, NULL) == ONCE_ENOMEM)
        return ONCE_ENOMEM;
    if (!json_is_array(parts) || json_array_size(parts) == 0) {
        json_decref(parts);
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "parts must be a non-empty JSON array");
        return ONCE_EINVAL;
    }
    if (metadata_json != NULL && once__json_loads(metadata_json, 0, &md, NULL) == ONCE_ENOMEM) {
        json_decref(parts);
        return ONCE_ENOMEM;
    }
    if (metadata_json != NULL && !json_is_object(md)) {
        json_decref(parts);
        json_decref(md);
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "metadata must be a JSON object");
        return ONCE_EINVAL;
    }
    json_t *m = json_pack("{s:s,s:s}", "messageId", message_id, "role", "ROLE_USER");
    /* Every set runs: each takes its value, also when it (or m) failed. */
    int bad = m == NULL;
    if (task_id != NULL)
        bad |= json_object_set_new(m, "taskId", json_string(task_id)) != 0;
    bad |= json_object_set_new(m, "parts", parts) != 0;
    if (md != NULL)
        bad |= json_object_set_new(m, "metadata", md) != 0;
    if (bad) {
        json_decref(m);
        return ONCE_ENOMEM;
    }
    *out = m;
    return ONCE_OK;
}

/* An agent URL that can never be reached is refused before the outbox
 * holds an intent for it: such an intent could only stay pending. what
 * names the URL in the message ("" for the agent's). */
static int refuse_url(const char *what, const char *why, once_call_result *r)
{
    r->outcome = ONCE_OUTCOME_ERROR;
    snprintf(r->reason, sizeof r->reason, "INVALID_URL");
    once__result_set_error(r, "%s%s", what, why);
    return 1;
}

static int bad_url(const char *url, const char *what, once_call_result *r)
{
    char why[600];
    return once__agent_url_check(url, why, sizeof why) != ONCE_OK && refuse_url(what, why, r);
}

/* The agent: one URL or several (its replicas), each checked. */
static int bad_agent(const char *spec, once_call_result *r)
{
    char why[600];
    return once__agent_spec_check(spec, why, sizeof why) != ONCE_OK && refuse_url("", why, r);
}

/* The TaskPushNotificationConfig of a send, as JSON text (once_free), or
 * NULL in *out when the spec asks for none. */
static int push_config(const once_send_spec *s, once_call_result *r, char **out)
{
    *out = NULL;
    if (s->push_url == NULL)
        return ONCE_OK;
    if (bad_url(s->push_url, "push URL: ", r))
        return ONCE_EINVAL;
    json_t *cfg = json_pack("{s:s,s:s*}", "url", s->push_url, "token", s->push_token);
    *out = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(cfg);
    return *out ? ONCE_OK : ONCE_ENOMEM;
}

int once_client_send(once_client *c, const once_send_spec *s, once_call_result *r)
{
    memset(r, 0, sizeof *r);
    char id[ONCE_ID_MAX + 1];
    if (bad_agent(s->agent, r))
        return ONCE_EINVAL;
    if (s->task_id != NULL) {
        if (!once_id_valid(s->task_id)) {
            r->outcome = ONCE_OUTCOME_ERROR;
            once__result_set_error(r, "invalid task ID (1..128 of [A-Za-z0-9._:-], "
                                      "first alphanumeric)");
            return ONCE_EINVAL;
        }
        once__strlcpy(id, s->task_id, sizeof id);
    } else {
        /* The ID exists before anything leaves this process. */
        int rc = mint(c, id);
        if (rc != ONCE_OK)
            return rc;
    }
    once__strlcpy(r->task_id, id, sizeof r->task_id);
    char *push;
    int rc = push_config(s, r, &push);
    if (rc != ONCE_OK)
        return rc;
    json_t *msg;
    rc = build_message(id, NULL, s->parts_json, s->metadata_json, r, &msg);
    if (rc == ONCE_OK) {
        rc = add_and_deliver(c, "send", s->agent, id, id, msg, push, s->task_id != NULL, r);
        json_decref(msg);
    }
    once_free(push);
    return rc;
}

int once_client_continue(once_client *c, const char *agent, const char *task_id,
                         const char *parts_json, once_call_result *r)
{
    memset(r, 0, sizeof *r);
    if (bad_agent(agent, r))
        return ONCE_EINVAL;
    if (task_id == NULL || !once_id_valid(task_id)) {
        r->outcome = ONCE_OUTCOME_ERROR;
        once__result_set_error(r, "invalid task ID");
        return ONCE_EINVAL;
    }
    once__strlcpy(r->task_id, task_id, sizeof r->task_id);
    char mid[ONCE_ID_MAX + 1];
    int rc = mint(c, mid);
    if (rc != ONCE_OK)
        return rc;
    json_t *msg;
    rc = build_message(mid, task_id, parts_json, NULL, r, &msg);
    if (rc != ONCE_OK)
        return rc;
    rc = add_and_deliver(c, "continue", agent, task_id, mid, msg, NULL, 0, r);
    json_decref(msg);
    return rc;
}
