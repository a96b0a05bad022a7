#!/bin/sh
# Writes tests/data/vocab/chinese-damaged-small.vocab.txt: the first 200
# lines of tests/data/vocab/bert-base-chinese.mirror-escaped.vocab.txt, the
# mirror copy of bert-base-chinese that has '<' '>' '&' HTML-escaped (&lt;
# &gt; &amp;) and CRLF line endings. Small enough to read in a test; damaged the same way.
# If a clean copy (LF, no entities) is given as $1, the damage is applied
# to it instead, so the result does not depend on which copy tests/data has.
#   sh tests/tools/make-damaged-vocab.sh [CLEAN_VOCAB]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
dst="$ROOT/tests/data/vocab/chinese-damaged-small.vocab.txt"
if [ $# -ge 1 ]; then
    head -n 200 "$1" |
        sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/$/\r/' >"$dst"
else
    head -n 200 "$ROOT/tests/data/vocab/bert-base-chinese.mirror-escaped.vocab.txt" >"$dst"
fi
