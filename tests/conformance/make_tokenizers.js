// Writes the generated tokenizer.json files of tests/data/tokenizers/ that
// tokenizer_json.js compares with HuggingFace tokenizers. Deterministic: the
// same inputs (GPT-2's and T5's tokenizer.json, bert-base-uncased's vocab.txt,
// Spider train) give the same bytes. Every file is loaded back with the node
// binding (Tokenizer.fromString) and encodes a probe pair before it is
// written, so a file HF refuses never lands in the tree.
//
//   node tests/conformance/make_tokenizers.js [OUT_DIR]   (default tests/data/tokenizers)
//
// The small BPE and Unigram models are trained here on Spider train (a plain
// pair-frequency BPE, a substring-frequency Unigram table): their quality does
// not matter, only that they exercise the model's rules on realistic text.
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require('tokenizers');

const ROOT = path.resolve(__dirname, '..', '..');
const DATA = path.join(ROOT, 'tests', 'data');
const OUT = process.argv[2] || path.join(DATA, 'tokenizers');
const MAX_BYTES = 2 * 1024 * 1024;

// GPT-2 merges kept for the Llama-3 / Qwen2 style files: GPT-2's token id is
// 256 + merge rank, so the first N merges and the 256 byte tokens are
// exactly the ids 0..255+N (checked below).
const GPT2_MERGES = 8000;

const LLAMA3_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function spiderTexts() {
  const out = [];
  for (const r of readJson(path.join(DATA, 'spider', 'train.json'))) out.push(r.question, r.query);
  return out;
}

// One added_tokens entry; `o` overrides the flags.
function added(id, content, special = true, o = {}) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special, ...o };
}

function template(single, pair, specials) {
  const item = (s) => {
    const [name, type] = s.split(':');
    const type_id = Number(type || 0);
    return name.startsWith('$') ? { Sequence: { id: name.slice(1), type_id } } : { SpecialToken: { id: name, type_id } };
  };
  const special_tokens = {};
  for (const [tok, id] of specials) special_tokens[tok] = { id: tok, ids: [id], tokens: [tok] };
  return {
    type: 'TemplateProcessing',
    single: single.split(' ').map(item),
    pair: pair.split(' ').map(item),
    special_tokens,
  };
}

function tokenizer(model, parts) {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: parts.added_tokens || [],
    normalizer: parts.normalizer || null,
    pre_tokenizer: parts.pre_tokenizer || null,
    post_processor: parts.post_processor || null,
    decoder: parts.decoder || null,
    model,
  };
}

// ---- training ---------------------------------------------------------

// Word frequencies of `texts` split on whitespace, each word mapped by `form`.
function wordCounts(texts, form) {
  const counts = new Map();
  for (const t of texts) {
    for (const w of t.split(/\s+/)) {
      if (w === '') continue;
      const f = form(w);
      counts.set(f, (counts.get(f) || 0) + 1);
    }
  }
  return counts;
}

// Plain BPE training: symbols are a word's characters, with `prefix` on all
// but the first and `suffix` on the last, as HF's BPE forms them
// (models/bpe/model.rs merge_word); each step merges the most frequent
// adjacent pair (ties: the smaller pair string, for determinism).
function trainBpe(counts, nMerges, prefix = '', suffix = '') {
  const words = [];
  const alphabet = new Set();
  for (const [w, c] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const chars = [...w];
    const syms = chars.map((ch, i) => (i > 0 ? prefix : '') + ch + (i === chars.length - 1 ? suffix : ''));
    syms.forEach((s) => alphabet.add(s));
    words.push({ syms, c });
  }
  const merges = [];
  for (let m = 0; m < nMerges; m++) {
    const pairs = new Map();
    for (const { syms, c } of words) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const k = syms[i] + '\u0000' + syms[i + 1];
        pairs.set(k, (pairs.get(k) || 0) + c);
      }
    }
    let best = null;
    let bestN = 0;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && k < best)) [best, bestN] = [k, n];
    if (!best || bestN < 2) break;
    const [a, b] = best.split('\u0000');
    const joined = a + b.slice(prefix.length);
    merges.push([a, b, joined]);
    for (const w of words) {
      const s = w.syms;
      const out = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(joined);
          i++;
        } else {
          out.push(s[i]);
        }
      }
      w.syms = out;
    }
  }
  return { alphabet: [...alphabet].sort(), merges };
}

function byteTokens() {
  const out = [];
  for (let b = 0; b < 256; b++) out.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  return out;
}

