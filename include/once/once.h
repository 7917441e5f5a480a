/*
 * once.h -- the core of libonce: errors, allocator hooks, clock and rng
 * interfaces, task IDs, canonical JSON digests and task states.
 *
 * Everything declared here is pure: no function touches the network, the
 * filesystem or the wall clock except through the once_clock and once_rng
 * interfaces (the system implementations read the OS clock and CSPRNG).
 *
 * If it does not appear in include/once/, it is not API.
 */
#ifndef ONCE_ONCE_H
#define ONCE_ONCE_H

#include <stddef.h>
#include <stdint.h>

/* What libonce exports: it is built with -fvisibility=hidden, so a
 * function is API only if a header here declares it with ONCE_API. */
#if defined(__GNUC__)
#define ONCE_API __attribute__((visibility("default")))
#else
#define ONCE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version ("0.1.0"), a static string. It is the project()
 * version of CMakeLists.txt, the one place it is defined (libonce is built
 * with it as ONCE_VERSION_STRING; onced and once print it for --version). */
ONCE_API const char *once_version(void);

/* The A2A extension once implements: client-minted task IDs and idempotent
 * sends. Objects onced serves carry their generation under this key of their
 * `metadata` ({"generation": N}), since A2A 1.0 objects have no member for it. */
#define ONCE_IDEMPOTENCY_EXTENSION "urn:once:a2a:idempotency:v1"

/* ---------------------------------------------------------------------------
 * Errors. One closed enum: ONCE_OK is 0, failures are negative, numbers are
 * never reused. once_strerror() never returns NULL.
 */
typedef enum once_err {
    ONCE_OK = 0,
    ONCE_ERROR = -1,        /* unspecified failure (a bug if ever seen) */
    ONCE_ENOMEM = -2,       /* allocation failed */
    ONCE_EINVAL = -3,       /* invalid argument or input */
    ONCE_EEXISTS = -4,      /* create-if-absent lost: a live record exists */
    ONCE_ENOTFOUND = -5,    /* no record and no tombstone under that key */
    ONCE_ETOMBSTONE = -6,   /* the key is known only as a tombstone (expired) */
    ONCE_ECONFLICT = -7,    /* CAS failed: stored version differs */
    ONCE_EFENCED = -8,      /* a write carried a stale fence */
    ONCE_EILLEGAL = -9,     /* illegal state transition */
    ONCE_ESTORE = -10,      /* store backend failure; retryable */
    ONCE_EBUSY = -11,       /* store or resource busy; retryable */
    ONCE_EIO = -12,         /* I/O error outside the store */
    ONCE_ERANGE = -13,      /* value or input too large */
    ONCE_EPARSE = -14,      /* malformed JSON or text */
    ONCE_ECORRUPT = -15,    /* stored data failed validation */
    ONCE_EUNSUPPORTED = -16,/* operation not supported by this backend/build */
    ONCE_ETIMEDOUT = -17,   /* deadline passed */
    ONCE_ECLOSED = -18,     /* handle is closing or closed */
    ONCE_ECANCELED = -19,   /* operation canceled */
    ONCE_EOVERLOAD = -20    /* this replica's turn queue is full; retryable */
} once_err;

#define ONCE_ERR_MIN ONCE_EOVERLOAD

/* Static English description of err; unknown codes get "unknown error". */
ONCE_API const char *once_strerror(int err);
/* Symbolic name ("ONCE_EEXISTS"); unknown codes get "ONCE_E?". */
ONCE_API const char *once_errname(int err);

/* ---------------------------------------------------------------------------
 * Allocator hooks. Every allocation in libonce goes through these, so tests can
 * fail the n-th allocation. once_set_allocator(NULL) restores libc. Not
 * thread-safe with respect to concurrent allocation: set it before starting.
 */
typedef struct once_allocator {
    void *(*malloc_fn)(size_t n);
    void *(*calloc_fn)(size_t nmemb, size_t size);
    void *(*realloc_fn)(void *p, size_t n);
    void (*free_fn)(void *p);
} once_allocator;

ONCE_API void once_set_allocator(const once_allocator *a);
ONCE_API void *once_malloc(size_t n);
ONCE_API void *once_calloc(size_t nmemb, size_t size);
ONCE_API void *once_realloc(void *p, size_t n);
ONCE_API void once_free(void *p);                       /* NULL is a no-op */
ONCE_API char *once_strdup(const char *s);              /* NULL in -> NULL out */
ONCE_API char *once_strndup(const char *s, size_t n);

