/*
 * test_engine.c -- once__engine_send through every decide() row, the task it
 * builds (history, status, generation, events), get, and the rule that a
 * store failure is never turned into a verdict.
 */
#include "core/generation.h"
#include "unit/engine_fixture.h"

static const char *P = "alice";

/* A send of the same first message twice: one task, one run, a read-only
 * replay that returns the same task. */
static void test_register_then_replay(void **state)
{
    (void)state;
    fx_env env;
    /* No background sweep: it would write the replay's journal count. */
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sweep_interval_ms = 3600 * 1000;
    fx_env_open(&env, &cfg, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);

    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_int_equal(res.replayed, 0);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    json_t *task = json_object_get(res.result, "task");
    assert_string_equal(json_string_value(json_object_get(task, "id")), tid);
    assert_non_null(json_string_value(json_object_get(task, "contextId")));
    json_t *hist = json_object_get(task, "history");
    assert_int_equal(json_array_size(hist), 1);
    /* history copy carries the server-side ids */
    assert_string_equal(json_string_value(json_object_get(json_array_get(hist, 0), "taskId")), tid);
    json_t *art = json_array_get(json_object_get(task, "artifacts"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(art, "parts"), 0), "text")),
        "hello");
    once_record before;
    fx_load(env.store, P, tid, &before);
    assert_int_equal(once__generation_of(task), before.generation);
    fx_res_clear(&res);

    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_int_equal(res.replayed, 1);
    assert_string_equal(res.task_id, tid);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    once_record after;
    fx_load(env.store, P, tid, &after);
    assert_int_equal(after.version, before.version);
    assert_int_equal(after.generation, before.generation);
    assert_int_equal(after.fence, before.fence);
    assert_int_equal(fx_runs(&env.fx), 1);
    fx_check_events(env.store, P, tid);

    once__engine_stats st;
    once__engine_get_stats(env.e, &st);
    assert_int_equal(st.registered, 1);
    assert_int_equal(st.replayed, 1);
    assert_int_equal(st.executed_turns, 1);

    once_record_clear(&before);
    once_record_clear(&after);
    fx_res_clear(&res);
    json_decref(m);
    fx_env_close(&env);
}

/* Same messageId, different content: MESSAGE_ID_REUSED, nothing written. */
static void test_idempotency_conflict(void **state)
{
    (void)state;
    fx_env env;
    /* No background sweep: it would write the replay's journal count. */
    once__engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sweep_interval_ms = 3600 * 1000;
    fx_env_open(&env, &cfg, 0);
    once_send_res res;
    json_t *m1 = fx_msg("m-1", "ask:who?", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    once_record before, after;
    fx_load(env.store, P, tid, &before);

    json_t *m2 = fx_msg("m-1", "something else", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_IDEMPOTENCY_CONFLICT);
    assert_null(res.result);
    assert_string_equal(res.task_id, tid);
    assert_string_equal(res.message_id, "m-1");
    fx_load(env.store, P, tid, &after);
    assert_int_equal(after.version, before.version);
    assert_int_equal(fx_runs(&env.fx), 1);

    once_record_clear(&before);
    once_record_clear(&after);
    json_decref(m1);
    json_decref(m2);
    fx_env_close(&env);
}

/* input-required -> continuation (fence + 1) -> completed; a retried
 * continuation replays; a new message to the completed task is refused
 * naming COMPLETED. */
static void test_continue_flow(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m1 = fx_msg("m-1", "ask:your name?", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    json_t *st = json_object_get(json_object_get(res.result, "task"), "status");
    json_t *q = json_object_get(st, "message");
    assert_string_equal(json_string_value(json_object_get(q, "role")), "ROLE_AGENT");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(q, "parts"), 0), "text")),
        "your name?");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.fence, 1);
    assert_string_equal(r.lease_owner, "");   /* interrupted: nobody holds it */
    assert_int_equal(r.lease_until, 0);
    once_record_clear(&r);

    json_t *m2 = fx_msg("m-2", "Ada", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_CONTINUE);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    json_t *hist = json_object_get(json_object_get(res.result, "task"), "history");
    assert_int_equal(json_array_size(hist), 3);   /* user, agent question, user */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(hist, 2), "messageId")), "m-2");
    fx_res_clear(&res);
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.fence, 2);
    assert_string_equal(r.lease_owner, "");
    int64_t version = r.version;
    once_record_clear(&r);

    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);

    json_t *m3 = fx_msg("m-3", "more", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m3, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REJECT_TERMINAL);
    assert_int_equal(res.state, ONCE_STATE_COMPLETED);
    assert_null(res.result);
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.version, version);
    once_record_clear(&r);
    assert_int_equal(fx_runs(&env.fx), 2);
    fx_check_events(env.store, P, tid);

    json_decref(m1);
    json_decref(m2);
    json_decref(m3);
    fx_env_close(&env);
}

