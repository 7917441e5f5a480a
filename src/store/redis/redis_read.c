/*
 * redis_read.c -- the Redis backend's reads: load, events, expired_leases,
 * list.
 *
 * load is one HGETALL (a record or a tombstone, atomically), sent in the
 * write pipeline when batch= runs one (redis_batch.c), events one
 * LRANGE (event g sits at list index g-1), expired_leases one
 * ZRANGEBYSCORE on the lease index. list walks an index in (created_at,
 * task_id) order -- the context's when the query names one (exact: the
 * scripts that write the principal's list index write it too), else the
 * principal's -- and fetches the records with pipelined HGETALLs, skipping
 * entries whose record is gone or filtered out. A state filter has no
 * index (a state changes on every turn; an index per state would cost
 * every update two more writes), so it is a bounded scan: at most
 * ONCE_LIST_SCAN_MAX entries per call, then a ONCE_KIND_RESUME record
 * says where the next call goes on. A page is records each read
 * atomically, not a snapshot of all of them (the contract asks no more).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

static rd_store *rds(once_store *s)
{
    return (rd_store *)s;
}

typedef struct load_arg {
    const char *key;
    once_record *out;
    once_tombstone *tomb;
} load_arg;

/* What the HGETALL reply r of a load says (r is freed). */
static int load_verdict(rd_store *s, load_arg *a, redisReply *r)
{
    int rc;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 0)
        rc = ONCE_ENOTFOUND;
    else
        rc = once__rd_parse_hash(r, a->out, a->tomb);
    if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "redis: %s is not a once record", a->key);
    freeReplyObject(r);
    return rc;
}

static int load_fn(rd_store *s, rd_conn *c, void *arg)
{
    load_arg *a = arg;
    redisReply *r;
    int rc;

    once_record_clear(a->out);
    rc = once__rd_call_key(s, c, "HGETALL", a->key, &r);
    return rc == ONCE_OK ? load_verdict(s, a, r) : rc;
}

/* A load joins the pipeline of the writes in flight (redis_batch.c) when
 * there is one: one read and one write of the connection serve many tasks,
 * and those system calls were most of the Redis CPU a new task's
 * idempotency read cost (issue #35). A read may be repeated, so a
 * pipeline that failed is simply retried alone. */
static int load_batched(rd_store *s, load_arg *a)
{
    rd_cmd cmd;
    rd_bop b;
    int rc;

    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "HGETALL");
    once__rd_str(&cmd, a->key);
    b.cmd = &cmd;
    rc = once__rd_batch_write(s, &b);
    once__rd_cmd_free(&cmd);
    if (rc != ONCE_OK) {
        if (b.reply)
            freeReplyObject(b.reply);
        return RD_ALONE;
    }
    return load_verdict(s, a, b.reply);
}

int once__rd_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                  once_tombstone *tomb)
{
    load_arg a;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    a.key = once__rd_key_task(rds(s), principal, task_id);
    if (!a.key)
        return ONCE_ENOMEM;
    a.out = out;
    a.tomb = tomb;
    rc = load_batched(rds(s), &a);
    if (rc == RD_ALONE)
        rc = once__rd_run(rds(s), load_fn, &a);
    once_free((char *)a.key);
    return rc;
}

int once__rd_stored_ctx(rd_store *s, rd_conn *c, const char *h, char ctx[ONCE_ID_MAX + 1])
{
    redisReply *r;
    rd_cmd cmd;
    int rc;

    ctx[0] = '\0';
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "HGET");
    once__rd_str(&cmd, h);
    once__rd_str(&cmd, "h");
    rc = once__rd_call(s, c, &cmd, 0, &r);
    once__rd_cmd_free(&cmd);
    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_NIL &&
        (r->type != REDIS_REPLY_STRING ||
         once__rd_head_field(r->str, r->len, RD_HEAD_C, ctx, ONCE_ID_MAX + 1) != 0)) {
        ctx[0] = '\0';
        rc = ONCE_ECORRUPT;
    }
    freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------------------ */

typedef struct events_arg {
    const char *key;
    int64_t start, stop; /* list indexes, stop -1 = to the end */
    once_event_list *out;
} events_arg;

