/*
 * subprocess.c -- the `--exec CMD` executor. Each turn runs CMD through
 * /bin/sh -c, writes the turn input on its stdin, and applies every line it
 * prints on stdout, in order and as it arrives, through the fenced
 * once_work_* calls (protocol: docs/protocol.md, parser: jsonl.c).
 *
 * Invariants:
 *   - the command is never trusted: a malformed line, an exit in the middle
 *     of a line, a non-zero exit, a crash or a hang ends the turn with the
 *     task failed and a reason; onced itself never blocks past the deadline
 *     plus the grace period and never crashes (SIGPIPE is kept off);
 *   - once the turn is canceled, fenced, or failed by us, nothing the
 *     command prints is applied any more, and it is terminated: SIGTERM to
 *     its process group, SIGKILL after the grace period;
 *   - the child is reaped and every fd closed before run() returns;
 *   - all state of a turn lives in one `turn` on the worker's stack; turns
 *     share only the immutable configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/jcs.h"
#include "core/log.h"
#include "core/quote.h"
#include "exec/jsonl.h"
#include "exec/proc.h"
#include "once/executor.h"
#include "exec/upstream.h"

#define POLL_MS 50             /* cancellation is noticed at least this often */
#define DRAIN_MS 1000          /* output still read after the command exited */
#define END_GRACE_MIN_MS 1000  /* time to exit after a line that ended the turn */
#define READ_CHUNK 65536
#define ERR_LINE_MAX 1024      /* stderr lines are logged in pieces of this */
#define REASON_MAX 768

/* Set by once_executor_subprocess, read-only afterwards (shared by all
 * worker threads). */
typedef struct sub_cfg {
    char *command;
    int64_t grace_ms;
    int64_t deadline_ms;
} sub_cfg;

typedef enum phase {
    PH_RUN,    /* applying output */
    PH_ENDED,  /* a line ended the turn: only log lines still count */
    PH_STOP    /* canceled, fenced, failed or timed out: output is ignored */
} phase;

/* One turn; only its worker thread touches it. */
typedef struct turn {
    once_work *w;
    const sub_cfg *cfg;
    const char *task_id;
    once__proc proc;
    char *input;              /* the stdin line; in_off bytes written so far */
    size_t in_len, in_off;
    char *out;                /* stdout bytes not yet consumed as lines */
    size_t out_len, out_cap, out_scanned;
    char err[ERR_LINE_MAX];   /* stderr bytes of the current line */
    size_t err_len;
    uint64_t lineno;
    uint64_t ignored;         /* lines ignored after the turn ended, beyond the first */
    phase ph;
    int rc;                   /* what run() returns */
    int64_t started, ended_at, term_at, exit_at, swept_at;
    int term_sent, kill_sent, swept;
} turn;

/* When the rest of the command's process group is SIGKILLed after its main
 * process exited. /bin/sh -c forks the agent rather than exec'ing it, so the
 * shell may die at SIGTERM while the agent is still in its SIGTERM trap: a
 * terminated group keeps its full grace period, measured from the SIGTERM. */
static int64_t sweep_at(const turn *t)
{
    int64_t at = t->exit_at;
    if (t->term_sent && !t->kill_sent && t->term_at + t->cfg->grace_ms > at)
        at = t->term_at + t->cfg->grace_ms;
    return at;
}

/* ------------------------------------------------------------ diagnostics */

/* One line in onced's log about this turn (core/log.h), never written
 * past it: the agent's text goes in as one escaped value, so no byte it
 * prints (a newline, a JSON object, a terminal escape) can end the line or
 * forge a record, in text or JSON format alike. */
