#!/bin/sh
# pairshard leakage on Spider: train vs dev against a recount written here in
# Python from the raw JSON files (not pairshard's code); a training file of
# dev records with light paraphrase noise against an exact all-pairs Jaccard
# (near_question's recall >= 95%, every match it reports verified); the
# same bytes for any thread count; the gate's exit status; usage errors.
. "$PS_ROOT/tests/tap.sh"

TRAIN="$DATA/spider/train.json"
DEV="$DATA/spider/dev.json"
L() { "$PAIRSHARD" leakage "$@"; }

# 1. Spider train vs dev.
L --train "$TRAIN" --holdout "$DEV" --json "$TMP/l.json" --matches "$TMP/m.jsonl" \
    2>"$TMP/l.err"
check "spider train vs dev: exit 0 (passes the default limits)" $? "$TMP/l.err"
grep -q "leakage passed" "$TMP/l.err"
check "the summary says it passed" $? "$TMP/l.err"

python3 - "$TRAIN" "$DEV" "$TMP/l.json" "$TMP/m.jsonl" >"$TMP/recount.out" 2>&1 <<'PY'
import json, re, sys, unicodedata
train = json.load(open(sys.argv[1]))
dev = json.load(open(sys.argv[2]))
got = json.load(open(sys.argv[3]))
matches = {}
for line in open(sys.argv[4]):
    m = json.loads(line)
    matches[m["id"]] = m["kinds"]

def question_key(q):
    q = unicodedata.normalize("NFKC", q).casefold()
    return "".join(c for c in q if not unicodedata.category(c).startswith("P") and not c.isspace())

LIT = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?")
NUM = re.compile(r"(?<![A-Za-z0-9_\u0080-\U0010ffff])(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z0-9_\u0080-\U0010ffff])")

def sql_key(s, mask=False):
    out, pos = [], 0
    for m in LIT.finditer(s):
        out.append(("code", s[pos:m.start()]))
        out.append(("lit", m.group(0)))
        pos = m.end()
    out.append(("code", s[pos:]))
    text = ""
    for kind, part in out:
        if kind == "lit":
            text += "\x00" if mask else part.replace(" ", "\x01").replace("\t", "\x02")
        else:
            part = "".join(c.lower() if ord(c) < 128 else c for c in part)
            if mask:
                part = NUM.sub("\x00", part)
            text += part
    text = re.sub(r"[ \t\n\v\f\r]+", " ", text).strip()
    text = re.sub(r"[; ]+$", "", text)
    return text.replace("\x00", "?").replace("\x01", " ").replace("\x02", "\t")

def keys(rec):
    return {"database": rec["db_id"], "question": question_key(rec["question"]),
            "sql": sql_key(rec["query"]), "sql_template": sql_key(rec["query"], True)}

dev_keys = {k: set() for k in ("database", "question", "sql", "sql_template")}
for r in dev:
    for k, v in keys(r).items():
        if v:
            dev_keys[k].add(v)
want = {k: 0 for k in dev_keys}
ids = {k: set() for k in dev_keys}
for i, r in enumerate(train):
    for k, v in keys(r).items():
        if v in dev_keys[k]:
            want[k] += 1
            ids[k].add(f"train.json:#{i}")
print("# recount:", want)
n = 0
def ok(cond, what):
    global n
    n += 1
    print(("ok" if cond else "not ok"), n, "-", what)
# The counts the recount finds on these files, written down.
ok(want == {"database": 0, "question": 6, "sql": 10, "sql_template": 14},
   f"the recount finds 0 databases, 6 questions, 10 SQL, 14 templates ({want})")
for k in want:
    ok(got["kinds"][k]["records"] == want[k],
       f"{k}: pairshard {got['kinds'][k]['records']} = recount {want[k]}")
    found = {i for i, kinds in matches.items() if k in kinds}
    ok(found == ids[k], f"{k}: the same training records (--matches)")
ok(got["records"] == len(train) and got["holdouts"][0]["records"] == len(dev),
   "7000 training records against 1034 held-out ones")
