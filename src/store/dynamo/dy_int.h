/*
 * dy_int.h -- internals shared by the DynamoDB backend's files:
 *   dynamo.c    URL and options, open/close, the method table, and the
 *               design notes (item layout, the commit rule, retention)
 *   dy_cred.c   credentials, in the order the AWS tools look for them
 *   dy_http.c   one API call: curl handles in a pool, SigV4 by libcurl,
 *               error classification, throttling retried with backoff
 *   dy_item.c   keys, attribute values, record <-> item, the size bound
 *   dy_table.c  table and index creation, and the check that they exist
 *   dy_write.c  create, update, renew, sweep, purge, meta
 *   dy_read.c   load, events, expired_leases, check, reset
 *   dy_list.c   list: one list index per filter, a bounded state filter
 *   dy_upgrade.c  layout version 1 -> 2: "lx" onto the records
 *   dy_push.c   push delivery rows: their place in the record item, the
 *               push index, claim, ack, rows
 */
#ifndef ONCE_STORE_DY_INT_H
#define ONCE_STORE_DY_INT_H

#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "once/store.h"
#include "store/pool.h"
#include "store/slots.h"
#include "store/store_int.h"

#define DY_TABLE_MAX 255
#define DY_REGION_MAX 32
#define DY_POOL_DEFAULT 16
#define DY_POOL_WAIT_MS 30000
#define DY_TIMEOUT_DEFAULT_MS 5000
#define DY_CONNECT_TIMEOUT_MS 3000
#define DY_ATTEMPTS 6 /* tries of one call when it is throttled */
#define DY_BACKOFF_BASE_MS 25
#define DY_BACKOFF_CAP_MS 1000
#define DY_REPLY_MAX (32u << 20) /* bytes of one reply kept (a page is <= 1 MB) */
#define DY_ITEM_MAX 409600       /* DynamoDB's item size limit, 400 KB */
#define DY_CREATE_WAIT_MS 60000
#define DY_ROUNDS 32 /* tries of a write whose item keeps moving under it */

/* The four global secondary indexes (dynamo.c explains them). */
#define DY_IDX_DUE "due"
#define DY_IDX_LIST "by_principal"
#define DY_IDX_CTX "by_context"
#define DY_IDX_PUSH "push"

/* Credentials: set once by open, read-only afterwards. */
typedef struct dy_cred {
    char *userpwd;    /* "<access key id>:<secret>", for CURLOPT_USERPWD */
    char *token;      /* "X-Amz-Security-Token: ..." header, or NULL */
    char source[128]; /* where they came from, for messages */
} dy_cred;

/*
 * The handle. Everything above pool is set by open and read-only afterwards;
 * the pool guards itself (store/pool.h).
 */
typedef struct dy_store {
    once_store base;
    char table[DY_TABLE_MAX + 1];
    char region[DY_REGION_MAX + 1];
    char *endpoint; /* "https://dynamodb.<region>.amazonaws.com/" or the URL's */
    char *sigv4;    /* "aws:amz:<region>:dynamodb" */
    dy_cred cred;
    size_t pool_max;
    int timeout_ms;      /* per HTTP request */
    int64_t tomb_ttl_ms; /* 0: no TTL attribute on tombstones */
    int create;          /* ?create=1 */
    int reset;           /* ?reset=1 (tests) */

    once__pool pool; /* curl easy handles */
} dy_store;

/* ---- dy_cred.c ---- */

/* Fill c from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN,
 * else the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/credentials), profile AWS_PROFILE else "default". ONCE_OK, or
 * ONCE_EINVAL with errbuf saying where it looked. */
int once__dy_cred_load(dy_cred *c, char *errbuf, size_t errlen);
void once__dy_cred_free(dy_cred *c);

/* ---- dy_http.c ---- */

/* What a failed call said: the exception name after '#' in __type (or a
 * curl/HTTP description) and the service's message. */
typedef struct dy_fail {
    char type[64];
    char msg[200];
} dy_fail;

/* How far a call may be retried. A conditional write whose reply was lost
 * is not sent again (had it applied, the second try would answer
 * "condition failed": a false verdict); throttling and refused connections
 * are retried whatever the call (the request was not applied). */
#define DY_IDEMPOTENT 0  /* reads, and writes that may apply twice */
#define DY_CONDITIONAL 1 /* conditional writes */

