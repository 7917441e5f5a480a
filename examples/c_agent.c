/*
 * c_agent.c -- an agent written in C against include/once/executor.h, served
 * as an A2A 1.0 server with everything onced does (dedup, fencing, leases,
 * retention) by once_server_start (include/once/server.h). It uses the
 * public headers alone, so it builds against an installed libonce:
 *
 *   cc -o c_agent c_agent.c $(pkg-config --cflags --libs once jansson)
 *   c_agent --listen 127.0.0.1:8080 --store sqlite:once.db
 *
 * (jansson is this example's own choice for building JSON; libonce's
 * allocator hook routes its allocations, hence the once_free below.)
 *
 * It is examples/review_agent.py in C: the same contract review and the same
 * other answers, chosen the same way, so one test (tests/e2e/
 * test_executors.py) checks the exact A2A JSON a client gets from both. A
 * messageId starting with "ping-" is answered first; otherwise
 * message.metadata.route, or else the first text part, picks the answer:
 *
 *   messageId ping-*  a direct Message "pong" that names the messageId
 *   "reply: X"   a direct Message (no task) holding X
 *   "parts"      an artifact with every part kind (text, raw, url, data)
 *   "inspect"    two turns reporting what run() reads: message, fence, step,
 *                checkpoint, the task's state, history and artifacts so far
 *   "reject"     rejected;  "fail"  failed;  both with a reason
 *   "auth"       auth-required; the next message completes
 *   "sleep: N"   working N seconds, watching for cancellation, then completed
 *   "slow: N"    a blocking N-second call that does not watch for
 *                cancellation, then an artifact: after a cancel that write is
 *                refused with ONCE_EFENCED and nothing of it is visible
 *   anything else: the contract review; turn 1 asks which jurisdiction
 *                governs the contract (input-required), turn 2 streams the
 *                review in two chunks and completes.
 *
 * How a turn works: the engine calls run() on a worker thread. run() reads
 * the turn (once_work_message, once_work_task, once_work_checkpoint, ...),
 * then writes through the work context; every write is fenced, so once the
 * task was canceled or taken over a write returns ONCE_EFENCED and changes
 * nothing. A state that ends the turn (input-required, auth-required,
 * completed, failed, rejected, or a direct reply) is the last write; if run()
 * returns without one, the engine completes the task (ONCE_OK) or fails it.
 * The executor keeps no state of its own: what a later turn needs goes into
 * the checkpoint, which every later turn (and any replica that takes the task
 * over) reads back.
 */
#define _POSIX_C_SOURCE 200809L   /* sigwait, pthread_sigmask, nanosleep */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "once/executor.h"
#include "once/server.h"
#include "once/store.h"

#define AGENT "c_agent"
#define QUESTION "Which jurisdiction governs this contract?"

/* ------------------------------------------------------------------------
 * Small helpers: JSON in and out of the work context.
 */

/* The JSON text of v (reference stolen), or NULL. libonce routes jansson's
 * allocations through its allocator: once_free() it. The work context
 * copies what it keeps. */
static char *dump(json_t *v)
{
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return text;
}

static int put_status(once_work *w, once_state state, json_t *message)
{
    char *text = dump(message);
    int rc = text ? once_work_status(w, state, text) : ONCE_ENOMEM;
    once_free(text);
    return rc;
}

static int put_artifact(once_work *w, json_t *artifact, int append, int last_chunk)
{
    char *text = dump(artifact);
    int rc = text ? once_work_artifact(w, text, append, last_chunk) : ONCE_ENOMEM;
    once_free(text);
    return rc;
}

static int put_reply(once_work *w, json_t *message)
{
    char *text = dump(message);
    int rc = text ? once_work_reply(w, text) : ONCE_ENOMEM;
    once_free(text);
    return rc;
}

static int put_checkpoint(once_work *w, json_t *state, int64_t step)
{
    char *text = dump(state);
    int rc = text ? once_work_checkpoint_set(w, text, step) : ONCE_ENOMEM;
    once_free(text);
    return rc;
}

