/*
 * redis_write.c -- the Redis backend's writes: create, update, renew,
 * sweep, purge, meta.
 *
 * create and update are one script each (redis_scripts.c): the existence
 * check or version compare, the record hash, the event appends, the index
 * entries and the delivery rows happen in one atomic step. Concurrent calls
 * share a pipeline (redis_batch.c); each reads its own script's reply. An update of a
 * record carrying push_json first reads the stored rows and reshapes them in
 * C (redis_push.c); what it sends is valid whatever claims and acks do in
 * between (they never touch what a record write sets), and another record
 * write in between fails its version check. sweep and purge walk their index
 * (finished_at / expired_at order) and convert one task per script call, so
 * no call holds the server for long and several replicas may sweep at once:
 * a task another replica converted first is simply not counted. The entry
 * in the record's context index is a key named by the stored context, which
 * the sweep does not have: it reads it first (HGET), and the script, which
 * checks it, answers with the stored one if it moved in between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decide.h"
#include "store/redis/redis_int.h"
#include "store/store_int.h"

static rd_store *rds(once_store *s)
{
    return (rd_store *)s;
}

/* KEYS of the scripts (redis_scripts.c). */
static const rd_task_key create_keys[] = {RD_K_H,    RD_K_EV,   RD_K_LEASES, RD_K_FINISHED,
                                          RD_K_LIST, RD_K_PUSH, RD_K_PUSHQ,  RD_K_CTX};
static const rd_task_key update_keys[] = {RD_K_H,     RD_K_EV,      RD_K_LEASES,
                                          RD_K_FINISHED, RD_K_LIST, RD_K_PUSH,
                                          RD_K_PUSHQ, RD_K_CHANGES, RD_K_CTX,
                                          RD_K_CTX_OLD};
static const rd_task_key entomb_keys[] = {RD_K_H,     RD_K_EV,   RD_K_LEASES, RD_K_FINISHED,
                                          RD_K_LIST,  RD_K_TOMBS, RD_K_PUSH,  RD_K_PUSHQ,
                                          RD_K_CTX};
static const rd_task_key purge_keys[] = {RD_K_H, RD_K_EV, RD_K_TOMBS};

/* A script that removes a context index entry answers {stored context}
 * when the caller named another one (redis_scripts.c): 1 and *ctx = it,
 * or 0 for any other reply. */
static int ctx_moved(const redisReply *r, char ctx[ONCE_ID_MAX + 1])
{
    return r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
           once__rd_fixed(r->element[0], ctx, ONCE_ID_MAX + 1) == 0;
}

/* How often a write follows ctx_moved before it gives up: a record's
 * context never changes under the engine, so a second move means a
 * writer outside once. */
#define RD_CTX_TRIES 3
#define NKEYS(a) ((int)(sizeof a / sizeof a[0]))

/* Index scores a record implies; "" = must not be in that index. */
static void index_scores(rd_cmd *c, const once_record *rec)
{
    int terminal = once_state_terminal(rec->state);

    if (!terminal && rec->lease_until > 0)
        once__rd_i64(c, rec->lease_until);
    else
        once__rd_arg(c, "", 0);
    if (terminal)
        once__rd_i64(c, rec->finished_at);
    else
        once__rd_arg(c, "", 0);
}

/* ------------------------------------------------------------------------ */

/* What every attempt of one update sends besides the push rows. */
typedef struct update_ctx {
    rd_task_keys *k;
    const char *member, *lmember, *fd;
    size_t mlen, lmlen;
    int64_t base;                  /* the stored generation the events continue, -1: none */
    rd_packed pk;                  /* the record's hash fields */
    char old_ctx[ONCE_ID_MAX + 1]; /* the stored context, as believed (k's
                                    * RD_K_CTX_OLD is its index) */
} update_ctx;

typedef struct write_arg {
    const rd_cmd *cmd;
    const once_record *rec;
    once_record *winner;
    once_tombstone *tomb;
    int64_t expect;
    const once_event *ev;
    size_t nev;
    int numbered;        /* update: the events continue rec->generation - nev */
    update_ctx *u;       /* update: the rest of its script call */
    rd_push_write *push; /* the rows rec->push_json leaves (NULL: drop them all) */
} write_arg;

/* Send cmd through the pipeline (redis_batch.c): ONCE_OK and *r, RD_ALONE
 * (the caller sends it alone), or an error. */
static int batched(rd_store *s, const rd_cmd *cmd, redisReply **r)
{
    rd_bop b;
    int rc;

    b.cmd = cmd;
    rc = once__rd_batch_write(s, &b);
    *r = b.reply;
    return rc;
}

