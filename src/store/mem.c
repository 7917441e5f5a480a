/*
 * mem.c -- the "memory:" store backend: one process, nothing durable, every
 * open a fresh empty store ("memory:" or "memory:<label>", label ignored).
 *
 * A chained hash table maps (principal, task_id) to one entry that holds
 * either a live record with its events or a tombstone (never both, and a
 * tombstone holds no events). One mutex guards everything, so each slot is
 * trivially atomic: a create or update either publishes the record and all
 * its events or nothing. Copies are made outside the lock where possible so
 * that a failed allocation never leaves a half-applied write.
 *
 * Scans (leases, sweep, purge, list, push_claim) walk the whole table:
 * O(records) per call, fine for tests, the demo and a single process.
 *
 * Push delivery rows (ONCE_STORE_PUSH) live in the entry beside the record,
 * reshaped by once__push_sync in the same critical section as the record
 * write that implies it, and dropped with the record when it is entombed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decide.h"
#include "store/store_int.h"

/* One key. All fields are guarded by mem_store.lock. rec.principal and
 * rec.task_id hold the key in both shapes; the rest of rec is zero (no
 * strings) while is_tomb is set. ev[0..nev) are the events, ascending,
 * numbered 1..rec.generation. push[0..npush) are the delivery rows, one per
 * element of rec.push_json, in its order (none while is_tomb). */
typedef struct mem_entry {
    struct mem_entry *next;   /* hash chain */
    uint64_t hash;
    int is_tomb;
    once_record rec;
    once_tombstone tomb;      /* valid while is_tomb */
    once_event *ev;
    size_t nev, cap;
    once_push_row *push;
    size_t npush;
} mem_entry;

/* A named store-wide value; immutable once inserted (insert-if-absent). */
typedef struct mem_meta {
    struct mem_meta *next;
    char *name;
    char *value;
} mem_meta;

/* The handle. lock guards tab, ntab, count and meta (and every entry). */
typedef struct mem_store {
    once_store base;
    pthread_mutex_t lock;
    mem_entry **tab;
    size_t ntab;              /* power of two */
    size_t count;
    size_t push_rows;         /* delivery rows over all entries; 0 lets push_claim
                                 skip its scan (most stores never use push) */
    mem_meta *meta;
} mem_store;

#define MEM_INITIAL_BUCKETS 64

