/*
 * test_a2a_names.c -- proto field names in a request's params become their
 * ProtoJSON names (src/a2a/names.c):
 *   - at every depth, in objects inside arrays, never inside metadata or a
 *     Part's data;
 *   - a field given under both names is refused, and the refusal names the
 *     field by its full path;
 *   - a request that has no proto names is walked without allocating.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "a2a/a2a_int.h"
#include "core/jcs.h"
#include "unit/count_alloc.h"

/* params (JSON text) renamed, written back as text. */
static char *renamed(const char *params, int *rc, a2a_verr *e)
{
    json_t *v = NULL;
    assert_int_equal(once__json_loads(params, 0, &v, NULL), ONCE_OK);
    *rc = once__a2a_json_names(v, e);
    char *out = NULL;
    assert_int_equal(once__json_write(v, &out, NULL), ONCE_OK);
    json_decref(v);
    return out;
}

static void renames_at_every_depth(void **state)
{
    (void)state;
    a2a_verr e;
    int rc;
    char *out = renamed("{\"message\":{\"message_id\":\"m\",\"parts\":[{\"text\":\"x\","
                        "\"media_type\":\"text/plain\",\"data\":{\"keep_me\":1}}],"
                        "\"metadata\":{\"a_b\":{\"c_d\":2}}},\"history_length\":3}",
                        &rc, &e);
    assert_int_equal(rc, ONCE_OK);
    assert_string_equal(out, "{\"message\":{\"parts\":[{\"text\":\"x\",\"data\":{\"keep_me\":1},"
                             "\"mediaType\":\"text/plain\"}],\"metadata\":{\"a_b\":{\"c_d\":2}},"
                             "\"messageId\":\"m\"},\"historyLength\":3}");
    once_free(out);
}

static void both_names_refused_with_the_path(void **state)
{
    (void)state;
    static const struct {
        const char *params;
        const char *field;
    } cases[] = {
        {"{\"task_id\":\"a\",\"taskId\":\"b\"}", "taskId"},
        {"{\"message\":{\"context_id\":\"a\",\"contextId\":\"b\"}}", "message.contextId"},
        {"{\"configs\":[{\"x\":1},{\"push\":{\"auth_scheme\":1,\"authScheme\":2}}]}",
         "configs[1].push.authScheme"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        a2a_verr e;
        memset(&e, 0, sizeof e);
        int rc;
        once_free(renamed(cases[i].params, &rc, &e));
        assert_int_equal(rc, ONCE_EINVAL);
        assert_string_equal(e.field, cases[i].field);
        assert_non_null(strstr(e.why, "is given twice"));
    }
}

/* The common request names every field in camelCase: the pass costs no
 * allocation (no list of names to rename, no path text). */
static void no_proto_names_no_allocation(void **state)
{
    (void)state;
    json_t *v = NULL;
    assert_int_equal(once__json_loads("{\"message\":{\"messageId\":\"m\",\"taskId\":\"t\","
                                      "\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"},"
                                      "{\"data\":{\"a_b\":1}}]},\"configuration\":"
                                      "{\"historyLength\":2}}",
                                      0, &v, NULL),
                     ONCE_OK);
    a2a_verr e;
    once_set_allocator(&counting_allocator);
    counted = 0;
    counting = 1;
    int rc = once__a2a_json_names(v, &e);
    counting = 0;
    once_set_allocator(NULL);
    assert_int_equal(rc, ONCE_OK);
    assert_int_equal(counted, 0);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(renames_at_every_depth),
        cmocka_unit_test(both_names_refused_with_the_path),
        cmocka_unit_test(no_proto_names_no_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
