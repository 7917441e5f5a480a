/*
 * push_net.c -- the SSRF guard of push delivery (A2A 1.0 section 13.2,
 * docs/design.md section 6): which addresses a webhook may reach, the
 * --push-allow CIDR list that exempts some, and the URL check run when a
 * config is created.
 *
 * Blocked unless allow-listed: IPv4 0.0.0.0/8 (this network), 10/8,
 * 172.16/12, 192.168/16 (RFC 1918), 100.64/10 (CGNAT), 127/8 (loopback),
 * 169.254/16 (link-local), 192.0.0/24 (IETF protocol assignments),
 * 198.18/15 (benchmarking), 224/4 (multicast), 240/4 (reserved, broadcast);
 * IPv6 ::/128, ::1, fe80::/10 (link-local), fc00::/7 (ULA), fec0::/10
 * (old site-local), ff00::/8 (multicast), 64:ff9b:1::/48 (local-use NAT64),
 * and the IPv6 forms that wrap an IPv4 address (mapped, translated,
 * compatible, NAT64 64:ff9b::/96, 6to4 2002::/16: embedded_v4()) judged by
 * the IPv4 address inside.
 *
 * The authoritative check is on the resolved address at connect time
 * (push_http.c); the URL check here only refuses what is obviously bad
 * without resolving names (literal addresses, "localhost"), so a client
 * hears about it at once as invalid params.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/str.h"
#include "engine/push_int.h"

int once__cidr_parse(const char *s, once__cidr *out)
{
    char buf[64];
    memset(out, 0, sizeof *out);
    if (s == NULL || strlen(s) >= sizeof buf)
        return ONCE_EINVAL;
    once__strlcpy(buf, s, sizeof buf);
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash != NULL) {
        char *end;
        *slash = '\0';
        if (slash[1] < '0' || slash[1] > '9')
            return ONCE_EINVAL;
        bits = strtol(slash + 1, &end, 10);
        if (*end != '\0')
            return ONCE_EINVAL;
    }
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        if (bits < 0)
            bits = 32;
        if (bits > 32)
            return ONCE_EINVAL;
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        if (bits < 0)
            bits = 128;
        if (bits > 128)
            return ONCE_EINVAL;
    } else {
        return ONCE_EINVAL;
    }
    out->bits = (int)bits;
    return ONCE_OK;
}

static int prefix_match(const uint8_t *a, const uint8_t *net, int bits)
{
    int full = bits / 8, rest = bits % 8;
    if (memcmp(a, net, (size_t)full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

/* The IPv4 address inside an IPv6 one that wraps it (the packet ends up at
 * that IPv4 host, through the kernel, a translator or a relay), or NULL:
 *   ::ffff:a.b.c.d       IPv4-mapped (RFC 4291)
 *   ::ffff:0:a.b.c.d     IPv4-translated (RFC 2765, SIIT)
 *   ::a.b.c.d            IPv4-compatible (deprecated), but not :: and ::1
 *   64:ff9b::a.b.c.d     NAT64 well-known prefix (RFC 6052)
 *   2002:AABB:CCDD::/48  6to4 (RFC 3056): a.b.c.d is the relay's target */
static const uint8_t *embedded_v4(const uint8_t *a6)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t translated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
    static const uint8_t compat[12] = {0};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a6, mapped, 12) == 0 || memcmp(a6, translated, 12) == 0 ||
        memcmp(a6, nat64, 12) == 0)
        return a6 + 12;
    if (memcmp(a6, compat, 12) == 0 && (a6[12] | a6[13]) != 0)
        return a6 + 12;
    if (a6[0] == 0x20 && a6[1] == 0x02)
        return a6 + 2;
    return NULL;
}

static const char *blocked_v4(const uint8_t *a)
{
    static const struct {
        uint8_t net[4];
        int bits;
        const char *why;
    } nets[] = {
        {{0, 0, 0, 0}, 8, "a \"this network\" address (0.0.0.0/8)"},
        {{10, 0, 0, 0}, 8, "a private address (10.0.0.0/8)"},
        {{100, 64, 0, 0}, 10, "a carrier-grade NAT address (100.64.0.0/10)"},
        {{127, 0, 0, 0}, 8, "a loopback address (127.0.0.0/8)"},
        {{169, 254, 0, 0}, 16, "a link-local address (169.254.0.0/16)"},
        {{172, 16, 0, 0}, 12, "a private address (172.16.0.0/12)"},
        {{192, 0, 0, 0}, 24, "an IETF protocol address (192.0.0.0/24)"},
        {{192, 168, 0, 0}, 16, "a private address (192.168.0.0/16)"},
        {{198, 18, 0, 0}, 15, "a benchmarking address (198.18.0.0/15)"},
        {{224, 0, 0, 0}, 4, "a multicast address (224.0.0.0/4)"},
        {{240, 0, 0, 0}, 4, "a reserved or broadcast address (240.0.0.0/4)"},
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        if (prefix_match(a, nets[i].net, nets[i].bits))
            return nets[i].why;
    return NULL;
}

static const char *blocked_v6(const uint8_t *a)
{
    static const uint8_t zero[16] = {0};
    static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (memcmp(a, zero, 16) == 0)
        return "the unspecified address (::)";
    if (memcmp(a, one, 16) == 0)
        return "a loopback address (::1)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return "a link-local address (fe80::/10)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
        return "a site-local address (fec0::/10)";
    if ((a[0] & 0xfe) == 0xfc)
        return "a unique local address (fc00::/7)";
    if (a[0] == 0xff)
        return "a multicast address (ff00::/8)";
    /* Where a local-use NAT64 prefix puts the IPv4 address depends on the
     * operator's prefix length: not judged by it, refused whole. */
    static const uint8_t nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};
    if (memcmp(a, nat64_local, 6) == 0)
        return "a local-use NAT64 address (64:ff9b:1::/48)";
    return NULL;
}

