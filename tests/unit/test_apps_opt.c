/*
 * test_apps_opt.c -- apps/cli/opt.c, the option table both programs parse
 * and document themselves with: the parser's rules (both spellings of a
 * value, flags, actions, words, the error messages the e2e tests and users
 * see) and the three renderings (--help wrapped to 79 columns, roff, the
 * README's Markdown table), on a small table of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/opt.h"

typedef struct args {
    const char *name, *mode, *word1, *word2;
    int verbose;
    uint64_t size;
    int nwords;
} args;

static int set_mode(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    if (strcmp(v, "fast") != 0 && strcmp(v, "slow") != 0) {
        snprintf(err, n, "%s: expected fast or slow, got %s", o->name, v);
        return -1;
    }
    *(const char **)dst = v;
    return 0;
}

static int word(void *base, const char *arg, char *err, size_t n)
{
    args *a = base;
    if (a->nwords == 2) {
        snprintf(err, n, "unexpected argument %s", arg);
        return -1;
    }
    *(a->nwords++ == 0 ? &a->word1 : &a->word2) = arg;
    return 0;
}

static void urls(int docs, char *out, size_t n)
{
    snprintf(out, n, "%s", docs ? "a:, b:, c:" : "a:, b:");
}

static const opt_section sections[] = {
    {"basics", "Basics", NULL, "Read this first.", NULL},
    {"more", "MORE", ".SH BEFORE\n", NULL, "And a closing note."},
};

static const opt rows[] = {
    {"--name", 0, "NAME", NULL, "the name", "the `name`", 0, opt_set_str, offsetof(args, name),
     0, 0, OPT_REQUIRED},
    {"--mode", 0, "fast|slow", "fast", "how to go about it", "how, or why", 0, set_mode,
     offsetof(args, mode), 0, 0, 0},
    {"--verbose", 'v', NULL, "off", "say more", "say more", 0, opt_set_flag,
     offsetof(args, verbose), 0, 0, 0},
    {"--a-rather-long-option-name", 0, "ARGUMENT", "a phrase default",
     "a help text long enough to need more than one line of the seventy-nine columns the "
     "help is wrapped to, from the column the program sets; stores: @STORE_URLS@",
     "long", 1, opt_set_size, offsetof(args, size), 0, 0, 0},
    {"GET /x", 0, NULL, NULL, ".starts with a dot", NULL, 1, NULL, 0, 0, 0, 0},
    {"--help", 'h', NULL, NULL, "this text", NULL, 1, NULL, 0, 0, OPT_ACT_HELP, 0},
    {"--secret-flag", 0, NULL, NULL, "never listed", NULL, 1, opt_set_flag,
     offsetof(args, verbose), 0, 0, OPT_HIDDEN},
};

static const opt_program prog = {
    .name = "prog",
    .rows = rows,
    .nrows = sizeof rows / sizeof rows[0],
    .sections = sections,
    .nsections = sizeof sections / sizeof sections[0],
    .help_col = 20,
    .head = "usage: prog\n\n",
    .tail = "\nthe end\n",
    .unknown_whole = 1,
    .store_urls = urls,
    .positional = word,
};

/* Parse a NULL-terminated argument list (argv[0] is the program). */
static int parse(const opt_program *p, args *a, char *err, size_t n, ...)
{
    char *argv[16] = {"prog"};
    int argc = 1;
    va_list ap;
    va_start(ap, n);
    for (char *s; (s = va_arg(ap, char *)) != NULL && argc < 15;)
        argv[argc++] = s;
    va_end(ap);
    memset(a, 0, sizeof *a);
    err[0] = '\0';
    return opt_parse(p, argc, argv, a, err, n);
}

static char *render(int action)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    opt_print(&prog, action, f);
    fclose(f);
    return buf;
}

static void test_values(void **state)
{
    (void)state;
    args a;
    char err[256];
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--name", "x", "--mode=slow", "-v",
                           "--a-rather-long-option-name", "2k", "w1", "w2", NULL),
                     0);
    assert_string_equal(a.name, "x");
    assert_string_equal(a.mode, "slow");
    assert_int_equal(a.verbose, 1);
    assert_int_equal(a.size, 2048);
    assert_string_equal(a.word1, "w1");
    assert_string_equal(a.word2, "w2");
    /* "--name=" gives the empty value; "=" inside a value is the value's. */
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--name=", NULL), 0);
    assert_string_equal(a.name, "");
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--name=a=b", NULL), 0);
    assert_string_equal(a.name, "a=b");
}

