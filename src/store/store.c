/*
 * store.c -- once_store_open and the dispatch helpers over the backend vtable.
 *
 * Backends are found by URL scheme in one const table; a backend compiled out
 * of this build (-DONCE_POSTGRES=OFF, -DONCE_REDIS=OFF, -DONCE_DYNAMODB=OFF)
 * is still named there, with the option that builds it, so that its URL gets
 * "not built in" rather than "unknown scheme", and --help lists only what
 * the build has (once__store_schemes). The helpers zero every output
 * struct before dispatching, so a caller may clear outputs whatever the
 * result even if a backend returned before touching them.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/metrics.h"
#include "store/replica.h"
#include "store/slots.h"
#include "store/store_info.h"
#include "store/store_int.h"

/* Return a slot's answer, its time recorded in the store latency
 * histogram (core/metrics.h): two clock reads and two atomic adds. */
#define TIMED(s, op, call)                                                                 \
    do {                                                                                   \
        int64_t t0_ = once__metrics_start();                                               \
        int rc_ = (call);                                                                  \
        once__metrics_store((s)->m->scheme, (op), t0_);                                    \
        return rc_;                                                                        \
    } while (0)

typedef struct backend {
    const char *scheme;
    const once_store_methods *m;   /* NULL: known scheme, not in this build */
    const once__backend *hooks;    /* NULL: no schema (memory) */
    const char *usage;             /* its URL as --help shows it; NULL: an alias */
    const char *option;            /* the CMake option that builds it */
} backend;

/* A backend this build has, or the name of one it left out. */
#define BUILT(scheme, m, hooks, usage) {scheme, m, hooks, usage, NULL}
#define LEFT_OUT(scheme, usage, option) {scheme, NULL, NULL, usage, option}

static const backend backends[] = {
    BUILT("memory", &once__store_memory, NULL, "memory:"),
    BUILT("sqlite", &once__store_sqlite, &once__sq_backend, "sqlite:PATH"),
#ifdef ONCE_HAVE_PG
    BUILT("postgres", &once__store_pg, &once__pg_backend, "postgres://..."),
    BUILT("postgresql", &once__store_pg, &once__pg_backend, NULL),
#else
    LEFT_OUT("postgres", "postgres://...", "ONCE_POSTGRES"),
    LEFT_OUT("postgresql", NULL, "ONCE_POSTGRES"),
#endif
#ifdef ONCE_HAVE_REDIS
    BUILT("redis", &once__store_redis, &once__rd_backend, "redis://..."),
#else
    LEFT_OUT("redis", "redis://...", "ONCE_REDIS"),
#endif
#ifdef ONCE_HAVE_DYNAMODB
    BUILT("dynamodb", &once__store_dynamo, &once__dy_backend, "dynamodb://TABLE?region=R"),
#else
    LEFT_OUT("dynamodb", "dynamodb://TABLE?region=R", "ONCE_DYNAMODB"),
#endif
};

#define NBACKENDS (sizeof backends / sizeof backends[0])

void once__store_url_forms(int all, char *out, size_t n)
{
    size_t off = 0;
    if (n > 0)
        out[0] = '\0';
    for (size_t i = 0; i < NBACKENDS; i++) {
        if ((!all && !backends[i].m) || !backends[i].usage)
            continue;
        int w = snprintf(out + off, n - off, "%s%s", off ? ", " : "", backends[i].usage);
        if (w < 0 || (size_t)w >= n - off)
            return;
        off += (size_t)w;
    }
}

/* Built once from the table: "memory:, sqlite:PATH, postgres://..., ...".
 * Every usage is a literal above, so the sum fits. */
static char schemes[160];
static pthread_once_t schemes_once = PTHREAD_ONCE_INIT;

static void schemes_build(void)
{
    once__store_url_forms(0, schemes, sizeof schemes);
}

