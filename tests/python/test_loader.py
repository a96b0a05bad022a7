#!/usr/bin/python3
"""Tests of the Python binding (python/pairshard) on shard sets built from
Spider's dev.json: the ctypes layouts against the C compiler's, every
delivered record against an independent decode of the shards (python3-lmdb
and python3-zstandard following docs/FORMAT.md), zero copies, slot
lifetimes, exactly-once coverage across ranks, resumption, errors.

Prints TAP. Environment: PAIRSHARD (the CLI, to build the sets), PS_ROOT
(the source tree); both default to this checkout's.
  PAIRSHARD=build/bin/pairshard /usr/bin/python3 tests/python/test_loader.py
"""

import ctypes
import gc
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import lmdb
import numpy as np
import zstandard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testenv import DATA, DEV, PAIRSHARD, ROOT  # noqa: E402

VOCAB = os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt")

import pairshard  # noqa: E402
from pairshard import _lib as L  # noqa: E402
from pairshard import preprocess as PP  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# ---- TAP --------------------------------------------------------------------------

_n = 0
_fails = 0


def check(desc, ok, why=""):
    global _n, _fails
    _n += 1
    if ok:
        print("ok %d - %s" % (_n, desc))
    else:
        _fails += 1
        print("not ok %d - %s" % (_n, desc))
        for line in str(why).splitlines()[:20]:
            print("# " + line)
    sys.stdout.flush()
    return ok


def skip(desc):
    global _n
    _n += 1
    print("ok %d # SKIP %s" % (_n, desc))


def test(fn):
    """Runs one group; an exception is one failure naming it."""
    try:
        fn()
    except Exception:
        check("%s raised no exception" % fn.__name__, False, traceback.format_exc())
    return fn


# ---- the independent decoder (docs/FORMAT.md) ------------------------------------------


def decode_block(raw):
    content = zstandard.ZstdDecompressor().decompress(raw)
    assert content[:4] == b"PSB1", "bad magic"
    n, width = struct.unpack_from("<IB", content, 4)
    assert width in (2, 4) and content[9:12] == b"\0\0\0"
    off = 12
    arr = lambda k: np.frombuffer(content, dtype="<u4", count=k, offset=off)  # noqa: E731
    length = arr(n); off += 4 * n
    tb = arr(n); off += 4 * n
    label = arr(n); off += 4 * n
    idoff = arr(n + 1); off += 4 * (n + 1)
    ids = content[off:off + int(idoff[n])]
    off += int(idoff[n])
    off = (off + width - 1) // width * width
    toks = np.frombuffer(content, dtype="<u2" if width == 2 else "<u4", offset=off)
    assert len(toks) == int(length.sum()), "tokens do not fill the block"
    out, t = [], 0
    for i in range(n):
        k = int(length[i])
        out.append((ids[idoff[i]:idoff[i + 1]].decode("utf-8"), toks[t:t + k].astype(np.int64),
                    int(tb[i]), -1 if label[i] == 0xFFFFFFFF else int(label[i])))
        t += k
    return out


def decode_set(d):
    """id -> (bucket, tokens, type boundary, label) for every record."""
    m = json.load(open(os.path.join(d, "manifest.json")))
    recs = {}
    for sh in m["shards"]:
        env = lmdb.open(os.path.join(d, sh["file"]), subdir=False, readonly=True, lock=False,
                        max_dbs=4)
        db = env.open_db(b"blocks", create=False)
        with env.begin() as txn:
            for key, val in txn.cursor(db):
                bucket, _seq = struct.unpack(">II", key)
                for rid, toks, tb, lab in decode_block(val):
                    assert rid not in recs, "duplicate id " + rid
                    recs[rid] = (bucket, toks, tb, lab)
        env.close()
    assert len(recs) == m["totals"]["records"]
    return m, recs


def batch_mismatch(b, recs, pad_id):
    """None when every row of the batch is the decoded record, else why."""
    arr = {k: np.asarray(b[k].cpu().numpy() if torch is not None and torch.is_tensor(b[k])
                         else b[k])
           for k in ("input_ids", "attention_mask", "token_type_ids", "labels", "lengths")}
    B, T = arr["input_ids"].shape
    if len(b["ids"]) != B or arr["labels"].shape != (B,) or arr["lengths"].shape != (B,):
        return "shapes"
    for i, rid in enumerate(b["ids"]):
        if rid not in recs:
            return "unknown id %r" % rid
        bucket, toks, tb, lab = recs[rid]
        n = len(toks)
        row = arr["input_ids"][i]
        if bucket != b["bucket"]:
            return "%s: bucket %d, decoded %d" % (rid, b["bucket"], bucket)
        if int(arr["lengths"][i]) != n or n > T:
            return "%s: length %d, decoded %d (T %d)" % (rid, arr["lengths"][i], n, T)
        if not np.array_equal(row[:n], toks) or not np.all(row[n:] == pad_id):
            return "%s: input_ids differ" % rid
        mask = arr["attention_mask"][i]
        if not (np.all(mask[:n] == 1) and np.all(mask[n:] == 0)):
            return "%s: attention_mask" % rid
        ty = arr["token_type_ids"][i]
        want = np.zeros(T, dtype=np.int64)
        want[min(tb, n):n] = 1
        if not np.array_equal(ty, want):
            return "%s: token_type_ids (boundary %d)" % (rid, tb)
        if int(arr["labels"][i]) != lab:
            return "%s: label %d, decoded %d" % (rid, arr["labels"][i], lab)
    return None


