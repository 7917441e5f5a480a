#!/usr/bin/env python3
"""lint/layers: every reference between libonce's parts goes downward.

Reads two blocks of docs/architecture.md:

- ```layers: one line per layer, lowest first, "name: the layers it may
  use". A layer is a directory of src/; the table must be an order (a
  layer may only use layers listed before it).
- ```siblings: "layer: PART PART ...", the parts of one layer that must
  stay apart (the store's backends). A PART is "dir/" (a folder of the
  layer) or a glob over the names of the files directly in it
  ("sqlite*"). A file of one part may not include a header of another
  part nor use a symbol another part defines; the layer's files that are
  in no part (its shared code) may use, and be used by, every part.

Then it checks two things, so that neither a call nor a declaration can
run back up unseen:

- symbols: an object belongs to the layer (and part) its source path
  names (src/<layer>/...); every undefined symbol it takes from another
  object must come from its own layer or one its line lists (nm);
- includes: every #include of src/**/*.[ch] that names a header of src/
  or of include/once/ must name one of its own layer or of a layer its
  line lists. A public header belongs to the lowest layer that defines a
  function it declares (once/webhook_sig.h: core, once/webhook.h:
  client); a public header may include only public headers no higher
  than the highest layer that defines one of its functions. Headers
  found in neither place (system, generated protobuf code) are not
  looked at.

usage: layers.py ARCHITECTURE_MD SOURCE_ROOT OBJECT...
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from public import functions_declared, strip_comments  # noqa: E402

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<([^>]+)>)', re.M)


def block(text, doc, name, required):
    m = re.search(r"^```%s\n(.*?)^```" % name, text, re.S | re.M)
    if m is None:
        if required:
            sys.exit("%s: no ```%s block" % (doc, name))
        return []
    lines = []
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            name_, _, rest = line.partition(":")
            lines.append((n, name_.strip(), rest.split()))
    return lines


def read_doc(doc):
    text = open(doc, encoding="utf-8").read()
    order, allowed = [], {}
    for n, name, uses in block(text, doc, "layers", True):
        for u in uses:
            if u not in allowed:
                sys.exit("%s: layers line %d: %s uses %s, which is not listed below it"
                         % (doc, n, name, u))
        order.append(name)
        allowed[name] = set(uses)
    siblings = {}
    for n, name, parts in block(text, doc, "siblings", False):
        if name not in allowed:
            sys.exit("%s: siblings line %d: %s is not a layer" % (doc, n, name))
        siblings[name] = parts
    return order, allowed, siblings


def place(path, siblings):
    """(layer, part) of a path under src/ (a source, a header or an object
    built from one); (None, None) outside src/. part is None for a layer's
    shared code."""
    m = re.search(r"(?:^|^.*/)src/([^/]+)/(.+)$", path)  # the last src/ of the path
    if m is None:
        return None, None
    layer, rest = m.group(1), m.group(2)
    for part in siblings.get(layer, ()):
        if part.endswith("/") and rest.startswith(part):
            return layer, part
        if "/" not in rest and fnmatch.fnmatch(rest, part):
            return layer, part
    return layer, None


def may_use(frm, to, allowed):
    """Why a reference from place frm to place to is wrong, or None."""
    if frm[0] != to[0]:
        return None if to[0] in allowed[frm[0]] else "upward or sideways"
    if frm[1] is not None and to[1] is not None and frm[1] != to[1]:
        return "between siblings"
    return None


def read_objects(objs, allowed, siblings):
    """(defined: symbol -> place, wanted: [(place, obj, symbol)])."""
    defined, wanted = {}, []
    for obj in objs:
        where = place(obj, siblings)
        if where[0] is None:
            continue
        if where[0] not in allowed:
            sys.exit("%s: layer %s is not in the layers table" % (obj, where[0]))
        out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            if f[1] == "U":
                wanted.append((where, obj, f[0]))
            elif f[1] in "TDBRVWC":
                defined[f[0]] = where
    return defined, wanted


def public_layers(root, order, defined):
    """once/NAME.h -> (lowest, highest) of the layers that define the
    functions it declares (the lowest layer of all for a header of types
    alone). Whoever includes it must be allowed the lowest; what it
    includes may serve any of its functions, so it may be public headers of
    the highest or below (once/executor.h, the engine's contract, also
    declares the gateway of exec, whose options embed the client's retry
    policy)."""
    out = {}
    for h in sorted(glob.glob(os.path.join(root, "include", "once", "*.h"))):
        text = strip_comments(open(h, encoding="utf-8").read())
        layers = {defined[name][0] for name, _ in functions_declared(text) if name in defined}
        layers = sorted(layers, key=order.index) or order[:1]
        out["once/" + os.path.basename(h)] = (layers[0], layers[-1])
    return out


def includes(path):
    """(line number, name) of each #include, comments ignored."""
    text = open(path, encoding="utf-8").read()
    # Keep the newlines of block comments so line numbers stay true.
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    for m in INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1) or m.group(2)