static void emit(const turn *t, int level, const char *event, const char *key, const char *s,
                 size_t n)
{
    once__logline l;
    if (!once__log_begin(&l, level, event))
        return;
    once__log_str(&l, "task", t->task_id);
    once__log_text(&l, key, s, n);
    once__log_end(&l);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(const turn *t, const char *fmt, ...)
{
    char msg[REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(t, ONCE_LOG_WARN, "exec", "message", msg, strlen(msg));
}

/* ------------------------------------------------------------ termination */

static void stop(turn *t)
{
    if (t->ph == PH_STOP)
        return;
    t->ph = PH_STOP;
    t->out_len = t->out_scanned = 0;
    if (!t->proc.exited) {
        once__proc_signal(&t->proc, SIGTERM);
        t->term_sent = 1;
        t->term_at = once_monotonic_ms();
    }
}

/* Fail the task with reason (our own words, never the command's), then
 * terminate the command. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void fail(turn *t, const char *fmt, ...)
{
    char reason[REASON_MAX];
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    emit(t, ONCE_LOG_WARN, "exec", "message", reason, strlen(reason));
    rc = once_work_fail(t->w, reason);
    /* ONCE_EILLEGAL: the task already ended; nothing more to say. */
    t->rc = (rc == ONCE_OK || rc == ONCE_EILLEGAL) ? ONCE_OK : rc;
    stop(t);
}

/* ------------------------------------------------------------ apply lines */

/* Has the command used up its deadline? t->started moves forward by the
 * time writes spent in the engine (apply_timed), so this counts only the
 * command's own time. */
static int deadline_passed(const turn *t, int64_t now)
{
    return t->cfg->deadline_ms > 0 && now - t->started >= t->cfg->deadline_ms;
}

static void deadline_fail(turn *t)
{
    if (t->ph == PH_RUN)
        fail(t, "exec: deadline exceeded: the command ran longer than %" PRId64 " ms",
             t->cfg->deadline_ms);
    else
        stop(t);
}

/* After the turn ended, an ignored line is logged once; the rest are only
 * counted (a command printing without end must not flood onced's log), and
 * the count is logged when the command is gone (ignored_summary). */
static int ignore_once(turn *t)
{
    return t->ignored++ == 0;
}

static void ignored_summary(turn *t)
{
    if (t->ignored > 1)
        say(t, "ignored %" PRIu64 " more output lines after the turn ended", t->ignored - 1);
}

static char *dump(const json_t *v)
{
    char *s = NULL;
    return once__json_write(v, &s, NULL) == ONCE_OK ? s : NULL;
}

static int apply(turn *t, const once__exec_cmd *c, int *ends)
{
    char *json = NULL;
    int rc;

    *ends = 0;
    if (c->msg != NULL && (json = dump(c->msg)) == NULL)
        return ONCE_ENOMEM;
    switch (c->kind) {
    case ONCE__EXEC_STATUS:
        rc = once_work_status(t->w, c->state, json);
        *ends = once_state_terminal(c->state) || once_state_interrupted(c->state);
        break;
    case ONCE__EXEC_ARTIFACT:
        rc = once_work_artifact(t->w, json, c->append, c->last_chunk);
        break;
    case ONCE__EXEC_REPLY:
        rc = once_work_reply(t->w, json);
        *ends = 1;
        break;
    case ONCE__EXEC_CHECKPOINT:
        rc = once_work_checkpoint_set(t->w, c->text,
                                      c->has_step ? c->step : once_work_step(t->w));
        break;
    default:
        rc = ONCE_OK;
        break;
    }
    once_free(json);
    return rc;
}

/* apply(), with the time it spent waiting on the engine (a store outage
 * is ridden out inside the write) kept off the command's deadline: the
 * deadline bounds the command, not the store. */
static int apply_timed(turn *t, const once__exec_cmd *c, int *ends)
{
    int64_t t0 = once_monotonic_ms();
    int rc = apply(t, c, ends);
    t->started += once_monotonic_ms() - t0;
    return rc;
}

static void on_line(turn *t, const char *s, size_t n)
{
    once__exec_cmd c;
    char why[REASON_MAX - 64];
    int rc, ends;

    t->lineno++;
    if (t->ph == PH_STOP)
        return;
    rc = once__exec_parse_line(s, n, &c, why, sizeof why);
    if (rc < 0) {
        /* Running out of memory is this replica's failure, not the agent's:
         * the reason must not call its line malformed. */
        const char *what = rc == ONCE_ENOMEM ? "could not read" : "malformed";
        if (t->ph == PH_ENDED) {
            if (ignore_once(t))
                say(t, "ignored output line %" PRIu64 " after the turn ended: %s", t->lineno,
                    why);
        } else
            fail(t, "exec: %s output line %" PRIu64 ": %s", what, t->lineno, why);
        return;
    }
    if (c.kind == ONCE__EXEC_LOG) {
        emit(t, ONCE_LOG_INFO, "agent_log", "text", c.text, strlen(c.text));
    } else if (c.kind == ONCE__EXEC_BLANK) {
        /* tolerated: print("") and friends */
    } else if (t->ph == PH_ENDED) {
        if (ignore_once(t))
            say(t, "ignored output line %" PRIu64 ": the turn already ended", t->lineno);
    } else if (once_work_canceled(t->w)) {
        t->rc = ONCE_ECANCELED;
        stop(t);
    } else if (c.kind == ONCE__EXEC_CHECKPOINT && c.has_step && c.step < once_work_step(t->w)) {
        fail(t, "exec: output line %" PRIu64 ": checkpoint step %" PRId64
                " is below the current step %" PRId64,
             t->lineno, c.step, once_work_step(t->w));
    } else if ((rc = apply_timed(t, &c, &ends)) == ONCE_OK) {
        if (ends) {
            t->ph = PH_ENDED;
            t->ended_at = once_monotonic_ms();
        }
    } else if (rc == ONCE_EFENCED) {
        say(t, "output line %" PRIu64 " was fenced off: the task moved on without us",
            t->lineno);
        t->rc = rc;
        stop(t);
    } else if (rc == ONCE_ERANGE) {
        fail(t, "exec: output line %" PRIu64 " refused: the task would exceed its maximum size",
             t->lineno);
    } else if (rc == ONCE_EILLEGAL || rc == ONCE_EINVAL) {
        char q[ONCE_EXEC_QUOTE_MAX + 8];
        once__quote(s, n, ONCE_EXEC_QUOTE_MAX, q, sizeof q);
        fail(t, "exec: output line %" PRIu64 " refused: %s (line: %s)", t->lineno,
             rc == ONCE_EILLEGAL ? "not allowed in the task's current state"
                                 : "rejected by the engine",
             q);
    } else {
        say(t, "output line %" PRIu64 " could not be applied: %s", t->lineno,
            once_strerror(rc));
        t->rc = rc;
        stop(t);
    }
    once__exec_cmd_clear(&c);
}

/* ------------------------------------------------------------------ pipes */

static int grow_out(turn *t)
{
    size_t cap = t->out_cap ? t->out_cap * 2 : READ_CHUNK;
    char *p;
    if (cap > ONCE_EXEC_LINE_MAX + 2 * READ_CHUNK)
        cap = ONCE_EXEC_LINE_MAX + 2 * READ_CHUNK;
    if (cap <= t->out_cap || (p = once_realloc(t->out, cap)) == NULL)
        return ONCE_ENOMEM;
    t->out = p;
    t->out_cap = cap;
    return ONCE_OK;
}

/* Consume every complete line in t->out. */
static void split_lines(turn *t)
{
    size_t start = 0;
    char *nl;

    while (t->ph != PH_STOP &&
           (nl = memchr(t->out + t->out_scanned, '\n', t->out_len - t->out_scanned)) != NULL) {
        size_t end = (size_t)(nl - t->out);
        /* One read can hold many lines: the deadline is checked before each,
         * not only between reads. */
        if (t->ph == PH_RUN && deadline_passed(t, once_monotonic_ms())) {
            deadline_fail(t);
            break;
        }
        on_line(t, t->out + start, end - start);
        start = end + 1;
        t->out_scanned = start;
    }
    if (t->ph == PH_STOP) {
        t->out_len = t->out_scanned = 0;
        return;
    }
    if (start > 0) {
        memmove(t->out, t->out + start, t->out_len - start);
        t->out_len -= start;
    }
    t->out_scanned = t->out_len;
    /* +1: a line of exactly the limit may still carry a "\r". */
    if (t->out_len > ONCE_EXEC_LINE_MAX + 1) {
        on_line(t, t->out, t->out_len);   /* the parser reports it as too long */
        stop(t);   /* after the turn ended it was only ignored: still too much */
    }
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* What is left when stdout ends without a final newline. */
static void partial_line(turn *t)
{
    char q[ONCE_EXEC_QUOTE_MAX + 8];

    if (t->out_len == 0 || blank(t->out, t->out_len)) {
        t->out_len = 0;
        return;
    }
    once__quote(t->out, t->out_len, ONCE_EXEC_QUOTE_MAX, q, sizeof q);
    if (t->ph == PH_RUN)
        fail(t, "exec: output ended in the middle of line %" PRIu64
                " (no final newline; the command exited mid-line?) (line: %s)",
             t->lineno + 1, q);
    else if (t->ph == PH_ENDED)
        say(t, "ignored an unfinished last output line: %s", q);
    t->out_len = 0;
}

static void read_stdout(turn *t)
{
    char drop[4096];
    ssize_t r;

    if (t->ph == PH_STOP) {
        r = read(t->proc.out_fd, drop, sizeof drop);   /* drained and dropped */
    } else {
        if (t->out_cap - t->out_len < READ_CHUNK / 4 && grow_out(t) != ONCE_OK) {
            fail(t, "exec: out of memory reading the command's output");
            return;
        }
        r = read(t->proc.out_fd, t->out + t->out_len, t->out_cap - t->out_len);
    }
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) {
        once__proc_close(&t->proc.out_fd);
        partial_line(t);
        return;
    }
    if (t->ph == PH_STOP)
        return;
    t->out_len += (size_t)r;
    split_lines(t);
}

static void flush_err(turn *t)
{
    if (t->err_len > 0)
        emit(t, ONCE_LOG_INFO, "agent_stderr", "text", t->err, t->err_len);
    t->err_len = 0;
}

/* A stderr line longer than ERR_LINE_MAX goes out in pieces, each cut
 * before a UTF-8 character that would not fit, not in its middle. */
static void flush_err_piece(turn *t)
{
    const unsigned char *e = (const unsigned char *)t->err;
    size_t back = 0, cut = t->err_len;
    while (back < 3 && back + 1 < t->err_len && (e[t->err_len - 1 - back] & 0xC0) == 0x80)
        back++;
    size_t lead = t->err_len - 1 - back;
    if (lead > 0 && e[lead] >= 0xC0 && once__utf8_seq(e + lead, t->err_len - lead) == 0)
        cut = lead;   /* carried over to the next piece */
    size_t rest = t->err_len - cut;
    t->err_len = cut;
    flush_err(t);
    memmove(t->err, t->err + cut, rest);
    t->err_len = rest;
}

static void read_stderr(turn *t)
{
    char buf[4096];
    ssize_t r = read(t->proc.err_fd, buf, sizeof buf);

    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0) {
        flush_err(t);
        once__proc_close(&t->proc.err_fd);
        return;
    }
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] == '\n') {
            flush_err(t);
            continue;
        }
        if (t->err_len == sizeof t->err)
            flush_err_piece(t);
        t->err[t->err_len++] = buf[i];
    }
}

