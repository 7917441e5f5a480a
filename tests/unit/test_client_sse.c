/*
 * test_client_sse.c -- the client's text/event-stream parser (src/client/
 * sse.c): events come out whole and in order however the bytes are split
 * (every split point of a stream is tried), with LF, CRLF or CR line ends,
 * a CRLF split between chunks, multi-line data, comments and unknown
 * fields ignored; numeric ids are generations, others are not; a line or an
 * event over the cap is ONCE_ERANGE; the callback can stop the feed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_int.h"

#define MAX_EVENTS 16

/* What the callback saw. */
typedef struct seen {
    int n;
    int has_id[MAX_EVENTS];
    int64_t id[MAX_EVENTS];
    char data[MAX_EVENTS][256];
    int stop_after;   /* return 1 after this many events (0 = never) */
} seen;

static int on_event(void *ctx, int has_id, int64_t id, const char *data, size_t len)
{
    seen *s = ctx;
    assert_true(s->n < MAX_EVENTS);
    assert_int_equal(strlen(data), len);
    s->has_id[s->n] = has_id;
    s->id[s->n] = id;
    snprintf(s->data[s->n], sizeof s->data[0], "%s", data);
    s->n++;
    return s->stop_after > 0 && s->n >= s->stop_after ? 1 : ONCE_OK;
}

/* Feed text in two chunks split at `at`. */
static int feed_split(const char *text, size_t at, seen *s, size_t max)
{
    once__sse p;
    once__sse_init(&p, max, on_event, s);
    int rc = once__sse_feed(&p, text, at);
    if (rc == ONCE_OK)
        rc = once__sse_feed(&p, text + at, strlen(text) - at);
    once__sse_clear(&p);
    return rc;
}

static void test_events_whatever_the_split(void **state)
{
    static const char *const streams[] = {
        "id: 1\ndata: {\"a\":1}\n\n: ping\n\nid: 2\ndata: {\"b\":2}\n\n",
        "id: 1\r\ndata: {\"a\":1}\r\n\r\n: ping\r\n\r\nid: 2\r\ndata: {\"b\":2}\r\n\r\n",
        "id: 1\rdata: {\"a\":1}\r\r: ping\r\rid: 2\rdata: {\"b\":2}\r\r",
        "event: x\nid:1\nretry: 5\ndata:{\"a\":1}\n\nid: 2\nunknown: y\ndata: {\"b\":2}\n\n",
    };
    for (size_t k = 0; k < sizeof streams / sizeof streams[0]; k++) {
        size_t len = strlen(streams[k]);
        for (size_t at = 0; at <= len; at++) {
            seen s = {0};
            assert_int_equal(feed_split(streams[k], at, &s, 1024), ONCE_OK);
            assert_int_equal(s.n, 2);
            assert_true(s.has_id[0] && s.has_id[1]);
            assert_int_equal(s.id[0], 1);
            assert_int_equal(s.id[1], 2);
            assert_string_equal(s.data[0], "{\"a\":1}");
            assert_string_equal(s.data[1], "{\"b\":2}");
        }
    }
}

static void test_multiline_data_and_ids(void **state)
{
    seen s = {0};
    const char *text = "data: line1\ndata:line2\ndata\n\n"   /* three data lines, no id */
                       "id: abc\ndata: x\n\n"                /* not a generation */
                       "id: 7\n\n"                          /* no data: not dispatched */
                       "data: y\n\n"                        /* the id does not carry over */
                       "data: unterminated";                /* no blank line yet */
    assert_int_equal(feed_split(text, 5, &s, 1024), ONCE_OK);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.data[0], "line1\nline2\n");
    assert_false(s.has_id[0]);
    assert_string_equal(s.data[1], "x");
    assert_false(s.has_id[1]);
    assert_string_equal(s.data[2], "y");
    assert_false(s.has_id[2]);
}

static void test_cap_and_stop(void **state)
{
    seen s = {0};
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char text[300];
    snprintf(text, sizeof text, "data: %s\n\n", big);
    assert_int_equal(feed_split(text, 3, &s, 100), ONCE_ERANGE);   /* a line over the cap */
    assert_int_equal(s.n, 0);

    /* An event over the cap in short lines. */
    seen s2 = {0};
    char many[400];
    size_t n = 0;
    for (int i = 0; i < 20; i++)   /* 20 data lines of 7 bytes, joined: over 100 */
        n += (size_t)snprintf(many + n, sizeof many - n, "data: 0123456\n");
    snprintf(many + n, sizeof many - n, "\n");
    assert_int_equal(feed_split(many, 0, &s2, 100), ONCE_ERANGE);
    assert_int_equal(s2.n, 0);

    seen s3 = {.stop_after = 1};
    assert_int_equal(feed_split("data: 1\n\ndata: 2\n\n", 0, &s3, 100), 1);
    assert_int_equal(s3.n, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_whatever_the_split),
        cmocka_unit_test(test_multiline_data_and_ids),
        cmocka_unit_test(test_cap_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
