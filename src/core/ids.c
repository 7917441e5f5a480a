/*
 * ids.c -- task IDs: validation, ULID, UUIDv4 and UUIDv7 minting, derived IDs for
 * plain A2A clients, child IDs for delegation and side-effect keys
 * (docs/design.md sections 3 and 8).
 *
 * Invariants: every ID this file produces passes once_id_valid(); derived,
 * child and effect IDs are pure functions of their inputs, so a step re-run
 * after a crash reproduces the same key and the far side dedups it.
 */
#include "once/once.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int once_id_valid(const char *id)
{
    if (id == NULL || !is_alnum(id[0]))
        return 0;
    size_t i = 0;
    for (; id[i] != '\0'; i++) {
        if (i >= ONCE_ID_MAX)
            return 0;
        char c = id[i];
        if (!is_alnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
            return 0;
    }
    return 1;
}

/* --- ULID ----------------------------------------------------------------- */

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int once_ulid(const once_clock *clock, const once_rng *rng, char out[ONCE_ULID_LEN + 1])
{
    if (clock == NULL || rng == NULL || out == NULL)
        return ONCE_EINVAL;
    int64_t ms = once_now(clock);
    if (ms < 0 || ms >= ((int64_t)1 << 48))
        return ONCE_ERANGE;
    uint8_t rnd[10];
    int rc = rng->fill(rng, rnd, sizeof rnd);
    if (rc != ONCE_OK)
        return rc;

    /* 48-bit timestamp in 10 chars (top 2 bits of the 50 are zero), most
     * significant first so IDs sort by time as strings. */
    uint64_t t = (uint64_t)ms;
    for (int i = 9; i >= 0; i--) {
        out[i] = crockford[t & 31];
        t >>= 5;
    }
    /* 80 random bits in 16 chars: two 40-bit halves, 8 chars each. */
    for (int half = 0; half < 2; half++) {
        uint64_t v = 0;
        for (int j = 0; j < 5; j++)
            v = (v << 8) | rnd[half * 5 + j];
        for (int i = 7; i >= 0; i--) {
            out[10 + half * 8 + i] = crockford[v & 31];
            v >>= 5;
        }
    }
    out[ONCE_ULID_LEN] = '\0';
    return ONCE_OK;
}

/* --- UUIDs ---------------------------------------------------------------- */

/* Set the version nibble and the RFC 9562 variant (10xx), then format as the
 * lowercase 8-4-4-4-12 form. */
static void uuid_format(uint8_t b[16], unsigned version, char out[ONCE_UUID_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    b[6] = (uint8_t)((b[6] & 0x0f) | (version << 4));
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = digits[b[i] >> 4];
        out[o++] = digits[b[i] & 0x0f];
    }
    out[o] = '\0';
}

int once_uuid4(const once_rng *rng, char out[ONCE_UUID_LEN + 1])
{
    if (rng == NULL || out == NULL)
        return ONCE_EINVAL;
    uint8_t b[16];
    int rc = rng->fill(rng, b, sizeof b);
    if (rc != ONCE_OK)
        return rc;
    uuid_format(b, 4, out);
    return ONCE_OK;
}

int once_uuid7(const once_clock *clock, const once_rng *rng, char out[ONCE_UUID_LEN + 1])
{
    if (clock == NULL || rng == NULL || out == NULL)
        return ONCE_EINVAL;
    int64_t ms = once_now(clock);
    if (ms < 0 || ms >= ((int64_t)1 << 48))
        return ONCE_ERANGE;
    uint8_t b[16];
    int rc = rng->fill(rng, b + 6, sizeof b - 6);
    if (rc != ONCE_OK)
        return rc;
    /* RFC 9562 section 5.7: the 48-bit Unix time in ms, big-endian, then
     * 74 random bits around the version and variant. */
    for (int i = 5; i >= 0; i--) {
        b[i] = (uint8_t)(ms & 0xff);
        ms >>= 8;
    }
    uuid_format(b, 7, out);
    return ONCE_OK;
}

int once_derive_task_id(const uint8_t *secret, size_t secret_len, const char *principal,
                        const char *message_id, char out[ONCE_UUID_LEN + 1])
{
    if ((secret == NULL && secret_len > 0) || principal == NULL || message_id == NULL ||
        out == NULL)
        return ONCE_EINVAL;
    size_t pl = strlen(principal), ml = strlen(message_id);
    if (pl > SIZE_MAX / 2 || ml > SIZE_MAX / 2 - 1)
        return ONCE_ERANGE;
    size_t n = pl + 1 + ml;
    /* Most inputs are short; only long ones pay for a heap buffer. */
    char stackbuf[256];
    char *buf = n <= sizeof stackbuf ? stackbuf : once_malloc(n);
    if (buf == NULL)
        return ONCE_ENOMEM;
    memcpy(buf, principal, pl);
    buf[pl] = '|';
    memcpy(buf + pl + 1, message_id, ml);

    uint8_t mac[ONCE_SHA256_LEN];
    once_hmac_sha256(secret, secret_len, buf, n, mac);
    if (buf != stackbuf)
        once_free(buf);
    uuid_format(mac, 8, out);
    return ONCE_OK;
}

/* --- child IDs and effect keys -------------------------------------------- */

int once_child_id(const char *parent, uint64_t step, char out[ONCE_ID_MAX + 1])
{
    if (out == NULL || !once_id_valid(parent))
        return ONCE_EINVAL;
    /* parent (<= 128) + "." + up to 20 digits + NUL. */
    char full[ONCE_ID_MAX + 1 + 20 + 1];
    int len = snprintf(full, sizeof full, "%s.%" PRIu64, parent, step);
    if (len < 0 || (size_t)len >= sizeof full)
        return ONCE_ERROR; /* cannot happen: the buffer fits the maximum */
    if (len <= ONCE_ID_MAX) {
        memcpy(out, full, (size_t)len + 1);
        return ONCE_OK;
    }
    /* Too long to nest: a fixed-length hash that still starts alphanumeric. */
    uint8_t d[ONCE_SHA256_LEN];
    char hex[ONCE_DIGEST_HEX + 1];
    once_sha256(full, (size_t)len, d);
    once_hex(d, sizeof d, hex);
    out[0] = 'h';
    memcpy(out + 1, hex, 63);
    out[64] = '\0';
    return ONCE_OK;
}

int once_effect_key(const char *task_id, uint64_t step, char out[ONCE_EFFECT_KEY_MAX + 1])
{
    if (out == NULL || !once_id_valid(task_id))
        return ONCE_EINVAL;
    int len = snprintf(out, ONCE_EFFECT_KEY_MAX + 1, "%s:step-%" PRIu64, task_id, step);
    if (len < 0 || len > ONCE_EFFECT_KEY_MAX)
        return ONCE_ERROR; /* cannot happen: 128 + 6 + 20 fits */
    return ONCE_OK;
}
