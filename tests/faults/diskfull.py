#!/usr/bin/python3
"""Disk full and I/O errors: `pairshard build`, `merge` and `clean` into
too little space.

Two ways, each at several sizes spanning the set's size (Spider train, 4
shards): a tmpfs of that size (needs root and mount; skipped otherwise),
where writes fail with ENOSPC, and RLIMIT_FSIZE (`ulimit -f`, SIGXFSZ
ignored), where writing past the limit fails with EFBIG. Each build either
fits (exit 0, the reference bytes, verifies) or fails cleanly: exit 1..127
(no signal), a message naming the failed write and its reason, nothing
published at DIR (absent, or the previous set unchanged), and nothing left
beside it (no staging directory, no temporary file). `merge` of two parts
whose duplicates.jsonl are far larger than their shards runs under the
same limits, so the write that fails is sometimes a shard, sometimes the
duplicates: its message must name the file (its path) and the reason.
"""
import json
import os
import re
import resource
import shutil
import signal
import subprocess

from faultlib import (PAIRSHARD, TMP, DEV, TRAIN, build_args, diff_trees, finish, fresh_dir, note, run,
                      tap, tree_bytes, verify)

REASONS = ("No space left on device", "File too large", "Disk quota exceeded")
# A message naming the file that failed (its path) and the reason.
NAMED = re.compile(r"/[^ :]+\.(jsonl|mdb|json|html)[^ :]*: .*\b(" + "|".join(REASONS) + ")")

ref_dir = os.path.join(fresh_dir("disk-ref"), "set")
r = run(build_args(ref_dir, [TRAIN], 4))
ref = tree_bytes(ref_dir)
prev_dir = os.path.join(fresh_dir("disk-prev"), "set")
r2 = run(build_args(prev_dir, [DEV], 1))
prev = tree_bytes(prev_dir)
set_bytes = sum(len(v) for v in ref.values()) if ref else 0
prev_bytes = sum(len(v) for v in prev.values()) if prev else 0
tap(r.rc == 0 and r2.rc == 0, "reference sets build (Spider train %d bytes, dev %d bytes)"
    % (set_bytes, prev_bytes))
largest = max(len(v) for v in ref.values())

trials = failed_clean = fitted = 0


def judge(label, parent, res, previous, reference=None, named=False):
    """One build (or merge) into `parent`/set: fits, giving `reference`
    (the build's by default), or fails cleanly; `named`: the message must
    name the file's path and the reason."""
    global trials, failed_clean, fitted
    reference = ref if reference is None else reference
    trials += 1
    d = os.path.join(parent, "set")
    after = tree_bytes(d)
    beside = sorted(n for n in os.listdir(parent) if n not in ("set", "lost+found"))
    if res.rc == 0:
        ok = not diff_trees(after, reference) and not beside and verify(d).rc == 0
        fitted += ok
        return tap(ok, "%s: fits; the set is complete and verifies%s" % (
            label, "" if ok else " -- NOT: %s, beside DIR: %s" % (diff_trees(after, reference)[:5],
                                                                  beside)))
    msg = res.err.strip().splitlines()[-1] if res.err.strip() else ""
    problems = []
    if res.crashed():
        problems.append(res.why())
    if named and not NAMED.search(msg):
        problems.append("the message names no file and reason")
    elif not any(x in res.err for x in REASONS):
        problems.append("no clear reason in the message")
    if previous is None and after is not None:
        problems.append("DIR was published")
    if previous is not None and diff_trees(after, previous):
        problems.append("the previous set changed: %s" % diff_trees(after, previous)[:5])
    if beside:
        problems.append("left beside DIR: %s" % beside)
    failed_clean += not problems
    return tap(not problems, "%s: %s, \"%s\"%s" % (label, res.why(), msg[:150],
                                                   "" if not problems else " -- " + "; ".join(problems)))


# --- RLIMIT_FSIZE ------------------------------------------------------------
def fsize_limit(n):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # inherited across exec
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    return pre