// A Unigram piece table: every character seen, and the `n` most frequent
// substrings (2..8 characters) of the ▁-prefixed words, scored by log
// relative frequency. Substrings with and without the leading ▁ both occur,
// so the table serves Metaspace and plain Whitespace pre-tokenizers.
function unigramPieces(texts, n) {
  const counts = wordCounts(texts, (w) => '\u2581' + w);
  const sub = new Map();
  const chars = new Map();
  for (const [w, c] of counts) {
    const cs = [...w];
    for (let i = 0; i < cs.length; i++) {
      chars.set(cs[i], (chars.get(cs[i]) || 0) + c);
      for (let len = 2; len <= 8 && i + len <= cs.length; len++) {
        const s = cs.slice(i, i + len).join('');
        sub.set(s, (sub.get(s) || 0) + c);
      }
    }
  }
  const top = [...sub].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n);
  const all = [...chars, ...top];
  const total = all.reduce((t, [, c]) => t + c, 0);
  return all.map(([p, c]) => [p, Math.round(Math.log(c / total) * 1e4) / 1e4]);
}

// ---- the files ----------------------------------------------------------

function gpt2Cut() {
  const g = readJson(path.join(DATA, 'tokenizers', 'gpt2.tokenizer.json'));
  const merges = g.model.merges.slice(0, GPT2_MERGES);
  const vocab = {};
  for (const [tok, id] of Object.entries(g.model.vocab)) if (id < 256 + GPT2_MERGES) vocab[tok] = id;
  if (Object.keys(vocab).length !== 256 + GPT2_MERGES) throw new Error('gpt2 vocab is not 256 + merge rank');
  merges.forEach((m, i) => {
    const [a, b] = m.split(' ');
    if (vocab[a + b] !== 256 + i) throw new Error(`gpt2 merge ${i} ${m} is not id ${256 + i}`);
  });
  return { vocab, merges, size: 256 + GPT2_MERGES };
}

function bpeModel(vocab, merges, o = {}) {
  return {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges, ...o,
  };
}

const BYTELEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false };

function llama3(g) {
  const names = ['<|begin_of_text|>', '<|end_of_text|>', '<|reserved_special_token_0|>', '<|reserved_special_token_1|>',
    '<|finetune_right_pad_id|>', '<|step_id|>', '<|start_header_id|>', '<|end_header_id|>', '<|eom_id|>', '<|eot_id|>',
    '<|python_tag|>'];
  const at = names.map((n, i) => added(g.size + i, n));
  const bos = g.size;
  return tokenizer(bpeModel(g.vocab, g.merges, { ignore_merges: true }), {
    added_tokens: at,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: LLAMA3_REGEX }, behavior: 'Isolated', invert: false }, BYTELEVEL] },
    // as Meta's files have it: ByteLevel (offsets only) then the template
    post_processor: { type: 'Sequence', processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      template('<|begin_of_text|> $A', '<|begin_of_text|> $A <|begin_of_text|>:1 $B:1', [['<|begin_of_text|>', bos]])] },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  });
}

function qwen2(g) {
  const at = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((n, i) => added(g.size + i, n));
  return tokenizer(bpeModel(g.vocab, g.merges), {
    added_tokens: at,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN2_REGEX }, behavior: 'Isolated', invert: false },
      { ...BYTELEVEL, trim_offsets: false }] },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  });
}

// Byte-level added tokens with every flag flipped somewhere: lstrip/rstrip
// (RoBERTa's <mask>), single_word, normalized true on a non-special token
// under a Lowercase normalizer, normalized false with spaces inside.
function addedFlags(g) {
  const n = g.size;
  return tokenizer(bpeModel(g.vocab, g.merges), {
    added_tokens: [
      added(n, '<|endoftext|>'),
      added(n + 1, '<mask>', true, { lstrip: true }),
      added(n + 2, '[EOS]', true, { rstrip: true }),
      added(n + 3, 'count(', false, { normalized: true }),
      added(n + 4, 'where', false, { single_word: true }),
      added(n + 5, 'ORDER BY', false, { lstrip: true, rstrip: true }),
      added(n + 6, 'name', false, { single_word: true, normalized: true }),
      added(n + 7, '<SEP>', true, { normalized: true, lstrip: true, rstrip: true }),
    ],
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  });
}

