#!/bin/sh
# The normalizers of tokenizer.json against HuggingFace's binding
# (tests/conformance/normalizers.js): every Unicode scalar value, alone, in
# runs and decomposed, plus hostile strings, for each normalizer type, its
# options, legacy forms and Sequences. pairshard's side is
# tests/tools/norm_apply, built here against the suite's library. Then
# normalizers_e2e.js: real tokenizer.json files with normalizers swapped in,
# through `pairshard tokenize`, id for id with HF's encode. Without node or
# the binding (npm ci failed) this is a skip.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/build_tool.sh"

build_tool norm_apply "$PS_BUILD" "$TMP/norm_apply" -I"$PS_ROOT" 2>"$TMP/err"
check "norm_apply builds against the library" $? "$TMP/err"

# The binding, pinned by package-lock.json (tests/conformance/ensure.sh),
# when missing and npm is there.
CONF="$PS_ROOT/tests/conformance"
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    sh "$CONF/ensure.sh" || true
fi

if ! command -v node >/dev/null 2>&1; then
    skip "normalizers against the binding" "node is not installed"
elif [ ! -f "$PS_ROOT/tests/conformance/node_modules/tokenizers/package.json" ]; then
    skip "normalizers against the binding" "tokenizers@0.23.2 is not installed (npm ci failed)"
else
    # relay a TAP stream from node, renumbered after ours
    relay() { # file
        while IFS= read -r line; do
            case $line in
            "ok "*"# SKIP "*) d=${line#ok [0-9]* - }; skip "${d%% # SKIP *}" "${d#* # SKIP }" ;;
            "ok "*) check "${line#ok [0-9]* - }" 0 ;;
            "not ok "*) check "${line#not ok [0-9]* - }" 1 ;;
            "#"*) echo "$line" ;;
            esac
        done <"$1"
    }
    (cd "$PS_ROOT/tests/conformance" && NORM_APPLY="$TMP/norm_apply" node normalizers.js) \
        >"$TMP/tap" 2>&1
    rc=$?
    relay "$TMP/tap"
    check "normalizers.js exits 0" "$rc" "$TMP/tap"
    # end to end, through `pairshard tokenize --tokenizer-json` (skips what
    # this build cannot load yet)
    (cd "$PS_ROOT/tests/conformance" && node normalizers_e2e.js) >"$TMP/e2e" 2>&1
    rc=$?
    relay "$TMP/e2e"
    check "normalizers_e2e.js exits 0" "$rc" "$TMP/e2e"
fi
done_testing
