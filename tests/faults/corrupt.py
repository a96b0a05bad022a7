#!/usr/bin/python3
"""Corruption: damaged shard files must be caught, never crash or hang.

A set (Spider dev, 2 shards) is damaged in FAULT_CORRUPT_TRIALS seeded,
reproducible ways (FAULT_SEED): 1..8 flipped bytes at random offsets, one
flipped byte inside a stored block (located with python3-lmdb), a
truncation at a random offset, a zeroed page, garbage appended. Every
trial changes the file, so `pairshard inspect --verify` must exit 1 naming
the shard -- and the bucket and block when the damage is inside one block
-- within the time limit (a flip in bytes LMDB does not use is still
caught by the SHA-256). When `pairshard read` exists it runs on every
damaged set too, with and without --skip-corrupt: it must exit 0 or 1,
never crash or hang, and a run that exits 0 must have delivered every
record with exactly the undamaged set's tokens (never wrong tokens
silently).
"""
import json
import os
import random
import shutil
import struct

from faultlib import (TMP, DEV, build_args, finish, fresh_dir, have_read, note, run, tap,
                      PAIRSHARD, verify)

TRIALS = int(os.environ.get("FAULT_CORRUPT_TRIALS", "300"))
SEED = int(os.environ.get("FAULT_SEED", "20261202"))
TIMEOUT = 30
rng = random.Random(SEED)

base = os.path.join(fresh_dir("corrupt-base"), "set")
r = run(build_args(base, [DEV], 2) + ["--block-records", "16"])
tap(r.rc == 0 and verify(base).rc == 0, "base set: Spider dev into 2 shards of 16-record blocks, verifies")
shards = sorted(n for n in os.listdir(base) if n.startswith("shard-") and n.endswith(".mdb"))
orig = {n: open(os.path.join(base, n), "rb").read() for n in shards}

# Where each stored block lies in its file: (start, end, bucket, seq).
blocks = {n: [] for n in shards}
try:
    import lmdb
    for n in shards:
        env = lmdb.open(os.path.join(base, n), subdir=False, readonly=True, lock=False,
                        max_dbs=4)
        with env.begin() as txn:
            db = env.open_db(b"blocks", txn=txn, create=False)
            for k, v in txn.cursor(db):
                bucket, seq = struct.unpack(">II", k)
                at = orig[n].find(v)
                if at >= 0 and len(v) >= 16:
                    blocks[n].append((at, at + len(v), bucket, seq))
        env.close()
except ImportError:
    note("python3-lmdb is missing: damage inside a block is only required to name the shard")
nblocks = sum(len(b) for b in blocks.values())
note("corrupt: %d shards, %d blocks located in the files" % (len(shards), nblocks))


def block_at(name, lo, hi):
    """The block holding bytes [lo, hi) of shard `name`, or None."""
    for s, e, b, q in blocks[name]:
        if s <= lo and hi <= e:
            return b, q
    return None


# The reference reading: record id -> (input_ids, token_type_ids).
READ = have_read()


def read_args(d, skip):
    return [PAIRSHARD, "read", d, "--threads", "2", "--tokens", "--no-shuffle",
            "--batch-size", "16", "--sort-pool", "1"] + (["--skip-corrupt"] if skip else [])


def records_of(out):
    recs = {}
    for line in out.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        b = json.loads(line)
        for i, rid in enumerate(b["ids"]):
            recs[rid] = (b["input_ids"][i], b["token_type_ids"][i])
    return recs


ref_records = None
if READ:
    rr = run(read_args(base, False), timeout=TIMEOUT)
    try:
        ref_records = records_of(rr.out) if rr.rc == 0 else None
    except (ValueError, KeyError) as e:
        note("read output does not parse: %s" % e)
    tap(ref_records is not None and len(ref_records) > 0,
        "pairshard read on the undamaged set: %d records" % len(ref_records or {}))
else:
    tap(False, "pairshard read --help lists --skip-corrupt and --tokens")

