/*
 * dynamo.c -- the "dynamodb://" store backend: the task registry in one
 * Amazon DynamoDB table, shared by any number of replicas of onced
 * (ONCE_STORE_SHARED), over DynamoDB's HTTP JSON API with libcurl (which
 * signs with SigV4 itself) and jansson. No AWS SDK.
 *
 * URL: dynamodb://TABLE[?param=value&...]
 *     region=R         AWS region (else AWS_REGION, else AWS_DEFAULT_REGION)
 *     endpoint=URL     e.g. http://127.0.0.1:8000 for a local emulator
 *                      (default https://dynamodb.<region>.amazonaws.com/)
 *     create=1         create the table and its indexes if absent (and
 *                      enable TTL when tomb_ttl_ms is set); otherwise open
 *                      checks they exist and says what is missing
 *     pool=N           HTTP handles per store handle, 1..256 (default 16)
 *     timeout_ms=N     per request (default 5000)
 *     tomb_ttl_ms=N    tombstones carry a TTL attribute N ms after they
 *                      were made, for DynamoDB to delete them (default 0)
 *     reset=1          TESTS ONLY: delete every item at open (with
 *                      create=1, a table lacking an index is dropped and
 *                      created anew)
 * Credentials: dy_cred.c (environment, then ~/.aws/credentials).
 *
 * Item layout (one table; dy_item.c has the encodings). A task's items
 * share the partition key pk = "<len(principal)>:<principal><task_id>":
 *   sk "r"        the record, or the tombstone it became (attribute tb):
 *                 "a key holds at most one of them" is structural
 *   sk "e<gen>"   one event (20-digit generation, so they sort)
 *   pk "m:<name>", sk "m"   a meta value; "m:schema_version" holds the
 *                 layout's version (DY_SCHEMA_VERSION, dy_table.c);
 *                 "m:lx_backfill" where an unfinished upgrade stopped
 *   pk "r:", sk "<replica id>"   a replica's heartbeat row (dy_replica.c):
 *                 one partition, so the list is one Query
 * Four sparse global secondary indexes replace scans:
 *   due           dk/dt: "L"/lease_until on an unfinished record with a
 *                 lease (expired_leases), "F"/finished_at on a finished
 *                 record (sweep), "T"/expired_at on a tombstone (purge);
 *                 absent otherwise
 *   by_principal  lp/lc: principal / created_at (20 digits) + task_id on a
 *                 record (ListTasks order); absent on a tombstone
 *   by_context    lx/lc: "<len(principal)>:<principal><context_id>" / the
 *                 same lc (ListTasks by contextId); absent on a tombstone.
 *                 Added in layout version 2: a table of version 1 gets the
 *                 index from ?create=1 and its records "lx" from the
 *                 upgrade (dy_upgrade.c)
 *   push          pq/pt: when the record's first push delivery row can be
 *                 due, + the task key (push_claim; dy_push.c)
 * due and push keep all their entries under a few partition key values,
 * so on DynamoDB each is bounded by one index partition's write rate
 * (docs/production.md); the list indexes spread over principals and
 * contexts. A state filter has no index: list reads a bounded number of
 * entries per call and hands back where it stopped (dy_list.c).
 *
 * The commit rule. A write is ONE conditional PutItem of the record item
 * (create: attribute_not_exists(pk); update: v = expected version, the
 * delivery rows' version pv unchanged, not a tombstone), and the events it
 * appends, and the delivery rows it implies, travel inside that item
 * ("pe", generations pb+1 .. g). The next update first copies those
 * pending events into their own items (unconditional puts of committed
 * text, so copying twice is harmless) and only then replaces the record
 * item, whose new pb is the old g. So an event item at or below pb is
 * always committed text, and a reader takes events 1..pb from items and
 * the rest from the record item. Event items above pb (a writer that lost
 * its CAS after copying, a key swept and created again) are never read
 * and are overwritten before pb reaches them. DynamoDB's
 * TransactWriteItems could write the record and separate event items in
 * one step, but it costs two write units per item and dynalite, the
 * emulator the tests run on, does not implement it; the single-item commit
 * is atomic on both. The record item holds the task plus its last write's
 * events, and both must fit DynamoDB's 400 KB item limit: a larger item is
 * refused with ONCE_ERANGE before it is sent.
 *
 * Retention. sweep finds finished records through the index, replaces each
 * by a tombstone (conditional on its version) and deletes its events;
 * purge deletes tombstones the same way. With tomb_ttl_ms a tombstone also
 * carries "ttl" so that DynamoDB deletes it without a purge; TTL deletion
 * is lazy (up to days), and a tombstone whose TTL has passed but which is
 * still present answers ETOMBSTONE (TASK_EXPIRED) like any other: the key
 * stays known until the item is really gone.
 *
 * Reads that decide (load, events, the CAS's own read) are consistent;
 * index reads are eventually consistent on DynamoDB (dy_read.c).
 * Throttling is retried with backoff, then ONCE_EBUSY (dy_http.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"
#include "store/url_param.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The release hook, and so the close slot: nothing is pending, every
 * write was answered. */