# ---- fixtures ---------------------------------------------------------------------------

TMP = tempfile.mkdtemp(prefix="pairshard-py.")


def build(name, *extra):
    out = os.path.join(TMP, name)
    subprocess.run([PAIRSHARD, "build", "-q", "--vocab", VOCAB, "--label-field", "db_id",
                    "--max-length", "128", "-o", out, *extra, DEV], check=True)
    return out


SET = build("dev2", "--shards", "2")
# Small blocks and three shards: many windows per bucket for the plan.
SET3 = build("dev3", "--shards", "3", "--block-records", "16")
L.load_reader()
print("# libpairshard %s; the Loader's library: %s" % (pairshard.version(), L.path("reader")))
MAN, RECS = decode_set(SET)
MAN3, RECS3 = decode_set(SET3)


def expect_state_refused(set_dir, sd, needle, what, what_refused, **opts):
    """A Loader of set_dir with opts refuses state sd: PS_EINVAL naming needle."""
    with pairshard.Loader(set_dir, **opts) as ld:
        try:
            ld.load_state_dict(sd)
            check(what, False)
        except pairshard.PairshardError as e:
            check(what_refused, e.code == L.PS_EINVAL and needle in e.message, e)


def run_epoch(loader):
    return [(b["epoch"], b["step"], tuple(b["ids"])) for b in loader]


# ---- tests ------------------------------------------------------------------------------


