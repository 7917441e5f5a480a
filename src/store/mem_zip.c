/*
 * mem_zip.c -- raw deflate with a preset dictionary for the memory store's
 * cold tasks (see mem_zip.h).
 *
 * A task's texts are short (an echo task: ~2 KiB over its record and four
 * events), too short for deflate to learn their vocabulary from the text
 * alone: the dictionary gives it the words up front, so even the first
 * "statusUpdate" or "TASK_STATE_COMPLETED" costs a back-reference. Deflate
 * codes nearer matches in fewer bits, so the most common words come last.
 * The dictionary is part of the stored format: texts deflated with one
 * dictionary inflate only with the same one, which holds because nothing
 * outlives the process.
 */
#include <string.h>
#include <zlib.h>

#include "once/once.h"
#include "store/mem_zip.h"

/* 8 KiB windows: a task's texts rarely repeat from further back, and the
 * deflater's state shrinks with its window. Negative: raw deflate (no
 * header, no checksum; the store knows each text's length). */
#define ZIP_WBITS (-13)
#define ZIP_LEVEL 9
#define ZIP_MEMLEVEL 8

/* The member names, states and roles of A2A 1.0 (docs/wire.md) and the
 * store's journal, in the shapes they take in stored JSON. */
static const char dict[] =
    "\"data\":{\"file\":{\"uri\":\"\",\"bytes\":\"\",\"mediaType\":\"\",\"filename\":\""
    "\"description\":\"\",\"extensions\":[\"reference_task_ids\":[\"raw\":\"\",\"url\":\""
    "\"pushNotificationConfig\":{\"authentication\":{\"schemes\":[\"credentials\":\""
    "\"token\":\"\",\"message\":{\"kind\":\"takeover\",\"ROLE_AGENT\",\"TASK_STATE_REJECTED\""
    "\"TASK_STATE_AUTH_REQUIRED\"\"TASK_STATE_CANCELED\"\"TASK_STATE_FAILED\""
    "\"TASK_STATE_INPUT_REQUIRED\"\"TASK_STATE_WORKING\"\"TASK_STATE_SUBMITTED\""
    "{\"v\":1,\"entries\":[{\"kind\":\"turn\",\"at\":17,\"replica\":\"\",\"fence\":1,"
    "\"step\":0,\"resumed\":false,\"end\":17,\"result\":\"TASK_STATE_COMPLETED\"}]}"
    "{\"task\":{\"id\":\"\",\"contextId\":\"\",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\","
    "\"timestamp\":\"20\"},\"history\":[{\"messageId\":\"\",\"taskId\":\"\",\"role\":\"ROLE_USER\","
    "\"parts\":[{\"text\":\"\"}],\"contextId\":\"\"}],\"artifacts\":[{\"artifactId\":\"\","
    "\"name\":\"\",\"parts\":[{\"text\":\"\"}]}],\"metadata\":{\"urn:once:a2a:idempotency:v1\":"
    "{\"generation\":1}}}}"
    "{\"artifactUpdate\":{\"taskId\":\"\",\"contextId\":\"\",\"artifact\":{\"artifactId\":\"\","
    "\"name\":\"\",\"parts\":[{\"text\":\"\"}]},\"append\":false,\"lastChunk\":true,"
    "\"metadata\":{\"urn:once:a2a:idempotency:v1\":{\"generation\":3}}}}"
    "{\"statusUpdate\":{\"taskId\":\"\",\"contextId\":\"\",\"status\":{\"state\":"
    "\"TASK_STATE_WORKING\",\"timestamp\":\"20\"},\"metadata\":{\"urn:once:a2a:idempotency:v1\":"
    "{\"generation\":2}}}}";

static voidpf zip_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
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

/* z->d made on first use, then reset for a new text; NULL when out of
 * memory (z->d stays NULL, so the next call tries again). */
static z_stream *deflater(mem_zip *z)
{
    z_stream *zs = z->d;

    if (!zs) {
        if (!(zs = zip_stream()))
            return NULL;
        if (deflateInit2(zs, ZIP_LEVEL, Z_DEFLATED, ZIP_WBITS, ZIP_MEMLEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            once_free(zs);
            return NULL;
        }
        z->d = zs;
    } else if (deflateReset(zs) != Z_OK) {
        return NULL;
    }
    if (deflateSetDictionary(zs, (const Bytef *)dict, sizeof dict - 1) != Z_OK)
        return NULL;
    return zs;
}

static z_stream *inflater(mem_zip *z)
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
    /* Raw inflate takes its dictionary before the first byte. */
    if (inflateSetDictionary(zs, (const Bytef *)dict, sizeof dict - 1) != Z_OK)
        return NULL;
    return zs;
}

int once__mem_zip_deflate(mem_zip *z, const char *a, size_t na, const char *b, size_t nb,
                          unsigned char *out, size_t cap, size_t *outlen)
{
    z_stream *zs = deflater(z);
    int zr;

    *outlen = 0;
    if (!zs)
        return ONCE_ENOMEM;
    if (na > UINT32_MAX || nb > UINT32_MAX || cap > UINT32_MAX)
        return ONCE_ERANGE;
    zs->next_out = out;
    zs->avail_out = (uInt)cap;
    zs->next_in = (Bytef *)(uintptr_t)a;   /* zlib's API is not const */
    zs->avail_in = (uInt)na;
    zr = deflate(zs, Z_NO_FLUSH);   /* Z_BUF_ERROR too when a was empty */
    if ((zr == Z_OK || zr == Z_BUF_ERROR) && zs->avail_in == 0) {
        zs->next_in = (Bytef *)(uintptr_t)b;
        zs->avail_in = (uInt)nb;
        zr = deflate(zs, Z_FINISH);
    }
    if (zr == Z_STREAM_END) {
        *outlen = cap - zs->avail_out;
        return ONCE_OK;
    }
    /* Z_OK or Z_BUF_ERROR: out was full before the end. deflate() itself
     * allocates nothing (init made it all), so no Z_MEM_ERROR here. */
    return zr == Z_OK || zr == Z_BUF_ERROR ? ONCE_ERANGE : ONCE_ERROR;
}

int once__mem_zip_inflate(mem_zip *z, const unsigned char *in, size_t n, char *out, size_t rawlen)
{
    z_stream *zs = inflater(z);
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

void once__mem_zip_free(mem_zip *z)
{
    if (z->d) {
        (void)deflateEnd(z->d);
        once_free(z->d);
    }
    if (z->i) {
        (void)inflateEnd(z->i);
        once_free(z->i);
    }
    z->d = z->i = NULL;
}
