/*
 * slots.h -- how a built-in backend spells its methods table (not API).
 *
 * Every built-in table is ONCE__STORE_TABLE(P, SCHEME, CAPS): it names
 * P_open, P_close, P_create, ... one identifier per slot of
 * once_store_methods (include/once/store.h), in ONCE__STORE_EACH_SLOT's
 * order. The backend defines each as its function, or as NULL for an
 * optional slot it lacks ("#define mem_feed_open NULL"), or as another
 * name ("#define once__pg_feed_next once__conn_feed_next"). So a slot added
 * to the contract is added to ONCE__STORE_EACH_SLOT (store.c asserts at
 * compile time that the list covers the struct), and then no backend
 * compiles until it names the new slot or NULLs it.
 *
 * Backends whose slots live in files of their own (PostgreSQL, Redis,
 * DynamoDB) declare them with ONCE__STORE_SLOTS(P) (P = once__pg: the
 * slots every backend fills, extern) and open through ONCE__STORE_OPEN,
 * which defines P_open over once__backend_open and the backend's hooks.
 */
#ifndef ONCE_STORE_SLOTS_H
#define ONCE_STORE_SLOTS_H

#include "once/store.h"

/* Every slot of once_store_methods, in order: X(P, name). */
#define ONCE__STORE_EACH_SLOT(X, P)                                                                \
    X(P, open) X(P, close) X(P, create) X(P, load) X(P, update) X(P, events)                       \
    X(P, expired_leases) X(P, sweep) X(P, purge) X(P, list) X(P, meta) X(P, check) X(P, renew)     \
    X(P, push_claim) X(P, push_ack) X(P, push_rows) X(P, feed_open) X(P, feed_next)                \
    X(P, feed_close) X(P, generations) X(P, replica_beat) X(P, replicas) X(P, create_start)        \
    X(P, budget) X(P, synchronous)

#define ONCE__STORE_SLOT_INIT(P, name) .name = P##_##name,
#define ONCE__STORE_SLOT_COUNT(P, name) +1

/* The whole methods table of backend P: one initialiser naming every slot. */
#define ONCE__STORE_TABLE(P, SCHEME, CAPS)                                                         \
    {.version = ONCE_STORE_METHODS_VERSION, .scheme = SCHEME, .caps = CAPS,                        \
     ONCE__STORE_EACH_SLOT(ONCE__STORE_SLOT_INIT, P)}

/* Declare the slots every backend fills, P##_create .. P##_renew, with the
 * signatures of once_store_methods, for a backend whose slots are extern. */
#define ONCE__STORE_SLOTS(P)                                                                       \
    int P##_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,        \
                   once_record *winner, once_tombstone *tomb);                                     \
    int P##_load(once_store *s, const char *principal, const char *task_id, once_record *out,      \
                 once_tombstone *tomb);                                                            \
    int P##_update(once_store *s, const once_record *rec, int64_t expect_version,                  \
                   const once_event *ev, size_t nev);                                              \
    int P##_events(once_store *s, const char *principal, const char *task_id, int64_t after,       \
                   size_t max, once_event_list *out);                                              \
    int P##_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out);            \
    int P##_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n);     \
    int P##_purge(once_store *s, int64_t expired_before, size_t max, size_t *n);                   \
    int P##_list(once_store *s, const once_list_query *q, once_record_list *out);                  \
    int P##_meta(once_store *s, const char *name, const char *init_value, char **out);             \
    int P##_check(once_store *s, once_check_report *rep);                                          \
    int P##_renew(once_store *s, const char *principal, const char *task_id, const char *owner,    \
                  int64_t fence, int64_t until)

/* The push and replica slots (ONCE_STORE_PUSH, ONCE_STORE_REPLICAS). */
#define ONCE__STORE_PUSH_REPLICA_SLOTS(P)                                                          \
    int P##_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,            \
                       size_t max, once_push_claim_list *out);                                     \
    int P##_push_ack(once_store *s, const once_push_ack *ack);                                     \
    int P##_push_rows(once_store *s, const char *principal, const char *task_id,                   \
                      once_push_row_list *out);                                                    \
    int P##_replica_beat(once_store *s, const once_replica *r);                                    \
    int P##_replicas(once_store *s, once_replica_list *out)

/* The change feed's open slot, for a backend whose feed is a connection
 * of its own (store/feed.h: the next and close slots are the shared ones,
 * once__conn_feed_next and once__conn_feed_close). */
#define ONCE__STORE_CONN_FEED_SLOTS(P) int P##_feed_open(once_store *s, once_store_feed **out)

/* The create_start slot (ONCE_STORE_CREATE_START). */
#define ONCE__STORE_CREATE_START_SLOT(P)                                                           \
    int P##_create_start(once_store *s, const once_record *rec, const once_event *ev, size_t nev,  \
                         void (*done)(void *arg, int rc), void *arg)

/* Define P##_open, the open slot over once__backend_open(&B); the clock in
 * opt reaches the slots as arguments, so no backend keeps it, and of its
 * flags only the public ones reach the schema step. */
#define ONCE__STORE_OPEN(P, B)                                                                     \
    static int P##_open(const char *url, const once_store_options *opt, once_store **out,          \
                        char *errbuf, size_t errlen)                                               \
    {                                                                                              \
        once__schema sc = {opt ? opt->flags & ONCE_STORE_OPEN_NO_MIGRATE : 0u, 0, 0};              \
        return once__backend_open(&B, url, &sc, out, errbuf, errlen);                              \
    }

#endif
