/*
 * inspect_html.c -- the inspector's pages, drawn on the server: the task
 * list, one task's timeline, and short notes (errors, the login form).
 * Readable without JavaScript; the one script (inspect_assets.c) only
 * refreshes a task page's <main id="live"> from the page itself.
 *
 * Invariant: every string that comes from a task, a query or a principal
 * goes through once__html_text (and, inside a URL, once__url_text first);
 * only constants and numbers are written as they are.
 */
#include <inttypes.h>
#include <string.h>

#include "http/inspect.h"

#define P once__mtext_printf

static const char *const states[] = {
    "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",   "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"};

void once__html_text(once__mtext *t, const char *s)
{
    if (s == NULL)
        return;
    while (*s != '\0') {
        size_t n = strcspn(s, "&<>\"'");
        if (n > 0)
            P(t, "%.*s", (int)n, s);
        s += n;
        switch (*s) {
        case '&': P(t, "&amp;"); break;
        case '<': P(t, "&lt;"); break;
        case '>': P(t, "&gt;"); break;
        case '"': P(t, "&quot;"); break;
        case '\'': P(t, "&#39;"); break;
        default: return;
        }
        s++;
    }
}

void once__url_text(once__mtext *t, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            P(t, "%c", c);
        else
            P(t, "%%%02X", c);
    }
}

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static int64_t num(const json_t *o, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(o, key));
}

/* A time in ms as RFC 3339, or `none` when it is absent (null, 0). */
static void when(once__mtext *t, const json_t *v, const char *none)
{
    char ts[25];
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
        P(t, "%s", none);
        return;
    }
    once_format_time((int64_t)json_integer_value(v), ts);
    P(t, "<time>%s</time>", ts);
}

/* "TASK_STATE_INPUT_REQUIRED" -> class "s-input-required". */
static void state_badge(once__mtext *t, const char *state, const char *id)
{
    const char *s = state != NULL ? state : "";
    const char *short_name = strncmp(s, "TASK_STATE_", 11) == 0 ? s + 11 : s;
    P(t, "<span class=\"state s-");
    for (const char *c = short_name; *c != '\0'; c++) {
        char ch = *c == '_' ? '-' : *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c;
        if ((ch >= 'a' && ch <= 'z') || ch == '-')
            P(t, "%c", ch);
    }
    P(t, "\"%s%s%s>", id != NULL ? " id=\"" : "", id != NULL ? id : "", id != NULL ? "\"" : "");
    once__html_text(t, s);
    P(t, "</span>");
}

static void head(once__mtext *t, const char *title)
{
    P(t, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width\"><title>");
    once__html_text(t, title);
    P(t, " - once inspector</title><link rel=\"stylesheet\" href=\"/inspect/inspect.css\">"
         "</head>\n");
}

static void bar(once__mtext *t, const char *principal)
{
    P(t, "<header><a class=\"home\" href=\"/inspect/\">once inspector</a>");
    if (principal != NULL) {
        P(t, " <span class=\"who\">");
        once__html_text(t, principal);
        P(t, "</span>");
    }
    P(t, " <a href=\"/inspect/login\">sign in</a></header>\n");
}

void once__inspect_note_page(once__mtext *t, const char *title, const char *text, int form)
{
    head(t, title);
    P(t, "<body>");
    bar(t, NULL);
    P(t, "<main><h1>");
    once__html_text(t, title);
    P(t, "</h1><p>");
    once__html_text(t, text);
    P(t, "</p>");
    if (form)
        P(t, "<form method=\"post\" action=\"/inspect/login\"><label>Token "
             "<input type=\"password\" name=\"token\" id=\"token\" "
             "autocomplete=\"current-password\"></label> <button type=\"submit\">Sign in"
             "</button></form>");
    P(t, "</main></body></html>\n");
}

/* ---- the list -------------------------------------------------------------- */

/* "&name=value" (URL-encoded) when value is set. */
static void query_arg(once__mtext *t, const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return;
    P(t, "&amp;%s=", name);
    once__url_text(t, value);
}

