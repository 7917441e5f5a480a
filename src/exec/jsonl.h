/*
 * jsonl.h -- the `--exec` JSON-lines protocol as pure functions (not API):
 * the one input line a command reads on stdin, and the validator that turns
 * each line it prints on stdout into one command (docs/protocol.md).
 *
 * Nothing here does I/O or touches the engine; src/exec/subprocess.c feeds
 * lines in and applies the commands through the once_work_* calls.
 */
#ifndef ONCE_EXEC_JSONL_H
#define ONCE_EXEC_JSONL_H

#include <jansson.h>

#include "once/once.h"

/* Longest accepted output line, newline excluded. */
#define ONCE_EXEC_LINE_MAX (1024 * 1024)
/* How much of an offending line a failure reason quotes. */
#define ONCE_EXEC_QUOTE_MAX 80

/* What a command sees on stdin: one JSON object and a newline. */
typedef struct once__exec_turn {
    const char *task_id;
    const char *context_id;
    int64_t fence;
    int64_t step;
    int resumed;
    const char *message_json;  /* A2A Message; NULL or unparsable -> null */
    const char *task_json;     /* A2A Task; NULL or unparsable -> null */
    const char *checkpoint;    /* NULL -> null */
} once__exec_turn;

/* The input line, NUL-terminated and ending in "\n", into a fresh buffer
 * (*out, free with once_free). ONCE_ENOMEM is the only failure. */
int once__exec_input(const once__exec_turn *t, char **out, size_t *outlen);

typedef enum once__exec_kind {
    ONCE__EXEC_BLANK = 0,   /* empty or whitespace-only line: ignored */
    ONCE__EXEC_STATUS,      /* state, msg (Message object or NULL) */
    ONCE__EXEC_ARTIFACT,    /* msg (Artifact object), append, last_chunk */
    ONCE__EXEC_REPLY,       /* msg (Message object) */
    ONCE__EXEC_CHECKPOINT,  /* text, has_step/step */
    ONCE__EXEC_LOG          /* text */
} once__exec_kind;

/* One parsed line. Filled by once__exec_parse_line, owned by the caller,
 * released by once__exec_cmd_clear. msg is a jansson reference (validated
 * A2A 1.0 shape, unknown members refused); text is once_malloc'd. */
typedef struct once__exec_cmd {
    once__exec_kind kind;
    once_state state;
    json_t *msg;
    int append;
    int last_chunk;
    char *text;
    int has_step;
    int64_t step;
} once__exec_cmd;

/* Parse and validate one line (line[0..n), no trailing newline; a trailing
 * "\r" is tolerated). ONCE_OK and *out filled, or a negative error with a
 * human reason in why that names the problem and quotes the start of the
 * line (valid UTF-8 always, so it can go into a task's status message):
 *   ONCE_ERANGE  line longer than ONCE_EXEC_LINE_MAX
 *   ONCE_EPARSE  not a JSON object
 *   ONCE_EINVAL  unknown command, unknown member, wrong type, bad value. */
int once__exec_parse_line(const char *line, size_t n, once__exec_cmd *out, char *why,
                          size_t whylen);
void once__exec_cmd_clear(once__exec_cmd *c);   /* NULL ok */

/* 1 for the states a command may set (working, input-required,
 * auth-required, completed, failed, rejected). */
int once__exec_settable(once_state s);

#endif