@test
def layouts():
    """Every ctypes structure has the C compiler's size and offsets."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        skip("no C compiler for the layout check")
        return
    src = ["#include <stdio.h>", "#include <stddef.h>", "#include \"pairshard/reader.h\"",
           "#include \"pairshard/preprocess.h\"", "int main(void) {"]
    structs = dict(L.STRUCTS)
    structs.update({n: getattr(PP, n) for n in
                    ("ps_preprocess_field", "ps_preprocess_input", "ps_preprocess_output")})
    for name, cls in structs.items():
        src.append('printf("%s - %%zu %%zu\\n", sizeof(%s), _Alignof(%s));' % (name, name, name))
        for f, _ in cls._fields_:
            src.append('printf("%s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                       % (name, f, name, f, name, f))
    src.append("return 0; }")
    c = os.path.join(TMP, "layout.c")
    exe = os.path.join(TMP, "layout")
    open(c, "w").write("\n".join(src) + "\n")
    subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), "-o", exe, c],
                   check=True)
    bad = []
    for line in subprocess.run([exe], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        sname, field, a, b = line.split()
        cls = structs[sname]
        if field == "-":
            got = (ctypes.sizeof(cls), ctypes.alignment(cls))
        else:
            got = (getattr(cls, field).offset, getattr(cls, field).size)
        if got != (int(a), int(b)):
            bad.append("%s.%s: C %s %s, ctypes %s %s" % (sname, field, a, b, *got))
    check("ctypes layouts of ps_error, ps_reader_options, ps_batch, ps_reader_state, "
          "ps_reader_info, ps_reader_stats and the ps_preprocess_* structs equal the compiler's",
          not bad, "\n".join(bad))
    check("ps_reader_state is 128 bytes, ps_error 4 + 512",
          ctypes.sizeof(L.ps_reader_state) == 128 and ctypes.sizeof(L.ps_error) == 516)


@test
def defaults():
    o = L.ps_reader_options()
    ctypes.memset(ctypes.byref(o), 0x5A, ctypes.sizeof(o))
    L.options_init(L.load_reader(), o)
    check("ps_reader_options_init_size through ctypes gives the header's defaults",
          (o.struct_size, o.batch_size, o.max_tokens, o.shuffle, o.rank, o.world_size, o.dtype, o.device,
           o.pad_multiple) == (ctypes.sizeof(o), 32, 0, 1, -1, -1, L.PS_DTYPE_INT64, -1, 1),
          [(f, getattr(o, f)) for f, _ in o._fields_])


@test
def options_size():
    """A struct_size the library does not know (a binding from another
    version) is refused, by init without writing and by open."""
    lib = L.load_reader()
    o = L.ps_reader_options()
    ctypes.memset(ctypes.byref(o), 0x5A, ctypes.sizeof(o))
    rc = lib.ps_reader_options_init_size(ctypes.byref(o), ctypes.sizeof(o) + 8)
    check("init_size refuses a larger, unknown struct_size (PS_EINVAL) and writes nothing",
          rc == L.PS_EINVAL and bytes(o) == b"\x5a" * ctypes.sizeof(o), rc)
    L.options_init(lib, o)
    o.struct_size = 0
    r = ctypes.c_void_p()
    err = L.ps_error()
    rc = lib.ps_reader_open(b"/nonexistent", ctypes.byref(o), None, ctypes.byref(r),
                            ctypes.byref(err))
    check("ps_reader_open refuses struct_size 0 before anything else (PS_EINVAL, named)",
          rc == L.PS_EINVAL and not r.value and b"struct_size is 0" in err.message,
          (rc, err.message))


@test
def content():
    """Every delivered record equals the independent decode, in several
    option sets (dtype, pad id, pad mode, pad multiple, max_tokens)."""
    cases = [
        ("int64, pad 0, longest", SET, RECS, dict(batch_size=16)),
        ("int32, pad_id 7, pad_multiple 8", SET, RECS,
         dict(batch_size=24, dtype="int32", pad_id=7, pad_multiple=8)),
        ("pad bucket, no shuffle", SET3, RECS3, dict(batch_size=10, pad="bucket", shuffle=False)),
        ("max_tokens 600, seed 3, epoch 2", SET3, RECS3,
         dict(max_tokens=600, seed=3, epoch=2, shuffle_window=2)),
    ]
    bounds = MAN["buckets"]
    for name, d, recs, kw in cases:
        seen, why = [], None
        with pairshard.Loader(d, rank=0, world_size=1, **kw) as ld:
            for b in ld:
                why = why or batch_mismatch(b, recs, kw.get("pad_id", 0))
                B, T = b["input_ids"].shape
                want_dt = "int32" if kw.get("dtype") == "int32" else "int64"
                if str(b["input_ids"].dtype).split(".")[-1] != want_dt:
                    why = why or "dtype %s" % b["input_ids"].dtype
                if str(b["labels"].dtype).split(".")[-1] != "int64":
                    why = why or "labels are %s, not int64 (cross_entropy's)" % b["labels"].dtype
                if T % kw.get("pad_multiple", 1):
                    why = why or "T %d not a multiple of %d" % (T, kw["pad_multiple"])
                if kw.get("pad") == "bucket" and T != bounds[b["bucket"]]:
                    why = why or "T %d, bucket bound %d" % (T, bounds[b["bucket"]])
                if "max_tokens" in kw and B * T > kw["max_tokens"] and B > 1:
                    why = why or "B*T %d over the budget" % (B * T)
                if "batch_size" in kw and B > kw["batch_size"]:
                    why = why or "B %d" % B
                seen.extend(b["ids"])
        check("%s: every record of every batch equals the decoded shard contents "
              "(input_ids, padding, attention_mask, token_type_ids, labels, lengths)" % name,
              why is None, why)
        check("%s: one epoch delivers every record once (%d)" % (name, len(recs)),
              sorted(seen) == sorted(recs), "%d delivered, %d distinct" % (len(seen),
                                                                          len(set(seen))))


@test
def matches_cli():
    """The binding passes its options through: the same batches as
    `pairshard read` with the same flags."""
    out = subprocess.run([PAIRSHARD, "read", SET3, "--batch-size", "12", "--seed", "5",
                          "--epoch", "1", "--rank", "1", "--world-size", "2",
                          "--shuffle-window", "3", "--pad-multiple", "4"],
                         check=True, capture_output=True, text=True).stdout
    cli = [(b["step"], b["bucket"], b["T"], tuple(b["ids"]), tuple(b["lengths"]))
           for b in map(json.loads, out.splitlines())]
    with pairshard.Loader(SET3, batch_size=12, seed=5, epoch=1, rank=1, world_size=2,
                          shuffle_window=3, pad_multiple=4, as_torch=False) as ld:
        py = [(b["step"], b["bucket"], b["input_ids"].shape[1], tuple(b["ids"]),
               tuple(int(x) for x in b["lengths"])) for b in ld]
    check("Loader(seed 5, epoch 1, rank 1 of 2, ...) gives pairshard read's batches "
          "(%d batches)" % len(cli), py == cli and len(cli) > 0,
          "first difference: %r" % (next(((a, b) for a, b in zip(py, cli) if a != b),
                                         (len(py), len(cli))),))


@test
def no_copy():
    with pairshard.Loader(SET, batch_size=8, rank=0, world_size=1, as_torch=False) as ld:
        it = iter(ld)
        b = next(it)
        a = b["input_ids"]
        B, T = a.shape
        check("numpy: input_ids' data pointer is the reader's slot address",
              a.ctypes.data == b.slot_address and b.slot_address != 0)
        # READER.md: the five arrays lie contiguously in the slot.
        elem = 8
        addrs = [b[k].ctypes.data for k in ("input_ids", "attention_mask", "token_type_ids",
                                            "labels", "lengths")]
        want = [b.slot_address + k * B * T * elem for k in range(4)] + \
               [b.slot_address + (3 * B * T + B) * elem]
        check("numpy: every array views its place in the slot", addrs == want,
              (addrs, want))
        raw = (ctypes.c_int64 * (B * T)).from_address(b.slot_address)
        check("numpy: the array reads the slot's bytes",
              np.array_equal(np.ctypeslib.as_array(raw).reshape(B, T), a))
        check("numpy arrays are not copies (they own no data)",
              all(not b[k].flags.owndata for k in ("input_ids", "labels", "lengths")))
    if torch is None:
        skip("python3-torch is not installed: torch no-copy checks")
        return
    with pairshard.Loader(SET, batch_size=8, rank=0, world_size=1) as ld:
        b = next(iter(ld))
        t = b["input_ids"]
        check("torch: input_ids is a torch.Tensor whose data_ptr is the slot address",
              isinstance(t, torch.Tensor) and t.data_ptr() == b.slot_address)
        check("torch: np.shares_memory(tensor.numpy(), slot view)",
              np.shares_memory(t.numpy(), np.ctypeslib.as_array(
                  (ctypes.c_int64 * t.numel()).from_address(b.slot_address))))
        check("torch: labels and lengths are int64 tensors of shape [B]",
              b["labels"].dtype == torch.int64 and tuple(b["lengths"].shape) == (t.shape[0],))


@test
def lifetimes():
    with pairshard.Loader(SET, batch_size=8, prefetch=3, rank=0, world_size=1,
                          as_torch=False) as ld:
        r = ld._reader
        it = iter(ld)
        held = [next(it) for _ in range(3)]
        check("three batches held: three slots live", r.live == 3)
        try:
            next(it)
            check("holding every slot raises SlotsExhaustedError", False, "no error")
        except pairshard.SlotsExhaustedError as e:
            check("holding every slot raises SlotsExhaustedError (a PairshardError, PS_ELIMIT)",
                  isinstance(e, pairshard.PairshardError) and e.code == L.PS_ELIMIT, e)
            check("... whose message says to drop references or raise prefetch",
                  "drop references" in e.message and "prefetch" in e.message, e.message)
        check("the held batches still equal the decoded records",
              all(batch_mismatch(b, RECS, 0) is None for b in held))
        # Only one array kept: it alone keeps its slot.
        keep = held[0]["token_type_ids"]
        keep_copy = keep.copy()
        first_ids = held[0]["ids"]
        del held
        gc.collect()
        check("dropping the batches frees their slots; an array kept keeps its own",
              r.live == 1, r.live)
        rest = [b["ids"] for b in ld]  # a new pass continues the epoch
        check("after dropping them the epoch goes on", len(rest) > 0 and first_ids not in rest)
        check("the kept array's slot was not reused (content unchanged)",
              np.array_equal(keep, keep_copy))
        del keep
        gc.collect()
        check("the last array dropped releases the last slot", r.live == 0, r.live)

    # Closing with live batches: they stay valid; the reader goes with the last.
    ld = pairshard.Loader(SET, batch_size=8, rank=0, world_size=1)
    r = ld._reader
    b = next(iter(ld))
    ids = b["input_ids"]
    ld.close()
    check("close() with a live batch defers closing the native reader",
          r.ptr is not None and ld.closed)
    gc.collect()
    check("... the batch stays valid after close()", batch_mismatch(b, RECS, 0) is None)
    try:
        next(iter(ld))
        check("iterating a closed loader raises PairshardError", False)
    except pairshard.PairshardError as e:
        check("iterating a closed loader raises PairshardError naming it", "closed" in str(e))
    del b
    gc.collect()
    check("... an array still holds the reader", r.ptr is not None)
    del ids
    gc.collect()
    check("... dropping the last array closes the native reader", r.ptr is None)

    # A batch in a reference cycle is freed by the collector on ELIMIT.
    with pairshard.Loader(SET, batch_size=8, prefetch=2, rank=0, world_size=1,
                          as_torch=False) as ld:
        it = iter(ld)
        for _ in range(2):
            b = next(it)
            b["self"] = b  # a cycle: refcounting alone never frees it
        del b
        try:
            n = sum(1 for _ in it)
            check("batches in reference cycles are collected instead of raising ELIMIT",
                  n == len(ld) - 2, n)
        except pairshard.SlotsExhaustedError as e:
            check("batches in reference cycles are collected instead of raising ELIMIT",
                  False, e)


@test
def copies():
    """copy=True: arrays the loader does not own, so a trainer may keep
    every batch's labels with prefetch=2 (without it: SlotsExhaustedError)."""
    for dtype in ("int64", "int32"):
        with pairshard.Loader(SET, batch_size=8, prefetch=2, rank=0, world_size=1,
                              as_torch=False, copy=True, dtype=dtype) as ld:
            r = ld._reader
            kept, why, live = [], None, []
            for b in ld:
                why = why or batch_mismatch(b, RECS, 0)
                kept.append((b["ids"], b["labels"], b["input_ids"]))
                live.append(r.live)
            owned = all(lab.flags.owndata and ids.flags.owndata for _, lab, ids in kept)
            check("copy=True, %s: a whole epoch of labels kept with prefetch 2 (%d batches), "
                  "each equal to the decoded records" % (dtype, len(kept)),
                  len(kept) == len(ld) > 2 and why is None, why)
            check("copy=True, %s: the arrays own their memory and hold no slot" % dtype,
                  owned and max(live) == 0 and b.slot_address == 0, (owned, max(live)))
            labs = {rid: int(x) for ids, lab, _ in kept for rid, x in zip(ids, lab)}
            check("copy=True, %s: the kept labels are still the records' after the epoch"
                  % dtype, labs == {rid: RECS[rid][3] for rid in labs} and len(labs) == len(RECS))
    with pairshard.Loader(SET, batch_size=8, prefetch=2, rank=0, world_size=1,
                          as_torch=False) as ld:
        ys = []
        try:
            for b in ld:
                ys.append(b["labels"])
            check("without copy, keeping every batch's labels raises SlotsExhaustedError",
                  False, "no error")
        except pairshard.SlotsExhaustedError as e:
            check("without copy, keeping every batch's labels raises SlotsExhaustedError "
                  "that names copy=True", "copy=True" in e.message, e.message)


