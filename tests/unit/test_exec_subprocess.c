/*
 * test_exec_subprocess.c -- the `--exec` executor driven by a real engine on
 * the memory: store, with small shell commands as agents. What users rely
 * on: a command that prints nothing and exits 0 completes its task; a
 * non-zero exit, a signal, a garbage line, a line cut off by exit, an
 * over-long line, a hang past the deadline each fail it with a reason that
 * says which; cancel delivers SIGTERM to the command and nothing it prints
 * afterwards lands; the environment and the stdin line carry the turn; every
 * part kind survives into the stored task; a direct Message is replayed on
 * retry; checkpoints reach the next turn; the example agents work; no fd,
 * no zombie outlives a turn.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"
#include "engine/engine.h"
#include "once/executor.h"
#include "once/store.h"
#include "timeout.h"

#define WAIT_MS tt_ms(15000)

typedef struct fx {
    once_store *store;
    once__engine *engine;
    once_executor *ex;
    char dir[64];
    int msgno;
} fx;

/* ------------------------------------------------------------------ files */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The file's contents (malloc'd) or NULL if it does not exist. */
static char *read_file(const char *dir, const char *name)
{
    char path[256];
    FILE *f;
    long n;
    char *buf;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((f = fopen(path, "r")) == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    buf[fread(buf, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return buf;
}

/* Wait up to ms (scaled) for the file to exist with a complete last line. */
static char *wait_file(const char *dir, const char *name, int64_t ms)
{
    int64_t end = once_monotonic_ms() + tt_ms(ms);
    for (;;) {
        char *s = read_file(dir, name);
        if (s && s[0] && s[strlen(s) - 1] == '\n')
            return s;
        free(s);
        if (once_monotonic_ms() > end)
            return NULL;
        usleep(10000);
    }
}

static void rm_rf(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512];
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* "@D" in cmd becomes the fixture's directory. */
static void expand(const char *cmd, const char *dir, char *out, size_t cap)
{
    size_t o = 0, dl = strlen(dir);
    for (const char *p = cmd; *p; p++) {
        if (p[0] == '@' && p[1] == 'D') {
            assert_true(o + dl < cap);
            memcpy(out + o, dir, dl);
            o += dl;
            p++;
        } else {
            assert_true(o + 1 < cap);
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* ---------------------------------------------------------------- fixture */

static void fx_make_dir(fx *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/once-exec-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
}

static void fx_start_in(fx *f, const char *cmd, int64_t grace_ms, int64_t deadline_ms)
{
    char full[4096], err[256];
    once__engine_config cfg;

    expand(cmd, f->dir, full, sizeof full);
    assert_int_equal(once_store_open("memory:", NULL, &f->store, err, sizeof err), ONCE_OK);
    assert_int_equal(once_executor_subprocess(full, grace_ms, deadline_ms, &f->ex), ONCE_OK);
    memset(&cfg, 0, sizeof cfg);
    cfg.store = f->store;
    cfg.executor = f->ex;
    cfg.replica_id = "test";
    cfg.workers = 4;
    cfg.lease_ms = 10000;
    cfg.max_wait_ms = WAIT_MS;
    assert_int_equal(once__engine_new(&cfg, &f->engine, err, sizeof err), ONCE_OK);
    assert_int_equal(once__engine_start(f->engine), ONCE_OK);
}

static void fx_start(fx *f, const char *cmd, int64_t grace_ms, int64_t deadline_ms)
{
    fx_make_dir(f);
    fx_start_in(f, cmd, grace_ms, deadline_ms);
}

static void fx_stop(fx *f)
{
    once__engine_free(f->engine);
    once_executor_free(f->ex);
    once_store_close(f->store);
    rm_rf(f->dir);
}

/* Send a user message with one text part. task_id NULL: a first message.
 * Returns the result ({"task":..} or {"message":..}); res gets the rest. */
static json_t *send_msg(fx *f, const char *task_id, const char *msgid, const char *text,
                        int immediately, once_send_res *res)
{
    char mid[64], tid[ONCE_ID_MAX + 1];
    json_t *m, *out;
    once_send_req req;

    if (task_id) {   /* may point into *res, which is cleared below */
        snprintf(tid, sizeof tid, "%s", task_id);
        task_id = tid;
    }
    if (msgid == NULL) {
        snprintf(mid, sizeof mid, "m-%d", ++f->msgno);
        msgid = mid;
    }
    m = json_pack("{s:s, s:s, s:[{s:s}]}", "messageId", msgid, "role", "ROLE_USER", "parts",
                  "text", text);
    if (task_id)
        json_object_set_new(m, "taskId", json_string(task_id));
    memset(&req, 0, sizeof req);
    req.principal = "alice";
    req.message = m;
    req.task_id = task_id;
    req.return_immediately = immediately;
    req.wait_ms = WAIT_MS;
    req.history_length = -1;
    memset(res, 0, sizeof *res);
    assert_int_equal(once__engine_send(f->engine, &req, res), ONCE_OK);
    json_decref(m);
    out = res->result;
    assert_non_null(out);
    return out;
}

static json_t *get_task(fx *f, const char *task_id)
{
    json_t *task = NULL;
    int64_t exp = 0;
    assert_int_equal(once__engine_get(f->engine, "alice", task_id, -1, &task, &exp), ONCE_OK);
    return task;
}

static once_state state_of(const json_t *task)
{
    return once_state_parse(
        json_string_value(json_object_get(json_object_get(task, "status"), "state")));
}

/* First text part of the status message ("" if none). */
static const char *status_text(const json_t *task)
{
    json_t *parts = json_object_get(
        json_object_get(json_object_get(task, "status"), "message"), "parts");
    const char *s = json_string_value(json_object_get(json_array_get(parts, 0), "text"));
    return s ? s : "";
}

/* Run one first message to its end; returns the stored task. */
static json_t *run_one(fx *f, const char *text, once_send_res *res)
{
    json_t *r = send_msg(f, NULL, NULL, text, 0, res);
    json_t *task = json_incref(json_object_get(r, "task"));
    assert_non_null(task);
    json_decref(r);
    return task;
}

static void expect_failed(fx *f, const char *needle)
{
    once_send_res res;
    json_t *task = run_one(f, "go", &res);
    if (state_of(task) != ONCE_STATE_FAILED || strstr(status_text(task), needle) == NULL)
        fail_msg("state %s, reason \"%s\", want failed with \"%s\"",
                 once_state_name(state_of(task)), status_text(task), needle);
    json_decref(task);
}

/* Wait (up to ms, scaled) until pid is gone (reaped, so kill(pid, 0) says
 * ESRCH). The executor reaps its child at the very end of the turn. */
static int gone_within(pid_t pid, int64_t ms)
{
    int64_t end = once_monotonic_ms() + tt_ms(ms);
    while (kill(pid, 0) == 0 || errno != ESRCH) {
        if (once_monotonic_ms() > end)
            return 0;
        usleep(10000);
    }
    return 1;
}

static pid_t read_pid(const char *dir)
{
    char *s = wait_file(dir, "pid", 5000);
    long pid;
    assert_non_null(s);
    pid = strtol(s, NULL, 10);
    free(s);
    assert_true(pid > 1);
    return (pid_t)pid;
}

/* ----------------------------------------------------------------- tests */

static void test_silent_exit0_completes(void **state)
{
    fx f;
    once_send_res res;
    json_t *task;
    (void)state;

    /* "true" does not even read its input: EPIPE must not hurt onced */
    fx_start(&f, "true", 500, 0);
    task = run_one(&f, "hello", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    json_decref(task);
    fx_stop(&f);

    fx_start(&f, "cat >/dev/null", 500, 0);
    task = run_one(&f, "hello", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    json_decref(task);
    fx_stop(&f);
}

static void test_exit_status_fails(void **state)
{
    fx f;
    (void)state;

    fx_start(&f, "exit 3", 500, 0);
    expect_failed(&f, "exited with status 3");
    fx_stop(&f);

    fx_start(&f, "kill -9 $$", 500, 0);
    expect_failed(&f, "killed by signal 9 (SIGKILL)");
    fx_stop(&f);

    /* the exit status counts only when no line ended the turn */
    {
        once_send_res res;
        json_t *task;
        fx_start(&f, "echo '{\"status\":\"completed\"}'; exit 4", 500, 0);
        task = run_one(&f, "x", &res);
        assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
        json_decref(task);
        fx_stop(&f);
    }
}

static void test_malformed_output_fails(void **state)
{
    fx f;
    int64_t t0;
    (void)state;

    /* the reason quotes the line; the command (still sleeping) is killed,
     * so the turn and the engine shutdown do not wait for it */
    t0 = once_monotonic_ms();
    fx_start(&f, "echo '{\"status\":\"working\"}'; echo 'Traceback (most recent call last):'; "
                 "sleep 30",
             300, 0);
    expect_failed(&f, "malformed output line 2: output line is not JSON");
    expect_failed(&f, "(line: Traceback (most recent call last):)");
    fx_stop(&f);
    assert_true(once_monotonic_ms() - t0 < tt_ms(5000));   /* not the 30 s */

    fx_start(&f, "echo '{\"status\":\"done\"}'", 300, 0);
    expect_failed(&f, "unknown status \"done\"");
    fx_stop(&f);

    fx_start(&f, "echo '{\"artifact\":{\"parts\":[{\"kind\":\"text\",\"text\":\"x\"}]}}'", 300, 0);
    expect_failed(&f, "has \"kind\"");
    fx_stop(&f);

    /* exit in the middle of a line */
    fx_start(&f, "printf '{\"status\":\"compl'", 300, 0);
    expect_failed(&f, "output ended in the middle of line 1");
    fx_stop(&f);

    /* a line over 1 MiB */
    fx_start(&f, "head -c 1100000 /dev/zero | tr '\\000' x; echo", 300, 0);
    expect_failed(&f, "longer than 1 MiB");
    fx_stop(&f);

    /* a line the engine refuses in this state: a direct Message on a
     * continuation (the client already holds a Task) */
    {
        once_send_res res;
        json_t *r, *task;
        fx_start(&f,
                 "read -r l; case \"$l\" in *'\"checkpoint\":null'*) "
                 "echo '{\"checkpoint\":\"asked\"}'; "
                 "echo '{\"status\":\"input-required\",\"text\":\"q?\"}';; "
                 "*) echo '{\"reply\":{\"parts\":[{\"text\":\"r\"}]}}';; esac",
                 300, 0);
        task = run_one(&f, "first", &res);
        assert_int_equal(state_of(task), ONCE_STATE_INPUT_REQUIRED);
        assert_string_equal(status_text(task), "q?");
        json_decref(task);
        r = send_msg(&f, res.task_id, NULL, "answer", 0, &res);
        task = json_object_get(r, "task");
        assert_int_equal(state_of(task), ONCE_STATE_FAILED);
        assert_non_null(strstr(status_text(task), "refused"));
        json_decref(r);
        fx_stop(&f);
    }
}

static void test_deadline_kills(void **state)
{
    fx f;
    once_send_res res;
    json_t *task;
    pid_t pid;
    int64_t t0;
    (void)state;

    /* ignores SIGTERM (and so do its children): only SIGKILL ends it */
    fx_start(&f, "trap '' TERM; echo $$ > @D/pid; while :; do sleep 0.05; done", 300, 400);
    t0 = once_monotonic_ms();
    task = run_one(&f, "go", &res);
    assert_true(once_monotonic_ms() - t0 >= 400);
    assert_int_equal(state_of(task), ONCE_STATE_FAILED);
    assert_non_null(strstr(status_text(task), "deadline exceeded"));
    json_decref(task);
    pid = read_pid(f.dir);
    assert_true(gone_within(pid, 3000));
    fx_stop(&f);
}

/* The shell between onced and the agent reports an agent killed by a signal
 * as exit status 128 + N; the task still says which signal. */
static void test_agent_killed_under_shell(void **state)
{
    fx f;
    (void)state;

    /* the inner shell is killed; the outer one (onced's child) exits 137 */
    fx_start(&f, "sh -c 'kill -9 $$'; exit $?", 500, 0);
    expect_failed(&f, "killed by signal 9 (SIGKILL)");
    fx_stop(&f);

    fx_start(&f, "sh -c 'kill -TERM $$'", 500, 0);
    expect_failed(&f, "killed by signal 15 (SIGTERM)");
    fx_stop(&f);
}

/* fd 2 redirected, and onced's log (core/log.h) on it, for the length of
 * a test; restored (the log off again) by stderr_restore. */
static int stderr_redirect(int fd)
{
    int saved = dup(2);
    assert_true(saved >= 0);
    fflush(stderr);
    assert_int_equal(dup2(fd, 2), 2);
    once__log_setup(ONCE_LOG_INFO, ONCE_LOG_TEXT, 2);
    return saved;
}

static void stderr_restore(int saved)
{
    once__log_setup(-1, ONCE_LOG_TEXT, 2);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* 1 if needle occurs in s exactly once. */
static int just_once(const char *s, const char *needle)
{
    const char *first = strstr(s, needle);
    return first != NULL && strstr(first + 1, needle) == NULL;
}

/* Lines printed after the turn ended are logged once, then only counted:
 * a command that keeps printing cannot flood onced's log. */
static void test_ignored_lines_logged_once(void **state)
{
    fx f;
    once_send_res res;
    json_t *task;
    char path[128];
    char *log = NULL;
    int fd, saved;
    (void)state;

    fx_make_dir(&f);
    snprintf(path, sizeof path, "%s/stderr", f.dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    saved = stderr_redirect(fd);
    fx_start_in(&f,
                "echo '{\"status\":\"completed\"}'; "
                "seq 2000 | sed 's/.*/{\"status\":\"working\"}/'; echo garbage; echo garbage",
                500, 0);
    task = run_one(&f, "go", &res);
    int64_t end = once_monotonic_ms() + tt_ms(10000);
    /* the count is logged when the command is gone */
    while (once_monotonic_ms() < end) {
        free(log);
        log = read_file(f.dir, "stderr");
        if (log != NULL && strstr(log, "more output lines after the turn ended") != NULL)
            break;
        usleep(10000);
    }
    stderr_restore(saved);
    close(fd);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    json_decref(task);
    assert_non_null(log);
    if (!just_once(log, "ignored output line") ||
        !just_once(log, "more output lines after the turn ended"))
        fail_msg("want one ignored line and one count; log: %.2000s", log);
    free(log);
    fx_stop(&f);
}

/* The deadline is checked between the lines of one read, not only between
 * reads: onced is held inside a batch (its stderr is a full pipe while it
 * logs the batch's log lines) until the deadline has passed; the completion
 * line later in the same batch must not land. */
static void test_deadline_within_batch(void **state)
{
    fx f;
    once_send_res res;
    json_t *r, *task = NULL;
    int p[2], saved, avail = 0;
    char batch[16384], line[1100], task_id[ONCE_ID_MAX + 1];
    size_t off = 0;
    (void)state;

    memset(line, 'x', 1000);
    line[1000] = '\0';
    for (int i = 0; i < 8; i++)
        off += (size_t)snprintf(batch + off, sizeof batch - off, "{\"log\":\"%s\"}\n", line);
    snprintf(batch + off, sizeof batch - off, "{\"status\":\"completed\"}\n");
    fx_make_dir(&f);
    write_file(f.dir, "batch", batch);

    assert_int_equal(pipe(p), 0);
    assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0);
    assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    saved = stderr_redirect(p[1]);
    fx_start_in(&f, "cat @D/batch; sleep 5", 300, 300);
    r = send_msg(&f, NULL, NULL, "go", 1, &res);
    snprintf(task_id, sizeof task_id, "%s", res.task_id);
    json_decref(r);

    /* three log lines fill the pipe: onced is now inside the batch */
    int64_t end = once_monotonic_ms() + tt_ms(10000);
    while (avail < 3000 && once_monotonic_ms() < end) {
        assert_int_equal(ioctl(p[0], FIONREAD, &avail), 0);
        usleep(5000);
    }
    int held = avail >= 3000;
    usleep(400 * 1000);   /* past the deadline, however fast the machine */
    /* drain until the task ends */
    once_state st = ONCE_STATE_UNKNOWN;
    end = once_monotonic_ms() + tt_ms(10000);
    while (once_monotonic_ms() < end) {
        char buf[4096];
        while (read(p[0], buf, sizeof buf) > 0) {
        }
        json_decref(task);
        task = get_task(&f, task_id);
        st = state_of(task);
        if (once_state_terminal(st))
            break;
        usleep(5000);
    }
    fx_stop(&f);
    stderr_restore(saved);
    close(p[0]);
    close(p[1]);
    assert_true(held);
    if (st != ONCE_STATE_FAILED || strstr(status_text(task), "deadline exceeded") == NULL)
        fail_msg("state %s, reason \"%s\", want failed with deadline exceeded",
                 once_state_name(st), status_text(task));
    json_decref(task);
}

static void test_cancel_sends_sigterm(void **state)
{
    fx f;
    once_send_res res;
    json_t *r, *task = NULL;
    char *marker;
    pid_t pid;
    once_state st;
    int64_t exp;
    (void)state;

    /* On SIGTERM it records the signal and then tries to complete the
     * task: that line must not land. */
    fx_start(&f,
             "trap 'echo term > @D/marker; echo \"{\\\"status\\\":\\\"completed\\\"}\"; exit 0' "
             "TERM; echo $$ > @D/pid; echo '{\"status\":\"working\",\"text\":\"started\"}'; "
             "while :; do sleep 0.05; done",
             tt_ms(2000), 0);
    r = send_msg(&f, NULL, NULL, "go", 1, &res);
    json_decref(r);
    pid = read_pid(f.dir);
    assert_int_equal(once__engine_cancel(f.engine, "alice", res.task_id, &task, &st, &exp),
                     ONCE_OK);
    assert_int_equal(state_of(task), ONCE_STATE_CANCELED);
    json_decref(task);
    marker = wait_file(f.dir, "marker", 3000);
    assert_non_null(marker);
    assert_string_equal(marker, "term\n");
    free(marker);
    /* it exited on its own well inside the 2 s grace (both scaled), and
     * the turn ended: what it printed after the cancel is not applied */
    assert_true(gone_within(pid, 1500));
    task = get_task(&f, res.task_id);
    assert_int_equal(state_of(task), ONCE_STATE_CANCELED);
    json_decref(task);
    fx_stop(&f);
}

static void test_environment_and_stdin(void **state)
{
    fx f;
    once_send_res res;
    json_t *task, *in, *msg;
    char *env, expect[512];
    (void)state;

    fx_start(&f,
             "cat > @D/input.json; "
             "echo \"$ONCE_TASK_ID|$ONCE_CONTEXT_ID|$ONCE_FENCE|$ONCE_STEP|"
             "$ONCE_EFFECT_KEY_PREFIX|$ONCE_RESUMED\" > @D/env",
             500, 0);
    task = run_one(&f, "hello stdin", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);

    snprintf(expect, sizeof expect, "%s/input.json", f.dir);
    in = json_load_file(expect, 0, NULL);
    assert_non_null(in);
    assert_string_equal(json_string_value(json_object_get(in, "taskId")), res.task_id);
    assert_string_equal(json_string_value(json_object_get(in, "contextId")),
                        json_string_value(json_object_get(task, "contextId")));
    assert_true(json_integer_value(json_object_get(in, "fence")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(in, "step")), 0);
    assert_true(json_is_false(json_object_get(in, "resumed")));
    assert_true(json_is_null(json_object_get(in, "checkpoint")));
    msg = json_object_get(in, "message");
    assert_string_equal(json_string_value(json_object_get(msg, "messageId")), "m-1");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(msg, "parts"), 0),
                                          "text")),
        "hello stdin");
    assert_string_equal(json_string_value(json_object_get(json_object_get(in, "task"), "id")),
                        res.task_id);
    assert_true(json_array_size(json_object_get(json_object_get(in, "task"), "history")) >= 1);

    env = read_file(f.dir, "env");
    assert_non_null(env);
    snprintf(expect, sizeof expect, "%s|%s|%lld|0|%s:step-|0\n", res.task_id,
             json_string_value(json_object_get(task, "contextId")),
             (long long)json_integer_value(json_object_get(in, "fence")), res.task_id);
    assert_string_equal(env, expect);
    free(env);
    json_decref(in);
    json_decref(task);
    fx_stop(&f);
}

static const char parts_agent[] =
    "cat >/dev/null\n"
    "echo '{\"status\":\"working\",\"message\":{\"parts\":[{\"text\":\"reading\"}],"
    "\"metadata\":{\"phase\":1}}}'\n"
    "echo '{\"artifact\":{\"artifactId\":\"all\",\"name\":\"kinds\",\"description\":\"d\","
    "\"metadata\":{\"k\":\"v\"},\"parts\":[{\"text\":\"t\"},"
    "{\"raw\":\"aGVsbG8=\",\"filename\":\"h.bin\",\"mediaType\":\"application/octet-stream\"},"
    "{\"url\":\"https://example.com/r.pdf\",\"filename\":\"r.pdf\","
    "\"mediaType\":\"application/pdf\"},"
    "{\"data\":{\"n\":1,\"l\":[true,null]},\"mediaType\":\"application/json\"}]},"
    "\"lastChunk\":true}'\n"
    "echo '{\"artifact\":{\"artifactId\":\"s\",\"parts\":[{\"text\":\"chunk1 \"}]}}'\n"
    "echo '{\"artifact\":{\"artifactId\":\"s\",\"parts\":[{\"text\":\"chunk2\"}]},"
    "\"append\":true,\"lastChunk\":true}'\n"
    "echo '{\"checkpoint\":\"cp-1\",\"step\":2}'\n"
    "echo '{\"status\":\"TASK_STATE_COMPLETED\",\"text\":\"done\"}'\n";

static void test_artifacts_survive(void **state)
{
    fx f;
    once_send_res res;
    json_t *task, *arts, *a, *parts, *p;
    (void)state;

    fx_make_dir(&f);
    write_file(f.dir, "agent.sh", parts_agent);
    fx_start_in(&f, "sh @D/agent.sh", 500, 0);
    task = run_one(&f, "go", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    assert_string_equal(status_text(task), "done");

    arts = json_object_get(task, "artifacts");
    assert_int_equal(json_array_size(arts), 2);
    a = json_array_get(arts, 0);
    assert_string_equal(json_string_value(json_object_get(a, "artifactId")), "all");
    assert_string_equal(json_string_value(json_object_get(a, "name")), "kinds");
    assert_string_equal(json_string_value(json_object_get(a, "description")), "d");
    assert_string_equal(json_string_value(json_object_get(json_object_get(a, "metadata"), "k")),
                        "v");
    parts = json_object_get(a, "parts");
    assert_int_equal(json_array_size(parts), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 0), "text")), "t");
    p = json_array_get(parts, 1);
    assert_string_equal(json_string_value(json_object_get(p, "raw")), "aGVsbG8=");
    assert_string_equal(json_string_value(json_object_get(p, "filename")), "h.bin");
    assert_string_equal(json_string_value(json_object_get(p, "mediaType")),
                        "application/octet-stream");
    p = json_array_get(parts, 2);
    assert_string_equal(json_string_value(json_object_get(p, "url")),
                        "https://example.com/r.pdf");
    assert_string_equal(json_string_value(json_object_get(p, "filename")), "r.pdf");
    assert_string_equal(json_string_value(json_object_get(p, "mediaType")), "application/pdf");
    p = json_array_get(parts, 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "data"), "n")), 1);
    assert_true(json_is_null(json_array_get(json_object_get(json_object_get(p, "data"), "l"), 1)));
    assert_string_equal(json_string_value(json_object_get(p, "mediaType")), "application/json");

    /* the streamed artifact holds both chunks, in order */
    a = json_array_get(arts, 1);
    assert_string_equal(json_string_value(json_object_get(a, "artifactId")), "s");
    parts = json_object_get(a, "parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 0), "text")),
                        "chunk1 ");
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 1), "text")),
                        "chunk2");
    json_decref(task);
    fx_stop(&f);
}

