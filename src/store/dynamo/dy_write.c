/*
 * dy_write.c -- the DynamoDB backend's writes: create, update, renew,
 * sweep, purge, meta. Every change of a task is one conditional write of
 * its record item -- the only atomic step the service (and dynalite) gives
 * without transactions -- and the events that change produced ride inside
 * that item until the next write has copied them out (dynamo.c, "the
 * commit rule").
 */
#include <stdio.h>
#include <string.h>

#include "core/backoff.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

/* PutItem of it with condition cond and values vals (consumed; may be NULL). */
static int put_if(dy_store *s, dy_item *it, const char *cond, json_t *vals)
{
    json_t *req = json_pack("{s:s, s:O, s:s}", "TableName", s->table, "Item", it->o,
                            "ConditionExpression", cond);
    int rc;

    if (!req || (vals && json_object_set_new(req, "ExpressionAttributeValues", vals) != 0)) {
        json_decref(req);
        return ONCE_ENOMEM;
    }
    rc = once__dy_call(s, "PutItem", req, DY_CONDITIONAL, NULL, NULL);
    json_decref(req);
    return rc;
}

/* Copy the pending events of a stored record out into event items. Each
 * copy is the committed text, so copying twice (two writers of the next
 * version, a retry) writes the same bytes. */
static int copy_out(dy_store *s, const dy_stored *st)
{
    size_t i, n = json_array_size(st->pend);
    int rc = ONCE_OK;

    for (i = 0; rc == ONCE_OK && i < n; i++) {
        char sk[24];
        dy_item it;
        json_t *req;

        once__dy_event_sk(sk, st->pend_base + 1 + (int64_t)i);
        rc = once__dy_key(&it, st->rec.principal, st->rec.task_id, sk);
        if (rc != ONCE_OK)
            break;
        once__dy_put_s(&it, "pr", st->rec.principal);
        once__dy_put_s(&it, "id", st->rec.task_id);
        once__dy_put_s(&it, "pl",
                       json_string_value(json_object_get(json_array_get(st->pend, i), "S")));
        req = it.oom ? NULL : json_pack("{s:s, s:O}", "TableName", s->table, "Item", it.o);
        once__dy_item_free(&it);
        if (!req)
            return ONCE_ENOMEM;
        rc = once__dy_call(s, "PutItem", req, DY_IDEMPOTENT, NULL, NULL);
        json_decref(req);
    }
    return rc;
}

/* The task's item decoded: ONCE_OK, or ONCE_ENOTFOUND when absent. */
static int get_stored(dy_store *s, const char *principal, const char *task_id, dy_stored *st)
{
    json_t *item;
    int rc = once__dy_get_task(s, principal, task_id, &item);

    memset(st, 0, sizeof *st);
    if (rc != ONCE_OK)
        return rc;
    if (!item)
        return ONCE_ENOTFOUND;
    rc = once__dy_decode(item, st);
    if (rc != ONCE_OK) {
        json_decref(item);
        return rc;
    }
    st->item = item; /* pend and the rows point into it */
    return ONCE_OK;
}

static void stored_clear(dy_stored *st)
{
    if (!st->is_tomb)
        once_record_clear(&st->rec);
    json_decref(st->item);
    st->item = NULL;
    st->pend = NULL;
}

/* Rounds of create when the key vanishes between the refused put and the
 * read of the winner (purged in between): then the put is tried again. */
#define CREATE_ROUNDS 3

