/*
 * webhook.c -- the receiving end of push notifications (include/once/
 * webhook.h): verify a delivery (signature and notification token),
 * record it durably in a SQLite processed-set, hand events to the
 * application once, in generation order per subscription and task.
 *
 * Everything that moves the processed-set comes from the signed
 * webhook-id: the subscription ("<tag>/<config_id>"), the task, the
 * generation and the subscription's since; an unsigned once-push-since
 * header that disagrees with it is refused. The processed-set is two tables:
 *   wh_sub_tasks(sub, task_id, next)   the next generation to hand over;
 *                             every generation below it was handled (or
 *                             skipped)
 *   wh_sub_events(sub, task_id, generation, ...)   recorded, not yet handled
 * A delivery is a duplicate when its generation is below next or already in
 * wh_sub_events. (wh_tasks and wh_events, keyed by task alone, are what
 * older versions kept; they are left alone and no longer read.)
 *
 * Recording is one IMMEDIATE transaction at synchronous=FULL that commits
 * before the 2xx is answered, so a 2xx always means "this event will reach
 * the handler even if the receiver dies now". Handling deletes the row and
 * advances next in one transaction after the handler returned. An event
 * above next waits in wh_sub_events until next reaches it.
 *
 * Locking: dbmu guards the connection (every statement); drainmu makes
 * drains run one at a time, so the handler is never called concurrently
 * and per task order holds. The handler runs without dbmu, so deliveries
 * keep being recorded while it works.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "core/decimal.h"
#include "core/str.h"
#include "core/strv.h"
#include "core/errbuf.h"
#include "core/jcs.h"
#include "db/db.h"
#include "once/webhook.h"

struct once_webhook {
    char **secrets;
    size_t nsecrets;
    int64_t tolerance_s;
    char *token;
    once_webhook_handler handler;
    void *arg;
    const once_clock *clock;

    pthread_mutex_t dbmu;
    sqlite3 *db;
    pthread_mutex_t drainmu;
    int64_t seq; /* arrival order of recorded events; under dbmu */

    once_webhook_stats stats; /* __atomic; pending is computed on demand */
};

