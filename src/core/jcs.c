/*
 * jcs.c -- RFC 8785 JSON Canonicalization Scheme and the request digest.
 *
 * Text is parsed with jansson as I-JSON: duplicate names rejected, every
 * number decoded as a double (JCS has no integers; a literal too large for
 * jansson's integer type must not fail either), U+0000 allowed in strings,
 * any value at the top level. Nesting is limited to ONCE_JSON_MAX_DEPTH by a
 * scan of the text *before* jansson sees it, so deep input never reaches its
 * recursive parser (whose own limit is 2048).
 *
 * Output invariants: no whitespace; object members sorted by the UTF-16 code
 * units of their names; strings escape only '"', '\\' and U+0000..U+001F
 * (the short forms \b \f \n \r \t where they exist, else \u00xx in
 * lowercase) and are otherwise copied as UTF-8; numbers as in jcs_num.c.
 * Canonicalising canonical output gives the same bytes.
 *
 * Known limit: jansson 2.14 cannot hold U+0000 inside an object *name*, so
 * such input is refused with ONCE_EINVAL even though I-JSON allows it.
 */
#include "core/alloc_int.h"
#include "core/jcs.h"
#include "core/json_depth.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARSE_FLAGS                                                                                \
    (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL | JSON_DECODE_ANY)

/* Growing output buffer; owned by one write call. canonical: RFC 8785 form
 * (members sorted, integers as doubles); otherwise members keep their order
 * and integers are written exactly (once__json_write). */
struct jbuf {
    once__text t;
    int canonical;
};

/* The room a text starts with: most texts written on the request path (an
 * answer, an event, a stored task) fit, so they are not grown step by step. */
#define TEXT_FIRST_CAP 512

static int text_grow(once__text *t, size_t extra)
{
    if (extra <= t->cap - t->len)
        return ONCE_OK;
    if (extra > SIZE_MAX / 2 - t->len)
        return ONCE_ENOMEM;
    size_t cap = t->cap ? t->cap : TEXT_FIRST_CAP;
    while (cap - t->len < extra)
        cap *= 2;
    char *p = once_realloc(t->p, cap);
    if (p == NULL)
        return ONCE_ENOMEM;
    t->p = p;
    t->cap = cap;
    return ONCE_OK;
}

/* inline: the writer calls these for every token, and the room is nearly
 * always there already. */
static inline int jbuf_put(struct jbuf *b, const char *s, size_t n)
{
    once__text *t = &b->t;
    if (n > t->cap - t->len) {
        int rc = text_grow(t, n);
        if (rc != ONCE_OK)
            return rc;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    return ONCE_OK;
}

static inline int jbuf_putc(struct jbuf *b, char c)
{
    once__text *t = &b->t;
    if (t->len == t->cap) {
        int rc = text_grow(t, 1);
        if (rc != ONCE_OK)
            return rc;
    }
    t->p[t->len++] = c;
    return ONCE_OK;
}

/* v in decimal into buf (at least 20 bytes: "-9223372036854775808"); its
 * length. */
static size_t int_digits(int64_t v, char *buf)
{
    char rev[20];
    size_t n = 0, k = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        rev[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        buf[k++] = '-';
    while (n > 0)
        buf[k++] = rev[--n];
    return k;
}

/* ---------------------------------------------------------------------------
 * UTF-8. jansson validates what it parses, but once__jcs_json also takes
 * values built by callers (json_stringn_nocheck exists), so strings are
 * checked here before the sort below relies on them being well formed.
 */

/* The length of the well-formed UTF-8 sequence (no overlong, surrogate or
 * code point past U+10FFFF) at s[0..n), n > 0, or 0 if there is none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t j = 1; j < len; j++) {
        if ((s[j] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* 1 if s[0..n) is well-formed UTF-8. */
static int utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0, len; i < n; i += len)
        if ((len = utf8_seq(s + i, n - i)) == 0)
            return 0;
    return 1;
}

/* Decode the code point at s[*i] (valid UTF-8) and advance *i. */
static uint32_t utf8_next(const unsigned char *s, size_t *i)
{
    unsigned c = s[*i];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = c & (0x7F >> len);
    for (size_t j = 1; j < len; j++)
        cp = (cp << 6) | (s[*i + j] & 0x3F);
    *i += len;
    return cp;
}

/* A weight that orders code points as their UTF-16 encodings order: a
 * supplementary character starts with a surrogate (0xD800..0xDBFF), which
 * sorts after U+0000..U+D7FF but before U+E000..U+FFFF. Surrogate pairs
 * order among themselves as their code points do. */
