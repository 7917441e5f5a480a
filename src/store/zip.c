/*
 * zip.c -- raw deflate with a preset dictionary for the stores' finished
 * tasks (see zip.h).
 *
 * A task's texts are short (an echo task's record and four events:
 * bench/README.md, "Cold tasks, deflated by the sweep", has their sizes),
 * too short for deflate to learn their vocabulary from the text alone: the
 * dictionary gives it the words up front, so even the first
 * "statusUpdate" or "TASK_STATE_COMPLETED" costs a back-reference. Deflate
 * codes nearer matches in fewer bits, so the most common words come last.
 * The dictionary is part of the stored format: texts deflated with one
 * dictionary inflate only with the same one, and SQLite keeps what it
 * deflates in its file (ONCE_ZIP_FORMAT marks it). Never change it: a new
 * dictionary is a new format number, with this one kept for reading.
 */
#include <string.h>
#include <zlib.h>

#include "once/once.h"
#include "store/zip.h"

/* 4 KiB windows and a 1024-entry hash: a task's texts (a few hundred bytes
 * each) rarely repeat from further back, and each text starts from a copy
 * of the whole deflater (zip_copy), window and hash included. Level 3: the
 * matcher without lazy evaluation and with short chains. Measured on the
 * map's echo task (tests/unit/test_store_mem_map.c under callgrind, bench/
 * README.md "The memory store's background cost"): level 9 cost 3.4 times
 * the matching for 17 bytes less per cold task (594 against 611); levels 1
 * and 2 gain ~1% of the instructions and lose 2 to 32 bytes; memory level 3
 * over 2 ends fewer blocks early (each block builds its Huffman trees).
 * Neither changes the stored format: any raw deflate inflates alike.
 * Negative: raw deflate (no header, no checksum; the store knows each
 * text's length). */
#define ZIP_WBITS (-12)
#define ZIP_LEVEL 3
#define ZIP_MEMLEVEL 3

/* The member names, states and roles of A2A 1.0 (docs/wire.md) and the
 * store's journal, in the shapes they take in stored JSON: first the rarer
 * ones, then a finished task's texts in the order the store deflates them
 * (task, journal, then its events: the task as submitted, working, an
 * artifact, the final status), with every ID and time left out. */
static const char dict[] =
    "\"data\":{\"file\":{\"uri\":\"\",\"bytes\":\"\",\"mediaType\":\"\",\"filename\":\""
    "\"description\":\"\",\"extensions\":[\"referenceTaskIds\":[\"raw\":\"\",\"url\":\""
    "\"pushNotificationConfig\":{\"authentication\":{\"schemes\":[\"credentials\":\""
    "\"token\":\"\",\"message\":{\"kind\":\"takeover\",\"ROLE_AGENT\",\"TASK_STATE_REJECTED\""
    "\"TASK_STATE_AUTH_REQUIRED\"\"TASK_STATE_CANCELED\"\"TASK_STATE_FAILED\""
    "\"TASK_STATE_INPUT_REQUIRED\""
    "{\"id\":\"\",\"contextId\":\"\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\","
    "\"timestamp\":\"20\"},\"history\":[{\"messageId\":\"\",\"taskId\":\"\","
    "\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"\"}],\"contextId\":\"\"}],"
    "\"artifacts\":[{\"artifactId\":\"\",\"name\":\"\",\"parts\":[{\"text\":\"\"}]}]}"
    "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":17,\"replica\":\"\",\"fence\":1,"
    "\"step\":0,\"resumed\":false,\"end\":17,\"result\":\"TASK_STATE_COMPLETED\"}]}"
    "{\"task\":{\"id\":\"\",\"contextId\":\"\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\","
    "\"timestamp\":\"20\"},\"history\":[{\"messageId\":\"\",\"taskId\":\"\","
    "\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"\"}],\"contextId\":\"\"}],"
    "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":1}}}}"
    "{\"statusUpdate\":{\"taskId\":\"\",\"contextId\":\"\",\"status\":{\"state\":"
    "\"TASK_STATE_WORKING\",\"timestamp\":\"20\"},\"metadata\":"
    "{\"urn:once:a2a:idempotency:v1\":{\"generation\":2}}}}"
    "{\"artifactUpdate\":{\"taskId\":\"\",\"contextId\":\"\",\"artifact\":{\"artifactId\":\"\","
    "\"name\":\"\",\"parts\":[{\"text\":\"\"}]},\"append\":false,\"lastChunk\":true,"
    "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":3}}}}"
    "{\"statusUpdate\":{\"taskId\":\"\",\"contextId\":\"\",\"status\":{\"state\":"
    "\"TASK_STATE_COMPLETED\",\"timestamp\":\"20\"},\"metadata\":"
    "{\"urn:once:a2a:idempotency:v1\":{\"generation\":4}}}}";

/* zlib's allocations. A stream made by init gets them zeroed (zlib reads
 * some before it writes them, harmlessly, but valgrind would say so); the
 * copies of the primed deflater (zip_copy) do not: deflateCopy overwrites
 * every byte of what it allocates, and zeroing them cost as much as
 * deflating a task's texts. opaque says which: COPYING, or NULL. */
static char copying;
#define COPYING ((voidpf)&copying)

static voidpf zip_alloc(voidpf opaque, uInt items, uInt size)
{
    if (opaque == COPYING)
        return (size_t)items * size / size == items ? once_malloc((size_t)items * size) : NULL;
    return once_calloc(items, size);
}

static void zip_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    once_free(p);
}

