#!/usr/bin/env python3
"""Finds library functions that nothing calls.

    python3 scripts/unused-functions.py [ROOT]

Reads every .c file in the library folders and cli/ (house style: a definition's
signature starts in column 0 and its body's `{` stands alone in column 0 or
ends the signature's line) and takes each function that is not `static`.
Such a function is dead when its name appears nowhere else: not in another
line of any .c, .h or .inc file of the library folders, cli/, tests/ or
bench/, not in python/ (ctypes loads by name), and not in the public
headers (include/pairshard/: the API a caller links). Comments do not count
as a use; a prototype (a column-0 line of a header naming the function
first) does not either. Prints `file:line: name: no caller` for each and
exits 1 when there is one.
"""
import os
import re
import sys

LIB = ["common", "schema", "ingest", "tokenize", "validate", "report", "store", "reader",
       "pipeline"]
USERS = LIB + ["cli", "tests", "bench", "python", "include"]
EXTS = (".c", ".h", ".inc", ".py", ".cu")
FIRST_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def strip_comments(text, path):
    if path.endswith(".py"):
        return re.sub(r"#[^\n]*", "", text)
    # keep line numbers: a comment becomes as many newlines as it held
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def head_name(line):
    """The function a column-0 line defines or declares, or None."""
    if not line or line[0] in " \t#{}/*" or line.startswith("static"):
        return None
    m = FIRST_NAME.search(line)
    return m.group(1) if m else None


def definitions(root):
    """(path, line, name) of each non-static function defined in LIB or
    cli/ (main aside)."""
    for folder in LIB + ["cli"]:
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    lines = strip_comments(fh.read(), path).split("\n")
                for i, line in enumerate(lines):
                    name = head_name(line)
                    if not name or name == "main" or "typedef" in line or \
                            "=" in line.split("(")[0]:
                        continue
                    # a definition: "{" ends this line or one of the next few,
                    # before any ";" (a prototype ends with one)
                    for j in range(i, min(i + 8, len(lines))):
                        t = lines[j].rstrip()
                        if t.endswith(";") and "{" not in t:
                            break
                        if t.endswith("{") or "{" in t and j == i:
                            yield os.path.relpath(path, root), i + 1, name
                            break


def uses(root):
    """name -> number of mentions that are neither a comment nor the
    column-0 line that defines or declares it."""
    count = {}
    for folder in USERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            if "/build" in dirpath or "__pycache__" in dirpath or "node_modules" in dirpath:
                continue
            for f in files:
                if not f.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = strip_comments(fh.read(), path)
                for line in text.split("\n"):
                    head = head_name(line) if not path.endswith(".py") else None
                    words = WORD.findall(line)
                    for k, w in enumerate(words):
                        if w == head and words.index(w) == k and folder != "include":
                            continue  # the definition or prototype itself
                        count[w] = count.get(w, 0) + 1
    return count


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    used = uses(root)
    dead = [(p, n, name) for p, n, name in definitions(root) if used.get(name, 0) == 0]
    for p, n, name in dead:
        print("%s:%d: %s: no caller" % (p, n, name), file=sys.stderr)
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
