// Differential test of the tokenizer.json models (BPE, WordLevel,
// WordPiece) against HuggingFace tokenizers 0.23.2, piece by piece.
//
// For each model, HF encodes every piece through a tokenizer.json holding
// only that model (no normalizer, no pre-tokenizer: the whole input is one
// piece), and pairshard encodes the same pieces through the test driver
// (build/tests/test_tok_bpe --encode MODEL.json). Ids must agree; so must
// failures (a model HF refuses to load, a piece HF cannot encode).
//
// Models: GPT-2 on the pieces its ByteLevel pre-tokenizer makes of Spider
// questions and queries; hand-made models covering each option; random
// SentencePiece-converted-style models (several merges per token, so HF's
// queue of stale entries matters) on random words, short and long.
//
// usage: node bpe_model.js [DRIVER]   (env PS_ROOT: the repository root)
// Prints TAP; exits 1 on any mismatch.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('./node_modules/tokenizers');

const root = process.env.PS_ROOT || path.resolve(__dirname, '../..');
const driver = process.argv[2] || path.join(root, 'build/tests/test_tok_bpe');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bpe-model-'));
let n = 0, failed = 0;

function wrap(model) {
  return JSON.stringify({ version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, model });
}

async function hfIds(model, pieces) {
  let tok;
  try { tok = hf.Tokenizer.fromString(wrap(model)); } catch (e) { return { loadError: String(e) }; }
  const out = [];
  for (const p of pieces) {
    try {
      const e = await tok.encode(p, null, { addSpecialTokens: false });
      out.push(JSON.stringify(e.getIds()));
    } catch (e) { out.push('ERR'); }
  }
  return { ids: out };
}

function ourIds(model, pieces) {
  const file = path.join(tmp, 'model.json');
  fs.writeFileSync(file, JSON.stringify(model));
  const r = spawnSync(driver, ['--encode', file],
    { input: pieces.map((p) => JSON.stringify(p)).join('\n') + '\n', maxBuffer: 1 << 28 });
  if (r.status !== 0) return { crash: `driver exit ${r.status} ${r.stderr}` };
  const lines = r.stdout.toString().split('\n').slice(0, -1);
  if (lines.length && lines[0].startsWith('LOADERR')) return { loadError: lines[0] };
  return { ids: lines.map((l) => (l.startsWith('ERR') ? 'ERR' : l)) };
}

async function check(name, model, pieces) {
  pieces = [...new Set(pieces.filter((p) => p.length))];
  const want = await hfIds(model, pieces);
  const got = ourIds(model, pieces);
  n++;
  let why = null;
  if (got.crash) why = got.crash;
  else if (want.loadError || got.loadError) {
    if (!(want.loadError && got.loadError))
      why = `load: HF ${want.loadError || 'ok'}, ours ${got.loadError || 'ok'}`;
  } else {
    let bad = 0, first = null;
    for (let i = 0; i < pieces.length; i++)
      if (want.ids[i] !== got.ids[i]) {
        bad++;
        if (!first) first = `${JSON.stringify(pieces[i])}: HF ${want.ids[i]}, ours ${got.ids[i]}`;
      }
    if (bad) why = `${bad} of ${pieces.length} pieces differ; first ${first}`;
  }
  if (why) { failed++; console.log(`not ok ${n} - ${name}: ${why}`); }
  else console.log(`ok ${n} - ${name} (${pieces.length} pieces${want.loadError ? ', both refuse to load' : ''})`);
}

// ---- GPT-2 on Spider -------------------------------------------------------

function spiderTexts() {
  const out = [];
  for (const f of ['dev.json', 'train.json']) {
    const recs = JSON.parse(fs.readFileSync(path.join(root, 'tests/data/spider', f), 'utf8'));
    for (const r of recs) out.push(r.question, r.query);
  }
  return out;
}

async function gpt2() {
  const text = fs.readFileSync(path.join(root, 'tests/data/tokenizers/gpt2.tokenizer.json'), 'utf8');
  const tok = hf.Tokenizer.fromString(text);
  const pre = tok.getPreTokenizer();
  let pieces = [];
  for (const t of spiderTexts()) for (const [p] of pre.preTokenizeString(t)) pieces.push(p);
  // long pieces take the heap path; odd characters the byte-level ones
  for (const t of ['supercalifragilisticexpialidocious', 'internationalization'.repeat(4),
    ' 北京大学的学生', ' naïve café', '\t\n\r', ' 😀🎉', ' ' + 'x'.repeat(300)])
    for (const [p] of pre.preTokenizeString(t)) pieces.push(p);
  pieces = [...new Set(pieces)];
  const model = JSON.parse(text).model;
  await check('GPT-2 BPE on the pieces of Spider dev and train questions and queries', model, pieces);
  const noType = Object.assign({}, model);
  delete noType.type;
  await check('GPT-2 BPE without "type" (untagged, as RoBERTa\'s file)', noType, pieces.slice(0, 2000));
  const tuples = Object.assign({}, model, { merges: model.merges.map((m) => m.split(' ')) });
  await check('GPT-2 BPE with ["a","b"] merges', tuples, pieces.slice(0, 2000));
  await check('GPT-2 BPE with ignore_merges', Object.assign({}, model, { ignore_merges: true }), pieces);
}

