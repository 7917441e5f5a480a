/*
 * journal.c -- the task's journal: the timeline facts its events do not
 * carry, kept in once_record.journal so that the inspector shows them from
 * the store on any replica (docs/wire.md, "The task inspector").
 *
 * The journal is one compact JSON object:
 *   {"v":1,"entries":[...],"dropped":N,
 *    "replays":{"n":N,"last":T},"refused":{"<REASON>":{"n":N,"last":T},...}}
 * entries (oldest first, at most JOURNAL_ENTRIES; older ones only counted in
 * "dropped"):
 *   {"kind":"turn","at":T,"replica":R,"fence":F,"step":S,"resumed":B
 *    [,"end":T,"result":"<state>"]}
 *   {"kind":"takeover","at":T,"from":R,"to":R,"fence":F,"newFence":F}
 *   {"kind":"fenced","at":T,"replica":R,"fence":F,"storedFence":F,"what":W}
 *   (W: "write", a turn's output, or "lease", its lease renewal)
 *   {"kind":"delivery","at":T,"config":C,"generation":G,"status":S,"result":R}
 *   (a webhook attempt: R "delivered", "retry" or "disabled"; S the HTTP
 *   status, 0 when none came)
 *
 * What costs no write of its own: a turn's start and end ride in the turn's
 * own writes (work.c), a takeover in the takeover's write (sweep.c). What
 * must cost none: a replay writes nothing and a refusal writes nothing, so
 * they are counted here, in memory, per task, together with a stale
 * worker's refused write (it may not write, by definition) and the
 * webhook attempts (the newest DELIVERIES_MAX per flush), and the
 * sweeper's pass flushes the counts as one journal-only update per task: a
 * CAS on the version with no event, no generation, fence or state change.
 * A task whose turn holds a live lease keeps its counts until the lease
 * ends (lease_live: a renewal does not move the version, so a journal-only
 * update could undo one).
 * At most PENDING_MAX tasks' counts are held; past that the oldest are
 * dropped (stats.journal_dropped counts them). A crash loses what was not
 * flushed yet: these are the inspector's numbers, not the task's outcome.
 *
 * Locking: the pending table has its own mutex (j->mu): the send path takes
 * it once per replay or refusal, never with e->mu held.
 */
#include <string.h>

#include "core/jcs.h"
#include "core/list.h"
#include "core/str.h"
#include "engine/engine_int.h"

#define JOURNAL_ENTRIES 64
#define PENDING_MAX 1024
#define PENDING_BUCKETS 256
#define FENCED_MAX 4
#define DELIVERIES_MAX 8
#define FLUSH_TRIES 8

/* The refusals counted per reason, in their wire names (h_send.c). */
static const char *const refusal_names[] = {"MESSAGE_ID_REUSED", "TASK_NOT_ACCEPTING_INPUT",
                                            "TASK_TERMINAL"};
#define NREASONS (sizeof refusal_names / sizeof refusal_names[0])

typedef struct counter {
    int64_t n, last;
} counter;

typedef struct fenced_note {
    int64_t at, fence, stored_fence;
    int lease; /* a lease renewal, not a write of output */
} fenced_note;

/* One webhook delivery attempt: its event, the receiver's HTTP status (0:
 * no answer) and what came of it ("delivered", "retry", "disabled"). */
typedef struct delivery_note {
    int64_t at, generation;
    int status;
    const char *result; /* a literal */
    char config[ONCE_ID_MAX + 1];
} delivery_note;

/* One task's counts since the last flush. */
typedef struct pending {
    once__link age;                   /* first: the age list's link is the entry */
    struct pending *hnext;            /* hash chain */
    char principal[ONCE_PRINCIPAL_MAX + 1];
    char task_id[ONCE_ID_MAX + 1];
    counter replays;
    counter refused[NREASONS];
    fenced_note fenced[FENCED_MAX];
    size_t nfenced;
    delivery_note deliv[DELIVERIES_MAX];
    size_t ndeliv;
    int64_t not_before;               /* engine ms: no load of its task before (its
                                       * lease ran until then; a write of the task
                                       * seen here clears it: once__journal_touch) */
} pending;

