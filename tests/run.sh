#!/bin/sh
# Runs pairshard's whole test suite and prints one closing line:
#   "N passed, N failed, N skipped"
# Unit tests are cmocka binaries (run with TAP output); CLI tests are shell
# scripts in tests/cli/ that print TAP lines ("ok N - ..." / "not ok N - ...").
# A line with a "# SKIP" directive ("ok N - x # SKIP why", or cmocka's
# "not ok N # SKIP name") is a skip: never a pass, never a failure.
# A binary or script that exits non-zero without reporting a failure (a crash,
# a sanitizer report) counts as one failure.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PAIRSHARD="$ROOT/$BUILD/bin/pairshard"
export PS_ROOT="$ROOT"
export PS_BUILD="$ROOT/$BUILD"
export CMOCKA_MESSAGE_OUTPUT=TAP
# Sanitizer builds: make any report fatal and visible.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

passed=0 failed=0 skipped=0 failed_names=""
logdir="$ROOT/$BUILD/test-logs"
mkdir -p "$logdir"

run_one() { # name command...
    name=$1; shift
    log="$logdir/$(echo "$name" | tr '/' '-').log"
    start=$(date +%s)
    "$@" >"$log" 2>&1
    rc=$?
    sk=$(grep -Eic '^(not )?ok\b.*#[[:space:]]*skip' "$log")
    p=$(grep '^ok ' "$log" | grep -Eicv '#[[:space:]]*skip')
    f=$(grep '^not ok ' "$log" | grep -Eicv '#[[:space:]]*skip')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "not ok - $name exited with status $rc" >>"$log"
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + sk))
    skips=""
    [ "$sk" -eq 0 ] || skips=", $sk skipped"
    secs=$(( $(date +%s) - start ))
    if [ "$f" -gt 0 ]; then
        failed_names="$failed_names $name"
        printf '%-34s %4d passed, %d FAILED%s (%ss)\n' "$name" "$p" "$f" "$skips" "$secs"
        grep -E '^not ok|^# ' "$log" | head -40 | sed 's/^/    /'
        tail -n 30 "$log" | sed 's/^/    | /'
    else
        printf '%-34s %4d passed%s (%ss)\n' "$name" "$p" "$skips" "$secs"
    fi
    [ "$sk" -eq 0 ] || grep -Ei '^(not )?ok\b.*#[[:space:]]*skip' "$log" | head -5 | sed 's/^/    /'
}

for t in "$ROOT/$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for s in "$ROOT"/tests/cli/*.sh; do
    [ -f "$s" ] || continue
    run_one "cli/$(basename "$s" .sh)" sh "$s"
done
if [ -f "$ROOT/tests/conformance/run.sh" ]; then
    run_one "conformance" sh "$ROOT/tests/conformance/run.sh"
fi

[ -n "$failed_names" ] && echo "failed:$failed_names (logs in $BUILD/test-logs/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