@test
def held_across_epochs_and_threads():
    """A batch held across set_epoch stays valid (reader.h); slots released
    by another thread (a batch dropped there) are reused correctly."""
    import queue
    import threading
    with pairshard.Loader(SET3, batch_size=8, prefetch=3, threads=3, rank=0, world_size=1,
                          as_torch=False) as ld:
        held = next(iter(ld))
        snap = held["input_ids"].copy()
        ld.set_epoch(1)
        n = sum(1 for _ in ld)
        check("a batch held across set_epoch stays valid while the next epoch runs in the "
              "other slots", n == len(ld) and np.array_equal(held["input_ids"], snap)
              and batch_mismatch(held, RECS3, 0) is None)
        del held
    # Held at most: 2 queued, 1 blocked in put, 1 with the consumer, 1 being filled.
    with pairshard.Loader(SET3, batch_size=8, prefetch=6, threads=3, rank=0, world_size=1,
                          as_torch=False) as ld:
        q = queue.Queue(maxsize=2)
        bad = []

        def consume():
            while True:
                b = q.get()
                if b is None:
                    return
                why = batch_mismatch(b, RECS3, 0)
                if why:
                    bad.append(why)
                del b  # the slot is released on this thread

        t = threading.Thread(target=consume)
        t.start()
        seen = 0
        for _ in range(3):
            for b in ld:
                q.put(b)
                seen += 1
            del b
        q.put(None)
        t.join()
        check("batches handed to another thread and dropped there: %d batches, all equal to "
              "the decoded records, no slot lost" % seen,
              not bad and seen == 3 * len(ld) and ld._reader.live == 0, bad[:3])


