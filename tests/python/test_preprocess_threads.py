#!/usr/bin/python3
"""One pairshard.Preprocessor shared by a thread pool, as a server shares it
(the binding releases the GIL in every call into libpairshard): on sets
built by `pairshard build` from Spider dev — pair with a BERT vocabulary
under picard with its schemas, causal with the Llama-3-style tokenizer.json
and a ddl schema prompt, seq2seq with T5 — every question is encoded once
serially (alone, with its SQL, or as a raw record, in turn; and cleaned
alone with Preprocessor.clean), then 4 threads of a ThreadPoolExecutor
encode every one of them 3 times over in shuffled order: every result
(ids, token types, mask, prompt, a RejectedError's reason) equals the
serial one, and no call raises what the serial call did not. Threads that
live for a few calls each (a thread a request) give the same. Closing the
Preprocessor while threads still encode waits for their calls, and later
calls raise ValueError, never crash.

Prints TAP. Environment: PAIRSHARD, PS_ROOT (default: this checkout's),
PS_TEST_THREADS (4), PS_TEST_ROUNDS (3).
  /usr/bin/python3 tests/python/test_preprocess_threads.py
"""

import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testenv import DATA, DEV, PAIRSHARD, TABLES, TOKS  # noqa: E402

VOCAB = os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt")
THREADS = int(os.environ.get("PS_TEST_THREADS", "4"))
ROUNDS = int(os.environ.get("PS_TEST_ROUNDS", "3"))

import pairshard  # noqa: E402
from tap import Tap  # noqa: E402

T = Tap()
check = T.check

SETS = [
    ("picard-bert", ["--vocab", VOCAB, "--schema", TABLES, "--template", "picard",
                     "--max-length", "512"]),
    ("causal-llama3", ["--layout", "causal", "--tokenizer-json",
                       os.path.join(TOKS, "llama3-style.tokenizer.json"), "--schema", TABLES,
                       "--template", "ddl", "--max-length", "400"]),
    ("seq2seq-t5", ["--layout", "seq2seq", "--tokenizer-json",
                    os.path.join(TOKS, "t5-small.tokenizer.json"), "--schema", TABLES,
                    "--template", "picard", "--max-length", "512",
                    "--max-target-length", "160"]),
]


def jobs(recs):
    """Record i as its question alone (i % 3 == 0), with its SQL (1), or as
    the raw record (2)."""
    out = []
    for i, r in enumerate(recs):
        if i % 3 == 0:
            out.append(dict(question=r["question"], db_id=r["db_id"]))
        elif i % 3 == 1:
            out.append(dict(question=r["question"], db_id=r["db_id"], sql=r["query"]))
        else:
            out.append(dict(record=json.dumps(r)))
    return out


def result(pre, job):
    """What serving `job` gives, as comparable values."""
    try:
        d = pre.preprocess(**job)
    except pairshard.RejectedError as e:
        return ("rejected", e.reason)
    q = job.get("question")
    clean = None
    if q is not None:
        try:
            clean = pre.clean(q)
        except pairshard.RejectedError as e:
            clean = ("rejected", e.reason)
    return (d["input_ids"].tolist(), d["token_type_ids"].tolist(),
            int(d["attention_mask"].sum()), d["prompt"], clean)


def threaded(pre, js, want, threads, rounds):
    """Every job `rounds` times over by `threads` pool threads, shuffled:
    (how many results differ, the first, how many calls raised)."""
    order = [i for _ in range(rounds) for i in range(len(js))]
    random.Random(7).shuffle(order)
    bad, first, raised = 0, None, 0

    def one(i):
        try:
            return i, result(pre, js[i]), None
        except Exception as e:  # noqa: BLE001 — any error is a finding
            return i, None, e

    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as ex:
        for i, got, exc in ex.map(one, order, chunksize=16):
            if exc is not None:
                raised += 1
                first = first or "record %d raised %r" % (i, exc)
            elif got != want[i]:
                bad += 1
                first = first or "record %d: %r, serially %r" % (i, str(got)[:200],
                                                                   str(want[i])[:200])
    return bad, first, raised, len(order)


