/*
 * reload.h -- reading onced's files again without a restart (SIGHUP), and
 * the loaders start-up, reload and `onced --check-config` share, so a file
 * is judged the same way by all three (internal API for apps/onced.c).
 *
 * Each piece is loaded into a new object and checked whole before it
 * replaces the one served; a piece that fails keeps the old one. Requests
 * already running finish with what they started with (auth.c, tls.h,
 * server.c's card lock).
 */
#ifndef ONCE_HTTP_RELOAD_H
#define ONCE_HTTP_RELOAD_H

#include <stddef.h>

#include "http/serve.h"

/* What a reload reads again: the files onced was started with. NULL (or 0)
 * pieces are skipped. */
typedef struct once__reload_files {
    once_tokens *tokens;          /* the handle the server serves, and */
    const char *tokens_file;      /* its file (--auth-tokens) */
    int tls;                      /* the server's --tls-cert and --tls-key */
    const char *card_file;        /* --card */
    const char *log_level_file;   /* --log-level-file */
} once__reload_files;

/* Read every piece of f again and serve each one that loads; log one line
 * per piece (event "reload": what, file, result, and on failure why) and
 * count the reload in /metrics (once__metrics_reload). Returns the number
 * of pieces that kept their old value. Call from one thread at a time (onced:
 * its main thread), while the server runs. */
int once__server_reload(once_server *s, const once__reload_files *f);

/* --card FILE: its descriptive members, checked (once__a2a_card_parse); on
 * failure err names the file and the field. */
int once__card_file_load(const char *path, json_t **members, char *err, size_t errlen);

/* --log-level-file FILE: one word, error, warn, info or debug (blank lines
 * and '#' comments around it allowed). */
int once__log_level_file_load(const char *path, int *level, char *err, size_t errlen);

#endif /* ONCE_HTTP_RELOAD_H */
