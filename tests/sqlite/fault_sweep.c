/*
 * fault_sweep.c -- fail the i-th sqlite3 call of a fixed workload, for
 * i = 1, 2, ... until a run hits no fault (SQLite's test_malloc.c idea one
 * layer up; sqlite_fault.h).
 *
 * What each run proves:
 *   - every slot returns its normal answer or a clean error (ONCE_ESTORE /
 *     ONCE_EBUSY; open may fail), never a wrong verdict: every answer,
 *     faulted or not, is checked against a model of what may be stored;
 *   - after the fault, a fresh open passes check() with zero problems;
 *   - nothing acknowledged is lost, and nothing appears that was never
 *     attempted.
 *
 * The model keeps, per key, the set of states the store may be in
 * ("candidates"): an acknowledged write narrows it to the written state; a
 * write that failed with ESTORE/EBUSY adds its state (it may or may not
 * have committed); a refusal (EEXISTS, ECONFLICT, ETOMBSTONE) must be
 * explained by some candidate. Every event payload names the write that
 * produced it, so a load or events answer identifies which candidate it saw.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "store/sqlite_fault.h"
#include "store/util.h"

#define T0 INT64_C(1000000)
#define P "p"
#define NK 5
#define NC 16     /* candidate states per key */
#define MAXG 6    /* generations per record */

typedef enum { K_NONE, K_REC, K_TOMB } kind;

/* One state a key may be in. */
typedef struct cand {
    kind k;
    char json[64];               /* K_REC: the write that made it */
    int64_t version, generation;
    int terminal;
    int renewable;               /* renew by "r1" with fence 1 may move its lease */
    int64_t finished_at, lease_until;
    char ev[MAXG + 1][40];       /* ev[g]: payload of event g (1..generation) */
    int64_t expired_at;          /* K_TOMB */
} cand;

/* Meta "secret": candidates are a bit set over absent / "s-1" / "s-2". */
enum { M_ABSENT = 1, M_S1 = 2, M_S2 = 4 };

typedef struct key {
    const char *id;
    cand c[NC];
    int n;
} key;

/* The whole model of one run. */
typedef struct model {
    key k[NK];
    int meta;                    /* M_* bits */
    long run;                    /* fault position, for messages */
} model;

static model M;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            char m_[512];                                                       \
            snprintf(m_, sizeof m_, __VA_ARGS__);                               \
            fail_msg("fault at call %ld: %s [%s]", M.run, m_, #cond);           \
        }                                                                       \
    } while (0)

static int clean_err(int rc) { return rc == ONCE_ESTORE || rc == ONCE_EBUSY; }

static key *K(const char *id)
{
    for (int i = 0; i < NK; i++)
        if (strcmp(M.k[i].id, id) == 0)
            return &M.k[i];
    fail_msg("no key %s", id);
    return NULL;
}

static void add(key *k, const cand *c)
{
    for (int i = 0; i < k->n; i++)
        if (memcmp(&k->c[i], c, sizeof *c) == 0)
            return;
    assert_true(k->n < NC);
    k->c[k->n++] = *c;
}

static void only(key *k, const cand *c)
{
    k->n = 0;
    add(k, c);
}

static int has_kind(const key *k, kind kd)
{
    for (int i = 0; i < k->n; i++)
        if (k->c[i].k == kd)
            return 1;
    return 0;
}

static const cand *rec_by_json(const key *k, const char *json)
{
    for (int i = 0; i < k->n; i++)
        if (k->c[i].k == K_REC && strcmp(k->c[i].json, json) == 0)
            return &k->c[i];
    return NULL;
}

/* The candidate a loaded record is: same write, same lease (renew moves
 * only the lease, so one write can leave several). */
static const cand *rec_by_load(const key *k, const once_record *r)
{
    for (int i = 0; i < k->n; i++)
        if (k->c[i].k == K_REC && strcmp(k->c[i].json, r->task_json) == 0 &&
            k->c[i].lease_until == r->lease_until)
            return &k->c[i];
    return NULL;
}

static const cand *rec_by_version(const key *k, int64_t v)
{
    for (int i = 0; i < k->n; i++)
        if (k->c[i].k == K_REC && k->c[i].version == v)
            return &k->c[i];
    return NULL;
}

/* ---- building writes ---- */

typedef struct wr {
    once_record rec;
    once_event ev[MAXG];
    size_t nev;
    cand after;                  /* the state if it commits */
} wr;

