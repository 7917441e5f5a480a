/*
 * sqlite_write.c -- the write ops of the sqlite backend. Each runs on the
 * writer connection inside the batch's BEGIN IMMEDIATE transaction and its
 * own SAVEPOINT (sqlite_commit.c), so an op that fails leaves nothing behind
 * and the batch goes on.
 *
 * Because the transaction holds the database write lock from its first
 * statement, what an op reads is what it writes over: the tombstone check
 * and the winner read of create, and the version read of update, cannot
 * be overtaken by another process.
 *
 * Outputs (winner, tomb, *n, meta *out) are written here, by the leader,
 * into the waiting caller's structs; once__sq_op_discard drops them again
 * if the batch's COMMIT fails.
 */
#include <stdarg.h>
#include <string.h>

#include "core/alloc_int.h"
#include "core/decide.h"
#include "store/pack.h"
#include "store/sqlite_int.h"
#include "store/store_int.h"

static int bind_key(sqlite3_stmt *st, const char *principal, const char *task_id)
{
    return once__sq_bind(st, 1, "ss", principal, task_id);
}

/* Parameters ?1..?19 of SQ_TASK_INSERT and SQ_TASK_UPDATE (SQ_TASK_COLS). */
static int bind_task(sqlite3_stmt *st, const once_record *r)
{
    const int64_t nums[] = {r->state, r->kind, r->version, r->generation, r->fence, r->step};
    const int64_t times[] = {r->lease_until, r->created_at, r->updated_at, r->finished_at};
    int rc = bind_key(st, r->principal, r->task_id);
    if (rc == SQLITE_OK)
        rc = once__sq_bind_text(st, 3, r->context_id);
    for (int i = 0; rc == SQLITE_OK && i < 6; i++)
        rc = once__sq_bind_int64(st, 4 + i, nums[i]);
    if (rc == SQLITE_OK)
        rc = once__sq_bind_text(st, 10, r->lease_owner);
    for (int i = 0; rc == SQLITE_OK && i < 4; i++)
        rc = once__sq_bind_int64(st, 11 + i, times[i]);
    if (rc == SQLITE_OK)
        rc = once__sq_bind(st, 15, "sssss", r->digests, r->task_json, r->checkpoint, r->push_json,
                           r->journal);
    return rc;
}

/* The events of the task whose row is rid (schema: events are keyed by it). */
static int insert_events(sq_conn *w, int64_t rid, const once_event *ev, size_t nev)
{
    int rc = ONCE_OK;
    while (rc == ONCE_OK && nev > 0) {
        size_t k = nev < SQ_EVENT_ROWS_MAX ? nev : SQ_EVENT_ROWS_MAX;
        sqlite3_stmt *st;
        rc = once__sq_stmt(w, (sq_stmt_id)(SQ_EVENT_INSERT + k - 1), &st);
        if (rc != ONCE_OK)
            break;
        int src = once__sq_bind_int64(st, 1, rid);
        for (size_t i = 0; src == SQLITE_OK && i < k; i++) {
            src = once__sq_bind_int64(st, (int)(2 + 2 * i), ev[i].generation);
            if (src == SQLITE_OK)
                src = once__sq_bind_text(st, (int)(3 + 2 * i), ev[i].payload);
        }
        rc = once__sq_finish(st, src);
        ev += k;
        nev -= k;
    }
    return rc;
}

/* Run a SELECT bound to types/...: ONCE_OK with *out on its row (caller
 * resets), ONCE_ENOTFOUND (reset done), or an error (reset done). */
static int select_row(sq_conn *w, sqlite3_stmt **out, sq_stmt_id id, const char *types, ...)
{
    sqlite3_stmt *st;
    va_list ap;
    *out = NULL;
    va_start(ap, types);
    int rc = once__sq_stmt_vbind(w, id, &st, types, ap);
    va_end(ap);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_step(st);
    if (src == SQLITE_ROW) {
        *out = st;
        return ONCE_OK;
    }
    int rrc = once__sq_reset(st);
    if (src != SQLITE_DONE)
        return once__db_err(src);
    return rrc == SQLITE_OK ? ONCE_ENOTFOUND : once__db_err(rrc);
}

