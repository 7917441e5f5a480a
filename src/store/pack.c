/*
 * pack.c -- a compacted task's texts as one deflated value (see pack.h).
 * Shared code, not a backend's: SQLite and PostgreSQL store the same bytes,
 * so a dump moved from one to the other keeps its meaning, and one reader
 * holds the checks of a value read back from disk.
 */
#include <string.h>

#include "core/alloc_int.h"
#include "once/once.h"
#include "store/pack.h"

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int once__pack_texts(once__zip *z, const char *task_json, size_t tl, const char *journal, size_t jl,
                     unsigned char **out, size_t *outlen)
{
    size_t raw = tl + (journal ? jl : 0), n = 0;
    unsigned char *buf;
    int rc;

    *out = NULL;
    *outlen = 0;
    if (raw >= ONCE_PACK_NULL)
        return ONCE_ERANGE;
    /* The deflated text gets no more room than the texts take now: one
     * that would not be smaller is ERANGE from zip.c, and left alone. */
    if (!(buf = once_malloc(ONCE_PACK_HEAD + raw)))
        return ONCE_ENOMEM;
    rc = once__zip_begin(z, buf + ONCE_PACK_HEAD, raw);
    if (rc == ONCE_OK)
        rc = once__zip_add(z, task_json, tl);
    if (rc == ONCE_OK && journal)
        rc = once__zip_add(z, journal, jl);
    if (rc == ONCE_OK)
        rc = once__zip_end(z, &n);
    if (rc != ONCE_OK) {
        once_free(buf);
        return rc;
    }
    buf[0] = ONCE_ZIP_FORMAT;
    put_u32(buf + 1, (uint32_t)tl);
    put_u32(buf + 5, journal ? (uint32_t)jl : ONCE_PACK_NULL);
    *out = buf;
    *outlen = ONCE_PACK_HEAD + n;
    return ONCE_OK;
}

int once__unpack_texts(const unsigned char *p, size_t n, once_record *r)
{
    if (n < ONCE_PACK_HEAD || p[0] != ONCE_ZIP_FORMAT)
        return ONCE_ECORRUPT;
    uint32_t tl = get_u32(p + 1), jl = get_u32(p + 5);
    size_t raw = (size_t)tl + (jl == ONCE_PACK_NULL ? 0 : jl);
    /* One buffer for both (inflate gives them as one text), the journal
     * then copied out: task_json keeps the buffer, cut at its length. */
    char *text = once_malloc(raw + 1);
    char *jn = jl == ONCE_PACK_NULL ? NULL : once_malloc((size_t)jl + 1);
    int rc = text && (jn || jl == ONCE_PACK_NULL) ? ONCE_OK : ONCE_ENOMEM;
    once__zip z;

    memset(&z, 0, sizeof z);
    if (rc == ONCE_OK)
        rc = once__zip_inflate(&z, p + ONCE_PACK_HEAD, n - ONCE_PACK_HEAD, text, raw);
    once__zip_free(&z);
    if (rc != ONCE_OK) {
        once_free(text);
        once_free(jn);
        return rc == ONCE_ERROR ? ONCE_ECORRUPT : rc;
    }
    if (jn) {
        memcpy(jn, text + tl, jl);
        jn[jl] = '\0';
    }
    text[tl] = '\0';
    once_free(r->task_json);
    once_free(r->journal);
    r->task_json = text;
    r->journal = jn;
    return ONCE_OK;
}
