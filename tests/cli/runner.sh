#!/bin/sh
# The test runners count honestly: tests/run.sh and tests/faults/run.sh run
# here on a fake tree whose tests print passes, failures and TAP skips
# ("ok N - x # SKIP why", cmocka's "not ok N # SKIP name"); a skip is never
# counted as a pass nor as a failure, and the closing line is
# "N passed, N failed, N skipped" (what CI parses), whether the tests run
# one by one or side by side (PS_TEST_JOBS). Every skip is listed at the end
# with its reason; under CI=true a skip the allow-list does not name (what a
# dependency that could not be installed gives) fails the run.
. "$PS_ROOT/tests/tap.sh"
# The fake runs below choose CI themselves (this script runs inside CI).
unset CI

T="$TMP/tree"
mkdir -p "$T/tests/cli" "$T/tests/faults" "$T/build/tests" "$T/build/bin"
cp "$PS_ROOT/tests/run.sh" "$PS_ROOT/tests/run_one.sh" "$PS_ROOT/tests/skip_policy.sh" "$T/tests/"
# the fake tree's allow-list: cmocka's skip of test_b only
printf '# fake\ntest_fake\tSKIP test_b$\ttest_b needs a second CPU\n' >"$T/tests/skips-allowed.txt"
cp "$PS_ROOT/tests/faults/run.sh" "$T/tests/faults/run.sh"
cat >"$T/build/tests/test_fake" <<'SH'
#!/bin/sh
echo "1..3"
echo "ok 1 - test_a"
echo "not ok 2 # SKIP test_b"
echo "ok 3 - test_c"
SH
chmod +x "$T/build/tests/test_fake"
cat >"$T/tests/cli/fake.sh" <<'SH'
echo "ok 1 - a"
echo "ok 2 - b # SKIP no such tool"
echo "ok 3 # skip lower case"
echo "ok 4 - d"
echo "1..4"
SH
cat >"$T/tests/cli/fails.sh" <<'SH'
echo "not ok 1 - a real failure"
echo "ok 2 - e"
echo "1..2"
exit 1
SH
sh "$T/tests/run.sh" build >"$TMP/run.out" 2>&1
rc=$?
last=$(tail -n 1 "$TMP/run.out")
[ "$last" = "5 passed, 1 failed, 3 skipped" ]
check "tests/run.sh: closing line '5 passed, 1 failed, 3 skipped' (got '$last')" $?
[ "$rc" -eq 1 ]
check "tests/run.sh: exit 1 when a test failed" $?
echo "$last" | grep -Eq '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'
check "the closing line matches 'N passed, N failed, N skipped'" $?
# Side by side: the same counts, each test's report whole (its failure
# lines right under its own summary line), a test killed by a signal a
# failure.
cat >"$T/tests/cli/killed.sh" <<'SH'
echo "ok 1 - reached"
kill -KILL $$
SH
for j in 1 3; do
    PS_TEST_JOBS=$j sh "$T/tests/run.sh" build >"$TMP/run$j.out" 2>&1
    echo $? >"$TMP/rc$j"
done
[ "$(tail -n 1 "$TMP/run1.out")" = "6 passed, 2 failed, 3 skipped" ] &&
    [ "$(tail -n 1 "$TMP/run3.out")" = "6 passed, 2 failed, 3 skipped" ] &&
    [ "$(cat "$TMP/rc1")" = 1 ] && [ "$(cat "$TMP/rc3")" = 1 ]
check "PS_TEST_JOBS=1 and 3: the same closing line, a killed test counted as a failure" $? "$TMP/run3.out"
grep -A1 '^cli/fails ' "$TMP/run3.out" | tail -n 1 | grep -q '^    not ok 1 - a real failure$' &&
    grep -A1 '^cli/killed ' "$TMP/run3.out" | tail -n 1 | grep -q 'not ok - cli/killed exited with status 137'
