/*
 * client.h -- the once client: sends A2A 1.0 messages so that a send retried
 * after any failure makes exactly one task (docs/design.md section 8).
 *
 * The order of a send is the whole point:
 *   1. mint the task ID (ULID, or UUIDv4) -- before any network activity;
 *   2. write the intent (agent, ID, message) to a durable SQLite outbox;
 *   3. send, retrying transport errors, timeouts, HTTP 429/502/503/504 and
 *      JSON-RPC errors the server marks retryable, with the same ID and the
 *      same body every time; the server dedups, so retries converge.
 * A crash anywhere leaves a pending intent that once_client_recover() sends
 * again, with the same ID and body. A structured A2A refusal (terminal task,
 * busy, conflict, expired, not found) is never retried: it is returned with
 * its reason and the state it names.
 *
 * Against an agent whose card does not declare the idempotency extension
 * (a plain A2A 1.0 server) the client sends no task ID; the minted ID is
 * used as the messageId, so a server that dedups by messageId (onced does)
 * still converges, and the task ID is learned from the answer.
 *
 * Outbox states: pending -> acknowledged -> final (terminal task seen), or
 * pending|acknowledged -> refused, or pending|acknowledged -> abandoned (the
 * user gave up on it: once_client_abandon). Nothing is deleted except by
 * once_client_prune(), which removes finished intents older than an age.
 *
 * A once_client is used by one thread at a time. Several processes may share
 * one outbox file (SQLite WAL; the retry budget lives in it too).
 */
#ifndef ONCE_CLIENT_H
#define ONCE_CLIENT_H

#include <signal.h>

#include "once/once.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Retry policy. Every field has a default (once_retry_policy_default); the
 * README lists them.
 */
typedef struct once_retry_policy {
    unsigned max_attempts;       /* attempts per call, the first included (5) */
    int64_t attempt_timeout_ms;  /* one attempt, connect to last byte (10 s) */
    int64_t connect_timeout_ms;  /* TCP connect within an attempt (2 s) */
    int64_t deadline_ms;         /* all attempts of one call together (60 s) */
    int64_t backoff_base_ms;     /* full jitter: sleep ~ U[0, min(cap, base*2^k)] (200 ms) */
    int64_t backoff_cap_ms;      /* (10 s) */
    /* Retry budget: a token bucket shared by every call to one agent (kept
     * in the outbox, so separate processes share it). Each call deposits
     * budget_ratio tokens, each retry takes one, and the bucket holds at
     * most budget_burst; time adds budget_refill_per_s. Under a sustained
     * outage retries therefore stay near budget_ratio of the calls. */
    double budget_ratio;         /* (0.1) */
    double budget_burst;         /* (10) */
    double budget_refill_per_s;  /* (0.1) */
} once_retry_policy;

ONCE_API void once_retry_policy_default(once_retry_policy *p);

/* ---------------------------------------------------------------------------
 * The client.
 */
typedef enum once_id_kind {
    ONCE_ID_ULID = 0,
    ONCE_ID_UUID4 = 1
} once_id_kind;

/* Crash points for process-level tests: the hook runs at each, and a test
 * hook may kill the process there. */
typedef enum once_client_point {
    ONCE_POINT_AFTER_OUTBOX = 1, /* the intent is durable; nothing sent yet */
    ONCE_POINT_AFTER_SEND = 2    /* the server answered; the outbox does not know yet */
} once_client_point;

/* The A2A binding calls go over (docs/wire.md, "The client's bindings").
 * AUTO takes the first interface of the agent's card, at protocolVersion
 * 1.0, whose binding the client speaks; JSON-RPC at the agent's URL when
 * the card lists none or cannot be read. A forced binding the card does
 * not list fails the call (ONCE_OUTCOME_ERROR, never retried). Every
 * binding carries the same request, so a retry or a later call over
 * another binding reaches the same task. An A2A 0.3 agent is always
 * spoken to over JSON-RPC. */
typedef enum once_binding {
    ONCE_BINDING_AUTO = 0,
    ONCE_BINDING_JSONRPC = 1,
    ONCE_BINDING_HTTP_JSON = 2,
    ONCE_BINDING_GRPC = 3
} once_binding;

