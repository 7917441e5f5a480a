/*
 * test_alloc.c -- allocator hooks route every allocation (jansson's too),
 * NULL restores libc, the fault-injection hook fails exactly the requested
 * allocation (also with concurrent allocators), and the string helpers
 * behave.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "core/jcs.h"
#include "once/once.h"

/* Counters for the test allocator; single-threaded tests only. */
static int n_malloc, n_calloc, n_realloc, n_free;

static void *t_malloc(size_t n)
{
    n_malloc++;
    return malloc(n);
}
static void *t_calloc(size_t a, size_t b)
{
    n_calloc++;
    return calloc(a, b);
}
static void *t_realloc(void *p, size_t n)
{
    n_realloc++;
    return realloc(p, n);
}
static void t_free(void *p)
{
    n_free++;
    free(p);
}

static int reset(void **state)
{
    (void)state;
    once_set_allocator(NULL);
    once__alloc_fail_after(-1);
    n_malloc = n_calloc = n_realloc = n_free = 0;
    return 0;
}

static void test_hooks_route(void **state)
{
    (void)state;
    const once_allocator a = {t_malloc, t_calloc, t_realloc, t_free};
    once_set_allocator(&a);

    void *p = once_malloc(10);
    assert_non_null(p);
    assert_int_equal(n_malloc, 1);
    p = once_realloc(p, 100);
    assert_non_null(p);
    assert_int_equal(n_realloc, 1);
    once_free(p);
    assert_int_equal(n_free, 1);

    unsigned char *z = once_calloc(4, 8);
    assert_non_null(z);
    assert_int_equal(n_calloc, 1);
    for (int i = 0; i < 32; i++)
        assert_int_equal(z[i], 0);
    once_free(z);

    char *s = once_strdup("hello");
    assert_string_equal(s, "hello");
    assert_int_equal(n_malloc, 2);
    once_free(s);
    s = once_strndup("hello", 3);
    assert_string_equal(s, "hel");
    assert_int_equal(n_malloc, 3);
    once_free(s);
    assert_int_equal(n_free, 4);

    once_free(NULL); /* no-op: must not reach the hook */
    assert_int_equal(n_free, 4);

    once_set_allocator(NULL);
    p = once_malloc(10);
    assert_non_null(p);
    once_free(p);
    assert_int_equal(n_malloc, 3);
    assert_int_equal(n_free, 4);
}

/* jansson allocates through the same hooks: JSON values, parses and the
 * text json_dumps returns (a once_malloc block, freed with once_free). */
static void test_hooks_route_json(void **state)
{
    (void)state;
    const once_allocator a = {t_malloc, t_calloc, t_realloc, t_free};
    once_set_allocator(&a);
    json_t *v = json_pack("{s:s, s:[i, i]}", "name", "a value", "list", 1, 2);
    assert_non_null(v);
    assert_true(n_malloc > 0);
    char *text = json_dumps(v, JSON_COMPACT);
    assert_non_null(text);
    once_free(text);
    json_decref(v);
    json_t *p = NULL;
    assert_int_equal(once__json_loads("{\"k\":[1,\"two\"]}", 0, &p, NULL), ONCE_OK);
    json_decref(p);
    once_set_allocator(NULL);
    assert_int_equal(n_free, n_malloc); /* every block came back to the hooks */
}

static void test_calloc_without_hook_zeroes(void **state)
{
    (void)state;
    /* A hook table without calloc_fn falls back to malloc + zeroing. */
    const once_allocator a = {t_malloc, NULL, t_realloc, t_free};
    once_set_allocator(&a);
    unsigned char *z = once_calloc(3, 5);
    assert_non_null(z);
    assert_int_equal(n_malloc, 1);
    for (int i = 0; i < 15; i++)
        assert_int_equal(z[i], 0);
    once_free(z);
}

