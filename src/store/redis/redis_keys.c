/*
 * redis_keys.c -- how the Redis backend names its keys and lays out a
 * record in a hash (redis.c describes the whole layout).
 *
 * Task keys embed "<len(principal)>:<principal>:<task_id>" inside the hash
 * tag: the length prefix makes the encoding injective even though both
 * principals and task IDs may contain ':' ("a:b"/"c" and "a"/"b:c" differ),
 * and every key of one task begins with the same "{...", so they share a
 * Cluster slot whatever bytes the principal holds.
 *
 * Index members are "<principal>\0<task_id>": neither part can hold a NUL,
 * and byte order over them equals strcmp order over (principal, task_id),
 * the tie-break the contract's orderings use. List members are 16 hex
 * digits of created_at with the sign bit flipped (so byte order is numeric
 * order, negatives included) followed by the task_id: ZRANGEBYLEX then walks
 * (created_at, task_id) ascending and "(member" is the strict cursor. The
 * principal's list index P:l:<principal> and the context's
 * P:c:<len(principal)>:<principal>:<context_id> hold the same member of a
 * record (its "lm" field); the length prefix keeps the context key
 * injective, as in the task keys.
 *
 * Record fields (values are bytes; numbers are decimal):
 *   p principal  i task_id  c context_id  s state  k kind  v version
 *   g generation  f fence  n step  o lease_owner  u lease_until
 *   ca created_at  ua updated_at  fa finished_at  d digests  j task_json
 *   x checkpoint (absent = NULL)  pj push_json (absent = NULL)
 *   jn journal (absent = NULL)
 *   fd first digest  lm list member
 * Layout 3 keeps a record in three hash fields, because Redis' CPU per
 * write grows with the arguments a script is sent and passes on (issue
 * #35): "h", the head the scripts read, the values of s v g f o fa c lm fd
 * in that order, each ended by a NUL; "r", the rest as name NUL value NUL
 * pairs (p i k n ca ua d j, and x pj jn when not NULL); and "u", which
 * renew rewrites alone. No value can hold a NUL (the reader refuses one),
 * so the split is unambiguous. A hash of layouts 1 and 2 holds every field
 * under its own name; the reader takes both (redis_schema.c repacks them).
 * A tombstone hash holds T=1, p, i, fd, fa and ea (expired_at) only.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis/redis_int.h"
#include "store/store_int.h"

static char *key_fmt(const rd_store *s, const char *principal, const char *task_id,
                     const char *suffix)
{
    size_t n = strlen(s->prefix) + strlen(principal) + strlen(task_id) + strlen(suffix) + 32;
    char *k = once_malloc(n);

    if (k)
        snprintf(k, n, "%s:{%zu:%s:%s}%s", s->prefix, strlen(principal), principal, task_id,
                 suffix);
    return k;
}

char *once__rd_key_task(const rd_store *s, const char *principal, const char *task_id)
{
    return key_fmt(s, principal, task_id, "");
}

char *once__rd_key_events(const rd_store *s, const char *principal, const char *task_id)
{
    return key_fmt(s, principal, task_id, ":ev");
}

char *once__rd_key_push(const rd_store *s, const char *principal, const char *task_id)
{
    return key_fmt(s, principal, task_id, ":push");
}

char *once__rd_key_global(const rd_store *s, const char *name)
{
    size_t n = strlen(s->prefix) + strlen(name) + 2;
    char *k = once_malloc(n);

    if (k)
        snprintf(k, n, "%s:%s", s->prefix, name);
    return k;
}

char *once__rd_key_list(const rd_store *s, const char *principal)
{
    size_t n = strlen(s->prefix) + strlen(principal) + 4;
    char *k = once_malloc(n);

    if (k)
        snprintf(k, n, "%s:l:%s", s->prefix, principal);
    return k;
}

char *once__rd_key_ctx(const rd_store *s, const char *principal, const char *context_id)
{
    size_t n = strlen(s->prefix) + strlen(principal) + strlen(context_id) + 32;
    char *k = once_malloc(n);

    if (k)
        snprintf(k, n, "%s:c:%zu:%s:%s", s->prefix, strlen(principal), principal, context_id);
    return k;
}

int once__rd_task_keys(const rd_store *s, const char *principal, const char *task_id,
                       rd_task_keys *k)
{
    int i;

    memset(k, 0, sizeof *k);

    k->v[RD_K_H] = once__rd_key_task(s, principal, task_id);
    k->v[RD_K_EV] = once__rd_key_events(s, principal, task_id);
    k->v[RD_K_LEASES] = once__rd_key_global(s, "leases");
    k->v[RD_K_FINISHED] = once__rd_key_global(s, "finished");
    k->v[RD_K_LIST] = once__rd_key_list(s, principal);
    k->v[RD_K_TOMBS] = once__rd_key_global(s, "tombs");
    k->v[RD_K_PUSH] = once__rd_key_push(s, principal, task_id);
    k->v[RD_K_PUSHQ] = once__rd_key_global(s, "pushq");
    k->v[RD_K_CHANGES] = once__rd_key_global(s, "changes");
    for (i = 0; i < RD_K_CTX; i++) {
        if (!k->v[i]) {
            once__rd_task_keys_free(k);
            return ONCE_ENOMEM;
        }
    }
    return ONCE_OK;
}

int once__rd_task_keys_ctx(const rd_store *s, rd_task_keys *k, rd_task_key which,
                           const char *principal, const char *context_id)
{
    once_free(k->v[which]);
    k->v[which] = once__rd_key_ctx(s, principal, context_id);
    return k->v[which] ? ONCE_OK : ONCE_ENOMEM;
}

void once__rd_task_keys_free(rd_task_keys *k)
{
    int i;

    for (i = 0; i < RD_K_N; i++)
        once_free(k->v[i]);
    memset(k, 0, sizeof *k);
}

void once__rd_cmd_eval_keys(rd_cmd *c, const rd_store *s, rd_script_id id, const rd_task_keys *k,
                            const rd_task_key *which, int n)
{
    int i;

    once__rd_cmd_evalsha(c, s, id, n);
    for (i = 0; i < n; i++)
        once__rd_str(c, k->v[which ? which[i] : (rd_task_key)i]);
}

size_t once__rd_member(char *buf, const char *principal, const char *task_id)
{
    size_t a = strlen(principal), b = strlen(task_id);

    memcpy(buf, principal, a);
    buf[a] = '\0';
    memcpy(buf + a + 1, task_id, b);
    return a + 1 + b;
}

int once__rd_member_key(const char *m, size_t n, once_key *out)
{
    const char *nul = memchr(m, '\0', n);
    size_t a, b;

    memset(out, 0, sizeof *out);
    if (!nul)
        return ONCE_ECORRUPT;
    a = (size_t)(nul - m);
    b = n - a - 1;
    if (a == 0 || a > ONCE_PRINCIPAL_MAX || b == 0 || b > ONCE_ID_MAX || memchr(nul + 1, '\0', b))
        return ONCE_ECORRUPT;
    memcpy(out->principal, m, a);
    memcpy(out->task_id, nul + 1, b);
    return ONCE_OK;
}

size_t once__rd_list_member(char *buf, int64_t created_at, const char *task_id)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t u = (uint64_t)created_at ^ (UINT64_C(1) << 63);
    size_t b = strlen(task_id);
    int i;

    for (i = 15; i >= 0; i--, u >>= 4)
        buf[i] = hex[u & 15];
    memcpy(buf + 16, task_id, b);
    return 16 + b;
}

int once__rd_list_member_parse(const char *m, size_t n, int64_t *created_at,
                               char task_id[ONCE_ID_MAX + 1])
{
    uint64_t u = 0;
    size_t i;

    if (n <= 16 || n - 16 > ONCE_ID_MAX || memchr(m + 16, '\0', n - 16))
        return -1;
    for (i = 0; i < 16; i++) {
        char ch = m[i];
        if (ch >= '0' && ch <= '9')
            u = u << 4 | (uint64_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            u = u << 4 | (uint64_t)(ch - 'a' + 10);
        else
            return -1;
    }
    *created_at = (int64_t)(u ^ (UINT64_C(1) << 63));
    memcpy(task_id, m + 16, n - 16);
    task_id[n - 16] = '\0';
    return 0;
}

/* The head's fields, in their order in "h" (the scripts index them:
 * redis_scripts.c, LUA_HEAD). */
