/*
 * pg_write.c -- the PostgreSQL backend's writes: create, update, renew,
 * sweep (and then pg_compact.c's compaction), purge, meta.
 *
 * create is one INSERT ... ON CONFLICT DO NOTHING RETURNING whose CTE also
 * inserts the events when (and only when) the row went in; the loser then
 * reads what the key holds: the winner's record (EEXISTS) or a tombstone
 * (ETOMBSTONE; tombstones live in the same table, so the primary key
 * arbitrates records and tombstones alike). update is one
 * UPDATE ... WHERE version = expected AND generation = base whose CTE
 * appends the events; when it matches nothing, one more read tells
 * ECONFLICT from EINVAL in store_int.h's order. Both are single
 * autocommit statements: all or nothing, one round trip on the happy path.
 * Concurrent ones share a transaction and a round trip (pg_batch.c); a
 * write that did not match there runs here alone for its diagnosis.
 * A record carrying push_json is the exception: its delivery rows are
 * reshaped from the stored ones (pg_push.c), so that statement and the row
 * writes share one explicit transaction. renew is one UPDATE of lease_until
 * whose statement also says whether the key holds a live record, so its
 * refusals need no second round trip either.
 */
#include <string.h>

#include "core/decide.h"
#include "store/pg/pg_int.h"
#include "store/store_int.h"

static pg_store *pgs(once_store *s)
{
    return (pg_store *)s;
}

/* p initialised with $1..$20: the record's columns in PG_TASK_WRITE_COLS order
 * plus its first digest, which it writes into fd (fd must outlive p). */
static void bind_record(pg_params *p, const once_record *rec, char *fd)
{
    once__digests_first(rec->digests, fd);
    once__pg_p_init(p);
    once__pg_p_str(p, rec->principal);
    once__pg_p_str(p, rec->task_id);
    once__pg_p_str(p, rec->context_id);
    once__pg_p_i16(p, (int)rec->state);
    once__pg_p_i16(p, (int)rec->kind);
    once__pg_p_i64(p, rec->version);
    once__pg_p_i64(p, rec->generation);
    once__pg_p_i64(p, rec->fence);
    once__pg_p_i64(p, rec->step);
    once__pg_p_str(p, rec->lease_owner);
    once__pg_p_i64(p, rec->lease_until);
    once__pg_p_i64(p, rec->created_at);
    once__pg_p_i64(p, rec->updated_at);
    once__pg_p_i64(p, rec->finished_at);
    once__pg_p_str(p, rec->digests);
    once__pg_p_str(p, rec->task_json);
    once__pg_p_str(p, rec->checkpoint);
    once__pg_p_str(p, rec->push_json);
    once__pg_p_str(p, rec->journal);
    once__pg_p_str(p, fd);
}

/* First row, first column of a count(*) result. */
static int64_t count_of(PGresult *r)
{
    int64_t n = PQntuples(r) == 1 ? once__pg_i64(r, 0, 0) : 0;
    PQclear(r);
    return n;
}

/* Statement id (a create or an update of rec) on c, with rec's push rows
 * in the same transaction when it has any: ONCE_OK with *hit = 1 once it
 * wrote its one row (and its push rows committed with it), ONCE_OK with
 * *hit = 0 when it matched no row (rolled back: the caller finds out why),
 * or the failure. */
static int write_row(pg_store *s, pg_conn *c, pg_stmt_id id, const pg_params *p,
                     const once_record *rec, int *hit)
{
    PGresult *r;
    int rc;

    *hit = 0;
    if (rec->push_json && (rc = once__pg_begin(s, c)) != ONCE_OK)
        return rc;
    rc = once__pg_exec(s, c, id, p, &r);
    if (rc != ONCE_OK)
        return rc;
    if (count_of(r) != 1) {
        once__pg_rollback(c);
        return ONCE_OK;
    }
    *hit = 1;
    if (!rec->push_json)
        return ONCE_OK;
    rc = once__pg_push_sync(s, c, rec);
    return rc == ONCE_OK ? once__pg_commit(s, c) : rc;
}

/* A create or update of a record without push_json through the group
 * commit (pg_batch.c): ONCE_OK once its batch committed it, PG_ALONE when
 * it did not write (the key taken, the version moved, the batch rolled
 * back) -- the caller then runs its own statement and diagnosis alone -- or
 * an error, ONCE_ESTORE when the commit is in doubt. */
