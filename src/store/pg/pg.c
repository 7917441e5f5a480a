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
 *                    (N more than pool); 0..16, default 0: every write
 *                    alone (bench/backends.md: on 2 CPUs batching gained
 *                    nothing end to end and cost admissions under overload)
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

#include "store/pg/pg_int.h"
#include "store/store_int.h"
#include "store/url_param.h"

/* The release hook, and so the close slot: PQfinish reports nothing. */
static int pg_release(once_store *base)
{
    pg_store *s = (pg_store *)base;

    once__batch_conns_destroy(&s->pool, &s->bpool, &s->batch);
    once_free(s->conninfo);
    once_free(s);
    return ONCE_OK;
}

static int schema_ok(const char *v, size_t n)
{
    size_t i;

    if (n == 0 || n > PG_SCHEMA_MAX || (v[0] >= '0' && v[0] <= '9'))
        return 0;
    for (i = 0; i < n; i++) {
        char ch = v[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_'))
            return 0;
    }
    return 1;
}

/* Split once's parameters off the URL: s->conninfo gets the rest. */
static int parse_url(pg_store *s, const char *url, int *reset, char *errbuf, size_t errlen)
{
    const char *q = strchr(url, '?');
    size_t base = q ? (size_t)(q - url) : strlen(url);
    char *ci;
    size_t ci_len;

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
    *reset = 0;
    while (q && *q) {
        const char *k = q + 1, *end = k + strcspn(k, "&"), *eq = memchr(k, '=', (size_t)(end - k));
        const char *v = eq ? eq + 1 : end;
        size_t klen = (size_t)((eq ? eq : end) - k), vlen = (size_t)(end - v);

        q = *end ? end : NULL;
        if (klen == 6 && memcmp(k, "schema", 6) == 0) {
            if (!schema_ok(v, vlen)) {
                once__store_errbuf(errbuf, errlen,
                                   "postgres URL: schema must be 1..%d letters, digits or _",
                                   PG_SCHEMA_MAX);
                once_free(ci);
                return ONCE_EINVAL;
            }
            memcpy(s->schema, v, vlen);
            s->schema[vlen] = '\0';
        } else if ((klen == 4 && memcmp(k, "pool", 4) == 0) ||
                   (klen == 5 && memcmp(k, "batch", 5) == 0)) {
            once__url_param prm = {k, klen, v, vlen};
            int pool = klen == 4;
            long long n;
            if (once__url_param_num(&prm, pool ? 1 : 0, pool ? 256 : PG_BATCH_MAX, &n) != 0) {
                once__store_errbuf(errbuf, errlen, "postgres URL: %s must be %d..%d",
                                   pool ? "pool" : "batch", pool ? 1 : 0,
                                   pool ? 256 : PG_BATCH_MAX);
                once_free(ci);
                return ONCE_EINVAL;
            }
            if (pool)
                s->pool_max = (size_t)n;
            else
                s->batch_leaders = (int)n;
        } else if (klen == 5 && memcmp(k, "reset", 5) == 0) {
            *reset = vlen == 1 && v[0] == '1';
        } else if (klen > 0) {
            ci[ci_len] = ci_len == base ? '?' : '&';
            ci_len++;
            memcpy(ci + ci_len, k, (size_t)(end - k));
            ci_len += (size_t)(end - k);
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

    if (!PQisthreadsafe()) {
        once__store_errbuf(errbuf, errlen, "postgres: libpq is not thread-safe");
        return ONCE_EUNSUPPORTED;
    }
    return parse_url(s, url, &s->reset, errbuf, errlen);
}

/* The start hook: the pools, one connection, the migrations; that
 * connection then serves the pool. */
static int pg_start(once_store *base, char *errbuf, size_t errlen)
{
    pg_store *s = (pg_store *)base;
    const once__batch_conns_cfg cfg = {&once__pg_pool_ops, s, &s->base, s->pool_max,
                                       s->batch_leaders, once__pg_batch_run, PG_POOL_WAIT_MS,
                                       PG_BACKOFF_MIN_MS, PG_BACKOFF_MAX_MS};
    pg_conn *c;
    int rc;

    once__batch_conns_init(&s->pool, &s->bpool, &s->batch, &cfg);
    rc = once__pg_connect(s, &c, errbuf, errlen);
    if (rc != ONCE_OK)
        return rc;
    rc = once__pg_migrate(s, c, s->reset);
    if (rc != ONCE_OK) {
        once__pg_conn_close(c);
        return rc;
    }
    once__pool_adopt(&s->pool, &c->item);
    return ONCE_OK;
}

static const once__backend pg_backend = {"postgres", sizeof(pg_store), pg_parse, pg_start,
                                         pg_release};

ONCE__STORE_BACKEND(once__store_pg, pg, "postgres",
                    ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH, pg_backend);
