/*
 * test_jcs.c -- RFC 8785 canonical JSON and the request digest.
 *
 * Vectors come from RFC 8785 itself: Appendix B (numbers), section 3.2.2 with
 * the bytes of section 3.2.4, and section 3.2.3 (name order). The rest pins
 * what the digest relies on: same bytes for the same value however it was
 * written, rejection of anything that is not I-JSON, bounded depth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/alloc_int.h"
#include "core/jcs.h"
#include "once/once.h"
#include "unit/count_alloc.h"

/* ---------------------------------------------------------------------------
 * Helpers.
 */

static double from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Canonicalise text (NUL-terminated) and compare with want. */
static void expect_jcs(const char *text, const char *want)
{
    char *out = (char *)0x1;
    size_t len = 12345;
    int rc = once_jcs(text, strlen(text), &out, &len);
    if (rc != ONCE_OK)
        fail_msg("once_jcs(%s) = %s", text, once_errname(rc));
    assert_non_null(out);
    assert_string_equal(out, want);
    assert_int_equal(len, strlen(want));
    once_free(out);
}

static void expect_jcs_err(const char *text, size_t n, int want)
{
    char *out = (char *)0x1;
    size_t len = 12345;
    int rc = once_jcs(text, n, &out, &len);
    if (rc != want)
        fail_msg("once_jcs(%.60s) = %s, want %s", text, once_errname(rc), once_errname(want));
    assert_null(out);
    assert_int_equal(len, 0);
}

static size_t unhex(const char *hex, unsigned char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = hex; *p != '\0';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        assert_true(n < cap);
        char pair[3] = {p[0], p[1], 0};
        out[n++] = (unsigned char)strtoul(pair, NULL, 16);
        p += 2;
    }
    return n;
}

/* ---------------------------------------------------------------------------
 * Numbers: RFC 8785 Appendix B, every row.
 */

static const struct {
    uint64_t bits;
    const char *text;
} appendix_b[] = {
    {0x0000000000000000ULL, "0"},
    {0x8000000000000000ULL, "0"},
    {0x0000000000000001ULL, "5e-324"},
    {0x8000000000000001ULL, "-5e-324"},
    {0x7fefffffffffffffULL, "1.7976931348623157e+308"},
    {0xffefffffffffffffULL, "-1.7976931348623157e+308"},
    {0x4340000000000000ULL, "9007199254740992"},
    {0xc340000000000000ULL, "-9007199254740992"},
    {0x4430000000000000ULL, "295147905179352830000"},
    {0x44b52d02c7e14af5ULL, "9.999999999999997e+22"},
    {0x44b52d02c7e14af6ULL, "1e+23"},
    {0x44b52d02c7e14af7ULL, "1.0000000000000001e+23"},
    {0x444b1ae4d6e2ef4eULL, "999999999999999700000"},
    {0x444b1ae4d6e2ef4fULL, "999999999999999900000"},
    {0x444b1ae4d6e2ef50ULL, "1e+21"},
    {0x3eb0c6f7a0b5ed8cULL, "9.999999999999997e-7"},
    {0x3eb0c6f7a0b5ed8dULL, "0.000001"},
    {0x41b3de4355555553ULL, "333333333.3333332"},
    {0x41b3de4355555554ULL, "333333333.33333325"},
    {0x41b3de4355555555ULL, "333333333.3333333"},
    {0x41b3de4355555556ULL, "333333333.3333334"},
    {0x41b3de4355555557ULL, "333333333.33333343"},
    {0xbecbf647612f3696ULL, "-0.0000033333333333333333"},
    {0x43143ff3c1cb0959ULL, "1424953923781206.2"},
};

static void test_appendix_b_numbers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof appendix_b / sizeof appendix_b[0]; i++) {
        char buf[ONCE__JCS_NUM_MAX];
        int n = once__jcs_number(from_bits(appendix_b[i].bits), buf);
        if (n < 0 || strcmp(buf, appendix_b[i].text) != 0)
            fail_msg("0x%016llx: got %s, want %s", (unsigned long long)appendix_b[i].bits,
                     n < 0 ? once_errname(n) : buf, appendix_b[i].text);
        assert_int_equal(n, (int)strlen(appendix_b[i].text));
    }
}

/* Appendix B's NaN and Infinity rows: "N/A" (must be refused). */
static void test_appendix_b_non_finite(void **state)
{
    (void)state;
    char buf[ONCE__JCS_NUM_MAX];
    assert_int_equal(once__jcs_number(from_bits(0x7fffffffffffffffULL), buf), ONCE_EINVAL);
    assert_int_equal(once__jcs_number(from_bits(0x7ff0000000000000ULL), buf), ONCE_EINVAL);
    assert_int_equal(once__jcs_number(-INFINITY, buf), ONCE_EINVAL);
    /* From text: a literal past DBL_MAX would be an infinity. */
    expect_jcs_err("1e400", 5, ONCE_EINVAL);
    expect_jcs_err("[-1e400]", 8, ONCE_EINVAL);
}

