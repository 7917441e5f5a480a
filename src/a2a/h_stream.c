/*
 * h_stream.c -- SendStreamingMessage and SubscribeToTask (A2A 1.0 over SSE),
 * and the event cursor (once__a2a_stream) the HTTP layer drives.
 *
 * What a stream carries (docs/design.md section 6; docs/wire.md "Streaming"):
 *   - every frame is "id: <generation>" plus one data line holding a whole
 *     JSON-RPC response whose result is a StreamResponse (HTTP+JSON: the
 *     StreamResponse itself; a 0.3 call's: the 0.3 event, h_v03.c); the
 *     generation is the task's, so ids are consecutive and Last-Event-ID
 *     resumes exactly after the last frame the client saw: no gap, no
 *     duplicate;
 *   - a fresh stream starts with a Task snapshot at the task's current
 *     generation G (the send's own write, or the task as SubscribeToTask
 *     found it), then the stored events G+1, G+2, ...;
 *   - a replayed send (same messageId and content) replays the stored events
 *     from generation 1, or after Last-Event-ID; nothing is re-executed;
 *   - a SendStreamingMessage stream ends after the first terminal or
 *     interrupted status (or a direct Message) whose generation is at least
 *     the one the task had when the stream opened: earlier turns'
 *     input-required events replayed from the start do not end it. The
 *     turn the send started is over there (A2A 1.0 section 11: "until the
 *     task reaches a terminal or interrupted state");
 *   - a SubscribeToTask stream ends only at a terminal status: a
 *     subscription works on any non-terminal task (section 3.1.6), so one
 *     to an input-required task stays open, with pings, through the
 *     continuation that another call sends, until the task ends or the
 *     client leaves.
 * Errors found before the stream opens are ordinary error responses of the
 * call's binding (JSON-RPC, or AIP-193 for HTTP+JSON). SendStreamingMessage
 * validates and decides exactly like
 * SendMessage (it runs that handler with returnImmediately forced on).
 *
 * Invariants: a cursor keeps no events, only the last generation it
 * produced, so memory per stream is what the HTTP layer chooses to buffer;
 * a cursor holds one unit of the server's stream slots from the call that
 * opens it until it is freed; reads never write (a replay costs reads only).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "core/str.h"
#include "a2a/a2a_int.h"
#include "core/generation.h"
#include "core/jcs.h"

/* Owned by the HTTP layer's producer once the call returns; used by one
 * thread at a time, so no lock. `b` and `slots` are borrowed (the codec and
 * the server outlive their streams). */
struct once__a2a_stream {
    const once__a2a_backend *b;
    once__a2a_stream_slots *slots;   /* the unit taken; NULL = none */
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    char *idtext;                   /* the JSON-RPC id as JSON text */
    char *prefix;                   /* {"jsonrpc":"2.0","id":<id>,"result": ("" for HTTP+JSON) */
    size_t prefix_len;
    once__a2a_binding binding;       /* JSON-RPC wraps each payload, HTTP+JSON does not */
    a2a_v03 v03;                    /* an A2A 0.3 stream: each payload converted */
    char *first;                    /* payload produced before any stored event */
    int64_t first_gen;              /* its generation; < 0: a frame without id */
    int64_t after;                  /* last generation produced */
    int64_t floor;                  /* ends at a settled event >= this */
    int past_interrupts;            /* SubscribeToTask: only a terminal state settles */
    int done;
};

/* --- slots ------------------------------------------------------------------ */

enum { SLOT_TAKEN, SLOT_NONE_FREE, SLOT_SHARE_USED };

/* A unit for a stream of principal: SLOT_TAKEN, or why not. */
static int slot_take(once__a2a_stream_slots *s, const char *principal)
{
    if (s == NULL)
        return SLOT_TAKEN;
    long used = __atomic_add_fetch(&s->used, 1, __ATOMIC_ACQ_REL);
    int why = s->max > 0 && used > s->max ? SLOT_NONE_FREE
              : s->share_take != NULL && !s->share_take(s, principal) ? SLOT_SHARE_USED
                                                                       : SLOT_TAKEN;
    if (why != SLOT_TAKEN)
        __atomic_sub_fetch(&s->used, 1, __ATOMIC_ACQ_REL);
    return why;
}