const char *once__store_schemes(void)
{
    pthread_once(&schemes_once, schemes_build);
    return schemes;
}

/* Serialises writers of any handle's errmsg (messages are short; contention
 * only happens on failure paths). */
static pthread_mutex_t errmsg_lock = PTHREAD_MUTEX_INITIALIZER;

void once__store_seterr(once_store *s, const char *fmt, ...)
{
    char buf[sizeof s->errmsg];
    va_list ap;

    if (!s)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&errmsg_lock);
    memcpy(s->errmsg, buf, sizeof buf);
    pthread_mutex_unlock(&errmsg_lock);
}

void once__store_errbuf(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!errbuf || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}

/* ONCE__STORE_TABLE names every slot only if ONCE__STORE_EACH_SLOT lists
 * every member of once_store_methods after caps: a slot added to the
 * struct and not to the list stops the build here. */
_Static_assert(sizeof(once_store_methods) ==
                   offsetof(once_store_methods, open) +
                       (0 ONCE__STORE_EACH_SLOT(ONCE__STORE_SLOT_COUNT, _)) * sizeof(void (*)(void)),
               "a slot of once_store_methods is missing from ONCE__STORE_EACH_SLOT (slots.h)");

/* The optional slots, each with the capability bit that calls for it. */
typedef struct slot_bit {
    unsigned bit;
    const char *what;
    size_t off[3];   /* the bit's slots (offsets into the table; 0: none) */
} slot_bit;

#define SLOT(name) offsetof(once_store_methods, name)
static const slot_bit slot_bits[] = {
    {ONCE_STORE_PUSH, "a push slot (caps has ONCE_STORE_PUSH)",
     {SLOT(push_claim), SLOT(push_ack), SLOT(push_rows)}},
    {ONCE_STORE_FEED, "a feed slot (caps has ONCE_STORE_FEED)",
     {SLOT(feed_open), SLOT(feed_next), SLOT(feed_close)}},
    {ONCE_STORE_GENERATIONS, "the generations slot (caps has ONCE_STORE_GENERATIONS)",
     {SLOT(generations)}},
    {ONCE_STORE_REPLICAS, "a replica slot (caps has ONCE_STORE_REPLICAS)",
     {SLOT(replica_beat), SLOT(replicas)}},
    {ONCE_STORE_CREATE_START, "the create_start slot (caps has ONCE_STORE_CREATE_START)",
     {SLOT(create_start)}},
    {ONCE_STORE_BUDGET, "the budget slot (caps has ONCE_STORE_BUDGET)", {SLOT(budget)}},
    {ONCE_STORE_SYNCHRONOUS, "the synchronous slot (caps has ONCE_STORE_SYNCHRONOUS)",
     {SLOT(synchronous)}},
};
#undef SLOT

static int slot_set(const once_store_methods *m, size_t off)
{
    void (*fn)(void);
    memcpy(&fn, (const char *)m + off, sizeof fn);
    return fn != NULL;
}

/* The slots every backend must fill, and the optional ones its caps call
 * for: a table missing one would crash at its first call. */
static const char *missing_slot(const once_store_methods *m)
{
    if (!m->open || !m->close || !m->create || !m->load || !m->update || !m->events ||
        !m->expired_leases || !m->sweep || !m->purge || !m->list || !m->meta || !m->check ||
        !m->renew)
        return "a required slot";
    if ((m->caps & ONCE_STORE_START_PUSH) && !(m->caps & ONCE_STORE_CREATE_START))
        return "ONCE_STORE_CREATE_START (caps has ONCE_STORE_START_PUSH)";
    for (size_t i = 0; i < sizeof slot_bits / sizeof slot_bits[0]; i++) {
        const slot_bit *b = &slot_bits[i];
        if (!(m->caps & b->bit))
            continue;
        for (size_t j = 0; j < 3 && b->off[j]; j++)
            if (!slot_set(m, b->off[j]))
                return b->what;
    }
    return NULL;
}

