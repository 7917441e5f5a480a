/*
 * dy_table.c -- the table the DynamoDB backend needs, created on request
 * (?create=1) and otherwise checked: open refuses a table whose key schema
 * or indexes differ from what the backend reads and writes, and names
 * exactly what is missing, rather than fail later on the first write.
 *
 *   table          pk (S, HASH), sk (S, RANGE)
 *   index due      dk (S, HASH), dt (N, RANGE), projecting pr and id
 *   index by_principal  lp (S, HASH), lc (S, RANGE), projecting ALL
 *   index push     pq (S, HASH), pt (S, RANGE), projecting pr and id
 *   index by_context  lx (S, HASH), lc (S, RANGE), projecting ALL; a table
 *                  made before it existed (layout version 1) gets it from
 *                  ?create=1 by UpdateTable, and its records get "lx" from
 *                  the upgrade (dy_upgrade.c)
 *   TTL            on attribute "ttl" (tombstones; enabled by ?create=1
 *                  when tomb_ttl_ms is set, where the endpoint offers it)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

#define POLL_MS 100

typedef struct want_index {
    const char *name, *hash, *hash_type, *range, *range_type;
    int need_all; /* list reads whole records from it */
    int since;    /* the layout version that added it: after 1, ?create=1
                   * adds it to an older table */
} want_index;

static const want_index indexes[] = {
    {DY_IDX_DUE, "dk", "S", "dt", "N", 0, 1},
    {DY_IDX_LIST, "lp", "S", "lc", "S", 1, 1},
    {DY_IDX_PUSH, "pq", "S", "pt", "S", 0, 1},
    {DY_IDX_CTX, "lx", "S", "lc", "S", 1, 2},
};

static int describe(dy_store *s, json_t **table)
{
    json_t *req = json_pack("{s:s}", "TableName", s->table), *reply = NULL;
    int rc;

    *table = NULL;
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "DescribeTable", req, DY_IDEMPOTENT, &reply, NULL);
    json_decref(req);
    if (rc == ONCE_OK) {
        *table = json_incref(json_object_get(reply, "Table"));
        json_decref(reply);
        if (!*table)
            rc = ONCE_ESTORE;
    }
    return rc;
}

static json_t *key_schema(const char *hash, const char *range)
{
    return json_pack("[{s:s, s:s}, {s:s, s:s}]", "AttributeName", hash, "KeyType", "HASH",
                     "AttributeName", range, "KeyType", "RANGE");
}

/* The definition of index w, as CreateTable and UpdateTable take it. */
static json_t *index_def(const want_index *w)
{
    json_t *proj = w->need_all ? json_pack("{s:s}", "ProjectionType", "ALL")
                               : json_pack("{s:s, s:[s,s]}", "ProjectionType", "INCLUDE",
                                           "NonKeyAttributes", "pr", "id");

    return proj ? json_pack("{s:s, s:o, s:o}", "IndexName", w->name, "KeySchema",
                            key_schema(w->hash, w->range), "Projection", proj)
                : NULL;
}

/* Append {name, type} to defs unless it is there (indexes share "lc"). */
static int add_attr(json_t *defs, const char *name, const char *type)
{
    json_t *a;
    size_t i;

    json_array_foreach(defs, i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "AttributeName")) ?: "", name) == 0)
            return ONCE_OK;
    }
    return json_array_append_new(defs, json_pack("{s:s, s:s}", "AttributeName", name,
                                                 "AttributeType", type)) == 0
               ? ONCE_OK
               : ONCE_ENOMEM;
}

/* The attribute definitions of index w's keys into defs. */
static int add_index_attrs(json_t *defs, const want_index *w)
{
    int rc = add_attr(defs, w->hash, w->hash_type);
    return rc == ONCE_OK ? add_attr(defs, w->range, w->range_type) : rc;
}

