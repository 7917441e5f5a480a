"""Operating onced: versions, health and readiness probes, Prometheus
metrics, structured logs with trace context, and a graceful shutdown.
Issue 14 ("operable in production")."""
import json
import os
import re
import subprocess

from harness import (EXT, ONCED, ROOT, Onced, check, eq, http_get, run, scaled, user_message)

ONCE = os.path.join(os.path.dirname(ONCED), "once")


def project_version():
    """The version CMakeLists.txt's project() declares: the one definition."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*once\s+VERSION\s+([0-9][0-9.]*)", f.read())
    check(m is not None, "CMakeLists.txt declares project(once VERSION x.y.z)")
    return m.group(1)


def test_version():
    want = project_version()
    for prog, name in ((ONCED, "onced"), (ONCE, "once")):
        out = subprocess.run([prog, "--version"], capture_output=True, text=True,
                             timeout=scaled(10))
        eq(out.returncode, 0, "%s --version exit status" % name)
        eq(out.stdout, "%s %s\n" % (name, want), "%s --version" % name)
    # The agent card carries the same version (libonce's once_version()).
    with Onced() as srv:
        st, _, body = http_get(srv.port, "/.well-known/agent-card.json")
        eq(st, 200, "agent card")
        eq(json.loads(body)["version"], want, "agent card version")


if __name__ == "__main__":
    run([test_version])
