#!/usr/bin/env python3
"""Generates the Unicode tables that decide token ids.

pairshard tokenizes as HuggingFace tokenizers 0.23.2 does. HF takes its
character properties from crates that each carry their own Unicode version
(scripts/unicode-hf-delta.txt names them); pairshard asks utf8proc and
PCRE2 and corrects them where those versions disagree. The corrections are
computed here from one pinned source of truth, the Unicode Character
Database of Debian's `unicode-data` package (UnicodeData.txt, DerivedAge.txt),
plus the delta file: what HF's crates say that no UCD file of this version
can (categories that changed since their version, Unicode 16 additions).

A property of an older Unicode version V is the UCD's for a code point
assigned by V (DerivedAge) with the delta's category changes applied, and
"unassigned" (category Cn, no decomposition, combining class 0) for one
assigned after V: Unicode's stability policies keep decompositions and
combining classes of assigned code points fixed, so only categories move.

Writes tokenize/unicode_tables.c and tokenize/pretok_uclass.inc. Both are
committed; tests/cli/unicode_tables.sh regenerates them and fails when they
differ, so they are never edited by hand.

    python3 scripts/gen-unicode.py            # rewrite the files
    python3 scripts/gen-unicode.py --check    # exit 1 if they would change
    python3 scripts/gen-unicode.py --ucd DIR --out DIR
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DELTA = os.path.join("scripts", "unicode-hf-delta.txt")


def die(msg):
    sys.exit("gen-unicode: " + msg)


def cp_range(text):
    """'0890..0891' or '0890' -> (lo, hi)."""
    lo, _, hi = text.partition("..")
    return int(lo, 16), int(hi or lo, 16)


def version(text):
    return tuple(int(x) for x in text.split("."))


class UCD:
    """The properties of one UCD directory, assigned code points only."""

    def __init__(self, path):
        self.path = path
        self.version = self._read_version()
        self.gc, self.ccc, self.decomp, self.compat = {}, {}, {}, set()
        self._read_unicode_data()
        self.age = {}
        for lo, hi, fields in self._ranges("DerivedAge.txt"):
            for cp in range(lo, hi + 1):
                self.age[cp] = version(fields[0])

    def _read_version(self):
        with open(os.path.join(self.path, "DerivedAge.txt"), encoding="utf-8") as f:
            first = f.readline()  # "# DerivedAge-15.0.0.txt"
        if not first.startswith("# DerivedAge-"):
            die("%s/DerivedAge.txt: no version line" % self.path)
        return first.strip()[len("# DerivedAge-"):-len(".txt")]

    def _ranges(self, name):
        with open(os.path.join(self.path, name), encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    fields = [x.strip() for x in line.split(";")]
                    lo, hi = cp_range(fields[0])
                    yield lo, hi, fields[1:]

    def _read_unicode_data(self):
        first = None
        with open(os.path.join(self.path, "UnicodeData.txt"), encoding="utf-8") as f:
            for line in f:
                v = line.rstrip("\n").split(";")
                cp, name, gc, ccc, dec = int(v[0], 16), v[1], v[2], int(v[3]), v[5]
                if name.endswith(", First>"):
                    first = cp
                    continue
                lo = first if name.endswith(", Last>") else cp
                first = None
                for c in range(lo, cp + 1):
                    self.gc[c] = gc
                    if ccc:
                        self.ccc[c] = ccc
                if dec:
                    if dec.startswith("<"):
                        self.compat.add(cp)
                    else:
                        self.decomp[cp] = [int(x, 16) for x in dec.split()]


class Delta:
    """scripts/unicode-hf-delta.txt: [section] lines of CP[..CP] FIELDS."""

    def __init__(self, path):
        self.versions, self.sections = {}, {}
        sect = None
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                if line.startswith("["):
                    sect = line.strip("[]")
                    self.sections.setdefault(sect, [])
                elif sect == "versions":
                    key, val = line.split()
                    self.versions[key] = val
                elif sect is None:
                    die("%s:%d: a line before any [section]" % (path, n))
                else:
                    fields = line.split()
                    lo, hi = cp_range(fields[0])
                    self.sections[sect].append((lo, hi, fields[1:], n))

    def per_cp(self, sect):
        out = {}
        for lo, hi, fields, _ in self.sections.get(sect, []):
            for cp in range(lo, hi + 1):
                out[cp] = fields
        return out


class OldUnicode:
    """The categories, combining classes and decompositions of an older
    Unicode version, as HF's crate of that version holds them."""

    def __init__(self, ucd, ver, gc_changes):
        self.ucd, self.ver, self.gc_changes = ucd, version(ver), gc_changes

    def assigned(self, cp):
        age = self.ucd.age.get(cp)
        return age is not None and age <= self.ver

    def gc(self, cp):
        if cp in self.gc_changes:
            return self.gc_changes[cp]
        return self.ucd.gc.get(cp, "Cn") if self.assigned(cp) else "Cn"

    def ccc(self, cp):
        return self.ucd.ccc.get(cp, 0) if self.assigned(cp) else 0


