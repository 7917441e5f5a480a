/*
 * show.c -- peer text made safe to print (show.h). One rule, from
 * core/quote.h's once__visible_seq, for the CLI and onced's text log.
 */
#include <string.h>

#include "client/show.h"
#include "core/quote.h"

void once__show(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, plain = 0, take;
    char esc[ONCE_VISIBLE_ESC];
    while (i < n) {
        size_t k = once__visible_seq(u + i, n - i, &take, esc);
        if (k > 0) {
            fwrite(s + plain, 1, i - plain, f);
            fwrite(esc, 1, k, f);
            plain = i + take;
        }
        i += take;
    }
    fwrite(s + plain, 1, n - plain, f);
}

void once__shows(FILE *f, const char *s)
{
    s = s != NULL ? s : "-";
    once__show(f, s, strlen(s));
}

const char *once__showbuf(const char *s, char *out, size_t cap)
{
    const unsigned char *u = (const unsigned char *)(s != NULL ? s : "");
    size_t n = strlen((const char *)u), i = 0, o = 0, take;
    char esc[ONCE_VISIBLE_ESC];
    while (i < n) {
        size_t k = once__visible_seq(u + i, n - i, &take, esc);
        const char *piece = k > 0 ? esc : (const char *)u + i;
        size_t len = k > 0 ? k : take;
        if (o + len + 4 > cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, piece, len);
        o += len;
        i += take;
    }
    out[o] = '\0';
    return out;
}
