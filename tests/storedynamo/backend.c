/*
 * backend.c -- what only the DynamoDB backend has to get right, beyond the
 * store conformance suite, against dynalite. argv[1] is a dynamodb:// URL
 * with region and endpoint; each case works in its own table (the URL's
 * table name is replaced) and reads the items themselves where the
 * contract alone cannot show what is stored.
 *
 *   missing_table_named     open without ?create=1 on an absent table says
 *                           which table, where, and how to create it
 *   missing_index_named     a table with the right keys but no indexes is
 *                           refused, naming the four indexes and their keys;
 *                           a test's reset=1 makes it anew
 *   schema_marker           the meta item schema_version: absent table or
 *                           item is version 0, refused under
 *                           ONCE_STORE_OPEN_NO_MIGRATE (no table created,
 *                           nor by a dry run); once__store_migrate creates
 *                           and marks, a plain open marks an unmarked
 *                           table; a newer marker is refused by open,
 *                           migrate and a dry run
 *   item_limit              a record over DynamoDB's 400 KB item limit is
 *                           ONCE_ERANGE (create and update) with nothing
 *                           written; just under it, the text comes back whole
 *   expired_ttl_still_known a tombstone whose TTL has passed but which is
 *                           still present (TTL deletes lazily) answers
 *                           ETOMBSTONE to load and create, never ENOTFOUND
 *   commit_rule             events ride in the record item until the next
 *                           write copies them out; an event item above the
 *                           committed generation (a losing writer's copy) is
 *                           never read and is overwritten before use
 *   credentials_order       the environment first, then the shared
 *                           credentials file's AWS_PROFILE section; a missing
 *                           profile is named
 *   unreachable_endpoint    open against a port nobody listens on fails
 *                           with ONCE_ESTORE and says so
 *   metrics_row             its calls are timed under backend="dynamodb" in
 *                           the store histogram, not "other"
 *   push_writes_race_acks   record updates racing two deliverers' claims and
 *                           acks on the task's row (tests/store/push_race.h):
 *                           a record write that finds the rows moved writes
 *                           again, so no ack is lost or refused
 *   throttling_retried      (dynalite never throttles: a fake endpoint of
 *                           the test's own answers instead) a throttled call
 *                           is retried, reads and conditional writes alike;
 *                           throttling that persists is ONCE_EBUSY after
 *                           DY_ATTEMPTS tries; a conditional write answered
 *                           500 is not sent again (it may have applied)
 *   table_upgrade_adds_index (the fake again, scripted: dynalite accepts
 *                           UpdateTable and adds no index) a table of layout
 *                           1 is refused without ?create=1, naming
 *                           "by_context" and how to add it; with it, one
 *                           UpdateTable creates the index and open waits
 *                           until it is ACTIVE; an endpoint that adds
 *                           nothing is named
 *   list_budget_across_pages (the scripted fake) a state filter's budget
 *                           is summed over the pages DynamoDB cuts (its
 *                           1 MB): requests ask for twice the page, then
 *                           twice that, up to what is left of it,
 *                           and a spent budget ends the page with a resume
 *                           record decoded from LastEvaluatedKey; without a
 *                           state filter each request asks for what the
 *                           page lacks, from index by_context for a context
 *   upgrade_backfills_old_records  records written by hand as layout 1 (no
 *                           "lx") are flagged by check and missing from
 *                           ListTasks by context; a pass cut short keeps its
 *                           position; the next open finishes, marks version
 *                           2, and every filter lists them
 */
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/metrics.h"
#include "store/dynamo/dy_int.h"
#include "store/store_info.h"
#include "store/util.h"
#include "timeout.h"

#define T0 INT64_C(1700000000000)

#include "store/push_race.h"

static const char *g_base;
static int g_case;

/* g_base with the table renamed to <tag>_<pid>_<case> and extra params
 * appended (each starting with '&'). */
static void url_for(char *out, size_t n, const char *tag, const char *extra)
{
    const char *q = strchr(g_base, '?');

    snprintf(out, n, "dynamodb://%s_%d_%d%s%s", tag, (int)getpid(), g_case, q ? q : "?",
             extra ? extra : "");
}

/* g_base's query without create=1. */
static void url_nocreate(char *out, size_t n, const char *table)
{
    const char *q = strchr(g_base, '?');
    char tail[512];
    char *c;

    snprintf(tail, sizeof tail, "%s", q ? q : "?");
    while ((c = strstr(tail, "&create=1")) != NULL)
        memmove(c, c + 9, strlen(c + 9) + 1);
    snprintf(out, n, "dynamodb://%s%s", table, tail);
}

static once_store *open_ok(const char *url)
{
    once_store *s = NULL;
    char err[512];
    int rc = once_store_open(url, NULL, &s, err, sizeof err);

    if (rc != ONCE_OK)
        fail_msg("open %s: %s: %s", url, once_errname(rc), err);
    return s;
}

static void check_clean(once_store *s)
{
    once_check_report rep;
    int rc = once_store_check(s, &rep);

    if (rc != ONCE_OK || !st_clean(&rep))
        fail_msg("check: %s: %s", once_errname(rc), rep.first_problem);
}

/* The raw item under (principal, task_id, sk), or NULL. */
static json_t *raw_get(once_store *s, const char *principal, const char *task_id, const char *sk)
{
    dy_item key;
    json_t *req, *reply = NULL, *item;

    assert_int_equal(once__dy_key(&key, principal, task_id, sk), ONCE_OK);
    req =
        json_pack("{s:s, s:O, s:b}", "TableName", dys(s)->table, "Key", key.o, "ConsistentRead", 1);
    once__dy_item_free(&key);
    assert_non_null(req);
    assert_int_equal(once__dy_call(dys(s), "GetItem", req, DY_IDEMPOTENT, &reply, NULL), ONCE_OK);
    json_decref(req);
    item = json_incref(json_object_get(reply, "Item"));
    json_decref(reply);
    return item;
}

static int setup(void **state)
{
    (void)state;
    g_case++;
    return 0;
}

/* ------------------------------------------------------------------------ */

