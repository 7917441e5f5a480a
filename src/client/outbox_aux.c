/*
 * outbox_aux.c -- the outbox's secondary tables and read paths: listing
 * and pruning intents, the per-agent mode cache (does its card declare the
 * idempotency extension?) and the per-agent retry budget.
 *
 * The budget row is read, updated and written in one IMMEDIATE transaction,
 * so separate `once` processes sharing the outbox draw from one bucket:
 * that is what keeps retries near the ratio under a sustained outage even
 * when every send is its own process.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc_int.h"
#include "client/client_int.h"
#include "client/outbox_int.h"

int once__outbox_list(once__outbox *o, once_intent_state st, once_intent_fn fn, void *ctx)
{
    char sql[320];
    snprintf(sql, sizeof sql, "SELECT %s FROM intents WHERE (?1 IS NULL OR state=?1) ORDER BY seq",
             once__ob_columns);
    sqlite3_stmt *q;
    int rc = once__ob_prepare(o, &q, sql, "s", st ? once_intent_state_name(st) : NULL);
    if (rc != ONCE_OK)
        return rc;
    int src;
    while ((src = sqlite3_step(q)) == SQLITE_ROW) {
        once_intent it;
        once__ob_row_view(q, &it);
        if (fn(ctx, &it) != 0)
            break;
    }
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        rc = once__ob_fail(o, src, "list");
    sqlite3_finalize(q);
    return rc;
}

int once__outbox_seqs(once__outbox *o, once_intent_state st, int64_t **seqs, size_t *n)
{
    *seqs = NULL;
    *n = 0;
    sqlite3_stmt *q;
    int rc = once__ob_prepare(o, &q, "SELECT seq FROM intents WHERE state=? ORDER BY seq", "s",
                              once_intent_state_name(st));
    if (rc != ONCE_OK)
        return rc;
    size_t cap = 0;
    int src;
    while ((src = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap && (rc = once__grow(seqs, &cap, sizeof **seqs, 16)) != ONCE_OK)
            break;
        (*seqs)[(*n)++] = sqlite3_column_int64(q, 0);
    }
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__ob_fail(o, src, "list");
    sqlite3_finalize(q);
    if (rc != ONCE_OK) {
        once_free(*seqs);
        *seqs = NULL;
        *n = 0;
    }
    return rc;
}

int once__outbox_prune(once__outbox *o, int64_t cutoff_ms, unsigned *removed)
{
    *removed = 0;
    int rc = once__ob_run(o,
                          "DELETE FROM intents WHERE state IN ('final','refused','abandoned')"
                          " AND finished_ms IS NOT NULL AND finished_ms < ?",
                          "i", cutoff_ms);
    if (rc == ONCE_OK)
        *removed = (unsigned)sqlite3_changes(o->db);
    return rc;
}

int once__outbox_agent_of(once__outbox *o, const char *task_id, char *out, size_t outlen)
{
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q, "SELECT agent FROM intents WHERE task_id=? ORDER BY seq DESC LIMIT 1",
                          "s", task_id);
    if (rc == ONCE_OK) {
        const char *a = (const char *)sqlite3_column_text(q, 0);
        if ((size_t)snprintf(out, outlen, "%s", a ? a : "") >= outlen)
            rc = ONCE_ERANGE;
    }
    sqlite3_finalize(q);
    return rc;
}

int once__outbox_mode_get(once__outbox *o, const char *agent, int64_t min_checked_ms, int *ext,
                          int *v03)
{
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q, "SELECT ext, a2a FROM agents WHERE agent=? AND checked_ms>=?",
                          "si", agent, min_checked_ms);
    if (rc == ONCE_OK) {
        const char *a2a = (const char *)sqlite3_column_text(q, 1);
        *ext = sqlite3_column_int(q, 0) != 0;
        *v03 = a2a != NULL && strcmp(a2a, "0.3") == 0;
    }
    sqlite3_finalize(q);
    return rc;
}

int once__outbox_mode_put(once__outbox *o, const char *agent, int ext, int v03,
                          const char *interfaces, int64_t now)
{
    return once__ob_run(o,
                        "INSERT OR REPLACE INTO agents(agent,ext,checked_ms,a2a,interfaces)"
                        " VALUES(?,?,?,?,?)",
                        "siiss", agent, (int64_t)(ext != 0), now, v03 ? "0.3" : "1.0", interfaces);
}

int once__outbox_interfaces_get(once__outbox *o, const char *agent, int64_t min_checked_ms,
                                char **interfaces)
{
    *interfaces = NULL;
    sqlite3_stmt *q;
    int rc = once__ob_one(o, &q, "SELECT interfaces FROM agents WHERE agent=? AND checked_ms>=?",
                          "si", agent, min_checked_ms);
    if (rc == ONCE_OK) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        if (t != NULL && (*interfaces = once_strdup(t)) == NULL)
            rc = ONCE_ENOMEM;
    }
    sqlite3_finalize(q);
    return rc;
}

int once__outbox_budget(once__outbox *o, const char *agent, int op, const once_retry_policy *p,
                        int64_t now, int *allowed, double *tokens_after)
{
    int rc = once__ob_begin(o);
    if (rc != ONCE_OK)
        return rc;
    once__bucket b;
    once__bucket_init(&b, p, now);
    sqlite3_stmt *q;
    rc = once__ob_prepare(o, &q, "SELECT tokens, updated_ms FROM budget WHERE agent=?", "s", agent);
    if (rc == ONCE_OK) {
        int src = sqlite3_step(q);
        if (src == SQLITE_ROW) {
            b.tokens = sqlite3_column_double(q, 0);
            b.updated_ms = sqlite3_column_int64(q, 1);
        } else if (src != SQLITE_DONE) {
            rc = once__ob_fail(o, src, "budget");
        }
        sqlite3_finalize(q);
    }
    int ok = 1;
    if (op == 0)
        once__bucket_deposit(&b, p, now);
    else
        ok = once__bucket_take(&b, p, now);
    if (rc == ONCE_OK)
        rc = once__ob_run(o, "INSERT OR REPLACE INTO budget(agent,tokens,updated_ms) VALUES(?,?,?)",
                          "sdi", agent, b.tokens, b.updated_ms);
    rc = once__ob_end(o, rc);
    if (allowed != NULL)
        *allowed = rc == ONCE_OK && ok;
    if (tokens_after != NULL)
        *tokens_after = b.tokens;
    return rc;
}
