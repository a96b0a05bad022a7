#!/bin/sh
# Runs pairshard's whole test suite and prints one closing line:
#   "N passed, N failed, N skipped"
# Unit tests are cmocka binaries (run with TAP output); CLI tests are shell
# scripts in tests/cli/ that print TAP lines ("ok N - ..." / "not ok N - ...").
# A line with a "# SKIP" directive ("ok N - x # SKIP why", or cmocka's
# "not ok N # SKIP name") is a skip: never a pass, never a failure.
# A binary or script that exits non-zero without reporting a failure (a crash,
# a sanitizer report), or that never reported at all, counts as one failure.
# Every skip is listed at the end with its reason (tests/skip_policy.sh);
# under CI=true a skip that tests/skips-allowed.txt does not allow (a
# dependency that could not be installed looks like that) is a failure.
#
# Tests run PS_TEST_JOBS at a time (default: the online CPUs, at most 4;
# PS_TEST_JOBS=1 runs them one by one): most of them are single-threaded
# pipelines of short processes, so a second lane nearly halves a 2-core
# run. Each one's lines are printed whole when it ends (tests/run_one.sh);
# the longest (the conformance run) starts first so that it is not the
# tail. Installs that tests make for themselves (apt, npm) take a lock.
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

jobs=${PS_TEST_JOBS:-}
if [ -z "$jobs" ]; then
    jobs=$(nproc 2>/dev/null || echo 1)
    [ "$jobs" -le 4 ] || jobs=4
fi
case $jobs in '' | *[!0-9]* | 0) echo "PS_TEST_JOBS must be a positive number" >&2; exit 2 ;; esac

logdir="$ROOT/$BUILD/test-logs"
results="$logdir/results"
rm -rf "$results"
mkdir -p "$results"
export PS_TEST_RESULTS="$results"

# The list, as NUL-separated (name, path) pairs, longest-running first.
list="$results/list"
: >"$list"
add() { printf '%s\0%s\0' "$1" "$2" >>"$list"; }
[ -f "$ROOT/tests/conformance/run.sh" ] && add conformance "$ROOT/tests/conformance/run.sh"
for s in "$ROOT"/tests/cli/*.sh; do
    [ -f "$s" ] && add "cli/$(basename "$s" .sh)" "$s"
done
for t in "$ROOT/$BUILD"/tests/test_*; do
    [ -f "$t" ] && [ -x "$t" ] && add "$(basename "$t")" "$t"
done

# The npm binding is shared by several tests: installed once, before they
# start, rather than raced for (a test still installs it when this fails).
if command -v node >/dev/null 2>&1 && [ -f "$ROOT/tests/conformance/ensure.sh" ]; then
    sh "$ROOT/tests/conformance/ensure.sh" >"$logdir/npm-ci.log" 2>&1 || true
fi

echo "$(($(tr -cd '\0' <"$list" | wc -c) / 2)) tests, $jobs at a time"
xargs -0 -n 2 -P "$jobs" sh "$ROOT/tests/run_one.sh" "$logdir" <"$list"

passed=0 failed=0 skipped=0 failed_names=""
names=$(tr '\0' '\n' <"$list" | awk 'NR % 2 == 1')
for name in $names; do
    r="$results/$(echo "$name" | tr '/' '-')"
    if [ -r "$r" ]; then
        read -r p f sk <"$r"
    else
        echo "not ok - $name never reported (killed?)"
        p=0 f=1 sk=0
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + sk))
    [ "$f" -eq 0 ] || failed_names="$failed_names $name"
done

# The skips, with their reasons; under CI=true the ones not allowed fail.
for name in $names; do
    file=$(echo "$name" | tr '/' '-')
    grep -Ei '^(not )?ok\b.*#[[:space:]]*skip' "$logdir/$file.log" 2>/dev/null |
        sed "s|^|$name	|"
done | sh "$ROOT/tests/skip_policy.sh" "$ROOT/tests/skips-allowed.txt" >"$results/skips"
cat "$results/skips"
if [ "${CI:-}" = "true" ]; then
    bad=$(grep -c 'NOT ALLOWED' "$results/skips")
    failed=$((failed + bad)) skipped=$((skipped - bad))
    for name in $(sed -n 's/^  \([^:]*\):.*NOT ALLOWED.*/\1/p' "$results/skips" | sort -u); do
        case " $failed_names " in *" $name "*) ;; *) failed_names="$failed_names $name" ;; esac
    done
fi

[ -n "$failed_names" ] && echo "failed:$failed_names (logs in $BUILD/test-logs/)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