static void test_edge_sizes(void **state)
{
    (void)state;
    /* NULL always means failure, so zero-size requests must succeed. */
    void *p = once_malloc(0);
    assert_non_null(p);
    p = once_realloc(p, 0);
    assert_non_null(p);
    once_free(p);
    p = once_calloc(0, 8);
    assert_non_null(p);
    once_free(p);
    /* Overflowing calloc must fail, not wrap to a small block. */
    assert_null(once_calloc(SIZE_MAX / 2, 4));
}

static void test_strdup(void **state)
{
    (void)state;
    assert_null(once_strdup(NULL));
    assert_null(once_strndup(NULL, 5));
    char *s = once_strdup("");
    assert_string_equal(s, "");
    once_free(s);
    s = once_strndup("abc", 10); /* n past the end reads only to the NUL */
    assert_string_equal(s, "abc");
    once_free(s);
    s = once_strndup("abc", 0);
    assert_string_equal(s, "");
    once_free(s);
}

static void test_fail_after(void **state)
{
    (void)state;
    once__alloc_fail_after(0);
    assert_null(once_malloc(8)); /* the very next allocation fails */
    void *p = once_malloc(8);    /* one-shot: the following succeeds */
    assert_non_null(p);
    once_free(p);
    assert_int_equal(once__alloc_count(), 2);

    once__alloc_fail_after(2);
    void *a = once_malloc(1);
    char *b = once_strdup("x");
    assert_non_null(a);
    assert_non_null(b);
    void *c = once_realloc(a, 64);
    assert_null(c); /* third allocation: realloc fails, a is still ours */
    assert_int_equal(once__alloc_count(), 3);
    once_free(a);
    once_free(b);

    once__alloc_fail_after(0);
    assert_null(once_calloc(2, 2));
    once__alloc_fail_after(0);
    assert_null(once_strdup("abc"));
    once__alloc_fail_after(0);
    assert_null(once_strndup("abc", 2));

    once__alloc_fail_after(-1);
    for (int i = 0; i < 100; i++) {
        p = once_malloc(4);
        assert_non_null(p);
        once_free(p);
    }
    assert_int_equal(once__alloc_count(), 100);
}

/* A sweep as the fault tests run it: count, then fail each index once. */
static int three_allocs(void)
{
    char *a = once_strdup("a"), *b = once_malloc(4), *c = once_calloc(1, 4);
    int ok = a && b && c;
    once_free(a);
    once_free(b);
    once_free(c);
    return ok;
}

static void test_sweep(void **state)
{
    (void)state;
    once__alloc_fail_after(-1);
    assert_true(three_allocs());
    long n = once__alloc_count();
    assert_int_equal(n, 3);
    for (long i = 0; i < n; i++) {
        once__alloc_fail_after(i);
        assert_false(three_allocs());
    }
    once__alloc_fail_after(n);
    assert_true(three_allocs());
}

#define THREADS 4
#define PER_THREAD 5000

static void *alloc_worker(void *arg)
{
    long *failures = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        void *p = once_malloc(16);
        if (p == NULL)
            (*failures)++;
        once_free(p);
    }
    return NULL;
}

static void test_fail_after_threads(void **state)
{
    (void)state;
    pthread_t th[THREADS];
    long failures[THREADS] = {0};
    once__alloc_fail_after(7777);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, alloc_worker, &failures[i]), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += failures[i];
    /* Exactly one allocation failed and none was lost from the count. */
    assert_int_equal(total, 1);
    assert_int_equal(once__alloc_count(), THREADS * PER_THREAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hooks_route, reset, reset),
        cmocka_unit_test_setup_teardown(test_hooks_route_json, reset, reset),
        cmocka_unit_test_setup_teardown(test_calloc_without_hook_zeroes, reset, reset),
        cmocka_unit_test_setup_teardown(test_edge_sizes, reset, reset),
        cmocka_unit_test_setup_teardown(test_strdup, reset, reset),
        cmocka_unit_test_setup_teardown(test_fail_after, reset, reset),
        cmocka_unit_test_setup_teardown(test_sweep, reset, reset),
        cmocka_unit_test_setup_teardown(test_fail_after_threads, reset, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
