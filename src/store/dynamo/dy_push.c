/*
 * dy_push.c -- push delivery rows on DynamoDB (ONCE_STORE_PUSH). A task's
 * rows (at most ONCE_PUSH_CONFIGS_MAX) live inside its record item, as the
 * JSON array "pw", so that a record write and the row changes it implies
 * are the same single-item write (dynamo.c, "the commit rule").
 *
 * Claims and acks change the rows without touching the record: they are
 * conditional writes on the push version "pv", which every row change bumps
 * and every record write (dy_write.c) also requires unchanged -- a record
 * write that finds the rows moved under it re-reads and writes again, so
 * neither side ever overwrites the other's rows.
 *
 * A third sparse index, "push", finds due rows without a scan: pq = "P"
 * and pt = the earliest time one of the task's rows can be due (20 digits)
 * followed by the task's key, present while a row is enabled and behind
 * its target. A claim reads candidates from it, re-reads each item and
 * leases under the pv condition, so of racing claimers exactly one wins a
 * row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

/* Candidates read per claim, per row wanted (losers of a race move on). */
#define CLAIM_SPREAD 8
#define CLAIM_CANDIDATES_MAX 200

static json_t *row_json(const once_push_row *r)
{
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:b, s:s, s:I, s:I, s:I}", "id", r->config_id,
        "since", (json_int_t)r->since, "dl", (json_int_t)r->delivered, "tg", (json_int_t)r->target,
        "at", (json_int_t)r->attempts, "na", (json_int_t)r->next_attempt_at, "lo", r->lease_owner,
        "lu", (json_int_t)r->lease_until, "dis", r->disabled, "err", r->last_error, "dv",
        (json_int_t)r->deliveries, "rt", (json_int_t)r->retries, "fl", (json_int_t)r->failures);
}

static int64_t num(json_t *o, const char *k)
{
    return (int64_t)json_integer_value(json_object_get(o, k));
}

static int copy_str(json_t *o, const char *k, char *dst, size_t cap)
{
    const char *v = json_string_value(json_object_get(o, k));
    size_t n = v ? strlen(v) : 0;

    if (!v || n >= cap)
        return -1;
    memcpy(dst, v, n + 1);
    return 0;
}

int once__dy_rows_decode(json_t *item, once_push_row *rows, size_t *n)
{
    const char *text = once__dy_get_s(item, "pw");
    json_t *a, *o;
    size_t i;

    *n = 0;
    if (!text)
        return ONCE_OK;
    a = json_loads(text, 0, NULL);
    if (!json_is_array(a) || json_array_size(a) > ONCE_PUSH_CONFIGS_MAX) {
        json_decref(a);
        return ONCE_ECORRUPT;
    }
    json_array_foreach(a, i, o)
    {
        once_push_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        if (copy_str(o, "id", r->config_id, sizeof r->config_id) ||
            copy_str(o, "lo", r->lease_owner, sizeof r->lease_owner) ||
            copy_str(o, "err", r->last_error, sizeof r->last_error)) {
            json_decref(a);
            return ONCE_ECORRUPT;
        }
        r->since = num(o, "since");
        r->delivered = num(o, "dl");
        r->target = num(o, "tg");
        r->attempts = num(o, "at");
        r->next_attempt_at = num(o, "na");
        r->lease_until = num(o, "lu");
        r->disabled = json_is_true(json_object_get(o, "dis"));
        r->deliveries = num(o, "dv");
        r->retries = num(o, "rt");
        r->failures = num(o, "fl");
    }
    *n = json_array_size(a);
    json_decref(a);
    return ONCE_OK;
}

/* The push index's sort key for rows of task pk, or 0 when no row can
 * become due (nothing to index). */
static int due_key(const once_push_row *rows, size_t n, const char *pk, char *out, size_t cap)
{
    int64_t first = -1;
    size_t i;

    for (i = 0; i < n; i++) {
        const once_push_row *r = &rows[i];
        int64_t at = r->next_attempt_at > r->lease_until ? r->next_attempt_at : r->lease_until;
        if (r->disabled || r->delivered >= r->target)
            continue;
        if (first < 0 || at < first)
            first = at;
    }
    if (first < 0)
        return 0;
    snprintf(out, cap, "%020lld%s", (long long)first, pk);
    return 1;
}

