/*
 * powerloss.c -- every acknowledged write of the sqlite store survives a
 * power cut, at every point a cut can fall, and the test can tell when one
 * does not.
 *
 * A test-only SQLite VFS ("once-powerloss", vfs_shim.c) wraps the default one and
 * plays the disk's volatile cache: a write reaches the file at once (so
 * SQLite reads it back as it would from the page cache), but until an
 * xSync of that file it is only remembered as an undo entry holding the
 * bytes it replaced; truncations likewise. xSync makes everything written
 * to the file so far durable and forgets its undo entries (no real fsync
 * is needed for that, so the sweep runs at memory speed). Power is cut
 * just before the k-th xWrite or xSync of the run: that call and every
 * later write, sync, truncate or delete fails as on a dead machine. The
 * "reboot" closes the store, rolls every file back to what its last xSync
 * made durable (undo entries newest first, then the size it had then), and
 * reopens it through the ordinary VFS.
 *
 * The workload is one thread creating and then twice updating a few tasks
 * through libonce (sqlite:PATH?vfs=once-powerloss&synchronous=...), the
 * creates and the updates in two sessions (a close checkpoints and removes
 * the WAL, the next open starts a new one), so run k cuts at the same
 * place every time. A write is acknowledged when its
 * call returned ONCE_OK; after the reboot the store must pass check() and
 * hold, for every task, at least the last acknowledged version, with the
 * text and events that version wrote (a write in flight at the cut may or
 * may not be there). k goes 1, 2, ... until a run ends before reaching k.
 *
 * At synchronous=full no cut point may lose anything. At
 * synchronous=normal commits are not synced, so some cut point must lose
 * an acknowledged write: that run shows the harness detects the breach it
 * exists for.
 *
 * Not modelled: torn writes inside one xWrite, and deletions that a cut
 * could undo (a delete is durable at once; it only happens to the WAL at
 * the last close, after the checkpoint was synced).
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "sqlite/vfs_shim.h"
#include "store/util.h"

#define T0 INT64_C(1700000000000)
#define NTASK 5
#define NVERSION 3           /* create, then two updates per task */

/* ------------------------------------------------------------------------
 * The workload and what it was told.
 */

typedef struct ack {
    int64_t version;   /* last version whose write returned ONCE_OK; 0 none */
    int64_t tried;     /* last version attempted (may have landed) */
} ack;

typedef struct run_result {
    long events;       /* events the run made (the cut is at most one more) */
    int reached_cut;
    long acked;        /* acknowledged writes */
    long lost;         /* acknowledged writes missing after the reboot */
    char first_loss[160];
} run_result;

static void task_text(char *buf, size_t n, int task, int64_t version)
{
    snprintf(buf, n, "{\"task\":%d,\"version\":%lld,\"pad\":\"%0200d\"}", task,
             (long long)version, task);
}

static void task_id(char *buf, size_t n, int task) { snprintf(buf, n, "t-%d", task); }

/* The record task holds at version v (generation v: one event per write). */
static void build(once_record *r, int task, int64_t v)
{
    char id[32], text[256];
    task_id(id, sizeof id, task);
    task_text(text, sizeof text, task, v);
    once_state st = v == NVERSION ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING;
    assert_int_equal(st_rec(r, "p", id, st, T0, text), 0);
    r->version = v;
    r->generation = v;
    r->updated_at = T0 + v;
}

/* One write: create for v == 1, else the CAS from v - 1. */
static int write_version(once_store *s, int task, int64_t v)
{
    once_record r;
    st_events ev;
    char tag[32];
    build(&r, task, v);
    snprintf(tag, sizeof tag, "t%d-v%lld", task, (long long)v);
    st_mkev(&ev, v, 1, tag);
    int rc = v == 1 ? once_store_create(s, &r, ev.ev, 1, NULL, NULL)
                    : once_store_update(s, &r, v - 1, ev.ev, 1);
    once_record_clear(&r);
    return rc;
}

/* After the reboot: a clean store holding every acknowledged version. */
static void verify(const char *path, const ack acks[NTASK], run_result *res)
{
    char url[4200], err[256] = "";
    /* The check itself needs no durability: no real fsync per run. */
    snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
    once_store *s = NULL;
    int rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("cut %ld: reopen after the reboot: %s (%s)", shim_cut_at(), once_errname(rc), err);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after the reboot: %s", rep.first_problem);
    for (int t = 0; t < NTASK; t++) {
        if (acks[t].version == 0)
            continue;
        char id[32], want[256], ev_want[64];
        task_id(id, sizeof id, t);
        once_record r;
        rc = once_store_load(s, "p", id, &r, NULL);
        int64_t have = rc == ONCE_OK ? r.version : 0;
        if (have < acks[t].version) {
            res->lost += acks[t].version - have;
            if (!res->first_loss[0])
                snprintf(res->first_loss, sizeof res->first_loss,
                         "%s: version %lld acknowledged, %lld after the reboot", id,
                         (long long)acks[t].version, (long long)have);
        } else {
            /* What is there is exactly what some attempted write wrote. */
            assert_true(have <= acks[t].tried);
            task_text(want, sizeof want, t, have);
            assert_string_equal(r.task_json, want);
            assert_int_equal(r.generation, have);
            once_event_list el;
            assert_int_equal(once_store_events(s, "p", id, 0, 0, &el), ONCE_OK);
            assert_int_equal(el.n, (size_t)have);
            snprintf(ev_want, sizeof ev_want, "{\"g\":%lld,\"tag\":\"t%d-v%lld\"}",
                     (long long)have, t, (long long)have);
            assert_string_equal(el.v[el.n - 1].payload, ev_want);
            once_event_list_clear(&el);
        }
        if (rc == ONCE_OK)
            once_record_clear(&r);
    }
    once_store_close(s);
}

