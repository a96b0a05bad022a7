#!/bin/sh
# pairshard.Preprocessor shared by threads (tests/python/
# test_preprocess_threads.py): a ThreadPoolExecutor's threads, threads that
# live for a few calls, and close() while threads encode, on one
# Preprocessor of a picard BERT set, a causal Llama-3-style set and a
# seq2seq T5 set; every result as the serial call's. Its TAP, renumbered
# here.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
have() { [ -x "$PY" ] && "$PY" -c "import $1" 2>/dev/null; }
if ! have numpy; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-numpy
fi
if ! have numpy; then
    echo "ok 1 # SKIP python3-numpy is not installed and apt-get could not install it"
    echo "1..1"
    exit 0
fi

export TMPDIR="$TMP"
run_py "$PS_ROOT/tests/python/test_preprocess_threads.py"
done_testing
