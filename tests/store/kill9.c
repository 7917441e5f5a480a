/*
 * kill9.c -- a SQLite writer killed with SIGKILL at random moments leaves a
 * consistent registry, and loses nothing it acknowledged.
 *
 * Each of 30 rounds forks a writer that first finishes the tasks the
 * previous writer left unfinished (CAS updates on recovered records), then
 * loops creating tasks and advancing each through three CAS updates with
 * events, reporting every acknowledged write to the parent over a pipe. The
 * parent waits for the writer's first acknowledged write (so every kill
 * interrupts real work, however slow the machine), kills it 0..38 ms later,
 * reopens the file and requires:
 *   - check(): every record's generation equals its last event's, events
 *     1..generation without gaps, no orphan events, legal states;
 *   - every acknowledged (task, version) is there (version >= acked).
 * The seed is printed; ONCE_KILL9_SEED=<n> replays a run's timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/util.h"
#include "timeout.h"

#define ROUNDS 30
#define FIRST_ACK_MS 10000   /* bound (scaled) on a writer's first acknowledged write */
#define MAX_ACKS 200000

/* One acknowledged write, child -> parent (atomic pipe write). */
typedef struct ack {
    int round, task;
    int64_t version;
    int64_t generation;
} ack;

static void task_id(char *out, size_t n, int round, int task)
{
    snprintf(out, n, "r%02d-t%05d", round, task);
}

static int send_ack(int fd, int round, int task, const once_record *r)
{
    ack a = {.round = round, .task = task, .version = r->version, .generation = r->generation};
    return write(fd, &a, sizeof a) == (ssize_t)sizeof a ? 0 : -1;
}

/* One CAS step on r: +1 version, +nev events, state st. */
static int advance(once_store *s, once_record *r, once_state st, size_t nev, const char *tag)
{
    int64_t expect = r->version;
    st_events e;
    int rc;

    r->version++;
    st_mkev(&e, r->generation + 1, nev, tag);
    r->generation += (int64_t)nev;
    r->state = st;
    r->finished_at = once_state_terminal(st) ? r->updated_at + 1 : 0;
    r->step++;
    rc = once_store_update(s, r, expect, e.ev, nev);
    if (rc != ONCE_OK) {
        r->version = expect;
        r->generation -= (int64_t)nev;
    }
    return rc;
}

static void writer(int round, const char *url, int fd)
{
    once_store *s;
    once_record r;
    char id[32];
    int t, rc;

    if (once_store_open(url, NULL, &s, NULL, 0) != ONCE_OK)
        _exit(2);
    /* Finish what the previous writer left behind. */
    for (t = 0; round > 0; t++) {
        task_id(id, sizeof id, round - 1, t);
        rc = once_store_load(s, "anonymous", id, &r, NULL);
        if (rc == ONCE_ENOTFOUND)
            break;
        if (rc != ONCE_OK)
            _exit(3);
        if (!once_state_terminal(r.state)) {
            if (advance(s, &r, ONCE_STATE_CANCELED, 1, "recover") != ONCE_OK)
                _exit(4);
            send_ack(fd, round - 1, t, &r);
        }
        once_record_clear(&r);
    }
    for (t = 0;; t++) {
        task_id(id, sizeof id, round, t);
        if (st_rec(&r, "anonymous", id, ONCE_STATE_SUBMITTED, 1000 + t, "{\"kind\":\"task\"}"))
            _exit(5);
        r.generation = 1;
        {
            st_events e;
            st_mkev(&e, 1, 1, "submitted");
            if (once_store_create(s, &r, e.ev, 1, NULL, NULL) != ONCE_OK)
                _exit(6);
        }
        send_ack(fd, round, t, &r);
        if (advance(s, &r, ONCE_STATE_WORKING, 2, "working") != ONCE_OK)
            _exit(7);
        send_ack(fd, round, t, &r);
        if (advance(s, &r, ONCE_STATE_WORKING, 1, "artifact") != ONCE_OK)
            _exit(8);
        send_ack(fd, round, t, &r);
        if (advance(s, &r, ONCE_STATE_COMPLETED, 1, "completed") != ONCE_OK)
            _exit(9);
        send_ack(fd, round, t, &r);
        once_record_clear(&r);
    }
}

