#!/usr/bin/python3
"""Output-path safety and aliasing: what every output FILE flag does with
what its path names.

Flags: clean -o/--rejects/--duplicates/--stats, tokenize -o, validate
--json/--html, read --save-state. Per flag, where it applies:
  - a symlink to a regular file in another directory: the target gets the
    bytes a plain run writes, the link stays a link, no temporary is left;
  - a dangling symlink: its target is created, the link stays;
  - a FIFO: a reader gets exactly the bytes, the FIFO stays a FIFO;
  - a character device (the null device, made with mknod here so that a
    binary that renames over it cannot damage the system's /dev/null):
    still a device after, clean may send all four outputs to it;
  - /dev/fd/N on a pipe: the bytes arrive through the pipe;
  - a directory: exit 2 before any input is read (stdin kept open and
    empty), the directory untouched;
  - inside a shard set (a file there, or a symlink into it): exit 2, the
    set byte-identical;
  - umask 022 and 077 give 0644 and 0600;
  - a full filesystem (tmpfs, size=64k, filled): the message names the
    file and the reason, and a previous file there is unchanged.
Aliasing: two outputs naming one file (same path, ./x vs x, a symlink, a
hard link, an absent file named twice), an output naming an input (the
input itself, through a symlink, a hard link, the rules file, the
vocabulary, a validate baseline): exit 2 before anything is read, every
file's bytes unchanged.
Each case fails against a binary without these guards (one that renames a
temporary over whatever the path names).
"""
import json
import os
import shutil
import socket
import stat
import subprocess
import threading

from faultlib import (DEV, PAIRSHARD, TMP, TRAIN, VOCAB, build_args, finish, fresh_dir, note, run, tap,
                      tree_bytes)

TIMEOUT = 20
P = PAIRSHARD
SENTINEL = b"previous contents\n"
cases = passed = 0


def case(ok, desc):
    global cases, passed
    cases += 1
    passed += bool(ok)
    tap(ok, desc)


def slurp(p):
    with open(p, "rb") as f:
        return f.read()


def put(p, data=SENTINEL):
    with open(p, "wb") as f:
        f.write(data)


# --- inputs -------------------------------------------------------------------
base = fresh_dir("outputs")
# Kept, duplicate and rejected records, each well over stdio's 1 MiB buffer,
# so a full disk shows while records stream, not only at the final flush.
corpus = os.path.join(base, "mixed.jsonl")
with open(corpus, "w") as f:
    for i, rec in enumerate(json.load(open(DEV))):
        for v in range(6):
            line = json.dumps({"id": "r%d.%d" % (i, v), "question": "%s (%d)" % (rec["question"], v),
                               "sql": rec["query"], "db_id": rec["db_id"]}) + "\n"
            f.write(line)
            f.write(line.replace('"id": "r', '"id": "d'))
            f.write(json.dumps({"id": "x%d.%d" % (i, v), "question": rec["question"] + " " * v,
                                "sql": ""}) + "\n")
rules = os.path.join(base, "rules.json")
put(rules, b"[]\n")
cleaned = os.path.join(base, "cleaned.jsonl")
r = run([P, "clean", "-q", corpus, "-o", cleaned])
vocab = os.path.join(base, "vocab.txt")
shutil.copy(VOCAB, vocab)
set_dir = os.path.join(base, "set")
rb = run(build_args(set_dir, [DEV], 2))
stats = os.path.join(base, "stats.json")
if rb.rc == 0:
    shutil.copy(os.path.join(set_dir, "stats.json"), stats)
tap(r.rc == 0 and rb.rc == 0, "control: the corpus cleans (%s) and the set builds (%s)"
    % (r.why(), rb.why()))
