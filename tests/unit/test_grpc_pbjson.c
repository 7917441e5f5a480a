/*
 * test_grpc_pbjson.c -- src/grpc/pbjson*.c and status.c: every A2A message
 * type round-trips (tests/grpc/pbjson_cases.json, the corpus the Python
 * cross-check uses too), the documents ProtoJSON refuses are refused with
 * their JSON path named, hostile bytes (cut short, wrong wire types, nesting
 * deeper than any reader should follow, invalid UTF-8, NaN in a Value) end
 * in ONCE_EPARSE, and every allocation failure ends cleanly. The status
 * codec maps A2A errors both ways as spec 5.4 and 10.6 say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_int.h"
#include "grpc/pbjson.h"
#include "grpc/status.h"
#include "json_fixture.h"
#include "once/once.h"

#include "a2a.pb-c.h"
#include "google/protobuf/struct.pb-c.h"
#include "google/rpc/status.pb-c.h"

static json_t *corpus(void)
{
    json_error_t e;
    json_t *c = json_load_file(ONCE_SOURCE_DIR "/tests/grpc/pbjson_cases.json", 0, &e);
    if (c == NULL)
        fail_msg("pbjson_cases.json: %s", e.text);
    return c;
}

static const ProtobufCMessageDescriptor *type_of(const json_t *c)
{
    const ProtobufCMessageDescriptor *d =
        once__pbjson_type(json_string_value(json_object_get(c, "type")));
    assert_non_null(d);
    return d;
}

static void dump_mismatch(const char *name, const json_t *got, const json_t *want)
{
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
    char *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
    print_error("%s:\n  got  %s\n  want %s\n", name, g, w);
    free(g);
    free(w);
}

/* Canonical documents come back exactly; the others come back the same
 * the second time round. */
static void test_corpus_round_trips(void **state)
{
    (void)state;
    json_t *all = corpus();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(all, "cases"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const json_t *in = json_object_get(c, "json");
        const ProtobufCMessageDescriptor *d = type_of(c);
        char err[256] = "";
        uint8_t *b;
        size_t n;
        int rc = once__pbjson_to_pb(d, in, &b, &n, err, sizeof err);
        if (rc != ONCE_OK)
            fail_msg("%s: to_pb %d %s", name, rc, err);
        json_t *out;
        rc = once__pbjson_from_pb(d, b, n, &out, err, sizeof err);
        if (rc != ONCE_OK)
            fail_msg("%s: from_pb %d %s", name, rc, err);
        if (!json_is_false(json_object_get(c, "canonical"))) {
            if (!json_equal(out, in)) {
                dump_mismatch(name, out, in);
                fail();
            }
        } else {
            uint8_t *b2;
            size_t n2;
            json_t *again;
            assert_int_equal(once__pbjson_to_pb(d, out, &b2, &n2, err, sizeof err), ONCE_OK);
            assert_int_equal(once__pbjson_from_pb(d, b2, n2, &again, err, sizeof err), ONCE_OK);
            if (!json_equal(out, again)) {
                dump_mismatch(name, again, out);
                fail();
            }
            json_decref(again);
            once_free(b2);
        }
        json_decref(out);
        once_free(b);
    }
    json_decref(all);
}

static void test_corpus_rejections_name_the_path(void **state)
{
    (void)state;
    json_t *all = corpus();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(all, "reject"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *path = json_string_value(json_object_get(c, "path"));
        char err[256] = "", want[128];
        uint8_t *b = (uint8_t *)"x";
        size_t n = 1;
        int rc = once__pbjson_to_pb(type_of(c), json_object_get(c, "json"), &b, &n, err,
                                    sizeof err);
        if (rc != ONCE_EINVAL)
            fail_msg("%s: rc %d (%s)", name, rc, err);
        assert_null(b);
        assert_int_equal(n, 0);
        snprintf(want, sizeof want, "%s: ", path);
        if (path[0] != '\0' && strncmp(err, want, strlen(want)) != 0)
            fail_msg("%s: error \"%s\" does not start with \"%s\"", name, err, want);
    }
    json_decref(all);
}

