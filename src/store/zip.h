/*
 * zip.h -- the stores' codec for tasks that finished a while ago (not
 * API): raw deflate with a preset dictionary of the words A2A task and
 * event texts repeat, so that a finished task keeps a fraction of its JSON
 * (bench/README.md, "Cold tasks, deflated by the sweep", has the sizes).
 * The memory store deflates its cold tasks with it, SQLite the task and
 * journal of the tasks it compacts (sqlite_write.c), which outlive the
 * process: the dictionary is a stored format (zip.c).
 *
 * A once__zip holds an encoder (zip.c's own: ~60 KiB of tables, the
 * dictionary hashed once among them, and a buffer for the text, kept up to
 * 64 KiB) and zlib's inflater, made on first use and kept (one per store,
 * not one per call; tests/unit/test_store_mem_map.c counts them). It is
 * not thread-safe, but its two halves are apart: the memory store deflates
 * on its sweeper's thread alone (outside its lock) and inflates under its
 * lock. Every allocation, zlib's own included, goes through once_malloc,
 * so fault sweeps reach it; a failed call leaves the once__zip usable.
 */
#ifndef ONCE_STORE_ZIP_H
#define ONCE_STORE_ZIP_H

#include <stddef.h>

/* What the stored bytes of a deflated text are: raw deflate with zip.c's
 * dictionary. SQLite writes it first in what it keeps (sqlite_write.c). */
#define ONCE_ZIP_FORMAT 1

typedef struct once__zip {
    void *e;                  /* the encoder's tables and buffers (zip.c), made on
                                 first use */
    void *i;                  /* z_stream *: the inflater, made on first use */
} once__zip;

/* One text deflated from pieces: begin with the output buffer out[0..cap),
 * add each piece, end: *outlen bytes in out. Each returns ONCE_OK,
 * ONCE_ENOMEM (begin) or ONCE_ERANGE when the text does not fit in cap:
 * its pieces together are more than cap bytes (add), or it deflates to
 * more (end). The caller passes what the text costs as it is: a text that
 * deflates to more is better kept as it is. After an error, the text is
 * abandoned (the next begin starts anew). */
int once__zip_begin(once__zip *z, unsigned char *out, size_t cap);
int once__zip_add(once__zip *z, const char *p, size_t n);
int once__zip_end(once__zip *z, size_t *outlen);

/* in[0..n), made by once__zip_begin .. _end, inflated into out, which
 * holds exactly rawlen bytes. ONCE_OK, ONCE_ENOMEM, or ONCE_ERROR when the input
 * does not inflate to rawlen bytes (a bug: the store made it). */
int once__zip_inflate(once__zip *z, const unsigned char *in, size_t n, char *out, size_t rawlen);

/* Frees what z made; z may be all zeros. */
void once__zip_free(once__zip *z);

#endif /* ONCE_STORE_ZIP_H */
