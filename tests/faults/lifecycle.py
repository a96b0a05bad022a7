#!/usr/bin/python3
"""Lifecycle of a build's output directory and its staging.

  output directory safety: build/merge -o onto a directory of other files
      (relative, absolute, the current directory, the inputs' directory),
      a symbolic link, a regular file, a FIFO: exit 2 naming DIR and why,
      every byte intact, nothing left beside it; --force replaces a
      directory of other files but still no link, non-directory or a DIR
      holding an input. Controls: an empty DIR and an existing set are
      (re)placed.
  namespaces: a builder in another PID namespace (unshare --pid), paused
      with SIGSTOP, keeps its staging while a second build of the same
      DIR runs from this namespace, and completes; a stale staging
      directory with an unlocked lock file is removed, a look-alike
      without our lock file is not; every state a killed builder leaves
      (empty, lock alone, lock with a half-removed set) is removed, and
      strace shows the lock file is removed last.
  signals: SIGINT/SIGTERM/SIGHUP at seeded random moments of a build (and
      of a merge): exit 130/143/129, no staging left, DIR untouched or the
      complete new set (byte-identical to the reference, inspect --verify).
  descriptor limits: --threads 12 under ulimit -n 16 and --threads 100
      under 64: exit 2 naming the limit, no staging left; 12 shards under
      ulimit -n 16 build (phase 1 holds a spool a worker, not a shard) and
      verify (and, a control, one shard under ulimit -n 16 still builds).
  names: DIR names of 250 and 255 bytes build (staging within NAME_MAX),
      and a rebuild replaces them.
"""
import fcntl
import os
import random
import resource
import shutil
import signal
import subprocess
import time

from faultlib import (DEV, PAIRSHARD, TMP, TRAIN, VOCAB, build_args, diff_trees, finish,
                      fresh_dir, note, run, tap, tree_bytes, verify)

SEED = int(os.environ.get("FAULT_SEED", "20261202"))
TRIALS = int(os.environ.get("FAULT_SIGNAL_TRIALS", "6"))  # per signal
rng = random.Random(SEED)
counts = {}


def check(cls, ok, desc):
    c = counts.setdefault(cls, [0, 0])
    c[0] += 1
    c[1] += bool(ok)
    return tap(ok, "%s: %s" % (cls, desc))


def beside(parent, name):
    """Entries of `parent` that are staging directories of `name`."""
    return sorted(n for n in os.listdir(parent) if n.startswith("." + name[:200]) and ".tmp." in n)


def snapshot(path):
    """Everything at `path` (a tree, a link, a file or a FIFO), to compare."""
    st = os.lstat(path)
    if os.path.islink(path):
        return ("link", os.readlink(path))
    if os.path.isdir(path):
        return ("dir", {n: snapshot(os.path.join(path, n)) for n in sorted(os.listdir(path))})
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return ("file", f.read())
    return ("special", st.st_mode, st.st_ino)


def thesis(d):
    os.makedirs(os.path.join(d, "chapters"), exist_ok=True)
    with open(os.path.join(d, "thesis.tex"), "w") as f:
        f.write("\\documentclass{book}\n")
    with open(os.path.join(d, "chapters", "one.tex"), "w") as f:
        f.write("Years of work.\n")
    return d


def build(out, inputs, extra=(), cwd=None, preexec=None, timeout=120):
    args = build_args(out, inputs, 1)
    args[2:2] = list(extra)
    t0 = time.monotonic()
    p = subprocess.run(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=preexec, timeout=timeout)
    return p.returncode, p.stderr.decode("utf-8", "replace"), time.monotonic() - t0


