#!/bin/sh
# What a causal set teaches about where a completion starts and ends
# (docs/BUILD.md, "Where a completion ends"), on Spider dev and its
# tables.json, read back by tests/tools/layout_set.py (python3-lmdb alone):
# - EOS: every record of every preset with a completion (pair, picard, ddl)
#   ends in the tokenizer's EOS, for GPT-2 (byte-level BPE), T5 (Unigram) and
#   a SentencePiece BPE (Llama-2-style), so every record's labels end in it;
#   --no-append-eos leaves it out and the manifest and inspect say which;
#   a tokenizer with no EOS is refused unless the template ends the
#   completion with a special token.
# - Boundaries: with ddl and picard, every record's ids are HuggingFace's
#   encoding (node tokenizers) of the whole text prompt + completion, for
#   byte-level BPE, SentencePiece BPE with and without byte fallback and a
#   Metaspace "first" pre-tokenizer; a prompt ending in a space before the
#   SQL is counted (junction_merges) and, where it changes what the ids
#   read as, fails the round-trip check naming the record and token.
# - Dialogues: with --turns and ddl every later turn shows the earlier
#   utterances; a template without {history} is warned about, counted.
# TAP.
. "$PS_ROOT/tests/tap.sh"
. "$PS_ROOT/tests/tools/layout_env.sh"
SPARC="$DATA/formats/sparc/dev.json"
B() { "$PAIRSHARD" build -q --layout causal --schema "$TABLES" --max-length 0 "$@"; }
# The EOS id as the tokenizer.json itself spells it: the added token named so.
eos_of() {
    "$PY" - "$1" "$2" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
print([a["id"] for a in t["added_tokens"] if a["content"] == sys.argv[2]][0])
PY
}
# Every record's last id is $2 and its labels (the ids after the boundary)
# hold it once, at their end; the completion is more than the EOS.
ends_in() {
    "$PY" - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
eos = int(sys.argv[2])
bad = [r["id"] for r in rows
       if r["input_ids"][-1] != eos or r["input_ids"][r["boundary"]:].count(eos) != 1
       or len(r["input_ids"]) - r["boundary"] < 2]
print(len(rows), "records,", len(bad), "without", eos, "at the end of their labels", bad[:3],
      file=sys.stderr)
sys.exit(0 if len(rows) == 1034 and not bad else 1)
PY
}

# ---- EOS: every preset, GPT-2, T5, SentencePiece BPE ------------------------
for spec in gpt2:'<|endoftext|>' t5-small:'</s>' llama2-style:'</s>'; do
    tok=${spec%%:*}
    eos=$(eos_of "$TOKS/$tok.tokenizer.json" "${spec#*:}")
    for t in pair picard ddl; do
        B --tokenizer-json "$TOKS/$tok.tokenizer.json" --template $t --no-gate \
            -o "$TMP/$tok-$t" "$SPIDER" 2>"$TMP/err" &&
            "$PY" "$CHECK" check "$TMP/$tok-$t" --layout causal --max-length 1000000 \
                --dump "$TMP/$tok-$t.ids" 2>>"$TMP/err" &&
            ends_in "$TMP/$tok-$t.ids" "$eos" 2>>"$TMP/err"
        check "causal $tok --template $t: all 1034 records' labels end in EOS ($eos)" $? "$TMP/err"
    done
done
"$PY" - "$TMP/gpt2-ddl/manifest.json" "$TMP/gpt2-ddl/report.json" <<'PY' 2>"$TMP/err"
import json, sys
m, r = (json.load(open(p)) for p in sys.argv[1:3])
e = r["prompt_completion"]["ends"]
print(m["config"].get("append_eos"), e, file=sys.stderr)
sys.exit(0 if m["config"]["append_eos"] is True and e["eos_appended"] == 1034
         and e["end_in_text"] == 0 and e["junction_merged"] == 0 else 1)
PY
check "the manifest's config records append_eos; report.json counts 1034 EOS appended" $? "$TMP/err"
grep -q "Completions ending in the tokenizer's EOS: <b>1,034</b>" "$TMP/gpt2-ddl/report.html"
check "report.html shows how the completions end" $?
"$PAIRSHARD" inspect "$TMP/gpt2-ddl" >"$TMP/out" 2>"$TMP/err" &&
    grep -q "completions end in EOS (id 50256)" "$TMP/out"
