#!/usr/bin/env python3
"""Checks that pairshard's folders include each other only downwards.

    python3 scripts/include-graph.py [ROOT]

Reads every `#include "folder/file.h"` in the library folders, cli/ and
include/pairshard/, derives the folder graph (an edge A -> B when a file in
A includes a header in B), prints it, and exits 1 when an edge is not
allowed by LAYERS below (an upward or sideways include, or an include of a
folder that is no layer). The printed graph is pasted into
docs/ARCHITECTURE.md; tests/cli/layers.sh checks that the two agree.

Public headers count as part of the folder that implements them, so a
folder may not reach a higher layer through include/pairshard/ either.
"""
import os
import re
import sys

# Each layer names the layers directly below it; it may include those and
# everything below them (the transitive closure). Order: lowest first.
LAYERS = [
    ("common", []),
    ("schema", ["common"]),
    ("ingest", ["schema"]),
    ("tokenize", ["ingest"]),
    ("validate", ["tokenize"]),
    ("report", ["validate"]),
    ("store", ["common"]),
    ("reader", ["store"]),
    ("pipeline", ["report", "store"]),
    ("cli", ["pipeline", "reader"]),
]

# include/pairshard/<header> -> the layer that implements it.
PUBLIC_HEADERS = {
    "common.h": "common",
    "clean.h": "ingest",
    "schema.h": "schema",
    "tokenizer.h": "tokenize",
    "reader.h": "reader",
    "preprocess.h": "pipeline",  # the per-record core at serving (pipeline/preprocess.c)
    "pairshard.h": "cli",  # the umbrella header: everything, so only the top may use it
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed_below():
    direct = dict(LAYERS)
    closure = {}
    for name, _ in LAYERS:  # lowest first, so the layers below are done
        below = set()
        for d in direct[name]:
            below |= {d} | closure[d]
        closure[name] = below
    return closure


def folder_of(include):
    """The layer an include names, or None for a path outside every layer."""
    if include.startswith("pairshard/"):
        return PUBLIC_HEADERS.get(include[len("pairshard/"):])
    head = include.split("/", 1)[0]
    return head if "/" in include and head in dict(LAYERS) else None


def scan(root):
    """Yields (layer, file, line, included path) for every quoted include."""
    sources = [(name, name) for name, _ in LAYERS]
    sources.append(("include/pairshard", None))
    for rel, layer in sources:
        top = os.path.join(root, rel)
        if not os.path.isdir(top):
            continue
        for dirpath, _, names in sorted(os.walk(top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, n)
                owner = layer or PUBLIC_HEADERS.get(n)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for m in INCLUDE.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    yield owner, os.path.relpath(path, root), line, m.group(1)


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    below = allowed_below()
    edges = {}
    bad = []
    for layer, path, line, inc in scan(root):
        target = folder_of(inc)
        if layer is None or target is None:
            bad.append("%s:%d: #include \"%s\": not a layer's header" % (path, line, inc))
            continue
        if target == layer:
            continue
        edges.setdefault(layer, set()).add(target)
        if target not in below[layer]:
            bad.append("%s:%d: #include \"%s\": %s may not include %s (layers: %s)"
                       % (path, line, inc, layer, target, order_text()))
    print("include graph (folder -> folders it includes):")
    for name, _ in LAYERS:
        print("  %-9s -> %s" % (name, " ".join(sorted(edges.get(name, ()))) or "-"))
    for b in bad:
        print("layer violation: " + b, file=sys.stderr)
    return 1 if bad else 0


def order_text():
    return "; ".join("%s over %s" % (n, ",".join(d)) for n, d in LAYERS if d)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
