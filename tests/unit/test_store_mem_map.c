/*
 * test_store_mem_map.c -- where a held finished echo task's bytes go in the
 * memory store, warm and cold: the map behind bench/README.md's memory
 * section.
 *
 * An allocator (once_set_allocator) keeps the bytes and the blocks alive,
 * by block size (glibc's malloc_usable_size, plus the 8-byte header each
 * block carries). N tasks shaped like onced's echo tasks (the texts onced
 * stores for `bench/send.lua new block`: the same four writes, the same
 * four events, the same journal) are written through the store's slots;
 * the bytes the store holds per task are read before and after a sweep
 * deflates them, and the block sizes that occur once per task are printed:
 * entry, record, events. Asserted: every task went cold, and a cold task
 * holds at most a third of a warm one and at most COLD_MAX bytes, index
 * included.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/mem.h"
#include "store/util.h"

#define T0 1796314520505LL
#define N 10000
/* 611 with zlib at level 3, 641 with zip.c's own fixed-code encoder (bench/README.md,
 * "The memory store's background cost"): its ~30 bytes more bought 70k fewer
 * instructions a task. */
#define COLD_MAX 660
#define SIZES 8192            /* block sizes counted one by one below this */

/* Bytes and blocks alive, blocks alive by size, and the bytes of blocks
 * of SIZES - 1 usable bytes or more. Single-threaded: only this test's
 * thread allocates while it counts. */
static long live_bytes, live_blocks, big_bytes;
static long by_size[SIZES];

static void account_size(size_t u, int sign)
{
    live_bytes += sign * (long)(u + sizeof(size_t));
    live_blocks += sign;
    by_size[u < SIZES ? u : SIZES - 1] += sign;
    if (u >= SIZES - 1)
        big_bytes += sign * (long)(u + sizeof(size_t));
}

static void account(void *p, int sign)
{
    account_size(malloc_usable_size(p), sign);
}

static void *map_malloc(size_t n)
{
    void *p = malloc(n);
    if (p)
        account(p, 1);
    return p;
}

static void *map_calloc(size_t m, size_t n)
{
    void *p = calloc(m, n);
    if (p)
        account(p, 1);
    return p;
}

static void *map_realloc(void *old, size_t n)
{
    size_t u = old ? malloc_usable_size(old) : 0;
    void *p;

    if (old)   /* counted out before: realloc may free it */
        account_size(u, -1);
    p = realloc(old, n);
    if (p)
        account(p, 1);
    else if (old)
        account(old, 1);
    return p;
}

static void map_free(void *p)
{
    if (p)
        account(p, -1);
    free(p);
}

static const once_allocator map_allocator = {map_malloc, map_calloc, map_realloc, map_free};

/* The texts of echo task i, as onced writes them (captured from onced
 * --store memory: for one `send.lua new block` request). */
typedef struct echo_task {
    char id[40], ctx[40], digests[128], journal[512];
    char task[4][1024];       /* task_json after each write */
    char ev[4][1024];
} echo_task;

static void echo_texts(echo_task *t, int i)
{
    static const char *const st[] = {"SUBMITTED", "WORKING", "WORKING", "COMPLETED"};
    const char *ts = "2026-12-03T16:15:20.505Z";
    char hist[512];
    int g;

    snprintf(t->id, sizeof t->id, "rdefault%08d-0-%06d", 12345678, i);
    snprintf(t->ctx, sizeof t->ctx, "56ccb991-e000-4dab-b889-%012x", (unsigned)(i * 2654435761u));
    snprintf(t->digests, sizeof t->digests,
             "fc490020736659a5f2c4b51367df9c789a85b1a975e84d968d2d7313%08x %s\n",
             (unsigned)(i * 40503u), t->id);
    snprintf(t->journal, sizeof t->journal,
             "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":%lld,\"replica\":\"vm-16910\","
             "\"fence\":1,\"step\":0,\"resumed\":false,\"end\":%lld,"
             "\"result\":\"TASK_STATE_COMPLETED\"}]}",
             T0 + i, T0 + i);
    snprintf(hist, sizeof hist,
             "\"history\":[{\"messageId\":\"%s\",\"taskId\":\"%s\",\"role\":\"ROLE_USER\","
             "\"parts\":[{\"text\":\"hello\"}],\"contextId\":\"%s\"}]",
             t->id, t->id, t->ctx);
    for (g = 0; g < 4; g++)
        snprintf(t->task[g], sizeof t->task[g],
                 "{\"id\":\"%s\",\"contextId\":\"%s\",\"status\":{\"state\":\"TASK_STATE_%s\","
                 "\"timestamp\":\"%s\"},%s%s}",
                 t->id, t->ctx, st[g], ts, hist,
                 g >= 2 ? ",\"artifacts\":[{\"artifactId\":\"echo\",\"name\":\"echo\","
                          "\"parts\":[{\"text\":\"hello\"}]}]"
                        : "");
    snprintf(t->ev[0], sizeof t->ev[0],
             "{\"task\":{\"id\":\"%s\",\"contextId\":\"%s\",\"status\":{\"state\":"
             "\"TASK_STATE_SUBMITTED\",\"timestamp\":\"%s\"},%s,\"metadata\":"
             "{\"urn:once:a2a:idempotency:v1\":{\"generation\":1}}}}",
             t->id, t->ctx, ts, hist);
    for (g = 1; g < 4; g += 2)
        snprintf(t->ev[g], sizeof t->ev[g],
                 "{\"statusUpdate\":{\"taskId\":\"%s\",\"contextId\":\"%s\",\"status\":{\"state\":"
                 "\"TASK_STATE_%s\",\"timestamp\":\"%s\"},\"metadata\":"
                 "{\"urn:once:a2a:idempotency:v1\":{\"generation\":%d}}}}",
                 t->id, t->ctx, st[g], ts, g + 1);
    snprintf(t->ev[2], sizeof t->ev[2],
             "{\"artifactUpdate\":{\"taskId\":\"%s\",\"contextId\":\"%s\",\"artifact\":"
             "{\"artifactId\":\"echo\",\"name\":\"echo\",\"parts\":[{\"text\":\"hello\"}]},"
             "\"append\":false,\"lastChunk\":true,\"metadata\":"
             "{\"urn:once:a2a:idempotency:v1\":{\"generation\":3}}}}",
             t->id, t->ctx);
}