static int batched(pg_store *s, pg_stmt_id id, const pg_params *p, const once_record *rec)
{
    pg_bop b;
    int rc;

    if (rec->push_json) /* its delivery rows need their own transaction */
        return PG_ALONE;
    b.id = id;
    b.p = p;
    b.principal = rec->principal;
    b.task_id = rec->task_id;
    rc = once__pg_batch_write(s, &b);
    return rc == ONCE_OK && b.count != 1 ? PG_ALONE : rc;
}

/* The end a create and an update share: through a batch when may_batch,
 * else (or when the batch did not write it) alone by fn; p is freed either
 * way. */
static int write_record(pg_store *s, pg_stmt_id id, pg_params *p, const once_record *rec,
                        int may_batch, pg_fn fn, void *arg)
{
    int rc = may_batch ? batched(s, id, p, rec) : PG_ALONE;
    if (rc == PG_ALONE)
        rc = once__pg_run(s, fn, arg);
    once__pg_p_free(p);
    return rc;
}

/* ------------------------------------------------------------------------ */

typedef struct create_arg {
    const pg_params *p;
    const once_record *rec;
    once_record *winner;
    once_tombstone *tomb;
} create_arg;

static int create_fn(pg_store *s, pg_conn *c, void *arg)
{
    create_arg *a = arg;
    int tries, rc, hit;

    if (a->winner)
        once_record_clear(a->winner);
    /* The loser's read finds nothing only if the key was freed in between
     * (tombstone purged): then the key is absent again, so insert again. */
    for (tries = 0; tries < 3; tries++) {
        rc = write_row(s, c, PG_CREATE, a->p, a->rec, &hit);
        if (rc != ONCE_OK || hit)
            return rc;
        rc = once__pg_read_key(s, c, a->rec->principal, a->rec->task_id, a->winner, a->tomb);
        if (rc == ONCE_OK)
            return ONCE_EEXISTS;
        if (rc != ONCE_ENOTFOUND)
            return rc;
    }
    once__store_seterr(&s->base, "create of %s: key keeps changing under the insert",
                       a->rec->task_id);
    return ONCE_ESTORE;
}