static int create_table(dy_store *s)
{
    json_t *defs = json_array(), *gsis = json_array(), *req;
    int rc = defs && gsis ? ONCE_OK : ONCE_ENOMEM;
    size_t i;
    dy_fail f;

    if (rc == ONCE_OK)
        rc = add_attr(defs, "pk", "S");
    if (rc == ONCE_OK)
        rc = add_attr(defs, "sk", "S");
    for (i = 0; rc == ONCE_OK && i < sizeof indexes / sizeof indexes[0]; i++) {
        rc = add_index_attrs(defs, &indexes[i]);
        if (rc == ONCE_OK && json_array_append_new(gsis, index_def(&indexes[i])) != 0)
            rc = ONCE_ENOMEM;
    }
    req = rc == ONCE_OK ? json_pack("{s:s, s:s, s:O, s:o, s:O}", "TableName", s->table,
                                    "BillingMode", "PAY_PER_REQUEST", "AttributeDefinitions", defs,
                                    "KeySchema", key_schema("pk", "sk"), "GlobalSecondaryIndexes",
                                    gsis)
                        : NULL;
    json_decref(defs);
    json_decref(gsis);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "CreateTable", req, DY_CONDITIONAL, NULL, &f);
    json_decref(req);
    /* Someone else (another replica opening at once) created it first. */
    if (rc == ONCE_ESTORE && strcmp(f.type, "ResourceInUseException") == 0)
        rc = ONCE_OK;
    return rc;
}

/* Add index w to an existing table (one made before w was part of the
 * layout). DynamoDB builds it from the items already there (its
 * "backfilling"); wait_active waits for that. Another replica adding it at
 * the same moment is not an error: the index is on its way either way. */
static int add_index(dy_store *s, const want_index *w)
{
    json_t *defs = json_array(), *req = NULL;
    int rc = defs ? add_index_attrs(defs, w) : ONCE_ENOMEM;
    dy_fail f;

    if (rc == ONCE_OK)
        req = json_pack("{s:s, s:O, s:[{s:o}]}", "TableName", s->table, "AttributeDefinitions",
                        defs, "GlobalSecondaryIndexUpdates", "Create", index_def(w));
    json_decref(defs);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "UpdateTable", req, DY_CONDITIONAL, NULL, &f);
    json_decref(req);
    if (rc == ONCE_ESTORE && (strcmp(f.type, "ResourceInUseException") == 0 ||
                              strstr(f.msg, "already exists") != NULL))
        rc = ONCE_OK;
    if (rc != ONCE_OK)
        once__store_seterr(&s->base, "dynamodb: cannot add index \"%s\" to table \"%s\": %s %s",
                           w->name, s->table, f.type, f.msg);
    return rc;
}

static void enable_ttl(dy_store *s)
{
    json_t *req = json_pack("{s:s, s:{s:b, s:s}}", "TableName", s->table, "TimeToLiveSpecification",
                            "Enabled", 1, "AttributeName", "ttl");
    dy_fail f;

    /* Best effort: an endpoint without TTL (dynalite) or a table that has it
     * already leaves purge to delete tombstones, which it does anyway. */
    if (req)
        (void)once__dy_call(s, "UpdateTimeToLive", req, DY_IDEMPOTENT, NULL, &f);
    json_decref(req);
    s->base.errmsg[0] = '\0';
}

static int is_active(json_t *t)
{
    json_t *g;
    size_t i;

    if (strcmp(json_string_value(json_object_get(t, "TableStatus")) ?: "", "ACTIVE") != 0)
        return 0;
    json_array_foreach(json_object_get(t, "GlobalSecondaryIndexes"), i, g)
    {
        if (strcmp(json_string_value(json_object_get(g, "IndexStatus")) ?: "", "ACTIVE") != 0)
            return 0;
    }
    return 1;
}

/* Describe the table until it and its indexes are active. */
static int wait_active(dy_store *s, json_t **table)
{
    int64_t until = once_monotonic_ms() + DY_CREATE_WAIT_MS;
    int rc;

    for (;;) {
        rc = describe(s, table);
        if (rc != ONCE_OK || is_active(*table))
            return rc;
        json_decref(*table);
        *table = NULL;
        if (once_monotonic_ms() > until)
            return ONCE_ETIMEDOUT;
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* 1 if schema (a KeySchema array) is exactly hash + range. */
static int has_keys(json_t *schema, const char *hash, const char *range)
{
    json_t *want = key_schema(hash, range);
    int ok = want && json_equal(schema, want);

    json_decref(want);
    return ok;
}

/* The declared type of attribute name, or "". */
static const char *attr_type(json_t *t, const char *name)
{
    json_t *a;
    size_t i;

    json_array_foreach(json_object_get(t, "AttributeDefinitions"), i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "AttributeName")) ?: "", name) == 0)
            return json_string_value(json_object_get(a, "AttributeType")) ?: "";
    }
    return "";
}

