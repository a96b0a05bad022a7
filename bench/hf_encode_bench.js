// HuggingFace tokenizers (node binding, pinned in tests/conformance): the
// BertTokenizerFast pipeline (hf_bert.js) encoding each question of a JSON
// array alone (no cleaning, no template), one encode at a time and with
// encodeBatch of 64, repeated until >= 1 s each. Prints
// "single X us/question batch64 Y us/record".
//   node hf_encode_bench.js VOCAB INPUT.json
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', 'tests', 'conformance', 'node_modules', 'tokenizers'));
const { bertTokenizer } = require('./hf_bert');

async function timed(pass, n) {
  await pass(); // warm-up
  let done = 0;
  const t0 = process.hrtime.bigint();
  let secs = 0;
  do {
    await pass();
    done += n;
    secs = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (secs < 1);
  return (secs / done) * 1e6;
}

async function main() {
  const [vocab, input] = process.argv.slice(2);
  const qs = JSON.parse(fs.readFileSync(input, 'utf8')).map((r) => r.question);
  const tok = await bertTokenizer(hf, vocab);
  const single = await timed(async () => {
    for (const q of qs) await tok.encode(q);
  }, qs.length);
  const batch = await timed(async () => {
    for (let i = 0; i < qs.length; i += 64) await tok.encodeBatch(qs.slice(i, i + 64));
  }, qs.length);
  console.log(`single ${single.toFixed(2)} us/question batch64 ${batch.toFixed(2)} us/record`);
}
main().catch((e) => { console.error(e); process.exit(1); });