static void missing_table_named(void **state)
{
    char url[768], table[64], err[512];
    once_store *s = (once_store *)1;

    (void)state;
    snprintf(table, sizeof table, "absent_%d", (int)getpid());
    url_nocreate(url, sizeof url, table);
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_null(s);
    if (!strstr(err, table) || !strstr(err, "does not exist") || !strstr(err, "create=1") ||
        !strstr(err, "127.0.0.1"))
        fail_msg("the message names the table, the endpoint and ?create=1: %s", err);
}

static void missing_index_named(void **state)
{
    char url[768], table[64], err[1024];
    once_store *s, *bare = (once_store *)1;
    json_t *req;

    (void)state;
    url_for(url, sizeof url, "helper", NULL);
    s = open_ok(url);
    snprintf(table, sizeof table, "bare_%d_%d", (int)getpid(), g_case);
    req = json_pack("{s:s, s:s, s:[{s:s,s:s},{s:s,s:s}], s:[{s:s,s:s},{s:s,s:s}]}", "TableName",
                    table, "BillingMode", "PAY_PER_REQUEST", "AttributeDefinitions",
                    "AttributeName", "pk", "AttributeType", "S", "AttributeName", "sk",
                    "AttributeType", "S", "KeySchema", "AttributeName", "pk", "KeyType", "HASH",
                    "AttributeName", "sk", "KeyType", "RANGE");
    assert_int_equal(once__dy_call(dys(s), "CreateTable", req, DY_CONDITIONAL, NULL, NULL),
                     ONCE_OK);
    json_decref(req);
    once_store_close(s);

    url_nocreate(url, sizeof url, table);
    assert_int_equal(once_store_open(url, NULL, &bare, err, sizeof err), ONCE_EINVAL);
    assert_null(bare);
    if (!strstr(err, table) ||
        !strstr(err, "missing global secondary index \"due\" on dk (S, "
                     "HASH) + dt (N, RANGE)") ||
        !strstr(err, "missing global secondary index \"by_principal\" on lp (S, HASH) + lc (S, "
                     "RANGE)") ||
        !strstr(err, "missing global secondary index \"push\" on pq (S, HASH) + pt (S, RANGE)") ||
        !strstr(err, "missing global secondary index \"by_context\" on lx (S, HASH) + lc (S, "
                     "RANGE)"))
        fail_msg("the message names the four missing indexes and their keys: %s", err);

    /* A test's reset=1 with create=1 makes such a table anew, whole. */
    snprintf(url, sizeof url, "dynamodb://%s%s&reset=1", table, strchr(g_base, '?'));
    bare = open_ok(url);
    once_store_close(bare);
}

/* The schema marker item set to version v (0: deleted), behind the
 * backend's back. */
static void marker_set(once_store *s, int v)
{
    char num[16];
    json_t *req;

    snprintf(num, sizeof num, "%d", v);
    req = v ? json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}}", "TableName", dys(s)->table,
                        "Item", "pk", "S", "m:" DY_META_SCHEMA, "sk", "S", DY_SK_META, "val", "S",
                        num)
            : json_pack("{s:s, s:{s:{s:s}, s:{s:s}}}", "TableName", dys(s)->table, "Key", "pk",
                        "S", "m:" DY_META_SCHEMA, "sk", "S", DY_SK_META);
    assert_non_null(req);
    assert_int_equal(once__dy_call(dys(s), v ? "PutItem" : "DeleteItem", req, DY_IDEMPOTENT, NULL,
                                   NULL),
                     ONCE_OK);
    json_decref(req);
}

/* open under ONCE_STORE_OPEN_NO_MIGRATE: refused, the message holding want. */
static void refused_with(const char *url, const char *want)
{
    char err[512] = "";

    if (!st_no_migrate_refused(url, want, err, sizeof err))
        fail_msg("open of %s under NO_MIGRATE: \"%s\", not refused with \"%s\"", url, err, want);
}

