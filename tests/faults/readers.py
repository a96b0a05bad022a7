#!/usr/bin/python3
"""What pairshard reads, changing or not a regular file.

Shard files truncated in place while a reader has them open (`cp` or
`rsync --inplace` over a live set, `truncate -s`): to 0 bytes, to half, to
a page boundary, after the first batch and after 20 -- against
`pairshard read` (stopping: an error naming the shard; with --skip-corrupt:
the batches that needed the lost blocks skipped and counted) and the Python
Loader (a PairshardError naming the shard; with skip_corrupt=True, skipped
records counted). A reader that maps the file dies of SIGBUS there; every
case fails on a signal death (returncode < 0 or >= 128) or a hang.

Auxiliary files that are a FIFO, a directory, /dev/zero or a symlink to a
FIFO, given as read --resume, validate --baseline/--current/--config,
build --vocab/--rules/--config/--tokenizer-json/--template, clean --rules/
--template (also a FIFO named by a bare word in the working directory) and
tokenize --vocab, and a FIFO as a part's manifest.json for merge: exit 2
within the time limit, the message naming the file and saying it is not a
regular file (a FIFO used to block forever,
/dev/zero to be read until memory ran out).

Data inputs may still be pipes: build and clean of a FIFO (process
substitution) account for every record of it; a SIGTERM or SIGINT while
build waits in the open of a FIFO no one writes to stops it at once.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import faultlib
from faultlib import ROOT, PAIRSHARD, VOCAB, build_args, finish, fresh_dir, note, run

cases = 0


def tap(ok, desc):
    global cases
    cases += 1
    return faultlib.tap(ok, desc)


PY = "/usr/bin/python3"
TIMEOUT = 15
SIGNAL_EXIT = 128  # a shell reports a signal death as 128 + the signal


def died(rc):
    return rc is None or rc < 0 or rc >= SIGNAL_EXIT


# ---- the sets -------------------------------------------------------------------
base = fresh_dir("readers")
corpus = os.path.join(base, "corpus.jsonl")
with open(corpus, "wb") as f:
    subprocess.run([PY, os.path.join(ROOT, "bench", "spider_corpus.py"),
                    os.path.join(ROOT, "tests", "data", "spider"), "3"], stdout=f, check=True)
pristine = os.path.join(base, "set")
r = run(build_args(pristine, [corpus], 2))
shards = sorted(n for n in os.listdir(pristine) if n.endswith(".mdb")) if r.rc == 0 else []
tap(r.rc == 0 and len(shards) == 2, "control: a 2-shard set of Spider x3 builds (%s)" % r.why())
if not shards:
    finish()


def fresh_set(name):
    d = os.path.join(base, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(pristine, d)
    return d


def truncate_all(d, how):
    for n in shards:
        p = os.path.join(d, n)
        size = os.path.getsize(p)
        os.truncate(p, {"zero": 0, "half": size // 2, "page": 3 * 4096}[how])


# ---- pairshard read while the shards shrink --------------------------------------
def read_truncated(how, after, skip):
    """Reads `after` batches, truncates every shard, reads on. The reader
    blocks on its full stdout pipe meanwhile, so it holds the set open with
    batches still to read."""
    d = fresh_set("read-%s-%d-%d" % (how, after, skip))
    args = [PAIRSHARD, "read", d, "--batch-size", "32", "--seed", "1", "--threads", "2"]
    if skip:
        args.append("--skip-corrupt")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    got = sum(1 for _ in range(after) if p.stdout.readline())
    truncate_all(d, how)
    timer = threading.Timer(TIMEOUT, p.kill)
    timer.start()
    rest = p.stdout.read()
    err = p.stderr.read().decode("utf-8", "replace")
    p.wait()
    timer.cancel()
    return p.returncode, got + rest.count(b"\n"), err


full = run([PAIRSHARD, "read", pristine, "--batch-size", "32", "--seed", "1"], timeout=TIMEOUT)
n_batches = full.out.count(b"\n")
tap(full.rc == 0 and n_batches > 100, "control: the intact set reads (%d batches, %s)"
    % (n_batches, full.why()))

for how in ("zero", "half", "page"):
    for after in (1, 20):
        rc, lines, err = read_truncated(how, after, False)
        ok = not died(rc) and rc == 1 and "shard-0000" in err and "truncated" in err
        tap(ok, "read, every shard truncated to %s after %d batch(es): exit %s, the message "
            "names the shard" % (how, after, rc))
        if not ok:
            note(err.strip()[-400:])
        rc, lines, err = read_truncated(how, after, True)
        m = re.search(r"skipped (\d+) batch\(es\), (\d+) record", err)
        skipped = int(m.group(2)) if m else 0
        ok = not died(rc) and rc == 0 and skipped > 0 and lines == n_batches
        tap(ok, "read --skip-corrupt, truncated to %s after %d batch(es): exit %s, %d batches, "
            "%d records of lost blocks skipped and counted" % (how, after, rc, lines, skipped))
        if not ok:
            note(err.strip()[-400:])

# ---- the Python Loader while the shards shrink -----------------------------------
LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PAIRSHARD))), "lib",
                   "libpairshard.so")
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import pairshard
d, after, skip = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
ld = pairshard.Loader(d, batch_size=32, seed=1, threads=2, as_torch=False, skip_corrupt=skip)
n = 0
try:
    for b in ld:
        n += 1
        if n == after:
            print("ready", flush=True)
            sys.stdin.readline()
except pairshard.PairshardError as e:
    print("error %s" % e.message, flush=True)
    sys.exit(3)
print("done %d skipped_records %d" % (n, ld.stats()["skipped_records"]), flush=True)
"""
have_numpy = subprocess.run([PY, "-c", "import numpy"], capture_output=True).returncode == 0
if not have_numpy:
    subprocess.run(["sh", os.path.join(ROOT, "scripts", "apt-install.sh"),
                    os.path.join(base, "apt.log"), "python3-numpy"])
    have_numpy = subprocess.run([PY, "-c", "import numpy"], capture_output=True).returncode == 0
