/*
 * dy_item.c -- how a task lives in DynamoDB items (layout in dynamo.c):
 * keys, attribute values in DynamoDB's JSON ({"S": ...}, {"N": "..."}),
 * record and tombstone items and their decoding, and the item size the
 * service counts, so that an item over 400 KB is refused here with the
 * store's "too large" error before it is sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dynamo/dy_int.h"
#include "store/store_int.h"

/* A number's size as DynamoDB counts it is at most 21 bytes. */
#define DY_NUM_BYTES 21

/* "<len(a)>:<a><b>": the length says where a ends, whatever bytes either
 * holds, so no two pairs share a key. */
static char *pair_key(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 24;
    char *k = once_malloc(n);

    if (k)
        snprintf(k, n, "%zu:%s%s", strlen(a), a, b);
    return k;
}

char *once__dy_task_pk(const char *principal, const char *task_id)
{
    return pair_key(principal, task_id);
}

char *once__dy_ctx_key(const char *principal, const char *context_id)
{
    return pair_key(principal, context_id);
}

void once__dy_list_sk(char out[DY_LC_MAX], int64_t created_at, const char *task_id)
{
    snprintf(out, DY_LC_MAX, "%020lld%s", (long long)created_at, task_id);
}

int once__dy_list_sk_parse(const char *lc, int64_t *created_at, char task_id[ONCE_ID_MAX + 1])
{
    char digits[21];
    size_t n = lc ? strlen(lc) : 0;
    int i;

    if (n <= 20 || n - 20 > ONCE_ID_MAX)
        return ONCE_ECORRUPT;
    for (i = 0; i < 20; i++)
        if (lc[i] < '0' || lc[i] > '9')
            return ONCE_ECORRUPT;
    memcpy(digits, lc, 20);
    digits[20] = '\0';
    *created_at = strtoll(digits, NULL, 10);
    memcpy(task_id, lc + 20, n - 20 + 1);
    return ONCE_OK;
}

void once__dy_event_sk(char out[24], int64_t g)
{
    snprintf(out, 24, "e%020lld", (long long)g);
}

json_t *once__dy_s(const char *v)
{
    json_t *s = json_string(v);
    return s ? json_pack("{s:o}", "S", s) : NULL;
}

json_t *once__dy_n(int64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)v);
    return json_pack("{s:s}", "N", num);
}

int once__dy_item_init(dy_item *it)
{
    it->bytes = 0;
    it->oom = 0;
    it->o = json_object();
    return it->o ? ONCE_OK : ONCE_ENOMEM;
}

void once__dy_item_free(dy_item *it)
{
    json_decref(it->o);
    it->o = NULL;
}

static void put(dy_item *it, const char *name, json_t *v, size_t bytes)
{
    if (it->oom || !v || json_object_set_new(it->o, name, v) != 0) {
        it->oom = 1;
        return;
    }
    it->bytes += strlen(name) + bytes;
}

void once__dy_put_s(dy_item *it, const char *name, const char *v)
{
    if (v)
        put(it, name, once__dy_s(v), strlen(v));
}

void once__dy_put_n(dy_item *it, const char *name, int64_t v)
{
    put(it, name, once__dy_n(v), DY_NUM_BYTES);
}

void once__dy_put_ls(dy_item *it, const char *name, const once_event *v, size_t n)
{
    json_t *l = json_array();
    size_t bytes = 3, i;

    for (i = 0; l && i < n; i++) {
        if (json_array_append_new(l, once__dy_s(v[i].payload)) != 0) {
            json_decref(l);
            l = NULL;
        }
        bytes += strlen(v[i].payload) + 1;
    }
    put(it, name, l ? json_pack("{s:o}", "L", l) : NULL, bytes);
}

int once__dy_key(dy_item *it, const char *principal, const char *task_id, const char *sk)
{
    char *pk = once__dy_task_pk(principal, task_id);

    if (!pk || once__dy_item_init(it) != ONCE_OK) {
        once_free(pk);
        return ONCE_ENOMEM;
    }
    once__dy_put_s(it, "pk", pk);
    once__dy_put_s(it, "sk", sk ? sk : DY_SK_RECORD);
    once_free(pk);
    if (it->oom) {
        once__dy_item_free(it);
        return ONCE_ENOMEM;
    }
    return ONCE_OK;
}

