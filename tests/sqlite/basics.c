/*
 * basics.c -- what the sqlite backend promises beyond the conformance
 * suite: its URL forms, a 0600 file whatever the umask, the synchronous
 * setting (URL or options, FULL by default) reaching the writer connection,
 * every bad URL setting refused before a file is created, the on-disk schema (WAL, STRICT
 * tables, user_version), refusal of a newer schema, two handles sharing one
 * file, several processes creating the schema of one new file at once, and
 * several processes migrating a version-1 file (before push delivery) at
 * once without losing what it held, and a version-2 file gaining the journal
 * (refused unmigrated under ONCE_STORE_OPEN_NO_MIGRATE, untouched by a dry
 * run of once__store_migrate), a version-4 file gaining the list indexes,
 * and the query plan of every list statement: a seek on its filter's index
 * in page order, never a scan of the tasks nor a sort.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/sqlite_fault.h"
#include "store/sqlite_int.h"
#include "store/store_info.h"
#include "store/util.h"

#define T0 INT64_C(1700000000000)

/* A path in the temp dir that does not exist yet. */
static void fresh_path(char *path, size_t n, const char *tag)
{
    assert_int_equal(st_tmp_path(path, n, tag), 0);
    st_remove_db(path);
}

static once_store *open_ok(const char *url, const once_store_options *opt)
{
    once_store *s = NULL;
    char err[256];
    int rc = once_store_open(url, opt, &s, err, sizeof err);
    if (rc != ONCE_OK)
        fail_msg("open %s: %s (%s)", url, once_errname(rc), err);
    return s;
}

