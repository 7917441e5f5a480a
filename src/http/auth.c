/*
 * auth.c -- bearer tokens -> principals (--auth-tokens FILE).
 *
 * Only SHA-256 digests of the tokens are kept in memory, and a lookup
 * compares the presented token's digest with every entry in constant time
 * without stopping at the first match, so neither timing nor a memory dump
 * of the table gives a token away.
 *
 * A table is immutable once parsed. once__tokens_swap (SIGHUP re-reads the
 * file) puts another one in its place: a lookup holds a reference to the
 * table it started with, so it finishes on it while new lookups see the new
 * one, and the old table is freed by whoever drops its last reference.
 * Lookups copy the principal out for the same reason.
 *
 * Sessions (the inspector's login cookie) never carry a token:
 * "v1.<expiry, unix seconds>.<principal, hex>.<mac, hex>", the MAC an
 * HMAC-SHA256 keyed by the digest of the token that signed in, over
 * SESSION_LABEL and the fields before it. A session is good while it has
 * not expired and one of its principal's tokens in the table signs it the
 * same: a tokens file without that token (read at start and at every
 * SIGHUP) revokes every session it signed.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/alloc_int.h"
#include "http/http.h"

typedef struct token_entry {
    uint8_t digest[ONCE_SHA256_LEN];
    char principal[ONCE_PRINCIPAL_MAX + 1];
} token_entry;

/* Filled by once__tokens_parse, immutable afterwards; refs (atomic) counts
 * the handle that serves it and every lookup running on it. */
typedef struct token_table {
    token_entry *v;
    size_t n, cap;
    long refs;
} token_table;

/* cur changes only under mu (once__tokens_swap); a lookup takes mu only
 * long enough to take a reference to cur. */
struct once_tokens {
    pthread_mutex_t mu;
    token_table *cur;
};

