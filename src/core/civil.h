/*
 * civil.h -- the calendar arithmetic behind the dates once reads: RFC 3339
 * timestamps in A2A requests (src/a2a/validate.c) and IMF-fixdates in
 * Retry-After (core/backoff.c). clock.c, which writes RFC 3339, holds it.
 * Pure functions.
 */
#ifndef ONCE_CORE_CIVIL_H
#define ONCE_CORE_CIVIL_H

#include <stdint.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (y, m 1..12, d). */
int64_t once__days_from_civil(int y, int m, int d);

/* s[0..n) as exactly n decimal digits (1 <= n <= 9): 1 and *out, else 0
 * (core/decimal.h reads the digits). */
int once__fixed_digits(const char *s, int n, int *out);

#endif /* ONCE_CORE_CIVIL_H */
