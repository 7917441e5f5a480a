/*
 * sqlite_push.c -- push delivery rows in the sqlite backend (store.h, "Push
 * delivery"): the push_deliveries table kept in step with tasks.push_json,
 * the claim, the fenced ack, and the rows read for status.
 *
 * What a change means is decided by push_rows.c (once__push_sync,
 * once__push_apply_ack); this file only reads rows, hands them to those
 * functions and writes back the result. Every write runs as (part of) a
 * group-commit op on the writer connection, so a record change and its row
 * changes commit together, and a claim's SELECT and UPDATEs run under one
 * write lock: two processes can never lease the same row.
 *
 * An idle claim (nothing due) is answered from a reader connection without
 * queueing a write, so polling deliverers never take the write lock.
 */
#include <string.h>

#include "core/alloc_int.h"
#include "store/sqlite_int.h"
#include "store/store_int.h"

#define PUSH_NCOLS 13 /* SQ_PUSH_COLS */

/* Decode SQ_PUSH_COLS starting at column c. */
static int row_decode(sqlite3_stmt *st, int c, once_push_row *r)
{
    memset(r, 0, sizeof *r);
    int rc = once__sq_text(r->config_id, sizeof r->config_id, st, c);
    if (rc == ONCE_OK)
        rc = once__sq_text(r->lease_owner, sizeof r->lease_owner, st, c + 6);
    if (rc == ONCE_OK)
        rc = once__sq_text(r->last_error, sizeof r->last_error, st, c + 9);
    if (rc != ONCE_OK)
        return rc;
    for (int k = 0; k < ONCE__PUSH_ROW_NINT; k++) {
        const once__int_field *f = &once__push_row_ints[k];
        once__field_set(r, f, sqlite3_column_int64(st, c + f->col));
    }
    return ONCE_OK;
}

static int bind_key3(sqlite3_stmt *st, const char *principal, const char *task_id,
                     const char *config_id)
{
    int rc = once__sq_bind(st, 1, "ss", principal, task_id);
    if (rc == SQLITE_OK && config_id)
        rc = once__sq_bind_text(st, 3, config_id);
    return rc;
}

/* One step of a read: 1 with a row to decode; 0 when the rows are done,
 * or on a failure, which goes to *rc. */
static int next_row(sqlite3_stmt *st, int *rc)
{
    int step = once__sq_step(st);
    if (step == SQLITE_ROW)
        return 1;
    if (step != SQLITE_DONE)
        *rc = once__db_err(step);
    return 0;
}

/* The end of a read: its first failure -- the decoding's rc, then the
 * bind's src -- else the reset's. */
static int end_read(sqlite3_stmt *st, int rc, int src)
{
    if (src != SQLITE_OK && rc == ONCE_OK)
        rc = once__db_err(src);
    int rrc = once__sq_reset(st);
    return rc == ONCE_OK && rrc != SQLITE_OK ? once__db_err(rrc) : rc;
}

static int put_row(sq_conn *w, const char *principal, const char *task_id, const once_push_row *r)
{
    sqlite3_stmt *st;
    int rc = once__sq_stmt(w, SQ_PUSH_PUT, &st);
    if (rc != ONCE_OK)
        return rc;
    const int64_t nums[] = {r->since, r->delivered, r->target, r->attempts, r->next_attempt_at};
    const int64_t tail[] = {r->deliveries, r->retries, r->failures};
    int src = bind_key3(st, principal, task_id, r->config_id);
    for (int i = 0; src == SQLITE_OK && i < 5; i++)
        src = once__sq_bind_int64(st, 4 + i, nums[i]);
    if (src == SQLITE_OK)
        src = once__sq_bind(st, 9, "siis", r->lease_owner, r->lease_until,
                            (int64_t)(r->disabled ? 1 : 0), r->last_error);
    for (int i = 0; src == SQLITE_OK && i < 3; i++)
        src = once__sq_bind_int64(st, 13 + i, tail[i]);
    return once__sq_finish(st, src);
}