static const char *const head_names[RD_HEAD_N] = {"s", "v", "g", "f", "o", "fa", "c", "lm", "fd"};

/* Append s[0..n) and a NUL at *at. */
static void put(char **at, const char *s, size_t n)
{
    memcpy(*at, s, n);
    (*at)[n] = '\0';
    *at += n + 1;
}

/* The decimal text of rec's integer field with Redis name hf, in buf. */
static const char *int_text(const once_record *rec, const char *hf, char buf[24])
{
    for (int i = 0; i < ONCE__RECORD_NINT; i++)
        if (strcmp(once__record_ints[i].hf, hf) == 0) {
            snprintf(buf, 24, "%lld", (long long)once__field_get(rec, &once__record_ints[i]));
            return buf;
        }
    return NULL; /* not reached: every name asked for is in the table */
}

int once__rd_record_pack(rd_packed *pk, const once_record *rec, const char *first_digest,
                         const char *lmember, size_t lmlen)
{
    char num[RD_HEAD_N][24], rnum[4][24];
    const char *head[RD_HEAD_N] = {int_text(rec, "s", num[0]),
                                   int_text(rec, "v", num[1]),
                                   int_text(rec, "g", num[2]),
                                   int_text(rec, "f", num[3]),
                                   rec->lease_owner,
                                   int_text(rec, "fa", num[5]),
                                   rec->context_id,
                                   NULL, /* lmember */
                                   first_digest};
    const char *rest[][2] = {{"p", rec->principal},
                             {"i", rec->task_id},
                             {"k", int_text(rec, "k", rnum[0])},
                             {"n", int_text(rec, "n", rnum[1])},
                             {"ca", int_text(rec, "ca", rnum[2])},
                             {"ua", int_text(rec, "ua", rnum[3])},
                             {"d", rec->digests},
                             {"j", rec->task_json},
                             {"x", rec->checkpoint},
                             {"pj", rec->push_json},
                             {"jn", rec->journal}};
    size_t hn = 0, rn = 0, i, nrest = sizeof rest / sizeof rest[0];
    char *at;

    memset(pk, 0, sizeof *pk);
    for (i = 0; i < RD_HEAD_N; i++)
        hn += (head[i] ? strlen(head[i]) : lmlen) + 1;
    for (i = 0; i < nrest; i++)
        rn += rest[i][1] ? strlen(rest[i][0]) + strlen(rest[i][1]) + 2 : 0;
    if (!(pk->h = once_malloc(hn + rn)))
        return ONCE_ENOMEM;
    at = pk->h;
    for (i = 0; i < RD_HEAD_N; i++)
        put(&at, head[i] ? head[i] : lmember, head[i] ? strlen(head[i]) : lmlen);
    pk->hlen = hn;
    pk->r = at;
    for (i = 0; i < nrest; i++) {
        if (rest[i][1]) { /* absent: NULL */
            put(&at, rest[i][0], strlen(rest[i][0]));
            put(&at, rest[i][1], strlen(rest[i][1]));
        }
    }
    pk->rlen = rn;
    pk->u = rec->lease_until;
    return ONCE_OK;
}

