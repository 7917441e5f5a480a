/*
 * admin.c -- `once admin ...`: one JSON-RPC call of an operator method
 * (h_admin.c on the server) and the tables it prints. An operator's call
 * is made once: a refusal or a lost answer is reported, never retried, so
 * that a release or a bulk cancel is never sent twice behind their back.
 */
#include <string.h>

#include "client/admin.h"
#include "client/client_int.h"
#include "client/show.h"
#include "core/jcs.h"

/* What the answer says, once the HTTP exchange worked. */
static int judge(once_client *c, const char *agent, const char *method, long status, json_t *doc,
                 json_t **result)
{
    json_t *err = json_object_get(doc, "error");
    const char *msg = json_string_value(json_object_get(err, "message"));
    json_int_t code = json_integer_value(json_object_get(err, "code"));
    if (status == 401 || status == 403) {
        once__client_seterr(c, "%s refused %s (HTTP %ld): %s", agent, method, status,
                            msg ? msg : "give --token or $ONCE_TOKEN");
        return ONCE_EINVAL;
    }
    if (err != NULL && code == -32601) {
        once__client_seterr(c, "%s has no %s (an older onced?)", agent, method);
        return ONCE_EUNSUPPORTED;
    }
    if (err != NULL || !json_is_object(json_object_get(doc, "result"))) {
        once__client_seterr(c, "%s answered %s with HTTP %ld%s%s", agent, method, status,
                            msg ? ": " : "", msg ? msg : "");
        return ONCE_EIO;
    }
    *result = json_incref(json_object_get(doc, "result"));
    return ONCE_OK;
}

int once__client_admin(once_client *c, const char *agent, const char *method, json_t *params,
                       json_t **result)
{
    char why[256];
    *result = NULL;
    if (once__agent_url_check(agent, why, sizeof why) != ONCE_OK) {
        once__client_seterr(c, "%s", why);
        return ONCE_EINVAL;
    }
    json_t *call = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 1, "method", method,
                             "params", params ? json_incref(params) : json_object());
    char *body = call ? json_dumps(call, JSON_COMPACT) : NULL;
    json_decref(call);
    if (body == NULL)
        return ONCE_ENOMEM;
    once__http_req q = once__client_get(c, agent, c->retry.attempt_timeout_ms);
    q.method = "POST";
    q.body = body;
    q.len = strlen(body);
    once__http_resp r;
    int rc = once__http_do(&q, &r);
    once_free(body);
    json_t *doc = NULL;
    if (rc == ONCE_OK && r.body != NULL)
        (void)once__json_loads(r.body, 0, &doc, NULL);
    if (rc == ONCE_ENOMEM) {
        /* nothing to say beyond the code */
    } else if (rc != ONCE_OK) {
        once__client_seterr(c, "%s: %s", agent, r.error[0] ? r.error : "no answer");
        rc = ONCE_EIO;
    } else {
        rc = judge(c, agent, method, r.status, doc, result);
    }
    json_decref(doc);
    once__http_resp_clear(&r);
    return rc;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

static int print_replicas(FILE *f, const json_t *result)
{
    const json_t *rows = json_object_get(result, "replicas");
    if (!json_is_array(rows))
        return ONCE_EPARSE;
    fprintf(f, "%-32s %-12s %-24s %-24s %-7s %s\n", "ID", "VERSION", "STARTED", "LAST BEAT",
            "ALIVE", "LEASES");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *alive = json_is_true(json_object_get(row, "alive"))     ? "yes"
                            : json_is_true(json_object_get(row, "stopped")) ? "stopped"
                                                                            : "no";
        char id[256], version[128];
        fprintf(f, "%-32s %-12s %-24s %-24s %-7s %lld\n",
                once__showbuf(str(row, "id"), id, sizeof id),
                once__showbuf(str(row, "version"), version, sizeof version),
                str(row, "startedAt"), str(row, "lastBeat"), alive,
                (long long)json_integer_value(json_object_get(row, "leases")));
    }
    return ONCE_OK;
}

static int print_leases(FILE *f, const json_t *result)
{
    const json_t *rows = json_object_get(result, "expired");
    if (!json_is_array(rows))
        return ONCE_EPARSE;
    if (json_array_size(rows) == 0) {
        fprintf(f, "no expired lease waits for a takeover\n");
        return ONCE_OK;
    }
    fprintf(f, "%-20s %-38s %-22s %-20s %-6s %s\n", "PRINCIPAL", "TASK", "STATE", "OWNER",
            "FENCE", "EXPIRED FOR");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        char p[256], t[256], w[256];
        fprintf(f, "%-20s %-38s %-22s %-20s %-6lld %.1f s\n",
                once__showbuf(str(row, "principal"), p, sizeof p),
                once__showbuf(str(row, "taskId"), t, sizeof t), str(row, "state"),
                once__showbuf(str(row, "leaseOwner"), w, sizeof w),
                (long long)json_integer_value(json_object_get(row, "fence")),
                (double)json_integer_value(json_object_get(row, "expiredForMs")) / 1000.0);
    }
    return ONCE_OK;
}

static int print_cancel(FILE *f, const json_t *result)
{
    const json_t *done = json_object_get(result, "canceled"), *failed = json_object_get(result, "failed");
    if (!json_is_array(done) || !json_is_array(failed))
        return ONCE_EPARSE;
    int dry = json_is_true(json_object_get(result, "dryRun"));
    size_t i;
    const json_t *v;
    char b[256];
    json_array_foreach(done, i, v)
        fprintf(f, "%s %s\n", dry ? "would cancel" : "canceled",
                once__showbuf(json_string_value(v) ? json_string_value(v) : "-", b, sizeof b));
    json_array_foreach(failed, i, v)
        fprintf(f, "not canceled %s: %s\n", once__showbuf(str(v, "id"), b, sizeof b),
                str(v, "reason"));
    fprintf(f, "%lld matched, %zu %s, %zu not%s\n",
            (long long)json_integer_value(json_object_get(result, "matched")),
            json_array_size(done), dry ? "would be canceled (dry run)" : "canceled",
            json_array_size(failed),
            json_is_true(json_object_get(result, "more")) ? "; more match: run it again" : "");
    return ONCE_OK;
}

int once__admin_print(FILE *f, const char *what, const json_t *result)
{
    if (strcmp(what, "replicas") == 0)
        return print_replicas(f, result);
    if (strcmp(what, "leases") == 0)
        return print_leases(f, result);
    if (strcmp(what, "cancel") == 0)
        return print_cancel(f, result);
    char p[256], t[256];
    if (!json_is_integer(json_object_get(result, "fence")))
        return ONCE_EPARSE;
    fprintf(f, "task %s of %s taken over by the agent with fence %lld\n",
            once__showbuf(str(result, "taskId"), t, sizeof t),
            once__showbuf(str(result, "principal"), p, sizeof p),
            (long long)json_integer_value(json_object_get(result, "fence")));
    return ONCE_OK;
}
