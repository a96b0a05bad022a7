"""Writes the benchmarks' corpus to stdout: Spider train + dev as JSONL
(db_id, question, query), repeated COPIES times, each copy's questions
suffixed " (vK)" so that no copy is a duplicate of another (dedupe keeps
them all). Usage: spider_corpus.py SPIDER_DIR COPIES"""
import json
import sys

d, copies = sys.argv[1], int(sys.argv[2])
recs = json.load(open(d + "/train.json")) + json.load(open(d + "/dev.json"))
recs = [{"db_id": r["db_id"], "question": r["question"], "query": r["query"]} for r in recs]
out = sys.stdout
for i in range(copies):
    for r in recs:
        r = dict(r)
        if i:
            r["question"] += " (v%d)" % i
        out.write(json.dumps(r, ensure_ascii=False) + "\n")