sizes = sorted({4096, 16384, 32768, 65536, 98304, 131072, 196608, 262144, largest // 2,
                largest * 3 // 4, largest - 1, largest + 4096})
for n in sizes:
    parent = fresh_dir("fsize-%d" % n)
    res = run(build_args(os.path.join(parent, "set"), [TRAIN], 4), preexec=fsize_limit(n))
    judge("ulimit -f %d bytes, fresh DIR" % n, parent, res, None)
for n in (16384, largest // 2):
    parent = fresh_dir("fsize-prev-%d" % n)
    shutil.copytree(prev_dir, os.path.join(parent, "set"))
    res = run(build_args(os.path.join(parent, "set"), [TRAIN], 4), preexec=fsize_limit(n))
    judge("ulimit -f %d bytes, DIR held a set" % n, parent, res, prev)

# --- a tmpfs that fills up -----------------------------------------------------
def try_mount(path, size):
    if os.getuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", path],
                          capture_output=True).returncode == 0


mounted_any = False
kib = 1024
fs_sizes = [64 * kib, 128 * kib, 256 * kib, 512 * kib] + [
    int(set_bytes * f) for f in (0.5, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3, 4)]
for k, size in enumerate(fs_sizes + [prev_bytes + set_bytes // 2, prev_bytes + set_bytes * 3]):
    with_prev = k >= len(fs_sizes)
    mnt = fresh_dir("tmpfs-%d" % k)
    if not try_mount(mnt, size):
        break
    mounted_any = True
    try:
        if with_prev:
            shutil.copytree(prev_dir, os.path.join(mnt, "set"))
        res = run(build_args(os.path.join(mnt, "set"), [TRAIN], 4))
        judge("tmpfs of %d KiB, %s DIR" % (size // kib, "previous" if with_prev else "fresh"),
              mnt, res, prev if with_prev else None)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
if not mounted_any:
    print("ok - # SKIP tmpfs: mount -t tmpfs needs root and a mount-capable environment", flush=True)

# --- merge: two parts whose duplicates outweigh their shards ------------------
# Spider dev six times over: each part keeps its share of 1034 records (a
# 57 KiB shard) and drops five times as many duplicates (about 800 KiB of
# duplicates.jsonl each), so a limit between the two fails on the merged
# duplicates.jsonl, which once said only "writing duplicates.jsonl failed".
dups = os.path.join(fresh_dir("merge-in"), "dev-x6.jsonl")
with open(DEV) as f, open(dups, "w") as g:
    recs = json.load(f)
    for k in range(6):
        for r in recs:
            g.write(json.dumps({"question": r["question"], "query": r["query"],
                                "db_id": r["db_id"]}) + "\n")
parts = []
for k in range(2):
    d = os.path.join(TMP, "merge-in", "part-%d" % k)
    pr = run(build_args(d, [dups], 1) + ["--no-gate", "--part", "%d/2" % k])
    parts.append(d)
merge_ref = os.path.join(fresh_dir("merge-ref"), "set")
mr = run([PAIRSHARD, "merge", "-q", "--no-gate", "-o", merge_ref] + parts)
mref = tree_bytes(merge_ref)
tap(pr.rc == 0 and mr.rc == 0 and mref is not None,
    "merge reference: two parts of Spider dev x6, merged (duplicates.jsonl %d bytes)"
    % len((mref or {}).get("duplicates.jsonl", b"")))


def judge_merge(label, parent, res):
    return judge("merge, " + label, parent, res, None, mref, named=True)


mshard = max(len(v) for k, v in (mref or {"x": b""}).items() if k.endswith(".mdb"))
mdups = len((mref or {}).get("duplicates.jsonl", b""))
dup_failures = 0
for n in sorted({16384, mshard - 1, mshard + 4096, 400000, mdups // 2, mdups - 1, mdups + 4096}):
    parent = fresh_dir("merge-fsize-%d" % n)
    res = run([PAIRSHARD, "merge", "-q", "--no-gate", "-o", os.path.join(parent, "set")] + parts,
              preexec=fsize_limit(n))
    judge_merge("ulimit -f %d bytes" % n, parent, res)
    dup_failures += "duplicates.jsonl: write failed" in res.err
tap(dup_failures > 0, "merge: %d limits fail on duplicates.jsonl, and say so with the path"
    % dup_failures)
for size in (256 * kib, 1024 * kib, 2 * mdups + 4 * mshard + 1024 * kib):
    mnt = fresh_dir("merge-tmpfs-%d" % size)
    if not try_mount(mnt, size):
        break
    try:
        res = run([PAIRSHARD, "merge", "-q", "--no-gate", "-o", os.path.join(mnt, "set")] + parts)
        judge_merge("tmpfs of %d KiB" % (size // kib), mnt, res)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)

# --- clean's output file, large enough that its writeback is started --------
# every 16 MiB (sync_file_range after a flush): the flush at 16 MiB and the
# final fsync may each be the write that fails. The output either fits (the
# reference bytes) or fails with the reason; the old output stays, no
# temporary is left.
def clean_trial(label, parent, res, ref_out, old):
    global trials, failed_clean, fitted
    trials += 1
    out = os.path.join(parent, "out.jsonl")
    now = open(out, "rb").read() if os.path.exists(out) else None
    beside = sorted(n for n in os.listdir(parent) if n not in ("out.jsonl", "lost+found"))
    if res.rc == 0:
        ok = now == ref_out and not beside
        fitted += ok
        return tap(ok, "clean, %s: fits; the output is whole" % label)
    problems = [] if any(x in res.err for x in REASONS) else ["no clear reason in the message"]
    if res.crashed():
        problems.append(res.why())
    if now != old:
        problems.append("the previous output changed")
    if beside:
        problems.append("left beside it: %s" % beside)
    failed_clean += not problems
    return tap(not problems, "clean, %s: %s%s" % (label, res.why(),
                                                  "" if not problems else " -- " + "; ".join(problems)))


big = os.path.join(fresh_dir("clean-big"), "big.jsonl")
with open(TRAIN) as f, open(big, "w") as g:
    recs = json.load(f)
    for k in range(12):  # distinct questions: nothing is a duplicate
        for r in recs:
            g.write(json.dumps({"question": "%s (%d)" % (r["question"], k), "query": r["query"],
                                "db_id": r["db_id"]}) + "\n")
ref_clean = os.path.join(fresh_dir("clean-ref"), "out.jsonl")
rc_ref = run([PAIRSHARD, "clean", "-q", "--threads", "2", "-o", ref_clean, big])
ref_out = open(ref_clean, "rb").read() if rc_ref.rc == 0 else b""
tap(rc_ref.rc == 0 and len(ref_out) > 17 << 20,
    "clean reference: %d bytes of output (over 16 MiB)" % len(ref_out))
MIB = 1 << 20
for n in (8 * MIB, 16 * MIB - 1000, 16 * MIB + 4096, len(ref_out) - 1, len(ref_out) + 4096):
    for with_old in (False, True):
        parent = fresh_dir("clean-fsize-%d-%d" % (n, with_old))
        old = b"the previous output\n" if with_old else None
        if old:
            open(os.path.join(parent, "out.jsonl"), "wb").write(old)
        res = run([PAIRSHARD, "clean", "-q", "--threads", "2", "-o",
                   os.path.join(parent, "out.jsonl"), big], preexec=fsize_limit(n))
        clean_trial("ulimit -f %d bytes%s" % (n, ", an old output" if old else ""), parent, res,
                    ref_out, old)
for size in (20 * MIB, len(ref_out) + MIB):
    mnt = fresh_dir("clean-tmpfs-%d" % size)
    if not try_mount(mnt, size):
        break
    try:
        res = run([PAIRSHARD, "clean", "-q", "--threads", "2", "-o",
                   os.path.join(mnt, "out.jsonl"), big])
        clean_trial("tmpfs of %d MiB" % (size // MIB), mnt, res, ref_out, None)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)

# --- the rejects and duplicates files: the write that fails names its file ---
# Spider dev with a long rejected twin of every record (sql not a string),
# or each record five times (four duplicates): rejects.jsonl or
# duplicates.jsonl is by far the largest file, and the first past the limit.
side = fresh_dir("side-inputs")
pad = " ".join(["word"] * 800)
with open(DEV) as f:
    dev = json.load(f)
with open(os.path.join(side, "rejects.jsonl"), "w") as g:
    for i, r in enumerate(dev):
        g.write(json.dumps({"question": r["question"], "query": r["query"], "db_id": r["db_id"]}) + "\n")
        g.write(json.dumps({"question": "%s %d %s" % (r["question"], i, pad), "query": 1,
                            "db_id": r["db_id"]}) + "\n")
with open(os.path.join(side, "duplicates.jsonl"), "w") as g:
    for r in dev:
        for k in range(5):
            g.write(json.dumps({"question": "%s %s" % (r["question"], pad), "query": r["query"],
                                "db_id": r["db_id"]}) + "\n")
for name in ("rejects", "duplicates"):
    for n in (1 * MIB, 2 * MIB + 4096):
        trials += 1
        parent = fresh_dir("side-%s-%d" % (name, n))
        res = run(build_args(os.path.join(parent, "set"), [os.path.join(side, name + ".jsonl")], 1)
                  + ["--no-gate"], preexec=fsize_limit(n))
        last = res.err.strip().splitlines()[-1] if res.err.strip() else ""
        problems = []
        if res.rc == 0 or res.crashed():
            problems.append(res.why())
        if not ("%s.jsonl: write failed: File too large" % name) in last:
            problems.append("the message does not name %s.jsonl and the reason" % name)
        if sorted(n for n in os.listdir(parent) if n != "lost+found"):
            problems.append("left in DIR's parent: %s" % os.listdir(parent))
        failed_clean += not problems
        tap(not problems, "build, %s.jsonl past ulimit -f %d bytes: %s, \"%s\"%s" % (
            name, n, res.why(), last[:150], "" if not problems else " -- " + "; ".join(problems)))

note("disk: %d builds, merges and cleans with too little space: %d failed cleanly, %d fitted; sizes %s (ulimit -f) "
     "and tmpfs %s" % (trials, failed_clean, fitted, sizes,
                       "not available" if not mounted_any else "up to %d KiB" % (fs_sizes[-1] // kib)))
print("# TOTAL disk trials=%d survived=%d" % (trials, failed_clean + fitted))
finish()
