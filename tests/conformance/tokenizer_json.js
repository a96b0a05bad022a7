// Differential test of `pairshard tokenize --tokenizer-json FILE` against
// HuggingFace tokenizers (node binding, the version package-lock.json pins),
// for every tokenizer.json in tests/data/tokenizers/.
//
// Corpus: a fixed sample of Spider dev (questions and SQL), Chinese
// questions (the CSpider/DuSQL/NL2SQL samples of tests/data/formats and the
// CSpider-like set tests/data/cspider writes), and hostile strings (emoji,
// ZWJ sequences, combining marks, RTL, control characters, digit runs,
// contractions in every case, whitespace runs, special-token strings whole
// and cut), and seeded random mixtures of all of these. For each file:
// encode(question, sql) and encode(question), with special tokens,
// untruncated and truncated at 16, 32 and 128 (HF: setTruncation(N),
// longest_first), compared id for id, input_ids and token_type_ids. One
// TAP line per (file, mode, length); a mismatch prints the file, record,
// first differing position and both ids there. Exits 1 on any mismatch.
//
// env: PAIRSHARD (the binary), PS_ROOT (repository root); PS_TOKJSON_ONLY
// (a substring: test only the files whose name contains it); PS_FUZZ_SEED
// and PS_FUZZ_COUNT change the seeded random records (default 20261203, 200).
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const hf = require('tokenizers');
const { requireEnv, tapCounter, tempDir } = require('./common');
const { hostileRecords, randomRecords } = require('./hostile');

const { PAIRSHARD, ROOT, DATA } = requireEnv('tokenizer_json.js');
const TOKDIR = path.join(DATA, 'tokenizers');
const TMP = tempDir('pairshard-tokjson-');

const LENGTHS = [0, 16, 32, 128]; // 0: no truncation
const MODES = ['pair', 'question'];
const SPIDER_EVERY = 8; // every 8th Spider dev record: 130 records
const SEED = Number(process.env.PS_FUZZ_SEED || 20261203);
const COUNT = Number(process.env.PS_FUZZ_COUNT || 200);

