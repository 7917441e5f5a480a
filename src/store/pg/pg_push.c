/*
 * pg_push.c -- push delivery rows in the PostgreSQL backend (store.h, "Push
 * delivery"): once_push kept in step with once_tasks.push_json, the claim,
 * the fenced ack, the rows read for status, and their integrity check.
 *
 * What a change means is decided by push_rows.c (once__push_sync,
 * once__push_apply_ack); this file reads rows, hands them to those
 * functions and writes back the result, inside one transaction that holds
 * the rows' locks (SELECT ... FOR UPDATE) from the read to the commit. So a
 * record write and an ack on the same row serialise, and the later one
 * computes from what the earlier one left (the memory and SQLite backends
 * get the same from their single writer). Rows are updated in place, never
 * deleted and re-inserted, so an ack waiting on a row lock finds the row
 * again after the record write commits.
 *
 * The claim is one statement: SELECT ... FOR UPDATE SKIP LOCKED picks due
 * rows nobody is locking and the UPDATE in the same statement leases them,
 * so concurrent claimers on any number of replicas take disjoint rows and
 * an idle claim writes nothing. Lock order, which keeps all of this free of
 * deadlocks: a record write locks the task row, then its delivery rows in
 * config_id order; an ack locks one delivery row; a claim never waits; a
 * sweep locks task rows (SKIP LOCKED) before deleting their delivery rows.
 */
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

static pg_store *pgs(once_store *s)
{
    return (pg_store *)s;
}

/* PG_PUSH_COLS starting at column c of row i. */
static int row_decode(const PGresult *r, int i, int c, once_push_row *out)
{
    int k;

    memset(out, 0, sizeof *out);
    if (once__pg_fixed(r, i, c, out->config_id, sizeof out->config_id) != ONCE_OK ||
        once__pg_fixed(r, i, c + 6, out->lease_owner, sizeof out->lease_owner) != ONCE_OK ||
        once__pg_fixed(r, i, c + 9, out->last_error, sizeof out->last_error) != ONCE_OK ||
        !out->config_id[0])
        return ONCE_ECORRUPT;
    for (k = 0; k < ONCE__PUSH_ROW_NINT; k++) {
        const once__int_field *f = &once__push_row_ints[k];
        once__field_set(out, f, once__pg_i64(r, i, c + f->col));
    }
    return ONCE_OK;
}

static void bind_key(pg_params *p, const char *principal, const char *task_id)
{
    once__pg_p_init(p);
    once__pg_p_str(p, principal);
    once__pg_p_str(p, task_id);
}

/* Run a rows query (PG_PUSH_ROWS, PG_PUSH_LOCK, PG_PUSH_GET_LOCK) with
 * params p: at most cap rows into v[0..*n). More rows than a push_json may
 * hold is ONCE_ECORRUPT. */
static int read_rows(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p, once_push_row *v,
                     size_t cap, size_t *n)
{
    PGresult *r;
    int rc, i, rows;

    *n = 0;
    rc = once__pg_exec(s, c, id, p, &r);
    if (rc != ONCE_OK)
        return rc;
    rows = PQntuples(r);
    if ((size_t)rows > cap)
        rc = ONCE_ECORRUPT;
    for (i = 0; rc == ONCE_OK && i < rows; i++)
        rc = row_decode(r, i, 0, &v[i]);
    PQclear(r);
    if (rc == ONCE_OK)
        *n = (size_t)rows;
    else if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "postgres: stored delivery rows do not fit the contract");
    return rc;
}

/* Insert or overwrite one row of (principal, task_id). */
static int put_row(pg_store *s, pg_conn *c, const char *principal, const char *task_id,
                   const once_push_row *row)
{
    pg_params p;

    bind_key(&p, principal, task_id);
    once__pg_p_str(&p, row->config_id);
    once__pg_p_i64(&p, row->since);
    once__pg_p_i64(&p, row->delivered);
    once__pg_p_i64(&p, row->target);
    once__pg_p_i64(&p, row->attempts);
    once__pg_p_i64(&p, row->next_attempt_at);
    once__pg_p_str(&p, row->lease_owner);
    once__pg_p_i64(&p, row->lease_until);
    once__pg_p_i16(&p, row->disabled ? 1 : 0);
    once__pg_p_str(&p, row->last_error);
    once__pg_p_i64(&p, row->deliveries);
    once__pg_p_i64(&p, row->retries);
    once__pg_p_i64(&p, row->failures);
    return once__pg_exec_done(s, c, PG_PUSH_PUT, &p);
}