static void schema_marker(void **state)
{
    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    char url[768], bare[768], table[64], err[512];
    once_store *s = NULL;
    char *v = NULL;
    int from = -1, to = -1;

    (void)state;
    url_for(url, sizeof url, "schema", NULL);
    snprintf(table, sizeof table, "schema_%d_%d", (int)getpid(), g_case);
    url_nocreate(bare, sizeof bare, table);

    /* No table: not created under NO_MIGRATE nor by a dry run. */
    refused_with(url, "schema is at version 0, this once needs 2: run onced migrate");
    assert_int_equal(once__store_migrate(url, 1, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 0);
    assert_int_equal(to, DY_SCHEMA_VERSION);
    s = (once_store *)1;
    assert_int_equal(once_store_open(bare, NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_non_null(strstr(err, "does not exist"));

    /* migrate makes the table and marks it; it then opens under NO_MIGRATE
     * and says its version. */
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 0);
    assert_int_equal(to, DY_SCHEMA_VERSION);
    s = NULL;
    assert_int_equal(once_store_open(bare, &keep, &s, err, sizeof err), ONCE_OK);
    assert_int_equal(once__store_schema_version(s), DY_SCHEMA_VERSION);
    assert_int_equal(once_store_meta(s, DY_META_SCHEMA, NULL, &v), ONCE_OK);
    assert_string_equal(v, "2");
    once_free(v);

    /* A table from before the marker is version 0: refused under
     * NO_MIGRATE, marked by a plain open. */
    marker_set(s, 0);
    refused_with(bare, "schema is at version 0, this once needs 2");
    once_store_close(open_ok(bare));
    v = NULL;
    assert_int_equal(once_store_meta(s, DY_META_SCHEMA, NULL, &v), ONCE_OK);
    assert_string_equal(v, "2");
    once_free(v);

    /* A newer once's marker: refused by open, migrate and a dry run. */
    marker_set(s, 3);
    refused_with(bare, "schema is at version 3, this once knows up to 2: upgrade once");
    for (int dry = 0; dry <= 1; dry++) {
        assert_int_equal(once__store_migrate(bare, dry, &from, &to, err, sizeof err),
                         ONCE_EUNSUPPORTED);
        assert_non_null(strstr(err, "knows up to 2"));
    }
    once_store_close(s);
}

/* A record item as layout version 1 wrote it: no "lx" (the "by_context"
 * key), put behind the backend's back. */
static void old_put(once_store *s, const char *principal, const char *id, const char *ctx,
                    int64_t created)
{
    once_record r;
    dy_item it;
    json_t *req;

    assert_int_equal(st_rec(&r, principal, id, ONCE_STATE_WORKING, created, NULL), 0);
    snprintf(r.context_id, sizeof r.context_id, "%s", ctx);
    assert_int_equal(once__dy_record_item(dys(s), &r, NULL, 0, NULL, 0, 0, &it), ONCE_OK);
    assert_int_equal(json_object_del(it.o, "lx"), 0);
    req = json_pack("{s:s, s:O}", "TableName", dys(s)->table, "Item", it.o);
    assert_non_null(req);
    assert_int_equal(once__dy_call(dys(s), "PutItem", req, DY_IDEMPOTENT, NULL, NULL), ONCE_OK);
    json_decref(req);
    once__dy_item_free(&it);
    once_record_clear(&r);
}

/* 1 if the record item of (principal, id) carries lx = its own key. */
static int has_lx(once_store *s, const char *principal, const char *id, const char *ctx)
{
    json_t *item = raw_get(s, principal, id, NULL);
    char *want = once__dy_ctx_key(principal, ctx);
    const char *lx = once__dy_get_s(item, "lx");
    int ok = lx && want && strcmp(lx, want) == 0;

    assert_non_null(item);
    once_free(want);
    json_decref(item);
    return ok;
}

/* The task IDs ListTasks gives for (principal, context), in order. */
#define LISTED_MAX 8
static size_t ctx_listed(once_store *s, const char *principal, const char *ctx,
                         char ids[LISTED_MAX][ONCE_ID_MAX + 1])
{
    once_list_query q = {.principal = principal, .context_id = ctx, .limit = LISTED_MAX};
    once_record_list l;
    size_t n, i;

    assert_int_equal(once_store_list(s, &q, &l), ONCE_OK);
    for (i = 0; i < l.n; i++)
        snprintf(ids[i], ONCE_ID_MAX + 1, "%s", l.v[i].task_id);
    n = l.n;
    once_record_list_clear(&l);
    return n;
}

static void upgrade_backfills_old_records(void **state)
{
    /* Records of layout 1; two of them would share one key were principal
     * and context simply joined ("a" + "1x", "a1" + "x"). */
    static const char *const old[][3] = {
        {"old", "o-0", "c-old"}, {"old", "o-1", "c-old"}, {"old", "o-2", "c-old"},
        {"old", "o-3", "c-old"}, {"old", "o-4", "c-old"}, {"a", "j-0", "1x"},
        {"a1", "j-1", "x"},
    };
    const size_t nold = sizeof old / sizeof old[0];
    char url[768], bare[768], table[64], ids[LISTED_MAX][ONCE_ID_MAX + 1];
    once_check_report rep;
    once_record r;
    once_store *s;
    dy_item it;
    json_t *req;
    char *v = NULL;
    size_t i, fixed;
    int done = -1;

    (void)state;
    url_for(url, sizeof url, "upgrade", NULL);
    snprintf(table, sizeof table, "upgrade_%d_%d", (int)getpid(), g_case);
    url_nocreate(bare, sizeof bare, table);
    s = open_ok(url);
    for (i = 0; i < nold; i++)
        old_put(s, old[i][0], old[i][1], old[i][2], T0 + (int64_t)i);
    /* A tombstone (no list keys in either layout) and a record of this
     * layout, which the upgrade leaves alone. */
    assert_int_equal(st_rec(&r, "old", "gone", ONCE_STATE_COMPLETED, T0, NULL), 0);
    assert_int_equal(once__dy_tomb_item(dys(s), &r, T0 + 5, &it), ONCE_OK);
    req = json_pack("{s:s, s:O}", "TableName", dys(s)->table, "Item", it.o);
    assert_int_equal(once__dy_call(dys(s), "PutItem", req, DY_IDEMPOTENT, NULL, NULL), ONCE_OK);
    json_decref(req);
    once__dy_item_free(&it);
    once_record_clear(&r);
    assert_int_equal(st_rec(&r, "old", "new", ONCE_STATE_WORKING, T0 + 100, NULL), 0);
    snprintf(r.context_id, sizeof r.context_id, "c-old");
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
    marker_set(s, 1);

    /* Before the upgrade: check names the records the index misses, a
     * context lists none of them, and no open serves the table unmigrated. */
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    assert_int_equal(rep.bad_state, nold);
    if (!strstr(rep.first_problem, "no \"lx\""))
        fail_msg("check names the missing index key: %s", rep.first_problem);
    assert_int_equal(ctx_listed(s, "old", "c-old", ids), 1);
    refused_with(bare, "schema is at version 1, this once needs 2: run onced migrate");

    /* A pass cut short (one request of two items) keeps its position. */
    assert_int_equal(once__dy_backfill(dys(s), 2, 1, &done), ONCE_OK);
    assert_int_equal(done, 0);
    assert_int_equal(once_store_meta(s, DY_META_BACKFILL, NULL, &v), ONCE_OK);
    once_free(v);
    for (fixed = 0, i = 0; i < nold; i++)
        fixed += (size_t)has_lx(s, old[i][0], old[i][1], old[i][2]);
    assert_true(fixed <= 2);

    /* The next open that may migrate finishes it and marks version 2. */
    once_store_close(open_ok(bare));
    assert_int_equal(once_store_meta(s, DY_META_SCHEMA, NULL, &v), ONCE_OK);
    assert_string_equal(v, "2");
    once_free(v);
    v = NULL;
    assert_int_equal(once_store_meta(s, DY_META_BACKFILL, NULL, &v), ONCE_ENOTFOUND);
    for (i = 0; i < nold; i++)
        if (!has_lx(s, old[i][0], old[i][1], old[i][2]))
            fail_msg("%s/%s has no lx after the upgrade", old[i][0], old[i][1]);
    json_t *tomb = raw_get(s, "old", "gone", NULL);
    assert_null(json_object_get(tomb, "lx"));
    assert_non_null(json_object_get(tomb, "tb"));
    json_decref(tomb);

    assert_int_equal(ctx_listed(s, "old", "c-old", ids), 6);
    for (i = 0; i < 5; i++)
        assert_string_equal(ids[i], old[i][1]);
    assert_string_equal(ids[5], "new");
    assert_int_equal(ctx_listed(s, "a", "1x", ids), 1);
    assert_string_equal(ids[0], "j-0");
    assert_int_equal(ctx_listed(s, "a1", "x", ids), 1);
    assert_string_equal(ids[0], "j-1");
    assert_int_equal(ctx_listed(s, "a", "x", ids), 0);
    check_clean(s);
    once_store_close(s);
}

/* A record whose task_json is n bytes of JSON. */
static void big_rec(once_record *r, const char *id, size_t n)
{
    char *json = once_malloc(n + 1);
    size_t i;

    assert_non_null(json);
    memcpy(json, "{\"p\":\"", 6);
    for (i = 6; i < n - 2; i++)
        json[i] = (char)('a' + i % 26);
    memcpy(json + n - 2, "\"}", 3);
    assert_int_equal(st_rec(r, "big", id, ONCE_STATE_WORKING, T0, "{}"), 0);
    once_free(r->task_json);
    r->task_json = json;
}

static void item_limit(void **state)
{
    char url[768];
    once_store *s;
    once_record r, got;
    size_t under = DY_ITEM_MAX - 2048;

    (void)state;
    url_for(url, sizeof url, "limit", NULL);
    s = open_ok(url);

    big_rec(&r, "over", DY_ITEM_MAX + 1);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_ERANGE);
    if (!strstr(once_store_errmsg(s), "400 KB"))
        fail_msg("the message names the limit: %s", once_store_errmsg(s));
    assert_int_equal(once_store_load(s, "big", "over", &got, NULL), ONCE_ENOTFOUND);
    once_record_clear(&r);

    /* Just under the limit: stored and read back byte for byte. */
    big_rec(&r, "under", under);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once_store_load(s, "big", "under", &got, NULL), ONCE_OK);
    assert_int_equal(strlen(got.task_json), under - 0);
    assert_string_equal(got.task_json, r.task_json);
    once_record_clear(&got);

    /* Growing it past the limit: refused, the stored version unchanged. */
    once_record_clear(&r);
    big_rec(&r, "under", DY_ITEM_MAX + 4096);
    r.version = 2;
    assert_int_equal(once_store_update(s, &r, 1, NULL, 0), ONCE_ERANGE);
    assert_int_equal(once_store_load(s, "big", "under", &got, NULL), ONCE_OK);
    assert_int_equal(got.version, 1);
    assert_int_equal(strlen(got.task_json), under);
    once_record_clear(&got);
    once_record_clear(&r);
    check_clean(s);
    once_store_close(s);
}

