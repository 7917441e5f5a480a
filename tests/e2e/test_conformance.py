"""A2A 1.0 to the letter (docs/wire.md): what strict A2A 1.0 clients and the
conformance suite (a2aproject/a2a-tck) require of a real onced, beyond what
test_wire checks. Each test names the rule it holds onced to.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, Onced, check, eq, generation, result_task, run, scratch_dir,
                     user_message)
from test_sse import Stream

TMP = scratch_dir("once-conformance-")


def inner(result):
    """The one object of a StreamResponse ({"task": T} -> T)."""
    eq(len(result), 1, "a StreamResponse has exactly one member: %r" % (result,))
    return next(iter(result.values()))


def test_generation_only_in_metadata():
    """A2A 1.0 objects have no generation member (strict ProtoJSON readers
    refuse unknown members): Task, TaskStatusUpdateEvent and
    TaskArtifactUpdateEvent carry it in metadata under the extension's URI,
    and the SSE id: line stays the generation."""
    with Onced(tmpdir=TMP, store="memory:") as s:
        _, _, doc = s.rpc("SendMessage", {"message": user_message("hello")})
        task = result_task(doc, "SendMessage")
        check("generation" not in task, "no generation member on the Task: %r" % (task,))
        gen = generation(task)
        check(isinstance(gen, int) and gen >= 3, "metadata[%s].generation: %r" % (EXT, task))
        _, _, doc = s.rpc("GetTask", {"id": task["id"]})
        got = result_task(doc, "GetTask")
        check("generation" not in got, "GetTask: no generation member")
        eq(generation(got), gen, "GetTask: the same generation, in metadata")
        _, _, doc = s.rpc("ListTasks", {})
        for t in doc["result"]["tasks"]:
            check("generation" not in t and generation(t) >= 1, "ListTasks: %r" % (t,))
        st = Stream(s.port, "SendStreamingMessage", {"message": user_message("streamed")})
        evs = st.rest()
        st.close()
        kinds = [next(iter(e["data"]["result"])) for e in evs]
        check({"task", "statusUpdate", "artifactUpdate"} <= set(kinds),
              "the stream has every kind of event: %r" % kinds)
        for ev in evs:
            body = inner(ev["data"]["result"])
            check("generation" not in body, "no generation member on an event: %r" % (body,))
            eq(generation(body), ev["id"], "the event's metadata generation is its id: line")


def infos(doc):
    """(reason, domain) of every ErrorInfo of an error response, in order."""
    return [(d.get("reason"), d.get("domain")) for d in doc["error"].get("data") or []
            if d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo"]


def test_error_info_domains():
    """A2A 1.0 section 9.5: an A2A error carries an ErrorInfo whose reason is
    the A2A error type and whose domain is a2a-protocol.org; once's finer
    reason follows it (domain once); errors outside A2A's list carry once's."""
    with Onced(tmpdir=TMP, store="memory:") as s:
        _, _, doc = s.rpc("GetTask", {"id": "t-nope"})
        eq(infos(doc), [("TASK_NOT_FOUND", "a2a-protocol.org")], "an unknown task")
        eq(doc["error"]["data"][0]["metadata"], {"taskId": "t-nope"}, "with its metadata")
        msg = user_message("hello")
        _, _, done = s.rpc("SendMessage", {"message": msg})
        tid = result_task(done)["id"]
        _, _, doc = s.rpc("SendMessage", {"message": user_message("more", task_id=tid)})
        eq(infos(doc), [("UNSUPPORTED_OPERATION", "a2a-protocol.org"), ("TASK_TERMINAL", "once")],
           "a message for a finished task: A2A's type, then once's reason")
        eq(doc["error"]["code"], -32004, "UnsupportedOperationError")
        msg["parts"] = [{"text": "other content"}]
        _, _, doc = s.rpc("SendMessage", {"message": msg})
        eq(infos(doc), [("MESSAGE_ID_REUSED", "once")], "a reused messageId (-32602)")
        _, _, doc = s.rpc("GetTask", {"id": tid}, version="0.3")
        eq(infos(doc), [("VERSION_NOT_SUPPORTED", "a2a-protocol.org")], "an unsupported version")


if __name__ == "__main__":
    run([test_generation_only_in_metadata, test_error_info_domains])
