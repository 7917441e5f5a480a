/*
 * test_store_methods.c -- the store contract's guards (src/store/store.c):
 * a methods table built against another store.h (another version) or
 * missing a slot it must fill (or one its capability bits call for) is
 * refused before its open slot runs, a handle's caps_off hides a bit, close
 * reports the backend's failure instead of swallowing it, and an empty
 * meta name is refused before any backend's slot sees it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/store_int.h"

static int opens, closes, metas;
static int close_rc;

static int counting_open(const char *url, const once_store_options *opt, once_store **out,
                         char *errbuf, size_t errlen)
{
    opens++;
    (void)url;
    return once__store_memory.open("memory:", opt, out, errbuf, errlen);
}

static int failing_close(once_store *s)
{
    closes++;
    int rc = once__store_memory.close(s);
    return rc != ONCE_OK ? rc : close_rc;
}

static int counting_meta(once_store *s, const char *name, const char *init_value, char **out)
{
    metas++;
    return once__store_memory.meta(s, name, init_value, out);
}

/* The memory backend's table under another name: what a backend built
 * outside libonce would hand in. */
static once_store_methods outside(void)
{
    once_store_methods m = once__store_memory;
    m.scheme = "outside";
    m.open = counting_open;
    m.close = failing_close;
    return m;
}

static void expect_refused(const once_store_methods *m, int want, const char *says)
{
    once_store *s = (once_store *)&opens;   /* must come back NULL */
    char err[256] = "";
    int before = opens;
    int rc = once_store_open_methods(m, "outside:", NULL, &s, err, sizeof err);
    if (rc != want || strstr(err, says) == NULL)
        fail_msg("%s \"%s\", want %s saying \"%s\"", once_errname(rc), err, once_errname(want),
                 says);
    assert_null(s);
    assert_int_equal(opens, before);   /* the open slot never ran */
}

static void test_version_guards_the_table(void **state)
{
    (void)state;
    once_store_methods m = outside();
    m.version = ONCE_STORE_METHODS_VERSION + 1;
    expect_refused(&m, ONCE_EUNSUPPORTED, "vtable version 5, want 4");
    m.version = 0;
    expect_refused(&m, ONCE_EUNSUPPORTED, "vtable version 0");

    m = outside();
    once_store *s = NULL;
    assert_int_equal(once_store_open_methods(&m, "outside:", NULL, &s, NULL, 0), ONCE_OK);
    assert_int_equal(opens, 1);
    assert_ptr_equal(s->m, &m);
    close_rc = ONCE_OK;
    assert_int_equal(once_store_close(s), ONCE_OK);
    assert_int_equal(closes, 1);
}

static void test_missing_slots_refused(void **state)
{
    (void)state;
    once_store_methods m = outside();
    m.renew = NULL;
    expect_refused(&m, ONCE_EINVAL, "lacks a required slot");
    m = outside();
    m.caps |= ONCE_STORE_PUSH;
    m.push_ack = NULL;
    expect_refused(&m, ONCE_EINVAL, "lacks a push slot");
    m = outside();
    m.caps |= ONCE_STORE_FEED;   /* a feed needs all three of its slots */
    expect_refused(&m, ONCE_EINVAL, "lacks a feed slot");
    m = outside();
    m.caps &= ~ONCE_STORE_PUSH;   /* without the capability the slot may stay NULL */
    m.push_claim = NULL;
    m.push_ack = NULL;
    m.push_rows = NULL;
    once_store *s = NULL;
    assert_int_equal(once_store_open_methods(&m, "outside:", NULL, &s, NULL, 0), ONCE_OK);
    once_store_feed *f = (once_store_feed *)&m;
    assert_int_equal(once_store_feed_open(s, &f), ONCE_EUNSUPPORTED);   /* no feed: followers poll */
    assert_null(f);
    close_rc = ONCE_OK;
    assert_int_equal(once_store_close(s), ONCE_OK);
}

/* The optional slots outside push and feed are selected by their bits too:
 * a bit without its slot is refused, START_PUSH needs CREATE_START, and a
 * handle whose open turned a bit off (caps_off) answers as a backend
 * without it. */
static int starts;
static int counting_start(once_store *s, const once_record *rec, const once_event *ev,
                          size_t nev, void (*done)(void *arg, int rc), void *arg)
{
    (void)s, (void)rec, (void)ev, (void)nev, (void)done, (void)arg;
    starts++;
    return ONCE_ENOMEM;   /* not queued: done is never called */
}

