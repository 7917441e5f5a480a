/*
 * inspect.c -- one task's timeline for the inspector (inspect.h), built
 * from store reads alone: the record (or the tombstone), its events, its
 * push delivery rows, its journal (journal.c: turns, takeovers, refused
 * writes, replay and refusal counts), its artifacts; and one artifact's part
 * for a download. Nothing is taken from this replica's memory, so any
 * replica on any backend shows the same timeline.
 *
 * Invariants: the JSON has the version ONCE_INSPECT_VERSION and the shape
 * docs/wire.md gives; `entries` is sorted by time (ties keep the order they
 * were added in: generation order for events); every entry has "kind",
 * "at" (ms since epoch, engine clock) and "time" (RFC 3339). An event whose
 * payload carries no timestamp (artifact updates) takes the time of the
 * event before it, and says so ("timed": false). Sizes are bounded: at most
 * ONCE_INSPECT_MAX_EVENTS events and ONCE_INSPECT_MAX_KEYS keys, texts cut
 * at ONCE_INSPECT_TEXT_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base64.h"
#include "core/civil.h"
#include "core/jcs.h"
#include "engine/engine_int.h"
#include "engine/inspect.h"

/* An entry with its insertion number, for a stable sort by time. */
typedef struct entry {
    int64_t at;
    size_t seq;
    json_t *j;
} entry;

/* The entries being collected; `oom` once anything failed to allocate
 * (later adds are dropped, the caller reports ONCE_ENOMEM). */
typedef struct timeline {
    entry *v;
    size_t n, cap;
    int oom;
} timeline;

/* Add j (reference stolen) at time `at`, stamping "at" and "time". */
static void add(timeline *t, int64_t at, json_t *j)
{
    char ts[25];
    once_format_time(at, ts);
    if (j == NULL || json_object_set_new(j, "at", json_integer(at)) != 0 ||
        json_object_set_new(j, "time", json_string(ts)) != 0) {
        json_decref(j);
        t->oom = 1;
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 32;
        entry *nv = once_realloc(t->v, cap * sizeof *nv);
        if (nv == NULL) {
            json_decref(j);
            t->oom = 1;
            return;
        }
        t->v = nv;
        t->cap = cap;
    }
    t->v[t->n] = (entry){at, t->n, j};
    t->n++;
}

