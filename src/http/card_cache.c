/*
 * card_cache.c -- the agent card's ETag, Last-Modified and conditional GET
 * (card_cache.h says what they are and why they are computed once).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/card_cache.h"
#include "once/once.h"

void once__card_cache_init(once__card_cache *cc, const char *card, size_t len, time_t built)
{
    uint8_t d[ONCE_SHA256_LEN];
    char hex[2 * 16 + 1]; /* 128 bits tell card versions apart */
    once_sha256(card, len, d);
    once_hex(d, 16, hex);
    snprintf(cc->etag, sizeof cc->etag, "\"%s\"", hex);
    struct tm tm;
    gmtime_r(&built, &tm);
    strftime(cc->last_modified, sizeof cc->last_modified, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cc->built = built;
}

/* 1 if the If-None-Match list holds "*" or a tag that matches etag when
 * both are taken without a W/ prefix (the weak comparison GET uses). */
static int etag_listed(const char *list, const char *etag)
{
    size_t elen = strlen(etag);
    const char *p = list;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, ",");
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == elen && strncmp(p, etag, n) == 0)
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}

int once__card_not_modified(const once__card_cache *cc, const char *if_none_match,
                            const char *if_modified_since)
{
    if (if_none_match != NULL)
        return etag_listed(if_none_match, cc->etag);
    if (if_modified_since == NULL)
        return 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(if_modified_since, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0')
        return 0; /* not an IMF-fixdate: ignored, as RFC 9110 says */
    return timegm(&tm) >= cc->built;
}
