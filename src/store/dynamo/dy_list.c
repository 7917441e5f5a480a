/*
 * dy_list.c -- ListTasks on DynamoDB: a Query of one list index per page,
 * whose cost does not grow with what the principal stored.
 *
 *   filter        index (partition key)            filter expression
 *   none          by_principal (lp = principal)    none
 *   contextId     by_context (lx = principal+ctx)  none
 *   status        by_principal                     st = :s
 *   both          by_context                       st = :s
 *
 * Both indexes sort by lc (created_at, task_id: the page order), so the
 * cursor is a key condition (lc > :a) and a page without a state filter
 * reads exactly the items it returns. Tombstones carry neither lp nor lx,
 * so neither index lists them.
 *
 * The state has no index (two more, state and context + state, would be
 * two more entries on every record write, each moving whenever the state
 * does: docs/design.md, section 5). A state filter reads on through the
 * list index, and a Query's Limit counts the items read before the
 * filter, so the reads of one call are bounded by what the requests ask
 * for: the first twice the page, each next one twice the last, never more
 * than is left of ONCE_LIST_SCAN_MAX (ScannedCount says what a request
 * used). A filter most tasks match reads little more than its page (items
 * read are billed, listed or not); a rare one takes a few requests. When
 * the budget is spent with fewer than limit matches and the index has
 * more (LastEvaluatedKey), the page ends with a ONCE_KIND_RESUME record at
 * the last item read (store.h, the list slot): the next call goes on from
 * it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

/* One call's progress: the page being filled and the reads left. */
typedef struct list_page {
    once_record_list *out;
    size_t limit;
    size_t budget; /* items the state filter may still read */
    int budget_on; /* a state filter: the budget applies */
} list_page;

/* The Query of q's first request: its index, key condition and filter. */
static json_t *list_req(dy_store *s, const once_list_query *q, const list_page *pg)
{
    char after[DY_LC_MAX];
    const char *cond;
    json_t *vals;
    char *lx = NULL;

    if (q->context_id) {
        lx = once__dy_ctx_key(q->principal, q->context_id);
        if (!lx)
            return NULL;
        vals = json_pack("{s:o}", ":p", once__dy_s(lx));
        cond = q->after_task_id ? "#lx = :p AND #lc > :a" : "#lx = :p";
    } else {
        vals = json_pack("{s:o}", ":p", once__dy_s(q->principal));
        cond = q->after_task_id ? "#lp = :p AND #lc > :a" : "#lp = :p";
    }
    once_free(lx);
    if (vals && q->after_task_id) {
        once__dy_list_sk(after, q->after_created_at, q->after_task_id);
        json_object_set_new(vals, ":a", once__dy_s(after));
    }
    if (vals && pg->budget_on)
        json_object_set_new(vals, ":s", once__dy_n(q->state));
    if (!vals || json_object_size(vals) != 1u + !!q->after_task_id + !!pg->budget_on) {
        json_decref(vals);
        return NULL;
    }
    return once__dy_query_req(s, q->context_id ? DY_IDX_CTX : DY_IDX_LIST, cond,
                              pg->budget_on ? "#st = :s" : NULL, vals, 0, 0);
}

/* The items of one reply into the page; DY_STOP once it is full. */
static int take_items(json_t *reply, list_page *pg)
{
    json_t *item;
    size_t i;

    json_array_foreach(json_object_get(reply, "Items"), i, item)
    {
        dy_stored st;
        int rc = once__dy_decode(item, &st);
        if (rc != ONCE_OK)
            return rc;
        if (st.is_tomb)
            continue; /* not indexed; a stale index entry at most */
        pg->out->v[pg->out->n++] = st.rec;
        if (pg->out->n >= pg->limit)
            return DY_STOP;
    }
    return ONCE_OK;
}

/* End the page with a resume record at the index key `last`. */
static int add_resume(dy_store *s, json_t *last, list_page *pg)
{
    once_record *m = &pg->out->v[pg->out->n];
    const char *lc = once__dy_get_s(last, "lc");

    memset(m, 0, sizeof *m);
    if (once__dy_list_sk_parse(lc, &m->created_at, m->task_id) != ONCE_OK) {
        once__store_seterr(&s->base,
                           "dynamodb: list index key \"%.60s\" is not "
                           "created_at + task_id",
                           lc ? lc : "");
        return ONCE_ECORRUPT;
    }
    m->kind = ONCE_KIND_RESUME;
    pg->out->n++;
    return ONCE_OK;
}

/* Request after request until the page is full, the index ends, or the
 * budget is spent. Consumes req. */
static int read_pages(dy_store *s, json_t *req, list_page *pg)
{
    json_t *start = NULL, *reply = NULL;
    size_t ask = 2 * pg->limit;
    int rc = ONCE_OK;

    for (;;) {
        /* Without a state filter every item read is listed: asking for
         * what the page lacks reads no more than it returns. */
        size_t want = pg->limit - pg->out->n;
        if (pg->budget_on) {
            want = ask < pg->budget ? ask : pg->budget;
            ask *= 2;
        }
        if (json_object_set_new(req, "Limit", json_integer((json_int_t)want)) != 0 ||
            (start && json_object_set_new(req, "ExclusiveStartKey", start) != 0)) {
            rc = ONCE_ENOMEM;
            break;
        }
        start = NULL;
        rc = once__dy_call(s, "Query", req, DY_IDEMPOTENT, &reply, NULL);
        if (rc != ONCE_OK)
            break;
        rc = take_items(reply, pg);
        json_t *last = json_object_get(reply, "LastEvaluatedKey");
        if (rc != ONCE_OK || !json_is_object(last))
            break;
        if (pg->budget_on) {
            /* A reply without its count is taken to have read all it
             * was allowed: the bound holds either way. */
            json_int_t used = json_integer_value(json_object_get(reply, "ScannedCount"));
            size_t spent = used > 0 ? (size_t)used : want;
            pg->budget -= spent < pg->budget ? spent : pg->budget;
            if (pg->budget == 0) {
                rc = add_resume(s, last, pg);
                break;
            }
        }
        start = json_incref(last);
        json_decref(reply);
        reply = NULL;
    }
    json_decref(reply);
    json_decref(req);
    return rc == DY_STOP ? ONCE_OK : rc;
}

int once__dy_list(once_store *base, const once_list_query *q, once_record_list *out)
{
    dy_store *s = dys(base);
    list_page pg = {out, q->limit, ONCE_LIST_SCAN_MAX, q->state != ONCE_STATE_UNKNOWN};
    json_t *req;
    int rc;

    out->v = once_calloc(q->limit, sizeof *out->v);
    req = out->v ? list_req(s, q, &pg) : NULL;
    rc = req ? read_pages(s, req, &pg) : ONCE_ENOMEM;
    DY_RETURN_LIST(out, rc);
}
