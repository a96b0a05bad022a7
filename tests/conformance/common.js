// Setup the conformance scripts share: the environment they run in, a
// temporary directory removed at exit, and numbered TAP lines.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

// PAIRSHARD (the binary) and PS_ROOT (the repository root) from the
// environment, and ROOT's tests/data; exits 2 naming `script` without them.
function requireEnv(script) {
  const PAIRSHARD = process.env.PAIRSHARD;
  const ROOT = process.env.PS_ROOT;
  if (!PAIRSHARD || !ROOT) {
    console.error(`${script}: set PAIRSHARD and PS_ROOT`);
    process.exit(2);
  }
  return { PAIRSHARD, ROOT, DATA: path.join(ROOT, 'tests', 'data') };
}

// A fresh directory in the system's temporary one, removed when the process exits.
function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// TAP lines numbered from 1: tap(ok, what) prints one; count() and
// failures() say how many were printed and how many were not ok.
function tapCounter() {
  let n = 0;
  let failures = 0;
  return {
    tap(ok, what) {
      n++;
      if (!ok) failures++;
      console.log(`${ok ? 'ok' : 'not ok'} ${n} - ${what}`);
    },
    count: () => n,
    failures: () => failures,
  };
}

module.exports = { requireEnv, tempDir, tapCounter };
