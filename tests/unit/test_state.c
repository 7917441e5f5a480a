/*
 * test_state.c -- task state names, predicates, the transition matrix, and
 * the digest-line helpers the registry stores per task.
 *
 * The expected transitions are written here as a plain list of legal pairs,
 * independently of the table in src/core/state.c, and the test walks every
 * (from, to) pair (plus out-of-range values) against it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "core/decide.h"

#define S_UNK ONCE_STATE_UNKNOWN
#define S_SUB ONCE_STATE_SUBMITTED
#define S_WRK ONCE_STATE_WORKING
#define S_INP ONCE_STATE_INPUT_REQUIRED
#define S_AUT ONCE_STATE_AUTH_REQUIRED
#define S_CMP ONCE_STATE_COMPLETED
#define S_FAI ONCE_STATE_FAILED
#define S_CAN ONCE_STATE_CANCELED
#define S_REJ ONCE_STATE_REJECTED

/* Every legal transition; anything not listed must be refused. */
static const struct { once_state from, to; } expected_legal[] = {
    /* creation */
    {S_UNK, S_SUB}, {S_UNK, S_WRK},
    /* submitted: picked up, or ends/parks straight away */
    {S_SUB, S_WRK}, {S_SUB, S_INP}, {S_SUB, S_AUT}, {S_SUB, S_CMP},
    {S_SUB, S_FAI}, {S_SUB, S_CAN}, {S_SUB, S_REJ},
    /* working: progress update, park, or end */
    {S_WRK, S_WRK}, {S_WRK, S_INP}, {S_WRK, S_AUT}, {S_WRK, S_CMP},
    {S_WRK, S_FAI}, {S_WRK, S_CAN}, {S_WRK, S_REJ},
    /* interrupted: continuation (run or re-queued), cancel, fail */
    {S_INP, S_WRK}, {S_INP, S_SUB}, {S_INP, S_CAN}, {S_INP, S_FAI},
    {S_AUT, S_WRK}, {S_AUT, S_SUB}, {S_AUT, S_CAN}, {S_AUT, S_FAI},
};

static int listed(int from, int to)
{
    for (size_t i = 0; i < sizeof expected_legal / sizeof expected_legal[0]; i++) {
        if ((int)expected_legal[i].from == from && (int)expected_legal[i].to == to)
            return 1;
    }
    return 0;
}

static void transition_matrix_matches_expected_list(void **state)
{
    (void)state;
    int legal_seen = 0;
    /* -1 and 9..10 are outside the enum: always illegal, never a crash. */
    for (int from = -1; from <= 10; from++) {
        for (int to = -1; to <= 10; to++) {
            int want = listed(from, to);
            int got = once__transition_ok((once_state)from, (once_state)to);
            if (got != want)
                fail_msg("transition %d -> %d: got %d, want %d", from, to, got, want);
            assert_int_equal(once__transition((once_state)from, (once_state)to),
                             want ? ONCE_OK : ONCE_EILLEGAL);
            legal_seen += got;
        }
    }
    assert_int_equal(legal_seen, (int)(sizeof expected_legal / sizeof expected_legal[0]));
}

static void terminal_states_have_no_exit(void **state)
{
    (void)state;
    for (int from = 0; from <= 8; from++) {
        if (!once_state_terminal((once_state)from))
            continue;
        for (int to = 0; to <= 8; to++)
            assert_int_equal(once__transition((once_state)from, (once_state)to), ONCE_EILLEGAL);
    }
}

static void nothing_moves_back_to_unknown(void **state)
{
    (void)state;
    for (int from = 0; from <= 8; from++)
        assert_false(once__transition_ok((once_state)from, S_UNK));
}

