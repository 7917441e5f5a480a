/*
 * test_client_outbox.c -- the durable outbox: intents survive closing and
 * reopening the file; the state machine pending -> acknowledged -> final,
 * pending|acknowledged -> refused holds, and nothing leaves final or
 * refused; attempts and errors are counted; a plain-mode intent learns its
 * task ID from the answer; observing a terminal task finishes every
 * acknowledged intent of it; prune removes only finished intents older than
 * the age; abandon ends pending and acknowledged intents (by task or
 * message ID), refuses finished ones and unknown IDs, and a sender can no
 * longer attempt an abandoned intent; version 1, 2 and 4 files are upgraded
 * in place, their intents and sequence kept, each agent URL they name
 * becoming that agent's one endpoint; an intent keeps its push config and
 * records the endpoint that answered.
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

#include "client/client_int.h"
#include "client/outbox_int.h"

static const char *const MSG = "{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"x\"}]}";

typedef struct fx {
    char path[256];
    once__outbox *o;
} fx;

static int setup(void **state)
{
    static fx f;
    snprintf(f.path, sizeof f.path, "/tmp/once-outbox-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(f.path);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(f.path);
    char err[256];
    if (once__outbox_open(f.path, &f.o, err, sizeof err) != ONCE_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    once__outbox_close(f->o);
    char p[300];
    unlink(f->path);
    snprintf(p, sizeof p, "%s-wal", f->path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", f->path);
    unlink(p);
    return 0;
}

static once_intent_state state_of(once__outbox *o, int64_t seq)
{
    once__intent_row r;
    assert_int_equal(once__outbox_load(o, seq, &r), ONCE_OK);
    once_intent_state s = r.it.state;
    once__intent_row_clear(&r);
    return s;
}

static void test_transition_table(void **state)
{
    const once_intent_state P = ONCE_INTENT_PENDING, A = ONCE_INTENT_ACKNOWLEDGED,
                            F = ONCE_INTENT_FINAL, R = ONCE_INTENT_REFUSED,
                            X = ONCE_INTENT_ABANDONED;
    assert_true(once__intent_transition_ok(P, P));
    assert_true(once__intent_transition_ok(P, A));
    assert_true(once__intent_transition_ok(P, F));
    assert_true(once__intent_transition_ok(P, R));
    assert_true(once__intent_transition_ok(A, A));
    assert_true(once__intent_transition_ok(A, F));
    assert_true(once__intent_transition_ok(A, R));
    assert_false(once__intent_transition_ok(A, P));
    assert_true(once__intent_transition_ok(P, X));
    assert_true(once__intent_transition_ok(A, X));
    for (int to = (int)P; to <= (int)X; to++) {
        assert_false(once__intent_transition_ok(F, (once_intent_state)to));
        assert_false(once__intent_transition_ok(R, (once_intent_state)to));
        assert_false(once__intent_transition_ok(X, (once_intent_state)to));
    }
    assert_string_equal(once_intent_state_name(X), "abandoned");
    assert_int_equal(once__intent_state_parse("abandoned"), X);
    assert_string_equal(once_intent_state_name(A), "acknowledged");
    assert_int_equal(once__intent_state_parse("refused"), R);
    assert_int_equal(once__intent_state_parse("bogus"), 0);
}

static void test_lifecycle_survives_reopen(void **state)
{
    fx *f = *state;
    int64_t seq;
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "T1", "T1", MSG, NULL, 1000, &seq), ONCE_OK);
    assert_true(seq > 0);
    assert_int_equal(once__outbox_attempt(f->o, seq, 1001), ONCE_OK);
    assert_int_equal(once__outbox_error(f->o, seq, "connection refused", 1002), ONCE_OK);
    assert_int_equal(once__outbox_attempt(f->o, seq, 1003), ONCE_OK);

    /* A crash here: the reopened file still has the pending intent, its body
     * and its attempts. */
    once__outbox_close(f->o);
    char err[256];
    assert_int_equal(once__outbox_open(f->path, &f->o, err, sizeof err), ONCE_OK);
    once__intent_row r;
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_int_equal(r.it.state, ONCE_INTENT_PENDING);
    assert_int_equal(r.it.attempts, 2);
    assert_string_equal(r.it.last_error, "connection refused");
    assert_string_equal(r.message, MSG);
    assert_string_equal(r.task_id, "T1");
    assert_null(r.mode);
    assert_int_equal(r.it.created_ms, 1000);
    assert_int_equal(r.it.acked_ms, 0);
    once__intent_row_clear(&r);

    int ext = -1;
    assert_int_equal(once__outbox_set_mode(f->o, seq, 1, 1004, &ext), ONCE_OK);
    assert_int_equal(ext, 1);
    /* The mode is fixed once: a later card saying otherwise changes nothing. */
    assert_int_equal(once__outbox_set_mode(f->o, seq, 0, 1005, &ext), ONCE_OK);
    assert_int_equal(ext, 1);

    assert_int_equal(once__outbox_ack(f->o, seq, "T1", ONCE_STATE_WORKING, 0, NULL, 1010), ONCE_OK);
    assert_int_equal(state_of(f->o, seq), ONCE_INTENT_ACKNOWLEDGED);
    /* An acknowledged intent is never sent again. */
    assert_int_equal(once__outbox_attempt(f->o, seq, 1011), ONCE_EILLEGAL);

    assert_int_equal(once__outbox_observe(f->o, "http://a/", "T1", ONCE_STATE_INPUT_REQUIRED, NULL, 1020),
                     ONCE_OK);
    assert_int_equal(state_of(f->o, seq), ONCE_INTENT_ACKNOWLEDGED);
    assert_int_equal(once__outbox_observe(f->o, "http://a/", "T1", ONCE_STATE_COMPLETED, NULL, 1030), ONCE_OK);
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_int_equal(r.it.state, ONCE_INTENT_FINAL);
    assert_int_equal(r.it.task_state, ONCE_STATE_COMPLETED);
    assert_int_equal(r.it.acked_ms, 1010);
    assert_int_equal(r.it.finished_ms, 1030);
    assert_null(r.it.last_error);
    once__intent_row_clear(&r);

    /* Final is final. */
    assert_int_equal(once__outbox_ack(f->o, seq, "T1", ONCE_STATE_WORKING, 0, NULL, 1040), ONCE_EILLEGAL);
    assert_int_equal(once__outbox_refuse(f->o, seq, "TASK_TERMINAL", ONCE_STATE_COMPLETED, NULL, 1040),
                     ONCE_EILLEGAL);
    assert_int_equal(once__outbox_attempt(f->o, seq, 1040), ONCE_EILLEGAL);
    assert_int_equal(state_of(f->o, seq), ONCE_INTENT_FINAL);
}