static void test_direct_reply_replays(void **state)
{
    fx f;
    once_send_res res;
    json_t *r1, *r2, *task = NULL;
    int64_t exp;
    char *d1, *d2;
    (void)state;

    fx_start(&f, "echo '{\"reply\":{\"parts\":[{\"text\":\"42\"}],\"metadata\":{\"a\":1}}}'", 500,
             0);
    r1 = send_msg(&f, NULL, "ask-1", "what is the answer?", 0, &res);
    assert_null(json_object_get(r1, "task"));
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(r1, "message"), "parts"), 0), "text")),
        "42");
    assert_string_equal(json_string_value(json_object_get(json_object_get(r1, "message"), "role")),
                        "ROLE_AGENT");
    r2 = send_msg(&f, NULL, "ask-1", "what is the answer?", 0, &res);
    assert_int_equal(res.replayed, 1);
    d1 = json_dumps(r1, JSON_SORT_KEYS | JSON_COMPACT);
    d2 = json_dumps(r2, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(d1, d2);
    free(d1);
    free(d2);
    /* a Message is no Task: GetTask does not find it */
    assert_int_equal(once__engine_get(f.engine, "alice", res.task_id, -1, &task, &exp),
                     ONCE_ENOTFOUND);
    json_decref(r1);
    json_decref(r2);
    fx_stop(&f);
}

