/*
 * once.c -- the once client CLI: parse flags, open the client (its outbox),
 * run one command, print, map the outcome to an exit status.
 *
 * Thin on purpose: minting, the outbox, retries, waiting and recovery live
 * in libonce (include/once/client.h, src/client). Exit statuses are part of
 * the interface (scripts branch on them) and are listed in the usage text.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "cli/once_opts.h"
#include "client/show.h"
#include "client/admin.h"
#include "client/inspect.h"
#include "client/webhook_listen.h"
#include "core/generation.h"
#include "http/http.h"
#include "once/client.h"
#include "once/webhook.h"

enum { EXIT_OK = 0, EXIT_OTHER = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3, EXIT_EXHAUSTED = 4,
       EXIT_TASK_FAILED = 5, EXIT_FINISHED = 6, EXIT_INTERRUPTED = 130 };

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    interrupted = 1;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("once: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'once --help'.\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* ONCE_TEST_CRASH=after-outbox|after-send: die by SIGKILL at that point,
 * exactly as a kill -9 would (process-level tests of recovery). */
static void crash_hook(void *ctx, once_client_point p)
{
    const char *want = ctx;
    if ((p == ONCE_POINT_AFTER_OUTBOX && strcmp(want, "after-outbox") == 0) ||
        (p == ONCE_POINT_AFTER_SEND && strcmp(want, "after-send") == 0))
        kill(getpid(), SIGKILL);
}

/* ---------------------------------------------------------------------------
 * Flags: the table is cli/once_opts.c.
 */

/* The command line into o: -1 when a command is to run, else the exit
 * status (2 for a bad one; --help, --version and the hidden --help-man and
 * --help-markdown print and exit 0). */
static int parse_args(int argc, char **argv, cli *o)
{
    char err[512];
    int rc = opt_parse(&once_options, argc, argv, o, err, sizeof err);
    if (rc < 0)
        return bad("%s", err);
    if (rc > 0) {
        opt_print(&once_options, rc, stdout);
        return EXIT_OK;
    }
    if (o->connect_timeout_ms >= 0)
        o->retry.connect_timeout_ms = o->connect_timeout_ms;
    o->listen_limits.max_body_memory = (size_t)o->body_memory;
    if (o->cmd == NULL)
        return bad("a command is needed");
    return -1;
}

/* ---------------------------------------------------------------------------
 * Output.
 */
static void print_json(json_t *doc)
{
    char *s = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s != NULL)
        printf("%s\n", s);
    free(s);
    json_decref(doc);
}

static json_t *result_json(const once_call_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "outcome", json_string(once_outcome_name(r->outcome)));
    json_object_set_new(o, "taskId", r->task_id[0] ? json_string(r->task_id) : json_null());
    if (r->state != ONCE_STATE_UNKNOWN)
        json_object_set_new(o, "state", json_string(once_state_name(r->state)));
    json_object_set_new(o, "replayed", json_boolean(r->replayed));
    json_object_set_new(o, "attempts", json_integer(r->attempts));
    json_object_set_new(o, "elapsedMs", json_integer(r->elapsed_ms));
    if (r->intent > 0)
        json_object_set_new(o, "intent", json_integer(r->intent));
    if (r->endpoint != NULL)
        json_object_set_new(o, "endpoint", json_string(r->endpoint));
    if (r->json != NULL) {
        json_error_t je;
        json_t *v = json_loads(r->json, 0, &je);
        if (v != NULL)
            json_object_set_new(o, r->is_message ? "message" : "task", v);
    }
    if (r->outcome != ONCE_OUTCOME_OK) {
        json_t *e = json_object();
        if (r->rpc_code != 0)
            json_object_set_new(e, "code", json_integer(r->rpc_code));
        if (r->reason[0])
            json_object_set_new(e, "reason", json_string(r->reason));
        json_object_set_new(e, "message", json_string(r->error ? r->error : ""));
        if (r->http_status)
            json_object_set_new(e, "httpStatus", json_integer(r->http_status));
        json_object_set_new(o, "error", e);
    }
    return o;
}

/* The status message's text parts of a Task (what the agent says). */
static void print_status_texts(const char *json)
{
    json_error_t je;
    json_t *v = json ? json_loads(json, 0, &je) : NULL;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(json_object_get(json_object_get(v, "status"), "message"),
                                       "parts"),
                       i, p)
    {
        const char *t = json_string_value(json_object_get(p, "text"));
        if (t != NULL) {
            fputs("  agent: ", stdout);
            once__shows(stdout, t);
            putchar('\n');
        }
    }
    json_decref(v);
}

/* Showing (and with --out, saving) every part of an answer. */
typedef struct parts_ctx {
    cli *o;
    json_t *saved;               /* --json: what was saved */
    int failed;                  /* a part could not be saved */
    size_t parts;                /* parts seen */
} parts_ctx;

/* Where --out put name: one '/' between them whether or not DIR ends in one. */
static const char *out_path(const cli *o, const char *name, char *buf, size_t len)
{
    size_t d = strlen(o->out);
    snprintf(buf, len, "%s%s%s", o->out, d > 0 && o->out[d - 1] == '/' ? "" : "/", name);
    return buf;
}

