"""Shared by the fault campaigns (tests/faults/*.py, run by run.sh).

Each campaign prints "ok - ..." / "not ok - ..." lines and "# ..." notes;
run.sh numbers them (TAP) and adds up the totals. Paths come from the
environment run.sh sets: PAIRSHARD, PS_ROOT, FAULT_TMP.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

PAIRSHARD = os.environ["PAIRSHARD"]
ROOT = os.environ["PS_ROOT"]
TMP = os.environ["FAULT_TMP"]
DATA = os.path.join(ROOT, "tests", "data")
VOCAB = os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt")
DEV = os.path.join(DATA, "spider", "dev.json")
TRAIN = os.path.join(DATA, "spider", "train.json")

failures = 0


def tap(ok, desc):
    global failures
    print(("ok - " if ok else "not ok - ") + desc, flush=True)
    if not ok:
        failures += 1
    return ok


def note(msg):
    for line in str(msg).splitlines() or [""]:
        print("# " + line, flush=True)


def finish():
    sys.exit(1 if failures else 0)


class Result:
    def __init__(self, rc, out, err, timed_out, secs):
        self.rc, self.out, self.err, self.timed_out, self.secs = rc, out, err, timed_out, secs

    def crashed(self):
        """Killed by a signal (a crash, an abort, a sanitizer), or hung."""
        return self.timed_out or self.rc < 0 or self.rc >= 128

    def why(self):
        if self.timed_out:
            return "timed out after %.0fs" % self.secs
        if self.rc < 0:
            return "killed by signal %d" % -self.rc
        return "exit %d" % self.rc


def run(args, timeout=60, preexec=None, stdout=True, cwd=None):
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=preexec, start_new_session=True,
                         cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        timed_out = True
    return Result(p.returncode, out or b"", err.decode("utf-8", "replace"), timed_out,
                  time.monotonic() - t0)


def build_args(out, inputs, shards, max_length=128):
    return [PAIRSHARD, "build", "-q", "--vocab", VOCAB, "--label-field", "db_id",
            "--shards", str(shards), "--max-length", str(max_length), "-o", out] + list(inputs)


def tree_bytes(d):
    """name -> bytes of every file in the set directory d (one level: a set
    has no subdirectories), or None when d does not exist."""
    if not os.path.isdir(d):
        return None
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isdir(p) and not os.path.islink(p):
            out[name + "/"] = tree_bytes(p)
        else:
            with open(p, "rb") as f:
                out[name] = f.read()
    return out


def diff_trees(a, b):
    """Names that differ between two tree_bytes results (empty: identical)."""
    if a is None or b is None:
        return ["<missing directory>"] if a is not b else []
    names = sorted(set(a) | set(b))
    return [n for n in names if a.get(n) != b.get(n)]


def fresh_dir(name):
    d = os.path.join(TMP, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def verify(d, timeout=60):
    return run([PAIRSHARD, "inspect", "--verify", d], timeout=timeout)


def have_read():
    """True when this pairshard has the read command with --skip-corrupt."""
    r = run([PAIRSHARD, "read", "--help"], timeout=20)
    text = r.out.decode("utf-8", "replace") + r.err
    return r.rc == 0 and "--skip-corrupt" in text and "--tokens" in text
