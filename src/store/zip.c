/*
 * zip.c -- raw deflate with a preset dictionary for the stores' finished
 * tasks (see zip.h): our own encoder, zlib's inflater.
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
 *
 * Why not zlib's deflate: for a text this short its cost is fixed, not
 * per byte. It builds a block's dynamic Huffman trees for every text
 * (~50k instructions, more than the rest of a memory-store task's
 * deflating and half again a request's share: bench/README.md, "The
 * memory store's background cost"), and setting its dictionary hashes all
 * of it again per text. The encoder here writes one block with deflate's
 * fixed codes (RFC 1951 3.2.6: no trees), finds matches greedily through
 * a hash of 4-byte strings in which the dictionary is hashed once, and
 * numbers the text's positions on from the last text's, so nothing is
 * cleared per text. What it writes is raw deflate like zlib's (a few
 * percent larger): zlib's inflater reads it with the same dictionary, and
 * everything deflated before reads as it did.
 */
#include <string.h>
#include <zlib.h>

#include "once/once.h"
#include "store/zip.h"

/* Raw deflate (negative: no header, no checksum; the store knows each
 * text's length) with a 4 KiB window: no match reaches further back, so
 * the inflater's window is 4 KiB too. */
#define ZIP_WBITS (-12)
#define ZIP_WINDOW 4096

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

/* ------------------------------------------------------------------------
 * The encoder.
 */

#define HASH_BITS 12
#define CHAIN 8          /* candidates looked at per position */
#define NICE 64          /* a match this long ends the look */
#define MIN_MATCH 4      /* what the hash sees (deflate allows 3) */
#define MAX_MATCH 258
#define DICT_LEN (sizeof dict - 1)

/* What one once__zip keeps between texts (zip.h: z->e), made on first use.
 * head[h]: the newest text position with hash h, as a stamp (base + its
 * offset in the text); a stamp below base is an earlier text's, so the
 * table is never cleared. prev[j % ZIP_WINDOW]: the stamp before text
 * position j in its chain, or below base: go on in the dictionary's
 * chain, dhead/dprev (positions in dict, -1 ending it), hashed once. prev
 * is a ring: a position further back than the window is never a match,
 * so its slot is reused; a link read from a reused slot still names a
 * position before the one being matched, and every candidate's bytes are
 * compared, so it can only make a match shorter, never wrong. buf: the
 * dictionary, then the text (what a match may reach back into), room for
 * DICT_LEN + cap bytes. */
typedef struct zip_enc {
    uint32_t head[1u << HASH_BITS];
    int32_t dhead[1u << HASH_BITS];
    int32_t dprev[DICT_LEN];
    uint16_t code[288];       /* the fixed literal/length codes, bit-reversed */
    uint8_t bits[288];        /* and their lengths */
    uint8_t dcode[30];        /* the fixed distance codes (5 bits), bit-reversed */
    uint32_t prev[ZIP_WINDOW];
    uint32_t base;
    unsigned char *buf;
    size_t cap, len;          /* room for text bytes; text bytes in buf now */
    unsigned char *out;       /* begin's out[0..ocap) */
    size_t ocap;
} zip_enc;

/* Texts whose buffers are kept past their end are at most this long: a
 * task of --max-task-size is deflated with buffers of its own. */
#define KEEP_CAP (64u * 1024)

static uint32_t hash4(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return (v * 2654435761u) >> (32 - HASH_BITS);
}

/* The bits of the block, least significant first (RFC 1951 3.1.1). over:
 * out was too small; the rest is not written. */
typedef struct bitw {
    uint64_t bits;
    unsigned n;
    unsigned char *o, *end;
    int over;
} bitw;

static void put_bits(bitw *w, uint32_t v, unsigned n)
{
    w->bits |= (uint64_t)v << w->n;
    w->n += n;
    while (w->n >= 8) {
        if (w->o < w->end)
            *w->o++ = (unsigned char)w->bits;
        else
            w->over = 1;
        w->bits >>= 8;
        w->n -= 8;
    }
}

/* A Huffman code, which goes out from its most significant bit, as
 * put_bits takes it. */
static uint32_t reversed(uint32_t code, unsigned n)
{
    uint32_t r = 0;
    for (unsigned i = 0; i < n; i++, code >>= 1)
        r = r << 1 | (code & 1);
    return r;
}