static void put(once_store *s, const char *id)
{
    once_record r;
    assert_int_equal(st_rec(&r, "p", id, ONCE_STATE_WORKING, T0, "{}"), 0);
    assert_int_equal(once_store_create(s, &r, NULL, 0, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

static void url_forms_and_sharing(void **state)
{
    (void)state;
    char path[4096], url1[4200], url2[4200];
    fresh_path(path, sizeof path, "url");
    assert_true(path[0] == '/');
    snprintf(url1, sizeof url1, "sqlite:%s", path);
    snprintf(url2, sizeof url2, "sqlite://%s", path);   /* sqlite:///tmp/... */
    once_store *a = open_ok(url1, NULL), *b = open_ok(url2, NULL);
    assert_int_equal(once_store_caps(a),
                     ONCE_STORE_SHARED | ONCE_STORE_DURABLE | ONCE_STORE_PUSH |
                         ONCE_STORE_GENERATIONS | ONCE_STORE_REPLICAS | ONCE_STORE_CREATE_START |
                         ONCE_STORE_START_PUSH | ONCE_STORE_LOCAL | ONCE_STORE_SYNCHRONOUS |
                         ONCE_STORE_LIST_SEEK);

    put(a, "t-a");   /* written through one handle, visible through the other */
    once_record r;
    assert_int_equal(once_store_load(b, "p", "t-a", &r, NULL), ONCE_OK);
    once_record_clear(&r);
    once_record w;
    assert_int_equal(st_rec(&r, "p", "t-a", ONCE_STATE_WORKING, T0, "{\"b\":1}"), 0);
    assert_int_equal(once_store_create(b, &r, NULL, 0, &w, NULL), ONCE_EEXISTS);
    assert_string_equal(w.task_json, "{}");
    once_record_clear(&w);
    once_record_clear(&r);
    once_store_close(a);
    once_store_close(b);

    b = open_ok(url1, NULL);   /* and it survives a reopen */
    assert_int_equal(once_store_load(b, "p", "t-a", &r, NULL), ONCE_OK);
    once_record_clear(&r);
    once_store_close(b);
    st_remove_db(path);

    static const char *const bad[] = {"sqlite:", "sqlite://", "sqlite::memory:"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        once_store *s = (once_store *)1;
        assert_int_equal(once_store_open(bad[i], NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_null(s);
        assert_true(err[0] != '\0');
    }
    char err[256] = "";
    once_store *s = NULL;
    assert_int_equal(once_store_open("sqlite:/nonexistent-dir-once/x.db", NULL, &s, err,
                                     sizeof err),
                     ONCE_ESTORE);
    assert_null(s);
    assert_non_null(strstr(err, "nonexistent-dir-once"));
}

static void file_mode_0600(void **state)
{
    (void)state;
    char path[4096], url[4200], wal[4200];
    struct stat sb;
    fresh_path(path, sizeof path, "mode");
    snprintf(url, sizeof url, "sqlite:%s", path);
    mode_t old = umask(0);   /* even a permissive umask must not widen it */
    once_store *s = open_ok(url, NULL);
    put(s, "t-1");
    umask(old);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    snprintf(wal, sizeof wal, "%s-wal", path);
    assert_int_equal(stat(wal, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    once_store_close(s);
    st_remove_db(path);
}

/* The level the writer connection reports, both raw (PRAGMA synchronous:
 * 0 off, 1 normal, 2 full) and through the public read-back. */
static void expect_sync(const char *url, const once_store_options *opt, int pragma, int level)
{
    once_store *s = open_ok(url, opt);
    int v = -1;
    assert_int_equal(once__sqlite_synchronous(s, &v), ONCE_OK);
    if (v != pragma)
        fail_msg("%s: PRAGMA synchronous %d, want %d", url, v, pragma);
    assert_int_equal(once_store_synchronous(s, &v), ONCE_OK);
    assert_int_equal(v, level);
    once_store_close(s);
}

static void synchronous_honoured(void **state)
{
    (void)state;
    char path[4096], url[4200], u[4300];
    fresh_path(path, sizeof path, "sync");
    snprintf(url, sizeof url, "sqlite:%s", path);

    expect_sync(url, NULL, 2, ONCE_SYNC_FULL);   /* nothing said: FULL */
    static const struct {
        const char *param;
        int pragma, level;
    } by_url[] = {
        {"synchronous=full", 2, ONCE_SYNC_FULL},
        {"synchronous=FULL", 2, ONCE_SYNC_FULL},
        {"synchronous=normal", 1, ONCE_SYNC_NORMAL},
        {"synchronous=off", 0, ONCE_SYNC_OFF},
        {"busy_timeout=0&synchronous=normal", 1, ONCE_SYNC_NORMAL},
        {"busy_timeout=250", 2, ONCE_SYNC_FULL},
    };
    for (size_t i = 0; i < sizeof by_url / sizeof by_url[0]; i++) {
        snprintf(u, sizeof u, "%s?%s", url, by_url[i].param);
        expect_sync(u, NULL, by_url[i].pragma, by_url[i].level);
    }
    /* Options (a clock) say nothing about durability: the URL's holds. */
    once_store_options bare = {.clock = NULL};
    snprintf(u, sizeof u, "%s?synchronous=off", url);
    expect_sync(u, &bare, 0, ONCE_SYNC_OFF);

    assert_string_equal(once_sync_name(ONCE_SYNC_FULL), "full");
    assert_string_equal(once_sync_name(ONCE_SYNC_NORMAL), "normal");
    assert_string_equal(once_sync_name(ONCE_SYNC_OFF), "off");
    assert_null(once_sync_name(ONCE_SYNC_DEFAULT));
    once_store *m = open_ok("memory:", NULL);
    int v;
    assert_int_equal(once_store_synchronous(m, &v), ONCE_EUNSUPPORTED);
    once_store_close(m);
    st_remove_db(path);
}

/* Every bad setting is refused at open with a message that names it, and
 * nothing is created. */
static void url_settings_refused(void **state)
{
    (void)state;
    char path[4096], u[4300];
    fresh_path(path, sizeof path, "badurl");
    static const struct {
        const char *tail;      /* appended to sqlite:PATH */
        const char *says;      /* in the error message */
    } bad[] = {
        {"?synchronous=extra", "synchronous=extra"},
        {"?synchronous=2", "full, normal or off"},
        {"?synchronous=", "synchronous="},
        {"?synchronous", "synchronous"},
        {"?synchronous=full&synchronous=normal", "twice"},
        {"?busy_timeout=-1", "busy_timeout"},
        {"?busy_timeout=+5", "busy_timeout"},
        {"?busy_timeout=5s", "busy_timeout"},
        {"?busy_timeout=3600001", "busy_timeout"},
        {"?vfs=no-such-vfs", "not a registered SQLite VFS"},
        {"?vfs=", "vfs"},
        {"?sync=full", "unknown parameter 'sync'"},
        {"?synchronous=normal&pool=3", "unknown parameter 'pool'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(u, sizeof u, "sqlite:%s%s", path, bad[i].tail);
        char err[256] = "";
        once_store *s = (once_store *)1;
        int rc = once_store_open(u, NULL, &s, err, sizeof err);
        if (rc != ONCE_EINVAL || !strstr(err, bad[i].says))
            fail_msg("%s: %s \"%s\", want EINVAL saying \"%s\"", u, once_errname(rc), err,
                     bad[i].says);
        assert_null(s);
        struct stat sb;
        assert_int_not_equal(stat(path, &sb), 0);
    }
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void schema_on_disk(void **state)
{
    (void)state;
    char path[4096], url[4200];
    fresh_path(path, sizeof path, "schema");
    snprintf(url, sizeof url, "sqlite:%s", path);
    once_store_close(open_ok(url, NULL));

    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_journal_mode WHERE "
                                 "journal_mode='wal'"),
                     1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE type='table' AND "
                                 "name IN ('tasks','events','tombstones','meta',"
                                 "'push_deliveries','replicas') AND sql LIKE '%STRICT%'"),
                     6);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name='events' AND "
                                 "sql LIKE '%WITHOUT ROWID%'"),
                     1);
    /* Events under the task's rid, a rowid alias (VACUUM keeps it). */
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info('tasks') WHERE "
                                 "name='rid' AND pk=1 AND type='INTEGER'"),
                     1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info('events') WHERE "
                                 "pk>0 AND name IN ('tid','generation')"),
                     2);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE type='index' AND "
                                 "name IN ('tasks_lease','tasks_sweep','tasks_list',"
                                 "'tasks_list_ctx','tasks_list_state','tasks_list_ctx_state',"
                                 "'tombstones_purge','push_due')"),
                     8);
    /* STRICT: a wrongly typed value is refused, not coerced. */
    assert_int_not_equal(sqlite3_exec(db,
                                      "INSERT INTO meta(name, value) VALUES('x', x'01')",
                                      NULL, NULL, NULL),
                         SQLITE_OK);

    /* A file from a newer once is refused cleanly. */
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=8", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char err[256] = "";
    once_store *s = (once_store *)1;
    assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EUNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(err, "schema is at version 8, this once knows up to 7"));
    st_remove_db(path);
}