int once_store_open_methods(const once_store_methods *m, const char *url,
                            const once_store_options *opt, once_store **out, char *errbuf,
                            size_t errlen)
{
    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!out || !m) {
        once__store_errbuf(errbuf, errlen, "once_store_open_methods: out or methods is NULL");
        return ONCE_EINVAL;
    }
    *out = NULL;
    const char *scheme = m->scheme ? m->scheme : "?";
    /* A table built against another store.h: its slots may take other
     * arguments or promise other things than this libonce calls them for. */
    if (m->version != ONCE_STORE_METHODS_VERSION) {
        once__store_errbuf(errbuf, errlen, "store backend '%s' has vtable version %d, want %d",
                           scheme, m->version, ONCE_STORE_METHODS_VERSION);
        return ONCE_EUNSUPPORTED;
    }
    const char *missing = missing_slot(m);
    if (missing) {
        once__store_errbuf(errbuf, errlen, "store backend '%s' lacks %s", scheme, missing);
        return ONCE_EINVAL;
    }
    int rc = m->open(url, opt, out, errbuf, errlen);
    if (rc != ONCE_OK) {
        *out = NULL;
        if (errbuf && errlen && !errbuf[0])
            once__store_errbuf(errbuf, errlen, "%s store: %s", scheme, once_strerror(rc));
        return rc;
    }
    (*out)->m = m;
    return ONCE_OK;
}

int once__store_find(const char *url, const once_store_methods **m, const once__backend **hooks,
                     char *errbuf, size_t errlen)
{
    const char *colon;
    size_t slen;
    size_t i;

    if (!url || !(colon = strchr(url, ':')) || colon == url) {
        once__store_errbuf(errbuf, errlen,
                           "store URL must start with a scheme (memory:, sqlite:PATH, ...)");
        return ONCE_EINVAL;
    }
    slen = (size_t)(colon - url);
    for (i = 0; i < NBACKENDS; i++) {
        const backend *b = &backends[i];
        if (strlen(b->scheme) != slen || memcmp(b->scheme, url, slen) != 0)
            continue;
        if (!b->m) {
            once__store_errbuf(errbuf, errlen,
                               "%s:// support was not built in (configure with -D%s=ON)",
                               b->scheme, b->option);
            return ONCE_EUNSUPPORTED;
        }
        *m = b->m;
        if (hooks)
            *hooks = b->hooks;
        return ONCE_OK;
    }
    once__store_errbuf(errbuf, errlen, "unknown store scheme '%.*s' (built in: %s)",
                       (int)(slen > 32 ? 32 : slen), url, once__store_schemes());
    return ONCE_EINVAL;
}

int once__store_url_check(const char *url, char *errbuf, size_t errlen)
{
    const once_store_methods *m;
    if (errbuf && errlen)
        errbuf[0] = '\0';
    return once__store_find(url, &m, NULL, errbuf, errlen);
}

int once_store_open(const char *url, const once_store_options *opt, once_store **out,
                    char *errbuf, size_t errlen)
{
    const once_store_methods *m;

    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!out) {
        once__store_errbuf(errbuf, errlen, "once_store_open: out is NULL");
        return ONCE_EINVAL;
    }
    *out = NULL;
    int rc = once__store_find(url, &m, NULL, errbuf, errlen);
    return rc == ONCE_OK ? once_store_open_methods(m, url, opt, out, errbuf, errlen) : rc;
}

int once_store_close(once_store *s)
{
    return s ? s->m->close(s) : ONCE_OK;
}

const char *once_store_errmsg(const once_store *s)
{
    return s ? s->errmsg : "no store handle";
}

unsigned once_store_caps(const once_store *s)
{
    return s ? s->m->caps & ~s->caps_off : 0u;
}

