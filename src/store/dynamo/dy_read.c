/*
 * dy_read.c -- the DynamoDB backend's reads: load, events, expired_leases,
 * and the integrity check (plus reset, its test-only companion); list is
 * in dy_list.c.
 *
 * load and events read the record item with ConsistentRead: the engine
 * decides on what they return, so they must see every acknowledged write.
 * expired_leases and list read global secondary indexes, which DynamoDB
 * only offers eventually consistent: a candidate lease is re-checked by the
 * engine's CAS, and a ListTasks page may lag a write by a moment
 * (docs/production.md). check is the one Scan: it reads everything by
 * design, and runs in tests and by hand, never on the request path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

int once__dy_get_task(dy_store *s, const char *principal, const char *task_id, json_t **item)
{
    dy_item key;
    json_t *req, *reply = NULL;
    int rc;

    *item = NULL;
    rc = once__dy_key(&key, principal, task_id, NULL);
    if (rc != ONCE_OK)
        return rc;
    req = json_pack("{s:s, s:O, s:b}", "TableName", s->table, "Key", key.o, "ConsistentRead", 1);
    once__dy_item_free(&key);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "GetItem", req, DY_IDEMPOTENT, &reply, NULL);
    json_decref(req);
    if (rc == ONCE_OK) {
        json_t *it = json_object_get(reply, "Item");
        if (json_is_object(it))
            *item = json_incref(it);
        json_decref(reply);
    }
    return rc;
}

json_t *once__dy_query_req(dy_store *s, const char *index, const char *cond, const char *filter,
                           json_t *vals, size_t limit, int consistent)
{
    json_t *req = json_pack("{s:s, s:s, s:o, s:b}", "TableName", s->table, "KeyConditionExpression",
                            cond, "ExpressionAttributeValues", vals, "ConsistentRead", consistent);

    if (req &&
        ((index && json_object_set_new(req, "IndexName", json_string(index)) != 0) ||
         (filter && json_object_set_new(req, "FilterExpression", json_string(filter)) != 0) ||
         (limit && json_object_set_new(req, "Limit", json_integer((json_int_t)limit)) != 0))) {
        json_decref(req);
        req = NULL;
    }
    return req;
}

int once__dy_each(dy_store *s, const char *op, json_t *req, int first_page_only, dy_each_fn fn,
                  void *arg)
{
    json_t *start = NULL;
    int rc = req ? ONCE_OK : ONCE_ENOMEM;

    while (rc == ONCE_OK) {
        json_t *page, *it;
        size_t i;

        if (start && json_object_set_new(req, "ExclusiveStartKey", start) != 0) {
            rc = ONCE_ENOMEM;
            break;
        }
        rc = once__dy_call(s, op, req, DY_IDEMPOTENT, &page, NULL);
        if (rc != ONCE_OK)
            break;
        json_array_foreach(json_object_get(page, "Items"), i, it)
        {
            rc = fn(s, it, arg);
            if (rc != ONCE_OK)
                break;
        }
        start = json_incref(json_object_get(page, "LastEvaluatedKey"));
        json_decref(page);
        if (!start || first_page_only)
            break;
    }
    json_decref(start);
    json_decref(req);
    return rc == DY_STOP ? ONCE_OK : rc;
}

int once__dy_load(once_store *base, const char *principal, const char *task_id, once_record *out,
                  once_tombstone *tomb)
{
    dy_store *s = dys(base);
    json_t *item;
    dy_stored st;
    int rc = ONCE_OK;
    rc = once__dy_get_task(s, principal, task_id, &item);
    if (rc != ONCE_OK)
        return rc;
    if (!item)
        return ONCE_ENOTFOUND;
    rc = once__dy_decode(item, &st);
    json_decref(item);
    if (rc != ONCE_OK)
        return rc;
    if (st.is_tomb) {
        /* Also when its TTL has passed and DynamoDB has not deleted it yet
         * (that can take days): the key is still known as expired. */
        if (tomb)
            *tomb = st.tomb;
        return ONCE_ETOMBSTONE;
    }
    *out = st.rec;
    return ONCE_OK;
}