/* The fixed literal/length code (RFC 1951 3.2.6) into e. */
static void fixed_codes(zip_enc *e)
{
    for (unsigned s = 0; s < 288; s++) {
        unsigned n = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
        uint32_t c = s < 144 ? 0x30 + s : s < 256 ? 0x190 + s - 144 : s < 280 ? s - 256 : 0xc0 + s - 280;
        e->code[s] = (uint16_t)reversed(c, n);
        e->bits[s] = (uint8_t)n;
    }
    for (unsigned d = 0; d < 30; d++)
        e->dcode[d] = (uint8_t)reversed(d, 5);
}

static void put_sym(const zip_enc *e, bitw *w, unsigned s)
{
    put_bits(w, e->code[s], e->bits[s]);
}

static zip_enc *enc_make(void)
{
    zip_enc *e = once_calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->base = 1;
    fixed_codes(e);
    for (size_t h = 0; h < (1u << HASH_BITS); h++)
        e->dhead[h] = -1;
    for (size_t i = 0; i + MIN_MATCH <= DICT_LEN; i++) {
        uint32_t h = hash4((const unsigned char *)dict + i);
        e->dprev[i] = e->dhead[h];
        e->dhead[h] = (int32_t)i;
    }
    return e;
}

static void enc_drop_buffers(zip_enc *e)
{
    once_free(e->buf);
    e->buf = NULL;
    e->cap = 0;
}

/* A match (RFC 1951 3.2.5): its length as a symbol 257..285 and extra
 * bits, its distance as a 5-bit code and extra bits. Both codes grow by
 * a step per power of two (two steps for distances, four for lengths), so
 * they follow from the highest bit: no search. */
static void put_match(const zip_enc *e, bitw *w, unsigned len, unsigned dist)
{
    unsigned x = len - 3, k;

    if (x < 8) {
        put_sym(e, w, 257 + x);
    } else if (len == MAX_MATCH) {
        put_sym(e, w, 285);
    } else {
        k = 31 - (unsigned)__builtin_clz(x);   /* x >= 8: k >= 3, k - 2 extra bits */
        put_sym(e, w, 257 + 4 * (k - 1) + ((x >> (k - 2)) & 3));
        put_bits(w, x & ((1u << (k - 2)) - 1), k - 2);
    }
    x = dist - 1;
    if (x < 4) {
        put_bits(w, e->dcode[x], 5);
    } else {
        k = 31 - (unsigned)__builtin_clz(x);   /* x >= 4: k >= 2, k - 1 extra bits */
        put_bits(w, e->dcode[2 * k + ((x >> (k - 1)) & 1)], 5);
        put_bits(w, x & ((1u << (k - 1)) - 1), k - 1);
    }
}

/* The longest match for buf[p..] among the candidates of its chain
 * (c: its first, a position in buf), at most CHAIN of them, none further
 * back than the window. *dist set when the result is MIN_MATCH or more. */
static unsigned longest(const zip_enc *e, size_t p, size_t end, int64_t c, uint32_t h,
                        unsigned *dist)
{
    const unsigned char *b = e->buf;
    size_t max = end - p < MAX_MATCH ? end - p : MAX_MATCH;
    unsigned best = 0;

    for (int k = 0; k < CHAIN && c >= 0 && p - (size_t)c <= ZIP_WINDOW; k++) {
        size_t l = 0;
        if (b[c + best] == b[p + best]) {   /* else it cannot be longer */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* Eight bytes a compare; the first that differs is the lowest
             * set byte of x ^ y on a little-endian machine. */
            while (l + 8 <= max) {
                uint64_t x, y;
                memcpy(&x, b + c + l, 8);
                memcpy(&y, b + p + l, 8);
                if (x != y) {
                    l += (size_t)__builtin_ctzll(x ^ y) / 8;
                    break;
                }
                l += 8;
            }
#endif
            while (l < max && b[c + l] == b[p + l])
                l++;
            if (l > max)
                l = max;
            if (l > best) {
                best = (unsigned)l;
                *dist = (unsigned)(p - (size_t)c);
                if (best >= NICE || best == max)
                    break;   /* long enough, or as long as can be */
            }
        }
        if ((size_t)c >= DICT_LEN) {   /* a text position: its prev, or the dictionary */
            uint32_t s = e->prev[((size_t)c - DICT_LEN) % ZIP_WINDOW];
            c = s >= e->base ? (int64_t)(s - e->base + DICT_LEN) : e->dhead[h];
        } else {
            c = e->dprev[c];
        }
    }
    return best;
}