print(f"1..{n}")
PY
relay_tap "$TMP/recount.out"
grep -q '^1\.\.' "$TMP/recount.out"
check "the recount ran to its end" $? "$TMP/recount.out"

# 2. Paraphrased dev records as training data: near_question against an
# exact all-pairs Jaccard of character 3-grams.
python3 - "$DEV" "$TMP/para.jsonl" <<'PY'
import json, random, sys
dev = json.load(open(sys.argv[1]))
rng = random.Random(39)
words = [w for r in dev for w in r["question"].split()]
with open(sys.argv[2], "w") as f:
    for i, r in enumerate(dev):
        w = r["question"].split()
        j = rng.randrange(len(w))
        w[j] = rng.choice(words)                      # one word swapped
        q = " ".join(w)
        q = q.upper() if i % 3 == 0 else q.lower() if i % 3 == 1 else q   # case
        q = q.rstrip("?.") + ("" if i % 2 else " ?!")                     # punctuation
        f.write(json.dumps({"id": f"para{i}", "question": q, "sql": r["query"],
                            "db_id": "para_" + r["db_id"]}) + "\n")
PY
L --train "$TMP/para.jsonl" --holdout "$DEV" --json "$TMP/p.json" --matches "$TMP/pm.jsonl" \
    --leakage-limit near_question=off --leakage-limit question=off \
    --leakage-limit sql=off 2>"$TMP/p.err"
check "paraphrased dev: leakage runs (exit 0 with the limits off)" $? "$TMP/p.err"
python3 - "$DEV" "$TMP/para.jsonl" "$TMP/pm.jsonl" >"$TMP/near.out" 2>&1 <<'PY'
import json, sys, unicodedata
dev = json.load(open(sys.argv[1]))
para = [json.loads(l) for l in open(sys.argv[2])]
found = {}
for l in open(sys.argv[3]):
    m = json.loads(l)
    if "near_question" in m["kinds"]:
        found[m["id"]] = m["kinds"]["near_question"][0]
def near_text(q):
    q = unicodedata.normalize("NFKC", q).casefold()
    q = "".join(c for c in q if not unicodedata.category(c).startswith("P"))
    return " ".join(q.split())
def grams(q, n=3):
    t = near_text(q)
    return {t[i:i + n] for i in range(max(1, len(t) - n + 1))} if t else set()
dg = [grams(r["question"]) for r in dev]
true, jac = set(), {}
for r in para:
    g = grams(r["question"])
    for i, d in enumerate(dg):
        j = len(g & d) / len(g | d)
        if j >= 0.8:
            true.add(r["id"])
            jac.setdefault(r["id"], {})[f"dev.json:#{i}"] = j
n = 0
def ok(cond, what):
    global n
    n += 1
    print(("ok" if cond else "not ok"), n, "-", what)
hit = len(true & set(found))
print(f"# {len(para)} paraphrases, {len(true)} within 0.8 of a dev question, {hit} found")
ok(len(true) >= 300, f"the noise leaves {len(true)} (>= 300) near duplicates to find")
ok(hit >= 0.95 * len(true), f"recall {hit}/{len(true)} >= 95%")
wrong = [i for i, d in found.items() if d not in jac.get(i, {})]
ok(not wrong, f"every reported match is >= 0.8 by the exact Jaccard ({wrong[:3]})")
print(f"1..{n}")
PY
relay_tap "$TMP/near.out"
grep -q '^1\.\.' "$TMP/near.out"
check "the all-pairs Jaccard ran to its end" $? "$TMP/near.out"

# 3. The same bytes for any thread count.
L -q --threads 1 --train "$TRAIN" --holdout "$DEV" --json "$TMP/t1.json" --matches "$TMP/t1.m"
L -q --threads 2 --train "$TRAIN" --holdout "$DEV" --json "$TMP/t2.json" --matches "$TMP/t2.m"
cmp -s "$TMP/t1.json" "$TMP/t2.json" && cmp -s "$TMP/t1.m" "$TMP/t2.m" &&
    cmp -s "$TMP/t1.json" "$TMP/l.json"
check "report and matches: the same bytes with 1 and 2 threads" $?

