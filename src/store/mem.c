/*
 * mem.c -- the "memory:" store backend: one process, nothing durable, every
 * open a fresh empty store ("memory:", settings after '?'; anything else
 * between "memory:" and '?' is refused, so "memory:max=1G" is not taken
 * for a store without a budget).
 *
 * A chained hash table maps (principal, task_id) to one node: a live entry
 * (its record and events) or a tombstone, never both. One mutex guards
 * everything, so each slot is trivially atomic: a create or update either
 * publishes the record and all its events or nothing. Copies are made
 * outside the lock where possible so that a failed allocation never leaves
 * a half-applied write.
 *
 * Memory is what bounds a long-running process, so a key costs little:
 *   - a record is one allocation (mem_rec: its numbers, then all its
 *     strings back to back), replaced whole by each update;
 *   - a key's events are one buffer of packed (generation, length, text),
 *     grown by doubling while the task runs and cut to size when it ends;
 *   - a tombstone is a small node of its own (mem_tomb: the two times, the
 *     first digest in binary, the key's two strings), not a record.
 *
 * Every live entry sits on exactly one of two lists, by its state: the
 * active list (not terminal: what expired_leases looks at) or the finished
 * queue (terminal, ordered by (finished_at, key): what sweep takes from the
 * front). Tombstones sit on the purge queue, ordered by expired_at. So
 * expired_leases costs what is still running, and sweep and purge cost what
 * they remove (plus one look at the entry that stops them), never a walk
 * of the table; `visits` counts those looks for the tests. Every live
 * entry is also on its principal's list (mem_plist), ordered by
 * (created_at, task_id): list walks it from the page's cursor, so a page
 * costs what it returns, or with a filter at most ONCE_LIST_SCAN_MAX
 * entries. check and push_claim still walk the table (O(keys));
 * push_claim skips its walk while no push rows exist.
 *
 * Push delivery rows (ONCE_STORE_PUSH) live in the entry beside the record,
 * reshaped by once__push_sync in the same critical section as the record
 * write that implies it, and dropped with the record when it is entombed.
 *
 * A task finished for MEM_COLD_MS or more is cold: a later write that
 * finishes a task (a couple per such write, cool_step), or else the sweep,
 * deflates its texts and events into its record's one allocation
 * (zip.c), keeping as they were the strings the lookups and lists compare
 * (principal, task ID, context ID, lease owner) and every number. Readers of the rest (load, events, list, check,
 * an update, the sweep that entombs it: the first digest) inflate a copy
 * under the lock; the tasks retries replay are the ones just finished,
 * still warm. The cooler's place on the queue (cooled) keeps its cost to
 * what it deflates, and it deflates a copy outside the lock.
 *
 * memory:?tombs=compact keeps tombstones outside the table, 24 bytes each
 * (mem_tomb.c: a hash of the key and expired_at, not the key's text, the
 * first digest or finished_at); the default keeps them as nodes (mem_tomb
 * below).
 *
 * memory:?max=SIZE is a budget for the bytes the store holds (`bytes`:
 * every allocation it keeps -- records, events, push rows, tombstones, the
 * table -- each counted as requested plus MEM_CHUNK_HEAD for the
 * allocator's header). The write that needs the room makes it, under the
 * lock, so the bound holds at any rate of writes whatever the sweeper
 * does (make_room): it turns the oldest finished tasks into tombstones
 * before their retention, as retention would (counted in `early`), until
 * what it adds fits. A running task is never expired and a tombstone is
 * never dropped before its own retention, so a create that finds no room
 * that way is refused (ONCE_EBUSY, a retryable 503) and stores nothing; an
 * update of a task already admitted is never refused for room: what
 * running tasks write once no finished task is left to expire is the only
 * way past the budget (each task at most --max-task-size). A sweep over
 * the budget, or after a write had to expire tasks early (`pressed`),
 * deflates the finished tasks left without waiting for cold_ms (a batch
 * per call), so that the store keeps more of them.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/str.h"
#include "core/decide.h"
#include "store/mem.h"
#include "store/url_param.h"
#include "store/zip.h"
#include "store/mem_tomb.h"
#include "store/replica.h"
#include "store/slots.h"
#include "store/store_int.h"

/* The head of every node in the hash table. Guarded by mem_store.lock. */
typedef struct mem_node {
    struct mem_node *next;    /* hash chain */
    uint32_t hash;            /* key_hash's low half: bucket and first compare */
    uint8_t is_tomb;          /* a mem_tomb, else a mem_entry */
    uint8_t digest_kind;      /* tombstones: DIGEST_NONE, _BIN or _TEXT */
} mem_node;

/* The record's strings, in the order they are packed. */
enum { S_PRINCIPAL, S_TASK_ID, S_CONTEXT_ID, S_LEASE_OWNER, S_DIGESTS, S_TASK_JSON,
       S_CHECKPOINT, S_PUSH_JSON, S_JOURNAL, S_COUNT };
#define S_NULL UINT32_MAX     /* off[] of a NULL string (checkpoint, push_json, journal) */

#define S_FIRST_ZIP S_DIGESTS   /* a cold record deflates this string and the later ones */

/* Tasks finished this long before a sweep's `now` are deflated by it. */
#define MEM_COLD_MS 2000

/* One record in one allocation. Immutable once published except
 * lease_until, which renew sets under the lock. Warm (zlen == 0): every
 * string is in s[] at off[i]. Cold: s[0..zoff) holds the strings before
 * S_FIRST_ZIP as they were, s[zoff..zoff + zlen) the deflated text of the
 * later ones followed by the texts of the entry's events (zraw bytes
 * inflated; the events' heads are not kept), and off[i >= S_FIRST_ZIP] is
 * where string i starts in that inflated text. */
typedef struct mem_rec {
    int64_t version, generation, fence, step, lease_until, created_at, updated_at, finished_at;
    int16_t state, kind;      /* narrow: sizeof must stay offsetof(s) (below) */
    uint32_t off[S_COUNT];    /* offset of each string in s[], or S_NULL */
    uint32_t zoff, zlen, zraw;
    uint32_t size;            /* bytes of this allocation (the budget counts them) */
    char s[];
} mem_rec;

/* Copies of a record's head take sizeof: no padding may sit before s[]. */
_Static_assert(sizeof(mem_rec) == offsetof(mem_rec, s), "mem_rec has padding before s[]");

/* A live key. All fields are guarded by mem_store.lock. ev[0..evlen) holds
 * nev events, ascending, numbered 1..r->generation, each packed as an
 * int64 generation, a uint32 length and the text with its NUL (unaligned:
 * read with memcpy); a cold entry's are in its record (ev NULL, evcap 0,
 * evlen and nev as they were). push[0..npush) are the delivery rows, one per element
 * of the record's push_json, in its order. qprev/qnext link the entry into
 * the active list or the finished queue, plink into its principal's list
 * (see the file comment). */
typedef struct mem_entry {
    mem_node n;
    struct mem_entry *qprev, *qnext;
    once__link plink;         /* its principal's list (mem_plist) */
    mem_rec *r;
    char *ev;
    size_t evlen, evcap, nev;
    once_push_row *push;
    size_t npush;
} mem_entry;

#define EV_HEAD (sizeof(int64_t) + sizeof(uint32_t))

/* What remains of a record after retention. key holds the principal, its
 * NUL, the task ID, its NUL, and with DIGEST_TEXT the first digest as text
 * (one that is not 64 lowercase hex digits, which DIGEST_BIN keeps in
 * digest[] at half the size). Immutable; qnext is guarded by the lock. */
typedef struct mem_tomb {
    mem_node n;
    struct mem_tomb *qnext;   /* purge queue */
    int64_t finished_at, expired_at;
    unsigned char digest[ONCE_DIGEST_HEX / 2];
    char key[];
} mem_tomb;

enum { DIGEST_NONE, DIGEST_BIN, DIGEST_TEXT };

/* A named store-wide value; immutable once inserted (insert-if-absent). */
typedef struct mem_meta {
    struct mem_meta *next;
    char *name;
    char *value;
} mem_meta;

/* A principal's live entries, oldest first by (created_at, task_id),
 * linked through plink: what list walks, from a cursor it finds by the key
 * it names. In a chained table of its own, by principal. */
typedef struct mem_plist {
    struct mem_plist *next;   /* hash chain */
    once__list l;
    size_t n;
    uint32_t hash;
    char principal[];
} mem_plist;

/* The handle. lock guards everything below it (and every node). active and
 * finished are the sentinels of two circular lists of entries; tomb_head
 * .. tomb_tail is the purge queue (singly linked, oldest expired_at first). */
typedef struct mem_store {
    once_store base;
    pthread_mutex_t lock;
    mem_node **tab;
    size_t ntab;              /* power of two */
    size_t count;             /* nodes in tab */
    size_t push_rows;         /* delivery rows over all entries; 0 lets push_claim
                                 skip its scan (most stores never use push) */
    mem_entry active;         /* live, not terminal: any order */
    mem_entry finished;       /* live, terminal: by (finished_at, key) */
    int64_t cold_ms;          /* finished this long: deflated by the sweep; < 0 never
                                 (memory:?cold=off) */
    pthread_mutex_t cool_mu;  /* one cooler at a time (two engines may sweep one
                                 store): the holder alone uses zip's deflater */
    mem_entry *cooled;        /* the last finished entry the cooler passed; NULL:
                                 none (it starts at the front) */
    mem_tomb *tomb_head, *tomb_tail;
    uint64_t visits;          /* entries looked at by expired_leases, sweep, purge */
    uint64_t cools;           /* entries deflated so far */
    uint64_t finishes;        /* writes that finished a task (cool_step) */
    size_t cold;              /* live entries held deflated now (account keeps it) */
    once__zip zip;
    mem_meta *meta;
    mem_plist **ptab;         /* the principals' lists; NULL until the first */
    size_t nptab, nplist;     /* buckets (a power of two), lists */
    once_replica_list replicas; /* heartbeat rows, any order */
    int compact;              /* memory:?tombs=compact: tombstones in ctombs */
    mem_tombs ctombs;
    size_t max_bytes;         /* memory:?max=SIZE; 0: no budget */
    size_t bytes;             /* held in all (see the file comment) */
    size_t tomb_bytes;        /* of bytes, held by tombstones */
    size_t fin_bytes;         /* of bytes, held by finished entries (what make_room
                                 may expire) */
    size_t live;              /* live entries (the rest of count: tombstones) */
    int pressed;              /* a write expired tasks early since the last sweep */
    uint64_t early;           /* finished tasks entombed before their retention */
    uint64_t early_told;      /* of early, told to a taking budget read */
    int64_t early_last;       /* finished_at of the last one entombed early */
} mem_store;

/* What the allocator is taken to add to each allocation the store keeps
 * (glibc: an 8-byte header, sizes rounded up to 16). */
#define MEM_CHUNK_HEAD 16

static size_t chunk(size_t n)
{
    return n + MEM_CHUNK_HEAD;
}

#define MEM_INITIAL_BUCKETS 64