def ranges(cps):
    """Sorted code points -> inclusive (lo, hi) runs."""
    out = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def valued_ranges(values):
    """{cp: value} -> (lo, hi, value) runs of consecutive equal values."""
    out = []
    for cp in sorted(values):
        v = values[cp]
        if out and out[-1][1] == cp - 1 and out[-1][2] == v:
            out[-1][1] = cp
        else:
            out.append([cp, cp, v])
    return out


CONTROL = {"Cc", "Cf", "Co", "Cs"}


def is_punct(gc):
    return gc.startswith("P")


def is_mark(gc):
    return gc.startswith("M")


def compute(ucd, delta):
    """Every table, as {name: value}, with the facts each one rests on."""
    cats = OldUnicode(ucd, delta.versions["unicode_categories"],
                      {cp: f[0] for cp, f in delta.per_cp("unicode_categories").items()})
    norm = OldUnicode(ucd, delta.versions["unicode_normalization"],
                      {cp: f[0] for cp, f in delta.per_cp("unicode_normalization").items()})
    t = {}
    # A code point neither the UCD nor the delta assigns is unassigned in
    # every version: no table lists it.
    named = set(ucd.gc) | set(cats.gc_changes) | set(norm.gc_changes)
    named |= {cp for lo, hi, _, _ in delta.sections.get("onig", []) for cp in range(lo, hi + 1)}
    every = sorted(cp for cp in named if cp >= 0x80)
    gc = lambda cp: ucd.gc.get(cp, "Cn")
    t["not_control"] = [cp for cp in every if gc(cp) in CONTROL and cats.gc(cp) not in CONTROL]
    if any(cats.gc(cp) in CONTROL and gc(cp) not in CONTROL for cp in every):
        die("unicode_categories has a control character the UCD has not: no table for it")
    t["not_punct"] = [cp for cp in every if is_punct(gc(cp)) and not is_punct(cats.gc(cp))]
    t["punct"] = [cp for cp in every if is_punct(cats.gc(cp)) and not is_punct(gc(cp))]
    t["mn"] = [cp for cp in every if cats.gc(cp) == "Mn" and gc(cp) != "Mn"]
    t["no_nfd"] = [cp for cp in ucd.decomp if cp >= 0xC0 and not norm.assigned(cp)]
    t["no_nfkd"] = [cp for cp in ucd.compat if cp >= 0xA0 and not norm.assigned(cp)]
    t["mark"] = [cp for cp in every if is_mark(norm.gc(cp)) and not is_mark(gc(cp))]
    marks = {}
    for cp in every:
        v = []
        if gc(cp) == "Mn" and cats.gc(cp) != "Mn":
            v.append("MN")
        if is_mark(gc(cp)) and not is_mark(norm.gc(cp)):
            v.append("MARK")
        if ucd.ccc.get(cp, 0) and not norm.ccc(cp):
            v.append("CCC0")
        if v:
            marks[cp] = " | ".join(v)
    t["marks"] = marks
    lower = []
    for lo, hi, f, n in delta.sections.get("lowercase", []):
        if lo != hi or len(f) != 1:
            die("%s:%d: [lowercase] takes one code point and its lowercase" % (DELTA, n))
        if ucd.gc.get(lo, "Cn") not in ("Cn", "Lu", "Lt"):
            die("%s:%d: U+%04X is %s in UCD %s: not a new capital" % (DELTA, n, lo, ucd.gc[lo], ucd.version))
        lower.append((lo, int(f[0], 16)))
    t["lower"] = sorted(lower)
    t["uclass"] = onig_classes(ucd, delta)
    # Word characters (Rust regex's \w: letters, marks, Nd, Nl) of HF's newer
    # Unicode that the UCD leaves unassigned: added.c's single_word test.
    t["word_new"] = [cp for cp, k in t["uclass"].items() if k in (1, 2, 3, 4)]
    # What PCRE2's older Unicode lacks of HF's \p{L} and \p{N}: regex.c
    # splices these into the classes it hands PCRE2.
    pcre = OldUnicode(ucd, delta.versions["pcre2"], {})
    onig = lambda cp: t["uclass"].get(cp, ucat_of(gc(cp)))
    t["gap_L"] = [cp for cp in every if onig(cp) == 1 and ucat_of(pcre.gc(cp)) != 1]
    t["gap_N"] = [cp for cp in every if onig(cp) >= 3 and ucat_of(pcre.gc(cp)) < 3]
    if any(ucat_of(pcre.gc(cp)) in (1, 3, 4, 5) and onig(cp) != ucat_of(pcre.gc(cp)) for cp in every):
        die("PCRE2's Unicode has a letter or digit HF's has not: no table removes it")
    return t


