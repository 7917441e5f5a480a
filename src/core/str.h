/*
 * str.h -- bounded string copy for the fixed-size fields of records,
 * requests and log contexts.
 *
 * snprintf(dst, size, "%s", src) does the same, but through the whole
 * printf machinery, and a new task made dozens of such copies (what the
 * instruction diet saved is in bench/README.md, "The new-task fast path,
 * steered by callgrind"). This is strlen + memcpy.
 */
#ifndef ONCE_CORE_STR_H
#define ONCE_CORE_STR_H

#include <stddef.h>
#include <string.h>

/* Copy src into dst (size bytes, size > 0), truncated to size - 1 bytes and
 * always NUL-terminated; NULL src copies "". Returns strlen(src), so
 * a result >= size says it was truncated. */
static inline size_t once__strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = src != NULL ? strlen(src) : 0;
    size_t k = n < size ? n : size - 1;
    if (k > 0)
        memcpy(dst, src, k);
    dst[k] = '\0';
    return n;
}

#endif /* ONCE_CORE_STR_H */
