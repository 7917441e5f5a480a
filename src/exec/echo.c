/*
 * echo.c -- the built-in `echo` executor: a deterministic agent for tests,
 * examples and the quickstart. It routes on the text of the current
 * message's first text part:
 *   "ask:Q"    -> input-required, asking Q (agent message);
 *   "sleep:N"  -> stays working N seconds (fractions allowed), waking early
 *                 on cancellation, then completes with an echo artifact;
 *   "fail"     -> failed, reason "echo: asked to fail";
 *   otherwise  -> completed with artifact {"artifactId":"echo","name":"echo",
 *                 "parts":[{"text": <the text>}]}.
 * The turn after its own ask (the continuation) always completes with an
 * artifact echoing the answer, whatever the answer says.
 *
 * Invariants: the continuation is recognised by the checkpoint "echo:asked"
 * written before asking (persisted and fenced like everything else), never
 * by guessing from the text; the artifact id is fixed, so a turn resumed
 * after a takeover replaces its artifact instead of adding a second one.
 * Stateless: one static executor serves every thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/work_tree.h"
#include "once/executor.h"

#define ASKED "echo:asked"
#define SLEEP_SLICE_MS 100
#define SLEEP_MAX_S 86400.0

/* The first text part of a Message (*len its length), or NULL when it has
 * none; -1 when it is no Message with parts. */
static int text_part(const json_t *m, const char **text, size_t *len)
{
    json_t *parts = json_object_get(m, "parts"), *p;
    size_t i;

    *text = NULL;
    *len = 0;
    if (!json_is_array(parts))
        return -1;
    json_array_foreach(parts, i, p) {
        json_t *t = json_object_get(p, "text");
        if (json_is_string(t)) {
            *text = json_string_value(t);
            *len = json_string_length(t);
            break;
        }
    }
    return 0;
}

/* The first text part of a Message, once_malloc'd in *out; "" if it has
 * none. ONCE_ENOMEM when memory ran out; ONCE_EINVAL when it is no Message
 * with parts (every message a user sends has them: the codec refuses any
 * other), so the turn did not get its message. Echoing "" in either case
 * would be a confident wrong answer. The message is the work context's
 * tree (work_tree.h): read, never changed. */
static int first_text(const json_t *m, char **out)
{
    const char *text;
    size_t len;

    *out = NULL;
    if (text_part(m, &text, &len) != 0)
        return ONCE_EINVAL;
    *out = once_strndup(text ? text : "", len);
    return *out != NULL ? ONCE_OK : ONCE_ENOMEM;
}

static int echo_artifact(once_work *w, const char *text)
{
    json_t *a = json_pack("{s:s, s:s, s:[{s:s}]}", "artifactId", "echo", "name", "echo",
                          "parts", "text", text);
    return a != NULL ? once__work_artifact_tree(w, a, 0, 1) : ONCE_ENOMEM;
}

static int finish(once_work *w, const char *text)
{
    int rc = echo_artifact(w, text);
    return rc == ONCE_OK ? once_work_complete(w) : rc;
}

/* "sleep:N": N seconds, in slices so progress is steady and a cancel or
 * fence change is seen within one slice even if the sleep misses a wake. */
static int do_sleep(once_work *w, const char *text, const char *arg)
{
    char *end = NULL;
    double s = strtod(arg, &end);
    int64_t until;

    if (end == arg || *end != '\0' || !isfinite(s) || s < 0 || s > SLEEP_MAX_S)
        return once_work_fail(w, "echo: sleep:N needs N seconds between 0 and 86400");
    until = once_monotonic_ms() + (int64_t)(s * 1000.0);
    for (;;) {
        int64_t left = until - once_monotonic_ms();
        if (left <= 0)
            break;
        if (once_work_sleep(w, left < SLEEP_SLICE_MS ? left : SLEEP_SLICE_MS))
            return ONCE_ECANCELED;   /* canceled or fenced: write nothing */
    }
    return finish(w, text);
}

static int echo_run(const once_executor *ex, once_work *w)
{
    const char *cp = once_work_checkpoint(w);
    char *text;
    int rc = first_text(once__work_message_tree(w), &text);

    (void)ex;
    if (rc == ONCE_EINVAL)
        return once_work_fail(w, "echo: the turn's message could not be read");
    if (rc != ONCE_OK)
        return rc;
    if (cp != NULL && strcmp(cp, ASKED) == 0) {
        /* The mark stays: a continuation resumed after a takeover must
         * still be recognised as one. */
        rc = finish(w, text);
    } else if (strncmp(text, "ask:", 4) == 0) {
        rc = once_work_checkpoint_set(w, ASKED, once_work_step(w));
        if (rc == ONCE_OK)
            rc = once_work_ask(w, text + 4);
    } else if (strncmp(text, "sleep:", 6) == 0) {
        rc = do_sleep(w, text, text + 6);
    } else if (strcmp(text, "fail") == 0) {
        rc = once_work_fail(w, "echo: asked to fail");
    } else {
        rc = finish(w, text);
    }
    once_free(text);
    return rc;
}

/* Every turn but "sleep:N" finishes at once (a continuation after "ask:"
 * whose answer starts with "sleep:" finishes at once too, but is not told
 * apart here: it runs on a turn worker, which is always correct). */
static int echo_quick(const once_executor *ex, once_work *w)
{
    const char *text;
    size_t len;

    (void)ex;
    if (text_part(once__work_message_tree(w), &text, &len) != 0)
        return 1;   /* it fails at once */
    return text == NULL || len < 6 || strncmp(text, "sleep:", 6) != 0;
}

static const once_executor echo_executor = {
    .name = "echo",
    .run = echo_run,
    .destroy = NULL,
    .ctx = NULL,
    .flags = ONCE_EXECUTOR_BATCH | ONCE_EXECUTOR_INLINE,
    .quick = echo_quick,
};

const once_executor *once_executor_echo(void)
{
    return &echo_executor;
}