/* rows as the "pw" text (NULL when n == 0: no attribute). */
static char *rows_text(const once_push_row *rows, size_t n, int *oom)
{
    json_t *a;
    char *text;
    size_t i;

    if (n == 0)
        return NULL;
    a = json_array();
    for (i = 0; a && i < n; i++) {
        if (json_array_append_new(a, row_json(&rows[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text)
        *oom = 1;
    return text;
}

void once__dy_put_rows(dy_item *it, const char *pk, const once_push_row *rows, size_t n, int64_t pv)
{
    char key[DY_TABLE_MAX + ONCE_PRINCIPAL_MAX + ONCE_ID_MAX + 48];
    char *text = rows_text(rows, n, &it->oom);

    once__dy_put_n(it, "pv", pv);
    once__dy_put_s(it, "pw", text);
    once_free(text);
    if (due_key(rows, n, pk, key, sizeof key)) {
        once__dy_put_s(it, "pq", "P");
        once__dy_put_s(it, "pt", key);
    }
}

/* The rows a record change leaves (create: old == NULL): synced with
 * rec->push_json and aimed at rec->generation. */
int once__dy_sync_rows(const once_record *rec, const once_push_row *old, size_t nold,
                       once_push_row *out, size_t *n)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    int rc = once__push_elems(rec->push_json, el, n);

    if (rc == ONCE_OK)
        (void)once__push_sync(old, nold, el, *n, rec->generation, out);
    return rc;
}

/* Write rows[0..n) of the task whose item was read with push version pv
 * (and record version v), if neither moved: UpdateItem of the row
 * attributes only. ONCE_ECONFLICT when they moved. */
static int put_rows_if(dy_store *s, const char *principal, const char *task_id, int64_t v,
                       int64_t pv, const once_push_row *rows, size_t n)
{
    char key[DY_TABLE_MAX + ONCE_PRINCIPAL_MAX + ONCE_ID_MAX + 48];
    char *pk = once__dy_task_pk(principal, task_id);
    int oom = 0, due;
    char *text = rows_text(rows, n, &oom);
    dy_item k;
    json_t *req = NULL, *vals;
    int rc = ONCE_ENOMEM;

    if (!pk || oom || !text || once__dy_key(&k, principal, task_id, NULL) != ONCE_OK)
        goto out;
    due = due_key(rows, n, pk, key, sizeof key);
    vals = json_pack("{s:o, s:o, s:o, s:o}", ":v", once__dy_n(v), ":pv", once__dy_n(pv), ":pv1",
                     once__dy_n(pv + 1), ":pw", once__dy_s(text));
    if (vals && due &&
        (json_object_set_new(vals, ":pq", once__dy_s("P")) != 0 ||
         json_object_set_new(vals, ":pt", once__dy_s(key)) != 0)) {
        json_decref(vals);
        vals = NULL;
    }
    req = vals ? json_pack("{s:s, s:O, s:s, s:s, s:o}", "TableName", s->table, "Key", k.o,
                           "UpdateExpression",
                           due ? "SET #pw = :pw, #pv = :pv1, #pq = :pq, #pt = :pt"
                               : "SET #pw = :pw, #pv = :pv1 REMOVE #pq, #pt",
                           "ConditionExpression",
                           "#v = :v AND #pv = :pv AND attribute_not_exists(#tb)",
                           "ExpressionAttributeValues", vals)
               : NULL;
    once__dy_item_free(&k);
    if (req)
        rc = once__dy_call(s, "UpdateItem", req, DY_CONDITIONAL, NULL, NULL);
out:
    json_decref(req);
    once_free(text);
    once_free(pk);
    return rc;
}

/* The task's live record item: its versions and rows. ONCE_ENOTFOUND when
 * the key holds no record. */
typedef struct task_rows {
    int64_t v, pv, generation;
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    size_t n;
} task_rows;

static int read_rows(dy_store *s, const char *principal, const char *task_id, task_rows *t)
{
    json_t *item;
    int rc = once__dy_get_task(s, principal, task_id, &item);

    memset(t, 0, sizeof *t);
    if (rc != ONCE_OK)
        return rc;
    if (!item || once__dy_get_n(item, "tb")) {
        json_decref(item);
        return ONCE_ENOTFOUND;
    }
    t->v = once__dy_get_n(item, "v");
    t->pv = once__dy_get_n(item, "pv");
    t->generation = once__dy_get_n(item, "g");
    rc = once__dy_rows_decode(item, t->rows, &t->n);
    json_decref(item);
    return rc;
}

/* Order of due rows within a task: oldest next attempt first. */
static int by_next(const void *a, const void *b)
{
    const once_push_row *x = *(once_push_row *const *)a, *y = *(once_push_row *const *)b;

    if (x->next_attempt_at != y->next_attempt_at)
        return x->next_attempt_at < y->next_attempt_at ? -1 : 1;
    return strcmp(x->config_id, y->config_id);
}

typedef struct claim_ctx {
    const char *owner;
    int64_t now, lease_ms;
    size_t max;
    once_push_claim_list *out;
} claim_ctx;

/* Lease the due rows of one candidate task, as many as the caller still
 * wants. A lost race (the rows moved) leaves the task to its winner. */
static int claim_task(dy_store *s, json_t *cand, void *arg)
{
    claim_ctx *c = arg;
    const char *pr = once__dy_get_s(cand, "pr"), *id = once__dy_get_s(cand, "id");
    once_push_row *due[ONCE_PUSH_CONFIGS_MAX];
    size_t nd = 0, i, take;
    task_rows t;
    int rc;

    if (c->out->n >= c->max)
        return DY_STOP;
    if (!pr || !id)
        return ONCE_OK;
    rc = read_rows(s, pr, id, &t);
    if (rc == ONCE_ENOTFOUND)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    for (i = 0; i < t.n; i++)
        if (once__push_due(&t.rows[i], c->now))
            due[nd++] = &t.rows[i];
    if (nd == 0)
        return ONCE_OK; /* the index lagged, or another claimer won */
    qsort(due, nd, sizeof *due, by_next);
    take = c->max - c->out->n < nd ? c->max - c->out->n : nd;
    for (i = 0; i < take; i++) {
        once__strlcpy(due[i]->lease_owner, c->owner, sizeof due[i]->lease_owner);
        due[i]->lease_until = c->now + c->lease_ms;
    }
    rc = put_rows_if(s, pr, id, t.v, t.pv, t.rows, t.n);
    if (rc == ONCE_ECONFLICT)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    for (i = 0; i < take; i++) {
        once_push_claim *g = &c->out->v[c->out->n++];
        memset(g, 0, sizeof *g);
        once__strlcpy(g->principal, pr, sizeof g->principal);
        once__strlcpy(g->task_id, id, sizeof g->task_id);
        memcpy(g->config_id, due[i]->config_id, sizeof g->config_id);
        g->generation = due[i]->delivered + 1;
        g->target = due[i]->target;
        g->attempts = due[i]->attempts;
        g->lease_until = due[i]->lease_until;
    }
    return c->out->n >= c->max ? DY_STOP : ONCE_OK;
}

int once__dy_push_claim(once_store *base, const char *owner, int64_t now, int64_t lease_ms,
                        size_t max, once_push_claim_list *out)
{
    dy_store *s = dys(base);
    claim_ctx c = {owner, now, lease_ms, max, out};
    char bound[24];
    size_t want;
    int rc;

    if (once__store_claim_begin(base, owner, now, lease_ms, max, out, &rc))
        return rc;
    out->v = once_calloc(max, sizeof *out->v);
    if (!out->v)
        return ONCE_ENOMEM;
    /* Every key due at now sorts below the next millisecond's digits. */
    snprintf(bound, sizeof bound, "%020lld", (long long)(now + 1));
    want = max > CLAIM_CANDIDATES_MAX / CLAIM_SPREAD ? CLAIM_CANDIDATES_MAX : max * CLAIM_SPREAD;
    DY_RETURN_LIST(out,
                   once__dy_each(s, "Query",
                                 once__dy_query_req(s, DY_IDX_PUSH, "#pq = :q AND #pt < :b", NULL,
                                                    json_pack("{s:o, s:o}", ":q", once__dy_s("P"),
                                                              ":b", once__dy_s(bound)),
                                                    want, 0),
                                 1, claim_task, &c));
}

int once__dy_push_ack(once_store *base, const once_push_ack *ack)
{
    dy_store *s = dys(base);
    int rc = ONCE_OK, round;
    for (round = 0; round < DY_ROUNDS; round++) {
        task_rows t;
        size_t i;

        rc = read_rows(s, ack->principal, ack->task_id, &t);
        if (rc != ONCE_OK)
            return rc;
        for (i = 0; i < t.n && strcmp(t.rows[i].config_id, ack->config_id) != 0; i++)
            ;
        if (i == t.n)
            return ONCE_ENOTFOUND;
        rc = once__push_apply_ack(&t.rows[i], ack);
        if (rc != ONCE_OK)
            return rc;
        rc = put_rows_if(s, ack->principal, ack->task_id, t.v, t.pv, t.rows, t.n);
        if (rc != ONCE_ECONFLICT)
            return rc;
        /* The record or another row moved: read again and re-decide. */
    }
    once__store_seterr(base, "push_ack %s: the rows kept moving", ack->task_id);
    return ONCE_EBUSY;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const once_push_row *)a)->config_id, ((const once_push_row *)b)->config_id);
}

int once__dy_push_rows(once_store *base, const char *principal, const char *task_id,
                       once_push_row_list *out)
{
    task_rows t;
    int rc = ONCE_OK;
    rc = read_rows(dys(base), principal, task_id, &t);
    if (rc == ONCE_ENOTFOUND || (rc == ONCE_OK && t.n == 0))
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    out->v = once_calloc(t.n, sizeof *out->v);
    if (!out->v)
        return ONCE_ENOMEM;
    memcpy(out->v, t.rows, t.n * sizeof *out->v);
    out->n = t.n;
    qsort(out->v, out->n, sizeof *out->v, by_id);
    return ONCE_OK;
}
