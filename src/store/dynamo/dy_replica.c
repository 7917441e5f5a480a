/*
 * dy_replica.c -- the DynamoDB backend's replica heartbeat rows (store.h,
 * ONCE_STORE_REPLICAS): one item per replica under the partition
 * DY_PK_REPLICAS ("r:"; a task's pk starts with a digit), sort key = the
 * replica id, attribute "val" = the row's other fields as
 * once__replica_encode writes them. A beat is an unconditional PutItem
 * (the replica is the only writer of its item), the list one Query of the
 * partition. The items carry none of the index attributes, so no index
 * sees them; check skips the partition. No layout change: a table without
 * the items has no rows yet.
 */
#include <string.h>

#include "store/dynamo/dy_int.h"
#include "store/replica.h"

int once__dy_replica_beat(once_store *base, const once_replica *r)
{
    dy_store *s = dys(base);
    char text[ONCE__REPLICA_TEXT_MAX];
    dy_item it;
    int rc = once__dy_item_init(&it);

    if (rc != ONCE_OK)
        return rc;
    once__replica_encode(r, text);
    once__dy_put_s(&it, "pk", DY_PK_REPLICAS);
    once__dy_put_s(&it, "sk", r->id);
    once__dy_put_s(&it, "val", text);
    json_t *req = it.oom ? NULL : json_pack("{s:s, s:O}", "TableName", s->table, "Item", it.o);
    rc = req ? once__dy_call(s, "PutItem", req, DY_IDEMPOTENT, NULL, NULL) : ONCE_ENOMEM;
    json_decref(req);
    once__dy_item_free(&it);
    return rc;
}

static int take_replica(dy_store *s, json_t *item, void *arg)
{
    once_replica_list *out = arg;
    const char *id = once__dy_get_s(item, "sk"), *val = once__dy_get_s(item, "val");
    once_replica x;
    int rc = id && val ? once__replica_decode(id, strlen(id), val, strlen(val), &x)
                       : ONCE_ECORRUPT;

    if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "dynamodb: replica item %s is not one once wrote",
                           id ? id : "?");
    return rc == ONCE_OK ? once__replica_append(out, &x) : rc;
}

int once__dy_replicas(once_store *base, once_replica_list *out)
{
    dy_store *s = dys(base);

    memset(out, 0, sizeof *out);
    int rc = once__dy_each(s, "Query",
                           once__dy_query_req(s, NULL, "#pk = :pk", NULL,
                                              json_pack("{s:o}", ":pk", once__dy_s(DY_PK_REPLICAS)),
                                              0, 1),
                           0, take_replica, out);
    if (rc != ONCE_OK)
        once_replica_list_clear(out);
    else
        once__replica_sort(out);
    return rc;
}
