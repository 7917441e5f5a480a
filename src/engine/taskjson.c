/*
 * taskjson.c -- the A2A 1.0 Task object as the engine stores it, and the
 * StreamResponse payloads its mutations emit (docs/design.md section 6).
 *
 * Stored shape: {id, contextId, status{state, timestamp[, message]},
 * [artifacts], history, [metadata]}. The generation is not stored inside the
 * JSON (the record holds it); it is added when a Task is read out and put in
 * every event payload, so a reader always sees the number of the mutation
 * that produced what it reads, in metadata (core/generation.h).
 *
 * Nothing here touches the store; every function builds or edits jansson
 * values and reports ONCE_ENOMEM / ONCE_EINVAL.
 *
 * A message or artifact put into a task is shared (a reference), not
 * copied: a deep copy of each cost more than the rest of a new task's
 * tree. So nothing edits a value below a task's top-level members in
 * place: a write replaces the status object, appends to the history or
 * artifacts array, or (an artifact append) puts a new artifact object in
 * place of the old one. The values handed in are never changed after
 * (the work context keeps a write's to apply it again after a conflict).
 */
#include <string.h>

#include "core/generation.h"
#include "core/jcs.h"
#include "engine/engine_int.h"

char *once__json_text(const json_t *j)
{
    char *buf = NULL;
    return once__json_write(j, &buf, NULL) == ONCE_OK ? buf : NULL;
}

json_t *once__json_parse(const char *text)
{
    json_t *j;
    return once__json_object(text, &j) == ONCE_OK ? j : NULL;
}

/*
 * The task and status objects are built member by member: json_pack reads
 * its format string on every call, which cost more than the small objects
 * themselves on every new task and status change (bench/README.md, "Single
 * steps the code's comments cite"). The names,
 * states and timestamps are ASCII, so they skip jansson's UTF-8 check.
 */

static json_t *status_new(once_state state, int64_t now)
{
    char ts[25];
    once_format_time(now, ts);
    json_t *st = json_object();
    if (st == NULL ||
        json_object_set_new_nocheck(st, "state", json_string_nocheck(once_state_name(state))) ||
        json_object_set_new_nocheck(st, "timestamp", json_string_nocheck(ts))) {
        json_decref(st);
        return NULL;
    }
    return st;
}

json_t *once__task_new(const char *task_id, const char *context_id, once_state state,
                       int64_t now, const json_t *msg)
{
    json_t *task = json_object();
    if (task == NULL || json_object_set_new_nocheck(task, "id", json_string(task_id)) ||
        json_object_set_new_nocheck(task, "contextId", json_string(context_id)) ||
        json_object_set_new_nocheck(task, "status", status_new(state, now)) ||
        json_object_set_new_nocheck(task, "history", json_array()) ||
        (msg != NULL && once__task_append_history(task, msg) != ONCE_OK)) {
        json_decref(task);
        return NULL;
    }
    return task;
}

