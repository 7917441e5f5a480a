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

/* An operator method's answer for a terminal: `what` is the admin
 * command (replicas: a table of id, version, started, last beat, alive,
 * leases; leases: a table of the expired ones; release: the new fence;
 * cancel: what was canceled and what failed). ONCE_OK, or ONCE_EPARSE
 * when the answer is not one. */
int once__admin_print(FILE *f, const char *what, const json_t *result);

#endif /* ONCE_CLIENT_ADMIN_H */
