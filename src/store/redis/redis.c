/*
 * redis.c -- the "redis://" store backend: the task registry in one Redis 7
 * server (or a primary with replicas), shared by any number of replicas of
 * onced (ONCE_STORE_SHARED).
 *
 * URL: redis://[[user]:password@]host[:port][/db][?param=value&...]
 *     (user and password percent-decoded; port 6379 and db 0 by default)
 *     prefix=NAME      key prefix (default "once"): letters, digits, '_', '-', '.'
 *     pool=N           connections per handle, 1..256 (default 16)
 *     batch=N          pipelining: at most N pipelines of concurrent create
 *                      and update scripts in flight, each sent in one write
 *                      on a connection of its own (N more than pool;
 *                      redis_batch.c); 0..16, default 2; 0: every
 *                      script alone (bench/backends.md, "Group commit on
 *                      by default")
 *     timeout_ms=N     per-command timeout (default 5000)
 *     tomb_ttl_ms=N    also PEXPIRE tombstones after N ms (default 0: only
 *                      purge removes them, on the clock the engine passes)
 *     reset=1          TESTS ONLY: delete every key under the prefix at open
 *                      (the conformance suite opens one URL per case)
 *
 * Key layout (P = prefix; redis_keys.c has the encodings):
 *   P:{<len>:<principal>:<task_id>}      hash: the record (fields h, r, u
 *                                        since layout version 3), or the
 *                                        tombstone
 *   P:{<len>:<principal>:<task_id>}:ev   list: event payloads, generation g
 *                                        at index g-1
 *   P:leases     zset: live records holding a lease, by lease_until
 *   P:finished   zset: terminal records, by finished_at (sweep's queue)
 *   P:tombs      zset: tombstones, by expired_at (purge's queue)
 *   P:l:<principal>  zset (lexicographic): the principal's records by
 *                (created_at, task_id), for ListTasks paging
 *   P:c:<len>:<principal>:<context_id>  zset (lexicographic): the same
 *                members, for the principal's records in that context
 *                (ListTasks by contextId; layout version 2). Written by
 *                the scripts that write P:l:<principal>, so exact; a state
 *                filter has no index (redis_read.c says why)
 *   P:meta       hash: store-wide values (meta)
 *   P:replicas   hash: replica heartbeat rows by replica id
 *                (redis_replica.c)
 *   P:schema     string: the layout's version, RD_SCHEMA_VERSION
 *                (redis_schema.c)
 *   P:{<len>:<principal>:<task_id>}:push hash: the task's push delivery
 *                rows, fields "<config_id>\0<f>" (redis_push.c)
 *   P:pushq      zset: delivery rows that may become due, member
 *                "<principal>\0<task_id>\0<config_id>", scored by when
 *                they do (push_claim's queue)
 * The record and its tombstone share one hash, so "a key holds at most one
 * of them" is structural; create-if-absent is EXISTS + HSET inside one
 * script (SET NX semantics for a hash plus its events and index entries).
 *
 * Redis Cluster. One task's keys share the hash tag {<len>:<principal>:
 * <task_id>}, so they always live in one slot. The index keys do not: every
 * write script here updates the task's keys AND the global indexes in one
 * atomic step, which a standalone server (and a primary with replicas)
 * allows and Cluster forbids (cross-slot). To run on Cluster: (1) shard each
 * index into N keys tagged {idx:<i>} with i = a hash of the task key, so a
 * scan visits N shards; (2) split each write into the task script (atomic,
 * one slot) followed by an index update script per shard (pushq included;
 * push claims already lease each row with a script on its task's keys plus
 * the index, so they only need to visit the shards); (3) since the
 * two steps are no longer atomic together, make every index consumer
 * treat entries as hints (they already re-check the task key: sweep and
 * purge scripts repair stale entries, list skips them, the engine's CAS
 * guards takeover) and add a periodic repair pass that re-indexes tasks
 * missing from an index (the failure the hints cannot cover: a crash
 * between the two steps). The scripts already declare every key in KEYS
 * and the task part already needs one slot, which is what makes that a
 * contained change; this build refuses nothing but is only tested on a
 * standalone server.
 *
 * Durability: what an acknowledged write survives is the server's choice.
 *   appendonly no, save ''       nothing survives a Redis restart: dedup
 *                                forgets every task (tests only)
 *   appendonly no, RDB snapshots a restart loses the writes since the last
 *                                snapshot: a retry of such a task can run
 *                                it again
 *   appendonly yes, everysec     a crash of Redis (not only of the host)
 *                                can lose about the last second of writes
 *   appendonly yes, always       every write is fsynced before the reply:
 *                                an acknowledged task survives any crash
 * once promises exactly-once only for writes the store kept, so run
 * appendonly yes + appendfsync always when a duplicate side effect is
 * expensive. Replication is asynchronous: a failover to a replica can lose
 * acknowledged writes whatever the fsync policy. That is why this backend
 * does not claim ONCE_STORE_DURABLE; PostgreSQL with synchronous_commit=on
 * does.
 *
 * Outage: open fails when the server is unreachable; later, slots return
 * ONCE_ESTORE while it is away and connections come back by themselves with
 * backoff (redis_conn.c). A reply that never arrives for a write is
 * reported, not retried: the script may have run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pct.h"
#include "store/feed.h"
#include "store/pool_stats.h"
#include "store/redis/redis_int.h"
#include "store/store_int.h"
#include "store/url_param.h"

/* The release hook, and so the close slot: redisFree reports nothing. */
static int rd_release(once_store *base)
{
    rd_store *s = (rd_store *)base;

    once__batch_conns_destroy(&s->pool, &s->bpool, &s->batch);
    once_free(s->host);
    once_free(s->user);
    if (s->password)
        memset(s->password, 0, strlen(s->password));
    once_free(s->password);
    once_free(s);
    return ONCE_OK;
}

