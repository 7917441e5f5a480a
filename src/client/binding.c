/*
 * binding.c -- the binding seam: the client's logic (retry.c, stream.c, and
 * everything above them) is written against JSON-RPC request bodies and
 * answers; once__a2a_do carries each A2A call over the binding the client
 * chose and hands back the answer in JSON-RPC's shape.
 *
 * The choice: JSON-RPC when the client is told so, or the agent speaks
 * A2A 0.3 (0.3's other bindings are not spoken); else the card's A2A 1.0
 * interfaces, cached per agent in the outbox with the rest of what the card
 * says (card.c), and once__iface_pick; a call at another of the agent's
 * endpoints than the one that card came from, whose interface is not at
 * that endpoint itself (a replica's gRPC port), reads its own endpoint's
 * card, once per handle. Nothing about the binding is stored
 * with an intent: every binding carries the same params (the idempotency
 * digest is computed on their ProtoJSON form), so a resend, a resumed
 * stream or a recovery may go over any of them and reach the same task.
 */
#include <stdio.h>
#include <string.h>

#include "client/client_int.h"
#include "core/jcs.h"

static const char *const binding_names[] = {"auto", "jsonrpc", "http_json", "grpc"};

int once_binding_parse(const char *name, once_binding *out)
{
    for (size_t i = 0; name != NULL && i < sizeof binding_names / sizeof binding_names[0]; i++) {
        if (strcmp(binding_names[i], name) == 0) {
            *out = (once_binding)i;
            return ONCE_OK;
        }
    }
    return ONCE_EINVAL;
}

const char *once_binding_name(once_binding b)
{
    return (unsigned)b < sizeof binding_names / sizeof binding_names[0] ? binding_names[b]
                                                                         : "unknown";
}

/* A forced binding's card could not be read: the call's failure, retried
 * when that may pass (no answer, 429, 5xx), else final. */
static int card_failed(const once_client *c, const once__http_resp *h, once__http_resp *r)
{
    memset(r, 0, sizeof *r);
    r->interrupted = h->interrupted;
    r->untrusted = h->untrusted;
    r->timed_out = h->timed_out;
    r->unusable = h->status != 0 && h->status != 429 && h->status < 500;
    if (h->status != 0)
        snprintf(r->error, sizeof r->error, "agent card: HTTP %ld (--binding %s needs the card)",
                 h->status, once_binding_name(c->binding));
    else
        snprintf(r->error, sizeof r->error, "agent card: %.200s", h->error);
    return ONCE_EIO;
}

/* The agent cache's interfaces doc {"url", "list"} for agent, else its card
 * at url read now (and remembered). ONCE_OK with *doc, or NULL and h saying
 * why when the card could not be read; ONCE_ENOMEM. */
static int agent_interfaces(once_client *c, const char *agent, const char *url, json_t **doc,
                            once__http_resp *h)
{
    *doc = NULL;
    int64_t min = once__client_now(c) - ONCE__CARD_TTL_MS;
    char *text = NULL;
    int rc = once__outbox_interfaces_get(c->outbox, agent, min, &text);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (text == NULL) {
        once__http_resp_clear(h);
        if ((rc = once__card_read(c, agent, url, h)) == ONCE_ENOMEM)
            return rc;
        if (rc == ONCE_OK &&
            (rc = once__outbox_interfaces_get(c->outbox, agent, min, &text)) == ONCE_ENOMEM)
            return rc;
    }
    if (text != NULL && once__json_loadb(text, strlen(text), 0, doc, NULL) == ONCE_ENOMEM)
        rc = ONCE_ENOMEM;
    once_free(text);
    return rc == ONCE_ENOMEM ? rc : ONCE_OK;
}

/* The interfaces of the card at endpoint itself, for an agent whose cached
 * card is another endpoint's (replicas have interfaces of their own: a
 * gRPC port each); read once per handle. *list borrowed from the handle, or
 * NULL and h saying why; ONCE_ENOMEM. */
