/*
 * backend.c -- the open every backend with a handle of its own shares
 * (SQLite, PostgreSQL, Redis, DynamoDB): allocate the handle, read the URL
 * into it, start it, and on any failure release what was made and leave a
 * message in errbuf. What differs between backends stays in their hooks
 * (once__backend, store_int.h); the methods table itself is spelled once,
 * by ONCE__STORE_TABLE (slots.h).
 *
 * Invariant: release is the only way a handle goes, whether open failed
 * half way or close was called; so a backend frees in one place and every
 * field it frees must be safe to free when still zeroed by calloc.
 */
#include "store/store_int.h"

int once__backend_open(const once__backend *b, const char *url, once__schema *sc,
                       once_store **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    once_store *s = once_calloc(1, b->size);
    if (!s) {
        once__store_errbuf(errbuf, errlen, "%s: out of memory", b->name);
        return ONCE_ENOMEM;
    }
    int rc = b->parse(s, url, errbuf, errlen);
    if (rc == ONCE_OK) {
        sc->found = 0;
        sc->target = b->schema_version;
        rc = b->start(s, sc, errbuf, errlen);
        /* A start that failed inside a slot helper left its reason in errmsg. */
        if (rc != ONCE_OK && errbuf && errlen && !errbuf[0] && s->errmsg[0])
            once__store_errbuf(errbuf, errlen, "%s", s->errmsg);
    }
    if (rc != ONCE_OK) {
        b->release(s);
        return rc;
    }
    s->errmsg[0] = '\0';
    *out = s;
    return ONCE_OK;
}
