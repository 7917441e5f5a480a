/*
 * send.c -- SendMessage (and 0.1 tasks/send): identify the task, load it,
 * decide(), apply the verdict with one atomic create or CAS, then answer at
 * once or after a bounded wait for the task to settle.
 *
 * Invariants:
 *   - a lost race (create -> EEXISTS / ETOMBSTONE, CAS -> ECONFLICT) never
 *     answers: it re-loads and decides again, a bounded number of times;
 *   - REPLAY and every refusal are read-only (no write, so no version,
 *     generation or fence bump, no executor run);
 *   - a store failure (ESTORE / EBUSY) is returned as such, never turned
 *     into a verdict;
 *   - a send that would start a turn while this replica's turn queue is
 *     full, or holds its principal's share, writes nothing and answers
 *     ONCE_EOVERLOAD (retryable); one whose
 *     task ID was minted here is refused before it reads the store (no
 *     record can have that ID), any other after its load, so that a
 *     replay is answered whatever the queue holds;
 *   - the digest covers exactly what the client sent; the stored history
 *     copy gets taskId / contextId filled in.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "core/jcs.h"
#include "engine/engine_int.h"
#include "engine/push_int.h"

#define SEND_TRIES 16
#define WAIT_POLL_MS 50

/* Everything derived from the request before the first load. */
typedef struct send_ctx {
    const once_send_req *req;
    const char *message_id;         /* NULL for 0.1 (identity by digest) */
    const char *context_id;         /* the message's contextId, or NULL */
    char task_id[ONCE_ID_MAX + 1];
    char digest[ONCE_DIGEST_HEX + 1];
    int may_register;
    int minted;                     /* task_id minted for this send: no record has it */
    json_t *push;                   /* the push config's stored element, or NULL */
} send_ctx;

static int invalid(once_send_res *res, const char *field, const char *why)
{
    res->field = field;
    once__strlcpy(res->detail, why, sizeof res->detail);
    return ONCE_EINVAL;
}

/* configuration.taskPushNotificationConfig, checked before anything is
 * written: a refused url refuses the whole send. since is set when the
 * verdict is known (0 for a new task, the generation for a continuation). */
static int prepare_push(once__engine *e, const once_send_req *req, send_ctx *c,
                        once_send_res *res)
{
#define PUSH_FIELD "configuration.taskPushNotificationConfig"
    static const struct {
        const char *rel, *abs;
    } names[] = {
        {"url", PUSH_FIELD ".url"},
        {"id", PUSH_FIELD ".id"},
        {"token", PUSH_FIELD ".token"},
        {"authentication", PUSH_FIELD ".authentication"},
        {"authentication.scheme", PUSH_FIELD ".authentication.scheme"},
        {"authentication.credentials", PUSH_FIELD ".authentication.credentials"},
    };
    if (req->push_config == NULL)
        return ONCE_OK;
    if (!once__engine_push_supported(e))
        return ONCE_EUNSUPPORTED;
    once_push_res pr;
    memset(&pr, 0, sizeof pr);
    int rc = once__push_elem_make(e, req->push_config, 0, &c->push, &pr);
    if (rc == ONCE_OK && req->push_v03 &&
        json_object_set_new(c->push, ONCE__PUSH_V03, json_true()) != 0)
        rc = ONCE_ENOMEM;
    if (rc != ONCE_EINVAL)
        return rc;
    res->field = PUSH_FIELD;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (pr.field != NULL && strcmp(pr.field, names[i].rel) == 0)
            res->field = names[i].abs;
    once__strlcpy(res->detail, pr.detail, sizeof res->detail);
    return ONCE_EINVAL;
}