static uint32_t utf16_weight(uint32_t cp)
{
    if (cp < 0xD800)
        return cp;
    if (cp >= 0x10000)
        return 0xD800 + (cp - 0x10000); /* 0xD800 .. 0x10D7FF */
    return cp + 0x100000;               /* U+E000..U+FFFF above those */
}

/* ---------------------------------------------------------------------------
 * Writer.
 */

struct member {
    const char *key;
    size_t keylen;
    json_t *value;
};

static int member_cmp(const void *pa, const void *pb)
{
    const struct member *a = pa, *b = pb;
    const unsigned char *sa = (const unsigned char *)a->key;
    const unsigned char *sb = (const unsigned char *)b->key;
    size_t i = 0, j = 0;
    while (i < a->keylen && j < b->keylen) {
        uint32_t wa = utf16_weight(utf8_next(sa, &i));
        uint32_t wb = utf16_weight(utf8_next(sb, &j));
        if (wa != wb)
            return wa < wb ? -1 : 1;
    }
    /* Equal up to here: the shorter name is a prefix and sorts first. */
    if (i < a->keylen)
        return 1;
    if (j < b->keylen)
        return -1;
    return 0;
}

/* 1 if one of the 8 bytes of w is not copied as it is: below 0x20, '"',
 * '\\' or past ASCII. ((x - 0x01..) & ~x & 0x80.. finds a zero byte of x;
 * a borrow can only mark bytes above a byte that truly matches, so the
 * answer "some byte" is exact.) */
static inline int word_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
    uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
    uint64_t hit = ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
                   ((bslash - ones) & ~bslash) | w;
    return (hit & high) != 0;
}

/* How many bytes at the start of u[0..n) are written as they are: plain
 * ASCII, skipped eight bytes at a time. */
static size_t plain_run(const unsigned char *u, size_t n)
{
    size_t i = 0;
    uint64_t w;
    if (n >= sizeof w) {
        while (n - i >= sizeof w && (memcpy(&w, u + i, sizeof w), !word_special(w)))
            i += sizeof w;
        /* Fewer than eight bytes left after plain words: the last eight
         * bytes of the string cover them. */
        if (i == n || (n - i < sizeof w &&
                       (memcpy(&w, u + n - sizeof w, sizeof w), !word_special(w))))
            return n;
    }
    while (i < n && (unsigned)(u[i] - 0x20) < 0x60 && u[i] != '"' && u[i] != '\\')
        i++;
    return i;
}

static int write_string(struct jbuf *b, const char *s, size_t n)
{
    /* The characters with a two-character escape, and that escape's letter. */
    static const char short_from[] = "\"\\\b\f\n\r\t";
    static const char short_to[] = "\"\\bfnrt";
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = plain_run(u, n);
    if (i == n) {
        /* Most strings (names, IDs, states) are plain: one copy. */
        once__text *t = &b->t;
        if (n > SIZE_MAX - 2 || (n + 2 > t->cap - t->len && text_grow(t, n + 2) != ONCE_OK))
            return ONCE_ENOMEM;
        t->p[t->len] = '"';
        memcpy(t->p + t->len + 1, s, n);
        t->p[t->len + 1 + n] = '"';
        t->len += n + 2;
        return ONCE_OK;
    }
    int rc = jbuf_putc(b, '"');
    size_t run = 0; /* start of the pending run of bytes copied as they are */
    /* One pass: plain runs are copied at once, a multi-byte character is
     * checked where it stands (a string that is not UTF-8 fails the whole
     * write). */
    while (i < n && rc == ONCE_OK) {
        unsigned char c = u[i];
        if (c >= 0x80) {
            size_t len = utf8_seq(u + i, n - i);
            if (len == 0)
                return ONCE_EINVAL;
            i += len;
        } else { /* '"', '\\' or a control character */
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
            size_t esclen = 6;
            const char *hit = memchr(short_from, c, sizeof short_from - 1);
            if (hit != NULL) {
                esc[1] = short_to[hit - short_from];
                esclen = 2;
            }
            rc = jbuf_put(b, s + run, i - run);
            if (rc == ONCE_OK)
                rc = jbuf_put(b, esc, esclen);
            run = ++i;
        }
        i += plain_run(u + i, n - i);
    }
    if (rc == ONCE_OK)
        rc = jbuf_put(b, s + run, n - run);
    if (rc == ONCE_OK)
        rc = jbuf_putc(b, '"');
    return rc;
}

