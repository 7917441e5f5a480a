/*
 * push_rows.c -- the meaning of push delivery rows, shared by every backend
 * with ONCE_STORE_PUSH (store.h, "Push delivery"): which push_json a record
 * may carry, how a record change reshapes the key's rows, when a row is
 * due, and what an ack does to it. Pure functions over structs; the
 * backends only store what these compute, so the memory and SQLite
 * backends cannot drift apart.
 *
 * Invariants: a row's delivered never goes down except by a reset (a new
 * "since" from the engine); only the lease holder, inside its lease, moves
 * a row forward; counters only grow.
 */
#include <jansson.h>
#include <string.h>

#include "store/store_int.h"

/* Parse and check push_json; fills out (may be NULL) on success. */
static const char *parse(const char *push_json, int64_t generation, once__push_elem *out, size_t *n)
{
    json_error_t err;
    json_t *a = json_loads(push_json, JSON_REJECT_DUPLICATES, &err);
    const char *why = NULL;
    size_t i, j;
    json_t *el;

    *n = 0;
    if (!a)
        return "push_json is not JSON";
    if (!json_is_array(a)) {
        why = "push_json is not an array";
        goto out;
    }
    if (json_array_size(a) > ONCE_PUSH_CONFIGS_MAX) {
        why = "push_json holds more than ONCE_PUSH_CONFIGS_MAX configs";
        goto out;
    }
    json_array_foreach(a, i, el)
    {
        const char *id = json_string_value(json_object_get(el, "id"));
        json_t *since = json_object_get(el, "since");
        if (!json_is_object(el)) {
            why = "a push_json element is not an object";
            goto out;
        }
        if (!id || !once_id_valid(id)) {
            why = "a push_json element has no valid \"id\"";
            goto out;
        }
        if (!json_is_integer(since) || json_integer_value(since) < 0 ||
            json_integer_value(since) > generation) {
            why = "a push_json element's \"since\" is not an integer in 0..generation";
            goto out;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(id, json_string_value(json_object_get(json_array_get(a, j), "id"))) == 0) {
                why = "two push_json elements share an id";
                goto out;
            }
        }
        if (out) {
            memset(&out[i], 0, sizeof out[i]);
            memcpy(out[i].id, id, strlen(id) + 1);
            out[i].since = (int64_t)json_integer_value(since);
        }
    }
    *n = json_array_size(a);
out:
    json_decref(a);
    return why;
}

const char *once__push_json_flaw(const char *push_json, int64_t generation)
{
    size_t n;
    return parse(push_json, generation, NULL, &n);
}

int once__push_elems(const char *push_json, once__push_elem out[ONCE_PUSH_CONFIGS_MAX], size_t *n)
{
    *n = 0;
    if (!push_json)
        return ONCE_OK;
    /* The record passed the flaw check, so generation cannot fail it here:
     * the bound only matters there. */
    return parse(push_json, INT64_MAX, out, n) ? ONCE_ECORRUPT : ONCE_OK;
}

static void fresh_row(once_push_row *r, const once__push_elem *e)
{
    memset(r, 0, sizeof *r);
    memcpy(r->config_id, e->id, sizeof r->config_id);
    r->since = e->since;
    r->delivered = e->since;
}

size_t once__push_sync(const once_push_row *old, size_t nold, const once__push_elem *el, size_t n,
                       int64_t target, once_push_row *out)
{
    size_t kept = 0, i, j;

    for (i = 0; i < n; i++) {
        const once_push_row *prev = NULL;
        for (j = 0; j < nold && !prev; j++)
            if (strcmp(old[j].config_id, el[i].id) == 0)
                prev = &old[j];
        if (prev) {
            kept++;
            out[i] = *prev;
            if (prev->since != el[i].since) {
                /* A re-created config: start over from the new point, keep
                 * the counters (they describe the config's history). */
                fresh_row(&out[i], &el[i]);
                out[i].deliveries = prev->deliveries;
                out[i].retries = prev->retries;
                out[i].failures = prev->failures;
            }
        } else {
            fresh_row(&out[i], &el[i]);
        }
        out[i].target = target;
    }
    return nold - kept;
}

int once__push_due(const once_push_row *r, int64_t now)
{
    return !r->disabled && r->delivered < r->target && r->next_attempt_at <= now &&
           r->lease_until <= now;
}

