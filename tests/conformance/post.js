// Differential test of added tokens, post-processors and decoders against
// HuggingFace tokenizers (the node binding): random tokenizer.json files
// (a WordLevel model holding the tokens) and texts, encoded and decoded by
// HF and by pairshard's components through tests/tools/hf_post_tool.
//   node post.js TOOL [SEED]     prints TAP; exits 1 on any mismatch
'use strict';
const hf = require('tokenizers');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');

const TOOL = process.argv[2];
let seed = Number(process.argv[3] || 12345) >>> 0;
function rnd(n) { // xorshift32: the same cases on every run
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed % n;
}
const pick = (a) => a[rnd(a.length)];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ps-post-'));
let n = 0, failed = 0;
function ok(cond, name, detail) {
  n++;
  if (cond) { console.log(`ok ${n} - ${name}`); return; }
  failed++;
  console.log(`not ok ${n} - ${name}`);
  if (detail) console.log('# ' + detail.replace(/\n/g, '\n# '));
}

function runTool(json, requests) {
  const f = path.join(tmp, 't.json');
  fs.writeFileSync(f, json);
  const r = spawnSync(TOOL, [f], { maxBuffer: 1 << 28, input: requests.map((q) => JSON.stringify(q)).join('\n') + '\n' });
  const out = r.stdout.toString();
  if (out.startsWith('load:')) return { load: out.trim() };
  return { lines: out.trim().split('\n').filter((l) => l).map((l) => JSON.parse(l)) };
}

const CONTENTS = ['<x>', '<xy>', 'x', 'xy', 'ab', 'AB', '<|im_start|>', '<|im_end|>', ' ab', 'a\n',
  'b', '[CLS]', '<s>', 'é', 'ab ', 'ba'];
const WORDS = ['a', 'b', 'ab', 'hello', 'x', '<s>', '[CLS]', '[SEP]', 'a ', ' a', 'é'];
const FRAGS = ['a', 'b', 'x', 'y', ' ', '  ', '\n', '\t', '<x>', '<xy>', 'AB', 'ab', 'é', '中',
  'Ⓐ', '_', '1', '\u00a0', '\u3000', '<|im_start|>', '<|im_end|>', '[CLS]', '<s>', 'hello', '.'];

function randomAdded(vocabSize) {
  const added = [];
  const k = 1 + rnd(6);
  for (let i = 0; i < k; i++) {
    added.push({
      id: vocabSize + rnd(4) * (rnd(2) ? 1 : 0) + i, content: pick(CONTENTS),
      single_word: rnd(3) === 0, lstrip: rnd(3) === 0, rstrip: rnd(3) === 0,
      normalized: rnd(2) === 0, special: rnd(2) === 0,
    });
  }
  return added;
}

const PROCESSORS = [
  null,
  { type: 'BertProcessing', sep: ['[SEP]', 7], cls: ['[CLS]', 6] },
  { type: 'RobertaProcessing', sep: ['<s>', 5], cls: ['[CLS]', 6], trim_offsets: true, add_prefix_space: false },
  { type: 'RobertaProcessing', sep: ['<s>', 5], cls: ['[CLS]', 6] }, // HF: a BertProcessing
  { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false },
  { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: 'M', type_id: 2 } }],
    pair: [{ Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: 'M', type_id: 0 } }, { Sequence: { id: 'A', type_id: 3 } }],
    special_tokens: { '[CLS]': { id: '[CLS]', ids: [6], tokens: ['[CLS]'] }, M: { id: 'M', ids: [1, 2, 1], tokens: ['a'] } } },
  { type: 'Sequence', processors: [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    { type: 'BertProcessing', sep: ['[SEP]', 7], cls: ['[CLS]', 6] }] },
];

function tokenizerJson(added, opts) {
  const vocab = {};
  WORDS.forEach((w, i) => { vocab[w] = i; });
  vocab['[UNK]'] = WORDS.length;
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: opts.lower ? { type: 'Lowercase' } : null,
    pre_tokenizer: opts.ws ? { type: 'WhitespaceSplit' } : null,
    post_processor: opts.post, decoder: opts.decoder || null,
    model: { type: 'WordLevel', vocab, unk_token: '[UNK]' },
  });
}

function randomText(ascii) {
  let s = '';
  const k = rnd(8);
  for (let i = 0; i < k; i++) {
    let f = pick(FRAGS);
    if (ascii && /[^\x00-\x7f]/.test(f)) f = 'a';
    s += f;
  }
  return s;
}