tap(have_numpy and os.path.exists(LIB), "control: python3-numpy and %s are there" % LIB)


def loader_truncated(how, after, skip):
    d = fresh_set("loader-%s-%d-%d" % (how, after, skip))
    env = dict(os.environ, PAIRSHARD_LIB=LIB)
    p = subprocess.Popen([PY, "-c", CHILD, os.path.join(ROOT, "python"), d, str(after),
                          "1" if skip else "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, start_new_session=True)
    first = p.stdout.readline()
    truncate_all(d, how)
    try:
        out, err = p.communicate(b"go\n", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, (first + out).decode("utf-8", "replace"), err.decode("utf-8", "replace")


if have_numpy:
    for how in ("zero", "half", "page"):
        for after in (1, 20):
            rc, out, err = loader_truncated(how, after, False)
            ok = rc == 3 and "shard-0000" in out and "truncated" in out
            tap(ok, "Loader, shards truncated to %s after %d batch(es): PairshardError naming "
                "the shard (exit %s)" % (how, after, rc))
            if not ok:
                note((out + err).strip()[-400:])
            rc, out, err = loader_truncated(how, after, True)
            words = out.split()
            skipped = int(words[-1]) if len(words) >= 4 and words[-4] == "done" else 0
            ok = rc == 0 and skipped > 0
            tap(ok, "Loader(skip_corrupt=True), truncated to %s after %d batch(es): %d records "
                "skipped and counted (exit %s)" % (how, after, skipped, rc))
            if not ok:
                note((out + err).strip()[-400:])

# ---- auxiliary files that are not regular files ----------------------------------
special = fresh_dir("readers-special")
fifo = os.path.join(special, "fifo")
os.mkfifo(fifo)
directory = os.path.join(special, "dir")
os.makedirs(directory)
link = os.path.join(special, "link-to-fifo")
os.symlink(fifo, link)
stats = os.path.join(pristine, "stats.json")
state = os.path.join(special, "state.bin")
r = run([PAIRSHARD, "read", pristine, "--limit", "3", "--save-state", state], timeout=TIMEOUT)
tap(r.rc == 0 and os.path.getsize(state) > 0, "control: read --save-state writes a state")
small = os.path.join(special, "small.jsonl")
with open(corpus, "rb") as src, open(small, "wb") as dst:
    dst.writelines(src.readlines()[:500])
out = os.path.join(special, "out")


def commands(bad):
    """(description, argv) of every command given `bad` as an auxiliary file."""
    b = ["build", "-q", "--label-field", "db_id", "-o", out + "-set"]
    return [
        ("read --resume", ["read", pristine, "--resume", bad]),
        ("validate --baseline", ["validate", "-q", "--baseline", bad, "--current", stats]),
        ("validate --current", ["validate", "-q", "--baseline", stats, "--current", bad]),
        ("validate --config", ["validate", "-q", "--baseline", stats, "--current", stats,
                               "--config", bad]),
        ("build --vocab", b + ["--vocab", bad, small]),
        ("build --tokenizer-json", b + ["--tokenizer-json", bad, small]),
        ("build --rules", b + ["--vocab", VOCAB, "--rules", bad, small]),
        ("build --config", b + ["--vocab", VOCAB, "--config", bad, small]),
        ("clean --rules", ["clean", "--label-field", "db_id", "--rules", bad, "-o",
                           out + ".jsonl", small]),
        ("build --template", b + ["--vocab", VOCAB, "--template", bad, small]),
        ("clean --template", ["clean", "--label-field", "db_id", "--template", bad, "-o",
                              out + ".jsonl", small]),
        ("tokenize --vocab", ["tokenize", "--vocab", bad, small, "-o", out + "-tok.jsonl"]),
    ]


for kind, bad in (("a FIFO", fifo), ("a directory", directory), ("/dev/zero", "/dev/zero"),
                  ("a symlink to a FIFO", link)):
    for what, argv in commands(bad):
        r = run([PAIRSHARD] + argv, timeout=TIMEOUT)
        # validate takes a shard set's directory for its stats.json: a
        # directory without one is refused as such.
        why = ("directory without stats.json" if bad == directory and what.startswith(
            "validate --") and what != "validate --config" else "not a regular file")
        ok = not r.timed_out and r.rc == 2 and bad in r.err and why in r.err
        tap(ok, "%s as %s: exit 2 at once, naming it (%s, %.1fs)" % (kind, what, r.why(), r.secs))
        if not ok:
            note(r.err.strip()[-300:])

# --template's bare word (no '/' or '.': a preset's name or a file here)
# naming a FIFO in the working directory: looked up without opening it.
for what, argv in (("build", ["build", "-q", "--label-field", "db_id", "-o", out + "-set",
                              "--vocab", VOCAB, "--template", "fifo", small]),
                   ("clean", ["clean", "--label-field", "db_id", "--template", "fifo", "-o",
                              out + ".jsonl", small])):
    r = run([PAIRSHARD] + argv, timeout=TIMEOUT, cwd=special)
    ok = not r.timed_out and r.rc == 2 and "fifo" in r.err and "not a regular file" in r.err
    tap(ok, "a FIFO named by a bare word as %s --template: exit 2 at once, naming it (%s, %.1fs)"
        % (what, r.why(), r.secs))
    if not ok:
        note(r.err.strip()[-300:])

# A "shard set" directory whose stats.json is a FIFO, given to validate.
fifo_set = os.path.join(special, "fifo-set")
os.makedirs(fifo_set)
os.mkfifo(os.path.join(fifo_set, "stats.json"))
r = run([PAIRSHARD, "validate", "-q", "--baseline", fifo_set, "--current", stats],
        timeout=TIMEOUT)
ok = not r.timed_out and r.rc == 2 and "stats.json" in r.err and "not a regular file" in r.err
tap(ok, "a set whose stats.json is a FIFO as validate --baseline: exit 2 at once, naming it "
    "(%s, %.1fs)" % (r.why(), r.secs))
if not ok:
    note(r.err.strip()[-300:])

# A part directory whose manifest.json is a FIFO, given to merge.
part = os.path.join(special, "part")
os.makedirs(part)
os.mkfifo(os.path.join(part, "manifest.json"))
r = run([PAIRSHARD, "merge", "-o", out + "-merged", part, pristine], timeout=TIMEOUT)
tap(not r.timed_out and r.rc == 2 and "manifest.json" in r.err and "not a regular file" in r.err,
    "a FIFO as a part's manifest.json for merge: exit 2 at once, naming it (%s)" % r.why())

# ---- data inputs through a pipe still work ----------------------------------------
n_small = 500


def through_fifo(argv_of, source=small):
    """Runs argv_of(path of a FIFO) while a writer feeds it `source`."""
    p = os.path.join(special, "input-fifo")
    if os.path.exists(p):
        os.unlink(p)
    os.mkfifo(p)

    def feed():
        with open(p, "wb") as w, open(source, "rb") as src:
            shutil.copyfileobj(src, w)
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    r = run([PAIRSHARD] + argv_of(p), timeout=60)
    t.join(5)
    return r, p


shutil.rmtree(out + "-pipe", ignore_errors=True)
r, p = through_fifo(lambda f: ["build", "-q", "--vocab", VOCAB, "--label-field", "db_id",
                               "-o", out + "-pipe", f])
acct = {}
inputs = []
if r.rc == 0:
    with open(os.path.join(out + "-pipe", "manifest.json")) as f:
        m = json.load(f)
    acct, inputs = m["accounting"], m["inputs"]
tap(r.rc == 0 and acct.get("records_in") == n_small and
    acct.get("kept", 0) + acct.get("rejected", 0) + acct.get("duplicates", 0) == n_small and
    inputs and inputs[0]["sha256"] == "",
    "build of a FIFO input: every one of its %d records accounted for (%s, records_in %s), "
    "no hash of it in the manifest" % (n_small, r.why(), acct.get("records_in")))
r, p = through_fifo(lambda f: ["clean", "--label-field", "db_id", "-o", out + "-clean.jsonl", f])
tap(r.rc == 0 and ("%d records in" % n_small) in r.err,
    "control: clean of a FIFO input reads all %d records (%s)" % (n_small, r.why()))
r, p = through_fifo(lambda f: ["tokenize", "--vocab", VOCAB, f, "-o", out + "-tok.jsonl"],
                    out + "-clean.jsonl")
with open(out + "-clean.jsonl", "rb") as a, open(out + "-tok.jsonl", "rb") as b:
    same = a.read().count(b"\n") == b.read().count(b"\n")
tap(r.rc == 0 and same, "control: tokenize of a FIFO input encodes every record (%s)" % r.why())


# ---- a signal while an open waits -------------------------------------------------
# A FIFO input no one writes to: open() waits for a writer. The first
# SIGTERM or SIGINT must stop the build there (exit 128 + the signal,
# nothing left behind), not be noted by a process that never looks again.
def blocked_in_open(pid):
    """True once a thread of pid is in openat (syscall 257 on x86-64, 56 on
    arm64); waits up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/syscall" % (pid, t)) as f:
                    if f.read().split()[0] in ("257", "56"):
                        return True
        except (OSError, IndexError):
            pass
        time.sleep(0.05)
    return False


for sig in (signal.SIGTERM, signal.SIGINT):
    wait_dir = fresh_dir("readers-open-wait")
    p = os.path.join(wait_dir, "never-written")
    os.mkfifo(p)
    proc = subprocess.Popen([PAIRSHARD, "build", "-q", "--vocab", VOCAB, "--label-field", "db_id",
                             "-o", os.path.join(wait_dir, "set"), p],
                            stderr=subprocess.PIPE, start_new_session=True)
    blocked = blocked_in_open(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    secs = time.monotonic() - t0
    left = sorted(set(os.listdir(wait_dir)) - {"never-written"})
    tap(blocked and proc.returncode == 128 + sig and secs < 5 and not left and
        b"stopped by signal" in err,
        "%s while build waits in the open of a FIFO input: honoured at once (exit %s after "
        "%.1fs; blocked in open first: %s; left behind: %s)"
        % (sig.name, proc.returncode, secs, blocked, left or "nothing"))

print("# TOTAL readers cases=%d passed=%d" % (cases, cases - faultlib.failures), flush=True)
finish()