nulldev = os.path.join(base, "null")
os.mknod(nulldev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def clean_cmd(flag):
    def cmd(p):
        outs = {"-o": nulldev}
        outs[flag] = p
        args = [P, "clean", "-q", corpus]
        for k, v in outs.items():
            args += [k, v]
        return args
    return cmd


FLAGS = [
    ("clean -o", clean_cmd("-o")),
    ("clean --rejects", clean_cmd("--rejects")),
    ("clean --duplicates", clean_cmd("--duplicates")),
    ("clean --stats", clean_cmd("--stats")),
    ("tokenize -o", lambda p: [P, "tokenize", "--vocab", vocab, cleaned, "-o", p]),
    ("validate --json", lambda p: [P, "validate", "-q", "--baseline", stats, "--current", stats,
                                   "--json", p]),
    ("validate --html", lambda p: [P, "validate", "-q", "--baseline", stats, "--current", stats,
                                   "--html", p]),
    ("read --save-state", lambda p: [P, "read", set_dir, "--limit", "3", "--save-state", p]),
]
# A binary that opens --save-state with fopen() already wrote through links,
# FIFOs and devices; only the cases that failed there run for it.
STREAMING = [f for f in FLAGS if f[0] != "read --save-state"]


def reference(name, cmd):
    d = fresh_dir("outputs-ref")
    p = os.path.join(d, "out")
    res = run(cmd(p))
    return slurp(p) if res.rc == 0 and os.path.isfile(p) else None


REF = {name: reference(name, cmd) for name, cmd in FLAGS}
tap(all(v is not None for v in REF.values()), "control: every output flag writes a plain file (%s)"
    % ", ".join("%s %d bytes" % (n, len(v or b"")) for n, v in REF.items()))


def leftovers(*dirs):
    return [n for d in dirs for n in os.listdir(d) if ".tmp." in n]


# --- row 2: what the path names -----------------------------------------------
def symlink_cases(name, cmd):
    d = fresh_dir("outputs-link")
    tdir = fresh_dir("outputs-link-target")
    target, link = os.path.join(tdir, "real"), os.path.join(d, "link")
    put(target)
    os.symlink(target, link)
    res = run(cmd(link))
    ok = (res.rc == 0 and os.path.islink(link) and os.readlink(link) == target
          and slurp(target) == REF[name] and not leftovers(d, tdir))
    case(ok, "%s onto a symlink to a regular file: target updated, link kept (%s)"
         % (name, res.why()))
    os.remove(link)
    os.remove(target)
    os.symlink("../outputs-link-target/real", link)
    res = run(cmd(link))
    ok = (res.rc == 0 and os.path.islink(link) and os.path.isfile(target)
          and slurp(target) == REF[name])
    case(ok, "%s onto a dangling relative symlink: target created, link kept (%s)"
         % (name, res.why()))


def fifo_case(name, cmd):
    d = fresh_dir("outputs-fifo")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    sink = os.path.join(d, "read")
    with open(sink, "wb") as out:
        reader = subprocess.Popen(["cat", fifo], stdout=out)
    res = run(cmd(fifo), timeout=TIMEOUT)
    try:
        reader.wait(timeout=5)
        got = slurp(sink)
    except subprocess.TimeoutExpired:  # nothing opened the FIFO for writing
        reader.kill()
        reader.wait()
        got = None
    ok = res.rc == 0 and got == REF[name] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    case(ok, "%s onto a FIFO: the reader gets the bytes, the FIFO stays (%s, %s bytes read)"
         % (name, res.why(), "no" if got is None else len(got)))


def chardev_case(name, cmd):
    res = run(cmd(nulldev))
    ok = res.rc == 0 and stat.S_ISCHR(os.lstat(nulldev).st_mode)
    case(ok, "%s onto the null device: written, still a character device (%s)"
         % (name, res.why()))
    if not stat.S_ISCHR(os.lstat(nulldev).st_mode):
        os.remove(nulldev)
        os.mknod(nulldev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def devfd_case(name, cmd):
    rfd, wfd = os.pipe()
    errf = open(os.path.join(base, "devfd.err"), "w+")
    p = subprocess.Popen(cmd("/dev/fd/%d" % wfd), pass_fds=(wfd,), stdout=subprocess.DEVNULL,
                         stderr=errf)
    os.close(wfd)
    chunks = []
    with os.fdopen(rfd, "rb") as r:
        t = threading.Thread(target=lambda: chunks.append(r.read()))
        t.start()
        t.join(TIMEOUT)
    rc = p.wait(timeout=TIMEOUT)
    ok = rc == 0 and chunks and chunks[0] == REF[name]
    case(ok, "%s onto /dev/fd/N of a pipe: the bytes come through (exit %d)" % (name, rc))


def directory_case(name, cmd, flag_path_stdin):
    d = fresh_dir("outputs-dir")
    target = os.path.join(d, "out")
    os.makedirs(target)
    put(os.path.join(target, "keep"))
    args = flag_path_stdin(target)
    with open(os.path.join(d, "err"), "w+b") as errf:
        # stdin stays open and empty: a command that reads before it checks
        # its outputs waits here
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errf)
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = None
        p.stdin.close()
        errf.seek(0)
        err = errf.read()
    ok = (rc == 2 and sorted(os.listdir(d)) == ["err", "out"] and os.listdir(target) == ["keep"] and slurp(os.path.join(target, "keep")) ==
          SENTINEL and b"directory" in err)
    case(ok, "%s onto a directory: exit 2 before any input is read, directory untouched (%s)"
         % (name, "hung reading its input" if rc is None else "exit %d" % rc))


def stdin_variant(name, cmd):
    """The command with its input read from stdin (a pipe left open)."""
    def variant(p):
        args = cmd(p)
        if name.startswith("clean"):
            args[args.index(corpus)] = "-"
        elif name.startswith("tokenize"):
            args[args.index(cleaned)] = "-"
        else:
            fifo = os.path.join(base, "never-written")
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            args[args.index("--baseline") + 1] = fifo
        return args
    return variant


for name, cmd in STREAMING:
    symlink_cases(name, cmd)
    fifo_case(name, cmd)
    chardev_case(name, cmd)
    devfd_case(name, cmd)
    directory_case(name, cmd, stdin_variant(name, cmd))

def special_case(what, make):
    """A socket or block device as an output: exit 2, the node kept."""
    d = fresh_dir("outputs-special")
    node = os.path.join(d, "node")
    keep = make(node)
    mode = os.lstat(node).st_mode
    res = run([P, "clean", "-q", corpus, "-o", node])
    after = os.lstat(node).st_mode if os.path.lexists(node) else None
    case(res.rc == 2 and after == mode and os.listdir(d) == ["node"],
         "clean -o onto %s: exit 2, the node kept (%s)" % (what, res.why()))
    del keep


def make_socket(p):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(p)
    return sock


d = fresh_dir("outputs-long")
longname = os.path.join(d, "o" * 250)  # NAME_MAX is 255: NAME.tmp.XXXXXX cannot fit
res = run([P, "clean", "-q", corpus, "-o", longname])
case(res.rc == 0 and os.path.isfile(longname) and slurp(longname) == REF["clean -o"]
     and os.listdir(d) == ["o" * 250],
     "clean -o onto a 250-byte file name: written whole, no temporary left (%s)" % res.why())
special_case("a Unix socket", make_socket)
special_case("a block device node",
             lambda p: os.mknod(p, 0o600 | stat.S_IFBLK, os.makedev(7, 200)))

res = run([P, "clean", "-q", corpus, "-o", nulldev, "--rejects", nulldev, "--duplicates", nulldev,
           "--stats", nulldev])
case(res.rc == 0 and stat.S_ISCHR(os.lstat(nulldev).st_mode),
     "clean: all four outputs to the one null device (%s)" % res.why())


# --- row 7: inside a shard set -------------------------------------------------
pristine = os.path.join(base, "set-pristine")
shutil.copytree(set_dir, pristine)


def restore_set():
    """Puts the set back as built, should a case have damaged it."""
    if tree_bytes(set_dir) != tree_bytes(pristine):
        shutil.rmtree(set_dir)
        shutil.copytree(pristine, set_dir)


def inside_set_cases(name, cmd):
    restore_set()
    before = tree_bytes(set_dir)
    for what, path in (("a new file in the set", os.path.join(set_dir, "extra.out")),
                       ("the set's manifest.json", os.path.join(set_dir, "manifest.json"))):
        res = run(cmd(path))
        case(res.rc == 2 and tree_bytes(set_dir) == before and "shard set" in res.err,
             "%s onto %s: exit 2, the set unchanged (%s)" % (name, what, res.why()))
        restore_set()
    link = os.path.join(base, "into-set")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join(set_dir, "stats.json"), link)
    res = run(cmd(link))
    case(res.rc == 2 and tree_bytes(set_dir) == before,
         "%s onto a symlink to the set's stats.json: exit 2, the set unchanged (%s)"
         % (name, res.why()))
    restore_set()