# 4. The gate: dev against itself fails on databases; a limit turned off passes.
L -q --train "$DEV" --holdout "$DEV"
check "dev vs dev: exit 1 (shared databases)" $(( $? == 1 ? 0 : 1 ))
L -q --train "$DEV" --holdout "$DEV" --leakage-limit database,question,near_question,sql=off
check "dev vs dev with every limit off: exit 0" $?

# 5. Usage errors name what is wrong.
L --train "$TRAIN" 2>"$TMP/u1.err"
[ $? -eq 2 ] && grep -q -- "--holdout" "$TMP/u1.err"
check "no --holdout: exit 2, says so" $? "$TMP/u1.err"
L --train "$TRAIN" --holdout "$DEV" --drop-leaked sqll 2>"$TMP/u2.err"
[ $? -eq 2 ] && grep -q "unknown leakage kind 'sqll'" "$TMP/u2.err"
check "an unknown kind: exit 2, named" $? "$TMP/u2.err"
L --train "$TRAIN" --holdout "$TMP/nope.json" 2>"$TMP/u3.err"
[ $? -eq 2 ] && grep -q "nope.json" "$TMP/u3.err"
check "a missing held-out file: exit 2, named" $? "$TMP/u3.err"

# 6. build --holdout: reported, gated, dropped, accounted, hashed.
VOCAB="$DATA/vocab/bert-base-uncased.vocab.txt"
B() { "$PAIRSHARD" build --vocab "$VOCAB" --label-field db_id "$@"; }
B --holdout "$DEV" -o "$TMP/s0" "$TRAIN" 2>"$TMP/b0.err"
check "build --holdout dev: exit 0" $? "$TMP/b0.err"
grep -q "^pairshard build: leakage passed" "$TMP/b0.err" &&
    grep -q "^  question  *6  *0 " "$TMP/b0.err"
check "its summary: 6 leaked questions, none dropped, passed" $? "$TMP/b0.err"
grep -q '<section id="leakage">' "$TMP/s0/report.html" &&
    grep -q 'How many flights do we have?' "$TMP/s0/report.html"
check "report.html has the leakage section with an example" $?
for t in 1 2; do
    B -q --threads $t --holdout "$DEV" --drop-leaked question,sql -o "$TMP/d$t" "$TRAIN" \
        2>"$TMP/d$t.err"
    check "build --drop-leaked question,sql --threads $t: exit 0" $? "$TMP/d$t.err"
done
same_set "$TMP/d1" "$TMP/d2"
check "the same set, byte for byte, with 1 and 2 threads" $?
"$PAIRSHARD" inspect --verify "$TMP/d1" >/dev/null 2>"$TMP/v.err"
check "inspect --verify passes" $? "$TMP/v.err"
python3 - "$TMP/d1" "$TMP/m.jsonl" "$DEV" >"$TMP/drop.out" 2>&1 <<'PY'
import hashlib, json, os, sys
d, matches, dev = sys.argv[1:]
m = json.load(open(f"{d}/manifest.json"))
a = m["accounting"]
rej = [json.loads(l) for l in open(f"{d}/rejects.jsonl")]
# the records the leakage command found sharing a question or, else, SQL
want = {}
for l in open(matches):
    x = json.loads(l)
    k = "question" if "question" in x["kinds"] else "sql" if "sql" in x["kinds"] else None
    if k:
        want[x["id"]] = "leaked_" + k
got = {r["id"]: r["reason"] for r in rej if r["reason"].startswith("leaked_")}
n = 0
def ok(c, what):
    global n
    n += 1
    print(("ok" if c else "not ok"), n, "-", what)
ok(got == want, f"rejects.jsonl holds exactly the leaked records, by kind ({len(got)} of {len(want)})")
ok(a["records_in"] == a["kept"] + a["rejected"] + a["duplicates"] and a["balanced"],
   "records_in = kept + rejected + duplicates")
ok(a["rejected_by_reason"].get("leaked_question") == 6 and
   a["rejected_by_reason"].get("leaked_sql") == len(want) - 6, "counted per reason")
