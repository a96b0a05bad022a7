// Differential test: `pairshard tokenize` against HuggingFace tokenizers
// (node binding, the version pinned in package-lock.json), built the way
// transformers' BertTokenizerFast builds a BERT tokenizer from vocab.txt.
//
// For both vocabularies in tests/data/vocab, on the Spider pairs and the
// hand-written torture set: the pair and each field alone, untruncated and
// truncated at 32 and 128, compared id for id (input_ids and
// token_type_ids). Then vocabularies without [PAD], with a BOM, CRLF,
// duplicates or HTML-escaped entries. Then every Unicode scalar value, through the four
// lowercase/strip_accents combinations and one without clean_text and
// Chinese padding, compared word for word after the normalizer and
// pre-tokenizer. Prints TAP; exits 1 on any mismatch.
//
// env: PAIRSHARD (the binary), PS_ROOT (repository root); PS_FUZZ_SEED and
// PS_FUZZ_COUNT change the generated records (default 20231202, 2000).
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('tokenizers');
const { requireEnv, tapCounter, tempDir } = require('./common');

const { PAIRSHARD, ROOT, DATA } = requireEnv('conformance.js');
const TMP = tempDir('pairshard-conf-');

const TAP = tapCounter();
const tap = TAP.tap;

const VOCABS = [
  // bert-base-uncased: do_lower_case true, strip_accents None (follows lowercase)
  { name: 'uncased', file: 'bert-base-uncased.vocab.txt', lowercase: true, flags: [] },
  // bert-base-chinese: do_lower_case false, so no lowercasing nor stripping
  { name: 'chinese', file: 'bert-base-chinese.vocab.txt', lowercase: false, flags: ['--no-lowercase'] },
];
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

// BertTokenizerFast's pipeline from a vocab file.
async function buildHf(vocabPath, normalizerOptions) {
  const model = await hf.WordPiece.fromFile(vocabPath, {
    unkToken: '[UNK]',
    continuingSubwordPrefix: '##',
    maxInputCharsPerWord: 100,
  });
  const tok = new hf.Tokenizer(model);
  tok.setNormalizer(hf.bertNormalizer({ cleanText: true, handleChineseChars: true, ...normalizerOptions }));
  // (normalizerOptions may turn cleanText / handleChineseChars off)
  tok.setPreTokenizer(hf.bertPreTokenizer());
  const cls = tok.tokenToId('[CLS]');
  const sep = tok.tokenToId('[SEP]');
  tok.setPostProcessor(hf.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1', [
    ['[CLS]', cls],
    ['[SEP]', sep],
  ]));
  tok.addSpecialTokens(SPECIALS);
  return tok;
}

