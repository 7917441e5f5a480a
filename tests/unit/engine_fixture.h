/*
 * engine_fixture.h -- shared by the tests/unit/test_engine*.c programs: a
 * scriptable test executor, message builders and store assertions.
 *
 * The executor acts on the first text part of the message that started the
 * turn:
 *   "ask:Q"     input-required asking Q
 *   "fail"      once_work_fail
 *   "rc"        returns ONCE_EIO without writing (the engine fails the task)
 *   "ok"        returns ONCE_OK without writing (the engine completes it)
 *   "reply"     answers with a direct Message
 *   "sleep:N"   once_work_sleep(N ms); if canceled, tries one artifact write
 *               (rc kept in last_write_rc) and returns; else completes
 *   "block"     checkpoint ("cp-1", step 3), then waits for the gate
 *               (ignoring cancellation), then writes an artifact
 *               (last_write_rc) and completes if that worked; with
 *               no_block set it records what a resumed turn sees and
 *               completes instead
 *   "probe"     a series of writes whose results land in probe[]: an artifact
 *               with bad JSON, a status the executor may not set, an ask,
 *               then (turn over) complete, artifact, checkpoint
 *   anything    artifact echoing the text, then complete
 * Every run increments `runs`.
 */
#ifndef ONCE_TESTS_ENGINE_FIXTURE_H
#define ONCE_TESTS_ENGINE_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/generation.h"
#include "core/jcs.h"
#include "engine/engine.h"
#include "timeout.h"

#define FX_UNUSED __attribute__((unused))

/* Guarded by mu except the atomics (runs, last_write_rc, saw_cancel). */
typedef struct fx_exec {
    once_executor ex;
    int no_block;
    int runs;
    int done;          /* runs that returned */
    int last_write_rc;
    int saw_cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_open;
    int blocked;
    int resumed_seen;
    int64_t step_seen;
    char checkpoint_seen[64];
    char effect_key_seen[ONCE_EFFECT_KEY_MAX + 1];
    int probe[6];
} fx_exec;

static FX_UNUSED char *fx_text_of(const char *msg_json)
{
    /* The guarded parse: fault sweeps fail this executor's allocations too,
     * and jansson's own json_loads cannot take that (core/jcs.h). */
    json_t *m = NULL;
    (void)once__json_loads(msg_json, 0, &m, NULL);
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(m, "parts"), 0), "text"));
    char *out = strdup(t != NULL ? t : "");
    json_decref(m);
    return out;
}