static uint64_t key_hash(const char *principal, const char *task_id)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    const unsigned char *p;

    for (p = (const unsigned char *)principal; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;     /* separator no string byte equals */
    for (p = (const unsigned char *)task_id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* The link that points at the key's entry, or at the chain's terminating
 * NULL when the key is absent (so *slot = e inserts). */
static mem_entry **find_slot(mem_store *ms, const char *principal, const char *task_id,
                             uint64_t h)
{
    mem_entry **slot = &ms->tab[h & (ms->ntab - 1)];

    for (; *slot; slot = &(*slot)->next) {
        mem_entry *e = *slot;
        if (e->hash == h && strcmp(e->rec.task_id, task_id) == 0 &&
            strcmp(e->rec.principal, principal) == 0)
            break;
    }
    return slot;
}

static mem_entry *find(mem_store *ms, const char *principal, const char *task_id)
{
    return *find_slot(ms, principal, task_id, key_hash(principal, task_id));
}

/* Double the table when it is fuller than one entry per bucket. A failed
 * allocation just leaves longer chains. */
static void maybe_grow(mem_store *ms)
{
    mem_entry **nt;
    size_t n, i;

    if (ms->count <= ms->ntab)
        return;
    n = ms->ntab * 2;
    nt = once_calloc(n, sizeof *nt);
    if (!nt)
        return;
    for (i = 0; i < ms->ntab; i++) {
        mem_entry *e = ms->tab[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = nt[e->hash & (n - 1)];
            nt[e->hash & (n - 1)] = e;
        }
    }
    once_free(ms->tab);
    ms->tab = nt;
    ms->ntab = n;
}

static void free_events(once_event *v, size_t n)
{
    size_t i;

    for (i = 0; i < n && v; i++)
        once_free(v[i].payload);
    once_free(v);
}

/* Deep copy of ev[0..n) into a fresh array (NULL when n == 0). */
static int copy_events(const once_event *ev, size_t n, once_event **out)
{
    once_event *v;
    size_t i;

    *out = NULL;
    if (n == 0)
        return ONCE_OK;
    v = once_calloc(n, sizeof *v);
    if (!v)
        return ONCE_ENOMEM;
    for (i = 0; i < n; i++) {
        v[i].generation = ev[i].generation;
        v[i].payload = once_strdup(ev[i].payload);
        if (!v[i].payload) {
            free_events(v, i);
            return ONCE_ENOMEM;
        }
    }
    *out = v;
    return ONCE_OK;
}

static void entry_free(mem_entry *e)
{
    if (!e)
        return;
    once_record_clear(&e->rec);
    free_events(e->ev, e->nev);
    once_free(e->push);
    once_free(e);
}

/* The elements of rec->push_json and room for their rows, prepared outside
 * the lock so that applying them under it cannot fail. */
typedef struct push_prep {
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t n;
    once_push_row *rows;      /* n rows, or NULL when n == 0 */
} push_prep;

static int push_prepare(const once_record *rec, push_prep *p)
{
    int rc = once__push_elems(rec->push_json, p->el, &p->n);
    p->rows = NULL;
    if (rc != ONCE_OK)
        return rc;
    if (p->n && !(p->rows = once_calloc(p->n, sizeof *p->rows)))
        return ONCE_ENOMEM;
    return ONCE_OK;
}

/* Under the lock: reshape e's rows for its new record (target = its
 * generation). The old array goes back in p->rows for freeing outside. */
static void push_apply(mem_entry *e, push_prep *p)
{
    once_push_row *old = e->push;
    once__push_sync(old, e->npush, p->el, p->n, e->rec.generation, p->rows);
    e->push = p->n ? p->rows : NULL;
    e->npush = p->n;
    if (!p->n)
        once_free(p->rows);
    p->rows = old;
}

/* Pointers to every entry match() accepts, in a fresh array. */
typedef int (*entry_pred)(const mem_entry *e, const void *arg);

static int collect(mem_store *ms, entry_pred match, const void *arg, mem_entry ***out, size_t *n)
{
    mem_entry **v = NULL;
    size_t cap = 0, i;
    mem_entry *e;

    *out = NULL;
    *n = 0;
    for (i = 0; i < ms->ntab; i++) {
        for (e = ms->tab[i]; e; e = e->next) {
            if (!match(e, arg))
                continue;
            if (*n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                mem_entry **nv = once_realloc(v, nc * sizeof *nv);
                if (!nv) {
                    once_free(v);
                    *n = 0;
                    return ONCE_ENOMEM;
                }
                v = nv;
                cap = nc;
            }
            v[(*n)++] = e;
        }
    }
    *out = v;
    return ONCE_OK;
}

static int cmp_key(const mem_entry *a, const mem_entry *b)
{
    int c = strcmp(a->rec.principal, b->rec.principal);
    return c ? c : strcmp(a->rec.task_id, b->rec.task_id);
}

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* ------------------------------------------------------------------------ */

static int mem_open(const char *url, const once_store_options *opt, once_store **out,
                    char *errbuf, size_t errlen)
{
    mem_store *ms;

    (void)opt;
    *out = NULL;
    if (strncmp(url, "memory:", 7) != 0) {
        once__store_errbuf(errbuf, errlen, "memory store URL must start with memory:");
        return ONCE_EINVAL;
    }
    ms = once_calloc(1, sizeof *ms);
    if (!ms || !(ms->tab = once_calloc(MEM_INITIAL_BUCKETS, sizeof *ms->tab))) {
        once_free(ms);
        once__store_errbuf(errbuf, errlen, "memory store: out of memory");
        return ONCE_ENOMEM;
    }
    ms->ntab = MEM_INITIAL_BUCKETS;
    if (pthread_mutex_init(&ms->lock, NULL) != 0) {
        once_free(ms->tab);
        once_free(ms);
        once__store_errbuf(errbuf, errlen, "memory store: pthread_mutex_init failed");
        return ONCE_ERROR;
    }
    ms->base.m = &once__store_memory;
    *out = &ms->base;
    return ONCE_OK;
}

static int mem_close(once_store *s)
{
    mem_store *ms = (mem_store *)s;
    mem_meta *m, *mn;
    size_t i;

    for (i = 0; i < ms->ntab; i++) {
        mem_entry *e, *next;
        for (e = ms->tab[i]; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    }
    for (m = ms->meta; m; m = mn) {
        mn = m->next;
        once_free(m->name);
        once_free(m->value);
        once_free(m);
    }
    once_free(ms->tab);
    pthread_mutex_destroy(&ms->lock);
    once_free(ms);
    return ONCE_OK;
}

static int mem_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                      once_record *winner, once_tombstone *tomb)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e, **slot;
    int rc = ONCE_OK;

    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    e = once_calloc(1, sizeof *e);
    if (!e)
        return ONCE_ENOMEM;
    push_prep pp;
    rc = once_record_copy(&e->rec, rec);
    if (rc == ONCE_OK)
        rc = copy_events(ev, nev, &e->ev);
    if (rc == ONCE_OK)
        rc = push_prepare(rec, &pp);
    if (rc != ONCE_OK) {
        entry_free(e);
        return rc;
    }
    e->nev = e->cap = nev;
    e->hash = key_hash(rec->principal, rec->task_id);
    push_apply(e, &pp);   /* no old rows: nothing comes back */

    pthread_mutex_lock(&ms->lock);
    slot = find_slot(ms, rec->principal, rec->task_id, e->hash);
    if (*slot) {
        mem_entry *old = *slot;
        if (old->is_tomb) {
            if (tomb)
                *tomb = old->tomb;
            rc = ONCE_ETOMBSTONE;
        } else {
            rc = winner ? once_record_copy(winner, &old->rec) : ONCE_OK;
            if (rc == ONCE_OK)
                rc = ONCE_EEXISTS;
        }
        pthread_mutex_unlock(&ms->lock);
        entry_free(e);
        return rc;
    }
    *slot = e;
    ms->count++;
    ms->push_rows += e->npush;
    maybe_grow(ms);
    pthread_mutex_unlock(&ms->lock);
    return ONCE_OK;
}

static int mem_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                    once_tombstone *tomb)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    pthread_mutex_lock(&ms->lock);
    e = find(ms, principal, task_id);
    if (!e) {
        rc = ONCE_ENOTFOUND;
    } else if (e->is_tomb) {
        if (tomb)
            *tomb = e->tomb;
        rc = ONCE_ETOMBSTONE;
    } else {
        rc = once_record_copy(out, &e->rec);
    }
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

