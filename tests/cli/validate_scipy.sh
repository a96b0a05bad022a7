#!/bin/sh
# validate/: KS D and its asymptotic p, chi-square and p, Cramer's V,
# Jensen-Shannon distance and PSI against scipy (Debian python3-scipy), on
# generated data and on Spider, to 1e-9 relative. scipy computes the
# reference (tests/validate_ref.py; once a make test, kept in the build's
# cache keyed on its inputs, which the unit test shares); the unit test
# test_scipy_reference recomputes every value with validate/stat_math.c.
# Then `pairshard validate` on statistics files, when the command has them.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
have_scipy() { [ -x "$PY" ] && "$PY" -c 'import scipy, numpy' 2>/dev/null; }
if ! have_scipy; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-scipy
fi
UNIT="$PS_BUILD/tests/test_validate_scipy"
if ! have_scipy; then
    echo "ok 1 - # SKIP python3-scipy is not installed and apt-get could not install it"
    echo "1..1"
    exit 0
fi

# The build's cache holds the answers for the same inputs when the unit
# test computed them first (validate_ref.py keys them on its inputs).
ok_if "scipy computes the reference values (once a make test: the build's cache)" \
    "$PY" "$PS_ROOT/tests/validate_ref.py" "$DATA/spider" "$TMP/ref.json" "$PS_BUILD/cache"
PS_VALIDATE_REF="$TMP/ref.json" PS_VALIDATE_REF_OUT="$TMP/maxerr.txt" CMOCKA_MESSAGE_OUTPUT=STDOUT \
    "$UNIT" >"$TMP/unit.log" 2>&1
rc=$?
grep -q 'OK \] test_scipy_reference' "$TMP/unit.log"
check "every statistic agrees with scipy to 1e-9 relative (unit test ran, not skipped)" $(( rc == 0 && $? == 0 ? 0 : 1 ))
[ "$rc" -eq 0 ] || grep -E 'ERROR|relative error|case' "$TMP/unit.log" | head -20
if [ -f "$TMP/maxerr.txt" ]; then
    while read -r name cases err; do
        awk -v e="$err" -v c="$cases" 'BEGIN { exit !(c > 0 && e <= 1e-9) }'
        check "$name: $cases cases, max relative error $err" $?
    done <"$TMP/maxerr.txt"
else
    check "max relative errors reported" 1
fi

# `pairshard validate` on the build's stats.json
if "$PAIRSHARD" validate --help >/dev/null 2>&1; then
    VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
    printf '%s\n' '[{"name": "split-words", "field": "question", "replace": "(?i)(?:^(?=.*\\bwines?\\b)|(?!^)\\G)\\W*\\w\\K(?=\\W*\\w)", "with": " "}]' >"$TMP/split.json"
    "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id -o "$TMP/clean" \
        "$DATA/spider/train.json" "$DATA/spider/dev.json" >"$TMP/b1.log" 2>&1
    brc=$?
    if [ "$brc" -eq 0 ] && [ -f "$TMP/clean/stats.json" ]; then
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/clean/stats.json" \
            --json "$TMP/same.json" >"$TMP/v1.log" 2>&1
        check "validate: a build against itself passes (exit 0)" $?
        "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r["report_version"]!=1 or r["verdict"]=="fail")' "$TMP/same.json"
        check "validate --json writes a version-1 report" $?
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/clean/stats.json" \
            --point tokenized >/dev/null 2>&1
        check "validate --point tokenized" $?
        "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --rules "$TMP/split.json" \
            --no-gate -o "$TMP/split" "$DATA/spider/train.json" "$DATA/spider/dev.json" >"$TMP/b2.log" 2>&1
        if [ -f "$TMP/split/stats.json" ]; then
            "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/split/stats.json" \
                --point raw >/dev/null 2>&1
            check "validate: raw statistics of the same inputs agree (exit 0)" $?
            "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/split/stats.json" \
                --json "$TMP/split-report.json" --html "$TMP/split-report.html" >"$TMP/v3.log" 2>&1
            check "validate: the split-words build against the clean one fails (exit 1)" $(( $? == 1 ? 0 : 1 ))
            grep -q "FAIL.*wine_1" "$TMP/v3.log"
            check "... and the summary names the label wine_1" $?
            grep -q "<svg" "$TMP/split-report.html" 2>/dev/null
            check "validate --html writes report.html" $?
        else
            check "the --no-gate build with the split-words rule writes stats.json" 1
        fi
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" >/dev/null 2>&1
        check "validate without --current is a usage error (exit 2)" $(( $? == 2 ? 0 : 1 ))
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/clean/stats.json" \
            --point final >/dev/null 2>&1
        check "validate --point final is a usage error (exit 2)" $(( $? == 2 ? 0 : 1 ))
        echo '{"thresholds": {"label_jsd": 0.1}}' >"$TMP/badcfg.json"
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/clean/stats.json" \
            --config "$TMP/badcfg.json" >"$TMP/v2.log" 2>&1
        rc=$?
        check "validate --config with an unknown threshold exits 2 naming it" \
            $(( rc == 2 ? 0 : 1 ))
        grep -q label_jsd "$TMP/v2.log"
        check "... and the message names 'label_jsd'" $?
        echo '{"stats_version": 1, "points": {"cleaned": {"point": "cleaned", "records": -5}}}' >"$TMP/hostile.json"
        "$PAIRSHARD" validate --baseline "$TMP/clean/stats.json" --current "$TMP/hostile.json" >/dev/null 2>&1
        check "validate refuses a hostile statistics file (exit 2)" $(( $? == 2 ? 0 : 1 ))
    else
        check "pairshard build writes stats.json" 1
    fi
else
    check "pairshard validate --help exits 0" 1
fi
done_testing
