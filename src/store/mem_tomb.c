/*
 * mem_tomb.c -- the memory store's compact tombstones: a ring in the order
 * they were added and an open-addressed index into it (see mem_tomb.h).
 *
 * Invariants: cap and nidx are powers of two (or 0 when nothing was added
 * yet), nidx == 2 * cap, so the index is at most half full and a probe
 * ends at a free slot; each of the n ring entries has exactly one index
 * slot, reachable from its home slot (h[0] & (nidx - 1)) without crossing
 * a free one. Removal shifts the probe run back instead of leaving a
 * marker, so lookups never slow down with churn.
 */
#include <string.h>

#include "once/once.h"
#include "store/mem_tomb.h"

#define MEM_TOMBS_FIRST 64
#define MEM_TOMBS_MAX ((size_t)1 << 30)   /* positions + 1 fit a uint32_t */

void once__mem_tombs_key(const char *principal, const char *task_id, uint64_t h[2])
{
    unsigned char buf[ONCE_PRINCIPAL_MAX + ONCE_ID_MAX + 2];
    uint8_t d[ONCE_SHA256_LEN];
    size_t pl = strnlen(principal, ONCE_PRINCIPAL_MAX), il = strnlen(task_id, ONCE_ID_MAX);

    memcpy(buf, principal, pl);
    buf[pl] = '\0';   /* a principal never holds a NUL: the split is unambiguous */
    memcpy(buf + pl + 1, task_id, il);
    once_sha256(buf, pl + 1 + il, d);
    memcpy(h, d, 2 * sizeof *h);
}

static size_t home(const mem_tombs *t, const uint64_t h[2])
{
    return (size_t)(h[0] & (t->nidx - 1));
}

/* The index slot that holds ring position pos, or that ends h's probe run
 * when pos is (size_t)-1 and h is absent; either way the caller's answer
 * is idx[slot]. */
static size_t probe(const mem_tombs *t, const uint64_t h[2], size_t pos)
{
    size_t i = home(t, h), mask = t->nidx - 1;

    for (; t->idx[i]; i = (i + 1) & mask) {
        size_t at = t->idx[i] - 1;
        if (pos != (size_t)-1 ? at == pos
                              : t->ring[at].h[0] == h[0] && t->ring[at].h[1] == h[1])
            break;
    }
    return i;
}

const mem_ctomb *once__mem_tombs_find(const mem_tombs *t, const uint64_t h[2])
{
    size_t i;

    if (t->n == 0)
        return NULL;
    i = probe(t, h, (size_t)-1);
    return t->idx[i] ? &t->ring[t->idx[i] - 1] : NULL;
}

/* Put ring position pos in the index (its hash is absent from it). */
static void index_put(mem_tombs *t, size_t pos)
{
    size_t i = probe(t, t->ring[pos].h, (size_t)-1);
    t->idx[i] = (uint32_t)(pos + 1);
}

/* Double the ring and rebuild the index at twice its size. The new index
 * is made first, so that a failure leaves everything as it was. */
static int grow(mem_tombs *t)
{
    size_t nc = t->cap ? t->cap * 2 : MEM_TOMBS_FIRST, i;
    uint32_t *ni;
    mem_ctomb *nr;

    if (nc > MEM_TOMBS_MAX)
        return ONCE_ENOMEM;
    if (!(ni = once_calloc(2 * nc, sizeof *ni)))
        return ONCE_ENOMEM;
    if (!(nr = once_realloc(t->ring, nc * sizeof *nr))) {
        once_free(ni);
        return ONCE_ENOMEM;
    }
    /* The ring is full (n == cap): its wrapped part [0, head) moves to
     * just past the old end, so the entries are head .. head + n, unwrapped. */
    memcpy(nr + t->cap, nr, t->head * sizeof *nr);
    once_free(t->idx);
    t->ring = nr;
    t->cap = nc;
    t->idx = ni;
    t->nidx = 2 * nc;
    for (i = 0; i < t->n; i++)
        index_put(t, t->head + i);
    return ONCE_OK;
}