static void filter_form(once__mtext *t, const once__inspect_filter *f)
{
    P(t, "<form class=\"filter\" method=\"get\" action=\"/inspect/\">"
         "<label>State <select name=\"state\"><option value=\"\">any</option>");
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
        P(t, "<option%s>%s</option>",
          f->state != NULL && strcmp(f->state, states[i]) == 0 ? " selected" : "", states[i]);
    P(t, "</select></label> <label>Context <input name=\"context\" value=\"");
    once__html_text(t, f->context);
    P(t, "\"></label> <label>Updated after <input name=\"after\" "
         "placeholder=\"2026-12-03T10:00:00Z\" value=\"");
    once__html_text(t, f->after);
    P(t, "\"></label> <button type=\"submit\">Filter</button></form>\n");
}

/* The replicas that beat into the store, for an operator (h_admin.c's
 * once/admin/replicas answer); every value escaped. */
static void cluster_table(once__mtext *t, const json_t *cluster)
{
    const json_t *rows = json_object_get(cluster, "replicas");
    if (!json_is_array(rows))
        return;
    P(t, "<section id=\"cluster\"><h2>Replicas</h2><table><thead><tr><th>Replica</th>"
         "<th>Version</th><th>Started</th><th>Last beat</th><th>Alive</th>"
         "<th title=\"turns running there at its last beat\">Leases</th></tr></thead><tbody>\n");
    size_t i;
    const json_t *r;
    json_array_foreach (rows, i, r) {
        const char *alive = json_is_true(json_object_get(r, "alive"))     ? "yes"
                            : json_is_true(json_object_get(r, "stopped")) ? "stopped"
                                                                          : "no";
        P(t, "<tr><td><code>");
        once__html_text(t, str(r, "id"));
        P(t, "</code></td><td>");
        once__html_text(t, str(r, "version"));
        P(t, "</td><td><time>");
        once__html_text(t, str(r, "startedAt"));
        P(t, "</time></td><td><time>");
        once__html_text(t, str(r, "lastBeat"));
        P(t, "</time></td><td class=\"alive-%s\">%s</td><td>%lld</td></tr>\n", alive, alive,
          (long long)num(r, "leases"));
    }
    P(t, "</tbody></table></section>\n");
}

void once__inspect_list_page(once__mtext *t, const once__inspect_filter *f, const json_t *result,
                             const char *error, const char *principal, const json_t *cluster)
{
    head(t, "Tasks");
    P(t, "<body>");
    bar(t, principal);
    P(t, "<main>");
    if (cluster != NULL)
        cluster_table(t, cluster);
    P(t, "<h1>Tasks</h1>\n");
    filter_form(t, f);
    if (error != NULL) {
        P(t, "<p class=\"error\" id=\"error\">");
        once__html_text(t, error);
        P(t, "</p></main></body></html>\n");
        return;
    }
    const json_t *tasks = json_object_get(result, "tasks");
    P(t, "<table id=\"tasks\"><thead><tr><th>Task</th><th>State</th><th>Context</th>"
         "<th>Updated</th></tr></thead><tbody>\n");
    size_t i;
    const json_t *task;
    json_array_foreach (tasks, i, task) {
        const json_t *status = json_object_get(task, "status");
        P(t, "<tr><td><a href=\"/inspect/task/");
        {
            once__mtext u = {0};
            once__url_text(&u, str(task, "id"));
            once__html_text(t, u.buf);
            t->oom |= u.oom;
            once__mtext_free(&u);
        }
        P(t, "\"><code>");
        once__html_text(t, str(task, "id"));
        P(t, "</code></a></td><td>");
        state_badge(t, str(status, "state"), NULL);
        P(t, "</td><td><code>");
        once__html_text(t, str(task, "contextId"));
        P(t, "</code></td><td><time>");
        once__html_text(t, str(status, "timestamp"));
        P(t, "</time></td></tr>\n");
    }
    P(t, "</tbody></table>\n");
    if (json_array_size(tasks) == 0)
        P(t, "<p class=\"empty\">No tasks on this page.</p>\n");
    const char *next = str(result, "nextPageToken");
    if (next != NULL && next[0] != '\0') {
        P(t, "<p><a id=\"next\" href=\"/inspect/?page=");
        once__url_text(t, next);
        query_arg(t, "state", f->state);
        query_arg(t, "context", f->context);
        query_arg(t, "after", f->after);
        P(t, "\">Next page</a></p>\n");
    }
    P(t, "</main></body></html>\n");
}

