/*
 * test_json_alloc.c -- jansson on the library's allocator (src/core/alloc.c)
 * and the guarded parse (once__json_loadb, src/core/jcs.c): JSON builds and
 * parses fail under fault injection (test_alloc.c sees them go through
 * once_set_allocator's hooks); a parse that ran out of memory answers
 * ONCE_ENOMEM and never a damaged value (jansson's own lexer drops
 * characters when its buffer cannot grow); the guard ends with the parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_int.h"
#include "core/jcs.h"

static int reset(void **state)
{
    (void)state;
    once__alloc_fail_after(-1);
    return 0;
}

static void builds_fail_under_injection(void **state)
{
    (void)state;
    once__alloc_fail_after(0);
    assert_null(json_object());
    once__alloc_fail_after(0);
    assert_null(json_pack("{s:s}", "k", "v"));
    once__alloc_fail_after(-1);
    json_t *v = json_object(); /* one-shot: the next works */
    assert_non_null(v);
    json_decref(v);
}

/* Keys, strings and numbers longer than jansson's 16-byte token buffer, so
 * the lexer grows it mid-token. */
static const char *long_text =
    "{\"a-key-longer-than-sixteen\":\"a string value longer than sixteen\","
    "\"n\":123456789012345678,\"r\":1.25e10,\"list\":[\"x\",{\"deep-key-also-long\":true}]}";

static void parse_sweep_never_damages(void **state)
{
    (void)state;
    json_t *ref = NULL;
    assert_int_equal(once__json_loads(long_text, 0, &ref, NULL), ONCE_OK);
    once__alloc_fail_after(-1);
    json_t *v = NULL;
    assert_int_equal(once__json_loads(long_text, 0, &v, NULL), ONCE_OK);
    long n = once__alloc_count();
    json_decref(v);
    assert_true(n > 5);
    for (long i = 0; i <= n; i++) {
        json_error_t err;
        once__alloc_fail_after(i);
        int rc = once__json_loads(long_text, 0, &v, &err);
        once__alloc_fail_after(-1);
        if (i < n) {
            if (rc != ONCE_ENOMEM)
                fail_msg("allocation %ld failed: %s, want ONCE_ENOMEM", i, once_errname(rc));
            assert_null(v);
        } else {
            assert_int_equal(rc, ONCE_OK);
            assert_true(json_equal(v, ref));
            json_decref(v);
        }
        /* The guard ended with the parse: this thread allocates again. */
        json_t *after = json_string("fine");
        assert_non_null(after);
        json_decref(after);
    }
    json_decref(ref);
}

static void parse_errors(void **state)
{
    (void)state;
    json_t *v = (json_t *)&v;
    json_error_t err;
    assert_int_equal(once__json_loads("{\"a\":", 0, &v, &err), ONCE_EPARSE);
    assert_null(v);
    assert_true(err.text[0] != '\0');
    assert_int_equal(once__json_loads("{\"a\":1,\"a\":2}", JSON_REJECT_DUPLICATES, &v, &err),
                     ONCE_EPARSE);
    assert_int_equal(json_error_code(&err), json_error_duplicate_key);
    assert_int_equal(once__json_loads(NULL, 0, &v, NULL), ONCE_EPARSE);
    assert_int_equal(once__json_loadb("[1]xyz", 3, 0, &v, NULL), ONCE_OK);
    assert_int_equal(json_array_size(v), 1);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(builds_fail_under_injection, reset, reset),
        cmocka_unit_test_setup_teardown(parse_sweep_never_damages, reset, reset),
        cmocka_unit_test_setup_teardown(parse_errors, reset, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