static FX_UNUSED int fx_run(const once_executor *ex, once_work *w)
{
    fx_exec *f = ex->ctx;
    __atomic_fetch_add(&f->runs, 1, __ATOMIC_SEQ_CST);
    char *text = fx_text_of(once_work_message(w));
    int rc = ONCE_OK;
    if (strncmp(text, "ask:", 4) == 0) {
        rc = once_work_ask(w, text + 4);
    } else if (strcmp(text, "fail") == 0) {
        rc = once_work_fail(w, "boom");
    } else if (strcmp(text, "rc") == 0) {
        rc = ONCE_EIO;
    } else if (strcmp(text, "ok") == 0) {
        rc = ONCE_OK;
    } else if (strcmp(text, "probe") == 0) {
        f->probe[0] = once_work_artifact(w, "{not json", 0, 1);
        f->probe[1] = once_work_status(w, ONCE_STATE_SUBMITTED, NULL);
        f->probe[2] = once_work_ask(w, "q");
        f->probe[3] = once_work_complete(w);
        f->probe[4] = once_work_artifact(w, "{\"parts\":[{\"text\":\"x\"}]}", 0, 1);
        f->probe[5] = once_work_reply(w, "{\"parts\":[{\"text\":\"x\"}]}");
    } else if (strcmp(text, "reply") == 0) {
        rc = once_work_reply(w, "{\"parts\":[{\"text\":\"direct\"}]}");
    } else if (strncmp(text, "sleep:", 6) == 0) {
        long ms = strtol(text + 6, NULL, 10);
        if (once_work_sleep(w, ms)) {
            __atomic_store_n(&f->saw_cancel, 1, __ATOMIC_SEQ_CST);
            int wrc = once_work_artifact(w, "{\"artifactId\":\"late\",\"parts\":[{\"text\":\"late\"}]}", 0, 1);
            __atomic_store_n(&f->last_write_rc, wrc, __ATOMIC_SEQ_CST);
        } else {
            rc = once_work_complete(w);
        }
    } else if (strcmp(text, "block") == 0 && !f->no_block) {
        rc = once_work_checkpoint_set(w, "cp-1", 3);
        pthread_mutex_lock(&f->mu);
        f->blocked++;
        pthread_cond_broadcast(&f->cv);
        while (!f->gate_open)
            pthread_cond_wait(&f->cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
        int wrc = once_work_artifact(w, "{\"artifactId\":\"stale\",\"parts\":[{\"text\":\"stale\"}]}", 0, 1);
        __atomic_store_n(&f->last_write_rc, wrc, __ATOMIC_SEQ_CST);
        if (wrc == ONCE_OK)
            rc = once_work_complete(w);
        else
            rc = wrc;
    } else {
        if (once_work_resumed(w)) {
            pthread_mutex_lock(&f->mu);
            f->resumed_seen = 1;
            f->step_seen = once_work_step(w);
            const char *cp = once_work_checkpoint(w);
            snprintf(f->checkpoint_seen, sizeof f->checkpoint_seen, "%s", cp ? cp : "");
            snprintf(f->effect_key_seen, sizeof f->effect_key_seen, "%s", once_work_effect_key(w));
            pthread_mutex_unlock(&f->mu);
        }
        json_t *art = json_pack("{s:s, s:[{s:s}]}", "artifactId", "echo", "parts", "text", text);
        char *a = json_dumps(art, JSON_COMPACT);
        rc = once_work_artifact(w, a, 0, 1);
        free(a);
        json_decref(art);
        if (rc == ONCE_OK)
            rc = once_work_complete(w);
    }
    free(text);
    __atomic_fetch_add(&f->done, 1, __ATOMIC_SEQ_CST);
    return rc;
}

static FX_UNUSED void fx_init(fx_exec *f)
{
    memset(f, 0, sizeof *f);
    f->ex.name = "fixture";
    f->ex.run = fx_run;
    f->ex.ctx = f;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
}

static FX_UNUSED void fx_destroy(fx_exec *f)
{
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

static FX_UNUSED int fx_runs(fx_exec *f)
{
    return __atomic_load_n(&f->runs, __ATOMIC_SEQ_CST);
}

/* Wait (up to 5 s, scaled) until n runs returned: a send may answer as soon
 * as the task settles, while run() is still on its way out. */
static FX_UNUSED void fx_wait_done(fx_exec *f, int n)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    while (__atomic_load_n(&f->done, __ATOMIC_SEQ_CST) < n && once_monotonic_ms() < until)
        usleep(1000);
    assert_true(__atomic_load_n(&f->done, __ATOMIC_SEQ_CST) >= n);
}

/* Wait (up to 5 s, scaled) until n executors are parked at the gate. */
static FX_UNUSED void fx_wait_blocked(fx_exec *f, int n)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    pthread_mutex_lock(&f->mu);
    while (f->blocked < n && once_monotonic_ms() < until) {
        pthread_mutex_unlock(&f->mu);
        usleep(2000);
        pthread_mutex_lock(&f->mu);
    }
    int got = f->blocked;
    pthread_mutex_unlock(&f->mu);
    assert_true(got >= n);
}

