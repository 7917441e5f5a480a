/*
 * push.c -- push notification configs (A2A 1.0 Create / Get / List /
 * DeleteTaskPushNotificationConfig) over the task record, and the delivery
 * settings (push.h).
 *
 * A config change is a CAS of the record with a new push_json and no event
 * (generation unchanged), retried on ECONFLICT like every engine write; the
 * store reshapes the delivery rows in the same atomic write. So a config
 * exists exactly when its delivery row does, and a deleted config gets no
 * further POST once the delete returned (a POST already in flight may
 * still land, and its outcome is refused: the row is gone).
 *
 * Invariants: a stored element always passed once__push_elem_make (url
 * allowed by the SSRF guard when it was stored, header-safe token and
 * credentials); a new config only receives events after the generation
 * current when it was stored.
 */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "core/errbuf.h"
#include "core/jcs.h"
#include "core/strv.h"
#include "engine/push_int.h"
#include "once/webhook_sig.h"

#define PUSH_TRIES 16

/* ------------------------------------------------------------------------
 * Settings.
 */

static void push_free(struct once__push *p)
{
    if (p == NULL)
        return;
    once__strv_free(p->secrets, p->nsecrets);
    once__strv_free(p->resolve, p->nresolve);
    once_free(p->allow);
    once_free(p->threads);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    once_free(p);
}

/* A state from o (NULL = defaults). ONCE_EINVAL with err for bad settings. */
static int push_new(const once_push_options *o, struct once__push **out, char *err, size_t errlen)
{
    static const once_push_options none;
    if (o == NULL)
        o = &none;
    *out = NULL;
    if (o->max_attempts < 0 || o->timeout_ms < 0 || o->backoff_ms < 0 || o->backoff_cap_ms < 0 ||
        o->poll_ms < 0 || o->threads < 0 || o->threads > 64) {
        snprintf(err, errlen, "push: negative or out-of-range setting");
        return ONCE_EINVAL;
    }
    if (o->nsecrets > ONCE__PUSH_SECRETS_MAX) {
        snprintf(err, errlen, "push: at most %d signing secrets", ONCE__PUSH_SECRETS_MAX);
        return ONCE_EINVAL;
    }
    for (size_t i = 0; i < o->nsecrets; i++) {
        uint8_t key[ONCE_WEBHOOK_KEY_MAX];
        size_t klen;
        if (o->secrets[i] == NULL || once_webhook_key(o->secrets[i], key, &klen) != ONCE_OK ||
            klen < 16) {
            snprintf(err, errlen,
                     "push secret %zu is not usable: give 16 to %d bytes, or whsec_<base64>", i + 1,
                     ONCE_WEBHOOK_KEY_MAX);
            return ONCE_EINVAL;
        }
    }
    struct once__push *p = once_calloc(1, sizeof *p);
    if (p == NULL)
        return ONCE_ENOMEM;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        once_free(p);
        return ONCE_ENOMEM;
    }
    if (once__cond_init(&p->cv) != ONCE_OK) {
        pthread_mutex_destroy(&p->mu);
        once_free(p);
        return ONCE_ENOMEM;
    }
    p->opt = *o;
    once_push_options *c = &p->opt;
    if (c->max_attempts == 0)
        c->max_attempts = 10;
    if (c->timeout_ms == 0)
        c->timeout_ms = 10000;
    if (c->backoff_ms == 0)
        c->backoff_ms = 1000;
    if (c->backoff_cap_ms == 0)
        c->backoff_cap_ms = 300000;
    if (c->backoff_cap_ms < c->backoff_ms)
        c->backoff_cap_ms = c->backoff_ms;
    if (c->poll_ms == 0)
        c->poll_ms = 250;
    if (c->threads == 0)
        c->threads = 4;
    /* Long enough for a POST that runs into its timeout plus the outcome's
     * write; a replica that dies frees its rows after this. */
    p->lease_ms = 3 * c->timeout_ms > 1000 ? 3 * c->timeout_ms : 1000;

    int rc = ONCE_OK;
    p->nsecrets = o->nsecrets;
    p->nresolve = o->nresolve;
    if ((p->secrets = once__strv_dup(o->secrets, o->nsecrets)) == NULL ||
        (p->resolve = once__strv_dup(o->resolve, o->nresolve)) == NULL ||
        (p->allow = once_calloc(o->nallow ? o->nallow : 1, sizeof *p->allow)) == NULL)
        rc = ONCE_ENOMEM;   /* push_free skips a NULL array, whatever its count */
    for (size_t i = 0; rc == ONCE_OK && i < o->nallow; i++) {
        if (once__cidr_parse(o->allow[i], &p->allow[i]) != ONCE_OK) {
            snprintf(err, errlen, "push: --push-allow %s is not a CIDR (e.g. 10.0.0.0/8, ::1/128)",
                     o->allow[i] ? o->allow[i] : "(null)");
            rc = ONCE_EINVAL;
        }
        p->nallow = i + 1;
    }
    c->secrets = (const char *const *)p->secrets;
    c->resolve = (const char *const *)p->resolve;
    c->allow = NULL; /* parsed into p->allow */
    if (rc != ONCE_OK) {
        push_free(p);
        return rc;
    }
    *out = p;
    return ONCE_OK;
}

