/*
 * redis_int.h -- internals shared by the Redis backend's files:
 *   redis.c          URL and options, open/close, the method table, and the
 *                    design notes (key layout, Cluster, durability)
 *   redis_conn.c     the connection pool, reconnect with backoff, SIGPIPE
 *                    safety, command building, EVALSHA with NOSCRIPT reload,
 *                    error classification and the retry loop (once__rd_run)
 *   redis_keys.c     key and index-member encoding, record <-> hash fields
 *   redis_scripts.c  the Lua scripts (every multi-key write is one script)
 *   redis_write.c    create, update, renew, sweep, purge, meta
 *   redis_read.c     load, events, expired_leases, list
 *   redis_check.c    the integrity check and reset
 *   redis_push.c     push delivery rows: their layout in the task's push
 *                    hash and the due index, what record writes and acks
 *                    send, their part of the integrity check
 *   redis_push_ops.c the push slots: claim, ack, rows
 *   redis_feed.c     the change feed: SUBSCRIBE to the channel updates
 *                    PUBLISH to
 *   redis_batch.c    pipelining: concurrent create and update scripts share
 *                    one connection and one round trip (store/batch.h)
 */
#ifndef ONCE_STORE_REDIS_INT_H
#define ONCE_STORE_REDIS_INT_H

#include <pthread.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "once/store.h"
#include "store/batch.h"
#include "store/pool.h"
#include "store/slots.h"
#include "store/store_int.h"

#define RD_PREFIX_MAX 64
#define RD_POOL_DEFAULT 16
#define RD_POOL_WAIT_MS 30000
#define RD_CONNECT_TIMEOUT_MS 3000
#define RD_TIMEOUT_DEFAULT_MS 5000
#define RD_BACKOFF_MIN_MS 50
#define RD_BACKOFF_MAX_MS 2000
#define RD_ATTEMPTS 3
#define RD_BATCH_DEFAULT 2 /* pipelines in flight per handle (URL batch=N; 0: none) */
#define RD_BATCH_MAX 16
#define RD_SCHEMA_VERSION 3 /* the key layout of redis.c (redis_schema.c); 2 adds
                             * the context indexes P:c:..., 3 packs a record
                             * into three hash fields (redis_keys.c) */

/* The Lua scripts; texts in redis_scripts.c. */
typedef enum rd_script_id {
    RD_CREATE,
    RD_UPDATE,
    RD_ENTOMB,
    RD_PURGE,
    RD_CHECKKEY,
    RD_PUSH_LEASE,
    RD_PUSH_PUT,
    RD_RENEW,
    RD_CTX_ADD,
    RD_REPACK,
    RD_MARK,
    RD_NSCRIPT
} rd_script_id;

extern const char *const once__rd_lua[RD_NSCRIPT];

/* One connection. Owned by one thread between acquire and release. item's
 * flags (broken, unsure: store/pool.h) describe the current slot call. */
typedef struct rd_conn {
    once__pool_item item; /* first: the pool links idle connections through it */
    redisContext *rc;
} rd_conn;

/*
 * The handle. Everything above pool is set by open and read-only afterwards
 * (sha[] holds the SHA1 of each script text: reloading a script after
 * NOSCRIPT yields the same value, so it never changes). The pool guards
 * itself (store/pool.h).
 */
typedef struct rd_store {
    once_store base;
    char *host;
    int port;
    int db;
    char *user;     /* NULL: AUTH with the password only (or no AUTH) */
    char *password; /* NULL: no AUTH */
    char prefix[RD_PREFIX_MAX + 1];
    size_t pool_max;
    int batch_leaders;   /* 0: every script is sent alone */
    int reset;           /* URL reset=1: empty once's keys at open (tests only) */
    int timeout_ms;      /* per command */
    int64_t tomb_ttl_ms; /* 0: tombstones live until purge */
    char sha[RD_NSCRIPT][41];

    once__pool pool;    /* connections (store/pool.h) */
    once__pool bpool;   /* the pipelines' own connections, one per pipeline in
                           flight: a pipeline never waits behind the reads */
    once__batch batch;  /* pipelined create and update scripts (redis_batch.c) */
} rd_store;

