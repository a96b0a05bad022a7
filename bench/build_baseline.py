#!/usr/bin/env python3
"""The peer for bench/bench_build.sh: `pairshard build` as a team would
otherwise script it, one stage after the other.

  1. clean     bench/clean_baseline.py's cleaning (json + unicodedata + re:
               NFKC, control/format removal, whitespace folding, SQL-aware),
               empty checks, exact dedupe on (question, sql); kept records in
               memory.
  2. tokenize  HuggingFace tokenizers (node binding 0.23.2, the version
               tests/conformance pins; bench/hf_tokenize_pairs.js): BERT
               WordPiece, pair encoding, encodeBatch, longest_first
               truncation to --max-length. Run once per --tokenize-threads
               entry (1: TOKENIZERS_PARALLELISM=false; N: rayon with N
               threads); the outputs must be identical.
  3. write     bucketing (first bound >= length, stable), blocks of
               --block-records in the PSB1 layout of store/shards.h, each a
               zstd frame (python3-zstandard, level --zstd-level, content
               size and checksum), put in key order into one LMDB
               environment (python3-lmdb: one write transaction, MDB_APPEND,
               no syncs until one at the end).

Each stage is timed on its own work: not interpreter start-up, module
imports or the tokenizer's vocabulary load, and not the hand-off of pairs
to node and of ids back (a one-process pipeline using the Python binding
would not pay it; it is reported apart as handoff_seconds). Prints one JSON
object on stdout.

usage: build_baseline.py --vocab FILE --buckets 16,32,64,128 [--label-field F]
           [--max-length N] [--block-records N] [--zstd-level L]
           [--tokenize-threads 1,2] -o DIR INPUT...
       build_baseline.py --digest DIR
           sha256 of the decompressed blocks of DIR/shard-*.mdb in key order
           (a pairshard set or this script's), with record and token counts
"""
import argparse
import array
import glob
import hashlib
import itertools
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

import lmdb
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clean_baseline  # noqa: E402  (builds its character class on import)

LABEL_NONE = 0xFFFFFFFF


def stage_clean(inputs, label_field):
    """Returns (ids, pairs, labels, counts)."""
    ids, pairs, labels = [], [], []
    c = {"in": 0, "kept": 0, "rejected": 0, "duplicates": 0}
    for _source, rid, q, s, label in clean_baseline.cleaned_records(inputs, label_field, c):
        ids.append(rid)
        pairs.append([q, s])
        labels.append(label)
    counts = {"records_in": c["in"], "kept": c["kept"], "rejected": c["rejected"],
              "duplicates": c["duplicates"]}
    return ids, pairs, labels, counts


def stage_tokenize(pairs_file, out_file, vocab, max_length, threads):
    env = dict(os.environ)
    if threads <= 1:
        env["TOKENIZERS_PARALLELISM"] = "false"
    else:
        env["TOKENIZERS_PARALLELISM"] = "true"
        env["RAYON_NUM_THREADS"] = str(threads)
    r = subprocess.run(["node", os.path.join(HERE, "hf_tokenize_pairs.js"), vocab,
                        str(max_length), pairs_file, out_file],
                       env=env, stdout=subprocess.PIPE, check=True)
    return json.loads(r.stdout)


def read_tokens(path, n):
    """(lengths, type_bounds, ids) from hf_tokenize_pairs.js's output."""
    with open(path, "rb") as f:
        head = array.array("I")
        head.fromfile(f, 2 * n)
        ids = array.array("I")
        ids.frombytes(f.read())
    if sys.byteorder != "little":
        head.byteswap()
        ids.byteswap()
    return head[0::2], head[1::2], ids


