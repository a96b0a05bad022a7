// Differential test of pairshard's Unigram model and Precompiled (SentencePiece
// charsmap) normalizer against HuggingFace tokenizers (the pinned node
// binding), each component on its own, through tests/tools/unigram_drive.
//
//  - the normalizer: hf.precompiled(T5's charsmap bytes).normalizeString(s)
//    on Spider questions and SQL, hand-written Chinese, emoji, combining
//    marks and line ends, every Unicode scalar value in runs of 64
//    consecutive code points, every scalar value after a key character
//    (U+00A0, U+FF21: cluster boundaries), and every BMP code point followed by a
//    combining acute, a ZWJ, a variation selector;
//  - the model: a tokenizer.json holding only T5's Unigram model (no
//    normalizer, pre-tokenizer, added tokens or post-processor) on the same
//    text, whole and as Metaspace pieces;
//  - hand-made piece tables, generated from a seed: tied scores, duplicated
//    and empty pieces, the literal "<unk>", byte_fallback with and without
//    every <0xXX>, no unk_id at all (HF's error must be ours).
// Prints TAP; exits 1 on any mismatch.
//
// usage: node unigram_model.js DRIVER   (env PS_ROOT: repository root;
// PS_FUZZ_SEED, PS_FUZZ_COUNT change the generated cases)
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('tokenizers');
const { tapCounter, tempDir } = require('./common');

const DRIVE = process.argv[2];
const ROOT = process.env.PS_ROOT || path.join(__dirname, '..', '..');
const DATA = path.join(ROOT, 'tests', 'data');
const TMP = tempDir('pairshard-unigram-');

const TAP = tapCounter();
const tap = TAP.tap;

// Runs the driver on lines; returns its output lines, parsed.
function drive(mode, jsonPath, lines) {
  const r = spawnSync(DRIVE, [mode, jsonPath], {
    input: lines.map((s) => JSON.stringify(s)).join('\n') + '\n',
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${DRIVE} ${mode}: exit ${r.status}: ${r.stderr}`);
  const out = r.stdout.split('\n');
  out.pop();
  return out.map((l) => JSON.parse(l));
}

// Compares two lists; reports the first few differences.
function compare(what, inputs, want, got) {
  let bad = 0;
  for (let i = 0; i < inputs.length; i++) {
    const a = JSON.stringify(want[i]);
    const b = JSON.stringify(got[i]);
    if (a !== b) {
      if (++bad <= 5) console.log(`# ${what}: input ${JSON.stringify(inputs[i])}\n#   hf   ${a}\n#   ours ${b}`);
    }
  }
  tap(bad === 0 && want.length === got.length, `${what}: ${inputs.length} inputs${bad ? `, ${bad} differ` : ''}`);
}

// ---- inputs -----------------------------------------------------------------

function spiderText() {
  const out = [];
  for (const f of ['dev.json', 'train.json']) {
    for (const r of JSON.parse(fs.readFileSync(path.join(DATA, 'spider', f), 'utf8'))) {
      out.push(r.question, r.query);
    }
  }
  return out;
}

const HANDWRITTEN = [
  '有多少歌手？', '列出所有歌手的名字和国家，按年龄从大到小排序。', '“双引号”和‘单引号’',
  '日本語のテキスト、カタカナ ｶﾀｶﾅ と全角ＡＢＣ１２３', '한국어 텍스트 한글', 'Ελληνικά και русский текст',
  '👍🏽 👨‍👩‍👧‍👦 🇫🇷🇩🇪 ❤️ 1️⃣ 🏳️‍🌈 😀😃', 'e\u0301 a\u0300\u0301 Ａ\u0301 ﬁ\u0301 x\u20dd',
  'ﬁ ﬂ ﬀ ﬃ ™ № ½ ² ㎏ ㍿ Ⅻ ⑩ ⒜', 'a\r\nb\rc\nd\te\u000bf\u000cg\u0085h\u2028i',
  'tab\there  two  spaces\u00a0nbsp\u3000ideographic', 'zero\u200bwidth\u200c\u200d\ufeffbom',
  '\u0000nul\u0001ctl\u007f\u009f', 'ｓｅｌｅｃｔ　＊　ｆｒｏｍ　ｔ１', 'ก้ำ क्षि ক্ষ நி', '각 각',
  '\u0600\u0661 \u0915\u094d\u0937', 'SELECT T1.name FROM singer AS T1 WHERE T1.age > 30;',
];

