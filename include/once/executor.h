/*
 * executor.h -- how an agent plugs into onced: the executor interface and the
 * work context through which it reads its task and writes its results.
 *
 * The engine calls run() on a worker thread for one turn of one task: after
 * registration, after a continuation, or after a takeover of an expired lease.
 * Every write through the work context is fenced: it is a CAS on the stored
 * record that also checks the fence the turn started with. Once another
 * replica took the task over, or it was canceled, every write returns
 * ONCE_EFENCED and changes nothing; the executor must then stop. A turn ends
 * when run() returns. If run() returns while the task is still SUBMITTED or
 * WORKING, the engine completes it (rc == ONCE_OK) or fails it (rc < 0) — so
 * a command that does nothing and succeeds completes its task.
 *
 * JSON arguments and results are A2A 1.0 ProtoJSON text (camelCase, TASK_STATE_*,
 * ROLE_*, parts as text|raw|url|data). Strings returned by once_work_* getters
 * are owned by the work context and valid until run() returns, unless stated.
 */
#ifndef ONCE_EXECUTOR_H
#define ONCE_EXECUTOR_H

#include "once/client.h"
#include "once/once.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct once_work once_work;

typedef struct once_executor {
    const char *name;
    /* One turn. Returns ONCE_OK, or a negative once_err to fail the task with
     * a reason (once_work_fail() gives a better one). Must return promptly
     * after once_work_canceled() turns true or a write returns ONCE_EFENCED. */
    int (*run)(const struct once_executor *ex, once_work *w);
    /* Optional: release ctx at engine shutdown. */
    void (*destroy)(struct once_executor *ex);
    void *ctx;
    /* ONCE_EXECUTOR_* bits; 0 for any executor that says nothing. */
    unsigned flags;
    /* Read only when flags has ONCE_EXECUTOR_INLINE (an executor built
     * before this member existed never sets that bit). Called before a
     * turn with only its message readable (once_work_message, and the
     * task, context and principal ids); 1 says this turn will finish
     * without once_work_sleep() and without waiting on anything outside
     * the process. */
    int (*quick)(const struct once_executor *ex, once_work *w);
} once_executor;

/* The executor's turns run in process and finish without waiting on
 * anything but once_work_sleep(): the engine may then hold a turn's writes
 * and commit them together (one store write for WORKING, the artifacts and
 * the final state) instead of one write per call. Nothing is visible to
 * anyone before it is committed, so an executor that talks to the outside
 * world between its writes must leave this bit clear. */
#define ONCE_EXECUTOR_BATCH 0x1u

/* quick() is set: a blocking SendMessage whose turn quick() calls quick
 * runs that turn on the thread that registered the task and answers from
 * its last write, instead of handing it to a turn worker and waiting for
 * it (two thread hand-offs fewer per request). Such turns are not bounded
 * by the turn workers' count: the request threads bound them. */
#define ONCE_EXECUTOR_INLINE 0x2u

/* --- reading the task (snapshot taken when the turn started, refreshed by
 * every successful write) --- */
ONCE_API const char *once_work_task_id(const once_work *w);
ONCE_API const char *once_work_context_id(const once_work *w);
ONCE_API const char *once_work_principal(const once_work *w);
ONCE_API int64_t once_work_fence(const once_work *w);
/* Next side-effect step index (persisted; the same after a takeover). */
ONCE_API int64_t once_work_step(const once_work *w);
/* The message that started this turn (the latest user message), JSON text. */
ONCE_API const char *once_work_message(const once_work *w);
/* The whole Task (status, history, artifacts, metadata), JSON text. */
ONCE_API const char *once_work_task(const once_work *w);
/* The checkpoint written by an earlier turn or worker, or NULL. */
ONCE_API const char *once_work_checkpoint(const once_work *w);
/* 1 when this turn resumes after a takeover (an earlier worker died). */
ONCE_API int once_work_resumed(const once_work *w);
/* The W3C traceparent of the request that started this turn, or NULL (a
 * takeover, or a request without one). Valid while the turn runs. */
