#!/bin/sh
# Makes tests/conformance/node_modules hold the versions package-lock.json
# pins (tokenizers, the reference; tiktoken, the benchmarks' second peer),
# running `npm ci` when one is missing or another version. npm's output goes
# to stderr; exits 0 when the pinned versions are there afterwards.
# Tests that run side by side call this at the same time, and `npm ci`
# starts by deleting node_modules: the check and the install happen under
# one lock, so one test installs, the others wait and then find it done,
# and nothing is pulled from under a test that already uses the binding.
set -u
cd "$(dirname "$0")" || exit 1
command -v node >/dev/null 2>&1 || { echo "ensure.sh: node is not installed" >&2; exit 1; }
pinned() { # package: 0 when node_modules holds the version the lock pins
    want=$(node -p "require('./package-lock.json').packages['node_modules/$1'].version")
    have=$(node -p "try { require('./node_modules/$1/package.json').version } catch (e) { '' }")
    [ "$have" = "$want" ]
}
install() {
    if ! pinned tokenizers || ! pinned tiktoken; then
        npm ci --silent --no-audit --no-fund --prefer-offline >&2
    fi
}
if command -v flock >/dev/null 2>&1; then
    (flock 9 && install) 9>>"${TMPDIR:-/tmp}/pairshard-npm.lock"
else
    install
fi
pinned tokenizers && pinned tiktoken