static int show_part(void *ctx, const once_part *p)
{
    parts_ctx *x = ctx;
    static const char *const kinds[] = {"", "text", "file", "data"};
    char name[128] = "", err[512] = "", path[4096];
    int src = x->o->out ? once_part_save(x->o->out, p, name, sizeof name, err, sizeof err)
                        : ONCE_ENOTFOUND;
    int saved = src == ONCE_OK || src == ONCE_EEXISTS;
    x->parts++;
    if (!saved && src != ONCE_ENOTFOUND) {
        fprintf(stderr, "once: --out: %s\n", err);
        x->failed = 1;
    }
    if (x->saved != NULL) {
        if (saved)
            json_array_append_new(x->saved,
                                  json_pack("{s:s?,s:I,s:s,s:s,s:b}", "artifact", p->artifact,
                                            "part", (json_int_t)p->index, "kind", kinds[p->kind],
                                            "file", name, "unchanged", src == ONCE_EEXISTS));
        return 0;
    }
    /* Every text the agent chose is shown with its control characters
     * visible (client/show.h); the saved name is ours and plain. */
    if (p->artifact == NULL && p->kind == ONCE_PART_TEXT) {
        fputs("  message: ", stdout);
        once__show(stdout, (const char *)p->bytes, p->size);
    } else {
        if (p->artifact != NULL) {
            fputs("  artifact ", stdout);
            once__shows(stdout, p->artifact);
            printf(": %s", kinds[p->kind]);
        } else
            printf("  message: %s", kinds[p->kind]);
        if (p->filename != NULL) {
            putchar(' ');
            once__shows(stdout, p->filename);
        }
        printf(" (");
        if (p->media_type != NULL) {
            once__shows(stdout, p->media_type);
            printf(", ");
        }
        if (p->url != NULL) {
            printf("url ");
            once__shows(stdout, p->url);
            putchar(')');
        } else
            printf("%zu bytes)", p->size);
        if (p->kind == ONCE_PART_TEXT) {
            printf(": ");
            once__show(stdout, (const char *)p->bytes, p->size);
        }
    }
    /* Where it went, and why not under its first name: a second save of
     * the same answer writes nothing and says so. */
    if (saved)
        printf(" -> %s%s%s%s", out_path(x->o, name, path, sizeof path),
               src == ONCE_EEXISTS ? " (already saved: unchanged)" : "", err[0] ? " (" : "",
               err[0] ? err : "");
    if (saved && err[0])
        putchar(')');
    putchar('\n');
    return 0;
}

/* Show every part of the answer (text mode), save them under --out; into
 * doc's "saved" with --json. 1 if a part could not be read or saved. */
static int show_parts(cli *o, const char *json, json_t *doc)
{
    parts_ctx x = {.o = o, .saved = doc ? json_array() : NULL};
    if (doc == NULL)
        print_status_texts(json);
    if (json != NULL && once_parts_each(json, show_part, &x) != ONCE_OK) {
        /* Not this command's failure unless it was asked to save them. */
        fprintf(stderr, "once: the answer has a part this client cannot read%s\n",
                o->out ? ": not saved" : "");
        x.failed |= o->out != NULL;
    } else if (o->out != NULL && x.parts == 0) {
        fprintf(stderr, "once: --out: the answer has no artifacts: nothing saved in %s\n",
                o->out);
    }
    if (doc != NULL && o->out != NULL)
        json_object_set_new(doc, "saved", x.saved);
    else
        json_decref(x.saved);
    return x.failed;
}

static int exit_for(int rc, const once_call_result *r, int waited)
{
    switch (r->outcome) {
    case ONCE_OUTCOME_OK:
        if (rc != ONCE_OK)
            return EXIT_OTHER;
        if (waited && (r->state == ONCE_STATE_FAILED || r->state == ONCE_STATE_CANCELED ||
                       r->state == ONCE_STATE_REJECTED))
            return EXIT_TASK_FAILED;
        return EXIT_OK;
    case ONCE_OUTCOME_REFUSED:
        return EXIT_REFUSED;
    case ONCE_OUTCOME_EXHAUSTED:
        return EXIT_EXHAUSTED;
    case ONCE_OUTCOME_INTERRUPTED:
        return EXIT_INTERRUPTED;
    default:
        return EXIT_OTHER;
    }
}

static int intent_state_of(void *ctx, const once_intent *it)
{
    *(once_intent_state *)ctx = it->state;
    return 0;
}

/* The state the outbox holds for intent seq now; 0 when it cannot say. */
static once_intent_state intent_now(cli *o, int64_t seq)
{
    once_intent_state st = 0;
    if (seq <= 0 || once_client_intent(o->c, seq, intent_state_of, &st) != ONCE_OK)
        return 0;
    return st;
}

/* Say where intent seq stands and what finishes it, from what the outbox
 * holds after the command (never from what the command meant to do), so
 * that every message about an intent matches `once outbox`. */
static void say_intent(cli *o, int64_t seq, const char *id)
{
    once_intent_state st = intent_now(o, seq);
    if (st == ONCE_INTENT_PENDING)
        fprintf(stderr, "once: intent %lld stays pending in the outbox; `once recover` "
                        "sends it again, `once abandon %s` gives up on it\n",
                (long long)seq, id);
    else if (st == ONCE_INTENT_ACKNOWLEDGED)
        fprintf(stderr, "once: intent %lld is acknowledged in the outbox: the agent has the "
                        "task; `once wait %s` waits again, `once recover` polls it\n",
                (long long)seq, id);
    else if (st != 0)
        fprintf(stderr, "once: intent %lld is %s in the outbox\n", (long long)seq,
                once_intent_state_name(st));
}

