#!/usr/bin/env python3
"""review_agent.py -- a contract-review agent for `onced --exec` (docs/protocol.md).

    onced --listen 127.0.0.1:8080 --store sqlite:once.db \
          --exec "python3 examples/review_agent.py"

examples/c_agent.c is the same agent written against the C executor
interface (include/once/executor.h); both answer every message the same way,
and tests/e2e/test_executors.py checks the exact A2A JSON a client gets from
each.

The main flow takes two turns:

  turn 1  the message holds the contract. The agent reports progress, saves a
          checkpoint (the contract and the phase) and asks which jurisdiction
          governs it: the task goes to input-required with the question.
  turn 2  the continuation holds the answer. The agent reads its checkpoint,
          streams the review as one artifact in two chunks (append, lastChunk),
          "files" it with the side-effect key of the current step, advances the
          step with a new checkpoint, and completes with a closing message.

Every other answer an A2A 1.0 agent can give is chosen by the message: by
message.metadata.route if present, else by its first text part; a messageId
starting with "ping-" is answered before anything else:

  messageId ping-*  a direct Message "pong" that names the messageId
  "reply: X"   a direct Message (no task) holding X
  "parts"      an artifact with every part kind (text, raw, url, data), with
               filename, mediaType, metadata, name and description
  "inspect"    two turns that report what the agent reads on a turn: the
               raw message, the fence, the step, the checkpoint, the task's
               state, history and artifacts so far (as a data part)
  "reject"     rejected, with a reason
  "auth"       auth-required, with an explanation; the next message completes
  "fail"       failed, with a reason
  "sleep: N"   working for N seconds, then completed; SIGTERM (cancel or
               deadline) stops it at once, without another line
  "slow: N"    a blocking N-second call that ignores SIGTERM, then an artifact:
               after a cancel onced applies nothing it prints (fencing)

Python 3 standard library only. One JSON object per output line, flushed as
soon as it is written, so onced applies each one as it happens.
"""
import base64
import json
import os
import signal
import sys
import time

AGENT = "review_agent"


def emit(obj):
    """One protocol line on stdout, flushed now (onced applies it now)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(text):
    """A line in onced's log (the {"log"} command); stderr works too."""
    emit({"log": text})


def compact(obj):
    """Checkpoint text: the agent's own state, encoded as it likes."""
    return json.dumps(obj, separators=(",", ":"))


def first_text(message):
    for part in (message or {}).get("parts", []):
        if isinstance(part.get("text"), str):
            return part["text"]
    return ""


def on_sigterm(signum, frame):
    # Canceled, or past the deadline: onced ignores anything printed from now
    # on and sends SIGKILL after its grace period. Clean up and leave.
    sys.stderr.write("%s: SIGTERM, stopping\n" % AGENT)
    sys.stderr.flush()
    os._exit(143)


def seconds(arg):
    try:
        s = float(arg)
    except ValueError:
        return None
    return s if 0 <= s <= 86400 else None


# --- the contract review (two turns) -----------------------------------------

def ask_jurisdiction(turn, contract):
    emit({"status": "working", "text": "reading the contract (%d characters)" % len(contract)})
    # The checkpoint is written before the line that ends the turn: after
    # input-required, onced applies only log lines.
    emit({"checkpoint": compact({"phase": "asked", "contract": contract}), "step": turn["step"]})
    emit({"status": "input-required",
          "message": {"parts": [{"text": "Which jurisdiction governs this contract?"}],
                      "metadata": {"question": "jurisdiction"}}})


def review(turn, state, answer):
    step = turn["step"]
    # The key for this step's side effect is the same after a takeover (the
    # step only advances with the checkpoint below), so a downstream service
    # that dedups on it sees a re-executed step as a retry, not a new filing.
    effect_key = os.environ["ONCE_EFFECT_KEY_PREFIX"] + str(step)
    contract = state.get("contract", "")
    emit({"status": "working", "text": "reviewing under %s law" % answer})
    emit({"artifact": {"artifactId": "review", "name": "review.md",
                       "description": "contract review",
                       "parts": [{"text": "# Review\n\nContract: %s\n" % contract,
                                  "mediaType": "text/markdown"}]},
          "append": False, "lastChunk": False})
    time.sleep(0.05)   # a real agent would be thinking here
    # An appended chunk adds its parts; the artifact keeps the name,
    # description and metadata of its first chunk.
    emit({"artifact": {"artifactId": "review",
                       "parts": [{"text": "Governing law: %s. No blocking issues.\n" % answer,
                                  "mediaType": "text/markdown"}]},
          "append": True, "lastChunk": True})
    emit({"checkpoint": compact({"phase": "reviewed", "filed": effect_key}), "step": step + 1})
    emit({"status": "completed", "text": "review filed as %s" % effect_key})


# --- the other answers --------------------------------------------------------