// ---- the normalizer --------------------------------------------------------

function b64bytes(s) {
  return Array.from(Buffer.from(s, 'base64'));
}

function testNormalizer(t5) {
  const cm = t5.normalizer.precompiled_charsmap;
  const norm = hf.precompiled(b64bytes(cm));
  const file = path.join(TMP, 'norm.json');
  fs.writeFileSync(file, JSON.stringify({ normalizer: t5.normalizer, model: null }));
  const check = (what, inputs) => compare(what, inputs, inputs.map((s) => norm.normalizeString(s)),
    drive('norm', file, inputs));
  check('charsmap: Spider questions and SQL', spiderText());
  check('charsmap: Chinese, emoji, combining marks, line ends', HANDWRITTEN);
  const runs = [];
  for (let cp = 0; cp <= 0x10ffff; cp += 64) {
    let s = '';
    for (let c = cp; c < cp + 64 && c <= 0x10ffff; c++) {
      if (c < 0xd800 || c > 0xdfff) s += String.fromCodePoint(c);
    }
    if (s) runs.push(s);
  }
  check('charsmap: every scalar value, runs of 64', runs);
  // U+00A0 and U+FF21 are keys (2 and 3 bytes, so a cluster of one and
  // any BMP character is looked up whole): wherever a cluster boundary
  // after (or before) them differs from unicode-segmentation's, the output
  // differs.
  for (const key of ['\u00a0', '\uff21']) {
    const keyed = [];
    for (let cp = 0; cp <= 0x10ffff; cp += 64) {
      let s = '';
      for (let c = cp; c < cp + 64 && c <= 0x10ffff; c++) {
        if (c < 0xd800 || c > 0xdfff) s += key + String.fromCodePoint(c);
      }
      if (s) keyed.push(s);
    }
    check(`charsmap: every scalar value after the key U+${key.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`, keyed);
  }
  for (const [name, tail] of [['U+0301', '\u0301'], ['ZWJ', '\u200d'], ['VS16', '\ufe0f']]) {
    const pairs = [];
    for (let cp = 0; cp < 0x10000; cp += 32) {
      let s = '';
      for (let c = cp; c < cp + 32; c++) if (c < 0xd800 || c > 0xdfff) s += String.fromCodePoint(c) + tail;
      if (s) pairs.push(s);
    }
    check(`charsmap: every BMP code point followed by ${name}`, pairs);
  }
}

// ---- the model ---------------------------------------------------------------

function modelOnly(model) {
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: null, post_processor: null, decoder: null, model,
  };
}

async function hfIds(tok, inputs) {
  const out = [];
  for (const s of inputs) {
    try {
      const e = await tok.encode(s, null, { addSpecialTokens: false });
      out.push(e.getIds());
    } catch (err) {
      out.push({ error: 'hf' });
    }
  }
  return out;
}

function normalizeErrors(list) {
  return list.map((x) => (Array.isArray(x) ? x : { error: 'hf' }));
}

async function testModel(what, model, inputs) {
  const json = modelOnly(model);
  const file = path.join(TMP, 'model.json');
  fs.writeFileSync(file, JSON.stringify(json));
  const tok = hf.Tokenizer.fromString(JSON.stringify(json));
  compare(what, inputs, await hfIds(tok, inputs), normalizeErrors(drive('model', file, inputs)));
}

