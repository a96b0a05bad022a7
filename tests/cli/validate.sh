#!/bin/sh
# `pairshard validate` on shard sets: --baseline and --current take a set's
# directory (its stats.json) as well as a statistics file, with the same
# report either way.
. "$PS_ROOT/tests/tap.sh"

VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
DEV="$DATA/spider/dev.json"
B() { "$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --max-length 128 "$@"; }
V() { "$PAIRSHARD" validate "$@"; }

B -o "$TMP/dev" "$DEV"
check "build Spider dev" $?
cat >"$TMP/drop.rules" <<'JSON'
[{"name": "no-singers", "field": "question", "drop_if": "(?i)\\bsingers?\\b"}]
JSON
B --rules "$TMP/drop.rules" --no-gate -o "$TMP/nosinger" "$DEV" 2>/dev/null
check "build Spider dev without questions about singers (--no-gate)" $?

V --baseline "$TMP/dev" --current "$TMP/dev/" --json "$TMP/dirs.json" >"$TMP/out" 2>"$TMP/err"
check "validate --baseline DIR --current DIR/ (a set against itself): exit 0" $?
V --baseline "$TMP/dev/stats.json" --current "$TMP/dev/stats.json" --json "$TMP/files.json" >/dev/null
cmp -s "$TMP/dirs.json" "$TMP/files.json"
check "... the same report as with the sets' stats.json files" $?

V --baseline "$TMP/dev" --current "$TMP/nosinger" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "FAIL" "$TMP/out" && grep -q "'singer'" "$TMP/out"
check "validate DIR DIR: the set without questions about singers fails, naming the label singer" $?
V --baseline "$TMP/dev/stats.json" --current "$TMP/nosinger" --point tokenized >/dev/null 2>&1
[ $? -eq 1 ]
check "a file against a directory, --point tokenized: exit 1" $?

mkdir "$TMP/notaset"
V --baseline "$TMP/notaset" --current "$TMP/dev" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "notaset is a directory without stats.json" "$TMP/err"
check "a directory without stats.json: exit 2, saying so" $?

done_testing