/* A new message to a running task is refused naming its state. */
static void test_reject_busy(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m1 = fx_msg("m-1", "sleep:10000", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m1, 0, 1, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    fx_wait_state(env.store, P, tid, ONCE_STATE_WORKING);

    json_t *m2 = fx_msg("m-2", "hi", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REJECT_BUSY);
    assert_int_equal(res.state, ONCE_STATE_WORKING);
    assert_null(res.result);

    assert_int_equal(once__engine_cancel(env.e, P, tid, NULL, NULL, NULL), ONCE_OK);
    json_decref(m1);
    json_decref(m2);
    fx_env_close(&env);
}

/* An unknown taskId is TASK_NOT_FOUND unless the idempotency extension is
 * active, in which case the client-minted ID registers. */
static void test_client_ids(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "hello", "t-client-1", NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_TASK_NOT_FOUND);
    assert_string_equal(res.task_id, "t-client-1");
    once_record r;
    assert_int_equal(once_store_load(env.store, P, "t-client-1", &r, NULL), ONCE_ENOTFOUND);

    assert_int_equal(fx_send(env.e, P, m, 1, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_string_equal(res.task_id, "t-client-1");
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);
    /* Once it exists, a retry without the extension replays too. */
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    /* Another principal with the same ID: a different task. */
    assert_int_equal(fx_send(env.e, "bob", m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_TASK_NOT_FOUND);
    json_decref(m);

    json_t *bad = fx_msg("m-2", "hello", "bad id!", NULL);
    assert_int_equal(fx_send(env.e, P, bad, 1, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message.taskId");
    json_decref(bad);
    assert_int_equal(fx_runs(&env.fx), 1);
    fx_env_close(&env);
}

/* contextId: taken from the first message, minted otherwise, and a
 * disagreeing one is refused. */
static void test_context_id(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 1);
    once_send_res res;
    json_t *m1 = fx_msg("m-1", "ask:q", NULL, "ctx-1");
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res.result, "task"), "contextId")),
        "ctx-1");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);

    json_t *m2 = fx_msg("m-2", "answer", tid, "ctx-other");
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message.contextId");
    once_record r;
    fx_load(env.store, P, tid, &r);
    assert_int_equal(r.state, ONCE_STATE_INPUT_REQUIRED);
    assert_string_equal(r.context_id, "ctx-1");
    once_record_clear(&r);

    json_t *m3 = fx_msg("m-3", "x", NULL, "not valid!");
    assert_int_equal(fx_send(env.e, P, m3, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message.contextId");

    json_t *m4 = fx_msg("m-4", "x", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m4, 0, 0, &res), ONCE_OK);
    const char *minted =
        json_string_value(json_object_get(json_object_get(res.result, "task"), "contextId"));
    assert_non_null(minted);
    assert_int_equal(strlen(minted), ONCE_UUID_LEN);
    /* A UUIDv7 (time-ordered: the stores' context index grows at its end),
     * whose 48-bit timestamp is the engine clock's now. */
    assert_int_equal(minted[14], '7');
    char ts[13];
    snprintf(ts, sizeof ts, "%.8s%.4s", minted, minted + 9);
    assert_int_equal((int64_t)strtoll(ts, NULL, 16), once_now(&env.clock.base));
    fx_res_clear(&res);

    json_decref(m1);
    json_decref(m2);
    json_decref(m3);
    json_decref(m4);
    fx_env_close(&env);
}

