/*
 * sqlite_commit.c -- the sqlite backend's part of group commit: what one
 * batch of writes is on the one writer connection. Who leads, who waits
 * and how an asynchronous create is committed is the engine every
 * backend shares (store/batch.h), run here with one leader at a time.
 *
 * With synchronous=FULL every COMMIT costs an fsync, so one transaction per
 * write caps a process at what one fsync after another allows however many
 * threads it has (bench/README.md's sqlite-ceiling-1/txn rows measure it).
 * A batch (up to SQ_BATCH_MAX ops, FIFO) is
 * one BEGIN IMMEDIATE ... COMMIT:
 *   - an op that fails having changed no row (conflict, EEXISTS,
 *     tombstone, bad events) has nothing to undo: its result stands and
 *     the batch goes on;
 *   - an op that fails after a change (an I/O error on its second
 *     statement) rolls the batch back, and the batch runs again with each
 *     op inside its own SAVEPOINT, rolled back to when the op fails, so
 *     only that op fails. Only that re-run pays for savepoints; a lone op
 *     never does (its transaction is its savepoint).
 * If BEGIN, a savepoint step or COMMIT fails, nothing of the batch is
 * acknowledged: every op gets ONCE_ESTORE (ONCE_EBUSY if the lock could not
 * be had) and its outputs are dropped. The transaction is rolled back; if
 * even ROLLBACK fails the writer connection is closed (which rolls back)
 * and the next batch opens a fresh one.
 *
 * Reads never come here: they use the reader pool (sqlite_conn.c) and WAL
 * lets them proceed during a commit. A lease renewal is an op like any
 * other and shares the batches.
 */
#include "store/sqlite_fault.h"
#include "store/sqlite_int.h"

/* Step a transaction-control statement, retrying SQLITE_BUSY a few times
 * after the busy handler has given up (BUSY_RECOVERY and friends skip it). */
static int run_retry(sq_conn *w, sq_stmt_id id)
{
    int rc = once__sq_run(w, id);
    for (int i = 1; rc == ONCE_EBUSY && i <= SQ_BUSY_RETRIES; i++) {
        once__db_sleep_ms(1 << i);
        rc = once__sq_run(w, id);
    }
    return rc;
}

/* The ops' own results, or one batch-wide failure rc for all of them.
 * *committed: whether the batch ended in COMMIT (a lone op that failed
 * ends in ROLLBACK instead).
 *
 * A lone op needs no savepoint: the transaction is its own, and if the op
 * fails the whole of it is rolled back. A batch's first try runs without
 * savepoints either (SAVEPOINT and RELEASE add work to every op on the one
 * thread every write of the process waits for; bench/README.md, "Single
 * steps the code's comments cite", has how much): an
 * op that fails having changed no row (sqlite3_total_changes64 unmoved: a
 * key that exists, a tombstone, a version that moved, events that do not
 * follow) has nothing to undo, so its rc stands and the batch goes on. An
 * op that fails after a change ends the try with *again set: the caller
 * rolls the transaction back and runs the batch once more with each op in
 * its own SAVEPOINT, rolled back to when the op fails. (A statement that
 * fails undoes its own rows and counts none, so "no change" is exact.) */