static int prepare(once__engine *e, const once_send_req *req, send_ctx *c, once_send_res *res)
{
    c->req = req;
    if (req->principal == NULL || req->principal[0] == '\0' ||
        strlen(req->principal) > ONCE_PRINCIPAL_MAX)
        return invalid(res, "principal", "principal must be 1..128 characters");
    if (!json_is_object(req->message))
        return invalid(res, "message", "message must be an object");

    json_t *mid = json_object_get(req->message, "messageId");
    if (mid != NULL && !json_is_string(mid))
        return invalid(res, "message.messageId", "messageId must be a string");
    const char *msgid = json_string_value(mid);
    if (msgid != NULL && (msgid[0] == '\0' || strlen(msgid) > ONCE_ID_MAX ||
                          strchr(msgid, '\n') != NULL))
        return invalid(res, "message.messageId", "messageId must be 1..128 characters, one line");
    if (msgid == NULL && !req->legacy)
        return invalid(res, "message.messageId", "messageId is required");
    if (msgid != NULL)
        once__strlcpy(res->message_id, msgid, sizeof res->message_id);
    c->message_id = req->legacy ? NULL : msgid;

    json_t *ctx = json_object_get(req->message, "contextId");
    if (ctx != NULL && (!json_is_string(ctx) || !once_id_valid(json_string_value(ctx))))
        return invalid(res, "message.contextId", "contextId is not an acceptable ID");
    c->context_id = json_string_value(ctx);

    uint8_t raw[ONCE_SHA256_LEN];
    /* A push config is part of the request: a replay carries the same one
     * (and changes nothing), another one is another request for the same
     * messageId, refused like other content (docs/wire.md). */
    int rc = once__request_digest_json(req->message, req->push_config, raw);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK)
        return invalid(res, "message", "message cannot be canonicalised (RFC 8785)");
    once_hex(raw, sizeof raw, c->digest);

    if (req->legacy) {
        if (!once_id_valid(req->task_id))
            return invalid(res, "id", "task id must be 1..128 of [A-Za-z0-9._:-]");
        c->may_register = 1;
        once__strlcpy(c->task_id, req->task_id, sizeof c->task_id);
    } else if (req->task_id != NULL) {
        if (!once_id_valid(req->task_id))
            return invalid(res, "message.taskId", "taskId must be 1..128 of [A-Za-z0-9._:-]");
        c->may_register = req->extension != 0 && !e->cfg.experiment_naive;
        once__strlcpy(c->task_id, req->task_id, sizeof c->task_id);
    } else if (e->cfg.experiment_naive ||
               (e->cfg.plain_ids == ONCE_PLAIN_IDS_SERVER && !req->extension)) {
        /* A new task, whatever its messageId: a plain first message under
         * --plain-ids server, and every first message in the amplification
         * experiment's baseline (engine.h). */
        rc = once_uuid7(e->clock, e->rng, c->task_id);
        if (rc != ONCE_OK)
            return rc;
        c->may_register = 1;
        c->minted = 1;
    } else {
        rc = once_derive_task_id((const uint8_t *)e->secret, strlen(e->secret), req->principal,
                                 msgid, c->task_id);
        if (rc != ONCE_OK)
            return rc;
        c->may_register = 1;
    }
    once__strlcpy(res->task_id, c->task_id, sizeof res->task_id);
    return prepare_push(e, req, c, res);
}

/* ------------------------------------------------------------------------
 * Waiting for a task to settle.
 */

int once__wait(once__engine *e, const char *principal, const char *task_id, int64_t deadline,
               once_record *rec, once_tombstone *tomb)
{
    once__waiter w;
    int rc = once__waiter_add(e, &w, principal, task_id);
    if (rc != ONCE_OK)
        return rc;

    for (;;) {
        rc = once_store_load(e->store, principal, task_id, rec, tomb);
        if (rc != ONCE_OK) {
            once__store_rc(e, rc);
            break;
        }
        int64_t left = deadline - once_monotonic_ms();
        if (once__record_settled(rec) || left <= 0 || once__stopping(e))
            break;
        /* Local writes signal us at once; other replicas' writes are seen
         * by polling the store (docs/design.md section 13). */
        pthread_mutex_lock(&e->mu);
        if (!w.fired && !e->stopping)
            once__cond_wait_ms(&w.cv, &e->mu, left < WAIT_POLL_MS ? left : WAIT_POLL_MS);
        w.fired = 0;
        pthread_mutex_unlock(&e->mu);
        once_record_clear(rec);
    }

    once__waiter_remove(e, &w);
    return rc;
}

/* Fill res with the outcome; `rec` is the record as this call last wrote or
 * read it. Blocking sends wait for the task to settle first. */