void once__rd_packed_free(rd_packed *pk)
{
    once_free(pk->h);
    memset(pk, 0, sizeof *pk);
}

void once__rd_packed_args(rd_cmd *c, const rd_packed *pk)
{
    once__rd_arg(c, pk->r, pk->rlen);
    once__rd_arg(c, pk->h, pk->hlen);
    once__rd_i64(c, pk->u);
}

/* ------------------------------------------------------------------------ */

/* once__rd_num and once__rd_fixed of the bytes v[0..n). */
static int span_num(const char *v, size_t n, int64_t *out)
{
    char buf[24];
    char *end;
    long long x;

    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    errno = 0;
    x = strtoll(buf, &end, 10);
    if (errno || *end)
        return -1;
    *out = x;
    return 0;
}

static int span_fixed(const char *v, size_t n, char *dst, size_t cap)
{
    if (n >= cap || memchr(v, '\0', n))
        return -1;
    memcpy(dst, v, n);
    dst[n] = '\0';
    return 0;
}

int once__rd_num(const redisReply *v, int64_t *out)
{
    return v->type == REDIS_REPLY_STRING ? span_num(v->str, v->len, out) : -1;
}

int once__rd_fixed(const redisReply *v, char *dst, size_t cap)
{
    return v->type == REDIS_REPLY_STRING ? span_fixed(v->str, v->len, dst, cap) : -1;
}