def resolve(root, src_file, name, public, siblings):
    """The place of the header an include names: (layer, part), or None
    when it is neither in src/ nor in include/once/."""
    if name in public:
        return public[name][0], None
    for base in (os.path.dirname(src_file), os.path.join(root, "src")):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p) and place(p, siblings)[0] is not None:
            return place(p, siblings)
    return None


def check_includes(root, order, allowed, siblings, public):
    bad, n = [], 0
    srcs = sorted(glob.glob(os.path.join(root, "src", "**", "*.[ch]"), recursive=True))
    for f in srcs:
        frm = place(f, siblings)
        if frm[0] not in allowed:
            sys.exit("%s: layer %s is not in the layers table" % (f, frm[0]))
        for line, name in includes(f):
            to = resolve(root, f, name, public, siblings)
            if to is None:
                continue
            n += 1
            why = may_use(frm, to, allowed)
            if why:
                bad.append("%s include: %s:%d (%s) includes %s (%s)"
                           % (why, os.path.relpath(f, root), line, "/".join(filter(None, frm)),
                              name, "/".join(filter(None, to))))
    for h in sorted(glob.glob(os.path.join(root, "include", "once", "*.h"))):
        top = public["once/" + os.path.basename(h)][1]
        for line, name in includes(h):
            if name in public:
                n += 1
                if order.index(public[name][0]) > order.index(top):
                    bad.append("upward include: %s:%d (up to %s) includes %s (%s)"
                               % (os.path.relpath(h, root), line, top, name, public[name][0]))
    return bad, n, len(srcs)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    doc, root, objs = sys.argv[1], sys.argv[2], sys.argv[3:]
    order, allowed, siblings = read_doc(doc)
    defined, wanted = read_objects(objs, allowed, siblings)
    bad = []
    for frm, obj, sym in wanted:
        to = defined.get(sym)
        why = to and may_use(frm, to, allowed)
        if why:
            bad.append("%s reference: %s (%s) uses %s from %s"
                       % (why, os.path.relpath(obj), "/".join(filter(None, frm)), sym,
                          "/".join(filter(None, to))))
    public = public_layers(root, order, defined)
    ibad, nincl, nsrc = check_includes(root, order, allowed, siblings, public)
    bad = sorted(set(bad)) + ibad
    for b in bad:
        print(b)
    if bad:
        print("layers (lowest first, each with what it may use): %s" % ", ".join(
            "%s: %s" % (n, " ".join(sorted(allowed[n])) or "-") for n in order))
        for layer, parts in siblings.items():
            print("siblings of %s (none uses another): %s" % (layer, " ".join(parts)))
        return 1
    print("layers: %d objects, %d references and %d includes of %d sources checked, "
          "all downward; siblings apart (%s)"
          % (len(objs), len(wanted), nincl, nsrc,
             "; ".join("%s: %s" % (k, " ".join(v)) for k, v in siblings.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
