#!/usr/bin/env node
// Conformance of pairshard's tokenizer.json normalizers with HuggingFace
// tokenizers (the node binding, tokenizers@0.23.2): for each normalizer
// (and option combination, and Sequences), HF's normalizeString and
// pairshard's (tests/tools/norm_apply, built against the library) must give
// the same string for
//   - every Unicode scalar value (1,112,064) alone ("isolated": joined by
//     spaces, which neither compose nor reorder with their neighbours),
//   - every scalar value in runs of consecutive code points ("runs": marks
//     follow letters and each other, so reordering and composition across
//     marks are exercised),
//   - the canonical decomposition of every scalar value, as HF's NFD gives
//     it ("decomposed": every composition HF knows),
//   - hostile strings: combining marks, Hangul jamo, emoji with ZWJ, RTL,
//     controls, whitespace runs, CJK compatibility ideographs, ligatures,
//     full-width forms, long runs of marks.
// The normalizer is built on the HF side from the same JSON pairshard loads
// (Tokenizer.fromString of a minimal tokenizer.json, then getNormalizer()),
// so the deserializer is exercised too. Prints TAP; exits 1 on a mismatch,
// listing the first differing code points.
// env: NORM_APPLY (the tool), NORM_FILTER (a regex on the case names),
//      NORM_RUN (code points per run, default 64).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const hf = require('./node_modules/tokenizers');

const TOOL = process.env.NORM_APPLY;
if (!TOOL) {
  console.error('NORM_APPLY must point at the norm_apply tool');
  process.exit(2);
}
const RUN = Number(process.env.NORM_RUN || 64);
const FILTER = process.env.NORM_FILTER ? new RegExp(process.env.NORM_FILTER) : null;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ps-norm-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function hfNormalizer(json) {
  const doc = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: json,
    pre_tokenizer: null, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
  };
  return hf.Tokenizer.fromString(JSON.stringify(doc)).getNormalizer();
}