/* "auto", "jsonrpc", "http_json", "grpc" -> *out; ONCE_EINVAL otherwise. */
ONCE_API int once_binding_parse(const char *name, once_binding *out);
/* The name once_binding_parse takes; "unknown" for another value. Static. */
ONCE_API const char *once_binding_name(once_binding b);

typedef struct once_client_config {
    const char *outbox_path;     /* SQLite file, created (its folder must exist);
                                    NULL = in memory, not durable */
    const char *token;           /* bearer token; NULL = none */
    once_retry_policy retry;     /* zeroed = defaults; to change a few fields,
                                    start from once_retry_policy_default() */
    once_id_kind id_kind;
    const once_clock *clock;     /* NULL = system clock */
    const once_rng *rng;         /* NULL = system CSPRNG */
    /* Nonzero stops retries, sleeps and waits promptly (ONCE_ECANCELED). A
     * signal handler may set it. NULL = never. */
    volatile sig_atomic_t *interrupted;
    /* Sleeps; NULL = real sleep in 50 ms slices, so *interrupted stops it
     * promptly. A plugged-in one (a test clock) gets each delay whole. */
    void (*sleep_ms)(void *ctx, int64_t ms);
    void *sleep_ctx;
    void (*hook)(void *ctx, once_client_point p);   /* NULL = none */
    void *hook_ctx;
    /* HTTPS, as curl does it: the agent's certificate is verified against
     * the system's CAs (or cacert's) and must name the URL's host. A
     * certificate that fails verification ends the call at once with
     * ONCE_OUTCOME_ERROR, never retried: nothing was sent. */
    const char *cacert;          /* PEM file of CAs to trust; NULL = system */
    int insecure;                /* nonzero: verify nothing (tests only; HTTPS
                                    and gRPC over TLS alike) */
    once_binding binding;        /* ONCE_BINDING_AUTO (0) = the card's choice */
} once_client_config;

typedef struct once_client once_client;

/* cfg strings are copied. ONCE_ESTORE when the outbox cannot be opened
 * (errmsg is then in *errbuf when errbuf != NULL). */
ONCE_API int once_client_new(const once_client_config *cfg, once_client **out, char *errbuf,
                             size_t errlen);
ONCE_API void once_client_free(once_client *c);   /* NULL ok */
/* The last failure's detail, for a human; never NULL; valid until the next call. */
ONCE_API const char *once_client_errmsg(const once_client *c);

/* ---------------------------------------------------------------------------
 * Results.
 */
typedef enum once_outcome {
    ONCE_OUTCOME_OK = 0,         /* the agent answered with a result */
    ONCE_OUTCOME_REFUSED = 1,    /* a structured A2A refusal; never retried */
    ONCE_OUTCOME_EXHAUSTED = 2,  /* attempts, deadline or retry budget used up */
    ONCE_OUTCOME_ERROR = 3,      /* any other failure (bad request, auth, protocol) */
    ONCE_OUTCOME_INTERRUPTED = 4 /* *interrupted was set */
} once_outcome;

/* What one call ended with. Strings are once_malloc'd and owned by the
 * result: once_call_result_clear() frees them. */
typedef struct once_call_result {
    once_outcome outcome;
    char task_id[ONCE_ID_MAX + 1];  /* "" when unknown */
    once_state state;            /* the task's state, or the state a refusal names */
    int is_message;              /* the agent answered with a Message, not a Task */
    int replayed;                /* Idempotent-Replayed: true on the answer (gRPC:
                                    the idempotent-replayed metadata) */
    char *json;                  /* result: the Task or Message JSON; else NULL */
    int rpc_code;                /* JSON-RPC error code (refusal, error), else 0;
                                    over HTTP+JSON and gRPC the code onced sends
                                    on JSON-RPC for that error */
    char reason[64];             /* ErrorInfo reason, or a client-side one */
    char *error;                 /* human-readable error text, or NULL */
    int http_status;             /* last HTTP status; 0 = none (transport); gRPC:
                                    the HTTP status HTTP+JSON gives its status */
    unsigned attempts;           /* attempts made by this call */
    unsigned retries_denied;     /* retries the budget refused (0 or 1) */
    int64_t elapsed_ms;
    int64_t intent;              /* outbox row of the intent, 0 if none */
    char *endpoint;              /* the agent's URL that answered (one of its
                                    endpoints); NULL when none did */
} once_call_result;