static int endpoint_interfaces(once_client *c, const char *endpoint, const json_t **list,
                               once__http_resp *h)
{
    *list = json_object_get(c->endpoint_cards, endpoint);
    if (*list != NULL)
        return ONCE_OK;
    json_t *card = NULL;
    once__http_resp_clear(h);
    int rc = once__card_fetch(c, endpoint, c->retry.attempt_timeout_ms, &card, h);
    json_t *ifs = rc == ONCE_OK ? once__card_interfaces(card) : NULL;
    json_decref(card);
    if (rc == ONCE_ENOMEM || (rc == ONCE_OK && ifs == NULL))
        return ONCE_ENOMEM;
    if (ifs == NULL)
        return ONCE_OK;
    if (c->endpoint_cards == NULL && (c->endpoint_cards = json_object()) == NULL) {
        json_decref(ifs);
        return ONCE_ENOMEM;
    }
    if (json_object_set_new(c->endpoint_cards, endpoint, ifs) != 0)
        return ONCE_ENOMEM;
    *list = ifs;
    return ONCE_OK;
}

/* The interface of this call: from the agent's cached card when it is this
 * endpoint's, or when what it picks is where the call already goes
 * (JSON-RPC, HTTP+JSON at the endpoint); else from the endpoint's own card.
 * ONCE_OK with *f; ONCE_EIO with r filled as a failed transfer (a forced
 * binding without the card it needs, or whose card lists none of it:
 * unusable); ONCE_ENOMEM. */
static int choose(once_client *c, const char *agent, const once__http_req *q, once__iface *f,
                  once__http_resp *r)
{
    once__http_resp h;
    json_t *doc = NULL;
    memset(&h, 0, sizeof h);
    int rc = agent_interfaces(c, agent, q->url, &doc, &h);
    const json_t *list = json_object_get(doc, "list");
    const char *from = json_string_value(json_object_get(doc, "url"));
    if (rc == ONCE_OK && doc == NULL && c->binding != ONCE_BINDING_AUTO &&
        (h.status != 0 || h.error[0] != '\0')) {
        rc = card_failed(c, &h, r);   /* a forced binding needs the card */
    } else if (rc == ONCE_OK) {
        rc = once__iface_pick(list, c->binding, q->url, f);
        int elsewhere = rc == ONCE_OK && f->binding != ONCE_BINDING_JSONRPC &&
                        strcmp(f->url, q->url) != 0 && (from == NULL || strcmp(from, q->url) != 0);
        if (elsewhere && (rc = endpoint_interfaces(c, q->url, &list, &h)) == ONCE_OK) {
            if (list != NULL)
                rc = once__iface_pick(list, c->binding, q->url, f);
            else if (c->binding != ONCE_BINDING_AUTO)
                rc = card_failed(c, &h, r);
            else
                rc = once__iface_pick(NULL, ONCE_BINDING_AUTO, q->url, f);
        }
    }
    json_decref(doc);
    once__http_resp_clear(&h);
    if (rc == ONCE_ENOTFOUND) {
        memset(r, 0, sizeof *r);
        r->unusable = 1;
        snprintf(r->error, sizeof r->error,
                 "the agent's card lists no %s interface at A2A 1.0 (--binding %s); "
                 "--binding auto takes the first one it lists",
                 c->binding == ONCE_BINDING_GRPC ? "GRPC" : "HTTP+JSON",
                 once_binding_name(c->binding));
        return ONCE_EIO;
    }
    return rc;
}

int once__a2a_do(once_client *c, const char *agent, const once__http_req *q,
                 once__http_resp *r)
{
    if (c->binding == ONCE_BINDING_JSONRPC || q->v03)
        return once__http_do(q, r);
    once__iface f;
    int rc = choose(c, agent, q, &f, r);
    if (rc != ONCE_OK || f.binding == ONCE_BINDING_JSONRPC)
        return rc != ONCE_OK ? rc : once__http_do(q, r);
    json_t *doc = NULL;
    if (once__json_loadb(q->body, q->len, 0, &doc, NULL) != ONCE_OK) {
        memset(r, 0, sizeof *r);
        json_decref(doc);
        return ONCE_ENOMEM;   /* the client built this body: only memory fails it */
    }
    const char *method = json_string_value(json_object_get(doc, "method"));
    const json_t *params = json_object_get(doc, "params");
    const json_t *id = json_object_get(doc, "id");
    rc = f.binding == ONCE_BINDING_GRPC
             ? once__grpc_do(c, &f, method ? method : "", params, id, q, r)
             : once__rest_do(c, &f, method ? method : "", params, id, q, r);
    json_decref(doc);
    return rc;
}