/* An agent message with one text part, formatted (any length). */
__attribute__((format(printf, 1, 2))) static json_t *text_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *text = json_vsprintf(fmt, ap);
    va_end(ap);
    return json_pack("{s:[{s:o}]}", "parts", "text", text);
}

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static char *base64(const unsigned char *in, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = once_malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        *o++ = abc[v >> 18 & 63];
        *o++ = abc[v >> 12 & 63];
        *o++ = i + 1 < n ? abc[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? abc[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* "N" -> seconds in 0..86400, or -1. */
static double seconds(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    return end != s && *end == '\0' && isfinite(v) && v >= 0 && v <= 86400 ? v : -1;
}

/* ------------------------------------------------------------------------
 * The contract review.
 */

static int ask_jurisdiction(once_work *w, const char *contract)
{
    int rc = put_status(w, ONCE_STATE_WORKING,
                        text_message("reading the contract (%zu characters)",
                                     utf8_chars(contract)));
    /* The checkpoint goes before the question: the question ends the turn. */
    if (rc == ONCE_OK)
        rc = put_checkpoint(w, json_pack("{s:s, s:s}", "phase", "asked", "contract", contract),
                            once_work_step(w));
    if (rc == ONCE_OK)
        rc = put_status(w, ONCE_STATE_INPUT_REQUIRED,
                        json_pack("{s:[{s:s}], s:{s:s}}", "parts", "text", QUESTION, "metadata",
                                  "question", "jurisdiction"));
    return rc;
}

static int review(once_work *w, json_t *state, const char *answer)
{
    const char *contract = json_string_value(json_object_get(state, "contract"));
    int64_t step = once_work_step(w);
    char key[ONCE_EFFECT_KEY_MAX + 1];

    /* "<task>:step-<n>": the same for this step after any takeover, so a
     * service that dedups on it sees a re-executed step as a retry. Copied:
     * the work context's copy lives only until the next write. */
    snprintf(key, sizeof key, "%s", once_work_effect_key(w));
    int rc = put_status(w, ONCE_STATE_WORKING, text_message("reviewing under %s law", answer));
    if (rc == ONCE_OK)
        rc = put_artifact(w,
                          json_pack("{s:s, s:s, s:s, s:[{s:o, s:s}]}", "artifactId", "review",
                                    "name", "review.md", "description", "contract review",
                                    "parts", "text",
                                    json_sprintf("# Review\n\nContract: %s\n",
                                                 contract ? contract : ""),
                                    "mediaType", "text/markdown"),
                          0, 0);
    if (rc == ONCE_OK && once_work_sleep(w, 50))   /* thinking; wakes on cancel */
        return ONCE_ECANCELED;
    if (rc == ONCE_OK)   /* an appended chunk adds its parts to the artifact */
        rc = put_artifact(w,
                          json_pack("{s:s, s:[{s:o, s:s}]}", "artifactId", "review", "parts",
                                    "text",
                                    json_sprintf("Governing law: %s. No blocking issues.\n",
                                                 answer),
                                    "mediaType", "text/markdown"),
                          1, 1);
    if (rc == ONCE_OK)
        rc = put_checkpoint(w, json_pack("{s:s, s:s}", "phase", "reviewed", "filed", key),
                            step + 1);
    if (rc == ONCE_OK)
        rc = put_status(w, ONCE_STATE_COMPLETED, text_message("review filed as %s", key));
    return rc;
}

/* ------------------------------------------------------------------------
 * The other answers.
 */

static int every_part_kind(once_work *w)
{
    static const unsigned char blob[] = {0x00, 0x01, 'b', 'i', 'n', 'a', 'r', 'y'};
    char *raw = base64(blob, sizeof blob);
    if (raw == NULL)
        return ONCE_ENOMEM;
    json_t *a = json_pack(
        "{s:s, s:s, s:s, s:{s:b}, s:["
        "{s:s},"
        "{s:s, s:s, s:s},"
        "{s:s, s:s, s:s},"
        "{s:{s:f, s:[s]}, s:s, s:{s:s}}]}",
        "artifactId", "kinds", "name", "kinds", "description", "one part of each kind",
        "metadata", "example", 1, "parts",
        "text", "plain text",
        "raw", raw, "filename", "blob.bin", "mediaType", "application/octet-stream",
        "url", "https://example.com/contract.pdf", "filename", "contract.pdf", "mediaType",
        "application/pdf",
        "data", "score", 0.93, "flags", "ok", "mediaType", "application/json", "metadata",
        "schema", "review/v1");
    once_free(raw);
    int rc = put_artifact(w, a, 0, 1);
    return rc == ONCE_OK ? once_work_complete(w) : rc;
}

/* Turn 1 of "inspect": a progress message with two kinds of parts, an
 * artifact, a checkpoint that advances the step, then a question. */
static int inspect_first(once_work *w, json_t *msg)
{
    json_t *status = json_pack(
        "{s:[{s:s}, {s:{s:O?, s:I, s:I}, s:s}]}", "parts", "text", "looking at your message",
        "data", "messageId", json_object_get(msg, "messageId"), "fence",
        (json_int_t)once_work_fence(w), "step", (json_int_t)once_work_step(w), "mediaType",
        "application/json");
    int rc = put_status(w, ONCE_STATE_WORKING, status);
    if (rc == ONCE_OK)
        rc = put_artifact(w,
                          json_pack("{s:s, s:s, s:[{s:s}]}", "artifactId", "notes", "name",
                                    "notes", "parts", "text", "first turn notes"),
                          0, 1);
    if (rc == ONCE_OK)
        rc = put_checkpoint(w, json_pack("{s:s}", "phase", "inspect"), once_work_step(w) + 1);
    if (rc == ONCE_OK)
        rc = put_status(w, ONCE_STATE_INPUT_REQUIRED, text_message("anything else?"));
    return rc;
}

/* Turn 2 of "inspect": everything the work context shows, as a data part. */
static int inspect_second(once_work *w, json_t *msg)
{
    json_t *task = json_loads(once_work_task(w), 0, NULL);
    json_t *roles = json_array(), *ids = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(task, "history"), i, v)
        json_array_append(roles, json_object_get(v, "role"));
    json_array_foreach(json_object_get(task, "artifacts"), i, v)
        json_array_append(ids, json_object_get(v, "artifactId"));
    const char *cp = once_work_checkpoint(w);
    json_t *seen = json_pack(
        "{s:O?, s:O, s:I, s:I, s:b, s:s?, s:O?, s:o, s:o}", "messageId",
        json_object_get(msg, "messageId"), "message", msg, "fence",
        (json_int_t)once_work_fence(w), "step", (json_int_t)once_work_step(w), "resumed",
        once_work_resumed(w), "checkpoint", cp, "state",
        json_object_get(json_object_get(task, "status"), "state"), "historyRoles", roles,
        "artifactIds", ids);
    json_decref(task);
    int rc = put_artifact(w,
                          json_pack("{s:s, s:s, s:s, s:[{s:o, s:s}]}", "artifactId", "inspect",
                                    "name", "inspect", "description",
                                    "what the agent read on this turn", "parts", "data", seen,
                                    "mediaType", "application/json"),
                          0, 1);
    return rc == ONCE_OK ? once_work_complete(w) : rc;
}

static int sleep_route(once_work *w, const char *arg)
{
    double s = seconds(arg);
    if (s < 0)
        return once_work_fail(w, AGENT ": sleep: N needs 0 to 86400 seconds");
    int rc = put_status(w, ONCE_STATE_WORKING, text_message("sleeping %g s", s));
    if (rc != ONCE_OK)
        return rc;
    /* once_work_sleep wakes early when the task is canceled (or taken over,
     * or onced stops): then write nothing more and return. */
    if (once_work_sleep(w, (int64_t)(s * 1000.0))) {
        fprintf(stderr, AGENT ": task %s canceled while sleeping; stopping\n",
                once_work_task_id(w));
        return ONCE_ECANCELED;
    }
    return once_work_complete(w);
}

static int slow_route(once_work *w, const char *arg)
{
    double s = seconds(arg);
    if (s < 0)
        return once_work_fail(w, AGENT ": slow: N needs 0 to 86400 seconds");
    int rc = put_status(w, ONCE_STATE_WORKING, text_message("calling a slow service (%g s)", s));
    if (rc != ONCE_OK)
        return rc;
    /* A call that cannot be interrupted. A real agent checks
     * once_work_canceled() after it; this one writes anyway, to show that
     * the fence keeps a canceled turn's writes out of the task. */
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    rc = put_artifact(w,
                      json_pack("{s:s, s:[{s:s}]}", "artifactId", "late", "parts", "text",
                                "written after the call"),
                      0, 1);
    if (rc == ONCE_EFENCED) {
        fprintf(stderr, AGENT ": task %s: the late artifact was fenced off (%s)\n",
                once_work_task_id(w), once_strerror(rc));
        return rc;
    }
    return rc == ONCE_OK ? once_work_complete(w) : rc;
}

/* ------------------------------------------------------------------------
 * One turn: read the message and the checkpoint, route.
 */

static const char *first_text(json_t *msg)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(msg, "parts"), i, p) {
        const char *t = json_string_value(json_object_get(p, "text"));
        if (t != NULL)
            return t;
    }
    return "";
}