/* Call DynamoDB_20120810.<op> with body req (not consumed). On ONCE_OK,
 * *out (if non-NULL) is the parsed reply (json_decref it). Errors:
 *   ONCE_ECONFLICT   ConditionalCheckFailedException
 *   ONCE_ENOTFOUND   ResourceNotFoundException (no such table or index)
 *   ONCE_ERANGE      the service refused the item's size
 *   ONCE_EBUSY       still throttled after DY_ATTEMPTS tries
 *   ONCE_ESTORE      unreachable, 5xx, or any other refusal
 * fail (if non-NULL) says what the service answered; s->errmsg is set on
 * every error but ONCE_ECONFLICT (an expected outcome). */
int once__dy_call(dy_store *s, const char *op, json_t *req, int mode, json_t **out, dy_fail *fail);
extern const once__pool_ops once__dy_pool_ops;
/* Sleep ms milliseconds (the backoff between tries of a call or a write). */
void once__dy_pause_ms(int64_t ms);

/* ---- dy_item.c ---- */

/* The table's partition key of a task: "<len(principal)>:<principal><task_id>"
 * (unambiguous whatever the strings hold). once_malloc'd, NULL on OOM. */
char *once__dy_task_pk(const char *principal, const char *task_id);
/* The "by_context" index's partition key of a record, "lx", encoded the
 * same way: "<len(principal)>:<principal><context_id>". */
char *once__dy_ctx_key(const char *principal, const char *context_id);
/* The list indexes' sort key "lc": created_at in 20 digits, then task_id
 * (so it sorts in ListTasks order), and back. */
#define DY_LC_MAX (ONCE_ID_MAX + 24)
void once__dy_list_sk(char out[DY_LC_MAX], int64_t created_at, const char *task_id);
int once__dy_list_sk_parse(const char *lc, int64_t *created_at, char task_id[ONCE_ID_MAX + 1]);
/* The sort key of event g ("e" and 20 digits) and of the record item. */
#define DY_SK_RECORD "r"
#define DY_SK_META "m"
/* The partition of the replica heartbeat rows (dy_replica.c). */
#define DY_PK_REPLICAS "r:"
/* The meta item holding the layout's version (dy_table.c): the item layout
 * dynamo.c describes is version 2; version 1 had no index "by_context" and
 * no "lx" on its records (dy_upgrade.c brings a table from 1 to 2). */
#define DY_META_SCHEMA "schema_version"
#define DY_SCHEMA_VERSION 2
void once__dy_event_sk(char out[24], int64_t g);

/* An item (or key, or value map) being built: attributes are added to o and
 * their DynamoDB size counted in bytes; the first failed allocation sets
 * oom and later additions do nothing. */
typedef struct dy_item {
    json_t *o;
    size_t bytes;
    int oom;
} dy_item;

int once__dy_item_init(dy_item *it); /* ONCE_OK or ONCE_ENOMEM */
void once__dy_item_free(dy_item *it);
void once__dy_put_s(dy_item *it, const char *name, const char *v); /* v NULL: skipped */
void once__dy_put_n(dy_item *it, const char *name, int64_t v);
/* A list of strings v[0..n) ("L" of "S"). */
void once__dy_put_ls(dy_item *it, const char *name, const once_event *v, size_t n);

/* The table key {pk, sk} of a task's record (sk NULL) or event. */
int once__dy_key(dy_item *it, const char *principal, const char *task_id, const char *sk);

/* The record item of rec, carrying pending events ev[0..nev) (generations
 * rec->generation - nev + 1 .. rec->generation), its delivery rows
 * rows[0..nrows) under push version pv, and the index attributes.
 * ONCE_ERANGE (errmsg set) when it exceeds DY_ITEM_MAX. */
int once__dy_record_item(dy_store *s, const once_record *rec, const once_event *ev, size_t nev,
                         const once_push_row *rows, size_t nrows, int64_t pv, dy_item *it);
/* The tombstone item that replaces r. */
int once__dy_tomb_item(dy_store *s, const once_record *r, int64_t now, dy_item *it);

/* Read attributes of an item ({"name": {"S": ...}}). */
const char *once__dy_get_s(json_t *item, const char *name); /* NULL if absent */
int64_t once__dy_get_n(json_t *item, const char *name);     /* 0 if absent */

/* An item read back: a record (with its pending events), or a tombstone. */
typedef struct dy_stored {
    json_t *item; /* set by the caller that keeps the item (dy_write.c) */
    int is_tomb;
    once_record rec;     /* !is_tomb */
    once_tombstone tomb; /* is_tomb */
    int64_t pend_base;   /* generations pend_base+1 .. rec.generation are in pend */
    json_t *pend;        /* borrowed from the item: a list of {"S": payload} */
} dy_stored;

/* Decode a record/tombstone item. ONCE_OK, ONCE_ENOMEM, ONCE_ECORRUPT.
 * The caller clears st->rec; pend stays valid while item lives. */
int once__dy_decode(json_t *item, dy_stored *st);

