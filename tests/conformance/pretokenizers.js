// Differential test of pairshard's pre-tokenizers (tokenize/pretok*.c)
// against HuggingFace tokenizers (node binding, the version pinned in
// package-lock.json): the same "pre_tokenizer" JSON is loaded into HF (as
// part of a minimal tokenizer.json, through Tokenizer.fromString) and into
// tests/tools/pretok_split; every line's pieces must be equal, string for
// string. Texts: Spider dev questions and SQL, a hand-written torture set
// (Chinese, emoji/ZWJ, RTL, combining marks, controls, digit runs,
// contractions in every case, whitespace runs, newlines), seeded random
// strings, and every Unicode scalar value in several contexts for the
// configurations whose character classes matter. Load errors: files HF
// rejects must be rejected too. Prints TAP; exits 1 on any mismatch.
// env: PS_ROOT, PS_BUILD (the build directory with lib/libpairshard.a).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('tokenizers');

const ROOT = process.env.PS_ROOT;
const BUILD = process.env.PS_BUILD || (ROOT && path.join(ROOT, 'build'));
if (!ROOT) {
  console.error('pretokenizers.js: set PS_ROOT (and PS_BUILD)');
  process.exit(2);
}
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'pairshard-pretok-'));
process.on('exit', () => fs.rmSync(TMP, { recursive: true, force: true }));

