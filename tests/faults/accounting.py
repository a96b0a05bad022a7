#!/usr/bin/python3
"""Accounting that does not add up: `inspect --verify` and `merge`.

Spider dev is built as two parts (--part 0/2 and 1/2). Each trial edits
part 1's manifest so that its stated sums no longer agree -- with each
other (records_in = kept + rejected + duplicates, for the totals, a label,
unlabeled, an input; rejected = the sum of rejected_by_reason; the labels
and the inputs add up to the totals; label_count), with the totals
(kept = totals.records, totals = the shards' sums) or with the blocks
(each label's kept = the records stored with that label, a shard's
counts) -- most of them keeping the sum they start from true, as raising
kept and records_in by 5 together does. Every edit must
make `inspect --verify` exit 1 naming the field, and `merge` refuse the
part (exit 2) naming part 1 and the same field, publishing nothing.
"""
import copy
import json
import os
import shutil

from faultlib import DEV, PAIRSHARD, build_args, finish, fresh_dir, note, run, tap, verify

base = fresh_dir("accounting")
parts = [os.path.join(base, "part-%d" % k) for k in range(2)]
for k, d in enumerate(parts):
    r = run(build_args(d, [DEV], 2) + ["--part", "%d/2" % k])
    tap(r.rc == 0 and verify(d).rc == 0, "control: part %d builds and verifies" % k)
merged = os.path.join(base, "merged")
r = run([PAIRSHARD, "merge", "-q", "-o", merged] + parts)
tap(r.rc == 0 and verify(merged).rc == 0, "control: the two parts merge and the set verifies")
with open(os.path.join(parts[1], "manifest.json")) as f:
    orig = json.load(f)
acct0 = orig["accounting"]
labels = sorted(l for l in acct0["labels"] if acct0["labels"][l]["kept"] > 0)
A, B = labels[0], labels[1]
bucket = next(i for i, b in enumerate(orig["totals"]["buckets"]) if b["records"] > 0)
shard_bucket = next(i for i, b in enumerate(orig["shards"][0]["buckets"]) if b["records"] > 0)


def add(obj, n, *keys):
    for k in keys:
        obj[k] += n


# Each lie: (what, edit(manifest), what the message must name)
def lie_kept_in(m):                     # the totals' own sum still holds
    add(m["accounting"], 5, "kept", "records_in")


def lie_inputs_too(m):
    lie_kept_in(m)
    add(m["accounting"]["inputs"][0], 5, "kept", "records_in")


def lie_label_too(m):
    lie_inputs_too(m)
    add(m["accounting"]["labels"][A], 5, "kept", "records_in")


def lie_totals_too(m):
    lie_label_too(m)
    m["totals"]["records"] += 5
    m["totals"]["buckets"][bucket]["records"] += 5


def lie_shard_too(m):
    lie_totals_too(m)
    m["shards"][0]["records"] += 5
    m["shards"][0]["buckets"][shard_bucket]["records"] += 5


def lie_rejected(m):
    add(m["accounting"], 5, "rejected")


def lie_rejected_in(m):                # sums hold but the reasons
    add(m["accounting"], 5, "rejected", "records_in")
    add(m["accounting"]["inputs"][0], 5, "rejected", "records_in")
    add(m["accounting"]["unlabeled"], 5, "rejected", "records_in")


def lie_duplicates(m):
    add(m["accounting"], 5, "duplicates", "records_in")
    add(m["accounting"]["inputs"][0], 5, "duplicates", "records_in")


def lie_one_label(m):
    add(m["accounting"]["labels"][A], 5, "kept")


def lie_moved_between_labels(m):       # every sum holds; the blocks say otherwise
    add(m["accounting"]["labels"][A], 1, "kept", "records_in")
    add(m["accounting"]["labels"][B], -1, "kept", "records_in")


def lie_moved_to_unlabeled(m):
    add(m["accounting"]["labels"][A], -1, "kept", "records_in")
    add(m["accounting"]["unlabeled"], 1, "kept", "records_in")