def ucat_of(gc):
    """PS_UCAT_* (tokenize/pretok.h) of a general category."""
    return {"L": 1, "M": 2}.get(gc[:1]) or {"Nd": 3, "Nl": 4, "No": 5}.get(gc, 0)


def onig_classes(ucd, delta):
    """The code points whose class (PS_UCAT_*) HF's Oniguruma sees otherwise
    than the UCD: every delta entry must differ from the UCD's, so a stale
    one (the UCD caught up) fails the generation."""
    out = {}
    names = {"L": 1, "M": 2, "Nd": 3, "Nl": 4, "No": 5, "Other": 0}
    for lo, hi, f, n in delta.sections.get("onig", []):
        if f[0] not in names:
            die("%s:%d: class %s is not one of %s" % (DELTA, n, f[0], " ".join(names)))
        for cp in range(lo, hi + 1):
            if ucat_of(ucd.gc.get(cp, "Cn")) == names[f[0]]:
                die("%s:%d: U+%04X is already %s in UCD %s: drop it from the delta"
                    % (DELTA, n, cp, f[0], ucd.version))
            out[cp] = names[f[0]]
    return out


def c_ranges(name, comment, cps, typ="ps_uni_range"):
    rs = ranges(cps)
    lines = ["/* %s */" % comment, "const %s %s[] = {" % (typ, name)]
    lines += ["    {0x%X, 0x%X}," % (lo, hi) for lo, hi in rs]
    lines += ["};", "const unsigned %s_n = %d;" % (name, len(rs))]
    return lines


def c_class(name, comment, cps):
    """A PCRE2 class body (\\x{LO}-\\x{HI}...) as a C string, one range
    per piece so that no line splits an escape."""
    pieces = ["\\x{%X}" % lo if lo == hi else "\\x{%X}-\\x{%X}" % (lo, hi)
              for lo, hi in ranges(cps)]
    lines, cur = [], ""
    for p in pieces:
        if len(cur) + len(p) > 36:
            lines.append(cur)
            cur = ""
        cur += p
    lines.append(cur)
    out = ["/* %s */" % comment, "const char %s[] =" % name]
    out += ['    "%s"' % x.replace("\\", "\\\\") for x in lines]
    out[-1] += ";"
    return out