def refused(cls, desc, target, inputs, extra=(), cwd=None, names=None, why=None):
    """The build must exit 2, name DIR (and why), leave `target` intact and
    leave nothing beside it."""
    parent = os.path.dirname(os.path.abspath(target))
    before = snapshot(target)
    listing = sorted(os.listdir(parent))
    out = names or target
    rc, err, _ = build(out, inputs, extra, cwd=cwd)
    ok = rc == 2 and snapshot(target) == before and sorted(os.listdir(parent)) == listing
    ok = ok and out.rstrip("/") in err and (why is None or why in err)
    check(cls, ok, "%s: exit %d, %s%s" % (desc, rc, "intact" if snapshot(target) == before
                                          else "CHANGED", "" if ok else " | " + err[-300:]))


# ---- output directory safety ---------------------------------------------------
CLS = "output directory safety"
base = fresh_dir("lc-outdir")
inputs_dir = os.path.join(base, "inputs")
os.makedirs(inputs_dir)
dev_copy = os.path.join(inputs_dir, "dev.json")
shutil.copy(DEV, dev_copy)
t = thesis(os.path.join(base, "thesis"))
refused(CLS, "build -o a directory of other files (relative path)", t, [DEV],
        cwd=base, names="thesis", why="refusing")
refused(CLS, "build -o a directory of other files (absolute path)", t, [DEV], why="refusing")
refused(CLS, "build -o the current directory by absolute path", t, [DEV], cwd=t)
refused(CLS, "build -o the inputs' directory", inputs_dir, [dev_copy], why="input")
refused(CLS, "build --force -o the inputs' directory", inputs_dir, [dev_copy], ["--force"],
        why="input")
os.symlink("thesis", os.path.join(base, "link"))
refused(CLS, "build -o a symbolic link to a directory", os.path.join(base, "link"), [DEV],
        why="symbolic link")
refused(CLS, "build --force -o a symbolic link (trailing slash)", os.path.join(base, "link"),
        [DEV], ["--force"], names=os.path.join(base, "link") + "/", why="symbolic link")
regular = os.path.join(base, "regular")
with open(regular, "w") as f:
    f.write("not a set\n")
refused(CLS, "build -o a regular file", regular, [DEV], why="regular file")
fifo = os.path.join(base, "fifo")
os.mkfifo(fifo)
refused(CLS, "build --force -o a FIFO", fifo, [DEV], ["--force"], why="FIFO")

empty = os.path.join(base, "empty")
os.makedirs(empty)
rc, err, _ = build(empty, [DEV])
check(CLS, rc == 0 and verify(empty).rc == 0, "control: build -o an empty directory: exit %d"
      % rc)
ref_dev = os.path.join(fresh_dir("lc-ref-dev"), "set")
build(ref_dev, [DEV])
existing = os.path.join(base, "existing")
build(existing, [TRAIN])
rc, err, _ = build(existing, [DEV])
check(CLS, rc == 0 and not diff_trees(tree_bytes(existing), tree_bytes(ref_dev))
      and not beside(base, "existing"), "control: build -o an existing set replaces it: exit %d"
      % rc)
forced = thesis(os.path.join(base, "forced"))
rc, err, _ = build(forced, [DEV], ["--force"])
check(CLS, rc == 0 and not diff_trees(tree_bytes(forced), tree_bytes(ref_dev)),
      "build --force -o a directory of other files replaces it: exit %d %s" % (rc, err[-200:]))

# merge -o: the same rule (the same check).
parts = []
for k in range(2):
    d = os.path.join(base, "part%d" % k)
    args = build_args(d, [DEV], 1)
    args[2:2] = ["--part", "%d/2" % k, "--buckets", "16,32,64,128"]
    r = run(args)
    parts.append(d)


