#!/usr/bin/env python3
"""review_agent.py -- a contract-review agent for `onced --exec` (docs/protocol.md).

    onced --listen 127.0.0.1:8080 --store sqlite:once.db \
          --exec "python3 examples/review_agent.py"

The main flow takes two turns:

  turn 1  the message holds the contract. The agent reports progress, saves a
          checkpoint (the contract and the phase) and asks which jurisdiction
          governs it: the task goes to input-required with the question.
  turn 2  the continuation holds the answer. The agent reads its checkpoint,
          streams the review as one artifact in two chunks (append, lastChunk),
          "files" it with the side-effect key of the current step, advances the
          step with a new checkpoint, and completes with a closing message.

Other answers an A2A agent can give, chosen by the first text part of the
first message (or by message.metadata.route):

  "reply: X"   a direct Message instead of a Task
  "parts"      an artifact with every part kind (text, raw, url, data)
  "reject"     rejected, with a reason
  "auth"       auth-required, with an explanation
  "fail"       failed, with a reason
  "sleep: N"   working for N seconds, then completed; SIGTERM (cancel or
               deadline) stops it at once, without another line

Python 3 standard library only. One JSON object per output line, flushed as
soon as it is written, so onced applies each one as it happens.
"""
import base64
import json
import os
import signal
import sys
import time


def emit(obj):
    """One protocol line on stdout, flushed now (onced streams it)."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(text):
    """A line in onced's log (the {"log"} command); stderr works too."""
    emit({"log": text})


def first_text(message):
    for part in (message or {}).get("parts", []):
        if isinstance(part.get("text"), str):
            return part["text"]
    return ""


def on_sigterm(signum, frame):
    # Canceled, or past the deadline: onced ignores anything printed from now
    # on and sends SIGKILL after its grace period. Clean up and leave.
    sys.stderr.write("review_agent: SIGTERM, stopping\n")
    sys.stderr.flush()
    os._exit(143)


def ask_jurisdiction(turn, contract):
    emit({"status": "working", "text": "reading the contract (%d characters)" % len(contract)})
    # The checkpoint is written before the line that ends the turn: after
    # input-required, onced applies only log lines.
    emit({"checkpoint": json.dumps({"phase": "asked", "contract": contract}),
          "step": turn["step"]})
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
    emit({"artifact": {"artifactId": "review",
                       "parts": [{"text": "Governing law: %s. No blocking issues.\n" % answer,
                                  "mediaType": "text/markdown"}],
                       "metadata": {"effectKey": effect_key}},
          "append": True, "lastChunk": True})
    emit({"checkpoint": json.dumps({"phase": "reviewed", "filed": effect_key}),
          "step": step + 1})
    emit({"status": "completed", "text": "review filed as %s" % effect_key})


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


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    line = sys.stdin.readline()
    turn = json.loads(line)
    message = turn.get("message") or {}
    text = first_text(message).strip()
    route = (message.get("metadata") or {}).get("route") or text
    state = json.loads(turn["checkpoint"]) if turn.get("checkpoint") else {}

    log("turn: fence %s step %s resumed %s, %d messages in history" % (
        turn["fence"], turn["step"], turn["resumed"],
        len((turn.get("task") or {}).get("history", []))))

    if state.get("phase") == "asked":
        review(turn, state, text or "unspecified")
    elif route.startswith("reply:"):
        emit({"reply": {"parts": [{"text": route[len("reply:"):].strip()}],
                        "metadata": {"answeredBy": "review_agent"}}})
    elif route == "parts":
        every_part_kind()
    elif route == "reject":
        emit({"status": "rejected", "text": "review_agent only reviews contracts"})
    elif route == "auth":
        emit({"status": "auth-required", "text": "sign in to the contract archive first"})
    elif route == "fail":
        emit({"status": "failed", "text": "review_agent: asked to fail"})
    elif route.startswith("sleep:"):
        seconds = float(route[len("sleep:"):])
        emit({"status": "working", "text": "sleeping %g s" % seconds})
        time.sleep(seconds)
        emit({"status": "completed"})
    else:
        ask_jurisdiction(turn, text)


if __name__ == "__main__":
    main()
