/*
 * opt.c -- the option table's parser and its three renderers: --help (plain
 * text wrapped to 80 columns), --help-man (roff for the OPTIONS part of a man
 * page) and --help-markdown (the README's configuration table). What each
 * option means is written once, in the program's table (opt.h).
 */
#include "cli/opt.h"

#include <stdint.h>
#include <string.h>

#include "http/http.h"
#include "once/once.h"

#define WIDTH 79

/* ---------------------------------------------------------------------------
 * Parsing.
 */

/* The row named by arg ("--name" or "--name=value", or "-x"), or NULL. */
static const opt *find_row(const opt_program *p, const char *arg, size_t nlen)
{
    for (size_t k = 0; k < p->nrows; k++) {
        const opt *o = &p->rows[k];
        if (o->set == NULL && o->action == 0)
            continue;
        if (strlen(o->name) == nlen && strncmp(arg, o->name, nlen) == 0)
            return o;
        if (o->shrt != 0 && nlen == 2 && arg[0] == '-' && arg[1] == o->shrt)
            return o;
    }
    return NULL;
}

int opt_parse(const opt_program *p, int argc, char **argv, void *base, char *err, size_t n)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int long_form = strncmp(arg, "--", 2) == 0;
        const char *eq = long_form ? strchr(arg, '=') : NULL;
        size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt *o = find_row(p, arg, nlen);
        /* Anything but "--name" and a one-letter alias is a word. */
        if (o == NULL && !long_form && p->positional != NULL) {
            if (p->positional(base, arg, err, n) != 0)
                return -1;
            continue;
        }
        if (o == NULL) {
            snprintf(err, n, "unknown option %.*s", p->unknown_whole ? (int)strlen(arg) : (int)nlen,
                     arg);
            return -1;
        }
        if (o->action > 0)
            return o->action;
        const char *v = NULL;
        if (o->arg == NULL && eq != NULL) {
            snprintf(err, n, "%s takes no value", o->name);
            return -1;
        }
        if (o->arg != NULL) {
            v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (v == NULL) {
                snprintf(err, n, "%s needs a value", o->name);
                return -1;
            }
        }
        if (o->set(o, v, (char *)base + o->off, err, n) != 0)
            return -1;
    }
    return 0;
}

int opt_set_str(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    (void)o, (void)err, (void)n;
    *(const char **)dst = v;
    return 0;
}

int opt_set_flag(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    (void)o, (void)v, (void)err, (void)n;
    *(int *)dst = 1;
    return 0;
}

int opt_set_size(const opt *o, const char *v, void *dst, char *err, size_t n)
{
    uint64_t sz;
    if (once__parse_size(v, &sz) != ONCE_OK || sz < 1024 || sz > ((uint64_t)1 << 30)) {
        snprintf(err, n, "%s: expected a size from 1KiB to 1GiB, got %s", o->name, v);
        return -1;
    }
    *(uint64_t *)dst = sz;
    return 0;
}

/* ---------------------------------------------------------------------------
 * Rendering.
 */

/* o's help text as shown: @STORE_URLS@ replaced, then " (DEF)". */
static void help_text(const opt_program *p, const opt *o, int docs, char *out, size_t n)
{
    static const char token[] = "@STORE_URLS@";
    const char *at = strstr(o->help, token);
    char urls[256] = "";
    if (at != NULL && p->store_urls != NULL)
        p->store_urls(docs, urls, sizeof urls);
    if (at == NULL)
        snprintf(out, n, "%s", o->help);
    else
        snprintf(out, n, "%.*s%s%s", (int)(at - o->help), o->help, urls, at + sizeof token - 1);
    if (o->def != NULL) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, " (%s)", o->def);
    }
}

/* text, wrapped to WIDTH at spaces, each line indented by indent columns;
 * the first line continues from column col (col < indent: it is padded). */
static void wrap(FILE *out, const char *text, int col, int indent)
{
    const char *s = text;
    int first = 1;
    while (*s != '\0') {
        int at = first ? col : 0;
        int pad = indent - at;
        if (pad < 0)
            pad = 0;
        int room = WIDTH - (at + pad);
        size_t len = strlen(s), cut = len;
        if ((int)len > room) {
            cut = (size_t)room;
            while (cut > 0 && s[cut] != ' ')
                cut--;
            if (cut == 0) /* one word longer than the line: keep it whole */
                cut = strcspn(s, " ");
        }
        fprintf(out, "%*s%.*s\n", pad, "", (int)cut, s);
        s += cut;
        while (*s == ' ')
            s++;
        first = 0;
    }
}

/* --help: the name column ("  --name ARG", a synopsis's '\n' starting a new
 * line 7 columns in), then the help text from help_col, or on the next line
 * when the name reaches it. */
static void help_row(const opt_program *p, const opt *o, FILE *out)
{
    char text[4096];
    int col = 2;
    fputs("  ", out);
    for (const char *s = o->name; *s != '\0'; s++) {
        if (*s == '\n') {
            fputs("\n       ", out);
            col = 7;
        } else {
            fputc(*s, out);
            col++;
        }
    }
    if (o->arg != NULL)
        col += fprintf(out, " %s", o->arg);
    help_text(p, o, 0, text, sizeof text);
    if (col >= p->help_col) {
        fputc('\n', out);
        col = 0;
    }
    wrap(out, text, col, p->help_col);
}