/* What the create script's reply r says (r is freed). */
static int create_verdict(rd_store *s, write_arg *a, redisReply *r)
{
    int rc;

    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        rc = ONCE_OK;
    } else if (r->type == REDIS_REPLY_ARRAY) {
        rc = once__rd_parse_hash(r, a->winner, a->tomb);
        if (rc == ONCE_OK)
            rc = ONCE_EEXISTS;
        else if (rc == ONCE_ECORRUPT)
            once__store_seterr(&s->base, "redis: stored hash of %s/%s is malformed",
                               a->rec->principal, a->rec->task_id);
    } else {
        once__store_seterr(&s->base, "redis create: unexpected reply type %d", r->type);
        rc = ONCE_ESTORE;
    }
    freeReplyObject(r);
    return rc;
}

static void create_reset(write_arg *a)
{
    if (a->winner)
        once_record_clear(a->winner);
    if (a->tomb)
        memset(a->tomb, 0, sizeof *a->tomb);
}

static int create_fn(rd_store *s, rd_conn *c, void *arg)
{
    write_arg *a = arg;
    redisReply *r;
    int rc;

    create_reset(a);
    rc = once__rd_eval(s, c, RD_CREATE, a->cmd, 1, &r);
    return rc == ONCE_OK ? create_verdict(s, a, r) : rc;
}

/* A create's script call and what its arguments point into. */
typedef struct create_call {
    char member[RD_MEMBER_MAX], lmember[RD_LMEMBER_MAX], fd[ONCE_DIGEST_HEX + 1];
    rd_push_write *push;
    rd_packed pk;
    rd_task_keys k;
    rd_cmd cmd;
} create_call;

static void create_call_free(create_call *cc)
{
    once__rd_cmd_free(&cc->cmd);
    once__rd_task_keys_free(&cc->k);
    once__rd_push_write_free(cc->push);
    once__rd_packed_free(&cc->pk);
}

/* Build the create script call of rec and ev[0..nev) in cc (zeroed by the
 * caller); on failure nothing is left to free. */
static int create_call_build(rd_store *s, create_call *cc, const once_record *rec,
                             const once_event *ev, size_t nev)
{
    size_t mlen, lmlen, i;
    int rc;

    if (rec->push_json) { /* a new key: its rows start fresh */
        cc->push = once__rd_push_write_new();
        if (!cc->push)
            return ONCE_ENOMEM;
        rc = once__rd_push_prepare(cc->push, rec, NULL, 0);
        if (rc != ONCE_OK) {
            once__rd_push_write_free(cc->push);
            return rc;
        }
    }
    rc = once__rd_task_keys(s, rec->principal, rec->task_id, &cc->k);
    if (rc == ONCE_OK)
        rc = once__rd_task_keys_ctx(s, &cc->k, RD_K_CTX, rec->principal, rec->context_id);
    if (rc != ONCE_OK) {
        once__rd_task_keys_free(&cc->k);
        once__rd_push_write_free(cc->push);
        return rc;
    }
    mlen = once__rd_member(cc->member, rec->principal, rec->task_id);
    lmlen = once__rd_list_member(cc->lmember, rec->created_at, rec->task_id);
    once__digests_first(rec->digests, cc->fd);
    rc = once__rd_record_pack(&cc->pk, rec, cc->fd, cc->lmember, lmlen);
    if (rc != ONCE_OK) {
        once__rd_task_keys_free(&cc->k);
        once__rd_push_write_free(cc->push);
        return rc;
    }

    once__rd_cmd_init(&cc->cmd);
    once__rd_cmd_eval_keys(&cc->cmd, s, RD_CREATE, &cc->k, create_keys, NKEYS(create_keys));
    once__rd_arg(&cc->cmd, cc->member, mlen);
    once__rd_arg(&cc->cmd, cc->lmember, lmlen);
    index_scores(&cc->cmd, rec);
    once__rd_packed_args(&cc->cmd, &cc->pk);
    once__rd_push_section(&cc->cmd, cc->push);
    for (i = 0; i < nev; i++)
        once__rd_str(&cc->cmd, ev[i].payload);
    return ONCE_OK;
}

