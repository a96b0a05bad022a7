#!/bin/sh
# Start-up of a trainer that reads batches: libpairshard-reader against
# libpairshard, each in fresh processes (median of RUNS, default 21):
# bench/startup.c's dlopen of the library, ps_reader_open of a Spider dev
# set and its first batch; the same through Python (import pairshard, a
# Loader, its first batch; numpy imported before the clock starts). Each with the CUDA runtime hidden
# (PAIRSHARD_CUDART naming a missing file: a CPU-only host) and found as
# usual. Also each library's size (as built, with debug information, and
# stripped), its NEEDED list and how many shared objects a process maps.
# Numbers in docs/ARCHITECTURE.md, "The two libraries".
. "$(dirname "$0")/lib.sh"
bench_setup startup 21
READER="$PS_BUILD/lib/libpairshard-reader.so"
FULL="$PS_BUILD/lib/libpairshard.so"
NOCUDA="$W/none/libcudart.so.13"

"$PAIRSHARD" build -q --vocab "$PS_ROOT/tests/data/vocab/bert-base-uncased.vocab.txt" \
    --max-length 128 -o "$W/set" "$PS_ROOT/tests/data/spider/dev.json" || exit 1
${CC:-cc} -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -I"$PS_ROOT/include" -o "$W/startup" \
    "$PS_ROOT/bench/startup.c" || exit 1

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for lib in "$READER" "$FULL"; do
    strip --strip-unneeded -o "$W/stripped.so" "$lib"
    printf '%s: %s bytes (%s stripped); NEEDED: %s\n' "$(basename "$lib")" \
        "$(stat -c %s "$lib")" "$(stat -c %s "$W/stripped.so")" \
        "$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | paste -sd' ' -)"
done

# one LIB CUDART: RUNS fresh processes; medians of dlopen, open, first batch
one() {
    : >"$W/t"
    i=0
    while [ $i -lt "$RUNS" ]; do
        if [ "$2" = hidden ]; then
            PAIRSHARD_CUDART="$NOCUDA" "$W/startup" "$1" "$W/set" >>"$W/t" || return 1
        else
            env -u PAIRSHARD_CUDART "$W/startup" "$1" "$W/set" >>"$W/t" || return 1
        fi
        i=$((i + 1))
    done
    printf '%-24s cudart %-6s dlopen %6.2f ms  open %6.2f ms  first batch %6.3f ms  CPU %6.2f ms (medians of %d)\n' \
        "$(basename "$1")" "$2" "$(cut -d' ' -f1 "$W/t" | median)" \
        "$(cut -d' ' -f2 "$W/t" | median)" "$(cut -d' ' -f3 "$W/t" | median)" \
        "$(cut -d' ' -f4 "$W/t" | median)" "$RUNS"
}
for c in hidden found; do
    one "$READER" $c
    one "$FULL" $c
done

# Python: from `import pairshard` (numpy already imported) to the Loader's
# first batch.
py_one() {
    : >"$W/t"
    i=0
    while [ $i -lt "$RUNS" ]; do
        if [ "$2" = hidden ]; then set -- "$1" "$2" PAIRSHARD_CUDART="$NOCUDA"; else set -- "$1" "$2" X=1; fi
        env -u PAIRSHARD_CUDART "$3" PAIRSHARD_READER_LIB="$1" PYTHONPATH="$PS_ROOT/python" \
            "$PY" -c '
import sys, time
import numpy  # imported first: it alone costs more than the rest
t0 = time.perf_counter()
import pairshard
ld = pairshard.Loader(sys.argv[1], rank=0, world_size=1, as_torch=False)
next(iter(ld))
t1 = time.perf_counter()
maps = {l.split()[-1] for l in open("/proc/self/maps") if ".so" in l}
print("%.3f %d" % ((t1 - t0) * 1e3, len(maps)))
ld.close()' "$W/set" >>"$W/t" || return 1
        set -- "$1" "$2"
        i=$((i + 1))
    done
    printf 'python Loader on %-24s cudart %-6s %7.2f ms to the first batch; %s shared objects mapped\n' \
        "$(basename "$1")" "$2" "$(cut -d' ' -f1 "$W/t" | median)" "$(cut -d' ' -f2 "$W/t" | median)"
}
if "$PY" -c 'import numpy' 2>/dev/null; then
    for c in hidden found; do
        py_one "$READER" $c
        py_one "$FULL" $c
    done
else
    echo "python: numpy missing, the Python start-up is not measured"
fi