static int by_time(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the entries and move them into a JSON array (t is emptied). */
static json_t *entries_out(timeline *t)
{
    qsort(t->v, t->n, sizeof *t->v, by_time);
    json_t *arr = t->oom ? NULL : json_array();
    for (size_t i = 0; i < t->n; i++) {
        if (arr != NULL && json_array_append_new(arr, t->v[i].j) != 0) {
            json_decref(arr);
            arr = NULL;
        } else if (arr == NULL) {
            json_decref(t->v[i].j);
        }
    }
    once_free(t->v);
    memset(t, 0, sizeof *t);
    return arr;
}

/* The RFC 3339 stamps onced writes ("2026-12-03T11:00:48.999Z", or
 * without the milliseconds) as ms since epoch; 0 for anything else. */
static int parse_stamp(const char *s, int64_t *ms)
{
    size_t n = s != NULL ? strlen(s) : 0;
    int y, mo, d, h, mi, se, frac = 0;
    if ((n != 20 && n != 24) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':' || s[n - 1] != 'Z')
        return 0;
    if (!once__fixed_digits(s, 4, &y) || !once__fixed_digits(s + 5, 2, &mo) ||
        !once__fixed_digits(s + 8, 2, &d) || !once__fixed_digits(s + 11, 2, &h) ||
        !once__fixed_digits(s + 14, 2, &mi) || !once__fixed_digits(s + 17, 2, &se))
        return 0;
    if (n == 24 && (s[19] != '.' || !once__fixed_digits(s + 20, 3, &frac)))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return 0;
    *ms = ((once__days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 +
          frac;
    return 1;
}

/* Append s to buf (cap bytes, NUL included) and report whether it all fit;
 * a cut falls on a UTF-8 character boundary. */
static int append_text(char *buf, size_t cap, const char *s)
{
    size_t have = strlen(buf), room = cap - 1 - have, n = strlen(s);
    if (n <= room) {
        memcpy(buf + have, s, n + 1);
        return 1;
    }
    while (room > 0 && ((unsigned char)s[room] & 0xC0) == 0x80)
        room--;
    memcpy(buf + have, s, room);
    buf[have + room] = '\0';
    return 0;
}

/* The file fields of a part: A2A 1.0 `raw` (base64), `url`, `filename`,
 * `mediaType`; 0.3 `file.bytes`, `file.uri`, `file.name`, `file.mimeType`.
 * 0 when p is no file part. */
typedef struct file_fields {
    const json_t *raw, *url;
    const char *name, *type;
} file_fields;

static int file_of(const json_t *p, file_fields *ff)
{
    const json_t *f = json_object_get(p, "file");   /* A2A 0.3 */
    const json_t *from = f ? f : p;
    ff->raw = json_object_get(from, f ? "bytes" : "raw");
    ff->url = json_object_get(from, f ? "uri" : "url");
    ff->name = json_string_value(json_object_get(from, f ? "name" : "filename"));
    ff->type = json_string_value(json_object_get(from, f ? "mimeType" : "mediaType"));
    return f != NULL || json_is_string(ff->raw) || json_is_string(ff->url);
}

/* The decoded size of a base64 string, -1 when it is not base64. */
static long raw_size(const json_t *raw)
{
    return once__base64_decode(json_string_value(raw), json_string_length(raw), NULL, 0);
}

/* How a file part reads in a text: "[file NAME (TYPE, N bytes)]" for the
 * bytes inline (N is the decoded size), "[file NAME (TYPE, url URL)]" for a
 * reference; NAME and TYPE when the part has them. 0 when p is no file. */
static int file_text(const json_t *p, char *out, size_t cap)
{
    file_fields ff;
    if (!file_of(p, &ff))
        return 0;
    const char *name = ff.name, *type = ff.type;
    char what[64] = "";
    if (json_is_string(ff.raw)) {
        long n = raw_size(ff.raw);
        if (n >= 0)
            snprintf(what, sizeof what, "%ld bytes", n);
        else
            snprintf(what, sizeof what, "bytes not base64");
    }
    const char *u = json_is_string(ff.url) ? json_string_value(ff.url) : NULL;
    int detail = type != NULL || u != NULL || what[0] != '\0';
    int w = snprintf(out, cap, "[file%s%s%s%s%s%s%s%s]", name ? " " : "", name ? name : "",
                     detail ? " (" : "", type ? type : "", type && (u || what[0]) ? ", " : "",
                     u ? "url " : what, u ? u : "", detail ? ")" : "");
    return w >= 0;
}

/* The text of a parts array, one space between parts; a file part shows
 * as file_text says, a data part as [data]; "..." marks a cut. */
static void parts_text(const json_t *parts, char out[ONCE_INSPECT_TEXT_MAX + 1])
{
    char buf[ONCE_INSPECT_TEXT_MAX - 2], file[ONCE_INSPECT_TEXT_MAX];
    buf[0] = '\0';
    size_t i;
    const json_t *p;
    int fit = 1;
    json_array_foreach (parts, i, p) {
        const char *s = json_string_value(json_object_get(p, "text"));
        if (fit && i > 0)
            fit = append_text(buf, sizeof buf, " ");
        if (fit && s != NULL)
            fit = append_text(buf, sizeof buf, s);
        else if (fit && file_text(p, file, sizeof file))
            fit = append_text(buf, sizeof buf, file);
        else if (fit)
            fit = append_text(buf, sizeof buf, "[data]");
    }
    size_t n = strlen(buf);
    memcpy(out, buf, n);
    memcpy(out + n, fit ? "" : "...", fit ? 1 : 4);
}

static int set_text(json_t *j, const char *key, const json_t *parts)
{
    char text[ONCE_INSPECT_TEXT_MAX + 1];
    if (!json_is_array(parts) || json_array_size(parts) == 0)
        return 0;
    parts_text(parts, text);
    return json_object_set_new(j, key, json_string(text));
}

/* Copy member key of from into to, when from has it; nonzero on failure. */
static int copy(json_t *to, const json_t *from, const char *key)
{
    json_t *v = json_object_get(from, key);
    return v != NULL && json_object_set(to, key, v) != 0;
}

/* What the events before the next one tell about it: the task's stored
 * history (borrowed from the record's task_json), the index in it of the
 * newest message an event named (-1: unknown), and whether the task was
 * waiting for input (input-required, auth-required). The message that
 * continued a task is in the history, not in its event (a working status
 * with no message): the first user message after the one the agent asked
 * with. */
typedef struct story {
    const json_t *hist;
    long at;
    int waiting;
} story;

static long history_index(const json_t *hist, const json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "messageId"));
    for (size_t i = 0; id != NULL && i < json_array_size(hist); i++) {
        const char *h = json_string_value(json_object_get(json_array_get(hist, i), "messageId"));
        if (h != NULL && strcmp(h, id) == 0)
            return (long)i;
    }
    return -1;
}

static int is_user(const json_t *msg)
{
    const char *role = json_string_value(json_object_get(msg, "role"));
    return role != NULL && (strcmp(role, "ROLE_USER") == 0 || strcmp(role, "user") == 0);
}

/* Name msg (a user's message) in j: "user" its text, "messageId". */
static int set_user(json_t *j, const json_t *msg)
{
    return set_text(j, "user", json_object_get(msg, "parts")) || copy(j, msg, "messageId");
}

/* Follow one event's body through s; for a continuation, name the user's
 * message that made it in j. */
static int follow_story(story *s, json_t *j, const char *type, const json_t *body)
{
    const json_t *status = json_object_get(body, "status");
    const json_t *hist = json_object_get(body, "history");
    const json_t *msg = json_object_get(status, "message");
    const char *state = json_string_value(json_object_get(status, "state"));
    int bad = 0;
    if (type != NULL && strcmp(type, "message") == 0)
        msg = body;
    else if (type != NULL && strcmp(type, "task") == 0 && json_array_size(hist) > 0) {
        msg = json_array_get(hist, json_array_size(hist) - 1);
        if (is_user(msg))
            bad = set_user(j, msg);
    }
    if (msg != NULL) {
        s->at = history_index(s->hist, msg);
    } else if (s->waiting && s->at >= 0 && state != NULL &&
               strcmp(state, once_state_name(ONCE_STATE_WORKING)) == 0) {
        long k = s->at + 1;
        while (k < (long)json_array_size(s->hist) && !is_user(json_array_get(s->hist, (size_t)k)))
            k++;
        s->at = k < (long)json_array_size(s->hist) ? k : -1;
        if (s->at >= 0)
            bad = set_user(j, json_array_get(s->hist, (size_t)k)) ||
                  json_object_set_new(j, "continued", json_true()) != 0;
    }
    if (state != NULL)
        s->waiting = strcmp(state, once_state_name(ONCE_STATE_INPUT_REQUIRED)) == 0 ||
                     strcmp(state, once_state_name(ONCE_STATE_AUTH_REQUIRED)) == 0;
    return bad;
}

/* The entry of one event. *at: in, the time of the event before; out, this
 * event's time (its status timestamp, else the same). */
static json_t *event_entry(const once_event *ev, int64_t *at, story *s)
{
    json_t *j = json_pack("{s:s, s:I}", "kind", "event", "generation",
                          (json_int_t)ev->generation);
    json_t *p = once__json_parse(ev->payload);
    const char *type = NULL;
    json_t *body = NULL;
    if (p != NULL) {
        void *it = json_object_iter(p);
        type = it != NULL ? json_object_iter_key(it) : NULL;
        body = it != NULL ? json_object_iter_value(it) : NULL;
    }
    int bad = j == NULL ||
              json_object_set_new(j, "event",
                                  json_string(ev->payload[0] == '\0' ? "compacted"   /* store.h */
                                              : type != NULL          ? type
                                                                      : "unreadable"));
    const json_t *status = json_object_get(body, "status");
    const json_t *art = json_object_get(body, "artifact");
    int64_t t;
    int timed = parse_stamp(json_string_value(json_object_get(status, "timestamp")), &t);
    if (timed)
        *at = t;
    if (!bad && status != NULL)
        bad = copy(j, status, "state") ||
              set_text(j, "text", json_object_get(json_object_get(status, "message"), "parts"));
    if (!bad && art != NULL) {
        const json_t *name = json_object_get(art, "name");
        bad = (json_is_string(name) && json_object_set(j, "artifact", (json_t *)name) != 0) ||
              copy(j, art, "artifactId") || set_text(j, "text", json_object_get(art, "parts")) ||
              copy(j, body, "append") || copy(j, body, "lastChunk");
    }
    if (!bad && type != NULL && strcmp(type, "message") == 0)
        bad = set_text(j, "text", json_object_get(body, "parts"));
    /* A whole Task (the registration's event): the message that made it. */
    const json_t *hist = json_object_get(body, "history");
    if (!bad && json_object_get(j, "text") == NULL && json_array_size(hist) > 0)
        bad = set_text(j, "text",
                       json_object_get(json_array_get(hist, json_array_size(hist) - 1), "parts"));
    if (!bad)
        bad = follow_story(s, j, type, body) ||
              json_object_set_new(j, "timed", json_boolean(timed)) != 0;
    json_decref(p);
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Every event after generation `after`, as entries. The event `after`
 * itself is read too, only for its time (the next event may have none). */
static int add_events(once__engine *e, const once_record *rec, int64_t after, timeline *t)
{
    once_event_list l;
    int rc = once_store_events(e->store, rec->principal, rec->task_id, after > 0 ? after - 1 : 0,
                               0, &l);
    if (rc != ONCE_OK) {
        once_event_list_clear(&l);
        return once__store_rc(e, rc);
    }
    json_t *task = rec->task_json != NULL ? once__json_parse(rec->task_json) : NULL;
    story s = {json_object_get(task, "history"), -1, 0};
    int64_t at = rec->created_at;
    for (size_t i = 0; i < l.n; i++) {
        json_t *j = event_entry(&l.v[i], &at, &s);
        if (l.v[i].generation > after)
            add(t, at, j);
        else if (j == NULL)
            t->oom = 1;
        else
            json_decref(j);
    }
    json_decref(task);
    once_event_list_clear(&l);
    return ONCE_OK;
}

/* A time that may be absent (0): the integer, or null. */
static json_t *opt_time(int64_t ms)
{
    return ms > 0 ? json_integer(ms) : json_null();
}

static json_t *record_json(const once_record *rec, int64_t now)
{
    json_t *lease = json_null();
    if (rec->lease_until > 0)
        lease = json_pack("{s:s, s:I, s:b}", "owner", rec->lease_owner, "until",
                          (json_int_t)rec->lease_until, "expired", rec->lease_until <= now);
    return json_pack("{s:s, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:o}", "id",
                     rec->task_id, "contextId", rec->context_id, "kind",
                     rec->kind == ONCE_KIND_MESSAGE ? "message" : "task", "state",
                     once_state_name(rec->state), "terminal", once_state_terminal(rec->state),
                     "version", (json_int_t)rec->version, "generation",
                     (json_int_t)rec->generation, "fence", (json_int_t)rec->fence, "step",
                     (json_int_t)rec->step, "lease", lease, "createdAt",
                     (json_int_t)rec->created_at, "updatedAt", (json_int_t)rec->updated_at,
                     "finishedAt", opt_time(rec->finished_at));
}

/* One part of an artifact as the timeline lists it: "index", "kind"
 * (text, file or data), a text part's "text" (cut as an event's), a file's
 * "filename", "mediaType", "size" (decoded bytes, when inline) or "url" (a
 * reference). */
static json_t *part_json(const json_t *p, size_t index)
{
    file_fields ff;
    const char *text = json_string_value(json_object_get(p, "text"));
    int file = text == NULL && file_of(p, &ff);
    json_t *j = json_pack("{s:I, s:s}", "index", (json_int_t)index, "kind",
                          text != NULL ? "text" : file ? "file" : "data");
    int bad = j == NULL;
    if (!bad && text != NULL) {
        json_t *one = json_pack("[O]", p);
        bad = one == NULL || set_text(j, "text", one);
        json_decref(one);
    }
    if (!bad && file) {
        long n = json_is_string(ff.raw) ? raw_size(ff.raw) : -1;
        bad = (ff.name != NULL && json_object_set_new(j, "filename", json_string(ff.name))) ||
              (ff.type != NULL && json_object_set_new(j, "mediaType", json_string(ff.type))) ||
              (n >= 0 && json_object_set_new(j, "size", json_integer(n))) ||
              (json_is_string(ff.url) && json_object_set(j, "url", (json_t *)ff.url));
    }
    if (!bad && !file && text == NULL)
        bad = copy(j, p, "mediaType");
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* The task's artifacts (the first ONCE_INSPECT_MAX_ARTIFACTS, each with
 * its first ONCE_INSPECT_MAX_PARTS parts) into out["artifacts"]. */
static int artifacts_json(const once_record *rec, json_t *out)
{
    json_t *task = rec->task_json != NULL ? once__json_parse(rec->task_json) : NULL;
    const json_t *arts = json_object_get(task, "artifacts");
    json_t *list = json_array();
    int bad = list == NULL || json_object_set_new(out, "artifacts", list) != 0 ||
              json_object_set_new(out, "artifactsOmitted",
                                  json_integer(json_array_size(arts) > ONCE_INSPECT_MAX_ARTIFACTS
                                                   ? (json_int_t)(json_array_size(arts) -
                                                                  ONCE_INSPECT_MAX_ARTIFACTS)
                                                   : 0)) != 0;
    size_t i, k;
    const json_t *a, *p;
    json_array_foreach (arts, i, a) {
        if (bad || i >= ONCE_INSPECT_MAX_ARTIFACTS)
            break;
        const json_t *parts = json_object_get(a, "parts");
        size_t np = json_array_size(parts);
        json_t *j = json_pack("{s:O?, s:O?, s:O?, s:I}", "artifactId",
                              json_object_get(a, "artifactId"), "name", json_object_get(a, "name"),
                              "description", json_object_get(a, "description"), "partsOmitted",
                              (json_int_t)(np > ONCE_INSPECT_MAX_PARTS ? np - ONCE_INSPECT_MAX_PARTS
                                                                       : 0));
        bad = j == NULL || json_array_append_new(list, j) != 0;
        json_t *pl = bad ? NULL : json_array();   /* j is list's now; pl becomes j's */
        bad = bad || json_object_set_new(j, "parts", pl) != 0;
        json_array_foreach (parts, k, p) {
            if (bad || k >= ONCE_INSPECT_MAX_PARTS)
                break;
            bad = json_array_append_new(pl, part_json(p, k)) != 0;
        }
    }
    json_decref(task);
    return bad ? ONCE_ENOMEM : ONCE_OK;
}

/* The side-effect keys <task>:step-<n> for n = 0..step: the ones before
 * `step` belong to steps a turn checkpointed past; `step` itself is the
 * key the task's current step uses. The newest ONCE_INSPECT_MAX_KEYS. */
static int effect_keys(const once_record *rec, json_t *out)
{
    int64_t first = rec->step >= ONCE_INSPECT_MAX_KEYS ? rec->step - ONCE_INSPECT_MAX_KEYS + 1 : 0;
    json_t *keys = json_array();
    int bad = keys == NULL || json_object_set_new(out, "effectKeys", keys) != 0 ||
              json_object_set_new(out, "keysOmitted", json_integer(first)) != 0;
    for (int64_t n = first; n <= rec->step && !bad; n++) {
        char key[ONCE_EFFECT_KEY_MAX + 1];
        bad = once_effect_key(rec->task_id, (uint64_t)n, key) != ONCE_OK ||
              json_array_append_new(keys, json_pack("{s:I, s:s, s:b}", "step", (json_int_t)n,
                                                    "key", key, "current", n == rec->step)) != 0;
    }
    return bad ? ONCE_ENOMEM : ONCE_OK;
}

/* The delivery row of config `id` in l, or NULL. */
static const once_push_row *row_of(const once_push_row_list *l, const char *id)
{
    for (size_t i = 0; id != NULL && i < l->n; i++)
        if (strcmp(l->v[i].config_id, id) == 0)
            return &l->v[i];
    return NULL;
}

static json_t *delivery_json(const once_push_row *r)
{
    return json_pack("{s:I, s:I, s:I, s:o, s:s, s:o, s:b, s:s, s:I, s:I, s:I}", "delivered",
                     (json_int_t)r->delivered, "target", (json_int_t)r->target, "attempts",
                     (json_int_t)r->attempts, "nextAttemptAt", opt_time(r->next_attempt_at),
                     "leaseOwner", r->lease_owner, "leaseUntil", opt_time(r->lease_until),
                     "disabled", r->disabled, "lastError", r->last_error, "deliveries",
                     (json_int_t)r->deliveries, "retries", (json_int_t)r->retries, "failures",
                     (json_int_t)r->failures);
}

/* The push configs (id, url, since: never the token) with their delivery
 * rows when the store keeps them, and an entry for each retry that is
 * scheduled. */
static int push_json(once__engine *e, const once_record *rec, json_t *out, timeline *t)
{
    json_t *arr = json_array();
    if (arr == NULL || json_object_set_new(out, "push", arr) != 0)
        return ONCE_ENOMEM;
    json_t *cfgs = NULL;
    int rc = rec->push_json != NULL ? once__json_loads(rec->push_json, 0, &cfgs, NULL) : ONCE_OK;
    if (rc == ONCE_ENOMEM)
        return rc;
    if (!json_is_array(cfgs)) {
        json_decref(cfgs);
        return ONCE_OK;   /* none, or not readable: the timeline shows none */
    }
    once_push_row_list rows;
    memset(&rows, 0, sizeof rows);
    if (once_store_caps(e->store) & ONCE_STORE_PUSH) {
        rc = once_store_push_rows(e->store, rec->principal, rec->task_id, &rows);
        if (rc != ONCE_OK)
            rc = once__store_rc(e, rc);
    }
    size_t i;
    json_t *c;
    json_array_foreach (cfgs, i, c) {
        if (rc != ONCE_OK)
            break;
        const char *id = json_string_value(json_object_get(c, "id"));
        const once_push_row *r = row_of(&rows, id);
        json_t *j = json_pack("{s:O?, s:O?, s:O?, s:o}", "id", json_object_get(c, "id"), "url",
                              json_object_get(c, "url"), "since", json_object_get(c, "since"),
                              "delivery", r != NULL ? delivery_json(r) : json_null());
        if (j == NULL || json_array_append_new(arr, j) != 0)
            rc = ONCE_ENOMEM;
        if (rc == ONCE_OK && r != NULL && !r->disabled && r->attempts > 0 &&
            r->delivered < r->target && r->next_attempt_at > 0)
            add(t, r->next_attempt_at,
                json_pack("{s:s, s:s, s:I, s:I, s:s}", "kind", "pushRetry", "config", id,
                          "generation", (json_int_t)(r->delivered + 1), "attempts",
                          (json_int_t)r->attempts, "lastError", r->last_error));
    }
    once_push_row_list_clear(&rows);
    json_decref(cfgs);
    return rc;
}

/* When a finished task becomes a tombstone and when its ID is forgotten
 * (the sweep acts at its next pass after each). */
static int retention(once__engine *e, int64_t finished_at, int64_t expired_at, json_t *out,
                     timeline *t)
{
    int64_t now = once__now(e), tomb_at = 0, forget_at = 0;
    if (expired_at > 0) {
        forget_at = expired_at + e->cfg.tombstone_ms;
    } else if (finished_at > 0) {
        tomb_at = finished_at + e->cfg.retention_ms;
        forget_at = tomb_at + e->cfg.tombstone_ms;
        add(t, tomb_at, json_pack("{s:s, s:s, s:b}", "kind", "deadline", "what", "tombstone",
                                  "passed", tomb_at <= now));
    }
    if (forget_at > 0)
        add(t, forget_at, json_pack("{s:s, s:s, s:b}", "kind", "deadline", "what", "forget",
                                    "passed", forget_at <= now));
    json_t *r = json_pack("{s:I, s:I, s:o, s:o}", "retentionMs", (json_int_t)e->cfg.retention_ms,
                          "tombstoneRetentionMs", (json_int_t)e->cfg.tombstone_ms,
                          "tombstoneAt", expired_at > 0 ? json_integer(expired_at)
                                                        : opt_time(tomb_at),
                          "forgetAt", opt_time(forget_at));
    return r != NULL && json_object_set_new(out, "retention", r) == 0 ? ONCE_OK : ONCE_ENOMEM;
}

/* One journal entry as a timeline entry: its members, plus a line for
 * people ("summary"). NULL when it is not one this version knows. */
static json_t *journal_entry(const json_t *x, int64_t *at)
{
    const char *kind = json_string_value(json_object_get(x, "kind"));
    json_int_t fence = json_integer_value(json_object_get(x, "fence"));
    char line[ONCE_OWNER_MAX * 2 + 160];
    *at = json_integer_value(json_object_get(x, "at"));
    if (kind == NULL)
        return NULL;
    const char *replica = json_string_value(json_object_get(x, "replica"));
    if (strcmp(kind, "turn") == 0) {
        const char *result = json_string_value(json_object_get(x, "result"));
        snprintf(line, sizeof line, "%s turn on %s, fence %lld, from step %lld%s%s",
                 json_is_true(json_object_get(x, "resumed")) ? "resumed" : "new",
                 replica ? replica : "?", (long long)fence,
                 (long long)json_integer_value(json_object_get(x, "step")),
                 result ? ", ended " : "", result ? result : "");
    } else if (strcmp(kind, "takeover") == 0) {
        const char *from = json_string_value(json_object_get(x, "from"));
        const char *to = json_string_value(json_object_get(x, "to"));
        snprintf(line, sizeof line, "takeover: lease of %s (fence %lld) to %s (fence %lld)",
                 from && from[0] ? from : "nobody", (long long)fence, to && to[0] ? to : "nobody",
                 (long long)json_integer_value(json_object_get(x, "newFence")));
    } else if (strcmp(kind, "fenced") == 0) {
        const char *what = json_string_value(json_object_get(x, "what"));
        snprintf(line, sizeof line, "refused %s of %s: its fence %lld, the task's %lld",
                 what && strcmp(what, "lease") == 0 ? "lease renewal" : "write",
                 replica ? replica : "?", (long long)fence,
                 (long long)json_integer_value(json_object_get(x, "storedFence")));
    } else if (strcmp(kind, "delivery") == 0) {
        const char *config = json_string_value(json_object_get(x, "config"));
        const char *result = json_string_value(json_object_get(x, "result"));
        json_int_t status = json_integer_value(json_object_get(x, "status"));
        char st[32] = "no answer";
        if (status > 0)
            snprintf(st, sizeof st, "HTTP %lld", (long long)status);
        snprintf(line, sizeof line, "webhook %s, generation %lld: %s (%s)", config ? config : "?",
                 (long long)json_integer_value(json_object_get(x, "generation")), st,
                 result ? result : "?");
    } else {
        return NULL;
    }
    json_t *j = json_deep_copy(x);
    if (j != NULL && json_object_set_new(j, "summary", json_string(line)) != 0) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* The journal's entries and counts into the timeline; "replays" (count and
 * last time, or null) and "journalDropped" into out. */
static int journal(const once_record *rec, json_t *out, timeline *t)
{
    json_t *jn = rec->journal != NULL ? once__json_parse(rec->journal) : NULL;
    size_t i;
    json_t *x;
    json_array_foreach (json_object_get(jn, "entries"), i, x) {
        int64_t at = 0;
        json_t *e = journal_entry(x, &at);
        if (e != NULL)
            add(t, at, e);
    }
    const json_t *rp = json_object_get(jn, "replays");
    json_int_t n = json_integer_value(json_object_get(rp, "n"));
    json_int_t last = json_integer_value(json_object_get(rp, "last"));
    if (n > 0) {
        char line[64];
        snprintf(line, sizeof line, "replayed %lld time%s", (long long)n, n == 1 ? "" : "s");
        add(t, last, json_pack("{s:s, s:I, s:s}", "kind", "replay", "count", n, "summary", line));
    }
    const char *reason;
    json_object_foreach (json_object_get(jn, "refused"), reason, x) {
        json_int_t rn = json_integer_value(json_object_get(x, "n"));
        char line[96];
        snprintf(line, sizeof line, "refused %lld send%s: %s", (long long)rn, rn == 1 ? "" : "s",
                 reason);
        add(t, json_integer_value(json_object_get(x, "last")),
            json_pack("{s:s, s:s, s:I, s:s}", "kind", "refusal", "reason", reason, "count", rn,
                      "summary", line));
    }
    json_t *r = n > 0 ? json_pack("{s:I, s:I}", "count", n, "last", last) : json_null();
    int rc = r != NULL && json_object_set_new(out, "replays", r) == 0 &&
                     json_object_set_new(out, "journalDropped",
                                         json_integer(json_integer_value(
                                             json_object_get(jn, "dropped")))) == 0
                 ? ONCE_OK
                 : ONCE_ENOMEM;
    json_decref(jn);
    return rc;
}

static int live(once__engine *e, const once_record *rec, json_t *out, timeline *t)
{
    int64_t now = once__now(e);
    int64_t after = rec->generation > ONCE_INSPECT_MAX_EVENTS
                        ? rec->generation - ONCE_INSPECT_MAX_EVENTS
                        : 0;
    if (json_object_set_new(out, "task", record_json(rec, now)) != 0 ||
        json_object_set_new(out, "expired", json_null()) != 0 ||
        json_object_set_new(out, "eventsOmitted", json_integer(after)) != 0)
        return ONCE_ENOMEM;
    int rc = effect_keys(rec, out);
    if (rc == ONCE_OK)
        rc = push_json(e, rec, out, t);
    if (rc == ONCE_OK)
        rc = retention(e, rec->finished_at, 0, out, t);
    if (rc == ONCE_OK)
        rc = artifacts_json(rec, out);
    if (rc == ONCE_OK)
        rc = add_events(e, rec, after, t);
    if (rc == ONCE_OK)
        rc = journal(rec, out, t);
    return rc;
}

static int expired(once__engine *e, const once_tombstone *tb, json_t *out, timeline *t)
{
    json_t *x = json_pack("{s:I, s:I, s:s}", "finishedAt", (json_int_t)tb->finished_at,
                          "expiredAt", (json_int_t)tb->expired_at, "firstDigest",
                          tb->first_digest);
    if (x == NULL || json_object_set_new(out, "expired", x) != 0 ||
        json_object_set_new(out, "task", json_null()) != 0 ||
        json_object_set_new(out, "eventsOmitted", json_integer(0)) != 0 ||
        json_object_set_new(out, "effectKeys", json_array()) != 0 ||
        json_object_set_new(out, "keysOmitted", json_integer(0)) != 0 ||
        json_object_set_new(out, "push", json_array()) != 0 ||
        json_object_set_new(out, "artifacts", json_array()) != 0 ||
        json_object_set_new(out, "artifactsOmitted", json_integer(0)) != 0 ||
        json_object_set_new(out, "replays", json_null()) != 0 ||
        json_object_set_new(out, "journalDropped", json_integer(0)) != 0)
        return ONCE_ENOMEM;
    add(t, tb->finished_at, json_pack("{s:s}", "kind", "finished"));
    add(t, tb->expired_at, json_pack("{s:s}", "kind", "expired"));
    return retention(e, tb->finished_at, tb->expired_at, out, t);
}

/* Load (principal, task_id) for the inspector: ONCE_OK (rec filled),
 * ONCE_ETOMBSTONE (tomb filled), or the error its callers answer. */
static int load(once__engine *e, const char *principal, const char *task_id, json_t **out,
                once_record *rec, once_tombstone *tomb)
{
    if (out == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    if (e == NULL || principal == NULL || principal[0] == '\0' ||
        strlen(principal) > ONCE_PRINCIPAL_MAX)
        return ONCE_EINVAL;
    if (task_id == NULL || !once_id_valid(task_id))
        return ONCE_ENOTFOUND;
    int rc = once_store_load(e->store, principal, task_id, rec, tomb);
    if (rc != ONCE_OK && rc != ONCE_ETOMBSTONE && rc != ONCE_ENOTFOUND)
        rc = once__store_rc(e, rc);
    return rc;
}

int once__engine_inspect(once__engine *e, const char *principal, const char *task_id,
                         json_t **out)
{
    once_record rec;
    once_tombstone tomb;
    int rc = load(e, principal, task_id, out, &rec, &tomb);
    if (rc != ONCE_OK && rc != ONCE_ETOMBSTONE)
        return rc;
    timeline t;
    memset(&t, 0, sizeof t);
    json_t *j = json_pack("{s:i, s:s, s:s, s:I, s:s}", "inspect", ONCE_INSPECT_VERSION,
                          "principal", principal, "taskId", task_id, "now",
                          (json_int_t)once__now(e), "replica", e->replica_id);
    if (j == NULL)
        rc = ONCE_ENOMEM;
    else if (rc == ONCE_OK)
        rc = live(e, &rec, j, &t);
    else
        rc = expired(e, &tomb, j, &t);
    once_record_clear(&rec);
    json_t *entries = entries_out(&t);
    if (rc == ONCE_OK && (entries == NULL || json_object_set_new(j, "entries", entries) != 0)) {
        entries = NULL;
        rc = ONCE_ENOMEM;
    }
    if (rc != ONCE_OK) {
        json_decref(entries);
        json_decref(j);
        return rc;
    }
    *out = j;
    return ONCE_OK;
}

/* The part as once__engine_inspect_part gives it (engine/inspect.h). */
static json_t *part_out(const json_t *art, const json_t *p)
{
    file_fields ff;
    const json_t *text = json_object_get(p, "text");
    int file = !json_is_string(text) && file_of(p, &ff);
    const json_t *data = json_object_get(p, "data");
    json_t *j = json_pack("{s:s, s:O?}", "kind",
                          json_is_string(text) ? "text" : file ? "file" : "data", "artifact",
                          json_object_get(art, "name"));
    int bad = j == NULL;
    if (!bad && json_is_string(text))
        bad = json_object_set(j, "text", (json_t *)text) != 0;
    else if (!bad && file)
        bad = (ff.name != NULL && json_object_set_new(j, "filename", json_string(ff.name))) ||
              (ff.type != NULL && json_object_set_new(j, "mediaType", json_string(ff.type))) ||
              (json_is_string(ff.raw) && json_object_set(j, "raw", (json_t *)ff.raw)) ||
              (json_is_string(ff.url) && json_object_set(j, "url", (json_t *)ff.url));
    else if (!bad)
        bad = json_object_set(j, "data", data != NULL ? (json_t *)data : json_null()) != 0;
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int once__engine_inspect_part(once__engine *e, const char *principal, const char *task_id,
                              const char *artifact_id, size_t index, json_t **out)
{
    once_record rec;
    once_tombstone tomb;
    int rc = artifact_id != NULL ? load(e, principal, task_id, out, &rec, &tomb) : ONCE_EINVAL;
    if (rc != ONCE_OK)
        return rc == ONCE_ETOMBSTONE ? ONCE_ENOTFOUND : rc;
    json_t *task = rec.task_json != NULL ? once__json_parse(rec.task_json) : NULL;
    once_record_clear(&rec);
    if (task == NULL)
        return ONCE_ECORRUPT;
    rc = ONCE_ENOTFOUND;
    size_t i;
    const json_t *a;
    json_array_foreach (json_object_get(task, "artifacts"), i, a) {
        const char *id = json_string_value(json_object_get(a, "artifactId"));
        const json_t *p = json_array_get(json_object_get(a, "parts"), index);
        if (id == NULL || strcmp(id, artifact_id) != 0 || p == NULL)
            continue;
        *out = part_out(a, p);
        rc = *out != NULL ? ONCE_OK : ONCE_ENOMEM;
        break;
    }
    json_decref(task);
    return rc;
}