/* Percent-decoded copy of p[0..n); NULL on OOM or a bad escape / NUL. */
void once__rd_pool_stats(once_store *base, once__pool_stats *calls, once__pool_stats *batch)
{
    rd_store *s = (rd_store *)base;
    once__pool_stats_read(&s->pool, calls);
    once__pool_stats_read(&s->bpool, batch);
}

static char *decode(const char *p, size_t n)
{
    char *out = once_malloc(n + 1);

    if (out && !once__pct_decode(p, n, 0, out, n + 1)) {
        once_free(out);
        return NULL;
    }
    return out;
}

static int bad(char *errbuf, size_t errlen, const char *what)
{
    once__store_errbuf(errbuf, errlen, "redis URL: %s", what);
    return ONCE_EINVAL;
}

static int parse_params(rd_store *s, const char *q, int *reset, char *errbuf, size_t errlen)
{
    const once__url_num nums[] = {
        {"pool", 1, 256, ONCE__URL_SIZE, &s->pool_max},
        {"batch", 0, RD_BATCH_MAX, ONCE__URL_INT, &s->batch_leaders},
        {"timeout_ms", 1, 3600000, ONCE__URL_INT, &s->timeout_ms},
        {"tomb_ttl_ms", 0, INT64_MAX / 2, ONCE__URL_I64, &s->tomb_ttl_ms},
    };
    once__url_param p;
    int rc;

    while (once__url_param_next(&q, &p)) {
        if (once__url_param_is(&p, "prefix")) {
            if (!once__url_name_ok(p.val, p.vlen, 1, RD_PREFIX_MAX, "_.-") ||
                once__url_param_copy(&p, s->prefix, sizeof s->prefix))
                return bad(errbuf, errlen, "prefix must be 1..64 of [A-Za-z0-9_.-]");
        } else if ((rc = once__url_param_setting(&p, nums, sizeof nums / sizeof nums[0], "redis",
                                                 errbuf, errlen)) != 1) {
            if (rc != ONCE_OK)
                return rc;
        } else if (once__url_param_is(&p, "reset")) {
            *reset = once__url_param_val_is(&p, "1");
        } else if (p.klen) {
            once__store_errbuf(errbuf, errlen, "redis URL: unknown parameter '%.*s'",
                               (int)(p.klen > 32 ? 32 : p.klen), p.key);
            return ONCE_EINVAL;
        }
    }
    return ONCE_OK;
}

/* A decimal in v[0..n) within lo..hi (the port and db of the URL's
 * authority and path, read as the parameters are). */
static int num_part(const char *v, size_t n, long long lo, long long hi, long long *out)
{
    const once__url_param p = {NULL, 0, v, n};
    return once__url_param_num(&p, lo, hi, out);
}

