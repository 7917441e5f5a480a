/*
 * redis_check.c -- the Redis backend's integrity check, and the test-only
 * reset.
 *
 * check walks every task key under the prefix with SCAN and reads each
 * task with one script (record or tombstone, its event count and its index
 * entries, atomically). Besides what every backend counts, it verifies the
 * indexes the scans rely on: a record missing from (or mis-scored in) the
 * lease, finished, list or context index would silently never be taken
 * over, swept or listed, so it counts as bad_state. Delivery rows must match the
 * record's push_json and sit in the due index exactly when they may become
 * due (redis_push.c), else bad_push; a push hash without a live record is
 * bad_push too. Stale index entries pointing at nothing are harmless
 * (every consumer re-checks the key) and not counted.
 * SCAN may report a key twice or miss one written meanwhile: run check on a
 * quiet store, as the tests do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

#define RD_SCAN_COUNT "500"

int once__rd_parse_task_key(const rd_store *s, const char *k, size_t n, once_key *out, int *kind)
{
    size_t pl = strlen(s->prefix), plen = 0, i, rest;
    const char *tag, *p;

    memset(out, 0, sizeof *out);
    if (n < pl + 3 || memcmp(k, s->prefix, pl) != 0 || k[pl] != ':' || k[pl + 1] != '{')
        return -1;
    tag = k + pl + 2;
    rest = n - pl - 2;
    if (rest >= 4 && memcmp(tag + rest - 4, "}:ev", 4) == 0) {
        *kind = RD_TK_EVENTS;
        rest -= 4;
    } else if (rest >= 6 && memcmp(tag + rest - 6, "}:push", 6) == 0) {
        *kind = RD_TK_PUSH;
        rest -= 6;
    } else if (rest >= 1 && tag[rest - 1] == '}') {
        *kind = RD_TK_TASK;
        rest -= 1;
    } else {
        return -1;
    }
    for (i = 0; i < rest && tag[i] >= '0' && tag[i] <= '9' && i < 4; i++)
        plen = plen * 10 + (size_t)(tag[i] - '0');
    if (i == 0 || i >= rest || tag[i] != ':' || plen == 0 || plen > ONCE_PRINCIPAL_MAX)
        return -1;
    p = tag + i + 1;
    if ((size_t)(p - tag) + plen + 1 >= rest || p[plen] != ':')
        return -1;
    memcpy(out->principal, p, plen);
    rest -= (size_t)(p - tag) + plen + 1;
    if (rest == 0 || rest > ONCE_ID_MAX)
        return -1;
    memcpy(out->task_id, p + plen + 1, rest);
    if (strlen(out->principal) != plen || strlen(out->task_id) != rest)
        return -1;
    return 0;
}

/* 1 if a ZSCORE reply (string, "" when absent) says "present with this
 * score" / "absent" as wanted. Scores are doubles: exact below 2^53 ms. */
static int score_is(const redisReply *r, int want_present, int64_t want)
{
    char buf[64];

    if (r->type != REDIS_REPLY_STRING)
        return 0;
    if (!want_present)
        return r->len == 0;
    if (r->len == 0 || r->len >= sizeof buf)
        return 0;
    memcpy(buf, r->str, r->len);
    buf[r->len] = '\0';
    return strtod(buf, NULL) == (double)want;
}

static void index_problem(once_check_report *rep, const once_key *k, const char *which)
{
    rep->bad_state++;
    once__check_problem(rep, "%s/%s: %s index out of step", k->principal, k->task_id, which);
}