h = m["leakage"]["holdouts"][0]
ok(h["sha256"] == hashlib.sha256(open(dev, "rb").read()).hexdigest() and
   h["bytes"] == os.path.getsize(dev) and h["records"] == 1034,
   "the manifest records the held-out file's bytes and sha256")
r = json.load(open(f"{d}/report.json"))
c = [c for c in r["checks"] if c["name"] == "leakage"]
ok(len(c) == 1 and c[0]["verdict"] == "pass" and r["leakage"]["kinds"]["question"]["dropped"] == 6,
   "report.json: the leakage check passes, 6 questions dropped")
print(f"1..{n}")
PY
relay_tap "$TMP/drop.out"
grep -q '^1\.\.' "$TMP/drop.out"
check "the drop's recount ran to its end" $? "$TMP/drop.out"
B --holdout "$DEV" -o "$TMP/s1" "$DEV" 2>"$TMP/b1.err"
[ $? -eq 1 ] && [ ! -e "$TMP/s1" ] && grep -q "FAIL leakage" "$TMP/b1.err"
check "build of dev with dev held out: the leakage check fails, nothing published" $? "$TMP/b1.err"
B -q --holdout "$DEV" --leakage-limit database,question,near_question,sql=off -o "$TMP/s2" "$DEV"
check "... and passes with those limits off" $?
B -q -o "$TMP/s3" "$TRAIN"
grep -q '"leakage"' "$TMP/s3/manifest.json" "$TMP/s3/report.json"
check "without --holdout: no leakage in the manifest or report" $(( $? == 0 ? 1 : 0 ))

# 7. clean --holdout: the same check, the same drops, for any thread count.
for t in 1 2; do
    "$PAIRSHARD" clean -q --threads $t --holdout "$DEV" --drop-leaked question "$TRAIN" \
        -o "$TMP/c$t.jsonl" --rejects "$TMP/r$t.jsonl" --stats "$TMP/st$t.json"
    check "clean --holdout --drop-leaked question --threads $t: exit 0" $?
done
cmp -s "$TMP/c1.jsonl" "$TMP/c2.jsonl" && cmp -s "$TMP/r1.jsonl" "$TMP/r2.jsonl"
check "clean: the same records and rejects with 1 and 2 threads" $?
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))
r=[json.loads(l) for l in open(sys.argv[2])]
assert a["balanced"] and a["rejected_by_reason"]["leaked_question"] == 6, a
assert sorted(x["id"] for x in r) == sorted(i for i, k in ((m["id"], m["kinds"]) for m in map(json.loads, open(sys.argv[3]))) if "question" in k)' \
    "$TMP/st1.json" "$TMP/r1.jsonl" "$TMP/m.jsonl"
check "clean: the 6 records sharing a dev question rejected leaked_question, accounted" $?
"$PAIRSHARD" clean -q --holdout "$DEV" "$DEV" -o "$TMP/cd.jsonl"
check "clean of dev with dev held out: exit 1 (over the database limit), output written" \
    $(( $? == 1 && $(wc -l <"$TMP/cd.jsonl") == 1034 ? 0 : 1 ))

# 8. A shard set as held-out set: its manifest's inputs, read again.
L -q --train "$TRAIN" --holdout "$TMP/s2" --json "$TMP/set.json"
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
assert all(a["kinds"][k]["records"] == b["kinds"][k]["records"] for k in a["kinds"])
assert b["holdouts"][0]["shard_set"]' "$TMP/l.json" "$TMP/set.json"
check "a set built from dev as --holdout finds what dev.json does" $?
cp "$DEV" "$TMP/devcopy.json"
B -q --leakage-limit database,question,near_question,sql=off --holdout "$DEV" -o "$TMP/s4" \
    "$TMP/devcopy.json"
echo " " >>"$TMP/devcopy.json"
L --train "$TRAIN" --holdout "$TMP/s4" 2>"$TMP/ch.err"
[ $? -eq 2 ] && grep -q "devcopy.json' changed since the set was built" "$TMP/ch.err"
check "a set whose input changed since its build: exit 2, naming the input" $? "$TMP/ch.err"

done_testing