work = os.path.join(TMP, "corrupt-work")
caught = survived = read_runs = read_ok = read_exit0 = 0
kinds = {}
for trial in range(TRIALS):
    name = rng.choice(shards)
    data = bytearray(orig[name])
    mode = ["flip", "flip", "block", "block", "truncate", "page", "append"][trial % 7]
    where = None  # the (bucket, seq) the damage lies in, when one block
    if mode == "flip":
        k = rng.randint(1, 8)
        offs = sorted(rng.sample(range(len(data)), k))
        for o in offs:
            data[o] ^= rng.randint(1, 255)
        desc = "%d byte(s) flipped at %s" % (k, ",".join(map(str, offs)))
        hits = {block_at(name, o, o + 1) for o in offs}
        if len(hits) == 1 and None not in hits:
            where = hits.pop()
    elif mode == "block" and blocks[name]:
        s, e, b, q = rng.choice(blocks[name])
        o = rng.randrange(s, e)
        data[o] ^= 1 << rng.randrange(8)
        desc = "a bit flipped at %d, inside bucket %d block %d" % (o, b, q)
        where = (b, q)
    elif mode == "page":
        page = rng.randrange(len(data) // 4096)
        before = bytes(data[page * 4096:(page + 1) * 4096])
        data[page * 4096:(page + 1) * 4096] = bytes(4096)
        if before == bytes(4096):
            data[page * 4096] = 1  # the page was zero already: still a change
        desc = "page %d zeroed" % page
    elif mode == "append":
        k = rng.choice([1, 100, 4096, 8192])
        data += bytes(rng.randrange(256) for _ in range(k))
        desc = "%d garbage bytes appended" % k
    else:
        mode = "truncate"
        cut = rng.randrange(len(data))
        data = data[:cut]
        desc = "truncated to %d of %d bytes" % (cut, len(orig[name]))
    kinds[mode] = kinds.get(mode, 0) + 1
    if os.path.exists(work):
        shutil.rmtree(work)
    shutil.copytree(base, work)
    with open(os.path.join(work, name), "wb") as f:
        f.write(data)

    v = verify(work, timeout=TIMEOUT)
    problems = []
    if v.crashed():
        problems.append("inspect " + v.why())
    elif v.rc != 1:
        problems.append("inspect exit %d, want 1" % v.rc)
    if name not in v.err:
        problems.append("message does not name %s" % name)
    # A changed bit the zstd decoder never uses (it decodes to the same
    # content, checksum and all) leaves the block intact: then only the
    # file's SHA-256 can tell, and the message names the shard alone.
    if where and ("bucket %d block %d" % where) not in v.err and "SHA-256" not in v.err:
        problems.append("message does not name bucket %d block %d" % where)
    caught += not problems
    line = "corrupt %d: %s: %s: inspect --verify %s" % (trial + 1, name, desc, v.why())
    if READ and ref_records is not None:
        seen = []
        for skip in (False, True):
            rd = run(read_args(work, skip), timeout=TIMEOUT)
            read_runs += 1
            before = len(problems)
            tag = "read%s" % (" --skip-corrupt" if skip else "")
            seen.append("%s %s" % (tag, rd.why()))
            if rd.crashed() or rd.rc not in (0, 1):
                problems.append("%s %s" % (tag, rd.why()))
                continue
            if rd.rc == 0:
                read_exit0 += 1
                try:
                    got = records_of(rd.out)
                except (ValueError, KeyError):
                    problems.append("%s: output does not parse" % tag)
                    continue
                seen[-1] += " (%d of %d records)" % (len(got), len(ref_records))
                wrong = [i for i in got if got[i] != ref_records.get(i)]
                if wrong:
                    problems.append("%s exit 0 with wrong tokens for %d records (e.g. %s)"
                                    % (tag, len(wrong), wrong[0]))
                elif not skip and len(got) != len(ref_records):
                    problems.append("%s exit 0 but delivered %d of %d records"
                                    % (tag, len(got), len(ref_records)))
            read_ok += len(problems) == before
        line += "; " + ", ".join(seen)
    survived += not problems
    if problems:
        line += " -- " + "; ".join(problems) + " | " + v.err.strip()[-200:]
    tap(not problems, line)

note("corrupt: %d trials (%s): inspect --verify caught %d as required; read: %d runs, %d "
     "as required (exit 1, or exit 0 with every record's tokens intact), %d exited 0" % (
         TRIALS, ", ".join("%d %s" % (kinds[k], k) for k in sorted(kinds)), caught, read_runs,
         read_ok, read_exit0))
print("# TOTAL corrupt trials=%d survived=%d" % (TRIALS, survived))
finish()