for name, cmd in FLAGS:
    inside_set_cases(name, cmd)


# --- row 3: aliasing ---------------------------------------------------------------
class Files:
    """A fresh directory per case, so a binary that destroyed one case's
    files cannot decide the next case."""

    def __init__(self):
        d = self.d = fresh_dir("outputs-alias")
        self.x = os.path.join(d, "x.jsonl")
        put(self.x)
        os.symlink(self.x, self.at("x-link"))
        os.link(self.x, self.at("x-hard"))
        self.inp = self.at("in.jsonl")
        shutil.copy(corpus, self.inp)
        os.symlink(self.inp, self.at("in-link"))
        os.link(self.inp, self.at("in-hard"))
        self.rules = self.at("rules.json")
        shutil.copy(rules, self.rules)
        self.tin = self.at("tok-in.jsonl")
        shutil.copy(cleaned, self.tin)
        self.vocab = self.at("vocab.txt")
        shutil.copy(vocab, self.vocab)
        os.link(self.vocab, self.at("vocab-hard"))
        self.sa, self.sb = self.at("a.stats.json"), self.at("b.stats.json")
        shutil.copy(stats, self.sa)
        shutil.copy(stats, self.sb)
        os.symlink(self.sb, self.at("b-link"))
        self.spider = self.at("dev.json")
        shutil.copy(DEV, self.spider)

    def at(self, name):
        return os.path.join(self.d, name)