/* The text in buf deflated as one final fixed-code block into out. Each
 * position is hashed as it is reached, and a match's inner positions are
 * not (they rarely start a better one). ONCE_OK or ONCE_ERANGE. */
static int enc_run(zip_enc *e, size_t *outlen)
{
    size_t p = DICT_LEN, end = DICT_LEN + e->len;
    bitw w = {0, 0, e->out, e->out + e->ocap, 0};

    if (e->base > UINT32_MAX - e->len - 1) {   /* stamps would wrap: start over */
        memset(e->head, 0, sizeof e->head);
        e->base = 1;
    }
    put_bits(&w, 1, 1);   /* BFINAL */
    put_bits(&w, 1, 2);   /* BTYPE 01: fixed codes */
    while (p < end && !w.over) {
        unsigned len = 0, dist = 0;
        if (end - p >= MIN_MATCH) {
            uint32_t h = hash4(e->buf + p), s = e->head[h];
            int64_t c = s >= e->base ? (int64_t)(s - e->base + DICT_LEN) : e->dhead[h];
            e->prev[(p - DICT_LEN) % ZIP_WINDOW] = s;   /* below base: the dictionary's chain */
            e->head[h] = e->base + (uint32_t)(p - DICT_LEN);
            len = longest(e, p, end, c, h, &dist);
        }
        if (len >= MIN_MATCH) {
            put_match(e, &w, len, dist);
            p += len;
        } else {
            put_sym(e, &w, e->buf[p]);
            p++;
        }
    }
    put_sym(e, &w, 256);   /* end of block */
    if (w.n)
        put_bits(&w, 0, 8 - w.n);
    e->base += (uint32_t)e->len + 1;
    *outlen = w.over ? 0 : (size_t)(w.o - e->out);
    return w.over ? ONCE_ERANGE : ONCE_OK;
}

int once__zip_begin(once__zip *z, unsigned char *out, size_t cap)
{
    zip_enc *e = z->e;

    if (cap > UINT32_MAX / 2)
        return ONCE_ERANGE;
    if (!e && !(e = z->e = enc_make()))
        return ONCE_ENOMEM;
    if (!e->buf || cap > e->cap) {
        unsigned char *buf = once_malloc(DICT_LEN + cap);
        if (!buf)
            return ONCE_ENOMEM;
        enc_drop_buffers(e);
        memcpy(buf, dict, DICT_LEN);
        e->buf = buf;
        e->cap = cap;
    }
    e->len = 0;
    e->out = out;
    e->ocap = cap;
    return ONCE_OK;
}

int once__zip_add(once__zip *z, const char *p, size_t n)
{
    zip_enc *e = z->e;

    if (n > e->ocap - e->len)   /* more than begin's cap: it cannot fit */
        return ONCE_ERANGE;
    memcpy(e->buf + DICT_LEN + e->len, p, n);
    e->len += n;
    return ONCE_OK;
}

int once__zip_end(once__zip *z, size_t *outlen)
{
    zip_enc *e = z->e;
    int rc = enc_run(e, outlen);

    if (e->cap > KEEP_CAP)
        enc_drop_buffers(e);
    return rc;
}

/* ------------------------------------------------------------------------
 * The inflater: zlib's.
 */

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

/* z->i made on first use, then reset for a new text, with the dictionary
 * set (raw inflate takes it before the first byte); NULL when out of
 * memory (z->i stays NULL, so the next call tries again). */
static z_stream *zip_inflater(once__zip *z)
{
    z_stream *zs = z->i;

    if (!zs) {
        if (!(zs = once_calloc(1, sizeof *zs)))
            return NULL;
        zs->zalloc = zip_alloc;
        zs->zfree = zip_free;
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
    if (z->e) {
        enc_drop_buffers(z->e);
        once_free(z->e);
    }
    if (z->i) {
        (void)inflateEnd(z->i);
        once_free(z->i);
    }
    z->e = z->i = NULL;
}
