#!/usr/bin/python3
"""Numbers and names from flags, environment variables and Python.

Every numeric flag of every command, and every environment variable the
CLI reads (--part auto: SLURM_ARRAY_TASK_ID/_COUNT/_MIN, JOB_COMPLETION_INDEX,
PAIRSHARD_PART_COUNT; the reader's RANK and WORLD_SIZE), given an empty
value, junk, a sign, blanks, overflow and 2^32+k: the command must stop
with exit 2 and one message naming the flag or variable and quoting the
value ("pairshard build: --shards: 'abc' is not a whole number (1..100000)"),
and build nothing. Then pairshard.Loader: integers outside the C type they
are passed as, bools, NUL bytes in the path, None and other non-paths must
raise ValueError / TypeError naming the argument, before ctypes truncates
them.
"""
import json
import os
import subprocess
import sys

from faultlib import DEV, PAIRSHARD, ROOT, TMP, VOCAB, finish, fresh_dir, note, run, tap

WORK = fresh_dir("args")
SMALL = os.path.join(WORK, "small.json")
with open(DEV, encoding="utf-8") as f:
    json.dump(json.load(f)[:60], open(SMALL, "w", encoding="utf-8"))
SET = os.path.join(WORK, "set")
r = run([PAIRSHARD, "build", "-q", "--vocab", VOCAB, "-o", SET, SMALL])
tap(r.rc == 0, "control: a 60-record build succeeds (%s)" % r.why())

BAD = ["", "abc", "-1", "5x", " 5", "+5", "0x10", "1.5", "18446744073709551616",
       "99999999999999999999999"]
# 2^32+k: what a 32-bit field would have wrapped to k; in range for these.
WIDE = ("max-record-bytes", "max-field-bytes", "max-tokens", "seed", "epoch", "limit")


def shown(v):
    return "'%s'" % v


def refused(r, subject, value, out_dir=None):
    """Exit 2, the subject named with the value quoted, nothing built."""
    msg = r.err.strip().splitlines()
    ok = (r.rc == 2 and len(msg) == 1 and subject in msg[0] and shown(value) in msg[0]
          and not (out_dir and os.path.exists(out_dir)))
    return ok, (r.why() + ": " + " | ".join(msg))[:300]


# ---- flags ------------------------------------------------------------------
# (command, flag, the rest of a command line that works with a good value,
# values that are in range for the C type but outside the flag's range)
OUT = os.path.join(WORK, "out")
BUILD = ["build", "-q", "--vocab", VOCAB, "-o", OUT, SMALL]
FLAGS = [("build", f, BUILD, extra) for f, extra in [
    ("max-length", ["1048577"]), ("shards", ["0", "100001"]), ("auto-buckets", ["0"]),
    ("bucket-multiple", ["0", "4097"]), ("block-records", ["0"]), ("zstd-level", ["0", "23"]),
    ("threads", ["0", "1025"]), ("max-record-bytes", ["0"]), ("max-field-bytes", ["0"])]]
FLAGS += [("clean", f, ["clean", "-o", os.path.join(WORK, "clean.jsonl"), SMALL], ["0"])
          for f in ("max-record-bytes", "max-field-bytes")]
FLAGS += [("tokenize", "max-length", ["tokenize", "--vocab", VOCAB, "-o",
                                      os.path.join(WORK, "tok.jsonl"), SMALL], ["2147483649"])]
FLAGS += [("bench-tokenize", f, ["bench-tokenize", "--vocab", VOCAB, SMALL], extra)
          for f, extra in [("max-length", []), ("threads", ["0", "1025"])]]
READ_FLAGS = [("batch-size", ["0"]), ("max-tokens", ["0"]), ("pad-multiple", ["0"]),
              ("pad-id", ["2147483648"]), ("seed", []), ("epoch", []), ("shuffle-window", ["0"]),
              ("sort-pool", ["0"]), ("rank", ["1048577"]), ("world-size", ["0"]),
              ("threads", ["0", "1025"]), ("prefetch", ["1", "4097"]), ("device", ["1025"])]