ONCE_API const char *once_work_traceparent(const once_work *w);
/* "<task_id>:step-<n>" for the current step; valid until the next write. */
ONCE_API const char *once_work_effect_key(once_work *w);

/* --- cancellation --- */
/* 1 once the task was canceled or the fence moved: stop, write nothing more. */
ONCE_API int once_work_canceled(const once_work *w);
/* Sleep up to ms, waking early on cancellation; returns once_work_canceled(). */
ONCE_API int once_work_sleep(once_work *w, int64_t ms);

/* --- parking: a turn that waits on something outside the process (an
 * upstream task that works for minutes) need not hold its worker thread
 * while it waits --- */
/* Park the turn: when run() returns next, the task stays WORKING with its
 * lease kept by this replica (the heartbeat renews it), the worker thread
 * is let go, and after ms the engine runs the turn again: run() once more,
 * with the task, its message and the checkpoint as stored, and
 * once_work_parks() one higher. run() should return right after parking;
 * the park is dropped (the turn ends as any turn does) if the task is no
 * longer WORKING or the turn was canceled by then. While parked, a cancel
 * of the task or a lost lease makes the turn due at once, and it runs one
 * last time with once_work_canceled() already true and every write
 * refused: time to undo what the turn started outside (the gateway cancels
 * its upstream task), then return. A continuation of the task replaces the
 * parked turn. ONCE_EINVAL: ms <= 0, or a turn that cannot park (a
 * batching executor's, or one run on the thread that registered its task);
 * ONCE_ECANCELED: the turn is canceled already. */
ONCE_API int once_work_park(once_work *w, int64_t ms);
/* How many times in a row this turn was parked and ran again (0: it was
 * never parked), e.g. to back off between looks at what it waits for. */
ONCE_API int once_work_parks(const once_work *w);

/* --- fenced writes; each returns ONCE_OK, ONCE_EFENCED, ONCE_EILLEGAL (an
 * illegal state transition), ONCE_EINVAL (malformed JSON, or not the A2A 1.0
 * shape: the rules of docs/protocol.md section 4 for messages, artifacts and
 * parts), or a store error --- */

/* Status update: state (WORKING, INPUT_REQUIRED, AUTH_REQUIRED, COMPLETED,
 * FAILED, REJECTED) with an optional agent message (Message JSON; parts
 * required, messageId/role filled in if absent). Interrupted and terminal
 * states end the turn: run() should return after them. */
ONCE_API int once_work_status(once_work *w, once_state state, const char *message_json);
/* Shorthands: complete; fail with a reason text; ask (input-required). */
ONCE_API int once_work_complete(once_work *w);
ONCE_API int once_work_fail(once_work *w, const char *reason);
ONCE_API int once_work_ask(once_work *w, const char *question);

/* Publish an artifact (Artifact JSON: artifactId, parts, name, description,
 * metadata). append: add the parts to an existing artifact with that
 * artifactId; last_chunk: this is its final chunk. */
ONCE_API int once_work_artifact(once_work *w, const char *artifact_json, int append,
                                int last_chunk);

/* Answer with a direct Message instead of a Task (ends the turn; the record
 * keeps the Message so a retried send replays it). */
ONCE_API int once_work_reply(once_work *w, const char *message_json);

/* Persist a checkpoint and advance the step counter to `step` (>= current). */
ONCE_API int once_work_checkpoint_set(once_work *w, const char *checkpoint, int64_t step);

/* Built-in executors. */
/* echo: "ask:Q" -> input-required asking Q; "sleep:N" -> working for N
 * seconds (heartbeating, cancelable) then completed; "fail" -> failed;
 * anything else -> completed with an artifact echoing the text. */
ONCE_API const once_executor *once_executor_echo(void);
/* Subprocess executor running `command` through /bin/sh -c for each turn
 * (JSON-lines protocol: docs/protocol.md). grace_ms: SIGTERM -> SIGKILL
 * delay on cancel; deadline_ms: per-turn limit (0 = none). */
