/*
 * redis_push_ops.c -- the push slots of the Redis backend: push_claim,
 * push_ack, push_rows (store.h, "Push delivery"). redis_push.c has the row
 * layout and the reasoning about who writes which field.
 *
 * A claim walks pushq's due range (scores <= now, oldest first) and leases
 * each candidate with one script on that task's push hash plus the index
 * (RD_PUSH_LEASE tests "due" and takes the row atomically), the way sweep
 * walks its index: concurrent claimers on any number of replicas each get
 * a row or nothing, never the same row, and a stale index entry met on the
 * way is repaired. An ack reads the row, lets once__push_apply_ack decide,
 * and stores the result as a compare-and-set of the fields it read
 * (RD_PUSH_PUT); if the row moved (a claim after a lapsed lease, a reset, a
 * sweep), it reads again and decides again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

#define CLAIM_BATCH 64
#define CLAIM_ROUNDS 64
#define WRITE_TRIES 16

static rd_store *rds(once_store *s)
{
    return (rd_store *)s;
}

/* ------------------------------------------------------------------------
 * Claim: walk pushq's due range, lease candidates one script each.
 */

typedef struct claim_arg {
    const char *owner;
    int64_t now, lease_until;
    size_t max;
    once_push_claim_list *out;
    size_t cap;
    const char *index; /* pushq's key, during the walk */
} claim_arg;

/* A pushq member "<principal>\0<task_id>\0<config_id>" into k's key. */
static int parse_qmember(const redisReply *m, once_push_claim *k)
{
    const char *nul1, *nul2;
    size_t pl, tl, cl;

    memset(k, 0, sizeof *k);
    nul1 = m->type == REDIS_REPLY_STRING ? memchr(m->str, '\0', m->len) : NULL;
    nul2 = nul1 ? memchr(nul1 + 1, '\0', m->len - (size_t)(nul1 - m->str) - 1) : NULL;
    if (!nul2)
        return ONCE_ECORRUPT;
    pl = (size_t)(nul1 - m->str);
    tl = (size_t)(nul2 - nul1 - 1);
    cl = m->len - pl - tl - 2;
    if (pl == 0 || pl > ONCE_PRINCIPAL_MAX || tl == 0 || tl > ONCE_ID_MAX || cl == 0 ||
        cl > ONCE_ID_MAX || memchr(nul2 + 1, '\0', cl))
        return ONCE_ECORRUPT;
    memcpy(k->principal, m->str, pl);
    memcpy(k->task_id, nul1 + 1, tl);
    memcpy(k->config_id, nul2 + 1, cl);
    return ONCE_OK;
}

/* Lease the row named by pushq member m (appended to a->out if taken).
 * Room for it is made first, so a row is never leased and then lost. */
static int lease_one(rd_store *s, rd_conn *c, const redisReply *m, void *arg)
{
    claim_arg *a = arg;
    once_push_claim k;
    int64_t d, t, att;
    char *key;
    redisReply *r;
    rd_cmd cmd;
    int rc;

    if (parse_qmember(m, &k) != ONCE_OK) {
        once__store_seterr(&s->base, "redis: malformed push index member");
        return ONCE_ECORRUPT;
    }
    if (a->out->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 8;
        once_push_claim *g = once_realloc(a->out->v, nc * sizeof *g);
        if (!g)
            return ONCE_ENOMEM;
        a->out->v = g;
        a->cap = nc;
    }
    key = once__rd_key_push(s, k.principal, k.task_id);
    if (!key)
        return ONCE_ENOMEM;
    once__rd_cmd_init(&cmd);
    once__rd_cmd_evalsha(&cmd, s, RD_PUSH_LEASE, 2);
    once__rd_str(&cmd, key);
    once__rd_str(&cmd, a->index);
    once__rd_arg(&cmd, m->str, strlen(k.principal) + 1 + strlen(k.task_id)); /* task member */
    once__rd_str(&cmd, k.config_id);
    once__rd_str(&cmd, a->owner);
    once__rd_i64(&cmd, a->now);
    once__rd_i64(&cmd, a->lease_until);
    rc = once__rd_eval(s, c, RD_PUSH_LEASE, &cmd, 1, &r);
    once__rd_cmd_free(&cmd);
    once_free(key);
    if (rc != ONCE_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        rc = ONCE_OK; /* not due (any more): someone else has it, or the index was stale */
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
               once__rd_num(r->element[0], &d) || once__rd_num(r->element[1], &t) ||
               once__rd_num(r->element[2], &att)) {
        once__store_seterr(&s->base, "redis push lease: unexpected reply");
        rc = ONCE_ESTORE;
    } else {
        k.generation = d + 1;
        k.target = t;
        k.attempts = att;
        k.lease_until = a->lease_until;
        a->out->v[a->out->n++] = k;
    }
    freeReplyObject(r);
    return rc;
}

