"""The nesting limit on supplied values (docs/wire.md "Limits"): message and
part metadata, part data, request metadata, and what an --exec agent puts in
artifacts and status messages nest at most 32 levels deep.

A value at the limit is served back intact through every envelope it can
appear in: the SendMessage result, GetTask, a ListTasks page, SSE
(SendStreamingMessage and SubscribeToTask), a webhook body and the --exec
input line of the next turn. One level more is refused up front: -32602
naming the field and the limit, nothing stored; an agent line over it fails
its task with a reason that names the limit. Before the limit existed, data
58 deep ran its task and then answered HTTP 500 "out of memory" with id
null, 59 deep stored nothing and answered 500, and 57 deep made every later
ListTasks of its principal answer 500.
"""
import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Onced, check, eq, error_info, generation, new_id, run, scaled, scratch_dir,
                     user_message, wait_until)
from test_sse import Stream

LIMIT = 32
TMP = scratch_dir("once-limits-")
DUMP = os.path.join(TMP, "inputs")

# Writes its input line to $DUMP/<task>-<n>, then echoes the message's data
# part in an artifact and in an input-required status message. Text "over"
# wraps the data one level deeper first.
AGENT = r'''
import json, os, sys
line = sys.stdin.readline()
task = os.environ["ONCE_TASK_ID"]
n = len([f for f in os.listdir(os.environ["DUMP"]) if f.startswith(task + "-")])
with open(os.path.join(os.environ["DUMP"], "%s-%d" % (task, n)), "w") as f:
    f.write(line)
msg = json.loads(line)["message"]
data = [p["data"] for p in msg["parts"] if "data" in p][0]
text = [p["text"] for p in msg["parts"] if "text" in p][0]
if text == "over":
    data = {"k": data}
print(json.dumps({"artifact": {"parts": [{"data": data}], "metadata": data}}), flush=True)
print(json.dumps({"status": "input-required",
                  "message": {"parts": [{"data": data}], "metadata": data}}), flush=True)
'''

srv = None
hooks = []          # webhook bodies received
hook_cv = threading.Condition()


def nest(depth, obj=True):
    """A value nesting depth levels deep (objects and arrays in turn; the
    outermost an object)."""
    if depth == 0:
        return "leaf"
    return {"k": nest(depth - 1, False)} if obj else [nest(depth - 1, True)]


def depth_of(v):
    if isinstance(v, dict):
        return 1 + max([depth_of(x) for x in v.values()] or [0])
    if isinstance(v, list):
        return 1 + max([depth_of(x) for x in v] or [0])
    return 0


def deep_message(text, depth, task_id=None, where="data"):
    part = {"data": nest(LIMIT)}
    msg = user_message(text, task_id=task_id)
    msg["parts"].append(part)
    if where == "data":
        part["data"] = nest(depth)
    elif where == "part-metadata":
        part["metadata"] = nest(depth)
    elif where == "message-metadata":
        msg["metadata"] = nest(depth)
    return msg


