/*
 * jsonl.c -- the `--exec` JSON-lines protocol: the stdin input line and the
 * validator for stdout lines (docs/protocol.md is the user-facing text; keep
 * the two in step).
 *
 * Invariants: a line is accepted only when it holds exactly one command
 * member, every member is known and has the documented type, and every
 * Message, Artifact and Part inside it has the A2A 1.0 shape (a part holds
 * exactly one of text, raw, url, data). Strictness is deliberate: a typo such
 * as "lastchunk" or an A2A 0.3 "kind" member fails the task with a reason
 * that says so, instead of being silently dropped. Every reason quotes the
 * start of the line as printable, valid UTF-8, because it ends up in the
 * task's status message (JSON).
 */
#include "exec/jsonl.h"
#include "core/jcs.h"
#include "core/quote.h"
#include "core/shape.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


/* -------------------------------------------------------------- validation */

/* A problem found while validating; the first one wins. The Message,
 * Artifact and Part rules are core/shape.c's: the C work context applies the
 * same ones, so no executor can put on the wire what a line may not. */
typedef once__shape_err vprob;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int bad(vprob *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    return ONCE_EINVAL;
}

/* Values come from the command's output: quote them safely. */
static const char *qname(const char *key, char buf[48])
{
    once__quote(key, strlen(key), 40, buf, 48);
    return buf;
}

/* ---------------------------------------------------------------- commands */

int once__exec_settable(once_state s)
{
    return s == ONCE_STATE_WORKING || s == ONCE_STATE_INPUT_REQUIRED ||
           s == ONCE_STATE_AUTH_REQUIRED || s == ONCE_STATE_COMPLETED ||
           s == ONCE_STATE_FAILED || s == ONCE_STATE_REJECTED;
}

static int opt_bool(json_t *obj, const char *key, int *out, vprob *p)
{
    json_t *v = json_object_get(obj, key);
    *out = 0;
    if (v == NULL)
        return ONCE_OK;
    if (!json_is_boolean(v))
        return bad(p, "%s must be true or false", key);
    *out = json_is_true(v);
    return ONCE_OK;
}

static const char *const status_members[] = {"status", "message", "text", NULL};