static void expired_ttl_still_known(void **state)
{
    char url[768];
    once_store *s;
    once_record r, got;
    once_tombstone t;
    json_t *item;
    size_t n = 0;

    (void)state;
    url_for(url, sizeof url, "ttl", "&tomb_ttl_ms=1000");
    s = open_ok(url);
    assert_int_equal(st_rec(&r, "p", "done", ONCE_STATE_COMPLETED, T0, "{}"), 0);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once_store_sweep(s, T0 + 100, T0 + 200, 10, &n), ONCE_OK);
    assert_int_equal(n, 1);

    /* The item is still there, its TTL long past (T0 is in 2023). */
    item = raw_get(s, "p", "done", NULL);
    assert_non_null(item);
    assert_int_equal(once__dy_get_n(item, "ttl"), (T0 + 200 + 1000) / 1000);
    assert_true(once__dy_get_n(item, "ttl") < (int64_t)time(NULL));
    json_decref(item);

    assert_int_equal(once_store_load(s, "p", "done", &got, &t), ONCE_ETOMBSTONE);
    assert_int_equal(t.finished_at, r.finished_at);
    assert_int_equal(t.expired_at, T0 + 200);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, &t), ONCE_ETOMBSTONE);
    assert_int_equal(t.expired_at, T0 + 200);
    once_record_clear(&r);
    check_clean(s);
    once_store_close(s);
}

/* An event item written behind the store's back. */
static void raw_put_event(once_store *s, const char *id, int64_t g, const char *payload)
{
    char sk[24];
    dy_item it;
    json_t *req;

    once__dy_event_sk(sk, g);
    assert_int_equal(once__dy_key(&it, "p", id, sk), ONCE_OK);
    once__dy_put_s(&it, "pr", "p");
    once__dy_put_s(&it, "id", id);
    once__dy_put_s(&it, "pl", payload);
    req = json_pack("{s:s, s:O}", "TableName", dys(s)->table, "Item", it.o);
    once__dy_item_free(&it);
    assert_int_equal(once__dy_call(dys(s), "PutItem", req, DY_IDEMPOTENT, NULL, NULL), ONCE_OK);
    json_decref(req);
}

static void update_one(once_store *s, once_record *r, const char *tag)
{
    st_events e;

    st_mkev(&e, r->generation + 1, 1, tag);
    r->version++;
    r->generation++;
    assert_int_equal(once_store_update(s, r, r->version - 1, e.ev, 1), ONCE_OK);
}

