/*
 * base64.c -- one base64 encoder and one tolerant-but-strict decoder.
 *
 * The decoder accepts what ProtoJSON producers emit (standard or URL-safe
 * alphabet, with or without padding) and nothing else: no whitespace, no
 * padding in the middle, no lone trailing character (it cannot carry a byte).
 */
#include "core/base64.h"

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t once__base64_len(size_t n, int url)
{
    return url ? (n * 4 + 2) / 3 : (n + 2) / 3 * 4;
}

size_t once__base64_encode(const uint8_t *in, size_t n, char *out, int url)
{
    const char *a = url ? url_alphabet : std_alphabet;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = a[(v >> 6) & 63];
        else if (!url)
            out[o++] = '=';
        if (i + 2 < n)
            out[o++] = a[v & 63];
        else if (!url)
            out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

static int digit(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

long once__base64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    size_t pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0))
        return -1;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int v = digit(s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (out != NULL) {
                if (o == cap)
                    return -1;
                out[o] = (uint8_t)(acc >> bits);
            }
            o++;
        }
    }
    return (long)o;
}

int once__base64_valid(const char *s, size_t n)
{
    return once__base64_decode(s, n, NULL, 0) >= 0;
}
