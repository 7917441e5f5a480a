/*
 * inspect.h -- `once inspect ID`: one task's timeline read from the agent's
 * inspector (onced --inspect, GET /inspect/api/task/ID) and printed for a
 * terminal (internal API for apps/once.c).
 */
#ifndef ONCE_CLIENT_INSPECT_H
#define ONCE_CLIENT_INSPECT_H

#include <stdio.h>

#include "once/client.h"

/* GET the timeline of task_id from the inspector at agent's origin, with
 * the client's token and TLS settings, one attempt (a read: nothing to
 * retry for). ONCE_OK with *text (the JSON as served, once_malloc'd,
 * NUL-terminated); else *text is NULL and once_client_errmsg says why:
 *   ONCE_ENOTFOUND     the agent has no such task for this principal;
 *   ONCE_EUNSUPPORTED  the agent serves no inspector (onced without
 *                      --inspect, or another server);
 *   ONCE_EINVAL        the agent refused the token (401);
 *   ONCE_EIO           no answer, or another status. */
int once__client_inspect(once_client *c, const char *agent, const char *task_id, char **text);

/* Print a timeline (the JSON text above) for a terminal: the record, the
 * retention deadlines, the side-effect keys, push deliveries, then one line
 * per entry. Control characters from the task are made visible (show.h).
 * ONCE_OK, or ONCE_EPARSE when text is not a timeline. */
int once__inspect_print(FILE *f, const char *text);

#endif /* ONCE_CLIENT_INSPECT_H */