def short_lived(pre, js, want):
    """A thread a request: 200 threads, each 5 jobs, 8 alive at once."""
    errs = []
    sem = threading.Semaphore(8)

    def body(k):
        try:
            for j in range(5):
                i = (k * 37 + j * 101) % len(js)
                if result(pre, js[i]) != want[i]:
                    errs.append("record %d differs" % i)
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))
        finally:
            sem.release()

    ts = []
    for k in range(200):
        sem.acquire()
        t = threading.Thread(target=body, args=(k,))
        t.start()
        ts.append(t)
    for t in ts:
        t.join()
    return errs


def close_while_busy(path, js):
    """close() while 4 threads encode: it waits for their calls; the calls
    after it raise ValueError (closed), none crashes or sees freed memory."""
    pre = pairshard.Preprocessor(path)
    stop = threading.Event()
    seen = {"ok": 0, "closed": 0, "other": []}
    lock = threading.Lock()

    def body():
        k = 0
        while not stop.is_set():
            try:
                try:
                    pre.encode(**js[k % len(js)])
                except pairshard.RejectedError:
                    pass
                with lock:
                    seen["ok"] += 1
            except ValueError as e:
                with lock:
                    if "closed" in str(e):
                        seen["closed"] += 1
                    else:
                        seen["other"].append(repr(e))
            except Exception as e:  # noqa: BLE001
                with lock:
                    seen["other"].append(repr(e))
            k += 1

    ts = [threading.Thread(target=body) for _ in range(4)]
    for t in ts:
        t.start()
    while True:
        with lock:
            if seen["ok"] >= 200:
                break
        threading.Event().wait(0.001)
    pre.close()
    with lock:
        closed_at = seen["ok"]
    for _ in range(1000):  # let them hit the closed object
        with lock:
            if seen["closed"] >= 4:
                break
        threading.Event().wait(0.001)
    stop.set()
    for t in ts:
        t.join()
    return closed_at, seen


def main():
    tmp = tempfile.mkdtemp(prefix="ps-pp-threads-")
    try:
        recs = json.load(open(DEV))
        js = jobs(recs)
        for name, opts in SETS:
            path = os.path.join(tmp, name)
            r = subprocess.run([PAIRSHARD, "build", "-q", "--no-gate", "-o", path] + opts + [DEV],
                               capture_output=True, text=True)
            check("%s: built" % name, r.returncode == 0, r.stderr)
            if r.returncode:
                continue
            pre = pairshard.Preprocessor(path)
            want = [result(pre, j) for j in js]
            kept = sum(1 for w in want if w[0] != "rejected")
            check("%s: serially, %d of %d kept" % (name, kept, len(js)), kept > len(js) // 2)
            bad, first, raised, calls = threaded(pre, js, want, THREADS, ROUNDS)
            check("%s: %d threads, %d calls on one Preprocessor: %d results other than "
                  "serial, %d calls raised" % (name, THREADS, calls, bad, raised),
                  bad == 0 and raised == 0, first or "")
            if name == "picard-bert":
                errs = short_lived(pre, js, want)
                check("%s: 200 short-lived threads, 5 calls each: the serial results"
                      % name, not errs, "\n".join(errs[:5]))
                closed_at, seen = close_while_busy(path, js)
                check("%s: close() while 4 threads encode: %d calls before, %d refused after "
                      "(ValueError), nothing else" % (name, closed_at, seen["closed"]),
                      closed_at >= 200 and seen["closed"] >= 1 and not seen["other"],
                      "\n".join(seen["other"][:5]))
            pre.close()
    except Exception:  # noqa: BLE001
        check("ran without an exception", False, traceback.format_exc())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.done()


if __name__ == "__main__":
    sys.exit(main())