int once__dy_create(once_store *base, const once_record *rec, const once_event *ev, size_t nev,
                    once_record *winner, once_tombstone *tomb)
{
    dy_store *s = dys(base);
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    size_t nrows = 0;
    dy_item it;
    int rc = ONCE_OK, round;

    rc = once__dy_sync_rows(rec, NULL, 0, rows, &nrows);
    if (rc == ONCE_OK)
        rc = once__dy_record_item(s, rec, ev, nev, rows, nrows, 0, &it);
    if (rc != ONCE_OK)
        return rc;
    for (round = 0; round < CREATE_ROUNDS; round++) {
        dy_stored st;
        rc = put_if(s, &it, "attribute_not_exists(#pk)", NULL);
        if (rc != ONCE_ECONFLICT)
            break;
        rc = get_stored(s, rec->principal, rec->task_id, &st);
        if (rc == ONCE_ENOTFOUND)
            continue;
        if (rc == ONCE_OK && st.is_tomb) {
            if (tomb)
                *tomb = st.tomb;
            rc = ONCE_ETOMBSTONE;
        } else if (rc == ONCE_OK) {
            rc = winner ? once_record_copy(winner, &st.rec) : ONCE_OK;
            if (rc == ONCE_OK)
                rc = ONCE_EEXISTS;
        }
        stored_clear(&st);
        break;
    }
    once__dy_item_free(&it);
    if (rc == ONCE_ENOTFOUND)
        rc = ONCE_EBUSY; /* created and purged under us three times */
    return rc;
}

/* One try of update: ONCE_OK, ONCE_ECONFLICT (the version differs),
 * ROWS_MOVED (a claim or ack changed the delivery rows since the read:
 * try again), or an error. */
#define ROWS_MOVED 2

static int update_once(dy_store *s, const once_record *rec, int64_t expect_version,
                       const once_event *ev, size_t nev, int copied)
{
    once_push_row old[ONCE_PUSH_CONFIGS_MAX], rows[ONCE_PUSH_CONFIGS_MAX];
    size_t nold = 0, nrows = 0;
    int64_t pv;
    dy_stored st;
    dy_item it;
    json_t *vals;
    int rc;

    rc = get_stored(s, rec->principal, rec->task_id, &st);
    if (rc == ONCE_ENOTFOUND ||
        (rc == ONCE_OK && (st.is_tomb || st.rec.version != expect_version))) {
        once__store_seterr(&s->base, "update %s: %s", rec->task_id,
                           rc == ONCE_OK && !st.is_tomb ? "stored version differs" : "no record");
        stored_clear(&st);
        return ONCE_ECONFLICT;
    }
    if (rc != ONCE_OK)
        return rc;
    pv = once__dy_get_n(st.item, "pv");
    rc = once__store_valid_events(&s->base, st.rec.generation, rec, ev, nev);
    /* The stored version's events become items before the write that drops
     * them from the record item (once: they are the same while the version
     * is, and a retry should keep its read-to-write window short). */
    if (rc == ONCE_OK && !copied)
        rc = copy_out(s, &st);
    if (rc == ONCE_OK)
        rc = once__dy_rows_decode(st.item, old, &nold);
    stored_clear(&st);
    if (rc == ONCE_OK)
        rc = once__dy_sync_rows(rec, old, nold, rows, &nrows);
    if (rc == ONCE_OK)
        rc = once__dy_record_item(s, rec, ev, nev, rows, nrows, pv + 1, &it);
    if (rc != ONCE_OK)
        return rc;
    vals = json_pack("{s:o, s:o}", ":v", once__dy_n(expect_version), ":pv", once__dy_n(pv));
    rc = vals ? put_if(s, &it, "#v = :v AND #pv = :pv AND attribute_not_exists(#tb)", vals)
              : ONCE_ENOMEM;
    once__dy_item_free(&it);
    return rc == ONCE_ECONFLICT ? ROWS_MOVED : rc; /* the next read tells which */
}