/* ---- redis_conn.c: commands ---- */

#define RD_NUMS 40

/* A command's arguments (binary-safe: pointer + length). Pointers must
 * outlive the call; integers are formatted into num[]. A failed allocation
 * sets oom and is reported by once__rd_call. */
typedef struct rd_cmd {
    int argc, cap;
    const char **argv;
    size_t *len;
    char num[RD_NUMS][24];
    int nnum;
    int oom;
} rd_cmd;

void once__rd_cmd_init(rd_cmd *c);
void once__rd_cmd_free(rd_cmd *c);
void once__rd_arg(rd_cmd *c, const void *p, size_t n);
void once__rd_str(rd_cmd *c, const char *s);
void once__rd_i64(rd_cmd *c, int64_t v);

/* ---- redis_conn.c: connections ---- */

extern const once__pool_ops once__rd_pool_ops;

/* Send one command and read its reply (*out: freeReplyObject it). An error
 * reply is ONCE_ESTORE with the message in errmsg; writes says whether the
 * command may change data (for the broken-while-writing bookkeeping). */
int once__rd_call(rd_store *s, rd_conn *c, const rd_cmd *cmd, int writes, redisReply **out);
/* once__rd_call of a read whose answer must be an array: ONCE_ECORRUPT,
 * with nothing in *out, when it is anything else. */
int once__rd_call_array(rd_store *s, rd_conn *c, const rd_cmd *cmd, redisReply **out);
/* once__rd_call of a command whose reply only says it worked (AUTH, SELECT,
 * a write whose count nobody reads): drops the reply and frees cmd. */
int once__rd_call_done(rd_store *s, rd_conn *c, rd_cmd *cmd, int writes);
/* The read `verb key` (HGETALL, EXISTS), answered as by once__rd_call; a
 * NULL key (its name could not be made) is ONCE_ENOMEM. */
int once__rd_call_key(rd_store *s, rd_conn *c, const char *verb, const char *key,
                      redisReply **out);
/* ZRANGEBYSCORE index -inf max LIMIT 0 count (max exclusive with below):
 * the first members of a time index that are due by max, answered as by
 * once__rd_call. The sweeps, the lease scan and the push claim read so. */
int once__rd_due(rd_store *s, rd_conn *c, const char *index, int64_t max, int below, int64_t count,
                 redisReply **out);
/* A walk over the members of a time index that are due (index, max and
 * below as for once__rd_due), in rounds of at most batch members and at
 * most rounds rounds: fn sees each member, with arg, while *done (which fn
 * advances) is below want. Every member fn sees must leave the due range
 * (taken, converted, re-scored or dropped), so each round makes progress;
 * the round cap is a safety net. */
typedef int (*rd_member_fn)(rd_store *s, rd_conn *c, const redisReply *m, void *arg);
typedef struct rd_walk {
    const char *index;
    int64_t max;
    int below;
    size_t batch;
    int rounds;
    const size_t *done;
    size_t want;
    rd_member_fn fn;
    void *arg;
} rd_walk;
/* Walk w: ONCE_OK when the due range is exhausted, *done reached want or
 * the rounds ran out; else the first failure (ONCE_ECORRUPT for a reply
 * that is not a list), which ends the walk. Shared by the sweeps and the
 * push claim. */
int once__rd_walk_due(rd_store *s, rd_conn *c, const rd_walk *w);
/* Start a script call: "EVALSHA <sha of id> <nkeys>"; keys and arguments
 * follow. */
void once__rd_cmd_evalsha(rd_cmd *c, const rd_store *s, rd_script_id id, int nkeys);
/* Run a command built by once__rd_cmd_evalsha; on NOSCRIPT (the server
 * forgot its scripts) load the script and run it once more. */
int once__rd_eval(rd_store *s, rd_conn *c, rd_script_id id, const rd_cmd *cmd, int writes,
                  redisReply **out);