static int respond(once__engine *e, const send_ctx *c, const once_record *rec,
                   once_send_res *res)
{
    const once_send_req *req = c->req;
    once_record latest;
    memset(&latest, 0, sizeof latest);
    const once_record *out = rec;
    if (!req->return_immediately && !once__record_settled(rec)) {
        int64_t bound = req->wait_ms > 0 ? req->wait_ms : e->cfg.max_wait_ms;
        if (bound > e->cfg.max_wait_ms)
            bound = e->cfg.max_wait_ms;
        if (req->defer) {
            /* The caller waits without a thread (await.c) and asks for the
             * answer then: build none now. */
            res->state = rec->state;
            res->pending = 1;
            res->generation = rec->generation;
            res->wait_until = once_monotonic_ms() + bound;
            return ONCE_OK;
        }
        /* If the store cannot be read while waiting, the accepted state we
         * hold is still a true answer; the client polls from there. */
        if (once__wait(e, rec->principal, rec->task_id, once_monotonic_ms() + bound, &latest,
                       NULL) == ONCE_OK)
            out = &latest;
    }
    res->state = out->state;
    int rc = once__send_answer_of(out, req->history_length, res);
    once_record_clear(&latest);
    return rc;
}

static void log_outcome(const char *task_id, const once_send_res *res, int rc);

int once__engine_send_answer(once__engine *e, const char *principal, const char *task_id,
                            const once_record *rec, int history_length, once_send_res *res)
{
    if (e == NULL || res == NULL || principal == NULL || !once_id_valid(task_id))
        return ONCE_EINVAL;
    once_record loaded;
    memset(&loaded, 0, sizeof loaded);
    int rc = ONCE_OK;
    if (rec == NULL) {
        rc = once__store_rc(e, once_store_load(e->store, principal, task_id, &loaded, NULL));
        if (rc != ONCE_OK) {
            log_outcome(task_id, res, rc);
            return rc;
        }
        rec = &loaded;
    }
    res->state = rec->state;
    rc = once__send_answer_of(rec, history_length, res);
    once_record_clear(&loaded);
    log_outcome(task_id, res, rc);
    return rc;
}

/* ------------------------------------------------------------------------
 * Verdicts that write.
 */

/* The user message as history stores it. */
static json_t *history_message(once__engine *e, const send_ctx *c, const char *context_id)
{
    return once__message_fill(c->req->message, c->task_id, context_id, NULL, e->rng);
}

/* The end a registration and a continuation share. rc is their write's
 * result; anything but ONCE_OK drops task and msg and is returned. When it
 * landed, the write rec gave this replica the task's lease: start the turn
 * of the user message msg from the tree just stored (taken over) and
 * answer. A blocking send whose turn finishes at once runs it here and
 * answers from its last write; any other queues it for a worker. Takes msg
 * over too: the message is a member of the tree, and a tree that goes to a
 * worker must leave no reference behind on this thread
 * (once__dispatch_task). */
static int start_turn(once__engine *e, const send_ctx *c, int rc, const once_record *rec,
                      json_t *task, json_t *msg, once_send_res *res)
{
    if (rc != ONCE_OK) {
        json_decref(msg);
        json_decref(task);
        return rc;
    }
    if (c->req->return_immediately || !once__turn_quick(e, rec, msg)) {
        json_decref(msg);
        (void)once__dispatch_task(e, rec, task);
        return respond(e, c, rec, res);
    }
    once_record done;
    int ran = once__dispatch_here(e, rec, task, &done);
    json_decref(msg);
    if (!ran)
        return respond(e, c, rec, res);
    rc = respond(e, c, &done, res);
    once_record_clear(&done);
    return rc;
}