static void test_refused_is_final(void **state)
{
    fx *f = *state;
    int64_t seq;
    assert_int_equal(once__outbox_add(f->o, "continue", "http://a/", "T2", "M2", MSG, NULL, 1, &seq), ONCE_OK);
    assert_int_equal(once__outbox_refuse(f->o, seq, "TASK_TERMINAL", ONCE_STATE_COMPLETED, NULL, 2), ONCE_OK);
    once__intent_row r;
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_int_equal(r.it.state, ONCE_INTENT_REFUSED);
    assert_string_equal(r.it.refusal, "TASK_TERMINAL");
    assert_int_equal(r.it.task_state, ONCE_STATE_COMPLETED);
    once__intent_row_clear(&r);
    assert_int_equal(once__outbox_ack(f->o, seq, "T2", ONCE_STATE_COMPLETED, 0, NULL, 3), ONCE_EILLEGAL);
    assert_int_equal(once__outbox_attempt(f->o, seq, 3), ONCE_EILLEGAL);
    /* Observing the task does not touch a refused intent. */
    assert_int_equal(once__outbox_observe(f->o, "http://a/", "T2", ONCE_STATE_CANCELED, NULL, 4), ONCE_OK);
    assert_int_equal(state_of(f->o, seq), ONCE_INTENT_REFUSED);
    assert_int_equal(once__outbox_ack(f->o, 999999, "x", ONCE_STATE_WORKING, 0, NULL, 5), ONCE_ENOTFOUND);
}