async function encodeCases(rounds) {
  let agree = 0, total = 0;
  const bad = [];
  for (let r = 0; r < rounds; r++) {
    const opts = { lower: rnd(3) === 0, ws: rnd(3) === 0, post: pick(PROCESSORS) };
    const added = randomAdded(WORDS.length + 1);
    const json = tokenizerJson(added, opts);
    const t = hf.Tokenizer.fromString(json);
    const reqs = [];
    const want = [];
    for (let i = 0; i < 12; i++) {
      const a = randomText(opts.lower);
      const b = rnd(2) ? randomText(opts.lower) : null;
      const e = await t.encode(a, b, { addSpecialTokens: true });
      reqs.push(b === null ? { a } : { a, b });
      want.push({ ids: e.getIds(), types: e.getTypeIds() });
    }
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push(Array.from({ length: rnd(6) }, () => rnd(WORDS.length + 8)));
    for (const x of ids) {
      for (const skip of [false, true]) {
        reqs.push({ ids: x, skip });
        want.push({ text: await t.decode(x, skip) });
      }
    }
    const got = runTool(json, reqs);
    if (got.load) { bad.push(`load failed: ${got.load}\n${json}`); total++; continue; }
    reqs.forEach((q, i) => {
      total++;
      const g = got.lines[i] || {};
      const w = want[i];
      const same = w.text !== undefined ? g.text === w.text
        : JSON.stringify(g.ids) === JSON.stringify(w.ids) && JSON.stringify(g.types) === JSON.stringify(w.types);
      if (same) agree++;
      else if (bad.length < 5) bad.push(`${json}\nrequest ${JSON.stringify(q)}\nHF ${JSON.stringify(w)}\npairshard ${JSON.stringify(g)}`);
    });
  }
  ok(agree === total, `added tokens + post-processors + decode: ${agree}/${total} requests as HF`, bad.join('\n---\n'));
}