/* A write of key id producing json, on top of base (NULL for a create). */
static void mkwrite(wr *w, const char *id, const char *json, once_state st,
                    const cand *base, int nnew, int64_t lease_until)
{
    memset(w, 0, sizeof *w);
    int64_t v = base ? base->version + 1 : 1;
    int64_t g0 = base ? base->generation : 0;
    char tj[64];
    snprintf(tj, sizeof tj, "{\"w\":\"%s\"}", json);
    assert_int_equal(st_rec(&w->rec, P, id, st, T0, tj), 0);
    w->rec.version = v;
    w->rec.generation = g0 + nnew;
    w->rec.lease_until = lease_until;
    snprintf(w->rec.lease_owner, sizeof w->rec.lease_owner, "%s", lease_until ? "r1" : "");

    cand *a = &w->after;
    a->k = K_REC;
    snprintf(a->json, sizeof a->json, "%s", tj);
    a->version = v;
    a->generation = w->rec.generation;
    a->terminal = once_state_terminal(st);
    a->renewable = !a->terminal && !once_state_interrupted(st) && lease_until > 0;
    a->finished_at = w->rec.finished_at;
    a->lease_until = lease_until;
    if (base)
        memcpy(a->ev, base->ev, sizeof a->ev);
    for (int i = 0; i < nnew; i++) {
        int64_t g = g0 + 1 + i;
        snprintf(a->ev[g], sizeof a->ev[g], "%s#%lld", json, (long long)g);
        w->ev[i].generation = g;
        w->ev[i].payload = a->ev[g];
    }
    w->nev = (size_t)nnew;
}

static void create(once_store *s, const char *id, const char *json, once_state st, int nev,
                   int64_t finished_at)
{
    wr w;
    mkwrite(&w, id, json, st, NULL, nev, 0);
    if (finished_at) {
        w.rec.finished_at = finished_at;
        w.after.finished_at = finished_at;
    }
    once_record win;
    once_tombstone tomb;
    key *k = K(id);
    int rc = once_store_create(s, &w.rec, w.ev, w.nev, &win, &tomb);
    if (rc == ONCE_OK) {
        CHECK(has_kind(k, K_NONE), "create %s succeeded over a live key", id);
        only(k, &w.after);
    } else if (rc == ONCE_EEXISTS) {
        const cand *c = rec_by_json(k, win.task_json ? win.task_json : "");
        CHECK(c != NULL, "create %s: EEXISTS with an unknown winner", id);
        CHECK(c && win.version == c->version && win.generation == c->generation,
              "create %s: winner fields differ", id);
    } else if (rc == ONCE_ETOMBSTONE) {
        CHECK(has_kind(k, K_TOMB), "create %s: ETOMBSTONE without a tombstone", id);
        CHECK(strcmp(tomb.task_id, id) == 0, "create %s: tombstone of another key", id);
    } else {
        CHECK(clean_err(rc), "create %s: %s", id, once_errname(rc));
        add(k, &w.after);
    }
    once_record_clear(&win);
    once_record_clear(&w.rec);
}

static void update(once_store *s, const char *id, const char *json, once_state st,
                   int64_t expect, int nnew, int64_t lease_until)
{
    key *k = K(id);
    const cand *base = rec_by_version(k, expect);
    cand b0;
    if (!base) {   /* cannot commit; still send it (the store must refuse) */
        memset(&b0, 0, sizeof b0);
        b0.k = K_REC;
        b0.version = expect;
        base = &b0;
    }
    cand bc = *base;
    wr w;
    mkwrite(&w, id, json, st, &bc, nnew, lease_until);
    int rc = once_store_update(s, &w.rec, expect, w.ev, w.nev);
    if (rc == ONCE_OK) {
        CHECK(base != &b0, "update %s v%lld committed over no such version", id,
              (long long)expect);
        only(k, &w.after);
    } else if (rc == ONCE_ECONFLICT) {
        int explained = 0;
        for (int i = 0; i < k->n; i++)
            if (k->c[i].k != K_REC || k->c[i].version != expect)
                explained = 1;
        CHECK(explained, "update %s: ECONFLICT but version %lld is certain", id,
              (long long)expect);
    } else {
        CHECK(clean_err(rc), "update %s: %s", id, once_errname(rc));
        if (base != &b0)
            add(k, &w.after);
    }
    once_record_clear(&w.rec);
}

/* Renew with fence 1 (every write's): only a renewable candidate of owner
 * "r1" can take the new lease. */
