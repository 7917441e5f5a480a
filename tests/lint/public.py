#!/usr/bin/env python3
"""lint/public: include/once/ is the whole API, and only it.

- a header in include/once/ includes only system headers and other
  include/once/ headers (never a private one from src/);
- the examples (an in-process agent, a server built on libonce) include
  only include/once/ headers;
- every function include/once/ declares carries ONCE_API, and libonce.so
  exports exactly those: none more (a private symbol leaked), none fewer
  (a declared function hidden or missing).

usage: public.py INCLUDE_DIR EXAMPLES_DIR LIBONCE_SO
"""
import glob
import os
import re
import subprocess
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def top_level_statements(text):
    """The statements outside any braces (extern "C" blocks do not count),
    white space folded."""
    text = re.sub(r'extern\s+"C"\s*\{', " ", text)
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
            cur = [] if depth == 0 else cur
            continue
        if depth == 0:
            if ch == ";":
                out.append(" ".join("".join(cur).split()))
                cur = []
            else:
                cur.append(ch)
    return out


def functions_declared(text):
    """(name, statement) of each function a header's text (comments
    stripped) declares at top level; lint/layers maps a public header to
    the layer that defines these."""
    decls = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    for stmt in top_level_statements(decls):
        m = re.match(r"^(?!typedef\b)[\w\s\*]*?\b(\w+)\s*\((.|\n)*\)$", stmt)
        if m is not None:
            yield m.group(1), stmt


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    inc, examples, so = sys.argv[1:]
    problems = []
    headers = sorted(glob.glob(os.path.join(inc, "once", "*.h")))
    public = {"once/" + os.path.basename(h) for h in headers}
    declared = set()
    for h in headers:
        text = strip_comments(open(h, encoding="utf-8").read())
        for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            if m.group(1) not in public:
                problems.append("%s includes \"%s\", which is not in include/once/"
                                % (os.path.relpath(h), m.group(1)))
        for name, stmt in functions_declared(text):
            if not re.match(r"^ONCE_API\b", stmt):
                problems.append("%s declares %s without ONCE_API: libonce.so hides it"
                                % (os.path.relpath(h), name))
            declared.add(name)
    for c in sorted(glob.glob(os.path.join(examples, "*.c"))):
        text = strip_comments(open(c, encoding="utf-8").read())
        for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            if m.group(1) not in public:
                problems.append("%s includes \"%s\": an embedder needs nothing from src/"
                                % (os.path.relpath(c), m.group(1)))
    out = subprocess.run(["nm", "-D", "--defined-only", so], check=True, capture_output=True,
                         text=True).stdout
    exported = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRVWiu" and not f[2].startswith("_"):
            exported.add(f[2].split("@")[0])
    for s in sorted(exported - declared):
        problems.append("libonce.so exports %s, which include/once/ does not declare" % s)
    for s in sorted(declared - exported):
        problems.append("include/once/ declares %s (ONCE_API), which libonce.so does not export"
                        % s)
    for p in problems:
        print(p)
    if problems:
        return 1
    print("public: %d headers, %d exported functions, each declared; no private include"
          % (len(headers), len(exported)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