static int write_value(struct jbuf *b, const json_t *v, int depth);

/* Members an object may have before write_object takes its list from the
 * heap: most objects of a task are small, and output is written often. */
#define MEMBERS_ON_STACK 16

/* An object with its members in insertion order (once__json_write):
 * written as it is walked. */
static int write_members(struct jbuf *b, const json_t *obj, int depth)
{
    int rc = jbuf_putc(b, '{');
    char sep = '\0'; /* none before the first member */
    /* jansson's iterators take a non-const object but do not modify it. */
    for (void *it = json_object_iter((json_t *)obj); it != NULL && rc == ONCE_OK;
         it = json_object_iter_next((json_t *)obj, it)) {
        if (sep != '\0')
            rc = jbuf_putc(b, sep);
        sep = ',';
        if (rc == ONCE_OK)
            rc = write_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
        if (rc == ONCE_OK)
            rc = jbuf_putc(b, ':');
        if (rc == ONCE_OK)
            rc = write_value(b, json_object_iter_value(it), depth);
    }
    return rc == ONCE_OK ? jbuf_putc(b, '}') : rc;
}

static int write_object(struct jbuf *b, const json_t *obj, int depth)
{
    if (!b->canonical)
        return write_members(b, obj, depth);
    size_t count = json_object_size(obj);
    struct member stack_m[MEMBERS_ON_STACK];
    struct member *m = stack_m;
    if (count > MEMBERS_ON_STACK) {
        m = once_calloc(count, sizeof *m);
        if (m == NULL)
            return ONCE_ENOMEM;
    }
    size_t i = 0;
    /* jansson's iterators take a non-const object but do not modify it. */
    for (void *it = json_object_iter((json_t *)obj); it != NULL && i < count;
         it = json_object_iter_next((json_t *)obj, it)) {
        m[i].key = json_object_iter_key(it);
        m[i].keylen = json_object_iter_key_len(it);
        m[i].value = json_object_iter_value(it);
        i++;
    }
    int rc = ONCE_OK;
    /* The sort reads names as UTF-8: check them first (unsorted, each name
     * is checked as it is written). */
    for (size_t k = 0; k < i && rc == ONCE_OK && b->canonical; k++)
        if (!utf8_valid((const unsigned char *)m[k].key, m[k].keylen))
            rc = ONCE_EINVAL;
    if (rc == ONCE_OK && i > 1 && b->canonical)
        qsort(m, i, sizeof *m, member_cmp);
    if (rc == ONCE_OK)
        rc = jbuf_putc(b, '{');
    for (size_t k = 0; k < i && rc == ONCE_OK; k++) {
        if (k > 0)
            rc = jbuf_putc(b, ',');
        if (rc == ONCE_OK)
            rc = write_string(b, m[k].key, m[k].keylen);
        if (rc == ONCE_OK)
            rc = jbuf_putc(b, ':');
        if (rc == ONCE_OK)
            rc = write_value(b, m[k].value, depth);
    }
    if (rc == ONCE_OK)
        rc = jbuf_putc(b, '}');
    if (m != stack_m)
        once_free(m);
    return rc;
}

static int write_number(struct jbuf *b, double d)
{
    char num[ONCE__JCS_NUM_MAX];
    int n = once__jcs_number(d, num);
    if (n < 0)
        return n;
    return jbuf_put(b, num, (size_t)n);
}

/* depth: containers already open around v. */
static int write_value(struct jbuf *b, const json_t *v, int depth)
{
    if (v == NULL)
        return ONCE_EINVAL;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (depth >= ONCE_JSON_MAX_DEPTH)
            return ONCE_ERANGE;
        return write_object(b, v, depth + 1);
    case JSON_ARRAY: {
        if (depth >= ONCE_JSON_MAX_DEPTH)
            return ONCE_ERANGE;
        int rc = jbuf_putc(b, '[');
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n && rc == ONCE_OK; i++) {
            if (i > 0)
                rc = jbuf_putc(b, ',');
            if (rc == ONCE_OK)
                rc = write_value(b, json_array_get(v, i), depth + 1);
        }
        return rc == ONCE_OK ? jbuf_putc(b, ']') : rc;
    }
    case JSON_STRING:
        return write_string(b, json_string_value(v), json_string_length(v));
    case JSON_REAL:
        return write_number(b, json_real_value(v));
    case JSON_INTEGER:
        if (!b->canonical) {
            char num[24];
            return jbuf_put(b, num, int_digits(json_integer_value(v), num));
        }
        /* Beyond 2^53 this rounds, exactly as a JCS (double) reader would. */
        return write_number(b, (double)json_integer_value(v));
    case JSON_TRUE:
        return jbuf_put(b, "true", 4);
    case JSON_FALSE:
        return jbuf_put(b, "false", 5);
    case JSON_NULL:
        return jbuf_put(b, "null", 4);
    }
    return ONCE_EINVAL;
}

