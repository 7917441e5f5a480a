"""The `once` client against an A2A 0.3 agent: @a2a-js/sdk 1.3.0 serving
0.3 only (tests/interop/upstream_agent.mjs --a2a-version 0.3: its card names
0.3 interfaces only, it refuses 1.0 requests). The client learns the
version from the card and makes the same calls under 0.3's names and
shapes, with the same outbox:

- `send --wait` completes with the agent's artifact, one task at the agent,
  and every request the agent saw is a 0.3 method (message/send, tasks/get,
  tasks/resubscribe), none a 1.0 one;
- input-required, then `continue --wait` lands on the same task (two
  messages, one task);
- `get` reads the task (tasks/get), `cancel` cancels a working one
  (tasks/cancel reaches the agent);
- `wait` follows a working task to its end over the agent's stream;
- the outbox remembers the agent as 0.3 (a later call reads no card first);
- an outbox file of the previous schema is upgraded in place.
Every wait is a bound on a condition (scaled by ONCE_TEST_TIMEOUT_FACTOR).
"""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, run  # noqa: E402
from test_client import FAST, TMP, once, once_json  # noqa: E402
from test_gateway import Upstream, require_agent  # noqa: E402

V03 = {"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"}


def a2a_methods(up):
    """The JSON-RPC methods the agent was asked, in order."""
    return [r["method"] for r in up.requests() if r["method"] and not r["method"].startswith("REST")]


def test_send_continue_get_cancel_wait():
    up = Upstream("--a2a-version", "0.3", "--bindings", "jsonrpc")
    outbox = os.path.join(TMP, "v03.db")
    try:
        rc, doc = once_json(outbox, "send", "--agent", up.url, "--text", "hello", "--wait", *FAST)
        eq((rc, doc.get("state")), (0, "TASK_STATE_COMPLETED"), "send --wait: %r" % (doc,))
        eq(up.counts()["tasksCreated"], 1, "one task at the agent")
        rc, doc = once_json(outbox, "get", doc["taskId"], *FAST)
        eq(rc, 0, "get")
        eq([p.get("text") for a in doc["task"]["artifacts"] for p in a["parts"]], ["hello"],
           "the agent's artifact, read back in 1.0 form")

        rc, doc = once_json(outbox, "send", "--agent", up.url, "--text", "ask:which?", "--wait", *FAST)
        eq((rc, doc.get("state")), (0, "TASK_STATE_INPUT_REQUIRED"), "ask: %r" % (doc,))
        asked = doc["taskId"]
        rc, doc = once_json(outbox, "continue", asked, "--text", "that one", "--wait", *FAST)
        eq((rc, doc.get("state"), doc.get("taskId")), (0, "TASK_STATE_COMPLETED", asked),
           "the continuation completes the same task: %r" % (doc,))
        eq(up.counts()["tasks"][asked]["messages"], 2, "two messages, one task")

        rc, doc = once_json(outbox, "send", "--agent", up.url, "--text", "sleep:30", *FAST)
        eq(rc, 0, "a long task acknowledged")
        slow = doc["taskId"]
        rc, doc = once_json(outbox, "cancel", slow, *FAST)
        eq((rc, doc.get("state")), (0, "TASK_STATE_CANCELED"), "cancel: %r" % (doc,))
        eq(up.counts()["cancels"], 1, "tasks/cancel reached the agent")

        rc, doc = once_json(outbox, "send", "--agent", up.url, "--text", "sleep:1", *FAST)
        eq(rc, 0, "a second long task")
        rc, doc = once_json(outbox, "wait", doc["taskId"], "--wait-timeout", "60s", *FAST)
        eq((rc, doc.get("state")), (0, "TASK_STATE_COMPLETED"), "wait follows it: %r" % (doc,))

        methods = a2a_methods(up)
        check(set(methods) <= V03, "only 0.3 methods reached the agent: %r" % sorted(set(methods)))
        check("message/send" in methods and "tasks/cancel" in methods, "%r" % methods)
        check("tasks/resubscribe" in methods or "tasks/get" in methods,
              "wait followed the task: %r" % methods)
        db = sqlite3.connect(outbox)
        eq(db.execute("SELECT a2a FROM agents WHERE agent=?", (up.url,)).fetchall(), [("0.3",)],
           "the outbox remembers the agent's version")
        db.close()
    finally:
        up.stop()


def test_old_outbox_upgraded():
    """An outbox of schema 3 (before the agents' version was kept) opens,
    is upgraded, and its cached agent entry reads as 1.0 until the card is
    read again."""
    path = os.path.join(TMP, "v3.db")
    rc, doc = once_json(path, "outbox")
    eq(rc, 0, "a fresh outbox")
    db = sqlite3.connect(path)
    db.executescript("ALTER TABLE agents DROP COLUMN a2a; ALTER TABLE agents DROP COLUMN interfaces;"
                     "ALTER TABLE intents DROP COLUMN endpoint;"
                     "DROP TABLE endpoints; PRAGMA user_version=3;"
                     "INSERT INTO agents(agent,ext,checked_ms) VALUES('http://x.invalid/',1,1);")
    db.close()
    rc, doc = once_json(path, "outbox")
    eq(rc, 0, "the schema-3 file opens")
    db = sqlite3.connect(path)
    eq(db.execute("PRAGMA user_version").fetchone()[0], 6, "upgraded to 6")
    eq(db.execute("SELECT agent, ext, a2a, interfaces FROM agents").fetchall(),
       [("http://x.invalid/", 1, None, None)],
       "the cached entry kept, its version and interfaces unknown")
    eq(db.execute("SELECT url, agent FROM endpoints").fetchall(),
       [("http://x.invalid/", "http://x.invalid/")], "its URL is its one endpoint")
    db.close()


if __name__ == "__main__":
    require_agent()
    run([test_send_continue_get_cancel_wait, test_old_outbox_upgraded])