static int mem_update(once_store *s, const once_record *rec, int64_t expect_version,
                      const once_event *ev, size_t nev)
{
    mem_store *ms = (mem_store *)s;
    once_record nr;
    once_event *nv = NULL;
    int moved = 0;
    mem_entry *e;
    int rc = ONCE_OK;

    rc = once_record_copy(&nr, rec);
    if (rc != ONCE_OK)
        return rc;
    rc = copy_events(ev, nev, &nv);
    if (rc != ONCE_OK) {
        once_record_clear(&nr);
        return rc;
    }
    push_prep pp;
    rc = push_prepare(rec, &pp);
    if (rc != ONCE_OK) {
        once_record_clear(&nr);
        free_events(nv, nev);
        once_free(pp.rows);
        return rc;
    }

    pthread_mutex_lock(&ms->lock);
    e = find(ms, rec->principal, rec->task_id);
    if (!e || e->is_tomb || e->rec.version != expect_version) {
        once__store_seterr(s, "update of %s: %s", rec->task_id,
                           !e || e->is_tomb ? "no record" : "version moved");
        rc = ONCE_ECONFLICT;
    } else {
        rc = once__store_valid_events(s, e->rec.generation, rec, ev, nev);
    }
    if (rc == ONCE_OK && e->nev + nev > e->cap) {
        size_t nc = e->cap ? e->cap : 4;
        once_event *grown;
        while (nc < e->nev + nev)
            nc *= 2;
        grown = once_realloc(e->ev, nc * sizeof *grown);
        if (grown) {
            e->ev = grown;
            e->cap = nc;
        } else {
            rc = ONCE_ENOMEM;
        }
    }
    if (rc == ONCE_OK) {
        once_record old = e->rec;
        if (nev)
            memcpy(e->ev + e->nev, nv, nev * sizeof *nv);
        e->nev += nev;
        e->rec = nr;
        nr = old;            /* freed below, outside the lock */
        ms->push_rows -= e->npush;
        push_apply(e, &pp);
        ms->push_rows += e->npush;
        moved = 1;
    }
    pthread_mutex_unlock(&ms->lock);

    once_free(pp.rows);      /* the old rows, or the unused new ones */
    once_record_clear(&nr);
    if (moved)
        once_free(nv);
    else
        free_events(nv, nev);
    return rc;
}

