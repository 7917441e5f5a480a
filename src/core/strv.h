/*
 * strv.h -- arrays of strings a handle owns (not API): push secrets and
 * resolve entries, a receiver's secrets, a gateway's headers, allowed hosts
 * and origins. Copied whole from the caller's settings, freed whole, so
 * that no owner writes the loop (and its half-done cleanup) again.
 */
#ifndef ONCE_CORE_STRV_H
#define ONCE_CORE_STRV_H

#include <stddef.h>

/* A copy of v[0..n): an array of n once_strdup copies (an array of one
 * NULL when n is 0, so NULL always means out of memory). All or nothing: on
 * failure what was copied is freed. */
char **once__strv_dup(const char *const *v, size_t n);

/* Free v[0..n) and v. NULL v is a no-op. */
void once__strv_free(char **v, size_t n);

#endif /* ONCE_CORE_STRV_H */
