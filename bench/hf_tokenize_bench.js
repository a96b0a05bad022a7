// HuggingFace tokenizers (node binding, the version tests/conformance pins)
// on the same pairs and settings as `pairshard bench-tokenize`: builds the
// BertTokenizerFast pipeline from vocab.txt, encodes every (question, sql)
// pair, repeats passes until >= 1 s, prints "X MB/s Y tokens/s".
//   node hf_tokenize_bench.js VOCAB MODE(serial|parallel) INPUT.json...
// serial: one encode at a time (with TOKENIZERS_PARALLELISM=false: one
// core). parallel: up to 256 encodes in flight on libuv's thread pool.
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', 'tests', 'conformance', 'node_modules', 'tokenizers'));
const { bertTokenizer } = require('./hf_bert');

async function main() {
  const [vocab, mode, ...inputs] = process.argv.slice(2);
  const pairs = [];
  for (const f of inputs) for (const r of JSON.parse(fs.readFileSync(f, 'utf8'))) pairs.push([r.question, r.query]);
  const bytes = pairs.reduce((n, [q, s]) => n + Buffer.byteLength(q) + Buffer.byteLength(s), 0);
  const tok = await bertTokenizer(hf, vocab);
  let tokens = 0;
  const pass = async () => {
    if (mode === 'serial') {
      for (const [q, s] of pairs) tokens += (await tok.encode(q, s)).getIds().length;
    } else {
      for (let i = 0; i < pairs.length; i += 256) {
        const encs = await Promise.all(pairs.slice(i, i + 256).map(([q, s]) => tok.encode(q, s)));
        for (const e of encs) tokens += e.getIds().length;
      }
    }
  };
  await pass(); // warm-up
  tokens = 0;
  let passes = 0;
  const t0 = process.hrtime.bigint();
  let secs = 0;
  do {
    await pass();
    passes++;
    secs = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (secs < 1);
  console.log(`passes ${passes}  seconds ${secs.toFixed(3)}  ${(bytes * passes / 1e6 / secs).toFixed(2)} MB/s  ${(tokens / secs).toFixed(0)} tokens/s`);
}
main().catch((e) => { console.error(e); process.exit(1); });
