/*
 * shape.h -- the A2A 1.0 shapes of a Message, an Artifact and a Part, checked
 * in one place for every layer that takes them in: requests from clients
 * (src/a2a/validate.c), the lines an --exec agent prints (src/exec/jsonl.c)
 * and what a C executor hands the work context (src/engine/work.c,
 * external.c). Not API. Pure functions: no I/O, no allocation.
 *
 * Invariants: a Part holds exactly one of text, raw, url, data and no member
 * A2A 1.0 does not define; every value a peer supplies (data, metadata)
 * nests at most ONCE_VALUE_MAX_DEPTH deep (json_depth.h). Every refusal
 * names one field, the first one found, and a reason that quotes what the
 * peer wrote only as printable UTF-8 (quote.h), so it can be served as JSON.
 */
#ifndef ONCE_CORE_SHAPE_H
#define ONCE_CORE_SHAPE_H

#include <jansson.h>
#include <stddef.h>

#include "once/once.h"

/* A refusal: the field ("message.parts[1].raw") and why, for a human. */
typedef struct once__shape_err {
    char field[160];
    char why[200];
} once__shape_err;

/* Fill e (NULL ok) and return ONCE_EINVAL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int once__shape_fail(once__shape_err *e, const char *field, const char *fmt, ...);

/* v nests at most ONCE_VALUE_MAX_DEPTH deep. */
int once__shape_depth(const json_t *v, const char *field, once__shape_err *e);

/* v is a string for which once_id_valid() holds (it can be a store key). */
int once__shape_id(const json_t *v, const char *field, once__shape_err *e);

/* Every member of obj is in allowed (NULL-terminated); an A2A 0.3 "kind"
 * is named as such. The field of a refusal is where.member. */
int once__shape_members(const json_t *obj, const char *const *allowed, const char *where,
                        once__shape_err *e);

/* Who sent a Message decides what it must carry. */
typedef struct once__msg_rules {
    const char *role;        /* the role it must have: "ROLE_USER" or "ROLE_AGENT" */
    const char *alt_role;    /* also accepted ("user" for A2A 0.1), or NULL */
    int need_role;           /* role required (else it may be left out) */
    int need_id;             /* messageId required */
    int ids;                 /* messageId, taskId, contextId, referenceTaskIds must hold
                              * once_id_valid() IDs (they become store keys) */
    int strict;              /* unknown members refused (else tolerated) */
    size_t max_parts;        /* 0: no limit */
} once__msg_rules;

/* A client's Message (A2A 1.0; legacy: the A2A 0.1 form, messageId
 * optional and role "user" allowed), at most max_parts parts, unknown
 * members tolerated for forward compatibility. */
void once__msg_rules_client(once__msg_rules *r, int legacy, size_t max_parts);

/* A Message under rules r; NULL counts as missing. */
int once__shape_message(const json_t *m, const char *field, const once__msg_rules *r,
                        once__shape_err *e);

/* A Part (always strict). */
int once__shape_part(const json_t *part, const char *field, once__shape_err *e);

/* An agent's output: a Message (role ROLE_AGENT or left out, no unknown
 * member) and an Artifact. where names it in the reason ("message",
 * "reply", "artifact"). */
int once__shape_agent_message(const json_t *m, const char *where, once__shape_err *e);
int once__shape_artifact(const json_t *a, const char *where, once__shape_err *e);

/* The same two for the C work context: ONCE_OK or ONCE_EINVAL, the reason
 * into why (may be NULL). */
int once__agent_message_check(const json_t *m, char *why, size_t whylen);
int once__agent_artifact_check(const json_t *a, char *why, size_t whylen);

#endif /* ONCE_CORE_SHAPE_H */