/* Generation of an event item from its sort key; -1 if not an event. */
static int64_t event_gen(json_t *item)
{
    const char *sk = once__dy_get_s(item, "sk");
    return sk && sk[0] == 'e' ? strtoll(sk + 1, NULL, 10) : -1;
}

/* Append event g with payload p to out (room was reserved). */
static int add_event(once_event_list *out, int64_t g, const char *p)
{
    char *copy = once_strdup(p ? p : "");

    if (!copy)
        return ONCE_ENOMEM;
    out->v[out->n].generation = g;
    out->v[out->n].payload = copy;
    out->n++;
    return ONCE_OK;
}

/* Collecting events: out gets generations next, next+1, ... up to want. */
typedef struct ev_sink {
    once_event_list *out;
    size_t want;
    int64_t next;
    const char *pk;
} ev_sink;

static int take_event(dy_store *s, json_t *item, void *arg)
{
    ev_sink *k = arg;
    int64_t g = event_gen(item);
    int rc;

    if (g != k->next) {
        once__store_seterr(&s->base, "dynamodb: event %lld of %s is missing", (long long)k->next,
                           k->pk);
        return ONCE_ECORRUPT;
    }
    rc = add_event(k->out, g, once__dy_get_s(item, "pl"));
    k->next++;
    return rc == ONCE_OK && k->out->n >= k->want ? DY_STOP : rc;
}

/* Event items after+1 .. last into out (which has room for them). */
static int read_event_items(dy_store *s, const char *pk, int64_t after, int64_t last,
                            once_event_list *out)
{
    char lo[24], hi[24];
    ev_sink k = {out, out->n + (size_t)(last - after), after + 1, pk};
    int rc;

    once__dy_event_sk(lo, after + 1);
    once__dy_event_sk(hi, last);
    rc = once__dy_each(s, "Query",
                       once__dy_query_req(s, NULL, "#pk = :pk AND #sk BETWEEN :lo AND :hi", NULL,
                                          json_pack("{s:o, s:o, s:o}", ":pk", once__dy_s(pk), ":lo",
                                                    once__dy_s(lo), ":hi", once__dy_s(hi)),
                                          (size_t)(last - after), 1),
                       0, take_event, &k);
    if (rc == ONCE_OK && k.next <= last) {
        once__store_seterr(&s->base, "dynamodb: events of %s end at %lld, want %lld", pk,
                           (long long)(k.next - 1), (long long)last);
        rc = ONCE_ECORRUPT;
    }
    return rc;
}

int once__dy_events(once_store *base, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    dy_store *s = dys(base);
    json_t *item;
    dy_stored st;
    size_t want, from_items = 0, i;
    char *pk = NULL;
    int rc = ONCE_OK;
    rc = once__dy_get_task(s, principal, task_id, &item);
    if (rc != ONCE_OK || !item)
        return rc;
    rc = once__dy_decode(item, &st);
    if (rc != ONCE_OK || st.is_tomb || st.rec.generation <= after) {
        json_decref(item);
        if (rc == ONCE_OK && !st.is_tomb)
            once_record_clear(&st.rec);
        return rc;
    }
    if (after < 0)
        after = 0;
    want = (size_t)(st.rec.generation - after);
    if (max && want > max)
        want = max;
    out->v = once_calloc(want, sizeof *out->v);
    pk = once__dy_task_pk(principal, task_id);
    if (!out->v || !pk) {
        rc = ONCE_ENOMEM;
        goto done;
    }
    /* Committed events up to pend_base are items; the rest ride in the
     * record item until the next write copies them out (dynamo.c). */
    if (after < st.pend_base) {
        from_items = (size_t)(st.pend_base - after);
        if (from_items > want)
            from_items = want;
        rc = read_event_items(s, pk, after, after + (int64_t)from_items, out);
    }
    for (i = 0; rc == ONCE_OK && out->n < want; i++) {
        int64_t g = after + 1 + (int64_t)out->n;
        json_t *p = json_array_get(st.pend, (size_t)(g - st.pend_base - 1));
        rc = add_event(out, g, json_string_value(json_object_get(p, "S")));
    }
done:
    once_free(pk);
    once_record_clear(&st.rec);
    json_decref(item);
    DY_RETURN_LIST(out, rc);
}

