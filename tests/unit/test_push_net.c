/*
 * test_push_net.c -- the SSRF guard of push delivery (src/engine/push_net.c):
 * which addresses are refused, what
 * --push-allow exempts (including IPv4 hidden in IPv6 forms), and which
 * webhook URLs a config may not even be created with.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "engine/push_int.h"

static const char *judge(const char *addr, const once__cidr *allow, size_t n)
{
    uint8_t a[16];
    if (inet_pton(AF_INET, addr, a) == 1)
        return once__addr_blocked(allow, n, AF_INET, a);
    assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
    return once__addr_blocked(allow, n, AF_INET6, a);
}

/* Each of bad is refused, each of good passes, with no allow-list. */
static void expect_judged(const char *const *bad, size_t nbad, const char *const *good,
                          size_t ngood)
{
    for (size_t i = 0; i < nbad; i++)
        if (judge(bad[i], NULL, 0) == NULL)
            fail_msg("%s was not refused", bad[i]);
    for (size_t i = 0; i < ngood; i++)
        if (judge(good[i], NULL, 0) != NULL)
            fail_msg("%s was refused: %s", good[i], judge(good[i], NULL, 0));
}

static void blocked_ranges(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "127.0.0.1",
        "127.255.0.9",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "100.127.255.254",
        "0.0.0.0",
        "0.1.2.3",
        "224.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "::127.0.0.1",
        "fec0::1",
    };
    static const char *const good[] = {
        "8.8.8.8",     "1.1.1.1",     "172.15.255.255",       "172.32.0.0",     "100.63.255.255",
        "100.128.0.0", "192.169.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "169.253.255.255",
    };
    expect_judged(bad, sizeof bad / sizeof bad[0], good, sizeof good / sizeof good[0]);
    assert_non_null(strstr(judge("127.0.0.1", NULL, 0), "loopback"));
    assert_non_null(strstr(judge("10.0.0.1", NULL, 0), "private"));
    assert_non_null(strstr(judge("fe80::1", NULL, 0), "link-local"));
}

/* Every IPv6 form that carries a packet to an IPv4 host is judged by that
 * host: mapped, translated (SIIT), compatible, NAT64 and 6to4; the
 * local-use NAT64 prefix is refused whole. Public hosts inside stay good. */
static void wrapped_ipv4(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "::ffff:0:127.0.0.1",   "::ffff:0:10.1.2.3",   "::ffff:0:a9fe:a9fe",
        "::ffff:0:192.168.0.1", "::ffff:127.0.0.1",    "::10.0.0.1",
        "64:ff9b::127.0.0.1",   "64:ff9b::10.0.0.1",   "2002:7f00:1::1",
        "2002:a00:1::",         "2002:a9fe:a9fe::1",   "64:ff9b:1::a00:1",
        "64:ff9b:1:7f00:1::",
    };
    static const char *const good[] = {
        "::ffff:0:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "2001:db8::127.0.0.1",
    };
    expect_judged(bad, sizeof bad / sizeof bad[0], good, sizeof good / sizeof good[0]);
    assert_non_null(strstr(judge("::ffff:0:127.0.0.1", NULL, 0), "loopback"));
    assert_non_null(strstr(judge("2002:a9fe:a9fe::", NULL, 0), "link-local"));
    /* An IPv4 entry of the allow-list covers these spellings too. */
    once__cidr allow;
    assert_int_equal(once__cidr_parse("127.0.0.1/32", &allow), ONCE_OK);
    assert_null(judge("::ffff:0:127.0.0.1", &allow, 1));
    assert_null(judge("2002:7f00:1::", &allow, 1));
    char why[300];
    assert_int_equal(once__push_url_check("http://[::ffff:0:127.0.0.1]:9/x", NULL, 0, why, 300),
                     ONCE_EINVAL);
}