/* SCRIPT LOAD every script on c, filling s->sha (open only). */
int once__rd_load_scripts(rd_store *s, rd_conn *c);
/* The reply of a pipelined script call: ONCE_OK and *out; RD_ALONE when
 * the server had lost the script (NOSCRIPT: it did not run); ONCE_ESTORE for
 * an error reply, or when the connection failed (c->item.broken: the script may
 * have run). */
int once__rd_script_reply(rd_store *s, rd_conn *c, const rd_cmd *cmd, redisReply **out);
/* Pipelining: queue cmd, then read replies in order. A caller that stops
 * reading with replies still pending must set c->item.broken. */
int once__rd_append(rd_store *s, rd_conn *c, const rd_cmd *cmd);
int once__rd_reply(rd_store *s, rd_conn *c, redisReply **out);

/* One slot's work on one connection, run by once__rd_run: once__pool_run
 * (store/pool.h) on s->pool, at most RD_ATTEMPTS times. */
typedef int (*rd_fn)(rd_store *s, rd_conn *c, void *arg);
int once__rd_run(rd_store *s, rd_fn fn, void *arg);

/* ---- redis_batch.c ---- */

/* One script call of a pipeline and its reply (freeReplyObject it). */
typedef struct rd_bop {
    const rd_cmd *cmd;
    redisReply *reply;
} rd_bop;

/* once__rd_batch_write's answer when the script did not run: the caller
 * runs it alone (once__rd_run, once__rd_eval). */
#define RD_ALONE 1

/* The run callback (store/batch.h) of s->batch. */
int once__rd_batch_run(void *owner, once__pool_item *it, void *arg);
/* Send op->cmd in a pipeline: ONCE_OK with op->reply (any reply but an
 * error), RD_ALONE, or an error (ONCE_ESTORE when the script may have run). */
int once__rd_batch_write(rd_store *s, rd_bop *op);

/* ---- redis_keys.c ---- */

/* "<prefix>:{<len(principal)>:<principal>:<task_id>}" and the same plus
 * ":ev" (once_malloc'd; NULL on OOM). */
char *once__rd_key_task(const rd_store *s, const char *principal, const char *task_id);
char *once__rd_key_events(const rd_store *s, const char *principal, const char *task_id);
/* The same plus ":push": the task's delivery rows. */
char *once__rd_key_push(const rd_store *s, const char *principal, const char *task_id);
/* "<prefix>:<name>" (leases, finished, tombs, meta) and "<prefix>:l:<principal>". */
char *once__rd_key_global(const rd_store *s, const char *name);
char *once__rd_key_list(const rd_store *s, const char *principal);
/* "<prefix>:c:<len(principal)>:<principal>:<context_id>": the context's
 * list index. */
char *once__rd_key_ctx(const rd_store *s, const char *principal, const char *context_id);
/* Every key a script about one task may touch, in the order of the
 * scripts that take them all (entomb, checkkey: KEYS[1..8]); the other
 * scripts name a subset (redis_write.c). The context index keys come last:
 * they depend on the record's context, not only on its key, so
 * once__rd_task_keys leaves them NULL and once__rd_task_keys_ctx sets
 * them. */
typedef enum rd_task_key {
    RD_K_H,
    RD_K_EV,
    RD_K_LEASES,
    RD_K_FINISHED,
    RD_K_LIST,
    RD_K_TOMBS,
    RD_K_PUSH,
    RD_K_PUSHQ,
    RD_K_CHANGES, /* not a key: the change feed's channel (redis_feed.c) */
    RD_K_CTX,     /* the context index of the context written */
    RD_K_CTX_OLD, /* update: that of the context stored (normally the same) */
    RD_K_N
} rd_task_key;
typedef struct rd_task_keys {
    char *v[RD_K_N]; /* once_malloc'd */
} rd_task_keys;
/* All of them for (principal, task_id): ONCE_OK, or ONCE_ENOMEM with none
 * left allocated. */
int once__rd_task_keys(const rd_store *s, const char *principal, const char *task_id,
                       rd_task_keys *k);
