#!/usr/bin/env python3
"""pairshard.Preprocessor against the ids a set stores, read through
pairshard.Loader: for every record of each set (argv: DIR INPUT KIND
triples), the record given as fields (question, sql, db_id, evidence) to
Preprocessor.encode gives the stored ids, id for id, and the records it
rejects are the ones the build rejected; the batched form equals the rows;
without sql, the prompt's ids are the stored ones' prefix. Prints TAP."""
import json
import sys

import numpy as np

import pairshard
from tap import Tap

T = Tap()
check, skip = T.check, T.skip


def stored(path):
    """Every stored record's ids and token types, by id, whatever the
    layout: pair (token_type_ids), causal (types 1 from prompt_lens on) or
    seq2seq (the source, then the target from labels: types 0 then 1)."""
    out = {}
    for b in pairshard.Loader(path, batch_size=64, shuffle=False, as_torch=False, copy=True):
        ids = np.asarray(b["input_ids"])
        for i, rid in enumerate(b["ids"]):
            k = int(b["lengths"][i])
            row = ids[i, :k].tolist()
            if "prompt_lens" in b:  # causal (unpacked: segment i is row i)
                types = [int(t >= int(b["prompt_lens"][i])) for t in range(k)]
            elif "target_lens" in b:  # seq2seq
                n = int(b["target_lens"][i])
                row += np.asarray(b["labels"])[i, :n].tolist()
                types = [0] * k + [1] * n
            else:
                types = np.asarray(b["token_type_ids"])[i, :k].tolist()
            out[rid] = (row, types)
    return out


def fields(kind, rec):
    if kind.startswith("bird"):
        return dict(question=rec["question"], sql=rec["SQL"], db_id=rec["db_id"],
                    evidence=rec["evidence"])
    return dict(question=rec["question"], sql=rec["query"], db_id=rec["db_id"])


def round_trip(path, input_path, kind):
    want = stored(path)
    recs = json.load(open(input_path))
    base = input_path.rsplit("/", 1)[-1]
    pre = pairshard.Preprocessor(path)
    bad, rejected, kept, dups = [], 0, 0, 0
    for i, rec in enumerate(recs):
        rid = "%s:#%d" % (base, i)
        try:
            got = pre.encode(**fields(kind, rec))
        except pairshard.RejectedError:
            rejected += 1
            if rid in want:
                bad.append("%s: rejected, but the set stores it" % rid)
            continue
        kept += 1
        ids = got["input_ids"].tolist(), got["token_type_ids"].tolist()
        if rid not in want:  # a duplicate: its original is stored
            dups += 1
            continue
        if want[rid] != ids:
            bad.append("%s: %s != stored %s" % (rid, ids[0][:12], (want.get(rid) or [[]])[0][:12]))
    m = json.load(open(path + "/manifest.json"))
    check("%s: every one of %d records' ids equal the stored ones (%d kept)" % (kind, len(recs), kept),
          not bad and kept == len(want) + dups and dups == m["accounting"]["duplicates"],
          "; ".join(bad[:3]) or "%d kept, %d stored, %d duplicates" % (kept, len(want), dups))
    check("%s: the rejected are the build's (%d)" % (kind, rejected),
          rejected == m["accounting"]["rejected"], "%d vs %d" % (rejected, m["accounting"]["rejected"]))
    # batched: padded as HF's __call__(padding=True)
    sample = [fields(kind, r) for r in recs[:64]]
    ok_rows = []
    for s in sample:
        try:
            ok_rows.append((s, pre.encode(**s)))
        except pairshard.RejectedError:
            pass
    batch = pre.encode([s for s, _ in ok_rows])
    good = batch["input_ids"].shape[0] == len(ok_rows)
    for i, (_, one) in enumerate(ok_rows):
        k = len(one["input_ids"])
        good = good and batch["input_ids"][i, :k].tolist() == one["input_ids"].tolist()
        good = good and int(batch["attention_mask"][i].sum()) == k
        good = good and bool((batch["input_ids"][i, k:] == pre.pad_id).all())
    check("%s: a batch of %d equals its rows, padded with %d" % (kind, len(ok_rows), pre.pad_id), good)
    if kind.endswith("_causal"):  # batched generation pads on the left
        left = pre.encode([s for s, _ in ok_rows], padding_side="left")
        T = left["input_ids"].shape[1]
        good = True
        for i, (_, one) in enumerate(ok_rows):
            k = len(one["input_ids"])
            good = good and left["input_ids"][i, T - k:].tolist() == one["input_ids"].tolist()
            good = good and left["attention_mask"][i, :T - k].sum() == 0
            good = good and int(left["attention_mask"][i].sum()) == k
            good = good and bool((left["input_ids"][i, :T - k] == pre.pad_id).all())
        check("%s: padding_side='left' puts each row's ids last" % kind, good)
    return pre, recs