const TAP = tapCounter();
const tap = TAP.tap;

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function chineseRecords() {
  const out = [];
  const fmt = path.join(DATA, 'formats');
  for (const set of ['cspider', 'dusql']) {
    for (const r of readJson(path.join(fmt, set, 'dev.json'))) out.push({ question: r.question, sql: r.query });
  }
  // NL2SQL has no SQL text: its condition values stand in for the second segment.
  for (const line of fs.readFileSync(path.join(fmt, 'nl2sql', 'train.json'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    out.push({ question: r.question, sql: r.sql.conds.map((c) => String(c[2])).join(' ') });
  }
  const made = path.join(TMP, 'cspider_like.json');
  const py = spawnSync('python3', [path.join(DATA, 'cspider', 'make_cspider_like.py'),
    path.join(DATA, 'spider', 'dev.json'), made, '60'], { encoding: 'utf8' });
  if (py.status === 0) {
    for (const r of readJson(made)) out.push({ question: r.question, sql: r.query });
  } else {
    console.log(`# python3 make_cspider_like.py failed (${py.error || py.stderr}); CSpider-like records left out`);
  }
  return out;
}

function corpus() {
  const records = [];
  readJson(path.join(DATA, 'spider', 'dev.json')).forEach((r, i) => {
    if (i % SPIDER_EVERY === 0) records.push({ id: `spider-${i}`, question: r.question, sql: r.query });
  });
  chineseRecords().forEach((r, i) => records.push({ id: `zh-${i}`, ...r }));
  hostileRecords().forEach((r, i) => records.push({ id: `hostile-${i}`, ...r }));
  randomRecords(SEED, COUNT).forEach((r, i) => records.push({ id: `random-${i}`, ...r }));
  return records;
}

function runPairshard(args) {
  return spawnSync(PAIRSHARD, ['tokenize', ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
}

async function hfEncodeAll(tok, records, mode) {
  const encs = await Promise.all(records.map((r) => (mode === 'pair' ? tok.encode(r.question, r.sql, { addSpecialTokens: true })
    : tok.encode(r.question, null, { addSpecialTokens: true }))));
  return encs.map((e) => ({ ids: e.getIds(), types: e.getTypeIds() }));
}

function firstDiff(a, b) {
  const m = Math.min(a.length, b.length);
  for (let i = 0; i < m; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : m;
}

// One line per mismatching record (at most 3 per test): where the lists
// first differ and the ids (with HF's token) on each side.
function describe(tok, rec, mode, what, ours, theirs) {
  const at = firstDiff(ours, theirs);
  const show = (list) => (at < list.length ? `${list[at]}${what === 'ids' ? ` ${JSON.stringify(tok.idToToken(list[at]))}` : ''}` : 'end');
  const text = `q=${JSON.stringify(rec.question.slice(0, 60))}${mode === 'pair' ? ` sql=${JSON.stringify(rec.sql.slice(0, 40))}` : ''}`;
  return `#   ${rec.id} ${what}: first difference at ${at}: hf ${show(theirs)} | pairshard ${show(ours)}` +
    ` (lengths ${theirs.length}/${ours.length}) ${text}`;
}

async function compare(name, file, tok, records, input, mode, maxLength) {
  const args = ['--tokenizer-json', file, input, '-o', '-'];
  if (mode !== 'pair') args.push('--field', mode);
  if (maxLength) args.push('--max-length', String(maxLength));
  const label = `${name} ${mode} max=${maxLength || 'none'}`;
  const r = runPairshard(args);
  if (r.status !== 0) {
    tap(false, label);
    // the reason, or a sanitizer's report (its "=====" rule skipped) with its first frame
    const why = r.stderr.split('\n').filter((l) => l.trim() !== '' && !/^=+$/.test(l)).slice(0, 4);
    console.log(`#   pairshard exited ${r.status}${r.signal ? ` (${r.signal})` : ''}: ${why.join(' | ')}`);
    return false;
  }
  const ours = r.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  if (maxLength) tok.setTruncation(maxLength);
  else tok.disableTruncation();
  const theirs = await hfEncodeAll(tok, records, mode);
  const notes = [];
  let bad = ours.length === records.length ? 0 : 1;
  if (bad) notes.push(`#   pairshard wrote ${ours.length} records for ${records.length}`);
  for (let i = 0; i < Math.min(ours.length, records.length); i++) {
    const o = ours[i];
    let what = null;
    if (o.id !== records[i].id) what = 'id';
    else if (firstDiff(o.input_ids, theirs[i].ids) >= 0) what = 'ids';
    else if (firstDiff(o.token_type_ids, theirs[i].types) >= 0) what = 'types';
    if (!what) continue;
    bad++;
    if (notes.length < 3) {
      notes.push(what === 'id' ? `#   record ${i}: id ${JSON.stringify(o.id)}, expected ${records[i].id}`
        : describe(tok, records[i], mode, what, what === 'ids' ? o.input_ids : o.token_type_ids,
          what === 'ids' ? theirs[i].ids : theirs[i].types));
    }
  }
  tap(bad === 0, `${label}${bad ? ` (${bad} of ${records.length} records differ)` : ''}`);
  notes.forEach((l) => console.log(l));
  return true;
}

// Every file is named in tokenizers/PROVENANCE.md with its sha256 (in a
// "## file" section or a table row: the first 64-hex string after the name).
function checkProvenance(files) {
  const prov = fs.readFileSync(path.join(TOKDIR, 'PROVENANCE.md'), 'utf8');
  for (const f of files) {
    const sum = crypto.createHash('sha256').update(fs.readFileSync(path.join(TOKDIR, f))).digest('hex');
    let at = prov.indexOf(`## ${f}`);
    if (at < 0) at = prov.indexOf(`| ${f} |`);
    const named = at < 0 ? null : (prov.slice(at).match(/\b[0-9a-f]{64}\b/) || [null])[0];
    tap(named === sum, `PROVENANCE.md: ${f} sha256${named === sum ? '' : ` is ${sum}, it says ${named}`}`);
  }
}

async function main() {
  const records = corpus();
  const input = path.join(TMP, 'corpus.jsonl');
  fs.writeFileSync(input, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const only = process.env.PS_TOKJSON_ONLY || '';
  const files = fs.readdirSync(TOKDIR).filter((f) => f.endsWith('.tokenizer.json') && f.includes(only)).sort();
  console.log(`# ${records.length} records, ${files.length} tokenizer.json files`);
  if (files.length === 0) tap(false, `no tokenizer.json in ${TOKDIR} matches ${JSON.stringify(only)}`);
  checkProvenance(files);
  for (const f of files) {
    const name = f.replace(/\.tokenizer\.json$/, '');
    const file = path.join(TOKDIR, f);
    let tok;
    try {
      tok = hf.Tokenizer.fromString(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      tap(false, `${name}: HF does not load it: ${e.message}`);
      continue;
    }
    settings: for (const mode of MODES) {
      for (const len of LENGTHS) {
        // A file pairshard refuses fails once, not once per setting.
        if (!(await compare(name, file, tok, records, input, mode, len))) {
          console.log(`#   (the other settings of ${name} are not run)`);
          break settings;
        }
      }
    }
  }
  console.log(`1..${TAP.count()}`);
  if (TAP.failures()) console.log(`# ${TAP.failures()} of ${TAP.count()} failed`);
  process.exit(TAP.failures() ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