static void state_names_are_the_a2a_1_0_names(void **state)
{
    (void)state;
    static const struct { once_state s; const char *name; const char *legacy; } want[] = {
        {S_SUB, "TASK_STATE_SUBMITTED", "submitted"},
        {S_WRK, "TASK_STATE_WORKING", "working"},
        {S_INP, "TASK_STATE_INPUT_REQUIRED", "input-required"},
        {S_AUT, "TASK_STATE_AUTH_REQUIRED", "auth-required"},
        {S_CMP, "TASK_STATE_COMPLETED", "completed"},
        {S_FAI, "TASK_STATE_FAILED", "failed"},
        {S_CAN, "TASK_STATE_CANCELED", "canceled"},
        {S_REJ, "TASK_STATE_REJECTED", "rejected"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(once_state_name(want[i].s), want[i].name);
        assert_int_equal(once_state_parse(want[i].name), want[i].s);
        assert_int_equal(once_state_parse(want[i].legacy), want[i].s);
    }
    assert_string_equal(once_state_name(S_UNK), "TASK_STATE_UNSPECIFIED");
    assert_string_equal(once_state_name((once_state)9), "TASK_STATE_UNSPECIFIED");
    assert_string_equal(once_state_name((once_state)-1), "TASK_STATE_UNSPECIFIED");
}

static void state_names_round_trip(void **state)
{
    (void)state;
    for (int s = 0; s <= 8; s++)
        assert_int_equal(once_state_parse(once_state_name((once_state)s)), s);
    /* Names are distinct, so parse cannot confuse two states. */
    for (int a = 0; a <= 8; a++) {
        for (int b = a + 1; b <= 8; b++)
            assert_string_not_equal(once_state_name((once_state)a), once_state_name((once_state)b));
    }
}

static void unrecognised_names_parse_as_unknown(void **state)
{
    (void)state;
    static const char *const bad[] = {
        NULL, "", "WORKING", "Working", "TASK_STATE_working", "task_state_working",
        "TASK_STATE_WORKING ", " working", "input_required", "INPUT-REQUIRED", "cancelled",
        "TASK_STATE_CANCELLED", "TASK_STATE_", "TASK_STATE_WORKINGX", "done",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(once_state_parse(bad[i]), S_UNK);
    assert_int_equal(once_state_parse("TASK_STATE_UNSPECIFIED"), S_UNK);
}

static void terminal_and_interrupted_predicates(void **state)
{
    (void)state;
    /* index: state -1..9 */
    static const int terminal[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0};
    static const int interrupted[] = {0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0};
    for (int s = -1; s <= 9; s++) {
        assert_int_equal(!!once_state_terminal((once_state)s), terminal[s + 1]);
        assert_int_equal(!!once_state_interrupted((once_state)s), interrupted[s + 1]);
    }
}

/* ------------------------------------------------------------------------
 * Digest lines.
 */

/* 64 copies of c: a well-formed digest when c is lowercase hex. */
static const char *hex64(char c, char buf[ONCE_DIGEST_HEX + 1])
{
    memset(buf, c, ONCE_DIGEST_HEX);
    buf[ONCE_DIGEST_HEX] = '\0';
    return buf;
}

static void append_builds_exact_lines(void **state)
{
    (void)state;
    char a[65], b[65], c[65], want[512];
    hex64('a', a);
    hex64('b', b);
    hex64('0', c);
    char *lines = NULL;
    assert_int_equal(once__digests_append(&lines, a, "m1"), ONCE_OK);
    assert_int_equal(once__digests_append(&lines, b, "with space\tand\rcr"), ONCE_OK);
    assert_int_equal(once__digests_append(&lines, c, NULL), ONCE_OK);   /* 0.1: no messageId */
    snprintf(want, sizeof want, "%s m1\n%s with space\tand\rcr\n%s \n", a, b, c);
    assert_string_equal(lines, want);
    once_free(lines);
}

static void append_rejects_bad_input_and_keeps_lines(void **state)
{
    (void)state;
    char a[65], up[65], want[128];
    hex64('a', a);
    hex64('A', up);
    char *lines = NULL;
    assert_int_equal(once__digests_append(&lines, a, "m1"), ONCE_OK);
    snprintf(want, sizeof want, "%s m1\n", a);

    char longer[66];
    memset(longer, 'a', 65);
    longer[65] = '\0';
    assert_int_equal(once__digests_append(&lines, up, "m2"), ONCE_EINVAL);
    assert_int_equal(once__digests_append(&lines, "abc", "m2"), ONCE_EINVAL);
    assert_int_equal(once__digests_append(&lines, longer, "m2"), ONCE_EINVAL);
    assert_int_equal(once__digests_append(&lines, NULL, "m2"), ONCE_EINVAL);
    assert_int_equal(once__digests_append(&lines, a, "two\nlines"), ONCE_EINVAL);
    assert_int_equal(once__digests_append(NULL, a, "m2"), ONCE_EINVAL);
    assert_string_equal(lines, want);
    once_free(lines);
}

static void append_out_of_memory_keeps_lines(void **state)
{
    (void)state;
    char a[65], b[65], want[128];
    hex64('a', a);
    hex64('b', b);
    char *lines = NULL;
    assert_int_equal(once__digests_append(&lines, a, "m1"), ONCE_OK);
    char *before = lines;
    once__alloc_fail_after(0);
    int rc = once__digests_append(&lines, b, "m2");
    once__alloc_fail_after(-1);
    assert_int_equal(rc, ONCE_ENOMEM);
    assert_ptr_equal(lines, before);
    snprintf(want, sizeof want, "%s m1\n", a);
    assert_string_equal(lines, want);
    once_free(lines);
}

static void append_after_truncated_line_starts_a_new_line(void **state)
{
    (void)state;
    char a[65], b[65], want[256];
    hex64('a', a);
    hex64('b', b);
    char *lines = once_strdup("");
    assert_non_null(lines);
    assert_int_equal(once__digests_append(&lines, a, "m1"), ONCE_OK);
    lines[strlen(lines) - 1] = '\0';   /* lose the trailing newline */
    assert_int_equal(once__digests_append(&lines, b, "m2"), ONCE_OK);
    snprintf(want, sizeof want, "%s m1\n%s m2\n", a, b);
    assert_string_equal(lines, want);
    const char *d = NULL;
    assert_true(once__digests_find_id(lines, "m1", &d));
    assert_memory_equal(d, a, 64);
    once_free(lines);
}

static void find_id_matches_whole_message_ids_only(void **state)
{
    (void)state;
    char a[65], b[65], c[65], lines[512];
    hex64('a', a);
    hex64('b', b);
    hex64('c', c);
    snprintf(lines, sizeof lines, "%s m\n%s m 1\n%s \n", a, b, c);
    const char *d = NULL;
    assert_true(once__digests_find_id(lines, "m", &d));
    assert_memory_equal(d, a, 64);
    assert_ptr_equal(d, lines);                 /* points into lines */
    assert_true(once__digests_find_id(lines, "m 1", &d));
    assert_memory_equal(d, b, 64);
    assert_true(once__digests_find_id(lines, "", &d));   /* the 0.1 line */
    assert_memory_equal(d, c, 64);
    d = NULL;
    assert_false(once__digests_find_id(lines, "m ", &d));
    assert_false(once__digests_find_id(lines, "m 1 ", &d));
    assert_false(once__digests_find_id(lines, "M", &d));
    assert_false(once__digests_find_id(lines, "m1", &d));
    assert_null(d);                              /* untouched when not found */
    assert_false(once__digests_find_id(lines, NULL, &d));
    assert_false(once__digests_find_id(NULL, "m", &d));
    assert_false(once__digests_find_id("", "m", &d));
    assert_true(once__digests_find_id(lines, "m", NULL));   /* out pointer optional */
}

static void has_and_first(void **state)
{
    (void)state;
    char a[65], b[65], z[65], out[65], lines[512];
    hex64('a', a);
    hex64('b', b);
    hex64('9', z);
    snprintf(lines, sizeof lines, "%s m1\n%s m2\n", a, b);
    assert_true(once__digests_has(lines, a));
    assert_true(once__digests_has(lines, b));
    assert_false(once__digests_has(lines, z));
    assert_false(once__digests_has(NULL, a));
    assert_false(once__digests_has("", a));
    assert_false(once__digests_has(lines, NULL));
    /* A prefix of a stored digest is not that digest. */
    assert_false(once__digests_has(lines, "aaaa"));
    once__digests_first(lines, out);
    assert_string_equal(out, a);
    memset(out, 'x', sizeof out);
    once__digests_first("", out);
    assert_string_equal(out, "");
    memset(out, 'x', sizeof out);
    once__digests_first(NULL, out);
    assert_string_equal(out, "");
}

static void malformed_lines_are_skipped(void **state)
{
    (void)state;
    char good[65], up[65], other[65], out[65], lines[1024];
    hex64('d', good);
    hex64('F', up);
    hex64('e', other);
    /* In order: empty line, short digest, uppercase digest, no separator,
     * non-hex char, tab instead of space, digest with no ' ' at all, then one
     * good line, then a good last line missing its newline. */
    snprintf(lines, sizeof lines,
             "\n"
             "abc m0\n"
             "%s up\n"
             "%sxnosep\n"
             "g%.63s bad\n"
             "%s\ttab\n"
             "%s\n"
             "%s ok\n"
             "%s last",
             up, other, good, other, other, good, other);
    assert_false(once__digests_find_id(lines, "m0", NULL));
    assert_false(once__digests_find_id(lines, "up", NULL));
    assert_false(once__digests_find_id(lines, "nosep", NULL));
    assert_false(once__digests_find_id(lines, "xnosep", NULL));
    assert_false(once__digests_find_id(lines, "bad", NULL));
    assert_false(once__digests_find_id(lines, "tab", NULL));
    const char *d = NULL;
    assert_true(once__digests_find_id(lines, "ok", &d));
    assert_memory_equal(d, good, 64);
    assert_true(once__digests_find_id(lines, "last", &d));
    assert_memory_equal(d, other, 64);
    once__digests_first(lines, out);
    assert_string_equal(out, good);   /* the first well-formed line */

    /* Nothing but garbage, including a line that is exactly 64 hex chars. */
    snprintf(lines, sizeof lines, "%s\n\n\nxyz\n%.40s", other, other);
    once__digests_first(lines, out);
    assert_string_equal(out, "");
    assert_false(once__digests_has(lines, other));
    assert_false(once__digests_find_id(lines, "", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transition_matrix_matches_expected_list),
        cmocka_unit_test(terminal_states_have_no_exit),
        cmocka_unit_test(nothing_moves_back_to_unknown),
        cmocka_unit_test(state_names_are_the_a2a_1_0_names),
        cmocka_unit_test(state_names_round_trip),
        cmocka_unit_test(unrecognised_names_parse_as_unknown),
        cmocka_unit_test(terminal_and_interrupted_predicates),
        cmocka_unit_test(append_builds_exact_lines),
        cmocka_unit_test(append_rejects_bad_input_and_keeps_lines),
        cmocka_unit_test(append_out_of_memory_keeps_lines),
        cmocka_unit_test(append_after_truncated_line_starts_a_new_line),
        cmocka_unit_test(find_id_matches_whole_message_ids_only),
        cmocka_unit_test(has_and_first),
        cmocka_unit_test(malformed_lines_are_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
