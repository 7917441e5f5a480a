/*
 * decide.c -- the dedup verdict (docs/design.md section 4) and the digest lines
 * it reads.
 *
 * once__decide() first reduces its input to three facts (what is stored, how
 * the incoming message matches the accepted ones, which class the stored
 * state is in) and then takes the first row of one constant table that fits.
 * The table is docs/design.md's table, row for row, so a reviewer compares the two
 * side by side; its last row is a catch-all, so the function is total.
 *
 * Digest lines record every accepted message: "<64 lowercase hex> <messageId>\n"
 * (messageId empty for 0.1 tasks/send; it may hold any character but '\n').
 * They come from storage, so the reader never trusts them: a malformed line
 * is skipped, never read past.
 */
#include <stdint.h>
#include <string.h>

#include "core/decide.h"

/* ------------------------------------------------------------------------
 * Digest lines.
 */

/* One parsed line: pointers into the caller's text, nothing copied. */
typedef struct digest_line {
    const char *hex;   /* ONCE_DIGEST_HEX chars, not NUL-terminated */
    const char *id;    /* messageId, id_len chars */
    size_t id_len;
} digest_line;

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int hex_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_lower_hex(s[i]))
            return 0;
    }
    return 1;
}

/* 1 if s is exactly ONCE_DIGEST_HEX lowercase hex digits and a NUL. */
static int digest_arg_ok(const char *s)
{
    return s != NULL && strnlen(s, ONCE_DIGEST_HEX + 1) == ONCE_DIGEST_HEX &&
           hex_ok(s, ONCE_DIGEST_HEX);
}

/* Parse the next well-formed line at *cursor into *out and advance past it;
 * malformed lines on the way are skipped. 0 at the end of the text. A last
 * line without its '\n' still counts (a truncated write loses nothing else). */
static int next_line(const char **cursor, digest_line *out)
{
    const char *p = *cursor;
    while (p != NULL && *p != '\0') {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        const char *line = p;
        p = nl != NULL ? nl + 1 : line + len;
        if (len > ONCE_DIGEST_HEX && line[ONCE_DIGEST_HEX] == ' ' && hex_ok(line, ONCE_DIGEST_HEX)) {
            out->hex = line;
            out->id = line + ONCE_DIGEST_HEX + 1;
            out->id_len = len - ONCE_DIGEST_HEX - 1;
            *cursor = p;
            return 1;
        }
    }
    *cursor = p;
    return 0;
}

int once__digests_find_id(const char *lines, const char *message_id, const char **digest_hex)
{
    if (message_id == NULL)
        return 0;
    size_t want = strlen(message_id);
    const char *cur = lines;
    digest_line l;
    while (next_line(&cur, &l)) {
        if (l.id_len == want && memcmp(l.id, message_id, want) == 0) {
            if (digest_hex != NULL)
                *digest_hex = l.hex;
            return 1;
        }
    }
    return 0;
}

int once__digests_has(const char *lines, const char *digest_hex)
{
    if (!digest_arg_ok(digest_hex))
        return 0;
    const char *cur = lines;
    digest_line l;
    while (next_line(&cur, &l)) {
        if (memcmp(l.hex, digest_hex, ONCE_DIGEST_HEX) == 0)
            return 1;
    }
    return 0;
}

int once__digests_append(char **lines, const char *digest_hex, const char *message_id)
{
    if (lines == NULL || !digest_arg_ok(digest_hex))
        return ONCE_EINVAL;
    if (message_id == NULL)
        message_id = "";
    if (strchr(message_id, '\n') != NULL)
        return ONCE_EINVAL;

    size_t old = *lines != NULL ? strlen(*lines) : 0;
    /* Never glue the new line onto a truncated last one. */
    size_t sep = old > 0 && (*lines)[old - 1] != '\n' ? 1 : 0;
    size_t idlen = strlen(message_id);
    /* sep + hex + ' ' + id + '\n' + NUL <= idlen + ONCE_DIGEST_HEX + 4 */
    if (idlen > SIZE_MAX - ONCE_DIGEST_HEX - 4 || old > SIZE_MAX - ONCE_DIGEST_HEX - 4 - idlen)
        return ONCE_ERANGE;
    size_t add = sep + ONCE_DIGEST_HEX + 1 + idlen + 1;

    char *buf = once_realloc(*lines, old + add + 1);
    if (buf == NULL)
        return ONCE_ENOMEM;   /* *lines is untouched and still owned by the caller */
    char *w = buf + old;
    if (sep)
        *w++ = '\n';
    memcpy(w, digest_hex, ONCE_DIGEST_HEX);
    w += ONCE_DIGEST_HEX;
    *w++ = ' ';
    memcpy(w, message_id, idlen);
    w += idlen;
    *w++ = '\n';
    *w = '\0';
    *lines = buf;
    return ONCE_OK;
}

void once__digests_first(const char *lines, char out[ONCE_DIGEST_HEX + 1])
{
    const char *cur = lines;
    digest_line l;
    if (next_line(&cur, &l)) {
        memcpy(out, l.hex, ONCE_DIGEST_HEX);
        out[ONCE_DIGEST_HEX] = '\0';
    } else {
        out[0] = '\0';
    }
}

/* ------------------------------------------------------------------------
 * The verdict.
 */

/* Each verdict's names: the enum's (tests, diagnostics) and the outcome a
 * request's log line reports (core/log.h). */