int once_store_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                      once_record *winner, once_tombstone *tomb)
{
    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    if (!s || !rec)
        return ONCE_EINVAL;
    int rc = once__store_valid_create(s, rec, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_CREATE, s->m->create(s, rec, ev, nev, winner, tomb));
}

int once_store_can_start(const once_store *s, const once_record *rec)
{
    unsigned caps = once_store_caps(s);
    if (!(caps & ONCE_STORE_CREATE_START))
        return 0;
    return rec == NULL || rec->push_json == NULL || (caps & ONCE_STORE_START_PUSH) != 0;
}

int once__store_schema_version(const once_store *s)
{
    for (size_t i = 0; s != NULL && i < NBACKENDS; i++) {
        if (backends[i].m == s->m && backends[i].hooks)
            return backends[i].hooks->schema_version;
    }
    return 0;
}

int once_store_create_start(once_store *s, const once_record *rec, const once_event *ev,
                            size_t nev, void (*done)(void *arg, int rc), void *arg)
{
    if (!s || !rec || !done)
        return ONCE_EINVAL;
    if (!once_store_can_start(s, rec))
        return ONCE_EUNSUPPORTED;
    int rc = once__store_valid_create(s, rec, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    return s->m->create_start(s, rec, ev, nev, done, arg);
}

/* What every read of one task's output checks first: out zeroed (size
 * bytes, so that a refusal leaves nothing stale in it), then a handle, an
 * output and a valid key. */
static int keyed_read(once_store *s, const char *principal, const char *task_id, void *out,
                      size_t size)
{
    if (out)
        memset(out, 0, size);
    if (!s || !out)
        return ONCE_EINVAL;
    return once__store_valid_key(s, principal, task_id);
}

int once_store_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                    once_tombstone *tomb)
{
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    int rc = keyed_read(s, principal, task_id, out, sizeof *out);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_LOAD, s->m->load(s, principal, task_id, out, tomb));
}

int once_store_update(once_store *s, const once_record *rec, int64_t expect_version,
                      const once_event *ev, size_t nev)
{
    if (!s || !rec)
        return ONCE_EINVAL;
    int rc = once__store_valid_update(s, rec, expect_version, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_UPDATE, s->m->update(s, rec, expect_version, ev, nev));
}

int once_store_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                      size_t max, once_event_list *out)
{
    int rc = keyed_read(s, principal, task_id, out, sizeof *out);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_EVENTS, s->m->events(s, principal, task_id, after, max, out));
}

int once_store_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out)
        return ONCE_EINVAL;
    TIMED(s, ONCE__SOP_EXPIRED_LEASES, s->m->expired_leases(s, now, max, out));
}

int once_store_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    if (n)
        *n = 0;
    if (!s || !n)
        return ONCE_EINVAL;
    TIMED(s, ONCE__SOP_SWEEP, s->m->sweep(s, finished_before, now, max, n));
}

int once_store_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    if (n)
        *n = 0;
    if (!s || !n)
        return ONCE_EINVAL;
    TIMED(s, ONCE__SOP_PURGE, s->m->purge(s, expired_before, max, n));
}

int once_store_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !q || !out)
        return ONCE_EINVAL;
    int rc = once__store_valid_query(s, q);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_LIST, s->m->list(s, q, out));
}

int once_store_meta(once_store *s, const char *name, const char *init_value, char **out)
{
    if (out)
        *out = NULL;
    if (!s || !name || !out)
        return ONCE_EINVAL;
    /* Here, not in each backend: a slot is never handed an empty name. */
    if (!name[0]) {
        once__store_seterr(s, "meta: empty name");
        return ONCE_EINVAL;
    }
    TIMED(s, ONCE__SOP_META, s->m->meta(s, name, init_value, out));
}

int once_store_check(once_store *s, once_check_report *rep)
{
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (!s || !rep)
        return ONCE_EINVAL;
    return s->m->check(s, rep);
}