/* The common end of building an item: OOM, invalid text, or too large. */
static int finish(dy_store *s, dy_item *it, const char *what, const char *task_id)
{
    if (it->oom) {
        once__dy_item_free(it);
        /* jansson refuses a string that is not UTF-8, as DynamoDB would. */
        once__store_seterr(&s->base, "dynamodb: %s of %s: out of memory or not UTF-8 text", what,
                           task_id);
        return ONCE_EINVAL;
    }
    if (it->bytes > DY_ITEM_MAX) {
        once__store_seterr(&s->base,
                           "dynamodb: %s of %s would be %zu bytes, over DynamoDB's item limit "
                           "of %d (400 KB)",
                           what, task_id, it->bytes, DY_ITEM_MAX);
        once__dy_item_free(it);
        return ONCE_ERANGE;
    }
    return ONCE_OK;
}

int once__dy_record_item(dy_store *s, const once_record *r, const once_event *ev, size_t nev,
                         const once_push_row *rows, size_t nrows, int64_t pv, dy_item *it)
{
    char lc[DY_LC_MAX];
    char *pk = once__dy_task_pk(r->principal, r->task_id);
    char *lx = once__dy_ctx_key(r->principal, r->context_id);
    int rc = pk && lx ? once__dy_key(it, r->principal, r->task_id, NULL) : ONCE_ENOMEM;
    int i;

    if (rc != ONCE_OK) {
        once_free(pk);
        once_free(lx);
        return rc;
    }
    once__dy_put_rows(it, pk, rows, nrows, pv);
    once_free(pk);
    once__dy_put_s(it, "pr", r->principal);
    once__dy_put_s(it, "id", r->task_id);
    once__dy_put_s(it, "ctx", r->context_id);
    for (i = 0; i < ONCE__RECORD_NINT; i++)
        once__dy_put_n(it, once__record_ints[i].attr, once__field_get(r, &once__record_ints[i]));
    if (r->lease_owner[0])
        once__dy_put_s(it, "lo", r->lease_owner);
    once__dy_put_s(it, "dg", r->digests);
    once__dy_put_s(it, "tj", r->task_json);
    once__dy_put_s(it, "cp", r->checkpoint);
    once__dy_put_s(it, "pj", r->push_json);
    once__dy_put_s(it, "jn", r->journal);
    /* The commit rule: these events are part of this version (dynamo.c). */
    once__dy_put_n(it, "pb", r->generation - (int64_t)nev);
    if (nev > 0)
        once__dy_put_ls(it, "pe", ev, nev);
    /* Sparse index "due": a lease to take over, or a finished task to sweep. */
    if (once_state_terminal(r->state)) {
        once__dy_put_s(it, "dk", "F");
        once__dy_put_n(it, "dt", r->finished_at);
    } else if (r->lease_until != 0) {
        once__dy_put_s(it, "dk", "L");
        once__dy_put_n(it, "dt", r->lease_until);
    }
    /* Indexes "by_principal" and "by_context": ListTasks order
     * (created_at, task_id) under the principal, and under the principal's
     * context. A tombstone has neither, so neither lists it. */
    once__dy_list_sk(lc, r->created_at, r->task_id);
    once__dy_put_s(it, "lp", r->principal);
    once__dy_put_s(it, "lx", lx);
    once__dy_put_s(it, "lc", lc);
    once_free(lx);
    return finish(s, it, "the record", r->task_id);
}

/* The first accepted message's digest: the first line's hex. */
static void first_digest(const char *digests, char out[ONCE_DIGEST_HEX + 1])
{
    size_t n = 0;

    while (digests && n < ONCE_DIGEST_HEX && digests[n] && digests[n] != ' ' && digests[n] != '\n')
        n++;
    memcpy(out, digests ? digests : "", n);
    out[n] = '\0';
}

