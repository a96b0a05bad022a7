#!/bin/sh
# Benchmark: how `pairshard build` and `pairshard clean` scale with threads.
# Builds (and cleans) the Spider corpus (bench/spider_corpus.py, train+dev
# x PS_BENCH_SCALING_COPIES, each copy's questions made distinct) at 1, 2,
# 4, 8 and 16 threads, those above the machine's online CPUs skipped (and
# named), RUNS rounds of every count; prints the best and median wall time
# of each count, the speed-up over 1 thread (best/best, median/median, and
# the median of each round's own ratio), the
# serial fraction a 1-thread `build --profile` measures (docs/BUILD.md) and
# the speed-up Amdahl's law projects from it at 16 threads. Outputs must be
# byte-identical across thread counts (checked).
#
# Each round also times two 1-thread builds at once: what this machine
# gives two processes that share nothing, the ceiling of any 2-thread
# speed-up here, and the 2-thread build's share of it (paired by round).
#
# Then, when PS_BENCH_X200=1 (off by default: generating the 390 MB corpus
# and building it twice takes about a minute on a 2-core machine), the 1.6M
# pairs of Spider x200 at 1 and the most threads: wall time and peak RSS.
#
# env: PS_BENCH_SCALING_COPIES  corpus copies (20: ~160k pairs, 39 MB)
#      PS_BENCH_RUNS            runs per thread count (5)
#      PS_BENCH_THREADS         thread counts ("1 2 4 8 16")
#      PS_BENCH_SHARDS          shards of the --shards series (8)
#      PS_BENCH_X200            1: also the Spider x200 build
set -eu
. "$(dirname "$0")/lib.sh"
bench_setup scaling
COPIES=${PS_BENCH_SCALING_COPIES:-20}
RUNS=${PS_BENCH_RUNS:-5}
COUNTS=${PS_BENCH_THREADS:-1 2 4 8 16}
X200=${PS_BENCH_X200:-0}
VOCAB="$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt"
OPTS="--label-field db_id --max-length 128 --buckets 16,32,64,128 --block-records 128 --zstd-level 3"
CPUS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)

# measure FILE CMD...: runs CMD, appends "seconds peak_rss_kib" to FILE.
measure() {
    "$PY" -c '
import resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL)
d = time.perf_counter() - t
if r.returncode:
    sys.exit("bench_scaling: %s exited with status %d" % (sys.argv[2], r.returncode))
open(sys.argv[1], "a").write("%.6f %d\n" % (d, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))' "$@"
}

# measure_duo FILE INPUT OUT_A OUT_B CMD...: runs `CMD -o OUT_A INPUT` and
# `CMD -o OUT_B INPUT` at once; appends the seconds until both end to FILE.
measure_duo() {
    "$PY" -c '
import subprocess, sys, time
f, inp, outs, cmd = sys.argv[1], sys.argv[2], sys.argv[3:5], sys.argv[5:]
t = time.perf_counter()
ps = [subprocess.Popen(cmd + ["-o", o, inp], stdout=subprocess.DEVNULL) for o in outs]
if [p.wait() for p in ps] != [0, 0]:
    sys.exit("bench_scaling: one of two 1-thread builds at once failed")
open(f, "a").write("%.6f\n" % (time.perf_counter() - t))' "$@"
}

# stats FILE: "best median max_rss" of the runs in FILE.
stats() {
    sort -n "$1" | awk '{t[NR] = $1; if ($2 > r) r = $2}
        END {m = NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2; print t[1], m, r}'
}

"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" "$COPIES" >"$W/corpus.jsonl"
sync # its writeback is not the first build's
bytes=$(wc -c <"$W/corpus.jsonl")
records=$(wc -l <"$W/corpus.jsonl")
echo "scaling: $(echo "$bytes" | awk '{printf "%.1f", $1 / 1e6}') MB, $records pairs (Spider train+dev x$COPIES), $CPUS online CPUs, $RUNS runs each"

# The serial fraction, from profiles (the median of RUNS): of a 1-thread
# build ("wall seconds fraction"), and the calling thread's serial seconds
# at the most threads (the stages behind the commit and the reports then
# run beside it), over the 1-thread wall.
median() { sort -n | awk '{s[NR] = $1} END {print s[int((NR + 1) / 2)]}'; }
profile() { # THREADS: "serial_seconds wall_seconds fraction cpu_fraction" of each run
    for _ in $(seq "$RUNS"); do
        rm -rf "$W/prof"
        # shellcheck disable=SC2086
        "$PAIRSHARD" build -q --profile --vocab "$VOCAB" $OPTS --threads "$1" -o "$W/prof" \
            "$W/corpus.jsonl" 2>&1 | awk '/^profile: wall/ {w = $3} /^profile: serial/ {sub("%", "", $6); s = $3 " " w " " $6 / 100}
                   /^profile: cpu:/ {sub("%", "", $13); print s, $13 / 100}'
    done
}
profile 1 >"$W/p1"
top=1
for t in $COUNTS; do [ "$t" -le "$CPUS" ] && top=$t; done
profile "$top" >"$W/pn"
serial=$(awk '{print $3}' "$W/p1" | median)
wall1=$(awk '{print $2}' "$W/p1" | median)
serial_n=$(awk '{print $1}' "$W/pn" | median)
cpu_n=$(awk '{print $4}' "$W/pn" | median)

