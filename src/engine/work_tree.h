/*
 * work_tree.h -- the work context's calls for an executor built into the
 * library (src/exec/echo.c) that holds its JSON as jansson trees already:
 * the same fenced writes as include/once/executor.h, without writing the
 * JSON out as text for the engine to parse it back.
 */
#ifndef ONCE_ENGINE_WORK_TREE_H
#define ONCE_ENGINE_WORK_TREE_H

#include <jansson.h>

#include "once/executor.h"

/* The message that started the turn (once_work_message), borrowed: valid
 * until run() returns; never NULL while run() runs. */
const json_t *once__work_message_tree(const once_work *w);

/* once_work_artifact with the artifact as a tree: one reference to art is
 * taken, whatever the outcome, and art must not change afterwards. */
int once__work_artifact_tree(once_work *w, json_t *art, int append, int last_chunk);

/* The task's state as stored now (one store read), not the turn's
 * snapshot: after once_work_canceled() turns true, ONCE_STATE_CANCELED
 * tells a cancel from a lost lease or a stopping engine (the gateway
 * cancels its upstream task only for the first). A store error is
 * returned as is; a task that is gone gives ONCE_ENOTFOUND. */
int once__work_stored_state(const once_work *w, once_state *out);

#endif /* ONCE_ENGINE_WORK_TREE_H */