/* The same table through the parser: each canonical text, and other
 * spellings of the same double, come back as the canonical text. */
static void test_numbers_from_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof appendix_b / sizeof appendix_b[0]; i++)
        expect_jcs(appendix_b[i].text, appendix_b[i].text);
    expect_jcs("-0", "0");
    expect_jcs("-0.0e10", "0");
    expect_jcs("1E30", "1e+30");
    expect_jcs("4.50", "4.5");
    expect_jcs("2e-3", "0.002");
    expect_jcs("1e-7", "1e-7");
    expect_jcs("0.0000001", "1e-7");
    expect_jcs("123e-9", "1.23e-7");
    expect_jcs("100", "100");
    expect_jcs("1.0", "1");
    expect_jcs("1e21", "1e+21");
    expect_jcs("1e20", "100000000000000000000");
    expect_jcs("-12.5e-1", "-1.25");
    expect_jcs("0.1", "0.1");
    expect_jcs("1e-400", "0"); /* underflows to zero, as JSON.parse does */
    /* Integers beyond int64 must not fail: JCS has only doubles. */
    expect_jcs("123456789012345678901234567890", "1.2345678901234568e+29");
    expect_jcs("9007199254740993", "9007199254740992");
    expect_jcs("-9223372036854775809", "-9223372036854776000");
}

/* Powers of two have a rounding interval narrower below than above: the
 * closest 16-digit decimal does not read back, the one above it does. A
 * formatter that only tries the closest digits prints 17 digits here.
 * (Expected values: ECMAScript's Number.prototype.toString.) */
static void test_numbers_power_of_two_boundaries(void **state)
{
    (void)state;
    static const struct {
        int exp2;
        const char *text;
    } rows[] = {
        {-1017, "7.120236347223045e-307"}, {-44, "5.684341886080802e-14"},
        {-24, "5.960464477539063e-8"},     {89, "6.189700196426902e+26"},
        {976, "6.386688990511104e+293"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char buf[ONCE__JCS_NUM_MAX];
        once__jcs_number(ldexp(1.0, rows[i].exp2), buf);
        assert_string_equal(buf, rows[i].text);
        once__jcs_number(-ldexp(1.0, rows[i].exp2), buf);
        assert_true(buf[0] == '-');
        assert_string_equal(buf + 1, rows[i].text);
    }
}

/* Property check over random bit patterns: the text reads back as the same
 * double, has at most 17 significant digits, and is not longer than the
 * closest shorter decimal would allow. */
static void test_numbers_random_round_trip(void **state)
{
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double d = from_bits(x);
        if (!isfinite(d))
            continue;
        char buf[ONCE__JCS_NUM_MAX];
        int n = once__jcs_number(d, buf);
        assert_true(n > 0 && n < ONCE__JCS_NUM_MAX);
        double back = strtod(buf, NULL);
        if (back != d && !(d == 0 && back == 0))
            fail_msg("0x%016llx -> %s does not round-trip", (unsigned long long)x, buf);
        /* At most 17 significant digits, and the closest decimal with one
         * digit fewer must not round-trip. */
        char mant[32];
        size_t m = 0;
        int seen_nonzero = 0;
        for (const char *p = buf; *p != '\0' && *p != 'e'; p++)
            if ((*p >= '1' && *p <= '9') || (*p == '0' && seen_nonzero))
                mant[m++] = *p, seen_nonzero = 1;
        while (m > 1 && mant[m - 1] == '0')
            m--;
        assert_true(m <= 17);
        if (m > 1) {
            char shorter[40];
            snprintf(shorter, sizeof shorter, "%.*e", (int)m - 2, fabs(d));
            assert_true(strtod(shorter, NULL) != fabs(d));
        }
    }
}

/* ---------------------------------------------------------------------------
 * RFC 8785 section 3.2.2 (input) and 3.2.4 (the exact UTF-8 bytes).
 */
static void test_rfc_section_3_2_2(void **state)
{
    (void)state;
    const char *in = "{\n"
                     "  \"numbers\": [333333333.33333329, 1E30, 4.50,\n"
                     "              2e-3, 0.000000000000000000000000001],\n"
                     "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
                     "  \"literals\": [null, true, false]\n"
                     "}\n";
    const char *hex = "7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72"
                      "75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a"
                      "5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31"
                      "65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37"
                      "5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30"
                      "30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d";
    unsigned char want[256];
    size_t wantlen = unhex(hex, want, sizeof want);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(once_jcs(in, strlen(in), &out, &len), ONCE_OK);
    assert_int_equal(len, wantlen);
    assert_memory_equal(out, want, wantlen);
    assert_int_equal(out[len], '\0');
    once_free(out);
}

