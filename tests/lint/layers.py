#!/usr/bin/env python3
"""lint/layers: every reference between libonce's objects goes downward.

Reads the layer table from docs/architecture.md (the ```layers block: one
line per layer, lowest first, "name: the layers it may use"), then the
symbols of libonce's objects with nm: an object belongs to the layer its
source directory names (src/<layer>/...). Fails on any undefined symbol an
object takes from another layer that its line does not list, and on a table
that is not an order (a layer may only use layers listed before it).

usage: layers.py ARCHITECTURE_MD OBJECT...
"""
import os
import re
import subprocess
import sys


def read_layers(doc):
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if m is None:
        sys.exit("%s: no ```layers block" % doc)
    order, allowed = [], {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, uses = line.partition(":")
        name = name.strip()
        uses = uses.split()
        for u in uses:
            if u not in allowed:
                sys.exit("%s: layers line %d: %s uses %s, which is not listed below it"
                         % (doc, n, name, u))
        order.append(name)
        allowed[name] = set(uses)
    return order, allowed


def layer_of(obj):
    m = re.search(r"/src/([^/]+)/", obj)
    return m.group(1) if m else None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    order, allowed = read_layers(sys.argv[1])
    defined, wanted = {}, []
    for obj in sys.argv[2:]:
        layer = layer_of(obj)
        if layer is None:
            continue
        if layer not in allowed:
            sys.exit("%s: layer %s is not in the layers table" % (obj, layer))
        out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) < 2:
                continue
            if f[1] == "U":
                wanted.append((layer, obj, f[0]))
            elif f[1] in "TDBRVW" or f[1] in "C":
                defined[f[0]] = layer
    bad = []
    for layer, obj, sym in wanted:
        to = defined.get(sym)
        if to is None or to == layer or to in allowed[layer]:
            continue
        bad.append("%s (%s) uses %s from %s" % (os.path.relpath(obj), layer, sym, to))
    for b in sorted(set(bad)):
        print("upward or sideways reference:", b)
    if bad:
        print("layers (lowest first, each with what it may use): %s" % ", ".join(
            "%s: %s" % (n, " ".join(sorted(allowed[n])) or "-") for n in order))
        return 1
    print("layers: %d objects, %d references checked, all downward"
          % (len(sys.argv) - 2, len(wanted)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