static void set_error(once_push_row *r, const char *why)
{
    size_t n = why ? strlen(why) : 0;
    if (n > ONCE_PUSH_ERROR_MAX)
        n = ONCE_PUSH_ERROR_MAX;
    if (n)
        memcpy(r->last_error, why, n);
    r->last_error[n] = '\0';
}

static void release(once_push_row *r)
{
    r->lease_owner[0] = '\0';
    r->lease_until = 0;
}

int once__push_apply_ack(once_push_row *r, const once_push_ack *a)
{
    if (strcmp(r->lease_owner, a->owner) != 0 || r->lease_until <= a->now)
        return ONCE_EFENCED;
    if (a->outcome == ONCE_PUSH_RELEASE) {
        release(r);
        return ONCE_OK;
    }
    if (a->generation != r->delivered + 1)
        return ONCE_ECONFLICT;
    switch (a->outcome) {
    case ONCE_PUSH_DELIVERED:
        r->delivered = a->generation;
        r->attempts = 0;
        r->next_attempt_at = 0;
        r->deliveries++;
        r->last_error[0] = '\0';
        if (a->lease_ms > 0)
            r->lease_until = a->now + a->lease_ms;
        else
            release(r);
        break;
    case ONCE_PUSH_RETRY:
        r->attempts++;
        r->retries++;
        r->failures++;
        r->next_attempt_at = a->next_attempt_at;
        set_error(r, a->error);
        release(r);
        break;
    default: /* ONCE_PUSH_DISABLE */
        r->attempts++;
        r->failures++;
        r->disabled = 1;
        set_error(r, a->error);
        release(r);
        break;
    }
    return ONCE_OK;
}

int once__store_valid_ack(once_store *s, const once_push_ack *a)
{
    int rc = once__store_valid_key(s, a->principal, a->task_id);
    if (rc != ONCE_OK)
        return rc;
    if (!a->config_id || !once_id_valid(a->config_id)) {
        once__store_seterr(s, "push_ack: config_id is not a valid id");
        return ONCE_EINVAL;
    }
    if (!a->owner || !a->owner[0] || strlen(a->owner) > ONCE_OWNER_MAX) {
        once__store_seterr(s, "push_ack: owner must be 1..%d bytes", ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (a->outcome < ONCE_PUSH_DELIVERED || a->outcome > ONCE_PUSH_RELEASE || a->lease_ms < 0) {
        once__store_seterr(s, "push_ack: unknown outcome or negative lease");
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

const char *once__push_rows_flaw(const char *push_json, int64_t generation,
                                 const once_push_row *rows, size_t n)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t nel = 0, i, j;

    if (once__push_elems(push_json, el, &nel) != ONCE_OK)
        return "push_json does not parse";
    if (nel != n)
        return "delivery rows and push_json elements differ in number";
    for (i = 0; i < nel; i++) {
        for (j = 0; j < n && strcmp(rows[j].config_id, el[i].id) != 0; j++)
            ;
        if (j == n)
            return "a push_json element has no delivery row";
        if (rows[j].target != generation || rows[j].delivered > generation)
            return "a delivery row is not aimed at the record's generation";
    }
    return NULL;
}

int once__push_rows_out(once_push_row_list *out, const once_push_row *v, size_t n)
{
    once_push_row_list_clear(out);
    if (n == 0)
        return ONCE_OK;
    out->v = once_calloc(n, sizeof *out->v);
    if (!out->v)
        return ONCE_ENOMEM;
    memcpy(out->v, v, n * sizeof *v);
    out->n = n;
    return ONCE_OK;
}

int once__store_claim_begin(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                            size_t max, once_push_claim_list *out, int *rc)
{
    memset(out, 0, sizeof *out);
    *rc = ONCE_OK;
    if (!owner || !owner[0] || strlen(owner) > ONCE_OWNER_MAX || lease_ms <= 0 ||
        now > INT64_MAX - lease_ms) {
        once__store_seterr(s, "push_claim: owner must be 1..%d bytes, lease_ms > 0",
                           ONCE_OWNER_MAX);
        *rc = ONCE_EINVAL;
        return 1;
    }
    return max == 0;
}