/* Child: wait for the start signal, open the new file, create its own key
 * and the contested one. Exit 0 = won "shared", 1 = lost it, >= 2 = error. */
static int child(int go, const char *url, int n)
{
    char c;
    if (read(go, &c, 1) != 0)
        return 2;
    once_store *s;
    char err[256];
    if (once_store_open(url, NULL, &s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "child %d open: %s\n", n, err);
        return 3;
    }
    char id[16];
    snprintf(id, sizeof id, "c%d", n);
    once_record r;
    if (st_rec(&r, "p", id, ONCE_STATE_WORKING, T0, "{}") != 0 ||
        once_store_create(s, &r, NULL, 0, NULL, NULL) != ONCE_OK)
        return 4;
    once_record_clear(&r);
    if (st_rec(&r, "p", "shared", ONCE_STATE_WORKING, T0, "{}") != 0)
        return 5;
    int rc = once_store_create(s, &r, NULL, 0, NULL, NULL);
    once_record_clear(&r);
    once_store_close(s);
    return rc == ONCE_OK ? 0 : rc == ONCE_EEXISTS ? 1 : 6;
}

static void processes_create_schema_at_once(void **state)
{
    (void)state;
    enum { NPROC = 8 };
    char path[4096], url[4200];
    fresh_path(path, sizeof path, "procs");
    snprintf(url, sizeof url, "sqlite:%s", path);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            close(p[1]);
            _exit(child(p[0], url, i));
        }
    }
    close(p[0]);
    close(p[1]);   /* every child's read returns 0 now: go */
    int won = 0;
    for (int i = 0; i < NPROC; i++) {
        int status;
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) > 1)
            fail_msg("child %d exited %d", i, WEXITSTATUS(status));
        won += WEXITSTATUS(status) == 0;
    }
    assert_int_equal(won, 1);

    once_store *s = open_ok(url, NULL);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    assert_true(st_clean(&rep));
    assert_int_equal(rep.records, NPROC + 1);
    once_store_close(s);
    st_remove_db(path);
}

/* The version-1 schema exactly as once 0.1 created it (no push_json, no
 * push_deliveries), with one live task and its event. */