static int dy_release(once_store *base)
{
    dy_store *s = dys(base);

    if (s->pool.ops)
        once__pool_destroy(&s->pool);
    once__dy_cred_free(&s->cred);
    once_free(s->endpoint);
    once_free(s->sigv4);
    once_free(s);
    return ONCE_OK;
}

static int bad(char *errbuf, size_t errlen, const char *what)
{
    once__store_errbuf(errbuf, errlen, "dynamodb URL: %s", what);
    return ONCE_EINVAL;
}

static int parse_params(dy_store *s, const char *q, char *endpoint, size_t eplen, char *errbuf,
                        size_t errlen)
{
    const once__url_num nums[] = {
        {"create", 0, 1, ONCE__URL_INT, &s->create},
        {"pool", 1, 256, ONCE__URL_SIZE, &s->pool_max},
        {"timeout_ms", 1, 3600000, ONCE__URL_INT, &s->timeout_ms},
        {"tomb_ttl_ms", 0, INT64_MAX / 2, ONCE__URL_I64, &s->tomb_ttl_ms},
        {"reset", 0, 1, ONCE__URL_INT, &s->reset},
    };
    once__url_param p;
    int rc;

    while (once__url_param_next(&q, &p)) {
        if (once__url_param_is(&p, "region")) {
            if (once__url_param_copy(&p, s->region, sizeof s->region))
                return bad(errbuf, errlen, "region must be 1..32 characters");
        } else if (once__url_param_is(&p, "endpoint")) {
            if (once__url_param_copy(&p, endpoint, eplen) ||
                (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0))
                return bad(errbuf, errlen, "endpoint must be an http:// or https:// URL");
        } else if ((rc = once__url_param_setting(&p, nums, sizeof nums / sizeof nums[0],
                                                 "dynamodb", errbuf, errlen)) != 1) {
            if (rc != ONCE_OK)
                return rc;
        } else {
            once__store_errbuf(errbuf, errlen, "dynamodb URL: unknown parameter '%.*s'",
                               (int)(p.klen > 32 ? 32 : p.klen), p.key);
            return ONCE_EINVAL;
        }
    }
    return ONCE_OK;
}