static void slot_give(once__a2a_stream_slots *s, const char *principal)
{
    if (s == NULL)
        return;
    if (s->share_give != NULL)
        s->share_give(s, principal);
    __atomic_sub_fetch(&s->used, 1, __ATOMIC_ACQ_REL);
}

/* --- frames ----------------------------------------------------------------- */

/* A growable text; `fail` sticks after the first allocation failure. */
typedef struct text {
    char *p;
    size_t len, cap;
    int fail;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (!t->fail && once__text_append(&t->p, &t->len, &t->cap, 1024, s, n) != ONCE_OK)
        t->fail = 1;
}

/* Make room for n more bytes at once (frames are sized before they are
 * written, so a batch costs one allocation of its exact size). */
static void reserve(text *t, size_t n)
{
    if (!t->fail && n > 0 && once__grow_to(&t->p, &t->cap, t->len + n + 1) != ONCE_OK)
        t->fail = 1;
}

/* The size of one frame around a payload of n bytes (see frame()). */
static size_t frame_size(const once__a2a_stream *s, size_t n)
{
    return 32 + 6 + s->prefix_len + n + 3;   /* "id: <int64>\n" "data: " ... "}\n\n" */
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* One SSE frame; gen < 0 omits the id line. A stored payload is compact
 * JSON (no raw line breaks), so it fits one data line as it is. A 0.3
 * stream's payload is converted, its status update "final" when it is the
 * stream's last (last). */
static void frame(text *t, const once__a2a_stream *s, int64_t gen, const char *payload, int last)
{
    char *v03 = NULL;
    if (s->v03 && (payload = v03 = once__a2a_v03_frame(payload, last, s->v03)) == NULL) {
        t->fail = 1; /* the read fails: the client resumes by Last-Event-ID */
        return;
    }
    char id[40];
    if (gen >= 0) {
        snprintf(id, sizeof id, "id: %" PRId64 "\n", gen);
        puts_(t, id);
    }
    puts_(t, "data: ");
    put(t, s->prefix, s->prefix_len);
    puts_(t, payload);
    puts_(t, s->binding == ONCE_A2A_HTTP_JSON ? "\n\n" : "}\n\n");
    once_free(v03);
}

/* 1 if the StreamResponse ends a stream: a Message, or a Task / status
 * update whose state is terminal or (unless past_interrupts) interrupted;
 * -1 when memory ran out (not knowing, the stream must not guess that it
 * goes on). A payload is one object with one member, so its kind is its
 * first key: artifact updates (the large ones) and Messages are told apart
 * without parsing. */
static int settles(const char *payload, int past_interrupts)
{
    if (strncmp(payload, "{\"artifactUpdate\":", 18) == 0)
        return 0;
    if (strncmp(payload, "{\"message\":", 11) == 0)
        return 1;
    json_t *ev;
    int rc = once__json_loads(payload, 0, &ev, NULL);
    if (rc != ONCE_OK)
        return rc == ONCE_ENOMEM ? -1 : 0;
    int end = 0;
    if (json_object_get(ev, "message") != NULL) {
        end = 1;
    } else {
        json_t *body = json_object_get(ev, "task");
        if (body == NULL)
            body = json_object_get(ev, "statusUpdate");
        const char *st =
            json_string_value(json_object_get(json_object_get(body, "status"), "state"));
        once_state state = st ? once_state_parse(st) : ONCE_STATE_UNKNOWN;
        end = once_state_terminal(state) ||
              (!past_interrupts && once_state_interrupted(state));
    }
    json_decref(ev);
    return end;
}

/* Produce one event; marks the stream done when it ends it. */
static void emit(text *t, once__a2a_stream *s, int64_t gen, const char *payload)
{
    int end = gen < 0 ? 1 : gen >= s->floor ? settles(payload, s->past_interrupts) : 0;
    frame(t, s, gen, payload, end > 0);
    if (gen >= 0)
        s->after = gen;
    if (end < 0)
        t->fail = 1; /* the read fails: the client resumes by Last-Event-ID */
    else if (end)
        s->done = 1;
}

int once__a2a_stream_read(once__a2a_stream *s, size_t max, char **out, size_t *len, int *done)
{
    *out = NULL;
    *len = 0;
    *done = s->done;
    if (s->done)
        return ONCE_OK;
    text t = {0};
    if (s->first != NULL) {
        reserve(&t, frame_size(s, strlen(s->first)));
        emit(&t, s, s->first_gen, s->first);
        once_free(s->first);
        s->first = NULL;
        if (max > 1)
            max--;
    }
    int rc = ONCE_OK;
    if (!s->done) {
        once_event_list l;
        rc = s->b->events(s->b->ctx, s->principal, s->task_id, s->after, max ? max : 1, &l);
        size_t need = 0;
        for (size_t i = 0; rc == ONCE_OK && i < l.n; i++)
            need += frame_size(s, l.v[i].payload ? strlen(l.v[i].payload) : 0);
        reserve(&t, need);
        for (size_t i = 0; rc == ONCE_OK && i < l.n && !s->done; i++) {
            /* The store numbers events without gaps; anything else would
             * break the resume guarantee, so the stream stops instead. */
            if (l.v[i].generation != s->after + 1 || l.v[i].payload == NULL)
                rc = ONCE_ECORRUPT;
            else
                emit(&t, s, l.v[i].generation, l.v[i].payload);
        }
        once_event_list_clear(&l);
    }
    if (t.fail) {
        once_free(t.p);
        return ONCE_ENOMEM;
    }
    /* Frames already produced are handed over even when a later read
     * failed: the position moved past them. */
    if (t.len == 0) {
        once_free(t.p);
        t.p = NULL;
    }
    *out = t.p;
    *len = t.len;
    *done = s->done;
    return t.len > 0 ? ONCE_OK : rc;
}

int once__a2a_stream_wait(once__a2a_stream *s, int64_t timeout_ms, const once__wait_stop *stop)
{
    if (s->done || s->first != NULL)
        return ONCE_OK;
    return s->b->wait(s->b->ctx, s->principal, s->task_id, s->after, timeout_ms, stop);
}

int once__a2a_stream_error(once__a2a_stream *s, int rc, char **out, size_t *len)
{
    int retryable = rc == ONCE_ESTORE || rc == ONCE_EBUSY;
    char msg[200];
    snprintf(msg, sizeof msg,
             "The stream ended early (%s); resume with Last-Event-ID or read the task with "
             "GetTask",
             once_strerror(rc));
    const char *reason = retryable ? "STORE_UNAVAILABLE" : "INTERNAL";
    /* 1.0's HTTP+JSON: AIP-193; JSON-RPC and 0.3's HTTP+JSON: the JSON-RPC
     * error object (0.3's as an SSE "error" event, as @a2a-js/sdk reads it). */
    int aip193 = s->binding == ONCE_A2A_HTTP_JSON && s->v03 != A2A_V03_PROTO;
    json_t *err = aip193 ? once__a2a_rest_error(retryable ? 503 : 500, ONCE_RPC_INTERNAL, reason,
                                                msg, NULL)
                         : once__a2a_rpc_error(ONCE_RPC_INTERNAL, reason, msg, NULL);
    char *body = NULL;
    size_t blen = 0;
    int wrc = err != NULL ? once__a2a_json_dump(err, &body, &blen) : ONCE_ENOMEM;
    json_decref(err);
    *out = NULL;
    *len = 0;
    if (wrc != ONCE_OK)
        return wrc;
    text t = {0};
    if (s->binding == ONCE_A2A_HTTP_JSON) {
        if (!aip193)
            puts_(&t, "event: error\n");
        puts_(&t, "data: ");
        put(&t, body, blen);
        puts_(&t, "\n\n");
    } else {
        puts_(&t, "data: {\"jsonrpc\":\"2.0\",\"id\":");
        puts_(&t, s->idtext);
        puts_(&t, ",\"error\":");
        put(&t, body, blen);
        puts_(&t, "}\n\n");
    }
    once_free(body);
    if (t.fail) {
        once_free(t.p);
        return ONCE_ENOMEM;
    }
    s->done = 1;
    *out = t.p;
    *len = t.len;
    return ONCE_OK;
}

int64_t once__a2a_stream_position(const once__a2a_stream *s)
{
    return s->after;
}

void once__a2a_stream_free(once__a2a_stream *s)
{
    if (s == NULL)
        return;
    slot_give(s->slots, s->principal);
    once_free(s->idtext);
    once_free(s->prefix);
    once_free(s->first);
    once_free(s);
}

/* --- opening a stream --------------------------------------------------------- */

/* Compact JSON text of v (once_malloc'd), NULL on ENOMEM. */
/* A cursor lives as long as its stream (hours, ten thousand at once): what
 * it keeps is cut to its size. */
static char *fit(char *p, size_t len)
{
    char *q = p != NULL ? once_realloc(p, len + 1) : NULL;
    return q != NULL ? q : p;
}

static char *dump(const json_t *v)
{
    char *out = NULL;
    size_t len;
    return once__a2a_json_dump(v, &out, &len) == ONCE_OK ? fit(out, len) : NULL;
}

/* A cursor for the call. It takes no slot: the handler hands the one it
 * holds over (s->slots) only when the stream really opens. */
static once__a2a_stream *stream_new(a2a_call *c, const char *task_id)
{
    once__a2a_stream *s = once_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->b = once__a2a_backend_of(c->a);
    once__strlcpy(s->principal, c->req->principal, sizeof s->principal);
    once__strlcpy(s->task_id, task_id ? task_id : "", sizeof s->task_id);
    s->first_gen = -1;
    s->binding = c->binding;
    s->v03 = c->v03;
    s->idtext = dump(c->id ? c->id : json_null());
    text t = {0};
    if (s->idtext == NULL)
        t.fail = 1;
    if (s->binding == ONCE_A2A_HTTP_JSON) {
        put(&t, "", 0);   /* the payload is the whole data line */
    } else {
        puts_(&t, "{\"jsonrpc\":\"2.0\",\"id\":");
        puts_(&t, s->idtext ? s->idtext : "");
        puts_(&t, ",\"result\":");
    }
    if (t.fail) {
        once_free(t.p);
        once__a2a_stream_free(s);
        return NULL;
    }
    s->prefix = fit(t.p, t.len);
    s->prefix_len = t.len;
    return s;
}

/* Last-Event-ID: absent (*has = 0) or a generation (decimal, >= 0). */
static int last_event_id(a2a_call *c, int *has, int64_t *gen)
{
    *has = 0;
    *gen = 0;
    const char *v = c->req->last_event_id;
    if (v == NULL)
        return ONCE_OK;
    while (*v == ' ' || *v == '\t')
        v++;
    char *end = NULL;
    long long n = (*v >= '0' && *v <= '9') ? strtoll(v, &end, 10) : -1;
    while (end != NULL && (*end == ' ' || *end == '\t'))
        end++;
    if (n < 0 || end == NULL || *end != '\0' || n == LLONG_MAX) {
        a2a_verr e;
        once__a2a_verr(&e, "Last-Event-ID",
                   "Last-Event-ID must be the id of an event this server sent (a generation)");
        return once__a2a_fail_params(c, &e);
    }
    *has = 1;
    *gen = (int64_t)n;
    return ONCE_OK;
}

static int too_many(a2a_call *c, int why)
{
    once__a2a_stream_slots *s = c->req->slots;
    if (why == SLOT_SHARE_USED)
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "TOO_MANY_STREAMS",
                       "You already hold your share of %ld of the server's %ld streams; close "
                       "one, retry later or poll with GetTask",
                       s->share, s->max);
    else
        once__a2a_fail(c, ONCE_RPC_INTERNAL, "TOO_MANY_STREAMS",
                       "The server already serves its maximum of %ld streams; retry later or "
                       "poll with GetTask",
                       s ? s->max : 0L);
    c->http_status = 503;
    c->retry_after = 1;
    return ONCE_EINVAL;
}