/* Print r (human or JSON) and return the exit status. */
static int report(cli *o, int rc, const once_call_result *r, int waited)
{
    if (o->json) {
        json_t *doc = result_json(r);
        once_intent_state st = intent_now(o, r->intent);
        if (st != 0)
            json_object_set_new(doc, "intentState", json_string(once_intent_state_name(st)));
        if (waited && o->gens != NULL) {
            json_object_set(doc, "generations", o->gens);
            json_object_set_new(doc, "streamed", json_boolean(o->streamed));
        }
        int failed = r->outcome == ONCE_OUTCOME_OK && show_parts(o, r->json, doc);
        print_json(doc);
        int ex = exit_for(rc, r, waited);
        return failed && ex == EXIT_OK ? EXIT_OTHER : ex;
    }
    /* What the agent said (its task ID, an error's text) is shown with
     * control characters visible (client/show.h). */
    char id[3 * ONCE_ID_MAX + 8], said[1024], why[256];
    once__showbuf(r->task_id[0] ? r->task_id : "-", id, sizeof id);
    once__showbuf(r->error, said, sizeof said);
    once__showbuf(r->reason, why, sizeof why);
    switch (r->outcome) {
    case ONCE_OUTCOME_OK:
        if (rc != ONCE_OK)
            break;
        printf("%s\t%s%s\n", id, r->is_message ? "MESSAGE" : once_state_name(r->state),
               r->replayed ? "\treplayed" : "");
        if (show_parts(o, r->json, NULL) && exit_for(rc, r, waited) == EXIT_OK)
            return EXIT_OTHER;
        return exit_for(rc, r, waited);
    case ONCE_OUTCOME_REFUSED:
        printf("%s\t%s\trefused\n", id,
               r->state != ONCE_STATE_UNKNOWN ? once_state_name(r->state) : "-");
        fprintf(stderr, "once: refused by the agent: %s (code %d%s%s)\n", said, r->rpc_code,
                r->reason[0] ? ", " : "", why);
        return EXIT_REFUSED;
    case ONCE_OUTCOME_EXHAUSTED:
        if (strcmp(r->reason, "WAIT_TIMEOUT") == 0) {
            /* The agent holds the task: only the waiting stopped. */
            fprintf(stderr, "once: %s: gave up waiting after --wait-timeout; the task is still %s\n",
                    id, once_state_name(r->state));
            if (r->intent > 0)
                say_intent(o, r->intent, id);
            else
                fprintf(stderr, "once: the agent has it: `once wait %s` waits again\n", id);
            return EXIT_EXHAUSTED;
        }
        fprintf(stderr, "once: %s: %s\n", id, r->error ? said : why);
        say_intent(o, r->intent, id);
        return EXIT_EXHAUSTED;
    case ONCE_OUTCOME_INTERRUPTED:
        fprintf(stderr, "once: interrupted\n");
        if (r->attempts > 0)
            say_intent(o, r->intent, id);
        return EXIT_INTERRUPTED;
    default:
        break;
    }
    /* Refused before anything was written (a bad agent URL, a bad ID):
     * the command line is at fault, and nothing is left to recover. */
    if (rc == ONCE_EINVAL && r->intent == 0 && r->error != NULL)
        return bad("%s", said);
    if (r->http_status == 401) {
        fprintf(stderr, "once: %s: the agent %s (HTTP 401): pass --token or set ONCE_TOKEN\n", id,
                o->token != NULL ? "does not accept this token" : "wants a token");
        return EXIT_OTHER;
    }
    if (r->rpc_code == -32601)
        fprintf(stderr, "once: %s: the agent does not know this A2A 1.0 method; once speaks A2A "
                        "1.0 (an A2A 0.3 agent cannot answer it)\n", id);
    fprintf(stderr, "once: %s: %s\n", id,
            r->error ? said
            : once_client_errmsg(o->c)[0]
                ? once__showbuf(once_client_errmsg(o->c), said, sizeof said)
                : once_strerror(rc));
    say_intent(o, r->intent, id);
    return EXIT_OTHER;
}

static void on_state(void *ctx, const char *task_id, once_state s, const char *json)
{
    cli *o = ctx;
    char id[3 * ONCE_ID_MAX + 8];
    if (o->tty && s != o->shown)
        fprintf(stderr, "%s: %s\n", once__showbuf(task_id, id, sizeof id), once_state_name(s));
    o->shown = s;
}

/* Every event a wait sees: its generation goes into the --json output. */
static void on_event(void *ctx, const once_wait_event *ev)
{
    cli *o = ctx;
    if (ev->generation > 0)
        json_array_append_new(o->gens, json_integer(ev->generation));
    o->streamed |= ev->streamed;
}

static int64_t generation_of(const char *task_json)
{
    json_error_t je;
    json_t *t = task_json ? json_loads(task_json, 0, &je) : NULL;
    int64_t g = once__generation_of(t);
    json_decref(t);
    return g;
}

/* Follow a task (SSE or polling) until it is finished or asks for input;
 * after_json is the Task the caller already holds (send/continue), or NULL. */
static int follow(cli *o, const char *task_id, const char *after_json, once_state after_state,
                  once_call_result *r)
{
    o->gens = json_array();
    once_wait_spec w = {.agent = o->agent, .task_id = task_id, .timeout_ms = o->wait_timeout_ms,
                        .poll = o->poll, .on_state = on_state, .on_event = on_event, .ctx = o};
    if (after_json != NULL && (w.after_generation = generation_of(after_json)) > 0) {
        w.state = after_state;
        json_array_append_new(o->gens, json_integer(w.after_generation));
    }
    return once_client_follow(o->c, &w, r);
}

/* ---------------------------------------------------------------------------
 * Commands.
 */