static json_t *find_index(json_t *t, const char *name)
{
    json_t *g;
    size_t i;

    json_array_foreach(json_object_get(t, "GlobalSecondaryIndexes"), i, g)
    {
        if (strcmp(json_string_value(json_object_get(g, "IndexName")) ?: "", name) == 0)
            return g;
    }
    return NULL;
}

/* 1 if index g makes pr and id readable. */
static int projects_keys(json_t *g, int need_all)
{
    json_t *p = json_object_get(g, "Projection"), *na = json_object_get(p, "NonKeyAttributes");
    const char *type = json_string_value(json_object_get(p, "ProjectionType")) ?: "";
    int pr = 0, id = 0;
    json_t *a;
    size_t i;

    if (strcmp(type, "ALL") == 0)
        return 1;
    if (need_all || strcmp(type, "INCLUDE") != 0)
        return 0;
    json_array_foreach(na, i, a)
    {
        pr |= strcmp(json_string_value(a) ?: "", "pr") == 0;
        id |= strcmp(json_string_value(a) ?: "", "id") == 0;
    }
    return pr && id;
}

/* Append "; <what>" to msg. */
static void miss(char *msg, size_t cap, const char *what)
{
    size_t n = strlen(msg);

    if (n < cap)
        snprintf(msg + n, cap - n, "; %s", what);
}

/* probe: the handle will serve close alone, so an index that a later
 * layout added may be missing (the marker then says which version). */
static int check_schema(dy_store *s, json_t *t, int probe, char *errbuf, size_t errlen)
{
    char msg[768] = "", what[192];
    size_t i;

    if (!has_keys(json_object_get(t, "KeySchema"), "pk", "sk") ||
        strcmp(attr_type(t, "pk"), "S") != 0 || strcmp(attr_type(t, "sk"), "S") != 0)
        miss(msg, sizeof msg, "key schema must be pk (S, HASH) + sk (S, RANGE)");
    for (i = 0; i < sizeof indexes / sizeof indexes[0]; i++) {
        const want_index *w = &indexes[i];
        json_t *g = find_index(t, w->name);
        char keys[96];
        snprintf(keys, sizeof keys, "%s (%s, HASH) + %s (%s, RANGE)", w->hash, w->hash_type,
                 w->range, w->range_type);
        const char *status = json_string_value(json_object_get(g, "IndexStatus")) ?: "ACTIVE";
        if (!g && probe && w->since > 1)
            continue;
        if (!g)
            snprintf(what, sizeof what, "missing global secondary index \"%s\" on %s%s", w->name,
                     keys,
                     w->since > 1 ? " (add ?create=1 to add it, or see docs/production.md)" : "");
        else if (!has_keys(json_object_get(g, "KeySchema"), w->hash, w->range) ||
                 strcmp(attr_type(t, w->hash), w->hash_type) != 0 ||
                 strcmp(attr_type(t, w->range), w->range_type) != 0)
            snprintf(what, sizeof what, "index \"%s\" must have key %s", w->name, keys);
        else if (!projects_keys(g, w->need_all))
            snprintf(what, sizeof what, "index \"%s\" must project %s", w->name,
                     w->need_all ? "ALL attributes" : "attributes pr and id (INCLUDE or ALL)");
        else if (strcmp(status, "CREATING") == 0 || strcmp(status, "DELETING") == 0)
            snprintf(what, sizeof what, "index \"%s\" is %s: wait until it is ACTIVE", w->name,
                     status);
        else
            continue;
        miss(msg, sizeof msg, what);
    }
    if (!msg[0])
        return ONCE_OK;
    once__store_errbuf(errbuf, errlen, "dynamodb: table \"%s\" at %s does not fit: %s", s->table,
                       s->endpoint, msg + 2);
    return ONCE_EINVAL;
}

