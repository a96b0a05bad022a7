// Hand-written hostile inputs for the tokenizer.json conformance test: each
// targets a rule some component gets wrong easily (why, beside each).
// Records are {question, sql}; the SQL side carries its own hazards so the
// pair path and truncation see them too.
'use strict';

const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

// Every upper/lower-case spelling of a contraction: 'RE 'Re 'rE 're ...
function cases(s) {
  let out = [''];
  for (const ch of s) {
    const up = ch.toUpperCase();
    out = out.flatMap((p) => (up === ch ? [p + ch] : [p + ch, p + up]));
  }
  return out;
}

// Special-token strings of the files under test, whole, cut and run together:
// added-token matching must split the whole ones and leave the partial ones
// to the model.
const SPECIALS = ['<s>', '</s>', '<unk>', '<pad>', '[CLS]', '[SEP]', '[MASK]', '[UNK]', '[PAD]',
  '<|endoftext|>', '<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>',
  '<|im_start|>', '<|im_end|>', '<mask>', '[EOS]', '<SEP>', '<sep>', '<extra_id_0>', '<extra_id_99>'];

function hostileRecords() {
  const q = (question, sql = 'SELECT 1') => ({ question, sql });
  const out = [
    // emoji, ZWJ families, flags, skin tones, keycaps: multi-byte and multi-codepoint
    q('Who 😀 has 👨‍👩‍👧‍👦 families and 🇨🇳🇺🇸 flags? 👍🏽 1️⃣', "SELECT name FROM t WHERE icon = '🏳️‍🌈'"),
    q('🤷‍♀️🤷‍♂️🧑🏿‍🚀', "SELECT '👩‍💻'"),
    // combining marks: decomposed é, stacked marks, a lone mark first
    // a leading mark the normalizer removes: the first piece then starts past original
    // offset 0, and Metaspace's prepend_scheme "first" must not prepend (HF looks at offsets_original)
    q('\u0301count the rows', '\u0308select 1'),
    q('cafe\u0301 re\u0301sume\u0301 Z\u0324\u0354\u0367\u0311\u0313 \u0301start', "SELECT * FROM caf\u00e9 WHERE n = 'Zo\u0308e'"),
    // RTL scripts with marks and bidi controls
    q('\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u05e9\u05dc\u05d5\u05dd \u200fRLM\u200e \u202ehidden\u202c',
      "SELECT \u0627\u0633\u0645 FROM \u062c\u062f\u0648\u0644"),
    // control characters, DEL, NEL, line and paragraph separators, BOM, zero-widths
    q('a\u0001b\u0007c\u001bd\u007fe\u0085f\u2028g\u2029h', 'SELECT\u000b1\u000c'),
    q('\ufeffBOM first \u200bzero\u200cwidth\u200djoiner\u2060word', "SELECT '\ufeff'"),
    // long digit runs (\p{N}{1,3} vs \p{N}), other digit systems, fullwidth
    q('1234567890123456789012345 and 3.14159 and 1,000,000', 'SELECT * FROM t WHERE id = 98765432109876543210'),
    q('\u0663\u0664\u0665 \uff11\uff12\uff13 \u00b2\u00b3 \u2160\u2161 \u2460', 'SELECT 007'),
    // whitespace runs, tabs, newlines, CRLF, NBSP, ideographic space, trailing space
    q('a     b\t\tc\n\nd\r\ne \u00a0 f\u3000g  ', 'SELECT  a ,\t b\nFROM   t  '),
    q('   leading spaces', '\n\nSELECT 1\n\n'),
    q(' \t\n ', ' '),
    q('x', '\t'),
    // normalizer hazards: ligatures, compatibility forms, Angstrom, sharp s, dotted I, final sigma
    q('\ufb01nd the \ufb00 \u212b \u1e9e stra\u00dfe \u0130stanbul \u03a3\u0391\u03a3 \u039f\u0394\u039f\u03a3', "SELECT * FROM t WHERE s = '\u2126'"),
    q('\uff33\uff25\uff2c\uff25\uff23\uff34 \u2474 \u33a1 \u2122 \u00bd', 'SELECT \u00b5 FROM t'),
    // other scripts: Thai (no spaces), Devanagari with virama, Hangul jamo and syllables, Japanese
    q('\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0928\u092e\u0938\u094d\u0924\u0947 \u1100\u1161\u11a8 \ud55c\uad6d\uc5b4 \u3053\u3093\u306b\u3061\u306f\u30ab\u30bf\u30ab\u30ca',
      'SELECT \u540d\u524d FROM \u30c6\u30fc\u30d6\u30eb'),
    // supplementary CJK, private use, noncharacters, unassigned code points
    q('\ud840\udc00\ud869\uded6 \ue000\uf8ff \ufdd0\uffff \u0378\u0380 \ud83f\udffe', "SELECT '\ud800\udc00'"),
    // one word longer than WordPiece's max_input_chars_per_word, and a long run of one character
    q('a'.repeat(150) + ' ' + 'ab'.repeat(60), 'SELECT ' + 'x'.repeat(300)),
    q('!'.repeat(40) + '?'.repeat(5) + '-'.repeat(30), "SELECT '''''' FROM \"\"\"\""),
    // CJK mixed with Latin and full-width punctuation
    q('\u6709\u591a\u5c11singer\uff1f\u201c\u5317\u4eac\u201d\u548c\u201c\u4e0a\u6d77\u201d\u7684population\u662f\u591a\u5c11\uff1f',
      "SELECT count(*) FROM singer WHERE city = '\u5317\u4eac'"),
  ];
  // contractions, every case, alone, after words, after digits and spaces
  for (const c of CONTRACTIONS) {
    const all = cases(c);
    out.push(q(`it${all.join(' it')} ${all.join('')} 9${all[0]} ${all[all.length - 1]}x`, `SELECT '${all.join("','")}'`));
  }
  out.push(q("I'm sure they'RE right, we'Ve SEEN it'S done, You'LL see, HE'D go, don'T", "SELECT * FROM t WHERE n = 'O''Brien'"));
  // special tokens whole, glued, spaced and cut
  out.push(q(SPECIALS.join(''), SPECIALS.join(' ')));
  out.push(q(SPECIALS.map((s) => `x${s}y`).join(' '), SPECIALS.map((s) => ` ${s} `).join('')));
  out.push(q(SPECIALS.map((s) => s.slice(0, -1)).join(' '), SPECIALS.map((s) => s.slice(1)).join(' ')));
  out.push(q('<|im_start|>user\nHow many singers?<|im_end|>\n<|im_start|>assistant\n',
    '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nSELECT 1<|eot_id|>'));
  out.push(q('<s><s></s></s><<s>>< s>[CLS][CLS] [ CLS] <mask>  <mask>[EOS]  x', 'ORDER BY  order by ORDER  BY count( COUNT( where somewhere WHERE name names'));
  out.push(q('select name from t ORDER BY age where x', 'SELECT count(*) FROM t<SEP>  <SEP>x <sep>y'));
  return out;
}

