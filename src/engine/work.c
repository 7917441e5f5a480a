/*
 * work.c -- the work context an executor sees (include/once/executor.h) and
 * the life of one turn: start (SUBMITTED -> WORKING), run(), finish.
 *
 * Every write goes through commit(): take the record (the snapshot on
 * the first try, a fresh load after a conflict), refuse with ONCE_EFENCED if
 * its fence is not the turn's, apply the mutation (or a batch of them, see
 * below) to a copy, CAS it. A CAS
 * that fails with the fence unchanged (a push config or another field
 * changed) is retried on the re-loaded record; a moved fence means another
 * writer owns the task now and nothing of ours may become visible. A store
 * that cannot answer is waited out (reload): a turn's output is never
 * dropped, and the task is never failed, because of an outage. A mutation
 * that would be an illegal transition returns ONCE_EILLEGAL: never a
 * silent write.
 *
 * The task is parsed once per turn, not once per write: the work context
 * keeps the parsed form of its snapshot's task JSON (w->task), and a
 * mutation of the snapshot it holds edits that tree instead of parsing the
 * stored text again. Only a write that lands makes the edited tree the new
 * parsed snapshot; a write that does not land drops it, and the next try
 * parses the record it re-loaded.
 *
 * A turn of an executor that runs in process and never blocks between two
 * writes (the built-in echo) commits its writes together: each write is
 * checked and applied to a pending copy of the snapshot at once (so it
 * returns EILLEGAL / EINVAL / ERANGE as it would alone) and kept; they are
 * committed, in order and with one event (one generation) each, by one
 * CAS when the turn reaches a point where time passes or the turn ends: a
 * status that ends the turn, a direct reply, once_work_sleep(),
 * once_work_effect_key(), WORK_BATCH_MAX writes, or run() returning. Until
 * then nothing of them is stored or published, so a fenced turn's batch is
 * as invisible as its single writes; a failure to commit (EFENCED, a store
 * error) is returned by the call that commits. A lost race or an outage
 * re-applies the whole batch to the record commit() re-loads. Such a turn
 * also starts from the record its
 * registering write stored, without a lease renewal, while that lease has
 * at least half of its period left: no replica may take a task over before
 * its lease runs out, and the heartbeat renews running turns every lease/3.
 *
 * Ownership: the work context owns its snapshot. Strings handed out by
 * once_work_task() / once_work_checkpoint() stay valid until run() returns
 * (older snapshots are retired, not freed, once lent); the effect key is
 * valid until the next write.
 */
#include <stdio.h>
#include <string.h>

#include "core/shape.h"
#include "core/str.h"
#include "core/strv.h"
#include "engine/engine_int.h"
#include "engine/work_tree.h"

#define WRITE_TRIES 32
/* Writes of one batch (see above): its events go in one store write. */
#define WORK_BATCH_MAX 8
/* A turn riding out an outage asks again this often at most, so that its
 * held-back write lands soon after the store is back. */
#define RELOAD_PAUSE_MAX_MS 200

typedef struct work_op work_op;

/* A mutation: edit next (a copy of cur) and set *payload (the event text,
 * numbered cur->generation + 1) or leave it NULL. A mutation that edits the
 * task tree takes it with take_task(), which also stages it: the tree is
 * the snapshot's if the write lands, and freed if it does not. */
typedef int (*mutate_fn)(once_work *w, const once_record *cur, once_record *next,
                         char **payload, const work_op *op);

/* One write an executor asked for, kept until it is committed so that it
 * can be applied again to a re-loaded record. */
struct work_op {
    mutate_fn fn;
    once_state state;           /* mut_status */
    json_t *json;               /* the status message, artifact or reply; a reference */
    int append, last_chunk;     /* mut_artifact */
    char *checkpoint;           /* mut_checkpoint, owned */
    int64_t step;
    char *payload;              /* its event text as last applied, or NULL */
};

/* Only the thread running the turn touches a work context. */
struct once_work {
    once__engine *e;
    once__turn *t;
    once_record rec;            /* last record read or written by this turn */
    json_t *task;               /* rec.task_json parsed, or NULL (not parsed yet) */
    json_t *staged;             /* the task tree the current mutation wrote */
    json_t *msg;                /* the user message that started the turn */
    char *message;              /* msg as text, once asked for (NULL: not yet) */
    char effect_key[ONCE_EFFECT_KEY_MAX + 1];
    int task_lent, cp_lent;     /* rec.task_json / rec.checkpoint handed out */
    char **retired;             /* lent strings of older snapshots */
    size_t nretired, capretired;
    int batch;                  /* writes wait for the next commit point */
    work_op ops[WORK_BATCH_MAX]; /* written, not committed yet, in order */
    size_t nops;
    once_record pend;           /* rec with ops applied (staged holds its tree) */
    int have_pend;
    int64_t began;              /* when the turn started (its journal entry) */
    int journaled;              /* a write of this turn stored its start */
    const once_event *born;     /* the task is not stored yet: the first commit creates
                                 * it, this registration event first (NULL: stored) */
    int64_t text_bound;         /* at least the length of the text a record whose
                                 * task_json put_task left NULL would have */
};

static int retire(once_work *w, char *s)
{
    if (s == NULL)
        return ONCE_OK;
    if (w->nretired == w->capretired) {
        size_t cap = w->capretired ? w->capretired * 2 : 8;
        char **v = once_realloc(w->retired, cap * sizeof *v);
        if (v == NULL)
            return ONCE_ENOMEM;
        w->retired = v;
        w->capretired = cap;
    }
    w->retired[w->nretired++] = s;
    return ONCE_OK;
}