static int parse_url(rd_store *s, const char *url, int *reset, char *errbuf, size_t errlen)
{
    static const char scheme[] = "redis://";
    const char *p, *auth_end, *host, *host_end, *path, *q;
    long long x;

    if (strncmp(url, scheme, sizeof scheme - 1) != 0)
        return bad(errbuf, errlen, "must start with redis://");
    p = url + sizeof scheme - 1;
    q = strchr(p, '?');
    path = p + strcspn(p, "/?");
    auth_end = memchr(p, '@', (size_t)(path - p));
    if (auth_end) {
        const char *colon = memchr(p, ':', (size_t)(auth_end - p));
        if (colon) {
            if (colon > p && !(s->user = decode(p, (size_t)(colon - p))))
                return bad(errbuf, errlen, "bad user");
            if (!(s->password = decode(colon + 1, (size_t)(auth_end - colon - 1))))
                return bad(errbuf, errlen, "bad password");
        } else if (auth_end > p) {
            if (!(s->password = decode(p, (size_t)(auth_end - p))))
                return bad(errbuf, errlen, "bad password");
        }
        p = auth_end + 1;
    }
    host = p;
    if (*host == '[') { /* [IPv6] */
        const char *rb = memchr(host, ']', (size_t)(path - host));
        if (!rb)
            return bad(errbuf, errlen, "unterminated [");
        host_end = rb + 1;
        s->host = once_strndup(host + 1, (size_t)(rb - host - 1));
    } else {
        host_end = memchr(host, ':', (size_t)(path - host));
        if (!host_end)
            host_end = path;
        s->host = once_strndup(host, (size_t)(host_end - host));
    }
    if (!s->host || !s->host[0])
        return bad(errbuf, errlen, "no host");
    s->port = 6379;
    if (host_end < path && *host_end == ':') {
        if (num_part(host_end + 1, (size_t)(path - host_end - 1), 1, 65535, &x))
            return bad(errbuf, errlen, "port must be 1..65535");
        s->port = (int)x;
    } else if (host_end != path) {
        return bad(errbuf, errlen, "junk after host");
    }
    if (*path == '/') {
        const char *db = path + 1, *db_end = q ? q : db + strlen(db);
        if (db_end > db) {
            if (num_part(db, (size_t)(db_end - db), 0, 65535, &x))
                return bad(errbuf, errlen, "db must be a number");
            s->db = (int)x;
        }
    }
    return parse_params(s, q ? q + 1 : NULL, reset, errbuf, errlen);
}

/* The parse hook: the defaults, then the URL over them. */
static int rd_parse(once_store *base, const char *url, char *errbuf, size_t errlen)
{
    rd_store *s = (rd_store *)base;

    snprintf(s->prefix, sizeof s->prefix, "once");
    s->pool_max = RD_POOL_DEFAULT;
    s->batch_leaders = RD_BATCH_DEFAULT;
    s->timeout_ms = RD_TIMEOUT_DEFAULT_MS;
    return parse_url(s, url, &s->reset, errbuf, errlen);
}

/* The first connection's setup: the scripts, the schema marker, and a
 * test's reset. */
static int rd_setup(void *owner, once__pool_item *first, void *sc)
{
    rd_store *s = owner;
    int rc = once__rd_load_scripts(s, (rd_conn *)first);
    return rc == ONCE_OK ? once__rd_schema(s, (rd_conn *)first, sc, s->reset) : rc;
}

/* The start hook: the pools and the first connection (store/batch.h). */
static int rd_start(once_store *base, once__schema *sc, char *errbuf, size_t errlen)
{
    rd_store *s = (rd_store *)base;
    const once__batch_conns_cfg cfg = {&once__rd_pool_ops, s, &s->base, s->pool_max,
                                       s->batch_leaders, once__rd_batch_run, RD_POOL_WAIT_MS,
                                       RD_BACKOFF_MIN_MS, RD_BACKOFF_MAX_MS, rd_setup, sc};

    if (s->batch_leaders == 0)
        base->caps_off |= ONCE_STORE_CREATE_START;   /* every write alone */
    return once__batch_conns_start(&s->pool, &s->bpool, &s->batch, &cfg, errbuf, errlen);
}

const once__backend once__rd_backend = {"redis", sizeof(rd_store), RD_SCHEMA_VERSION, rd_parse,
                                        rd_start, rd_release};

ONCE__STORE_OPEN(once__rd, once__rd_backend)

/* The slots named otherwise, and those Redis has not (slots.h). */
#define once__rd_close rd_release
#define once__rd_feed_next once__conn_feed_next
#define once__rd_feed_close once__conn_feed_close
#define once__rd_generations NULL
#define once__rd_budget NULL
#define once__rd_synchronous NULL

const once_store_methods once__store_redis =
    ONCE__STORE_TABLE(once__rd, "redis",
                      ONCE_STORE_SHARED | ONCE_STORE_PUSH | ONCE_STORE_FEED | ONCE_STORE_REPLICAS |
                          ONCE_STORE_CREATE_START | ONCE_STORE_START_PUSH);
