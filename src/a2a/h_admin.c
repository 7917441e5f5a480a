/*
 * h_admin.c -- the operator methods (once/admin/replicas ...), and the
 * rule and the audit trail they share.
 *
 * Unlike the test-only admin rows (--test-admin), these exist in every
 * configuration, behind one rule: the caller's principal (from
 * --auth-tokens; "anonymous" without it) must be listed by
 * --admin-principals. Nobody is listed by default, so a server started
 * without the flag refuses them all (403 PERMISSION_DENIED) and an
 * unauthenticated server opens them only when told `--admin-principals
 * anonymous`. A caller without a valid token never gets here: the HTTP
 * layer answers 401 first.
 *
 * Every call, allowed or not, writes one "admin" log line with the caller,
 * the method, its params (compact JSON) and the outcome ("ok" or the
 * error's reason), so the log is the audit trail of what operators did.
 */
#include <string.h>

#include "a2a/a2a_int.h"
#include "core/log.h"
#include "once/once.h"

int once__a2a_admin_allowed(const once__a2a *a, const char *principal)
{
    const char *list = once__a2a_cfg(a)->admin_principals;
    size_t n = strlen(principal);
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t k = strcspn(p, ",");
        if (k == n && n > 0 && memcmp(p, principal, n) == 0)
            return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

int once__a2a_admin_refuse(a2a_call *c)
{
    once__a2a_fail(c, ONCE_RPC_INVALID_REQUEST, "PERMISSION_DENIED",
                   "%s is an operator method: principal %s is not in --admin-principals",
                   c->m->name, c->req->principal);
    once__a2a_meta(c, "method", c->m->name);
    c->http_status = 403;
    return ONCE_EINVAL;
}

void once__a2a_admin_audit(const a2a_call *c, int rc)
{
    once__logline l;
    if (!once__log_begin(&l, ONCE_LOG_INFO, "admin"))
        return;
    once__log_str(&l, "principal", c->req->principal);
    once__log_str(&l, "method", c->m->name);
    char *params = c->params ? json_dumps(c->params, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (params != NULL)
        once__log_text(&l, "params", params, strlen(params));
    once_free(params);
    once__log_str(&l, "outcome", rc == ONCE_OK ? "ok" : c->reason ? c->reason : "error");
    once__log_end(&l);
}

/* {} -> {"replicas": [{id, version, startedAt, lastBeat, alive, stopped,
 * leases}], "aliveAfterMs": N}: every replica's heartbeat row (store.h),
 * alive as engine.h defines it. */
int once__a2a_h_admin_replicas(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    json_t *rows = NULL;
    int rc = b->replicas != NULL ? b->replicas(b->ctx, &rows) : ONCE_OK;
    if (rc != ONCE_OK)
        return once__a2a_fail_engine(c, rc);
    if (rows == NULL && (rows = json_object()) == NULL)
        return ONCE_ENOMEM;
    c->result = rows;
    return ONCE_OK;
}

/* {} -> {"expired": [{principal, taskId, state, leaseOwner, fence,
 * leaseUntil, expiredForMs}], "now"}: leases that ran out and were not
 * taken over yet (stuck: the sweeps are held, the queues full, or no
 * replica sweeps). */
int once__a2a_h_admin_leases(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    if (b->leases == NULL)
        return once__a2a_fail(c, ONCE_RPC_UNSUPPORTED_OPERATION, "UNSUPPORTED_OPERATION",
                              "this server keeps no leases");
    json_t *out = NULL;
    int rc = b->leases(b->ctx, &out);
    if (rc != ONCE_OK)
        return once__a2a_fail_engine(c, rc);
    c->result = out;
    return ONCE_OK;
}

/* A string member of the params, required: NULL after answering -32602. */
static const char *need_str(a2a_call *c, const char *name)
{
    const char *v = json_string_value(json_object_get(c->params, name));
    if (v == NULL || v[0] == '\0') {
        a2a_verr e;
        once__a2a_verr(&e, name, "%s is required (a string)", name);
        once__a2a_fail_params(c, &e);
    }
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* {"principal": P, "id": ID} -> {principal, taskId, fence}:
 * this replica takes the task over now (fence + 1: its holder's next
 * write is refused and its turn stops) and runs its turn. */
int once__a2a_h_admin_release(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    if (b->release == NULL)
        return once__a2a_fail(c, ONCE_RPC_UNSUPPORTED_OPERATION, "UNSUPPORTED_OPERATION",
                              "this server keeps no leases");
    const char *principal = need_str(c, "principal"), *id = principal ? need_str(c, "id") : NULL;
    if (principal == NULL || id == NULL)
        return ONCE_EINVAL;
    int64_t fence = 0;
    int rc = b->release(b->ctx, principal, id, &fence);
    if (rc == ONCE_ENOTFOUND)
        return once__a2a_fail(c, ONCE_RPC_TASK_NOT_FOUND, "TASK_NOT_FOUND",
                              "no live task %s of %s", id, principal);
    if (rc == ONCE_ECONFLICT)
        return once__a2a_fail(c, ONCE_RPC_TASK_NOT_CANCELABLE, "NOT_LEASED",
                              "task %s holds no lease (finished, or waiting for input)", id);
    if (rc != ONCE_OK)
        return once__a2a_fail_engine(c, rc);
    c->result = json_pack("{s:s, s:s, s:I}", "principal", principal, "taskId", id, "fence",
                          (json_int_t)fence);
    return c->result != NULL ? ONCE_OK : ONCE_ENOMEM;
}

#define CANCEL_MAX 10000   /* tasks one call looks at */

/* {"principal": P, "contextId"?, "status"?, "dryRun"?} -> {"matched": N,
 * "canceled": [ids], "failed": [{id, reason}], "more": bool}: every task of
 * P that ListTasks's filter selects (the first CANCEL_MAX), canceled one by
 * one as CancelTask would (a finished one is left as it is). */
int once__a2a_h_admin_cancel(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    const char *principal = need_str(c, "principal");
    if (principal == NULL)
        return ONCE_EINVAL;
    once_list_req lr;
    memset(&lr, 0, sizeof lr);
    lr.principal = principal;
    lr.page_size = 100;
    lr.context_id = json_string_value(json_object_get(c->params, "contextId"));
    a2a_verr e;
    if (once__a2a_parse_status(json_object_get(c->params, "status"), &lr.state) != ONCE_OK) {
        once__a2a_verr(&e, "status", "status must be a TASK_STATE_* name");
        return once__a2a_fail_params(c, &e);
    }
    int dry = json_is_true(json_object_get(c->params, "dryRun"));
    json_t *ids = json_array(), *canceled = json_array(), *failed = json_array();
    int rc = ids && canceled && failed ? ONCE_OK : ONCE_ENOMEM;
    char next[256] = "", token[256] = "";
    int more = 0;
    do {
        json_t *tasks = NULL;
        lr.page_token = token[0] ? token : NULL;
        if (rc == ONCE_OK)
            rc = b->list(b->ctx, &lr, &tasks, next);
        size_t i;
        json_t *t;
        json_array_foreach(tasks, i, t) {
            if (json_array_size(ids) >= CANCEL_MAX) {
                more = 1;
                break;
            }
            json_t *id = json_object_get(t, "id");
            if (json_is_string(id) && json_array_append(ids, id) != 0)
                rc = ONCE_ENOMEM;
        }
        json_decref(tasks);
        snprintf(token, sizeof token, "%s", next);
    } while (rc == ONCE_OK && !more && token[0] != '\0');
    for (size_t i = 0; rc == ONCE_OK && !dry && i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        json_t *task = NULL;
        once_state st = ONCE_STATE_UNKNOWN;
        int64_t exp = 0;
        int crc = b->cancel(b->ctx, principal, id, &task, &st, &exp);
        json_decref(task);
        if (crc == ONCE_OK)
            json_array_append_new(canceled, json_string(id));
        else
            json_array_append_new(failed, json_pack("{s:s, s:s}", "id", id, "reason",
                                                    once_strerror(crc)));
    }
    if (rc == ONCE_OK)
        c->result = json_pack("{s:I, s:O, s:O, s:b, s:b}", "matched",
                              (json_int_t)json_array_size(ids), "canceled",
                              dry ? ids : canceled, "failed", failed, "more", more, "dryRun",
                              dry);
    json_decref(ids);
    json_decref(canceled);
    json_decref(failed);
    if (rc != ONCE_OK)
        return once__a2a_fail_engine(c, rc);
    return c->result != NULL ? ONCE_OK : ONCE_ENOMEM;
}

int once__a2a_is_admin(const once__a2a *a, const char *principal)
{
    return once__a2a_admin_allowed(a, principal);
}
