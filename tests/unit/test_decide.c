/*
 * test_decide.c -- the dedup verdict, docs/design.md section 4.
 *
 * One test per row of the design table (named after the row), the 0.1
 * tasks/send digest-identity rule, conflict vs replay among several accepted
 * messages, and an exhaustive sweep that compares once__decide() with an
 * oracle written here as plain if/else from the design text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/decide.h"

/* Three accepted messages: m1 (digest a), m2 (digest b), m3 (digest c).
 * Digest lines are spelled out here rather than built with the helpers under
 * test. */
#define HA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define HD "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define H0 "0000000000000000000000000000000000000000000000000000000000000000"
#define THREE HA " m1\n" HB " m2\n" HC " m3\n"

static const once_state all_states[] = {
    ONCE_STATE_SUBMITTED, ONCE_STATE_WORKING,   ONCE_STATE_INPUT_REQUIRED,
    ONCE_STATE_AUTH_REQUIRED, ONCE_STATE_COMPLETED, ONCE_STATE_FAILED,
    ONCE_STATE_CANCELED, ONCE_STATE_REJECTED,
};
#define NALL (sizeof all_states / sizeof all_states[0])

static once_verdict record(once_state s, const char *digests, const char *mid, const char *hex)
{
    once__decide_in in = {.stored = ONCE_STORED_RECORD, .state = s, .digests = digests,
                         .may_register = 1, .message_id = mid, .digest_hex = hex};
    return once__decide(&in);
}

static void expect(once_verdict got, once_verdict want)
{
    if (got != want)
        fail_msg("verdict %s, want %s", once__verdict_name(got), once__verdict_name(want));
}

/* ------------------------------------------------------------------------
 * The design table, row by row.
 */

/* none, no tombstone | first message (derived ID, client ID with the
 * extension, or 0.1 tasks/send) | REGISTER */
static void row_none_first_message_registers(void **state)
{
    (void)state;
    once__decide_in in = {.stored = ONCE_STORED_NONE, .may_register = 1,
                         .message_id = "m1", .digest_hex = HA};
    expect(once__decide(&in), ONCE_V_REGISTER);
    in.message_id = NULL;   /* 0.1 tasks/send */
    expect(once__decide(&in), ONCE_V_REGISTER);
}

/* none, no tombstone | taskId for an unknown task, extension not active |
 * TASK_NOT_FOUND */
static void row_none_unknown_task_id_not_found(void **state)
{
    (void)state;
    once__decide_in in = {.stored = ONCE_STORED_NONE, .may_register = 0,
                         .message_id = "m1", .digest_hex = HA};
    expect(once__decide(&in), ONCE_V_TASK_NOT_FOUND);
}

/* tombstone | anything | TASK_EXPIRED */
static void row_tombstone_anything_expired(void **state)
{
    (void)state;
    const char *mids[] = {"m1", NULL};
    for (int reg = 0; reg <= 1; reg++) {
        for (int i = 0; i < 2; i++) {
            once__decide_in in = {.stored = ONCE_STORED_TOMBSTONE, .may_register = reg,
                                 .message_id = mids[i], .digest_hex = HA,
                                 /* a tombstone carries no record fields; stale
                                  * ones must not be looked at */
                                 .state = ONCE_STATE_INPUT_REQUIRED, .digests = THREE};
            expect(once__decide(&in), ONCE_V_TASK_EXPIRED);
        }
    }
}

/* record | messageId already accepted, same digest | REPLAY */
static void row_record_same_message_same_digest_replays(void **state)
{
    (void)state;
    for (size_t i = 0; i < NALL; i++)
        expect(record(all_states[i], THREE, "m2", HB), ONCE_V_REPLAY);
}

/* record | messageId already accepted, different digest | IDEMPOTENCY_CONFLICT */
static void row_record_same_message_different_digest_conflicts(void **state)
{
    (void)state;
    for (size_t i = 0; i < NALL; i++)
        expect(record(all_states[i], THREE, "m2", HD), ONCE_V_IDEMPOTENCY_CONFLICT);
}

/* record, input-required / auth-required | new messageId | CONTINUE */
static void row_record_interrupted_new_message_continues(void **state)
{
    (void)state;
    expect(record(ONCE_STATE_INPUT_REQUIRED, THREE, "m4", HD), ONCE_V_CONTINUE);
    expect(record(ONCE_STATE_AUTH_REQUIRED, THREE, "m4", HD), ONCE_V_CONTINUE);
}

/* record, submitted / working | new messageId | REJECT (names the state) */
static void row_record_busy_new_message_rejects(void **state)
{
    (void)state;
    expect(record(ONCE_STATE_SUBMITTED, THREE, "m4", HD), ONCE_V_REJECT_BUSY);
    expect(record(ONCE_STATE_WORKING, THREE, "m4", HD), ONCE_V_REJECT_BUSY);
}