static int events_fn(rd_store *s, rd_conn *c, void *arg)
{
    events_arg *a = arg;
    redisReply *r;
    rd_cmd cmd;
    size_t i;
    int rc;

    once_event_list_clear(a->out);
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "LRANGE");
    once__rd_str(&cmd, a->key);
    once__rd_i64(&cmd, a->start);
    once__rd_i64(&cmd, a->stop);
    rc = once__rd_call_array(s, c, &cmd, &r);
    once__rd_cmd_free(&cmd);
    if (rc != ONCE_OK)
        return rc;
    if (r->elements) {
        a->out->v = once_calloc(r->elements, sizeof *a->out->v);
        if (!a->out->v)
            rc = ONCE_ENOMEM;
    }
    for (i = 0; rc == ONCE_OK && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || memchr(e->str, '\0', e->len)) {
            rc = ONCE_ECORRUPT;
            break;
        }
        a->out->v[i].generation = a->start + 1 + (int64_t)i;
        a->out->v[i].payload = once_strndup(e->str, e->len);
        a->out->n = i + 1;
        if (!a->out->v[i].payload)
            rc = ONCE_ENOMEM;
    }
    freeReplyObject(r);
    if (rc != ONCE_OK)
        once_event_list_clear(a->out);
    return rc;
}

int once__rd_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                    size_t max, once_event_list *out)
{
    events_arg a;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    a.start = after < 0 ? 0 : after;
    if (max == 0 || max > (size_t)(INT64_MAX - a.start))
        a.stop = -1;
    else
        a.stop = a.start + (int64_t)max - 1;
    a.key = once__rd_key_events(rds(s), principal, task_id);
    if (!a.key)
        return ONCE_ENOMEM;
    a.out = out;
    rc = once__rd_run(rds(s), events_fn, &a);
    once_free((char *)a.key);
    return rc;
}

/* ------------------------------------------------------------------------ */

typedef struct leases_arg {
    int64_t now;
    size_t max;
    once_key_list *out;
} leases_arg;

static int leases_fn(rd_store *s, rd_conn *c, void *arg)
{
    leases_arg *a = arg;
    char *index = once__rd_key_global(s, "leases");
    redisReply *r;
    size_t i;
    int rc;

    once_key_list_clear(a->out);
    if (!index)
        return ONCE_ENOMEM;
    rc = once__rd_due(s, c, index, a->now, 1, a->max > INT64_MAX ? INT64_MAX : (int64_t)a->max,
                      &r);
    once_free(index);
    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return ONCE_ECORRUPT;
    }
    if (r->elements) {
        a->out->v = once_calloc(r->elements, sizeof *a->out->v);
        if (!a->out->v)
            rc = ONCE_ENOMEM;
    }
    for (i = 0; rc == ONCE_OK && i < r->elements; i++) {
        const redisReply *m = r->element[i];
        if (m->type != REDIS_REPLY_STRING ||
            once__rd_member_key(m->str, m->len, &a->out->v[i]) != ONCE_OK)
            rc = ONCE_ECORRUPT;
        else
            a->out->n = i + 1;
    }
    freeReplyObject(r);
    if (rc != ONCE_OK)
        once_key_list_clear(a->out);
    return rc;
}

int once__rd_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    leases_arg a = {now, max, out};

    memset(out, 0, sizeof *out);
    if (max == 0)
        return ONCE_OK;
    return once__rd_run(rds(s), leases_fn, &a);
}

/* ------------------------------------------------------------------------ */

#define RD_LIST_BATCH 128

/* One list call. index is the context's index when the query names a
 * context, else the principal's; each entry read from it is "examined",
 * matched or not, and the call stops after ONCE_LIST_SCAN_MAX of them
 * (store.h, the list slot): only a state filter can make it skip many. */
typedef struct list_arg {
    const once_list_query *q;
    const char *index;
    once_record_list *out;
    size_t examined;
    char cursor[1 + RD_LMEMBER_MAX]; /* "(" + the last entry examined, or "-" */
    size_t cursor_len;
} list_arg;

static int wanted(const once_list_query *q, const once_record *r)
{
    if (q->context_id && strcmp(r->context_id, q->context_id) != 0)
        return 0; /* a stale entry: the index only says where to look */
    return q->state == ONCE_STATE_UNKNOWN || r->state == q->state;
}

/* Fetch the records of entries m[0..n) (pipelined) and append the wanted
 * ones to a->out, up to the limit. */
static int fetch_page(rd_store *s, rd_conn *c, list_arg *a, redisReply **m, size_t n)
{
    size_t i, queued = 0, read;
    int rc = ONCE_OK;

    for (i = 0; rc == ONCE_OK && i < n; i++) {
        char id[ONCE_ID_MAX + 1];
        int64_t created;
        char *key;
        rd_cmd cmd;

        if (m[i]->type != REDIS_REPLY_STRING ||
            once__rd_list_member_parse(m[i]->str, m[i]->len, &created, id) != 0) {
            rc = ONCE_ECORRUPT;
            break;
        }
        key = once__rd_key_task(s, a->q->principal, id);
        if (!key) {
            rc = ONCE_ENOMEM;
            break;
        }
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "HGETALL");
        once__rd_str(&cmd, key);
        rc = once__rd_append(s, c, &cmd);
        once__rd_cmd_free(&cmd);
        once_free(key);
        if (rc == ONCE_OK)
            queued++;
    }
    for (read = 0; read < queued; read++) {
        once_record rec;
        redisReply *r;
        int prc = once__rd_reply(s, c, &r);

        if (prc != ONCE_OK) {
            rc = prc;
            break;
        }
        if (rc == ONCE_OK && a->out->n < a->q->limit) {
            prc = once__rd_parse_hash(r, &rec, NULL);
            if (prc == ONCE_OK) {
                if (wanted(a->q, &rec))
                    a->out->v[a->out->n++] = rec;
                else
                    once_record_clear(&rec);
            } else if (prc != ONCE_ETOMBSTONE &&
                       !(r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
                rc = prc; /* gone or tombstoned since indexed: skip; malformed: fail */
            }
        }
        freeReplyObject(r);
    }
    if (read < queued)
        c->item.broken = 1; /* replies left unread: the connection is out of step */
    return rc;
}

