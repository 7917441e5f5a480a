/*
 * wait.c -- waiting for a task (GetTask polled with backoff) and recovery
 * of the outbox after a crash.
 *
 * Polling: the interval doubles from 100 ms to 2 s while nothing changes
 * and drops back to 100 ms on every state change; each interval is jittered
 * in [i/2, i] so many waiters do not poll in lockstep. Each poll is a call
 * under the retry policy, so a flaky link does not end the wait.
 * Recovery: pending intents are delivered again (same ID, same body, so the
 * agent replays what it already has); acknowledged ones are polled once.
 */
#include <string.h>

#include "client/client_int.h"

#define POLL_MIN_MS 100
#define POLL_MAX_MS 2000

static void take(once_call_result *dst, once_call_result *src)
{
    once_call_result_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}

int once_client_wait(once_client *c, const char *agent, const char *task_id, int64_t timeout_ms,
                     once_state_fn on_state, void *ctx, once_call_result *r)
{
    memset(r, 0, sizeof *r);
    int64_t start = once__client_now(c);
    once_state last = ONCE_STATE_UNKNOWN;
    int64_t interval = POLL_MIN_MS;
    unsigned polls = 0;
    for (;;) {
        once_call_result g;
        int rc = once_client_get(c, agent, task_id, &g);
        polls += g.attempts;
        take(r, &g);
        r->attempts = polls;
        r->elapsed_ms = once__client_now(c) - start;
        if (rc != ONCE_OK || r->outcome != ONCE_OUTCOME_OK)
            return rc;
        if (r->state != last) {
            last = r->state;
            interval = POLL_MIN_MS;
            if (on_state != NULL)
                on_state(ctx, task_id, r->state, r->json);
        }
        if (once_state_terminal(r->state) || once_state_interrupted(r->state))
            return ONCE_OK;
        if (timeout_ms > 0 && r->elapsed_ms >= timeout_ms) {
            r->outcome = ONCE_OUTCOME_EXHAUSTED;
            memcpy(r->reason, "WAIT_TIMEOUT", sizeof "WAIT_TIMEOUT");
            once__result_set_error(r, "the task is still %s", once_state_name(r->state));
            return ONCE_ETIMEDOUT;
        }
        uint64_t u = 0;
        rc = once_rng_uniform(c->rng, (uint64_t)(interval / 2) + 1, &u);
        if (rc != ONCE_OK)
            return rc;
        int64_t delay = interval / 2 + (int64_t)u;
        if (timeout_ms > 0 && r->elapsed_ms + delay > timeout_ms)
            delay = timeout_ms - r->elapsed_ms;
        if (once__client_sleep(c, delay) != ONCE_OK) {
            r->outcome = ONCE_OUTCOME_INTERRUPTED;
            return ONCE_ECANCELED;
        }
        interval = interval * 2 > POLL_MAX_MS ? POLL_MAX_MS : interval * 2;
    }
}

static void count(once_recover_stats *st, int rc, const once_call_result *r, once__outbox *o,
                  int64_t seq)
{
    if (rc == ONCE_OK && r->outcome == ONCE_OUTCOME_REFUSED) {
        st->refused++;
        return;
    }
    if (r->outcome == ONCE_OUTCOME_EXHAUSTED) {
        st->exhausted++;
        return;
    }
    if (rc != ONCE_OK) {
        st->errors++;
        return;
    }
    once__intent_row now;
    if (once__outbox_load(o, seq, &now) == ONCE_OK) {
        if (now.it.state == ONCE_INTENT_FINAL)
            st->final++;
        else if (now.it.state == ONCE_INTENT_ACKNOWLEDGED)
            st->acknowledged++;
        else if (now.it.state == ONCE_INTENT_REFUSED)
            st->refused++;
    }
    once__intent_row_clear(&now);
}

static int recover_state(once_client *c, once_intent_state which, once_recover_fn fn, void *ctx,
                         once_recover_stats *st)
{
    int64_t *seqs;
    size_t n;
    int rc = once__outbox_seqs(c->outbox, which, &seqs, &n);
    if (rc != ONCE_OK) {
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
        return rc;
    }
    for (size_t i = 0; i < n && !once__client_stopped(c); i++) {
        once__intent_row row;
        rc = once__outbox_load(c->outbox, seqs[i], &row);
        if (rc == ONCE_ENOTFOUND)
            continue;   /* pruned meanwhile */
        if (rc != ONCE_OK)
            break;
        /* Another process may have handled it since the listing. */
        if (row.it.state == which && (which == ONCE_INTENT_PENDING || row.task_id != NULL)) {
            once_call_result r;
            int crc;
            if (which == ONCE_INTENT_PENDING) {
                st->resent++;
                crc = once__client_deliver(c, &row, &r);
                r.intent = row.it.seq;
            } else {
                st->polled++;
                crc = once_client_get(c, row.agent, row.task_id, &r);
                r.intent = row.it.seq;
                if (crc == ONCE_OK && r.outcome == ONCE_OUTCOME_REFUSED)
                    once__outbox_refuse(c->outbox, row.it.seq, r.reason, r.state,
                                        once__client_now(c));
            }
            count(st, crc, &r, c->outbox, row.it.seq);
            if (fn != NULL)
                fn(ctx, &row.it, crc, &r);
            once_call_result_clear(&r);
            if (crc == ONCE_ENOMEM || crc == ONCE_ESTORE) {
                rc = crc;
                once__intent_row_clear(&row);
                break;
            }
        }
        once__intent_row_clear(&row);
        rc = ONCE_OK;
    }
    once_free(seqs);
    return rc;
}

int once_client_recover(once_client *c, once_recover_fn fn, void *ctx, once_recover_stats *st)
{
    once_recover_stats local;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    int rc = recover_state(c, ONCE_INTENT_PENDING, fn, ctx, st);
    if (rc == ONCE_OK)
        rc = recover_state(c, ONCE_INTENT_ACKNOWLEDGED, fn, ctx, st);
    if (rc == ONCE_OK && once__client_stopped(c))
        rc = ONCE_ECANCELED;
    return rc;
}