# What this machine gives two independent 1-thread processes at once over
# one (other users share it): the ceiling for any 2-thread speed-up here.
now() { "$PY" -c 'import time; print(time.perf_counter())'; }
t0=$(now)
"$PAIRSHARD" clean -q --threads 1 -o "$W/solo.jsonl" "$W/corpus.jsonl"
t1=$(now)
"$PAIRSHARD" clean -q --threads 1 -o "$W/duo1.jsonl" "$W/corpus.jsonl" &
"$PAIRSHARD" clean -q --threads 1 -o "$W/duo2.jsonl" "$W/corpus.jsonl"
wait
t2=$(now)
rm -f "$W"/solo.jsonl "$W"/duo*.jsonl
echo "$t0 $t1 $t2" | awk '{printf "  this machine now: two 1-thread cleans at once run %.2fx the throughput of one (the 2-thread ceiling)\n", 2 * ($2 - $1) / ($3 - $2)}'

has_clean_threads=no
"$PAIRSHARD" clean --help 2>&1 | grep -q -- '--threads' && has_clean_threads=yes

# Runs go round the thread counts (1, 2, ..., then 1, 2, ... again), so
# that a change in the machine's load meets every count alike; each
# count's speed-up is also given as the median of its rounds' own ratios
# to 1 thread (paired).
skipped=""
for t in $COUNTS; do
    [ "$t" -gt "$CPUS" ] && skipped="$skipped $t"
done
run_once() { # CMD THREADS: one timed run into $W/m-CMD-THREADS
    rm -rf "$W/$1-$2" "$W/$1-$2.jsonl"
    if [ "$1" = build ]; then
        # shellcheck disable=SC2086
        measure "$W/m-$1-$2" "$PAIRSHARD" build -q --vocab "$VOCAB" $OPTS --threads "$2" \
            -o "$W/$1-$2" "$W/corpus.jsonl"
    else
        measure "$W/m-$1-$2" "$PAIRSHARD" clean -q --label-field db_id --threads "$2" \
            -o "$W/$1-$2.jsonl" "$W/corpus.jsonl"
    fi
}
for cmd in build clean; do
    if [ "$cmd" = clean ] && [ "$has_clean_threads" = no ]; then
        echo "  clean: this pairshard's clean has no --threads: skipped"
        continue
    fi
    for t in $COUNTS; do : >"$W/m-$cmd-$t"; done
    if [ "$cmd" = build ]; then : >"$W/m-duo"; fi
    for _ in $(seq "$RUNS"); do
        for t in $COUNTS; do
            [ "$t" -gt "$CPUS" ] || run_once "$cmd" "$t"
        done
        # The build's own ceiling in the same round: two 1-thread builds
        # at once (what two cores give two processes sharing nothing).
        if [ "$cmd" = build ] && [ "$CPUS" -ge 2 ]; then
            rm -rf "$W/duo-a" "$W/duo-b"
            # shellcheck disable=SC2086
            measure_duo "$W/m-duo" "$W/corpus.jsonl" "$W/duo-a" "$W/duo-b" \
                "$PAIRSHARD" build -q --vocab "$VOCAB" $OPTS --threads 1
        fi
    done
    base_best="" base_med=""
    for t in $COUNTS; do
        [ "$t" -gt "$CPUS" ] && continue
        set -- $(stats "$W/m-$cmd-$t")
        [ -n "$base_best" ] || { base_best=$1; base_med=$2; }
        paired=$(paste "$W/m-$cmd-1" "$W/m-$cmd-$t" | awk '{print $1 / $3}' | median)
        [ "$cmd$t" != build2 ] || build2_paired=$paired
        same=yes
        if [ "$cmd" = build ]; then
            diff -rq "$W/build-1" "$W/build-$t" >/dev/null || same=NO # preprocess/ too
        else
            cmp -s "$W/clean-1.jsonl" "$W/clean-$t.jsonl" || same=NO
        fi
        echo "$cmd $t $1 $2 $3 $base_best $base_med $bytes $same $paired" | awk '{
            printf "  %-5s %2d threads  best %7.3f s  median %7.3f s  %6.1f MB/s  peak RSS %6.1f MiB  speed-up %5.2fx best, %5.2fx median, %5.2fx paired  identical: %s\n",
                $1, $2, $3, $4, $8 / 1e6 / $3, $5 / 1024, $6 / $3, $7 / $4, $10, $9 }'
    done