int once__task_append_history(json_t *task, const json_t *msg)
{
    json_t *hist = json_object_get(task, "history");
    if (!json_is_array(hist)) {
        hist = json_array();
        if (hist == NULL || json_object_set_new(task, "history", hist) != 0)
            return ONCE_ENOMEM;
    }
    return json_array_append(hist, (json_t *)msg) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

/* 1 if the task is working and its status message is the last entry of
 * its history: an agent progress message, which the next one replaces. */
static int progress_on_top(const json_t *task)
{
    const json_t *st = json_object_get(task, "status");
    const char *state = json_string_value(json_object_get(st, "state"));
    const json_t *hist = json_object_get(task, "history");
    size_t n = json_array_size(hist);
    if (state == NULL || strcmp(state, once_state_name(ONCE_STATE_WORKING)) != 0 || n == 0)
        return 0;
    const char *a = json_string_value(json_object_get(json_object_get(st, "message"), "messageId"));
    const char *b = json_string_value(json_object_get(json_array_get(hist, n - 1), "messageId"));
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

int once__task_set_status(json_t *task, once_state state, const json_t *msg, int64_t now)
{
    /* Progress messages (working -> working) replace each other in the
     * history: every one is still an event (streams and webhooks see them
     * all), but the stored task keeps only the latest, so an agent that
     * reports progress often does not grow its task without bound. */
    if (state == ONCE_STATE_WORKING && msg != NULL && progress_on_top(task)) {
        json_t *hist = json_object_get(task, "history");
        if (json_array_remove(hist, json_array_size(hist) - 1) != 0)
            return ONCE_ENOMEM;
    }
    json_t *st = status_new(state, now);
    if (st == NULL)
        return ONCE_ENOMEM;
    if (msg != NULL && json_object_set(st, "message", (json_t *)msg) != 0) {
        json_decref(st);
        return ONCE_ENOMEM;
    }
    if (json_object_set_new(task, "status", st) != 0)
        return ONCE_ENOMEM;
    return msg != NULL ? once__task_append_history(task, msg) : ONCE_OK;
}

/* old (an artifact of a task) with art's parts added, as a new object:
 * old may be shared with an earlier write's artifact, which must stay as it
 * was (a batch re-applies it after a conflict), so neither it nor its parts
 * array is edited; the parts themselves are shared. NULL: no memory. */
static json_t *artifact_extended(const json_t *old, const json_t *art)
{
    json_t *ext = json_copy((json_t *)old);
    const json_t *had = json_object_get(old, "parts");
    json_t *parts = json_is_array(had) ? json_copy((json_t *)had) : json_array();
    if (ext == NULL || parts == NULL ||
        json_array_extend(parts, json_object_get(art, "parts")) != 0) {
        json_decref(ext);
        json_decref(parts);
        return NULL;
    }
    if (json_object_set_new(ext, "parts", parts) != 0) {   /* it released parts */
        json_decref(ext);
        return NULL;
    }
    return ext;
}

int once__task_artifact(json_t *task, const json_t *art, int append)
{
    json_t *arts = json_object_get(task, "artifacts");
    if (!json_is_array(arts)) {
        arts = json_array();
        if (arts == NULL || json_object_set_new(task, "artifacts", arts) != 0)
            return ONCE_ENOMEM;
    }
    const char *aid = json_string_value(json_object_get(art, "artifactId"));
    size_t i;
    json_t *old;
    json_array_foreach(arts, i, old) {
        const char *oid = json_string_value(json_object_get(old, "artifactId"));
        if (aid == NULL || oid == NULL || strcmp(aid, oid) != 0)
            continue;
        if (append)
            return json_array_set_new(arts, i, artifact_extended(old, art)) == 0 ? ONCE_OK
                                                                                  : ONCE_ENOMEM;
        return json_array_set(arts, i, (json_t *)art) == 0 ? ONCE_OK : ONCE_ENOMEM;
    }
    return json_array_append(arts, (json_t *)art) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

static int set_str(json_t *obj, const char *key, const char *val)
{
    return json_object_set_new(obj, key, json_string(val)) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

json_t *once__message_fill(const json_t *msg, const char *task_id, const char *context_id,
                           const char *role, const once_rng *rng)
{
    /* Only top-level members are set, so a shallow copy serves: the parts
     * and metadata are shared with msg, which no caller changes (a deep
     * copy cost about as much as parsing the request). */
    json_t *m = json_copy((json_t *)msg);
    if (m == NULL)
        return NULL;
    int rc = ONCE_OK;
    if (task_id != NULL)
        rc = set_str(m, "taskId", task_id);
    if (rc == ONCE_OK && context_id != NULL)
        rc = set_str(m, "contextId", context_id);
    if (rc == ONCE_OK && !json_is_string(json_object_get(m, "messageId"))) {
        char id[ONCE_UUID_LEN + 1];
        rc = once_uuid4(rng, id);
        if (rc == ONCE_OK)
            rc = set_str(m, "messageId", id);
    }
    if (rc == ONCE_OK && role != NULL && !json_is_string(json_object_get(m, "role")))
        rc = set_str(m, "role", role);
    if (rc != ONCE_OK) {
        json_decref(m);
        return NULL;
    }
    return m;
}

json_t *once__agent_text(const char *text, const char *task_id, const char *context_id,
                         const once_rng *rng)
{
    json_t *m = json_pack("{s:s, s:[{s:s}]}", "role", "ROLE_AGENT", "parts", "text",
                          text != NULL ? text : "");
    if (m == NULL)
        return NULL;
    json_t *full = once__message_fill(m, task_id, context_id, NULL, rng);
    json_decref(m);
    return full;
}

static int trim_history(json_t *task, int history_length)
{
    if (history_length < 0)
        return ONCE_OK;
    if (history_length == 0) {
        json_object_del(task, "history");
        return ONCE_OK;
    }
    json_t *hist = json_object_get(task, "history");
    if (!json_is_array(hist))
        return ONCE_OK;
    size_t n = json_array_size(hist);
    size_t keep = (size_t)history_length;
    if (n <= keep)
        return ONCE_OK;
    json_t *tail = json_array();
    if (tail == NULL)
        return ONCE_ENOMEM;
    for (size_t i = n - keep; i < n; i++) {
        if (json_array_append(tail, json_array_get(hist, i)) != 0) {
            json_decref(tail);
            return ONCE_ENOMEM;
        }
    }
    return json_object_set_new(task, "history", tail) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

json_t *once__task_out(const once_record *rec, int history_length)
{
    json_t *j = once__json_parse(rec->task_json);
    if (j == NULL || rec->kind == ONCE_KIND_MESSAGE)
        return j;
    if (once__generation_stamp(j, rec->generation) != ONCE_OK ||
        trim_history(j, history_length) != ONCE_OK) {
        json_decref(j);
        return NULL;
    }
    return j;
}

json_t *once__send_result(const once_record *rec, int history_length)
{
    json_t *inner = once__task_out(rec, history_length);
    if (inner == NULL)
        return NULL;
    return json_pack("{s:o}", rec->kind == ONCE_KIND_MESSAGE ? "message" : "task", inner);
}

/* The generation stamp as the last member of an object, as the JSON writer
 * writes what once__generation_stamp adds: "metadata":{...:{"generation":g}}
 * (at most STAMP_MAX bytes). */
#define STAMP_PREFIX "\"metadata\":{\"" ONCE_IDEMPOTENCY_EXTENSION "\":{\"generation\":"
#define STAMP_MAX (sizeof STAMP_PREFIX + 24)

static void put_stamp(once__text *t, int64_t generation)
{
    ONCE__TEXT_LIT(t, STAMP_PREFIX);
    once__text_int(t, generation);
    ONCE__TEXT_LIT(t, "}}");
}

/* {"<kind>": obj} as the text the JSON writer makes of the tree, spliced
 * from obj's stored text instead of parsed and written again, with obj
 * stamped with generation when stamp is set: the writer keeps members in
 * the order they were added and once__generation_stamp adds "metadata"
 * last, so the stamp follows the stored members. NULL when obj has
 * metadata of its own (the stamp goes inside it: the caller builds the
 * tree) or memory ran out. */
static char *splice(const char *kind, const char *obj, int stamp, int64_t generation)
{
    size_t n = obj != NULL ? strlen(obj) : 0;
    if (n < 2 || obj[0] != '{' || obj[n - 1] != '}' ||
        (stamp && strstr(obj, "\"metadata\"") != NULL))
        return NULL;
    once__text t = ONCE__TEXT_INIT;
    once__text_reserve(&t, n + STAMP_MAX + 32); /* one allocation */
    once__text_strs(&t, "{\"", kind, "\":", NULL);
    once__text_put(&t, obj, n - 1);
    if (stamp) {
        if (n > 2)
            ONCE__TEXT_LIT(&t, ",");
        put_stamp(&t, generation);
    }
    ONCE__TEXT_LIT(&t, "}}");
    return once__text_done(&t, NULL);
}

/* once__send_result(rec, -1), written out (see splice). */
static char *send_result_text(const once_record *rec)
{
    int task = rec->kind != ONCE_KIND_MESSAGE;
    return splice(task ? "task" : "message", rec->task_json, task, rec->generation);
}

char *once__ev_task_text(const char *task_json, int64_t generation)
{
    return splice("task", task_json, 1, generation);
}

int once__send_answer_of(const once_record *rec, int history_length, once_send_res *res)
{
    if (res->text_result && history_length < 0 &&
        (res->result_text = send_result_text(rec)) != NULL)
        return ONCE_OK;
    res->result = once__send_result(rec, history_length);
    return res->result != NULL ? ONCE_OK : ONCE_ENOMEM;
}

/* Stamp body (reference stolen) with generation (unless it is 0), wrap it
 * as {"<kind>": body} and dump it. */
static char *event_text(const char *kind, json_t *body, int64_t generation)
{
    if (body == NULL)
        return NULL;
    if (generation != 0 && once__generation_stamp(body, generation) != ONCE_OK) {
        json_decref(body);
        return NULL;
    }
    json_t *ev = json_pack("{s:o}", kind, body);
    if (ev == NULL)
        return NULL;
    char *text = once__json_text(ev);
    json_decref(ev);
    return text;
}

/*
 * The payloads below are written out at once and freed, so they share the
 * task's values (references) instead of copying them: only the objects the
 * generation stamp adds to are new. (The task and artifact are the
 * caller's and only read here; jansson's API takes them non-const.)
 */

/* A shallow copy of obj with a copy of its metadata object, if any, so
 * that stamping it leaves obj as it was. A new reference, or NULL. */
static json_t *stamp_view(const json_t *obj)
{
    json_t *view = json_copy((json_t *)obj);
    json_t *meta = json_object_get(view, "metadata");
    if (view != NULL && json_is_object(meta) &&
        json_object_set_new(view, "metadata", json_copy(meta)) != 0) {
        json_decref(view);
        return NULL;
    }
    return view;
}

char *once__ev_task(const json_t *task, int64_t generation)
{
    return event_text("task", stamp_view(task), generation);
}

char *once__ev_message(const json_t *msg, int64_t generation)
{
    /* A direct Message answer is served exactly as the agent's reply was
     * stored (a replay gives the same bytes), so it is not stamped. */
    (void)generation;
    return event_text("message", json_incref((json_t *)msg), 0);
}

/* 1 if the JSON writer writes s between quotes as it is (the characters
 * of an ID: once_id_valid), so it can be copied into spliced text. */
int once__plain_id(const char *s)
{
    /* The ID characters as a bit set over ASCII: - . 0-9 : in the first
     * word, A-Z _ a-z in the second. */
    static const uint64_t id_chars[2] = {0x07ff600000000000u, 0x07fffffe87fffffeu};
    if (s == NULL || *s == '\0')
        return 0;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 128 || !((id_chars[c >> 6] >> (c & 63)) & 1))
            return 0;
    }
    return 1;
}

/*
 * A task update event as text, without building its object:
 *   {"<kind>":{"taskId":"<id>","contextId":"<ctx>","<name>":<value>,<rest>
 *   "metadata":{"<extension>":{"generation":<g>}}}}
 * with value written by the JSON writer: the bytes event_text makes of the
 * object the tree builders below pack (members in the order added, the
 * stamp last). rest is "" or further members, each followed by a comma.
 * ONCE_OK (*out set), ONCE_EINVAL when the task's ids are not plain or
 * value is missing (build the object), ONCE_ENOMEM.
 */
static int update_text(const char *kind, const json_t *task, const char *name,
                       const json_t *value, const char *rest, int64_t generation, char **out)
{
    *out = NULL;
    const char *id = json_string_value(json_object_get(task, "id"));
    const char *ctx = json_string_value(json_object_get(task, "contextId"));
    if (!once__plain_id(id) || !once__plain_id(ctx) || value == NULL)
        return ONCE_EINVAL;
    once__text t = ONCE__TEXT_INIT;
    once__text_strs(&t, "{\"", kind, "\":{\"taskId\":\"", id, "\",\"contextId\":\"", ctx,
                    "\",\"", name, "\":", NULL);
    once__text_json(&t, value);
    once__text_strs(&t, ",", rest, NULL);
    put_stamp(&t, generation);
    ONCE__TEXT_LIT(&t, "}}");
    *out = once__text_done(&t, NULL);
    return *out != NULL ? ONCE_OK : ONCE_ENOMEM;
}

char *once__ev_status(const json_t *task, int64_t generation)
{
    char *text;
    if (update_text("statusUpdate", task, "status", json_object_get(task, "status"), "",
                    generation, &text) != ONCE_EINVAL)
        return text;
    return event_text("statusUpdate",
                      json_pack("{s:O, s:O, s:O}", "taskId", json_object_get(task, "id"),
                                "contextId", json_object_get(task, "contextId"), "status",
                                json_object_get(task, "status")),
                      generation);
}

char *once__ev_artifact(const json_t *task, const json_t *artifact, int append, int last_chunk,
                        int64_t generation)
{
    /* The two flags as the writer writes them, each member followed by a
     * comma (update_text's rest). */
    static const char *const rests[2][2] = {
        {"\"append\":false,\"lastChunk\":false,", "\"append\":false,\"lastChunk\":true,"},
        {"\"append\":true,\"lastChunk\":false,", "\"append\":true,\"lastChunk\":true,"},
    };
    const char *rest = rests[append != 0][last_chunk != 0];
    char *text;
    if (update_text("artifactUpdate", task, "artifact", artifact, rest, generation, &text) !=
        ONCE_EINVAL)
        return text;
    return event_text("artifactUpdate",
                      json_pack("{s:O, s:O, s:O, s:b, s:b}", "taskId",
                                json_object_get(task, "id"), "contextId",
                                json_object_get(task, "contextId"), "artifact",
                                (json_t *)artifact, "append", append, "lastChunk", last_chunk),
                      generation);
}
