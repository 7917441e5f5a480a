/*
 * slots.h -- the slot functions of a store backend whose slots live in
 * their own files (PostgreSQL, Redis, DynamoDB), named once for all of
 * them (not API).
 *
 * ONCE__STORE_SLOTS(pg) declares once__pg_create .. once__pg_replicas with
 * the signatures of once_store_methods (include/once/store.h), and
 * ONCE__STORE_SLOT_TABLE(pg) names them in that table's initialiser.
 * ONCE__STORE_BACKEND(once__store_pg, pg, "postgres", CAPS, pg_backend)
 * defines the whole table once__store_pg: version, scheme and caps, an open slot that runs
 * once__backend_open over the backend's hooks pg_backend (store_int.h),
 * pg_release (the release hook) as the close slot, and the slots. A
 * slot added to the contract is added here, and the compiler then asks
 * every such backend for it.
 */
#ifndef ONCE_STORE_SLOTS_H
#define ONCE_STORE_SLOTS_H

#include "once/store.h"

#define ONCE__STORE_SLOTS(P)                                                                       \
    int once__##P##_create(once_store *s, const once_record *rec, const once_event *ev,            \
                           size_t nev, once_record *winner, once_tombstone *tomb);                 \
    int once__##P##_load(once_store *s, const char *principal, const char *task_id,                \
                         once_record *out, once_tombstone *tomb);                                  \
    int once__##P##_update(once_store *s, const once_record *rec, int64_t expect_version,          \
                           const once_event *ev, size_t nev);                                      \
    int once__##P##_events(once_store *s, const char *principal, const char *task_id,              \
                           int64_t after, size_t max, once_event_list *out);                       \
    int once__##P##_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out);    \
    int once__##P##_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max,         \
                          size_t *n);                                                              \
    int once__##P##_purge(once_store *s, int64_t expired_before, size_t max, size_t *n);           \
    int once__##P##_list(once_store *s, const once_list_query *q, once_record_list *out);          \
    int once__##P##_meta(once_store *s, const char *name, const char *init_value, char **out);     \
    int once__##P##_check(once_store *s, once_check_report *rep);                                  \
    int once__##P##_renew(once_store *s, const char *principal, const char *task_id,               \
                          const char *owner, int64_t fence, int64_t until);                        \
    int once__##P##_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,    \
                               size_t max, once_push_claim_list *out);                             \
    int once__##P##_push_ack(once_store *s, const once_push_ack *ack);                             \
    int once__##P##_push_rows(once_store *s, const char *principal, const char *task_id,           \
                              once_push_row_list *out);                                            \
    int once__##P##_replica_beat(once_store *s, const once_replica *r);                            \
    int once__##P##_replicas(once_store *s, once_replica_list *out)

#define ONCE__STORE_SLOT_TABLE(P)                                                                  \
    .create = once__##P##_create, .load = once__##P##_load, .update = once__##P##_update,          \
    .events = once__##P##_events, .expired_leases = once__##P##_expired_leases,                    \
    .sweep = once__##P##_sweep, .purge = once__##P##_purge, .list = once__##P##_list,              \
    .meta = once__##P##_meta, .check = once__##P##_check, .renew = once__##P##_renew,              \
    .push_claim = once__##P##_push_claim, .push_ack = once__##P##_push_ack,                        \
    .push_rows = once__##P##_push_rows, .replica_beat = once__##P##_replica_beat,                 \
    .replicas = once__##P##_replicas

/* The change feed's open slot, for a backend whose feed is a connection
 * of its own (store/feed.h: the next and close slots are the shared ones). */
#define ONCE__STORE_CONN_FEED_SLOTS(P)                                                             \
    int once__##P##_feed_open(once_store *s, once_store_feed **out)

/* The head of a methods table whose backend opens through
 * ONCE__STORE_OPEN(P, ...) and closes through P##_release, its release
 * hook: every field but the data slots. */
#define ONCE__STORE_HEAD(P, SCHEME, CAPS)                                                          \
    .version = ONCE_STORE_METHODS_VERSION, .scheme = SCHEME, .caps = CAPS, .open = P##_open_slot,  \
    .close = P##_release

/* Define P##_open_slot, the open slot over once__backend_open(&B); the
 * clock in opt reaches the slots as arguments, so no backend keeps it, and
 * of its flags only the public ones reach the schema step. */
#define ONCE__STORE_OPEN(P, B)                                                                     \
    static int P##_open_slot(const char *url, const once_store_options *opt, once_store **out,    \
                             char *errbuf, size_t errlen)                                          \
    {                                                                                              \
        once__schema sc = {opt ? opt->flags & ONCE_STORE_OPEN_NO_MIGRATE : 0u, 0, 0};              \
        return once__backend_open(&B, url, &sc, out, errbuf, errlen);                              \
    }

/* Define TABLE: ONCE__STORE_OPEN and a table of the slots that
 * ONCE__STORE_SLOTS(P) declares. */
#define ONCE__STORE_BACKEND(TABLE, P, SCHEME, CAPS, B)                                             \
    ONCE__STORE_OPEN(P, B)                                                                         \
    const once_store_methods TABLE = {ONCE__STORE_HEAD(P, SCHEME, CAPS), ONCE__STORE_SLOT_TABLE(P)}

/* ONCE__STORE_BACKEND for a backend with the generations slot
 * (once__##P##_generations): CAPS gets ONCE_STORE_GENERATIONS. */
#define ONCE__STORE_BACKEND_GENERATIONS(TABLE, P, SCHEME, CAPS, B)                                 \
    ONCE__STORE_OPEN(P, B)                                                                         \
    const once_store_methods TABLE = {                                                             \
        ONCE__STORE_HEAD(P, SCHEME, (CAPS) | ONCE_STORE_GENERATIONS), ONCE__STORE_SLOT_TABLE(P),   \
        .generations = once__##P##_generations}

/* ONCE__STORE_BACKEND for a backend with a change feed over a connection
 * of its own (ONCE__STORE_CONN_FEED_SLOTS; the file that expands it
 * includes store/feed.h): CAPS gets ONCE_STORE_FEED. */
#define ONCE__STORE_BACKEND_CONN_FEED(TABLE, P, SCHEME, CAPS, B)                                   \
    ONCE__STORE_OPEN(P, B)                                                                         \
    const once_store_methods TABLE = {ONCE__STORE_HEAD(P, SCHEME, (CAPS) | ONCE_STORE_FEED),       \
                                      ONCE__STORE_SLOT_TABLE(P),                                   \
                                      .feed_open = once__##P##_feed_open,                          \
                                      .feed_next = once__conn_feed_next,                           \
                                      .feed_close = once__conn_feed_close}

#endif