/* Does the allow-list cover (family, addr)? An IPv4 entry also covers the
 * IPv6 forms that wrap that address. */
static int allowed(const once__cidr *allow, size_t n, int family, const uint8_t *addr)
{
    const uint8_t *v4 = family == AF_INET ? addr : embedded_v4(addr);
    for (size_t i = 0; i < n; i++) {
        if (allow[i].family == AF_INET && v4 != NULL &&
            prefix_match(v4, allow[i].addr, allow[i].bits))
            return 1;
        if (allow[i].family == AF_INET6 && family == AF_INET6 &&
            prefix_match(addr, allow[i].addr, allow[i].bits))
            return 1;
    }
    return 0;
}

const char *once__addr_blocked(const once__cidr *allow, size_t nallow, int family,
                               const uint8_t *addr)
{
    const char *why;
    if (family == AF_INET) {
        why = blocked_v4(addr);
    } else if (family == AF_INET6) {
        const uint8_t *v4 = embedded_v4(addr);
        why = v4 != NULL ? blocked_v4(v4) : blocked_v6(addr);
    } else {
        return "not an IP address";
    }
    if (why != NULL && allowed(allow, nallow, family, addr))
        return NULL;
    return why;
}

int once__push_sockaddr_check(const once__cidr *allow, size_t nallow, const struct sockaddr *sa,
                              char *why, size_t whylen)
{
    char text[INET6_ADDRSTRLEN] = "?";
    const char *reason;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        reason = once__addr_blocked(allow, nallow, AF_INET, (const uint8_t *)&in->sin_addr);
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        reason = once__addr_blocked(allow, nallow, AF_INET6, in6->sin6_addr.s6_addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    } else {
        reason = "not an IP address";
    }
    if (reason == NULL)
        return ONCE_OK;
    snprintf(why, whylen,
             "webhook target %s is %s; push delivery refuses it (SSRF guard) unless "
             "onced runs with --push-allow covering it",
             text, reason);
    return ONCE_EINVAL;
}

/* "localhost" and any "*.localhost" name loopback (RFC 6761). */
static int is_localhost(const char *host)
{
    size_t n = strlen(host);
    if (n > 0 && host[n - 1] == '.')
        n--;
    if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
        return 1;
    return n > 10 && strncasecmp(host + n - 10, ".localhost", 10) == 0;
}

int once__push_url_check(const char *url, const once__cidr *allow, size_t nallow, char *why,
                         size_t whylen)
{
    if (url == NULL || url[0] == '\0') {
        snprintf(why, whylen, "url is required");
        return ONCE_EINVAL;
    }
    if (strlen(url) > ONCE__PUSH_URL_MAX) {
        snprintf(why, whylen, "url is longer than %d characters", ONCE__PUSH_URL_MAX);
        return ONCE_EINVAL;
    }
    CURLU *u = curl_url();
    if (u == NULL)
        return ONCE_ENOMEM;
    char *scheme = NULL, *host = NULL, *user = NULL;
    int rc = ONCE_EINVAL;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(why, whylen, "url is not an absolute http(s) URL");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
        snprintf(why, whylen, "url must use http or https");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
        snprintf(why, whylen,
                 "url must not carry credentials; use authentication {scheme, credentials}");
        goto out;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || host[0] == '\0') {
        snprintf(why, whylen, "url has no host");
        goto out;
    }
    uint8_t a[16];
    char bare[256];
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']' && hl - 2 < sizeof bare) {
        memcpy(bare, host + 1, hl - 2);
        bare[hl - 2] = '\0';
        char *zone = strchr(bare, '%');
        if (zone != NULL)
            *zone = '\0';
    } else {
        once__strlcpy(bare, host, sizeof bare);
    }
    const char *reason = NULL;
    if (inet_pton(AF_INET, bare, a) == 1) {
        reason = once__addr_blocked(allow, nallow, AF_INET, a);
    } else if (inet_pton(AF_INET6, bare, a) == 1) {
        reason = once__addr_blocked(allow, nallow, AF_INET6, a);
    } else if (is_localhost(bare)) {
        static const uint8_t lo4[4] = {127, 0, 0, 1};
        static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        /* Refused only when neither family is allowed: at connect time the
         * refused one is skipped and the allowed one used. */
        reason = once__addr_blocked(allow, nallow, AF_INET, lo4);
        if (reason != NULL && once__addr_blocked(allow, nallow, AF_INET6, lo6) == NULL)
            reason = NULL;
    }
    if (reason != NULL) {
        snprintf(why, whylen,
                 "url host %s is %s; webhooks to loopback, link-local and private networks "
                 "are refused (SSRF guard) unless onced runs with --push-allow covering it",
                 host, reason);
        goto out;
    }
    rc = ONCE_OK;
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(user);
    curl_url_cleanup(u);
    return rc;
}
