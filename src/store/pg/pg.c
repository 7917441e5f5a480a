/*
 * pg.c -- the "postgres://" (also "postgresql://") store backend: the task
 * registry in PostgreSQL, shared by any number of replicas on any number of
 * machines (ONCE_STORE_SHARED), every acknowledged write committed
 * (ONCE_STORE_DURABLE as far as the server's synchronous_commit/fsync go),
 * with push delivery rows any replica may claim (ONCE_STORE_PUSH, pg_push.c).
 *
 * URL: a libpq connection URI, e.g.
 *     postgres://user:secret@db.example:5432/agents?sslmode=require
 * plus once's own query parameters, removed before libpq sees the URI:
 *     schema=NAME    the schema holding once's tables (default "public"),
 *                    created if absent; letters, digits, '_' only
 *     pool=N         connections per handle, 1..256 (default 16)
 *     batch=N        group commit: at most N batches of concurrent creates
 *                    and updates in flight, each one pipelined round trip
 *                    and one COMMIT (pg_batch.c) on a connection of its own
 *                    (N more than pool); 0..16, default 2; 0: every
 *                    write alone (bench/backends.md, "Group commit on by
 *                    default": half the server's CPU per new task)
 *     compact=MS|off a task finished this long keeps only its last event,
 *                    emptied, and its texts deflated (default 60000, as
 *                    SQLite; pg_compact.c); off: finished tasks stay whole
 *                    until retention
 *     reset=1        TESTS ONLY: empty once's tables in that schema at open
 *                    (the conformance suite opens one URL per case)
 * libpq defaults apply otherwise (PGPASSWORD, ~/.pgpass, connect_timeout
 * defaults to 5 s here). Each pooled connection keeps prepared statements,
 * so a connection pooler in between must pool sessions, not transactions.
 *
 * open connects, applies the schema migrations (pg_schema.c) and keeps that
 * connection in the pool. It fails when the server cannot be reached:
 * whoever opens the store decides whether to retry. Once open, an outage
 * makes slots return ONCE_ESTORE (retryable), and connections come back by
 * themselves with backoff (pg_conn.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/feed.h"
#include "store/pg/pg_int.h"
#include "store/pool_stats.h"
#include "store/store_int.h"
#include "store/url_param.h"

/* The release hook, and so the close slot: PQfinish reports nothing. */
static int pg_release(once_store *base)
{
    pg_store *s = (pg_store *)base;

    once__batch_conns_destroy(&s->pool, &s->bpool, &s->batch);
    pthread_mutex_destroy(&s->cmu);
    once__zip_free(&s->zip);
    once_free(s->conninfo);
    once_free(s);
    return ONCE_OK;
}

void once__pg_pool_stats(once_store *base, once__pool_stats *calls, once__pool_stats *batch)
{
    pg_store *s = (pg_store *)base;
    once__pool_stats_read(&s->pool, calls);
    once__pool_stats_read(&s->bpool, batch);
}

/* An SQL identifier that needs no quoting: no leading digit. */
static int schema_ok(const char *v, size_t n)
{
    return once__url_name_ok(v, n, 1, PG_SCHEMA_MAX, "_") && !(v[0] >= '0' && v[0] <= '9');
}

/* compact=MS|off into s->compact_ms (-1: off); *seen says it was given. */
static int url_compact(pg_store *s, const once__url_param *p, int *seen, char *errbuf,
                       size_t errlen)
{
    long long ms;

    if (*seen) {
        once__store_errbuf(errbuf, errlen, "postgres URL: compact given twice");
        return ONCE_EINVAL;
    }
    *seen = 1;
    if (once__url_param_val_is(p, "off")) {
        s->compact_ms = -1;
        return ONCE_OK;
    }
    if (once__url_param_num(p, 0, PG_COMPACT_MAX_MS, &ms) != 0) {
        once__store_errbuf(errbuf, errlen, "postgres URL: compact must be milliseconds or off");
        return ONCE_EINVAL;
    }
    s->compact_ms = ms;
    return ONCE_OK;
}

