#!/bin/sh
# Conformance of `pairshard tokenize` with HuggingFace tokenizers (node
# binding, pinned in package-lock.json with tiktoken for the benchmarks).
# Installs them with `npm ci` when one is missing or not the pinned
# version, then runs conformance.js (vocab.txt WordPiece against
# BertTokenizerFast) and tokenizer_json.js (every tokenizer.json in
# tests/data/tokenizers) and pretokenizers.js (the pre-tokenizers alone,
# through PS_BUILD's tools), or only the scripts named as arguments. Each
# prints TAP; the exit status is non-zero when any of them fails.
# env: PAIRSHARD (the binary), PS_ROOT (repository root).
set -eu
: "${PAIRSHARD:?PAIRSHARD must point at the pairshard binary}"
: "${PS_ROOT:?PS_ROOT must point at the repository root}"
DIR="$PS_ROOT/tests/conformance"
cd "$DIR"
sh ./ensure.sh
[ $# -gt 0 ] || set -- conformance.js tokenizer_json.js pretokenizers.js
export TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM:-true}"
rc=0
for script in "$@"; do
    node "$script" || rc=1
done
exit $rc
