#!/bin/sh
# `pairshard build --layout causal|seq2seq` on Spider dev (with its tables.json
# under --template ddl, a chat template file, and with no template), read
# back by tests/tools/layout_set.py with python3-lmdb and python3-zstandard
# alone: format versions, the lengths database against every block, the
# boundary, the prefix, the limits, too_long rejections accounted for. The
# ids are checked against HuggingFace tokenizers (the node binding) encoding
# the prompt and completion `pairshard clean` renders: a causal record is
# the whole text prompt + completion encoded once, plus the tokenizer's EOS
# (each call below names the EOS id its tokenizer.json gives that token).
# Then inspect --verify (and a damaged lengths entry), merge, --config and
# usage errors. TAP.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/layout_env.sh"
B() { "$PAIRSHARD" build -q --label-field db_id "$@"; }
# The ids a tokenizer.json's post-processor puts before $A, read from the
# file itself (TemplateProcessing "single", Roberta/Bert "cls", Sequence).
prefix_of() {
    "$PY" - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
def pre(p):
    if not p:
        return []
    if p.get("type") == "Sequence":
        return [i for q in p["processors"] for i in pre(q)]
    if "cls" in p:
        return [p["cls"][1]]
    out = []
    for piece in p.get("single", []):
        if "Sequence" in piece:
            break
        out += p["special_tokens"][piece["SpecialToken"]["id"]]["ids"]
    return out
print(",".join(map(str, pre(t.get("post_processor")))))
PY
}
conform() { # layout tokenizer cleaned ids what [eos]
    if have_node; then
        (cd "$CONF" && node layout_ids.js "$1" "$2" "$3" "$4" ${6:-}) 2>"$TMP/err"
        check "$5" $? "$TMP/err"
    else
        skip "$5" "node or the tokenizers binding is missing"
    fi
}

"$PAIRSHARD" clean -q --schema "$TABLES" --template ddl -o "$TMP/ddl.jsonl" "$SPIDER" 2>"$TMP/err"
check "clean Spider dev --template ddl (the texts the reference encodes)" $? "$TMP/err"
"$PAIRSHARD" clean -q -o "$TMP/plain.jsonl" "$SPIDER" 2>"$TMP/err"
check "clean Spider dev without a template" $? "$TMP/err"

# ---- causal, GPT-2 (no prefix), ddl, no limit: ids = HF's ------------------
B --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 0 -o "$TMP/gpt2" "$SPIDER" 2>"$TMP/err"
check "build --layout causal, GPT-2, Spider dev --template ddl" $? "$TMP/err"
"$PY" "$CHECK" check "$TMP/gpt2" --layout causal --max-length 1000000 --dump "$TMP/gpt2.ids" 2>"$TMP/err"
check "causal GPT-2: version 2 manifest and shards, lengths db = blocks, boundaries, accounting" $? "$TMP/err"
[ "$(wc -l <"$TMP/gpt2.ids")" -ge 1000 ]
check "causal GPT-2: 1000+ records read back" $?
conform causal "$TOKS/gpt2.tokenizer.json" "$TMP/ddl.jsonl" "$TMP/gpt2.ids" \
    "causal GPT-2: every record = encode(prompt + completion) + <|endoftext|> (50256), boundary = prompt tokens" 50256
B --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 0 --threads 1 -o "$TMP/gpt2t1" "$SPIDER" 2>"$TMP/err" &&
    B --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --schema "$TABLES" \
        --template ddl --max-length 0 --threads 3 -o "$TMP/gpt2t3" "$SPIDER" 2>>"$TMP/err" &&
    same_set "$TMP/gpt2t1" "$TMP/gpt2t3"
check "causal sets are byte-identical at 1 and 3 threads" $? "$TMP/err"
"$PAIRSHARD" inspect --verify "$TMP/gpt2" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "format version 2, layout causal" "$TMP/out"
check "inspect --verify passes and prints 'format version 2, layout causal'" $? "$TMP/err"

# ---- causal, Llama-3-style (BOS prefix), ddl, --max-length 256 -----------
P=$(prefix_of "$TOKS/llama3-style.tokenizer.json")
B --layout causal --tokenizer-json "$TOKS/llama3-style.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 256 --no-gate -o "$TMP/llama3" "$SPIDER" 2>"$TMP/err"
check "build --layout causal, Llama-3-style, --max-length 256 (schemas shortened, else too_long)" $? "$TMP/err"
[ -n "$P" ] && "$PY" "$CHECK" check "$TMP/llama3" --layout causal --max-length 256 --prefix "$P" \
    --expect-too-long 2>"$TMP/err"