def check_task(task, what, running=False):
    """The data the request carried, in history, the artifact and the status
    message (none while a turn runs), each exactly as sent."""
    want = nest(LIMIT)
    hist = [p["data"] for m in task.get("history", []) for p in m["parts"] if "data" in p]
    check(hist and all(h == want for h in hist), "%s: history data intact" % what)
    eq(task["artifacts"][0]["parts"][0]["data"], want, what + ": artifact data")
    eq(task["artifacts"][0]["metadata"], want, what + ": artifact metadata")
    if running:
        eq(task["status"]["state"], "TASK_STATE_WORKING", what + ": state")
        return
    eq(task["status"]["message"]["parts"][0]["data"], want, what + ": status message data")
    eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", what + ": state")


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with hook_cv:
            hooks.append(json.loads(body))
            hook_cv.notify_all()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_at_the_limit_every_path():
    tid = "t-lim-" + new_id()
    hook_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook_srv.serve_forever, daemon=True).start()
    try:
        msg = deep_message("at", LIMIT, task_id=tid)
        msg["metadata"] = nest(LIMIT)
        msg["parts"][1]["metadata"] = nest(LIMIT)
        conf = {"url": "http://127.0.0.1:%d/hook" % hook_srv.server_address[1]}
        st, _, doc = srv.rpc("SendMessage", {"message": msg, "metadata": nest(LIMIT),
                                             "configuration": {"taskPushNotificationConfig": conf}},
                             ext=True, rid=77)
        eq((st, doc.get("id")), (200, 77), "SendMessage at the limit: HTTP 200 with its id")
        check("result" in doc, "SendMessage at the limit answers a result: %r" % str(doc)[:300])
        check_task(doc["result"]["task"], "SendMessage")

        st, _, doc = srv.rpc("GetTask", {"id": tid})
        eq(st, 200, "GetTask: HTTP status")
        check_task(doc["result"], "GetTask")
        asked = generation(doc["result"])

        st, _, doc = srv.rpc("ListTasks", {"pageSize": 100, "includeArtifacts": True})
        eq(st, 200, "ListTasks: HTTP status")
        mine = [t for t in doc["result"]["tasks"] if t["id"] == tid]
        eq(len(mine), 1, "ListTasks lists the task")
        check_task(mine[0], "ListTasks")

        # The task asks, so the subscription stays open past its events
        # (docs/wire.md, "Streaming"): read up to the task's generation.
        s = Stream(srv.port, "SubscribeToTask", {"id": tid}, headers={"Last-Event-ID": "0"})
        check(s.sse, "SubscribeToTask replays as a stream: %r" % (s.doc,))
        evs = []
        while not evs or evs[-1]["id"] < asked:
            ev = s.next()
            check(ev is not None, "the replay reaches generation %d" % asked)
            evs.append(ev)
        evs = [e["data"]["result"] for e in evs]
        s.close()
        arts = [e["artifactUpdate"] for e in evs if "artifactUpdate" in e]
        ups = [e["statusUpdate"] for e in evs if "statusUpdate" in e]
        eq(arts[0]["artifact"]["parts"][0]["data"], nest(LIMIT), "SSE artifactUpdate data")
        eq(ups[-1]["status"]["message"]["parts"][0]["data"], nest(LIMIT),
           "SSE statusUpdate message data")

        # the next turn's --exec input carries the whole task, with the data
        st, _, doc = srv.rpc("SendMessage", {"message": deep_message("again", LIMIT, task_id=tid)},
                             ext=True)
        eq(st, 200, "continuation at the limit: HTTP status")
        check("result" in doc, "continuation answers a result")
        with open(os.path.join(DUMP, tid + "-1")) as f:
            line = json.loads(f.readline())
        check_task(line["task"], "--exec input of the second turn", running=True)
        agent_said = [m for m in line["task"]["history"] if m["role"] == "ROLE_AGENT"]
        eq(agent_said[0]["parts"][0]["data"], nest(LIMIT), "--exec input: the agent's question")
        eq(line["message"]["parts"][1]["data"], nest(LIMIT), "--exec input: message data")

        # a webhook body is a StreamResponse: the artifact arrives whole
        def got_artifact():
            with hook_cv:
                return [h for h in hooks if "artifactUpdate" in h]
        arts = wait_until(got_artifact, timeout=15, what="a webhook with the artifact")
        eq(arts[0]["artifactUpdate"]["artifact"]["parts"][0]["data"], nest(LIMIT),
           "webhook artifactUpdate data")
    finally:
        hook_srv.shutdown()
        hook_srv.server_close()

    # a streaming send of a new task at the limit
    s = Stream(srv.port, "SendStreamingMessage", {"message": deep_message("at", LIMIT)},
               headers={"A2A-Extensions": "urn:once:a2a:idempotency:v1"})
    check(s.sse, "SendStreamingMessage at the limit opens a stream: %r" % (s.doc,))
    evs = [e["data"] for e in s.rest()]
    s.close()
    check(all("result" in e for e in evs), "every SSE event is a result")
    ups = [e["result"]["statusUpdate"] for e in evs if "statusUpdate" in e["result"]]
    eq(ups[-1]["status"]["message"]["parts"][0]["data"], nest(LIMIT),
       "SendStreamingMessage statusUpdate data")


