/*
 * race_procs.c -- create-if-absent across processes on one SQLite file.
 *
 * 8 forked children each open their own handle on the same (initially
 * empty) file, so the first round also races schema creation. For each of
 * 20 keys the parent releases all children at once; each tries to create
 * the key with its own marker. Exactly one must get ONCE_OK and the other 7
 * ONCE_EEXISTS carrying the winner's marker -- what two onced replicas
 * sharing one registry rely on when a retried send lands on the other one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/util.h"
#include "timeout.h"

#define NPROC 8
#define NKEYS 20
#define DEADLINE_MS 15000   /* for all keys together; scaled */

/* Child -> parent, one write each (< PIPE_BUF, so never interleaved). */
typedef struct result {
    int proc;
    int key;
    int rc;
    char seen[48];   /* winner's task_json on EEXISTS */
} result;

static void child(int idx, const char *url, int cmd_fd, int res_fd)
{
    once_store *s = NULL;
    int rc = once_store_open(url, NULL, &s, NULL, 0);
    int key;

    while (read(cmd_fd, &key, sizeof key) == (ssize_t)sizeof key) {
        result res;
        once_record r, w;
        st_events e;
        char id[32], json[48];

        memset(&res, 0, sizeof res);
        res.proc = idx;
        res.key = key;
        snprintf(id, sizeof id, "key-%d", key);
        snprintf(json, sizeof json, "{\"proc\":%d,\"key\":%d}", idx, key);
        if (rc != ONCE_OK) {
            res.rc = rc;
        } else if (st_rec(&r, "anonymous", id, ONCE_STATE_WORKING, 1, json) != 0) {
            res.rc = ONCE_ENOMEM;
        } else {
            r.generation = 1;
            st_mkev(&e, 1, 1, "race");
            res.rc = once_store_create(s, &r, e.ev, 1, &w, NULL);
            if (res.rc == ONCE_EEXISTS && w.task_json)
                snprintf(res.seen, sizeof res.seen, "%s", w.task_json);
            once_record_clear(&w);
            once_record_clear(&r);
        }
        if (write(res_fd, &res, sizeof res) != (ssize_t)sizeof res)
            break;
    }
    once_store_close(s);
    _exit(0);
}

static void procs_race_create(void **state)
{
    char path[PATH_MAX], url[PATH_MAX + 8];
    int cmd[NPROC][2], res_pipe[2];
    pid_t pid[NPROC];
    int64_t deadline;
    once_store *s;
    once_check_report rep;
    int i, k;

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    assert_int_equal(st_tmp_path(path, sizeof path, "race"), 0);
    snprintf(url, sizeof url, "sqlite:%s", path);
    assert_int_equal(pipe(res_pipe), 0);
    for (i = 0; i < NPROC; i++) {
        assert_int_equal(pipe(cmd[i]), 0);
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            int j;
            close(res_pipe[0]);
            for (j = 0; j <= i; j++)
                close(cmd[j][1]);
            child(i, url, cmd[i][0], res_pipe[1]);
        }
        close(cmd[i][0]);
    }
    close(res_pipe[1]);

    deadline = once_monotonic_ms() + tt_ms(DEADLINE_MS);
    for (k = 0; k < NKEYS; k++) {
        result res[NPROC];
        int got = 0, winners = 0, winner = -1;
        char want[48];

        for (i = 0; i < NPROC; i++)
            assert_int_equal(write(cmd[i][1], &k, sizeof k), (ssize_t)sizeof k);
        while (got < NPROC) {
            struct pollfd pfd = {.fd = res_pipe[0], .events = POLLIN};
            int64_t left = deadline - once_monotonic_ms();
            if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
                fail_msg("key %d: only %d of %d processes answered in time", k, got, NPROC);
            assert_int_equal(read(res_pipe[0], &res[got], sizeof res[got]),
                             (ssize_t)sizeof res[got]);
            assert_int_equal(res[got].key, k);
            got++;
        }
        for (i = 0; i < NPROC; i++) {
            if (res[i].rc == ONCE_OK) {
                winners++;
                winner = res[i].proc;
            } else if (res[i].rc != ONCE_EEXISTS) {
                fail_msg("key %d proc %d: %s", k, res[i].proc, once_errname(res[i].rc));
            }
        }
        assert_int_equal(winners, 1);
        snprintf(want, sizeof want, "{\"proc\":%d,\"key\":%d}", winner, k);
        for (i = 0; i < NPROC; i++)
            if (res[i].rc == ONCE_EEXISTS)
                assert_string_equal(res[i].seen, want);
    }
    for (i = 0; i < NPROC; i++) {
        int st;
        close(cmd[i][1]);
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    close(res_pipe[0]);

    /* The file holds exactly the winners, each with its one event. */
    assert_int_equal(once_store_open(url, NULL, &s, NULL, 0), ONCE_OK);
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check: %s", rep.first_problem);
    assert_int_equal(rep.records, NKEYS);
    assert_int_equal(rep.events, NKEYS);
    once_store_close(s);
    st_remove_db(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(procs_race_create),
    };
    return cmocka_run_group_tests_name("store_race_procs", tests, NULL, NULL);
}
