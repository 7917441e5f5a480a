/*
 * json_depth.h -- the nesting limit on values that clients and agents supply
 * (not API): message and part metadata, part data, artifact data and
 * metadata, task metadata.
 *
 * Invariant: such a value is accepted only when it nests at most
 * ONCE_VALUE_MAX_DEPTH deep, so every envelope it is later served in (the
 * deepest is a ListTasks page: response > result > tasks[] > Task > history[]
 * > Message > parts[] > Part, 8 levels) stays within ONCE_JSON_MAX_DEPTH, the
 * limit of the reader and of the writer. A value that could be stored but not
 * served would break every answer that includes it.
 */
#ifndef ONCE_CORE_JSON_DEPTH_H
#define ONCE_CORE_JSON_DEPTH_H

#include "once/once.h"

#include <jansson.h>

#define ONCE_VALUE_MAX_DEPTH 32

/* Levels of envelope around a supplied value in the deepest answer served. */
#define ONCE_ENVELOPE_MAX_DEPTH 8

_Static_assert(ONCE_VALUE_MAX_DEPTH + ONCE_ENVELOPE_MAX_DEPTH <= ONCE_JSON_MAX_DEPTH,
               "a value at the limit must fit in every envelope");

/* Nesting depth of v: 0 for a scalar, 1 for [] or {} of scalars, and so on.
 * Counting stops past limit (the result is then limit + 1), so the cost and
 * the recursion are bounded by limit whatever v holds. */
int once__json_depth(const json_t *v, int limit);

#endif
