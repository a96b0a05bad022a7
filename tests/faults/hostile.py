#!/usr/bin/python3
"""Hostile sets: what tests/cli/inspect.sh does not already cover.

Symlinks and special files in the set directory (a shard or the manifest
linked outside the set, to /etc/passwd, /dev/zero, a FIFO, a directory; a
FIFO in place of a shard), huge counts in the manifest (records 1e18,
bucket index 2^32, block_records 2^40, blocks 2^40, bounds past u32, vocab
size 2^40, floats, negatives), tiny manifests that open huge arrays,
deeply nested JSON, and newer or odd format versions -- for `inspect
--verify` and `pairshard read` (which plans an epoch from the manifest's counts alone, so a count it believes is memory
it allocates). Everything runs under an address-space limit (ulimit -v,
FAULT_VMEM_MB, default 1024) to show no count turns into a huge malloc,
with a time limit (no hang), and must end in a clear refusal: exit 1
(a damaged set) or 2 (a set that cannot be read), the message naming the
manifest or the shard; never a crash, a hang, or exit 0.
"""
import json
import os
import resource
import shutil

from faultlib import (TMP, DATA, DEV, PAIRSHARD, build_args, finish, fresh_dir, have_read, note, run,
                      tap, verify)

VMEM = int(os.environ.get("FAULT_VMEM_MB", "1024")) << 20
TIMEOUT = 10


def limited():
    # FAULT_VMEM_MB=0: no limit (a sanitized binary reserves terabytes of
    # address space for its shadow memory and cannot run under one).
    if VMEM:
        resource.setrlimit(resource.RLIMIT_AS, (VMEM, VMEM))


base = os.path.join(fresh_dir("hostile-base"), "set")
r = run(build_args(base, [DEV], 2))
outside = os.path.join(TMP, "hostile-base", "outside")
os.makedirs(outside)
shutil.copy(os.path.join(base, "shard-00000.mdb"), os.path.join(outside, "shard-00000.mdb"))
shutil.copy(os.path.join(base, "manifest.json"), os.path.join(outside, "manifest.json"))
os.mkfifo(os.path.join(outside, "fifo"))
# read is part of every case: a read that is missing or broken fails the
# control and every case it is run on (as in corrupt.py), never a skip.
tap(have_read(), "pairshard read --help lists --skip-corrupt and --tokens")
base_read = None


def read_cmd(d):
    return [PAIRSHARD, "read", d, "--threads", "2", "--tokens"]


# Control: the limits do not stop a good set.
v = run([PAIRSHARD, "inspect", "--verify", base], timeout=TIMEOUT, preexec=limited)
tap(r.rc == 0 and v.rc == 0, "control: the intact set verifies under ulimit -v %d MiB (0: none)"
    % (VMEM >> 20))
rd = run(read_cmd(base), timeout=TIMEOUT, preexec=limited)
base_read = rd.out
tap(rd.rc == 0 and rd.out.count(b"\n") > 0,
    "control: pairshard read delivers the intact set under the limit (%s)" % rd.why())

work = os.path.join(TMP, "hostile-work")
cases = refused = 0


def fresh():
    if os.path.lexists(work):
        shutil.rmtree(work)
    shutil.copytree(base, work, symlinks=True)
    return work


def expect(desc, codes, names, verify_too=True, read_codes=None):
    """Runs inspect (--verify) and read on `work`; each must exit with one
    of `codes` and mention one of `names` in its message."""
    global cases, refused
    cases += 1
    problems = []
    runs = [("inspect --verify" if verify_too else "inspect",
             [PAIRSHARD, "inspect"] + (["--verify"] if verify_too else []) + [work], codes),
            ("read", read_cmd(work), read_codes or codes)]
    got = []
    for tag, cmd, want in runs:
        res = run(cmd, timeout=TIMEOUT, preexec=limited)
        got.append("%s %s" % (tag, res.why()))
        if res.crashed():
            problems.append("%s %s" % (tag, res.why()))
        elif res.rc not in want:
            problems.append("%s exit %d, want %s" % (tag, res.rc, "/".join(map(str, want))))
        elif res.rc == 0:
            # Allowed only where the lie is in a count the reader does not
            # plan with: then it must deliver exactly the intact set.
            if res.out != base_read:
                problems.append("%s exit 0 with output that differs from the intact set's" % tag)
        elif not any(n in res.err for n in names):
            problems.append("%s: message does not name %s: %s" % (tag, " or ".join(names),
                                                                   res.err.strip()[-160:]))
    refused += not problems
    tap(not problems, "%s: %s%s" % (desc, ", ".join(got),
                                     " -- " + "; ".join(problems) if problems else ""))