static int run_ops(sq_store *s, sq_conn *w, sq_op **ops, size_t n, int savepoints,
                   int *committed, int *again)
{
    const int lone = n == 1;
    *committed = 0;
    *again = 0;
    int rc = run_retry(w, SQ_BEGIN);
    if (rc != ONCE_OK) {
        once__sq_seterr(s, w->db, "BEGIN IMMEDIATE", rc);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (savepoints && once__sq_run(w, SQ_SAVEPOINT) != ONCE_OK)
            return ONCE_ESTORE;
        sqlite3_int64 before = sqlite3_total_changes64(w->db);
        ops[i]->rc = once__sq_op_exec(s, w, ops[i]);
        if (lone && ops[i]->rc != ONCE_OK)   /* its rc and outputs stand */
            return once__sq_abort(w) == 0 ? ONCE_OK : ONCE_ESTORE;
        if (savepoints && ops[i]->rc != ONCE_OK && once__sq_run(w, SQ_ROLLBACK_TO) != ONCE_OK)
            return ONCE_ESTORE;   /* the op's partial writes may still be there */
        if (savepoints && once__sq_run(w, SQ_RELEASE) != ONCE_OK)
            return ONCE_ESTORE;
        if (sqlite3_get_autocommit(w->db))
            return ONCE_ESTORE;   /* SQLite rolled the whole transaction back */
        if (!savepoints && ops[i]->rc != ONCE_OK && sqlite3_total_changes64(w->db) != before) {
            *again = 1;           /* its partial writes are in the transaction */
            return ONCE_ESTORE;
        }
    }
    rc = run_retry(w, SQ_COMMIT);
    if (rc != ONCE_OK) {
        once__sq_seterr(s, w->db, "COMMIT", rc);
        return rc == ONCE_EBUSY ? ONCE_EBUSY : ONCE_ESTORE;
    }
    *committed = 1;
    return ONCE_OK;
}

/* Roll back whatever the writer has open; a writer that cannot be rolled
 * back is closed (which rolls back) and the next batch opens a new one. */
static void writer_abort(sq_store *s)
{
    if (s->writer && once__sq_abort(s->writer) != 0) {
        once__sq_conn_close(s->writer);
        s->writer = NULL;
    }
}

static void run_batch(sq_store *s, sq_op **ops, size_t n)
{
    int rc = ONCE_OK, committed = 0, again = 0;
    if (!s->writer)
        rc = once__sq_conn_open(s, 1, 0, &s->writer);
    if (rc == ONCE_OK)
        rc = run_ops(s, s->writer, ops, n, 0, &committed, &again);
    if (again) { /* once more, each op in its own savepoint */
        once__sq_count_rerun();
        writer_abort(s);
        for (size_t i = 0; i < n; i++)
            once__sq_op_discard(ops[i]);
        rc = s->writer ? ONCE_OK : once__sq_conn_open(s, 1, 0, &s->writer);
        if (rc == ONCE_OK)
            rc = run_ops(s, s->writer, ops, n, 1, &committed, &again);
    }
    if (rc == ONCE_OK) {
        if (committed)
            once__sq_count_commit(n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        once__sq_op_discard(ops[i]);
        ops[i]->rc = rc == ONCE_EBUSY ? ONCE_EBUSY : ONCE_ESTORE;
    }
    writer_abort(s);
}

/* The group commit's run (store/batch.h): one batch on the writer. */
static void sq_run(void *owner, once__batch_op **bops, size_t n)
{
    sq_store *s = owner;
    sq_op *ops[ONCE__BATCH_MAX];
    for (size_t i = 0; i < n; i++)
        ops[i] = bops[i]->arg;
    run_batch(s, ops, n);
    for (size_t i = 0; i < n; i++)
        bops[i]->rc = ops[i]->rc;
}

/* One leader at a time: SQLite has one writer. */
void once__sq_batch_init(sq_store *s)
{
    once__batch_init_run(&s->batch, sq_run, s, 1, SQ_BATCH_MAX);
}

void once__sq_batch_destroy(sq_store *s)
{
    once__batch_destroy(&s->batch);
}

int once__sq_submit(sq_store *s, sq_op *op)
{
    op->rc = ONCE_ESTORE;
    op->landed = NULL;
    op->bop.arg = op;
    return once__batch_submit(&s->batch, &op->bop);
}

static void sq_landed(once__batch_op *bop)
{
    sq_op *op = bop->arg;
    op->landed(op);
}

int once__sq_submit_async(sq_store *s, sq_op *op)
{
    op->rc = ONCE_ESTORE;
    op->bop.arg = op;
    op->bop.landed = sq_landed;
    return once__batch_submit_async(&s->batch, &op->bop);
}

size_t once__sqlite_queued(once_store *base)
{
    return once__batch_queued(&((sq_store *)base)->batch);
}
