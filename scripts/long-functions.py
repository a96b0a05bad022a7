#!/usr/bin/env python3
"""Checks that no library function is longer than the house limit.

    python3 scripts/long-functions.py [ROOT] [--max N] [--list]

Reads every .c file in the library folders and cli/, finds each function
definition (house style: the signature starts in column 0 and the body's
braces `{` and `}` stand alone in column 0) and counts its lines from the
signature's first line to the closing brace. Prints one line
`file:line: name: N lines (limit M)` per function over the limit and exits 1
when there is one; with --list prints every function over 100 lines, as a
map for the next split.

A function may stay longer only when it is listed in ALLOWED below with the
reason, and a comment at the function says the same.
"""
import os
import re
import sys

FOLDERS = ["common", "schema", "ingest", "tokenize", "validate", "report", "store",
           "reader", "pipeline", "cli"]
LIMIT = 150

# file -> function: why it may stay whole.
ALLOWED = {
    ("ingest/json_fast.c", "parse"):
        "the JSON scanner's state machine is the ingest hot loop; split, its "
        "state would travel through calls on every byte",
}

# The line that opens a definition: a name followed by "(" with no ";" after
# the closing ")" (a prototype ends with ";").
NAME_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """Yield (name, first_line, n_lines) for each definition in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    sig_start = None
    for i, line in enumerate(lines):
        if line and not line[0].isspace() and line[0] not in "#/*}{" \
                and sig_start is None and "(" in line:
            sig_start = i
        elif sig_start is not None and line.rstrip().endswith(";") \
                and not line.startswith("{"):
            # A prototype or a declaration, not a definition.
            if ")" in line:
                sig_start = None
        if line.startswith("{") and sig_start is not None:
            m = NAME_RE.search(" ".join(lines[sig_start:i]))
            end = i
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            if m:
                yield m.group(1), sig_start + 1, end - sig_start + 1
            sig_start = None
        elif line and not line[0].isspace() and sig_start is not None \
                and i != sig_start and line[0] in "#}":
            sig_start = None


def main(argv):
    root, limit, listing = ".", LIMIT, False
    args = iter(argv[1:])
    for a in args:
        if a == "--max":
            limit = int(next(args))
        elif a == "--list":
            listing = True
        else:
            root = a
    over = []
    for d in FOLDERS:
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            continue
        for dirpath, _, files in os.walk(top):
            for fn in sorted(files):
                if not fn.endswith(".c"):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                for name, first, n in functions(path):
                    if listing and n > 100:
                        print(f"{rel}:{first}: {name}: {n} lines")
                    if n > limit and (rel, name) not in ALLOWED:
                        over.append(f"{rel}:{first}: {name}: {n} lines "
                                    f"(limit {limit})")
    for o in over:
        print(o, file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