check "causal Llama-3-style: every record starts with BOS ($P), fits 256, too_long counted and listed" $? "$TMP/err"
"$PY" - "$TMP/llama3/report.json" "$TMP/llama3/stats.json" <<'PY' 2>"$TMP/err"
import json, sys
r = json.load(open(sys.argv[1]))["prompt_completion"]
s = json.load(open(sys.argv[2]))["prompt_completion"]
a = r["all"]
ok = (a["records"] > 0 and a["prompt"]["max"] + a["completion"]["min"] <= 256
      and a["prompt"]["min"] <= a["prompt"]["p50"] <= a["prompt"]["p95"] <= a["prompt"]["max"]
      and a["completion"]["min"] >= 1 and len(r["labels"]) > 10
      and sum(l["records"] for l in r["labels"]) == a["records"] and "hist" in s["all"]["prompt"])
print(a, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
check "report.json and stats.json hold prompt and completion lengths per label" $? "$TMP/err"
grep -q "Prompt and completion lengths" "$TMP/llama3/report.html"
check "report.html shows them" $?
B --layout causal --tokenizer-json "$TOKS/llama3-style.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 0 -o "$TMP/llama3all" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/llama3all" --layout causal --max-length 1000000 --prefix "$P" \
        --dump "$TMP/llama3.ids" 2>>"$TMP/err"
check "causal Llama-3-style without a limit" $? "$TMP/err"
conform causal "$TOKS/llama3-style.tokenizer.json" "$TMP/ddl.jsonl" "$TMP/llama3.ids" \
    "causal Llama-3-style: BOS + prompt + completion + <|end_of_text|> (8257) = HF's, id for id" 8257

# ---- causal, RoBERTa (prefix <s>, its </s> not added), no template ----------
B --layout causal --tokenizer-json "$TOKS/roberta-base.tokenizer.json" --max-length 48 \
    --no-gate -o "$TMP/roberta" "$SPIDER" 2>"$TMP/err"
check "build --layout causal, RoBERTa, no template, --max-length 48" $? "$TMP/err"
"$PY" "$CHECK" check "$TMP/roberta" --layout causal --max-length 48 --prefix 0 --expect-too-long \
    --dump "$TMP/roberta.ids" 2>"$TMP/err"
check "causal RoBERTa: records start with <s> (0), fit 48, the longer ones too_long" $? "$TMP/err"
"$PY" - "$TMP/roberta.ids" <<'PY' 2>"$TMP/err"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
# </s> (2), RoBERTa's EOS, ends each completion and is nowhere else: the
# post-processor's own </s> after the prompt is not added
bad = [r["id"] for r in rows if r["input_ids"][-1] != 2 or 2 in r["input_ids"][:-1]
       or r["boundary"] >= len(r["input_ids"]) - 1]
print(len(rows), bad[:3], file=sys.stderr)
sys.exit(0 if rows and not bad else 1)
PY
check "causal RoBERTa: </s> only at the end (the EOS), every record has a completion" $? "$TMP/err"
conform causal "$TOKS/roberta-base.tokenizer.json" "$TMP/plain.jsonl" "$TMP/roberta.ids" \
    "causal RoBERTa, question and SQL: <s> + encode(question + sql) + </s> = HF's" 2

# ---- causal, Qwen2-style chat template: the completion ends with <|im_end|> --
cat >"$TMP/chat.json" <<'J'
{"prompt": "<|im_start|>user\n{schema:ddl}\n{question}<|im_end|>\n<|im_start|>assistant\n",
 "completion": "{sql}<|im_end|>"}
J
B --layout causal --tokenizer-json "$TOKS/qwen2-style.tokenizer.json" --schema "$TABLES" \
    --template "$TMP/chat.json" --max-length 0 -o "$TMP/qwen" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/qwen" --layout causal --max-length 1000000 --dump "$TMP/qwen.ids" 2>>"$TMP/err"
check "build --layout causal, Qwen2-style with a chat template file" $? "$TMP/err"
"$PY" - "$TMP/qwen.ids" <<'PY' 2>"$TMP/err"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
# <|im_start|> 8257 opens the prompt; <|im_end|> 8258 ends the completion, whose
# first id is after "assistant\n"; the prompt holds two <|im_end|>-less turns' ids
bad = [r["id"] for r in rows if r["input_ids"][0] != 8257 or r["input_ids"][-1] != 8258
       or r["input_ids"][r["boundary"] - 1] == 8258 or r["input_ids"].count(8258) != 2]
print(len(rows), bad[:3], file=sys.stderr)
sys.exit(0 if rows and not bad else 1)
PY
check "causal Qwen2-style: the completion's last id is <|im_end|>, from the template's text" $? "$TMP/err"
"$PAIRSHARD" clean -q --schema "$TABLES" --template "$TMP/chat.json" -o "$TMP/chat.jsonl" "$SPIDER" 2>"$TMP/err"
conform causal "$TOKS/qwen2-style.tokenizer.json" "$TMP/chat.jsonl" "$TMP/qwen.ids" \
    "causal Qwen2-style: chat prompt + completion = HF's, id for id, no EOS after <|im_end|>" 8256

# ---- seq2seq, T5-small ------------------------------------------------------
B --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 0 --no-gate -o "$TMP/t5" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/t5" --layout seq2seq --max-length 1000000 --dump "$TMP/t5.ids" 2>>"$TMP/err"
check "build --layout seq2seq, T5-small, --template ddl: versions, lengths db, boundaries" $? "$TMP/err"
"$PY" - "$TMP/t5.ids" <<'PY' 2>"$TMP/err"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r["id"] for r in rows if r["input_ids"][r["boundary"] - 1] != 1 or r["input_ids"][-1] != 1]
sys.exit(0 if rows and not bad else 1)
PY
check "seq2seq T5: source and target each end with </s>" $? "$TMP/err"
conform seq2seq "$TOKS/t5-small.tokenizer.json" "$TMP/ddl.jsonl" "$TMP/t5.ids" \
    "seq2seq T5: source = encode(prompt), target = encode(completion), with special tokens, = HF's"