static int drop_row(pg_store *s, pg_conn *c, const char *principal, const char *task_id,
                    const char *config_id)
{
    pg_params p;

    bind_key(&p, principal, task_id);
    once__pg_p_str(&p, config_id);
    return once__pg_exec_done(s, c, PG_PUSH_DROP, &p);
}

static const once_push_row *find(const once_push_row *v, size_t n, const char *config_id)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(v[i].config_id, config_id) == 0)
            return &v[i];
    return NULL;
}

int once__pg_push_sync(pg_store *s, pg_conn *c, const once_record *rec)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    once_push_row old[ONCE_PUSH_CONFIGS_MAX], rows[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, nold = 0, i, j;
    pg_params p;
    int rc;

    rc = once__push_elems(rec->push_json, el, &n);
    if (rc != ONCE_OK)
        return rc;
    bind_key(&p, rec->principal, rec->task_id);
    rc = read_rows(s, c, PG_PUSH_LOCK, &p, old, ONCE_PUSH_CONFIGS_MAX, &nold);
    if (rc != ONCE_OK)
        return rc;
    once__push_sync(old, nold, el, n, rec->generation, rows);
    for (i = 0; rc == ONCE_OK && i < nold; i++) {
        for (j = 0; j < n && strcmp(el[j].id, old[i].config_id) != 0; j++)
            ;
        if (j == n)
            rc = drop_row(s, c, rec->principal, rec->task_id, old[i].config_id);
    }
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        /* Both sides come from zeroed structs: bytes compare as fields do. */
        const once_push_row *was = find(old, nold, rows[i].config_id);
        if (!was || memcmp(was, &rows[i], sizeof rows[i]) != 0)
            rc = put_row(s, c, rec->principal, rec->task_id, &rows[i]);
    }
    return rc;
}

/* ------------------------------------------------------------------------
 * Claim.
 */

typedef struct claim_arg {
    const pg_params *p;
    int64_t lease_until;
    once_push_claim_list *out;
} claim_arg;

static int claim_row(const PGresult *r, int row, void *elem, void *arg)
{
    once_push_claim *k = elem;

    if (once__pg_fixed(r, row, 0, k->principal, sizeof k->principal) != ONCE_OK ||
        once__pg_fixed(r, row, 1, k->task_id, sizeof k->task_id) != ONCE_OK ||
        once__pg_fixed(r, row, 2, k->config_id, sizeof k->config_id) != ONCE_OK)
        return ONCE_ECORRUPT;
    k->generation = once__pg_i64(r, row, 3) + 1;
    k->target = once__pg_i64(r, row, 4);
    k->attempts = once__pg_i64(r, row, 5);
    k->lease_until = *(const int64_t *)arg;
    return ONCE_OK;
}

static int claim_fn(pg_store *s, pg_conn *c, void *arg)
{
    claim_arg *a = arg;
    void *v;
    int rc;

    once_push_claim_list_clear(a->out);
    rc = once__pg_rows(s, c, PG_PUSH_CLAIM, a->p, sizeof *a->out->v, claim_row, &a->lease_until,
                       &v, &a->out->n);
    a->out->v = v;
    /* Rows leased but not handed out lapse with their lease: nothing is lost. */
    if (rc != ONCE_OK)
        once_push_claim_list_clear(a->out);
    return rc;
}

