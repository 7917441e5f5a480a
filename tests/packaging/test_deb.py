"""The Debian packages (debian/), built, installed into this machine, run and
purged.

Checked:
  - `dpkg-buildpackage -us -uc -b` builds libonce0, libonce-dev, onced and
    once from a copy of the source tree, and lintian finds no error and no
    warning in them;
  - libonce0's libonce.so.0 has that soname and exports exactly the once_*
    symbols debian/libonce0.symbols lists (nothing else: an API added
    without its symbols line fails here);
  - installed: the version onced prints is the package's upstream version;
    `once` is a system user with no login, /var/lib/once is its and mode
    0700, /etc/once/onced.env is a conffile;
  - onced started from the INSTALLED unit's ExecStart, its variables
    expanded as systemd does from the unit's Environment= defaults and the
    installed env file, run as the unit's User= under its UMask= (there is
    no systemd to run it here), serves: the installed `once` client's send
    completes with the echoed text, and programs built against libonce-dev
    (`pkg-config once`, find_package(once)) running on the installed
    libonce.so.0 get their answers too,
    and the registry the env file names is written in /var/lib/once;
  - `dpkg --remove onced` keeps /etc/once/onced.env and the registry, and
    onced installs again over them;
  - `dpkg --purge` of the four leaves none of their files, no /etc/once,
    no /var/lib/once, no systemd enablement symlink or state, no new path
    named after once under /etc, /usr, /var or /lib; the system user
    stays, as Debian leaves system users (this test then removes it if it
    made it).

It changes the machine: it refuses to start where any of the four packages
is installed (it would replace and purge it), and undoes what it did
however it ends. Skipped (exit 77) only where dpkg-buildpackage or
debhelper is missing. Not root: it runs itself again under `sudo -n`.
Prints how long each step took; the build compiles libonce and the two
programs once (DEB_BUILD_OPTIONS=parallel=2).

Python 3 standard library; dpkg-dev, debhelper, lintian, binutils, cc,
pkg-config, adduser.
"""
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from harness import (REAP_VAR, check, eq, free_port, http_get, run, scaled,  # noqa: E402
                     scratch_dir, wait_until)

SOURCE = os.environ.get("ONCE_SOURCE", os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
PACKAGES = ["libonce0", "libonce-dev", "onced", "once"]
UNIT = "/lib/systemd/system/onced.service"
USER = "once"
STATE_DIR = "/var/lib/once"
POLICY_RC = "/usr/sbin/policy-rc.d"
TMP = scratch_dir("once-deb-")
LOG = os.path.join(TMP, "log")

# What the test did to the machine, for cleanup(); filled in as it does it.
state = {"installed": False, "made_user": False, "made_policy": False, "onced": None,
         "debs": [], "version": None, "names_before": None, "files": []}


def sh(args, timeout=120, what=None):
    """Run args; fail the check unless it exits 0; its output."""
    p = subprocess.run(args, capture_output=True, text=True, timeout=scaled(timeout))
    check(p.returncode == 0, "%s failed (%d): %s%s" % (what or " ".join(args), p.returncode,
                                                       p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


def dpkg(args, what):
    """dpkg ARGS, waiting while another apt or dpkg holds the lock (this
    machine may be installing something else)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    end = time.time() + scaled(300)
    while True:
        p = subprocess.run(["dpkg"] + args, capture_output=True, text=True, env=env,
                           timeout=scaled(300))
        if p.returncode == 0 or "lock" not in p.stderr or time.time() > end:
            break
        time.sleep(1)
    check(p.returncode == 0, "%s failed (%d): %s%s" % (what, p.returncode, p.stdout[-3000:],
                                                       p.stderr[-3000:]))
    return p.stdout


def timed(what, fn, *args):
    t = time.time()
    out = fn(*args)
    print("%-40s %6.1f s" % (what, time.time() - t), flush=True)
    return out


def status(pkg):
    """dpkg's status abbreviation of pkg ('ii', 'rc', ...), '' when unknown."""
    p = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", pkg],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


# --- the build -------------------------------------------------------------

def copy_tree(dest):
    """The source tree as git sees it (tracked and untracked files that are
    not ignored: no build directories, no node_modules), or, outside a git
    checkout, every file but those."""
    p = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                       capture_output=True, timeout=scaled(60))
    if p.returncode != 0:
        skip = shutil.ignore_patterns(".git", "build*", "obj-*", "node_modules", "__pycache__")
        shutil.copytree(SOURCE, dest, ignore=skip, symlinks=True)
        return
    for rel in p.stdout.decode().split("\0"):
        src = os.path.join(SOURCE, rel)
        if rel and os.path.lexists(src):       # not a tracked file deleted in the work tree
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)


def build():
    version = sh(["dpkg-parsechangelog", "-l", os.path.join(SOURCE, "debian", "changelog"),
                  "-S", "Version"]).strip()
    tree = os.path.join(TMP, "once-" + version.split("-")[0])
    copy_tree(tree)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["DEB_BUILD_OPTIONS"] = "nocheck parallel=2"
    with open(os.path.join(TMP, "build.log"), "w") as log:
        p = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                           stdout=log, stderr=subprocess.STDOUT, timeout=scaled(900))
    if p.returncode != 0:
        with open(os.path.join(TMP, "build.log")) as f:
            print(f.read()[-6000:], file=sys.stderr)
    eq(p.returncode, 0, "dpkg-buildpackage -us -uc -b")
    state["version"] = version
    state["debs"] = [os.path.join(TMP, "%s_%s_%s.deb" % (pkg, version, arch()))
                     for pkg in PACKAGES]
    for deb in state["debs"]:
        check(os.path.exists(deb), "built: " + os.path.basename(deb))


