"""The peer of bench_leakage.sh: near-duplicate questions found the exact way,
every training question against every held-out one (character 3-gram sets,
Jaccard >= 0.8, the folding docs/REPORT.md describes), on a subsample of the
training records. Prints {"pairs", "seconds", "found"} as JSON."""
import json
import sys
import time
import unicodedata


def near_text(q):
    q = unicodedata.normalize("NFKC", q).casefold()
    q = "".join(c for c in q if not unicodedata.category(c).startswith("P"))
    return " ".join(q.split())


def grams(q, n=3):
    t = near_text(q)
    return frozenset(t[i:i + n] for i in range(max(1, len(t) - n + 1))) if t else frozenset()


def main():
    train_path, holdout_path, sample = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t0 = time.perf_counter()
    held = [grams(json.loads(l)["question"]) for l in open(holdout_path)]
    train = []
    with open(train_path) as f:
        for line in f:
            train.append(grams(json.loads(line)["question"]))
            if len(train) == sample:
                break
    found = 0
    for g in train:
        for h in held:
            inter = len(g & h)
            if inter and inter / (len(g) + len(h) - inter) >= 0.8:
                found += 1
                break
    json.dump({"pairs": len(train) * len(held), "seconds": time.perf_counter() - t0,
               "found": found, "train": len(train), "holdout": len(held)}, sys.stdout)


main()
