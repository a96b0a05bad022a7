#!/usr/bin/env python3
"""The peer for bench/bench_read.sh: a pairshard shard set read the way a
PyTorch user would write it without pairshard's reader.

  - an IterableDataset over the set's blocks (the manifest lists how many
    each shard holds per bucket): the block order is shuffled per epoch and
    split over DataLoader workers (block i goes to worker i % num_workers);
    each worker opens the LMDB shards itself, read-only and without locks
    (python3-lmdb, lock=False), decompresses each block with
    python3-zstandard, parses the PSB1 layout (docs/FORMAT.md) with numpy
    and yields the block's records in a shuffled order;
  - a DataLoader with batch_size, a collate_fn that pads with numpy into
    input_ids, attention_mask, token_type_ids (B x T, int64, T = the batch's
    longest), labels and lengths (torch.from_numpy), pin_memory=True (which
    torch ignores without a GPU), and num_workers 0, 2, ...

Per worker count it reports batches, records, padded tokens (B*T) and real
tokens (the records' lengths), the wall time from creating the iterator to
the last batch (worker start-up included, as pairshard's figure includes
opening the reader), and the CPU time of this process and its workers
(getrusage of self and of the reaped children), as one JSON object.

usage: dataloader_baseline.py DIR [--batch-size 32] [--workers 0,2] [--epochs 1] [--seed 0]
"""
import argparse
import json
import os
import resource
import sys
import time
import warnings

import lmdb
import numpy as np
import torch
import zstandard
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

LABEL_NONE = 0xFFFFFFFF


def parse_block(raw):
    """PSB1 content -> (ids, lengths, type_boundaries, labels, tokens, starts)."""
    if raw[:4] != b"PSB1":
        raise ValueError("not a PSB1 block")
    n = int.from_bytes(raw[4:8], "little")
    width = raw[8]
    u32 = np.frombuffer(raw, dtype="<u4", count=4 * n + 1, offset=12)
    lengths, tb, labels, offs = u32[:n], u32[n:2 * n], u32[2 * n:3 * n], u32[3 * n:]
    id_start = 12 + 4 * (4 * n + 1)
    id_bytes = raw[id_start:id_start + int(offs[-1])]
    ids = [id_bytes[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    tok_start = id_start + int(offs[-1])
    tok_start += (-tok_start) % width
    tokens = np.frombuffer(raw, dtype="<u2" if width == 2 else "<u4", offset=tok_start)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return ids, lengths, tb, labels, tokens, starts


class ShardBlocks(IterableDataset):
    def __init__(self, directory, seed=0):
        self.dir = directory
        self.seed = seed
        self.epoch = 0
        m = json.load(open(os.path.join(directory, "manifest.json")))
        self.files = [s["file"] for s in m["shards"]]
        self.keys = [(k, b["bucket"], q) for k, s in enumerate(m["shards"])
                     for b in s["buckets"] for q in range(b["blocks"])]

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        rng = np.random.default_rng([self.seed, self.epoch])
        order = rng.permutation(len(self.keys))[wid::nw]
        rng = np.random.default_rng([self.seed, self.epoch, wid])
        envs = {}
        dctx = zstandard.ZstdDecompressor()
        try:
            for i in order:
                shard, bucket, seq = self.keys[i]
                if shard not in envs:
                    env = lmdb.open(os.path.join(self.dir, self.files[shard]), subdir=False,
                                    readonly=True, lock=False, max_dbs=2)
                    envs[shard] = (env, env.open_db(b"blocks", create=False))
                env, db = envs[shard]
                with env.begin(db=db, buffers=False) as txn:
                    data = txn.get(bucket.to_bytes(4, "big") + seq.to_bytes(4, "big"))
                raw = dctx.decompress(data)
                ids, lengths, tb, labels, tokens, starts = parse_block(raw)
                for r in rng.permutation(len(ids)):
                    yield (ids[r], tokens[starts[r]:starts[r + 1]], int(tb[r]),
                           -1 if labels[r] == LABEL_NONE else int(labels[r]))
        finally:
            for env, _ in envs.values():
                env.close()


def collate(batch):
    B = len(batch)
    lengths = np.fromiter((len(t) for _, t, _, _ in batch), dtype=np.int64, count=B)
    T = int(lengths.max())
    input_ids = np.zeros((B, T), dtype=np.int64)
    attention_mask = np.zeros((B, T), dtype=np.int64)
    token_type_ids = np.zeros((B, T), dtype=np.int64)
    for i, (_, toks, tb, _) in enumerate(batch):
        n = len(toks)
        input_ids[i, :n] = toks
        attention_mask[i, :n] = 1
        token_type_ids[i, tb:n] = 1
    labels = np.fromiter((lab for _, _, _, lab in batch), dtype=np.int64, count=B)
    return {
        "ids": [rid for rid, _, _, _ in batch],
        "input_ids": torch.from_numpy(input_ids),
        "attention_mask": torch.from_numpy(attention_mask),
        "token_type_ids": torch.from_numpy(token_type_ids),
        "labels": torch.from_numpy(labels),
        "lengths": torch.from_numpy(lengths),
    }


def cpu_seconds():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run(directory, batch_size, workers, epochs, seed):
    ds = ShardBlocks(directory, seed)
    loader = DataLoader(ds, batch_size=batch_size, collate_fn=collate, num_workers=workers,
                        pin_memory=True)
    batches = records = tokens = real = 0
    c0, t0 = cpu_seconds(), time.perf_counter()
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        it = iter(loader)
        for b in it:
            B, T = b["input_ids"].shape
            batches += 1
            records += B
            tokens += B * T
            real += int(b["lengths"].sum())
        del it  # joins the workers, so that their CPU time is counted
    t1 = time.perf_counter()
    c1 = cpu_seconds()
    secs, cpu = t1 - t0, c1 - c0
    return {"workers": workers, "epochs": epochs, "batch_size": batch_size,
            "pinned": bool(torch.cuda.is_available()), "batches": batches, "records": records,
            "tokens": tokens, "real_tokens": real, "seconds": secs, "cpu_seconds": cpu,
            "tokens_per_s": tokens / secs, "real_tokens_per_s": real / secs,
            "tokens_per_cpu_s": tokens / cpu, "real_tokens_per_cpu_s": real / cpu,
            "padding_waste": 1 - real / tokens if tokens else 0.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    # pin_memory=True without a GPU: torch says it ignores it; so do we.
    warnings.filterwarnings("ignore", message=".*pin_memory.*")
    out = {"torch": torch.__version__, "runs": []}
    expected = json.load(open(os.path.join(a.dir, "manifest.json")))["totals"]["records"]
    for w in (int(x) for x in a.workers.split(",")):
        r = run(a.dir, a.batch_size, w, a.epochs, a.seed)
        if r["records"] != expected * a.epochs:
            sys.exit("dataloader_baseline: %d records read, the set holds %d x %d epochs"
                     % (r["records"], expected, a.epochs))
        out["runs"].append(r)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