static const char v1_schema[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE tasks(principal TEXT NOT NULL, task_id TEXT NOT NULL, context_id TEXT NOT NULL,"
    " state INTEGER NOT NULL, kind INTEGER NOT NULL, version INTEGER NOT NULL,"
    " generation INTEGER NOT NULL, fence INTEGER NOT NULL, step INTEGER NOT NULL,"
    " lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, finished_at INTEGER NOT NULL,"
    " digests TEXT NOT NULL, task_json TEXT NOT NULL, checkpoint TEXT,"
    " PRIMARY KEY(principal, task_id)) STRICT;"
    "CREATE INDEX tasks_lease ON tasks(lease_until, principal, task_id)"
    " WHERE state<5 AND lease_until>0;"
    "CREATE INDEX tasks_sweep ON tasks(finished_at, principal, task_id) WHERE state>=5;"
    "CREATE INDEX tasks_list ON tasks(principal, created_at, task_id);"
    "CREATE TABLE events(principal TEXT NOT NULL, task_id TEXT NOT NULL,"
    " generation INTEGER NOT NULL, payload TEXT NOT NULL,"
    " PRIMARY KEY(principal, task_id, generation)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE tombstones(principal TEXT NOT NULL, task_id TEXT NOT NULL,"
    " first_digest TEXT NOT NULL, finished_at INTEGER NOT NULL, expired_at INTEGER NOT NULL,"
    " PRIMARY KEY(principal, task_id)) STRICT;"
    "CREATE INDEX tombstones_purge ON tombstones(expired_at, principal, task_id);"
    "CREATE TABLE meta(name TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL) STRICT;"
    "INSERT INTO tasks VALUES('p','old','ctx',2,0,1,1,1,0,'',0,1,1,0,"
    " '" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa m1\n','{\"id\":\"old\"}',NULL);"
    "INSERT INTO events VALUES('p','old',1,'{\"task\":{}}');"
    "INSERT INTO meta VALUES('derived_id_secret','s3cret');"
    "PRAGMA user_version=1;";

/* Child: open (and so maybe migrate) the v1 file, then register a task
 * with one push config through the migrated schema. */
static int migrate_child(int go, const char *url, int n)
{
    char c;
    if (read(go, &c, 1) != 0)
        return 2;
    once_store *s;
    char err[256];
    if (once_store_open(url, NULL, &s, err, sizeof err) != ONCE_OK) {
        fprintf(stderr, "child %d open: %s\n", n, err);
        return 3;
    }
    char id[16];
    snprintf(id, sizeof id, "m%d", n);
    once_record r;
    if (st_rec(&r, "p", id, ONCE_STATE_WORKING, T0, "{}") != 0)
        return 4;
    r.push_json = once_strdup("[{\"id\":\"cfg\",\"since\":0,\"url\":\"http://x/\"}]");
    int rc = r.push_json ? once_store_create(s, &r, NULL, 0, NULL, NULL) : ONCE_ENOMEM;
    once_record_clear(&r);
    once_store_close(s);
    return rc == ONCE_OK ? 0 : 5;
}

static void processes_migrate_v1_at_once(void **state)
{
    (void)state;
    enum { NPROC = 6 };
    char path[4096], url[4200];
    fresh_path(path, sizeof path, "migrate");
    snprintf(url, sizeof url, "sqlite:%s", path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, v1_schema, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid[NPROC];
    for (int i = 0; i < NPROC; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            close(p[1]);
            _exit(migrate_child(p[0], url, i));
        }
    }
    close(p[0]);
    close(p[1]);
    for (int i = 0; i < NPROC; i++) {
        int status;
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
            fail_msg("child %d exited %d", i, WEXITSTATUS(status));
    }

    once_store *s = open_ok(url, NULL);
    once_record r;
    assert_int_equal(once_store_load(s, "p", "old", &r, NULL), ONCE_OK);   /* kept */
    assert_string_equal(r.task_json, "{\"id\":\"old\"}");
    assert_null(r.push_json);
    once_record_clear(&r);
    once_event_list ev;   /* and its event, now under its rid */
    assert_int_equal(once_store_events(s, "p", "old", 0, 0, &ev), ONCE_OK);
    assert_int_equal(ev.n, 1);
    assert_string_equal(ev.v[0].payload, "{\"task\":{}}");
    once_event_list_clear(&ev);
    char *secret = NULL;
    assert_int_equal(once_store_meta(s, "derived_id_secret", "new", &secret), ONCE_OK);
    assert_string_equal(secret, "s3cret");
    once_free(secret);
    for (int i = 0; i < NPROC; i++) {
        char id[16];
        once_push_row_list rows;
        snprintf(id, sizeof id, "m%d", i);
        assert_int_equal(once_store_push_rows(s, "p", id, &rows), ONCE_OK);
        assert_int_equal(rows.n, 1);
        assert_string_equal(rows.v[0].config_id, "cfg");
        once_push_row_list_clear(&rows);
    }
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep) || rep.bad_push)
        fail_msg("check after migration: %s", rep.first_problem);
    assert_int_equal(rep.records, NPROC + 1);
    once_store_close(s);

    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    sqlite3_close(db);
    st_remove_db(path);
}

/* Take the file at path back to version 6's tables (tests/sqlite/v6_layout.sql). */
static void to_v6(const char *path)
{
    static char sql[8192];
    FILE *f = fopen(ONCE_SOURCE_DIR "/tests/sqlite/v6_layout.sql", "r");
    assert_non_null(f);
    size_t n = fread(sql, 1, sizeof sql - 1, f);
    assert_true(n > 0 && n < sizeof sql - 1 && !ferror(f));
    fclose(f);
    sql[n] = '\0';
    sqlite3 *db;
    char *err = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("v6_layout.sql: %s", err);
    sqlite3_close(db);
}

/* A fresh file at path holding the WORKING task "p"/id, taken back to an
 * older version by the SQL older (url: its store URL), through version
 * 6's tables first: the versions before it had those. */
static void older_file(char *path, size_t n, char *url, size_t un, const char *tag,
                       const char *id, const char *older)
{
    fresh_path(path, n, tag);
    snprintf(url, un, "sqlite:%s", path);
    once_store *s = open_ok(url, NULL);
    put(s, id);
    once_store_close(s);
    to_v6(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, older, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A version-2 file (push delivery, no journal) gains the journal column at
 * open: its record is kept with no journal, and a journal written then
 * comes back. */
static void version_2_gains_journal(void **state)
{
    (void)state;
    char path[4096], url[4200];
    older_file(path, sizeof path, url, sizeof url, "v2", "t2",
               "ALTER TABLE tasks DROP COLUMN journal; ALTER TABLE tasks DROP COLUMN packed;"
               " PRAGMA user_version=2;");
    once_store *s;
    once_record r;
    sqlite3 *db;

    /* Told not to migrate, open refuses it, naming both versions, and a
     * dry run reports the step; neither writes the file. */
    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    char err[256] = "";
    s = (once_store *)1;
    assert_int_equal(once_store_open(url, &keep, &s, err, sizeof err), ONCE_EUNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(err, "store schema is at version 2, this once needs 7: "
                                "run onced migrate"));
    int from = -1, to = -1;
    assert_int_equal(once__store_migrate(url, 1, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 2);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 2);
    sqlite3_close(db);

    s = open_ok(url, NULL);
    assert_int_equal(once_store_load(s, "p", "t2", &r, NULL), ONCE_OK);
    assert_null(r.journal);
    r.journal = once_strdup("{\"v\":1}");
    r.version = 2;
    assert_int_equal(once_store_update(s, &r, 1, NULL, 0), ONCE_OK);
    once_record_clear(&r);
    assert_int_equal(once_store_load(s, "p", "t2", &r, NULL), ONCE_OK);
    assert_string_equal(r.journal, "{\"v\":1}");
    once_record_clear(&r);
    once_store_close(s);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    sqlite3_close(db);
    /* Migrated, it opens under NO_MIGRATE. */
    once_store_close(open_ok(url, &keep));
    st_remove_db(path);
}

/* A version-3 file (no replica rows) gains the replicas table at open,
 * keeping its tasks, and then takes heartbeats. */
static void version_3_gains_replicas(void **state)
{
    (void)state;
    char path[4096], url[4200], err[256] = "";
    int from = -1, to = -1;
    older_file(path, sizeof path, url, sizeof url, "v3", "t3",
               "DROP TABLE replicas; ALTER TABLE tasks DROP COLUMN packed;"
               " PRAGMA user_version=3;");
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 3);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    once_store *s = open_ok(url, &keep);
    once_record r;
    assert_int_equal(once_store_load(s, "p", "t3", &r, NULL), ONCE_OK);
    once_record_clear(&r);
    once_replica x = {.id = "h-1", .version = "v", .started_at = T0, .beat_at = T0 + 1};
    assert_int_equal(once_store_replica_beat(s, &x), ONCE_OK);
    once_replica_list l;
    assert_int_equal(once_store_replicas(s, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].id, "h-1");
    once_replica_list_clear(&l);
    once_store_close(s);
    st_remove_db(path);
}

/* The plan SQLite makes for list statement id, its rows' details joined. */
static void list_plan(sqlite3 *db, int id, char *out, size_t cap)
{
    char sql[2048];
    sqlite3_stmt *st;
    size_t len = 0;
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", once__sq_sql[id]);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW && len < cap - 1)
        len += (size_t)snprintf(out + len, cap - len, "%s\n",
                                (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
}

/* Every list statement is one search of its filter's index: the filter's
 * columns are equalities on it (and the cursor a range after them), and
 * the page comes in index order, with no temporary B-tree to sort it. So
 * a page costs a seek and the rows it returns, however many tasks the
 * principal has. Checked on a file with tasks in it and fresh statistics,
 * the state in which a planner would prefer a scan if it could. */
static void list_plans_use_indexes(void **state)
{
    (void)state;
    static const struct {
        int id;
        const char *search;
    } want[] = {
        {SQ_LIST, "USING INDEX tasks_list (principal=?)"},
        {SQ_LIST_AFTER, "USING INDEX tasks_list (principal=? AND (created_at,task_id)>(?,?))"},
        {SQ_LIST_CTX, "USING INDEX tasks_list_ctx (principal=? AND context_id=?)"},
        {SQ_LIST_CTX_AFTER, "USING INDEX tasks_list_ctx (principal=? AND context_id=? AND "
                            "(created_at,task_id)>(?,?))"},
        {SQ_LIST_STATE, "USING INDEX tasks_list_state (principal=? AND state=?)"},
        {SQ_LIST_STATE_AFTER, "USING INDEX tasks_list_state (principal=? AND state=? AND "
                              "(created_at,task_id)>(?,?))"},
        {SQ_LIST_CTX_STATE,
         "USING INDEX tasks_list_ctx_state (principal=? AND context_id=? AND state=?)"},
        {SQ_LIST_CTX_STATE_AFTER, "USING INDEX tasks_list_ctx_state (principal=? AND "
                                  "context_id=? AND state=? AND (created_at,task_id)>(?,?))"},
    };
    char path[4096], url[4200], plan[4096];
    fresh_path(path, sizeof path, "plans");
    snprintf(url, sizeof url, "sqlite:%s", path);
    once_store *s = open_ok(url, NULL);
    char id[16];
    for (int i = 0; i < 200; i++) {
        snprintf(id, sizeof id, "t%03d", i);
        put(s, id);
    }
    once_store_close(s);

    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "ANALYZE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(SQ_LIST_CTX_STATE_AFTER - SQ_LIST + 1, (int)(sizeof want / sizeof want[0]));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        list_plan(db, want[i].id, plan, sizeof plan);
        if (strncmp(plan, "SEARCH tasks ", 13) != 0 || !strstr(plan, want[i].search) ||
            strstr(plan, "TEMP B-TREE") || strchr(plan, '\n') != plan + strlen(plan) - 1)
            fail_msg("list statement %d:\n%s\nplan:\n%swant one row: SEARCH tasks %s",
                     want[i].id, once__sq_sql[want[i].id], plan, want[i].search);
    }
    sqlite3_close(db);
    st_remove_db(path);
}

/* A version-4 file (no list indexes) gains them: refused under NO_MIGRATE,
 * untouched by a dry run, then built by the migration from the tasks it
 * holds, which the filters then find. */
static void version_4_gains_list_indexes(void **state)
{
    (void)state;
    static const char count_indexes[] =
        "SELECT count(*) FROM sqlite_schema WHERE type='index' AND "
        "name IN ('tasks_list_ctx','tasks_list_state','tasks_list_ctx_state')";
    char path[4096], url[4200], err[256] = "";
    int from = -1, to = -1;
    sqlite3 *db;
    older_file(path, sizeof path, url, sizeof url, "v4", "t4",
               "DROP INDEX tasks_list_ctx; DROP INDEX tasks_list_state; "
               "DROP INDEX tasks_list_ctx_state; ALTER TABLE tasks DROP COLUMN packed;"
               " PRAGMA user_version=4;");
    assert_true(st_no_migrate_refused(url, "schema is at version 4, this once needs 7", err,
                                      sizeof err));
    assert_int_equal(once__store_migrate(url, 1, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 4);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 4);
    assert_int_equal(raw_int(db, count_indexes), 0);
    sqlite3_close(db);

    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 4);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, count_indexes), 3);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM tasks INDEXED BY tasks_list_ctx_state "
                                 "WHERE principal='p' AND context_id='ctx-0' AND state=2"),
                     1);
    sqlite3_close(db);

    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    once_store *s = open_ok(url, &keep);
    once_list_query q = {.principal = "p", .context_id = "ctx-0", .state = ONCE_STATE_WORKING,
                         .limit = 10};
    once_record_list l;
    assert_int_equal(once_store_list(s, &q, &l), ONCE_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0].task_id, "t4");
    once_record_list_clear(&l);
    q.state = ONCE_STATE_COMPLETED;
    assert_int_equal(once_store_list(s, &q, &l), ONCE_OK);
    assert_int_equal(l.n, 0);
    once_record_list_clear(&l);
    once_store_close(s);
    st_remove_db(path);
}