static void write_stdin(turn *t)
{
    ssize_t r = once__proc_write(t->proc.in_fd, t->input + t->in_off, t->in_len - t->in_off);

    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r < 0) {
        /* EPIPE: the command does not read its input; that is its choice. */
        once__proc_close(&t->proc.in_fd);
        return;
    }
    t->in_off += (size_t)r;
    if (t->in_off == t->in_len)
        once__proc_close(&t->proc.in_fd);   /* EOF tells the command the input is whole */
}

/* ------------------------------------------------------------------ timing */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Cancellation, deadline, grace: decide what to do now; returns the poll
 * timeout until the next thing that must be checked. */
static int check_limits(turn *t, int64_t now)
{
    const sub_cfg *cfg = t->cfg;
    int64_t wait = POLL_MS;
    int64_t end_grace = cfg->grace_ms > END_GRACE_MIN_MS ? cfg->grace_ms : END_GRACE_MIN_MS;

    if (t->ph != PH_STOP && once_work_canceled(t->w)) {
        t->rc = ONCE_ECANCELED;
        stop(t);
    }
    if (t->ph != PH_STOP && cfg->deadline_ms > 0) {
        int64_t left = t->started + cfg->deadline_ms - now;
        if (left <= 0) {
            deadline_fail(t);
        } else
            wait = min64(wait, left);
    }
    if (t->ph == PH_ENDED) {
        int64_t left = t->ended_at + end_grace - now;
        if (left <= 0) {
            say(t, "the command did not exit after ending the turn; terminating it");
            stop(t);
        } else
            wait = min64(wait, left);
    }
    if (t->term_sent && !t->kill_sent && !t->proc.exited) {
        int64_t left = t->term_at + cfg->grace_ms - now;
        if (left <= 0) {
            once__proc_signal(&t->proc, SIGKILL);
            t->kill_sent = 1;
        } else
            wait = min64(wait, left);
    }
    if (t->proc.exited && !t->swept)
        wait = min64(wait, sweep_at(t) - now);
    if (t->proc.exited && t->swept)
        wait = min64(wait, t->swept_at + DRAIN_MS - now);
    return wait > 0 ? (int)wait : 0;
}

