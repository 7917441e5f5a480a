/*
 * pct.c -- see pct.h.
 */
#include "core/pct.h"

static int hex(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

int once__pct_decode(const char *src, size_t n, int plus_space, char *out, size_t outlen)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)src[i];
        if (c == '%') {
            int hi = i + 2 < n ? hex(src[i + 1]) : -1;
            int lo = i + 2 < n ? hex(src[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return 0;
            c = hi * 16 + lo;
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (o + 1 >= outlen || c == 0)
            return 0;
        out[o++] = (char)c;
    }
    if (outlen == 0)
        return 0;
    out[o] = '\0';
    return 1;
}

size_t once__pct_decode_inplace(char *s, char nul_as)
{
    size_t o = 0;
    for (size_t i = 0; s[i] != '\0'; i++) {
        int hi, lo;
        char c = s[i];
        if (c == '%' && (hi = hex(s[i + 1])) >= 0 && (lo = hex(s[i + 2])) >= 0) {
            c = (char)(hi * 16 + lo);
            i += 2;
            if (c == '\0')
                c = nul_as;
        }
        s[o++] = c;
    }
    s[o] = '\0';
    return o;
}
