/*
 * external.c -- fenced writes by a worker that is not one of this engine's
 * turns: a helper process a turn started (the demo's background analysis),
 * or any worker that learnt (task, fence) from ONCE_TASK_ID / ONCE_FENCE and
 * writes to the shared store from another process.
 *
 * The rule is the turn's rule (work.c): load the record, refuse with
 * ONCE_EFENCED unless the stored fence is the writer's, apply one mutation
 * to a copy, commit it with once__write (a CAS on the version, with the
 * event in the same atomic write). A conflict re-loads and checks the fence
 * again, so a write can never land after the fence moved: nothing of a
 * stale writer becomes visible, neither in the record nor in the events.
 *
 * The external writer holds no lease and never touches one: the lease
 * belongs to the replica running the task's turn.
 */
#include <string.h>

#include "core/jcs.h"
#include "core/shape.h"
#include "engine/engine_int.h"

#define EXTERNAL_TRIES 32

/* Build next (a copy of cur) holding the artifact; *payload its event. */
static int apply_artifact(const once_record *cur, once_record *next, const json_t *art, int append,
                          int last_chunk, char **payload)
{
    json_t *task;
    int rc = once__json_object(cur->task_json, &task);
    if (rc != ONCE_OK)
        return rc == ONCE_EPARSE ? ONCE_ECORRUPT : rc;
    rc = once__task_artifact(task, art, append);
    char *text = rc == ONCE_OK ? once__json_text(task) : NULL;
    if (rc == ONCE_OK && text == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK) {
        once_free(next->task_json);
        next->task_json = text;
        *payload = once__ev_artifact(task, art, append, last_chunk, cur->generation + 1);
        if (*payload == NULL)
            rc = ONCE_ENOMEM;
    }
    json_decref(task);
    return rc;
}

/* The artifact as the work context would accept it, with an artifactId. */
static int parse_artifact(once__engine *e, const char *artifact_json, int append, json_t **out)
{
    json_t *art;
    int prc = once__json_object(artifact_json, &art);
    if (prc == ONCE_ENOMEM)
        return prc;
    if (prc != ONCE_OK || once__agent_artifact_check(art, NULL, 0) != ONCE_OK ||
        (append && json_object_get(art, "artifactId") == NULL)) {
        json_decref(art);
        return ONCE_EINVAL;
    }
    if (json_object_get(art, "artifactId") == NULL) {
        char id[ONCE_UUID_LEN + 1];
        int rc = once_uuid4(e->rng, id);
        if (rc == ONCE_OK && json_object_set_new(art, "artifactId", json_string(id)) != 0)
            rc = ONCE_ENOMEM;
        if (rc != ONCE_OK) {
            json_decref(art);
            return rc;
        }
    }
    *out = art;
    return ONCE_OK;
}

int once__engine_external_artifact(once__engine *e, const once_external_write *w,
                                  once_external_result *res)
{
    if (res != NULL)
        memset(res, 0, sizeof *res);
    if (e == NULL || w == NULL || w->task_id == NULL || w->artifact_json == NULL || w->fence < 1)
        return ONCE_EINVAL;
    const char *principal = w->principal != NULL ? w->principal : "anonymous";
    json_t *art;
    int rc = parse_artifact(e, w->artifact_json, w->append, &art);
    if (rc != ONCE_OK)
        return rc;
    rc = ONCE_EBUSY;
    for (int i = 0; i < EXTERNAL_TRIES; i++) {
        once_record cur;
        memset(&cur, 0, sizeof cur);
        rc = once_store_load(e->store, principal, w->task_id, &cur, NULL);
        if (rc != ONCE_OK) {
            once_record_clear(&cur);
            rc = once__store_rc(e, rc);
            break;
        }
        if (res != NULL) {
            res->stored_fence = cur.fence;
            res->state = cur.state;
        }
        if (cur.fence != w->fence) {
            ONCE__STAT(e, fenced_writes);
            once__log_fenced(w->task_id, w->fence, cur.fence);
            once_record_clear(&cur);
            rc = ONCE_EFENCED;
            break;
        }
        if (cur.kind != ONCE_KIND_TASK ||
            (cur.state != ONCE_STATE_SUBMITTED && cur.state != ONCE_STATE_WORKING)) {
            once_record_clear(&cur);
            rc = ONCE_EILLEGAL;
            break;
        }
        once_record next;
        char *payload = NULL;
        rc = once_record_copy(&next, &cur);
        if (rc == ONCE_OK)
            rc = apply_artifact(&cur, &next, art, w->append, w->last_chunk, &payload);
        if (rc == ONCE_OK)
            rc = once__write(e, &cur, &next, payload);
        once_free(payload);
        if (rc == ONCE_OK && res != NULL)
            res->generation = next.generation;
        once_record_clear(&next);
        once_record_clear(&cur);
        if (rc != ONCE_ECONFLICT)
            break;
        rc = ONCE_EBUSY; /* someone wrote in between: re-load, re-check the fence */
    }
    json_decref(art);
    return rc;
}