/* ---- one task -------------------------------------------------------------- */

static void fact(once__mtext *t, const char *name, const char *id)
{
    P(t, "<tr><th>%s</th><td id=\"%s\">", name, id);
}

/* One line on each of the record's counters, for whoever does not know the
 * model yet: a tooltip on its name, and the legend under the table. */
static const char *const counters[][4] = {
    {"Fence", "f-fence", "fence",
     "raised each time a replica takes the task's lease for a turn; a write that carries an "
     "older fence is refused, so a stalled worker cannot overwrite its successor"},
    {"Step", "f-step", "step",
     "the agent's checkpointed progress; each step's side effects use the key "
     "TASK:step-N, so a retried step is recognised"},
    {"Version", "f-version", "version",
     "the record's write counter: every write compares it and adds one, so two replicas "
     "never both apply a change"},
    {"Generation", "f-generation", "generation",
     "the number of an event: one per change of the task (status, artifact), in order; the "
     "record shows the latest, and a stream resumes after the last one it saw"}};

static void facts(once__mtext *t, const json_t *tl, const json_t *task)
{
    const json_t *lease = json_object_get(task, "lease");
    P(t, "<table class=\"facts\"><tbody>");
    fact(t, "Context", "f-context");
    P(t, "<code>");
    once__html_text(t, str(task, "contextId"));
    P(t, "</code></td></tr>");
    fact(t, "Kind", "f-kind");
    once__html_text(t, str(task, "kind"));
    P(t, "</td></tr>");
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        P(t, "<tr><th title=\"%s\">%s</th><td id=\"%s\">%" PRId64 "</td></tr>",
          counters[i][3], counters[i][0], counters[i][1], num(task, counters[i][2]));
    }
    fact(t, "Lease", "f-lease");
    if (json_is_object(lease)) {
        once__html_text(t, str(lease, "owner"));
        P(t, " until ");
        when(t, json_object_get(lease, "until"), "-");
        P(t, "%s", json_is_true(json_object_get(lease, "expired")) ? " (run out)" : "");
    } else {
        P(t, "none");
    }
    P(t, "</td></tr>");
    static const char *const times[][3] = {{"Created", "f-created", "createdAt"},
                                           {"Updated", "f-updated", "updatedAt"},
                                           {"Finished", "f-finished", "finishedAt"}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        fact(t, times[i][0], times[i][1]);
        when(t, json_object_get(task, times[i][2]), "-");
        P(t, "</td></tr>");
    }
    const json_t *rp = json_object_get(tl, "replays");
    fact(t, "Replayed", "f-replays");
    if (json_is_object(rp)) {
        P(t, "replayed %" PRId64 " time%s, last at ", num(rp, "count"),
          num(rp, "count") == 1 ? "" : "s");
        when(t, json_object_get(rp, "last"), "-");
    } else {
        P(t, "never");
    }
    P(t, "</td></tr>");
    fact(t, "Read by", "f-replica");
    once__html_text(t, str(tl, "replica"));
    P(t, " at ");
    when(t, json_object_get(tl, "now"), "-");
    P(t, "</td></tr></tbody></table>\n<dl class=\"legend\" id=\"legend\">");
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        P(t, "<dt>%s</dt><dd>%s.</dd>", counters[i][0], counters[i][3]);
    P(t, "</dl>\n");
}

static void retention(once__mtext *t, const json_t *tl)
{
    const json_t *r = json_object_get(tl, "retention");
    P(t, "<h2>Retention</h2><table class=\"facts\" id=\"retention\"><tbody>");
    fact(t, "Becomes a tombstone", "r-tombstone");
    when(t, json_object_get(r, "tombstoneAt"), "when it has been finished for --retention");
    P(t, "</td></tr>");
    fact(t, "ID forgotten", "r-forget");
    when(t, json_object_get(r, "forgetAt"), "--tombstone-retention after that");
    P(t, "</td></tr></tbody></table>\n");
}