/* ------------------------------------------------------------------- turn */

static void pump(turn *t)
{
    for (;;) {
        struct pollfd fds[4];
        int nfds = 0, timeout, io_in = -1, io_out = -1, io_err = -1;
        int64_t now = once_monotonic_ms();

        if (!t->proc.exited && once__proc_poll_exit(&t->proc))
            t->exit_at = now;
        if (t->proc.exited && !t->swept && now >= sweep_at(t)) {
            /* The command is gone: whatever it left in its group goes too,
             * so the pipes reach EOF and nothing outlives the turn. */
            once__proc_signal(&t->proc, SIGKILL);
            t->swept = 1;
            t->swept_at = now;
        }
        if (t->proc.exited && t->proc.out_fd < 0 && t->proc.err_fd < 0)
            return;
        if (t->swept && now - t->swept_at >= DRAIN_MS)
            return;   /* an escaped grandchild holds the pipes open */
        timeout = check_limits(t, now);

        if (t->proc.in_fd >= 0) {
            io_in = nfds;
            fds[nfds++] = (struct pollfd){.fd = t->proc.in_fd, .events = POLLOUT};
        }
        if (t->proc.out_fd >= 0) {
            io_out = nfds;
            fds[nfds++] = (struct pollfd){.fd = t->proc.out_fd, .events = POLLIN};
        }
        if (t->proc.err_fd >= 0) {
            io_err = nfds;
            fds[nfds++] = (struct pollfd){.fd = t->proc.err_fd, .events = POLLIN};
        }
        if (t->proc.exit_fd >= 0 && !t->proc.exited) {
            /* Only wakes us; the exit itself is read by waitid at the top. */
            fds[nfds++] = (struct pollfd){.fd = t->proc.exit_fd, .events = POLLIN};
        } else if (!t->proc.exited && t->proc.out_fd < 0 && t->proc.err_fd < 0 &&
                   timeout > 5) {
            timeout = 5;   /* no pidfd: notice the exit soon after the pipes closed */
        }
        if (poll(fds, (nfds_t)nfds, timeout) < 0) {
            if (errno == EINTR)
                continue;
            /* Cannot happen with valid fds; do not spin. */
            char eb[128];
            say(t, "poll failed: %s", strerror_r(errno, eb, sizeof eb));
            stop(t);
            return;
        }
        if (io_out >= 0 && fds[io_out].revents)
            read_stdout(t);
        if (io_err >= 0 && fds[io_err].revents)
            read_stderr(t);
        if (io_in >= 0 && t->proc.in_fd >= 0 && fds[io_in].revents) {
            if (fds[io_in].revents & (POLLERR | POLLNVAL))
                once__proc_close(&t->proc.in_fd);
            else
                write_stdin(t);
        }
    }
}

