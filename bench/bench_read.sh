#!/bin/sh
# Benchmark: the reader (`pairshard bench-read`, ps_reader at 1 and 2
# threads) against the idiomatic PyTorch DataLoader over the same shard set
# (bench/dataloader_baseline.py: an IterableDataset that opens the LMDB
# shards read-only, decompresses the blocks with zstandard and parses them
# with numpy; a padding collate_fn; num_workers 0 and 2; pin_memory=True),
# and against a memcpy of the same bytes (inside bench-read: into a warm
# ring of batch buffers, and streamed through cold memory), all in the
# same run on the same set: Spider train+dev replicated to JSONL (each
# copy's questions made distinct so dedupe keeps them), label db_id, max
# length 128, automatic buckets, 4 shards. Batches of 32, int64 arrays,
# padding to the batch's longest on both sides.
#
# Tokens/s are real tokens (the records' lengths, what both sides deliver
# the same of); padded tokens are printed too. "Per core" divides by the
# CPU time of the whole process (every thread; for the DataLoader its
# worker processes too). Start-up is ps_reader_open on a set of 1000
# shards (Spider dev built with --shards 1000), and open to first batch.
#
# env: PS_BENCH_READ_COPIES  corpus copies (20: ~160k pairs)
#      PS_BENCH_READ_EPOCHS  epochs per pairshard run (3)
#      PS_BENCH_RUNS         pairshard runs per thread count, best kept (3)
#      PS_BENCH_READ_PEER    0 skips the DataLoader
set -eu
: "${PAIRSHARD:?}" "${PS_ROOT:?}"
COPIES=${PS_BENCH_READ_COPIES:-20}
EPOCHS=${PS_BENCH_READ_EPOCHS:-3}
RUNS=${PS_BENCH_RUNS:-3}
PEER=${PS_BENCH_READ_PEER:-1}
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
W=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench-read.XXXXXX")
trap 'rm -rf "$W"' EXIT

# ---- the peer's prerequisites (installed when missing; skipped if not) ----
peer_missing=""
PEER_IMPORTS='import torch, numpy, lmdb, zstandard'
if [ "$PEER" != 0 ] && ! "$PY" -c "$PEER_IMPORTS" 2>/dev/null; then
    echo "read: installing python3-torch python3-numpy python3-lmdb python3-zstandard (Debian) for the peer" >&2
    sh "$PS_ROOT/scripts/apt-install.sh" "$W/apt.log" python3-torch python3-numpy python3-lmdb \
        python3-zstandard || true
    "$PY" -c "$PEER_IMPORTS" 2>/dev/null ||
        peer_missing="python3-torch/numpy/lmdb/zstandard could not be installed ($(tail -n 1 "$W/apt.log"))"
fi

# ---- the sets -----------------------------------------------------------------
"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
BOPTS="-q --vocab $VOCAB --label-field db_id --max-length 128"
# shellcheck disable=SC2086
"$PAIRSHARD" build $BOPTS --shards 4 -o "$W/set" "$W/corpus.jsonl"
t0=$(date +%s.%N)
# shellcheck disable=SC2086
"$PAIRSHARD" build $BOPTS --shards 1000 -o "$W/set1000" "$PS_ROOT/tests/data/spider/dev.json"
t1=$(date +%s.%N)

# ---- pairshard ------------------------------------------------------------------
RO="--batch-size 32 --rank 0 --world-size 1 --seed 1 --epochs $EPOCHS --json"
# best THREADS: the bench-read JSON of the fastest of RUNS runs.
best() {
    for k in $(seq "$RUNS"); do
        # shellcheck disable=SC2086
        "$PAIRSHARD" bench-read $RO --threads "$1" "$W/set" >"$W/r$1.$k.json"
    done
    "$PY" -c '
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
print(json.dumps(max(runs, key=lambda o: o["real_tokens_per_s"])))' "$W"/r"$1".*.json
}
best 1 >"$W/ps1.json"
best 2 >"$W/ps2.json"
# Start-up on 1000 shards: the best of RUNS opens.
for k in $(seq "$RUNS"); do
    "$PAIRSHARD" bench-read --batch-size 32 --rank 0 --world-size 1 --json "$W/set1000" >"$W/s.$k.json"
done

# ---- the peer ---------------------------------------------------------------------
if [ "$PEER" = 0 ]; then
    echo '{"runs": []}' >"$W/peer.json"
    peer_note="peer skipped (PS_BENCH_READ_PEER=0)"
elif [ -n "$peer_missing" ]; then
    echo '{"runs": []}' >"$W/peer.json"
    peer_note="peer skipped: $peer_missing"
else
    "$PY" "$PS_ROOT/bench/dataloader_baseline.py" "$W/set" --batch-size 32 --workers 0,2 \
        --seed 1 >"$W/peer.json" 2>"$W/peer.err" ||
        { echo "  NOTE: the DataLoader peer failed:"; tail -n 5 "$W/peer.err" | sed 's/^/    /'; exit 1; }
    peer_note=""
