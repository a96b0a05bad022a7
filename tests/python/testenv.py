"""Where the Python tests find things: the checkout (PS_ROOT, else the one
this file is in), its python/ package (put first on sys.path), the pairshard
binary (PAIRSHARD, else build/bin/pairshard) and the test data."""
import os
import sys

ROOT = os.environ.get("PS_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                 "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
PAIRSHARD = os.environ.get("PAIRSHARD") or os.path.join(ROOT, "build", "bin", "pairshard")
DATA = os.path.join(ROOT, "tests", "data")
DEV = os.path.join(DATA, "spider", "dev.json")
TABLES = os.path.join(DATA, "spider", "tables.json")
TOKS = os.path.join(DATA, "tokenizers")