int once__mem_tombs_add(mem_tombs *t, const uint64_t h[2], int64_t expired_at)
{
    size_t pos;
    int rc;

    if (t->n == t->cap && (rc = grow(t)) != ONCE_OK)
        return rc;
    pos = (t->head + t->n) & (t->cap - 1);
    t->ring[pos].h[0] = h[0];
    t->ring[pos].h[1] = h[1];
    t->ring[pos].expired_at = expired_at;
    index_put(t, pos);
    t->n++;
    return ONCE_OK;
}

const mem_ctomb *once__mem_tombs_oldest(const mem_tombs *t)
{
    return t->n ? &t->ring[t->head] : NULL;
}

/* 1 if slot k lies cyclically in (i, j]. */
static int between(size_t i, size_t k, size_t j)
{
    return i <= j ? i < k && k <= j : i < k || k <= j;
}

/* Halve the ring once it is a quarter full (so that a store whose
 * tombstones were purged gives their room back, and one at the edge does
 * not grow and shrink by turns). The entries move to the front, in order;
 * a failed allocation leaves the ring as it was, only larger than needed. */
static void shrink(mem_tombs *t)
{
    size_t nc = t->cap / 2, a, i;
    uint32_t *ni;
    mem_ctomb *nr;

    if (t->cap <= MEM_TOMBS_FIRST || t->n > t->cap / 4)
        return;
    if (!(ni = once_calloc(2 * nc, sizeof *ni)))
        return;
    /* The part from head to the end of the ring (a entries), then the part
     * that wrapped to its start; head >= cap - n > n, so the first part's
     * source never overlaps where the entries go. */
    a = t->head + t->n <= t->cap ? t->n : t->cap - t->head;
    memmove(t->ring + a, t->ring, (t->n - a) * sizeof *t->ring);
    memmove(t->ring, t->ring + t->head, a * sizeof *t->ring);
    if ((nr = once_realloc(t->ring, nc * sizeof *nr)) != NULL)
        t->ring = nr;
    once_free(t->idx);
    t->idx = ni;
    t->nidx = 2 * nc;
    t->cap = nc;
    t->head = 0;
    for (i = 0; i < t->n; i++)
        index_put(t, i);
}

void once__mem_tombs_pop(mem_tombs *t)
{
    size_t mask = t->nidx - 1, i = probe(t, t->ring[t->head].h, t->head), j = i;

    /* Backward shift: each later entry of the run whose home is not in
     * (i, j] would be cut off from it by the hole at i; move it there. */
    for (;;) {
        j = (j + 1) & mask;
        if (!t->idx[j])
            break;
        if (!between(i, home(t, t->ring[t->idx[j] - 1].h), j)) {
            t->idx[i] = t->idx[j];
            i = j;
        }
    }
    t->idx[i] = 0;
    t->head = (t->head + 1) & (t->cap - 1);
    t->n--;
    shrink(t);
}

size_t once__mem_tombs_bytes(const mem_tombs *t)
{
    return t->cap * sizeof *t->ring + t->nidx * sizeof *t->idx;
}

size_t once__mem_tombs_growth(const mem_tombs *t)
{
    size_t nc = t->cap ? t->cap * 2 : MEM_TOMBS_FIRST;

    if (t->n < t->cap)
        return 0;
    return (nc - t->cap) * sizeof *t->ring + (2 * nc - t->nidx) * sizeof *t->idx;
}

int once__mem_tombs_consistent(const mem_tombs *t)
{
    size_t i, used = 0;

    for (i = 0; i < t->nidx; i++)
        used += t->idx[i] != 0;
    if (used != t->n)
        return 0;
    for (i = 0; i < t->n; i++) {
        size_t pos = (t->head + i) & (t->cap - 1);
        if (once__mem_tombs_find(t, t->ring[pos].h) != &t->ring[pos])
            return 0;
    }
    return 1;
}

void once__mem_tombs_free(mem_tombs *t)
{
    once_free(t->ring);
    once_free(t->idx);
    memset(t, 0, sizeof *t);
}
