/*
 * redis_push.c -- push delivery rows in the Redis backend (store.h, "Push
 * delivery"): how a row is laid out, reading rows back, what a record write
 * sends to store them, an ack's compare-and-set arguments, and the rows'
 * part of the integrity check. The slots (claim, ack, rows) are in
 * redis_push_ops.c.
 *
 * Keys (redis.c has the whole layout):
 *   P:{<len>:<principal>:<task_id>}:push   hash: the task's delivery rows
 *   P:pushq   zset: the rows that may become due, by the time they do
 * A row is 12 fields of the push hash named "<config_id>\0<f>" (config ids
 * hold no NUL), so a Lua script reads and writes single fields of a row
 * without parsing anything:
 *   s since  d delivered  t target  a attempts  na next_attempt_at
 *   o lease_owner  u lease_until  x disabled (0|1)  e last_error
 *   nd deliveries  nr retries  nf failures
 * Numbers are written with %lld, so a value read back compares equal as a
 * string to the value the same row would be written with. pushq holds
 * "<principal>\0<task_id>\0<config_id>" exactly while the row is enabled
 * and behind its target, scored max(next_attempt_at, lease_until): a row is
 * due at `now` iff it is in pushq with a score <= now. The claim therefore
 * takes rows in the order they became due (for a row never leased, or
 * whose lease was given back, that is next_attempt_at; a row whose holder
 * vanished follows when its lease ran out).
 *
 * What a change means is decided by push_rows.c. Ownership of the fields
 * (redis_scripts.c) keeps writers from undoing each other without locks: a
 * record write reads the rows, lets once__push_sync reshape them and sends
 * only what the contract says a record change changes (a kept row: its
 * target; a reset row: everything but its counters; a new row: all; a
 * dropped row: gone), checked by the record's version. A claim leases one
 * row with a script that tests "due" itself. An ack reads the row, lets
 * once__push_apply_ack compute the result and writes it as a
 * compare-and-set of the progress fields (all but since and target): if a
 * claim, a reset or a sweep got there first, it reads again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

#define NF 12 /* fields per row */
static const char *const fnames[NF] = {"s", "d", "t", "a",  "na", "o",
                                       "u", "x", "e", "nd", "nr", "nf"};
enum { F_S, F_D, F_T, F_A, F_NA, F_O, F_U, F_X, F_E, F_ND, F_NR, F_NF };

/* Where numeric field f of r lives; NULL for o, e (text) and x (an int). */
static int64_t *num_at(once_push_row *r, int f)
{
    int64_t *const at[NF] = {
        [F_S] = &r->since,       [F_D] = &r->delivered,        [F_T] = &r->target,
        [F_A] = &r->attempts,    [F_NA] = &r->next_attempt_at, [F_U] = &r->lease_until,
        [F_ND] = &r->deliveries, [F_NR] = &r->retries,         [F_NF] = &r->failures};
    return at[f];
}

#define FIELD_MAX (ONCE_ID_MAX + 4)
/* The row's pushq score, or 0 when it must not be indexed (store.h's "due"
 * without the clock: enabled and behind its target). */
static int due_from(const once_push_row *r, int64_t *at)
{
    if (r->disabled || r->delivered >= r->target)
        return 0;
    *at = r->next_attempt_at > r->lease_until ? r->next_attempt_at : r->lease_until;
    return 1;
}

/* Field sets. */
#define ALL_FIELDS ((1u << NF) - 1)
#define COUNTERS ((1u << F_ND) | (1u << F_NR) | (1u << F_NF))
#define PROGRESS (ALL_FIELDS & ~((1u << F_S) | (1u << F_T))) /* what claims and acks own */

/* Field f of row r as stored: its name into name (returns its length) and
 * its value into num (numbers) or *val (text). */
static size_t field_of(once_push_row *r, int f, char name[FIELD_MAX], char num[24],
                       const char **val)
{
    size_t idl = strlen(r->config_id), fl = strlen(fnames[f]);
    int64_t *at = num_at(r, f);

    memcpy(name, r->config_id, idl);
    name[idl] = '\0';
    memcpy(name + idl + 1, fnames[f], fl);
    if (f == F_O) {
        *val = r->lease_owner;
    } else if (f == F_E) {
        *val = r->last_error;
    } else {
        int64_t x = at ? *at : (int64_t)(r->disabled != 0);
        snprintf(num, 24, "%lld", (long long)x);
        *val = num;
    }
    return idl + 1 + fl;
}

/* Storage for one row's arguments (must outlive the command). */
typedef struct row_args {
    char names[NF][FIELD_MAX];
    char nums[NF][24];
} row_args;

/* HSET field/value arguments for the fields of r in mask; their count. */
static int row_append(rd_cmd *c, row_args *ra, once_push_row *r, unsigned mask)
{
    int f, n = 0;

    for (f = 0; f < NF; f++) {
        const char *val;
        size_t nl;
        if (!(mask & (1u << f)))
            continue;
        nl = field_of(r, f, ra->names[f], ra->nums[f], &val);
        once__rd_arg(c, ra->names[f], nl);
        once__rd_str(c, val);
        n += 2;
    }
    return n;
}