static int space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A copy of s without leading and trailing whitespace (once_free it). */
static char *trim(const char *s)
{
    size_t n;
    while (space(*s))
        s++;
    for (n = strlen(s); n > 0 && space(s[n - 1]); n--)
        ;
    return once_strndup(s, n);
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The answer for one turn; text is the first text part, trimmed. */
static int route_turn(once_work *w, json_t *msg, json_t *state, const char *text)
{
    const char *phase = json_string_value(json_object_get(state, "phase"));
    const char *mid = json_string_value(json_object_get(msg, "messageId"));
    const char *route = json_string_value(json_object_get(json_object_get(msg, "metadata"),
                                                          "route"));
    if (route == NULL)
        route = text;

    /* A checkpoint that says a question is open: this turn is its answer. */
    if (phase != NULL && strcmp(phase, "asked") == 0)
        return review(w, state, text[0] ? text : "unspecified");
    if (phase != NULL && strcmp(phase, "auth") == 0)
        return put_status(w, ONCE_STATE_COMPLETED,
                          text_message("signed in; the archive is open"));
    if (phase != NULL && strcmp(phase, "inspect") == 0)
        return inspect_second(w, msg);

    if (mid != NULL && starts(mid, "ping-"))
        return put_reply(w, json_pack("{s:[{s:s}], s:{s:s, s:s}}", "parts", "text", "pong",
                                      "metadata", "answeredBy", AGENT, "inReplyTo", mid));
    if (starts(route, "reply:")) {
        char *answer = trim(route + 6);
        int rc = answer ? put_reply(w, json_pack("{s:[{s:s}], s:{s:s}}", "parts", "text",
                                                 answer, "metadata", "answeredBy", AGENT))
                        : ONCE_ENOMEM;
        once_free(answer);
        return rc;
    }
    if (strcmp(route, "parts") == 0)
        return every_part_kind(w);
    if (strcmp(route, "inspect") == 0)
        return inspect_first(w, msg);
    if (strcmp(route, "reject") == 0)
        return put_status(w, ONCE_STATE_REJECTED, text_message(AGENT " only reviews contracts"));
    if (strcmp(route, "auth") == 0) {
        int rc = put_checkpoint(w, json_pack("{s:s}", "phase", "auth"), once_work_step(w));
        return rc != ONCE_OK ? rc
                             : put_status(w, ONCE_STATE_AUTH_REQUIRED,
                                          text_message("sign in to the contract archive first"));
    }
    if (strcmp(route, "fail") == 0)
        return once_work_fail(w, AGENT ": asked to fail");
    if (starts(route, "sleep:"))
        return sleep_route(w, route + 6);
    if (starts(route, "slow:"))
        return slow_route(w, route + 5);
    return ask_jurisdiction(w, text);
}

static int agent_run(const once_executor *ex, once_work *w)
{
    (void)ex;
    json_t *msg = json_loads(once_work_message(w), 0, NULL);
    const char *cp = once_work_checkpoint(w);
    json_t *state = cp ? json_loads(cp, 0, NULL) : NULL;

    char *text = msg ? trim(first_text(msg)) : NULL;

    fprintf(stderr, AGENT ": task %s fence %lld step %lld resumed %d\n", once_work_task_id(w),
            (long long)once_work_fence(w), (long long)once_work_step(w), once_work_resumed(w));
    int rc = text ? route_turn(w, msg, state, text) : msg ? ONCE_ENOMEM : ONCE_EINVAL;
    once_free(text);
    json_decref(state);
    json_decref(msg);
    return rc;
}

static const once_executor agent = {.name = AGENT, .run = agent_run};

/* ------------------------------------------------------------------------
 * The server: a store, then once_server_start with our executor.
 */

static int usage(FILE *f, int status)
{
    fprintf(f, "usage: " AGENT " --listen HOST:PORT --store URL\n"
               "An A2A 1.0 agent written in C (examples/c_agent.c), served like onced.\n");
    return status;
}

int main(int argc, char **argv)
{
    const char *listen_at = NULL, *store_url = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0)
            return usage(stdout, 0);
        if (i + 1 < argc && strcmp(argv[i], "--listen") == 0)
            listen_at = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--store") == 0)
            store_url = argv[++i];
        else
            return usage(stderr, 2);
    }
    if (listen_at == NULL || store_url == NULL)
        return usage(stderr, 2);

    /* SIGINT/SIGTERM are blocked in every thread (they inherit the mask)
     * and taken by sigwait below: the clean way to stop. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512] = "";
    once_store *store = NULL;
    /* Durability and lock waits are the URL's (FULL and 5 s by default). */
    int rc = once_store_open(store_url, NULL, &store, err, sizeof err);
    if (rc != ONCE_OK) {
        fprintf(stderr, AGENT ": --store: %s (%s)\n", err, once_strerror(rc));
        return 1;
    }
    once_server_options o = {
        .store = store,
        .executor = &agent,
        .listen = listen_at,
        .name = AGENT,
        .description = "A contract-review agent written in C (examples/c_agent.c).",
        .skill_id = "review",
        .skill_description = "Reviews a contract; asks which jurisdiction governs it.",
    };
    once_server *srv = NULL;
    if ((rc = once_server_start(&o, &srv, err, sizeof err)) != ONCE_OK) {
        fprintf(stderr, AGENT ": %s\n", err[0] ? err : once_strerror(rc));
        once_store_close(store);
        return 1;
    }
    printf(AGENT " listening on %s\n", once_server_url(srv));
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, AGENT ": signal %d, shutting down\n", sig);
    once_server_stop(srv);   /* running turns are asked to stop first */
    once_store_close(store);
    return 0;
}
