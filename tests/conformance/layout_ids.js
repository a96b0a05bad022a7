// The ids of a causal or seq2seq set against HuggingFace tokenizers
// (issue 16): for every record of IDS ({"id", "a", "b"}: the prompt ids and
// the completion ids as the reader delivers them), with CLEANED's
// {"id", "prompt", "completion"}:
//   causal:  a = the post-processor's single-sequence prefix (the head of
//            encode(prompt) with special tokens) + encode(prompt) without
//            them; b = encode(completion) without special tokens;
//   seq2seq: a = encode(prompt), b = encode(completion), both with the
//            post-processor (T5: + </s>).
//   node layout_ids.js causal|seq2seq TOKENIZER.json CLEANED.jsonl IDS.jsonl
// Exits 0 when every record of IDS matches, 1 naming the first mismatches.
'use strict';
const hf = require('tokenizers');
const fs = require('fs');

const [mode, tokFile, cleanedFile, idsFile] = process.argv.slice(2);
const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const same = (x, y) => x.length === y.length && x.every((v, i) => v === y[i]);

async function ids(tok, text, special) {
  return (await tok.encode(text, null, { addSpecialTokens: special })).getIds();
}

async function main() {
  if (mode !== 'causal' && mode !== 'seq2seq') throw new Error(`mode ${mode}: causal or seq2seq`);
  const tok = hf.Tokenizer.fromString(fs.readFileSync(tokFile, 'utf8'));
  const cleaned = new Map(lines(cleanedFile).map((r) => [r.id, r]));
  const stored = lines(idsFile);
  let bad = 0;
  for (const s of stored) {
    const r = cleaned.get(s.id);
    let wantA, wantB;
    if (!r) {
      wantA = wantB = null;
    } else if (mode === 'seq2seq') {
      wantA = await ids(tok, r.prompt, true);
      wantB = await ids(tok, r.completion, true);
    } else {
      const bare = await ids(tok, r.prompt, false);
      const full = await ids(tok, r.prompt, true);
      // The prefix: what the post-processor puts before the sequence.
      let k = 0;
      while (k < full.length && !same(full.slice(k, k + bare.length), bare)) k++;
      wantA = full.slice(0, Math.min(k, full.length)).concat(bare);
      wantB = await ids(tok, r.completion, false);
    }
    if (!wantA || !same(wantA, s.a) || !same(wantB, s.b)) {
      if (bad < 3)
        console.error(`record ${s.id}: stored ${s.a.slice(0, 8)}... (${s.a.length}) | ` +
                      `${s.b.slice(0, 8)}... (${s.b.length}); HF ` +
                      (wantA ? `${wantA.slice(0, 8)}... (${wantA.length}) | ` +
                               `${wantB.slice(0, 8)}... (${wantB.length})` : 'no such record'));
      bad++;
    }
  }
  console.error(`${stored.length} records compared (${mode}), ${bad} differ`);
  process.exit(stored.length > 0 && bad === 0 ? 0 : 1);
}
main().catch((e) => { console.error(e); process.exit(1); });
