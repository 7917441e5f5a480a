/*
 * pg_batch.c -- group commit for the PostgreSQL backend: concurrent creates
 * and updates (store/batch.h) share one round trip and one COMMIT.
 *
 * A batch of n > 1 goes out in libpq's pipeline mode as BEGIN, the n
 * conditional statements (PG_CREATE's INSERT .. ON CONFLICT DO NOTHING,
 * PG_UPDATE's UPDATE .. WHERE version = expected), COMMIT and one Sync, and
 * its results are read in order. Each statement is conditional and reports
 * its own row count, so one operation's conflict (the key taken, the
 * version moved, another operation of the same batch first) is that
 * operation's count of 0 and never fails the others; the caller then runs
 * its own diagnosis. A statement that errors aborts the transaction: nothing
 * of the batch is written, and every caller runs its write alone (PG_ALONE),
 * where it meets its own error. A batch of one runs as the single autocommit
 * statement it always was, still holding the leader's place.
 *
 * Acknowledgement: ONCE_OK only after the COMMIT's reply said COMMIT. If the
 * connection breaks after the COMMIT may have been sent, every operation of
 * the batch is in doubt and answers ONCE_ESTORE, never retried (the write may
 * have committed; the engine re-reads). If it breaks before COMMIT was
 * queued, nothing can commit (the server rolls back an unfinished
 * transaction) and the callers run alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg/pg_int.h"
#include "store/store_int.h"

/* Send one statement of the pipeline; 0 if libpq refused it. */
static int send_stmt(pg_conn *c, const pg_bop *op)
{
    char name[16];

    snprintf(name, sizeof name, "once_%d", (int)op->id);
    return PQsendQueryPrepared(c->pg, name, op->p->n, op->p->v, op->p->len, op->p->fmt, 1);
}

/* The next query's result in the pipeline, with the NULL that ends it
 * consumed; NULL (and c->item.broken) if the connection failed. */
static PGresult *next_result(pg_conn *c)
{
    PGresult *r = PQgetResult(c->pg), *extra;

    if (r && PQstatus(c->pg) == CONNECTION_OK)
        while ((extra = PQgetResult(c->pg)) != NULL) /* one result per query here */
            PQclear(extra);
    if (!r || PQstatus(c->pg) != CONNECTION_OK) {
        PQclear(r);
        c->item.broken = 1;
        return NULL;
    }
    return r;
}

/* Key order: concurrent batches lock their rows in the same order, so two
 * batches writing the same keys wait for each other instead of deadlocking. */
static int by_key(const void *a, const void *b)
{
    const pg_bop *x = (*(once__batch_op *const *)a)->arg, *y = (*(once__batch_op *const *)b)->arg;
    int d = strcmp(x->principal, y->principal);

    return d ? d : strcmp(x->task_id, y->task_id);
}

/* 1 if r is a statement's rows (its count in *count). */
static int rows_ok(PGresult *r, int64_t *count)
{
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        return 0;
    *count = once__pg_i64(r, 0, 0);
    return 1;
}

/* A batch of one: the statement alone, autocommit, on c. */
static int run_one(pg_store *s, pg_conn *c, pg_bop *op)
{
    PGresult *r;
    int rc = once__pg_exec(s, c, op->id, op->p, &r);

    if (rc != ONCE_OK) /* run alone unless the write is in doubt */
        return c->item.unsure ? rc : PG_ALONE;
    if (!rows_ok(r, &op->count)) {
        PQclear(r);
        once__store_seterr(&s->base, "postgres: unexpected result of a write");
        return ONCE_ESTORE;
    }
    PQclear(r);
    return ONCE_OK;
}

/* The pipeline on c. Returns ONCE_OK (committed: every op's count set),
 * PG_ALONE (nothing committed) or ONCE_ESTORE (in doubt). */
static int run_pipeline(pg_store *s, pg_conn *c, once__batch_op **ops, size_t n)
{
    int committed = 0, synced = 0, alive, queued;
    PGresult *r;
    size_t i;

    qsort(ops, n, sizeof *ops, by_key);
    if (!PQenterPipelineMode(c->pg))
        return PG_ALONE;
    queued = PQsendQueryParams(c->pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 1);
    for (i = 0; queued && i < n; i++)
        queued = send_stmt(c, ops[i]->arg);
    if (!queued || !PQsendQueryParams(c->pg, "COMMIT", 0, NULL, NULL, NULL, NULL, 1)) {
        c->item.broken = 1; /* closed at release: the open transaction rolls back */
        return PG_ALONE;
    }
    /* From here the COMMIT may reach the server whatever happens next. */
    if (!PQpipelineSync(c->pg)) {
        c->item.broken = 1;
        return ONCE_ESTORE;
    }
    /* BEGIN, the statements, COMMIT: a statement that failed shows up as
     * such or as PIPELINE_ABORTED, and COMMIT then does not say COMMIT. */
    r = next_result(c);
    alive = r != NULL;
    PQclear(r);
    for (i = 0; i < n && alive; i++) {
        pg_bop *op = ops[i]->arg;
        r = next_result(c);
        alive = r != NULL;
        if (!rows_ok(r, &op->count))
            op->count = 0;
        PQclear(r);
    }
    if (alive) {
        r = next_result(c);
        alive = r != NULL;
        committed = alive && PQresultStatus(r) == PGRES_COMMAND_OK &&
                    strcmp(PQcmdStatus(r), "COMMIT") == 0;
        PQclear(r);
    }
    /* The Sync's answer says the server went through the whole pipeline
     * and is still there: without it, a batch that did not say COMMIT may
     * still have committed (libpq answers the queries after a failure
     * itself, PIPELINE_ABORTED, even when the failure was the server
     * process dying), so it is in doubt. */
    if (alive) {
        r = PQgetResult(c->pg);
        synced = r && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        PQclear(r);
    }
    if (!synced || !PQexitPipelineMode(c->pg))
        c->item.broken = 1;
    if (committed)
        return ONCE_OK;
    if (!synced) {
        once__store_seterr(&s->base,
                           "postgres: connection lost while a batch of %zu writes was committing",
                           n);
        return ONCE_ESTORE;
    }
    return PG_ALONE;
}

int once__pg_batch_run(void *owner, once__pool_item *it, void *arg)
{
    once__batch_slice *a = arg;
    pg_store *s = owner;
    pg_conn *c = (pg_conn *)it;
    size_t i;
    int rc = ONCE_OK;

    c->in_tx = 0;
    for (i = 0; i < a->n && rc == ONCE_OK; i++)
        rc = once__pg_prepare(s, c, ((pg_bop *)a->ops[i]->arg)->id);
    if (rc != ONCE_OK)
        once__batch_set_all(a->ops, a->n, PG_ALONE); /* nothing was sent */
    else if (a->n == 1)
        a->ops[0]->rc = run_one(s, c, a->ops[0]->arg);
    else
        once__batch_set_all(a->ops, a->n, run_pipeline(s, c, a->ops, a->n));
    return ONCE_OK;
}

int once__pg_batch_write(pg_store *s, pg_bop *b)
{
    once__batch_op op;

    b->count = 0;
    if (s->batch_leaders == 0)
        return PG_ALONE;
    memset(&op, 0, sizeof op);
    op.arg = b;
    return once__batch_submit(&s->batch, &op);
}
