/*
 * pbjson_int.h -- what pbjson's three files share (not API): the call's
 * context (error text, the JSON path it names, the nesting reached), the
 * facts protobuf-c's descriptors leave implicit (JSON names, map entries,
 * the well-known types) and the checked decode of bytes into a message.
 *
 * A context lives on the caller's stack for one call; nothing here keeps
 * state between calls.
 */
#ifndef ONCE_GRPC_PBJSON_INT_H
#define ONCE_GRPC_PBJSON_INT_H

#include "grpc/pbjson.h"

typedef struct {
    char *err;
    size_t errlen;
    char path[256]; /* the JSON path being read, "message.parts[1]" */
    size_t plen;
    int depth;      /* message nesting reached (from_pb) */
    int oom;        /* the allocator failed during protobuf-c's work */
    int lenient;    /* to_pb: members the message has no field for are left out */
} once__pbj_ctx;

/* The well-known types with a JSON form of their own. */
typedef enum {
    ONCE_PBJ_PLAIN = 0,
    ONCE_PBJ_STRUCT,
    ONCE_PBJ_VALUE,
    ONCE_PBJ_LIST,
    ONCE_PBJ_TIMESTAMP,
    ONCE_PBJ_DURATION,
    ONCE_PBJ_ANY,
} once__pbj_wkt;

once__pbj_wkt once__pbj_wkt_of(const ProtobufCMessageDescriptor *d);

/* lowerCamelCase JSON name of a proto field name, as protoc derives it,
 * into out (cap bytes; cut to fit). */
void once__pbj_json_name(const char *name, char *out, size_t cap);

/* 1 if f is a map field: repeated NameEntry{key = 1; value = 2}. */
int once__pbj_is_map(const ProtobufCFieldDescriptor *f);

/* Bytes one element of a field of type t takes in a message struct. */
size_t once__pbj_elem_size(ProtobufCType t);

/* Append to the path (printf-style); returns the length to restore with
 * once__pbj_pop. */
size_t once__pbj_push(once__pbj_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void once__pbj_pop(once__pbj_ctx *c, size_t at);

/* Write "path: what" (or just what at the top) to the error; returns code. */
int once__pbj_fail(once__pbj_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An allocator for protobuf-c that records a failure in c->oom. */
void once__pbj_allocator(once__pbj_ctx *c, ProtobufCAllocator *a);

/* buf[0..len) checked against d (wire types, lengths, UTF-8, nesting from
 * c->depth on) and unpacked into *m (free with
 * protobuf_c_message_free_unpacked and once__pbjson_allocator()).
 * ONCE_EPARSE or ONCE_ENOMEM with the error set. */
int once__pbj_decode(once__pbj_ctx *c, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
                     size_t len, ProtobufCMessage **m);

/* Pack m into a new once_malloc'd buffer. */
int once__pbj_pack(once__pbj_ctx *c, const ProtobufCMessage *m, uint8_t **out, size_t *len);

/* Timestamp and Duration text, shared by both directions. */
int once__pbj_time_text(once__pbj_ctx *c, int64_t secs, int32_t nanos, int duration, char *out,
                        size_t cap);

#endif /* ONCE_GRPC_PBJSON_INT_H */