// The ByteLevel normalizer (not the pre-tokenizer): every byte is mapped
// before anything splits, so no space is left and WhitespaceSplit keeps the
// whole text as one word for the BPE model.
function bytelevelNormalizer(g) {
  return tokenizer(bpeModel(g.vocab, g.merges), {
    added_tokens: [added(g.size, '<|endoftext|>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'ByteLevel' }] },
    pre_tokenizer: { type: 'WhitespaceSplit' },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  });
}

// A SentencePiece-style BPE vocabulary: <unk> <s> </s>, the 256 <0xXX>
// pieces, the alphabet, then one token per merge. `arrays` writes merges as
// [a, b] pairs (tokenizers >= 0.20) instead of "a b" strings.
function spVocab(texts, extraChars) {
  const counts = wordCounts(texts, (w) => '\u2581' + w);
  for (const ch of extraChars) counts.set(ch, 1);
  const t = trainBpe(counts, 1200);
  const vocab = {};
  let id = 0;
  for (const s of ['<unk>', '<s>', '</s>', ...byteTokens(), ...t.alphabet, ...t.merges.map((m) => m[2])]) {
    if (!(s in vocab)) vocab[s] = id++;
  }
  return { vocab, merges: t.merges.map((m) => [m[0], m[1]]) };
}

const SP_ADDED = [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')];
const SP_DECODER = { type: 'Sequence', decoders: [
  { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' },
  { type: 'Strip', content: ' ', start: 1, stop: 0 }] };
const LLAMA2_TEMPLATE = template('<s> $A', '<s> $A <s>:1 $B:1', [['<s>', 1]]);

function llama2(sp, o = {}) {
  return tokenizer(bpeModel(sp.vocab, sp.merges, { unk_token: '<unk>', fuse_unk: true, byte_fallback: true, ...o }), {
    added_tokens: SP_ADDED,
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'Prepend', prepend: '\u2581' }, { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] },
    post_processor: LLAMA2_TEMPLATE,
    decoder: SP_DECODER,
  });
}

function metaspace(sp, meta) {
  return tokenizer(bpeModel(sp.vocab, sp.merges.map((m) => m.join(' ')), { unk_token: '<unk>', fuse_unk: true, byte_fallback: true }), {
    added_tokens: [...SP_ADDED, added(Object.keys(sp.vocab).length, '<sep>', false)],
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', ...meta },
    post_processor: LLAMA2_TEMPLATE,
    decoder: { type: 'Metaspace', replacement: '\u2581', ...meta },
  });
}

function unigramModel(pieces, o) {
  const vocab = [['<unk>', 0], ['<s>', 0], ['</s>', 0]];
  if (o.bytes) for (const b of byteTokens()) vocab.push([b, 0]);
  const seen = new Set(vocab.map((v) => v[0]));
  for (const p of pieces) if (!seen.has(p[0])) { seen.add(p[0]); vocab.push(p); }
  // unk_id names a piece other than 0 in one file, to catch code that assumes 0.
  if (o.unkAt) vocab.splice(o.unkAt, 0, vocab.splice(0, 1)[0]);
  return { type: 'Unigram', unk_id: o.unkAt || 0, vocab, byte_fallback: !!o.bytes };
}

function t5Precompiled() {
  const t5 = readJson(path.join(DATA, 'tokenizers', 't5-small.tokenizer.json'));
  if (t5.normalizer.type !== 'Precompiled') throw new Error('t5-small: normalizer is not Precompiled');
  return t5.normalizer;
}

const T5_TEMPLATE = template('$A </s>', '$A </s> $B:1 </s>:1', [['</s>', 2]]);

function unigramPrecompiled(pieces) {
  return tokenizer(unigramModel(pieces, {}), {
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
    normalizer: t5Precompiled(),
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'WhitespaceSplit' }, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true }] },
    post_processor: T5_TEMPLATE,
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
  });
}

function unigramNfkc(pieces) {
  return tokenizer(unigramModel(pieces, { bytes: true }), {
    added_tokens: [added(0, '<unk>'), added(1, '<s>'), added(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [
      { type: 'NFKC' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true },
      { type: 'Replace', pattern: { Regex: '\\s{2,}' }, content: ' ' },
      { type: 'Replace', pattern: { Regex: '[0-9]+\\.[0-9]+' }, content: '<num>' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: true }, { type: 'Whitespace' }] },
    post_processor: T5_TEMPLATE,
    decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Fuse' }] },
  });
}

function unigramWsplit(pieces) {
  return tokenizer(unigramModel(pieces, { unkAt: 3 }), {
    added_tokens: [added(3, '<unk>'), added(0, '<s>'), added(1, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'StripAccents' }] },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: false },
      { type: 'Punctuation', behavior: 'Contiguous' },
      { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false }] },
    post_processor: template('$A </s>', '$A </s> $B:1 </s>:1', [['</s>', 1]]),
  });
}