static void keys(once__mtext *t, const json_t *tl)
{
    const json_t *k = json_object_get(tl, "effectKeys");
    if (json_array_size(k) == 0)
        return;
    P(t, "<h2>Side-effect keys</h2>");
    if (num(tl, "keysOmitted") > 0)
        P(t, "<p>%" PRId64 " earlier steps not shown.</p>", num(tl, "keysOmitted"));
    P(t, "<ol id=\"keys\">");
    size_t i;
    const json_t *e;
    json_array_foreach (k, i, e) {
        P(t, "<li value=\"%" PRId64 "\"><code>", num(e, "step"));
        once__html_text(t, str(e, "key"));
        P(t, "</code>%s</li>",
          json_is_true(json_object_get(e, "current")) ? " <em>current step</em>" : "");
    }
    P(t, "</ol>\n");
}

static void push(once__mtext *t, const json_t *tl)
{
    const json_t *p = json_object_get(tl, "push");
    if (json_array_size(p) == 0)
        return;
    P(t, "<h2>Push deliveries</h2><table id=\"push\"><thead><tr><th>Config</th><th>URL</th>"
         "<th>Delivered</th><th>Attempts</th><th>Delivered / retries / failures</th>"
         "<th>Last error</th></tr></thead><tbody>");
    size_t i;
    const json_t *c;
    json_array_foreach (p, i, c) {
        const json_t *d = json_object_get(c, "delivery");
        P(t, "<tr><td><code>");
        once__html_text(t, str(c, "id"));
        P(t, "</code></td><td>");
        once__html_text(t, str(c, "url"));
        P(t, "</td>");
        if (json_is_object(d)) {
            P(t, "<td>%" PRId64 " of %" PRId64 "%s</td><td>%" PRId64 "</td><td>%" PRId64
                 " / %" PRId64 " / %" PRId64 "</td><td>",
              num(d, "delivered"), num(d, "target"),
              json_is_true(json_object_get(d, "disabled")) ? " (stopped)" : "",
              num(d, "attempts"), num(d, "deliveries"), num(d, "retries"), num(d, "failures"));
            once__html_text(t, str(d, "lastError"));
            P(t, "</td>");
        } else {
            P(t, "<td colspan=\"4\">no delivery row</td>");
        }
        P(t, "</tr>");
    }
    P(t, "</tbody></table>\n");
}

/* The detail column of one entry. */
static void detail(once__mtext *t, const json_t *e, const char *kind)
{
    if (strcmp(kind, "deadline") == 0) {
        int tomb = strcmp(str(e, "what") != NULL ? str(e, "what") : "", "tombstone") == 0;
        P(t, "%s%s", tomb ? "becomes a tombstone (TASK_EXPIRED)" : "the ID is forgotten",
          json_is_true(json_object_get(e, "passed")) ? " - passed" : "");
    } else if (strcmp(kind, "expired") == 0) {
        P(t, "became a tombstone: the ID answers TASK_EXPIRED");
    } else if (strcmp(kind, "finished") == 0) {
        P(t, "finished");
    } else if (strcmp(kind, "pushRetry") == 0) {
        P(t, "webhook retry of config <code>");
        once__html_text(t, str(e, "config"));
        P(t, "</code>, attempt %" PRId64 ": ", num(e, "attempts") + 1);
        once__html_text(t, str(e, "lastError"));
    } else if (str(e, "summary") != NULL) {   /* the journal's kinds (inspect.c) */
        once__html_text(t, str(e, "summary"));
    } else if (str(e, "user") != NULL) {
        P(t, "%s <q class=\"user\">",
          json_is_true(json_object_get(e, "continued")) ? "The user answered:"
                                                        : "The user's message:");
        once__html_text(t, str(e, "user"));
        P(t, "</q> <span class=\"ev\">");
        once__html_text(t, str(e, "event"));
        P(t, "</span>");
    } else {
        const char *ev = str(e, "event") != NULL ? str(e, "event") : "";
        int agent = strcmp(ev, "statusUpdate") == 0 || strcmp(ev, "message") == 0;
        if (str(e, "artifact") != NULL) {
            P(t, "Artifact <b>");
            once__html_text(t, str(e, "artifact"));
            P(t, "</b>");
        } else if (agent && str(e, "text") != NULL) {
            P(t, "The agent");
        }
        if (str(e, "text") != NULL) {
            P(t, "%s<q>", str(e, "artifact") != NULL || agent ? ": " : "");
            once__html_text(t, str(e, "text"));
            P(t, "</q> ");
        }
        P(t, "<span class=\"ev\">");
        once__html_text(t, ev);
        P(t, "</span>");
    }
}

