/*
 * mem_tomb.h -- the memory store's compact tombstones (memory:?tombs=compact,
 * not API): what remains of a swept key in 24 bytes, so that a store under a
 * memory budget keeps millions of them.
 *
 * A compact tombstone keeps the first 128 bits of SHA-256(principal, NUL,
 * task ID) and its expired_at; not the key's text, not the first message's
 * digest, not finished_at (every send to a tombstone is refused
 * TASK_EXPIRED whatever it carries, and the other readers answer with
 * expiredAt; only the inspector shows the rest, and shows it unknown). A
 * key is tombstoned when its hash is in the set: two keys share one with a
 * chance of about n^2 / 2^129 (n tombstones: 10^9 of them give 1.5e-21),
 * and a false match could only refuse a new key TASK_EXPIRED, never run an
 * old one again.
 *
 * The tombstones sit in a ring in the order they were added (by expired_at,
 * the sweep's clock), so purge takes from its front and costs what it
 * removes; an open-addressed index of ring positions (linear probing, at
 * most half full) finds a key's. A ring out of order (a clock that went
 * back) only purges the later entries late, never early. Not thread-safe:
 * the memory store's lock guards it.
 */
#ifndef ONCE_STORE_MEM_TOMB_H
#define ONCE_STORE_MEM_TOMB_H

#include <stddef.h>
#include <stdint.h>

typedef struct mem_ctomb {
    uint64_t h[2];            /* the key's hash */
    int64_t expired_at;
} mem_ctomb;

/* ring[(head + i) & (cap - 1)] for i in 0..n is the i-th oldest tombstone;
 * idx[] (nidx slots, twice cap) holds ring positions + 1, 0 for a free slot. */
typedef struct mem_tombs {
    mem_ctomb *ring;
    size_t cap, head, n;
    uint32_t *idx;
    size_t nidx;
} mem_tombs;

/* The hash of (principal, task_id) a compact tombstone keeps. */
void once__mem_tombs_key(const char *principal, const char *task_id, uint64_t h[2]);

/* The tombstone of hash h, or NULL. */
const mem_ctomb *once__mem_tombs_find(const mem_tombs *t, const uint64_t h[2]);

/* Add one (h must not be in t). ONCE_OK, or ONCE_ENOMEM with t as it was. */
int once__mem_tombs_add(mem_tombs *t, const uint64_t h[2], int64_t expired_at);

/* The oldest tombstone (first added), or NULL when t is empty. */
const mem_ctomb *once__mem_tombs_oldest(const mem_tombs *t);

/* Remove the oldest tombstone (t must not be empty); the arrays shrink
 * when a quarter full. */
void once__mem_tombs_pop(mem_tombs *t);

/* Bytes t holds (its two arrays). */
size_t once__mem_tombs_bytes(const mem_tombs *t);
/* Bytes the next once__mem_tombs_add would add to that (0 unless the ring
 * is full and must grow). */
size_t once__mem_tombs_growth(const mem_tombs *t);

/* 1 if every tombstone of the ring is found through the index and the
 * index holds nothing else. */
int once__mem_tombs_consistent(const mem_tombs *t);

/* Frees what t holds; t may be all zeros. */
void once__mem_tombs_free(mem_tombs *t);

#endif /* ONCE_STORE_MEM_TOMB_H */