/* Task i through the four writes onced makes: create (submitted, leased),
 * working, the artifact, completed. */
static void echo_put(once_store *s, int i)
{
    echo_task t;
    once_record r;
    once_event ev;
    int g;

    echo_texts(&t, i);
    memset(&r, 0, sizeof r);
    snprintf(r.principal, sizeof r.principal, "anonymous");
    snprintf(r.task_id, sizeof r.task_id, "%s", t.id);
    snprintf(r.context_id, sizeof r.context_id, "%s", t.ctx);
    snprintf(r.lease_owner, sizeof r.lease_owner, "vm-16910");
    r.kind = ONCE_KIND_TASK;
    r.fence = 1;
    /* N tasks within a second: none has been finished for the 2 s after
     * which a later write would deflate it, so they stay warm until the
     * test's sweep. */
    int64_t at = T0 + (int64_t)i * 1000 / N;
    r.created_at = r.updated_at = at;
    r.lease_until = at + 30000;
    r.digests = t.digests;
    for (g = 0; g < 4; g++) {
        r.version = g + 1;
        r.generation = g + 1;
        r.state = g == 0 ? ONCE_STATE_SUBMITTED : g < 3 ? ONCE_STATE_WORKING : ONCE_STATE_COMPLETED;
        r.task_json = t.task[g];
        ev.generation = g + 1;
        ev.payload = t.ev[g];
        if (g == 3) {
            r.finished_at = at;
            r.lease_owner[0] = '\0';
            r.lease_until = 0;
            r.journal = t.journal;
        }
        assert_int_equal(g == 0 ? once_store_create(s, &r, &ev, 1, NULL, NULL)
                                : once_store_update(s, &r, g, &ev, 1),
                         ONCE_OK);
    }
}

/* The block sizes that occur about once per task, and what they add up to. */
static void print_blocks(const char *what, const long *before)
{
    long sum = 0;
    size_t u;

    print_message("  %s, blocks held once per task (usable bytes + 8):", what);
    for (u = 0; u < SIZES; u++) {
        long d = by_size[u] - before[u];
        if (d >= N / 2 && d <= 2 * N) {
            print_message(" %zu x%.2f", u + sizeof(size_t), (double)d / N);
            sum += d * (long)(u + sizeof(size_t));
        }
    }
    print_message(" = %.0f B/task\n", (double)sum / N);
}

static void test_bytes_per_task(void **state)
{
    (void)state;
    once_store *s = NULL;
    char err[256];
    long base_bytes, base_blocks, warm, warm_blocks, cold, cold_blocks, big_warm;
    static long base_sizes[SIZES];
    size_t n;
    int i;

    assert_int_equal(once_store_open("memory:", NULL, &s, err, sizeof err), ONCE_OK);
    base_bytes = live_bytes;
    base_blocks = live_blocks;
    memcpy(base_sizes, by_size, sizeof by_size);
    for (i = 0; i < N; i++)
        echo_put(s, i);
    warm = live_bytes - base_bytes;
    warm_blocks = live_blocks - base_blocks;
    print_message("map: %d finished echo tasks held warm: %.0f B/task in %.2f blocks "
                  "(index: the hash table's buckets included)\n",
                  N, (double)warm / N, (double)warm_blocks / N);
    print_blocks("warm", base_sizes);
    big_warm = big_bytes;

    /* Nothing is due for retention; everything finished a minute before `now`. */
    assert_int_equal(once_store_sweep(s, T0 - 1, T0 + N + 60000, 256, &n), ONCE_OK);
    assert_int_equal(n, 0);
    assert_int_equal(once__mem_cools(s), N);
    cold = live_bytes - base_bytes;
    cold_blocks = live_blocks - base_blocks;
    print_message("map: the same tasks cold: %.0f B/task in %.2f blocks, the store's deflater "
                  "and inflater included (their blocks of 8 KiB or more: %ld B)\n",
                  (double)cold / N, (double)cold_blocks / N, big_bytes - big_warm);
    print_blocks("cold", base_sizes);

    assert_true(cold * 3 <= warm);
    assert_true(cold / N <= COLD_MAX);
    once_store_close(s);
    assert_int_equal(live_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_per_task),
    };
    once_set_allocator(&map_allocator);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