struct once__journal {
    pthread_mutex_t mu;
    pending *bucket[PENDING_BUCKETS];
    once__list age;                   /* the oldest is dropped first */
    size_t n;
};

/* ------------------------------------------------------------------------
 * The JSON object.
 */

/* rec's journal parsed, or a fresh one (also when the stored text does not
 * parse: the journal is the inspector's, never a reason to fail a write). */
static json_t *journal_open(const char *text)
{
    json_t *j = text != NULL ? once__json_parse(text) : NULL;
    if (j == NULL)
        j = json_pack("{s:i}", "v", 1);
    if (j != NULL && !json_is_array(json_object_get(j, "entries")))
        json_object_set_new(j, "entries", json_array());
    return j;
}

static void bump_dropped(json_t *j, int64_t n)
{
    json_int_t d = json_integer_value(json_object_get(j, "dropped"));
    json_object_set_new(j, "dropped", json_integer(d + n));
}

/* Drop the oldest entries until at most JOURNAL_ENTRIES remain. */
static void trim_entries(json_t *j)
{
    json_t *ent = json_object_get(j, "entries");
    size_t n = json_array_size(ent);
    if (n <= JOURNAL_ENTRIES)
        return;
    for (size_t i = JOURNAL_ENTRIES; i < n; i++)
        json_array_remove(ent, 0);
    bump_dropped(j, (int64_t)(n - JOURNAL_ENTRIES));
}

/* member name of x as a string, "" when absent. */
static const char *str_of(const json_t *x, const char *name)
{
    const char *s = json_string_value(json_object_get(x, name));
    return s != NULL ? s : "";
}

/* j as text within ONCE_JOURNAL_MAX, dropping the oldest entries while it is
 * longer; the text replaces *out. */
static int journal_close(json_t *j, char **out)
{
    trim_entries(j);
    for (;;) {
        char *text = once__json_text(j);
        if (text == NULL)
            return ONCE_ENOMEM;
        json_t *ent = json_object_get(j, "entries");
        if (strlen(text) <= ONCE_JOURNAL_MAX || json_array_size(ent) == 0) {
            once_free(*out);
            *out = text;
            return ONCE_OK;
        }
        once_free(text);
        json_array_remove(ent, 0);
        bump_dropped(j, 1);
    }
}

/* Append entry (a new reference, may be NULL: no memory) to next->journal. */
static int journal_append(once_record *next, json_t *entry)
{
    json_t *j = entry != NULL ? journal_open(next->journal) : NULL;
    int rc = ONCE_ENOMEM;
    if (j != NULL && json_array_append(json_object_get(j, "entries"), entry) == 0)
        rc = journal_close(j, &next->journal);
    json_decref(entry);
    json_decref(j);
    return rc;
}

int once__journal_takeover(once__engine *e, const once_record *cur, once_record *next)
{
    return journal_append(next, json_pack("{s:s,s:I,s:s,s:s,s:I,s:I}", "kind", "takeover", "at",
                                          (json_int_t)once__now(e), "from", cur->lease_owner,
                                          "to", next->lease_owner, "fence",
                                          (json_int_t)cur->fence, "newFence",
                                          (json_int_t)next->fence));
}

/* The last "turn" entry of replica under fence, or NULL. */
static json_t *turn_entry(json_t *j, const char *replica, int64_t fence)
{
    json_t *ent = json_object_get(j, "entries");
    for (size_t i = json_array_size(ent); i-- > 0;) {
        json_t *x = json_array_get(ent, i);
        if (strcmp(str_of(x, "kind"), "turn") == 0 &&
            json_integer_value(json_object_get(x, "fence")) == fence &&
            strcmp(str_of(x, "replica"), replica) == 0)
            return x;
    }
    return NULL;
}

/* The first journal of a task, written as text: the common case (a new
 * task's first turn) builds and serialises no tree, since every write of
 * a turn is on the new-task path. The same object journal_close writes. */
