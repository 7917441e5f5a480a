/*
 * url_param.c -- reading "key=value&..." store URL settings (url_param.h).
 * Pure string work on the caller's URL: nothing is allocated, so a bad
 * setting is reported before a backend has anything to undo.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/url_param.h"

int once__url_param_next(const char **q, once__url_param *p)
{
    const char *s = *q;
    while (s && *s == '&')
        s++;
    if (!s || !*s) {
        *q = NULL;
        return 0;
    }
    const char *end = s + strcspn(s, "&");
    const char *eq = memchr(s, '=', (size_t)(end - s));
    p->key = s;
    p->klen = (size_t)((eq ? eq : end) - s);
    p->val = eq ? eq + 1 : end;
    p->vlen = (size_t)(end - p->val);
    *q = *end ? end + 1 : NULL;
    return 1;
}

int once__url_param_is(const once__url_param *p, const char *name)
{
    return strlen(name) == p->klen && memcmp(p->key, name, p->klen) == 0;
}

int once__url_param_val_is(const once__url_param *p, const char *word)
{
    return strlen(word) == p->vlen && strncasecmp(p->val, word, p->vlen) == 0;
}

int once__url_param_num(const once__url_param *p, long long lo, long long hi, long long *out)
{
    char buf[24];
    char *end;

    /* strtoll alone would take leading blanks and a sign of its own. */
    if (p->vlen == 0 || p->vlen >= sizeof buf || !(p->val[0] >= '0' && p->val[0] <= '9'))
        return -1;
    memcpy(buf, p->val, p->vlen);
    buf[p->vlen] = '\0';
    long long v = strtoll(buf, &end, 10);
    if (*end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int once__url_param_copy(const once__url_param *p, char *buf, size_t len)
{
    if (p->vlen == 0 || p->vlen >= len)
        return -1;
    memcpy(buf, p->val, p->vlen);
    buf[p->vlen] = '\0';
    return 0;
}