/* Make next the snapshot, and task (owned; NULL: not parsed) its parsed
 * task. A lent string must outlive the old snapshot: it is retired (or, out
 * of memory, leaked rather than left dangling). */
static void adopt(once_work *w, once_record *next, json_t *task)
{
    json_decref(w->task);
    w->task = task;
    if (w->task_lent) {
        (void)retire(w, w->rec.task_json);
        w->rec.task_json = NULL;
    }
    if (w->cp_lent) {
        (void)retire(w, w->rec.checkpoint);
        w->rec.checkpoint = NULL;
    }
    w->task_lent = w->cp_lent = 0;
    once_record_clear(&w->rec);
    w->rec = *next;
    memset(next, 0, sizeof *next);
}

/* The turn's fence is not stored's (NULL: the task is gone). */
static int fenced(once_work *w, const once_record *stored)
{
    if (stored != NULL)
        once__journal_fenced(w->e, stored, w->t->fence, 0);
    __atomic_store_n(&w->t->canceled, 1, __ATOMIC_RELEASE);
    ONCE__STAT(w->e, fenced_writes);
    once__log_fenced(w->t->task_id, w->t->fence, 0);
    return ONCE_EFENCED;
}

static int streq_null(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* 1 if the stored record already holds what next would write: the write
 * whose answer was lost landed after all (or wrote nothing new). */
static int write_landed(const once_record *stored, const once_record *next)
{
    return stored->generation == next->generation && stored->state == next->state &&
           stored->step == next->step && stored->kind == next->kind &&
           streq_null(stored->task_json, next->task_json) &&
           streq_null(stored->checkpoint, next->checkpoint);
}

static int store_down(int rc)
{
    return rc == ONCE_ESTORE || rc == ONCE_EBUSY;
}

/* Load the turn's record into *cur, waiting out a store that cannot answer
 * for as long as it takes: the agent's output is in hand, and a store that
 * is down is down for every replica, so nobody else can take the task over
 * meanwhile. When the store answers again the caller re-checks the fence:
 * if it still holds, the CAS on the version applies the output (nobody
 * wrote in between); if a replica took the lease over first, the output is
 * fenced off and the resumed turn there does the work. Only a stopping
 * engine or a canceled turn ends the wait, and then the task is left as it
 * is (never failed): its lease lapses and a takeover resumes it.
 *   ONCE_OK         *cur holds the stored record;
 *   ONCE_ENOTFOUND  the record is gone (tombstoned or deleted);
 *   ONCE_ECANCELED  the turn was canceled meanwhile (its lease went
 *                   elsewhere, or the task was canceled);
 *   other           the store error (not a store outage), or the engine is
 *                   stopping. */
static int pause_turn(once_work *w, int64_t ms);

static int reload(once_work *w, once_record *cur)
{
    once__engine *e = w->e;
    int64_t pause = 20;
    for (;;) {
        once_record fresh;
        int rc = once_store_load(e->store, w->t->principal, w->t->task_id, &fresh, NULL);
        if (rc == ONCE_OK) {
            once_record_clear(cur);
            *cur = fresh;
            return ONCE_OK;
        }
        once_record_clear(&fresh);
        if (rc == ONCE_ENOTFOUND || rc == ONCE_ETOMBSTONE)
            return ONCE_ENOTFOUND;
        once__store_rc(e, rc);
        if (!store_down(rc))
            return rc;
        if (pause_turn(w, pause))
            return once__stopping(e) ? rc : ONCE_ECANCELED;   /* the lease went elsewhere */
        pause = pause * 2 > RELOAD_PAUSE_MAX_MS ? RELOAD_PAUSE_MAX_MS : pause * 2;
    }
}

static void op_clear(work_op *op)
{
    json_decref(op->json);
    once_free(op->checkpoint);
    once_free(op->payload);
    memset(op, 0, sizeof *op);
}

/* Forget the pending copy of the snapshot and its tree (the ops stay: a
 * commit applies them again to the record it writes over). */
static void drop_pend(once_work *w)
{
    if (w->have_pend)
        once_record_clear(&w->pend);
    w->have_pend = 0;
    json_decref(w->staged);
    w->staged = NULL;
}

static void clear_ops(once_work *w)
{
    for (size_t i = 0; i < w->nops; i++)
        op_clear(&w->ops[i]);
    w->nops = 0;
}

/* Apply op to cur: *next is cur changed, with one more generation when the
 * op made an event (op->payload). Nothing is stored. */
static int apply_op(once_work *w, const once_record *cur, once_record *next, work_op *op)
{
    once_free(op->payload);
    op->payload = NULL;
    int rc = once_record_copy(next, cur);
    if (rc != ONCE_OK)
        return rc;
    rc = op->fn(w, cur, next, &op->payload, op);
    if (rc == ONCE_OK)
        rc = once__size_check(w->e, cur, next);
    if (rc != ONCE_OK) {
        once_record_clear(next);
        once_free(op->payload);
        op->payload = NULL;
        return rc;
    }
    if (op->payload != NULL)
        next->generation = cur->generation + 1;
    return ONCE_OK;
}

/* Every op of the batch, in order, applied to cur into *next (left zeroed
 * on failure). */
static int apply_ops(once_work *w, const once_record *cur, once_record *next)
{
    once_record a;
    int rc = once_record_copy(&a, cur);
    for (size_t i = 0; rc == ONCE_OK && i < w->nops; i++) {
        once_record b;
        rc = apply_op(w, &a, &b, &w->ops[i]);
        if (rc == ONCE_OK) {
            once_record_clear(&a);
            a = b;
        }
    }
    if (rc != ONCE_OK) {
        once_record_clear(&a);
        return rc;
    }
    *next = a;
    return ONCE_OK;
}

/* CAS next over cur with the events of the batch's ops. */
static int write_ops(once_work *w, const once_record *cur, once_record *next)
{
    once_event ev[WORK_BATCH_MAX];
    size_t nev = 0;
    for (size_t i = 0; i < w->nops; i++) {
        if (w->ops[i].payload != NULL) {
            ev[nev].generation = cur->generation + (int64_t)nev + 1;
            ev[nev].payload = w->ops[i].payload;
            nev++;
        }
    }
    return once__write_events(w->e, cur, next, ev, nev);
}

/*
 * Commit the batch (w->ops: one write, or a turn's several) as one CAS:
 * take the record (the snapshot, with the pending copy already applied to
 * it, on the first try; a fresh load after a conflict), refuse with
 * ONCE_EFENCED if its fence is not the turn's, apply the ops to a copy,
 * CAS it. A CAS that meets an outage may or may not have landed: the
 * record is re-loaded (riding the outage out) and, unless the write is
 * found there already, the ops are applied again to what is stored.
 * Outage rounds do not count against WRITE_TRIES, which bounds only lost
 * races. The batch is empty afterwards, whatever the outcome.
 */
static int commit_born(once_work *w);
static int settle_task(once_work *w, once_record *next);

static int commit(once_work *w)
{
    if (w->born != NULL)
        return commit_born(w);
    once_record cur, lost;
    memset(&lost, 0, sizeof lost);
    int have_lost = 0;
    int rc = once_record_copy(&cur, &w->rec);
    for (int i = 0; rc == ONCE_OK;) {
        if (i == WRITE_TRIES) {
            rc = ONCE_EBUSY;   /* lost the race WRITE_TRIES times */
            break;
        }
        if (cur.fence != w->t->fence) {
            rc = fenced(w, &cur);
            break;
        }
        if (have_lost && write_landed(&cur, &lost)) {
            adopt(w, &cur, NULL);
            break;
        }
        if (have_lost) {
            once_record_clear(&lost);
            have_lost = 0;
        }
        once_record next;
        memset(&next, 0, sizeof next);
        if (w->have_pend) {
            /* Applied to the snapshot as the ops came; cur is the snapshot. */
            next = w->pend;
            memset(&w->pend, 0, sizeof w->pend);
            w->have_pend = 0;
        } else {
            rc = apply_ops(w, &cur, &next);
        }
        if (rc == ONCE_OK)
            rc = settle_task(w, &next);
        if (rc == ONCE_OK)
            rc = once__journal_turn(w->e, w->t->fence, w->t->resumed, w->began, w->journaled,
                                    &cur, &next);
        if (rc == ONCE_OK)
            rc = write_ops(w, &cur, &next);
        json_t *staged = w->staged;
        w->staged = NULL;
        if (rc == ONCE_OK) {
            w->journaled = 1;
            adopt(w, &next, staged);
            break;
        }
        json_decref(staged);
        if (store_down(rc)) {
            lost = next;   /* what we tried to write: it may have landed */
            have_lost = 1;
        } else {
            once_record_clear(&next);
            if (rc != ONCE_ECONFLICT)
                break;
            i++;
        }
        rc = reload(w, &cur);
        if (rc == ONCE_ENOTFOUND) {
            rc = fenced(w, NULL);
            break;
        }
        if (rc != ONCE_OK)
            break;
    }
    if (have_lost)
        once_record_clear(&lost);
    once_record_clear(&cur);
    drop_pend(w);
    clear_ops(w);
    return rc;
}

/*
 * The first commit of a turn whose registration is not stored yet
 * (once__dispatch_born): one create of the record with the batch applied,
 * the registration's event first, then the batch's. There is no one to
 * race but another registration of the same task: losing that (ONCE_EEXISTS,
 * ONCE_ETOMBSTONE), or an outage (it may have landed: the retry of the send
 * finds out), ends the turn, which wrote nothing anyone saw. The batch is
 * empty afterwards, whatever the outcome.
 */
static int commit_born(once_work *w)
{
    once__engine *e = w->e;
    once_record next;
    memset(&next, 0, sizeof next);
    int rc = ONCE_OK;
    if (w->have_pend) {
        next = w->pend;
        memset(&w->pend, 0, sizeof w->pend);
        w->have_pend = 0;
    } else {
        rc = apply_ops(w, &w->rec, &next);
    }
    if (rc == ONCE_OK)
        rc = settle_task(w, &next);
    if (rc == ONCE_OK)
        rc = once__journal_turn(e, w->t->fence, w->t->resumed, w->began, w->journaled, &w->rec,
                                &next);
    once_event ev[WORK_BATCH_MAX + 1];
    size_t nev = 0;
    ev[nev++] = *w->born;
    for (size_t i = 0; i < w->nops; i++) {
        if (w->ops[i].payload != NULL) {
            ev[nev].generation = w->born->generation + (int64_t)nev;
            ev[nev].payload = w->ops[i].payload;
            nev++;
        }
    }
    int held = 0;
    if (rc == ONCE_OK) {
        next.version = w->rec.version;
        next.generation = w->born->generation + (int64_t)nev - 1;
        next.updated_at = once__now(e);
        if (w->t->hold && nev <= ONCE__HELD_EVENTS && once__held_can_rec(e, &next) &&
            (once_state_terminal(next.state) || once_state_interrupted(next.state))) {
            /* The turn's last write (nothing follows a final or
             * interrupted state, so no later write of the turn needs it
             * stored): not written here; the caller starts it (held.c),
             * which counts and notifies once it landed. */
            rc = once__held_new(e, &next, ev, nev, &w->t->held);
            held = rc == ONCE_OK;
        } else if (w->t->held_only) {
            rc = ONCE__EAGAIN;   /* its caller may not wait for the create */
        } else {
            rc = once__store_rc(e, once_store_create(e->store, &next, ev, nev, NULL, NULL));
        }
    }
    json_t *staged = w->staged;
    w->staged = NULL;
    if (rc == ONCE_OK) {
        w->born = NULL;
        w->journaled = 1;
        if (!held) {
            ONCE__STAT(e, executed_turns);
            once__notify(e, &next);
        }
        adopt(w, &next, staged);
    } else {
        json_decref(staged);
        once_record_clear(&next);
        w->t->born_rc = rc;
        /* Nothing more of this turn may be written. */
        __atomic_store_n(&w->t->canceled, 1, __ATOMIC_RELEASE);
    }
    drop_pend(w);
    clear_ops(w);
    return rc;
}

/* Keep the lease fresh on every write that does not end the turn. */
static void touch_lease(once_work *w, once_record *next, int64_t now)
{
    if (!once_state_terminal(next->state) && !once_state_interrupted(next->state) &&
        strcmp(next->lease_owner, w->e->replica_id) == 0)
        next->lease_until = now + w->e->cfg.lease_ms;
}

/* The task tree of cur for a mutation to edit, staged (see mutate_fn);
 * NULL if it cannot be parsed. The snapshot's own tree when cur is the
 * snapshot (the same version of the same record holds the same text), else
 * a parse of cur's text. */
static json_t *take_task(once_work *w, const once_record *cur)
{
    if (w->staged != NULL)
        return w->staged;   /* cur's: an earlier write of the batch edited it */
    json_t *task = NULL;
    if (w->task != NULL && cur->version == w->rec.version) {
        task = w->task;
        w->task = NULL;
    } else {
        task = once__json_parse(cur->task_json);
    }
    w->staged = task;
    return task;
}

/* Replace next->task_json with the text of task. */
static int store_task(once_record *next, const json_t *task)
{
    char *text = once__json_text(task);
    if (text == NULL)
        return ONCE_ENOMEM;
    once_free(next->task_json);
    next->task_json = text;
    return ONCE_OK;
}

/* next's task text is task's (the staged tree, just edited): written now,
 * or, in a batching turn while an upper bound of its length keeps the
 * record within --max-task-size, left for the commit to write once
 * (next->task_json NULL; settle_task). `added` bounds what the mutation put
 * in the task: its event's text holds every value it added, at most twice
 * (a status message is in the status and in the history). A bound past the
 * limit writes the text, so the exact check of apply_op decides as before. */
static int put_task(once_work *w, const once_record *cur, once_record *next,
                    const json_t *task, size_t added)
{
    if (w->batch) {
        int64_t base = cur->task_json != NULL ? (int64_t)strlen(cur->task_json) : w->text_bound;
        int64_t bound = base + 2 * (int64_t)added + 64;
        int64_t others = once__record_bytes(next) -
                         (next->task_json != NULL ? (int64_t)strlen(next->task_json) : 0);
        if (bound + others <= w->e->cfg.max_task_bytes) {
            once_free(next->task_json);
            next->task_json = NULL;
            w->text_bound = bound;
            return ONCE_OK;
        }
    }
    int rc = store_task(next, task);
    if (rc == ONCE_OK)
        w->text_bound = (int64_t)strlen(next->task_json);
    return rc;
}

/* Write the task text put_task left to the commit, from the staged tree. */
static int settle_task(once_work *w, once_record *next)
{
    if (next->task_json != NULL)
        return ONCE_OK;
    return w->staged != NULL ? store_task(next, w->staged) : ONCE_ECORRUPT;
}

/* ------------------------------------------------------------------------
 * Mutations.
 */

/* op: state, json (the agent message, or NULL). */
static int mut_status(once_work *w, const once_record *cur, once_record *next, char **payload,
                      const work_op *a)
{
    /* An interrupted state ended the turn: only a continuation (a new
     * turn, a new fence) may resume the task. */
    if (cur->kind != ONCE_KIND_TASK || once_state_interrupted(cur->state))
        return ONCE_EILLEGAL;
    int rc = once__transition(cur->state, a->state);
    if (rc != ONCE_OK)
        return rc;
    json_t *task = take_task(w, cur);
    if (task == NULL)
        return ONCE_ECORRUPT;
    int64_t now = once__now(w->e);
    rc = once__task_set_status(task, a->state, a->json, now);
    if (rc == ONCE_OK && (*payload = once__ev_status(task, cur->generation + 1)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = put_task(w, cur, next, task, strlen(*payload));
    if (rc == ONCE_OK) {
        once__set_state(next, a->state, now);
        touch_lease(w, next, now);
    }
    return rc;
}

/* op: json (the artifact), append, last_chunk. */
static int mut_artifact(once_work *w, const once_record *cur, once_record *next, char **payload,
                        const work_op *a)
{
    if (cur->kind != ONCE_KIND_TASK ||
        (cur->state != ONCE_STATE_SUBMITTED && cur->state != ONCE_STATE_WORKING))
        return ONCE_EILLEGAL;
    json_t *task = take_task(w, cur);
    if (task == NULL)
        return ONCE_ECORRUPT;
    int rc = once__task_artifact(task, a->json, a->append);
    if (rc == ONCE_OK &&
        (*payload = once__ev_artifact(task, a->json, a->append, a->last_chunk,
                                      cur->generation + 1)) == NULL)
        rc = ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = put_task(w, cur, next, task, strlen(*payload));
    if (rc == ONCE_OK)
        touch_lease(w, next, once__now(w->e));
    return rc;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; s != NULL && *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

/* op: json (the Message). */
static int mut_reply(once_work *w, const once_record *cur, once_record *next, char **payload,
                     const work_op *op)
{
    const json_t *msg = op->json;
    /* A direct Message answers the first message only: once a continuation
     * was accepted the client already holds a Task it must be able to read. */
    if (cur->kind != ONCE_KIND_TASK || count_lines(cur->digests) > 1)
        return ONCE_EILLEGAL;
    int rc = once__transition(cur->state, ONCE_STATE_COMPLETED);
    if (rc != ONCE_OK)
        return rc;
    rc = store_task(next, msg);
    if (rc != ONCE_OK)
        return rc;
    next->kind = ONCE_KIND_MESSAGE;
    /* No task tree is the snapshot's any more. */
    json_decref(w->staged);
    w->staged = NULL;
    once__set_state(next, ONCE_STATE_COMPLETED, once__now(w->e));
    *payload = once__ev_message(msg, cur->generation + 1);
    return *payload != NULL ? ONCE_OK : ONCE_ENOMEM;
}

/* op: checkpoint (NULL: none), step. */
static int mut_checkpoint(once_work *w, const once_record *cur, once_record *next,
                          char **payload, const work_op *a)
{
    (void)payload;   /* a checkpoint is not an A2A event */
    if (once_state_terminal(cur->state))
        return ONCE_EILLEGAL;
    if (a->step < cur->step)
        return ONCE_EINVAL;
    char *cp = NULL;
    if (a->checkpoint != NULL && (cp = once_strdup(a->checkpoint)) == NULL)
        return ONCE_ENOMEM;
    once_free(next->checkpoint);
    next->checkpoint = cp;
    next->step = a->step;
    touch_lease(w, next, once__now(w->e));
    /* The task text does not change: a parsed tree stays the snapshot's. */
    if (w->staged == NULL && w->task != NULL && cur->version == w->rec.version)
        (void)take_task(w, cur);
    return ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Committing.
 */

static int ends_turn(const once_record *r)
{
    return r->kind == ONCE_KIND_MESSAGE || once_state_terminal(r->state) ||
           once_state_interrupted(r->state);
}

/* Add op (its references and strings taken, whatever the outcome) to the
 * batch, applied at once to the pending copy of the snapshot. A write the
 * snapshot refuses leaves the batch as it was; one that failed after it
 * began to edit the pending tree drops the pending copy, and the next
 * write commits the batch first. */
static int stage(once_work *w, work_op *op)
{
    int rc = ONCE_OK;
    if (w->nops == WORK_BATCH_MAX || (w->nops > 0 && !w->have_pend))
        rc = commit(w);
    once_record next;
    if (rc == ONCE_OK)
        rc = apply_op(w, w->have_pend ? &w->pend : &w->rec, &next, op);
    if (rc != ONCE_OK) {
        if (rc != ONCE_EILLEGAL)
            drop_pend(w);
        op_clear(op);
        return rc;
    }
    if (w->have_pend)
        once_record_clear(&w->pend);
    w->pend = next;
    w->have_pend = 1;
    w->ops[w->nops++] = *op;
    return ONCE_OK;
}

/* One write of the executor (op taken, whatever the outcome): committed
 * at once, or in a batch (see the file header). */
static int submit(once_work *w, work_op *op)
{
    if (!w->batch) {
        w->ops[w->nops++] = *op;
        return commit(w);
    }
    int rc = stage(w, op);
    if (rc == ONCE_OK && ends_turn(&w->pend))
        rc = commit(w);
    return rc;
}

/* Commit what the batch holds, if anything. */
static int flush(once_work *w)
{
    return w->nops > 0 ? commit(w) : ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Getters.
 */

/* The snapshot as the executor's writes left it, committed or not. */
static const once_record *view(const once_work *w)
{
    return w->have_pend ? &w->pend : &w->rec;
}

/* A copy of s that lives until run() returns (the pending copy it is in
 * is replaced by the next write), or NULL. */
static const char *lend_copy(once_work *w, const char *s)
{
    char *c = s != NULL ? once_strdup(s) : NULL;
    if (c != NULL && retire(w, c) != ONCE_OK) {
        once_free(c);
        c = NULL;
    }
    return c;
}

const char *once_work_task_id(const once_work *w) { return w->rec.task_id; }
const char *once_work_context_id(const once_work *w) { return w->rec.context_id; }
const char *once_work_principal(const once_work *w) { return w->rec.principal; }
int64_t once_work_fence(const once_work *w) { return w->t->fence; }
int64_t once_work_step(const once_work *w) { return view(w)->step; }
/* The turn's message as text, written out on first use. */
static const char *message_text(once_work *w)
{
    if (w->message == NULL)
        w->message = once__json_text(w->msg);
    return w->message;
}

const char *once_work_message(const once_work *w) { return message_text((once_work *)w); }
const json_t *once__work_message_tree(const once_work *w) { return w->msg; }
int once_work_resumed(const once_work *w) { return w->t->resumed; }

int once__work_stored_state(const once_work *w, once_state *out)
{
    once_record rec;
    int rc = once__store_rc(w->e, once_store_load(w->e->store, w->rec.principal, w->t->task_id,
                                                  &rec, NULL));
    if (rc != ONCE_OK)
        return rc == ONCE_ETOMBSTONE ? ONCE_ENOTFOUND : rc;
    *out = rec.state;
    once_record_clear(&rec);
    return ONCE_OK;
}
const char *once_work_traceparent(const once_work *w)
{
    return w->t->traceparent[0] != '\0' ? w->t->traceparent : NULL;
}

const char *once_work_task(const once_work *w)
{
    if (w->have_pend)
        return settle_task((once_work *)w, &((once_work *)w)->pend) == ONCE_OK
                   ? lend_copy((once_work *)w, w->pend.task_json)
                   : NULL;
    ((once_work *)w)->task_lent = 1;
    return w->rec.task_json;
}

const char *once_work_checkpoint(const once_work *w)
{
    if (w->have_pend)
        return lend_copy((once_work *)w, w->pend.checkpoint);
    ((once_work *)w)->cp_lent = 1;
    return w->rec.checkpoint;
}

const char *once_work_effect_key(once_work *w)
{
    /* A side effect follows: what the turn wrote before it is stored first. */
    (void)flush(w);
    if (once_effect_key(w->rec.task_id, (uint64_t)w->rec.step, w->effect_key) != ONCE_OK)
        w->effect_key[0] = '\0';
    return w->effect_key;
}

int once_work_park(once_work *w, int64_t ms)
{
    /* A turn run on the thread that registered its task has no worker to
     * let go of, and a batching turn's writes wait for its end. */
    if (ms <= 0 || w->t->settled != NULL || w->batch)
        return ONCE_EINVAL;
    if (once_work_canceled(w))
        return ONCE_ECANCELED;
    w->t->park_ms = ms;
    return ONCE_OK;
}

int once_work_parks(const once_work *w)
{
    return w->t->parks;
}

int once_work_canceled(const once_work *w)
{
    return __atomic_load_n(&w->t->canceled, __ATOMIC_ACQUIRE) || once__stopping(w->e);
}

/* Sleep up to ms, waking early on cancellation; returns once_work_canceled(). */
static int pause_turn(once_work *w, int64_t ms)
{
    once__engine *e = w->e;
    int64_t until = once_monotonic_ms() + ms;
    pthread_mutex_lock(&e->mu);
    while (!once_work_canceled(w)) {
        int64_t left = until - once_monotonic_ms();
        if (left <= 0)
            break;
        once__cond_wait_ms(&e->cancel_cv, &e->mu, left);
    }
    pthread_mutex_unlock(&e->mu);
    return once_work_canceled(w);
}

int once_work_sleep(once_work *w, int64_t ms)
{
    /* Time passes: what the turn wrote so far is stored (and published)
     * before it. A commit that fails was reported as far as it can be: a
     * fenced one cancels the turn, which this returns. */
    (void)flush(w);
    return pause_turn(w, ms);
}

/* ------------------------------------------------------------------------
 * Writes.
 */

/* Parse an agent message argument: an A2A 1.0 Message by the rules an
 * --exec line follows (once__agent_message_check), so no executor can put on
 * the wire a part without content, an A2A 0.3 "kind", or a user role. */
static int parse_agent_message(once_work *w, const char *text, json_t **out)
{
    *out = NULL;
    if (text == NULL)
        return ONCE_OK;
    json_t *m = once__json_parse(text);
    if (m == NULL || once__agent_message_check(m, NULL, 0) != ONCE_OK) {
        json_decref(m);
        return ONCE_EINVAL;
    }
    *out = once__message_fill(m, w->rec.task_id, w->rec.context_id, "ROLE_AGENT", w->e->rng);
    json_decref(m);
    return *out != NULL ? ONCE_OK : ONCE_ENOMEM;
}

/* msg: a reference taken (may be NULL). */
static int status_write(once_work *w, once_state state, json_t *msg)
{
    work_op op = {.fn = mut_status, .state = state, .json = msg};
    return submit(w, &op);
}

int once_work_status(once_work *w, once_state state, const char *message_json)
{
    switch (state) {
    case ONCE_STATE_WORKING:
    case ONCE_STATE_INPUT_REQUIRED:
    case ONCE_STATE_AUTH_REQUIRED:
    case ONCE_STATE_COMPLETED:
    case ONCE_STATE_FAILED:
    case ONCE_STATE_REJECTED:
        break;
    default:
        return ONCE_EINVAL;
    }
    json_t *msg;
    int rc = parse_agent_message(w, message_json, &msg);
    if (rc != ONCE_OK)
        return rc;
    return status_write(w, state, msg);
}

int once_work_complete(once_work *w)
{
    return status_write(w, ONCE_STATE_COMPLETED, NULL);
}

static int status_text(once_work *w, once_state state, const char *text)
{
    json_t *msg = once__agent_text(text, w->rec.task_id, w->rec.context_id, w->e->rng);
    if (msg == NULL)
        return ONCE_ENOMEM;
    return status_write(w, state, msg);
}

int once_work_fail(once_work *w, const char *reason)
{
    return status_text(w, ONCE_STATE_FAILED, reason != NULL ? reason : "failed");
}

int once_work_ask(once_work *w, const char *question)
{
    return status_text(w, ONCE_STATE_INPUT_REQUIRED, question != NULL ? question : "");
}

int once_work_artifact(once_work *w, const char *artifact_json, int append, int last_chunk)
{
    json_t *art = once__json_parse(artifact_json);
    if (art == NULL)
        return ONCE_EINVAL;
    return once__work_artifact_tree(w, art, append, last_chunk);
}

int once__work_artifact_tree(once_work *w, json_t *art, int append, int last_chunk)
{
    /* Appending needs the artifact to append to. */
    if (art == NULL || once__agent_artifact_check(art, NULL, 0) != ONCE_OK ||
        (append && json_object_get(art, "artifactId") == NULL)) {
        json_decref(art);
        return ONCE_EINVAL;
    }
    if (json_object_get(art, "artifactId") == NULL) {
        char id[ONCE_UUID_LEN + 1];
        int rc = once_uuid4(w->e->rng, id);
        if (rc == ONCE_OK && json_object_set_new(art, "artifactId", json_string(id)) != 0)
            rc = ONCE_ENOMEM;
        if (rc != ONCE_OK) {
            json_decref(art);
            return rc;
        }
    }
    work_op op = {.fn = mut_artifact, .json = art, .append = append != 0,
                  .last_chunk = last_chunk != 0};
    return submit(w, &op);
}

int once_work_reply(once_work *w, const char *message_json)
{
    if (message_json == NULL)
        return ONCE_EINVAL;
    json_t *msg;
    int rc = parse_agent_message(w, message_json, &msg);
    if (rc != ONCE_OK)
        return rc;
    /* A direct Message stands outside any task. */
    json_object_del(msg, "taskId");
    work_op op = {.fn = mut_reply, .json = msg};
    return submit(w, &op);
}

int once_work_checkpoint_set(once_work *w, const char *checkpoint, int64_t step)
{
    if (step < 0)
        return ONCE_EINVAL;
    work_op op = {.fn = mut_checkpoint, .step = step};
    if (checkpoint != NULL && (op.checkpoint = once_strdup(checkpoint)) == NULL)
        return ONCE_ENOMEM;
    return submit(w, &op);
}

/* ------------------------------------------------------------------------
 * One turn.
 */

static int is_user(const json_t *m)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    return role != NULL && (strcmp(role, "ROLE_USER") == 0 || strcmp(role, "user") == 0);
}

/* The latest user message in the snapshot's history (a new reference; an
 * empty object when there is none), parsing the task into w->task if no
 * write did yet. NULL: no memory. Writes never change a message in the
 * history, so the reference stays what it was when the turn began. */
static json_t *latest_user_message(once_work *w)
{
    if (w->task == NULL)
        w->task = once__json_parse(w->rec.task_json);
    json_t *hist = json_object_get(w->task, "history");
    for (size_t i = json_array_size(hist); i > 0; i--) {
        json_t *m = json_array_get(hist, i - 1);
        if (is_user(m))
            return json_incref(m);
    }
    return json_object();
}

/* Count how a started turn ended, from the record as it last wrote or
 * read it. */
static void count_turn_end(once_work *w)
{
    once__engine *e = w->e;
    if (once_work_canceled(w) && !once_state_terminal(w->rec.state)) {
        if (once__stopping(e))
            ONCE__STAT(e, turns_stopped);
        else
            ONCE__STAT(e, turns_lost);
        return;
    }
    once__count_turn_end(e, &w->rec);
}

void once__count_turn_end(once__engine *e, const once_record *rec)
{
    static const size_t ends[] = {
        [ONCE_STATE_COMPLETED] = ONCE__STAT_AT(turns_completed),
        [ONCE_STATE_FAILED] = ONCE__STAT_AT(turns_failed),
        [ONCE_STATE_CANCELED] = ONCE__STAT_AT(turns_canceled),
        [ONCE_STATE_REJECTED] = ONCE__STAT_AT(turns_rejected),
        [ONCE_STATE_INPUT_REQUIRED] = ONCE__STAT_AT(turns_input_required),
        [ONCE_STATE_AUTH_REQUIRED] = ONCE__STAT_AT(turns_auth_required),
    };
    once_state st = rec->kind == ONCE_KIND_TASK ? rec->state : ONCE_STATE_COMPLETED;
    once__stat_pick(e, ends, sizeof ends / sizeof ends[0], (size_t)st, ONCE__STAT_AT(turns_lost));
}

/* Release what the work context holds (the context itself is the turn's
 * stack frame: see once__run_turn). */
static void work_free(once_work *w)
{
    drop_pend(w);
    clear_ops(w);
    json_decref(w->task);
    once_record_clear(&w->rec);
    json_decref(w->msg);
    once_free(w->message);
    once__strv_free(w->retired, w->nretired);
}

/* 1 for an executor whose turns commit their writes in batches (see the
 * file header): it says so (ONCE_EXECUTOR_BATCH), since only the executor
 * knows that it runs in process and blocks only in once_work_sleep. */
static int runs_at_once(const once_executor *ex)
{
    return (ex->flags & ONCE_EXECUTOR_BATCH) != 0;
}

/* 1 if a batching turn may start from the record its dispatching write
 * stored, without renewing the lease first: that record gives this
 * replica the lease under the turn's fence with at least half of the
 * lease period left, so no replica can have taken the task over. */
static int starts_from_dispatch(const once_work *w, const once__turn *t)
{
    const once__engine *e = w->e;
    return w->batch && t->rec != NULL && t->rec->fence == t->fence &&
           strcmp(t->rec->lease_owner, e->replica_id) == 0 &&
           t->rec->lease_until - once__now(e) >= e->cfg.lease_ms / 2;
}

int once__turn_quick(once__engine *e, const once_record *rec, const json_t *msg)
{
    const once_executor *ex = e->ex;
    if ((ex->flags & ONCE_EXECUTOR_INLINE) == 0 || ex->quick == NULL || msg == NULL)
        return 0;
    /* A work context with the ids and the message only: all quick() may
     * read. No turn stands behind it (a fence of 0, no trace). */
    once__turn none;
    memset(&none, 0, sizeof none);
    once_work probe;
    memset(&probe, 0, sizeof probe);
    probe.e = e;
    probe.t = &none;
    once__strlcpy(probe.rec.principal, rec->principal, sizeof probe.rec.principal);
    once__strlcpy(probe.rec.task_id, rec->task_id, sizeof probe.rec.task_id);
    once__strlcpy(probe.rec.context_id, rec->context_id, sizeof probe.rec.context_id);
    probe.msg = (json_t *)msg;   /* read only; not released */
    int quick = ex->quick(ex, &probe) == 1;
    once_free(probe.message);
    return quick;
}

/* 1 when the record leaves this replica the lease under the turn's fence
 * with at least half of the lease period left. */
static int lease_fresh(const once__engine *e, const once_record *r, int64_t fence)
{
    return r->fence == fence && strcmp(r->lease_owner, e->replica_id) == 0 &&
           r->lease_until - once__now(e) >= e->cfg.lease_ms / 2;
}

/* A parked turn running again: its record, read before any lease renewal,
 * since the heartbeat kept the lease while it was parked (renewed only if
 * less than half of it is left). One that was canceled or lost its lease
 * meanwhile (notice) reads the record as it is and renews nothing. */
static int reload_parked(once_work *w, int notice)
{
    int rc = reload(w, &w->rec);
    if (rc != ONCE_OK || notice || lease_fresh(w->e, &w->rec, w->t->fence))
        return rc;
    rc = once__renew_lease(w->e, w->t->principal, w->t->task_id, w->t->fence);
    return rc == ONCE_OK ? reload(w, &w->rec) : rc;
}

void once__run_turn(once__engine *e, once__turn *t)
{
    /* A parked turn that was canceled runs once more, canceled from its
     * start: its executor hears of it (see once_work_park). */
    int notice = t->parks > 0 && __atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE);
    if ((__atomic_load_n(&t->canceled, __ATOMIC_ACQUIRE) && !notice) || once__stopping(e))
        return;
    /* On the stack: the context lives exactly as long as this call, and
     * a heap block of its size (about 2 KiB) made malloc sweep its free
     * lists on every turn (bench/README.md, "The new-task fast path,
     * steered by callgrind", row 7afc1ca). */
    once_work work;
    memset(&work, 0, sizeof work);
    once_work *w = &work;
    w->e = e;
    w->t = t;
    w->began = once__now(e);
    w->batch = runs_at_once(e->ex);
    int rc = ONCE_OK;
    int64_t dispatched = t->rec != NULL ? t->rec->version : 0;
    if (starts_from_dispatch(w, t)) {
        w->rec = *t->rec;
        memset(t->rec, 0, sizeof *t->rec);
        w->born = t->born;
    } else if (t->born != NULL) {
        rc = ONCE_EINVAL;   /* a record not stored cannot be loaded */
    } else if (t->parks > 0) {
        rc = reload_parked(w, notice);
    } else {
        /* Take the lease now: a queued turn held only what its registering
         * write set, and if that ran out another replica may own the task. */
        int64_t pause = 20;
        while (store_down(rc = once__renew_lease(e, t->principal, t->task_id, t->fence))) {
            if (pause_turn(w, pause))
                break;
            pause = pause * 2 > RELOAD_PAUSE_MAX_MS ? RELOAD_PAUSE_MAX_MS : pause * 2;
        }
        if (rc == ONCE_OK)
            rc = reload(w, &w->rec);
    }
    if (rc != ONCE_OK) {
        work_free(w);
        return;
    }
    /* The tree the dispatching write stored, if that is still the record. */
    if (t->task != NULL && dispatched == w->rec.version) {
        w->task = t->task;
        t->task = NULL;
    }
    if (w->rec.kind != ONCE_KIND_TASK ||
        (!notice && (w->rec.fence != t->fence || once_state_terminal(w->rec.state) ||
                     once_state_interrupted(w->rec.state)))) {
        work_free(w);
        return;
    }
    /* Read before the turn's first write takes the parsed task over. */
    /* A batching executor is built in and reads the tree; others get text. */
    w->msg = latest_user_message(w);
    if (w->msg == NULL || (!w->batch && message_text(w) == NULL)) {
        work_free(w);
        return;
    }
    if (w->rec.state == ONCE_STATE_SUBMITTED &&
        status_write(w, ONCE_STATE_WORKING, NULL) != ONCE_OK) {
        work_free(w);
        return;
    }

    if (w->born == NULL && t->parks == 0)
        ONCE__STAT(e, executed_turns);   /* else once its record is stored, or
                                          * when it started before its park */
    rc = e->ex->run(e->ex, w);
    /* What a batching turn wrote last is committed before the turn ends
     * (a failure shows in the record and the cancel flag checked next). */
    (void)flush(w);

    /* run() left the task running: finish it, unless it parked the turn,
     * the turn lost its fence or the engine is shutting down (then a
     * takeover resumes it). */
    if (!once_work_canceled(w) && t->park_ms == 0 && w->rec.kind == ONCE_KIND_TASK &&
        (w->rec.state == ONCE_STATE_SUBMITTED || w->rec.state == ONCE_STATE_WORKING)) {
        if (rc == ONCE_OK) {
            once_work_complete(w);
        } else {
            char reason[128];
            snprintf(reason, sizeof reason, "executor %s failed: %s",
                     e->ex->name != NULL ? e->ex->name : "?", once_strerror(rc));
            once_work_fail(w, reason);
        }
    }
    /* Parked: the turn goes on later (the engine checks the task is still
     * running, not canceled). */
    if (t->park_ms > 0 && (once_work_canceled(w) || w->rec.kind != ONCE_KIND_TASK ||
                           w->rec.state != ONCE_STATE_WORKING))
        t->park_ms = 0;
    if (w->born == NULL && t->held == NULL && t->park_ms == 0)
        count_turn_end(w);   /* a held write counts when it lands (held.c) */
    t->born_stored = t->born != NULL && w->born == NULL;
    if (t->settled != NULL && w->born == NULL) {
        *t->settled = w->rec;
        memset(&w->rec, 0, sizeof w->rec);
    }
    work_free(w);
}