static int legacy_send(once__engine *e, const char *id, const char *text, once_send_res *res)
{
    json_t *m = json_pack("{s:s, s:[{s:s}]}", "role", "user", "parts", "text", text);
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.message = m;
    req.task_id = id;
    req.legacy = 1;
    req.history_length = -1;
    int rc = once__engine_send(e, &req, res);
    json_decref(m);
    return rc;
}

/* 0.1 tasks/send: the client's id registers; identity is the digest. */
static void test_legacy(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    assert_int_equal(legacy_send(env.e, "legacy-1", "ask:q", &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_string_equal(res.task_id, "legacy-1");
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    fx_res_clear(&res);
    assert_int_equal(legacy_send(env.e, "legacy-1", "ask:q", &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    assert_int_equal(legacy_send(env.e, "legacy-1", "fine", &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_CONTINUE);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);
    /* Either accepted message replays, in any order. */
    assert_int_equal(legacy_send(env.e, "legacy-1", "ask:q", &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    fx_res_clear(&res);
    assert_int_equal(legacy_send(env.e, "legacy-1", "new", &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REJECT_TERMINAL);
    assert_int_equal(legacy_send(env.e, "no good", "x", &res), ONCE_EINVAL);
    assert_string_equal(res.field, "id");
    assert_int_equal(fx_runs(&env.fx), 2);
    fx_check_events(env.store, P, "legacy-1");
    fx_env_close(&env);
}

/* What run() leaves behind decides the outcome; a direct Message is kept
 * and replayed, and is not a task for GetTask. */
static void test_executor_outcomes(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    struct {
        const char *text, *state;
    } rows[] = {{"ok", "TASK_STATE_COMPLETED"},
                {"rc", "TASK_STATE_FAILED"},
                {"fail", "TASK_STATE_FAILED"}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char mid[16];
        snprintf(mid, sizeof mid, "m-%zu", i);
        json_t *m = fx_msg(mid, rows[i].text, NULL, NULL);
        assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
        assert_string_equal(fx_state(&res), rows[i].state);
        if (strcmp(rows[i].text, "rc") == 0) {
            json_t *sm = json_object_get(
                json_object_get(json_object_get(res.result, "task"), "status"), "message");
            const char *why = json_string_value(
                json_object_get(json_array_get(json_object_get(sm, "parts"), 0), "text"));
            assert_non_null(why);
            assert_non_null(strstr(why, "I/O"));
        }
        fx_check_events(env.store, P, res.task_id);
        fx_res_clear(&res);
        json_decref(m);
    }

    json_t *m = fx_msg("m-reply", "reply", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    json_t *msg = json_object_get(res.result, "message");
    assert_non_null(msg);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(msg, "parts"), 0), "text")),
        "direct");
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REPLAY);
    assert_non_null(json_object_get(res.result, "message"));
    fx_res_clear(&res);
    json_t *task = NULL;
    assert_int_equal(once__engine_get(env.e, P, tid, -1, &task, NULL), ONCE_ENOTFOUND);
    assert_null(task);
    json_decref(m);
    assert_int_equal(fx_runs(&env.fx), 4);
    fx_env_close(&env);
}

/* Executor writes that break the rules are refused, never applied: bad
 * JSON, a state an executor may not set, and any transition after the turn
 * ended in input-required. */
static void test_executor_illegal_writes(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m = fx_msg("m-1", "probe", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m, 0, 0, &res), ONCE_OK);
    assert_string_equal(fx_state(&res), "TASK_STATE_INPUT_REQUIRED");
    fx_wait_done(&env.fx, 1);
    assert_int_equal(env.fx.probe[0], ONCE_EINVAL);
    assert_int_equal(env.fx.probe[1], ONCE_EINVAL);
    assert_int_equal(env.fx.probe[2], ONCE_OK);
    assert_int_equal(env.fx.probe[3], ONCE_EILLEGAL);
    assert_int_equal(env.fx.probe[4], ONCE_EILLEGAL);
    assert_int_equal(env.fx.probe[5], ONCE_EILLEGAL);
    once_record r;
    fx_load(env.store, P, res.task_id, &r);
    assert_int_equal(r.state, ONCE_STATE_INPUT_REQUIRED);
    assert_null(strstr(r.task_json, "artifacts"));
    assert_int_equal(r.generation, 3);   /* task, working, input-required */
    once_record_clear(&r);
    fx_check_events(env.store, P, res.task_id);
    fx_res_clear(&res);
    json_decref(m);
    fx_env_close(&env);
}

/* GetTask: generation, history trimming, principal isolation. */
static void test_get(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *m1 = fx_msg("m-1", "ask:q", NULL, NULL);
    assert_int_equal(fx_send(env.e, P, m1, 0, 0, &res), ONCE_OK);
    char tid[ONCE_ID_MAX + 1];
    snprintf(tid, sizeof tid, "%s", res.task_id);
    fx_res_clear(&res);
    json_t *m2 = fx_msg("m-2", "done", tid, NULL);
    assert_int_equal(fx_send(env.e, P, m2, 0, 0, &res), ONCE_OK);
    fx_res_clear(&res);

    once_record r;
    fx_load(env.store, P, tid, &r);
    json_t *task = NULL;
    assert_int_equal(once__engine_get(env.e, P, tid, -1, &task, NULL), ONCE_OK);
    assert_int_equal(once__generation_of(task), r.generation);
    assert_int_equal(json_array_size(json_object_get(task, "history")), 3);
    json_decref(task);
    assert_int_equal(once__engine_get(env.e, P, tid, 1, &task, NULL), ONCE_OK);
    json_t *hist = json_object_get(task, "history");
    assert_int_equal(json_array_size(hist), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hist, 0), "messageId")),
                        "m-2");
    json_decref(task);
    assert_int_equal(once__engine_get(env.e, P, tid, 0, &task, NULL), ONCE_OK);
    assert_null(json_object_get(task, "history"));
    json_decref(task);
    task = NULL;
    assert_int_equal(once__engine_get(env.e, "mallory", tid, -1, &task, NULL), ONCE_ENOTFOUND);
    assert_null(task);
    assert_int_equal(once__engine_get(env.e, P, "nope", -1, &task, NULL), ONCE_ENOTFOUND);
    once_record_clear(&r);
    json_decref(m1);
    json_decref(m2);
    fx_env_close(&env);
}

