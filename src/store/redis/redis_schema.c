/*
 * redis_schema.c -- the schema version of a Redis store: the string key
 * P:schema (P = prefix) holds the version of the key layout redis.c
 * describes (RD_SCHEMA_VERSION). Every open reads it and asks
 * once__schema_gate (store/migrate.c) what to do: a store marked by a newer
 * once is refused, a probe writes nothing, and under --no-migrate a store
 * without the marker (new, or written before markers existed: its layout
 * is version 1) is refused until `onced migrate` marks it.
 *
 * The marker is raised by a script that never lowers it (RD_MARK), then
 * read back: of several first opens all read the same value. A layout
 * change runs its step before the marker moves, so a marker never names a
 * layout the keys do not have yet:
 *   1  the layout before context indexes (and the one a store without a
 *      marker has)
 *   2  adds P:c:<len>:<principal>:<context_id>, each record's list member
 *      in its context's index. The step SCANs the record hashes in
 *      batches and indexes each with RD_CTX_ADD, which re-checks the hash
 *      as read, so a record entombed meanwhile is not indexed again.
 *      ZADD is idempotent: a step cut short is run again from the start by
 *      the next open, the marker still at 1 (or absent).
 *   3  packs a record into three hash fields, "h", "r" and "u"
 *      (redis_keys.c), instead of one field per value: a create sends
 *      Redis 3 values instead of 18 pairs, which is most of the Redis CPU
 *      per task it saves (issue #35). The step SCANs the task hashes and
 *      repacks each with RD_REPACK, one script per hash, so a record is
 *      either as it was or packed, never half; the script skips tombstones
 *      (their layout is unchanged) and hashes already packed, so a step cut
 *      short is run again by the next open. The reader takes both layouts,
 *      so a record the step left (one missing a field) still reads, or
 *      fails the check, as before. The steps run in version order: the
 *      version 2 step reads the fields of layout 1.
 */
#include <stdio.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

/* The marker's version; 0 when absent. A value that is not a version is
 * ONCE_ECORRUPT: something other than once wrote the key. */
static int read_marker(rd_store *s, rd_conn *c, const char *key, int *v)
{
    redisReply *r;
    int64_t n = 0;
    int rc = once__rd_call_key(s, c, "GET", key, &r);

    *v = 0;
    if (rc != ONCE_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING) {
        if (once__rd_num(r, &n) != 0 || n < 1 || n > 1000000) {
            once__store_seterr(&s->base, "redis: key %s holds \"%.*s\", not a schema version",
                               key, r->len > 32 ? 32 : (int)r->len, r->str);
            rc = ONCE_ECORRUPT;
        }
        *v = (int)n;
    } else if (r->type != REDIS_REPLY_NIL) {
        once__store_seterr(&s->base, "redis: key %s is not a string", key);
        rc = ONCE_ECORRUPT;
    }
    freeReplyObject(r);
    return rc;
}

static int write_marker(rd_store *s, rd_conn *c, const char *key)
{
    redisReply *r;
    rd_cmd cmd;
    int rc;

    once__rd_cmd_init(&cmd);
    once__rd_cmd_evalsha(&cmd, s, RD_MARK, 1);
    once__rd_str(&cmd, key);
    once__rd_i64(&cmd, RD_SCHEMA_VERSION);
    rc = once__rd_eval(s, c, RD_MARK, &cmd, 1, &r);
    once__rd_cmd_free(&cmd);
    if (rc == ONCE_OK)
        freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------------------
 * Version 2: the context indexes of the records stored.
 */

/* Read every reply of n pipelined calls into v[0..n) (NULL past a
 * failure); the first failure is returned and the connection marked out of
 * step if replies were left unread. */
static int replies(rd_store *s, rd_conn *c, redisReply **v, size_t n)
{
    int rc = ONCE_OK;
    size_t i;

    for (i = 0; i < n; i++) {
        v[i] = NULL;
        if (rc == ONCE_OK)
            rc = once__rd_reply(s, c, &v[i]);
        else
            c->item.broken = 1;
    }
    return rc;
}

/* A step's scripts answer integers: ONCE_OK, or ONCE_ESTORE naming the
 * step when one of v[0..n) is anything else. */
static int all_integers(rd_store *s, redisReply **v, size_t n, const char *step)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i]->type != REDIS_REPLY_INTEGER) {
            once__store_seterr(&s->base, "redis: the %s step: unexpected reply", step);
            return ONCE_ESTORE;
        }
    }
    return ONCE_OK;
}