int once__dy_due(dy_store *s, const char *kind, int64_t before, size_t max, dy_each_fn fn,
                 void *arg)
{
    /* One page of at most max entries: the slots take bounded batches. */
    return once__dy_each(s, "Query",
                         once__dy_query_req(s, DY_IDX_DUE, "#dk = :k AND #dt < :b", NULL,
                                            json_pack("{s:o, s:o}", ":k", once__dy_s(kind), ":b",
                                                      once__dy_n(before)),
                                            max, 0),
                         1, fn, arg);
}

static int take_key(dy_store *s, json_t *item, void *arg)
{
    once_key_list *out = arg;
    once_key *k = &out->v[out->n];
    const char *pr = once__dy_get_s(item, "pr"), *id = once__dy_get_s(item, "id");

    (void)s;
    if (!pr || !id || strlen(pr) > ONCE_PRINCIPAL_MAX || strlen(id) > ONCE_ID_MAX)
        return ONCE_OK;
    once__strlcpy(k->principal, pr, sizeof k->principal);
    once__strlcpy(k->task_id, id, sizeof k->task_id);
    out->n++;
    return ONCE_OK;
}

int once__dy_expired_leases(once_store *base, int64_t now, size_t max, once_key_list *out)
{
    if (max == 0)
        return ONCE_OK;
    out->v = once_calloc(max, sizeof *out->v);
    if (!out->v)
        return ONCE_ENOMEM;
    DY_RETURN_LIST(out, once__dy_due(dys(base), "L", now, max, take_key, out));
}

/* ---------------------------------------------------------------------------
 * check and reset: the whole table, page by page.
 */

static int scan_all(dy_store *s, const char *projection, dy_each_fn fn, void *arg)
{
    json_t *req = json_pack("{s:s, s:b}", "TableName", s->table, "ConsistentRead", 1);

    if (req && projection &&
        json_object_set_new(req, "ProjectionExpression", json_string(projection)) != 0) {
        json_decref(req);
        req = NULL;
    }
    return once__dy_each(s, "Scan", req, 0, fn, arg);
}

