"""`cmake --install` into a fresh prefix, then build against that tree alone.

Checked:
  - the prefix holds onced, once, libonce.a and libonce.so, the public
    headers (server.h among them), once.pc, onceConfig.cmake and
    onceConfigVersion.cmake, LICENSE and CHANGELOG.md; the installed
    binaries run (--version), and the newest CHANGELOG entry names the
    version they print; `pkg-config --cflags once` is the prefix's include
    dir alone (with --static too), and `--static --libs` names what
    libonce.a links;
  - examples/c_agent.c and tests/packaging/tiny_client.c, copied out of the
    source tree, build with `pkg-config --cflags --libs once` (the agent
    adds jansson, its own choice) and link the installed libonce.so;
  - the same two build in a CMake project with find_package(once): the
    agent on once::once, the client on once::once_static;
  - each built agent serves, and each built client's send gets an answer
    from it (the agent's `parts` route completes the task).

Python 3 standard library; cc, cmake and pkg-config.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import Onced, check, eq, free_port, run, scaled, scratch_dir  # noqa: E402

SOURCE = os.environ.get("ONCE_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BUILD = os.environ.get("ONCE_BUILD", os.path.join(SOURCE, "build"))
CFLAGS = os.environ.get("ONCE_CONSUMER_CFLAGS", "").split()
TMP = scratch_dir("once-install-")
PREFIX = os.path.join(TMP, "prefix")
WORK = os.path.join(TMP, "src")


def sh(args, env=None, what=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(args, capture_output=True, text=True, env=e, timeout=scaled(240))
    check(p.returncode == 0, "%s failed (%d): %s%s" % (what or " ".join(args), p.returncode,
                                                       p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def pkg_config(*args):
    return sh(["pkg-config"] + list(args),
              env={"PKG_CONFIG_PATH": os.path.join(PREFIX, "lib", "pkgconfig")}).split()


class Agent(Onced):
    """A built c_agent on a free port with the memory store, started and
    stopped like onced (same readiness check, same sanitizer check)."""

    def __init__(self, exe):
        self.tmp = TMP
        self.port = free_port()
        self.args = [exe, "--listen", "127.0.0.1:%d" % self.port, "--store", "memory:"]
        self.log = open(os.path.join(TMP, "agent-%d.log" % self.port), "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log)
        self.wait_ready()

    def stop(self):
        super().stop()
        eq(self.proc.returncode, 0, "the agent exits 0 on SIGTERM")

    def url(self):
        return "http://127.0.0.1:%d/" % self.port


def answers(client, agent):
    out = sh([client, agent.url(), "parts"], what=client)
    words = out.split()
    eq(words[:2], ["ok", "TASK_STATE_COMPLETED"], "%s: the agent completed the task" % client)
    check(len(words) == 3 and len(words[2]) == 26, "%s: with a minted ULID: %r" % (client, out))


def test_install_tree():
    sh(["cmake", "--install", BUILD, "--prefix", PREFIX], what="cmake --install")
    for rel in ("bin/once", "sbin/onced", "lib/libonce.a", "lib/libonce.so",
                "include/once/once.h", "include/once/server.h", "include/once/executor.h",
                "include/once/store.h", "include/once/client.h", "include/once/webhook.h",
                "include/once/webhook_sig.h",
                "lib/pkgconfig/once.pc", "lib/cmake/once/onceConfig.cmake",
                "lib/cmake/once/onceConfigVersion.cmake", "share/doc/once/LICENSE",
                "share/doc/once/CHANGELOG.md", "share/doc/once/prometheus-alerts.yml",
                "share/doc/once/grafana-dashboard.json"):
        check(os.path.exists(os.path.join(PREFIX, rel)), "installed: " + rel)
    version = sh([os.path.join(BUILD, "onced"), "--version"]).strip()
    eq(sh([os.path.join(PREFIX, "sbin/onced"), "--version"]).strip(), version, "onced runs")
    eq(sh([os.path.join(PREFIX, "bin/once"), "--version"]).split()[1], version.split()[1],
       "once runs")
    eq(pkg_config("--modversion", "once"), [version.split()[1]], "once.pc's version")
    # once's headers include only libc's: a consumer's Cflags are the
    # prefix's include dir alone, never a backend's (libpq's, hiredis').
    include = os.path.join(PREFIX, "include")
    for args in (["--cflags"], ["--static", "--cflags"]):
        got = pkg_config(*(args + ["once"]))
        eq([os.path.normpath(f[2:]) if f.startswith("-I") else f for f in got], [include],
           "pkg-config %s once: -I of the prefix's include dir alone (%r)" % (" ".join(args), got))
    libs = pkg_config("--static", "--libs", "once")
    check("-lonce" in libs and "-ljansson" in libs and "-lsqlite3" in libs,
          "pkg-config --static --libs once names what libonce.a links: %r" % libs)
    with open(os.path.join(PREFIX, "share/doc/once/CHANGELOG.md")) as f:
        newest = next(line for line in f if line.startswith("## ["))
    eq(newest.split("]")[0][4:], version.split()[1], "the newest CHANGELOG entry")


def copy_sources():
    os.makedirs(WORK, exist_ok=True)
    shutil.copy(os.path.join(SOURCE, "examples", "c_agent.c"), WORK)
    shutil.copy(os.path.join(SOURCE, "tests", "packaging", "tiny_client.c"), WORK)


def test_pkg_config_build():
    copy_sources()
    libdir = os.path.join(PREFIX, "lib")
    rpath = ["-Wl,-rpath," + libdir]
    agent, client = os.path.join(WORK, "c_agent"), os.path.join(WORK, "tiny_client")
    sh(["cc", "-std=c11", "-o", agent, os.path.join(WORK, "c_agent.c")] + CFLAGS +
       pkg_config("--cflags", "--libs", "once", "jansson") + ["-lm"] + rpath, what="cc c_agent")
    sh(["cc", "-std=c11", "-o", client, os.path.join(WORK, "tiny_client.c")] + CFLAGS +
       pkg_config("--cflags", "--libs", "once") + rpath, what="cc tiny_client")
    linked = sh(["ldd", agent])
    check(os.path.realpath(os.path.join(libdir, "libonce.so.0")) in
          [os.path.realpath(w) for w in linked.split() if w.startswith("/")],
          "c_agent links the installed libonce.so: %s" % linked)
    a = Agent(agent)
    try:
        answers(client, a)
    finally:
        a.stop()


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(once 0.1 REQUIRED CONFIG)
find_package(PkgConfig REQUIRED)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
add_executable(c_agent c_agent.c)
target_link_libraries(c_agent PRIVATE once::once PkgConfig::JANSSON m)
add_executable(tiny_client tiny_client.c)
target_link_libraries(tiny_client PRIVATE once::once_static)
"""


def test_find_package_build():
    copy_sources()
    with open(os.path.join(WORK, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT)
    out = os.path.join(TMP, "cmake-build")
    sh(["cmake", "-S", WORK, "-B", out, "-DCMAKE_PREFIX_PATH=" + PREFIX,
        "-DCMAKE_C_FLAGS=" + " ".join(CFLAGS)], what="cmake configure (find_package)")
    sh(["cmake", "--build", out, "-j2"], env={"MAKEFLAGS": ""}, what="cmake --build")
    a = Agent(os.path.join(out, "c_agent"))
    try:
        answers(os.path.join(out, "tiny_client"), a)
    finally:
        a.stop()


if __name__ == "__main__":
    run([test_install_tree, test_pkg_config_build, test_find_package_build])