static void free_replies(redisReply **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i])
            freeReplyObject(v[i]);
}

/* Index task hash key k (one of a SCAN round's) in its context: h is the
 * HMGET of its T, c and lm. Queues one RD_CTX_ADD on c (*queued += 1), or
 * nothing for a tombstone or a hash that is gone. */
static int ctx_add(rd_store *s, rd_conn *c, const redisReply *k, const redisReply *h,
                   size_t *queued)
{
    char ctx[ONCE_ID_MAX + 1];
    once_key key;
    char *zkey;
    rd_cmd cmd;
    int kind, rc;

    if (once__rd_parse_task_key(s, k->str, k->len, &key, &kind) != 0 || kind != RD_TK_TASK)
        return ONCE_OK;
    if (h->type != REDIS_REPLY_ARRAY || h->elements != 3)
        return ONCE_ECORRUPT;
    if (h->element[0]->type != REDIS_REPLY_NIL || h->element[2]->type != REDIS_REPLY_STRING)
        return ONCE_OK; /* a tombstone, or gone */
    if (once__rd_fixed(h->element[1], ctx, sizeof ctx) != 0)
        return ONCE_OK; /* not a record: the check reports it; the store still opens */
    if (!(zkey = once__rd_key_ctx(s, key.principal, ctx)))
        return ONCE_ENOMEM;
    once__rd_cmd_init(&cmd);
    once__rd_cmd_evalsha(&cmd, s, RD_CTX_ADD, 2);
    once__rd_arg(&cmd, k->str, k->len);
    once__rd_str(&cmd, zkey);
    once__rd_str(&cmd, ctx);
    once__rd_arg(&cmd, h->element[2]->str, h->element[2]->len);
    rc = once__rd_append(s, c, &cmd);
    once__rd_cmd_free(&cmd);
    once_free(zkey);
    *queued += rc == ONCE_OK;
    return rc;
}

/* One SCAN round of record hashes: their T, c and lm in one pipeline,
 * then one RD_CTX_ADD each in another. */
static int index_round(rd_store *s, rd_conn *c, const redisReply *keys, void *arg)
{
    size_t n = keys->elements, i, sent = 0, queued = 0;
    redisReply **h, **added;
    int rc = ONCE_OK;

    (void)arg;
    if (n == 0)
        return ONCE_OK;
    h = once_calloc(2 * n, sizeof *h);
    if (!h)
        return ONCE_ENOMEM;
    added = h + n;
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        rd_cmd cmd;
        if (keys->element[i]->type != REDIS_REPLY_STRING) {
            rc = ONCE_ECORRUPT;
            break;
        }
        once__rd_cmd_init(&cmd);
        once__rd_str(&cmd, "HMGET");
        once__rd_arg(&cmd, keys->element[i]->str, keys->element[i]->len);
        once__rd_str(&cmd, "T");
        once__rd_str(&cmd, "c");
        once__rd_str(&cmd, "lm");
        rc = once__rd_append(s, c, &cmd);
        once__rd_cmd_free(&cmd);
        sent += rc == ONCE_OK;
    }
    if (rc == ONCE_OK)
        rc = replies(s, c, h, n);
    else if (sent)
        c->item.broken = 1; /* HMGETs queued, replies unread */
    for (i = 0; rc == ONCE_OK && i < n; i++)
        rc = ctx_add(s, c, keys->element[i], h[i], &queued);
    if (rc == ONCE_OK)
        rc = replies(s, c, added, queued);
    else if (queued)
        c->item.broken = 1; /* scripts queued, replies unread */
    if (rc == ONCE_OK)
        rc = all_integers(s, added, queued, "context index");
    free_replies(h, n + queued);
    once_free(h);
    return rc;
}

