# Sourced by the bench_*.sh scripts: what each needs before it measures.
#   bench_setup NAME [RUNS]
#                      checks PAIRSHARD and PS_ROOT, makes the work folder W
#                      (removed at exit), picks PY, Debian's python3 when it
#                      is there (the peers' libraries are Debian's), and sets
#                      RUNS, the runs timed: $PS_BENCH_RUNS, else RUNS
bench_setup() {
    : "${PAIRSHARD:?}" "${PS_ROOT:?}"
    RUNS=${PS_BENCH_RUNS:-${2:-3}}
    W=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench-$1.XXXXXX")
    trap 'rm -rf "$W"' EXIT
    PY=/usr/bin/python3
    [ -x "$PY" ] || PY=python3
}