check "inspect: 'completions end in EOS (id 50256)'" $? "$TMP/out"
B --tokenizer-json "$TOKS/gpt2.tokenizer.json" --template ddl --no-append-eos \
    -o "$TMP/noeos" "$SPIDER" 2>"$TMP/err" &&
    "$PY" "$CHECK" check "$TMP/noeos" --layout causal --max-length 1000000 \
        --dump "$TMP/noeos.ids" 2>>"$TMP/err" &&
    "$PY" - "$TMP/noeos.ids" "$TMP/gpt2-ddl.ids" "$TMP/noeos/manifest.json" <<'PY' 2>>"$TMP/err"
import json, sys
a = {json.loads(l)["id"]: json.loads(l)["input_ids"] for l in open(sys.argv[1])}
b = {json.loads(l)["id"]: json.loads(l)["input_ids"] for l in open(sys.argv[2])}
m = json.load(open(sys.argv[3]))
sys.exit(0 if a and a.keys() == b.keys() and all(b[k] == a[k] + [50256] for k in a)
         and 50256 not in sum(a.values(), []) and m["config"]["append_eos"] is False else 1)
PY
check "--no-append-eos: the same ids without the EOS; config append_eos false" $? "$TMP/err"
"$PAIRSHARD" inspect --json "$TMP/noeos" | grep -q '"append_eos": false' &&
    "$PAIRSHARD" inspect "$TMP/noeos" | grep -q "no EOS appended"
check "inspect shows --no-append-eos (text and --json)" $?
cat >"$TMP/cfg.json" <<J
{"layout": "causal", "no_append_eos": true, "template": "ddl", "schema": "$TABLES",
 "max_length": 0, "tokenizer_json": "$TOKS/gpt2.tokenizer.json", "inputs": ["$SPIDER"]}
J
"$PAIRSHARD" build -q --config "$TMP/cfg.json" -o "$TMP/noeoscfg" 2>"$TMP/err" &&
    same_set "$TMP/noeoscfg" "$TMP/noeos"
check "config key no_append_eos builds the same set as the flag" $? "$TMP/err"
# A tokenizer with no EOS: WordLevel without its [SEP] and post-processor
"$PY" - "$TOKS/wordlevel-whitespace.tokenizer.json" "$TMP/noeos.tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"] = [a for a in t.get("added_tokens", []) if a["content"] not in
                     ("</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>", "[SEP]")]
t["post_processor"] = None
json.dump(t, open(sys.argv[2], "w"))
PY
"$PAIRSHARD" build -q --layout causal --tokenizer-json "$TMP/noeos.tokenizer.json" \
    -o "$TMP/u1" "$SPIDER" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "no EOS token" "$TMP/err" && grep -q -- "--no-append-eos" "$TMP/err" &&
    grep -q "end the template's completion" "$TMP/err" && [ ! -e "$TMP/u1" ]
check "a tokenizer with no EOS: exit 2 naming both ways out (an end token, --no-append-eos)" $? "$TMP/err"
"$PAIRSHARD" build -q --layout causal --no-append-eos --no-gate \
    --tokenizer-json "$TMP/noeos.tokenizer.json" -o "$TMP/u2" "$SPIDER" 2>"$TMP/err"
check "... and builds with --no-append-eos" $? "$TMP/err"

# ---- boundaries: ids = HF's encoding of the whole text ----------------------
"$PAIRSHARD" clean -q --schema "$TABLES" --template ddl -o "$TMP/ddl.jsonl" "$SPIDER" 2>"$TMP/err"
check "clean --template ddl (the texts the reference encodes)" $? "$TMP/err"
# in a causal set a preset's prompt ends in a newline: picard's gets one
"$PAIRSHARD" clean -q --schema "$TABLES" --template picard -o "$TMP/picard0.jsonl" "$SPIDER" &&
    "$PY" - "$TMP/picard0.jsonl" "$TMP/picard.jsonl" <<'PY'
import json, sys
with open(sys.argv[2], "w") as o:
    for l in open(sys.argv[1]):
        r = json.loads(l)
        r["prompt"] += "\n"
        o.write(json.dumps(r) + "\n")