/* Run fn over every SCAN round of the prefix's task keys (a step). */
static int scan_tasks(rd_store *s, rd_conn *c, rd_keys_fn fn)
{
    char pattern[RD_PREFIX_MAX + 8];

    snprintf(pattern, sizeof pattern, "%s:{*}", s->prefix);
    return once__rd_scan(s, c, pattern, "1000", fn, NULL);
}

/* ------------------------------------------------------------------------
 * Version 3: every record hash repacked.
 */

/* One SCAN round: RD_REPACK for each task hash in one pipeline. */
static int repack_round(rd_store *s, rd_conn *c, const redisReply *keys, void *arg)
{
    size_t n = keys->elements, i, queued = 0;
    redisReply **v;
    int rc = ONCE_OK;

    (void)arg;
    if (n == 0)
        return ONCE_OK;
    if (!(v = once_calloc(n, sizeof *v)))
        return ONCE_ENOMEM;
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        const redisReply *k = keys->element[i];
        once_key key;
        rd_cmd cmd;
        int kind;
        if (k->type != REDIS_REPLY_STRING) {
            rc = ONCE_ECORRUPT;
            break;
        }
        if (once__rd_parse_task_key(s, k->str, k->len, &key, &kind) != 0 || kind != RD_TK_TASK)
            continue;
        once__rd_cmd_init(&cmd);
        once__rd_cmd_evalsha(&cmd, s, RD_REPACK, 1);
        once__rd_arg(&cmd, k->str, k->len);
        rc = once__rd_append(s, c, &cmd);
        once__rd_cmd_free(&cmd);
        queued += rc == ONCE_OK;
    }
    if (rc == ONCE_OK)
        rc = replies(s, c, v, queued);
    else if (queued)
        c->item.broken = 1; /* scripts queued, replies unread */
    if (rc == ONCE_OK)
        rc = all_integers(s, v, queued, "repacking");
    free_replies(v, queued);
    once_free(v);
    return rc;
}

int once__rd_schema(rd_store *s, rd_conn *c, once__schema *sc, int reset)
{
    char where[RD_PREFIX_MAX + 16];
    char *key = once__rd_key_global(s, "schema");
    int v, rc;

    if (!key)
        return ONCE_ENOMEM;
    snprintf(where, sizeof where, "prefix %s", s->prefix);
    rc = read_marker(s, c, key, &v);
    if (rc == ONCE_OK)
        rc = once__schema_gate(&s->base, sc, where, v, RD_SCHEMA_VERSION);
    if (rc >= 0 && !(sc->flags & ONCE__OPEN_PROBE) && (rc == 1 || reset)) {
        /* The reset empties the prefix, the marker with it: mark it again.
         * Else the steps of the versions above the marker's. */
        if (reset) {
            rc = once__rd_reset(s, c);
        } else {
            rc = v < 2 ? scan_tasks(s, c, index_round) : ONCE_OK;
            if (rc == ONCE_OK && v < 3)
                rc = scan_tasks(s, c, repack_round);
        }
        if (rc == ONCE_OK)
            rc = write_marker(s, c, key);
        /* Another process's SET NX may have won, with another version. */
        if (rc == ONCE_OK)
            rc = read_marker(s, c, key, &v);
        if (rc == ONCE_OK && v != RD_SCHEMA_VERSION) {
            once__schema again = {sc->flags | ONCE_STORE_OPEN_NO_MIGRATE, 0, 0};
            rc = once__schema_gate(&s->base, &again, where, v, RD_SCHEMA_VERSION);
        }
    }
    once_free(key);
    return rc < 0 ? rc : ONCE_OK;
}