/* ------------------------------------------------------------------------
 * Reading rows back.
 */

/* Set field f of row r from value v. */
static int put_field(once_push_row *r, int f, const redisReply *v)
{
    int64_t x = 0, *at;

    if (f == F_O)
        return once__rd_fixed(v, r->lease_owner, sizeof r->lease_owner);
    if (f == F_E)
        return once__rd_fixed(v, r->last_error, sizeof r->last_error);
    if (once__rd_num(v, &x))
        return -1;
    if (f == F_X)
        r->disabled = x != 0;
    else if ((at = num_at(r, f)) != NULL)
        *at = x;
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const once_push_row *)a)->config_id, ((const once_push_row *)b)->config_id);
}

/* A push hash (HGETALL reply) into rows v[0..*n) sorted by config id.
 * ONCE_ECORRUPT when a row lacks a field, a value is malformed, or there are
 * more rows than a push_json may hold. */
static int parse_rows(const redisReply *h, once_push_row v[ONCE_PUSH_CONFIGS_MAX], size_t *n)
{
    unsigned have[ONCE_PUSH_CONFIGS_MAX] = {0};
    size_t i, j;
    int f;

    *n = 0;
    if (h->type != REDIS_REPLY_ARRAY || h->elements % 2)
        return ONCE_ECORRUPT;
    for (i = 0; i < h->elements; i += 2) {
        const redisReply *k = h->element[i], *val = h->element[i + 1];
        const char *nul;
        size_t idl;

        if (k->type != REDIS_REPLY_STRING)
            return ONCE_ECORRUPT;
        nul = memchr(k->str, '\0', k->len);
        idl = nul ? (size_t)(nul - k->str) : 0;
        if (!nul || idl == 0 || idl > ONCE_ID_MAX)
            return ONCE_ECORRUPT;
        for (f = 0; f < NF; f++)
            if (strlen(fnames[f]) == k->len - idl - 1 &&
                memcmp(fnames[f], nul + 1, k->len - idl - 1) == 0)
                break;
        if (f == NF)
            continue; /* a field a later version added */
        for (j = 0; j < *n; j++)
            if (strlen(v[j].config_id) == idl && memcmp(v[j].config_id, k->str, idl) == 0)
                break;
        if (j == *n) {
            if (*n == ONCE_PUSH_CONFIGS_MAX)
                return ONCE_ECORRUPT;
            memset(&v[j], 0, sizeof v[j]);
            memcpy(v[j].config_id, k->str, idl);
            (*n)++;
        }
        if (put_field(&v[j], f, val))
            return ONCE_ECORRUPT;
        have[j] |= 1u << f;
    }
    for (j = 0; j < *n; j++)
        if (have[j] != (1u << NF) - 1)
            return ONCE_ECORRUPT;
    if (*n > 1)
        qsort(v, *n, sizeof *v, cmp_row);
    return ONCE_OK;
}

int once__rd_push_read(rd_store *s, rd_conn *c, const char *principal, const char *task_id,
                       once_push_row v[ONCE_PUSH_CONFIGS_MAX], size_t *n)
{
    char *key = once__rd_key_push(s, principal, task_id);
    redisReply *r;
    int rc;

    *n = 0;
    rc = once__rd_call_key(s, c, "HGETALL", key, &r);
    once_free(key);
    if (rc != ONCE_OK)
        return rc;
    rc = parse_rows(r, v, n);
    freeReplyObject(r);
    if (rc == ONCE_ECORRUPT)
        once__store_seterr(&s->base, "redis: delivery rows of %s/%s are malformed", principal,
                           task_id);
    return rc;
}

/* ------------------------------------------------------------------------
 * Record writes: the rows they leave, as script arguments.
 */

enum { ROW_KEPT, ROW_RESET, ROW_NEW };

struct rd_push_write {
    int drop_all; /* the record has no push_json: every row goes */
    size_t nrows;
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    int kind[ONCE_PUSH_CONFIGS_MAX];
    row_args args[ONCE_PUSH_CONFIGS_MAX];
    size_t ndrop;
    const char *drop[ONCE_PUSH_CONFIGS_MAX]; /* into old[] */
    once_push_row old[ONCE_PUSH_CONFIGS_MAX];
};

rd_push_write *once__rd_push_write_new(void)
{
    return once_calloc(1, sizeof(rd_push_write));
}

void once__rd_push_write_free(rd_push_write *w)
{
    once_free(w);
}

/* What the contract says a record write changes in a row of each kind. */
static unsigned kind_mask(int kind)
{
    return kind == ROW_KEPT ? 1u << F_T : kind == ROW_RESET ? ALL_FIELDS & ~COUNTERS : ALL_FIELDS;
}