/* One run: cut before event cut_at (0: never), reboot, verify. */
static void run_once(const char *path, const char *sync, long cut_at, run_result *res)
{
    char url[4300], err[256] = "";
    ack acks[NTASK];
    memset(acks, 0, sizeof acks);
    memset(res, 0, sizeof *res);
    st_remove_db(path);
    shim_arm(cut_at);

    snprintf(url, sizeof url, "sqlite:%s?vfs=" SHIM_VFS "&synchronous=%s", path, sync);
    /* Two sessions: the creates, then the updates, so that the sweep also
     * cuts through the checkpoint and WAL removal of a close and the WAL
     * being started again by the next open. Task by task, version by
     * version; everything stops at the first failure, since with the
     * power off nothing more can be acknowledged. */
    static const int64_t first_version[] = {1, 2, NVERSION + 1};
    int rc = ONCE_OK;
    for (int session = 0; session < 2 && rc == ONCE_OK; session++) {
        once_store *s = NULL;
        rc = once_store_open(url, NULL, &s, err, sizeof err);
        if (rc != ONCE_OK) {
            if (!shim_dead())
                fail_msg("open %s: %s (%s)", url, once_errname(rc), err);
            break;
        }
        for (int64_t v = first_version[session]; v < first_version[session + 1] && rc == ONCE_OK;
             v++) {
            for (int t = 0; t < NTASK && rc == ONCE_OK; t++) {
                acks[t].tried = v;
                rc = write_version(s, t, v);
                if (rc == ONCE_OK) {
                    acks[t].version = v;
                    res->acked++;
                } else if (!shim_dead()) {
                    fail_msg("write t-%d v%lld failed with the power on: %s (%s)", t,
                             (long long)v, once_errname(rc), once_store_errmsg(s));
                }
            }
        }
        once_store_close(s);
    }
    shim_counts(&res->events, &res->reached_cut);
    shim_power_cycle();
    verify(path, acks, res);
}

/* Every cut point k = 1, 2, ... until a run ends before reaching it. */
typedef struct sweep {
    long runs, acked, lossy_runs, lost;
    long first_lossy_cut;
    char first_loss[160];
} sweep;

static void sweep_all(const char *sync, sweep *sw)
{
    char path[4096];
    assert_int_equal(st_tmp_path(path, sizeof path, "powerloss"), 0);
    shim_register();
    memset(sw, 0, sizeof *sw);

    run_result res;
    run_once(path, sync, 0, &res);   /* no cut: how many events a run makes */
    assert_int_equal(res.lost, 0);
    assert_int_equal(res.acked, NTASK * NVERSION);
    long total = res.events;
    for (long k = 1;; k++) {
        run_once(path, sync, k, &res);
        if (!res.reached_cut) {
            assert_true(k > total);   /* the run without a cut saw as many */
            break;
        }
        sw->runs++;
        sw->acked += res.acked;
        if (res.lost) {
            sw->lossy_runs++;
            sw->lost += res.lost;
            if (!sw->first_lossy_cut) {
                sw->first_lossy_cut = k;
                snprintf(sw->first_loss, sizeof sw->first_loss, "%s", res.first_loss);
            }
        }
    }
    st_remove_db(path);
    printf("powerloss synchronous=%s: %ld cut points (k = 1..%ld of %ld writes+syncs per run), "
           "%ld acknowledged writes checked after the reboots, %ld lost in %ld runs",
           sync, sw->runs, sw->runs, total, sw->acked, sw->lost, sw->lossy_runs);
    if (sw->first_lossy_cut)
        printf(" (first at k = %ld: %s)", sw->first_lossy_cut, sw->first_loss);
    printf("\n");
    fflush(stdout);
}

static void full_loses_nothing(void **state)
{
    (void)state;
    sweep sw;
    sweep_all("full", &sw);
    assert_true(sw.runs > NTASK * NVERSION);   /* at least a sync per commit */
    if (sw.lost)
        fail_msg("synchronous=full lost %ld acknowledged writes; first at cut %ld: %s", sw.lost,
                 sw.first_lossy_cut, sw.first_loss);
}

/* The same sweep must catch NORMAL losing acknowledged commits, or it
 * proves nothing about FULL. */
static void normal_is_caught(void **state)
{
    (void)state;
    sweep sw;
    sweep_all("normal", &sw);
    if (sw.lost == 0)
        fail_msg("synchronous=normal lost nothing over %ld cut points: the shim does not model "
                 "a power cut",
                 sw.runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_loses_nothing),
        cmocka_unit_test(normal_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
