#!/bin/sh
# echo_agent.sh -- the smallest useful `onced --exec` agent (docs/protocol.md).
#
# Reads the turn input (one JSON line on stdin), echoes the first text part of
# the current message back as an artifact, and completes. Plain POSIX sh:
# the JSON handling is deliberately crude (sed), enough for a demo and for
# the end-to-end tests; a real agent would use a JSON parser (see
# review_agent.py).
#
#   onced --listen 127.0.0.1:8080 --store memory: --exec "sh examples/echo_agent.sh"
#
# Environment (set by onced): ONCE_TASK_ID, ONCE_CONTEXT_ID, ONCE_FENCE,
# ONCE_STEP, ONCE_EFFECT_KEY_PREFIX, ONCE_RESUMED.
set -eu

IFS= read -r input || true

# The message is the member right after "resumed"; the task follows it.
# Cut the line down to the message, then take its first "text" value
# (escaped quotes stay escaped, so it can be pasted back into JSON as is).
message=${input#*\"message\":}
message=${message%%,\"task\":*}
text=""
case $message in
*'"text":"'*)
    text=$(printf '%s\n' "${message#*\"text\":\"}" | sed 's/^\(\([^"\\]\|\\.\)*\)".*/\1/') ;;
esac

# Progress goes to the task as a status update; diagnostics go to stderr,
# which onced copies to its own stderr prefixed with the task id.
printf '{"status":"working","text":"echoing"}\n'
echo "echo_agent: task $ONCE_TASK_ID fence $ONCE_FENCE step $ONCE_STEP" >&2

printf '{"artifact":{"artifactId":"echo","name":"echo","parts":[{"text":"%s"}]},"lastChunk":true}\n' "$text"
printf '{"status":"completed"}\n'
