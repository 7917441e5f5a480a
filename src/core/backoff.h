/*
 * backoff.h -- retry timing shared by the client's retry policy
 * (src/client/policy.c) and push delivery (src/engine/push_deliver.c):
 * the full-jitter exponential backoff bound and the Retry-After header.
 * Pure functions: no I/O, no allocation.
 *
 * Invariants: no result ever exceeds the cap it is given, and no input
 * (any attempt count, any base or cap, any digits or date a peer sends)
 * makes the arithmetic overflow.
 */
#ifndef ONCE_CORE_BACKOFF_H
#define ONCE_CORE_BACKOFF_H

#include "once/once.h"

/* min(cap, base * 2^attempt) in ms; a base or cap <= 0 counts as 0. */
int64_t once__backoff_ceiling_ms(int64_t base_ms, uint64_t attempt, int64_t cap_ms);

/* Full jitter: *out_ms uniform in [0, once__backoff_ceiling_ms(...)].
 * The rng's error when it fails (*out_ms is then 0). */
int once__backoff_jitter_ms(int64_t base_ms, uint64_t attempt, int64_t cap_ms, const once_rng *rng,
                            int64_t *out_ms);

/* A Retry-After value (RFC 9110 section 10.2.3): delta-seconds or an
 * IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), surrounding blanks and a
 * trailing CR LF allowed. *out_ms = the wait it asks for from now_ms (a past
 * date gives 0), at most cap_ms: a peer cannot park the caller longer than
 * the caller allows, whatever number or year it sends. ONCE_EINVAL for
 * anything else (NULL, empty, other date formats). */
int once__retry_after_ms(const char *v, int64_t now_ms, int64_t cap_ms, int64_t *out_ms);

#endif /* ONCE_CORE_BACKOFF_H */
