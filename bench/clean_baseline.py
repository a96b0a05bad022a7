#!/usr/bin/env python3
"""The peer for `make bench`: pairshard clean's default cleaning written in
plain Python (json + unicodedata + re), the way a team would write it.

Same steps and order as pairshard: NFKC, removal of control (Cc) and format
(Cf, except ZWNJ/ZWJ) characters, whitespace folding (in SQL, outside quoted
literals and identifiers), empty checks, exact dedupe on (question, sql),
one JSON object per line out.

usage: clean_baseline.py [--label-field F] INPUT... -o OUT
"""
import argparse
import json
import os
import re
import sys
import time
import unicodedata

def build_removable_class():
    keep_ws = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85}
    chars = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if (cat == "Cc" and cp not in keep_ws) or (cat == "Cf" and cp not in (0x200C, 0x200D)):
            chars.append(cp)
    # collapse into ranges for a compact character class
    parts, start, prev = [], chars[0], chars[0]
    for cp in chars[1:] + [None]:
        if cp is not None and cp == prev + 1:
            prev = cp
            continue
        parts.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev != start else ""))
        if cp is not None:
            start = prev = cp
    return re.compile("[" + "".join(parts) + "]")

REMOVABLE = build_removable_class()
WS = re.compile(r"\s+")
SQL_TOKEN = re.compile(
    r"""('(?:[^']|'')*'?|"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?|--[^\n\r]*|/\*.*?(?:\*/|$))|(\s+)""",
    re.S)

def fold_sql(s):
    pos = 0
    pieces = []
    for m in SQL_TOKEN.finditer(s):
        pieces.append(s[pos:m.start()])
        if m.group(1) is not None:
            pieces.append(m.group(1))
        else:
            prev = pieces[-2] if len(pieces) >= 2 else ""
            pieces.append("\n" if prev.startswith("--") else " ")
        pos = m.end()
    pieces.append(s[pos:])
    return "".join(pieces).strip()

def clean(text, sql):
    text = unicodedata.normalize("NFKC", text)
    text = REMOVABLE.sub("", text)
    if sql:
        return fold_sql(text)
    return WS.sub(" ", text).strip()

def records(path):
    with open(path, "rb") as f:
        data = f.read().decode("utf-8")
    if data.lstrip().startswith("["):
        for i, rec in enumerate(json.loads(data)):
            yield f"{path}:#{i}", f"{os.path.basename(path)}:#{i}", rec
    else:
        for n, line in enumerate(data.split("\n"), 1):
            if line.strip():
                yield f"{path}:{n}", f"{os.path.basename(path)}:{n}", json.loads(line)

def cleaned_records(inputs, label_field, counts):
    """Yields (source, id, question, sql, label) of every kept record, in
    input order, counting in, kept, rejected and duplicates."""
    seen = set()
    for path in inputs:
        for source, rid, rec in records(path):
            counts["in"] += 1
            q = rec.get("question")
            s = rec.get("sql") if isinstance(rec.get("sql"), str) else rec.get("query")
            if not isinstance(q, str) or not isinstance(s, str):
                counts["rejected"] += 1
                continue
            q, s = clean(q, False), clean(s, True)
            if not q or not s:
                counts["rejected"] += 1
                continue
            if (q, s) in seen:
                counts["duplicates"] += 1
                continue
            seen.add((q, s))
            label = rec.get(label_field)
            counts["kept"] += 1
            yield (source, str(rec.get("id", rid)), q, s,
                   None if label is None or label == "" else str(label))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--label-field", default="label")
    a = ap.parse_args()
    t0 = time.perf_counter()
    counts = {"in": 0, "kept": 0, "rejected": 0, "duplicates": 0}
    with open(a.output, "w", encoding="utf-8") as out:
        for source, rid, q, s, label in cleaned_records(a.inputs, a.label_field, counts):
            out.write(json.dumps({"id": rid, "question": q, "sql": s, "label": label,
                                  "source": source}, ensure_ascii=False,
                                 separators=(",", ":")) + "\n")
    counts["seconds"] = time.perf_counter() - t0  # processing only, not start-up
    print(json.dumps(counts), file=sys.stderr)

if __name__ == "__main__":
    main()
