#!/bin/sh
# The [UNK] shares docs/REPORT.md's calibration table gives, one line per
# set, vocabulary and casing: "[UNK] tokens / tokens" and "records with an
# [UNK] / records". usage: PAIRSHARD=build/bin/pairshard sh measure.sh
set -e
D=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 "$D/cspider/make_cspider_like.py" "$D/spider/dev.json" "$T/cspider.json"
# bert-base-chinese as published; the mirror copy is HTML-escaped with CRLF
cp "$D/vocab/bert-base-chinese.vocab.txt" "$T/zh.txt"
UNC="$D/vocab/bert-base-uncased.vocab.txt"
SP="$D/spider/dev.json $D/spider/train.json"
row() { # name vocab casing inputs...
    name=$1 vocab=$2 casing=$3
    shift 3
    "$PAIRSHARD" build -q --no-gate --vocab "$vocab" $casing -o "$T/out" "$@" 2>/dev/null
    python3 - "$T/out/stats.json" "$name" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["points"]["tokenized"]["health"]
print("| %s | %.3f%% | %.2f%% |" % (sys.argv[2], 100 * h["unk_token_rate"], 100 * h["unk_record_rate"]))
PY
    rm -rf "$T/out"
}
row "Spider dev+train, bert-base-uncased, lowercase" "$UNC" --lowercase $SP
row "CSpider-like, bert-base-chinese, lowercase" "$T/zh.txt" --lowercase "$T/cspider.json"
row "CSpider-like, bert-base-chinese, --no-lowercase" "$T/zh.txt" --no-lowercase "$T/cspider.json"
row "CSpider-like, bert-base-uncased, lowercase" "$UNC" --lowercase "$T/cspider.json"
row "Spider dev+train, damaged bert-base-chinese (HTML-escaped, CRLF), lowercase" "$D/vocab/bert-base-chinese.mirror-escaped.vocab.txt" --lowercase $SP
row "CSpider-like, damaged bert-base-chinese, lowercase" "$D/vocab/bert-base-chinese.mirror-escaped.vocab.txt" --lowercase "$T/cspider.json"