static int claim_fn(rd_store *s, rd_conn *c, void *arg)
{
    claim_arg *a = arg;
    char *index = once__rd_key_global(s, "pushq");

    /* once__rd_run only retries an attempt that leased nothing. */
    once_push_claim_list_clear(a->out);
    a->cap = 0;
    if (!index)
        return ONCE_ENOMEM;
    /* Each candidate is leased, or moved out of the due range by its script
     * (leased by someone else, re-scored, dropped). */
    const rd_walk w = {.index = index, .max = a->now, .batch = CLAIM_BATCH,
                       .rounds = CLAIM_ROUNDS, .done = &a->out->n, .want = a->max,
                       .fn = lease_one, .arg = a};
    a->index = index;
    int rc = once__rd_walk_due(s, c, &w);
    once_free(index);
    /* Rows already leased are the caller's: a later failure only ends the
     * walk (its message stays in errmsg). */
    return a->out->n > 0 ? ONCE_OK : rc;
}

int once__rd_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms, size_t max,
                        once_push_claim_list *out)
{
    claim_arg a;
    int rc;

    if (once__store_claim_begin(s, owner, now, lease_ms, max, out, &rc))
        return rc;
    memset(&a, 0, sizeof a);
    a.owner = owner;
    a.now = now;
    a.lease_until = now + lease_ms;
    a.max = max;
    a.out = out;
    rc = once__rd_run(rds(s), claim_fn, &a);
    if (rc != ONCE_OK || out->n == 0)
        once_push_claim_list_clear(out); /* room made for rows that went elsewhere */
    return rc;
}

/* ------------------------------------------------------------------------
 * Ack: read the row, apply the ack in C, compare-and-set its progress
 * fields; read again if the row moved meanwhile.
 */

static int ack_fn(rd_store *s, rd_conn *c, void *arg)
{
    const once_push_ack *a = arg;
    char *key = once__rd_key_push(s, a->principal, a->task_id);
    char *q = once__rd_key_global(s, "pushq");
    char member[RD_MEMBER_MAX];
    rd_push_cas *ca = once__rd_push_cas_new();
    size_t mlen = once__rd_member(member, a->principal, a->task_id);
    int tries, rc = ONCE_OK;

    if (!key || !q || !ca) {
        once_free(key);
        once_free(q);
        once__rd_push_cas_free(ca);
        return ONCE_ENOMEM;
    }
    for (tries = 0; tries < WRITE_TRIES; tries++) {
        once_push_row rows[ONCE_PUSH_CONFIGS_MAX], *row = NULL, was;
        size_t n, i;
        redisReply *r;
        rd_cmd cmd;

        rc = once__rd_push_read(s, c, a->principal, a->task_id, rows, &n);
        if (rc != ONCE_OK)
            break;
        for (i = 0; i < n && !row; i++)
            if (strcmp(rows[i].config_id, a->config_id) == 0)
                row = &rows[i];
        if (!row) {
            rc = ONCE_ENOTFOUND;
            break;
        }
        was = *row;
        rc = once__push_apply_ack(row, a);
        if (rc != ONCE_OK)
            break;
        once__rd_cmd_init(&cmd);
        once__rd_cmd_evalsha(&cmd, s, RD_PUSH_PUT, 2);
        once__rd_str(&cmd, key);
        once__rd_str(&cmd, q);
        once__rd_arg(&cmd, member, mlen);
        once__rd_str(&cmd, a->config_id);
        once__rd_push_cas_args(&cmd, ca, &was, row);
        rc = once__rd_eval(s, c, RD_PUSH_PUT, &cmd, 1, &r);
        once__rd_cmd_free(&cmd);
        if (rc != ONCE_OK)
            break;
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
            freeReplyObject(r);
            break;
        }
        if (!(r->type == REDIS_REPLY_INTEGER && r->integer == 0)) {
            once__store_seterr(&s->base, "redis push ack: unexpected reply type %d", r->type);
            rc = ONCE_ESTORE;
            freeReplyObject(r);
            break;
        }
        freeReplyObject(r); /* the row moved under us: read again */
        rc = ONCE_EBUSY;
    }
    if (rc == ONCE_EBUSY)
        once__store_seterr(&s->base, "redis push ack: the row of %s keeps changing", a->task_id);
    once__rd_push_cas_free(ca);
    once_free(key);
    once_free(q);
    return rc;
}

static int rows_fn(rd_store *s, rd_conn *c, void *arg)
{
    once__push_rows_req *a = arg;
    once_push_row v[ONCE_PUSH_CONFIGS_MAX];
    size_t n;
    int rc = once__rd_push_read(s, c, a->principal, a->task_id, v, &n);

    return rc == ONCE_OK ? once__push_rows_out(a->out, v, n) : rc;
}

int once__rd_push_rows(once_store *s, const char *principal, const char *task_id,
                       once_push_row_list *out)
{
    once__push_rows_req a = {principal, task_id, out}; /* out: emptied by store.c */

    return once__rd_run(rds(s), rows_fn, &a);
}

int once__rd_push_ack(once_store *s, const once_push_ack *ack)
{
    return once__rd_run(rds(s), ack_fn, (void *)ack);
}