function bertVocab() {
  const lines = fs.readFileSync(path.join(DATA, 'vocab', 'bert-base-uncased.vocab.txt'), 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

const BERT_SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];

function bertTemplate(vocab) {
  return template('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1', [['[CLS]', vocab['[CLS]']], ['[SEP]', vocab['[SEP]']]]);
}

function wordpieceModel(vocab) {
  return { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab };
}

// bert-base-uncased as transformers saves it: the one file the pairshard of
// today accepts, which keeps the harness itself honest.
function bertUncased() {
  const vocab = {};
  bertVocab().forEach((t, i) => { vocab[t] = i; });
  return tokenizer(wordpieceModel(vocab), {
    added_tokens: BERT_SPECIALS.map((t) => added(vocab[t], t)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: bertTemplate(vocab),
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  });
}

// WordPiece with a non-BERT pipeline; the vocabulary is bert-base-uncased's
// first 12,000 entries plus every one-character piece (so no word is [UNK]
// only for lack of a letter).
function wordpieceNfd() {
  const vocab = {};
  let id = 0;
  for (const [i, t] of bertVocab().entries()) {
    const bare = t.startsWith('##') ? t.slice(2) : t;
    if (i < 12000 || [...bare].length === 1) vocab[t] = id++;
  }
  return tokenizer(wordpieceModel(vocab), {
    added_tokens: BERT_SPECIALS.map((t) => added(vocab[t], t)),
    normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }, { type: 'StripAccents' }] },
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', vocab['[SEP]']], cls: ['[CLS]', vocab['[CLS]']] },
  });
}

// Every Split behaviour, invert, CharDelimiterSplit, the Nmt, one-sided
// Strip and Regex Replace normalizers, a short max_input_chars_per_word, and
// a template whose special token has two ids.
function splitBehaviors() {
  const t = wordpieceNfd();
  const v = t.model.vocab;
  t.model.max_input_chars_per_word = 12;
  const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
  t.normalizer = { type: 'Sequence', normalizers: [
    { type: 'Nmt' }, { type: 'NFKD' }, { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' },
    { type: 'Strip', strip_left: true, strip_right: false }, { type: 'Lowercase' }] };
  t.pre_tokenizer = { type: 'Sequence', pretokenizers: [
    split({ String: ' ' }, 'Removed'), split({ Regex: '\\d+' }, 'MergedWithPrevious'),
    split({ Regex: '[,;]' }, 'MergedWithNext'), split({ Regex: '[()*]' }, 'Contiguous'),
    split({ Regex: '[a-z]+' }, 'Isolated', true), { type: 'CharDelimiterSplit', delimiter: '_' }] };
  const post = template('[CLS] $A [SEP]', '[CLS] $A [SEP] [Q]:1 $B:1 [SEP]:1',
    [['[CLS]', v['[CLS]']], ['[SEP]', v['[SEP]']]]);
  post.special_tokens['[Q]'] = { id: '[Q]', ids: [v['[unused0]'], v['[unused1]']], tokens: ['[unused0]', '[unused1]'] };
  t.post_processor = post;
  return t;
}

// WordLevel: the 3,000 most frequent lowercased Whitespace words of Spider train.
function wordlevelVocab(texts) {
  const counts = new Map();
  for (const t of texts) for (const w of t.toLowerCase().match(/\w+|[^\w\s]+/gu) || []) counts.set(w, (counts.get(w) || 0) + 1);
  const words = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 3000).map((x) => x[0]);
  const vocab = {};
  ['[PAD]', '[UNK]', '[CLS]', '[SEP]', ...words].forEach((w, i) => { vocab[w] = i; });
  return vocab;
}

function wordlevel(vocab) {
  return tokenizer({ type: 'WordLevel', vocab, unk_token: '[UNK]' }, {
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]'].map((t) => added(vocab[t], t)),
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 3], cls: ['[CLS]', 2] },
  });
}

