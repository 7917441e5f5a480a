/*
 * webhook_sig.h -- the signed part of once webhooks: Standard Webhooks
 * signatures and the webhook-id (pure functions, implemented by the core of
 * libonce; both onced's engine, which signs, and the receiver in webhook.h,
 * which verifies, use them). The receiver's guarantees are in webhook.h.
 *
 * What onced sends for every event of a task with a push config:
 *
 *   POST <config url>
 *   Content-Type: application/a2a+json
 *   webhook-id: <tag>/<config_id>/<since>/<task_id>.<generation>
 *                                              constant across retries; tag
 *                                              stands for the principal
 *   webhook-timestamp: <unix seconds>          time of this attempt
 *   webhook-signature: v1,<base64> [v1,<base64> ...]   one per --push-secret
 *   once-push-since: <since>                   a copy of the id's since:
 *                                              generations <= since are
 *                                              never sent on this subscription
 *   Authorization: <scheme> <credentials>      from config.authentication
 *   X-A2A-Notification-Token: <token>          from config.token
 *   body: one A2A StreamResponse (the event as stored)
 *
 * Signature: HMAC-SHA256(key, id "." timestamp "." body), base64 (standard
 * alphabet, padded). The key of a secret "whsec_<base64>" is the decoded
 * bytes; any other secret is used as its own bytes.
 */
#ifndef ONCE_WEBHOOK_SIG_H
#define ONCE_WEBHOOK_SIG_H

#include "once/once.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Signatures. Pure functions.
 */
#define ONCE_WEBHOOK_SIG_LEN 47      /* "v1," + 44 base64 characters */
#define ONCE_WEBHOOK_KEY_MAX 512     /* longest decoded key accepted */
#define ONCE_WEBHOOK_TOLERANCE_S 300 /* default timestamp tolerance */

/* The HMAC key of a secret: "whsec_<base64>" decodes (ONCE_EINVAL when the
 * base64 is malformed or empty); anything else is its own bytes. key holds
 * ONCE_WEBHOOK_KEY_MAX bytes; ONCE_ERANGE when longer. */
ONCE_API int once_webhook_key(const char *secret, uint8_t key[ONCE_WEBHOOK_KEY_MAX], size_t *len);

/* One signature entry "v1,<base64>" for secret over id.timestamp.body. */
ONCE_API int once_webhook_sign(const char *secret, const char *id, const char *timestamp,
                               const void *body, size_t len, char out[ONCE_WEBHOOK_SIG_LEN + 1]);

/* Check a delivery's headers against the accepted secrets (any may match:
 * rotation; the first 8 are tried). Entries in the signature header are
 * separated by spaces;
 * entries of other versions are ignored; comparison is constant-time.
 *   ONCE_OK        authentic and fresh;
 *   ONCE_EPARSE    a header is missing or malformed (timestamp not digits);
 *   ONCE_ERANGE    timestamp further than tolerance_s from now_s;
 *   ONCE_EINVAL    no v1 entry matches any secret. */
ONCE_API int once_webhook_verify(const char *const *secrets, size_t nsecrets, const char *id,
                        const char *timestamp, const char *signature, const void *body, size_t len,
                        int64_t now_s, int64_t tolerance_s);

/* ---------------------------------------------------------------------------
 * The webhook-id: what one delivery is, all of it covered by the signature
 * (docs/protocol.md, "The webhook trust model").
 */
#define ONCE_WEBHOOK_TAG_LEN 16 /* hex characters of a principal tag */
#define ONCE_WEBHOOK_ID_MAX (ONCE_WEBHOOK_TAG_LEN + 2 * ONCE_ID_MAX + 48)

typedef struct once_webhook_id {
    char tag[ONCE_WEBHOOK_TAG_LEN + 1]; /* the principal's tag (lowercase hex) */
    char config_id[ONCE_ID_MAX + 1];    /* the push config's id */
    int64_t since;                      /* generations <= since never come */
    char task_id[ONCE_ID_MAX + 1];
    int64_t generation; /* >= 1, > since */
} once_webhook_id;

/* The tag of a principal: the first 8 bytes of HMAC-SHA256(key,
 * "once-push-principal|" SHA-256(principal)) in hex. onced keys it with its store's
 * secret, so a receiver can tell principals apart but not name them. */
ONCE_API void once_webhook_principal_tag(const void *key, size_t keylen, const char *principal,
                                char out[ONCE_WEBHOOK_TAG_LEN + 1]);

/* "<tag>/<config_id>/<since>/<task_id>.<generation>". ONCE_EINVAL when a
 * part is malformed (ids per once_id_valid, generation <= since). */
ONCE_API int once_webhook_id_format(const once_webhook_id *id, char out[ONCE_WEBHOOK_ID_MAX + 1]);
ONCE_API int once_webhook_id_parse(const char *s, once_webhook_id *out);

#ifdef __cplusplus
}
#endif

#endif /* ONCE_WEBHOOK_SIG_H */
