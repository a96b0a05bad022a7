#!/bin/sh
# pairshard build --profile: the profile names every phase (the command's
# own, loading the tokenizer and the teardown, too) and they add up to
# the wall; one line per worker, the stages behind the commit with more than one thread, and a
# serial fraction between 0 and 100%; and it changes no byte of the set
# (against a 1-thread build without it).
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }
IN="$DATA/spider/train.json"

B --threads 3 --profile -o "$TMP/p3" "$IN" 2>"$TMP/p3.err"
rc=$?
for w in "tokenizer" "set-up" "phase 1" "reading" "committing" "waiting" "statistics" "writing" \
    "checks" "phase 2" "writers" "grouping" "storing" "finishing" "manifest+publish" "teardown" \
    "cpu: calling thread"; do
    grep -q "^profile: .*$w" "$TMP/p3.err" || rc=1
done
[ $rc -eq 0 ] && [ "$(grep -c '^profile:     worker ' "$TMP/p3.err")" -eq 3 ] &&
    awk '/^profile: serial/ {f = $6; sub("%", "", f); f += 0; ok = f > 0 && f < 100 && $3 > 0} END {exit !ok}' "$TMP/p3.err"
check "--profile at 3 threads: every phase, 3 workers, both stages, a serial fraction in (0, 100%)" $? "$TMP/p3.err"

# The command's wall is its phases': the tokenizer's loading before the
# build and the teardown after it count (they are serial at any thread
# count), each phase to the millisecond it is printed to.
phases_add_up() {
    awk '/^profile: wall/ {w = $3; b = $9 + 0}
         /^profile:   [^ ]/ {for (i = 2; i < NF; i++) if ($(i + 1) == "s" && $i ~ /^[0-9.]+$/) {s += $i; n++; break}}
         END {d = s - w; if (d < 0) d = -d; exit !(n == 7 && d <= 0.004 && w >= b && b > 0)}' "$1"
}
phases_add_up "$TMP/p3.err"
check "--profile at 3 threads: the seven phases, tokenizer and teardown among them, add up to the command's wall" $? "$TMP/p3.err"

B --threads 1 --profile -o "$TMP/p1" "$IN" 2>"$TMP/p1.err"
[ $? -eq 0 ] && [ "$(grep -c '^profile:     worker ' "$TMP/p1.err")" -eq 0 ] &&
    grep -q '^profile:     cleaning .*calling thread' "$TMP/p1.err" &&
    ! grep -q '^profile: .*statistics' "$TMP/p1.err"
check "--profile at 1 thread: no worker thread, the calling thread cleans and commits" $? "$TMP/p1.err"
phases_add_up "$TMP/p1.err"
check "--profile at 1 thread: the phases add up to the command's wall" $? "$TMP/p1.err"
# One thread means one core: the calling thread's CPU seconds are nearly
# all of the process's (only the inputs' hashing runs beside it).
awk '/^profile: cpu:/ {ok = $5 > 0 && $5 / $10 >= 0.85} END {exit !ok}' "$TMP/p1.err"
check "--threads 1: the calling thread does >= 85% of the process's CPU work" $? "$TMP/p1.err"

B --threads 1 -o "$TMP/plain" "$IN" 2>"$TMP/plain.err"
same=0
same_set "$TMP/plain" "$TMP/p3" || same=1
[ "$(ls "$TMP/plain")" = "$(ls "$TMP/p3")" ] && [ $same -eq 0 ] && [ ! -s "$TMP/plain.err" ]
check "the set built with --profile at 3 threads is byte-identical to a plain 1-thread build" $?

done_testing