static void renew(once_store *s, const char *id, const char *owner, int64_t until)
{
    key *k = K(id), was = *k;
    int mine = strcmp(owner, "r1") == 0, live = 0;
    int rc = once_store_renew(s, P, id, owner, 1, until);

    for (int i = 0; i < was.n; i++)
        live |= was.c[i].k == K_REC && !(mine && was.c[i].renewable);
    if (rc == ONCE_OK || clean_err(rc)) {
        /* OK: the store held a renewable candidate, now renewed; a clean
         * error: it may have been renewed or not. */
        if (rc == ONCE_OK)
            k->n = 0;
        for (int i = 0; i < was.n; i++) {
            cand c = was.c[i];
            if (!mine || !c.renewable)
                continue;
            c.lease_until = until;
            add(k, &c);
        }
        CHECK(k->n > 0, "renew %s: OK but no record held that lease", id);
    } else if (rc == ONCE_EFENCED) {
        CHECK(live, "renew %s: EFENCED but the lease must be renewable", id);
    } else {
        CHECK(rc == ONCE_ENOTFOUND && (has_kind(k, K_NONE) || has_kind(k, K_TOMB)),
              "renew %s: %s", id, once_errname(rc));
    }
}

/* Sweep and purge: every candidate they would act on maps to its result
 * (when it was the real state, it was acted on: max exceeds the keys). */
static int sweepable(const cand *c, int64_t before)
{
    return c->k == K_REC && c->terminal && c->finished_at < before;
}

static int purgeable(const cand *c, int64_t before)
{
    return c->k == K_TOMB && c->expired_at < before;
}

static void sweep_or_purge(once_store *s, int purge, int64_t before, int64_t now)
{
    size_t n = 99, lo = 0, hi = 0;
    int rc = purge ? once_store_purge(s, before, 100, &n)
                   : once_store_sweep(s, before, now, 100, &n);
    for (int i = 0; i < NK; i++) {
        key *k = &M.k[i];
        int any = 0, all = 1, m = k->n;
        for (int j = 0; j < m; j++) {
            cand *c = &k->c[j];
            int act = purge ? purgeable(c, before) : sweepable(c, before);
            any |= act;
            all &= act;
            if (!act)
                continue;
            cand t;
            memset(&t, 0, sizeof t);
            t.k = purge ? K_NONE : K_TOMB;
            t.expired_at = now;
            if (rc == ONCE_OK)
                *c = t;          /* acted on if it was the state */
            else
                add(k, &t);
        }
        if (rc == ONCE_OK && m > 1) {   /* drop duplicates made by the mapping */
            key tmp = *k;
            k->n = 0;
            for (int j = 0; j < tmp.n; j++)
                add(k, &tmp.c[j]);
        }
        lo += all && m ? 1 : 0;
        hi += any ? 1 : 0;
    }
    if (rc == ONCE_OK)
        CHECK(n >= lo && n <= hi, "%s: n=%zu, want %zu..%zu", purge ? "purge" : "sweep", n,
              lo, hi);
    else
        CHECK(clean_err(rc) && n == 0, "%s: %s n=%zu", purge ? "purge" : "sweep",
              once_errname(rc), n);
}

/* ---- reads, checked against the model ---- */

static void check_load(once_store *s, const char *id, int must)
{
    key *k = K(id);
    once_record r;
    once_tombstone t;
    int rc = once_store_load(s, P, id, &r, &t);
    if (rc == ONCE_OK) {
        const cand *c = rec_by_load(k, &r);
        CHECK(c != NULL, "load %s: a record no write or renewal made (%s)", id, r.task_json);
        CHECK(c && c->version == r.version && c->generation == r.generation &&
                  c->finished_at == r.finished_at && c->lease_until == r.lease_until,
              "load %s: fields differ from the write", id);
    } else if (rc == ONCE_ETOMBSTONE) {
        CHECK(has_kind(k, K_TOMB), "load %s: ETOMBSTONE but no tombstone possible", id);
    } else if (rc == ONCE_ENOTFOUND) {
        CHECK(has_kind(k, K_NONE), "load %s: ENOTFOUND but the key must hold something", id);
    } else {
        CHECK(!must && clean_err(rc), "load %s: %s", id, once_errname(rc));
    }
    once_record_clear(&r);
}