/* What both stream methods check before any work: a well-formed
 * Last-Event-ID, and a free stream slot (taken here; the stream's free
 * gives it back). */
static int stream_admit(a2a_call *c, int *has_resume, int64_t *resume)
{
    if (last_event_id(c, has_resume, resume) != ONCE_OK)
        return ONCE_EINVAL;
    int why = slot_take(c->req->slots, c->req->principal);
    if (why != SLOT_TAKEN)
        return too_many(c, why);
    return ONCE_OK;
}

static int ahead(a2a_call *c, const char *task_id, int64_t gen)
{
    a2a_verr e;
    once__a2a_verr(&e, "Last-Event-ID",
               "Last-Event-ID is past the last event of task %s (generation %" PRId64 ")",
               task_id, gen);
    return once__a2a_fail_params(c, &e);
}

static int terminal(a2a_call *c, const char *task_id, const char *state)
{
    return once__a2a_fail_state(c, ONCE_RPC_UNSUPPORTED_OPERATION, "TASK_TERMINAL", task_id,
                                state,
                                " (terminal): there is nothing to subscribe to; GetTask "
                                "returns its final state");
}

int once__a2a_backend_streams(const once__a2a_backend *b)
{
    return b->events != NULL && b->head != NULL && b->wait != NULL;
}