for cmd in ("read", "bench-read"):
    FLAGS += [(cmd, f, [cmd, SET], extra) for f, extra in READ_FLAGS]
FLAGS += [("read", "limit", ["read", SET], []), ("bench-read", "epochs", ["bench-read", SET],
                                                 ["0", "1000001"])]

flag_cases = flag_ok = 0
for cmd, flag, line, extra in FLAGS:
    values = BAD + ([] if flag in WIDE else ["4294967297", "4294967296"]) + extra
    for v in values:
        args = [PAIRSHARD] + line[:1] + ["--%s=%s" % (flag, v)] + line[1:]
        r = run(args, timeout=30)
        ok, why = refused(r, "pairshard %s: --%s: " % (cmd, flag), v, OUT if cmd == "build" else None)
        flag_cases += 1
        flag_ok += ok
        if os.path.exists(OUT):
            subprocess.run(["rm", "-rf", OUT])
        if not ok:
            tap(False, "%s --%s=%r is refused with one message naming the flag (%s)"
                % (cmd, flag, v, why))
tap(flag_ok == flag_cases, "%d of %d bad numeric flag values refused with exit 2 and "
    "'pairshard CMD: --FLAG: 'VALUE' ...'" % (flag_ok, flag_cases))

# --part K/N, names (enums) and a fraction
PART = ["-1/2", "2/2", "0/0", "1/", "/2", "a/2", "1/b", "1/2x", " 1/2", "+1/2", "4294967297/2",
        "0/4294967297", "18446744073709551616/2", "", "1-2"]
for v in PART:
    r = run([PAIRSHARD] + BUILD[:1] + ["--part", v] + BUILD[1:], timeout=30)
    ok, why = refused(r, "pairshard build: --part: ", v, OUT)
    ok = ok and "18446744073709551615" not in r.err
    subprocess.run(["rm", "-rf", OUT])
    tap(ok, "build --part %r is refused naming --part and the value (%s)" % (v, why))
ENUMS = [("read", "pad", ["read", SET], ["", "Longest", "x"]),
         ("tokenize", "field", ["tokenize", "--vocab", VOCAB, "-o",
                                os.path.join(WORK, "tok.jsonl"), SMALL], ["", "Question", "label"]),
         ("build", "utf8", BUILD, ["", "drop"]), ("build", "normalize", BUILD, ["nfd"])]
for cmd, flag, line, values in ENUMS:
    for v in values:
        r = run([PAIRSHARD] + line[:1] + ["--%s=%s" % (flag, v)] + line[1:], timeout=30)
        ok, why = refused(r, "pairshard %s: --%s: " % (cmd, flag), v)
        ok = ok and "is not one of" in r.err
        tap(ok, "%s --%s=%r lists the accepted names (%s)" % (cmd, flag, v, why))
for v in ["", "abc", "-1", "0", "3600", "inf", "nan", " 1", "0x10", "1e2"]:
    r = run([PAIRSHARD, "bench-tokenize", "--seconds", v, "--vocab", VOCAB, SMALL], timeout=30)
    ok, why = refused(r, "pairshard bench-tokenize: --seconds: ", v)
    tap(ok, "bench-tokenize --seconds %r is refused (%s)" % (v, why))

# ---- environment --------------------------------------------------------------
SLURM = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
K8S = {"JOB_COMPLETION_INDEX": "1", "PAIRSHARD_PART_COUNT": "2"}
ENV_BAD = ["", "abc", "-1", "1x", " 1", "+1", "18446744073709551617", "4294967297"]
env_cases = []
for base in (SLURM, K8S):
    for var in base:
        env_cases += [(base, var, v) for v in ENV_BAD]
