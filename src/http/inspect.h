/*
 * inspect.h -- the task inspector onced serves under /inspect/ with
 * --inspect (internal to src/http; docs/wire.md, "The task inspector").
 *
 *   GET  /inspect/                  the principal's tasks: server-rendered
 *                                   HTML, filters and pages through ListTasks
 *   GET  /inspect/task/ID           one task's timeline, as HTML
 *   GET  /inspect/api/task/ID       the same timeline as JSON
 *   GET  /inspect/file/ID?artifact=A&part=N
 *                                   one part of an artifact, as an attachment
 *                                   of a type that renders nothing
 *   GET  /inspect/api/stream/ID     the task's SSE stream (SubscribeToTask)
 *   GET  /inspect/login             a form that takes a bearer token
 *   POST /inspect/login             sets a session cookie, back to the list
 *   GET  /inspect/inspect.js, .css  the one script and style sheet
 *
 * Authentication is the JSON-RPC endpoint's: an Authorization: Bearer
 * header, or the session the login form sets as an HttpOnly cookie (signed
 * with the token's digest, expiring, never the token itself); a principal sees
 * only its own tasks (another's answers 404, as GetTask does). Every answer
 * carries a Content-Security-Policy that allows nothing but this origin
 * and no inline script or style. Everything taken from a task is
 * HTML-escaped. Pages are rendered on the libmicrohttpd thread (one store
 * read for a list, a few for a timeline), like /readyz.
 */
#ifndef ONCE_HTTP_INSPECT_H
#define ONCE_HTTP_INSPECT_H

#include <jansson.h>
#include <microhttpd.h>

#include "core/metrics.h"
#include "http/http.h"

typedef struct once__inspect once__inspect;

/* cfg is copied; tokens (NULL: no authentication) and codec are borrowed
 * and outlive it; secure: onced serves TLS (the cookie is Secure). *out is
 * NULL (and ONCE_OK) when cfg->on is 0. */
int once__inspect_new(const once_http_inspect *cfg, const once_tokens *tokens, once__a2a *codec,
                      int secure, once__inspect **out);
void once__inspect_free(once__inspect *in);   /* NULL ok */

/* What once__inspect_route did with a request. */
enum {
    ONCE__INSPECT_NOT_MINE = 0,   /* not below /inspect, or the inspector is off */
    ONCE__INSPECT_ANSWERED = 1,   /* answered: MHD's result in *ret */
    ONCE__INSPECT_LOGIN = 2,      /* POST /inspect/login: read the body, then
                                     call once__inspect_login */
    ONCE__INSPECT_STREAM = 3      /* GET /inspect/api/stream/ID: serve it as the
                                     JSON-RPC SubscribeToTask of *stream */
};

/* A task stream the inspector asks the server for: the signed-in
 * principal (a copy: the tokens may be re-read meanwhile) and the task ID
 * (in the request's URL). */
typedef struct once__inspect_stream {
    char principal[ONCE_PRINCIPAL_MAX + 1];
    const char *task_id;
} once__inspect_stream;

/* The first call for a request (in may be NULL: off). */
int once__inspect_route(once__inspect *in, struct MHD_Connection *conn, const char *url,
                        const char *method, enum MHD_Result *ret, once__inspect_stream *stream);

/* Answer POST /inspect/login with its form body body[0..len). */
enum MHD_Result once__inspect_login(once__inspect *in, struct MHD_Connection *conn,
                                    const char *body, size_t len);

/* --- inside the inspector (inspect.c, inspect_html.c, inspect_assets.c) --- */

/* Append s HTML-escaped (& < > " ') to t; NULL appends nothing. */
void once__html_text(once__mtext *t, const char *s);
/* Append s percent-encoded for a URL query or path segment. */
void once__url_text(once__mtext *t, const char *s);

/* The filters of the list page, as given in its query (NULL = absent). */
typedef struct once__inspect_filter {
    const char *state, *context, *after, *page;
} once__inspect_filter;

/* The list page from a ListTasks result ({tasks, nextPageToken}) or, when
 * error is non-NULL, with that message instead of the table; cluster: the
 * once/admin/replicas answer, shown first for an operator (NULL: none). */
void once__inspect_list_page(once__mtext *t, const once__inspect_filter *f, const json_t *result,
                             const char *error, const char *principal, const json_t *cluster);
/* The task page from a timeline (engine/inspect.h's JSON). */
void once__inspect_task_page(once__mtext *t, const json_t *timeline);
/* A page with a title and one paragraph of text (errors, the login form
 * when form is set). */
void once__inspect_note_page(once__mtext *t, const char *title, const char *text, int form);

/* The static files: the script and the style sheet. */
extern const char once__inspect_js[];
extern const char once__inspect_css[];

#endif /* ONCE_HTTP_INSPECT_H */
