/*
 * valid.c -- the argument checks and integrity-check accounting every store
 * backend shares (declared in store_int.h). Pure functions over the structs;
 * the only side effect is the handle's errmsg / the report.
 *
 * Invariant kept for every backend: nothing reaches storage that check()
 * would later count as a problem, so a problem in a report always means a
 * torn or buggy write, never bad input.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

static int fits(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

int once__store_valid_key(once_store *s, const char *principal, const char *task_id)
{
    if (!principal || !principal[0] || strlen(principal) > ONCE_PRINCIPAL_MAX) {
        once__store_seterr(s, "principal must be 1..%d bytes", ONCE_PRINCIPAL_MAX);
        return ONCE_EINVAL;
    }
    if (!task_id || !task_id[0] || strlen(task_id) > ONCE_ID_MAX) {
        once__store_seterr(s, "task_id must be 1..%d bytes", ONCE_ID_MAX);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

/* Why r may not be stored, or NULL if it may. Shared by the write checks
 * and by check() (bad_state). */
static const char *record_flaw(const once_record *r)
{
    int terminal;

    if (!fits(r->context_id, sizeof r->context_id))
        return "context_id is not NUL-terminated";
    if (!fits(r->lease_owner, sizeof r->lease_owner))
        return "lease_owner is not NUL-terminated";
    if ((int)r->state < ONCE_STATE_SUBMITTED || (int)r->state > ONCE_STATE_REJECTED)
        return "state outside SUBMITTED..REJECTED";
    if ((int)r->kind != ONCE_KIND_TASK && (int)r->kind != ONCE_KIND_MESSAGE)
        return "kind is neither TASK nor MESSAGE";
    terminal = once_state_terminal(r->state);
    if (terminal && r->finished_at <= 0)
        return "terminal state without finished_at";
    if (!terminal && r->finished_at != 0)
        return "finished_at set on a non-terminal state";
    if (r->version < 1)
        return "version < 1";
    if (r->generation < 0 || r->fence < 0 || r->step < 0 || r->lease_until < 0)
        return "negative generation, fence, step or lease_until";
    if (!r->digests)
        return "digests is NULL";
    if (!r->task_json)
        return "task_json is NULL";
    if (r->push_json)
        return once__push_json_flaw(r->push_json, r->generation);
    return NULL;
}