/* What an echo task stores: its task and its journal (bytes deflate packs). */
#define ECHO_TASK                                                                         \
    "{\"id\":\"done\",\"contextId\":\"01a24660-f3d9-7ead-8a87-92e30ac2916e\",\"status\":"       \
    "{\"state\":\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-12-05T13:24:48.729Z\"},"           \
    "\"history\":[{\"messageId\":\"m-1\",\"taskId\":\"done\",\"role\":\"ROLE_USER\",\"parts\":"   \
    "[{\"text\":\"hello\"}],\"contextId\":\"01a24660-f3d9-7ead-8a87-92e30ac2916e\"}],"           \
    "\"artifacts\":[{\"artifactId\":\"echo\",\"name\":\"echo\",\"parts\":[{\"text\":\"hello\"}]}]}"
#define ECHO_JOURNAL                                                                      \
    "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":1796477088729,\"replica\":\"vm-31563\","      \
    "\"fence\":1,\"step\":0,\"resumed\":false,\"end\":1796477088729,"                          \
    "\"result\":\"TASK_STATE_COMPLETED\"}]}"

/* A version-5 file (no packed column) gains it at migration, and its
 * finished task is then compacted and packed like any. */
static void version_5_gains_packed(void **state)
{
    (void)state;
    char path[4096], url[4200], err[256] = "";
    int from = -1, to = -1;
    older_file(path, sizeof path, url, sizeof url, "v5", "t5",
               "ALTER TABLE tasks DROP COLUMN packed; PRAGMA user_version=5;");
    assert_true(st_no_migrate_refused(url, "schema is at version 5, this once needs 7", err,
                                      sizeof err));
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 5);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    once_store *s = open_ok(url, &keep);
    once_record r;
    assert_int_equal(once_store_load(s, "p", "t5", &r, NULL), ONCE_OK);   /* kept */
    once_record_clear(&r);
    once_store_close(s);
    st_remove_db(path);
}

