#!/bin/sh
# The Unigram model and the Precompiled (SentencePiece charsmap) normalizer
# against HuggingFace tokenizers (the node binding pinned in
# tests/conformance/package-lock.json), each component on its own through
# the test driver tests/tools/unigram_drive.c: tests/conformance/unigram_model.js
# prints the TAP lines. Skipped (not passed) without node.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/build_tool.sh"

if ! command -v node >/dev/null 2>&1; then
    echo "ok 1 - unigram conformance # SKIP node is not installed"
    echo "1..1"
    exit 0
fi
CONF="$PS_ROOT/tests/conformance"
sh "$CONF/ensure.sh"
build_tool unigram_drive "$PS_BUILD" "$TMP/unigram_drive" -I"$PS_ROOT" || {
    echo "not ok 1 - building tests/tools/unigram_drive.c"
    echo "1..1"
    exit 1
}
node "$CONF/unigram_model.js" "$TMP/unigram_drive"
exit $?