/* reset=1 (tests) empties the table anyway: a table of an older layout is
 * dropped and made again, which an emulator that cannot add an index
 * (dynalite) also serves. */
static int recreate(dy_store *s, json_t **t)
{
    json_t *req = json_pack("{s:s}", "TableName", s->table);
    int64_t until = once_monotonic_ms() + DY_CREATE_WAIT_MS;
    int rc;

    json_decref(*t);
    *t = NULL;
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "DeleteTable", req, DY_IDEMPOTENT, NULL, NULL);
    json_decref(req);
    if (rc == ONCE_ENOTFOUND)
        rc = ONCE_OK;
    /* Until the deletion is done CreateTable answers "in use". */
    while (rc == ONCE_OK && (rc = describe(s, t)) == ONCE_OK) {
        json_decref(*t);
        *t = NULL;
        if (once_monotonic_ms() > until)
            return ONCE_ETIMEDOUT;
        once__dy_pause_ms(POLL_MS);
    }
    if (rc == ONCE_ENOTFOUND) {
        s->base.errmsg[0] = '\0'; /* the answer awaited, not an error */
        rc = create_table(s);
    }
    return rc == ONCE_OK ? wait_active(s, t) : rc;
}

/* Add to a table of an older layout (its keys are once's) the indexes
 * that layout lacked, one at a time (DynamoDB builds one new index per
 * table at once), each waited for until it is active: *t is described
 * again after each. */
static int add_missing(dy_store *s, json_t **t)
{
    size_t i;
    int rc = ONCE_OK;

    if (!has_keys(json_object_get(*t, "KeySchema"), "pk", "sk"))
        return ONCE_OK; /* not once's table: check_schema says so */
    for (i = 0; s->reset && i < sizeof indexes / sizeof indexes[0]; i++)
        if (!find_index(*t, indexes[i].name))
            return recreate(s, t);
    for (i = 0; rc == ONCE_OK && i < sizeof indexes / sizeof indexes[0]; i++) {
        if (indexes[i].since <= 1 || find_index(*t, indexes[i].name))
            continue;
        json_decref(*t);
        *t = NULL;
        rc = add_index(s, &indexes[i]);
        if (rc == ONCE_OK)
            rc = wait_active(s, t);
        /* dynalite accepts the request and adds nothing. */
        if (rc == ONCE_OK && !find_index(*t, indexes[i].name)) {
            once__store_seterr(&s->base,
                               "dynamodb: %s accepted adding index \"%s\" to table \"%s\" but "
                               "did not add it (dynalite cannot): create the table anew",
                               s->endpoint, indexes[i].name, s->table);
            rc = ONCE_EUNSUPPORTED;
        }
        if (rc == ONCE_ETIMEDOUT)
            once__store_seterr(&s->base,
                               "dynamodb: index \"%s\" of table \"%s\" is still being built "
                               "after %d s: open again with ?create=1 to go on waiting",
                               indexes[i].name, s->table, DY_CREATE_WAIT_MS / 1000);
    }
    return rc;
}

int once__dy_table_ready(dy_store *s, int probe, char *errbuf, size_t errlen)
{
    json_t *t = NULL;
    int rc;

    if (s->create) {
        rc = create_table(s);
        if (rc == ONCE_OK)
            rc = wait_active(s, &t);
        if (rc == ONCE_OK)
            rc = add_missing(s, &t);
        if (rc == ONCE_OK && s->tomb_ttl_ms > 0)
            enable_ttl(s);
    } else {
        rc = describe(s, &t);
    }
    if (rc == ONCE_ENOTFOUND) {
        once__store_errbuf(errbuf, errlen,
                           "dynamodb: table \"%s\" does not exist in %s at %s (add ?create=1 to "
                           "create it with its indexes \"%s\", \"%s\", \"%s\" and \"%s\")",
                           s->table, s->region, s->endpoint, DY_IDX_DUE, DY_IDX_LIST, DY_IDX_CTX,
                           DY_IDX_PUSH);
        return ONCE_ENOTFOUND;
    }
    if (rc != ONCE_OK) {
        json_decref(t);
        once__store_errbuf(errbuf, errlen, "dynamodb: table \"%s\" at %s: %s", s->table,
                           s->endpoint, s->base.errmsg[0] ? s->base.errmsg : once_strerror(rc));
        return rc;
    }
    rc = check_schema(s, t, probe, errbuf, errlen);
    json_decref(t);
    return rc;
}

