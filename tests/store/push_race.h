/*
 * push_race.h -- one store case shared by the networked backends' own test
 * programs (tests/storepg/backend.c, tests/storedynamo/backend.c): record
 * updates of a task with a push config racing two deliverers' claims and
 * acks on its row. Backends reshape the rows from a read (PostgreSQL under
 * row locks, Redis by retrying when the rows moved, DynamoDB by a write
 * conditional on the rows' version), so this is where a lost or refused
 * ack would show: none may be, delivered ends at the generation, and
 * check() stays clean. The includer provides cmocka, store/util.h,
 * timeout.h and T0.
 */
#ifndef ONCE_TESTS_STORE_PUSH_RACE_H
#define ONCE_TESTS_STORE_PUSH_RACE_H

#include <pthread.h>
#include <unistd.h>

#define RACE_UPDATES 150

typedef struct push_race {
    once_store *s;
    const char *owner;
    int *updates_done; /* set by the updater when it is finished */
    int64_t acked;     /* DELIVERED acks that succeeded */
    int rc;            /* first unexpected result */
} push_race;

static void *race_updater(void *p)
{
    push_race *a = p;
    int i;

    for (i = 0; i < RACE_UPDATES && a->rc == ONCE_OK;) {
        once_record r;
        st_events e;
        int rc = once_store_load(a->s, "p", "t", &r, NULL);
        if (rc == ONCE_OK) {
            int64_t v = r.version;
            st_mkev(&e, r.generation + 1, 1, "race");
            r.version = v + 1;
            r.generation++;
            rc = once_store_update(a->s, &r, v, e.ev, 1);
            once_record_clear(&r);
        }
        if (rc == ONCE_OK)
            i++;
        else if (rc != ONCE_ECONFLICT)
            a->rc = rc;
    }
    __atomic_store_n(a->updates_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* 1 once the updater is done and the row is delivered to its target. */
static int race_caught_up(push_race *a)
{
    once_push_row_list rows;
    int up;

    if (!__atomic_load_n(a->updates_done, __ATOMIC_SEQ_CST) ||
        once_store_push_rows(a->s, "p", "t", &rows) != ONCE_OK)
        return 0;
    up = rows.n == 1 && rows.v[0].delivered >= rows.v[0].target &&
         rows.v[0].target == 1 + RACE_UPDATES;
    once_push_row_list_clear(&rows);
    return up;
}

static void *race_deliverer(void *p)
{
    push_race *a = p;
    int64_t until = 0;

    while (a->rc == ONCE_OK) {
        once_push_claim_list l;
        int rc = once_store_push_claim(a->s, a->owner, T0, 60000, 1, &l);
        if (rc != ONCE_OK) {
            a->rc = rc;
            break;
        }
        if (l.n == 0) {
            /* Nothing to claim (or the other deliverer has it): stop once
             * the updater is done and the row is delivered to its end, or
             * at the bound (then the checks below tell what is missing). */
            if (race_caught_up(a))
                break;
            if (until == 0 && __atomic_load_n(a->updates_done, __ATOMIC_SEQ_CST))
                until = once_monotonic_ms() + tt_ms(10000);
            if (until != 0 && once_monotonic_ms() > until)
                break;
            usleep(1000);
            continue;
        }
        {
            once_push_ack k = {.principal = "p",
                               .task_id = "t",
                               .config_id = "c",
                               .owner = a->owner,
                               .generation = l.v[0].generation,
                               .outcome = ONCE_PUSH_DELIVERED,
                               .now = T0,
                               .lease_ms = 0};
            rc = once_store_push_ack(a->s, &k);
        }
        once_push_claim_list_clear(&l);
        if (rc == ONCE_OK)
            a->acked++;
        else
            a->rc = rc; /* the lease holder's ack must never be refused */
    }
    return NULL;
}

ST_UNUSED static void st_push_race(once_store *s)
{
    once_push_row_list rows;
    once_check_report rep;
    once_record r;
    st_events e;
    pthread_t th[3];
    push_race arg[3];
    int done = 0, i;

    assert_int_equal(st_rec(&r, "p", "t", ONCE_STATE_WORKING, T0, "{\"k\":1}"), 0);
    r.generation = 1;
    assert_non_null(r.push_json = once_strdup("[{\"id\":\"c\",\"since\":0}]"));
    st_mkev(&e, 1, 1, "t");
    assert_int_equal(once_store_create(s, &r, e.ev, 1, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
    for (i = 0; i < 3; i++) {
        memset(&arg[i], 0, sizeof arg[i]);
        arg[i].s = s;
        arg[i].updates_done = &done;
        arg[i].owner = i == 1 ? "r1" : "r2";
        assert_int_equal(pthread_create(&th[i], NULL, i == 0 ? race_updater : race_deliverer,
                                        &arg[i]),
                         0);
    }
    for (i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < 3; i++)
        if (arg[i].rc != ONCE_OK)
            fail_msg("thread %d: %s: %s", i, once_errname(arg[i].rc), once_store_errmsg(s));
    assert_int_equal(once_store_load(s, "p", "t", &r, NULL), ONCE_OK);
    assert_int_equal(r.generation, 1 + RACE_UPDATES);
    assert_int_equal(once_store_push_rows(s, "p", "t", &rows), ONCE_OK);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.v[0].target, r.generation);
    assert_int_equal(rows.v[0].delivered, r.generation);
    assert_int_equal(rows.v[0].deliveries, arg[1].acked + arg[2].acked);
    assert_int_equal(arg[1].acked + arg[2].acked, r.generation);
    once_push_row_list_clear(&rows);
    once_record_clear(&r);
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after the race: %s", rep.first_problem);
}

#endif
