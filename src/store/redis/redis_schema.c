/*
 * redis_schema.c -- the schema version of a Redis store: the string key
 * P:schema (P = prefix) holds the version of the key layout redis.c
 * describes (RD_SCHEMA_VERSION). Every open reads it and asks
 * once__schema_gate (store/migrate.c) what to do: a store marked by a newer
 * once is refused, a probe writes nothing, and under --no-migrate a store
 * without the marker (new, or written before markers existed: its layout
 * is version 1) is refused until `onced migrate` marks it.
 *
 * The marker is written with SET NX and read back: of several first opens
 * one writes and all read the same value. A later layout change adds its
 * step before the marker moves, so a marker never names a layout the keys
 * do not have yet.
 */
#include <stdio.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

/* The marker's version; 0 when absent. A value that is not a version is
 * ONCE_ECORRUPT: something other than once wrote the key. */
static int read_marker(rd_store *s, rd_conn *c, const char *key, int *v)
{
    redisReply *r;
    int64_t n = 0;
    int rc = once__rd_call_key(s, c, "GET", key, &r);

    *v = 0;
    if (rc != ONCE_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING) {
        if (once__rd_num(r, &n) != 0 || n < 1 || n > 1000000) {
            once__store_seterr(&s->base, "redis: key %s holds \"%.*s\", not a schema version",
                               key, r->len > 32 ? 32 : (int)r->len, r->str);
            rc = ONCE_ECORRUPT;
        }
        *v = (int)n;
    } else if (r->type != REDIS_REPLY_NIL) {
        once__store_seterr(&s->base, "redis: key %s is not a string", key);
        rc = ONCE_ECORRUPT;
    }
    freeReplyObject(r);
    return rc;
}

static int write_marker(rd_store *s, rd_conn *c, const char *key)
{
    rd_cmd cmd;

    once__rd_cmd_init(&cmd);
    once__rd_str(&cmd, "SET");
    once__rd_str(&cmd, key);
    once__rd_i64(&cmd, RD_SCHEMA_VERSION);
    once__rd_str(&cmd, "NX");
    return once__rd_call_done(s, c, &cmd, 1);
}

int once__rd_schema(rd_store *s, rd_conn *c, once__schema *sc, int reset)
{
    char where[RD_PREFIX_MAX + 16];
    char *key = once__rd_key_global(s, "schema");
    int v, rc;

    if (!key)
        return ONCE_ENOMEM;
    snprintf(where, sizeof where, "prefix %s", s->prefix);
    rc = read_marker(s, c, key, &v);
    if (rc == ONCE_OK)
        rc = once__schema_gate(&s->base, sc, where, v, RD_SCHEMA_VERSION);
    if (rc >= 0 && !(sc->flags & ONCE__OPEN_PROBE) && (rc == 1 || reset)) {
        /* The reset empties the prefix, the marker with it: mark it again. */
        rc = reset ? once__rd_reset(s, c) : ONCE_OK;
        if (rc == ONCE_OK)
            rc = write_marker(s, c, key);
        /* Another process's SET NX may have won, with another version. */
        if (rc == ONCE_OK)
            rc = read_marker(s, c, key, &v);
        if (rc == ONCE_OK && v != RD_SCHEMA_VERSION) {
            once__schema again = {sc->flags | ONCE_STORE_OPEN_NO_MIGRATE, 0, 0};
            rc = once__schema_gate(&s->base, &again, where, v, RD_SCHEMA_VERSION);
        }
    }
    once_free(key);
    return rc < 0 ? rc : ONCE_OK;
}
