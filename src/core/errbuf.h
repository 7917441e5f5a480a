/*
 * errbuf.h -- the (err, errlen) pair constructors and starters take for a
 * human-readable failure, made always writable.
 */
#ifndef ONCE_CORE_ERRBUF_H
#define ONCE_CORE_ERRBUF_H

#include <stddef.h>

/* err emptied, or, when the caller passed NULL, a one-byte scratch buffer
 * of this thread's (*errlen becomes 1), so every later snprintf(err,
 * errlen, ...) and err[0] is safe without a check. Use as
 * err = once__errbuf(err, &errlen); */
char *once__errbuf(char *err, size_t *errlen);

#endif /* ONCE_CORE_ERRBUF_H */