static const struct {
    const char *name;
    const char *outcome;
} verdicts[] = {
    [ONCE_V_REGISTER] = {"REGISTER", "registered"},
    [ONCE_V_TASK_NOT_FOUND] = {"TASK_NOT_FOUND", "refused:task_not_found"},
    [ONCE_V_TASK_EXPIRED] = {"TASK_EXPIRED", "refused:task_expired"},
    [ONCE_V_REPLAY] = {"REPLAY", "replayed"},
    [ONCE_V_IDEMPOTENCY_CONFLICT] = {"IDEMPOTENCY_CONFLICT", "refused:idempotency_conflict"},
    [ONCE_V_CONTINUE] = {"CONTINUE", "continued"},
    [ONCE_V_REJECT_BUSY] = {"REJECT_BUSY", "refused:task_busy"},
    [ONCE_V_REJECT_TERMINAL] = {"REJECT_TERMINAL", "refused:task_terminal"},
};

static int verdict_known(once_verdict v)
{
    return (int)v >= ONCE_V_REGISTER && (int)v <= ONCE_V_REJECT_TERMINAL;
}

const char *once__verdict_name(once_verdict v)
{
    return verdict_known(v) ? verdicts[v].name : "UNKNOWN";
}

const char *once__verdict_outcome(once_verdict v)
{
    return verdict_known(v) ? verdicts[v].outcome : NULL;
}

/* How the incoming message relates to the accepted ones. */
typedef enum match {
    M_NA = 0,   /* row does not look at it */
    M_NEW,      /* no accepted message matches: a new message */
    M_SAME,     /* same messageId (0.1: same digest) already accepted, same digest */
    M_DIFF      /* same messageId already accepted with a different digest */
} match;

/* The stored state, as decide sees it. C_OTHER is a state no real record
 * holds (unknown or out of range); only the catch-all row takes it. */
typedef enum sclass {
    C_ANY = 0,
    C_INTERRUPTED,  /* input-required, auth-required */
    C_BUSY,         /* submitted, working */
    C_TERMINAL,     /* completed, failed, canceled, rejected */
    C_OTHER
} sclass;

enum { S_ANY = -1 };        /* "stored" wildcard, for the catch-all row */
enum { R_ANY = -1, R_NO = 0, R_YES = 1 };

typedef struct rule {
    int stored;             /* once_stored or S_ANY */
    match msg;
    sclass cls;
    int may_register;       /* R_YES, R_NO or R_ANY */
    once_verdict verdict;
} rule;

/* docs/design.md section 4, top to bottom; the first row that fits wins. */
static const rule rules[] = {
    /* stored                incoming  state          may_reg  verdict */
    {ONCE_STORED_NONE,      M_NA,     C_ANY,         R_YES,   ONCE_V_REGISTER},
    {ONCE_STORED_NONE,      M_NA,     C_ANY,         R_NO,    ONCE_V_TASK_NOT_FOUND},
    {ONCE_STORED_TOMBSTONE, M_NA,     C_ANY,         R_ANY,   ONCE_V_TASK_EXPIRED},
    {ONCE_STORED_RECORD,    M_SAME,   C_ANY,         R_ANY,   ONCE_V_REPLAY},
    {ONCE_STORED_RECORD,    M_DIFF,   C_ANY,         R_ANY,   ONCE_V_IDEMPOTENCY_CONFLICT},
    {ONCE_STORED_RECORD,    M_NEW,    C_INTERRUPTED, R_ANY,   ONCE_V_CONTINUE},
    {ONCE_STORED_RECORD,    M_NEW,    C_BUSY,        R_ANY,   ONCE_V_REJECT_BUSY},
    {ONCE_STORED_RECORD,    M_NEW,    C_TERMINAL,    R_ANY,   ONCE_V_REJECT_TERMINAL},
    /* The last row of docs/design.md's table: a record in no known state, or
     * a corrupt "stored". Refuse without running anything; never register
     * over unknown data. */
    {S_ANY,                 M_NA,     C_ANY,         R_ANY,   ONCE_V_REJECT_BUSY},
};

static sclass classify(once_state s)
{
    if (once_state_interrupted(s))
        return C_INTERRUPTED;
    if (s == ONCE_STATE_SUBMITTED || s == ONCE_STATE_WORKING)
        return C_BUSY;
    if (once_state_terminal(s))
        return C_TERMINAL;
    return C_OTHER;
}

/* Only meaningful for a record. A 1.0 message is identified by its
 * messageId; a 0.1 tasks/send has none, so its digest is its identity and a
 * different digest is simply a new message. */
static match match_of(const once__decide_in *in)
{
    const char *lines = in->digests != NULL ? in->digests : "";
    if (in->message_id != NULL) {
        const char *stored_hex = NULL;
        if (!once__digests_find_id(lines, in->message_id, &stored_hex))
            return M_NEW;
        return digest_arg_ok(in->digest_hex) &&
                       memcmp(stored_hex, in->digest_hex, ONCE_DIGEST_HEX) == 0
                   ? M_SAME
                   : M_DIFF;
    }
    return once__digests_has(lines, in->digest_hex) ? M_SAME : M_NEW;
}

once_verdict once__decide(const once__decide_in *in)
{
    if (in == NULL)
        return ONCE_V_REJECT_BUSY;   /* same refusal as the catch-all row */
    int rec = in->stored == ONCE_STORED_RECORD;
    match m = rec ? match_of(in) : M_NA;
    sclass c = rec ? classify(in->state) : C_OTHER;
    int reg = in->may_register != 0;

    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const rule *r = &rules[i];
        if (r->stored != S_ANY && r->stored != (int)in->stored)
            continue;
        if (r->msg != M_NA && r->msg != m)
            continue;
        if (r->cls != C_ANY && r->cls != c)
            continue;
        if (r->may_register != R_ANY && r->may_register != reg)
            continue;
        return r->verdict;
    }
    return ONCE_V_REJECT_BUSY;   /* unreachable: the last row matches everything */
}