static int write_doc(const json_t *v, int canonical, char **out, size_t *outlen)
{
    if (out == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    if (outlen)
        *outlen = 0;
    struct jbuf b = {ONCE__TEXT_INIT, canonical};
    int rc = write_value(&b, v, 0);
    if (rc == ONCE_OK)
        rc = jbuf_putc(&b, '\0');
    if (rc != ONCE_OK) {
        once_free(b.t.p);
        return rc;
    }
    *out = b.t.p;
    if (outlen)
        *outlen = b.t.len - 1;
    return ONCE_OK;
}

int once__jcs_json(const json_t *v, char **out, size_t *outlen)
{
    return write_doc(v, 1, out, outlen);
}

int once__json_write(const json_t *v, char **out, size_t *outlen)
{
    return write_doc(v, 0, out, outlen);
}

/* ---------------------------------------------------------------------------
 * Text from pieces (jcs.h).
 */

void once__text_reserve(once__text *t, size_t n)
{
    if (t->rc == ONCE_OK)
        t->rc = text_grow(t, n);
}

void once__text_put(once__text *t, const char *s, size_t n)
{
    struct jbuf b = {*t, 0};
    if (t->rc == ONCE_OK && (t->rc = jbuf_put(&b, s, n)) == ONCE_OK)
        *t = b.t;
}

void once__text_str(once__text *t, const char *s)
{
    once__text_put(t, s, strlen(s));
}

void once__text_strs(once__text *t, ...)
{
    va_list ap;
    va_start(ap, t);
    for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *))
        once__text_str(t, s);
    va_end(ap);
}

void once__text_int(once__text *t, int64_t v)
{
    char num[24];
    once__text_put(t, num, int_digits(v, num));
}

void once__text_json(once__text *t, const json_t *v)
{
    if (t->rc != ONCE_OK)
        return;
    struct jbuf b = {*t, 0};
    int rc = write_value(&b, v, 0);
    *t = b.t;
    t->rc = rc;
}

char *once__text_done(once__text *t, size_t *len)
{
    once__text_put(t, "", 1);
    char *p = t->rc == ONCE_OK ? t->p : NULL;
    if (p == NULL)
        once_free(t->p);
    if (len != NULL)
        *len = p != NULL ? t->len - 1 : 0;
    *t = (once__text)ONCE__TEXT_INIT;
    return p;
}

/* ---------------------------------------------------------------------------
 * Parsing.
 */

int once__json_loadb(const char *buf, size_t n, size_t flags, json_t **out, json_error_t *err)
{
    json_error_t scratch;
    if (err == NULL)
        err = &scratch;
    *out = NULL;
    if (buf == NULL) {
        memset(err, 0, sizeof *err);
        snprintf(err->text, sizeof err->text, "no text");
        return ONCE_EPARSE;
    }
    once__json_guard_begin();
    json_t *v = json_loadb(buf, n, flags, err);
    if (once__json_guard_end()) {
        json_decref(v);
        snprintf(err->text, sizeof err->text, "out of memory");
        return ONCE_ENOMEM;
    }
    if (v == NULL)
        return ONCE_EPARSE;
    *out = v;
    return ONCE_OK;
}

int once__json_loads(const char *text, size_t flags, json_t **out, json_error_t *err)
{
    return once__json_loadb(text, text != NULL ? strlen(text) : 0, flags, out, err);
}

int once__json_object(const char *text, json_t **out)
{
    int rc = once__json_loads(text, 0, out, NULL);
    if (rc == ONCE_OK && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        rc = ONCE_EPARSE;
    }
    return rc;
}

/* Deepest nesting of in[0..n), stopping early once past the limit. Exact for
 * well-formed JSON (brackets inside strings are skipped); for malformed text
 * it is only an estimate, which is fine: such text fails either way. */
static int text_too_deep(const char *in, size_t n)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > ONCE_JSON_MAX_DEPTH)
                return 1;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

/* Why jansson refused the text (running out of memory is told apart by
 * once__json_loadb before this). */