static int check_task(rd_store *s, rd_conn *c, const once_key *k, once_check_report *rep)
{
    static const rd_task_key which[] = {RD_K_H,     RD_K_EV,    RD_K_LEASES, RD_K_FINISHED,
                                        RD_K_LIST,  RD_K_TOMBS, RD_K_PUSH,   RD_K_PUSHQ,
                                        RD_K_CTX};
    char member[RD_MEMBER_MAX], ctx[ONCE_ID_MAX + 1];
    rd_task_keys keys;
    redisReply *r;
    once_record rec;
    once_tombstone t;
    rd_cmd cmd;
    size_t mlen, nev;
    int rc;

    rc = once__rd_task_keys(s, k->principal, k->task_id, &keys);
    /* A malformed context is the hash's problem, which the check counts. */
    if (rc == ONCE_OK && (rc = once__rd_stored_ctx(s, c, keys.v[RD_K_H], ctx)) == ONCE_ECORRUPT)
        rc = ONCE_OK;
    if (rc == ONCE_OK)
        rc = once__rd_task_keys_ctx(s, &keys, RD_K_CTX, k->principal, ctx);
    if (rc != ONCE_OK) {
        once__rd_task_keys_free(&keys);
        return rc;
    }
    mlen = once__rd_member(member, k->principal, k->task_id);
    once__rd_cmd_init(&cmd);
    once__rd_cmd_eval_keys(&cmd, s, RD_CHECKKEY, &keys, which, (int)(sizeof which / sizeof which[0]));
    once__rd_arg(&cmd, member, mlen);
    rc = once__rd_eval(s, c, RD_CHECKKEY, &cmd, 0, &r);
    once__rd_cmd_free(&cmd);
    once__rd_task_keys_free(&keys);
    if (rc != ONCE_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 9 ||
        r->element[0]->type != REDIS_REPLY_ARRAY || r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[4]->type != REDIS_REPLY_INTEGER || r->element[6]->type != REDIS_REPLY_ARRAY ||
        r->element[8]->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        once__store_seterr(&s->base, "redis check: unexpected script reply");
        return ONCE_ESTORE;
    }
    if (r->element[0]->elements == 0) { /* deleted since SCAN saw it */
        freeReplyObject(r);
        return ONCE_OK;
    }
    nev = (size_t)r->element[1]->integer;
    rc = once__rd_parse_hash(r->element[0], &rec, &t);
    if (rc == ONCE_OK) {
        int terminal = once_state_terminal(rec.state);
        once__check_record(rep, &rec, nev, (int64_t)nev, 1);
        if (!score_is(r->element[2], !terminal && rec.lease_until > 0, rec.lease_until))
            index_problem(rep, k, "lease");
        if (!score_is(r->element[3], terminal, rec.finished_at))
            index_problem(rep, k, "finished");
        if (r->element[4]->integer != 1)
            index_problem(rep, k, "list");
        if (r->element[8]->integer != 1)
            index_problem(rep, k, "context");
        if (!score_is(r->element[5], 0, 0))
            index_problem(rep, k, "tombstone");
        once__rd_check_push(rep, k, &rec, r->element[6], r->element[7]);
        once_record_clear(&rec);
        rc = ONCE_OK;
    } else if (rc == ONCE_ETOMBSTONE) {
        once__check_tombstone(rep, &t, nev);
        if (!score_is(r->element[5], 1, t.expired_at))
            index_problem(rep, k, "tombstone");
        if (!score_is(r->element[2], 0, 0) || !score_is(r->element[3], 0, 0) ||
            r->element[4]->integer != 0)
            index_problem(rep, k, "live-record");
        once__rd_check_push(rep, k, NULL, r->element[6], r->element[7]);
        rc = ONCE_OK;
    } else if (rc == ONCE_ECORRUPT) {
        rep->bad_state++;
        once__check_problem(rep, "%s/%s: hash is neither a record nor a tombstone", k->principal,
                            k->task_id);
        rc = ONCE_OK;
    }
    freeReplyObject(r);
    return rc;
}

/* A push hash whose task hash is absent: rows nobody will clean up (a
 * present hash has its rows checked in check_task). */
static int check_push_orphan(rd_store *s, rd_conn *c, const once_key *k, once_check_report *rep)
{
    char *h = once__rd_key_task(s, k->principal, k->task_id);
    redisReply *r;
    int rc = once__rd_call_key(s, c, "EXISTS", h, &r);

    once_free(h);
    if (rc != ONCE_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0) {
        rep->bad_push++;
        once__check_problem(rep, "%s/%s: delivery rows without a record", k->principal,
                            k->task_id);
    }
    freeReplyObject(r);
    return ONCE_OK;
}

/* An event list: counted as orphans when its task hash is absent (a
 * present hash counts its own events in check_task). */