def lie_unknown_label(m):
    m["accounting"]["labels"]["zz_not_a_label"] = {"records_in": 1, "kept": 1, "rejected": 0,
                                                   "duplicates": 0}
    m["accounting"]["label_count"] += 1


def lie_label_count(m):
    m["accounting"]["label_count"] += 1


def lie_balanced(m):
    m["accounting"]["balanced"] = False


def lie_string(m):
    m["accounting"]["kept"] = str(m["accounting"]["kept"])


def lie_negative(m):
    m["accounting"]["duplicates"] = -5
    m["accounting"]["kept"] += 5


def lie_reason_string(m):
    m["accounting"]["rejected_by_reason"]["bad_json"] = "0"


def lie_input_missing(m):
    del m["accounting"]["inputs"][0]["kept"]


LIES = [
    ("kept and records_in +5", lie_kept_in, "the inputs' counts add up to"),
    ("... and the input's too", lie_inputs_too, "the labels' counts"),
    ("... and a label's too", lie_label_too, "records labelled %s" % A),
    ("... and totals.records and its bucket's too", lie_totals_too, "totals: records, tokens"),
    ("... and the shard's entry too", lie_shard_too, "the manifest says"),
    ("rejected +5", lie_rejected, "records_in %d is not kept" % acct0["records_in"]),
    ("rejected and records_in +5 (the input's and unlabeled's too)", lie_rejected_in,
     "rejected_by_reason adds up to"),
    ("duplicates and records_in +5 (the input's too)", lie_duplicates, "the labels' counts"),
    ("one label's kept +5", lie_one_label, "accounting.labels.%s: records_in" % A),
    ("a record moved between two labels", lie_moved_between_labels,
     "records labelled %s" % A),
    ("a labelled record counted as unlabeled", lie_moved_to_unlabeled, "records labelled %s" % A),
    ("a kept record under a label the set does not have", lie_unknown_label,
     "labels do not name zz_not_a_label"),
    ("label_count +1", lie_label_count, "label_count"),
    ("balanced: false", lie_balanced, "\"balanced\" is not true"),
    ("kept as a string", lie_string, "accounting.kept is missing or not a count"),
    ("duplicates -5, kept +5", lie_negative, "accounting.duplicates is missing or not a count"),
    ("a reason's count as a string", lie_reason_string,
     "rejected_by_reason.bad_json is missing or not a count"),
    ("an input without kept", lie_input_missing, "inputs[0].kept is missing"),
]

caught = 0
for i, (what, edit, needle) in enumerate(LIES):
    d = os.path.join(base, "lie-%02d" % i)
    shutil.copytree(parts[1], os.path.join(d, "part-1"))
    m = copy.deepcopy(orig)
    edit(m)
    with open(os.path.join(d, "part-1", "manifest.json"), "w") as f:
        json.dump(m, f, indent=2)
    v = verify(os.path.join(d, "part-1"))
    out = os.path.join(d, "merged")
    mg = run([PAIRSHARD, "merge", "-q", "-o", out, parts[0], os.path.join(d, "part-1")])
    problems = []
    if v.rc != 1 or needle not in v.err:
        problems.append("inspect --verify: %s, \"%s\"" % (v.why(), v.err.strip()[-200:]))
    if mg.rc != 2 or needle not in mg.err or "part 1" not in mg.err:
        problems.append("merge: %s, \"%s\"" % (mg.why(), mg.err.strip()[-200:]))
    if os.path.exists(out):
        problems.append("merge published %s" % out)
    caught += not problems
    tap(not problems, "%s: verify and merge name it (\"%s\")%s" % (
        what, needle, "" if not problems else " -- " + "; ".join(problems)))
note("accounting: %d of %d edited manifests refused by inspect --verify and merge" %
     (caught, len(LIES)))
print("# TOTAL accounting trials=%d survived=%d" % (len(LIES), caught))
finish()