/* JSON helpers for request bodies; NULL on OOM (callers check once). */
json_t *once__dy_s(const char *v); /* {"S": v} */
json_t *once__dy_n(int64_t v);     /* {"N": "v"} */

/* ---- dy_push.c ---- */

/* The delivery rows stored in a record item ("pw"): rows[0..*n). */
int once__dy_rows_decode(json_t *item, once_push_row *rows, size_t *n);
/* Add rows, the push version and the push index attributes to a record
 * item whose partition key is pk. */
void once__dy_put_rows(dy_item *it, const char *pk, const once_push_row *rows, size_t n,
                       int64_t pv);
/* The rows a record write leaves: rec's push_json synced with old[0..nold)
 * (NULL at create), aimed at rec->generation. */
int once__dy_sync_rows(const once_record *rec, const once_push_row *old, size_t nold,
                       once_push_row *out, size_t *n);

/* ---- dy_table.c ---- */

/* With s->create: create the table and its indexes if absent, add to an
 * existing table the indexes its older layout lacks, and wait until they
 * are active. Then (always) check that they exist with the expected key
 * schema; errbuf says exactly what is missing (ONCE_ENOTFOUND: the table
 * itself). probe: a missing index of a later layout is not an error. */
int once__dy_table_ready(dy_store *s, int probe, char *errbuf, size_t errlen);

/* The schema step (store_int.h, once__schema) on a ready table (or none:
 * have_table = 0 is version 0): read the meta item DY_META_SCHEMA, and
 * unless refused or probing, empty the table when s->reset is set and
 * write the marker. */
int once__dy_schema(dy_store *s, once__schema *sc, int have_table);

/* ---- dy_upgrade.c ---- */

/* The meta item keeping where an unfinished upgrade pass stopped. */
#define DY_META_BACKFILL "lx_backfill"
/* Give records that lack it the "by_context" key "lx": at most max_pages
 * Scan requests of page items each, from where the last pass stopped;
 * *done = 1 when the table has been read to its end. */
int once__dy_backfill(dy_store *s, size_t page, size_t max_pages, int *done);
/* The whole pass, for the schema step (errmsg set on failure). */
int once__dy_upgrade(dy_store *s);

/* ---- the slots (dy_write.c, dy_read.c, dy_list.c) ---- */

ONCE__STORE_SLOTS(once__dy);
ONCE__STORE_PUSH_REPLICA_SLOTS(once__dy);
int once__dy_generations(once_store *s, const once_key *keys, size_t n, int64_t *gens);

/* Shared by the files above. */

/* GetItem of a task's record item with a consistent read: ONCE_OK with
 * *item (json_decref it) or NULL when absent. */
int once__dy_get_task(dy_store *s, const char *principal, const char *task_id, json_t **item);
/* Per item of a paged read: ONCE_OK to go on, DY_STOP to stop reading
 * (not an error), or an error, which ends the read with it. */
#define DY_STOP 1
typedef int (*dy_each_fn)(dy_store *s, json_t *item, void *arg);
/* A Query of the index `index` (NULL: the table) with key condition cond,
 * values vals (consumed), an optional filter and Limit (0: none); NULL on
 * OOM. */
json_t *once__dy_query_req(dy_store *s, const char *index, const char *cond, const char *filter,
                           json_t *vals, size_t limit, int consistent);
/* Run a Query or Scan request (consumed; NULL -> ONCE_ENOMEM) page after
 * page, or its first page only, calling fn on each item. */
int once__dy_each(dy_store *s, const char *op, json_t *req, int first_page_only, dy_each_fn fn,
                  void *arg);
/* fn on up to max entries (items with pk, sk, pr, id) of the "due" index
 * with dk = kind ("L" lease, "F" finished, "T" tombstone) and dt < before,
 * oldest first. */
int once__dy_due(dy_store *s, const char *kind, int64_t before, size_t max, dy_each_fn fn,
                 void *arg);
/* Delete every event item of a task (sweep, purge). */
int once__dy_delete_events(dy_store *s, const char *pk);
/* Delete every item of the table (reset=1). */
int once__dy_reset(dy_store *s);

/* Return rc from a slot that fills the list l: callers that got nothing
 * may reuse the struct without clearing it, so an empty list keeps no
 * allocation. */
#define DY_RETURN_LIST(l, rc)                                                                      \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        if ((l)->n == 0) {                                                                         \
            once_free((l)->v);                                                                     \
            (l)->v = NULL;                                                                         \
        }                                                                                          \
        return rc_;                                                                                \
    } while (0)

static inline dy_store *dys(once_store *s)
{
    return (dy_store *)s;
}

#endif /* ONCE_STORE_DY_INT_H */
