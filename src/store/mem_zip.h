/*
 * mem_zip.h -- the memory store's codec for tasks that finished a while ago
 * (not API): raw deflate with a preset dictionary of the words A2A task and
 * event texts repeat, so that a task of ~2 KiB of JSON keeps a few hundred
 * bytes.
 *
 * A mem_zip holds one deflater and one inflater, made on first use and kept
 * (a deflater's state is ~100 KiB: one per store, not one per call). It is
 * not thread-safe: the memory store uses it under its lock. Every
 * allocation, zlib's own included, goes through once_malloc, so fault
 * sweeps reach it; a failed call leaves the mem_zip usable.
 */
#ifndef ONCE_STORE_MEM_ZIP_H
#define ONCE_STORE_MEM_ZIP_H

#include <stddef.h>

typedef struct mem_zip {
    void *d, *i;              /* z_stream *, made on first use */
} mem_zip;

/* a[0..na) then b[0..nb), deflated as one text into out[0..cap): *outlen
 * bytes. ONCE_OK, ONCE_ENOMEM, or ONCE_ERANGE when it does not fit in cap
 * (the caller passes what the text costs as it is: a text that deflates to
 * more is better kept as it is). */
int once__mem_zip_deflate(mem_zip *z, const char *a, size_t na, const char *b, size_t nb,
                          unsigned char *out, size_t cap, size_t *outlen);

/* in[0..n), made by once__mem_zip_deflate, inflated into out, which holds
 * exactly rawlen bytes. ONCE_OK, ONCE_ENOMEM, or ONCE_ERROR when the input
 * does not inflate to rawlen bytes (a bug: the store made it). */
int once__mem_zip_inflate(mem_zip *z, const unsigned char *in, size_t n, char *out, size_t rawlen);

/* Frees what z made; z may be all zeros. */
void once__mem_zip_free(mem_zip *z);

#endif /* ONCE_STORE_MEM_ZIP_H */