static void test_stderr_and_log_pass_through(void **state)
{
    fx f;
    once_send_res res;
    json_t *task;
    char *log, want[256];
    int saved, fd;
    (void)state;

    fx_start(&f, "echo oops >&2; echo '{\"log\":\"note to self\"}'; printf 'no newline' >&2", 500,
             0);
    snprintf(want, sizeof want, "%s/stderr", f.dir);
    fd = open(want, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    saved = stderr_redirect(fd);
    close(fd);
    task = run_one(&f, "go", &res);
    /* The answer may come before the turn passed on the command's last
     * stderr bytes: wait for them (the unterminated line, flushed at exit). */
    {
        int64_t end = once_monotonic_ms() + tt_ms(5000);
        snprintf(want, sizeof want, " agent_stderr task=%s text=\"no newline\"\n", res.task_id);
        for (;;) {
            log = read_file(f.dir, "stderr");
            int got = log != NULL && strstr(log, want) != NULL;
            free(log);
            if (got || once_monotonic_ms() > end)
                break;
            usleep(10000);
        }
    }
    stderr_restore(saved);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    json_decref(task);

    /* Each is one line of onced's log (text format here), the task named. */
    log = read_file(f.dir, "stderr");
    assert_non_null(log);
    snprintf(want, sizeof want, " info agent_stderr task=%s text=oops\n", res.task_id);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, " info agent_log task=%s text=\"note to self\"\n", res.task_id);
    assert_non_null(strstr(log, want));
    snprintf(want, sizeof want, " info agent_stderr task=%s text=\"no newline\"\n", res.task_id);
    assert_non_null(strstr(log, want));
    free(log);
    fx_stop(&f);
}

