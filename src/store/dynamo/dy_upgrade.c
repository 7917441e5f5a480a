/*
 * dy_upgrade.c -- a table of layout version 1 brought to version 2: the
 * index "by_context" (dy_table.c adds it) lists only items that carry its
 * key "lx", and records written before version 2 have none. The upgrade
 * gives each its "lx", then raises the schema marker; until the marker
 * says 2, no once of this version serves the table, so no ListTasks by
 * context misses an old task.
 *
 * The pass is a Scan of the records without "lx", a bounded page at a
 * time (DY_BACKFILL_PAGE items read per request, so neither the memory nor
 * one request grows with the table), and one conditional UpdateItem per
 * record found: "lx" is set only on a live record whose principal and
 * context are the ones read, so a record meanwhile tombstoned, purged or
 * created again is left as it is. The update touches neither the version
 * nor the delivery rows, so a writer's CAS does not notice it; a writer of
 * this version writes "lx" itself. After each page the Scan's position is
 * kept in the meta item DY_META_BACKFILL, so an open that stops half way
 * (a crash, a timeout) is resumed by the next one, not started over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

#define DY_BACKFILL_PAGE 500

/* The meta item's key {pk "m:<name>", sk "m"} (as once__dy_meta keeps it). */
static json_t *meta_key(const char *name)
{
    char pk[64];

    snprintf(pk, sizeof pk, "m:%s", name);
    return json_pack("{s:o, s:o}", "pk", once__dy_s(pk), "sk", once__dy_s(DY_SK_META));
}

/* Where the last pass stopped (a Scan's LastEvaluatedKey), or NULL. */
static int cursor_get(dy_store *s, json_t **start)
{
    char *val = NULL;
    int rc = once__dy_meta(&s->base, DY_META_BACKFILL, NULL, &val);

    *start = NULL;
    if (rc == ONCE_ENOTFOUND)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    *start = json_loads(val, 0, NULL);
    once_free(val);
    if (!json_is_object(*start)) {
        json_decref(*start);
        *start = NULL;
        once__store_seterr(&s->base, "dynamodb: meta item \"%s\" is not a scan position",
                           DY_META_BACKFILL);
        return ONCE_ECORRUPT;
    }
    return ONCE_OK;
}

/* Keep the position (NULL: the pass is complete, forget it). */
static int cursor_put(dy_store *s, json_t *last)
{
    json_t *key = meta_key(DY_META_BACKFILL), *req = NULL;
    char *text = last ? json_dumps(last, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    int rc;

    if (key && !last)
        req = json_pack("{s:s, s:O}", "TableName", s->table, "Key", key);
    else if (key && text && json_object_set_new(key, "val", once__dy_s(text)) == 0)
        req = json_pack("{s:s, s:O}", "TableName", s->table, "Item", key);
    once_free(text); /* json_dumps allocates through once_malloc */
    json_decref(key);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, last ? "PutItem" : "DeleteItem", req, DY_IDEMPOTENT, NULL, NULL);
    json_decref(req);
    return rc;
}

/* "lx" onto one record read by the Scan (pk, sk, pr, ctx). */
static int set_lx(dy_store *s, json_t *item)
{
    const char *pr = once__dy_get_s(item, "pr"), *ctx = once__dy_get_s(item, "ctx");
    char *lx = pr && ctx ? once__dy_ctx_key(pr, ctx) : NULL;
    json_t *req;
    int rc;

    if (!pr || !ctx)
        return ONCE_OK; /* not a record once wrote: check reports it */
    req = lx ? json_pack("{s:s, s:{s:O, s:O}, s:s, s:s, s:{s:o, s:o, s:o}}", "TableName", s->table,
                         "Key", "pk", json_object_get(item, "pk"), "sk",
                         json_object_get(item, "sk"), "UpdateExpression", "SET #lx = :x",
                         "ConditionExpression", "attribute_exists(#tj) AND #pr = :p AND #ctx = :c",
                         "ExpressionAttributeValues", ":x", once__dy_s(lx), ":p", once__dy_s(pr),
                         ":c", once__dy_s(ctx))
             : NULL;
    once_free(lx);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "UpdateItem", req, DY_IDEMPOTENT, NULL, NULL);
    json_decref(req);
    return rc == ONCE_ECONFLICT ? ONCE_OK : rc;
}

int once__dy_backfill(dy_store *s, size_t page, size_t max_pages, int *done)
{
    json_t *start = NULL, *reply = NULL, *item;
    size_t i, pages;
    int rc = cursor_get(s, &start);

    *done = 0;
    for (pages = 0; rc == ONCE_OK && pages < max_pages; pages++) {
        json_t *req =
            json_pack("{s:s, s:s, s:s, s:I, s:b}", "TableName", s->table, "FilterExpression",
                      "attribute_exists(#tj) AND attribute_not_exists(#lx)", "ProjectionExpression",
                      "#pk, #sk, #pr, #ctx", "Limit", (json_int_t)page, "ConsistentRead", 1);
        if (!req || (start && json_object_set_new(req, "ExclusiveStartKey", start) != 0)) {
            json_decref(req);
            rc = ONCE_ENOMEM;
            break;
        }
        start = NULL;
        rc = once__dy_call(s, "Scan", req, DY_IDEMPOTENT, &reply, NULL);
        json_decref(req);
        json_array_foreach(json_object_get(reply, "Items"), i, item)
        {
            if (rc == ONCE_OK)
                rc = set_lx(s, item);
        }
        json_t *last = json_object_get(reply, "LastEvaluatedKey");
        if (rc == ONCE_OK)
            rc = cursor_put(s, json_is_object(last) ? last : NULL);
        if (rc == ONCE_OK && !json_is_object(last))
            *done = 1;
        start = rc == ONCE_OK && !*done ? json_incref(last) : NULL;
        json_decref(reply);
        reply = NULL;
        if (*done)
            break;
    }
    json_decref(start);
    return rc;
}

int once__dy_upgrade(dy_store *s)
{
    int done = 0, rc = once__dy_backfill(s, DY_BACKFILL_PAGE, SIZE_MAX, &done);

    if (rc != ONCE_OK && !s->base.errmsg[0])
        once__store_seterr(&s->base,
                           "dynamodb: giving records of table \"%s\" the key of "
                           "index \"%s\": %s (open again to resume)",
                           s->table, DY_IDX_CTX, once_strerror(rc));
    return rc;
}
