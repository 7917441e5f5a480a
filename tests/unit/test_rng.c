/*
 * test_rng.c -- the seeded generator is deterministic and pinned, the system
 * generator fills whole buffers, hands out small draws from its per-thread
 * pool once each (across refills, threads and a fork), and once_rng_uniform
 * stays in bounds, rejects biased draws and propagates source errors.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "once/once.h"

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

static void test_seeded_deterministic(void **state)
{
    (void)state;
    once_seeded_rng a, b, c;
    once_seeded_rng_init(&a, 42);
    once_seeded_rng_init(&b, 42);
    once_seeded_rng_init(&c, 43);
    uint8_t ba[100], bb[100], bc[100];
    assert_int_equal(a.base.fill(&a.base, ba, sizeof ba), ONCE_OK);
    assert_int_equal(b.base.fill(&b.base, bb, sizeof bb), ONCE_OK);
    assert_int_equal(c.base.fill(&c.base, bc, sizeof bc), ONCE_OK);
    assert_memory_equal(ba, bb, sizeof ba);
    assert_memory_not_equal(ba, bc, sizeof ba);
    /* The stream continues rather than restarting. */
    uint8_t next[100];
    assert_int_equal(a.base.fill(&a.base, next, sizeof next), ONCE_OK);
    assert_memory_not_equal(ba, next, sizeof ba);
}

static void test_seeded_pinned(void **state)
{
    (void)state;
    /* splitmix64 reference outputs: stored simulations depend on them. */
    once_seeded_rng r;
    once_seeded_rng_init(&r, 0);
    uint8_t b[24];
    assert_int_equal(r.base.fill(&r.base, b, sizeof b), ONCE_OK);
    assert_true(le64(b) == 0xe220a8397b1dcdafULL);
    assert_true(le64(b + 8) == 0x6e789e6aa1b965f4ULL);
    assert_true(le64(b + 16) == 0x06c45d188009454fULL);
    once_seeded_rng_init(&r, 42);
    assert_int_equal(r.base.fill(&r.base, b, 8), ONCE_OK);
    assert_true(le64(b) == 0xbdd732262feb6e95ULL);
}

static void test_system_fills(void **state)
{
    (void)state;
    const once_rng *r = once_rng_system();
    assert_non_null(r);
    uint8_t a[64], b[64], zero[64] = {0};
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    assert_int_equal(r->fill(r, a, sizeof a), ONCE_OK);
    assert_int_equal(r->fill(r, b, sizeof b), ONCE_OK);
    assert_memory_not_equal(a, zero, sizeof a);
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(r->fill(r, a, 0), ONCE_OK);

    /* A large buffer is filled to the last byte (short reads handled). */
    static uint8_t big[1 << 20];
    memset(big, 0, sizeof big);
    assert_int_equal(r->fill(r, big, sizeof big), ONCE_OK);
    size_t tail_zero = 0;
    for (size_t i = sizeof big - 4096; i < sizeof big; i++)
        tail_zero += big[i] == 0;
    assert_true(tail_zero < 64); /* ~16 expected; all 4096 if unfilled */
}

/* Small draws come from a per-thread pool: across many refills no 16-byte
 * draw repeats, and draws of every size up to the pool's limit and past it
 * are whole. */
#define NDRAWS 4096
static int cmp16(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

static void test_system_pool_draws_once(void **state)
{
    (void)state;
    const once_rng *r = once_rng_system();
    static uint8_t d[NDRAWS][16];
    for (int i = 0; i < NDRAWS; i++)
        assert_int_equal(r->fill(r, d[i], 16), ONCE_OK);
    qsort(d, NDRAWS, 16, cmp16);
    for (int i = 1; i < NDRAWS; i++)
        assert_memory_not_equal(d[i - 1], d[i], 16);
    /* Each size fills exactly its n bytes: OR-ed over four draws, every byte
     * is non-zero (a miss: 2^-32 per byte) and the byte after stays as it was. */
    for (size_t n = 1; n <= 65; n++) {
        uint8_t acc[66] = {0};
        for (int k = 0; k < 4; k++) {
            uint8_t b[66];
            memset(b, 0, sizeof b);
            b[n] = 0xa5;
            assert_int_equal(r->fill(r, b, n), ONCE_OK);
            assert_int_equal(b[n], 0xa5);
            for (size_t i = 0; i < n; i++)
                acc[i] |= b[i];
        }
        for (size_t i = 0; i < n; i++)
            assert_true(acc[i] != 0);
    }
}

/* Two threads' pools are their own: their draws never match. */
static void *draw_some(void *arg)
{
    uint8_t(*d)[16] = arg;
    const once_rng *r = once_rng_system();
    for (int i = 0; i < NDRAWS / 2; i++)
        if (r->fill(r, d[i], 16) != ONCE_OK)
            return arg;
    return NULL;
}

static void test_system_pool_per_thread(void **state)
{
    (void)state;
    static uint8_t d[NDRAWS][16];
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, draw_some, d[0]), 0);
    assert_int_equal(pthread_create(&b, NULL, draw_some, d[NDRAWS / 2]), 0);
    void *ra, *rb;
    assert_int_equal(pthread_join(a, &ra), 0);
    assert_int_equal(pthread_join(b, &rb), 0);
    assert_null(ra);
    assert_null(rb);
    qsort(d, NDRAWS, 16, cmp16);
    for (int i = 1; i < NDRAWS; i++)
        assert_memory_not_equal(d[i - 1], d[i], 16);
}

