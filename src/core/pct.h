/*
 * pct.h -- percent-encoding as URLs carry it (RFC 3986 section 2.1), read
 * back (not API): the user and password of a store URL, the query of an
 * inspector link. Pure function.
 */
#ifndef ONCE_CORE_PCT_H
#define ONCE_CORE_PCT_H

#include <stddef.h>

/* Decode src[0..n) into out (outlen bytes, NUL-terminated); '+' becomes a
 * space when plus_space (HTML forms send it so). 1, or 0 when the result
 * does not fit, an escape is cut short or not hex, or it decodes to a NUL
 * (which no C string can carry). n + 1 bytes always fit. */
int once__pct_decode(const char *src, size_t n, int plus_space, char *out, size_t outlen);

/* Decode s in place, leniently as libmicrohttpd decodes a request path (an
 * escape that is cut short or not hex stays as it is), a decoded NUL
 * written as nul_as instead (a C string could not carry it). Returns the
 * decoded length; s is NUL-terminated there. */
size_t once__pct_decode_inplace(char *s, char nul_as);

#endif /* ONCE_CORE_PCT_H */