static void test_error_paths(void **state)
{
    (void)state;
    static const struct {
        const char *json, *err;
    } cases[] = {
        {"{\"message\": {\"parts\": [{\"text\": \"a\"}, {\"raw\": \"%%%\"}]}}",
         "message.parts[1].raw: not base64"},
        {"{\"message\": {\"role\": \"ROLE_ADMIN\"}}",
         "message.role: not a lf.a2a.v1.Role: \"ROLE_ADMIN\""},
        {"{\"configuration\": {\"historyLength\": 4294967296}}",
         "configuration.historyLength: integer out of range"},
        {"{\"metadata\": {\"a\": 1}, \"messages\": []}", "messages: unknown field of lf.a2a.v1.SendMessageRequest"},
        {"{\"configuration\": {\"taskPushNotificationConfig\": {\"authentication\": []}}}",
         "configuration.taskPushNotificationConfig.authentication: expected an object, not an array"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *in = j(cases[i].json);
        char err[256] = "";
        uint8_t *b;
        size_t n;
        assert_int_equal(once__pbjson_to_pb(&lf__a2a__v1__send_message_request__descriptor, in,
                                            &b, &n, err, sizeof err),
                         ONCE_EINVAL);
        assert_string_equal(err, cases[i].err);
        json_decref(in);
    }
}

/* A Task's bytes, from the corpus's first case. */
static uint8_t *task_bytes(size_t *n)
{
    json_t *all = corpus();
    json_t *c = json_array_get(json_object_get(all, "cases"), 0);
    uint8_t *b;
    assert_int_equal(once__pbjson_to_pb(type_of(c), json_object_get(c, "json"), &b, n, NULL, 0),
                     ONCE_OK);
    json_decref(all);
    return b;
}

static int from(const ProtobufCMessageDescriptor *d, const uint8_t *b, size_t n, char *err,
                size_t errlen)
{
    json_t *out = NULL;
    int rc = once__pbjson_from_pb(d, b, n, &out, err, errlen);
    assert_true(rc == ONCE_OK ? out != NULL : out == NULL);
    json_decref(out);
    return rc;
}

/* Every prefix of a valid message either is one (cut between fields) or is
 * refused; none crashes or leaks. */
static void test_truncated(void **state)
{
    (void)state;
    size_t n;
    uint8_t *b = task_bytes(&n);
    size_t ok = 0;
    for (size_t k = 0; k < n; k++) {
        int rc = from(&lf__a2a__v1__task__descriptor, b, k, NULL, 0);
        assert_true(rc == ONCE_OK || rc == ONCE_EPARSE);
        ok += rc == ONCE_OK;
    }
    assert_true(ok < n / 4); /* most cuts land inside a field */
    char err[128];
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, b, n - 1, err, sizeof err), ONCE_EPARSE);
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, b, n, NULL, 0), ONCE_OK);
    once_free(b);
}

static void test_wire_errors(void **state)
{
    (void)state;
    char err[128];
    /* Task.id (1) as a varint instead of a string. */
    static const uint8_t varint_id[] = {0x08, 0x01};
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, varint_id, 2, err, sizeof err),
                     ONCE_EPARSE);
    assert_string_equal(err, "lf.a2a.v1.Task.id: wrong wire type 0");
    /* Task.status (3) as a fixed64. */
    static const uint8_t fixed_status[] = {0x19, 1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, fixed_status, 9, NULL, 0), ONCE_EPARSE);
    /* A group (wire type 3), a length past the end, field number 0. */
    static const uint8_t group[] = {0x0b, 0x0c};
    static const uint8_t long_len[] = {0x0a, 0x05, 'a'};
    static const uint8_t field0[] = {0x02, 0x00};
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, group, 2, NULL, 0), ONCE_EPARSE);
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, long_len, 3, NULL, 0), ONCE_EPARSE);
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, field0, 2, NULL, 0), ONCE_EPARSE);
    /* A varint longer than 10 bytes. */
    static const uint8_t long_varint[] = {0x20, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(from(&lf__a2a__v1__message__descriptor, long_varint, sizeof long_varint,
                          NULL, 0),
                     ONCE_EPARSE);
    /* Strings: invalid UTF-8, a NUL. */
    static const uint8_t bad_utf8[] = {0x0a, 0x02, 0xc3, 0x28};
    static const uint8_t nul[] = {0x0a, 0x02, 'a', 0x00};
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, bad_utf8, 4, err, sizeof err),
                     ONCE_EPARSE);
    assert_string_equal(err, "lf.a2a.v1.Task.id: not UTF-8 text without NUL");
    assert_int_equal(from(&lf__a2a__v1__task__descriptor, nul, 4, NULL, 0), ONCE_EPARSE);
    /* Unknown fields are skipped: Task{id: "t", 99: 7}. */
    static const uint8_t unknown[] = {0x0a, 0x01, 't', 0x98, 0x06, 0x07};
    json_t *out;
    assert_int_equal(once__pbjson_from_pb(&lf__a2a__v1__task__descriptor, unknown,
                                          sizeof unknown, &out, NULL, 0),
                     ONCE_OK);
    json_t *want = j("{\"id\": \"t\"}");
    assert_true(json_equal(out, want));
    json_decref(out);
    json_decref(want);
    /* An unknown enum number prints as a number. */
    static const uint8_t role9[] = {0x20, 0x09};
    assert_int_equal(once__pbjson_from_pb(&lf__a2a__v1__message__descriptor, role9, 2, &out,
                                          NULL, 0),
                     ONCE_OK);
    assert_int_equal(json_integer_value(json_object_get(out, "role")), 9);
    json_decref(out);
}