static int check_events(rd_store *s, rd_conn *c, const once_key *k, once_check_report *rep)
{
    char *h = once__rd_key_task(s, k->principal, k->task_id);
    char *ev = once__rd_key_events(s, k->principal, k->task_id);
    redisReply *r1 = NULL, *r2 = NULL;
    rd_cmd a, b;
    int rc;

    once__rd_cmd_init(&a);
    once__rd_cmd_init(&b);
    if (!h || !ev) {
        a.oom = 1;
    } else {
        once__rd_str(&a, "EXISTS");
        once__rd_str(&a, h);
        once__rd_str(&b, "LLEN");
        once__rd_str(&b, ev);
    }
    rc = once__rd_call(s, c, &a, 0, &r1);
    if (rc == ONCE_OK)
        rc = once__rd_call(s, c, &b, 0, &r2);
    if (rc == ONCE_OK && r1->type == REDIS_REPLY_INTEGER && r1->integer == 0 &&
        r2->type == REDIS_REPLY_INTEGER && r2->integer > 0)
        once__check_orphans(rep, k->principal, k->task_id, (size_t)r2->integer);
    if (r1)
        freeReplyObject(r1);
    if (r2)
        freeReplyObject(r2);
    once__rd_cmd_free(&a);
    once__rd_cmd_free(&b);
    once_free(h);
    once_free(ev);
    return rc;
}

int once__rd_scan(rd_store *s, rd_conn *c, const char *pattern, const char *count, rd_keys_fn fn,
                  void *arg)
{
    char cursor[32] = "0";
    int rc = ONCE_OK;

    do {
        redisReply *r;
        rd_cmd cmd;

        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "SCAN");
        once__rd_str(&cmd, cursor);
        once__rd_str(&cmd, "MATCH");
        once__rd_str(&cmd, pattern);
        once__rd_str(&cmd, "COUNT");
        once__rd_str(&cmd, count);
        rc = once__rd_call(s, c, &cmd, 0, &r);
        once__rd_cmd_free(&cmd);
        if (rc != ONCE_OK)
            return rc;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof cursor ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            once__store_seterr(&s->base, "redis SCAN: unexpected reply");
            return ONCE_ESTORE;
        }
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
        rc = fn(s, c, r->element[1], arg);
        freeReplyObject(r);
    } while (rc == ONCE_OK && strcmp(cursor, "0") != 0);
    return rc;
}

static int check_key(rd_store *s, rd_conn *c, const redisReply *key, void *arg)
{
    once_key k;
    int kind;

    if (key->type != REDIS_REPLY_STRING ||
        once__rd_parse_task_key(s, key->str, key->len, &k, &kind) != 0)
        return ONCE_OK; /* not a task key */
    if (kind == RD_TK_EVENTS)
        return check_events(s, c, &k, arg);
    return kind == RD_TK_PUSH ? check_push_orphan(s, c, &k, arg) : check_task(s, c, &k, arg);
}

static int check_keys(rd_store *s, rd_conn *c, const redisReply *keys, void *arg)
{
    int rc = ONCE_OK;

    for (size_t i = 0; rc == ONCE_OK && i < keys->elements; i++)
        rc = check_key(s, c, keys->element[i], arg);
    return rc;
}

static int check_fn(rd_store *s, rd_conn *c, void *arg)
{
    once_check_report *rep = arg;
    char pattern[RD_PREFIX_MAX + 8];

    memset(rep, 0, sizeof *rep);
    snprintf(pattern, sizeof pattern, "%s:{*", s->prefix);
    return once__rd_scan(s, c, pattern, RD_SCAN_COUNT, check_keys, rep);
}

int once__rd_check(once_store *s, once_check_report *rep)
{
    return once__rd_run((rd_store *)s, check_fn, rep);
}

/* UNLINK one SCAN round's keys in one command. */
static int unlink_keys(rd_store *s, rd_conn *c, const redisReply *keys, void *arg)
{
    rd_cmd cmd;
    size_t i;

    (void)arg;
    if (keys->elements == 0)
        return ONCE_OK;
    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "UNLINK");
    for (i = 0; i < keys->elements; i++)
        if (keys->element[i]->type == REDIS_REPLY_STRING)
            once__rd_arg(&cmd, keys->element[i]->str, keys->element[i]->len);
    return once__rd_call_done(s, c, &cmd, 1);
}

int once__rd_reset(rd_store *s, rd_conn *c)
{
    char pattern[RD_PREFIX_MAX + 4];

    snprintf(pattern, sizeof pattern, "%s:*", s->prefix);
    return once__rd_scan(s, c, pattern, "1000", unlink_keys, NULL);
}
