/*
 * sqlite_commit.c -- group commit for the sqlite backend's writes.
 *
 * With synchronous=FULL every COMMIT costs an fsync, so one transaction per
 * write caps a process at what one fsync after another allows however many
 * threads it has (bench/README.md's sqlite-ceiling-1/txn rows measure it). Instead, concurrent writers share commits,
 * leader/follower style, with no writer thread of its own:
 *
 *   - a caller queues its op (sq_op) on the handle; if no batch is in
 *     flight it becomes the leader at once and commits on its own thread,
 *     so a lone writer never hands off to another thread;
 *   - otherwise it is a follower and sleeps on its op's semaphore; the
 *     leader takes up to SQ_BATCH_MAX queued ops (FIFO), drops the queue
 *     lock and runs them on the one writer connection as a single BEGIN
 *     IMMEDIATE ... COMMIT (run_ops);
 *   - an op that fails (conflict, EEXISTS, tombstone, bad events, even an
 *     I/O error on one of its statements) leaves nothing behind and gets
 *     its own result; the others are unaffected: one that failed before
 *     changing a row has nothing to undo, and when one fails after a change
 *     the batch is rolled back and run again with each op inside its own
 *     SAVEPOINT, rolled back to when the op fails (a lone op: the
 *     transaction is rolled back);
 *   - after COMMIT returned (the fsync done) the leader hands the lead to
 *     the op at the head of the queue, if any (whoever arrived while the
 *     commit was in flight), without dropping it in between, and only then
 *     posts every op of its batch its outcome.
 *
 * Each waiting op is posted exactly once: "done" (its rc is final) or "you
 * lead" (done still 0). The queue lock is not held while posting and a
 * woken follower does not take it again to read its outcome, so waking a
 * batch of N is N wake-ups, not N wake-ups that then queue on one mutex.
 * Because the lead passes from op to op under the lock, no later arrival
 * can take the designated op into a batch of its own and post it twice.
 *
 * If BEGIN, a savepoint step or COMMIT fails, nothing of the batch is
 * acknowledged: every op gets ONCE_ESTORE (ONCE_EBUSY if the lock could not
 * be had) and its outputs are dropped. The transaction is rolled back; if
 * even ROLLBACK fails the writer connection is closed (which rolls back)
 * and the next batch opens a fresh one.
 *
 * An asynchronous op (once__sq_submit_async: a new task's held create,
 * engine/held.c) has no caller waiting: it is queued, and whoever commits
 * it calls its landed() instead of posting it. It never leads on its
 * caller's thread, which may be one that must not wait for a commit (an
 * HTTP thread): when nobody leads, or when a leader's successor at the head
 * of the queue is asynchronous, the lead passes to the driver, a thread of
 * the store's own (started with the first such op), which leads as long as
 * the queue's head is asynchronous and hands the lead to a waiting op
 * otherwise. So a waiting caller that led is never kept leading for
 * others, and under a steady load of held creates one thread commits batch
 * after batch with no hand-off per write.
 *
 * Reads never come here: they use the reader pool (sqlite_conn.c) and WAL
 * lets them proceed during a commit. A lease renewal is an op like any
 * other and shares the batches.
 */
#include <errno.h>

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

/* Sleep until this op is posted (sem_wait is interruptible by signals). */
static void wait_post(sq_op *op)
{
    while (sem_wait(&op->wake) != 0 && errno == EINTR)
        ;
}

/* Under qmu, with s->leading set for this thread: take the queue's head
 * batch. */
static size_t take_batch(sq_store *s, sq_op **batch)
{
    size_t n = 0;
    while (s->qhead && n < SQ_BATCH_MAX) {
        batch[n++] = s->qhead;
        s->qhead = s->qhead->next;
    }
    if (!s->qhead)
        s->qtail = NULL;
    return n;
}

/* Tell every op of a finished batch but the calling thread's own (mine,
 * or NULL) its outcome: a post for a waiting caller, landed() for an
 * asynchronous op. After this no thread touches those ops but their own. */
static void finish_batch(sq_op **batch, size_t n, const sq_op *mine)
{
    for (size_t i = 0; i < n; i++) {
        sq_op *op = batch[i];
        if (op == mine)
            continue;
        if (op->landed != NULL) {
            op->landed(op);
        } else {
            op->done = 1;
            sem_post(&op->wake);
        }
    }
}

/* Lead: run the queue's head batch, pass the lead on, tell the batch its
 * outcome; again while the lead stays here. The caller holds the lead
 * (s->leading set for it). mine: the caller's own op, or NULL (the
 * driver). The lead passes, under qmu and without leading dropping in
 * between, to a waiting op at the head of the queue (posted to lead), to
 * the driver when the head is asynchronous (nobody waits to lead it), or
 * to nobody when the queue is empty. The driver keeps it while the head is
 * asynchronous. It passes before this batch is told its outcome, so the
 * next commit does not wait for the wake-ups and completions of this one;
 * and a waiting caller that led returns once its own batch is committed,
 * whatever arrives after. */
