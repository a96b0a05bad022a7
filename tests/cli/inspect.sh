#!/bin/sh
# CLI tests of `pairshard inspect`: the summary (text and JSON) of a set
# built from Spider dev, --verify on a good set, and --verify on damaged
# sets (a flipped byte inside a block, anywhere in a file, a truncated or
# missing shard, a lying manifest), which must exit 1 naming the shard
# (and the bucket/block when the damage is inside one) and never crash;
# hostile manifests exit 2.
. "$PS_ROOT/tests/tap.sh"
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
SET="$TMP/set"

"$PAIRSHARD" inspect --help >"$TMP/help" 2>&1
check "inspect --help exits 0" $?
grep -q -- "--verify" "$TMP/help"
check "inspect --help documents --verify" $?

"$PAIRSHARD" build -q --vocab "$VOCAB" --label-field db_id --shards 2 --max-length 128 \
    -o "$SET" "$DATA/spider/dev.json" 2>"$TMP/err"
check "build Spider dev into 2 shards" $?

"$PAIRSHARD" inspect "$SET" >"$TMP/out" 2>"$TMP/err"
check "inspect exits 0" $?
grep -q "shard-00000.mdb" "$TMP/out" && grep -q "shard-00001.mdb" "$TMP/out"
check "inspect lists the shards" $?
grep -q "^buckets:" "$TMP/out" && grep -q "tokens_padded" "$TMP/out"
check "inspect lists the buckets with padding" $?
grep -q "concert_singer" "$TMP/out" && grep -q "^labels (20):" "$TMP/out"
check "inspect lists the 20 labels" $?
grep -q "1034 records" "$TMP/out"
check "inspect counts 1034 records" $?

"$PAIRSHARD" inspect --verify --json "$SET" >"$TMP/json" 2>"$TMP/err"
check "inspect --verify --json exits 0" $?
python3 - "$TMP/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
ok = (o["verify"]["ok"] is True and o["records"] == 1034 and len(o["shards"]) == 2
      and sum(s["records"] for s in o["shards"]) == 1034
      and sum(b["records"] for b in o["buckets"]) == 1034
      and sum(l["records"] for l in o["labels"]) + o["unlabeled"] == 1034
      and all(b["tokens_padded"] == b["records"] * b["bound"] for b in o["buckets"])
      and all(0 <= b["padding"] < 1 for b in o["buckets"])
      and o["compression"]["basis"] == "files" and o["compression"]["ratio"] > 1
      and o["compression_blocks"]["basis"] == "blocks"
      and o["compression_blocks"]["ratio"] > o["compression"]["ratio"]
      and len(o["tokenizer"]["vocab_sha256"]) == 64 and o["format_version"] == 1)
sys.exit(0 if ok else 1)
PY
check "--json parses and its counts add up" $?
"$PAIRSHARD" inspect --json "$SET" | python3 -c 'import json,sys; o=json.load(sys.stdin); sys.exit("verify" in o or "compression_blocks" in o)'
check "--json without --verify parses (no verify member, no measured block ratio)" $?
# The two modes agree on the files' ratio and say on what basis each is.
"$PAIRSHARD" inspect "$SET" | grep "compression:" >"$TMP/ratio.plain"
"$PAIRSHARD" inspect --verify "$SET" | grep "compression:" >"$TMP/ratio.verify"
[ "$(wc -l <"$TMP/ratio.plain")" -eq 1 ] && grep -q "of the shard files" "$TMP/ratio.plain" &&
    [ "$(head -n 1 "$TMP/ratio.verify")" = "$(cat "$TMP/ratio.plain")" ] &&
    [ "$(wc -l <"$TMP/ratio.verify")" -eq 2 ] && grep -q "of the blocks alone" "$TMP/ratio.verify"
check "inspect and inspect --verify print the same files' ratio; --verify adds the blocks' own" $?
ls "$SET" >"$TMP/ls.after"
! grep -q -- "-lock" "$TMP/ls.after"
check "reading leaves no lock files in the set" $?

# A fresh copy of the set for each damage.
fresh() { rm -rf "$TMP/bad"; cp -r "$SET" "$TMP/bad"; }
# pairshard inspect [OPTION...] on the damaged copy: exits EXIT with PATTERN
# in its message.
expect_inspect() { # EXIT PATTERN WHAT [OPTION...]
    want=$1 pat=$2 what=$3
    shift 3
    "$PAIRSHARD" inspect "$@" "$TMP/bad" >/dev/null 2>"$TMP/err"
    [ $? -eq "$want" ] && grep -q "$pat" "$TMP/err"
    check "$what" $?
}
S0="$TMP/bad/shard-00000.mdb"

# A flipped byte inside a block: at a zstd frame's 40th byte.
fresh
python3 - "$S0" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
at = b.find(b"\x28\xb5\x2f\xfd")
b[at + 40] ^= 0x5a
open(p, "wb").write(b)
PY
"$PAIRSHARD" inspect --verify "$TMP/bad" >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] && grep -q "shard-00000.mdb: bucket [0-9]* block [0-9]*:" "$TMP/err"
check "a flipped byte in a block: exit 1 naming shard, bucket and block" $?
"$PAIRSHARD" inspect --verify --json "$TMP/bad" >"$TMP/json" 2>/dev/null
python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["verify"]; sys.exit(not (v["ok"] is False and v["shard"]=="shard-00000.mdb" and "bucket" in v and "block" in v and v["kind"]=="block"))' "$TMP/json"
check "--json reports the damaged shard, bucket, block and kind" $?

