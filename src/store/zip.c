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

/* 4 KiB windows and a 512-entry hash: a task's texts (a few hundred bytes
 * each) rarely repeat from further back, and deflateReset clears the whole
 * hash for every text (at memory level 8 that is 64 KiB, more than the
 * compression itself costs; the bytes held per task are the same). Negative:
 * raw deflate (no header, no checksum; the store knows each text's length). */
#define ZIP_WBITS (-12)
#define ZIP_LEVEL 9
#define ZIP_MEMLEVEL 2

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

/* What differs between the two directions: zlib's calls for each. */
typedef struct zip_dir {
    int (*init)(z_stream *zs);
    int (*reset)(z_stream *zs);
    int (*set_dict)(z_stream *zs, const Bytef *dict, uInt len);
} zip_dir;

static int deflate_init(z_stream *zs)
{
    return deflateInit2(zs, ZIP_LEVEL, Z_DEFLATED, ZIP_WBITS, ZIP_MEMLEVEL, Z_DEFAULT_STRATEGY);
}

static int inflate_init(z_stream *zs)
{
    return inflateInit2(zs, ZIP_WBITS);
}

static const zip_dir deflating = {deflate_init, deflateReset, deflateSetDictionary};
static const zip_dir inflating = {inflate_init, inflateReset, inflateSetDictionary};

/* The stream in *slot (z->d or z->i) made on first use, then reset for a
 * new text, with the dictionary set (raw inflate takes it before the first
 * byte too); NULL when out of memory (*slot stays NULL, so the next call
 * tries again). */
static z_stream *zip_ready(void **slot, const zip_dir *dir)
{
    z_stream *zs = *slot;

    if (!zs) {
        if (!(zs = zip_stream()))
            return NULL;
        if (dir->init(zs) != Z_OK) {
            once_free(zs);
            return NULL;
        }
        *slot = zs;
    } else if (dir->reset(zs) != Z_OK) {
        return NULL;
    }
    if (dir->set_dict(zs, (const Bytef *)dict, sizeof dict - 1) != Z_OK)
        return NULL;
    return zs;
}

int once__zip_begin(once__zip *z, unsigned char *out, size_t cap)
{
    z_stream *zs = zip_ready(&z->d, &deflating);

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
    z_stream *zs = zip_ready(&z->i, &inflating);
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
