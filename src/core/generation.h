/*
 * generation.h -- where a served Task or event carries its generation (not
 * API).
 *
 * A2A 1.0 objects have no member for it, and strict ProtoJSON readers refuse
 * unknown members, so onced puts it where the spec lets an extension put its
 * data: obj.metadata["urn:once:a2a:idempotency:v1"].generation. The server
 * writes it there (engine), and the codec and the client read it back from
 * the same place.
 */
#ifndef ONCE_CORE_GENERATION_H
#define ONCE_CORE_GENERATION_H

#include <jansson.h>

#include "once/once.h"

/* Set obj.metadata[ONCE_IDEMPOTENCY_EXTENSION] = {"generation": generation},
 * creating metadata when obj has none (or a non-object one). ONCE_OK or
 * ONCE_ENOMEM. */
int once__generation_stamp(json_t *obj, int64_t generation);

/* The generation obj carries, or 0 when it carries none (a non-object obj,
 * NULL, a value that is not a positive integer). */
int64_t once__generation_of(const json_t *obj);

#endif