static int mem_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                      size_t max, once_event_list *out)
{
    mem_store *ms = (mem_store *)s;
    size_t lo, hi, n, i;
    mem_entry *e;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ms->lock);
    e = find(ms, principal, task_id);
    if (!e || e->is_tomb || e->nev == 0)
        goto done;
    lo = 0;                       /* first index with generation > after */
    hi = e->nev;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->ev[mid].generation > after)
            hi = mid;
        else
            lo = mid + 1;
    }
    n = e->nev - lo;
    if (max && n > max)
        n = max;
    if (n == 0)
        goto done;
    out->v = once_calloc(n, sizeof *out->v);
    if (!out->v) {
        rc = ONCE_ENOMEM;
        goto done;
    }
    for (i = 0; i < n; i++) {
        out->v[i].generation = e->ev[lo + i].generation;
        out->v[i].payload = once_strdup(e->ev[lo + i].payload);
        out->n = i + 1;
        if (!out->v[i].payload) {
            rc = ONCE_ENOMEM;
            break;
        }
    }
done:
    pthread_mutex_unlock(&ms->lock);
    if (rc != ONCE_OK)
        once_event_list_clear(out);
    return rc;
}

static int lease_expired(const mem_entry *e, const void *arg)
{
    int64_t now = *(const int64_t *)arg;
    return !e->is_tomb && !once_state_terminal(e->rec.state) && e->rec.lease_until > 0 &&
           e->rec.lease_until < now;
}

static int cmp_lease(const void *a, const void *b)
{
    const mem_entry *x = *(mem_entry *const *)a, *y = *(mem_entry *const *)b;
    int c = cmp_i64(x->rec.lease_until, y->rec.lease_until);
    return c ? c : cmp_key(x, y);
}

static int mem_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    mem_store *ms = (mem_store *)s;
    mem_entry **v;
    size_t n, i;
    int rc;

    memset(out, 0, sizeof *out);
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    rc = collect(ms, lease_expired, &now, &v, &n);
    if (rc == ONCE_OK && n) {
        qsort(v, n, sizeof *v, cmp_lease);
        if (n > max)
            n = max;
        out->v = once_calloc(n, sizeof *out->v);
        if (!out->v) {
            rc = ONCE_ENOMEM;
        } else {
            for (i = 0; i < n; i++) {
                memcpy(out->v[i].principal, v[i]->rec.principal, sizeof out->v[i].principal);
                memcpy(out->v[i].task_id, v[i]->rec.task_id, sizeof out->v[i].task_id);
            }
            out->n = n;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(v);
    return rc;
}

/* Arguments were checked by once_store_renew. Leases are found by a scan
 * of the records, so there is no index to keep in step. */
static int mem_renew(once_store *s, const char *principal, const char *task_id,
                     const char *owner, int64_t fence, int64_t until)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e;
    int live, renewed;

    pthread_mutex_lock(&ms->lock);
    e = find(ms, principal, task_id);
    live = e && !e->is_tomb;
    renewed = live && e->rec.fence == fence && strcmp(e->rec.lease_owner, owner) == 0 &&
              once__state_renewable(e->rec.state);
    if (renewed)
        e->rec.lease_until = until;
    pthread_mutex_unlock(&ms->lock);
    return once__store_renew_result(s, task_id, renewed, live);
}

