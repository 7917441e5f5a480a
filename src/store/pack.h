/*
 * pack.h -- a compacted task's task_json and journal as one stored value
 * (not API), the layout SQLite's tasks.packed and PostgreSQL's
 * once_tasks.packed share (store.h, the events slot's "Compaction"):
 *
 *     byte 0       the codec, ONCE_ZIP_FORMAT (zip.h)
 *     bytes 1..4   task_json's length, u32 little-endian
 *     bytes 5..8   the journal's length, or ONCE_PACK_NULL for no journal
 *     bytes 9..    task_json then the journal, deflated as one text
 *
 * Written by a backend's compaction, read back by its row decoding; the
 * lengths say where one text ends and exactly how much inflate must give,
 * so a damaged value is ONCE_ECORRUPT, never a short text.
 */
#ifndef ONCE_STORE_PACK_H
#define ONCE_STORE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "once/store.h"
#include "store/zip.h"

#define ONCE_PACK_HEAD 9          /* format, two lengths */
#define ONCE_PACK_NULL UINT32_MAX /* the journal's length when there is none */

/* task_json[0..tl) and journal[0..jl) (journal NULL: none) packed with z's
 * deflater into *out (once_malloc'd, *outlen bytes). ONCE_ERANGE when that
 * would not be smaller than the texts are (or they are too long for the
 * lengths): the caller keeps them as they are. Else ONCE_OK or
 * ONCE_ENOMEM. */
int once__pack_texts(once__zip *z, const char *task_json, size_t tl, const char *journal, size_t jl,
                     unsigned char **out, size_t *outlen);

/* p[0..n), made by once__pack_texts, back into r's task_json and journal
 * (once_malloc'd, NUL-terminated; journal NULL when there was none), in
 * place of what r held there (the row's empty text and NULL). ONCE_OK, or
 * ONCE_ENOMEM or ONCE_ECORRUPT (p is not such a value) with r unchanged. */
int once__unpack_texts(const unsigned char *p, size_t n, once_record *r);

#endif /* ONCE_STORE_PACK_H */
