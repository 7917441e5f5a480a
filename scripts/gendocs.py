#!/usr/bin/env python3
"""Write the option lists that the programs' own tables generate into the
pages that document them, between marker comments:

    .\\" BEGIN GENERATED: onced --help-man           (man/onced.8, man/once.1)
    .\\" END GENERATED
    <!-- BEGIN GENERATED: onced --help-markdown -->  (README.md)
    <!-- END GENERATED -->

Each region is replaced by what `BUILD/PROGRAM [SUBCOMMAND] FLAG` prints
(`onced migrate --help-man` for onced(8)'s MIGRATE section); the tables are
apps/cli/PROGRAM_opts.c. So --help, the man pages and the README cannot
disagree. `make docs` runs it; with --check it writes nothing and exits 1,
naming every stale page, when a page differs from its program
(tests/packaging/test_man.py).

Python 3 standard library only.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys

PAGES = ("man/onced.8", "man/once.1", "README.md")
BEGIN = re.compile(r"^(?:\.\\\" |<!-- )BEGIN GENERATED: (\S+(?: [a-z]+)?) (--help-[a-z]+)(?: -->)?$")
END = re.compile(r"^(?:\.\\\" |<!-- )END GENERATED(?: -->)?$")


def generated(build, command, flag):
    """What `BUILD/PROGRAM [SUBCOMMAND] FLAG` prints."""
    prog, *sub = command.split(" ")
    p = subprocess.run([os.path.join(build, prog)] + sub + [flag], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0 or not p.stdout:
        sys.exit("gendocs: %s %s failed (%d): %s" % (command, flag, p.returncode, p.stderr))
    return p.stdout.splitlines(keepends=True)


def regenerate(path, build):
    """The page's text with every generated region replaced, and the number
    of regions."""
    with open(path) as f:
        lines = f.readlines()
    out, regions, i = [], 0, 0
    while i < len(lines):
        m = BEGIN.match(lines[i].rstrip("\n"))
        out.append(lines[i])
        i += 1
        if m is None:
            continue
        j = i
        while j < len(lines) and not END.match(lines[j].rstrip("\n")):
            j += 1
        if j == len(lines):
            sys.exit("gendocs: %s: no END GENERATED after line %d" % (path, i))
        out.extend(generated(build, m.group(1), m.group(2)))
        regions += 1
        i = j
    return "".join(out), regions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build folder with onced and once")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = ap.parse_args()
    stale = []
    for page in PAGES:
        path = os.path.join(args.source, page)
        with open(path) as f:
            old = f.read()
        new, regions = regenerate(path, args.build)
        if regions == 0:
            sys.exit("gendocs: %s has no generated region" % page)
        if new == old:
            continue
        stale.append(page)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), page,
                page + " (generated)", n=1))
        else:
            with open(path, "w") as f:
                f.write(new)
            print("gendocs: wrote %s" % page)
    if args.check and stale:
        print("gendocs: stale: %s (run `make docs`)" % ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
