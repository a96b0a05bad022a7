#!/bin/sh
# The normalizers of tokenizer.json against HuggingFace's binding
# (tests/conformance/normalizers.js): every Unicode scalar value, alone, in
# runs and decomposed, plus hostile strings, for each normalizer type, its
# options, legacy forms and Sequences. pairshard's side is
# tests/tools/norm_apply, built here against the suite's library. The
# binding is installed by tests/conformance/run.sh (npm ci); without it (or
# without node) this is a skip.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/build_tool.sh"

build_tool norm_apply "$PS_BUILD" "$TMP/norm_apply" -I"$PS_ROOT" 2>"$TMP/err"
check "norm_apply builds against the library" $? "$TMP/err"

if ! command -v node >/dev/null 2>&1; then
    skip "normalizers against the binding" "node is not installed"
elif [ ! -f "$PS_ROOT/tests/conformance/node_modules/tokenizers/package.json" ]; then
    skip "normalizers against the binding" "tokenizers@0.23.2 not installed (tests/conformance/run.sh installs it)"
else
    # its TAP lines are numbered from 1: renumber them after ours
    (cd "$PS_ROOT/tests/conformance" && NORM_APPLY="$TMP/norm_apply" node normalizers.js) \
        >"$TMP/tap" 2>&1
    rc=$?
    while IFS= read -r line; do
        case $line in
        "ok "*) check "${line#ok [0-9]* - }" 0 ;;
        "not ok "*) check "${line#not ok [0-9]* - }" 1 ;;
        "#"*) echo "$line" ;;
        esac
    done <"$TMP/tap"
    check "normalizers.js exits 0" "$rc" "$TMP/tap"
fi
done_testing