# A flipped byte in the middle of the file: exit 1 naming the shard.
fresh
python3 - "$S0" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x01
open(p, "wb").write(b)
PY
expect_inspect 1 "shard-00000.mdb" "a flipped byte mid-file: exit 1 naming the shard" --verify

# Truncated shards, at several lengths.
all=0
for cut in 1 4096 8192 20000; do
    fresh
    size=$(wc -c <"$S0")
    [ $cut -lt "$size" ] || continue
    truncate -s $((size - cut)) "$S0"
    "$PAIRSHARD" inspect --verify "$TMP/bad" >/dev/null 2>"$TMP/err"
    [ $? -eq 1 ] && grep -q "shard-00000.mdb" "$TMP/err" || all=1
done
check "truncated shards: exit 1 naming the shard" $all
fresh
: >"$S0"
expect_inspect 1 "shard-00000.mdb" "an empty shard file: exit 1" --verify
fresh
rm "$TMP/bad/shard-00001.mdb"
expect_inspect 1 "shard-00001.mdb: missing" "a missing shard: exit 1 naming it" --verify

# Random single-bit damage: always exit 1, never a crash (any byte change
# is caught at the latest by the file's SHA-256).
fresh
python3 - "$S0" "$PAIRSHARD" "$TMP" <<'PY'
import random, shutil, subprocess, sys
path, exe, tmp = sys.argv[1:4]
orig = open(path, "rb").read()
random.seed(7)
bad = []
for _ in range(120):
    b = bytearray(orig)
    pos = random.randrange(len(b))
    b[pos] ^= 1 << random.randrange(8)
    open(path, "wb").write(b)
    r = subprocess.run([exe, "inspect", "--verify", tmp + "/bad"], capture_output=True, text=True)
    if r.returncode != 1 or "shard-00000.mdb" not in r.stderr:
        bad.append((pos, r.returncode, r.stderr[-200:]))
open(path, "wb").write(orig)
for x in bad[:5]:
    print("# damage at byte %d: exit %d: %s" % x)
sys.exit(1 if bad else 0)
PY
check "120 random bit flips: exit 1 naming the shard each time" $?

# The manifest lies: counts, vocabulary size, block_records.
edit_manifest() { # python expression on m
    fresh
    python3 - "$TMP/bad/manifest.json" "$1" <<'PY'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
exec(sys.argv[2])
json.dump(m, open(p, "w"), indent=2)
PY
}
edit_manifest 'm["shards"][1]["buckets"][2]["records"] += 1'
expect_inspect 1 "shard-00001.mdb: bucket 2:" "manifest bucket count off by one: exit 1 naming shard and bucket" --verify
edit_manifest 'm["tokenizer"]["vocab_size"] = 1000'
expect_inspect 1 "vocabulary size" "token ids above vocab_size: exit 1" --verify
edit_manifest 'm["block_records"] = 64'
expect_inspect 1 "records, expected" "records per block disagree with block_records: exit 1" --verify
edit_manifest 'm["labels"] = m["labels"][:3]'
expect_inspect 1 "label" "labels beyond the manifest's: exit 1" --verify
edit_manifest 'm["shards"][0]["sha256"] = "0" * 64'
expect_inspect 1 "shard-00000.mdb: SHA-256" "a wrong SHA-256 in the manifest: exit 1" --verify

# Hostile or unreadable manifests: exit 2, nothing read outside the set.
edit_manifest 'm["format_version"] = 3'
expect_inspect 2 "format version 3 is newer" "a newer manifest format version: exit 2 with a clear message"
for name in "../shard-00000.mdb" "/etc/passwd" "." ".." "shard-00000.mdb/" "sub/shard-00000.mdb" "shard-0x.mdb" "shard-.mdb"; do
    edit_manifest "m['shards'][0]['file'] = '$name'"
    "$PAIRSHARD" inspect --verify "$TMP/bad" >/dev/null 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "not a plain shard-NNNNN.mdb name" "$TMP/err"
    check "shard file '$name' in the manifest: exit 2" $?
done
edit_manifest 'm["shards"][1]["file"] = m["shards"][0]["file"]'
expect_inspect 2 "listed twice" "a shard listed twice: exit 2"
edit_manifest 'm["shards"][0]["buckets"] = m["shards"][0]["buckets"][:2]'
"$PAIRSHARD" inspect "$TMP/bad" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ]
check "a shard's bucket list of the wrong length: exit 2" $?
fresh
printf '{"format":"pairshard-manifest","format_version":1,' >"$TMP/bad/manifest.json"
expect_inspect 2 "manifest.json:" "a truncated manifest: exit 2 naming it"
"$PAIRSHARD" inspect "$TMP/nonexistent" >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "no manifest" "$TMP/err"
check "no set there: exit 2" $?
"$PAIRSHARD" inspect >/dev/null 2>&1
[ $? -eq 2 ]
check "no DIR: exit 2" $?
"$PAIRSHARD" inspect --bogus "$SET" >/dev/null 2>&1
[ $? -eq 2 ]
check "an unknown option: exit 2" $?

# A shard whose own format version is newer: exit 2 naming it.
fresh
python3 - "$S0" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
at = b.find(b'"format_version":1')
assert at >= 0
b[at + 17:at + 18] = b"7"
open(p, "wb").write(b)
PY
expect_inspect 2 "shard-00000.mdb: shard format version 7 is newer" "a shard of a newer format version: exit 2 naming it" --verify

done_testing