/* Split once's parameters off the URL: s->conninfo gets the rest. */
static int parse_url(pg_store *s, const char *url, int *reset, char *errbuf, size_t errlen)
{
    const char *q = strchr(url, '?');
    size_t base = q ? (size_t)(q - url) : strlen(url);
    const once__url_num nums[] = {
        {"pool", 1, 256, ONCE__URL_SIZE, &s->pool_max},
        {"batch", 0, PG_BATCH_MAX, ONCE__URL_INT, &s->batch_leaders},
    };
    once__url_param prm;
    char *ci;
    size_t ci_len;
    int rc, compact_seen = 0;

    if (strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0) {
        once__store_errbuf(errbuf, errlen, "postgres store URL must start with postgres://");
        return ONCE_EINVAL;
    }
    ci = once_malloc(strlen(url) + 1);
    if (!ci)
        return ONCE_ENOMEM;
    memcpy(ci, url, base);
    ci_len = base;
    snprintf(s->schema, sizeof s->schema, "public");
    s->pool_max = PG_POOL_DEFAULT;
    s->batch_leaders = PG_BATCH_DEFAULT;
    s->compact_ms = PG_COMPACT_DEFAULT_MS;
    *reset = 0;
    if (q)
        q++;
    while (once__url_param_next(&q, &prm)) {
        if (once__url_param_is(&prm, "schema")) {
            if (!schema_ok(prm.val, prm.vlen) ||
                once__url_param_copy(&prm, s->schema, sizeof s->schema)) {
                once__store_errbuf(errbuf, errlen,
                                   "postgres URL: schema must be 1..%d letters, digits or _",
                                   PG_SCHEMA_MAX);
                once_free(ci);
                return ONCE_EINVAL;
            }
        } else if ((rc = once__url_param_setting(&prm, nums, sizeof nums / sizeof nums[0],
                                                 "postgres", errbuf, errlen)) != 1) {
            if (rc != ONCE_OK) {
                once_free(ci);
                return rc;
            }
        } else if (once__url_param_is(&prm, "compact")) {
            if ((rc = url_compact(s, &prm, &compact_seen, errbuf, errlen)) != ONCE_OK) {
                once_free(ci);
                return rc;
            }
        } else if (once__url_param_is(&prm, "reset")) {
            *reset = once__url_param_val_is(&prm, "1");
        } else if (prm.klen > 0) {
            /* libpq's own: passed on as written */
            size_t n = (size_t)(prm.val + prm.vlen - prm.key);
            ci[ci_len] = ci_len == base ? '?' : '&';
            ci_len++;
            memcpy(ci + ci_len, prm.key, n);
            ci_len += n;
        }
    }
    ci[ci_len] = '\0';
    s->conninfo = ci;
    return ONCE_OK;
}

/* The parse hook: libpq's thread safety, then the URL. */
static int pg_parse(once_store *base, const char *url, char *errbuf, size_t errlen)
{
    pg_store *s = (pg_store *)base;

    pthread_mutex_init(&s->cmu, NULL); /* first: release destroys it */
    if (!PQisthreadsafe()) {
        once__store_errbuf(errbuf, errlen, "postgres: libpq is not thread-safe");
        return ONCE_EUNSUPPORTED;
    }
    return parse_url(s, url, &s->reset, errbuf, errlen);
}

/* The first connection's setup: the schema migrations (and a test's reset). */
static int pg_setup(void *owner, once__pool_item *first, void *sc)
{
    pg_store *s = owner;
    return once__pg_migrate(s, (pg_conn *)first, sc, s->reset);
}

/* The start hook: the pools and the first connection (store/batch.h),
 * whose setup is the schema step. */
static int pg_start(once_store *base, once__schema *sc, char *errbuf, size_t errlen)
{
    pg_store *s = (pg_store *)base;
    const once__batch_conns_cfg cfg = {&once__pg_pool_ops, s, &s->base, s->pool_max,
                                       s->batch_leaders, once__pg_batch_run, PG_POOL_WAIT_MS,
                                       PG_BACKOFF_MIN_MS, PG_BACKOFF_MAX_MS, pg_setup, sc};

    if (s->batch_leaders == 0)
        base->caps_off |= ONCE_STORE_CREATE_START;   /* every write alone */
    return once__batch_conns_start(&s->pool, &s->bpool, &s->batch, &cfg, errbuf, errlen);
}

const once__backend once__pg_backend = {"postgres", sizeof(pg_store), PG_SCHEMA_VERSION, pg_parse,
                                        pg_start, pg_release};

ONCE__STORE_OPEN(once__pg, once__pg_backend)

/* The slots named otherwise, and those PostgreSQL has not (slots.h). */
#define once__pg_close pg_release
#define once__pg_feed_next once__conn_feed_next
#define once__pg_feed_close once__conn_feed_close
#define once__pg_generations NULL
#define once__pg_budget NULL
#define once__pg_synchronous NULL

/* CREATE_START without START_PUSH: a record's delivery rows need a
 * transaction of their own, outside the group (pg_write.c). */
const once_store_methods once__store_pg =
    ONCE__STORE_TABLE(once__pg, "postgres",
                      ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH | ONCE_STORE_FEED |
                          ONCE_STORE_REPLICAS | ONCE_STORE_CREATE_START | ONCE_STORE_LIST_SEEK);