/* record, completed / failed / canceled / rejected | new messageId |
 * REJECT (terminal) */
static void row_record_terminal_new_message_rejects_terminal(void **state)
{
    (void)state;
    expect(record(ONCE_STATE_COMPLETED, THREE, "m4", HD), ONCE_V_REJECT_TERMINAL);
    expect(record(ONCE_STATE_FAILED, THREE, "m4", HD), ONCE_V_REJECT_TERMINAL);
    expect(record(ONCE_STATE_CANCELED, THREE, "m4", HD), ONCE_V_REJECT_TERMINAL);
    expect(record(ONCE_STATE_REJECTED, THREE, "m4", HD), ONCE_V_REJECT_TERMINAL);
}

/* ------------------------------------------------------------------------
 * 0.1 tasks/send: no messageId, the digest is the identity.
 */

static void v01_equal_digest_replays_after_later_messages(void **state)
{
    (void)state;
    /* Sent by tasks/send first, then two continuations were accepted. */
    const char *lines = HA " \n" HB " \n" HC " m3\n";
    for (size_t i = 0; i < NALL; i++) {
        expect(record(all_states[i], lines, NULL, HA), ONCE_V_REPLAY);
        expect(record(all_states[i], lines, NULL, HB), ONCE_V_REPLAY);
        /* a digest accepted under a 1.0 messageId counts as well */
        expect(record(all_states[i], lines, NULL, HC), ONCE_V_REPLAY);
    }
}

static void v01_new_digest_on_input_required_continues(void **state)
{
    (void)state;
    const char *lines = HA " \n";
    expect(record(ONCE_STATE_INPUT_REQUIRED, lines, NULL, HB), ONCE_V_CONTINUE);
    expect(record(ONCE_STATE_AUTH_REQUIRED, lines, NULL, HB), ONCE_V_CONTINUE);
}

static void v01_new_digest_on_working_rejects_busy(void **state)
{
    (void)state;
    const char *lines = HA " \n";
    expect(record(ONCE_STATE_WORKING, lines, NULL, HB), ONCE_V_REJECT_BUSY);
    expect(record(ONCE_STATE_SUBMITTED, lines, NULL, HB), ONCE_V_REJECT_BUSY);
    expect(record(ONCE_STATE_COMPLETED, lines, NULL, HB), ONCE_V_REJECT_TERMINAL);
}

/* A 0.1 send never conflicts: there is no messageId to reuse. */
static void v01_never_conflicts(void **state)
{
    (void)state;
    for (size_t i = 0; i < NALL; i++)
        assert_int_not_equal(record(all_states[i], THREE, NULL, HD), ONCE_V_IDEMPOTENCY_CONFLICT);
}

/* ------------------------------------------------------------------------
 * Several accepted messages: identity is the messageId, compared whole.
 */

static void conflict_vs_replay_among_several_messages(void **state)
{
    (void)state;
    once_state s = ONCE_STATE_INPUT_REQUIRED;
    expect(record(s, THREE, "m1", HA), ONCE_V_REPLAY);
    expect(record(s, THREE, "m2", HB), ONCE_V_REPLAY);
    expect(record(s, THREE, "m3", HC), ONCE_V_REPLAY);
    /* Another accepted message's digest under m2 is still a reuse of m2. */
    expect(record(s, THREE, "m2", HA), ONCE_V_IDEMPOTENCY_CONFLICT);
    expect(record(s, THREE, "m3", HB), ONCE_V_IDEMPOTENCY_CONFLICT);
    /* A new messageId is new even if its digest was seen (1.0 digests cover
     * the messageId, so this only happens with a broken client). */
    expect(record(s, THREE, "m4", HA), ONCE_V_CONTINUE);
    /* Prefixes, suffixes and case are different messageIds. */
    expect(record(s, THREE, "m", HA), ONCE_V_CONTINUE);
    expect(record(s, THREE, "m1 ", HA), ONCE_V_CONTINUE);
    expect(record(s, THREE, "M1", HA), ONCE_V_CONTINUE);
    /* A missing or malformed incoming digest never replays. */
    expect(record(s, THREE, "m1", NULL), ONCE_V_IDEMPOTENCY_CONFLICT);
    expect(record(s, THREE, "m1", "aaaa"), ONCE_V_IDEMPOTENCY_CONFLICT);
    expect(record(s, THREE, NULL, NULL), ONCE_V_CONTINUE);
}

