#!/bin/sh
# Conformance of `pairshard tokenize` with HuggingFace tokenizers (node
# binding, pinned in package-lock.json). Installs the binding with `npm ci`
# when it is missing or not the pinned version, then runs conformance.js
# and pretokenizers.js, which print TAP and exit non-zero on any mismatch.
# env: PAIRSHARD (the binary), PS_ROOT (repository root).
set -eu
: "${PAIRSHARD:?PAIRSHARD must point at the pairshard binary}"
: "${PS_ROOT:?PS_ROOT must point at the repository root}"
DIR="$PS_ROOT/tests/conformance"
cd "$DIR"
want=$(node -p 'require("./package-lock.json").packages["node_modules/tokenizers"].version')
have=$(node -p 'try { require("./node_modules/tokenizers/package.json").version } catch (e) { "" }')
if [ "$have" != "$want" ]; then
    npm ci --silent --no-audit --no-fund --prefer-offline >&2
fi
# conformance.js: the BERT path; pretokenizers.js: the pre-tokenizers of
# any tokenizer.json (needs PS_BUILD, which tests/run.sh exports).
export TOKENIZERS_PARALLELISM=${TOKENIZERS_PARALLELISM:-true}
rc=0
node conformance.js || rc=1
node pretokenizers.js || rc=1
exit $rc