int once__pg_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms, size_t max,
                        once_push_claim_list *out)
{
    claim_arg a;
    pg_params p;
    int rc;

    if (once__store_claim_begin(s, owner, now, lease_ms, max, out, &rc))
        return rc;
    a.lease_until = now + lease_ms;
    once__pg_p_init(&p);
    once__pg_p_str(&p, owner);
    once__pg_p_i64(&p, now);
    once__pg_p_i64(&p, a.lease_until);
    once__pg_p_i64(&p, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    a.p = &p;
    a.out = out;
    return once__pg_run(pgs(s), claim_fn, &a);
}

/* ------------------------------------------------------------------------
 * Ack and status.
 */

static int ack_fn(pg_store *s, pg_conn *c, void *arg)
{
    const once_push_ack *a = arg;
    once_push_row row;
    pg_params p;
    size_t n;
    int rc;

    rc = once__pg_begin(s, c);
    if (rc != ONCE_OK)
        return rc;
    bind_key(&p, a->principal, a->task_id);
    once__pg_p_str(&p, a->config_id);
    rc = read_rows(s, c, PG_PUSH_GET_LOCK, &p, &row, 1, &n);
    if (rc == ONCE_OK && n == 0)
        rc = ONCE_ENOTFOUND;
    if (rc == ONCE_OK)
        rc = once__push_apply_ack(&row, a);
    if (rc == ONCE_OK)
        rc = put_row(s, c, a->principal, a->task_id, &row);
    if (rc == ONCE_OK)
        return once__pg_commit(s, c);
    once__pg_rollback(c); /* a verdict (ENOTFOUND, EFENCED, ECONFLICT) wrote nothing */
    return rc;
}

int once__pg_push_ack(once_store *s, const once_push_ack *ack)
{
    return once__pg_run(pgs(s), ack_fn, (void *)ack);
}

static int rows_fn(pg_store *s, pg_conn *c, void *arg)
{
    once__push_rows_req *a = arg;
    once_push_row v[ONCE_PUSH_CONFIGS_MAX];
    pg_params p;
    size_t n;
    int rc;

    bind_key(&p, a->principal, a->task_id);
    rc = read_rows(s, c, PG_PUSH_ROWS, &p, v, ONCE_PUSH_CONFIGS_MAX, &n);
    return rc == ONCE_OK ? once__push_rows_out(a->out, v, n) : rc;
}

int once__pg_push_rows(once_store *s, const char *principal, const char *task_id,
                       once_push_row_list *out)
{
    once__push_rows_req a = {principal, task_id, out}; /* out: emptied by store.c */

    return once__pg_run(pgs(s), rows_fn, &a);
}

/* ------------------------------------------------------------------------
 * Integrity: every live record's rows are exactly its push_json's elements,
 * aimed at its generation; no row lives under a key without push_json.
 * Runs inside check's REPEATABLE READ transaction (one snapshot).
 */

static void bad_push(once_check_report *rep, const char *principal, const char *task_id,
                     const char *why)
{
    rep->bad_push++;
    once__check_problem(rep, "%s/%s: %s", principal, task_id, why);
}

static const char with_push_sql[] =
    "DECLARE once_check_push BINARY NO SCROLL CURSOR FOR "
    "SELECT principal, task_id, push_json, generation FROM once_tasks "
    "WHERE NOT tomb AND push_json IS NOT NULL";

static const char stray_sql[] =
    "SELECT d.principal, d.task_id, count(*)::int8 FROM once_push d "
    "WHERE NOT EXISTS (SELECT 1 FROM once_tasks t WHERE t.principal = d.principal "
    "AND t.task_id = d.task_id AND NOT t.tomb AND t.push_json IS NOT NULL) "
    "GROUP BY d.principal, d.task_id";

static int check_one(pg_store *s, pg_conn *c, const PGresult *r, int i, once_check_report *rep)
{
    char principal[ONCE_PRINCIPAL_MAX + 1], task_id[ONCE_ID_MAX + 1];
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    const char *why;
    char *json = NULL;
    pg_params p;
    size_t n = 0;
    int rc;

    if (once__pg_fixed(r, i, 0, principal, sizeof principal) != ONCE_OK ||
        once__pg_fixed(r, i, 1, task_id, sizeof task_id) != ONCE_OK) {
        bad_push(rep, "?", "?", "a task row with push_json does not decode");
        return ONCE_OK;
    }
    rc = once__pg_dup(r, i, 2, &json);
    if (rc == ONCE_ENOMEM)
        return rc;
    bind_key(&p, principal, task_id);
    rc = read_rows(s, c, PG_PUSH_ROWS, &p, rows, ONCE_PUSH_CONFIGS_MAX, &n);
    if (rc == ONCE_ECORRUPT) {
        why = "more delivery rows than push_json may hold, or one does not decode";
        rc = ONCE_OK;
    } else {
        why = rc == ONCE_OK && json ? once__push_rows_flaw(json, once__pg_i64(r, i, 3), rows, n)
                                    : "push_json does not decode";
    }
    if (rc == ONCE_OK && why)
        bad_push(rep, principal, task_id, why);
    once_free(json);
    return rc;
}

int once__pg_check_push(pg_store *s, pg_conn *c, once_check_report *rep)
{
    PGresult *r;
    int rc, i, n;

    rc = once__pg_walk(s, c, with_push_sql, "once_check_push", check_one, rep);
    if (rc != ONCE_OK)
        return rc;
    rc = once__pg_simple(s, c, stray_sql, &r);
    if (rc != ONCE_OK)
        return rc;
    n = PQntuples(r);
    for (i = 0; i < n; i++) {
        char principal[ONCE_PRINCIPAL_MAX + 1], task_id[ONCE_ID_MAX + 1];
        if (once__pg_fixed(r, i, 0, principal, sizeof principal) != ONCE_OK)
            memcpy(principal, "?", 2);
        if (once__pg_fixed(r, i, 1, task_id, sizeof task_id) != ONCE_OK)
            memcpy(task_id, "?", 2);
        bad_push(rep, principal, task_id, "delivery rows without a record carrying push_json");
    }
    PQclear(r);
    return ONCE_OK;
}