static void commit_rule(void **state)
{
    char url[768], sk[24];
    once_store *s;
    once_record r;
    once_event_list l;
    st_events e;
    json_t *item;
    int64_t g;

    (void)state;
    url_for(url, sizeof url, "commit", NULL);
    s = open_ok(url);
    assert_int_equal(st_rec(&r, "p", "t", ONCE_STATE_WORKING, T0, "{}"), 0);
    r.generation = 3;
    st_mkev(&e, 1, 3, "c");
    assert_int_equal(once_store_create(s, &r, e.ev, 3, NULL, NULL), ONCE_OK);
    once__dy_event_sk(sk, 1);
    item = raw_get(s, "p", "t", sk);
    assert_null(item); /* still inside the record item */

    update_one(s, &r, "u"); /* generation 4: copies 1..3 out */
    for (g = 1; g <= 3; g++) {
        once__dy_event_sk(sk, g);
        item = raw_get(s, "p", "t", sk);
        assert_non_null(item);
        assert_string_equal(once__dy_get_s(item, "pl"), e.text[g - 1]);
        json_decref(item);
    }
    once__dy_event_sk(sk, 4);
    assert_null(raw_get(s, "p", "t", sk));

    /* A writer that lost its CAS may leave a copy above the committed
     * generation: it must never be read. */
    raw_put_event(s, "t", 5, "{\"stale\":true}");
    update_one(s, &r, "v"); /* generation 5 commits in the record item */
    assert_int_equal(once_store_events(s, "p", "t", 4, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].generation, 5);
    assert_string_equal(l.v[0].payload, "{\"g\":5,\"tag\":\"v\"}");
    once_event_list_clear(&l);
    update_one(s, &r, "w"); /* copies 5 out, over the stale item */
    once__dy_event_sk(sk, 5);
    item = raw_get(s, "p", "t", sk);
    assert_non_null(item);
    assert_string_equal(once__dy_get_s(item, "pl"), "{\"g\":5,\"tag\":\"v\"}");
    json_decref(item);
    assert_int_equal(once_store_events(s, "p", "t", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 6);
    for (g = 1; g <= 6; g++)
        assert_int_equal(l.v[g - 1].generation, g);
    assert_string_equal(l.v[5].payload, "{\"g\":6,\"tag\":\"w\"}");
    once_event_list_clear(&l);
    once_record_clear(&r);
    check_clean(s);
    once_store_close(s);
}

static void credentials_order(void **state)
{
    char url[768], path[256], err[512], *id = NULL, *secret = NULL;
    const char *eid = getenv("AWS_ACCESS_KEY_ID"), *esec = getenv("AWS_SECRET_ACCESS_KEY");
    once_store *s = NULL;
    FILE *f;

    (void)state;
    assert_non_null(eid);
    assert_non_null(esec);
    id = once_strdup(eid);
    secret = once_strdup(esec);
    url_for(url, sizeof url, "cred", NULL);
    assert_int_equal(st_tmp_path(path, sizeof path, "awscred"), 0);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[default]\nregion = x\n\n[ci]\naws_access_key_id = AKIDCI\n"
               "aws_secret_access_key = secret-ci\n");
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");

    /* [default] has no keys: refused, naming the file and the profile. */
    unsetenv("AWS_PROFILE");
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
    if (!strstr(err, path) || !strstr(err, "[default]"))
        fail_msg("the message names the file and profile: %s", err);
    setenv("AWS_PROFILE", "nosuch", 1);
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
    assert_non_null(strstr(err, "no profile [nosuch]"));
    /* The profile's keys sign. */
    setenv("AWS_PROFILE", "ci", 1);
    s = open_ok(url);
    assert_non_null(strstr(dys(s)->cred.source, "[ci]"));
    assert_string_equal(dys(s)->cred.userpwd, "AKIDCI:secret-ci");
    once_store_close(s);
    /* The environment wins over the file, even over a missing one. */
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    setenv("AWS_ACCESS_KEY_ID", id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    s = open_ok(url);
    assert_non_null(strstr(dys(s)->cred.source, "environment"));
    snprintf(err, sizeof err, "%s:%s", id, secret);
    assert_string_equal(dys(s)->cred.userpwd, err);
    once_store_close(s);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    unlink(path);
    once_free(id);
    once_free(secret);
}

static void unreachable_endpoint(void **state)
{
    once_store *s = (once_store *)1;
    char err[512];

    (void)state;
    /* Port 1 on loopback: nobody listens (tcpmux is never run in tests). */
    assert_int_equal(once_store_open("dynamodb://nowhere?region=us-east-1&endpoint=http://"
                                     "127.0.0.1:1",
                                     NULL, &s, err, sizeof err),
                     ONCE_ESTORE);
    assert_null(s);
    if (!strstr(err, "nowhere") || !strstr(err, "127.0.0.1:1"))
        fail_msg("the message names the table and endpoint: %s", err);
}

static void metrics_row(void **state)
{
    char url[768];
    once_store *s;
    once_record r, got;
    once__mtext m = {0};

    (void)state;
    url_for(url, sizeof url, "metrics", NULL);
    s = open_ok(url);
    assert_int_equal(st_rec(&r, "p", "m", ONCE_STATE_WORKING, T0, "{}"), 0);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(once_store_load(s, "p", "m", &got, NULL), ONCE_OK);
    once__metrics_write_process(&m, NULL);
    assert_non_null(m.buf);
    if (!strstr(m.buf, "backend=\"dynamodb\",operation=\"create\"") ||
        strstr(m.buf, "backend=\"other\""))
        fail_msg("the store histogram has a dynamodb row and no other: %s", m.buf);
    once__mtext_free(&m);
    once_record_clear(&got);
    once_record_clear(&r);
    once_store_close(s);
}

/* A scripted answer: the status and body (in out) for operation op (the
 * tail of X-Amz-Target) with request body `body`. */
typedef int (*fake_script)(void *arg, const char *op, const char *body, char *out, size_t cap);

/* A fake DynamoDB endpoint: answers the first `bad` requests with status
 * bad_status (400: a ThrottlingException body) and the rest with 200 "{}",
 * or, with a script, what the script says; one request per connection.
 * Counters are read by the test thread. */
typedef struct fake {
    int fd, port;
    int bad, bad_status;
    int seen;
    fake_script script;
    void *script_arg;
    pthread_t th;
} fake;

/* The script's answer to one request (req holds head and body). */
static int fake_scripted(fake *f, const char *req, const char *end, char *out, size_t cap)
{
    const char *t = strcasestr(req, "x-amz-target:");
    char op[64] = "";

    if (t && (t = strchr(t, '.')) != NULL)
        sscanf(t + 1, "%63[A-Za-z]", op);
    return f->script(f->script_arg, op, end + 4, out, cap);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    int c;

    while ((c = accept(f->fd, NULL, NULL)) >= 0) {
        char req[8192], resp[4096], out[3584];
        size_t n = 0;
        long clen = -1;
        char *end = NULL;
        ssize_t r;

        /* The head, then Content-Length bytes of body. */
        while (n < sizeof req - 1 && (r = read(c, req + n, sizeof req - 1 - n)) > 0) {
            n += (size_t)r;
            req[n] = '\0';
            if (!end && (end = strstr(req, "\r\n\r\n")) != NULL) {
                char *cl = strcasestr(req, "content-length:");
                clen = cl ? strtol(cl + 15, NULL, 10) : 0;
            }
            if (end && (size_t)(end + 4 - req) + (size_t)clen <= n)
                break;
        }
        int k = __atomic_add_fetch(&f->seen, 1, __ATOMIC_SEQ_CST);
        int bad = k <= __atomic_load_n(&f->bad, __ATOMIC_SEQ_CST);
        const char *body = bad && f->bad_status == 400
                               ? "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
                                 "ThrottlingException\",\"message\":\"Rate exceeded\"}"
                           : bad ? "{\"__type\":\"InternalServerError\"}"
                                 : "{}";
        int status = bad ? f->bad_status : 200;
        if (f->script && end) {
            status = fake_scripted(f, req, end, out, sizeof out);
            body = out;
        }
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 %d X\r\nContent-Type: application/x-amz-json-1.0\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                           status, strlen(body), body);
        if (write(c, resp, (size_t)len) != len)
            fprintf(stderr, "fake: short write\n");
        close(c);
    }
    return NULL;
}