static int collect(dy_store *s, json_t *item, void *arg)
{
    (void)s;
    return json_array_append(arg, item) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

static int cmp_items(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(once__dy_get_s(x, "pk") ? once__dy_get_s(x, "pk") : "",
                   once__dy_get_s(y, "pk") ? once__dy_get_s(y, "pk") : "");
    return c ? c
             : strcmp(once__dy_get_s(x, "sk") ? once__dy_get_s(x, "sk") : "",
                      once__dy_get_s(y, "sk") ? once__dy_get_s(y, "sk") : "");
}

/* The record's delivery rows against its push_json (bad_push). */
static void check_rows(once_check_report *rep, json_t *item, const once_record *r)
{
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0;
    const char *why = once__dy_rows_decode(item, rows, &n) != ONCE_OK
                          ? "delivery rows do not parse"
                          : once__push_rows_flaw(r->push_json, r->generation, rows, n);

    if (why) {
        rep->bad_push++;
        once__check_problem(rep, "%s/%s: %s", r->principal, r->task_id, why);
    }
}

/* The list indexes' keys of a live record item (lp, lx, lc): a record
 * without them is missing from ListTasks (a writer older than the layout,
 * an unfinished upgrade). Counted with the records in a bad state. */
static int check_list_keys(once_check_report *rep, json_t *item, const once_record *r)
{
    char lc[DY_LC_MAX];
    char *lx = once__dy_ctx_key(r->principal, r->context_id);
    const char *lp = once__dy_get_s(item, "lp"), *have = once__dy_get_s(item, "lx"),
               *hlc = once__dy_get_s(item, "lc");
    const char *why = NULL;

    if (!lx)
        return ONCE_ENOMEM;
    once__dy_list_sk(lc, r->created_at, r->task_id);
    if (!have)
        why = "no \"lx\": not in index " DY_IDX_CTX " (open with ?create=1 to upgrade)";
    else if (strcmp(have, lx) != 0)
        why = "\"lx\" is not its principal and context";
    else if (!lp || strcmp(lp, r->principal) != 0 || !hlc || strcmp(hlc, lc) != 0)
        why = "\"lp\"/\"lc\" do not match the record";
    once_free(lx);
    if (why) {
        rep->bad_state++;
        once__check_problem(rep, "%s/%s: %s", r->principal, r->task_id, why);
    }
    return ONCE_OK;
}

/* One task's items v[0..n): events ("e...") sort before the record ("r"). */
static int check_task(once_check_report *rep, json_t **v, size_t n)
{
    size_t nev = n, i, upto = 0;
    json_t *last = v[n - 1];
    const char *sk = once__dy_get_s(last, "sk");
    dy_stored st;
    int64_t max_gen = 0;
    int rc;

    if (!sk || strcmp(sk, DY_SK_RECORD) != 0) {
        const char *pr = once__dy_get_s(last, "pr"), *id = once__dy_get_s(last, "id");
        once__check_orphans(rep, pr ? pr : "?", id ? id : "?", n);
        return ONCE_OK;
    }
    nev = n - 1;
    rc = once__dy_decode(last, &st);
    if (rc == ONCE_ECORRUPT) {
        rep->bad_state++;
        once__check_problem(rep, "undecodable item %s", once__dy_get_s(last, "pk"));
        return ONCE_OK;
    }
    if (rc != ONCE_OK)
        return rc;
    if (st.is_tomb) {
        once__check_tombstone(rep, &st.tomb, nev);
        return ONCE_OK;
    }
    /* Items past pend_base are copies of a write that lost its CAS or of a
     * former life of the key: never read, overwritten before use. */
    for (i = 0; i < nev; i++) {
        int64_t g = event_gen(v[i]);
        if (g >= 1 && g <= st.pend_base) {
            upto++;
            if (g > max_gen)
                max_gen = g;
        }
    }
    if (st.rec.generation > st.pend_base)
        max_gen = st.rec.generation;
    once__check_record(rep, &st.rec, upto + json_array_size(st.pend), max_gen,
                       upto == (size_t)st.pend_base);
    check_rows(rep, last, &st.rec);
    rc = check_list_keys(rep, last, &st.rec);
    once_record_clear(&st.rec);
    return rc;
}

int once__dy_check(once_store *base, once_check_report *rep)
{
    dy_store *s = dys(base);
    json_t *all = json_array();
    json_t **v = NULL;
    size_t n, i, j;
    int rc;

    if (!all)
        return ONCE_ENOMEM;
    rc = scan_all(s, NULL, collect, all);
    n = json_array_size(all);
    if (rc == ONCE_OK && n > 0 && !(v = once_calloc(n, sizeof *v)))
        rc = ONCE_ENOMEM;
    for (i = 0; rc == ONCE_OK && i < n; i++)
        v[i] = json_array_get(all, i);
    if (rc == ONCE_OK && n > 0)
        qsort(v, n, sizeof *v, cmp_items);
    for (i = 0; rc == ONCE_OK && i < n; i = j) {
        const char *pk = once__dy_get_s(v[i], "pk");
        for (j = i + 1; j < n && strcmp(once__dy_get_s(v[j], "pk"), pk) == 0; j++)
            ;
        if (strcmp(once__dy_get_s(v[i], "sk"), DY_SK_META) == 0 ||
            strcmp(pk, DY_PK_REPLICAS) == 0)
            continue;
        rc = check_task(rep, v + i, j - i);
    }
    once_free(v);
    json_decref(all);
    return rc;
}

static int delete_item(dy_store *s, json_t *item, void *arg)
{
    json_t *req = json_pack("{s:s, s:{s:O, s:O}}", "TableName", s->table, "Key", "pk",
                            json_object_get(item, "pk"), "sk", json_object_get(item, "sk"));
    int rc;

    (void)arg;
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "DeleteItem", req, DY_IDEMPOTENT, NULL, NULL);
    json_decref(req);
    return rc;
}

int once__dy_reset(dy_store *s)
{
    return scan_all(s, "#pk, #sk", delete_item, NULL);
}