ONCE_API void once_call_result_clear(once_call_result *r);   /* NULL ok; zeroes */
ONCE_API const char *once_outcome_name(once_outcome o);      /* "ok", "refused", ... */

/* Every call below returns ONCE_OK when r holds an answer: the agent's
 * result (outcome OK) or its refusal (outcome REFUSED). Otherwise a negative
 * once_err and r->outcome says why: ONCE_ETIMEDOUT (EXHAUSTED),
 * ONCE_ECANCELED (INTERRUPTED), ONCE_EIO (ERROR), ONCE_ESTORE (the outbox
 * failed), ONCE_EINVAL, ONCE_ENOMEM. */

typedef struct once_send_spec {
    const char *agent;           /* the agent's URL (its JSON-RPC endpoint, where
                                    its card is; the binding chosen from the card,
                                    once_client_config.binding), or several of its
                                    replicas' separated by commas: stored as its
                                    endpoints, tried in turn (see once_client_prefer) */
    const char *parts_json;      /* JSON array of A2A Parts, e.g. [{"text":"hi"}] */
    const char *task_id;         /* NULL = mint one; else use it (needs the extension) */
    const char *metadata_json;   /* optional message metadata object; NULL = none */
    /* Push notifications (webhooks) for the task, subscribed in the same
     * SendMessage (configuration.taskPushNotificationConfig): every event
     * from the first is POSTed to push_url, carrying push_token (NULL =
     * none; `once listen --token` requires it). Kept with the intent, so
     * recovery subscribes too. NULL = no subscription. */
    const char *push_url;
    const char *push_token;
} once_send_spec;

/* A first message: a new task. r->task_id is the ID (minted before any
 * network activity; plain mode: the server's, once known). */
ONCE_API int once_client_send(once_client *c, const once_send_spec *s, once_call_result *r);

/* A continuation of task_id (input-required / auth-required), also through
 * the outbox: retries replay, they never make a second turn. */
ONCE_API int once_client_continue(once_client *c, const char *agent, const char *task_id,
                         const char *parts_json, once_call_result *r);

ONCE_API int once_client_get(once_client *c, const char *agent, const char *task_id,
                             once_call_result *r);
ONCE_API int once_client_cancel(once_client *c, const char *agent, const char *task_id,
                       once_call_result *r);

/* Wait until the task is terminal or interrupted (input-required,
 * auth-required), *interrupted is set, or timeout_ms (0 = none) passes
 * (ONCE_ETIMEDOUT, reason WAIT_TIMEOUT). How: see once_client_follow, of
 * which this is the short form. on_state, if not NULL, sees every state
 * change as it is observed, including the first; task_json is the Task (a
 * poll) or the StreamResponse (a stream event) that showed it. r holds the
 * task as GetTask answers it at the end. */
typedef void (*once_state_fn)(void *ctx, const char *task_id, once_state s, const char *task_json);
ONCE_API int once_client_wait(once_client *c, const char *agent, const char *task_id,
                              int64_t timeout_ms, once_state_fn on_state, void *ctx,
                              once_call_result *r);

/* What a wait observed: one stream event, or one polled Task that moved. */
typedef struct once_wait_event {
    const char *task_id;
    int64_t generation;          /* the event's; 0 when the agent does not number them */
    once_state state;            /* the task's state after it */
    const char *json;            /* the StreamResponse (streamed) or the Task (polled) */
    int streamed;                /* 1: an SSE event; 0: a GetTask answer */
} once_wait_event;
typedef void (*once_wait_event_fn)(void *ctx, const once_wait_event *ev);

typedef struct once_wait_spec {
    const char *agent;
    const char *task_id;
    int64_t timeout_ms;          /* 0 = none */
    /* > 0: the caller already holds the task at this generation, in state
     * `state` (say, from the send's answer): no first GetTask is made and
     * only later events are reported. 0: start with a GetTask. */
    int64_t after_generation;
    once_state state;
    int poll;                    /* never stream; poll GetTask */
    once_state_fn on_state;      /* may be NULL */
    once_wait_event_fn on_event; /* may be NULL */
    void *ctx;                   /* for both */
} once_wait_spec;