@test
def no_leaks():
    """Loaders closed, dropped without close(), or closed with a batch
    alive leave no reader threads behind once their batches are gone."""
    def tasks():
        return len(os.listdir("/proc/self/task"))
    gc.collect()
    base = tasks()
    for k in range(30):
        ld = pairshard.Loader(SET, batch_size=8, threads=3, rank=0, world_size=1)
        it = iter(ld)
        b = next(it)
        if k % 3 == 0:
            ld.close()
        elif k % 3 == 1:
            ld.close()
            del it, b
        del ld  # k % 3 == 2: never closed, only dropped
        it = b = None
    gc.collect()
    check("30 loaders closed or dropped: the thread count is back to %d" % base,
          tasks() == base, tasks())


@test
def coverage():
    for world in (2, 3):
        for drop_last in (False, True):
            per_rank = []
            for rank in range(world):
                with pairshard.Loader(SET3, batch_size=16, seed=11, rank=rank, world_size=world,
                                      drop_last=drop_last, as_torch=False) as ld:
                    bs = [(b["step"], list(b["ids"])) for b in ld]
                    per_rank.append((len(ld), bs, ld.info()))
            counts = [len(bs) for _, bs, _ in per_rank]
            ids = [i for _, bs, _ in per_rank for _, b in bs for i in b]
            lens_ok = all(n == len(bs) and [s for s, _ in bs] == list(range(n))
                          for n, bs, _ in per_rank)
            if not drop_last:
                check("world_size %d: every record exactly once across ranks (%d)"
                      % (world, len(RECS3)), sorted(ids) == sorted(RECS3),
                      "%d delivered, %d distinct" % (len(ids), len(set(ids))))
            else:
                dropped = per_rank[0][2]["records_dropped"]
                full = all(len(b) == 16 for _, bs, _ in per_rank for _, b in bs)
                check("world_size %d, drop_last: full batches, no record twice, "
                      "records_dropped %d accounts for the rest" % (world, dropped),
                      full and len(set(ids)) == len(ids) and set(ids) <= set(RECS3)
                      and len(ids) + dropped == len(RECS3))
            check("world_size %d%s: every rank gets the same batch count, len() = batches "
                  "yielded, steps 0.." % (world, ", drop_last" if drop_last else ""),
                  len(set(counts)) == 1 and lens_ok, counts)

    # rank=None / world_size=None: from RANK and WORLD_SIZE.
    os.environ["RANK"], os.environ["WORLD_SIZE"] = "2", "3"
    try:
        with pairshard.Loader(SET3, batch_size=16, seed=11) as ld:
            i = ld.info()
            env_ids = [tuple(b["ids"]) for b in ld]
        with pairshard.Loader(SET3, batch_size=16, seed=11, rank=2, world_size=3) as ld:
            exp_ids = [tuple(b["ids"]) for b in ld]
        check("rank/world_size None: the library reads RANK=2 WORLD_SIZE=3",
              (i["rank"], i["world_size"]) == (2, 3) and env_ids == exp_ids)
    finally:
        del os.environ["RANK"], os.environ["WORLD_SIZE"]