static int parts_from_args(cli *o, char **out)
{
    if ((o->text == NULL) == (o->file == NULL))
        return bad("%s needs exactly one of --text or --file", o->cmd);
    json_t *part;
    if (o->text != NULL) {
        part = json_pack("{s:s}", "text", o->text);
    } else {
        FILE *f = fopen(o->file, "rb");
        if (f == NULL) {
            fprintf(stderr, "once: %s: %s\n", o->file, strerror(errno));
            return EXIT_OTHER;
        }
        char *buf = NULL;
        size_t len = 0, cap = 0;
        for (;;) {
            if (len == cap) {
                cap = cap ? cap * 2 : 65536;
                char *nb = cap <= (64u << 20) ? once_realloc(buf, cap) : NULL;
                if (nb == NULL) {
                    fclose(f);
                    once_free(buf);
                    fprintf(stderr, "once: %s: too large (64 MiB at most)\n", o->file);
                    return EXIT_OTHER;
                }
                buf = nb;
            }
            size_t got = fread(buf + len, 1, cap - len, f);
            len += got;
            if (got == 0)
                break;
        }
        fclose(f);
        const char *base = strrchr(o->file, '/');
        base = base ? base + 1 : o->file;
        /* UTF-8 text travels as text; anything else as base64 raw bytes. */
        json_t *text = json_stringn(buf, len);
        if (text != NULL) {
            part = json_pack("{s:o,s:s,s:s}", "text", text, "filename", base, "mediaType",
                             "text/plain");
        } else {
            size_t blen = 4 * ((len + 2) / 3) + 1;
            unsigned char *b64 = once_malloc(blen);
            part = NULL;
            if (b64 != NULL) {
                EVP_EncodeBlock(b64, (const unsigned char *)buf, (int)len);
                part = json_pack("{s:s,s:s,s:s}", "raw", (const char *)b64, "filename", base,
                                 "mediaType", "application/octet-stream");
            }
            once_free(b64);
        }
        once_free(buf);
    }
    json_t *parts = part ? json_pack("[o]", part) : NULL;
    *out = parts ? json_dumps(parts, JSON_COMPACT) : NULL;
    json_decref(parts);
    if (*out == NULL) {
        fprintf(stderr, "once: out of memory\n");
        return EXIT_OTHER;
    }
    return -1;
}

/* --agent URLs, tried first for this run by the agent they belong to
 * (agent: its name, or NULL to let the outbox tell). A note says so when
 * they are new to it: they are not stored. */
static int prefer(cli *o, const char *agent)
{
    char note[2048];
    int rc = once_client_prefer(o->c, o->agent, agent, note, sizeof note);
    if (rc == ONCE_EINVAL)
        return bad("--agent: %s", once_client_errmsg(o->c));
    if (rc != ONCE_OK) {
        fprintf(stderr, "once: %s\n", once_client_errmsg(o->c));
        return EXIT_OTHER;
    }
    if (note[0] != '\0')
        fprintf(stderr, "once: %s\n", note);
    return -1;
}

/* The agent for a task command: the one the outbox sent ID to (kept in
 * o->agent_buf for the rest of the command), at --agent first when given;
 * for a task the outbox does not know, --agent. */
static int agent_for(cli *o)
{
    char *buf = o->agent_buf;
    size_t len = sizeof o->agent_buf;
    if (o->id == NULL)
        return bad("%s needs a task ID", o->cmd);
    if (once_client_agent_of(o->c, o->id, buf, len) != ONCE_OK) {
        if (o->agent == NULL)
            return bad("the outbox does not know task %s: give --agent URL", o->id);
        return -1;
    }
    /* The outbox's intents of ID learn whatever the call sees only when
     * it is made as their agent, whichever URL answers. */
    int ex = o->agent != NULL ? prefer(o, buf) : -1;
    o->agent = buf;
    return ex;
}

