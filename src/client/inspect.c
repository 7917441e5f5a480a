/*
 * inspect.c -- `once inspect ID` (inspect.h): fetch a task's timeline from
 * the agent's inspector and print it for a terminal.
 *
 * The inspector hangs at the root of the agent's origin (/inspect/), not
 * below its JSON-RPC path. Its own 404 names TASK_NOT_FOUND; any other 404
 * means the server serves no inspector. Nothing the server sends reaches
 * the terminal as a control character (show.h).
 */
#include <inttypes.h>
#include <string.h>

#include "client/client_int.h"
#include "client/inspect.h"
#include "client/show.h"
#include "core/jcs.h"

#define PATH "/inspect/api/task/"

/* "<scheme>://<host[:port]>" of agent, then PATH and the ID encoded. */
static int timeline_url(const char *agent, const char *task_id, char *out, size_t outlen)
{
    const char *p = strstr(agent, "://");
    if (p == NULL)
        return ONCE_EINVAL;
    const char *slash = strchr(p + 3, '/');
    size_t n = slash != NULL ? (size_t)(slash - agent) : strlen(agent);
    int w = snprintf(out, outlen, "%.*s" PATH, (int)n, agent);
    if (w < 0 || (size_t)w >= outlen)
        return ONCE_ERANGE;
    size_t o = (size_t)w;
    for (const char *s = task_id; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~';
        if (o + 4 > outlen)
            return ONCE_ERANGE;
        o += (size_t)snprintf(out + o, outlen - o, plain ? "%c" : "%%%02X", c);
    }
    return ONCE_OK;
}

static int inspect_at(once_client *c, const char *agent, const char *task_id, char **text)
{
    char url[2048], why[256];
    if (once__agent_url_check(agent, why, sizeof why) != ONCE_OK) {
        once__client_seterr(c, "%s", why);
        return ONCE_EINVAL;
    }
    if (timeline_url(agent, task_id, url, sizeof url) != ONCE_OK) {
        once__client_seterr(c, "the agent URL and task ID make too long a URL");
        return ONCE_EINVAL;
    }
    once__http_req q = once__client_get(c, url, c->retry.attempt_timeout_ms);
    once__http_resp r;
    int rc = once__http_do(&q, &r);
    if (rc == ONCE_ENOMEM) {
        once__http_resp_clear(&r);
        return rc;
    }
    json_t *doc = NULL;
    if (r.body != NULL)
        (void)once__json_loads(r.body, 0, &doc, NULL);
    const char *status = json_string_value(
        json_object_get(json_object_get(doc, "error"), "status"));
    if (rc != ONCE_OK) {
        once__client_seterr(c, "%s: %s", url, r.error[0] ? r.error : "no answer");
        rc = ONCE_EIO;
    } else if (r.status == 200 && json_is_integer(json_object_get(doc, "inspect"))) {
        *text = r.body;
        r.body = NULL;
    } else if (r.status == 404 && status != NULL && strcmp(status, "TASK_NOT_FOUND") == 0) {
        once__client_seterr(c, "no task %s at %s (or it is another principal's)", task_id,
                            agent);
        rc = ONCE_ENOTFOUND;
    } else if (r.status == 404) {
        once__client_seterr(c, "%s serves no task inspector: start onced with --inspect", agent);
        rc = ONCE_EUNSUPPORTED;
    } else if (r.status == 401) {
        once__client_seterr(c, "the agent refused the token (HTTP 401): give --token or "
                               "$ONCE_TOKEN");
        rc = ONCE_EINVAL;
    } else {
        once__client_seterr(c, "%s answered HTTP %ld%s%s", url, r.status, status ? ": " : "",
                            status ? status : "");
        rc = ONCE_EIO;
    }
    json_decref(doc);
    once__http_resp_clear(&r);
    return rc;
}

/* ---- printing ---------------------------------------------------------------- */

/* s with control characters made visible (show.h); NULL as "-". */
static void put(FILE *f, const char *s)
{
    once__shows(f, s);
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static int64_t num(const json_t *o, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(o, key));
}

/* `label`, then member `key` of o (milliseconds since the epoch) as a UTC
 * time, or "-" when the task has none. */
static void put_time(FILE *f, const char *label, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    char ts[25];
    fputs(label, f);
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        fputs("-", f);
        return;
    }
    once_format_time((int64_t)json_integer_value(v), ts);
    fputs(ts, f);
}

static void print_task(FILE *f, const json_t *task)
{
    const json_t *lease = json_object_get(task, "lease");
    fprintf(f, "fence %" PRId64 "  step %" PRId64 "  version %" PRId64 "  generation %" PRId64
               "\nlease     ",
            num(task, "fence"), num(task, "step"), num(task, "version"), num(task, "generation"));
    if (json_is_object(lease)) {
        put(f, str(lease, "owner"));
        put_time(f, " until ", lease, "until");
        fputs(json_is_true(json_object_get(lease, "expired")) ? " (run out)" : "", f);
    } else {
        fputs("none", f);
    }
    put_time(f, "\ncreated   ", task, "createdAt");
    put_time(f, "  updated ", task, "updatedAt");
    put_time(f, "  finished ", task, "finishedAt");
    fputc('\n', f);
}