static void test_checkpoint_reaches_next_turn(void **state)
{
    fx f;
    once_send_res res;
    json_t *task, *r;
    char *in2;
    (void)state;

    /* turn 1 saves a checkpoint and asks; turn 2 records its input */
    fx_start(&f,
             "read -r l; case \"$l\" in *'\"checkpoint\":null'*) "
             "echo '{\"checkpoint\":\"page=3\",\"step\":5}'; "
             "echo '{\"status\":\"input-required\",\"text\":\"which?\"}';; "
             "*) printf '%s\\n' \"$l\" > @D/in2; echo \"$ONCE_STEP\" > @D/step2;; esac",
             500, 0);
    task = run_one(&f, "first", &res);
    assert_int_equal(state_of(task), ONCE_STATE_INPUT_REQUIRED);
    json_decref(task);
    r = send_msg(&f, res.task_id, NULL, "second", 0, &res);
    assert_int_equal(state_of(json_object_get(r, "task")), ONCE_STATE_COMPLETED);
    json_decref(r);
    in2 = read_file(f.dir, "in2");
    assert_non_null(in2);
    assert_non_null(strstr(in2, "\"checkpoint\":\"page=3\""));
    assert_non_null(strstr(in2, "\"step\":5"));
    assert_non_null(strstr(in2, "\"text\":\"second\""));
    free(in2);
    in2 = read_file(f.dir, "step2");
    assert_string_equal(in2, "5\n");
    free(in2);
    fx_stop(&f);
}

