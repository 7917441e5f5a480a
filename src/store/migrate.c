/*
 * migrate.c -- the schema step every backend's open shares, and `onced
 * migrate` over it.
 *
 * A backend reads the version its store is at and asks once__schema_gate
 * what to do, so that the answer to "may this open write the schema?" and
 * the words of every refusal are the same whatever the backend:
 *   - a version above this once's is never written (a newer once made it:
 *     its layout may mean things this code does not know);
 *   - under ONCE_STORE_OPEN_NO_MIGRATE an older one (or none) is refused,
 *     so a replica rolled out with --no-migrate never migrates under other
 *     replicas still running the old code;
 *   - a probe (ONCE__OPEN_PROBE, `onced migrate --dry-run`) writes nothing.
 */
#include <string.h>

#include "store/store_info.h"
#include "store/store_int.h"

int once__schema_gate(once_store *s, once__schema *sc, const char *where, int found, int target)
{
    const char *sep = where ? " " : "";

    sc->found = found;
    sc->target = target;
    if (found > target || found < 0) {
        once__store_seterr(s,
                           "store%s%s schema is at version %d, this once knows up to %d: "
                           "upgrade once",
                           sep, where ? where : "", found, target);
        return ONCE_EUNSUPPORTED;
    }
    if (found == target || (sc->flags & ONCE__OPEN_PROBE))
        return 0;
    if (sc->flags & ONCE_STORE_OPEN_NO_MIGRATE) {
        once__store_seterr(s,
                           "store%s%s schema is at version %d, this once needs %d: "
                           "run onced migrate",
                           sep, where ? where : "", found, target);
        return ONCE_EUNSUPPORTED;
    }
    return 1;
}

int once__store_migrate(const char *url, int dry_run, int *from, int *to, char *errbuf,
                        size_t errlen)
{
    const once_store_methods *m;
    const once__backend *hooks = NULL;
    once__schema sc = {dry_run ? ONCE__OPEN_PROBE : 0u, 0, 0};
    once_store *s;

    if (errbuf && errlen)
        errbuf[0] = '\0';
    *from = *to = 0;
    int rc = once__store_find(url, &m, &hooks, errbuf, errlen);
    if (rc != ONCE_OK)
        return rc;
    if (!hooks) {
        once__store_errbuf(errbuf, errlen, "%s: keeps nothing between runs: no schema to migrate",
                           m->scheme);
        return ONCE_EUNSUPPORTED;
    }
    /* The hooks, not m->open: a probe's handle may sit on an older layout
     * than the slots expect, so it is closed without ever being served. */
    rc = once__backend_open(hooks, url, &sc, &s, errbuf, errlen);
    if (rc != ONCE_OK)
        return rc;
    *from = sc.found;
    *to = sc.target;
    rc = hooks->release(s);
    if (rc != ONCE_OK)
        once__store_errbuf(errbuf, errlen, "%s: closing after the migration: %s", hooks->name,
                           once_strerror(rc));
    return rc;
}
