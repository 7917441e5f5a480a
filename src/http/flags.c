/*
 * flags.c -- parsers for command-line values: durations ("72h"), byte sizes
 * ("1MiB") and listen addresses ("127.0.0.1:8080"); and the reading of a
 * file a flag names (--auth-tokens, --card).
 *
 * Invariant: every parser either fills its output or returns an error with
 * the output untouched; overflow is an error (ONCE_ERANGE), never a wrap.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http/http.h"

struct unit {
    const char *name;
    int64_t ms;
};

static const struct unit dur_units[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000},
};

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int once__parse_duration(const char *s, int allow_negative, int64_t *ms)
{
    if (s == NULL || *s == '\0')
        return ONCE_EINVAL;
    int neg = 0;
    if (*s == '-' && allow_negative) {
        neg = 1;
        s++;
    } else if (*s == '+' && allow_negative) {
        s++;
    }
    if (strcmp(s, "0") == 0) {
        *ms = 0;
        return ONCE_OK;
    }
    if (!is_digit(*s))
        return ONCE_EINVAL;
    int64_t total = 0;
    while (*s != '\0') {
        if (!is_digit(*s))
            return ONCE_EINVAL;
        int64_t n = 0;
        while (is_digit(*s)) {
            if (n > (INT64_MAX - (*s - '0')) / 10)
                return ONCE_ERANGE;
            n = n * 10 + (*s - '0');
            s++;
        }
        size_t ulen = 0;
        while (s[ulen] != '\0' && !is_digit(s[ulen]))
            ulen++;
        const struct unit *u = NULL;
        for (size_t i = 0; i < sizeof dur_units / sizeof dur_units[0]; i++) {
            if (strlen(dur_units[i].name) == ulen && memcmp(s, dur_units[i].name, ulen) == 0)
                u = &dur_units[i];
        }
        if (u == NULL)
            return ONCE_EINVAL;
        s += ulen;
        if (n > INT64_MAX / u->ms || total > INT64_MAX - n * u->ms)
            return ONCE_ERANGE;
        total += n * u->ms;
    }
    *ms = neg ? -total : total;
    return ONCE_OK;
}

int once__parse_size(const char *s, uint64_t *bytes)
{
    if (s == NULL || !is_digit(*s))
        return ONCE_EINVAL;
    uint64_t n = 0;
    while (is_digit(*s)) {
        if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return ONCE_ERANGE;
        n = n * 10 + (uint64_t)(*s - '0');
        s++;
    }
    uint64_t mul = 1;
    if (*s != '\0') {
        static const struct {
            const char *name;
            uint64_t mul;
        } units[] = {
            {"k", 1024},       {"K", 1024},       {"KiB", 1024},
            {"m", 1u << 20},   {"M", 1u << 20},   {"MiB", 1u << 20},
            {"g", 1u << 30},   {"G", 1u << 30},   {"GiB", 1u << 30},
        };
        mul = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (strcmp(s, units[i].name) == 0)
                mul = units[i].mul;
        }
        if (mul == 0)
            return ONCE_EINVAL;
    }
    if (n > UINT64_MAX / mul)
        return ONCE_ERANGE;
    *bytes = n * mul;
    return ONCE_OK;
}

int once__parse_listen(const char *s, char *host, size_t hostlen, int *port)
{
    if (s == NULL || hostlen == 0)
        return ONCE_EINVAL;
    const char *colon;
    const char *h = s;
    size_t hlen;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return ONCE_EINVAL;
        h = s + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return ONCE_EINVAL;
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL) /* bare IPv6 needs brackets */
            return ONCE_EINVAL;
    }
    if (hlen == 0 || hlen >= hostlen)
        return ONCE_EINVAL;
    const char *p = colon + 1;
    if (*p == '\0')
        return ONCE_EINVAL;
    long v = 0;
    for (; *p; p++) {
        if (!is_digit(*p))
            return ONCE_EINVAL;
        v = v * 10 + (*p - '0');
        if (v > 65535)
            return ONCE_ERANGE;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)v;
    return ONCE_OK;
}

int once__read_file(const char *path, size_t max, char **out, size_t *len, char *err,
                   size_t errlen)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return ONCE_EIO;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = ONCE_OK;
    for (;;) {
        if (n + 4096 > cap) {
            if (cap >= max) {
                snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
                rc = ONCE_ERANGE;
                break;
            }
            cap = cap ? cap * 2 : 8192;
            char *nb = once_realloc(buf, cap);
            if (nb == NULL) {
                rc = ONCE_ENOMEM;
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                snprintf(err, errlen, "%s: read error", path);
                rc = ONCE_EIO;
            }
            break;
        }
    }
    fclose(f);
    if (rc != ONCE_OK) {
        if (buf != NULL)
            memset(buf, 0, n); /* a secret read in part does not linger either */
        once_free(buf);
        return rc;
    }
    *out = buf;
    *len = n;
    return ONCE_OK;
}