def render_tables(t, ucd, delta, cmd):
    v = delta.versions
    out = [
        "/*",
        " * GENERATED by scripts/gen-unicode.py from the Unicode Character",
        " * Database %s (Debian unicode-data) and scripts/unicode-hf-delta.txt." % ucd.version,
        " * Do not edit: change the delta file and run `%s`;" % cmd,
        " * tests/cli/unicode_tables.sh fails when this file is not what it writes.",
        " *",
        " * Where UCD %s (utf8proc's Unicode, checked at run time: unicode_check.c)" % ucd.version,
        " * and HuggingFace tokenizers 0.23.2's crates disagree about a code point,",
        " * these lists hold HF's answer: unicode_categories (Unicode %s)," % v["unicode_categories"],
        " * unicode-normalization-alignments (Unicode %s), Rust's std (Unicode %s)." % (
            v["unicode_normalization"], v["rust"]),
        " * Sorted ascending; ranges are inclusive.",
        " */",
        '#include "tokenize/norm.h"',
        '#include "tokenize/unicode.h"',
        "",
        'const char ps_uni_tables_ucd_version[] = "%s";' % ucd.version,
        "",
    ]
    out += c_ranges("ps_uni_hf_not_control", "Cc/Cf/Co in the UCD, kept by HF clean_text (newer Cf)",
                    t["not_control"])
    out += c_ranges("ps_uni_hf_not_punct", "P* in the UCD, not punctuation for HF (newer)",
                    t["not_punct"])
    out += c_ranges("ps_uni_hf_punct", "punctuation for HF, not P* in the UCD (category changed)",
                    t["punct"])
    out += c_ranges("ps_uni_hf_mn", "stripped by HF as Mn, another category in the UCD", t["mn"])
    out += c_ranges("ps_uni_hf_no_nfd", "decomposed by the UCD, left whole by HF (newer decompositions)",
                    t["no_nfd"])
    out += c_ranges("ps_uni_hf_no_nfkd", "compatibility decompositions newer than HF's tables: NFKD "
                    "leaves whole", t["no_nfkd"])
    out += c_ranges("ps_uni_hf_mark", "a combining mark for HF's normalizers, not M* in the UCD",
                    t["mark"])
    out += ["/* lowercase mappings Rust's newer Unicode has and the UCD lacks */",
            "const ps_uni_case_pair ps_uni_hf_lower[] = {"]
    out += ["    {0x%X, 0x%X}," % p for p in t["lower"]]
    out += ["};", "const unsigned ps_uni_hf_lower_n = %d;" % len(t["lower"])]
    mr = valued_ranges(t["marks"])
    out += [
        "/* Marks where HF's tables and the UCD disagree: one table for three views",
        " * of them, as most of these marks are unknown to more than one.",
        " *   MN    UCD Mn that BertNormalizer's strip_accents keeps",
        " *   MARK  UCD M* that the normalizers' StripAccents keeps",
        " *   CCC0  a nonzero combining class in the UCD, 0 in HF's NFD tables */",
        "#define MN PS_UNI_HF_NOT_MN",
        "#define MARK PS_UNI_HF_NOT_MARK",
        "#define CCC0 PS_UNI_HF_CCC_ZERO",
        "const ps_uni_mark_range ps_uni_hf_marks[] = {",
    ]
    out += ["    {0x%X, 0x%X, %s}," % (lo, hi, vv) for lo, hi, vv in mr]
    out += ["};", "const unsigned ps_uni_hf_marks_n = %d;" % len(mr)]
    out += c_ranges("ps_uni_hf_word_new", "word characters (Rust regex \\w) of HF's Unicode %s, "
                    "unassigned in the UCD" % v["rust"], t["word_new"])
    out += c_class("ps_uni_pcre2_gap_L", "HF's \\p{L} (Unicode %s) less PCRE2's (Unicode %s)"
                   % (v["onig"], v["pcre2"]), t["gap_L"])
    out += c_class("ps_uni_pcre2_gap_N", "HF's \\p{N} (Unicode %s) less PCRE2's (Unicode %s)"
                   % (v["onig"], v["pcre2"]), t["gap_N"])
    out += ['const char ps_uni_tables_pcre2_version[] = "%s.0";' % v["pcre2"], ""]
    return "\n".join(out)


def render_uclass(t, ucd, cmd):
    out = ["/* GENERATED by scripts/gen-unicode.py (UCD %s + scripts/unicode-hf-delta.txt's"
           % ucd.version,
           " * [onig]); do not edit, run `%s`. {lo, hi, PS_UCAT_*}. */" % cmd]
    out += ["{0x%04X, 0x%04X, %d}," % (lo, hi, c) for lo, hi, c in valued_ranges(t["uclass"])]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ucd", default="/usr/share/unicode")
    ap.add_argument("--out", default=ROOT, help="the tree to write into (default: this one)")
    ap.add_argument("--delta", default=os.path.join(ROOT, DELTA))
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.ucd, "UnicodeData.txt")):
        die("%s/UnicodeData.txt: not found (apt-get install unicode-data)" % a.ucd)
    ucd = UCD(a.ucd)
    delta = Delta(a.delta)
    if ucd.version != delta.versions.get("ucd"):
        die("UCD %s, but %s was made against UCD %s: check its entries against the new UCD, "
            "then set its [versions] ucd" % (ucd.version, DELTA, delta.versions.get("ucd")))
    t = compute(ucd, delta)
    cmd = "python3 scripts/gen-unicode.py"
    files = {
        os.path.join("tokenize", "unicode_tables.c"): render_tables(t, ucd, delta, cmd),
        os.path.join("tokenize", "pretok_uclass.inc"): render_uclass(t, ucd, cmd),
    }
    stale = 0
    for rel, text in files.items():
        path = os.path.join(a.out, rel)
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        if old == text:
            continue
        if a.check:
            print("gen-unicode: %s differs from what scripts/gen-unicode.py writes" % rel)
            stale = 1
        else:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
            print("gen-unicode: wrote %s" % rel)
    return stale


if __name__ == "__main__":
    sys.exit(main())