def merge(out, extra=()):
    p = subprocess.run([PAIRSHARD, "merge", "-q"] + list(extra) + ["-o", out] + parts,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stderr.decode("utf-8", "replace")


for desc, target, extra, why in [
        ("merge -o a directory of other files", t, (), "refusing"),
        ("merge -o a part it reads", parts[0], (), "input"),
        ("merge --force -o a part it reads", parts[0], ("--force",), "input"),
        ("merge -o a symbolic link", os.path.join(base, "link"), ("--force",), "symbolic link")]:
    before = snapshot(target)
    rc, err = merge(target, extra)
    ok = rc == 2 and snapshot(target) == before and why in err
    check(CLS, ok, "%s: exit %d%s" % (desc, rc, "" if ok else " | " + err[-300:]))
m_empty = os.path.join(base, "m-empty")
os.makedirs(m_empty)
rc, err = merge(m_empty)
check(CLS, rc == 0 and verify(m_empty).rc == 0, "control: merge -o an empty directory: exit %d"
      % rc)
m_forced = thesis(os.path.join(base, "m-forced"))
rc, err = merge(m_forced, ("--force",))
check(CLS, rc == 0 and verify(m_forced).rc == 0 and
      not os.path.exists(os.path.join(m_forced, "thesis.tex")),
      "merge --force -o a directory of other files replaces it: exit %d" % rc)

# ---- a large input, for builds that take a while --------------------------------
big = os.path.join(fresh_dir("lc-big"), "big.jsonl")
with open(TRAIN) as f:
    import json
    recs = json.load(f)
with open(big, "w") as f:
    for k in range(int(os.environ.get("FAULT_LIFECYCLE_COPIES", "30"))):
        for r in recs:
            f.write(json.dumps({"question": "%s v%d" % (r["question"], k), "query": r["query"],
                                "db_id": r["db_id"]}) + "\n")


def big_args(out):
    return build_args(out, [big], 4) + ["--threads", "2"]


ref_big = os.path.join(fresh_dir("lc-ref-big"), "set")
times = []
for i in range(3):
    shutil.rmtree(ref_big, ignore_errors=True)
    r = run(big_args(ref_big), timeout=300)
    times.append(r.secs)
duration = sorted(times)[1]
ref_big_bytes = tree_bytes(ref_big)
tap(r.rc == 0 and verify(ref_big).rc == 0, "reference build of the large input verifies "
    "(%.2fs median)" % duration)

# ---- namespaces ------------------------------------------------------------------
CLS = "namespaces"
parent = fresh_dir("lc-ns")
d = os.path.join(parent, "set")
first = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc"] + big_args(d),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
staged = []
deadline = time.monotonic() + 60
while not staged and time.monotonic() < deadline and first.poll() is None:
    staged = [n for n in beside(parent, "set")
              if os.path.exists(os.path.join(parent, n, "set", ".spool-00000"))
              or os.path.exists(os.path.join(parent, n, ".spool-00000"))]
    time.sleep(0.005)
os.killpg(first.pid, signal.SIGSTOP)
staged = beside(parent, "set")
rc2, err2, _ = build(d, [DEV])
survived = bool(staged) and all(os.path.isdir(os.path.join(parent, n)) for n in staged)
os.killpg(first.pid, signal.SIGCONT)
try:
    _, err1 = first.communicate(timeout=300)
except subprocess.TimeoutExpired:
    os.killpg(first.pid, signal.SIGKILL)
    _, err1 = first.communicate()
rc1 = first.returncode
check(CLS, survived and rc2 == 0, "a build from this namespace leaves the paused builder's "
      "staging (in another PID namespace) alone: %s, second build exit %d"
      % ("kept" if survived else "REMOVED" if staged else "never seen", rc2))
check(CLS, rc1 == 0 and not diff_trees(tree_bytes(d), ref_big_bytes) and verify(d).rc == 0
      and not beside(parent, "set"), "the paused builder resumes and publishes its complete "
      "set: exit %d %s" % (rc1, err1.decode("utf-8", "replace")[-200:]))

# A stale staging directory: our lock file, nobody holding it.
stale = os.path.join(parent, ".set.tmp.Ab12Cd")
os.makedirs(os.path.join(stale, "set"))
with open(os.path.join(stale, "lock"), "w") as f:
    f.write("pairshard staging directory\n")
with open(os.path.join(stale, "set", ".spool-00000"), "wb") as f:
    f.write(b"\0" * (1 << 20))
lookalike = os.path.join(parent, ".set.tmp.Zz9Yy8")
os.makedirs(lookalike)
with open(os.path.join(lookalike, "notes.txt"), "w") as f:
    f.write("someone else's\n")
held = os.path.join(parent, ".set.tmp.Hh7Gg6")
os.makedirs(os.path.join(held, "set"))
with open(os.path.join(held, "lock"), "w") as f:
    f.write("pairshard staging directory\n")
holder = open(os.path.join(held, "lock"), "rb")
fcntl.flock(holder, fcntl.LOCK_EX)
rc, err, _ = build(d, [DEV])
check(CLS, rc == 0 and not os.path.exists(stale), "a stale staging directory (unlocked lock "
      "file) is removed by the next build: exit %d, %s" % (rc, "removed" if not
                                                          os.path.exists(stale) else "LEFT"))
check(CLS, rc == 0 and os.path.isdir(lookalike) and os.path.isdir(held),
      "control: a look-alike without our lock file and a staging whose lock is held are kept")
holder.close()
shutil.rmtree(lookalike)
shutil.rmtree(held)

# What a builder killed at any moment leaves: an empty staging directory
# (killed after mkdtemp), a lock file alone, empty or part-written (killed
# before or while writing it), or our lock file with part of a set (killed
# while its staging was being removed: the lock file goes last). The next
# build removes all of them; a part-written lock beside other files is not
# proven ours and is kept.
killed_states = {"empty directory": {}, "empty lock file alone": {"lock": ""},
                 "part-written lock file alone": {"lock": "pairshard stag"},
                 "lock file and a half-removed set": {"lock": "pairshard staging directory\n",
                                                      "set/shard-00001.mdb": "x" * 4096}}
made = {}
for i, (what, files) in enumerate(sorted(killed_states.items())):
    path = os.path.join(parent, ".set.tmp.Kk%04d" % i)
    os.makedirs(path)
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
        with open(os.path.join(path, rel), "w") as f:
            f.write(text)
    made[what] = path
unproven = os.path.join(parent, ".set.tmp.Uu5Vv4")
os.makedirs(unproven)
for rel, text in (("lock", ""), ("draft.txt", "not ours\n")):
    with open(os.path.join(unproven, rel), "w") as f:
        f.write(text)
rc, err, _ = build(d, [DEV])
left = [what for what, path in sorted(made.items()) if os.path.exists(path)]
check(CLS, rc == 0 and not left, "every staging state a killed builder can leave (%s) is removed "
      "by the next build: exit %d, left: %s" % (", ".join(sorted(made)), rc, left or "none"))
check(CLS, rc == 0 and os.path.isfile(os.path.join(unproven, "draft.txt")),
      "control: an empty lock file beside a file of someone else's is kept")
shutil.rmtree(unproven)

# The order that makes the above hold: a build removes its staging (the
# previous set swapped into it) with the lock file last.
strace = shutil.which("strace")
if strace:
    trace = os.path.join(TMP, "lc-strace.txt")
    r = run([strace, "-f", "-qq", "-e", "trace=unlink,unlinkat,rmdir", "-o", trace]
            + build_args(d, [TRAIN], 2), timeout=300)
    with open(trace) as f:
        calls = [ln for ln in f if ".set.tmp." in ln and "= 0" in ln]
    lock_at = [i for i, ln in enumerate(calls) if '/lock"' in ln]
    after_lock = [ln for ln in calls[lock_at[-1] + 1:] if "rmdir" not in ln] if lock_at else []
    check(CLS, r.rc == 0 and len(calls) > 3 and len(lock_at) == 1 and not after_lock,
          "a build removes its staging (the previous set inside) with the lock file last: "
          "exit %d, %d removals, lock at %s, %d removals after it"
          % (r.rc, len(calls), lock_at, len(after_lock)))
else:
    print("ok - %s: staging removal order # SKIP strace is not installed" % CLS, flush=True)

# ---- signals -----------------------------------------------------------------------
CLS = "signals"
prev = tree_bytes(ref_dev)
states = {"untouched": 0, "complete": 0, "bad": 0}
def signal_build(d, sig, delay):
    """Starts the large build into d and sends `sig` after `delay`; returns
    (whether it still ran then, exit status, stderr)."""
    p = subprocess.Popen(big_args(d), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    time.sleep(delay)
    running = p.poll() is None
    if running:
        p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    return running, p.returncode, err


for trial in range(3 * TRIALS):
    sig = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP][trial % 3]
    scenario = "fresh" if trial % 2 == 0 else "previous"
    parent = fresh_dir("lc-sig-%03d" % trial)
    d = os.path.join(parent, "set")
    # Half over the whole build, half over its end, where the shards are
    # written and the set is swapped in; a build that finished first is
    # retried sooner.
    delay = max(0.03, duration * (rng.uniform(0.05, 1.0) if trial % 4 < 2
                                  else rng.uniform(0.7, 1.05)))
    for attempt in range(6):
        shutil.rmtree(d, ignore_errors=True)
        if scenario == "previous":
            shutil.copytree(ref_dev, d)
        running, rc, err = signal_build(d, sig, delay)
        if running:
            break
        delay *= 0.85
    after = tree_bytes(d)
    if (after is None and scenario == "fresh") or (scenario == "previous" and after is not None
                                                   and not diff_trees(after, prev)):
        state = "untouched"
    elif after is not None and not diff_trees(after, ref_big_bytes) and verify(d).rc == 0:
        state = "complete"
    else:
        state = "bad"
    states[state] += 1
    # 0 only when the signal came after the command had finished its work
    # (a sanitized binary lingers in its exit-time leak check).
    rc_ok = rc == 128 + sig or (rc == 0 and state == "complete")
    left = beside(parent, "set")
    check(CLS, running and rc_ok and state != "bad" and not left,
          "%s at %.0f%% of the build (%s DIR)%s: exit %s, DIR %s, %s" % (
              signal.Signals(sig).name, 100 * delay / duration, scenario,
              "" if running else " (it had finished)", rc, state,
              "staging LEFT: %s" % left if left else "no staging left"))
note("signals: DIR afterwards: %d untouched, %d complete new set, %d bad" % (
    states["untouched"], states["complete"], states["bad"]))

# merge: the same handlers, the same clean-up.
big_parts = []
for k in range(2):
    pd = os.path.join(fresh_dir("lc-bigpart%d" % k), "part")
    args = big_args(pd) + ["--part", "%d/2" % k, "--buckets", "16,32,64,128"]
    run(args, timeout=300)
    big_parts.append(pd)
merge_args = [PAIRSHARD, "merge", "-q", "-o"]
ref_merged = os.path.join(fresh_dir("lc-ref-merged"), "set")
t0 = time.monotonic()
r = run(merge_args + [ref_merged] + big_parts, timeout=300)
merge_secs = time.monotonic() - t0
ref_merged_bytes = tree_bytes(ref_merged)
for trial, sig in enumerate([signal.SIGINT, signal.SIGTERM, signal.SIGHUP]):
    parent = fresh_dir("lc-msig-%d" % trial)
    d = os.path.join(parent, "set")
    delay = max(0.02, merge_secs * rng.uniform(0.1, 0.8))
    for attempt in range(6):
        shutil.rmtree(d, ignore_errors=True)
        p = subprocess.Popen(merge_args + [d] + big_parts, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(delay)
        running = p.poll() is None
        if running:
            p.send_signal(sig)
        p.communicate(timeout=120)
        if running:
            break
        delay *= 0.7
    after = tree_bytes(d)
    state = ("untouched" if after is None else "complete"
             if not diff_trees(after, ref_merged_bytes) and verify(d).rc == 0 else "bad")
    left = beside(parent, "set")
    rc_ok = p.returncode == 128 + sig or (p.returncode == 0 and state == "complete")
    check(CLS, r.rc == 0 and running and rc_ok and state != "bad" and not left,
          "merge, %s at %.0f%% (of %.2fs): exit %s, DIR %s, %s" % (
              signal.Signals(sig).name, 100 * delay / merge_secs, merge_secs, p.returncode,
              state, "staging LEFT: %s" % left if left else "no staging left"))


# ---- descriptor limits -----------------------------------------------------------
CLS = "descriptor limits"


def nofile(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


for limit, threads in [(16, 12), (64, 100)]:
    parent = fresh_dir("lc-fd-t%d" % threads)
    d = os.path.join(parent, "set")
    args = build_args(d, [DEV], 1) + ["--threads", str(threads)]
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=nofile(limit), timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    left = os.listdir(parent)
    check(CLS, p.returncode == 2 and not left and str(limit) in err,
          "ulimit -n %d, --threads %d: exit %d, %s%s" % (
              limit, threads, p.returncode, "nothing left" if not left else "LEFT %s" % left,
              "" if str(limit) in err else " | " + err[-200:]))

parent = fresh_dir("lc-fd-12")
d = os.path.join(parent, "set")
p = subprocess.run(build_args(d, [DEV], 12), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   preexec_fn=nofile(16), timeout=300)
check(CLS, p.returncode == 0 and os.listdir(parent) == ["set"] and verify(d).rc == 0,
      "ulimit -n 16, --shards 12 at one thread: builds and verifies: exit %d%s" % (
          p.returncode, " | " + p.stderr.decode("utf-8", "replace")[-200:] if p.returncode else ""))

parent = fresh_dir("lc-fd-1")
p = subprocess.run(build_args(os.path.join(parent, "set"), [DEV], 1), stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, preexec_fn=nofile(16), timeout=300)
check(CLS, p.returncode == 0 and os.listdir(parent) == ["set"],
      "control: ulimit -n 16 with 1 shard still builds: exit %d" % p.returncode)

# ---- names -------------------------------------------------------------------------
CLS = "names"
for length in (250, 255):
    parent = fresh_dir("lc-name-%d" % length)
    d = os.path.join(parent, "n" * length)
    rc, err, _ = build(d, [DEV])
    rc2, err2, _ = build(d, [DEV])
    ok = rc == 0 and rc2 == 0 and verify(d).rc == 0 and os.listdir(parent) == ["n" * length]
    check(CLS, ok, "a %d-byte DIR name builds and rebuilds: exit %d/%d%s" % (
        length, rc, rc2, "" if ok else " | " + (err or err2)[-200:]))

# A build the gate stops writes DIR.report.json, .report.html, .stats.json and
# .rejects.jsonl beside DIR: with a long DIR name those are shortened to fit
# NAME_MAX too (the start of the name, "~" and a hash), and they are written.
parent = fresh_dir("lc-name-gate")
half_bad = os.path.join(parent, "half-bad.jsonl")
with open(DEV, encoding="utf-8") as f, open(half_bad, "w", encoding="utf-8") as g:
    for i, r in enumerate(json.load(f)[:200]):
        g.write(json.dumps({"question": r["question"], "db_id": r["db_id"],
                            "sql": r["query"] if i % 2 else i}) + "\n")
d = os.path.join(parent, "n" * 250)
rc, err, _ = build(d, [half_bad])
beside = sorted(n for n in os.listdir(parent) if n.startswith("n"))
suffixes = sorted(n.rsplit("~", 1)[-1].split(".", 1)[-1] for n in beside)
ok = (rc == 1 and suffixes == ["rejects.jsonl", "report.html", "report.json", "stats.json"]
      and all(len(n) <= 255 and "~" in n for n in beside) and not os.path.exists(d))
check(CLS, ok, "a 250-byte DIR name stopped by the gate writes its four reports beside DIR "
      "within NAME_MAX: exit %d, %s%s" % (rc, suffixes, "" if ok else " | " + err[-200:]))

total = sum(c[0] for c in counts.values())
passed = sum(c[1] for c in counts.values())
for cls, (n, p) in counts.items():
    note("%s: %d/%d" % (cls, p, n))
print("# TOTAL lifecycle cases=%d passed=%d" % (total, passed))
finish()
