// The reference side of bench_tokenize_json.sh: HuggingFace tokenizers and
// tiktoken (node packages pinned in tests/conformance) on the same JSONL
// corpus `pairshard bench-tokenize` reads.
//   node hf_tokenize_json_bench.js corpus OUT.jsonl MB       write Spider train+dev pairs repeated to MB (10^6 bytes of text)
//   node hf_tokenize_json_bench.js hf TOKENIZER.json IN.jsonl   encodeBatch: question and sql each encoded, special tokens on
//   node hf_tokenize_json_bench.js tiktoken gpt2 IN.jsonl       tiktoken's encoding: question and sql each encoded
//   node hf_tokenize_json_bench.js load TOKENIZER.json          Tokenizer.fromString: milliseconds and RSS growth
// The node binding's encodeBatch takes single strings only (0.23.2:
// Vec<String>), so HF and tiktoken both encode question and sql as two
// inputs where pairshard encodes the pair: the same text, HF adding its
// special tokens twice (a few ids in ~40; the work is in the text).
// The timed modes print "seconds S  X MB/s  Y tokens/s" for one whole pass
// after a warm-up batch; run them with TOKENIZERS_PARALLELISM=false and
// RAYON_NUM_THREADS=1 for one core (HF's batch otherwise uses every core).
'use strict';
const fs = require('fs');
const path = require('path');
const MODULES = path.join(__dirname, '..', 'tests', 'conformance', 'node_modules');
const BATCH = 1024;

function readPairs(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => {
    const r = JSON.parse(l);
    return [r.question, r.sql];
  });
}

function textBytes(pairs) {
  return pairs.reduce((n, [q, s]) => n + Buffer.byteLength(q) + Buffer.byteLength(s), 0);
}

function report(bytes, tokens, secs) {
  console.log(`seconds ${secs.toFixed(3)}  ${(bytes / 1e6 / secs).toFixed(2)} MB/s  ${(tokens / secs).toFixed(0)} tokens/s`);
}

function writeCorpus(out, mb) {
  const root = path.join(__dirname, '..', 'tests', 'data', 'spider');
  const lines = [];
  let bytes = 0;
  for (const f of ['train.json', 'dev.json']) {
    for (const r of JSON.parse(fs.readFileSync(path.join(root, f), 'utf8'))) {
      lines.push(JSON.stringify({ id: String(lines.length), question: r.question, sql: r.query }));
      bytes += Buffer.byteLength(r.question) + Buffer.byteLength(r.query);
    }
  }
  const copies = Math.ceil((mb * 1e6) / bytes);
  const fd = fs.openSync(out, 'w');
  for (let i = 0; i < copies; i++) fs.writeSync(fd, lines.join('\n') + '\n');
  fs.closeSync(fd);
  console.log(`pairs ${lines.length * copies}  bytes ${bytes * copies}  copies ${copies}`);
}

async function benchHf(file, input) {
  const hf = require(path.join(MODULES, 'tokenizers'));
  const tok = hf.Tokenizer.fromString(fs.readFileSync(file, 'utf8'));
  const pairs = readPairs(input);
  const texts = pairs.flat();
  const opts = { addSpecialTokens: true };
  await tok.encodeBatch(texts.slice(0, BATCH), opts); // warm-up
  let tokens = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < texts.length; i += BATCH) {
    for (const e of await tok.encodeBatch(texts.slice(i, i + BATCH), opts)) tokens += e.getIds().length;
  }
  report(textBytes(pairs), tokens, Number(process.hrtime.bigint() - t0) / 1e9);
}

function benchTiktoken(name, input) {
  const { get_encoding } = require(path.join(MODULES, 'tiktoken'));
  const enc = get_encoding(name);
  const pairs = readPairs(input);
  for (const [q, s] of pairs.slice(0, BATCH)) enc.encode(q), enc.encode(s); // warm-up
  let tokens = 0;
  const t0 = process.hrtime.bigint();
  for (const [q, s] of pairs) tokens += enc.encode(q).length + enc.encode(s).length;
  report(textBytes(pairs), tokens, Number(process.hrtime.bigint() - t0) / 1e9);
  enc.free();
}

function benchLoad(file) {
  const hf = require(path.join(MODULES, 'tokenizers'));
  const text = fs.readFileSync(file, 'utf8');
  const rss0 = process.memoryUsage().rss;
  const t0 = process.hrtime.bigint();
  const tok = hf.Tokenizer.fromString(text);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const grew = (process.memoryUsage().rss - rss0) / 1e6;
  console.log(`load_ms ${ms.toFixed(1)}  rss_growth_MB ${grew.toFixed(1)}  peak_rss_MB ${(process.resourceUsage().maxRSS / 1e3).toFixed(1)}  vocab ${tok.getVocabSize(true)}`);
}

async function main() {
  const [mode, a, b] = process.argv.slice(2);
  if (mode === 'corpus') writeCorpus(a, Number(b));
  else if (mode === 'hf') await benchHf(a, b);
  else if (mode === 'tiktoken') benchTiktoken(a, b);
  else if (mode === 'load') benchLoad(a);
  else throw new Error('usage: hf_tokenize_json_bench.js corpus|hf|tiktoken|load ...');
}

main().catch((e) => {
  console.error(`hf_tokenize_json_bench.js: ${e.message || e}`);
  process.exit(1);
});