/* Value{struct_value{fields{"k": Value{...}}}} nested depth times. */
static uint8_t *deep_value(int depth, size_t *n)
{
    Google__Protobuf__Value *v = once_calloc((size_t)depth + 1, sizeof *v);
    Google__Protobuf__Struct *s = once_calloc((size_t)depth, sizeof *s);
    Google__Protobuf__Struct__FieldsEntry *e = once_calloc((size_t)depth, sizeof *e);
    Google__Protobuf__Struct__FieldsEntry **ep = once_calloc((size_t)depth, sizeof *ep);
    for (int i = 0; i <= depth; i++)
        google__protobuf__value__init(&v[i]);
    v[depth].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE;
    for (int i = 0; i < depth; i++) {
        google__protobuf__struct__init(&s[i]);
        google__protobuf__struct__fields_entry__init(&e[i]);
        e[i].key = "k";
        e[i].value = &v[i + 1];
        ep[i] = &e[i];
        s[i].n_fields = 1;
        s[i].fields = &ep[i];
        v[i].kind_case = GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE;
        v[i].struct_value = &s[i];
    }
    *n = google__protobuf__value__get_packed_size(&v[0]);
    uint8_t *b = once_malloc(*n);
    google__protobuf__value__pack(&v[0], b);
    once_free(v);
    once_free(s);
    once_free(e);
    once_free(ep);
    return b;
}

static void test_deep_nesting(void **state)
{
    (void)state;
    size_t n;
    char err[128];
    /* 20 levels of JSON is fine; 66 (198 on the wire) passes the wire check
     * but not the JSON limit; 2000 stops at the wire check before protobuf-c
     * would recurse. */
    uint8_t *b = deep_value(20, &n);
    assert_int_equal(from(&google__protobuf__value__descriptor, b, n, NULL, 0), ONCE_OK);
    once_free(b);
    b = deep_value(66, &n);
    assert_int_equal(from(&google__protobuf__value__descriptor, b, n, err, sizeof err),
                     ONCE_EPARSE);
    assert_string_equal(err, "JSON nested deeper than 64");
    once_free(b);
    b = deep_value(2000, &n);
    assert_int_equal(from(&google__protobuf__value__descriptor, b, n, err, sizeof err),
                     ONCE_EPARSE);
    assert_non_null(strstr(err, "nested deeper"));
    once_free(b);
    /* JSON deeper than ONCE_JSON_MAX_DEPTH is refused before it is read. */
    char text[400] = "";
    for (int i = 0; i < 70; i++)
        strncat(text, "[", sizeof text - strlen(text) - 1);
    for (int i = 0; i < 70; i++)
        strncat(text, "]", sizeof text - strlen(text) - 1);
    json_t *deep = j(text), *part = json_pack("{s:O}", "data", deep);
    uint8_t *out;
    assert_int_equal(once__pbjson_to_pb(&lf__a2a__v1__part__descriptor, part, &out, &n, err,
                                        sizeof err),
                     ONCE_EINVAL);
    assert_non_null(strstr(err, "nested deeper"));
    json_decref(deep);
    json_decref(part);
}