int once__rd_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                    once_record *winner, once_tombstone *tomb)
{
    redisReply *r;
    create_call cc;
    write_arg a;
    int rc;

    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    memset(&cc, 0, sizeof cc);
    rc = create_call_build(rds(s), &cc, rec, ev, nev);
    if (rc != ONCE_OK)
        return rc;
    memset(&a, 0, sizeof a);
    a.cmd = &cc.cmd;
    a.rec = rec;
    a.winner = winner;
    a.tomb = tomb;
    rc = batched(rds(s), &cc.cmd, &r);
    if (rc == ONCE_OK) {
        create_reset(&a);
        rc = create_verdict(rds(s), &a, r);
    } else if (rc == RD_ALONE) {
        rc = once__rd_run(rds(s), create_fn, &a);
    }
    create_call_free(&cc);
    return rc;
}

/* The create_start slot (once/store.h): its script through the
 * pipeline, told by landed. It never runs alone: a create whose script did
 * not run (NOSCRIPT) or found the key taken is ONCE_ECONFLICT, nothing
 * stored, and the caller decides again from what is stored; an error reply
 * or a connection lost with the reply unread is ONCE_ESTORE. */
typedef struct rd_async {
    once__batch_op op;
    rd_bop b;
    create_call cc;
    void (*done)(void *arg, int rc);
    void *arg;
} rd_async;

static void async_landed(once__batch_op *op)
{
    rd_async *a = (rd_async *)op;
    void (*done)(void *, int) = a->done;
    void *arg = a->arg;
    redisReply *r = a->b.reply;
    int rc = op->rc;

    if (rc == RD_ALONE) {
        rc = ONCE_ECONFLICT;
    } else if (rc == ONCE_OK) {
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
            rc = ONCE_OK;
        else if (r->type == REDIS_REPLY_ARRAY)
            rc = ONCE_ECONFLICT;
        else
            rc = ONCE_ESTORE;
    }
    if (r)
        freeReplyObject(r);
    create_call_free(&a->cc);
    once_free(a);
    done(arg, rc);
}

int once__rd_create_start(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                          void (*done)(void *arg, int rc), void *arg)
{
    rd_async *a;
    int rc;

    if (rds(s)->batch_leaders == 0)   /* once_store_create_start asked the caps first */
        return ONCE_EUNSUPPORTED;
    a = once_calloc(1, sizeof *a);
    if (!a)
        return ONCE_ENOMEM;
    rc = create_call_build(rds(s), &a->cc, rec, ev, nev);
    if (rc != ONCE_OK) {
        once_free(a);
        return rc;
    }
    a->b.cmd = &a->cc.cmd;
    a->op.arg = &a->b;
    a->op.landed = async_landed;
    a->done = done;
    a->arg = arg;
    rc = once__batch_submit_async(&rds(s)->batch, &a->op);
    if (rc != ONCE_OK) {
        create_call_free(&a->cc);
        once_free(a);
    }
    return rc;
}

/* The update script call for a->rec. */
static void build_update(rd_cmd *cmd, rd_store *s, const write_arg *a, const update_ctx *u)
{
    const once_record *rec = a->rec;
    size_t i;

    once__rd_cmd_eval_keys(cmd, s, RD_UPDATE, u->k, update_keys, NKEYS(update_keys));
    once__rd_arg(cmd, u->member, u->mlen);
    once__rd_arg(cmd, u->lmember, u->lmlen);
    index_scores(cmd, rec);
    once__rd_i64(cmd, a->expect);
    once__rd_i64(cmd, a->numbered ? u->base : -1);
    once__rd_str(cmd, u->old_ctx);
    once__rd_packed_args(cmd, &u->pk);
    once__rd_push_section(cmd, a->push);
    for (i = 0; a->numbered && i < a->nev; i++)
        once__rd_str(cmd, a->ev[i].payload);
}

static int update_verdict(rd_store *s, write_arg *a, redisReply *r);

static int update_fn(rd_store *s, rd_conn *c, void *arg)
{
    write_arg *a = arg;
    redisReply *r;
    rd_cmd cmd;
    int rc;

    if (a->push) {
        once_push_row old[ONCE_PUSH_CONFIGS_MAX];
        size_t nold;
        rc = once__rd_push_read(s, c, a->rec->principal, a->rec->task_id, old, &nold);
        if (rc == ONCE_OK)
            rc = once__rd_push_prepare(a->push, a->rec, old, nold);
        if (rc != ONCE_OK)
            return rc;
    }
    for (int tries = 0; tries < RD_CTX_TRIES; tries++) {
        once__rd_cmd_init(&cmd);
        build_update(&cmd, s, a, a->u);
        rc = once__rd_eval(s, c, RD_UPDATE, &cmd, 1, &r);
        once__rd_cmd_free(&cmd);
        if (rc != ONCE_OK)
            return rc;
        rc = update_verdict(s, a, r);
        if (rc != RD_ALONE)
            return rc;
    }
    once__store_seterr(&s->base, "update of %s: its stored context keeps changing",
                       a->rec->task_id);
    return ONCE_ESTORE;
}