// Runs pairshard's normalizer `json` over the strings; returns its outputs.
function psNormalize(json, strings) {
  const jf = path.join(tmp, 'norm.json');
  fs.writeFileSync(jf, JSON.stringify(json));
  const input = strings.map((s) => JSON.stringify(s)).join('\n') + '\n';
  const out = execFileSync(TOOL, [jf], { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  const lines = out.split('\n');
  lines.pop();
  return lines.map((l) => JSON.parse(l));
}

// ---- inputs -----------------------------------------------------------
const scalars = [];
for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) scalars.push(cp);

function chunks(list, n, sep) {
  const out = [];
  for (let i = 0; i < list.length; i += n)
    out.push(list.slice(i, i + n).map((c) => (typeof c === 'number' ? String.fromCodePoint(c) : c)).join(sep));
  return out;
}
const isolated = chunks(scalars, RUN, ' ');
const runs = chunks(scalars, RUN, '');
const nfd = hfNormalizer({ type: 'NFD' });
const decomposed = chunks(scalars.map((c) => nfd.normalizeString(String.fromCodePoint(c))), RUN, ' ');

function hangul() {
  const out = [];
  for (let l = 0x1100; l < 0x1113; l++) {
    let s = '';
    for (let v = 0x1161; v < 0x1176; v++) s += String.fromCodePoint(l, v) + ' ';
    out.push(s);
  }
  for (let t = 0x11a6; t <= 0x11c4; t++) out.push(`\uAC00${String.fromCodePoint(t)} \u1100\u1161${String.fromCodePoint(t)} \uAC01${String.fromCodePoint(t)} \uD7A3${String.fromCodePoint(t)}`);
  out.push('\u1100\u1100\u1161\u1161\u11A8\u11A8', '\u1112\u1175\u11C2\u11C2', '\u115F\u1160 \u3131\u314F');
  return out;
}
const marks = '\u0300\u0301\u0316\u0327\u0334\u0345\u05B0\u05BC\u0F72\u0F74\u302A\u1DFA\u0E38\u0E48\u20D2\u1AB0\u0951\u093C';
const hostile = [
  '', ' ', 'a', 'ABC xyz 123', '  lead and trail  ', '\t\n\r\u000b\u000c mixed \u00a0\u3000\u2028\u2029\u0085 ws ',
  'e\u0301 e\u0301\u0301 a\u0316\u0301 a\u0301\u0316 o\u0308\u0304 \u1e69 s\u0323\u0307 s\u0307\u0323 q\u0307\u0323',
  'a' + marks + 'b' + marks.split('').reverse().join('') + 'c',
  'x' + marks.repeat(20) + 'y' + '\u0301\u0316'.repeat(200), // runs longer than 32 marks
  '\u0301leading marks\u0316\u0300', '\u0344 \u0F73 \u0F75 \u0F81 \u0958 \u0915\u093C \u09CB \u0B48 \u0BCA \u0DDA \u1026 \u1B06',
  '\u0915\u093C\u0951 \u05D1\u05BC\u05B0 \u05E9\u05C1\u05B8\u05DC\u05D5\u05B9\u05DD',
  '\u{1F469}\u200D\u{1F469}\u200D\u{1F467}\u200D\u{1F466} \u{1F44D}\u{1F3FD} \u{1F1EF}\u{1F1F5} \u2764\uFE0F #\uFE0F\u20E3',
  'مرحبا بالعالم \u202Eevil\u202C \u200F\u200E \u0627\u0644\u0652\u0639\u064E\u0631\u064E\u0628\u0650\u064A\u0651\u064E\u0629',
  '\u0000\u0001\u0007\u001b\u007f\u0080\u0085\u008f\u009f\u00ad\u200b\u200c\u200d\u2060\ufeff\ufffd\ufffe\u{e0001}\u{f0000}\u{10fffd}',
  '   \t  \n\n  x  \u3000\u3000 y \u00a0 ',
  '\uF900\uF901\uF9FF\uFA0E\uFA10\uFA2D\uFA70\uFAD9\u{2F800}\u{2F8A6}\u{2FA1D} \u2F00\u2FD5 \u3280\u32FF\u3300\u33FF',
  '\uFB00\uFB01\uFB02\uFB03\uFB04\uFB05\uFB06 \u01C4\u01C5\u01C6\u01C7 \u0132\u0133 \u2474\u2488\u24B6 \u00BD\u2153\u2160\u2170 \u2126\u212A\u212B \u1E9B\u0323',
  '\uFF21\uFF22\uFF23\uFF41\uFF11\uFF01\uFF1F\uFF08\uFF09\uFF5E \uFF76\uFF9E\uFF8A\uFF9F \u30AB\u3099\u304B\u3099\u309B',
  '\u0130stanbul I\u0307 \u03A3\u0391\u03A3 \u03C2 \u1E9E \u00DF \u0149 \u01F0 \u1F88 \u1FBC \u2C6F \uA7AE \u{10400} \u{1E900}',
  'Ti\u1EBFng Vi\u1EC7t c\u00F3 d\u1EA5u: Vi\u00EA\u0323\u0302t ng\u01B0\u0301 \u01A1\u0309',
  '中文 日本語 한국어 汉字\u4E00\u9FFF\u3400\u{20000}\u{2A700}\u{2B740}\u{2B920}\u{2CEB0}',
  'select * from t where x = \'\u00e9\' and y like "%\u00df%";',
  '\u{11935}\u{11930} \u{11938} \u{1109A} \u{11099}\u{110BA} \u{1134B} \u{11347}\u{1133E} \u{114BB} \u{115BA} \u{16FF0}\u0301',
  'A\u030A \u212B \u00C5 \u0041\u0328\u0301 \u0105\u0301 \u1E08 \u00C7\u0301 C\u0327\u0301 C\u0301\u0327',
  'a'.repeat(300) + '\u0301' + 'B'.repeat(300),
  '\u{1D400}\u{1D7CE}\u{1F130}\u{1F16A}\u{1F16C}\u{1F200} \uA7F2\uA7F3\uA7F4 \uAB69 \u{1E030}\u{1E06D} \u{107A5}',
].concat(hangul());

// ---- the normalizers --------------------------------------------------
const cases = [
  ['NFC', { type: 'NFC' }],
  ['NFD', { type: 'NFD' }],
  ['NFKC', { type: 'NFKC' }],
  ['NFKD', { type: 'NFKD' }],
  ['Lowercase', { type: 'Lowercase' }],
  ['StripAccents', { type: 'StripAccents' }],
  ['Nmt', { type: 'Nmt' }],
  ['ByteLevel', { type: 'ByteLevel' }],
  ['Strip both', { type: 'Strip', strip_left: true, strip_right: true }],
  ['Strip left', { type: 'Strip', strip_left: true, strip_right: false }],
  ['Strip right', { type: 'Strip', strip_left: false, strip_right: true }],
  ['Strip untagged (legacy)', { strip_left: true, strip_right: true }],
  ['Prepend', { type: 'Prepend', prepend: '\u2581' }],
  ['Prepend untagged (legacy)', { prepend: '>>' }],
  ['Replace String', { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }],
  ['Replace String empty', { type: 'Replace', pattern: { String: '' }, content: '_' }],
  ['Replace String to empty', { type: 'Replace', pattern: { String: 'a' }, content: '' }],
  // (no \s or \p{..}: PCRE2 counts U+180E as a space and has older Unicode
  // tables than HF's Oniguruma; the regex engine is regex.c's to settle)
  ['Replace Regex', { type: 'Replace', pattern: { Regex: '[ \\t\\n\\x{3000}]+|[A-Z]e' }, content: ' ' }],
  ['Replace Regex empty matches', { type: 'Replace', pattern: { Regex: 'a*' }, content: '<>' }],
  ['Replace untagged (legacy)', { pattern: { String: 'e' }, content: 'E' }],
  ['BertNormalizer default', { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true }],
  ['BertNormalizer cased', { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: false }],
  ['BertNormalizer strip, no lowercase', { type: 'BertNormalizer', clean_text: false, handle_chinese_chars: false, strip_accents: true, lowercase: false }],
  ['BertNormalizer lowercase, keep accents', { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: false, strip_accents: false, lowercase: true }],
  ['Bert tag, untagged fields', { type: 'Bert', clean_text: false, handle_chinese_chars: true, lowercase: true }],
  ['Sequence NFD+StripAccents+Lowercase', { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }] }],
  ['Sequence NFKC+Replace+Strip+Prepend', { type: 'Sequence', normalizers: [{ type: 'NFKC' }, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }, { type: 'Strip', strip_left: true, strip_right: true }, { type: 'Prepend', prepend: '\u2581' }, { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' }] }],
  ['Sequence nested, untagged', { normalizers: [{ type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Nmt' }] }, { type: 'Lowercase' }] }],
  ['Sequence empty', { type: 'Sequence', normalizers: [] }],
];

let n = 0;
let failures = 0;
function report(ok, what, detail) {
  n++;
  console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${what}`);
  if (!ok) {
    failures++;
    for (const line of detail) console.log(`# ${line}`);
  }
}
const hex = (s) => Array.from(s, (c) => c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')).join(' ');

// Re-runs each code point of a failing line alone, to name the culprits.
function culprits(name, json, norm, line) {
  const cps = Array.from(line).filter((c) => c !== ' ');
  const mine = psNormalize(json, cps);
  const out = [];
  cps.forEach((c, i) => {
    const want = norm.normalizeString(c);
    if (mine[i] !== want && out.length < 12) out.push(`  U+${hex(c)}: HF [${hex(want)}] pairshard [${hex(mine[i])}]`);
  });
  return out;
}

for (const [name, json] of cases) {
  if (FILTER && !FILTER.test(name)) continue;
  const norm = hfNormalizer(json);
  // the decompositions only tell the Unicode normalizers anything new
  const kinds = /^(NF|Bert|Sequence|StripAccents|Lowercase)/.test(name)
    ? [['isolated', isolated], ['runs', runs], ['decomposed', decomposed], ['hostile', hostile]]
    : [['isolated', isolated], ['runs', runs], ['hostile', hostile]];
  for (const [kind, strings] of kinds) {
    const want = strings.map((s) => norm.normalizeString(s));
    const got = psNormalize(json, strings);
    const bad = [];
    for (let i = 0; i < strings.length; i++) if (got[i] !== want[i]) bad.push(i);
    const count = kind === 'hostile' ? `${strings.length} strings` : `${scalars.length} code points in ${strings.length} lines`;
    const detail = [];
    for (const i of bad.slice(0, 3)) {
      detail.push(`line ${i}: input [${hex(strings[i]).slice(0, 300)}]`);
      detail.push(`  HF        [${hex(want[i]).slice(0, 300)}]`);
      detail.push(`  pairshard [${hex(got[i] === undefined ? '' : got[i]).slice(0, 300)}]`);
      if (kind !== 'hostile') detail.push(...culprits(name, json, norm, strings[i]));
    }
    if (bad.length > 3) detail.push(`... ${bad.length} lines differ`);
    report(bad.length === 0, `${name}: ${kind}, ${count}`, detail);
  }
}
console.log(`1..${n}`);
process.exit(failures ? 1 : 0);
