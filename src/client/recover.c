/*
 * recover.c -- recovery of the outbox after a crash (once_client_recover):
 * pending intents are delivered again (same ID, same body, so the agent
 * replays what it already has); acknowledged ones are polled once with
 * GetTask and become final when their task is. Each goes to its agent's
 * endpoints in turn (endpoints.c), so a replica that died does not hold
 * its intents. The counts of states are read back from the outbox after
 * each intent: what they say is what the outbox holds.
 */
#include <string.h>

#include "client/client_int.h"

static void count(once_recover_stats *st, int rc, const once_call_result *r, once__outbox *o,
                  int64_t seq)
{
    if (r->outcome == ONCE_OUTCOME_EXHAUSTED)
        st->exhausted++;
    else if (rc != ONCE_OK && r->outcome != ONCE_OUTCOME_REFUSED)
        st->errors++;
    once__intent_row now;
    if (once__outbox_load(o, seq, &now) == ONCE_OK) {
        if (now.it.state == ONCE_INTENT_FINAL)
            st->final++;
        else if (now.it.state == ONCE_INTENT_ACKNOWLEDGED)
            st->acknowledged++;
        else if (now.it.state == ONCE_INTENT_REFUSED)
            st->refused++;
        else if (now.it.state == ONCE_INTENT_PENDING)
            st->pending++;
    }
    once__intent_row_clear(&now);
}

/* Handle the intents seqs that are still in state `which`. */
static int recover_state(once_client *c, once_intent_state which, const int64_t *seqs, size_t n,
                         once_recover_fn fn, void *ctx, once_recover_stats *st)
{
    int rc = ONCE_OK;
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
                    once__outbox_refuse(c->outbox, row.it.seq, r.reason, r.state, r.endpoint,
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
    return rc;
}

int once_client_recover(once_client *c, once_recover_fn fn, void *ctx, once_recover_stats *st)
{
    once_recover_stats local;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    /* Both lists as they stand now: an intent re-sent here has its answer
     * and is not polled again, so each is handled (and counted) once. */
    int64_t *pending = NULL, *acked = NULL;
    size_t np = 0, na = 0;
    int rc = once__outbox_seqs(c->outbox, ONCE_INTENT_PENDING, &pending, &np);
    if (rc == ONCE_OK)
        rc = once__outbox_seqs(c->outbox, ONCE_INTENT_ACKNOWLEDGED, &acked, &na);
    if (rc != ONCE_OK)
        once__client_seterr(c, "%s", once__outbox_errmsg(c->outbox));
    if (rc == ONCE_OK)
        rc = recover_state(c, ONCE_INTENT_PENDING, pending, np, fn, ctx, st);
    if (rc == ONCE_OK)
        rc = recover_state(c, ONCE_INTENT_ACKNOWLEDGED, acked, na, fn, ctx, st);
    once_free(pending);
    once_free(acked);
    if (rc == ONCE_OK && once__client_stopped(c))
        rc = ONCE_ECANCELED;
    return rc;
}