/* "+340 ms", "+1.2 s", "+4 min 5 s", "+2 h 10 min", "+3 d 0 h". */
static void elapsed(once__mtext *t, int64_t ms)
{
    int64_t s = ms / 1000, m = s / 60, h = m / 60;
    if (ms < 1000)
        P(t, "+%" PRId64 " ms", ms);
    else if (s < 60)
        P(t, "+%" PRId64 ".%" PRId64 " s", s, ms % 1000 / 100);
    else if (m < 60)
        P(t, "+%" PRId64 " min %" PRId64 " s", m, s % 60);
    else if (h < 24)
        P(t, "+%" PRId64 " h %" PRId64 " min", h, m % 60);
    else
        P(t, "+%" PRId64 " d %" PRId64 " h", h / 24, h % 24);
}

/* The link that downloads part `index` of artifact aid of task id. */
static void part_href(once__mtext *t, const char *id, const char *aid, int64_t index)
{
    once__mtext u = {0};
    P(&u, "/inspect/file/");
    once__url_text(&u, id);
    P(&u, "?artifact=");
    once__url_text(&u, aid);
    P(&u, "&part=%" PRId64, index);
    P(t, "<a class=\"download\" download href=\"");
    once__html_text(t, u.buf);
    P(t, "\">");
    t->oom |= u.oom;
    once__mtext_free(&u);
}

/* The task's artifacts: a text part shown (cut as in the timeline), a file
 * or data part by name and type with a link that downloads it. */
static void artifacts(once__mtext *t, const json_t *tl)
{
    const json_t *arts = json_object_get(tl, "artifacts");
    const char *id = str(tl, "taskId");
    if (json_array_size(arts) == 0)
        return;
    P(t, "<h2>Artifacts</h2><ul id=\"artifacts\">");
    size_t i, k;
    const json_t *a, *p;
    json_array_foreach (arts, i, a) {
        const char *aid = str(a, "artifactId");
        P(t, "<li class=\"artifact\"><b>");
        once__html_text(t, str(a, "name") != NULL ? str(a, "name") : aid);
        P(t, "</b> <code>");
        once__html_text(t, aid);
        P(t, "</code>");
        if (str(a, "description") != NULL) {
            P(t, " ");
            once__html_text(t, str(a, "description"));
        }
        P(t, "<ul class=\"parts\">");
        json_array_foreach (json_object_get(a, "parts"), k, p) {
            const char *kind = str(p, "kind") != NULL ? str(p, "kind") : "";
            int bytes = strcmp(kind, "file") != 0 || json_is_integer(json_object_get(p, "size"));
            P(t, "<li class=\"part p-%s\">", strcmp(kind, "text") == 0   ? "text"
                                               : strcmp(kind, "file") == 0 ? "file"
                                                                           : "data");
            if (strcmp(kind, "text") == 0) {
                P(t, "<q>");
                once__html_text(t, str(p, "text"));
                P(t, "</q> ");
            }
            if (bytes && aid != NULL)
                part_href(t, id, aid, num(p, "index"));
            once__html_text(t, str(p, "filename") != NULL ? str(p, "filename")
                               : strcmp(kind, "text") == 0 ? "text"
                               : strcmp(kind, "data") == 0 ? "data (JSON)"
                                                           : "file");
            P(t, "%s", bytes && aid != NULL ? "</a>" : "");
            if (str(p, "mediaType") != NULL || json_is_integer(json_object_get(p, "size"))) {
                P(t, " <span class=\"type\">(");
                once__html_text(t, str(p, "mediaType"));
                if (json_is_integer(json_object_get(p, "size")))
                    P(t, "%s%" PRId64 " bytes", str(p, "mediaType") != NULL ? ", " : "",
                      num(p, "size"));
                P(t, ")</span>");
            }
            if (str(p, "url") != NULL) {
                P(t, " at <code>");
                once__html_text(t, str(p, "url"));
                P(t, "</code>");
            }
            P(t, "</li>");
        }
        if (num(a, "partsOmitted") > 0)
            P(t, "<li>%" PRId64 " more parts not shown.</li>", num(a, "partsOmitted"));
        P(t, "</ul></li>");
    }
    P(t, "</ul>\n");
    if (num(tl, "artifactsOmitted") > 0)
        P(t, "<p>%" PRId64 " more artifacts not shown.</p>\n", num(tl, "artifactsOmitted"));
}

