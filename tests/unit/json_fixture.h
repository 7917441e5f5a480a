/*
 * json_fixture.h -- shared by the unit tests of pure JSON conversions
 * (test_core_v03*.c): a JSON literal, a conversion checked against its
 * expected output, a round trip checked to give back what went in.
 * Include after cmocka.h.
 */
#ifndef ONCE_TESTS_JSON_FIXTURE_H
#define ONCE_TESTS_JSON_FIXTURE_H

#include <jansson.h>

#define JF_UNUSED __attribute__((unused))

/* The JSON value text holds (any value, not only objects). */
static JF_UNUSED json_t *j(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &err);
    if (v == NULL)
        fail_msg("bad test JSON: %s: %s", text, err.text);
    return v;
}

/* fn(in) equals want; in and the result released. */
static JF_UNUSED void expect(json_t *(*fn)(const json_t *), const char *in, const char *want)
{
    json_t *i = j(in), *w = j(want), *got = fn(i);
    assert_non_null(got);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("from %s\n got  %s\n want %s", in, g, want);
    }
    json_decref(i);
    json_decref(w);
    json_decref(got);
}

/* second(first(x)) == x. */
static JF_UNUSED void round_trip(json_t *(*first)(const json_t *),
                                 json_t *(*second)(const json_t *), const char *x)
{
    json_t *v = j(x), *mid = first(v), *back = mid ? second(mid) : NULL;
    assert_non_null(back);
    if (!json_equal(back, v)) {
        char *b = json_dumps(back, JSON_SORT_KEYS | JSON_COMPACT);
        fail_msg("round trip of %s gave %s", x, b);
    }
    json_decref(v);
    json_decref(mid);
    json_decref(back);
}

#endif /* ONCE_TESTS_JSON_FIXTURE_H */