def expect_refused(desc, make_args, keep, setup=None):
    """exit 2, and every file of the case keeps its bytes."""
    f = Files()
    if setup:
        setup(f)
    names = [n for n in os.listdir(f.d) if not os.path.islink(f.at(n))]
    before = {n: slurp(f.at(n)) for n in names}
    res = run(make_args(f))
    after = {n: slurp(f.at(n)) for n in names if os.path.isfile(f.at(n))}
    links = all(os.path.islink(f.at(n)) for n in ("x-link", "in-link", "b-link"))
    case(res.rc == 2 and before == after and links and "pairshard" in res.err,
         "%s: exit 2, %s unchanged (%s)" % (desc, keep, res.why()))


C = [P, "clean", "-q"]
for a, b in (("-o", "--rejects"), ("-o", "--duplicates"), ("--rejects", "--stats"),
             ("--duplicates", "--rejects")):
    expect_refused("clean %s X %s X" % (a, b), lambda f, a=a, b=b: C + [f.inp, a, f.x, b, f.x],
                   "X and the input")
expect_refused("clean -o X --rejects ./X (another spelling)",
               lambda f: C + [f.inp, "-o", f.x, "--rejects", f.at("./x.jsonl")], "X")
expect_refused("clean -o X --rejects a symlink to X",
               lambda f: C + [f.inp, "-o", f.x, "--rejects", f.at("x-link")], "X")
expect_refused("clean -o X --duplicates a hard link to X",
               lambda f: C + [f.inp, "-o", f.x, "--duplicates", f.at("x-hard")], "X")
f = Files()
absent = f.at("absent.jsonl")
res = run(C + [f.inp, "-o", absent, "--rejects", f.at("../outputs-alias/absent.jsonl")])
case(res.rc == 2 and not os.path.lexists(absent),
     "clean: an absent file named twice (two spellings): exit 2, nothing created (%s)" % res.why())
for flag in ("-o", "--rejects", "--duplicates", "--stats"):
    expect_refused("clean IN %s IN" % flag,
                   lambda f, flag=flag: C + [f.inp, "-o", nulldev, flag, f.inp], "the input")
expect_refused("clean IN -o a symlink to IN",
               lambda f: C + [f.inp, "-o", f.at("in-link")], "the input and the link")
expect_refused("clean IN --rejects a hard link to IN",
               lambda f: C + [f.inp, "-o", nulldev, "--rejects", f.at("in-hard")], "the input")
expect_refused("clean --rules R --stats R",
               lambda f: C + ["--rules", f.rules, f.inp, "-o", nulldev, "--stats", f.rules],
               "the rules")
T = [P, "tokenize"]
expect_refused("tokenize IN -o IN", lambda f: T + ["--vocab", f.vocab, f.tin, "-o", f.tin],
               "the input")
expect_refused("tokenize IN -o a hard link to the vocabulary",
               lambda f: T + ["--vocab", f.vocab, f.tin, "-o", f.at("vocab-hard")], "the vocabulary")