static void allow_list(void **state)
{
    (void)state;
    once__cidr allow[3];
    assert_int_equal(once__cidr_parse("127.0.0.1/32", &allow[0]), ONCE_OK);
    assert_int_equal(once__cidr_parse("10.20.0.0/16", &allow[1]), ONCE_OK);
    assert_int_equal(once__cidr_parse("fd00::/8", &allow[2]), ONCE_OK);
    assert_null(judge("127.0.0.1", allow, 3));
    assert_non_null(judge("127.0.0.2", allow, 3));
    assert_null(judge("10.20.255.1", allow, 3));
    assert_non_null(judge("10.21.0.1", allow, 3));
    assert_null(judge("fd12::1", allow, 3));
    assert_non_null(judge("fc00::1", allow, 3));
    /* An IPv4 entry covers the IPv6 spellings of the same address only. */
    assert_null(judge("::ffff:127.0.0.1", allow, 3));
    assert_non_null(judge("::1", allow, 3));

    once__cidr c;
    assert_int_equal(once__cidr_parse("::1", &c), ONCE_OK);
    assert_int_equal(c.bits, 128);
    assert_int_equal(once__cidr_parse("192.168.0.0/0", &c), ONCE_OK);
    assert_int_equal(c.bits, 0);
    assert_null(judge("192.168.1.1", &c, 1)); /* /0 allows every IPv4 address */
    static const char *const malformed[] = {"10.0.0.0/33", "::/129", "10.0.0/8", "10.0.0.0/",
                                            "10.0.0.0/x",  "host/8", "",         "/8",
                                            "10.0.0.0/-1"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        if (once__cidr_parse(malformed[i], &c) != ONCE_EINVAL)
            fail_msg("CIDR %s was accepted", malformed[i]);
}

static int url_ok(const char *url, const once__cidr *allow, size_t n, char *why)
{
    return once__push_url_check(url, allow, n, why, 300);
}

static void url_check(void **state)
{
    (void)state;
    char why[300];
    static const char *const refused[] = {
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://LOCALHOST./x",
        "http://api.localhost/x",
        "http://[::1]:9/x",
        "http://10.0.0.5/x",
        "http://169.254.169.254/latest",
        "http://[::ffff:127.0.0.1]/x",
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "ftp://example.com/x",
        "file:///etc/passwd",
        "http://user:pw@example.com/x",
        "not a url",
        "",
        "example.com/hook",
        "http://:80/x",
        "gopher://example.com/",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (url_ok(refused[i], NULL, 0, why) != ONCE_EINVAL)
            fail_msg("url %s was accepted", refused[i]);
    assert_int_equal(url_ok("http://127.0.0.1:8080/hook", NULL, 0, why), ONCE_EINVAL);
    assert_non_null(strstr(why, "loopback"));
    assert_non_null(strstr(why, "--push-allow"));

    static const char *const accepted[] = {"https://example.com/hook", "http://8.8.8.8:80/x",
                                           "https://[2001:db8::1]/x?q=1",
                                           "http://webhooks.internal.example/x"};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        if (url_ok(accepted[i], NULL, 0, why) != ONCE_OK)
            fail_msg("url %s was refused: %s", accepted[i], why);

    once__cidr lo;
    assert_int_equal(once__cidr_parse("127.0.0.1/32", &lo), ONCE_OK);
    assert_int_equal(url_ok("http://127.0.0.1:8080/hook", &lo, 1, why), ONCE_OK);
    assert_int_equal(url_ok("http://localhost:8080/hook", &lo, 1, why), ONCE_OK);
    assert_int_equal(url_ok("http://[::1]:8080/hook", &lo, 1, why), ONCE_EINVAL);
    char longurl[ONCE__PUSH_URL_MAX + 40];
    snprintf(longurl, sizeof longurl, "https://example.com/%0*d", ONCE__PUSH_URL_MAX, 7);
    assert_int_equal(url_ok(longurl, NULL, 0, why), ONCE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blocked_ranges),
        cmocka_unit_test(wrapped_ipv4),
        cmocka_unit_test(allow_list),
        cmocka_unit_test(url_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
