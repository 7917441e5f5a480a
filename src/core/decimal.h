/*
 * decimal.h -- unsigned decimal numbers as peers and users write them in
 * headers, ids and URLs (not API): ASCII digits only, no sign, no blanks,
 * and few enough digits that no arithmetic can overflow. Pure functions.
 */
#ifndef ONCE_CORE_DECIMAL_H
#define ONCE_CORE_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* s[0..n) as 1..18 decimal digits (18 always fit an int64_t): 1 and *out,
 * else 0 with *out untouched. */
int once__decimal(const char *s, size_t n, int64_t *out);

#endif /* ONCE_CORE_DECIMAL_H */