/* The examples/ agents, as e2e tests will run them. */
static void example_path(const char *name, char *out, size_t cap)
{
    const char *src = __FILE__;   /* .../tests/unit/test_exec_subprocess.c */
    const char *cut = strstr(src, "tests/unit/");
    assert_non_null(cut);
    snprintf(out, cap, "%.*sexamples/%s", (int)(cut - src), src, name);
}

static void test_example_agents(void **state)
{
    fx f;
    once_send_res res;
    json_t *task, *r, *parts;
    char path[512], cmd[600];
    (void)state;

    example_path("echo_agent.sh", path, sizeof path);
    snprintf(cmd, sizeof cmd, "sh '%s'", path);
    fx_start(&f, cmd, 1000, tt_ms(10000));
    task = run_one(&f, "say \"hi\"", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    parts = json_object_get(json_array_get(json_object_get(task, "artifacts"), 0), "parts");
    assert_string_equal(json_string_value(json_object_get(json_array_get(parts, 0), "text")),
                        "say \"hi\"");
    json_decref(task);
    fx_stop(&f);

    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    example_path("review_agent.py", path, sizeof path);
    snprintf(cmd, sizeof cmd, "python3 '%s'", path);
    fx_start(&f, cmd, 1000, tt_ms(10000));
    task = run_one(&f, "ACME supply agreement", &res);
    assert_int_equal(state_of(task), ONCE_STATE_INPUT_REQUIRED);
    assert_string_equal(status_text(task), "Which jurisdiction governs this contract?");
    json_decref(task);
    r = send_msg(&f, res.task_id, NULL, "Swiss", 0, &res);
    task = json_object_get(r, "task");
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    {
        char want[256];
        snprintf(want, sizeof want, "review filed as %s:step-0", res.task_id);
        assert_string_equal(status_text(task), want);
    }
    parts = json_object_get(json_array_get(json_object_get(task, "artifacts"), 0), "parts");
    assert_int_equal(json_array_size(parts), 2);
    assert_non_null(strstr(json_string_value(json_object_get(json_array_get(parts, 1), "text")),
                           "Swiss"));
    json_decref(r);

    /* a direct Message, and every part kind */
    r = send_msg(&f, NULL, NULL, "reply: fine", 0, &res);
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(r, "message"), "parts"), 0), "text")),
        "fine");
    json_decref(r);
    task = run_one(&f, "parts", &res);
    assert_int_equal(state_of(task), ONCE_STATE_COMPLETED);
    parts = json_object_get(json_array_get(json_object_get(task, "artifacts"), 0), "parts");
    assert_int_equal(json_array_size(parts), 4);
    json_decref(task);
    task = run_one(&f, "reject", &res);
    assert_int_equal(state_of(task), ONCE_STATE_REJECTED);
    json_decref(task);
    task = run_one(&f, "auth", &res);
    assert_int_equal(state_of(task), ONCE_STATE_AUTH_REQUIRED);
    json_decref(task);
    fx_stop(&f);
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    return n - 1;   /* the directory's own fd */
}

