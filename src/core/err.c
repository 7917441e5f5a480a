/*
 * err.c -- names and descriptions for the closed once_err enum.
 *
 * Invariant: every once_err value has exactly one row in the table below, so
 * once_strerror() and once_errname() never return NULL. Codes are never
 * reused; a new code gets a new row here and a new test in test_err.c.
 */
#include "core/errbuf.h"
#include "once/once.h"

struct err_row {
    int code;
    const char *name;
    const char *text;
};

static const struct err_row err_table[] = {
    {ONCE_OK, "ONCE_OK", "success"},
    {ONCE_ERROR, "ONCE_ERROR", "unspecified failure"},
    {ONCE_ENOMEM, "ONCE_ENOMEM", "out of memory"},
    {ONCE_EINVAL, "ONCE_EINVAL", "invalid argument"},
    {ONCE_EEXISTS, "ONCE_EEXISTS", "record already exists"},
    {ONCE_ENOTFOUND, "ONCE_ENOTFOUND", "not found"},
    {ONCE_ETOMBSTONE, "ONCE_ETOMBSTONE", "record expired (tombstone)"},
    {ONCE_ECONFLICT, "ONCE_ECONFLICT", "version conflict"},
    {ONCE_EFENCED, "ONCE_EFENCED", "stale fence"},
    {ONCE_EILLEGAL, "ONCE_EILLEGAL", "illegal state transition"},
    {ONCE_ESTORE, "ONCE_ESTORE", "store backend failure"},
    {ONCE_EBUSY, "ONCE_EBUSY", "resource busy"},
    {ONCE_EIO, "ONCE_EIO", "I/O error"},
    {ONCE_ERANGE, "ONCE_ERANGE", "value out of range"},
    {ONCE_EPARSE, "ONCE_EPARSE", "parse error"},
    {ONCE_ECORRUPT, "ONCE_ECORRUPT", "stored data is corrupt"},
    {ONCE_EUNSUPPORTED, "ONCE_EUNSUPPORTED", "operation not supported"},
    {ONCE_ETIMEDOUT, "ONCE_ETIMEDOUT", "timed out"},
    {ONCE_ECLOSED, "ONCE_ECLOSED", "handle closed"},
    {ONCE_ECANCELED, "ONCE_ECANCELED", "operation canceled"},
    {ONCE_EOVERLOAD, "ONCE_EOVERLOAD", "too many turns waiting for a worker"},
};

static const struct err_row *err_find(int err)
{
    /* Codes are 0, -1, -2, ... in table order: index directly, then verify. */
    if (err > 0 || err < ONCE_ERR_MIN)
        return NULL;
    const struct err_row *r = &err_table[-err];
    return r->code == err ? r : NULL;
}

const char *once_strerror(int err)
{
    const struct err_row *r = err_find(err);
    return r ? r->text : "unknown error";
}

const char *once_errname(int err)
{
    const struct err_row *r = err_find(err);
    return r ? r->name : "ONCE_E?";
}

char *once__errbuf(char *err, size_t *errlen)
{
    /* Per thread: two callers without a buffer never share the byte. */
    static _Thread_local char scratch[1];
    if (err == NULL) {
        err = scratch;
        *errlen = sizeof scratch;
    }
    if (*errlen > 0)
        err[0] = '\0';
    return err;
}
