/*
 * card.c -- what the client takes from an agent's card: whether it declares
 * the idempotency extension, and which A2A it speaks (docs/wire.md, "A2A
 * versions"). An agent that lists a 1.0 interface, or says nothing about
 * versions, is spoken to in 1.0; one whose card lists only 0.x interfaces,
 * or is an A2A 0.3 card (top-level url and protocolVersion 0.x, no
 * supportedInterfaces), in 0.3: the same calls under 0.3's method names
 * and shapes (core/v03.h), converted in retry.c and stream.c.
 *
 * The card's A2A 1.0 interfaces (binding and URL, in its order of
 * preference) are remembered with the rest, in the outbox's agent cache,
 * with the endpoint whose card it was: binding.c picks the one the client
 * speaks from them.
 */
#include <string.h>

#include "client/client_int.h"
#include "core/jcs.h"

void once__card_info(const json_t *card, int *ext, int *v03)
{
    *ext = 0;
    *v03 = 0;
    const json_t *exts = json_object_get(json_object_get(card, "capabilities"), "extensions");
    size_t i;
    const json_t *e;
    json_array_foreach(exts, i, e) {
        const char *uri = json_string_value(json_object_get(e, "uri"));
        if (uri != NULL && strcmp(uri, ONCE_IDEMPOTENCY_EXTENSION) == 0)
            *ext = 1;
    }
    const json_t *itfs = json_object_get(card, "supportedInterfaces");
    int v10 = 0, v0x = 0;
    json_array_foreach(itfs, i, e) {
        const char *v = json_string_value(json_object_get(e, "protocolVersion"));
        if (v != NULL && strncmp(v, "0.", 2) == 0)
            v0x = 1;
        else
            v10 = 1; /* 1.x, or no version said: 1.0 */
    }
    const char *top = json_string_value(json_object_get(card, "protocolVersion"));
    if (json_array_size(itfs) == 0)
        v0x = top != NULL && strncmp(top, "0.", 2) == 0;
    *v03 = v0x && !v10;
}

json_t *once__card_interfaces(const json_t *card)
{
    json_t *out = json_array();
    const json_t *itfs = json_object_get(card, "supportedInterfaces");
    size_t i;
    const json_t *e;
    json_array_foreach(itfs, i, e) {
        const char *v = json_string_value(json_object_get(e, "protocolVersion"));
        const char *b = json_string_value(json_object_get(e, "protocolBinding"));
        const char *u = json_string_value(json_object_get(e, "url"));
        if (out != NULL && v != NULL && strcmp(v, "1.0") == 0 && b != NULL && u != NULL &&
            json_array_append_new(out, json_pack("[s,s]", b, u)) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

int once__card_remember(once_client *c, const char *agent, const char *url, const json_t *card,
                        int *ext, int *v03)
{
    once__card_info(card, ext, v03);
    json_t *doc = json_pack("{s:s, s:o}", "url", url, "list", once__card_interfaces(card));
    char *ifs = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (ifs == NULL)
        return ONCE_ENOMEM;
    int rc = once__outbox_mode_put(c->outbox, agent, *ext, *v03, ifs, once__client_now(c));
    once_free(ifs); /* json_dumps allocates through once_malloc */
    return rc;
}

int once__card_fetch(once_client *c, const char *url, int64_t timeout_ms, json_t **card,
                     once__http_resp *h)
{
    char card_url[2048];
    *card = NULL;
    memset(h, 0, sizeof *h);
    if (once__card_url(url, card_url, sizeof card_url) != ONCE_OK)
        return ONCE_EINVAL;
    once__http_req q = once__client_get(c, card_url, timeout_ms);
    int rc = once__http_do(&q, h);
    if (rc == ONCE_OK && (h->status != 200 || h->body == NULL))
        rc = ONCE_ENOTFOUND;
    if (rc == ONCE_OK)
        rc = once__json_loadb(h->body, h->len, 0, card, NULL);
    return rc;
}

int once__card_read(once_client *c, const char *agent, const char *url, once__http_resp *h)
{
    int ext = 0, v03 = 0;
    json_t *card = NULL;
    int rc = once__card_fetch(c, url, c->retry.attempt_timeout_ms, &card, h);
    if (rc == ONCE_OK)
        rc = once__card_remember(c, agent, url, card, &ext, &v03);
    json_decref(card);
    return rc;
}

int once__agent_v03(once_client *c, const char *agent, const char *url)
{
    int ext = 0, v03 = 0;
    int64_t now = once__client_now(c);
    if (once__outbox_mode_get(c->outbox, agent, now - ONCE__CARD_TTL_MS, &ext, &v03) == ONCE_OK)
        return v03;
    once__http_resp h;
    (void)once__card_read(c, agent, url, &h);
    once__http_resp_clear(&h);
    return once__outbox_mode_get(c->outbox, agent, now - ONCE__CARD_TTL_MS, &ext, &v03) == ONCE_OK
               ? v03
               : 0;
}