env_cases += [(SLURM, "SLURM_ARRAY_TASK_MIN", v) for v in ENV_BAD]
env_cases += [(SLURM, "SLURM_ARRAY_TASK_ID", "2"), (SLURM, "SLURM_ARRAY_TASK_COUNT", "0"),
              (K8S, "JOB_COMPLETION_INDEX", "2"), (K8S, "PAIRSHARD_PART_COUNT", "0"),
              (dict(SLURM, SLURM_ARRAY_TASK_MIN="5"), "SLURM_ARRAY_TASK_ID", "4")]


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "JOB_COMPLETION", "PAIRSHARD_PART"))}
    env.update(extra)
    return env


def run_env(args, env, timeout=60):
    p = subprocess.run(args, env=env, capture_output=True, timeout=timeout)

    class R:
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")

        def why(self):
            return "exit %d" % self.rc
    return R()


for base, var, v in env_cases:
    env = clean_env(dict(base, **{var: v}))
    r = run_env([PAIRSHARD] + BUILD[:1] + ["--part", "auto"] + BUILD[1:], env)
    ok, why = refused(r, "pairshard build: %s=" % var, v, OUT)
    subprocess.run(["rm", "-rf", OUT])
    tap(ok, "build --part auto with %s=%r is refused naming the variable (%s)" % (var, v, why))
r = run_env([PAIRSHARD] + BUILD[:1] + ["--part", "auto"] + BUILD[1:],
            clean_env(dict(SLURM, SLURM_ARRAY_TASK_MIN="3", SLURM_ARRAY_TASK_ID="4")))
tap(r.rc == 0 and os.path.isdir(OUT), "control: SLURM_ARRAY_TASK_ID=4 _MIN=3 _COUNT=2 "
    "builds part 1 of 2 (%s)" % r.err.strip()[:200])
if os.path.isdir(OUT):
    with open(os.path.join(OUT, "manifest.json")) as f:
        part = json.load(f).get("part")
    note("manifest part: %r" % (part,))
    subprocess.run(["rm", "-rf", OUT])

for var, other in (("RANK", ("WORLD_SIZE", "2")), ("WORLD_SIZE", ("RANK", "0"))):
    for v in ["", "abc", "-1", " 1", "+1", "1x", "4294967297", "18446744073709551617"]:
        env = clean_env({var: v, other[0]: other[1]})
        r = run_env([PAIRSHARD, "read", SET], env)
        ok, why = refused(r, "%s=" % var, v)
        tap(ok, "read with %s=%r is refused naming the variable (%s)" % (var, v, why))