expect_refused("tokenize IN -o the vocabulary",
               lambda f: T + ["--vocab", f.vocab, f.tin, "-o", f.vocab], "the vocabulary")


def V(f):
    return [P, "validate", "-q", "--baseline", f.sa, "--current", f.sb]


expect_refused("validate --json BASELINE", lambda f: V(f) + ["--json", f.sa], "the baseline")
expect_refused("validate --html a symlink to --current",
               lambda f: V(f) + ["--html", f.at("b-link")], "the current file and the link")
expect_refused("validate --json X --html X", lambda f: V(f) + ["--json", f.x, "--html", f.x], "X")

# A build the gate stops (a rule that splits the words of one database's
# questions, as in tests/cli/gate.sh) writes DIR.report.json, .html and
# DIR.stats.json beside DIR.
split = os.path.join(base, "split.rules")
with open(split, "w") as fh:
    json.dump([{"name": "split-words", "field": "question", "with": " ", "replace":
                r"(?i)(?:^(?=.*\bwines?\b)|(?!^)\G)\W*\w\K(?=\W*\w)"}], fh)


def B(f, out):
    return [P, "build", "-q", "--vocab", f.vocab, "--label-field", "db_id", "--rules", split,
            "-o", out, f.spider, TRAIN]


expect_refused("stopped build, DIR.report.json a symlink to an input",
               lambda f: B(f, f.at("g")), "the input",
               setup=lambda f: os.symlink(f.spider, f.at("g.report.json")))
expect_refused("stopped build, DIR.stats.json a hard link to an input",
               lambda f: B(f, f.at("g")), "the input",
               setup=lambda f: os.link(f.spider, f.at("g.stats.json")))
expect_refused("stopped build, DIR.report.html a symlink to the vocabulary",
               lambda f: B(f, f.at("g")), "the vocabulary",
               setup=lambda f: os.symlink(f.vocab, f.at("g.report.html")))
restore_set()
before = tree_bytes(set_dir)
res = run(B(Files(), os.path.join(set_dir, "sub")))
case(res.rc == 2 and tree_bytes(set_dir) == before,
     "stopped build with -o SET/sub (its reports would land in SET): exit 2, the set unchanged "
     "(%s)" % res.why())
restore_set()


# --- row 11: umask and a full disk ---------------------------------------------
def umask_case(name, cmd):
    modes = []
    for mask in (0o022, 0o077):
        dd = fresh_dir("outputs-umask")
        p = os.path.join(dd, "out")
        res = run(cmd(p), preexec=lambda m=mask: os.umask(m))
        modes.append(stat.S_IMODE(os.stat(p).st_mode) if res.rc == 0 and os.path.exists(p)
                     else None)
    case(modes == [0o644, 0o600], "%s honours the umask: 022 -> %s, 077 -> %s (want 0644, 0600)"
         % (name, *("%04o" % m if m is not None else "none" for m in modes)))


for name, cmd in STREAMING:
    umask_case(name, cmd)

restore_set()
small = os.path.join(base, "small")
os.makedirs(small)
mounted = subprocess.call(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small]) == 0
if not mounted:
    tap(False, "cannot mount a tmpfs for the full-disk cases (they need root)")
else:
    try:
        # Whatever ran here before stays: a previous output, then filler
        # until the filesystem is full.
        for name, cmd in FLAGS:
            prev = os.path.join(small, name.replace(" ", "_").replace("-", ""))
            put(prev)
        try:
            with open(os.path.join(small, "filler"), "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        for name, cmd in FLAGS:
            if name in ("clean --stats", "validate --json", "validate --html"):
                continue  # small enough to fail only at the final flush, which named its file
            prev = os.path.join(small, name.replace(" ", "_").replace("-", ""))
            res = run(cmd(prev))
            ok = (res.rc == 2 and prev in res.err and "No space left on device" in res.err
                  and slurp(prev) == SENTINEL and not leftovers(small))
            case(ok, "%s onto a full filesystem: exit 2, the message names %s and the reason, "
                 "the previous file kept (%s: %s)" % (name, os.path.basename(prev), res.why(),
                                                      res.err.strip()[-120:]))
    finally:
        subprocess.call(["umount", small])

note("%d cases, %d passed" % (cases, passed))
print("# TOTAL outputs cases=%d passed=%d" % (cases, passed))
finish()