static void fake_start(fake *f)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->fd >= 0);
    assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->fd, 16), 0);
    assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &al), 0);
    f->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_arm(fake *f, int bad, int status)
{
    __atomic_store_n(&f->seen, 0, __ATOMIC_SEQ_CST);
    f->bad_status = status;
    __atomic_store_n(&f->bad, bad, __ATOMIC_SEQ_CST);
}

/* A store on a table of its own whose handle then talks to the fake f,
 * started here (the tests' one use of internals beyond reading items). */
static once_store *open_on_fake(fake *f, const char *tag, fake_script script, void *arg)
{
    char url[768];
    once_store *s;

    memset(f, 0, sizeof *f);
    f->script = script;
    f->script_arg = arg;
    url_for(url, sizeof url, tag, NULL);
    s = open_ok(url);
    fake_start(f);
    once_free(dys(s)->endpoint);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", f->port);
    dys(s)->endpoint = once_strdup(url);
    return s;
}

static void fake_stop(fake *f)
{
    shutdown(f->fd, SHUT_RDWR);
    close(f->fd);
    pthread_join(f->th, NULL);
}

static void push_writes_race_acks(void **state)
{
    char url[768];
    once_store *s;

    (void)state;
    url_for(url, sizeof url, "pushrace", NULL);
    s = open_ok(url);
    st_push_race(s);
    once_store_close(s);
}

static void throttling_retried(void **state)
{
    once_store *s;
    once_record r, got;
    fake f;

    (void)state;
    s = open_on_fake(&f, "throttle", NULL, NULL);
    fake_arm(&f, 0, 400);
    assert_int_equal(st_rec(&r, "p", "x", ONCE_STATE_WORKING, T0, "{}"), 0);

    /* Throttled twice, then answered: the read succeeds on the third try. */
    fake_arm(&f, 2, 400);
    assert_int_equal(once_store_load(s, "p", "x", &got, NULL), ONCE_ENOTFOUND);
    assert_int_equal(__atomic_load_n(&f.seen, __ATOMIC_SEQ_CST), 3);
    /* A conditional write too: a throttled request was not applied. */
    fake_arm(&f, 1, 400);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    assert_int_equal(__atomic_load_n(&f.seen, __ATOMIC_SEQ_CST), 2);
    /* Throttling that persists: EBUSY (503 STORE_UNAVAILABLE), no verdict. */
    fake_arm(&f, 1000, 400);
    assert_int_equal(once_store_load(s, "p", "x", &got, NULL), ONCE_EBUSY);
    assert_int_equal(__atomic_load_n(&f.seen, __ATOMIC_SEQ_CST), DY_ATTEMPTS);
    if (!strstr(once_store_errmsg(s), "throttled"))
        fail_msg("the message says throttled: %s", once_store_errmsg(s));
    /* A 500 to a conditional write: it may have applied, so it is not sent
     * again; a read is. */
    fake_arm(&f, 1, 500);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_ESTORE);
    assert_int_equal(__atomic_load_n(&f.seen, __ATOMIC_SEQ_CST), 1);
    fake_arm(&f, 1, 500);
    assert_int_equal(once_store_load(s, "p", "x", &got, NULL), ONCE_ENOTFOUND);
    assert_int_equal(__atomic_load_n(&f.seen, __ATOMIC_SEQ_CST), 2);

    once_record_clear(&r);
    once_store_close(s);
    fake_stop(&f);
}

/* A table of layout version 1 as DescribeTable shows it (three indexes),
 * or with "by_context" in status ctx_status (NULL: absent). */
static json_t *v1_table(const char *table_status, const char *ctx_status)
{
    json_t *t = json_pack(
        "{s:s, s:[{s:s,s:s},{s:s,s:s}], s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},"
        "{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}], s:[{s:s, s:[{s:s,s:s},{s:s,s:s}], s:{s:s, "
        "s:[s,s]}, s:s}, {s:s, s:[{s:s,s:s},{s:s,s:s}], s:{s:s}, s:s}, {s:s, s:[{s:s,s:s},"
        "{s:s,s:s}], s:{s:s, s:[s,s]}, s:s}]}",
        "TableStatus", table_status, "KeySchema", "AttributeName", "pk", "KeyType", "HASH",
        "AttributeName", "sk", "KeyType", "RANGE", "AttributeDefinitions", "AttributeName", "pk",
        "AttributeType", "S", "AttributeName", "sk", "AttributeType", "S", "AttributeName", "dk",
        "AttributeType", "S", "AttributeName", "dt", "AttributeType", "N", "AttributeName", "lp",
        "AttributeType", "S", "AttributeName", "lc", "AttributeType", "S", "AttributeName", "pq",
        "AttributeType", "S", "AttributeName", "pt", "AttributeType", "S", "AttributeName", "lx",
        "AttributeType", "S", "GlobalSecondaryIndexes", "IndexName", "due", "KeySchema",
        "AttributeName", "dk", "KeyType", "HASH", "AttributeName", "dt", "KeyType", "RANGE",
        "Projection", "ProjectionType", "INCLUDE", "NonKeyAttributes", "pr", "id", "IndexStatus",
        "ACTIVE", "IndexName", "by_principal", "KeySchema", "AttributeName", "lp", "KeyType",
        "HASH", "AttributeName", "lc", "KeyType", "RANGE", "Projection", "ProjectionType", "ALL",
        "IndexStatus", "ACTIVE", "IndexName", "push", "KeySchema", "AttributeName", "pq",
        "KeyType", "HASH", "AttributeName", "pt", "KeyType", "RANGE", "Projection",
        "ProjectionType", "INCLUDE", "NonKeyAttributes", "pr", "id", "IndexStatus", "ACTIVE");

    assert_non_null(t);
    if (ctx_status)
        json_array_append_new(
            json_object_get(t, "GlobalSecondaryIndexes"),
            json_pack("{s:s, s:[{s:s,s:s},{s:s,s:s}], s:{s:s}, s:s}", "IndexName", "by_context",
                      "KeySchema", "AttributeName", "lx", "KeyType", "HASH", "AttributeName", "lc",
                      "KeyType", "RANGE", "Projection", "ProjectionType", "ALL", "IndexStatus",
                      ctx_status));
    return t;
}