/* A fresh z_stream with our allocator, or NULL. */
static z_stream *zip_stream(void)
{
    z_stream *zs = once_calloc(1, sizeof *zs);
    if (zs) {
        zs->zalloc = zip_alloc;
        zs->zfree = zip_free;
    }
    return zs;
}

/* z->i made on first use, then reset for a new text, with the dictionary
 * set (raw inflate takes it before the first byte); NULL when out of
 * memory (z->i stays NULL, so the next call tries again). Setting an
 * inflater's dictionary is a copy into its window: cheap, unlike a
 * deflater's (zip_copy). */
static z_stream *zip_inflater(once__zip *z)
{
    z_stream *zs = z->i;

    if (!zs) {
        if (!(zs = zip_stream()))
            return NULL;
        if (inflateInit2(zs, ZIP_WBITS) != Z_OK) {
            once_free(zs);
            return NULL;
        }
        z->i = zs;
    } else if (inflateReset(zs) != Z_OK) {
        return NULL;
    }
    if (inflateSetDictionary(zs, (const Bytef *)dict, sizeof dict - 1) != Z_OK)
        return NULL;
    return zs;
}

/* z->d made anew as a copy of z->p, a deflater made on first use with the
 * dictionary set and nothing deflated. Setting a deflater's dictionary
 * hashes every byte of it (26k instructions a text, measured, more than a
 * third of deflating an echo task's texts at level 3); the copy is five
 * allocations and a few memcpy, and is byte for byte the stream
 * deflateReset and deflateSetDictionary would make, so the output is the
 * same. NULL when out of memory (z stays usable). */
static z_stream *zip_copy(once__zip *z)
{
    z_stream *p = z->p, *zs = z->d;

    if (!p) {
        if (!(p = zip_stream()))
            return NULL;
        if (deflateInit2(p, ZIP_LEVEL, Z_DEFLATED, ZIP_WBITS, ZIP_MEMLEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK) {   /* it freed what it made */
            once_free(p);
            return NULL;
        }
        if (deflateSetDictionary(p, (const Bytef *)dict, sizeof dict - 1) != Z_OK) {
            (void)deflateEnd(p);
            once_free(p);
            return NULL;
        }
        p->opaque = COPYING;   /* for the copies' allocations: see zip_alloc */
        z->p = p;
    }
    if (!zs) {
        if (!(zs = zip_stream()))
            return NULL;
        z->d = zs;
    } else if (zs->state != Z_NULL) {
        (void)deflateEnd(zs);
    }
    if (deflateCopy(zs, p) != Z_OK) {
        /* deflateCopy copies p's z_stream first: when its first allocation
         * fails, zs->state still points at p's state (later failures free
         * their own and leave NULL). Either way zs owns nothing now. */
        zs->state = Z_NULL;
        return NULL;
    }
    return zs;
}

int once__zip_begin(once__zip *z, unsigned char *out, size_t cap)
{
    z_stream *zs = zip_copy(z);

    if (!zs)
        return ONCE_ENOMEM;
    if (cap > UINT32_MAX)
        return ONCE_ERANGE;
    zs->next_out = out;
    zs->avail_out = (uInt)cap;
    z->cap = cap;
    return ONCE_OK;
}

int once__zip_add(once__zip *z, const char *p, size_t n)
{
    z_stream *zs = z->d;

    if (n > UINT32_MAX)
        return ONCE_ERANGE;
    zs->next_in = (Bytef *)(uintptr_t)p;   /* zlib's API is not const */
    zs->avail_in = (uInt)n;
    /* Z_BUF_ERROR when n == 0 (no progress possible), which is no error;
     * input left over means the output is full. deflate() allocates
     * nothing (init made it all), so there is no Z_MEM_ERROR here. */
    (void)deflate(zs, Z_NO_FLUSH);
    return zs->avail_in == 0 && zs->avail_out > 0 ? ONCE_OK : ONCE_ERANGE;
}

int once__zip_end(once__zip *z, size_t *outlen)
{
    z_stream *zs = z->d;

    zs->next_in = NULL;
    zs->avail_in = 0;
    if (deflate(zs, Z_FINISH) != Z_STREAM_END) {
        *outlen = 0;
        return ONCE_ERANGE;   /* out was full before the end */
    }
    *outlen = z->cap - zs->avail_out;
    return ONCE_OK;
}

int once__zip_inflate(once__zip *z, const unsigned char *in, size_t n, char *out, size_t rawlen)
{
    z_stream *zs = zip_inflater(z);
    int zr;

    if (!zs)
        return ONCE_ENOMEM;
    if (n > UINT32_MAX || rawlen > UINT32_MAX)
        return ONCE_ERROR;
    zs->next_in = (Bytef *)(uintptr_t)in;
    zs->avail_in = (uInt)n;
    zs->next_out = (Bytef *)out;
    zs->avail_out = (uInt)rawlen;
    zr = inflate(zs, Z_FINISH);
    if (zr == Z_STREAM_END && zs->avail_out == 0)
        return ONCE_OK;
    /* The window is made at the first inflate(): its failure is the only
     * Z_MEM_ERROR, and the next call makes it again. */
    return zr == Z_MEM_ERROR ? ONCE_ENOMEM : ONCE_ERROR;
}

void once__zip_free(once__zip *z)
{
    if (z->p) {
        (void)deflateEnd(z->p);
        once_free(z->p);
    }
    if (z->d) {
        if (((z_stream *)z->d)->state != Z_NULL)
            (void)deflateEnd(z->d);
        once_free(z->d);
    }
    if (z->i) {
        (void)inflateEnd(z->i);
        once_free(z->i);
    }
    z->d = z->i = z->p = NULL;
}
