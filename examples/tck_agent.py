#!/usr/bin/env python3
"""tck_agent.py -- the A2A TCK's scenario agent, for `onced --exec` (docs/protocol.md).

    onced --listen 127.0.0.1:8080 --store memory: --plain-ids server \
          --push-allow 127.0.0.0/8 --exec "python3 examples/tck_agent.py"

The A2A conformance suite (a2aproject/a2a-tck, branch 1.0-dev) tells the agent
what to do by the prefix of the first message's messageId; its scenarios
(scenarios/core_operations.feature, scenarios/streaming.feature) say what each
prefix must produce. This agent is those scenarios written for the --exec
protocol; tests/tck/run_tck.py runs the suite against onced with it.

The first prefix that matches wins, in this order (longer prefixes before the
shorter ones they start with). A continuation of a task routes by the
messageId of the message that continues it, so a continuation the suite sends
with its own messageId completes the task.

Python 3 standard library only.
"""
import json
import signal
import sys
import time


def emit(obj):
    """One protocol line on stdout, flushed now (onced applies it now)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def finish(artifacts, working):
    """[working,] one artifact per entry (a text or a Part), completed."""
    if working:
        emit({"status": "working"})
    for a in artifacts:
        emit({"artifact": {"parts": [a if isinstance(a, dict) else {"text": a}]}})
    emit({"status": "completed"})


def streamed(*artifacts):
    """How the streaming scenarios unfold: working, the artifacts, completed."""
    finish(artifacts, True)


def completed(*artifacts):
    """The other scenarios: the artifacts, completed."""
    finish(artifacts, False)


FILE_PART = {"raw": "dGNr", "mediaType": "text/plain", "filename": "output.txt"}  # b"tck"

# (prefix, what the agent does), first match wins: a prefix comes before the
# shorter ones it starts with.
SCENARIOS = [
    ("tck-stream-artifact-chunked", lambda: (
        emit({"status": "working"}),
        emit({"artifact": {"artifactId": "chunked", "parts": [{"text": "chunk-1 "}]},
              "lastChunk": False}),
        emit({"artifact": {"artifactId": "chunked", "parts": [{"text": "chunk-2"}]},
              "append": True, "lastChunk": True}),
        emit({"status": "completed"}))),
    ("test-resubscribe-message-id", lambda: (
        emit({"status": "working"}), time.sleep(4), emit({"status": "completed"}))),
    ("tck-stream-artifact-text", lambda: streamed("Streamed text content")),
    ("tck-stream-artifact-file", lambda: streamed(FILE_PART)),
    ("tck-stream-ordering-001", lambda: streamed("Ordered output")),
    ("tck-artifact-file-url", lambda: completed({"url": "https://example.com/output.txt",
                                                 "mediaType": "text/plain",
                                                 "filename": "output.txt"})),
    ("tck-message-response",
     lambda: emit({"reply": {"parts": [{"text": "Direct message response"}]}})),
    ("tck-input-required", lambda: emit({"status": "input-required"})),
    ("tck-complete-task", lambda: emit({"status": "completed", "text": "Hello from TCK"})),
    ("tck-artifact-text", lambda: completed("Generated text content")),
    ("tck-artifact-file", lambda: completed(FILE_PART)),
    ("tck-artifact-data", lambda: completed({"data": {"key": "value", "count": 42}})),
    ("tck-reject-task", lambda: emit({"status": "rejected", "text": "rejected"})),
    ("tck-stream-001", lambda: streamed("Stream hello from TCK")),
    ("tck-stream-002", lambda: emit({"status": "completed"})),
    ("tck-stream-003", lambda: streamed("Stream task lifecycle")),
]


def main():
    # A cancel is SIGTERM: leave at once, printing nothing more.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    turn = json.loads(sys.stdin.readline() or "{}")
    message_id = (turn.get("message") or {}).get("messageId", "")
    for prefix, run in SCENARIOS:
        if message_id.startswith(prefix):
            run()
            return
    emit({"status": "completed", "text": "Unhandled messageId prefix: " + message_id})


if __name__ == "__main__":
    main()