/* select_row by a task's key. */
static int select_key(sq_conn *w, sq_stmt_id id, const char *principal, const char *task_id,
                      sqlite3_stmt **out)
{
    return select_row(w, out, id, "ss", principal, task_id);
}

/* Reset a statement left on a row; a reset failure overrides rc. */
static int done_row(sqlite3_stmt *st, int rc)
{
    int rrc = once__sq_reset(st);
    return rrc == SQLITE_OK ? rc : once__db_err(rrc);
}

/* The task row of r, through SQ_TASK_INSERT or, with *expect_version as
 * ?20, SQ_TASK_UPDATE: what a create and an update write first. */
static int write_task(sq_conn *w, sq_stmt_id id, const once_record *r,
                      const int64_t *expect_version)
{
    sqlite3_stmt *st;
    int rc = once__sq_stmt(w, id, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = bind_task(st, r);
    if (src == SQLITE_OK && expect_version)
        src = once__sq_bind_int64(st, 20, *expect_version);
    return once__sq_finish(st, src);
}

/* What a create and an update write after the task row (rid): the op's
 * events, then the key's delivery rows to match r->push_json (sync_push 0:
 * the key has none and r wants none). */
static int write_rest(sq_conn *w, const sq_op *op, int64_t rid, int sync_push)
{
    int rc = insert_events(w, rid, op->ev, op->nev);
    if (rc == ONCE_OK && sync_push)
        rc = once__sq_push_sync(w, op->rec);
    return rc;
}

static int op_create(sq_store *s, sq_conn *w, sq_op *op)
{
    const once_record *r = op->rec;
    sqlite3_stmt *st;

    int rc = select_key(w, SQ_TOMB_GET, r->principal, r->task_id, &st);
    if (rc == ONCE_OK) {
        rc = op->tomb ? once__sq_row_tomb(st, 0, op->tomb) : ONCE_OK;
        return done_row(st, rc == ONCE_OK ? ONCE_ETOMBSTONE : rc);
    }
    if (rc != ONCE_ENOTFOUND)
        return rc;

    rc = write_task(w, SQ_TASK_INSERT, r, NULL);
    if (rc != ONCE_OK)
        return rc;
    if (sqlite3_changes(w->db) == 0) {   /* ON CONFLICT DO NOTHING: a live record won */
        if (!op->winner)
            return ONCE_EEXISTS;
        rc = select_key(w, SQ_TASK_GET, r->principal, r->task_id, &st);
        if (rc == ONCE_ENOTFOUND)
            return ONCE_ESTORE;   /* the conflict and the read disagree: no verdict */
        if (rc != ONCE_OK)
            return rc;
        rc = once__sq_row_record(st, 0, op->winner);
        return done_row(st, rc == ONCE_OK ? ONCE_EEXISTS : rc);
    }
    /* The row just inserted: rid counts up from the table's largest */
    return write_rest(w, op, sqlite3_last_insert_rowid(w->db), r->push_json != NULL);
}

static int op_update(sq_store *s, sq_conn *w, sq_op *op)
{
    const once_record *r = op->rec;
    sqlite3_stmt *st;

    int rc = select_key(w, SQ_TASK_HEAD, r->principal, r->task_id, &st);
    if (rc == ONCE_ENOTFOUND) {
        once__store_seterr(&s->base, "update of %s: no record", r->task_id);
        return ONCE_ECONFLICT;
    }
    if (rc != ONCE_OK)
        return rc;
    int64_t version = sqlite3_column_int64(st, 0);
    int64_t generation = sqlite3_column_int64(st, 1);
    int64_t rid = sqlite3_column_int64(st, 2);
    rc = done_row(st, ONCE_OK);
    if (rc != ONCE_OK)
        return rc;
    if (version != op->expect_version) {
        once__store_seterr(&s->base, "update of %s: version moved", r->task_id);
        return ONCE_ECONFLICT;
    }
    rc = once__store_valid_events(&s->base, generation, r, op->ev, op->nev);
    if (rc != ONCE_OK)
        return rc;

    rc = write_task(w, SQ_TASK_UPDATE, r, &op->expect_version);
    if (rc == ONCE_OK && sqlite3_changes(w->db) != 1)
        rc = ONCE_ESTORE;   /* we hold the write lock: the row cannot have moved */
    if (rc != ONCE_OK)
        return rc;
    return write_rest(w, op, rid, 1);
}

/* A key to entomb, copied out of the pick query before rows are changed. */
typedef struct sweep_key {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    char first_digest[ONCE_DIGEST_HEX + 1];
    int64_t finished_at;
    int64_t rid;
} sweep_key;

static int copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (!t || n >= cap)
        return ONCE_ECORRUPT;
    memcpy(dst, t, n);
    dst[n] = '\0';
    return ONCE_OK;
}

