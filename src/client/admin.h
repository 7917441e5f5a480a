/*
 * admin.h -- `once admin ...`: the operator methods of an onced
 * (once/admin/replicas ...) called and printed for a terminal (internal
 * API for apps/once.c).
 */
#ifndef ONCE_CLIENT_ADMIN_H
#define ONCE_CLIENT_ADMIN_H

#include <jansson.h>
#include <stdio.h>

#include "once/client.h"

/* POST the JSON-RPC call method(params) (params borrowed; NULL = {}) to
 * agent with the client's token and TLS settings, one attempt (an
 * operator reads or acts once; nothing is retried behind their back).
 * ONCE_OK with *result (new reference); else *result is NULL and
 * once_client_errmsg says why:
 *   ONCE_EINVAL        the principal may not (HTTP 401 or 403: a token, or
 *                      --admin-principals on the server);
 *   ONCE_EUNSUPPORTED  the agent has no such method (an older onced);
 *   ONCE_EIO           no answer, another error, or not JSON-RPC. */
int once__client_admin(once_client *c, const char *agent, const char *method, json_t *params,
                       json_t **result);

/* The once/admin/replicas answer as a table: id, version, started, last
 * beat, alive, leases. ONCE_OK, or ONCE_EPARSE when it is not one. */
int once__admin_print_replicas(FILE *f, const json_t *result);

#endif /* ONCE_CLIENT_ADMIN_H */