/* DynamoDB adding an index: the table of version 1 until UpdateTable,
 * then the new index CREATING for `creating` descriptions, then ACTIVE;
 * with adds = 0, an endpoint that accepts UpdateTable and adds nothing
 * (dynalite). */
typedef struct upgrade_script {
    int adds, creating;
    int updates, described_after; /* what was asked, for the test */
    char update[2048];            /* the UpdateTable request */
} upgrade_script;

static int upgrade_answer(void *arg, const char *op, const char *body, char *out, size_t cap)
{
    upgrade_script *u = arg;
    json_t *t = NULL;
    char *text;

    if (strcmp(op, "CreateTable") == 0) {
        snprintf(out, cap, "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
                           "ResourceInUseException\",\"message\":\"Table already exists\"}");
        return 400;
    }
    if (strcmp(op, "UpdateTable") == 0) {
        u->updates++;
        snprintf(u->update, sizeof u->update, "%s", body);
        snprintf(out, cap, "{}");
        return 200;
    }
    if (strcmp(op, "DescribeTable") != 0) {
        snprintf(out, cap, "{}");
        return 200;
    }
    if (!u->updates || !u->adds)
        t = v1_table("ACTIVE", NULL);
    else if (u->described_after++ < u->creating)
        t = v1_table("UPDATING", "CREATING");
    else
        t = v1_table("ACTIVE", "ACTIVE");
    text = json_dumps(t, JSON_COMPACT);
    snprintf(out, cap, "{\"Table\":%s}", text ? text : "null");
    once_free(text);
    json_decref(t);
    return 200;
}

static void table_upgrade_adds_index(void **state)
{
    char err[1024];
    upgrade_script u;
    once_store *s;
    fake f;

    (void)state;
    s = open_on_fake(&f, "addidx", upgrade_answer, &u);

    /* Without ?create=1: refused, naming the index and the way to add it. */
    memset(&u, 0, sizeof u);
    dys(s)->create = 0;
    assert_int_equal(once__dy_table_ready(dys(s), 0, err, sizeof err), ONCE_EINVAL);
    if (!strstr(err, "missing global secondary index \"by_context\" on lx (S, HASH) + lc (S, "
                     "RANGE)") ||
        !strstr(err, "create=1") || !strstr(err, "docs/production.md") || strstr(err, "\"due\""))
        fail_msg("the message names the one missing index and how to add it: %s", err);
    assert_int_equal(u.updates, 0);
    /* A dry run (probe) reads the version only: the index may be missing. */
    assert_int_equal(once__dy_table_ready(dys(s), 1, err, sizeof err), ONCE_OK);

    /* With ?create=1: one UpdateTable creating it, then waited for until
     * it is ACTIVE. */
    memset(&u, 0, sizeof u);
    u.adds = 1;
    u.creating = 3;
    dys(s)->create = 1;
    assert_int_equal(once__dy_table_ready(dys(s), 0, err, sizeof err), ONCE_OK);
    assert_int_equal(u.updates, 1);
    assert_int_equal(u.described_after, u.creating + 1);
    json_t *req = json_loads(u.update, 0, NULL);
    json_t *create = json_object_get(json_array_get(json_object_get(req, "GlobalSecondaryIndexUpdates"), 0), "Create");
    assert_string_equal(json_string_value(json_object_get(create, "IndexName")), "by_context");
    assert_string_equal(json_string_value(json_object_get(json_object_get(create, "Projection"),
                                                          "ProjectionType")),
                        "ALL");
    json_t *want_keys = json_pack("[{s:s,s:s},{s:s,s:s}]", "AttributeName", "lx", "KeyType",
                                  "HASH", "AttributeName", "lc", "KeyType", "RANGE");
    json_t *want_defs = json_pack("[{s:s,s:s},{s:s,s:s}]", "AttributeName", "lx",
                                  "AttributeType", "S", "AttributeName", "lc", "AttributeType",
                                  "S");
    assert_true(json_equal(json_object_get(create, "KeySchema"), want_keys));
    assert_true(json_equal(json_object_get(req, "AttributeDefinitions"), want_defs));
    json_decref(want_keys);
    json_decref(want_defs);
    json_decref(req);

    /* An endpoint that accepts the request and adds nothing: said so. */
    memset(&u, 0, sizeof u);
    assert_int_equal(once__dy_table_ready(dys(s), 0, err, sizeof err), ONCE_EUNSUPPORTED);
    if (!strstr(err, "did not add it") || !strstr(err, "by_context"))
        fail_msg("the message says the index was not added: %s", err);

    once_store_close(s);
    fake_stop(&f);
}

/* Canned Query replies, in order; what each request asked is kept. */
typedef struct query_script {
    json_t *replies[4];
    json_t *asked[4];
    int n;
} query_script;