static void lead(sq_store *s, sq_op *mine)
{
    for (;;) {
        sq_op *batch[SQ_BATCH_MAX];
        pthread_mutex_lock(&s->qmu);
        size_t n = take_batch(s, batch);
        pthread_mutex_unlock(&s->qmu);

        run_batch(s, batch, n);

        pthread_mutex_lock(&s->qmu);
        sq_op *next = s->qhead;   /* arrived during the commit */
        sq_op *wake = NULL;       /* a waiting op handed the lead */
        int again = 0;
        if (!next) {
            s->leading = 0;
        } else if (next->landed == NULL) {
            wake = next;
        } else if (mine == NULL) {
            again = 1;
        } else {
            s->drive = 1;
            pthread_cond_signal(&s->dcv);
        }
        pthread_mutex_unlock(&s->qmu);
        /* Only a waiting op may be touched past the lock: it lives until
         * posted. An asynchronous head may already be committed by the
         * driver and freed by its landed(). */
        if (wake)
            sem_post(&wake->wake);   /* "you lead": done stays 0 */
        finish_batch(batch, n, mine);
        if (!again)
            return;
    }
}

int once__sq_submit(sq_store *s, sq_op *op)
{
    op->rc = ONCE_ESTORE;
    op->done = 0;
    op->landed = NULL;
    op->next = NULL;
    if (sem_init(&op->wake, 0, 0) != 0)
        return ONCE_ENOMEM;

    pthread_mutex_lock(&s->qmu);
    if (s->qtail)
        s->qtail->next = op;
    else
        s->qhead = op;
    s->qtail = op;
    if (s->leading) {
        /* A follower: the one post says done, or that the lead is ours
         * (s->leading was left set for us and op heads the queue). */
        pthread_mutex_unlock(&s->qmu);
        wait_post(op);
        if (op->done) {
            sem_destroy(&op->wake);
            return op->rc;
        }
    } else {
        s->leading = 1;
        pthread_mutex_unlock(&s->qmu);
    }
    lead(s, op);   /* op heads the queue: the queue held only it, or it led */
    sem_destroy(&op->wake);
    return op->rc;
}

static void *driver_main(void *arg)
{
    sq_store *s = arg;
    pthread_mutex_lock(&s->qmu);
    for (;;) {
        while (!s->drive && !s->driver_stop)
            pthread_cond_wait(&s->dcv, &s->qmu);
        if (!s->drive)
            break;
        s->drive = 0;
        pthread_mutex_unlock(&s->qmu);
        lead(s, NULL);
        pthread_mutex_lock(&s->qmu);
    }
    pthread_mutex_unlock(&s->qmu);
    return NULL;
}

int once__sq_submit_async(sq_store *s, sq_op *op)
{
    op->rc = ONCE_ESTORE;
    op->done = 0;
    op->next = NULL;

    pthread_mutex_lock(&s->qmu);
    if (!s->driver_started) {
        /* Started by the first asynchronous op: a handle that never takes
         * one (the tools, the tests of other slots) has no extra thread. */
        if (pthread_create(&s->driver, NULL, driver_main, s) != 0) {
            pthread_mutex_unlock(&s->qmu);
            return ONCE_ENOMEM;
        }
        s->driver_started = 1;
    }
    if (s->qtail)
        s->qtail->next = op;
    else
        s->qhead = op;
    s->qtail = op;
    if (!s->leading) {
        /* Nobody leads: the driver does. Never this thread, which may be
         * one that must not wait for a commit (an HTTP thread). */
        s->leading = 1;
        s->drive = 1;
        pthread_cond_signal(&s->dcv);
    }
    pthread_mutex_unlock(&s->qmu);
    return ONCE_OK;   /* the current batch's leader, or the next, takes it */
}

void once__sq_driver_stop(sq_store *s)
{
    pthread_mutex_lock(&s->qmu);
    int started = s->driver_started;
    s->driver_stop = 1;
    pthread_cond_signal(&s->dcv);
    pthread_mutex_unlock(&s->qmu);
    if (started)
        pthread_join(s->driver, NULL);
}

size_t once__sqlite_queued(once_store *base)
{
    sq_store *s = (sq_store *)base;
    size_t n = 0;
    pthread_mutex_lock(&s->qmu);
    for (const sq_op *op = s->qhead; op; op = op->next)
        n++;
    pthread_mutex_unlock(&s->qmu);
    return n;
}