int once__pg_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                    once_record *winner, once_tombstone *tomb)
{
    char fd[ONCE_DIGEST_HEX + 1];
    create_arg a;
    pg_params p;
    int rc = ONCE_OK;

    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    bind_record(&p, rec, fd);
    rc = once__pg_p_payloads(&p, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    a.p = &p;
    a.rec = rec;
    a.winner = winner;
    a.tomb = tomb;
    return write_record(pgs(s), PG_CREATE, &p, rec, 1, create_fn, &a);
}

/* The create_start slot (once/store.h): its statement through the
 * group commit, told by landed. It never runs alone: a create the batch
 * did not write (the key taken or entombed, a batch rolled back, nothing
 * sent) is ONCE_ECONFLICT, nothing stored, and the caller decides again
 * from what is stored; one in doubt is ONCE_ESTORE. */
typedef struct pg_async {
    once__batch_op op;
    pg_bop b;
    pg_params p;
    char fd[ONCE_DIGEST_HEX + 1];
    void (*done)(void *arg, int rc);
    void *arg;
} pg_async;

static void async_landed(once__batch_op *op)
{
    pg_async *a = (pg_async *)op;
    void (*done)(void *, int) = a->done;
    void *arg = a->arg;
    int rc = op->rc;

    if (rc == PG_ALONE || (rc == ONCE_OK && a->b.count != 1))
        rc = ONCE_ECONFLICT;
    once__pg_p_free(&a->p);
    once_free(a);
    done(arg, rc);
}

int once__pg_create_start(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                          void (*done)(void *arg, int rc), void *arg)
{
    pg_async *a;
    int rc;

    /* once_store_create_start asked the caps first: batch=0 turns the
     * slot off, and a record's delivery rows need their own transaction. */
    if (pgs(s)->batch_leaders == 0 || rec->push_json)
        return ONCE_EUNSUPPORTED;
    a = once_calloc(1, sizeof *a);
    if (!a)
        return ONCE_ENOMEM;
    bind_record(&a->p, rec, a->fd);
    rc = once__pg_p_payloads(&a->p, ev, nev);
    if (rc != ONCE_OK) {
        once__pg_p_free(&a->p);
        once_free(a);
        return rc;
    }
    a->b.id = PG_CREATE;
    a->b.p = &a->p;
    a->b.principal = rec->principal;
    a->b.task_id = rec->task_id;
    a->op.arg = &a->b;
    a->op.landed = async_landed;
    a->done = done;
    a->arg = arg;
    rc = once__batch_submit_async(&pgs(s)->batch, &a->op);
    if (rc != ONCE_OK) {
        once__pg_p_free(&a->p);
        once_free(a);
    }
    return rc;
}

/* ------------------------------------------------------------------------ */

typedef struct update_arg {
    const pg_params *p;
    const once_record *rec;
    int64_t expect;
    const once_event *ev;
    size_t nev;
    int numbered; /* the events continue rec->generation - nev */
} update_arg;

/* Why the UPDATE matched nothing. ONCE_OK means it should have matched
 * (the row changed and changed back between the two statements): retry. */
static int diagnose(pg_store *s, pg_conn *c, const update_arg *a)
{
    pg_params p;
    PGresult *r;
    int64_t version, generation;
    int rc, tomb, rows;

    once__pg_p_init(&p);
    once__pg_p_str(&p, a->rec->principal);
    once__pg_p_str(&p, a->rec->task_id);
    rc = once__pg_exec(s, c, PG_HEAD, &p, &r);
    if (rc != ONCE_OK)
        return rc;
    rows = PQntuples(r);
    tomb = rows ? (int)once__pg_i64(r, 0, 0) : 0;
    version = rows ? once__pg_i64(r, 0, 1) : 0;
    generation = rows ? once__pg_i64(r, 0, 2) : 0;
    PQclear(r);
    if (!rows || tomb || version != a->expect) {
        once__store_seterr(&s->base, "update of %s: %s", a->rec->task_id,
                           !rows || tomb ? "no record" : "version moved");
        return ONCE_ECONFLICT;
    }
    rc = once__store_valid_events(&s->base, generation, a->rec, a->ev, a->nev);
    if (rc != ONCE_OK)
        return rc;
    return a->numbered ? ONCE_OK : ONCE_EINVAL;
}

static int update_fn(pg_store *s, pg_conn *c, void *arg)
{
    update_arg *a = arg;
    int tries, rc, hit;

    for (tries = 0; tries < 3; tries++) {
        if (a->numbered) {
            rc = write_row(s, c, PG_UPDATE, a->p, a->rec, &hit);
            if (rc != ONCE_OK || hit)
                return rc;
        }
        rc = diagnose(s, c, a);
        if (rc != ONCE_OK)
            return rc;
    }
    once__store_seterr(&s->base, "update of %s: row keeps changing", a->rec->task_id);
    return ONCE_ESTORE;
}

int once__pg_update(once_store *s, const once_record *rec, int64_t expect_version,
                    const once_event *ev, size_t nev)
{
    char fd[ONCE_DIGEST_HEX + 1];
    update_arg a;
    pg_params p;
    int64_t base;
    int rc = ONCE_OK;

    /* The only stored generation these events can continue. If they cannot
     * continue any, the statement is skipped and diagnose() still reports
     * ECONFLICT first when the version moved (store_int.h's order). */
    base = rec->generation - (int64_t)nev;
    memset(&a, 0, sizeof a);
    a.rec = rec;
    a.expect = expect_version;
    a.ev = ev;
    a.nev = nev;
    a.numbered = base >= 0 && once__store_valid_events(s, base, rec, ev, nev) == ONCE_OK;
    bind_record(&p, rec, fd);
    if (a.numbered)
        rc = once__pg_p_payloads(&p, ev, nev);
    else
        once__pg_p_null(&p);
    if (rc != ONCE_OK)
        return rc;
    once__pg_p_i64(&p, expect_version);
    once__pg_p_i64(&p, base);
    a.p = &p;
    return write_record(pgs(s), PG_UPDATE, &p, rec, a.numbered, update_fn, &a);
}

/* ------------------------------------------------------------------------ */

typedef struct renew_arg {
    const pg_params *p;
    const char *task_id;
} renew_arg;

static int renew_fn(pg_store *s, pg_conn *c, void *arg)
{
    renew_arg *a = arg;
    PGresult *r;
    int rc = once__pg_exec(s, c, PG_RENEW, a->p, &r);

    if (rc != ONCE_OK)
        return rc;
    if (PQntuples(r) != 1 || PQnfields(r) != 2) {
        once__store_seterr(&s->base, "postgres renew of %s: unexpected result", a->task_id);
        rc = ONCE_ESTORE;
    } else {
        rc = once__store_renew_result(&s->base, a->task_id, once__pg_i64(r, 0, 0) == 1,
                                      once__pg_i64(r, 0, 1) != 0);
    }
    PQclear(r);
    return rc;
}

/* Arguments were checked by once_store_renew. */
int once__pg_renew(once_store *s, const char *principal, const char *task_id, const char *owner,
                   int64_t fence, int64_t until)
{
    renew_arg a;
    pg_params p;

    once__pg_p_init(&p);
    once__pg_p_str(&p, principal);
    once__pg_p_str(&p, task_id);
    once__pg_p_str(&p, owner);
    once__pg_p_i64(&p, fence);
    once__pg_p_i64(&p, until);
    a.p = &p;
    a.task_id = task_id;
    return once__pg_run(pgs(s), renew_fn, &a);
}

/* ------------------------------------------------------------------------ */

typedef struct count_arg {
    pg_stmt_id id;
    const pg_params *p;
    size_t *n;
} count_arg;

static int count_fn(pg_store *s, pg_conn *c, void *arg)
{
    count_arg *a = arg;
    PGresult *r;
    int rc;

    *a->n = 0;
    rc = once__pg_exec(s, c, a->id, a->p, &r);
    if (rc == ONCE_OK)
        *a->n = (size_t)count_of(r);
    return rc;
}

/* Statement id on args[0..nargs) and max (capped at INT64_MAX), the rows
 * it counts into *n: what sweep and purge share. */
static int count_rows(once_store *s, pg_stmt_id id, const int64_t *args, int nargs, size_t max,
                      size_t *n)
{
    count_arg a = {id, NULL, n};
    pg_params p;

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    once__pg_p_init(&p);
    for (int i = 0; i < nargs; i++)
        once__pg_p_i64(&p, args[i]);
    once__pg_p_i64(&p, max > INT64_MAX ? INT64_MAX : (int64_t)max);
    a.p = &p;
    return once__pg_run(pgs(s), count_fn, &a);
}

int once__pg_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    const int64_t args[] = {finished_before, now};
    int rc = count_rows(s, PG_SWEEP, args, 2, max, n);

    /* The answer is the sweep's: what a failed compaction left, the next
     * sweep redoes. */
    if (rc == ONCE_OK)
        once__pg_compact(pgs(s), now, max);
    return rc;
}