PY
check "clean --template picard, the causal separator added" $?
for spec in gpt2:'<|endoftext|>' llama2-style:'</s>' llama2-style-nofallback:'</s>' \
    metaspace-first-split:'</s>'; do
    tok=${spec%%:*}
    eos=$(eos_of "$TOKS/$tok.tokenizer.json" "${spec#*:}")
    for t in ddl picard; do
        [ -f "$TMP/$tok-$t.ids" ] ||
            { B --tokenizer-json "$TOKS/$tok.tokenizer.json" --template $t --no-gate \
                -o "$TMP/$tok-$t" "$SPIDER" 2>"$TMP/err" &&
                "$PY" "$CHECK" check "$TMP/$tok-$t" --layout causal --max-length 1000000 \
                    --dump "$TMP/$tok-$t.ids" 2>>"$TMP/err"; } || {
            check "build causal $tok $t" 1 "$TMP/err"
            continue
        }
        if have_node; then
            (cd "$CONF" && node layout_ids.js causal "$TOKS/$tok.tokenizer.json" "$TMP/$t.jsonl" \
                "$TMP/$tok-$t.ids" "$eos") 2>"$TMP/err"
            check "causal $tok --template $t: every record = HF encode(prompt + completion) + EOS" \
                $? "$TMP/err"
        else
            skip "causal $tok --template $t against HF" "node or the tokenizers binding is missing"
        fi
    done
done
"$PY" - "$TMP/llama2-style-picard.ids" "$TOKS/llama2-style.tokenizer.json" <<'PY' 2>"$TMP/err"
import json, sys
# picard's completion starts "<db_id> | SELECT" right after the newline: no
# piece of it starts with ▁ (tokenized alone, "concert_singer" would)
rows = [json.loads(l) for l in open(sys.argv[1])]
inv = {v: k for k, v in json.load(open(sys.argv[2]))["model"]["vocab"].items()}
bad = [r["id"] for r in rows if inv[r["input_ids"][r["boundary"]]].startswith("\u2581")]
print(len(rows), bad[:3], file=sys.stderr)
sys.exit(0 if rows and not bad else 1)
PY
check "llama2-style picard: no completion's first piece starts with ▁" $? "$TMP/err"

# a prompt that ends in a space: a token crosses into the completion
cat >"$TMP/space.json" <<'J'
{"prompt": "Question: {question}\nSQL: ", "completion": "{sql}"}
J
"$PAIRSHARD" build -q --layout causal --max-length 0 --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    --template "$TMP/space.json" -o "$TMP/space-gpt2" "$SPIDER" 2>"$TMP/err"
check "GPT-2, a prompt ending in a space: builds (the ids still read as the text)" $? "$TMP/err"
"$PY" - "$TMP/space-gpt2/report.json" <<'PY' 2>"$TMP/err"
import json, sys
r = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in r["checks"]}
e = r["prompt_completion"]["ends"]
print(e, c["junction_merges"]["verdict"], file=sys.stderr)
sys.exit(0 if e["junction_merged"] == 1034 and c["junction_merges"]["verdict"] == "warn"
         and c["round_trip"]["verdict"] == "pass" and e["round_trip"]["ok"] == 1034 else 1)
PY
check "... junction_merges warns: 1034 of 1034 counted; round_trip passes" $? "$TMP/err"
"$PAIRSHARD" build --layout causal --max-length 0 --tokenizer-json "$TOKS/llama2-style.tokenizer.json" \
    --template "$TMP/space.json" -o "$TMP/space-llama" "$SPIDER" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "FAIL round_trip .*first 'dev.json:#0': token [0-9]* (id [0-9]*, '▁SELECT')" "$TMP/err" &&
    [ ! -e "$TMP/space-llama" ]
check "Llama-2-style, the same: the gate fails on round_trip naming dev.json:#0 and '▁SELECT'" $? "$TMP/err"

# ---- dialogues: history shown, or warned about ----------------------------
"$PAIRSHARD" clean -q --schema "$TABLES" --template ddl --turns interaction -o "$TMP/sparc.jsonl" \
    "$SPARC" 2>"$TMP/err" &&
    "$PY" - "$SPARC" "$TMP/sparc.jsonl" <<'PY' 2>>"$TMP/err"
import json, sys
dialogues = json.load(open(sys.argv[1]))
rows = {json.loads(l)["id"]: json.loads(l)["prompt"] for l in open(sys.argv[2])}
later = bad = 0
for d, dia in enumerate(dialogues):
    turns = dia["interaction"]
    for k in range(1, len(turns)):
        later += 1
        p = rows["dev.json:#%d/%d" % (d, k)]
        lines = ["-- Earlier question: " + t["utterance"].strip() for t in turns[:k]]
        want = "\n".join(lines) + "\n-- " + turns[k]["utterance"].strip() + "\n"
        bad += not p.endswith(want)
print(later, "later turns,", bad, "without their earlier utterances", file=sys.stderr)
sys.exit(0 if later >= 4 and not bad else 1)
PY
check "--turns with ddl: every turn after the first shows the earlier utterances, in order" $? "$TMP/err"
B --tokenizer-json "$TOKS/gpt2.tokenizer.json" --template ddl --turns interaction \
    -o "$TMP/sparc" "$SPARC" 2>"$TMP/err" &&
    "$PY" - "$TMP/sparc/report.json" <<'PY' 2>>"$TMP/err"
