/*
 * sqlite_commit.c -- group commit for the sqlite backend's writes.
 *
 * With synchronous=FULL every COMMIT costs an fsync (~0.1-1 ms), so one
 * transaction per write caps a process at a few thousand writes per second
 * however many threads it has. Instead, concurrent writers share commits:
 *
 *   - a caller queues its op (sq_op) on the handle and waits on the op's
 *     condition variable;
 *   - whichever waiting caller finds no leader becomes the leader: it takes
 *     up to SQ_BATCH_MAX queued ops (FIFO), drops the queue lock and runs
 *     them on the one writer connection as a single BEGIN IMMEDIATE ...
 *     COMMIT, each op inside its own SAVEPOINT;
 *   - an op that fails (conflict, EEXISTS, tombstone, bad events, even an
 *     I/O error on one of its statements) is rolled back to its savepoint
 *     and gets its own result; the others are unaffected;
 *   - after COMMIT the leader publishes every op's result (done = 1 under
 *     the queue lock), wakes each caller, and wakes the new queue head so
 *     that ops queued meanwhile get a leader of their own.
 *
 * If BEGIN, a savepoint step or COMMIT fails, nothing of the batch is
 * acknowledged: every op gets ONCE_ESTORE (ONCE_EBUSY if the lock could not
 * be had) and its outputs are dropped. The transaction is rolled back; if
 * even ROLLBACK fails the writer connection is closed (which rolls back)
 * and the next batch opens a fresh one.
 *
 * Reads never come here: they use the reader pool (sqlite_conn.c) and WAL
 * lets them proceed during a commit.
 */
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

/* The ops' own results, or one batch-wide failure rc for all of them. */
static int run_ops(sq_store *s, sq_conn *w, sq_op **ops, size_t n)
{
    int rc = run_retry(w, SQ_BEGIN);
    if (rc != ONCE_OK) {
        once__sq_seterr(s, w->db, "BEGIN IMMEDIATE", rc);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        rc = once__sq_run(w, SQ_SAVEPOINT);
        if (rc != ONCE_OK)
            return ONCE_ESTORE;
        ops[i]->rc = once__sq_op_exec(s, w, ops[i]);
        if (ops[i]->rc != ONCE_OK && once__sq_run(w, SQ_ROLLBACK_TO) != ONCE_OK)
            return ONCE_ESTORE;   /* the op's partial writes may still be there */
        if (once__sq_run(w, SQ_RELEASE) != ONCE_OK)
            return ONCE_ESTORE;
        if (sqlite3_get_autocommit(w->db))
            return ONCE_ESTORE;   /* SQLite rolled the whole transaction back */
    }
    rc = run_retry(w, SQ_COMMIT);
    if (rc != ONCE_OK) {
        once__sq_seterr(s, w->db, "COMMIT", rc);
        return rc == ONCE_EBUSY ? ONCE_EBUSY : ONCE_ESTORE;
    }
    return ONCE_OK;
}

static void run_batch(sq_store *s, sq_op **ops, size_t n)
{
    int rc = ONCE_OK;
    if (!s->writer)
        rc = once__sq_conn_open(s, 1, 0, &s->writer);
    if (rc == ONCE_OK)
        rc = run_ops(s, s->writer, ops, n);
    if (rc == ONCE_OK) {
        once__sq_count_commit(n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        once__sq_op_discard(ops[i]);
        ops[i]->rc = rc == ONCE_EBUSY ? ONCE_EBUSY : ONCE_ESTORE;
    }
    if (s->writer && once__sq_abort(s->writer) != 0) {
        once__sq_conn_close(s->writer);
        s->writer = NULL;
    }
}

int once__sq_submit(sq_store *s, sq_op *op)
{
    op->rc = ONCE_ESTORE;
    op->done = 0;
    op->next = NULL;
    if (pthread_cond_init(&op->cv, NULL) != 0)
        return ONCE_ENOMEM;

    pthread_mutex_lock(&s->qmu);
    if (s->qtail)
        s->qtail->next = op;
    else
        s->qhead = op;
    s->qtail = op;
    while (!op->done) {
        if (s->leading) {
            pthread_cond_wait(&op->cv, &s->qmu);
            continue;
        }
        sq_op *batch[SQ_BATCH_MAX];
        size_t n = 0;
        s->leading = 1;
        while (s->qhead && n < SQ_BATCH_MAX) {
            batch[n++] = s->qhead;
            s->qhead = s->qhead->next;
        }
        if (!s->qhead)
            s->qtail = NULL;
        pthread_mutex_unlock(&s->qmu);

        run_batch(s, batch, n);

        pthread_mutex_lock(&s->qmu);
        for (size_t i = 0; i < n; i++) {
            batch[i]->done = 1;
            pthread_cond_signal(&batch[i]->cv);
        }
        s->leading = 0;
        if (s->qhead)
            pthread_cond_signal(&s->qhead->cv);   /* hand the lead on */
    }
    pthread_mutex_unlock(&s->qmu);
    pthread_cond_destroy(&op->cv);
    return op->rc;
}
