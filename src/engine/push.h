/*
 * push.h -- push notifications in the engine (internal API used by src/a2a
 * and apps/onced): the four A2A 1.0 config methods and the delivery
 * settings. docs/design.md section 6; the wire contract is docs/protocol.md,
 * "Push notifications", and include/once/webhook_sig.h.
 *
 * Configs live in the task record (once_record.push_json), so a config
 * given with SendMessage is stored in the same atomic create / CAS as the
 * task, and every config change is a CAS like any other mutation. Delivery
 * progress lives in the store's delivery rows (ONCE_STORE_PUSH). Every
 * replica runs delivery threads that claim due rows with a lease, POST the
 * events in generation order and report each outcome, fenced by the lease.
 *
 * A store without ONCE_STORE_PUSH has no push: every function here answers
 * ONCE_EUNSUPPORTED and no thread starts.
 */
#ifndef ONCE_ENGINE_PUSH_H
#define ONCE_ENGINE_PUSH_H

#include <jansson.h>

#include "engine/engine.h"

/* Delivery settings; zero fields take the defaults. Strings are copied. */
typedef struct once_push_options {
    const char *const *secrets; /* signing secrets, newest first (webhook_sig.h) */
    size_t nsecrets;            /* 0: deliveries carry no webhook-signature */
    const char *const *allow;   /* CIDRs exempt from the SSRF guard */
    size_t nallow;
    int max_attempts;           /* failed attempts on one event after which
                                 * lastError reports them (retries go on; only a
                                 * 410 disables); default 10 */
    int64_t timeout_ms;         /* one POST; default 10000 */
    int64_t backoff_ms;         /* full-jitter backoff base; default 1000 */
    int64_t backoff_cap_ms;     /* default 300000 */
    int64_t poll_ms;            /* idle look for due rows; default 250 */
    int threads;                /* concurrent deliveries; default 4 */
    const char *const *resolve; /* libcurl CURLOPT_RESOLVE "host:port:addr" entries */
    size_t nresolve;            /* (tests: a name that resolves to a blocked address) */
} once_push_options;

/* Keep o for the delivery threads; before once__engine_start. ONCE_EINVAL
 * (err says which setting) for a malformed CIDR, secret or number. */
int once__engine_push_setup(once__engine *e, const once_push_options *o, char *err, size_t errlen);

/* 1 if this engine's store keeps push delivery rows. */
int once__engine_push_supported(const once__engine *e);

/* Why a call failed, for the wire. */
typedef struct once_push_res {
    const char *field; /* ONCE_EINVAL: offending parameter ("url");
                        * ONCE_ENOTFOUND: "taskId" or "id" */
    char detail[256];
    int64_t expired_at; /* ONCE_ETOMBSTONE */
} once_push_res;

/* The member a config handed to create carries (true) when it was set over
 * A2A 0.3: kept with it, never shown, and its deliveries' bodies are the
 * 0.3 events (core/v03.h) instead of 1.0 StreamResponses. */
#define ONCE__PUSH_V03 "once:a2a03"

/* The A2A TaskPushNotificationConfig objects handed in and out:
 *   {id, taskId, url, token?, authentication?: {scheme, credentials?}}
 * With `status` set, each one also carries our "delivery" member
 * (docs/protocol.md): {deliveredGeneration, attempts, nextAttemptAt?,
 * disabled, lastError?, leaseOwner?, deliveries, retries, failures}.
 *
 * create: config is a shape-checked TaskPushNotificationConfig; id is
 * minted (UUID) when absent; an existing id is replaced (its progress kept,
 * or restarted at the task's current generation if it was disabled). Only
 * events after the current generation are sent to a new config.
 * Errors: ONCE_EINVAL (bad url: SSRF guard, scheme; too many configs),
 * ONCE_ENOTFOUND (task), ONCE_ETOMBSTONE, store errors. */
int once__engine_push_create(once__engine *e, const char *principal, const json_t *config, int status,
                            json_t **out, once_push_res *res);
/* ONCE_ENOTFOUND: the task (field "taskId") or the config (field "id"). */
int once__engine_push_get(once__engine *e, const char *principal, const char *task_id,
                         const char *config_id, int status, json_t **out, once_push_res *res);
/* *out = JSON array of configs (maybe empty). */
int once__engine_push_list(once__engine *e, const char *principal, const char *task_id, int status,
                          json_t **out, once_push_res *res);
/* Idempotent: deleting a config that does not exist is ONCE_OK (the task
 * must exist: ONCE_ENOTFOUND / ONCE_ETOMBSTONE otherwise). */
int once__engine_push_delete(once__engine *e, const char *principal, const char *task_id,
                            const char *config_id, once_push_res *res);

/* This replica's delivery counters (the store's rows hold the per-config,
 * all-replica ones). */
typedef struct once_push_stats {
    uint64_t attempts;  /* POSTs made */
    uint64_t delivered; /* answered 2xx */
    uint64_t retried;   /* failed, another attempt scheduled */
    uint64_t disabled;  /* configs disabled: 410 or attempts exhausted */
    uint64_t refused;   /* connections refused by the SSRF guard */
    uint64_t fenced;    /* outcomes refused because the lease had moved on */
} once_push_stats;
void once__engine_push_stats(once__engine *e, once_push_stats *out);

#endif /* ONCE_ENGINE_PUSH_H */
