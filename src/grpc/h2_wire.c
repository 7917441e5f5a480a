/*
 * h2_wire.c -- the small text forms of gRPC's HTTP/2 headers (pure
 * functions): grpc-timeout and grpc-message's percent-encoding.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc_int.h"
#include "once/once.h"
#include "grpc/h2.h"

int64_t once__grpc_timeout_parse(const char *s)
{
    int64_t v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        if (i == 8)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (i == 0 || s[i] == '\0' || s[i + 1] != '\0')
        return -1;
    /* Each unit as (numerator, denominator) of milliseconds, rounded up. */
    switch (s[i]) {
    case 'H': return v * 3600000;
    case 'M': return v * 60000;
    case 'S': return v * 1000;
    case 'm': return v > 0 ? v : 1;
    case 'u': return v > 0 ? (v + 999) / 1000 : 1;
    case 'n': return v > 0 ? (v + 999999) / 1000000 : 1;
    default: return -1;
    }
}

void once__grpc_timeout_format(int64_t ms, char *out, size_t outlen)
{
    /* At most 8 digits: milliseconds while they fit, then coarser. */
    if (ms < 100000000)
        snprintf(out, outlen, "%lldm", (long long)ms);
    else if ((ms + 999) / 1000 < 100000000)
        snprintf(out, outlen, "%lldS", (long long)((ms + 999) / 1000));
    else   /* hours, at most 8 digits (over 11,000 years) */
        snprintf(out, outlen, "%lldH",
                 (long long)((ms + 3599999) / 3600000 < 100000000 ? (ms + 3599999) / 3600000
                                                                  : 99999999));
}

void once__grpc_prefix_put(uint8_t p[5], uint32_t len)
{
    p[0] = 0;
    p[1] = (uint8_t)(len >> 24);
    p[2] = (uint8_t)(len >> 16);
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
}

uint32_t once__grpc_prefix_len(const uint8_t p[5])
{
    return (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
}
