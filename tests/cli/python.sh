#!/bin/sh
# The Python/PyTorch binding (python/pairshard, ctypes over libpairshard):
# tests/python/test_loader.py checks every delivered record against an
# independent decode of the shards (python3-lmdb, python3-zstandard), zero
# copies, slot lifetimes, coverage across ranks, resumption and errors;
# tests/python/train_tiny.py trains a tiny classifier with python3-torch,
# checkpoints it mid-epoch and resumes it in a fresh process to the same
# batches and bit-identical weights; tests/python/test_mix.py reads a
# weighted mixture (per-source counts, 2 ranks, 3 epochs, resumption);
# tests/python/test_reader_lib.py checks that a Loader loads
# libpairshard-reader alone and reads a set on a host without libcudart.
# All print TAP, renumbered here.
. "$(dirname "$0")/../tap.sh"

PY=/usr/bin/python3
PKGS="python3-numpy python3-lmdb python3-zstandard python3-torch"
have() { [ -x "$PY" ] && "$PY" -c "import $1" 2>/dev/null; }
if ! have numpy || ! have lmdb || ! have zstandard || ! have torch; then
    # shellcheck disable=SC2086
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" $PKGS
fi
if ! have numpy || ! have lmdb || ! have zstandard; then
    echo "ok 1 # SKIP python3-numpy, python3-lmdb or python3-zstandard is not installed and apt-get could not install it"
    echo "1..1"
    exit 0
fi

export TMPDIR="$TMP"
run_py "$PS_ROOT/tests/python/test_loader.py"
run_py "$PS_ROOT/tests/python/test_mix.py"
run_py "$PS_ROOT/tests/python/test_reader_lib.py"
if have torch; then
    run_py "$PS_ROOT/tests/python/train_tiny.py"
else
    n=$((n + 1)); echo "ok $n # SKIP python3-torch is not installed: the training resumption test"
fi
done_testing
