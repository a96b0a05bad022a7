#!/bin/sh
# The tokenizer.json models (BPE, WordLevel, WordPiece) id for id against
# HuggingFace tokenizers 0.23.2: tests/conformance/bpe_model.js, through the
# test_tok_bpe driver. Skips (never passes) without node or the binding.
set -u
: "${PS_ROOT:?}" "${PS_BUILD:?}"
DIR="$PS_ROOT/tests/conformance"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$DIR/node_modules/tokenizers" ]; then
    echo "ok 1 - tokenizer.json models against HF # SKIP node or the tokenizers binding is missing (tests/conformance/run.sh installs it)"
    exit 0
fi
cd "$DIR" && exec node bpe_model.js "$PS_BUILD/tests/test_tok_bpe"