int once__pg_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    return count_rows(s, PG_PURGE, &expired_before, 1, max, n);
}

/* ------------------------------------------------------------------------ */

typedef struct meta_arg {
    const char *name, *init;
    char **out;
} meta_arg;

static int meta_fn(pg_store *s, pg_conn *c, void *arg)
{
    meta_arg *a = arg;
    pg_params p;
    PGresult *r;
    int rc;

    once_free(*a->out);
    *a->out = NULL;
    once__pg_p_init(&p);
    once__pg_p_str(&p, a->name);
    if (a->init) {
        once__pg_p_str(&p, a->init);
        rc = once__pg_exec(s, c, PG_META_INSERT, &p, &r);
        if (rc != ONCE_OK)
            return rc;
        if (PQntuples(r) == 1) {
            rc = once__pg_dup(r, 0, 0, a->out);
            PQclear(r);
            return rc;
        }
        PQclear(r);
        p.n = 1;
    }
    /* Absent, or another process inserted first: its value is the one. */
    rc = once__pg_exec(s, c, PG_META_GET, &p, &r);
    if (rc != ONCE_OK)
        return rc;
    rc = PQntuples(r) == 1 ? once__pg_dup(r, 0, 0, a->out) : ONCE_ENOTFOUND;
    if (rc == ONCE_OK && !*a->out)
        rc = ONCE_ECORRUPT;
    PQclear(r);
    return rc;
}

int once__pg_meta(once_store *s, const char *name, const char *init_value, char **out)
{
    meta_arg a = {name, init_value, out};

    *out = NULL;
    return once__pg_run(pgs(s), meta_fn, &a);
}
