/*
 * decimal.c -- see decimal.h.
 */
#include "core/decimal.h"

int once__decimal(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;

    if (n == 0 || n > 18)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}