def dialogues(path, input_path, kind):
    """A set built with --turns: every turn, served with its question, SQL,
    database and the earlier utterances (newest first), has the stored ids."""
    want = stored(path)
    base = input_path.rsplit("/", 1)[-1]
    pre = pairshard.Preprocessor(path)
    bad, turns = [], 0
    for i, d in enumerate(json.load(open(input_path))):
        utts = [t["utterance"] for t in d["interaction"]]
        for t, turn in enumerate(d["interaction"]):
            rid = "%s:#%d/%d" % (base, i, t)
            got = pre.encode(turn["utterance"], db_id=d["database_id"], sql=turn["query"],
                             history=list(reversed(utts[:t])))["input_ids"].tolist()
            turns += 1
            if rid not in want or want[rid][0] != got:
                bad.append("%s: %s != stored %s" % (rid, got[:10], (want.get(rid) or [[]])[0][:10]))
    check("%s: every one of %d turns, served with its history, has the stored ids" % (kind, turns),
          turns == len(want) and not bad, "; ".join(bad[:3]))


def unicode_versions(path, recs, kind):
    """A copy of the set whose manifest says its build's utf8proc had
    another Unicode: refused (PS_EVERSION, naming the library and both
    versions) unless allow_unicode_mismatch, which serves the same ids and
    says why in .warning."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp()
    copy = tmp + "/set"
    shutil.copytree(path, copy)
    m = json.load(open(copy + "/manifest.json"))
    host = m["unicode"]["utf8proc"]
    m["unicode"]["utf8proc"] = "14.0.0"
    json.dump(m, open(copy + "/manifest.json", "w"))
    try:
        pairshard.Preprocessor(copy)
        check("%s: another utf8proc Unicode in the manifest is refused" % kind, False)
    except pairshard.PairshardError as e:
        check("%s: another utf8proc Unicode in the manifest is refused" % kind,
              e.name == "PS_EVERSION" and "utf8proc" in e.message and "14.0.0" in e.message
              and host in e.message, e.message)
    pre = pairshard.Preprocessor(copy, allow_unicode_mismatch=True)
    ref = pairshard.Preprocessor(path)
    r = fields(kind, recs[0])
    check("%s: allow_unicode_mismatch=True serves it, with the same ids, and says why" % kind,
          ref.warning is None and "utf8proc" in (pre.warning or "") and "14.0.0" in pre.warning
          and pre.encode(**r)["input_ids"].tolist() == ref.encode(**r)["input_ids"].tolist(),
          str(pre.warning))
    pre.close()
    ref.close()
    shutil.rmtree(tmp)


def main():
    args = sys.argv[1:]
    for j in range(0, len(args), 3):
        if args[j + 2] == "sparc":
            dialogues(args[j], args[j + 1], args[j + 2])
            continue
        pre, recs = round_trip(args[j], args[j + 1], args[j + 2])
        if args[j + 2] == "spider":
            unicode_versions(args[j], recs, args[j + 2])
        if args[j + 2] == "picard":
            r = fields("picard", recs[0])
            full = pre.encode(**r)["input_ids"].tolist()
            r.pop("sql")
            served = pre.preprocess(**r)
            p = served["input_ids"].tolist()
            check("serving without sql: the prompt alone, a prefix of the trained ids",
                  served["completion"] is None and p[:-1] == full[:len(p) - 1], str(p[:8]))
            raw = json.dumps(recs[3])
            by_record = pre.encode(record=raw)["input_ids"].tolist()
            check("encode(record=raw JSON) equals encode(fields)",
                  by_record == pre.encode(**fields("picard", recs[3]))["input_ids"].tolist())
            try:
                import torch
                t = pre.encode([r["question"] for r in recs[:5]], db_id=[r["db_id"] for r in recs[:5]],
                               return_tensors="pt")
                check("return_tensors='pt': torch int64 tensors, B x T",
                      t["input_ids"].dtype == torch.int64 and t["input_ids"].shape[0] == 5)
            except ImportError:
                skip("return_tensors='pt'", "torch is not installed")
            try:
                pre.encode("How many?", db_id="no_such_db")
                check("an unknown database raises RejectedError unknown_database", False)
            except pairshard.RejectedError as e:
                check("an unknown database raises RejectedError unknown_database",
                      e.reason == "unknown_database")
            check("clean(): full-width question mark and spaces as the build cleans them",
                  pre.clean(" How\u00a0many singers\uff1f ") == "How many singers?")
            try:
                pre.clean(" \u200b ")
                check("clean(): empty after cleaning raises RejectedError", False)
            except pairshard.RejectedError as e:
                check("clean(): empty after cleaning raises RejectedError",
                      e.reason == "empty_after_cleaning")
    sys.exit(T.done())


main()
