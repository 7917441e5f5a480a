/*
 * strv.c -- arrays of owned strings (strv.h).
 */
#include "core/strv.h"
#include "once/once.h"

char **once__strv_dup(const char *const *v, size_t n)
{
    char **out = once_calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out != NULL && i < n; i++) {
        if ((out[i] = once_strdup(v[i])) == NULL) {
            once__strv_free(out, i);
            out = NULL;
        }
    }
    return out;
}

void once__strv_free(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        once_free(v[i]);
    once_free(v);
}
