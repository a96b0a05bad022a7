#!/usr/bin/env python3
"""Checks that library code prints nothing.

    python3 scripts/lib-prints.py [ROOT]

Library code reports through return codes and ps_error, never by printing
(docs/ARCHITECTURE.md, "Public API and error model"): the caller decides what
to show. This scans the .c and .h files of the library folders (LIBRARY
below; cli/, tests/ and bench/ may print) for calls of printf, fprintf,
vprintf, vfprintf, puts, fputs, putchar, perror and for any use of stderr,
with comments and string literals blanked out first (so "/dev/stderr" or a
comment about printf is not a hit; ps_buf_printf and snprintf are other
names). Prints each hit as FILE:LINE: TEXT and exits 1 when there is one.
"""
import os
import re
import sys

LIBRARY = ["common", "schema", "ingest", "tokenize", "validate", "report", "store", "pipeline", "reader"]

CALL = re.compile(r"(?<![\w.>])(printf|fprintf|vprintf|vfprintf|puts|fputs|putchar|perror)\s*\(")
STDERR = re.compile(r"(?<![\w.>])stderr\b")
# One token at a time: a comment, a string or character literal, or other text.
TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(text):
    """`text` with comments and literals replaced by spaces (newlines kept,
    so line numbers stay right)."""
    return TOKENS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def scan(root):
    hits = []
    for folder in LIBRARY:
        top = os.path.join(root, folder)
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                raw = text.split("\n")
                for i, line in enumerate(blank(text).split("\n")):
                    if CALL.search(line) or STDERR.search(line):
                        rel = os.path.relpath(path, root)
                        hits.append("%s:%d: %s" % (rel, i + 1, raw[i].strip()))
    return hits


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    hits = scan(root)
    for h in hits:
        print(h)
    if hits:
        print("library code may not print: return a PS_E* code with a ps_error message, "
              "or hand the caller a callback (as ps_build_config.progress)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