int once__store_valid_record(once_store *s, const once_record *rec)
{
    const char *why;
    int rc;

    if (!fits(rec->principal, sizeof rec->principal) || !fits(rec->task_id, sizeof rec->task_id)) {
        once__store_seterr(s, "record key is not NUL-terminated");
        return ONCE_EINVAL;
    }
    rc = once__store_valid_key(s, rec->principal, rec->task_id);
    if (rc != ONCE_OK)
        return rc;
    why = record_flaw(rec);
    if (why) {
        once__store_seterr(s, "record %s: %s", rec->task_id, why);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

int once__store_valid_events(once_store *s, int64_t base_gen, const once_record *rec,
                             const once_event *ev, size_t nev)
{
    size_t i;

    if (rec->generation < base_gen || (uint64_t)(rec->generation - base_gen) != nev) {
        once__store_seterr(s,
                           "task %s: %zu event(s) cannot take generation %lld to %lld",
                           rec->task_id, nev, (long long)base_gen, (long long)rec->generation);
        return ONCE_EINVAL;
    }
    if (nev && !ev) {
        once__store_seterr(s, "task %s: events array is NULL", rec->task_id);
        return ONCE_EINVAL;
    }
    for (i = 0; i < nev; i++) {
        if (ev[i].generation != base_gen + 1 + (int64_t)i) {
            once__store_seterr(s, "task %s: event %zu has generation %lld, want %lld",
                               rec->task_id, i, (long long)ev[i].generation,
                               (long long)(base_gen + 1 + (int64_t)i));
            return ONCE_EINVAL;
        }
        if (!ev[i].payload) {
            once__store_seterr(s, "task %s: event %lld has no payload", rec->task_id,
                               (long long)ev[i].generation);
            return ONCE_EINVAL;
        }
    }
    return ONCE_OK;
}

int once__store_valid_create(once_store *s, const once_record *rec, const once_event *ev,
                             size_t nev)
{
    int rc = once__store_valid_record(s, rec);

    if (rc != ONCE_OK)
        return rc;
    if (rec->version != 1) {
        once__store_seterr(s, "create of %s: version must be 1", rec->task_id);
        return ONCE_EINVAL;
    }
    return once__store_valid_events(s, 0, rec, ev, nev);
}

int once__store_valid_update(once_store *s, const once_record *rec, int64_t expect_version,
                             const once_event *ev, size_t nev)
{
    int rc = once__store_valid_record(s, rec);

    if (rc != ONCE_OK)
        return rc;
    if (expect_version < 1 || rec->version != expect_version + 1) {
        once__store_seterr(s, "update of %s: version %lld is not expect_version %lld + 1",
                           rec->task_id, (long long)rec->version, (long long)expect_version);
        return ONCE_EINVAL;
    }
    /* The events must at least agree with rec->generation; whether they
     * continue the stored history is known only under the backend's lock. */
    if ((uint64_t)rec->generation < nev) {
        once__store_seterr(s, "update of %s: %zu events exceed generation %lld", rec->task_id,
                           nev, (long long)rec->generation);
        return ONCE_EINVAL;
    }
    return once__store_valid_events(s, rec->generation - (int64_t)nev, rec, ev, nev);
}

int once__store_valid_query(once_store *s, const once_list_query *q)
{
    int rc;

    if (!q->principal || !q->principal[0] || strlen(q->principal) > ONCE_PRINCIPAL_MAX) {
        once__store_seterr(s, "list: principal must be 1..%d bytes", ONCE_PRINCIPAL_MAX);
        return ONCE_EINVAL;
    }
    if (q->context_id && strlen(q->context_id) > ONCE_ID_MAX) {
        once__store_seterr(s, "list: context_id longer than %d bytes", ONCE_ID_MAX);
        return ONCE_EINVAL;
    }
    if ((int)q->state < ONCE_STATE_UNKNOWN || (int)q->state > ONCE_STATE_REJECTED) {
        once__store_seterr(s, "list: state outside the enum");
        return ONCE_EINVAL;
    }
    if (q->limit < 1 || q->limit > ONCE_LIST_MAX) {
        once__store_seterr(s, "list: limit must be 1..%d", ONCE_LIST_MAX);
        return ONCE_EINVAL;
    }
    if (q->after_task_id) {
        rc = once__store_valid_key(s, q->principal, q->after_task_id);
        if (rc != ONCE_OK)
            return rc;
    }
    return ONCE_OK;
}

int once__store_valid_renew(once_store *s, const char *principal, const char *task_id,
                            const char *owner, int64_t fence, int64_t until)
{
    int rc = once__store_valid_key(s, principal, task_id);

    if (rc != ONCE_OK)
        return rc;
    if (!owner || !owner[0] || strlen(owner) > ONCE_OWNER_MAX) {
        once__store_seterr(s, "renew of %s: owner must be 1..%d bytes", task_id, ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (fence < 0 || until <= 0) {
        once__store_seterr(s, "renew of %s: fence must be >= 0 and until > 0", task_id);
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

int once__store_renew_result(once_store *s, const char *task_id, int renewed, int live)
{
    if (renewed)
        return ONCE_OK;
    once__store_seterr(s, "renew of %s: %s", task_id,
                       live ? "fence, owner or state moved (lease lost)" : "no live record");
    return live ? ONCE_EFENCED : ONCE_ENOTFOUND;
}

void once__check_problem(once_check_report *rep, const char *fmt, ...)
{
    va_list ap;

    if (rep->first_problem[0])
        return;
    va_start(ap, fmt);
    vsnprintf(rep->first_problem, sizeof rep->first_problem, fmt, ap);
    va_end(ap);
}

void once__check_record(once_check_report *rep, const once_record *r, size_t nev,
                        int64_t last_gen, int gapless)
{
    const char *why = record_flaw(r);

    rep->records++;
    rep->events += nev;
    if (why) {
        rep->bad_state++;
        once__check_problem(rep, "%s/%s: %s", r->principal, r->task_id, why);
    }
    if (last_gen != r->generation) {
        rep->bad_generation++;
        once__check_problem(rep, "%s/%s: generation %lld but last event %lld", r->principal,
                            r->task_id, (long long)r->generation, (long long)last_gen);
    }
    if (!gapless) {
        rep->event_gaps++;
        once__check_problem(rep, "%s/%s: %zu events not numbered 1..%zu", r->principal,
                            r->task_id, nev, nev);
    }
}

void once__check_tombstone(once_check_report *rep, const once_tombstone *t, size_t nev)
{
    rep->tombstones++;
    if (nev)
        once__check_orphans(rep, t->principal, t->task_id, nev);
}

void once__check_orphans(once_check_report *rep, const char *principal, const char *task_id,
                         size_t nev)
{
    rep->events += nev;
    rep->orphan_events += nev;
    once__check_problem(rep, "%s/%s: %zu event(s) without a record", principal, task_id, nev);
}