def arch():
    return sh(["dpkg", "--print-architecture"]).strip()


def test_build():
    timed("dpkg-buildpackage -b (parallel=2)", build)


def test_lintian():
    check(state["version"] is not None, "the packages were built")
    check(shutil.which("lintian") is not None, "lintian is installed (scripts/deps.sh installs it)")
    changes = os.path.join(TMP, "once_%s_%s.changes" % (state["version"], arch()))
    out = timed("lintian", sh, ["lintian", "--fail-on", "error,warning", changes], 600)
    said = [l for l in out.splitlines() if re.match(r"^[EW]: ", l)]
    eq(said, [], "lintian: no error and no warning")


def test_library_exports():
    check(state["version"] is not None, "the packages were built")
    lib = os.path.join(TMP, "libonce0")
    sh(["dpkg-deb", "-x", state["debs"][0], lib])
    so = sh(["find", lib, "-name", "libonce.so.0"]).split()
    eq(len(so), 1, "libonce0 holds libonce.so.0")
    dyn = sh(["readelf", "-d", so[0]])
    check("Library soname: [libonce.so.0]" in dyn, "the soname is libonce.so.0")
    got = set()
    for line in sh(["nm", "-D", "--defined-only", so[0]]).splitlines():
        got.add(line.split()[-1])
    listed = set()
    with open(os.path.join(SOURCE, "debian", "libonce0.symbols")) as f:
        for line in f:
            m = re.match(r"^ (\S+)@Base ", line)
            if m:
                listed.add(m.group(1))
    eq(sorted(s for s in got if not s.startswith("once_")), [], "only once_* exported")
    eq((sorted(got - listed), sorted(listed - got)), ([], []),
       "exports and debian/libonce0.symbols agree (new API: add its line)")


# --- install ---------------------------------------------------------------

def names_named_once():
    """Every path under /etc, /usr, /var and /lib whose name says once (onced,
    libonce, /etc/once ...): what the packages could leave behind."""
    found = set()
    roots = ["/etc", "/usr", "/var"] + ([] if os.path.islink("/lib") else ["/lib"])
    for root in roots:
        for d, dirs, files in os.walk(root):
            if d in ("/var/tmp", "/var/cache", "/var/log"):
                dirs[:] = []
                continue
            for n in dirs + files:
                if re.search(r"(^|[^a-z])(lib)?once(d|[^a-z]|$)", n):
                    found.add(os.path.join(d, n))
    return found