let n = 0;
let failures = 0;
function tap(ok, what, diag) {
  n++;
  if (!ok) failures++;
  console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${what}`);
  if (!ok && diag) console.log(diag.split('\n').map((l) => '# ' + l).join('\n'));
}

// The tool, built against the suite's library.
const TOOL = path.join(TMP, 'pretok_split');
{
  const r = spawnSync('sh', ['-c',
    `. "${ROOT}/tests/tools/build_tool.sh" && build_tool pretok_split "${BUILD}" "${TOOL}" -I"${ROOT}" -D_DEFAULT_SOURCE`],
    { env: { ...process.env, PS_ROOT: ROOT }, encoding: 'utf8' });
  if (r.status !== 0) {
    console.log('not ok 1 - build tests/tools/pretok_split');
    console.log(r.stderr);
    process.exit(1);
  }
}

function hfPretok(pt) {
  const json = {
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: pt, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
  };
  return hf.Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer();
}

function ours(pt, lines, extra = []) {
  const f = path.join(TMP, 'pt.json');
  fs.writeFileSync(f, JSON.stringify(pt));
  const r = spawnSync(TOOL, [...extra, f], {
    input: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
    encoding: 'utf8', maxBuffer: 1 << 30,
  });
  if (r.status !== 0) return { error: r.stderr.trim() || `exit ${r.status}` };
  return { out: r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)) };
}

// PS_PRETOK_ONLY=REGEX runs only the comparisons whose name matches.
const ONLY = process.env.PS_PRETOK_ONLY ? new RegExp(process.env.PS_PRETOK_ONLY) : null;

function compare(name, pt, lines) {
  if (ONLY && !ONLY.test(name)) return;
  let h;
  try {
    h = hfPretok(pt);
  } catch (e) {
    tap(false, `${name}: HF rejects ${JSON.stringify(pt)}: ${e.message}`);
    return;
  }
  const o = ours(pt, lines);
  if (o.error) {
    tap(false, `${name}: pairshard failed`, o.error);
    return;
  }
  let bad = 0;
  let diag = '';
  for (let i = 0; i < lines.length; i++) {
    const want = h.preTokenizeString(lines[i]).map((x) => x[0]);
    const got = o.out[i];
    if (JSON.stringify(want) !== JSON.stringify(got)) {
      if (bad++ < 8) {
        let k = 0;
        while (k < want.length && got && want[k] === got[k]) k++;
        const w = want.slice(Math.max(0, k - 2), k + 3), g = (got || []).slice(Math.max(0, k - 2), k + 3);
        diag += `text ${JSON.stringify(lines[i]).slice(0, 120)}\n  piece ${k}: HF ${JSON.stringify(w)}\n  ours ${JSON.stringify(g)}\n`;
      }
    }
  }
  tap(bad === 0, `${name}: ${lines.length - bad}/${lines.length} lines equal`, bad ? diag : '');
}

// ---- texts ---------------------------------------------------------------

const spider = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/data/spider/dev.json'), 'utf8'));
const SPIDER = [];
for (const r of spider) SPIDER.push(r.question, r.query);

const TORTURE = [
  'How many heads of the departments are older than 56 ?',
  'SELECT T1.name FROM  singer AS T1\tJOIN concert ON T1.id = concert.sid WHERE year > 2014;',
  "I'll say it's John's, we've, they're, I'm, he'd, don't",
  "I'LL SAY IT'S JOHN'S, WE'VE, THEY'RE, I'M, HE'D, DON'T, 'Ll 'lL 'Re 'rE 'Ve 'vE 'S 'T 'M 'D",
  "'ſ 'ſt ''s 's's '' ' 's", "x'sy ' s 's' '\n's",
  '北京大学的学生有多少人？ 请列出所有学生。',
  '日本語のテキスト、カタカナとひらがな。',
  '👨‍👩‍👧‍👦 family 👍🏽 thumbs 🏳️‍🌈 flag 1️⃣ keycap',
  'مرحبا بالعالم ١٢٣ שלום עולם',
  'e\u0301 n\u0303o\u0308 \u0915\u094D\u0937 a\u20DD combining',
  'tab\there\u000bvt\u000cff\r\ncrlf\rcr\nlf\u0085nel\u2028ls\u2029ps',
  'nbsp\u00a0thin\u2009ideo\u3000mongol\u180eZWSP\u200bZWJ\u200d',
  'ctrl\u0000nul\u0001soh\u007fdel\u009fapc',
  '1234567890 12345678901234567890 ١٢٣٤٥ ௧௨௩ Ⅻ ½ ²³ 3.14159 -42 1e10 0x1F',
  '    four spaces   three  two \t\t tabs \n\n\n three newlines \r\n\r\n',
  'trailing spaces   ', '   leading spaces', ' ', '  ', '\n', ' \n ', 'a', "'", '\u2581', '\u2581\u2581 x',
  '▁already ▁ metaspace▁▁', '!!!???...,,,;;;', '(*)', 'a.b,c;d:e!f?g', '$100 + 50% = €', '"quoted" «guillemets» „German“',
  'snake_case_name and CamelCaseName and kebab-case-name', 'email@example.com https://x.org/a?b=c#d',
  'ǅ ǈ Σσς İı ß ẞ ﬁ ﬃ Ⓐⓐ 🄰', '\ud83d\ude00\ud83d\ude03 emoji', 'mixed 中文English混合123数字',
];

// Seeded random strings over characters of every class.
function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 4294967296; };
}
const ALPHABET = [...'aZ09 \t\n\r\'sStTlLdDmMrReEvV.,;(*)_-$€中ñé\u0301\u00a0\u2028\u180e١½Ⅻ👍\u200d🏽\u2581ſ'];
function randomTexts(count, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < count; i++) {
    const len = 1 + Math.floor(r() * 40);
    let s = '';
    for (let k = 0; k < len; k++) s += ALPHABET[Math.floor(r() * ALPHABET.length)];
    out.push(s);
  }
  return out;
}
const RANDOM = randomTexts(3000, 20261203);

// Every scalar value, 256 to a line, in contexts that exercise each class
// boundary: after a letter, before a digit, after a space and an apostrophe.
function allCodePoints(context) {
  const lines = [];
  for (let base = 0; base < 0x110000; base += 512) {
    let s = '';
    for (let cp = base; cp < base + 512; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      s += context(String.fromCodePoint(cp));
    }
    if (s) lines.push(s);
  }
  return lines;
}

// ---- configurations ----------------------------------------------------

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 = LLAMA3.replace('\\p{N}{1,3}', '\\p{N}');
const BEHAVIORS = ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'];
const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
const bytelevel = (aps, useRegex) => ({ type: 'ByteLevel', add_prefix_space: aps, trim_offsets: true, use_regex: useRegex });

const CONFIGS = [];
for (const b of BEHAVIORS)
  for (const inv of [false, true]) {
    CONFIGS.push([`Split Regex \\s+ ${b}${inv ? ' invert' : ''}`, split({ Regex: '\\s+' }, b, inv)]);
    CONFIGS.push([`Split Regex \\d* (empty matches) ${b}${inv ? ' invert' : ''}`, split({ Regex: '\\d*' }, b, inv)]);
    CONFIGS.push([`Split String ' ' ${b}${inv ? ' invert' : ''}`, split({ String: ' ' }, b, inv)]);
    CONFIGS.push([`Split String '--' ${b}${inv ? ' invert' : ''}`, split({ String: '--' }, b, inv)]);
    CONFIGS.push([`Punctuation ${b}`, { type: 'Punctuation', behavior: b }]);
  }
CONFIGS.push(['Split String empty', split({ String: '' }, 'Isolated')]);
CONFIGS.push(['Split String regex metacharacters', split({ String: '.*' }, 'Removed')]);
CONFIGS.push(['Split GPT-2 regex (scanner)', split({ Regex: GPT2 }, 'Isolated')]);
CONFIGS.push(['Split Llama-3 regex (scanner)', split({ Regex: LLAMA3 }, 'Isolated')]);
CONFIGS.push(['Split Qwen2 regex (scanner)', split({ Regex: QWEN2 }, 'Isolated')]);
CONFIGS.push(['Split Llama-3 regex Removed invert', split({ Regex: LLAMA3 }, 'Removed', true)]);
CONFIGS.push(['Split Llama-3 regex with a space more (PCRE2)', split({ Regex: LLAMA3 + ' ' }, 'Isolated')]);
for (const aps of [false, true])
  for (const ur of [false, true]) CONFIGS.push([`ByteLevel aps=${aps} use_regex=${ur}`, bytelevel(aps, ur)]);
CONFIGS.push(['ByteLevel without use_regex (default true)', { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false }]);
for (const scheme of ['always', 'first', 'never'])
  for (const sp of [true, false])
    CONFIGS.push([`Metaspace ${scheme} split=${sp}`, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: scheme, split: sp }]);
CONFIGS.push(['Metaspace legacy add_prefix_space+str_rep', { type: 'Metaspace', replacement: '\u2581', add_prefix_space: true, str_rep: '\u2581' }]);
CONFIGS.push(['Metaspace replacement _', { type: 'Metaspace', replacement: '_', prepend_scheme: 'always', split: true }]);
CONFIGS.push(['Metaspace replacement emoji', { type: 'Metaspace', replacement: '👍', prepend_scheme: 'first' }]);
CONFIGS.push(['Whitespace', { type: 'Whitespace' }]);
CONFIGS.push(['WhitespaceSplit', { type: 'WhitespaceSplit' }]);
CONFIGS.push(['Digits individual', { type: 'Digits', individual_digits: true }]);
CONFIGS.push(['Digits contiguous', { type: 'Digits', individual_digits: false }]);
CONFIGS.push(['BertPreTokenizer', { type: 'BertPreTokenizer' }]);
CONFIGS.push(['CharDelimiterSplit', { type: 'CharDelimiterSplit', delimiter: 'e' }]);
CONFIGS.push(['Sequence Llama-3 (Split + ByteLevel)', { type: 'Sequence', pretokenizers: [split({ Regex: LLAMA3 }, 'Isolated'), bytelevel(false, false)] }]);
CONFIGS.push(['Sequence Qwen2 (Split + ByteLevel)', { type: 'Sequence', pretokenizers: [split({ Regex: QWEN2 }, 'Isolated'), bytelevel(false, false)] }]);
CONFIGS.push(['Sequence WhitespaceSplit + Metaspace first', { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }] }]);
CONFIGS.push(['Sequence nested: Digits + (Punctuation + Whitespace)', { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, { type: 'Sequence', pretokenizers: [{ type: 'Punctuation', behavior: 'MergedWithNext' }, { type: 'Whitespace' }] }] }]);
CONFIGS.push(['Sequence empty', { type: 'Sequence', pretokenizers: [] }]);

// The behaviour grid (the first 50) on a sample; the rest on everything.
const TEXTS = [...SPIDER, ...TORTURE, ...RANDOM];
const SAMPLE = [...SPIDER.slice(0, 400), ...TORTURE, ...RANDOM.slice(0, 600)];
CONFIGS.forEach(([name, pt], i) => compare(name, pt, i < 50 ? SAMPLE : TEXTS));

// Character classes on every code point.
// The scanners' alternatives end on every side of a character; a class of
// single characters needs one neighbour of another class.
const ALL = allCodePoints((c) => `x${c}1 ${c}'${c}.${c}  ${c}\n`);
const ONE = allCodePoints((c) => `a${c}1 `);
for (const [name, pt, lines] of [
  ['ByteLevel (GPT-2 scanner)', bytelevel(false, true), ALL],
  ['Split Llama-3 (scanner)', split({ Regex: LLAMA3 }, 'Isolated'), ALL],
  ['Split Qwen2 (scanner)', split({ Regex: QWEN2 }, 'Isolated'), ALL],
  ['Split Llama-3 with a space more (PCRE2)', split({ Regex: LLAMA3 + ' ' }, 'Isolated'), ALL],
  ['Whitespace', { type: 'Whitespace' }, ONE],
  ['WhitespaceSplit', { type: 'WhitespaceSplit' }, ONE],
  ['Digits', { type: 'Digits', individual_digits: false }, ONE],
  ['Punctuation', { type: 'Punctuation', behavior: 'Isolated' }, ONE],
  ['BertPreTokenizer', { type: 'BertPreTokenizer' }, ONE],
]) compare(`every code point: ${name}`, pt, lines);

// Files HF rejects are rejected, and files it accepts are accepted.
const LOADS = [
  [{ type: 'ByteLevel' }, false],
  [{ type: 'ByteLevel', add_prefix_space: true }, false],
  [{ type: 'Split', pattern: { String: 'x' }, behavior: 'Isolated' }, false],
  [{ type: 'Split', pattern: { Regex: 'x' }, invert: false }, false],
  [{ type: 'Split', pattern: 'x', behavior: 'Isolated', invert: false }, false],
  [{ type: 'Split', pattern: { String: 'x' }, behavior: 'Dropped', invert: false }, false],
  [{ type: 'Metaspace', replacement: '\u2581', add_prefix_space: false }, false],
  [{ type: 'Metaspace', replacement: '\u2581', add_prefix_space: false, prepend_scheme: 'never' }, true],
  [{ type: 'Metaspace', replacement: '\u2581', add_prefix_space: true, prepend_scheme: 'first' }, true],
  [{ type: 'Metaspace', replacement: '\u2581\u2581' }, false],
  [{ type: 'Metaspace', replacement: '' }, false],
  [{ type: 'Metaspace' }, false],
  [{ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'sometimes' }, false],
  [{ type: 'Digits' }, false],
  [{ type: 'Punctuation' }, true],
  [{ type: 'Whitespace', extra: 1 }, true],
  [{ type: 'CharDelimiterSplit', delimiter: 'ab' }, false],
  [{ type: 'Sequence' }, false],
  [{ type: 'Sequence', pretokenizers: [{ type: 'ByteLevel' }] }, false],
  [{ type: 'Bogus' }, false],
  [{ add_prefix_space: true, trim_offsets: true }, false],
  // JSON null: an error where HF's field is not an Option
  [{ type: 'Metaspace', replacement: null }, false],
  [{ type: 'Metaspace', replacement: '_', prepend_scheme: null }, false],
  [{ type: 'Metaspace', replacement: '_', split: null, add_prefix_space: null, str_rep: null }, true],
  [{ type: 'Punctuation', behavior: null }, false],
  [{ type: 'Split', pattern: { String: 'x' }, behavior: null, invert: false }, false],
  [{ type: 'Split', pattern: { String: 'x' }, behavior: 'Isolated', invert: null }, false],
  [{ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: null }, false],
  [{ type: 'Digits', individual_digits: null }, false],
  [{ type: 'Sequence', pretokenizers: null }, false],
  [{ type: 'CharDelimiterSplit', delimiter: null }, false],
];
for (const [pt, accepted] of LOADS) {
  let hfOk = true;
  try { hfPretok(pt); } catch (e) { hfOk = false; }
  const o = ours(pt, ['x']);
  const ourOk = !o.error;
  tap(hfOk === accepted && ourOk === accepted,
    `load ${JSON.stringify(pt)}: HF ${hfOk ? 'accepts' : 'rejects'}, pairshard ${ourOk ? 'accepts' : 'rejects'}`,
    o.error || '');
}

console.log(`1..${n}`);
process.exit(failures ? 1 : 0);
