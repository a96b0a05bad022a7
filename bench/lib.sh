# Sourced by the bench_*.sh scripts: what each needs before it measures.
#   bench_setup NAME   checks PAIRSHARD and PS_ROOT, makes the work folder W
#                      (removed at exit) and picks PY, Debian's python3 when
#                      it is there (the peers' libraries are Debian's)
bench_setup() {
    : "${PAIRSHARD:?}" "${PS_ROOT:?}"
    W=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench-$1.XXXXXX")
    trap 'rm -rf "$W"' EXIT
    PY=/usr/bin/python3
    [ -x "$PY" ] || PY=python3
}