int once__dy_update(once_store *base, const once_record *rec, int64_t expect_version,
                    const once_event *ev, size_t nev)
{
    int rc = ONCE_OK, round;

    for (round = 0; rc == ONCE_OK && round < DY_ROUNDS; round++) {
        int64_t wait;
        rc = update_once(dys(base), rec, expect_version, ev, nev, round > 0);
        if (rc != ROWS_MOVED)
            return rc;
        /* Deliverers are changing the rows: let a claim or ack pass. */
        rc = once__backoff_jitter_ms(DY_BACKOFF_BASE_MS / 5, (uint64_t)round, DY_BACKOFF_CAP_MS / 5,
                                     once_rng_system(), &wait);
        if (rc == ONCE_OK)
            once__dy_pause_ms(wait);
    }
    if (rc == ONCE_OK) {
        once__store_seterr(base, "update %s: the delivery rows kept moving", rec->task_id);
        rc = ONCE_EBUSY;
    }
    return rc;
}

int once__dy_renew(once_store *base, const char *principal, const char *task_id, const char *owner,
                   int64_t fence, int64_t until)
{
    dy_store *s = dys(base);
    dy_stored st;
    dy_item key;
    json_t *req;
    int rc;

    rc = once__dy_key(&key, principal, task_id, NULL);
    if (rc != ONCE_OK)
        return rc;
    /* The lease moves in the "due" index too: dk is "L" for a live,
     * unfinished record with a lease, which the condition requires. */
    req = json_pack("{s:s, s:O, s:s, s:s, s:{s:o, s:o, s:o, s:o, s:o, s:o}}", "TableName", s->table,
                    "Key", key.o, "UpdateExpression", "SET #lu = :u, #dt = :u, #dk = :l",
                    "ConditionExpression",
                    "attribute_exists(#pk) AND attribute_not_exists(#tb) AND #f = :f AND "
                    "#lo = :o AND (#st = :s1 OR #st = :s2)",
                    "ExpressionAttributeValues", ":u", once__dy_n(until), ":l", once__dy_s("L"),
                    ":f", once__dy_n(fence), ":o", once__dy_s(owner), ":s1",
                    once__dy_n(ONCE_STATE_SUBMITTED), ":s2", once__dy_n(ONCE_STATE_WORKING));
    once__dy_item_free(&key);
    if (!req)
        return ONCE_ENOMEM;
    /* Setting the same lease twice is harmless: a lost reply is retried. */
    rc = once__dy_call(s, "UpdateItem", req, DY_IDEMPOTENT, NULL, NULL);
    json_decref(req);
    if (rc == ONCE_OK)
        return once__store_renew_result(base, task_id, 1, 1);
    if (rc != ONCE_ECONFLICT)
        return rc;
    rc = get_stored(s, principal, task_id, &st);
    if (rc != ONCE_OK && rc != ONCE_ENOTFOUND)
        return rc;
    rc = once__store_renew_result(base, task_id, 0, rc == ONCE_OK && !st.is_tomb);
    stored_clear(&st);
    return rc;
}

/* What sweep and purge carry through the index entries they visit. */
typedef struct cut {
    int64_t before, now;
    size_t *n;
} cut;

/* Turn one candidate from the index into a tombstone, if it still is a
 * finished record older than the cut. */
static int entomb(dy_store *s, json_t *cand, void *arg)
{
    cut *c = arg;
    const char *pr = once__dy_get_s(cand, "pr"), *id = once__dy_get_s(cand, "id");
    dy_stored st;
    dy_item it;
    json_t *vals;
    int rc;

    if (!pr || !id)
        return ONCE_OK;
    rc = get_stored(s, pr, id, &st);
    if (rc == ONCE_ENOTFOUND)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    if (st.is_tomb || !once_state_terminal(st.rec.state) || st.rec.finished_at >= c->before) {
        stored_clear(&st);
        return ONCE_OK; /* the index lagged behind the item */
    }
    rc = once__dy_tomb_item(s, &st.rec, c->now, &it);
    if (rc == ONCE_OK) {
        vals = json_pack("{s:o}", ":v", once__dy_n(st.rec.version));
        rc = vals ? put_if(s, &it, "#v = :v AND attribute_not_exists(#tb)", vals) : ONCE_ENOMEM;
        once__dy_item_free(&it);
    }
    if (rc == ONCE_OK) {
        /* A failure here leaves events under the tombstone: purge deletes
         * them before the tombstone, and readers never see them. */
        (*c->n)++;
        rc = once__dy_delete_events(s, once__dy_get_s(cand, "pk"));
    }
    stored_clear(&st);
    return rc == ONCE_ECONFLICT ? ONCE_OK : rc;
}

