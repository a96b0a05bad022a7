// Measures what scripts/unicode-hf-delta.txt's [onig] lines state: prints,
// for each class HF's regex engine knows (\p{L}, \p{M}, \p{Nd}, \p{N}), the
// code points it holds, as "CLASS LO HI" ranges, asking the node binding
// itself (its Unicode is newer than the UCD's). The code points where the
// UCD's category disagrees are the [onig] lines; scripts/gen-unicode.py
// turns them into tokenize/pretok_uclass.inc.
//   node tests/tools/gen_pretok_uclass.js > /tmp/hf_classes.txt
'use strict';
const hf = require(process.env.PS_ROOT + '/tests/conformance/node_modules/tokenizers');
function pretok(regex) {
  return hf.Tokenizer.fromString(JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: regex }, behavior: 'Removed', invert: false },
    post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' },
  })).getPreTokenizer();
}
for (const [name, cls] of [['L', 'L'], ['M', 'M'], ['Nd', 'Nd'], ['N', 'N']]) {
  const p = pretok(`\\P{${cls}}+`); // the pieces left are the runs of the class
  const inClass = new Uint8Array(0x110000);
  for (let base = 0; base < 0x110000; base += 4096) {
    let s = '';
    for (let cp = base; cp < base + 4096; cp++)
      if (cp < 0xd800 || cp > 0xdfff) s += String.fromCodePoint(cp);
    for (const [piece] of p.preTokenizeString(s))
      for (const ch of piece) inClass[ch.codePointAt(0)] = 1;
  }
  let lo = -1;
  for (let cp = 0; cp <= 0x110000; cp++) {
    const v = cp < 0x110000 && inClass[cp];
    if (v && lo < 0) lo = cp;
    if (!v && lo >= 0) { console.log(`${name} ${lo} ${cp - 1}`); lo = -1; }
  }
}