/* A task of n events: finished at T0 (push_json may be NULL) or running;
 * "done" carries an echo task's texts, the others "{}" and no journal. */
static void put_n(once_store *s, const char *id, int done, size_t n, const char *push)
{
    once_record r;
    st_events e;
    assert_int_equal(st_rec(&r, "p", id, done ? ONCE_STATE_COMPLETED : ONCE_STATE_WORKING,
                            T0 - 10, strcmp(id, "done") == 0 ? ECHO_TASK : NULL), 0);
    if (strcmp(id, "done") == 0)
        assert_non_null(r.journal = once_strdup(ECHO_JOURNAL));
    if (done)
        r.finished_at = T0;
    r.generation = (int64_t)n;
    if (push)
        assert_non_null(r.push_json = once_strdup(push));
    st_mkev(&e, 1, n, id);
    assert_int_equal(once_store_create(s, &r, e.ev, n, NULL, NULL), ONCE_OK);
    once_record_clear(&r);
}

/* The events id has now: how many, the last one's generation and payload. */
static size_t events_of(once_store *s, const char *id, int64_t *last, int *empty)
{
    once_event_list l;
    assert_int_equal(once_store_events(s, "p", id, 0, 0, &l), ONCE_OK);
    size_t n = l.n;
    *last = n ? l.v[n - 1].generation : 0;
    *empty = n && l.v[n - 1].payload[0] == '\0';
    once_event_list_clear(&l);
    return n;
}

