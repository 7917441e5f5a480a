/*
 * state.c -- task state names and the task state machine.
 *
 * The legal transitions are one constant table, so the whole lifecycle can be
 * read (and reviewed against A2A 1.0) in one place. Invariants:
 *   - terminal states (completed, failed, canceled, rejected) have no exits;
 *   - a state moves to itself only where that is a progress update
 *     (working -> working);
 *   - anything outside the enum is illegal in both directions, never an
 *     out-of-bounds read.
 * The numbering of once_state is stored by backends, so it indexes the table
 * directly.
 */
#include <string.h>

#include "core/decide.h"

#define NSTATES 9

/* Index: once_state. [0] is the name answered for anything unrecognised. */
static const char *const state_names[NSTATES] = {
    "TASK_STATE_UNSPECIFIED",    "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
    "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",         "TASK_STATE_CANCELED",  "TASK_STATE_REJECTED",
};

/* The names A2A 0.x used on the wire (0.1 tasks/send and friends). */
static const char *const legacy_names[NSTATES] = {
    "unknown",       "submitted", "working",  "input-required", "auth-required",
    "completed",     "failed",    "canceled", "rejected",
};

static int in_range(once_state s)
{
    return (int)s >= 0 && (int)s < NSTATES;
}

const char *once_state_name(once_state s)
{
    return in_range(s) ? state_names[s] : state_names[ONCE_STATE_UNKNOWN];
}

once_state once_state_parse(const char *name)
{
    if (name == NULL)
        return ONCE_STATE_UNKNOWN;
    for (int i = 0; i < NSTATES; i++) {
        if (strcmp(name, state_names[i]) == 0 || strcmp(name, legacy_names[i]) == 0)
            return (once_state)i;
    }
    return ONCE_STATE_UNKNOWN;
}

int once_state_terminal(once_state s)
{
    return s == ONCE_STATE_COMPLETED || s == ONCE_STATE_FAILED || s == ONCE_STATE_CANCELED ||
           s == ONCE_STATE_REJECTED;
}

int once_state_interrupted(once_state s)
{
    return s == ONCE_STATE_INPUT_REQUIRED || s == ONCE_STATE_AUTH_REQUIRED;
}

/*
 * legal[from][to]. UNKNOWN as "from" is the creation of a record: a task is
 * born submitted, or working when the accepting replica starts it in the same
 * write. An interrupted task goes back to working (continuation run here) or
 * submitted (continuation queued for another replica), or ends by cancel or
 * failure; it cannot complete without being resumed.
 */
#define X 1
static const unsigned char legal[NSTATES][NSTATES] = {
    /* to:            UNK SUB WRK INP AUT CMP FAI CAN REJ */
    /* UNKNOWN     */ {0,  X,  X,  0,  0,  0,  0,  0,  0},
    /* SUBMITTED   */ {0,  0,  X,  X,  X,  X,  X,  X,  X},
    /* WORKING     */ {0,  0,  X,  X,  X,  X,  X,  X,  X},
    /* INPUT_REQ   */ {0,  X,  X,  0,  0,  0,  X,  X,  0},
    /* AUTH_REQ    */ {0,  X,  X,  0,  0,  0,  X,  X,  0},
    /* COMPLETED   */ {0,  0,  0,  0,  0,  0,  0,  0,  0},
    /* FAILED      */ {0,  0,  0,  0,  0,  0,  0,  0,  0},
    /* CANCELED    */ {0,  0,  0,  0,  0,  0,  0,  0,  0},
    /* REJECTED    */ {0,  0,  0,  0,  0,  0,  0,  0,  0},
};
#undef X

int once__transition_ok(once_state from, once_state to)
{
    if (!in_range(from) || !in_range(to))
        return 0;
    return legal[from][to];
}

int once__transition(once_state from, once_state to)
{
    return once__transition_ok(from, to) ? ONCE_OK : ONCE_EILLEGAL;
}