static void test_no_fd_or_zombie_left(void **state)
{
    fx f;
    once_send_res res;
    int before, after = -1;
    int64_t end;
    (void)state;

    /* completes, fails by exit status, or prints garbage and is killed */
    fx_start(&f,
             "read -r l; case \"$l\" in *'\"text\":\"a\"'*) exit 3;; "
             "*'\"text\":\"b\"'*) echo garbage; sleep 5;; "
             "*) echo '{\"status\":\"completed\"}';; esac",
             200, 0);
    before = count_fds();
    for (int i = 0; i < 9; i++) {
        static const char *const texts[] = {"a", "b", "c"};
        static const once_state want[] = {ONCE_STATE_FAILED, ONCE_STATE_FAILED,
                                          ONCE_STATE_COMPLETED};
        json_t *task = run_one(&f, texts[i % 3], &res);
        assert_int_equal(state_of(task), want[i % 3]);
        json_decref(task);
    }
    end = once_monotonic_ms() + tt_ms(2000);
    while (once_monotonic_ms() < end && (after = count_fds()) != before)
        usleep(10000);
    assert_int_equal(after, before);
    /* every child was reaped: none left to wait for */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    fx_stop(&f);
}

static void test_constructor_contract(void **state)
{
    once_executor *ex = (once_executor *)1;
    (void)state;
    assert_int_equal(once_executor_subprocess(NULL, 0, 0, &ex), ONCE_EINVAL);
    assert_null(ex);
    assert_int_equal(once_executor_subprocess("", 0, 0, &ex), ONCE_EINVAL);
    assert_int_equal(once_executor_subprocess("true", -1, 0, &ex), ONCE_EINVAL);
    assert_int_equal(once_executor_subprocess("true", 0, -1, &ex), ONCE_EINVAL);
    assert_int_equal(once_executor_subprocess("true", 0, 0, NULL), ONCE_EINVAL);
    assert_int_equal(once_executor_subprocess("true", 10, 20, &ex), ONCE_OK);
    assert_string_equal(ex->name, "subprocess");
    once_executor_free(ex);
    once_executor_free(NULL);
    /* the built-in echo is static: freeing it is a no-op */
    once_executor_free((once_executor *)once_executor_echo());
    assert_string_equal(once_executor_echo()->name, "echo");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constructor_contract),
        cmocka_unit_test(test_silent_exit0_completes),
        cmocka_unit_test(test_exit_status_fails),
        cmocka_unit_test(test_malformed_output_fails),
        cmocka_unit_test(test_deadline_kills),
        cmocka_unit_test(test_deadline_within_batch),
        cmocka_unit_test(test_agent_killed_under_shell),
        cmocka_unit_test(test_ignored_lines_logged_once),
        cmocka_unit_test(test_cancel_sends_sigterm),
        cmocka_unit_test(test_environment_and_stdin),
        cmocka_unit_test(test_artifacts_survive),
        cmocka_unit_test(test_direct_reply_replays),
        cmocka_unit_test(test_stderr_and_log_pass_through),
        cmocka_unit_test(test_checkpoint_reaches_next_turn),
        cmocka_unit_test(test_example_agents),
        cmocka_unit_test(test_no_fd_or_zombie_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