/* packed is set (1) or NULL (0) for id, and its texts load as written. */
static int packed_and_whole(once_store *s, const char *path, const char *id, const char *task,
                            const char *journal)
{
    once_record r;
    assert_int_equal(once_store_load(s, "p", id, &r, NULL), ONCE_OK);
    assert_string_equal(r.task_json, task);
    if (journal)
        assert_string_equal(r.journal, journal);
    else
        assert_null(r.journal);
    once_record_clear(&r);
    sqlite3 *db;
    char sql[128];
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "SELECT packed IS NOT NULL FROM tasks WHERE task_id='%s'", id);
    int packed = (int)raw_int(db, sql);
    sqlite3_close(db);
    return packed;
}

/* compact=MS: the sweep leaves a task finished MS ago its last event alone,
 * emptied, and its task and journal deflated (when that is smaller) -- not
 * a running task's, not one a push delivery is still owed from -- and the
 * check counts it whole; compact=off leaves all. */
static void sweep_compacts_finished_tasks(void **state)
{
    (void)state;
    char path[4096], url[4200], err[256];
    once_store *s = NULL;
    for (int off = 0; off < 2; off++) {
        fresh_path(path, sizeof path, off ? "compact-off" : "compact");
        snprintf(url, sizeof url, "sqlite:%s?compact=%s", path, off ? "off" : "0");
        s = open_ok(url, NULL);
        put_n(s, "done", 1, 3, NULL);
        put_n(s, "owed", 1, 3, "[{\"id\":\"c1\",\"since\":0}]");
        put_n(s, "live", 0, 2, NULL);
        put_n(s, "tiny", 1, 2, NULL);
        size_t n;
        for (int pass = 0; pass < 2; pass++) {   /* the second finds nothing to do */
            assert_int_equal(once_store_sweep(s, 0, T0 + 1, 100, &n), ONCE_OK);
            assert_int_equal(n, 0);   /* nothing entombed: retention is not due */
            int64_t last;
            int empty;
            assert_int_equal(events_of(s, "done", &last, &empty), off ? 3 : 1);
            assert_int_equal(last, 3);
            assert_int_equal(empty, !off);
            assert_int_equal(events_of(s, "owed", &last, &empty), 3);
            assert_false(empty);
            assert_int_equal(events_of(s, "live", &last, &empty), 2);
            assert_int_equal(packed_and_whole(s, path, "done", ECHO_TASK, ECHO_JOURNAL), !off);
            assert_int_equal(packed_and_whole(s, path, "owed", "{}", NULL), 0);
            assert_int_equal(packed_and_whole(s, path, "tiny", "{}", NULL), 0); /* no smaller */
        }
        once_check_report rep;
        assert_int_equal(once_store_check(s, &rep), ONCE_OK);
        assert_string_equal(rep.first_problem, "");
        assert_int_equal(rep.records, 4);
        assert_int_equal(rep.events, off ? 10 : 7);
        once_store_close(s);
        st_remove_db(path);
    }
    fresh_path(path, sizeof path, "compact-bad");
    const char *bad[] = {"compact=soon", "compact=-1", "compact=0&compact=off"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(url, sizeof url, "sqlite:%s?%s", path, bad[i]);
        assert_int_equal(once_store_open(url, NULL, &s, err, sizeof err), ONCE_EINVAL);
        assert_non_null(strstr(err, "compact"));
    }
    st_remove_db(path);
}

/* A version-6 file (events keyed by principal, task ID and generation)
 * is rebuilt by the migration: every task keeps its rowid as rid, every
 * event goes under its task's rid and reads back as it was, an event under
 * no task (the check's problem) is not carried over, and the store then
 * works as any: a new task's row and events, compaction moving a packed
 * task's event to its new rid, the check clean. */