void once__rd_task_keys_free(rd_task_keys *k);
/* Set k->v[which] (RD_K_CTX or RD_K_CTX_OLD) to the index of (principal,
 * context_id), replacing what it held: ONCE_OK or ONCE_ENOMEM. */
int once__rd_task_keys_ctx(const rd_store *s, rd_task_keys *k, rd_task_key which,
                           const char *principal, const char *context_id);
/* Start c as EVALSHA of script id with KEYS = k's keys named by
 * which[0..n) in that order, or the first n of them when which is NULL. */
void once__rd_cmd_eval_keys(rd_cmd *c, const rd_store *s, rd_script_id id, const rd_task_keys *k,
                            const rd_task_key *which, int n);
/* Index member "<principal>\0<task_id>" into buf (returns its length). */
size_t once__rd_member(char *buf, const char *principal, const char *task_id);
#define RD_MEMBER_MAX (ONCE_PRINCIPAL_MAX + 1 + ONCE_ID_MAX)
/* Split a member back into a key: ONCE_OK or ONCE_ECORRUPT. */
int once__rd_member_key(const char *m, size_t n, once_key *out);
/* Reading hash values back (redis_keys.c). A bulk-string reply holding a
 * decimal int64 into *out: 0, or -1 when it is anything else or out of
 * range. */
int once__rd_num(const redisReply *v, int64_t *out);
/* A bulk-string reply into dst[cap], NUL-terminated: 0, or -1 when it is
 * not a string, does not fit, or holds a NUL byte. */
int once__rd_fixed(const redisReply *v, char *dst, size_t cap);
/* List-index member: 16 hex digits ordering created_at, then task_id. */
size_t once__rd_list_member(char *buf, int64_t created_at, const char *task_id);
#define RD_LMEMBER_MAX (16 + ONCE_ID_MAX)
/* The inverse: m[0..n) into *created_at and task_id; 0, or -1 when m is
 * not a list member. */
int once__rd_list_member_parse(const char *m, size_t n, int64_t *created_at,
                               char task_id[ONCE_ID_MAX + 1]);
/* A record as layout 3 stores it (redis_keys.c): the values of its hash
 * fields "h" (the head the scripts read) and "r" (the rest), in one
 * allocation, and "u". */
typedef struct rd_packed {
    char *h, *r; /* r points into h's allocation */
    size_t hlen, rlen;
    int64_t u;
} rd_packed;
/* The head's fields, in order; the scripts' LUA_HEAD indexes them from 1. */
enum {
    RD_HEAD_S,
    RD_HEAD_V,
    RD_HEAD_G,
    RD_HEAD_F,
    RD_HEAD_O,
    RD_HEAD_FA,
    RD_HEAD_C,
    RD_HEAD_LM,
    RD_HEAD_FD,
    RD_HEAD_N
};
/* Pack rec (with its first digest and list member) into *pk: ONCE_OK or
 * ONCE_ENOMEM (nothing to free). */
int once__rd_record_pack(rd_packed *pk, const once_record *rec, const char *first_digest,
                         const char *lmember, size_t lmlen);
void once__rd_packed_free(rd_packed *pk);
/* Append the values of "r", "h" and "u" (3 arguments; pk must outlive c). */
void once__rd_packed_args(rd_cmd *c, const rd_packed *pk);
/* Head field i (RD_HEAD_*) of the "h" value v[0..n) into dst: 0, or -1
 * when v is no head or the field does not fit in cap (NUL included). */
int once__rd_head_field(const char *v, size_t n, int i, char *dst, size_t cap);
/* A hash read by HGETALL (an array of field, value): a record (ONCE_OK),
 * or a tombstone (ONCE_ETOMBSTONE, *tomb filled if non-NULL). out/tomb may
 * be NULL. ONCE_ECORRUPT if a field is missing or malformed. */
int once__rd_parse_hash(const redisReply *r, once_record *out, once_tombstone *tomb);

/* ---- redis_read.c ---- */
/* The context the hash h names, "" when it names none (a tombstone, or
 * gone): ONCE_OK, ONCE_ECORRUPT (not a context; ctx ""), or a failed call.
 * What a write that drops the record's context index entry, and the check,
 * read to name that index. */
