/*
 * store_info.h -- what onced says about the store it opened, in its
 * start-up log line (core/log.h), what --check-config says of a URL, and
 * its `migrate` command.
 */
#ifndef ONCE_STORE_INFO_H
#define ONCE_STORE_INFO_H

#include <stddef.h>

#include "once/store.h"

/* The version of the schema s is kept in: a store this libonce opened was
 * migrated to it, or refused (an older or newer layout is never written).
 * 0 for a backend whose layout has no version (memory, a backend built
 * outside libonce) and for NULL. */
int once__store_schema_version(const once_store *s);

/* `onced migrate`: open url's store, apply its pending schema migrations
 * (dry_run = 0) or only look (dry_run = 1: nothing is written, not even a
 * file or a schema created), and close it. *from = the version found
 * (0 = no schema yet), *to = the version this once keeps; from == to: up to
 * date. ONCE_EUNSUPPORTED for a store a newer once migrated past *to, and
 * for memory: (no schema); otherwise open's codes, errbuf saying why. */
int once__store_migrate(const char *url, int dry_run, int *from, int *to, char *errbuf,
                        size_t errlen);

/* url as it may be shown (a log line): the password of its user part
 * ("postgres://user:***@host/db", "redis://:***@host") and the value of a
 * query parameter named password (libpq takes one) become ***; the rest
 * is kept. Cut to fit out[0..n), always NUL-terminated when n > 0. */
void once__store_url_redact(const char *url, char *out, size_t n);

/* Whether once_store_open could take url, judged without opening it
 * (onced --check-config: opening would create a SQLite file or wait for
 * the network): a scheme this libonce has built in. ONCE_OK; else
 * ONCE_EINVAL or ONCE_EUNSUPPORTED with errbuf saying why, in
 * once_store_open's words. */
int once__store_url_check(const char *url, char *errbuf, size_t errlen);

/* The store URL forms, ", "-separated, into out[0..n) (cut to fit, always
 * NUL-terminated when n > 0): "memory:, sqlite:PATH, postgres://..., ...".
 * all = 0: only the schemes built into this libonce (onced --help; a
 * backend left out by -DONCE_POSTGRES=OFF, ... is not named); 1: every
 * scheme once knows (the man page and the README, written once for every
 * build). */
void once__store_url_forms(int all, char *out, size_t n);
/* once__store_url_forms(0, ...) as static text, valid for the process's
 * life (error messages). */
const char *once__store_schemes(void);

#endif /* ONCE_STORE_INFO_H */
