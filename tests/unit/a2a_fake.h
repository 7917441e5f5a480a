/*
 * a2a_fake.h -- a scripted backend for the codec unit tests: each call
 * records what the codec handed over and answers what the test set up, so
 * the tests see exactly how engine outcomes become JSON-RPC responses.
 * Header-only (static functions); include it from one test file.
 */
#ifndef ONCE_TESTS_A2A_FAKE_H
#define ONCE_TESTS_A2A_FAKE_H

#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/alloc_int.h"

#define FAKE_UNUSED __attribute__((unused))

typedef struct fake {
    /* scripted answers */
    int rc;
    once_verdict verdict;
    once_state state;
    int replayed;
    int64_t expired_at;
    const char *field;
    json_t *result;           /* returned (incref'd) as result / task / tasks */
    char next_token[256];
    /* what the codec sent */
    int calls;
    int sent_extension, sent_legacy, sent_immediately, sent_history;
    char sent_task_id[ONCE_ID_MAX + 1];
    char sent_principal[64];
    json_t *sent_message;     /* copy */
    once_list_req sent_list;
} fake;

static void fake_reset(fake *f)
{
    json_decref(f->result);
    json_decref(f->sent_message);
    memset(f, 0, sizeof *f);
}

static int fake_send(void *ctx, const once_send_req *req, once_send_res *res)
{
    fake *f = ctx;
    f->calls++;
    f->sent_extension = req->extension;
    f->sent_legacy = req->legacy;
    f->sent_immediately = req->return_immediately;
    f->sent_history = req->history_length;
    snprintf(f->sent_task_id, sizeof f->sent_task_id, "%s", req->task_id ? req->task_id : "");
    snprintf(f->sent_principal, sizeof f->sent_principal, "%s", req->principal);
    json_decref(f->sent_message);
    f->sent_message = json_deep_copy(req->message);
    res->verdict = f->verdict;
    res->replayed = f->replayed;
    res->state = f->state;
    res->expired_at = f->expired_at;
    res->field = f->field;
    snprintf(res->task_id, sizeof res->task_id, "%s", req->task_id ? req->task_id : "derived-1");
    if (f->field)
        snprintf(res->detail, sizeof res->detail, "bad %s", f->field);
    res->result = f->result ? json_deep_copy(f->result) : NULL;
    if (f->result != NULL && res->result == NULL)
        return ONCE_ENOMEM; /* as the engine answers when its copy fails */
    return f->rc;
}

static int fake_get(void *ctx, const char *principal, const char *task_id, int history_length,
                    json_t **task, int64_t *expired_at)
{
    fake *f = ctx;
    f->calls++;
    f->sent_history = history_length;
    snprintf(f->sent_task_id, sizeof f->sent_task_id, "%s", task_id);
    snprintf(f->sent_principal, sizeof f->sent_principal, "%s", principal);
    *expired_at = f->expired_at;
    *task = (f->rc == ONCE_OK && f->result) ? json_deep_copy(f->result) : NULL;
    if (f->rc == ONCE_OK && f->result != NULL && *task == NULL)
        return ONCE_ENOMEM;
    return f->rc;
}

static int fake_cancel(void *ctx, const char *principal, const char *task_id, json_t **task,
                       once_state *state, int64_t *expired_at)
{
    fake *f = ctx;
    f->calls++;
    snprintf(f->sent_task_id, sizeof f->sent_task_id, "%s", task_id);
    snprintf(f->sent_principal, sizeof f->sent_principal, "%s", principal);
    *state = f->state;
    *expired_at = f->expired_at;
    *task = (f->rc == ONCE_OK && f->result) ? json_deep_copy(f->result) : NULL;
    if (f->rc == ONCE_OK && f->result != NULL && *task == NULL)
        return ONCE_ENOMEM;
    return f->rc;
}

static int fake_list(void *ctx, const once_list_req *req, json_t **tasks, char next_token[256])
{
    fake *f = ctx;
    f->calls++;
    f->sent_list = *req;
    f->sent_list.context_id = NULL; /* borrowed pointers die with the request */
    f->sent_list.page_token = NULL;
    f->sent_list.principal = NULL;
    snprintf(next_token, 256, "%s", f->next_token);
    *tasks = (f->rc == ONCE_OK) ? (f->result ? json_deep_copy(f->result) : json_array()) : NULL;
    if (f->rc == ONCE_OK && *tasks == NULL)
        return ONCE_ENOMEM;
    return f->rc;
}

