/*
 * inspect.h -- one task's timeline, assembled from what the store holds
 * (internal API for the task inspector, src/http/inspect*.c).
 *
 * Everything comes from store reads (the record or the tombstone, the
 * events, the push delivery rows), never from this replica's memory, so
 * every replica answers the same on every backend. The JSON shape is
 * versioned ("inspect": ONCE_INSPECT_VERSION) and documented in
 * docs/wire.md ("The task inspector"); `entries` is sorted by time, and
 * later kinds of entry join it without changing the others.
 */
#ifndef ONCE_ENGINE_INSPECT_H
#define ONCE_ENGINE_INSPECT_H

#include <jansson.h>

#include "engine/engine.h"

#define ONCE_INSPECT_VERSION 1
/* The newest events a timeline shows; older ones are counted, not listed
 * ("eventsOmitted"), so a timeline's size does not grow with the task's
 * age. */
#define ONCE_INSPECT_MAX_EVENTS 500
/* Side-effect keys listed (steps 0..n-1); past it the count is given. */
#define ONCE_INSPECT_MAX_KEYS 100
/* Artifacts listed, and parts of each; past them the count is given. */
#define ONCE_INSPECT_MAX_ARTIFACTS 50
#define ONCE_INSPECT_MAX_PARTS 20
/* Bytes of an event's text kept in its entry (cut at a UTF-8 boundary). */
#define ONCE_INSPECT_TEXT_MAX 240

/* The timeline of (principal, task_id): *out is a new reference. ONCE_OK;
 * ONCE_ENOTFOUND when the key holds nothing (also for another principal's
 * task and for an ID no task can carry: the answer GetTask gives); a
 * store error (ONCE_ESTORE, ONCE_EBUSY: retryable) or ONCE_ENOMEM. A
 * tombstoned ID is ONCE_OK with "expired" set. */
int once__engine_inspect(once__engine *e, const char *principal, const char *task_id,
                         json_t **out);

/* Part `index` of the artifact `artifact_id` of (principal, task_id), for
 * the inspector's download: *out is a new reference,
 * {"kind": "text"|"file"|"data", "artifact": the artifact's name or absent,
 *  "text" | "raw" (base64), "url", "filename", "mediaType" | "data"}
 * (A2A 0.3 file parts read as 1.0's). ONCE_OK; ONCE_ENOTFOUND when the
 * task, the artifact or the part is not there (another principal's task
 * and a tombstone too); a store error, ONCE_ECORRUPT or ONCE_ENOMEM. */
int once__engine_inspect_part(once__engine *e, const char *principal, const char *task_id,
                              const char *artifact_id, size_t index, json_t **out);

#endif /* ONCE_ENGINE_INSPECT_H */
