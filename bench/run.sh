#!/bin/sh
# make bench: runs every bench/bench_*.sh with the build directory. Each
# benchmark measures pairshard and a peer in the same run and prints the
# ratio; none of them is a test (nothing here can fail a build).
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PAIRSHARD="$ROOT/$BUILD/bin/pairshard" PS_ROOT="$ROOT" PS_BUILD="$ROOT/$BUILD"
status=0
for b in "$ROOT"/bench/bench_*.sh; do
    [ -f "$b" ] || continue
    echo "== $(basename "$b" .sh)"
    sh "$b" || status=1
done
exit $status