static int parse_url(dy_store *s, const char *url, char *errbuf, size_t errlen)
{
    static const char scheme[] = "dynamodb://";
    char endpoint[512] = "";
    const char *t, *q;
    size_t n;
    int rc;

    if (strncmp(url, scheme, sizeof scheme - 1) != 0)
        return bad(errbuf, errlen, "must start with dynamodb://");
    t = url + sizeof scheme - 1;
    q = strchr(t, '?');
    n = q ? (size_t)(q - t) : strlen(t);
    if (!once__url_name_ok(t, n, 3, DY_TABLE_MAX, "_.-"))
        return bad(errbuf, errlen, "the table name must be 3..255 of [A-Za-z0-9_.-]");
    memcpy(s->table, t, n);
    s->table[n] = '\0';
    rc = parse_params(s, q ? q + 1 : NULL, endpoint, sizeof endpoint, errbuf, errlen);
    if (rc != ONCE_OK)
        return rc;
    if (!s->region[0]) {
        const char *r = getenv("AWS_REGION");
        if (!r || !r[0])
            r = getenv("AWS_DEFAULT_REGION");
        if (!r || !r[0] || strlen(r) >= sizeof s->region)
            return bad(errbuf, errlen, "no region (?region=, AWS_REGION or AWS_DEFAULT_REGION)");
        once__strlcpy(s->region, r, sizeof s->region);
    }
    if (!endpoint[0])
        snprintf(endpoint, sizeof endpoint, "https://dynamodb.%s.amazonaws.com/", s->region);
    n = strlen(s->region) + 24;
    s->endpoint = once_strdup(endpoint);
    s->sigv4 = once_malloc(n);
    if (!s->endpoint || !s->sigv4)
        return ONCE_ENOMEM;
    snprintf(s->sigv4, n, "aws:amz:%s:dynamodb", s->region);
    return ONCE_OK;
}

/* The parse hook: libcurl once per process, the URL over the defaults,
 * the credentials, the pool (it connects lazily). */
static int dy_parse(once_store *base, const char *url, char *errbuf, size_t errlen)
{
    dy_store *s = dys(base);
    int rc;

    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        once__store_errbuf(errbuf, errlen, "dynamodb: curl_global_init failed");
        return ONCE_ESTORE;
    }
    s->pool_max = DY_POOL_DEFAULT;
    s->timeout_ms = DY_TIMEOUT_DEFAULT_MS;
    rc = parse_url(s, url, errbuf, errlen);
    if (rc == ONCE_OK)
        rc = once__dy_cred_load(&s->cred, errbuf, errlen);
    if (rc == ONCE_OK)
        once__pool_init(&s->pool, &once__dy_pool_ops, s, &s->base, s->pool_max, DY_POOL_WAIT_MS,
                        0, 0);
    return rc;
}

/* The start hook: the table exists (or is created), the schema marker,
 * and a test's reset. Creating the table is part of the schema step: a
 * probe or an open that may not migrate creates none, and a missing table
 * is a store at version 0. */
static int dy_start(once_store *base, once__schema *sc, char *errbuf, size_t errlen)
{
    dy_store *s = dys(base);

    if (sc->flags & (ONCE__OPEN_PROBE | ONCE_STORE_OPEN_NO_MIGRATE))
        s->create = 0;
    int rc = once__dy_table_ready(s, (sc->flags & ONCE__OPEN_PROBE) != 0, errbuf, errlen);
    int have_table = rc == ONCE_OK;
    if (rc == ONCE_ENOTFOUND && sc->flags) {
        if (errbuf && errlen)
            errbuf[0] = '\0'; /* the schema step says what is wrong */
        rc = ONCE_OK;
    }
    if (rc == ONCE_OK)
        rc = once__dy_schema(s, sc, have_table);
    return rc == ONCE_ENOTFOUND ? ONCE_EINVAL : rc;
}

const once__backend once__dy_backend = {"dynamodb", sizeof(dy_store), DY_SCHEMA_VERSION, dy_parse,
                                        dy_start, dy_release};

ONCE__STORE_OPEN(once__dy, once__dy_backend)

/* The slots named otherwise, and those DynamoDB has not (slots.h). */
#define once__dy_close dy_release
#define once__dy_feed_open NULL
#define once__dy_feed_next NULL
#define once__dy_feed_close NULL
#define once__dy_create_start NULL
#define once__dy_budget NULL
#define once__dy_synchronous NULL

/* DURABLE: DynamoDB acknowledges a write once it is stored in several
 * availability zones. PUSH: delivery rows live in the record item
 * (dy_push.c). */
const once_store_methods once__store_dynamo =
    ONCE__STORE_TABLE(once__dy, "dynamodb",
                      ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH |
                          ONCE_STORE_GENERATIONS | ONCE_STORE_REPLICAS);