// The old compact form: a model object with no "type". HF tries BPE,
// WordPiece, WordLevel, Unigram in that order (models/mod.rs); WordPiece
// needs all of its fields (wordpiece/serialization.rs), so "vocab" and
// "unk_token" alone load as WordLevel (checked with the binding's save()).
function notypeWordlevelFields(vocab) {
  const t = wordlevel(vocab);
  t.model = { vocab, unk_token: '[UNK]' };
  return t;
}

function bpeAffix(texts, prefix, suffix) {
  const counts = wordCounts(texts.map((t) => t.toLowerCase()), (w) => w);
  const t = trainBpe(counts, 1500, prefix, suffix);
  const vocab = {};
  let id = 0;
  for (const s of ['<unk>', '<s>', '</s>', ...t.alphabet, ...t.merges.map((m) => m[2])]) if (!(s in vocab)) vocab[s] = id++;
  return tokenizer(bpeModel(vocab, t.merges.map((m) => `${m[0]} ${m[1]}`), {
    unk_token: '<unk>', continuing_subword_prefix: prefix || null, end_of_word_suffix: suffix || null,
  }), {
    added_tokens: SP_ADDED,
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: template('<s> $A </s>', '<s> $A </s> </s> $B </s>', [['<s>', 1], ['</s>', 2]]),
    decoder: { type: 'BPEDecoder', suffix: suffix || '</w>' },
  });
}

async function check(name, text) {
  if (Buffer.byteLength(text) > MAX_BYTES) throw new Error(`${name}: ${Buffer.byteLength(text)} bytes, over 2 MB`);
  const tok = hf.Tokenizer.fromString(text);
  const e = await tok.encode('How many singers do we have? 我们有多少歌手？', 'SELECT count(*) FROM singer', { addSpecialTokens: true });
  if (e.getIds().length === 0) throw new Error(`${name}: encodes to nothing`);
  // The model HF built, as it saves it back (the untyped file's type is inferred).
  const tmp = path.join(require('os').tmpdir(), `make_tokenizers-${process.pid}.json`);
  tok.save(tmp);
  const type = readJson(tmp).model.type;
  fs.unlinkSync(tmp);
  return `${type}, probe ${e.getIds().length} ids`;
}

async function main() {
  const texts = spiderTexts();
  const g = gpt2Cut();
  const sp = spVocab(texts, '我们有多少歌手的名字是什么');
  const pieces = unigramPieces(texts, 600);
  const wl = wordlevelVocab(texts);
  const files = {
    'bert-base-uncased': bertUncased(),
    'llama3-style': llama3(g),
    'qwen2-style': qwen2(g),
    'added-flags-bytelevel': addedFlags(g),
    'llama2-style': llama2(sp),
    'llama2-style-nofallback': llama2({ ...sp, merges: sp.merges.map((m) => m.join(' ')) }, { byte_fallback: false }),
    'metaspace-first-split': metaspace(sp, { prepend_scheme: 'first', split: true }),
    'metaspace-always-nosplit': metaspace(sp, { prepend_scheme: 'always', split: false }),
    'metaspace-never-split': metaspace(sp, { prepend_scheme: 'never', split: true }),
    'metaspace-legacy': metaspace(sp, { str_rep: '\u2581', add_prefix_space: true }),
    'unigram-precompiled': unigramPrecompiled(pieces),
    'unigram-nfkc-bytefallback': unigramNfkc(pieces),
    'unigram-wsplit-unk3': unigramWsplit(pieces),
    'wordpiece-nfd-whitespace': wordpieceNfd(),
    'split-behaviors-wordpiece': splitBehaviors(),
    'bytelevel-normalizer': bytelevelNormalizer(g),
    'wordlevel-whitespace': wordlevel(wl),
    'notype-wordlevel-fields': notypeWordlevelFields(wl),
    'bpe-prefix-suffix': bpeAffix(texts, '##', '</w>'),
    'bpe-suffix': bpeAffix(texts, '', '</w>'),
  };
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, obj] of Object.entries(files)) {
    const text = JSON.stringify(obj) + '\n';
    const n = await check(name, text);
    if (name.startsWith('notype') && !n.startsWith('WordLevel')) throw new Error(`${name}: HF loaded ${n}`);
    fs.writeFileSync(path.join(OUT, `${name}.tokenizer.json`), text);
    console.log(`${name}.tokenizer.json  ${Buffer.byteLength(text)} bytes  ${n}`);
  }
}

main().catch((e) => {
  console.error(`make_tokenizers.js: ${e.stack || e}`);
  process.exit(1);
});
