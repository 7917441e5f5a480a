/*
 * webhook_sig.c -- Standard Webhooks signatures (include/once/webhook.h):
 * the "v1,<base64>" HMAC-SHA256 entry over id.timestamp.body, the
 * "whsec_" secret encoding, and the constant-time verification a receiver
 * runs, with its timestamp tolerance. Pure: no clock, no I/O.
 *
 * Invariant: verification never returns early on the first differing byte
 * of a signature, and tries every entry against every secret before it
 * answers, so its time does not depend on how close a forgery came.
 */
#include <stdio.h>
#include <string.h>

#include "core/base64.h"
#include "once/webhook.h"

int once_webhook_key(const char *secret, uint8_t key[ONCE_WEBHOOK_KEY_MAX], size_t *len)
{
    static const char prefix[] = "whsec_";
    *len = 0;
    if (secret == NULL || secret[0] == '\0')
        return ONCE_EINVAL;
    size_t n = strlen(secret);
    if (strncmp(secret, prefix, sizeof prefix - 1) == 0) {
        size_t bl = n - (sizeof prefix - 1);
        if (bl / 4 * 3 > ONCE_WEBHOOK_KEY_MAX)
            return ONCE_ERANGE;
        long k = once__base64_decode(secret + sizeof prefix - 1, bl, key, ONCE_WEBHOOK_KEY_MAX);
        if (k <= 0)
            return ONCE_EINVAL;
        *len = (size_t)k;
        return ONCE_OK;
    }
    if (n > ONCE_WEBHOOK_KEY_MAX)
        return ONCE_ERANGE;
    memcpy(key, secret, n);
    *len = n;
    return ONCE_OK;
}

/* The raw 32-byte MAC of id.timestamp.body under key. */
static int mac(const uint8_t *key, size_t keylen, const char *id, const char *ts, const void *body,
               size_t len, uint8_t out[ONCE_SHA256_LEN])
{
    size_t il = strlen(id), tl = strlen(ts);
    size_t total = il + 1 + tl + 1 + len;
    char *buf = once_malloc(total ? total : 1);
    if (buf == NULL)
        return ONCE_ENOMEM;
    memcpy(buf, id, il);
    buf[il] = '.';
    memcpy(buf + il + 1, ts, tl);
    buf[il + 1 + tl] = '.';
    if (len)
        memcpy(buf + il + 2 + tl, body, len);
    once_hmac_sha256(key, keylen, buf, total, out);
    once_free(buf);
    return ONCE_OK;
}

int once_webhook_sign(const char *secret, const char *id, const char *timestamp, const void *body,
                      size_t len, char out[ONCE_WEBHOOK_SIG_LEN + 1])
{
    uint8_t key[ONCE_WEBHOOK_KEY_MAX], sig[ONCE_SHA256_LEN];
    size_t klen;
    out[0] = '\0';
    if (id == NULL || timestamp == NULL || (body == NULL && len > 0))
        return ONCE_EINVAL;
    int rc = once_webhook_key(secret, key, &klen);
    if (rc == ONCE_OK)
        rc = mac(key, klen, id, timestamp, body, len, sig);
    if (rc != ONCE_OK)
        return rc;
    memcpy(out, "v1,", 3);
    once__base64_encode(sig, sizeof sig, out + 3, 0);
    return ONCE_OK;
}

static int parse_ts(const char *ts, int64_t *out)
{
    int64_t v = 0;
    if (ts == NULL || ts[0] == '\0' || strlen(ts) > 18)
        return ONCE_EPARSE;
    for (const char *p = ts; *p; p++) {
        if (*p < '0' || *p > '9')
            return ONCE_EPARSE;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return ONCE_OK;
}

int once_webhook_verify(const char *const *secrets, size_t nsecrets, const char *id,
                        const char *timestamp, const char *signature, const void *body, size_t len,
                        int64_t now_s, int64_t tolerance_s)
{
    int64_t ts;
    if (id == NULL || id[0] == '\0' || signature == NULL || signature[0] == '\0' ||
        (body == NULL && len > 0) || parse_ts(timestamp, &ts) != ONCE_OK)
        return ONCE_EPARSE;
    if (tolerance_s <= 0)
        tolerance_s = ONCE_WEBHOOK_TOLERANCE_S;
    if (ts > now_s + tolerance_s || ts < now_s - tolerance_s)
        return ONCE_ERANGE;

    /* Every secret's expected MAC, then every v1 entry against all of them. */
    uint8_t want[8][ONCE_SHA256_LEN];
    size_t nwant = 0;
    for (size_t i = 0; i < nsecrets && nwant < 8; i++) {
        uint8_t key[ONCE_WEBHOOK_KEY_MAX];
        size_t klen;
        if (once_webhook_key(secrets[i], key, &klen) != ONCE_OK)
            continue;
        int rc = mac(key, klen, id, timestamp, body, len, want[nwant]);
        if (rc != ONCE_OK)
            return rc;
        nwant++;
    }
    int match = 0;
    const char *p = signature;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *end = p;
        while (*end && *end != ' ')
            end++;
        size_t n = (size_t)(end - p);
        if (n > 3 && memcmp(p, "v1,", 3) == 0) {
            uint8_t got[ONCE_SHA256_LEN + 3];
            long k = once__base64_decode(p + 3, n - 3, got, sizeof got);
            if (k == ONCE_SHA256_LEN) {
                for (size_t i = 0; i < nwant; i++)
                    match |= once_ct_equal(got, want[i], ONCE_SHA256_LEN);
            }
        }
        p = end;
    }
    return match ? ONCE_OK : ONCE_EINVAL;
}
