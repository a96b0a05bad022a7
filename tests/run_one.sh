#!/bin/sh
# One test of tests/run.sh: sh tests/run_one.sh LOGDIR NAME PATH
# Runs PATH (a .sh script through sh, otherwise the binary itself) with its
# output in LOGDIR/NAME.log, counts its TAP lines, writes "passed failed
# skipped" to $PS_TEST_RESULTS/NAME and prints its summary line (and, on a
# failure or skip, the lines that say why) in one piece under a lock, so
# that tests running side by side never interleave their reports.
set -u
logdir=$1 name=$2 path=$3
file=$(echo "$name" | tr '/' '-')
log="$logdir/$file.log"
start=$(date +%s)
case $path in
*.sh) sh "$path" >"$log" 2>&1 ;;
*) "$path" >"$log" 2>&1 ;;
esac
rc=$?
sk=$(grep -Eic '^(not )?ok\b.*#[[:space:]]*skip' "$log")
p=$(grep '^ok ' "$log" | grep -Eicv '#[[:space:]]*skip')
f=$(grep '^not ok ' "$log" | grep -Eicv '#[[:space:]]*skip')
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "not ok - $name exited with status $rc" >>"$log"
fi
secs=$(($(date +%s) - start))
report="$PS_TEST_RESULTS/$file.report"
{
    skips=""
    [ "$sk" -eq 0 ] || skips=", $sk skipped"
    if [ "$f" -gt 0 ]; then
        printf '%-34s %4d passed, %d FAILED%s (%ss)\n' "$name" "$p" "$f" "$skips" "$secs"
        grep -E '^not ok|^# ' "$log" | head -40 | sed 's/^/    /'
        tail -n 30 "$log" | sed 's/^/    | /'
    else
        printf '%-34s %4d passed%s (%ss)\n' "$name" "$p" "$skips" "$secs"
    fi
    [ "$sk" -eq 0 ] || grep -Ei '^(not )?ok\b.*#[[:space:]]*skip' "$log" | head -5 | sed 's/^/    /'
} >"$report"
if command -v flock >/dev/null 2>&1; then
    flock "$PS_TEST_RESULTS/.print" cat "$report"
else
    cat "$report"
fi
echo "$p $f $sk" >"$PS_TEST_RESULTS/$file"
