"""A2A 1.0 to the letter (docs/wire.md): what strict A2A 1.0 clients and the
conformance suite (a2aproject/a2a-tck) require of a real onced, beyond what
test_wire checks. Each test names the rule it holds onced to.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EXT, Onced, check, eq, error_info, generation, http_request, new_id,
                     result_task, run, scratch_dir, user_message)
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


def test_proto_field_names():
    """ProtoJSON readers accept every field under its proto name too
    (task_id beside taskId), in every params object, nested ones included;
    free-form values (metadata, data) stay as sent; one field under both
    names is -32602."""
    with Onced(["--push-allow", "127.0.0.0/8"], tmpdir=TMP, store="memory:") as s:
        ask = {"message_id": "m-" + new_id(), "role": "ROLE_USER",
               "parts": [{"text": "ask:which court?", "media_type": "text/plain",
                          "metadata": {"keep_me": 1}}],
               "metadata": {"snake_key": {"inner_key": True}}}
        _, _, doc = s.rpc("SendMessage", {"message": ask,
                                          "configuration": {"return_immediately": False,
                                                            "history_length": 1}})
        task = result_task(doc, "SendMessage with proto names")
        eq(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "it ran")
        eq(len(task["history"]), 1, "configuration.history_length applies")
        _, _, doc = s.rpc("GetTask", {"id": task["id"], "history_length": 2})
        got = result_task(doc, "GetTask")
        eq(len(got["history"]), 2, "GetTask history_length applies")
        mine = got["history"][0]
        eq((mine["messageId"], mine["parts"][0]["mediaType"]), (ask["message_id"], "text/plain"),
           "stored under the JSON names")
        eq((mine["metadata"], mine["parts"][0]["metadata"]),
           ({"snake_key": {"inner_key": True}}, {"keep_me": 1}), "metadata kept as sent")
        # A continuation naming its task and context by proto names, then the
        # same message again: one digest whatever the spelling, so a replay.
        more = {"message_id": "m-" + new_id(), "task_id": task["id"],
                "context_id": task["contextId"], "role": "ROLE_USER", "parts": [{"text": "Zurich"}]}
        _, _, doc = s.rpc("SendMessage", {"message": more})
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "continued by task_id")
        camel = {"messageId": more["message_id"], "taskId": task["id"],
                 "contextId": task["contextId"], "role": "ROLE_USER", "parts": [{"text": "Zurich"}]}
        st, hd, doc = s.rpc("SendMessage", {"message": camel})
        eq(hd.get("Idempotent-Replayed") or hd.get("idempotent-replayed"), "true",
           "the lowerCamel spelling of the same message replays it")
        _, _, doc = s.rpc("ListTasks", {"context_id": task["contextId"], "page_size": 1,
                                        "include_artifacts": True})
        eq([t["id"] for t in doc["result"]["tasks"]], [task["id"]], "ListTasks context_id")
        eq(doc["result"]["pageSize"], 1, "ListTasks page_size")
        _, _, doc = s.rpc("CreateTaskPushNotificationConfig",
                          {"task_id": task["id"], "id": "cfg-1",
                           "url": "http://127.0.0.1:9/hook",
                           "authentication": {"scheme": "Bearer"}})
        eq(doc["result"]["taskId"], task["id"], "CreateTaskPushNotificationConfig task_id")
        _, _, doc = s.rpc("GetTaskPushNotificationConfig", {"task_id": task["id"], "id": "cfg-1"})
        eq(doc["result"]["id"], "cfg-1", "GetTaskPushNotificationConfig task_id")
        _, _, doc = s.rpc("GetTask", {"id": task["id"], "historyLength": 1, "history_length": 2})
        eq(error_info(doc)[0], -32602, "both spellings of one field")
        eq(error_info(doc)[2].get("field"), "historyLength", "naming it")
        _, _, doc = s.rpc("SendMessage", {"message": dict(camel, message_id="m-x")})
        eq(error_info(doc)[2].get("field"), "message.messageId", "nested too")


def test_card_validators():
    """The agent card comes with an ETag and a Last-Modified, and a
    conditional GET whose copy is current gets 304 without a body."""
    card = "/.well-known/agent-card.json"
    with Onced(tmpdir=TMP, store="memory:") as s:
        st, hd, body = http_request(s.port, "GET", card)
        eq(st, 200, "the card")
        etag, modified = hd.get("etag"), hd.get("last-modified")
        check(etag and etag.startswith('"') and etag.endswith('"'), "a strong ETag: %r" % etag)
        check(modified and modified.endswith(" GMT"), "a Last-Modified: %r" % modified)
        for what, h in (("If-None-Match", {"If-None-Match": etag}),
                        ("a weak If-None-Match in a list", {"If-None-Match": '"x", W/' + etag}),
                        ("If-None-Match: *", {"If-None-Match": "*"}),
                        ("If-Modified-Since", {"If-Modified-Since": modified}),
                        ("a later If-Modified-Since", {"If-Modified-Since":
                                                       "Fri, 01 Jan 2100 00:00:00 GMT"})):
            st, hd304, body304 = http_request(s.port, "GET", card, headers=h)
            eq((st, body304), (304, b""), what + ": 304, no body")
            eq((hd304.get("etag"), hd304.get("last-modified")), (etag, modified),
               what + ": the same validators")
        for what, h in (("another ETag", {"If-None-Match": '"other"'}),
                        ("another ETag, beside a current date",
                         {"If-None-Match": '"other"', "If-Modified-Since": modified}),
                        ("an earlier date", {"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
                        ("a date that is not one", {"If-Modified-Since": "yesterday"})):
            st, _, again = http_request(s.port, "GET", card, headers=h)
            eq((st, again), (200, body), what + ": the whole card")


def test_plain_ids():
    """--plain-ids server: a plain first message (no extension, no taskId)
    gets a fresh server-minted task, so a reused messageId is a new task;
    with the extension, sends dedup in both modes. The default derives the
    ID from the messageId: the same plain message replays."""
    for mode in ("server", "derived"):
        with Onced(["--plain-ids", mode], tmpdir=TMP, store="memory:") as s:
            msg = user_message("hello")
            ids = []
            for _ in range(2):
                st, hd, doc = s.rpc("SendMessage", {"message": msg})
                ids.append(result_task(doc, mode)["id"])
            eq(ids[0] == ids[1], mode == "derived",
               "--plain-ids %s: the same plain message twice is %s task" %
               (mode, "one" if mode == "derived" else "a new"))
            msg["parts"] = [{"text": "other content"}]
            _, _, doc = s.rpc("SendMessage", {"message": msg})
            if mode == "server":
                check(result_task(doc)["id"] not in ids, "other content: another new task")
            else:
                eq(error_info(doc)[1], "MESSAGE_ID_REUSED", "other content: refused")
            ext = user_message("hello")
            _, _, first = s.rpc("SendMessage", {"message": ext}, ext=True)
            st, hd, again = s.rpc("SendMessage", {"message": ext}, ext=True)
            eq(result_task(again)["id"], result_task(first)["id"],
               mode + ": with the extension the same message is one task")
            eq(hd.get("idempotent-replayed") or hd.get("Idempotent-Replayed"), "true",
               mode + ": and its retry replays")
            tid = "t-" + new_id()
            _, _, doc = s.rpc("SendMessage", {"message": user_message("hi", task_id=tid)},
                              ext=True)
            eq(result_task(doc)["id"], tid, mode + ": a client-minted ID registers")


def test_push_config_is_part_of_the_request():
    """configuration.taskPushNotificationConfig belongs to the request's
    digest: a retry with the same config replays and registers nothing new;
    another config (or none) under the same messageId is MESSAGE_ID_REUSED,
    for a new task and for a continuation alike, and nothing is stored."""
    def cfg(n):
        return {"id": "cfg-%d" % n, "url": "http://127.0.0.1:9/hook-%d" % n, "token": "tok"}

    def configs(tid):
        _, _, doc = s.rpc("ListTaskPushNotificationConfigs", {"taskId": tid})
        return sorted(c["url"] for c in doc["result"]["configs"])

    def send(msg, config, what):
        params = {"message": msg}
        if config is not None:
            params["configuration"] = {"taskPushNotificationConfig": config}
        st, hd, doc = s.rpc("SendMessage", params)
        return hd.get("idempotent-replayed") or hd.get("Idempotent-Replayed"), doc

    with Onced(["--push-allow", "127.0.0.0/8"], tmpdir=TMP, store="memory:") as s:
        first = user_message("ask:which court?")
        _, doc = send(first, cfg(1), "new task")
        tid = result_task(doc)["id"]
        eq(configs(tid), [cfg(1)["url"]], "the new task has its config")
        replayed, doc = send(first, cfg(1), "retry")
        eq((replayed, result_task(doc)["id"]), ("true", tid), "the same config: a replay")
        for what, other in (("another config", cfg(2)), ("no config", None)):
            replayed, doc = send(first, other, what)
            eq(error_info(doc)[:2], (-32602, "MESSAGE_ID_REUSED"), "new task, %s: refused" % what)
        eq(configs(tid), [cfg(1)["url"]], "nothing registered by the refused retries")
        more = user_message("Zurich", task_id=tid)
        _, doc = send(more, cfg(3), "continuation")
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", "continued")
        replayed, doc = send(more, cfg(3), "retried continuation")
        eq(replayed, "true", "the same continuation with the same config: a replay")
        _, doc = send(more, cfg(4), "continuation, another config")
        eq(error_info(doc)[:2], (-32602, "MESSAGE_ID_REUSED"), "continuation, another config")
        eq(configs(tid), [cfg(1)["url"], cfg(3)["url"]], "one config per accepted send")


if __name__ == "__main__":
    run([test_generation_only_in_metadata, test_error_info_domains, test_proto_field_names,
         test_card_validators, test_plain_ids, test_push_config_is_part_of_the_request])