static FX_UNUSED void fx_open_gate(fx_exec *f)
{
    pthread_mutex_lock(&f->mu);
    f->gate_open = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* A user message {messageId, role, parts:[{text}]} plus optional ids. */
static FX_UNUSED json_t *fx_msg(const char *message_id, const char *text, const char *task_id,
                                const char *context_id)
{
    json_t *m = json_pack("{s:s, s:s, s:[{s:s}]}", "messageId", message_id, "role", "ROLE_USER",
                          "parts", "text", text);
    if (task_id != NULL)
        json_object_set_new(m, "taskId", json_string(task_id));
    if (context_id != NULL)
        json_object_set_new(m, "contextId", json_string(context_id));
    return m;
}

typedef struct fx_env {
    once_store *store;
    once__engine *e;
    fx_exec fx;
    once_manual_clock clock;
} fx_env;

/* Open a memory store and an engine on it (started). cfg may tweak the
 * engine settings; store/executor are filled in. */
/* Like fx_env_open, with wrap(store) called before the engine starts (and
 * so before any engine thread reads the store's method table): a test may
 * swap in a table of its own there, never later. */
static FX_UNUSED void fx_env_open_with(fx_env *env, once__engine_config *cfg, int manual_clock,
                                       void (*wrap)(once_store *));

static FX_UNUSED void fx_env_open(fx_env *env, once__engine_config *cfg, int manual_clock)
{
    fx_env_open_with(env, cfg, manual_clock, NULL);
}

static FX_UNUSED void fx_env_open_url(fx_env *env, once__engine_config *cfg, int manual_clock,
                                      void (*wrap)(once_store *), const char *url);

static FX_UNUSED void fx_env_open_with(fx_env *env, once__engine_config *cfg, int manual_clock,
                                       void (*wrap)(once_store *))
{
    fx_env_open_url(env, cfg, manual_clock, wrap, "memory:");
}

/* Like fx_env_open_with, on the store url names (a memory: URL with
 * settings, say). */
static FX_UNUSED void fx_env_open_url(fx_env *env, once__engine_config *cfg, int manual_clock,
                                      void (*wrap)(once_store *), const char *url)
{
    memset(env, 0, sizeof *env);
    fx_init(&env->fx);
    once_store_options opt;
    memset(&opt, 0, sizeof opt);
    if (manual_clock) {
        once_manual_clock_init(&env->clock, 1700000000000LL);
        opt.clock = &env->clock.base;
    }
    assert_int_equal(once_store_open(url, &opt, &env->store, NULL, 0), ONCE_OK);
    if (wrap != NULL)
        wrap(env->store);
    once__engine_config c;
    if (cfg != NULL)
        c = *cfg;
    else
        memset(&c, 0, sizeof c);
    c.store = env->store;
    c.executor = &env->fx.ex;
    if (manual_clock)
        c.clock = &env->clock.base;
    if (c.replica_id == NULL)
        c.replica_id = "replica-a";
    if (c.workers == 0)
        c.workers = 4;
    char err[256];
    assert_int_equal(once__engine_new(&c, &env->e, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(env->e), ONCE_OK);
}

static FX_UNUSED void fx_env_close(fx_env *env)
{
    once__engine_free(env->e);
    once_store_close(env->store);
    fx_destroy(&env->fx);
}

/* A second engine on env's store (another replica), not started: it runs
 * no turn and no sweep, it only reads and waits. once__engine_free it. */
static FX_UNUSED once__engine *fx_engine_beside(fx_env *env, const char *replica_id)
{
    once__engine_config c;
    memset(&c, 0, sizeof c);
    c.store = env->store;
    c.executor = &env->fx.ex;
    c.replica_id = replica_id;
    once__engine *b = NULL;
    assert_int_equal(once__engine_new(&c, &b, NULL, 0), ONCE_OK);
    return b;
}

/* One send; returns the engine's rc. */
static FX_UNUSED int fx_send(once__engine *e, const char *principal, json_t *msg, int extension,
                             int immediate, once_send_res *res)
{
    once_send_req req;
    memset(&req, 0, sizeof req);
    req.principal = principal;
    req.message = msg;
    req.task_id = json_string_value(json_object_get(msg, "taskId"));
    req.extension = extension;
    req.return_immediately = immediate;
    req.history_length = -1;
    return once__engine_send(e, &req, res);
}

/* The result's task state name, or "" */
static FX_UNUSED const char *fx_state(const once_send_res *res)
{
    const char *s = json_string_value(
        json_object_get(json_object_get(json_object_get(res->result, "task"), "status"), "state"));
    return s != NULL ? s : "";
}

static FX_UNUSED void fx_res_clear(once_send_res *res)
{
    json_decref(res->result);
    memset(res, 0, sizeof *res);
}

/* Register a task of alice's with text (returnImmediately); its ID into
 * id[0..idlen). */
static FX_UNUSED void fx_start(once__engine *e, const char *mid, const char *text, char *id,
                               size_t idlen)
{
    once_send_res res;
    json_t *m = fx_msg(mid, text, NULL, NULL);
    assert_int_equal(fx_send(e, "alice", m, 0, 1, &res), ONCE_OK);
    snprintf(id, idlen, "%s", res.task_id);
    fx_res_clear(&res);
    json_decref(m);
}

/* Send one more plain task through e (an engine with ONE worker) and wait
 * until it completed: the worker has then finished every turn queued before
 * it, including what the engine does after the executor returned. The
 * positive signal before asserting that an earlier turn wrote nothing more.
 * Defined after fx_wait_state, below. */
static FX_UNUSED void fx_settle(once__engine *e, once_store *s, const char *principal);

static FX_UNUSED void fx_load(once_store *s, const char *principal, const char *task_id,
                              once_record *rec)
{
    assert_int_equal(once_store_load(s, principal, task_id, rec, NULL), ONCE_OK);
}

/* The stored journal (src/engine/journal.c) of the task, parsed (the
 * caller's reference). */
static FX_UNUSED json_t *fx_journal_of(once_store *s, const char *principal, const char *task_id)
{
    once_record r;
    fx_load(s, principal, task_id, &r);
    assert_non_null(r.journal);
    json_t *j = json_loads(r.journal, 0, NULL);
    assert_non_null(j);
    assert_true(strlen(r.journal) <= ONCE_JOURNAL_MAX);
    once_record_clear(&r);
    return j;
}

/* Its first entry of kind at or after index from (or NULL); *at gets its
 * index. */
static FX_UNUSED json_t *fx_journal_entry(json_t *j, const char *kind, size_t from, size_t *at)
{
    json_t *ent = json_object_get(j, "entries");
    for (size_t i = from; i < json_array_size(ent); i++) {
        json_t *x = json_array_get(ent, i);
        if (strcmp(json_string_value(json_object_get(x, "kind")), kind) == 0) {
            if (at != NULL)
                *at = i;
            return x;
        }
    }
    return NULL;
}

static FX_UNUSED int64_t fx_num(json_t *x, const char *name)
{
    json_t *v = json_object_get(x, name);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static FX_UNUSED const char *fx_str(json_t *x, const char *name)
{
    const char *s = json_string_value(json_object_get(x, name));
    assert_non_null(s);
    return s;
}

/* Wait (up to 5 s, scaled) until the stored task reaches state. */
static FX_UNUSED void fx_wait_state(once_store *s, const char *principal, const char *task_id,
                                    once_state state)
{
    int64_t until = once_monotonic_ms() + tt_ms(5000);
    once_state got = ONCE_STATE_UNKNOWN;
    while (once_monotonic_ms() < until) {
        once_record r;
        if (once_store_load(s, principal, task_id, &r, NULL) == ONCE_OK) {
            got = r.state;
            once_record_clear(&r);
            if (got == state)
                return;
        }
        usleep(2000);
    }
    fail_msg("task %s: state %s, wanted %s", task_id, once_state_name(got),
             once_state_name(state));
}

static FX_UNUSED void fx_settle(once__engine *e, once_store *s, const char *principal)
{
    static int n;
    char mid[32];
    once_send_res res;
    snprintf(mid, sizeof mid, "m-settle-%d", __atomic_add_fetch(&n, 1, __ATOMIC_SEQ_CST));
    json_t *m = fx_msg(mid, "settle", NULL, NULL);
    assert_int_equal(fx_send(e, principal, m, 0, 1, &res), ONCE_OK);
    fx_wait_state(s, principal, res.task_id, ONCE_STATE_COMPLETED);
    fx_res_clear(&res);
    json_decref(m);
}

/* The store holds no integrity problem; events of the key are 1..generation
 * and the record's generation is the last one. */
static FX_UNUSED void fx_check_events(once_store *s, const char *principal, const char *task_id)
{
    once_record r;
    fx_load(s, principal, task_id, &r);
    once_event_list l;
    assert_int_equal(once_store_events(s, principal, task_id, 0, 0, &l), ONCE_OK);
    assert_int_equal((int64_t)l.n, r.generation);
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(l.v[i].generation, (int64_t)i + 1);
        json_t *p = json_loads(l.v[i].payload, 0, NULL);
        assert_non_null(p);
        assert_int_equal(json_object_size(p), 1);   /* exactly one StreamResponse member */
        json_t *inner = json_object_iter_value(json_object_iter(p));
        if (json_object_get(p, "message") == NULL)
            assert_int_equal(once__generation_of(inner), l.v[i].generation);
        json_decref(p);
    }
    once_event_list_clear(&l);
    once_record_clear(&r);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (rep.bad_generation || rep.event_gaps || rep.orphan_events || rep.bad_state)
        fail_msg("store check: %s", rep.first_problem);
}

#endif