static int do_register(once__engine *e, const send_ctx *c, once_send_res *res)
{
    if (c->req->inline_only && (c->req->return_immediately || !c->req->hold ||
                                !once__held_can(e)))
        return ONCE__EAGAIN;   /* its create would be written on this thread */
    char minted[ONCE_UUID_LEN + 1];
    const char *ctx = c->context_id;
    if (ctx == NULL) {
        /* Time-ordered, so the stores' context index grows at its end
         * (docs/design.md, "ListTasks indexes"). */
        int rc = once_uuid7(e->clock, e->rng, minted);
        if (rc != ONCE_OK)
            return rc;
        ctx = minted;
    }
    int64_t now = once__now(e);
    json_t *user = history_message(e, c, ctx);
    json_t *task = user != NULL ? once__task_new(c->task_id, ctx, ONCE_STATE_SUBMITTED, now, user)
                                : NULL;

    once_record rec;
    memset(&rec, 0, sizeof rec);
    once__strlcpy(rec.principal, c->req->principal, sizeof rec.principal);
    once__strlcpy(rec.task_id, c->task_id, sizeof rec.task_id);
    once__strlcpy(rec.context_id, ctx, sizeof rec.context_id);
    once__strlcpy(rec.lease_owner, e->replica_id, sizeof rec.lease_owner);
    rec.state = ONCE_STATE_SUBMITTED;
    rec.kind = ONCE_KIND_TASK;
    rec.version = 1;
    rec.generation = 1;
    rec.fence = 1;
    rec.lease_until = now + e->cfg.lease_ms;
    rec.created_at = rec.updated_at = now;

    char *payload = NULL;
    int rc = task != NULL ? ONCE_OK : ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__digests_append(&rec.digests, c->digest, c->message_id);
    if (rc == ONCE_OK && c->push != NULL) {
        /* Stored with the task: the new config sees every event from 1. */
        json_t *one = json_pack("[O]", c->push);
        if (one == NULL || (rec.push_json = once__json_text(one)) == NULL)
            rc = ONCE_ENOMEM;
        json_decref(one);
    }
    if (rc == ONCE_OK && (rec.task_json = once__json_text(task)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK && (payload = once__ev_task_text(rec.task_json, 1)) == NULL &&
        (payload = once__ev_task(task, 1)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__size_check(e, NULL, &rec);
    once_event ev = {1, payload};
    if (rc == ONCE_OK && !c->req->return_immediately) {
        /* A turn that finishes at once runs first and is stored with its
         * registration, in one write. */
        once_record done;
        once__held *held = NULL;
        int ran = once__dispatch_born(e, &rec, task, &ev, user, &done, &rc,
                                      c->req->hold ? &held : NULL, c->req->inline_only);
        if (ran != 0)
            task = NULL;
        if (ran == 1) {
            if (rc == ONCE_OK) {
                if (held == NULL)
                    ONCE__STAT(e, registered);   /* else once it lands */
                res->verdict = ONCE_V_REGISTER;
                rc = respond(e, c, &done, res);
                once_record_clear(&done);
                if (rc == ONCE_OK) {
                    res->held = held;
                    held = NULL;
                }
            }
            once__engine_held_drop(held);
            once_free(payload);
            json_decref(user);
            once_record_clear(&rec);
            return rc;
        }
        if (c->req->inline_only)
            rc = ONCE__EAGAIN;   /* not a held write: the create below would wait */
    }
    if (rc == ONCE_OK)
        rc = once__store_rc(e, once_store_create(e->store, &rec, &ev, 1, NULL, NULL));
    once_free(payload);
    if (rc == ONCE_OK) {
        ONCE__STAT(e, registered);
        once__notify(e, &rec);
        res->verdict = ONCE_V_REGISTER;
    }
    rc = start_turn(e, c, rc, &rec, task, user, res);
    once_record_clear(&rec);
    return rc;
}

static int do_continue(once__engine *e, const send_ctx *c, const once_record *cur,
                       once_send_res *res)
{
    int rc = once__transition(cur->state, ONCE_STATE_WORKING);
    if (rc != ONCE_OK)
        return rc;
    json_t *task = once__json_parse(cur->task_json);
    if (task == NULL)
        return ONCE_ECORRUPT;
    int64_t now = once__now(e);
    json_t *user = history_message(e, c, cur->context_id);
    rc = user != NULL ? once__task_append_history(task, user) : ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__task_set_status(task, ONCE_STATE_WORKING, NULL, now);

    once_record next;
    char *payload = NULL;
    int have_next = 0;
    if (rc == ONCE_OK &&
        (rc = once__record_advance(&next, cur, ONCE_STATE_WORKING, now)) == ONCE_OK)
        have_next = 1;
    if (rc == ONCE_OK) {
        once__strlcpy(next.lease_owner, e->replica_id, sizeof next.lease_owner);
        next.lease_until = now + e->cfg.lease_ms;
        rc = once__digests_append(&next.digests, c->digest, c->message_id);
    }
    if (rc == ONCE_OK) {
        once_free(next.task_json);
        if ((next.task_json = once__json_text(task)) == NULL)
            rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK && c->push != NULL) {
        /* Added in the same CAS; it sees this continuation's events on. */
        once_push_res pr;
        char *pj = NULL;
        memset(&pr, 0, sizeof pr);
        if (json_object_set_new(c->push, "since", json_integer(cur->generation)) != 0)
            rc = ONCE_ENOMEM;
        if (rc == ONCE_OK && (rc = once__push_json_put(e, cur, c->push, &pj, &pr)) == ONCE_OK) {
            once_free(next.push_json);
            next.push_json = pj;
        } else if (rc == ONCE_EINVAL) {
            res->field = PUSH_FIELD;
            once__strlcpy(res->detail, pr.detail, sizeof res->detail);
        }
    }
    if (rc == ONCE_OK && (payload = once__ev_status(task, cur->generation + 1)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__write(e, cur, &next, payload);
    once_free(payload);
    if (rc == ONCE_OK) {
        ONCE__STAT(e, continued);
        res->verdict = ONCE_V_CONTINUE;
    }
    rc = start_turn(e, c, rc, &next, task, user, res);
    if (have_next)
        once_record_clear(&next);
    return rc;
}

/* ------------------------------------------------------------------------
 * The send loop.
 */

static int send_loop(once__engine *e, const once_send_req *req, send_ctx *c, once_send_res *res);

/* What the request's log line reports (core/log.h): the task and the
 * verdict, or why there was none. */
static void log_outcome(const char *task_id, const once_send_res *res, int rc)
{
    once__log_ctx_task(res->task_id[0] != '\0' ? res->task_id : task_id);
    if (rc == ONCE_EOVERLOAD)
        once__log_ctx_outcome("refused:overloaded");
    else if (rc != ONCE_OK)
        once__log_ctx_outcome(once_errname(rc));
    else
        once__log_ctx_outcome(once__verdict_outcome(res->verdict)); /* NULL: no verdict, no outcome */
}

/* A refusal, counted in `refused` and under its reason (/metrics shows the
 * reason as a label; once/admin/stats the total). */
static void count_refusal(once__engine *e, once_verdict v)
{
    static const size_t reasons[] = {
        [ONCE_V_TASK_NOT_FOUND] = ONCE__STAT_AT(refused_not_found),
        [ONCE_V_TASK_EXPIRED] = ONCE__STAT_AT(refused_expired),
        [ONCE_V_IDEMPOTENCY_CONFLICT] = ONCE__STAT_AT(refused_conflict),
        [ONCE_V_REJECT_BUSY] = ONCE__STAT_AT(refused_busy),
    };
    ONCE__STAT(e, refused);
    once__stat_pick(e, reasons, sizeof reasons / sizeof reasons[0], (size_t)v,
                    ONCE__STAT_AT(refused_terminal));
}

/* The send proper; the caller counts it in e->inflight. */
static int send_counted(once__engine *e, const once_send_req *req, once_send_res *res)
{
    send_ctx c;
    memset(&c, 0, sizeof c);
    int rc = prepare(e, req, &c, res);
    if (rc == ONCE_OK)
        rc = send_loop(e, req, &c, res);
    json_decref(c.push);
    return rc;
}

/* Room in the turn queue, within the principal's share; a caller that may
 * not wait only looks. */
static int admit(once__engine *e, const once_send_req *req)
{
    return req->inline_only ? once__queue_room(e, req->principal)
                            : once__queue_admit(e, req->principal);
}

/* Load, decide, apply; again after a lost race. */
static int send_loop(once__engine *e, const once_send_req *req, send_ctx *c, once_send_res *res)
{
    int rc;
    if (c->minted && !admit(e, req)) {
        if (req->inline_only)
            return ONCE__EAGAIN;
        /* Its only verdict is REGISTER: refused before the store read. */
        res->verdict = ONCE_V_REGISTER;
        ONCE__STAT(e, overloaded);
        return ONCE_EOVERLOAD;
    }
    for (int attempt = 0; attempt < SEND_TRIES; attempt++) {
        once_record rec;
        once_tombstone tomb;
        rc = once_store_load(e->store, req->principal, c->task_id, &rec, &tomb);
        once__decide_in in = {.may_register = c->may_register,
                             .message_id = c->message_id,
                             .digest_hex = c->digest};
        if (rc == ONCE_OK) {
            in.stored = ONCE_STORED_RECORD;
            in.state = rec.state;
            in.digests = rec.digests;
        } else if (rc == ONCE_ETOMBSTONE) {
            in.stored = ONCE_STORED_TOMBSTONE;
        } else if (rc == ONCE_ENOTFOUND) {
            in.stored = ONCE_STORED_NONE;
        } else {
            return once__store_rc(e, rc);
        }
        once_verdict v = once__decide(&in);
        res->verdict = v;
        res->state = in.stored == ONCE_STORED_RECORD ? rec.state : ONCE_STATE_UNKNOWN;

        int retry = 0;
        int room = v != ONCE_V_REGISTER && v != ONCE_V_CONTINUE ? 1 : admit(e, req);
        if (req->inline_only && (v == ONCE_V_CONTINUE || !room)) {
            if (in.stored == ONCE_STORED_RECORD)
                once_record_clear(&rec);
            return ONCE__EAGAIN;   /* a write to wait for, or a queue to wait on */
        }
        if (!room) {
            /* Refused before anything is written: the retry registers the
             * same task here later or on another replica. */
            if (in.stored == ONCE_STORED_RECORD)
                once_record_clear(&rec);
            ONCE__STAT(e, overloaded);
            return ONCE_EOVERLOAD;
        }
        switch (v) {
        case ONCE_V_REGISTER:
            rc = do_register(e, c, res);
            retry = rc == ONCE_EEXISTS || rc == ONCE_ETOMBSTONE;
            break;
        case ONCE_V_CONTINUE:
        case ONCE_V_REPLAY:
            if (c->context_id != NULL && strcmp(c->context_id, rec.context_id) != 0) {
                rc = invalid(res, "message.contextId", "contextId differs from the task's");
                break;
            }
            if (v == ONCE_V_CONTINUE) {
                rc = do_continue(e, c, &rec, res);
                retry = rc == ONCE_ECONFLICT;
            } else {
                ONCE__STAT(e, replayed);
                res->replayed = 1;
                rc = respond(e, c, &rec, res);
            }
            break;
        case ONCE_V_TASK_EXPIRED:
            res->expired_at = tomb.expired_at;
            count_refusal(e, v);
            rc = ONCE_OK;
            break;
        default:   /* TASK_NOT_FOUND, IDEMPOTENCY_CONFLICT, REJECT_* */
            count_refusal(e, v);
            rc = ONCE_OK;
            break;
        }
        if (in.stored == ONCE_STORED_RECORD && rc == ONCE_OK)
            once__journal_send(e, &rec, v, res->replayed);
        if (in.stored == ONCE_STORED_RECORD)
            once_record_clear(&rec);
        if (rc == ONCE_ERANGE) {
            char why[160];
            snprintf(why, sizeof why,
                     "the task would exceed its maximum size of %lld bytes (--max-task-size)",
                     (long long)e->cfg.max_task_bytes);
            return invalid(res, "message", why);
        }
        if (!retry)
            return rc;
        /* Lost a race: forget this round's answer, keep the identity. */
        json_decref(res->result);
        res->result = NULL;
        once_free(res->result_text);
        res->result_text = NULL;
        res->verdict = 0;
        res->replayed = 0;
        res->state = ONCE_STATE_UNKNOWN;
    }
    /* Lost the race SEND_TRIES times in a row: the task is hot; retryable. */
    return ONCE_EBUSY;
}

int once__engine_send(once__engine *e, const once_send_req *req, once_send_res *res)
{
    if (res == NULL)
        return ONCE_EINVAL;
    memset(res, 0, sizeof *res);
    if (e == NULL || req == NULL)
        return ONCE_EINVAL;
    res->text_result = req->text_result;
    if (once__engine_enter(e) != ONCE_OK)
        return ONCE_ECLOSED;
    /* Before the first look at the task: a settle after it counts past it. */
    res->wait_seq = once__await_seq(e);
    int rc = send_counted(e, req, res);
    once__engine_leave(e);
    log_outcome(req->task_id, res, rc);
    return rc;
}
