"""The conformance kit (conformance/run.py) against real servers, for ctest
(tests/conformance/tests.cmake):

    run_onced.py memory | sqlite | STORE_URL   onced on that store
    run_onced.py gateway                       onced --upstream in front of the
                                               @a2a-js/sdk agent upstream_agent.mjs
    run_onced.py negative                      upstream_agent.mjs itself (it does
                                               not declare the extension): the
                                               kit must fail

STORE_URL is a shared test server's (postgres://, redis://, dynamodb://, as
tests/replicas does): a fresh schema / key prefix / table per run.

onced runs with two bearer tokens (IDEM-SCOPE-1), a retention of a few
seconds (scaled by ONCE_TEST_TIMEOUT_FACTOR, so that the kit's reads of a
finished task stay inside it on a slow machine) and a long tombstone, so the
kit's --retention-seconds checks (IDEM-RET-1/2, IDEM-DEC-5) see tasks expire
in real time; the sweeper runs every second. The kit gets the echo agent's
conventions ("ask:Q" asks, "sleep:N" works N s; the upstream agent has the
same) through --ask-text and --slow-text: the kit itself assumes none.

The kit's output is passed through and so is its exit status (0: every
check passed). In the negative mode the exit status is 0 only when the kit
exited 1 with FAIL lines, among them the identifiers a plain A2A server
cannot pass (NEGATIVE_MUST_FAIL).
"""
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "e2e"))
sys.path.insert(0, os.path.join(TESTS, "replicas"))
from harness import ROOT, TIMEOUT_FACTOR, Onced, scaled, scratch_dir  # noqa: E402

KIT = os.path.join(ROOT, "conformance", "run.py")
TOKENS = (("conformance-token-one", "conformance-one"), ("conformance-token-two", "conformance-two"))
# Seconds a finished task is kept: long enough for the kit's reads of one
# task, short enough that the expiry checks wait little.
RETENTION = int(math.ceil(4 * TIMEOUT_FACTOR))
SLOW = int(math.ceil(10 * TIMEOUT_FACTOR))
NEGATIVE_MUST_FAIL = ("IDEM-CARD-1", "IDEM-ACT-1", "IDEM-ID-2", "IDEM-ID-4", "IDEM-DEC-1",
                      "IDEM-REP-1")


def kit(url, *extra):
    """Run the kit; its lines go to our stdout as they come. Returns
    (exit status, output)."""
    cmd = [sys.executable, KIT, url] + list(extra)
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = []
    for line in iter(p.stdout.readline, b""):
        text = line.decode("utf-8", "replace")
        out.append(text)
        sys.stdout.write(text)
        sys.stdout.flush()
    try:
        rc = p.wait(scaled(60))
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    return rc, "".join(out)


def tokens_file(tmp):
    path = os.path.join(tmp, "tokens")
    with open(path, "w") as f:
        for tok, principal in TOKENS:
            f.write("%s %s\n" % (tok, principal))
    return path


def onced_args(tmp):
    return ["--auth-tokens", tokens_file(tmp), "--retention", "%ds" % RETENTION,
            "--tombstone-retention", "1h"]


def kit_args(ask="ask:Is this the conformance kit?", slow="sleep:%d" % SLOW, retention=True):
    a = ["--token", TOKENS[0][0], "--token2", TOKENS[1][0], "--ask-text", ask,
         "--slow-text", slow]
    if retention:
        a += ["--retention-seconds", str(RETENTION)]
    return a


def stopped(*procs):
    """Stop every process; the first error (a sanitizer report in onced's
    log) after all are stopped."""
    first = None
    for p in procs:
        try:
            p.stop()
        except Exception as ex:
            first = first or ex
    if first is not None:
        print("FAIL: stopping: %s" % first, flush=True)
        return 1
    return 0


def run_onced(store_arg):
    tmp = scratch_dir("once-conformance-")
    if store_arg == "memory":
        store = "memory:"
    elif store_arg == "sqlite":
        store = "sqlite:" + os.path.join(tmp, "registry.db")
    else:
        from fleet import namespaced
        store = namespaced(store_arg, "conformance")
    srv = Onced(onced_args(tmp), store=store, tmpdir=tmp)
    rc = 1
    try:
        rc, _ = kit("http://127.0.0.1:%d/" % srv.port, *kit_args())
    finally:
        rc = stopped(srv) or rc
    return rc


def run_gateway():
    from test_gateway import Upstream
    tmp = scratch_dir("once-conformance-gw-")
    up = Upstream()
    gw = None
    rc = 1
    try:
        gw = Onced(["--upstream", up.url, "--lease", "2s"] + onced_args(tmp),
                   store="sqlite:" + os.path.join(tmp, "registry.db"), tmpdir=tmp)
        rc, _ = kit("http://127.0.0.1:%d/" % gw.port, *kit_args())
    finally:
        rc = stopped(*[p for p in (gw, up) if p is not None]) or rc
    return rc


def run_negative():
    from test_gateway import Upstream
    up = Upstream()
    try:
        rc, out = kit(up.url, *kit_args(retention=False))
    finally:
        up.stop()
    failed = sorted(set(re.findall(r"^FAIL (IDEM-[A-Z0-9-]+) ", out, re.M)))
    passed = sorted(set(re.findall(r"^PASS (IDEM-[A-Z0-9-]+) ", out, re.M)))
    print("negative control: the kit exited %d; identifiers with a FAIL: %s" % (
        rc, " ".join(failed) or "none"), flush=True)
    print("negative control: identifiers with a PASS: %s" % (" ".join(passed) or "none"),
          flush=True)
    missing = [i for i in NEGATIVE_MUST_FAIL if i not in failed]
    if rc != 1 or not failed or missing:
        print("FAIL: against a server without the extension the kit must exit 1 with FAIL lines "
              "for %s (exit %d, missing %s)" % (", ".join(NEGATIVE_MUST_FAIL), rc, missing),
              flush=True)
        return 1
    print("negative control: ok (the kit refuses a plain A2A 1.0 server)", flush=True)
    return 0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_onced.py memory|sqlite|STORE_URL|gateway|negative")
    mode = sys.argv[1]
    if mode == "gateway":
        return run_gateway()
    if mode == "negative":
        return run_negative()
    return run_onced(mode)


if __name__ == "__main__":
    sys.exit(main())
