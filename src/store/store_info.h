/*
 * store_info.h -- what onced says about the store it opened, in its
 * start-up log line (core/log.h).
 */
#ifndef ONCE_STORE_INFO_H
#define ONCE_STORE_INFO_H

#include "once/store.h"

/* The version of the schema s is kept in: a store this libonce opened was
 * migrated to it, or refused (an older or newer layout is never written).
 * 0 for a backend whose layout has no version (memory, Redis, DynamoDB, a
 * backend built outside libonce) and for NULL. */
int once__store_schema_version(const once_store *s);

#endif /* ONCE_STORE_INFO_H */
