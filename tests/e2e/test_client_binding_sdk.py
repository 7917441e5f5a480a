"""`once --binding grpc|http_json|auto` against another implementation's
servers: @a2a-js/sdk 1.3.0's gRPC service (on @grpc/grpc-js) and its
HTTP+JSON handler (tests/interop/upstream_agent.mjs --bindings
grpc,rest,jsonrpc: the card lists GRPC first).

- auto takes the card's first interface, gRPC: the send reaches the agent
  with no JSON-RPC or REST request;
- over each binding: send --wait completes with the agent's artifact;
  input-required, then continue --wait lands on the same task (two
  messages, one task); get; cancel of a working task reaches the agent; a
  wait subscribed to a working task (the agent saw SubscribeToTask over the
  binding) follows it over that stream to its end; an unknown task is
  refused with the code and reason JSON-RPC gives;
- a send killed after the agent answered (the answer lost) is finished by
  `once recover` over the binding: the agent (deduplicating by messageId:
  its card does not declare the idempotency extension, so the client's ID
  travels as the messageId) has one task for it.
Needs node and tests/interop's packages (scripts/deps.sh), as test_gateway.
"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, http_request, scaled, wait_until  # noqa: E402
from test_client import (FAST, ONCE, TMP, once, once_json, outbox_intents,  # noqa: E402
                         run_client_tests)
from test_gateway import Upstream, require_agent  # noqa: E402

BINDINGS = ("grpc", "http_json")


def a2a_requests(up):
    """What the agent was asked: JSON-RPC methods, "REST <VERB> <path>",
    "GRPC <Method>"."""
    return [r["method"] for r in up.requests() if r["method"]]


def artifact_texts(doc):
    return [p.get("text") for a in doc["task"].get("artifacts") or [] for p in a["parts"]]


def test_auto_takes_grpc_first():
    up = Upstream("--bindings", "grpc,rest,jsonrpc")
    try:
        outbox = os.path.join(TMP, "sdk-auto.db")
        rc, doc = once_json(outbox, "send", "--agent", up.url, "--text", "hello", "--wait", *FAST)
        eq((rc, doc.get("state")), (0, "TASK_STATE_COMPLETED"), "auto: %r" % (doc,))
        eq(artifact_texts(doc), ["hello"], "the agent's artifact")
        eq(up.counts()["tasksCreated"], 1, "one task at the agent")
        asked = a2a_requests(up)
        check("GRPC SendMessage" in asked and all(m.startswith("GRPC ") for m in asked),
              "everything over the card's first interface, gRPC: %r" % asked)
    finally:
        up.stop()


def test_each_binding():
    up = Upstream("--bindings", "grpc,rest,jsonrpc")
    try:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "sdk-%s.db" % b)
            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", up.url, "--text",
                                "ask:which?", "--wait", *FAST)
            eq((rc, doc.get("state")), (0, "TASK_STATE_INPUT_REQUIRED"), "%s ask: %r" % (b, doc))
            asked = doc["taskId"]
            rc, doc = once_json(outbox, "--binding", b, "continue", asked, "--text", "that one",
                                "--wait", *FAST)
            eq((rc, doc.get("state"), doc.get("taskId")), (0, "TASK_STATE_COMPLETED", asked),
               "%s: the continuation completes the same task: %r" % (b, doc))
            eq(up.counts()["tasks"][asked]["messages"], 2, "%s: two messages, one task" % b)
            rc, doc = once_json(outbox, "--binding", b, "get", asked)
            eq((rc, doc.get("state")), (0, "TASK_STATE_COMPLETED"), "%s: get" % b)
            eq(artifact_texts(doc), ["answer:that one"], "%s: the agent's answer" % b)

            cancels = up.counts()["cancels"]
            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", up.url, "--text",
                                "sleep:30", *FAST)
            eq(rc, 0, "%s: a long task" % b)
            rc, doc = once_json(outbox, "--binding", b, "cancel", doc["taskId"])
            eq((rc, doc.get("state")), (0, "TASK_STATE_CANCELED"), "%s: cancel: %r" % (b, doc))
            eq(up.counts()["cancels"], cancels + 1, "%s: CancelTask reached the agent" % b)

            rc, doc = once_json(outbox, "--binding", b, "send", "--agent", up.url, "--text",
                                "hold:%s" % b, *FAST)
            eq(rc, 0, "%s: a task that works until released" % b)
            held = doc["taskId"]
            w = subprocess.Popen([ONCE, "--outbox", outbox, "--json", "--binding", b, "wait", held]
                                 + FAST, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                sub = ("GRPC SubscribeToTask" if b == "grpc"
                       else "REST POST /tasks/%s:subscribe" % held)
                wait_until(lambda: sub in a2a_requests(up), timeout=15,
                           what="%s: the wait's subscription" % b)
                http_request(up.port, "POST", "/release/%s" % b)
                out, err = w.communicate(timeout=scaled(60))
            finally:
                if w.poll() is None:
                    w.kill()
                    w.wait()
            doc = json.loads(out)
            eq((w.returncode, doc.get("state"), doc.get("streamed")),
               (0, "TASK_STATE_COMPLETED", True),
               "%s: wait follows it over the stream to its end: %r %s" % (b, doc, err))

            rc, doc = once_json(outbox, "--binding", b, "get", "no-such-task", "--agent", up.url)
            eq((rc, doc["error"]["code"], doc["error"]["reason"]), (3, -32001, "TASK_NOT_FOUND"),
               "%s: an unknown task is refused as on JSON-RPC: %r" % (b, doc))
        rest = [m for m in a2a_requests(up) if m.startswith("REST ")]
        check("REST POST /message:send" in rest and "REST GET /tasks/no-such-task" in rest,
              "HTTP+JSON went over the SDK's routes: %r" % sorted(set(rest)))
        grpc_calls = set(m for m in a2a_requests(up) if m.startswith("GRPC "))
        check({"GRPC SendMessage", "GRPC GetTask", "GRPC CancelTask",
               "GRPC SubscribeToTask"} <= grpc_calls, "gRPC calls: %r" % sorted(grpc_calls))
        check(all(m.startswith(("REST ", "GRPC ")) for m in a2a_requests(up)),
              "no JSON-RPC call at all")
    finally:
        up.stop()


def test_lost_answer_recovered():
    up = Upstream("--bindings", "grpc,rest,jsonrpc", "--dedup-message-id")
    try:
        for b in BINDINGS:
            outbox = os.path.join(TMP, "sdk-lost-%s.db" % b)
            created = up.counts()["tasksCreated"]
            rc, _, err = once(outbox, "--binding", b, "send", "--agent", up.url, "--text", "once",
                              env={"ONCE_TEST_CRASH": "after-send"})
            eq(rc, -signal.SIGKILL, "%s: killed after the agent answered (%s)" % (b, err))
            eq(up.counts()["tasksCreated"], created + 1, "%s: the agent made the task" % b)
            rc, doc = once_json(outbox, "--binding", b, "recover", *FAST)
            eq((rc, doc["resent"]), (0, 1), "%s: recover resends it (%r)" % (b, doc))
            eq(up.counts()["tasksCreated"], created + 1, "%s: still one task" % b)
            eq(up.counts()["replays"], BINDINGS.index(b) + 1, "%s: the agent replayed it" % b)
            states = [i["state"] for i in outbox_intents(outbox)]
            check(states in (["acknowledged"], ["final"]),
                  "%s: the intent is answered, no longer pending: %r" % (b, states))
    finally:
        up.stop()


if __name__ == "__main__":
    require_agent()
    run_client_tests([test_auto_takes_grpc_first, test_each_binding, test_lost_answer_recovered])