// ---- hand-made models ------------------------------------------------------

const ABC = { a: 0, b: 1, c: 2, ab: 3, bc: 4, abc: 5, '<unk>': 6, '<0x78>': 7, '<0x79>': 8,
  '<0xC3>': 9, '<0xA9>': 10, aa: 11, aaaa: 12 };
const words = ['abc', 'ab', 'cab', 'abab', 'aaa', 'aaaa', 'aaaaa', 'a'.repeat(33), 'axb', 'axyb',
  'azxb', 'éab', 'xy', 'b', 'c', 'abcabcabcabcabcabcabc', 'zz', 'abé', '中ab', 'ab中'];

async function handMade() {
  const bpe = (o) => Object.assign({ type: 'BPE', vocab: ABC, merges: ['b c', 'a b', 'a bc', 'a a', 'aa aa'] }, o);
  await check('BPE merge priority and ties', bpe({}), words);
  await check('BPE other rank order', bpe({ merges: ['a b', 'b c', 'ab c', 'aa aa', 'a a'] }), words);
  await check('BPE ["a","b"] merges', bpe({ merges: [['b', 'c'], ['a', 'b']] }), words);
  await check('BPE #version line', bpe({ merges: ['#version: 0.2', 'b c', 'a b'] }), words);
  await check('BPE duplicate merge (the later rank wins)', bpe({ merges: ['a b', 'b c', 'a b'] }), words);
  await check('BPE unk', bpe({ unk_token: '<unk>' }), words);
  await check('BPE fuse_unk', bpe({ unk_token: '<unk>', fuse_unk: true }), words);
  await check('BPE byte_fallback', bpe({ unk_token: '<unk>', byte_fallback: true }), words);
  await check('BPE byte_fallback, fuse_unk', bpe({ unk_token: '<unk>', byte_fallback: true, fuse_unk: true }), words);
  await check('BPE byte_fallback without unk', bpe({ byte_fallback: true }), words);
  await check('BPE unk token not in the vocabulary', bpe({ unk_token: '<zz>' }), words);
  await check('BPE ignore_merges', bpe({ ignore_merges: true, merges: ['a b'] }), words);
  await check('BPE dropout 0', bpe({ dropout: 0 }), words);
  await check('BPE dropout 1 (no merges)', bpe({ dropout: 1, ignore_merges: true }), words);
  await check('BPE dropout 2 (refused)', bpe({ dropout: 2 }), words);
  await check('BPE merge out of vocabulary (refused)', bpe({ merges: ['a q'] }), words);
  await check('BPE merge with three tokens (refused)', bpe({ merges: ['a b c'] }), words);
  await check('BPE mixed merge formats (refused)', bpe({ merges: [['a', 'b'], 'b c'] }), words);
  await check('BPE prefix and suffix', {
    type: 'BPE', continuing_subword_prefix: '##', end_of_word_suffix: '</w>', unk_token: '<unk>',
    vocab: { a: 0, '##b': 1, '##c</w>': 2, ab: 3, 'abc</w>': 4, b: 5, '##b</w>': 6, 'c</w>': 7,
      '<unk>': 8, 'b</w>': 9, '##a': 10, 'a</w>': 11, '##a</w>': 12 },
    merges: ['a ##b', 'ab ##c</w>'],
  }, words);
  await check('BPE prefix stripped from a merge\'s right token unconditionally', {
    type: 'BPE', continuing_subword_prefix: '#', vocab: { a: 0, '#b': 1, ab: 2, xb: 3, '#x': 4, 'b': 5 },
    merges: ['a #b', 'a xb'],
  }, ['ab', 'axb', 'abb']);
  await check('WordLevel', { type: 'WordLevel', vocab: { '<unk>': 0, select: 1, from: 2 }, unk_token: '<unk>' },
    ['select', 'from', 'where', 'SELECT']);
  await check('WordLevel without its unk token', { type: 'WordLevel', vocab: { select: 1 }, unk_token: '<unk>' },
    ['select', 'where']);
  await check('WordLevel untagged', { vocab: { '<unk>': 0, select: 1 }, unk_token: '<unk>' }, ['select', 'x']);
  const wp = { type: 'WordPiece', vocab: { '[UNK]': 0, un: 1, '##aff': 2, '##able': 3, a: 4, '##a': 5 },
    unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100 };
  const wpWords = ['unaffable', 'unx', 'a', 'aaaa', 'un', 'affable', 'unaff'];
  await check('WordPiece', wp, wpWords);
  await check('WordPiece max_input_chars_per_word 4', Object.assign({}, wp, { max_input_chars_per_word: 4 }), wpWords);
  const wpNoType = Object.assign({}, wp);
  delete wpNoType.type;
  await check('WordPiece untagged', wpNoType, wpWords);
  await check('unknown model type (refused)', { type: 'Foo', vocab: {} }, ['a']);
}

// ---- random converted-style models -----------------------------------------

function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}