@test
def epochs():
    with pairshard.Loader(SET3, batch_size=16, seed=4, rank=0, world_size=1) as ld:
        e0 = run_epoch(ld)
        e1 = run_epoch(ld)
        check("a second pass after the end begins the next epoch",
              {e for e, _, _ in e0} == {0} and {e for e, _, _ in e1} == {1}
              and len(e0) == len(e1) == len(ld) and [x[2] for x in e0] != [x[2] for x in e1])
        ld.set_epoch(0)
        again = run_epoch(ld)
        check("set_epoch(0) replays epoch 0 exactly", again == e0)
        it = iter(ld)  # epoch 1 (auto), three batches, then a new pass
        part = [next(it)["ids"] for _ in range(3)]
        rest = [tuple(b["ids"]) for b in ld]
        check("a new iter() mid-epoch continues the epoch where it stands",
              [tuple(p) for p in part] + rest == [x[2] for x in e1])
        ld.set_epoch(1)
        check("set_epoch(e) restarts epoch e once batches of it were yielded",
              run_epoch(ld) == e1)
        ld.set_epoch(0)
        old = iter(ld)
        a = next(old)["ids"]
        new = iter(ld)
        b = next(new)["ids"]
        check("a new iter() ends the previous iterator, and the epoch goes on",
              next(old, None) is None and [tuple(a), tuple(b)] == [x[2] for x in e0[:2]])
    with pairshard.Loader(SET3, batch_size=16, seed=4, rank=0, world_size=1) as ld:
        ld.set_epoch(0)
        check("set_epoch(current epoch) on a fresh loader does not restart it",
              run_epoch(ld) == e0)