int once__engine_push_supported(const once__engine *e)
{
    return e != NULL && (once_store_caps(e->store) & ONCE_STORE_PUSH) != 0;
}

int once__engine_push_setup(once__engine *e, const once_push_options *o, char *err, size_t errlen)
{
    err = once__errbuf(err, &errlen);
    if (e == NULL)
        return ONCE_EINVAL;
    struct once__push *p;
    int rc = push_new(o, &p, err, errlen);
    if (rc != ONCE_OK)
        return rc;
    pthread_mutex_lock(&e->mu);
    struct once__push *old = e->push;
    if (old != NULL && old->threads != NULL) {
        pthread_mutex_unlock(&e->mu);
        push_free(p);
        snprintf(err, errlen, "push: set up after the delivery threads started");
        return ONCE_EINVAL;
    }
    __atomic_store_n(&e->push, p, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&e->mu);
    push_free(old);
    return ONCE_OK;
}

struct once__push *once__push_get(once__engine *e)
{
    pthread_mutex_lock(&e->mu);
    if (e->push == NULL) {
        char err[8];
        struct once__push *p = NULL;
        (void)push_new(NULL, &p, err, sizeof err);
        __atomic_store_n(&e->push, p, __ATOMIC_RELEASE);
    }
    struct once__push *p = e->push;
    pthread_mutex_unlock(&e->mu);
    return p;
}

void once__push_free_state(once__engine *e)
{
    struct once__push *p = __atomic_exchange_n(&e->push, NULL, __ATOMIC_ACQ_REL);
    push_free(p);
}

