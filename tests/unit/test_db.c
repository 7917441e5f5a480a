/*
 * test_db.c -- the SQLite helper under the store and the client
 * (src/db/db.c): arguments bound from a type string land in the right
 * parameters (a skipped one stays NULL, a counted string keeps its
 * embedded bytes), a statement runs once and is gone, a transaction
 * commits or rolls back, and a lock held by another connection reads as
 * busy and ONCE_EBUSY until it is released.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/db.h"
#include "once/once.h"

static void test_bind_types(void **state)
{
    (void)state;
    sqlite3 *db;
    assert_int_equal(once__db_open(":memory:", 0, &db), SQLITE_OK);
    assert_int_equal(once__db_run(db, "CREATE TABLE t(a, b, c, d, e, f)", ""), SQLITE_OK);
    const char body[] = "x\0y";
    assert_int_equal(once__db_run(db, "INSERT INTO t VALUES(?1, ?2, ?3, ?4, ?5, ?6)", "s-tids",
                                  "text", body, sizeof body - 1, (int64_t)INT64_MAX, 0.5,
                                  (const char *)NULL),
                     SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(once__db_prepare(db, &st,
                                      "SELECT a, typeof(b), length(CAST(c AS BLOB)), d, e, "
                                      "typeof(f) FROM t WHERE a=?1",
                                      "s", "text"),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "text");
    assert_string_equal((const char *)sqlite3_column_text(st, 1), "null");
    assert_int_equal(sqlite3_column_int(st, 2), 3);
    assert_true(sqlite3_column_int64(st, 3) == INT64_MAX);
    assert_true(sqlite3_column_double(st, 4) == 0.5);
    assert_string_equal((const char *)sqlite3_column_text(st, 5), "null");
    sqlite3_finalize(st);
    /* An unknown type letter is a misuse, and nothing is left prepared. */
    st = (sqlite3_stmt *)&st;
    assert_int_equal(once__db_prepare(db, &st, "SELECT ?1", "x", 1), SQLITE_MISUSE);
    assert_null(st);
    assert_int_not_equal(once__db_run(db, "SELECT * FROM missing", ""), SQLITE_OK);
    sqlite3_close_v2(db);
}

static int count(sqlite3 *db)
{
    sqlite3_stmt *st;
    assert_int_equal(once__db_prepare(db, &st, "SELECT count(*) FROM t", ""), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int begin_attempt(void *db)
{
    return once__db_begin(db);
}

static void test_transactions_and_busy(void **state)
{
    (void)state;
    char path[] = "/tmp/once-test-db-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *a, *b;
    assert_int_equal(once__db_open(path, 0, &a), SQLITE_OK);
    assert_int_equal(once__db_open(path, 0, &b), SQLITE_OK);
    assert_int_equal(once__db_run(a, "CREATE TABLE t(x)", ""), SQLITE_OK);

    assert_int_equal(once__db_begin(a), SQLITE_OK);
    assert_int_equal(once__db_run(a, "INSERT INTO t VALUES(1)", ""), SQLITE_OK);
    assert_int_equal(once__db_end(a, SQLITE_ABORT), SQLITE_ABORT);   /* rolled back */
    assert_int_equal(count(a), 0);

    assert_int_equal(once__db_begin(a), SQLITE_OK);
    assert_int_equal(once__db_run(a, "INSERT INTO t VALUES(1)", ""), SQLITE_OK);
    /* a holds the write lock: b is refused at once, and says busy. */
    int rc = once__db_while_busy(begin_attempt, b, 0);
    assert_true(once__db_is_busy(rc));
    assert_int_equal(once__db_err(rc), ONCE_EBUSY);
    assert_int_equal(once__db_end(a, SQLITE_OK), SQLITE_OK);   /* committed */
    assert_int_equal(once__db_while_busy(begin_attempt, b, 0), SQLITE_OK);
    assert_int_equal(once__db_end(b, SQLITE_OK), SQLITE_OK);
    assert_int_equal(count(b), 1);

    assert_int_equal(once__db_err(SQLITE_LOCKED_SHAREDCACHE), ONCE_EBUSY);
    assert_int_equal(once__db_err(SQLITE_NOMEM), ONCE_ENOMEM);
    assert_int_equal(once__db_err(SQLITE_IOERR_FSYNC), ONCE_ESTORE);
    sqlite3_close_v2(a);
    sqlite3_close_v2(b);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind_types),
        cmocka_unit_test(test_transactions_and_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
