#!/usr/bin/env python3
"""lint/layers_selftest: lint/layers can fail.

Builds a small tree in a temporary directory (an architecture.md with a
layers and a siblings block, a few sources and public headers) and holds
layers.py's include check and its placing of objects to what each must
say: an upward include, a sideways one, one between two store backends
and an upward public header are each reported; downward includes, a
backend's own headers, shared store code naming a backend, and headers
found nowhere (system, generated) are not.

usage: layers_selftest.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers  # noqa: E402

DOC = """
```layers
core:
store:  core
engine: core store
client: core
```

```siblings
store:  pg/ sqlite*
```
"""

FILES = {
    "src/core/str.h": "",
    "src/core/ok.c": '#include "core/str.h"\n#include <stdio.h>\n#include "a2a.pb-c.h"\n',
    "src/core/up.c": '/* #include "engine/e.h" in a comment is no include */\n'
                     '#include "engine/e.h"\n',
    "src/engine/e.h": '#include "store/store_int.h"\n#include "once/store.h"\n',
    "src/engine/side.c": '#include "client/c.h"\n',
    "src/engine/pub.c": '#include "once/client.h"\n',
    "src/client/c.h": '#include "core/str.h"\n',
    "src/store/store_int.h": "",
    "src/store/store.c": '#include "store/pg/pg_int.h"\n#include "store/sqlite_int.h"\n',
    "src/store/pg/pg_int.h": '#include "store/store_int.h"\n',
    "src/store/pg/pg.c": '#include "store/pg/pg_int.h"\n#include "pg_int.h"\n'
                         '#include "store/sqlite_int.h"\n',
    "src/store/sqlite_int.h": "",
    "src/store/sqlite.c": '#include "store/sqlite_int.h"\n#include "store/store_int.h"\n',
    "include/once/store.h": "",
    "include/once/client.h": "",
    "include/once/once.h": '#include "once/client.h"\n',
}

# What each public header counts as (lowest, highest), as public_layers
# would find it from the objects.
PUBLIC = {"once/store.h": ("store", "store"), "once/client.h": ("client", "client"),
          "once/once.h": ("core", "core")}

WANT = [
    "upward or sideways include: src/core/up.c:2 (core) includes engine/e.h (engine)",
    "upward or sideways include: src/engine/pub.c:1 (engine) includes once/client.h (client)",
    "upward or sideways include: src/engine/side.c:1 (engine) includes client/c.h (client)",
    "between siblings include: src/store/pg/pg.c:3 (store/pg/) includes store/sqlite_int.h "
    "(store/sqlite*)",
    "upward include: include/once/once.h:1 (up to core) includes once/client.h (client)",
]


def main():
    problems = []
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        doc = os.path.join(root, "docs", "architecture.md")
        with open(doc, "w", encoding="utf-8") as f:
            f.write(DOC)
        for path, text in FILES.items():
            p = os.path.join(root, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        order, allowed, siblings = layers.read_doc(doc)
        bad, n, nsrc = layers.check_includes(root, order, allowed, siblings, PUBLIC)
        for b in sorted(set(bad) - set(WANT)):
            problems.append("reported, not wanted: " + b)
        for w in sorted(set(WANT) - set(bad)):
            problems.append("wanted, not reported: " + w)
        places = {
            "/b/CMakeFiles/o.dir/src/store/pg/pg.c.o": ("store", "pg/"),
            "/home/src/x/b/CMakeFiles/o.dir/src/store/sqlite_read.c.o": ("store", "sqlite*"),
            "/b/CMakeFiles/o.dir/src/store/store.c.o": ("store", None),
            "/b/CMakeFiles/o.dir/a2a.pb-c.c.o": (None, None),
        }
        for obj, want in places.items():
            got = layers.place(obj, siblings)
            if got != want:
                problems.append("place(%s) is %s, not %s" % (obj, got, want))
        if layers.may_use(("store", "pg/"), ("store", "sqlite*"), allowed) is None:
            problems.append("a symbol from one backend to another passes")
        if layers.may_use(("store", None), ("store", "pg/"), allowed) is not None:
            problems.append("shared store code may not name a backend")
    for p in problems:
        print(p)
    if problems:
        return 1
    print("layers_selftest: %d includes of %d sources: the %d wrong ones reported, no other"
          % (n, nsrc, len(WANT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