import json, sys
c = {x["name"]: x for x in json.load(open(sys.argv[1]))["checks"]}["history_hidden"]
sys.exit(0 if c["verdict"] == "pass" and c["details"]["turns_with_history"] == 4
         and c["details"]["hidden"] == 0 else 1)
PY
check "--turns with ddl: history_hidden passes (4 turns with history, 0 hidden)" $? "$TMP/err"
cat >"$TMP/nohist.json" <<'J'
{"prompt": "-- {question}\n", "completion": "{sql}"}
J
"$PAIRSHARD" build --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    --template "$TMP/nohist.json" --turns interaction -o "$TMP/nohist" "$SPARC" 2>"$TMP/err"
[ $? -eq 0 ] && grep -q "warn history_hidden .*4 of 4 dialogue turns" "$TMP/err" &&
    grep -q '"hidden": 4' "$TMP/nohist/report.json"
check "a template without {history} under --turns: the summary and report.json warn, 4 of 4" $? "$TMP/err"
"$PAIRSHARD" build -q --tokenizer-json "$TOKS/gpt2.tokenizer.json" \
    --template "$TMP/nohist.json" --turns interaction -o "$TMP/nohistpair" "$SPARC" 2>"$TMP/err" &&
    grep -q '"hidden": 4' "$TMP/nohistpair/report.json"
check "... in a pair set too" $? "$TMP/err"
"$PAIRSHARD" build -q --tokenizer-json "$TOKS/gpt2.tokenizer.json" --turns interaction \
    -o "$TMP/notemplate" "$SPARC" 2>"$TMP/err" &&
    grep -q '"hidden": 4' "$TMP/notemplate/report.json"
check "... and without a template (the question alone)" $? "$TMP/err"
"$PAIRSHARD" build -q --tokenizer-json "$TOKS/gpt2.tokenizer.json" --template pair \
    --turns interaction -o "$TMP/pairpreset" "$SPARC" 2>"$TMP/err" &&
    grep -q '"hidden": 0' "$TMP/pairpreset/report.json"
check "the pair preset shows the history: history_hidden 0" $? "$TMP/err"

# ---- serving: the set's Preprocessor gives the stored prompt, and with the
# SQL the whole stored record, EOS included ---------------------------------
# A sanitizer build's library needs its runtimes preloaded into python3.
PRELOAD=$(sanitizer_preload "$PS_BUILD/lib/libpairshard.so")
if "$PY" -c "import numpy" 2>/dev/null; then
    for x in llama2-style-picard gpt2-ddl; do
        PYTHONPATH="$PS_ROOT/python" PAIRSHARD_LIB="$PS_BUILD/lib/libpairshard.so" \
            LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
            "$PY" - "$TMP/$x" "$TMP/$x.ids" "$SPIDER" <<'PY' 2>"$TMP/err"
import json, sys
import pairshard
d, ids, dev = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
rows = {json.loads(l)["id"]: json.loads(l) for l in open(ids)}
n = bad = 0
with pairshard.Preprocessor(d) as p:
    for i, r in enumerate(dev):
        s = rows["dev.json:#%d" % i]
        a = p.preprocess(question=r["question"], db_id=r["db_id"])["input_ids"]
        b = p.preprocess(question=r["question"], db_id=r["db_id"], sql=r["query"])["input_ids"]
        n += 1
        bad += list(a) != s["input_ids"][:s["boundary"]] or list(b) != s["input_ids"]
print(n, "records,", bad, "differ", file=sys.stderr)
sys.exit(0 if n == 1034 and not bad else 1)
PY
        check "Preprocessor($x): every stored prompt from the question, every record with its SQL" $? "$TMP/err"
    done
else
    skip "Preprocessor on causal sets" "python3-numpy is missing"
fi

# ---- a gate stopped by too_long rejections says so -------------------------
"$PAIRSHARD" build --layout causal --tokenizer-json "$TOKS/gpt2.tokenizer.json" --max-length 24 \
    -o "$TMP/short" "$SPIDER" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "FAIL question_chars_ks .*shifted.*records were rejected too_long, over --max-length" "$TMP/err" &&
    ! grep "FAIL .*_ks \|FAIL .*_psi \|FAIL .*_quantiles " "$TMP/err" | grep -v -q "rejected too_long"
check "--max-length 24: every failed length check names the too_long rejections" $? "$TMP/err"
done_testing