function readJsonl(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

function writeJsonl(file, records) {
  fs.writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

function runPairshard(args) {
  const r = spawnSync(PAIRSHARD, ['tokenize', ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`pairshard ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

function firstDiff(a, b) {
  const m = Math.min(a.length, b.length);
  for (let i = 0; i < m; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : m;
}

function same(a, b) {
  return a.length === b.length && firstDiff(a, b) === -1;
}

// Prints one mismatch: the record, both lists, the first differing position.
function report(rec, field, ours, theirs) {
  const at = firstDiff(ours, theirs);
  console.log(`# MISMATCH record ${JSON.stringify(rec.id)} (${field}), first difference at position ${at}`);
  console.log(`#   question: ${JSON.stringify(rec.question)}`);
  console.log(`#   sql:      ${JSON.stringify(rec.sql)}`);
  console.log(`#   pairshard: ${JSON.stringify(ours)}`);
  console.log(`#   hf:        ${JSON.stringify(theirs)}`);
}

const BATCH = 512;
async function hfEncodeAll(tok, records, mode) {
  const out = [];
  for (let i = 0; i < records.length; i += BATCH) {
    const chunk = records.slice(i, i + BATCH);
    const encs = await Promise.all(chunk.map((r) => (mode === 'pair' ? tok.encode(r.question, r.sql) : tok.encode(r[mode]))));
    for (const e of encs) out.push({ ids: e.getIds(), types: e.getTypeIds() });
  }
  return out;
}

async function compareIds(label, tok, records, inputFile, args, mode, maxLength) {
  const outFile = path.join(TMP, 'out.jsonl');
  const fieldArgs = mode === 'pair' ? [] : ['--field', mode];
  const lenArgs = maxLength ? ['--max-length', String(maxLength)] : [];
  runPairshard([...args, ...fieldArgs, ...lenArgs, inputFile, '-o', outFile]);
  const ours = readJsonl(outFile);
  if (maxLength) tok.setTruncation(maxLength);
  else tok.disableTruncation();
  const theirs = await hfEncodeAll(tok, records, mode);
  let bad = 0;
  if (ours.length !== records.length) {
    console.log(`# pairshard wrote ${ours.length} lines for ${records.length} records`);
    bad++;
  }
  for (let i = 0; i < Math.min(ours.length, records.length); i++) {
    const o = ours[i];
    const t = theirs[i];
    const idsOk = o.id === records[i].id && same(o.input_ids, t.ids);
    const typesOk = same(o.token_type_ids, t.types);
    if (!idsOk || !typesOk) {
      if (bad < 5) {
        report(records[i], `${mode}${idsOk ? ' token_type_ids' : ''}`, idsOk ? o.token_type_ids : o.input_ids,
          idsOk ? t.types : t.ids);
      }
      bad++;
    }
  }
  tap(bad === 0, `${label} ${mode} max_length=${maxLength || 'none'}: ${records.length} records, ${bad} mismatches`);
}

// Every scalar value, in runs of consecutive code points (so combining
// marks meet their neighbours), through normalizer + pre-tokenizer.
function codePointRecords() {
  const recs = [];
  const RUN = 1024;
  let buf = [];
  let start = 0;
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    if (buf.length === 0) start = cp;
    buf.push(cp);
    if (buf.length === RUN || cp === 0x10ffff) {
      recs.push({ id: `U+${start.toString(16).toUpperCase()}`, question: String.fromCodePoint(...buf), sql: '' });
      buf = [];
    }
  }
  return recs;
}

async function compareWords(label, vocabPath, normalizerOptions, records, inputFile) {
  const tok = await buildHf(vocabPath, normalizerOptions);
  const jsonFile = path.join(TMP, `words-${label}.json`);
  tok.save(jsonFile);
  const outFile = path.join(TMP, 'words.jsonl');
  runPairshard(['--tokenizer-json', jsonFile, '--field', 'question', '--words', inputFile, '-o', outFile]);
  const ours = readJsonl(outFile);
  const norm = tok.getNormalizer();
  const pre = tok.getPreTokenizer();
  let bad = 0;
  for (let i = 0; i < records.length; i++) {
    const theirs = pre.preTokenizeString(norm.normalizeString(records[i].question)).map((w) => w[0]);
    const o = ours[i] ? ours[i].words : [];
    if (!same(o, theirs)) {
      if (bad < 5) {
        const at = firstDiff(o, theirs);
        const cps = (s) => (s === undefined ? 'none' : [...s].slice(0, 24).map((c) => 'U+' + c.codePointAt(0).toString(16).toUpperCase()).join(' ') + ([...s].length > 24 ? ' ...' : ''));
        console.log(`# MISMATCH ${records[i].id}: word ${at}: pairshard ${cps(o[at])} / hf ${cps(theirs[at])}`);
      }
      bad++;
    }
  }
  tap(bad === 0 && ours.length === records.length,
    `${label}: every code point (${records.length} runs) normalizes and splits as HF, ${bad} mismatches`);
}

// Seeded random records mixing the characters tokenizers disagree on:
// letters with accents and combining marks, CJK, Hangul, emoji and ZWJ,
// punctuation and SQL symbols, every kind of space, controls, special
// tokens, long runs. Deterministic, so a failure reproduces.
function fuzzRecords(count) {
  let seed = Number(process.env.PS_FUZZ_SEED || 20231202);
  const rnd = (n) => { // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const pools = [
    'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
    'éèêëàâäôöûüçñÉÈÀÇÑøåæœßıİĳǅΣσςΑΩабвгдЖЯ',
    '\u0300\u0301\u0302\u0308\u0323\u0327\u0345\u0591\u05b0\u064b\u0670\u093c\u0e31\u1dc0\u20d7\u302a\u0898\u1ab0',
    '的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年学生名字',
    '가나다라마바사아자차카타파하\u1100\u1161\u11a8ぁあいうえおアイウエオ',
    '😀👍🏽👨\u200d👩\u200d👧🇺🇸🍕🤣🫠❤️\ufe0f',
    '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~«»“”‘’…—–¿¡§¶·•、。，！？「」',
    ' \t\n\r\u00a0\u2000\u2003\u2009\u200a\u202f\u205f\u3000\u1680\u2028\u0085',
    '\u0000\u0001\u001f\u007f\u00ad\u200b\u200c\u200d\u2060\ufeff\ufffd\ue000\u0378\u180e\u0890',
  ];
  const pieces = ['[CLS]', '[SEP]', '[MASK]', '[UNK]', '[PAD]', '[mask]', 'SELECT', 'count(*)', '>=', '<>', "''", 'T1.name'];
  const recs = [];
  for (let i = 0; i < count; i++) {
    const field = () => {
      let out = '';
      const n = rnd(60);
      for (let k = 0; k < n; k++) {
        const r = rnd(20);
        if (r === 0) out += pieces[rnd(pieces.length)];
        else if (r === 1) out += 'x'.repeat(95 + rnd(10)); // around max_input_chars_per_word
        else {
          const pool = [...pools[rnd(pools.length)]];
          out += pool[rnd(pool.length)];
          if (rnd(3) === 0) out += ' ';
        }
      }
      return out;
    };
    recs.push({ id: `fuzz-${i}`, question: field(), sql: field() });
  }
  return recs;
}

async function main() {
  const spider = [];
  for (const split of ['train', 'dev']) {
    const arr = JSON.parse(fs.readFileSync(path.join(DATA, 'spider', `${split}.json`), 'utf8'));
    arr.forEach((r, i) => spider.push({ id: `${split}-${i}`, question: r.question, sql: r.query, label: r.db_id, source: split }));
  }
  const spiderFile = path.join(TMP, 'spider.jsonl');
  writeJsonl(spiderFile, spider);
  const tortureFile = path.join(DATA, 'torture', 'torture.jsonl');
  const torture = readJsonl(tortureFile);
  const fuzz = fuzzRecords(Number(process.env.PS_FUZZ_COUNT || 2000));
  const fuzzFile = path.join(TMP, 'fuzz.jsonl');
  writeJsonl(fuzzFile, fuzz);
  const sets = [
    { name: 'spider', records: spider, file: spiderFile },
    { name: 'torture', records: torture, file: tortureFile },
    { name: 'fuzz', records: fuzz, file: fuzzFile },
  ];

  for (const v of VOCABS) {
    const vocabPath = path.join(DATA, 'vocab', v.file);
    const tok = await buildHf(vocabPath, { lowercase: v.lowercase });
    const vocabArgs = ['--vocab', vocabPath, ...v.flags];
    for (const set of sets) {
      for (const mode of ['pair', 'question', 'sql']) {
        for (const maxLength of [0, 32, 128]) {
          await compareIds(`${v.name} --vocab ${set.name}`, tok, set.records, set.file, vocabArgs, mode, maxLength);
        }
      }
    }
    // The same through the tokenizer.json HF itself writes.
    const jsonFile = path.join(TMP, `${v.name}.tokenizer.json`);
    tok.save(jsonFile);
    for (const set of sets) {
      for (const maxLength of [0, 32]) {
        await compareIds(`${v.name} --tokenizer-json ${set.name}`, tok, set.records, set.file,
          ['--tokenizer-json', jsonFile], 'pair', maxLength);
      }
    }
  }

  // Damaged and unusual vocab.txt files, derived from bert-base-uncased:
  // without [PAD] (HF adds it as a new id), with a BOM on the first line,
  // CRLF endings, duplicated tokens, and HTML-escaped < > & entries.
  const uncasedText = fs.readFileSync(path.join(DATA, 'vocab', VOCABS[0].file), 'utf8');
  const lines = uncasedText.split('\n').filter((l, i, a) => i < a.length - 1 || l !== '');
  const variants = {
    'no-pad': lines.filter((l) => l !== '[PAD]'),
    'no-pad-no-mask': lines.filter((l) => l !== '[PAD]' && l !== '[MASK]'),
    bom: ['\ufeff' + lines[0], ...lines.slice(1)],
    crlf: lines.map((l) => l + '\r'),
    duplicates: [...lines, 'hello', 'the', '[PAD]'],
    'no-pad-duplicates': [...lines.filter((l) => l !== '[PAD]'), 'hello'],
    'html-escaped': lines.map((l) => l.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')),
  };
  const specialText = [
    ['[PAD] hello [MASK] world', 'select * from t where a < 1 and b > 2 & c'],
    ['[PAD][PAD] the [UNK] [CLS] x', '<a> &amp; &lt; [SEP] [MASK]'],
    ['hello [pad] [Pad] [ PAD ]', 'the the hello'],
  ].map(([q, sql], i) => ({ id: `special-${i}`, question: q, sql }));
  const damagedRecords = [...specialText, ...spider.slice(0, 300)];
  const damagedFile = path.join(TMP, 'damaged.jsonl');
  writeJsonl(damagedFile, damagedRecords);
  for (const [name, vlines] of Object.entries(variants)) {
    const vfile = path.join(TMP, `${name}.vocab.txt`);
    fs.writeFileSync(vfile, vlines.join('\n') + '\n');
    const vtok = await buildHf(vfile, { lowercase: true });
    for (const mode of ['pair', 'question']) {
      await compareIds(`vocab ${name}`, vtok, damagedRecords, damagedFile, ['--vocab', vfile], mode, 0);
    }
  }

  const cpRecords = codePointRecords();
  const cpFile = path.join(TMP, 'codepoints.jsonl');
  writeJsonl(cpFile, cpRecords);
  const uncased = path.join(DATA, 'vocab', VOCABS[0].file);
  const combos = [
    { lowercase: true },
    { lowercase: false },
    { lowercase: true, stripAccents: false },
    { lowercase: false, stripAccents: true },
    { lowercase: true, cleanText: false, handleChineseChars: false },
  ];
  for (const opts of combos) {
    await compareWords(`unicode ${JSON.stringify(opts)}`, uncased, opts, cpRecords, cpFile);
  }
  console.log(`1..${TAP.count()}`);
  process.exitCode = TAP.failures() ? 1 : 0;
}

main().catch((e) => {
  console.log(`not ok ${TAP.count() + 1} - conformance harness failed: ${e.message}`);
  console.log(`1..${TAP.count() + 1}`);
  process.exitCode = 1;
});