static void never_done(void *arg, int rc)
{
    (void)arg, (void)rc;
    fail_msg("done called for a create that was not queued");
}

static void test_optional_slots_by_bit(void **state)
{
    (void)state;
    once_store_methods m = outside();
    m.caps |= ONCE_STORE_CREATE_START;
    expect_refused(&m, ONCE_EINVAL, "lacks the create_start slot");
    m = outside();
    m.caps |= ONCE_STORE_START_PUSH;
    expect_refused(&m, ONCE_EINVAL, "CREATE_START (caps has ONCE_STORE_START_PUSH)");
    m = outside();
    m.caps |= ONCE_STORE_SYNCHRONOUS;
    expect_refused(&m, ONCE_EINVAL, "lacks the synchronous slot");
    m = outside();
    m.budget = NULL;   /* memory's table has the bit */
    expect_refused(&m, ONCE_EINVAL, "lacks the budget slot");

    m = outside();
    m.caps |= ONCE_STORE_CREATE_START;
    m.create_start = counting_start;
    once_store *s = NULL;
    assert_int_equal(once_store_open_methods(&m, "outside:", NULL, &s, NULL, 0), ONCE_OK);
    once_record r = {.principal = "p", .task_id = "t", .version = 1, .state = ONCE_STATE_WORKING,
                     .digests = "", .task_json = "{}"};
    assert_true(once_store_can_start(s, &r));
    r.push_json = "[]";
    assert_false(once_store_can_start(s, &r));   /* no START_PUSH */
    assert_int_equal(once_store_create_start(s, &r, NULL, 0, NULL, NULL), ONCE_EINVAL);
    r.push_json = NULL;
    assert_int_equal(once_store_create_start(s, &r, NULL, 0, NULL, NULL), ONCE_EINVAL);
    assert_int_equal(starts, 0);
    assert_int_equal(once_store_create_start(s, &r, NULL, 0, never_done, NULL), ONCE_ENOMEM);
    assert_int_equal(starts, 1);   /* through the slot, its answer passed on */
    s->caps_off = ONCE_STORE_CREATE_START | ONCE_STORE_BUDGET;
    assert_int_equal(once_store_caps(s) & (ONCE_STORE_CREATE_START | ONCE_STORE_BUDGET), 0u);
    assert_false(once_store_can_start(s, NULL));
    once_budget b;
    assert_int_equal(once_store_budget(s, &b, 0), ONCE_EUNSUPPORTED);
    s->caps_off = 0;
    assert_int_equal(once_store_budget(s, &b, 0), ONCE_OK);
    close_rc = ONCE_OK;
    assert_int_equal(once_store_close(s), ONCE_OK);
}

/* A backend whose close fails says so through once_store_close. */
static void test_close_reports_failure(void **state)
{
    (void)state;
    once_store_methods m = outside();
    once_store *s = NULL;
    assert_int_equal(once_store_open_methods(&m, "outside:", NULL, &s, NULL, 0), ONCE_OK);
    close_rc = ONCE_ESTORE;
    int before = closes;
    assert_int_equal(once_store_close(s), ONCE_ESTORE);
    assert_int_equal(closes, before + 1);
    assert_int_equal(once_store_close(NULL), ONCE_OK);
}

/* once_store_meta refuses an empty name itself: the slot never runs. */
static void test_meta_empty_name_refused(void **state)
{
    (void)state;
    once_store_methods m = outside();
    m.meta = counting_meta;
    once_store *s = NULL;
    char *v = NULL;
    assert_int_equal(once_store_open_methods(&m, "outside:", NULL, &s, NULL, 0), ONCE_OK);
    assert_int_equal(once_store_meta(s, "", "x", &v), ONCE_EINVAL);
    assert_null(v);
    assert_non_null(strstr(once_store_errmsg(s), "empty name"));
    /* A name that is not empty reaches the slot: the count moves. */
    assert_int_equal(once_store_meta(s, "secret", "x", &v), ONCE_OK);
    assert_string_equal(v, "x");
    once_free(v);
    assert_int_equal(metas, 1);
    close_rc = ONCE_OK;
    assert_int_equal(once_store_close(s), ONCE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_guards_the_table),
        cmocka_unit_test(test_missing_slots_refused),
        cmocka_unit_test(test_optional_slots_by_bit),
        cmocka_unit_test(test_close_reports_failure),
        cmocka_unit_test(test_meta_empty_name_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