static void test_terminal_answer_goes_straight_to_final(void **state)
{
    fx *f = *state;
    int64_t s1, s2;
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "T3", "T3", MSG, NULL, 1, &s1), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, s1, "T3", ONCE_STATE_COMPLETED, 0, NULL, 2), ONCE_OK);
    assert_int_equal(state_of(f->o, s1), ONCE_INTENT_FINAL);
    /* A direct Message answer is final too, whatever the state. */
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "T4", "T4", MSG, NULL, 1, &s2), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, s2, NULL, ONCE_STATE_UNKNOWN, 1, NULL, 2), ONCE_OK);
    assert_int_equal(state_of(f->o, s2), ONCE_INTENT_FINAL);
}

static void test_plain_mode_learns_the_task_id(void **state)
{
    fx *f = *state;
    int64_t seq;
    assert_int_equal(once__outbox_add(f->o, "send", "http://p/", "01MINTED", "01MINTED", MSG, NULL, 1, &seq),
                     ONCE_OK);
    int ext = -1;
    assert_int_equal(once__outbox_set_mode(f->o, seq, 0, 2, &ext), ONCE_OK);
    assert_int_equal(ext, 0);
    once__intent_row r;
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_null(r.task_id);                       /* the agent names the task */
    assert_string_equal(r.message_id, "01MINTED"); /* the minted ID lives on */
    assert_string_equal(r.mode, "plain");
    once__intent_row_clear(&r);
    assert_int_equal(once__outbox_ack(f->o, seq, "server-id", ONCE_STATE_SUBMITTED, 0, NULL, 3), ONCE_OK);
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_string_equal(r.task_id, "server-id");
    once__intent_row_clear(&r);
    char agent[64];
    assert_int_equal(once__outbox_agent_of(f->o, "server-id", agent, sizeof agent), ONCE_OK);
    assert_string_equal(agent, "http://p/");
    assert_int_equal(once__outbox_agent_of(f->o, "nope", agent, sizeof agent), ONCE_ENOTFOUND);
}

typedef struct seen {
    int n;
    int64_t seqs[16];
} seen;

static int collect(void *ctx, const once_intent *it)
{
    seen *s = ctx;
    s->seqs[s->n++] = it->seq;
    return 0;
}

static void test_prune_and_list(void **state)
{
    fx *f = *state;
    int64_t pend, ack, fin_old, fin_new, ref_old;
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "P", "P", MSG, NULL, 10, &pend), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "A", "A", MSG, NULL, 10, &ack), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "F1", "F1", MSG, NULL, 10, &fin_old), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "F2", "F2", MSG, NULL, 10, &fin_new), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "R", "R", MSG, NULL, 10, &ref_old), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, ack, "A", ONCE_STATE_WORKING, 0, NULL, 20), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, fin_old, "F1", ONCE_STATE_FAILED, 0, NULL, 100), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, fin_new, "F2", ONCE_STATE_COMPLETED, 0, NULL, 5000), ONCE_OK);
    assert_int_equal(once__outbox_refuse(f->o, ref_old, "TASK_EXPIRED", ONCE_STATE_UNKNOWN, NULL, 200), ONCE_OK);

    seen s = {0};
    assert_int_equal(once__outbox_list(f->o, ONCE_INTENT_FINAL, collect, &s), ONCE_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.seqs[0], fin_old);
    assert_int_equal(s.seqs[1], fin_new);

    unsigned removed = 99;
    assert_int_equal(once__outbox_prune(f->o, 1000, &removed), ONCE_OK);
    assert_int_equal(removed, 2);   /* F1 and R; pending and acknowledged never */
    memset(&s, 0, sizeof s);
    assert_int_equal(once__outbox_list(f->o, 0, collect, &s), ONCE_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.seqs[0], pend);
    assert_int_equal(s.seqs[1], ack);
    assert_int_equal(s.seqs[2], fin_new);

    int64_t *seqs;
    size_t n;
    assert_int_equal(once__outbox_seqs(f->o, ONCE_INTENT_PENDING, &seqs, &n), ONCE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(seqs[0], pend);
    once_free(seqs);
}