int once__rd_stored_ctx(rd_store *s, rd_conn *c, const char *h, char ctx[ONCE_ID_MAX + 1]);

/* ---- slots (redis_write.c, redis_read.c, redis_check.c, redis_push_ops.c: slots.h) ---- */

ONCE__STORE_SLOTS(once__rd);
ONCE__STORE_PUSH_REPLICA_SLOTS(once__rd);
ONCE__STORE_CONN_FEED_SLOTS(once__rd);
ONCE__STORE_CREATE_START_SLOT(once__rd);
/* Delete every key under the prefix (open with reset=1; tests only). */
int once__rd_reset(rd_store *s, rd_conn *c);
/* SCAN every key matching pattern, COUNT count per round: fn sees each
 * round's keys (an array reply; its elements may repeat a key SCAN
 * returned before). Ends at the first failure. */
typedef int (*rd_keys_fn)(rd_store *s, rd_conn *c, const redisReply *keys, void *arg);
int once__rd_scan(rd_store *s, rd_conn *c, const char *pattern, const char *count, rd_keys_fn fn,
                  void *arg);
/* A task key "<prefix>:{<plen>:<principal>:<task_id>}" (RD_TK_TASK), or
 * the same plus ":ev" (RD_TK_EVENTS) or ":push" (RD_TK_PUSH), into *out
 * and *kind: 0, or -1 when k[0..n) is none of them. */
enum { RD_TK_TASK, RD_TK_EVENTS, RD_TK_PUSH };
int once__rd_parse_task_key(const rd_store *s, const char *k, size_t n, once_key *out,
                            int *kind);

/* ---- redis_schema.c ---- */
/* The schema step on the first connection (store_int.h, once__schema): read
 * the marker P:schema, and unless refused or probing, empty the prefix
 * when reset is set and write the marker. */
int once__rd_schema(rd_store *s, rd_conn *c, once__schema *sc, int reset);

/* ---- redis_push.c ---- */

/* What a record write does to the task's delivery rows, as the push
 * section of its script's arguments (redis_scripts.c, put_push); the
 * strings live here until the call is done. */
typedef struct rd_push_write rd_push_write;
rd_push_write *once__rd_push_write_new(void);
void once__rd_push_write_free(rd_push_write *w); /* NULL is a no-op */
/* The rows rec leaves, from the stored rows old[0..nold) (once__push_sync);
 * a rec without push_json drops them all (old unused). */
int once__rd_push_prepare(rd_push_write *w, const once_record *rec, const once_push_row *old,
                          size_t nold);
/* Append the push section; a NULL w drops every row. */
void once__rd_push_section(rd_cmd *c, rd_push_write *w);
/* The key's rows (HGETALL of its push hash) into v[0..*n), by config id. */
int once__rd_push_read(rd_store *s, rd_conn *c, const char *principal, const char *task_id,
                       once_push_row v[ONCE_PUSH_CONFIGS_MAX], size_t *n);
/* An ack's compare-and-set arguments for RD_PUSH_PUT: "n", then (field,
 * value in was, value in now) for each progress field (all but since and
 * target); the strings live in *ca until the call is done. */
typedef struct rd_push_cas rd_push_cas;
rd_push_cas *once__rd_push_cas_new(void);
void once__rd_push_cas_free(rd_push_cas *ca); /* NULL is a no-op */
void once__rd_push_cas_args(rd_cmd *c, rd_push_cas *ca, once_push_row *was, once_push_row *now);
/* ---- redis_push_ops.c: the push slots ---- */
/* check(): a live record (rec) or a tombstone (rec NULL) with its push
 * hash (HGETALL reply) and the due-index scores of its rows (an array of
 * config id, score|'' pairs), read atomically by RD_CHECKKEY. */
void once__rd_check_push(once_check_report *rep, const once_key *k, const once_record *rec,
                         const redisReply *hash, const redisReply *scores);

#endif /* ONCE_STORE_REDIS_INT_H */