int once__rd_push_prepare(rd_push_write *w, const once_record *rec, const once_push_row *old,
                          size_t nold)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, i, j;
    int rc;

    w->drop_all = !rec->push_json;
    w->nrows = w->ndrop = 0;
    if (w->drop_all)
        return ONCE_OK;
    rc = once__push_elems(rec->push_json, el, &n);
    if (rc != ONCE_OK)
        return rc;
    if (nold)
        memcpy(w->old, old, nold * sizeof *old);
    once__push_sync(old, nold, el, n, rec->generation, w->rows);
    w->nrows = n;
    for (i = 0; i < n; i++) {
        for (j = 0; j < nold && strcmp(old[j].config_id, el[i].id) != 0; j++)
            ;
        w->kind[i] = j == nold ? ROW_NEW : old[j].since != el[i].since ? ROW_RESET : ROW_KEPT;
    }
    for (j = 0; j < nold; j++) {
        for (i = 0; i < n && strcmp(old[j].config_id, el[i].id) != 0; i++)
            ;
        if (i == n)
            w->drop[w->ndrop++] = w->old[j].config_id;
    }
    return ONCE_OK;
}

void once__rd_push_section(rd_cmd *c, rd_push_write *w)
{
    size_t i;
    int np = 0;

    if (!w || w->drop_all) {
        once__rd_str(c, "-");
        return;
    }
    for (i = 0; i < w->nrows; i++)
        np += 2 * __builtin_popcount(kind_mask(w->kind[i]));
    once__rd_i64(c, np);
    once__rd_i64(c, (int64_t)w->ndrop);
    once__rd_i64(c, (int64_t)w->nrows);
    for (i = 0; i < w->nrows; i++)
        row_append(c, &w->args[i], &w->rows[i], kind_mask(w->kind[i]));
    for (i = 0; i < w->ndrop; i++)
        once__rd_str(c, w->drop[i]);
    for (i = 0; i < w->nrows; i++)
        once__rd_str(c, w->rows[i].config_id);
}

/* ------------------------------------------------------------------------
 * An ack's compare-and-set (RD_PUSH_PUT): the progress fields as read and
 * as to be written.
 */

struct rd_push_cas {
    row_args was, now;
};

rd_push_cas *once__rd_push_cas_new(void)
{
    return once_malloc(sizeof(rd_push_cas));
}

void once__rd_push_cas_free(rd_push_cas *ca)
{
    once_free(ca);
}

void once__rd_push_cas_args(rd_cmd *c, rd_push_cas *ca, once_push_row *was, once_push_row *now)
{
    int f;

    once__rd_i64(c, __builtin_popcount(PROGRESS));
    for (f = 0; f < NF; f++) {
        const char *v0, *v1;
        size_t nl;
        if (!(PROGRESS & (1u << f)))
            continue;
        nl = field_of(was, f, ca->was.names[f], ca->was.nums[f], &v0);
        field_of(now, f, ca->now.names[f], ca->now.nums[f], &v1);
        once__rd_arg(c, ca->was.names[f], nl);
        once__rd_str(c, v0);
        once__rd_str(c, v1);
    }
}

/* ------------------------------------------------------------------------
 * Integrity.
 */

static void bad_push(once_check_report *rep, const once_key *k, const char *why)
{
    rep->bad_push++;
    once__check_problem(rep, "%s/%s: %s", k->principal, k->task_id, why);
}

/* The pushq score reported for config id (scores: id, score pairs). */
static const redisReply *score_of(const redisReply *scores, const char *id)
{
    size_t i;

    for (i = 0; i + 1 < scores->elements; i += 2) {
        const redisReply *k = scores->element[i];
        if (k->type == REDIS_REPLY_STRING && k->len == strlen(id) &&
            memcmp(k->str, id, k->len) == 0)
            return scores->element[i + 1];
    }
    return NULL;
}

void once__rd_check_push(once_check_report *rep, const once_key *k, const once_record *rec,
                         const redisReply *hash, const redisReply *scores)
{
    once_push_row rows[ONCE_PUSH_CONFIGS_MAX];
    const char *why;
    size_t n, i;

    if (parse_rows(hash, rows, &n) != ONCE_OK || scores->type != REDIS_REPLY_ARRAY) {
        bad_push(rep, k, "delivery rows are malformed");
        return;
    }
    if (!rec) {
        if (n)
            bad_push(rep, k, "a tombstone keeps delivery rows");
        return;
    }
    why = once__push_rows_flaw(rec->push_json, rec->generation, rows, n);
    if (why) {
        bad_push(rep, k, why);
        return;
    }
    /* A due-able row missing from pushq would never be delivered. */
    for (i = 0; i < n; i++) {
        const redisReply *sc = score_of(scores, rows[i].config_id);
        int64_t at = 0, got = 0;
        int want = due_from(&rows[i], &at);
        int has = sc && sc->type == REDIS_REPLY_STRING && sc->len > 0;
        if (has) {
            char buf[64];
            memcpy(buf, sc->str, sc->len < sizeof buf ? sc->len : sizeof buf - 1);
            buf[sc->len < sizeof buf ? sc->len : sizeof buf - 1] = '\0';
            got = (int64_t)strtod(buf, NULL);
        }
        if (want != has || (want && got != at)) {
            bad_push(rep, k, "push due index out of step");
            return;
        }
    }
}