static int dup_str(const char *v, size_t n, char **dst)
{
    if (memchr(v, '\0', n))
        return -1;
    once_free(*dst);
    *dst = once_strndup(v, n);
    return *dst ? 0 : -2;
}

/* What a hash read back may hold: a record's fields, or a tombstone's. */
typedef struct parsed {
    once_record rec;
    once_tombstone t;
} parsed;

typedef enum hf_type { HF_FIXED, HF_STR, HF_I64, HF_ENUM, HF_FLAG, HF_SKIP } hf_type;

/* Bits of `have`: which fields a hash held. */
enum hbit {
    HB_P,
    HB_I,
    HB_C,
    HB_S,
    HB_K,
    HB_V,
    HB_G,
    HB_F,
    HB_N,
    HB_O,
    HB_U,
    HB_CA,
    HB_UA,
    HB_FA,
    HB_D,
    HB_J,
    HB_FD,
    HB_EA,
    HB_T
};
#define BIT(b) (1u << (b))
#define HF_RECORD (BIT(HB_J + 1) - 1) /* p .. j: what a record needs */
#define HF_TOMB (BIT(HB_P) | BIT(HB_I) | BIT(HB_FA) | BIT(HB_FD) | BIT(HB_EA) | BIT(HB_T))

/* One hash field: where it goes, and its bit in `have` (0 = optional). */
typedef struct hfield {
    char name[3];
    hf_type type;
    unsigned bit;
    size_t off, cap;
} hfield;

#define AT(member) offsetof(parsed, member)
#define FIXED(member) AT(member), sizeof(((parsed *)0)->member)
static const hfield hfields[] = {
    {"p", HF_FIXED, BIT(HB_P), FIXED(rec.principal)},
    {"i", HF_FIXED, BIT(HB_I), FIXED(rec.task_id)},
    {"c", HF_FIXED, BIT(HB_C), FIXED(rec.context_id)},
    {"s", HF_ENUM, BIT(HB_S), AT(rec.state), 0},
    {"k", HF_ENUM, BIT(HB_K), AT(rec.kind), 0},
    {"v", HF_I64, BIT(HB_V), AT(rec.version), 0},
    {"g", HF_I64, BIT(HB_G), AT(rec.generation), 0},
    {"f", HF_I64, BIT(HB_F), AT(rec.fence), 0},
    {"n", HF_I64, BIT(HB_N), AT(rec.step), 0},
    {"o", HF_FIXED, BIT(HB_O), FIXED(rec.lease_owner)},
    {"u", HF_I64, BIT(HB_U), AT(rec.lease_until), 0},
    {"ca", HF_I64, BIT(HB_CA), AT(rec.created_at), 0},
    {"ua", HF_I64, BIT(HB_UA), AT(rec.updated_at), 0},
    {"fa", HF_I64, BIT(HB_FA), AT(rec.finished_at), 0},
    {"d", HF_STR, BIT(HB_D), AT(rec.digests), 0},
    {"j", HF_STR, BIT(HB_J), AT(rec.task_json), 0},
    {"fd", HF_FIXED, BIT(HB_FD), FIXED(t.first_digest)},
    {"ea", HF_I64, BIT(HB_EA), AT(t.expired_at), 0},
    {"T", HF_FLAG, BIT(HB_T), 0, 0},
    {"x", HF_STR, 0, AT(rec.checkpoint), 0},
    {"pj", HF_STR, 0, AT(rec.push_json), 0},
    {"jn", HF_STR, 0, AT(rec.journal), 0},
    {"lm", HF_SKIP, 0, 0, 0},
};
#undef FIXED
#undef AT

_Static_assert(sizeof(once_state) == sizeof(int) && sizeof(once_record_kind) == sizeof(int),
               "HF_ENUM stores an int");

/* Store value v[0..n) as field f of *p: 0, -1 malformed, -2 out of memory. */
static int put_field(parsed *p, const hfield *f, const char *v, size_t n)
{
    char *at = (char *)p + f->off;
    int64_t x;

    switch (f->type) {
    case HF_FIXED:
        return span_fixed(v, n, at, f->cap);
    case HF_STR:
        return dup_str(v, n, (char **)(void *)at);
    case HF_I64:
        if (span_num(v, n, &x))
            return -1;
        memcpy(at, &x, sizeof x);
        return 0;
    case HF_ENUM: {
        int e;
        if (span_num(v, n, &x) || x < INT32_MIN || x > INT32_MAX)
            return -1;
        e = (int)x;
        memcpy(at, &e, sizeof e);
        return 0;
    }
    case HF_FLAG:
    case HF_SKIP:
        return 0;
    }
    return -1;
}

