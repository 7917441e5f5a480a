/*
 * decide.h -- the dedup verdict (docs/design.md section 4) and the task state
 * machine. Pure functions: no I/O, no allocation.
 */
#ifndef ONCE_CORE_DECIDE_H
#define ONCE_CORE_DECIDE_H

#include "once/once.h"

typedef enum once_verdict {
    ONCE_V_REGISTER = 1,           /* create the task */
    ONCE_V_TASK_NOT_FOUND,         /* -32001 TASK_NOT_FOUND */
    ONCE_V_TASK_EXPIRED,           /* -32001 TASK_EXPIRED */
    ONCE_V_REPLAY,                 /* answer with the stored state, run nothing */
    ONCE_V_IDEMPOTENCY_CONFLICT,   /* -32602 MESSAGE_ID_REUSED */
    ONCE_V_CONTINUE,               /* interrupted task advances, fence + 1 */
    ONCE_V_REJECT_BUSY,            /* -32004 TASK_NOT_ACCEPTING_INPUT */
    ONCE_V_REJECT_TERMINAL         /* -32004 TASK_TERMINAL */
} once_verdict;

const char *once__verdict_name(once_verdict v);  /* "REGISTER", ... */
/* The outcome a request's log line reports for it ("registered",
 * "refused:task_busy", ...); NULL for a value that is no verdict. */
const char *once__verdict_outcome(once_verdict v);

typedef enum once_stored {
    ONCE_STORED_NONE = 0,       /* no record, no tombstone */
    ONCE_STORED_TOMBSTONE = 1,
    ONCE_STORED_RECORD = 2
} once_stored;

typedef struct once__decide_in {
    once_stored stored;
    once_state state;            /* stored record's state (RECORD only) */
    const char *digests;         /* stored record's digest lines (RECORD only) */
    int may_register;            /* derived ID, client ID with the extension
                                    active, or 0.1 tasks/send */
    const char *message_id;      /* incoming messageId; NULL for 0.1 tasks/send */
    const char *digest_hex;      /* incoming message digest, 64 lowercase hex */
} once__decide_in;

/* The verdict for one incoming message. Table-driven, total: every input
 * maps to exactly one verdict. */
once_verdict once__decide(const once__decide_in *in);

/* Digest lines ("<64 hex> <messageId>\n" each; see once_record.digests). */

/* Find the line whose messageId equals message_id: 1 and *digest_hex (points
 * into lines, 64 chars, not NUL-terminated) if found, else 0. */
int once__digests_find_id(const char *lines, const char *message_id, const char **digest_hex);
/* 1 if any line carries digest_hex. */
int once__digests_has(const char *lines, const char *digest_hex);
/* Append a line to a once_malloc'd string (*lines may be NULL). */
int once__digests_append(char **lines, const char *digest_hex, const char *message_id);
/* Copy the first line's digest into out (65 bytes); "" if none. */
void once__digests_first(const char *lines, char out[ONCE_DIGEST_HEX + 1]);

/* State machine: 1 if from -> to is a legal transition. A state may "move"
 * to itself only where that is a progress update (working -> working). */
int once__transition_ok(once_state from, once_state to);
/* ONCE_OK, or ONCE_EILLEGAL (never a silent write). */
int once__transition(once_state from, once_state to);

#endif
