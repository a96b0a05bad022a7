#!/bin/sh
# End to end with tokenizers beyond BERT's WordPiece: a shard set built with
# a byte-level BPE (GPT-2), a Unigram (T5-small) and a 152,000-token
# WordLevel tokenizer.json (written here, ids above 65,535: 32-bit ids in the
# blocks). Each set verifies; its manifest names the model, vocabulary size,
# id width and special ids; `inspect --show` decodes GPT-2's records back to
# exactly question + sql (byte-level BPE is lossless); and every record read
# back through the Python binding has the ids `pairshard tokenize` gives.
. "$PS_ROOT/tests/tap.sh"
TOKS="$DATA/tokenizers"
SPIDER="$DATA/spider/dev.json"
PY=/usr/bin/python3 # Debian's, with the binding's peers (as tests/cli/python.sh)
if ! "$PY" -c "import numpy, lmdb, zstandard" 2>/dev/null; then
    sh "$PS_ROOT/scripts/apt-install.sh" "$TMP/apt.log" python3-numpy python3-lmdb python3-zstandard
fi

# The records as a build keeps them: cleaned (whitespace runs collapsed...).
"$PAIRSHARD" clean -q -o "$TMP/in.jsonl" "$SPIDER" 2>"$TMP/err"
check "clean Spider dev" $? "$TMP/err"

# ---- GPT-2: byte-level BPE, no pad, eos <|endoftext|> ----------------------
"$PAIRSHARD" build -q --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 256 \
    -o "$TMP/gpt2" "$SPIDER" 2>"$TMP/err"
check "build Spider dev with GPT-2's tokenizer.json" $? "$TMP/err"
python3 - "$TMP/gpt2/manifest.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["tokenizer"]
ok = (t["model"] == "BPE" and t["vocab_size"] == 50257 and t["id_width"] == 2
      and t["special_ids"] == {"bos": None, "eos": 50256, "pad": None, "unk": None}
      and t["source"] == "tokenizer.json" and len(t["vocab_sha256"]) == 64)
print("manifest tokenizer:", t, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
check "GPT-2 manifest: BPE, 50257 ids, 16-bit, eos 50256, no bos/pad/unk" $?

"$PAIRSHARD" inspect --show 50 --tokenizer-json "$TOKS/gpt2.tokenizer.json" "$TMP/gpt2" \
    >"$TMP/show" 2>"$TMP/err"
check "inspect --show 50 with GPT-2 exits 0" $? "$TMP/err"
python3 - "$TMP/show" "$TMP/in.jsonl" <<'PY'
import json, sys
src = {r["id"]: r for r in map(json.loads, open(sys.argv[2]))}
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r["id"] for r in rows if r["length"] < 256 and
       r["text"] != src[r["id"]]["question"] + src[r["id"]]["sql"]]
print("records shown:", len(rows), "not round-tripped:", bad[:5], file=sys.stderr)
sys.exit(0 if len(rows) == 50 and not bad else 1)
PY
check "inspect --show decodes GPT-2 ids back to question + sql, byte for byte" $?

"$PAIRSHARD" inspect --show 1 --tokenizer-json "$TOKS/t5-small.tokenizer.json" "$TMP/gpt2" \
    >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "not the tokenizer this set was built with" "$TMP/err"
check "inspect --show refuses a tokenizer other than the set's" $? "$TMP/err"

# ---- T5-small: Unigram + Precompiled charsmap -------------------------------
"$PAIRSHARD" build -q --tokenizer-json "$TOKS/t5-small.tokenizer.json" --max-length 128 \
    -o "$TMP/t5" "$SPIDER" 2>"$TMP/err" && "$PAIRSHARD" inspect --verify "$TMP/t5" >/dev/null 2>>"$TMP/err"
check "build and verify Spider dev with T5-small's tokenizer.json" $? "$TMP/err"
python3 - "$TMP/t5/manifest.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["tokenizer"]
ok = (t["model"] == "Unigram" and t["id_width"] == 2 and t["special_ids"]["eos"] == 1
      and t["special_ids"]["pad"] == 0 and t["special_ids"]["unk"] == 2)
print("manifest tokenizer:", t, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
check "T5 manifest: Unigram, eos 1, pad 0, unk 2" $?

# ---- 152k WordLevel: 32-bit ids ---------------------------------------------
python3 - "$SPIDER" "$TMP/wide.json" <<'PY'
import json, re, sys
words = set()
for r in json.load(open(sys.argv[1])):
    for t in (r["question"], r["query"]):
        words.update(re.findall(r"\w+|[^\w\s]+", t))
vocab = {"[UNK]": 0, "[PAD]": 1}
n = 2
while n < 152000 - len(words):       # filler below, real words above 65,535
    vocab["filler%06d" % n] = n
    n += 1
for w in sorted(words):
    if w not in vocab:
        vocab[w] = n
        n += 1
tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [
        {"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True},
        {"id": 1, "content": "[PAD]", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}],
       "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
       "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}}
json.dump(tok, open(sys.argv[2], "w"))
PY
"$PAIRSHARD" build -q --tokenizer-json "$TMP/wide.json" -o "$TMP/wide" "$SPIDER" 2>"$TMP/err" &&
    "$PAIRSHARD" inspect --verify "$TMP/wide" >/dev/null 2>>"$TMP/err"
check "build and verify with a 152,000-token WordLevel tokenizer" $? "$TMP/err"
python3 -c "
import json, sys
t = json.load(open('$TMP/wide/manifest.json'))['tokenizer']
sys.exit(0 if t['id_width'] == 4 and t['vocab_size'] == 152000 and t['model'] == 'WordLevel'
         and t['special_ids']['pad'] == 1 else 1)"
check "its manifest says 32-bit ids, 152000 ids, WordLevel, pad 1" $?

"$PAIRSHARD" tokenize --tokenizer-json "$TMP/wide.json" -o "$TMP/want.jsonl" "$TMP/in.jsonl" 2>"$TMP/err"
check "tokenize the same records with it" $? "$TMP/err"

# A sanitizer build's library needs its runtimes preloaded into python3 (as
# tests/cli/python.sh does).
PRELOAD=$(sanitizer_preload "$PS_BUILD/lib/libpairshard.so")
if "$PY" -c "import numpy, lmdb, zstandard" 2>/dev/null; then
    LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" PYTHONPATH="$PS_ROOT/python" "$PY" - \
        "$TMP/wide" "$TMP/want.jsonl" <<'PY' 2>"$TMP/err"
import json, sys
import numpy as np
from pairshard import Loader
want = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    want[r["id"]] = r["input_ids"]
seen = 0
wide = 0
for b in Loader(sys.argv[1], batch_size=64, shuffle=False, as_torch=False, copy=True):
    ids = np.asarray(b["input_ids"])
    for i, rid in enumerate(b["ids"]):
        n = int(b["lengths"][i])
        got = [int(x) for x in ids[i, :n]]
        if got != want[rid]:
            print("mismatch", rid, got[:10], want[rid][:10], file=sys.stderr)
            sys.exit(1)
        wide += sum(1 for x in got if x > 65535)
        seen += 1
print("records", seen, "ids above 65535", wide, file=sys.stderr)
sys.exit(0 if seen == len(want) and wide > 0 else 1)
PY
    check "Python reads every record back with its 32-bit ids" $? "$TMP/err"
else
    skip "Python reads every record back with its 32-bit ids" "python3-numpy/lmdb/zstandard missing"
fi
done_testing