static void messageid_with_spaces_and_odd_characters(void **state)
{
    (void)state;
    const char *lines = HA " id with  spaces\n" HB " \t\r\"}\n";
    once_state s = ONCE_STATE_WORKING;
    expect(record(s, lines, "id with  spaces", HA), ONCE_V_REPLAY);
    expect(record(s, lines, "id with  spaces", HB), ONCE_V_IDEMPOTENCY_CONFLICT);
    expect(record(s, lines, "id with spaces", HA), ONCE_V_REJECT_BUSY);
    expect(record(s, lines, "\t\r\"}", HB), ONCE_V_REPLAY);
}

static void malformed_digest_lines_do_not_match(void **state)
{
    (void)state;
    /* Truncated digest, uppercase digest, and a valid last line without '\n'. */
    const char *lines = "aaaa m1\n" "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB m2\n"
                        HC " m3";
    once_state s = ONCE_STATE_INPUT_REQUIRED;
    expect(record(s, lines, "m1", HA), ONCE_V_CONTINUE);
    expect(record(s, lines, "m2", HB), ONCE_V_CONTINUE);
    expect(record(s, lines, "m3", HC), ONCE_V_REPLAY);
    expect(record(s, "\n\n\n", "m1", HA), ONCE_V_CONTINUE);
}

static void record_without_digests_is_new_message(void **state)
{
    (void)state;
    expect(record(ONCE_STATE_INPUT_REQUIRED, NULL, "m1", HA), ONCE_V_CONTINUE);
    expect(record(ONCE_STATE_INPUT_REQUIRED, NULL, NULL, HA), ONCE_V_CONTINUE);
    expect(record(ONCE_STATE_WORKING, "", "m1", HA), ONCE_V_REJECT_BUSY);
}

/* may_register only matters when nothing is stored. */
static void may_register_ignored_once_stored(void **state)
{
    (void)state;
    for (int reg = 0; reg <= 1; reg++) {
        once__decide_in in = {.stored = ONCE_STORED_RECORD, .state = ONCE_STATE_WORKING,
                             .digests = THREE, .may_register = reg,
                             .message_id = "m1", .digest_hex = HA};
        expect(once__decide(&in), ONCE_V_REPLAY);
        in.message_id = "m9";
        expect(once__decide(&in), ONCE_V_REJECT_BUSY);
    }
}

/* ------------------------------------------------------------------------
 * Totality: every combination gets exactly the oracle's verdict.
 */

enum { MATCH_NEW, MATCH_SAME, MATCH_DIFF };

typedef struct scenario {
    const char *digests;
    const char *message_id;
    const char *digest_hex;
    int match;   /* what the incoming message is, by construction */
} scenario;

static const scenario scenarios[] = {
    {THREE, "m2", HB, MATCH_SAME},
    {THREE, "m2", HD, MATCH_DIFF},
    {THREE, "m2", NULL, MATCH_DIFF},
    {THREE, "m9", HB, MATCH_NEW},
    {THREE, NULL, HC, MATCH_SAME},
    {THREE, NULL, HD, MATCH_NEW},
    {THREE, NULL, NULL, MATCH_NEW},
    {HA " \n", NULL, HA, MATCH_SAME},
    {HA " \n", "", HA, MATCH_SAME},
    {HA " \n", "", H0, MATCH_DIFF},
    {NULL, "m1", HA, MATCH_NEW},
    {NULL, NULL, HA, MATCH_NEW},
    {"", "m1", HA, MATCH_NEW},
    {"garbage\n\nzz m1\n", "m1", HA, MATCH_NEW},
    {"garbage\n" HA " m1", "m1", HA, MATCH_SAME},
};

/* docs/design.md section 4 as plain code, from the text rather than the table in
 * decide.c. Inputs outside the design (corrupt stored kind, record in no
 * known state) must be refused without running anything: REJECT_BUSY. */
static once_verdict oracle(int stored, int st, int reg, int match)
{
    if (stored == ONCE_STORED_NONE)
        return reg ? ONCE_V_REGISTER : ONCE_V_TASK_NOT_FOUND;
    if (stored == ONCE_STORED_TOMBSTONE)
        return ONCE_V_TASK_EXPIRED;
    if (stored != ONCE_STORED_RECORD)
        return ONCE_V_REJECT_BUSY;
    if (match == MATCH_SAME)
        return ONCE_V_REPLAY;
    if (match == MATCH_DIFF)
        return ONCE_V_IDEMPOTENCY_CONFLICT;
    switch (st) {
    case 3: case 4:                 /* input-required, auth-required */
        return ONCE_V_CONTINUE;
    case 1: case 2:                 /* submitted, working */
        return ONCE_V_REJECT_BUSY;
    case 5: case 6: case 7: case 8: /* completed failed canceled rejected */
        return ONCE_V_REJECT_TERMINAL;
    default:
        return ONCE_V_REJECT_BUSY;
    }
}