/* Read one ack from fd into *a, waiting at most timeout_ms (unscaled).
 * Returns 1 on an ack, 0 on timeout, -1 when the writer closed the pipe. */
static int read_first_ack(int fd, ack *a, int64_t timeout_ms)
{
    int64_t until = once_monotonic_ms() + timeout_ms;
    struct pollfd p = {.fd = fd, .events = POLLIN};

    for (;;) {
        int64_t left = until - once_monotonic_ms();
        int n;

        if (left <= 0)
            return 0;
        n = poll(&p, 1, (int)left);
        if (n < 0)
            continue;   /* EINTR */
        if (n == 0)
            return 0;
        return read(fd, a, sizeof *a) == (ssize_t)sizeof *a ? 1 : -1;
    }
}

static void kill9_keeps_registry_consistent(void **state)
{
    static ack acks[MAX_ACKS];
    size_t nacks = 0, i;
    char path[PATH_MAX], url[PATH_MAX + 8];
    const char *env = getenv("ONCE_KILL9_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    int round;

    (void)state;
    printf("# kill9 seed %u\n", seed);
    srand(seed);
    assert_int_equal(st_tmp_path(path, sizeof path, "kill9"), 0);
    snprintf(url, sizeof url, "sqlite:%s", path);

    for (round = 0; round < ROUNDS; round++) {
        int p[2], st, first;
        size_t before = nacks;
        pid_t pid;
        once_store *s;
        once_check_report rep;
        int ms = rand() % 39;
        ssize_t got;

        assert_int_equal(pipe(p), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            writer(round, url, p[1]);
        }
        close(p[1]);
        /* A positive signal first: the writer has written and been
         * acknowledged at least once; then the kill lands at a random
         * moment of the work that follows. */
        first = read_first_ack(p[0], &acks[nacks], tt_ms(FIRST_ACK_MS));
        if (first == 1) {
            nacks++;
            tt_nap_ms(ms);
        }
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (first == 0)
            fail_msg("round %d: the writer acknowledged nothing within %lld ms", round,
                     (long long)tt_ms(FIRST_ACK_MS));
        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
            fail_msg("round %d: writer ended on its own (status %d)", round, st);
        while (nacks < MAX_ACKS &&
               (got = read(p[0], &acks[nacks], sizeof acks[nacks])) == (ssize_t)sizeof acks[0])
            nacks++;
        close(p[0]);

        assert_int_equal(once_store_open(url, NULL, &s, NULL, 0), ONCE_OK);
        assert_int_equal(once_store_check(s, &rep), ONCE_OK);
        if (!st_clean(&rep))
            fail_msg("round %d (killed %d ms after its first write): %s", round, ms,
                     rep.first_problem);
        assert_int_equal(rep.bad_generation + rep.event_gaps + rep.orphan_events, 0);
        for (i = before; i < nacks; i++) {
            once_record r;
            char id[32];
            task_id(id, sizeof id, acks[i].round, acks[i].task);
            assert_int_equal(once_store_load(s, "anonymous", id, &r, NULL), ONCE_OK);
            if (r.version < acks[i].version || r.generation < acks[i].generation)
                fail_msg("%s: acknowledged v%lld g%lld, found v%lld g%lld", id,
                         (long long)acks[i].version, (long long)acks[i].generation,
                         (long long)r.version, (long long)r.generation);
            once_record_clear(&r);
        }
        once_store_close(s);
    }
    printf("# %d rounds, %zu acknowledged writes\n", round, nacks);
    st_remove_db(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kill9_keeps_registry_consistent),
    };
    return cmocka_run_group_tests_name("store_kill9", tests, NULL, NULL);
}