/* The one place renew's arguments are checked: the slots trust them. */
int once_store_renew(once_store *s, const char *principal, const char *task_id,
                     const char *owner, int64_t fence, int64_t until)
{
    int rc;

    if (!s)
        return ONCE_EINVAL;
    rc = once__store_valid_renew(s, principal, task_id, owner, fence, until);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_RENEW, s->m->renew(s, principal, task_id, owner, fence, until));
}

int once_store_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                          size_t max, once_push_claim_list *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out || !owner)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_PUSH))
        return ONCE_EUNSUPPORTED;
    TIMED(s, ONCE__SOP_PUSH_CLAIM, s->m->push_claim(s, owner, now, lease_ms, max, out));
}

int once_store_push_ack(once_store *s, const once_push_ack *ack)
{
    if (!s || !ack)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_PUSH))
        return ONCE_EUNSUPPORTED;
    int rc = once__store_valid_ack(s, ack);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_PUSH_ACK, s->m->push_ack(s, ack));
}

int once_store_push_rows(once_store *s, const char *principal, const char *task_id,
                         once_push_row_list *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_PUSH))
        return ONCE_EUNSUPPORTED;
    int rc = once__store_valid_key(s, principal, task_id);
    if (rc != ONCE_OK)
        return rc;
    TIMED(s, ONCE__SOP_PUSH_ROWS, s->m->push_rows(s, principal, task_id, out));
}

int once_store_feed_open(once_store *s, once_store_feed **out)
{
    if (out)
        *out = NULL;
    if (!s || !out)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_FEED))
        return ONCE_EUNSUPPORTED;
    int rc = s->m->feed_open(s, out);
    if (rc != ONCE_OK) {
        *out = NULL;
        return rc;
    }
    (*out)->store = s;
    return ONCE_OK;
}

int once_store_feed_next(once_store_feed *f, int64_t wait_ms, once_key_list *out, int *lost)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (lost)
        *lost = 0;
    if (!f || !out || !lost || wait_ms < 0)
        return ONCE_EINVAL;
    return f->store->m->feed_next(f, wait_ms, out, lost);
}

void once_store_feed_close(once_store_feed *f)
{
    if (f)
        f->store->m->feed_close(f);
}

int once_store_generations(once_store *s, const once_key *keys, size_t n, int64_t *gens)
{
    if (!s || !keys || !gens || n == 0 || n > ONCE_STORE_GENERATIONS_MAX)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_GENERATIONS))
        return ONCE_EUNSUPPORTED;
    for (size_t i = 0; i < n; i++) {
        int rc = once__store_valid_key(s, keys[i].principal, keys[i].task_id);
        if (rc != ONCE_OK)
            return rc;
        gens[i] = -1;
    }
    TIMED(s, ONCE__SOP_GENERATIONS, s->m->generations(s, keys, n, gens));
}

int once_store_replica_beat(once_store *s, const once_replica *r)
{
    if (!s || !r)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_REPLICAS))
        return ONCE_EUNSUPPORTED;
    int rc = once__store_valid_replica(s, r);
    return rc == ONCE_OK ? s->m->replica_beat(s, r) : rc;
}

int once_store_replicas(once_store *s, once_replica_list *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_REPLICAS))
        return ONCE_EUNSUPPORTED;
    int rc = s->m->replicas(s, out);
    if (rc != ONCE_OK)
        once_replica_list_clear(out);
    return rc;
}

int once_store_budget(once_store *s, once_budget *out, int take)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!s || !out)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_BUDGET))
        return ONCE_EUNSUPPORTED;
    return s->m->budget(s, out, take);
}

int once_store_synchronous(once_store *s, int *level)
{
    if (level)
        *level = ONCE_SYNC_DEFAULT;
    if (!s || !level)
        return ONCE_EINVAL;
    if (!(once_store_caps(s) & ONCE_STORE_SYNCHRONOUS))
        return ONCE_EUNSUPPORTED;
    return s->m->synchronous(s, level);
}
