#!/usr/bin/env python3
"""Checks that each growing struct of pairshard/common.h only grew at its end.

    abi-growth.py BASELINE.abi NEW.abi STRUCT...

abi/compatible.suppr lets abidiff accept fields appended to these structs,
but libabigail's rule also lets a reordering that keeps the size through
(it refuses only removals and shrinking). Here each struct of NEW must
begin with every member of BASELINE's, with the same name, offset and type,
in the same order. Prints what differs and exits 1, or exits 0.
"""
import sys
import xml.etree.ElementTree as ET


def members(path, names):
    """{struct: [(name, offset, type-id)]} for the complete structs `names`."""
    out = {}
    for decl in ET.parse(path).getroot().iter("class-decl"):
        name = decl.get("name")
        if name not in names or decl.get("is-declaration-only") == "yes":
            continue
        fields = []
        for dm in decl.findall("data-member"):
            var = dm.find("var-decl")
            fields.append((var.get("name"), int(dm.get("layout-offset-in-bits")),
                           var.get("type-id")))
        out.setdefault(name, fields)
    return out


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    names = set(argv[3:])
    old, new = members(argv[1], names), members(argv[2], names)
    bad = 0
    for name in sorted(old):
        if name not in new:
            continue  # gone from the interface: abidiff reports it
        a, b = old[name], new[name]
        if b[:len(a)] != a:
            bad += 1
            print(f"{name}: its first {len(a)} fields changed (a field may only be appended):")
            for i, f in enumerate(a):
                g = b[i] if i < len(b) else None
                if f != g:
                    print(f"  field {i}: was {f[0]} at bit {f[1]}, now "
                          + (f"{g[0]} at bit {g[1]}" if g else "absent")
                          + (" (type changed)" if g and g[0] == f[0] and g[2] != f[2] else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
