/*
 * query.c -- GetTask, CancelTask and ListTasks.
 *
 * Invariants: the key is (principal, task_id), so another principal's task
 * is indistinguishable from a missing one; a direct-Message record is not a
 * task (ENOTFOUND for get / cancel, skipped by list). Cancel is one CAS that
 * moves the state to CANCELED, bumps the fence (so the running worker's
 * next write is refused) and clears the lease, then wakes the local worker.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/jcs.h"
#include "engine/engine_int.h"

#define CANCEL_TRIES 16
#define LIST_DEFAULT 50
#define LIST_MAX 100

/* once__task_out with the reason for a NULL, which means either no memory
 * or a stored text that is not an object: only on that path is the text
 * parsed once more to tell which, so running out of memory is never
 * reported as a corrupt store. */
static int task_out(const once_record *rec, int history_length, json_t **out)
{
    if ((*out = once__task_out(rec, history_length)) != NULL)
        return ONCE_OK;
    json_t *probe = NULL;
    int rc = once__json_object(rec->task_json, &probe);
    json_decref(probe);
    return rc == ONCE_EPARSE ? ONCE_ECORRUPT : ONCE_ENOMEM;
}

/* What get and cancel check of their key before any read: ONCE_EINVAL for
 * no engine or an unusable principal, ONCE_ENOTFOUND for an ID no stored
 * task can carry. */
static int key_check(once__engine *e, const char *principal, const char *task_id)
{
    if (e == NULL || principal == NULL || principal[0] == '\0' ||
        strlen(principal) > ONCE_PRINCIPAL_MAX)
        return ONCE_EINVAL;
    if (!once_id_valid(task_id))
        return ONCE_ENOTFOUND;
    once__log_ctx_task(task_id);
    return ONCE_OK;
}

/* Load the key's record; for a swept key, *expired_at (if asked) says
 * when. Store failures are mapped as every engine call maps them. */
static int load_key(once__engine *e, const char *principal, const char *task_id,
                    once_record *rec, int64_t *expired_at)
{
    once_tombstone tomb;
    int rc = once_store_load(e->store, principal, task_id, rec, &tomb);
    if (rc == ONCE_ETOMBSTONE && expired_at != NULL)
        *expired_at = tomb.expired_at;
    return rc == ONCE_OK ? ONCE_OK : once__store_rc(e, rc);
}

int once__engine_get(once__engine *e, const char *principal, const char *task_id,
                    int history_length, json_t **task, int64_t *expired_at)
{
    if (task == NULL)
        return ONCE_EINVAL;
    *task = NULL;
    int rc = key_check(e, principal, task_id);
    if (rc != ONCE_OK)
        return rc;
    once_record rec;
    rc = load_key(e, principal, task_id, &rec, expired_at);
    if (rc != ONCE_OK)
        return rc;
    if (rec.kind != ONCE_KIND_TASK)
        rc = ONCE_ENOTFOUND;
    else
        rc = task_out(&rec, history_length, task);
    once_record_clear(&rec);
    return rc;
}

/* One cancel attempt on cur. ONCE_ECONFLICT: re-load and retry. */
static int cancel_once(once__engine *e, const once_record *cur, json_t **task)
{
    json_t *t;
    int rc = once__json_object(cur->task_json, &t);
    if (rc != ONCE_OK)
        return rc == ONCE_EPARSE ? ONCE_ECORRUPT : rc;
    int64_t now = once__now(e);
    once_record next;
    char *payload = NULL;
    rc = once__task_set_status(t, ONCE_STATE_CANCELED, NULL, now);
    int have_next = 0;
    if (rc == ONCE_OK &&
        (rc = once__record_advance(&next, cur, ONCE_STATE_CANCELED, now)) == ONCE_OK)
        have_next = 1;
    if (rc == ONCE_OK) {
        once_free(next.task_json);
        if ((next.task_json = once__json_text(t)) == NULL)
            rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK && (payload = once__ev_status(t, cur->generation + 1)) == NULL)
        rc = ONCE_ENOMEM;
    json_decref(t);
    if (rc == ONCE_OK)
        rc = once__write(e, cur, &next, payload);
    once_free(payload);
    if (rc == ONCE_OK) {
        once__cancel_local(e, next.principal, next.task_id);
        if (task != NULL)
            rc = task_out(&next, -1, task);
    }
    if (have_next)
        once_record_clear(&next);
    return rc;
}

int once__engine_cancel(once__engine *e, const char *principal, const char *task_id,
                       json_t **task, once_state *state, int64_t *expired_at)
{
    if (task != NULL)
        *task = NULL;
    int krc = key_check(e, principal, task_id);
    if (krc != ONCE_OK)
        return krc;
    for (int i = 0; i < CANCEL_TRIES; i++) {
        once_record rec;
        int rc = load_key(e, principal, task_id, &rec, expired_at);
        if (rc != ONCE_OK)
            return rc;
        if (state != NULL)
            *state = rec.state;
        if (rec.kind != ONCE_KIND_TASK) {
            rc = ONCE_ENOTFOUND;
        } else if (rec.state == ONCE_STATE_CANCELED) {
            if (task != NULL)
                rc = task_out(&rec, -1, task);
        } else if (once__transition(rec.state, ONCE_STATE_CANCELED) != ONCE_OK) {
            rc = ONCE_EILLEGAL;
        } else {
            rc = cancel_once(e, &rec, task);
            if (rc == ONCE_OK && state != NULL)
                *state = ONCE_STATE_CANCELED;
        }
        once_record_clear(&rec);
        if (rc != ONCE_ECONFLICT)
            return rc;
    }
    return ONCE_EBUSY;
}

