#!/usr/bin/env node
// End to end: `pairshard tokenize --tokenizer-json` on real tokenizer.json
// files (GPT-2, RoBERTa-base, T5-small) with their own normalizer and with
// normalizers swapped in (Sequences of NF forms, Lowercase, Replace, Strip,
// StripAccents, Nmt, Prepend; a standalone BertNormalizer; T5's Precompiled
// followed by Lowercase), compared id for id with HF's encode(question, sql)
// on 400 Spider dev pairs plus hostile strings. A file this build's test
// data lacks, or whose other components this build cannot load yet, is a
// skip (its reason printed). Prints TAP; exits 1 on a mismatch.
// env: PAIRSHARD (the binary), PS_ROOT.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('./node_modules/tokenizers');

const ROOT = process.env.PS_ROOT;
const BIN = process.env.PAIRSHARD;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ps-norm-e2e-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

const spider = JSON.parse(fs.readFileSync(`${ROOT}/tests/data/spider/dev.json`, 'utf8'));
const hostile = [
  'Ｓｅｌｅｃｔ ﬁle FROM “t” WHERE naïve = \'Ångström\'',
  'İSTANBUL Σ ΣΑΣ e\u0301\u0316 \u1100\u1161\u11a8 \uac00\u11a7',
  '  lots   of\tspace\n\u3000 and\u00a0nbsp ',
  '数据库 表格 \uF900\u{2F800} ①②③ ㍿ ㋿',
  '\u{1F469}\u200D\u{1F469}\u200D\u{1F467} مرحبا \u202Ex',
  'ctl\u0001\u0000\u007f\u0085\u200b\ufeffend',
  '',
];
const recs = spider.slice(0, 400).map((r, i) => ({ id: `r${i}`, question: r.question, sql: r.query }));
hostile.forEach((h, i) => recs.push({ id: `h${i}`, question: h, sql: `SELECT "${h}" FROM t` }));
const input = path.join(tmp, 'in.jsonl');
fs.writeFileSync(input, recs.map((r) => JSON.stringify(r)).join('\n') + '\n');

const swapped = {
  'NFKC+Lowercase+Replace+Strip': { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }, { type: 'Strip', strip_left: true, strip_right: true }] },
  'NFD+StripAccents+NFC': { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'NFC' }] },
  BertNormalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  'Nmt+NFKD+Prepend': { type: 'Sequence', normalizers: [{ type: 'Nmt' }, { type: 'NFKD' }, { type: 'Prepend', prepend: '\u2581' }] },
};

function pairshard(doc) {
  const tf = path.join(tmp, 'tok.json');
  fs.writeFileSync(tf, JSON.stringify(doc));
  const r = spawnSync(BIN, ['tokenize', '--tokenizer-json', tf, input], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) return { err: (r.stderr || '').split('\n')[0] };
  return { rows: r.stdout.trim().split('\n').map((l) => JSON.parse(l)) };
}

let n = 0;
let fails = 0;
const say = (ok, what, extra) => {
  n++;
  console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${what}${extra ? ` # ${extra}` : ''}`);
  if (!ok) fails++;
};

(async () => {
  const files = ['tests/data/tokenizers/gpt2.tokenizer.json', 'tests/data/tokenizers/roberta-base.tokenizer.json',
    'tests/data/tokenizers/t5-small.tokenizer.json'];
  for (const rel of files) {
    const name = path.basename(rel);
    if (!fs.existsSync(`${ROOT}/${rel}`)) {
      n++;
      console.log(`ok ${n} - ${name} with swapped normalizers # SKIP not in this build's test data`);
      continue;
    }
    const doc = JSON.parse(fs.readFileSync(`${ROOT}/${rel}`, 'utf8'));
    const variants = [['its own', doc.normalizer], ...Object.entries(swapped)];
    if (doc.normalizer) variants.push([`its own, then Lowercase`, { type: 'Sequence', normalizers: [doc.normalizer, { type: 'Lowercase' }] }]);
    const own = pairshard(doc);
    if (own.err) {
      n++;
      console.log(`ok ${n} - ${name} with swapped normalizers # SKIP this build cannot load it: ${own.err}`);
      continue;
    }
    for (const [vname, norm] of variants) {
      const d2 = { ...doc, normalizer: norm };
      const got = vname === 'its own' ? own : pairshard(d2);
      if (got.err) {
        say(false, `${name}, normalizer ${vname}: pairshard failed: ${got.err}`);
        continue;
      }
      const t = hf.Tokenizer.fromString(JSON.stringify(d2));
      let bad = 0;
      let first = '';
      for (let i = 0; i < recs.length; i++) {
        const e = await t.encode(recs[i].question, recs[i].sql, { addSpecialTokens: true });
        const want = JSON.stringify(e.getIds());
        const have = JSON.stringify(got.rows[i].input_ids);
        if (have !== want && !bad++) first = `${recs[i].id}: HF ${want.slice(0, 160)} pairshard ${have.slice(0, 160)}`;
      }
      say(!bad, `${name}, normalizer ${vname}: ${recs.length - bad}/${recs.length} pairs id for id`);
      if (bad) console.log(`# ${first}`);
    }
  }
  console.log(`1..${n}`);
  process.exit(fails ? 1 : 0);
})();
