#!/usr/bin/python3
"""The generator layouts through the Python binding (issue 16), on sets
built by `pairshard build --layout causal|seq2seq` from Spider dev:

  - every causal batch, packed or not, keeps the layout's invariants
    (segments from column 0, position_ids restarting, labels -100 exactly
    on prompts and padding, cu_seqlens/max_seqlen/seq_lens/seg_rows
    consistent) and packed segments hold exactly the record's ids as the
    unpacked read delivers them;
  - the ids are HuggingFace tokenizers' (the node binding in
    tests/conformance): prompt = encode(prompt), completion (the non -100
    labels) = encode(completion) without special tokens; seq2seq source and
    target = encode(prompt) and encode(completion) with T5's post-processor;
  - no cross-contamination: a tiny float64 transformer on a packed batch
    with the block-diagonal causal mask from cu_seqlens (FlashAttention's
    varlen view) or from position_ids (HF's packed view) gives every record
    the logits of that record run alone, to 1e-9; a plain causal mask over
    the row does not (the check can fail);
  - coverage under packing across 1-3 ranks (every segment exactly once per
    epoch, equal batch counts; drop_last: full batches, no duplicates);
  - a tiny causal LM (packed) and a tiny T5-shaped encoder-decoder
    (seq2seq, decoder_input_ids) trained a few steps, checkpointed
    mid-epoch and resumed in a fresh process: bit-identical to an
    uninterrupted run.

Prints TAP. Environment: PAIRSHARD, PS_ROOT (default: this checkout's).
  /usr/bin/python3 tests/python/test_layouts.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from testenv import DEV, PAIRSHARD, ROOT, TABLES, TOKS  # noqa: E402

GPT2 = os.path.join(TOKS, "gpt2.tokenizer.json")
T5 = os.path.join(TOKS, "t5-small.tokenizer.json")
CONF = os.path.join(ROOT, "tests", "conformance")

import torch  # noqa: E402

import pairshard  # noqa: E402
from tap import Tap  # noqa: E402

T = Tap()
PACK = 256
ROWS = 5
SEED = 7


def group(fn):
    """Runs one group of checks; an exception is one failure naming it."""
    try:
        fn()
    except Exception:
        T.check("%s raised no exception" % fn.__name__, False, traceback.format_exc())


def build(tmp, name, *args, src=DEV):
    out = os.path.join(tmp, name)
    p = subprocess.run([PAIRSHARD, "build", "-q", "-o", out, *args, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("pairshard build %s: %s" % (" ".join(args), p.stderr.decode()))
    return out


def np_(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


# ---- the unpacked read: the reference for packed segments --------------------------


def read_unpacked(set_dir):
    """id -> (tokens, prompt_len, class_label) through the unpacked causal
    read, checking its own invariants on the way. Returns (records, bad)."""
    recs, bad = {}, []
    with pairshard.Loader(set_dir, batch_size=32, shuffle=False, rank=0, world_size=1,
                          as_torch=False) as ld:
        for b in ld:
            ids, am, lab, pos = (np_(b[k]) for k in ("input_ids", "attention_mask", "labels",
                                                     "position_ids"))
            B = ids.shape[0]
            if len(b["ids"]) != B or list(np_(b["seg_rows"])) != list(range(B)):
                bad.append((b["step"], "unpacked: a segment per row"))
            for i in range(B):
                n, p = int(b["lengths"][i]), int(b["prompt_lens"][i])
                want_lab = np.where(np.arange(ids.shape[1]) < p, -100, ids[i])
                want_lab[n:] = -100
                want_pos = np.where(np.arange(ids.shape[1]) < n, np.arange(ids.shape[1]), 0)
                if not (am[i, :n].all() and not am[i, n:].any() and (lab[i] == want_lab).all()
                        and (pos[i] == want_pos).all() and int(b["seq_lens"][i]) == n):
                    bad.append((b["ids"][i], "unpacked labels/mask/positions"))
                recs[b["ids"][i]] = (ids[i, :n].copy(), p, int(b["class_labels"][i]))
    return recs, bad


def packed_batch_problems(b, recs, L, rows_max):
    """What is wrong with one packed batch against the contract and the
    unpacked records (a list of strings, empty when nothing)."""
    out = []
    ids, am, lab, pos = (np_(b[k]) for k in ("input_ids", "attention_mask", "labels",
                                             "position_ids"))
    seq, pl, rows = (np_(b[k]).astype(np.int64) for k in ("seq_lens", "prompt_lens", "seg_rows"))
    cu = np_(b["cu_seqlens"])
    B, Tn = ids.shape
    S = len(b["ids"])
    if Tn != L or B > rows_max or B == 0:
        out.append("shape %r (L %d, rows <= %d)" % (ids.shape, L, rows_max))
    if cu.dtype != np.int32 or list(cu) != [0] + list(np.cumsum(seq)):
        out.append("cu_seqlens %r is not the cumulative seq_lens (int32)" % (cu[:8],))
    if not isinstance(b["max_seqlen"], int) or b["max_seqlen"] != int(seq.max(initial=0)):
        out.append("max_seqlen %r" % (b["max_seqlen"],))
    if len(seq) != S or len(rows) != S or (np.diff(rows) < 0).any():
        out.append("segments not in placement order, row by row")
    if int(cu[-1]) != int(am.sum()) or int(np_(b["lengths"]).sum()) != int(am.sum()):
        out.append("cu_seqlens[-1] != real tokens")
    col = np.zeros(B, dtype=np.int64)
    want_lab = np.full((B, Tn), -100, dtype=np.int64)
    want_pos = np.zeros((B, Tn), dtype=np.int64)
    for k in range(S):
        r, n, p, rid = int(rows[k]), int(seq[k]), int(pl[k]), b["ids"][k]
        c = int(col[r])
        ref = recs.get(rid)
        if ref is None or len(ref[0]) != n or ref[1] != p:
            out.append("segment %s: length/prompt %d/%d, unpacked %r" % (
                rid, n, p, None if ref is None else (len(ref[0]), ref[1])))
        elif not (ids[r, c:c + n] == ref[0]).all():
            out.append("segment %s: ids differ from the unpacked read" % rid)
        elif int(np_(b["class_labels"])[k]) != ref[2]:
            out.append("segment %s: class label" % rid)
        want_lab[r, c + p:c + n] = ids[r, c + p:c + n]
        want_pos[r, c:c + n] = np.arange(n)
        col[r] += n
    if (col > Tn).any() or list(col) != [int(x) for x in np_(b["lengths"])]:
        out.append("rows' segments overflow L or disagree with lengths")
    am_want = (np.arange(Tn)[None, :] < col[:, None])
    if not (am.astype(bool) == am_want).all():
        out.append("attention_mask is not 1 exactly on the rows' segments")
    if not (lab == want_lab).all():
        out.append("labels are not -100 exactly on prompts and padding, ids elsewhere")
    if not (pos == want_pos).all():
        out.append("position_ids do not restart at 0 for every segment")
    return out


# ---- the tiny transformer: float64, causal, learned positions ---------------------


class TinyLM(torch.nn.Module):
    def __init__(self, vocab, dim=32, layers=2, heads=2, max_pos=2048, dtype=torch.float64):
        super().__init__()
        self.heads = heads
        self.emb = torch.nn.Embedding(vocab, dim, dtype=dtype)
        self.pos = torch.nn.Embedding(max_pos, dim, dtype=dtype)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "ln1": torch.nn.LayerNorm(dim, dtype=dtype),
                "qkv": torch.nn.Linear(dim, 3 * dim, dtype=dtype),
                "o": torch.nn.Linear(dim, dim, dtype=dtype),
                "ln2": torch.nn.LayerNorm(dim, dtype=dtype),
                "ff1": torch.nn.Linear(dim, 4 * dim, dtype=dtype),
                "ff2": torch.nn.Linear(4 * dim, dim, dtype=dtype)}))
        self.ln = torch.nn.LayerNorm(dim, dtype=dtype)
        self.out = torch.nn.Linear(dim, vocab, dtype=dtype)

    def forward(self, input_ids, position_ids, allowed):
        """input_ids, position_ids [N, T]; allowed [N, T, T] bool (query,
        key): which keys each position may attend to."""
        x = self.emb(input_ids) + self.pos(position_ids)
        N, Tn, D = x.shape
        h = self.heads
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).split(D, dim=-1)
            q, k, v = (t.reshape(N, Tn, h, D // h).transpose(1, 2) for t in (q, k, v))
            s = (q @ k.transpose(-1, -2)) / (D // h) ** 0.5
            s = s.masked_fill(~allowed[:, None], float("-inf"))
            a = torch.softmax(s, dim=-1) @ v
            x = x + blk["o"](a.transpose(1, 2).reshape(N, Tn, D))
            x = x + blk["ff2"](torch.relu(blk["ff1"](blk["ln2"](x))))
        return self.out(self.ln(x))


def causal(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool))


def mask_from_cu(cu):
    """The block-diagonal causal mask over the concatenated real tokens
    (FlashAttention varlen: input_ids[attention_mask == 1], cu_seqlens)."""
    cu = [int(x) for x in cu]
    seg = torch.zeros(cu[-1], dtype=torch.int64)
    for k in range(len(cu) - 1):
        seg[cu[k]:cu[k + 1]] = k
    return (seg[:, None] == seg[None, :]) & causal(cu[-1])


def mask_from_positions(pos, am):
    """Per row, the block-diagonal causal mask HF derives from packed
    position_ids (a segment starts where position_ids is 0); padding
    attends to itself only (its outputs are ignored)."""
    B, Tn = pos.shape
    seg = torch.cumsum((pos == 0).to(torch.int64), dim=1)
    seg = torch.where(am.bool(), seg, -1 - torch.arange(Tn)[None, :].expand(B, Tn))
    return (seg[:, :, None] == seg[:, None, :]) & causal(Tn)[None]


def contamination(recs, set_dir, vocab):
    torch.manual_seed(SEED)
    model = TinyLM(vocab).eval()
    with pairshard.Loader(set_dir, pack=PACK, batch_size=2, seed=SEED, rank=0, world_size=1,
                          as_torch=True, copy=True) as ld:
        # The batch with the most segments of the first few (rows of short
        # records hold several).
        b = max((x for _, x in zip(range(12), ld)), key=lambda x: len(x["ids"]))
        ids, am, pos = b["input_ids"], b["attention_mask"], b["position_ids"]
        seq, rows = b["seq_lens"].tolist(), b["seg_rows"].tolist()
        names, cu = list(b["ids"]), b["cu_seqlens"]
        multi = max(rows.count(r) for r in set(rows))
        with torch.no_grad():
            alone = [model(torch.as_tensor(recs[n][0]).long()[None],
                           torch.arange(len(recs[n][0]))[None], causal(len(recs[n][0]))[None])[0]
                     for n in names]
            flat = ids[am.bool()].long()[None]
            flat_pos = pos[am.bool()].long()[None]
            varlen = model(flat, flat_pos, mask_from_cu(cu)[None])[0]
            rowwise = model(ids.long(), pos.long(), mask_from_positions(pos, am))
            plain = model(ids.long(), pos.long(), causal(ids.shape[1])[None].expand(
                ids.shape[0], -1, -1).clone())
        dv = dr = 0.0
        dplain = []
        col = {}
        for k, n in enumerate(names):
            c0, c1 = int(cu[k]), int(cu[k + 1])
            dv = max(dv, float((varlen[c0:c1] - alone[k]).abs().max()))
            r = rows[k]
            c = col.get(r, 0)
            dr = max(dr, float((rowwise[r, c:c + seq[k]] - alone[k]).abs().max()))
            if c > 0:
                dplain.append(float((plain[r, c:c + seq[k]] - alone[k]).abs().max()))
            col[r] = c + seq[k]
    T.check("packed batch of %d rows x %d with %d segments (up to %d in a row): through "
            "the tiny float64 transformer with the block-diagonal mask from cu_seqlens "
            "(varlen), every segment's logits equal the record's run alone (max diff %.2e)"
            % (ids.shape[0], ids.shape[1], len(names), multi, dv),
            multi >= 2 and dv < 1e-9, (multi, dv))
    T.check("... and with the per-row mask from position_ids (HF packed sequences) too "
            "(max diff %.2e)" % dr, dr < 1e-9, dr)
    T.check("... while a plain causal mask over the row changes the logits of every segment "
            "after a row's first (smallest diff %.3g over %d segments): the check can fail"
            % (min(dplain or [0]), len(dplain)), dplain and min(dplain) > 1e-3, dplain)


# ---- the reference tokenizer -----------------------------------------------------------


def check_reference(tok_file, cleaned, dumped, mode, desc, skip_desc, eos=None):
    """Checks the delivered ids in `dumped` against HF tokenizers' through
    tests/conformance/layout_ids.js (`desc`; a causal record ends in `eos`);
    a skip (`skip_desc`) where node or the tokenizers binding is missing."""
    if not shutil.which("node") or not os.path.isdir(os.path.join(CONF, "node_modules",
                                                                  "tokenizers")):
        T.skip(skip_desc, "node or the tokenizers binding is missing")
        return
    p = subprocess.run(["node", os.path.join(CONF, "layout_ids.js"), mode, tok_file, cleaned,
                        dumped] + ([str(eos)] if eos is not None else []), cwd=CONF, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    T.check(desc, p.returncode == 0, p.stderr.decode())


def clean(tmp, name, *args):
    out = os.path.join(tmp, name + ".jsonl")
    subprocess.run([PAIRSHARD, "clean", "-q", "-o", out, *args, DEV], check=True)
    return out


def dump_ids(f, rid, ids, boundary):
    """One line of layout_ids.js's IDS file: the record's ids as delivered
    and where its prompt (source) ends."""
    f.write(json.dumps({"id": rid, "input_ids": [int(x) for x in ids],
                        "boundary": int(boundary)}) + "\n")


def dump_causal(recs, path):
    with open(path, "w") as f:
        for rid, (toks, p, _) in recs.items():
            dump_ids(f, rid, toks, p)


# ---- the groups -------------------------------------------------------------------------


def causal_groups(tmp):
    plain = build(tmp, "causal", "--layout", "causal", "--tokenizer-json", GPT2,
                  "--label-field", "db_id", "--max-length", str(PACK), "--shards", "2",
                  "--block-records", "64")
    man = json.load(open(os.path.join(plain, "manifest.json")))
    vocab = man["tokenizer"]["vocab_size"]
    recs, bad = read_unpacked(plain)
    T.check("causal set (GPT-2, question -> SQL): %d records; the unpacked read: labels -100 "
            "exactly on prompts and padding, position_ids 0..n-1, a segment per row"
            % len(recs), man.get("layout") == "causal" and len(recs) == man["totals"]["records"]
            and not bad, bad[:5])
    ref = clean(tmp, "plain")  # question and SQL: layout_ids.js's prompt and completion
    dump_causal(recs, os.path.join(tmp, "plain.ids"))
    check_reference(GPT2, ref, os.path.join(tmp, "plain.ids"), "causal",
                    "every record's ids = HF encode(question + sql) without special tokens and "
                    "<|endoftext|> (50256) after, its prompt ids HF encode(question): the labels "
                    "that are not -100 are the SQL's ids and the EOS",
                    "completion ids against HF tokenizers", eos=50256)

    # Packed, 1-3 ranks, drop_last off and on: the invariants and coverage.
    n_all = len(recs)
    for world in (1, 2, 3):
        for drop in (False, True):
            seen, problems, counts, rows_n = [], [], [], []
            for rank in range(world):
                with pairshard.Loader(plain, pack=PACK, batch_size=ROWS, seed=SEED, rank=rank,
                                      world_size=world, drop_last=drop, as_torch=False) as ld:
                    info = ld.info()
                    k = 0
                    for b in ld:
                        k += 1
                        rows_n.append(b["input_ids"].shape[0])
                        seen.extend(b["ids"])
                        problems += [(rank, b["step"], p) for p in
                                     packed_batch_problems(b, recs, PACK, ROWS)]
                    counts.append((k, info["batches_per_epoch"]))
            uniq = len(set(seen)) == len(seen)
            if not drop:
                # drop_last has something to drop only when this epoch ends
                # in a short batch or ranks of unequal batch counts
                whole = all(r == ROWS for r in rows_n) and len(set(counts)) == 1
                ok = uniq and sorted(seen) == sorted(recs) and len(set(counts)) == 1 \
                    and counts[0][0] == counts[0][1] and not problems
                T.check("pack=%d, %d rank(s), drop_last off: every record exactly once in the "
                        "epoch (%d segments, %d batches per rank), every batch's segments, "
                        "labels, position_ids and cu_seqlens right" % (
                            PACK, world, len(seen), counts[0][0]),
                        ok, (len(seen), len(set(seen)), n_all, counts, problems[:5]))
            else:
                dropped = info["records_dropped"]
                ok = uniq and len(set(counts)) == 1 and all(r == ROWS for r in rows_n) \
                    and not problems and len(seen) + dropped == n_all and (dropped > 0 or whole)
                T.check("pack=%d, %d rank(s), drop_last on: full batches of %d rows only, no "
                        "record twice, %d delivered + %d dropped (info) = %d, equal batch "
                        "counts" % (PACK, world, ROWS, len(seen), dropped, n_all),
                        ok, (counts, set(rows_n), problems[:5]))
    group(lambda: resume_everywhere(plain))
    group(lambda: dtypes(plain, "causal", dict(pack=PACK, batch_size=ROWS)))
    with pairshard.Loader(plain, pack=PACK, batch_size=ROWS, seed=SEED, rank=0,
                          world_size=1) as ld:
        i = ld.info()
        T.check("info(): layout causal, pack %d, rows_per_epoch the rows delivered"
                % PACK, i["layout"] == "causal" and i["pack"] == PACK
                and i["rows_per_epoch"] == sum(b["input_ids"].shape[0] for b in ld), i)
    try:
        pairshard.Loader(plain, pack=64, rank=0, world_size=1)
        T.check("pack shorter than a record is refused", False)
    except pairshard.PairshardError as e:
        T.check("pack=64 with longer records: PairshardError(PS_EUSAGE) naming a record",
                e.name == "PS_EUSAGE" and "dev.json" in e.message, e)
    with pairshard.Loader(plain, pack=64, skip_long=True, rank=0, world_size=1,
                          as_torch=False) as ld:
        got = sum(len(b["ids"]) for b in ld)
        sk = ld.info()["records_skipped"]
        want = sum(1 for t in recs.values() if len(t[0]) > 64)
        T.check("pack=64 skip_long: the %d longer records left out and counted" % want,
                sk == want and got == n_all - want, (sk, want, got))
    # A pack shorter than every record: skip_long would leave an epoch of no
    # batches (a trainer would run zero steps); it is refused as an empty set.
    shortest = min(len(t[0]) for t in recs.values())
    try:
        ld = pairshard.Loader(plain, pack=shortest - 1, skip_long=True, rank=0, world_size=1,
                              as_torch=False)
        T.check("pack below every record with skip_long raises EmptySetError", False,
                "len %d" % len(ld))
    except pairshard.EmptySetError as e:
        T.check("pack=%d (below every record) with skip_long: EmptySetError (PS_EEMPTY) naming "
                "the set, the pack and the shortest record" % (shortest - 1),
                e.name == "PS_EEMPTY" and plain in e.message
                and "longer than pack %d (the shortest has %d tokens)" % (shortest - 1, shortest)
                in e.message, e)
    group(lambda: contamination(recs, plain, vocab))
    return plain, recs


def dtypes(set_dir, layout, kw):
    """dtype="int32" (and copy=True): the token arrays int32, labels and
    class_labels int64, cu_seqlens int32, every value as in the int64 read."""
    want = {"labels": np.int64, "class_labels": np.int64, "cu_seqlens": np.int32}
    bad = []
    opts = dict(seed=SEED, rank=0, world_size=1, as_torch=False, **kw)
    with pairshard.Loader(set_dir, **opts) as a, \
            pairshard.Loader(set_dir, dtype="int32", copy=True, **opts) as b:
        for x, y in zip(a, b):
            if x.keys() != y.keys() or x["ids"] != y["ids"] or y.slot_address != 0:
                bad.append((x["step"], "keys, ids or copy"))
                continue
            for k, v in y.items():
                if not isinstance(v, np.ndarray):
                    continue
                dt = want.get(k, np.int32)
                if v.dtype != dt or not (v == x[k]).all():
                    bad.append((x["step"], k, v.dtype))
    T.check("%s, dtype int32 with copy=True: token arrays int32, labels/class_labels int64, "
            "cu_seqlens int32, values equal to the int64 read's" % layout, not bad, bad[:5])


def resume_everywhere(set_dir):
    """Packed, 2 and 3 ranks, drop_last off and on: a loader resumed from
    the state taken after each batch of an epoch delivers exactly the
    batches the uninterrupted one delivered after it."""
    for world, rank, drop in ((2, 1, False), (3, 2, True)):
        kw = dict(pack=PACK, batch_size=ROWS, seed=SEED, rank=rank, world_size=world,
                  drop_last=drop, as_torch=False)
        with pairshard.Loader(set_dir, **kw) as ld:
            want, states = [], [ld.state_dict()]
            for b in ld:
                want.append(list(b["ids"]))
                states.append(ld.state_dict())
        bad = []
        for k, st in enumerate(states):
            with pairshard.Loader(set_dir, **kw) as ld:
                ld.load_state_dict(st)
                got = [list(b["ids"]) for b in ld]
            if got != want[k:]:
                bad.append(k)
        T.check("pack=%d, rank %d of %d, drop_last %s: resumed from the state after each of "
                "the %d batches, the rest of the epoch is the uninterrupted run's"
                % (PACK, rank, world, "on" if drop else "off", len(want)), not bad, bad[:10])


def ddl_group(tmp):
    """Schema prompts (DDL template): the completion is what the template
    renders, the prompt the whole DDL + question."""
    d = build(tmp, "ddl", "--layout", "causal", "--tokenizer-json", GPT2, "--schema", TABLES,
              "--template", "ddl", "--max-length", "0")
    recs, bad = read_unpacked(d)
    T.check("causal set with DDL schema prompts: %d records, unpacked invariants" % len(recs),
            not bad and len(recs) > 1000, bad[:5])
    ref = clean(tmp, "ddl", "--schema", TABLES, "--template", "ddl")
    dump_causal(recs, os.path.join(tmp, "ddl.ids"))
    check_reference(GPT2, ref, os.path.join(tmp, "ddl.ids"), "causal",
                    "DDL prompts: prompt ids = HF encode(prompt), prompt + completion labels = HF "
                    "encode(prompt + completion) without special tokens, then the EOS, every "
                    "record", "DDL prompts against HF tokenizers", eos=50256)
    longest = max(len(t[0]) for t in recs.values())
    L = 2048 if longest <= 2048 else 4096
    prob, seen = [], []
    with pairshard.Loader(d, pack=L, batch_size=2, seed=SEED, rank=0, world_size=1,
                          as_torch=False) as ld:
        for b in ld:
            seen += b["ids"]
            prob += packed_batch_problems(b, recs, L, 2)
        s = ld.stats()
    T.check("DDL prompts packed at %d: every record once, every batch right; fill %.3f"
            % (L, s["real_tokens"] / max(1, s["tokens"])),
            sorted(seen) == sorted(recs) and not prob, prob[:5])


def seq2seq_group(tmp):
    d = build(tmp, "t5", "--layout", "seq2seq", "--tokenizer-json", T5, "--max-length", "128",
              "--label-field", "db_id")
    ids_path = os.path.join(tmp, "t5.ids")
    bad, n = [], 0
    with pairshard.Loader(d, batch_size=32, shuffle=False, rank=0, world_size=1,
                          decoder_start_id=0, as_torch=False) as ld, open(ids_path, "w") as f:
        for b in ld:
            src, am, lab = np_(b["input_ids"]), np_(b["attention_mask"]), np_(b["labels"])
            dam, dii = np_(b["decoder_attention_mask"]), np_(b["decoder_input_ids"])
            for i, rid in enumerate(b["ids"]):
                n += 1
                s, t = int(b["lengths"][i]), int(b["target_lens"][i])
                tgt = lab[i, :t]
                shifted = np.concatenate([[0], np.where(lab[i, :-1] == -100, 0, lab[i, :-1])])
                if not (am[i, :s].all() and not am[i, s:].any() and dam[i, :t].all()
                        and not dam[i, t:].any() and (lab[i, t:] == -100).all()
                        and (tgt >= 0).all() and (dii[i] == shifted).all()):
                    bad.append(rid)
                dump_ids(f, rid, np.concatenate([src[i, :s], tgt]), s)
    T.check("seq2seq set (T5-small): %d records; source mask, target labels (-100 only on "
            "padding), decoder_attention_mask, decoder_input_ids = labels shifted right from "
            "start id 0" % n, n > 1000 and not bad, bad[:5])
    ref = clean(tmp, "s2s")  # question and SQL: layout_ids.js's prompt and completion
    check_reference(T5, ref, ids_path, "seq2seq",
                    "source = HF encode(question), target = HF encode(sql), both with T5's "
                    "post-processor (</s>), every record", "seq2seq ids against HF tokenizers")
    group(lambda: dtypes(d, "seq2seq", dict(batch_size=32, decoder_start_id=0)))
    try:
        pairshard.Loader(d, pack=256, rank=0, world_size=1)
        T.check("pack on a seq2seq set is refused", False)
    except pairshard.PairshardError as e:
        T.check("pack on a seq2seq set: PairshardError(PS_EUSAGE)", e.name == "PS_EUSAGE", e)
    return d


# ---- training and resuming ------------------------------------------------------------


def setup():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)


class TinyT5(torch.nn.Module):
    def __init__(self, vocab, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.tf = torch.nn.Transformer(d_model=dim, nhead=2, num_encoder_layers=1,
                                       num_decoder_layers=1, dim_feedforward=64, dropout=0.0,
                                       batch_first=True)
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask):
        Tt = decoder_input_ids.shape[1]
        tgt_mask = torch.triu(torch.full((Tt, Tt), float("-inf")), diagonal=1)
        h = self.tf(self.emb(input_ids), self.emb(decoder_input_ids), tgt_mask=tgt_mask,
                    src_key_padding_mask=attention_mask == 0,
                    tgt_key_padding_mask=decoder_attention_mask == 0,
                    memory_key_padding_mask=attention_mask == 0)
        return self.out(h)


# The trained models see ids modulo this: a 50,257-way output layer would
# cost seconds a step on this machine, and what is tested is the feeding
# (batches, masks, labels, resumption), not the language model.
HASHED = 1024


def hashed(b):
    """The batch with every id (and label that is not -100) modulo HASHED."""
    out = dict(b)
    for k in ("input_ids", "decoder_input_ids"):
        if k in b:
            out[k] = b[k] % HASHED
    out["labels"] = torch.where(b["labels"] < 0, b["labels"], b["labels"] % HASHED)
    return out


def make(kind, set_dir):
    vocab = HASHED
    if kind == "causal":
        loader = pairshard.Loader(set_dir, pack=PACK, batch_size=2, seed=SEED, rank=0,
                                  world_size=1)
        model = TinyLM(vocab, dim=16, layers=1, max_pos=PACK, dtype=torch.float32)
    else:
        loader = pairshard.Loader(set_dir, batch_size=16, seed=SEED, rank=0, world_size=1,
                                  decoder_start_id=0)
        model = TinyT5(vocab, dim=16)
    return loader, model, torch.optim.Adam(model.parameters(), lr=1e-2)


def loss_of(kind, model, b):
    lossf = torch.nn.CrossEntropyLoss(ignore_index=-100)
    if kind == "causal":
        logits = model(b["input_ids"], b["position_ids"],
                       mask_from_positions(b["position_ids"], b["attention_mask"]))
        # HF's shift: position t predicts label t+1; a segment's first
        # label is a prompt token (-100), so nothing crosses a boundary.
        return lossf(logits[:, :-1].reshape(-1, logits.shape[-1]), b["labels"][:, 1:].reshape(-1))
    logits = model(b["input_ids"], b["attention_mask"], b["decoder_input_ids"],
                   b["decoder_attention_mask"])
    return lossf(logits.reshape(-1, logits.shape[-1]), b["labels"].reshape(-1))


def train(kind, set_dir, total, save_at=None, ckpt=None, resume=None):
    setup()
    loader, model, opt = make(kind, set_dir)
    step = 0
    if resume:
        c = torch.load(resume)
        model.load_state_dict(c["model"])
        opt.load_state_dict(c["optimizer"])
        loader.load_state_dict(c["loader"])
        step = c["step"]
    log = []
    for b in loader:
        loss = loss_of(kind, model, hashed(b))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        log.append((step, b["step"], list(b["ids"]), loss.item()))
        del b
        if step == save_at:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "loader": loader.state_dict(), "step": step}, ckpt)
        if step == total:
            break
    per_epoch = len(loader)
    loader.close()
    return log, model.state_dict(), per_epoch


def resume_groups(tmp, causal_set, s2s_set):
    runs = {}
    for kind, d, total in (("causal", causal_set, 8), ("seq2seq", s2s_set, 8)):
        save_at = total // 2
        ckpt = os.path.join(tmp, kind + ".ckpt")
        full, w_full, per_epoch = train(kind, d, total)
        first, _, _ = train(kind, d, save_at, save_at=save_at, ckpt=ckpt)
        runs[kind] = (d, ckpt, total, save_at, full, w_full, per_epoch, first)
    # Both resumed in one fresh process.
    out = os.path.join(tmp, "resumed.pt")
    args = []
    for kind, (d, ckpt, total, *_rest) in runs.items():
        args += [kind, d, ckpt, str(total)]
    subprocess.run([sys.executable, __file__, "--resume", out] + args, check=True)
    res = torch.load(out)
    for kind, (d, ckpt, total, save_at, full, w_full, per_epoch, first) in runs.items():
        rest, w_rest = res[kind]
        what = ("tiny causal LM, packed (L %d, 2 rows)" % PACK if kind == "causal"
                else "tiny T5-shaped encoder-decoder (decoder_input_ids)")
        same_ids = [x[:3] for x in rest] == [x[:3] for x in full[save_at:]]
        same_loss = [x[3] for x in rest] == [x[3] for x in full[save_at:]]
        same_w = set(w_full) == set(w_rest) and all(torch.equal(w_full[k], w_rest[k])
                                                    for k in w_full)
        T.check("%s: %d steps of %d per epoch, checkpointed after step %d and resumed in a "
                "fresh process: the same batches, losses and bit-identical weights as the "
                "uninterrupted run (final loss %.4f)" % (what, total, per_epoch, save_at,
                                                        full[-1][3]),
                total < per_epoch and first == full[:save_at] and same_ids and same_loss
                and same_w and len(rest) == total - save_at,
                (same_ids, same_loss, same_w, len(rest), per_epoch))


def main():
    tmp = tempfile.mkdtemp(prefix="pairshard-layouts.")
    try:
        probe = subprocess.run([PAIRSHARD, "build", "--layout", "causal", "-q", "--tokenizer-json",
                                GPT2, "-o", os.path.join(tmp, "probe"), DEV],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # Every build has the generator layouts: a build or a reader that
        # lacks them is a failure, not a skip.
        T.check("pairshard build --layout causal builds Spider dev", probe.returncode == 0,
                probe.stderr.decode().strip())
        if probe.returncode != 0:
            return T.done()
        with pairshard.Loader(os.path.join(tmp, "probe"), rank=0, world_size=1) as ld:
            got = ld.info()["layout"]
        T.check("the Loader reads a causal set as causal (got %r)" % got, got == "causal")
        if got != "causal":
            return T.done()
        shutil.rmtree(os.path.join(tmp, "probe"))
        out = {}

        def causal_all():
            out["causal"], _ = causal_groups(tmp)

        def s2s():
            out["s2s"] = seq2seq_group(tmp)

        group(causal_all)
        group(lambda: ddl_group(tmp))
        group(s2s)
        if "causal" in out and "s2s" in out:
            group(lambda: resume_groups(tmp, out["causal"], out["s2s"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return T.done()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--resume":
        out, rest = sys.argv[2], sys.argv[3:]
        res = {}
        for i in range(0, len(rest), 4):
            kind, d, ckpt, total = rest[i:i + 4]
            log, w, _ = train(kind, d, int(total), resume=ckpt)
            res[kind] = (log, w)
        torch.save(res, out)
        sys.exit(0)
    sys.exit(main())
