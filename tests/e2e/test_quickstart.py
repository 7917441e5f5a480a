"""The README's quickstart runs as written: its two shell blocks are read
from README.md (the "## Quickstart" section, up to its first subsection)
and run in order, so a change to the README's text changes what runs.

- the first block: `make TARGET` must name a target of the Makefile (ctest
  has built the programs already); the `build/onced` line starts a real
  onced with the README's flags, only its ports (free ones, for --listen
  and --grpc-listen) and its SQLite file (in a scratch folder) chosen here;
- the second block: every line runs with bash in a scratch folder where
  `build` is this build tree, with its own outbox (XDG_STATE_HOME), after
  two substitutions: the README's 127.0.0.1:8080 becomes onced's port, and
  a placeholder `<NAME>` becomes the task ID a line commented "prints
  <NAME>" printed first. Every line exits 0 (the README says so), and what
  it prints is checked per command: the states the echo agent gives, the
  texts it echoes; `get --out DIR` names files that hold what it listed,
  joined with one '/', and a second one writes nothing and says "already
  saved"; `abandon` moves an acknowledged intent to abandoned; `cancel`
  cancels; `outbox` lists every task with nothing left pending or
  acknowledged. A quickstart command this test has no checks for fails it,
  so a new step gets its checks with it.
"""
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, Onced, check, eq, free_port, run, scaled, scratch_dir  # noqa: E402

BUILD = os.environ.get("ONCE_BUILD", os.path.join(ROOT, "build"))
README_PORT = "127.0.0.1:8080"
PLACEHOLDER = re.compile(r"<([A-Za-z0-9_]+)>")


def quickstart_blocks():
    """The quickstart's ```sh blocks, each a list of (command, comment)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"^## Quickstart\n(.*?)^###? ", text, re.S | re.M)
    check(m is not None, "README.md has a '## Quickstart' section")
    blocks = re.findall(r"^```sh\n(.*?)^```", m.group(1), re.S | re.M)
    eq(len(blocks), 2, "the quickstart's shell blocks (server, client)")
    return [[split_comment(ln) for ln in b.splitlines() if ln.strip()] for b in blocks]


def split_comment(line):
    """(command, comment) of a shell line: the comment starts at the first
    '#' outside quotes that follows a blank."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def flag(tokens, name):
    """The value after flag name in tokens, or None."""
    return tokens[tokens.index(name) + 1] if name in tokens else None