static void print_keys_push(FILE *f, const json_t *tl)
{
    size_t i;
    const json_t *e;
    if (json_array_size(json_object_get(tl, "effectKeys")) > 0)
        fprintf(f, "side-effect keys%s\n", num(tl, "keysOmitted") > 0 ? " (newest)" : "");
    json_array_foreach (json_object_get(tl, "effectKeys"), i, e) {
        fputs("  ", f);
        put(f, str(e, "key"));
        fputs(json_is_true(json_object_get(e, "current")) ? "  (current step)\n" : "\n", f);
    }
    if (json_array_size(json_object_get(tl, "push")) > 0)
        fputs("push deliveries\n", f);
    json_array_foreach (json_object_get(tl, "push"), i, e) {
        const json_t *d = json_object_get(e, "delivery");
        fputs("  ", f);
        put(f, str(e, "id"));
        fputs("  ", f);
        put(f, str(e, "url"));
        if (json_is_object(d)) {
            fprintf(f, "  delivered %" PRId64 "/%" PRId64 "  attempts %" PRId64
                       "  deliveries %" PRId64 " retries %" PRId64 " failures %" PRId64 "%s",
                    num(d, "delivered"), num(d, "target"), num(d, "attempts"),
                    num(d, "deliveries"), num(d, "retries"), num(d, "failures"),
                    json_is_true(json_object_get(d, "disabled")) ? "  stopped" : "");
            if (str(d, "lastError") != NULL && str(d, "lastError")[0] != '\0') {
                fputs("  last error: ", f);
                put(f, str(d, "lastError"));
            }
        }
        fputc('\n', f);
    }
}

/* One timeline line; 1 when it carries the '*' mark (an event shown at the
 * time of the one before), which the legend under the timeline explains. */
static int print_entry(FILE *f, const json_t *e)
{
    const char *kind = str(e, "kind") != NULL ? str(e, "kind") : "";
    int untimed = strcmp(kind, "event") == 0 && json_is_false(json_object_get(e, "timed"));
    put_time(f, "  ", e, "at");
    if (strcmp(kind, "event") == 0) {
        fprintf(f, "%s gen %-4" PRId64 " %-15s ", untimed ? "*" : " ", num(e, "generation"),
                str(e, "event") != NULL ? str(e, "event") : "?");
        put(f, str(e, "state") != NULL ? str(e, "state") : "");
        if (str(e, "artifact") != NULL) {
            fputs(" artifact ", f);
            put(f, str(e, "artifact"));
        }
        if (str(e, "text") != NULL) {
            fputs(" \"", f);
            put(f, str(e, "text"));
            fputc('"', f);
        }
    } else if (strcmp(kind, "deadline") == 0) {
        fprintf(f, "           %-15s %s%s", "deadline",
                strcmp(str(e, "what") ? str(e, "what") : "", "tombstone") == 0
                    ? "becomes a tombstone (TASK_EXPIRED)"
                    : "the ID is forgotten",
                json_is_true(json_object_get(e, "passed")) ? " (passed)" : "");
    } else {
        fprintf(f, "           %-15s ", kind);
        if (str(e, "summary") != NULL)   /* the journal's kinds */
            put(f, str(e, "summary"));
        if (str(e, "config") != NULL) {
            fprintf(f, "config ");
            put(f, str(e, "config"));
            fprintf(f, " attempt %" PRId64 " ", num(e, "attempts") + 1);
            put(f, str(e, "lastError"));
        }
    }
    fputc('\n', f);
    return untimed;
}

int once__inspect_print(FILE *f, const char *text)
{
    json_t *tl = NULL;
    if (once__json_loads(text, 0, &tl, NULL) != ONCE_OK || !json_is_object(tl)) {
        json_decref(tl);
        return ONCE_EPARSE;
    }
    const json_t *task = json_object_get(tl, "task");
    const json_t *expired = json_object_get(tl, "expired");
    const json_t *ret = json_object_get(tl, "retention");
    fputs("task      ", f);
    put(f, str(tl, "taskId"));
    fputs("  ", f);
    if (json_is_object(task)) {
        put(f, str(task, "state"));
        fputs("  context ", f);
        put(f, str(task, "contextId"));
        fputc('\n', f);
        print_task(f, task);
    } else if (json_is_object(expired)) {
        put_time(f, "EXPIRED (a tombstone: TASK_EXPIRED; nothing runs again)\nfinished  ",
                 expired, "finishedAt");
        put_time(f, "  tombstone since ", expired, "expiredAt");
        fputc('\n', f);
    }
    put_time(f, "retention tombstone at ", ret, "tombstoneAt");
    put_time(f, "  forgotten at ", ret, "forgetAt");
    fputc('\n', f);
    const json_t *rp = json_object_get(tl, "replays");
    if (json_is_object(rp)) {
        fprintf(f, "replayed %" PRId64 " time%s", num(rp, "count"),
                num(rp, "count") == 1 ? "" : "s");
        put_time(f, ", last at ", rp, "last");
        fputc('\n', f);
    }
    print_keys_push(f, tl);
    fprintf(f, "timeline (read by ");
    put(f, str(tl, "replica"));
    put_time(f, " at ", tl, "now");
    fputs(")\n", f);
    if (num(tl, "eventsOmitted") > 0)
        fprintf(f, "  (%" PRId64 " earlier events not shown)\n", num(tl, "eventsOmitted"));
    size_t i;
    const json_t *e;
    int marked = 0;
    json_array_foreach (json_object_get(tl, "entries"), i, e)
        marked |= print_entry(f, e);
    if (marked)   /* the same words as the web inspector's hint */
        fputs("  * no timestamp in the event: shown at the time of the one before\n", f);
    json_decref(tl);
    return ONCE_OK;
}

int once__client_inspect(once_client *c, const char *agent, const char *task_id, char **text)
{
    *text = NULL;
    /* One of the agent's endpoints: the one that answered last (replicas
     * sharing a store show the same timeline). */
    once__agent ag;
    int rc = once__agent_open(c, agent, 0, &ag);
    if (rc != ONCE_OK)
        return rc;
    rc = inspect_at(c, once__agent_url(&ag), task_id, text);
    once__agent_close(&ag);
    return rc;
}
