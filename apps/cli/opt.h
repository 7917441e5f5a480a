/*
 * opt.h -- the command-line options of onced and once as data: one table
 * row per option (its names, argument, default, help text, section and
 * where its value goes). The same table drives the parser, `--help`, the
 * man pages' option lists (`--help-man`) and the README's configuration
 * tables (`--help-markdown`), so the four cannot disagree:
 * scripts/gendocs.py writes the generated text between marker comments
 * and tests/packaging/test_man.py fails when it is stale.
 *
 * The tables are static const data; parsing writes only into the caller's
 * options struct (base), at each row's offset.
 */
#ifndef ONCE_APPS_OPT_H
#define ONCE_APPS_OPT_H

#include <stddef.h>
#include <stdio.h>

typedef struct opt opt;

/* Store value v of option o (v NULL for a row without an argument) at
 * dst = base + o->off. 0, or -1 with a message naming the option in
 * err[0..n). */
typedef int (*opt_set)(const opt *o, const char *v, void *dst, char *err, size_t n);

enum {
    OPT_HIDDEN = 1u << 0,   /* parsed, never listed (--help-man) */
    OPT_REQUIRED = 1u << 1, /* the README's default column says "required" */
};

struct opt {
    const char *name;   /* "--listen"; a row without set: the text of its name
                         * column ("GET /healthz", a command's synopsis; '\n'
                         * breaks it in --help) */
    char shrt;          /* a one-letter alias ('h': -h), or 0 */
    const char *arg;    /* "HOST:PORT"; lower case = literal values ("text|json");
                         * NULL: the option takes no value */
    const char *def;    /* the default as shown, "(DEF)" after the help text
                         * and the README's default column; NULL: none */
    const char *help;   /* one paragraph of plain text; the renderers wrap it.
                         * "@STORE_URLS@" is replaced (opt_program.store_urls) */
    const char *md;     /* the README's "meaning" (Markdown); NULL: not in it */
    int section;        /* index into opt_program.sections */
    opt_set set;        /* NULL: listed only, never parsed */
    size_t off;         /* where set writes, from the options struct's start */
    long max;           /* set's bound: a list's capacity, a count's maximum;
                         * a duration: -1 lets it be negative */
    int action;         /* > 0: parsing stops and returns it (--help, --version) */
    unsigned flags;     /* OPT_HIDDEN, OPT_REQUIRED */
};

/* A heading of --help and of the man page. Its rows are the table's rows
 * whose section is its index, in table order. */
typedef struct opt_section {
    const char *title;     /* --help: "HTTP" prints "HTTP:"; NULL: no heading */
    const char *man_title; /* upper case: a .SH, else a .SS; NULL: no heading */
    const char *man_before;/* roff emitted before the heading, or NULL */
    const char *intro;     /* a paragraph under the heading, or NULL */
    const char *outro;     /* a paragraph after the rows, or NULL */
} opt_section;

typedef struct opt_program {
    const char *name;       /* "onced": the README column header's word */
    const opt *rows;
    size_t nrows;
    const opt_section *sections;
    size_t nsections;
    int help_col;           /* the column --help's help text starts at */
    const char *head;       /* --help's text before the sections */
    const char *tail;       /* and after them */
    int unknown_whole;      /* "unknown option --x=1" (1) or "--x" (0) */
    /* The store URL forms for @STORE_URLS@: docs = 1 every form once knows
     * (the man page, the README), 0 those this build takes (--help). */
    void (*store_urls)(int docs, char *out, size_t n);
    /* A word that is not an option; NULL: it is refused as one. */
    int (*positional)(void *base, const char *arg, char *err, size_t n);
} opt_program;

/* Parse argv[1..argc) into base: 0 when every argument was taken, -1 with
 * the message in err[0..n) (the caller prefixes the program's name), or the
 * action of the first row with one that was given. */
int opt_parse(const opt_program *p, int argc, char **argv, void *base, char *err, size_t n);

/* The actions every program has: --help, --help-man, --help-markdown,
 * --version. opt_print prints what each asks for ("onced 0.1.0" for
 * --version) on out. */
enum { OPT_ACT_HELP = 1, OPT_ACT_MAN, OPT_ACT_MARKDOWN, OPT_ACT_VERSION };
void opt_print(const opt_program *p, int action, FILE *out);

/* Setters for rows whose value needs no program-specific check. */
int opt_set_str(const opt *o, const char *v, void *dst, char *err, size_t n);   /* const char * */
int opt_set_flag(const opt *o, const char *v, void *dst, char *err, size_t n);  /* int = 1 */
/* uint64_t from 1KiB to 1GiB, "1MiB", "512k" */
int opt_set_size(const opt *o, const char *v, void *dst, char *err, size_t n);

#endif /* ONCE_APPS_OPT_H */
