// The tokenize stage of the Python peer in bench/build_baseline.py:
// HuggingFace tokenizers (node binding, the version tests/conformance pins)
// built as transformers' BertTokenizerFast builds BERT from vocab.txt,
// encoding (question, sql) pairs in batches (encodeBatch) with longest_first
// truncation to MAX_LENGTH.
//
//   node hf_tokenize_pairs.js VOCAB MAX_LENGTH PAIRS.json OUT.bin
//
// PAIRS.json: a JSON array of [question, sql]. OUT.bin: for each pair in
// order a u32 length and a u32 type boundary (index of the first type-1
// token), then every pair's ids in order, u32 each (all little-endian). Prints one JSON line on stdout:
// {"records", "tokens", "seconds"} where seconds covers the encoding and
// getting the ids and type ids out of the encodings (not reading the pairs
// or writing OUT.bin: that is the hand-off between the peer's processes,
// which a one-process Python pipeline would not have).
//
// Threads: TOKENIZERS_PARALLELISM=false encodes on one core;
// TOKENIZERS_PARALLELISM=true with RAYON_NUM_THREADS=N lets encodeBatch use
// N cores.
'use strict';
const fs = require('fs');
const path = require('path');
const hf = require(path.join(__dirname, '..', 'tests', 'conformance', 'node_modules', 'tokenizers'));
const { bertTokenizer } = require('./hf_bert');

const BATCH = 4096;

async function main() {
  const [vocab, maxLengthArg, pairsFile, outFile] = process.argv.slice(2);
  if (!outFile) {
    console.error('usage: node hf_tokenize_pairs.js VOCAB MAX_LENGTH PAIRS.json OUT.bin');
    process.exit(2);
  }
  const maxLength = Number(maxLengthArg);
  const pairs = JSON.parse(fs.readFileSync(pairsFile, 'utf8'));
  const tok = await bertTokenizer(hf, vocab);
  if (maxLength > 0) tok.setTruncation(maxLength, { strategy: 'LongestFirst' });

  const n = pairs.length;
  const lengths = new Uint32Array(n);
  const bounds = new Uint32Array(n);
  const idChunks = [];
  let tokens = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i += BATCH) {
    // The node binding's encodeBatch takes single sequences only (pairs
    // fail with StringExpected), so each side is batch-encoded without
    // special tokens and HF's own postProcess joins them: the truncation
    // (longest_first) and the [CLS] A [SEP] B [SEP] template, which is
    // what encode(question, sql) does inside.
    const slice = pairs.slice(i, i + BATCH);
    // One batch at a time (two in flight would use two libuv threads).
    const qs = await tok.encodeBatch(slice.map((p) => p[0]), { addSpecialTokens: false });
    const ss = await tok.encodeBatch(slice.map((p) => p[1]), { addSpecialTokens: false });
    const encs = qs.map((q, j) => tok.postProcess(q, ss[j], true));
    let total = 0;
    const got = encs.map((e) => {
      const ids = e.getIds();
      const types = e.getTypeIds();
      total += ids.length;
      return [ids, types];
    });
    const chunk = new Uint32Array(total);
    let at = 0;
    for (let j = 0; j < got.length; j++) {
      const [ids, types] = got[j];
      lengths[i + j] = ids.length;
      let b = types.indexOf(1);
      bounds[i + j] = b < 0 ? ids.length : b;
      chunk.set(ids, at);
      at += ids.length;
    }
    tokens += total;
    idChunks.push(chunk);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;

  const fd = fs.openSync(outFile, 'w');
  const head = new Uint32Array(2 * n);
  for (let i = 0; i < n; i++) {
    head[2 * i] = lengths[i];
    head[2 * i + 1] = bounds[i];
  }
  fs.writeSync(fd, Buffer.from(head.buffer));
  for (const c of idChunks) fs.writeSync(fd, Buffer.from(c.buffer, c.byteOffset, c.byteLength));
  fs.closeSync(fd);
  console.log(JSON.stringify({ records: n, tokens, seconds }));
}
main().catch((e) => { console.error(e); process.exit(1); });