@test
def resume():
    for name, d, kw in (("dev, 2 shards", SET, dict(batch_size=16)),
                        ("small blocks, windows of 2, rank 1 of 3", SET3,
                         dict(batch_size=10, shuffle_window=2, rank=1, world_size=3))):
        kw = dict(kw, seed=9)
        kw.setdefault("rank", 0)
        kw.setdefault("world_size", 1)
        with pairshard.Loader(d, **kw) as ld:
            full = run_epoch(ld) + run_epoch(ld)
        n = len(full) // 2
        for k in (1, n // 2, n - 1, n):
            with pairshard.Loader(d, **kw) as ld:
                it = iter(ld)
                first = [(b["epoch"], b["step"], tuple(b["ids"]))
                         for b in (next(it) for _ in range(k))]
                sd_unseen = ld.state_dict()
                if k == n:
                    list(it)  # let the pass see the end of the epoch
                sd = pickle.loads(pickle.dumps(ld.state_dict()))
            with pairshard.Loader(d, **dict(kw, seed=0)) as ld2:
                ld2.load_state_dict(sd)
                if k < n:
                    ld2.set_epoch(0)  # the usual trainer call: keeps the resumed position
                got = run_epoch(ld2)
                if k == n:
                    check("%s: resumed at the end of epoch 0, the next pass is epoch 1"
                          % name, got == full[n:], (len(got), got[:1]))
                    ld2.load_state_dict(sd_unseen)
                    got = [run_epoch(ld2), run_epoch(ld2)]
                    check("%s: resumed after the last batch (the pass had not seen the end): "
                          "one empty pass, then epoch 1, as the saving loader's" % name,
                          got == [[], full[n:]], [len(x) for x in got])
                    continue
                got += run_epoch(ld2)
            check("%s: resumed after %d of %d batches: exactly the rest, then epoch 1"
                  % (name, k, n), first + got == full,
                  "first difference at %r" % next((i for i, (a, b) in
                                                   enumerate(zip(first + got, full)) if a != b),
                                                  len(first + got)))
    sd = None
    with pairshard.Loader(SET, batch_size=16, rank=0, world_size=1) as ld:
        next(iter(ld))
        sd = ld.state_dict()
    check("state_dict: version 1 and a 128-byte reader_state",
          sd["version"] == 1 and isinstance(sd["reader_state"], bytes)
          and len(sd["reader_state"]) == 128)
    expect_state_refused(SET, sd, "batch_size",
                         "a state from other batching options is refused",
                         "a state from other batching options is refused (PS_EINVAL naming it)",
                         batch_size=8, rank=0, world_size=1)
    expect_state_refused(SET, sd, "rank",
                         "a state from another rank is refused",
                         "a state from another rank / world size is refused (PS_EINVAL naming it)",
                         batch_size=16, rank=1, world_size=2)
    expect_state_refused(SET3, sd, "set",
                         "a state from another set is refused",
                         "a state from another shard set is refused (PS_EINVAL naming it)",
                         batch_size=16, rank=0, world_size=1)
    with pairshard.Loader(SET, batch_size=8, rank=0, world_size=1) as ld:
        bad = bytearray(sd["reader_state"])
        bad[20] ^= 1
        try:
            ld.load_state_dict(dict(sd, reader_state=bytes(bad)))
            check("a damaged state is refused", False)
        except pairshard.PairshardError as e:
            check("a damaged state is refused (PS_EFORMAT)", e.code == L.PS_EFORMAT, e)
        check("... and the loader still works after a refused state", len(run_epoch(ld)) > 0)


@test
def errors():
    missing = os.path.join(TMP, "no-such-set")
    try:
        pairshard.Loader(missing)
        check("a bad path raises PairshardError", False)
    except pairshard.PairshardError as e:
        check("a bad path raises PairshardError(PS_ENOENT) naming manifest.json",
              e.code == L.PS_ENOENT and e.name == "PS_ENOENT"
              and missing + "/manifest.json" in e.message, e)
    # A set whose every record was rejected: opening it is the error, not
    # an epoch of zero batches (a trainer would run zero steps).
    bad = os.path.join(TMP, "all-rejected.jsonl")
    with open(bad, "w") as f:
        f.write('{"question": "how many singers?", "sql": 1}\n{"question": "no sql"}\n')
    empty = os.path.join(TMP, "empty-set")
    # (the gate refuses to publish it: --no-gate publishes it anyway)
    subprocess.run([PAIRSHARD, "build", "-q", "--no-gate", "--vocab", VOCAB, "-o", empty, bad],
                   check=True)
    try:
        ld = pairshard.Loader(empty)
        check("a set with 0 records raises EmptySetError", False, "len %d" % len(ld))
    except pairshard.EmptySetError as e:
        check("a set with 0 records raises EmptySetError (PairshardError, PS_EEMPTY) naming it",
              isinstance(e, pairshard.PairshardError) and e.code == L.PS_EEMPTY
              and e.name == "PS_EEMPTY" and empty in e.message, e)
    try:
        pairshard.Loader(SET, rank=3, world_size=2)
        check("rank >= world_size raises PairshardError", False)
    except pairshard.PairshardError as e:
        check("rank >= world_size raises PairshardError(PS_EUSAGE)", e.code == L.PS_EUSAGE, e)
    try:
        pairshard.Loader(SET, prefetch=1)
        check("prefetch 1 raises PairshardError", False)
    except pairshard.PairshardError as e:
        check("prefetch 1 raises PairshardError naming prefetch", "prefetch" in e.message, e)
    # Integer arguments are checked before ctypes would truncate them.
    for kw, exc in (({"pack": 0}, ValueError), ({"pack": 2 ** 32}, ValueError),
                    ({"pack": True}, TypeError), ({"pack": 1.5}, TypeError),
                    ({"decoder_start_id": -1}, ValueError),
                    ({"decoder_start_id": 2 ** 31}, ValueError)):
        try:
            pairshard.Loader(SET, rank=0, world_size=1, **kw)
            check("Loader(%r) raises %s" % (kw, exc.__name__), False)
        except exc as e:
            name = list(kw)[0]
            check("Loader(%r) raises %s naming %s" % (kw, exc.__name__, name), name in str(e), e)
    # A damaged block: reported with its shard and block, or skipped.
    dmg = os.path.join(TMP, "damaged")
    shutil.copytree(SET, dmg)
    env = lmdb.open(os.path.join(dmg, "shard-00001.mdb"), subdir=False, readonly=True,
                    lock=False, max_dbs=4)
    db = env.open_db(b"blocks", create=False)
    with env.begin() as txn:
        cur = txn.cursor(db)
        cur.first()
        val = bytes(cur.value())
    env.close()
    blob = open(os.path.join(dmg, "shard-00001.mdb"), "rb").read()
    at = blob.find(val)
    assert at > 0
    mid = at + len(val) // 2
    blob = blob[:mid] + bytes([blob[mid] ^ 0xFF]) + blob[mid + 1:]
    open(os.path.join(dmg, "shard-00001.mdb"), "wb").write(blob)
    with pairshard.Loader(dmg, batch_size=16, rank=0, world_size=1, shuffle=False) as ld:
        got, err = [], None
        while True:
            try:
                for b in ld:
                    got.append(b["step"])
                break
            except pairshard.PairshardError as e:
                err = err or e
        check("a damaged block raises PairshardError(PS_ECORRUPT) naming the shard and block",
              err is not None and err.code == L.PS_ECORRUPT
              and "shard-00001.mdb" in err.message and "block" in err.message, err)
        check("... and iterating again goes on with the following batches",
              len(got) > 0 and got == sorted(got) and len(got) < len(ld))
    with pairshard.Loader(dmg, batch_size=16, rank=0, world_size=1, shuffle=False,
                          skip_corrupt=True) as ld:
        n = sum(len(b["ids"]) for b in ld)
        s = ld.stats()
        check("skip_corrupt: the damaged batches are skipped and counted",
              s["skipped_batches"] > 0 and n + s["skipped_records"] == len(RECS), s)


@test
def introspection():
    with pairshard.Loader(SET, batch_size=16, rank=0, world_size=1, threads=3,
                          prefetch=5) as ld:
        i = ld.info()
        check("info(): records, slots, threads, host device",
              i["records_total"] == MAN["totals"]["records"] and i["slots"] == 5
              and i["threads"] == 3 and i["device"] == -1 and len(ld) == i["batches_per_epoch"],
              i)
        check("info() of a pair set: layout 'pair', pack 0, nothing skipped, a row per record",
              i["layout"] == "pair" and i["pack"] == 0 and i["records_skipped"] == 0
              and i["rows_per_epoch"] == i["records_per_epoch"], i)
        check("labels are the manifest's", ld.labels == MAN["labels"])
        try:
            pickle.dumps(ld)
            check("pickling a Loader is refused", False)
        except TypeError as e:
            check("pickling a Loader is refused with a TypeError saying why",
                  "cannot be pickled" in str(e), e)
        check("bucket bounds are the manifest's", ld.bucket_bounds() == MAN["buckets"])
        recs = real = 0
        for b in ld:
            recs += len(b["ids"])
            real += int(b["lengths"].sum())
        s = ld.stats()
        check("stats(): batches, records and real tokens of the epoch",
              s["batches"] == len(ld) and s["records"] == recs == len(RECS)
              and s["real_tokens"] == real == MAN["totals"]["tokens"], s)


@test
def device_fallback():
    """device=0 without a usable GPU (or without CUDA in the build): host
    batches, reported by info() and each batch; require_device is the C
    option for failing instead."""
    with pairshard.Loader(SET, batch_size=16, rank=0, world_size=1, device=0) as ld:
        i = ld.info()
        b = next(iter(ld))
        if i["device"] >= 0:
            check("device=0 with a GPU: batches equal the decoded records (tensors on device "
                  "%d)" % b.device, b.device in (-1, i["device"])
                  and batch_mismatch(b, RECS, 0) is None)
        else:
            check("device=0 without a usable GPU: host batches (info device -1, batch.device "
                  "-1) with the right content", b.device == -1
                  and batch_mismatch(b, RECS, 0) is None)


@test
def throughput():
    """Batches/s through Python (reported, and a floor far below the
    measured rate so that only a broken path fails)."""
    with pairshard.Loader(SET3, batch_size=32, rank=0, world_size=1, as_torch=False) as ld:
        for _ in ld:  # warm the page cache
            pass
        t0, n, recs = time.perf_counter(), 0, 0
        while time.perf_counter() - t0 < 1.0:
            for b in ld:
                n += 1
                recs += len(b["ids"])
        dt = time.perf_counter() - t0
        s = ld.stats()
    print("# numpy: %.0f batches/s, %.0f records/s (batch 32); consumer waited %.1f%% of the "
          "time" % (n / dt, recs / dt, 100.0 * s["wait_ns"] / 1e9 / dt))
    check("more than 200 batches/s through Python", n / dt > 200, n / dt)
    if torch is not None:
        with pairshard.Loader(SET3, batch_size=32, rank=0, world_size=1) as ld:
            t0, n = time.perf_counter(), 0
            while time.perf_counter() - t0 < 1.0:
                for b in ld:
                    n += 1
            dt = time.perf_counter() - t0
        print("# torch: %.0f batches/s" % (n / dt))


shutil.rmtree(TMP, ignore_errors=True)
print("1..%d" % _n)
sys.exit(1 if _fails else 0)
