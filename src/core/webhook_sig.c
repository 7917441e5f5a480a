/*
 * webhook_sig.c -- Standard Webhooks signatures (include/once/webhook_sig.h):
 * the "v1,<base64>" HMAC-SHA256 entry over id.timestamp.body, the
 * "whsec_" secret encoding, the constant-time verification a receiver
 * runs, with its timestamp tolerance, and the webhook-id that names a
 * delivery's subscription. Pure: no clock, no I/O.
 *
 * Invariant: verification never returns early on the first differing byte
 * of a signature, and tries every entry against every secret before it
 * answers, so its time does not depend on how close a forgery came.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/decimal.h"
#include "core/base64.h"
#include "once/webhook_sig.h"

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
    return ts != NULL && once__decimal(ts, strlen(ts), out) ? ONCE_OK : ONCE_EPARSE;
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

void once_webhook_principal_tag(const void *key, size_t keylen, const char *principal,
                                char out[ONCE_WEBHOOK_TAG_LEN + 1])
{
    /* The principal goes in as its SHA-256, so any length fits one buffer. */
    static const char domain[] = "once-push-principal|";
    uint8_t buf[sizeof domain - 1 + ONCE_SHA256_LEN], mac_out[ONCE_SHA256_LEN];
    memcpy(buf, domain, sizeof domain - 1);
    once_sha256(principal, strlen(principal), buf + sizeof domain - 1);
    once_hmac_sha256(key, keylen, buf, sizeof buf, mac_out);
    once_hex(mac_out, ONCE_WEBHOOK_TAG_LEN / 2, out);
    out[ONCE_WEBHOOK_TAG_LEN] = '\0';
}

static int tag_valid(const char *t)
{
    size_t i = 0;
    for (; t[i] != '\0'; i++)
        if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
            return 0;
    return i == ONCE_WEBHOOK_TAG_LEN;
}

int once_webhook_id_format(const once_webhook_id *id, char out[ONCE_WEBHOOK_ID_MAX + 1])
{
    out[0] = '\0';
    if (!tag_valid(id->tag) || !once_id_valid(id->config_id) || !once_id_valid(id->task_id) ||
        id->since < 0 || id->generation <= id->since)
        return ONCE_EINVAL;
    int n = snprintf(out, ONCE_WEBHOOK_ID_MAX + 1, "%s/%s/%" PRId64 "/%s.%" PRId64, id->tag,
                     id->config_id, id->since, id->task_id, id->generation);
    return n > 0 && n <= ONCE_WEBHOOK_ID_MAX ? ONCE_OK : ONCE_EINVAL;
}

/* Decimal digits only, at most 18 of them (no sign, no overflow). */
static int parse_count(const char *s, size_t n, int64_t *out)
{
    return once__decimal(s, n, out) ? ONCE_OK : ONCE_EINVAL;
}

/* Copy s[0..n) into out (cap + 1 bytes); ONCE_EINVAL when it does not fit. */
static int take(const char *s, size_t n, char *out, size_t cap)
{
    if (n > cap)
        return ONCE_EINVAL;
    memcpy(out, s, n);
    out[n] = '\0';
    return ONCE_OK;
}

int once_webhook_id_parse(const char *s, once_webhook_id *out)
{
    memset(out, 0, sizeof *out);
    if (s == NULL || strlen(s) > ONCE_WEBHOOK_ID_MAX)
        return ONCE_EINVAL;
    const char *a = strchr(s, '/');
    const char *b = a ? strchr(a + 1, '/') : NULL;
    const char *c = b ? strchr(b + 1, '/') : NULL;
    const char *dot = c ? strrchr(c + 1, '.') : NULL;
    if (dot == NULL || strchr(c + 1, '/') != NULL)
        return ONCE_EINVAL;
    int rc = take(s, (size_t)(a - s), out->tag, ONCE_WEBHOOK_TAG_LEN);
    if (rc == ONCE_OK)
        rc = take(a + 1, (size_t)(b - a - 1), out->config_id, ONCE_ID_MAX);
    if (rc == ONCE_OK)
        rc = parse_count(b + 1, (size_t)(c - b - 1), &out->since);
    if (rc == ONCE_OK)
        rc = take(c + 1, (size_t)(dot - c - 1), out->task_id, ONCE_ID_MAX);
    if (rc == ONCE_OK)
        rc = parse_count(dot + 1, strlen(dot + 1), &out->generation);
    if (rc == ONCE_OK && (!tag_valid(out->tag) || !once_id_valid(out->config_id) ||
                          !once_id_valid(out->task_id) || out->generation <= out->since))
        rc = ONCE_EINVAL;
    if (rc != ONCE_OK)
        memset(out, 0, sizeof *out);
    return rc;
}