/* ---------------------------------------------------------------------------
 * Clock. Milliseconds since the Unix epoch. Everything that reasons about time
 * (leases, retention, timestamps) reads it through a once_clock so tests and
 * the demo can jump days.
 */
typedef struct once_clock {
    int64_t (*now_ms)(const struct once_clock *c);
} once_clock;

static inline int64_t once_now(const once_clock *c) { return c->now_ms(c); }

/* The OS real-time clock (CLOCK_REALTIME). Static; never freed. */
ONCE_API const once_clock *once_clock_system(void);

/* System clock plus an adjustable offset; set may be called from any thread
 * at any time (the offset is atomic). */
typedef struct once_offset_clock {
    once_clock base;              /* first member: pass &c.base as once_clock* */
    volatile int64_t offset_ms;   /* read and written with __atomic builtins */
} once_offset_clock;
ONCE_API void once_offset_clock_init(once_offset_clock *c, int64_t offset_ms);
ONCE_API void once_offset_clock_set(once_offset_clock *c, int64_t offset_ms);
ONCE_API int64_t once_offset_clock_get(const once_offset_clock *c);

/* A clock that only moves when told (tests). */
typedef struct once_manual_clock {
    once_clock base;
    volatile int64_t now;
} once_manual_clock;
ONCE_API void once_manual_clock_init(once_manual_clock *c, int64_t now_ms);
ONCE_API void once_manual_clock_advance(once_manual_clock *c, int64_t delta_ms);

/* Monotonic milliseconds (CLOCK_MONOTONIC) for timeouts that must not jump. */
ONCE_API int64_t once_monotonic_ms(void);

/* Format ms-since-epoch as RFC 3339 UTC with milliseconds:
 * "2026-12-02T12:00:00.000Z". out must hold 25 bytes. */
ONCE_API void once_format_time(int64_t ms, char out[25]);

/* ---------------------------------------------------------------------------
 * Random bytes. fill returns ONCE_OK or a negative error.
 */
typedef struct once_rng {
    int (*fill)(const struct once_rng *r, void *buf, size_t n);
} once_rng;

/* The OS CSPRNG (getrandom(2); draws of up to 64 bytes from a per-thread
 * pool of its output, refilled 256 bytes at a time). Static; never freed. */
ONCE_API const once_rng *once_rng_system(void);

/* Deterministic generator for tests and simulations (not cryptographic). */
typedef struct once_seeded_rng {
    once_rng base;
    uint64_t state;   /* guarded by the caller: not thread-safe */
} once_seeded_rng;
ONCE_API void once_seeded_rng_init(once_seeded_rng *r, uint64_t seed);

/* Uniform integer in [0, bound) from r (bound > 0). */
ONCE_API int once_rng_uniform(const once_rng *r, uint64_t bound, uint64_t *out);

/* ---------------------------------------------------------------------------
 * Task IDs (docs/design.md section 3).
 *
 * Accepted: 1..128 chars of [A-Za-z0-9._:-], first char alphanumeric.
 */
#define ONCE_ID_MAX 128
/* Longest principal (the authenticated caller a task belongs to). */
#define ONCE_PRINCIPAL_MAX 128
#define ONCE_ULID_LEN 26
#define ONCE_UUID_LEN 36

/* 1 if id is an acceptable task ID, 0 otherwise (NULL -> 0). */
ONCE_API int once_id_valid(const char *id);

/* Mint a ULID (Crockford base32, 48-bit ms timestamp + 80 random bits).
 * out receives 26 chars + NUL. */
ONCE_API int once_ulid(const once_clock *clock, const once_rng *rng, char out[ONCE_ULID_LEN + 1]);

/* Mint a random UUIDv4, lowercase, 36 chars + NUL. */
ONCE_API int once_uuid4(const once_rng *rng, char out[ONCE_UUID_LEN + 1]);

/* Mint a time-ordered UUIDv7 (RFC 9562: 48-bit ms timestamp, 74 random
 * bits), lowercase, 36 chars + NUL. IDs minted in later milliseconds sort
 * after earlier ones as strings, so an index over them grows at its end
 * instead of touching a random page per insert. */
ONCE_API int once_uuid7(const once_clock *clock, const once_rng *rng,
                        char out[ONCE_UUID_LEN + 1]);