static int then_wait(cli *o, int rc, once_call_result *r)
{
    if (!o->wait || rc != ONCE_OK || r->outcome != ONCE_OUTCOME_OK || r->is_message)
        return report(o, rc, r, 0);
    char shown[3 * ONCE_ID_MAX + 8];
    if (o->tty)
        fprintf(stderr, "%s: %s%s\n", once__showbuf(r->task_id, shown, sizeof shown),
                once_state_name(r->state), r->replayed ? " (replayed)" : "");
    o->shown = r->state;
    if (once_state_terminal(r->state) || once_state_interrupted(r->state))
        return report(o, rc, r, 1);
    char id[ONCE_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", r->task_id);
    once_call_result w;
    int wrc = follow(o, id, r->json, r->state, &w);
    w.replayed = r->replayed;
    w.intent = r->intent;
    int ex = report(o, wrc, &w, 1);
    once_call_result_clear(&w);
    return ex;
}

static int cmd_send(cli *o, int cont)
{
    int ex;
    if (cont && (ex = agent_for(o)) >= 0)
        return ex;
    if (!cont && o->agent == NULL)
        return bad("send needs --agent URL");
    if (!cont && o->id != NULL && !once_id_valid(o->id))
        return bad("--id: not a valid task ID: 1..128 of [A-Za-z0-9._:-], first alphanumeric");
    char *parts = NULL;
    if ((ex = parts_from_args(o, &parts)) >= 0)
        return ex;
    once_call_result r;
    int rc;
    if (cont) {
        rc = once_client_continue(o->c, o->agent, o->id, parts, &r);
    } else {
        once_send_spec s = {.agent = o->agent,
                            .parts_json = parts,
                            .task_id = o->id,
                            .push_url = o->push_url,
                            .push_token = o->push_token};
        rc = once_client_send(o->c, &s, &r);
    }
    free(parts);
    ex = then_wait(o, rc, &r);
    once_call_result_clear(&r);
    return ex;
}

static int cmd_task(cli *o)
{
    int ex = agent_for(o);
    if (ex >= 0)
        return ex;
    once_call_result r;
    int rc, waited = 0;
    if (strcmp(o->cmd, "get") == 0) {
        rc = once_client_get(o->c, o->agent, o->id, &r);
    } else if (strcmp(o->cmd, "cancel") == 0) {
        rc = once_client_cancel(o->c, o->agent, o->id, &r);
    } else {
        waited = 1;
        rc = follow(o, o->id, NULL, ONCE_STATE_UNKNOWN, &r);
    }
    ex = report(o, rc, &r, waited);
    once_call_result_clear(&r);
    return ex;
}

/* The exit of a read from the agent (inspect, admin): rc said on stderr
 * (unparsed for ONCE_EPARSE), EXIT_REFUSED for the refusal code. */
static int read_exit(cli *o, int rc, const char *unparsed, int refusal)
{
    if (rc == ONCE_OK)
        return EXIT_OK;
    char why[1024];
    fprintf(stderr, "once: %s\n",
            rc == ONCE_EPARSE ? unparsed
                              : once__showbuf(once_client_errmsg(o->c), why, sizeof why));
    return rc == refusal ? EXIT_REFUSED : EXIT_OTHER;
}

static int cmd_inspect(cli *o)
{
    int ex = agent_for(o);
    if (ex >= 0)
        return ex;
    char *text = NULL;
    int rc = once__client_inspect(o->c, o->agent, o->id, &text);
    if (rc == ONCE_OK && o->json)
        printf("%s\n", text);
    else if (rc == ONCE_OK)
        rc = once__inspect_print(stdout, text);
    once_free(text);
    return read_exit(o, rc, "the inspector's answer is not a timeline", ONCE_ENOTFOUND);
}

/* `once admin WHAT`: an operator method of the agent, printed as a table
 * (or its JSON with --json). */
static int cmd_admin(cli *o)
{
    const char *what = o->id ? o->id : "";
    const char *method = strcmp(what, "replicas") == 0  ? "once/admin/replicas"
                         : strcmp(what, "leases") == 0  ? "once/admin/leases"
                         : strcmp(what, "release") == 0 ? "once/admin/releaseLease"
                         : strcmp(what, "cancel") == 0  ? "once/admin/cancelTasks"
                                                        : NULL;
    if (method == NULL)
        return bad("admin takes one of: replicas, leases, release, cancel");
    if (o->agent == NULL)
        return bad("admin needs --agent URL (the onced to ask)");
    json_t *params = json_object();
    if (params == NULL)
        return EXIT_FAILURE;
    if (strcmp(what, "release") == 0 || strcmp(what, "cancel") == 0) {
        if (o->principal == NULL || (strcmp(what, "release") == 0 && o->task == NULL)) {
            json_decref(params);
            return bad("admin %s needs --principal P%s", what,
                       strcmp(what, "release") == 0 ? " and --task ID" : "");
        }
        json_object_set_new(params, "principal", json_string(o->principal));
        if (o->task != NULL)
            json_object_set_new(params, "id", json_string(o->task));
        if (o->context != NULL)
            json_object_set_new(params, "contextId", json_string(o->context));
        if (o->state != NULL)
            json_object_set_new(params, "status", json_string(o->state));
        if (o->dry_run)
            json_object_set_new(params, "dryRun", json_true());
    }
    json_t *result = NULL;
    int rc = once__client_admin(o->c, o->agent, method, params, &result);
    json_decref(params);
    if (rc == ONCE_OK && o->json) {
        char *text = json_dumps(result, JSON_COMPACT);
        printf("%s\n", text ? text : "null");
        once_free(text);
    } else if (rc == ONCE_OK) {
        rc = once__admin_print(stdout, what, result);
    }
    json_decref(result);
    return read_exit(o, rc, "the agent's answer is not what admin expects", ONCE_EINVAL);
}

static json_t *intent_json(const once_intent *it)
{
    json_t *j = json_pack("{s:I,s:s,s:s,s:s,s:s,s:i}", "seq", (json_int_t)it->seq, "kind", it->kind,
                          "agent", it->agent, "messageId", it->message_id, "state",
                          once_intent_state_name(it->state), "attempts", (int)it->attempts);
    if (j == NULL)
        return NULL;
    json_object_set_new(j, "taskId", it->task_id ? json_string(it->task_id) : json_null());
    json_object_set_new(j, "mode", it->mode ? json_string(it->mode) : json_null());
    json_object_set_new(j, "taskState", it->task_state ? json_string(once_state_name(it->task_state))
                                                       : json_null());
    json_object_set_new(j, "lastError", it->last_error ? json_string(it->last_error) : json_null());
    json_object_set_new(j, "refusal", it->refusal ? json_string(it->refusal) : json_null());
    json_object_set_new(j, "createdMs", json_integer(it->created_ms));
    json_object_set_new(j, "updatedMs", json_integer(it->updated_ms));
    json_object_set_new(j, "ackedMs", it->acked_ms ? json_integer(it->acked_ms) : json_null());
    json_object_set_new(j, "finishedMs", it->finished_ms ? json_integer(it->finished_ms) : json_null());
    json_object_set_new(j, "endpoint", it->endpoint ? json_string(it->endpoint) : json_null());
    return j;
}

static int list_one(void *ctx, const once_intent *it)
{
    json_t *arr = ctx;
    if (arr != NULL) {
        json_array_append_new(arr, intent_json(it));
        return 0;
    }
    char when[25], said[1024];
    once_format_time(it->created_ms, when);
    const char *why = it->refusal ? it->refusal
                      : it->last_error && it->state == ONCE_INTENT_PENDING ? it->last_error
                                                                            : "";
    printf("%-6lld %-12s %-8s %3u  %-25s %-36s %s%s%s\n", (long long)it->seq,
           once_intent_state_name(it->state), it->kind, it->attempts,
           it->task_state ? once_state_name(it->task_state) : "-",
           it->task_id ? it->task_id : it->message_id, it->agent,
           it->refusal ? "  refused: " : it->last_error && it->state == ONCE_INTENT_PENDING ? "  last error: " : "",
           once__showbuf(why, said, sizeof said));
    return 0;
}

static int cmd_outbox(cli *o)
{
    if (o->prune != NULL) {
        int64_t age;
        if (once__parse_duration(o->prune, 0, &age) != ONCE_OK)
            return bad("--prune: not a duration: %s", o->prune);
        unsigned n = 0;
        if (once_client_prune(o->c, age, &n) != ONCE_OK) {
            fprintf(stderr, "once: %s\n", once_client_errmsg(o->c));
            return EXIT_OTHER;
        }
        if (o->json)
            print_json(json_pack("{s:i}", "pruned", (int)n));
        else
            printf("pruned %u finished intent%s\n", n, n == 1 ? "" : "s");
        return EXIT_OK;
    }
    once_intent_state st = 0;
    if (o->state != NULL) {
        for (int s = ONCE_INTENT_PENDING; s <= ONCE_INTENT_LAST; s++)
            if (strcmp(o->state, once_intent_state_name((once_intent_state)s)) == 0)
                st = (once_intent_state)s;
        if (st == 0)
            return bad("--state: one of pending, acknowledged, final, refused, abandoned");
    }
    json_t *arr = o->json ? json_array() : NULL;
    if (!o->json)
        printf("%-6s %-12s %-8s %3s  %-25s %-36s %s\n", "SEQ", "INTENT", "KIND", "TRY", "TASK STATE",
               "TASK (or MESSAGE) ID", "AGENT");
    int rc = once_client_outbox(o->c, st, list_one, arr);
    if (o->json)
        print_json(json_pack("{s:o}", "intents", arr));
    if (rc != ONCE_OK) {
        fprintf(stderr, "once: %s\n", once_client_errmsg(o->c));
        return EXIT_OTHER;
    }
    return EXIT_OK;
}

/* Each intent of the ID, as it was: the open ones are the ones abandoned. */
static int abandoning(void *ctx, const once_intent *it)
{
    json_t *arr = ctx;
    if (it->state != ONCE_INTENT_PENDING && it->state != ONCE_INTENT_ACKNOWLEDGED)
        return 0;
    if (arr != NULL) {
        json_t *j = intent_json(it);
        json_object_set_new(j, "was", json_string(once_intent_state_name(it->state)));
        json_object_set_new(j, "state", json_string(once_intent_state_name(ONCE_INTENT_ABANDONED)));
        json_array_append_new(arr, j);
    } else {
        printf("%lld\t%s\t%s -> abandoned\n", (long long)it->seq,
               it->task_id ? it->task_id : it->message_id, once_intent_state_name(it->state));
    }
    return 0;
}

static int cmd_abandon(cli *o)
{
    if (o->id == NULL)
        return bad("abandon needs an ID (the task or message ID `once outbox` shows)");
    json_t *arr = o->json ? json_array() : NULL;
    unsigned n = 0;
    int rc = once_client_abandon(o->c, o->id, abandoning, arr, &n);
    if (o->json && rc == ONCE_OK)
        print_json(json_pack("{s:i,s:o}", "abandoned", (int)n, "intents", arr));
    else
        json_decref(arr);
    if (rc == ONCE_OK)
        return EXIT_OK;
    fprintf(stderr, "once: cannot abandon %s: %s\n", o->id, once_client_errmsg(o->c));
    return rc == ONCE_EILLEGAL ? EXIT_FINISHED : EXIT_OTHER;
}

/* What `once recover` prints, gathered by its per-intent callback. */
typedef struct recover_ctx {
    cli *o;
    json_t *arr;
} recover_ctx;

static void recovered(void *ctx, const once_intent *it, int rc, const once_call_result *r)
{
    recover_ctx *x = ctx;
    const char *id = r->task_id[0] ? r->task_id : it->task_id ? it->task_id : it->message_id;
    if (x->arr != NULL) {
        json_t *j = result_json(r);
        json_object_set_new(j, "was", json_string(once_intent_state_name(it->state)));
        json_object_set_new(j, "taskId", json_string(id));
        once_intent_state now = intent_now(x->o, it->seq);
        if (now != 0)
            json_object_set_new(j, "intentState", json_string(once_intent_state_name(now)));
        json_array_append_new(x->arr, j);
        return;
    }
    char shown[3 * ONCE_ID_MAX + 8];
    printf("%lld\t%s\t%s\t%s%s%s\n", (long long)it->seq, once__showbuf(id, shown, sizeof shown),
           once_intent_state_name(it->state),
           once_outcome_name(r->outcome),
           r->state != ONCE_STATE_UNKNOWN ? "\t" : "",
           r->state != ONCE_STATE_UNKNOWN ? once_state_name(r->state) : "");
    char said[1024];
    if (r->outcome != ONCE_OUTCOME_OK && r->error != NULL)
        fprintf(stderr, "once: %s: %s\n", id, once__showbuf(r->error, said, sizeof said));
}

static int cmd_recover(cli *o)
{
    int ex = o->agent != NULL ? prefer(o, NULL) : -1;
    if (ex >= 0)
        return ex;
    recover_ctx x = {.o = o, .arr = o->json ? json_array() : NULL};
    once_recover_stats st;
    int rc = once_client_recover(o->c, recovered, &x, &st);
    if (o->json) {
        print_json(json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:o}", "resent", (int)st.resent,
                             "polled", (int)st.polled, "acknowledged", (int)st.acknowledged,
                             "final", (int)st.final, "refused", (int)st.refused, "pending",
                             (int)st.pending, "exhausted", (int)st.exhausted, "errors",
                             (int)st.errors, "intents", x.arr));
    } else if (rc == ONCE_OK && st.resent + st.polled + st.errors == 0) {
        /* Said on any stream: a script that recovers learns it too. */
        fprintf(stderr, "nothing to recover: no intent is pending or acknowledged\n");
    } else if (o->tty) {
        fprintf(stderr, "recovered: %u re-sent, %u polled; the outbox now holds %u "
                        "acknowledged, %u final, %u refused, %u pending of them (%u calls "
                        "exhausted, %u errors)\n",
                st.resent, st.polled, st.acknowledged, st.final, st.refused, st.pending,
                st.exhausted, st.errors);
    }
    if (rc == ONCE_ECANCELED)
        return EXIT_INTERRUPTED;
    if (rc != ONCE_OK) {
        fprintf(stderr, "once: %s\n", once_client_errmsg(o->c));
        return EXIT_OTHER;
    }
    if (st.errors)
        return EXIT_OTHER;
    if (st.exhausted)
        return EXIT_EXHAUSTED;
    return st.refused ? EXIT_REFUSED : EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * listen: the receiving end of push notifications (include/once/webhook.h).
 */