static void check_events(once_store *s, const char *id, int must)
{
    key *k = K(id);
    once_event_list l;
    int rc = once_store_events(s, P, id, 0, 0, &l);
    if (rc == ONCE_OK) {
        int ok = 0;
        for (int i = 0; i < k->n && !ok; i++) {
            const cand *c = &k->c[i];
            int64_t g = c->k == K_REC ? c->generation : 0;
            if ((int64_t)l.n != g)
                continue;
            ok = 1;
            for (size_t j = 0; j < l.n; j++)
                if (l.v[j].generation != (int64_t)j + 1 || strcmp(l.v[j].payload, c->ev[j + 1]))
                    ok = 0;
        }
        CHECK(ok, "events %s: %zu events match no possible state", id, l.n);
    } else {
        CHECK(!must && clean_err(rc), "events %s: %s", id, once_errname(rc));
    }
    once_event_list_clear(&l);
}

static void check_list(once_store *s, int must)
{
    once_list_query q = {.principal = P, .limit = 100};
    once_record_list l;
    int rc = once_store_list(s, &q, &l);
    if (rc == ONCE_OK) {
        for (int i = 0; i < NK; i++) {
            key *k = &M.k[i];
            int seen = 0;
            for (size_t j = 0; j < l.n; j++)
                if (strcmp(l.v[j].task_id, k->id) == 0) {
                    seen = 1;
                    CHECK(rec_by_json(k, l.v[j].task_json), "list %s: unknown record", k->id);
                }
            CHECK(seen || !(has_kind(k, K_REC) && k->n == 1), "list: %s missing", k->id);
            CHECK(!seen || has_kind(k, K_REC), "list: %s cannot be live", k->id);
        }
    } else {
        CHECK(!must && clean_err(rc), "list: %s", once_errname(rc));
    }
    once_record_list_clear(&l);
}

static void check_leases(once_store *s, int64_t now, int must)
{
    once_key_list l;
    int rc = once_store_expired_leases(s, now, 100, &l);
    if (rc == ONCE_OK) {
        for (int i = 0; i < NK; i++) {
            key *k = &M.k[i];
            int seen = 0, any = 0, all = k->n > 0;
            for (size_t j = 0; j < l.n; j++)
                seen |= strcmp(l.v[j].task_id, k->id) == 0;
            for (int j = 0; j < k->n; j++) {
                const cand *c = &k->c[j];
                int exp = c->k == K_REC && !c->terminal && c->lease_until > 0 &&
                          c->lease_until < now;
                any |= exp;
                all &= exp;
            }
            CHECK(!seen || any, "expired_leases: %s listed wrongly", k->id);
            CHECK(seen || !all, "expired_leases: %s missing", k->id);
        }
    } else {
        CHECK(!must && clean_err(rc), "expired_leases: %s", once_errname(rc));
    }
    once_key_list_clear(&l);
}

static int meta_bit(const char *v)
{
    return !v ? M_ABSENT : strcmp(v, "s-1") == 0 ? M_S1 : strcmp(v, "s-2") == 0 ? M_S2 : 0;
}

static void meta(once_store *s, const char *init, int must)
{
    char *v = NULL;
    int rc = once_store_meta(s, "secret", init, &v);
    if (rc == ONCE_OK) {
        int b = meta_bit(v);
        CHECK(b && ((M.meta & b) || (b == meta_bit(init) && (M.meta & M_ABSENT))),
              "meta: value %s cannot be stored", v);
        M.meta = b;
    } else if (rc == ONCE_ENOTFOUND) {
        CHECK(!init && (M.meta & M_ABSENT), "meta: ENOTFOUND but a value must exist");
        M.meta = M_ABSENT;
    } else {
        CHECK(!must && clean_err(rc), "meta: %s", once_errname(rc));
        if (init && (M.meta & M_ABSENT))
            M.meta |= meta_bit(init);
    }
    once_free(v);
}

static void model_reset(long run)
{
    static const char *ids[NK] = {"t1", "t2", "t3", "t4", "t5"};
    memset(&M, 0, sizeof M);
    M.run = run;
    for (int i = 0; i < NK; i++) {
        M.k[i].id = ids[i];
        M.k[i].n = 1;      /* c[0] is K_NONE */
    }
    M.meta = M_ABSENT;
}

static void reads(once_store *s, int must)
{
    for (int i = 0; i < NK; i++) {
        check_load(s, M.k[i].id, must);
        check_events(s, M.k[i].id, must);
    }
    check_list(s, must);
    check_leases(s, T0 + 100, must);
}