static void decide_is_total_and_matches_oracle(void **state)
{
    (void)state;
    static const int regs[] = {0, 1, 7};
    int seen[ONCE_V_REJECT_TERMINAL + 1] = {0};
    long cases = 0;
    for (int stored = -1; stored <= 3; stored++) {
        for (int st = -1; st <= 9; st++) {
            for (size_t r = 0; r < sizeof regs / sizeof regs[0]; r++) {
                for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++) {
                    const scenario *sc = &scenarios[k];
                    once__decide_in in = {.stored = (once_stored)stored, .state = (once_state)st,
                                         .digests = sc->digests, .may_register = regs[r],
                                         .message_id = sc->message_id,
                                         .digest_hex = sc->digest_hex};
                    once_verdict got = once__decide(&in);
                    once_verdict want = oracle(stored, st, regs[r] != 0, sc->match);
                    if (got != want)
                        fail_msg("stored=%d state=%d reg=%d scenario=%zu: %s, want %s", stored,
                                 st, regs[r], k, once__verdict_name(got), once__verdict_name(want));
                    /* Pure: same input, same answer. */
                    assert_int_equal(once__decide(&in), got);
                    seen[got]++;
                    cases++;
                }
            }
        }
    }
    assert_true(cases > 2000);
    for (int v = ONCE_V_REGISTER; v <= ONCE_V_REJECT_TERMINAL; v++) {
        if (seen[v] == 0)
            fail_msg("verdict %s never produced", once__verdict_name((once_verdict)v));
    }
    expect(once__decide(NULL), ONCE_V_REJECT_BUSY);
}

static void verdict_names(void **state)
{
    (void)state;
    static const char *const want[] = {
        NULL, "REGISTER", "TASK_NOT_FOUND", "TASK_EXPIRED", "REPLAY", "IDEMPOTENCY_CONFLICT",
        "CONTINUE", "REJECT_BUSY", "REJECT_TERMINAL",
    };
    for (int v = ONCE_V_REGISTER; v <= ONCE_V_REJECT_TERMINAL; v++)
        assert_string_equal(once__verdict_name((once_verdict)v), want[v]);
    assert_string_equal(once__verdict_name((once_verdict)0), "UNKNOWN");
    assert_string_equal(once__verdict_name((once_verdict)99), "UNKNOWN");
    assert_string_equal(once__verdict_name((once_verdict)-1), "UNKNOWN");
}

/* The outcome each verdict puts in a request's log line (log scrapers read
 * these words). */
static void verdict_outcomes(void **state)
{
    (void)state;
    static const char *const want[] = {
        NULL, "registered", "refused:task_not_found", "refused:task_expired", "replayed",
        "refused:idempotency_conflict", "continued", "refused:task_busy",
        "refused:task_terminal",
    };
    for (int v = ONCE_V_REGISTER; v <= ONCE_V_REJECT_TERMINAL; v++)
        assert_string_equal(once__verdict_outcome((once_verdict)v), want[v]);
    assert_null(once__verdict_outcome((once_verdict)0));
    assert_null(once__verdict_outcome((once_verdict)99));
    assert_null(once__verdict_outcome((once_verdict)-1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_none_first_message_registers),
        cmocka_unit_test(row_none_unknown_task_id_not_found),
        cmocka_unit_test(row_tombstone_anything_expired),
        cmocka_unit_test(row_record_same_message_same_digest_replays),
        cmocka_unit_test(row_record_same_message_different_digest_conflicts),
        cmocka_unit_test(row_record_interrupted_new_message_continues),
        cmocka_unit_test(row_record_busy_new_message_rejects),
        cmocka_unit_test(row_record_terminal_new_message_rejects_terminal),
        cmocka_unit_test(v01_equal_digest_replays_after_later_messages),
        cmocka_unit_test(v01_new_digest_on_input_required_continues),
        cmocka_unit_test(v01_new_digest_on_working_rejects_busy),
        cmocka_unit_test(v01_never_conflicts),
        cmocka_unit_test(conflict_vs_replay_among_several_messages),
        cmocka_unit_test(messageid_with_spaces_and_odd_characters),
        cmocka_unit_test(malformed_digest_lines_do_not_match),
        cmocka_unit_test(record_without_digests_is_new_message),
        cmocka_unit_test(may_register_ignored_once_stored),
        cmocka_unit_test(decide_is_total_and_matches_oracle),
        cmocka_unit_test(verdict_names),
        cmocka_unit_test(verdict_outcomes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