static int sweepable(const mem_entry *e, const void *arg)
{
    int64_t before = *(const int64_t *)arg;
    return !e->is_tomb && once_state_terminal(e->rec.state) && e->rec.finished_at < before;
}

static int cmp_finished(const void *a, const void *b)
{
    const mem_entry *x = *(mem_entry *const *)a, *y = *(mem_entry *const *)b;
    int c = cmp_i64(x->rec.finished_at, y->rec.finished_at);
    return c ? c : cmp_key(x, y);
}

/* Replace e's record and events by a tombstone; the key stays in e->rec. */
static void entomb(mem_entry *e, int64_t now)
{
    once_tombstone *t = &e->tomb;
    once_record key;

    memset(t, 0, sizeof *t);
    memcpy(t->principal, e->rec.principal, sizeof t->principal);
    memcpy(t->task_id, e->rec.task_id, sizeof t->task_id);
    once__digests_first(e->rec.digests, t->first_digest);
    t->finished_at = e->rec.finished_at;
    t->expired_at = now;

    memset(&key, 0, sizeof key);
    memcpy(key.principal, e->rec.principal, sizeof key.principal);
    memcpy(key.task_id, e->rec.task_id, sizeof key.task_id);
    once_record_clear(&e->rec);
    e->rec = key;
    free_events(e->ev, e->nev);
    e->ev = NULL;
    e->nev = e->cap = 0;
    once_free(e->push);
    e->push = NULL;
    e->npush = 0;
    e->is_tomb = 1;
}

static int mem_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    mem_store *ms = (mem_store *)s;
    mem_entry **v;
    size_t nv, i;
    int rc;

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    rc = collect(ms, sweepable, &finished_before, &v, &nv);
    if (rc == ONCE_OK && nv) {
        qsort(v, nv, sizeof *v, cmp_finished);
        for (i = 0; i < nv && i < max; i++) {
            ms->push_rows -= v[i]->npush;
            entomb(v[i], now);
        }
        *n = i;
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(v);
    return rc;
}

static int purgeable(const mem_entry *e, const void *arg)
{
    int64_t before = *(const int64_t *)arg;
    return e->is_tomb && e->tomb.expired_at < before;
}

static int cmp_expired(const void *a, const void *b)
{
    const mem_entry *x = *(mem_entry *const *)a, *y = *(mem_entry *const *)b;
    int c = cmp_i64(x->tomb.expired_at, y->tomb.expired_at);
    return c ? c : cmp_key(x, y);
}

static int mem_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    mem_store *ms = (mem_store *)s;
    mem_entry **v;
    size_t nv, i;
    int rc;

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    rc = collect(ms, purgeable, &expired_before, &v, &nv);
    if (rc == ONCE_OK && nv) {
        qsort(v, nv, sizeof *v, cmp_expired);
        for (i = 0; i < nv && i < max; i++) {
            mem_entry **slot = find_slot(ms, v[i]->rec.principal, v[i]->rec.task_id,
                                         v[i]->hash);
            *slot = v[i]->next;
            ms->count--;
            entry_free(v[i]);
        }
        *n = i;
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(v);
    return rc;
}

static int listed(const mem_entry *e, const void *arg)
{
    const once_list_query *q = arg;

    if (e->is_tomb || strcmp(e->rec.principal, q->principal) != 0)
        return 0;
    if (q->context_id && strcmp(e->rec.context_id, q->context_id) != 0)
        return 0;
    if (q->state != ONCE_STATE_UNKNOWN && e->rec.state != q->state)
        return 0;
    if (q->after_task_id) {
        if (e->rec.created_at < q->after_created_at)
            return 0;
        if (e->rec.created_at == q->after_created_at &&
            strcmp(e->rec.task_id, q->after_task_id) <= 0)
            return 0;
    }
    return 1;
}

