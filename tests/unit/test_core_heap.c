/*
 * test_core_heap.c -- the intrusive min-heap (src/core/heap.c): elements
 * come out in key order whatever order they went in, an element removed
 * from the middle never comes out, a key changed and fixed moves its
 * element (to the top and down again), every node's index stays its place
 * in the array, and an empty heap has no top.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/heap.h"

#define N 257

/* Every node's index is its place; every parent's key <= its children's. */
static void check_shape(const once__heap *h)
{
    for (size_t i = 0; i < h->n; i++) {
        assert_int_equal(h->v[i]->at, i);
        if (i > 0)
            assert_true(h->v[(i - 1) / 2]->key <= h->v[i]->key);
    }
}

static void test_order_remove_fix(void **state)
{
    (void)state;
    once__heap h = {0};
    once__heap_node nodes[N];
    assert_null(once__heap_top(&h));
    for (size_t i = 0; i < N; i++) {
        nodes[i].key = (int64_t)((i * 7919) % N);   /* a permutation of 0..N-1 */
        assert_int_equal(once__heap_add(&h, &nodes[i]), 0);
    }
    check_shape(&h);
    /* Remove the nodes with keys 10..19 from wherever they sit. */
    for (size_t i = 0; i < N; i++)
        if (nodes[i].key >= 10 && nodes[i].key < 20)
            once__heap_remove(&h, &nodes[i]);
    check_shape(&h);
    /* Key 100 becomes -1 (the top), key 0 becomes 1000 (the bottom). */
    for (size_t i = 0; i < N; i++) {
        if (nodes[i].key == 100) {
            nodes[i].key = -1;
            once__heap_fix(&h, &nodes[i]);
        } else if (nodes[i].key == 0) {
            nodes[i].key = 1000;
            once__heap_fix(&h, &nodes[i]);
        }
    }
    check_shape(&h);
    assert_int_equal(once__heap_top(&h)->key, -1);
    int64_t last = -2;
    size_t out = 0;
    once__heap_node *top;
    while ((top = once__heap_top(&h)) != NULL) {
        assert_true(top->key > last);
        assert_false(top->key >= 10 && top->key < 20);
        last = top->key;
        once__heap_remove(&h, top);
        out++;
    }
    assert_int_equal(out, N - 10);
    assert_int_equal(last, 1000);
    once__heap_clear(&h);
    assert_int_equal(h.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_remove_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