/* Section 3.2.3: names sort by UTF-16 code units, so U+1F600 (surrogates
 * D83D DE00) sorts before U+FB33 although its UTF-8 bytes sort after. */
static void test_rfc_section_3_2_3_sorting(void **state)
{
    (void)state;
    expect_jcs("{\n"
               "  \"\\u20ac\": \"Euro Sign\",\n"
               "  \"\\r\": \"Carriage Return\",\n"
               "  \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\",\n"
               "  \"1\": \"One\",\n"
               "  \"\\ud83d\\ude00\": \"Emoji: Grinning Face\",\n"
               "  \"\\u0080\": \"Control\",\n"
               "  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"\n"
               "}",
               "{\"\\r\":\"Carriage Return\","
               "\"1\":\"One\","
               "\"\xc2\x80\":\"Control\","
               "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\","
               "\"\xe2\x82\xac\":\"Euro Sign\","
               "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
               "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

/* More ordering: prefixes first, code units not code points or bytes. */
static void test_sorting_more(void **state)
{
    (void)state;
    expect_jcs("{\"b\":1,\"a\":2,\"ab\":3,\"\":4,\"B\":5,\"10\":6,\"2\":7}",
               "{\"\":4,\"10\":6,\"2\":7,\"B\":5,\"a\":2,\"ab\":3,\"b\":1}");
    /* U+FFFF sorts after U+10FFFF (DBFF DFFF), U+D7FF before U+10000. */
    expect_jcs("{\"\\uffff\":1,\"\\udbff\\udfff\":2,\"\\ud7ff\":3,\"\\ud800\\udc00\":4,"
               "\"\\ue000\":5}",
               "{\"\xed\x9f\xbf\":3,\"\xf0\x90\x80\x80\":4,\"\xf4\x8f\xbf\xbf\":2,"
               "\"\xee\x80\x80\":5,\"\xef\xbf\xbf\":1}");
    /* Two supplementary characters with the same high surrogate. */
    expect_jcs("{\"\\ud83d\\ude01\":1,\"\\ud83d\\ude00\":2}",
               "{\"\xf0\x9f\x98\x80\":2,\"\xf0\x9f\x98\x81\":1}");
}

/* ---------------------------------------------------------------------------
 * Strings, literals, structure.
 */

static void test_string_escaping(void **state)
{
    (void)state;
    /* Every control character, in order: the short escapes where JSON has
     * them, lowercase \u00xx otherwise. */
    char in[512], want[512];
    size_t a = 0, b = 0;
    in[a++] = '"';
    want[b++] = '"';
    for (int c = 0; c < 0x20; c++) {
        a += (size_t)snprintf(in + a, sizeof in - a, "\\u%04X", c);
        const char *s = NULL;
        switch (c) {
        case '\b':
            s = "\\b";
            break;
        case '\f':
            s = "\\f";
            break;
        case '\n':
            s = "\\n";
            break;
        case '\r':
            s = "\\r";
            break;
        case '\t':
            s = "\\t";
            break;
        }
        if (s)
            b += (size_t)snprintf(want + b, sizeof want - b, "%s", s);
        else
            b += (size_t)snprintf(want + b, sizeof want - b, "\\u%04x", c);
    }
    snprintf(in + a, sizeof in - a, "\"");
    snprintf(want + b, sizeof want - b, "\"");
    expect_jcs(in, want);

    /* Quote and backslash escaped; solidus, DEL and non-ASCII are not. */
    expect_jcs("\"\\\" \\\\ \\/ / \\u007f \\u00e9 \\u20AC \\uD834\\uDD1E\"",
               "\"\\\" \\\\ / / \x7f \xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\"");
    /* Raw UTF-8 stays as it is. */
    expect_jcs("\"\xc3\xa9\xf0\x9f\x98\x80\"", "\"\xc3\xa9\xf0\x9f\x98\x80\"");
    /* U+0000 inside a string survives. */
    expect_jcs("\"a\\u0000b\"", "\"a\\u0000b\"");
    /* Escapes in names are canonicalised too. */
    expect_jcs("{\"\\u0041\\n\":1}", "{\"A\\n\":1}");
}

static void test_literals_and_scalars(void **state)
{
    (void)state;
    expect_jcs("true", "true");
    expect_jcs(" false ", "false");
    expect_jcs("\tnull\r\n", "null");
    expect_jcs("\"x\"", "\"x\"");
    expect_jcs("[true,false,null]", "[true,false,null]");
}

static void test_whitespace_and_nesting(void **state)
{
    (void)state;
    expect_jcs(
        " {\n \"b\" : [ 1 , { \"z\" : true , \"a\" : null } , [ ] , { } ] ,\r\n\t\"a\" : \"x\" } ",
        "{\"a\":\"x\",\"b\":[1,{\"a\":null,\"z\":true},[],{}]}");
    expect_jcs("[[[[\"deep\"]]],{\"k\":{\"k\":{\"b\":2,\"a\":1}}}]",
               "[[[[\"deep\"]]],{\"k\":{\"k\":{\"a\":1,\"b\":2}}}]");
    /* Arrays keep their order. */
    expect_jcs("[3,1,2,\"b\",\"a\"]", "[3,1,2,\"b\",\"a\"]");
    expect_jcs("{}", "{}");
    expect_jcs("[]", "[]");
}

/* Canonical output is a fixed point. */
static void test_idempotent(void **state)
{
    (void)state;
    static const char *inputs[] = {
        "{\"z\":[1.5e300,-0,1e-7,\"\\u001f\\\"\"],\"a\":{\"\\ud83d\\ude00\":{},\"\\uffff\":[]}}",
        "[\"\\u0000\\u007f\\u0080\",123456789012345678901234567890,0.1,true]",
        "{\"numbers\":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char *once = NULL, *twice = NULL;
        size_t n1 = 0, n2 = 0;
        assert_int_equal(once_jcs(inputs[i], strlen(inputs[i]), &once, &n1), ONCE_OK);
        assert_int_equal(once_jcs(once, n1, &twice, &n2), ONCE_OK);
        assert_int_equal(n1, n2);
        assert_memory_equal(once, twice, n1);
        once_free(once);
        once_free(twice);
    }
}

/* ---------------------------------------------------------------------------
 * Rejections.
 */

static void test_duplicate_keys(void **state)
{
    (void)state;
    expect_jcs_err("{\"a\":1,\"a\":1}", 13, ONCE_EINVAL);
    const char *nested = "[{\"x\":{\"k\":1,\"j\":2,\"k\":3}}]";
    expect_jcs_err(nested, strlen(nested), ONCE_EINVAL);
    /* Same name spelled differently is still the same name. */
    const char *spelled = "{\"a\":1,\"\\u0061\":2}";
    expect_jcs_err(spelled, strlen(spelled), ONCE_EINVAL);
    /* Same name in sibling objects is fine. */
    expect_jcs("[{\"a\":1},{\"a\":2}]", "[{\"a\":1},{\"a\":2}]");
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",      " ",         "{",    "}",     "[1,]",  "{\"a\":1,}", "{a:1}",     "{'a':1}",
        "[01]",  "1.",        ".5",   "+1",    "NaN",   "Infinity",   "-Infinity", "tru",
        "nul",   "\"abc",     "1 2",  "{} {}", "[1] x", "\"\\x\"",    "\"\\u12\"", "\"a\tb\"",
        "[1 2]", "{\"a\" 1}", "0x10", "1e",    "--1",   "[\"a\"]]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_jcs_err(bad[i], strlen(bad[i]), ONCE_EPARSE);
    /* A NUL byte in the text (not escaped) is malformed. */
    expect_jcs_err("[1]\0", 4, ONCE_EPARSE);
    expect_jcs_err("\"a\0b\"", 5, ONCE_EPARSE);
    /* Bad arguments. */
    char *out = NULL;
    assert_int_equal(once_jcs("1", 1, NULL, NULL), ONCE_EINVAL);
    assert_int_equal(once_jcs(NULL, 3, &out, NULL), ONCE_EINVAL);
    assert_null(out);
    assert_int_equal(once_jcs(NULL, 0, &out, NULL), ONCE_EPARSE);
    /* Length is honoured: the text past n is not read. */
    assert_int_equal(once_jcs("[1]garbage", 3, &out, NULL), ONCE_OK);
    assert_string_equal(out, "[1]");
    once_free(out);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    static const char *bad[] = {
        "\"\xff\"",             /* never valid */
        "\"\xc0\x80\"",         /* overlong NUL */
        "\"\xe0\x80\xaf\"",     /* overlong '/' */
        "\"\xed\xa0\x80\"",     /* UTF-8 encoded surrogate */
        "\"\xf4\x90\x80\x80\"", /* past U+10FFFF */
        "\"\xe2\x82\"",         /* truncated */
        "\"\x80\"",             /* lone continuation */
        "{\"\xff\":1}",         /* in a name */
        "\"\\ud800\"",          /* escaped lone high surrogate */
        "\"\\udc00\"",          /* escaped lone low surrogate */
        "\"\\ud800\\u0041\"",   /* high surrogate without its low half */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_jcs_err(bad[i], strlen(bad[i]), ONCE_EPARSE);
}

static char *nested_text(int depth, char open, char close)
{
    char *s = malloc((size_t)depth * 2 + 1);
    assert_non_null(s);
    memset(s, open, (size_t)depth);
    memset(s + depth, close, (size_t)depth);
    s[depth * 2] = '\0';
    return s;
}

static void test_depth_limit(void **state)
{
    (void)state;
    /* 64 levels are fine, 65 are not. */
    char *ok = nested_text(ONCE_JSON_MAX_DEPTH, '[', ']');
    expect_jcs(ok, ok);
    free(ok);
    char *deep = nested_text(ONCE_JSON_MAX_DEPTH + 1, '[', ']');
    expect_jcs_err(deep, strlen(deep), ONCE_ERANGE);
    free(deep);
    /* Objects count the same way. */
    char obj[ONCE_JSON_MAX_DEPTH * 8 + 16];
    size_t n = 0;
    for (int i = 0; i < ONCE_JSON_MAX_DEPTH + 1; i++)
        n += (size_t)snprintf(obj + n, sizeof obj - n, "{\"a\":");
    obj[n++] = '1';
    for (int i = 0; i < ONCE_JSON_MAX_DEPTH + 1; i++)
        obj[n++] = '}';
    obj[n] = '\0';
    expect_jcs_err(obj, n, ONCE_ERANGE);
    /* Past jansson's own limit (2048) and far beyond: refused, no crash. */
    char *huge = nested_text(100000, '[', ']');
    expect_jcs_err(huge, strlen(huge), ONCE_ERANGE);
    huge[100000] = '\0'; /* unclosed */
    expect_jcs_err(huge, strlen(huge), ONCE_ERANGE);
    free(huge);
    /* Brackets inside strings do not count. */
    char str[300];
    memset(str, '[', sizeof str);
    str[0] = '"';
    str[sizeof str - 2] = '"';
    str[sizeof str - 1] = '\0';
    char *out = NULL;
    assert_int_equal(once_jcs(str, strlen(str), &out, NULL), ONCE_OK);
    assert_string_equal(out, str);
    once_free(out);
}

/* jansson cannot hold U+0000 in a name: refused, not mangled. */
static void test_nul_in_name(void **state)
{
    (void)state;
    expect_jcs_err("{\"a\\u0000b\":1}", 14, ONCE_EINVAL);
}

/* ---------------------------------------------------------------------------
 * once__jcs_json on values built in memory.
 */

static void test_json_values(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:I,s:f,s:[i,s],s:n}", "big", (json_int_t)9007199254740993LL, "r", 0.5,
                          "arr", 7, "\xc3\xa9", "a");
    assert_non_null(v);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(once__jcs_json(v, &out, &len), ONCE_OK);
    /* The integer beyond 2^53 is rounded as a double, as JCS requires. */
    assert_string_equal(out,
                        "{\"a\":null,\"arr\":[7,\"\xc3\xa9\"],\"big\":9007199254740992,\"r\":0.5}");
    assert_int_equal(len, strlen(out));
    once_free(out);
    json_decref(v);

    /* A string that bypassed jansson's UTF-8 check. */
    v = json_array();
    json_array_append_new(v, json_stringn_nocheck("\xff", 1));
    out = (char *)0x1;
    assert_int_equal(once__jcs_json(v, &out, NULL), ONCE_EINVAL);
    assert_null(out);
    json_decref(v);

    /* Depth is checked on built values too. */
    v = json_array();
    json_t *leaf = v;
    for (int i = 0; i < ONCE_JSON_MAX_DEPTH; i++) {
        json_t *child = json_array();
        json_array_append_new(leaf, child);
        leaf = child;
    }
    assert_int_equal(once__jcs_json(v, &out, NULL), ONCE_ERANGE);
    json_decref(v);

    assert_int_equal(once__jcs_json(NULL, &out, NULL), ONCE_EINVAL);
}

/* Every allocation failure ends in ONCE_ENOMEM (no crash, no leak under
 * ASan); with no failure the result is right. */
static void test_alloc_failures(void **state)
{
    (void)state;
    const char *in = "{\"b\":[\"x\",{\"d\":1,\"c\":2}],\"a\":\"" /* long enough to regrow */
                     "0123456789012345678901234567890123456789012345678901234567890123456789\"}";
    char *out = NULL;
    once__alloc_fail_after(-1);
    assert_int_equal(once_jcs(in, strlen(in), &out, NULL), ONCE_OK);
    long count = once__alloc_count();
    once_free(out);
    assert_true(count >= 3);
    for (long i = 0; i < count; i++) {
        once__alloc_fail_after(i);
        out = NULL;
        int rc = once_jcs(in, strlen(in), &out, NULL);
        assert_int_equal(rc, ONCE_ENOMEM);
        assert_null(out);
    }
    once__alloc_fail_after(-1);
}

/* ---------------------------------------------------------------------------
 * The request digest.
 */

static void digest_of(const char *msg, uint8_t out[ONCE_SHA256_LEN])
{
    int rc = once_message_digest(msg, strlen(msg), out);
    if (rc != ONCE_OK)
        fail_msg("once_message_digest(%s) = %s", msg, once_errname(rc));
}

static const char *base_msg =
    "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\","
    "\"parts\":[{\"text\":\"review contract 42\"},{\"data\":{\"b\":1,\"a\":[1.0,2]}}],"
    "\"metadata\":{\"priority\":\"high\"},\"referenceTaskIds\":[\"t-0\"],"
    "\"extensions\":[\"https://example.org/ext/idempotency/v1\"]}";

/* The digest is SHA-256 of the JCS text of the kept members, computed here
 * independently with libcrypto. */
static void test_digest_definition(void **state)
{
    (void)state;
    uint8_t got[ONCE_SHA256_LEN];
    digest_of(base_msg, got);
    const char *canon =
        "{\"extensions\":[\"https://example.org/ext/idempotency/v1\"],"
        "\"messageId\":\"m-1\",\"metadata\":{\"priority\":\"high\"},"
        "\"parts\":[{\"text\":\"review contract 42\"},{\"data\":{\"a\":[1,2],\"b\":1}}],"
        "\"referenceTaskIds\":[\"t-0\"],\"role\":\"ROLE_USER\"}";
    uint8_t want[EVP_MAX_MD_SIZE];
    unsigned int wantlen = 0;
    assert_int_equal(EVP_Digest(canon, strlen(canon), want, &wantlen, EVP_sha256(), NULL), 1);
    assert_int_equal(wantlen, ONCE_SHA256_LEN);
    assert_memory_equal(got, want, ONCE_SHA256_LEN);
}

static void test_digest_stable(void **state)
{
    (void)state;
    uint8_t a[ONCE_SHA256_LEN], b[ONCE_SHA256_LEN];
    digest_of(base_msg, a);
    /* Members reordered at every level, whitespace added, numbers and
     * strings spelled differently. */
    digest_of("{\n  \"extensions\" : [ \"https:\\/\\/example.org\\/ext\\/idempotency\\/v1\" ],\n"
              "  \"referenceTaskIds\" : [ \"t-0\" ],\n"
              "  \"metadata\" : { \"priority\" : \"hig\\u0068\" },\n"
              "  \"parts\" : [ { \"text\" : \"review contract 42\" },\n"
              "               { \"data\" : { \"a\" : [ 1e0 , 2.00 ], \"b\" : 10E-1 } } ],\n"
              "  \"messageId\" : \"m-1\",\n"
              "  \"role\" : \"ROLE_USER\"\n}\n",
              b);
    assert_memory_equal(a, b, ONCE_SHA256_LEN);
}

static void test_digest_ignores_server_members(void **state)
{
    (void)state;
    uint8_t a[ONCE_SHA256_LEN], b[ONCE_SHA256_LEN];
    digest_of(base_msg, a);
    char msg[1024];
    snprintf(msg, sizeof msg, "{\"taskId\":\"t-1\",\"contextId\":\"c-9\",\"kind\":\"message\",%s",
             base_msg + 1);
    digest_of(msg, b);
    assert_memory_equal(a, b, ONCE_SHA256_LEN);
}

static void test_digest_changes(void **state)
{
    (void)state;
    uint8_t a[ONCE_SHA256_LEN], b[ONCE_SHA256_LEN];
    digest_of(base_msg, a);
    /* One character of a part's text. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", base_msg);
    char *p = strstr(msg, "contract 42");
    assert_non_null(p);
    p[10] = '3';
    digest_of(msg, b);
    assert_memory_not_equal(a, b, ONCE_SHA256_LEN);
    /* Each kept member counts: dropping any one changes the digest. */
    static const char *variants[] = {
        "{\"role\":\"ROLE_AGENT\",\"messageId\":\"m-1\",\"parts\":[]}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-2\",\"parts\":[]}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\",\"parts\":[{\"text\":\"\"}]}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\",\"parts\":[],\"metadata\":{}}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\",\"parts\":[],\"referenceTaskIds\":[]}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\",\"parts\":[],\"extensions\":[]}",
        "{\"role\":\"ROLE_USER\",\"messageId\":\"m-1\",\"parts\":[]}",
    };
    uint8_t d[7][ONCE_SHA256_LEN];
    for (size_t i = 0; i < 7; i++)
        digest_of(variants[i], d[i]);
    for (size_t i = 0; i < 7; i++)
        for (size_t j = i + 1; j < 7; j++)
            assert_memory_not_equal(d[i], d[j], ONCE_SHA256_LEN);
}

static void test_digest_rejects(void **state)
{
    (void)state;
    uint8_t out[ONCE_SHA256_LEN];
    assert_int_equal(once_message_digest("[]", 2, out), ONCE_EINVAL);
    assert_int_equal(once_message_digest("\"m\"", 3, out), ONCE_EINVAL);
    assert_int_equal(once_message_digest("null", 4, out), ONCE_EINVAL);
    assert_int_equal(once_message_digest("{\"role\":", 8, out), ONCE_EPARSE);
    const char *dup = "{\"role\":\"a\",\"role\":\"b\"}";
    assert_int_equal(once_message_digest(dup, strlen(dup), out), ONCE_EINVAL);
    assert_int_equal(once_message_digest("{}", 2, NULL), ONCE_EINVAL);
    char *deep = nested_text(200, '[', ']');
    char msg[512];
    snprintf(msg, sizeof msg, "{\"parts\":%s}", deep);
    free(deep);
    assert_int_equal(once_message_digest(msg, strlen(msg), out), ONCE_ERANGE);
    /* The json_t entry point agrees with the text one. */
    json_t *v = json_loads(base_msg, 0, NULL);
    uint8_t a[ONCE_SHA256_LEN], b[ONCE_SHA256_LEN];
    assert_int_equal(once__message_digest_json(v, a), ONCE_OK);
    digest_of(base_msg, b);
    assert_memory_equal(a, b, ONCE_SHA256_LEN);
    json_decref(v);
    v = json_array();
    assert_int_equal(once__message_digest_json(v, a), ONCE_EINVAL);
    json_decref(v);
}

/* A send with a push config digests the message's members and the config
 * as one canonical object (the config under "taskPushNotificationConfig",
 * sorted with the rest); a member of that name inside the message itself
 * is never digested. */
static void test_digest_with_push(void **state)
{
    (void)state;
    json_t *msg = json_pack("{s:s, s:s, s:[{s:s}], s:s, s:{s:i}}", "role", "ROLE_USER",
                            "messageId", "m-9", "parts", "text", "hi", "taskId", "t-9",
                            "taskPushNotificationConfig", "x", 1);
    json_t *push = json_pack("{s:s, s:{s:s}}", "url", "https://h.example/hook", "authentication",
                             "scheme", "Bearer");
    uint8_t got[ONCE_SHA256_LEN], want[ONCE_SHA256_LEN];
    /* The same object, canonicalised from text by once_jcs. */
    const char *sub = "{\"taskPushNotificationConfig\":{\"url\":\"https://h.example/hook\","
                      "\"authentication\":{\"scheme\":\"Bearer\"}},\"role\":\"ROLE_USER\","
                      "\"parts\":[{\"text\":\"hi\"}],\"messageId\":\"m-9\"}";
    char *canon = NULL;
    size_t n = 0;
    assert_int_equal(once_jcs(sub, strlen(sub), &canon, &n), ONCE_OK);
    once_sha256(canon, n, want);
    once_free(canon);
    assert_int_equal(once__request_digest_json(msg, push, got), ONCE_OK);
    assert_memory_equal(got, want, ONCE_SHA256_LEN);
    /* Without a config: the message's digest, its own member left out. */
    const char *bare = "{\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}],\"messageId\":\"m-9\"}";
    digest_of(bare, want);
    assert_int_equal(once__request_digest_json(msg, NULL, got), ONCE_OK);
    assert_memory_equal(got, want, ONCE_SHA256_LEN);
    json_decref(push);
    json_decref(msg);
}

/* once__json_write: the writer for the wire and the store keeps member order,
 * writes integers exactly and reals in their shortest round-trip form. */
static void test_json_write(void **state)
{
    (void)state;
    json_error_t err;
    json_t *v = json_loads("{\"z\":0.93,\"a\":[1,9007199254740993,-0.0,1e21,\"\\u00e9\\n\"],"
                           "\"m\":{\"y\":null,\"b\":true}}", 0, &err);
    assert_non_null(v);
    char *out = NULL;
    size_t n = 0;
    assert_int_equal(once__json_write(v, &out, &n), ONCE_OK);
    assert_string_equal(out, "{\"z\":0.93,\"a\":[1,9007199254740993,0,1e+21,\"\xc3\xa9\\n\"],"
                             "\"m\":{\"y\":null,\"b\":true}}");
    assert_int_equal(n, strlen(out));
    once_free(out);
    /* The canonical form of the same value sorts and rounds the big integer. */
    assert_int_equal(once__jcs_json(v, &out, NULL), ONCE_OK);
    assert_string_equal(out, "{\"a\":[1,9007199254740992,0,1e+21,\"\xc3\xa9\\n\"],"
                             "\"m\":{\"b\":true,\"y\":null},\"z\":0.93}");
    once_free(out);
    json_decref(v);
    json_t *s = json_string("x");
    assert_int_equal(once__json_write(s, &out, NULL), ONCE_OK);
    assert_string_equal(out, "\"x\"");
    once_free(out);
    json_decref(s);
}

/* The writer skips plain ASCII eight bytes at a time: a character that
 * needs care is found at every position of a word and of the tail, in
 * strings of every length around the word size, with the bytes a
 * one-character-at-a-time escaper writes. */
static void test_write_string_every_position(void **state)
{
    (void)state;
    /* What the special character is written as. */
    static const struct {
        const char *in;
        const char *out;
    } specials[] = {
        {"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {"\x01", "\\u0001"}, {"\x1f", "\\u001f"},
        {"\x7f", "\x7f"}, {" ", " "}, {"\xc3\xa9", "\xc3\xa9"}, {"\xe2\x82\xac", "\xe2\x82\xac"},
    };
    for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
        for (size_t len = 0; len <= 20; len++) {
            for (size_t at = 0; at <= len; at++) {
                char in[64], want[64];
                size_t sl = strlen(specials[k].in);
                memset(in, 'a', len);
                memcpy(in + at, specials[k].in, sl);
                memset(in + at + sl, 'b', len - at);
                snprintf(want, sizeof want, "\"%.*s%s%.*s\"", (int)at, in,
                         specials[k].out, (int)(len - at), in + at + sl);
                json_t *v = json_stringn(in, len + sl);
                assert_non_null(v);
                char *out = NULL;
                assert_int_equal(once__json_write(v, &out, NULL), ONCE_OK);
                assert_string_equal(out, want);
                once_free(out);
                json_decref(v);
            }
        }
    }
    /* A byte that is not UTF-8 fails the write wherever it stands. */
    for (size_t len = 1; len <= 20; len++) {
        for (size_t at = 0; at < len; at++) {
            char in[32];
            memset(in, 'a', len);
            in[at] = (char)0xff;
            json_t *v = json_stringn_nocheck(in, len);
            char *out = (char *)1;
            assert_int_equal(once__json_write(v, &out, NULL), ONCE_EINVAL);
            assert_null(out);
            json_decref(v);
        }
    }
}

/* A text the size of a stored task (a few hundred bytes) is written with
 * one allocation, not grown from a small buffer step by step. */
static void test_write_allocates_once(void **state)
{
    (void)state;
    json_t *v = json_object();
    for (int i = 0; i < 12; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%02d", i);
        json_object_set_new(v, key, json_string("0123456789abcdefghij"));
    }
    once_set_allocator(&counting_allocator);
    char *out = NULL;
    size_t n = 0;
    counted = 0;
    counting = 1;
    int rc = once__json_write(v, &out, &n);
    counting = 0;
    once_set_allocator(NULL);
    assert_int_equal(rc, ONCE_OK);
    assert_true(n > 300 && n < 500);
    assert_int_equal(counted, 1);
    once_free(out);
    json_decref(v);
}

/* Text from pieces: the bytes in order, integers as the writer writes
 * them, and after a failed allocation no text (and nothing leaked). */
static void test_text_pieces(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:[i,s]}", "a", 7, "x\"y");
    once__text t = ONCE__TEXT_INIT;
    ONCE__TEXT_LIT(&t, "<");
    once__text_int(&t, INT64_MIN);
    once__text_str(&t, "|");
    once__text_int(&t, 0);
    once__text_str(&t, "|");
    once__text_int(&t, INT64_MAX);
    once__text_json(&t, v);
    ONCE__TEXT_LIT(&t, ">");
    once__text_strs(&t, "[", "", "a\"b", "]", NULL);
    size_t n = 0;
    char *s = once__text_done(&t, &n);
    assert_string_equal(s, "<-9223372036854775808|0|9223372036854775807{\"a\":[7,\"x\\\"y\"]}>"
                           "[a\"b]");
    assert_int_equal(n, strlen(s));
    once_free(s);
    for (long fail = 0; fail < 3; fail++) {
        once__alloc_fail_after(fail);
        once__text u = ONCE__TEXT_INIT;
        for (int i = 0; i < 200; i++)
            once__text_json(&u, v);
        ONCE__TEXT_LIT(&u, "end");
        n = 1;
        assert_null(once__text_done(&u, &n));
        assert_int_equal(n, 0);
    }
    once__alloc_fail_after(-1);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appendix_b_numbers),
        cmocka_unit_test(test_appendix_b_non_finite),
        cmocka_unit_test(test_numbers_from_text),
        cmocka_unit_test(test_numbers_power_of_two_boundaries),
        cmocka_unit_test(test_numbers_random_round_trip),
        cmocka_unit_test(test_rfc_section_3_2_2),
        cmocka_unit_test(test_rfc_section_3_2_3_sorting),
        cmocka_unit_test(test_sorting_more),
        cmocka_unit_test(test_string_escaping),
        cmocka_unit_test(test_literals_and_scalars),
        cmocka_unit_test(test_whitespace_and_nesting),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_nul_in_name),
        cmocka_unit_test(test_json_values),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_write_string_every_position),
        cmocka_unit_test(test_write_allocates_once),
        cmocka_unit_test(test_text_pieces),
        cmocka_unit_test(test_digest_definition),
        cmocka_unit_test(test_digest_stable),
        cmocka_unit_test(test_digest_ignores_server_members),
        cmocka_unit_test(test_digest_changes),
        cmocka_unit_test(test_digest_rejects),
        cmocka_unit_test(test_digest_with_push),
        cmocka_unit_test(test_json_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