/* The handler without --exec: one line per event on stdout. A failed write
 * leaves the event to be offered again. */
static int print_event(void *arg, const once_webhook_event *ev)
{
    const cli *o = arg;
    json_error_t je;
    json_t *body = json_loadb(ev->body, ev->len, 0, &je);
    if (body == NULL)
        return ONCE_EPARSE;   /* never: the receiver checked it is an object */
    int ok;
    if (o->json) {
        json_t *line = json_pack("{s:s,s:I,s:s,s:s,s:O}", "taskId", ev->task_id, "generation",
                                 (json_int_t)ev->generation, "webhookId", ev->id,
                                 "subscription", ev->subscription, "event", body);
        ok = line != NULL && json_dumpf(line, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0 &&
             putchar('\n') != EOF;
        json_decref(line);
    } else {
        /* <task> <generation> <kind> <state or -> */
        const char *kind = "event", *state = NULL;
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v)
        {
            kind = key;
            state = json_string_value(json_object_get(json_object_get(v, "status"), "state"));
            break;
        }
        char id[3 * ONCE_ID_MAX + 8], k[256], st[256];
        ok = printf("%s\t%lld\t%s\t%s\n", once__showbuf(ev->task_id, id, sizeof id),
                    (long long)ev->generation, once__showbuf(kind, k, sizeof k),
                    once__showbuf(state ? state : "-", st, sizeof st)) > 0;
    }
    json_decref(body);
    return ok && fflush(stdout) == 0 ? ONCE_OK : ONCE_EIO;
}