def install():
    check(state["version"] is not None, "the packages were built")
    for pkg in PACKAGES:
        check(status(pkg) in ("", "un", "pn"),
              "%s is not installed before the test (it is: %r; this test would replace and "
              "purge it)" % (pkg, status(pkg)))
    state["names_before"] = names_named_once()
    state["made_user"] = not user_exists(USER)
    # On a machine that runs systemd, the postinst would start onced.service
    # (port 8080): a policy-rc.d answering 101 forbids it (deb-systemd-invoke
    # asks it). One the machine has already is left alone.
    if not os.path.exists(POLICY_RC):
        with open(POLICY_RC, "w") as f:
            f.write("#!/bin/sh\n# tests/packaging/test_deb.py: start no service\nexit 101\n")
        os.chmod(POLICY_RC, 0o755)
        state["made_policy"] = True
    state["installed"] = True
    dpkg(["-i"] + state["debs"], "dpkg -i")
    for pkg in PACKAGES:
        eq(status(pkg), "ii", pkg + " installed")
        state["files"] += [f for f in dpkg(["-L", pkg], "dpkg -L").splitlines()
                           if not os.path.isdir(f)]


def test_install():
    timed("dpkg -i (four packages)", install)
    version = sh(["/usr/sbin/onced", "--version"]).split()[1]
    eq(version, state["version"].split("-")[0], "onced --version is the package's upstream version")
    eq(sh(["/usr/bin/once", "--version"]).split()[1], version, "the installed once runs")
    eq(sh(["pkg-config", "--modversion", "once"]).strip(), version, "once.pc")
    u = pwd.getpwnam(USER)
    check(u.pw_uid < 1000, "%s is a system user (uid %d)" % (USER, u.pw_uid))
    check(u.pw_shell in ("/usr/sbin/nologin", "/bin/false"), "%s cannot log in: %s" %
          (USER, u.pw_shell))
    st = os.stat(STATE_DIR)
    eq((st.st_uid, stat.S_IMODE(st.st_mode)), (u.pw_uid, 0o700), STATE_DIR + ": the user's, 0700")
    eq(os.readlink("/etc/systemd/system/multi-user.target.wants/onced.service"), UNIT,
       "the unit is enabled (dh_installsystemd)")
    conffiles = sh(["dpkg-query", "-W", "-f", "${Conffiles}", "onced"])
    check("/etc/once/onced.env " in conffiles, "/etc/once/onced.env is a conffile: %r" % conffiles)


# --- onced from the installed unit -----------------------------------------

def unit_settings(path):
    """[Service] of a unit file: NAME -> list of values, in order."""
    out, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[Service]" and "=" in line:
                k, v = line.split("=", 1)
                out.setdefault(k.strip(), []).append(v.strip())
    return out