static void test_mode_cache(void **state)
{
    fx *f = *state;
    int ext = -1, v03 = -1;
    assert_int_equal(once__outbox_mode_get(f->o, "http://a/", 0, &ext, &v03), ONCE_ENOTFOUND);
    assert_int_equal(once__outbox_mode_put(f->o, "http://a/", 1, 0, NULL, 1000), ONCE_OK);
    assert_int_equal(once__outbox_mode_get(f->o, "http://a/", 500, &ext, &v03), ONCE_OK);
    assert_int_equal(ext, 1);
    assert_int_equal(v03, 0);
    /* Older than the caller accepts: look again. */
    assert_int_equal(once__outbox_mode_get(f->o, "http://a/", 1001, &ext, &v03), ONCE_ENOTFOUND);
    /* An A2A 0.3 agent is remembered as one. */
    assert_int_equal(once__outbox_mode_put(f->o, "http://b/", 0, 1, NULL, 2000), ONCE_OK);
    assert_int_equal(once__outbox_mode_get(f->o, "http://b/", 0, &ext, &v03), ONCE_OK);
    assert_int_equal(ext, 0);
    assert_int_equal(v03, 1);
    /* The card's interfaces, kept with the rest and as fresh. */
    char *ifs = NULL;
    assert_int_equal(once__outbox_interfaces_get(f->o, "http://b/", 0, &ifs), ONCE_OK);
    assert_null(ifs);
    assert_int_equal(
        once__outbox_mode_put(f->o, "http://c/", 1, 0, "[[\"GRPC\",\"h:1\"]]", 3000), ONCE_OK);
    assert_int_equal(once__outbox_interfaces_get(f->o, "http://c/", 2000, &ifs), ONCE_OK);
    assert_string_equal(ifs, "[[\"GRPC\",\"h:1\"]]");
    once_free(ifs);
    assert_int_equal(once__outbox_interfaces_get(f->o, "http://c/", 3001, &ifs), ONCE_ENOTFOUND);
}

