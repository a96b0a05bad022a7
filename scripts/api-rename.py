#!/usr/bin/env python3
"""One-shot migration of callers to the 0.2 public API names and argument
order (issue 13, item 4). Rewrites the files named on the command line (or
every tracked source, doc and script when none is named) in place:

  ps_cleaner_create(&c, opts, err)              -> ps_cleaner_create(opts, &c, err)
  ps_reader_open(&r, dir, opt, resume, err)     -> ps_reader_open(dir, opt, resume, &r, err)
  ps_cleaner_counts      -> ps_cleaner_get_counts
  ps_reader_info_get     -> ps_reader_get_info
  ps_reader_stats_get    -> ps_reader_get_stats
  ps_reader_state_get    -> ps_reader_get_state
  ps_reader_label        -> ps_reader_get_label
  ps_reader_bucket_bound -> ps_reader_get_bucket_bound
  ps_preprocessor_max_length -> ps_preprocessor_get_max_length
  ps_preprocessor_pad_id     -> ps_preprocessor_get_pad_id

The reordering parses the call's argument list (nested brackets and string
literals respected), so it works on C and Python calls, on declarations,
and across lines. Run it ONCE on files that still use the old API (the
renames are idempotent, the reordering is not: ps_cleaner_create(&o, &c,
err) looks the same before and after). Kept for branches that still call
the old API: run it on their files after merging, then build.
"""
import re
import subprocess
import sys

RENAMES = {
    "ps_cleaner_counts": "ps_cleaner_get_counts",
    "ps_reader_info_get": "ps_reader_get_info",
    "ps_reader_stats_get": "ps_reader_get_stats",
    "ps_reader_state_get": "ps_reader_get_state",
    "ps_reader_label": "ps_reader_get_label",
    "ps_reader_bucket_bound": "ps_reader_get_bucket_bound",
    "ps_preprocessor_max_length": "ps_preprocessor_get_max_length",
    "ps_preprocessor_pad_id": "ps_preprocessor_get_pad_id",
}
# function -> (number of arguments, new order as indexes of the old)
REORDER = {
    "ps_cleaner_create": (3, [1, 0, 2]),
    "ps_reader_open": (5, [1, 2, 3, 0, 4]),
}
OPEN = "([{"
CLOSE = ")]}"


def split_args(text, start):
    """Arguments of the call whose '(' is at text[start]: (list of raw
    argument strings, index just past the ')'), or None when unbalanced."""
    depth, i, args, cur = 0, start + 1, [], start + 1
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            if depth == 0:
                args.append(text[cur:i])
                return args, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[cur:i])
            cur = i + 1
        i += 1
    return None


def looks_like_out(arg):
    """The old first argument: the out-parameter (&x, ctypes.byref(x), or a
    parameter declared as `T **name`)."""
    a = arg.strip()
    return a.startswith("&") or a.startswith("ctypes.byref") or "**" in a or a in ("out", "pr", "pc")


def reorder(text):
    for name, (n, order) in REORDER.items():
        pos = 0
        pat = re.compile(r"\b%s\s*\(" % name)
        while True:
            m = pat.search(text, pos)
            if not m:
                break
            paren = m.end() - 1
            got = split_args(text, paren)
            pos = m.end()
            if not got or len(got[0]) != n or not looks_like_out(got[0][0]):
                continue
            args, end = got
            # Keep each slot's leading whitespace (line breaks, alignment)
            # and move only the argument text.
            lead = [re.match(r"\s*", a).group(0) for a in args]
            body = [a.strip() for a in args]
            trail = re.search(r"\s*$", args[-1]).group(0)
            new = ",".join(lead[k] + body[order[k]] for k in range(n)) + trail
            text = text[: paren + 1] + new + text[end - 1:]
            pos = paren + 1 + len(new)
    return text


def rename(text):
    for old, new in RENAMES.items():
        text = re.sub(r"\b%s\b" % old, new, text)
    return text


def main():
    files = sys.argv[1:]
    if not files:
        out = subprocess.run(["git", "ls-files", "*.c", "*.h", "*.py", "*.md", "*.sh", "*.cu",
                              "*.mk", "*.js"], capture_output=True, text=True, check=True).stdout
        files = [f for f in out.split() if f != "scripts/api-rename.py"]
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        new = rename(reorder(text))
        if new != text:
            with open(f, "w", encoding="utf-8") as fh:
                fh.write(new)
            print("rewrote", f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