/* The signal that killed the command, or 0. The command runs under
 * /bin/sh -c, and the shell (dash does not exec even a lone simple command)
 * reports a command killed by signal N as exit status 128 + N: that is read
 * as the signal, so SIGKILL is reported as such whoever sent it. Prefixing
 * "exec" instead would take the shell out of the way only for a simple
 * command and break a compound one ("cd dir && ./agent"). The price: a
 * command that itself exits 129..159 is reported as killed by that signal. */
static int killed_by(int st)
{
    if (WIFSIGNALED(st))
        return WTERMSIG(st);
    if (WIFEXITED(st) && WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + 32 &&
        sigabbrev_np(WEXITSTATUS(st) - 128) != NULL)
        return WEXITSTATUS(st) - 128;
    return 0;
}

/* The exit status decides the turn only if no line ended it. */
static void judge_exit(turn *t)
{
    int st = t->proc.status;
    char sig[32];
    int signo;

    if (st == -1) {
        if (t->ph == PH_RUN)
            fail(t, "exec: the command's exit status could not be read");
        return;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return;
    if ((signo = killed_by(st)) != 0) {
        const char *abbrev = sigabbrev_np(signo);
        snprintf(sig, sizeof sig, "SIG%s", abbrev ? abbrev : "?");
    }
    if (t->ph != PH_RUN) {
        if (t->ph == PH_ENDED)
            say(t, "the command exited with %s %d after ending the turn",
                signo ? "signal" : "status", signo ? signo : WEXITSTATUS(st));
        return;
    }
    if (signo != 0)
        fail(t, "exec: the command was killed by signal %d (%s)", signo, sig);
    else if (WIFEXITED(st))
        fail(t, "exec: the command exited with status %d", WEXITSTATUS(st));
    else
        fail(t, "exec: the command ended with wait status %d", st);
}

/* The agent's environment: the turn's identity, and TRACEPARENT when the
 * request that started the turn carried a W3C trace context. */
static int build_env(once_work *w, char vars[7][ONCE_ID_MAX + 64], char *env[8])
{
    const char *tid = once_work_task_id(w), *cid = once_work_context_id(w);

    snprintf(vars[0], sizeof vars[0], "ONCE_TASK_ID=%s", tid ? tid : "");
    snprintf(vars[1], sizeof vars[1], "ONCE_CONTEXT_ID=%s", cid ? cid : "");
    snprintf(vars[2], sizeof vars[2], "ONCE_FENCE=%" PRId64, once_work_fence(w));
    snprintf(vars[3], sizeof vars[3], "ONCE_STEP=%" PRId64, once_work_step(w));
    snprintf(vars[4], sizeof vars[4], "ONCE_EFFECT_KEY_PREFIX=%s:step-", tid ? tid : "");
    snprintf(vars[5], sizeof vars[5], "ONCE_RESUMED=%d", once_work_resumed(w) ? 1 : 0);
    int n = 6;
    const char *tp = once_work_traceparent(w);
    if (tp != NULL)
        snprintf(vars[n++], sizeof vars[0], "TRACEPARENT=%s", tp);
    for (int i = 0; i < n; i++)
        env[i] = vars[i];
    env[n] = NULL;
    return ONCE_OK;
}

static int sub_run(const once_executor *ex, once_work *w)
{
    const sub_cfg *cfg = ex->ctx;
    char vars[7][ONCE_ID_MAX + 64];
    char *env[8];
    char err[256];
    once__exec_turn in;
    turn t;
    int rc;

    memset(&t, 0, sizeof t);
    t.w = w;
    t.cfg = cfg;
    t.task_id = once_work_task_id(w) ? once_work_task_id(w) : "?";
    t.ph = PH_RUN;
    t.rc = ONCE_OK;
    if (once_work_canceled(w))
        return ONCE_ECANCELED;   /* canceled while queued: start nothing */

    in = (once__exec_turn){.task_id = once_work_task_id(w),
                           .context_id = once_work_context_id(w),
                           .fence = once_work_fence(w),
                           .step = once_work_step(w),
                           .resumed = once_work_resumed(w),
                           .message_json = once_work_message(w),
                           .task_json = once_work_task(w),
                           .checkpoint = once_work_checkpoint(w)};
    if ((rc = once__exec_input(&in, &t.input, &t.in_len)) != ONCE_OK)
        return rc;
    build_env(w, vars, env);
    rc = once__proc_spawn(cfg->command, env, &t.proc, err, sizeof err);
    if (rc != ONCE_OK) {
        once_free(t.input);
        char reason[300];
        snprintf(reason, sizeof reason, "exec: %s", err);
        say(&t, "%s", reason);
        rc = once_work_fail(w, reason);
        return rc == ONCE_EILLEGAL ? ONCE_OK : rc;
    }
    t.started = once_monotonic_ms();
    pump(&t);
    if (t.ph == PH_RUN && t.proc.out_fd >= 0) {
        /* Left the loop with stdout still open (held by an escaped process):
         * what is buffered is the last, unfinished line. */
        split_lines(&t);
        partial_line(&t);
    }
    flush_err(&t);
    once__proc_reap(&t.proc);
    ignored_summary(&t);
    judge_exit(&t);
    once_free(t.input);
    once_free(t.out);
    return t.rc;
}

/* ------------------------------------------------------------------ setup */

static void sub_destroy(once_executor *ex)
{
    sub_cfg *cfg = ex ? ex->ctx : NULL;
    if (cfg == NULL)
        return;
    once_free(cfg->command);
    once_free(cfg);
    ex->ctx = NULL;   /* a second destroy (engine, then owner) is harmless */
}

int once_executor_subprocess(const char *command, int64_t grace_ms, int64_t deadline_ms,
                             once_executor **out)
{
    once_executor *ex;
    sub_cfg *cfg;

    if (out == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    if (command == NULL || command[0] == '\0' || grace_ms < 0 || deadline_ms < 0)
        return ONCE_EINVAL;
    ex = once_calloc(1, sizeof *ex);
    cfg = once_calloc(1, sizeof *cfg);
    if (ex == NULL || cfg == NULL || (cfg->command = once_strdup(command)) == NULL) {
        once_free(ex);
        once_free(cfg);
        return ONCE_ENOMEM;
    }
    cfg->grace_ms = grace_ms;
    cfg->deadline_ms = deadline_ms;
    ex->name = "subprocess";
    ex->run = sub_run;
    ex->destroy = sub_destroy;
    ex->ctx = cfg;
    *out = ex;
    return ONCE_OK;
}

void once_executor_free(once_executor *ex)
{
    if (ex == NULL || ex == once_executor_echo())
        return;
    /* Only the executors libonce made were allocated by it. */
    int ours = ex->run == sub_run || once__exec_is_upstream(ex);
    if (ex->destroy)
        ex->destroy(ex);
    if (ours)
        once_free(ex);
}