static void test_abandon(void **state)
{
    fx *f = *state;
    int64_t pend, plain, ack, fin;
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "P", "P", MSG, NULL, 10, &pend), ONCE_OK);
    /* A plain-mode send before the answer: no task ID, only its messageId. */
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "M", "M", MSG, NULL, 10, &plain), ONCE_OK);
    int ext = 1;
    assert_int_equal(once__outbox_set_mode(f->o, plain, 0, 11, &ext), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "A", "A", MSG, NULL, 10, &ack), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, ack, "A", ONCE_STATE_WORKING, 0, NULL, 20), ONCE_OK);
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "F", "F", MSG, NULL, 10, &fin), ONCE_OK);
    assert_int_equal(once__outbox_ack(f->o, fin, "F", ONCE_STATE_COMPLETED, 0, NULL, 20), ONCE_OK);

    unsigned n = 99;
    seen s = {0};
    assert_int_equal(once__outbox_abandon(f->o, "P", 30, collect, &s, &n), ONCE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s.n, 1);
    assert_int_equal(state_of(f->o, pend), ONCE_INTENT_ABANDONED);
    assert_int_equal(once__outbox_abandon(f->o, "M", 30, NULL, NULL, &n), ONCE_OK);
    assert_int_equal(state_of(f->o, plain), ONCE_INTENT_ABANDONED);
    assert_int_equal(once__outbox_abandon(f->o, "A", 30, NULL, NULL, &n), ONCE_OK);
    assert_int_equal(state_of(f->o, ack), ONCE_INTENT_ABANDONED);

    /* Finished: refused, nothing changed, the message names the state. */
    assert_int_equal(once__outbox_abandon(f->o, "F", 30, NULL, NULL, &n), ONCE_EILLEGAL);
    assert_int_equal(n, 0);
    assert_non_null(strstr(once__outbox_errmsg(f->o), "final"));
    assert_int_equal(state_of(f->o, fin), ONCE_INTENT_FINAL);
    assert_int_equal(once__outbox_abandon(f->o, "P", 31, NULL, NULL, &n), ONCE_EILLEGAL);
    assert_int_equal(once__outbox_abandon(f->o, "nope", 31, NULL, NULL, &n), ONCE_ENOTFOUND);

    /* A sender that still holds the intent can neither send nor record it. */
    assert_int_equal(once__outbox_attempt(f->o, pend, 40), ONCE_EILLEGAL);
    assert_int_equal(once__outbox_ack(f->o, pend, "P", ONCE_STATE_WORKING, 0, NULL, 40), ONCE_EILLEGAL);
    int64_t *seqs;
    size_t k;
    assert_int_equal(once__outbox_seqs(f->o, ONCE_INTENT_PENDING, &seqs, &k), ONCE_OK);
    assert_int_equal(k, 0);   /* recovery finds nothing to send */
    once_free(seqs);

    /* Abandoned intents are finished: prune takes them by age. */
    unsigned removed = 0;
    assert_int_equal(once__outbox_prune(f->o, 1000, &removed), ONCE_OK);
    assert_int_equal(removed, 4);
}

/* An outbox as an older schema wrote it (version 1: no 'abandoned'; 2: no
 * push column; 4: no endpoints), holding intent 7 (pending, 3 attempts) and
 * a sequence that already handed out 9. */