/* What the update script's reply r says (r is freed): RD_ALONE when the
 * stored context was not the one named, now a->u->old_ctx and its index
 * (send it again). */
static int update_verdict(rd_store *s, write_arg *a, redisReply *r)
{
    update_ctx *u = a->u;
    int64_t gen;
    char buf[24];
    int rc;

    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
        rc = ONCE_OK;
    } else if (ctx_moved(r, u->old_ctx)) {
        rc = once__rd_task_keys_ctx(s, u->k, RD_K_CTX_OLD, a->rec->principal, u->old_ctx);
        if (rc == ONCE_OK)
            rc = RD_ALONE;
    } else if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        once__store_seterr(&s->base, "update of %s: no record, or version moved", a->rec->task_id);
        rc = ONCE_ECONFLICT;
    } else if (r->type == REDIS_REPLY_STRING && r->len < sizeof buf) {
        /* The version matched but the events do not continue the stored
         * generation: bad arguments, nothing written. */
        memcpy(buf, r->str, r->len);
        buf[r->len] = '\0';
        gen = strtoll(buf, NULL, 10);
        rc = once__store_valid_events(&s->base, gen, a->rec, a->ev, a->nev);
        if (rc == ONCE_OK) {
            once__store_seterr(&s->base, "update of %s: generation check disagrees",
                               a->rec->task_id);
            rc = ONCE_ESTORE;
        }
    } else {
        once__store_seterr(&s->base,
                           "redis update of %s: unexpected reply (stored record "
                           "malformed?)",
                           a->rec->task_id);
        rc = ONCE_ECORRUPT;
    }
    freeReplyObject(r);
    return rc;
}

int once__rd_update(once_store *s, const once_record *rec, int64_t expect_version,
                    const once_event *ev, size_t nev)
{
    char member[RD_MEMBER_MAX], lmember[RD_LMEMBER_MAX], fd[ONCE_DIGEST_HEX + 1];
    update_ctx u;
    rd_task_keys k;
    write_arg a;
    int rc = ONCE_OK;
    memset(&a, 0, sizeof a);
    memset(&u, 0, sizeof u);
    /* The one stored generation these events could continue; when they
     * continue none, send -1 (matches nothing) and no events, so the script
     * still answers "version moved" first (store_int.h's order). */
    u.base = rec->generation - (int64_t)nev;
    a.numbered = u.base >= 0 && once__store_valid_events(s, u.base, rec, ev, nev) == ONCE_OK;
    if (rec->push_json && !(a.push = once__rd_push_write_new()))
        return ONCE_ENOMEM;
    /* The context a record is created with is the one every update sends,
     * so the stored one is believed to be it (the script says otherwise). */
    rc = once__rd_task_keys(rds(s), rec->principal, rec->task_id, &k);
    if (rc == ONCE_OK)
        rc = once__rd_task_keys_ctx(rds(s), &k, RD_K_CTX, rec->principal, rec->context_id);
    if (rc == ONCE_OK)
        rc = once__rd_task_keys_ctx(rds(s), &k, RD_K_CTX_OLD, rec->principal, rec->context_id);
    if (rc != ONCE_OK) {
        once__rd_task_keys_free(&k);
        once__rd_push_write_free(a.push);
        return rc;
    }
    snprintf(u.old_ctx, sizeof u.old_ctx, "%s", rec->context_id);
    u.k = &k;
    u.mlen = once__rd_member(member, rec->principal, rec->task_id);
    u.lmlen = once__rd_list_member(lmember, rec->created_at, rec->task_id);
    once__digests_first(rec->digests, fd);
    u.member = member;
    u.lmember = lmember;
    u.fd = fd;
    rc = once__rd_record_pack(&u.pk, rec, fd, lmember, u.lmlen);
    if (rc != ONCE_OK) {
        once__rd_task_keys_free(&k);
        once__rd_push_write_free(a.push);
        return rc;
    }

    a.u = &u;
    a.rec = rec;
    a.expect = expect_version;
    a.ev = ev;
    a.nev = nev;
    rc = RD_ALONE;
    if (!a.push) { /* one with delivery rows reads them first: alone */
        rd_cmd cmd;
        redisReply *r;
        once__rd_cmd_init(&cmd);
        build_update(&cmd, rds(s), &a, &u);
        rc = batched(rds(s), &cmd, &r);
        once__rd_cmd_free(&cmd);
        if (rc == ONCE_OK)
            rc = update_verdict(rds(s), &a, r);
    }
    if (rc == RD_ALONE)
        rc = once__rd_run(rds(s), update_fn, &a);
    once__rd_task_keys_free(&k);
    once__rd_push_write_free(a.push);
    once__rd_packed_free(&u.pk);
    return rc;
}