# ---- Python --------------------------------------------------------------------
PY_PROBE = r'''
import os, pathlib, sys
sys.path.insert(0, os.path.join(os.environ["PS_ROOT"], "python"))
import numpy as np
import pairshard
SET = sys.argv[1]
cases = [
    ("batch_size", 2**32 + 8, ValueError), ("batch_size", 0, ValueError),
    ("batch_size", -1, ValueError), ("batch_size", True, TypeError),
    ("batch_size", 2.0, TypeError), ("batch_size", "8", TypeError),
    ("max_tokens", 2**64, ValueError), ("max_tokens", 0, ValueError),
    ("rank", 2**32 + 1, ValueError), ("rank", -5, ValueError), ("rank", -1, ValueError),
    ("world_size", 2**31, ValueError), ("world_size", 0, ValueError),
    ("world_size", False, TypeError), ("seed", True, TypeError), ("epoch", 1.0, TypeError),
    ("pad_id", 2**31, ValueError),
    ("pad_id", -2**31 - 1, ValueError), ("pad_multiple", 2**32 + 1, ValueError),
    ("pad_multiple", 0, ValueError), ("shuffle_window", 2**32, ValueError),
    ("sort_pool", -1, ValueError), ("threads", 2**32 + 2, ValueError),
    ("threads", -1, ValueError), ("prefetch", 2**32 + 4, ValueError),
    ("device", 2**32, ValueError), ("device", -1, ValueError), ("seed", None, TypeError),
    ("threads", None, TypeError), ("pad_id", 1.5, TypeError),
]
for name, value, exc in cases:
    kw = {name: value}
    if name == "rank":
        kw["world_size"] = 2
    try:
        pairshard.Loader(SET, as_torch=False, **kw).close()
        print("not ok - Loader(%s=%r) was accepted" % (name, value))
    except exc as e:
        good = name in str(e)
        print("%s - Loader(%s=%r) raises %s naming it: %s"
              % ("ok" if good else "not ok", name, value, exc.__name__, e))
    except Exception as e:
        print("not ok - Loader(%s=%r) raised %s: %s" % (name, value, type(e).__name__, e))
paths = [(SET + "\x00x", ValueError), (os.fsencode(SET) + b"\x00x", ValueError),
         (None, TypeError), (3, TypeError), ("", ValueError),
         # a list is a mixture of sets (READER.md, "Mixtures"): not an empty
         # one, nor one holding what is not a path
         ([], ValueError), ([SET, None], TypeError), ([SET, SET + "\x00x"], ValueError)]
for p, exc in paths:
    try:
        pairshard.Loader(p, as_torch=False).close()
        print("not ok - Loader(%r) was accepted" % (p,))
    except exc as e:
        print("ok - Loader(%r) raises %s: %s" % (p, exc.__name__, e))
    except Exception as e:
        print("not ok - Loader(%r) raised %s: %s" % (p, type(e).__name__, e))
# controls: what must keep working
good = [dict(batch_size=np.int64(8)), dict(rank=1, world_size=2), dict(seed=2**64 - 1),
        dict(pad_id=-100)]
for kw in good:
    try:
        with pairshard.Loader(SET, as_torch=False, **kw) as ld:
            b = next(iter(ld))
            want = int(kw.get("batch_size", 32))
            ok = len(b["ids"]) <= want and (kw.get("rank") is None or ld.info()["rank"] == 1)
            print("%s - control: Loader(%r) runs" % ("ok" if ok else "not ok", kw))
    except Exception as e:
        print("not ok - control: Loader(%r) raised %s" % (kw, e))
for p in (pathlib.Path(SET), os.fsencode(SET), [SET]):
    try:
        with pairshard.Loader(p, as_torch=False) as ld:
            print("%s - control: Loader(%r) opens the set" % (
                "ok" if ld.info()["records_total"] > 0 else "not ok", p))
    except Exception as e:
        print("not ok - control: Loader(%r) raised %s" % (p, e))
try:
    ld = pairshard.Loader(SET, as_torch=False)
    for bad, exc in ((True, TypeError), ("1", TypeError)):
        try:
            ld.set_epoch(bad)
            print("not ok - set_epoch(%r) was accepted" % (bad,))
        except exc as e:
            print("ok - set_epoch(%r) raises %s: %s" % (bad, exc.__name__, e))
    ld.close()
except Exception as e:
    print("not ok - set_epoch probe: %s" % e)
'''
env = clean_env({"PS_ROOT": ROOT, "PAIRSHARD_LIB": os.path.join(
    os.path.dirname(os.path.dirname(PAIRSHARD)), "lib", "libpairshard.so")})
env.pop("RANK", None)
env.pop("WORLD_SIZE", None)
p = subprocess.run(["/usr/bin/python3", "-c", PY_PROBE, SET], env=env, capture_output=True,
                   timeout=300)
out = p.stdout.decode("utf-8", "replace")
for line in out.splitlines():
    if line.startswith(("ok - ", "not ok - ")):
        tap(line.startswith("ok - "), "python: " + line.split(" - ", 1)[1][:250])
if p.returncode != 0:
    tap(False, "python probe exited %d: %s" % (p.returncode,
                                                p.stderr.decode("utf-8", "replace")[-500:]))
note("TOTAL args %d flag values, %d --part, %d environment cases" % (
    flag_cases, len(PART), len(env_cases)))
finish()
