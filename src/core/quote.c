/*
 * quote.c -- once__quote (quote.h): peer text cut to a bound and made
 * printable, valid UTF-8, so it can stand inside a JSON error message.
 *
 * Invariant: the output never holds a control character or an invalid or
 * split UTF-8 sequence, and never more than max bytes before the "...".
 */
#include <string.h>

#include "core/quote.h"

size_t once__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void once__quote(const char *s, size_t n, size_t max, char *out, size_t cap)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;

    if (cap == 0)
        return;
    if (cap < 4) {   /* no room for anything useful */
        out[0] = '\0';
        return;
    }
    if (max > cap - 4)   /* keep room for "..." and the NUL */
        max = cap - 4;
    while (i < n) {
        size_t len = once__utf8_seq(u + i, n - i);
        size_t take = len ? len : 1;
        if (o + (len ? len : 1) > max)
            break;
        if (len == 0 || (len == 1 && (u[i] < 0x20 || u[i] == 0x7F)) ||
            (len == 2 && u[i] == 0xC2 && u[i + 1] < 0xA0))   /* C1 */
            out[o++] = '?';
        else {
            memcpy(out + o, s + i, len);
            o += len;
        }
        i += take;
    }
    if (i < n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

size_t once__visible_seq(const unsigned char *s, size_t n, size_t *take,
                         char esc[ONCE_VISIBLE_ESC])
{
    static const char hex[] = "0123456789abcdef";
    size_t len = once__utf8_seq(s, n);
    unsigned cp;

    *take = len ? len : 1;
    if (len == 0) {
        memcpy(esc, "\\x", 2);
        esc[2] = hex[s[0] >> 4];
        esc[3] = hex[s[0] & 15];
        return 4;
    }
    if (len == 1 && s[0] >= 0x20 && s[0] != 0x7F)
        return 0;
    if (len == 2 && s[0] == 0xC2 && s[1] < 0xA0)
        cp = s[1];   /* C1: U+0080..U+009F */
    else if (len == 1)
        cp = s[0];
    else
        return 0;
    memcpy(esc, "\\u00", 4);
    esc[4] = hex[cp >> 4];
    esc[5] = hex[cp & 15];
    return 6;
}

int once__has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if (*p < 0x20 || *p == 0x7F)
            return 1;
    return 0;
}
