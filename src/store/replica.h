/*
 * replica.h -- helpers the store backends share for replica heartbeat rows
 * (replica.c; not API).
 */
#ifndef ONCE_STORE_REPLICA_H
#define ONCE_STORE_REPLICA_H

#include "once/store.h"

/* Room for once__replica_encode's text: four numbers, four spaces, the
 * version and the NUL. */
#define ONCE__REPLICA_TEXT_MAX (4 * 21 + 4 + ONCE_REPLICA_VERSION_MAX + 1)

/* once_store_replica_beat's check of r (store.h): ONCE_OK or ONCE_EINVAL
 * with s->errmsg set. */
int once__store_valid_replica(once_store *s, const once_replica *r);

/* Append a copy of *r (ONCE_ENOMEM leaves l as it was). */
int once__replica_append(once_replica_list *l, const once_replica *r);
/* Replace the element with r->id, or append. */
int once__replica_upsert(once_replica_list *l, const once_replica *r);
/* Sort by id, as the replicas slot answers. */
void once__replica_sort(once_replica_list *l);
/* dst (overwritten) = a sorted copy of src. */
int once__replica_copy(once_replica_list *dst, const once_replica_list *src);

/* Every field of r but the id as one string, and back (the id comes from
 * the key it was stored under): ONCE_ECORRUPT for a text this did not
 * write, or an id that does not fit. */
void once__replica_encode(const once_replica *r, char buf[ONCE__REPLICA_TEXT_MAX]);
int once__replica_decode(const char *id, size_t idlen, const char *text, size_t len,
                         once_replica *out);

#endif