/* Follow a task until it is terminal or interrupted. When the agent's card
 * says capabilities.streaming, over SSE (SubscribeToTask): a stream that
 * drops is resumed with Last-Event-ID = the last generation seen, so no
 * event is missed or repeated (each reported event has a generation above
 * the previous one); connections that fail before a stream opens are
 * retried with the retry policy's backoff, attempts and budget, and a
 * stream that delivered events starts the count afresh. When the agent
 * does not stream (or refuses to for this task), GetTask is polled with
 * backoff: the interval doubles from 100 ms to 2 s while nothing changes,
 * jittered, each poll retried by the policy. Results and errors as
 * once_client_wait. */
ONCE_API int once_client_follow(once_client *c, const once_wait_spec *w, once_call_result *r);

/* ---------------------------------------------------------------------------
 * What an agent produced: the parts of a result's Task artifacts or of its
 * direct Message (once_call_result.json), for showing and saving.
 */
typedef enum once_part_kind {
    ONCE_PART_TEXT = 1,
    ONCE_PART_FILE = 2,          /* raw bytes, or a url */
    ONCE_PART_DATA = 3           /* any JSON value */
} once_part_kind;

/* One part. Pointers are valid during the callback only. */
typedef struct once_part {
    const char *artifact;        /* the artifact's name, else its artifactId; NULL: a Message's */
    size_t index;                /* its position among the artifact's (or message's) parts */
    once_part_kind kind;
    const char *filename;        /* NULL if none */
    const char *media_type;      /* NULL if none */
    const char *url;             /* a file by reference; NULL otherwise */
    const unsigned char *bytes;  /* the text, the decoded raw bytes, or the data as compact
                                    JSON; NULL for a url */
    size_t size;                 /* bytes of the above; 0 for a url */
} once_part;

/* fn sees every part, in order; it returns 0 to go on. A malformed part (a
 * raw part that is not base64, a part of no known kind) is skipped and the
 * call ends in ONCE_EPARSE after the others were seen; ONCE_EPARSE also
 * when json is not an object; ONCE_ENOMEM. */
typedef int (*once_part_fn)(void *ctx, const once_part *p);
ONCE_API int once_parts_each(const char *json, once_part_fn fn, void *ctx);

/* Save part p as a file in dir (created, 0700, when missing); its name
 * goes to name (namelen >= 112). The name is the part's filename, else the
 * artifact's name, reduced to [A-Za-z0-9._-] without leading dots: never a
 * path the agent chose. Data parts are saved as JSON (name ends in .json),
 * url parts as the URL (.url: nothing is fetched), raw parts decoded, text
 * parts as their text (.txt unless the part has a filename; a Message's:
 * message.txt). An existing file is never overwritten: one that holds
 * exactly these bytes already is the part (ONCE_EEXISTS, nothing written,
 * name is that file: saving an answer twice is a no-op); a name taken by
 * anything else gets "-2", "-3", ... before its extension, and err says
 * which name was taken (on ONCE_OK err is empty otherwise). Failures:
 * ONCE_EIO with the reason in err. */
