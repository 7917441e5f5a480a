/*
 * test_json_read.c -- the plain JSON reader (src/core/json_read.c):
 *   - for plain text it builds the tree jansson builds: equal values,
 *     members in the same order, the same written bytes;
 *   - it declines (ONCE_EUNSUPPORTED) every text that is not plain, valid
 *     or not (ill-formed UTF-8 and NUL bytes too), so jansson reads it and
 *     says what is wrong;
 *   - the request reader (once__a2a_json_parse) uses it: a SendMessage
 *     request costs fewer allocations than jansson's parse of it, and a
 *     text that is not plain still parses, or fails with jansson's words.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "a2a/a2a_int.h"
#include "core/jcs.h"
#include "unit/count_alloc.h"

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

static const char *const plain[] = {
    "{}",
    "[]",
    " \t\r\n{ \"a\" : 1 , \"b\":[ ] ,\"c\":{}}\n",
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":"
    "{\"messageId\":\"m-1\",\"taskId\":\"t-1\",\"role\":\"ROLE_USER\",\"parts\":"
    "[{\"text\":\"hello\"}]}}}",
    "{\"z\":1,\"a\":2,\"m\":3,\"b\":{\"y\":null,\"x\":true,\"w\":false}}",
    "[0,-0,7,-12,123456789012345678,-123456789012345678]",
    "\"h\xc3\xa9 \xf0\x9f\x98\x80 /\"",
    "\"\"",
    "{\"\":\"\"}",
    "true",
    "false",
    "null",
    "42",
    "[[[[[[[[1]]]]]]]]",
    "{\"a\":[{\"b\":[{\"c\":\"d\"}]}],\"e\":[1,\"2\",[3],{\"f\":4}]}",
};

static const char *const not_plain[] = {
    /* Valid JSON that jansson reads: */
    "\"a\\\"b\"",
    "{\"k\\n\":1}",
    "\"\\u00e9\"",
    "1.5",
    "1e3",
    "-2E-2",
    "1234567890123456789",
    "[9223372036854775807]",
    /* Refused by jansson: */
    "",
    "   ",
    "{",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{a:1}",
    "{\"a\":1}x",
    "{\"a\":1} {}",
    "{\"a\":1,\"a\":2}",
    "[01]",
    "[-]",
    "[+1]",
    "[1.]",
    "[tru]",
    "[truex]",
    "[nul]",
    "\"tab\there\"",
    "\"open",
    "[1 2]",
    "{\"a\":1 \"b\":2}",
    "{,}",
    "[,1]",
    "'x'",
    /* Bytes past ASCII outside a string, or not well-formed UTF-8: */
    "[\xc3\xa9]",
    "\"\xc3\"",
    "\"\xc0\xaf\"",
    "\"\xed\xa0\x80\"",
    "\"\xf4\x90\x80\x80\"",
    "{\"\xff\":1}",
};

static char *written(const json_t *v)
{
    char *text = NULL;
    assert_int_equal(once__json_write(v, &text, NULL), ONCE_OK);
    return text;
}

static void plain_text_reads_as_jansson_reads_it(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const char *in = plain[i];
        json_t *got = NULL, *want = NULL;
        assert_int_equal(once__json_read_plain(in, strlen(in), &got), ONCE_OK);
        assert_int_equal(once__json_loadb(in, strlen(in), FLAGS, &want, NULL), ONCE_OK);
        assert_true(json_equal(got, want));
        char *a = written(got), *b = written(want);
        assert_string_equal(a, b);   /* member order too */
        once_free(a);
        once_free(b);
        json_decref(got);
        json_decref(want);
    }
}

static void other_text_is_declined(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof not_plain / sizeof not_plain[0]; i++) {
        json_t *got = (json_t *)&got;   /* must be cleared */
        assert_int_equal(once__json_read_plain(not_plain[i], strlen(not_plain[i]), &got),
                         ONCE_EUNSUPPORTED);
        assert_null(got);
    }
    json_t *got;
    assert_int_equal(once__json_read_plain(NULL, 0, &got), ONCE_EUNSUPPORTED);
    /* A NUL byte, in a string or out of one. */
    assert_int_equal(once__json_read_plain("\"a\0b\"", 5, &got), ONCE_EUNSUPPORTED);
    assert_int_equal(once__json_read_plain("[1]\0", 4, &got), ONCE_EUNSUPPORTED);
    /* A text cut short anywhere is declined, never read past its end. */
    const char *whole = plain[3];
    for (size_t n = 0; n < strlen(whole); n++) {
        assert_int_equal(once__json_read_plain(whole, n, &got), ONCE_EUNSUPPORTED);
        assert_null(got);
    }
}

static long allocations(int (*parse)(const char *, size_t, json_t **), const char *in)
{
    json_t *v = NULL;
    once_set_allocator(&counting_allocator);
    counted = 0;
    counting = 1;
    int rc = parse(in, strlen(in), &v);
    counting = 0;
    once_set_allocator(NULL);
    assert_int_equal(rc, ONCE_OK);
    json_decref(v);
    return counted;
}

static int request_reader(const char *in, size_t n, json_t **v)
{
    return once__a2a_json_parse(in, n, v, NULL, 0);
}

static int jansson_reader(const char *in, size_t n, json_t **v)
{
    return once__json_loadb(in, n, FLAGS, v, NULL);
}

static void request_reader_reads_plain_text_itself(void **state)
{
    (void)state;
    const char *req = plain[3];
    long ours = allocations(request_reader, req);
    long theirs = allocations(jansson_reader, req);
    assert_true(ours < theirs);

    /* Not plain: jansson's tree, or jansson's reason. */
    const char *esc = "{\"params\":{\"text\":\"a\\\"b\",\"n\":1.5}}";
    json_t *v = NULL;
    assert_int_equal(once__a2a_json_parse(esc, strlen(esc), &v, NULL, 0), ONCE_OK);
    assert_string_equal(json_string_value(json_object_get(json_object_get(v, "params"), "text")),
                        "a\"b");
    json_decref(v);
    char why[160];
    const char *dup = "{\"a\":1,\"a\":2}";
    assert_int_equal(once__a2a_json_parse(dup, strlen(dup), &v, why, sizeof why), ONCE_EPARSE);
    assert_null(v);
    assert_non_null(strstr(why, "duplicate object key"));
    /* What the reader declines is still checked before jansson reads it. */
    const char *bad = "{\"a\":\"\xc3\"}";
    assert_int_equal(once__a2a_json_parse(bad, strlen(bad), &v, why, sizeof why), ONCE_EPARSE);
    assert_string_equal(why, "invalid UTF-8 at offset 6");
    const char *nul = "{\"a\":\"x\0\"}";
    assert_int_equal(once__a2a_json_parse(nul, 10, &v, why, sizeof why), ONCE_EPARSE);
    assert_string_equal(why, "NUL byte at offset 7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_text_reads_as_jansson_reads_it),
        cmocka_unit_test(other_text_is_declined),
        cmocka_unit_test(request_reader_reads_plain_text_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
