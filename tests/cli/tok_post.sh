#!/bin/sh
# Added tokens, post-processors and decoders of tokenizer.json against
# HuggingFace tokenizers (the node binding): tests/conformance/post.js
# drives the components through tests/tools/hf_post_tool. TAP.
set -u
. "$PS_ROOT/tests/tools/build_tool.sh"
DIR="$PS_ROOT/tests/conformance"
# The pinned binding (tests/conformance/ensure.sh).
if command -v node >/dev/null 2>&1; then
    sh "$DIR/ensure.sh" || true
fi
if ! command -v node >/dev/null 2>&1 || [ ! -d "$DIR/node_modules/tokenizers" ]; then
    echo "ok 1 - tok_post # SKIP node or the tokenizers binding is missing (tests/conformance/run.sh installs it)"
    exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! build_tool hf_post_tool "$PS_BUILD" "$TMP/hf_post_tool" -I"$PS_ROOT" -D_DEFAULT_SOURCE; then
    echo "not ok 1 - hf_post_tool builds"
    exit 1
fi
cd "$DIR" || exit 1
node post.js "$TMP/hf_post_tool"
rc=$?
# End to end through `pairshard tokenize --tokenizer-json` (a second TAP run)
node post_e2e.js "$PAIRSHARD" "$PS_ROOT" || rc=1
exit $rc
