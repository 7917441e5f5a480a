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
