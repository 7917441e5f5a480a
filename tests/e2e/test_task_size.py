"""A task's stored record is bounded (--max-task-size), and an agent that
reports progress often does not grow it.

onced runs with a 64 KiB bound and an --exec agent that, by the text of
the message that started the turn:
  "ask"        asks for more (input-required), every turn;
  "progress"   prints 2,000 progress lines (status working), then completes;
  "big"        writes an artifact larger than the bound.

What a client relies on:
- a continuation that would grow the task past the bound is refused with
  -32602 naming the limit (field "message"), and nothing is stored: the
  task stays input-required with the history it had, and a send that fits
  is still accepted;
- an agent's output that would grow the task past the bound fails the task
  with a reason that says so (the final write always fits);
- progress messages replace each other in the stored history (the task
  keeps the latest), while every one of them is an event: the stored event
  list holds all 2,000.
"""
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, Onced, check, eq, error_info, new_id, result_task, run,  # noqa
                     scaled, scratch_dir, status_text, task_state, user_message)

TMP = scratch_dir("once-tasksize-")
LIMIT = 64 * 1024

AGENT = r'''
import json, sys
turn = json.loads(sys.stdin.readline())
text = ""
for p in turn["message"].get("parts", []):
    if "text" in p:
        text = p["text"]
        break
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n")
if text.startswith("ask") or text.startswith("more"):
    emit({"status": "input-required", "text": "more?"})
elif text == "progress":
    for i in range(2000):
        emit({"status": "working", "text": "step %%d of 2000" %% i})
    emit({"status": "completed", "text": "all done"})
elif text == "big":
    emit({"artifact": {"artifactId": "big", "parts": [{"text": "x" * (%d + 1000)}]}})
    emit({"status": "completed"})
sys.stdout.flush()
''' % LIMIT


def start():
    path = os.path.join(TMP, "agent.py")
    with open(path, "w") as f:
        f.write(AGENT)
    return Onced(args=["--exec", "%s %s" % (sys.executable, path),
                       "--max-task-size", str(LIMIT)], tmpdir=TMP)


def send(srv, tid, text, wait=True):
    params = {"message": user_message(text, task_id=tid)}
    if not wait:
        params["configuration"] = {"returnImmediately": True}
    return srv.rpc("SendMessage", params, ext=True, timeout=60)


def get(srv, tid):
    st, _, doc = srv.rpc("GetTask", {"id": tid})
    return result_task(doc, "GetTask " + tid)


def test_continuations_bounded():
    with start() as srv:
        tid = "t-size-ask-" + new_id()[:8]
        st, _, doc = send(srv, tid, "ask")
        eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "the first turn asks")
        chunk = "more " + "y" * (20 * 1024)
        refused = None
        for n in range(8):
            st, _, doc = send(srv, tid, chunk)
            if "error" in (doc or {}):
                refused = doc
                break
            eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "continuation %d fits" % n)
        check(refused is not None, "a continuation past the bound was refused")
        code, reason, meta = error_info(refused)
        eq(code, -32602, "refused with invalid params")
        eq(meta.get("field"), "message", "the field is the message")
        check(str(LIMIT) in refused["error"]["message"] and "maximum size" in
              refused["error"]["message"], "the error names the limit: %r" % refused["error"])
        task = get(srv, tid)
        eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the task is as it was")
        check(len(json.dumps(task)) <= LIMIT, "the stored task is within the bound")
        eq(len([m for m in task["history"] if m.get("role") == "ROLE_USER"]), n + 1,
           "the history holds the accepted user messages only")
        st, _, doc = send(srv, tid, "more, briefly")
        eq(task_state(doc), "TASK_STATE_INPUT_REQUIRED", "a continuation that fits is accepted")


def test_agent_output_past_the_bound_fails_the_task():
    with start() as srv:
        tid = "t-size-big-" + new_id()[:8]
        st, _, doc = send(srv, tid, "big")
        eq(task_state(doc), "TASK_STATE_FAILED", "the task failed")
        why = status_text(get(srv, tid)) or ""
        check("maximum size" in why, "the reason says why: %r" % why)


def test_progress_does_not_grow_history():
    with start() as srv:
        tid = "t-size-progress-" + new_id()[:8]
        # Streamed, so every event is seen as it is stored.
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=scaled(120))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": {"message": user_message("progress", task_id=tid)}})
        c.request("POST", "/", body=body, headers={"Content-Type": "application/json",
                                                   "A2A-Version": "1.0", "A2A-Extensions": EXT})
        data = c.getresponse().read().decode()
        c.close()
        working = sum(1 for ln in data.splitlines()
                      if ln.startswith("data:") and "TASK_STATE_WORKING" in ln and "step " in ln)
        eq(working, 2000, "every progress message is an event")
        task = get(srv, tid)
        eq(task["status"]["state"], "TASK_STATE_COMPLETED", "the task completed")
        texts = [status_text({"status": {"message": m}}) for m in task["history"]]
        eq(texts, ["progress", "step 1999 of 2000", "all done"],
           "the history: the request, the latest progress, the answer")


if __name__ == "__main__":
    run([test_continuations_bounded, test_agent_output_past_the_bound_fails_the_task,
         test_progress_does_not_grow_history])