int once__dy_tomb_item(dy_store *s, const once_record *r, int64_t now, dy_item *it)
{
    char fd[ONCE_DIGEST_HEX + 1];
    int rc = once__dy_key(it, r->principal, r->task_id, NULL);

    if (rc != ONCE_OK)
        return rc;
    first_digest(r->digests, fd);
    once__dy_put_s(it, "pr", r->principal);
    once__dy_put_s(it, "id", r->task_id);
    once__dy_put_n(it, "tb", 1);
    once__dy_put_s(it, "fd", fd);
    once__dy_put_n(it, "fa", r->finished_at);
    once__dy_put_n(it, "xa", now);
    once__dy_put_s(it, "dk", "T");
    once__dy_put_n(it, "dt", now);
    /* DynamoDB's TTL deletes it some time after this (seconds since the
     * epoch); until then it answers TASK_EXPIRED like any tombstone. */
    if (s->tomb_ttl_ms > 0)
        once__dy_put_n(it, "ttl", (now + s->tomb_ttl_ms) / 1000);
    return finish(s, it, "the tombstone", r->task_id);
}

const char *once__dy_get_s(json_t *item, const char *name)
{
    return json_string_value(json_object_get(json_object_get(item, name), "S"));
}

int64_t once__dy_get_n(json_t *item, const char *name)
{
    const char *v = json_string_value(json_object_get(json_object_get(item, name), "N"));
    return v ? strtoll(v, NULL, 10) : 0;
}

/* Copy a string attribute into a fixed array; -1 if it does not fit. */
static int copy_s(json_t *item, const char *name, char *dst, size_t cap)
{
    const char *v = once__dy_get_s(item, name);
    size_t n = v ? strlen(v) : 0;

    if (n >= cap)
        return -1;
    memcpy(dst, v ? v : "", n);
    dst[n] = '\0';
    return 0;
}

static int dup_s(json_t *item, const char *name, char **dst, int required)
{
    const char *v = once__dy_get_s(item, name);

    *dst = NULL;
    if (!v && !required)
        return ONCE_OK;
    *dst = once_strdup(v ? v : "");
    return *dst ? ONCE_OK : ONCE_ENOMEM;
}

int once__dy_decode(json_t *item, dy_stored *st)
{
    once_record *r = &st->rec;
    int rc, i;

    memset(st, 0, sizeof *st);
    if (once__dy_get_n(item, "tb")) {
        once_tombstone *t = &st->tomb;
        st->is_tomb = 1;
        if (copy_s(item, "pr", t->principal, sizeof t->principal) ||
            copy_s(item, "id", t->task_id, sizeof t->task_id) ||
            copy_s(item, "fd", t->first_digest, sizeof t->first_digest))
            return ONCE_ECORRUPT;
        t->finished_at = once__dy_get_n(item, "fa");
        t->expired_at = once__dy_get_n(item, "xa");
        return ONCE_OK;
    }
    if (copy_s(item, "pr", r->principal, sizeof r->principal) ||
        copy_s(item, "id", r->task_id, sizeof r->task_id) ||
        copy_s(item, "ctx", r->context_id, sizeof r->context_id) ||
        copy_s(item, "lo", r->lease_owner, sizeof r->lease_owner) || !once__dy_get_s(item, "tj"))
        return ONCE_ECORRUPT;
    for (i = 0; i < ONCE__RECORD_NINT; i++)
        once__field_set(r, &once__record_ints[i], once__dy_get_n(item, once__record_ints[i].attr));
    rc = dup_s(item, "dg", &r->digests, 1);
    if (rc == ONCE_OK)
        rc = dup_s(item, "tj", &r->task_json, 1);
    if (rc == ONCE_OK)
        rc = dup_s(item, "cp", &r->checkpoint, 0);
    if (rc == ONCE_OK)
        rc = dup_s(item, "pj", &r->push_json, 0);
    if (rc == ONCE_OK)
        rc = dup_s(item, "jn", &r->journal, 0);
    if (rc != ONCE_OK) {
        once_record_clear(r);
        return rc;
    }
    st->pend_base = once__dy_get_n(item, "pb");
    st->pend = json_object_get(json_object_get(item, "pe"), "L");
    if (st->pend_base < 0 || st->pend_base > r->generation ||
        (size_t)(r->generation - st->pend_base) != json_array_size(st->pend)) {
        once_record_clear(r);
        return ONCE_ECORRUPT;
    }
    return ONCE_OK;
}
