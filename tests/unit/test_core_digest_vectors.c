/*
 * test_core_digest_vectors.c -- the request digest (src/core/jcs.c,
 * docs/extension.md section 5) against the test vectors the conformance
 * kit reads too (conformance/vectors/digest.json): for every vector the
 * canonical form of its counted members and its SHA-256 are the ones the
 * file states, so the C code, the specification and any other
 * implementation checked by the kit agree byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jcs.h"

#define VECTORS ONCE_SOURCE_DIR "/conformance/vectors/digest.json"

static const char *const counted[] = {"extensions", "messageId", "metadata", "parts",
                                      "referenceTaskIds", "role"};

static void test_vectors(void **state)
{
    (void)state;
    json_error_t err;
    json_t *doc = json_load_file(VECTORS, 0, &err);
    if (doc == NULL)
        fail_msg("%s: %s (line %d)", VECTORS, err.text, err.line);
    json_t *vs = json_object_get(doc, "vectors");
    assert_true(json_array_size(vs) >= 8);
    size_t i;
    json_t *v;
    json_array_foreach(vs, i, v) {
        const char *name = json_string_value(json_object_get(v, "name"));
        const json_t *msg = json_object_get(v, "message");
        const json_t *push = json_object_get(v, "taskPushNotificationConfig");
        /* The digest. */
        uint8_t d[ONCE_SHA256_LEN];
        char hex[ONCE_DIGEST_HEX + 1];
        assert_int_equal(once__request_digest_json(msg, push, d), ONCE_OK);
        once_hex(d, sizeof d, hex);
        if (strcmp(hex, json_string_value(json_object_get(v, "sha256"))) != 0)
            fail_msg("vector %s: sha256 %s, the file says %s", name, hex,
                     json_string_value(json_object_get(v, "sha256")));
        /* The canonical form of the counted members. */
        json_t *o = json_object();
        for (size_t k = 0; k < sizeof counted / sizeof counted[0]; k++) {
            json_t *m = json_object_get(msg, counted[k]);
            if (m != NULL)
                json_object_set(o, counted[k], m);
        }
        if (push != NULL)
            json_object_set(o, "taskPushNotificationConfig", (json_t *)push);
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(once__jcs_json(o, &text, &len), ONCE_OK);
        if (strcmp(text, json_string_value(json_object_get(v, "canonical"))) != 0)
            fail_msg("vector %s: canonical\n %s\nthe file says\n %s", name, text,
                     json_string_value(json_object_get(v, "canonical")));
        once_free(text);
        json_decref(o);
    }
    /* The vectors that differ only in what does not count agree. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(vs, 0), "sha256")),
                        json_string_value(json_object_get(json_array_get(vs, 1), "sha256")));
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
