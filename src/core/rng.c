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
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

/* getrandom(2) until buf is full: it returns at most 32 MiB per call and
 * may be cut short by a signal. */
static int os_fill(unsigned char *p, size_t n)
{
    while (n > 0) {
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

/*
 * Small draws (an ID's 10 or 16 bytes, two or three per request) come from a
 * per-thread pool of the kernel's bytes, refilled POOL bytes at a time: one
 * system call per ~16 draws instead of one each, the bytes still the
 * kernel's CSPRNG output, each handed out once and wiped from the pool as
 * it goes. A forked child starts with its forking thread's pool emptied
 * (pthread_atfork), so parent and child never hand out the same bytes.
 */
#define POOL 256
#define POOL_DRAW 64 /* larger draws go to the kernel directly */

static __thread unsigned char pool[POOL];
static __thread size_t pool_left; /* the unused bytes are the last pool_left */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void pool_forget(void)
{
    explicit_bzero(pool, sizeof pool);
    pool_left = 0;
}

static void atfork_register(void)
{
    (void)pthread_atfork(NULL, NULL, pool_forget);
}

static int system_fill(const once_rng *r, void *buf, size_t n)
{
    (void)r;
    if (n > POOL_DRAW)
        return os_fill(buf, n);
    (void)pthread_once(&atfork_once, atfork_register);
    if (pool_left < n) {
        if (os_fill(pool, sizeof pool) != ONCE_OK) {
            pool_forget();
            return ONCE_EIO;
        }
        pool_left = sizeof pool;
    }
    unsigned char *from = pool + (sizeof pool - pool_left);
    memcpy(buf, from, n);
    explicit_bzero(from, n);
    pool_left -= n;
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