// A vocabulary grown by joining tokens, and (as HF's SentencePiece
// converter writes them) a merge for every split of every token whose two
// halves are tokens, in token order: several pairs per token.
function randomModel(seed, opts, affix) {
  const r = rng(seed);
  const P = (affix && affix.prefix) || '', S = (affix && affix.suffix) || '';
  const alphabet = ['a', 'b', 'c', 'd', 'é', '中'];
  const toks = alphabet.slice();
  while (toks.length < 120) {
    const x = toks[Math.floor(r() * toks.length)], y = toks[Math.floor(r() * toks.length)];
    if ((x + y).length <= 7 && !toks.includes(x + y)) toks.push(x + y);
  }
  // with a prefix and a suffix each token comes in its four forms
  const forms = (t) => [...new Set([t, P + t, t + S, P + t + S])];
  const vocab = {};
  let id = 0;
  for (const t of toks) for (const f of forms(t)) if (!(f in vocab) && r() < 0.95) vocab[f] = id++;
  vocab['<unk>'] = id++;
  ['<0x7A>', '<0xC3>', '<0xB6>', '<0x23>'].forEach((b) => { vocab[b] = id++; });
  const merges = [];
  for (const t of toks) {
    const cs = [...t];
    for (let k = 1; k < cs.length; k++) {
      const a = cs.slice(0, k).join(''), b = cs.slice(k).join('');
      // (left form, right form): the right one carries the prefix the
      // merge strips; the merged token is then in the vocabulary
      for (const [x, y] of [[a, P + b], [P + a, P + b], [a, P + b + S], [P + a, P + b + S]]) {
        const joined = x + y.slice(P.length);
        if (x in vocab && y in vocab && joined in vocab) merges.push(`${x} ${y}`);
      }
    }
  }
  const uniq = [...new Set(merges)];
  for (let i = uniq.length - 1; i > 0; i--) { // shuffle part of the order
    if (r() < 0.3) { const j = Math.floor(r() * (i + 1)); [uniq[i], uniq[j]] = [uniq[j], uniq[i]]; }
  }
  const chars = alphabet.concat(['z', 'ö', 'q']);
  const pieces = [];
  for (let i = 0; i < 300; i++) {
    const len = 1 + Math.floor(r() * (i % 3 ? 12 : 48));
    let w = '';
    for (let k = 0; k < len; k++) w += chars[Math.floor(r() * chars.length)];
    pieces.push(w);
  }
  const model = { type: 'BPE', vocab, merges: uniq };
  if (P) model.continuing_subword_prefix = P;
  if (S) model.end_of_word_suffix = S;
  return { model: Object.assign(model, opts), pieces };
}

async function randomModels() {
  const variants = [{}, { unk_token: '<unk>' }, { unk_token: '<unk>', fuse_unk: true },
    { unk_token: '<unk>', byte_fallback: true }, { ignore_merges: true, unk_token: '<unk>' },
    { byte_fallback: true, fuse_unk: true, unk_token: '<unk>' }];
  const affixes = [null, { prefix: '##' }, { suffix: '</w>' }, { prefix: '##', suffix: '</w>' }];
  for (let seed = 1; seed <= 24; seed++) {
    const affix = affixes[seed % affixes.length];
    const { model, pieces } = randomModel(seed, variants[seed % variants.length], affix);
    const opts = Object.keys(model).filter((k) => !['type', 'vocab', 'merges'].includes(k));
    await check(`random converted-style BPE, seed ${seed} (${model.merges.length} merges; ${opts.join(', ') || 'no options'})`,
      model, pieces);
  }
}

// ---- WordPiece and WordLevel on real vocabularies ---------------------------

async function realWordModels() {
  const lines = fs.readFileSync(path.join(root, 'tests/data/vocab/bert-base-uncased.vocab.txt'), 'utf8')
    .split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const vocab = {};
  lines.forEach((l, i) => { vocab[l.trimEnd()] = i; });
  const pre = hf.bertPreTokenizer();
  const words = [];
  for (const t of spiderTexts()) for (const [w] of pre.preTokenizeString(t.toLowerCase())) words.push(w);
  const long = ['pneumonoultramicroscopicsilicovolcanoconiosis'.repeat(3), 'naïve', '北京', '😀'];
  await check('WordPiece bert-base-uncased on Spider words (BertPreTokenizer, lowercased)',
    { type: 'WordPiece', vocab, unk_token: '[UNK]', continuing_subword_prefix: '##',
      max_input_chars_per_word: 100 }, words.concat(long));
  const counts = new Map();
  for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
  const wl = { '<unk>': 0 };
  [...counts.entries()].filter(([, c]) => c > 3).forEach(([w], i) => { wl[w] = i + 1; });
  await check('WordLevel on Spider words (words seen more than 3 times, the rest unk)',
    { type: 'WordLevel', vocab: wl, unk_token: '<unk>' }, words);
}

(async () => {
  if (!fs.existsSync(driver)) {
    console.log(`1..0 # SKIP no driver at ${driver} (make build/tests/test_tok_bpe)`);
    return;
  }
  await handMade();
  await randomModels();
  await realWordModels();
  await gpt2();
  console.log(`1..${n}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
})();