// Seeded random records: fragments from a palette that mixes the hazards
// above (special tokens whole and cut, contractions, digit runs, spaces,
// marks, emoji, CJK, RTL) so they meet in combinations nobody wrote by hand.
const PALETTE = [
  ...SPECIALS, ...SPECIALS.map((t) => t.slice(0, -1)), ...CONTRACTIONS.flatMap(cases),
  'SELECT', 'select', 'count(', 'ORDER BY', 'where', 'name', 'How', 'many', 'singers', 'the', 'a',
  ' ', '  ', '   ', '\t', '\n', '\r\n', '\u00a0', '\u3000', '\u200b', '\u200d', '\ufeff',
  '0', '7', '42', '1234', '98765432', '3.14', '\u0663', '\uff11',
  '\u0301', '\u0308', 'e\u0301', '\u00e9', '\u00c5', '\u212b', '\ufb01', '\u0130', '\u03a3', '\u00df',
  '\ud83d\ude00', '\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67', '\ud83c\udde8\ud83c\uddf3', '\ud83d\udc4d\ud83c\udffd',
  '\u6b4c\u624b', '\u591a\u5c11', '\uff1f', '\u201c', '\u201d', '\u0645\u0631\u062d\u0628\u0627', '\u05e9\u05dc\u05d5\u05dd',
  '\u0e2a\u0e27\u0e31', '\u0928\u092e\u0938\u094d', '\u0001', '\u007f', '\u0085', '\ud840\udc00', '\ue000',
  '(', ')', '*', ',', ';', "'", '"', '.', '!', '?', '-', '_', '<', '>', '|', '[', ']', '##', '\u2581',
];

function randomRecords(seed, count) {
  let x = seed >>> 0;
  const rnd = () => { // mulberry32
    x = (x + 0x6d2b79f5) >>> 0;
    let t = x;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const text = () => {
    const k = 1 + Math.floor(rnd() * 24);
    let s = '';
    for (let i = 0; i < k; i++) s += PALETTE[Math.floor(rnd() * PALETTE.length)];
    return s;
  };
  const out = [];
  for (let i = 0; i < count; i++) out.push({ question: text(), sql: text() });
  return out;
}

module.exports = { hostileRecords, randomRecords };