/* A forked child does not hand out what its parent's pool still holds: the
 * child's first draw after the fork differs from the parent's. */
static void test_system_pool_fork(void **state)
{
    (void)state;
    const once_rng *r = once_rng_system();
    uint8_t before[16], mine[16], childs[16];
    assert_int_equal(r->fill(r, before, sizeof before), ONCE_OK);   /* the pool is full */
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint8_t b[16];
        int ok = r->fill(r, b, sizeof b) == ONCE_OK && write(fd[1], b, sizeof b) == sizeof b;
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    assert_int_equal(r->fill(r, mine, sizeof mine), ONCE_OK);
    size_t got = 0;
    while (got < sizeof childs) {
        ssize_t n = read(fd[0], childs + got, sizeof childs - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    close(fd[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_memory_not_equal(mine, childs, sizeof mine);
}

static void test_uniform_bounds(void **state)
{
    (void)state;
    once_seeded_rng r;
    once_seeded_rng_init(&r, 7);
    uint64_t v;
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        assert_int_equal(once_rng_uniform(&r.base, 7, &v), ONCE_OK);
        assert_true(v < 7);
        seen[v]++;
    }
    for (int i = 0; i < 7; i++)
        assert_true(seen[i] > 800 && seen[i] < 1200);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(once_rng_uniform(&r.base, 1, &v), ONCE_OK);
        assert_true(v == 0);
        assert_int_equal(once_rng_uniform(once_rng_system(), 1000, &v), ONCE_OK);
        assert_true(v < 1000);
        assert_int_equal(once_rng_uniform(&r.base, UINT64_MAX, &v), ONCE_OK);
        assert_true(v < UINT64_MAX);
    }
    assert_int_equal(once_rng_uniform(&r.base, 0, &v), ONCE_EINVAL);
    assert_int_equal(once_rng_uniform(NULL, 5, &v), ONCE_EINVAL);
    assert_int_equal(once_rng_uniform(&r.base, 5, NULL), ONCE_EINVAL);
}

/* A source that replays scripted 64-bit draws (big-endian, the order
 * once_rng_uniform assembles them in), then fails. */
typedef struct scripted_rng {
    once_rng base;
    const uint64_t *draws;
    size_t n, pos;
} scripted_rng;

static int scripted_fill(const once_rng *r, void *buf, size_t n)
{
    scripted_rng *s = (scripted_rng *)(uintptr_t)r;
    if (n != 8 || s->pos >= s->n)
        return ONCE_EIO;
    uint64_t v = s->draws[s->pos++];
    uint8_t *p = buf;
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
    return ONCE_OK;
}

static void test_uniform_rejects_bias(void **state)
{
    (void)state;
    /* bound = 2^63 + 1: 2^64 mod bound = 2^63 - 1, so draws below that are
     * the biased zone and must be redrawn, not reduced. */
    const uint64_t bound = (1ULL << 63) + 1;
    const uint64_t draws[] = {0, (1ULL << 63) - 2, (1ULL << 63) + 5};
    scripted_rng s = {{scripted_fill}, draws, 3, 0};
    uint64_t v = 99;
    assert_int_equal(once_rng_uniform(&s.base, bound, &v), ONCE_OK);
    assert_int_equal(s.pos, 3);
    assert_true(v == 4);

    /* Source failure propagates. */
    s.pos = 0;
    s.n = 1; /* only the rejected draw 0 is available */
    assert_int_equal(once_rng_uniform(&s.base, bound, &v), ONCE_EIO);

    /* A power of two never rejects. */
    const uint64_t one[] = {0xdeadbeefcafef00dULL};
    scripted_rng t = {{scripted_fill}, one, 1, 0};
    assert_int_equal(once_rng_uniform(&t.base, 1ULL << 32, &v), ONCE_OK);
    assert_true(v == 0xcafef00dULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeded_deterministic),
        cmocka_unit_test(test_seeded_pinned),
        cmocka_unit_test(test_system_fills),
        cmocka_unit_test(test_system_pool_draws_once),
        cmocka_unit_test(test_system_pool_per_thread),
        cmocka_unit_test(test_system_pool_fork),
        cmocka_unit_test(test_uniform_bounds),
        cmocka_unit_test(test_uniform_rejects_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