/* End the page with the ONCE_KIND_RESUME record: the last entry examined. */
static int resume_here(list_arg *a)
{
    once_record *m = &a->out->v[a->out->n];

    memset(m, 0, sizeof *m);
    if (once__rd_list_member_parse(a->cursor + 1, a->cursor_len - 1, &m->created_at,
                                   m->task_id) != 0)
        return ONCE_ECORRUPT;
    m->kind = ONCE_KIND_RESUME;
    a->out->n++;
    return ONCE_OK;
}

/* One round: read up to want entries after the cursor, and one more to
 * learn whether any are left (*more); fetch the records of the first want. */
static int list_round(rd_store *s, rd_conn *c, list_arg *a, size_t want, int *more)
{
    redisReply *r;
    rd_cmd cmd;
    size_t got;
    int rc;

    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "ZRANGEBYLEX");
    once__rd_str(&cmd, a->index);
    once__rd_arg(&cmd, a->cursor, a->cursor_len);
    once__rd_str(&cmd, "+");
    once__rd_str(&cmd, "LIMIT");
    once__rd_i64(&cmd, 0);
    once__rd_i64(&cmd, (int64_t)want + 1);
    rc = once__rd_call_array(s, c, &cmd, &r);
    once__rd_cmd_free(&cmd);
    if (rc != ONCE_OK)
        return rc;
    *more = r->elements > want;
    got = *more ? want : r->elements;
    if (got) {
        const redisReply *last = r->element[got - 1];
        rc = fetch_page(s, c, a, r->element, got);
        if (rc == ONCE_OK && last->len <= RD_LMEMBER_MAX) { /* fetch_page read it */
            a->cursor[0] = '(';
            memcpy(a->cursor + 1, last->str, last->len);
            a->cursor_len = 1 + last->len;
        }
        a->examined += got;
    }
    freeReplyObject(r);
    return rc;
}

static int list_fn(rd_store *s, rd_conn *c, void *arg)
{
    list_arg *a = arg;
    int rc = ONCE_OK, more = 1;

    once_record_list_clear(a->out);
    a->examined = 0;
    a->out->v = once_calloc(a->q->limit, sizeof *a->out->v);
    if (!a->out->v)
        return ONCE_ENOMEM;
    if (a->q->after_task_id) {
        a->cursor[0] = '(';
        a->cursor_len = 1 + once__rd_list_member(a->cursor + 1, a->q->after_created_at,
                                                 a->q->after_task_id);
    } else {
        a->cursor[0] = '-';
        a->cursor_len = 1;
    }
    while (rc == ONCE_OK && more && a->out->n < a->q->limit &&
           a->examined < ONCE_LIST_SCAN_MAX) {
        size_t want = a->q->limit - a->out->n;

        if (a->q->state != ONCE_STATE_UNKNOWN && want < RD_LIST_BATCH)
            want = RD_LIST_BATCH; /* the filter skips entries: read ahead */
        if (want > RD_LIST_BATCH * 8)
            want = RD_LIST_BATCH * 8;
        if (want > ONCE_LIST_SCAN_MAX - a->examined)
            want = ONCE_LIST_SCAN_MAX - a->examined;
        rc = list_round(s, c, a, want, &more);
    }
    /* Out of budget with room in the page and entries left: say where the
     * next call goes on (there is room: n < limit). */
    if (rc == ONCE_OK && more && a->out->n < a->q->limit)
        rc = resume_here(a);
    if (rc != ONCE_OK)
        once_record_list_clear(a->out);
    return rc;
}

int once__rd_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    list_arg a;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    memset(&a, 0, sizeof a);
    a.q = q;
    a.out = out;
    a.index = q->context_id ? once__rd_key_ctx(rds(s), q->principal, q->context_id)
                            : once__rd_key_list(rds(s), q->principal);
    if (!a.index)
        return ONCE_ENOMEM;
    rc = once__rd_run(rds(s), list_fn, &a);
    once_free((char *)a.index);
    return rc;
}
