// The ids a set stores against HuggingFace tokenizers (pairshard build
// --layout; docs/BUILD.md "Layouts"):
//   pair:    encode(prompt, completion) with special tokens (the prompt
//            alone when the record has no completion);
//   causal:  prefix + encode(prompt + completion, add_special_tokens=False)
//                   [+ EOS],
//            the whole text encoded once, as a model reads it at inference,
//            boundary = prefix + encode(prompt, False).length, whose ids must
//            be the whole text's first ids (a token boundary at the junction);
//            the prefix is what encode(prompt, add_special_tokens=True) puts
//            before the prompt's own ids (the post-processor's, BOS for
//            Llama 3); EOS (the 5th argument, "none" for none) ends every
//            record whose text does not end in a special token of the file's
//            added_tokens (a template's <|im_end|>);
//   seq2seq: encode(prompt, True) + encode(completion, True), boundary = the
//            source's length.
// prompt and completion are what `pairshard clean --template` wrote (the
// question and the SQL without a template).
//   node layout_ids.js pair|causal|seq2seq TOKENIZER.json CLEANED.jsonl IDS.jsonl [EOS]
// IDS: {"id", "input_ids"[, "boundary"]} lines (tests/tools/layout_set.py
// --dump); a boundary is compared when the line has one.
// Exits 0 when every stored record matches, 1 naming the first mismatches.
'use strict';
const hf = require('tokenizers');
const fs = require('fs');

const [layout, tokFile, cleanedFile, idsFile, eosArg] = process.argv.slice(2);
const eos = eosArg === undefined || eosArg === 'none' ? null : Number(eosArg);
const special = new Set((JSON.parse(fs.readFileSync(tokFile, 'utf8')).added_tokens || [])
  .filter((t) => t.special).map((t) => t.id));
const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

// The ids encode(text, true) holds before text's own ids.
function prefixOf(withSp, plain) {
  for (let k = 0; k + plain.length <= withSp.length; k++)
    if (same(withSp.slice(k, k + plain.length), plain)) return withSp.slice(0, k);
  throw new Error('the text\'s ids are not inside its encoding with special tokens');
}

async function expected(tok, prompt, completion) {
  const ids = async (t, sp) => (await tok.encode(t, null, { addSpecialTokens: sp })).getIds();
  if (layout === 'pair')
    return { ids: (await tok.encode(prompt, completion == null ? null : completion, { addSpecialTokens: true })).getIds() };
  if (layout === 'seq2seq') {
    const src = await ids(prompt, true);
    return { ids: src.concat(await ids(completion, true)), boundary: src.length };
  }
  const p = await ids(prompt, false);
  const pre = prefixOf(await ids(prompt, true), p);
  const whole = await ids(prompt + completion, false);
  if (!same(whole.slice(0, p.length), p))
    return { junction: true, ids: [], boundary: -1 };
  const out = pre.concat(whole);
  if (eos !== null && !(whole.length > p.length && special.has(whole[whole.length - 1])))
    out.push(eos);
  return { ids: out, boundary: pre.length + p.length };
}

async function main() {
  const tok = hf.Tokenizer.fromString(fs.readFileSync(tokFile, 'utf8'));
  const cleaned = new Map(lines(cleanedFile).map((r) => [r.id, r]));
  const stored = lines(idsFile);
  let bad = 0;
  for (const s of stored) {
    const r = cleaned.get(s.id);
    const prompt = r && (r.prompt != null ? r.prompt : r.question);
    const completion = r && (r.prompt != null ? r.completion : r.sql);
    if (!r || prompt == null || (completion == null && layout !== 'pair')) {
      console.error(`record ${s.id}: no prompt and completion in ${cleanedFile}`);
      bad++;
      continue;
    }
    const want = await expected(tok, prompt, completion);
    if (want.junction) {
      if (bad < 3)
        console.error(`record ${s.id}: a token of the whole text crosses from the prompt into the completion`);
      bad++;
      continue;
    }
    if (!same(want.ids, s.input_ids) || (s.boundary !== undefined && want.boundary !== s.boundary)) {
      if (bad < 3)
        console.error(`record ${s.id}: stored ${s.input_ids.length} ids, boundary ${s.boundary}; ` +
                      `HF ${want.ids.length} ids, boundary ${want.boundary}; first difference at ` +
                      `${want.ids.findIndex((v, i) => v !== s.input_ids[i])}`);
      bad++;
    }
  }
  console.error(`${stored.length} records compared, ${bad} differ`);
  process.exit(stored.length > 0 && bad === 0 ? 0 : 1);
}
main().catch((e) => { console.error(e); process.exit(1); });