int once__dy_delete_events(dy_store *s, const char *pk)
{
    if (!pk)
        return ONCE_ECORRUPT;
    return once__dy_each(
        s, "Query",
        once__dy_query_req(s, NULL, "#pk = :pk AND begins_with(#sk, :e)", NULL,
                           json_pack("{s:o, s:o}", ":pk", once__dy_s(pk), ":e", once__dy_s("e")), 0,
                           1),
        0, delete_item, NULL);
}

static int same_key(const once_key *a, const once_key *b)
{
    return strcmp(a->task_id, b->task_id) == 0 && strcmp(a->principal, b->principal) == 0;
}

/* A returned item's generation (-1: a tombstone) into every place of
 * keys[0..n) it answers (a key may be asked twice). */
static void take_gen(json_t *item, const once_key *keys, size_t n, int64_t *gens)
{
    once_key k;
    const char *p = once__dy_get_s(item, "pr"), *t = once__dy_get_s(item, "id");
    if (p == NULL || t == NULL || snprintf(k.principal, sizeof k.principal, "%s", p) < 0 ||
        snprintf(k.task_id, sizeof k.task_id, "%s", t) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (same_key(&keys[i], &k))
            gens[i] = once__dy_get_n(item, "tb") ? -1 : once__dy_get_n(item, "g");
}

/* 1 if keys[i] was asked before it (BatchGetItem refuses duplicates). */
static int asked_before(const once_key *keys, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (same_key(&keys[j], &keys[i]))
            return 1;
    return 0;
}

/* The records' heads in one BatchGetItem (consistent reads, only the
 * attributes that say the key, the generation and a tombstone), and again
 * for any keys DynamoDB left unprocessed (throttling), a few times. */
int once__dy_generations(once_store *base, const once_key *keys, size_t n, int64_t *gens)
{
    dy_store *s = dys(base);
    json_t *list = json_array();
    int rc = list != NULL ? ONCE_OK : ONCE_ENOMEM;
    for (size_t i = 0; rc == ONCE_OK && i < n; i++) {
        if (asked_before(keys, i))
            continue;
        dy_item key;
        rc = once__dy_key(&key, keys[i].principal, keys[i].task_id, NULL);
        if (rc == ONCE_OK && json_array_append_new(list, key.o) != 0)
            rc = ONCE_ENOMEM;
    }
    json_t *ask = rc == ONCE_OK
                      ? json_pack("{s:{s:o, s:s, s:{s:s, s:s, s:s, s:s}, s:b}}", s->table, "Keys",
                                  json_incref(list), "ProjectionExpression", "#p, #i, #g, #t",
                                  "ExpressionAttributeNames", "#p", "pr", "#i", "id", "#g", "g",
                                  "#t", "tb", "ConsistentRead", 1)
                      : NULL;
    json_decref(list);
    if (rc == ONCE_OK && ask == NULL)
        rc = ONCE_ENOMEM;
    for (int tries = 0; rc == ONCE_OK && ask != NULL; tries++) {
        json_t *req = json_pack("{s:O}", "RequestItems", ask), *reply = NULL;
        rc = req != NULL ? once__dy_call(s, "BatchGetItem", req, DY_IDEMPOTENT, &reply, NULL)
                         : ONCE_ENOMEM;
        json_decref(req);
        json_decref(ask);
        ask = NULL;
        if (rc != ONCE_OK)
            break;
        json_t *items = json_object_get(json_object_get(reply, "Responses"), s->table);
        size_t k;
        json_t *item;
        json_array_foreach(items, k, item)
            take_gen(item, keys, n, gens);
        json_t *left = json_object_get(reply, "UnprocessedKeys");
        if (json_is_object(left) && json_object_size(left) > 0) {
            if (tries + 1 >= DY_ATTEMPTS) {
                once__store_seterr(&s->base, "dynamodb: BatchGetItem left keys unprocessed");
                rc = ONCE_EBUSY;
            } else {
                ask = json_incref(left);
                once__dy_pause_ms(DY_BACKOFF_BASE_MS << tries);
            }
        }
        json_decref(reply);
    }
    json_decref(ask);
    return rc;
}
