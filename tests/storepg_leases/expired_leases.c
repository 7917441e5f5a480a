/*
 * expired_leases.c -- the PostgreSQL backend's expired-lease scan
 * (src/store/pg/pg_read.c) against a real server. argv[1] is the server's
 * URL without parameters; the cases work in the schema "leases".
 *
 * The store contract (include/once/store.h, expired_leases): the keys of
 * live records whose lease ran out, oldest first; "claiming is the caller's
 * CAS". So the scan is a plain read:
 *   locked_rows_are_listed   a row another transaction holds locked (a
 *                            write in flight) is listed like any other: a
 *                            scan that skipped locked rows would hide an
 *                            expired lease from takeover for a whole pass,
 *                            for nothing, since the lock it could take would
 *                            end with its own statement anyway
 *   scan_writes_nothing      reading leases leaves the rows as they were
 *                            (a row lock is a write to the row: a new xmax,
 *                            a dirty page, WAL, on every sweep of every
 *                            replica)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "store/util.h"

#define T0 INT64_C(1700000000000)
#define SCHEMA "leases"

static const char *g_base;

static PGconn *admin(void)
{
    PGconn *c = PQconnectdb(g_base);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connect %s: %s", g_base, PQerrorMessage(c));
    PGresult *r = PQexec(c, "SET search_path TO " SCHEMA);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    return c;
}

/* One statement; its first value (or "" when it returns no row). */
static void sql(PGconn *c, const char *q, char *out, size_t n)
{
    PGresult *r = PQexec(c, q);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", q, PQresultErrorMessage(r));
    if (out != NULL)
        snprintf(out, n, "%s",
                 st == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
}

static once_store *open_fresh(void)
{
    char url[512], err[256];
    once_store *s = NULL;
    snprintf(url, sizeof url, "%s?schema=" SCHEMA "&reset=1", g_base);
    int rc = once_store_open(url, NULL, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("open %s: %s: %s", url, once_errname(rc), err);
    return s;
}

/* A WORKING record whose lease, held by "r1", ran out at lease_until. */
static void put_expired(once_store *s, const char *id, int64_t lease_until)
{
    once_record r;
    assert_int_equal(st_rec(&r, "p", id, ONCE_STATE_WORKING, T0 - 60000, NULL), 0);
    snprintf(r.lease_owner, sizeof r.lease_owner, "r1");
    r.lease_until = lease_until;
    int rc = once_store_create(s, &r, NULL, 0, NULL, NULL);
    if (rc != ONCE_OK)
        fail_msg("create %s: %s (%s)", id, once_errname(rc), once_store_errmsg(s));
    once_record_clear(&r);
}

static void locked_rows_are_listed(void **state)
{
    (void)state;
    once_store *s = open_fresh();
    put_expired(s, "t-locked", T0 - 5000);
    put_expired(s, "t-free", T0 - 1000);

    /* Another session holds t-locked's row, as a write in flight does. */
    PGconn *holder = admin();
    char got[64];
    sql(holder, "BEGIN", NULL, 0);
    sql(holder, "SELECT 1 FROM once_tasks WHERE task_id = 't-locked'::bytea FOR UPDATE", got,
        sizeof got);
    assert_string_equal(got, "1");

    once_key_list k;
    int rc = once_store_expired_leases(s, T0, 10, &k);
    /* Let go of the row before asserting: a failure must not leave a lock
     * that the next case's schema reset would wait on. */
    sql(holder, "ROLLBACK", NULL, 0);
    PQfinish(holder);
    if (rc != ONCE_OK)
        fail_msg("expired_leases: %s (%s)", once_errname(rc), once_store_errmsg(s));
    if (k.n != 2)
        fail_msg("%zu expired lease(s) listed, want 2: a row locked by another transaction "
                 "was skipped (the scan must read, not lock: claiming is the caller's CAS)",
                 k.n);
    assert_string_equal(k.v[0].task_id, "t-locked"); /* the oldest lease first */
    assert_string_equal(k.v[1].task_id, "t-free");
    once_key_list_clear(&k);
    once_store_close(s);
}

static void scan_writes_nothing(void **state)
{
    (void)state;
    once_store *s = open_fresh();
    put_expired(s, "t-a", T0 - 2000);
    PGconn *c = admin();
    char before[64], after[64];
    sql(c, "SELECT xmax::text FROM once_tasks WHERE task_id = 't-a'::bytea", before, sizeof before);

    once_key_list k;
    assert_int_equal(once_store_expired_leases(s, T0, 10, &k), ONCE_OK);
    assert_int_equal(k.n, 1);
    once_key_list_clear(&k);

    sql(c, "SELECT xmax::text FROM once_tasks WHERE task_id = 't-a'::bytea", after, sizeof after);
    if (strcmp(before, after) != 0)
        fail_msg("the scan wrote to the row it read (xmax %s -> %s): it locked it", before, after);
    PQfinish(c);
    once_store_close(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s postgres://user@host:port/db\n", argv[0]);
        return 2;
    }
    g_base = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(locked_rows_are_listed),
        cmocka_unit_test(scan_writes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