B --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" --schema "$TABLES" \
    --template ddl --max-length 200 --no-gate -o "$TMP/t5fit" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/t5fit" --layout seq2seq --max-length 200 2>>"$TMP/err" &&
    "$PY" -c "
import json, sys
s = json.load(open(sys.argv[1]))['sql']['shortening']
sys.exit(0 if s['records'] > 100 and s['tables_dropped'] > 0 else 1)" "$TMP/t5fit/report.json" 2>>"$TMP/err"
check "seq2seq --template ddl --max-length 200: sources' schemas selected to fit (an empty schema fits)" $? "$TMP/err"
B --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" --max-length 24 \
    --max-target-length 40 --no-gate -o "$TMP/t5short" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/t5short" --layout seq2seq --max-length 24 --max-target 40 \
        --expect-too-long 2>>"$TMP/err"
check "seq2seq, no template, --max-length 24 --max-target-length 40: both caps hold, too_long counted" $? "$TMP/err"
grep -q "over --max-target-length 40" "$TMP/t5short/rejects.jsonl" &&
    grep -q "the source is .* over --max-length 24" "$TMP/t5short/rejects.jsonl"
check "rejects.jsonl names which cap a record broke" $?
grep -q '"max_target_length": 40' "$TMP/t5short/manifest.json"
check "the manifest records max_target_length" $?

# ---- inspect --verify catches a damaged lengths entry -----------------------
cp -r "$TMP/gpt2" "$TMP/damaged"
"$PY" - "$TMP/damaged/shard-00000.mdb" <<'PY'
import lmdb
env = lmdb.open(__import__("sys").argv[1], subdir=False, lock=False, max_dbs=8)
db = env.open_db(b"lengths")
with env.begin(write=True) as t:
    c = t.cursor(db=db)
    c.first()
    k, v = c.item()
    v = bytearray(v)
    v[0] ^= 1
    t.put(k, bytes(v), db=db)
env.close()
PY
"$PAIRSHARD" inspect --verify "$TMP/damaged" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "lengths database says record 0" "$TMP/err"
check "inspect --verify: one damaged lengths value -> exit 1 naming the shard, block and record" $? "$TMP/err"

# ---- merge -------------------------------------------------------------------
for k in 0 1; do
    B --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 128 --part $k/2 \
        -o "$TMP/c$k" "$SPIDER" 2>"$TMP/err" || break