static int default_state_path(char *buf, size_t len, const char *file);

static int cmd_listen(cli *o)
{
    if (o->nsecrets == 0)
        return bad("listen needs --secret S (the secret onced signs with: --push-secret)");
    if (o->port < 0)
        return bad("listen needs --port P (0: any free port)");
    if (o->token == NULL || o->token[0] == '\0')
        return bad("listen needs --token T (the token your push configs carry)");
    char path[4096];
    int ex;
    if (o->state != NULL) {
        if ((size_t)snprintf(path, sizeof path, "%s", o->state) >= sizeof path)
            return bad("--state: path too long");
    } else if ((ex = default_state_path(path, sizeof path, "webhooks.db")) >= 0) {
        return ex;
    }
    /* The receiver's threads inherit this mask: SIGINT/SIGTERM reach only
     * the sigwait below, which stops the server in good order. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    once_webhook_options wo = {.state_path = path,
                               .secrets = o->secrets,
                               .nsecrets = o->nsecrets,
                               .tolerance_s = o->tolerance_ms / 1000,
                               .token = o->token,
                               .handler = o->exec ? once_webhook_exec_handler : print_event,
                               .arg = o->exec ? (void *)(uintptr_t)o->exec : (void *)o};
    once_webhook *w;
    char err[512] = "";
    if (once_webhook_open(&wo, &w, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "once: listen: cannot open the processed-set %s: %s\n", path,
                err[0] ? err : "out of memory");
        return EXIT_OTHER;
    }
    once_webhook_listen_options lo = {.host = o->host,
                                      .port = (int)o->port,
                                      .tls_cert_file = o->tls_cert,
                                      .tls_key_file = o->tls_key};
    once_webhook_server *srv;
    if (once__webhook_listen_limited(w, &lo, &o->listen_limits, &srv, err, sizeof err) !=
        ONCE_OK) {
        fprintf(stderr, "once: listen: %s\n", err[0] ? err : "cannot listen");
        once_webhook_close(w);
        return EXIT_OTHER;
    }
    fprintf(stderr, "once: listening on %s://%s:%d/ (processed-set %s)\n",
            o->tls_cert ? "https" : "http", o->host ? o->host : "127.0.0.1",
            once_webhook_server_port(srv), path);
    fflush(stderr);
    int sig = 0;
    sigwait(&set, &sig);
    once_webhook_server_stop(srv);
    once_webhook_close(w);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * main.
 */
static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

/* $XDG_STATE_HOME/once/<file>, else ~/.local/state/once/<file>; its
 * folders are created. -1, or an exit status. */
static int default_state_path(char *buf, size_t len, const char *file)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(buf, len, "%s/once/%s", xdg, file);
    else if (home != NULL && home[0] != '\0')
        n = snprintf(buf, len, "%s/.local/state/once/%s", home, file);
    else
        return bad("no path given for %s, and neither XDG_STATE_HOME nor HOME is set", file);
    if (n < 0 || (size_t)n >= len)
        return bad("state path too long");
    if (mkdirs(buf) != 0) {
        fprintf(stderr, "once: cannot create the folder for %s: %s\n", buf, strerror(errno));
        return EXIT_OTHER;
    }
    return -1;
}