static void version_6_rekeys_events(void **state)
{
    (void)state;
    char path[4096], url[4200], err[256] = "";
    int from = -1, to = -1;
    fresh_path(path, sizeof path, "v6");
    snprintf(url, sizeof url, "sqlite:%s?compact=0", path);
    once_store *s = open_ok(url, NULL);
    put_n(s, "live", 0, 2, NULL);
    put_n(s, "done", 1, 3, NULL);
    once_store_close(s);
    to_v6(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO events VALUES('p','gone',1,'{}')", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    int64_t live = raw_int(db, "SELECT rowid FROM tasks WHERE task_id='live'");
    int64_t done = raw_int(db, "SELECT rowid FROM tasks WHERE task_id='done'");
    assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 6);
    sqlite3_close(db);

    assert_true(st_no_migrate_refused(url, "schema is at version 6, this once needs 7", err,
                                      sizeof err));
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 6);
    assert_int_equal(to, SQ_SCHEMA_VERSION);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT rid FROM tasks WHERE task_id='live'"), live);
    assert_int_equal(raw_int(db, "SELECT rid FROM tasks WHERE task_id='done'"), done);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 5);   /* not the orphan */
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE type='index' AND "
                                 "name IN ('tasks_lease','tasks_sweep','tasks_list',"
                                 "'tasks_list_ctx','tasks_list_state','tasks_list_ctx_state')"),
                     6);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%_v6'"), 0);
    sqlite3_close(db);

    once_store_options keep = {.flags = ONCE_STORE_OPEN_NO_MIGRATE};
    s = open_ok(url, &keep);
    once_event_list l;
    assert_int_equal(once_store_events(s, "p", "live", 0, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    once_event_list_clear(&l);
    assert_int_equal(once_store_events(s, "p", "done", 1, 0, &l), ONCE_OK);   /* after 1 */
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].generation, 2);
    assert_int_equal(l.v[1].generation, 3);
    assert_string_equal(l.v[1].payload, "{\"g\":3,\"tag\":\"done\"}");
    once_event_list_clear(&l);
    put_n(s, "new", 0, 4, NULL);
    size_t n;
    assert_int_equal(once_store_sweep(s, 0, T0 + 1, 100, &n), ONCE_OK);   /* compacts "done" */
    int64_t last;
    int empty;
    assert_int_equal(events_of(s, "done", &last, &empty), 1);
    assert_int_equal(last, 3);
    assert_true(empty);
    assert_int_equal(events_of(s, "new", &last, &empty), 4);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after the migration: %s", rep.first_problem);
    assert_int_equal(rep.records, 3);
    assert_int_equal(rep.events, 7);
    once_store_close(s);
    st_remove_db(path);
}

/* A version-6 file of thousands of tasks migrates: the rebuild's
 * statements, in one transaction, journal megabytes of pages, so their
 * journals spill to a file (with a spill threshold over 128 KiB every
 * spill failed with SQLITE_FULL: sqlite_call.c), and every task and event
 * comes through. */
static void version_6_migrates_a_large_file(void **state)
{
    (void)state;
    enum { NTASKS = 6000 };
    char path[4096], url[4200], err[256] = "";
    int from = -1, to = -1;
    fresh_path(path, sizeof path, "v6-large");
    snprintf(url, sizeof url, "sqlite:%s?synchronous=off", path);
    once_store *s = open_ok(url, NULL);
    char id[32];
    for (int i = 0; i < NTASKS; i++) {
        /* IDs in no order, as a client minting random IDs sends them */
        snprintf(id, sizeof id, "t%08x", (unsigned)(i * 2654435761u));
        put_n(s, id, i % 2, 4, NULL);
    }
    once_store_close(s);
    to_v6(path);
    assert_int_equal(once__store_migrate(url, 0, &from, &to, err, sizeof err), ONCE_OK);
    assert_int_equal(from, 6);
    s = open_ok(url, NULL);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check after the migration: %s", rep.first_problem);
    assert_int_equal(rep.records, NTASKS);
    assert_int_equal(rep.events, 4 * NTASKS);
    once_event_list l;
    snprintf(id, sizeof id, "t%08x", (unsigned)(4321 * 2654435761u));
    assert_int_equal(once_store_events(s, "p", id, 2, 0, &l), ONCE_OK);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[1].generation, 4);
    once_event_list_clear(&l);
    once_store_close(s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), SQ_SCHEMA_VERSION);
    sqlite3_close(db);
    st_remove_db(path);
}

/* The check finds events whose rid holds no task, and names the rid. */
static void check_finds_events_under_no_task(void **state)
{
    (void)state;
    char path[4096], url[4200];
    fresh_path(path, sizeof path, "orphans");
    snprintf(url, sizeof url, "sqlite:%s", path);
    once_store *s = open_ok(url, NULL);
    put_n(s, "live", 0, 2, NULL);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO events VALUES(9999,1,'{}'),(9999,2,'{}')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    assert_int_equal(rep.records, 1);
    assert_int_equal(rep.orphan_events, 2);
    assert_int_equal(rep.events, 4);
    assert_non_null(strstr(rep.first_problem, "rid 9999: 2 event(s) without a record"));
    once_store_close(s);
    st_remove_db(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(url_forms_and_sharing),
        cmocka_unit_test(file_mode_0600),
        cmocka_unit_test(synchronous_honoured),
        cmocka_unit_test(url_settings_refused),
        cmocka_unit_test(schema_on_disk),
        cmocka_unit_test(processes_create_schema_at_once),
        cmocka_unit_test(processes_migrate_v1_at_once),
        cmocka_unit_test(version_2_gains_journal),
        cmocka_unit_test(version_3_gains_replicas),
        cmocka_unit_test(version_4_gains_list_indexes),
        cmocka_unit_test(list_plans_use_indexes),
        cmocka_unit_test(sweep_compacts_finished_tasks),
        cmocka_unit_test(version_5_gains_packed),
        cmocka_unit_test(version_6_rekeys_events),
        cmocka_unit_test(version_6_migrates_a_large_file),
        cmocka_unit_test(check_finds_events_under_no_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
