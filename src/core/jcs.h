/*
 * jcs.h -- JSON text in and out of libonce (not API): RFC 8785 canonical
 * JSON over already-parsed jansson values, the writer every JSON text
 * libonce emits goes through, and the reader every text it parses goes
 * through.
 *
 * once_jcs() and once_message_digest() in once.h take JSON text; code that
 * already holds a json_t (the A2A codec, the engine) uses these instead of
 * dumping and re-parsing. The canonical form is the same either way.
 */
#ifndef ONCE_CORE_JCS_H
#define ONCE_CORE_JCS_H

#include "once/once.h"

#include <jansson.h>

/* Canonicalise v into a fresh NUL-terminated buffer *out (free with
 * once_free); *outlen (may be NULL) gets its length. JSON integers are
 * converted to doubles first, as JCS requires. Returns ONCE_ERANGE past
 * ONCE_JSON_MAX_DEPTH nested arrays/objects, ONCE_EINVAL for a non-finite
 * real or a string/key that is not valid UTF-8, ONCE_ENOMEM. On failure
 * *out is NULL. v is only read. */
int once__jcs_json(const json_t *v, char **out, size_t *outlen);

/* Compact JSON text of v for the wire and the store: members in their
 * insertion order, integers exact, reals in the shortest form that reads
 * back to the same double (so 0.93 stays "0.93", where jansson's dump would
 * write 0.93000000000000005), strings escaped as RFC 8785 does. Same
 * results and ownership as once__jcs_json. Every JSON text libonce emits
 * goes through here. */
int once__json_write(const json_t *v, char **out, size_t *outlen);

/* ---------------------------------------------------------------------------
 * Text from pieces, for the texts the fast path writes around already
 * written JSON (spliced answers, update events, a journal's first entry)
 * without printf: each piece is a memcpy.
 *
 * Appends never fail on the spot: the first allocation failure (or a value
 * the JSON writer refuses) marks the text failed, later appends do nothing,
 * and once__text_done then frees it and returns NULL. Start from
 * ONCE__TEXT_INIT; the buffer is the caller's until once__text_done.
 */
typedef struct once__text {
    char *p;
    size_t len;
    size_t cap;
    int rc; /* ONCE_OK, or the first failure */
} once__text;

#define ONCE__TEXT_INIT {NULL, 0, 0, ONCE_OK}

/* Make room for n more bytes at once (one allocation for a text whose size
 * the caller can tell). */
void once__text_reserve(once__text *t, size_t n);
void once__text_put(once__text *t, const char *s, size_t n);
void once__text_str(once__text *t, const char *s);
/* Each string up to the NULL that ends the list, one after the other: a
 * template's literal pieces and the plain values between them. */
void once__text_strs(once__text *t, ...) __attribute__((sentinel));
/* A string literal, without the strlen. */
#define ONCE__TEXT_LIT(t, lit) once__text_put((t), (lit), sizeof(lit) - 1)
/* v in decimal, as the JSON writer writes an integer. */
void once__text_int(once__text *t, int64_t v);
/* v as once__json_write writes it. */
void once__text_json(once__text *t, const json_t *v);
/* The NUL-terminated text (*len, may be NULL, gets its length; free with
 * once_free), or NULL after a failure. t is spent either way. */
char *once__text_done(once__text *t, size_t *len);

/* ---------------------------------------------------------------------------
 * Reading JSON.
 *
 * Every jansson allocation in the process goes through once_malloc and
 * once_free (hooks installed before main; alloc.c says what they mean for a
 * host program), so a custom allocator sees JSON work and an allocation
 * fault sweep fails JSON builds and parses like any other allocation. Text
 * from json_dumps() is a once_malloc block: once_free it.
 *
 * jansson's parser cannot be trusted once an allocation failed inside it:
 * its lexer drops a character when its token buffer cannot grow and parses
 * on (a wrong value, or for a string whose closing quote was dropped a read
 * past the buffer), and several failures come back as syntax errors. Parse
 * with these instead of json_load*: once one allocation of a parse has
 * failed, every later one of that parse fails too (so the lexer stops at
 * its next allocation, before using the damaged text), and the result is
 * ONCE_ENOMEM with no value, whatever jansson concluded.
 */

/* json_loadb(buf, n, flags, err): ONCE_OK and *out (a new reference);
 * ONCE_ENOMEM when memory ran out during the parse; ONCE_EPARSE for input
 * jansson refused (err, when not NULL, says why). *out is NULL unless OK. */
int once__json_loadb(const char *buf, size_t n, size_t flags, json_t **out, json_error_t *err);

/* The same for NUL-terminated text; NULL text is ONCE_EPARSE. */
int once__json_loads(const char *text, size_t flags, json_t **out, json_error_t *err);

/* Text that must hold one JSON object (a stored task, a config list's
 * element, an agent's output): ONCE_OK and *out; ONCE_ENOMEM; ONCE_EPARSE
 * when it is NULL, not JSON, or not an object. */
int once__json_object(const char *text, json_t **out);

/* The tree once__json_loadb(buf, n, JSON_REJECT_DUPLICATES |
 * JSON_DECODE_ANY) builds, read without jansson's parser when the text is
 * plain JSON (json_read.c says what that is): ONCE_OK and *out (a new
 * reference); ONCE_ENOMEM; ONCE_EUNSUPPORTED for any other text, malformed
 * or not (ill-formed UTF-8 and NUL bytes included), which the caller then
 * parses with once__json_loadb. */
int once__json_read_plain(const char *buf, size_t n, json_t **out);

/* once_message_digest() for a parsed Message object; ONCE_EINVAL if msg is
 * not an object. */
int once__message_digest_json(const json_t *msg, uint8_t out[ONCE_SHA256_LEN]);

/* The digest of a send that also carries a push config (its
 * configuration.taskPushNotificationConfig, as sent): the message's digest
 * members plus the config under "taskPushNotificationConfig" (no message
 * member has that name, so no message alone digests the same). push NULL:
 * exactly once__message_digest_json(). */
int once__request_digest_json(const json_t *msg, const json_t *push,
                              uint8_t out[ONCE_SHA256_LEN]);

/* ECMAScript Number::toString(d) (ES2015+ 7.1.12.1, shortest round-trip
 * digits, closest on ties of length) as JCS serialises numbers; -0 gives
 * "0". Writes a NUL-terminated string into buf and returns its length, or
 * ONCE_EINVAL for NaN and infinities. */
#define ONCE__JCS_NUM_MAX 32
int once__jcs_number(double d, char buf[ONCE__JCS_NUM_MAX]);

#endif /* ONCE_CORE_JCS_H */