/* Field name[0..nl) = v[0..n) into *p, its bit into *have. A name this
 * version does not know is skipped. */
static int put_named(parsed *p, unsigned *have, const char *name, size_t nl, const char *v,
                     size_t n)
{
    for (size_t j = 0; j < sizeof hfields / sizeof hfields[0]; j++) {
        const hfield *f = &hfields[j];
        if (nl == strlen(f->name) && memcmp(name, f->name, nl) == 0) {
            *have |= f->bit;
            return put_field(p, f, v, n);
        }
    }
    return 0;
}

/* The next NUL-ended piece of [*at, end): its start and length, or -1
 * when there is no NUL before end. */
static int piece(const char **at, const char *end, const char **v, size_t *n)
{
    const char *nul = *at < end ? memchr(*at, '\0', (size_t)(end - *at)) : NULL;

    if (!nul)
        return -1;
    *v = *at;
    *n = (size_t)(nul - *at);
    *at = nul + 1;
    return 0;
}

/* Layout 3's "h" (the head, RD_HEAD_N values) or "r" (name, value pairs)
 * into *p. */
static int put_packed(parsed *p, unsigned *have, int is_head, const char *v, size_t n)
{
    const char *at = v, *end = v + n, *name, *val;
    size_t nl, vl;
    int i, bad = 0;

    for (i = 0; !bad && at < end; i++) {
        if (is_head) {
            if (i >= RD_HEAD_N || piece(&at, end, &val, &vl))
                return -1;
            name = head_names[i];
            nl = strlen(name);
        } else if (piece(&at, end, &name, &nl) || piece(&at, end, &val, &vl)) {
            return -1;
        }
        bad = put_named(p, have, name, nl, val, vl);
    }
    return bad ? bad : (is_head && i != RD_HEAD_N ? -1 : 0);
}

int once__rd_parse_hash(const redisReply *r, once_record *out, once_tombstone *tomb)
{
    parsed p;
    unsigned have = 0;
    size_t i;
    int bad = 0;

    if (out)
        memset(out, 0, sizeof *out);
    if (tomb)
        memset(tomb, 0, sizeof *tomb);
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2)
        return ONCE_ECORRUPT;
    memset(&p, 0, sizeof p);
    for (i = 0; i + 1 < r->elements && !bad; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            bad = -1;
        else if (k->len == 1 && (k->str[0] == 'h' || k->str[0] == 'r'))
            bad = put_packed(&p, &have, k->str[0] == 'h', v->str, v->len);
        else
            bad = put_named(&p, &have, k->str, k->len, v->str, v->len);
    }
    if (bad == -2) {
        once_record_clear(&p.rec);
        return ONCE_ENOMEM;
    }
    if (!bad && (have & BIT(HB_T)) && (have & HF_TOMB) == HF_TOMB) {
        memcpy(p.t.principal, p.rec.principal, sizeof p.t.principal);
        memcpy(p.t.task_id, p.rec.task_id, sizeof p.t.task_id);
        p.t.finished_at = p.rec.finished_at;
        once_record_clear(&p.rec);
        if (tomb)
            *tomb = p.t;
        return ONCE_ETOMBSTONE;
    }
    if (bad || (have & BIT(HB_T)) || (have & HF_RECORD) != HF_RECORD) {
        once_record_clear(&p.rec);
        return ONCE_ECORRUPT;
    }
    if (out)
        *out = p.rec;
    else
        once_record_clear(&p.rec);
    return ONCE_OK;
}

/* The head field i (RD_HEAD_*) of a layout-3 "h" value v[0..n): 0 and
 * dst, or -1 when v is not a head or the field does not fit. */
int once__rd_head_field(const char *v, size_t n, int i, char *dst, size_t cap)
{
    const char *at = v, *end = v + n, *val = NULL;
    size_t vl = 0;

    for (int j = 0; j <= i; j++)
        if (piece(&at, end, &val, &vl))
            return -1;
    return span_fixed(val, vl, dst, cap);
}
