#!/usr/bin/env python3
"""Writes a CSpider-like set: Spider dev's SQL with synthetic Chinese
questions (templates over the tables, columns and values the SQL names,
curly quotes around values and full-width punctuation, as CSpider has).
Deterministic: same Spider dev, same output.

usage: make_cspider_like.py SPIDER_DEV_JSON OUT_JSON [N]
"""
import json
import re
import sys

TABLE = re.compile(r"\bFROM\s+([A-Za-z_][A-Za-z0-9_]*)", re.I)
COLUMN = re.compile(r"\bSELECT\s+(?:DISTINCT\s+)?(?:[A-Za-z0-9_]+\.)?([A-Za-z_][A-Za-z0-9_]*)", re.I)
VALUE = re.compile(r"[\"']([^\"']{1,40})[\"']")
NUMBER = re.compile(r"[<>=]\s*(\d+(?:\.\d+)?)")


def zh(name):
    """Schema names are kept in English, as CSpider keeps most of them."""
    return name.replace("_", " ")


def question(i, sql):
    t = TABLE.search(sql)
    table = zh(t.group(1)) if t else "记录"
    c = COLUMN.search(sql)
    agg = ("*", "count", "avg", "min", "max", "sum")
    col = zh(c.group(1)) if c and c.group(1).lower() not in agg else "名字"
    v = VALUE.search(sql)
    n = NUMBER.search(sql)
    u = sql.upper()
    if v:
        forms = ["“{v}”的{t}的{c}是什么？", "找出所有{c}为“{v}”的{t}。", "请列出与“{v}”有关的{t}的{c}。"]
        return forms[i % 3].format(v=v.group(1), t=table, c=col)
    if "COUNT(" in u.replace(" ", ""):
        forms = ["有多少{t}？", "一共有多少个{t}？", "统计{t}的数量，按{c}分组。"]
        return forms[i % 3].format(t=table, c=col)
    if n:
        forms = ["哪些{t}的{c}大于{n}？", "列出{c}超过{n}的{t}。"]
        return forms[i % 2].format(t=table, c=col, n=n.group(1))
    if "ORDER BY" in u:
        forms = ["按{c}排序，列出所有{t}。", "{c}最高的{t}是哪个？"]
        return forms[i % 2].format(t=table, c=col)
    forms = ["显示所有{t}的{c}。", "{t}的{c}有哪些？", "给出每个{t}的{c}，以及它们的数量。"]
    return forms[i % 3].format(t=table, c=col)


def main():
    src, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    dev = json.load(open(src, encoding="utf-8"))[:n]
    recs = [{"db_id": r["db_id"], "question": question(i, r["query"]), "query": r["query"]}
            for i, r in enumerate(dev)]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(recs, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