ONCE_API int once_executor_subprocess(const char *command, int64_t grace_ms, int64_t deadline_ms,
                             once_executor **out);

/* The gateway: every turn talks A2A 1.0, as an ordinary client, to an
 * existing agent at url (docs: onced --upstream). One upstream task per
 * once task: its ID is checkpointed (fenced) before anything else is
 * written, and a turn that runs again re-attaches to it. Strings are
 * copied by once_executor_upstream. */
typedef struct once_upstream_cfg {
    const char *url;                 /* the agent's A2A URL; its card is read from
                                        <origin>/.well-known/agent-card.json */
    const char *const *headers;      /* "Name: value" lines sent on every upstream
                                        request (credentials); nheaders of them */
    size_t nheaders;
    const char *principal_header;    /* NULL: the caller's principal stays here;
                                        else it is sent upstream in this header */
    once_retry_policy retry;         /* per upstream call; zeroed = the client's
                                        defaults (once_retry_policy_default), with
                                        attempts bounded by the deadline alone and
                                        backoff capped at 5 s */
    int64_t deadline_ms;             /* > 0: overrides retry.deadline_ms */
    int64_t poll_max_ms;             /* GetTask polling backs off up to this (2 s) */
} once_upstream_cfg;

/* Fetches the upstream's card (ONCE_EIO when it cannot be read: err says
 * why, naming the URL), picks its binding (JSON-RPC, else HTTP+JSON) and
 * what it offers for re-attaching. err may be NULL. */
ONCE_API int once_executor_upstream(const once_upstream_cfg *cfg, once_executor **out, char *err,
                                    size_t errlen);
/* The upstream card the gateway read at start (JSON text), or NULL when ex
 * is no gateway. Valid until once_executor_free(ex); a refresh never
 * changes it (on_card below hands over the newer ones). */
ONCE_API const char *once_executor_upstream_card(const once_executor *ex);

/* A refreshed upstream card that differs from the last one taken (JSON
 * text, valid during the call), on the refresh thread. ONCE_OK takes it;
 * an error (err filled) leaves it untaken: logged, counted as a failed
 * refresh, offered again by the next refresh. */
typedef int (*once_upstream_card_fn)(void *arg, const char *card, char *err, size_t errlen);

/* Re-read the upstream's card every every_ms (> 0) on a thread the gateway
 * owns, with If-None-Match: the ETag it last got (a 304 changes nothing),
 * calling on_card (may be NULL) with each changed card. What the gateway
 * chose at start from the card (the binding, streaming, the rung) never
 * changes: a card whose interfaces changed is logged as a warning. A
 * refresh that gets no answer after a few attempts, or a 5xx, makes
 * once_executor_upstream_ready say so until one gets an answer again.
 * ONCE_EINVAL: ex is no gateway, every_ms <= 0, or a refresh runs already;
 * ONCE_ENOMEM: no thread. Start it once everything on_card reaches is up. */
ONCE_API int once_executor_upstream_refresh(once_executor *ex, int64_t every_ms,
                                            once_upstream_card_fn on_card, void *arg);
/* Stop the refresh and wait for its thread (a refresh in progress is cut
 * short: stop returns within about a second); afterwards on_card is never
 * called again. Call it before anything on_card reaches goes away; NULL, no
 * gateway or no refresh: nothing. once_executor_free stops it too. */
ONCE_API void once_executor_upstream_refresh_stop(once_executor *ex);
/* ONCE_OK while the last card refresh reached the upstream (always without
 * a refresh, and for an executor that is no gateway); else ONCE_EIO with why
 * (one line, NUL-terminated; may be NULL) naming the upstream and the
 * error. Any thread. */
ONCE_API int once_executor_upstream_ready(const once_executor *ex, char *why, size_t n);

ONCE_API void once_executor_free(once_executor *ex);   /* NULL ok; calls destroy */

#ifdef __cplusplus
}
#endif
#endif