/* ------------------------------------------------------------------------
 * renew: one script over the record hash and the leases index. It sends
 * no write flag: running it twice leaves what running it once does, so a
 * renewal whose reply was lost is retried like a read.
 */

typedef struct renew_arg {
    const rd_cmd *cmd;
    const char *task_id;
} renew_arg;

static int renew_fn(rd_store *s, rd_conn *c, void *arg)
{
    renew_arg *a = arg;
    redisReply *r;
    int rc = once__rd_eval(s, c, RD_RENEW, a->cmd, 0, &r);

    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < -1 || r->integer > 1) {
        once__store_seterr(&s->base, "redis renew of %s: unexpected reply type %d", a->task_id,
                           r->type);
        rc = ONCE_ESTORE;
    } else {
        rc = once__store_renew_result(&s->base, a->task_id, r->integer == 1, r->integer == 0);
    }
    freeReplyObject(r);
    return rc;
}

/* Arguments were checked by once_store_renew. */
int once__rd_renew(once_store *s, const char *principal, const char *task_id, const char *owner,
                   int64_t fence, int64_t until)
{
    char member[RD_MEMBER_MAX];
    char *h = once__rd_key_task(rds(s), principal, task_id);
    char *leases = once__rd_key_global(rds(s), "leases");
    renew_arg a = {NULL, task_id};
    rd_cmd cmd;
    int rc = ONCE_ENOMEM;

    if (h && leases) {
        once__rd_cmd_init(&cmd);
        once__rd_cmd_evalsha(&cmd, rds(s), RD_RENEW, 2);
        once__rd_str(&cmd, h);
        once__rd_str(&cmd, leases);
        once__rd_arg(&cmd, member, once__rd_member(member, principal, task_id));
        once__rd_str(&cmd, owner);
        once__rd_i64(&cmd, fence);
        once__rd_i64(&cmd, until);
        a.cmd = &cmd;
        rc = once__rd_run(rds(s), renew_fn, &a);
        once__rd_cmd_free(&cmd);
    }
    once_free(h);
    once_free(leases);
    return rc;
}

/* ------------------------------------------------------------------------
 * sweep and purge: range over an index, one script per member.
 */

#define RD_SCAN_BATCH 256
#define RD_MAX_ROUNDS 1024

typedef struct reap_arg {
    int purge; /* 0 sweep (finished -> tombs), 1 purge (tombs -> gone) */
    int64_t before, now;
    size_t max;
    size_t *n; /* accumulates across retries: conversions are not undone */
} reap_arg;

/* Entomb (a sweep) or purge the member m's task; *done if it did. */
static int reap_script(rd_store *s, rd_conn *c, const reap_arg *a, const once_key *key,
                       const char *m, size_t mlen, int *done)
{
    char ctx[ONCE_ID_MAX + 1] = "";
    rd_task_keys k;
    redisReply *r = NULL;
    rd_cmd cmd;
    int rc, tries;

    rc = once__rd_task_keys(s, key->principal, key->task_id, &k);
    if (rc == ONCE_OK && !a->purge)
        rc = once__rd_stored_ctx(s, c, k.v[RD_K_H], ctx);
    for (tries = 0; rc == ONCE_OK && tries < RD_CTX_TRIES; tries++) {
        if (r)
            freeReplyObject(r);
        r = NULL;
        if (!a->purge && (rc = once__rd_task_keys_ctx(s, &k, RD_K_CTX, key->principal, ctx)))
            break;
        once__rd_cmd_init(&cmd);
        if (a->purge) {
            once__rd_cmd_eval_keys(&cmd, s, RD_PURGE, &k, purge_keys, NKEYS(purge_keys));
            once__rd_arg(&cmd, m, mlen);
            once__rd_i64(&cmd, a->before);
        } else {
            once__rd_cmd_eval_keys(&cmd, s, RD_ENTOMB, &k, entomb_keys, NKEYS(entomb_keys));
            once__rd_arg(&cmd, m, mlen);
            once__rd_i64(&cmd, a->before);
            once__rd_i64(&cmd, a->now);
            once__rd_i64(&cmd, s->tomb_ttl_ms);
            once__rd_str(&cmd, ctx);
        }
        rc = once__rd_eval(s, c, a->purge ? RD_PURGE : RD_ENTOMB, &cmd, 1, &r);
        once__rd_cmd_free(&cmd);
        if (rc != ONCE_OK || !ctx_moved(r, ctx))
            break;
    }
    once__rd_task_keys_free(&k);
    if (rc == ONCE_OK && tries == RD_CTX_TRIES) {
        once__store_seterr(&s->base, "sweep of %s: its stored context keeps changing",
                           key->task_id);
        rc = ONCE_ESTORE;
    }
    if (rc == ONCE_OK)
        *done = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r)
        freeReplyObject(r);
    return rc;
}

