/*
 * test_grow.c -- the growing byte blocks behind response bodies, SSE frames
 * and metric text (src/core/grow.c): sizes double from the first size and
 * stop at the caller's limit, no size arithmetic wraps, a text stays
 * NUL-terminated, appends cost a logarithmic number of allocations, and a
 * failed allocation leaves the block as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "core/grow.h"
#include "once/once.h"

static void size_doubles_from_first(void **state)
{
    (void)state;
    assert_int_equal(once__grow_size(0, 1, 256, SIZE_MAX), 256);
    assert_int_equal(once__grow_size(0, 257, 256, SIZE_MAX), 512);
    assert_int_equal(once__grow_size(512, 513, 256, SIZE_MAX), 1024);
    assert_int_equal(once__grow_size(512, 4000, 256, SIZE_MAX), 4096);
    /* A block that already holds need keeps its size. */
    assert_int_equal(once__grow_size(1024, 1024, 256, SIZE_MAX), 1024);
    /* A first size of 0 still grows. */
    assert_int_equal(once__grow_size(0, 3, 0, SIZE_MAX), 4);
}

static void size_stops_at_max(void **state)
{
    (void)state;
    /* Doubling 4096 would give 8192; the limit is 5001 (a body cap + NUL). */
    assert_int_equal(once__grow_size(4096, 5000, 4096, 5001), 5001);
    /* A need past the limit gets the need: the caller decides about it. */
    assert_int_equal(once__grow_size(4096, 9000, 4096, 5001), 9000);
}

static void size_never_wraps(void **state)
{
    (void)state;
    size_t big = SIZE_MAX / 2 + 2;
    /* 2 * (SIZE_MAX/2 + 1) wraps to 0: the answer is exactly the need. */
    assert_int_equal(once__grow_size(SIZE_MAX / 2 + 1, big, 1, SIZE_MAX), big);
    assert_true(once__grow_size(3, SIZE_MAX, 3, SIZE_MAX) == SIZE_MAX);
}

static void text_appends_keep_a_c_string(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(once__text_append(&buf, &len, &cap, 4, "abc", 3), ONCE_OK);
    assert_string_equal(buf, "abc");
    assert_int_equal(cap, 4);
    assert_int_equal(once__text_append(&buf, &len, &cap, 4, "defgh", 5), ONCE_OK);
    assert_string_equal(buf, "abcdefgh");
    assert_int_equal(len, 8);
    assert_int_equal(cap, 16);
    /* An empty append still leaves a terminated (empty) text. */
    char *e = NULL;
    size_t elen = 0, ecap = 0;
    assert_int_equal(once__text_append(&e, &elen, &ecap, 8, "", 0), ONCE_OK);
    assert_string_equal(e, "");
    once_free(e);
    once_free(buf);
}

static void appends_cost_log_allocations(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    once__alloc_fail_after(-1);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(once__text_append(&buf, &len, &cap, 64, "x", 1), ONCE_OK);
    /* 64 .. 131072: 12 sizes, one allocation each. */
    assert_int_equal(once__alloc_count(), 12);
    assert_int_equal(len, 100000);
    assert_int_equal(strspn(buf, "x"), 100000);
    once_free(buf);
}

static void failed_growth_leaves_the_text(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(once__text_append(&buf, &len, &cap, 4, "abc", 3), ONCE_OK);
    char *before = buf;
    once__alloc_fail_after(0);
    assert_int_equal(once__text_append(&buf, &len, &cap, 4, "defg", 4), ONCE_ENOMEM);
    once__alloc_fail_after(-1);
    assert_ptr_equal(buf, before);
    assert_int_equal(len, 3);
    assert_int_equal(cap, 4);
    assert_string_equal(buf, "abc");
    /* grow_to: same promise, and no allocation when the block is large enough. */
    once__alloc_fail_after(0);
    assert_int_equal(once__grow_to(&buf, &cap, 4), ONCE_OK);
    assert_int_equal(once__grow_to(&buf, &cap, 5), ONCE_ENOMEM);
    once__alloc_fail_after(-1);
    assert_int_equal(cap, 4);
    /* A length that would wrap is refused before any allocation. */
    size_t huge = SIZE_MAX - 1;
    assert_int_equal(once__text_append(&buf, &huge, &cap, 4, "ab", 2), ONCE_ENOMEM);
    once_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_doubles_from_first),
        cmocka_unit_test(size_stops_at_max),
        cmocka_unit_test(size_never_wraps),
        cmocka_unit_test(text_appends_keep_a_c_string),
        cmocka_unit_test(appends_cost_log_allocations),
        cmocka_unit_test(failed_growth_leaves_the_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