/* The key's rows (SQ_PUSH_ROWS) into v[0..*n), at most cap of them. */
static int read_rows(sq_conn *c, const char *principal, const char *task_id, once_push_row *v,
                     size_t cap, size_t *n)
{
    sqlite3_stmt *st;
    *n = 0;
    int rc = once__sq_stmt(c, SQ_PUSH_ROWS, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = bind_key3(st, principal, task_id, NULL);
    while (rc == ONCE_OK && src == SQLITE_OK && next_row(st, &rc)) {
        if (*n == cap) {
            rc = ONCE_ECORRUPT; /* more rows than push_json may hold */
            break;
        }
        rc = row_decode(st, 0, &v[*n]);
        if (rc == ONCE_OK)
            (*n)++;
    }
    return end_read(st, rc, src);
}

int once__sq_push_drop(sq_conn *w, const char *principal, const char *task_id)
{
    sqlite3_stmt *st;
    int rc = once__sq_stmt(w, SQ_PUSH_DELETE_KEY, &st);
    return rc != ONCE_OK ? rc : once__sq_finish(st, bind_key3(st, principal, task_id, NULL));
}

int once__sq_push_sync(sq_conn *w, const once_record *rec)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    once_push_row old[ONCE_PUSH_CONFIGS_MAX], rows[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, nold = 0;

    int rc = once__push_elems(rec->push_json, el, &n);
    if (rc == ONCE_OK && n)
        rc = read_rows(w, rec->principal, rec->task_id, old, ONCE_PUSH_CONFIGS_MAX, &nold);
    if (rc == ONCE_OK)
        rc = once__sq_push_drop(w, rec->principal, rec->task_id);
    if (rc != ONCE_OK || n == 0)
        return rc;
    once__push_sync(old, nold, el, n, rec->generation, rows);
    for (size_t i = 0; rc == ONCE_OK && i < n; i++)
        rc = put_row(w, rec->principal, rec->task_id, &rows[i]);
    return rc;
}

/* ------------------------------------------------------------------------
 * Claim.
 */

/* Run SQ_PUSH_DUE on c: up to max due rows into out (claims without the
 * lease applied yet), or just "is there one" when out is NULL. */
static int due_rows(sq_conn *c, int64_t now, size_t max, once_push_claim_list *out, size_t *found)
{
    sqlite3_stmt *st;
    size_t cap = 0;
    *found = 0;
    int rc = once__sq_stmt(c, SQ_PUSH_DUE, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind_int64(st, 1, now);
    if (src == SQLITE_OK)
        src = once__sq_bind_int64(st, 2, max > INT64_MAX ? -1 : (int64_t)max);
    while (rc == ONCE_OK && src == SQLITE_OK && next_row(st, &rc)) {
        if (!out) {
            *found = 1;
            break;
        }
        if (out->n == cap && (rc = once__grow(&out->v, &cap, sizeof *out->v, 8)) != ONCE_OK)
            break;
        once_push_claim *k = &out->v[out->n];
        once_push_row r;
        memset(k, 0, sizeof *k);
        rc = once__sq_text(k->principal, sizeof k->principal, st, 0);
        if (rc == ONCE_OK)
            rc = once__sq_text(k->task_id, sizeof k->task_id, st, 1);
        if (rc == ONCE_OK)
            rc = row_decode(st, 2, &r);
        if (rc != ONCE_OK)
            break;
        memcpy(k->config_id, r.config_id, sizeof k->config_id);
        k->generation = r.delivered + 1;
        k->target = r.target;
        k->attempts = r.attempts;
        out->n++;
        *found = out->n;
    }
    return end_read(st, rc, src);
}

int once__sq_op_push_claim(sq_store *s, sq_conn *w, sq_op *op)
{
    size_t found;
    (void)s;
    int rc = due_rows(w, op->now, op->max, op->claims, &found);
    for (size_t i = 0; rc == ONCE_OK && i < op->claims->n; i++) {
        once_push_claim *k = &op->claims->v[i];
        sqlite3_stmt *st;
        k->lease_until = op->now + op->lease_ms;
        rc = once__sq_stmt(w, SQ_PUSH_LEASE, &st);
        if (rc != ONCE_OK)
            break;
        int src = bind_key3(st, k->principal, k->task_id, k->config_id);
        if (src == SQLITE_OK)
            src = once__sq_bind_text(st, 4, op->owner);
        if (src == SQLITE_OK)
            src = once__sq_bind_int64(st, 5, k->lease_until);
        rc = once__sq_finish(st, src);
    }
    return rc;
}

typedef struct any_due_arg {
    int64_t now;
    size_t found;
} any_due_arg;

static int any_due_fn(sq_conn *c, void *p)
{
    any_due_arg *a = p;
    return due_rows(c, a->now, 1, NULL, &a->found);
}

int once__sq_push_claim(sq_store *s, const char *owner, int64_t now, int64_t lease_ms, size_t max,
                        once_push_claim_list *out)
{
    memset(out, 0, sizeof *out);
    if (!owner[0] || strlen(owner) > ONCE_OWNER_MAX || lease_ms <= 0) {
        once__store_seterr(&s->base, "push_claim: owner must be 1..%d bytes, lease_ms > 0",
                           ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (max == 0)
        return ONCE_OK;
    any_due_arg a = {now, 0};
    int rc = once__sq_with_reader(s, "push_claim", any_due_fn, &a);
    if (rc != ONCE_OK || !a.found)
        return rc;
    sq_op op = {.kind = SQ_OP_PUSH_CLAIM,
                .owner = owner,
                .now = now,
                .lease_ms = lease_ms,
                .max = max,
                .claims = out};
    return once__sq_submit(s, &op);
}

/* ------------------------------------------------------------------------
 * Ack and status.
 */

int once__sq_op_push_ack(sq_store *s, sq_conn *w, sq_op *op)
{
    const once_push_ack *a = op->ack;
    sqlite3_stmt *st;
    once_push_row r;
    (void)s;
    int rc = once__sq_stmt(w, SQ_PUSH_GET, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = bind_key3(st, a->principal, a->task_id, a->config_id);
    if (src == SQLITE_OK)
        src = once__sq_step(st);
    if (src == SQLITE_ROW)
        rc = row_decode(st, 0, &r);
    else
        rc = src == SQLITE_DONE ? ONCE_ENOTFOUND : once__db_err(src);
    int rrc = once__sq_reset(st);
    if (rc == ONCE_OK && rrc != SQLITE_OK)
        rc = once__db_err(rrc);
    if (rc == ONCE_OK)
        rc = once__push_apply_ack(&r, a);
    if (rc == ONCE_OK)
        rc = put_row(w, a->principal, a->task_id, &r);
    return rc;
}

int once__sq_push_ack(sq_store *s, const once_push_ack *ack)
{
    sq_op op = {.kind = SQ_OP_PUSH_ACK, .ack = ack};
    return once__sq_submit(s, &op);
}

typedef struct rows_arg {
    const char *principal, *task_id;
    once_push_row_list *out;
} rows_arg;

static int rows_fn(sq_conn *c, void *p)
{
    rows_arg *a = p;
    once_push_row v[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0;
    int rc = read_rows(c, a->principal, a->task_id, v, ONCE_PUSH_CONFIGS_MAX, &n);
    if (rc != ONCE_OK || n == 0)
        return rc;
    a->out->v = once_calloc(n, sizeof *a->out->v);
    if (!a->out->v)
        return ONCE_ENOMEM;
    memcpy(a->out->v, v, n * sizeof *v);
    a->out->n = n;
    return ONCE_OK;
}

int once__sq_push_rows(sq_store *s, const char *principal, const char *task_id,
                       once_push_row_list *out)
{
    memset(out, 0, sizeof *out);
    rows_arg a = {principal, task_id, out};
    return once__sq_with_reader(s, "push_rows", rows_fn, &a);
}

/* ------------------------------------------------------------------------
 * Integrity: every task's rows are exactly its push_json's elements, aimed
 * at its generation; no row lives under a key without push_json.
 */

static void bad_push(once_check_report *rep, const char *principal, const char *task_id,
                     const char *why)
{
    rep->bad_push++;
    once__check_problem(rep, "%s/%s: %s", principal, task_id, why);
}

static int check_task(sq_conn *c, sqlite3_stmt *st, once_check_report *rep)
{
    char principal[ONCE_PRINCIPAL_MAX + 1], task_id[ONCE_ID_MAX + 1];
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, nrows = 0;

    if (once__sq_text(principal, sizeof principal, st, 0) != ONCE_OK ||
        once__sq_text(task_id, sizeof task_id, st, 1) != ONCE_OK) {
        bad_push(rep, "?", "?", "a task row with push_json does not decode");
        return ONCE_OK;
    }
    const char *json = (const char *)sqlite3_column_text(st, 2);
    int64_t generation = sqlite3_column_int64(st, 3);
    if (once__push_elems(json, el, &n) != ONCE_OK) {
        bad_push(rep, principal, task_id, "push_json does not parse");
        return ONCE_OK;
    }
    int rc = read_rows(c, principal, task_id, rows, ONCE_PUSH_CONFIGS_MAX, &nrows);
    if (rc == ONCE_ECORRUPT) {
        bad_push(rep, principal, task_id, "more delivery rows than configs");
        return ONCE_OK;
    }
    if (rc != ONCE_OK)
        return rc;
    int ok = n == nrows;
    for (size_t i = 0; ok && i < n; i++) {
        size_t j = 0;
        while (j < nrows && strcmp(rows[j].config_id, el[i].id) != 0)
            j++;
        ok = j < nrows && rows[j].target == generation && rows[j].delivered <= generation;
    }
    if (!ok)
        bad_push(rep, principal, task_id, "delivery rows disagree with push_json");
    return ONCE_OK;
}

static const char q_with_push[] =
    "SELECT principal, task_id, push_json, generation FROM tasks WHERE push_json IS NOT NULL";
static const char q_stray_rows[] =
    "SELECT principal, task_id, count(*) FROM push_deliveries d WHERE NOT EXISTS("
    "SELECT 1 FROM tasks t WHERE t.principal=d.principal AND t.task_id=d.task_id"
    " AND t.push_json IS NOT NULL) GROUP BY principal, task_id";

int once__sq_check_push(sq_conn *c, once_check_report *rep)
{
    const char *const qs[] = {q_with_push, q_stray_rows};
    int rc = ONCE_OK;
    for (int q = 0; rc == ONCE_OK && q < 2; q++) {
        sqlite3_stmt *st;
        int src = once__sq_prepare(c->db, qs[q], &st);
        while (rc == ONCE_OK && src == SQLITE_OK && next_row(st, &rc)) {
            if (q == 0) {
                rc = check_task(c, st, rep);
            } else {
                const unsigned char *p = sqlite3_column_text(st, 0);
                const unsigned char *t = sqlite3_column_text(st, 1);
                bad_push(rep, p ? (const char *)p : "?", t ? (const char *)t : "?",
                         "delivery rows without a record carrying push_json");
            }
        }
        if (src != SQLITE_OK && rc == ONCE_OK)
            rc = once__db_err(src);
        sqlite3_finalize(st);
    }
    return rc;
}