const DECODERS = [
  { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first' },
  { type: 'Metaspace', replacement: '▁', prepend_scheme: 'never', split: false },
  { type: 'Metaspace', replacement: '▁', add_prefix_space: true },
  { type: 'ByteFallback' },
  { type: 'Fuse' },
  { type: 'Strip', content: ' ', start: 1, stop: 0 },
  { type: 'Strip', content: 'é', start: 2, stop: 1 },
  { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
  { type: 'Replace', pattern: { String: '' }, content: '|' },
  { type: 'Replace', pattern: { Regex: 'a+' }, content: 'X' },
  { type: 'WordPiece', prefix: '##', cleanup: true },
  { type: 'WordPiece', prefix: '', cleanup: false },
  { type: 'BPEDecoder', suffix: '</w>' },
  { type: 'BPEDecoder', suffix: '' },
  { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: true },
  { type: 'CTC', pad_token: '<pad>', word_delimiter_token: '|', cleanup: false },
  { suffix: '</w>' }, // HF's legacy untagged form: a BPEDecoder
  { type: 'Unknown', prefix: '##', cleanup: false }, // untagged: a WordPiece
  { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' },
    { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
  { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true }] },
];
const TOKS = ['▁', '▁hé', 'llo', '##lo', '<0x61>', '<0xE2>', '<0x82>', '<0xAC>', '<0xC3>', '<0x+6>',
  '<0xZZ>', 'Ġa', 'Ã©', 'ðŁ', 'ĺĢ', 'a</w>', 'b</w>c', '<pad>', '|', 'aa', ' .', ' ,', ' do', ' not',
  'n\'t', ' \'s', 'é', 'éé', 'a ', ' ', 'x', '\u00a0', 'ab'];

// HF's Strip indexes past a token or cuts across itself (a panic that
// aborts node) when the token is all `content` within start/stop reach.
function stripPanics(tok, dec) {
  const ch = [...tok];
  let startCut = 0, stopCut = ch.length;
  for (let i = 0; i < Math.min(dec.start, ch.length) && ch[i] === dec.content; i++) startCut = i + 1;
  for (let i = 0; i < dec.stop; i++) {
    const k = ch.length - i - 1;
    if (k < 0) return true;
    if (ch[k] !== dec.content) break;
    stopCut = k;
  }
  return startCut > stopCut;
}

function decoderCases(rounds) {
  let agree = 0, total = 0;
  const bad = [];
  for (const dec of DECODERS) {
    const json = tokenizerJson([], { post: null, decoder: dec });
    const d = hf.Tokenizer.fromString(json).getDecoder();
    const reqs = [], want = [];
    for (let r = 0; r < rounds; r++) {
      const toks = Array.from({ length: rnd(7) }, () => pick(TOKS));
      if (dec.type === 'Strip' && toks.some((x) => stripPanics(x, dec))) continue; // HF aborts
      let w;
      try { w = d.decode(toks); } catch (e) { continue; }
      reqs.push({ tokens: toks });
      want.push(w);
    }
    const got = runTool(json, reqs);
    reqs.forEach((q, i) => {
      total++;
      const g = got.lines ? got.lines[i] : got;
      if (g && g.text === want[i]) agree++;
      else if (bad.length < 5) bad.push(`${JSON.stringify(dec)} ${JSON.stringify(q.tokens)}\nHF ${JSON.stringify(want[i])}\npairshard ${JSON.stringify(g)}`);
    });
  }
  ok(agree === total, `decoders: ${agree}/${total} token lists as HF`, bad.join('\n---\n'));
}

// Files HF refuses must be refused; files it loads must load.
function loadCases() {
  const T = (single, pair, sp) => ({ type: 'TemplateProcessing', single, pair, special_tokens: sp });
  const S = (id, type_id) => ({ Sequence: { id, type_id } });
  const cases = [
    ['added token without single_word', { added: [{ id: 20, content: '<x>' }] }],
    ['added token without id', { added: [{ content: '<x>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }] }],
    ['template given as a string', { post: { type: 'TemplateProcessing', single: '[CLS] $A', pair: '$A $B', special_tokens: {} } }],
    ['template piece without type_id', { post: T([{ Sequence: { id: 'A' } }], [S('A', 0)], {}) }],
    ['template without pair', { post: { type: 'TemplateProcessing', single: [S('A', 0)], special_tokens: {} } }],
    ['template sequence "a"', { post: T([S('a', 0)], [S('A', 0)], {}) }],
    ['special token without tokens', { post: T([S('A', 0)], [S('A', 0)], { X: { id: 'X', ids: [1] } }) }],
    ['special_tokens as a list', { post: T([S('A', 0)], [S('A', 0)], [{ id: 'X', ids: [1], tokens: ['a'] }]) }],
    ['ByteLevel processor without its flags', { post: { type: 'ByteLevel' } }],
    ['Bert sep of three', { post: { type: 'BertProcessing', sep: ['<s>', 3, 5], cls: ['a', 1] } }],
    ['Bert negative id', { post: { type: 'BertProcessing', sep: ['<s>', -1], cls: ['a', 1] } }],
    ['Sequence processor without type', { post: { processors: [] } }],
    ['ByteLevel decoder without its flags', { decoder: { type: 'ByteLevel' } }],
    ['Metaspace decoder without replacement', { decoder: { type: 'Metaspace' } }],
    ['Metaspace add_prefix_space false, scheme always', { decoder: { type: 'Metaspace', replacement: '▁', add_prefix_space: false } }],
    ['Metaspace replacement of two characters', { decoder: { type: 'Metaspace', replacement: 'ab' } }],
    ['Metaspace prepend_scheme null', { decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: null } }],
    ['WordPiece decoder without prefix', { decoder: { type: 'WordPiece' } }],
    ['Strip content of two characters', { decoder: { type: 'Strip', content: 'ab', start: 1, stop: 0 } }],
    ['loads: Roberta without flags (a Bert)', { post: { type: 'RobertaProcessing', sep: ['<s>', 3], cls: ['a', 1] } }],
    ['loads: template of any type', { post: T([S('A', 0)], [S('B', 0)], {}) }],
    ['loads: template missing a pair token', { post: T([S('A', 0)], [{ SpecialToken: { id: 'Q', type_id: 0 } }, S('A', 0)], {}) }],
    ['loads: Bert with a numeric type', { post: { type: 5, sep: ['<s>', 3], cls: ['a', 1] } }],
    ['loads: Metaspace split null', { decoder: { type: 'Metaspace', replacement: '▁', split: null } }],
    ['loads: ByteFallback with an extra member', { decoder: { type: 'ByteFallback', x: 1 } }],
    ['loads: legacy BPE decoder', { decoder: { suffix: '</w>' } }],
  ];
  for (const [name, c] of cases) {
    const json = tokenizerJson(c.added || [], { post: c.post === undefined ? null : c.post, decoder: c.decoder });
    let hfOk = true;
    try { hf.Tokenizer.fromString(json); } catch (e) { hfOk = false; }
    const got = runTool(json, []);
    ok(hfOk === !got.load, `${name}: HF ${hfOk ? 'loads' : 'refuses'}, pairshard ${got.load ? 'refuses' : 'loads'}`,
      got.load || '');
  }
}

// single_word's word characters (Rust regex's \w, Unicode 16): every code
// point above ASCII before an added token "X", encoded by both.
async function wordCharSweep() {
  const json = JSON.stringify({ version: '1.0', truncation: null, padding: null,
    added_tokens: [{ id: 1, content: 'X', single_word: true, lstrip: false, rstrip: false, normalized: false, special: false }],
    normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' } });
  const t = hf.Tokenizer.fromString(json);
  const texts = [];
  for (let c = 0x80; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) texts.push(String.fromCodePoint(c) + 'X');
  const want = [];
  for (let i = 0; i < texts.length; i += 20000) {
    const enc = await t.encodeBatch(texts.slice(i, i + 20000), { addSpecialTokens: false });
    for (const e of enc) want.push(e.getIds().length);
  }
  const got = runTool(json, texts.map((a) => ({ a })));
  const bad = [];
  texts.forEach((s, i) => {
    if (!got.lines || !got.lines[i] || got.lines[i].ids.length !== want[i]) bad.push(s.codePointAt(0).toString(16));
  });
  ok(!bad.length, `single_word: ${texts.length - bad.length}/${texts.length} code points before a token judged as HF`,
    bad.slice(0, 40).join(' '));
}

(async () => {
  loadCases();
  if (process.env.POST_SWEEP !== '0') await wordCharSweep();
  await encodeCases(Number(process.env.POST_ROUNDS || 150));
  decoderCases(Number(process.env.POST_ROUNDS || 150));
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`1..${n}`);
  process.exit(failed ? 1 : 0);
})();