static int sweep_pick(sq_conn *w, sq_op *op, sweep_key **keys, size_t *nkeys)
{
    sqlite3_stmt *st;
    size_t cap = 0;
    int rc = once__sq_stmt(w, SQ_SWEEP_PICK, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind(st, 1, "ii", op->before, op->max > INT64_MAX ? -1 : (int64_t)op->max);
    while (rc == ONCE_OK && (src == SQLITE_OK || src == SQLITE_ROW)) {
        if ((src = once__sq_step(st)) != SQLITE_ROW)
            break;
        if (*nkeys == cap && (rc = once__grow(keys, &cap, sizeof **keys, 16)) != ONCE_OK)
            break;
        sweep_key *k = &(*keys)[*nkeys];
        rc = copy_col(k->principal, sizeof k->principal, st, 0);
        if (rc == ONCE_OK)
            rc = copy_col(k->task_id, sizeof k->task_id, st, 1);
        if (rc == ONCE_OK) {
            const unsigned char *d = sqlite3_column_text(st, 2);
            if (!d)
                rc = ONCE_ESTORE;
            else
                once__digests_first((const char *)d, k->first_digest);
        }
        k->finished_at = sqlite3_column_int64(st, 3);
        k->rid = sqlite3_column_int64(st, 4);
        if (rc == ONCE_OK)
            (*nkeys)++;
    }
    int rrc = once__sq_reset(st);
    if (rc != ONCE_OK)
        return rc;
    if (src != SQLITE_DONE)
        return once__db_err(src);
    return rrc == SQLITE_OK ? ONCE_OK : once__db_err(rrc);
}

static int entomb(sq_conn *w, const sweep_key *k, int64_t now)
{
    int rc = once__sq_run_bound(w, SQ_TOMB_INSERT, "sssii", k->principal, k->task_id,
                                k->first_digest, k->finished_at, now);
    if (rc == ONCE_OK)
        rc = once__sq_run_bound(w, SQ_EVENTS_DELETE, "i", k->rid);
    if (rc == ONCE_OK)
        rc = once__sq_run_bound(w, SQ_TASK_DELETE, "i", k->rid);
    if (rc == ONCE_OK)
        rc = once__sq_run_bound(w, SQ_PUSH_DELETE_KEY, "ss", k->principal, k->task_id);
    return rc;
}

static int op_sweep(sq_store *s, sq_conn *w, sq_op *op)
{
    (void)s;
    sweep_key *keys = NULL;
    size_t nkeys = 0;
    int rc = sweep_pick(w, op, &keys, &nkeys);
    for (size_t i = 0; rc == ONCE_OK && i < nkeys; i++)
        rc = entomb(w, &keys[i], op->now);
    once_free(keys);
    if (rc == ONCE_OK)
        *op->n = nkeys;
    return rc;
}

/* One compacted task's task_json and journal into packed, deflated (the
 * layout pack.h gives), when that is smaller (else they stay as they are).
 * The packed row is a new one under a new rid: its events move with it. */
static int pack_texts(sq_store *s, sq_conn *w, int64_t rid)
{
    sqlite3_stmt *st;
    int rc = select_row(w, &st, SQ_TASK_TEXTS, "i", rid);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOTFOUND ? ONCE_OK : rc;   /* packed already */
    const char *tj = (const char *)sqlite3_column_text(st, 0);
    const char *jn = (const char *)sqlite3_column_text(st, 1);
    size_t tl = (size_t)sqlite3_column_bytes(st, 0), jl = jn ? (size_t)sqlite3_column_bytes(st, 1) : 0;
    unsigned char *buf = NULL;
    size_t out = 0;
    rc = tj ? once__pack_texts(&s->zip, tj, tl, jn, jl, &buf, &out) : ONCE_ENOMEM;
    rc = done_row(st, rc);
    if (rc == ONCE_OK && (rc = once__sq_stmt(w, SQ_TASK_PACK, &st)) == ONCE_OK) {
        int src = once__sq_bind_int64(st, 1, rid);
        if (src == SQLITE_OK)
            src = sqlite3_bind_blob(st, 2, buf, (int)out, SQLITE_STATIC);
        rc = once__sq_finish(st, src);
        if (rc == ONCE_OK && sqlite3_changes(w->db) == 1)
            rc = once__sq_run_bound(w, SQ_EVENTS_MOVE, "ii", rid,
                                    (int64_t)sqlite3_last_insert_rowid(w->db));
    }
    once_free(buf);
    return rc == ONCE_ERANGE ? ONCE_OK : rc;   /* ERANGE: deflated, it would not be smaller */
}

/* Compaction: each finished task past the mark and the age keeps only its
 * last event, its payload emptied (store.h, the compact rule: readers are
 * given the task as it ended in place of what they missed), and its
 * task_json and journal deflated into packed (pack_texts), unless a push
 * delivery is still owed: that task keeps its events, and the mark passes
 * it. It starts after op->from and leaves in op->mark where it stopped (a
 * batch run again starts from op->from again); the caller keeps that when
 * this commits. */
static int op_compact(sq_store *s, sq_conn *w, sq_op *op)
{
    const sq_mark *m = op->from;
    sqlite3_stmt *st;
    int rc = once__sq_stmt(w, SQ_COMPACT_PICK, &st);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_bind(st, 1, "iissi", op->before, m->finished_at, m->principal,
                            m->task_id, (int64_t)op->max);
    typedef struct pick {
        sq_mark at;
        int64_t generation;
        int64_t rid;
        int owed;
    } pick;
    pick *v = NULL;
    size_t nv = 0, cap = 0;
    while (rc == ONCE_OK && src == SQLITE_OK && (src = once__sq_step(st)) == SQLITE_ROW) {
        if (nv == cap && (rc = once__grow(&v, &cap, sizeof *v, 16)) != ONCE_OK)
            break;
        pick *k = &v[nv];
        rc = copy_col(k->at.principal, sizeof k->at.principal, st, 0);
        if (rc == ONCE_OK)
            rc = copy_col(k->at.task_id, sizeof k->at.task_id, st, 1);
        k->generation = sqlite3_column_int64(st, 2);
        k->at.finished_at = sqlite3_column_int64(st, 3);
        k->rid = sqlite3_column_int64(st, 4);
        k->owed = sqlite3_column_int(st, 5);
        if (rc == ONCE_OK)
            nv++;
        src = SQLITE_OK;
    }
    int rrc = once__sq_reset(st);
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__db_err(src);
    if (rc == ONCE_OK && rrc != SQLITE_OK)
        rc = once__db_err(rrc);
    for (size_t i = 0; rc == ONCE_OK && i < nv; i++) {
        if (!v[i].owed) {
            rc = once__sq_run_bound(w, SQ_EVENTS_TRIM, "ii", v[i].rid, v[i].generation);
            if (rc == ONCE_OK)
                rc = once__sq_run_bound(w, SQ_EVENT_EMPTY, "ii", v[i].rid, v[i].generation);
            if (rc == ONCE_OK)
                rc = pack_texts(s, w, v[i].rid);
        }
        if (rc == ONCE_OK)
            *op->mark = v[i].at;
    }
    once_free(v);
    if (rc == ONCE_OK)
        *op->n = nv;   /* looked at: a short batch means the mark caught up */
    return rc;
}

static int op_purge(sq_store *s, sq_conn *w, sq_op *op)
{
    (void)s;
    int rc = once__sq_run_bound(w, SQ_PURGE, "ii", op->before,
                                op->max > INT64_MAX ? -1 : (int64_t)op->max);
    if (rc == ONCE_OK)
        *op->n = (size_t)sqlite3_changes(w->db);
    return rc;
}

static int op_meta(sq_store *s, sq_conn *w, sq_op *op)
{
    sqlite3_stmt *st;
    (void)s;
    int rc = once__sq_run_bound(w, SQ_META_INSERT, "ss", op->name, op->init_value);
    if (rc == ONCE_OK)
        rc = once__sq_stmt_bind(w, SQ_META_GET, &st, "s", op->name);
    if (rc != ONCE_OK)
        return rc;
    int src = once__sq_step(st);
    if (src == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        rc = !v ? ONCE_ESTORE : (*op->out = once_strdup((const char *)v)) ? ONCE_OK : ONCE_ENOMEM;
        src = SQLITE_DONE;
    } else if (src == SQLITE_DONE) {
        rc = ONCE_ESTORE;   /* just inserted under the write lock: must be there */
    }
    int rrc = once__sq_reset(st);
    if (rc == ONCE_OK && src != SQLITE_DONE)
        rc = once__db_err(src);
    if (rc == ONCE_OK && rrc != SQLITE_OK)
        rc = once__db_err(rrc);
    return rc;
}

/* Test hook: the writer's PRAGMA synchronous, read as an op so that only
 * the leader touches the writer connection. */
static int op_sync(sq_store *s, sq_conn *w, sq_op *op)
{
    (void)s;
    sqlite3_stmt *st;
    int src = once__sq_prepare(w->db, "PRAGMA synchronous", &st);
    if (src == SQLITE_OK)
        src = once__sq_step(st);
    if (src == SQLITE_ROW)
        *op->n = (size_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return src == SQLITE_ROW ? ONCE_OK : once__db_err(src == SQLITE_DONE ? SQLITE_ERROR : src);
}

/* What runs each kind of op, indexed by sq_op_kind. */
static const sq_op_fn op_fns[] = {
    [SQ_OP_CREATE] = op_create,
    [SQ_OP_UPDATE] = op_update,
    [SQ_OP_SWEEP] = op_sweep,
    [SQ_OP_PURGE] = op_purge,
    [SQ_OP_META] = op_meta,
    [SQ_OP_SYNC] = op_sync,
    [SQ_OP_PUSH_CLAIM] = once__sq_op_push_claim,
    [SQ_OP_PUSH_ACK] = once__sq_op_push_ack,
    [SQ_OP_RENEW] = once__sq_op_renew,
    [SQ_OP_REPLICA] = once__sq_op_replica,
    [SQ_OP_COMPACT] = op_compact,
};

int once__sq_op_exec(sq_store *s, sq_conn *w, sq_op *op)
{
    size_t k = (size_t)op->kind;
    int rc = k < sizeof op_fns / sizeof op_fns[0] ? op_fns[k](s, w, op) : ONCE_ERROR;
    if (rc == ONCE_ESTORE || rc == ONCE_EBUSY || rc == ONCE_ENOMEM || rc == ONCE_ECORRUPT)
        once__sq_seterr(s, w->db, "write", rc);
    if (rc != ONCE_OK && rc != ONCE_EEXISTS && rc != ONCE_ETOMBSTONE)
        once__sq_op_discard(op);
    return rc;
}

void once__sq_op_discard(sq_op *op)
{
    switch (op->kind) {
    case SQ_OP_CREATE:
        if (op->winner)
            once_record_clear(op->winner);
        if (op->tomb)
            memset(op->tomb, 0, sizeof *op->tomb);
        break;
    case SQ_OP_SWEEP:
    case SQ_OP_PURGE:
    case SQ_OP_SYNC:
        *op->n = 0;
        break;
    case SQ_OP_META:
        once_free(*op->out);
        *op->out = NULL;
        break;
    case SQ_OP_PUSH_CLAIM:
        once_push_claim_list_clear(op->claims);
        break;
    default:
        break;
    }
}