S0 = "shard-00000.mdb"
# --- links and special files -------------------------------------------------
for target, what in ((os.path.join(outside, S0), "an identical shard outside the set"),
                     ("/etc/passwd", "/etc/passwd"), ("/dev/zero", "/dev/zero"),
                     (os.path.join(outside, "fifo"), "a FIFO outside the set"),
                     (outside, "a directory outside the set"),
                     (os.path.join(outside, "nothing-here"), "nowhere (dangling)")):
    d = fresh()
    os.remove(os.path.join(d, S0))
    os.symlink(target, os.path.join(d, S0))
    expect("%s is a symlink to %s" % (S0, what), (1, 2), [S0])
d = fresh()
os.remove(os.path.join(d, S0))
os.mkfifo(os.path.join(d, S0))
expect("%s is a FIFO" % S0, (1, 2), [S0])
for target, what in (("/dev/zero", "/dev/zero"), (os.path.join(outside, "fifo"), "a FIFO"),
                     ("/etc/passwd", "/etc/passwd")):
    d = fresh()
    os.remove(os.path.join(d, "manifest.json"))
    os.symlink(target, os.path.join(d, "manifest.json"))
    expect("manifest.json is a symlink to %s" % what, (2,), ["manifest.json"], verify_too=False)
d = fresh()
os.remove(os.path.join(d, "manifest.json"))
os.mkfifo(os.path.join(d, "manifest.json"))
expect("manifest.json is a FIFO", (2,), ["manifest.json"], verify_too=False)


# --- lying counts -------------------------------------------------------------
def edit(desc, code, codes=(2,), names=("manifest.json",), verify_too=True, read_codes=None):
    d = fresh()
    p = os.path.join(d, "manifest.json")
    m = json.load(open(p))
    exec(code, {"m": m})
    with open(p, "w") as f:
        json.dump(m, f)
    expect(desc, codes, list(names), verify_too, read_codes)


big = 10 ** 18
# The reader plans from the per-bucket counts; a lie in a shard's or the
# set's totals alone may be read past (exit 0), but only with the intact
# set's exact output.
edit("a shard claims 1e18 records", "m['shards'][0]['records'] = %d" % big, (1, 2),
     ("manifest.json", S0), read_codes=(0, 1, 2))
edit("a bucket claims 1e18 records", "m['shards'][0]['buckets'][1]['records'] = %d" % big, (1, 2),
     ("manifest.json", S0))
edit("a bucket claims 2^40 blocks", "m['shards'][0]['buckets'][1]['blocks'] = 2**40", (1, 2),
     ("manifest.json", S0))
edit("every bucket of every shard claims 2^32 blocks",
     "[b.__setitem__('blocks', 2**32) for s in m['shards'] for b in s['buckets']]", (1, 2),
     ("manifest.json", "shard-0000"))
edit("totals claim 1e18 records", "m['totals']['records'] = %d" % big, (1, 2),
     ("manifest.json", "total"), read_codes=(0, 1, 2))
edit("bucket index 4294967296", "m['shards'][0]['buckets'][0]['bucket'] = 4294967296")
edit("a bucket bound of 4294967296", "m['buckets'][-1] = 4294967296")
edit("block_records 2^40", "m['block_records'] = 2**40")
edit("block_records 0", "m['block_records'] = 0")
edit("vocab_size 2^40", "m['tokenizer']['vocab_size'] = 2**40", (1, 2))
edit("id_width 8", "m['tokenizer']['id_width'] = 8")
edit("records as a float 1e300", "m['shards'][0]['records'] = 1e300")
edit("records negative", "m['shards'][0]['records'] = -1")
edit("10^6 + 1 shards listed", "m['shards'] = [{'file': 'shard-%05d.mdb' % i}"
     " for i in range(1000001)]", (2,), ("manifest.json",))