static int reap_one(rd_store *s, rd_conn *c, const reap_arg *a, const char *m, size_t mlen,
                    int *done)
{
    once_key key;

    *done = 0;
    if (once__rd_member_key(m, mlen, &key) != ONCE_OK) {
        once__store_seterr(&s->base, "redis: malformed index member");
        return ONCE_ECORRUPT;
    }
    return reap_script(s, c, a, &key, m, mlen, done);
}

/* One member of the walk: converted (or removed/re-scored by its script). */
static int reap_member(rd_store *s, rd_conn *c, const redisReply *m, void *arg)
{
    reap_arg *a = arg;
    int done = 0, rc;

    if (m->type != REDIS_REPLY_STRING)
        return ONCE_ECORRUPT;
    rc = reap_one(s, c, a, m->str, m->len, &done);
    *a->n += (size_t)done;
    return rc;
}

static int reap_fn(rd_store *s, rd_conn *c, void *arg)
{
    reap_arg *a = arg;
    char *index = once__rd_key_global(s, a->purge ? "tombs" : "finished");

    if (!index)
        return ONCE_ENOMEM;
    const rd_walk w = {.index = index, .max = a->before, .below = 1, .batch = RD_SCAN_BATCH,
                       .rounds = RD_MAX_ROUNDS, .done = a->n, .want = a->max,
                       .fn = reap_member, .arg = a};
    int rc = once__rd_walk_due(s, c, &w);
    once_free(index);
    return rc;
}

int once__rd_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    reap_arg a = {0, finished_before, now, max, n};

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    return once__rd_run(rds(s), reap_fn, &a);
}

int once__rd_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    reap_arg a = {1, expired_before, 0, max, n};

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    return once__rd_run(rds(s), reap_fn, &a);
}

/* ------------------------------------------------------------------------
 * meta: HSETNX then HGET. Values never change once set, so whichever
 * process's HSETNX won, every HGET after it reads the same value.
 */

typedef struct meta_arg {
    const char *name, *init;
    char **out;
} meta_arg;

static int meta_fn(rd_store *s, rd_conn *c, void *arg)
{
    meta_arg *a = arg;
    char *key = once__rd_key_global(s, "meta");
    redisReply *r;
    rd_cmd cmd;
    int rc = ONCE_OK;

    once_free(*a->out);
    *a->out = NULL;
    if (!key)
        return ONCE_ENOMEM;
    if (a->init) {
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "HSETNX");
        once__rd_str(&cmd, key);
        once__rd_str(&cmd, a->name);
        once__rd_str(&cmd, a->init);
        rc = once__rd_call_done(s, c, &cmd, 1);
    }
    if (rc == ONCE_OK) {
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "HGET");
        once__rd_str(&cmd, key);
        once__rd_str(&cmd, a->name);
        rc = once__rd_call(s, c, &cmd, 0, &r);
        once__rd_cmd_free(&cmd);
        if (rc == ONCE_OK) {
            if (r->type == REDIS_REPLY_STRING && !memchr(r->str, '\0', r->len))
                rc = (*a->out = once_strndup(r->str, r->len)) ? ONCE_OK : ONCE_ENOMEM;
            else
                rc = r->type == REDIS_REPLY_NIL ? ONCE_ENOTFOUND : ONCE_ECORRUPT;
            freeReplyObject(r);
        }
    }
    once_free(key);
    return rc;
}

int once__rd_meta(once_store *s, const char *name, const char *init_value, char **out)
{
    meta_arg a = {name, init_value, out};

    *out = NULL;
    return once__rd_run(rds(s), meta_fn, &a);
}