/* ------------------------------------------------------------------------
 * ListTasks page tokens: base64url (no padding) of "<created_at>.<task_id>".
 * Opaque to clients; validated on the way back in, never trusted further
 * than the principal's own listing (the query is always scoped to it).
 */

/* Decode a page token into out (NUL-terminated text); ONCE_EINVAL on any
 * malformation, including an embedded NUL. */
static int token_text(const char *in, char *out, size_t outlen)
{
    long n = once__base64_decode(in, strlen(in), (uint8_t *)out, outlen - 1);
    if (n < 0 || memchr(out, '\0', (size_t)n) != NULL)
        return ONCE_EINVAL;
    out[n] = '\0';
    return ONCE_OK;
}

static int token_encode(int64_t created_at, const char *task_id, char out[256])
{
    char raw[32 + ONCE_ID_MAX];
    int n = snprintf(raw, sizeof raw, "%" PRId64 ".%s", created_at, task_id);
    if (n < 0 || (size_t)n >= sizeof raw)
        return ONCE_ERANGE;
    if (once__base64_len((size_t)n, 1) + 1 > 256)
        return ONCE_ERANGE;
    once__base64_encode((const uint8_t *)raw, (size_t)n, out, 1);
    return ONCE_OK;
}

static int token_decode(const char *token, int64_t *created_at, char task_id[ONCE_ID_MAX + 1])
{
    char raw[32 + ONCE_ID_MAX];
    if (strlen(token) > 255 || token_text(token, raw, sizeof raw) != ONCE_OK)
        return ONCE_EINVAL;
    char *dot = strchr(raw, '.');
    if (dot == NULL || dot == raw)
        return ONCE_EINVAL;
    *dot = '\0';
    for (const char *p = raw; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return ONCE_EINVAL;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(raw, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0')
        return ONCE_EINVAL;
    if (!once_id_valid(dot + 1))
        return ONCE_EINVAL;
    *created_at = (int64_t)v;
    snprintf(task_id, ONCE_ID_MAX + 1, "%s", dot + 1);
    return ONCE_OK;
}

int once__engine_list(once__engine *e, const once_list_req *req, json_t **tasks,
                     char next_token[256])
{
    if (tasks == NULL || next_token == NULL)
        return ONCE_EINVAL;
    *tasks = NULL;
    next_token[0] = '\0';
    if (e == NULL || req == NULL || req->principal == NULL || req->principal[0] == '\0' ||
        strlen(req->principal) > ONCE_PRINCIPAL_MAX || req->page_size > LIST_MAX)
        return ONCE_EINVAL;
    if (req->context_id != NULL && !once_id_valid(req->context_id))
        return ONCE_EINVAL;
    if ((int)req->state < ONCE_STATE_UNKNOWN || (int)req->state > ONCE_STATE_REJECTED)
        return ONCE_EINVAL;
    size_t page = req->page_size != 0 ? req->page_size : LIST_DEFAULT;

    char after_id[ONCE_ID_MAX + 1];
    once_list_query q = {.principal = req->principal,
                         .context_id = req->context_id,
                         .state = req->state,
                         .limit = page + 1};
    if (req->page_token != NULL && req->page_token[0] != '\0') {
        if (token_decode(req->page_token, &q.after_created_at, after_id) != ONCE_OK)
            return ONCE_EINVAL;
        q.after_task_id = after_id;
    }
    once_record_list l;
    int rc = once_store_list(e->store, &q, &l);
    if (rc != ONCE_OK) {
        once_record_list_clear(&l);
        return once__store_rc(e, rc);
    }
    /* A store that could not seek to the filter may have stopped early:
     * its last record then only says where (store.h, the list slot). */
    const once_record *resume = NULL;
    if (l.n > 0 && l.v[l.n - 1].kind == ONCE_KIND_RESUME)
        resume = &l.v[--l.n];
    json_t *arr = json_array();
    rc = arr != NULL ? ONCE_OK : ONCE_ENOMEM;
    size_t n = l.n < page ? l.n : page;
    for (size_t i = 0; i < n && rc == ONCE_OK; i++) {
        if (l.v[i].kind != ONCE_KIND_TASK)
            continue;
        json_t *t;
        rc = task_out(&l.v[i], req->history_length, &t);
        if (rc == ONCE_OK && json_array_append_new(arr, t) != 0)
            rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK && l.n > page)
        rc = token_encode(l.v[page - 1].created_at, l.v[page - 1].task_id, next_token);
    else if (rc == ONCE_OK && resume != NULL)
        rc = token_encode(resume->created_at, resume->task_id, next_token);
    if (resume != NULL)
        l.n++;   /* cleared with the others */
    once_record_list_clear(&l);
    if (rc != ONCE_OK) {
        json_decref(arr);
        next_token[0] = '\0';
        return rc;
    }
    *tasks = arr;
    return ONCE_OK;
}