edit("65537 buckets", "m['buckets'] = list(range(1, 65538))")
edit("format_version 3 (newer)", "m['format_version'] = 3", (2,), ("newer", "version"))
edit("format_version 1.5", "m['format_version'] = 1.5")
edit("format_version 0", "m['format_version'] = 0")
edit("format_version as a string", "m['format_version'] = '1'")
edit("the shard file '../x'", "m['shards'][0]['file'] = '../x'")
edit("the shard file '/etc/passwd'", "m['shards'][0]['file'] = '/etc/passwd'")
edit("the shard file 'shard-1.mdb/../../x'", "m['shards'][0]['file'] = 'shard-1.mdb/../../x'")


def raw(desc, text, codes=(2,)):
    d = fresh()
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write(text)
    expect(desc, codes, ["manifest.json"], verify_too=False)


raw("a 20-byte manifest opening the shards array", '{"shards":[{"bucket')
raw("a small manifest claiming 2^40 blocks of one bucket",
    '{"format":"pairshard-manifest","format_version":1,"buckets":[8],"block_records":1,'
    '"labels":[],"tokenizer":{"vocab_size":1,"id_width":2},"shards":[{"file":"shard-00000.mdb",'
    '"records":1099511627776,"tokens":1,"blocks":1099511627776,"bytes":1,"sha256":"%s",'
    '"buckets":[{"bucket":0,"records":1099511627776,"tokens":1,"blocks":1099511627776}]}]}'
    % ("0" * 64), (1, 2))
raw("100000 nested arrays", "[" * 100000 + "]" * 100000)
raw("an empty manifest", "")
raw("a manifest of NUL bytes", "\0" * 4096)

# A tokenizer.json loaded with too little memory (ulimit -v 12..30 MiB, by
# 2 MiB): each load succeeds or ends in "FILE: ...out of memory", never a
# crash, a reason left empty (jansson says it ran out with line -1 and no
# text: once "gpt2.tokenizer.json:-1:-1: ") or a wrong one (a syntax error
# where jansson's lexer lost bytes; "model.unk_token: missing" left by an
# earlier candidate model when the last one ran out).
one = os.path.join(fresh_dir("hostile-tok"), "one.jsonl")
with open(one, "w") as f:
    f.write('{"id": "q1", "question": "How many singers?", "sql": "SELECT count(*) FROM singer"}\n')
said_oom = tok_cases = 0
for name in ("gpt2", "roberta-base", "t5-small", "bert-base-uncased"):
    path = os.path.join(DATA, "tokenizers", name + ".tokenizer.json")
    for mib in range(12, 31, 2) if VMEM else ():
        def low(mib=mib):
            resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))
        res = run([PAIRSHARD, "tokenize", "--tokenizer-json", path, one], timeout=TIMEOUT,
                  preexec=low)
        last = res.err.strip().splitlines()[-1] if res.err.strip() else ""
        ok = res.rc == 0 or (res.rc == 2 and not res.crashed() and "out of memory" in last
                             and (name + ".tokenizer.json: " in last
                                  or last == "pairshard tokenize: out of memory"))
        said_oom += "tokenizer.json: out of memory parsing the JSON" in last
        tok_cases += 1
        cases += 1
        refused += ok
        tap(ok, "tokenize with %s under ulimit -v %d MiB: %s, \"%s\"" % (
            name, mib, res.why(), last[:160]))
if VMEM:
    tap(said_oom > 0, "%d of %d tokenizer loads with too little memory said \"FILE: out of memory "
        "parsing the JSON\"" % (said_oom, tok_cases))
else:
    print("ok - # SKIP tokenizer.json under small ulimit -v: no address-space limit here "
          "(FAULT_VMEM_MB=0)", flush=True)

note("hostile: %d cases, %d refused cleanly (inspect%s), %s" % (
    cases, refused, " and read",
    "under ulimit -v %d MiB" % (VMEM >> 20) if VMEM else "without an address-space limit"))
print("# TOTAL hostile trials=%d survived=%d" % (cases, refused))
finish()
