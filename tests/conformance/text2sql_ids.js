// The ids a text-to-SQL set stores against HuggingFace tokenizers: every
// record's ids must equal the reference's encode(prompt, completion) (with
// special tokens; the prompt alone when the record has no completion),
// where prompt and completion are what `pairshard clean --template` wrote.
//   node text2sql_ids.js TOKENIZER.json CLEANED.jsonl IDS.jsonl
// CLEANED: {"id", "prompt", "completion"} lines; IDS: {"id", "input_ids"}.
// Exits 0 when every record of IDS matches, 1 naming the first mismatches.
'use strict';
const hf = require('tokenizers');
const fs = require('fs');

const [tokFile, cleanedFile, idsFile] = process.argv.slice(2);
const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));

async function main() {
  const tok = hf.Tokenizer.fromString(fs.readFileSync(tokFile, 'utf8'));
  const cleaned = new Map(lines(cleanedFile).map((r) => [r.id, r]));
  const stored = lines(idsFile);
  let bad = 0;
  for (const s of stored) {
    const r = cleaned.get(s.id);
    if (!r) {
      console.error(`record ${s.id}: not in ${cleanedFile}`);
      bad++;
      continue;
    }
    const e = r.completion == null
      ? await tok.encode(r.prompt, null, { addSpecialTokens: true })
      : await tok.encode(r.prompt, r.completion, { addSpecialTokens: true });
    const want = e.getIds();
    if (want.length !== s.input_ids.length || want.some((v, i) => v !== s.input_ids[i])) {
      if (bad < 3)
        console.error(`record ${s.id}: stored ${s.input_ids.slice(0, 12)}... (${s.input_ids.length}) ` +
                      `HF ${want.slice(0, 12)}... (${want.length})`);
      bad++;
    }
  }
  console.error(`${stored.length} records compared, ${bad} differ`);
  process.exit(stored.length > 0 && bad === 0 ? 0 : 1);
}
main().catch((e) => { console.error(e); process.exit(1); });