/* The marker's version (0 when absent); ONCE_ECORRUPT when its value is
 * not one: something other than once wrote the item. */
static int read_marker(dy_store *s, const char *init, int *v)
{
    char *val = NULL, *end;
    int rc = once__dy_meta(&s->base, DY_META_SCHEMA, init, &val);

    *v = 0;
    if (rc == ONCE_ENOTFOUND)
        return ONCE_OK;
    if (rc != ONCE_OK)
        return rc;
    errno = 0;
    long n = strtol(val, &end, 10);
    if (errno || end == val || *end || n < 1 || n > 1000000) {
        once__store_seterr(&s->base, "dynamodb: meta item \"%s\" holds \"%.32s\", not a schema "
                           "version", DY_META_SCHEMA, val);
        rc = ONCE_ECORRUPT;
    }
    *v = (int)n;
    once_free(val);
    return rc;
}

/* Raise the marker from version `from` to DY_SCHEMA_VERSION, unless
 * another open moved it meanwhile (the caller reads it back). */
static int raise_marker(dy_store *s, int from)
{
    char pk[32], was[24], to[24];
    json_t *req;
    int rc;

    snprintf(pk, sizeof pk, "m:%s", DY_META_SCHEMA);
    snprintf(was, sizeof was, "%d", from);
    snprintf(to, sizeof to, "%d", DY_SCHEMA_VERSION);
    req = json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}}, s:s, s:{s:{s:s}}}", "TableName",
                    s->table, "Item", "pk", "S", pk, "sk", "S", DY_SK_META, "val", "S", to,
                    "ConditionExpression", "#val = :was", "ExpressionAttributeValues", ":was", "S",
                    was);
    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "PutItem", req, DY_CONDITIONAL, NULL, NULL);
    json_decref(req);
    return rc == ONCE_ECONFLICT ? ONCE_OK : rc;
}

int once__dy_schema(dy_store *s, once__schema *sc, int have_table)
{
    char where[DY_TABLE_MAX + 16], init[24];
    int v = 0, rc = ONCE_OK;

    snprintf(where, sizeof where, "table %s", s->table);
    if (have_table)
        rc = read_marker(s, NULL, &v);
    if (rc == ONCE_OK)
        rc = once__schema_gate(&s->base, sc, where, v, DY_SCHEMA_VERSION);
    if (rc < 0 || (sc->flags & ONCE__OPEN_PROBE) || (rc == 0 && !s->reset))
        return rc < 0 ? rc : ONCE_OK;
    /* The reset deletes every item, the marker with it: mark it again.
     * Otherwise the records of an older layout get what version 2 added
     * (dy_upgrade.c) before the marker says 2. */
    if (s->reset)
        rc = once__dy_reset(s);
    else if (have_table && v < 2)
        rc = once__dy_upgrade(s);
    else
        rc = ONCE_OK;
    /* Insert-if-absent, read back: another first open may have won. */
    snprintf(init, sizeof init, "%d", DY_SCHEMA_VERSION);
    if (rc == ONCE_OK)
        rc = read_marker(s, init, &v);
    if (rc == ONCE_OK && v > 0 && v < DY_SCHEMA_VERSION) {
        rc = raise_marker(s, v);
        if (rc == ONCE_OK)
            rc = read_marker(s, NULL, &v);
    }
    if (rc == ONCE_OK && v != DY_SCHEMA_VERSION) {
        once__schema again = {sc->flags | ONCE_STORE_OPEN_NO_MIGRATE, 0, 0};
        rc = once__schema_gate(&s->base, &again, where, v, DY_SCHEMA_VERSION);
    }
    return rc;
}