def refused(params, field, what):
    tid = params["message"].get("taskId")
    st, _, doc = srv.rpc("SendMessage", params, ext=True, rid=5)
    eq((st, doc.get("id")), (200, 5), what + ": HTTP 200 with the request's id")
    code, reason, meta = error_info(doc)
    eq((code, reason, meta.get("field")), (-32602, "INVALID_PARAMS", field), what)
    check(str(LIMIT) in doc["error"]["message"], what + ": names the limit: %r" % doc["error"])
    if tid:
        st, _, doc = srv.rpc("GetTask", {"id": tid})
        eq(error_info(doc)[0], -32001, what + ": nothing stored")


def test_over_the_limit_refused():
    for depth in (LIMIT + 1, 57, 58, 59):
        refused({"message": deep_message("x", depth, task_id="t-deep-" + new_id())},
                "message.parts[1].data", "data %d deep" % depth)
    refused({"message": deep_message("x", LIMIT + 1, "t-" + new_id(), "part-metadata")},
            "message.parts[1].metadata", "part metadata too deep")
    refused({"message": deep_message("x", LIMIT + 1, "t-" + new_id(), "message-metadata")},
            "message.metadata", "message metadata too deep")
    refused({"message": deep_message("x", LIMIT, "t-" + new_id()), "metadata": nest(LIMIT + 1)},
            "metadata", "request metadata too deep")
    # the streaming send validates the same way, before a stream opens
    s = Stream(srv.port, "SendStreamingMessage", {"message": deep_message("x", LIMIT + 1)})
    check(not s.sse, "SendStreamingMessage over the limit opens no stream")
    eq(error_info(s.doc)[:1], (-32602,), "SendStreamingMessage over the limit")
    st, _, doc = srv.rpc("ListTasks", {"pageSize": 100, "includeArtifacts": True})
    eq(st, 200, "ListTasks still answers")


def test_agent_over_the_limit_fails_its_task():
    tid = "t-agent-" + new_id()
    st, _, doc = srv.rpc("SendMessage", {"message": deep_message("over", LIMIT, task_id=tid)},
                         ext=True)
    eq(st, 200, "SendMessage: HTTP status")
    task = doc["result"]["task"]
    eq(task["status"]["state"], "TASK_STATE_FAILED", "the task failed")
    reason = task["status"]["message"]["parts"][0]["text"]
    check("deeper than %d levels" % LIMIT in reason and "artifact" in reason,
          "the reason names the field and the limit: %r" % reason)
    check("out of memory" not in reason, "not as out of memory: %r" % reason)
    check(not task.get("artifacts"), "nothing of the line was stored")
    st, _, doc = srv.rpc("ListTasks", {"pageSize": 100, "includeArtifacts": True})
    eq(st, 200, "ListTasks still answers")


def main():
    global srv
    os.makedirs(DUMP, exist_ok=True)
    agent = os.path.join(TMP, "agent.py")
    with open(agent, "w") as f:
        f.write(AGENT)
    srv = Onced(["--exec", "%s %s" % (sys.executable, agent), "--push-allow", "127.0.0.1/32"],
                env={"DUMP": DUMP}, tmpdir=TMP)
    check(depth_of(nest(LIMIT)) == LIMIT, "the test's values nest as intended")
    try:
        run([test_at_the_limit_every_path, test_over_the_limit_refused,
             test_agent_over_the_limit_fails_its_task])
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
