/*
 * test_list.c -- the age list (src/core/list.c): links come back in the
 * order they were appended, and unlinking the head, the tail, a middle link
 * or the only one leaves the rest in order with both ends right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/list.h"

/* The list head to tail must be want[0..n), and tail to head its reverse. */
static void assert_order(const once__list *q, once__link *const *want, size_t n)
{
    size_t i = 0;
    for (const once__link *l = q->head; l != NULL; l = l->next, i++) {
        assert_true(i < n);
        assert_ptr_equal(l, want[i]);
    }
    assert_int_equal(i, n);
    for (const once__link *l = q->tail; l != NULL; l = l->prev) {
        assert_true(i > 0);
        assert_ptr_equal(l, want[--i]);
    }
    assert_int_equal(i, 0);
}

static void appends_keep_arrival_order(void **state)
{
    (void)state;
    once__list q = {0};
    once__link a, b, c;
    assert_order(&q, NULL, 0);
    once__list_append(&q, &a);
    assert_order(&q, (once__link *[]){&a}, 1);
    once__list_append(&q, &b);
    once__list_append(&q, &c);
    assert_order(&q, (once__link *[]){&a, &b, &c}, 3);
}

static void unlink_any_place(void **state)
{
    (void)state;
    once__list q = {0};
    once__link a, b, c, d;
    once__list_append(&q, &a);
    once__list_append(&q, &b);
    once__list_append(&q, &c);
    once__list_append(&q, &d);
    once__list_unlink(&q, &b); /* a middle one */
    assert_order(&q, (once__link *[]){&a, &c, &d}, 3);
    assert_null(b.prev);
    assert_null(b.next);
    once__list_unlink(&q, &a); /* the head */
    assert_order(&q, (once__link *[]){&c, &d}, 2);
    once__list_unlink(&q, &d); /* the tail */
    assert_order(&q, (once__link *[]){&c}, 1);
    once__list_unlink(&q, &c); /* the only one */
    assert_order(&q, NULL, 0);
    /* An unlinked link joins again as the newest. */
    once__list_append(&q, &b);
    once__list_append(&q, &a);
    assert_order(&q, (once__link *[]){&b, &a}, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_keep_arrival_order),
        cmocka_unit_test(unlink_any_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
