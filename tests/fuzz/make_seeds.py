#!/usr/bin/python3
"""Seed corpora for the text targets, from the bundled real data.

    make_seeds.py ROOT SEEDS_DIR

Writes SEEDS_DIR/<target>/ for fuzz_clean_{jsonl,json,csv,tsv}, fuzz_vocab,
fuzz_tokenizer_json, fuzz_encode and fuzz_normalizers from Spider (tests/data/spider), the
fuzz_tokenizer_json, fuzz_tok_model (hand-made models) and fuzz_encode from Spider (tests/data/spider), the
Unicode torture set (tests/data/torture) and the BERT vocabularies
(tests/data/vocab), and fuzz_schema_tables from tables.json and the BIRD and
DuSQL tables samples. The block, manifest, LMDB and reader-state seeds come
from a built shard set (run.sh).
"""
import csv
import gzip
import io
import json
import os
import subprocess
import sys

root, out = sys.argv[1], sys.argv[2]
data = os.path.join(root, "tests", "data")


def put(target, name, content):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(content)


dev = json.load(open(os.path.join(data, "spider", "dev.json"), encoding="utf-8"))
train = json.load(open(os.path.join(data, "spider", "train.json"), encoding="utf-8"))
torture = open(os.path.join(data, "torture", "torture.jsonl"), "rb").read().splitlines(True)

# Records as Spider has them (the parsed "sql" object included), in groups
# of 4 from spread-out places of dev and train.
groups = []
for src in (dev, train):
    step = max(1, len(src) // 6)
    for k in range(6):
        groups.append(src[k * step:k * step + 4])
# A duplicate and a record missing its question, as real exports have.
groups.append([dev[0], dev[1], dev[0], {"db_id": "x", "query": "SELECT 1"}])

for i, g in enumerate(groups):
    put("fuzz_clean_json", "spider-%02d.json" % i, json.dumps(g, ensure_ascii=False, indent=1))
    put("fuzz_clean_jsonl", "spider-%02d.jsonl" % i,
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in g))
    for fmt, delim in (("csv", ","), ("tsv", "\t")):
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=delim, lineterminator="\n")
        w.writerow(["question", "sql", "db_id"])
        for r in g:
            w.writerow([r.get("question", ""), r.get("query", ""), r.get("db_id", "")])
        put("fuzz_clean_" + fmt, "spider-%02d.%s" % (i, fmt), buf.getvalue())

