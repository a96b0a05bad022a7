#!/bin/sh
# Benchmark: the whole `pairshard build` (ingest, clean, tokenize, bucket,
# LMDB/zstd shards, manifest, atomic publish) at 1 and 2 threads, against
# the pipeline a user would otherwise script (bench/build_baseline.py:
# cleaning, bucketing and LMDB/zstd writing in Python with python3-lmdb and
# python3-zstandard, tokenization by HuggingFace tokenizers 0.23.2 through
# its node binding), measured in the same run on the same corpus: Spider
# train+dev replicated to JSONL, each copy's questions made distinct so
# dedupe keeps them. Same options on both sides: label db_id, max length
# 128, buckets 16,32,64,128, 128 records a block, zstd level 3, one shard.
#
# pairshard's time is the whole process (best of PS_BENCH_RUNS); the peer's
# is the sum of its stage times, each on its own work only (no start-up,
# imports, vocabulary load, or hand-off between its processes). Both sets
# are decoded and must hold the same blocks. MB/s are 10^6 bytes of input
# JSONL a second; records/s count input records; peak RSS is the build
# process's maximum resident set (getrusage of the child).
#
# env: PS_BENCH_BUILD_COPIES  corpus copies (20: ~160k pairs; 200: ~1.6M)
#      PS_BENCH_BUILD_PEER    0 skips the peer (e.g. for a quick 1.6M run)
#      PS_BENCH_RUNS          pairshard runs per thread count (3)
#      PS_BENCH_BUILD_THREADS the second thread count (2)
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup build 3
COPIES=${PS_BENCH_BUILD_COPIES:-20}
PEER=${PS_BENCH_BUILD_PEER:-1}
T2=${PS_BENCH_BUILD_THREADS:-2}
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
CONF="$PS_ROOT/tests/conformance"
OPTS="--label-field db_id --max-length 128 --buckets 16,32,64,128 --block-records 128 --zstd-level 3"

# ---- the peer's prerequisites (installed when missing; skipped if not) ----
peer_missing=""
if [ "$PEER" != 0 ]; then
    if ! "$PY" -c 'import lmdb, zstandard' 2>/dev/null; then
        echo "build: installing python3-lmdb python3-zstandard (Debian) for the peer" >&2
        SUDO=""
        [ "$(id -u)" = 0 ] || SUDO="sudo -n"
        export DEBIAN_FRONTEND=noninteractive
        $SUDO apt-get install -y -qq --no-install-recommends python3-lmdb python3-zstandard >"$W/apt.log" 2>&1 ||
            { $SUDO apt-get update -qq >>"$W/apt.log" 2>&1 &&
              $SUDO apt-get install -y -qq --no-install-recommends python3-lmdb python3-zstandard >>"$W/apt.log" 2>&1; } || true
        "$PY" -c 'import lmdb, zstandard' 2>/dev/null ||
            peer_missing="python3-lmdb/python3-zstandard could not be installed ($(tail -n 1 "$W/apt.log"))"
    fi
    if [ -z "$peer_missing" ] && ! sh "$CONF/ensure.sh"; then
        peer_missing="npm ci of HF tokenizers failed"
    fi
    command -v node >/dev/null 2>&1 || peer_missing="node is missing"
fi

# ---- corpus ----------------------------------------------------------------
"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
bytes=$(wc -c <"$W/corpus.jsonl")
records=$(wc -l <"$W/corpus.jsonl")

# measure FILE CMD...: runs CMD (its output as it is) and writes "seconds
# peak_rss_kib" of that run to FILE.
measure() {
    "$PY" -c '
import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[2:])
d = time.perf_counter() - t
if r.returncode:
    sys.exit("bench_build: %s exited with status %d" % (sys.argv[2], r.returncode))
open(sys.argv[1], "w").write("%.6f %d\n" % (d, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))' "$@"
}

# best_build THREADS: best time of RUNS builds, and the largest peak RSS.
best_build() {
    best=999999 rss=0
    for _ in $(seq "$RUNS"); do
        rm -rf "$W/ps-$1"
        # shellcheck disable=SC2086
        measure "$W/m" "$PAIRSHARD" build -q --vocab "$VOCAB" $OPTS --threads "$1" \
            -o "$W/ps-$1" "$W/corpus.jsonl"
        m=$(cat "$W/m")
        best=$(echo "$m $best" | awk '{print ($1 < $3) ? $1 : $3}')
        rss=$(echo "$m $rss" | awk '{print ($2 > $3) ? $2 : $3}')
    done
    echo "$best $rss"
}