#define STAT(w, f) __atomic_fetch_add(&(w)->stats.f, 1, __ATOMIC_RELAXED)

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS wh_sub_tasks(sub TEXT NOT NULL, task_id TEXT NOT NULL,"
    " next INTEGER NOT NULL, PRIMARY KEY(sub, task_id)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS wh_sub_events(sub TEXT NOT NULL, task_id TEXT NOT NULL,"
    " generation INTEGER NOT NULL, webhook_id TEXT NOT NULL, body TEXT NOT NULL,"
    " seq INTEGER NOT NULL, PRIMARY KEY(sub, task_id, generation)) STRICT, WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS wh_sub_events_seq ON wh_sub_events(seq);";

void once_webhook_close(once_webhook *w)
{
    if (w == NULL)
        return;
    sqlite3_close_v2(w->db);
    once__strv_free(w->secrets, w->nsecrets);
    once_free(w->token);
    pthread_mutex_destroy(&w->dbmu);
    pthread_mutex_destroy(&w->drainmu);
    once_free(w);
}

int once_webhook_open(const once_webhook_options *o, once_webhook **out, char *err, size_t errlen)
{
    err = once__errbuf(err, &errlen);
    if (out == NULL || o == NULL || o->state_path == NULL || o->state_path[0] == '\0') {
        snprintf(err, errlen, "a state file (the processed-set) is required");
        return ONCE_EINVAL;
    }
    *out = NULL;
    if (o->token == NULL || o->token[0] == '\0') {
        snprintf(err, errlen,
                 "a notification token is required (the token this receiver's "
                 "push configs carry)");
        return ONCE_EINVAL;
    }
    if (o->nsecrets == 0 || o->secrets == NULL) {
        snprintf(err, errlen, "at least one signing secret is required");
        return ONCE_EINVAL;
    }
    for (size_t i = 0; i < o->nsecrets; i++) {
        uint8_t key[ONCE_WEBHOOK_KEY_MAX];
        size_t klen;
        if (once_webhook_key(o->secrets[i], key, &klen) != ONCE_OK) {
            snprintf(err, errlen, "secret %zu is not usable (empty, bad whsec_ base64, or long)",
                     i + 1);
            return ONCE_EINVAL;
        }
    }
    once_webhook *w = once_calloc(1, sizeof *w);
    if (w == NULL)
        return ONCE_ENOMEM;
    pthread_mutex_init(&w->dbmu, NULL);
    pthread_mutex_init(&w->drainmu, NULL);
    w->tolerance_s = o->tolerance_s > 0 ? o->tolerance_s : ONCE_WEBHOOK_TOLERANCE_S;
    w->handler = o->handler;
    w->arg = o->arg;
    w->clock = o->clock != NULL ? o->clock : once_clock_system();
    w->secrets = once__strv_dup(o->secrets, o->nsecrets);
    w->nsecrets = w->secrets != NULL ? o->nsecrets : 0;
    int rc = w->secrets != NULL ? ONCE_OK : ONCE_ENOMEM;
    if (rc == ONCE_OK && (w->token = once_strdup(o->token)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc != ONCE_OK) {
        once_webhook_close(w);
        return rc;
    }
    int src = once__db_open(o->state_path, 5000, &w->db);
    if (src == SQLITE_OK)
        src = sqlite3_exec(w->db, schema, NULL, NULL, NULL);
    if (src != SQLITE_OK) {
        snprintf(err, errlen, "cannot open the processed-set %s: %s", o->state_path,
                 w->db ? sqlite3_errmsg(w->db) : "out of memory");
        once_webhook_close(w);
        return ONCE_EIO;
    }
    sqlite3_stmt *st;
    if (once__db_prepare(w->db, &st, "SELECT coalesce(max(seq), 0) FROM wh_sub_events", "") ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        w->seq = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    *out = w;
    return ONCE_OK;
}

/* once-push-since, when sent, must say what the signed id says. */
static int since_matches(const char *s, int64_t since)
{
    int64_t v;
    if (s == NULL)
        return 1;
    return once__decimal(s, strlen(s), &v) && v == since;
}

/* A refusal: count it, say why, and which status answers it. */
static int reject(once_webhook *w, int rc, int *status, char *why, size_t whylen, const char *msg)
{
    STAT(w, rejected);
    *status = rc == ONCE_EPARSE ? 400 : 401;
    if (why != NULL && whylen)
        snprintf(why, whylen, "%s", msg);
    return rc;
}

/* A statement with its arguments (db.h's type string), run once: ONCE_OK
 * or ONCE_EIO. */
static int run(sqlite3 *db, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int src = once__db_vrun(db, sql, types, ap);
    va_end(ap);
    return src == SQLITE_OK ? ONCE_OK : ONCE_EIO;
}

/* The end of a transaction run began: COMMIT when rc is ONCE_OK, else
 * ROLLBACK; ONCE_OK or ONCE_EIO. */
static int end_tx(once_webhook *w, int rc)
{
    return once__db_end(w->db, rc == ONCE_OK ? SQLITE_OK : SQLITE_ABORT) == SQLITE_OK ? ONCE_OK
                                                                                      : ONCE_EIO;
}

/* Under dbmu, inside a transaction: the (subscription, task)'s next,
 * creating the row at since + 1; a since past next moves next up (the
 * sender restarted the subscription there: generations up to since will
 * never come). since is signed (it is part of the webhook-id). */
static int task_next(once_webhook *w, const char *sub, const char *task, int64_t since,
                     int64_t *next)
{
    sqlite3_stmt *st;
    if (once__db_prepare(w->db, &st, "SELECT next FROM wh_sub_tasks WHERE sub=?3 AND task_id=?1",
                         "s-s", task, sub) != SQLITE_OK)
        return ONCE_EIO;
    int src = sqlite3_step(st);
    int64_t n = src == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return ONCE_EIO;
    if (src == SQLITE_ROW && since + 1 <= n) {
        *next = n;
        return ONCE_OK;
    }
    int rc = run(w->db,
                 "INSERT INTO wh_sub_tasks(sub, task_id, next) VALUES(?3, ?1, ?2) "
                 "ON CONFLICT(sub, task_id) DO UPDATE SET next=excluded.next",
                 "sis", task, since + 1, sub);
    if (rc == ONCE_OK && src == SQLITE_ROW)
        rc = run(w->db, "DELETE FROM wh_sub_events WHERE sub=?3 AND task_id=?1 AND generation<?2",
                 "sis", task, since + 1, sub);
    *next = since + 1;
    return rc;
}

/* Record one verified event. 1 recorded, 0 duplicate, or ONCE_EIO. */
static int record(once_webhook *w, const char *sub, const char *task, int64_t gen, int64_t since,
                  const once_webhook_request *req)
{
    pthread_mutex_lock(&w->dbmu);
    int rc = once__db_begin(w->db) == SQLITE_OK ? ONCE_OK : ONCE_EIO;
    int64_t next = 0;
    int fresh = 0;
    if (rc == ONCE_OK)
        rc = task_next(w, sub, task, since, &next);
    if (rc == ONCE_OK && gen >= next) {
        rc = run(w->db,
                 "INSERT INTO wh_sub_events(task_id, generation, webhook_id, body, seq, sub) "
                 "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT DO NOTHING",
                 "sistis", task, gen, req->id, req->body, req->len, w->seq + 1, sub);
        fresh = rc == ONCE_OK && sqlite3_changes(w->db) == 1;
    }
    rc = end_tx(w, rc);
    if (rc == ONCE_OK && fresh)
        w->seq++;
    pthread_mutex_unlock(&w->dbmu);
    return rc != ONCE_OK ? ONCE_EIO : fresh;
}

int once_webhook_receive(once_webhook *w, const once_webhook_request *req, int *status,
                         int *duplicate, char *why, size_t whylen)
{
    int ignored_status, ignored_dup;
    if (status == NULL)
        status = &ignored_status;
    if (duplicate == NULL)
        duplicate = &ignored_dup;
    *status = 500;
    *duplicate = 0;
    if (why != NULL && whylen)
        why[0] = '\0';
    if (w == NULL || req == NULL)
        return ONCE_EINVAL;
    int64_t now_s = once_now(w->clock) / 1000;
    int v =
        once_webhook_verify((const char *const *)w->secrets, w->nsecrets, req->id, req->timestamp,
                            req->signature, req->body, req->len, now_s, w->tolerance_s);
    if (v == ONCE_EPARSE)
        return reject(w, ONCE_EPARSE, status, why, whylen,
                      "webhook-id, webhook-timestamp or webhook-signature missing or malformed");
    if (v == ONCE_ERANGE)
        return reject(w, ONCE_ERANGE, status, why, whylen,
                      "webhook-timestamp outside the tolerance");
    if (v != ONCE_OK)
        return reject(w, ONCE_EINVAL, status, why, whylen, "no webhook-signature matches");
    /* The token is what only this receiver's own push configs carry:
     * another tenant of the same onced, who may well hold the push
     * secret, has no way to learn it. */
    if (req->token == NULL || strlen(req->token) != strlen(w->token) ||
        !once_ct_equal(req->token, w->token, strlen(w->token)))
        return reject(w, ONCE_EINVAL, status, why, whylen,
                      "X-A2A-Notification-Token missing or wrong");
    once_webhook_id id;
    if (once_webhook_id_parse(req->id, &id) != ONCE_OK)
        return reject(w, ONCE_EPARSE, status, why, whylen,
                      "webhook-id is not <tag>/<config_id>/<since>/<task_id>.<generation>");
    if (!since_matches(req->since, id.since))
        return reject(w, ONCE_EPARSE, status, why, whylen,
                      "once-push-since differs from the since in the signed webhook-id");
    char sub[ONCE_WEBHOOK_TAG_LEN + ONCE_ID_MAX + 2];
    snprintf(sub, sizeof sub, "%s/%s", id.tag, id.config_id);
    json_t *body = NULL;
    if (once__json_loadb(req->body, req->len, 0, &body, NULL) == ONCE_ENOMEM) {
        /* Our shortage, not a bad delivery: 503, so the sender retries. */
        *status = 503;
        if (why != NULL && whylen)
            snprintf(why, whylen, "out of memory reading the body");
        return ONCE_ENOMEM;
    }
    int is_object = json_is_object(body);
    json_decref(body);
    if (!is_object || memchr(req->body, '\0', req->len) != NULL)
        return reject(w, ONCE_EPARSE, status, why, whylen, "the body is not a JSON object");
    int r = record(w, sub, id.task_id, id.generation, id.since, req);
    if (r < 0) {
        *status = 503;
        if (why != NULL && whylen)
            snprintf(why, whylen, "the processed-set could not be written");
        return ONCE_EIO;
    }
    *duplicate = r == 0;
    if (r == 0)
        STAT(w, duplicates);
    else
        STAT(w, received);
    *status = 204;
    return ONCE_OK;
}

/* The first deliverable event (arrival order), copied out; 0 if none. */
typedef struct pending {
    char sub[ONCE_WEBHOOK_TAG_LEN + ONCE_ID_MAX + 2];
    char task[ONCE_ID_MAX + 1];
    int64_t gen;
    char *id;
    char *body;
    size_t len;
} pending;

static int next_pending(once_webhook *w, pending *p)
{
    int found = 0;
    pthread_mutex_lock(&w->dbmu);
    sqlite3_stmt *st;
    int rc = once__db_prepare(w->db, &st,
                              "SELECT e.task_id, e.generation, e.webhook_id, e.body, e.sub "
                              "FROM wh_sub_events e JOIN wh_sub_tasks t ON t.sub=e.sub "
                              "AND t.task_id=e.task_id AND e.generation=t.next "
                              "ORDER BY e.seq LIMIT 1",
                              "");
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        once__strlcpy(p->task, t ? t : "", sizeof p->task);
        t = (const char *)sqlite3_column_text(st, 4);
        once__strlcpy(p->sub, t ? t : "", sizeof p->sub);
        p->gen = sqlite3_column_int64(st, 1);
        p->id = once_strdup((const char *)sqlite3_column_text(st, 2));
        p->len = (size_t)sqlite3_column_bytes(st, 3);
        p->body = once_strndup((const char *)sqlite3_column_text(st, 3), p->len);
        found = p->id != NULL && p->body != NULL ? 1 : ONCE_ENOMEM;
    } else if (rc != SQLITE_DONE) {
        found = ONCE_EIO;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&w->dbmu);
    return found;
}

static int mark_handled(once_webhook *w, const pending *p)
{
    pthread_mutex_lock(&w->dbmu);
    int rc = once__db_begin(w->db) == SQLITE_OK ? ONCE_OK : ONCE_EIO;
    if (rc == ONCE_OK)
        rc = run(w->db, "DELETE FROM wh_sub_events WHERE sub=?3 AND task_id=?1 AND generation=?2",
                 "sis", p->task, p->gen, p->sub);
    if (rc == ONCE_OK)
        rc = run(w->db, "UPDATE wh_sub_tasks SET next=?2 + 1 WHERE sub=?3 AND task_id=?1 "
                        "AND next=?2",
                 "sis", p->task, p->gen, p->sub);
    rc = end_tx(w, rc);
    pthread_mutex_unlock(&w->dbmu);
    return rc;
}

int once_webhook_drain(once_webhook *w, size_t *handled)
{
    size_t n = 0;
    int rc = ONCE_OK;
    if (handled != NULL)
        *handled = 0;
    if (w == NULL)
        return ONCE_EINVAL;
    if (w->handler == NULL)
        return ONCE_OK;
    pthread_mutex_lock(&w->drainmu);
    for (;;) {
        pending p;
        memset(&p, 0, sizeof p);
        int f = next_pending(w, &p);
        if (f <= 0) {
            rc = f;
            once_free(p.id);
            once_free(p.body);
            break;
        }
        once_webhook_event ev = {p.task, p.gen, p.id, p.body, p.len, p.sub};
        int hr = w->handler(w->arg, &ev);
        if (hr == ONCE_OK) {
            rc = mark_handled(w, &p);
            if (rc == ONCE_OK) {
                STAT(w, handled);
                n++;
            }
        }
        once_free(p.id);
        once_free(p.body);
        if (hr != ONCE_OK || rc != ONCE_OK)
            break; /* offered again on the next drain, still first of its task */
    }
    pthread_mutex_unlock(&w->drainmu);
    if (handled != NULL)
        *handled = n;
    return rc;
}

int once_webhook_skip(once_webhook *w, const char *task_id, int64_t generation)
{
    if (w == NULL || !once_id_valid(task_id) || generation < 0)
        return ONCE_EINVAL;
    pthread_mutex_lock(&w->dbmu);
    int rc = once__db_begin(w->db) == SQLITE_OK ? ONCE_OK : ONCE_EIO;
    if (rc == ONCE_OK)
        rc = run(w->db, "UPDATE wh_sub_tasks SET next=?2 + 1 WHERE task_id=?1 AND next<?2 + 1",
                 "si", task_id, generation);
    if (rc == ONCE_OK)
        rc = run(w->db, "DELETE FROM wh_sub_events WHERE task_id=?1 AND generation<=?2", "si",
                 task_id, generation);
    rc = end_tx(w, rc);
    pthread_mutex_unlock(&w->dbmu);
    return rc;
}

int once_webhook_get_stats(once_webhook *w, once_webhook_stats *out)
{
    memset(out, 0, sizeof *out);
    if (w == NULL)
        return ONCE_EINVAL;
    out->received = __atomic_load_n(&w->stats.received, __ATOMIC_RELAXED);
    out->duplicates = __atomic_load_n(&w->stats.duplicates, __ATOMIC_RELAXED);
    out->rejected = __atomic_load_n(&w->stats.rejected, __ATOMIC_RELAXED);
    out->handled = __atomic_load_n(&w->stats.handled, __ATOMIC_RELAXED);
    pthread_mutex_lock(&w->dbmu);
    sqlite3_stmt *st;
    int rc = once__db_prepare(w->db, &st, "SELECT count(*) FROM wh_sub_events", "") == SQLITE_OK &&
                     sqlite3_step(st) == SQLITE_ROW
                 ? ONCE_OK
                 : ONCE_EIO;
    if (rc == ONCE_OK)
        out->pending = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&w->dbmu);
    return rc;
}