/* The Task's generation and state. */
static void task_head(const json_t *task, int64_t *gen, once_state *state)
{
    *gen = once__generation_of(task);
    const char *st =
        json_string_value(json_object_get(json_object_get(task, "status"), "state"));
    *state = st ? once_state_parse(st) : ONCE_STATE_UNKNOWN;
}

/* A copy of params whose configuration says returnImmediately: the stream,
 * not the call, waits for the task. A malformed configuration is left as
 * it is for SendMessage's validation to refuse. */
static json_t *immediate_params(const json_t *params)
{
    json_t *p = json_copy((json_t *)params);
    if (p == NULL)
        return NULL;
    json_t *cfg = json_object_get(p, "configuration");
    json_t *ncfg = NULL;
    if (cfg == NULL || json_is_null(cfg))
        ncfg = json_object();
    else if (json_is_object(cfg) &&
             (json_object_get(cfg, "returnImmediately") == NULL ||
              json_is_boolean(json_object_get(cfg, "returnImmediately"))))
        ncfg = json_copy(cfg);
    else
        return p;
    if (ncfg == NULL || json_object_set_new(ncfg, "returnImmediately", json_true()) != 0 ||
        json_object_set_new(p, "configuration", ncfg) != 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* Fill the cursor for a send's result (c->result, already validated). */
static int open_send(a2a_call *c, once__a2a_stream **out, int has_resume, int64_t resume)
{
    json_t *task = json_object_get(c->result, "task");
    json_t *msg = json_object_get(c->result, "message");
    const char *task_id = json_string_value(json_object_get(task, "id"));
    *out = NULL;
    if (task == NULL && msg == NULL)
        return once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "Internal error (no result)");

    once__a2a_stream *s = stream_new(c, task_id);
    if (s == NULL)
        return ONCE_ENOMEM;
    int rc = ONCE_OK;
    if (task == NULL) {
        /* A direct Message: exactly one Message, then the stream closes. */
        s->first = dump(c->result);
        s->first_gen = -1;
        rc = s->first ? ONCE_OK : ONCE_ENOMEM;
    } else {
        int64_t gen;
        once_state state;
        task_head(task, &gen, &state);
        s->floor = gen;
        if (!c->replayed) {
            /* This call wrote generation gen: start with that Task. */
            s->first = dump(c->result);
            s->first_gen = gen;
            s->after = gen;
            rc = s->first ? ONCE_OK : ONCE_ENOMEM;
        } else if (has_resume && resume > gen) {
            once__a2a_stream_free(s);
            return ahead(c, task_id, gen);
        } else {
            /* A replay: the stored events, from the start or the resume point. */
            s->after = has_resume ? resume : 0;
            s->done = s->after >= gen &&
                      (once_state_terminal(state) || once_state_interrupted(state));
        }
    }
    if (rc != ONCE_OK) {
        once__a2a_stream_free(s);
        return rc;
    }
    *out = s;
    return ONCE_OK;
}

int once__a2a_h_send_streaming(a2a_call *c)
{
    int has_resume;
    int64_t resume;
    int admit = stream_admit(c, &has_resume, &resume);
    if (admit != ONCE_OK)
        return admit;

    json_t *params = immediate_params(c->params);
    if (params == NULL) {
        slot_give(c->req->slots, c->req->principal);
        return ONCE_ENOMEM;
    }
    json_t *saved = c->params;
    c->params = params;
    c->tree_result = 1;   /* open_send reads c->result */
    int rc = once__a2a_h_send(c);
    c->params = saved;
    json_decref(params);
    if (rc == ONCE_OK)
        rc = open_send(c, &c->stream, has_resume, resume);
    if (rc != ONCE_OK) {
        slot_give(c->req->slots, c->req->principal);
        return rc;
    }
    c->stream->slots = c->req->slots;
    return ONCE_OK;
}

int once__a2a_h_subscribe(a2a_call *c)
{
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    const char *id;
    if (once__a2a_id_param(c, "id", NULL, &id) != ONCE_OK)
        return ONCE_EINVAL;
    if (once__a2a_tenant_param(c) != ONCE_OK)
        return ONCE_EINVAL;
    int has_resume;
    int64_t resume;
    int admit = stream_admit(c, &has_resume, &resume);
    if (admit != ONCE_OK)
        return admit;

    const char *principal = c->req->principal;
    json_t *task = NULL;
    int64_t expired_at = 0, gen = 0;
    once_state state = ONCE_STATE_UNKNOWN;
    int rc;
    if (has_resume) {
        /* A resume needs no snapshot: the generation and state will do,
         * read without building the task's JSON. */
        rc = b->head(b->ctx, principal, id, &gen, &state);
        if (rc == ONCE_ETOMBSTONE)   /* ask again, for expiredAt */
            rc = b->get(b->ctx, principal, id, 0, &task, &expired_at);
        if (rc == ONCE_OK && task != NULL)
            rc = ONCE_ERROR;
    } else {
        rc = b->get(b->ctx, principal, id, -1, &task, &expired_at);
        if (rc == ONCE_OK && task == NULL)
            rc = ONCE_ERROR;
        if (rc == ONCE_OK)
            task_head(task, &gen, &state);
    }
    if (rc != ONCE_OK) {
        json_decref(task);
        slot_give(c->req->slots, c->req->principal);
        if (rc == ONCE_ENOTFOUND)
            return once__a2a_fail_not_found(c, id);
        if (rc == ONCE_ETOMBSTONE)
            return once__a2a_fail_expired(c, id, expired_at);
        return once__a2a_fail_engine(c, rc);
    }
    once__a2a_stream *s = NULL;
    if (has_resume && resume > gen)
        rc = ahead(c, id, gen);
    else if (once_state_terminal(state) && (!has_resume || resume >= gen))
        rc = terminal(c, id, once_state_name(state));   /* A2A 1.0: -32004 */
    if (rc == ONCE_OK && (s = stream_new(c, id)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK) {
        s->floor = gen;
        s->past_interrupts = 1;
        if (!has_resume) {
            json_t *ev = json_pack("{s:O}", "task", task);
            s->first = ev != NULL ? dump(ev) : NULL;
            json_decref(ev);
            s->first_gen = gen;
            s->after = gen;
            if (s->first == NULL)
                rc = ONCE_ENOMEM;
        } else {
            s->after = resume;   /* open: the task is not terminal past resume */
        }
    }
    json_decref(task);
    if (rc != ONCE_OK) {
        once__a2a_stream_free(s);
        slot_give(c->req->slots, c->req->principal);
        return rc;
    }
    s->slots = c->req->slots;
    c->stream = s;
    return ONCE_OK;
}

/* --- watching without a thread (the SSE hub) ---------------------------------- */

int once__a2a_stream_watch(once__a2a_stream *s, void (*fn)(void *arg), void *arg, void **handle)
{
    *handle = NULL;
    if (s->b->watch == NULL || s->b->unwatch == NULL || s->task_id[0] == '\0' || s->done)
        return ONCE_OK;
    return s->b->watch(s->b->ctx, s->principal, s->task_id, fn, arg, handle);
}

void once__a2a_stream_unwatch(once__a2a_stream *s, void *handle)
{
    if (handle != NULL)
        s->b->unwatch(s->b->ctx, handle);
}

int64_t once__a2a_stream_poll_ms(const once__a2a_stream *s, const void *watch, int64_t polling)
{
    if (watch == NULL || s->b->follow_poll_ms == NULL)
        return polling;
    return s->b->follow_poll_ms(s->b->ctx) > 0 ? polling : 0;
}