ps1=$(best_build 1)
psn=$(best_build "$T2")
same1=$(cmp -s "$W/ps-1/shard-00000.mdb" "$W/ps-$T2/shard-00000.mdb" && echo yes || echo NO)

echo "$bytes $records $RUNS $T2 $ps1 $psn $same1" | awk '{
    mb = $1 / 1e6;
    printf "build: %.1f MB of JSONL, %d pairs (Spider train+dev x'"$COPIES"'), best of %d runs\n", mb, $2, $3;
    printf "  pairshard build  1 thread   %7.1f MB/s %9.0f records/s %8.3f s  peak RSS %6.1f MiB\n",
        mb / $5, $2 / $5, $5, $6 / 1024;
    printf "  pairshard build %2d threads  %7.1f MB/s %9.0f records/s %8.3f s  peak RSS %6.1f MiB\n",
        $4, mb / $7, $2 / $7, $7, $8 / 1024;
    printf "  shards identical across threads: %s\n", $9;
    if ($2 >= 1000000)
        printf "  %.1fM-pair build: %.1f s at 1 thread, %.1f s at %d threads, peak RSS %.0f MiB (goal: well under a minute)\n",
            $2 / 1e6, $5, $7, $4, ($6 > $8 ? $6 : $8) / 1024 }'

if [ "$PEER" = 0 ]; then
    echo "  peer skipped (PS_BENCH_BUILD_PEER=0)"
    exit 0
fi
if [ -n "$peer_missing" ]; then
    echo "  NOTE: peer skipped: $peer_missing"
    exit 0
fi

# ---- the peer ---------------------------------------------------------------
# shellcheck disable=SC2086
measure "$W/peer.m" "$PY" "$PS_ROOT/bench/build_baseline.py" --vocab "$VOCAB" $OPTS \
    --tokenize-threads "1,$T2" -o "$W/peer" "$W/corpus.jsonl" 2>"$W/peer.err" >"$W/peer.json" ||
    { echo "  NOTE: the peer failed:"; tail -n 5 "$W/peer.err" | sed 's/^/    /'; exit 1; }
peer_m=$(cat "$W/peer.m")
d_ps=$("$PY" "$PS_ROOT/bench/build_baseline.py" --digest "$W/ps-1")
d_peer=$("$PY" "$PS_ROOT/bench/build_baseline.py" --digest "$W/peer")
same=NO
[ "$d_ps" = "$d_peer" ] && same=yes

"$PY" - "$W/peer.json" "$bytes" "$records" "$T2" "$ps1" "$psn" "$peer_m" "$same" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
mb, recs, t2 = int(sys.argv[2]) / 1e6, int(sys.argv[3]), sys.argv[4]
ps1, psn = (float(x) for x in (sys.argv[5].split()[0], sys.argv[6].split()[0]))
wall, rss = (float(x) for x in sys.argv[7].split())
same = sys.argv[8]
c, w = p["clean_seconds"], p["write_seconds"]
k1, kn = p["tokenize_seconds"]["1"], p["tokenize_seconds"][t2]
tot1, totn = c + k1 + w, c + kn + w
# The peer's Python stages are one process each; were they split perfectly
# over the same number of processes, they would take this long:
ideal = c / int(t2) + kn + w / int(t2)
print("  peer (Python clean + HF tokenizers + Python bucket/LMDB/zstd), stage times:")
print("    clean (Python, 1 core)                  %8.3f s" % c)
print("    tokenize (HF encodeBatch, 1 thread)     %8.3f s" % k1)
print("    tokenize (HF encodeBatch, %s threads)    %8.3f s" % (t2, kn))
print("    bucket + zstd + LMDB (Python, 1 core)   %8.3f s" % w)
print("    total, 1 thread   %8.3f s  %7.2f MB/s %8.0f records/s" % (tot1, mb / tot1, recs / tot1))
print("    total, %s threads  %8.3f s  %7.2f MB/s %8.0f records/s" % (t2, totn, mb / totn, recs / totn))
print("    (not counted: hand-off between its processes %.3f s; whole peer process %.3f s, peak RSS %.0f MiB)"
      % (p["handoff_seconds"], wall, rss / 1024))
print("  ratio, 1 thread   %6.1fx  (goal >= 10x)" % (tot1 / ps1))
print("  ratio, %s threads  %6.1fx  (%.1fx against the peer with its Python stages ideally split %s ways)"
      % (t2, totn / psn, ideal / psn, t2))
print("  same blocks as the peer (decoded): %s" % same)
PY
