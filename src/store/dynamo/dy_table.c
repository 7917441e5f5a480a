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
} want_index;

static const want_index indexes[] = {
    {DY_IDX_DUE, "dk", "S", "dt", "N", 0},
    {DY_IDX_LIST, "lp", "S", "lc", "S", 1},
    {DY_IDX_PUSH, "pq", "S", "pt", "S", 0},
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

static int create_table(dy_store *s)
{
    json_t *req = json_pack(
        "{s:s, s:s, s:[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s},"
        "{s:s,s:s}], s:o, s:[{s:s, s:o, s:{s:s, s:[s,s]}}, {s:s, s:o, s:{s:s}},"
        " {s:s, s:o, s:{s:s, s:[s,s]}}]}",
        "TableName", s->table, "BillingMode", "PAY_PER_REQUEST", "AttributeDefinitions",
        "AttributeName", "pk", "AttributeType", "S", "AttributeName", "sk", "AttributeType", "S",
        "AttributeName", "dk", "AttributeType", "S", "AttributeName", "dt", "AttributeType", "N",
        "AttributeName", "lp", "AttributeType", "S", "AttributeName", "lc", "AttributeType", "S",
        "AttributeName", "pq", "AttributeType", "S", "AttributeName", "pt", "AttributeType", "S",
        "KeySchema", key_schema("pk", "sk"), "GlobalSecondaryIndexes", "IndexName", DY_IDX_DUE,
        "KeySchema", key_schema("dk", "dt"), "Projection", "ProjectionType", "INCLUDE",
        "NonKeyAttributes", "pr", "id", "IndexName", DY_IDX_LIST, "KeySchema",
        key_schema("lp", "lc"), "Projection", "ProjectionType", "ALL", "IndexName", DY_IDX_PUSH,
        "KeySchema", key_schema("pq", "pt"), "Projection", "ProjectionType", "INCLUDE",
        "NonKeyAttributes", "pr", "id");
    dy_fail f;
    int rc;

    if (!req)
        return ONCE_ENOMEM;
    rc = once__dy_call(s, "CreateTable", req, DY_CONDITIONAL, NULL, &f);
    json_decref(req);
    /* Someone else (another replica opening at once) created it first. */
    if (rc == ONCE_ESTORE && strcmp(f.type, "ResourceInUseException") == 0)
        rc = ONCE_OK;
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

static int check_schema(dy_store *s, json_t *t, char *errbuf, size_t errlen)
{
    char msg[512] = "", what[160];
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
        if (!g)
            snprintf(what, sizeof what, "missing global secondary index \"%s\" on %s", w->name,
                     keys);
        else if (!has_keys(json_object_get(g, "KeySchema"), w->hash, w->range) ||
                 strcmp(attr_type(t, w->hash), w->hash_type) != 0 ||
                 strcmp(attr_type(t, w->range), w->range_type) != 0)
            snprintf(what, sizeof what, "index \"%s\" must have key %s", w->name, keys);
        else if (!projects_keys(g, w->need_all))
            snprintf(what, sizeof what, "index \"%s\" must project %s", w->name,
                     w->need_all ? "ALL attributes" : "attributes pr and id (INCLUDE or ALL)");
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

int once__dy_table_ready(dy_store *s, char *errbuf, size_t errlen)
{
    json_t *t = NULL;
    int rc;

    if (s->create) {
        rc = create_table(s);
        if (rc == ONCE_OK)
            rc = wait_active(s, &t);
        if (rc == ONCE_OK && s->tomb_ttl_ms > 0)
            enable_ttl(s);
    } else {
        rc = describe(s, &t);
    }
    if (rc == ONCE_ENOTFOUND) {
        once__store_errbuf(errbuf, errlen,
                           "dynamodb: table \"%s\" does not exist in %s at %s (add ?create=1 to "
                           "create it with its indexes \"%s\", \"%s\" and \"%s\")",
                           s->table, s->region, s->endpoint, DY_IDX_DUE, DY_IDX_LIST, DY_IDX_PUSH);
        return ONCE_ENOTFOUND;
    }
    if (rc != ONCE_OK) {
        once__store_errbuf(errbuf, errlen, "dynamodb: cannot read table \"%s\" at %s: %s", s->table,
                           s->endpoint, s->base.errmsg[0] ? s->base.errmsg : once_strerror(rc));
        return rc;
    }
    rc = check_schema(s, t, errbuf, errlen);
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
     * Insert-if-absent, read back: another first open may have won. */
    rc = s->reset ? once__dy_reset(s) : ONCE_OK;
    snprintf(init, sizeof init, "%d", DY_SCHEMA_VERSION);
    if (rc == ONCE_OK)
        rc = read_marker(s, init, &v);
    if (rc == ONCE_OK && v != DY_SCHEMA_VERSION) {
        once__schema again = {sc->flags | ONCE_STORE_OPEN_NO_MIGRATE, 0, 0};
        rc = once__schema_gate(&s->base, &again, where, v, DY_SCHEMA_VERSION);
    }
    return rc;
}