static void old_file(fx *f, int version)
{
    once__outbox_close(f->o);
    f->o = NULL;
    unlink(f->path);
    char sql[2048];
    snprintf(sql, sizeof sql,
             "CREATE TABLE intents(seq INTEGER PRIMARY KEY AUTOINCREMENT,"
             " kind TEXT NOT NULL CHECK(kind IN ('send','continue')), agent TEXT NOT NULL,"
             " task_id TEXT, message_id TEXT NOT NULL, message TEXT NOT NULL,"
             " mode TEXT CHECK(mode IS NULL OR mode IN ('ext','plain')),"
             " state TEXT NOT NULL CHECK(state IN ('pending','acknowledged','final','refused'%s)),"
             " task_state TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
             " refusal TEXT, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
             " acked_ms INTEGER, finished_ms INTEGER);"
             "CREATE INDEX intents_state ON intents(state, seq);"
             "CREATE INDEX intents_task ON intents(task_id);"
             "CREATE TABLE agents(agent TEXT PRIMARY KEY, ext INTEGER NOT NULL,"
             " checked_ms INTEGER NOT NULL);"
             "CREATE TABLE budget(agent TEXT PRIMARY KEY, tokens REAL NOT NULL,"
             " updated_ms INTEGER NOT NULL);"
             "INSERT INTO intents(seq,kind,agent,task_id,message_id,message,state,attempts,"
             " created_ms,updated_ms) VALUES(7,'send','http://a/','T7','T7','{}','pending',3,1,2);"
             "INSERT INTO intents(seq,kind,agent,task_id,message_id,message,state,"
             " created_ms,updated_ms) VALUES(9,'send','http://a/','T9','T9','{}','pending',1,2);"
             "DELETE FROM intents WHERE seq=9;"
             "%s%s"
             "PRAGMA user_version=%d;",
             version >= 2 ? ",'abandoned'" : "",
             version >= 3 ? "ALTER TABLE intents ADD COLUMN push TEXT;" : "",
             version >= 4 ? "ALTER TABLE agents ADD COLUMN a2a TEXT;"
                            "INSERT INTO agents VALUES('http://card-only/',1,1,'1.0');"
                          : "",
             version);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Opened by this version: the intent survives, it can be abandoned, a new
 * intent carries a push config, and no seq is handed out twice. */
static void check_upgraded(fx *f)
{
    char err[256];
    assert_int_equal(once__outbox_open(f->path, &f->o, err, sizeof err), ONCE_OK);
    once__intent_row r;
    assert_int_equal(once__outbox_load(f->o, 7, &r), ONCE_OK);
    assert_string_equal(r.task_id, "T7");
    assert_int_equal(r.it.attempts, 3);
    assert_int_equal(r.it.state, ONCE_INTENT_PENDING);
    assert_null(r.push);
    once__intent_row_clear(&r);
    unsigned n = 0;
    assert_int_equal(once__outbox_abandon(f->o, "T7", 5, NULL, NULL, &n), ONCE_OK);
    assert_int_equal(state_of(f->o, 7), ONCE_INTENT_ABANDONED);
    int64_t seq = 0;
    assert_int_equal(once__outbox_add(f->o, "send", "http://a/", "T", "T", MSG,
                                      "{\"url\":\"http://h/\"}", 6, &seq),
                     ONCE_OK);
    assert_int_equal(seq, 10);   /* 9 was handed out before (then pruned) */
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_string_equal(r.push, "{\"url\":\"http://h/\"}");
    assert_null(r.endpoint);
    once__intent_row_clear(&r);

    /* The old agent URL is its agent's one endpoint, and an answer
     * records the endpoint it came from. */
    sqlite3_stmt *q;
    assert_int_equal(once__ob_one(f->o, &q, "SELECT agent, pos FROM endpoints WHERE url=?", "s",
                                  "http://a/"),
                     ONCE_OK);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "http://a/");
    assert_int_equal(sqlite3_column_int(q, 1), 0);
    sqlite3_finalize(q);
    assert_int_equal(once__outbox_ack(f->o, seq, "T", ONCE_STATE_WORKING, 0, "http://b/", 7),
                     ONCE_OK);
    assert_int_equal(once__outbox_load(f->o, seq, &r), ONCE_OK);
    assert_string_equal(r.endpoint, "http://b/");
    assert_string_equal(r.it.endpoint, "http://b/");
    assert_string_equal(r.agent, "http://a/");
    once__intent_row_clear(&r);

    /* Opening it again finds it up to date and changes nothing. */
    once__outbox_close(f->o);
    assert_int_equal(once__outbox_open(f->path, &f->o, err, sizeof err), ONCE_OK);
    assert_int_equal(state_of(f->o, 7), ONCE_INTENT_ABANDONED);
}

static void test_upgrade_from_v1(void **state)
{
    old_file(*state, 1);
    check_upgraded(*state);
}

static void test_upgrade_from_v2(void **state)
{
    old_file(*state, 2);
    check_upgraded(*state);
}

static void test_upgrade_from_v4(void **state)
{
    fx *f = *state;
    old_file(f, 4);
    check_upgraded(f);
    /* An agent only the card cache knew is an agent with one endpoint too. */
    sqlite3_stmt *q;
    assert_int_equal(once__ob_one(f->o, &q, "SELECT agent FROM endpoints WHERE url=?", "s",
                                  "http://card-only/"),
                     ONCE_OK);
    sqlite3_finalize(q);
    int ext = 0, v03 = 1;
    assert_int_equal(once__outbox_mode_get(f->o, "http://card-only/", 0, &ext, &v03), ONCE_OK);
    assert_true(ext && !v03);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transition_table),
        cmocka_unit_test_setup_teardown(test_lifecycle_survives_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_is_final, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminal_answer_goes_straight_to_final, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_mode_learns_the_task_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_and_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mode_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v4, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