def env_file(path):
    """systemd's EnvironmentFile= syntax: NAME=value lines, '#' and ';'
    comments, a value in double or single quotes keeps its spaces."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;" or "=" not in line:
                continue
            k, v = line.split("=", 1)
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            out[k.strip()] = v
    return out


def expand(command, env):
    """An ExecStart= line as systemd runs it: "$NAME" alone is the value
    split at white space (zero or more words), "${NAME}" is the value as one
    piece of its word. Prefixes (-, @, +, !, :) are not used by the unit."""
    check(command[:1] not in "-@+!:", "ExecStart has no prefix: %r" % command)
    argv = []
    for word in shlex.split(command):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                               lambda v: env.get(v.group(1), ""), word))
    return argv


def unit_command():
    """(argv, environment, user, umask) of the installed unit, with the
    environment systemd would give it: Environment= first, then the
    EnvironmentFile= (which wins)."""
    s = unit_settings(UNIT)
    env = {}
    for assigns in s.get("Environment", []):
        for a in shlex.split(assigns):
            k, v = a.split("=", 1)
            env[k] = v
    files = s.get("EnvironmentFile", [])
    eq(files, ["-/etc/once/onced.env"], "the unit reads /etc/once/onced.env")
    env.update(env_file(files[0].lstrip("-")))
    eq(env.get("ONCED_LISTEN"), "127.0.0.1:8080", "as installed, onced serves on loopback")
    eq(env.get("ONCED_STORE"), "sqlite:%s/registry.db" % STATE_DIR, "in the state directory")
    eq((s.get("User"), s.get("DynamicUser")), ([USER], None), "the unit runs as " + USER)
    check("once" in s.get("StateDirectory", []), "StateDirectory=once")
    return s["ExecStart"][0], env, int(s.get("UMask", ["0022"])[0], 8)


def start_onced(port):
    """onced as the unit starts it, on port: what an administrator's lines in
    /etc/once/onced.env would say (8080 may be taken on this machine; no
    drain delay, as there is no load balancer to tell)."""
    command, env, umask = unit_command()
    env["ONCED_LISTEN"] = "127.0.0.1:%d" % port
    env["ONCED_OPTS"] = "--drain-delay 0"
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env[REAP_VAR] = os.environ[REAP_VAR]   # scripts/reaper.py: ended with the test, however
    argv = expand(command, env)
    eq(argv[:5], ["/usr/sbin/onced", "--listen", env["ONCED_LISTEN"], "--store",
                  env["ONCED_STORE"]], "ExecStart, expanded")
    eq(argv[5:], ["--drain-delay", "0"], "$ONCED_OPTS splits into words")
    log = open(LOG, "ab")
    state["onced"] = subprocess.Popen(argv, env=env, user=USER, group=USER, extra_groups=[],
                                      umask=umask, cwd="/", stdout=log, stderr=log)

    def ready():
        check(state["onced"].poll() is None, "onced exited %s: %s" % (state["onced"].returncode,
                                                                      logtext()))
        try:
            return http_get(port, "/.well-known/agent-card.json", timeout=1)[0] == 200
        except OSError:
            return False
    wait_until(ready, timeout=15, what="onced to serve")


def logtext():
    with open(LOG, "rb") as f:
        return f.read().decode(errors="replace")[-3000:]


def stop_onced():
    p = state["onced"]
    if p is None or p.poll() is not None:
        return p and p.returncode
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(scaled(30))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.returncode


def client_send(url):
    outbox = os.path.join(TMP, "outbox.db")
    out = sh(["/usr/bin/once", "--outbox", outbox, "--json", "send", "--agent", url,
              "--text", "hello from the package", "--wait"], what="once send")
    doc = json.loads(out)
    eq((doc.get("outcome"), doc.get("state")), ("ok", "TASK_STATE_COMPLETED"), "once send --wait")
    parts = [p.get("text") for a in doc["task"].get("artifacts", []) for p in a.get("parts", [])]
    eq(parts, ["hello from the package"], "the echo agent's answer")


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(once 0.1 REQUIRED CONFIG)
add_executable(tiny_client tiny_client.c)
target_link_libraries(tiny_client PRIVATE once::once)
"""


def tiny_client_pkg_config():
    exe = os.path.join(TMP, "tiny_client")
    flags = sh(["pkg-config", "--cflags", "--libs", "once"]).split()
    sh(["cc", "-std=c11", "-o", exe, os.path.join(SOURCE, "tests", "packaging", "tiny_client.c")] +
       flags, what="cc tiny_client (pkg-config once)")
    return exe


def tiny_client_cmake():
    src, out = os.path.join(TMP, "consumer"), os.path.join(TMP, "consumer-build")
    os.makedirs(src)
    shutil.copy(os.path.join(SOURCE, "tests", "packaging", "tiny_client.c"), src)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(CMAKE_PROJECT)
    sh(["cmake", "-S", src, "-B", out], what="cmake configure (find_package(once))")
    sh(["cmake", "--build", out], what="cmake --build (once::once)")
    return os.path.join(out, "tiny_client")


def library_send(url):
    """Programs built against the installed libonce-dev, with pkg-config and
    with find_package(once), that run on the installed libonce.so.0."""
    libdir = "/usr/lib/" + sh(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).strip()
    for exe in (tiny_client_pkg_config(), tiny_client_cmake()):
        linked = sh(["ldd", exe])
        check(os.path.realpath(os.path.join(libdir, "libonce.so.0")) in
              [os.path.realpath(w) for w in linked.split() if w.startswith("/")],
              "%s runs on the installed libonce.so.0: %s" % (exe, linked))
        words = sh([exe, url, "hello"], what=exe).split()
        eq(words[:2], ["ok", "TASK_STATE_COMPLETED"], exe + "'s task")