/* The task ID derived for a first message without a task ID:
 * HMAC-SHA256(secret, principal "|" message_id), first 16 bytes formatted as
 * a UUID (version nibble 8, RFC 9562 variant bits). Deterministic. */
ONCE_API int once_derive_task_id(const uint8_t *secret, size_t secret_len, const char *principal,
                        const char *message_id, char out[ONCE_UUID_LEN + 1]);

/* Deterministic child task ID for delegation at step `step` of `parent`:
 * "<parent>.<step>" when that fits in ONCE_ID_MAX, else "h" followed by the
 * first 63 hex digits of SHA-256(parent "." step). Always a valid ID.
 * out must hold ONCE_ID_MAX + 1 bytes. */
ONCE_API int once_child_id(const char *parent, uint64_t step, char out[ONCE_ID_MAX + 1]);

/* Side-effect key "<task_id>:step-<n>". out holds ONCE_EFFECT_KEY_MAX + 1. */
#define ONCE_EFFECT_KEY_MAX (ONCE_ID_MAX + 26)
ONCE_API int once_effect_key(const char *task_id, uint64_t step, char out[ONCE_EFFECT_KEY_MAX + 1]);

/* ---------------------------------------------------------------------------
 * Hashing (thin wrappers over OpenSSL libcrypto).
 */
#define ONCE_SHA256_LEN 32
#define ONCE_DIGEST_HEX 64
ONCE_API void once_sha256(const void *data, size_t n, uint8_t out[ONCE_SHA256_LEN]);
ONCE_API void once_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
                      uint8_t out[ONCE_SHA256_LEN]);
/* Lowercase hex of n bytes into out (2n + 1 bytes). */
ONCE_API void once_hex(const uint8_t *in, size_t n, char *out);
/* Constant-time comparison of n bytes: 1 if equal. */
ONCE_API int once_ct_equal(const void *a, const void *b, size_t n);

/* ---------------------------------------------------------------------------
 * Canonical JSON (RFC 8785, JCS) and the request digest.
 *
 * once_jcs: parse the JSON text in[0..n) (must be I-JSON: valid UTF-8, no
 * duplicate keys, numbers representable as IEEE doubles) and write its
 * canonical form to a fresh NUL-terminated buffer *out (free with once_free).
 * Returns ONCE_EPARSE for malformed input, ONCE_EINVAL for duplicate keys or
 * non-finite numbers, ONCE_ERANGE past max nesting depth (64).
 */
#define ONCE_JSON_MAX_DEPTH 64
ONCE_API int once_jcs(const char *in, size_t n, char **out, size_t *outlen);

/* Request digest of an A2A Message given as JSON text: SHA-256 over the JCS
 * form of the object holding only its role, parts, metadata, messageId,
 * referenceTaskIds and extensions members (those present). Other members
 * (taskId, contextId: the server may add them) do not count. */
ONCE_API int once_message_digest(const char *msg_json, size_t n, uint8_t out[ONCE_SHA256_LEN]);

/* ---------------------------------------------------------------------------
 * Task states (A2A 1.0). Numbering is stable (stored by backends).
 */
typedef enum once_state {
    ONCE_STATE_UNKNOWN = 0,
    ONCE_STATE_SUBMITTED = 1,
    ONCE_STATE_WORKING = 2,
    ONCE_STATE_INPUT_REQUIRED = 3,
    ONCE_STATE_AUTH_REQUIRED = 4,
    ONCE_STATE_COMPLETED = 5,
    ONCE_STATE_FAILED = 6,
    ONCE_STATE_CANCELED = 7,
    ONCE_STATE_REJECTED = 8
} once_state;

/* "TASK_STATE_WORKING" etc; "TASK_STATE_UNSPECIFIED" for anything else. */
ONCE_API const char *once_state_name(once_state s);
/* Parse a TASK_STATE_* name (also accepts the 0.x lowercase names such as
 * "input-required"); ONCE_STATE_UNKNOWN if unrecognised. */
ONCE_API once_state once_state_parse(const char *name);
ONCE_API int once_state_terminal(once_state s);     /* completed failed canceled rejected */
ONCE_API int once_state_interrupted(once_state s);  /* input-required auth-required */

#ifdef __cplusplus
}
#endif
#endif /* ONCE_ONCE_H */
