/*
 * card_cache.h -- HTTP validators for the agent card (internal to src/http):
 * an ETag and a Last-Modified for the card's bytes, and the conditional GET
 * that answers 304 when the client's copy is current (RFC 9110 section 13).
 *
 * The card is built when the server starts and changes only when a gateway
 * refreshes its upstream's card (once__http_card_set), so its validators
 * are computed with it, never per request: the ETag from its content
 * (replicas serving the same card give the same ETag), Last-Modified the
 * time it was built or replaced.
 */
#ifndef ONCE_HTTP_CARD_CACHE_H
#define ONCE_HTTP_CARD_CACHE_H

#include <stddef.h>
#include <time.h>

typedef struct once__card_cache {
    char etag[36];          /* "\"<32 hex digits of SHA-256(card)>\"" */
    char last_modified[32]; /* IMF-fixdate of built */
    time_t built;           /* whole seconds (HTTP dates have no more) */
} once__card_cache;

/* Validators for the card bytes card[0..len) built at time built. */
void once__card_cache_init(once__card_cache *cc, const char *card, size_t len, time_t built);

/* 1 if a GET with these request headers (NULL = absent) gets 304 Not
 * Modified: If-None-Match lists the ETag (weak comparison) or "*"; or, only
 * when If-None-Match is absent, If-Modified-Since is a valid HTTP date not
 * before Last-Modified. */
int once__card_not_modified(const once__card_cache *cc, const char *if_none_match,
                            const char *if_modified_since);

#endif
