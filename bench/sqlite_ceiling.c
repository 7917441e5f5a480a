/*
 * sqlite_ceiling.c -- the durability ceiling for bench/run.sh: how many rows
 * per second one SQLite connection can commit on this disk with onced's
 * settings (journal_mode=WAL, synchronous=FULL), ROWS rows per transaction.
 *
 *   sqlite_ceiling DBPATH SECONDS ROWS
 *
 * ROWS = 1 is the cost of a naive one-commit-per-request server (one fsync
 * each); larger ROWS shows what batching (onced's group commit) can reach.
 * Each row is a ~400-byte record under a fresh text key, about the size of
 * a small task. The database file is created fresh (an existing one is an
 * error: the caller gives a new path). Prints one line:
 *   rows=N txns=N seconds=S rows_per_s=R txns_per_s=T
 * A bench tool built by run.sh with gcc alone (not part of libonce).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long parse_num(const char *s, long lo, long hi, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "sqlite_ceiling: %s must be %ld..%ld, got %s\n", what, lo, hi, s);
        exit(2);
    }
    return v;
}

static int exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sqlite_ceiling: %s: %s\n", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: sqlite_ceiling DBPATH SECONDS ROWS_PER_TXN\n");
        return 2;
    }
    const char *path = argv[1];
    long seconds = parse_num(argv[2], 1, 3600, "SECONDS");
    long per_txn = parse_num(argv[3], 1, 100000, "ROWS_PER_TXN");
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "sqlite_ceiling: %s exists; give a fresh path\n", path);
        return 2;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        fprintf(stderr, "sqlite_ceiling: open %s: %s\n", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return 1;
    }
    sqlite3_stmt *ins = NULL;
    if (exec(db, "PRAGMA journal_mode=WAL") != 0 || exec(db, "PRAGMA synchronous=FULL") != 0 ||
        exec(db, "CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB NOT NULL)") != 0 ||
        sqlite3_prepare_v2(db, "INSERT INTO t(k, v) VALUES (?1, ?2)", -1, &ins, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "sqlite_ceiling: setup: %s\n", sqlite3_errmsg(db));
        sqlite3_close(db);
        return 1;
    }
    char value[400];
    memset(value, 'x', sizeof value);
    long rows = 0, txns = 0;
    double start = now_s(), end = start + (double)seconds, t = start;
    while (t < end) {
        if (exec(db, "BEGIN IMMEDIATE") != 0)
            return 1;
        for (long i = 0; i < per_txn; i++) {
            char key[64];
            int n = snprintf(key, sizeof key, "k-%ld", rows + i);
            sqlite3_bind_text(ins, 1, key, n, SQLITE_TRANSIENT);
            sqlite3_bind_blob(ins, 2, value, (int)sizeof value, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                fprintf(stderr, "sqlite_ceiling: insert: %s\n", sqlite3_errmsg(db));
                return 1;
            }
            sqlite3_reset(ins);
        }
        if (exec(db, "COMMIT") != 0)
            return 1;
        rows += per_txn;
        txns++;
        t = now_s();
    }
    double el = t - start;
    printf("rows=%ld txns=%ld seconds=%.3f rows_per_s=%.0f txns_per_s=%.0f\n", rows, txns, el,
           (double)rows / el, (double)txns / el);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    return 0;
}