int once__dy_sweep(once_store *base, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    cut c = {finished_before, now, n};

    return max ? once__dy_due(dys(base), "F", finished_before, max, entomb, &c) : ONCE_OK;
}

static int forget(dy_store *s, json_t *cand, void *arg)
{
    cut *c = arg;
    json_t *req;
    int rc;

    /* Events first: a tombstone's leftovers (a sweep cut short) must not
     * outlive the last item that names the key. */
    rc = once__dy_delete_events(s, once__dy_get_s(cand, "pk"));
    if (rc != ONCE_OK)
        return rc;
    req = json_pack("{s:s, s:{s:O, s:O}, s:s, s:{s:o}}", "TableName", s->table, "Key", "pk",
                    json_object_get(cand, "pk"), "sk", json_object_get(cand, "sk"),
                    "ConditionExpression", "attribute_exists(#tb) AND #xa < :b",
                    "ExpressionAttributeValues", ":b", once__dy_n(c->before));
    rc = req ? once__dy_call(s, "DeleteItem", req, DY_CONDITIONAL, NULL, NULL) : ONCE_ENOMEM;
    json_decref(req);
    if (rc == ONCE_OK)
        (*c->n)++;
    return rc == ONCE_ECONFLICT ? ONCE_OK : rc;
}

int once__dy_purge(once_store *base, int64_t expired_before, size_t max, size_t *n)
{
    cut c = {expired_before, 0, n};

    return max ? once__dy_due(dys(base), "T", expired_before, max, forget, &c) : ONCE_OK;
}

int once__dy_meta(once_store *base, const char *name, const char *init_value, char **out)
{
    dy_store *s = dys(base);
    dy_item it;
    json_t *req, *reply = NULL;
    char *pk;
    size_t n = strlen(name) + 3;
    const char *v;
    int rc;

    pk = once_malloc(n);
    if (!pk)
        return ONCE_ENOMEM;
    snprintf(pk, n, "m:%s", name); /* a task's pk starts with a digit */
    rc = once__dy_item_init(&it);
    if (rc != ONCE_OK) {
        once_free(pk);
        return rc;
    }
    once__dy_put_s(&it, "pk", pk);
    once__dy_put_s(&it, "sk", DY_SK_META);
    once_free(pk);
    if (init_value && !it.oom) {
        dy_item full = {json_deep_copy(it.o), 0, 0};
        if (!full.o)
            full.oom = 1;
        once__dy_put_s(&full, "val", init_value);
        rc = full.oom ? ONCE_ENOMEM : put_if(s, &full, "attribute_not_exists(#pk)", NULL);
        once__dy_item_free(&full);
        if (rc == ONCE_ECONFLICT)
            rc = ONCE_OK; /* someone else's value stays: read it below */
    }
    if (rc == ONCE_OK && !it.oom) {
        req = json_pack("{s:s, s:O, s:b}", "TableName", s->table, "Key", it.o, "ConsistentRead", 1);
        rc = req ? once__dy_call(s, "GetItem", req, DY_IDEMPOTENT, &reply, NULL) : ONCE_ENOMEM;
        json_decref(req);
    }
    once__dy_item_free(&it);
    if (rc != ONCE_OK)
        return rc;
    v = once__dy_get_s(json_object_get(reply, "Item"), "val");
    rc = v ? ((*out = once_strdup(v)) ? ONCE_OK : ONCE_ENOMEM) : ONCE_ENOTFOUND;
    json_decref(reply);
    return rc;
}
