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
static once_a2a *fake_codec(fake *f, int test_admin, once_offset_clock *clock)
{
    once_a2a_config cfg;
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
    once_a2a *a = NULL;
    if (once_a2a_new(&cfg, &a) != ONCE_OK)
        return NULL;
    return a;
}

/* POST body with the given headers; returns the parsed response document
 * (caller decrefs) and fills *resp (caller clears). */
FAKE_UNUSED static json_t *fake_call(once_a2a *a, const char *version, const char *extensions,
                         const char *body, once_a2a_response *resp)
{
    once_a2a_request req = {.principal = "alice", .version = version, .extensions = extensions,
                            .body = body, .len = strlen(body)};
    if (once_a2a_handle(a, &req, resp) != ONCE_OK)
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

#endif
