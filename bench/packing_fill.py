"""Packing against padding, for bench/bench_packing.sh: on one causal set,
at row length L with ROWS rows a batch, one epoch each of
  - packed: pairshard.Loader(pack=L, batch_size=ROWS);
  - bucketed, padded to the longest: the reader unpacked with
    max_tokens = L * ROWS (so B * T is comparable);
  - random batching (the peer, here): the unpacked epoch's record lengths
    shuffled (fixed seed) and cut into batches of the bucketed run's sizes,
    each padded to its longest;
the fill ratio (real tokens / tokens delivered) of each, packing's fill with
other shuffle windows (16 blocks, the whole epoch) and the most any packing
of whole records could reach (the L2 lower bound on rows), and the packed and
unpacked reading speeds through the Python Loader (real tokens/s, the best
of RUNS epochs, numpy arrays). Prints one JSON object.
  packing_fill.py SET L ROWS RUNS"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import pairshard  # noqa: E402

set_dir, L, rows, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def epoch(**kw):
    """(real tokens, delivered tokens, batch sizes, lengths, seconds, info)."""
    best = None
    for _ in range(runs):
        real = tok = 0
        sizes, lengths = [], []
        with pairshard.Loader(set_dir, seed=1, rank=0, world_size=1, as_torch=False,
                              threads=2, **kw) as ld:
            t0 = time.perf_counter()
            for b in ld:
                B, T = b["input_ids"].shape
                real += int(b["real_tokens"])
                tok += B * T
                sizes.append(B)
                lengths.append(b["seq_lens"].copy())
            dt = time.perf_counter() - t0
            info = ld.info()
        if best is None or dt < best[4]:
            best = (real, tok, sizes, np.concatenate(lengths), dt, info)
    return best


def l2_bound(lengths, L):
    """Martello and Toth's L2 lower bound on the rows any packing of whole
    records needs: a ceiling on the fill (records over L/2 cannot share)."""
    best = 0
    for K in sorted(set(int(x) for x in lengths if x <= L // 2)) + [0]:
        j1 = lengths[lengths > L - K]
        j2 = lengths[(lengths > L / 2) & (lengths <= L - K)]
        j3 = lengths[(lengths >= K) & (lengths <= L / 2)]
        room = len(j2) * L - int(j2.sum())
        best = max(best, len(j1) + len(j2) + max(0, -(-(int(j3.sum()) - room) // L)))
    return best


pk = epoch(pack=L, batch_size=rows, skip_long=True)
un = epoch(max_tokens=L * rows)
runs = 1  # the window sweep: fill only
wide = {w: epoch(pack=L, batch_size=rows, skip_long=True, shuffle_window=w)
        for w in (16, 1 << 20)}
rng = np.random.default_rng(0)
lens = rng.permutation(un[3])
rand_tok, at = 0, 0
for B in un[2]:
    rand_tok += B * int(lens[at:at + B].max())
    at += B
print(json.dumps({
    "L": L, "rows": rows, "records": int(len(un[3])), "real_tokens": un[0],
    "packed_records": int(len(pk[3])), "packed_skipped": pk[5]["records_skipped"],
    "packed_fill": pk[0] / pk[1], "packed_batches": len(pk[2]),
    "packed_fill_window16": wide[16][0] / wide[16][1],
    "packed_fill_whole_epoch": wide[1 << 20][0] / wide[1 << 20][1],
    "fill_bound": pk[0] / (l2_bound(pk[3], L) * L),
    "bucketed_fill": un[0] / un[1], "bucketed_batches": len(un[2]),
    "bucketed_mean_B": float(np.mean(un[2])),
    "random_fill": un[0] / rand_tok,
    "packed_tokens_per_s": pk[0] / pk[4], "unpacked_tokens_per_s": un[0] / un[4],
}))
