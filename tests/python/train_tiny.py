#!/usr/bin/python3
"""Trains a tiny classifier (embedding, masked mean pool, linear) to predict
the database (db_id) of Spider dev questions from a pairshard set, and
checks resumption end to end: a run checkpointed mid-epoch ({model,
optimizer, loader.state_dict()} through torch.save) and continued in a
fresh process with a fresh Loader and model sees exactly the batches of an
uninterrupted run of the same total steps and ends with bit-identical
weights and loss. Also checks that the loss goes down.

Prints TAP. Environment: PAIRSHARD, PS_ROOT (default: this checkout's).
  /usr/bin/python3 tests/python/train_tiny.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("PS_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                 "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
PAIRSHARD = os.environ.get("PAIRSHARD") or os.path.join(ROOT, "build", "bin", "pairshard")
DATA = os.path.join(ROOT, "tests", "data")

import torch  # noqa: E402

import pairshard  # noqa: E402
from tap import Tap  # noqa: E402

BATCH = 32
SEED = 1234


class Tiny(torch.nn.Module):
    def __init__(self, vocab, n_labels, dim=32):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.out = torch.nn.Linear(dim, n_labels)

    def forward(self, input_ids, attention_mask):
        m = attention_mask.unsqueeze(-1).to(torch.float32)
        pooled = (self.emb(input_ids) * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.out(pooled)


def setup():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # a fixed reduction order: bit-identical runs
    torch.use_deterministic_algorithms(True)


def make(set_dir):
    loader = pairshard.Loader(set_dir, batch_size=BATCH, seed=SEED, rank=0, world_size=1)
    vocab = json.load(open(os.path.join(set_dir, "manifest.json")))["tokenizer"]["vocab_size"]
    model = Tiny(vocab, len(loader.labels))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    return loader, model, opt


def train(set_dir, total, save_at=None, ckpt=None, resume=None):
    """Trains up to step `total`; saves a checkpoint after step `save_at`.
    Returns the log: one (step, epoch, batch step, ids, loss) per step."""
    setup()
    loader, model, opt = make(set_dir)
    step, epoch = 0, 0
    if resume:
        c = torch.load(resume)
        model.load_state_dict(c["model"])
        opt.load_state_dict(c["optimizer"])
        loader.load_state_dict(c["loader"])
        step, epoch = c["step"], c["epoch"]
    log = []
    lossf = torch.nn.CrossEntropyLoss()
    while step < total:
        loader.set_epoch(epoch)  # keeps a resumed position (python/README.md)
        for b in loader:
            logits = model(b["input_ids"], b["attention_mask"])
            loss = lossf(logits, b["labels"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            log.append((step, b["epoch"], b["step"], list(b["ids"]), loss.item()))
            del b, logits
            if step == save_at:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                            "loader": loader.state_dict(), "step": step, "epoch": epoch}, ckpt)
            if step == total:
                break
        else:
            epoch += 1
    loader.close()
    return log, model.state_dict()


def main():
    tmp = tempfile.mkdtemp(prefix="pairshard-train.")
    t = Tap()
    check = t.check

    try:
        set_dir = os.path.join(tmp, "set")
        subprocess.run([PAIRSHARD, "build", "-q", "--vocab",
                        os.path.join(DATA, "vocab", "bert-base-uncased.vocab.txt"),
                        "--label-field", "db_id", "--shards", "2", "--max-length", "128",
                        "--block-records", "32", "-o", set_dir,
                        os.path.join(DATA, "spider", "dev.json")], check=True)
        with pairshard.Loader(set_dir, batch_size=BATCH, seed=SEED, rank=0,
                              world_size=1) as ld:
            per_epoch = len(ld)
        save_at = per_epoch + per_epoch // 2      # the middle of epoch 1
        total = 2 * per_epoch + per_epoch // 3    # into epoch 2
        ckpt = os.path.join(tmp, "ckpt.pt")

        full, w_full = train(set_dir, total)
        # The checkpointing run stops right after saving, as a crash would.
        first, _ = train(set_dir, save_at, save_at=save_at, ckpt=ckpt)
        out = os.path.join(tmp, "resumed.pt")
        subprocess.run([sys.executable, __file__, "--resume", set_dir, ckpt, str(total), out],
                       check=True)
        r = torch.load(out)
        rest, w_rest = r["log"], r["weights"]

        check("the checkpointing run's %d steps are the uninterrupted run's first ones"
              % save_at, [x[:4] for x in first] == [x[:4] for x in full[:save_at]]
              and [x[4] for x in first] == [x[4] for x in full[:save_at]])
        got_ids = [(s, e, k, ids) for s, e, k, ids, _ in rest]
        want_ids = [(s, e, k, ids) for s, e, k, ids, _ in full[save_at:]]
        check("resumed in a fresh process after step %d (epoch 1, batch %d of %d): the "
              "remaining %d steps see exactly the uninterrupted run's batches (ids), through "
              "the start of epoch 2" % (save_at, save_at - per_epoch, per_epoch, total - save_at),
              got_ids == want_ids and len(got_ids) == total - save_at,
              "first difference: %r" % (next(((a[:3], b[:3]) for a, b in zip(got_ids, want_ids)
                                              if a != b), (len(got_ids), len(want_ids))),))
        check("... every loss of the resumed steps equals the uninterrupted run's exactly",
              [x[4] for x in rest] == [x[4] for x in full[save_at:]],
              list(zip([x[4] for x in rest], [x[4] for x in full[save_at:]]))[:5])
        same = all(torch.equal(w_full[k], w_rest[k]) for k in w_full)
        check("... and the final weights are bit-identical (final loss %.6f)" % full[-1][4],
              same and set(w_full) == set(w_rest),
              {k: float((w_full[k] - w_rest[k]).abs().max()) for k in w_full})
        losses = [x[4] for x in full]
        k = max(5, per_epoch // 3)
        head, tail = sum(losses[:k]) / k, sum(losses[-k:]) / k
        print("# %d steps of batch %d (%d per epoch): mean loss of the first %d steps %.4f, "
              "of the last %d %.4f" % (total, BATCH, per_epoch, k, head, k, tail))
        check("the loss goes down (mean of the last %d steps below 80%% of the first %d)"
              % (k, k), tail < 0.8 * head, (head, tail))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--resume":
        _, _, set_dir, ckpt, total, out = sys.argv
        log, weights = train(set_dir, int(total), resume=ckpt)
        torch.save({"log": log, "weights": weights}, out)
        sys.exit(0)
    sys.exit(main())