done
[ -z "$skipped" ] || echo "  skipped (more threads than the $CPUS online CPUs):$skipped"
if [ -s "$W/m-duo" ] && [ -s "$W/m-build-1" ] && [ -s "$W/m-build-2" ]; then
    # per round: the ceiling 2 t1 / duo, and the 2-thread speed-up t1 / t2 over it
    ceil=$(paste "$W/m-build-1" "$W/m-duo" | awk '{print 2 * $1 / $3}' | median)
    share=$(paste "$W/m-build-2" "$W/m-duo" | awk '{print $3 / (2 * $1)}' | median)
    lo_hi=$(paste "$W/m-build-1" "$W/m-duo" | awk '{c = 2 * $1 / $3; if (NR == 1 || c < lo) lo = c; if (c > hi) hi = c} END {printf "%.2f-%.2f", lo, hi}')
    rm -rf "$W/duo-a" "$W/duo-b"
    echo "$ceil $share $lo_hi" | awk '{printf "  build: two 1-thread builds at once run %.2fx the throughput of one (median of the rounds, %sx; the ceiling of a 2-thread build here); the 2-thread build reaches %.0f%% of it (paired, median)\n", $1, $3, 100 * $2}'
    build_ceiling=$ceil
fi

# Phase 2 writes min(threads, shards) shards at once: the same corpus in
# SHARDS shards at 1 and the most threads (outputs compared).
SHARDS=${PS_BENCH_SHARDS:-8}
for t in 1 "$top"; do
    : >"$W/m"
    for _ in $(seq "$RUNS"); do
        rm -rf "$W/sh-$t"
        # shellcheck disable=SC2086
        measure "$W/m" "$PAIRSHARD" build -q --vocab "$VOCAB" $OPTS --shards "$SHARDS" \
            --threads "$t" -o "$W/sh-$t" "$W/corpus.jsonl"
    done
    set -- $(stats "$W/m")
    [ "$t" -eq 1 ] && { sh_best=$1; sh_med=$2; }
    same=yes
    diff -rq "$W/sh-1" "$W/sh-$t" >/dev/null || same=NO
    echo "$t $1 $2 $sh_best $sh_med $same" | awk -v n="$SHARDS" '{
        printf "  build --shards %d, %2d threads  best %7.3f s  median %7.3f s  speed-up %5.2fx best, %5.2fx median  identical: %s\n",
            n, $1, $2, $3, $4 / $2, $5 / $3, $6 }'
done
rm -rf "$W"/sh-*
echo "$serial $serial_n $wall1 $top $cpu_n" | awk '
    function amdahl(f, n) { return 1 / (f + (1 - f) / n) }
    {
    f = $1; g = $2 / $3;
    printf "  serial fraction of a 1-thread build: %.1f%% (goal <= 10%%); Amdahl: %.2fx at 2, %.2fx at 16 threads (goal >= 6x)\n",
        100 * f, amdahl(f, 2), amdahl(f, 16);
    printf "  serial on the calling thread at %d threads: %.3f s = %.1f%% of the 1-thread wall; Amdahl: %.2fx at 2, %.2fx at 16 threads\n",
        $4, $2, 100 * g, amdahl(g, 2), amdahl(g, 16);
    printf "  calling thread CPU over process CPU at %d threads (not inflated by other processes): %.1f%%; Amdahl: %.2fx at 16 threads\n",
        $4, 100 * $5, amdahl($5, 16) }'
# What the serial fraction allows at 2 threads on this machine: Amdahl's
# law with the build's own ceiling in place of 2 for the part that runs
# in parallel, beside the 2-thread build's measured speed-up.
if [ -n "${build_ceiling:-}" ] && [ -n "${build2_paired:-}" ]; then
    echo "$serial $build_ceiling $build2_paired" | awk '{
        f = $1; c = $2; bound = 1 / (f + (1 - f) / c);
        need = c > 1.7 ? sprintf("a serial fraction <= %.1f%%", 100 * (1 / 1.7 - 1 / c) / (1 - 1 / c)) : "a higher ceiling";
        printf "  build at 2 threads: this serial fraction with the %.2fx ceiling allows %.2fx (Amdahl); measured %.2fx paired, %.0f%% of it; 1.7x would need %s here\n",
            c, bound, $3, 100 * $3 / bound, need }'
fi

if [ "$X200" != 1 ]; then
    echo "  Spider x200 (1.6M pairs) skipped: set PS_BENCH_X200=1 (about a minute)"
    exit 0
fi
"$PY" "$PS_ROOT/bench/spider_corpus.py" "$PS_ROOT/tests/data/spider" 200 >"$W/x200.jsonl"
rm -f "$W/corpus.jsonl"
# The 390 MB just written go to disk first: the first build timed would
# otherwise share the disk with their writeback (on the 2-core machine the
# 1-thread build took 10.0 s in two runs without the sync, 8.2 s with it).
sync
big=$(wc -l <"$W/x200.jsonl")
for t in 1 "$CPUS"; do
    rm -rf "$W/x200-out"
    : >"$W/m"
    # shellcheck disable=SC2086
    measure "$W/m" "$PAIRSHARD" build -q --vocab "$VOCAB" $OPTS --threads "$t" -o "$W/x200-out" \
        "$W/x200.jsonl"
    set -- $(cat "$W/m")
    echo "$big $t $1 $2" | awk '{printf "  Spider x200: %d pairs, %2d threads: %.1f s, peak RSS %.0f MiB (goal: well under a minute)\n", $1, $2, $3, $4 / 1024}'
done