static void test_errors(void **state)
{
    (void)state;
    args a;
    char err[256];
    static const struct {
        const char *argv[3], *want;
    } cases[] = {
        {{"--bogus=1"}, "unknown option --bogus=1"},
        {{"--name"}, "--name needs a value"},
        {{"--verbose=1"}, "--verbose takes no value"},
        {{"--mode", "medium"}, "--mode: expected fast or slow, got medium"},
        {{"--a-rather-long-option-name", "12"},
         "--a-rather-long-option-name: expected a size from 1KiB to 1GiB, got 12"},
        {{"w1", "w2", "w3"}, "unexpected argument w3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *v = cases[i].argv;
        assert_int_equal(parse(&prog, &a, err, sizeof err, v[0], v[1], v[2], NULL), -1);
        assert_string_equal(err, cases[i].want);
    }
    /* A word that is not --NAME nor a one-letter alias is the program's
     * (once get -5), and a listed row is no option. */
    assert_int_equal(parse(&prog, &a, err, sizeof err, "-x", "GET /x", NULL), 0);
    assert_string_equal(a.word1, "-x");
    assert_string_equal(a.word2, "GET /x");
    /* unknown_whole = 0: the name alone, as once says it. */
    opt_program named = prog;
    named.unknown_whole = 0;
    assert_int_equal(parse(&named, &a, err, sizeof err, "--bogus=1", NULL), -1);
    assert_string_equal(err, "unknown option --bogus");
    /* No positional handler: a word is an unknown option (onced). */
    named.positional = NULL;
    assert_int_equal(parse(&named, &a, err, sizeof err, "word", NULL), -1);
    assert_string_equal(err, "unknown option word");
}

/* An action stops the walk where it stands: what comes after is not read,
 * what came before was. */
static void test_actions(void **state)
{
    (void)state;
    args a;
    char err[256];
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--name", "n", "-h", "--bogus", NULL),
                     OPT_ACT_HELP);
    assert_string_equal(a.name, "n");
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--bogus", "--help", NULL), -1);
    assert_int_equal(parse(&prog, &a, err, sizeof err, "--secret-flag", NULL), 0);
    assert_int_equal(a.verbose, 1);
}

static void test_help(void **state)
{
    (void)state;
    char *h = render(OPT_ACT_HELP);
    for (char *line = h, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1)
        assert_true(nl - line <= 79);
    assert_non_null(strstr(h, "usage: prog\n\nbasics:\n"));
    assert_non_null(strstr(h, "                    Read this first.\n"));
    /* The help text at column 20; a default in parentheses at its end. */
    assert_non_null(strstr(h, "\n  --name NAME       the name\n"));
    assert_non_null(strstr(h, "\n  --mode fast|slow  how to go about it (fast)\n"));
    /* A name column that reaches column 20 puts the text on the next line. */
    assert_non_null(strstr(h, "\n  --a-rather-long-option-name ARGUMENT\n                    a help"));
    assert_non_null(strstr(h, "stores: a:, b: (a phrase default)"));   /* this build's */
    assert_null(strstr(h, "--secret-flag"));
    assert_non_null(strstr(h, "\n  And a closing note.\n\nthe end\n"));
    free(h);
}

static void test_man(void **state)
{
    (void)state;
    char *m = render(OPT_ACT_MAN);
    assert_non_null(strstr(m, ".SS Basics\nRead this first.\n.TP\n\\fB\\-\\-name\\fR \\fINAME\\fR\n"
                              "the name\n"));
    assert_non_null(strstr(m, "\\fB\\-\\-mode\\fR \\fBfast|slow\\fR\n"));
    assert_non_null(strstr(m, ".SH BEFORE\n.SH MORE\n"));
    assert_non_null(strstr(m, "a:, b:, c:"));   /* every scheme */
    assert_non_null(strstr(m, "\\fIGET\\fR \\fB/x\\fR\n\\&.starts with a dot\n"));
    assert_non_null(strstr(m, ".PP\nAnd a closing note.\n"));
    assert_null(strstr(m, "secret"));
    for (char *line = m, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1)
        assert_true(nl - line <= 90);
    free(m);
}

static void test_markdown(void **state)
{
    (void)state;
    char *md = render(OPT_ACT_MARKDOWN);
    assert_string_equal(md,
                        "| prog flag | default | meaning |\n"
                        "|---|---|---|\n"
                        "| `--name NAME` | required | the `name` |\n"
                        "| `--mode fast\\|slow` | `fast` | how, or why |\n"
                        "| `--verbose` | off | say more |\n"
                        "| `--a-rather-long-option-name ARGUMENT` | a phrase default | long |\n");
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_actions), cmocka_unit_test(test_help),
        cmocka_unit_test(test_man),     cmocka_unit_test(test_markdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