/* The workload; any step may meet the armed fault. */
static void workload(once_store *s)
{
    meta(s, "s-1", 0);
    create(s, "t1", "t1.v1", ONCE_STATE_WORKING, 1, 0);
    create(s, "t2", "t2.v1", ONCE_STATE_WORKING, 2, 0);
    create(s, "t3", "t3.v1", ONCE_STATE_COMPLETED, 1, T0 + 1);
    create(s, "t4", "t4.v1", ONCE_STATE_INPUT_REQUIRED, 1, 0);
    create(s, "t5", "t5.v1", ONCE_STATE_FAILED, 2, T0 + 50);
    create(s, "t1", "t1.loser", ONCE_STATE_WORKING, 1, 0);
    update(s, "t2", "t2.v2", ONCE_STATE_WORKING, 1, 1, 0);
    update(s, "t2", "t2.v3", ONCE_STATE_WORKING, 2, 1, T0 + 10);
    update(s, "t2", "t2.stale", ONCE_STATE_WORKING, 1, 1, 0);
    renew(s, "t2", "r1", T0 + 500);             /* off the expired list of reads() */
    renew(s, "t2", "r2", T0 + 600);             /* not its owner */
    renew(s, "t4", "r1", T0 + 600);             /* interrupted, no lease */
    meta(s, "s-2", 0);
    reads(s, 0);
    sweep_or_purge(s, 0, T0 + 2, T0 + 200);     /* t3 */
    create(s, "t3", "t3.again", ONCE_STATE_WORKING, 1, 0);
    sweep_or_purge(s, 0, T0 + 100, T0 + 400);   /* t5 */
    renew(s, "t5", "r1", T0 + 600);             /* a tombstone */
    sweep_or_purge(s, 1, T0 + 300, 0);          /* t3's tombstone */
    update(s, "t4", "t4.v2", ONCE_STATE_COMPLETED, 1, 1, 0);
    reads(s, 0);
    meta(s, NULL, 0);
}

static void open_url(char *url, size_t n, const char *file)
{
    snprintf(url, n, "sqlite:%s?synchronous=off", file);   /* faults, not fsyncs, are under test */
}

static char path[4096];   /* the run's database; teardown removes it even on failure */

/* One run with the fault armed at call i; 1 if the fault was hit. */
static int one_run(long i, int code)
{
    char url[4200];
    char err[256];
    once_store *s = NULL;

    st_remove_db(path);
    model_reset(i);
    open_url(url, sizeof url, path);
    once__sqlite_fault_code(code);
    long before = once__sqlite_faults();
    once__sqlite_fault_at(i);
    int rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc == ONCE_OK) {
        workload(s);
        once_store_close(s);
    } else {
        CHECK(clean_err(rc) && s == NULL, "open: %s (%s)", once_errname(rc), err);
    }
    once__sqlite_fault_at(-1);
    int hit = once__sqlite_faults() != before;

    /* Reopen clean: everything acknowledged is there, nothing else is. */
    rc = once_store_open(url, NULL, &s, err, sizeof err);
    CHECK(rc == ONCE_OK, "reopen: %s (%s)", once_errname(rc), err);
    once_check_report rep;
    rc = once_store_check(s, &rep);
    CHECK(rc == ONCE_OK && st_clean(&rep), "check: %s %s", once_errname(rc), rep.first_problem);
    reads(s, 1);
    meta(s, NULL, 1);
    once_store_close(s);
    return hit;
}

static int setup(void **state)
{
    (void)state;
    return st_tmp_path(path, sizeof path, "fault");
}

static int teardown(void **state)
{
    (void)state;
    once__sqlite_fault_at(-1);
    st_remove_db(path);
    return 0;
}

static void sweep(int code)
{
    long runs = 0;
    long calls0 = once__sqlite_calls();
    for (long i = 1;; i++) {
        runs++;
        if (!one_run(i, code))
            break;
        assert_true(i < 100000);
    }
    fprintf(stderr, "fault sweep (%s): %ld runs, %ld wrapped calls\n", sqlite3_errstr(code),
            runs, once__sqlite_calls() - calls0);
    assert_true(runs > 100);   /* the workload really went through the wrappers */
}

static void sweep_ioerr(void **state)
{
    (void)state;
    sweep(SQLITE_IOERR);
}

static void sweep_busy(void **state)
{
    (void)state;
    sweep(SQLITE_BUSY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sweep_ioerr, setup, teardown),
        cmocka_unit_test_setup_teardown(sweep_busy, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