static void table_release(token_table *tb)
{
    if (tb == NULL || __atomic_sub_fetch(&tb->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    once_free(tb->v);
    once_free(tb);
}

/* The table served now, with a reference the caller releases. The lock is
 * not part of the handle's value: a const handle may still be locked. */
static token_table *table_acquire(const once_tokens *t)
{
    pthread_mutex_t *mu = (pthread_mutex_t *)&t->mu;
    pthread_mutex_lock(mu);
    token_table *tb = t->cur;
    __atomic_add_fetch(&tb->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(mu);
    return tb;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The word at *q (up to a blank or eol), with *q moved past it and the
 * blanks after it; its length (0 at eol). */
static size_t next_word(const char **q, const char *eol, const char **word)
{
    const char *p = *q;
    *word = p;
    while (p < eol && !is_blank(*p))
        p++;
    size_t len = (size_t)(p - *word);
    while (p < eol && is_blank(*p))
        p++;
    *q = p;
    return len;
}

static int add_entry(token_table *t, const char *tok, size_t toklen, const char *pr,
                     size_t prlen)
{
    if (t->n == t->cap && once__grow(&t->v, &t->cap, sizeof *t->v, 8) != ONCE_OK)
        return ONCE_ENOMEM;
    token_entry *e = &t->v[t->n];
    once_sha256(tok, toklen, e->digest);
    memcpy(e->principal, pr, prlen);
    e->principal[prlen] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        if (memcmp(t->v[i].digest, e->digest, ONCE_SHA256_LEN) == 0)
            return ONCE_EEXISTS;
    }
    t->n++;
    return ONCE_OK;
}

int once__tokens_parse(const char *text, size_t n, once_tokens **out, char *err, size_t errlen)
{
    *out = NULL;
    token_table *t = once_calloc(1, sizeof *t);
    if (t == NULL)
        return ONCE_ENOMEM;
    t->refs = 1;
    size_t lineno = 0;
    const char *p = text, *end = text + n;
    int rc = ONCE_OK;
    while (p < end && rc == ONCE_OK) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        lineno++;
        const char *q = p;
        p = eol + (eol < end);
        while (q < eol && is_blank(*q))
            q++;
        if (q == eol || *q == '#')
            continue;
        const char *tok, *pr;
        size_t toklen = next_word(&q, eol, &tok);
        size_t prlen = next_word(&q, eol, &pr);
        if (prlen == 0 || q != eol) {
            snprintf(err, errlen, "line %zu: expected \"TOKEN PRINCIPAL\"", lineno);
            rc = ONCE_EINVAL;
            break;
        }
        if (prlen > ONCE_PRINCIPAL_MAX) {
            snprintf(err, errlen, "line %zu: principal longer than %d characters", lineno,
                     ONCE_PRINCIPAL_MAX);
            rc = ONCE_EINVAL;
            break;
        }
        for (size_t i = 0; i < toklen + prlen && rc == ONCE_OK; i++) {
            char c = i < toklen ? tok[i] : pr[i - toklen];
            if ((unsigned char)c <= 0x20 || (unsigned char)c >= 0x7f) {
                snprintf(err, errlen, "line %zu: tokens and principals are printable ASCII",
                         lineno);
                rc = ONCE_EINVAL;
            }
        }
        if (rc != ONCE_OK)
            break;
        rc = add_entry(t, tok, toklen, pr, prlen);
        if (rc == ONCE_EEXISTS) {
            snprintf(err, errlen, "line %zu: duplicate token", lineno);
            rc = ONCE_EINVAL;
        }
    }
    if (rc == ONCE_OK && t->n == 0) {
        snprintf(err, errlen, "no tokens in the file");
        rc = ONCE_EINVAL;
    }
    once_tokens *h = rc == ONCE_OK ? once_calloc(1, sizeof *h) : NULL;
    if (rc == ONCE_OK && h == NULL)
        rc = ONCE_ENOMEM;
    if (rc != ONCE_OK) {
        table_release(t);
        return rc;
    }
    pthread_mutex_init(&h->mu, NULL);
    h->cur = t;
    *out = h;
    return ONCE_OK;
}

int once__tokens_load(const char *path, once_tokens **out, char *err, size_t errlen)
{
    *out = NULL;
    char *buf;
    size_t len;
    int rc = once__read_file(path, (size_t)16 << 20, &buf, &len, err, errlen);
    if (rc != ONCE_OK)
        return rc;
    char inner[200];
    rc = once__tokens_parse(buf, len, out, inner, sizeof inner);
    if (rc != ONCE_OK)
        snprintf(err, errlen, "%s: %s", path, inner);
    memset(buf, 0, len); /* tokens do not linger on the heap */
    once_free(buf);
    return rc;
}

void once__tokens_free(once_tokens *t)
{
    if (t == NULL)
        return;
    table_release(t->cur);
    pthread_mutex_destroy(&t->mu);
    once_free(t);
}

void once__tokens_swap(once_tokens *t, once_tokens *fresh)
{
    pthread_mutex_lock(&t->mu);
    token_table *old = t->cur;
    t->cur = fresh->cur;
    pthread_mutex_unlock(&t->mu);
    fresh->cur = old;   /* released below, or by the last lookup on it */
    once__tokens_free(fresh);
}

size_t once__tokens_count(const once_tokens *t)
{
    if (t == NULL)
        return 0;
    token_table *tb = table_acquire(t);
    size_t n = tb->n;
    table_release(tb);
    return n;
}

/* The entry in tb whose digest is d, compared with every entry in constant
 * time; NULL if none. */
static const token_entry *find_digest(const token_table *tb, const uint8_t d[ONCE_SHA256_LEN])
{
    const token_entry *found = NULL;
    for (size_t i = 0; i < tb->n; i++) {
        if (once_ct_equal(d, tb->v[i].digest, ONCE_SHA256_LEN) && found == NULL)
            found = &tb->v[i];
    }
    return found;
}

const char *once__tokens_principal(const once_tokens *t, const char *authorization,
                                   char out[ONCE_PRINCIPAL_MAX + 1])
{
    if (t == NULL || authorization == NULL)
        return NULL;
    const char *p = authorization;
    while (is_blank(*p))
        p++;
    if (strncasecmp(p, "Bearer", 6) != 0 || !is_blank(p[6]))
        return NULL;
    p += 6;
    while (is_blank(*p))
        p++;
    size_t len = strlen(p);
    while (len > 0 && is_blank(p[len - 1]))
        len--;
    if (len == 0)
        return NULL;
    uint8_t d[ONCE_SHA256_LEN];
    once_sha256(p, len, d);
    token_table *tb = table_acquire(t);
    const token_entry *e = find_digest(tb, d);
    if (e != NULL)
        memcpy(out, e->principal, strlen(e->principal) + 1);
    table_release(tb);
    return e != NULL ? out : NULL;
}

/* --- sessions ------------------------------------------------------------ */

#define SESSION_LABEL "once-inspect-session."

/* The MAC of head ("v1.<exp>.<phex>") under key, as hex. */
static void session_mac(const uint8_t key[ONCE_SHA256_LEN], const char *head, size_t len,
                        char hex[2 * ONCE_SHA256_LEN + 1])
{
    char msg[sizeof SESSION_LABEL + ONCE__SESSION_MAX];
    size_t k = sizeof SESSION_LABEL - 1;
    memcpy(msg, SESSION_LABEL, k);
    memcpy(msg + k, head, len);
    uint8_t mac[ONCE_SHA256_LEN];
    once_hmac_sha256(key, ONCE_SHA256_LEN, msg, k + len, mac);
    once_hex(mac, sizeof mac, hex);
}

/* The session value for entry e, good until expiry, into out[0..n). */
static int session_sign(const token_entry *e, int64_t expiry, char *out, size_t n)
{
    char phex[2 * ONCE_PRINCIPAL_MAX + 1];
    once_hex((const uint8_t *)e->principal, strlen(e->principal), phex);
    char head[ONCE__SESSION_MAX];
    int len = snprintf(head, sizeof head, "v1.%lld.%s", (long long)expiry, phex);
    if (len < 0 || (size_t)len >= sizeof head)
        return ONCE_ERANGE;
    char mac[2 * ONCE_SHA256_LEN + 1];
    session_mac(e->digest, head, (size_t)len, mac);
    if ((size_t)snprintf(out, n, "%s.%s", head, mac) >= n)
        return ONCE_ERANGE;
    return ONCE_OK;
}

int once__session_make(const once_tokens *t, const char *token, int64_t now_s, int64_t ttl_s,
                       char *out, size_t n)
{
    if (t == NULL || token == NULL || ttl_s <= 0)
        return ONCE_EINVAL;
    uint8_t d[ONCE_SHA256_LEN];
    once_sha256(token, strlen(token), d);
    token_table *tb = table_acquire(t);
    const token_entry *e = find_digest(tb, d);
    int rc = e != NULL ? session_sign(e, now_s + ttl_s, out, n) : ONCE_ENOTFOUND;
    table_release(tb);
    return rc;
}

static int unhex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

const char *once__session_principal(const once_tokens *t, const char *value, int64_t now_s,
                                    char out[ONCE_PRINCIPAL_MAX + 1])
{
    if (t == NULL || value == NULL || strncmp(value, "v1.", 3) != 0)
        return NULL;
    const char *exp = value + 3, *dot1 = strchr(exp, '.');
    const char *dot2 = dot1 != NULL ? strchr(dot1 + 1, '.') : NULL;
    if (dot2 == NULL || dot1 == exp || dot1 - exp > 18 || (size_t)(dot2 - value) >= ONCE__SESSION_MAX)
        return NULL;
    int64_t expiry = 0;
    for (const char *p = exp; p < dot1; p++) {
        if (*p < '0' || *p > '9')
            return NULL;
        expiry = expiry * 10 + (*p - '0');
    }
    if (expiry <= now_s)
        return NULL;
    /* The principal, from hex. */
    size_t hl = (size_t)(dot2 - dot1 - 1);
    char principal[ONCE_PRINCIPAL_MAX + 1];
    if (hl == 0 || hl % 2 != 0 || hl / 2 > ONCE_PRINCIPAL_MAX)
        return NULL;
    for (size_t i = 0; i < hl / 2; i++) {
        int hi = unhex(dot1[1 + 2 * i]), lo = unhex(dot1[2 + 2 * i]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return NULL;
        principal[i] = (char)(hi << 4 | lo);
    }
    principal[hl / 2] = '\0';
    const char *mac = dot2 + 1;
    if (strlen(mac) != 2 * ONCE_SHA256_LEN)
        return NULL;
    /* Every token of that principal is tried, to the end. */
    int found = 0;
    token_table *tb = table_acquire(t);
    for (size_t i = 0; i < tb->n; i++) {
        if (strcmp(tb->v[i].principal, principal) != 0)
            continue;
        char want[2 * ONCE_SHA256_LEN + 1];
        session_mac(tb->v[i].digest, value, (size_t)(dot2 - value), want);
        found |= once_ct_equal(want, mac, 2 * ONCE_SHA256_LEN);
    }
    table_release(tb);
    if (!found)
        return NULL;
    memcpy(out, principal, hl / 2 + 1);
    return out;
}