static int turn_first(once__engine *e, int64_t fence, int resumed, int64_t began, int ends,
                      const once_record *cur, once_record *next)
{
    once__text t = ONCE__TEXT_INIT;
    ONCE__TEXT_LIT(&t, "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":");
    once__text_int(&t, began);
    ONCE__TEXT_LIT(&t, ",\"replica\":\"");
    once__text_str(&t, e->replica_id);
    ONCE__TEXT_LIT(&t, "\",\"fence\":");
    once__text_int(&t, fence);
    ONCE__TEXT_LIT(&t, ",\"step\":");
    once__text_int(&t, cur->step);
    if (resumed)
        ONCE__TEXT_LIT(&t, ",\"resumed\":true");
    else
        ONCE__TEXT_LIT(&t, ",\"resumed\":false");
    if (ends) {
        ONCE__TEXT_LIT(&t, ",\"end\":");
        once__text_int(&t, once__now(e));
        once__text_strs(&t, ",\"result\":\"", once_state_name(next->state), "\"", NULL);
    }
    ONCE__TEXT_LIT(&t, "}]}");
    next->journal = once__text_done(&t, NULL);
    return next->journal != NULL ? ONCE_OK : ONCE_ENOMEM;
}

int once__journal_turn(once__engine *e, int64_t fence, int resumed, int64_t began,
                       int started, const once_record *cur, once_record *next)
{
    int ends = once_state_terminal(next->state) || once_state_interrupted(next->state);
    if (started && !ends)
        return ONCE_OK;
    if (next->journal == NULL && !started && once__plain_id(e->replica_id))
        return turn_first(e, fence, resumed, began, ends, cur, next);
    json_t *j = journal_open(next->journal);
    if (j == NULL)
        return ONCE_ENOMEM;
    json_t *turn = started ? turn_entry(j, e->replica_id, fence) : NULL;
    if (turn == NULL) {
        turn = json_pack("{s:s,s:I,s:s,s:I,s:I,s:b}", "kind", "turn", "at", (json_int_t)began,
                         "replica", e->replica_id, "fence", (json_int_t)fence, "step",
                         (json_int_t)cur->step, "resumed", resumed);
        if (turn == NULL || json_array_append_new(json_object_get(j, "entries"), turn) != 0) {
            json_decref(j);
            return ONCE_ENOMEM;
        }
    }
    if (ends) {
        json_object_set_new(turn, "end", json_integer(once__now(e)));
        json_object_set_new(turn, "result", json_string(once_state_name(next->state)));
    }
    int rc = journal_close(j, &next->journal);
    json_decref(j);
    return rc;
}

static void add_counter(json_t *obj, const char *name, const counter *c)
{
    json_t *x = json_object_get(obj, name);
    int64_t n = json_integer_value(json_object_get(x, "n"));
    int64_t last = json_integer_value(json_object_get(x, "last"));
    json_object_set_new(obj, name, json_pack("{s:I,s:I}", "n", (json_int_t)(n + c->n), "last",
                                             (json_int_t)(c->last > last ? c->last : last)));
}

/* p's counts and notes merged into next->journal. */
static int journal_merge(once__engine *e, const pending *p, once_record *next)
{
    json_t *j = journal_open(next->journal);
    if (j == NULL)
        return ONCE_ENOMEM;
    if (p->replays.n > 0)
        add_counter(j, "replays", &p->replays);
    for (size_t i = 0; i < NREASONS; i++) {
        if (p->refused[i].n == 0)
            continue;
        if (!json_is_object(json_object_get(j, "refused")))
            json_object_set_new(j, "refused", json_object());
        add_counter(json_object_get(j, "refused"), refusal_names[i], &p->refused[i]);
    }
    json_t *ent = json_object_get(j, "entries");
    for (size_t i = 0; i < p->nfenced; i++)
        json_array_append_new(
            ent, json_pack("{s:s,s:I,s:s,s:I,s:I,s:s}", "kind", "fenced", "at",
                           (json_int_t)p->fenced[i].at, "replica", e->replica_id, "fence",
                           (json_int_t)p->fenced[i].fence, "storedFence",
                           (json_int_t)p->fenced[i].stored_fence, "what",
                           p->fenced[i].lease ? "lease" : "write"));
    for (size_t i = 0; i < p->ndeliv; i++)
        json_array_append_new(
            ent, json_pack("{s:s,s:I,s:s,s:I,s:i,s:s}", "kind", "delivery", "at",
                           (json_int_t)p->deliv[i].at, "config", p->deliv[i].config,
                           "generation", (json_int_t)p->deliv[i].generation, "status",
                           p->deliv[i].status, "result", p->deliv[i].result));
    int rc = journal_close(j, &next->journal);
    json_decref(j);
    return rc;
}

/* ------------------------------------------------------------------------
 * The pending table.
 */

static struct once__journal *table(once__engine *e)
{
    struct once__journal *j = __atomic_load_n(&e->journal, __ATOMIC_ACQUIRE);
    if (j != NULL)
        return j;
    j = once_calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    if (pthread_mutex_init(&j->mu, NULL) != 0) {
        once_free(j);
        return NULL;
    }
    struct once__journal *none = NULL;
    if (!__atomic_compare_exchange_n(&e->journal, &none, j, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        pthread_mutex_destroy(&j->mu);
        once_free(j);
        return none;   /* another thread made it first */
    }
    return j;
}

static unsigned key_hash(const char *principal, const char *task_id)
{
    uint32_t h = 2166136261u;
    for (const char *s = principal; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (const char *s = task_id; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % PENDING_BUCKETS;
}

static pending *oldest(struct once__journal *j)
{
    return (pending *)j->age.head; /* NULL when empty; age is the first member */
}

/* Unlink p from its chain and the age list (under j->mu). */
static void unlink_pending(struct once__journal *j, pending *p)
{
    pending **pp = &j->bucket[key_hash(p->principal, p->task_id)];
    while (*pp != p)
        pp = &(*pp)->hnext;
    *pp = p->hnext;
    once__list_unlink(&j->age, &p->age);
    __atomic_fetch_sub(&j->n, 1, __ATOMIC_RELAXED);   /* touch reads it unlocked */
}

/* The key's entry, made (and the oldest dropped at the bound) if it has
 * none; NULL out of memory. Under j->mu. */
static pending *pending_get(once__engine *e, struct once__journal *j, const char *principal,
                            const char *task_id)
{
    unsigned h = key_hash(principal, task_id);
    for (pending *p = j->bucket[h]; p != NULL; p = p->hnext)
        if (strcmp(p->task_id, task_id) == 0 && strcmp(p->principal, principal) == 0)
            return p;
    if (j->n >= PENDING_MAX) {
        pending *old = oldest(j);
        unlink_pending(j, old);
        once_free(old);
        ONCE__STAT(e, journal_dropped);
    }
    pending *p = once_calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    once__strlcpy(p->principal, principal, sizeof p->principal);
    once__strlcpy(p->task_id, task_id, sizeof p->task_id);
    p->hnext = j->bucket[h];
    j->bucket[h] = p;
    once__list_append(&j->age, &p->age);
    __atomic_fetch_add(&j->n, 1, __ATOMIC_RELAXED);
    return p;
}

static void count(counter *c, int64_t now)
{
    c->n++;
    c->last = now;
}

/* Add the counts of `older` (taken from the table earlier) to c. */
static void count_merge(counter *c, const counter *older)
{
    c->n += older->n;
    if (older->last > c->last)
        c->last = older->last;
}

/* Append one note (size bytes) after v[0..*n); when v already holds max
 * the oldest goes: a task keeps its newest notes of each kind. */
static void keep_newest(void *v, size_t *n, size_t max, size_t size, const void *note)
{
    if (*n == max) {
        memmove(v, (char *)v + size, (max - 1) * size);
        (*n)--;
    }
    memcpy((char *)v + *n * size, note, size);
    (*n)++;
}

/* Run add(p, now, arg) on the task's entry under j->mu. The journal keeps
 * counts for the inspector, not the task's outcome: a note for which there
 * is no memory (table or entry) is not taken. */
static void note(once__engine *e, const char *principal, const char *task_id,
                 void (*add)(pending *p, int64_t now, const void *arg), const void *arg)
{
    struct once__journal *j = table(e);
    if (j == NULL)
        return;
    int64_t now = once__now(e);
    pthread_mutex_lock(&j->mu);
    pending *p = pending_get(e, j, principal, task_id);
    if (p != NULL)
        add(p, now, arg);
    pthread_mutex_unlock(&j->mu);
}

/* arg: the refusal reason's index, NREASONS for a replay. */
static void add_send(pending *p, int64_t now, const void *arg)
{
    size_t reason = *(const size_t *)arg;
    count(reason == NREASONS ? &p->replays : &p->refused[reason], now);
}

void once__journal_send(once__engine *e, const once_record *rec, once_verdict v, int replayed)
{
    size_t reason = NREASONS;
    if (v == ONCE_V_IDEMPOTENCY_CONFLICT)
        reason = 0;
    else if (v == ONCE_V_REJECT_BUSY)
        reason = 1;
    else if (v == ONCE_V_REJECT_TERMINAL)
        reason = 2;
    if (replayed)
        reason = NREASONS;
    else if (reason == NREASONS)
        return;   /* a write of its own records what it did, if anything */
    note(e, rec->principal, rec->task_id, add_send, &reason);
}

/* arg: the fenced_note, stamped here. */
static void add_fenced(pending *p, int64_t now, const void *arg)
{
    fenced_note n = *(const fenced_note *)arg;
    n.at = now;
    keep_newest(p->fenced, &p->nfenced, FENCED_MAX, sizeof n, &n);
}

void once__journal_fenced(once__engine *e, const once_record *stored, int64_t fence, int lease)
{
    const fenced_note n = {0, fence, stored->fence, lease};
    note(e, stored->principal, stored->task_id, add_fenced, &n);
}

/* arg: the delivery_note, stamped here. */
static void add_delivery(pending *p, int64_t now, const void *arg)
{
    delivery_note d = *(const delivery_note *)arg;
    d.at = now;
    keep_newest(p->deliv, &p->ndeliv, DELIVERIES_MAX, sizeof d, &d);
}

void once__journal_delivery(once__engine *e, const char *principal, const char *task_id,
                            const char *config_id, int64_t generation, int status,
                            const char *result)
{
    delivery_note d = {.generation = generation, .status = status, .result = result};
    once__strlcpy(d.config, config_id, sizeof d.config);
    note(e, principal, task_id, add_delivery, &d);
}

void once__journal_lease_refused(once__engine *e, const char *principal, const char *task_id,
                                 int64_t fence)
{
    once_record rec;
    if (once_store_load(e->store, principal, task_id, &rec, NULL) != ONCE_OK)
        return;   /* gone, or the store is away: nothing to note against */
    if (rec.fence != fence)
        once__journal_fenced(e, &rec, fence, 1);
    once_record_clear(&rec);
}

/* flush_one's answer for a task whose turn holds a live lease. */
#define FLUSH_LATER 1

/* 1 while a turn may be renewing rec's lease. A renewal does not move the
 * version, so a journal-only update (which writes back the lease_until it
 * loaded) could undo one that landed between its load and its CAS, and
 * shorten the lease another replica then reads. Such a task's counts wait
 * until the lease is released, lapses or the task settles. */
static int lease_live(const once__engine *e, const once_record *rec)
{
    return rec->lease_owner[0] != '\0' && !once_state_terminal(rec->state) &&
           rec->lease_until > once__now(e);
}

/* Write p into its task's journal: CAS on the version, nothing else
 * changed, reloading after a lost race. ONCE_OK also when the task is gone
 * (its counts go with it); FLUSH_LATER while a turn holds its lease, with
 * *until the lease's end as stored. */
static int flush_one(once__engine *e, const pending *p, int64_t *until)
{
    for (int i = 0; i < FLUSH_TRIES; i++) {
        once_record cur, next;
        int rc = once__load_found(e, p->principal, p->task_id, &cur);
        if (rc != ONCE_OK)
            return rc == ONCE_ENOTFOUND ? ONCE_OK : rc;   /* gone: its counts went with it */
        if (lease_live(e, &cur)) {
            *until = cur.lease_until;
            once_record_clear(&cur);
            return FLUSH_LATER;
        }
        rc = once_record_copy(&next, &cur);
        if (rc == ONCE_OK)
            rc = journal_merge(e, p, &next);
        if (rc == ONCE_OK) {
            next.version = cur.version + 1;
            rc = once_store_update(e->store, &next, cur.version, NULL, 0);
        }
        once_record_clear(&cur);
        once_record_clear(&next);
        if (rc != ONCE_ECONFLICT)
            return rc == ONCE_OK ? ONCE_OK : once__store_rc(e, rc);
    }
    return ONCE_EBUSY;
}

/* Put p's counts back for a later pass, merged into whatever was counted
 * for the same task meanwhile; p is freed. */
static void requeue(once__engine *e, struct once__journal *j, pending *p)
{
    pthread_mutex_lock(&j->mu);
    pending *q = pending_get(e, j, p->principal, p->task_id);
    if (q != NULL) {
        q->not_before = p->not_before;
        count_merge(&q->replays, &p->replays);
        for (size_t r = 0; r < NREASONS; r++)
            count_merge(&q->refused[r], &p->refused[r]);
        /* p's notes are the older ones: q's go after them, the newest kept,
         * and the result is q's. */
        for (size_t i = 0; i < q->nfenced; i++)
            keep_newest(p->fenced, &p->nfenced, FENCED_MAX, sizeof q->fenced[0], &q->fenced[i]);
        memcpy(q->fenced, p->fenced, sizeof q->fenced);
        q->nfenced = p->nfenced;
        for (size_t i = 0; i < q->ndeliv; i++)
            keep_newest(p->deliv, &p->ndeliv, DELIVERIES_MAX, sizeof q->deliv[0], &q->deliv[i]);
        memcpy(q->deliv, p->deliv, sizeof q->deliv);
        q->ndeliv = p->ndeliv;
    }
    pthread_mutex_unlock(&j->mu);
    once_free(p);
}

int once__journal_flush(once__engine *e)
{
    struct once__journal *j = __atomic_load_n(&e->journal, __ATOMIC_ACQUIRE);
    if (j == NULL)
        return ONCE_OK;
    /* The entries held now, oldest first; counts made meanwhile start new
     * entries, flushed by the next pass (so a busy task cannot hold this
     * one forever). A store failure ends the pass: the rest wait. */
    pthread_mutex_lock(&j->mu);
    size_t n = j->n;
    pthread_mutex_unlock(&j->mu);
    int rc = ONCE_OK;
    for (size_t i = 0; i < n && rc == ONCE_OK; i++) {
        pthread_mutex_lock(&j->mu);
        pending *p = oldest(j);
        if (p != NULL)
            unlink_pending(j, p);
        pthread_mutex_unlock(&j->mu);
        if (p == NULL)
            break;
        int64_t now = once__now(e);
        if (p->not_before > now) {
            requeue(e, j, p);   /* its task was leased a moment ago: not yet */
            continue;
        }
        int64_t until = 0;
        rc = flush_one(e, p, &until);
        if (rc == FLUSH_LATER) {
            /* A turn holds the task (a long one, or one queued behind
             * others): look again when the lease it holds now runs out,
             * or as soon as a write of the task shows here (the turn may
             * have ended), not at every pass: counts waiting on many
             * leased tasks would cost a load each per pass. */
            p->not_before = until;
            requeue(e, j, p);
            rc = ONCE_OK;
            continue;
        }
        if (rc == ONCE_OK)
            ONCE__STAT(e, journal_flushes);
        once_free(p);
    }
    return rc;
}

void once__journal_free(once__engine *e)
{
    struct once__journal *j = e->journal;
    if (j == NULL)
        return;
    for (once__link *l = j->age.head, *next; l != NULL; l = next) {
        next = l->next;
        once_free(l); /* the pending it is the first member of */
    }
    pthread_mutex_destroy(&j->mu);
    once_free(j);
    e->journal = NULL;
}

void once__journal_touch(once__engine *e, const char *principal, const char *task_id)
{
    struct once__journal *j = __atomic_load_n(&e->journal, __ATOMIC_ACQUIRE);
    /* Most writes find no counts waiting: no lock for them. */
    if (j == NULL || __atomic_load_n(&j->n, __ATOMIC_RELAXED) == 0)
        return;
    pthread_mutex_lock(&j->mu);
    {
        for (pending *p = j->bucket[key_hash(principal, task_id)]; p != NULL; p = p->hnext) {
            if (strcmp(p->task_id, task_id) == 0 && strcmp(p->principal, principal) == 0) {
                p->not_before = 0;
                break;
            }
        }
    }
    pthread_mutex_unlock(&j->mu);
}