static int map_json_error(const json_error_t *err)
{
    switch (json_error_code(err)) {
    case json_error_stack_overflow:
        return ONCE_ERANGE;
    case json_error_duplicate_key:
    case json_error_numeric_overflow: /* the literal would be an infinity */
    case json_error_null_byte_in_key: /* see the file comment */
        return ONCE_EINVAL;
    default:
        return ONCE_EPARSE;
    }
}

/* Parse JSON text for JCS; on success *v is a new reference. */
static int parse(const char *in, size_t n, json_t **v)
{
    *v = NULL;
    if (in == NULL && n > 0)
        return ONCE_EINVAL;
    if (in == NULL)
        return ONCE_EPARSE;
    if (text_too_deep(in, n))
        return ONCE_ERANGE;
    json_error_t err;
    int rc = once__json_loadb(in, n, PARSE_FLAGS, v, &err);
    return rc == ONCE_EPARSE ? map_json_error(&err) : rc;
}

int once_jcs(const char *in, size_t n, char **out, size_t *outlen)
{
    if (out == NULL)
        return ONCE_EINVAL;
    *out = NULL;
    if (outlen)
        *outlen = 0;
    json_t *v;
    int rc = parse(in, n, &v);
    if (rc == ONCE_OK)
        rc = once__jcs_json(v, out, outlen);
    json_decref(v);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Request digest (docs/design.md section 3): what the client sent, not what the
 * server may add (taskId, contextId).
 */

/* The members the digest covers, in canonical order (ASCII names sort
 * bytewise), so its text is written straight from the message without
 * building and sorting an object of its own. The last one comes from the
 * push config, never from the message. */
static const char *const digest_members[] = {
    "extensions", "messageId", "metadata", "parts", "referenceTaskIds", "role",
    "taskPushNotificationConfig",
};
#define DIGEST_MEMBERS (sizeof digest_members / sizeof digest_members[0])

int once__message_digest_json(const json_t *msg, uint8_t out[ONCE_SHA256_LEN])
{
    return once__request_digest_json(msg, NULL, out);
}

int once__request_digest_json(const json_t *msg, const json_t *push,
                              uint8_t out[ONCE_SHA256_LEN])
{
    if (!json_is_object(msg) || out == NULL)
        return ONCE_EINVAL;
    struct jbuf b = {ONCE__TEXT_INIT, 1};
    int rc = jbuf_putc(&b, '{');
    char sep = '\0';
    for (size_t i = 0; i < DIGEST_MEMBERS && rc == ONCE_OK; i++) {
        const json_t *v = i + 1 < DIGEST_MEMBERS ? json_object_get(msg, digest_members[i]) : push;
        if (v == NULL)
            continue;
        if (sep != '\0')
            rc = jbuf_putc(&b, sep);
        sep = ',';
        if (rc == ONCE_OK)
            rc = write_string(&b, digest_members[i], strlen(digest_members[i]));
        if (rc == ONCE_OK)
            rc = jbuf_putc(&b, ':');
        if (rc == ONCE_OK)
            rc = write_value(&b, v, 1); /* inside the digest's object */
    }
    if (rc == ONCE_OK)
        rc = jbuf_putc(&b, '}');
    if (rc == ONCE_OK)
        once_sha256(b.t.p, b.t.len, out);
    once_free(b.t.p);
    return rc;
}

int once_message_digest(const char *msg_json, size_t n, uint8_t out[ONCE_SHA256_LEN])
{
    if (out == NULL)
        return ONCE_EINVAL;
    json_t *v;
    int rc = parse(msg_json, n, &v);
    if (rc == ONCE_OK)
        rc = once__message_digest_json(v, out);
    json_decref(v);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Nesting depth of a value (json_depth.h).
 */

int once__json_depth(const json_t *v, int limit)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (limit <= 0)
        return 1;
    int deepest = 0;
    if (json_is_array(v)) {
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n && deepest < limit; i++) {
            int d = once__json_depth(json_array_get(v, i), limit - 1);
            if (d > deepest)
                deepest = d;
        }
    } else {
        /* jansson's iterators take a non-const object but do not modify it. */
        for (void *it = json_object_iter((json_t *)v); it != NULL && deepest < limit;
             it = json_object_iter_next((json_t *)v, it)) {
            int d = once__json_depth(json_object_iter_value(it), limit - 1);
            if (d > deepest)
                deepest = d;
        }
    }
    return deepest + 1;
}
