#!/bin/sh
# The generator layouts (issue 16) through the Python binding:
# tests/python/test_layouts.py builds causal and seq2seq sets from Spider dev
# and checks every packed and unpacked batch, the ids against HuggingFace
# tokenizers (tests/conformance/layout_ids.js, when node and the pinned
# binding are there), no cross-contamination through a tiny float64
# transformer, coverage over 1-3 ranks, and a tiny causal LM and a tiny T5
# resumed mid-epoch bit-identically. Its TAP, renumbered here.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
CONF="$PS_ROOT/tests/conformance"
have() { [ -x "$PY" ] && "$PY" -c "import $1" 2>/dev/null; }
if ! have numpy || ! have torch; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-numpy python3-torch
fi
if ! have numpy || ! have torch; then
    echo "ok 1 # SKIP python3-numpy or python3-torch is not installed and apt-get could not install it"
    echo "1..1"
    exit 0
fi
# The pinned HF binding (tests/conformance/ensure.sh).
if command -v node >/dev/null 2>&1; then
    sh "$CONF/ensure.sh" || true
fi

export TMPDIR="$TMP"
run_py "$PS_ROOT/tests/python/test_layouts.py"
done_testing