fi

"$PY" - "$W" "$COPIES" "$t0" "$t1" "$RUNS" "$peer_note" <<'PY'
import glob, json, os, sys
w, copies, t0, t1, runs, note = sys.argv[1:7]
ps = {t: json.load(open(os.path.join(w, "ps%d.json" % t))) for t in (1, 2)}
# The memcpy bounds do not depend on the reader's threads: the best of all
# runs (the machine is shared; a slow run says nothing about the bound).
every = [json.load(open(p)) for p in glob.glob(os.path.join(w, "r[12].*.json"))]
warm = max(o["memcpy_bytes_per_s"] for o in every)
cold = max(o["memcpy_stream_bytes_per_s"] for o in every)
starts = [json.load(open(p)) for p in glob.glob(os.path.join(w, "s.*.json"))]
peer = {r["workers"]: r for r in json.load(open(os.path.join(w, "peer.json")))["runs"]}
m = json.load(open(os.path.join(w, "set", "manifest.json")))
o = ps[1]
print("read: Spider train+dev x%s, %d records, %d real tokens, %d shards, buckets %s"
      % (copies, m["totals"]["records"], m["totals"]["tokens"], len(m["shards"]),
         ",".join(map(str, m["buckets"]))))
print("  batches of 32, int64, pad to longest; pairshard: %d epochs a run, best of %s runs"
      % (o["epochs"], runs))
def row(name, r, cores):
    print("  %-26s %10.0f real tokens/s %10.0f padded/s %8.0f records/s %5.2f cores  %10.0f real tokens/CPU-s"
          % (name, r["real_tokens_per_s"], r["tokens_per_s"], r["records_per_s"] if "records_per_s" in r
             else r["records"] / r["seconds"], cores, r["real_tokens_per_cpu_s"]))
for t in (1, 2):
    row("pairshard, %d thread%s" % (t, "s" if t > 1 else ""), ps[t], ps[t]["cpu_cores_busy"])
for k in sorted(peer):
    r = peer[k]
    row("DataLoader, %d workers" % k, r, r["cpu_seconds"] / r["seconds"])
for t in (1, 2):
    r = ps[t]
    print("  pairshard %d thread%s: padding waste %.2f%% (random batching %.2f%%), consumer wait %.1f ms"
          % (t, "s" if t > 1 else " ", 100 * r["padding_waste"], 100 * r["random_padding_waste"],
             r["wait_ns"] / 1e6))
    print("    reader %.2f GB/s vs memcpy of the same batches (best of all runs) %.2f GB/s warm (a ring of slots) = %.1f%%,"
          " %.2f GB/s streamed through 256 MiB buffers = %.1f%% (goal >= 40%%)"
          % (r["bytes_per_s"] / 1e9, warm / 1e9, 100 * r["bytes_per_s"] / warm,
             cold / 1e9, 100 * r["bytes_per_s"] / cold))
for k in sorted(peer):
    print("  DataLoader %d workers: padding waste %.2f%%, pinned memory %s%s"
          % (k, 100 * peer[k]["padding_waste"], "yes" if peer[k]["pinned"] else "no (no GPU)",
             ", every batch's 5 tensors handed from a worker process to the main one"
             " (torch's default file_descriptor sharing)" if k else ""))
if peer:
    for t, k in ((1, 0), (2, 2)):
        if k in peer:
            a, b = ps[t], peer[k]
            print("  ratio pairshard %d thread%s / DataLoader %d workers: %6.1fx per core (goal >= 20x), %6.1fx wall"
                  % (t, "s" if t > 1 else " ", k, a["real_tokens_per_cpu_s"] / b["real_tokens_per_cpu_s"],
                     a["real_tokens_per_s"] / b["real_tokens_per_s"]))
    best_peer = max(peer.values(), key=lambda r: r["real_tokens_per_s"])
    print("  ratio pairshard 2 threads / the faster DataLoader (%d workers): %.1fx wall"
          % (best_peer["workers"], ps[2]["real_tokens_per_s"] / best_peer["real_tokens_per_s"]))
if note:
    print("  NOTE: " + note)
s = min(starts, key=lambda o: o["open_ms"])
m1 = json.load(open(os.path.join(w, "set1000", "manifest.json")))
print("  start-up, %d shards (%d records; built in %.1f s): ps_reader_open %.2f ms (goal < 100 ms),"
      " open to first batch %.2f ms (best of %d)"
      % (len(m1["shards"]), m1["totals"]["records"], float(t1) - float(t0), s["open_ms"],
         s["first_batch_ms"], len(starts)))
print("  start-up, %d shards: ps_reader_open %.2f ms, open to first batch %.2f ms"
      % (len(m["shards"]), ps[1]["open_ms"], ps[1]["first_batch_ms"]))
PY