def test_unit_serves():
    check(state["installed"], "the packages were installed")
    port = free_port()
    start_onced(port)
    try:
        url = "http://127.0.0.1:%d/" % port
        client_send(url)
        library_send(url)
    finally:
        eq(stop_onced(), 0, "onced exits 0 on SIGTERM (log: %s)" % logtext())
    db = os.stat(os.path.join(STATE_DIR, "registry.db"))
    eq((db.st_uid, stat.S_IMODE(db.st_mode) & 0o077), (pwd.getpwnam(USER).pw_uid, 0),
       "the registry is the user's, under UMask=0077")


# --- remove, install again, purge ------------------------------------------

def test_remove_keeps_data():
    check(state["installed"], "the packages were installed")
    registry = os.path.join(STATE_DIR, "registry.db")
    dpkg(["--remove", "onced"], "dpkg --remove onced")
    eq(status("onced"), "rc", "onced removed, its conffiles kept")
    check(not os.path.exists("/usr/sbin/onced"), "remove takes the program")
    check(os.path.exists("/etc/once/onced.env"), "remove keeps the settings")
    check(os.path.exists(registry), "remove keeps the registry")
    dpkg(["-i", state["debs"][PACKAGES.index("onced")]], "dpkg -i onced (again)")
    eq(status("onced"), "ii", "onced installed again over its kept files")
    st, uid = os.stat(STATE_DIR), pwd.getpwnam(USER).pw_uid
    eq((st.st_uid, stat.S_IMODE(st.st_mode)), (uid, 0o700), STATE_DIR + " as it was")
    eq(os.stat(registry).st_uid, uid, "the registry kept, still the user's")


# --- purge -----------------------------------------------------------------

def purge():
    dpkg(["--purge"] + PACKAGES, "dpkg --purge")
    state["installed"] = False


def test_purge():
    check(state["installed"], "the packages were installed")
    timed("dpkg --purge (four packages)", purge)
    for pkg in PACKAGES:
        check(status(pkg) in ("", "un", "pn"), "%s purged, not %r" % (pkg, status(pkg)))
    left = [f for f in state["files"] if os.path.lexists(f)]
    eq(left, [], "no file of the packages is left")
    helper = "/var/lib/systemd/deb-systemd-helper-"
    for path in ("/etc/once", STATE_DIR,
                 "/etc/systemd/system/multi-user.target.wants/onced.service",
                 helper + "enabled/onced.service.dsh-also",
                 helper + "enabled/multi-user.target.wants/onced.service",
                 helper + "masked/onced.service"):
        check(not os.path.lexists(path), "purged: " + path)
    eq(sorted(names_named_once() - state["names_before"]), [], "nothing named once is new")
    check(user_exists(USER), "the system user %s stays (Debian leaves system users)" % USER)


def cleanup():
    """Undo whatever the test did, however far it got."""
    stop_onced()
    if state["installed"]:
        present = [p for p in PACKAGES if status(p) not in ("", "un", "pn")]
        if present:
            subprocess.run(["dpkg", "--purge"] + present, capture_output=True,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if state["made_user"] and user_exists(USER):
        subprocess.run(["userdel", USER], capture_output=True)
        subprocess.run(["groupdel", USER], capture_output=True)
    if state["made_policy"]:
        os.unlink(POLICY_RC)


def main():
    for tool, pkg in (("dpkg-buildpackage", "dpkg-dev"), ("dh", "debhelper")):
        if shutil.which(tool) is None:
            print("SKIP: %s is not installed (Debian package %s; scripts/deps.sh installs it)" %
                  (tool, pkg))
            sys.exit(77)
    if os.geteuid() != 0:
        # Installing packages and creating a user need root.
        if shutil.which("sudo") is None or subprocess.run(["sudo", "-n", "true"],
                                                          capture_output=True).returncode != 0:
            print("FAIL: packaging/deb installs packages: run it as root or with "
                  "passwordless sudo", file=sys.stderr)
            sys.exit(1)
        os.execvp("sudo", ["sudo", "-n", "-E", sys.executable] + sys.argv)
    try:
        run([test_build, test_lintian, test_library_exports, test_install, test_unit_serves,
             test_remove_keeps_data, test_purge])
    finally:
        cleanup()


if __name__ == "__main__":
    main()