// Deterministic generator (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A random piece table over a small alphabet, scores from a few values (ties).
function randomModel(r, opts) {
  const alpha = ['a', 'b', 'c', 'é', '中', '😀', '\u0301'];
  const pick = (a) => a[Math.floor(r() * a.length)];
  const scores = [-1, -2, -2.5, -3, -0.5, 0, -1e-9, -7.25];
  const vocab = [];
  if (opts.unk) vocab.push(['<unk>', pick(scores)]);
  const count = 3 + Math.floor(r() * 25);
  for (let i = 0; i < count; i++) {
    let p = '';
    const len = 1 + Math.floor(r() * 4);
    for (let k = 0; k < len; k++) p += pick(alpha);
    vocab.push([p, pick(scores)]);
    if (r() < 0.1) vocab.push([p, pick(scores)]); // a duplicate: the later wins
  }
  if (r() < 0.2) vocab.push(['', pick(scores)]);
  if (opts.bytes) {
    for (let b = 0; b < 256; b++) {
      if (opts.bytes === 'all' || r() < 0.7) vocab.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, pick(scores)]);
    }
  }
  for (let i = vocab.length - 1; i > 0; i--) { // shuffle so unk is anywhere
    const j = Math.floor(r() * (i + 1));
    [vocab[i], vocab[j]] = [vocab[j], vocab[i]];
  }
  const unkId = vocab.findIndex((v) => v[0] === '<unk>');
  const model = { type: 'Unigram', unk_id: opts.unk ? unkId : null, vocab, byte_fallback: !!opts.bytes };
  const texts = [];
  for (let i = 0; i < 20; i++) {
    let s = '';
    const len = 1 + Math.floor(r() * 12);
    for (let k = 0; k < len; k++) s += r() < 0.15 ? pick(['x', 'Ω', '<unk>', '🙂']) : pick(alpha);
    texts.push(s);
  }
  return { model, texts };
}

async function main() {
  if (!DRIVE) {
    console.error('usage: node unigram_model.js DRIVER');
    process.exit(2);
  }
  const t5 = JSON.parse(fs.readFileSync(path.join(DATA, 'tokenizers', 't5-small.tokenizer.json'), 'utf8'));
  testNormalizer(t5);

  const spider = spiderText().slice(0, 4000);
  await testModel('t5 model: Spider text, whole lines', t5.model, spider);
  const pieces = [];
  for (const s of spider.concat(HANDWRITTEN)) for (const w of s.split(/\s+/)) if (w) pieces.push('\u2581' + w);
  await testModel('t5 model: Spider and hand-written text as Metaspace pieces', t5.model, pieces);
  await testModel('t5 model: Chinese, emoji, combining marks, line ends', t5.model, HANDWRITTEN);

  const seed = Number(process.env.PS_FUZZ_SEED || 20261203);
  const count = Number(process.env.PS_FUZZ_COUNT || 150);
  const r = rng(seed);
  for (const opts of [{ unk: true }, { unk: true, bytes: 'all' }, { unk: true, bytes: 'some' }, { unk: false }]) {
    const models = [];
    const cases = [];
    for (let i = 0; i < count; i++) {
      const { model, texts } = randomModel(r, opts);
      models.push(model);
      cases.push(texts);
    }
    let bad = 0;
    for (let i = 0; i < count; i++) {
      const json = modelOnly(models[i]);
      const file = path.join(TMP, 'rand.json');
      fs.writeFileSync(file, JSON.stringify(json));
      const tok = hf.Tokenizer.fromString(JSON.stringify(json));
      const want = await hfIds(tok, cases[i]);
      const got = normalizeErrors(drive('model', file, cases[i]));
      for (let k = 0; k < want.length; k++) {
        if (JSON.stringify(want[k]) !== JSON.stringify(got[k]) && ++bad <= 3) {
          console.log(`# model ${JSON.stringify(models[i])}\n# text ${JSON.stringify(cases[i][k])}: hf ${JSON.stringify(want[k])} ours ${JSON.stringify(got[k])}`);
        }
      }
    }
    tap(bad === 0, `random piece tables ${JSON.stringify(opts)} (seed ${seed}): ${count} tables x 20 texts${bad ? `, ${bad} differ` : ''}`);
  }
  console.log(`1..${TAP.count()}`);
  process.exit(TAP.failures() ? 1 : 0);
}

main().catch((e) => {
  console.log(`not ok ${TAP.count() + 1} - ${e.stack}`);
  console.log(`1..${TAP.count() + 1}`);
  process.exit(1);
});