static int cmd_send_new(cli *o)
{
    return cmd_send(o, 0);
}

static int cmd_continue(cli *o)
{
    return cmd_send(o, 1);
}

/* The commands: what each needs from main before it runs. */
enum { NEEDS_CLIENT = 1, TAKES_ID = 2 };
typedef struct command {
    const char *name;
    int (*run)(cli *o);
    unsigned flags;
} command;

static const command commands[] = {
    {"send", cmd_send_new, NEEDS_CLIENT},
    {"continue", cmd_continue, NEEDS_CLIENT | TAKES_ID},
    {"get", cmd_task, NEEDS_CLIENT | TAKES_ID},
    {"cancel", cmd_task, NEEDS_CLIENT | TAKES_ID},
    {"wait", cmd_task, NEEDS_CLIENT | TAKES_ID},
    {"inspect", cmd_inspect, NEEDS_CLIENT | TAKES_ID},
    {"recover", cmd_recover, NEEDS_CLIENT},
    {"outbox", cmd_outbox, NEEDS_CLIENT},
    {"abandon", cmd_abandon, NEEDS_CLIENT | TAKES_ID},
    {"listen", cmd_listen, 0},
    {"admin", cmd_admin, NEEDS_CLIENT | TAKES_ID},
};

/* The command o names, its argument and the flags it may take checked:
 * NULL with *ex the exit status when the command line is wrong. */
static const command *command_for(cli *o, int *ex)
{
    const command *cmd = NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(o->cmd, commands[i].name) == 0)
            cmd = &commands[i];
    int is_send = cmd != NULL && cmd->run == cmd_send_new;
    if (cmd == NULL)
        *ex = bad("unknown command %s", o->cmd);
    else if (is_send && o->arg != NULL)
        *ex = bad("send takes no argument (use --id ID to choose the task ID)");
    else if (!is_send && o->id != NULL)
        *ex = bad("--id is for send; give the task ID as the argument");
    else if (!is_send && (o->push_url != NULL || o->push_token != NULL))
        *ex = bad("--push-url and --push-token are for send");
    else if (o->push_token != NULL && o->push_url == NULL)
        *ex = bad("--push-token needs --push-url (the receiver the token is for)");
    else if (!(cmd->flags & TAKES_ID) && o->arg != NULL)
        *ex = bad("%s takes no argument", o->cmd);
    else if (o->retry.backoff_cap_ms < o->retry.backoff_base_ms)
        *ex = bad("--backoff-cap must be at least --backoff-base");
    else
        return cmd;
    return NULL;
}

/* The outbox's path into path[0..n) (its folder created): -1, or the exit
 * status when it cannot be. */
static int outbox_path(cli *o, char *path, size_t n)
{
    int ex;
    if (o->outbox == NULL) {
        if ((ex = default_state_path(path, n, "outbox.db")) >= 0)
            return ex;
        o->outbox = path;
    } else if ((size_t)snprintf(path, n, "%s", o->outbox) >= n) {
        return bad("--outbox: path too long");
    } else if (mkdirs(path) != 0) {
        fprintf(stderr, "once: cannot create the outbox folder for %s: %s\n", path, strerror(errno));
        return EXIT_OTHER;
    }
    return -1;
}

int main(int argc, char **argv)
{
    cli o;
    once_opts_init(&o);
    int ex = parse_args(argc, argv, &o);
    if (ex >= 0)
        return ex;
    const command *cmd = command_for(&o, &ex);
    if (cmd == NULL)
        return ex;
    if (cmd->flags & TAKES_ID)
        o.id = o.arg;
    o.tty = !o.json && isatty(STDERR_FILENO);
    if (!(cmd->flags & NEEDS_CLIENT))
        return cmd->run(&o);
    if (o.token == NULL)
        o.token = getenv("ONCE_TOKEN");
    char path[4096];
    if ((ex = outbox_path(&o, path, sizeof path)) >= 0)
        return ex;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const char *crash = getenv("ONCE_TEST_CRASH");
    once_client_config cfg = {.outbox_path = o.outbox,
                              .token = o.token,
                              .cacert = o.cacert,
                              .insecure = o.insecure,
                              .binding = o.binding,
                              .retry = o.retry,
                              .id_kind = o.uuid ? ONCE_ID_UUID4 : ONCE_ID_ULID,
                              .interrupted = &interrupted,
                              .hook = crash && crash[0] ? crash_hook : NULL,
                              .hook_ctx = (void *)(uintptr_t)crash};
    char err[512] = "";
    if (once_client_new(&cfg, &o.c, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "once: cannot open the outbox: %s\n", err[0] ? err : "out of memory");
        return EXIT_OTHER;
    }
    ex = cmd->run(&o);
    once_client_free(o.c);
    json_decref(o.gens);
    return ex;
}