/* A codec over f. */
static once__a2a *fake_codec(fake *f, int test_admin, once_offset_clock *clock)
{
    once__a2a_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.backend.ctx = f;
    cfg.backend.send = fake_send;
    cfg.backend.get = fake_get;
    cfg.backend.cancel = fake_cancel;
    cfg.backend.list = fake_list;
    cfg.url = "http://127.0.0.1:1/";
    cfg.retention_ms = 72LL * 3600 * 1000;
    cfg.tombstone_ms = 30LL * 86400 * 1000;
    cfg.test_admin = test_admin;
    cfg.clock = clock;
    once__a2a *a = NULL;
    if (once__a2a_new(&cfg, &a) != ONCE_OK)
        return NULL;
    return a;
}

/* POST body with the given headers; returns the parsed response document
 * (caller decrefs) and fills *resp (caller clears). */
FAKE_UNUSED static json_t *fake_call(once__a2a *a, const char *version, const char *extensions,
                         const char *body, once__a2a_response *resp)
{
    once__a2a_request req = {.principal = "alice", .version = version, .extensions = extensions,
                            .body = body, .len = strlen(body)};
    if (once__a2a_handle(a, &req, resp) != ONCE_OK)
        return NULL;
    return json_loadb(resp->body, resp->len, 0, NULL);
}

/* error.code of doc, 0 if none. */
FAKE_UNUSED static int err_code(const json_t *doc)
{
    return (int)json_integer_value(json_object_get(json_object_get(doc, "error"), "code"));
}

/* The last ErrorInfo of doc's error.data: once's own reason, which follows
 * A2A's error type where it says more (errors.c). */
FAKE_UNUSED static const json_t *err_info_last(const json_t *doc)
{
    const json_t *data = json_object_get(json_object_get(doc, "error"), "data");
    return json_array_get(data, json_array_size(data) - 1);
}

/* The last ErrorInfo's reason / metadata[key] of doc, "" if absent. */
FAKE_UNUSED static const char *err_reason(const json_t *doc)
{
    const json_t *d = err_info_last(doc);
    const char *r = json_string_value(json_object_get(d, "reason"));
    return r ? r : "";
}

FAKE_UNUSED static const char *err_meta(const json_t *doc, const char *key)
{
    const json_t *d = err_info_last(doc);
    const char *v = json_string_value(json_object_get(json_object_get(d, "metadata"), key));
    return v ? v : "";
}

/* One answer of the codec, kept for comparison. */
typedef struct fake_answer {
    int rc;
    int http_status;
    char *body;               /* malloc'd; NULL when rc != ONCE_OK */
} fake_answer;

/* Keep the answer rc / r (then cleared) for comparison. */
FAKE_UNUSED static fake_answer fake_keep(int rc, once__a2a_response *r)
{
    fake_answer out = {0};
    out.rc = rc;
    if (rc == ONCE_OK) {
        out.http_status = r->http_status;
        out.body = r->body != NULL ? strndup(r->body, r->len) : strdup("(stream)");
    }
    once__a2a_response_clear(r);
    return out;
}

/* A codec over f (reset first) scripted for a sweep: every call answers rc,
 * a send registers a completed task, and result_json (may be NULL) is the
 * result. */
FAKE_UNUSED static once__a2a *fake_scripted(fake *f, int rc, const char *result_json)
{
    memset(f, 0, sizeof *f);
    once__a2a *a = fake_codec(f, 0, NULL);
    f->rc = rc;
    f->verdict = ONCE_V_REGISTER;
    f->state = ONCE_STATE_COMPLETED;
    f->result = result_json != NULL ? json_loads(result_json, 0, NULL) : NULL;
    return a;
}

/* The allocation fault sweep (SQLite's test_malloc habit): run call with
 * allocation i failing, for i = 0, 1, ... until a run hits no fault. Every
 * answer must be want itself, ONCE_ENOMEM, or one ok_fault accepts (a
 * whole internal error). Fails the test otherwise. Needs cmocka. */
FAKE_UNUSED static void fake_fault_sweep(const char *what, fake_answer (*call)(void *), void *arg,
                                         const fake_answer *want,
                                         int (*ok_fault)(const fake_answer *got,
                                                         const fake_answer *want))
{
    long i;
    for (i = 0; i < 5000; i++) {
        once__alloc_fail_after(i);
        fake_answer got = call(arg);
        long used = once__alloc_count();
        once__alloc_fail_after(-1);
        int same = got.rc == want->rc && got.http_status == want->http_status &&
                   got.body != NULL && want->body != NULL && strcmp(got.body, want->body) == 0;
        if (got.rc != ONCE_ENOMEM && !same && !ok_fault(&got, want))
            fail_msg("%s, allocation %ld failed: rc %s, HTTP %d, %s\nwant HTTP %d %s", what, i,
                     once_errname(got.rc), got.http_status, got.body ? got.body : "(none)",
                     want->http_status, want->body);
        free(got.body);
        if (used <= i)
            break; /* this run hit no fault: the sweep is complete */
    }
    assert_true(i > 3 && i < 5000);
}

#endif
