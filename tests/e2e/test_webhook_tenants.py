"""Tenants and webhooks (docs/protocol.md, "The webhook trust model"): three
principals on one onced (--auth-tokens), one push secret, and Alice's
`once listen --token tok-alice`.

- Carol, who shares Alice's receiver and token (two tenants, one receiver),
  sends her own `job-1` first: her events are handed over as her
  subscription's;
- Alice's real `job-1` events are then handed over too, each once, in
  order: another principal's task of the same ID neither injects into nor
  suppresses hers (before, they were answered 2xx and dropped as
  duplicates of Carol's);
- Bob sends his own task `job-1` with a push config pointing at Alice's
  receiver (he does not know her token): every delivery is refused, none
  reaches her handler, and his config is not disabled by it (only 410 does).
"""
import base64
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness
from harness import (ROOT, Onced, check, eq, result_task, run, scaled, scratch_dir, user_message,
                     wait_until)

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
ONCE = os.path.join(BUILD, "once")
TMP = scratch_dir("once-tenants-")
SECRET = "whsec_" + base64.b64encode(b"tenants-e2e-secret-0123456789ab").decode()
BEARER = {"alice": "bearer-alice-0123456789", "bob": "bearer-bob-0123456789",
          "carol": "bearer-carol-0123456789"}
ALICE_TOKEN = "tok-alice"


def handled(path):
    """[(subscription, task, generation, body)] as the handler recorded them
    (a line still being written has no newline yet and is left out)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = f.read().split("\n")[:-1]
    return [(s, t, int(g), b) for s, t, g, b in (ln.split(" ", 3) for ln in lines if ln)]


def test_tenants_apart():
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("".join("%s %s\n" % (b, p) for p, b in BEARER.items()))
    log = os.path.join(TMP, "alice-handled.log")
    cmd = ('printf "%%s %%s %%s " "$ONCE_SUBSCRIPTION" "$ONCE_TASK_ID" "$ONCE_GENERATION" >> %s;'
           ' tr -d "\\n" >> %s; echo >> %s' % (log, log, log))
    lst = subprocess.Popen([ONCE, "listen", "--port", "0", "--secret", SECRET,
                            "--token", ALICE_TOKEN, "--state", os.path.join(TMP, "alice.db"),
                            "--exec", cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    line = lst.stderr.readline()
    check("listening on http://127.0.0.1:" in line, "once listen prints its URL: %r" % line)
    url = "http://127.0.0.1:%s/hook" % line.split("http://127.0.0.1:")[1].split("/")[0]
    srv = Onced(["--auth-tokens", tokens, "--push-allow", "127.0.0.1/32", "--push-secret",
                 SECRET, "--push-timeout", "2s", "--push-backoff", "50ms",
                 "--push-attempts", "2"], tmpdir=scratch_dir())

    def send(who, token):
        st, _, doc = srv.rpc("SendMessage",
                             {"message": user_message("hello", task_id="job-1"),
                              "configuration": {"taskPushNotificationConfig":
                                                {"url": url, "token": token}}},
                             ext=True, token=BEARER[who])
        eq(result_task(doc)["status"]["state"], "TASK_STATE_COMPLETED", who + "'s job-1")

    def delivery(who):
        st, _, doc = srv.rpc("ListTaskPushNotificationConfigs", {"taskId": "job-1"}, ext=True,
                             token=BEARER[who])
        return doc["result"]["configs"][0]["delivery"]

    def generation(who):
        st, _, doc = srv.rpc("GetTask", {"id": "job-1"}, token=BEARER[who])
        return harness.generation(result_task(doc, "GetTask"))

    try:
        send("carol", ALICE_TOKEN)
        gen_c = generation("carol")
        wait_until(lambda: len(handled(log)) >= gen_c, timeout=20,
                   what="Carol's events handed over")
        send("alice", ALICE_TOKEN)
        gen_a = generation("alice")
        wait_until(lambda: len(handled(log)) >= gen_c + gen_a, timeout=20,
                   what="Alice's events handed over after Carol's job-1")
        wait_until(lambda: delivery("alice")["deliveredGeneration"] == gen_a, timeout=20,
                   what="onced to record Alice's deliveries")
        send("bob", "a-guess")
        # Bob's first event is refused again and again, past --push-attempts.
        wait_until(lambda: delivery("bob")["failures"] >= 3, timeout=20,
                   what="Bob's deliveries to be tried and refused")
        d = delivery("bob")
        eq((d["deliveredGeneration"], d["disabled"]), (0, False),
           "none of Bob's events accepted; his config not disabled by the refusals")
        check("401" in d["lastError"], "the refusal is visible to Bob: %r" % d)
    finally:
        srv.stop()
        lst.send_signal(signal.SIGTERM)
        lst.communicate(timeout=scaled(10))
    rows = handled(log)
    subs = []
    for s, _, _, _ in rows:
        if s not in subs:
            subs.append(s)
    eq(len(subs), 2, "two subscriptions were handed over (Carol's, Alice's): %r" % subs)
    carol = [(t, g) for s, t, g, _ in rows if s == subs[0]]
    alice = [(t, g) for s, t, g, _ in rows if s == subs[1]]
    eq(carol, [("job-1", g) for g in range(1, gen_c + 1)], "Carol's job-1: each event once")
    eq(alice, [("job-1", g) for g in range(1, gen_a + 1)],
       "Alice's job-1: each event once, in order, none taken for Carol's duplicate")
    eq(len(rows), gen_c + gen_a, "nothing of Bob's reached Alice's handler")


if __name__ == "__main__":
    if not os.path.exists(ONCE):
        print("FAIL: %s is missing (build first)" % ONCE, file=sys.stderr)
        sys.exit(1)
    run([test_tenants_apart])