done
B --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 128 --part 1/2 -o "$TMP/p1" "$SPIDER" 2>>"$TMP/err"
check "build two causal parts and a pair part" $? "$TMP/err"
"$PAIRSHARD" merge -q -o "$TMP/merged" "$TMP/c0" "$TMP/c1" 2>"$TMP/err" &&
    "$PAIRSHARD" inspect --verify "$TMP/merged" >/dev/null 2>>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/merged" --layout causal --max-length 128 2>>"$TMP/err"
check "merge two causal parts: verified, lengths db carried, version 2" $? "$TMP/err"
B --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 128 -o "$TMP/whole" "$SPIDER" 2>"$TMP/err"
"$PY" - "$TMP/whole/stats.json" "$TMP/merged/stats.json" <<'PY' 2>>"$TMP/err"
import json, sys
a, b = (json.load(open(p))["prompt_completion"] for p in sys.argv[1:3])
sys.exit(0 if a == b and a["all"]["records"] > 0 else 1)
PY
check "the merged prompt and completion statistics equal the whole build's" $? "$TMP/err"
# explicit buckets and no labels: blocks copied as they are, their lengths with them
for k in 0 1; do
    "$PAIRSHARD" build -q --layout seq2seq --tokenizer-json "$TOKS/t5-small.tokenizer.json" --max-length 64 \
        --buckets 32,64,96,128 --part $k/2 --no-gate -o "$TMP/s$k" "$SPIDER" 2>"$TMP/err" || break
done &&
    "$PAIRSHARD" merge -q --no-gate -o "$TMP/smerged" "$TMP/s0" "$TMP/s1" 2>>"$TMP/err" &&
    "$PAIRSHARD" inspect --verify "$TMP/smerged" >/dev/null 2>>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/smerged" --layout seq2seq --max-length 64 --expect-too-long 2>>"$TMP/err"
check "merge two seq2seq parts with explicit buckets: verified, lengths db carried" $? "$TMP/err"
"$PAIRSHARD" merge -q -o "$TMP/mixed" "$TMP/c0" "$TMP/p1" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "is a causal set and .* a pair set" "$TMP/err" && [ ! -e "$TMP/mixed" ]
check "merge refuses a causal part with a pair part (exit 2, nothing written)" $? "$TMP/err"

# ---- pair sets are untouched; config file; usage ------------------------------
B --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 128 -o "$TMP/pair" "$SPIDER" 2>"$TMP/err"
"$PY" - "$TMP/pair" <<'PY' 2>>"$TMP/err"
import json, lmdb, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
env = lmdb.open(sys.argv[1] + "/shard-00000.mdb", subdir=False, readonly=True, lock=False, max_dbs=8)
with env.begin() as t:
    names = [k for k, _ in t.cursor()]
sys.exit(0 if m["format_version"] == 1 and "layout" not in m and names == [b"blocks", b"meta"] else 1)
PY
check "a pair set stays version 1: no layout member, no lengths database" $? "$TMP/err"
cat >"$TMP/cfg.json" <<J
{"layout": "seq2seq", "max_target_length": 40, "max_length": 24, "label_field": "db_id",
 "tokenizer_json": "$TOKS/t5-small.tokenizer.json", "inputs": ["$SPIDER"], "no_gate": true}
J
"$PAIRSHARD" build -q --config "$TMP/cfg.json" -o "$TMP/fromcfg" 2>"$TMP/err" &&
    same_set "$TMP/fromcfg" "$TMP/t5short"
check "--config keys layout and max_target_length build the same set as the flags" $? "$TMP/err"
"$PAIRSHARD" build -q --layout causal --max-target-length 10 --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    -o "$TMP/u1" "$SPIDER" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "max-target-length is for --layout seq2seq" "$TMP/err"
check "--max-target-length without --layout seq2seq: exit 2" $? "$TMP/err"
"$PAIRSHARD" build -q --layout decoder --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    -o "$TMP/u2" "$SPIDER" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "pair, causal or seq2seq" "$TMP/err"
check "--layout decoder: exit 2 naming the layouts" $? "$TMP/err"
"$PAIRSHARD" build -q --layout causal --template question --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    -o "$TMP/u3" "$SPIDER" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "needs a completion, and the template question has none" "$TMP/err"
check "--layout causal --template question (no completion): exit 2" $? "$TMP/err"
"$PAIRSHARD" build --help | grep -q -- "--layout L"
check "build --help documents --layout" $?
done_testing
