/*
 * civil.h -- the calendar arithmetic behind the dates once reads: RFC 3339
 * timestamps in A2A requests (src/a2a/validate.c) and IMF-fixdates in
 * Retry-After (core/backoff.c). clock.c, which writes RFC 3339, holds it.
 * Pure functions.
 */
#ifndef ONCE_CORE_CIVIL_H
#define ONCE_CORE_CIVIL_H

#include <stddef.h>
#include <stdint.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (y, m 1..12, d). */
int64_t once__days_from_civil(int y, int m, int d);

/* s[0..n) as exactly n decimal digits (1 <= n <= 9): 1 and *out, else 0
 * (core/decimal.h reads the digits). */
int once__fixed_digits(const char *s, int n, int *out);

/* Read an RFC 3339 date-time s[0..n): "YYYY-MM-DDTHH:MM:SS", optional
 * fraction (digits past the ninth are dropped), then "Z" or "+HH:MM" /
 * "-HH:MM" (a leap second reads as :59; 't', ' ' and 'z' are accepted
 * too). 1 with *secs since the epoch (UTC) and *nanos 0..999999999, else 0.
 * A2A requests' timestamps and ProtoJSON's google.protobuf.Timestamp. */
int once__rfc3339_parse(const char *s, size_t n, int64_t *secs, int32_t *nanos);

#endif /* ONCE_CORE_CIVIL_H */