void once__engine_push_stats(once__engine *e, once_push_stats *out)
{
    memset(out, 0, sizeof *out);
    struct once__push *p = e != NULL ? __atomic_load_n(&e->push, __ATOMIC_ACQUIRE) : NULL;
    if (p == NULL)
        return;
    const uint64_t *src = (const uint64_t *)&p->stats;
    uint64_t *dst = (uint64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * Config <-> stored element.
 */

static int invalid(once_push_res *res, const char *field, const char *why)
{
    res->field = field;
    once__strlcpy(res->detail, why, sizeof res->detail);
    return ONCE_EINVAL;
}

/* A header value we may send: printable, no CR / LF / control bytes. */
static int header_safe(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

/* An HTTP auth-scheme is a token (RFC 9110 5.6.2). */
static int token_chars(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (*s == '\0')
        return 0;
    for (const char *p = s; *p; p++) {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr(extra, *p) != NULL))
            return 0;
    }
    return 1;
}

int once__push_elem_make(once__engine *e, const json_t *cfg, int64_t since, json_t **elem,
                         once_push_res *res)
{
    struct once__push *p = once__push_get(e);
    *elem = NULL;
    if (p == NULL)
        return ONCE_ENOMEM;
    if (!json_is_object(cfg))
        return invalid(res, "", "the push notification config must be an object");
    const char *url = json_string_value(json_object_get(cfg, "url"));
    if (url == NULL)
        return invalid(res, "url", "url is required (a string)");
    char why[sizeof res->detail];
    int rc = once__push_url_check(url, p->allow, p->nallow, why, sizeof why);
    if (rc == ONCE_EINVAL)
        return invalid(res, "url", why);
    if (rc != ONCE_OK)
        return rc;

    const json_t *idv = json_object_get(cfg, "id");
    char minted[ONCE_UUID_LEN + 1];
    const char *id = json_string_value(idv);
    if (idv != NULL && !json_is_null(idv) && (id == NULL || id[0] != '\0')) {
        if (id == NULL || !once_id_valid(id))
            return invalid(res, "id",
                           "id must be 1..128 characters of [A-Za-z0-9._:-] starting with a "
                           "letter or digit");
    } else {
        if ((rc = once_uuid4(e->rng, minted)) != ONCE_OK)
            return rc;
        id = minted;
    }
    json_t *out = json_pack("{s:s, s:I, s:s}", "id", id, "since", (json_int_t)since, "url", url);
    if (out == NULL)
        return ONCE_ENOMEM;

    const json_t *tok = json_object_get(cfg, "token");
    const char *token = json_string_value(tok);
    if (tok != NULL && !json_is_null(tok) && token == NULL)
        rc = invalid(res, "token", "token must be a string");
    else if (token != NULL && (strlen(token) > ONCE__PUSH_TOKEN_MAX || !header_safe(token)))
        rc = invalid(res, "token",
                     "token must be at most 1024 printable characters (it is sent as the "
                     "X-A2A-Notification-Token header)");
    else if (token != NULL && token[0] != '\0' &&
             json_object_set_new(out, "token", json_string(token)) != 0)
        rc = ONCE_ENOMEM;

    const json_t *auth = json_object_get(cfg, "authentication");
    if (rc == ONCE_OK && auth != NULL && !json_is_null(auth)) {
        const char *scheme = json_string_value(json_object_get(auth, "scheme"));
        const json_t *cv = json_object_get(auth, "credentials");
        const char *cred = json_string_value(cv);
        if (!json_is_object(auth))
            rc = invalid(res, "authentication", "authentication must be an object");
        else if (scheme == NULL || !token_chars(scheme) || strlen(scheme) > 64)
            rc = invalid(res, "authentication.scheme",
                         "authentication.scheme is required: an HTTP auth scheme such as Bearer");
        else if (cv != NULL && !json_is_null(cv) &&
                 (cred == NULL || strlen(cred) > ONCE__PUSH_TOKEN_MAX || !header_safe(cred)))
            rc = invalid(res, "authentication.credentials",
                         "authentication.credentials must be at most 1024 printable characters");
        else {
            json_t *a = json_pack("{s:s}", "scheme", scheme);
            if (a == NULL ||
                (cred != NULL && json_object_set_new(a, "credentials", json_string(cred)) != 0) ||
                json_object_set_new(out, "authentication", a) != 0)
                rc = ONCE_ENOMEM;
        }
    }
    /* A config set over A2A 0.3 gets 0.3 bodies (the codec says so, after
     * the shape check). */
    if (rc == ONCE_OK && json_is_true(json_object_get(cfg, ONCE__PUSH_V03)) &&
        json_object_set_new(out, ONCE__PUSH_V03, json_true()) != 0)
        rc = ONCE_ENOMEM;
    /* The trace context of the request that subscribed travels with every
     * delivery (a traceparent header), whichever replica makes it. */
    const char *tp = once__log_ctx()->traceparent;
    if (rc == ONCE_OK && tp[0] != '\0' &&
        json_object_set_new(out, "traceparent", json_string(tp)) != 0)
        rc = ONCE_ENOMEM;
    if (rc != ONCE_OK) {
        json_decref(out);
        return rc;
    }
    *elem = out;
    return ONCE_OK;
}

/* The record's configs as a JSON array in *a (empty when none): ONCE_OK,
 * ONCE_ENOMEM, or ONCE_ECORRUPT when the stored text is not an array. */
static int configs_of(const once_record *r, json_t **a)
{
    if (r->push_json == NULL)
        return (*a = json_array()) != NULL ? ONCE_OK : ONCE_ENOMEM;
    int rc = once__json_loads(r->push_json, 0, a, NULL);
    if (rc == ONCE_OK && !json_is_array(*a)) {
        json_decref(*a);
        *a = NULL;
        rc = ONCE_EPARSE;
    }
    return rc == ONCE_EPARSE ? ONCE_ECORRUPT : rc;
}

static size_t find_elem(const json_t *a, const char *id)
{
    size_t i;
    json_t *el;
    json_array_foreach(a, i, el)
    {
        const char *eid = json_string_value(json_object_get(el, "id"));
        if (eid != NULL && strcmp(eid, id) == 0)
            return i;
    }
    return (size_t)-1;
}

/* Is the delivery row of config id disabled? (0 when unknown.) */
static int row_disabled(once__engine *e, const once_record *cur, const char *id)
{
    once_push_row_list rows;
    int disabled = 0;
    if (once_store_push_rows(e->store, cur->principal, cur->task_id, &rows) == ONCE_OK) {
        for (size_t i = 0; i < rows.n; i++)
            if (strcmp(rows.v[i].config_id, id) == 0)
                disabled = rows.v[i].disabled;
    }
    once_push_row_list_clear(&rows);
    return disabled;
}

int once__push_json_put(once__engine *e, const once_record *cur, json_t *elem, char **out,
                        once_push_res *res)
{
    *out = NULL;
    json_t *a;
    int rc = configs_of(cur, &a);
    if (rc != ONCE_OK)
        return rc;
    const char *id = json_string_value(json_object_get(elem, "id"));
    size_t at = find_elem(a, id);
    if (at != (size_t)-1) {
        /* Replace: keep the progress, unless the config was given up on;
         * then start over from now. */
        json_t *old_since = json_object_get(json_array_get(a, at), "since");
        json_int_t since =
            row_disabled(e, cur, id) ? (json_int_t)cur->generation : json_integer_value(old_since);
        if (json_object_set_new(elem, "since", json_integer(since)) != 0 ||
            json_array_set(a, at, elem) != 0)
            rc = ONCE_ENOMEM;
    } else if (json_array_size(a) >= ONCE_PUSH_CONFIGS_MAX) {
        res->field = "id";
        snprintf(res->detail, sizeof res->detail,
                 "task %s already has %d push notification configs; delete one first", cur->task_id,
                 ONCE_PUSH_CONFIGS_MAX);
        rc = ONCE_EINVAL;
    } else if (json_array_append(a, elem) != 0) {
        rc = ONCE_ENOMEM;
    }
    if (rc == ONCE_OK && (*out = once__json_text(a)) == NULL)
        rc = ONCE_ENOMEM;
    json_decref(a);
    return rc;
}

/* ------------------------------------------------------------------------
 * The wire shape.
 */

static json_t *delivery_status(once__engine *e, const once_push_row *r)
{
    json_t *d = json_pack("{s:I, s:I, s:b, s:I, s:I, s:I}", "deliveredGeneration",
                          (json_int_t)r->delivered, "attempts", (json_int_t)r->attempts, "disabled",
                          r->disabled, "deliveries", (json_int_t)r->deliveries, "retries",
                          (json_int_t)r->retries, "failures", (json_int_t)r->failures);
    if (d == NULL)
        return NULL;
    char ts[25];
    int bad = 0; /* a member left out would read as "not the case" */
    if (!r->disabled && r->next_attempt_at > 0) {
        once_format_time(r->next_attempt_at, ts);
        bad |= json_object_set_new(d, "nextAttemptAt", json_string(ts));
    }
    if (r->last_error[0])
        bad |= json_object_set_new(d, "lastError", json_string(r->last_error));
    if (r->lease_owner[0] && r->lease_until > once__now(e))
        bad |= json_object_set_new(d, "leaseOwner", json_string(r->lease_owner));
    if (bad != 0) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* TaskPushNotificationConfig for a stored element (+ "delivery"). */
static json_t *config_out(once__engine *e, const once_record *r, const json_t *el,
                          const once_push_row_list *rows)
{
    json_t *c = json_pack("{s:O, s:s, s:O}", "id", json_object_get(el, "id"), "taskId", r->task_id,
                          "url", json_object_get(el, "url"));
    if (c == NULL)
        return NULL;
    const json_t *tok = json_object_get(el, "token");
    const json_t *auth = json_object_get(el, "authentication");
    if ((tok != NULL && json_object_set(c, "token", (json_t *)tok) != 0) ||
        (auth != NULL && json_object_set(c, "authentication", (json_t *)auth) != 0)) {
        json_decref(c);
        return NULL;
    }
    const char *id = json_string_value(json_object_get(el, "id"));
    for (size_t i = 0; rows != NULL && i < rows->n; i++) {
        if (strcmp(rows->v[i].config_id, id) != 0)
            continue;
        json_t *d = delivery_status(e, &rows->v[i]);
        if (d == NULL || json_object_set_new(c, "delivery", d) != 0) {
            json_decref(c);
            return NULL;
        }
    }
    return c;
}

/* ------------------------------------------------------------------------
 * The methods.
 */

/* Load the task a config method names. */
static int load_task(once__engine *e, const char *principal, const char *task_id, once_record *cur,
                     once_push_res *res)
{
    once_tombstone tomb;
    if (!once__engine_push_supported(e))
        return ONCE_EUNSUPPORTED;
    if (principal == NULL || task_id == NULL || !once_id_valid(task_id)) {
        res->field = "taskId";
        snprintf(res->detail, sizeof res->detail, "taskId is not a valid task ID");
        return ONCE_EINVAL;
    }
    int rc = once_store_load(e->store, principal, task_id, cur, &tomb);
    if (rc == ONCE_ETOMBSTONE)
        res->expired_at = tomb.expired_at;
    if (rc == ONCE_OK && cur->kind == ONCE_KIND_MESSAGE) {
        once_record_clear(cur);
        rc = ONCE_ENOTFOUND; /* a direct Message is not a task (GetTask agrees) */
    }
    if (rc == ONCE_ENOTFOUND)
        res->field = "taskId";
    return once__store_rc(e, rc);
}

static int rows_for(once__engine *e, const once_record *r, int status, once_push_row_list *rows)
{
    memset(rows, 0, sizeof *rows);
    if (!status)
        return ONCE_OK;
    return once__store_rc(e, once_store_push_rows(e->store, r->principal, r->task_id, rows));
}

/* Write cur again with its push configs replaced by pj (taken; NULL for
 * none): what a push config create or delete changes. */
static int write_push_json(once__engine *e, const once_record *cur, char *pj)
{
    once_record next;
    int rc = once_record_copy(&next, cur);

    if (rc == ONCE_OK) {
        once_free(next.push_json);
        next.push_json = pj;
        pj = NULL;
        rc = once__write(e, cur, &next, NULL);
        once_record_clear(&next);
    }
    once_free(pj);
    return rc;
}

static void res_reset(once_push_res *res)
{
    memset(res, 0, sizeof *res);
}

/* What a create or delete does to the task's push configs: ONCE_OK with
 * *write set and *pj the new configs' text (NULL for none), or *write 0
 * when nothing is to change; or an error. */
typedef int (*push_edit)(once__engine *e, const once_record *cur, void *arg, once_push_res *res,
                         char **pj, int *write);

/* Load the task, let edit() decide its new push configs, write them; again
 * (up to PUSH_TRIES times) while another writer moves the record first. */
static int edit_push_json(once__engine *e, const char *principal, const char *task_id,
                          push_edit edit, void *arg, once_push_res *res)
{
    int rc = ONCE_EBUSY;
    for (int tries = 0; tries < PUSH_TRIES && rc == ONCE_EBUSY; tries++) {
        once_record cur;
        rc = load_task(e, principal, task_id, &cur, res);
        if (rc != ONCE_OK)
            return rc;
        char *pj = NULL;
        int write = 0;
        rc = edit(e, &cur, arg, res, &pj, &write);
        if (rc == ONCE_OK && write)
            rc = write_push_json(e, &cur, pj);
        else
            once_free(pj);
        once_record_clear(&cur);
        if (rc == ONCE_ECONFLICT)
            rc = ONCE_EBUSY; /* lost a race: again */
    }
    return rc;
}

/* The config to add, and its id once minted: it must stay the same across
 * CAS retries. */
typedef struct create_arg {
    const json_t *config;
    char id[ONCE_ID_MAX + 1];
} create_arg;

static int create_edit(once__engine *e, const once_record *cur, void *arg, once_push_res *res,
                       char **pj, int *write)
{
    create_arg *a = arg;
    json_t *elem = NULL;
    int rc = ONCE_OK;
    json_t *cfg = json_deep_copy(a->config);
    if (cfg == NULL || (a->id[0] && json_object_set_new(cfg, "id", json_string(a->id)) != 0))
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = once__push_elem_make(e, cfg, cur->generation, &elem, res);
    json_decref(cfg);
    if (rc == ONCE_OK) {
        once__strlcpy(a->id, json_string_value(json_object_get(elem, "id")), sizeof a->id);
        rc = once__push_json_put(e, cur, elem, pj, res);
    }
    json_decref(elem);
    *write = 1;
    return rc;
}

int once__engine_push_create(once__engine *e, const char *principal, const json_t *config, int status,
                            json_t **out, once_push_res *res)
{
    *out = NULL;
    res_reset(res);
    const char *task_id = json_string_value(json_object_get(config, "taskId"));
    create_arg a = {config, ""};
    int rc = edit_push_json(e, principal, task_id, create_edit, &a, res);
    if (rc != ONCE_OK)
        return rc;
    return once__engine_push_get(e, principal, task_id, a.id, status, out, res);
}

/* What get and list read: the task's record, its push configs and, with
 * status, their delivery rows. */
typedef struct push_view {
    once_record cur;
    json_t *configs;
    once_push_row_list rows;
} push_view;

static void view_close(push_view *v)
{
    once_push_row_list_clear(&v->rows);
    json_decref(v->configs);
    once_record_clear(&v->cur);
}

/* ONCE_OK with *v to close, else nothing held. */
static int view_open(once__engine *e, const char *principal, const char *task_id, int status,
                     push_view *v, once_push_res *res)
{
    memset(v, 0, sizeof *v);
    int rc = load_task(e, principal, task_id, &v->cur, res);
    if (rc != ONCE_OK)
        return rc;
    rc = configs_of(&v->cur, &v->configs);
    if (rc == ONCE_OK)
        rc = rows_for(e, &v->cur, status, &v->rows);
    if (rc != ONCE_OK)
        view_close(v);
    return rc;
}

int once__engine_push_get(once__engine *e, const char *principal, const char *task_id,
                         const char *config_id, int status, json_t **out, once_push_res *res)
{
    push_view v;
    *out = NULL;
    res_reset(res);
    int rc = view_open(e, principal, task_id, status, &v, res);
    if (rc != ONCE_OK)
        return rc;
    size_t at = config_id != NULL ? find_elem(v.configs, config_id) : (size_t)-1;
    if (at == (size_t)-1) {
        res->field = "id";
        snprintf(res->detail, sizeof res->detail, "task %s has no push notification config %s",
                 v.cur.task_id, config_id != NULL ? config_id : "(none)");
        rc = ONCE_ENOTFOUND;
    } else if ((*out = config_out(e, &v.cur, json_array_get(v.configs, at), &v.rows)) == NULL) {
        rc = ONCE_ENOMEM;
    }
    view_close(&v);
    return rc;
}

int once__engine_push_list(once__engine *e, const char *principal, const char *task_id, int status,
                          json_t **out, once_push_res *res)
{
    push_view v;
    *out = NULL;
    res_reset(res);
    int rc = view_open(e, principal, task_id, status, &v, res);
    if (rc != ONCE_OK)
        return rc;
    json_t *list = json_array();
    if (list == NULL)
        rc = ONCE_ENOMEM;
    for (size_t i = 0; rc == ONCE_OK && i < json_array_size(v.configs); i++) {
        json_t *c = config_out(e, &v.cur, json_array_get(v.configs, i), &v.rows);
        if (c == NULL || json_array_append_new(list, c) != 0)
            rc = ONCE_ENOMEM;
    }
    view_close(&v);
    if (rc != ONCE_OK) {
        json_decref(list);
        return rc;
    }
    *out = list;
    return ONCE_OK;
}

/* arg: the (const char *) id of the config to remove. */
static int delete_edit(once__engine *e, const once_record *cur, void *arg, once_push_res *res,
                       char **pj, int *write)
{
    const char *config_id = *(const char **)arg;
    json_t *a = NULL;
    (void)e;
    (void)res;
    int rc = configs_of(cur, &a); /* fails: no memory, or a stored list that is not one */
    size_t at = a != NULL ? find_elem(a, config_id) : (size_t)-1;
    if (rc == ONCE_OK && at != (size_t)-1) { /* absent: already deleted, nothing to write */
        json_array_remove(a, at);
        if (json_array_size(a) > 0 && (*pj = once__json_text(a)) == NULL)
            rc = ONCE_ENOMEM;
        *write = 1;
    }
    json_decref(a);
    return rc;
}

int once__engine_push_delete(once__engine *e, const char *principal, const char *task_id,
                            const char *config_id, once_push_res *res)
{
    res_reset(res);
    if (config_id == NULL || !once_id_valid(config_id)) {
        res->field = "id";
        snprintf(res->detail, sizeof res->detail, "id is not a valid push config id");
        return ONCE_EINVAL;
    }
    return edit_push_json(e, principal, task_id, delete_edit, &config_id, res);
}
