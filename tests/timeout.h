/*
 * timeout.h -- the suite's one timeout factor, for the C test programs.
 *
 * A test waits for conditions, never for durations; a timeout is only the
 * bound after which a condition that never came true is a failure. Every such
 * bound is multiplied by ONCE_TEST_TIMEOUT_FACTOR (ctest sets it: 1 in the
 * normal build, more under the sanitizers; a slow machine can raise it), the
 * same factor tests/e2e/harness.py applies. Header-only and assert-free, so it
 * is safe in threads and forked children.
 */
#ifndef ONCE_TESTS_TIMEOUT_H
#define ONCE_TESTS_TIMEOUT_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "once/once.h"

#define TT_UNUSED __attribute__((unused))

/* ONCE_TEST_TIMEOUT_FACTOR, or 1 when unset or not a positive number. */
TT_UNUSED static double tt_factor(void)
{
    const char *v = getenv("ONCE_TEST_TIMEOUT_FACTOR");
    char *end;
    double f;

    if (!v || !v[0])
        return 1.0;
    f = strtod(v, &end);
    return (end != v && f > 0) ? f : 1.0;
}

/* ms, multiplied by the factor. */
TT_UNUSED static int64_t tt_ms(int64_t ms)
{
    return (int64_t)((double)ms * tt_factor() + 0.5);
}

/* Sleep about ms (a polling step, never something an assertion relies on). */
TT_UNUSED static void tt_nap_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Poll cond(arg) every millisecond or so until it returns non-zero (then 1)
 * or tt_ms(timeout_ms) have passed (then 0). */
TT_UNUSED static int tt_wait_until(int (*cond)(void *), void *arg, int64_t timeout_ms)
{
    int64_t until = once_monotonic_ms() + tt_ms(timeout_ms);

    for (;;) {
        if (cond(arg))
            return 1;
        if (once_monotonic_ms() >= until)
            return 0;
        tt_nap_ms(1);
    }
}

#endif
