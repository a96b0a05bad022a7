#!/bin/sh
# CLI tests of `pairshard clean`: real Spider data, hostile inputs, atomic
# outputs and the accounting identity, through the installed command line.
. "$PS_ROOT/tests/tap.sh"

count_lines() { if [ -f "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
# identity FILE.stats: records_in == kept + rejected + duplicates, and the
# line counts of the three outputs agree with it.
identity() { # stats out rejects dups
    python3 - "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
lines = [sum(1 for _ in open(p)) if p != "-" else None for p in sys.argv[2:5]]
ok = s["records_in"] == s["kept"] + s["rejected"] + s["duplicates"] and s["balanced"]
ok = ok and lines[0] == s["kept"] and lines[1] == s["rejected"] and lines[2] == s["duplicates"]
sys.exit(0 if ok else 1)
PY
}

"$PAIRSHARD" clean --help >"$TMP/help" 2>&1
check "clean --help exits 0" $?
grep -q -- "--rejects" "$TMP/help"
check "clean --help documents --rejects" $?

"$PAIRSHARD" clean "$DATA/spider/dev.json" --label-field db_id -o "$TMP/dev.jsonl" \
    --rejects "$TMP/dev.rej" --duplicates "$TMP/dev.dup" --stats "$TMP/dev.stats" 2>"$TMP/err"
check "clean Spider dev exits 0" $?
[ "$(count_lines "$TMP/dev.jsonl")" -eq 1034 ]
check "Spider dev: 1034 kept records" $?
python3 -c "
import json,sys
recs=[json.loads(l) for l in open('$TMP/dev.jsonl')]
raw=json.load(open('$DATA/spider/dev.json'))
assert all(r['label']==x['db_id'] for r,x in zip(recs,raw))
assert all(set(r)=={'id','question','sql','label','source'} for r in recs)
assert len({r['id'] for r in recs})==1034
"
check "Spider dev: labels are db_id, records have the five keys, ids unique" $?
identity "$TMP/dev.stats" "$TMP/dev.jsonl" "$TMP/dev.rej" "$TMP/dev.dup"
check "Spider dev: accounting identity" $?
grep -q "1034 records in = 1034 kept + 0 rejected + 0 duplicates" "$TMP/err"
check "summary line on stderr" $?

"$PAIRSHARD" clean -q "$DATA/spider/train.json" "$DATA/spider/dev.json" --label-field db_id \
    -o "$TMP/all.jsonl" --rejects "$TMP/all.rej" --duplicates "$TMP/all.dup" --stats "$TMP/all.stats"
check "clean train+dev exits 0" $?
identity "$TMP/all.stats" "$TMP/all.jsonl" "$TMP/all.rej" "$TMP/all.dup"
check "train+dev: accounting identity with duplicates" $?

# stdin and compressed inputs give the same records as the plain file.
python3 -c "
import json
for r in json.load(open('$DATA/spider/train.json'))[:500]: print(json.dumps(r))
" >"$TMP/t.jsonl"
"$PAIRSHARD" clean -q "$TMP/t.jsonl" -o "$TMP/plain.out"
gzip -c "$TMP/t.jsonl" >"$TMP/t.jsonl.gz"
zstd -q -c "$TMP/t.jsonl" >"$TMP/t.jsonl.zst"
"$PAIRSHARD" clean -q - -o "$TMP/stdin.out" <"$TMP/t.jsonl"
"$PAIRSHARD" clean -q "$TMP/t.jsonl.gz" -o "$TMP/gz.out"
"$PAIRSHARD" clean -q "$TMP/t.jsonl.zst" -o "$TMP/zst.out"
[ "$(count_lines "$TMP/plain.out")" -eq 500 ] && [ "$(count_lines "$TMP/gz.out")" -eq 500 ]
check "gzip input: all 500 records" $?
# compare question, sql and label (id and source name the file)
for f in plain stdin gz zst; do
    sed 's/^{"id":"[^"]*",//; s/,"source":.*//' "$TMP/$f.out" >"$TMP/$f.cmp"
done
cmp -s "$TMP/plain.cmp" "$TMP/gz.cmp" && cmp -s "$TMP/plain.cmp" "$TMP/zst.cmp" &&
    cmp -s "$TMP/plain.cmp" "$TMP/stdin.cmp"
check "gzip and zstd inputs give the same records as plain" $?
grep -q '"source":"<stdin>:1"' "$TMP/stdin.out"
check "stdin records name <stdin> as their source" $?

# Missing input: exit 2, names the file, and publishes nothing.
"$PAIRSHARD" clean "$TMP/absent.jsonl" -o "$TMP/absent.out" 2>"$TMP/err"
[ $? -eq 2 ]
check "missing input exits 2" $?
grep -q "absent.jsonl" "$TMP/err"
check "missing input: the message names the file" $?
[ ! -e "$TMP/absent.out" ] && [ -z "$(ls "$TMP" | grep '\.tmp\.')" ]
check "missing input: no output and no temporary left" $?

# A truncated gzip stream: error, nothing published.
head -c 3000 "$TMP/t.jsonl.gz" >"$TMP/cut.jsonl.gz"
"$PAIRSHARD" clean "$TMP/cut.jsonl.gz" -o "$TMP/cut.out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "truncated gzip" "$TMP/err" && [ ! -e "$TMP/cut.out" ]
check "truncated gzip: exit 2, clear message, nothing published" $?

# Hostile bytes: NUL, invalid UTF-8, BOM, CRLF, bad JSON, empty lines.
printf '\357\273\277{"question":"ok","sql":"SELECT 1"}\r\n{"question":"a\000b","sql":"x"}\n{"question":"\377","sql":"x"}\n{bad\n\n[1]\n' >"$TMP/hostile.jsonl"
"$PAIRSHARD" clean -q "$TMP/hostile.jsonl" -o "$TMP/h.out" --rejects "$TMP/h.rej" \
    --duplicates "$TMP/h.dup" --stats "$TMP/h.stats"
check "hostile bytes: exit 0" $?
identity "$TMP/h.stats" "$TMP/h.out" "$TMP/h.rej" "$TMP/h.dup"
check "hostile bytes: accounting identity" $?
python3 -c "
import json
rej=[json.loads(l) for l in open('$TMP/h.rej')]
assert [r['reason'] for r in rej]==['bad_json','invalid_utf8','bad_json','wrong_type'], rej
assert all(r['source'].endswith(':%d'%n) for r,n in zip(rej,[2,3,4,6])), rej
assert 'original_base64' in rej[1]
"
check "hostile bytes: each rejection has reason, file:line source and original" $?

# Empty file: zero records, exit 0.
: >"$TMP/empty.json"
"$PAIRSHARD" clean -q "$TMP/empty.json" -o "$TMP/empty.out" --stats "$TMP/empty.stats"
[ $? -eq 0 ] && [ "$(count_lines "$TMP/empty.out")" -eq 0 ]
check "empty file: exit 0, no records" $?

# Rules: a bad pattern is a usage error naming the rule and the offset.
printf '[{"name":"split-words","field":"question","replace":"(\\\\w+","with":"$1"}]' >"$TMP/bad.rules"
"$PAIRSHARD" clean "$TMP/t.jsonl" --rules "$TMP/bad.rules" -o "$TMP/r.out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "split-words" "$TMP/err" && grep -q "offset" "$TMP/err"
check "bad rule pattern: exit 2 naming the rule and offset" $?
printf '[{"name":"semi","field":"sql","replace":";\\\\s*$","with":""},{"name":"no-count","field":"sql","drop_if":"count\\\\("}]' >"$TMP/good.rules"
"$PAIRSHARD" clean -q "$TMP/t.jsonl" --rules "$TMP/good.rules" -o "$TMP/r.out" \
    --rejects "$TMP/r.rej" --stats "$TMP/r.stats"
check "rules file applied" $?
python3 -c "
import json
s=json.load(open('$TMP/r.stats'))
dropped=[r for r in s['rules'] if r['name']=='no-count'][0]['dropped']
rej=[json.loads(l) for l in open('$TMP/r.rej')]
assert dropped>0 and dropped==sum(1 for r in rej if r.get('rule')=='no-count')
assert all('count(' not in json.loads(l)['sql'] for l in open('$TMP/r.out'))
"
check "drop_if rule: per-rule count equals the rejects it wrote" $?

# Replacements with groups ($1, ${name}, $0, $$) on Spider: the same text as
# Python's re.sub gives on the records cleaned without rules.
cat >"$TMP/groups.rules" <<'JSON'
[{"name": "qualify", "field": "sql", "replace": "\\b(T\\d+)\\.(\\w+)", "with": "$2 OF $1"},
 {"name": "named", "field": "question", "replace": "^(?<verb>\\w+) (?<obj>\\w+)", "with": "${obj} ${verb}"},
 {"name": "whole", "field": "question", "replace": "\\?$", "with": "$0$0"},
 {"name": "dollar", "field": "sql", "replace": "count\\(\\*\\)", "with": "$$n"}]
JSON
"$PAIRSHARD" clean -q "$TMP/t.jsonl" --rules "$TMP/groups.rules" -o "$TMP/g.out" \
    --rejects "$TMP/g.rej" --stats "$TMP/g.stats" 2>"$TMP/err"
check "rules with \$1, \${name}, \$0, \$\$: exit 0" $?
python3 -c "
import json, re
plain = [json.loads(l) for l in open('$TMP/plain.out')]
got = [json.loads(l) for l in open('$TMP/g.out')]
assert len(got) == len(plain) == 500, (len(got), len(plain))
def q(t): return re.sub(r'\?$', r'\g<0>\g<0>', re.sub(r'^(\w+) (\w+)', r'\2 \1', t))
def s(t): return re.sub(r'count\(\*\)', '\$n', re.sub(r'\b(T\d+)\.(\w+)', r'\2 OF \1', t))
bad = [(g['question'], g['sql']) for p, g in zip(plain, got)
       if (g['question'], g['sql']) != (q(p['question']), s(p['sql']))]
assert not bad, bad[:3]
assert any(' OF T1' in g['sql'] for g in got) and any('\$n' in g['sql'] for g in got)
"
check "rules with groups: every record as re.sub gives it" $?

"$PAIRSHARD" clean --no-such-flag "$TMP/t.jsonl" 2>/dev/null
[ $? -eq 2 ]
check "unknown option exits 2" $?
"$PAIRSHARD" clean --format json "$TMP/t.jsonl" -o "$TMP/f.out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "expected a JSON array" "$TMP/err"
check "--format json on JSONL: clear error" $?

done_testing