static int cmp_created(const void *a, const void *b)
{
    const mem_entry *x = *(mem_entry *const *)a, *y = *(mem_entry *const *)b;
    int c = cmp_i64(x->rec.created_at, y->rec.created_at);
    return c ? c : strcmp(x->rec.task_id, y->rec.task_id);
}

static int mem_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    mem_store *ms = (mem_store *)s;
    mem_entry **v;
    size_t nv, i;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ms->lock);
    rc = collect(ms, listed, q, &v, &nv);
    if (rc == ONCE_OK && nv) {
        qsort(v, nv, sizeof *v, cmp_created);
        if (nv > q->limit)
            nv = q->limit;
        out->v = once_calloc(nv, sizeof *out->v);
        if (!out->v)
            rc = ONCE_ENOMEM;
        for (i = 0; rc == ONCE_OK && i < nv; i++) {
            rc = once_record_copy(&out->v[i], &v[i]->rec);
            if (rc == ONCE_OK)
                out->n = i + 1;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(v);
    if (rc != ONCE_OK)
        once_record_list_clear(out);
    return rc;
}

static int mem_meta_get(once_store *s, const char *name, const char *init_value, char **out)
{
    mem_store *ms = (mem_store *)s;
    mem_meta *m;
    int rc = ONCE_OK;

    *out = NULL;
    if (!name[0]) {
        once__store_seterr(s, "meta: empty name");
        return ONCE_EINVAL;
    }
    pthread_mutex_lock(&ms->lock);
    for (m = ms->meta; m && strcmp(m->name, name) != 0; m = m->next)
        ;
    if (!m && !init_value) {
        rc = ONCE_ENOTFOUND;
    } else if (!m) {
        m = once_calloc(1, sizeof *m);
        if (!m || !(m->name = once_strdup(name)) || !(m->value = once_strdup(init_value))) {
            if (m)
                once_free(m->name);
            once_free(m);
            m = NULL;
            rc = ONCE_ENOMEM;
        } else {
            m->next = ms->meta;
            ms->meta = m;
        }
    }
    if (m && !(*out = once_strdup(m->value)))
        rc = ONCE_ENOMEM;
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

/* The rows must be exactly push_json's elements, in order, aimed at the
 * record's generation. */
static void check_push(once_check_report *rep, const mem_entry *e)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, i;
    int ok = once__push_elems(e->rec.push_json, el, &n) == ONCE_OK && n == e->npush;

    for (i = 0; ok && i < n; i++)
        ok = strcmp(el[i].id, e->push[i].config_id) == 0 &&
             e->push[i].target == e->rec.generation && e->push[i].delivered <= e->push[i].target;
    if (!ok) {
        rep->bad_push++;
        once__check_problem(rep, "%s/%s: delivery rows disagree with push_json",
                            e->rec.principal, e->rec.task_id);
    }
}

static int mem_check(once_store *s, once_check_report *rep)
{
    mem_store *ms = (mem_store *)s;
    size_t i, j;
    mem_entry *e;

    memset(rep, 0, sizeof *rep);
    pthread_mutex_lock(&ms->lock);
    for (i = 0; i < ms->ntab; i++) {
        for (e = ms->tab[i]; e; e = e->next) {
            int gapless = 1;
            if (e->is_tomb) {
                once__check_tombstone(rep, &e->tomb, e->nev);
                continue;
            }
            for (j = 0; j < e->nev; j++)
                if (e->ev[j].generation != (int64_t)j + 1)
                    gapless = 0;
            once__check_record(rep, &e->rec, e->nev, e->nev ? e->ev[e->nev - 1].generation : 0,
                               gapless);
            check_push(rep, e);
        }
    }
    pthread_mutex_unlock(&ms->lock);
    return ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Push delivery rows.
 */

/* A due row found by a claim scan. */
typedef struct due_ref {
    mem_entry *e;
    size_t i;
} due_ref;

static int cmp_due(const void *a, const void *b)
{
    const due_ref *x = a, *y = b;
    int c = cmp_i64(x->e->push[x->i].next_attempt_at, y->e->push[y->i].next_attempt_at);
    if (!c)
        c = cmp_key(x->e, y->e);
    return c ? c : strcmp(x->e->push[x->i].config_id, y->e->push[y->i].config_id);
}

static int mem_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                          size_t max, once_push_claim_list *out)
{
    mem_store *ms = (mem_store *)s;
    due_ref *v = NULL;
    size_t n = 0, cap = 0, b, i;
    mem_entry *e;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (!owner[0] || strlen(owner) > ONCE_OWNER_MAX || lease_ms <= 0) {
        once__store_seterr(s, "push_claim: owner must be 1..%d bytes, lease_ms > 0",
                           ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    for (b = 0; rc == ONCE_OK && ms->push_rows > 0 && b < ms->ntab; b++) {
        for (e = ms->tab[b]; rc == ONCE_OK && e; e = e->next) {
            for (i = 0; i < e->npush; i++) {
                if (!once__push_due(&e->push[i], now))
                    continue;
                if (n == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    due_ref *g = once_realloc(v, nc * sizeof *g);
                    if (!g) {
                        rc = ONCE_ENOMEM;
                        break;
                    }
                    v = g;
                    cap = nc;
                }
                v[n].e = e;
                v[n++].i = i;
            }
        }
    }
    if (rc == ONCE_OK && n) {
        qsort(v, n, sizeof *v, cmp_due);
        if (n > max)
            n = max;
        out->v = once_calloc(n, sizeof *out->v);
        if (!out->v)
            rc = ONCE_ENOMEM;
    }
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        once_push_row *r = &v[i].e->push[v[i].i];
        once_push_claim *c = &out->v[i];
        snprintf(r->lease_owner, sizeof r->lease_owner, "%s", owner);
        r->lease_until = now + lease_ms;
        memcpy(c->principal, v[i].e->rec.principal, sizeof c->principal);
        memcpy(c->task_id, v[i].e->rec.task_id, sizeof c->task_id);
        memcpy(c->config_id, r->config_id, sizeof c->config_id);
        c->generation = r->delivered + 1;
        c->target = r->target;
        c->attempts = r->attempts;
        c->lease_until = r->lease_until;
        out->n = i + 1;
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(v);
    return rc;
}

static once_push_row *find_row(mem_entry *e, const char *config_id)
{
    size_t i;

    for (i = 0; e && !e->is_tomb && i < e->npush; i++)
        if (strcmp(e->push[i].config_id, config_id) == 0)
            return &e->push[i];
    return NULL;
}

static int mem_push_ack(once_store *s, const once_push_ack *ack)
{
    mem_store *ms = (mem_store *)s;
    once_push_row *r;
    int rc = ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    r = find_row(find(ms, ack->principal, ack->task_id), ack->config_id);
    rc = r ? once__push_apply_ack(r, ack) : ONCE_ENOTFOUND;
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

static int cmp_row_id(const void *a, const void *b)
{
    return strcmp(((const once_push_row *)a)->config_id, ((const once_push_row *)b)->config_id);
}

static int mem_push_rows(once_store *s, const char *principal, const char *task_id,
                         once_push_row_list *out)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ms->lock);
    e = find(ms, principal, task_id);
    if (e && !e->is_tomb && e->npush) {
        out->v = once_calloc(e->npush, sizeof *out->v);
        if (!out->v) {
            rc = ONCE_ENOMEM;
        } else {
            memcpy(out->v, e->push, e->npush * sizeof *out->v);
            out->n = e->npush;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_row_id);
    return rc;
}

const once_store_methods once__store_memory = {
    .version = ONCE_STORE_METHODS_VERSION,
    .scheme = "memory",
    .caps = ONCE_STORE_PUSH,
    .open = mem_open,
    .close = mem_close,
    .create = mem_create,
    .load = mem_load,
    .update = mem_update,
    .events = mem_events,
    .expired_leases = mem_expired_leases,
    .sweep = mem_sweep,
    .purge = mem_purge,
    .list = mem_list,
    .meta = mem_meta_get,
    .check = mem_check,
    .renew = mem_renew,
    .push_claim = mem_push_claim,
    .push_ack = mem_push_ack,
    .push_rows = mem_push_rows,
};