static int parse_status(json_t *root, once__exec_cmd *c, vprob *p)
{
    json_t *st = json_object_get(root, "status");
    json_t *msg = json_object_get(root, "message");
    json_t *text = json_object_get(root, "text");
    char b[48];
    int rc;

    if (!json_is_string(st))
        return bad(p, "status must be a string");
    c->state = once_state_parse(json_string_value(st));
    if (c->state == ONCE_STATE_UNKNOWN)
        return bad(p, "unknown status \"%s\"", qname(json_string_value(st), b));
    if (!once__exec_settable(c->state))
        return bad(p, "status \"%s\" cannot be set by a command (use working, input-required, "
                      "auth-required, completed, failed or rejected)",
                   qname(json_string_value(st), b));
    if (msg && text)
        return bad(p, "status line has both message and text (give one)");
    if (msg) {
        if ((rc = once__shape_agent_message(msg, "message", p)) < 0)
            return rc;
        c->msg = json_incref(msg);
    } else if (text) {
        json_t *part;
        if (!json_is_string(text))
            return bad(p, "text must be a string");
        part = json_pack("{s:O}", "text", text);
        c->msg = part ? json_pack("{s:[o]}", "parts", part) : NULL;
        if (c->msg == NULL)
            return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

static const char *const artifact_line_members[] = {"artifact", "append", "lastChunk", NULL};

static int parse_artifact(json_t *root, once__exec_cmd *c, vprob *p)
{
    json_t *a = json_object_get(root, "artifact");
    int rc;

    if ((rc = once__shape_artifact(a, "artifact", p)) < 0 || (rc = opt_bool(root, "append", &c->append, p)) < 0 ||
        (rc = opt_bool(root, "lastChunk", &c->last_chunk, p)) < 0)
        return rc;
    if (c->append && json_object_get(a, "artifactId") == NULL)
        return bad(p, "append needs artifact.artifactId (the artifact to extend)");
    c->msg = json_incref(a);
    return ONCE_OK;
}

static const char *const reply_members[] = {"reply", NULL};

static int parse_reply(json_t *root, once__exec_cmd *c, vprob *p)
{
    json_t *m = json_object_get(root, "reply");
    int rc;

    if ((rc = once__shape_agent_message(m, "reply", p)) < 0)
        return rc;
    c->msg = json_incref(m);
    return ONCE_OK;
}

static const char *const checkpoint_members[] = {"checkpoint", "step", NULL};

static int parse_checkpoint(json_t *root, once__exec_cmd *c, vprob *p)
{
    json_t *cp = json_object_get(root, "checkpoint");
    json_t *step = json_object_get(root, "step");

    if (!json_is_string(cp))
        return bad(p, "checkpoint must be a string (encode structured state yourself)");
    if (step) {
        if (!json_is_integer(step) || json_integer_value(step) < 0)
            return bad(p, "step must be a non-negative integer");
        c->has_step = 1;
        c->step = json_integer_value(step);
    }
    c->text = once_strndup(json_string_value(cp), json_string_length(cp));
    return c->text ? ONCE_OK : ONCE_ENOMEM;
}

static const char *const log_members[] = {"log", NULL};

static int parse_log(json_t *root, once__exec_cmd *c, vprob *p)
{
    json_t *l = json_object_get(root, "log");

    if (!json_is_string(l))
        return bad(p, "log must be a string");
    c->text = once_strndup(json_string_value(l), json_string_length(l));
    return c->text ? ONCE_OK : ONCE_ENOMEM;
}

/* The command table: the member that names a command, the members its line
 * may carry, and its parser. */
static const struct {
    const char *name;
    once__exec_kind kind;
    const char *const *members;
    int (*parse)(json_t *root, once__exec_cmd *c, vprob *p);
} commands[] = {
    {"status", ONCE__EXEC_STATUS, status_members, parse_status},
    {"artifact", ONCE__EXEC_ARTIFACT, artifact_line_members, parse_artifact},
    {"reply", ONCE__EXEC_REPLY, reply_members, parse_reply},
    {"checkpoint", ONCE__EXEC_CHECKPOINT, checkpoint_members, parse_checkpoint},
    {"log", ONCE__EXEC_LOG, log_members, parse_log},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static int parse_object(json_t *root, once__exec_cmd *c, vprob *p)
{
    size_t found = NCOMMANDS;
    int rc;

    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (json_object_get(root, commands[i].name) == NULL)
            continue;
        if (found != NCOMMANDS)
            return bad(p, "line holds two commands (\"%s\" and \"%s\"); print one per line",
                       commands[found].name, commands[i].name);
        found = i;
    }
    if (found == NCOMMANDS)
        return bad(p, "unknown command (a line needs one of status, artifact, reply, "
                      "checkpoint, log)");
    if ((rc = once__shape_members(root, commands[found].members, commands[found].name, p)) < 0)
        return rc;
    c->kind = commands[found].kind;
    return commands[found].parse(root, c, p);
}

static int reject(int rc, const char *line, size_t n, const char *problem, char *why,
                  size_t whylen)
{
    char q[ONCE_EXEC_QUOTE_MAX + 8];

    if (why && whylen) {
        once__quote(line, n, ONCE_EXEC_QUOTE_MAX, q, sizeof q);
        snprintf(why, whylen, "%s (line: %s)", problem, q);
    }
    return rc;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

int once__exec_parse_line(const char *line, size_t n, once__exec_cmd *out, char *why,
                          size_t whylen)
{
    json_error_t jerr;
    json_t *root;
    vprob p;
    int rc;

    memset(out, 0, sizeof *out);
    if (why && whylen)
        why[0] = '\0';
    if (n > 0 && line[n - 1] == '\r')
        n--;
    if (n > ONCE_EXEC_LINE_MAX)
        return reject(ONCE_ERANGE, line, n, "output line longer than 1 MiB", why, whylen);
    if (blank(line, n))
        return ONCE_OK;
    rc = once__json_loadb(line, n, JSON_REJECT_DUPLICATES, &root, &jerr);
    if (rc == ONCE_ENOMEM)
        return reject(rc, line, n, "out of memory", why, whylen);
    if (rc != ONCE_OK) {
        char t[sizeof jerr.text + 32];
        snprintf(t, sizeof t, "output line is not JSON (%s)", jerr.text);
        once__quote(t, strlen(t), sizeof p.why - 4, p.why, sizeof p.why);
        return reject(ONCE_EPARSE, line, n, p.why, why, whylen);
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return reject(ONCE_EPARSE, line, n, "output line is not a JSON object", why, whylen);
    }
    p.why[0] = '\0';
    rc = parse_object(root, out, &p);
    json_decref(root);
    if (rc < 0) {
        once__exec_cmd_clear(out);
        if (rc == ONCE_ENOMEM)
            return reject(rc, line, n, "out of memory", why, whylen);
        return reject(rc, line, n, p.why, why, whylen);
    }
    return ONCE_OK;
}

void once__exec_cmd_clear(once__exec_cmd *c)
{
    if (c == NULL)
        return;
    json_decref(c->msg);
    once_free(c->text);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------- input */

/* The members below are null when the value is absent or cannot be JSON,
 * and NULL only when memory ran out: json_object_set_new then fails and the
 * whole input is ONCE_ENOMEM, never an input with a member silently null. */

/* Stored JSON text as a value; null when absent or not JSON. */
static json_t *parse_or_null(const char *text)
{
    json_t *v = NULL;
    if (text == NULL)
        return json_null();
    int rc = once__json_loads(text, 0, &v, NULL);
    return rc == ONCE_OK ? v : rc == ONCE_ENOMEM ? NULL : json_null();
}

/* A string; null when absent or not UTF-8 (JSON cannot carry it). */
static json_t *string_or_null(const char *s)
{
    if (s == NULL)
        return json_null();
    json_t *v = json_string(s);
    if (v != NULL)
        return v;
    size_t n = strlen(s), len;
    for (size_t i = 0; i < n; i += len)
        if ((len = once__utf8_seq((const unsigned char *)s + i, n - i)) == 0)
            return json_null();
    return NULL; /* valid text: what failed was memory */
}

int once__exec_input(const once__exec_turn *t, char **out, size_t *outlen)
{
    json_t *o = json_object();
    size_t need;
    char *buf;
    int bad_set = 0;

    *out = NULL;
    if (outlen)
        *outlen = 0;
    if (o == NULL)
        return ONCE_ENOMEM;
    bad_set |= json_object_set_new(o, "taskId", string_or_null(t->task_id));
    bad_set |= json_object_set_new(o, "contextId", string_or_null(t->context_id));
    bad_set |= json_object_set_new(o, "fence", json_integer(t->fence));
    bad_set |= json_object_set_new(o, "step", json_integer(t->step));
    bad_set |= json_object_set_new(o, "resumed", json_boolean(t->resumed));
    bad_set |= json_object_set_new(o, "message", parse_or_null(t->message_json));
    bad_set |= json_object_set_new(o, "task", parse_or_null(t->task_json));
    bad_set |= json_object_set_new(o, "checkpoint", string_or_null(t->checkpoint));
    char *text = NULL;
    if (bad_set || once__json_write(o, &text, &need) != ONCE_OK ||
        (buf = once_realloc(text, need + 2)) == NULL) {
        once_free(text);
        json_decref(o);
        return ONCE_ENOMEM;
    }
    json_decref(o);
    buf[need] = '\n';
    buf[need + 1] = '\0';
    *out = buf;
    if (outlen)
        *outlen = need + 1;
    return ONCE_OK;
}
