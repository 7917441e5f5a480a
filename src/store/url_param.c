/*
 * url_param.c -- reading "key=value&..." store URL settings (url_param.h),
 * and a store URL with its secrets left out (store_info.h). Pure string
 * work on the caller's URL: nothing is allocated, so a bad setting is
 * reported before a backend has anything to undo.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/store_info.h"
#include "store/store_int.h"
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

int once__url_name_ok(const char *v, size_t n, size_t min, size_t max, const char *punct)
{
    if (n < min || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = v[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              (ch != '\0' && strchr(punct, ch) != NULL)))
            return 0;
    }
    return 1;
}

int once__url_param_setting(const once__url_param *p, const once__url_num *nums, size_t n,
                            const char *who, char *errbuf, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const once__url_num *u = &nums[i];
        long long v;
        if (!once__url_param_is(p, u->key))
            continue;
        if (once__url_param_num(p, u->lo, u->hi, &v) != 0) {
            if (u->hi >= INT64_MAX / 2) /* "no upper bound" */
                once__store_errbuf(errbuf, errlen, "%s URL: %s must be >= %lld", who, u->key,
                                   u->lo);
            else
                once__store_errbuf(errbuf, errlen, "%s URL: %s must be %lld..%lld", who, u->key,
                                   u->lo, u->hi);
            return ONCE_EINVAL;
        }
        switch (u->type) {
        case ONCE__URL_INT:
            *(int *)u->dst = (int)v;
            break;
        case ONCE__URL_SIZE:
            *(size_t *)u->dst = (size_t)v;
            break;
        case ONCE__URL_I64:
            *(int64_t *)u->dst = v;
            break;
        }
        return 0;
    }
    return 1;
}

/* Append s[0..n) to out[0..*o), cut to what cap holds with its NUL. */
static void put_cut(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *o + 1 < cap; i++)
        out[(*o)++] = s[i];
}

void once__store_url_redact(const char *url, char *out, size_t n)
{
    if (n == 0)
        return;
    const char *auth = strstr(url, "://");
    auth = auth != NULL ? auth + 3 : url;
    size_t alen = strcspn(auth, "/?#"), o = 0;
    const char *at = memchr(auth, '@', alen);
    const char *colon = at != NULL ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    const char *p = url;
    if (colon != NULL) {
        put_cut(out, n, &o, url, (size_t)(colon + 1 - url));
        put_cut(out, n, &o, "***", 3);
        p = at;
    }
    const char *q = strchr(p, '?');
    put_cut(out, n, &o, p, q != NULL ? (size_t)(q + 1 - p) : strlen(p));
    static const char pw[] = "password=";
    for (const char *seg = q != NULL ? q + 1 : NULL; seg != NULL;) {
        size_t len = strcspn(seg, "&");
        int secret = len >= sizeof pw - 1 && strncmp(seg, pw, sizeof pw - 1) == 0;
        put_cut(out, n, &o, seg, secret ? sizeof pw - 1 : len);
        if (secret)
            put_cut(out, n, &o, "***", 3);
        seg = seg[len] == '&' ? seg + len + 1 : NULL;
        if (seg != NULL)
            put_cut(out, n, &o, "&", 1);
    }
    out[o] = '\0';
}