def start_server(block, tmp):
    """The first block: check `make` targets, start the `build/onced` line."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    srv = None
    for cmd, _ in block:
        tokens = shlex.split(cmd)
        if tokens[0] == "make":
            for target in tokens[1:]:
                check(re.search(r"^%s:" % re.escape(target), makefile, re.M),
                      "the Makefile has the target `%s`" % target)
        elif tokens[0] == "build/onced":
            listen, store = flag(tokens, "--listen"), flag(tokens, "--store")
            eq(listen, README_PORT, "onced listens where the client lines send")
            check(store is not None and store.startswith("sqlite:"), "a SQLite store: %r" % store)
            rest = [t for i, t in enumerate(tokens[1:], 1)
                    if t not in ("--listen", "--store") and tokens[i - 1] not in ("--listen", "--store")]
            # The gRPC listener (--grpc-listen): a free port too; the card
            # names it, so client lines reach it without it.
            rest = [("127.0.0.1:%d" % free_port()) if i > 0 and rest[i - 1] == "--grpc-listen"
                    else t for i, t in enumerate(rest)]
            srv = Onced(args=rest, store="sqlite:" + os.path.join(tmp, os.path.basename(store[7:])),
                        tmpdir=tmp)
        else:
            check(False, "no rule for the quickstart's server line %r: add one here" % cmd)
    check(srv is not None, "the first block starts onced")
    return srv


def first_field(out):
    return out.split("\n", 1)[0].split("\t", 1)[0].strip()


class Client:
    """The second block's lines, run one by one in the scratch folder."""

    def __init__(self, port, tmp):
        self.port = port
        self.cwd = os.path.join(tmp, "client")
        os.makedirs(self.cwd)
        os.symlink(BUILD, os.path.join(self.cwd, "build"))
        self.env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state"), HOME=tmp)
        self.env.pop("ONCE_TOKEN", None)
        self.ids = {}        # placeholder -> task ID
        self.saved = {}      # (task ID, DIR) -> files listed

    def line(self, cmd, comment):
        def bound(m):
            check(m.group(1) in self.ids, "%r: <%s> was printed by no line before" % (cmd, m.group(1)))
            return self.ids[m.group(1)]
        run_cmd = PLACEHOLDER.sub(bound, cmd).replace(README_PORT, "127.0.0.1:%d" % self.port)
        p = subprocess.run(["bash", "-c", run_cmd], cwd=self.cwd, env=self.env, capture_output=True,
                           text=True, timeout=scaled(60))
        eq(p.returncode, 0, "`%s` exits 0 (stdout %r, stderr %r)" % (cmd, p.stdout, p.stderr))
        printed = re.search(r"\bprints <([A-Za-z0-9_]+)>", comment)
        if printed:
            self.ids[printed.group(1)] = first_field(p.stdout)
        tokens = shlex.split(run_cmd)
        check(tokens[0] == "build/once", "a client line runs build/once: %r" % cmd)
        sub = next(t for t in tokens[1:] if not t.startswith("-"))
        getattr(self, "check_" + sub, self.unknown)(cmd, tokens, p.stdout, p.stderr)

    def unknown(self, cmd, tokens, out, err):
        check(False, "no checks for the quickstart line %r: add them to test_quickstart" % cmd)

    def check_send(self, cmd, tokens, out, err):
        text = flag(tokens, "--text")
        state = out.split("\n", 1)[0].split("\t")[1:2]
        if "--wait" not in tokens:
            check(state[0] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"),
                  "%r: the task is acknowledged, not waited for: %r" % (cmd, out))
        elif text.startswith("ask:"):
            eq(state, ["TASK_STATE_INPUT_REQUIRED"], "%r: the agent asks" % cmd)
            check("agent: " + text[4:] in out, "%r: the question is shown: %r" % (cmd, out))
        else:
            eq(state, ["TASK_STATE_COMPLETED"], "%r: completed" % cmd)
            check(": " + text in out, "%r: the echo is shown: %r" % (cmd, out))

    def check_continue(self, cmd, tokens, out, err):
        eq(out.split("\n", 1)[0].split("\t")[1:2], ["TASK_STATE_COMPLETED"], "%r: completed" % cmd)
        check(": " + flag(tokens, "--text") in out, "%r: the echo is shown: %r" % (cmd, out))

    def check_get(self, cmd, tokens, out, err):
        check("\tTASK_STATE_" in out, "%r: the task's state: %r" % (cmd, out))
        folder = flag(tokens, "--out")
        if folder is None:
            return
        saved = re.findall(r"^  artifact .*?: text \(\d+ bytes\): (.*) -> (\S+)( \(already saved: "
                           r"unchanged\))?$", out, re.M)
        check(saved, "%r: every part names the file it is in: %r" % (cmd, out))
        before = self.saved.get((tokens[2], folder))
        for text, path, again in saved:
            check("//" not in path and path.startswith(folder.rstrip("/") + "/"),
                  "%r: a path inside DIR with one '/': %r" % (cmd, path))
            with open(os.path.join(self.cwd, path)) as f:
                eq(f.read(), text, "%r: %s holds the part" % (cmd, path))
            eq(bool(again), before is not None, "%r: 'already saved' exactly when it was: %r" % (cmd, out))
        files = sorted(os.listdir(os.path.join(self.cwd, folder)))
        if before is not None:
            eq(files, before, "%r: a second save writes nothing" % cmd)
        self.saved[(tokens[2], folder)] = files

    def check_abandon(self, cmd, tokens, out, err):
        check(tokens[2] in out and "acknowledged -> abandoned" in out,
              "%r: the acknowledged intent is abandoned: %r" % (cmd, out))

    def check_cancel(self, cmd, tokens, out, err):
        eq(out.split("\n", 1)[0].split("\t"), [tokens[2], "TASK_STATE_CANCELED"], "%r: canceled" % cmd)

    def check_outbox(self, cmd, tokens, out, err):
        rows = [ln.split() for ln in out.splitlines()[1:]]
        for name, tid in self.ids.items():
            check(any(tid in r for r in rows), "%r lists <%s> %s: %r" % (cmd, name, tid, out))
        states = sorted(set(r[1] for r in rows))
        check(states and set(states) <= {"final", "abandoned"},
              "%r: nothing is left pending or acknowledged: %r" % (cmd, states))


def test_quickstart_as_written():
    server, client = quickstart_blocks()
    tmp = scratch_dir("once-quickstart-")
    srv = start_server(server, tmp)
    try:
        c = Client(srv.port, tmp)
        for cmd, comment in client:
            c.line(cmd, comment)
        check(c.ids, "the quickstart's placeholders were bound by its lines")
    finally:
        srv.stop()


if __name__ == "__main__":
    run([test_quickstart_as_written])