/* Malformed requests: a clear field, nothing stored, nothing run. */
static void test_bad_input(void **state)
{
    (void)state;
    fx_env env;
    fx_env_open(&env, NULL, 0);
    once_send_res res;
    json_t *nomid = json_pack("{s:s, s:[{s:s}]}", "role", "ROLE_USER", "parts", "text", "x");
    assert_int_equal(fx_send(env.e, P, nomid, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message.messageId");
    json_t *intmid = json_pack("{s:i, s:[{s:s}]}", "messageId", 7, "parts", "text", "x");
    assert_int_equal(fx_send(env.e, P, intmid, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message.messageId");
    json_t *arr = json_array();
    assert_int_equal(fx_send(env.e, P, arr, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "message");
    json_t *ok = fx_msg("m-1", "x", NULL, NULL);
    assert_int_equal(fx_send(env.e, "", ok, 0, 0, &res), ONCE_EINVAL);
    assert_string_equal(res.field, "principal");
    assert_int_equal(fx_runs(&env.fx), 0);
    once_check_report rep;
    assert_int_equal(once_store_check(env.store, &rep), ONCE_OK);
    assert_int_equal(rep.records, 0);
    json_decref(nomid);
    json_decref(intmid);
    json_decref(arr);
    json_decref(ok);
    fx_env_close(&env);
}

/* ------------------------------------------------------------------------
 * A store that fails on demand: a memory store behind a forwarding vtable.
 */

typedef struct flaky_store {
    once_store base;
    once_store *inner;
    int fail_load;     /* return this from load when non-zero (__atomic) */
    int fail_create;   /* same for create */
    int resume_list;   /* list without a cursor: a ONCE_KIND_RESUME record only */
} flaky_store;

static int fl_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                     once_record *winner, once_tombstone *tomb)
{
    flaky_store *f = (flaky_store *)s;
    int fail = __atomic_load_n(&f->fail_create, __ATOMIC_SEQ_CST);
    if (fail)
        return fail;
    return once_store_create(f->inner, rec, ev, nev, winner, tomb);
}
static int fl_load(once_store *s, const char *p, const char *t, once_record *out,
                   once_tombstone *tomb)
{
    flaky_store *f = (flaky_store *)s;
    int fail = __atomic_load_n(&f->fail_load, __ATOMIC_SEQ_CST);
    if (fail) {
        memset(out, 0, sizeof *out);
        return fail;
    }
    return once_store_load(f->inner, p, t, out, tomb);
}
static int fl_update(once_store *s, const once_record *rec, int64_t v, const once_event *ev,
                     size_t nev)
{
    return once_store_update(((flaky_store *)s)->inner, rec, v, ev, nev);
}
static int fl_meta(once_store *s, const char *name, const char *init, char **out)
{
    return once_store_meta(((flaky_store *)s)->inner, name, init, out);
}
static int fl_check(once_store *s, once_check_report *rep)
{
    return once_store_check(((flaky_store *)s)->inner, rep);
}
static int fl_expired(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    return once_store_expired_leases(((flaky_store *)s)->inner, now, max, out);
}
static int fl_sweep(once_store *s, int64_t fb, int64_t now, size_t max, size_t *n)
{
    return once_store_sweep(((flaky_store *)s)->inner, fb, now, max, n);
}
static int fl_purge(once_store *s, int64_t eb, size_t max, size_t *n)
{
    return once_store_purge(((flaky_store *)s)->inner, eb, max, n);
}
static int fl_events(once_store *s, const char *p, const char *t, int64_t after, size_t max,
                     once_event_list *out)
{
    return once_store_events(((flaky_store *)s)->inner, p, t, after, max, out);
}
/* resume_list: the first page stops at the first entry, as a store without
 * an index for the filter stops at its scan budget (store.h, list). */
static int fl_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    int rc = once_store_list(((flaky_store *)s)->inner, q, out);
    if (rc != ONCE_OK || !((flaky_store *)s)->resume_list || q->after_task_id || out->n == 0)
        return rc;
    once_record mark;
    memset(&mark, 0, sizeof mark);
    mark.kind = ONCE_KIND_RESUME;
    mark.created_at = out->v[0].created_at;
    memcpy(mark.task_id, out->v[0].task_id, sizeof mark.task_id);
    once_record_list_clear(out);
    out->v = calloc(1, sizeof *out->v);
    assert_non_null(out->v);
    out->v[0] = mark;
    out->n = 1;
    return ONCE_OK;
}
static int fl_renew(once_store *s, const char *p, const char *t, const char *owner, int64_t fence,
                    int64_t until)
{
    return once_store_renew(((flaky_store *)s)->inner, p, t, owner, fence, until);
}

static const once_store_methods flaky_methods = {
    .version = ONCE_STORE_METHODS_VERSION,
    .scheme = "flaky",
    .create = fl_create,
    .load = fl_load,
    .update = fl_update,
    .events = fl_events,
    .expired_leases = fl_expired,
    .sweep = fl_sweep,
    .purge = fl_purge,
    .list = fl_list,
    .meta = fl_meta,
    .check = fl_check,
    .renew = fl_renew,
};

/* ESTORE / EBUSY from the store come back as such, with no verdict and no
 * record written; when the store recovers, the retry registers once. */
static void test_store_errors(void **state)
{
    (void)state;
    flaky_store fs;
    memset(&fs, 0, sizeof fs);
    fs.base.m = &flaky_methods;
    assert_int_equal(once_store_open("memory:", NULL, &fs.inner, NULL, 0), ONCE_OK);
    fx_exec fx;
    fx_init(&fx);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = &fs.base;
    c.executor = &fx.ex;
    c.workers = 2;
    once__engine *e;
    assert_int_equal(once__engine_new(&c, &e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(e), ONCE_OK);

    once_send_res res;
    json_t *m = fx_msg("m-1", "hello", NULL, NULL);
    __atomic_store_n(&fs.fail_load, ONCE_ESTORE, __ATOMIC_SEQ_CST);
    assert_int_equal(fx_send(e, P, m, 0, 0, &res), ONCE_ESTORE);
    assert_null(res.result);
    __atomic_store_n(&fs.fail_load, ONCE_EBUSY, __ATOMIC_SEQ_CST);
    assert_int_equal(fx_send(e, P, m, 0, 0, &res), ONCE_EBUSY);
    __atomic_store_n(&fs.fail_load, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fs.fail_create, ONCE_ESTORE, __ATOMIC_SEQ_CST);
    assert_int_equal(fx_send(e, P, m, 0, 0, &res), ONCE_ESTORE);
    once_check_report rep;
    assert_int_equal(once_store_check(fs.inner, &rep), ONCE_OK);
    assert_int_equal(rep.records, 0);
    __atomic_store_n(&fs.fail_create, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fs.fail_load, ONCE_ESTORE, __ATOMIC_SEQ_CST);
    json_t *task = NULL;
    assert_int_equal(once__engine_get(e, P, "t-1", -1, &task, NULL), ONCE_ESTORE);
    assert_int_equal(once__engine_cancel(e, P, "t-1", &task, NULL, NULL), ONCE_ESTORE);
    __atomic_store_n(&fs.fail_load, 0, __ATOMIC_SEQ_CST);

    assert_int_equal(fx_send(e, P, m, 0, 0, &res), ONCE_OK);
    assert_int_equal(res.verdict, ONCE_V_REGISTER);
    assert_string_equal(fx_state(&res), "TASK_STATE_COMPLETED");
    fx_res_clear(&res);
    assert_int_equal(fx_runs(&fx), 1);
    once__engine_stats st;
    once__engine_get_stats(e, &st);
    assert_true(st.store_errors >= 5);

    json_decref(m);
    once__engine_free(e);
    once_store_close(fs.inner);
    fx_destroy(&fx);
}

/* A page the store stopped early comes back short, even empty, with a
 * token that continues after where the store stopped. */
static void test_list_resume(void **state)
{
    (void)state;
    flaky_store fs;
    memset(&fs, 0, sizeof fs);
    fs.base.m = &flaky_methods;
    assert_int_equal(once_store_open("memory:", NULL, &fs.inner, NULL, 0), ONCE_OK);
    fx_exec fx;
    fx_init(&fx);
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = &fs.base;
    c.executor = &fx.ex;
    c.workers = 2;
    once__engine *e;
    assert_int_equal(once__engine_new(&c, &e, NULL, 0), ONCE_OK);
    assert_int_equal(once__engine_start(e), ONCE_OK);
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "m-%d", i);
        once_send_res res;
        json_t *m = fx_msg(id, "hello", NULL, NULL);
        assert_int_equal(fx_send(e, P, m, 0, 0, &res), ONCE_OK);
        fx_res_clear(&res);
        json_decref(m);
    }
    fs.resume_list = 1;
    once_list_req req;
    memset(&req, 0, sizeof req);
    req.principal = P;
    req.page_size = 10;
    json_t *tasks = NULL;
    char next[256];
    assert_int_equal(once__engine_list(e, &req, &tasks, next), ONCE_OK);
    assert_int_equal(json_array_size(tasks), 0);
    assert_true(next[0] != '\0');
    json_decref(tasks);
    char token[256];
    snprintf(token, sizeof token, "%s", next);
    req.page_token = token;
    assert_int_equal(once__engine_list(e, &req, &tasks, next), ONCE_OK);
    assert_int_equal(json_array_size(tasks), 2);   /* the rest, after the first */
    assert_string_equal(next, "");
    json_decref(tasks);

    once__engine_free(e);
    once_store_close(fs.inner);
    fx_destroy(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_register_then_replay),
        cmocka_unit_test(test_idempotency_conflict),
        cmocka_unit_test(test_continue_flow),
        cmocka_unit_test(test_reject_busy),
        cmocka_unit_test(test_client_ids),
        cmocka_unit_test(test_context_id),
        cmocka_unit_test(test_legacy),
        cmocka_unit_test(test_executor_outcomes),
        cmocka_unit_test(test_executor_illegal_writes),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_store_errors),
        cmocka_unit_test(test_list_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