static void test_values_without_json(void **state)
{
    (void)state;
    /* Value{number_value: NaN} has no JSON form. */
    static const uint8_t nan[] = {0x11, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
    char err[128];
    assert_int_equal(from(&google__protobuf__value__descriptor, nan, sizeof nan, err, sizeof err),
                     ONCE_EPARSE);
    assert_string_equal(err, "Value.number_value is not finite");
    /* A Timestamp past year 9999. */
    static const uint8_t ts[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    assert_int_equal(from(&google__protobuf__timestamp__descriptor, ts, sizeof ts, NULL, 0),
                     ONCE_EPARSE);
    /* Duration overflow in JSON, an int64 past its range. */
    json_t *d = j("{\"retryDelay\": \"99999999999999999999s\"}");
    uint8_t *out;
    size_t n;
    const ProtobufCMessageDescriptor *retry = once__pbjson_type("google.rpc.RetryInfo");
    assert_non_null(retry);
    assert_int_equal(once__pbjson_to_pb(retry, d, &out, &n, err, sizeof err), ONCE_EINVAL);
    assert_string_equal(err, "retryDelay: not a duration (\"1.5s\")");
    json_decref(d);
}

/* No A2A message has a plain 64-bit field, so a descriptor written here
 * gives the codec one: Wide{int64 a = 1; uint64 b = 2; sint64 c = 3}. */
typedef struct {
    ProtobufCMessage base;
    int64_t a;
    uint64_t b;
    int64_t c;
} Wide;

static const ProtobufCMessageDescriptor wide_descriptor;

static void wide_init(ProtobufCMessage *m)
{
    memset(m, 0, sizeof(Wide));
    m->descriptor = &wide_descriptor;
}

static const ProtobufCFieldDescriptor wide_fields[] = {
    {"a", 1, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_INT64, 0, offsetof(Wide, a), NULL, NULL, 0, 0,
     NULL, NULL},
    {"b", 2, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_UINT64, 0, offsetof(Wide, b), NULL, NULL, 0, 0,
     NULL, NULL},
    {"c", 3, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_SINT64, 0, offsetof(Wide, c), NULL, NULL, 0, 0,
     NULL, NULL},
};
static const unsigned wide_by_name[] = {0, 1, 2};
static const ProtobufCIntRange wide_ranges[] = {{1, 0}, {0, 3}};
static const ProtobufCMessageDescriptor wide_descriptor = {
    PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC, "test.Wide", "Wide", "Wide", "test", sizeof(Wide), 3,
    wide_fields, wide_by_name, 1, wide_ranges, (ProtobufCMessageInit)wide_init, NULL, NULL, NULL};

static void test_int64(void **state)
{
    (void)state;
    static const char *const ok[][2] = {
        {"{\"a\": \"-9223372036854775808\", \"b\": \"18446744073709551615\", \"c\": -5}",
         "{\"a\": \"-9223372036854775808\", \"b\": \"18446744073709551615\", \"c\": \"-5\"}"},
        {"{\"a\": 9223372036854775807, \"b\": 1e3}",
         "{\"a\": \"9223372036854775807\", \"b\": \"1000\"}"},
        {"{\"a\": \"0\", \"b\": 0, \"c\": null}", "{}"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_t *in = j(ok[i][0]), *want = j(ok[i][1]), *out;
        uint8_t *b;
        size_t n;
        char err[128] = "";
        if (once__pbjson_to_pb(&wide_descriptor, in, &b, &n, err, sizeof err) != ONCE_OK)
            fail_msg("%s: %s", ok[i][0], err);
        assert_int_equal(once__pbjson_from_pb(&wide_descriptor, b, n, &out, NULL, 0), ONCE_OK);
        if (!json_equal(out, want)) {
            dump_mismatch(ok[i][0], out, want);
            fail();
        }
        json_decref(in);
        json_decref(want);
        json_decref(out);
        once_free(b);
    }
    static const char *const bad[][2] = {
        {"{\"a\": \"9223372036854775808\"}", "a: integer out of range"},
        {"{\"a\": \"-9223372036854775809\"}", "a: integer out of range"},
        {"{\"b\": \"18446744073709551616\"}", "b: integer out of range"},
        {"{\"b\": -1}", "b: integer out of range"},
        {"{\"c\": 1.5}", "c: not an integer"},
        {"{\"c\": \"12abc\"}", "c: not an integer: \"12abc\""},
        {"{\"c\": true}", "c: expected an integer, not a boolean"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *in = j(bad[i][0]);
        uint8_t *b;
        size_t n;
        char err[128] = "";
        assert_int_equal(once__pbjson_to_pb(&wide_descriptor, in, &b, &n, err, sizeof err),
                         ONCE_EINVAL);
        assert_string_equal(err, bad[i][1]);
        json_decref(in);
    }
}

/* Offsets are normalized to UTC, fractions printed in 0/3/6/9 digits. */
static void test_timestamps(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"\"2025-06-30T23:59:59.5+02:00\"", "\"2025-06-30T21:59:59.500Z\""},
        {"\"1969-12-31T23:59:59.000001-00:30\"", "\"1970-01-01T00:29:59.000001Z\""},
        {"\"2024-02-29T12:00:00.123456789Z\"", "\"2024-02-29T12:00:00.123456789Z\""},
        {"\"2024-02-29T12:00:00.1200Z\"", "\"2024-02-29T12:00:00.120Z\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *in = j(cases[i][0]), *want = j(cases[i][1]), *out;
        uint8_t *b;
        size_t n;
        assert_int_equal(once__pbjson_to_pb(&google__protobuf__timestamp__descriptor, in, &b, &n,
                                            NULL, 0),
                         ONCE_OK);
        assert_int_equal(once__pbjson_from_pb(&google__protobuf__timestamp__descriptor, b, n,
                                              &out, NULL, 0),
                         ONCE_OK);
        assert_true(json_equal(out, want));
        json_decref(in);
        json_decref(want);
        json_decref(out);
        once_free(b);
    }
}

/* Fail each allocation in turn: every run ends in ONCE_OK or ONCE_ENOMEM
 * (the sanitizer build checks nothing leaks). */
static void test_alloc_faults(void **state)
{
    (void)state;
    json_t *all = corpus();
    json_t *c = NULL, *k;
    size_t at;
    json_array_foreach(json_object_get(all, "cases"), at, k) {
        if (strcmp(json_string_value(json_object_get(k, "name")), "agent card") == 0)
            c = k;
    }
    assert_non_null(c);
    const ProtobufCMessageDescriptor *d = type_of(c);
    const json_t *in = json_object_get(c, "json");
    size_t n;
    uint8_t *b;
    assert_int_equal(once__pbjson_to_pb(d, in, &b, &n, NULL, 0), ONCE_OK);
    for (int dir = 0; dir < 2; dir++) {
        once__alloc_fail_after(-1);
        json_t *out = NULL;
        uint8_t *ob = NULL;
        size_t on;
        if (dir == 0)
            assert_int_equal(once__pbjson_from_pb(d, b, n, &out, NULL, 0), ONCE_OK);
        else
            assert_int_equal(once__pbjson_to_pb(d, in, &ob, &on, NULL, 0), ONCE_OK);
        json_decref(out);
        once_free(ob);
        long count = once__alloc_count();
        assert_true(count > 10);
        for (long i = 0; i < count; i++) {
            once__alloc_fail_after(i);
            out = NULL;
            ob = NULL;
            int rc = dir == 0 ? once__pbjson_from_pb(d, b, n, &out, NULL, 0)
                              : once__pbjson_to_pb(d, in, &ob, &on, NULL, 0);
            once__alloc_fail_after(-1);
            if (rc != ONCE_OK && rc != ONCE_ENOMEM)
                fail_msg("direction %d, allocation %ld: rc %d", dir, i, rc);
            json_decref(out);
            once_free(ob);
        }
    }
    once_free(b);
    json_decref(all);
}

/* --- the answer path without a tree (pbjson_text.c) ------------------------------- */

/* The bytes the text path wrote and the bytes the tree path writes for the
 * same JSON decode to the same message. */
static void same_as_tree(const char *name, const ProtobufCMessageDescriptor *d, const json_t *in,
                         const uint8_t *fast, size_t fn)
{
    char err[256] = "";
    uint8_t *b;
    size_t n;
    json_t *a = NULL, *w = NULL;
    if (once__pbjson_answer_to_pb(d, in, &b, &n, err, sizeof err) != ONCE_OK)
        fail_msg("%s: the text path took what the tree path refuses (%s)", name, err);
    if (once__pbjson_from_pb(d, fast, fn, &a, err, sizeof err) != ONCE_OK)
        fail_msg("%s: the text path's bytes do not read: %s", name, err);
    assert_int_equal(once__pbjson_from_pb(d, b, n, &w, err, sizeof err), ONCE_OK);
    if (!json_equal(a, w)) {
        dump_mismatch(name, a, w);
        fail();
    }
    json_decref(a);
    json_decref(w);
    once_free(b);
}

/* Every corpus document, compact and indented, goes the fast way to the
 * tree path's message, except the kinds it leaves to the tree (Any and
 * Duration, a number written as a real where an integer goes, "NaN"),
 * named here; every document ProtoJSON refuses is left to the tree. */
static void test_text_path_agrees(void **state)
{
    (void)state;
    static const char *const tree_only[] = {
        "status with error info",                    /* an Any */
        "enum numbers, int64-style strings, offsets", /* historyLength 1.0 */
        NULL,
    };
    json_t *all = corpus();
    size_t i, fast = 0;
    json_t *c;
    json_array_foreach(json_object_get(all, "cases"), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const json_t *in = json_object_get(c, "json");
        const ProtobufCMessageDescriptor *d = type_of(c);
        int expect_fast = json_is_object(in);
        for (const char *const *t = tree_only; *t != NULL; t++)
            if (strcmp(*t, name) == 0)
                expect_fast = 0;
        for (int indent = 0; indent < 2; indent++) {
            char *text = json_dumps(in, indent ? JSON_INDENT(2) : JSON_COMPACT);
            uint8_t *b = NULL;
            size_t n = 0;
            int rc = once__pbjson_text_to_pb(d, text, strlen(text), &b, &n);
            if (rc == ONCE_OK) {
                same_as_tree(name, d, in, b, n);
                fast++;
            } else if (rc != ONCE_EUNSUPPORTED || expect_fast) {
                fail_msg("%s: the text path answered %d", name, rc);
            }
            once_free(b);
            free(text);
        }
    }
    assert_true(fast > 20);
    json_array_foreach(json_object_get(all, "reject"), i, c) {
        char *text = json_dumps(json_object_get(c, "json"), JSON_COMPACT);
        uint8_t *b = NULL;
        size_t n = 0;
        if (once__pbjson_text_to_pb(type_of(c), text, strlen(text), &b, &n) != ONCE_EUNSUPPORTED)
            fail_msg("%s: the text path took a document ProtoJSON refuses",
                     json_string_value(json_object_get(c, "name")));
        free(text);
    }
    json_decref(all);
}

/* What the codec's text can hold: escapes and surrogate pairs, -0, members
 * in any order; and what the fast path must leave to the tree: members the
 * message has no field for (the tree path leaves them out of an answer), a
 * NUL, a lone surrogate, an error object, trailing text, nesting past the
 * limit. */
static void test_text_path_edges(void **state)
{
    (void)state;
    const ProtobufCMessageDescriptor *d = &lf__a2a__v1__send_message_response__descriptor;
    static const char *const agree[] = {
        "{\"task\":{\"id\":\"t\\\"1\\u00e9\\ud83d\\ude00\",\"contextId\":\"c\","
        "\"status\":{\"state\":\"TASK_STATE_COMPLETED\",\"timestamp\":\"2026-01-02T03:04:05.123Z\"},"
        "\"metadata\":{\"n\":-0,\"x\":[1,null,\"s\",{\"k\":true}],\"e\":{},\"l\":[]}}}",
        " { \"task\" : { \"status\" : { \"state\" : 3 } , \"id\" : \"\" , \"history\" : [ ] } } ",
        "{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"\"},"
        "{\"raw\":\"aGVsbG8=\",\"mediaType\":\"a/b\"},{\"data\":null},{\"url\":\"u\"}]}}",
        "{\"task\":null}",
        "{}",
    };
    for (size_t k = 0; k < sizeof agree / sizeof agree[0]; k++) {
        json_t *in = json_loads(agree[k], 0, NULL);
        assert_non_null(in);
        uint8_t *b = NULL;
        size_t n = 0;
        if (once__pbjson_text_to_pb(d, agree[k], strlen(agree[k]), &b, &n) != ONCE_OK)
            fail_msg("case %zu: the text path gave up", k);
        same_as_tree(agree[k], d, in, b, n);
        once_free(b);
        json_decref(in);
    }
    static const char *const tree[] = {
        "{\"task\":{\"id\":\"t\",\"delivery\":{\"a\":1}}}",   /* no such field: left out */
        "{\"error\":{\"code\":404}}",
        "{\"task\":{\"id\":\"a\\u0000b\"}}",
        "{\"task\":{\"id\":\"\\ud800\"}}",
        "{\"task\":{\"id\":\"t\",\"id\":\"u\"}}",
        "{\"task\":{}} x",
        "{\"task\":{},\"message\":{}}",                        /* two members of a oneof */
        "{\"task\":{\"status\":{\"state\":3.0}}}",
        "{\"task\":{\"id\":\"\xc0\x80\"}}",                    /* an overlong UTF-8 form */
        "{\"task\":{\"id\":\"t\"}",
        "null",
    };
    for (size_t k = 0; k < sizeof tree / sizeof tree[0]; k++) {
        uint8_t *b = (uint8_t *)"x";
        size_t n = 1;
        if (once__pbjson_text_to_pb(d, tree[k], strlen(tree[k]), &b, &n) != ONCE_EUNSUPPORTED)
            fail_msg("%s: the text path did not leave it to the tree", tree[k]);
        assert_null(b);
        assert_int_equal(n, 0);
    }
    /* nesting: a Struct ONCE_JSON_MAX_DEPTH deep in all is read; one more
     * level is the tree path's to refuse */
    for (int extra = 0; extra < 2; extra++) {
        char text[1024];
        int levels = ONCE_JSON_MAX_DEPTH - 2 + extra;   /* inside the response and the task */
        size_t at = (size_t)snprintf(text, sizeof text, "{\"task\":{\"metadata\":");
        for (int k = 0; k < levels; k++)
            at += (size_t)snprintf(text + at, sizeof text - at, "{\"a\":");
        at += (size_t)snprintf(text + at, sizeof text - at, "1");
        for (int k = 0; k < levels + 2; k++)
            at += (size_t)snprintf(text + at, sizeof text - at, "}");
        assert_true(at < sizeof text);
        uint8_t *b = NULL;
        size_t n = 0;
        int rc = once__pbjson_text_to_pb(d, text, strlen(text), &b, &n);
        assert_int_equal(rc, extra ? ONCE_EUNSUPPORTED : ONCE_OK);
        if (!extra) {
            json_t *in = json_loads(text, 0, NULL);
            same_as_tree("deep", d, in, b, n);
            json_decref(in);
        }
        once_free(b);
    }
}

/* Fail each allocation of the text path in turn: ONCE_ENOMEM, nothing
 * kept (the sanitizer build checks nothing leaks). */
static void test_text_path_alloc_faults(void **state)
{
    (void)state;
    const ProtobufCMessageDescriptor *d = &lf__a2a__v1__send_message_response__descriptor;
    /* a body longer than 127 bytes makes the buffer grow as lengths widen */
    char text[4096];
    size_t at = (size_t)snprintf(text, sizeof text, "{\"task\":{\"id\":\"t\",\"metadata\":{");
    for (int k = 0; k < 40; k++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%s\"k%d\":\"%064d\"", k ? "," : "",
                               k, k);
    at += (size_t)snprintf(text + at, sizeof text - at, "}}}");
    assert_true(at < sizeof text);
    uint8_t *b;
    size_t n;
    once__alloc_fail_after(-1);
    assert_int_equal(once__pbjson_text_to_pb(d, text, strlen(text), &b, &n), ONCE_OK);
    once_free(b);
    long count = once__alloc_count();
    assert_true(count >= 1);
    for (long i = 0; i < count; i++) {
        once__alloc_fail_after(i);
        b = (uint8_t *)"x";
        int rc = once__pbjson_text_to_pb(d, text, strlen(text), &b, &n);
        once__alloc_fail_after(-1);
        assert_int_equal(rc, ONCE_ENOMEM);
        assert_null(b);
    }
}

/* --- the status codec ---------------------------------------------------------- */

static void test_status_both_ways(void **state)
{
    (void)state;
    json_t *body = j("{\"error\": {\"code\": 404, \"status\": \"NOT_FOUND\", \"message\": "
                     "\"Task t-1 was not found\", \"details\": [{\"@type\": "
                     "\"type.googleapis.com/google.rpc.ErrorInfo\", \"reason\": "
                     "\"TASK_NOT_FOUND\", \"domain\": \"a2a-protocol.org\", \"metadata\": "
                     "{\"taskId\": \"t-1\"}}, {\"@type\": \"type.googleapis.com/x.Y\"}]}}");
    int code;
    char *msg;
    uint8_t *det;
    size_t n;
    assert_int_equal(once__grpc_status_from_aip193(body, &code, &msg, &det, &n), ONCE_OK);
    assert_int_equal(code, 5);
    assert_string_equal(msg, "Task t-1 was not found");
    Google__Rpc__Status *st = google__rpc__status__unpack(once__pbjson_allocator(), n, det);
    assert_non_null(st);
    assert_int_equal(st->code, 5);
    assert_int_equal(st->n_details, 1); /* x.Y is dropped */
    assert_string_equal(st->details[0]->type_url, "type.googleapis.com/google.rpc.ErrorInfo");
    google__rpc__status__free_unpacked(st, once__pbjson_allocator());

    json_t *back;
    assert_int_equal(once__grpc_status_to_aip193(code, NULL, det, n, &back), ONCE_OK);
    json_t *want = json_deep_copy(body);
    json_array_remove(json_object_get(json_object_get(want, "error"), "details"), 1);
    if (!json_equal(back, want)) {
        dump_mismatch("status round trip", back, want);
        fail();
    }
    json_decref(back);
    json_decref(want);
    once_free(msg);
    once_free(det);
    json_decref(body);
}

static void test_status_http_mapping(void **state)
{
    (void)state;
    /* Spec 5.4: the reason decides where the gRPC code is shared. */
    assert_int_equal(once__grpc_http_status(9, "TASK_NOT_CANCELABLE"), 409);
    assert_int_equal(once__grpc_http_status(9, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"), 400);
    assert_int_equal(once__grpc_http_status(12, "UNSUPPORTED_OPERATION"), 400);
    assert_int_equal(once__grpc_http_status(3, "CONTENT_TYPE_NOT_SUPPORTED"), 415);
    assert_int_equal(once__grpc_http_status(13, "INVALID_AGENT_RESPONSE"), 502);
    assert_int_equal(once__grpc_http_status(12, NULL), 501);
    assert_int_equal(once__grpc_http_status(16, NULL), 401);
    assert_int_equal(once__grpc_http_status(99, NULL), 500);
    assert_int_equal(once__grpc_code("UNAUTHENTICATED"), 16);
    assert_int_equal(once__grpc_code("OK"), 0);
    assert_int_equal(once__grpc_code("NOPE"), -1);
    assert_string_equal(once__grpc_code_name(9), "FAILED_PRECONDITION");
    assert_string_equal(once__grpc_code_name(-1), "UNKNOWN");
    /* A body without a known status: its HTTP code decides. */
    json_t *body = j("{\"error\": {\"code\": 503, \"message\": \"draining\"}}");
    int code;
    char *msg;
    uint8_t *det;
    size_t n;
    assert_int_equal(once__grpc_status_from_aip193(body, &code, &msg, &det, &n), ONCE_OK);
    assert_int_equal(code, 14);
    once_free(msg);
    once_free(det);
    json_decref(body);
    body = j("[1]");
    assert_int_equal(once__grpc_status_from_aip193(body, &code, &msg, &det, &n), ONCE_EINVAL);
    assert_null(msg);
    assert_null(det);
    json_decref(body);
    /* Garbage details are ignored; the message argument wins. */
    json_t *out;
    assert_int_equal(once__grpc_status_to_aip193(5, "gone", (const uint8_t *)"\xff\xff", 2, &out),
                     ONCE_OK);
    json_t *want = j("{\"error\": {\"code\": 404, \"status\": \"NOT_FOUND\", \"message\": "
                     "\"gone\", \"details\": []}}");
    assert_true(json_equal(out, want));
    json_decref(out);
    json_decref(want);
}

static void test_grpc_message(void **state)
{
    (void)state;
    char *e = once__grpc_message_encode("Task \"t-1\": 100% done \xe2\x9c\x93\n");
    assert_string_equal(e, "Task \"t-1\": 100%25 done %E2%9C%93%0A");
    char *d = once__grpc_message_decode(e, strlen(e));
    assert_string_equal(d, "Task \"t-1\": 100% done \xe2\x9c\x93\n");
    once_free(e);
    once_free(d);
    /* Bad escapes pass through; a NUL cannot. */
    d = once__grpc_message_decode("50%zz %4 %00", 12);
    assert_string_equal(d, "50%zz %4 ?");
    once_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_round_trips),
        cmocka_unit_test(test_corpus_rejections_name_the_path),
        cmocka_unit_test(test_error_paths),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_wire_errors),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_values_without_json),
        cmocka_unit_test(test_int64),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_alloc_faults),
        cmocka_unit_test(test_text_path_agrees),
        cmocka_unit_test(test_text_path_edges),
        cmocka_unit_test(test_text_path_alloc_faults),
        cmocka_unit_test(test_status_both_ways),
        cmocka_unit_test(test_status_http_mapping),
        cmocka_unit_test(test_grpc_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
