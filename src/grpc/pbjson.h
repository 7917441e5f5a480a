/*
 * pbjson.h -- ProtoJSON, the official JSON mapping of protocol buffers, for
 * any message protoc-c generated (not API): the gRPC binding's bytes to and
 * from the JSON form the JSON-RPC and HTTP+JSON bindings already carry, so
 * one set of handlers (and one idempotency digest, computed on the JSON
 * form) serves all three bindings.
 *
 * Generic over protobuf-c's descriptors: no code per message. What
 * protobuf-c does not record is derived as protoc derives it: a field's
 * JSON name is its lowerCamelCase name (none of our files sets json_name),
 * a map is a repeated NameEntry{key = 1, value = 2}. The well-known types
 * google.protobuf.{Struct,Value,ListValue,Timestamp,Duration,Empty,Any}
 * have their special JSON forms; Any resolves its type URL among the types
 * reachable from A2AService, google.rpc's error details and the
 * well-known types.
 *
 * Bounds: input of at most ONCE_PBJSON_MAX_LEN bytes; messages nested at
 * most ONCE_PBJSON_MAX_NESTING deep on the wire (checked before protobuf-c
 * recurses); JSON at most ONCE_JSON_MAX_DEPTH deep either way. Every
 * allocation goes through once_malloc; nothing is kept between calls and
 * every function is safe to call from any thread.
 */
#ifndef ONCE_GRPC_PBJSON_H
#define ONCE_GRPC_PBJSON_H

#include "once/once.h"

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#define ONCE_PBJSON_MAX_LEN (16u << 20)
/* A JSON level of a google.protobuf.Struct is three on the wire (Value,
 * Struct, map entry): room for the deepest JSON served, and its envelope. */
#define ONCE_PBJSON_MAX_NESTING (3 * ONCE_JSON_MAX_DEPTH + 8)

/* Protobuf bytes buf[0..len) of message type d to *out, a new JSON object
 * exactly as ProtoJSON prints it (the reference is protobuf's own
 * json_format.MessageToDict with default options): fields by JSON name,
 * unset and implicit-presence defaults left out, enums by name, 64-bit
 * integers as decimal strings, bytes in padded standard base64. Unknown
 * fields are skipped. ONCE_OK; ONCE_EPARSE with err set when the bytes are
 * not a valid message of that type (cut short, a wrong wire type, a string
 * that is not UTF-8 or holds a NUL, nesting too deep, a Timestamp out of
 * range, an Any of an unknown type); ONCE_ENOMEM. err may be NULL. */
int once__pbjson_from_pb(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                         json_t **out, char *err, size_t errlen);

/* The reverse: JSON in (an object, or the special form of a well-known
 * type) to *out, *len: the message's bytes, once_malloc'd (free with
 * once_free; a message with nothing set is 0 bytes but *out is still a
 * buffer). Accepts JSON names and proto field names, enums by name or
 * number, 64-bit integers as strings or numbers, Timestamps with any
 * offset, null as "unset". ONCE_EINVAL with err naming the JSON path
 * (e.g. "message.parts[1].raw: not base64") for an unknown member, a wrong
 * type, a value out of range, an unknown enum name, a field set twice, bad
 * base64 or nesting past ONCE_JSON_MAX_DEPTH; ONCE_ENOMEM. */
int once__pbjson_to_pb(const ProtobufCMessageDescriptor *d, const json_t *in, uint8_t **out,
                       size_t *len, char *err, size_t errlen);
/* The same for an answer onced built for all three bindings: a member the
 * message has no field for (once's own additions a JSON client reads, such
 * as a push config's "delivery") is left out instead of refused; the rest
 * is checked as strictly. */
int once__pbjson_answer_to_pb(const ProtobufCMessageDescriptor *d, const json_t *in,
                              uint8_t **out, size_t *len, char *err, size_t errlen);

/* The answer path without a tree: ProtoJSON text[0..len) (what the codec
 * answers every binding with) read straight into the bytes of message d,
 * guided by the descriptors (pbjson_text.c). A fast path only: ONCE_OK with
 * *out, *outlen as once__pbjson_answer_to_pb gives them for the same JSON
 * (the same message; fields in the order the members come); ONCE_ENOMEM;
 * or ONCE_EUNSUPPORTED for anything it leaves to the tree path (a member
 * the message has no field for, an Any or a Duration, a number not written
 * plainly, text that is not JSON ...): parse the text and call
 * once__pbjson_answer_to_pb, whose result or error is then the answer. */
int once__pbjson_text_to_pb(const ProtobufCMessageDescriptor *d, const char *text, size_t len,
                            uint8_t **out, size_t *outlen);

/* The message type a google.protobuf.Any type URL ("type.googleapis.com/
 * google.rpc.ErrorInfo") or full name names, among those pbjson can
 * resolve (see above); NULL if none. */
const ProtobufCMessageDescriptor *once__pbjson_type(const char *type_url);

/* protobuf-c's allocator hooks onto once_malloc/once_free, for callers that
 * unpack or free messages themselves (protobuf_c_message_unpack, ..._free_
 * unpacked). */
ProtobufCAllocator *once__pbjson_allocator(void);

#endif /* ONCE_GRPC_PBJSON_H */