static uint64_t key_hash(const char *principal, const char *task_id)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    const unsigned char *p;

    for (p = (const unsigned char *)principal; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;     /* separator no string byte equals */
    for (p = (const unsigned char *)task_id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h ^ (h >> 32);   /* fold: the low half is what the nodes keep */
}

/* String i of r; for a cold r, the strings from S_FIRST_ZIP on are in
 * `cold`, its inflated text (thaw). */
static const char *rec_field(const mem_rec *r, const char *cold, int i)
{
    if (r->off[i] == S_NULL)
        return NULL;
    return r->zlen && i >= S_FIRST_ZIP ? cold + r->off[i] : r->s + r->off[i];
}

/* String i (< S_FIRST_ZIP: kept as it is, warm or cold). */
static const char *rec_str(const mem_rec *r, int i)
{
    return rec_field(r, NULL, i);
}

static const char *node_principal(const mem_node *n)
{
    return n->is_tomb ? ((const mem_tomb *)n)->key : rec_str(((const mem_entry *)n)->r, S_PRINCIPAL);
}

static const char *node_task_id(const mem_node *n)
{
    if (n->is_tomb) {
        const char *k = ((const mem_tomb *)n)->key;
        return k + strlen(k) + 1;
    }
    return rec_str(((const mem_entry *)n)->r, S_TASK_ID);
}

/* The link that points at the key's node, or at the chain's terminating
 * NULL when the key is absent (so *slot = n inserts). */
static mem_node **find_slot(mem_store *ms, const char *principal, const char *task_id,
                            uint32_t h)
{
    mem_node **slot = &ms->tab[h & (ms->ntab - 1)];

    for (; *slot; slot = &(*slot)->next) {
        mem_node *n = *slot;
        if (n->hash == h && strcmp(node_task_id(n), task_id) == 0 &&
            strcmp(node_principal(n), principal) == 0)
            break;
    }
    return slot;
}

static mem_node *find(mem_store *ms, const char *principal, const char *task_id)
{
    return *find_slot(ms, principal, task_id, (uint32_t)key_hash(principal, task_id));
}

/* The live entry of the key, or NULL (absent or tombstoned). */
static mem_entry *find_live(mem_store *ms, const char *principal, const char *task_id)
{
    mem_node *n = find(ms, principal, task_id);
    return n && !n->is_tomb ? (mem_entry *)n : NULL;
}

/* Double the table when it is fuller than one node per bucket. A failed
 * allocation just leaves longer chains. */
/* What maybe_grow would add to the store's bytes after one more node. */
static size_t table_growth(const mem_store *ms)
{
    if (ms->count + 1 <= ms->ntab || ms->ntab > UINT32_MAX / 2)
        return 0;
    return chunk(2 * ms->ntab * sizeof *ms->tab) - chunk(ms->ntab * sizeof *ms->tab);
}

static void maybe_grow(mem_store *ms)
{
    mem_node **nt;
    size_t n, i;

    if (ms->count <= ms->ntab || ms->ntab > UINT32_MAX / 2)
        return;
    n = ms->ntab * 2;
    nt = once_calloc(n, sizeof *nt);
    if (!nt)
        return;
    for (i = 0; i < ms->ntab; i++) {
        mem_node *e = ms->tab[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = nt[e->hash & (n - 1)];
            nt[e->hash & (n - 1)] = e;
        }
    }
    once_free(ms->tab);
    ms->bytes += chunk(n * sizeof *nt) - chunk(ms->ntab * sizeof *nt);
    ms->tab = nt;
    ms->ntab = n;
}

/* ------------------------------------------------------------------------
 * Records and events, packed.
 */

/* The record's int64 fields: where each is in a once_record and in a
 * mem_rec (copied both ways by one loop). */
static const struct {
    size_t rec, mem;
} nums[] = {
    {offsetof(once_record, version), offsetof(mem_rec, version)},
    {offsetof(once_record, generation), offsetof(mem_rec, generation)},
    {offsetof(once_record, fence), offsetof(mem_rec, fence)},
    {offsetof(once_record, step), offsetof(mem_rec, step)},
    {offsetof(once_record, lease_until), offsetof(mem_rec, lease_until)},
    {offsetof(once_record, created_at), offsetof(mem_rec, created_at)},
    {offsetof(once_record, updated_at), offsetof(mem_rec, updated_at)},
    {offsetof(once_record, finished_at), offsetof(mem_rec, finished_at)},
};

/* rec in one fresh allocation, or NULL when out of memory. */
static mem_rec *rec_pack(const once_record *rec)
{
    const char *str[S_COUNT] = {rec->principal,   rec->task_id,   rec->context_id,
                                rec->lease_owner, rec->digests,   rec->task_json,
                                rec->checkpoint,  rec->push_json, rec->journal};
    size_t len[S_COUNT], total = 0, pos = 0;
    mem_rec *r;
    int i;

    for (i = 0; i < S_COUNT; i++) {
        len[i] = str[i] ? strlen(str[i]) + 1 : 0;
        total += len[i];
    }
    if (total >= S_NULL || !(r = once_malloc(sizeof *r + total)))
        return NULL;
    r->zoff = r->zlen = r->zraw = 0;
    r->size = (uint32_t)(sizeof *r + total);
    for (i = 0; i < (int)(sizeof nums / sizeof nums[0]); i++)
        memcpy((char *)r + nums[i].mem, (const char *)rec + nums[i].rec, sizeof(int64_t));
    r->state = (int16_t)rec->state;
    r->kind = (int16_t)rec->kind;
    for (i = 0; i < S_COUNT; i++) {
        r->off[i] = str[i] ? (uint32_t)pos : S_NULL;
        if (str[i])
            memcpy(r->s + pos, str[i], len[i]);
        pos += len[i];
    }
    return r;
}

/* r as a once_record whose string members point into r (and into cold,
 * its inflated text, when r is cold): read it, never clear it. */
static void rec_view(const mem_rec *r, const char *cold, once_record *v)
{
    size_t i;

    memset(v, 0, sizeof *v);
    once__strlcpy(v->principal, rec_str(r, S_PRINCIPAL), sizeof v->principal);
    once__strlcpy(v->task_id, rec_str(r, S_TASK_ID), sizeof v->task_id);
    once__strlcpy(v->context_id, rec_str(r, S_CONTEXT_ID), sizeof v->context_id);
    once__strlcpy(v->lease_owner, rec_str(r, S_LEASE_OWNER), sizeof v->lease_owner);
    v->state = (once_state)r->state;
    v->kind = (once_record_kind)r->kind;
    for (i = 0; i < sizeof nums / sizeof nums[0]; i++)
        memcpy((char *)v + nums[i].rec, (const char *)r + nums[i].mem, sizeof(int64_t));
    v->digests = (char *)rec_field(r, cold, S_DIGESTS);
    v->task_json = (char *)rec_field(r, cold, S_TASK_JSON);
    v->checkpoint = (char *)rec_field(r, cold, S_CHECKPOINT);
    v->push_json = (char *)rec_field(r, cold, S_PUSH_JSON);
    v->journal = (char *)rec_field(r, cold, S_JOURNAL);
}

static int rec_terminal(const mem_rec *r)
{
    return once_state_terminal((once_state)r->state);
}

/* ev[0..n) packed into one fresh buffer of *len bytes (NULL when n == 0). */
static int ev_pack(const once_event *ev, size_t n, char **out, size_t *len)
{
    size_t total = 0, i, pos = 0;
    char *b;

    *out = NULL;
    *len = 0;
    for (i = 0; i < n; i++)
        total += EV_HEAD + strlen(ev[i].payload) + 1;
    if (n == 0)
        return ONCE_OK;
    if (total > UINT32_MAX || !(b = once_malloc(total)))
        return ONCE_ENOMEM;
    for (i = 0; i < n; i++) {
        uint32_t l = (uint32_t)strlen(ev[i].payload) + 1;
        memcpy(b + pos, &ev[i].generation, sizeof(int64_t));
        memcpy(b + pos + sizeof(int64_t), &l, sizeof l);
        memcpy(b + pos + EV_HEAD, ev[i].payload, l);
        pos += EV_HEAD + l;
    }
    *out = b;
    *len = total;
    return ONCE_OK;
}

/* The event at *pos of a packed buffer: its generation and text; *pos
 * moves on. */
static const char *ev_next(const char *ev, size_t *pos, int64_t *gen)
{
    uint32_t l;
    const char *text = ev + *pos + EV_HEAD;

    memcpy(gen, ev + *pos, sizeof *gen);
    memcpy(&l, ev + *pos + sizeof(int64_t), sizeof l);
    *pos += EV_HEAD + l;
    return text;
}

static int ev_thaw(mem_store *ms, mem_entry *e, size_t more);

/* Under the lock: make room for `more` bytes of events. Nothing changes on
 * failure. */
static int ev_reserve(mem_store *ms, mem_entry *e, size_t more)
{
    size_t nc = e->evcap ? e->evcap : 256;
    char *grown;

    if (e->r->zlen && e->evlen && !e->ev)
        return ev_thaw(ms, e, more);
    if (e->evlen + more <= e->evcap)
        return ONCE_OK;
    while (nc < e->evlen + more)
        nc *= 2;
    if (!(grown = once_realloc(e->ev, nc)))
        return ONCE_ENOMEM;
    e->ev = grown;
    e->evcap = nc;
    return ONCE_OK;
}

/* A finished task's events will not grow again: give back the slack. */
static void ev_compact(mem_entry *e)
{
    char *cut;

    if (e->evcap == e->evlen || !e->ev)   /* cut already, none, or cold */
        return;
    if ((cut = once_realloc(e->ev, e->evlen)) != NULL) {
        e->ev = cut;
        e->evcap = e->evlen;
    }
}

/* What e holds, as the budget counts it. */
static size_t entry_bytes(const mem_entry *e)
{
    return chunk(sizeof *e) + chunk(e->r->size) + (e->ev ? chunk(e->evcap) : 0) +
           (e->npush ? chunk(e->npush * sizeof *e->push) : 0);
}

static int over_budget(const mem_store *ms)
{
    return ms->max_bytes && ms->bytes > ms->max_bytes;
}

/* Under the lock: e's bytes into the store's counts (add) or out of them,
 * as its state stands (finished ones also in fin_bytes, cold ones in
 * cold). Every change of an entry's record goes between the two calls,
 * so the counts follow it. */
static void account(mem_store *ms, const mem_entry *e, int add)
{
    size_t b = entry_bytes(e), fin = rec_terminal(e->r) ? b : 0, cold = e->r->zlen != 0;

    if (add) {
        ms->bytes += b;
        ms->fin_bytes += fin;
        ms->cold += cold;
    } else {
        ms->bytes -= b;
        ms->fin_bytes -= fin;
        ms->cold -= cold;
    }
}

static void entry_free(mem_entry *e)
{
    if (!e)
        return;
    once_free(e->r);
    once_free(e->ev);
    once_free(e->push);
    once_free(e);
}

/* ------------------------------------------------------------------------
 * The lists: active, finished (by finished_at), purge queue (by expired_at).
 */

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int cmp_key(const mem_node *a, const mem_node *b)
{
    int c = strcmp(node_principal(a), node_principal(b));
    return c ? c : strcmp(node_task_id(a), node_task_id(b));
}

static int cmp_finished_entry(const mem_entry *x, const mem_entry *y)
{
    int c = cmp_i64(x->r->finished_at, y->r->finished_at);
    return c ? c : cmp_key(&x->n, &y->n);
}

static void list_init(mem_entry *head)
{
    head->qprev = head->qnext = head;
}

static void list_unlink(mem_entry *e)
{
    e->qprev->qnext = e->qnext;
    e->qnext->qprev = e->qprev;
    e->qprev = e->qnext = NULL;
}

/* Take e off its list; the cooler's place moves back with it. */
static void queue_unlink(mem_store *ms, mem_entry *e)
{
    if (ms->cooled == e)
        ms->cooled = e->qprev == &ms->finished ? NULL : e->qprev;
    list_unlink(e);
}

/* Put e right after `after`. */
static void list_insert(mem_entry *after, mem_entry *e)
{
    e->qprev = after;
    e->qnext = after->qnext;
    after->qnext->qprev = e;
    after->qnext = e;
}

/* Put e on the list its state asks for. Tasks mostly finish in time order,
 * so the finished queue's place is found from its back in a step or two. */
static void list_place(mem_store *ms, mem_entry *e)
{
    mem_entry *at;

    if (!rec_terminal(e->r)) {
        list_insert(ms->active.qprev, e);
        return;
    }
    for (at = ms->finished.qprev; at != &ms->finished && cmp_finished_entry(at, e) > 0;
         at = at->qprev)
        ;
    list_insert(at, e);
    ev_compact(e);
}

/* Append t to the purge queue, keeping it ordered by expired_at (a sweep
 * passes its own clock's now, so it is out of order only when a clock went
 * back: then the place is searched from the front). */
static void tomb_enqueue(mem_store *ms, mem_tomb *t)
{
    mem_tomb **at;

    t->qnext = NULL;
    if (!ms->tomb_tail || ms->tomb_tail->expired_at <= t->expired_at) {
        if (ms->tomb_tail)
            ms->tomb_tail->qnext = t;
        else
            ms->tomb_head = t;
        ms->tomb_tail = t;
        return;
    }
    for (at = &ms->tomb_head; (*at)->expired_at <= t->expired_at; at = &(*at)->qnext)
        ;
    t->qnext = *at;
    *at = t;
}

/* ------------------------------------------------------------------------
 * The principals' lists (mem_plist): list's page order, with no walk of
 * the table.
 */

static uint32_t principal_hash(const char *principal)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a, folded as key_hash */

    for (const unsigned char *p = (const unsigned char *)principal; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

static size_t plist_bytes(const mem_plist *pl)
{
    return chunk(sizeof *pl + strlen(pl->principal) + 1);
}

static mem_plist **plist_slot(mem_store *ms, const char *principal, uint32_t h)
{
    mem_plist **at = &ms->ptab[h & (ms->nptab - 1)];

    while (*at && ((*at)->hash != h || strcmp((*at)->principal, principal) != 0))
        at = &(*at)->next;
    return at;
}

static mem_plist *plist_find(mem_store *ms, const char *principal)
{
    return ms->ptab ? *plist_slot(ms, principal, principal_hash(principal)) : NULL;
}

/* What plist_get would add to the store's bytes for principal. */
static size_t plist_growth(mem_store *ms, const char *principal)
{
    size_t b;

    if (plist_find(ms, principal))
        return 0;
    b = chunk(sizeof(mem_plist) + strlen(principal) + 1);
    if (!ms->ptab)
        b += chunk(MEM_INITIAL_BUCKETS * sizeof *ms->ptab);
    else if (ms->nplist + 1 > ms->nptab)
        b += chunk(2 * ms->nptab * sizeof *ms->ptab) - chunk(ms->nptab * sizeof *ms->ptab);
    return b;
}

/* Double the principals' table past one list per bucket; a failed
 * allocation leaves longer chains. */
static void plist_grow(mem_store *ms)
{
    size_t n = ms->nptab * 2, i;
    mem_plist **nt, *pl, *next;

    if (ms->nplist < ms->nptab || !(nt = once_calloc(n, sizeof *nt)))
        return;
    for (i = 0; i < ms->nptab; i++)
        for (pl = ms->ptab[i]; pl; pl = next) {
            next = pl->next;
            pl->next = nt[pl->hash & (n - 1)];
            nt[pl->hash & (n - 1)] = pl;
        }
    once_free(ms->ptab);
    ms->bytes += chunk(n * sizeof *nt) - chunk(ms->nptab * sizeof *nt);
    ms->ptab = nt;
    ms->nptab = n;
}

/* principal's list, made (and counted) when it has none; NULL: out of
 * memory, nothing changed. */
static mem_plist *plist_get(mem_store *ms, const char *principal)
{
    uint32_t h = principal_hash(principal);
    size_t len = strlen(principal);
    mem_plist *pl, **at;

    if (!ms->ptab) {
        if (!(ms->ptab = once_calloc(MEM_INITIAL_BUCKETS, sizeof *ms->ptab)))
            return NULL;
        ms->nptab = MEM_INITIAL_BUCKETS;
        ms->bytes += chunk(ms->nptab * sizeof *ms->ptab);
    }
    if ((pl = *plist_slot(ms, principal, h)) != NULL)
        return pl;
    if (!(pl = once_calloc(1, sizeof *pl + len + 1)))
        return NULL;
    memcpy(pl->principal, principal, len + 1);
    pl->hash = h;
    ms->nplist++;
    ms->bytes += plist_bytes(pl);
    plist_grow(ms);
    at = &ms->ptab[h & (ms->nptab - 1)];
    pl->next = *at;
    *at = pl;
    return pl;
}

static int cmp_created_entry(const mem_entry *x, const mem_entry *y)
{
    int c = cmp_i64(x->r->created_at, y->r->created_at);
    return c ? c : strcmp(rec_str(x->r, S_TASK_ID), rec_str(y->r, S_TASK_ID));
}

/* The entry whose plink l is (NULL for NULL). */
static mem_entry *plink_entry(const once__link *l)
{
    return l ? (mem_entry *)((char *)l - offsetof(mem_entry, plink)) : NULL;
}

static mem_entry *plist_next(const mem_entry *e)
{
    return plink_entry(e->plink.next);
}

/* Put e on pl in its place. Tasks are mostly created in time order, so the
 * place is found from the back in a step or two. */
static void plist_insert(mem_plist *pl, mem_entry *e)
{
    mem_entry *at = plink_entry(pl->l.tail);

    while (at && cmp_created_entry(at, e) > 0)
        at = plink_entry(at->plink.prev);
    once__list_insert_after(&pl->l, at ? &at->plink : NULL, &e->plink);
    pl->n++;
}

/* Take e off its principal's list; a list left empty goes. */
static void plist_unlink(mem_store *ms, mem_entry *e)
{
    const char *principal = rec_str(e->r, S_PRINCIPAL);
    mem_plist **at = plist_slot(ms, principal, principal_hash(principal)), *pl = *at;

    once__list_unlink(&pl->l, &e->plink);
    if (--pl->n == 0) {
        *at = pl->next;
        ms->nplist--;
        ms->bytes -= plist_bytes(pl);
        once_free(pl);
    }
}

/* ------------------------------------------------------------------------
 * Cold entries: deflated by the sweep, inflated for each reader.
 */

/* What a reader sees of an entry: its record, whose strings point into the
 * entry or into buf, and its packed events. */
typedef struct mem_thaw {
    once_record v;
    const char *ev;
    char *buf;                /* a cold entry's inflated text; thaw_done frees it */
} mem_thaw;

/* Under the lock: cold e inflated into a fresh buffer: *slen bytes of its
 * strings, then its events packed as a warm entry's ev holds them (their
 * heads rebuilt: a cold entry's events are 1..nev, see cool_one), then
 * `extra` bytes of room. ONCE_OK, or ONCE_ENOMEM (ONCE_ERROR: a text the
 * store did not make) with nothing to free. */
static int unzip(mem_store *ms, const mem_entry *e, size_t extra, char **out, size_t *slen)
{
    const mem_rec *r = e->r;
    size_t heads = EV_HEAD * e->nev, src, dst, j;
    char *b = once_malloc(r->zraw + heads + extra + 1);
    int rc;

    *out = NULL;
    if (!b)
        return ONCE_ENOMEM;
    rc = once__zip_inflate(&ms->zip, (const unsigned char *)r->s + r->zoff, r->zlen,
                               b + heads, r->zraw);
    if (rc != ONCE_OK) {
        once_free(b);
        return rc;
    }
    *slen = r->zraw - (e->evlen - heads);
    memmove(b, b + heads, *slen);
    /* Text j moves down by EV_HEAD * (nev - j) bytes and gets its head in
     * front: what is written never reaches a text not yet moved. */
    for (j = 0, dst = *slen, src = *slen + heads; j < e->nev; j++) {
        int64_t gen = (int64_t)j + 1;
        uint32_t l = (uint32_t)strlen(b + src) + 1;
        memmove(b + dst + EV_HEAD, b + src, l);
        memcpy(b + dst, &gen, sizeof gen);
        memcpy(b + dst + sizeof gen, &l, sizeof l);
        dst += EV_HEAD + l;
        src += l;
    }
    *out = b;
    return ONCE_OK;
}

/* Under the lock: e as a reader sees it. ONCE_OK, or ONCE_ENOMEM with
 * nothing to free. */
static int thaw(mem_store *ms, const mem_entry *e, mem_thaw *t)
{
    size_t slen;
    int rc;

    t->buf = NULL;
    t->ev = e->ev;
    if (e->r->zlen) {
        if ((rc = unzip(ms, e, 0, &t->buf, &slen)) != ONCE_OK)
            return rc;
        t->ev = t->buf + slen;
    }
    rec_view(e->r, t->buf, &t->v);
    return ONCE_OK;
}

static void thaw_done(mem_thaw *t)
{
    once_free(t->buf);
    t->buf = NULL;
}

/* e's record into *out, the caller's own copy. */
static int entry_load(mem_store *ms, const mem_entry *e, once_record *out)
{
    mem_thaw t;
    int rc = thaw(ms, e, &t);

    if (rc == ONCE_OK)
        rc = once_record_copy(out, &t.v);
    thaw_done(&t);
    return rc;
}

/* Under the lock, for an update of cold e: its events back in a buffer of
 * their own with room for `more` bytes (the update then replaces the
 * record). Nothing changes on failure. */
static int ev_thaw(mem_store *ms, mem_entry *e, size_t more)
{
    size_t slen;
    char *b;
    int rc = unzip(ms, e, more, &b, &slen);

    if (rc != ONCE_OK)
        return rc;
    memmove(b, b + slen, e->evlen);
    e->ev = b;
    e->evcap = e->evlen + more;
    return ONCE_OK;
}

/* r's strings from S_FIRST_ZIP on, then the texts of e's events, deflated
 * into out[0..cap). */
static int zip_entry(mem_store *ms, const mem_entry *e, size_t zoff, size_t slen,
                     unsigned char *out, size_t cap, size_t *zlen)
{
    size_t pos = 0, j;
    int64_t gen;
    int rc = once__zip_begin(&ms->zip, out, cap);

    if (rc == ONCE_OK)
        rc = once__zip_add(&ms->zip, e->r->s + zoff, slen);
    for (j = 0; rc == ONCE_OK && j < e->nev; j++) {
        const char *text = ev_next(e->ev, &pos, &gen);
        rc = once__zip_add(&ms->zip, text, strlen(text) + 1);
    }
    return rc == ONCE_OK ? once__zip_end(&ms->zip, zlen) : rc;
}

/* Sizes of warm record r: the bytes kept as they are (the strings before
 * S_FIRST_ZIP) and the strings deflated. */
static void rec_sizes(const mem_rec *r, size_t *zoff, size_t *slen)
{
    *zoff = *slen = 0;
    for (int i = 0; i < S_COUNT; i++) {   /* packed in this order, back to back */
        size_t l = r->off[i] == S_NULL ? 0 : strlen(r->s + r->off[i]) + 1;
        if (i < S_FIRST_ZIP)
            *zoff += l;
        else
            *slen += l;
    }
}

/* e (a snapshot the cooler owns, see cool) deflated into a cold record
 * *out, or *out NULL when it stays warm: deflating would not make it
 * smaller, or its events are not numbered 1..nev (as the store always
 * writes them), since they go in as their texts alone. ONCE_OK or
 * ONCE_ENOMEM. Outside the lock: only the cooler uses ms->zip's
 * deflater; readers inflate under the lock with its inflater. */
static int cold_copy(mem_store *ms, const mem_entry *e, mem_rec **out)
{
    const mem_rec *r = e->r;
    size_t zoff, slen, raw, zlen, pos = 0, j;
    int64_t gen;
    mem_rec *c, *cut;

    *out = NULL;
    rec_sizes(r, &zoff, &slen);
    for (j = 0; j < e->nev; j++) {
        (void)ev_next(e->ev, &pos, &gen);
        if (gen != (int64_t)j + 1)
            return ONCE_OK;
    }
    raw = slen + e->evlen - EV_HEAD * e->nev;
    if (raw >= UINT32_MAX)
        return ONCE_OK;
    if (!(c = once_malloc(sizeof *c + zoff + raw)))
        return ONCE_ENOMEM;
    int rc = zip_entry(ms, e, zoff, slen, (unsigned char *)c->s + zoff, raw, &zlen);
    if (rc != ONCE_OK) {
        once_free(c);
        return rc == ONCE_ENOMEM ? rc : ONCE_OK;
    }
    memcpy(c, r, sizeof *c + zoff);
    for (int i = S_FIRST_ZIP; i < S_COUNT; i++)
        if (c->off[i] != S_NULL)
            c->off[i] -= (uint32_t)zoff;
    c->zoff = (uint32_t)zoff;
    c->zlen = (uint32_t)zlen;
    c->zraw = (uint32_t)raw;
    c->size = (uint32_t)(sizeof *c + zoff + raw);
    if ((cut = once_realloc(c, sizeof *c + zoff + zlen)) != NULL) {
        c = cut;
        c->size = (uint32_t)(sizeof *c + zoff + zlen);
    }
    *out = c;
    return ONCE_OK;
}

/* Under the lock: a copy of warm e's record and events for cold_copy
 * (snap's r and ev are the cooler's to free). ONCE_OK or ONCE_ENOMEM. */
static int snapshot(const mem_entry *e, mem_entry *snap)
{
    size_t zoff, slen;
    rec_sizes(e->r, &zoff, &slen);
    memset(snap, 0, sizeof *snap);
    snap->r = once_malloc(sizeof *e->r + zoff + slen);
    snap->ev = e->evlen > 0 ? once_malloc(e->evlen) : NULL;
    if (!snap->r || (e->evlen > 0 && !snap->ev)) {
        once_free(snap->r);
        once_free(snap->ev);
        return ONCE_ENOMEM;
    }
    memcpy(snap->r, e->r, sizeof *e->r + zoff + slen);
    if (e->evlen > 0)
        memcpy(snap->ev, e->ev, e->evlen);
    snap->evlen = e->evlen;
    snap->nev = e->nev;
    return ONCE_OK;
}

/* Deflate the tasks that finished before cold_before, from the entry after
 * the one the cooler passed last (a sweep runs on the sweeper's thread).
 * The lock is held only to copy entries out, COOL_BATCH at a time, and to
 * put their cold records in (each only if the entry is still the one
 * copied: same record, same version), so requests never wait for a
 * deflate, and a pass over tens of thousands of tasks takes the lock twice
 * per batch, not twice per task. An entry placed behind the cooler
 * (finished earlier than one it passed, or updated after it cooled) stays
 * warm until swept. Out of memory ends the pass where it was: the next
 * sweep starts there again; so does having deflated `max` entries. 1 when
 * the pass reached the end (every task finished before cold_before is
 * cold), else 0. */
enum { COOL_BATCH = 32 };

typedef struct {
    mem_entry *e;       /* compared after the lock was let go, not followed */
    const mem_rec *was;
    int64_t version;
    mem_entry snap;     /* the copy deflated outside the lock */
    mem_rec *cold;      /* its cold record, NULL: it stays warm */
} cool_item;

static int cool_locked(mem_store *ms, int64_t cold_before, size_t max);

static int cool(mem_store *ms, int64_t cold_before, size_t max)
{
    pthread_mutex_lock(&ms->cool_mu);
    int done = cool_locked(ms, cold_before, max);
    pthread_mutex_unlock(&ms->cool_mu);
    return done;
}

/* Under the lock: of the next `want` entries after the cooler's place,
 * copy out the warm ones (into it[0..*n)) and step the place past the cold
 * ones in front of them; a cold entry after a copied one ends the batch
 * (the place moves only over entries swapped in, see cool_swap). *seen
 * counts the entries passed; *end is set when the list's end or a task
 * finished at or after cold_before was reached. ONCE_ENOMEM when a copy
 * failed (the ones before it are in it[]). */
static int cool_collect(mem_store *ms, int64_t cold_before, cool_item *it, size_t want,
                        size_t *n, size_t *seen, int *end)
{
    mem_entry *e = ms->cooled ? ms->cooled->qnext : ms->finished.qnext;

    *n = 0;
    for (size_t passed = 0; passed < want; passed++, e = e->qnext) {
        if (e == &ms->finished || e->r->finished_at >= cold_before) {
            *end = 1;
            return ONCE_OK;
        }
        if (e->r->zlen) {   /* cold already */
            if (*n > 0)
                return ONCE_OK;
            ms->cooled = e;
            (*seen)++;
            continue;
        }
        cool_item *c = &it[*n];
        c->e = e;
        c->was = e->r;
        c->version = e->r->version;
        c->cold = NULL;
        if (snapshot(e, &c->snap) != ONCE_OK)
            return ONCE_ENOMEM;
        (*n)++;
        (*seen)++;
    }
    return ONCE_OK;
}

/* Under the lock: put the cold records of it[0..n) in, each where its entry
 * is still the one copied (it may have been updated, swept or purged
 * meanwhile: looked up again by the copy's key). The cooler's place moves
 * over the entries in order while each is still there. */
static void cool_swap(mem_store *ms, cool_item *it, size_t n)
{
    int in_order = 1;

    for (size_t i = 0; i < n; i++) {
        mem_entry *e = it[i].e;
        const mem_rec *r = it[i].snap.r;
        mem_entry *now = find_live(ms, rec_str(r, S_PRINCIPAL), rec_str(r, S_TASK_ID));
        if (now != e || e->r != it[i].was || e->r->version != it[i].version) {
            in_order = 0;
            continue;
        }
        if (it[i].cold != NULL) {
            account(ms, e, 0);
            once_free(e->r);
            once_free(e->ev);
            e->r = it[i].cold;
            e->ev = NULL;
            e->evcap = 0;
            it[i].cold = NULL;
            account(ms, e, 1);
            ms->cools++;
        }
        if (in_order)
            ms->cooled = e;
    }
}

/* Every COOL_EVERY-th write that finishes a task deflates up to twice as
 * many of the tasks that went cold (finished cold_ms before it did), so
 * that deflating keeps the pace tasks finish at, spread over the writes,
 * rather than running as one burst a second on the sweeper's thread: at
 * half of saturation that burst (tens of thousands of tasks) took one of
 * two CPUs for a good part of a second and the requests queued behind it
 * (bench/README.md, the memory store's tail). In steps of a few dozen, not
 * one or two per write: each step has a fixed cost (two trips through the
 * store's lock, the deflater's tables brought into this CPU's cache), and
 * steps of two per write measured 20-30% off the saturated rate. Twice
 * the pace lets it catch up after a pause; the sweep's pass
 * deflates whatever is left. One cooler at a time: a write that finds
 * another one at it goes on without. */
enum { COOL_EVERY = 16 };

static void cool_step(mem_store *ms, int64_t finished_at)
{
    if (ms->cold_ms < 0 || __atomic_add_fetch(&ms->finishes, 1, __ATOMIC_RELAXED) % COOL_EVERY != 0 ||
        pthread_mutex_trylock(&ms->cool_mu) != 0)
        return;
    (void)cool_locked(ms, finished_at - ms->cold_ms, 2 * COOL_EVERY);
    pthread_mutex_unlock(&ms->cool_mu);
}

/* cool, under cool_mu. */
static int cool_locked(mem_store *ms, int64_t cold_before, size_t max)
{
    cool_item it[COOL_BATCH];
    size_t seen = 0;
    int end = 0;

    while (!end && seen < max) {
        size_t n, want = max - seen < COOL_BATCH ? max - seen : COOL_BATCH, deflated = 0;
        pthread_mutex_lock(&ms->lock);
        int rc = cool_collect(ms, cold_before, it, want, &n, &seen, &end);
        pthread_mutex_unlock(&ms->lock);
        while (rc == ONCE_OK && deflated < n) {
            rc = cold_copy(ms, &it[deflated].snap, &it[deflated].cold);
            if (rc == ONCE_OK)
                deflated++;
        }
        if (deflated > 0) {
            pthread_mutex_lock(&ms->lock);
            cool_swap(ms, it, deflated);
            pthread_mutex_unlock(&ms->lock);
        }
        for (size_t i = 0; i < n; i++) {
            once_free(it[i].cold);
            once_free(it[i].snap.r);
            once_free(it[i].snap.ev);
        }
        if (rc != ONCE_OK)
            return 0;
    }
    return end;
}

/* ------------------------------------------------------------------------
 * Tombstones.
 */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A tombstone for e, entombed at `now`, or NULL when out of memory
 * (inflating a cold e's digests included). */
static mem_tomb *tomb_make(mem_store *ms, const mem_entry *e, int64_t now)
{
    const char *p = rec_str(e->r, S_PRINCIPAL), *id = rec_str(e->r, S_TASK_ID);
    char first[ONCE_DIGEST_HEX + 1];
    size_t pl = strlen(p) + 1, il = strlen(id) + 1, dl = 0, i;
    int kind = DIGEST_BIN;
    mem_thaw th;
    mem_tomb *t;

    if (thaw(ms, e, &th) != ONCE_OK)
        return NULL;
    once__digests_first(th.v.digests, first);
    thaw_done(&th);
    for (i = 0; i < ONCE_DIGEST_HEX && kind == DIGEST_BIN; i++)
        if (hexval(first[i]) < 0)
            kind = DIGEST_TEXT;
    if (!first[0])
        kind = DIGEST_NONE;
    if (kind == DIGEST_TEXT)
        dl = strlen(first) + 1;
    if (!(t = once_malloc(sizeof *t + pl + il + dl)))
        return NULL;
    memset(t, 0, sizeof *t);
    t->n.hash = e->n.hash;
    t->n.is_tomb = 1;
    t->n.digest_kind = (uint8_t)kind;
    t->finished_at = e->r->finished_at;
    t->expired_at = now;
    for (i = 0; kind == DIGEST_BIN && i < sizeof t->digest; i++)
        t->digest[i] = (unsigned char)(hexval(first[2 * i]) << 4 | hexval(first[2 * i + 1]));
    memcpy(t->key, p, pl);
    memcpy(t->key + pl, id, il);
    if (dl)
        memcpy(t->key + pl + il, first, dl);
    return t;
}

/* What t holds, as the budget counts it. */
static size_t tomb_bytes(const mem_tomb *t)
{
    const char *id = node_task_id(&t->n);
    size_t n = sizeof *t + strlen(t->key) + 1 + strlen(id) + 1;

    if (t->n.digest_kind == DIGEST_TEXT)
        n += strlen(id + strlen(id) + 1) + 1;
    return chunk(n);
}

/* The compact tombstones' share of bytes, after they changed from `was`. */
static void ctombs_account(mem_store *ms, size_t was)
{
    size_t now = once__mem_tombs_bytes(&ms->ctombs);

    ms->bytes = ms->bytes - was + now;
    ms->tomb_bytes = ms->tomb_bytes - was + now;
}

/* A compact tombstone as the slots answer it: the key asked for (its hash
 * matched) and expired_at; finished_at 0 and no first digest (not kept). */
static void ctomb_fill(const mem_ctomb *c, const char *principal, const char *task_id,
                       once_tombstone *out)
{
    memset(out, 0, sizeof *out);
    once__strlcpy(out->principal, principal, sizeof out->principal);
    once__strlcpy(out->task_id, task_id, sizeof out->task_id);
    out->expired_at = c->expired_at;
}

static void tomb_fill(const mem_tomb *t, once_tombstone *out)
{
    static const char hex[] = "0123456789abcdef";
    const char *id = node_task_id(&t->n);
    size_t i;

    memset(out, 0, sizeof *out);
    once__strlcpy(out->principal, t->key, sizeof out->principal);
    once__strlcpy(out->task_id, id, sizeof out->task_id);
    if (t->n.digest_kind == DIGEST_TEXT)
        once__strlcpy(out->first_digest, id + strlen(id) + 1, sizeof out->first_digest);
    for (i = 0; t->n.digest_kind == DIGEST_BIN && i < sizeof t->digest; i++) {
        out->first_digest[2 * i] = hex[t->digest[i] >> 4];
        out->first_digest[2 * i + 1] = hex[t->digest[i] & 15];
    }
    out->finished_at = t->finished_at;
    out->expired_at = t->expired_at;
}

/* Make room in *v, an array of n elements of `size` bytes each with room
 * for *cap, for one more. Nothing changes on failure. */
static int room_for_one(void **v, size_t *cap, size_t n, size_t size)
{
    size_t nc = *cap ? *cap * 2 : 16;
    void *g;

    if (n < *cap)
        return ONCE_OK;
    if (!(g = once_realloc(*v, nc * size)))
        return ONCE_ENOMEM;
    *v = g;
    *cap = nc;
    return ONCE_OK;
}

/* The n finds of a scan in buf, `size` bytes each, sorted by cmp and cut
 * to the first max (*n says how many are kept), and the zeroed result
 * array for them, out_size bytes an element, that the caller fills in
 * sorted order; NULL when out of memory. */
static void *sort_first(void *buf, size_t *n, size_t size, int (*cmp)(const void *, const void *),
                        size_t max, size_t out_size)
{
    qsort(buf, *n, size, cmp);
    if (*n > max)
        *n = max;
    return once_calloc(*n, out_size);
}

/* ------------------------------------------------------------------------
 * Push rows.
 */

/* The elements of rec->push_json and room for their rows, prepared outside
 * the lock so that applying them under it cannot fail. */
typedef struct push_prep {
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t n;
    once_push_row *rows;      /* n rows, or NULL when n == 0 */
} push_prep;

static int push_prepare(const once_record *rec, push_prep *p)
{
    int rc = once__push_elems(rec->push_json, p->el, &p->n);
    p->rows = NULL;
    if (rc != ONCE_OK)
        return rc;
    if (p->n && !(p->rows = once_calloc(p->n, sizeof *p->rows)))
        return ONCE_ENOMEM;
    return ONCE_OK;
}

/* Under the lock: reshape e's rows for its new record (target = its
 * generation). The old array goes back in p->rows for freeing outside. */
static void push_apply(mem_store *ms, mem_entry *e, push_prep *p)
{
    once_push_row *old = e->push;
    once__push_sync(old, e->npush, p->el, p->n, e->r->generation, p->rows);
    ms->push_rows -= e->npush;
    e->push = p->n ? p->rows : NULL;
    e->npush = p->n;
    ms->push_rows += e->npush;
    if (!p->n)
        once_free(p->rows);
    p->rows = old;
}

/* ------------------------------------------------------------------------ */

/* p's value as a size: digits and an optional K, M or G (powers of 1024),
 * 64 KiB .. 1 TiB, or "off" (0). 0 and *out, or -1. */
static int url_size(const once__url_param *p, size_t *out)
{
    char buf[24], *end;
    unsigned long long v, unit = 1;
    size_t n;

    if (once__url_param_val_is(p, "off")) {
        *out = 0;
        return 0;
    }
    if (once__url_param_copy(p, buf, sizeof buf) != 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    v = strtoull(buf, &end, 10);
    n = strlen(end);
    if (n == 1 && (*end == 'K' || *end == 'k'))
        unit = 1ull << 10;
    else if (n == 1 && (*end == 'M' || *end == 'm'))
        unit = 1ull << 20;
    else if (n == 1 && (*end == 'G' || *end == 'g'))
        unit = 1ull << 30;
    else if (n != 0)
        return -1;
    if (v > (1ull << 40) / unit || v * unit < (1ull << 16) || v * unit > SIZE_MAX)
        return -1;
    *out = (size_t)(v * unit);
    return 0;
}

static int mem_open(const char *url, const once_store_options *opt, once_store **out,
                    char *errbuf, size_t errlen)
{
    mem_store *ms;

    (void)opt;
    *out = NULL;
    if (strncmp(url, "memory:", 7) != 0) {
        once__store_errbuf(errbuf, errlen, "memory store URL must start with memory:");
        return ONCE_EINVAL;
    }
    /* memory:?cold=MS|off: when finished tasks are deflated (MEM_COLD_MS). */
    int64_t cold_ms = MEM_COLD_MS;
    size_t max_bytes = 0, size;
    int compact = 0;
    const char *q = strchr(url, '?');
    size_t label = q != NULL ? (size_t)(q - url) - 7 : strlen(url + 7);
    if (label > 0) {
        once__store_errbuf(errbuf, errlen,
                           "memory store URL: unknown text %.*s after memory: (the settings "
                           "go after '?': memory:?max=64M&cold=off)",
                           (int)(label > 64 ? 64 : label), url + 7);
        return ONCE_EINVAL;
    }
    q = q != NULL ? q + 1 : NULL;
    once__url_param p;
    while (once__url_param_next(&q, &p)) {
        long long v;
        if (once__url_param_is(&p, "cold") && once__url_param_val_is(&p, "off")) {
            cold_ms = -1;
        } else if (once__url_param_is(&p, "cold") &&
                   once__url_param_num(&p, 0, 86400000LL, &v) == 0) {
            cold_ms = v;
        } else if (once__url_param_is(&p, "max") && url_size(&p, &size) == 0) {
            max_bytes = size;
        } else if (once__url_param_is(&p, "tombs") &&
                   (once__url_param_val_is(&p, "compact") || once__url_param_val_is(&p, "full"))) {
            compact = once__url_param_val_is(&p, "compact");
        } else {
            once__store_errbuf(errbuf, errlen,
                               "memory store URL: unknown or bad parameter %.*s (known: "
                               "cold=MILLISECONDS|off, max=SIZE[K|M|G]|off (64K..1024G), "
                               "tombs=full|compact)",
                               (int)p.klen, p.key);
            return ONCE_EINVAL;
        }
    }
    ms = once_calloc(1, sizeof *ms);
    if (!ms || !(ms->tab = once_calloc(MEM_INITIAL_BUCKETS, sizeof *ms->tab))) {
        once_free(ms);
        once__store_errbuf(errbuf, errlen, "memory store: out of memory");
        return ONCE_ENOMEM;
    }
    ms->ntab = MEM_INITIAL_BUCKETS;
    ms->bytes = chunk(MEM_INITIAL_BUCKETS * sizeof *ms->tab);
    ms->cold_ms = cold_ms;
    ms->max_bytes = max_bytes;
    ms->compact = compact;
    int locks = pthread_mutex_init(&ms->lock, NULL) == 0;
    if (locks && pthread_mutex_init(&ms->cool_mu, NULL) != 0) {
        pthread_mutex_destroy(&ms->lock);
        locks = 0;
    }
    if (!locks) {
        once_free(ms->tab);
        once_free(ms);
        once__store_errbuf(errbuf, errlen, "memory store: pthread_mutex_init failed");
        return ONCE_ERROR;
    }
    list_init(&ms->active);
    list_init(&ms->finished);
    ms->base.m = &once__store_memory;
    *out = &ms->base;
    return ONCE_OK;
}

static void node_free(mem_node *n)
{
    if (n->is_tomb)
        once_free(n);
    else
        entry_free((mem_entry *)n);
}

/* Free the nodes chained from n through next: a bucket at close, or what
 * a sweep or purge took out of the table under the lock (no bucket holds
 * those any more, so their next is free to chain them), freed after it. */
static void chain_free(mem_node *n)
{
    mem_node *next;

    for (; n; n = next) {
        next = n->next;
        node_free(n);
    }
}

static int mem_close(once_store *s)
{
    mem_store *ms = (mem_store *)s;
    mem_meta *m, *mn;
    size_t i;

    for (i = 0; i < ms->ntab; i++)
        chain_free(ms->tab[i]);
    for (m = ms->meta; m; m = mn) {
        mn = m->next;
        once_free(m->name);
        once_free(m->value);
        once_free(m);
    }
    once_free(ms->tab);
    for (i = 0; i < ms->nptab; i++)
        for (mem_plist *pl = ms->ptab[i], *next; pl; pl = next) {
            next = pl->next;
            once_free(pl);
        }
    once_free(ms->ptab);
    once_replica_list_clear(&ms->replicas);
    once__mem_tombs_free(&ms->ctombs);
    once__zip_free(&ms->zip);
    pthread_mutex_destroy(&ms->cool_mu);
    pthread_mutex_destroy(&ms->lock);
    once_free(ms);
    return ONCE_OK;
}

/* The answer to a create or load of a key that holds n (non-NULL). */
static int held(mem_store *ms, const mem_node *n, once_record *winner, once_tombstone *tomb)
{
    int rc;

    if (n->is_tomb) {
        if (tomb)
            tomb_fill((const mem_tomb *)n, tomb);
        return ONCE_ETOMBSTONE;
    }
    rc = winner ? entry_load(ms, (const mem_entry *)n, winner) : ONCE_OK;
    return rc == ONCE_OK ? ONCE_EEXISTS : rc;
}

/* Under the lock, for a key the table does not hold: 1 if a compact
 * tombstone holds it (h: its hash, made when ms->compact), with *tomb (if
 * non-NULL) filled; else 0. */
static int ctomb_held(mem_store *ms, const char *principal, const char *task_id,
                      const uint64_t h[2], once_tombstone *tomb)
{
    const mem_ctomb *c = ms->compact ? once__mem_tombs_find(&ms->ctombs, h) : NULL;

    if (c && tomb)
        ctomb_fill(c, principal, task_id, tomb);
    return c != NULL;
}

static int make_room(mem_store *ms, size_t need, const mem_entry *keep, int64_t now,
                     mem_node **gone);

/* Under the lock, for a key the table does not hold (h: its compact hash,
 * when ms->compact), before e is stored: ONCE_ETOMBSTONE when a compact
 * tombstone holds it; ONCE_EBUSY when e does not fit the budget even with
 * every finished task expired (tombstones and running tasks hold it all);
 * ONCE_ENOMEM when a tombstone could not be made; else ONCE_OK. What
 * make_room expired is on *gone either way. */
static int refused(mem_store *ms, const char *principal, const char *task_id,
                   const uint64_t h[2], once_tombstone *tomb, const mem_entry *e, int64_t now,
                   mem_node **gone)
{
    if (ctomb_held(ms, principal, task_id, h, tomb))
        return ONCE_ETOMBSTONE;
    int rc = make_room(ms, entry_bytes(e) + table_growth(ms) + plist_growth(ms, principal), NULL,
                       now, gone);
    if (rc == ONCE_EBUSY)
        once__store_seterr(&ms->base,
                           "memory store full: %zu bytes held (%zu of them by tombstones) "
                           "and no finished task left to expire within its %zu-byte budget "
                           "(memory:?max); new tasks are refused until running tasks finish "
                           "or --tombstone-retention purges tombstones",
                           ms->bytes, ms->tomb_bytes, ms->max_bytes);
    return rc;
}

static int mem_create(once_store *s, const once_record *rec, const once_event *ev, size_t nev,
                      once_record *winner, once_tombstone *tomb)
{
    mem_store *ms = (mem_store *)s;
    mem_node **slot;
    mem_entry *e;
    push_prep pp = {.n = 0, .rows = NULL};
    int rc = ONCE_OK;

    if (winner)
        memset(winner, 0, sizeof *winner);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    e = once_calloc(1, sizeof *e);
    if (!e)
        return ONCE_ENOMEM;
    e->r = rec_pack(rec);
    rc = e->r ? ev_pack(ev, nev, &e->ev, &e->evlen) : ONCE_ENOMEM;
    if (rc == ONCE_OK)
        rc = push_prepare(rec, &pp);
    if (rc != ONCE_OK) {
        once_free(pp.rows);
        entry_free(e);
        return rc;
    }
    e->evcap = e->evlen;
    e->nev = nev;
    e->n.hash = (uint32_t)key_hash(rec->principal, rec->task_id);

    uint64_t h[2] = {0, 0};
    if (ms->compact)
        once__mem_tombs_key(rec->principal, rec->task_id, h);

    mem_node *gone = NULL;
    pthread_mutex_lock(&ms->lock);
    slot = find_slot(ms, rec->principal, rec->task_id, e->n.hash);
    if (*slot ||
        (rc = refused(ms, rec->principal, rec->task_id, h, tomb, e, rec->updated_at, &gone)) !=
            ONCE_OK) {
        if (*slot)
            rc = held(ms, *slot, winner, tomb);
        pthread_mutex_unlock(&ms->lock);
        chain_free(gone);
        once_free(pp.rows);
        entry_free(e);
        return rc;
    }
    /* make_room may have expired the key's chain neighbours: find the
     * slot again (the key is still absent). */
    slot = find_slot(ms, rec->principal, rec->task_id, e->n.hash);
    mem_plist *pl = plist_get(ms, rec->principal);
    if (!pl) {
        pthread_mutex_unlock(&ms->lock);
        chain_free(gone);
        once_free(pp.rows);
        entry_free(e);
        return ONCE_ENOMEM;
    }
    push_apply(ms, e, &pp);   /* no old rows: nothing comes back */
    *slot = &e->n;
    ms->count++;
    ms->live++;
    list_place(ms, e);
    plist_insert(pl, e);
    account(ms, e, 1);
    maybe_grow(ms);
    pthread_mutex_unlock(&ms->lock);
    chain_free(gone);
    if (once_state_terminal(rec->state))
        cool_step(ms, rec->finished_at);
    return ONCE_OK;
}

static int mem_load(once_store *s, const char *principal, const char *task_id, once_record *out,
                    once_tombstone *tomb)
{
    mem_store *ms = (mem_store *)s;
    mem_node *n;
    int rc;

    memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    uint64_t h[2] = {0, 0};
    if (ms->compact)
        once__mem_tombs_key(principal, task_id, h);
    pthread_mutex_lock(&ms->lock);
    n = find(ms, principal, task_id);
    if (!n)
        rc = ctomb_held(ms, principal, task_id, h, tomb) ? ONCE_ETOMBSTONE : ONCE_ENOTFOUND;
    else if (n->is_tomb)
        rc = held(ms, n, NULL, tomb);
    else
        rc = entry_load(ms, (mem_entry *)n, out);
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

/* Every key's generation under one hold of the lock: several engines in
 * one process may share a memory store, and each learns of the others'
 * writes through its shared poller (engine/feed.c). */
static int mem_generations(once_store *s, const once_key *keys, size_t n, int64_t *gens)
{
    mem_store *ms = (mem_store *)s;
    pthread_mutex_lock(&ms->lock);
    for (size_t i = 0; i < n; i++) {
        const mem_entry *e = find_live(ms, keys[i].principal, keys[i].task_id);
        gens[i] = e != NULL ? e->r->generation : -1;
    }
    pthread_mutex_unlock(&ms->lock);
    return ONCE_OK;
}

static int mem_update(once_store *s, const once_record *rec, int64_t expect_version,
                      const once_event *ev, size_t nev)
{
    mem_store *ms = (mem_store *)s;
    mem_rec *nr, *old = NULL;
    char *nv = NULL;
    size_t nvlen = 0;
    push_prep pp = {.n = 0, .rows = NULL};
    mem_node *gone = NULL;
    mem_entry *e;
    int rc;

    if (!(nr = rec_pack(rec)))
        return ONCE_ENOMEM;
    rc = ev_pack(ev, nev, &nv, &nvlen);
    if (rc == ONCE_OK)
        rc = push_prepare(rec, &pp);
    if (rc != ONCE_OK) {
        once_free(nr);
        once_free(nv);
        once_free(pp.rows);
        return rc;
    }

    pthread_mutex_lock(&ms->lock);
    e = find_live(ms, rec->principal, rec->task_id);
    if (!e || e->r->version != expect_version) {
        once__store_seterr(s, "update of %s: %s", rec->task_id,
                           !e ? "no record" : "version moved");
        rc = ONCE_ECONFLICT;
    } else {
        rc = once__store_valid_events(s, e->r->generation, rec, ev, nev);
    }
    if (rc == ONCE_OK && ms->max_bytes) {
        /* Room for what the update adds, made as a create makes it; an
         * admitted task's write is never refused for want of it. */
        size_t grows = chunk(nr->size) > chunk(e->r->size) ? chunk(nr->size) - chunk(e->r->size) : 0;
        (void)make_room(ms, grows + nvlen, e, rec->updated_at, &gone);
    }
    if (e)   /* out at what it holds now, in again at what it holds after */
        account(ms, e, 0);
    if (rc == ONCE_OK)
        rc = ev_reserve(ms, e, nvlen);
    if (rc == ONCE_OK) {
        /* Same list, same place unless the state or finished_at moved. */
        int moves = rec_terminal(e->r) != rec_terminal(nr) ||
                    (rec_terminal(nr) && e->r->finished_at != nr->finished_at);
        if (nvlen)
            memcpy(e->ev + e->evlen, nv, nvlen);
        e->evlen += nvlen;
        e->nev += nev;
        old = e->r;
        e->r = nr;
        nr = NULL;
        push_apply(ms, e, &pp);
        if (moves) {
            queue_unlink(ms, e);
            list_place(ms, e);
        } else if (rec_terminal(e->r)) {
            ev_compact(e);   /* events added to a finished task */
        }
    }
    if (e)   /* ev_reserve may have thawed it even when the update failed */
        account(ms, e, 1);
    pthread_mutex_unlock(&ms->lock);

    chain_free(gone);
    once_free(pp.rows);      /* the old rows, or the unused new ones */
    if (rc == ONCE_OK && once_state_terminal(rec->state) && !(old && rec_terminal(old)))
        cool_step(ms, rec->finished_at);
    once_free(old);
    once_free(nr);
    once_free(nv);
    return rc;
}

static int mem_events(once_store *s, const char *principal, const char *task_id, int64_t after,
                      size_t max, once_event_list *out)
{
    mem_store *ms = (mem_store *)s;
    size_t pos = 0, n = 0, i, start = 0;
    int64_t gen;
    mem_entry *e;
    mem_thaw t = {.ev = NULL, .buf = NULL};
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ms->lock);
    e = find_live(ms, principal, task_id);
    if (e && e->nev)
        rc = thaw(ms, e, &t);
    /* The events after `after` are a tail of the buffer: find where it
     * starts and how many there are. */
    for (i = 0; rc == ONCE_OK && e && i < e->nev; i++) {
        size_t at = pos;
        (void)ev_next(t.ev, &pos, &gen);
        if (gen <= after)
            continue;
        if (n++ == 0)
            start = at;
    }
    if (max && n > max)
        n = max;
    if (n && !(out->v = once_calloc(n, sizeof *out->v)))
        rc = ONCE_ENOMEM;
    for (pos = start, i = 0; rc == ONCE_OK && i < n; i++) {
        const char *text = ev_next(t.ev, &pos, &gen);
        out->v[i].generation = gen;
        out->v[i].payload = once_strdup(text);
        out->n = i + 1;
        if (!out->v[i].payload)
            rc = ONCE_ENOMEM;
    }
    pthread_mutex_unlock(&ms->lock);
    thaw_done(&t);
    if (rc != ONCE_OK)
        once_event_list_clear(out);
    return rc;
}

static int cmp_lease(const void *a, const void *b)
{
    const mem_entry *x = *(mem_entry *const *)a, *y = *(mem_entry *const *)b;
    int c = cmp_i64(x->r->lease_until, y->r->lease_until);
    return c ? c : cmp_key(&x->n, &y->n);
}

/* Only the active list can hold an expired lease (a terminal record's
 * lease is never taken over), so that is all this looks at. */
static int mem_expired_leases(once_store *s, int64_t now, size_t max, once_key_list *out)
{
    mem_store *ms = (mem_store *)s;
    void *buf = NULL;
    mem_entry **v, *e;
    size_t n = 0, cap = 0, i;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    for (e = ms->active.qnext; rc == ONCE_OK && e != &ms->active; e = e->qnext) {
        ms->visits++;
        if (e->r->lease_until <= 0 || e->r->lease_until >= now)
            continue;
        if ((rc = room_for_one(&buf, &cap, n, sizeof e)) == ONCE_OK)
            ((mem_entry **)buf)[n++] = e;
    }
    v = buf;
    if (rc == ONCE_OK && n) {
        if (!(out->v = sort_first(v, &n, sizeof *v, cmp_lease, max, sizeof *out->v)))
            rc = ONCE_ENOMEM;
        for (i = 0; rc == ONCE_OK && i < n; i++) {
            once__strlcpy(out->v[i].principal, node_principal(&v[i]->n), sizeof out->v[i].principal);
            once__strlcpy(out->v[i].task_id, node_task_id(&v[i]->n), sizeof out->v[i].task_id);
            out->n = i + 1;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(buf);
    if (rc != ONCE_OK)
        once_key_list_clear(out);
    return rc;
}

/* Arguments were checked by once_store_renew. Only lease_until changes, so
 * the entry stays where it is on its list. */
static int mem_renew(once_store *s, const char *principal, const char *task_id,
                     const char *owner, int64_t fence, int64_t until)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e;
    int renewed;

    pthread_mutex_lock(&ms->lock);
    e = find_live(ms, principal, task_id);
    renewed = e && e->r->fence == fence && strcmp(rec_str(e->r, S_LEASE_OWNER), owner) == 0 &&
              once__state_renewable((once_state)e->r->state);
    if (renewed)
        e->r->lease_until = until;
    pthread_mutex_unlock(&ms->lock);
    return once__store_renew_result(s, task_id, renewed, e != NULL);
}

/* Under the lock: e's tombstone in its place -- a node in e's hash slot,
 * or a compact one with e out of the table -- and e off its list and out
 * of the budget's count; the caller frees e. ONCE_OK, or ONCE_ENOMEM with
 * nothing changed. */
static int entomb(mem_store *ms, mem_entry *e, int64_t now)
{
    const char *principal = node_principal(&e->n), *task_id = node_task_id(&e->n);
    mem_node **slot = find_slot(ms, principal, task_id, e->n.hash);

    if (ms->compact) {
        size_t was = once__mem_tombs_bytes(&ms->ctombs);
        uint64_t h[2];
        once__mem_tombs_key(principal, task_id, h);
        if (once__mem_tombs_add(&ms->ctombs, h, now) != ONCE_OK)
            return ONCE_ENOMEM;
        ctombs_account(ms, was);
        *slot = e->n.next;
        ms->count--;
    } else {
        mem_tomb *t = tomb_make(ms, e, now);
        if (!t)
            return ONCE_ENOMEM;
        t->n.next = e->n.next;
        *slot = &t->n;
        tomb_enqueue(ms, t);
        ms->bytes += tomb_bytes(t);
        ms->tomb_bytes += tomb_bytes(t);
    }
    account(ms, e, 0);
    ms->live--;
    queue_unlink(ms, e);
    plist_unlink(ms, e);
    ms->push_rows -= e->npush;
    return ONCE_OK;
}

/* Under the lock: the oldest finished tasks (never keep) entombed at `now`
 * until need more bytes fit the budget, each chained on *gone for the
 * caller to free outside the lock. ONCE_OK when they fit (always without a
 * budget); ONCE_EBUSY when they cannot: what running tasks and
 * tombstones hold leaves no room (checked first, so nothing is expired in
 * vain), or the finished tasks ran out; ONCE_ENOMEM when a tombstone
 * could not be allocated. */
static int make_room(mem_store *ms, size_t need, const mem_entry *keep, int64_t now,
                     mem_node **gone)
{
    mem_entry *e = ms->finished.qnext;
    int rc;

    if (!ms->max_bytes)
        return ONCE_OK;
    while (ms->bytes + need > ms->max_bytes) {
        /* What no expiry frees (running tasks, tombstones, the table, keep),
         * with what the next tombstone adds: past the budget, expiring
         * would only throw finished tasks away in vain. */
        size_t fixed = ms->bytes - ms->fin_bytes +
                       (keep && rec_terminal(keep->r) ? entry_bytes(keep) : 0) +
                       (ms->compact ? once__mem_tombs_growth(&ms->ctombs) : 0);
        if (fixed + need > ms->max_bytes)
            return ONCE_EBUSY;
        if (e == keep)
            e = e->qnext;
        if (e == &ms->finished)
            return ONCE_EBUSY;
        mem_entry *next = e->qnext;
        ms->visits++;
        if ((rc = entomb(ms, e, now)) != ONCE_OK)
            return rc;
        ms->early++;
        ms->early_last = e->r->finished_at;
        ms->pressed = 1;
        e->n.next = *gone;
        *gone = &e->n;
        e = next;
    }
    return ONCE_OK;
}

/* From the front of the finished queue, up to max: the entries that
 * finished before finished_before and, after them, more while the store
 * is over its budget. Each is entombed under the lock and freed outside
 * it; one whose tombstone cannot be allocated stays as it was. */
static int sweep_front(mem_store *ms, int64_t finished_before, int64_t now, size_t max,
                       size_t *n)
{
    mem_node *gone = NULL;
    mem_entry *e;
    int rc = ONCE_OK;

    pthread_mutex_lock(&ms->lock);
    while (*n < max && (e = ms->finished.qnext) != &ms->finished) {
        int young = e->r->finished_at >= finished_before;
        ms->visits++;
        if (young && !over_budget(ms))
            break;
        if (ms->max_bytes && ms->compact &&
            ms->bytes - entry_bytes(e) + once__mem_tombs_growth(&ms->ctombs) > ms->max_bytes)
            break;   /* the ring would grow past the budget: wait for purge */
        if ((rc = entomb(ms, e, now)) != ONCE_OK)
            break;
        if (young) {
            ms->early++;
            ms->early_last = e->r->finished_at;
        }
        e->n.next = gone;
        gone = &e->n;
        (*n)++;
    }
    pthread_mutex_unlock(&ms->lock);
    chain_free(gone);
    return rc;
}

/* Retention and, over the budget, early expiry of the oldest finished
 * tasks; then the entries that went cold since the last sweep are deflated
 * (cool). When the store was over its budget, every finished task left may
 * be deflated, but no more than max per call: expiring first keeps the
 * deflating (the costly part) to the tasks the store keeps, and the bound
 * lets the engine's next round expire again before the sweeper's thread,
 * which may get little of a busy machine's CPU, spends long deflating. */
static int mem_sweep(once_store *s, int64_t finished_before, int64_t now, size_t max, size_t *n)
{
    mem_store *ms = (mem_store *)s;
    int rc, over;

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    over = ms->pressed || over_budget(ms);
    pthread_mutex_unlock(&ms->lock);
    rc = sweep_front(ms, finished_before, now, max, n);
    if (ms->cold_ms >= 0 && cool(ms, over ? INT64_MAX : now - ms->cold_ms, over ? max : SIZE_MAX) &&
        over) {
        pthread_mutex_lock(&ms->lock);
        ms->pressed = 0;   /* every finished task is cold: nothing more to deflate */
        pthread_mutex_unlock(&ms->lock);
    }
    return rc;
}

/* From the front of the purge queue (or of the compact tombstones' ring),
 * oldest expired_at first. */
static int mem_purge(once_store *s, int64_t expired_before, size_t max, size_t *n)
{
    mem_store *ms = (mem_store *)s;
    mem_node *gone = NULL;
    mem_tomb *t;
    const mem_ctomb *c;

    *n = 0;
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    size_t was = once__mem_tombs_bytes(&ms->ctombs);
    while (ms->compact && *n < max && (c = once__mem_tombs_oldest(&ms->ctombs)) != NULL) {
        ms->visits++;
        if (c->expired_at >= expired_before)
            break;
        once__mem_tombs_pop(&ms->ctombs);
        (*n)++;
    }
    ctombs_account(ms, was);
    while (*n < max && (t = ms->tomb_head) != NULL) {
        mem_node **slot;
        ms->visits++;
        if (t->expired_at >= expired_before)
            break;
        slot = find_slot(ms, t->key, node_task_id(&t->n), t->n.hash);
        *slot = t->n.next;
        ms->count--;
        ms->bytes -= tomb_bytes(t);
        ms->tomb_bytes -= tomb_bytes(t);
        if (!(ms->tomb_head = t->qnext))
            ms->tomb_tail = NULL;
        t->n.next = gone;
        gone = &t->n;
        (*n)++;
    }
    pthread_mutex_unlock(&ms->lock);
    chain_free(gone);
    return ONCE_OK;
}

/* 1 when e sorts after the cursor (created_at, task_id). */
static int after_cursor(const mem_entry *e, int64_t created_at, const char *task_id)
{
    int c = cmp_i64(e->r->created_at, created_at);
    return c ? c > 0 : strcmp(rec_str(e->r, S_TASK_ID), task_id) > 0;
}

/* The first entry of pl after q's cursor. The cursor's own entry is found
 * by its key; if retention took it since, pl is walked from its front past
 * what is older than the cursor: tasks retention has not reached yet,
 * which it would have taken first had they finished. */
static mem_entry *list_start(mem_store *ms, const mem_plist *pl, const once_list_query *q)
{
    mem_entry *e;

    if (!q->after_task_id)
        return plink_entry(pl->l.head);
    e = find_live(ms, q->principal, q->after_task_id);
    if (e && e->r->created_at == q->after_created_at)
        return plist_next(e);
    for (e = plink_entry(pl->l.head); e && !after_cursor(e, q->after_created_at, q->after_task_id);
         e = plist_next(e))
        ;
    return e;
}

static int list_match(const mem_entry *e, const once_list_query *q)
{
    if (q->context_id && strcmp(rec_str(e->r, S_CONTEXT_ID), q->context_id) != 0)
        return 0;
    return q->state == ONCE_STATE_UNKNOWN || e->r->state == (int16_t)q->state;
}

/* A walk of the principal's list from the cursor: a page without a filter
 * costs what it returns; with one, at most ONCE_LIST_SCAN_MAX entries, then
 * the page ends where the walk stopped (store.h, the list slot). */
static int mem_list(once_store *s, const once_list_query *q, once_record_list *out)
{
    mem_store *ms = (mem_store *)s;
    const mem_entry *e, *last = NULL;
    size_t seen = 0;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (!(out->v = once_calloc(q->limit, sizeof *out->v)))
        return ONCE_ENOMEM;
    pthread_mutex_lock(&ms->lock);
    const mem_plist *pl = plist_find(ms, q->principal);
    for (e = pl ? list_start(ms, pl, q) : NULL; rc == ONCE_OK && e && out->n < q->limit;
         e = plist_next(e)) {
        if (seen++ == ONCE_LIST_SCAN_MAX)
            break;
        last = e;
        if (list_match(e, q) && (rc = entry_load(ms, e, &out->v[out->n])) == ONCE_OK)
            out->n++;
    }
    if (rc == ONCE_OK && e && last && out->n < q->limit) {
        once_record *m = &out->v[out->n++];
        m->kind = ONCE_KIND_RESUME;
        m->created_at = last->r->created_at;
        once__strlcpy(m->task_id, rec_str(last->r, S_TASK_ID), sizeof m->task_id);
    }
    pthread_mutex_unlock(&ms->lock);
    if (rc != ONCE_OK)
        once_record_list_clear(out);
    return rc;
}

static int mem_meta_get(once_store *s, const char *name, const char *init_value, char **out)
{
    mem_store *ms = (mem_store *)s;
    mem_meta *m;
    int rc = ONCE_OK;

    *out = NULL;
    pthread_mutex_lock(&ms->lock);
    for (m = ms->meta; m && strcmp(m->name, name) != 0; m = m->next)
        ;
    if (!m && !init_value) {
        rc = ONCE_ENOTFOUND;
    } else if (!m) {
        m = once_calloc(1, sizeof *m);
        if (!m || !(m->name = once_strdup(name)) || !(m->value = once_strdup(init_value))) {
            if (m)
                once_free(m->name);
            once_free(m);
            m = NULL;
            rc = ONCE_ENOMEM;
        } else {
            m->next = ms->meta;
            ms->meta = m;
        }
    }
    if (m && !(*out = once_strdup(m->value)))
        rc = ONCE_ENOMEM;
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

/* The rows must be exactly push_json's elements, in order, aimed at the
 * record's generation. */
static void check_push(once_check_report *rep, const mem_entry *e, const char *push_json)
{
    once__push_elem el[ONCE_PUSH_CONFIGS_MAX];
    size_t n = 0, i;
    int ok = once__push_elems(push_json, el, &n) == ONCE_OK && n == e->npush;

    for (i = 0; ok && i < n; i++)
        ok = strcmp(el[i].id, e->push[i].config_id) == 0 &&
             e->push[i].target == e->r->generation && e->push[i].delivered <= e->push[i].target;
    if (!ok) {
        rep->bad_push++;
        once__check_problem(rep, "%s/%s: delivery rows disagree with push_json",
                            rec_str(e->r, S_PRINCIPAL), rec_str(e->r, S_TASK_ID));
    }
}

/* One live entry, inflated when cold (so a cold entry's text is checked
 * too). ONCE_ENOMEM when that fails. */
static int check_entry(mem_store *ms, once_check_report *rep, const mem_entry *e)
{
    mem_thaw t;
    size_t pos = 0, j;
    int64_t gen = 0;
    int gapless = 1, rc = thaw(ms, e, &t);

    if (rc != ONCE_OK)
        return rc;
    for (j = 0; j < e->nev; j++) {
        (void)ev_next(t.ev, &pos, &gen);
        if (gen != (int64_t)j + 1)
            gapless = 0;
    }
    once__check_record(rep, &t.v, e->nev, e->nev ? gen : 0, gapless);
    check_push(rep, e, t.v.push_json);
    thaw_done(&t);
    return ONCE_OK;
}

/* Every node, and the lists against the table: each live entry on the list
 * its state names, each tombstone on the purge queue, in order. ONCE_ENOMEM
 * when a cold entry cannot be inflated to be checked. */
static int mem_check(once_store *s, once_check_report *rep)
{
    mem_store *ms = (mem_store *)s;
    size_t i, live = 0, tombs = 0, listed_n = 0, queued = 0, bytes, tomb_b, fin_b = 0, cold = 0;
    const mem_entry *e;
    const mem_tomb *t;
    mem_node *n;
    int rc = ONCE_OK;

    memset(rep, 0, sizeof *rep);
    pthread_mutex_lock(&ms->lock);
    tomb_b = once__mem_tombs_bytes(&ms->ctombs);
    bytes = chunk(ms->ntab * sizeof *ms->tab) + tomb_b;
    for (i = 0; rc == ONCE_OK && i < ms->ntab; i++) {
        for (n = ms->tab[i]; rc == ONCE_OK && n; n = n->next) {
            if (n->is_tomb) {
                once_tombstone tb;
                tomb_fill((const mem_tomb *)n, &tb);
                once__check_tombstone(rep, &tb, 0);
                tombs++;
                bytes += tomb_bytes((const mem_tomb *)n);
                tomb_b += tomb_bytes((const mem_tomb *)n);
            } else {
                rc = check_entry(ms, rep, (const mem_entry *)n);
                live++;
                bytes += entry_bytes((const mem_entry *)n);
                if (rec_terminal(((const mem_entry *)n)->r))
                    fin_b += entry_bytes((const mem_entry *)n);
                cold += ((const mem_entry *)n)->r->zlen != 0;
            }
        }
    }
    size_t in_lists = 0;
    if (ms->ptab)
        bytes += chunk(ms->nptab * sizeof *ms->ptab);
    for (i = 0; i < ms->nptab; i++)
        for (const mem_plist *pl = ms->ptab[i]; pl; pl = pl->next) {
            size_t k = 0;
            bytes += plist_bytes(pl);
            for (e = plink_entry(pl->l.head); e; e = plist_next(e), k++)
                if (strcmp(rec_str(e->r, S_PRINCIPAL), pl->principal) != 0 ||
                    (e->plink.next ? e->plink.next->prev != &e->plink ||
                                         cmp_created_entry(e, plist_next(e)) >= 0
                                   : pl->l.tail != &e->plink))
                    once__check_problem(rep, "%s: out of place on its principal's list",
                                        rec_str(e->r, S_TASK_ID));
            if (k != pl->n || k == 0)
                once__check_problem(rep, "memory store: %s's list holds %zu entries, counted %zu",
                                    pl->principal, k, pl->n);
            in_lists += k;
        }
    if (rc == ONCE_OK && in_lists != live)
        once__check_problem(rep, "memory store: %zu live entries, %zu on the principals' lists",
                            live, in_lists);
    if (rc == ONCE_OK &&
        (bytes != ms->bytes || tomb_b != ms->tomb_bytes || fin_b != ms->fin_bytes))
        once__check_problem(rep, "memory store: holds %zu bytes (%zu in tombstones, %zu in "
                            "finished tasks), counted %zu (%zu, %zu)", bytes, tomb_b, fin_b,
                            ms->bytes, ms->tomb_bytes, ms->fin_bytes);
    if (rc == ONCE_OK && cold != ms->cold)
        once__check_problem(rep, "memory store: %zu tasks held deflated, counted %zu", cold,
                            ms->cold);
    for (e = ms->active.qnext; e != &ms->active; e = e->qnext, listed_n++)
        if (rec_terminal(e->r))
            once__check_problem(rep, "%s: a finished task on the active list",
                                rec_str(e->r, S_TASK_ID));
    for (e = ms->finished.qnext; e != &ms->finished; e = e->qnext, listed_n++)
        if (!rec_terminal(e->r) ||
            (e->qnext != &ms->finished && cmp_finished_entry(e, e->qnext) > 0))
            once__check_problem(rep, "%s: out of place on the finished queue",
                                rec_str(e->r, S_TASK_ID));
    for (t = ms->tomb_head; t; t = t->qnext, queued++)
        if (t->qnext && t->qnext->expired_at < t->expired_at)
            once__check_problem(rep, "%s: out of order on the purge queue", t->key);
    rep->tombstones += ms->ctombs.n;
    if (!once__mem_tombs_consistent(&ms->ctombs))
        once__check_problem(rep, "memory store: the compact tombstones' index disagrees "
                            "with their ring");
    if (rc == ONCE_OK && (listed_n != live || queued != tombs || live + tombs != ms->count ||
                          live != ms->live))
        once__check_problem(rep, "memory store: %zu live and %zu tombstones in the table, "
                            "%zu listed, %zu queued, count %zu, live %zu", live, tombs, listed_n,
                            queued, ms->count, ms->live);
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

/* One of the counters of s, read under its lock. */
static uint64_t counter(once_store *s, const uint64_t *c)
{
    mem_store *ms = (mem_store *)s;
    uint64_t v;

    pthread_mutex_lock(&ms->lock);
    v = *c;
    pthread_mutex_unlock(&ms->lock);
    return v;
}

uint64_t once__mem_visits(once_store *s)
{
    return counter(s, &((mem_store *)s)->visits);
}

uint64_t once__mem_cools(once_store *s)
{
    return counter(s, &((mem_store *)s)->cools);
}

/* The budget slot (ONCE_STORE_BUDGET): every memory: store has one, if
 * only to tell what it holds (max_bytes 0: no budget). */
static int mem_budget(once_store *s, once_budget *out, int take)
{
    mem_store *ms = (mem_store *)s;

    pthread_mutex_lock(&ms->lock);
    out->max_bytes = ms->max_bytes;
    out->bytes = ms->bytes;
    out->tomb_bytes = ms->tomb_bytes;
    out->early = ms->early;
    out->early_new = ms->early - ms->early_told;
    out->early_last = ms->early_last;
    out->live = ms->live;
    out->tombs = ms->count - ms->live + ms->ctombs.n;
    out->cold = ms->cold;
    if (take)
        ms->early_told = ms->early;
    pthread_mutex_unlock(&ms->lock);
    return ONCE_OK;
}

/* ------------------------------------------------------------------------
 * Push delivery rows.
 */

/* A due row found by a claim scan. */
typedef struct due_ref {
    mem_entry *e;
    size_t i;
} due_ref;

static int cmp_due(const void *a, const void *b)
{
    const due_ref *x = a, *y = b;
    int c = cmp_i64(x->e->push[x->i].next_attempt_at, y->e->push[y->i].next_attempt_at);
    if (!c)
        c = cmp_key(&x->e->n, &y->e->n);
    return c ? c : strcmp(x->e->push[x->i].config_id, y->e->push[y->i].config_id);
}

static int mem_push_claim(once_store *s, const char *owner, int64_t now, int64_t lease_ms,
                          size_t max, once_push_claim_list *out)
{
    mem_store *ms = (mem_store *)s;
    void *buf = NULL;
    size_t n = 0, cap = 0, b, i;
    mem_node *nd;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    if (!owner[0] || strlen(owner) > ONCE_OWNER_MAX || lease_ms <= 0) {
        once__store_seterr(s, "push_claim: owner must be 1..%d bytes, lease_ms > 0",
                           ONCE_OWNER_MAX);
        return ONCE_EINVAL;
    }
    if (max == 0)
        return ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    for (b = 0; rc == ONCE_OK && ms->push_rows > 0 && b < ms->ntab; b++) {
        for (nd = ms->tab[b]; rc == ONCE_OK && nd; nd = nd->next) {
            mem_entry *e = (mem_entry *)nd;
            for (i = 0; !nd->is_tomb && i < e->npush; i++) {
                if (!once__push_due(&e->push[i], now))
                    continue;
                if ((rc = room_for_one(&buf, &cap, n, sizeof(due_ref))) != ONCE_OK)
                    break;
                ((due_ref *)buf)[n].e = e;
                ((due_ref *)buf)[n++].i = i;
            }
        }
    }
    if (rc == ONCE_OK && n) {
        if (!(out->v = sort_first(buf, &n, sizeof(due_ref), cmp_due, max, sizeof *out->v)))
            rc = ONCE_ENOMEM;
    }
    for (i = 0; rc == ONCE_OK && i < n; i++) {
        const due_ref *d = &((const due_ref *)buf)[i];
        once_push_row *r = &d->e->push[d->i];
        once_push_claim *c = &out->v[i];
        once__strlcpy(r->lease_owner, owner, sizeof r->lease_owner);
        r->lease_until = now + lease_ms;
        once__strlcpy(c->principal, node_principal(&d->e->n), sizeof c->principal);
        once__strlcpy(c->task_id, node_task_id(&d->e->n), sizeof c->task_id);
        memcpy(c->config_id, r->config_id, sizeof c->config_id);
        c->generation = r->delivered + 1;
        c->target = r->target;
        c->attempts = r->attempts;
        c->lease_until = r->lease_until;
        out->n = i + 1;
    }
    pthread_mutex_unlock(&ms->lock);
    once_free(buf);
    return rc;
}

static once_push_row *find_row(mem_entry *e, const char *config_id)
{
    size_t i;

    for (i = 0; e && i < e->npush; i++)
        if (strcmp(e->push[i].config_id, config_id) == 0)
            return &e->push[i];
    return NULL;
}

static int mem_push_ack(once_store *s, const once_push_ack *ack)
{
    mem_store *ms = (mem_store *)s;
    once_push_row *r;
    int rc = ONCE_OK;
    pthread_mutex_lock(&ms->lock);
    r = find_row(find_live(ms, ack->principal, ack->task_id), ack->config_id);
    rc = r ? once__push_apply_ack(r, ack) : ONCE_ENOTFOUND;
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

static int cmp_row_id(const void *a, const void *b)
{
    return strcmp(((const once_push_row *)a)->config_id, ((const once_push_row *)b)->config_id);
}

static int mem_push_rows(once_store *s, const char *principal, const char *task_id,
                         once_push_row_list *out)
{
    mem_store *ms = (mem_store *)s;
    mem_entry *e;
    int rc = ONCE_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ms->lock);
    e = find_live(ms, principal, task_id);
    if (e && e->npush) {
        out->v = once_calloc(e->npush, sizeof *out->v);
        if (!out->v) {
            rc = ONCE_ENOMEM;
        } else {
            memcpy(out->v, e->push, e->npush * sizeof *out->v);
            out->n = e->npush;
        }
    }
    pthread_mutex_unlock(&ms->lock);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_row_id);
    return rc;
}

static int mem_replica_beat(once_store *s, const once_replica *r)
{
    mem_store *ms = (mem_store *)s;
    pthread_mutex_lock(&ms->lock);
    int rc = once__replica_upsert(&ms->replicas, r);
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

static int mem_replicas(once_store *s, once_replica_list *out)
{
    mem_store *ms = (mem_store *)s;
    pthread_mutex_lock(&ms->lock);
    int rc = once__replica_copy(out, &ms->replicas);
    pthread_mutex_unlock(&ms->lock);
    return rc;
}

/* The slots named otherwise, and those memory: has not (slots.h). */
#define mem_meta mem_meta_get
#define mem_feed_open NULL
#define mem_feed_next NULL
#define mem_feed_close NULL
#define mem_create_start NULL
#define mem_synchronous NULL

/* LOCAL: every call runs on the caller's thread, under the store's lock. */
const once_store_methods once__store_memory =
    ONCE__STORE_TABLE(mem, "memory",
                      ONCE_STORE_PUSH | ONCE_STORE_GENERATIONS | ONCE_STORE_REPLICAS |
                          ONCE_STORE_LOCAL | ONCE_STORE_BUDGET);