def stage_write(out_dir, ids, labels, lengths, bounds, toks32, buckets, block_records, level):
    os.makedirs(out_dir, exist_ok=True)
    label_names = sorted({l for l in labels if l is not None})
    label_id = {l: i for i, l in enumerate(label_names)}
    lab = array.array("I", (LABEL_NONE if l is None else label_id[l] for l in labels))
    width = 2 if (max(toks32) if toks32 else 0) <= 0xFFFF else 4
    toks = array.array("H" if width == 2 else "I", toks32)
    if sys.byteorder != "little":
        toks.byteswap()
    tok_bytes = memoryview(toks).cast("B")
    start = array.array("Q", itertools.accumulate(lengths, initial=0))

    # Bucket of each record: the first bound >= its length (a record longer
    # than every bound goes to the last bucket, as with truncation none is).
    bound_of = {}
    per_bucket = [[] for _ in buckets]
    for i, n in enumerate(lengths):
        b = bound_of.get(n)
        if b is None:
            b = next((k for k, v in enumerate(buckets) if n <= v), len(buckets) - 1)
            bound_of[n] = b
        per_bucket[b].append(i)

    cctx = zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)
    path = os.path.join(out_dir, "shard-00000.mdb")
    for p in (path, path + "-lock"):
        if os.path.exists(p):
            os.unlink(p)
    env = lmdb.open(path, subdir=False, map_size=1 << 36, max_dbs=2, lock=False,
                    sync=False, metasync=False)
    blocks_db = env.open_db(b"blocks")
    meta_db = env.open_db(b"meta")
    enc_ids = [s.encode("utf-8") for s in ids]
    stats = []
    raw_total = stored = nblocks = 0
    with env.begin(write=True) as txn:
        for b, members in enumerate(per_bucket):
            seq = 0
            btoks = 0
            for at in range(0, len(members), block_records):
                blk = members[at:at + block_records]
                n = len(blk)
                rid = [enc_ids[i] for i in blk]
                off = array.array("I", itertools.accumulate(map(len, rid), initial=0))
                idb = b"".join(rid)
                pad = b"\0" * ((-len(idb)) % width)
                ln = array.array("I", (lengths[i] for i in blk))
                parts = [b"PSB1", struct.pack("<IB3x", n, width), ln.tobytes(),
                         array.array("I", (bounds[i] for i in blk)).tobytes(),
                         array.array("I", (lab[i] for i in blk)).tobytes(),
                         off.tobytes(), idb, pad]
                parts.extend(tok_bytes[width * start[i]:width * start[i + 1]] for i in blk)
                raw = b"".join(parts)
                frame = cctx.compress(raw)
                txn.put(struct.pack(">II", b, seq), frame, db=blocks_db, append=True)
                raw_total += len(raw)
                stored += len(frame)
                seq += 1
                btoks += sum(ln)
            nblocks += seq
            stats.append({"bound": buckets[b], "records": len(members), "tokens": btoks,
                          "blocks": seq})
        txn.put(b"format", json.dumps({"magic": "pairshard-shard", "format_version": 1,
                                       "shard": 0}).encode(), db=meta_db)
    env.sync(True)
    env.close()
    summary = {"records": len(ids), "tokens": len(toks32), "blocks": nblocks,
               "labels": len(label_names), "uncompressed_bytes": raw_total,
               "compressed_bytes": stored, "buckets": stats}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def digest(set_dir):
    h = hashlib.sha256()
    records = tokens = blocks = 0
    dctx = zstandard.ZstdDecompressor()
    for path in sorted(glob.glob(os.path.join(set_dir, "shard-*.mdb"))):
        env = lmdb.open(path, subdir=False, readonly=True, lock=False, max_dbs=2)
        db = env.open_db(b"blocks", create=False)
        with env.begin(db=db) as txn:
            for key, val in txn.cursor():
                raw = dctx.decompress(val)
                n, = struct.unpack_from("<I", raw, 4)
                records += n
                tokens += sum(struct.unpack_from("<%dI" % n, raw, 12))
                blocks += 1
                h.update(key)
                h.update(raw)
        env.close()
    return {"records": records, "tokens": tokens, "blocks": blocks, "sha256": h.hexdigest()}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--digest":
        print(json.dumps(digest(sys.argv[2])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--label-field", default="label")
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--buckets", required=True)
    ap.add_argument("--block-records", type=int, default=128)
    ap.add_argument("--zstd-level", type=int, default=3)
    ap.add_argument("--tokenize-threads", default="1")
    a = ap.parse_args()
    buckets = [int(x) for x in a.buckets.split(",")]
    threads = [int(x) for x in a.tokenize_threads.split(",")]
    out = {}

    t0 = time.perf_counter()
    ids, pairs, labels, counts = stage_clean(a.inputs, a.label_field)
    out["clean_seconds"] = time.perf_counter() - t0
    out["accounting"] = counts

    with tempfile.TemporaryDirectory(prefix="ps-build-baseline-") as tmp:
        handoff = 0.0
        t0 = time.perf_counter()
        pairs_file = os.path.join(tmp, "pairs.json")
        with open(pairs_file, "w", encoding="utf-8") as f:
            json.dump(pairs, f, ensure_ascii=False)
        handoff += time.perf_counter() - t0
        del pairs
        out["tokenize_seconds"] = {}
        first = None
        for t in threads:
            tok_file = os.path.join(tmp, "tokens-%d.bin" % t)
            r = stage_tokenize(pairs_file, tok_file, a.vocab, a.max_length, t)
            out["tokenize_seconds"][str(t)] = r["seconds"]
            with open(tok_file, "rb") as f:
                h = hashlib.sha256(f.read()).hexdigest()
            if first is None:
                first = (tok_file, h)
            elif h != first[1]:
                sys.exit("build_baseline: tokenize output differs between thread counts")
        t0 = time.perf_counter()
        lengths, bounds, toks32 = read_tokens(first[0], len(ids))
        handoff += time.perf_counter() - t0
        out["handoff_seconds"] = handoff

    t0 = time.perf_counter()
    out["set"] = stage_write(a.output, ids, labels, lengths, bounds, toks32, buckets,
                             a.block_records, a.zstd_level)
    out["write_seconds"] = time.perf_counter() - t0
    ru_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out["peak_rss_kib"] = {"python": ru_self, "node": ru_kids}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
