#!/bin/sh
# Fault campaigns (`make check-faults`):
#   crash     pairshard build killed with SIGKILL at random moments
#   disk      builds into a full filesystem (tmpfs) and under RLIMIT_FSIZE
#   corrupt   damaged shard files against inspect --verify and read
#   hostile   symlinks, special files, lying counts and odd versions in a set
#   readers   shards truncated under a live reader (read, Python Loader);
#             FIFOs, directories, /dev/zero as --resume, --vocab, --config,
#             --template...; FIFO inputs; a signal while an open waits
#   inputs    a tokenizer.json Split regex slow on some records (rejected as
#             tokenizer_error in bounded time); WAL-mode --databases files
#             read with their log, in a read-only folder, nothing written
#   outputs   output paths: symlinks, FIFOs, devices, /dev/fd, directories,
#             aliasing, outputs inside a set, umask, a full disk
#   args      bad numbers and names in flags, environment variables and Python
#   lifecycle what -o may replace, staging locks across PID namespaces,
#             SIGINT/TERM/HUP mid-build, descriptor limits, long DIR names
#   accounting manifests whose sums do not add up, against inspect --verify
#             and merge
#
#   sh tests/faults/run.sh [BUILD]     (default build; uses BUILD/bin/pairshard)
#
# Each campaign is a script here (tests/faults/<name>.py) printing "ok" /
# "not ok" lines; this numbers them as TAP, prints each campaign's totals
# ("# crash: 48 trials, 48 survived") and a last line
# "N passed, N failed, N skipped" (a line with a "# SKIP" directive is a
# skip, never a pass), and exits 1 when anything failed. Every skip is
# listed with its reason (tests/skip_policy.sh); under CI=true a skip that
# tests/skips-allowed.txt does not allow is a failure.
# Seeded and reproducible: FAULT_SEED (default 20261202); trial counts:
# FAULT_CRASH_TRIALS (per scenario, default 30), FAULT_CORRUPT_TRIALS (300).
# FAULT_ONLY="crash corrupt" runs a subset. Against a sanitized binary
# (ASan reserves terabytes of address space) set FAULT_VMEM_MB=0.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
export PAIRSHARD="$BUILD/bin/pairshard"
export PS_ROOT="$ROOT"
PY=/usr/bin/python3
if [ ! -x "$PAIRSHARD" ]; then
    echo "check-faults: $PAIRSHARD is not built (make all first)" >&2
    exit 2
fi

# python3-lmdb locates the blocks inside shard files for the corruption
# campaign (a Debian package; installed when missing).
if ! "$PY" -c 'import lmdb' 2>/dev/null; then
    sh "$ROOT/scripts/apt-install.sh" /dev/null python3-lmdb
fi
# strace shows the lifecycle campaign the order in which staging is removed.
if ! command -v strace >/dev/null 2>&1; then
    sh "$ROOT/scripts/apt-install.sh" /dev/null strace
fi

# With a sanitized pairshard (sh tests/faults/run.sh build/fuzz, or
# build/asan): a sanitizer report must not pass for "exit 1".
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:exitcode=87:print_stacktrace=1}"

FAULT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/pairshard-faults.XXXXXX")
export FAULT_TMP
cleanup() {
    # A failed campaign may leave a tmpfs mounted under FAULT_TMP.
    for m in $(awk -v t="$FAULT_TMP" 'index($2, t) == 1 { print $2 }' /proc/mounts 2>/dev/null); do
        umount "$m" 2>/dev/null
    done
    rm -rf "$FAULT_TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOGS="$BUILD/fault-logs"
mkdir -p "$LOGS"
n=0 passed=0 failed=0 skipped=0 summary=""
for c in ${FAULT_ONLY:-crash disk corrupt hostile readers inputs outputs args lifecycle accounting}; do
    script="$ROOT/tests/faults/$c.py"
    case $c in disk) script="$ROOT/tests/faults/diskfull.py" ;; esac
    start=$(date +%s)
    "$PY" "$script" >"$LOGS/$c.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    p=0 f=0 s=0
    while IFS= read -r line; do
        case $line in
            "ok "*"# SKIP"* | "not ok "*"# SKIP"*)
                n=$((n + 1)) s=$((s + 1))
                echo "ok $n - $c: ${line#*ok - }" ;;
            "ok "*)
                n=$((n + 1)) p=$((p + 1))
                echo "ok $n - $c: ${line#ok - }" ;;
            "not ok "*)
                n=$((n + 1)) f=$((f + 1))
                echo "not ok $n - $c: ${line#not ok - }" ;;
            "# TOTAL "*)
                summary="$summary
# $c: ${line#\# TOTAL $c } (${secs}s)" ;;
            "#"*) echo "$line" ;;
        esac
    done <"$LOGS/$c.log"
    if [ $rc -ne 0 ] && [ $f -eq 0 ]; then
        # The campaign itself broke (a Python error): one failure, its tail.
        n=$((n + 1)) f=1
        echo "not ok $n - $c: the campaign exited with status $rc"
        tail -n 15 "$LOGS/$c.log" | sed 's/^/#   /'
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "1..$n"
echo "# totals:$summary"
for c in ${FAULT_ONLY:-crash disk corrupt hostile readers outputs args lifecycle}; do
    grep -Ei '^(not )?ok\b.*#[[:space:]]*skip' "$LOGS/$c.log" 2>/dev/null | sed "s|^|$c	|"
done | sh "$ROOT/tests/skip_policy.sh" "$ROOT/tests/skips-allowed.txt" >"$LOGS/skips"
cat "$LOGS/skips"
if [ "${CI:-}" = "true" ]; then
    bad=$(grep -c 'NOT ALLOWED' "$LOGS/skips")
    failed=$((failed + bad)) skipped=$((skipped - bad))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