static int query_answer(void *arg, const char *op, const char *body, char *out, size_t cap)
{
    query_script *q = arg;
    char *text;

    if (strcmp(op, "Query") != 0 || q->n >= 4 || !q->replies[q->n]) {
        snprintf(out, cap, "{\"__type\":\"InternalServerError\"}");
        return 500;
    }
    q->asked[q->n] = json_loads(body, 0, NULL);
    text = json_dumps(q->replies[q->n++], JSON_COMPACT);
    snprintf(out, cap, "%s", text ? text : "{}");
    once_free(text);
    return 200;
}

/* A record item of principal p as the list indexes hold it. */
static json_t *list_item(once_store *s, const char *id, int64_t created)
{
    once_record r;
    dy_item it;

    assert_int_equal(st_rec(&r, "p", id, ONCE_STATE_COMPLETED, created, NULL), 0);
    assert_int_equal(once__dy_record_item(dys(s), &r, NULL, 0, NULL, 0, 0, &it), ONCE_OK);
    once_record_clear(&r);
    return it.o;
}

/* The index key a page stopped at: created_at + task_id in lc. */
static json_t *list_key(int64_t created, const char *id)
{
    char lc[DY_LC_MAX];

    once__dy_list_sk(lc, created, id);
    return json_pack("{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}", "pk", "S", "x", "sk", "S", "r", "lp",
                     "S", "p", "lc", "S", lc);
}

static void query_script_clear(query_script *q)
{
    for (int i = 0; i < 4; i++) {
        json_decref(q->replies[i]);
        json_decref(q->asked[i]);
    }
    memset(q, 0, sizeof *q);
}

static void list_budget_across_pages(void **state)
{
    once_list_query lq = {.principal = "p", .state = ONCE_STATE_COMPLETED, .limit = 300};
    once_record_list l;
    query_script q;
    once_store *s;
    fake f;

    (void)state;
    memset(&q, 0, sizeof q);
    s = open_on_fake(&f, "budget", query_answer, &q);

    /* A state filter: the first request asks for twice the page; the
     * next, after DynamoDB stopped early (its 1 MB), for twice that but no
     * more than is left of the 1000 items; when they are spent the page
     * ends with where it stopped. */
    q.replies[0] = json_pack("{s:[o], s:i, s:i, s:o}", "Items", list_item(s, "a", T0 + 5), "Count",
                             1, "ScannedCount", 600, "LastEvaluatedKey", list_key(T0 + 5, "a"));
    q.replies[1] = json_pack("{s:[], s:i, s:i, s:o}", "Items", "Count", 0, "ScannedCount", 400,
                             "LastEvaluatedKey", list_key(T0 + 9, "z-last"));
    assert_int_equal(once_store_list(s, &lq, &l), ONCE_OK);
    assert_int_equal(q.n, 2);
    assert_int_equal(json_integer_value(json_object_get(q.asked[0], "Limit")), 600);
    assert_int_equal(json_integer_value(json_object_get(q.asked[1], "Limit")),
                     ONCE_LIST_SCAN_MAX - 600);
    assert_true(json_equal(json_object_get(q.asked[1], "ExclusiveStartKey"),
                           json_object_get(q.replies[0], "LastEvaluatedKey")));
    assert_string_equal(json_string_value(json_object_get(q.asked[0], "IndexName")),
                        DY_IDX_LIST);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0].task_id, "a");
    assert_int_equal(l.v[0].kind, ONCE_KIND_TASK);
    assert_int_equal(l.v[1].kind, ONCE_KIND_RESUME);
    assert_string_equal(l.v[1].task_id, "z-last");
    assert_int_equal(l.v[1].created_at, T0 + 9);
    assert_null(l.v[1].task_json);
    once_record_list_clear(&l);
    query_script_clear(&q);

    /* No state filter: every item read is listed, so each request asks
     * for what the page lacks, and there is no budget (nor resume). */
    lq.state = ONCE_STATE_UNKNOWN;
    lq.context_id = "c";
    lq.limit = 3;
    q.replies[0] = json_pack("{s:[o], s:i, s:i, s:o}", "Items", list_item(s, "a", T0 + 5), "Count",
                             1, "ScannedCount", 1, "LastEvaluatedKey", list_key(T0 + 5, "a"));
    q.replies[1] = json_pack("{s:[o], s:i, s:i}", "Items", list_item(s, "b", T0 + 6), "Count", 1,
                             "ScannedCount", 1);
    assert_int_equal(once_store_list(s, &lq, &l), ONCE_OK);
    assert_int_equal(q.n, 2);
    assert_string_equal(json_string_value(json_object_get(q.asked[0], "IndexName")), DY_IDX_CTX);
    assert_int_equal(json_integer_value(json_object_get(q.asked[0], "Limit")), 3);
    assert_int_equal(json_integer_value(json_object_get(q.asked[1], "Limit")), 2);
    assert_null(json_object_get(q.asked[0], "FilterExpression"));
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[1].kind, ONCE_KIND_TASK);
    once_record_list_clear(&l);
    query_script_clear(&q);

    once_store_close(s);
    fake_stop(&f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(missing_table_named, setup),
        cmocka_unit_test_setup(missing_index_named, setup),
        cmocka_unit_test_setup(schema_marker, setup),
        cmocka_unit_test_setup(item_limit, setup),
        cmocka_unit_test_setup(expired_ttl_still_known, setup),
        cmocka_unit_test_setup(commit_rule, setup),
        cmocka_unit_test_setup(credentials_order, setup),
        cmocka_unit_test_setup(unreachable_endpoint, setup),
        cmocka_unit_test_setup(metrics_row, setup),
        cmocka_unit_test_setup(push_writes_race_acks, setup),
        cmocka_unit_test_setup(throttling_retried, setup),
        cmocka_unit_test_setup(table_upgrade_adds_index, setup),
        cmocka_unit_test_setup(upgrade_backfills_old_records, setup),
        cmocka_unit_test_setup(list_budget_across_pages, setup),
    };

    if (argc < 2 || strncmp(argv[1], "dynamodb://", 11) != 0) {
        fprintf(stderr, "usage: %s dynamodb://TABLE?region=R&endpoint=URL&create=1\n", argv[0]);
        return 2;
    }
    g_base = argv[1];
    return cmocka_run_group_tests_name("storedynamo", tests, NULL, NULL);
}
