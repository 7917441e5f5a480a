/*
 * card.c -- the A2A 1.0 agent card served at /.well-known/agent-card.json.
 *
 * Built once at startup from the configuration; it says only what the
 * server does: two interfaces at protocol version 1.0, JSONRPC and
 * HTTP+JSON, on the same URL (the routes of rest.c hang below it, the
 * JSON-RPC endpoint is the URL itself), GRPC when onced serves it (its own
 * listener, --grpc-listen), then JSONRPC and HTTP+JSON at 0.3
 * on it too (h_v03.c; 0.3's routes are rest.c's below /v1; listed last,
 * so a client taking the first interface of a binding it speaks takes
 * 1.0, and the 0.3 card names JSONRPC its url), streaming on
 * when the backend can follow events (SSE), push notifications on when the
 * backend has the push config slots (a store with ONCE_STORE_PUSH), the
 * idempotency extension with its
 * retention windows as params, and a bearer security scheme when
 * --auth-tokens is configured. What --card describes (card_file.c) then
 * replaces the descriptive members: name, description, provider, version,
 * documentationUrl, iconUrl, skills, default modes; never the members above.
 * In gateway mode (onced --upstream) the same members come from the
 * upstream's card (card_file.c), with its security schemes, which a bearer
 * scheme of --auth-tokens replaces; when the gateway's refresh reads a
 * changed upstream card, the card is built again with its members
 * (once__a2a_card_with) and everything else as before.
 */
#include "a2a/a2a_int.h"

int once__a2a_card_build(const once__a2a_config *cfg, char **out, size_t *len)
{
    const char *name = cfg->name ? cfg->name : "once";
    const char *desc = cfg->description
                           ? cfg->description
                           : "An A2A 1.0 agent with idempotent sends: a task sent twice runs "
                             "once, a retried message replays, a finished task is remembered.";
    const char *skill = cfg->skill_id ? cfg->skill_id : "agent";
    int streaming = once__a2a_backend_streams(&cfg->backend);
    int push = cfg->backend.push_create != NULL && cfg->backend.push_get != NULL &&
               cfg->backend.push_list != NULL && cfg->backend.push_delete != NULL;
    const char *skill_desc = cfg->skill_description ? cfg->skill_description
                                                    : "Runs one task per message.";
    json_t *ext = json_pack(
        "[{s:s, s:s, s:b, s:{s:I, s:I}}]", "uri", ONCE_A2A_EXTENSION_URI, "description",
        "Client-minted task IDs and idempotent sends: activate with the A2A-Extensions header; "
        "an unknown message.taskId then registers a task under that ID, a retried message "
        "replays (HTTP header Idempotent-Replayed: true), and a finished task's ID is "
        "remembered for retentionSeconds in full and tombstoneSeconds as TASK_EXPIRED.",
        "required", 0, "params", "retentionSeconds", (json_int_t)(cfg->retention_ms / 1000),
        "tombstoneSeconds", (json_int_t)(cfg->tombstone_ms / 1000));
    json_t *card = json_pack(
        "{s:s, s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}],"
        " s:{s:b, s:b, s:b, s:o}, s:[s], s:[s], s:[{s:s, s:s, s:s, s:[s, s]}]}",
        "name", name, "description", desc, "version", ONCE_VERSION_STRING,
        "supportedInterfaces", "url", cfg->url, "protocolBinding", "JSONRPC", "protocolVersion",
        ONCE_A2A_PROTOCOL_VERSION, "url", cfg->url, "protocolBinding", "HTTP+JSON",
        "protocolVersion", ONCE_A2A_PROTOCOL_VERSION, "url", cfg->url, "protocolBinding",
        "JSONRPC", "protocolVersion", ONCE_A2A_V03_VERSION, "url", cfg->url, "protocolBinding",
        "HTTP+JSON", "protocolVersion", ONCE_A2A_V03_VERSION, "capabilities", "streaming",
        streaming, "pushNotifications", push,
        "extendedAgentCard", 0, "extensions", ext, "defaultInputModes", "text/plain",
        "defaultOutputModes", "text/plain", "skills", "id", skill, "name", skill,
        "description", skill_desc, "tags", "once", "idempotent");
    if (card == NULL)
        return ONCE_ENOMEM;
    /* The gRPC interface (onced --grpc-listen) after the two 1.0 ones it
     * serves the same methods as: a gRPC target, "host:port", as gRPC
     * clients take it (A2A 1.0 section 10). */
    json_t *grpc = cfg->grpc_url != NULL
                       ? json_pack("{s:s, s:s, s:s}", "url", cfg->grpc_url, "protocolBinding",
                                   "GRPC", "protocolVersion", ONCE_A2A_PROTOCOL_VERSION)
                       : NULL;
    if (cfg->grpc_url != NULL &&
        json_array_insert_new(json_object_get(card, "supportedInterfaces"), 2, grpc) != 0) {
        json_decref(card);
        return ONCE_ENOMEM;
    }
    /* Checked by once__a2a_card_parse: only descriptive members. */
    if (cfg->card != NULL && json_object_update(card, (json_t *)cfg->card) != 0) {
        json_decref(card);
        return ONCE_ENOMEM;
    }
    if (cfg->auth) {
        json_t *schemes = json_pack("{s:{s:{s:s, s:s}}}", "bearer", "httpAuthSecurityScheme",
                                    "scheme", "Bearer", "description",
                                    "Authorization: Bearer <token>; the token names the "
                                    "principal that owns the tasks");
        json_t *reqs = json_pack("[{s:{s:{s:[]}}}]", "schemes", "bearer", "list");
        if (schemes == NULL || reqs == NULL ||
            json_object_set_new(card, "securitySchemes", schemes) != 0 ||
            json_object_set_new(card, "securityRequirements", reqs) != 0) {
            json_decref(card);
            return ONCE_ENOMEM;
        }
    }
    int rc = once__a2a_json_dump(card, out, len);
    json_decref(card);
    return rc;
}