static void entries(once__mtext *t, const json_t *tl)
{
    P(t, "<h2>Timeline</h2>");
    if (num(tl, "eventsOmitted") > 0)
        P(t, "<p>%" PRId64 " earlier events not shown.</p>", num(tl, "eventsOmitted"));
    P(t, "<table id=\"timeline\"><thead><tr><th>Time</th><th title=\"since the row before\">"
         "Elapsed</th><th title=\"%s\">Generation</th><th>State</th><th>What</th></tr></thead>"
         "<tbody>\n", counters[3][3]);
    size_t i;
    const json_t *e;
    int64_t before = 0;
    json_array_foreach (json_object_get(tl, "entries"), i, e) {
        const char *kind = str(e, "kind") != NULL ? str(e, "kind") : "";
        P(t, "<tr class=\"k-");
        once__html_text(t, kind);
        P(t, "\"");
        if (json_is_integer(json_object_get(e, "generation")))
            P(t, " data-generation=\"%" PRId64 "\"", num(e, "generation"));
        P(t, "><td>");
        when(t, json_object_get(e, "at"), "-");
        P(t, "%s</td><td class=\"dt\">", json_is_false(json_object_get(e, "timed")) ? "*" : "");
        if (i > 0)
            elapsed(t, num(e, "at") - before);
        before = num(e, "at");
        P(t, "</td><td>");
        if (strcmp(kind, "event") == 0)
            P(t, "%" PRId64, num(e, "generation"));
        P(t, "</td><td>");
        if (str(e, "state") != NULL)
            state_badge(t, str(e, "state"), NULL);
        P(t, "</td><td>");
        detail(t, e, kind);
        P(t, "</td></tr>\n");
    }
    P(t, "</tbody></table><p class=\"hint\">* no timestamp in the event: the time of the one "
         "before.</p>\n");
}

void once__inspect_task_page(once__mtext *t, const json_t *tl)
{
    const json_t *task = json_object_get(tl, "task");
    const json_t *expired = json_object_get(tl, "expired");
    const char *id = str(tl, "taskId");
    const char *state = json_is_object(task) ? str(task, "state") : "TASK_EXPIRED";
    int live = json_is_object(task) && !json_is_true(json_object_get(task, "terminal"));
    head(t, id);
    P(t, "<body data-task=\"");
    once__html_text(t, id);
    P(t, "\" data-generation=\"%" PRId64 "\" data-live=\"%d\">",
      json_is_object(task) ? num(task, "generation") : 0, live);
    bar(t, str(tl, "principal"));
    P(t, "<main id=\"live\"><h1>Task <code id=\"task-id\">");
    once__html_text(t, id);
    P(t, "</code> ");
    state_badge(t, state, "state");
    P(t, "</h1>\n");
    if (json_is_object(expired)) {
        P(t, "<p class=\"expired\" id=\"expired\">Expired: finished ");
        when(t, json_object_get(expired, "finishedAt"), "-");
        P(t, ", a tombstone since ");
        when(t, json_object_get(expired, "expiredAt"), "-");
        P(t, ". A message for this ID is answered TASK_EXPIRED; nothing runs again.</p>\n");
    }
    entries(t, tl);
    artifacts(t, tl);
    if (!json_is_object(expired)) {
        P(t, "<h2>The record</h2>");
        facts(t, tl, task);
    }
    retention(t, tl);
    keys(t, tl);
    push(t, tl);
    P(t, "</main><script src=\"/inspect/inspect.js\"></script></body></html>\n");
}