# The torture lines (odd Unicode, control characters, invalid UTF-8) in
# chunks, plain and compressed (the cleaner detects gzip and zstd by magic).
for i in range(0, len(torture), 8):
    chunk = b"".join(torture[i:i + 8])
    put("fuzz_clean_jsonl", "torture-%02d.jsonl" % (i // 8), chunk)
    rows = []
    for line in torture[i:i + 8]:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            rows.append(r)
    put("fuzz_clean_json", "torture-%02d.json" % (i // 8), json.dumps(rows, ensure_ascii=False))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["id", "question", "sql"])
    for r in rows:
        w.writerow([str(r.get("id", "")), str(r.get("question", "")), str(r.get("sql", ""))])
    put("fuzz_clean_csv", "torture-%02d.csv" % (i // 8), buf.getvalue())
put("fuzz_clean_jsonl", "torture-00.jsonl.gz", gzip.compress(b"".join(torture[:8]), mtime=0))
try:
    z = subprocess.run(["zstd", "-q", "-c"], input=b"".join(torture[8:16]),
                       capture_output=True, check=True).stdout
    put("fuzz_clean_jsonl", "torture-01.jsonl.zst", z)
except (OSError, subprocess.CalledProcessError):
    pass

# Vocabularies: real slices (the special tokens at the top, words, ##
# pieces, CJK), one with CRLF line ends and no final newline.
for name in ("bert-base-uncased", "bert-base-chinese"):
    lines = open(os.path.join(data, "vocab", name + ".vocab.txt"), "rb").read().splitlines(True)
    put("fuzz_vocab", name + "-head", b"".join(lines[:160]))
    put("fuzz_vocab", name + "-mid", b"".join(lines[:5] + lines[100:104] + lines[7000:7300]))
    put("fuzz_vocab", name + "-tail", b"".join(lines[99:104] + lines[-300:]))
    crlf = b"".join(l.rstrip(b"\n") + b"\r\n" for l in lines[:200])
    put("fuzz_vocab", name + "-crlf", crlf.rstrip(b"\r\n"))

# tokenizer.json in HuggingFace's layout, from a slice of the real uncased
# vocabulary: with TemplateProcessing (as the Hub's files have) and with
# BertProcessing, lowercasing on and off.
vocab = [l.rstrip("\n") for l in open(os.path.join(data, "vocab", "bert-base-uncased.vocab.txt"),
                                      encoding="utf-8")]
ids = {t: i for i, t in enumerate(vocab[:1200] + vocab[1996:2600])}
ids = {t: (i if i < 1200 else i - 1200 + 1996) for i, t in enumerate(list(ids))}
special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
added = [{"id": vocab.index(t), "content": t, "single_word": False, "lstrip": False,
          "rstrip": False, "normalized": False, "special": True} for t in special]


def template():
    cls = {"SpecialToken": {"id": "[CLS]", "type_id": 0}}
    return {"type": "TemplateProcessing",
            "single": [cls, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]}
                               for t in ("[CLS]", "[SEP]")}}


for k, (lower, post) in enumerate(((True, "template"), (False, "bert"), (True, "bert"))):
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
          "normalizer": {"type": "BertNormalizer", "clean_text": True,
                         "handle_chinese_chars": True, "strip_accents": None,
                         "lowercase": lower},
          "pre_tokenizer": {"type": "BertPreTokenizer"},
          "post_processor": template() if post == "template" else
          {"type": "BertProcessing", "sep": ["[SEP]", ids["[SEP]"]], "cls": ["[CLS]", ids["[CLS]"]]},
          "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
          "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                    "max_input_chars_per_word": 100, "vocab": ids}}
    put("fuzz_tokenizer_json", "bert-slice-%d.json" % k,
        json.dumps(tj, ensure_ascii=False, indent=2 if k == 0 else None))

# Models for fuzz_tok_model: small ones exercising each BPE option, the
# other model types, and no "type" at all.
abc = {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "<unk>": 6, "<0x78>": 7,
       "##b": 8, "ab##": 9, "b</w>": 10, "aa": 11}
models = [
    {"type": "BPE", "vocab": abc, "merges": ["b c", "a b", "a bc", "a a"]},
    {"type": "BPE", "vocab": abc, "merges": [["a", "b"], ["b", "c"]], "unk_token": "<unk>",
     "fuse_unk": True, "byte_fallback": True, "ignore_merges": True, "dropout": None},
    {"type": "BPE", "vocab": abc, "merges": ["#version: 0.2", "a ##b"], "dropout": 1.0,
     "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>", "unk_token": "<unk>"},
    {"vocab": abc, "merges": ["a b"]},
    {"type": "WordPiece", "vocab": abc, "unk_token": "<unk>", "continuing_subword_prefix": "##",
     "max_input_chars_per_word": 5},
    {"type": "WordLevel", "vocab": abc, "unk_token": "<unk>"},
    {"vocab": abc, "unk_token": "<unk>"},
]
for k, mdl in enumerate(models):
    put("fuzz_tok_model", "model-%d.json" % k, json.dumps(mdl, ensure_ascii=False))

# Text for the encoder: one option byte (normalizer flags, max_length),
# then real questions and queries, and the torture fields.
texts = []
for r in dev[:20] + train[:20]:
    texts.append(r["question"] + " " + r["query"])
for line in torture:
    try:
        r = json.loads(line)
        texts.append("%s %s" % (r.get("question", ""), r.get("sql", "")))
    except (ValueError, AttributeError):
        texts.append(line.decode("utf-8", "replace"))
texts.append("[CLS] what is [MASK] ? [SEP] SELECT [UNK] FROM t [PAD]")
for i, t in enumerate(texts):
    opt = (i * 37) % 256
    put("fuzz_encode", "text-%03d" % i, bytes([opt]) + t.encode("utf-8"))
    # fuzz_normalizers: the first byte picks the normalizer (17 of them)
    put("fuzz_normalizers", "text-%03d" % i, bytes([i % 17]) + t.encode("utf-8"))

# Charsmaps for fuzz_charsmap: small darts-clone arrays in the layout
# SentencePiece writes (u32 trie size, units, NUL-terminated replacements),
# one 256-unit block per node, with keys like nmt_nfkc's.
def charsmap(keys):
    units = [0] * 512
    units[0] = 256 << 10  # the root's children sit at 256 ^ byte
    pool = b""
    for key, repl in keys:
        value = len(pool)
        pool += repl.encode("utf-8") + b"\0"
        base = 256
        kb = key.encode("utf-8")
        for i, ch in enumerate(kb):
            idx = base + ch
            if units[idx] and units[idx] & 0xFF == ch:
                child = idx ^ (units[idx] >> 10)
            else:
                child = len(units)
                units += [0] * 256
                units[idx] = ch | ((idx ^ child) << 10)
            if i == len(kb) - 1:
                units[idx] |= 1 << 8
                units[child] = 0x80000000 | value
            base = child
    return (len(units) * 4).to_bytes(4, "little") + \
        b"".join(u.to_bytes(4, "little") for u in units) + pool


put("fuzz_charsmap", "latin", charsmap([("a", "A"), ("\u00e9", "e"), ("\uff21", "A"), ("\r", " ")]))
put("fuzz_charsmap", "nfkc", charsmap([("\ufb01", "fi"), ("e\u0301", "\u00e9"), ("\u00a0", " "),
                                       ("\u2162", "III"), ("\x01", "")]))


# fuzz_tok_parts: added tokens, post-processors and decoders with text.
def atok(content, **kw):
    t = {"id": 0, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
    t.update(kw)
    return t


parts = [
    {"added_tokens": [atok("<|im_start|>"), atok("<|im_end|>"), atok("<mask>", lstrip=True),
                      atok("SELECT", single_word=True, special=False),
                      atok("Where", normalized=True, rstrip=True)],
     "post_processor": template(),
     "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True},
     "text": "<|im_start|>user\nHow many <mask> where SELECT count(*)<|im_end|>",
     "tokens": ["\u0120a", "<0xE2>", "##b", "\u2581c"]},
    {"added_tokens": [atok("ab"), atok("abc"), atok("bcd", lstrip=True, rstrip=True)],
     "post_processor": {"type": "Sequence", "processors": [
         {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
         {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
          "trim_offsets": True, "add_prefix_space": True}]},
     "decoder": {"type": "Sequence", "decoders": [
         {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
         {"type": "ByteFallback"}, {"type": "Fuse"},
         {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
     "text": " abcd \u3000bcd xabc", "tokens": ["\u2581hi", "<0x21>", "<0xC3>"]},
    {"added_tokens": None,
     "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]},
     "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
     "text": "plain", "tokens": ["\u2581a\u2581b", "c"]},
    {"decoder": {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
     "tokens": ["a", "a", "<pad>", "|", " do", " not"]},
    {"decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
     "post_processor": {"type": "BPEDecoder"}, "tokens": ["a", "##b", " ."]},
]
for i, p in enumerate(parts):
    put("fuzz_tok_parts", "parts-%d.json" % i, json.dumps(p, ensure_ascii=False))

# Spider-format tables files: single databases of Spider's tables.json
# (one with sqlite_sequence), the BIRD- and DuSQL-shaped samples.
tables = json.load(open(os.path.join(data, "spider", "tables.json"), encoding="utf-8"))
for d in tables:
    if d["db_id"] in ("concert_singer", "world_1", "pets_1", "car_1", "flight_2"):
        put("fuzz_schema_tables", "spider-%s.json" % d["db_id"],
            json.dumps([d], ensure_ascii=False))
# Gold SQL: a Spider dev query of each hardness class and shape.
for i in (0, 3, 25, 41, 58, 120, 255, 433, 600, 1000):
    put("fuzz_sql_hardness", "spider-dev-%d.sql" % i, dev[i]["query"])
for rel in (("bird", "dev_tables.json"), ("dusql", "db_schema.json")):
    put("fuzz_schema_tables", rel[0] + "-" + rel[1],
        open(os.path.join(data, "formats", *rel), "rb").read())