check "PS_TEST_JOBS=3: each failure's lines follow its own summary line" $? "$TMP/run3.out"
PS_TEST_JOBS=0 sh "$T/tests/run.sh" build >"$TMP/run0.out" 2>&1
[ $? -eq 2 ] && grep -q 'PS_TEST_JOBS must be a positive number' "$TMP/run0.out"
check "PS_TEST_JOBS=0 is refused" $? "$TMP/run0.out"
rm "$T/tests/cli/fails.sh" "$T/tests/cli/killed.sh"
sh "$T/tests/run.sh" build >"$TMP/run.out" 2>&1
[ $? -eq 0 ] && [ "$(tail -n 1 "$TMP/run.out")" = "4 passed, 0 failed, 3 skipped" ]
check "tests/run.sh: skips alone do not fail the run" $?
grep -q '^skips (3):$' "$TMP/run.out" &&
    grep -q '^  test_fake: test_b -- allowed: test_b needs a second CPU$' "$TMP/run.out" &&
    grep -q '^  cli/fake: no such tool -- not on the allow-list (a failure under CI=true)$' "$TMP/run.out"
check "tests/run.sh: every skip listed with its reason, allowed or not" $? "$TMP/run.out"

# CI=true: a test whose dependency could not be installed skips; that is a
# failure unless the allow-list names it. Forced here: python3-scipy absent.
cat >"$T/tests/cli/needs_dep.sh" <<'SH'
echo "ok 1 - # SKIP python3-scipy is not installed and apt-get could not install it"
echo "1..1"
SH
CI=true sh "$T/tests/run.sh" build >"$TMP/ci.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && [ "$(tail -n 1 "$TMP/ci.out")" = "4 passed, 3 failed, 1 skipped" ] &&
    grep -q '^  cli/needs_dep: python3-scipy is not installed and apt-get could not install it -- NOT ALLOWED under CI=true' "$TMP/ci.out" &&
    grep -q '^failed: cli/fake cli/needs_dep' "$TMP/ci.out"
check "CI=true: a skip for a missing dependency fails the run (exit 1, '4 passed, 3 failed, 1 skipped', named)" $? "$TMP/ci.out"
sh "$T/tests/run.sh" build >"$TMP/noci.out" 2>&1
[ $? -eq 0 ] && [ "$(tail -n 1 "$TMP/noci.out")" = "4 passed, 0 failed, 4 skipped" ]
check "... the same tree without CI: exit 0, 4 skips counted" $? "$TMP/noci.out"
rm "$T/tests/cli/needs_dep.sh" "$T/tests/cli/fake.sh"
CI=true sh "$T/tests/run.sh" build >"$TMP/ci.out" 2>&1
[ $? -eq 0 ] && [ "$(tail -n 1 "$TMP/ci.out")" = "2 passed, 0 failed, 1 skipped" ] &&
    grep -q '^  test_fake: test_b -- allowed' "$TMP/ci.out"
check "CI=true: an allowed skip alone passes, listed with its reason" $? "$TMP/ci.out"

# tests/faults/run.sh with a fake campaign (its scripts are Python).
: >"$T/build/bin/pairshard"
chmod +x "$T/build/bin/pairshard"
cat >"$T/tests/faults/fake.py" <<'PY'
print("ok - one")
print("ok - # SKIP tmpfs: no mount here")
print("not ok - # SKIP not either")
print("ok - two")
print("# TOTAL fake 4 trials")
PY
FAULT_ONLY=fake sh "$T/tests/faults/run.sh" build >"$TMP/faults.out" 2>&1
rc=$?
last=$(tail -n 1 "$TMP/faults.out")
[ "$last" = "2 passed, 0 failed, 2 skipped" ] && [ "$rc" -eq 0 ]
check "tests/faults/run.sh: closing line '2 passed, 0 failed, 2 skipped' (got '$last')" $?
grep -q "^ok 2 - fake: # SKIP tmpfs" "$TMP/faults.out"
check "tests/faults/run.sh: a skip stays a TAP skip in its output" $?
CI=true FAULT_ONLY=fake sh "$T/tests/faults/run.sh" build >"$TMP/faults.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && [ "$(tail -n 1 "$TMP/faults.out")" = "2 passed, 2 failed, 0 skipped" ] &&
    grep -q '^  fake: tmpfs: no mount here -- NOT ALLOWED under CI=true' "$TMP/faults.out"
check "tests/faults/run.sh under CI=true: skips not on the allow-list fail" $? "$TMP/faults.out"

done_testing