def every_part_kind():
    emit({"artifact": {
        "artifactId": "kinds", "name": "kinds", "description": "one part of each kind",
        "metadata": {"example": True},
        "parts": [
            {"text": "plain text"},
            {"raw": base64.b64encode(b"\x00\x01binary").decode(), "filename": "blob.bin",
             "mediaType": "application/octet-stream"},
            {"url": "https://example.com/contract.pdf", "filename": "contract.pdf",
             "mediaType": "application/pdf"},
            {"data": {"score": 0.93, "flags": ["ok"]}, "mediaType": "application/json",
             "metadata": {"schema": "review/v1"}},
        ]}, "lastChunk": True})
    emit({"status": "completed"})


def inspect_first(turn, message):
    # A progress message may carry any parts, not only text.
    emit({"status": "working", "message": {"parts": [
        {"text": "looking at your message"},
        {"data": {"messageId": message.get("messageId"), "fence": turn["fence"],
                  "step": turn["step"]}, "mediaType": "application/json"}]}})
    emit({"artifact": {"artifactId": "notes", "name": "notes",
                       "parts": [{"text": "first turn notes"}]}, "lastChunk": True})
    emit({"checkpoint": compact({"phase": "inspect"}), "step": turn["step"] + 1})
    emit({"status": "input-required", "text": "anything else?"})


def inspect_second(turn, message):
    task = turn.get("task") or {}
    seen = {
        "messageId": message.get("messageId"),
        "message": message,
        "fence": turn["fence"],
        "step": turn["step"],
        "resumed": turn["resumed"],
        "checkpoint": turn["checkpoint"],
        "state": (task.get("status") or {}).get("state"),
        "historyRoles": [m.get("role") for m in task.get("history", [])],
        "artifactIds": [a.get("artifactId") for a in task.get("artifacts", [])],
    }
    emit({"artifact": {"artifactId": "inspect", "name": "inspect",
                       "description": "what the agent read on this turn",
                       "parts": [{"data": seen, "mediaType": "application/json"}]},
          "lastChunk": True})
    emit({"status": "completed"})


def sleep_route(arg):
    s = seconds(arg)
    if s is None:
        emit({"status": "failed", "text": "%s: sleep: N needs 0 to 86400 seconds" % AGENT})
        return
    emit({"status": "working", "text": "sleeping %g s" % s})
    time.sleep(s)   # SIGTERM ends the process here (on_sigterm)
    emit({"status": "completed"})


def slow_route(arg):
    s = seconds(arg)
    if s is None:
        emit({"status": "failed", "text": "%s: slow: N needs 0 to 86400 seconds" % AGENT})
        return
    emit({"status": "working", "text": "calling a slow service (%g s)" % s})
    # A call that cannot be interrupted: SIGTERM is ignored until it returns.
    # A real agent would stop after it; this one carries on, to show that a
    # canceled turn's later lines change nothing.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(s)
    sys.stderr.write("%s: slow call done, publishing\n" % AGENT)
    sys.stderr.flush()
    emit({"artifact": {"artifactId": "late", "parts": [{"text": "written after the call"}]},
          "lastChunk": True})
    emit({"status": "completed"})


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    turn = json.loads(sys.stdin.readline())
    message = turn.get("message") or {}
    text = first_text(message).strip()
    meta = message.get("metadata") or {}
    route = meta["route"] if isinstance(meta.get("route"), str) else text
    message_id = message.get("messageId") or ""
    state = json.loads(turn["checkpoint"]) if turn.get("checkpoint") else {}
    phase = state.get("phase")

    log("turn: fence %s step %s resumed %s, %d messages in history" % (
        turn["fence"], turn["step"], turn["resumed"],
        len((turn.get("task") or {}).get("history", []))))

    # A checkpoint that says a question is open: this turn is its answer.
    if phase == "asked":
        review(turn, state, text or "unspecified")
    elif phase == "auth":
        emit({"status": "completed", "text": "signed in; the archive is open"})
    elif phase == "inspect":
        inspect_second(turn, message)
    elif message_id.startswith("ping-"):
        emit({"reply": {"parts": [{"text": "pong"}],
                        "metadata": {"answeredBy": AGENT, "inReplyTo": message_id}}})
    elif route.startswith("reply:"):
        emit({"reply": {"parts": [{"text": route[len("reply:"):].strip()}],
                        "metadata": {"answeredBy": AGENT}}})
    elif route == "parts":
        every_part_kind()
    elif route == "inspect":
        inspect_first(turn, message)
    elif route == "reject":
        emit({"status": "rejected", "text": "%s only reviews contracts" % AGENT})
    elif route == "auth":
        emit({"checkpoint": compact({"phase": "auth"})})
        emit({"status": "auth-required", "text": "sign in to the contract archive first"})
    elif route == "fail":
        emit({"status": "failed", "text": "%s: asked to fail" % AGENT})
    elif route.startswith("sleep:"):
        sleep_route(route[len("sleep:"):])
    elif route.startswith("slow:"):
        slow_route(route[len("slow:"):])
    else:
        ask_jurisdiction(turn, text)


if __name__ == "__main__":
    main()