ONCE_API int once_part_save(const char *dir, const once_part *p, char *name, size_t namelen,
                            char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * The outbox.
 */
typedef enum once_intent_state {
    ONCE_INTENT_PENDING = 1,      /* written; no answer from the agent yet */
    ONCE_INTENT_ACKNOWLEDGED = 2, /* the agent holds the task; not finished */
    ONCE_INTENT_FINAL = 3,        /* the task is terminal (or answered with a Message) */
    ONCE_INTENT_REFUSED = 4,      /* the agent refused; never re-sent */
    ONCE_INTENT_ABANDONED = 5     /* given up by the user; never sent or polled again */
} once_intent_state;
#define ONCE_INTENT_LAST ONCE_INTENT_ABANDONED

ONCE_API const char *once_intent_state_name(once_intent_state s);   /* "pending", ... */

/* A row of the outbox. Strings are valid during the callback only. */
typedef struct once_intent {
    int64_t seq;                 /* row id, increasing */
    const char *kind;            /* "send" or "continue" */
    const char *agent;
    const char *task_id;         /* NULL until known (plain mode before the answer) */
    const char *message_id;
    const char *mode;            /* "ext", "plain", or NULL: not yet known */
    once_intent_state state;
    once_state task_state;       /* last seen, UNKNOWN if none */
    unsigned attempts;           /* attempts over the intent's life */
    const char *last_error;      /* NULL if none */
    const char *refusal;         /* the refusal's reason, NULL unless refused */
    int64_t created_ms, updated_ms, acked_ms, finished_ms;   /* 0 = not yet */
    const char *endpoint;        /* the URL of the agent that last answered about
                                    it; NULL until one did */
} once_intent;

/* Intents in seq order; state 0 = all. The callback returns 0 to go on. */
typedef int (*once_intent_fn)(void *ctx, const once_intent *it);
ONCE_API int once_client_outbox(once_client *c, once_intent_state state, once_intent_fn fn,
                                void *ctx);

/* The intent at seq (once_call_result.intent), shown to fn as the outbox
 * holds it now. ONCE_ENOTFOUND when there is none (pruned). */
ONCE_API int once_client_intent(once_client *c, int64_t seq, once_intent_fn fn, void *ctx);

/* Reach an agent at these URLs first, for the rest of this handle's life:
 * urls is one URL or several separated by commas (replicas of one agent).
 * Which agent: `agent` when not NULL (the name once_client_agent_of gives);
 * else the one the outbox knows any of the URLs by; else, when the
 * outbox's open intents are all of one agent, that one (say, the URL of a
 * live replica when the stored one died); else a new one. Nothing is
 * stored: a send stores the URLs it names. note, if not NULL, gets a
 * sentence for the user when some URLs are new to the agent ("" else).
 * ONCE_EINVAL (errmsg says why) for a URL the client cannot use, or URLs
 * the outbox cannot tie to one agent. */
ONCE_API int once_client_prefer(once_client *c, const char *urls, const char *agent, char *note,
                                size_t notelen);

/* The agent of the newest intent for task_id, into out. ONCE_ENOTFOUND if
 * the outbox does not know the task. */
ONCE_API int once_client_agent_of(once_client *c, const char *task_id, char *out, size_t outlen);

/* Remove final, refused and abandoned intents that finished more than
 * age_ms ago. */
ONCE_API int once_client_prune(once_client *c, int64_t age_ms, unsigned *removed);

/* Give up on the open intents of id (a task ID, or the message ID of a send
 * whose task the agent has not named yet): every pending or acknowledged
 * one becomes abandoned, kept for the record and never sent, polled or
 * recovered again. The agent is not told (once_client_cancel does that). A
 * send still retrying it in another process stops at its next attempt.
 * fn, if not NULL, sees each intent as it was before. ONCE_OK with
 * *abandoned >= 1; ONCE_ENOTFOUND when no intent has that ID;
 * ONCE_EILLEGAL when every intent of it is already final, refused or
 * abandoned (errmsg names the state; nothing changed). */
ONCE_API int once_client_abandon(once_client *c, const char *id, once_intent_fn fn, void *ctx,
                        unsigned *abandoned);

/* Recovery: every pending intent is sent again with its ID and body;
 * every acknowledged one is polled once (GetTask) and becomes final when its
 * task is terminal. Each goes to its agent's endpoints in turn, the
 * preferred ones (once_client_prefer) first. fn, if not NULL, sees each
 * intent's result. Returns ONCE_OK when every intent was handled (see the
 * counts). acknowledged, final, refused and pending count the intents
 * handled by the state the outbox holds for them afterwards; exhausted
 * and errors count the calls that got no answer. */
typedef struct once_recover_stats {
    unsigned resent, polled, acknowledged, final, refused, exhausted, errors;
    unsigned pending;
} once_recover_stats;
typedef void (*once_recover_fn)(void *ctx, const once_intent *it, int rc, const once_call_result *r);
ONCE_API int once_client_recover(once_client *c, once_recover_fn fn, void *ctx,
                                 once_recover_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* ONCE_CLIENT_H */
