# Sourced (after tests/tap.sh) by the TAP scripts that build causal and
# seq2seq sets and read them back with tests/tools/layout_set.py: the
# Spider dev paths, Debian's python3 with python3-lmdb and
# python3-zstandard (installed when missing; without them the script skips
# and exits), the pinned HF binding (tests/conformance/ensure.sh) and
# have_node, whether it is there.
SPIDER="$DATA/spider/dev.json"
TABLES="$DATA/spider/tables.json"
TOKS="$DATA/tokenizers"
CONF="$PS_ROOT/tests/conformance"
PY=/usr/bin/python3 # Debian's, with python3-lmdb and python3-zstandard
CHECK="$PS_ROOT/tests/tools/layout_set.py"
if ! "$PY" -c "import lmdb, zstandard" 2>/dev/null; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-lmdb python3-zstandard
fi
if ! "$PY" -c "import lmdb, zstandard" 2>/dev/null; then
    skip "causal and seq2seq sets read back" "python3-lmdb or python3-zstandard is missing"
    done_testing
    exit
fi
if command -v node >/dev/null 2>&1; then
    sh "$CONF/ensure.sh" || true
fi
have_node() { command -v node >/dev/null 2>&1 && [ -d "$CONF/node_modules/tokenizers" ]; }
