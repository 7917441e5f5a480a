/*
 * test_store_mem.h -- what the memory store's unit tests share
 * (test_store_mem.c, test_store_mem_cold.c): a fresh store, its integrity
 * check, and the allocation-fault sweep (STYLE: fail the i-th allocation,
 * i = 0, 1, ... until a run hits no fault).
 */
#ifndef ONCE_TESTS_STORE_MEM_H
#define ONCE_TESTS_STORE_MEM_H

#include "core/alloc_int.h"
#include "store/mem.h"
#include "store/util.h"

static ST_UNUSED once_store *open_mem(void)
{
    once_store *s = NULL;
    char err[256];
    assert_int_equal(once_store_open("memory:", NULL, &s, err, sizeof err), ONCE_OK);
    return s;
}

static ST_UNUSED void assert_clean(once_store *s)
{
    once_check_report rep;
    assert_int_equal(once_store_check(s, &rep), ONCE_OK);
    if (!st_clean(&rep))
        fail_msg("check: %s", rep.first_problem);
}

/* Every call made under fault injection ends in its normal answer or
 * ONCE_ENOMEM (nothing else). */
static ST_UNUSED void ok_or_oom(int rc, int normal)
{
    if (rc != normal && rc != ONCE_ENOMEM)
        fail_msg("got %s", once_errname(rc));
}

/* run(i) with allocation i failing, for i = 0, 1, ... until a run returns
 * 1 (it hit no fault); more than min_faults runs must have hit one. */
static ST_UNUSED void fault_sweep(int (*run)(long i), long min_faults)
{
    long i;
    for (i = 0; i < 1000 && !run(i); i++)
        ;
    assert_true(i > min_faults);   /* faults were hit along the way */
    assert_true(i < 1000);         /* and a run got through without one */
}

#endif /* ONCE_TESTS_STORE_MEM_H */