static void print_help(const opt_program *p, FILE *out)
{
    fputs(p->head, out);
    for (size_t s = 0; s < p->nsections; s++) {
        const opt_section *sec = &p->sections[s];
        if (sec->title != NULL)
            fprintf(out, "%s:\n", sec->title);
        if (sec->intro != NULL)
            wrap(out, sec->intro, 0, p->help_col);
        for (size_t k = 0; k < p->nrows; k++)
            if (p->rows[k].section == (int)s && !(p->rows[k].flags & OPT_HIDDEN))
                help_row(p, &p->rows[k], out);
        if (sec->outro != NULL)
            wrap(out, sec->outro, 0, 2);
    }
    fputs(p->tail, out);
}

/* text as roff: '-' and '\' escaped, a line that would start with '.' or
 * '\'' guarded, broken at spaces before column 72 (man fills it again on
 * display; the break keeps the page's source readable). */
static void roff_text(FILE *out, const char *text)
{
    int col = 0;
    for (const char *s = text; *s != '\0'; s++) {
        if (*s == ' ' && col > 0 && col + 1 + (int)strcspn(s + 1, " ") > 72) {
            fputc('\n', out);
            col = 0;
            continue;
        }
        if (col == 0 && (*s == '.' || *s == '\''))
            col += fprintf(out, "\\&");
        if (*s == '-')
            col += fprintf(out, "\\-");
        else if (*s == '\\')
            col += fprintf(out, "\\e");
        else if (*s == '\n')
            col += fprintf(out, " ");
        else
            col += fprintf(out, "%c", *s);
    }
    fputc('\n', out);
}

/* One word of a name column in a font: bold for option names and literal
 * values, italic for metavariables (their first letter upper case). */
static void roff_word(FILE *out, const char *w, size_t len)
{
    size_t a = 0;
    while (a < len && !((w[a] >= 'A' && w[a] <= 'Z') || (w[a] >= 'a' && w[a] <= 'z')))
        a++;
    int meta = a < len && w[a] >= 'A' && w[a] <= 'Z';
    fputs(meta ? "\\fI" : "\\fB", out);
    for (size_t i = 0; i < len; i++) {
        if (w[i] == '-')
            fputs("\\-", out);
        else if (w[i] == '\n')
            fputc(' ', out);
        else
            fputc(w[i], out);
    }
    fputs("\\fR", out);
}

static void roff_words(FILE *out, const char *s)
{
    while (*s != '\0') {
        size_t len = strcspn(s, " \n");
        roff_word(out, s, len);
        s += len;
        while (*s == ' ' || *s == '\n')
            s++;
        if (*s != '\0')
            fputc(' ', out);
    }
}

static void print_man(const opt_program *p, FILE *out)
{
    char text[4096];
    for (size_t s = 0; s < p->nsections; s++) {
        const opt_section *sec = &p->sections[s];
        if (sec->man_before != NULL)
            fputs(sec->man_before, out);
        if (sec->man_title != NULL) {
            int upper = sec->man_title[0] >= 'A' && sec->man_title[0] <= 'Z' &&
                        sec->man_title[1] >= 'A' && sec->man_title[1] <= 'Z';
            fprintf(out, ".%s ", upper ? "SH" : "SS");
            roff_text(out, sec->man_title);
        }
        if (sec->intro != NULL)
            roff_text(out, sec->intro);
        for (size_t k = 0; k < p->nrows; k++) {
            const opt *o = &p->rows[k];
            if (o->section != (int)s || (o->flags & OPT_HIDDEN))
                continue;
            fputs(".TP\n", out);
            roff_words(out, o->name);
            if (o->arg != NULL) {
                fputc(' ', out);
                roff_words(out, o->arg);
            }
            fputc('\n', out);
            help_text(p, o, 1, text, sizeof text);
            roff_text(out, text);
        }
        if (sec->outro != NULL) {
            fputs(".PP\n", out);
            roff_text(out, sec->outro);
        }
    }
}

/* s in a Markdown table cell: '|' escaped. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* The README's table: the rows with a Markdown meaning, in table order. A
 * default that is one word is code (`60s`; but off, none), a phrase is
 * prose. */
static void print_markdown(const opt_program *p, FILE *out)
{
    fprintf(out, "| %s flag | default | meaning |\n|---|---|---|\n", p->name);
    for (size_t k = 0; k < p->nrows; k++) {
        const opt *o = &p->rows[k];
        if (o->md == NULL)
            continue;
        fputs("| `", out);
        md_cell(out, o->name);
        if (o->arg != NULL) {
            fputc(' ', out);
            md_cell(out, o->arg);
        }
        fputs("` | ", out);
        const char *def = o->def != NULL ? o->def : (o->flags & OPT_REQUIRED) ? "required" : "";
        int code = o->def != NULL && strchr(def, ' ') == NULL && strcmp(def, "off") != 0 &&
                   strcmp(def, "none") != 0;
        fputs(code ? "`" : "", out);
        md_cell(out, def);
        fputs(code ? "`" : "", out);
        fputs(" | ", out);
        fputs(o->md, out);
        fputs(" |\n", out);
    }
}

void opt_print(const opt_program *p, int action, FILE *out)
{
    if (action == OPT_ACT_VERSION)
        fprintf(out, "%s %s\n", p->name, once_version());
    else if (action == OPT_ACT_HELP)
        print_help(p, out);
    else if (action == OPT_ACT_MAN)
        print_man(p, out);
    else if (action == OPT_ACT_MARKDOWN)
        print_markdown(p, out);
}
