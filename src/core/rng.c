/*
 * rng.c -- the OS CSPRNG, a seeded generator for tests, and unbiased bounded
 * integers.
 *
 * Invariants: once_rng_system() either fills the whole buffer or returns an
 * error (never a partial fill reported as success); once_rng_uniform() never
 * uses a plain modulo of a raw draw, so every value in [0, bound) is equally
 * likely given a uniform source.
 */
#include "once/once.h"

#include <errno.h>
#include <sys/random.h>

static int system_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    unsigned char *p = buf;
    while (n > 0) {
        /* getrandom returns at most 32 MiB per call and may be cut short by
         * a signal; loop until everything is filled. */
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return ONCE_EIO;
        }
        p += got;
        n -= (size_t)got;
    }
    return ONCE_OK;
}

static const once_rng system_rng = {system_fill};

const once_rng *once_rng_system(void)
{
    return &system_rng;
}

/* splitmix64 (Steele, Lea, Flood 2014): one 64-bit output per step. */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int seeded_fill(const once_rng *r, void *buf, size_t n)
{
    /* The base member is first, so the cast recovers the container. The
     * fill slot takes a const pointer; the generator state lives in the
     * caller's (non-const) object, as the header documents. */
    once_seeded_rng *s = (once_seeded_rng *)(uintptr_t)r;
    unsigned char *p = buf;
    while (n > 0) {
        uint64_t v = splitmix64_next(&s->state);
        for (int i = 0; i < 8 && n > 0; i++, n--) {
            *p++ = (unsigned char)(v & 0xff); /* little-endian: portable */
            v >>= 8;
        }
    }
    return ONCE_OK;
}

void once_seeded_rng_init(once_seeded_rng *r, uint64_t seed)
{
    r->base.fill = seeded_fill;
    r->state = seed;
}

int once_rng_uniform(const once_rng *r, uint64_t bound, uint64_t *out)
{
    if (r == NULL || out == NULL || bound == 0)
        return ONCE_EINVAL;
    /* Reject draws below 2^64 mod bound: the remaining range is a whole
     * multiple of bound, so the final modulo is unbiased. */
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        unsigned char b[8];
        int rc = r->fill(r, b, sizeof b);
        if (rc != ONCE_OK)
            return rc;
        uint64_t x = 0;
        for (int i = 0; i < 8; i++)
            x = (x << 8) | b[i];
        if (x >= threshold) {
            *out = x % bound;
            return ONCE_OK;
        }
    }
}
